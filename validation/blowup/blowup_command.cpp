/// `ncsde blowup`: the blow-up law of a registered model's covariance SDE, P(τ ≤ t) on a grid of t
/// and the explosion-time distribution, from an ensemble of paths (ncsde::run_ensemble through
/// models::model_instance::run_ensemble) with adaptive steps by default. Under mpirun the paths
/// are split over the ranks (mpi_world.hpp) and rank 0 reports, byte for byte as one process.
///
///   ncsde blowup --V0 "..." [--model M] [model flags] [--T 2] [--dt 1e-2] [--paths 4000]
///                [--seed 1] [--threads 0] [--scheme em|NAME] [--per-path]
///                [--step-control increment|doubling|fixed] [--tolerance 0.05] [--max-depth 40]
///                [--blowup-threshold 1e6] [--grid 50] [--format table|json] [--plots DIR]
///
/// τ is the first time max|V^{ab}| exceeds the blow-up threshold (integrate.hpp). With a fixed step
/// the estimate is the scheme's and the step's, not the SDE's (a fixed step crosses the superlinear
/// region in a handful of steps at any dt); the adaptive controllers halve the steps there, so that
/// the estimate converges as the tolerance shrinks (docs/maths.md, "Explosions").
///
/// Output: blown_up_fraction = P(τ ≤ T) with its binomial standard error √(p(1 − p)/N); the curve
/// P(τ ≤ t_i) at t_i = T·i/grid, i = 1..grid, each with its standard error and the 95% Wilson
/// score interval; the quantiles of τ among the blown-up paths (the law of τ given τ ≤ T); the step
/// controller's counters. --plots DIR writes DIR/blowup.csv (the curve) and DIR/blowup.png
/// (validation/plots/blowup_plot.py: P(τ ≤ t) with its band, and a histogram of τ given τ ≤ T).
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <variant>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "command.hpp"
#include "limits.hpp"
#include "models/model_flags.hpp"
#include "models/parameter_report.hpp"
#include "models/step_flags.hpp"
#include "mpi_world.hpp"
#include "ncsde/device.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/ensemble_io.hpp"
#include "ncsde/error.hpp"
#include "ncsde/schemes.hpp"
#include "ncsde/statistics.hpp"
#include "ncsde/symmetric.hpp"
#include "process.hpp"

#ifndef NCSDE_BLOWUP_PLOT_SCRIPT
#error "NCSDE_BLOWUP_PLOT_SCRIPT must name validation/plots/blowup_plot.py"
#endif

namespace ncsde::cli {
namespace {

/// docs/maths.md §9.1 reference state V3: diag (1, 1.6, 0.7), ρ¹² = 0.5, ρ¹³ = 0.3, ρ²³ = 0.7.
constexpr const char* default_v0 =
    "1, 0.6324555320336759, 0.25099800796022265; "
    "0.6324555320336759, 1.6, 0.7408103670980852; "
    "0.25099800796022265, 0.7408103670980852, 0.7";

struct blowup_args {
  model_flags model;
  step_flags steps;
  std::string v0 = default_v0;
  double t_end = 2.0;
  double dt = 1e-2;
  ensemble_flags run{4000};
  double blowup_threshold = 1e6;
  int grid = 50;
  std::string format = "table";
  std::string plots;
};

/// P(τ ≤ t) at one t, from k of n paths.
struct curve_point {
  double t = 0.0;
  long long blown_up = 0;
  double p = 0.0, stderr_ = 0.0, lower = 0.0, upper = 0.0;
};

/// The 95% Wilson score interval of a binomial proportion k/n (z = 1.959964).
std::pair<double, double> wilson(long long k, long long n) {
  const double z = 1.959963984540054;
  const double nn = static_cast<double>(n), p = static_cast<double>(k) / nn;
  const double centre = (p + z * z / (2 * nn)) / (1 + z * z / nn);
  const double half = z / (1 + z * z / nn) * std::sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn));
  // The interval's ends at k = 0 and k = n are 0 and 1 exactly (not a rounding away from them).
  return {k == 0 ? 0.0 : std::max(0.0, centre - half), k == n ? 1.0 : std::min(1.0, centre + half)};
}

std::vector<curve_point> blowup_curve(const ensemble_result& r, int grid) {
  std::vector<curve_point> out;
  const double n = static_cast<double>(r.paths);
  for (int i = 1; i <= grid; ++i) {
    curve_point c;
    c.t = i == grid ? r.t_end : r.t0 + (r.t_end - r.t0) * i / grid;
    c.blown_up = std::upper_bound(r.explosion_times.begin(), r.explosion_times.end(), c.t) -
                 r.explosion_times.begin();
    c.p = static_cast<double>(c.blown_up) / n;
    c.stderr_ = std::sqrt(c.p * (1 - c.p) / n);
    std::tie(c.lower, c.upper) = wilson(c.blown_up, r.paths);
    out.push_back(c);
  }
  return out;
}

std::string json_report(const blowup_args& a, const ensemble_result& r,
                        const std::vector<curve_point>& curve) {
  using nlohmann::json;
  auto number = [](double x) { return std::isfinite(x) ? json(x) : json(nullptr); };
  json j;
  j["model"] = a.model.model;
  j["parameters"] = parameter_values_json(a.model);
  j["m"] = r.m;
  j["scheme"] = r.scheme;
  j["step_control"] = std::string(to_string(r.control));
  j["tolerance"] = r.control == step_control::fixed ? json(nullptr) : json(r.tolerance);
  j["dt"] = r.dt;
  j["T"] = r.t_end;
  j["paths"] = r.paths;
  j["seed"] = r.seed;
  j["threads"] = r.threads;
  j["blowup_threshold"] = a.blowup_threshold;
  j["blown_up"] = r.blown_up;
  j["blown_up_fraction"] = r.blown_up_fraction();
  j["blown_up_fraction_stderr"] = r.blown_up_stderr();
  json q = json::object();
  for (const report_field& f : explosion_time_quantiles(r))
    q[f.name] = number(std::get<double>(f.value));
  j["explosion_time_quantiles"] = q;
  // The stepping counters of the ensemble summary (stepping_fields), at the top level, the
  // control and tolerance named above. exhausted: paths that used up their work limit
  // (docs/step_control.md): P(τ ≤ T) lies between blown_up_fraction and (blown_up +
  // exhausted)/paths.
  for (const report_field& f : stepping_fields(r))
    if (f.name != "control" && f.name != "tolerance")
      std::visit([&](const auto& v) { j[f.name] = v; }, f.value);
  // A distribution-free 95% interval of the median of τ given τ ≤ T: the order statistics of ranks
  // n/2 ∓ 1.96·√n/2 among the n blown-up paths (the binomial(n, ½) count below the median).
  const auto& times = r.explosion_times;
  if (times.size() >= 10) {
    const double n = static_cast<double>(times.size());
    const double half = 1.959963984540054 * std::sqrt(n) / 2;
    const auto rank = [&](double x) {
      return static_cast<std::size_t>(std::clamp(std::floor(x), 0.0, n - 1));
    };
    j["explosion_time_median_ci95"] = {times[rank(n / 2 - half)], times[rank(n / 2 + half)]};
  } else {
    j["explosion_time_median_ci95"] = nullptr;
  }
  json c = json::array();
  for (const curve_point& p : curve)
    c.push_back({{"t", p.t},
                 {"blown_up", p.blown_up},
                 {"p", p.p},
                 {"stderr", p.stderr_},
                 {"wilson_lower", p.lower},
                 {"wilson_upper", p.upper}});
  j["curve"] = c;
  j["seconds"] = r.seconds;
  return j.dump(2);
}

void table_report(const blowup_args& a, const ensemble_result& r,
                  const std::vector<curve_point>& curve, std::ostream& os) {
  os << fmt::format("blow-up law: {} ({}), m = {}, T = {}, scheme {}, {} steps", a.model.model,
                    parameter_text(a.model), r.m, r.t_end, r.scheme, to_string(r.control));
  if (r.control != step_control::fixed)
    os << fmt::format(" (tolerance {}, largest step dt = {})", r.tolerance, r.dt);
  else
    os << fmt::format(" (dt = {})", r.dt);
  os << fmt::format(", {} paths, seed {}, threshold {:g}\n", r.paths, r.seed, a.blowup_threshold);
  os << fmt::format("P(tau <= T) = {:.5f} ± {:.5f}  ({} of {} paths)\n", r.blown_up_fraction(),
                    r.blown_up_stderr(), r.blown_up, r.paths);
  if (r.exhausted > 0)
    os << fmt::format(
        "exhausted: {} paths used up their work limit before T; P(tau <= T) lies between {:.5f} "
        "and {:.5f}\n",
        r.exhausted, r.blown_up_fraction(), double(r.blown_up + r.exhausted) / double(r.paths));
  os << "explosion time given tau <= T:";
  for (const report_field& f : explosion_time_quantiles(r))
    os << fmt::format("  {} = {:.6g}", f.name, std::get<double>(f.value));
  os << '\n';
  os << fmt::format(
      "steps per path {:.1f}, refinements {}, unresolved {}, deepest halving {} ({:.2f} s, "
      "{} threads)\n",
      r.paths ? double(r.steps) / double(r.paths) : 0.0, r.stepping.refinements,
      r.stepping.unresolved, r.stepping.deepest, r.seconds, r.threads);
  os << fmt::format("{:>10} {:>10} {:>10} {:>21}\n", "t", "P(tau<=t)", "stderr", "95% Wilson");
  const std::size_t every = std::max<std::size_t>(1, curve.size() / 10);
  for (std::size_t i = 0; i < curve.size(); ++i)
    if ((i + 1) % every == 0 || i + 1 == curve.size())
      os << fmt::format("{:>10.4g} {:>10.5f} {:>10.5f}   [{:.5f}, {:.5f}]\n", curve[i].t,
                        curve[i].p, curve[i].stderr_, curve[i].lower, curve[i].upper);
}

void write_curve_csv(const blowup_args& a, const ensemble_result& r,
                     const std::vector<curve_point>& curve, std::ostream& os) {
  os << "# " << a.model.model << " (" << parameter_text(a.model) << "), scheme " << r.scheme << ", "
     << to_string(r.control) << " steps";
  if (r.control != step_control::fixed) os << fmt::format(", tolerance {}", r.tolerance);
  os << fmt::format(", dt {}, {} paths\n", r.dt, r.paths);
  os << "t,blown_up,p,stderr,wilson_lower,wilson_upper\n";
  for (const curve_point& c : curve)
    os << fmt::format("{},{},{},{},{},{}\n", c.t, c.blown_up, c.p, c.stderr_, c.lower, c.upper);
  // The explosion times themselves, for the density plot.
  os << "# explosion times\n";
  for (const double t : r.explosion_times) os << fmt::format("# tau,{}\n", t);
}

int run_blowup_command(const blowup_args& a) {
  const std::optional<models::model_instance> sde = make_model(a.model);
  if (!sde) return exit_usage;
  const std::optional<matrix> v0 = read_state(a.v0, "--V0", true);
  if (!v0) return exit_usage;

  integrate_options iopt;
  iopt.dt = a.dt;
  iopt.blowup_threshold = a.blowup_threshold;
  ensemble_options eopt;
  eopt.seed = a.run.seed;
  eopt.paths = a.run.paths;
  eopt.threads = a.run.threads;
  eopt.batched = a.run.batched;
  eopt.device = parse_device(a.run.device, "--device");
  // The curve reads the paths' statuses and times only: the summaries keep no covariance.
  eopt.covariance = covariance_mode::diagonal;
  try {
    apply_step_flags(a.steps, iopt);
    validate_options(iopt);
    if (a.grid < 1 || a.grid > max_curve_grid)
      throw_invalid_argument("ncsde blowup", "--grid", a.grid,
                             fmt::format("in [1, {}]", max_curve_grid));
    check_initial_size(*v0, a.blowup_threshold);
    const step_grid grid(0.0, a.t_end, iopt.dt);
    check_sde_steps(a.t_end, a.dt, static_cast<double>(grid.steps), a.run.paths, "--paths");
    // Per path (limits.hpp): the status and the explosion or stop time; no functionals.
    const double K = packed_size(static_cast<int>(v0->rows()));
    const double per_path = ensemble_bytes_per_path(K, 0, false, 0);
    check_memory("--paths", std::to_string(a.run.paths),
                 per_path * static_cast<double>(a.run.paths) +
                     ensemble_summary_bytes(K, static_cast<double>(a.run.paths), 0, false),
                 fmt::format("{:.0f} bytes per path", per_path));
  } catch (const ncsde::invalid_argument& e) {
    report_invalid_argument(e);
    return exit_usage;
  }

  // Under mpirun only rank 0 writes, and every rank learns whether it could.
  const std::filesystem::path script(NCSDE_BLOWUP_PLOT_SCRIPT);
  const std::filesystem::path dir(a.plots);
  std::vector<std::unique_ptr<output_file>> plots;  // blowup.csv
  if (!a.plots.empty())
    if (const int failed =
            open_plots_on_rank0("blowup", script.string(), dir, {"blowup.csv"}, plots))
      return failed;

  // Under mpirun the paths are split over the ranks and rank 0 reports (run_over_ranks).
  const std::optional<ensemble_result> run =
      run_over_ranks(*sde, a.run.scheme, *v0, a.t_end, iopt, eopt);
  if (!run) return exit_ok;  // the other ranks write nothing
  const ensemble_result& r = *run;
  if (r.exhausted > 0)
    std::cerr << fmt::format(
        "ncsde blowup: warning: {} of {} paths used up their work limit before T (neither "
        "completed nor blown up; see docs/step_control.md)\n",
        r.exhausted, r.paths);
  const std::vector<curve_point> curve = blowup_curve(r, a.grid);
  if (a.format == "json")
    std::cout << json_report(a, r, curve) << '\n';
  else
    table_report(a, r, curve, std::cout);

  if (!plots.empty()) {
    write_curve_csv(a, r, curve, plots[0]->stream());
    if (!plots[0]->commit()) return exit_failure;
    const std::filesystem::path png = dir / "blowup.png";
    if (!run_plot_script("blowup", script.string(), {png.string(), (dir / "blowup.csv").string()}))
      return exit_failure;
  }
  return exit_ok;
}

}  // namespace

command blowup_command() {
  command c;
  c.name = "blowup";
  c.description = "Blow-up law of a model's covariance SDE: P(tau <= t) and the explosion times";
  c.setup = [](CLI::App& sub) -> std::function<int()> {
    auto a = std::make_shared<blowup_args>();
    a->model.model = "transformer";
    add_model_flags(sub, a->model);
    add_step_flags(sub, a->steps, "increment");
    sub.add_option(
           "--V0", a->v0,
           "Initial state V0, symmetric positive semidefinite: rows separated by ';', "
           "entries by ','; default: the reference state V3 (diag 1, 1.6, 0.7; rho12 = 0.5, "
           "rho13 = 0.3, rho23 = 0.7)")
        ->capture_default_str();
    sub.add_option("--T", a->t_end, "Final time T, > 0")->capture_default_str();
    sub.add_option("--dt", a->dt, "Grid step (with adaptive steps: the largest step), > 0")
        ->capture_default_str();
    add_ensemble_flags(sub, a->run);
    sub.add_option("--blowup-threshold", a->blowup_threshold,
                   "max |V^ab| above which a path has blown up, in (0, 1e100]")
        ->capture_default_str();
    sub.add_option("--grid", a->grid, "Points t = T*i/grid of the curve P(tau <= t)")
        ->transform(decimal_integer)
        ->capture_default_str();
    add_format_flag(sub, a->format, "Report format");
    add_plots_flag(sub, a->plots, "Write blowup.csv and blowup.png into this directory");
    return [a]() { return run_blowup_command(*a); };
  };
  return c;
}

}  // namespace ncsde::cli
