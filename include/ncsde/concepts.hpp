#pragma once
/// The concepts the solver layer is written against.
///
/// An SDE is
///     dX = b(t, X) dt + G(t, X) dW,   W a k-dimensional standard Brownian motion,
/// on states X that are Eigen vectors (ℝᵈ) or matrices (n×m), where the *noise map* G(t, X) is a
/// linear map from ℝᵏ to the state's space: the problem never forms the covariance Σ = G Gᵀ, let alone
/// its square root; it applies G to an increment. k = noise_dimension(rows) (rows: m of an m×m state,
/// d of a vector) is chosen by the problem (e.g. 2m² for the structured noise of the neural covariance
/// SDEs). The SDE declares the space its solutions live on (state_space: euclidean by default,
/// symmetric, or the PSD cone; state_space.hpp says what the engine does on each) and, optionally,
/// the class of its noise (noise_class: what the convergence orders follow), its state type
/// (`using state_type = …`, ncsde::matrix by default) and its shape (`shape()` → {rows, cols},
/// checked against V0).
///
/// Member functions follow Boost.Odeint's System order (inputs, outputs, time last), so that
/// `drift(v, out, t)` is an odeint System and the deterministic limit dV = b dt runs on odeint's
/// ODE steppers unchanged (ncsde/odeint.hpp).
#include <Eigen/Core>

#include <concepts>
#include <string_view>
#include <utility>

namespace ncsde {

/// Dynamic-size states: a matrix (square and symmetric on symmetric and cone spaces) or a vector.
using matrix = Eigen::MatrixXd;
using vector = Eigen::VectorXd;

/// m×m matrix with m fixed at compile time; square_matrix<Eigen::Dynamic> is ncsde::matrix.
template <int M>
using square_matrix = Eigen::Matrix<double, M, M>;
/// Length-m column vector, m fixed at compile time or Eigen::Dynamic.
template <int M>
using column_vector = Eigen::Matrix<double, M, 1>;

/// The space a problem's states live on; an SDE declares it with a static member
///   static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
/// and one that declares nothing is euclidean. What each space means: state_space.hpp.
enum class state_space { euclidean, symmetric, psd_cone };

/// The space S declares (S::space), euclidean when it declares none.
template <class S>
consteval state_space declared_state_space() {
  if constexpr (requires {
                  { S::space } -> std::convertible_to<state_space>;
                })
    return S::space;
  else
    return state_space::euclidean;
}
template <class S>
inline constexpr state_space state_space_of = declared_state_space<S>();

/// The class of a problem's noise, which decides the strong orders theory predicts:
///  - general: non-commutative (L^j G_l ≠ L^l G_j for some j, l);
///  - commutative: L^j G_l = L^l G_j for all j, l (e.g. one Brownian motion, k = 1);
///  - additive: G does not depend on the state (every L^j G_l = 0), where Euler–Maruyama is the
///    Milstein scheme and has strong order 1.
/// An SDE may declare it: static constexpr ncsde::noise_class noise = ncsde::noise_class::additive.
enum class noise_class { general, commutative, additive };
/// The class S declares (S::noise), general when it declares none.
template <class S>
consteval noise_class declared_noise_class() {
  if constexpr (requires {
                  { S::noise } -> std::convertible_to<noise_class>;
                })
    return S::noise;
  else
    return noise_class::general;
}

/// The m for which integrate() and run_ensemble() step compile-time-sized states square_matrix<m>
/// (no heap storage, unrolled small kernels), provided the problem is an Sde<S, square_matrix<m>>
/// and the stepper can be rebound to that state type; every other m runs on ncsde::matrix.
/// The one list of these sizes: NCSDE_FIXED_SIZES(X) expands X(m) for each, for the places that
/// need a literal per size (explicit instantiations); fixed_sizes is the same list as a type, for
/// the places that expand a pack (visit_state_type, the models' per-size workspaces). Adding a size
/// here adds it everywhere.
#define NCSDE_FIXED_SIZES(X) X(2) X(3) X(4) X(8)
#define NCSDE_DETAIL_FIXED_SIZE_ITEM(M) , M
/// The fixed sizes m (square_matrix<m> states) as an integer sequence: 2, 3, 4, 8.
using fixed_sizes = std::integer_sequence<int NCSDE_FIXED_SIZES(NCSDE_DETAIL_FIXED_SIZE_ITEM)>;
#undef NCSDE_DETAIL_FIXED_SIZE_ITEM
/// The fixed lengths d of ncsde::vector states (column_vector<d>): 1, 2, 3, 4.
using fixed_vector_sizes = std::integer_sequence<int, 1, 2, 3, 4>;

namespace detail {
template <int M, int... Ms>
constexpr bool in_sizes(std::integer_sequence<int, Ms...>) {
  return ((M == Ms) || ...);
}
}  // namespace detail

template <int M>
inline constexpr bool is_fixed_size = detail::in_sizes<M>(fixed_sizes{});

/// f.template operator()<M>() for m = M one of fixed_sizes, f.template operator()<Eigen::Dynamic>()
/// otherwise: code written once over the size m, its loops unrolled on the fixed sizes.
template <class F>
void with_fixed_size(int m, F&& f) {
  [&]<int... Ms>(std::integer_sequence<int, Ms...>) {
    const bool fixed = ((m == Ms && (f.template operator()<Ms>(), true)) || ...);
    if (!fixed) f.template operator()<Eigen::Dynamic>();
  }(fixed_sizes{});
}

/// S is an SDE on State:
///  - s.noise_dimension(rows) → k ≥ 1, the number of standard normals one increment needs;
///  - s.drift(v, out, t): out = b(t, v) (out is sized by the caller to match v);
///  - s.diffusion(v, xi, out, t): out = G(t, v) xi for xi ∈ ℝᵏ (linear in xi; symmetric out on
///    symmetric and cone spaces).
/// A copy of S is made for every worker thread of an ensemble, so S may keep mutable workspaces.
template <class S, class State = matrix>
concept Sde = std::copy_constructible<S> &&
              requires(const S& s, const State& v, const vector& xi, State& out, double t, int m) {
                { s.noise_dimension(m) } -> std::convertible_to<int>;
                s.drift(v, out, t);
                s.diffusion(v, xi, out, t);
              };

/// S also provides G's directional derivative, used by the Milstein schemes when present:
///  s.diffusion_derivative(v, h, xi, out, t): out = d/dε [G(t, v + ε h) xi] at ε = 0.
/// Without it, Milstein uses its derivative-free (Runge–Kutta) form.
template <class S, class State = matrix>
concept SdeWithDiffusionDerivative =
    Sde<S, State> && requires(const S& s, const State& v, const State& h, const vector& xi,
                              State& out, double t) { s.diffusion_derivative(v, h, xi, out, t); };

/// S factorises V itself (e.g. for a noise map L·W·Lᵀ with L Lᵀ = V) and accepts the engine's factor:
///  s.use_cholesky(v, l): l is the Cholesky factor (lower, l lᵀ = v) of exactly v, the state the
///  next step starts from, computed by the positive-definiteness check (psd.hpp: Eigen::LLT on
///  ncsde::matrix, detail::small_cholesky on fixed sizes); S may keep it instead of factorising v
///  again (a cache keyed on v itself, so that results do not change). integrate() and
///  run_ensemble() call it after each step whose new state passed the check by Cholesky.
template <class S, class State = matrix>
concept SdeWithCholeskyHint =
    Sde<S, State> && requires(const S& s, const State& v, const State& l) { s.use_cholesky(v, l); };

/// S describes its noise by the dense covariance operator instead of a noise map:
///  s.covariance(v, sigma, t): sigma = Σ(t, v), a K×K matrix over the K = m(m+1)/2 upper-triangle
///  index pairs (a ≤ b, row-major order: (1,1), (1,2), …, (1,m), (2,2), …, (m,m)), with entries
///  Σ^{ab,cd} = Cov(dV^{ab}, dV^{cd}) / dt (no √2 weighting). dense_covariance_noise<S> turns it into an Sde.
template <class S, class State = matrix>
concept CovarianceSde = std::copy_constructible<S> &&
                        requires(const S& s, const State& v, State& out, matrix& sigma, double t) {
                          s.drift(v, out, t);
                          s.covariance(v, sigma, t);
                        };

}  // namespace ncsde
