#include "fidelity/variants.hpp"

#include <fmt/format.h>

#include <cmath>

#include "ncsde/error.hpp"

namespace ncsde::cli {

sde_variant parse_variant(std::string_view text, std::string_view flag) {
  if (text == "correct") return sde_variant::correct;
  if (text == "vpv") return sde_variant::vpv;
  if (text == "no-attention-noise") return sde_variant::no_attention_noise;
  if (text == "no-attention") return sde_variant::no_attention;
  throw_invalid_argument("ncsde", flag, fmt::format("'{}'", text),
                         "one of correct, vpv, no-attention-noise, no-attention");
}

std::string_view to_string(sde_variant v) {
  switch (v) {
    case sde_variant::correct:
      return "correct";
    case sde_variant::vpv:
      return "vpv";
    case sde_variant::no_attention_noise:
      return "no-attention-noise";
    case sde_variant::no_attention:
      return "no-attention";
  }
  return "?";
}

variant_sde::variant_sde(const models::covariance_sde& base, sde_variant variant)
    : m_base(base), m_variant(variant) {
  if (variant == sde_variant::correct) return;
  if (!base.has_attention())
    throw_invalid_argument("variant_sde", "variant", to_string(variant),
                           "'correct' for a model without attention (mlp, resnet)");
  if (variant == sde_variant::vpv && base.params().causal)
    throw_invalid_argument("variant_sde", "variant", to_string(variant),
                           "not vpv for causal attention (vpv is defined for the full mask)");
}

void variant_sde::drift(const matrix& v, matrix& out, double t) const {
  m_base.drift(v, out, t);
  if (m_variant != sde_variant::no_attention) return;
  const models::shaped_params& p = m_base.params();
  if (p.causal)
    models::b_causal(v, p.tau0, m_work);
  else
    models::b_att(v, p.tau0, m_work);
  out -= p.gamma2 * m_work;
}

void variant_sde::diffusion(const matrix& v, const vector& xi, matrix& out, double t) const {
  if (m_variant == sde_variant::correct) {
    m_base.diffusion(v, xi, out, t);
    return;
  }
  const int m = static_cast<int>(v.rows());
  m_factor.compute(v);
  const matrix& l = m_factor.l();
  const Eigen::Map<const matrix> g(xi.data(), m, m);
  models::noise_lin(l, g, out);
  out *= std::sqrt(m_base.k_lin());
  if (m_variant != sde_variant::vpv) return;
  // ζ = L Z: Cov(ζ^{ai}, ζ^{ck}) = V^{ac} δ^{ik}, so (ζPV) has covariance V^{ac} (VP·PV)^{bd} =
  // V^{ac} (VPV)^{bd}: the VPV shortcut, with the same 1/(mτ₀) and k_att as the correct noise.
  const Eigen::Map<const matrix> z(xi.data() + m * m, m, m);
  m_zeta.noalias() = l * z;
  const matrix pv = v.rowwise() - v.colwise().mean();  // P V
  m_work.noalias() = m_zeta * pv;
  const double scale = std::sqrt(m_base.k_att()) / (m * m_base.params().tau0);
  out += scale * (m_work + m_work.transpose());
}

}  // namespace ncsde::cli
