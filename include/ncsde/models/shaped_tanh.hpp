#pragma once
/// The shaped smooth-activation MLP ("shaped-tanh" in the model registry, models/registry.hpp): its
/// covariance SDE and its literal network. It began as a user's own model in examples/shaped_tanh,
/// which checks it against its network; it is not in docs/maths.md, so the derivation is here.
///
/// Network (m tokens, width n, one layer = time step 1/n):
///   X_{l+1} = σ_s(X_l W_l/√n),  W_l ∈ ℝ^{n×n} iid N(0, 1),  V_l = X_l X_lᵀ/n,
///   σ_s(x) = s σ(x/s),  s = a√n,  σ smooth with σ(0) = 0, σ'(0) = 1 (tanh by default), a > 0.
/// Given X_l, the columns h_j = X_l w_j/√n of the pre-activation H = X_l W_l/√n are iid N(0, V_l),
/// and V_{l+1} = (1/n) Σ_j σ_s(h_j) σ_s(h_j)ᵀ. With (u, v) = (h^a, h^b) ~ N(0, V) and the Taylor
/// expansion σ_s(x) = x + A x²/s + B x³/s² + C x⁴/s³ + D x⁵/s⁴ + O(s⁻⁵),
///   A = σ''(0)/2, B = σ'''(0)/6, C = σ''''(0)/24, D = σ⁽⁵⁾(0)/120,
/// every term of odd total degree has zero Gaussian mean, so
///   n E[ΔV^{ab} | V] = n (E[σ_s(u)σ_s(v)] − V^{ab}) = b^{ab}(V) + c^{ab}(V)/(a⁴ n) + O(n⁻²),
///   b^{ab} = (1/a²) [ A² E[u²v²] + B E[u³v + uv³] ]
///          = (1/a²) [ (σ''(0)²/4)(V^{aa}V^{bb} + 2(V^{ab})²)
///                     + (σ'''(0)/2) V^{ab}(V^{aa} + V^{bb}) ],
///   c^{ab} = D E[u⁵v + uv⁵] + AC E[u⁴v² + u²v⁴] + B² E[u³v³]
///          = 15D ((V^{aa})² + (V^{bb})²) V^{ab}
///            + 3AC (V^{aa}V^{bb}(V^{aa} + V^{bb}) + 4(V^{aa} + V^{bb})(V^{ab})²)
///            + B² (9V^{aa}V^{bb}V^{ab} + 6(V^{ab})³),
/// from the Gaussian moments E[u²v²] = V^{aa}V^{bb} + 2(V^{ab})², E[u³v] = 3V^{aa}V^{ab},
/// E[u⁵v] = 15(V^{aa})²V^{ab}, E[u⁴v²] = 3(V^{aa})²V^{bb} + 12V^{aa}(V^{ab})²,
/// E[u³v³] = 9V^{aa}V^{bb}V^{ab} + 6(V^{ab})³ (write v = βu + w, β = V^{ab}/V^{aa}, w ⟂ u).
/// The covariance: n Cov(ΔV^{ab}, ΔV^{cd} | V) = Cov(uv, u'v') + O(1/n) (the O(1/s) cross terms are
/// odd), and by Isserlis Cov(h^a h^b, h^c h^d) = V^{ac}V^{bd} + V^{ad}V^{bc} = Σ_lin^{ab,cd}.
/// Hence the limit n → ∞ with t = l/n is the Itô SDE
///   dV = b(V) dt + L W Lᵀ,  L Lᵀ = V,  W = (G + Gᵀ)/√2,  G an m×m matrix of iid dB,
/// whose noise covariance is Σ_lin (ncsde::models::noise_lin). For tanh (σ'' = 0, σ''' = −2,
/// σ'''' = 0, σ⁽⁵⁾ = 16): b^{ab} = −(1/a²) V^{ab}(V^{aa} + V^{bb}), and
/// c^{ab} = 2((V^{aa})² + (V^{bb})²)V^{ab} + V^{aa}V^{bb}V^{ab} + (2/3)(V^{ab})³.
///
/// Two consequences used by the example program (examples/shaped_tanh). The diagonal is a closed scalar SDE,
/// dV^{aa} = −2(V^{aa})²/a² dt + √2 V^{aa} dB (tanh), whose deterministic limit is
/// V^{aa}(t) = V^{aa}(0)/(1 + 2V^{aa}(0) t/a²). And for an odd σ (σ''(0) = 0) the drift of the
/// correlation ρ^{ab} = V^{ab}/√(V^{aa}V^{bb}) vanishes: b^{ab}/√(V^{aa}V^{bb}) −
/// (ρ^{ab}/2)(b^{aa}/V^{aa} + b^{bb}/V^{bb}) = 0, so the law of ρ does not depend on a or σ'''(0).
#include <cstdint>
#include <string_view>
#include <utility>

#include "ncsde/concepts.hpp"
#include "ncsde/device.hpp"
#include "ncsde/models/coefficients.hpp"
#include "ncsde/random.hpp"
#include "ncsde/state_space.hpp"

namespace ncsde::models {

/// An activation σ with σ(0) = 0 and σ'(0) = 1, and its Taylor coefficients at 0:
///   σ(x) = x + d2 x²/2 + d3 x³/6 + d4 x⁴/24 + d5 x⁵/120 + O(x⁶).
/// d2, d3 define the SDE's drift; d4, d5 only its O(1/n) one-step correction c (see the file doc).
struct smooth_activation {
  std::string_view name;
  double (*f)(double) = nullptr;  ///< σ
  double d2 = 0.0;                ///< σ''(0)
  double d3 = 0.0;                ///< σ'''(0)
  double d4 = 0.0;                ///< σ''''(0)
  double d5 = 0.0;                ///< σ⁽⁵⁾(0)
};

/// σ = tanh: tanh x = x − x³/3 + 2x⁵/15 − …, so σ'' = 0, σ''' = −2, σ'''' = 0, σ⁽⁵⁾ = 16.
smooth_activation tanh_activation();

/// σ(x) = 2x·sigmoid(x) (SiLU scaled so that σ'(0) = 1): with sigmoid(x) = 1/2 + x/4 − x³/48 + …,
/// σ(x) = x + x²/2 − x⁴/24 + …, so σ'' = 1, σ''' = 0, σ'''' = −1, σ⁽⁵⁾ = 0. Even part ≠ 0: the
/// drift has the σ''(0)² term that tanh lacks.
smooth_activation swish_activation();

/// Checks that `act` is what it declares: f set; f(0) = 0 within 1e-14; and, by central
/// differences, σ'(0) = 1, σ''(0) = d2, σ'''(0) = d3 (the coefficients the SDE is built from)
/// within 1e-5, 1e-5·max(1, |d2|) and 1e-3·max(1, |d3|): the truncation errors h²σ'''/6 (h = 1e-3),
/// h²σ''''/12 (h = 1e-3) and h²σ⁽⁵⁾/4 (h = 1e-2) of the three stencils, with headroom for
/// |σ⁽ᵏ⁾(0)| ≲ 40, and far above their round-off (≲ 1e-9). d4, d5 must be finite.
/// Throws ncsde::invalid_argument naming `where` and the coefficient.
void validate_activation(std::string_view where, const smooth_activation& act);

/// Covariance SDE of the shaped smooth-activation MLP (see the file doc):
///   dV = b(V) dt + L W Lᵀ,  b^{ab} = q (V^{aa}V^{bb} + 2(V^{ab})²) + r V^{ab}(V^{aa} + V^{bb}),
///   q = σ''(0)²/(4a²),  r = σ'''(0)/(2a²),  Cov(dV) = Σ_lin(V) dt.
/// Satisfies ncsde::Sde (noise map applied to ξ = vec G, k = m²) and ncsde::CovarianceSde (dense
/// Σ_lin over packed pairs). Time-homogeneous. Invariant (checked once, in the constructor):
/// d2, d3 finite, a finite and > 0. diffusion() factors V in a mutable workspace, so one object
/// must not be shared between threads (ensembles copy it per thread).
class shaped_activation_sde {
 public:
  /// Solutions live on the positive-semidefinite cone: checks and pd_policy apply.
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  struct params {
    double d2 = 0.0;   ///< σ''(0); finite
    double d3 = -2.0;  ///< σ'''(0); finite
    double a = 1.0;    ///< shaping a = s/√n; finite and > 0
  };

  /// Throws ncsde::invalid_argument("shaped_activation_sde: <param> must be <rule> (got <value>)").
  explicit shaped_activation_sde(const params& p);

  /// The SDE of activation `act` (validated by validate_activation) at shaping a.
  shaped_activation_sde(const smooth_activation& act, double a);

  /// The tanh preset: σ''(0) = 0, σ'''(0) = −2, b^{ab} = −(1/a²) V^{ab}(V^{aa} + V^{bb}).
  static shaped_activation_sde tanh(double a = 1.0) {
    return shaped_activation_sde(params{0.0, -2.0, a});
  }

  /// The validated parameters.
  const params& parameters() const { return m_params; }
  /// q = σ''(0)²/(4a²), the coefficient of V^{aa}V^{bb} + 2(V^{ab})² in b.
  double quadratic_coefficient() const { return m_q; }
  /// r = σ'''(0)/(2a²), the coefficient of V^{ab}(V^{aa} + V^{bb}) in b.
  double cubic_coefficient() const { return m_r; }

  /// k = m²: the entries of G, column-major.
  int noise_dimension(int m) const { return m * m; }

  /// out = b(V), computed on the upper triangle and mirrored (exactly symmetric).
  void drift(const matrix& v, matrix& out, double t) const;

  /// out = L W Lᵀ with L Lᵀ = V (Cholesky, or the clipped eigen-factor off the open cone) and G the
  /// m×m matrix read column-major from xi (size m²); Cov(out) = Σ_lin(V).
  void diffusion(const matrix& v, const vector& xi, matrix& out, double t) const;

  /// sigma = Σ_lin(V), K×K over packed pairs (the dense reference of the noise map).
  void covariance(const matrix& v, matrix& sigma, double t) const;
  /// The device form (DeviceSde, device.hpp): a batch of paths on batch.device, with the device
  /// kernels of lib/models/device/shaped_tanh_kernels.hpp. ncsde::device_error when the device
  /// cannot run it.
  void run_device_batch(const device_batch& batch, device_batch_result& out) const;

 private:
  params m_params;
  double m_q = 0.0;
  double m_r = 0.0;
  mutable psd_factor m_factor;  // workspace: one copy per ensemble thread
};

static_assert(ncsde::Sde<shaped_activation_sde>);
static_assert(ncsde::CovarianceSde<shaped_activation_sde>);

/// The literal finite network of the file doc: m tokens, width n, σ_s(x) = s σ(x/s), s = a√n.
/// Randomness: a network is an ncsde::random_stream keyed by (seed, network index); the weights W_l
/// of layer l (0-based) are the n² normals of the counter (random_domain::user, l, 0),
/// column-major, and the rotation O of the initial state those of (random_domain::initial, 0, 0).
/// So every layer is a fixed function of (seed, network, l), independent of threads and of the
/// other layers. Invariant (checked once, in the constructor): the activation passes
/// validate_activation; a finite and > 0; m ≥ 1; n ≥ 2 and n ≥ m. Const and thread-safe. It is a
/// networks::network_sampler (state: X and one layer's workspaces), so networks::sample_networks
/// runs it; run() is the same chain for one network.
class shaped_activation_network {
 public:
  /// The sampler state: X (m×n) and the workspaces of one layer.
  struct state {
    state() = default;
    state(matrix x0) : x(std::move(x0)) {}  // implicit: initial_state's X is a state
    matrix x, w, h, next;
  };

  /// Throws ncsde::invalid_argument naming the parameter and value.
  shaped_activation_network(const smooth_activation& act, double a, int m, int n);

  int m() const { return m_m; }
  int n() const { return m_n; }
  double a() const { return m_a; }
  /// s = a√n.
  double s() const { return m_s; }
  const smooth_activation& activation() const { return m_act; }
  /// σ_s(x) = s σ(x/s).
  double sigma_s(double x) const { return m_s * m_act.f(x / m_s); }

  /// X₀ = √n L₀ Qᵀ with L₀L₀ᵀ = V₀ (Cholesky, or the clipped eigen-factor of a singular V₀) and Q
  /// (n×m) the thin orthonormal factor of an n×m Gaussian matrix from `stream`, so X₀X₀ᵀ/n = V₀ up
  /// to round-off. Throws ncsde::invalid_argument unless V₀ is m×m, finite, symmetric and PSD.
  matrix initial_state(const matrix& v0, const random_stream& stream) const;

  /// One layer l: h = X W_l/√n (the pre-activation) and x_next = σ_s(h) entry-wise; `w` is an n×n
  /// workspace. Sizes are checked with NCSDE_ASSERT.
  void layer(const matrix& x, std::uint64_t l, const random_stream& stream, matrix& w, matrix& h,
             matrix& x_next) const;

  /// One layer on a sampler state (network_sampler): s.x ← σ_s(s.x W_l/√n), as layer().
  void step(state& s, std::uint64_t l, const random_stream& stream) const;
  /// V = X Xᵀ/n of a sampler state.
  matrix covariance(const state& s) const;

  /// V_d = X_d X_dᵀ/n after d ≥ 0 layers from initial_state(v0, stream); throws
  /// ncsde::invalid_argument on a bad V₀ or d < 0.
  matrix run(const matrix& v0, int d, const random_stream& stream) const;

 private:
  smooth_activation m_act;
  double m_a;
  int m_m;
  int m_n;
  double m_s = 1.0;
};

}  // namespace ncsde::models
