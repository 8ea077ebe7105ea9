// The compile-time-m fast path: for m ∈ {2, 3, 4, 8} integrate() and run_ensemble() step
// square_matrix<m> states, and the models evaluate their coefficients with fixed-size kernels.
// These tests hold the fixed path against the dynamic one (same formulas; Eigen's fixed-size
// products and reductions may sum in another order, so agreement is to a few ulp, measured here),
// and check that the choice of path is automatic and keeps the ensemble's reproducibility.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "ncsde/ensemble.hpp"
#include "ncsde/integrate.hpp"
#include "ncsde/models/shaped.hpp"
#include "ncsde/random.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"
#include "ncsde/steppers/milstein.hpp"
#include "support/model_cases.hpp"
#include "support/model_wrappers.hpp"
#include "support/random_matrices.hpp"

namespace {

using ncsde::matrix;
using ncsde::square_matrix;
using ncsde::vector;
namespace models = ncsde::models;

constexpr double eps = std::numeric_limits<double>::epsilon();

using support::dynamic_only;

using support::make_sde;
using support::model_case;
using support::model_cases;
using support::ulps;

template <int M>
void compare_coefficients(const model_case& c, double& worst) {
  const models::covariance_sde sde = make_sde(c);
  for (const std::uint64_t seed : {1u, 2u, 3u}) {
    const matrix v = support::random_spd<matrix>(M, seed, 0.2);
    vector xi(sde.noise_dimension(M));
    ncsde::random_stream(seed, 9).normals(ncsde::random_domain::user, 0, 0, xi);
    matrix drift_dynamic, noise_dynamic;
    sde.drift(v, drift_dynamic, 0.0);
    sde.diffusion(v, xi, noise_dynamic, 0.0);
    const square_matrix<M> vf = v;
    square_matrix<M> drift_fixed, noise_fixed;
    sde.drift(vf, drift_fixed, 0.0);
    sde.diffusion(vf, xi, noise_fixed, 0.0);
    const double d_drift = ulps(matrix(drift_fixed), drift_dynamic);
    const double d_noise = ulps(matrix(noise_fixed), noise_dynamic);
    INFO(c.name, ", m = ", M, ", seed ", seed, ": drift ", d_drift, " ulps, noise ", d_noise,
         " ulps");
    // The kernels run the same operations at either size (dense_kernels.hpp): the same bits.
    CHECK(matrix(drift_fixed) == drift_dynamic);
    CHECK(matrix(noise_fixed) == noise_dynamic);
    worst = std::max({worst, d_drift, d_noise});
  }
}

/// max |fixed − dynamic| / max |dynamic| over the final states of integrate() on both paths.
template <class Stepper>
double path_distance(const models::covariance_sde& sde, int m, long long steps) {
  const matrix v0 = support::random_spd<matrix>(m, 5, 0.3);
  ncsde::integrate_options opt;
  opt.dt = 1e-3;
  Stepper fixed_stepper, dynamic_stepper;
  const ncsde::path_result fixed = ncsde::integrate(
      fixed_stepper, ncsde::problem<models::covariance_sde>{sde, v0, 1e-3 * steps, 0.0}, opt, 21,
      4);
  const ncsde::path_result dynamic = ncsde::integrate(
      dynamic_stepper, ncsde::problem<dynamic_only>{dynamic_only{sde}, v0, 1e-3 * steps, 0.0}, opt,
      21, 4);
  REQUIRE(fixed.status == dynamic.status);
  REQUIRE(fixed.steps == dynamic.steps);
  return (fixed.v - dynamic.v).cwiseAbs().maxCoeff() / dynamic.v.cwiseAbs().maxCoeff();
}

}  // namespace

TEST_CASE("fixed-size path: chosen for m in {2, 3, 4, 8} when SDE and stepper support it") {
  using ncsde::detail::has_fixed_path;
  using em = ncsde::euler_maruyama<>;
  static_assert(has_fixed_path<2, em, models::covariance_sde>);
  static_assert(has_fixed_path<3, ncsde::milstein<>, models::covariance_sde>);
  static_assert(has_fixed_path<4, ncsde::milstein_commutative<>, models::covariance_sde>);
  static_assert(has_fixed_path<8, em, models::covariance_sde>);
  static_assert(!has_fixed_path<5, em, models::covariance_sde>);
  static_assert(!has_fixed_path<16, em, models::covariance_sde>);
  static_assert(!has_fixed_path<3, em, dynamic_only>);
  // The state type each m runs on.
  auto state_of = [](int m) {
    return ncsde::detail::visit_state_type<em, models::covariance_sde, ncsde::matrix>(
        m, m, []<class State>(std::type_identity<State>) {
          return static_cast<int>(State::RowsAtCompileTime);
        });
  };
  CHECK(state_of(2) == 2);
  CHECK(state_of(3) == 3);
  CHECK(state_of(4) == 4);
  CHECK(state_of(8) == 8);
  CHECK(state_of(1) == Eigen::Dynamic);
  CHECK(state_of(5) == Eigen::Dynamic);
  CHECK(state_of(16) == Eigen::Dynamic);
}

TEST_CASE("fixed-size coefficients are the dynamic ones bit for bit, every model, m = 2, 3, 4, 8") {
  double worst = 0.0;
  for (const model_case& c : model_cases) {
    [&]<int... Ms>(std::integer_sequence<int, Ms...>) {
      (compare_coefficients<Ms>(c, worst), ...);
    }(ncsde::fixed_sizes{});
  }
  MESSAGE("largest fixed vs dynamic coefficient distance: ", worst, " ulps (normwise)");
}

TEST_CASE("fixed-size coefficients at a singular V (eigen-factor fallback) agree too") {
  // V = Q diag(0, 1, 2, …) Qᵀ: rank m − 1, distinct eigenvalues, so the eigen-factor is unique up to
  // the signs of U's columns, which both paths fix by the same algorithm.
  double worst = 0.0;
  for (const model_case& c : model_cases) {
    const models::covariance_sde sde = make_sde(c);
    vector lambda = vector::LinSpaced(4, 0.0, 3.0);
    const matrix v = support::with_eigenvalues(lambda, 11);
    vector xi(sde.noise_dimension(4));
    ncsde::random_stream(4, 9).normals(ncsde::random_domain::user, 0, 0, xi);
    matrix dynamic_noise;
    sde.diffusion(v, xi, dynamic_noise, 0.0);
    square_matrix<4> fixed_noise;
    sde.diffusion(square_matrix<4>(v), xi, fixed_noise, 0.0);
    const double d = ulps(matrix(fixed_noise), dynamic_noise);
    INFO(c.name, ": ", d, " ulps");
    // An eigensolver's vectors carry O(m ε / gap) error (gap = 1 here) on either path: 16 m ulps.
    CHECK(d <= 16.0 * 4);
    worst = std::max(worst, d);
  }
  MESSAGE("singular V: largest fixed vs dynamic noise distance ", worst, " ulps");
}

TEST_CASE(
    "integrate: fixed-size and dynamic paths are the same bits over 200 steps (EM, Milstein)") {
  // The coefficients are the same bits at either size, and so are the schemes' operations: the
  // paths are identical.
  const double tol = 0.0;
  double worst = 0.0;
  for (const model_case& c : model_cases) {
    const models::covariance_sde sde = make_sde(c);
    for (const int m : {2, 3, 4, 8}) {
      const double em = path_distance<ncsde::euler_maruyama<>>(sde, m, 200);
      INFO(c.name, ", m = ", m, ": EM ", em);
      CHECK(em <= tol);
      worst = std::max(worst, em);
      if (m <= 4) {  // Milstein costs O(m⁵) per step; m ≤ 4 keeps the test fast
        const double mil = path_distance<ncsde::milstein<>>(sde, m, 200);
        INFO(c.name, ", m = ", m, ": Milstein ", mil);
        CHECK(mil <= tol);
        worst = std::max(worst, mil);
      }
    }
  }
  MESSAGE("largest fixed vs dynamic path distance after 200 steps: ", worst / eps, " ε (relative)");
}

TEST_CASE(
    "run_ensemble on the fixed-size path: bit-identical for 1 and 2 threads, path p = integrate") {
  models::shaped_params p;
  p.gamma2 = 0.6;
  const models::covariance_sde sde(models::architecture::transformer, p);
  const ncsde::problem<models::covariance_sde> prob{sde, support::random_spd<matrix>(4, 8, 0.3),
                                                    0.1, 0.0};
  ncsde::integrate_options iopt;
  iopt.dt = 2e-3;
  iopt.save_times = {0.05};
  ncsde::ensemble_options eopt;
  eopt.seed = 5;
  eopt.paths = 96;
  eopt.block_size = 16;
  eopt.keep_paths = true;
  eopt.progress = ncsde::progress_mode::off;
  eopt.functionals = {ncsde::correlation_functional(0, 1)};
  const ncsde::euler_maruyama<> em;
  eopt.threads = 1;
  const ncsde::ensemble_result one = ncsde::run_ensemble(em, prob, iopt, eopt);
  eopt.threads = 2;
  const ncsde::ensemble_result two = ncsde::run_ensemble(em, prob, iopt, eopt);
  CHECK(one.completed == eopt.paths);
  CHECK(one.terminal.mean() == two.terminal.mean());
  CHECK(one.saved[0].mean() == two.saved[0].mean());
  CHECK(one.functionals[0].all == two.functionals[0].all);
  for (std::size_t i = 0; i < one.records.size(); ++i)
    REQUIRE(one.records[i].packed == two.records[i].packed);
  // Path 37 is integrate() on the stream (seed, 37), both on the fixed-size path.
  ncsde::euler_maruyama<> stepper;
  const ncsde::path_result r = ncsde::integrate(stepper, prob, iopt, eopt.seed, 37);
  vector packed(ncsde::packed_size(4));
  ncsde::pack_upper(r.v, packed);
  CHECK(packed == one.records[37].packed);
}

namespace {

/// The covariance SDE on every state type, without its use_cholesky: integrate() then never hands
/// it the check's Cholesky factor, and its noise map factorises each state itself.
struct without_cholesky_hint {
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  models::covariance_sde sde;
  int noise_dimension(int m) const { return sde.noise_dimension(m); }
  template <class State>
    requires ncsde::Sde<models::covariance_sde, State>
  void drift(const State& v, State& out, double t) const {
    sde.drift(v, out, t);
  }
  template <class State>
    requires ncsde::Sde<models::covariance_sde, State>
  void diffusion(const State& v, const vector& xi, State& out, double t) const {
    sde.diffusion(v, xi, out, t);
  }
};
static_assert(!ncsde::SdeWithCholeskyHint<without_cholesky_hint>);
static_assert(ncsde::detail::has_fixed_path<4, ncsde::euler_maruyama<>, without_cholesky_hint>);

template <class Stepper, class S>
ncsde::path_result run_path(const S& sde, int m) {
  ncsde::integrate_options opt;
  opt.dt = 1e-3;
  Stepper stepper;
  return ncsde::integrate(stepper,
                          ncsde::problem<S>{sde, support::random_spd<matrix>(m, 6, 0.3), 0.15, 0.0},
                          opt, 31, 2);
}

}  // namespace

TEST_CASE(
    "the check's Cholesky factor handed to the noise map changes no bit (fixed and dynamic m)") {
  for (const model_case& c : model_cases) {
    const models::covariance_sde sde = make_sde(c);
    for (const int m : {3, 5, 8}) {
      INFO(c.name, ", m = ", m);
      const ncsde::path_result with = run_path<ncsde::euler_maruyama<>>(sde, m);
      const ncsde::path_result without =
          run_path<ncsde::euler_maruyama<>>(without_cholesky_hint{sde}, m);
      REQUIRE(with.status == ncsde::path_status::completed);
      CHECK(with.steps == without.steps);
      CHECK(with.v == without.v);
      if (m <= 3) {
        const ncsde::path_result mil = run_path<ncsde::milstein<>>(sde, m);
        const ncsde::path_result mil_without =
            run_path<ncsde::milstein<>>(without_cholesky_hint{sde}, m);
        CHECK(mil.v == mil_without.v);
      }
    }
  }
}
