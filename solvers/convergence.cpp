#include "ncsde/convergence.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <utility>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ncsde/analytic.hpp"
#include "report_field_json.hpp"

namespace ncsde {

std::string_view to_string(error_kind k) { return k == error_kind::strong ? "strong" : "weak"; }

std::string_view to_string(noise_class c) {
  switch (c) {
    case noise_class::general:
      return "general";
    case noise_class::commutative:
      return "commutative";
    case noise_class::additive:
      return "additive";
  }
  return "?";
}

double expected_order(const scheme_descriptor& scheme, error_kind k, noise_class noise) {
  return k == error_kind::strong ? scheme.strong_order(noise) : scheme.weak_order(noise);
}

double expected_order(std::string_view scheme, error_kind k, noise_class noise) {
  return expected_order(scheme_descriptor_of(scheme), k, noise);
}

double expected_order(std::string_view scheme, error_kind k, bool commutative_noise) {
  return expected_order(scheme, k,
                        commutative_noise ? noise_class::commutative : noise_class::general);
}

strong_error_measure component_error(int a, int b) {
  if (a < 0) throw_invalid_argument("component_error", "a", a, ">= 0 (indices are 0-based)");
  if (b < 0) throw_invalid_argument("component_error", "b", b, ">= 0 (indices are 0-based)");
  return {fmt::format("|X{}{} - ref|", a + 1, b + 1), [a, b](const matrix& x, const matrix& ref) {
            if (a >= x.rows() || b >= x.cols())
              throw invalid_argument(fmt::format(
                  "component_error({}, {}): the entry is outside a {}×{} state (0-based)", a, b,
                  x.rows(), x.cols()));
            return std::abs(x(a, b) - ref(a, b));
          }};
}

strong_error_measure functional_error(functional f) {
  if (!f.f)
    throw_invalid("functional_error", fmt::format("functional '{}' has no function", f.name));
  std::string name = fmt::format("|{} - ref|", f.name);
  return {std::move(name), [g = std::move(f.f)](const matrix& x, const matrix& ref) {
            return std::abs(g(x) - g(ref));
          }};
}

namespace detail {

bool run_shared(const path_sharing& sharing, long long total, long long block_size,
                const std::function<void(path_range)>& run, const std::vector<path_slots>& slots) {
  if (!sharing.mine || !sharing.gather)
    throw_invalid_argument("convergence", "sharing", "incomplete", "both mine and gather set");
  // A share's bytes: its range, then for each slot array the slots of the range's paths in it.
  auto cut = [](const path_slots& s, path_range r) {
    return path_range{std::max(r.first, s.first), std::min(r.last, s.last)};
  };
  const std::optional<std::vector<std::string>> pieces = sharing.gather([&] {
    const path_range mine = sharing.mine(total, block_size);
    run(mine);
    std::string bytes(2 * sizeof(long long), '\0');
    std::memcpy(bytes.data(), &mine.first, sizeof(long long));
    std::memcpy(bytes.data() + sizeof(long long), &mine.last, sizeof(long long));
    for (const path_slots& s : slots) {
      const path_range c = cut(s, mine);
      if (c.empty()) continue;
      const char* from = static_cast<const char*>(s.data) +
                         static_cast<std::size_t>(c.first - s.first) * s.bytes_per_path;
      bytes.append(from, static_cast<std::size_t>(c.size()) * s.bytes_per_path);
    }
    return bytes;
  });
  if (!pieces) return false;
  for (const std::string& bytes : *pieces) {
    path_range r;
    if (bytes.size() < 2 * sizeof(long long))
      throw_invalid_argument("convergence", "share", bytes.size(), "a range header");
    std::memcpy(&r.first, bytes.data(), sizeof(long long));
    std::memcpy(&r.last, bytes.data() + sizeof(long long), sizeof(long long));
    std::size_t at = 2 * sizeof(long long);
    for (const path_slots& s : slots) {
      const path_range c = cut(s, r);
      if (c.empty()) continue;
      const std::size_t n = static_cast<std::size_t>(c.size()) * s.bytes_per_path;
      if (bytes.size() < at + n)
        throw_invalid_argument("convergence", "share", bytes.size(),
                               fmt::format("the slots of paths [{}, {})", r.first, r.last));
      std::memcpy(static_cast<char*>(s.data) +
                      static_cast<std::size_t>(c.first - s.first) * s.bytes_per_path,
                  bytes.data() + at, n);
      at += n;
    }
  }
  return true;
}

linear_fit fit_log_errors(const std::vector<double>& x, const std::vector<double>& errors,
                          const std::vector<double>& errors_stderr) {
  std::vector<double> y, sigma;
  bool positive = true, weighted = true;
  for (std::size_t l = 0; l < errors.size(); ++l) {
    const double e = errors[l];
    const double se = errors_stderr[l];
    if (!(e > 0) || !std::isfinite(e)) positive = false;
    if (!(se > 0) || !std::isfinite(se)) weighted = false;
    y.push_back(std::log(e));
    sigma.push_back(se / e);
  }
  if (positive) return weighted ? fit_line_weighted(x, y, sigma) : fit_line(x, y);
  linear_fit fit;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  fit.slope = fit.slope_stderr = fit.ci_low = fit.ci_high = fit.intercept = nan;
  fit.points = static_cast<int>(errors.size());
  return fit;
}

convergence_plan make_convergence_plan(const problem_facts& problem,
                                       const convergence_options& opt) {
  const std::string& name = problem.name;
  const int first_level = problem.first_level, levels = problem.levels;
  const long long paths = problem.paths, weak_paths = problem.weak_paths;
  const int reference_ratio = problem.reference_ratio, control_ratio = problem.control_ratio;
  const bool exact = problem.exact, has_euler_weak = problem.euler_weak;
  const bool has_weak_functional = problem.weak_functional, has_weak_value = problem.weak_value;
  const noise_class noise = problem.noise;
  const double t0 = problem.t0, t_end = problem.t_end;
  const std::string where = "convergence (" + name + ")";
  convergence_plan plan;
  plan.derivative = opt.derivative;
  if (opt.paths < 0 || opt.paths == 1)
    throw_invalid_argument(where, "paths", opt.paths, ">= 2 (or 0 for the problem's default)");
  plan.paths = opt.paths == 0 ? paths : opt.paths;
  if (plan.paths < 2) throw_invalid_argument(where, "default paths", plan.paths, ">= 2");
  if (opt.weak_paths < 0 || opt.weak_paths == 1)
    throw_invalid_argument(where, "weak paths", opt.weak_paths, ">= 2 (or 0 for the default)");
  const long long requested_weak =
      opt.weak_paths != 0 ? opt.weak_paths : (opt.paths != 0 ? opt.paths : weak_paths);
  if (opt.levels != 0 && (opt.levels < 3 || opt.levels > 16))
    throw_invalid_argument(where, "levels", opt.levels,
                           "in [3, 16] (or 0 for the problem's default)");
  plan.levels = opt.levels == 0 ? levels : opt.levels;
  if (plan.levels < 3 || plan.levels > 16)
    throw_invalid_argument(where, "default levels", plan.levels, "in [3, 16]");
  if (opt.first_level < -1 || opt.first_level > 20)
    throw_invalid_argument(where, "first level", opt.first_level,
                           "in [0, 20] (or -1 for the default)");
  plan.first_level = opt.first_level >= 0 ? opt.first_level : first_level;
  if (plan.first_level < 0 || plan.first_level > 20)
    throw_invalid_argument(where, "default first level", plan.first_level, "in [0, 20]");
  if (opt.threads < 0) throw_invalid_argument(where, "threads", opt.threads, ">= 0 (0: all cores)");
  plan.threads = resolve_threads(opt.threads);
  if (!(opt.strong_tolerance > 0))
    throw_invalid_argument(where, "strong tolerance", opt.strong_tolerance, "> 0");
  if (!(opt.weak_tolerance > 0))
    throw_invalid_argument(where, "weak tolerance", opt.weak_tolerance, "> 0");
  for (const std::string& name : opt.schemes) {
    const std::size_t s = find_scheme(name, where + ": scheme");
    if (std::find(plan.schemes.begin(), plan.schemes.end(), s) == plan.schemes.end())
      plan.schemes.push_back(s);
  }
  if (plan.schemes.empty()) throw_invalid(where, "no scheme selected");
  if (!opt.strong && !opt.weak) throw_invalid(where, "neither strong nor weak errors selected");
  plan.strong = opt.strong;
  plan.weak = opt.weak;
  if (plan.weak && !has_weak_functional)
    throw_invalid(where, "weak errors need a weak functional f");
  // Without the closed forms of the controls (or when asked), the weak series are coupled
  // differences of successive levels, for every scheme.
  plan.differences =
      plan.weak && (opt.weak_differences || (!exact && !has_euler_weak && !has_weak_value));
  plan.martingale = plan.weak && has_weak_value && !plan.differences;
  // Weak series: EM (the controls' scheme) always; when the problem has weak_value, EM uses the
  // martingale control and the schemes of the increments only (as EM) couple to it, on every
  // problem; every other scheme only against a pathwise exact solution. Every weak series without
  // the martingale control couples to the control Y, and those whose estimator then has O(dt)
  // variance (strong order < 1 on this noise) get the extended paths.
  for (const std::size_t s : plan.schemes) {
    const bool coupled =
        plan.martingale && builtin_schemes::descriptors[s].request.iterated == iterated_terms::none;
    plan.has_weak.push_back(plan.weak &&
                            (plan.differences || exact || s == control_scheme || coupled));
    plan.martingale_weak.push_back(plan.has_weak.back() && coupled);
  }
  for (std::size_t s = 0; s < plan.schemes.size(); ++s) {
    if (!plan.has_weak[s] || plan.martingale_weak[s]) continue;
    const scheme_descriptor& d = builtin_schemes::descriptors[plan.schemes[s]];
    plan.control = !plan.differences;
    if (expected_order(d, error_kind::strong, noise) < 1.0) {
      plan.extended.push_back(static_cast<int>(s));
      if (d.request.needs_iterated_integrals()) plan.extended_iterated = true;
    }
  }
  if (plan.control && !exact && !has_euler_weak)
    throw_invalid(
        where,
        "weak errors without a pathwise exact solution need the exact Euler–Maruyama "
        "expectation E f(V_n) (euler_weak) for the control variate, or weak_value for the "
        "martingale control");
  plan.weak_paths = plan.extended.empty() ? plan.paths : std::max(plan.paths, requested_weak);
  plan.exact = exact;
  if (!exact && reference_ratio < 1)
    throw_invalid_argument(where, "reference_ratio", reference_ratio, ">= 1");
  if (!exact && (control_ratio < 1 || reference_ratio % control_ratio != 0))
    throw_invalid_argument(where, "control_ratio", control_ratio,
                           fmt::format("a divisor of reference_ratio = {}", reference_ratio));
  plan.control_ratio = exact ? 1 : reference_ratio / control_ratio;
  const int top = plan.first_level + plan.levels - 1;
  const long long ratio = exact ? 1 : reference_ratio;
  if (top > 24 || (1LL << top) > (1LL << 24) / ratio)
    throw_invalid_argument(where, "fine steps", fmt::format("2^{} x {}", top, ratio),
                           "<= 2^24 (fewer levels)");
  plan.n_fine = (1LL << top) * ratio;
  plan.span = t_end - t0;
  if (!(plan.span > 0) || !std::isfinite(plan.span))
    throw_invalid_argument(where, "T - t0", plan.span, "> 0 and finite");
  // Iterated integrals: for a scheme asking for them that runs (it has a series), and for the
  // reference.
  bool iterated_runs = false;
  for (std::size_t s = 0; s < plan.schemes.size(); ++s)
    if (builtin_schemes::descriptors[plan.schemes[s]].request.needs_iterated_integrals() &&
        (plan.strong || plan.has_weak[s]))
      iterated_runs = true;
  plan.iterated = iterated_runs || (!exact && plan.strong);
  plan.seed = opt.seed;
  return plan;
}

std::vector<convergence_series> summarize_convergence(const problem_facts& problem,
                                                      const convergence_plan& plan,
                                                      const convergence_values& v,
                                                      const convergence_options& opt,
                                                      double seconds) {
  const std::string& name = problem.name;
  const noise_class noise = problem.noise;
  const std::vector<double>& values = v.values;
  const std::vector<double>& extended = v.extended;
  const std::vector<long long>& exits = v.exits;
  const std::vector<long long>& extended_exits = v.extended_exits;
  const std::vector<double>& weak_offsets = v.weak_offsets;
  const std::string& error_measure = v.error_measure;
  const std::string& reference = v.reference;
  const std::string& functional_name = v.functional_name;
  const int per_path = plan.values_per_path();
  const int per_extended = plan.extended_values_per_path();
  const std::size_t ns = plan.schemes.size();
  std::vector<convergence_series> out;
  for (const error_kind kind : {error_kind::strong, error_kind::weak}) {
    if ((kind == error_kind::strong && !plan.strong) || (kind == error_kind::weak && !plan.weak))
      continue;
    const int kind_index = kind == error_kind::strong ? 0 : 1;
    for (std::size_t s = 0; s < ns; ++s) {
      if (kind == error_kind::weak && !plan.has_weak[s]) continue;
      // Extended weak series: paths [0, paths) from the full pass, then [paths, weak_paths).
      const auto ext = std::find(plan.extended.begin(), plan.extended.end(), static_cast<int>(s));
      const bool extended_series = kind == error_kind::weak && ext != plan.extended.end();
      const long long paths = extended_series ? plan.weak_paths : plan.paths;
      convergence_series r;
      r.problem = name;
      r.scheme = std::string(builtin_schemes::descriptors[plan.schemes[s]].name);
      r.kind = kind;
      r.paths = paths;
      r.seed = plan.seed;
      r.reference = reference;
      if (kind == error_kind::weak) r.functional = functional_name;
      r.seconds = seconds;
      if (kind == error_kind::strong) r.error_measure = error_measure;
      const std::size_t ext_index =
          extended_series ? static_cast<std::size_t>(ext - plan.extended.begin()) : 0;
      for (long long p = 0; p < plan.paths; ++p)
        r.cone_exits += exits[static_cast<std::size_t>(p) * ns + s];
      if (extended_series)
        for (long long p = plan.paths; p < paths; ++p)
          r.cone_exits +=
              extended_exits[static_cast<std::size_t>(p - plan.paths) * plan.extended.size() +
                             ext_index];
      auto value = [&](long long p, int l) {
        const std::size_t offset =
            (s * static_cast<std::size_t>(plan.levels) + static_cast<std::size_t>(l)) * 2 +
            static_cast<std::size_t>(kind_index);
        return p < plan.paths
                   ? values[static_cast<std::size_t>(p) * static_cast<std::size_t>(per_path) +
                            offset]
                   : extended[static_cast<std::size_t>(p - plan.paths) *
                                  static_cast<std::size_t>(per_extended) +
                              ext_index * static_cast<std::size_t>(plan.levels) +
                              static_cast<std::size_t>(l)];
      };
      // A path whose run at some level (or whose reference) did not reach T has NaN values: it is
      // left out of every level of this series, so that all levels average over the same paths.
      std::vector<char> included(static_cast<std::size_t>(paths), 1);
      for (long long p = 0; p < paths; ++p)
        for (int l = 0; l < plan.levels; ++l)
          if (std::isnan(value(p, l))) {
            included[static_cast<std::size_t>(p)] = 0;
            ++r.failed_paths;
            break;
          }
      const double n = static_cast<double>(paths - r.failed_paths);
      // Coupled differences (plan.differences): the samples of level l are f(X_l) − f(X_{l+1}) of
      // one path, for every level but the finest.
      const bool differences = kind == error_kind::weak && plan.differences;
      if (differences) r.reference = "successive levels: E f(X_dt) - E f(X_dt/2) on the same paths";
      auto sample = [&](long long p, int l) {
        return differences ? value(p, l) - value(p, l + 1) : value(p, l);
      };
      for (int l = 0; l < plan.levels - (differences ? 1 : 0); ++l) {
        // Two passes in path order: the same sums whatever the number of threads.
        double sum = 0.0;
        for (long long p = 0; p < paths; ++p)
          if (included[static_cast<std::size_t>(p)]) sum += sample(p, l);
        const double mean = sum / n;
        double ss = 0.0;
        for (long long p = 0; p < paths; ++p)
          if (included[static_cast<std::size_t>(p)]) {
            const double d = sample(p, l) - mean;
            ss += d * d;
          }
        r.dts.push_back(plan.span / static_cast<double>(1LL << (plan.first_level + l)));
        r.errors.push_back(kind == error_kind::strong ? mean : std::abs(mean + weak_offsets[s]));
        r.errors_stderr.push_back(std::sqrt(ss / (n - 1) / n));
      }
      std::vector<double> x;
      for (const double dt : r.dts) x.push_back(std::log(dt));
      r.fit = fit_log_errors(x, r.errors, r.errors_stderr);
      r.expected = expected_order(builtin_schemes::descriptors[plan.schemes[s]], kind, noise);
      r.tolerance = kind == error_kind::strong ? opt.strong_tolerance : opt.weak_tolerance;
      r.pass = std::abs(r.fit.slope - r.expected) <= r.tolerance;
      r.pre_asymptotic = is_pre_asymptotic(r.dts, r.errors, r.expected, r.fit.slope, r.tolerance);
      long long resolved = 0;
      for (std::size_t l = 0; l < r.errors.size(); ++l)
        if (r.errors[l] > 2.0 * r.errors_stderr[l]) ++resolved;
      r.unresolved = !r.pass && resolved < 2;
      out.push_back(std::move(r));
    }
  }
  return out;
}

adaptive_plan make_adaptive_plan(const std::string& name, double t0, double t_end, int first_level,
                                 int levels, long long paths, double default_tolerance, bool exact,
                                 bool has_weak_functional,
                                 const adaptive_convergence_options& opt) {
  const std::string where = "adaptive convergence (" + name + ")";
  if (!exact)
    throw_invalid(where,
                  "the problem has no pathwise exact solution X(W_T): adaptive errors are measured "
                  "against it (problems with one: gbm, hadamard, matrix-gbm)");
  adaptive_plan plan;
  plan.scheme = find_scheme(opt.scheme, where + ": scheme");
  if (opt.control == step_control::fixed)
    throw_invalid_argument(where, "step control", to_string(opt.control),
                           "increment or doubling (the fixed ladder runs beside them anyway)");
  plan.control = opt.control;
  const double tol0 = opt.tolerance == 0.0 ? default_tolerance : opt.tolerance;
  if (!(tol0 > 0) || !(tol0 <= 1))
    throw_invalid_argument(where, "tolerance", tol0, "in (0, 1] (or 0 for the problem's default)");
  if (opt.levels < 3 || opt.levels > 16)
    throw_invalid_argument(where, "levels", opt.levels, "in [3, 16]");
  for (int l = 0; l < opt.levels; ++l) plan.tolerances.push_back(std::ldexp(tol0, -l));
  if (!(plan.tolerances.back() >= min_tolerance))
    throw_invalid_argument(where, "tolerance", tol0,
                           fmt::format("such that the finest tolerance tol0/2^(levels - 1) = {:g} "
                                       "is >= {:g} (below it the controllers measure round-off)",
                                       plan.tolerances.back(), min_tolerance));
  if (opt.max_depth < 1 || opt.max_depth > 50)
    throw_invalid_argument(where, "max depth", opt.max_depth, "in [1, 50]");
  plan.max_depth = opt.max_depth;
  if (opt.first_level < -1 || opt.first_level > 20)
    throw_invalid_argument(where, "first level", opt.first_level,
                           "in [0, 20] (or -1 for the problem's default)");
  plan.first_level = opt.first_level >= 0 ? opt.first_level : first_level;
  if (opt.fixed_levels != 0 && (opt.fixed_levels < 2 || opt.fixed_levels > 16))
    throw_invalid_argument(where, "fixed levels", opt.fixed_levels,
                           "in [2, 16] (or 0 for the problem's levels)");
  // The problem's ladder and one finer level: adaptive costs at the finest tolerances reach past
  // the problem's finest step.
  plan.fixed_levels = opt.fixed_levels != 0 ? opt.fixed_levels : levels + 1;
  if (plan.first_level + plan.fixed_levels - 1 > 24)
    throw_invalid_argument(where, "fixed steps",
                           fmt::format("2^{}", plan.first_level + plan.fixed_levels - 1),
                           "<= 2^24 (fewer fixed levels)");
  if (opt.paths < 0 || opt.paths == 1)
    throw_invalid_argument(where, "paths", opt.paths, ">= 2 (or 0 for the problem's default)");
  plan.paths = opt.paths == 0 ? paths : opt.paths;
  if (opt.threads < 0) throw_invalid_argument(where, "threads", opt.threads, ">= 0 (0: all cores)");
  plan.threads = resolve_threads(opt.threads);
  if (!opt.strong && !opt.weak) throw_invalid(where, "neither strong nor weak errors selected");
  if (opt.weak && !has_weak_functional)
    throw_invalid(where, "weak errors need a weak functional f");
  plan.strong = opt.strong;
  plan.weak = opt.weak;
  plan.span = t_end - t0;
  if (!(plan.span > 0) || !std::isfinite(plan.span))
    throw_invalid_argument(where, "T - t0", plan.span, "> 0 and finite");
  plan.grid_steps = 1LL << plan.first_level;
  plan.grid_dt = plan.span / static_cast<double>(plan.grid_steps);
  plan.seed = opt.seed;
  plan.derivative = opt.derivative;
  return plan;
}

namespace {

/// log error at log cost `x` read off the fixed series (xs ascending): linear between the two
/// levels around x, the fitted line outside them; `outside` tells which.
double interpolate_log(const std::vector<double>& xs, const std::vector<double>& ys,
                       const linear_fit& fit, double x, bool& outside) {
  outside = x < xs.front() || x > xs.back();
  if (outside) return fit.intercept - fit.slope * x;  // the fit is in log(1/cost) = −x
  std::size_t i = 1;
  while (i + 1 < xs.size() && xs[i] < x) ++i;
  const double w = (x - xs[i - 1]) / (xs[i] - xs[i - 1]);
  return (1 - w) * ys[i - 1] + w * ys[i];
}

}  // namespace

std::vector<adaptive_convergence_series> summarize_adaptive(
    const std::string& name, noise_class noise, const adaptive_plan& plan,
    const std::vector<double>& values, const std::string& error_measure,
    const std::string& functional_name, double seconds) {
  const int levels = plan.levels();
  const std::size_t per_path = static_cast<std::size_t>(plan.values_per_path());
  auto at = [&](long long p, int offset) {
    return values[static_cast<std::size_t>(p) * per_path + static_cast<std::size_t>(offset)];
  };
  // A path with a run that did not reach T (NaN errors) is left out of every level and of the fixed
  // series, so that all of them average over the same paths.
  std::vector<char> included(static_cast<std::size_t>(plan.paths), 1);
  long long failed = 0;
  for (long long p = 0; p < plan.paths; ++p) {
    bool ok = true;
    for (int l = 0; l < levels; ++l) ok = ok && !std::isnan(at(p, 5 * l));
    for (int d = 0; d < plan.fixed_levels; ++d) ok = ok && !std::isnan(at(p, 5 * levels + 2 * d));
    if (!ok) {
      included[static_cast<std::size_t>(p)] = 0;
      ++failed;
    }
  }
  const double n = static_cast<double>(plan.paths - failed);
  // Mean and its standard error over the included paths, two passes in path order.
  auto mean_stderr = [&](int offset) {
    double sum = 0.0;
    for (long long p = 0; p < plan.paths; ++p)
      if (included[static_cast<std::size_t>(p)]) sum += at(p, offset);
    const double mean = sum / n;
    double ss = 0.0;
    for (long long p = 0; p < plan.paths; ++p)
      if (included[static_cast<std::size_t>(p)]) {
        const double d = at(p, offset) - mean;
        ss += d * d;
      }
    return std::pair<double, double>{mean, std::sqrt(ss / (n - 1) / n)};
  };
  long long unresolved = 0;
  int deepest = 0;
  for (long long p = 0; p < plan.paths; ++p)
    for (int l = 0; l < levels; ++l) {
      unresolved += static_cast<long long>(at(p, 5 * l + 3));
      deepest = std::max(deepest, static_cast<int>(at(p, 5 * l + 4)));
    }
  const scheme_descriptor& scheme = builtin_schemes::descriptors[plan.scheme];
  std::vector<adaptive_convergence_series> out;
  for (const error_kind kind : {error_kind::strong, error_kind::weak}) {
    if ((kind == error_kind::strong && !plan.strong) || (kind == error_kind::weak && !plan.weak))
      continue;
    const int k = kind == error_kind::strong ? 0 : 1;
    adaptive_convergence_series r;
    r.problem = name;
    r.scheme = std::string(scheme.name);
    r.control = plan.control;
    r.kind = kind;
    r.paths = plan.paths - failed;
    r.failed_paths = failed;
    r.seed = plan.seed;
    r.grid_dt = plan.grid_dt;
    r.max_depth = plan.max_depth;
    r.tolerances = plan.tolerances;
    r.unresolved = unresolved;
    r.deepest = deepest;
    if (kind == error_kind::strong)
      r.error_measure = error_measure;
    else
      r.functional = functional_name;
    r.seconds = seconds;
    r.expected = expected_order(scheme, kind, noise);
    // The weak samples' mean is the weak error itself (E f(X(W_T)) = E f(X_T) exactly).
    for (int l = 0; l < levels; ++l) {
      const auto [e, se] = mean_stderr(5 * l + k);
      const auto [c, cse] = mean_stderr(5 * l + 2);
      r.errors.push_back(kind == error_kind::strong ? e : std::abs(e));
      r.errors_stderr.push_back(se);
      r.cost.push_back(c);
      r.cost_stderr.push_back(cse);
    }
    for (int d = 0; d < plan.fixed_levels; ++d) {
      const auto [e, se] = mean_stderr(5 * levels + 2 * d + k);
      r.fixed_errors.push_back(kind == error_kind::strong ? e : std::abs(e));
      r.fixed_errors_stderr.push_back(se);
      r.fixed_cost.push_back(static_cast<double>(plan.grid_steps << d));
    }
    std::vector<double> x, x_tol, x_fixed, log_cost_fixed, log_fixed;
    for (int l = 0; l < levels; ++l) {
      x.push_back(-std::log(r.cost[static_cast<std::size_t>(l)]));
      x_tol.push_back(std::log(r.tolerances[static_cast<std::size_t>(l)]));
    }
    for (int d = 0; d < plan.fixed_levels; ++d) {
      const double lc = std::log(r.fixed_cost[static_cast<std::size_t>(d)]);
      x_fixed.push_back(-lc);
      log_cost_fixed.push_back(lc);
      log_fixed.push_back(std::log(r.fixed_errors[static_cast<std::size_t>(d)]));
    }
    r.fit = fit_log_errors(x, r.errors, r.errors_stderr);
    r.fit_tolerance = fit_log_errors(x_tol, r.errors, r.errors_stderr);
    r.fixed_fit = fit_log_errors(x_fixed, r.fixed_errors, r.fixed_errors_stderr);
    for (int l = 0; l < levels; ++l) {
      bool outside = false;
      const double lf = interpolate_log(log_cost_fixed, log_fixed, r.fixed_fit,
                                        std::log(r.cost[static_cast<std::size_t>(l)]), outside);
      r.fixed_at_cost.push_back(std::exp(lf));
      r.ratio.push_back(std::exp(lf) / r.errors[static_cast<std::size_t>(l)]);
      r.extrapolated.push_back(outside);
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace detail

// ---- the standard studies ----
//
// Choices common to all six: the weak functional is f(V) = ‖V‖²_F (a second moment, since EM
// reproduces E[V_T] exactly on two of the problems), with u(t, ·) from analytic.hpp for the martingale
// control of EM. Coefficients are moderate (drift and noise rates ≈ 0.5 per unit time) and the
// coarsest level has at least 8 steps: with fewer, a path's error is a sum of a handful of
// non-Gaussian terms and E‖e‖ does not yet scale like its root mean square (local slopes of Milstein
// ≈ 0.86 from 4 to 8 steps). The levels are fine enough that higher-order terms are small against
// the leading one: local slopes between the two coarsest levels are ≥ 0.92 (weak) and ≥ 0.95
// (Milstein strong), so the fitted orders sit within a few hundredths of the theory.
// Milstein-commutative on non-commutative noise needs the finest levels of all (its O(dt) remainder
// competes with the O(dt^{1/2}) Lévy-area term; with dt ≈ 1/16 in the SDE's own time the fitted
// slope is ≈ 0.53), hence the short horizons of those three problems. Path counts give slope
// standard errors ≤ 0.01 (strong) and ≤ 0.02 (weak); the whole default run takes ≈ 180 s of CPU
// time (about 1.5 minutes of wall time on 2 idle cores).

namespace {

/// f(V) = ‖V‖²_F = Σ_ab (V^{ab})² = vec(V)ᵀ I vec(V).
functional frobenius_squared() {
  return functional{"|V|_F^2", [](const matrix& v) { return v.squaredNorm(); }};
}

/// weak_value for f = ‖V‖²_F: u(t, ·) = sde.conditional_second_moment(I, T − t).
template <class S>
std::function<std::function<double(const matrix&)>(double)> frobenius_value(const S& sde, int m,
                                                                            double t_end) {
  return [sde, m, t_end](double t) {
    const matrix id = matrix::Identity(m * m, m * m);
    return std::function<double(const matrix&)>(
        sde.conditional_second_moment(id, std::max(0.0, t_end - t)));
  };
}

/// The weak functional, its exact expectation and u for a problem with second_moments().
template <class S>
void set_weak(convergence_problem<S>& cp) {
  const int m = static_cast<int>(cp.prob.v0.rows());
  cp.weak = frobenius_squared();
  cp.weak_exact = cp.prob.sde.second_moments(cp.prob.v0, cp.prob.t_end - cp.prob.t0).trace();
  cp.weak_value = frobenius_value(cp.prob.sde, m, cp.prob.t_end);
}

/// Settings shared by the problems with a pathwise solution (commutative noise): six levels from
/// dt = T/16 and 10'000 paths keep every slope's standard error below 0.02; the reference is exact.
template <class S>
convergence_problem<S> with_exact_solution(convergence_problem<S> cp) {
  cp.commutative_noise = true;
  cp.first_level = 4;
  cp.levels = 6;
  cp.paths = 10000;
  // Adaptive study: tolerances 0.02 … 0.00125 keep every level's cost (≈ 20 … 830 steps per path
  // with either controller) inside the fixed ladder 16 … 1024 (the problem's ladder and one level
  // finer), and refine the grid step T/16 already at the first level.
  cp.adaptive_tolerance = 0.02;
  cp.exact = [sde = cp.prob.sde](const matrix& x0, const Eigen::Ref<const vector>& w, double s) {
    return sde.exact(x0, w, s);
  };
  set_weak(cp);
  return cp;
}

matrix sym2(double a, double b, double c) {
  matrix v(2, 2);
  v << a, b, b, c;
  return v;
}

convergence_problem<analytic::gbm> gbm_problem() {
  const analytic::gbm sde(analytic::gbm::params{0.5, 0.5});
  convergence_problem<analytic::gbm> cp("gbm", {sde, matrix::Constant(1, 1, 1.0), 1.0, 0.0});
  cp.description =
      "scalar geometric Brownian motion dX = 0.5 X dt + 0.5 X dW, X0 = 1, T = 1 (m = 1, k = 1); "
      "exact pathwise solution";
  return with_exact_solution(std::move(cp));
}

convergence_problem<analytic::hadamard_linear> hadamard_problem() {
  vector alpha(3), beta1(3), beta2(3);
  alpha << 0.25, 0.1, 0.2;
  beta1 << 0.3, 0.2, -0.25;
  beta2 << -0.2, 0.3, 0.15;
  const analytic::hadamard_linear sde =
      analytic::hadamard_linear::diagonal_lift(alpha, {beta1, beta2});
  matrix v0(3, 3);
  v0 << 1.0, 0.5, 0.2, 0.5, 1.0, 0.3, 0.2, 0.3, 1.0;
  convergence_problem<analytic::hadamard_linear> cp("hadamard", {sde, v0, 1.0, 0.0});
  cp.description =
      "commuting linear noise dV = A∘V dt + Σ_j B_j∘V dW_j, m = 3, k = 2, "
      "the lift of diagonal noise (V stays PSD), T = 1; exact pathwise solution";
  return with_exact_solution(std::move(cp));
}

convergence_problem<analytic::lifted_linear> matrix_gbm_problem() {
  // A = P diag(a) P⁻¹, B = P diag(b) P⁻¹ with a non-orthogonal P: commuting, not symmetric.
  matrix p(2, 2);
  p << 1.0, 0.5, 0.2, 1.0;
  const matrix pinv = p.inverse();
  vector a(2), b(2);
  a << 0.25, -0.1;
  b << 0.35, 0.2;
  const analytic::lifted_linear sde(p * a.asDiagonal() * pinv, {p * b.asDiagonal() * pinv});
  convergence_problem<analytic::lifted_linear> cp("matrix-gbm",
                                                  {sde, sym2(1.0, 0.3, 0.8), 1.0, 0.0});
  cp.description =
      "matrix geometric Brownian motion V = X Xᵀ, dX = A X dt + B X dW, A and B commuting and not "
      "symmetric, m = 2, k = 1, T = 1; exact pathwise solution";
  return with_exact_solution(std::move(cp));
}

convergence_problem<analytic::lifted_linear> noncommutative_problem() {
  // B_1 = β diag(1, −1), B_2 = β [[0, 1], [1, 0]]: [B_2, B_1] = −2β² J (J the rotation generator),
  // so the commutator field −2β² [J, V] is non-zero whenever V is not a multiple of I.
  const double beta = 0.35;
  matrix a(2, 2), b1(2, 2), b2(2, 2);
  a << -0.1, 0.05, 0.0, -0.05;
  b1 << beta, 0.0, 0.0, -beta;
  b2 << 0.0, beta, beta, 0.0;
  const analytic::lifted_linear sde(a, {b1, b2});
  convergence_problem<analytic::lifted_linear> cp("noncommutative",
                                                  {sde, sym2(1.0, 0.3, 0.6), 0.125, 0.0});
  cp.description =
      "V = X Xᵀ for dX = A X dt + Σ_j B_j X dW_j, B_1 = 0.35 diag(1, -1), "
      "B_2 = 0.35 [[0, 1], [1, 0]] (non-commuting), m = 2, k = 2, T = 1/8; "
      "fine-grid Milstein reference";
  cp.commutative_noise = false;
  cp.first_level = 3;
  cp.levels = 5;
  cp.paths = 3000;
  set_weak(cp);
  return cp;
}

convergence_problem<analytic::linear_covariance> linear_covariance_problem() {
  const analytic::linear_covariance sde;
  convergence_problem<analytic::linear_covariance> cp("linear-covariance",
                                                      {sde, sym2(1.0, 0.5, 1.0), 1.0 / 64.0, 0.0});
  cp.description =
      "linear covariance SDE dV = Σ_lin(V)^{1/2} dB, structured noise L W Lᵀ, "
      "m = 2, k = 4, T = 1/64; fine-grid Milstein reference";
  cp.commutative_noise = false;
  cp.first_level = 2;
  cp.levels = 5;
  cp.paths = 2000;
  set_weak(cp);
  return cp;
}

convergence_problem<analytic::wishart> wishart_problem() {
  const analytic::wishart sde(4.0);
  convergence_problem<analytic::wishart> cp("wishart", {sde, sym2(4.0, 1.0, 3.0), 0.5, 0.0});
  cp.description =
      "Wishart process dV = p I dt + L dB + dBᵀ Lᵀ, p = 4, m = 2, k = 4, T = 1/2; "
      "fine-grid Milstein reference";
  cp.commutative_noise = false;
  cp.first_level = 3;
  cp.levels = 5;
  cp.paths = 3000;
  set_weak(cp);
  return cp;
}

}  // namespace

std::vector<convergence_study> standard_convergence_studies() {
  return {make_convergence_study(gbm_problem()),
          make_convergence_study(hadamard_problem()),
          make_convergence_study(matrix_gbm_problem()),
          make_convergence_study(noncommutative_problem()),
          make_convergence_study(linear_covariance_problem()),
          make_convergence_study(wishart_problem())};
}

// ---- output ----

namespace {
nlohmann::json number(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
}

nlohmann::json numbers(const std::vector<double>& xs) {
  nlohmann::json a = nlohmann::json::array();
  for (const double x : xs) a.push_back(number(x));
  return a;
}

/// A series' result in the table: pass; pre-asymptotic, with its local slopes from the coarsest
/// pair to the finest; or FAIL.
std::string verdict(const convergence_series& s) {
  if (s.pass) return "pass";
  if (s.unresolved)
    return "unresolved: the errors are within twice their standard errors (more paths)";
  if (s.pre_asymptotic) {
    const std::vector<double> slopes = local_slopes(s.dts, s.errors);
    const bool finest_last = s.dts.back() < s.dts.front();
    return fmt::format("pre-asymptotic: refine (local slopes {:.3f} to {:.3f}, coarse to fine)",
                       finest_last ? slopes.front() : slopes.back(),
                       finest_last ? slopes.back() : slopes.front());
  }
  return fmt::format("FAIL (|order - expected| > {})", s.tolerance);
}

/// A fitted order as <prefix>order, <prefix>stderr, <prefix>ci_low, <prefix>ci_high.
void put_fit(nlohmann::json& o, const std::string& prefix, const linear_fit& fit) {
  o[prefix + "order"] = number(fit.slope);
  o[prefix + "stderr"] = number(fit.slope_stderr);
  o[prefix + "ci_low"] = number(fit.ci_low);
  o[prefix + "ci_high"] = number(fit.ci_high);
}
}  // namespace

std::vector<report_field> series_fields(const convergence_series& s) {
  const bool weak = s.kind == error_kind::weak;
  return {
      {"problem", s.problem},
      {"scheme", s.scheme},
      {"kind", std::string(to_string(s.kind))},
      {"order", s.fit.slope},
      {"stderr", s.fit.slope_stderr},
      {"ci_low", s.fit.ci_low},
      {"ci_high", s.fit.ci_high},
      {"expected", s.expected},
      {"tolerance", s.tolerance},
      {"pass", s.pass},
      {"unresolved", s.unresolved, s.unresolved},
      {"pre_asymptotic", s.pre_asymptotic, s.pre_asymptotic},
      {"local_slopes", local_slopes(s.dts, s.errors), s.pre_asymptotic},
      {"paths", s.paths},
      {"seed", s.seed},
      {"dts", s.dts},
      {"errors", s.errors},
      {"errors_stderr", s.errors_stderr},
      {"cone_exits", s.cone_exits},
      {"failed_paths", s.failed_paths, s.failed_paths > 0},
      {"error_measure", s.error_measure, !s.error_measure.empty()},
      {"reference", s.reference},
      {"functional", s.functional, weak},
      {"seconds", s.seconds},
  };
}

std::string convergence_json(const std::vector<convergence_series>& series, int indent) {
  nlohmann::json doc = nlohmann::json::array();
  for (const convergence_series& s : series) {
    nlohmann::json o = detail::fields_json<nlohmann::json>(series_fields(s), number);
    doc.push_back(std::move(o));
  }
  return doc.dump(indent);
}

std::vector<double> local_slopes(const std::vector<double>& dts,
                                 const std::vector<double>& errors) {
  std::vector<double> slopes;
  for (std::size_t i = 0; i + 1 < dts.size() && i + 1 < errors.size(); ++i) {
    const bool positive = errors[i] > 0.0 && errors[i + 1] > 0.0 && dts[i] > 0.0 &&
                          dts[i + 1] > 0.0 && dts[i] != dts[i + 1];
    slopes.push_back(positive ? std::log(errors[i] / errors[i + 1]) / std::log(dts[i] / dts[i + 1])
                              : std::numeric_limits<double>::quiet_NaN());
  }
  return slopes;
}

bool is_pre_asymptotic(const std::vector<double>& dts, const std::vector<double>& errors,
                       double expected, double fitted, double tolerance) {
  if (std::abs(fitted - expected) <= tolerance) return false;  // it passes
  const std::vector<double> slopes = local_slopes(dts, errors);
  if (slopes.size() < 2) return false;
  for (const double s : slopes)
    if (!std::isfinite(s)) return false;
  // Coarse to fine (the levels may come either way): the gap to the expected order must shrink at
  // every refinement, and end below the fitted order's.
  std::vector<double> gaps;
  for (const double s : slopes) gaps.push_back(std::abs(s - expected));
  if (dts.back() > dts.front()) std::reverse(gaps.begin(), gaps.end());
  for (std::size_t i = 0; i + 1 < gaps.size(); ++i)
    if (!(gaps[i + 1] < gaps[i])) return false;
  return !std::isfinite(fitted) || gaps.back() < std::abs(fitted - expected);
}

std::string convergence_table(const std::vector<convergence_series>& series) {
  std::ostringstream out;
  out << fmt::format("{:<18} {:<21} {:<6} {:>7} {:>7}  {:<17} {:>8}  {}\n", "problem", "scheme",
                     "kind", "order", "stderr", "95% CI", "expected", "result");
  for (const convergence_series& s : series) {
    out << fmt::format("{:<18} {:<21} {:<6} {:>7.3f} {:>7.3f}  [{:>6.3f}, {:>6.3f}] {:>8.2f}  {}\n",
                       s.problem, s.scheme, to_string(s.kind), s.fit.slope, s.fit.slope_stderr,
                       s.fit.ci_low, s.fit.ci_high, s.expected, verdict(s));
  }
  return out.str();
}

std::string adaptive_convergence_json(const std::vector<adaptive_convergence_series>& series,
                                      int indent) {
  nlohmann::json doc = nlohmann::json::array();
  for (const adaptive_convergence_series& s : series) {
    nlohmann::json o;
    o["problem"] = s.problem;
    o["scheme"] = s.scheme;
    o["step_control"] = std::string(to_string(s.control));
    o["kind"] = std::string(to_string(s.kind));
    o["tolerances"] = numbers(s.tolerances);
    o["cost"] = numbers(s.cost);
    o["cost_stderr"] = numbers(s.cost_stderr);
    o["errors"] = numbers(s.errors);
    o["errors_stderr"] = numbers(s.errors_stderr);
    put_fit(o, "", s.fit);
    o["order_tolerance"] = number(s.fit_tolerance.slope);
    o["order_tolerance_stderr"] = number(s.fit_tolerance.slope_stderr);
    o["fixed_steps"] = numbers(s.fixed_cost);
    o["fixed_errors"] = numbers(s.fixed_errors);
    o["fixed_errors_stderr"] = numbers(s.fixed_errors_stderr);
    put_fit(o, "fixed_", s.fixed_fit);
    o["fixed_at_cost"] = numbers(s.fixed_at_cost);
    o["ratio"] = numbers(s.ratio);
    nlohmann::json outside = nlohmann::json::array();
    for (const bool b : s.extrapolated) outside.push_back(b);
    o["extrapolated"] = std::move(outside);
    o["expected"] = s.expected;
    o["paths"] = s.paths;
    o["failed_paths"] = s.failed_paths;
    o["seed"] = s.seed;
    o["grid_dt"] = s.grid_dt;
    o["max_depth"] = s.max_depth;
    o["unresolved"] = s.unresolved;
    o["deepest"] = s.deepest;
    o["reference"] = "exact";
    if (!s.error_measure.empty()) o["error_measure"] = s.error_measure;
    if (s.kind == error_kind::weak) o["functional"] = s.functional;
    o["seconds"] = number(s.seconds);
    doc.push_back(std::move(o));
  }
  return doc.dump(indent);
}

std::string adaptive_convergence_table(const std::vector<adaptive_convergence_series>& series) {
  std::ostringstream out;
  out << fmt::format("{:<11} {:<21} {:<9} {:<6} {:>14}  {:<17} {:>7} {:>14} {:>13} {:>6}\n",
                     "problem", "scheme", "control", "kind", "order(cost)", "95% CI", "vs tol",
                     "fixed order", "cost", "ratio");
  for (const adaptive_convergence_series& s : series) {
    out << fmt::format(
        "{:<11} {:<21} {:<9} {:<6} {:>6.3f} ± {:<5.3f}  [{:>6.3f}, {:>6.3f}] {:>7.3f} {:>6.3f} ± "
        "{:<5.3f} {:>6.0f}..{:<5.0f} {:>6.2f}{}\n",
        s.problem, s.scheme, to_string(s.control), to_string(s.kind), s.fit.slope,
        s.fit.slope_stderr, s.fit.ci_low, s.fit.ci_high, s.fit_tolerance.slope, s.fixed_fit.slope,
        s.fixed_fit.slope_stderr, s.cost.front(), s.cost.back(), s.ratio.back(),
        s.extrapolated.back() ? "*" : "");
  }
  return out.str();
}

}  // namespace ncsde
