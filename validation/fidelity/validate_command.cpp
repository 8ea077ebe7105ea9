/// `ncsde validate`: does the covariance SDE of a model have the law of its finite networks?
///
///   ncsde validate [--model M] [model flags] [--V0 "…"] [--T 1] [--n 32,64,128,256]
///                  [--networks 100000] [--paths 100000] [--dt 0.0009765625] [--stop-level 5]
///                  [--tail-level 2.5] [--unstopped-tail-level 20] [--nk 0] [--sampler reduced|literal] [--variants auto]
///                  [--alpha 0.01] [--limit-exponent fitted] [--seed 1] [--threads 0] [--device cpu]
///                  [--plots DIR]
///                  [--format table|json] [--check] [--check-limit] [--paths-range A:B --partial F]
///
/// For each width n the networks (depth d = T·n, n_k = n unless --nk) and the SDE (Euler–Maruyama,
/// one run, monitored on each grid k/n) are stopped at the first time max_a V^{aa} > K
/// (docs/maths.md §8.1, §9.5). The tested family, per n: two-sample KS distance and p-value of every ρ^{ab} and V^{aa} of
/// V_{T∧τ}; the smooth statistics, differences of the means of ρ^{ab} and min(V^{aa}, K) (z-tests);
/// the stopped fractions and the tail P(V¹¹_{T∧τ} ≥ K′) (two-proportion z-tests). Reported
/// besides: the tail P(max_a V^{aa}_T ≥ K″) of the unstopped processes (blow-up counts), which
/// probes beyond the stop level where the convergence need not hold (so it is not in the family);
/// quantiles of ρ¹²; the trend of the KS distances in n; the rate of the smooth-statistic gaps
/// (C_f·n^−β) and the gaps extrapolated to n → ∞ (--check-limit makes those the verdict). Two
/// reference rows bound what "agree" can mean: a second, independent SDE run (the two-sample noise
/// floor) and, for attention-type models, deliberately wrong SDEs (variants.hpp) compared with the
/// widest networks — the power check: they must be rejected while the right SDE is not.
/// A family of comparisons is rejected at level α when its Bonferroni-adjusted smallest p-value is
/// below α. The defaults (validate_defaults, shared with scripts/main.sh and ncsde.validate) are the
/// study that shows power: without --model, strong attention (γ² = 1, τ₀ = ½) at 10⁵ samples.
/// --check exits 0 when the right SDE is not rejected at the largest n and every wrong variant is,
/// 1 when the right SDE is rejected, 3 when a wrong variant is not (the run lacks power to decide).
/// --plots DIR writes the samples (CSV), validation.md and validation.json, and draws
/// rho_density, ks_vs_n, sample_paths, stopped_fraction and smooth_gaps (each as .png, .pdf and
/// .svg) through validation/plots/validate_plot.py, for every model. Under mpirun (mpi_world.hpp) the networks of every width are
/// split over the ranks (sample_over_ranks) while rank 0 runs the SDEs; rank 0 compares and writes,
/// the output byte for byte that of one process. --paths-range A:B --partial FILE makes a shard
/// (validate_shards.hpp), which `ncsde merge` joins.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <system_error>
#include <variant>
#include <vector>

#include "../../solvers/byte_codec.hpp"
#include "command.hpp"
#include "fidelity/fidelity.hpp"
#include "fidelity/validate_report.hpp"
#include "fidelity/validate_shards.hpp"
#include "fidelity/variants.hpp"
#include "limits.hpp"
#include "models/model_flags.hpp"
#include "models/parameter_report.hpp"
#include "models/shards.hpp"
#include "models/step_flags.hpp"
#include "mpi_world.hpp"
#include "ncsde/device.hpp"
#include "ncsde/networks/literal.hpp"
#include "ncsde/networks/reduced.hpp"
#include "ncsde/networks/sample.hpp"
#include "ncsde/symmetric.hpp"
#include "process.hpp"

#ifndef NCSDE_VALIDATE_PLOT_SCRIPT
#error "NCSDE_VALIDATE_PLOT_SCRIPT must name validation/plots/validate_plot.py"
#endif

namespace ncsde::cli {
namespace {

struct validate_args {
  model_flags model;
  std::string v0;
  double t_end = validate_defaults{}.t_end;
  std::vector<int> widths = validate_defaults{}.widths;
  long long networks = validate_defaults{}.networks;
  long long paths = validate_defaults{}.paths;
  double dt = validate_defaults{}.dt;
  double stop_level = validate_defaults{}.stop_level;
  double tail_level = validate_defaults{}.tail_level;
  double unstopped_level = validate_defaults{}.unstopped_level;
  int n_k = validate_defaults{}.n_k;
  std::string sampler = "reduced";
  std::string variants = validate_defaults{}.variants;
  double alpha = validate_defaults{}.alpha;
  std::string limit_exponent = validate_defaults{}.limit_exponent;  ///< β, or "fitted"
  std::uint64_t seed = validate_defaults{}.seed;
  int threads = 0;
  std::string device = "cpu";  ///< where the right SDE's paths run (--device)
  std::string plots;
  std::string format = "table";
  bool check = false;
  bool check_limit = false;
  std::string paths_range;  ///< a shard: "A:B" of the samples [0, max(networks, paths))
  std::string partial;      ///< the shard's partial file
  /// The command line that identifies the run in a shard (program_arguments() without the flags
  /// that do not change the results).
  std::vector<std::string> run_key;
  /// Set by `ncsde merge`: the merged samples of the shards, used in place of sampling.
  const validate_pieces* preloaded = nullptr;
  int kept_paths = 20;
  const CLI::Option* sampler_option = nullptr;
  const CLI::Option* model_option = nullptr;
  bool sampler_given() const { return sampler_option != nullptr && sampler_option->count() > 0; }
};

/// Without --model, the default study's model and parameters (validate_defaults), each parameter
/// flag given keeping its value; with --model, the model's own defaults.
void apply_default_study(validate_args& a) {
  if (a.model_option != nullptr && a.model_option->count() > 0) return;
  const validate_defaults study;
  a.model.model = study.model;
  for (const auto& [name, value] : study.parameters) {
    const auto given = std::find_if(a.model.options.begin(), a.model.options.end(),
                                    [&](const auto& o) { return o.first == name; });
    if (given != a.model.options.end() && given->second != nullptr && given->second->count() > 0)
      continue;
    a.model.values.find(name)->second = value;
  }
}

/// A row of the report: one sample compared with one reference.
/// The model's parameters for the report's title: the four architectures as before (γ² = …, τ₀ =
/// …, r = …, c₊ = …, c₋ = …, heads = …, W^O, causal), another model as name = value of each.
std::string parameter_summary(const model_flags& model) {
  if (builtin_architecture(model.model)) {
    const models::shaped_params p = model.params();
    return fmt::format("γ² = {}, τ₀ = {}, r = {}, c₊ = {}, c₋ = {}, heads = {}{}{}", p.gamma2,
                       p.tau0, p.hidden_ratio, p.c_plus, p.c_minus, p.heads,
                       p.output_projection ? ", W^O" : "", p.causal ? ", causal" : "");
  }
  return parameter_text(model);
}

/// The model's parameters for the JSON report (the four architectures: the shaped_params fields).
nlohmann::json parameter_json(const model_flags& model) {
  if (builtin_architecture(model.model)) {
    const models::shaped_params p = model.params();
    return {{"gamma2", p.gamma2},
            {"tau0", p.tau0},
            {"hidden_ratio", p.hidden_ratio},
            {"c_plus", p.c_plus},
            {"c_minus", p.c_minus},
            {"heads", p.heads},
            {"output_projection", p.output_projection},
            {"causal", p.causal}};
  }
  return parameter_values_json(model);
}

/// Everything a run needs, checked and built before any output is touched or any sample drawn.
struct validate_plan {
  explicit validate_plan(models::model_instance model) : sde(std::move(model)) {}
  models::model_instance sde;
  matrix v0;
  int m = 0;
  std::vector<int> widths;
  bool shard = false;               ///< --paths-range/--partial: a piece of the run
  path_range range;                 ///< the samples of [0, max(networks, paths)) run here
  path_range sde_range, net_range;  ///< range ∩ the paths, range ∩ the networks
  std::optional<double> given_exponent;
  std::vector<variant_sde> wrong;
  std::string sampler;
  std::vector<models::network_instance> samplers;  ///< one per width
  sde_sample_options sopt;
  static constexpr int path_points = 64;  ///< sample paths are saved at T·j/64
};

/// The run's flags checked and its SDEs, wrong SDEs and networks built (nullopt: a usage error
/// already reported).
std::optional<validate_plan> plan_validate(const validate_args& a) {
  std::optional<models::model_instance> sde = make_model(a.model);
  if (!sde) return std::nullopt;
  validate_plan plan(std::move(*sde));
  matrix& v0 = plan.v0;
  v0 = validate_reference_state();
  if (!a.v0.empty()) {
    const std::optional<matrix> parsed = read_state(a.v0, "--V0", true);
    if (!parsed) return std::nullopt;
    v0 = *parsed;
  }
  plan.m = static_cast<int>(v0.rows());
  const int m = plan.m;
  if (m < 2)
    throw_invalid_argument("validate", "V0", "a 1x1 matrix", "at least 2x2 (ρ needs two tokens)");
  check_initial_size(v0, models::sde_sample_options{}.blowup_threshold,
                     "the SDE runs' blow-up threshold");
  plan.given_exponent = check_validate_settings(a.widths, a.stop_level, a.tail_level,
                                                a.unstopped_level, a.alpha, a.limit_exponent);
  std::vector<int>& widths = plan.widths;
  widths = a.widths;
  // A shard runs the samples [A, B) of [0, max(networks, paths)): networks [A, B) ∩ [0,
  // networks) of every width, paths [A, B) ∩ [0, paths) of every SDE run.
  plan.shard = !a.partial.empty() || !a.paths_range.empty();
  const bool shard = plan.shard;
  path_range& range = plan.range;
  range = path_range{0, std::max(a.networks, a.paths)};
  if (shard) {
    if (!a.plots.empty())
      throw_invalid_argument("ncsde validate", "--plots", a.plots,
                             "not given with --partial (ncsde merge --plots draws the whole run)");
    range = check_shard_flags("validate", a.paths_range, a.partial, "", range.last);
  }
  plan.sde_range = path_range{std::min(range.first, a.paths), std::min(range.last, a.paths)};
  plan.net_range = path_range{std::min(range.first, a.networks), std::min(range.last, a.networks)};
  if (a.check_limit && widths.size() < 2)
    throw_invalid_argument("validate", "check_limit", fmt::format("{} width", widths.size()),
                           "two widths or more (the extrapolation to n → ∞ needs them)");

  // The wrong SDEs are variants of the four architectures' covariance_sde (variants.hpp); another
  // registered model has none, so its report has no power check.
  const models::covariance_sde* shaped = plan.sde.get<models::covariance_sde>();
  const std::vector<sde_variant> variants =
      validate_variants(a.variants, shaped, a.model.model, "--variants");
  std::vector<variant_sde>& wrong = plan.wrong;
  for (const sde_variant v : variants) wrong.emplace_back(*shaped, v);  // validates applicability

  // Networks are built (and their parameters checked: heads | n, r·n integer, …) before any run,
  // with the model's sampler: --sampler, or the model's first when it has no reduced one.
  const models::model_entry& entry = a.model.entry();
  plan.sampler = resolve_sampler(entry, a.sampler, a.sampler_given());
  const std::string& sampler = plan.sampler;
  const models::parameter_values values = a.model.parameter_values();
  std::vector<models::network_instance>& samplers = plan.samplers;
  for (const int n : widths) {
    const int n_k = a.n_k > 0 ? a.n_k : n;
    samplers.push_back(entry.make_network(sampler, values, models::network_request{m, n, n_k}));
  }

  // The SDE's options and every rule on them, before any output is touched or any run started:
  // dt and T against each width's grid k/n, and the run's size (limits.hpp).
  sde_sample_options& sopt = plan.sopt;
  sopt.t_end = a.t_end;
  sopt.dt = a.dt;
  sopt.widths = widths;
  sopt.stop_level = a.stop_level;
  sopt.paths = a.paths;
  sopt.seed = a.seed;
  sopt.threads = a.threads;
  sopt.kept_paths = a.kept_paths;
  sopt.device = parse_device(a.device, "--device");
  (void)detail::steps_per_layer(sopt);
  // T/dt is now an integer (T·n and 1/(n·dt) are): the sample paths' save times are steps.
  sopt.save_times = validate_save_times(a.t_end, a.dt);
  return plan;
}

/// The run's size against the machine (limits.hpp): the SDE steps, the memory of the samples and
/// the networks' work.
void check_validate_size(const validate_args& a, const validate_plan& plan) {
  const int m = plan.m;
  const std::vector<int>& widths = plan.widths;
  const int n_max = widths.back();
  const std::vector<variant_sde>& wrong = plan.wrong;
  const std::string& sampler = plan.sampler;
  const path_range& sde_range = plan.sde_range;
  const path_range& net_range = plan.net_range;
  const double steps = std::round(a.t_end / a.dt);
  {
    const double K = packed_size(m);
    const double entry = sizeof(vector) + 8.0 * K + 16.0 + sizeof(path_status);
    const int sde_runs = 2 + static_cast<int>(wrong.size());
    // A shard checks its own share: the paths and networks of its range.
    check_sde_steps(a.t_end, a.dt, steps, sde_range.size(), "--paths", sde_runs);
    // Per SDE path: V at the stop on each width's grid and unstopped (the first run), stopped and
    // unstopped (the floor and each wrong SDE), and the comparisons' values of one functional.
    const double per_path =
        entry * static_cast<double>((widths.size() + 1) * (sde_runs - 1) + 2) + 32.0;
    check_memory("--paths", std::to_string(a.paths),
                 per_path * static_cast<double>(sde_range.size()),
                 fmt::format("{:.0f} bytes per path: V at the stop on {} grids and at T, for {} "
                             "SDE runs",
                             per_path, widths.size(), sde_runs));
    // Per network, every width's ensemble is kept: its record (V at d and at the stop), and the
    // stopped and unstopped samples the comparisons take of it.
    const double per_network =
        static_cast<double>(widths.size()) * (sizeof(networks::network_record) + 2.0 * entry) +
        2.0 * entry;
    check_memory("--networks", std::to_string(a.networks),
                 per_network * static_cast<double>(net_range.size()),
                 fmt::format("{:.0f} bytes per network: V at d and at the stop for {} widths",
                             per_network, widths.size()));
    const bool literal_sampler = sampler == "literal";
    for (const int n : widths)
      check_network_work(a.model, literal_sampler, m, n, a.n_k > 0 ? a.n_k : n, a.networks,
                         static_cast<int>(std::lround(a.t_end * n)));
    if (literal_sampler) {
      network_flags widest;
      widest.n = n_max;
      widest.n_k = a.n_k;
      widest.networks = a.networks;
      widest.threads = a.threads;
      check_network_memory(a.model, widest, true, m, 1, 1, 0.0);
    }
  }
}

/// The samples of the run (or of the shard): the SDE on every grid, the noise floor, the networks
/// at each width, the wrong SDEs; or those `a.preloaded` holds (ncsde merge). False on the MPI
/// ranks other than 0, which only give their networks.
bool sample_validate(const validate_args& a, const validate_plan& plan, validate_samples& out,
                     std::vector<networks::network_ensemble>& nets_out) {
  const std::vector<int>& widths = plan.widths;
  const int n_max = widths.back();
  const matrix& v0 = plan.v0;
  const bool shard = plan.shard;
  const bool root = world().rank == 0;
  const bool table = a.format == "table" || shard;
  auto note = [&](const std::string& text) {
    if (table) std::fprintf(stderr, "%s\n", text.c_str());
  };
  sde_sample_options sopt = plan.sopt;
  // 1. The SDE, one run monitored on every grid; 2. an independent run (noise floor). Under
  // mpirun these run on rank 0 while the other ranks start on their networks; a failure here is
  // rank 0's failure in the first gathering of networks (sample_over_ranks).
  sde_sample_options floor_opt = sopt;
  floor_opt.seed = a.seed + 1;
  floor_opt.widths = {n_max};
  floor_opt.kept_paths = 0;
  if (shard) {
    sopt.range = plan.sde_range;
    floor_opt.range = plan.sde_range;
  }
  sde_sample reference, floor;
  std::optional<std::string> pending;
  if (a.preloaded != nullptr) {
    reference = a.preloaded->reference;
    floor = a.preloaded->floor;
  } else if (root) {
    try {
      note(fmt::format("ncsde validate: SDE, {} paths, dt = {:g} …", a.paths, a.dt));
      reference = plan.sde.sample_sde(v0, sopt);
      note("ncsde validate: second SDE run (noise floor) …");
      floor = plan.sde.sample_sde(v0, floor_opt);
    } catch (const std::exception& e) {
      if (!world().active) throw;
      pending = e.what();
    }
  }

  // 3. The networks at each width.
  std::vector<networks::network_ensemble> nets;
  networks::network_options nopt;
  nopt.networks = a.networks;
  nopt.threads = a.threads;
  nopt.stop_level = a.stop_level;
  nopt.continue_after_stop = true;
  if (shard) nopt.range = plan.net_range;
  for (std::size_t i = 0; i < widths.size(); ++i) {
    const int n = widths[i];
    const int d = static_cast<int>(std::lround(a.t_end * n));
    if (d < 1)
      throw_invalid_argument("validate", "T", a.t_end,
                             fmt::format("such that d = T·n >= 1 for n = {}", n));
    nopt.seed = a.seed + 100 + i;
    if (a.preloaded != nullptr) continue;
    note(fmt::format("ncsde validate: {} {} networks, n = d/T = {}, d = {} …", a.networks,
                     plan.sampler, n, d));
    std::optional<networks::network_ensemble> e =
        sample_over_ranks(plan.samplers[i], v0, d, nopt, i == 0 ? pending : std::nullopt);
    if (e) nets.push_back(std::move(*e));
  }
  if (!root) return false;  // the other ranks have given their networks; rank 0 writes
  if (a.preloaded != nullptr) nets = a.preloaded->nets;

  // 4. The wrong variants, on the widest grid.
  std::vector<sde_sample> wrong_samples;
  for (std::size_t i = 0; i < plan.wrong.size(); ++i) {
    // Monitored on every width's grid, as the right SDE: the limit test extrapolates its gaps.
    sde_sample_options vopt = sopt;
    vopt.kept_paths = 0;
    vopt.device = device_spec{};  // no device form: the CPU, as the report says
    vopt.seed = a.seed + 2 + i;
    if (a.preloaded != nullptr) {
      wrong_samples.push_back(a.preloaded->wrong.at(i));
      continue;
    }
    note(fmt::format("ncsde validate: wrong SDE '{}' …", to_string(plan.wrong[i].variant())));
    wrong_samples.push_back(sample_sde(plan.wrong[i], v0, vopt));
  }

  out.reference = std::move(reference);
  out.floor = std::move(floor);
  for (const variant_sde& w : plan.wrong) out.wrong_names.emplace_back(to_string(w.variant()));
  out.wrong = std::move(wrong_samples);
  nets_out = std::move(nets);
  return true;
}

/// The report of the samples, printed and, with --plots, written with its data and figures.
/// Returns the exit code.
int report_validate(const validate_args& a, const validate_plan& plan, validate_samples& samples,
                    const std::vector<networks::network_ensemble>& nets,
                    std::vector<std::unique_ptr<output_file>>& plot_files,
                    const std::filesystem::path& dir, const std::string& script) {
  const int m = plan.m;
  const std::vector<int>& widths = plan.widths;
  const int n_max = widths.back();
  const matrix& v0 = plan.v0;
  const bool table = a.format == "table";
  // The report, from the samples.
  validate_setup setup;
  setup.model = a.model.model;
  setup.parameters = parameter_summary(a.model);
  setup.parameters_json = parameter_json(a.model).dump();
  setup.sampler = plan.sampler + " sampler";
  setup.n_k = a.n_k > 0 ? std::to_string(a.n_k) : std::string("n");
  setup.m = m;
  setup.t_end = a.t_end;
  setup.dt = a.dt;
  setup.paths = a.paths;
  setup.networks = a.networks;
  setup.stop_level = a.stop_level;
  setup.tail_level = a.tail_level;
  setup.unstopped_level = a.unstopped_level;
  setup.alpha = a.alpha;
  setup.widths = widths;
  setup.given_exponent = plan.given_exponent;
  for (const networks::network_ensemble& e : nets) {
    samples.nets_stopped.push_back(stopped_of(e));
    samples.nets_unstopped.push_back(unstopped_of(e));
    samples.network_seconds += e.seconds;
  }
  const validate_report report = make_validate_report(setup, samples);

  if (table)
    std::cout << report.markdown;
  else
    std::cout << report.json << '\n';

  if (!a.plots.empty()) {
    plot_files[0]->stream() << report.markdown;
    plot_files[1]->stream() << report.json << '\n';
    write_validate_values(plot_files[2]->stream(), setup, samples);
    {
      // Sample paths: the SDE's kept paths and the first networks at the widest n, at 65 times.
      std::vector<sampled_paths> paths(2);
      paths[0].source = "sde";
      paths[0].times = plan.sopt.save_times;
      paths[0].packed = samples.reference.kept;
      networks::network_options popt;
      popt.networks = a.kept_paths;
      popt.threads = a.threads;
      popt.seed = a.seed + 100 + (widths.size() - 1);
      popt.progress = progress_mode::off;
      const int d = static_cast<int>(std::lround(a.t_end * n_max));
      for (int k = 0; k <= validate_plan::path_points; ++k) {
        const int l =
            static_cast<int>(std::lround(static_cast<double>(d) * k / validate_plan::path_points));
        if (popt.depths.empty() || l > popt.depths.back()) popt.depths.push_back(l);
      }
      const networks::network_ensemble e = plan.samplers.back().sample(v0, d, popt);
      paths[1].source = fmt::format("network_n{}", n_max);
      for (const int l : e.depths) paths[1].times.push_back(static_cast<double>(l) / n_max);
      for (const networks::network_record& r : e.records) paths[1].packed.push_back(r.packed);
      write_validate_paths(plot_files[3]->stream(), m, paths);
    }
    for (const std::unique_ptr<output_file>& f : plot_files)
      if (!f->commit()) return exit_failure;
    if (!run_plot_script("validate", script, {dir.string()})) return exit_failure;
    if (table)
      std::cout << fmt::format(
          "\nPlots and data in {}: rho_density, ks_vs_n, sample_paths, stopped_fraction, "
          "smooth_gaps (.png, .pdf, .svg); validation.md, validation.json, values.csv, "
          "paths.csv\n",
          dir.string());
  }
  // A failed check wins over one that lacks power (which says neither pass nor fail).
  std::vector<check_outcome> checked;
  if (a.check) checked.push_back(report.check);
  if (a.check_limit) checked.push_back(report.limit_check.value_or(check_outcome::failed));
  if (std::ranges::count(checked, check_outcome::failed) > 0) return exit_failure;
  if (std::ranges::count(checked, check_outcome::lacks_power) > 0) return exit_inconclusive;
  return exit_ok;
}

int run_validate(const validate_args& a) {
  std::optional<validate_plan> planned = plan_validate(a);
  if (!planned) return exit_usage;
  const validate_plan& plan = *planned;
  check_validate_size(a, plan);
  const bool shard = plan.shard;
  const path_range& range = plan.range;
  // The plot directory and its data files are created before the runs, so that a bad --plots
  // fails at once; each file is a temporary that replaces its target only once the run has
  // succeeded.
  const std::string script = NCSDE_VALIDATE_PLOT_SCRIPT;
  std::filesystem::path dir;
  std::vector<std::unique_ptr<output_file>> plot_files;  // validation.md, .json, values, paths
  // Under mpirun only rank 0 writes, and every rank learns whether it could.
  if (!a.plots.empty()) {
    dir = a.plots;
    if (const int failed = open_plots_on_rank0(
            "validate", script, dir,
            {"validation.md", "validation.json", "values.csv", "paths.csv"}, plot_files))
      return failed;
  }

  // A shard's partial file is created (as a temporary) before the runs, as the plots are.
  std::optional<output_file> partial_out;
  if (shard) {
    partial_out.emplace("validate", "--partial", a.partial);
    if (!partial_out->ok()) return exit_usage;
  }

  validate_samples samples;
  std::vector<networks::network_ensemble> nets;
  if (!sample_validate(a, plan, samples, nets)) return exit_ok;

  // A shard writes its samples and stops: the report needs the whole run (ncsde merge).
  if (shard) {
    validate_pieces piece{std::move(samples.reference), std::move(samples.floor),
                          std::move(samples.wrong), std::move(nets)};
    partial_out->stream() << partial_file_bytes(
        "validate", current_run_identity(),
        serialize_validate_shard(a.run_key, range, std::max(a.networks, a.paths), piece));
    if (!partial_out->commit()) return exit_failure;
    std::cout << fmt::format("ncsde validate: samples [{}, {}) of {} written to {}\n", range.first,
                             range.last, std::max(a.networks, a.paths), a.partial);
    return exit_ok;
  }

  return report_validate(a, plan, samples, nets, plot_files, dir, script);
}

/// run_validate with its bad arguments (its own rules, the library's: sample_sde, the networks'
/// constructors, the variants) reported as the other commands report them, "ncsde: error:
/// <message> (flag --<name>)", exit code 2.
int run_validate_command(const validate_args& given) {
  try {
    validate_args a = given;
    apply_default_study(a);
    return run_validate(a);
  } catch (const ncsde::invalid_argument& e) {
    report_invalid_argument(e);
    return exit_usage;
  }
}

/// The options of `ncsde validate`, into `a` (which must outlive `sub`'s parsing).
void add_validate_options(CLI::App& sub, validate_args* a) {
  a->model.model = validate_defaults{}.model;
  add_model_flags(sub, a->model);
  CLI::Option* model_option = sub.get_option("--model");
  a->model_option = model_option;
  model_option->description(
      "Architecture whose covariance SDE is used; without --model the default study, attention "
      "with γ² = 1 and τ₀ = ½ (a parameter flag given replaces its value); a named model runs at "
      "its own defaults");
  // The study's parameters: their defaults as --help shows them and as a shard's run identity
  // records them say both values.
  for (const auto& [name, value] : validate_defaults{}.parameters) {
    CLI::Option* o = sub.get_option("--" + name);
    o->default_str(fmt::format("{}; {} without --model", o->get_default_str(), value));
  }
  sub.add_option(
      "--V0", a->v0,
      "Initial state V0 (rows separated by ';', entries by ','); default: docs/maths.md §9.1's "
      "V3, diagonal (1, 1.6, 0.7), correlations 0.5, 0.3, 0.7");
  sub.add_option("--T", a->t_end, "Final time T = d/n")->capture_default_str();
  add_integer_list(sub, "--n", a->widths, "Network widths, strictly increasing (comma-separated)")
      ->capture_default_str();
  sub.add_option("--networks", a->networks, "Finite networks per width")
      ->transform(decimal_integer)
      ->check(CLI::Range(1LL, max_networks))
      ->capture_default_str();
  sub.add_option("--paths", a->paths, "SDE paths (per SDE run)")
      ->transform(decimal_integer)
      ->check(CLI::Range(1LL, max_paths))
      ->capture_default_str();
  sub.add_option("--dt", a->dt, "Euler–Maruyama step; 1/(n·dt) must be an integer for every n")
      ->capture_default_str();
  sub.add_option("--stop-level", a->stop_level, "K: processes stop when max_a V^aa > K")
      ->capture_default_str();
  sub.add_option("--tail-level", a->tail_level,
                 "K': tail functional P(V11 >= K') of the stopped processes (tested)")
      ->capture_default_str();
  sub.add_option(
         "--unstopped-tail-level", a->unstopped_level,
         "K'': tail P(max_a V^aa_T >= K'') of the unstopped processes (reported, not tested)")
      ->capture_default_str();
  sub.add_option("--nk", a->n_k, "Key dimension n_k of the networks (0: n_k = n)")
      ->transform(decimal_integer)
      ->check(CLI::Range(0, 1 << 30))
      ->capture_default_str();
  a->sampler_option = sub.add_option("--sampler", a->sampler, "Finite-network sampler")
                          ->check(CLI::IsMember({"reduced", "literal"}))
                          ->capture_default_str();
  sub.add_option("--variants", a->variants,
                 "Wrong SDEs for the power check: auto (vpv and no-attention for attention-type "
                 "models), none, or a list of vpv, no-attention-noise, no-attention")
      ->capture_default_str();
  sub.add_option("--alpha", a->alpha, "Family-wise level of the tests")->capture_default_str();
  sub.add_option("--limit-exponent", a->limit_exponent,
                 "beta of the extrapolation to n -> inf (a + c n^-beta, information): 'fitted' "
                 "(the fitted rate of the gaps) or a number in (0, 4]")
      ->capture_default_str();
  add_seed_flag(sub, a->seed, "Seed of the random streams");
  add_threads_flag(sub, a->threads);
  add_device_flag(sub, a->device, "the right SDE's paths (the wrong SDEs run on the CPU)");
  add_plots_flag(sub, a->plots, "Write data, report and PNG plots to this directory");
  add_format_flag(sub, a->format, "Output");
  sub.add_flag("--check", a->check,
               "Exit 0 when the right SDE is not rejected at the largest n and every wrong SDE "
               "is; 1 when the right SDE is rejected; 3 when a wrong SDE is not rejected (the run "
               "lacks power: neither pass nor fail)");
  sub.add_flag("--check-limit", a->check_limit,
               "The same exit codes on the gaps extrapolated to n -> inf: 0 when the right SDE's "
               "are 0 (not rejected) and every wrong SDE's are not (needs two widths or more)");
  sub.add_option("--paths-range", a->paths_range,
                 "A:B: sample only the networks and SDE paths [A, B) of the run (a shard; with "
                 "--partial; ncsde merge joins the shards)");
  sub.add_option("--partial", a->partial,
                 "Write the shard's samples as a partial result to this file (with "
                 "--paths-range)");
}

/// The command line that identifies a validate run in its shards: the arguments after "validate"
/// without the flags that change no result (--threads, --format, --plots, --check, --check-limit)
/// and without the shard's own (--paths-range, --partial).
std::vector<std::string> run_key_of(const std::vector<std::string>& arguments) {
  static constexpr std::string_view with_value[] = {"--paths-range", "--partial", "--threads",
                                                    "--format", "--plots"};
  static constexpr std::string_view flags[] = {"--check", "--check-limit"};
  auto listed = [](const auto& list, std::string_view name) {
    return std::find(std::begin(list), std::end(list), name) != std::end(list);
  };
  std::vector<std::string> key;
  auto it = std::find(arguments.begin(), arguments.end(), "validate");
  if (it == arguments.end()) return key;
  for (++it; it != arguments.end(); ++it) {
    const std::string_view token = *it;
    const std::string_view name = token.substr(0, token.find('='));
    if (listed(with_value, name)) {
      if (name.size() == token.size() && std::next(it) != arguments.end()) ++it;
      continue;
    }
    if (listed(flags, token)) continue;
    key.push_back(*it);
  }
  return key;
}

// v2: the run's command line is read with the default study (apply_default_study); a v1 shard
// without --model ran the transformer, which v2 would read as the study.
constexpr std::string_view shard_magic = "ncsde validate shard v2\n";

class shard_writer : public ncsde::detail::byte_writer<shard_writer> {
 public:
  using byte_writer::put;
};

}  // namespace

std::string serialize_validate_shard(const std::vector<std::string>& run_key, path_range range,
                                     long long total, const validate_pieces& pieces) {
  shard_writer w;
  w.out.append(shard_magic);
  w.put(static_cast<std::uint64_t>(run_key.size()));
  for (const std::string& t : run_key) w.put(std::string_view(t));
  w.put(static_cast<std::int64_t>(total));
  w.put(static_cast<std::int64_t>(range.first));
  w.put(static_cast<std::int64_t>(range.last));
  std::vector<const models::sde_sample*> samples{&pieces.reference, &pieces.floor};
  for (const models::sde_sample& v : pieces.wrong) samples.push_back(&v);
  w.put(static_cast<std::uint64_t>(samples.size()));
  for (const models::sde_sample* v : samples) w.put(std::string_view(models::serialize(*v)));
  w.put(static_cast<std::uint64_t>(pieces.nets.size()));
  for (const networks::network_ensemble& e : pieces.nets)
    w.put(std::string_view(networks::serialize(e)));
  return std::move(w.out);
}

namespace {

struct validate_shard {
  std::vector<std::string> run_key;
  path_range range;
  long long total = 0;
  validate_pieces pieces;
};

validate_shard read_validate_shard(std::string_view payload, const std::string& name) {
  const std::string what = fmt::format("ncsde merge: {} is not a complete validate shard", name);
  if (payload.substr(0, shard_magic.size()) != shard_magic) {
    if (payload.starts_with("ncsde validate shard v"))
      throw invalid_argument(fmt::format(
          "ncsde merge: {} is a validate shard of another format ({}; this ncsde reads v2): "
          "run its shards again with this ncsde",
          name, payload.substr(21, payload.find('\n') - 21)));
    throw invalid_argument(fmt::format("ncsde merge: {} is not a validate shard", name));
  }
  ncsde::detail::byte_reader in(payload.substr(shard_magic.size()), what);
  validate_shard s;
  for (std::size_t i = 0, n = in.count(8); i < n; ++i) s.run_key.push_back(in.string());
  s.total = in.i64();
  s.range.first = in.i64();
  s.range.last = in.i64();
  if (s.range.first < 0 || s.range.last <= s.range.first || s.range.last > s.total)
    in.fail("a range out of order");
  const std::size_t samples = in.count(8);
  if (samples < 2) in.fail("fewer than two SDE samples");
  for (std::size_t i = 0; i < samples; ++i) {
    models::sde_sample v = models::deserialize_sde_sample(in.string());
    if (i == 0)
      s.pieces.reference = std::move(v);
    else if (i == 1)
      s.pieces.floor = std::move(v);
    else
      s.pieces.wrong.push_back(std::move(v));
  }
  for (std::size_t i = 0, n = in.count(8); i < n; ++i)
    s.pieces.nets.push_back(networks::deserialize_network_ensemble(in.string()));
  if (!in.done()) in.fail("trailing bytes");
  return s;
}

std::string joined(const std::vector<std::string>& tokens) {
  std::string out;
  for (const std::string& t : tokens) out += (out.empty() ? "" : " ") + t;
  return out;
}

}  // namespace

int merge_validate_shards(const std::vector<std::string>& names,
                          const std::vector<partial_file>& files, const std::string& format,
                          const std::string& plots) {
  std::vector<validate_shard> shards;
  for (std::size_t i = 0; i < files.size(); ++i)
    shards.push_back(read_validate_shard(files[i].payload, names[i]));
  std::vector<std::size_t> order(shards.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) {
    return shards[i].range.first < shards[j].range.first;
  });
  std::string named;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const validate_shard& v = shards[order[k]];
    named += fmt::format("{}{} = {} (samples [{}, {}))", k ? ", " : "", k, names[order[k]],
                         v.range.first, v.range.last);
  }
  const validate_shard& first = shards[order.front()];
  long long next = 0;
  for (const std::size_t i : order) {
    const validate_shard& v = shards[i];
    if (v.run_key != first.run_key || v.total != first.total)
      throw invalid_argument(fmt::format(
          "ncsde merge: {} is a shard of another validate run (its command line is '{}', not "
          "'{}'; shards in sample order: {})",
          names[i], joined(v.run_key), joined(first.run_key), named));
    if (v.range.first > next)
      throw invalid_argument(fmt::format(
          "ncsde merge: the samples [{}, {}) of the validate run are missing (shards in sample "
          "order: {})",
          next, v.range.first, named));
    if (v.range.first < next)
      throw invalid_argument(fmt::format(
          "ncsde merge: {} overlaps the shard before it (samples [{}, {}) twice; shards in "
          "sample order: {})",
          names[i], v.range.first, std::min(next, v.range.last), named));
    if (v.pieces.wrong.size() != first.pieces.wrong.size() ||
        v.pieces.nets.size() != first.pieces.nets.size())
      throw invalid_argument(fmt::format(
          "ncsde merge: {} holds samples of another shape (shards: {})", names[i], named));
    next = v.range.last;
  }
  if (next != first.total)
    throw invalid_argument(fmt::format(
        "ncsde merge: the samples [{}, {}) of the validate run are missing (shards in sample "
        "order: {})",
        next, first.total, named));

  // The samples joined in sample order (each piece holds its own part of every sample set).
  validate_pieces whole;
  auto join_sde = [&](auto pick) {
    std::vector<models::sde_sample> parts;
    for (const std::size_t i : order) parts.push_back(std::move(pick(shards[i].pieces)));
    return models::merge_sde_samples(std::move(parts));
  };
  whole.reference = join_sde([](validate_pieces& p) -> models::sde_sample& { return p.reference; });
  whole.floor = join_sde([](validate_pieces& p) -> models::sde_sample& { return p.floor; });
  for (std::size_t v = 0; v < first.pieces.wrong.size(); ++v)
    whole.wrong.push_back(
        join_sde([v](validate_pieces& p) -> models::sde_sample& { return p.wrong[v]; }));
  for (std::size_t w = 0; w < first.pieces.nets.size(); ++w) {
    std::vector<networks::network_ensemble> parts;
    for (const std::size_t i : order) parts.push_back(std::move(shards[i].pieces.nets[w]));
    whole.nets.push_back(networks::merge_network_pieces(std::move(parts)));
  }

  // The run's own arguments, parsed as `ncsde validate` parses them, with merge's output flags.
  validate_args a;
  CLI::App app("ncsde validate (merged shards)");
  add_validate_options(app, &a);
  std::vector<std::string> tokens = first.run_key;
  tokens.insert(tokens.end(), {"--format", format});
  if (!plots.empty()) tokens.insert(tokens.end(), {"--plots", plots});
  std::reverse(tokens.begin(), tokens.end());  // CLI11 takes them last first
  try {
    app.parse(tokens);
  } catch (const CLI::ParseError& e) {
    throw invalid_argument(fmt::format(
        "ncsde merge: the shards' command line '{}' is not one of this ncsde validate ({})",
        joined(first.run_key), e.what()));
  }
  a.preloaded = &whole;
  return run_validate_command(a);
}

command validate_command() {
  command c;
  c.name = "validate";
  c.description =
      "Compare a model's covariance SDE with its finite networks (laws of the stopped processes, "
      "KS tests, power check against wrong SDEs)";
  c.setup = [](CLI::App& sub) -> std::function<int()> {
    auto a = std::make_shared<validate_args>();
    add_validate_options(sub, a.get());
    return [a]() {
      a->run_key = run_key_of(program_arguments());
      return run_validate_command(*a);
    };
  };
  return c;
}

}  // namespace ncsde::cli
