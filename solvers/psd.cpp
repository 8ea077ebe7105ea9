#include "ncsde/psd.hpp"

#include <cmath>

#include "ncsde/symmetric.hpp"

namespace ncsde {

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
