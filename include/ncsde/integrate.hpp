#pragma once
/// Integrating one path of a matrix SDE on a fixed grid, with the positive-definiteness policy and
/// blow-up detection.
///
/// Grid: t_i = t0 + i·dt (recomputed, never accumulated), i = 0..N−1, and t_N = T exactly; the last step
/// is shorter when dt does not divide T − t0 (N = ⌈(T − t0)/dt⌉, with a relative slack of 1e-9 so that
/// round-off in (T − t0)/dt does not add a sliver step).
///
/// After every step, in this order:
///  1. blow-up: a non-finite state, or max|V^{ab}| > blowup_threshold, stops the path with status
///     blown_up and t_stop = the end of that step (blow-up first: most large-|V| cone exits are the
///     overshoot just before an explosion);
///  2. cone: psd_checker classifies V (psd.hpp); `boundary` (PSD up to round-off) is accepted and
///     counted; `outside` is handled by the pd_policy;
///  3. the user's stop condition (e.g. max_a V^{aa} > K for stopped processes): status stopped.
/// A coefficient that returns a non-finite value at a finite state raises ncsde::evaluation_error
/// naming the coefficient, path, step and time.
///
/// Adaptive steps (integrate_options::control, step_control below): each grid step is the root of a
/// dyadic tree of pieces, the controller picks the depth of each piece before reading it, and the
/// halves of a piece get their increments from its Brownian bridge (BridgedNoiseSource::split, node
/// numbers as a heap: 1 the grid step, 2n and 2n + 1 the halves of piece n). The Brownian path is therefore
/// the same whatever the tolerance or the step sequence (a Brownian tree on the counter-based
/// stream): a tighter tolerance only reads the same path at finer times. The checks above run after
/// every accepted piece, the stop condition too; save times stay grid times.
#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "ncsde/brownian.hpp"
#include "ncsde/concepts.hpp"
#include "ncsde/error.hpp"
#include "ncsde/noise_increment.hpp"
#include "ncsde/psd.hpp"
#include "ncsde/state_space.hpp"
#include "ncsde/stepper.hpp"
#include "ncsde/steppers/detail.hpp"
#include "ncsde/symmetric.hpp"

namespace ncsde {

/// What to do when a step leaves the positive-semidefinite cone (λ_min < −round-off). Policies act
/// only on problems whose SDE declares state_space::psd_cone (state_space.hpp): on every other space
/// there is no cone, nothing is checked or counted, and `throw`, `project` and `refine` are refused
/// with ncsde::invalid_argument (they could do nothing there).
///  - automatic (the default): `count` on every space (the scheme as it is, exits counted);
///  - throw_error: raise ncsde::pd_violation naming path, step, time and smallest eigenvalue;
///  - count: keep the state as is, count it (the pure scheme; what convergence studies use);
///    accepted on every space (off the cone it is the unmodified scheme with nothing to count);
///  - project: clip the eigenvalues to ≥ pd_floor (nearest PSD matrix in Frobenius norm), count it.
///    It changes the law of schemes whose exits are deep (below);
///  - refine: redo the step as two half steps whose increments come from the Brownian bridge of the
///    original one (the path's noise is unchanged), recursively up to refine_depth levels; if the
///    deepest half step still leaves the cone, give up with ncsde::pd_violation. Needs a
///    BridgedNoiseSource.
/// Why `count` by default: it is the only policy that leaves every scheme's law alone. An
/// Euler–Maruyama exit is an O(dt²) artefact in one near-null direction (docs/maths.md §8.2), which
/// a projection removes at that cost; but a Milstein exit near blow-up can be O(|V|) in two or
/// three directions at once, and projecting it puts the path on a face of rank ≤ 1 (all tokens
/// parallel, or V = 0) that the SDE never leaves and where it does not explode: under `project`
/// Milstein reported P(τ ≤ 2) 2.4 times too small (docs/maths.md §8.5). Under `count` the noise
/// map factors an exited state by its clipped eigen-factor (the nearest PSD matrix) and the next
/// steps carry on; every exit is counted. `project` (the earlier default, CHANGELOG) stays available;
/// `refine` is the choice when the path's noise must be kept exactly.
enum class pd_policy { throw_error, count, project, refine, automatic };

std::string_view to_string(pd_policy p);
/// Parses "throw", "count", "project", "refine", "automatic"; throws ncsde::invalid_argument naming
/// `param`.
pd_policy parse_pd_policy(std::string_view text, std::string_view param = "pd-policy");

/// The policy a run applies on `space`: automatic is count (on the cone: exits counted; elsewhere
/// nothing to do); throw, project and refine off the cone throw ncsde::invalid_argument naming `where`.
pd_policy resolve_pd_policy(std::string_view where, state_space space, pd_policy policy);

/// Per-run counters of cone events (sub-steps of refined steps included). Always zero off the cone.
struct pd_counters {
  long long violations = 0;  ///< (sub)steps whose result was outside the cone
  long long projected = 0;   ///< of which were projected
  long long refined = 0;     ///< steps redone as two half steps
  long long boundary = 0;    ///< steps ending PSD only up to round-off (not violations)
  /// Smallest eigenvalue seen among violations (NaN when there were none).
  double min_eigenvalue = std::numeric_limits<double>::quiet_NaN();

  pd_counters& operator+=(const pd_counters& o);
};

/// How a path ended: it reached T (completed), exploded (blown_up: a non-finite state or max|X|
/// above blowup_threshold), met the stop condition (stopped), or used up its work limit
/// (exhausted: max_path_steps steps taken before T, see integrate_options; its state and t_stop
/// are where it was then, and it is neither completed nor blown up: an unknown fate, counted).
enum class path_status { completed, blown_up, stopped, exhausted };
std::string_view to_string(path_status s);

/// How the engine chooses its steps inside each grid step (dt is then the largest step). The
/// adaptive controllers take pieces of the dyadic tree of each grid step, of length dt·2^-d, and
/// choose the depth d of a piece *before* reading its increment, from the state at its start and
/// the steps already taken: a step size that depended on its own Brownian increment (accept when
/// the increment is small, halve when it is large) would select increments, bias the quadratic
/// variation the scheme sees and converge to the wrong law (docs/maths.md §8.4).
///  - fixed: the grid steps themselves (the default; the engine as without adaptivity);
///  - increment: two bounds (max-norms): h·|b(X)| ≤ tolerance·(1 + |X|) at the start of the piece
///    (the drift bound), and a change of the state in the previous step of at most
///    √tolerance·(1 + |X|), which sets the next depth (a change r times the bound refines by
///    ⌈2 log₂ r⌉ halvings, since a noise-driven change scales like √h; a change under a quarter of
///    it coarsens by one). √tolerance is what the drift bound leaves a noise of degree (p + 1)/2
///    near explosion (√h·|X|² with h ∝ tolerance/|X|² for a cubic drift), so the change bound
///    catches noise that grows faster without refining the bulk of a path. A
///    state-dependent step in the spirit of Fang & Giles' adaptive Euler–Maruyama for superlinear
///    drift and of the explosion-resolving steps of Dávila, Fernández Bonder, Rossi, Groisman and
///    Sued (h ∝ |X|^{-(p−1)} for a drift of degree p: |X|^{-2} for a cubic drift), so that the state
///    grows by a bounded factor per step up to the blow-up threshold and explosion times converge;
///  - doubling: error control by step doubling without rejection: a piece is taken as its two half
///    steps, the one-step result is kept only for the estimate max|X_full − X_halves|, and that error
///    relative to tolerance·(1 + max|X|) sets the next depth (⌈log₂ e⌉ halvings for an error e > 1,
///    one coarsening for e < ¼); the drift bound applies too.
/// A piece is never finer than max_depth halvings (dt·2^-max_depth) or below the time resolution of
/// doubles at t; a step that the bounds would have wanted finer is counted as unresolved.
///
/// Work limits (docs/step_control.md). A path takes at most integrate_options::max_path_steps steps:
/// grid steps with fixed steps, accepted pieces with adaptive ones (a doubling piece counts as its
/// two halves). Fixed steps need (T − t0)/dt of them, known before the run: more is refused up
/// front. Adaptive steps are counted as they are taken: a path that reaches the limit before T ends
/// there with path_status::exhausted. Before any path runs, a tolerance below min_tolerance is
/// refused (below it the controllers measure round-off), and so is one for which the drift bound
/// at V0 alone, h·max|b(t0, V0)| ≤ tolerance·(1 + max|V0|), would need more than max_path_steps
/// pieces of that size over [t0, T] (the step it sets at V0, clamped to [dt·2^-max_depth, dt]).
/// An ensemble divides its own limit (ensemble_options::max_run_steps) equally among its paths
/// up front, so the limits never depend on threads, ranks or the order in which paths finish.
enum class step_control { fixed, increment, doubling };

/// The smallest tolerance of the adaptive controllers: their bounds compare a step's change or
/// error with tolerance·(1 + max|X|), and a step's own round-off is some ε·(1 + max|X|) per
/// operation; at 1e-12 (about 4500 ε) a bound would still be met by round-off alone, never below.
inline constexpr double min_tolerance = 1e-12;
/// The default work limits: steps per path (integrate_options::max_path_steps) and per ensemble
/// (ensemble_options::max_run_steps). At 10^6–10^7 steps per second and core, days of CPU time.
inline constexpr long long default_max_path_steps = 1'000'000'000;
inline constexpr long long default_max_run_steps = 1'000'000'000'000;

std::string_view to_string(step_control c);
/// Parses "fixed", "increment", "doubling"; throws ncsde::invalid_argument naming `param`.
step_control parse_step_control(std::string_view text, std::string_view param = "step-control");

/// One step controller as the registry lists it (step_controls()).
struct step_control_descriptor {
  step_control kind;
  std::string_view name;
  std::string_view description;
};
/// The step controllers, in the order of the enum.
const std::array<step_control_descriptor, 3>& step_controls();

/// Per-path counters of the step controller (all zero but `steps` with fixed steps).
struct step_stats {
  long long refinements = 0;  ///< halvings the controller made (depth increases)
  long long unresolved = 0;   ///< pieces taken at the depth or time-resolution limit
  int deepest = 0;            ///< largest number of halvings of an accepted piece

  step_stats& operator+=(const step_stats& o);
};

/// An SDE with its initial state and horizon: dX = b dt + G dW on [t0, t_end], X(t0) = v0. The state
/// type is the SDE's state_type when it declares one, ncsde::matrix otherwise; any plain Eigen
/// vector or matrix of doubles may be named explicitly (problem<S, Eigen::VectorXd>) or deduced
/// from v0 (problem{sde, x0, T}).
template <class S, class State = default_state_t<S>>
struct problem {
  S sde;
  State v0;
  double t_end = 1.0;
  double t0 = 0.0;
};
template <class S, class Derived>
problem(S, const Eigen::MatrixBase<Derived>&, double) -> problem<S, typename Derived::PlainObject>;
template <class S, class Derived>
problem(S, const Eigen::MatrixBase<Derived>&, double, double)
    -> problem<S, typename Derived::PlainObject>;

struct integrate_options {
  double dt = 1e-3;
  pd_policy policy = pd_policy::automatic;  ///< cone policy (cone problems only; see pd_policy)
  double pd_floor = 0.0;                    ///< eigenvalue floor of `project` (≥ 0)
  int refine_depth = 8;                     ///< maximal halvings of `refine` (dt / 2^depth), 1..30
  double blowup_threshold = 1e6;  ///< max|X^{ab}| above which a path has blown up, (0, 1e100]
  std::vector<double>
      save_times;  ///< grid times at which to keep the state (ascending, in [t0, T])
  /// Optional stopping rule checked on the grid: stop the path (status stopped) when it returns true.
  /// It sees the state as an ncsde::matrix (d×1 for a vector state).
  std::function<bool(const matrix& v, double t)> stop_condition;
  /// The stopped process at a level K (docs/maths.md §8.1), for square matrix states: stop the path
  /// (status stopped) where the stop condition is checked, as soon as max_a X^{aa} > K
  /// (step_rules::passes_stop_level; the device engine runs the same rule, which it cannot do
  /// with a stop_condition). +inf (the default): never; otherwise > 0.
  double stop_level = std::numeric_limits<double>::infinity();
  levy_area_method levy_area = levy_area_method::wiktorsson;
  /// Chen-consistent Lévy areas down to this many halvings of a grid step, in the library's own
  /// noise source (stream_brownian's area_depth, 0..16), for schemes that read Lévy areas: a piece
  /// split after its areas were used then gets halves whose areas combine to the parent's, so that
  /// the refine policy's halves remember why they were split and an adaptive run's pieces carry
  /// the areas of the path a finer run sees. It costs a tree of 2^area_depth leaves per grid step.
  /// −1 (automatic): refine_depth under the refine policy with fixed steps, 0 otherwise (each
  /// piece's areas drawn given its own increment: right in law whenever no used piece is split,
  /// as with the adaptive controllers; docs/maths.md §8.4).
  int area_depth = -1;
  step_control control = step_control::fixed;  ///< adaptive steps inside each grid step (see above)
  /// Of the increment and doubling controllers, [min_tolerance, 1]; checked with fixed steps too.
  double tolerance = 0.05;
  /// Maximal halvings of a grid step by the controller, 1..50; checked with fixed steps too.
  int max_depth = 40;
  /// The most steps this path may take, ≥ 1 (work limits, see step_control): fixed-step grids
  /// longer than this are refused, adaptive paths that reach it end as path_status::exhausted.
  long long max_path_steps = default_max_path_steps;
};

/// One path's outcome; State is the problem's state type.
template <class State = matrix>
struct basic_path_result {
  path_status status = path_status::completed;
  /// T when completed; the time of the step that blew up or stopped; when exhausted, the end of
  /// the last step the path could take
  double t_stop = 0.0;
  long long steps = 0;  ///< steps taken (grid steps; accepted pieces with adaptive steps)
  State v;              ///< state at t_stop
  pd_counters pd;
  step_stats stepping;  ///< the step controller's counters
  std::vector<State>
      saved;  ///< state at save_times[0 .. saved.size()) (fewer if the path stopped early)
};
using path_result = basic_path_result<matrix>;

/// The step grid: number of steps and the index of each save time. Validates dt, T and save times
/// (ncsde::invalid_argument naming the parameter).
struct step_grid {
  double t0 = 0.0, t_end = 0.0, dt = 0.0;
  long long steps = 0;
  std::vector<long long> save_steps;  ///< grid index of each save time

  step_grid(double t0, double t_end, double dt, const std::vector<double>& save_times = {});
  double time(long long i) const { return i >= steps ? t_end : t0 + static_cast<double>(i) * dt; }
  double step_size(long long i) const { return time(i + 1) - time(i); }
};

/// Validates options that do not depend on the problem (policy parameters, threshold).
void validate_options(const integrate_options& options);

/// The step controllers' parameters: tolerance in [min_tolerance, 1] and max_depth in [1, 50],
/// checked with fixed steps too (a value the run would ignore is a mistake, not a no-op). Throws
/// ncsde::invalid_argument naming `where` and the parameter as the caller names it
/// (validate_options: "tolerance", "max_depth"; the program: its flags).
void validate_step_control(std::string_view where, double tolerance,
                           std::string_view tolerance_name, int max_depth,
                           std::string_view max_depth_name);

/// The area depth of a run's own stream_brownian: opt.area_depth, or for −1 refine_depth when the
/// scheme reads Lévy areas (reads_areas) under the refine policy on the cone with fixed steps, and
/// 0 otherwise.
int resolved_area_depth(const integrate_options& opt, state_space space, bool reads_areas);

/// The largest noise dimension k a problem may declare: one increment holds k doubles, and schemes
/// with iterated integrals a k×k matrix (max_iterated_noise_dimension).
inline constexpr int max_noise_dimension = 1 << 24;
inline constexpr int max_iterated_noise_dimension = 4096;

namespace detail {

/// The observer that ignores its calls (and is never called).
struct null_observer {
  void operator()(const matrix&, double) const {}
};

/// Checks k = noise_dimension against [1, max_noise_dimension] (and max_iterated_noise_dimension when
/// the scheme needs iterated integrals); ncsde::invalid_argument naming `where`.
void validate_noise_dimension(std::string_view where, long long k, bool iterated);

/// Checks a noise source's dimension against the SDE's k; ncsde::invalid_argument naming `where`.
void validate_source_dimension(std::string_view where, long long source_k, int k,
                               long long path_index);

/// The errors a step reports, one text each for the per-path engine (path_integrator) and the
/// batched one (batched.hpp), so that a path fails with the same message either way.
/// A coefficient (`which`: drift, noise map, …) returned `what` at the step from t of `path`.
inline evaluation_error coefficient_error(std::string_view which, std::string_view what,
                                          long long path, long long step, double t, double max_v) {
  return evaluation_error(
      format_message("integrate: the {} returned {} at path {}, step {}, t = {} (max |V| = {:.6g})",
                     which, what, path, step, t, max_v));
}
/// The step's result was not symmetric beyond round-off on a symmetric or cone space.
inline evaluation_error asymmetry_error(long long path, long long step, double t, double asymmetry,
                                        double tolerance, state_space space) {
  return evaluation_error(format_message(
      "integrate: the drift or noise map returned a non-symmetric matrix at path {}, step "
      "{}, "
      "t = {} (max |X - X^T| of the step = {:.3g}, above the round-off tolerance {:.3g}) on "
      "the {} state space; coefficients there must be symmetric (declare "
      "state_space::euclidean for a general matrix state)",
      path, step, t, asymmetry, tolerance, to_string(space)));
}
/// The step ending at t_end left the cone under the `throw` policy.
inline pd_violation cone_exit_error(long long path, long long step, double t_end, double min_eig) {
  return pd_violation(format_message("integrate: path {} left the positive-semidefinite cone at "
                                     "step {}, t = {} (smallest eigenvalue {:.6g})",
                                     path, step, t_end, min_eig),
                      path, step, t_end, min_eig);
}

/// The one settle: the rule that decides a trial step's fate from its measurements, for the
/// per-path engine (path_integrator::settle, a trial of width 1) and for the batched engine
/// (batched.hpp, lane by lane), so that a path ends, counts and fails the same way in both. In
/// this order:
///  1. settle_measured: blow-up (a non-finite trial, or max |X| above blowup_threshold: the path
///     stops as blown_up), then on symmetric spaces the asymmetry the symmetrisation removed
///     (more than round-off: the coefficients are not symmetric, and symmetrising would change
///     the problem's answer without a word, so asymmetry_error);
///  2. on the cone only, settle_cone: the checker's verdict on the trial (psd.hpp) and the
///     pd_policy: boundary counted and accepted; outside counted, then kept (count), projected
///     (project), cone_exit_error (throw), or handed back as cone_fate::refine, which only the
///     per-path engine takes (it redoes the step as two halves).
/// settles_unchanged is the same rule asked of a whole group at once: true exactly when settle
/// accepts the trial as it is and changes no counter.

/// What settle reads of a trial state X: whether it is finite, max |X| (exact when finite), and on
/// symmetric spaces max |X − Xᵀ| before symmetrisation (symmetrize_measured; 0 elsewhere).
struct trial_measurements {
  bool finite = true;
  double size = 0.0;
  double asymmetry = 0.0;
};

/// Where a trial step was taken, for the messages: the path, the grid step, the step [t, t + h].
struct step_site {
  long long path = 0;
  long long grid_step = 0;
  double t = 0.0;
  double h = 0.0;
};

/// The round-off a symmetrisation may remove from a trial of max |X| = size.
inline double asymmetry_tolerance(double size) {
  return step_rules::asymmetry_tolerance(size, symmetry_tolerance);
}

/// The trial has blown up: not finite, or max |X| not within the threshold (the negated form also
/// takes a NaN size).
inline bool blows_up(const trial_measurements& x, const integrate_options& opt) {
  return step_rules::blows_up(x.finite, x.size, opt.blowup_threshold);
}

/// The asymmetry the symmetrisation removed is more than round-off.
inline bool beyond_round_off(const trial_measurements& x) {
  return step_rules::beyond_round_off(x.asymmetry, x.size, symmetry_tolerance);
}

/// Step 1 of settle on `Space`: true when the trial has blown up; throws asymmetry_error (an
/// ncsde::evaluation_error) when it is asymmetric beyond round-off on a symmetric space.
template <state_space Space>
bool settle_measured(const trial_measurements& x, const integrate_options& opt,
                     const step_site& at) {
  if (blows_up(x, opt)) return true;
  if constexpr (is_symmetric_space(Space)) {
    if (beyond_round_off(x))
      throw asymmetry_error(at.path, at.grid_step, at.t, x.asymmetry, asymmetry_tolerance(x.size),
                            Space);
  }
  return false;
}

/// What settle_cone decided: the trial (projected or not) is the new state, or the step is to be
/// refined (pd_policy::refine, which settle_cone leaves to the per-path engine).
enum class cone_fate { accepted, refine };

/// Step 2 of settle, on the cone: counts the checker's verdict `pr` on the trial into `pd` and
/// applies opt.policy; project() projects the trial (pd_policy::project). Throws cone_exit_error
/// (ncsde::pd_violation) under pd_policy::throw_error.
template <class Project>
cone_fate settle_cone(const psd_result& pr, const integrate_options& opt, pd_counters& pd,
                      const step_site& at, Project&& project) {
  if (pr.status == psd_status::boundary) ++pd.boundary;
  if (pr.status != psd_status::outside) return cone_fate::accepted;
  ++pd.violations;
  if (!(pd.min_eigenvalue <= pr.min_eigenvalue)) pd.min_eigenvalue = pr.min_eigenvalue;
  switch (opt.policy) {
    case pd_policy::automatic:  // resolved to count
    case pd_policy::count:
      return cone_fate::accepted;
    case pd_policy::project:
      project();
      ++pd.projected;
      return cone_fate::accepted;
    case pd_policy::throw_error:
      throw cone_exit_error(at.path, at.grid_step, at.t + at.h, pr.min_eigenvalue);
    case pd_policy::refine:
      break;
  }
  return cone_fate::refine;
}

/// settle accepts the trial as it is and changes no counter: no blow-up, symmetric within
/// round-off, and on the cone positive definite (`positive_definite`: the checker would say so).
template <state_space Space>
bool settles_unchanged(const trial_measurements& x, bool positive_definite,
                       const integrate_options& opt) {
  if (blows_up(x, opt)) return false;
  if constexpr (is_symmetric_space(Space))
    if (beyond_round_off(x)) return false;
  if constexpr (Space == state_space::psd_cone) return positive_definite;
  (void)positive_definite;
  return true;
}

/// Integrates one path: the engine behind integrate() and ensembles. `Source` is a NoiseSource
/// (brownian.hpp). The state is stepped as a `State` (the problem's state type `Public`, or its
/// compile-time-sized counterpart on the fixed-size path; Stepper must step that type); the result
/// is a basic_path_result<Public>, while the observer and the stop condition see the state as an
/// ncsde::matrix. What happens after each step depends on the SDE's state space (state_space.hpp):
/// symmetrisation on symmetric and cone spaces, the cone check and `policy` (already resolved by
/// resolve_pd_policy) on the cone only. Every workspace is a member, so after the first step (and
/// the first split at each refinement depth) a step allocates nothing here; the observer and the
/// stop condition see a dynamic copy kept in a member.
template <class Stepper, class S, class Source, class Observer, class State = matrix,
          class Public = State>
class path_integrator {
  static_assert(ncsde::Stepper<Stepper>,
                "integrate: the stepper must declare what it is (the ncsde::Stepper concept, "
                "ncsde/stepper.hpp)");
  static_assert(!Stepper::request.bridge_splits || BridgedNoiseSource<Source>,
                "integrate: this scheme splits steps by the Brownian bridge: the noise source must "
                "be a BridgedNoiseSource (brownian.hpp)");

 public:
  static constexpr state_space space = state_space_of<S>;
  /// The increments carry iterated integrals: the scheme's noise request says so.
  static constexpr bool with_iterated = Stepper::request.needs_iterated_integrals();

  path_integrator(Stepper& stepper, const S& sde, Source& source, const integrate_options& opt,
                  long long path_index)
      : m_stepper(stepper),
        m_sde(sde),
        m_source(source),
        m_opt(opt),
        m_path(path_index),
        m_halves(space == state_space::psd_cone
                     ? static_cast<std::size_t>(std::max(opt.refine_depth, 0))
                     : 0),
        m_tree(opt.control == step_control::fixed ? 0 : static_cast<std::size_t>(opt.max_depth)) {}

  basic_path_result<Public> run(const Public& v0, const step_grid& grid, Observer& observer) {
    return run_from(v0, 0, basic_path_result<Public>{}, grid, observer);
  }

  /// Continues a path at grid step `first` from its state v there (fixed steps; `first` = 0 is
  /// run()): r is what the steps before produced (steps taken, states at the save times up to step
  /// `first`, counters), as another engine that ran them left it (the device engine, device.hpp,
  /// hands a path back so). The steps from `first` on are run()'s, so a path resumed at step i from
  /// run()'s V_i and result is run()'s path.
  basic_path_result<Public> run_from(const Public& v, long long first, basic_path_result<Public> r,
                                     const step_grid& grid, Observer& observer) {
    NCSDE_ASSERT(first == 0 || m_opt.control == step_control::fixed,
                 "path_integrator::run_from: a path resumes on fixed steps only");
    m_v = v;
    std::size_t next_save = r.saved.size();
    auto save_due = [&](long long i) {
      while (next_save < grid.save_steps.size() && grid.save_steps[next_save] == i) {
        r.saved.emplace_back(m_v);
        ++next_save;
      }
    };
    auto finish = [&](path_status st) {
      r.status = st;
      r.v = m_v;
    };
    if (first == 0) {
      save_due(0);
      observe(observer, grid.t0);
    }
    r.t_stop = first == 0 ? grid.t0 : grid.time(first);
    for (long long i = first; i < grid.steps; ++i) {
      const double t = grid.time(i);
      const double h = grid.step_size(i);
      m_source.increment(static_cast<std::uint64_t>(i), h, with_iterated, m_inc);
      if (m_opt.control != step_control::fixed) {
        // The stop condition is checked after every accepted piece, by adaptive().
        const path_status st = adaptive(r, t, grid.time(i + 1), static_cast<std::uint64_t>(i), i);
        r.t_stop = grid.time(i + 1);
        if (st != path_status::completed) {
          // Stopped or exhausted: m_stop_time is the end of the last piece taken.
          r.t_stop = st == path_status::blown_up ? m_blowup_time : m_stop_time;
          finish(st);
          return r;
        }
        save_due(i + 1);
        observe(observer, r.t_stop);
        continue;
      }
      const path_status st = advance(r, t, m_inc, static_cast<std::uint64_t>(i), 1, 0, i);
      r.steps = i + 1;
      r.t_stop = grid.time(i + 1);
      if (st != path_status::completed) {
        if (st == path_status::blown_up) r.t_stop = m_blowup_time;
        finish(st);
        return r;
      }
      if (stop_due(r.t_stop)) {
        finish(path_status::stopped);
        return r;
      }
      save_due(i + 1);
      observe(observer, r.t_stop);
    }
    finish(path_status::completed);
    return r;
  }

 private:
  /// The current state as an ncsde::matrix (a copy into a reused member unless State is one).
  const matrix& dynamic_state() {
    if constexpr (std::is_same_v<State, matrix>) {
      return m_v;
    } else {
      m_dynamic = m_v;
      return m_dynamic;
    }
  }

  /// The stop condition, then the stop level, on the current state at t. The level is tested on
  /// the problem's state type (Public): a 1×1 matrix is stepped as the fixed-size 1×1 type, which
  /// Eigen counts as a vector too; vector problems are refused a stop level up front.
  bool stop_due(double t) {
    if (m_opt.stop_condition && m_opt.stop_condition(dynamic_state(), t)) return true;
    if constexpr (!Public::IsVectorAtCompileTime)
      if (m_opt.stop_level < std::numeric_limits<double>::infinity())
        return step_rules::passes_stop_level(m_v.data(), static_cast<int>(m_v.rows()),
                                             m_opt.stop_level);
    return false;
  }

  void observe(Observer& observer, double t) {
    if constexpr (!std::is_same_v<Observer, null_observer>) observer(dynamic_state(), t);
  }

  /// One (sub)step from m_v at time t with increment inc; applies the space's rules and policies.
  path_status advance(basic_path_result<Public>& r, double t, const noise_increment& inc,
                      std::uint64_t step, std::uint64_t node, int depth, long long grid_step) {
    m_trial = m_v;
    try {
      m_stepper.do_step(m_sde, m_trial, t, inc);
    } catch (const non_finite_coefficient& e) {
      throw coefficient_error(e.which, e.what, m_path, grid_step, t, m_v.cwiseAbs().maxCoeff());
    }
    return settle(r, t, inc, step, node, depth, grid_step);
  }

  /// One step from `from` at t with `inc` into `to`, for the doubling controller's full step: false
  /// when a coefficient returned a non-finite value (the halves, taken by advance(), report it).
  bool trial(const State& from, State& to, double t, const noise_increment& inc) {
    to = from;
    try {
      m_stepper.do_step(m_sde, to, t, inc);
    } catch (const non_finite_coefficient&) {
      return false;
    }
    return true;
  }

  /// The controllers' measure of a step from `from` to `to`: max|to − comparison| / (tolerance ·
  /// (1 + max|from|)); +inf when not finite.
  double scaled_change(const State& from, const State& to, const State& comparison) const {
    const double change = (to - comparison).cwiseAbs().maxCoeff();
    const double scale = m_opt.tolerance * (1.0 + from.cwiseAbs().maxCoeff());
    const double ratio = change / scale;
    return std::isfinite(ratio) ? ratio : std::numeric_limits<double>::infinity();
  }

  /// Grid step `step` over [t0, t1] (increment m_inc) as a walk through the dyadic tree of its
  /// pieces, under the step controller (see step_control). The depth of each piece is chosen before
  /// its increment is read — from the state at its start (the drift bound) and from the steps
  /// already taken (their measured change or error) — so the choice never depends on the piece's
  /// own Brownian increment: the steps are predictable and select no increments.
  path_status adaptive(basic_path_result<Public>& r, double t0, double t1, std::uint64_t step,
                       long long grid_step) {
    if constexpr (!BridgedNoiseSource<Source>) {
      throw invalid_argument(
          "integrate: adaptive steps need a noise source with a bridge split (BridgedNoiseSource)");
    } else {
      for (level& l : m_tree) l.valid = false;
      const bool doubling = m_opt.control == step_control::doubling;
      // Doubling takes a piece at depth d as its two halves at depth d + 1.
      const int deepest = doubling ? m_opt.max_depth - 1 : m_opt.max_depth;
      const double span = t1 - t0;
      int d = std::min(m_depth, deepest);
      std::uint64_t j = 0;  // index of the current piece among the 2^d of depth d
      for (;;) {
        const double ta = piece_time(t0, t1, d, j);
        // The drift bound: h·max|b(V)| ≤ tolerance·(1 + max|V|), from the state at the start.
        const double bound = drift_bound(ta);
        while (d < deepest && std::ldexp(span, -d) > bound && resolvable(t0, span, d + 1)) {
          ++d;
          j <<= 1;
          ++r.stepping.refinements;
        }
        const bool limited = std::ldexp(span, -d) > bound;
        // The work limit: the piece (two halves under doubling) must fit in what is left.
        if (m_opt.max_path_steps - r.steps < (doubling ? 2 : 1)) {
          m_stop_time = ta;
          return path_status::exhausted;
        }
        const double tb = piece_time(t0, t1, d, j + 1);
        const noise_increment& inc = piece(step, d, j);
        const std::uint64_t node = (std::uint64_t{1} << d) + j;
        m_start = m_v;
        double measure = 0.0;
        path_status st;
        if (!doubling) {
          st = take(r, ta, tb, inc, step, node, d, grid_step);
          if (st != path_status::completed) return st;
          // The change bound is √tolerance·(1 + max|V|): what the drift bound leaves to a noise of
          // half the drift's degree plus one half (noise ∝ |V|^{(p+1)/2}) near explosion.
          measure = scaled_change(m_start, m_v, m_start) * std::sqrt(m_opt.tolerance);
        } else {
          // The full step (for the estimate only), then the two halves, which are taken.
          const bool full_ok = trial(m_start, m_full, ta, inc);
          const double tm = piece_time(t0, t1, d + 1, 2 * j + 1);
          const noise_increment& left = piece(step, d + 1, 2 * j);
          st = take(r, ta, tm, left, step, 2 * node, d + 1, grid_step);
          if (st != path_status::completed) return st;
          const noise_increment& right = piece(step, d + 1, 2 * j + 1);
          st = take(r, tm, tb, right, step, 2 * node + 1, d + 1, grid_step);
          if (st != path_status::completed) return st;
          measure = full_ok ? scaled_change(m_start, m_full, m_v)
                            : std::numeric_limits<double>::infinity();
        }
        if (limited || (measure > 1.0 && (d >= deepest || !resolvable(t0, span, d + 1))))
          ++r.stepping.unresolved;
        ++j;
        if (j == (std::uint64_t{1} << d)) break;
        // The next piece's depth from this step's measure: finer when it exceeded the tolerance
        // (the change of a noise-driven step scales like √h, a local error like h), coarser by one
        // when it was well inside and the next piece starts a piece of the coarser depth.
        if (measure > 1.0) {
          const double halvings =
              std::ceil((doubling ? 1.0 : 2.0) * std::log2(std::min(measure, 1e6)));
          int nd = d + static_cast<int>(std::clamp(halvings, 1.0, 8.0));
          nd = std::min(nd, deepest);
          while (nd > d && !resolvable(t0, span, nd)) --nd;
          if (nd > d) {
            r.stepping.refinements += nd - d;
            j <<= (nd - d);
            d = nd;
          }
        } else if (measure < 0.25 && d > 0 && (j & 1) == 0) {
          --d;
          j >>= 1;
        }
      }
      m_depth = d;
      return path_status::completed;
    }
  }

  /// The start of piece j of depth d of [t0, t1] (t1 itself for j = 2^d).
  static double piece_time(double t0, double t1, int d, std::uint64_t j) {
    if (j == (std::uint64_t{1} << d)) return t1;
    return t0 + std::ldexp((t1 - t0) * static_cast<double>(j), -d);
  }

  /// Pieces of depth d are still distinct times of doubles at this grid step.
  static bool resolvable(double t0, double span, int d) {
    return std::ldexp(span, -d) >
           16.0 * std::numeric_limits<double>::epsilon() * (std::abs(t0) + std::abs(span));
  }

  /// tolerance·(1 + max|V|) / max|b(t, V)| at the current state (+inf for a zero or non-finite
  /// drift, which the step itself then reports).
  double drift_bound(double t) {
    m_drift.resizeLike(m_v);
    m_sde.drift(m_v, m_drift, t);
    const double b = m_drift.cwiseAbs().maxCoeff();
    const double bound = m_opt.tolerance * (1.0 + m_v.cwiseAbs().maxCoeff()) / b;
    return std::isfinite(bound) && bound > 0 ? bound : std::numeric_limits<double>::infinity();
  }

  /// The increment of piece `index` of depth `depth` of grid step `step` (m_inc at depth 0), split
  /// from its parent by the bridge (heap node 2^(depth−1) + index/2) unless kept from before.
  const noise_increment& piece(std::uint64_t step, int depth, std::uint64_t index) {
    if (depth == 0) return m_inc;
    level& l = m_tree[static_cast<std::size_t>(depth - 1)];
    const std::uint64_t parent = index >> 1;
    if (!l.valid || l.parent != parent) {
      const noise_increment& p = piece(step, depth - 1, parent);
      m_source.split(p, step, (std::uint64_t{1} << (depth - 1)) + parent, with_iterated, l.left,
                     l.right);
      l.valid = true;
      l.parent = parent;
    }
    return (index & 1) != 0 ? l.right : l.left;
  }

  /// Takes `inc` over [t, t_end] from m_v as one piece (heap node `node` at `depth`), then checks
  /// the stop condition at t_end.
  path_status take(basic_path_result<Public>& r, double t, double t_end, const noise_increment& inc,
                   std::uint64_t step, std::uint64_t node, int depth, long long grid_step) {
    const path_status st = advance(r, t, inc, step, node, 0, grid_step);
    ++r.steps;
    r.stepping.deepest = std::max(r.stepping.deepest, depth);
    if (st != path_status::completed) return st;
    if (stop_due(t_end)) {
      m_stop_time = t_end;
      return path_status::stopped;
    }
    return path_status::completed;
  }

  /// The checks after a step whose result is m_trial (the one settle above, as a trial of width
  /// 1); on success m_v is the new state.
  path_status settle(basic_path_result<Public>& r, double t, const noise_increment& inc,
                     std::uint64_t step, std::uint64_t node, int depth, long long grid_step) {
    // Symmetric by construction on symmetric spaces: make round-off asymmetry exact, and measure it.
    trial_measurements x;
    if constexpr (is_symmetric_space(space)) x.asymmetry = symmetrize_measured(m_trial);
    x.size = m_trial.cwiseAbs().maxCoeff();
    x.finite = detail::all_finite(m_trial);
    if (settle_measured<space>(x, m_opt, step_site{m_path, grid_step, t, inc.dt})) {
      m_v = m_trial;
      m_blowup_time = t + inc.dt;
      return path_status::blown_up;
    }
    if constexpr (space != state_space::psd_cone) {
      m_v = m_trial;
      return path_status::completed;
    } else {
      return check_cone(r, t, inc, step, node, depth, grid_step);
    }
  }

  path_status check_cone(basic_path_result<Public>& r, double t, const noise_increment& inc,
                         std::uint64_t step, std::uint64_t node, int depth, long long grid_step) {
    const psd_result pr = m_checker.check(m_trial);
    const cone_fate fate = settle_cone(pr, m_opt, r.pd, step_site{m_path, grid_step, t, inc.dt},
                                       [&] { m_checker.project(m_trial, m_opt.pd_floor); });
    if (fate == cone_fate::accepted) {
      m_v = m_trial;
      // The check's Cholesky factor of the new state is the one the SDE's next noise map needs.
      if constexpr (SdeWithCholeskyHint<S, State>)
        if (pr.status == psd_status::positive_definite)
          m_sde.use_cholesky(m_v, m_checker.cholesky_factor());
      return path_status::completed;
    }
    if (depth >= m_opt.refine_depth)
      throw pd_violation(
          detail::format_message(
              "integrate: path {} left the positive-semidefinite cone at step {}, t = {} "
              "(smallest eigenvalue {:.6g}) even after refining the step {} times (dt = {:.3g})",
              m_path, grid_step, t + inc.dt, pr.min_eigenvalue, depth, inc.dt),
          m_path, grid_step, t + inc.dt, pr.min_eigenvalue);
    if constexpr (!BridgedNoiseSource<Source>) {
      throw invalid_argument(
          "integrate: pd policy 'refine' needs a noise source with a bridge split");
    } else {
      ++r.pd.refined;
      // The halves of depth d live while depth d + 1 runs: one reused pair per depth (depth <
      // refine_depth here), allocated with the engine so that references to them stay valid.
      noise_increment& left = m_halves[depth].first;
      noise_increment& right = m_halves[depth].second;
      m_source.split(inc, step, node, with_iterated, left, right);
      const path_status first = advance(r, t, left, step, 2 * node, depth + 1, grid_step);
      if (first != path_status::completed) return first;
      return advance(r, t + left.dt, right, step, 2 * node + 1, depth + 1, grid_step);
    }
  }

  Stepper& m_stepper;
  const S& m_sde;
  Source& m_source;
  const integrate_options& m_opt;
  long long m_path;
  noise_increment m_inc;
  std::vector<std::pair<noise_increment, noise_increment>> m_halves;  ///< [depth] = (left, right)
  /// The step controller's pieces: m_tree[d − 1] holds the two children (depth d) of piece
  /// `parent` of depth d − 1 of the current grid step (adaptive steps only).
  struct level {
    noise_increment left, right;
    std::uint64_t parent = 0;
    bool valid = false;
  };
  std::vector<level> m_tree;
  State m_v, m_trial;
  State m_start, m_full, m_drift;  ///< the controllers' workspaces
  int m_depth = 0;  ///< the controller's depth, carried from one grid step to the next
  double m_stop_time = 0.0;
  matrix m_dynamic;
  std::conditional_t<space == state_space::psd_cone, basic_psd_checker<State>, std::monostate>
      m_checker;
  double m_blowup_time = 0.0;
};

/// Stepper can step states of type State: it declares rebind_state<State>, default-constructible.
template <class Stepper, class State>
concept rebindable_stepper = requires {
  typename Stepper::template rebind_state<State>;
} && std::default_initializable<typename Stepper::template rebind_state<State>>;

/// The stepper that steps State: Stepper itself (copied) when it steps State already, else its
/// rebound scheme, converted from Stepper when it offers that (so that options carry over),
/// default-constructed otherwise.
template <class Stepper, class State>
struct stepper_for {
  static constexpr bool rebinds =
      rebindable_stepper<Stepper, State> &&
      !std::is_same_v<typename Stepper::template rebind_state<State>, Stepper>;
  using type = std::conditional_t<rebinds, typename Stepper::template rebind_state<State>, Stepper>;
  static type make(const Stepper& s) {
    if constexpr (!rebinds || std::is_constructible_v<type, const Stepper&>)
      return type(s);
    else
      return type{};
  }
};

/// State can be stepped: the problem is an Sde on State and the stepper steps or rebinds to it.
template <class State, class Stepper, class S>
inline constexpr bool has_state_path =
    Sde<S, State> && (rebindable_stepper<Stepper, State> ||
                      requires(Stepper& st, const S& s, State& v, const noise_increment& inc) {
                        st.do_step(s, v, 0.0, inc);
                      });

/// The square fixed-size path is available for m = M: M is a fixed size of the covariance models
/// (is_fixed_size) or the scalar M = 1, the stepper rebinds to square_matrix<M> and the problem
/// accepts square_matrix<M> states.
template <int M, class Stepper, class S>
inline constexpr bool has_fixed_path =
    (is_fixed_size<M> || M == 1) && rebindable_stepper<Stepper, square_matrix<M>> &&
    Sde<S, square_matrix<M>>;

/// visit_state_type's search of the sizes Ms... (fixed_sizes, fixed_vector_sizes) for n: f on
/// Fixed<M> for the M equal to n where has_state_path holds, else f on Public.
template <class Stepper, class S, class Public, template <int> class Fixed, int M, int... Ms,
          class F>
decltype(auto) visit_fixed_sizes(Eigen::Index n, F& f) {
  if constexpr (has_state_path<Fixed<M>, Stepper, S>)
    if (n == M) return f(std::type_identity<Fixed<M>>{});
  if constexpr (sizeof...(Ms) == 0)
    return f(std::type_identity<Public>{});
  else
    return visit_fixed_sizes<Stepper, S, Public, Fixed, Ms...>(n, f);
}

template <class Stepper, class S, class Public, template <int> class Fixed, class F, int... Ms>
decltype(auto) visit_fixed_sizes(Eigen::Index n, F& f, std::integer_sequence<int, Ms...>) {
  return visit_fixed_sizes<Stepper, S, Public, Fixed, Ms...>(n, f);
}

/// Calls f(std::type_identity<State>{}) with State the compile-time-sized counterpart of the
/// problem's state type Public where one exists and has_state_path holds for it, else with Public,
/// and returns what f returns. The fixed sizes: square ncsde::matrix states of m = 1 and m in
/// fixed_sizes (square_matrix<m>; is_fixed_size), ncsde::vector states of d in fixed_vector_sizes
/// (column_vector<d>).
template <class Stepper, class S, class Public, class F>
decltype(auto) visit_state_type(Eigen::Index rows, Eigen::Index cols, F&& f) {
  if constexpr (std::is_same_v<Public, matrix>) {
    if (rows == cols) {
      if constexpr (has_state_path<square_matrix<1>, Stepper, S>)
        if (rows == 1) return f(std::type_identity<square_matrix<1>>{});
      return visit_fixed_sizes<Stepper, S, Public, square_matrix>(rows, f, fixed_sizes{});
    }
  } else if constexpr (std::is_same_v<Public, vector>) {
    return visit_fixed_sizes<Stepper, S, Public, column_vector>(rows, f, fixed_vector_sizes{});
  }
  (void)cols;
  return f(std::type_identity<Public>{});
}

/// Checks a problem and the run's options against its SDE and returns the initial state as the
/// engine starts from it: v0 valid on the SDE's state space (validate_state_on), within
/// blowup_threshold, of the shape the SDE declares (S::shape(), when it has one), the cone policy
/// allowed on the space (resolved into `resolved`), and 1 ≤ noise_dimension ≤ max_noise_dimension.
/// Throws ncsde::invalid_argument naming `where` and the parameter.
template <class S, class State>
State validate_problem(std::string_view where, const problem<S, State>& p,
                       const integrate_options& opt, bool iterated, integrate_options& resolved) {
  constexpr state_space space = state_space_of<S>;
  static_assert(StateType<State>,
                "problem: the state must be a plain Eigen vector or matrix of doubles");
  State v0 = validate_state_on(where, "V0", space, p.v0);
  if constexpr (requires { p.sde.shape(); }) {
    const auto [rows, cols] = p.sde.shape();
    if (v0.rows() != rows || v0.cols() != cols)
      throw_invalid(where, detail::format_message("V0 must be {}×{} for this SDE (got {}×{})", rows,
                                                  cols, v0.rows(), v0.cols()));
  }
  // A vector state has no diagonal (a 1-vector included, which the engines step as a vector).
  if (opt.stop_level < std::numeric_limits<double>::infinity() &&
      (State::IsVectorAtCompileTime || v0.rows() != v0.cols()))
    throw_invalid(where, detail::format_message("stop_level needs square matrix states (got V0 of "
                                                "{}×{})",
                                                v0.rows(), v0.cols()));
  const double size = v0.cwiseAbs().maxCoeff();
  if (!(size <= opt.blowup_threshold))
    throw_invalid(where, detail::format_message(
                             "V0 must lie within blowup_threshold = {:.6g} (got max |V0| = "
                             "{:.6g}: every path would count as blown up at t0)",
                             opt.blowup_threshold, size));
  resolved = opt;
  resolved.policy = resolve_pd_policy(where, space, opt.policy);
  const long long k = p.sde.noise_dimension(static_cast<int>(v0.rows()));
  validate_noise_dimension(where, k, iterated);
  resolved.area_depth = resolved_area_depth(opt, space, iterated);
  if (iterated && resolved.area_depth > 0)
    stream_brownian::validate_area_depth(where, static_cast<int>(k), resolved.area_depth);
  return v0;
}

/// The work limits checked before a run (see step_control): with fixed steps the grid's steps,
/// with adaptive ones the pieces the drift bound asks for at v0 (the step it sets there, clamped to
/// [dt·2^-max_depth, dt], over [t0, T]), against opt.max_path_steps; `limit_name` names the limit in
/// the message (max_path_steps, or the ensemble's share of max_run_steps). Throws
/// ncsde::invalid_argument naming `where`, the tolerance or dt, and the limit.
template <class S, class State>
void check_work(std::string_view where, const S& sde, const State& v0, const step_grid& grid,
                const integrate_options& opt, std::string_view limit_name) {
  const double limit = static_cast<double>(opt.max_path_steps);
  if (opt.control == step_control::fixed) {
    if (static_cast<double>(grid.steps) > limit)
      throw_invalid(where,
                    detail::format_message(
                        "dt = {:g} over [{:g}, {:g}] is {} steps per path, more than the "
                        "work limit {} = {}",
                        grid.dt, grid.t0, grid.t_end, grid.steps, limit_name, opt.max_path_steps));
    return;
  }
  if (grid.steps == 0) return;
  State drift = v0;
  sde.drift(v0, drift, grid.t0);
  const double b = drift.cwiseAbs().maxCoeff();
  const double finest = std::ldexp(grid.dt, -opt.max_depth);
  double h = opt.tolerance * (1.0 + v0.cwiseAbs().maxCoeff()) / b;
  // NaN: a non-finite drift, which the first step reports.
  if (!(h >= finest)) h = std::isnan(h) ? grid.dt : finest;
  h = std::min(h, grid.dt);
  const double pieces = (grid.t_end - grid.t0) / h;
  if (pieces > limit)
    throw_invalid(where, detail::format_message(
                             "tolerance = {:g} is unattainable within the work limit {} = {}: at "
                             "V0 the drift bound h·max|b| <= tolerance·(1 + max|V|) asks for steps "
                             "of {:.3g} (max|b(V0)| = {:.3g}, at most {} halvings of dt = {:g}), "
                             "about {:.3g} steps per path over [{:g}, {:g}]; raise the tolerance "
                             "or the limit",
                             opt.tolerance, limit_name, opt.max_path_steps, h, b, opt.max_depth,
                             grid.dt, pieces, grid.t0, grid.t_end));
}

/// Runs one path of prob from noise `source` (a NoiseSource of the SDE's dimension) on the state
/// type visit_state_type picks, with `stepper` itself where it steps that type: from grid step
/// `first` on, state v there and r what the steps before produced (path_integrator::run_from;
/// first = 0: v = V0 and r empty, the whole path).
template <class Stepper, class S, class State, class Source, class Observer>
basic_path_result<State> integrate_path(Stepper& stepper, const problem<S, State>& prob,
                                        const State& v, long long first, basic_path_result<State> r,
                                        const step_grid& grid, const integrate_options& opt,
                                        Source& source, long long path_index, Observer& observer) {
  return visit_state_type<Stepper, S, State>(
      v.rows(), v.cols(), [&]<class Fixed>(std::type_identity<Fixed>) {
        using rebound = stepper_for<Stepper, Fixed>;
        if constexpr (std::is_same_v<typename rebound::type, Stepper>) {
          path_integrator<Stepper, S, Source, Observer, Fixed, State> engine(
              stepper, prob.sde, source, opt, path_index);
          return engine.run_from(v, first, std::move(r), grid, observer);
        } else {
          typename rebound::type local = rebound::make(stepper);
          path_integrator<typename rebound::type, S, Source, Observer, Fixed, State> engine(
              local, prob.sde, source, opt, path_index);
          return engine.run_from(v, first, std::move(r), grid, observer);
        }
      });
}

}  // namespace detail

/// Integrates one path of `prob` with `stepper`, noise from stream (seed, path_index). obs(v, t) is
/// called at t0 and after every grid step (odeint's observer convention).
/// Fixed-size fast path: for a square ncsde::matrix state of m ∈ {1, 2, 3, 4, 8}, or an
/// ncsde::vector state of d ∈ {1, 2, 3, 4}, the path is stepped on the compile-time-sized type
/// (square_matrix<m>, column_vector<d>) with a stepper of the same scheme
/// (Stepper::rebind_state) when the problem is also an Sde on that type; otherwise on the problem's
/// state type. The result has the problem's state type either way.
template <class Stepper, class S, class State, class Observer = detail::null_observer>
  requires Sde<S, State>
basic_path_result<State> integrate(Stepper& stepper, const problem<S, State>& prob,
                                   const integrate_options& opt, std::uint64_t seed,
                                   std::uint64_t path_index = 0, Observer observer = {}) {
  validate_options(opt);
  integrate_options resolved;
  const State v0 = detail::validate_problem("integrate", prob, opt,
                                            Stepper::request.needs_iterated_integrals(), resolved);
  const step_grid grid(prob.t0, prob.t_end, opt.dt, opt.save_times);
  detail::check_work("integrate", prob.sde, v0, grid, resolved, "max_path_steps");
  const int k = prob.sde.noise_dimension(static_cast<int>(v0.rows()));
  stream_brownian source(random_stream(seed, path_index), k, opt.levy_area, resolved.area_depth);
  return detail::integrate_path(stepper, prob, v0, 0, basic_path_result<State>{}, grid, resolved,
                                source, static_cast<long long>(path_index), observer);
}

/// integrate() of path `path_index` resumed at grid step `first` (fixed steps) from its state v
/// there, r holding what steps 0..first−1 produced (steps, the states at the save times before,
/// counters): the path another engine ran up to that step, as the device engine hands a path back
/// (device.hpp). obs is called after every grid step from first + 1 on. With v = integrate()'s
/// V_first and r its result so far, the result is integrate()'s, bit for bit. Throws
/// ncsde::invalid_argument as integrate() does, and when first is outside [0, steps] or the step
/// control is not fixed.
template <class Stepper, class S, class State, class Observer = detail::null_observer>
  requires Sde<S, State>
basic_path_result<State> integrate_from(Stepper& stepper, const problem<S, State>& prob,
                                        const integrate_options& opt, std::uint64_t seed,
                                        std::uint64_t path_index, const State& v, long long first,
                                        basic_path_result<State> r, Observer observer = {}) {
  validate_options(opt);
  integrate_options resolved;
  const State v0 = detail::validate_problem("integrate_from", prob, opt,
                                            Stepper::request.needs_iterated_integrals(), resolved);
  const step_grid grid(prob.t0, prob.t_end, opt.dt, opt.save_times);
  if (resolved.control != step_control::fixed)
    throw_invalid("integrate_from", "a path resumes on fixed steps only");
  if (first < 0 || first > grid.steps)
    throw_invalid_argument("integrate_from", "first", first,
                           detail::format_message("a grid step in [0, {}]", grid.steps));
  if (v.rows() != v0.rows() || v.cols() != v0.cols())
    throw_invalid_argument("integrate_from", "v",
                           detail::format_message("{}x{}", v.rows(), v.cols()),
                           detail::format_message("the shape of V0, {}x{}", v0.rows(), v0.cols()));
  detail::check_work("integrate_from", prob.sde, v0, grid, resolved, "max_path_steps");
  const int k = prob.sde.noise_dimension(static_cast<int>(v0.rows()));
  stream_brownian source(random_stream(seed, path_index), k, opt.levy_area, resolved.area_depth);
  return detail::integrate_path(stepper, prob, v, first, std::move(r), grid, resolved, source,
                                static_cast<long long>(path_index), observer);
}

/// Integrates one path of `prob` with `stepper`, its increments from `source` (any NoiseSource, e.g.
/// a grid_brownian_source reading one fine Brownian path at this run's step size, so that several
/// step sizes see the same path). source.dimension() must equal the SDE's noise_dimension, and the
/// `refine` policy needs a BridgedNoiseSource (ncsde::invalid_argument otherwise). The result is
/// reported as path `path_index` in errors.
template <class Stepper, class S, class State, NoiseSource Source,
          class Observer = detail::null_observer>
  requires Sde<S, State>
basic_path_result<State> integrate(Stepper& stepper, const problem<S, State>& prob,
                                   const integrate_options& opt, Source& source,
                                   Observer observer = {}, long long path_index = 0) {
  validate_options(opt);
  integrate_options resolved;
  const State v0 = detail::validate_problem("integrate", prob, opt,
                                            Stepper::request.needs_iterated_integrals(), resolved);
  if constexpr (!BridgedNoiseSource<Source>) {
    if (resolved.policy == pd_policy::refine)
      throw_invalid("integrate", "pd policy 'refine' needs a noise source with a bridge split");
    if (resolved.control != step_control::fixed)
      throw_invalid("integrate", detail::format_message("step control '{}' halves steps by the "
                                                        "Brownian bridge: it needs a noise source "
                                                        "with a bridge split",
                                                        to_string(resolved.control)));
  }
  const step_grid grid(prob.t0, prob.t_end, opt.dt, opt.save_times);
  detail::check_work("integrate", prob.sde, v0, grid, resolved, "max_path_steps");
  detail::validate_source_dimension("integrate", source.dimension(),
                                    prob.sde.noise_dimension(static_cast<int>(v0.rows())),
                                    path_index);
  return detail::integrate_path(stepper, prob, v0, 0, basic_path_result<State>{}, grid, resolved,
                                source, path_index, observer);
}

}  // namespace ncsde
