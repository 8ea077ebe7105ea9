// The adaptive study (run_adaptive_convergence, ncsde/convergence.hpp): its option checks, its
// reproducibility and a small fixed-seed measurement of orders at matched cost on gbm.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ncsde/analytic.hpp"
#include "ncsde/convergence.hpp"
#include "support/convergence_studies.hpp"

using ncsde::adaptive_convergence_options;
using ncsde::adaptive_convergence_series;
using ncsde::error_kind;
using ncsde::step_control;

namespace {

const ncsde::convergence_study& study(const std::string& name) {
  return ncsde::test::standard_study(name);
}

adaptive_convergence_options quick(long long paths, const std::string& scheme = "em",
                                   step_control control = step_control::increment) {
  adaptive_convergence_options o;
  o.paths = paths;
  o.scheme = scheme;
  o.control = control;
  o.seed = 2024;
  o.progress = ncsde::progress_mode::off;
  return o;
}

}  // namespace

TEST_CASE("the adaptive study exists only for problems with a pathwise solution") {
  for (const char* name : {"gbm", "hadamard", "matrix-gbm"})
    CHECK(static_cast<bool>(study(name).run_adaptive));
  for (const char* name : {"noncommutative", "linear-covariance", "wishart"})
    CHECK(!study(name).run_adaptive);
}

TEST_CASE("bad adaptive study options are rejected, naming the option and the value") {
  const auto& gbm = study("gbm");
  adaptive_convergence_options o = quick(100);
  o.tolerance = 1.5;
  CHECK_THROWS_WITH_AS(gbm.run_adaptive(o),
                       doctest::Contains("tolerance must be in (0, 1] (or 0 for the problem's "
                                         "default) (got 1.5)"),
                       ncsde::invalid_argument);
  o.tolerance = -0.01;
  CHECK_THROWS_WITH_AS(gbm.run_adaptive(o), doctest::Contains("(got -0.01)"),
                       ncsde::invalid_argument);
  o = quick(100, "em", step_control::fixed);
  CHECK_THROWS_WITH_AS(gbm.run_adaptive(o),
                       doctest::Contains("step control must be increment or doubling"),
                       ncsde::invalid_argument);
  o = quick(100, "euler");
  CHECK_THROWS_WITH_AS(gbm.run_adaptive(o), doctest::Contains("(got 'euler')"),
                       ncsde::invalid_argument);
  o = quick(1);
  CHECK_THROWS_WITH_AS(gbm.run_adaptive(o), doctest::Contains("paths must be >= 2"),
                       ncsde::invalid_argument);
  o = quick(100);
  o.levels = 2;
  CHECK_THROWS_WITH_AS(gbm.run_adaptive(o), doctest::Contains("levels must be in [3, 16] (got 2)"),
                       ncsde::invalid_argument);
  o = quick(100);
  o.max_depth = 51;
  CHECK_THROWS_WITH_AS(gbm.run_adaptive(o),
                       doctest::Contains("max depth must be in [1, 50] (got 51)"),
                       ncsde::invalid_argument);
  o = quick(100);
  o.strong = o.weak = false;
  CHECK_THROWS_WITH_AS(gbm.run_adaptive(o), doctest::Contains("neither strong nor weak"),
                       ncsde::invalid_argument);
  // The study type-erased by make_convergence_study has no adaptive runner without a pathwise
  // solution; run directly, the problem is refused.
  ncsde::convergence_problem<ncsde::analytic::gbm> cp(
      "no-exact", {ncsde::analytic::gbm(ncsde::analytic::gbm::params{0.5, 0.5}),
                   ncsde::matrix::Constant(1, 1, 1.0), 1.0, 0.0});
  CHECK_THROWS_WITH_AS(ncsde::run_adaptive_convergence(cp, quick(10)),
                       doctest::Contains("no pathwise exact solution"), ncsde::invalid_argument);
}

TEST_CASE("adaptive study results are bit-identical for any number of threads") {
  adaptive_convergence_options o = quick(40, "milstein", step_control::doubling);
  o.levels = 3;
  std::vector<std::vector<adaptive_convergence_series>> runs;
  for (const int threads : {1, 2}) {
    o.threads = threads;
    runs.push_back(study("hadamard").run_adaptive(o));
  }
  REQUIRE(runs[0].size() == 2);
  REQUIRE(runs[1].size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(runs[1][i].errors == runs[0][i].errors);
    CHECK(runs[1][i].cost == runs[0][i].cost);
    CHECK(runs[1][i].fixed_errors == runs[0][i].fixed_errors);
  }
}

TEST_CASE("adaptive orders at matched cost on gbm (small fixed-seed runs)") {
  // gbm, seed 2024, tolerances 0.02 … 0.00125, grid step 1/16. Measured with these settings: EM
  // under the increment controller has strong order 0.505 ± 0.011 in cost at 2000 paths (95% CI
  // [0.469, 0.541]), and the commutative Milstein scheme under step doubling 0.989 ± 0.018 at 1000
  // paths ([0.932, 1.045]), both as with fixed steps (the drift bound sets h ∝ tol on this smooth
  // problem, so the steps follow the tolerance, not the noise). The checks: the 95% interval
  // contains the fixed-step order and excludes the other one (0.5 apart), and it is narrower than
  // ±0.15, so that a scheme off by 0.5 in order cannot pass by noise.
  SUBCASE("EM, increment controller: strong order 1/2 in cost, cost ∝ 1/tol") {
    const auto rows = study("gbm").run_adaptive(quick(2000));
    REQUIRE(rows.size() == 2);
    const adaptive_convergence_series& s = rows[0];
    REQUIRE(s.kind == error_kind::strong);
    CAPTURE(s.fit.slope);
    CAPTURE(s.fit.ci_low);
    CAPTURE(s.fit.ci_high);
    CHECK(s.fit.ci_low <= 0.5);
    CHECK(s.fit.ci_high >= 0.5);
    CHECK(s.fit.ci_high < 1.0);
    CHECK(s.fit.ci_high - s.fit.ci_low < 0.3);
    CHECK(s.expected == 0.5);
    // The cost grows as the tolerance shrinks: each halving of tol at least 1.5× the steps (the
    // drift bound alone doubles them; the cost's own standard error is < 1% of it).
    for (std::size_t l = 1; l < s.cost.size(); ++l) {
      CAPTURE(l);
      CHECK(s.cost[l] > 1.5 * s.cost[l - 1]);
      CHECK(s.cost_stderr[l] < 0.01 * s.cost[l]);
    }
    // Every level's error is positive and its standard error a small part of it, and the costs
    // lie inside the fixed ladder (16 … 1024 steps), so the matched-cost ratio is interpolated.
    for (std::size_t l = 0; l < s.cost.size(); ++l) {
      CHECK(s.errors_stderr[l] < 0.1 * s.errors[l]);
      CHECK(!s.extrapolated[l]);
      CHECK(s.ratio[l] > 0);
    }
    CHECK(s.fixed_cost.front() == 16);
    CHECK(s.fixed_cost.back() == 1024);
  }
  SUBCASE("Milstein without areas, doubling controller: strong order 1 in cost") {
    const auto rows =
        study("gbm").run_adaptive(quick(1000, "milstein-commutative", step_control::doubling));
    REQUIRE(rows.size() == 2);
    const adaptive_convergence_series& s = rows[0];
    CAPTURE(s.fit.slope);
    CAPTURE(s.fit.ci_low);
    CAPTURE(s.fit.ci_high);
    CHECK(s.fit.ci_low <= 1.0);
    CHECK(s.fit.ci_high >= 1.0);
    CHECK(s.fit.ci_low > 0.5);
    CHECK(s.fit.ci_high - s.fit.ci_low < 0.3);
    // The fixed ladder on the same paths: Milstein's order 1 in dt.
    CHECK(std::abs(s.fixed_fit.slope - 1.0) < 0.1);
  }
}
