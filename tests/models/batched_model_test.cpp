// The batched form of the covariance SDEs (covariance_sde::drift_lanes, diffusion_lanes; the lane
// kernels of models/lane_kernels.hpp): every architecture's lane coefficients against the per-path
// ones on the state type the engine steps (square_matrix<m> for m ∈ fixed_sizes, ncsde::matrix
// otherwise), including lanes on the cone's boundary (the eigen-factor fallback), and batched
// ensembles against the unbatched ones.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ncsde/ensemble.hpp"
#include "ncsde/lanes.hpp"
#include "ncsde/models/coefficients.hpp"
#include "ncsde/models/lane_kernels.hpp"
#include "ncsde/models/shaped.hpp"
#include "ncsde/random.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"
#include "support/ensemble_compare.hpp"
#include "support/model_cases.hpp"
#include "support/random_matrices.hpp"

namespace {

using ncsde::batch_width;
using ncsde::lane_block;
using ncsde::matrix;
using ncsde::square_matrix;
using ncsde::vector;
namespace models = ncsde::models;

using support::coefficient_ulps;
using support::make_sde;
using support::model_case;
using support::model_cases;
using support::ulps;

/// The run both ensembles of a comparison make: 40 paths (five lane groups), 2 threads, records
/// kept; `batched` sets ensemble_options::batched.
ncsde::ensemble_options ensemble(bool batched) {
  ncsde::ensemble_options eo;
  eo.paths = 40;
  eo.seed = 3;
  eo.threads = 2;
  eo.keep_paths = true;
  eo.batched = batched;
  eo.progress = ncsde::progress_mode::off;
  return eo;
}

/// Lane l of a block as an m×m matrix, and back.
matrix lane_matrix(const lane_block& x, int l, int m) {
  matrix v(m, m);
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a) v(a, b) = x(l, a + b * m);
  return v;
}
void set_lane(lane_block& x, int l, const matrix& v) {
  const int m = static_cast<int>(v.rows());
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a) x(l, a + b * m) = v(a, b);
}

/// The per-path drift and noise at v on the state type the engine steps for this m.
template <int M>
std::pair<matrix, matrix> per_path_on(const models::covariance_sde& sde, const matrix& v,
                                      const vector& xi) {
  square_matrix<M> x = v, drift, noise;
  sde.drift(x, drift, 0.0);
  sde.diffusion(x, xi, noise, 0.0);
  return {matrix(drift), matrix(noise)};
}
std::pair<matrix, matrix> per_path(const models::covariance_sde& sde, const matrix& v,
                                   const vector& xi) {
  switch (v.rows()) {
    case 2:
      return per_path_on<2>(sde, v, xi);
    case 3:
      return per_path_on<3>(sde, v, xi);
    case 4:
      return per_path_on<4>(sde, v, xi);
    case 8:
      return per_path_on<8>(sde, v, xi);
    default:
      return per_path_on<Eigen::Dynamic>(sde, v, xi);
  }
}

}  // namespace

TEST_CASE("lane coefficients equal the per-path ones to round-off, every model, m = 1..5, 8") {
  double worst = 0.0;
  for (const model_case& c : model_cases) {
    const models::covariance_sde sde = make_sde(c);
    for (const int m : {1, 2, 3, 4, 5, 8}) {
      const int k = sde.noise_dimension(m);
      lane_block v(batch_width, m * m), xi(batch_width, k), drift, noise;
      for (int l = 0; l < batch_width; ++l) {
        matrix x = support::random_spd<matrix>(m, 40 + l, 0.2);
        // Lane 3: a singular V (rank m − 1), where the factor is the eigen-factor; lane 5: a V
        // with a negative eigenvalue (a count-policy state outside the cone).
        if (l == 3 || l == 5) {
          vector lambda = vector::LinSpaced(m, l == 3 ? 0.0 : -0.05, 2.0);
          x = m > 1 ? support::with_eigenvalues(lambda, 7 + l) : matrix::Constant(1, 1, lambda(0));
        }
        set_lane(v, l, x);
        vector z(k);
        ncsde::random_stream(l, 9).normals(ncsde::random_domain::user, 0, 0, z);
        xi.row(l) = z.transpose();
      }
      sde.drift_lanes(v, drift, 0.0);
      sde.diffusion_lanes(v, xi, noise, 0.0);
      REQUIRE(drift.cols() == m * m);
      REQUIRE(noise.cols() == m * m);
      for (int l = 0; l < batch_width; ++l) {
        const auto [d, n] = per_path(sde, lane_matrix(v, l, m), xi.row(l).transpose());
        const double dd = ulps(lane_matrix(drift, l, m), d);
        const double dn = ulps(lane_matrix(noise, l, m), n);
        INFO(c.name, ", m = ", m, ", lane ", l, ": drift ", dd, " ulps, noise ", dn, " ulps");
        CHECK(dd <= coefficient_ulps);
        // The eigen-factor lanes go through the per-path factor itself: the same L.
        CHECK(dn <= coefficient_ulps);
        if (c.arch == models::architecture::mlp) CHECK(lane_matrix(drift, l, m) == d);
        worst = std::max({worst, dd, dn});
      }
    }
  }
  MESSAGE("largest lane vs per-path coefficient distance: ", worst, " ulps (normwise)");
}

TEST_CASE("b_relu_lanes is b_relu bit for bit on every target, also at |ρ| = 1 and V^{aa} = 0") {
  const int m = 4;
  lane_block v(batch_width, m * m), out;
  for (int l = 0; l < batch_width; ++l) {
    matrix x = support::random_spd<matrix>(m, 70 + l, 0.1);
    if (l == 1) x.row(2).setZero(), x.col(2).setZero();    // V^{22} = 0: norm 0 on row 2
    if (l == 2) x.row(1) = x.row(0), x.col(1) = x.col(0);  // ρ^{01} = 1
    set_lane(v, l, x);
  }
  for (const std::string& target : ncsde::detail::lane_targets()) {
    const ncsde::detail::lane_target_scope scope(target);
    models::b_relu_lanes(v, m, 0.3, -1.7, out);
    for (int l = 0; l < batch_width; ++l) {
      matrix expected;
      models::b_relu(lane_matrix(v, l, m), 0.3, -1.7, expected);
      CAPTURE(target);
      CAPTURE(l);
      CHECK(lane_matrix(out, l, m) == expected);
    }
  }
}

TEST_CASE("batched ensembles of every model agree with the unbatched paths (m = 3, 4, 5)") {
  // 40 paths (five lane groups), 100 steps of dt = 0.002 in a regime where the paths stay inside
  // the cone (γ² = 0.3, τ₀ = 1.5, λ_min(V0) ≥ 1.5; checked: no cone exit): the coefficients' round-off (≤ 64 ulps
  // per step) adds up to ≲ 100·64·ε ≈ 1.4e-12 relative; 1e-11 leaves room for the flow's growth.
  // Off the cone pathwise agreement is not to be had: the factor L of a singular or indefinite V
  // (Cholesky with a round-off pivot, or the eigen-factor, whose vectors' signs round-off decides)
  // is discontinuous there, so two summation orders may give different paths of the same law.
  const ncsde::euler_maruyama<> em;
  ncsde::integrate_options io;
  io.dt = 0.002;
  io.save_times = {0.1};
  const ncsde::ensemble_options eo = ensemble(false), eb = ensemble(true);
  double worst = 0.0;
  for (const model_case& c : model_cases) {
    for (const int m : {3, 4, 5}) {
      const std::string name = c.name;
      CAPTURE(name);
      CAPTURE(m);
      const matrix v0 = support::random_spd<matrix>(m, 12, 1.5);
      const ncsde::problem<models::covariance_sde> prob{make_sde(c, 0.3, 1.5), v0, 0.2};
      const ncsde::ensemble_result a = ncsde::run_ensemble(em, prob, io, eo);
      const ncsde::ensemble_result b = ncsde::run_ensemble(em, prob, io, eb);
      REQUIRE(a.pd.violations == 0);
      const double d = ncsde::test::largest_relative_difference(a, b);
      CHECK(d < 1e-11);
      CHECK(a.completed == b.completed);
      CHECK(b.pd.violations == 0);
      worst = std::max(worst, d);
    }
  }
  MESSAGE("largest batched vs per-path distance over the ensembles: ", worst);
}

TEST_CASE("batched ensembles off the cone (count): the same cone exits and blow-ups, m = 3") {
  // γ² = 0.6, τ₀ = 0.8: the attention models' paths leave the cone and some blow up. Up to the
  // first exit the paths agree to round-off, and with m = 3 (a fixed size, whose lanes take the
  // per-path Cholesky decision bit for bit) the runs count the same exits and blow-ups here.
  const ncsde::euler_maruyama<> em;
  ncsde::integrate_options io;
  io.dt = 0.01;
  io.policy = ncsde::pd_policy::count;
  const ncsde::ensemble_options eo = ensemble(false), eb = ensemble(true);
  const matrix v0 = support::random_spd<matrix>(3, 12, 0.5);
  const ncsde::problem<models::covariance_sde> prob{make_sde(model_cases[2]), v0, 0.5};
  const ncsde::ensemble_result a = ncsde::run_ensemble(em, prob, io, eo);
  const ncsde::ensemble_result b = ncsde::run_ensemble(em, prob, io, eb);
  CHECK(a.pd.violations > 0);
  CHECK(a.blown_up > 0);
  CHECK(a.pd.violations == b.pd.violations);
  CHECK(a.blown_up == b.blown_up);
  CHECK(a.explosion_times == b.explosion_times);
}

TEST_CASE("the lane kernels are the same bits on every instruction set compiled in") {
  const std::vector<std::string> targets = ncsde::detail::lane_targets();
  REQUIRE(!targets.empty());
  MESSAGE("lane kernel targets on this CPU: ", fmt::format("{}", fmt::join(targets, ", ")));
  int compared = 0;
  for (const model_case& c : model_cases) {
    const models::covariance_sde sde = make_sde(c);
    for (const int m : {1, 2, 3, 4, 5, 8}) {
      const int k = sde.noise_dimension(m);
      lane_block v(batch_width, m * m), xi(batch_width, k);
      for (int l = 0; l < batch_width; ++l) {
        matrix x = support::random_spd<matrix>(m, 140 + l, 0.2);
        // Lane 6: V with a negative eigenvalue, so that the factors are not all triangular.
        if (l == 6 && m > 1) x = support::with_eigenvalues(vector::LinSpaced(m, -0.05, 2.0), 17);
        set_lane(v, l, x);
        vector z(k);
        ncsde::random_stream(l, 19).normals(ncsde::random_domain::user, 0, 0, z);
        xi.row(l) = z.transpose();
      }
      lane_block drift, noise;
      sde.drift_lanes(v, drift, 0.0);
      sde.diffusion_lanes(v, xi, noise, 0.0);
      REQUIRE(drift.allFinite());
      REQUIRE(noise.allFinite());
      for (const std::string& target : targets) {
        const ncsde::detail::lane_target_scope scope(target);
        lane_block d, n;
        sde.drift_lanes(v, d, 0.0);
        sde.diffusion_lanes(v, xi, n, 0.0);
        INFO(c.name, ", m = ", m, ", target ", target);
        CHECK((d == drift).all());
        CHECK((n == noise).all());
        ++compared;
      }
    }
  }
  CHECK(compared >= static_cast<int>(std::size(model_cases)) * 6);
  CHECK_THROWS_WITH_AS(ncsde::detail::lane_target_scope("PDP-11"),
                       doctest::Contains("target must be one of"), ncsde::invalid_argument);
}
