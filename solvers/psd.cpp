#include "ncsde/psd.hpp"

#include <cmath>

#include "ncsde/symmetric.hpp"

namespace ncsde {

double psd_round_off(const matrix& v) {
  const double scale = v.size() == 0 ? 0.0 : v.cwiseAbs().maxCoeff();
  return 16.0 * static_cast<double>(v.rows()) * std::numeric_limits<double>::epsilon() * scale;
}

psd_result psd_checker::check(const matrix& v) {
  // Cholesky does not see NaN (its pivot test x <= 0 is false for NaN), so a non-finite V would pass
  // as positive definite: classify it before factorising.
  if (!v.allFinite()) return {psd_status::outside, std::numeric_limits<double>::quiet_NaN()};
  m_llt.compute(v);
  if (m_llt.info() == Eigen::Success) return {psd_status::positive_definite, std::nan("")};
  m_eigen.compute(v, Eigen::EigenvaluesOnly);
  const double lmin = m_eigen.eigenvalues()(0);
  // !(lmin >= -tol), not lmin < -tol: a NaN eigenvalue is "outside", never accepted.
  const psd_status status = !(lmin >= -psd_round_off(v)) ? psd_status::outside : psd_status::boundary;
  return {status, lmin};
}

double psd_checker::project(matrix& v, double floor) {
  m_eigen.compute(v, Eigen::ComputeEigenvectors);
  const double lmin = m_eigen.eigenvalues()(0);
  const vector clipped = m_eigen.eigenvalues().cwiseMax(floor);
  m_work.noalias() = m_eigen.eigenvectors() * clipped.asDiagonal();
  v.noalias() = m_work * m_eigen.eigenvectors().transpose();
  // The product is symmetric only up to round-off; make it exact.
  symmetrize(v);
  return lmin;
}

double min_eigenvalue(const matrix& v) {
  Eigen::SelfAdjointEigenSolver<matrix> eig(v, Eigen::EigenvaluesOnly);
  return eig.eigenvalues()(0);
}

matrix project_psd(const matrix& v, double floor) {
  matrix out = v;
  psd_checker checker;
  checker.project(out, floor);
  return out;
}

}  // namespace ncsde
