// The convergence engine (ncsde/convergence.hpp): its grid source, option checks, reproducibility,
// the two weak estimators, the output, and small fixed-seed order measurements on the standard
// problems (the full-precision study is the `validation` ctest convergence_full).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ncsde/analytic.hpp"
#include "ncsde/convergence.hpp"
#include "support/convergence_studies.hpp"

using ncsde::convergence_options;
using ncsde::convergence_series;
using ncsde::error_kind;
using ncsde::matrix;
using ncsde::vector;

namespace {

const ncsde::convergence_study& study(const std::string& name) {
  return ncsde::test::standard_study(name);
}

const convergence_series& find(const std::vector<convergence_series>& rows, const std::string& s,
                               error_kind k) {
  const auto it = std::find_if(rows.begin(), rows.end(),
                               [&](const auto& r) { return r.scheme == s && r.kind == k; });
  REQUIRE(it != rows.end());
  return *it;
}

convergence_options quick(long long paths, int levels = 0) {
  convergence_options o;
  o.paths = paths;
  o.levels = levels;
  o.seed = 2024;
  o.progress = ncsde::progress_mode::off;
  return o;
}

/// The noncommutative standard problem, rebuilt here so that its weak estimator can be switched.
ncsde::convergence_problem<ncsde::analytic::lifted_linear> noncommutative(bool martingale) {
  matrix a(2, 2), b1(2, 2), b2(2, 2), v0(2, 2);
  a << -0.1, 0.05, 0.0, -0.05;
  b1 << 0.35, 0.0, 0.0, -0.35;
  b2 << 0.0, 0.35, 0.35, 0.0;
  v0 << 1.0, 0.3, 0.3, 0.6;
  const ncsde::analytic::lifted_linear sde(a, {b1, b2});
  const double t = 0.5;
  ncsde::convergence_problem<ncsde::analytic::lifted_linear> cp("nc", {sde, v0, t, 0.0});
  cp.first_level = 3;
  cp.levels = 3;
  cp.weak = ncsde::functional{"|V|_F^2", [](const matrix& v) { return v.squaredNorm(); }};
  cp.weak_exact = sde.second_moments(v0, t).trace();
  if (martingale) {
    cp.weak_value = [sde, t](double s) {
      return std::function<double(const matrix&)>(
          sde.conditional_second_moment(matrix::Identity(4, 4), std::max(0.0, t - s)));
    };
  } else {
    cp.euler_weak = [sde, v0](double h, long long n) {
      return sde.euler_second_moments(v0, h, n).trace();
    };
  }
  return cp;
}

}  // namespace

TEST_CASE("grid_brownian_source reads coarse steps off the grid and halves them exactly") {
  const ncsde::brownian_grid grid(ncsde::random_stream(5, 0), 3, 16, 1.0 / 16, true);
  const ncsde::grid_brownian_source source(grid, 4);
  ncsde::noise_increment inc, expected, left, right;
  source.increment(2, 0.25, true, inc);
  grid.coarse_increment(2, 4, true, expected);
  CHECK(inc.dw == expected.dw);
  CHECK(inc.iterated == expected.iterated);
  // Split node 1 (the whole step) into fine steps [8, 10) and [10, 12): the parent is their sum,
  // and Chen's relation I = I_left + I_right + dw_left dw_rightᵀ holds to round-off (sums of O(h)
  // terms).
  source.split(inc, 2, 1, true, left, right);
  CHECK(left.dt == 0.125);
  CHECK(((left.dw + right.dw) - inc.dw).cwiseAbs().maxCoeff() <=
        4 * std::numeric_limits<double>::epsilon());
  const matrix chen = left.iterated + right.iterated + left.dw * right.dw.transpose();
  CHECK((chen - inc.iterated).cwiseAbs().maxCoeff() <= 1e-15);
  // Node 2 (the left half) splits into single fine steps; node 4 cannot be split any further.
  source.split(left, 2, 2, true, left, right);
  CHECK(left.dt == 0.0625);
  CHECK_THROWS_WITH_AS(
      source.split(left, 2, 4, true, left, right),
      doctest::Contains("fine steps in the piece must be even and >= 2 (the grid cannot be "
                        "refined further) (got 1)"),
      ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(ncsde::grid_brownian_source(grid, 5),
                       doctest::Contains("ratio must be a divisor of the 16 fine steps (got 5)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(source.increment(0, 0.3, false, inc),
                       doctest::Contains("dt must be 4 fine steps"), ncsde::invalid_argument);
}

TEST_CASE("the scheme registry: names, lookup, expected orders") {
  const std::vector<std::string> names = ncsde::scheme_names();
  REQUIRE(names.size() == ncsde::builtin_schemes::size);
  // The names the CLI and the JSON print, in the order of the tables.
  CHECK(names[0] == "em");
  CHECK(names[1] == "milstein");
  CHECK(names[2] == "milstein-commutative");
  CHECK(names[3] == "predictor-corrector");
  for (std::size_t i = 0; i < names.size(); ++i) {
    CHECK(ncsde::find_scheme(names[i]) == i);
    CHECK(ncsde::builtin_scheme_descriptors()[i].name == names[i]);
  }
  static_assert(ncsde::builtin_schemes::index_of<ncsde::milstein<>> == 1);
  // visit hands over the stepper type whose descriptor is at the index.
  for (std::size_t i = 0; i < names.size(); ++i)
    CHECK(ncsde::builtin_schemes::visit(i, []<class St>(std::type_identity<St>) {
            return std::string(St::name);
          }) == names[i]);
  const std::string unknown =
      "--scheme must be one of " + ncsde::scheme_name_list() + " (got 'rk4')";
  CHECK_THROWS_WITH_AS(ncsde::find_scheme("rk4", "--scheme"), doctest::Contains(unknown.c_str()),
                       ncsde::invalid_argument);
  CHECK(ncsde::scheme_name_list().find("em, milstein, milstein-commutative") == 0);
  using ncsde::expected_order;
  CHECK(expected_order("em", error_kind::strong, true) == 0.5);
  CHECK(expected_order("milstein", error_kind::strong, false) == 1.0);
  CHECK(expected_order("milstein-commutative", error_kind::strong, true) == 1.0);
  CHECK(expected_order("milstein-commutative", error_kind::strong, false) == 0.5);
  CHECK(expected_order("em", error_kind::weak, false) == 1.0);
  CHECK_THROWS_WITH_AS(expected_order("rk4", error_kind::weak, false),
                       doctest::Contains("scheme must be one of"), ncsde::invalid_argument);
  // An unknown name in the options is refused before the run, naming the problem.
  convergence_options o;
  o.schemes = {"em", "rk4"};
  CHECK_THROWS_WITH_AS(study("gbm").run(o),
                       doctest::Contains("convergence (gbm): scheme must be one of em, milstein"),
                       ncsde::invalid_argument);
}

TEST_CASE("bad convergence options are rejected, naming the option and the value") {
  const auto& gbm = study("gbm");
  convergence_options o = quick(1);
  CHECK_THROWS_WITH_AS(
      gbm.run(o), doctest::Contains("paths must be >= 2 (or 0 for the problem's default) (got 1)"),
      ncsde::invalid_argument);
  o = quick(100, 2);
  CHECK_THROWS_WITH_AS(gbm.run(o), doctest::Contains("levels must be in [3, 16]"),
                       ncsde::invalid_argument);
  o = quick(100);
  o.threads = -1;
  CHECK_THROWS_WITH_AS(gbm.run(o),
                       doctest::Contains("threads must be >= 0 (0: all cores) (got -1)"),
                       ncsde::invalid_argument);
  o = quick(100, 16);
  o.first_level = 12;
  CHECK_THROWS_WITH_AS(gbm.run(o), doctest::Contains("fine steps must be <= 2^24"),
                       ncsde::invalid_argument);
  o = quick(100);
  o.schemes.clear();
  CHECK_THROWS_WITH_AS(gbm.run(o), doctest::Contains("no scheme selected"),
                       ncsde::invalid_argument);
  o = quick(100);
  o.strong = o.weak = false;
  CHECK_THROWS_WITH_AS(gbm.run(o), doctest::Contains("neither strong nor weak"),
                       ncsde::invalid_argument);
  // A problem without a pathwise solution, without weak_value and without euler_weak measures its
  // weak errors from the coupled differences of successive levels, for every scheme.
  auto cp = noncommutative(false);
  cp.euler_weak = nullptr;
  o = quick(10);
  o.strong = false;
  const auto rows = ncsde::run_convergence(cp, o);
  CHECK(rows.size() == ncsde::scheme_names().size());
  for (const convergence_series& r : rows) {
    CHECK(r.reference.find("successive levels") != std::string::npos);
    CHECK(r.dts.size() == static_cast<std::size_t>(cp.levels - 1));
  }
}

TEST_CASE("results are bit-identical for any number of threads") {
  const auto& s = study("noncommutative");
  convergence_options o = quick(24, 3);
  std::vector<std::vector<convergence_series>> runs;
  for (const int threads : {1, 2, 3}) {
    o.threads = threads;
    runs.push_back(s.run(o));
  }
  for (std::size_t r = 1; r < runs.size(); ++r) {
    REQUIRE(runs[r].size() == runs[0].size());
    for (std::size_t i = 0; i < runs[0].size(); ++i) {
      CHECK(runs[r][i].errors == runs[0][i].errors);
      CHECK(runs[r][i].errors_stderr == runs[0][i].errors_stderr);
      CHECK(runs[r][i].cone_exits == runs[0][i].cone_exits);
    }
  }
  // A different seed gives different paths.
  o.seed = 7;
  CHECK(s.run(o)[0].errors != runs[0][0].errors);
}

namespace {

/// k pseudo-processes run one after another inside gather: the share-out of MPI ranks (contiguous
/// whole blocks, pieces in process order) without MPI.
ncsde::path_sharing sequential_sharing(int k) {
  auto current = std::make_shared<int>(0);
  ncsde::path_sharing s;
  s.mine = [current, k](long long paths, long long block) {
    const long long blocks = (paths + block - 1) / block;
    const long long b0 = *current * blocks / k, b1 = (*current + 1) * blocks / k;
    return ncsde::path_range{std::min(paths, b0 * block), std::min(paths, b1 * block)};
  };
  s.gather = [current, k](const std::function<std::string()>& piece) {
    std::vector<std::string> out;
    for (int r = 0; r < k; ++r) {
      *current = r;
      out.push_back(piece());
    }
    return std::optional<std::vector<std::string>>(std::move(out));
  };
  return s;
}

}  // namespace

TEST_CASE("results are bit-identical when the paths are shared out (path_sharing, as over MPI)") {
  // The coupled EM control (no martingale control): EM's weak series runs on the extended paths
  // [24, 50), which fill slot arrays of their own.
  const auto cp = noncommutative(/*martingale=*/false);
  convergence_options o = quick(24, 3);
  o.weak_paths = 50;
  o.threads = 2;
  const std::vector<convergence_series> whole = ncsde::run_convergence(cp, o);
  REQUIRE(std::any_of(whole.begin(), whole.end(), [](const auto& r) { return r.paths == 50; }));
  for (const int k : {1, 2, 3, 7}) {
    CAPTURE(k);
    o.sharing = std::make_shared<const ncsde::path_sharing>(sequential_sharing(k));
    const std::vector<convergence_series> shared = ncsde::run_convergence(cp, o);
    REQUIRE(shared.size() == whole.size());
    for (std::size_t i = 0; i < whole.size(); ++i) {
      CHECK(shared[i].errors == whole[i].errors);
      CHECK(shared[i].errors_stderr == whole[i].errors_stderr);
      CHECK(shared[i].cone_exits == whole[i].cone_exits);
      CHECK(shared[i].paths == whole[i].paths);
    }
  }
  // A process other than the root (gather returns nothing there) returns no series.
  ncsde::path_sharing other = sequential_sharing(2);
  other.gather = [](const std::function<std::string()>& piece) {
    (void)piece();
    return std::optional<std::vector<std::string>>();
  };
  o.sharing = std::make_shared<const ncsde::path_sharing>(other);
  CHECK(ncsde::run_convergence(cp, o).empty());

  // The adaptive study likewise (gbm has a pathwise solution).
  ncsde::adaptive_convergence_options a;
  a.paths = 40;
  a.levels = 3;
  a.seed = 5;
  a.progress = ncsde::progress_mode::off;
  const auto& g = study("gbm");
  const auto adaptive_whole = g.run_adaptive(a);
  a.sharing = std::make_shared<const ncsde::path_sharing>(sequential_sharing(3));
  const auto adaptive_shared = g.run_adaptive(a);
  REQUIRE(adaptive_shared.size() == adaptive_whole.size());
  for (std::size_t i = 0; i < adaptive_whole.size(); ++i) {
    CHECK(adaptive_shared[i].errors == adaptive_whole[i].errors);
    CHECK(adaptive_shared[i].cost == adaptive_whole[i].cost);
  }
}

TEST_CASE("measured orders on the standard problems (small fixed-seed runs)" *
          doctest::test_suite("statistical")) {
  // Bands: strong ±0.1, weak ±0.2 around the theoretical order. The slopes' standard errors at
  // these path counts are < 0.03 (checked below; gbm's Milstein weak slope needs 4000 paths: 0.037
  // at 2000 with this seed, so that the band is at least 3 standard errors
  // wide and a wrong scheme, off by ≥ 0.5 in order, cannot pass); the default run's full-precision
  // study lives in the `validation` ctest.
  auto check_order = [](const convergence_series& r, double band) {
    CAPTURE(r.problem);
    CAPTURE(r.scheme);
    CAPTURE(ncsde::to_string(r.kind));
    CAPTURE(r.fit.slope);
    CHECK(std::abs(r.fit.slope - r.expected) <= band);
    CHECK(r.fit.slope_stderr < 0.03);
  };
  SUBCASE("gbm: EM strong 1/2, Milstein strong 1, EM and Milstein weak 1") {
    const auto rows = study("gbm").run(quick(4000));
    check_order(find(rows, "em", error_kind::strong), 0.1);
    check_order(find(rows, "milstein", error_kind::strong), 0.1);
    check_order(find(rows, "em", error_kind::weak), 0.2);
    check_order(find(rows, "milstein", error_kind::weak), 0.2);
  }
  SUBCASE("hadamard (commutative, k = 2): Milstein strong 1 with and without Lévy areas") {
    const auto rows = study("hadamard").run(quick(1000));
    check_order(find(rows, "em", error_kind::strong), 0.1);
    check_order(find(rows, "milstein", error_kind::strong), 0.1);
    check_order(find(rows, "milstein-commutative", error_kind::strong), 0.1);
    check_order(find(rows, "em", error_kind::weak), 0.2);
  }
  SUBCASE("noncommutative: Milstein 1, without Lévy areas 1/2") {
    const auto rows = study("noncommutative").run(quick(400));
    check_order(find(rows, "em", error_kind::strong), 0.1);
    check_order(find(rows, "milstein", error_kind::strong), 0.1);
    check_order(find(rows, "milstein-commutative", error_kind::strong), 0.1);
    check_order(find(rows, "em", error_kind::weak), 0.2);
  }
  SUBCASE("wishart (non-commutative, k = 4)") {
    const auto rows = study("wishart").run(quick(300));
    check_order(find(rows, "em", error_kind::strong), 0.1);
    check_order(find(rows, "milstein", error_kind::strong), 0.1);
    check_order(find(rows, "milstein-commutative", error_kind::strong), 0.1);
    check_order(find(rows, "em", error_kind::weak), 0.2);
  }
  SUBCASE("linear covariance (structured noise, k = 4): Milstein 1, EM weak 1") {
    convergence_options o = quick(200);
    o.schemes = {"milstein", "em"};
    const auto rows = study("linear-covariance").run(o);
    check_order(find(rows, "milstein", error_kind::strong), 0.1);
    check_order(find(rows, "em", error_kind::weak), 0.2);
  }
}

TEST_CASE("the martingale control and the coupled EM control estimate the same weak error" *
          doctest::test_suite("statistical")) {
  // Both estimators are unbiased for E f(V^EM_dt) − E f(V_T), computed on the same paths; their
  // difference at each level is within 5 (se₁ + se₂) (a bound on 5 standard deviations of the
  // difference whatever their correlation). The martingale control's standard error must be far
  // smaller: the coupled difference has variance O(dt) against the martingale estimator's O(dt²).
  convergence_options o = quick(3000);
  o.schemes = {"em"};
  o.strong = false;
  const auto mart = ncsde::run_convergence(noncommutative(true), o);
  const auto coupled = ncsde::run_convergence(noncommutative(false), o);
  REQUIRE(mart.size() == 1);
  REQUIRE(coupled.size() == 1);
  CHECK(coupled[0].paths == 3000);
  for (std::size_t l = 0; l < mart[0].errors.size(); ++l) {
    CAPTURE(l);
    CHECK(std::abs(mart[0].errors[l] - coupled[0].errors[l]) <=
          5 * (mart[0].errors_stderr[l] + coupled[0].errors_stderr[l]));
    CHECK(mart[0].errors_stderr[l] * 5 < coupled[0].errors_stderr[l]);
  }
  // The coupled estimator's extra paths (weak_paths) are used for EM's weak series only.
  o.weak_paths = 6000;
  const auto more = ncsde::run_convergence(noncommutative(false), o);
  CHECK(more[0].paths == 6000);
  // Its first 3000 paths are the same as before: the estimate moves by a fraction of its error bar.
  CHECK(std::abs(more[0].errors[0] - coupled[0].errors[0]) <= 5 * coupled[0].errors_stderr[0]);
}

TEST_CASE("Milstein weak errors are measured only against a pathwise exact solution") {
  convergence_options o = quick(50, 3);
  o.strong = false;
  o.schemes = {"milstein", "milstein-commutative"};
  CHECK(study("noncommutative").run(o).empty());
  const auto rows = study("gbm").run(o);
  CHECK(rows.size() == 2);
}

TEST_CASE("paths that blow up are counted and left out, never fatal") {
  // dX = 40 X dt: X_T ≈ e^{40} > 10^6 = the blow-up threshold of every scheme: every path of every
  // series fails, which the series report (and no error is left to average).
  const ncsde::analytic::gbm sde(ncsde::analytic::gbm::params{40.0, 0.1});
  ncsde::convergence_problem<ncsde::analytic::gbm> cp("exploding",
                                                      {sde, matrix::Constant(1, 1, 1.0), 1.0, 0.0});
  cp.levels = 3;
  cp.exact = [sde](const matrix& x0, const Eigen::Ref<const vector>& w, double t) {
    return sde.exact(x0, w, t);
  };
  cp.weak = ncsde::functional{"x", [](const matrix& v) { return v(0, 0); }};
  const auto rows = ncsde::run_convergence(cp, quick(4));
  REQUIRE_FALSE(rows.empty());
  for (const auto& row : rows) {
    CHECK(row.failed_paths == 4);
    CHECK(std::isnan(row.errors[0]));
    CHECK_FALSE(row.pass);
  }
  CHECK(ncsde::convergence_json(rows).find("\"failed_paths\": 4") != std::string::npos);
}

TEST_CASE("JSON and table output") {
  const auto rows = study("gbm").run(quick(200, 3));
  const nlohmann::json doc = nlohmann::json::parse(ncsde::convergence_json(rows));
  REQUIRE(doc.is_array());
  CHECK(doc.size() == rows.size());
  for (const auto& o : doc) {
    for (const char* field :
         {"problem", "scheme", "kind", "order", "stderr", "ci_low", "ci_high", "expected", "pass",
          "paths", "seed", "dts", "errors", "errors_stderr", "cone_exits", "reference"})
      CHECK_MESSAGE(o.contains(field), field);
    CHECK(o["problem"] == "gbm");
    CHECK(o["errors"].size() == 3);
    CHECK(o["dts"][0].get<double>() == 1.0 / 16);
    CHECK((o["kind"] == "strong" || o["kind"] == "weak"));
  }
  const std::string table = ncsde::convergence_table(rows);
  CHECK(table.find("problem") == 0);
  CHECK(table.find("95% CI") != std::string::npos);
  // One line per series after the header.
  CHECK(std::count(table.begin(), table.end(), '\n') == static_cast<long>(rows.size()) + 1);
}

namespace {

/// dX = (−X + ½ sin X) dt + σ dW on ℝ (1×1, euclidean): additive noise with a non-linear drift,
/// declared, so that every scheme's strong order is 1 (the fine-grid Milstein reference).
struct additive_sine {
  static constexpr ncsde::noise_class noise = ncsde::noise_class::additive;
  double sigma = 0.5;
  int noise_dimension(int) const { return 1; }
  void drift(const matrix& x, matrix& out, double) const {
    out = -x + 0.5 * x.array().sin().matrix();
  }
  void diffusion(const matrix& x, const vector& xi, matrix& out, double) const {
    out = matrix::Constant(x.rows(), x.cols(), sigma * xi(0));
  }
};

/// |slope − expected| within 5 of the fit's standard errors (a false alarm about once in 1.7
/// million runs if the fit were unbiased), the standard error small enough (< 0.03) that the band
/// (< 0.15) excludes an order off by ½, and `bias` for what is left of the higher-order terms at
/// the levels used (stated where it is used).
void check_measured(const convergence_series& r, double bias = 0.0) {
  CAPTURE(r.problem);
  CAPTURE(r.scheme);
  CAPTURE(ncsde::to_string(r.kind));
  MESSAGE(r.problem, " ", r.scheme, " ", ncsde::to_string(r.kind), ": ", r.fit.slope, " ± ",
          r.fit.slope_stderr, " (expected ", r.expected, ")");
  CHECK(r.failed_paths == 0);
  CHECK(r.fit.slope_stderr < 0.03);
  CHECK(std::abs(r.fit.slope - r.expected) <= 5 * r.fit.slope_stderr + bias);
}

}  // namespace

TEST_CASE("predictor-corrector: in the registry, in the default selection") {
  const std::size_t i = ncsde::find_scheme("predictor-corrector");
  static_assert(ncsde::builtin_schemes::index_of<ncsde::predictor_corrector<>> == 3);
  CHECK(i == 3);
  const ncsde::scheme_descriptor& d = ncsde::builtin_scheme_descriptors()[i];
  CHECK(d.strong_order(ncsde::noise_class::general) == 0.5);
  CHECK(d.strong_order(ncsde::noise_class::additive) == 1.0);
  CHECK(d.weak_order(ncsde::noise_class::general) == 1.0);
  CHECK(d.request.iterated == ncsde::iterated_terms::none);
  CHECK_FALSE(d.preserves_cone);
  // It is in the default selection.
  CHECK(std::find(convergence_options{}.schemes.begin(), convergence_options{}.schemes.end(),
                  "predictor-corrector") != convergence_options{}.schemes.end());
}

TEST_CASE("predictor-corrector: its measured orders" * doctest::test_suite("statistical")) {
  convergence_options o;
  SUBCASE("gbm: strong 1/2, weak 1") {
    // The weak series needs the most paths: the predictor-corrector's weak error on gbm is about
    // a third of EM's, against a coupled estimator of the same O(dt²) variance.
    o = quick(16000);
    o.schemes = {"predictor-corrector"};
    const auto rows = study("gbm").run(o);
    REQUIRE(rows.size() == 2);
    check_measured(find(rows, "predictor-corrector", error_kind::strong));
    check_measured(find(rows, "predictor-corrector", error_kind::weak));
  }
  SUBCASE("noncommutative (general noise): strong 1/2, weak 1") {
    o = quick(400);
    o.schemes = {"predictor-corrector"};
    const auto rows = study("noncommutative").run(o);
    REQUIRE(rows.size() == 2);
    check_measured(find(rows, "predictor-corrector", error_kind::strong));
    check_measured(find(rows, "predictor-corrector", error_kind::weak));
  }
  SUBCASE("additive noise: strong 1 for every scheme, as expected_order says") {
    ncsde::convergence_problem<additive_sine> cp(
        "additive-sine", {additive_sine{}, matrix::Constant(1, 1, 0.8), 1.0});
    cp.first_level = 3;
    cp.levels = 5;
    o = quick(1000);
    o.schemes = ncsde::scheme_names();
    o.weak = false;
    const auto rows = ncsde::run_convergence(cp, o);
    REQUIRE(rows.size() == ncsde::builtin_schemes::size);
    for (const convergence_series& r : rows) {
      CHECK(r.expected == 1.0);
      check_measured(r);
    }
  }
}

TEST_CASE("predictor-corrector's weak error: the EM-coupled martingale estimator is unbiased") {
  // gbm with and without weak_value: the coupled estimator f(X_dt) − Z_EM (martingale control of
  // the EM chain on the same path) against the one coupled to the exact solution, on the same
  // paths. Both are unbiased for E f(X_dt) − E f(X_T): their difference at each level is within
  // 5 (se₁ + se₂). The EM-coupled one has O(dt²) variance against O(dt): its standard error is
  // smaller at every level (≥ 3×, about 4× at the coarsest here), and the gap widens like
  // dt^{-1/2} (√8 ≈ 2.8 from the coarsest level to the finest; ≥ 2 is asked for).
  const ncsde::analytic::gbm sde(ncsde::analytic::gbm::params{0.5, 0.5});
  ncsde::convergence_problem<ncsde::analytic::gbm> cp("gbm",
                                                      {sde, matrix::Constant(1, 1, 1.0), 1.0});
  cp.commutative_noise = true;
  cp.first_level = 4;
  cp.levels = 4;
  cp.exact = [sde](const matrix& x0, const Eigen::Ref<const vector>& w, double t) {
    return sde.exact(x0, w, t);
  };
  cp.weak = ncsde::functional{"|V|_F^2", [](const matrix& v) { return v.squaredNorm(); }};
  cp.weak_exact = sde.second_moments(cp.prob.v0, 1.0).trace();
  convergence_options o = quick(4000);
  o.schemes = {"predictor-corrector"};
  o.strong = false;
  const auto exact_coupled = ncsde::run_convergence(cp, o);
  cp.weak_value = [sde](double t) {
    return std::function<double(const matrix&)>(
        sde.conditional_second_moment(matrix::Identity(1, 1), std::max(0.0, 1.0 - t)));
  };
  const auto em_coupled = ncsde::run_convergence(cp, o);
  REQUIRE(exact_coupled.size() == 1);
  REQUIRE(em_coupled.size() == 1);
  for (std::size_t l = 0; l < em_coupled[0].errors.size(); ++l) {
    CAPTURE(l);
    CHECK(std::abs(em_coupled[0].errors[l] - exact_coupled[0].errors[l]) <=
          5 * (em_coupled[0].errors_stderr[l] + exact_coupled[0].errors_stderr[l]));
    CHECK(em_coupled[0].errors_stderr[l] * 3 < exact_coupled[0].errors_stderr[l]);
  }
  auto ratio = [&](std::size_t l) {
    return exact_coupled[0].errors_stderr[l] / em_coupled[0].errors_stderr[l];
  };
  CHECK(ratio(em_coupled[0].errors.size() - 1) >= 2 * ratio(0));
}

TEST_CASE("a missed order is pre-asymptotic while the local slopes still move towards it") {
  // Errors c·dt^p with p rising from 0.4 towards 1 as dt shrinks (levels coarse to fine): the
  // local slopes move towards 1, the fitted slope over all levels misses it.
  const std::vector<double> dts{0.25, 0.125, 0.0625, 0.03125};
  const std::vector<double> slopes_in{0.4, 0.7, 0.9};
  std::vector<double> errors{1.0};
  for (std::size_t i = 0; i < slopes_in.size(); ++i)
    errors.push_back(errors.back() * std::pow(dts[i + 1] / dts[i], slopes_in[i]));
  const std::vector<double> slopes = ncsde::local_slopes(dts, errors);
  REQUIRE(slopes.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(slopes[i] == doctest::Approx(slopes_in[i]));
  CHECK(ncsde::is_pre_asymptotic(dts, errors, 1.0, 0.67, 0.05));
  // Within the band: a pass, not pre-asymptotic.
  CHECK_FALSE(ncsde::is_pre_asymptotic(dts, errors, 1.0, 0.97, 0.05));
  // Slopes moving away from the expected order (reversed): a failure.
  std::vector<double> away{1.0};
  for (std::size_t i = 0; i < slopes_in.size(); ++i)
    away.push_back(away.back() * std::pow(dts[i + 1] / dts[i], slopes_in[2 - i]));
  CHECK_FALSE(ncsde::is_pre_asymptotic(dts, away, 1.0, 0.67, 0.05));
  // Slopes that approach and then leave it again (noise, not a trend): a failure.
  std::vector<double> zigzag{1.0};
  for (const double p : {0.8, 1.03, 0.83, 0.96}) zigzag.push_back(zigzag.back() * std::pow(0.5, p));
  CHECK_FALSE(
      ncsde::is_pre_asymptotic({0.5, 0.25, 0.125, 0.0625, 0.03125}, zigzag, 1.0, 0.9, 0.05));
  // Too few levels, or an error that is not positive: no local trend to read.
  CHECK_FALSE(ncsde::is_pre_asymptotic({0.25, 0.125}, {1.0, 0.6}, 1.0, 0.7, 0.05));
  std::vector<double> zero = errors;
  zero[2] = 0.0;
  CHECK_FALSE(ncsde::is_pre_asymptotic(dts, zero, 1.0, 0.67, 0.05));

  // The table says so, and the JSON carries the flag and the slopes only then.
  ncsde::convergence_series s;
  s.problem = "p";
  s.scheme = "em";
  s.dts = dts;
  s.errors = errors;
  s.errors_stderr.assign(dts.size(), 0.01);
  s.expected = 1.0;
  s.tolerance = 0.05;
  s.fit.slope = 0.67;
  s.pre_asymptotic = true;
  const std::string table = ncsde::convergence_table({s});
  CHECK(table.find("pre-asymptotic: refine (local slopes 0.400 to 0.900, coarse to fine)") !=
        std::string::npos);
  CHECK(ncsde::convergence_json({s}).find("\"pre_asymptotic\"") != std::string::npos);
  s.pre_asymptotic = false;
  CHECK(ncsde::convergence_table({s}).find("FAIL (|order - expected| > 0.05)") !=
        std::string::npos);
  CHECK(ncsde::convergence_json({s}).find("pre_asymptotic") == std::string::npos);
}

namespace {

/// dX = (X − X³) dt + ½ X dW, a scalar SDE without closed-form moments or solution (1×1 state).
struct cubic_drift_sde {
  static constexpr ncsde::state_space space = ncsde::state_space::euclidean;
  int noise_dimension(int) const { return 1; }
  void drift(const matrix& v, matrix& out, double) const {
    out = v - v.cwiseProduct(v).cwiseProduct(v);
  }
  void diffusion(const matrix& v, const vector& xi, matrix& out, double) const {
    out = 0.5 * xi(0) * v;
  }
};

ncsde::convergence_problem<cubic_drift_sde> cubic_problem() {
  matrix v0(1, 1);
  v0(0, 0) = 0.5;
  ncsde::convergence_problem<cubic_drift_sde> cp("cubic", {cubic_drift_sde{}, v0, 1.0, 0.0});
  cp.weak = ncsde::functional("X^2", [](const matrix& v) { return v(0, 0) * v(0, 0); });
  cp.first_level = 4;  // dt = 1/16 … 1/256: the local slopes of EM's differences are ≈ 1 there
  cp.levels = 5;
  return cp;
}

}  // namespace

TEST_CASE("weak orders of a non-linear SDE from the coupled differences of successive levels" *
          doctest::test_suite("statistical")) {
  // No closed form: D_l = E f(X_l) − E f(X_{l+1}) on the same paths; its slope in dt is the weak
  // order. EM's differences have variance O(dt), so the run takes 40 000 paths (seed fixed): the
  // fitted order is checked within 3 of its standard errors of 1 (a 0.3% band under a normal fit
  // error), and the standard error below 0.1 (the study resolves the order at all).
  convergence_options o = quick(40000);
  o.strong = false;
  o.schemes = {"em"};
  const auto rows = ncsde::run_convergence(cubic_problem(), o);
  REQUIRE(rows.size() == 1);
  const convergence_series& em = rows.front();
  CHECK(em.reference.find("successive levels") != std::string::npos);
  CHECK(em.fit.slope_stderr < 0.1);
  CHECK(std::abs(em.fit.slope - 1.0) <= 3.0 * em.fit.slope_stderr);
  for (std::size_t l = 0; l < em.errors.size(); ++l)
    CHECK(em.errors[l] > 3.0 * em.errors_stderr[l]);  // every difference resolved
}

TEST_CASE("the coupled differences and the exact control measure the same weak order") {
  // gbm has a pathwise solution: its weak errors against it and the differences of successive
  // levels must give the same order within their standard errors (3σ of the difference).
  convergence_options o = quick(4000);
  o.strong = false;
  o.schemes = {"milstein"};
  const auto control = find(study("gbm").run(o), "milstein", error_kind::weak);
  o.weak_differences = true;
  const auto differences = find(study("gbm").run(o), "milstein", error_kind::weak);
  CHECK(differences.reference.find("successive levels") != std::string::npos);
  CHECK(control.reference == "exact");
  const double se = std::hypot(control.fit.slope_stderr, differences.fit.slope_stderr);
  CHECK(std::abs(control.fit.slope - differences.fit.slope) <= 3.0 * se);
}

TEST_CASE("a series whose errors are noise is labelled unresolved, not failed") {
  // The linear-covariance problem's EM weak error of its functional is far below the Monte Carlo
  // error at 50 paths: no level resolves it.
  convergence_options o = quick(50);
  o.strong = false;
  o.schemes = {"em"};
  o.weak_differences = true;
  const auto rows = study("linear-covariance").run(o);
  REQUIRE(rows.size() == 1);
  const convergence_series& r = rows.front();
  long long resolved = 0;
  for (std::size_t l = 0; l < r.errors.size(); ++l)
    resolved += r.errors[l] > 2.0 * r.errors_stderr[l];
  CHECK(r.unresolved == (!r.pass && resolved < 2));
  convergence_series s = r;
  s.pass = false;
  s.unresolved = true;
  CHECK(ncsde::convergence_table({s}).find("unresolved") != std::string::npos);
  CHECK(ncsde::convergence_json({s}).find("\"unresolved\": true") != std::string::npos);
}

TEST_CASE("weak orders of a non-linear SDE, the precise study (ctest convergence_weak_nonlinear)" *
          doctest::skip()) {
  // The unit test above at 7.5 times the paths and two finer levels (dt = 1/16 … 1/1024): EM's
  // order within the weak pass band ±0.05 of the strong studies, with a standard error below
  // 0.02. Measured: 1.040 ± 0.012 (and 1.038 ± 0.013 at 5·10⁵ paths), the next term of the weak
  // error (O(dt²)) still showing at that precision. Skipped in the unit suite (155 s on 2 cores);
  // the validation label runs it with --no-skip.
  auto cp = cubic_problem();
  cp.levels = 7;
  convergence_options o = quick(300000);
  o.strong = false;
  o.schemes = {"em"};
  const auto rows = ncsde::run_convergence(cp, o);
  REQUIRE(rows.size() == 1);
  const convergence_series& em = rows.front();
  MESSAGE("EM weak order " << em.fit.slope << " ± " << em.fit.slope_stderr);
  CHECK(em.fit.slope_stderr < 0.02);
  CHECK(std::abs(em.fit.slope - 1.0) <= 0.05);
}
