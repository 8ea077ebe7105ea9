/// `ncsde convergence`: measured strong and weak orders of the registry's schemes
/// (ncsde/schemes.hpp) on the analytic test problems (ncsde/convergence.hpp, ncsde/analytic.hpp).
///
///   ncsde convergence [--problem NAME|all] [--scheme NAME|all] [--kind strong|weak|all]
///                     [--paths N] [--seed S] [--threads T] [--levels L] [--first-level F]
///                     [--format table|json] [--plots DIR] [--check] [--list] [--list-schemes]
///                     [--step-control fixed|increment|doubling] [--tolerance TOL0] [--max-depth D]
///
/// --scheme takes a registry name (em, milstein, milstein-commutative, …; --list-schemes prints
/// them with their declared orders and noise requests).
/// table: one row per (problem, scheme, kind) with the fitted order, its standard error, the 95%
/// CI, the expected order and pass/fail (|order − expected| ≤ tolerance). json: the array of
/// convergence_json(). --plots DIR writes DIR/convergence.json and one PNG per problem through
/// validation/plots/convergence_plot.py (/usr/bin/python3 with matplotlib). --check: exit 1 when
/// some order is outside its tolerance.
///
/// --step-control increment|doubling runs the adaptive study instead (run_adaptive_convergence,
/// ncsde/convergence.hpp) on the problems with a pathwise exact solution: tolerances TOL0/2^l,
/// l < --levels (default 5; TOL0 each problem's own unless --tolerance), grid step
/// T/2^--first-level, the fixed ladder of the problem on the same paths beside it; orders are
/// slopes against log(1/cost), cost = steps per path. Table or JSON (adaptive_convergence_json);
/// --plots and --check belong to the fixed-step study.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"
#include "limits.hpp"
#include "models/step_flags.hpp"
#include "mpi_world.hpp"
#include "ncsde/convergence.hpp"
#include "ncsde/error.hpp"
#include "ncsde/schemes.hpp"
#include "process.hpp"

#ifndef NCSDE_PLOT_SCRIPT
#error "NCSDE_PLOT_SCRIPT must name validation/plots/convergence_plot.py"
#endif

namespace ncsde::cli {
namespace {

struct convergence_args {
  std::string problem = "all";
  std::string scheme = "all";
  std::string kind = "all";
  std::string format = "table";
  std::string plots;
  long long paths = 0;
  std::uint64_t seed = 1;
  int threads = 0;
  int levels = 0;
  int first_level = -1;
  double strong_tolerance = 0.05;
  double weak_tolerance = 0.1;
  bool weak_differences = false;
  bool check = false;
  bool list = false;
  bool list_schemes = false;
  step_flags steps;
  bool tolerance_given = false;  ///< --tolerance was on the command line
  bool levels_given = false;
};

/// One line per registry scheme: name, strong and weak orders on general / commutative / additive
/// noise, the iterated integrals it uses, whether it preserves the cone, its description.
void print_schemes() {
  std::cout << fmt::format("{:<21} {:<17} {:<17} {:<20} {:<5} {}\n", "scheme", "strong (g/c/a)",
                           "weak (g/c/a)", "iterated integrals", "cone", "description");
  for (const scheme_descriptor& d : builtin_scheme_descriptors()) {
    auto orders = [](const std::array<double, 3>& o) {
      return fmt::format("{:g}/{:g}/{:g}", o[0], o[1], o[2]);
    };
    std::cout << fmt::format("{:<21} {:<17} {:<17} {:<20} {:<5} {}\n", d.name, orders(d.strong),
                             orders(d.weak), to_string(d.request.iterated),
                             d.preserves_cone ? "yes" : "no", d.description);
  }
}

/// The adaptive study (--step-control increment|doubling) of the problems with a pathwise solution.
int run_adaptive_command(const convergence_args& a, const std::vector<convergence_study>& studies) {
  integrate_options steps;
  apply_step_flags(a.steps, steps);
  if (!a.plots.empty() || a.check)
    throw_invalid("ncsde convergence",
                  fmt::format("{} belongs to the fixed-step study, not to --step-control {}",
                              a.plots.empty() ? "--check" : "--plots", a.steps.control));
  adaptive_convergence_options opt;
  opt.seed = a.seed;
  opt.paths = a.paths;
  opt.threads = a.threads;
  opt.control = steps.control;
  opt.tolerance = a.tolerance_given ? steps.tolerance : 0.0;
  opt.max_depth = steps.max_depth;
  if (a.levels_given) opt.levels = a.levels;
  opt.first_level = a.first_level;
  opt.strong = a.kind != "weak";
  opt.weak = a.kind != "strong";
  opt.sharing = world_sharing();
  const bool root = world().rank == 0;
  const std::vector<std::string> schemes =
      a.scheme == "all" ? scheme_names() : std::vector<std::string>{a.scheme};
  const bool table = a.format == "table";
  std::vector<adaptive_convergence_series> all;
  for (const convergence_study& s : studies) {
    if (a.problem != "all" && a.problem != s.name) continue;
    if (!s.run_adaptive) {
      if (a.problem == "all") continue;
      throw_invalid(fmt::format("ncsde convergence --step-control {}", a.steps.control),
                    fmt::format("--problem {} has no pathwise exact solution to measure adaptive "
                                "errors against (problems with one: gbm, hadamard, matrix-gbm)",
                                s.name));
    }
    for (const std::string& scheme : schemes) {
      opt.scheme = scheme;
      const std::vector<adaptive_convergence_series> rows = s.run_adaptive(opt);
      if (!root) continue;  // under mpirun the series are rank 0's
      if (table) {
        const std::string text = adaptive_convergence_table(rows);
        std::cout << (all.empty() ? text : text.substr(text.find('\n') + 1)) << std::flush;
        std::cerr << fmt::format(
            "  [{} {}: {} paths, seed {}, tol {:.4g} .. {:.4g}, grid dt {:.4g}, {:.1f} s]\n",
            s.name, scheme, rows.front().paths, rows.front().seed, rows.front().tolerances.front(),
            rows.front().tolerances.back(), rows.front().grid_dt, rows.front().seconds);
      }
      all.insert(all.end(), rows.begin(), rows.end());
    }
  }
  if (!root) return exit_ok;
  if (table)
    std::cout << "order(cost): slope of log error on log(1/steps per path); ratio: fixed / "
                 "adaptive error at the finest tolerance's cost (* outside the fixed ladder)\n";
  else
    std::cout << adaptive_convergence_json(all) << '\n';
  return exit_ok;
}

int run_convergence_command(const convergence_args& a) {
  const std::vector<convergence_study> studies = standard_convergence_studies();
  if (a.list) {
    for (const convergence_study& s : studies)
      std::cout << fmt::format("{:<18} {}\n", s.name, s.description);
    return exit_ok;
  }
  if (a.list_schemes) {
    print_schemes();
    return exit_ok;
  }
  if (a.paths > 0) {
    // Memory (limits.hpp), for --paths (each problem's default fits): per path and scheme, a
    // strong and a weak value per level (the adaptive study: five values per tolerance, and the
    // fixed ladder's two per level), its cone exits, and the series' copies when they are fitted
    // (twice the values). Without --levels, the largest a problem may use (16).
    const double schemes = a.scheme == "all" ? static_cast<double>(scheme_names().size()) : 1.0;
    const double levels = a.levels_given ? a.levels : 16.0;
    const double per_path = schemes * (2.0 * 8.0 * 7.0 * levels + 8.0) + 16.0;
    check_memory("--paths", std::to_string(a.paths), per_path * static_cast<double>(a.paths),
                 fmt::format("{:.0f} bytes per path: {:g} scheme{}, {:g} levels", per_path, schemes,
                             schemes == 1.0 ? "" : "s", levels));
  }
  if (a.steps.control != "fixed") return run_adaptive_command(a, studies);

  // Fail before the (long) run, not after it: the plot directory is created and convergence.json
  // is created as a temporary, which replaces the file only once the run has succeeded.
  const std::filesystem::path script(NCSDE_PLOT_SCRIPT);
  const std::filesystem::path dir(a.plots);
  // Under mpirun rank 0 writes every output; the ranks split each problem's paths.
  std::vector<std::unique_ptr<output_file>> plots;  // convergence.json
  if (!a.plots.empty())
    if (const int failed =
            open_plots_on_rank0("convergence", script.string(), dir, {"convergence.json"}, plots))
      return failed;
  const bool root = world().rank == 0;

  convergence_options opt;
  opt.seed = a.seed;
  opt.paths = a.paths;
  opt.threads = a.threads;
  opt.levels = a.levels;
  opt.first_level = a.first_level;
  opt.strong_tolerance = a.strong_tolerance;
  opt.weak_tolerance = a.weak_tolerance;
  opt.weak_differences = a.weak_differences;
  if (a.scheme != "all") opt.schemes = {a.scheme};
  opt.strong = a.kind != "weak";
  opt.weak = a.kind != "strong";
  opt.sharing = world_sharing();

  const bool table = a.format == "table";
  std::vector<convergence_series> all;
  for (const convergence_study& s : studies) {
    if (a.problem != "all" && a.problem != s.name) continue;
    std::vector<convergence_series> rows = s.run(opt);
    if (rows.empty()) continue;  // e.g. Milstein weak errors on a problem without exact solution
    if (table) {
      // Rows are printed problem by problem as they finish; the header only once.
      const std::string text = convergence_table(rows);
      std::cout << (all.empty() ? text : text.substr(text.find('\n') + 1)) << std::flush;
      std::cerr << fmt::format(
          "  [{}: {} paths, seed {}, {} levels dt = {:.4g} .. {:.4g}, {:.1f} s]\n", s.name,
          rows.front().paths, rows.front().seed, rows.front().dts.size(), rows.front().dts.front(),
          rows.front().dts.back(), rows.front().seconds);
    }
    all.insert(all.end(), rows.begin(), rows.end());
  }
  if (!root) return exit_ok;  // the other ranks have sent their paths to rank 0
  if (all.empty()) {
    // Weak series without a pathwise solution: the schemes of the increments only (convergence.hpp).
    std::vector<std::string> increments_only;
    for (const scheme_descriptor& d : builtin_scheme_descriptors())
      if (d.request.iterated == iterated_terms::none) increments_only.emplace_back(d.name);
    std::fprintf(stderr,
                 "ncsde convergence: nothing to measure: weak errors of schemes other than %s are "
                 "measured only on problems with a pathwise exact solution (gbm, hadamard, "
                 "matrix-gbm)\n",
                 fmt::format("{}", fmt::join(increments_only, ", ")).c_str());
    return exit_usage;
  }
  if (!table) std::cout << convergence_json(all) << '\n';

  if (!plots.empty()) {
    plots[0]->stream() << convergence_json(all) << '\n';
    if (!plots[0]->commit()) return exit_failure;
    const std::filesystem::path json = dir / "convergence.json";
    // The registry's scheme names fix each scheme's colour (convergence_plot.py).
    if (!run_plot_script(
            "convergence", script.string(),
            {json.string(), dir.string(), fmt::format("{}", fmt::join(scheme_names(), ","))}))
      return exit_failure;
  }

  if (a.check) {
    long long failed = 0;
    for (const convergence_series& s : all) failed += s.pass ? 0 : 1;
    if (failed > 0) {
      std::fprintf(stderr, "ncsde convergence: %lld of %zu orders are outside their tolerance\n",
                   failed, all.size());
      return exit_failure;
    }
  }
  return exit_ok;
}

}  // namespace

command convergence_command() {
  command c;
  c.name = "convergence";
  c.description =
      "Measure strong and weak convergence orders of the schemes on analytic test problems";
  c.setup = [](CLI::App& sub) -> std::function<int()> {
    auto a = std::make_shared<convergence_args>();
    std::vector<std::string> problems{"all"};
    for (const convergence_study& s : standard_convergence_studies()) problems.push_back(s.name);
    sub.add_option("--problem", a->problem, "Test problem (see --list)")
        ->check(CLI::IsMember(problems))
        ->capture_default_str();
    std::vector<std::string> schemes = scheme_names();
    schemes.push_back("all");
    sub.add_option("--scheme", a->scheme, "Scheme (see --list-schemes)")
        ->check(CLI::IsMember(schemes))
        ->capture_default_str();
    sub.add_option("--kind", a->kind, "Error kind")
        ->check(CLI::IsMember({"strong", "weak", "all"}))
        ->capture_default_str();
    sub.add_option("--paths", a->paths,
                   "Monte Carlo paths per problem (default: each problem's own)")
        ->transform(decimal_integer)
        ->check(CLI::Range(2LL, max_paths));
    add_seed_flag(sub, a->seed, "Seed of the (seed, path) random streams");
    add_threads_flag(sub, a->threads);
    CLI::Option* levels = sub.add_option(
        "--levels", a->levels,
        "Number of step sizes dt = T/2^l (default: each problem's own), or of tolerances "
        "TOL0/2^l with --step-control increment|doubling (default 5)");
    levels->transform(decimal_integer)->check(CLI::Range(3, 16));
    sub.add_option("--first-level", a->first_level,
                   "Coarsest step dt = T/2^first-level (default: each problem's own)")
        ->transform(decimal_integer)
        ->check(CLI::Range(0, 20));
    add_format_flag(sub, a->format, "Output format");
    add_plots_flag(sub, a->plots,
                   "Write convergence.json and one PNG per problem into this directory");
    sub.add_option("--strong-tolerance", a->strong_tolerance, "Pass band of strong orders")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    sub.add_option("--weak-tolerance", a->weak_tolerance, "Pass band of weak orders")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    sub.add_flag("--weak-differences", a->weak_differences,
                 "Weak orders from the differences E f(X_dt) - E f(X_dt/2) of successive levels "
                 "on the same paths (no closed form needed; the default of problems without one)");
    sub.add_flag("--check", a->check, "Exit with status 1 when an order is outside its tolerance");
    sub.add_flag("--list", a->list, "List the problems and exit");
    sub.add_flag("--list-schemes", a->list_schemes,
                 "List the schemes with their declared orders and noise requests, and exit");
    add_step_flags(sub, a->steps);
    CLI::Option* tolerance = sub.get_option("--tolerance");
    tolerance->description(
        "First tolerance TOL0 of the adaptive study, in (0, 1] (default: each problem's own)");
    return [a, tolerance, levels]() {
      a->tolerance_given = tolerance->count() > 0;
      a->levels_given = levels->count() > 0;
      return run_convergence_command(*a);
    };
  };
  return c;
}

}  // namespace ncsde::cli
