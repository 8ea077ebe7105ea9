#pragma once
// Template part of fidelity.hpp (included at its end).
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

#include "ncsde/error.hpp"
#include "ncsde/symmetric.hpp"

namespace ncsde::cli {

namespace detail {

/// Per-path tracker of the first grid passage for each width (the integrate() observer holds a
/// pointer to it, since integrate takes its observer by value).
struct grid_tracker {
  double t0 = 0.0, dt = 1.0, level = 0.0;
  std::vector<long long> steps_per_layer;  ///< 1/(n dt) per width
  std::vector<char> passed;
  std::vector<vector>* values = nullptr;   ///< V at the passage, per width
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

}  // namespace detail

template <class S>
  requires Sde<S>
sde_sample sample_sde(const S& sde, const matrix& v0, const sde_sample_options& opt) {
  const std::vector<long long> per_layer = detail::steps_per_layer(opt);
  if (opt.paths < 1) throw_invalid_argument("sample_sde", "paths", opt.paths, ">= 1");
  if (!(opt.stop_level > 0.0))
    throw_invalid_argument("sample_sde", "stop_level", opt.stop_level, "> 0");
  const matrix v = validate_state("sample_sde", "V0", v0, /*require_psd=*/true);
  const int m = static_cast<int>(v.rows());
  const int K = packed_size(m);
  const std::size_t widths = opt.widths.size();
  const std::size_t paths = static_cast<std::size_t>(opt.paths);

  sde_sample out;
  out.m = m;
  out.widths = opt.widths;
  out.by_width.resize(widths);
  for (stopped_sample& s : out.by_width) {
    s.status.resize(paths);
    s.packed.assign(paths, vector(K));
  }
  out.unstopped.status.resize(paths);
  out.unstopped.packed.assign(paths, vector(K));
  out.kept.resize(static_cast<std::size_t>(std::max(0, opt.kept_paths)));

  integrate_options iopt;
  iopt.dt = opt.dt;
  iopt.policy = opt.policy;
  iopt.blowup_threshold = opt.blowup_threshold;
  validate_options(iopt);
  const problem<S> prob{sde, v, opt.t_end};
  const int threads = ncsde::detail::resolve_threads(opt.threads);

  std::atomic<long long> next{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::vector<std::pair<long long, std::exception_ptr>> errors;
  pd_counters pd;
  long long with_violations = 0;

  const auto start = std::chrono::steady_clock::now();
  {
    std::vector<std::jthread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&] {
        euler_maruyama<> stepper;
        const problem<S> local{prob.sde, prob.v0, prob.t_end};  // per-thread copy of the SDE
        std::vector<vector> at_pass(widths, vector(K));
        detail::grid_tracker tracker{0.0, opt.dt, opt.stop_level, per_layer,
                                     std::vector<char>(widths, 0), &at_pass};
        pd_counters local_pd;
        long long local_violations = 0;
        for (;;) {
          if (failed.load()) break;
          const long long p = next.fetch_add(1);
          if (p >= opt.paths) break;
          const std::size_t ps = static_cast<std::size_t>(p);
          try {
            std::fill(tracker.passed.begin(), tracker.passed.end(), 0);
            integrate_options path_opt = iopt;
            if (p < opt.kept_paths) path_opt.save_times = opt.save_times;
            const path_result r = integrate(stepper, local, path_opt, opt.seed,
                                            static_cast<std::uint64_t>(p),
                                            detail::grid_observer{&tracker});
            local_pd += r.pd;
            if (r.pd.violations > 0) ++local_violations;
            const bool blown = r.status == path_status::blown_up;
            out.unstopped.status[ps] = r.status;
            pack_upper(r.v, out.unstopped.packed[ps]);
            for (std::size_t w = 0; w < widths; ++w) {
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
              kept.assign(r.saved.size(), vector(K));
              for (std::size_t j = 0; j < r.saved.size(); ++j) pack_upper(r.saved[j], kept[j]);
            }
          } catch (...) {
            std::lock_guard lock(mutex);
            errors.emplace_back(p, std::current_exception());
            failed.store(true);
          }
        }
        std::lock_guard lock(mutex);
        pd += local_pd;
        with_violations += local_violations;
      });
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!errors.empty()) {
    std::sort(errors.begin(), errors.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::rethrow_exception(errors.front().second);
  }
  out.pd = pd;
  out.paths_with_violations = with_violations;
  return out;
}

}  // namespace ncsde::cli
