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

namespace ncsde {

enum class psd_status { positive_definite, boundary, outside };

struct psd_result {
  psd_status status = psd_status::positive_definite;
  /// Smallest eigenvalue; computed only when Cholesky fails (NaN otherwise).
  double min_eigenvalue = std::numeric_limits<double>::quiet_NaN();
};

/// Round-off scale below which a negative eigenvalue of V is not a violation:
/// 16 · m · ε · max|V|, the backward error of a symmetric eigensolver with headroom 16.
double psd_round_off(const matrix& v);

/// Reusable check: holds the factorisation workspaces so that a step allocates nothing.
class psd_checker {
 public:
  psd_result check(const matrix& v);
  /// Projects V onto {λ_min ≥ floor} in the Frobenius norm: eigenvalues below floor are set to
  /// floor. Returns the smallest eigenvalue before projection.
  double project(matrix& v, double floor);

 private:
  Eigen::LLT<matrix> m_llt;
  Eigen::SelfAdjointEigenSolver<matrix> m_eigen;
  matrix m_work;
};

/// Smallest eigenvalue of a symmetric matrix.
double min_eigenvalue(const matrix& v);

/// Convenience: V projected onto {λ_min ≥ floor}.
matrix project_psd(const matrix& v, double floor = 0.0);

}  // namespace ncsde
