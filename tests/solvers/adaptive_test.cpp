/// Adaptive steps (integrate_options::control): the Brownian tree they read, pathwise convergence to the fine fixed-step solution on the same path,
/// converging explosion times, reproducibility, and the options' errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "ncsde/analytic.hpp"
#include "ncsde/brownian.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/ensemble_io.hpp"
#include "ncsde/error.hpp"
#include "ncsde/integrate.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"
#include "ncsde/steppers/milstein.hpp"
#include "support/mc_stats.hpp"

namespace {

using ncsde::matrix;
using ncsde::noise_increment;
using ncsde::random_stream;
using ncsde::step_control;
using ncsde::stream_brownian;
using ncsde::tree_brownian_source;
using ncsde::vector;

constexpr double eps = std::numeric_limits<double>::epsilon();

/// dX = X³ dt + σ X dW on 1×1 states (euclidean): from x0 > 0 the noiseless solution
/// x(t) = x0 / √(1 − 2 x0² t) explodes at τ = 1/(2 x0²).
struct cubic {
  double sigma = 0.0;
  int noise_dimension(int) const { return 1; }
  template <class M>
  void drift(const M& v, M& out, double) const {
    out = v.cwiseProduct(v).cwiseProduct(v);
  }
  template <class M, class V>
  void diffusion(const M& v, const V& xi, M& out, double) const {
    out = sigma * xi(0) * v;
  }
};

/// The exact GBM V_T = V0 exp((μ − σ²/2)T + σ W_T) on path `path`, W_T the sum of the base steps'
/// increments (what every piece of the Brownian tree sums to).
double gbm_exact(double v0, double mu, double sigma, double t_end, double dt, std::uint64_t seed,
                 std::uint64_t path) {
  const ncsde::step_grid grid(0.0, t_end, dt);
  stream_brownian source(random_stream(seed, path), 1);
  double w = 0.0;
  for (long long i = 0; i < grid.steps; ++i) {
    noise_increment inc;
    source.increment(static_cast<std::uint64_t>(i), grid.step_size(i), false, inc);
    w += inc.dw(0);
  }
  return v0 * std::exp((mu - 0.5 * sigma * sigma) * t_end + sigma * w);
}

}  // namespace

TEST_CASE("tree_brownian_source: the pieces of the Brownian tree at a fixed depth") {
  const random_stream s(3, 8);
  const double base = 0.4;
  const int depth = 3;
  tree_brownian_source tree(s, 2, base, depth);
  CHECK(tree.dt() == base / 8);
  stream_brownian root(s, 2);
  for (std::uint64_t step = 0; step < 3; ++step) {
    noise_increment whole;
    root.increment(step, base, true, whole);
    // The leaves sum to the step's increment; each carries iterated integrals of its own.
    vector sum = vector::Zero(2);
    for (std::uint64_t leaf = 0; leaf < 8; ++leaf) {
      noise_increment piece;
      tree.increment(step * 8 + leaf, base / 8, true, piece);
      CHECK(piece.dt == base / 8);
      CHECK(piece.has_iterated);
      sum += piece.dw;
    }
    CHECK((sum - whole.dw).cwiseAbs().maxCoeff() <=
          32 * eps * (1 + whole.dw.cwiseAbs().maxCoeff()));
  }
  // A leaf is the increment the engine's splits produce: the same bridge nodes, in the same order.
  noise_increment top, left, right, leaf;
  stream_brownian direct(s, 2);
  direct.increment(1, base, false, top);
  direct.split(top, 1, 1, false, left, right);  // depth 1
  noise_increment l2, r2;
  direct.split(right, 1, 3, false, l2, r2);  // depth 2: node 6, 7
  noise_increment l3, r3;
  direct.split(l2, 1, 6, false, l3, r3);                // depth 3: nodes 12, 13
  tree.increment(8 + (13 - 8), base / 8, false, leaf);  // step 1, leaf 5 = node 13
  CHECK(leaf.dw == r3.dw);
  // Any order gives the same pieces (the cache only saves work).
  noise_increment a, b;
  tree.increment(13, base / 8, false, a);
  tree_brownian_source fresh(s, 2, base, depth);
  fresh.increment(2, base / 8, false, b);
  fresh.increment(13, base / 8, false, b);
  CHECK(a.dw == b.dw);
  CHECK_THROWS_AS(tree.increment(0, base, false, a), ncsde::invalid_argument);
  CHECK_THROWS_AS(tree_brownian_source(s, 2, base, 31), ncsde::invalid_argument);
}

TEST_CASE(
    "adaptive steps: a controller that accepts every grid step is the fixed-step run to the bit") {
  // GBM with small σ and tolerance 1: every grid step changes V by far less than 1 + |V|.
  const ncsde::analytic::gbm sde({0.1, 0.05});
  const ncsde::problem prob{sde, matrix::Constant(1, 1, 1.0), 1.0};
  const ncsde::euler_maruyama<> em;
  ncsde::integrate_options fixed;
  fixed.dt = 0.01;
  for (const step_control c : {step_control::increment, step_control::doubling}) {
    ncsde::integrate_options adaptive = fixed;
    adaptive.control = c;
    adaptive.tolerance = 1.0;
    const auto a = ncsde::integrate(em, prob, fixed, 4, 2);
    const auto b = ncsde::integrate(em, prob, adaptive, 4, 2);
    CHECK(b.stepping.refinements == 0);
    CHECK(b.stepping.unresolved == 0);
    if (c == step_control::increment) {
      // Each grid step accepted whole: the same increments, the same arithmetic.
      CHECK(b.steps == a.steps);
      CHECK(b.v(0, 0) == a.v(0, 0));
      CHECK(b.stepping.deepest == 0);
    } else {
      // Doubling takes each grid step as its two bridge halves.
      CHECK(b.steps == 2 * a.steps);
      CHECK(b.stepping.deepest == 1);
    }
  }
}

TEST_CASE(
    "adaptive steps converge pathwise to the fine fixed-step solution on the same Brownian path") {
  // GBM dV = μV dt + σV dW (μ = 0.5, σ = 0.8), T = 1, largest step 0.1, 64 paths. The reference is
  // the fixed-step run with step 0.1/2^13 on tree_brownian_source (the same tree, read at depth 13)
  // and, independently, the exact solution from W_T. Errors are root mean squares over the paths.
  const double mu = 0.5, sigma = 0.8, t_end = 1.0, base = 0.1;
  const ncsde::analytic::gbm sde({mu, sigma});
  const ncsde::problem prob{sde, matrix::Constant(1, 1, 1.0), t_end};
  const ncsde::milstein_commutative<> scheme;  // scalar noise: no Lévy areas needed
  const int paths = 64;
  std::vector<double> fine(paths), exact(paths);
  ncsde::integrate_options fixed;
  fixed.dt = base / 8192;
  for (int p = 0; p < paths; ++p) {
    tree_brownian_source tree(random_stream(21, static_cast<std::uint64_t>(p)), 1, base, 13);
    fine[p] = ncsde::integrate(scheme, prob, fixed, tree).v(0, 0);
    exact[p] = gbm_exact(1.0, mu, sigma, t_end, base, 21, static_cast<std::uint64_t>(p));
  }
  std::vector<double> to_fine, to_exact, steps;
  for (const double tol : {1e-2, 1e-3, 1e-4}) {
    ncsde::integrate_options opt;
    opt.dt = base;
    opt.control = step_control::doubling;
    opt.tolerance = tol;
    double e_fine = 0.0, e_exact = 0.0, n_steps = 0.0;
    for (int p = 0; p < paths; ++p) {
      const auto r = ncsde::integrate(scheme, prob, opt, 21, static_cast<std::uint64_t>(p));
      CHECK(r.stepping.unresolved == 0);
      e_fine += std::pow(r.v(0, 0) - fine[p], 2);
      e_exact += std::pow(r.v(0, 0) - exact[p], 2);
      n_steps += static_cast<double>(r.steps);
    }
    to_fine.push_back(std::sqrt(e_fine / paths));
    to_exact.push_back(std::sqrt(e_exact / paths));
    steps.push_back(n_steps / paths);
    MESSAGE("tolerance " << tol << ": rms error to the fine solution " << to_fine.back()
                         << ", to the exact one " << to_exact.back() << ", " << steps.back()
                         << " steps per path");
  }
  // Each tenfold tightening cuts the error and costs steps; the tightest run is within 1e-3 of the
  // fine solution, which is itself within 1e-3 of the exact one.
  for (std::size_t i = 1; i < to_fine.size(); ++i) {
    CHECK(to_fine[i] < 0.7 * to_fine[i - 1]);
    CHECK(steps[i] > steps[i - 1]);
  }
  CHECK(to_fine.back() < 1e-3);
  // Strong order against cost: the slope of log(rms error to the exact solution) against
  // log(steps per path), for the adaptive runs and for fixed-step Milstein at the same mean number
  // of steps (each fixed run against the exact solution on its own increments). GBM is smooth, so
  // both come out near Milstein's order 1 per step; step doubling buys no accuracy here, which is
  // what the measurement is for (measured: adaptive 1.06, fixed 0.99).
  std::vector<double> fixed_error;
  for (const double n : steps) {
    ncsde::integrate_options f;
    f.dt = t_end / std::round(n);
    double e = 0.0;
    for (int p = 0; p < paths; ++p) {
      const auto r = ncsde::integrate(scheme, prob, f, 21, static_cast<std::uint64_t>(p));
      e += std::pow(
          r.v(0, 0) - gbm_exact(1.0, mu, sigma, t_end, f.dt, 21, static_cast<std::uint64_t>(p)), 2);
    }
    fixed_error.push_back(std::sqrt(e / paths));
  }
  auto slope = [&](const std::vector<double>& err) {
    // Least squares over the three finest settings.
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    const std::size_t first = err.size() - 3;
    for (std::size_t i = first; i < err.size(); ++i) {
      const double x = std::log(steps[i]), y = std::log(err[i]);
      sx += x, sy += y, sxx += x * x, sxy += x * y;
    }
    return -(3 * sxy - sx * sy) / (3 * sxx - sx * sx);
  };
  const double adaptive_order = slope(to_exact), fixed_order = slope(fixed_error);
  MESSAGE("strong order per step: adaptive doubling " << adaptive_order << ", fixed step "
                                                      << fixed_order);
  CHECK(adaptive_order > 0.6);
  CHECK(adaptive_order < 1.3);
  CHECK(fixed_order > 0.8);
  double fine_exact = 0.0;
  for (int p = 0; p < paths; ++p) fine_exact += std::pow(fine[p] - exact[p], 2);
  CHECK(std::sqrt(fine_exact / paths) < 1e-3);
}

TEST_CASE(
    "adaptive steps resolve an explosion: the blow-up time converges as the tolerance shrinks") {
  // x' = x³, x0 = 1: x reaches the threshold 1e6 at τ = (1 − 1e-12)/2. The increment controller
  // (largest step 0.1) keeps the growth per step at most 1 + tolerance, so EM's lag behind the
  // solution, and the error in the blow-up time, are first order in the tolerance (measured:
  // 0.0499, 0.0239, 0.0113, 0.0055 at tolerances 0.05 … 0.00625, 375 … 2794 steps).
  const cubic sde{0.0};
  const ncsde::problem prob{sde, matrix::Constant(1, 1, 1.0), 1.0};
  const ncsde::euler_maruyama<> em;
  const double tau = 0.5 * (1.0 - 1e-12);
  ncsde::integrate_options base;
  base.dt = 0.1;
  std::vector<double> errors;
  for (const double tol : {0.05, 0.025, 0.0125, 0.00625}) {
    ncsde::integrate_options opt = base;
    opt.control = step_control::increment;
    opt.tolerance = tol;
    const auto r = ncsde::integrate(em, prob, opt, 1, 0);
    REQUIRE(r.status == ncsde::path_status::blown_up);
    errors.push_back(std::abs(r.t_stop - tau));
    MESSAGE("tolerance " << tol << ": |t_stop - tau| = " << errors.back() << " in " << r.steps
                         << " steps, deepest halving " << r.stepping.deepest);
  }
  for (std::size_t i = 1; i < errors.size(); ++i) CHECK(errors[i] < 0.6 * errors[i - 1]);
  CHECK(errors.back() < 0.01);
}

TEST_CASE("adaptive ensembles: the same bits for any thread count and any cut of the path range") {
  const cubic sde{1.0};
  const ncsde::problem prob{sde, matrix::Constant(1, 1, 0.6), 2.0};
  const ncsde::euler_maruyama<> em;
  ncsde::integrate_options opt;
  opt.dt = 0.05;
  opt.control = step_control::increment;
  opt.tolerance = 0.05;
  ncsde::ensemble_options eo;
  eo.paths = 300;
  eo.seed = 9;
  eo.keep_paths = true;
  eo.progress = ncsde::progress_mode::off;
  eo.threads = 1;
  auto text = [](ncsde::ensemble_result r) {
    r.seconds = 0.0;
    r.threads = 0;
    std::ostringstream csv;
    ncsde::write_csv(r, csv);
    return ncsde::summary_json(r) + csv.str();
  };
  const ncsde::ensemble_result one = ncsde::run_ensemble(em, prob, opt, eo);
  CHECK(one.blown_up > 10);
  CHECK(one.completed > 10);
  CHECK(one.stepping.refinements > 0);
  CHECK(one.control == step_control::increment);
  eo.threads = 3;
  CHECK(text(ncsde::run_ensemble(em, prob, opt, eo)) == text(one));
  // Pieces [0, 100) and [100, 300) on different thread counts, merged through bytes.
  eo.threads = 2;
  std::vector<ncsde::ensemble_partial> parts;
  parts.push_back(ncsde::deserialize_ensemble_partial(
      ncsde::serialize(ncsde::run_ensemble_range(em, prob, opt, eo, {0, 100}))));
  eo.threads = 1;
  parts.push_back(ncsde::deserialize_ensemble_partial(
      ncsde::serialize(ncsde::run_ensemble_range(em, prob, opt, eo, {100, 300}))));
  CHECK(text(ncsde::finish_ensemble(ncsde::merge_partials(std::move(parts)), eo)) == text(one));
  // The JSON summary reports the controller; a fixed-step run's does not mention it.
  CHECK(ncsde::summary_json(one).find("\"step_control\"") != std::string::npos);
  ncsde::integrate_options fixed = opt;
  fixed.control = step_control::fixed;
  CHECK(ncsde::summary_json(ncsde::run_ensemble(em, prob, fixed, eo)).find("step_control") ==
        std::string::npos);
  // Another tolerance is another run: merging refuses it.
  ncsde::integrate_options other = opt;
  other.tolerance = 0.1;
  std::vector<ncsde::ensemble_partial> mixed;
  mixed.push_back(ncsde::run_ensemble_range(em, prob, opt, eo, {0, 100}));
  mixed.push_back(ncsde::run_ensemble_range(em, prob, other, eo, {100, 300}));
  CHECK_THROWS_WITH_AS(ncsde::merge_partials(std::move(mixed)), doctest::Contains("step control"),
                       ncsde::invalid_argument);
}

TEST_CASE("adaptive steps on the cone: checks and policies after every accepted piece") {
  // The Wishart-type GBM of analytic::gbm stays PSD; projections would show as counters.
  const ncsde::analytic::gbm sde({0.5, 0.5});
  matrix v0(2, 2);
  v0 << 1.0, 0.5, 0.5, 1.0;
  const ncsde::problem prob{sde, v0, 1.0};
  ncsde::integrate_options opt;
  opt.dt = 0.1;
  opt.control = step_control::doubling;
  opt.tolerance = 1e-3;
  ncsde::euler_maruyama<> em;
  const auto r = ncsde::integrate(em, prob, opt, 5, 1);
  CHECK(r.status == ncsde::path_status::completed);
  CHECK(r.steps > 20);
  CHECK(r.stepping.refinements > 0);
  // The stop condition is checked after every accepted piece: stopping at V11 > 1.2 happens
  // between grid times.
  opt.stop_condition = [](const matrix& v, double) { return v(0, 0) > 1.2; };
  const auto s = ncsde::integrate(em, prob, opt, 5, 1);
  if (s.status == ncsde::path_status::stopped) CHECK(s.v(0, 0) > 1.2);
}

TEST_CASE("adaptive steps: bad options are named errors") {
  const ncsde::analytic::gbm sde;
  const ncsde::problem prob{sde, matrix::Constant(1, 1, 1.0), 1.0};
  const ncsde::euler_maruyama<> em;
  ncsde::integrate_options opt;
  opt.control = step_control::increment;
  opt.tolerance = 0.0;
  CHECK_THROWS_WITH_AS(ncsde::integrate(em, prob, opt, 1, 0), doctest::Contains("tolerance"),
                       ncsde::invalid_argument);
  opt.tolerance = 0.1;
  opt.max_depth = 0;
  CHECK_THROWS_WITH_AS(ncsde::integrate(em, prob, opt, 1, 0), doctest::Contains("max_depth"),
                       ncsde::invalid_argument);
  opt.max_depth = 40;
  opt.policy = ncsde::pd_policy::refine;
  opt.refine_depth = 30;
  CHECK_THROWS_WITH_AS(ncsde::integrate(em, prob, opt, 1, 0), doctest::Contains("max_depth"),
                       ncsde::invalid_argument);
  CHECK(ncsde::parse_step_control("doubling") == step_control::doubling);
  CHECK_THROWS_WITH_AS(ncsde::parse_step_control("adaptive", "--step-control"),
                       doctest::Contains("--step-control"), ncsde::invalid_argument);
  // A source without a bridge cannot be halved.
  const auto grid =
      std::make_shared<const ncsde::brownian_grid>(random_stream(1, 0), 1, 1000, 1e-3, false);
  struct plain {
    ncsde::grid_brownian_source inner;
    int dimension() const { return inner.dimension(); }
    void increment(std::uint64_t i, double dt, bool it, noise_increment& out) {
      inner.increment(i, dt, it, out);
    }
  } source{ncsde::grid_brownian_source(grid, 10)};
  ncsde::integrate_options o2;
  o2.dt = 1e-2;
  o2.control = step_control::increment;
  CHECK_THROWS_WITH_AS(ncsde::integrate(em, prob, o2, source), doctest::Contains("bridge"),
                       ncsde::invalid_argument);
}

namespace {

/// V = X Xᵀ for dX = A X dt + B_1 X dW_1 + B_2 X dW_2 with [B_1, B_2] ≠ 0: non-commutative noise,
/// where Milstein needs the Lévy areas for its strong order 1.
ncsde::analytic::lifted_linear non_commuting_linear() {
  matrix a(2, 2), b1(2, 2), b2(2, 2);
  a << -0.2, 0.1, 0.0, -0.1;
  b1 << 0.5, 0.4, 0.0, 0.2;
  b2 << 0.1, 0.0, 0.6, -0.4;
  return ncsde::analytic::lifted_linear(a, {b1, b2});
}

}  // namespace

TEST_CASE(
    "adaptive Milstein on non-commutative noise converges pathwise at order 1 only with "
    "Chen-consistent areas") {
  // dV of non_commuting_linear, V0 = [[1, .3], [.3, 1]], T = 1, grid step 0.25, 48 paths, the
  // `doubling` controller at tolerances 1e-2 … 1e-4 (pieces down to 2^-10 of a grid step). The
  // reference is fixed-step Milstein at 0.25/2^10 on tree_brownian_source: the same Brownian tree
  // read at depth 10, with the leaves' areas. With area_depth = 10 every piece an adaptive run
  // takes carries the areas of that same path (Chen's relation down the tree), and the rms
  // difference falls like the steps' local error; with area_depth = 0 each piece's areas are a
  // fresh draw given its increment, so the adaptive run solves the SDE on another path's areas
  // and its difference from the reference stays several times larger. (Its order is not a clean
  // ½ here: fresh pieces take the grid step's series terms, 1 for k = 2 and h = 0.25, as do the
  // reference's leaves, so a fresh piece at depth 10 reads the very normals of its leaf; at the
  // finest tolerance most pieces are leaves. Measured 0.85 with those terms, 0.5 before.)
  const auto sde = non_commuting_linear();
  matrix v0(2, 2);
  v0 << 1.0, 0.3, 0.3, 1.0;
  const ncsde::problem prob{sde, v0, 1.0};
  const ncsde::milstein<> scheme;
  const int paths = 48, depth = 10;
  const double base = 0.25;
  std::vector<matrix> fine(paths);
  ncsde::integrate_options fixed;
  fixed.dt = std::ldexp(base, -depth);
  fixed.policy = ncsde::pd_policy::count;
  for (int p = 0; p < paths; ++p) {
    tree_brownian_source tree(random_stream(31, static_cast<std::uint64_t>(p)), 2, base, depth,
                              ncsde::levy_area_method::wiktorsson, depth);
    fine[p] = ncsde::integrate(scheme, prob, fixed, tree).v;
  }
  std::vector<double> consistent, fresh, steps;
  for (const double tol : {1e-2, 1e-3, 1e-4}) {
    double e_consistent = 0.0, e_fresh = 0.0, n_steps = 0.0;
    for (const int area_depth : {depth, 0}) {
      ncsde::integrate_options opt;
      opt.dt = base;
      opt.policy = ncsde::pd_policy::count;
      opt.control = step_control::doubling;
      opt.tolerance = tol;
      opt.max_depth = depth;
      opt.area_depth = area_depth;
      for (int p = 0; p < paths; ++p) {
        const auto r = ncsde::integrate(scheme, prob, opt, 31, static_cast<std::uint64_t>(p));
        const double e = (r.v - fine[p]).squaredNorm();
        if (area_depth == 0) {
          e_fresh += e;
        } else {
          e_consistent += e;
          n_steps += static_cast<double>(r.steps);
        }
      }
    }
    consistent.push_back(std::sqrt(e_consistent / paths));
    fresh.push_back(std::sqrt(e_fresh / paths));
    steps.push_back(n_steps / paths);
    MESSAGE("tolerance " << tol << ": " << steps.back() << " steps per path, rms difference from "
                         << "the fine solution " << consistent.back() << " (consistent areas), "
                         << fresh.back() << " (fresh areas)");
  }
  const auto order = [&](const std::vector<double>& e) {
    return std::log(e.front() / e.back()) / std::log(steps.back() / steps.front());
  };
  MESSAGE("order in steps per path: consistent areas " << order(consistent) << ", fresh areas "
                                                       << order(fresh));
  CHECK(order(consistent) > 0.8);
  CHECK(order(consistent) > order(fresh) + 0.15);
  CHECK(consistent.back() < 0.25 * fresh.back());
}

TEST_CASE("area_depth: automatic under refine, explicit otherwise, checked") {
  using ncsde::pd_policy;
  using ncsde::resolved_area_depth;
  using ncsde::state_space;
  ncsde::integrate_options o;
  o.refine_depth = 6;
  o.policy = pd_policy::refine;
  CHECK(resolved_area_depth(o, state_space::psd_cone, true) == 6);
  CHECK(resolved_area_depth(o, state_space::psd_cone, false) == 0);  // no areas read
  CHECK(resolved_area_depth(o, state_space::euclidean, true) == 0);  // no cone, no refine
  o.control = step_control::doubling;  // adaptive pieces are split before they are used
  CHECK(resolved_area_depth(o, state_space::psd_cone, true) == 0);
  o.control = step_control::fixed;
  o.policy = pd_policy::project;
  CHECK(resolved_area_depth(o, state_space::psd_cone, true) == 0);
  o.area_depth = 3;
  CHECK(resolved_area_depth(o, state_space::psd_cone, true) == 3);

  // Milstein under refine on a cone problem: the automatic depth is refine_depth, bit for bit.
  const auto sde = non_commuting_linear();
  matrix v0(2, 2);
  v0 << 1.0, 0.95, 0.95, 1.0;  // near the boundary: some steps leave the cone and are refined
  const ncsde::problem prob{sde, v0, 1.0};
  const ncsde::milstein<> scheme;
  ncsde::integrate_options opt;
  opt.dt = 0.05;
  opt.policy = pd_policy::refine;
  opt.refine_depth = 5;
  long long refined = 0;
  bool differs = false;
  for (std::uint64_t p = 0; p < 40; ++p) {
    const auto automatic = ncsde::integrate(scheme, prob, opt, 3, p);
    auto explicit_opt = opt;
    explicit_opt.area_depth = 5;
    const auto same = ncsde::integrate(scheme, prob, explicit_opt, 3, p);
    CHECK(automatic.v == same.v);
    explicit_opt.area_depth = 0;
    differs = differs || ncsde::integrate(scheme, prob, explicit_opt, 3, p).v != automatic.v;
    refined += automatic.pd.refined;
  }
  MESSAGE("steps refined in 40 paths: " << refined);
  CHECK(refined > 0);
  CHECK(differs);
  opt.area_depth = 17;
  CHECK_THROWS_WITH_AS(
      ncsde::integrate(scheme, prob, opt, 3, 0),
      doctest::Contains("area_depth must be in [0, 16] or -1 (automatic) (got 17)"),
      ncsde::invalid_argument);
}

TEST_CASE("work limits: an adaptive path that uses up max_path_steps ends exhausted, counted") {
  // dX = X³ dt from x0 = 1 explodes at τ = 1/2; the increment controller crosses from 1 to the
  // threshold 1e6 in about ln(1e6)/tolerance ≈ 276 pieces at tolerance 0.05, so 50 cannot do it.
  const ncsde::problem prob{cubic{}, matrix::Constant(1, 1, 1.0), 1.0};
  const ncsde::euler_maruyama<> em;
  ncsde::integrate_options opt;
  opt.dt = 0.1;
  opt.control = step_control::increment;
  opt.tolerance = 0.05;
  opt.max_path_steps = 50;
  const auto r = ncsde::integrate(em, prob, opt, 1, 0);
  CHECK(r.status == ncsde::path_status::exhausted);
  CHECK(ncsde::to_string(r.status) == "exhausted");
  CHECK(r.steps == 50);
  CHECK(r.t_stop > 0.0);
  CHECK(r.t_stop < 1.0);  // where its work ran out, before T: its fate is unknown
  CHECK(std::isfinite(r.v(0, 0)));
  CHECK(r.v(0, 0) < opt.blowup_threshold);
  opt.max_path_steps = ncsde::default_max_path_steps;
  CHECK(ncsde::integrate(em, prob, opt, 1, 0).status == ncsde::path_status::blown_up);

  // An ensemble shares max_run_steps out equally before the run: 8 paths, 400 steps, 50 each,
  // the same for any thread count.
  ncsde::ensemble_options eo;
  eo.paths = 8;
  eo.seed = 1;
  eo.max_run_steps = 400;
  eo.progress = ncsde::progress_mode::off;
  for (const int threads : {1, 2}) {
    eo.threads = threads;
    const auto e = ncsde::run_ensemble(em, prob, opt, eo);
    CHECK(e.exhausted == 8);
    CHECK(e.blown_up == 0);
    CHECK(e.completed == 0);
    CHECK(e.steps == 400);
    CHECK(ncsde::summary_table(e).find("exhausted 8") != std::string::npos);
    CHECK(ncsde::summary_json(e).find("\"exhausted\": 8") != std::string::npos);
  }
  eo.max_run_steps = 7;
  CHECK_THROWS_WITH_AS(ncsde::run_ensemble(em, prob, opt, eo),
                       doctest::Contains("max_run_steps = 7 is less than one step"),
                       ncsde::invalid_argument);
}

TEST_CASE("work limits: refused up front, and checked with fixed steps too") {
  const ncsde::problem prob{cubic{}, matrix::Constant(1, 1, 1.0), 0.4};
  const ncsde::euler_maruyama<> em;
  ncsde::integrate_options opt;
  opt.dt = 0.1;
  // Values that fixed steps ignore are refused rather than ignored.
  opt.tolerance = -5;
  CHECK_THROWS_WITH_AS(ncsde::integrate(em, prob, opt, 1, 0),
                       doctest::Contains("tolerance must be in [1e-12, 1]"),
                       ncsde::invalid_argument);
  opt.tolerance = 0.05;
  opt.max_depth = 1000000;
  CHECK_THROWS_WITH_AS(ncsde::integrate(em, prob, opt, 1, 0),
                       doctest::Contains("max_depth must be in [1, 50] (got 1000000)"),
                       ncsde::invalid_argument);
  opt.max_depth = 40;
  // A fixed grid longer than the limit.
  opt.max_path_steps = 3;
  CHECK_THROWS_WITH_AS(ncsde::integrate(em, prob, opt, 1, 0),
                       doctest::Contains("4 steps per path, more than the work limit "
                                         "max_path_steps = 3"),
                       ncsde::invalid_argument);
  opt.max_path_steps = ncsde::default_max_path_steps;
  opt.control = step_control::doubling;
  // Below the round-off floor.
  opt.tolerance = 1e-300;
  CHECK_THROWS_WITH_AS(ncsde::integrate(em, prob, opt, 1, 0), doctest::Contains("(got 1e-300)"),
                       ncsde::invalid_argument);
  // Above it, but the drift bound at x0 = 1 (|b| = 1) asks for steps of 2e-11: 2e10 per path.
  opt.tolerance = 1e-11;
  CHECK_THROWS_WITH_AS(ncsde::integrate(em, prob, opt, 1, 0),
                       doctest::Contains("tolerance = 1e-11 is unattainable within the work "
                                         "limit max_path_steps = 1000000000"),
                       ncsde::invalid_argument);
  // A tighter limit makes a looser tolerance unattainable too (0.4 / 2e-8 = 2e7 steps > 1).
  opt.tolerance = 1e-8;
  opt.max_path_steps = 1;
  CHECK_THROWS_WITH_AS(ncsde::integrate(em, prob, opt, 1, 0), doctest::Contains("unattainable"),
                       ncsde::invalid_argument);
}
