#pragma once
/// Stopped samples of an SDE monitored on network grids (docs/maths.md §8.1, §9.5): the SDE side of
/// `ncsde validate`, here so that a model registry entry (models/registry.hpp) can sample its own
/// concrete SDE type.
///
/// Every path is stopped at τ = the first time max_a V^{aa} > K, and the SDE is monitored only on
/// the network's grid k/n (a network can only be seen at its layers, so monitoring the SDE more
/// finely would stop it earlier and bias the comparison). One SDE run serves every width: the
/// observer tracks, for each n of the list, the first grid time k/n at which the level is passed,
/// and keeps V there; the unstopped V_T (blow-up = +inf) is kept too, for tail functionals.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ncsde/concepts.hpp"
#include "ncsde/device.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/error.hpp"
#include "ncsde/executor.hpp"
#include "ncsde/integrate.hpp"
#include "ncsde/statistics.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"
#include "ncsde/symmetric.hpp"

namespace ncsde::models {

/// What the SDE sampler needs.
struct sde_sample_options {
  double t_end = 1.0;
  double dt = 1.0 / 1024;
  std::vector<int> widths;  ///< grids k/n to monitor; 1/(n·dt) must be an integer
  double stop_level = 5.0;  ///< K
  double blowup_threshold = 1e6;
  /// project by name (not the library's default, count): the sample's statistics (correlations ρ)
  /// need states on the cone, and the Euler–Maruyama exits of these runs are the O(dt²·|b|)
  /// artefacts of docs/maths.md §8.2, whose projection leaves the blow-up law as it is (§8.5).
  pd_policy policy = pd_policy::project;
  long long paths = 1000;
  std::uint64_t seed = 1;
  int threads = 0;
  int kept_paths = 0;  ///< paths (0..kept_paths−1) whose V is kept at save_times
  std::vector<double> save_times;
  /// The paths to run, a piece [first, last) of [0, paths] (a shard; merge_sde_samples joins the
  /// pieces; it may be empty); unset: all of them.
  std::optional<path_range> range;
  /// Where the paths run (ncsde/device.hpp), as ensemble_options::device: the device engine
  /// monitors the grids on the device and hands an exceptional step back to the CPU engine, so the
  /// sample is the CPU's bit for bit where the device form's arithmetic is (docs/gpu.md). The
  /// kept paths (below kept_paths, which save states) run on the CPU.
  device_spec device;
};

/// One sample of stopped processes: per path its status, and the upper triangle of V_{T∧τ}.
struct stopped_sample {
  std::vector<path_status> status;  ///< completed, stopped (level passed), blown_up
  std::vector<vector> packed;       ///< V_{T∧τ} (non-finite entries when blown_up)
  long long stopped() const;        ///< stopped + blown_up
  double fraction() const;          ///< stopped()/size
  double fraction_stderr() const;   ///< √(p(1 − p)/N)
  /// f(V_{T∧τ}) per path; +inf for blown-up paths.
  std::vector<double> values(const functional& f, int m) const;
};

struct sde_sample {
  int m = 0;
  long long first = 0;  ///< the first path held (pieces of a run: sde_sample_options::range)
  std::vector<int> widths;
  std::vector<stopped_sample> by_width;  ///< stopped at τ_n on the grid k/n, one per widths[i]
  stopped_sample unstopped;              ///< V_T with blow-up (status blown_up) at 1e6
  /// [path][save] packed V of the paths first, first + 1, … below kept_paths
  std::vector<std::vector<vector>> kept;
  pd_counters pd;
  long long paths_with_violations = 0;
  double seconds = 0.0;
  device_report device;  ///< what the paths ran on (handed_back summed over merged pieces)
};

/// Euler–Maruyama paths of `sde` (any ncsde::Sde), path p on stream (seed, p), so the result does
/// not depend on the thread count, nor on how the paths are cut into ranges (opt.range). Throws ncsde::invalid_argument (naming "dt" and the width) when
/// 1/(n·dt) is not an integer, or on a bad V₀/option.
template <class S>
  requires Sde<S>
sde_sample sample_sde(const S& sde, const matrix& v0, const sde_sample_options& opt);

/// The pieces of one run (sample_sde over consecutive ranges, in path order) joined into the
/// sample of the whole range they cover: bit for bit the sample of one sample_sde call over it
/// (timing aside: seconds is the pieces' sum). Throws ncsde::invalid_argument when the pieces are
/// empty, not consecutive, or differ in m or widths.
sde_sample merge_sde_samples(std::vector<sde_sample> pieces);

/// A versioned binary form of a sample, doubles bit-exact (the shards of `ncsde validate`), and
/// its inverse, which throws ncsde::invalid_argument on bytes that are not one.
std::string serialize(const sde_sample& s);
sde_sample deserialize_sde_sample(std::string_view bytes);

namespace detail {

/// Per-path tracker of the first grid passage for each width (the integrate() observer holds a
/// pointer to it, since integrate takes its observer by value).
struct grid_tracker {
  double t0 = 0.0, dt = 1.0, level = 0.0;
  std::vector<long long> steps_per_layer;  ///< 1/(n dt) per width
  std::vector<char> passed;
  std::vector<vector>* values = nullptr;  ///< V at the passage, per width
};

struct grid_observer {
  grid_tracker* tracker;
  void operator()(const matrix& v, double t) const {
    grid_tracker& g = *tracker;
    const long long i = std::llround((t - g.t0) / g.dt);
    if (i == 0) return;
    bool over = false, computed = false;
    for (std::size_t w = 0; w < g.steps_per_layer.size(); ++w) {
      if (g.passed[w] || i % g.steps_per_layer[w] != 0) continue;
      if (!computed) {
        over = v.diagonal().maxCoeff() > g.level;
        computed = true;
      }
      if (over) {
        g.passed[w] = 1;
        pack_upper(v, (*g.values)[w]);
      }
    }
  }
};

std::vector<long long> steps_per_layer(const sde_sample_options& opt);

/// opt.range, or [0, opt.paths) when it is unset; throws ncsde::invalid_argument naming "range"
/// when it does not lie in [0, paths] with first <= last.
path_range sample_range(const sde_sample_options& opt);

/// The cone counters of a block of sample_sde.
struct sample_counters {
  pd_counters pd;
  long long with_violations = 0;
};

/// Path p's outputs, its own slots of `out`, from its result r and the passages `tracker` saw.
inline void record_sample_path(long long p, const path_result& r, const grid_tracker& tracker,
                               const sde_sample_options& opt, sde_sample& out,
                               sample_counters& block) {
  const std::vector<vector>& at_pass = *tracker.values;
  const std::size_t ps = static_cast<std::size_t>(p - out.first);  // the path's slot
  block.pd += r.pd;
  if (r.pd.violations > 0) ++block.with_violations;
  const bool blown = r.status == path_status::blown_up;
  out.unstopped.status[ps] = r.status;
  pack_upper(r.v, out.unstopped.packed[ps]);
  for (std::size_t w = 0; w < out.by_width.size(); ++w) {
    stopped_sample& s = out.by_width[w];
    if (tracker.passed[w]) {
      s.status[ps] = path_status::stopped;
      s.packed[ps] = at_pass[w];
    } else {
      s.status[ps] = blown ? path_status::blown_up : path_status::completed;
      pack_upper(r.v, s.packed[ps]);
    }
  }
  if (p < opt.kept_paths) {
    auto& kept = out.kept[ps];
    kept.assign(r.saved.size(), vector(r.v.rows() * (r.v.rows() + 1) / 2));
    for (std::size_t j = 0; j < r.saved.size(); ++j) pack_upper(r.saved[j], kept[j]);
  }
}

/// The executor's worker of sample_sde: path p writes only its own slots of `out`.
template <class S>
struct sde_sample_worker {
  using block_type = sample_counters;
  const sde_sample_options& opt;
  const integrate_options& iopt;
  sde_sample& out;
  euler_maruyama<> stepper;
  problem<S> local;  // per-thread copy of the SDE
  std::vector<vector> at_pass;
  grid_tracker tracker;

  sample_counters begin_block(const block_info&) const { return {}; }
  void run_path(long long p, sample_counters& block) {
    std::fill(tracker.passed.begin(), tracker.passed.end(), 0);
    tracker.values = &at_pass;  // the worker may have moved since the last path
    integrate_options path_opt = iopt;
    if (p < opt.kept_paths) path_opt.save_times = opt.save_times;
    const path_result r = integrate(stepper, local, path_opt, opt.seed,
                                    static_cast<std::uint64_t>(p), grid_observer{&tracker});
    record_sample_path(p, r, tracker, opt, out, block);
  }
};

/// The worker of sample_sde on a device (ensemble.hpp's device engine, with the grids monitored on
/// the device): it claims `claim` blocks at once and runs their paths as one device batch; a path
/// handed back is resumed by integrate_from at its step with the passages seen so far, and the
/// kept paths run on the CPU (per_path), so every path is recorded as the CPU would record it.
template <class S>
struct sde_sample_device_worker {
  using block_type = sample_counters;
  sde_sample_worker<S> per_path;
  long long claim;
  std::atomic<long long>& handed_back;
  device_batch batch;
  device_batch_result result;

  long long blocks_per_claim() const { return claim; }
  sample_counters begin_block(const block_info&) const { return {}; }
  void run_blocks(std::span<const block_info> infos, std::span<sample_counters> blocks) {
    const long long first = infos.front().range.first, last = infos.back().range.last;
    batch.first_path = first;
    batch.paths = last - first;
    per_path.local.sde.run_device_batch(batch, result);
    const int m = batch.m;
    const std::size_t mm = static_cast<std::size_t>(m) * static_cast<std::size_t>(m);
    const std::size_t monitors = batch.monitor_periods.size();
    grid_tracker& tracker = per_path.tracker;
    std::size_t b = 0;
    for (long long p = first; p < last; ++p) {
      while (!infos[b].range.contains(p)) ++b;
      try {
        if (p < per_path.opt.kept_paths) {
          per_path.run_path(p, blocks[b]);
          continue;
        }
        const auto q = static_cast<std::size_t>(p - first);
        tracker.values = &per_path.at_pass;
        for (std::size_t w = 0; w < monitors; ++w) {
          tracker.passed[w] = static_cast<char>(result.passed[q * monitors + w]);
          if (tracker.passed[w])
            pack_upper(Eigen::Map<const matrix>(
                           result.states_passed.data() + (q * monitors + w) * mm, m, m),
                       per_path.at_pass[w]);
        }
        const Eigen::Map<const matrix> v(result.states.data() + q * mm, m, m);
        path_result r;
        r.steps = result.steps[q];
        const auto outcome = static_cast<device_outcome>(result.outcome[q]);
        if (outcome == device_outcome::handed_back) {
          handed_back.fetch_add(1);
          r = integrate_from(per_path.stepper, per_path.local, per_path.iopt, per_path.opt.seed,
                             static_cast<std::uint64_t>(p), matrix(v), result.steps[q],
                             std::move(r), grid_observer{&tracker});
        } else {
          r.status = ncsde::detail::device_path_status(outcome);
          r.t_stop = result.t_stop[q];
          r.v = v;
        }
        record_sample_path(p, r, tracker, per_path.opt, per_path.out, blocks[b]);
      } catch (...) {
        throw path_failure{p, std::current_exception()};
      }
    }
  }
};

}  // namespace detail

template <class S>
  requires Sde<S>
sde_sample sample_sde(const S& sde, const matrix& v0, const sde_sample_options& opt) {
  const std::vector<long long> per_layer = detail::steps_per_layer(opt);
  if (opt.paths < 1) throw_invalid_argument("sample_sde", "paths", opt.paths, ">= 1");
  const path_range range = detail::sample_range(opt);
  if (!(opt.stop_level > 0.0))
    throw_invalid_argument("sample_sde", "stop_level", opt.stop_level, "> 0");
  const matrix v = validate_state("sample_sde", "V0", v0, /*require_psd=*/true);
  const int m = static_cast<int>(v.rows());
  const int K = packed_size(m);
  const std::size_t widths = opt.widths.size();
  const std::size_t paths = static_cast<std::size_t>(range.size());

  sde_sample out;
  out.m = m;
  out.first = range.first;
  out.widths = opt.widths;
  out.by_width.resize(widths);
  for (stopped_sample& s : out.by_width) {
    s.status.resize(paths);
    s.packed.assign(paths, vector(K));
  }
  out.unstopped.status.resize(paths);
  out.unstopped.packed.assign(paths, vector(K));
  out.kept.resize(static_cast<std::size_t>(
      std::clamp<long long>(opt.kept_paths - range.first, 0, range.size())));

  integrate_options iopt;
  iopt.dt = opt.dt;
  iopt.policy = opt.policy;
  iopt.blowup_threshold = opt.blowup_threshold;
  validate_options(iopt);
  const problem<S> prob{sde, v, opt.t_end};

  // The device the paths run on: sample_sde steps by Euler-Maruyama on fixed steps from the
  // (seed, path) streams, so only the SDE can refuse one.
  const ncsde::detail::run_device device = ncsde::detail::resolve_run_device(
      opt.device, ncsde::detail::device_refusal<euler_maruyama<>, S>(iopt, true, m, m));
  out.device = device.report;

  // Path p writes only its own slots of `out`; the blocks carry the cone counters, summed in block
  // order.
  using counters = detail::sample_counters;
  using worker = detail::sde_sample_worker<S>;
  counters total;
  executor_options xopt;
  xopt.threads = opt.threads;
  xopt.block_size = 16;
  xopt.progress = progress_mode::off;
  auto make_worker = [&] {
    worker w{opt,
             iopt,
             out,
             {},
             problem<S>{prob.sde, prob.v0, prob.t_end},
             std::vector<vector>(widths, vector(K)),
             {}};
    w.tracker = detail::grid_tracker{
        0.0, opt.dt, opt.stop_level, per_layer, std::vector<char>(widths, 0), nullptr};
    return w;
  };
  auto reduce = [&](const block_info&, counters&& c) {
    total.pd += c.pd;
    total.with_violations += c.with_violations;
  };
  if constexpr (DeviceSde<S>) {
    if (device.on_device) {
      if (device.spec.kind == device_kind::cuda) xopt.threads = 1;
      const step_grid grid(0.0, opt.t_end, opt.dt);
      device_batch batch = ncsde::detail::make_device_batch(
          device.spec, opt.seed, v.data(), m, grid, opt.blowup_threshold,
          std::numeric_limits<double>::infinity());
      batch.monitor_periods = per_layer;
      batch.monitor_level = opt.stop_level;
      const double bytes_per_path =
          device_batch_bytes_per_path(m, sde.noise_dimension(m), 0, widths);
      const long long claim =
          ncsde::detail::device_claim_blocks(device.spec, xopt.block_size, bytes_per_path);
      std::atomic<long long> handed_back{0};
      out.seconds = execute(
                        range, xopt,
                        [&] {
                          return detail::sde_sample_device_worker<S>{
                              make_worker(), claim, handed_back, batch, {}};
                        },
                        reduce)
                        .seconds;
      out.device.handed_back = handed_back.load();
    }
  }
  if (!device.on_device) out.seconds = execute(range, xopt, make_worker, reduce).seconds;
  const pd_counters& pd = total.pd;
  const long long with_violations = total.with_violations;
  out.pd = pd;
  out.paths_with_violations = with_violations;
  return out;
}

}  // namespace ncsde::models
