#include "ncsde/models/shaped.hpp"

#include <cmath>

#include "ncsde/error.hpp"
#include "ncsde/symmetric.hpp"

namespace ncsde::models {

namespace {

constexpr const char* where = "covariance_sde";

/// Σ_lin coefficient of the ReLU residual branch of width ratio r: γ²(2 − γ² + γ²/r).
double resnet_k_lin(double g2, double r) { return g2 * (2.0 - g2 + g2 / r); }

}  // namespace

void validate_params(const char* where, architecture arch, const shaped_params& p) {
  // !(x > 0) rather than x <= 0: the negated forms also reject NaN.
  if (!std::isfinite(p.c_plus)) throw_invalid_argument(where, "c_plus", p.c_plus, "finite");
  if (!std::isfinite(p.c_minus)) throw_invalid_argument(where, "c_minus", p.c_minus, "finite");
  if (!(p.gamma2 >= 0.0 && p.gamma2 <= 1.0))
    throw_invalid_argument(where, "gamma2", p.gamma2, "in [0, 1]");
  if (!(p.hidden_ratio > 0.0) || !std::isfinite(p.hidden_ratio))
    throw_invalid_argument(where, "hidden_ratio", p.hidden_ratio, "finite and > 0");
  if (!(p.tau0 > 0.0) || !std::isfinite(p.tau0))
    throw_invalid_argument(where, "tau0", p.tau0, "finite and > 0");
  if (p.heads < 1) throw_invalid_argument(where, "heads", p.heads, ">= 1");
  switch (arch) {
    case architecture::mlp:
    case architecture::resnet:
      // Attention options have no meaning here; refusing them keeps a typo from being ignored.
      if (p.heads != 1)
        throw_invalid_argument(where, "heads", p.heads, "1 for mlp and resnet (no attention)");
      if (p.output_projection)
        throw_invalid_argument(where, "output_projection", p.output_projection,
                               "false for mlp and resnet (no attention)");
      if (p.causal)
        throw_invalid_argument(where, "causal", p.causal,
                               "false for mlp and resnet (no attention)");
      return;
    case architecture::attention:
    case architecture::transformer:
      return;
  }
  throw_invalid_argument(where, "arch", static_cast<int>(arch),
                         "one of mlp, resnet, attention, transformer");
}

covariance_sde::covariance_sde(architecture arch, const shaped_params& p)
    : m_arch(arch), m_params(p) {
  validate_params(where, arch, p);
  const double g2 = p.gamma2;
  const double r = p.hidden_ratio;
  const double attention_k_lin = p.output_projection ? 2.0 * g2 : g2 * (2.0 - g2);
  const double attention_k_att = g2 * g2 / p.heads;
  switch (arch) {
    case architecture::mlp:
    case architecture::resnet:
      if (arch == architecture::mlp) {
        m_relu_weight = 1.0;
        m_k_lin = 1.0;
      } else {
        m_relu_weight = g2;
        m_k_lin = resnet_k_lin(g2, r);
      }
      break;
    case architecture::attention:
      m_att_weight = g2;
      m_k_lin = attention_k_lin;
      m_k_att = attention_k_att;
      break;
    case architecture::transformer:
      m_att_weight = g2;
      m_relu_weight = g2;
      m_k_lin = attention_k_lin + resnet_k_lin(g2, r);
      m_k_att = attention_k_att;
      break;
  }
}

template <int M>
void covariance_sde::drift_impl(const square_matrix<M>& v, square_matrix<M>& out) const {
  const int m = static_cast<int>(v.rows());
  shaped_workspace<M>& ws = workspace<M>();
  out.setZero(m, m);
  if (m_att_weight != 0.0) {
    if (m_params.causal)
      b_causal<M>(v, m_params.tau0, ws.work, ws.kernels);
    else
      b_att<M>(v, m_params.tau0, ws.work, ws.kernels);
    out += m_att_weight * ws.work;
  }
  if (m_relu_weight != 0.0) {
    b_relu<M>(v, m_params.c_plus, m_params.c_minus, ws.work);
    out += m_relu_weight * ws.work;
  }
}

template <int M>
void covariance_sde::diffusion_impl(const square_matrix<M>& v, const vector& xi,
                                    square_matrix<M>& out) const {
  const int m = static_cast<int>(v.rows());
  const int mm = m * m;
  NCSDE_ASSERT(xi.size() == noise_dimension(m), "covariance_sde: xi has the wrong size");
  shaped_workspace<M>& ws = workspace<M>();
  if (!(ws.factor_valid && ws.factor_v.rows() == v.rows() && ws.factor_v == v)) {
    ws.factor.compute(v);
    ws.factor_v = v;
    ws.factor_valid = true;
  }
  const square_matrix<M>& l = ws.factor.l();
  const Eigen::Map<const square_matrix<M>> g(xi.data(), m, m);
  noise_lin<M>(l, ws.factor.lower(), g, out, ws.kernels);
  out *= std::sqrt(m_k_lin);
  if (has_attention() && m_k_att != 0.0) {
    const Eigen::Map<const square_matrix<M>> z(xi.data() + mm, m, m);
    if (m_params.causal)
      noise_causal<M>(l, ws.factor.lower(), v, z, m_params.tau0, ws.work, ws.kernels);
    else
      noise_att<M>(l, ws.factor.lower(), v, z, m_params.tau0, ws.work, ws.kernels);
    out += std::sqrt(m_k_att) * ws.work;
  }
}

template <int M>
void covariance_sde::use_cholesky_impl(const square_matrix<M>& v, const square_matrix<M>& l) const {
  shaped_workspace<M>& ws = workspace<M>();
  ws.factor.adopt(l);
  ws.factor_v = v;
  ws.factor_valid = true;
}

void covariance_sde::use_cholesky(const matrix& v, const matrix& l) const {
  use_cholesky_impl<Eigen::Dynamic>(v, l);
}

template <int M>
  requires is_fixed_size<M>
void covariance_sde::use_cholesky(const square_matrix<M>& v, const square_matrix<M>& l) const {
  use_cholesky_impl<M>(v, l);
}

void covariance_sde::drift(const matrix& v, matrix& out, double /*t*/) const {
  drift_impl<Eigen::Dynamic>(v, out);
}

void covariance_sde::diffusion(const matrix& v, const vector& xi, matrix& out, double /*t*/) const {
  diffusion_impl<Eigen::Dynamic>(v, xi, out);
}

template <int M>
  requires is_fixed_size<M>
void covariance_sde::drift(const square_matrix<M>& v, square_matrix<M>& out, double /*t*/) const {
  drift_impl<M>(v, out);
}

template <int M>
  requires is_fixed_size<M>
void covariance_sde::diffusion(const square_matrix<M>& v, const vector& xi, square_matrix<M>& out,
                               double /*t*/) const {
  diffusion_impl<M>(v, xi, out);
}

void covariance_sde::factor_lanes(const lane_block& v, int m) const {
  shaped_lane_workspace& ws = m_lanes;
  ws.hint.factor(v, m, ws.l, ws.ok);  // lane_cholesky, or the engine's factors of this v
  with_fixed_size(m, [&]<int M>() {
    // lane_cholesky is the per-path factor (detail::cholesky_factor) bit for bit: a lane with a
    // Cholesky factor has the one its path would have.
    ws.lower = ws.ok.all();
    if (ws.lower) return;
    shaped_workspace<M>& per_path = workspace<M>();
    square_matrix<M>& x = per_path.work;
    for (int lane = 0; lane < batch_width; ++lane) {
      if (ws.ok(lane)) continue;
      x.resize(m, m);
      for (int b = 0; b < m; ++b)
        for (int a = 0; a < m; ++a) x(a, b) = v(lane, a + b * m);
      // The per-path diffusion's factor of this V (and no stale cache of it).
      per_path.factor_valid = false;
      per_path.factor.compute(x);
      const square_matrix<M>& f = per_path.factor.l();
      for (int b = 0; b < m; ++b)
        for (int a = 0; a < m; ++a) ws.l(lane, a + b * m) = f(a, b);
    }
  });
}

void covariance_sde::drift_lanes(const lane_block& v, lane_block& out, double /*t*/) const {
  const int m = lane_matrix_size(v);
  shaped_lane_workspace& ws = m_lanes;
  out.setZero(batch_width, v.cols());
  if (m_att_weight != 0.0) {
    if (m_params.causal)
      b_causal_lanes(v, m, m_params.tau0, ws.work, ws.kernels);
    else
      b_att_lanes(v, m, m_params.tau0, ws.work, ws.kernels);
    out += m_att_weight * ws.work;
  }
  if (m_relu_weight != 0.0) {
    b_relu_lanes(v, m, m_params.c_plus, m_params.c_minus, ws.work);
    out += m_relu_weight * ws.work;
  }
}

void covariance_sde::diffusion_lanes(const lane_block& v, const lane_block& xi, lane_block& out,
                                     double /*t*/) const {
  const int m = lane_matrix_size(v);
  const Eigen::Index mm = v.cols();
  NCSDE_ASSERT(xi.cols() == noise_dimension(m), "covariance_sde: xi has the wrong size");
  shaped_lane_workspace& ws = m_lanes;
  factor_lanes(v, m);
  noise_lin_lanes(ws.l, ws.lower, xi.leftCols(mm), m, out, ws.kernels);
  out *= std::sqrt(m_k_lin);
  if (has_attention() && m_k_att != 0.0) {
    if (m_params.causal)
      noise_causal_lanes(ws.l, ws.lower, v, xi.middleCols(mm, mm), m, m_params.tau0, ws.work,
                         ws.kernels);
    else
      noise_att_lanes(ws.l, ws.lower, v, xi.middleCols(mm, mm), m, m_params.tau0, ws.work,
                      ws.kernels);
    out += std::sqrt(m_k_att) * ws.work;
  }
}

#define NCSDE_SHAPED_FIXED(M)                                                                     \
  template void covariance_sde::drift<M>(const square_matrix<M>&, square_matrix<M>&, double)      \
      const;                                                                                      \
  template void covariance_sde::diffusion<M>(const square_matrix<M>&, const vector&,              \
                                             square_matrix<M>&, double) const;                    \
  template void covariance_sde::use_cholesky<M>(const square_matrix<M>&, const square_matrix<M>&) \
      const;
NCSDE_FIXED_SIZES(NCSDE_SHAPED_FIXED)
#undef NCSDE_SHAPED_FIXED

void covariance_sde::covariance(const matrix& v, matrix& sigma, double /*t*/) const {
  sigma_lin(v, sigma);
  sigma *= m_k_lin;
  if (m_k_att != 0.0) {
    matrix att;
    if (m_params.causal)
      sigma_causal(v, m_params.tau0, att);
    else
      sigma_att(v, m_params.tau0, att);
    sigma += m_k_att * att;
  }
}

}  // namespace ncsde::models
