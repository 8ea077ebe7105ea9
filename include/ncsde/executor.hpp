#pragma once
/// The path executor: the one mechanism that runs the paths of an ensemble-shaped computation
/// (ensembles, convergence studies, finite-network samples, the SDE side of validate) on worker
/// threads.
///
/// The paths of a run are numbered 0, 1, 2, … and cut into fixed blocks: block b holds the paths
/// [b·B, (b+1)·B), B = block_size, whatever the range being run. execute() runs a range [first, last)
/// of paths (a whole run, or one piece of it on one process of many): the blocks that meet the range,
/// each cut to the range, are claimed in increasing order by the workers; every block's result goes
/// to the reducer in block order, one at a time. A computation whose per-path work depends on the path
/// index only (its own random stream) and whose reducer folds blocks in order is therefore
/// bit-identical for any number of threads; and since block boundaries are absolute, a run of
/// [0, N) and runs of [0, a) and [a, N) see the same whole blocks, so a driver that keeps the paths of
/// the block cut at a (the `whole` flag below) can merge the pieces into exactly the one-range result.
///
/// Worker protocol. make_worker() is called once on every worker thread and returns that thread's
/// worker w (its own copies of the SDE, stepper and workspaces). For each block it is given,
///   typename W::block_type block = w.begin_block(info);   // info: range, index, whole
///   w.run_path(p, block)   for p in info.range, in order   (or, when W has it,
///   w.run_block(info, block)                               once: a block stepped as one batch)
/// then reduce(info, std::move(block)) in block order. A worker that runs many blocks at once (an
/// accelerator, whose batch is many blocks wide) declares it: w.blocks_per_claim() ≥ 1 consecutive
/// blocks are claimed together and, with
///   w.run_blocks(infos, blocks)   (std::span<const block_info>, std::span<block_type>, each begun)
/// run as one; their results still go to the reducer one at a time in block order, so the
/// determinism argument below holds unchanged for any claim size and thread count. A path that throws does not stop its block
/// (every lower-numbered path of the run is still run); no block is claimed after a failure, and once
/// the workers stop the error of the lowest failing path is rethrown, so the error reported does not
/// depend on the thread count either (blocks are claimed in order, so every block below a failing one
/// has been claimed and finishes). An error of make_worker counts as path −1 (before every path); a
/// run_block that cannot name the failing path throws path_failure, else its error counts as the
/// block's first path; an error of the reducer counts as its block's first path.
///
/// Ranges (path_range) and block indices are plain integers, and drivers keep block results as plain
/// data (see ensemble_partial), so a range can be run in another process and its result sent back.
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
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ncsde/error.hpp"

namespace ncsde {

enum class progress_mode { automatic, on, off };

/// The paths [first, last) of a run.
struct path_range {
  long long first = 0;
  long long last = 0;

  long long size() const { return last > first ? last - first : 0; }
  bool empty() const { return last <= first; }
  bool contains(long long p) const { return p >= first && p < last; }
  bool operator==(const path_range&) const = default;
};

/// One block as the executor hands it out: its index b, its paths (block b cut to the range being
/// run), and whether those are all of block b's paths (false for a block cut by the range's ends).
struct block_info {
  long long index = 0;
  path_range range;
  bool whole = true;
};

/// The blocks of `range` for blocks of `block_size` paths (absolute: block b = [b·B, (b+1)·B)).
struct block_grid {
  path_range range;
  long long block_size = 64;

  long long first_block() const { return range.first / block_size; }
  /// One past the last block meeting the range (= first_block() for an empty range).
  long long end_block() const {
    return range.empty() ? first_block() : (range.last + block_size - 1) / block_size;
  }
  long long blocks() const { return end_block() - first_block(); }
  block_info block(long long b) const {
    const path_range full{b * block_size, (b + 1) * block_size};
    const path_range cut{std::max(range.first, full.first), std::min(range.last, full.last)};
    return {b, cut, cut == full};
  }
};

/// A share-out of one driver's paths over cooperating processes (MPI ranks:
/// ncsde::mpi::rank_sharing in ncsde/mpi.hpp; the solver layer itself knows no MPI). `mine(paths,
/// block_size)` is the contiguous range of whole blocks this process runs; `gather(piece)` runs
/// `piece` here and collects every process's bytes at the root, in process order (which is path
/// order), nullopt on the other processes; a failure on any process is thrown on every one.
/// A driver given a sharing runs its share, sends its per-path results, and the root finishes the
/// run as one process would: the root's results are the one-process results bit for bit.
struct path_sharing {
  std::function<path_range(long long paths, long long block_size)> mine;
  std::function<std::optional<std::vector<std::string>>(const std::function<std::string()>&)>
      gather;
};

struct executor_options {
  int threads = 0;            ///< 0: all hardware threads
  long long block_size = 64;  ///< paths per block (part of a driver's reproducibility contract)
  progress_mode progress = progress_mode::automatic;
  std::string label = "paths";  ///< the progress bar's label
};

/// Cancellation of the runs started on this thread: while a cancel_scope is alive, every execute()
/// called on the thread checks `flag` before each block and, once it is set, stops handing out
/// blocks and throws ncsde::cancelled when its workers have finished their blocks (so a run ends
/// within about one block's time). The workers inherit the scope, so runs nested in a run stop too.
/// One flag can serve many runs; nothing is checked without a scope. Scopes nest (the innermost
/// counts).
class cancel_scope {
 public:
  explicit cancel_scope(const std::atomic<bool>& flag) : m_previous(current()) {
    current() = &flag;
  }
  ~cancel_scope() { current() = m_previous; }
  cancel_scope(const cancel_scope&) = delete;
  cancel_scope& operator=(const cancel_scope&) = delete;

  /// The flag of this thread's innermost scope, or nullptr.
  static const std::atomic<bool>*& current() {
    thread_local const std::atomic<bool>* flag = nullptr;
    return flag;
  }

 private:
  const std::atomic<bool>* m_previous;
};

/// What execute() reports: the worker threads it ran and its wall time.
struct execution_report {
  int threads = 1;
  double seconds = 0.0;
};

/// Thrown by a worker's run_block to attribute its failure to a path of the block.
struct path_failure {
  long long path = 0;
  std::exception_ptr error;
};

namespace detail {

/// 0 → the hardware threads (at least 1); otherwise the number asked for.
int resolve_threads(int requested);
/// ncsde::invalid_argument naming `where` and the option for threads < 0, block_size < 1, or a
/// range with first < 0 or last < first.
void validate_execution(const char* where, path_range range, const executor_options& opt);

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

/// Counts the workers still running, so that the thread that started them can wait for the last one
/// without polling at a fixed rate: wait() returns as soon as every worker has called done().
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

template <class W>
concept batch_worker = requires(W& w, const block_info& info, typename W::block_type& block) {
  w.run_block(info, block);
};

/// A worker that claims runs of consecutive blocks and runs each run as one (see the top).
template <class W>
concept run_worker =
    requires(W& w, std::span<const block_info> infos, std::span<typename W::block_type> blocks) {
      { w.blocks_per_claim() } -> std::convertible_to<long long>;
      w.run_blocks(infos, blocks);
    };

/// The worker of for_each_path.
template <class Fn>
struct index_worker {
  using block_type = path_range;
  const Fn& fn;
  path_range begin_block(const block_info& info) const { return info.range; }
  void run_path(long long p, path_range&) const { fn(p); }
};

}  // namespace detail

/// Runs the paths of `range` (see the top of this file). The reducer runs on worker threads, one call
/// at a time, in increasing block order.
template <class MakeWorker, class Reduce>
execution_report execute(path_range range, const executor_options& opt, MakeWorker&& make_worker,
                         Reduce&& reduce) {
  detail::validate_execution("execute", range, opt);
  using worker_type = std::invoke_result_t<MakeWorker&>;
  using block_type = typename worker_type::block_type;
  const block_grid grid{range, opt.block_size};
  const long long first_block = grid.first_block(), end_block = grid.end_block();
  execution_report report;
  report.threads = detail::resolve_threads(opt.threads);
  const int workers =
      static_cast<int>(std::min<long long>(report.threads, std::max<long long>(grid.blocks(), 1)));

  std::atomic<long long> next_block{first_block}, paths_done{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;  // guards pending, next_to_reduce, errors
  std::map<long long, std::pair<block_info, block_type>> pending;
  long long next_to_reduce = first_block;
  std::vector<std::pair<long long, std::exception_ptr>> errors;
  auto record_error = [&](long long p, std::exception_ptr e) {
    std::lock_guard lock(mutex);
    errors.emplace_back(p, std::move(e));
    failed.store(true);
  };

  const std::atomic<bool>* const cancel = cancel_scope::current();
  auto work = [&] {
    std::exception_ptr setup_error;
    try {
      cancel_scope::current() = cancel;  // runs nested in this one stop with it
      worker_type w = make_worker();
      // A block's result into the reducer's queue, and every block now next in order reduced.
      auto hand_over = [&](const block_info& info, block_type&& block) {
        std::lock_guard lock(mutex);
        pending.emplace(info.index, std::pair<block_info, block_type>(info, std::move(block)));
        for (auto it = pending.find(next_to_reduce); it != pending.end();
             it = pending.find(next_to_reduce)) {
          reduce(it->second.first, std::move(it->second.second));
          pending.erase(it);
          ++next_to_reduce;
        }
      };
      long long claim = 1;
      if constexpr (detail::run_worker<worker_type>)
        claim = std::max<long long>(1, static_cast<long long>(w.blocks_per_claim()));
      // Runs the claimed blocks, recording their errors; whether one failed. A run worker takes
      // the run at once, a batch worker its one block, a path worker each path of it (an error
      // in one path does not stop the others: the lowest failing path is the run's error).
      auto run_claim = [&](std::span<const block_info> run, std::span<block_type> results) {
        if constexpr (detail::run_worker<worker_type> || detail::batch_worker<worker_type>) {
          bool run_failed = false;
          try {
            if constexpr (detail::run_worker<worker_type>)
              w.run_blocks(run, results);
            else
              w.run_block(run.front(), results.front());
          } catch (const path_failure& f) {
            record_error(f.path, f.error);
            run_failed = true;
          } catch (...) {
            record_error(run.front().range.first, std::current_exception());
            run_failed = true;
          }
          for (const block_info& info : run) paths_done.fetch_add(info.range.size());
          return run_failed;
        } else {
          bool run_failed = false;
          for (long long p = run.front().range.first; p < run.front().range.last; ++p) {
            try {
              w.run_path(p, results.front());
            } catch (...) {
              record_error(p, std::current_exception());
              run_failed = true;
            }
            paths_done.fetch_add(1);
          }
          return run_failed;
        }
      };
      std::vector<block_info> infos;
      std::vector<block_type> blocks;
      for (;;) {
        if (failed.load()) return;
        const long long first = next_block.fetch_add(claim);
        if (first >= end_block) return;
        if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
          record_error(-1, std::make_exception_ptr(cancelled{}));
          return;
        }
        const long long last = std::min(first + claim, end_block);
        infos.clear();
        blocks.clear();
        try {
          for (long long b = first; b < last; ++b) {
            infos.push_back(grid.block(b));
            blocks.push_back(w.begin_block(infos.back()));
          }
        } catch (...) {
          record_error(infos.back().range.first, std::current_exception());
          continue;
        }
        if (run_claim(std::span<const block_info>(infos), std::span<block_type>(blocks)) ||
            failed.load())
          continue;  // results are discarded: skip the fold
        std::size_t i = 0;
        try {
          for (; i < infos.size(); ++i) hand_over(infos[i], std::move(blocks[i]));
        } catch (...) {
          record_error(infos[i].range.first, std::current_exception());  // the reducer
        }
      }
    } catch (...) {
      record_error(-1, std::current_exception());  // make_worker
    }
  };

  const auto start = std::chrono::steady_clock::now();
  detail::progress_bar bar(opt.progress, range.size(), opt.label);
  {
    detail::worker_latch latch(workers);
    std::vector<std::jthread> pool;
    pool.reserve(static_cast<std::size_t>(workers));
    for (int i = 0; i < workers; ++i)
      pool.emplace_back([&] {
        work();  // catches everything
        latch.done();
      });
    // Wake only to draw the bar; otherwise just join the workers.
    if (bar.enabled())
      latch.wait(std::chrono::milliseconds(100), [&] { bar.update(paths_done.load()); });
  }
  bar.finish();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!errors.empty()) {
    const auto lowest =
        std::min_element(errors.begin(), errors.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
    std::rethrow_exception(lowest->second);
  }
  return report;
}

/// Runs fn(p) for every path p of `range` on the executor, for computations in which path p writes
/// only its own results (by index), so that nothing needs reducing: the output does not depend on
/// the thread count or the block size. fn is shared by the workers (called concurrently).
template <class Fn>
execution_report for_each_path(path_range range, const executor_options& opt, const Fn& fn) {
  return execute(
      range, opt, [&] { return detail::index_worker<Fn>{fn}; },
      [](const block_info&, path_range&&) {});
}

}  // namespace ncsde
