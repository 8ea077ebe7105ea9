/// `ncsde simulate`: an ensemble of paths of a registered model's covariance SDE (ncsde::run_ensemble
/// on problem{the model's SDE, V0, T}, through models::model_instance::run_ensemble).
///
///   ncsde simulate --V0 "..." [--model M] [model flags] [--T 1] [--dt 1e-3] [--paths 1000]
///                  [--seed 1] [--threads 0] [--scheme em|NAME] [--per-path]
///                  [--pd-policy automatic|throw|count|project|refine] [--blowup-threshold 1e6]
///                  [--stop-level K] [--step-control fixed|increment|doubling]
///                  [--tolerance 0.05] [--max-depth 40]
///                  [--out FILE.csv] [--format table|json] [--paths-range A:B --partial FILE]
///                  [--covariance automatic|full|diagonal]
///
/// --scheme takes any registry scheme (ncsde/schemes.hpp; `ncsde convergence --list-schemes`).
/// The functionals summarised are every correlation ρ^{ab} (a < b, named rho<a><b>, 1-indexed) and
/// every diagonal entry V^{aa} (named V<a><a>). Prints summary_table or summary_json; with --out
/// also writes one CSV row per path (write_csv: path,status,t_stop,V11,V12,…,Vmm), replacing FILE
/// only when the run succeeds (cli::output_file). With --paths-range A:B --partial FILE it runs only
/// the paths [A, B) and writes them as a partial result (models/shards.hpp), and `ncsde merge`
/// joins the partials into this command's output for the whole run. Runs beyond the limits of
/// limits.hpp (steps per path and in all, memory) are refused before they start.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "command.hpp"
#include "limits.hpp"
#include "models/model_flags.hpp"
#include "models/shards.hpp"
#include "models/step_flags.hpp"
#include "mpi_world.hpp"
#include "ncsde/device.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/ensemble_io.hpp"
#include "ncsde/error.hpp"
#include "ncsde/schemes.hpp"
#include "ncsde/symmetric.hpp"
#include "process.hpp"

namespace ncsde::cli {
namespace {

struct simulate_args {
  model_flags model;
  step_flags steps;
  std::string v0;
  double t_end = 1.0;
  double dt = 1e-3;
  ensemble_flags run;
  std::string pd_policy = "automatic";  ///< count: every scheme keeps its own law (maths.md §8.5)
  double blowup_threshold = 1e6;
  double stop_level = std::numeric_limits<double>::infinity();
  std::string out;
  std::string format = "table";
  std::string paths_range;
  std::string partial;
  std::string covariance = "automatic";
};

int run_simulate_command(const simulate_args& a) {
  const std::optional<models::model_instance> sde = make_model(a.model);
  if (!sde) return exit_usage;
  const std::optional<matrix> v0 = read_state(a.v0, "--V0", true);
  if (!v0) return exit_usage;
  const int m = static_cast<int>(v0->rows());

  integrate_options iopt;
  iopt.dt = a.dt;
  iopt.policy = parse_pd_policy(a.pd_policy, "--pd-policy");
  iopt.blowup_threshold = a.blowup_threshold;
  if (!(a.stop_level > 0.0))
    throw_invalid_argument("ncsde simulate", "--stop-level", a.stop_level, "> 0 (inf: never stop)");
  // Stopped process (docs/maths.md §8.1): status stopped at the first step with max_a V^{aa} > K.
  iopt.stop_level = a.stop_level;

  ensemble_options eopt;
  eopt.seed = a.run.seed;
  eopt.paths = a.run.paths;
  eopt.threads = a.run.threads;
  eopt.batched = a.run.batched;
  eopt.device = parse_device(a.run.device, "--device");
  // A shard keeps its paths' records, so that `ncsde merge --out` can write the CSV.
  const bool shard = !a.partial.empty();
  eopt.keep_paths = !a.out.empty() || shard;
  eopt.functionals = summary_functionals(m);
  eopt.covariance = parse_covariance_mode(a.covariance, "--covariance");

  // Every value is checked before --out is touched, so that a bad flag leaves an earlier file as it
  // was; the grid check also bounds T/dt.
  // The run's size is checked too (limits.hpp): steps, and the memory it keeps per path.
  path_range range{0, a.run.paths};
  try {
    range = check_shard_flags("simulate", a.paths_range, a.partial, a.out, a.run.paths);
    apply_step_flags(a.steps, iopt);
    validate_options(iopt);
    check_initial_size(*v0, a.blowup_threshold);
    const step_grid grid(0.0, a.t_end, iopt.dt);
    check_sde_steps(a.t_end, a.dt, static_cast<double>(grid.steps), range.last - range.first,
                    shard ? "--paths-range" : "--paths");
    // Per path (limits.hpp): the functionals' values, the status, the summary's copies and, for
    // --out or a shard, the path's record.
    const double K = packed_size(m);
    const double per_path = ensemble_bytes_per_path(K, eopt.functionals.size(), eopt.keep_paths,
                                                    iopt.save_times.size());
    const double paths = static_cast<double>(range.last - range.first);
    const bool covariance = keeps_covariance(eopt.covariance, static_cast<int>(K));
    const double summaries = ensemble_summary_bytes(K, paths, iopt.save_times.size(), covariance);
    check_memory(
        shard ? "--paths-range" : "--paths", shard ? a.paths_range : std::to_string(a.run.paths),
        per_path * paths + summaries,
        fmt::format("{:.0f} bytes per path: {} functional value{}{}; {:.0f} bytes of "
                    "summaries{}",
                    per_path, eopt.functionals.size(), eopt.functionals.size() == 1 ? "" : "s",
                    eopt.keep_paths ? " and, for --out, the path's V" : "", summaries,
                    covariance ? ", with the entries' covariance" : ""));
  } catch (const ncsde::invalid_argument& e) {
    report_invalid_argument(e);
    return exit_usage;
  }
  // The file is created (as a temporary next to --out or --partial) before the run, so that an
  // unwritable path fails at once, and replaces it only once the run has succeeded.
  std::optional<output_file> file;
  if (shard) {
    file.emplace("simulate", "--partial", a.partial);
    if (!file->ok()) return exit_usage;
    // The paths of the range only, as a piece of the run (ncsde merge joins the pieces).
    const ensemble_partial piece =
        sde->run_ensemble_range(a.run.scheme, *v0, a.t_end, iopt, eopt, range);
    file->stream() << partial_file_bytes("simulate", current_run_identity(), serialize(piece));
    if (!file->commit()) return exit_failure;
    std::cout << fmt::format("ncsde simulate: paths [{}, {}) of {} written to {}\n", range.first,
                             range.last, a.run.paths, a.partial);
    return exit_ok;
  }

  // Under mpirun rank 0 creates --out, the ranks split the paths (run_over_ranks) and rank 0
  // writes; every step that can fail on one rank is agreed on by all. One process: run_ensemble on
  // the model's concrete SDE type (the registry entry instantiates it per scheme).
  if (!open_output_on_rank0(file, "simulate", a.out)) return exit_usage;  // rank 0 said why
  const std::optional<ensemble_result> r =
      run_over_ranks(*sde, a.run.scheme, *v0, a.t_end, iopt, eopt);
  if (!r) return exit_ok;  // the other ranks write nothing
  return write_simulate_outputs(*r, a.format, file ? &*file : nullptr);
}

}  // namespace

command simulate_command() {
  command c;
  c.name = "simulate";
  c.description = "Simulate an ensemble of paths of a model's covariance SDE and summarise it";
  c.setup = [](CLI::App& sub) -> std::function<int()> {
    auto a = std::make_shared<simulate_args>();
    add_model_flags(sub, a->model);
    add_step_flags(sub, a->steps);
    sub.add_option("--V0", a->v0,
                   "Initial state V0, symmetric positive semidefinite: rows separated by ';', "
                   "entries by ',' (e.g. \"1,0.5;0.5,1\")")
        ->required();
    sub.add_option("--T", a->t_end, "Final time T (depth/width ratio), > 0")->capture_default_str();
    sub.add_option("--dt", a->dt, "Step size, > 0")->capture_default_str();
    add_ensemble_flags(sub, a->run);
    sub.add_option("--pd-policy", a->pd_policy,
                   "What a step leaving the positive-semidefinite cone does (automatic: count, "
                   "which leaves every scheme's law as it is; docs/maths.md section 8.5)")
        ->check(CLI::IsMember({"automatic", "throw", "count", "project", "refine"}))
        ->capture_default_str();
    sub.add_option("--blowup-threshold", a->blowup_threshold,
                   "max |V^ab| above which a path has blown up, in (0, 1e100]")
        ->capture_default_str();
    sub.add_option("--stop-level", a->stop_level,
                   "Stop a path (status stopped) at the first step with max_a V^aa > K; "
                   "default inf: never")
        ->capture_default_str();
    sub.add_option("--out", a->out, "Write one CSV row per path to this file");
    sub.add_option("--paths-range", a->paths_range,
                   "A:B: run only the paths [A, B) of the --paths paths (a shard; with --partial)");
    sub.add_option("--partial", a->partial,
                   "Write the shard's paths as a partial result to this file (with --paths-range); "
                   "ncsde merge joins the shards into the output of the whole run");
    add_format_flag(sub, a->format, "Summary format");
    sub.add_option("--covariance", a->covariance,
                   "What the summaries keep of the entries' spread: full (their covariance, K^2 "
                   "numbers for K = m(m+1)/2 entries), diagonal (their variances) or automatic "
                   "(full for m <= 16); means and standard errors are the same either way")
        ->check(CLI::IsMember({"automatic", "full", "diagonal"}))
        ->capture_default_str();
    return [a]() { return run_simulate_command(*a); };
  };
  return c;
}

}  // namespace ncsde::cli
