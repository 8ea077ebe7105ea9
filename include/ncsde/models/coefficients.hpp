#pragma once
/// Building blocks of the neural covariance SDEs (docs/maths.md §3.2 and §4): drifts, dense
/// diffusion operators Σ over packed pairs, and the structured O(m³) noise samplers that reproduce
/// them.
///
/// Conventions: V is a symmetric m×m matrix; tokens are 0-indexed here, so the token a (0-indexed)
/// of the causal formulas has k_a = a + 1 keys. P = I − (1/m) 1 1ᵀ; P_a is the centring projector
/// on tokens 0..a extended by zeros (P_0 = 0, P_{m−1} = P). Σ is the K×K matrix over the K =
/// m(m+1)/2 pairs a ≤ b in ncsde::packed_index order with entries Σ^{ab,cd} (no √2 weighting). None
/// of these functions include the architecture factors γ², γ⁴, k_lin, k_att (models/shaped.hpp).
/// Inputs are not validated (hot paths): sizes are checked with NCSDE_ASSERT only.
#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/Eigenvalues>

#include <type_traits>

#include "ncsde/concepts.hpp"

namespace ncsde::models {

/// ReLU drift  b_ReLU^{ab} = ν(ρ^{ab}) √(V^{aa}V^{bb}),
///   ν(ρ) = ((c₊ − c₋)²/(2π)) (√(1 − ρ²) − ρ arccos ρ),  ρ^{ab} = V^{ab}/√(V^{aa}V^{bb}).
/// ρ is clipped to [−1, 1] and max(V^{aa}, 0) is used under the square root, so the result is
/// finite for every finite V (at |ρ| → 1 too). The diagonal is exactly 0 (ν(1) = 0). Homogeneous of
/// degree 1. `out` must not be `v`.
void b_relu(const matrix& v, double c_plus, double c_minus, matrix& out);

/// Full-attention drift without γ²:
///   u = ½ [diag(PVP) − (tr(PVP)/m) 1],
///   b_att = (1/τ₀²) [ (diag(V)(Vu)ᵀ + (Vu)diag(V)ᵀ)/m + (tr(PVPV)/m²) V ].
/// Homogeneous of degree 3; xᵀ b_att x = 0 when Vx = 0. Cost O(m²) plus one matrix-vector product.
void b_att(const matrix& v, double tau0, matrix& out);

/// Causal-attention drift without γ² (0-indexed tokens, k_a = a + 1):
///   b_causal = (1/τ₀²) [E + Eᵀ + D_κ⁻¹ (V∘T) D_κ⁻¹],  E = D_κ⁻¹ Diag(V) U V,  D_κ = diag(k_0, …,
///   k_{m−1}),
/// U's row a is u_aᵀ = ½ [diag(P_a V P_a) − (tr(P_a V P_a)/k_a) 1_{≤a}]ᵀ and T^{ab} = tr(P_a V P_b
/// V), evaluated through prefix sums: T^{ab} = Q2^{ab} − S2^{ab}/k_b − S2^{ba}/k_a + (Π^{ab})²/(k_a
/// k_b) with Π^{ab} = Σ_{i≤a,j≤b} V^{ij}, Q2^{ab} = Σ_{i≤a,j≤b} (V^{ij})², R^{ib} = Σ_{j≤b} V^{ij},
/// S2^{ab} = Σ_{i≤a} (R^{ib})². Cost O(m³) (the product U V). Entries (0,0) and (0,1) are exactly
/// 0.
void b_causal(const matrix& v, double tau0, matrix& out);

/// Σ_lin^{ab,cd} = V^{ac}V^{bd} + V^{ad}V^{bc} (K×K). Homogeneous of degree 2.
void sigma_lin(const matrix& v, matrix& sigma);

/// Σ_att^{ab,cd} = (1/(m²τ₀²)) [V^{ac}Φ^{bd} + V^{ad}Φ^{bc} + V^{bc}Φ^{ad} + V^{bd}Φ^{ac}],  Φ =
/// VPVPV (K×K, without γ⁴). Homogeneous of degree 4.
void sigma_att(const matrix& v, double tau0, matrix& sigma);

/// Σ_causal^{ab,cd} = (1/τ₀²) [ (V^{ac}/(k_a k_c)) Φ_{ac}^{bd} + (V^{ad}/(k_a k_d)) Φ_{ad}^{bc}
///                              + (V^{bc}/(k_b k_c)) Φ_{bc}^{ad} + (V^{bd}/(k_b k_d)) Φ_{bd}^{ac}
///                              ],
/// Φ_{ac} = V P_a V P_c V (K×K, without γ⁴). Dense reference: O(m⁵) time, O(m⁴) memory.
void sigma_causal(const matrix& v, double tau0, matrix& sigma);

/// Linear noise N_lin = L W Lᵀ, W = (G + Gᵀ)/√2, evaluated as (M + Mᵀ)/√2 with M = L G Lᵀ (exactly
/// symmetric). With G iid N(0, 1) and L Lᵀ = V, Cov(N_lin) = Σ_lin for any such factor L.
void noise_lin(const matrix& l, const Eigen::Ref<const matrix>& g, matrix& out);

/// Attention noise N_att = (1/(mτ₀)) (ζPV + VPζᵀ), ζ = L Z Lᵀ. Cov(N_att) = Σ_att for any L with
/// L Lᵀ = V and Z iid N(0, 1). Exactly symmetric.
void noise_att(const matrix& l, const matrix& v, const Eigen::Ref<const matrix>& z, double tau0,
               matrix& out);

/// Causal attention noise N_causal = (1/τ₀)(N V + V Nᵀ), ζ = L Z Lᵀ, row a of N = (1/k_a) ζ^{a·}
/// P_a (centre ζ^{a,0..a} over its k_a entries, zero the rest, divide by k_a). Row 0 of N is 0, so
/// N_causal^{00} = 0 exactly. Cov(N_causal) = Σ_causal for any L with L Lᵀ = V. Exactly symmetric.
void noise_causal(const matrix& l, const matrix& v, const Eigen::Ref<const matrix>& z, double tau0,
                  matrix& out);

/// Reusable factorisation V = L Lᵀ for the structured noise: Cholesky (detail::cholesky_factor, the
/// positive-definiteness check's and the lanes' factor) when V is numerically positive definite,
/// otherwise the eigen-factor L = U diag(√max(λ, 0)) of V = U diag(λ) Uᵀ (a PSD V on the boundary
/// of the cone, or a V that a step pushed slightly outside it, whose negative
/// eigenvalues are clipped). Holds its workspaces, so repeated calls at one size allocate nothing
/// (fixed M: no heap at all; dynamic: Eigen's eigensolver allocates one vector per eigen-factor).
/// Instantiated for M ∈ {2, 3, 4, 8} and Eigen::Dynamic (psd_factor).
template <int M>
class basic_psd_factor {
 public:
  basic_psd_factor() = default;
  /// Copies keep the factor l() but not the decompositions, which are workspaces (copying an Eigen
  /// decomposition that was never computed would read its uninitialised state).
  basic_psd_factor(const basic_psd_factor& other) : m_l(other.m_l), m_lower(other.m_lower) {}
  basic_psd_factor& operator=(const basic_psd_factor& other) {
    m_l = other.m_l;
    m_lower = other.m_lower;
    return *this;
  }

  /// Computes L for V and returns true when Cholesky succeeded (false: eigen-factor fallback).
  bool compute(const square_matrix<M>& v);
  /// Takes the Cholesky factor L of V computed elsewhere by the same algorithm as compute() (the
  /// positive-definiteness check's, ncsde::detail::cholesky_factor): afterwards l() is what
  /// compute(V) would give, bit for bit, without refactorising.
  void adopt(const square_matrix<M>& l) {
    m_l = l;
    m_lower = true;
  }
  /// The factor of the last compute() or adopt().
  const square_matrix<M>& l() const { return m_l; }
  /// Whether l() is the Cholesky factor (lower triangular, upper triangle 0), not the eigen-factor.
  bool lower() const { return m_lower; }

 private:
  Eigen::SelfAdjointEigenSolver<square_matrix<M>> m_eigen;
  square_matrix<M> m_l;
  bool m_lower = false;
};

/// The factorisation of dynamic-size V.
using psd_factor = basic_psd_factor<Eigen::Dynamic>;

/// Convenience: a factor L with L Lᵀ = V (Cholesky, or the clipped eigen-factor; see psd_factor).
matrix factor(const matrix& v);

// ---- The kernels on compile-time-sized states ------------------------------------------------
// The functions above, as templates on the state size M (a fixed size 2, 3, 4, 8, or
// Eigen::Dynamic, for which each function above calls its template), with the temporaries in a
// caller-held workspace: after the first call at a size they allocate nothing (fixed M: nothing
// ever). Same formulas and the same operations in the same order as above (the products and the
// factorisation through dense_kernels.hpp, each sum from 0 in increasing index), so fixed and
// dynamic results are the same bits, and so are the lane kernels' (tests/models/fixed_size_test.cpp,
// batched_model_test.cpp). Instantiated in lib/models/coefficients.cpp for M ∈ {2, 3,
// 4, 8, Eigen::Dynamic}.

/// Scratch storage of the kernels below for m×m states. A kernel's output must not be a member
/// of the workspace it is given.
template <int M>
struct coefficient_workspace {
  square_matrix<M> m0, m1, m2, m3, m4, m5;
  column_vector<M> c0, c1, c2, c3;
};

/// A square_matrix<M> argument that does not take part in deducing M (Maps and Refs bind to it).
template <int M>
using square_ref = Eigen::Ref<const std::type_identity_t<square_matrix<M>>>;

/// b_relu on square_matrix<M> (allocation-free; needs no workspace).
template <int M>
void b_relu(const square_matrix<M>& v, double c_plus, double c_minus, square_matrix<M>& out);
/// b_att with its temporaries in `ws`.
template <int M>
void b_att(const square_matrix<M>& v, double tau0, square_matrix<M>& out,
           coefficient_workspace<M>& ws);
/// b_causal with its temporaries in `ws`.
template <int M>
void b_causal(const square_matrix<M>& v, double tau0, square_matrix<M>& out,
              coefficient_workspace<M>& ws);
/// noise_lin with its temporaries in `ws`; `lower`: L is lower triangular (its upper triangle 0),
/// and the products skip that triangle (the same numbers for finite operands).
template <int M>
void noise_lin(const square_matrix<M>& l, bool lower, const square_ref<M>& g, square_matrix<M>& out,
               coefficient_workspace<M>& ws);
/// noise_att with its temporaries in `ws` (`lower` as for noise_lin).
template <int M>
void noise_att(const square_matrix<M>& l, bool lower, const square_matrix<M>& v,
               const square_ref<M>& z, double tau0, square_matrix<M>& out,
               coefficient_workspace<M>& ws);
/// noise_causal with its temporaries in `ws` (`lower` as for noise_lin).
template <int M>
void noise_causal(const square_matrix<M>& l, bool lower, const square_matrix<M>& v,
                  const square_ref<M>& z, double tau0, square_matrix<M>& out,
                  coefficient_workspace<M>& ws);

// EXTERN is `extern` or nothing, a keyword that cannot be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define NCSDE_MODELS_KERNELS(EXTERN, M)                                                        \
  EXTERN template void b_relu<M>(const square_matrix<M>&, double, double, square_matrix<M>&);  \
  EXTERN template void b_att<M>(const square_matrix<M>&, double, square_matrix<M>&,            \
                                coefficient_workspace<M>&);                                    \
  EXTERN template void b_causal<M>(const square_matrix<M>&, double, square_matrix<M>&,         \
                                   coefficient_workspace<M>&);                                 \
  EXTERN template void noise_lin<M>(const square_matrix<M>&, bool, const square_ref<M>&,       \
                                    square_matrix<M>&, coefficient_workspace<M>&);             \
  EXTERN template void noise_att<M>(const square_matrix<M>&, bool, const square_matrix<M>&,    \
                                    const square_ref<M>&, double, square_matrix<M>&,           \
                                    coefficient_workspace<M>&);                                \
  EXTERN template void noise_causal<M>(const square_matrix<M>&, bool, const square_matrix<M>&, \
                                       const square_ref<M>&, double, square_matrix<M>&,        \
                                       coefficient_workspace<M>&);                             \
  EXTERN template class basic_psd_factor<M>;
// NOLINTEND(bugprone-macro-parentheses)
NCSDE_MODELS_KERNELS(extern, 2)
NCSDE_MODELS_KERNELS(extern, 3)
NCSDE_MODELS_KERNELS(extern, 4)
NCSDE_MODELS_KERNELS(extern, 8)
NCSDE_MODELS_KERNELS(extern, Eigen::Dynamic)

}  // namespace ncsde::models
