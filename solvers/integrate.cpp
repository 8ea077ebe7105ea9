#include "ncsde/integrate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ncsde {

std::string_view to_string(pd_policy p) {
  switch (p) {
    case pd_policy::throw_error:
      return "throw";
    case pd_policy::count:
      return "count";
    case pd_policy::project:
      return "project";
    case pd_policy::refine:
      return "refine";
    case pd_policy::automatic:
      return "automatic";
  }
  return "?";
}

pd_policy parse_pd_policy(std::string_view text, std::string_view param) {
  if (text == "throw") return pd_policy::throw_error;
  if (text == "count") return pd_policy::count;
  if (text == "project") return pd_policy::project;
  if (text == "refine") return pd_policy::refine;
  if (text == "automatic") return pd_policy::automatic;
  throw invalid_argument(fmt::format(
      "{} must be one of throw, count, project, refine, automatic (got '{}')", param, text));
}

pd_policy resolve_pd_policy(std::string_view where, state_space space, pd_policy policy) {
  // automatic is count: the one policy under which every scheme keeps its own law (integrate.hpp).
  if (space == state_space::psd_cone)
    return policy == pd_policy::automatic ? pd_policy::count : policy;
  if (policy == pd_policy::automatic || policy == pd_policy::count) return pd_policy::count;
  throw invalid_argument(fmt::format(
      "{}: pd policy '{}' acts on the positive-semidefinite cone, but the problem's state space is "
      "{} (the SDE declares no cone, so the policy could do nothing; use 'count' or the default "
      "'automatic', or declare state_space::psd_cone in the SDE)",
      where, to_string(policy), to_string(space)));
}

std::string_view to_string(path_status s) {
  switch (s) {
    case path_status::completed:
      return "completed";
    case path_status::blown_up:
      return "blown_up";
    case path_status::stopped:
      return "stopped";
    case path_status::exhausted:
      return "exhausted";
  }
  return "?";
}

std::string_view to_string(step_control c) {
  switch (c) {
    case step_control::fixed:
      return "fixed";
    case step_control::increment:
      return "increment";
    case step_control::doubling:
      return "doubling";
  }
  return "?";
}

const std::array<step_control_descriptor, 3>& step_controls() {
  static const std::array<step_control_descriptor, 3> list{{
      {step_control::fixed, "fixed", "the grid steps dt themselves"},
      {step_control::increment, "increment",
       "halve a step until it changes the state by at most tolerance*(1 + max|X|) (superlinear "
       "drift, explosion times)"},
      {step_control::doubling, "doubling",
       "step doubling: accept two half steps when they agree with the full step within "
       "tolerance*(1 + max|X|), else halve"},
  }};
  return list;
}

step_control parse_step_control(std::string_view text, std::string_view param) {
  std::string names;
  for (const step_control_descriptor& d : step_controls()) {
    if (text == d.name) return d.kind;
    names += (names.empty() ? "" : ", ") + std::string(d.name);
  }
  throw invalid_argument(fmt::format("{} must be one of {} (got '{}')", param, names, text));
}

step_stats& step_stats::operator+=(const step_stats& o) {
  refinements += o.refinements;
  unresolved += o.unresolved;
  deepest = std::max(deepest, o.deepest);
  return *this;
}

pd_counters& pd_counters::operator+=(const pd_counters& o) {
  violations += o.violations;
  projected += o.projected;
  refined += o.refined;
  boundary += o.boundary;
  // NaN stands for "no violation seen": it never replaces a minimum that was seen.
  if (!std::isnan(o.min_eigenvalue) && !(min_eigenvalue <= o.min_eigenvalue))
    min_eigenvalue = o.min_eigenvalue;
  return *this;
}

step_grid::step_grid(double t0_, double t_end_, double dt_, const std::vector<double>& save_times)
    : t0(t0_), t_end(t_end_), dt(dt_) {
  if (!std::isfinite(t0)) throw_invalid_argument("integrate", "t0", t0, "finite");
  if (!std::isfinite(t_end)) throw_invalid_argument("integrate", "T", t_end, "finite");
  if (!(t_end >= t0))
    throw_invalid_argument("integrate", "T", t_end, fmt::format(">= t0 = {}", t0));
  if (!(dt > 0) || !std::isfinite(dt))
    throw_invalid_argument("integrate", "dt", dt, "> 0 and finite");
  const double span = t_end - t0;
  if (span > 0 && dt > span * (1 + 1e-12))
    throw_invalid_argument("integrate", "dt", dt, fmt::format("<= T - t0 = {}", span));
  const double ratio = span / dt;
  if (ratio > 1e12) throw_invalid_argument("integrate", "dt", dt, "such that (T - t0)/dt <= 1e12");
  const double nearest = std::round(ratio);
  steps = static_cast<long long>(
      std::abs(ratio - nearest) <= 1e-9 * std::max(1.0, nearest) ? nearest : std::ceil(ratio));
  double previous = -std::numeric_limits<double>::infinity();
  for (const double s : save_times) {
    if (!(s >= t0 && s <= t_end))
      throw_invalid_argument("integrate", "save time", s, fmt::format("in [{}, {}]", t0, t_end));
    if (!(s > previous)) throw_invalid_argument("integrate", "save time", s, "strictly increasing");
    previous = s;
    // The grid index whose time is s (within 1e-9 of a step). T is a grid time also when dt does not
    // divide T - t0, where rounding (s - t0)/dt may pick the step before the short last one.
    const double slack = 1e-9 * std::max(dt, std::abs(s));
    const long long i = std::abs(t_end - s) <= slack
                            ? steps
                            : std::min(steps, static_cast<long long>(std::llround((s - t0) / dt)));
    if (!(std::abs(time(i) - s) <= slack))
      throw_invalid_argument("integrate", "save time", s,
                             fmt::format("a grid time t0 + i*dt (dt = {}) or T", dt));
    save_steps.push_back(i);
  }
}

namespace detail {

void validate_noise_dimension(std::string_view where, long long k, bool iterated) {
  if (k < 1) throw_invalid_argument(where, "noise_dimension(m)", k, ">= 1");
  if (k > max_noise_dimension)
    throw_invalid_argument(
        where, "noise_dimension(m)", k,
        fmt::format("<= {} (one increment holds k doubles)", max_noise_dimension));
  if (iterated && k > max_iterated_noise_dimension)
    throw_invalid_argument(
        where, "noise_dimension(m)", k,
        fmt::format("<= {} for a scheme with iterated integrals (they form a k×k matrix per step)",
                    max_iterated_noise_dimension));
}

void validate_source_dimension(std::string_view where, long long source_k, int k,
                               long long path_index) {
  if (source_k != k)
    throw invalid_argument(fmt::format(
        "{}: the noise source of path {} has dimension {}, but the SDE's noise_dimension is {}",
        where, path_index, source_k, k));
}

}  // namespace detail

int resolved_area_depth(const integrate_options& opt, state_space space, bool reads_areas) {
  if (opt.area_depth >= 0) return opt.area_depth;
  // Only `refine` splits a piece after using its areas; adaptive pieces are split before.
  const bool refines = space == state_space::psd_cone && opt.policy == pd_policy::refine &&
                       opt.control == step_control::fixed;
  return reads_areas && refines ? opt.refine_depth : 0;
}

void validate_step_control(std::string_view where, double tolerance,
                           std::string_view tolerance_name, int max_depth,
                           std::string_view max_depth_name) {
  if (!(tolerance >= min_tolerance) || !(tolerance <= 1))
    throw_invalid_argument(where, tolerance_name, tolerance,
                           fmt::format("in [{:g}, 1] (below {:g} the step controllers would "
                                       "measure round-off)",
                                       min_tolerance, min_tolerance));
  if (max_depth < 1 || max_depth > 50)
    throw_invalid_argument(where, max_depth_name, max_depth, "in [1, 50]");
}

void validate_options(const integrate_options& o) {
  if (!(o.dt > 0) || !std::isfinite(o.dt))
    throw_invalid_argument("integrate", "dt", o.dt, "> 0 and finite");
  if (!(o.pd_floor >= 0) || !std::isfinite(o.pd_floor))
    throw_invalid_argument("integrate", "pd_floor", o.pd_floor, ">= 0 and finite");
  if (o.refine_depth < 1 || o.refine_depth > 30)
    throw_invalid_argument("integrate", "refine_depth", o.refine_depth, "in [1, 30]");
  if (o.area_depth < -1 || o.area_depth > stream_brownian::max_area_depth)
    throw_invalid_argument(
        "integrate", "area_depth", o.area_depth,
        fmt::format("in [0, {}] or -1 (automatic)", stream_brownian::max_area_depth));
  if (!(o.blowup_threshold > 0) || !(o.blowup_threshold <= 1e100))
    throw_invalid_argument("integrate", "blowup_threshold", o.blowup_threshold, "in (0, 1e100]");
  if (!(o.stop_level > 0))
    throw_invalid_argument("integrate", "stop_level", o.stop_level, "> 0 (inf: never stop)");
  validate_step_control("integrate", o.tolerance, "tolerance", o.max_depth, "max_depth");
  if (o.max_path_steps < 1)
    throw_invalid_argument("integrate", "max_path_steps", o.max_path_steps, ">= 1");
  if (o.control != step_control::fixed) {
    // Bridge nodes are numbered as a heap in 64 bits: the controller's halvings and the refine
    // policy's below them must fit.
    if (o.policy == pd_policy::refine && o.max_depth + o.refine_depth > 62)
      throw_invalid_argument(
          "integrate", "max_depth", o.max_depth,
          fmt::format("<= 62 - refine_depth = {} with the refine policy", 62 - o.refine_depth));
  }
}

}  // namespace ncsde
