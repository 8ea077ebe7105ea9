#pragma once
/// Ensembles: N independent paths of one problem on all cores, with streaming summaries.
///
/// Path p uses the stream (seed, p) and nothing else, and paths are grouped in fixed blocks of
/// `block_size` whose summaries are merged in block order, so results are bit-identical whatever the
/// number of threads. Each worker thread holds its own copy of the SDE and of the stepper.
///
/// Blow-up is data: a path that explodes is stopped and recorded (status blown_up, its explosion time),
/// never a crash. Summaries of completed, stopped and blown-up paths are kept apart: moments of V_T over
/// completed paths (means are meaningless once blow-up has positive probability, so prefer the
/// quantiles of bounded functionals such as correlations), the state at stopping of stopped paths, and
/// the explosion times of blown-up ones. Quantiles of functionals are given both over completed paths
/// and over all paths with blown-up paths counted as +∞ (the law of the stopped process).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ncsde/brownian.hpp"
#include "ncsde/integrate.hpp"
#include "ncsde/state_space.hpp"
#include "ncsde/statistics.hpp"
#include "ncsde/symmetric.hpp"

namespace ncsde {

/// A scalar functional of the state, e.g. ρ¹² or V¹¹, whose quantiles an ensemble reports. f sees the
/// state as an ncsde::matrix (d×1 for a vector state). check_shape, when set, is called once per run
/// with the states' shape and throws ncsde::invalid_argument when f cannot be evaluated on it.
struct functional {
  functional() = default;
  functional(std::string name_, std::function<double(const matrix& v)> f_,
             std::function<void(Eigen::Index rows, Eigen::Index cols)> check_shape_ = {})
      : name(std::move(name_)), f(std::move(f_)), check_shape(std::move(check_shape_)) {}

  std::string name;
  std::function<double(const matrix& v)> f;
  std::function<void(Eigen::Index rows, Eigen::Index cols)> check_shape;
};

/// Correlation ρ^{ab} = V^{ab}/√(V^{aa}V^{bb}) (0-indexed a, b), clamped to [−1, 1]; NaN-free: a zero
/// diagonal gives 0. Throws ncsde::invalid_argument for a negative index; a run refuses it when a
/// or b is not below both dimensions of its states.
functional correlation_functional(int a, int b);
/// The entry X^{ab} (0-indexed; b = 0 for a vector state). Throws ncsde::invalid_argument for a
/// negative index; a run refuses it when (a, b) is outside its states.
functional entry_functional(int a, int b);

enum class progress_mode { automatic, on, off };

struct ensemble_options {
  std::uint64_t seed = 0;
  long long paths = 1000;
  int threads = 0;           ///< 0: all hardware threads
  bool keep_paths = false;   ///< keep every path's final and saved states (needed for CSV output)
  std::vector<functional> functionals;
  std::vector<double> quantile_levels{0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99};
  /// automatic and on: a bar on a terminal, a line every 30 s of a long run elsewhere (progress_bar)
  progress_mode progress = progress_mode::automatic;
  int block_size = 64;       ///< paths per reduction block (fixed: part of the reproducibility contract)
};

struct path_record {
  long long path = 0;
  path_status status = path_status::completed;
  double t_stop = 0.0;
  vector packed;  ///< coordinates of the state at t_stop (state_layout::pack: upper triangle on
                  ///< symmetric and cone spaces, every entry row-major on euclidean ones)
  /// Coordinates of the state at save_times[j], j < saved.size() (fewer when the path stopped earlier).
  std::vector<vector> saved;
};

struct functional_summary {
  std::string name;
  std::vector<double> levels;
  std::vector<double> completed;  ///< quantiles over completed paths at T
  std::vector<double> all;        ///< quantiles over all paths: value at stop, +inf if blown up
  double completed_mean = 0.0;    ///< mean over completed paths
  double completed_stderr = 0.0;
};

struct ensemble_result {
  int m = 0;                 ///< rows of the state (m of an m×m matrix, d of a vector)
  state_layout layout;       ///< the states' shape, space and coordinates
  double t0 = 0.0, t_end = 0.0, dt = 0.0;
  long long paths = 0, completed = 0, blown_up = 0, stopped = 0;
  std::uint64_t seed = 0;
  int threads = 1;
  std::string scheme;
  moments terminal;          ///< coordinates of the state at T over completed paths
  moments at_stop;           ///< coordinates of the state at stopping, over stopped paths
  std::vector<double> explosion_times;  ///< sorted, one per blown-up path
  std::vector<double> stop_times;       ///< sorted, one per stopped path
  std::vector<double> save_times;
  std::vector<moments> saved;           ///< coordinates at each save time, over paths alive then
  std::vector<functional_summary> functionals;
  pd_counters pd;                       ///< cone events (zero off the cone)
  long long paths_with_violations = 0;
  std::vector<path_record> records;     ///< when keep_paths, in path order
  double seconds = 0.0;

  double blown_up_fraction() const { return paths ? double(blown_up) / double(paths) : 0.0; }
  /// Binomial standard error of the blown-up fraction.
  double blown_up_stderr() const;
};

namespace detail {

struct block_result {
  moments terminal, at_stop;
  std::vector<moments> saved;
  std::vector<double> explosion_times, stop_times;
  pd_counters pd;
  long long completed = 0, blown_up = 0, stopped = 0, with_violations = 0;
};

void merge_block(ensemble_result& into, block_result& block);
void finish_summary(ensemble_result& r, const ensemble_options& opt,
                    const std::vector<std::vector<double>>& values,
                    const std::vector<path_status>& statuses);
void validate_ensemble_options(const ensemble_options& opt);
/// Calls every functional's check_shape with the states' shape.
void validate_functionals(const ensemble_options& opt, const state_layout& layout);
int resolve_threads(int requested);

/// Progress on stderr. On a terminal, a bar redrawn in place ("\r<label> [####    ]  45% 4500/10000
/// paths 1.2s"); off a terminal (a log, a pipe, a batch job), where a redrawn bar would fill the log,
/// a plain line "ncsde: <label> 45% (4500/10000 paths, 120 s)" once the run has lasted 30 s and then
/// at most every 30 s, plus a closing line, so that short runs print nothing and a long one shows that
/// it is alive. update() may be called from several threads.
class progress_bar {
 public:
  progress_bar(progress_mode mode, long long total, std::string label);
  bool enabled() const { return m_enabled; }
  void update(long long done);
  void finish();

 private:
  bool m_enabled;
  bool m_terminal;
  long long m_total;
  std::string m_label;
  std::chrono::steady_clock::time_point m_start;
  std::mutex m_mutex;
  long long m_printed_period = 0;  ///< off a terminal: the last 30 s period reported
};

/// Counts the workers of a pool still running, so that the thread that started them can wait for the
/// last one without polling at a fixed rate: wait() returns as soon as every worker has called done().
class worker_latch {
 public:
  explicit worker_latch(int workers) : m_left(workers) {}
  void done() {
    {
      std::lock_guard lock(m_mutex);
      --m_left;
    }
    m_cv.notify_all();
  }
  /// Calls tick() every `period` until every worker is done (tick runs without the lock held).
  template <class Tick>
  void wait(std::chrono::milliseconds period, Tick&& tick) {
    std::unique_lock lock(m_mutex);
    while (!m_cv.wait_for(lock, period, [&] { return m_left == 0; })) {
      lock.unlock();
      tick();
      lock.lock();
    }
  }

 private:
  std::mutex m_mutex;
  std::condition_variable m_cv;
  int m_left;
};

}  // namespace detail

namespace detail {

/// The engine of both run_ensemble overloads; make_source(p) returns path p's NoiseSource.
template <class Stepper, class S, class State, class SourceFactory>
ensemble_result run_ensemble_impl(const Stepper& stepper, const problem<S, State>& prob,
                                  const integrate_options& iopt, const ensemble_options& opt,
                                  const SourceFactory& make_source) {
  using Source = std::invoke_result_t<const SourceFactory&, std::uint64_t>;
  static_assert(NoiseSource<Source>, "run_ensemble: the source factory must return a NoiseSource");
  validate_options(iopt);
  detail::validate_ensemble_options(opt);
  integrate_options resolved;
  const State v0 = detail::validate_problem("run_ensemble", prob, iopt,
                                            Stepper::request.needs_iterated_integrals(), resolved);
  if constexpr (!BridgedNoiseSource<Source>)
    if (resolved.policy == pd_policy::refine)
      throw_invalid("run_ensemble", "pd policy 'refine' needs a noise source with a bridge split");
  const state_layout layout =
      make_state_layout("run_ensemble", "V0", state_space_of<S>, v0);
  detail::validate_functionals(opt, layout);
  const step_grid grid(prob.t0, prob.t_end, iopt.dt, iopt.save_times);
  const int m = static_cast<int>(v0.rows());
  const int K = layout.size();
  const int k = prob.sde.noise_dimension(m);
  const int threads = detail::resolve_threads(opt.threads);
  const long long blocks = (opt.paths + opt.block_size - 1) / opt.block_size;
  const std::size_t nf = opt.functionals.size();

  ensemble_result result;
  result.m = m;
  result.layout = layout;
  result.t0 = prob.t0;
  result.t_end = prob.t_end;
  result.dt = iopt.dt;
  result.paths = opt.paths;
  result.seed = opt.seed;
  result.threads = threads;
  result.scheme = std::string(Stepper::name);
  result.terminal.reset(K);
  result.at_stop.reset(K);
  result.save_times = iopt.save_times;
  result.saved.assign(iopt.save_times.size(), moments(K));
  if (opt.keep_paths) result.records.resize(static_cast<std::size_t>(opt.paths));

  std::vector<std::vector<double>> values(nf, std::vector<double>(static_cast<std::size_t>(opt.paths)));
  std::vector<path_status> statuses(static_cast<std::size_t>(opt.paths));

  std::atomic<long long> next_block{0}, paths_done{0};
  std::atomic<bool> failed{false};
  std::mutex merge_mutex;
  std::map<long long, detail::block_result> pending;
  long long next_to_merge = 0;
  std::vector<std::pair<long long, std::exception_ptr>> errors;
  auto record_error = [&](long long p) {
    std::lock_guard lock(merge_mutex);
    errors.emplace_back(p, std::current_exception());
    failed.store(true);
  };

  const auto start = std::chrono::steady_clock::now();
  // Each worker steps paths on Fixed: the compile-time-sized counterpart of State on the fixed-size
  // path, else State (see integrate()); path p's numbers are the same either way as integrate()'s
  // for (seed, p).
  auto worker = [&]<class Fixed>(std::type_identity<Fixed>) {
    using rebound = detail::stepper_for<Stepper, Fixed>;
    using engine_type = detail::path_integrator<typename rebound::type, S, Source,
                                                detail::null_observer, Fixed, State>;
    // Per-thread copies (coefficients may keep mutable workspaces); a copy that throws is an error
    // of the run like any other, reported before every path's (index −1).
    std::optional<S> sde;
    std::optional<typename rebound::type> local;
    try {
      sde.emplace(prob.sde);
      local.emplace(rebound::make(stepper));
    } catch (...) {
      record_error(-1);
      return;
    }
    vector packed(K);
    matrix dynamic;  // the state as a matrix for the functionals (non-matrix states only)
    detail::null_observer obs;
    for (;;) {
      if (failed.load()) return;
      const long long b = next_block.fetch_add(1);
      if (b >= blocks) return;
      detail::block_result block;
      block.terminal.reset(K);
      block.at_stop.reset(K);
      block.saved.assign(iopt.save_times.size(), moments(K));
      const long long first = b * opt.block_size;
      const long long last = std::min(opt.paths, first + opt.block_size);
      for (long long p = first; p < last; ++p) {
        try {
          Source source = make_source(static_cast<std::uint64_t>(p));
          detail::validate_source_dimension("run_ensemble", source.dimension(), k, p);
          engine_type engine(*local, *sde, source, resolved, p);
          basic_path_result<State> r = engine.run(v0, grid, obs);
          const std::size_t ps = static_cast<std::size_t>(p);
          statuses[ps] = r.status;
          for (std::size_t j = 0; j < r.saved.size(); ++j) {
            layout.pack(r.saved[j], packed);
            block.saved[j].add(packed);
          }
          block.pd += r.pd;
          if (r.pd.violations > 0) ++block.with_violations;
          const bool finite = r.v.allFinite();
          if (finite) layout.pack(r.v, packed);
          switch (r.status) {
            case path_status::completed:
              ++block.completed;
              block.terminal.add(packed);
              break;
            case path_status::stopped:
              ++block.stopped;
              block.at_stop.add(packed);
              block.stop_times.push_back(r.t_stop);
              break;
            case path_status::blown_up:
              ++block.blown_up;
              block.explosion_times.push_back(r.t_stop);
              break;
          }
          if (nf > 0 && r.status != path_status::blown_up) {
            const matrix* as_matrix = nullptr;
            if constexpr (std::is_same_v<State, matrix>) {
              as_matrix = &r.v;
            } else {
              dynamic = r.v;
              as_matrix = &dynamic;
            }
            for (std::size_t j = 0; j < nf; ++j) values[j][ps] = opt.functionals[j].f(*as_matrix);
          } else {
            for (std::size_t j = 0; j < nf; ++j)
              values[j][ps] = std::numeric_limits<double>::infinity();
          }
          if (opt.keep_paths) {
            path_record& rec = result.records[ps];
            rec.path = p;
            rec.status = r.status;
            rec.t_stop = r.t_stop;
            rec.packed.resize(K);
            if (finite)
              rec.packed = packed;
            else
              layout.pack(r.v, rec.packed);
            rec.saved.assign(r.saved.size(), vector(K));
            for (std::size_t j = 0; j < r.saved.size(); ++j) layout.pack(r.saved[j], rec.saved[j]);
          }
        } catch (...) {
          // Finish the block (lower-numbered paths' errors must all be seen), stop claiming more.
          record_error(p);
        }
        paths_done.fetch_add(1);
      }
      std::lock_guard lock(merge_mutex);
      pending.emplace(b, std::move(block));
      for (auto it = pending.find(next_to_merge); it != pending.end(); it = pending.find(next_to_merge)) {
        detail::merge_block(result, it->second);
        pending.erase(it);
        ++next_to_merge;
      }
    }
  };

  detail::progress_bar bar(opt.progress, opt.paths, std::string(Stepper::name));
  {
    detail::worker_latch latch(threads);
    std::vector<std::jthread> pool;
    pool.reserve(static_cast<std::size_t>(threads));
    for (int i = 0; i < threads; ++i)
      pool.emplace_back([&] {
        detail::visit_state_type<Stepper, S, State>(v0.rows(), v0.cols(), worker);  // never throws
        latch.done();
      });
    // Wake only to draw the bar; otherwise just join the workers.
    if (bar.enabled())
      latch.wait(std::chrono::milliseconds(100), [&] { bar.update(paths_done.load()); });
  }
  bar.finish();
  if (!errors.empty()) {
    // The lowest path index, so the reported error does not depend on the thread count.
    auto first = std::min_element(errors.begin(), errors.end(),
                                  [](const auto& a, const auto& b) { return a.first < b.first; });
    std::rethrow_exception(first->second);
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  detail::finish_summary(result, opt, values, statuses);
  return result;
}

}  // namespace detail

/// Runs opt.paths paths of `prob` with copies of `stepper`; path p draws its increments from the
/// counter-based stream (opt.seed, p) (stream_brownian).
template <class Stepper, class S, class State>
  requires Sde<S, State>
ensemble_result run_ensemble(const Stepper& stepper, const problem<S, State>& prob,
                             const integrate_options& iopt, const ensemble_options& opt) {
  return detail::run_ensemble_impl(stepper, prob, iopt, opt, [&](std::uint64_t p) {
    return stream_brownian(random_stream(opt.seed, p),
                           prob.sde.noise_dimension(static_cast<int>(prob.v0.rows())),
                           iopt.levy_area);
  });
}

/// Runs opt.paths paths of `prob` with copies of `stepper`; path p draws its increments from
/// make_source(p), a NoiseSource of the SDE's noise dimension (checked per path). make_source is
/// called from the worker threads, concurrently: it must be safe to call so (a pure function of p,
/// like the default stream, keeps results bit-identical for any thread count).
template <class Stepper, class S, class State, class SourceFactory>
  requires Sde<S, State> && std::invocable<const SourceFactory&, std::uint64_t>
ensemble_result run_ensemble(const Stepper& stepper, const problem<S, State>& prob,
                             const integrate_options& iopt, const ensemble_options& opt,
                             const SourceFactory& make_source) {
  return detail::run_ensemble_impl(stepper, prob, iopt, opt, make_source);
}

}  // namespace ncsde
