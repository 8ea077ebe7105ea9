#pragma once
/// SDE test problems with known solutions: the ground truth of convergence studies and unit tests.
///
/// Every problem is an Sde on symmetric m×m matrices in noise-map form (concepts.hpp) with its
/// diffusion_derivative, plus what is known about it exactly:
///  - a pathwise solution V_T = Φ(V0, W_T, T) where one exists (the schemes' strong errors are then
///    measured against the truth itself, on the same Brownian path);
///  - exact first and second moments, the references of weak errors, and the moments of the
///    Euler–Maruyama chain after n steps (E[V_n], E[V_n ⊗ V_n]) where the SDE is linear enough for
///    them to be exact: a control variate with an exactly known mean.
///
/// Second moments are returned as the m²×m² matrix M with M(a + m·b, c + m·d) = E[V^{ab} V^{cd}]
/// (column-major vec indices, 0-based), so E‖V‖²_F = tr M. conditional_second_moment(F, τ) gives,
/// as a quadratic_form in V, u(V) = E[vec(V_T)ᵀ F vec(V_T) | V_{T−τ} = V]: the solution of the
/// backward Kolmogorov equation for the weak functional f = vec(V)ᵀ F vec(V) (F = I: f = ‖V‖²_F),
/// which the convergence engine uses as a martingale control variate for Euler–Maruyama's weak
/// error.
///
/// What each problem can and cannot reveal (strong order s, weak order w; EM = Euler–Maruyama):
///  - gbm, hadamard_linear, lifted_linear with commuting coefficients: commutative noise. EM has
///    s = 1/2 because the Milstein term (L^jG_j)(V)(ΔW_j² − h)/2 it omits is nonzero
///    (L^jG_j = G_j∘G_j for linear noise); there is no additive or small-noise regime to make it
///    superconverge. Milstein (either form) has s = 1. E[V_T] is not reproduced exactly by EM
///    ((I + h𝓛)^n ≠ e^{T𝓛}), so first and second moments both reveal w = 1.
///  - lifted_linear with non-commuting B_j, linear_covariance, wishart: non-commutative noise.
///    Milstein needs the Lévy areas for s = 1; without them (milstein_commutative) s falls to 1/2.
///    No pathwise closed form: the strong reference is a fine-step Milstein solution on the same
///    Brownian path.
///  - linear_covariance and wishart: EM reproduces E[V_T] exactly (the drift is affine and the
///    noise has mean zero), so only second (or higher) moments can reveal a weak order.
#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>

#include <vector>

#include "ncsde/concepts.hpp"
#include "ncsde/device.hpp"
#include "ncsde/lanes.hpp"
#include "ncsde/noise.hpp"
#include "ncsde/state_space.hpp"

namespace ncsde::analytic {

/// A polynomial of degree ≤ 2 in the entries of V: u(V) = c + lᵀ vec V + vec(V)ᵀ Q vec(V) (vec
/// column-major; l may be empty, meaning 0).
struct quadratic_form {
  double c = 0.0;
  vector l;
  matrix q;
  double operator()(const matrix& v) const;
};

namespace detail {

/// A factor L with L Lᵀ = V⁺ and its directional derivative DL(V)[H]:
///  - V positive definite (Cholesky succeeds): the Cholesky factor; DL[H] = L Φ(L⁻¹ H L⁻ᵀ), with Φ
///    taking the strictly lower triangle and half the diagonal (then DL Lᵀ + L DLᵀ = H);
///  - otherwise the symmetric square root of the projection V⁺ = U diag(max(λ, 0)) Uᵀ,
///    L = U diag(√max(λ, 0)) Uᵀ, with the Daleckii–Krein derivative DL[H] = U (F ∘ UᵀHU) Uᵀ,
///    F_ij = (s_i − s_j)/(λ_i − λ_j) for s = √max(λ, 0) (1/(s_i + s_j) when both are positive, 0
///    when both are clipped): finite unless an eigenvalue is exactly 0.
/// The fallback only serves states a discretisation pushed out of the cone (the exact solutions of
/// the problems using it stay positive definite). The factor is cached for the last V seen.
class gram_factor {
 public:
  gram_factor() = default;
  /// A copy starts with an empty cache (the next factor() recomputes): the factorisations are
  /// workspaces, and copying an Eigen decomposition that was never computed would read its
  /// uninitialised state.
  gram_factor(const gram_factor&) {}
  gram_factor& operator=(const gram_factor&) {
    m_valid = false;
    return *this;
  }

  /// L for V (symmetric m×m).
  const matrix& factor(const matrix& v);
  /// out = DL(V)[h] at the V of the last factor() call.
  void derivative(const matrix& h, matrix& out);
  /// Whether the last factor() was a Cholesky factor (V positive definite).
  bool cholesky() const { return m_cholesky; }

 private:
  matrix m_v, m_l, m_work, m_x;
  vector m_s;
  bool m_valid = false, m_cholesky = false;
  Eigen::SelfAdjointEigenSolver<matrix> m_eigen;
};

/// gram_factor on the m×m states of a lane group (lanes.hpp): l holds each lane's factor (the lower
/// Cholesky factor by lane_cholesky where the lane is clearly positive definite, gram_factor's L
/// for the others, which need not be triangular: `triangular` says whether every lane's factor is
/// lane_cholesky's), and w, t are the noise maps' workspaces.
struct lane_factors {
  lane_block l, w, t;
  lane_mask ok = lane_mask::Constant(false);
  bool triangular = true;
  gram_factor scalar;
  matrix v;
  lane_cholesky_cache<batch_width> hint;  ///< the batched engine's factors (use_cholesky_lanes)

  void factor(const lane_block& states, int m);
};

}  // namespace detail

/// Scalar-noise geometric Brownian motion, entrywise: dV = μ V dt + σ V dW (k = 1). For m = 1 this
/// is the classical GBM dX = μX dt + σX dW. Exact: V_T = V0 exp((μ − σ²/2)T + σ W_T); E[V_T] = V0
/// e^{μT}; E[V^{ab}V^{cd}] = V0^{ab}V0^{cd} e^{(2μ + σ²)T}. The path stays PSD (a positive multiple
/// of V0). Invariant: μ, σ finite (σ = 0 is allowed but makes every scheme exact). Throws
/// ncsde::invalid_argument.
class gbm {
 public:
  /// Solutions live on the positive-semidefinite cone: checks and pd_policy apply.
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  struct params {
    double mu = 0.5;
    double sigma = 0.5;
  };
  gbm();  ///< μ = 0.5, σ = 0.5
  explicit gbm(params p);

  const params& parameters() const { return m_params; }
  int noise_dimension(int) const { return 1; }
  /// out = μ v.
  void drift(const matrix& v, matrix& out, double t) const;
  /// out = σ ξ₁ v.
  void diffusion(const matrix& v, const vector& xi, matrix& out, double t) const;
  /// out = σ ξ₁ h (G is linear in V).
  void diffusion_derivative(const matrix& v, const matrix& h, const vector& xi, matrix& out,
                            double t) const;
  /// The batched form (BatchedSde, lanes.hpp): drift and diffusion lane by lane, in the same
  /// operations as drift() and diffusion() (bit-identical paths).
  void drift_lanes(const lane_block& v, lane_block& out, double t) const;
  void diffusion_lanes(const lane_block& v, const lane_block& xi, lane_block& out, double t) const;
  /// The device form (DeviceSde, device.hpp): a batch of paths on batch.device, the CUDA backend or
  /// the emulated device, with gbm_device_model (solvers/device/analytic_kernels.hpp: μ V and
  /// σ ξ₁ V in the operations and order of drift() and diffusion()). ncsde::device_error when the
  /// device cannot run it.
  void run_device_batch(const device_batch& batch, device_batch_result& out) const;

  /// V_T from W_T (size 1).
  matrix exact(const matrix& v0, const Eigen::Ref<const vector>& w_t, double t) const;
  matrix mean(const matrix& v0, double t) const;
  matrix second_moments(const matrix& v0, double t) const;
  /// E[vec(V_T)ᵀ F vec(V_T) | V_{T−τ} = V] = e^{(2μ+σ²)τ} vec(V)ᵀ F vec(V).
  quadratic_form conditional_second_moment(const matrix& f, double tau) const;

 private:
  params m_params;
};

/// Linear SDE with elementwise (Hadamard) coefficients and k ≥ 1 noises:
///   dV = A∘V dt + Σ_j B_j∘V dW_j,  A, B_j symmetric m×m.
/// The noise is commutative: L^jG_l(V) = B_l∘B_j∘V = L^lG_j(V).
/// Exact, entrywise: V^{ab}_T = V0^{ab} exp((A^{ab} − ½Σ_j (B_j^{ab})²)T + Σ_j B_j^{ab} W_j(T)),
/// E[V^{ab}_T] = V0^{ab} e^{A^{ab}T}, E[V^{ab}V^{cd}] = V0^{ab}V0^{cd} exp((A^{ab} + A^{cd} +
/// Σ_j B_j^{ab}B_j^{cd})T).
/// V_T need not be PSD for general A, B_j; it is when the coefficients are those of diagonal_lift()
/// (V_T = D V0 D with D diagonal and positive).
/// Invariant: A and the B_j square, of one size, symmetric, finite; k ≥ 1. Throws
/// ncsde::invalid_argument.
/// No device form (device.hpp): the coefficients are matrices, which a device thread would read
/// from device memory; an ensemble on a device refuses it (device "auto" runs it on the CPU).
class hadamard_linear {
 public:
  /// Solutions live on the positive-semidefinite cone: checks and pd_policy apply.
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  hadamard_linear(matrix a, std::vector<matrix> b);

  /// The coefficients of V = x xᵀ summed over rank-one terms, for the diagonal linear SDE
  /// dx_a = α_a x_a dt + Σ_j β_{j,a} x_a dW_j: A^{ab} = α_a + α_b + Σ_j β_{j,a}β_{j,b},
  /// B_j^{ab} = β_{j,a} + β_{j,b}. The solution is then V_T = D V0 D,
  /// D = diag(exp((α_a − ½Σ_j β_{j,a}²)T + Σ_j β_{j,a} W_j(T))), PSD whenever V0 is.
  static hadamard_linear diagonal_lift(const vector& alpha, const std::vector<vector>& beta);

  int size() const { return static_cast<int>(m_a.rows()); }
  const matrix& a() const { return m_a; }
  const std::vector<matrix>& b() const { return m_b; }

  /// k; throws ncsde::invalid_argument unless m equals size().
  int noise_dimension(int m) const;
  void drift(const matrix& v, matrix& out, double t) const;
  void diffusion(const matrix& v, const vector& xi, matrix& out, double t) const;
  void diffusion_derivative(const matrix& v, const matrix& h, const vector& xi, matrix& out,
                            double t) const;
  /// The batched form (BatchedSde, lanes.hpp): A∘V and Σ_j ξ_j (B_j∘V) lane by lane, in the same
  /// operations and order as drift() and diffusion() (bit-identical paths).
  void drift_lanes(const lane_block& v, lane_block& out, double t) const;
  void diffusion_lanes(const lane_block& v, const lane_block& xi, lane_block& out, double t) const;

  matrix exact(const matrix& v0, const Eigen::Ref<const vector>& w_t, double t) const;
  matrix mean(const matrix& v0, double t) const;
  matrix second_moments(const matrix& v0, double t) const;
  /// Q = F ∘ exp(τ R), R(a+mb, c+md) = A^{ab} + A^{cd} + Σ_j B_j^{ab}B_j^{cd}.
  quadratic_form conditional_second_moment(const matrix& f, double tau) const;
  /// E[V_n] and E[V_n ⊗ V_n] of n Euler–Maruyama steps of size h (exact recursions).
  matrix euler_mean(const matrix& v0, double h, long long n) const;
  matrix euler_second_moments(const matrix& v0, double h, long long n) const;

 private:
  matrix m_a;
  std::vector<matrix> m_b;
};

/// The SDE of V = X Xᵀ when the m×m matrix X solves the linear SDE dX = A X dt + Σ_j B_j X dW_j:
///   dV = (A V + V Aᵀ + Σ_j B_j V B_jᵀ) dt + Σ_j (B_j V + V B_jᵀ) dW_j,   A, B_j any real m×m.
/// Linear in V, and it keeps V PSD (V_t = Φ_t V0 Φ_tᵀ with Φ the fundamental solution). Noise
/// fields G_j(V) = B_jV + VB_jᵀ; their commutator is L^jG_l − L^lG_j = C V + V Cᵀ with C = [B_l,
/// B_j], so the noise is non-commutative as soon as two B_j do not commute (and C V0 + V0 Cᵀ ≠ 0).
/// Exact pathwise solution only when A and all B_j commute pairwise (matrix geometric Brownian
/// motion): X_T = E X0 with E = exp((A − ½Σ_j B_j²)T + Σ_j B_j W_j(T)), so V_T = E V0 Eᵀ.
/// Moments for any coefficients: vec V solves d vec V = 𝓛₀ vec V dt + Σ_j 𝓑_j vec V dW_j with
/// 𝓛₀ = I⊗A + A⊗I + Σ_j B_j⊗B_j and 𝓑_j = I⊗B_j + B_j⊗I, so E[vec V_T] = e^{T𝓛₀} vec V0 and the
/// m⁴-vector of second moments obeys the generator I⊗𝓛₀ + 𝓛₀⊗I + Σ_j 𝓑_j⊗𝓑_j.
/// Invariant: A and the B_j square, of one size, finite; k ≥ 1. Throws ncsde::invalid_argument.
/// No device form (device.hpp), as hadamard_linear: its coefficients are matrices.
class lifted_linear {
 public:
  /// Solutions live on the positive-semidefinite cone: checks and pd_policy apply.
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  lifted_linear(matrix a, std::vector<matrix> b);

  int size() const { return static_cast<int>(m_a.rows()); }
  const matrix& a() const { return m_a; }
  const std::vector<matrix>& b() const { return m_b; }
  /// A and all B_j commute pairwise (to 1e-12 relative): the pathwise solution exists.
  bool commuting() const { return m_commuting; }

  /// k; throws ncsde::invalid_argument unless m equals size().
  int noise_dimension(int m) const;
  void drift(const matrix& v, matrix& out, double t) const;
  void diffusion(const matrix& v, const vector& xi, matrix& out, double t) const;
  void diffusion_derivative(const matrix& v, const matrix& h, const vector& xi, matrix& out,
                            double t) const;

  /// The batched form (BatchedSde, lanes.hpp): A V + (A V)ᵀ + Σ_j B_j V B_jᵀ and
  /// Σ_j ξ_j B_j V + (Σ_j ξ_j B_j V)ᵀ lane by lane, the products by lane_product and
  /// lane_product_transposed; drift() and diffusion() form the same products through
  /// dense_kernels.hpp in the same order: a batched path is the unbatched one bit for bit.
  void drift_lanes(const lane_block& v, lane_block& out, double t) const;
  void diffusion_lanes(const lane_block& v, const lane_block& xi, lane_block& out, double t) const;

  /// Pathwise solution (commuting coefficients only; otherwise throws ncsde::invalid_argument).
  matrix exact(const matrix& v0, const Eigen::Ref<const vector>& w_t, double t) const;
  matrix mean(const matrix& v0, double t) const;
  matrix second_moments(const matrix& v0, double t) const;
  /// vec Q = exp(τ 𝓜ᵀ) vec F, 𝓜 the second-moment generator above.
  quadratic_form conditional_second_moment(const matrix& f, double tau) const;
  matrix euler_mean(const matrix& v0, double h, long long n) const;
  matrix euler_second_moments(const matrix& v0, double h, long long n) const;

 private:
  matrix m_a;
  std::vector<matrix> m_b;
  bool m_commuting = false;
  matrix m_generator;                      ///< 𝓛₀ (m²×m²)
  std::vector<matrix> m_noise_generators;  ///< 𝓑_j (m²×m²)
  lane_block m_a_lanes;                    ///< A in every lane (the lane products' operand)
  std::vector<lane_block> m_b_lanes;       ///< B_j in every lane
  mutable lane_block m_product, m_sandwich;
};

/// The linear covariance SDE of docs/maths.md §1/§4.1: dV = Σ_lin(V)^{1/2} dB, drift 0, with the structured
/// noise map G(V)ξ = L W Lᵀ, W = (Ξ + Ξᵀ)/√2, Ξ the m×m matrix holding ξ column-major (k = m²), and
/// L Lᵀ = V (Cholesky; the symmetric PSD square root of V⁺ when V is not positive definite, see
/// detail::gram_factor). Cov(dV^{ab}, dV^{cd}) = Σ_lin^{ab,cd} dt = (V^{ac}V^{bd} + V^{ad}V^{bc})
/// dt. Exact facts: E[V_t] = V0; each diagonal entry is a GBM with σ = √2 (dV^{aa} = √2 V^{aa}
/// dβ_a); the second moments solve the closed linear ODE d/dt E[V^{ab}V^{cd}] = E[V^{ac}V^{bd} +
/// V^{ad}V^{bc}]. The noise is non-commutative; there is no pathwise closed form. EM reproduces
/// E[V_T] exactly, so weak orders are measured on second moments. Also a CovarianceSde
/// (covariance() = Σ_lin over packed pairs), to test the dense adapter against the structured map.
class linear_covariance {
 public:
  /// Solutions live on the positive-semidefinite cone: checks and pd_policy apply.
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  int noise_dimension(int m) const { return m * m; }
  /// out = 0.
  void drift(const matrix& v, matrix& out, double t) const;
  void diffusion(const matrix& v, const vector& xi, matrix& out, double t) const;
  /// out = DL[h] W Lᵀ + L W DL[h]ᵀ.
  void diffusion_derivative(const matrix& v, const matrix& h, const vector& xi, matrix& out,
                            double t) const;
  /// sigma = Σ_lin(V) over the K = m(m+1)/2 packed index pairs (CovarianceSde).
  void covariance(const matrix& v, matrix& sigma, double t) const;
  /// The batched form (BatchedSde): L W Lᵀ lane by lane, L the lanes' Cholesky factors
  /// (lane_cholesky; detail::gram_factor for a lane that is not positive definite). diffusion()
  /// forms the same products in the same order (dense_kernels.hpp): a batched path is the unbatched
  /// one bit for bit.
  void drift_lanes(const lane_block& v, lane_block& out, double t) const;
  void diffusion_lanes(const lane_block& v, const lane_block& xi, lane_block& out, double t) const;
  /// The batched engine's lane_cholesky factors of exactly v (BatchedSdeWithCholeskyHint).
  void use_cholesky_lanes(const lane_block& v, const lane_block& l, const lane_mask& ok) const {
    m_lanes.hint.adopt(v, l, ok);
  }
  /// The device form (DeviceSde, device.hpp): a batch of paths on batch.device, the CUDA backend or
  /// the emulated device, with linear_covariance_device_model (solvers/device/analytic_kernels.hpp:
  /// 0 and L W Lᵀ in the operations and order of drift() and diffusion(), L the Cholesky factor; a
  /// step from a V without one is the CPU engine's). ncsde::device_error when the device cannot
  /// run it.
  void run_device_batch(const device_batch& batch, device_batch_result& out) const;

  matrix second_moments(const matrix& v0, double t) const;
  /// vec Q = exp(τ 𝓚ᵀ) vec F, 𝓚 the second-moment generator: (𝓚M)^{ab,cd} = M^{ac,bd} + M^{ad,bc}.
  quadratic_form conditional_second_moment(const matrix& f, double tau) const;
  matrix euler_second_moments(const matrix& v0, double h, long long n) const;

 private:
  mutable detail::gram_factor m_factor;
  mutable matrix m_w, m_h;
  mutable detail::lane_factors m_lanes;
};

/// The Wishart process as an SDE in V alone: for integer p and V0 = X0 X0ᵀ (X0 m×p), the law of
/// V_t = (X0 + W_t)(X0 + W_t)ᵀ, W an m×p Brownian matrix, is that of
///   dV = p·I dt + L dB + dBᵀ Lᵀ,   L Lᵀ = V,  B an m×m Brownian matrix (k = m²),
/// because both have drift p·I and Cov(dV^{ab}, dV^{cd}) = (V^{ac}δ^{bd} + V^{ad}δ^{bc} +
/// V^{bc}δ^{ad}
/// + V^{bd}δ^{ac}) dt, whatever the factor L. This formulation is used (rather than carrying X)
/// because the library's state is V; L is the Cholesky factor (detail::gram_factor), so the noise
/// is non-commutative. The exact path is PD for p ≥ m + 1. Exact moments (any real p > 0, from the
/// generator): E[V_t] = V0 + p t I and
///   E[V⊗V](t) = V0⊗V0 + t [p (I⊗V0 + V0⊗I) + S(V0)] + t²/2 [2p² I⊗I + p S(I)],
/// S(V)^{ab,cd} = V^{ac}δ^{bd} + V^{ad}δ^{bc} + V^{bc}δ^{ad} + V^{bd}δ^{ac}. EM reproduces E[V_T]
/// exactly; its second moments miss (pTh/2)·S(I): weak order 1 shows on second moments only.
/// Invariant: p > 0 and finite. Throws ncsde::invalid_argument.
class wishart {
 public:
  /// Solutions live on the positive-semidefinite cone: checks and pd_policy apply.
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  explicit wishart(double p);

  double degrees_of_freedom() const { return m_p; }
  int noise_dimension(int m) const { return m * m; }
  /// out = p I.
  void drift(const matrix& v, matrix& out, double t) const;
  /// out = L Ξ + Ξᵀ Lᵀ, Ξ the m×m matrix holding ξ column-major.
  void diffusion(const matrix& v, const vector& xi, matrix& out, double t) const;
  void diffusion_derivative(const matrix& v, const matrix& h, const vector& xi, matrix& out,
                            double t) const;
  void covariance(const matrix& v, matrix& sigma, double t) const;
  /// The batched form (BatchedSde): p·I and L Ξ + (L Ξ)ᵀ lane by lane (lane_factors); bit for bit
  /// the unbatched path (diffusion() forms L Ξ through dense_kernels.hpp).
  void drift_lanes(const lane_block& v, lane_block& out, double t) const;
  void diffusion_lanes(const lane_block& v, const lane_block& xi, lane_block& out, double t) const;
  /// The batched engine's lane_cholesky factors of exactly v (BatchedSdeWithCholeskyHint).
  void use_cholesky_lanes(const lane_block& v, const lane_block& l, const lane_mask& ok) const {
    m_lanes.hint.adopt(v, l, ok);
  }
  /// The device form (DeviceSde, device.hpp): a batch of paths on batch.device, the CUDA backend or
  /// the emulated device, with wishart_device_model (solvers/device/analytic_kernels.hpp: p·I and
  /// L Ξ + Ξᵀ Lᵀ in the operations and order of drift() and diffusion(), L the Cholesky factor; a
  /// step from a V without one is the CPU engine's). ncsde::device_error when the device cannot
  /// run it.
  void run_device_batch(const device_batch& batch, device_batch_result& out) const;

  /// (X0 + W)(X0 + W)ᵀ for a Brownian matrix value W (m×p): the exact law's sampler.
  static matrix exact_in_law(const matrix& x0, const matrix& w);
  matrix mean(const matrix& v0, double t) const;
  matrix second_moments(const matrix& v0, double t) const;
  /// From the second-moment formula with V0 = V and t = τ: Q = F, lᵀx = τ ⟨F, p(e xᵀ + x eᵀ) +
  /// S(x)⟩, c = τ²/2 ⟨F, 2p² e eᵀ + p S(I)⟩, e = vec I.
  quadratic_form conditional_second_moment(const matrix& f, double tau) const;
  matrix euler_second_moments(const matrix& v0, double h, long long n) const;

 private:
  double m_p;
  mutable detail::lane_factors m_lanes;
  mutable detail::gram_factor m_factor;
  mutable matrix m_xi, m_h;
};

/// The noise commutator [G_j, G_l](V) = (L^jG_l − L^lG_j)(V), L^jG_l = DG_l(V)[G_j(V)]: the noise
/// is commutative iff it vanishes for all j, l on the state space (then Milstein needs no Lévy
/// areas).
template <SdeWithDiffusionDerivative S>
matrix noise_commutator(const S& sde, const matrix& v, int j, int l, double t = 0.0) {
  const int k = sde.noise_dimension(static_cast<int>(v.rows()));
  vector ej = vector::Zero(k), el = vector::Zero(k);
  ej(j) = 1.0;
  el(l) = 1.0;
  matrix gj(v.rows(), v.cols()), gl(v.rows(), v.cols()), ljgl(v.rows(), v.cols()),
      llgj(v.rows(), v.cols());
  sde.diffusion(v, ej, gj, t);
  sde.diffusion(v, el, gl, t);
  sde.diffusion_derivative(v, gj, el, ljgl, t);
  sde.diffusion_derivative(v, gl, ej, llgj, t);
  return ljgl - llgj;
}

}  // namespace ncsde::analytic
