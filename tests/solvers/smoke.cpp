// The solver layer's example (docs/solver.md), compiled and run; the README's own program is the
// ctest docs_readme_cpp.
#include <doctest/doctest.h>

#include <cmath>

#include "ncsde/ncsde.hpp"

namespace {

/// dV = −θ (V − I) dt + σ L (Ξ + Ξᵀ)/√2 Lᵀ,  L Lᵀ = V,  Ξ m×m with iid entries: k = m² normals.
struct my_sde {
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  double theta = 1.0, sigma = 0.3;
  int noise_dimension(int m) const { return m * m; }
  void drift(const ncsde::matrix& v, ncsde::matrix& out, double /*t*/) const {
    out = -theta * (v - ncsde::matrix::Identity(v.rows(), v.cols()));
  }
  void diffusion(const ncsde::matrix& v, const ncsde::vector& xi, ncsde::matrix& out,
                 double) const {
    const Eigen::Index m = v.rows();
    const ncsde::matrix l = v.llt().matrixL();
    const ncsde::matrix g = Eigen::Map<const ncsde::matrix>(xi.data(), m, m);
    out = sigma * l * ((g + g.transpose()) / std::sqrt(2.0)) * l.transpose();
  }
};
static_assert(ncsde::Sde<my_sde>);

}  // namespace

TEST_CASE("the solver example: ensemble of a matrix mean-reverting SDE") {
  ncsde::matrix v0(2, 2);
  v0 << 2.0, 0.5, 0.5, 1.0;
  ncsde::problem<my_sde> prob{my_sde{}, v0, /*T=*/1.0};
  ncsde::integrate_options io;
  io.dt = 1e-2;
  ncsde::ensemble_options eo;
  eo.paths = 4000;
  eo.seed = 3;
  eo.functionals = {ncsde::correlation_functional(0, 1)};
  const ncsde::ensemble_result r = ncsde::run_ensemble(ncsde::euler_maruyama<>{}, prob, io, eo);
  CHECK(r.completed == 4000);
  // The noise has mean zero, so EM's mean solves the drift's recursion exactly:
  // E[V_n] − I = (1 − θ dt)^n (V0 − I). 5 standard errors of the mean per entry.
  const double decay = std::pow(1.0 - 1e-2, 100);
  const ncsde::matrix expected =
      ncsde::matrix::Identity(2, 2) + decay * (v0 - ncsde::matrix::Identity(2, 2));
  const ncsde::vector se = r.terminal.standard_error();
  CHECK(std::abs(r.terminal.mean()(0) - expected(0, 0)) <= 5 * se(0));
  CHECK(std::abs(r.terminal.mean()(1) - expected(0, 1)) <= 5 * se(1));
  CHECK(std::abs(r.terminal.mean()(2) - expected(1, 1)) <= 5 * se(2));
  REQUIRE(r.functionals.size() == 1);
  CHECK(r.functionals[0].name == "rho12");
  CHECK(ncsde::summary_table(r).find("rho12") != std::string::npos);
}
