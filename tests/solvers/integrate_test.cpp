#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "ncsde/integrate.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"
#include "ncsde/steppers/milstein.hpp"
#include "support/random_matrices.hpp"
#include "support/simple_sdes.hpp"

namespace {

using ncsde::integrate_options;
using ncsde::matrix;
using ncsde::path_result;
using ncsde::path_status;
using ncsde::pd_policy;
using ncsde::problem;
using ncsde::step_grid;
using ncsde::vector;

constexpr double eps = std::numeric_limits<double>::epsilon();
constexpr double nan_value = std::numeric_limits<double>::quiet_NaN();

matrix scalar(double x) { return matrix::Constant(1, 1, x); }

matrix diag2(double a, double b) {
  matrix v = matrix::Zero(2, 2);
  v(0, 0) = a;
  v(1, 1) = b;
  return v;
}

/// Records every (t, V) the integrator reports.
struct recorder {
  std::vector<double>* times;
  std::vector<matrix>* states;
  void operator()(const matrix& v, double t) const {
    times->push_back(t);
    states->push_back(v);
  }
};

/// Drift and noise that are finite until t reaches `bad_from`, then NaN in the chosen coefficient.
struct fails_at_time {
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  double bad_from = 0.5;
  bool bad_drift = true;
  int noise_dimension(int) const { return 1; }
  void drift(const matrix& v, matrix& out, double t) const {
    out = matrix::Zero(v.rows(), v.cols());
    if (bad_drift && t >= bad_from) out(0, 0) = nan_value;
  }
  void diffusion(const matrix& v, const vector& xi, matrix& out, double t) const {
    out = 0.1 * xi(0) * matrix::Identity(v.rows(), v.cols());
    if (!bad_drift && t >= bad_from) out(0, 0) = nan_value;
  }
};
static_assert(ncsde::Sde<fails_at_time>);

/// An SDE that claims no noise.
struct no_noise {
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  int noise_dimension(int) const { return 0; }
  void drift(const matrix& v, matrix& out, double) const { out = -v; }
  void diffusion(const matrix& v, const vector&, matrix& out, double) const {
    out = matrix::Zero(v.rows(), v.cols());
  }
};

/// dV = huge dt + huge dW (1×1): one step overflows to +inf or lands far beyond any threshold.
/// From V0 = 1 an EM step of size 1 computes b·dt + G·dw = DBL_MAX + 1e300·ΔW, which overflows to
/// +inf when ΔW > 0 (1e300 is far above half an ulp of DBL_MAX, 2^970) and stays beyond any
/// threshold otherwise, while both coefficients stay finite (|G·dw| ≤ 1e300·8.6: Box–Muller normals
/// are bounded by √(2·53·ln 2) < 8.6), so it is the step, not a coefficient, that leaves the doubles.
struct overflowing {
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  int noise_dimension(int) const { return 1; }
  void drift(const matrix&, matrix& out, double) const {
    out = scalar(std::numeric_limits<double>::max());
  }
  void diffusion(const matrix&, const vector& xi, matrix& out, double) const {
    out = scalar(1e300 * xi(0));
  }
};

/// y_T = y_0 + σ Σ_i √h_i z_i for decoupled_exit on the grid [0, T] with steps h_i, from the path's stream.
double expected_y(double y0, double sigma, const step_grid& grid, std::uint64_t seed,
                  std::uint64_t path) {
  ncsde::stream_brownian source(ncsde::random_stream(seed, path), 1);
  double y = y0;
  for (long long i = 0; i < grid.steps; ++i) {
    ncsde::noise_increment inc;
    source.increment(static_cast<std::uint64_t>(i), grid.step_size(i), false, inc);
    y += sigma * inc.dw(0);
  }
  return y;
}

}  // namespace

TEST_CASE("pd_counters: a path without violations never erases the minimum eigenvalue") {
  // The counters of an ensemble fold path by path; a path without violations carries NaN.
  ncsde::pd_counters seen;
  seen.violations = 3;
  seen.min_eigenvalue = -0.25;
  ncsde::pd_counters none;  // no violations: min_eigenvalue is NaN
  REQUIRE(std::isnan(none.min_eigenvalue));
  ncsde::pd_counters total = seen;
  total += none;
  CHECK(total.min_eigenvalue == -0.25);
  CHECK(total.violations == 3);
  ncsde::pd_counters from_none = none;
  from_none += seen;
  CHECK(from_none.min_eigenvalue == -0.25);
  ncsde::pd_counters lower;
  lower.violations = 1;
  lower.min_eigenvalue = -0.5;
  total += lower;
  CHECK(total.min_eigenvalue == -0.5);
  total += seen;
  CHECK(total.min_eigenvalue == -0.5);
}

TEST_CASE("step_grid: t_i = t0 + i·dt, the last step lands exactly on T") {
  const step_grid a(0.0, 1.0, 0.3);
  CHECK(a.steps == 4);  // 0, 0.3, 0.6, 0.9, then a short step to 1
  for (long long i = 0; i < 4; ++i) CHECK(a.time(i) == 0.0 + static_cast<double>(i) * 0.3);
  CHECK(a.time(4) == 1.0);
  CHECK(a.step_size(3) == 1.0 - 3 * 0.3);
  // (1 − 0)/0.1 is 10 only up to round-off: the 1e-9 slack avoids a sliver step.
  const step_grid b(0.0, 1.0, 0.1);
  CHECK(b.steps == 10);
  CHECK(b.time(10) == 1.0);
  CHECK(b.time(3) ==
        3 * 0.1);  // recomputed, not accumulated (0.1 + 0.1 + 0.1 differs in the last bit)
  const step_grid c(1.0, 3.5, 0.5);
  CHECK(c.steps == 5);
  CHECK(c.time(5) == 3.5);
  const step_grid d(2.0, 2.0, 0.1);  // T == t0: no steps
  CHECK(d.steps == 0);
  CHECK(d.time(0) == 2.0);
  const step_grid e(0.0, 1.0, 1.0);  // one step, dt == T
  CHECK(e.steps == 1);
}

TEST_CASE("step_grid: bad dt, T and t0 are rejected naming the parameter and value") {
  CHECK_THROWS_WITH_AS(step_grid(0, 1, 0.0),
                       doctest::Contains("integrate: dt must be > 0 and finite (got 0)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(step_grid(0, 1, -0.5),
                       doctest::Contains("dt must be > 0 and finite (got -0.5)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(step_grid(0, 1, nan_value),
                       doctest::Contains("dt must be > 0 and finite (got nan)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(step_grid(0, 1, std::numeric_limits<double>::infinity()),
                       doctest::Contains("dt must be > 0 and finite (got inf)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(step_grid(0, 1, 2.0),
                       doctest::Contains("integrate: dt must be <= T - t0 = 1 (got 2)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(step_grid(1, 0.5, 0.1),
                       doctest::Contains("integrate: T must be >= t0 = 1 (got 0.5)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(step_grid(0, nan_value, 0.1),
                       doctest::Contains("integrate: T must be finite (got nan)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(step_grid(nan_value, 1, 0.1),
                       doctest::Contains("integrate: t0 must be finite (got nan)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(step_grid(0, 1e6, 1e-7), doctest::Contains("such that (T - t0)/dt <= 1e12"),
                       ncsde::invalid_argument);
}

TEST_CASE(
    "step_grid: save times on the grid (T included), off-grid and out-of-range ones rejected") {
  const step_grid a(0.0, 1.0, 0.25, {0.0, 0.5, 0.75, 1.0});
  CHECK(a.save_steps == std::vector<long long>{0, 2, 3, 4});
  // T is a grid time also when dt does not divide T − t0 (here 1/0.3 = 3.33: llround would say 3).
  const step_grid b(0.0, 1.0, 0.3, {0.3, 0.9, 1.0});
  CHECK(b.save_steps == std::vector<long long>{1, 3, 4});
  const step_grid c(0.0, 1.0, 0.4,
                    {0.8, 1.0});  // 2.5 steps: llround would say 3 for T, correct too
  CHECK(c.save_steps == std::vector<long long>{2, 3});
  // Grid times computed another way (0.1 + 0.1 + 0.1) are matched within the 1e-9 slack.
  const step_grid d(0.0, 1.0, 0.1, {0.1 + 0.1 + 0.1});
  CHECK(d.save_steps == std::vector<long long>{3});
  CHECK_THROWS_WITH_AS(
      step_grid(0.0, 1.0, 0.25, {0.3}),
      doctest::Contains(
          "integrate: save time must be a grid time t0 + i*dt (dt = 0.25) or T (got 0.3)"),
      ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(step_grid(0.0, 1.0, 0.3, {0.95}),
                       doctest::Contains("save time must be a grid time"), ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(step_grid(0.0, 1.0, 0.25, {1.25}),
                       doctest::Contains("integrate: save time must be in [0, 1] (got 1.25)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(step_grid(0.0, 1.0, 0.25, {-0.25}),
                       doctest::Contains("save time must be in [0, 1] (got -0.25)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(step_grid(0.0, 1.0, 0.25, {0.5, 0.25}),
                       doctest::Contains("save time must be strictly increasing (got 0.25)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(step_grid(0.0, 1.0, 0.25, {0.5, 0.5}),
                       doctest::Contains("save time must be strictly increasing (got 0.5)"),
                       ncsde::invalid_argument);
}

TEST_CASE("integrate: observer sees t0 and every grid time, saves match, T is hit exactly") {
  support::quadratic_noise sde;
  sde.a = 0.1 * support::random_symmetric(2, 1);
  sde.c = matrix::Identity(2, 2);
  sde.b = {0.2 * support::random_symmetric(2, 2), 0.2 * support::random_symmetric(2, 3)};
  problem<support::quadratic_noise> prob{sde, support::random_spd(2, 4), 1.0};
  integrate_options opt;
  opt.dt = 0.3;
  opt.save_times = {0.0, 0.6, 1.0};
  std::vector<double> times;
  std::vector<matrix> states;
  ncsde::euler_maruyama<> em;
  const path_result r = ncsde::integrate(em, prob, opt, 5, 0, recorder{&times, &states});
  CHECK(r.status == path_status::completed);
  CHECK(r.steps == 4);
  CHECK(r.t_stop == 1.0);
  REQUIRE(times.size() == 5);
  CHECK(times == std::vector<double>{0.0, 0.3, 0.6, 0.3 * 3, 1.0});
  REQUIRE(r.saved.size() == 3);
  CHECK(r.saved[0] == states[0]);
  CHECK(r.saved[1] == states[2]);
  CHECK(r.saved[2] == states[4]);
  CHECK(r.v == states[4]);
  CHECK(r.pd.violations == 0);

  // The engine is a plain EM loop on the path's stream (seed 5, path 0), step i at t0 + i·dt:
  // the same operations in the same order, so bit-identical.
  ncsde::stream_brownian source(ncsde::random_stream(5, 0), 2);
  matrix v = prob.v0;
  ncsde::euler_maruyama<> em2;
  const step_grid grid(0.0, 1.0, 0.3);
  for (long long i = 0; i < grid.steps; ++i) {
    ncsde::noise_increment inc;
    source.increment(static_cast<std::uint64_t>(i), grid.step_size(i), false, inc);
    em2.do_step(prob.sde, v, grid.time(i), inc);
    v = (0.5 * (v + v.transpose())).eval();
    CHECK(v == states[static_cast<std::size_t>(i + 1)]);
  }

  // Same seed and path: the same result; another path: another one.
  const path_result again = ncsde::integrate(em, prob, opt, 5, 0);
  CHECK(again.v == r.v);
  const path_result other = ncsde::integrate(em, prob, opt, 5, 1);
  CHECK(other.v != r.v);
}

TEST_CASE("integrate: T == t0 returns the validated V0 without stepping") {
  problem<support::cubic_scalar> prob{support::cubic_scalar{}, scalar(2.0), 0.5, 0.5};
  integrate_options opt;
  opt.dt = 0.1;
  opt.save_times = {0.5};
  std::vector<double> times;
  std::vector<matrix> states;
  ncsde::euler_maruyama<> em;
  const path_result r = ncsde::integrate(em, prob, opt, 1, 0, recorder{&times, &states});
  CHECK(r.status == path_status::completed);
  CHECK(r.steps == 0);
  CHECK(r.t_stop == 0.5);
  CHECK(r.v == scalar(2.0));
  CHECK(times == std::vector<double>{0.5});
  REQUIRE(r.saved.size() == 1);
  CHECK(r.saved[0] == scalar(2.0));
}

TEST_CASE("integrate: invalid problems and options are rejected with their values") {
  ncsde::euler_maruyama<> em;
  integrate_options opt;
  opt.dt = 0.1;
  problem<no_noise> silent{no_noise{}, matrix::Identity(2, 2), 1.0};
  CHECK_THROWS_WITH_AS(ncsde::integrate(em, silent, opt, 1),
                       doctest::Contains("integrate: noise_dimension(m) must be >= 1 (got 0)"),
                       ncsde::invalid_argument);
  problem<support::cubic_scalar> prob{support::cubic_scalar{}, scalar(-1.0), 1.0};
  CHECK_THROWS_WITH_AS(
      ncsde::integrate(em, prob, opt, 1),
      doctest::Contains("integrate: V0 is not positive semidefinite (smallest eigenvalue -1)"),
      ncsde::invalid_argument);
  prob.v0 = scalar(1.0);
  prob.t_end = 0.05;
  CHECK_THROWS_WITH_AS(ncsde::integrate(em, prob, opt, 1),
                       doctest::Contains("integrate: dt must be <= T - t0 = 0.05 (got 0.1)"),
                       ncsde::invalid_argument);
  prob.t_end = 1.0;
  integrate_options bad = opt;
  bad.pd_floor = -0.1;
  CHECK_THROWS_WITH_AS(ncsde::integrate(em, prob, bad, 1),
                       doctest::Contains("integrate: pd_floor must be >= 0 and finite (got -0.1)"),
                       ncsde::invalid_argument);
  bad = opt;
  bad.refine_depth = 0;
  CHECK_THROWS_WITH_AS(ncsde::integrate(em, prob, bad, 1),
                       doctest::Contains("integrate: refine_depth must be in [1, 30] (got 0)"),
                       ncsde::invalid_argument);
  bad.refine_depth = 31;
  CHECK_THROWS_WITH_AS(ncsde::integrate(em, prob, bad, 1),
                       doctest::Contains("refine_depth must be in [1, 30] (got 31)"),
                       ncsde::invalid_argument);
  bad = opt;
  bad.blowup_threshold = 0.0;
  CHECK_THROWS_WITH_AS(
      ncsde::integrate(em, prob, bad, 1),
      doctest::Contains("integrate: blowup_threshold must be in (0, 1e100] (got 0)"),
      ncsde::invalid_argument);
  bad.blowup_threshold = 1e101;
  CHECK_THROWS_WITH_AS(ncsde::integrate(em, prob, bad, 1),
                       doctest::Contains("(0, 1e100] (got 1e+101)"), ncsde::invalid_argument);
  bad.blowup_threshold = nan_value;
  CHECK_THROWS_WITH_AS(ncsde::integrate(em, prob, bad, 1),
                       doctest::Contains("(0, 1e100] (got nan)"), ncsde::invalid_argument);
  bad = opt;
  bad.dt = -1.0;
  CHECK_THROWS_WITH_AS(ncsde::integrate(em, prob, bad, 1),
                       doctest::Contains("integrate: dt must be > 0 and finite (got -1)"),
                       ncsde::invalid_argument);
}

TEST_CASE("pd_policy names round-trip; unknown names are rejected") {
  for (const pd_policy p :
       {pd_policy::throw_error, pd_policy::count, pd_policy::project, pd_policy::refine})
    CHECK(ncsde::parse_pd_policy(ncsde::to_string(p)) == p);
  CHECK(ncsde::to_string(pd_policy::throw_error) == "throw");
  CHECK_THROWS_WITH_AS(
      ncsde::parse_pd_policy("clip"),
      doctest::Contains(
          "pd-policy must be one of throw, count, project, refine, automatic (got 'clip')"),
      ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(ncsde::parse_pd_policy("", "--policy"),
                       doctest::Contains("--policy must be one of"), ncsde::invalid_argument);
  CHECK(ncsde::to_string(path_status::blown_up) == "blown_up");
  CHECK(ncsde::to_string(path_status::completed) == "completed");
  CHECK(ncsde::to_string(path_status::stopped) == "stopped");
}

// decoupled_exit with λ = 15, dt = 0.1 on [0, 1]: EM multiplies x by 1 − λh = −0.5 every step, so each
// step from x > 0 leaves the cone with λ_min = x·(−0.5); y = 4 + 0.5 W stays ≥ 1.5 unless |W_1| > 5
// (a 5σ event; the seeds below are fixed).
TEST_CASE("pd_policy throw: pd_violation names the path, step, time and smallest eigenvalue") {
  problem<support::decoupled_exit> prob{support::decoupled_exit{}, diag2(1.0, 4.0), 1.0};
  integrate_options opt;
  opt.dt = 0.1;
  opt.policy = pd_policy::throw_error;
  ncsde::euler_maruyama<> em;
  try {
    (void)ncsde::integrate(em, prob, opt, 11, 3);
    FAIL("no pd_violation");
  } catch (const ncsde::pd_violation& e) {
    CHECK(e.path() == 3);
    CHECK(e.step() == 0);
    CHECK(e.time() == 0.1);
    CHECK(std::abs(e.min_eigenvalue() + 0.5) <=
          16 * eps * 4.0);  // eigensolver round-off, |V| ≤ 4.5
    CHECK(std::string(e.what()).find("integrate: path 3 left the positive-semidefinite cone at "
                                     "step 0, t = 0.1 (smallest eigenvalue -0.5)") !=
          std::string::npos);
  }
  // A later exit: from x0 = 1 with λ = 5 (factor 0.5) the state stays in the cone; nothing is thrown.
  prob.sde.lambda = 5.0;
  CHECK_NOTHROW((void)ncsde::integrate(em, prob, opt, 11, 3));
}

TEST_CASE("pd_policy count, project and refine on a deterministic cone exit") {
  const double y0 = 4.0, sigma = 0.5;
  problem<support::decoupled_exit> prob{support::decoupled_exit{15.0, sigma}, diag2(1.0, y0), 1.0};
  integrate_options opt;
  opt.dt = 0.1;
  ncsde::euler_maruyama<> em;
  const std::uint64_t seed = 21, path = 2;
  const step_grid grid(0.0, 1.0, 0.1);
  const double y_exact = expected_y(y0, sigma, grid, seed, path);
  // y_T is a sum of 10 (resp. 40) increments of size ≤ |y|: rounding ≤ 64 ε |y| with headroom.
  const double y_tol = 64 * eps * std::abs(y_exact);
  // x_T is a product of n factors 1 − λh_i. The grid's step sizes t_{i+1} − t_i differ from dt by
  // ≤ ε·T, so each factor is off by ≤ λε, relative to |1 − λh| ≥ 1/8: ≤ 8λε relative per factor.
  auto x_close = [](double x, double exact, double lambda, int factors) {
    return std::abs(x - exact) <= 8 * lambda * factors * eps * std::abs(exact);
  };

  SUBCASE("count: keep the unmodified scheme, count every exit") {
    opt.policy = pd_policy::count;
    const path_result r = ncsde::integrate(em, prob, opt, seed, path);
    CHECK(r.status == path_status::completed);
    CHECK(r.pd.violations == 5);  // x_n = (−1/2)^n < 0 for n = 1, 3, 5, 7, 9
    CHECK(r.pd.projected == 0);
    CHECK(r.pd.refined == 0);
    CHECK(std::abs(r.pd.min_eigenvalue + 0.5) <= 16 * eps * 4.0);
    CHECK(x_close(r.v(0, 0), std::ldexp(1.0, -10), 15.0, 10));  // (−1/2)^10
    CHECK(std::abs(r.v(1, 1) - y_exact) <= y_tol);
  }
  SUBCASE("the default (automatic) is count: the scheme's own path, never pinned to the boundary") {
    // Under project the path is put on the boundary x = 0 at the first exit and stays there (the
    // next subcase): the pinning that made Milstein's blow-up probability 2.4 times too small
    // (issue 31, docs/maths.md §8.5). The default must leave the scheme's path as it is.
    const path_result r = ncsde::integrate(em, prob, opt, seed, path);
    CHECK(r.pd.violations == 5);
    CHECK(r.pd.projected == 0);
    CHECK(r.pd.boundary == 0);
    CHECK(x_close(r.v(0, 0), std::ldexp(1.0, -10), 15.0, 10));
  }
  SUBCASE("project (floor 0): the first exit is clipped to x = 0, then x stays on the boundary") {
    opt.policy = pd_policy::project;
    const path_result r = ncsde::integrate(em, prob, opt, seed, path);
    CHECK(r.status == path_status::completed);
    CHECK(r.pd.violations == 1);
    CHECK(r.pd.projected == 1);
    CHECK(r.pd.boundary == 9);  // x = ±0 after the projection: PSD up to round-off, not a violation
    CHECK(std::abs(r.v(0, 0)) <= ncsde::psd_round_off(r.v));
    CHECK(ncsde::min_eigenvalue(r.v) >= -ncsde::psd_round_off(r.v));
    CHECK(std::abs(r.v(1, 1) - y_exact) <=
          y_tol);  // projection touches only the violating direction
  }
  SUBCASE("project (floor 0.2): every step exits (x = 0.2 → −0.1) and is lifted back to 0.2") {
    opt.policy = pd_policy::project;
    opt.pd_floor = 0.2;
    const path_result r = ncsde::integrate(em, prob, opt, seed, path);
    CHECK(r.pd.violations == 10);
    CHECK(r.pd.projected == 10);
    CHECK(std::abs(r.v(0, 0) - 0.2) <= 16 * eps * y0);
    CHECK(ncsde::min_eigenvalue(r.v) >= 0.2 - 16 * eps * y0);
    CHECK(std::abs(r.pd.min_eigenvalue + 0.5) <= 16 * eps * 4.0);
  }
  SUBCASE("refine: each step is redone as two half steps of the same Brownian path") {
    opt.policy = pd_policy::refine;
    const path_result r = ncsde::integrate(em, prob, opt, seed, path);
    CHECK(r.status == path_status::completed);
    CHECK(r.pd.violations == 10);
    CHECK(r.pd.refined == 10);
    CHECK(r.pd.projected == 0);
    // Half steps multiply x by 1 − λh/2 = 1/4 twice: x_T = (1/16)^10 = 2^-40.
    CHECK(x_close(r.v(0, 0), std::ldexp(1.0, -40), 15.0, 20));
    // y has no drift: y_T = y0 + σ Σ (left + right) = y0 + σ Σ ΔW_i, the unrefined path's noise.
    CHECK(std::abs(r.v(1, 1) - y_exact) <= y_tol);
    CHECK(r.t_stop == 1.0);
    CHECK(r.steps == 10);
  }
  SUBCASE("refine recursively: λh = 3.5 needs quarter steps") {
    // Three steps (T = 0.3): x_T = 2^-36 stays far above the round-off level 16·2·ε·|V| ≈ 1.4e-14, so
    // every step's trial (x·(1 − 3.5)) is a genuine violation.
    opt.policy = pd_policy::refine;
    prob.sde.lambda = 35.0;  // whole step: 1 − 3.5 < 0; halves: 1 − 1.75 < 0; quarters: 1/8
    prob.t_end = 0.3;
    const path_result r = ncsde::integrate(em, prob, opt, seed, path);
    CHECK(r.pd.refined == 9);  // per step: the step and both halves
    CHECK(r.pd.violations == 9);
    CHECK(x_close(r.v(0, 0), std::ldexp(1.0, -36), 35.0, 12));  // (1/8)^4 per step
    CHECK(std::abs(r.v(1, 1) - expected_y(y0, sigma, step_grid(0.0, 0.3, 0.1), seed, path)) <=
          y_tol);
  }
  SUBCASE("refine gives up after refine_depth halvings with pd_violation") {
    opt.policy = pd_policy::refine;
    opt.refine_depth = 1;
    prob.sde.lambda = 35.0;
    CHECK_THROWS_WITH_AS(
        (void)ncsde::integrate(em, prob, opt, seed, path),
        doctest::Contains(
            "integrate: path 2 left the positive-semidefinite cone at step 0, t = 0.05 "
            "(smallest eigenvalue -0.75) even after refining the step 1 times (dt = 0.05)"),
        ncsde::pd_violation);
  }
}

TEST_CASE("integrate: a cubic drift blows up near the analytic time 1/(2 v0²)") {
  // dv = v³ dt, v0 = 1: v(t) = (1 − 2t)^{-1/2}, t* = 1/2. Blow-up detection stops the path once
  // |v| > M = 10⁶. Bounds on EM's stopping time (u = v⁻², s = h/u, one step maps u ↦ u/(1 + s)²):
  //  - EM is slower than the flow: u decreases by h(2 + s)/(1 + s)² ≤ 2h per step, so reaching
  //    u < 1/M² takes n·h > (u0 − 1/M²)/2 = t* − 1/(2M²).
  //  - until s = 1 (u = h) the decrease is ≥ its value at the end of the step, so the time is at most
  //    h + ∫_h^{u0} (s + 1/(2 + s)) du ≤ h + h ln(u0/h) + u0/2; from s ≥ 1, s grows ≥ 4-fold and v
  //    at least doubles per step, so ≤ 5 more steps take v from h^{-1/2} ≈ 32 past 10⁶.
  //  Hence t* − 1/(2M²) < t_stop ≤ t* + h (6 + ln(1/h)).
  problem<support::cubic_scalar> prob{support::cubic_scalar{}, scalar(1.0), 1.0};
  integrate_options opt;
  const double h = 1e-3;
  opt.dt = h;
  ncsde::euler_maruyama<> em;
  const path_result r = ncsde::integrate(em, prob, opt, 1);
  CHECK(r.status == path_status::blown_up);
  CHECK(r.t_stop > 0.5 - 0.5e-12);
  CHECK(r.t_stop <= 0.5 + h * (6 + std::log(1 / h)));
  CHECK(r.v.allFinite());
  CHECK(r.v(0, 0) > opt.blowup_threshold);
  CHECK(r.t_stop == static_cast<double>(r.steps) * h);  // the end of the step that blew up

  // The same EM recursion by hand crosses 10⁶ at the same step. Per-step rounding differences (e.g. a
  // fused multiply-add) are amplified like (v/v0)² ≤ 10¹²: a 1e-3 relative tolerance at the end.
  const step_grid grid(0.0, 1.0, h);
  double v = 1.0;
  long long n = 0;
  while (!(std::abs(v) > 1e6)) {
    v = v + grid.step_size(n) * (v * v * v);
    ++n;
  }
  CHECK(n == r.steps);
  CHECK(std::abs(r.v(0, 0) - v) <= 1e-3 * v);

  // A lower threshold stops it earlier: |v| > 10 is first exceeded before t = (1 − 10⁻²)/2 + h(6 + ln(1/h)).
  opt.blowup_threshold = 10.0;
  const path_result low = ncsde::integrate(em, prob, opt, 1);
  CHECK(low.status == path_status::blown_up);
  CHECK(low.t_stop < r.t_stop);
  CHECK(low.t_stop > 0.495 - 1e-12);
  CHECK(low.t_stop <= 0.495 + h * (6 + std::log(1 / h)));
  CHECK(low.v(0, 0) > 10.0);
}

TEST_CASE("integrate: a step that overflows is a blow-up, never a completed non-finite path") {
  problem<overflowing> prob{overflowing{}, scalar(1.0), 1.0};
  integrate_options opt;
  opt.dt = 1.0;
  ncsde::euler_maruyama<> em;
  int overflowed = 0;
  for (std::uint64_t path = 0; path < 8; ++path) {
    const path_result r = ncsde::integrate(em, prob, opt, 3, path);
    CHECK(r.status == path_status::blown_up);
    CHECK(r.steps == 1);
    CHECK(r.t_stop == 1.0);
    if (std::isinf(r.v(0, 0))) ++overflowed;
    // The state at t_stop is reported as it is (±inf, NaN or beyond the threshold), so the caller can
    // see what happened; it is never handed on as a completed state.
    CHECK_FALSE(std::abs(r.v(0, 0)) <= opt.blowup_threshold);
  }
  // ΔW > 0 on about half the paths: P(no overflow in 8) = 2^-8 for this fixed seed's draws.
  CHECK(overflowed > 0);
}

TEST_CASE("integrate: stop_condition stops on the grid; later saves are not made") {
  // dv = v³ dt from v0 = 1 reaches 2 at t = (1 − 1/4)/2 = 0.375 (EM slightly later, see the blow-up test).
  problem<support::cubic_scalar> prob{support::cubic_scalar{}, scalar(1.0), 1.0};
  integrate_options opt;
  opt.dt = 0.01;
  opt.save_times = {0.1, 0.2, 0.3, 0.4, 0.5};
  opt.stop_condition = [](const matrix& v, double) { return v(0, 0) > 2.0; };
  std::vector<double> times;
  std::vector<matrix> states;
  ncsde::euler_maruyama<> em;
  const path_result r = ncsde::integrate(em, prob, opt, 1, 0, recorder{&times, &states});
  CHECK(r.status == path_status::stopped);
  CHECK(r.v(0, 0) > 2.0);
  CHECK(states.back()(0, 0) <= 2.0);  // the observer saw the last state before stopping
  CHECK(r.t_stop == doctest::Approx(times.back() + 0.01).epsilon(1e-12));
  CHECK(r.t_stop >= 0.375 - 1e-12);
  CHECK(r.t_stop <= 0.375 + 0.01 * (6 + std::log(100.0)));
  REQUIRE(r.saved.size() == 3);  // 0.1, 0.2, 0.3; the path stopped before 0.4
  CHECK(r.saved[2] == states[30]);
}

TEST_CASE("integrate: a non-finite coefficient is an evaluation_error naming path, step and time") {
  integrate_options opt;
  opt.dt = 0.1;
  ncsde::euler_maruyama<> em;
  problem<fails_at_time> drift{fails_at_time{0.5, true}, matrix::Identity(2, 2), 1.0};
  CHECK_THROWS_WITH_AS(
      (void)ncsde::integrate(em, drift, opt, 4, 7),
      doctest::Contains(
          "integrate: the drift returned a non-finite value at path 7, step 5, t = 0.5"),
      ncsde::evaluation_error);
  problem<fails_at_time> noise{fails_at_time{0.25, false}, matrix::Identity(2, 2), 1.0};
  CHECK_THROWS_WITH_AS(
      (void)ncsde::integrate(em, noise, opt, 4, 0),
      doctest::Contains(
          "integrate: the noise map returned a non-finite value at path 0, step 3, t = 0.3"),
      ncsde::evaluation_error);
  ncsde::milstein<> mil;
  CHECK_THROWS_WITH_AS((void)ncsde::integrate(mil, drift, opt, 4, 1),
                       doctest::Contains("the drift returned a non-finite value at path 1, step 5"),
                       ncsde::evaluation_error);
}

namespace {
/// Returns coefficients of the wrong size (drift or noise), or declares one noise dimension while
/// reading another: problem defects the steppers must report, never undefined behaviour.
struct misshapen_sde {
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  bool bad_drift = false;
  int declared_k = 2;
  int noise_dimension(int) const { return declared_k; }
  void drift(const matrix& v, matrix& out, double) const {
    out = bad_drift ? matrix::Zero(v.rows() + 1, v.cols() + 1) : matrix::Zero(v.rows(), v.cols());
  }
  void diffusion(const matrix& v, const vector& xi, matrix& out, double) const {
    out = bad_drift ? matrix::Zero(v.rows(), v.cols()) : matrix::Zero(1, 1);
    if (!bad_drift) return;
    out.setIdentity(v.rows(), v.cols());
    out *= xi(0);
  }
};
}  // namespace

TEST_CASE("integrate: a coefficient of the wrong size is an evaluation_error with the sizes") {
  integrate_options opt;
  opt.dt = 0.1;
  ncsde::euler_maruyama<> em;
  ncsde::milstein<> mil;
  problem<misshapen_sde> drift{misshapen_sde{true, 2}, matrix::Identity(2, 2), 1.0};
  CHECK_THROWS_WITH_AS(
      (void)ncsde::integrate(em, drift, opt, 4, 2),
      doctest::Contains("the drift returned a 3x3 matrix for a 2x2 state at path 2, step 0"),
      ncsde::evaluation_error);
  CHECK_THROWS_WITH_AS((void)ncsde::integrate(mil, drift, opt, 4, 2),
                       doctest::Contains("the drift returned a 3x3 matrix for a 2x2 state"),
                       ncsde::evaluation_error);
  problem<misshapen_sde> noise{misshapen_sde{false, 2}, matrix::Identity(2, 2), 1.0};
  CHECK_THROWS_WITH_AS(
      (void)ncsde::integrate(em, noise, opt, 4, 0),
      doctest::Contains("the noise map returned a 1x1 matrix for a 2x2 state at path 0, step 0"),
      ncsde::evaluation_error);
}

TEST_CASE("steppers: an increment whose dimension is not noise_dimension(m) is rejected") {
  const misshapen_sde sde{true, 3};
  matrix v = matrix::Identity(2, 2);
  ncsde::noise_increment inc;
  inc.dt = 0.1;
  inc.dw = vector::Zero(2);
  ncsde::euler_maruyama<> em;
  CHECK_THROWS_WITH_AS(em.do_step(sde, v, 0.0, inc),
                       "euler_maruyama: noise increment has dimension 2 but the problem's "
                       "noise_dimension(m = 2) is 3",
                       ncsde::invalid_argument);
  ncsde::milstein_commutative<> mc;
  CHECK_THROWS_WITH_AS(mc.do_step(sde, v, 0.0, inc),
                       doctest::Contains("milstein: noise increment has dimension 2"),
                       ncsde::invalid_argument);
  CHECK(v == matrix::Identity(2, 2));  // the state is untouched by a rejected step
}

TEST_CASE("integrate: Milstein gets each step's iterated integrals from the path's stream") {
  support::quadratic_noise_with_derivative sde;
  sde.a = 0.1 * support::random_symmetric(2, 11);
  sde.c = matrix::Identity(2, 2);
  sde.b = {0.1 * support::random_symmetric(2, 12), 0.1 * support::random_symmetric(2, 13),
           0.1 * support::random_symmetric(2, 14)};
  problem<support::quadratic_noise_with_derivative> prob{sde, support::random_spd(2, 15), 0.5};
  integrate_options opt;
  opt.dt = 0.05;
  opt.policy = pd_policy::count;  // the pure scheme, so the hand loop below needs no policy
  std::vector<double> times;
  std::vector<matrix> states;
  ncsde::milstein<> mil;
  const path_result r = ncsde::integrate(mil, prob, opt, 17, 4, recorder{&times, &states});
  CHECK(r.status == path_status::completed);
  REQUIRE(states.size() == 11);
  ncsde::stream_brownian source(ncsde::random_stream(17, 4), 3);
  ncsde::milstein<> by_hand;
  matrix v = prob.v0;
  const step_grid grid(0.0, 0.5, 0.05);
  REQUIRE(grid.steps == 10);
  for (long long i = 0; i < 10; ++i) {
    ncsde::noise_increment inc;
    source.increment(static_cast<std::uint64_t>(i), grid.step_size(i), true, inc);
    by_hand.do_step(prob.sde, v, grid.time(i), inc);
    v = (0.5 * (v + v.transpose())).eval();
    CHECK(v == states[static_cast<std::size_t>(i + 1)]);
  }
}
