#pragma once
/// Covariance SDEs of shaped networks in the proportional limit (docs/maths.md §3.3, §3.4, §4):
///   dV = b(V) dt + dM,   Cov(dM) = Σ(V) dt,   Σ = k_lin Σ_lin + k_att Σ_att|causal,
/// with the building blocks of models/coefficients.hpp and (drift, k_lin, k_att) per architecture:
///   mlp          b_ReLU                          k_lin = 1                      k_att = 0
///   resnet       γ² b_ReLU                       k_lin = γ²(2 − γ² + γ²/r)       k_att = 0
///   attention    γ² b_att                        k_lin = κ                      k_att = γ⁴/n_h
///   transformer  γ² (b_att + b_ReLU)             k_lin = κ + γ²(2 − γ² + γ²/r)   k_att = γ⁴/n_h
/// where κ = 2γ² with the output projection W^O and κ = γ²(2 − γ²) without it (for n_h > 1 without
/// W^O: the averaged full-width-heads variant of §2.6, §3.3.2). With `causal`, b_att and Σ_att are
/// replaced by b_causal and Σ_causal. The diffusion is the structured noise of §4.1 applied to ξ =
/// (vec G, vec Z):
///   G(V) ξ = √k_lin L W Lᵀ + √k_att N_att|causal(L, V, Z),  L Lᵀ = V,
/// with G = the first m² entries of ξ (column-major) and Z the next m² (attention types only).
#include <cstdint>
#include <tuple>
#include <utility>

#include "ncsde/concepts.hpp"
#include "ncsde/device.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/integrate.hpp"
#include "ncsde/lanes.hpp"
#include "ncsde/models/coefficients.hpp"
#include "ncsde/models/lane_kernels.hpp"
#include "ncsde/schemes.hpp"
#include "ncsde/state_space.hpp"

namespace ncsde::models {

/// The network whose limit is taken (docs/maths.md §2).
enum class architecture { mlp, resnet, attention, transformer };

/// Parameters, in the symbols of docs/maths.md §10.
struct shaped_params {
  double c_plus = 0.0;             ///< c₊, ReLU shaping; finite
  double c_minus = -2.0;           ///< c₋, ReLU shaping; finite
  double gamma2 = 0.5;             ///< γ², residual branch weight; in [0, 1]
  double hidden_ratio = 1.0;       ///< r, MLP hidden width r·n; finite and > 0
  double tau0 = 1.0;               ///< τ₀, attention temperature; finite and > 0
  int heads = 1;                   ///< n_h, attention heads; ≥ 1
  bool output_projection = false;  ///< W^O present (multi-head attention, docs/maths.md §2.5)
  bool causal = false;             ///< causal mask (docs/maths.md §2.7)
};

/// Checks the parameters of `arch` against docs/maths.md §10 (shared by the SDE and the finite
/// networks): c₊, c₋ finite; 0 ≤ γ² ≤ 1; r finite and > 0; τ₀ finite and > 0; n_h ≥ 1; for mlp and
/// resnet the attention options keep their defaults (a typo is refused, not ignored). Throws
/// ncsde::invalid_argument("<where>: <param> must be <rule> (got <value>)").
void validate_params(const char* where, architecture arch, const shaped_params& p);

/// The per-size mutable state of covariance_sde: the factor L of the last V the diffusion saw and
/// the kernels' scratch, so that drift and diffusion allocate nothing after their first call.
template <int M>
struct shaped_workspace {
  basic_psd_factor<M> factor;
  square_matrix<M> factor_v;  ///< the V whose factor is cached
  bool factor_valid = false;
  square_matrix<M> work;
  coefficient_workspace<M> kernels;
};

/// The mutable state of covariance_sde's batched form: the lanes' factors L and the lane kernels'
/// scratch.
struct shaped_lane_workspace {
  lane_block l, work;
  lane_mask ok = lane_mask::Constant(false);
  bool lower = true;  ///< every lane's L is its Cholesky factor (lower triangular)
  lane_cholesky_cache<batch_width> hint;  ///< the batched engine's factors (use_cholesky_lanes)
  lane_coefficient_workspace kernels;
};

/// Covariance SDE of a shaped architecture; satisfies ncsde::Sde, ncsde::CovarianceSde and
/// ncsde::BatchedSde.
/// Invariant (checked once, in the constructor; ncsde::invalid_argument naming the parameter and
/// value otherwise): c₊, c₋ finite; 0 ≤ γ² ≤ 1; r finite and > 0; τ₀ finite and > 0; n_h ≥ 1; and
/// for mlp and resnet the attention options (heads, output_projection, causal) keep their defaults.
/// The coefficients do not depend on t. The diffusion caches the factor L of the last V it saw.
class covariance_sde {
 public:
  /// Solutions live on the positive-semidefinite cone: checks and pd_policy apply.
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  /// Builds the SDE of `arch` with parameters p; throws ncsde::invalid_argument on a bad parameter.
  covariance_sde(architecture arch, const shaped_params& p);

  /// The architecture this SDE is the limit of.
  architecture arch() const { return m_arch; }
  /// The validated parameters.
  const shaped_params& params() const { return m_params; }
  /// Σ_lin coefficient k_lin of the table above.
  double k_lin() const { return m_k_lin; }
  /// Attention coefficient k_att of the table above (0 for mlp and resnet).
  double k_att() const { return m_k_att; }
  /// Weight of b_att|causal in the drift of the table above: γ² for attention and transformer, 0
  /// for mlp and resnet.
  double att_weight() const { return m_att_weight; }
  /// Weight of b_ReLU in the drift of the table above: 1 for mlp, γ² for resnet and transformer, 0
  /// for attention.
  double relu_weight() const { return m_relu_weight; }
  /// True for attention and transformer: the noise has a Z part.
  bool has_attention() const {
    return m_arch == architecture::attention || m_arch == architecture::transformer;
  }

  /// k = m² (G only) for mlp and resnet, 2m² (G then Z) with attention.
  int noise_dimension(int m) const { return has_attention() ? 2 * m * m : m * m; }
  /// out = b(V).
  void drift(const matrix& v, matrix& out, double t) const;
  /// out = √k_lin N_lin + √k_att N_att|causal, with G, Z read from xi (size noise_dimension(m)).
  void diffusion(const matrix& v, const vector& xi, matrix& out, double t) const;
  /// drift on compile-time-sized states (m = M in ncsde::fixed_sizes): the same operations, so the
  /// same bits as the dynamic drift, with the loops unrolled; the covariance SDE is an
  /// Sde<covariance_sde, square_matrix<M>>.
  template <int M>
    requires is_fixed_size<M>
  void drift(const square_matrix<M>& v, square_matrix<M>& out, double t) const;
  /// diffusion on compile-time-sized states (see the fixed-size drift).
  template <int M>
    requires is_fixed_size<M>
  void diffusion(const square_matrix<M>& v, const vector& xi, square_matrix<M>& out,
                 double t) const;
  /// Keeps the engine's Cholesky factor of V for the next diffusion at V (SdeWithCholeskyHint): the
  /// noise map then skips its own factorisation; results are the same bits.
  void use_cholesky(const matrix& v, const matrix& l) const;
  /// use_cholesky on compile-time-sized states.
  template <int M>
    requires is_fixed_size<M>
  void use_cholesky(const square_matrix<M>& v, const square_matrix<M>& l) const;
  /// The batched form (BatchedSde, lanes.hpp): drift and noise map of every lane of a group, the
  /// same formulas through the lane kernels (models/lane_kernels.hpp). L per lane: the Cholesky
  /// factor by lane_cholesky, which is the per-path factor (detail::cholesky_factor) bit for bit; a
  /// lane without one is factorised as the per-path diffusion does it (basic_psd_factor of its
  /// size). The per-path kernels perform the lane kernels' operations in the same order
  /// (dense_kernels.hpp), so every lane's drift and noise are its path's, bit for bit.
  void drift_lanes(const lane_block& v, lane_block& out, double t) const;
  /// Lanes up to m = 63 (prefers_lanes, lanes.hpp): the same numbers either way, and one path at a
  /// time is faster from m = 64 on (transformer, EM, one thread, ns per path-step, per path /
  /// batched: m = 48 48.6k / 41.5k, m = 64 92k / 109k, m = 96 254k / 386k, m = 128 645k / 1070k),
  /// where a path's products, vectorised over its rows, outrun eight paths' lanes.
  bool prefers_lanes(Eigen::Index coordinates) const { return coordinates < 64 * 64; }
  /// The noise map on a lane group (see drift_lanes); xi holds noise_dimension(m) columns.
  void diffusion_lanes(const lane_block& v, const lane_block& xi, lane_block& out, double t) const;
  /// The batched engine's lane_cholesky factors of exactly v (BatchedSdeWithCholeskyHint): kept
  /// for the next diffusion_lanes at v.
  void use_cholesky_lanes(const lane_block& v, const lane_block& l, const lane_mask& ok) const {
    m_lanes.hint.adopt(v, l, ok);
  }
  /// sigma = Σ(V) = k_lin Σ_lin + k_att Σ_att|causal, K×K over packed pairs (dense reference).
  void covariance(const matrix& v, matrix& sigma, double t) const;
  /// The device form (DeviceSde, device.hpp): a batch of paths on batch.device, the CUDA backend or
  /// the emulated device, with the device kernels of lib/models/device/shaped_kernels.hpp (this
  /// SDE's drift and noise map in the same operations and order). ncsde::device_error when the
  /// device cannot run it.
  void run_device_batch(const device_batch& batch, device_batch_result& out) const;

 private:
  architecture m_arch;
  shaped_params m_params;
  double m_relu_weight = 0.0;
  double m_att_weight = 0.0;
  double m_k_lin = 0.0;
  double m_k_att = 0.0;
  template <int M>
  void drift_impl(const square_matrix<M>& v, square_matrix<M>& out) const;
  template <int M>
  void diffusion_impl(const square_matrix<M>& v, const vector& xi, square_matrix<M>& out) const;
  template <int M>
  void use_cholesky_impl(const square_matrix<M>& v, const square_matrix<M>& l) const;
  void factor_lanes(const lane_block& v, int m) const;
  template <int M>
  shaped_workspace<M>& workspace() const {
    return std::get<shaped_workspace<M>>(m_workspaces);
  }

  // One workspace per fixed size (ncsde::fixed_sizes) and one dynamic.
  template <class Sizes>
  struct workspaces;
  template <int... Ms>
  struct workspaces<std::integer_sequence<int, Ms...>> {
    using type = std::tuple<shaped_workspace<Ms>..., shaped_workspace<Eigen::Dynamic>>;
  };
  // Each ensemble thread copies the SDE, so each has its own workspaces.
  mutable typename workspaces<fixed_sizes>::type m_workspaces;
  mutable shaped_lane_workspace m_lanes;
};

static_assert(Sde<covariance_sde>);
static_assert([]<int... Ms>(std::integer_sequence<int, Ms...>) {
  return (Sde<covariance_sde, square_matrix<Ms>> && ...);
}(fixed_sizes{}));
static_assert(!Sde<covariance_sde, square_matrix<5>>);
static_assert(CovarianceSde<covariance_sde>);
static_assert(BatchedSde<covariance_sde> && BatchedSdeWithCholeskyHint<covariance_sde>);
static_assert(SdeWithCholeskyHint<covariance_sde> &&
              SdeWithCholeskyHint<covariance_sde, square_matrix<4>>);

}  // namespace ncsde::models

// Ensembles and paths of covariance_sde with every built-in scheme (schemes.hpp) are compiled once,
// in the library (lib/models/runs.cpp, every fixed size included): a program that runs them links them instead of
// instantiating the engine for the four architectures' coefficients itself.
// Used inside namespace ncsde: NCSDE_COVARIANCE_SDE_RUNS(extern, scheme) declares them,
// NCSDE_COVARIANCE_SDE_RUNS(, scheme) defines them.
#define NCSDE_COVARIANCE_SDE_RUNS(prefix, Stepper)                                              \
  prefix template ensemble_result run_ensemble<Stepper, models::covariance_sde, matrix>(        \
      const Stepper&, const problem<models::covariance_sde, matrix>&, const integrate_options&, \
      const ensemble_options&);                                                                 \
  prefix template ensemble_partial run_ensemble_range<Stepper, models::covariance_sde, matrix>( \
      const Stepper&, const problem<models::covariance_sde, matrix>&, const integrate_options&, \
      const ensemble_options&, path_range);                                                     \
  prefix template path_result                                                                   \
  integrate<Stepper, models::covariance_sde, matrix, detail::null_observer>(                    \
      Stepper&, const problem<models::covariance_sde, matrix>&, const integrate_options&,       \
      std::uint64_t, std::uint64_t, detail::null_observer);

#define NCSDE_DETAIL_EXTERN_COVARIANCE_SDE_RUNS(Stepper) NCSDE_COVARIANCE_SDE_RUNS(extern, Stepper)
namespace ncsde {
NCSDE_FOR_EACH_BUILTIN_SCHEME(NCSDE_DETAIL_EXTERN_COVARIANCE_SDE_RUNS)
}  // namespace ncsde
#undef NCSDE_DETAIL_EXTERN_COVARIANCE_SDE_RUNS
