#pragma once
/// Positive-(semi)definiteness of states: the check run after every step, and the projection onto the
/// cone used by the `project` policy.
///
/// Classification of a symmetric V (the check tries Cholesky first, O(m³/3); only when that fails does
/// it pay for a symmetric eigendecomposition):
///  - positive_definite: Cholesky succeeded;
///  - boundary: λ_min ≥ −psd_round_off(V): positive semidefinite up to round-off. Such states are in
///    the closed cone the SDEs live on (rank-deficient V, |ρ| → 1, rank collapse at long horizons);
///    they are counted but never treated as violations;
///  - outside: λ_min < −psd_round_off(V): the step left the cone; the run's pd_policy decides.
///    A V with a non-finite entry is outside too (min_eigenvalue NaN).
#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>

#include <cmath>
#include <limits>

#include "ncsde/concepts.hpp"
#include "ncsde/dense_kernels.hpp"
#include "ncsde/error.hpp"
#include "ncsde/symmetric.hpp"

namespace ncsde {

enum class psd_status { positive_definite, boundary, outside };

struct psd_result {
  psd_status status = psd_status::positive_definite;
  /// Smallest eigenvalue; computed only when Cholesky fails (NaN otherwise).
  double min_eigenvalue = std::numeric_limits<double>::quiet_NaN();
};

/// Round-off scale below which a negative eigenvalue of V is not a violation:
/// 16 · m · ε · max|V|, the backward error of a symmetric eigensolver with headroom 16.
template <class Derived>
double psd_round_off(const Eigen::MatrixBase<Derived>& v) {
  const double scale = v.size() == 0 ? 0.0 : v.cwiseAbs().maxCoeff();
  return 16.0 * static_cast<double>(v.rows()) * std::numeric_limits<double>::epsilon() * scale;
}

namespace detail {

/// Cholesky factor L (lower, L Lᵀ = V) of a compile-time-sized V by the plain column algorithm
/// (left-looking, sums in k order): the check's and the models' factorisation on fixed-size states,
/// where it is 2–3× faster than Eigen::LLT (bench: m = 4, 8). Returns false, with L unspecified,
/// when a pivot is not > 0 (or is NaN): V is then not numerically positive definite. Reads only the
/// lower triangle of V, as Eigen::LLT does; the upper triangle of L is set to 0.
template <int M>
bool small_cholesky(const square_matrix<M>& v, square_matrix<M>& l) {
  static_assert(M != Eigen::Dynamic, "small_cholesky is for compile-time sizes");
  l.setZero();
  for (int j = 0; j < M; ++j) {
    double d = v(j, j);
    for (int k = 0; k < j; ++k) d -= l(j, k) * l(j, k);
    if (!(d > 0.0)) return false;
    const double ljj = std::sqrt(d);
    l(j, j) = ljj;
    for (int i = j + 1; i < M; ++i) {
      double s = v(i, j);
      for (int k = 0; k < j; ++k) s -= l(i, k) * l(j, k);
      l(i, j) = s / ljj;
    }
  }
  return true;
}

/// The Cholesky factor L (lower, L Lᵀ = V) as the check and the models' factorisations compute it,
/// so that a factor handed from one to the other is the one the other would compute, bit for bit:
/// small_cholesky on compile-time sizes, detail::matrix_cholesky (dense_kernels.hpp: the same
/// algorithm and order, vectorised over rows on the CPU's widest instruction set) on ncsde::matrix.
/// Both are lane_cholesky's factor of the same matrix, bit for bit. Returns false, with L
/// unspecified, when V is not numerically positive definite.
template <class State>
bool cholesky_factor(const State& v, State& l) {
  if constexpr (State::RowsAtCompileTime != Eigen::Dynamic) {
    return small_cholesky(v, l);
  } else {
    const int m = static_cast<int>(v.rows());
    l.resize(m, m);
    return matrix_cholesky(v.data(), m, l.data());
  }
}

}  // namespace detail

/// Reusable check on states of type State (ncsde::matrix or a square_matrix<M>): holds the
/// factorisation workspaces, so that after the first call at a size check() allocates nothing; so
/// does project() on fixed-size states, while on ncsde::matrix Eigen's eigensolver allocates one
/// work vector per eigenvector computation (a projection is a counted, rare event).
template <class State>
class basic_psd_checker {
 public:
  /// Classifies V (see the top of this header). V must be square and symmetric.
  psd_result check(const State& v) {
    // Cholesky does not see NaN (its pivot test x <= 0 is false for NaN), so a non-finite V would
    // pass as positive definite: classify it before factorising.
    if (!detail::all_finite(v))
      return {psd_status::outside, std::numeric_limits<double>::quiet_NaN()};
    m_factored = detail::cholesky_factor(v, m_l);
    if (m_factored)
      return {psd_status::positive_definite, std::numeric_limits<double>::quiet_NaN()};
    m_eigen.compute(v, Eigen::EigenvaluesOnly);
    const double lmin = m_eigen.eigenvalues()(0);
    // !(lmin >= -tol), not lmin < -tol: a NaN eigenvalue is "outside", never accepted.
    const psd_status status =
        !(lmin >= -psd_round_off(v)) ? psd_status::outside : psd_status::boundary;
    return {status, lmin};
  }

  /// The Cholesky factor L (lower, L Lᵀ = V) of the last check()'s V (detail::cholesky_factor); valid
  /// only when that check returned positive_definite.
  const State& cholesky_factor() const {
    NCSDE_ASSERT(m_factored,
                 "psd_checker::cholesky_factor: the last check found no Cholesky factor");
    return m_l;
  }

  /// Projects V onto {λ_min ≥ floor} in the Frobenius norm: eigenvalues below floor are set to
  /// floor. Returns the smallest eigenvalue before projection.
  double project(State& v, double floor) {
    m_eigen.compute(v, Eigen::ComputeEigenvectors);
    const double lmin = m_eigen.eigenvalues()(0);
    m_clipped = m_eigen.eigenvalues().cwiseMax(floor);
    m_work.noalias() = m_eigen.eigenvectors() * m_clipped.asDiagonal();
    v.noalias() = m_work * m_eigen.eigenvectors().transpose();
    // The product is symmetric only up to round-off; make it exact.
    symmetrize(v);
    return lmin;
  }

 private:
  State m_l;
  bool m_factored = false;
  Eigen::SelfAdjointEigenSolver<State> m_eigen;
  State m_work;
  Eigen::Matrix<double, State::RowsAtCompileTime, 1> m_clipped;
};

/// The checker on dynamic-size states.
using psd_checker = basic_psd_checker<matrix>;

/// Smallest eigenvalue of a symmetric matrix.
double min_eigenvalue(const matrix& v);

/// Convenience: V projected onto {λ_min ≥ floor}.
matrix project_psd(const matrix& v, double floor = 0.0);

}  // namespace ncsde
