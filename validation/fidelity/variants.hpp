#pragma once
/// Deliberately wrong covariance SDEs, for the power check of `ncsde validate`: a validation that
/// cannot reject these cannot be trusted to accept the right one (docs/maths.md §9.5).
///
///   correct              the model's SDE (models::covariance_sde), unchanged
///   vpv                  attention diffusion with Φ = VPV in place of VPVPV: the attention noise
///                        (ζPV + VPζᵀ)/(mτ₀) with ζ = L Z instead of L Z Lᵀ, whose covariance is
///                        V^{ac}(VPV)^{bd} + … (the tempting shortcut of docs/maths.md §3.2.4)
///   no-attention-noise   attention diffusion Σ_att dropped (k_att = 0), drift kept
///   no-attention         both attention terms dropped: drift without γ² b_att, k_att = 0 (the
///                        linear part k_lin Σ_lin, which the residual stream has anyway, is kept)
/// The wrong variants exist only for attention-type models (attention, transformer); vpv needs the
/// full (non-causal) mask.
#include <string_view>

#include "ncsde/concepts.hpp"
#include "ncsde/models/shaped.hpp"

namespace ncsde::cli {

enum class sde_variant { correct, vpv, no_attention_noise, no_attention };

/// "correct", "vpv", "no-attention-noise", "no-attention"; throws ncsde::invalid_argument naming
/// `flag` otherwise.
sde_variant parse_variant(std::string_view text, std::string_view flag);
std::string_view to_string(sde_variant v);

/// The SDE of `base` modified as `variant` says; an ncsde::Sde with the base's noise layout
/// (G then Z). Throws ncsde::invalid_argument when the variant does not apply to the model.
class variant_sde {
 public:
  /// Covariance SDEs live on the positive-semidefinite cone, as their base does.
  static constexpr state_space space = state_space::psd_cone;
  variant_sde(const models::covariance_sde& base, sde_variant variant);

  sde_variant variant() const { return m_variant; }
  int noise_dimension(int m) const { return m_base.noise_dimension(m); }
  void drift(const matrix& v, matrix& out, double t) const;
  void diffusion(const matrix& v, const vector& xi, matrix& out, double t) const;

 private:
  models::covariance_sde m_base;
  sde_variant m_variant;
  mutable models::psd_factor m_factor;
  mutable matrix m_work, m_zeta;
};

static_assert(Sde<variant_sde>);

}  // namespace ncsde::cli
