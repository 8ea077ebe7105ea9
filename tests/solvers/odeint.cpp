#include "ncsde/odeint.hpp"

#include <doctest/doctest.h>
#include <unsupported/Eigen/MatrixFunctions>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "ncsde/statistics.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"
#include "ncsde/steppers/milstein.hpp"

namespace odeint = boost::numeric::odeint;
using ncsde::matrix;
using ncsde::vector;

namespace {

/// dV = (1 + c t)(A V + V Aᵀ) dt + σ (Ξ V + V Ξᵀ), Ξ the m×m matrix of the k = m² noise inputs.
/// With c = 0 the deterministic limit is V(t) = e^{A(t−t0)} V0 e^{Aᵀ(t−t0)}.
struct linear_sde {
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  matrix a;
  double c = 0.0;
  double sigma = 0.3;

  int noise_dimension(int m) const { return m * m; }
  void drift(const matrix& v, matrix& out, double t) const {
    out = (1 + c * t) * (a * v + v * a.transpose());
  }
  void diffusion(const matrix& v, const vector& xi, matrix& out, double) const {
    const Eigen::Index m = v.rows();
    const Eigen::Map<const matrix> z(xi.data(), m, m);
    out = sigma * (z * v + v * z.transpose());
  }
};
static_assert(ncsde::Sde<linear_sde>);

/// Scalar Riccati dv = v² dt (no noise): v(t) = v0 / (1 − v0 t), blowing up at t = 1/v0.
struct riccati_sde {
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  int noise_dimension(int) const { return 1; }
  void drift(const matrix& v, matrix& out, double) const { out = v.cwiseProduct(v); }
  void diffusion(const matrix& v, const vector&, matrix& out, double) const {
    out.setZero(v.rows(), v.cols());
  }
};

/// A drift that is NaN wherever V^{11} > 2 (a defect at a finite state).
struct nan_drift_sde {
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  int noise_dimension(int) const { return 1; }
  void drift(const matrix& v, matrix& out, double) const {
    out = matrix::Constant(v.rows(), v.cols(),
                           v(0, 0) > 2 ? std::numeric_limits<double>::quiet_NaN() : 1.0);
  }
  void diffusion(const matrix& v, const vector&, matrix& out, double) const {
    out.setZero(v.rows(), v.cols());
  }
};

matrix test_a() {
  matrix a(3, 3);
  a << -0.5, 0.3, 0.1,  //
      0.2, -0.4, 0.25,  //
      -0.1, 0.15, -0.3;
  return a;
}

matrix test_v0() {
  matrix v0(3, 3);
  v0 << 1.0, 0.3, -0.2,  //
      0.3, 0.8, 0.1,     //
      -0.2, 0.1, 1.2;
  return v0;
}

matrix exact_linear(const matrix& a, const matrix& v0, double t) {
  const matrix e = (a * t).exp();
  return e * v0 * e.transpose();
}

double max_abs(const matrix& x) { return x.cwiseAbs().maxCoeff(); }

bool bit_equal(const matrix& x, const matrix& y) {
  return x.rows() == y.rows() && x.cols() == y.cols() && (x.array() == y.array()).all();
}

struct recorded {
  std::vector<double> t;
  std::vector<matrix> v;
};

}  // namespace

TEST_CASE("odeint: the odeint types and the adapter's stepper concept") {
  using adapter = ncsde::odeint_stepper<ncsde::euler_maruyama<>, linear_sde>;
  static_assert(std::is_same_v<adapter::stepper_category, odeint::stepper_tag>);
  static_assert(std::is_same_v<adapter::state_type, matrix>);
  static_assert(std::is_same_v<adapter::deriv_type, matrix>);
  static_assert(std::is_same_v<adapter::time_type, double>);
  static_assert(std::is_same_v<adapter::value_type, double>);
  static_assert(adapter::order() == 0.5);  // linear_sde declares no noise class: general
  static_assert(adapter::strong_order(ncsde::noise_class::additive) == 1.0);
  static_assert(adapter::weak_order(ncsde::noise_class::general) == 1.0);
  static_assert(ncsde::odeint_stepper<ncsde::milstein<>, linear_sde>::order() == 1.0);
  // The adapter cannot bind a temporary noise source, nor drift_system a temporary SDE.
  static_assert(!std::is_constructible_v<adapter, ncsde::stream_brownian&&, double, double>);
  static_assert(std::is_constructible_v<adapter, ncsde::stream_brownian&, double, double>);
  static_assert(!std::is_constructible_v<ncsde::drift_system<linear_sde>, linear_sde&&>);

  // vector_space_norm_inf is max |V^{ab}|.
  matrix x(2, 2);
  x << 1.0, -3.5, 2.0, 0.5;
  CHECK(odeint::vector_space_algebra::norm_inf(x) == 3.5);
}

TEST_CASE("odeint: dopri5 solves dV = (A V + V A^T) dt within the tolerance, observers on time") {
  const linear_sde sde{test_a(), 0.0, 0.3};
  const double t0 = 0.25, t_end = 2.25;
  const ncsde::problem<linear_sde> prob{sde, test_v0(), t_end, t0};

  for (const double tol : {1e-6, 1e-9}) {
    CAPTURE(tol);
    ncsde::deterministic_options opt;
    opt.method = ncsde::ode_method::dopri5;
    opt.abs_tol = tol;
    opt.rel_tol = tol;
    opt.dt = 0.1;
    recorded rec;
    const auto r = ncsde::solve_deterministic(prob, opt, [&](const matrix& v, double t) {
      rec.t.push_back(t);
      rec.v.push_back(v);
    });
    REQUIRE(r.status == ncsde::path_status::completed);
    CHECK(r.t_stop == t_end);
    REQUIRE(r.steps >= 1);

    // Observers: at t0 with V0 itself, after every accepted step at strictly increasing times, and
    // at T exactly with the returned state.
    REQUIRE(rec.t.size() == static_cast<std::size_t>(r.steps) + 1);
    CHECK(rec.t.front() == t0);
    CHECK(bit_equal(rec.v.front(), prob.v0));
    CHECK(rec.t.back() == t_end);
    CHECK(bit_equal(rec.v.back(), r.v));
    double h_max = 0, x_max = 0, d_max = 0;
    matrix b;
    for (std::size_t i = 0; i < rec.t.size(); ++i) {
      if (i > 0) {
        CHECK(rec.t[i] > rec.t[i - 1]);
        h_max = std::max(h_max, rec.t[i] - rec.t[i - 1]);
      }
      sde.drift(rec.v[i], b, rec.t[i]);
      x_max = std::max(x_max, max_abs(rec.v[i]));
      d_max = std::max(d_max, max_abs(b));
    }

    // Each accepted step keeps its local error estimate, entry by entry, below
    //   ε_loc = abs_tol + rel_tol (|V| + h |b(V)|) ≤ abs_tol + rel_tol (x_max + h_max d_max)
    // (odeint's rel_error with a_x = a_dxdt = 1). The flow V ↦ A V + V Aᵀ has norm ≤ 2‖A‖_∞ in the
    // max-entry norm, so a local error grows by at most e^{2‖A‖_∞ (T − t)} ≤ e^{2‖A‖_∞ (T − t0)} up
    // to T; summing over the accepted steps: |V_n − V(t_n)| ≤ steps · e^{2‖A‖_∞ (T − t0)} · ε_loc.
    // Since dopri5 propagates the 5th-order solution and estimates with the 4th-order one, this
    // bound is conservative; it fails when the observed state is not the solution at the observed
    // time.
    const double a_norm = sde.a.cwiseAbs().rowwise().sum().maxCoeff();
    const double eps_loc = tol + tol * (x_max + h_max * d_max);
    const double bound =
        static_cast<double>(r.steps) * std::exp(2 * a_norm * (t_end - t0)) * eps_loc;
    double worst = 0;
    for (std::size_t i = 0; i < rec.t.size(); ++i)
      worst = std::max(worst, max_abs(rec.v[i] - exact_linear(sde.a, prob.v0, rec.t[i] - t0)));
    CAPTURE(worst);
    CAPTURE(bound);
    CHECK(worst <= bound);
    // The observers are not all at t0's state: the solution moves by O(1) over [t0, T].
    CHECK(max_abs(r.v - prob.v0) > 0.1);
  }
}

TEST_CASE("odeint: rk4 on integrate()'s grid, observed at t0 + i dt and T, measured order 4") {
  const linear_sde sde{test_a(), 0.0, 0.3};
  const double t0 = 0.0, t_end = 1.0;
  const ncsde::problem<linear_sde> prob{sde, test_v0(), t_end, t0};
  const matrix exact = exact_linear(sde.a, prob.v0, t_end - t0);

  SUBCASE("observer times are the grid, the last step shorter when dt does not divide T - t0") {
    ncsde::deterministic_options opt;
    opt.method = ncsde::ode_method::rk4;
    opt.dt = 0.03;  // 33 steps of 0.03 and one of 0.01
    recorded rec;
    const auto r = ncsde::solve_deterministic(prob, opt, [&](const matrix& v, double t) {
      rec.t.push_back(t);
      rec.v.push_back(v);
    });
    const ncsde::step_grid grid(t0, t_end, opt.dt);
    REQUIRE(grid.steps == 34);
    CHECK(r.steps == 34);
    REQUIRE(rec.t.size() == 35);
    for (long long i = 0; i <= grid.steps; ++i)
      CHECK(rec.t[static_cast<std::size_t>(i)] == grid.time(i));
    CHECK(rec.t.back() == t_end);
    CHECK(bit_equal(rec.v.back(), r.v));
  }

  SUBCASE("error slope 4 in log dt") {
    // Global error e(dt) = C dt⁴ (1 + O(dt ‖2A‖)); over dt = 0.2 … 0.025, dt ‖2A‖_∞ ≤ 0.34, so the
    // fitted slope deviates from 4 by a few tenths at most; round-off (~1e-15) is far below the
    // smallest error (~1e-9). Band: 4 ± 0.3.
    std::vector<double> log_dt, log_err;
    for (const double dt : {0.2, 0.1, 0.05, 0.025}) {
      ncsde::deterministic_options opt;
      opt.method = ncsde::ode_method::rk4;
      opt.dt = dt;
      const auto r = ncsde::solve_deterministic(prob, opt);
      log_dt.push_back(std::log(dt));
      log_err.push_back(std::log(max_abs(r.v - exact)));
    }
    const ncsde::linear_fit fit = ncsde::fit_line(log_dt, log_err);
    CAPTURE(fit.slope);
    CHECK(std::abs(fit.slope - 4.0) <= 0.3);
  }
}

TEST_CASE("odeint: drift_system runs on odeint's own integrate functions and dense output") {
  const linear_sde sde{test_a(), 0.0, 0.3};
  const matrix v0 = test_v0();
  const matrix exact = exact_linear(sde.a, v0, 1.0);

  // integrate_const with the fixed-step rk4: 100 steps of 0.01; RK4's global error at this step is
  // C·1e-8 with C = O(‖2A‖⁵/5!·T) < 1: 1e-8 bounds it.
  matrix v = v0;
  int calls = 0;
  const std::size_t steps =
      odeint::integrate_const(ncsde::odeint_rk4(), ncsde::drift_system(sde), v, 0.0, 1.0, 0.01,
                              [&](const matrix&, double) { ++calls; });
  CHECK(steps == 100);
  CHECK(calls == 101);
  CHECK(max_abs(v - exact) <= 1e-8);

  // Dense output dopri5 observed at fixed times (interpolated); tolerance 1e-10, with the bound of
  // the adaptive test above (≤ 100 steps · e^{2‖A‖∞·1} ≈ 6.7 · ε_loc ≈ 2e-10) rounded up to 1e-7.
  v = v0;
  std::vector<double> times{0.0, 0.3, 0.7, 1.0};
  std::vector<double> seen;
  double worst = 0;
  odeint::integrate_times(odeint::make_dense_output(1e-10, 1e-10, ncsde::odeint_dopri5()),
                          ncsde::drift_system(sde), v, times.begin(), times.end(), 0.1,
                          [&](const matrix& x, double t) {
                            seen.push_back(t);
                            worst = std::max(worst, max_abs(x - exact_linear(sde.a, v0, t)));
                          });
  CHECK(seen == times);
  CHECK(worst <= 1e-7);

  // A non-finite drift at a finite state is reported, not integrated.
  const nan_drift_sde bad;
  matrix w = matrix::Constant(1, 1, 1.0);
  CHECK_THROWS_WITH_AS(
      odeint::integrate_const(ncsde::odeint_rk4(), ncsde::drift_system(bad), w, 0.0, 3.0, 0.5),
      doctest::Contains("drift_system: the drift returned a non-finite value"),
      ncsde::evaluation_error);
}

TEST_CASE("odeint: solve_deterministic reports blow-up as data and validates its input") {
  SUBCASE("Riccati dv = v^2 dt blows up at t = 1") {
    const ncsde::problem<riccati_sde> prob{riccati_sde{}, matrix::Constant(1, 1, 1.0), 2.0, 0.0};
    ncsde::deterministic_options opt;
    opt.abs_tol = opt.rel_tol = 1e-10;
    opt.blowup_threshold = 1e6;
    recorded rec;
    const auto r = ncsde::solve_deterministic(prob, opt, [&](const matrix& v, double t) {
      rec.t.push_back(t);
      rec.v.push_back(v);
    });
    CHECK(r.status == ncsde::path_status::blown_up);
    // v(t) = 1/(1 − t) exceeds 1e6 for t > 1 − 1e-6. The controlled steps track v to relative
    // 1e-10·steps, so the first accepted state beyond 1e6 is at t ≥ 1 − 1e-6 (up to that tiny
    // relative error) and, the solution being finite only on [0, 1), before t = 1.
    CAPTURE(r.t_stop);
    CHECK(r.t_stop >= 1 - 1.001e-6);
    CHECK(r.t_stop < 1.0);
    CHECK(r.v(0, 0) > 1e6);
    // The observer never saw the blown-up state; every state it saw is within the threshold.
    REQUIRE(!rec.v.empty());
    CHECK(rec.t.back() < r.t_stop);
    for (const matrix& v : rec.v) CHECK(v(0, 0) <= 1e6);
    CHECK(r.steps == static_cast<long long>(rec.t.size()));  // the blown-up step counts as a step
  }

  SUBCASE("options and V0 are checked, with the value in the message") {
    const ncsde::problem<linear_sde> prob{linear_sde{test_a(), 0.0, 0.3}, test_v0(), 1.0, 0.0};
    ncsde::deterministic_options opt;
    opt.rel_tol = -1;
    CHECK_THROWS_WITH_AS(ncsde::solve_deterministic(prob, opt),
                         "solve_deterministic: rel_tol must be >= 0 and finite (got -1)",
                         ncsde::invalid_argument);
    opt = {};
    opt.abs_tol = 0;
    opt.rel_tol = 0;
    CHECK_THROWS_WITH_AS(ncsde::solve_deterministic(prob, opt),
                         "solve_deterministic: abs_tol + rel_tol must be > 0 (got 0)",
                         ncsde::invalid_argument);
    opt = {};
    opt.dt = 0;
    CHECK_THROWS_WITH_AS(ncsde::solve_deterministic(prob, opt),
                         "solve_deterministic: dt must be > 0 and finite (got 0)",
                         ncsde::invalid_argument);
    ncsde::problem<linear_sde> bad = prob;
    bad.v0(0, 1) = 0.5;  // not symmetric
    CHECK_THROWS_WITH_AS(ncsde::solve_deterministic(bad, ncsde::deterministic_options{}),
                         doctest::Contains("solve_deterministic: V0 is not symmetric"),
                         ncsde::invalid_argument);
  }

  SUBCASE("a non-finite drift at a state within the threshold is an evaluation error") {
    const ncsde::problem<nan_drift_sde> prob{nan_drift_sde{}, matrix::Constant(1, 1, 1.0), 3.0,
                                             0.0};
    for (const auto method : {ncsde::ode_method::rk4, ncsde::ode_method::dopri5}) {
      ncsde::deterministic_options opt;
      opt.method = method;
      CHECK_THROWS_WITH_AS(
          ncsde::solve_deterministic(prob, opt),
          doctest::Contains("solve_deterministic: the drift returned a non-finite value"),
          ncsde::evaluation_error);
    }
  }
}

namespace {

/// Runs integrate() and the odeint adapter from the same (seed, path) and records both
/// observations.
template <class Stepper>
std::pair<recorded, recorded> both_paths(const ncsde::problem<linear_sde>& prob, double dt,
                                         std::uint64_t seed, std::uint64_t path, bool adaptive) {
  recorded ours, theirs;
  ncsde::integrate_options io;
  io.dt = dt;
  io.policy = ncsde::pd_policy::count;
  Stepper stepper;
  const ncsde::path_result r =
      ncsde::integrate(stepper, prob, io, seed, path, [&](const matrix& v, double t) {
        ours.t.push_back(t);
        ours.v.push_back(v);
      });
  REQUIRE(r.status == ncsde::path_status::completed);

  const int k = prob.sde.noise_dimension(static_cast<int>(prob.v0.rows()));
  ncsde::stream_brownian source(ncsde::random_stream(seed, path), k);
  ncsde::odeint_stepper<Stepper, linear_sde> adapter(source, prob.t0, dt);
  matrix v = prob.v0;
  auto obs = [&](const matrix& x, double t) {
    theirs.t.push_back(t);
    theirs.v.push_back(x);
  };
  if (adaptive)
    odeint::integrate_adaptive(adapter, prob.sde, v, prob.t0, prob.t_end, dt, obs);
  else
    odeint::integrate_const(adapter, prob.sde, v, prob.t0, prob.t_end, dt, obs);
  CHECK(bit_equal(v, r.v));
  return {ours, theirs};
}

void check_same_path(const recorded& ours, const recorded& theirs, std::size_t expected_points) {
  REQUIRE(ours.t.size() == expected_points);
  REQUIRE(theirs.t.size() == expected_points);
  std::size_t time_mismatches = 0, state_mismatches = 0;
  for (std::size_t i = 0; i < expected_points; ++i) {
    if (ours.t[i] != theirs.t[i]) ++time_mismatches;
    if (!bit_equal(ours.v[i], theirs.v[i])) ++state_mismatches;
  }
  CHECK(time_mismatches == 0);
  CHECK(state_mismatches == 0);
}

}  // namespace

TEST_CASE_TEMPLATE("odeint: integrate_const(adapter) reproduces integrate() bit for bit", Stepper,
                   ncsde::euler_maruyama<>, ncsde::milstein<>, ncsde::milstein_commutative<>) {
  // A time-dependent drift (c = 0.5) so that the step times matter, multiplicative non-commutative
  // noise so that Milstein's iterated integrals matter; V0 exactly symmetric, as integrate() makes
  // it.
  const double t0 = 0.5, dt = 0.01;
  ncsde::problem<linear_sde> prob{linear_sde{test_a(), 0.5, 0.3}, test_v0(), 0.0, t0};

  SUBCASE("dt divides T - t0: integrate_const") {
    prob.t_end = t0 + 100 * dt;  // so that odeint's last time t0 + 100·dt is T bit for bit
    const auto [ours, theirs] = both_paths<Stepper>(prob, dt, 2024, 5, false);
    check_same_path(ours, theirs, 101);
  }
  SUBCASE("dt does not divide T - t0: integrate_adaptive ends with the same short step") {
    prob.t_end = t0 + 100.5 * dt;
    const auto [ours, theirs] = both_paths<Stepper>(prob, dt, 2024, 5, true);
    check_same_path(ours, theirs, 102);
    CHECK(theirs.t.back() == prob.t_end);
  }
  SUBCASE("the path is random: another path index gives another state") {
    prob.t_end = t0 + 100 * dt;
    const auto [a, a_odeint] = both_paths<Stepper>(prob, dt, 2024, 5, false);
    const auto [b, b_odeint] = both_paths<Stepper>(prob, dt, 2024, 6, false);
    CHECK(max_abs(a.v.back() - b.v.back()) > 1e-3);
    CHECK(max_abs(a_odeint.v.back() - b_odeint.v.back()) > 1e-3);
  }
}

TEST_CASE("odeint: the adapter checks its grid, with the value in the message") {
  const linear_sde sde{test_a(), 0.0, 0.3};
  ncsde::stream_brownian source(ncsde::random_stream(1, 0), 9);
  using adapter = ncsde::odeint_stepper<ncsde::euler_maruyama<>, linear_sde>;
  CHECK_THROWS_WITH_AS(adapter(source, 0.0, 0.0),
                       "odeint_stepper: dt must be > 0 and finite (got 0)",
                       ncsde::invalid_argument);
  adapter st(source, 0.0, 0.1);
  matrix v = test_v0();
  CHECK_THROWS_WITH_AS(
      st.do_step(sde, v, 0.05, 0.1),
      doctest::Contains(
          "odeint_stepper: t must be a grid time t0 + n·dt (t0 = 0, dt = 0.1) (got 0.05)"),
      ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(st.do_step(sde, v, 0.2, 0.2),
                       "odeint_stepper: h must be in (0, dt] (dt = 0.1) (got 0.2)",
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(st.do_step(sde, v, -1.0, 0.1),
                       doctest::Contains("odeint_stepper: t must be in [t0"),
                       ncsde::invalid_argument);
  // A state untouched by the refused calls.
  CHECK(bit_equal(v, test_v0()));

  const nan_drift_sde bad;
  ncsde::stream_brownian one(ncsde::random_stream(1, 0), 1);
  ncsde::odeint_stepper<ncsde::euler_maruyama<>, nan_drift_sde> bad_step(one, 0.0, 0.1);
  matrix w = matrix::Constant(1, 1, 3.0);
  CHECK_THROWS_WITH_AS(
      bad_step.do_step(bad, w, 0.3, 0.1),
      "odeint_stepper: the drift returned a non-finite value at step 3, t = 0.3 (max |V| = 3)",
      ncsde::evaluation_error);
}
