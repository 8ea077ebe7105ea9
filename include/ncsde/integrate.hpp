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
#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ncsde/brownian.hpp"
#include "ncsde/concepts.hpp"
#include "ncsde/error.hpp"
#include "ncsde/noise.hpp"
#include "ncsde/psd.hpp"
#include "ncsde/steppers/detail.hpp"
#include "ncsde/symmetric.hpp"

namespace ncsde {

/// What to do when a step leaves the positive-semidefinite cone (λ_min < −round-off).
///  - throw_error: raise ncsde::pd_violation naming path, step, time and smallest eigenvalue;
///  - count: keep the state as is, count it (the pure scheme; what convergence studies use);
///  - project: clip the eigenvalues to ≥ pd_floor (nearest PSD matrix in Frobenius norm), count it;
///  - refine: redo the step as two half steps whose increments come from the Brownian bridge of the
///    original one (the path's noise is unchanged), recursively up to refine_depth levels; if the
///    deepest half step still leaves the cone, give up with ncsde::pd_violation.
/// Default: project. The exact solutions stay in the cone; an exit is a discretisation artefact of
/// size O(dt²·|b|) in a near-null direction (SPEC §7.2), which the nearest-point projection removes at
/// that cost, never aborting an ensemble of thousands of paths for one rare event, and every projection
/// is counted in the result. `refine` is the choice when the path's noise must be kept exactly,
/// `count` when the unmodified scheme is the object of study.
enum class pd_policy { throw_error, count, project, refine };

std::string_view to_string(pd_policy p);
/// Parses "throw", "count", "project", "refine"; throws ncsde::invalid_argument naming `param`.
pd_policy parse_pd_policy(std::string_view text, std::string_view param = "pd-policy");

/// Per-run counters of cone events (sub-steps of refined steps included).
struct pd_counters {
  long long violations = 0;  ///< (sub)steps whose result was outside the cone
  long long projected = 0;   ///< of which were projected
  long long refined = 0;     ///< steps redone as two half steps
  long long boundary = 0;    ///< steps ending PSD only up to round-off (not violations)
  /// Smallest eigenvalue seen among violations (NaN when there were none).
  double min_eigenvalue = std::numeric_limits<double>::quiet_NaN();

  pd_counters& operator+=(const pd_counters& o);
};

enum class path_status { completed, blown_up, stopped };
std::string_view to_string(path_status s);

/// An SDE with its initial state and horizon: dV = b dt + G dW on [t0, t_end], V(t0) = v0.
template <class S>
struct problem {
  S sde;
  matrix v0;
  double t_end = 1.0;
  double t0 = 0.0;
};

struct integrate_options {
  double dt = 1e-3;
  pd_policy policy = pd_policy::project;
  double pd_floor = 0.0;               ///< eigenvalue floor of `project` (≥ 0)
  int refine_depth = 8;                ///< maximal halvings of `refine` (dt / 2^depth), 1..30
  double blowup_threshold = 1e6;       ///< max|V^{ab}| above which a path has blown up, (0, 1e100]
  std::vector<double> save_times;      ///< grid times at which to keep V (ascending, in [t0, T])
  /// Optional stopping rule checked on the grid: stop the path (status stopped) when it returns true.
  std::function<bool(const matrix& v, double t)> stop_condition;
  levy_area_method levy_area = levy_area_method::wiktorsson;
};

struct path_result {
  path_status status = path_status::completed;
  double t_stop = 0.0;       ///< T when completed; the time of the step that blew up or stopped
  long long steps = 0;       ///< grid steps taken
  matrix v;                  ///< state at t_stop
  pd_counters pd;
  std::vector<matrix> saved;  ///< V at save_times[0 .. saved.size()) (fewer if the path stopped early)
};

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

namespace detail {

/// The observer that ignores its calls (and is never called).
struct null_observer {
  void operator()(const matrix&, double) const {}
};

/// Integrates one path: the engine behind integrate() and ensembles. `Source` is stream_brownian or
/// any type with increment(step, dt, with_iterated, out) and split(...). The state is stepped as a
/// `State` (ncsde::matrix, or square_matrix<M> on the fixed-size path; Stepper must step that type);
/// the result, the observer and the stop condition see ncsde::matrix. Every workspace is a member,
/// so after the first step (and the first split at each refinement depth) a step allocates nothing
/// here; the observer and the stop condition see a dynamic copy kept in a member.
template <class Stepper, class S, class Source, class Observer, class State = matrix>
class path_integrator {
 public:
  path_integrator(Stepper& stepper, const S& sde, Source& source, const integrate_options& opt,
                  long long path_index)
      : m_stepper(stepper),
        m_sde(sde),
        m_source(source),
        m_opt(opt),
        m_path(path_index),
        m_halves(static_cast<std::size_t>(std::max(opt.refine_depth, 0))) {}

  path_result run(const matrix& v0, const step_grid& grid, Observer& observer) {
    path_result r;
    m_v = v0;
    std::size_t next_save = 0;
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
    save_due(0);
    observe(observer, grid.t0);
    r.t_stop = grid.t0;
    for (long long i = 0; i < grid.steps; ++i) {
      const double t = grid.time(i);
      const double h = grid.step_size(i);
      m_source.increment(static_cast<std::uint64_t>(i), h, Stepper::needs_iterated_integrals, m_inc);
      const path_status st = advance(r, t, m_inc, static_cast<std::uint64_t>(i), 1, 0, i);
      r.steps = i + 1;
      r.t_stop = grid.time(i + 1);
      if (st != path_status::completed) {
        if (st == path_status::blown_up) r.t_stop = m_blowup_time;
        finish(st);
        return r;
      }
      if (m_opt.stop_condition && m_opt.stop_condition(dynamic_state(), r.t_stop)) {
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
  /// The current state as an ncsde::matrix (a copy into a reused member on the fixed-size path).
  const matrix& dynamic_state() {
    if constexpr (std::is_same_v<State, matrix>) {
      return m_v;
    } else {
      m_dynamic = m_v;
      return m_dynamic;
    }
  }

  void observe(Observer& observer, double t) {
    if constexpr (!std::is_same_v<Observer, null_observer>) observer(dynamic_state(), t);
  }

  /// One (sub)step from m_v at time t with increment inc; applies the policies.
  path_status advance(path_result& r, double t, const noise_increment& inc, std::uint64_t step,
                      std::uint64_t node, int depth, long long grid_step) {
    m_trial = m_v;
    try {
      m_stepper.do_step(m_sde, m_trial, t, inc);
    } catch (const non_finite_coefficient& e) {
      throw evaluation_error(fmt::format(
          "integrate: the {} returned {} at path {}, step {}, t = {} (max |V| = {:.6g})", e.which,
          e.what, m_path, grid_step, t, m_v.cwiseAbs().maxCoeff()));
    }
    // Symmetric by construction; make round-off asymmetry of user coefficients exact.
    symmetrize(m_trial);
    if (!m_trial.allFinite() || !(m_trial.cwiseAbs().maxCoeff() <= m_opt.blowup_threshold)) {
      m_v = m_trial;
      m_blowup_time = t + inc.dt;
      return path_status::blown_up;
    }
    const psd_result pr = m_checker.check(m_trial);
    if (pr.status == psd_status::boundary) ++r.pd.boundary;
    if (pr.status != psd_status::outside) {
      m_v = m_trial;
      // The check's Cholesky factor of the new state is the one the SDE's next noise map needs.
      if constexpr (SdeWithCholeskyHint<S, State>)
        if (pr.status == psd_status::positive_definite)
          m_sde.use_cholesky(m_v, m_checker.cholesky_factor());
      return path_status::completed;
    }
    ++r.pd.violations;
    if (!(r.pd.min_eigenvalue <= pr.min_eigenvalue)) r.pd.min_eigenvalue = pr.min_eigenvalue;
    switch (m_opt.policy) {
      case pd_policy::count:
        m_v = m_trial;
        return path_status::completed;
      case pd_policy::project:
        m_checker.project(m_trial, m_opt.pd_floor);
        ++r.pd.projected;
        m_v = m_trial;
        return path_status::completed;
      case pd_policy::throw_error:
        throw pd_violation(
            fmt::format("integrate: path {} left the positive-semidefinite cone at step {}, t = {} "
                        "(smallest eigenvalue {:.6g})",
                        m_path, grid_step, t + inc.dt, pr.min_eigenvalue),
            m_path, grid_step, t + inc.dt, pr.min_eigenvalue);
      case pd_policy::refine:
        break;
    }
    if (depth >= m_opt.refine_depth)
      throw pd_violation(
          fmt::format("integrate: path {} left the positive-semidefinite cone at step {}, t = {} "
                      "(smallest eigenvalue {:.6g}) even after refining the step {} times (dt = {:.3g})",
                      m_path, grid_step, t + inc.dt, pr.min_eigenvalue, depth, inc.dt),
          m_path, grid_step, t + inc.dt, pr.min_eigenvalue);
    ++r.pd.refined;
    // The halves of depth d live while depth d + 1 runs: one reused pair per depth (depth <
    // refine_depth here), allocated with the engine so that references to them stay valid.
    noise_increment& left = m_halves[depth].first;
    noise_increment& right = m_halves[depth].second;
    m_source.split(inc, step, node, Stepper::needs_iterated_integrals, left, right);
    const path_status first = advance(r, t, left, step, 2 * node, depth + 1, grid_step);
    if (first != path_status::completed) return first;
    return advance(r, t + left.dt, right, step, 2 * node + 1, depth + 1, grid_step);
  }

  Stepper& m_stepper;
  const S& m_sde;
  Source& m_source;
  const integrate_options& m_opt;
  long long m_path;
  noise_increment m_inc;
  std::vector<std::pair<noise_increment, noise_increment>> m_halves;  ///< [depth] = (left, right)
  State m_v, m_trial;
  matrix m_dynamic;
  basic_psd_checker<State> m_checker;
  double m_blowup_time = 0.0;
};

/// Stepper can step states of type State: it declares rebind_state<State>, default-constructible.
template <class Stepper, class State>
concept rebindable_stepper =
    requires { typename Stepper::template rebind_state<State>; } &&
    std::default_initializable<typename Stepper::template rebind_state<State>>;

/// The fixed-size path is available for m = M: M is a fixed size, the stepper rebinds to
/// square_matrix<M> and the problem accepts square_matrix<M> states.
template <int M, class Stepper, class S>
inline constexpr bool has_fixed_path =
    is_fixed_size<M> && rebindable_stepper<Stepper, square_matrix<M>> && Sde<S, square_matrix<M>>;

/// The stepper that steps State: Stepper itself (copied) for ncsde::matrix, its rebound
/// (default-constructed) scheme for a fixed-size State.
template <class Stepper, class State>
struct stepper_for {
  using type = typename Stepper::template rebind_state<State>;
  static type make(const Stepper&) { return type{}; }
};
template <class Stepper>
struct stepper_for<Stepper, matrix> {
  using type = Stepper;
  static type make(const Stepper& s) { return s; }
};

/// Calls f(std::type_identity<State>{}) with State = square_matrix<m> when has_fixed_path holds for
/// m, State = ncsde::matrix otherwise, and returns what f returns.
template <class Stepper, class S, class F>
decltype(auto) visit_state_type(int m, F&& f) {
  switch (m) {
    case 2:
      if constexpr (has_fixed_path<2, Stepper, S>) return f(std::type_identity<square_matrix<2>>{});
      break;
    case 3:
      if constexpr (has_fixed_path<3, Stepper, S>) return f(std::type_identity<square_matrix<3>>{});
      break;
    case 4:
      if constexpr (has_fixed_path<4, Stepper, S>) return f(std::type_identity<square_matrix<4>>{});
      break;
    case 8:
      if constexpr (has_fixed_path<8, Stepper, S>) return f(std::type_identity<square_matrix<8>>{});
      break;
    default:
      break;
  }
  return f(std::type_identity<matrix>{});
}

/// Checks v0 and the problem against the SDE: valid state, noise dimension ≥ 1.
template <class S>
matrix validate_problem(const problem<S>& p) {
  const matrix v0 = validate_state("integrate", "V0", p.v0);
  const int k = p.sde.noise_dimension(static_cast<int>(v0.rows()));
  if (k < 1) throw_invalid_argument("integrate", "noise_dimension(m)", k, ">= 1");
  return v0;
}

}  // namespace detail

/// Integrates one path of `prob` with `stepper`, noise from stream (seed, path_index). obs(v, t) is
/// called at t0 and after every grid step (odeint's observer convention).
/// For m ∈ {2, 3, 4, 8} (is_fixed_size) the path is stepped on square_matrix<m> states with a
/// stepper of the same scheme (Stepper::rebind_state<square_matrix<m>>, default-constructed) when
/// the problem is also an Sde<S, square_matrix<m>>; otherwise, and for every other m, on
/// ncsde::matrix with `stepper` itself. The result is ncsde::matrix either way.
template <class Stepper, class S, class Observer = detail::null_observer>
  requires Sde<S>
path_result integrate(Stepper& stepper, const problem<S>& prob, const integrate_options& opt,
                      std::uint64_t seed, std::uint64_t path_index = 0, Observer observer = {}) {
  validate_options(opt);
  const matrix v0 = detail::validate_problem(prob);
  const step_grid grid(prob.t0, prob.t_end, opt.dt, opt.save_times);
  const int m = static_cast<int>(v0.rows());
  const int k = prob.sde.noise_dimension(m);
  stream_brownian source(random_stream(seed, path_index), k, opt.levy_area);
  return detail::visit_state_type<Stepper, S>(m, [&]<class State>(std::type_identity<State>) {
    using rebound = detail::stepper_for<Stepper, State>;
    if constexpr (std::is_same_v<State, matrix>) {
      detail::path_integrator<Stepper, S, stream_brownian, Observer> engine(
          stepper, prob.sde, source, opt, static_cast<long long>(path_index));
      return engine.run(v0, grid, observer);
    } else {
      typename rebound::type local = rebound::make(stepper);
      detail::path_integrator<typename rebound::type, S, stream_brownian, Observer, State> engine(
          local, prob.sde, source, opt, static_cast<long long>(path_index));
      return engine.run(v0, grid, observer);
    }
  });
}

}  // namespace ncsde
