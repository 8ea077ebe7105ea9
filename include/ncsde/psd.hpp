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

#include <limits>

#include "ncsde/concepts.hpp"
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
    if (!v.allFinite()) return {psd_status::outside, std::numeric_limits<double>::quiet_NaN()};
    m_llt.compute(v);
    if (m_llt.info() == Eigen::Success)
      return {psd_status::positive_definite, std::numeric_limits<double>::quiet_NaN()};
    m_eigen.compute(v, Eigen::EigenvaluesOnly);
    const double lmin = m_eigen.eigenvalues()(0);
    // !(lmin >= -tol), not lmin < -tol: a NaN eigenvalue is "outside", never accepted.
    const psd_status status =
        !(lmin >= -psd_round_off(v)) ? psd_status::outside : psd_status::boundary;
    return {status, lmin};
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
  Eigen::LLT<State> m_llt;
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
