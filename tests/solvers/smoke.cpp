#include <doctest/doctest.h>

#include "ncsde/ensemble.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"
#include "ncsde/steppers/milstein.hpp"

namespace {
struct scalar_gbm {
  double mu = 0.05, sigma = 0.4;
  int noise_dimension(int) const { return 1; }
  void drift(const ncsde::matrix& v, ncsde::matrix& out, double) const { out = mu * v; }
  void diffusion(const ncsde::matrix& v, const ncsde::vector& xi, ncsde::matrix& out, double) const {
    out = sigma * xi(0) * v;
  }
};
}  // namespace

TEST_CASE("smoke: ensemble of scalar GBM runs") {
  ncsde::problem<scalar_gbm> prob{scalar_gbm{}, ncsde::matrix::Constant(1, 1, 1.0), 1.0};
  ncsde::integrate_options io;
  io.dt = 0.01;
  ncsde::ensemble_options eo;
  eo.paths = 2000;
  eo.seed = 3;
  eo.threads = 2;
  const auto r = ncsde::run_ensemble(ncsde::milstein<>{}, prob, io, eo);
  CHECK(r.completed == 2000);
  // E[X_1] = e^{0.05}; 5 standard errors.
  CHECK(std::abs(r.terminal.mean()(0) - std::exp(0.05)) <= 5 * r.terminal.standard_error()(0));
}
