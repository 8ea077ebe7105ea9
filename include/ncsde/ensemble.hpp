#pragma once
/// Ensembles: N independent paths of one problem on all cores, with streaming summaries.
///
/// Path p uses the stream (seed, p) and nothing else, and paths are grouped in fixed blocks of
/// `block_size` whose summaries are merged in block order (the path executor, executor.hpp), so
/// results are bit-identical whatever the number of threads. Each worker thread holds its own copy
/// of the SDE and of the stepper. A run can also be cut into pieces: run_ensemble_range() runs the
/// paths [a, b) into an ensemble_partial (plain data, serialisable), merge_partials() joins pieces
/// that follow each other, finish_ensemble() turns the pieces of [0, paths) into exactly the
/// ensemble_result of one run_ensemble() (bit for bit, timing aside).
///
/// Blow-up is data: a path that explodes is stopped and recorded (status blown_up, its explosion time),
/// never a crash. Summaries of completed, stopped and blown-up paths are kept apart: moments of V_T over
/// completed paths (means are meaningless once blow-up has positive probability, so prefer the
/// quantiles of bounded functionals such as correlations), the state at stopping of stopped paths, and
/// the explosion times of blown-up ones. Quantiles of functionals are given both over completed paths
/// and over all paths with blown-up paths counted as +∞ (the law of the stopped process).
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ncsde/batched.hpp"
#include "ncsde/brownian.hpp"
#include "ncsde/device.hpp"
#include "ncsde/executor.hpp"
#include "ncsde/integrate.hpp"
#include "ncsde/state_space.hpp"
#include "ncsde/statistics.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"
#include "ncsde/steppers/milstein.hpp"
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

/// What an ensemble keeps of the spread of its coordinates (K of them: the packed state): the
/// whole K×K covariance (K² numbers per summary and per block of paths, K² operations per path) or
/// the variances only (K numbers). Means, variances and standard errors are the same bits either
/// way. automatic: the covariance while K ≤ max_automatic_covariance (m ≤ 16 for m×m states on
/// symmetric spaces), the variances beyond, where the covariance would outweigh the run (at
/// m = 64, 4.3 million numbers per block).
enum class covariance_mode { automatic, full, diagonal };
inline constexpr int max_automatic_covariance = 136;
std::string_view to_string(covariance_mode c);
/// Parses "automatic", "full" or "diagonal"; ncsde::invalid_argument naming `param` otherwise.
covariance_mode parse_covariance_mode(std::string_view text, std::string_view param = "covariance");
/// Whether a run whose states have K coordinates keeps the covariance under `mode`.
inline bool keeps_covariance(covariance_mode mode, int K) {
  return mode == covariance_mode::full ||
         (mode == covariance_mode::automatic && K <= max_automatic_covariance);
}

/// The block size of a run of `paths` paths whose states have K coordinates
/// (ensemble_options::block_size = 0): 64 paths while K ≤ max_automatic_covariance (136: m ≤ 16 on
/// matrix states, the sizes whose blocks keep their covariance), 16 while K ≤ 528 (m ≤ 32), and
/// beyond ⌈paths / 64⌉, at least 1 and at most 8. A block is what one worker runs at a time, so
/// large states, whose paths are costly, come in small blocks that keep every core busy: 256 paths
/// at m = 64 are 64 blocks and 16 paths are 16, while a run of 512 paths or more keeps blocks of 8
/// (a block's summaries are one set of moments of the K coordinates). A function of the run alone,
/// never of the thread count or of the piece of the path range a rank runs.
inline int automatic_block_size(int K, long long paths) {
  if (K <= max_automatic_covariance) return 64;
  if (K <= 528) return 16;
  return static_cast<int>(std::clamp<long long>((paths + 63) / 64, 1, 8));
}

struct ensemble_options {
  std::uint64_t seed = 0;
  long long paths = 1000;
  int threads = 0;          ///< 0: all hardware threads
  bool keep_paths = false;  ///< keep every path's final and saved states (needed for CSV output)
  std::vector<functional> functionals;
  std::vector<double> quantile_levels{0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99};
  /// automatic and on: a bar on a terminal, a line every 30 s of a long run elsewhere (progress_bar)
  progress_mode progress = progress_mode::automatic;
  /// Paths per reduction block, part of the reproducibility contract: the summaries are merged
  /// block by block in block order, so a run's numbers depend on the block size and on nothing
  /// else of the schedule. 0 (the default): automatic_block_size of the state's coordinates and
  /// the paths, a function of the run alone (never of the thread count), at least the SDE's lane
  /// width where it prefers lanes at the state's size.
  int block_size = 0;
  /// Step lane groups of batch_width paths at once (batched.hpp) when the run allows it (the
  /// default): a scheme with a lane form (Euler–Maruyama, both Milstein schemes in their
  /// derivative-free form, the predictor–corrector), an SDE with a batched form (BatchedSde) that
  /// prefers lanes at the state's size (prefers_lanes, lanes.hpp), the default (seed, path)
  /// streams, fixed steps and a pd_policy other than refine; other runs, and
  /// every run with false, step paths one by one. A batched path's numbers are the unbatched
  /// path's bit for bit when the SDE's batched coefficients compute in the per-path order, as the
  /// library's SDEs do (the built-in models, the analytic problems); a user's batched form that
  /// sums in another order agrees to its round-off. Like every run they do not depend on the
  /// thread count or the path range.
  bool batched = true;
  /// The work limit of the whole run, ≥ 1 (work limits, integrate.hpp's step_control): every path
  /// gets the same share, min(integrate_options::max_path_steps, max_run_steps / paths), fixed
  /// before any path runs; a path that uses its share up ends as path_status::exhausted.
  long long max_run_steps = default_max_run_steps;
  /// The covariance of the coordinates or their variances only (covariance_mode).
  covariance_mode covariance = covariance_mode::automatic;
  /// Where the paths run (device.hpp): the CPU engines (the default), a CUDA GPU, "auto", or the
  /// emulated device. A device runs the paths the CPU would, bit for bit where its arithmetic is
  /// the CPU's (docs/gpu.md); the outputs do not depend on it otherwise.
  device_spec device;
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
  int m = 0;            ///< rows of the state (m of an m×m matrix, d of a vector)
  state_layout layout;  ///< the states' shape, space and coordinates
  double t0 = 0.0, t_end = 0.0, dt = 0.0;
  long long paths = 0, completed = 0, blown_up = 0, stopped = 0;
  /// Paths that used up their work limit before T (path_status::exhausted): neither completed nor
  /// blown up, so blown_up/paths is then a lower bound of P(τ ≤ T) and (blown_up + exhausted)/paths
  /// an upper one. Summarised nowhere else (their t_stop is where their work ran out).
  long long exhausted = 0;
  std::uint64_t seed = 0;
  int threads = 1;
  std::string scheme;
  moments terminal;  ///< coordinates of the state at T over completed paths
  moments at_stop;   ///< coordinates of the state at stopping, over stopped paths
  std::vector<double> explosion_times;  ///< sorted, one per blown-up path
  std::vector<double> stop_times;       ///< sorted, one per stopped path
  std::vector<double> save_times;
  std::vector<moments> saved;  ///< coordinates at each save time, over paths alive then
  std::vector<functional_summary> functionals;
  pd_counters pd;  ///< cone events (zero off the cone)
  long long paths_with_violations = 0;
  /// The step controller (integrate_options::control) and, when it is adaptive, its tolerance and
  /// counters summed over the paths: steps taken (pieces), refinements and unresolved pieces,
  /// the deepest halving. Reported only for adaptive runs.
  step_control control = step_control::fixed;
  double tolerance = 0.0;
  long long steps = 0;
  step_stats stepping;
  std::vector<path_record> records;  ///< when keep_paths, in path order
  double seconds = 0.0;
  /// What the paths ran on (ensemble_options::device): the device and, for "auto", why.
  device_report device;

  double blown_up_fraction() const { return paths ? double(blown_up) / double(paths) : 0.0; }
  /// Binomial standard error of the blown-up fraction.
  double blown_up_stderr() const;
};

namespace detail {

/// One path's contribution to an ensemble: what a block cut by the ends of a range keeps per path
/// until the rest of its block arrives (merge_partials), and what a whole block folds at once.
struct ensemble_path {
  long long path = 0;
  path_status status = path_status::completed;
  double t_stop = 0.0;
  vector packed;              ///< the state at t_stop (state_layout::pack)
  std::vector<vector> saved;  ///< the states at the save times reached
  pd_counters pd;
  std::vector<double> values;  ///< the functionals at t_stop (+inf when blown up)
  long long steps = 0;         ///< steps taken
  step_stats stepping;         ///< the step controller's counters
};

/// The result of one block. A whole block (all of its paths in one range) holds its summaries and
/// per-path columns; a block cut by a range's ends holds its paths instead (`paths`), to be folded
/// in path order once merged with the rest of the block.
struct block_result {
  long long index = 0;
  path_range range;
  bool whole = true;
  // whole blocks:
  moments terminal, at_stop;
  std::vector<moments> saved;
  std::vector<double> explosion_times, stop_times;
  pd_counters pd;
  long long completed = 0, blown_up = 0, stopped = 0, with_violations = 0, exhausted = 0;
  long long steps = 0;
  step_stats stepping;
  std::vector<path_status> statuses;        ///< per path, in path order
  std::vector<std::vector<double>> values;  ///< per functional, per path
  std::vector<path_record> records;         ///< when keep_paths
  // cut blocks:
  std::vector<ensemble_path> paths;

  /// An empty whole block for states of K coordinates, `saves` save times, `functionals` values,
  /// its moments with the covariance or the variances only.
  void start_whole(int K, std::size_t saves, std::size_t functionals, bool covariance);
  /// Folds one path (whole blocks).
  void add(const ensemble_path& p, bool keep_paths);
};

void merge_block(ensemble_result& into, block_result& block);
void finish_summary(ensemble_result& r, const ensemble_options& opt,
                    const std::vector<std::vector<double>>& values,
                    const std::vector<path_status>& statuses);
void validate_ensemble_options(const ensemble_options& opt);
/// Calls every functional's check_shape with the states' shape.
void validate_functionals(const ensemble_options& opt, const state_layout& layout);

}  // namespace detail

/// The result of the paths [range.first, range.last) of an ensemble: what run_ensemble_range()
/// returns and merge_partials() joins. `run` describes the run (shape, times, seed, scheme, threads:
/// the fields of ensemble_result set before any path ran; its summaries are empty); `blocks` are the
/// blocks meeting the range in order, whole ones folded, cut ones (at most one at each end) as
/// paths. Plain data: serialize() / deserialize_ensemble_partial() write and read it.
struct ensemble_partial {
  ensemble_result run;
  path_range range;
  long long block_size = 64;
  std::size_t functionals = 0;  ///< values per path
  bool keep_paths = false;
  bool covariance = true;  ///< the summaries keep the covariance (keeps_covariance)
  std::vector<detail::block_result> blocks;
};

/// Joins pieces that follow each other (parts[i].range.last == parts[i+1].range.first) of one run
/// (same shape, space, times, seed, scheme, block size, functionals); throws ncsde::invalid_argument
/// naming the piece and the mismatch (a gap, an overlap, another run) otherwise.
ensemble_partial merge_partials(std::vector<ensemble_partial> parts);

/// The ensemble_result of the whole run from the pieces of [0, opt.paths) merged into `whole` (opt:
/// the run's ensemble_options, for the functionals' names and quantile levels). Throws
/// ncsde::invalid_argument when `whole` does not cover [0, opt.paths) or does not match opt.
ensemble_result finish_ensemble(ensemble_partial whole, const ensemble_options& opt);

/// A partial as bytes (a versioned binary format, doubles bit-exact) and back; the reader throws
/// ncsde::invalid_argument for anything that is not a complete partial of this format.
std::string serialize(const ensemble_partial& partial);
ensemble_partial deserialize_ensemble_partial(std::string_view bytes);

namespace detail {

/// The empty result of the block `info` (whole blocks folded, cut ones as paths).
inline block_result start_block(const block_info& info, const state_layout& layout,
                                const integrate_options& resolved, const ensemble_options& opt) {
  block_result b;
  b.index = info.index;
  b.range = info.range;
  b.whole = info.whole;
  if (b.whole)
    b.start_whole(layout.size(), resolved.save_times.size(), opt.functionals.size(),
                  keeps_covariance(opt.covariance, layout.size()));
  return b;
}

/// Path p's outcome r into its block: folded at once in a whole block (through `scratch`), kept as
/// a path in a cut one; the functionals evaluated at the state at t_stop (+inf when blown up).
/// `dynamic`: a workspace for non-matrix states.
template <class State>
void record_path(long long p, const basic_path_result<State>& r, const state_layout& layout,
                 const ensemble_options& opt, block_result& block, ensemble_path& scratch,
                 matrix& dynamic) {
  ensemble_path& out = block.whole ? scratch : block.paths.emplace_back();
  const int K = layout.size();
  out.path = p;
  out.status = r.status;
  out.t_stop = r.t_stop;
  out.pd = r.pd;
  out.steps = r.steps;
  out.stepping = r.stepping;
  out.packed.resize(K);
  layout.pack(r.v, out.packed);
  out.saved.resize(r.saved.size());
  for (std::size_t j = 0; j < r.saved.size(); ++j) {
    out.saved[j].resize(K);
    layout.pack(r.saved[j], out.saved[j]);
  }
  const std::size_t nf = opt.functionals.size();
  out.values.resize(nf);
  if (nf > 0 && r.status != path_status::blown_up) {
    const matrix* as_matrix = nullptr;
    if constexpr (std::is_same_v<State, matrix>) {
      as_matrix = &r.v;
    } else {
      dynamic = r.v;
      as_matrix = &dynamic;
    }
    for (std::size_t j = 0; j < nf; ++j) out.values[j] = opt.functionals[j].f(*as_matrix);
  } else {
    for (std::size_t j = 0; j < nf; ++j) out.values[j] = std::numeric_limits<double>::infinity();
  }
  if (block.whole) block.add(scratch, opt.keep_paths);
}

/// Per-thread worker of an ensemble (executor.hpp protocol): path p of `range` on the stream of
/// make_source(p), stepped as Fixed (the compile-time-sized counterpart of State on the fixed-size
/// path, else State; see integrate()), so that path p's numbers are integrate()'s for (seed, p).
template <class Stepper, class S, class State, class Fixed, class SourceFactory>
class ensemble_worker {
 public:
  using rebound = stepper_for<Stepper, Fixed>;
  using local_stepper = typename rebound::type;
  using Source = std::invoke_result_t<const SourceFactory&, std::uint64_t>;
  using engine_type = path_integrator<local_stepper, S, Source, null_observer, Fixed, State>;
  using block_type = block_result;

  struct context {
    const Stepper& stepper;
    const S& sde;
    const State& v0;
    const step_grid& grid;
    const integrate_options& resolved;
    const ensemble_options& opt;
    const state_layout& layout;
    const SourceFactory& make_source;
    int k;
  };

  // Per-thread copies (coefficients may keep mutable workspaces).
  explicit ensemble_worker(const context& c)
      : m_c(c), m_sde(c.sde), m_stepper(rebound::make(c.stepper)) {}

  block_result begin_block(const block_info& info) const {
    return start_block(info, m_c.layout, m_c.resolved, m_c.opt);
  }

  void run_path(long long p, block_result& block) {
    Source source = m_c.make_source(static_cast<std::uint64_t>(p));
    validate_source_dimension("run_ensemble", source.dimension(), m_c.k, p);
    engine_type engine(m_stepper, m_sde, source, m_c.resolved, p);
    null_observer obs;
    const basic_path_result<State> r = engine.run(m_c.v0, m_c.grid, obs);
    record_path(p, r, m_c.layout, m_c.opt, block, m_path, m_dynamic);
  }

 private:
  const context& m_c;
  S m_sde;
  local_stepper m_stepper;
  ensemble_path m_path;  ///< reused for whole blocks
  matrix m_dynamic;      ///< the state as a matrix for the functionals (non-matrix states only)
};

/// Per-thread worker of a batched ensemble (batched.hpp): the paths of a block in lane groups of
/// lane_width_of<S>, each lane on its (seed, path) stream, stepped as Fixed by the lane form of
/// Stepper (a LaneScheme stepping Fixed); a run_block worker of the executor. The lowest failing
/// path of a group ends the block with its error (path_failure).
template <class S, class State, class Fixed, class Stepper>
class batched_ensemble_worker {
 public:
  using block_type = block_result;

  struct context {
    const Stepper& stepper;
    const S& sde;
    const State& v0;
    const step_grid& grid;
    const integrate_options& resolved;
    const ensemble_options& opt;
    const state_layout& layout;
    int k;
  };

  explicit batched_ensemble_worker(const context& c)
      : m_c(c), m_v0(c.v0), m_lanes(c.stepper, c.sde, c.resolved, c.opt.seed, c.k) {}

  block_result begin_block(const block_info& info) const {
    return start_block(info, m_c.layout, m_c.resolved, m_c.opt);
  }

  void run_block(const block_info& info, block_result& block) {
    constexpr int W = lane_width_of<S>;
    for (long long g = info.range.first; g < info.range.last; g += W) {
      const int lanes = static_cast<int>(std::min<long long>(W, info.range.last - g));
      lane_failure failure;
      m_lanes.run(g, lanes, m_v0, m_c.grid, m_results, failure);
      if (failure.lane >= 0) throw path_failure{g + failure.lane, failure.error};
      for (int l = 0; l < lanes; ++l)
        record_path(g + l, m_results[static_cast<std::size_t>(l)], m_c.layout, m_c.opt, block,
                    m_path, m_dynamic);
    }
  }

 private:
  const context& m_c;
  Fixed m_v0;
  lane_integrator<S, Fixed, Stepper> m_lanes;
  std::array<basic_path_result<Fixed>, lane_width_of<S>> m_results;
  ensemble_path m_path;
  matrix m_dynamic;
};

/// The device batch of a run on the fixed grid `grid` from V0 (m×m, column-major at v0): what
/// every claim shares (first_path and paths are set per claim; save steps and monitors by the run).
inline device_batch make_device_batch(const device_spec& device, std::uint64_t seed,
                                      const double* v0, int m, const step_grid& grid,
                                      double blowup_threshold, double stop_level) {
  device_batch b;
  b.device = device;
  b.seed = seed;
  b.m = m;
  b.v0.assign(v0, v0 + static_cast<std::ptrdiff_t>(m) * m);
  b.t0 = grid.t0;
  b.t_end = grid.t_end;
  b.dt = grid.dt;
  b.steps = grid.steps;
  b.blowup_threshold = blowup_threshold;
  b.stop_level = stop_level;
  return b;
}

/// The status of a device path that was not handed back.
inline path_status device_path_status(device_outcome outcome) {
  return outcome == device_outcome::blown_up  ? path_status::blown_up
         : outcome == device_outcome::stopped ? path_status::stopped
                                              : path_status::completed;
}

/// Per-thread worker of a run on a device (device.hpp): a run worker of the executor that claims
/// `claim` blocks at once and runs their paths as one device batch (S's device form); a path the
/// device hands back is resumed by the per-path engine of ensemble_worker at its step, on its
/// source (path_integrator::run_from), so that every path is recorded as the CPU would record it.
/// The lowest failing path of a claim ends it with its error (path_failure).
template <class Stepper, class S, class State, class Fixed, class SourceFactory>
class device_ensemble_worker {
  // The per-path worker's stepper and engine resume the paths handed back.
  using per_path = ensemble_worker<Stepper, S, State, Fixed, SourceFactory>;
  using rebound = typename per_path::rebound;
  using local_stepper = typename per_path::local_stepper;
  using Source = typename per_path::Source;
  using engine_type = typename per_path::engine_type;

 public:
  using block_type = block_result;

  struct context {
    typename per_path::context run;  ///< the run, as the per-path workers see it
    device_spec device;
    long long claim;                      ///< blocks per claim
    std::atomic<long long>& handed_back;  ///< paths the CPU resumed
  };

  explicit device_ensemble_worker(const context& c)
      : m_c(c),
        m_run(c.run),
        m_sde(m_run.sde),
        m_stepper(rebound::make(m_run.stepper)),
        m_batch(make_device_batch(c.device, m_run.opt.seed, m_run.v0.data(),
                                  static_cast<int>(m_run.v0.rows()), m_run.grid,
                                  m_run.resolved.blowup_threshold, m_run.resolved.stop_level)) {
    m_batch.save_steps = m_run.grid.save_steps;
  }

  long long blocks_per_claim() const { return m_c.claim; }

  block_result begin_block(const block_info& info) const {
    return start_block(info, m_run.layout, m_run.resolved, m_run.opt);
  }

  void run_blocks(std::span<const block_info> infos, std::span<block_result> blocks) {
    const long long first = infos.front().range.first, last = infos.back().range.last;
    m_batch.first_path = first;
    m_batch.paths = last - first;
    m_sde.run_device_batch(m_batch, m_out);
    const int m = m_batch.m;
    const std::size_t mm = static_cast<std::size_t>(m) * static_cast<std::size_t>(m);
    const std::size_t saves = m_batch.save_steps.size();
    std::size_t b = 0;
    for (long long p = first; p < last; ++p) {
      while (!infos[b].range.contains(p)) ++b;
      const auto q = static_cast<std::size_t>(p - first);
      basic_path_result<State> r;
      r.steps = m_out.steps[q];
      r.saved.resize(static_cast<std::size_t>(m_out.saved[q]));
      for (std::size_t j = 0; j < r.saved.size(); ++j)
        r.saved[j] =
            Eigen::Map<const matrix>(m_out.states_saved.data() + (q * saves + j) * mm, m, m);
      const Eigen::Map<const matrix> v(m_out.states.data() + q * mm, m, m);
      const auto outcome = static_cast<device_outcome>(m_out.outcome[q]);
      if (outcome == device_outcome::handed_back) {
        m_c.handed_back.fetch_add(1);
        try {
          Source source = m_run.make_source(static_cast<std::uint64_t>(p));
          engine_type engine(m_stepper, m_sde, source, m_run.resolved, p);
          null_observer obs;
          const State v_resume = v;
          r = engine.run_from(v_resume, m_out.steps[q], std::move(r), m_run.grid, obs);
        } catch (...) {
          throw path_failure{p, std::current_exception()};
        }
      } else {
        r.status = device_path_status(outcome);
        r.t_stop = m_out.t_stop[q];
        r.v = v;
      }
      record_path(p, r, m_run.layout, m_run.opt, blocks[b], m_path, m_dynamic);
    }
  }

 private:
  const context& m_c;
  const typename per_path::context& m_run;
  S m_sde;
  local_stepper m_stepper;
  device_batch m_batch;
  device_batch_result m_out;
  ensemble_path m_path;
  matrix m_dynamic;
};

/// Why the device engine does not take a run (empty: it does): the SDE, the scheme, the noise
/// source, the step control or the stop condition.
template <class Stepper, class S>
std::string device_refusal(const integrate_options& resolved, bool default_stream, int rows,
                           int cols) {
  if constexpr (!DeviceSde<S>) {
    return "an SDE without a device form (the built-in neural covariance SDEs and the analytic "
           "problems gbm, linear_covariance and wishart have one; models libraries' and Python "
           "SDEs run on the CPU)";
  } else if constexpr (device_form_of<Stepper> == device_scheme::none) {
    return format_message("the scheme '{}' (Euler-Maruyama, em, has a device form)", Stepper::name);
  } else {
    if (!default_stream) return "a noise source other than the (seed, path) streams";
    if (resolved.control != step_control::fixed)
      return format_message("step control '{}' (the device takes fixed steps)",
                            to_string(resolved.control));
    if (resolved.stop_condition)
      return "a stop condition (a function of the state: it runs on the CPU; the stop level "
             "runs on the device)";
    if (rows != cols) return "states that are not square matrices";
    return {};
  }
}

/// The device a run uses: ensemble_options::device resolved (device.hpp).
struct run_device {
  bool on_device = false;  ///< the device engine runs the paths
  device_spec spec;        ///< the device it runs them on (cuda:N or emulated)
  device_report report;
};

/// Resolves `device` for a run; `refusal` is device_refusal's. Throws ncsde::invalid_argument when
/// a device was named for a run it does not take, ncsde::device_error when the device cannot be
/// used ("auto" chooses the CPU instead, and says why in the report).
run_device resolve_run_device(const device_spec& device, const std::string& refusal);

/// Blocks per claim of the device engine on `device`: one for the emulated device (each of the
/// executor's threads claims a block at a time); on a GPU, batches of up to 2^16 paths within
/// 4 GiB at `bytes_per_path`, at least one block.
long long device_claim_blocks(const device_spec& device, long long block_size,
                              double bytes_per_path);

/// The engine of every run_ensemble overload: the paths of `range`; make_source(p) returns path p's
/// NoiseSource.
template <class Stepper, class S, class State, class SourceFactory>
ensemble_partial run_ensemble_impl(const Stepper& stepper, const problem<S, State>& prob,
                                   const integrate_options& iopt, const ensemble_options& opt,
                                   path_range range, const SourceFactory& make_source,
                                   bool default_stream = false) {
  using Source = std::invoke_result_t<const SourceFactory&, std::uint64_t>;
  static_assert(NoiseSource<Source>, "run_ensemble: the source factory must return a NoiseSource");
  validate_options(iopt);
  detail::validate_ensemble_options(opt);
  if (range.first < 0 || range.last < range.first || range.last > opt.paths)
    throw_invalid("run_ensemble",
                  detail::format_message("the path range [{}, {}) must lie in [0, paths = {})",
                                         range.first, range.last, opt.paths));
  integrate_options resolved;
  const State v0 = detail::validate_problem("run_ensemble", prob, iopt,
                                            Stepper::request.needs_iterated_integrals(), resolved);
  // Every path's share of the run's work limit, the same for every path, range and rank.
  const long long share = opt.max_run_steps / opt.paths;
  const bool run_limited = share < resolved.max_path_steps;
  if (run_limited) resolved.max_path_steps = std::max(share, 1LL);
  if constexpr (!BridgedNoiseSource<Source>) {
    if (resolved.policy == pd_policy::refine)
      throw_invalid("run_ensemble", "pd policy 'refine' needs a noise source with a bridge split");
    if (resolved.control != step_control::fixed)
      throw_invalid("run_ensemble", detail::format_message("step control '{}' halves steps by the "
                                                           "Brownian bridge: it needs a noise "
                                                           "source with a bridge split",
                                                           to_string(resolved.control)));
  }
  const state_layout layout = make_state_layout("run_ensemble", "V0", state_space_of<S>, v0);
  detail::validate_functionals(opt, layout);
  const step_grid grid(prob.t0, prob.t_end, iopt.dt, iopt.save_times);
  if (share < 1)
    throw_invalid("run_ensemble",
                  detail::format_message("the work limit max_run_steps = {} is less than one step "
                                         "for each of the {} paths",
                                         opt.max_run_steps, opt.paths));
  detail::check_work("run_ensemble", prob.sde, v0, grid, resolved,
                     run_limited ? detail::format_message("max_run_steps / paths = {} / {}",
                                                          opt.max_run_steps, opt.paths)
                                 : std::string("max_path_steps"));

  ensemble_partial out;
  ensemble_result& run = out.run;
  run.m = static_cast<int>(v0.rows());
  run.layout = layout;
  run.t0 = prob.t0;
  run.t_end = prob.t_end;
  run.dt = iopt.dt;
  run.paths = opt.paths;
  run.seed = opt.seed;
  run.threads = detail::resolve_threads(opt.threads);
  run.scheme = std::string(Stepper::name);
  run.save_times = iopt.save_times;
  run.control = iopt.control;
  run.tolerance = iopt.control == step_control::fixed ? 0.0 : iopt.tolerance;
  out.range = range;
  // Lane groups fill a block where the SDE steps on lanes at this size (batched or not: the block
  // size, and so every output, is the same either way).
  int lane_width = 1;
  if constexpr (BatchedSde<S>)
    if (prefers_lanes(prob.sde, v0.size())) lane_width = lane_width_of<S>;
  out.block_size = opt.block_size > 0
                       ? opt.block_size
                       : std::max(automatic_block_size(layout.size(), opt.paths), lane_width);
  out.functionals = opt.functionals.size();
  out.keep_paths = opt.keep_paths;
  out.covariance = keeps_covariance(opt.covariance, layout.size());

  executor_options xopt;
  xopt.threads = opt.threads;
  xopt.block_size = static_cast<int>(out.block_size);
  xopt.progress = opt.progress;
  xopt.label = std::string(Stepper::name);
  auto reduce = [&](const block_info&, block_result&& b) { out.blocks.push_back(std::move(b)); };
  const run_device device = resolve_run_device(
      opt.device, device_refusal<Stepper, S>(resolved, default_stream, static_cast<int>(v0.rows()),
                                             static_cast<int>(v0.cols())));
  run.device = device.report;
  // A GPU's worker is one host thread (the batch is the GPU's parallelism).
  if (device.on_device && device.spec.kind == device_kind::cuda) xopt.threads = 1;
  visit_state_type<Stepper, S, State>(
      v0.rows(), v0.cols(), [&]<class Fixed>(std::type_identity<Fixed>) {
        // The scheme's lane form steps Fixed states: the stepper rebound to them, as the per-path
        // workers step them.
        using rebound = stepper_for<Stepper, Fixed>;
        using lane_stepper = typename rebound::type;
        using path_worker = ensemble_worker<Stepper, S, State, Fixed, SourceFactory>;
        const typename path_worker::context run_context{
            stepper, prob.sde,    v0,
            grid,    resolved,    opt,
            layout,  make_source, prob.sde.noise_dimension(run.m)};
        if constexpr (DeviceSde<S> && device_form_of<Stepper> != device_scheme::none) {
          if (device.on_device) {
            using worker = device_ensemble_worker<Stepper, S, State, Fixed, SourceFactory>;
            std::atomic<long long> handed_back{0};
            const double bytes_per_path = device_batch_bytes_per_path(
                static_cast<int>(v0.rows()), run_context.k, resolved.save_times.size());
            const typename worker::context c{
                run_context, device.spec,
                device_claim_blocks(device.spec, out.block_size, bytes_per_path), handed_back};
            run.seconds = execute(
                              range, xopt, [&] { return worker(c); }, reduce)
                              .seconds;
            run.device.handed_back = handed_back.load();
            return;
          }
        }
        if constexpr (LaneScheme<lane_stepper, S>) {
          if (default_stream && opt.batched && batched_run_allowed(resolved) &&
              prefers_lanes(prob.sde, v0.size())) {
            const lane_stepper local = rebound::make(stepper);
            if (lane_stepper::template lane_form<S>::applies(local)) {
              using worker = batched_ensemble_worker<S, State, Fixed, lane_stepper>;
              const typename worker::context c{
                  local,    prob.sde, v0,     grid,
                  resolved, opt,      layout, prob.sde.noise_dimension(run.m)};
              run.seconds = execute(
                                range, xopt, [&] { return worker(c); }, reduce)
                                .seconds;
              return;
            }
          }
        }
        run.seconds = execute(
                          range, xopt, [&] { return path_worker(run_context); }, reduce)
                          .seconds;
      });
  return out;
}

}  // namespace detail

/// Runs opt.paths paths of `prob` with copies of `stepper`; path p draws its increments from the
/// counter-based stream (opt.seed, p) (stream_brownian).
template <class Stepper, class S, class State>
  requires Sde<S, State>
ensemble_result run_ensemble(const Stepper& stepper, const problem<S, State>& prob,
                             const integrate_options& iopt, const ensemble_options& opt);

/// The paths [range.first, range.last) of run_ensemble(stepper, prob, iopt, opt) (0 ≤ first ≤ last
/// ≤ opt.paths), as a piece to merge with the others (merge_partials, finish_ensemble).
template <class Stepper, class S, class State>
  requires Sde<S, State>
ensemble_partial run_ensemble_range(const Stepper& stepper, const problem<S, State>& prob,
                                    const integrate_options& iopt, const ensemble_options& opt,
                                    path_range range) {
  const int k = prob.sde.noise_dimension(static_cast<int>(prob.v0.rows()));
  const int area_depth =
      resolved_area_depth(iopt, state_space_of<S>, Stepper::request.needs_iterated_integrals());
  return detail::run_ensemble_impl(
      stepper, prob, iopt, opt, range,
      [&](std::uint64_t p) {
        return stream_brownian(random_stream(opt.seed, p), k, iopt.levy_area, area_depth);
      },
      true);
}

template <class Stepper, class S, class State>
  requires Sde<S, State>
ensemble_result run_ensemble(const Stepper& stepper, const problem<S, State>& prob,
                             const integrate_options& iopt, const ensemble_options& opt) {
  return finish_ensemble(run_ensemble_range(stepper, prob, iopt, opt, path_range{0, opt.paths}),
                         opt);
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
  return finish_ensemble(
      detail::run_ensemble_impl(stepper, prob, iopt, opt, path_range{0, opt.paths}, make_source),
      opt);
}

}  // namespace ncsde
