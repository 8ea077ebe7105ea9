/// `ncsde sample-network`: an ensemble of finite shaped networks (docs/maths.md §2, §7), run by
/// ncsde::networks::sample_networks, summarised at depth d.
///
///   ncsde sample-network --V0 "..." --n N --d D [--model M] [model flags] [--nk K (default n)]
///                        [--networks 1000] [--sampler literal|reduced]
///                        [--attention shaped|unshaped] [--seed 1] [--threads 0]
///                        [--stop-level K] [--out FILE.csv] [--format table|json]
///
/// Network i (0-based) runs on the stream (seed, i); with a stop level K it stops at the first
/// layer τ with max_a V_τ^{aa} > K and keeps V_τ. Summary: counts and the stopped fraction ± its
/// binomial standard error; mean ± standard error of each packed entry of V_d over completed
/// networks; quantiles (1, 5, 25, 50, 75, 95, 99%) of every ρ^{ab} (a < b, named rho<a><b>,
/// 1-indexed) and V^{aa} (V<a><a>), over completed networks and over all networks at V_{τ∧d}
/// (blown-up = +inf). CSV (--out): the layout of ncsde simulate (write_csv),
/// `path,status,t_stop,V11,V12,…,Vmm`, one row per network, t_stop = (stop layer)/n, V at τ∧d; the
/// file is replaced only when the run succeeds (cli::output_file). Runs beyond the limits of
/// limits.hpp (network layers, work, memory) are refused before they start. With --paths-range
/// A:B --partial FILE it samples only the networks [A, B) as a shard (networks/network_outputs.hpp),
/// which `ncsde merge` joins into this output; under mpirun the ranks split the networks
/// (mpi_world.hpp) and rank 0 writes it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "command.hpp"
#include "limits.hpp"
#include "models/model_flags.hpp"
#include "models/shards.hpp"
#include "mpi_world.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/ensemble_io.hpp"
#include "ncsde/networks/sample.hpp"
#include "ncsde/statistics.hpp"
#include "ncsde/symmetric.hpp"
#include "networks/network_outputs.hpp"
#include "process.hpp"

namespace ncsde::cli {
namespace {

using json = nlohmann::ordered_json;

struct sample_network_args {
  model_flags model;
  network_flags net;
  std::string v0;
  std::string attention = "shaped";
  double stop_level = std::numeric_limits<double>::infinity();
  std::string out;
  std::string format = "table";
  std::string paths_range;
  std::string partial;
};

/// Quantiles of one functional at the levels of `levels`, over completed networks and over all
/// networks (V_{τ∧d}, blown-up = +inf).
struct functional_quantiles {
  std::string name;
  std::vector<double> completed;
  std::vector<double> all;
};

const std::vector<double> levels{0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99};

std::vector<double> quantiles(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  std::vector<double> q;
  for (const double p : levels)
    q.push_back(values.empty() ? std::numeric_limits<double>::quiet_NaN()
                               : quantile_sorted(values, p));
  return q;
}

json number(double x) {
  if (std::isfinite(x)) return x;
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return nullptr;
}

json numbers(const std::vector<double>& xs) {
  json a = json::array();
  for (const double x : xs) a.push_back(number(x));
  return a;
}

std::string network_summary_table(const networks::network_ensemble& e, const run_description& d,
                                  const moments& terminal,
                                  const std::vector<functional_quantiles>& fq) {
  std::string s;
  // The attention form and n_k exist only for architectures with an attention layer.
  const bool attention = d.model == "attention" || d.model == "transformer";
  s += fmt::format(
      "{} networks{}, {} sampler  m = {}  n = {}  d = {}  (T = d/n = {:g}){}  networks = {}  "
      "seed = {}  threads = {}  ({:.2f} s)\n",
      d.model, attention ? fmt::format(" ({} attention)", d.attention) : "", d.sampler, e.m, e.n,
      e.d, static_cast<double>(e.d) / e.n, attention ? fmt::format("  n_k = {}", d.n_k) : "",
      e.records.size(), e.seed, e.threads, e.seconds);
  s += fmt::format("completed {}  stopped {}  blown up {}", e.completed, e.stopped, e.blown_up);
  if (std::isfinite(e.stop_level))
    s += fmt::format("  stopped fraction (max_a V^aa > {:g}) {:.4f} ± {:.4f}", e.stop_level,
                     e.stopped_fraction(), e.stopped_stderr());
  s += '\n';
  if (terminal.count() > 0) {
    s += "entry      mean(completed)        stderr\n";
    const vector se =
        terminal.count() > 1
            ? terminal.standard_error()
            : vector::Constant(terminal.dimension(), std::numeric_limits<double>::quiet_NaN());
    int i = 0;
    for (int a = 1; a <= e.m; ++a)
      for (int b = a; b <= e.m; ++b, ++i)
        s += fmt::format("V{}{:<6} {:>16.8g} {:>14.3g}\n", a, b, terminal.mean()(i), se(i));
  }
  for (const functional_quantiles& f : fq) {
    s += fmt::format("{} quantiles (completed | all at the stop, blown-up = inf):\n", f.name);
    for (std::size_t q = 0; q < levels.size(); ++q)
      s += fmt::format("  q{:<5g} {:>14.6g} | {:>14.6g}\n", levels[q], f.completed[q], f.all[q]);
  }
  return s;
}

std::string network_summary_json(const networks::network_ensemble& e, const run_description& d,
                                 const moments& terminal,
                                 const std::vector<functional_quantiles>& fq) {
  json j;
  j["command"] = "sample-network";
  j["model"] = d.model;
  j["attention"] = d.attention;
  j["sampler"] = d.sampler;
  j["m"] = e.m;
  j["n"] = e.n;
  j["d"] = e.d;
  j["T"] = static_cast<double>(e.d) / e.n;
  j["n_k"] = d.n_k;
  j["seed"] = e.seed;
  j["threads"] = e.threads;
  j["networks"] = e.records.size();
  j["stop_level"] = number(e.stop_level);
  j["completed"] = e.completed;
  j["stopped"] = e.stopped;
  j["blown_up"] = e.blown_up;
  j["stopped_fraction"] = e.stopped_fraction();
  j["stopped_fraction_stderr"] = e.stopped_stderr();
  json names = json::array();
  for (int a = 1; a <= e.m; ++a)
    for (int b = a; b <= e.m; ++b) names.push_back(fmt::format("V{}{}", a, b));
  j["entries"] = names;
  json t;
  t["count"] = terminal.count();
  std::vector<double> mean, se;
  for (Eigen::Index i = 0; i < terminal.mean().size(); ++i) mean.push_back(terminal.mean()(i));
  if (terminal.count() > 1) {
    const vector s = terminal.standard_error();
    se.assign(s.data(), s.data() + s.size());
  }
  t["mean"] = numbers(mean);
  t["stderr"] = numbers(se);
  j["terminal_completed"] = t;
  json fs = json::array();
  for (const functional_quantiles& f : fq) {
    json q;
    q["name"] = f.name;
    q["levels"] = levels;
    q["quantiles_completed"] = numbers(f.completed);
    q["quantiles_all"] = numbers(f.all);
    fs.push_back(q);
  }
  j["functionals"] = fs;
  j["seconds"] = e.seconds;
  return j.dump(2);
}

/// The ensemble as an ensemble_result holding one path_record per network (index, status,
/// t_stop = stop layer/n, V at τ∧d), so that write_csv gives the layout of ncsde simulate.
ensemble_result as_paths(const networks::network_ensemble& e) {
  ensemble_result r;
  r.m = e.m;
  r.records.reserve(e.records.size());
  for (std::size_t i = 0; i < e.records.size(); ++i) {
    const networks::network_record& rec = e.records[i];
    path_record p;
    p.path = static_cast<long long>(i);
    p.status = rec.status;
    p.t_stop = e.time(rec);
    p.packed = rec.packed.back();
    r.records.push_back(std::move(p));
  }
  return r;
}

int run_sample_network_command(const sample_network_args& a) {
  const std::optional<matrix> v0 = read_initial_state(a.v0, "--V0", 1);
  if (!v0) return exit_usage;
  const int m = static_cast<int>(v0->rows());
  const std::optional<any_network> net =
      make_network(a.model, a.net, m, parse_attention_form(a.attention));
  if (!net) return exit_usage;

  networks::network_options opt = network_options_of(a.net);
  opt.stop_level = a.stop_level;
  const bool shard = !a.partial.empty();
  path_range range{0, a.net.networks};
  // Every value is checked before --out is touched, so that a bad flag leaves an earlier file as it
  // was.
  // The run's size is checked too (limits.hpp).
  try {
    (void)networks::detail::resolve_depths(opt, a.net.d);
    range = check_shard_flags("sample-network", a.paths_range, a.partial, a.out, a.net.networks);
    const bool literal = a.net.sampler_for(a.model.entry()) == "literal";
    check_network_work(a.model, literal, m, a.net.n, a.net.key_dimension(), a.net.networks,
                       a.net.d);
    // Per network besides its record: the summary's values of one functional (at d, completed,
    // at the stop, and the sorted copies of quantiles) and, for --out, its CSV record.
    const double K = packed_size(m);
    const double extra = 40.0 + (a.out.empty() ? 0.0 : sizeof(path_record) + 8.0 * K + 16.0);
    check_network_memory(a.model, a.net, literal, m, 1, 1, extra);
  } catch (const ncsde::invalid_argument& e) {
    report_invalid_argument(e);
    return exit_usage;
  }
  const run_description d{a.model.model, a.net.sampler_for(a.model.entry()), a.attention,
                          a.net.key_dimension()};
  // Created (as a temporary next to --out or --partial) before the run, so that an unwritable path
  // fails at once; it replaces its target only once the run has succeeded. Under mpirun rank 0
  // creates --out, the ranks split the networks (sample_over_ranks) and rank 0 writes; every step
  // that can fail on one rank is agreed on by all.
  std::optional<output_file> file;
  if (shard) {
    file.emplace("sample-network", "--partial", a.partial);
    if (!file->ok()) return exit_usage;
    opt.range = range;
  } else if (!open_output_on_rank0(file, "sample-network", a.out)) {
    return exit_usage;  // rank 0 has said why
  }
  const std::optional<networks::network_ensemble> run =
      world().active ? sample_over_ranks(*net, *v0, a.net.d, opt)
                     : sample_any_network(*net, *v0, a.net.d, opt);
  if (!run) return world().active ? exit_ok : exit_usage;  // other ranks write nothing
  const networks::network_ensemble& e = *run;

  if (shard) {
    file->stream() << partial_file_bytes("sample-network", current_run_identity(),
                                         network_partial_payload(d, e));
    if (!file->commit()) return exit_failure;
    std::cout << fmt::format("ncsde sample-network: networks [{}, {}) of {} written to {}\n",
                             range.first, range.last, a.net.networks, a.partial);
    return exit_ok;
  }
  return write_network_outputs(e, d, a.format, file ? &*file : nullptr);
}

}  // namespace

int write_network_outputs(const networks::network_ensemble& e, const run_description& d,
                          const std::string& format, output_file* file) {
  const int m = e.m;
  const int K = packed_size(m);
  moments terminal(K);
  for (const networks::network_record& r : e.records)
    if (r.status == path_status::completed) terminal.add(r.packed.back());
  std::vector<functional_quantiles> fq;
  const std::size_t last = e.depths.size() - 1;
  for (const functional& f : summary_functionals(m)) {
    const std::vector<double> at_d = e.values(last, f);
    std::vector<double> completed;
    for (std::size_t i = 0; i < e.records.size(); ++i)
      if (e.records[i].status == path_status::completed) completed.push_back(at_d[i]);
    fq.push_back({f.name, quantiles(completed), quantiles(e.stopped_values(f))});
  }

  if (file) {
    write_csv(as_paths(e), file->stream());
    if (!file->commit()) return exit_failure;
  }
  std::cout << (format == "json" ? network_summary_json(e, d, terminal, fq) + "\n"
                                 : network_summary_table(e, d, terminal, fq));
  return exit_ok;
}

std::string network_partial_payload(const run_description& d, const networks::network_ensemble& e) {
  return fmt::format("model {}\nsampler {}\nattention {}\nn_k {}\n", d.model, d.sampler,
                     d.attention, d.n_k) +
         networks::serialize(e);
}

network_piece read_network_piece(std::string_view payload, const std::filesystem::path& path) {
  auto refuse = [&](std::string_view why) -> void { refuse_partial(path.string(), why); };
  network_piece out;
  auto line = [&](std::string_view key) {
    const std::string prefix = std::string(key) + " ";
    const std::size_t end = payload.find('\n');
    if (!payload.starts_with(prefix) || end == std::string_view::npos)
      refuse(fmt::format("no '{}' line", key));
    std::string value(payload.substr(prefix.size(), end - prefix.size()));
    payload.remove_prefix(end + 1);
    return value;
  };
  out.description.model = line("model");
  out.description.sampler = line("sampler");
  out.description.attention = line("attention");
  std::string n_k = line("n_k");
  if (!detail::canonical_decimal(n_k, false) || n_k.size() > 9) refuse("a bad n_k");
  out.description.n_k = std::stoi(n_k);
  try {
    out.ensemble = networks::deserialize_network_ensemble(payload);
  } catch (const invalid_argument& e) {
    refuse(e.what());
  }
  return out;
}

command sample_network_command() {
  command c;
  c.name = "sample-network";
  c.description =
      "Sample an ensemble of finite shaped networks (literal or reduced) and summarise V_d";
  c.setup = [](CLI::App& sub) -> std::function<int()> {
    auto a = std::make_shared<sample_network_args>();
    add_model_flags(sub, a->model);
    sub.add_option("--V0", a->v0,
                   "Initial covariance V0 = X0 X0ᵀ/n, symmetric positive semidefinite: rows "
                   "separated by ';', entries by ',' (e.g. \"1,0.5;0.5,1\")")
        ->required();
    add_network_flags(sub, a->net, /*require_size=*/true);
    sub.add_option(
           "--attention", a->attention,
           "Attention form: shaped (A = I + Softmax(S) − 11ᵀ/m, τ = τ0√(n n_k)) or unshaped "
           "(A = Softmax(S), τ = τ0√n_k); attention and transformer only")
        ->check(CLI::IsMember({"shaped", "unshaped"}))
        ->capture_default_str();
    sub.add_option("--stop-level", a->stop_level,
                   "Stop a network at the first layer with max_a V^aa > K, > 0 (inf: never stop)")
        ->capture_default_str();
    sub.add_option("--out", a->out, "Write one CSV row per network to this file");
    sub.add_option("--paths-range", a->paths_range,
                   "Run only the networks [A, B) of the run, as a shard (with --partial)");
    sub.add_option("--partial", a->partial,
                   "Write the shard's networks to this partial result file (ncsde merge joins "
                   "the shards)");
    add_format_flag(sub, a->format, "Summary format");
    return [a]() { return run_sample_network_command(*a); };
  };
  return c;
}

}  // namespace ncsde::cli
