#pragma once
/// Boost.Odeint integration (header-only).
///
/// 1. The deterministic limit dV = b(t, V) dt of a problem runs on odeint's ODE steppers, from the
///    same problem<S> object that integrate() takes: the state type is Eigen::MatrixXd with
///    odeint's vector_space_algebra (Eigen's own expression templates do the linear combinations),
///    and drift_system<S> is the odeint System (v, dvdt, t) ↦ dvdt = b(t, v).
/// 2. odeint_stepper<Stepper, S> makes any ncsde SDE stepper an odeint Stepper (stepper_tag), so
///    that odeint's integrate_const / integrate_n_steps / integrate_adaptive drive an SDE path and
///    call observers obs(v, t) as they do for ODEs. It reproduces integrate()'s path exactly.
///
/// What Eigen::MatrixXd needs under vector_space_algebra in Boost 1.74, provided here rather than
/// by odeint's external/eigen/eigen_algebra.hpp, which must never be included: it adds
/// operator+(matrix, scalar), an element-wise operator/ and abs() to namespace Eigen, changing the
/// meaning of expressions in every translation unit that sees it.
///  - Resizing (initially_resizer): odeint's external/eigen/eigen_resize.hpp, which only
///    specialises odeint's own traits.
///  - Copying: Eigen 3.4 declares a nested `iterator` typedef (void) on every dense type, so
///    odeint's is_range<MatrixXd> is true and its default copy would call boost::range::copy;
///    copy_impl_sfinae is specialised below to plain assignment.
///  - The adaptive error estimate: default_operations::rel_error evaluates
///    |err| / (eps_abs + eps_rel (a_x |x| + a_dxdt |dxdt|)) with abs(), scalar + matrix and a
///    quotient, which Eigen spells element-wise only on arrays; odeint_operations overrides
///    rel_error with the .array() forms and inherits every linear operation (scale_sum*) unchanged.
///  - The error norm: vector_space_algebra::norm_inf dispatches to vector_space_norm_inf<State>,
///    specialised below for Eigen::MatrixXd as max_{ab} |V^{ab}|.
#include <Eigen/Core>
#include <boost/numeric/odeint/algebra/default_operations.hpp>
#include <boost/numeric/odeint/algebra/vector_space_algebra.hpp>
#include <boost/numeric/odeint/external/eigen/eigen_resize.hpp>
#include <boost/numeric/odeint/integrate/integrate_adaptive.hpp>
#include <boost/numeric/odeint/integrate/integrate_const.hpp>
#include <boost/numeric/odeint/integrate/integrate_n_steps.hpp>
#include <boost/numeric/odeint/integrate/integrate_times.hpp>
#include <boost/numeric/odeint/stepper/generation.hpp>
#include <boost/numeric/odeint/stepper/runge_kutta4.hpp>
#include <boost/numeric/odeint/stepper/runge_kutta_dopri5.hpp>
#include <boost/numeric/odeint/stepper/stepper_categories.hpp>
#include <boost/numeric/odeint/util/copy.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "ncsde/brownian.hpp"
#include "ncsde/concepts.hpp"
#include "ncsde/error.hpp"
#include "ncsde/integrate.hpp"
#include "ncsde/noise.hpp"
#include "ncsde/stepper.hpp"
#include "ncsde/steppers/detail.hpp"
#include "ncsde/symmetric.hpp"

namespace boost::numeric::odeint {

/// ‖V‖_∞ = max_{ab} |V^{ab}|, the norm odeint's controlled steppers compare with 1.
template <>
struct vector_space_norm_inf<Eigen::MatrixXd> {
  using result_type = double;
  double operator()(const Eigen::MatrixXd& v) const { return v.lpNorm<Eigen::Infinity>(); }
};

/// Copying a matrix state is assignment (Eigen 3.4 dense types look like ranges to odeint).
template <>
struct copy_impl_sfinae<Eigen::MatrixXd, Eigen::MatrixXd, void> {
  static void copy(const Eigen::MatrixXd& from, Eigen::MatrixXd& to) { to = from; }
};

}  // namespace boost::numeric::odeint

namespace ncsde {

/// odeint's default_operations with the adaptive error estimate written element-wise for Eigen
/// matrices: err ← |err| / (eps_abs + eps_rel (a_x |x_old| + a_dxdt |dxdt_old|)), entry by entry
/// (odeint's formula, so the tolerances mean what odeint documents).
struct odeint_operations : boost::numeric::odeint::default_operations {
  /// The functor odeint's default_error_checker applies with for_each3(err, x_old, dxdt_old).
  template <class Fac1 = double>
  struct rel_error {
    const Fac1 m_eps_abs, m_eps_rel, m_a_x, m_a_dxdt;

    rel_error(Fac1 eps_abs, Fac1 eps_rel, Fac1 a_x, Fac1 a_dxdt)
        : m_eps_abs(eps_abs), m_eps_rel(eps_rel), m_a_x(a_x), m_a_dxdt(a_dxdt) {}

    template <class T1, class T2, class T3>
    void operator()(T3& err, const T1& x_old, const T2& dxdt_old) const {
      // Coefficient-wise, so reading and writing `err` in one expression is alias-free.
      err = (err.array().abs() / (m_eps_abs + m_eps_rel * (m_a_x * x_old.array().abs() +
                                                           m_a_dxdt * dxdt_old.array().abs())))
                .matrix();
    }

    using result_type = void;
  };
};

/// An odeint explicit stepper template with the parameter list (State, Value, Deriv, Time, Algebra,
/// Operations, Resizer), instantiated for matrix states, e.g. odeint_matrix_stepper<runge_kutta4>.
template <template <class, class, class, class, class, class, class> class OdeStepper>
using odeint_matrix_stepper =
    OdeStepper<matrix, double, matrix, double, boost::numeric::odeint::vector_space_algebra,
               odeint_operations, boost::numeric::odeint::initially_resizer>;

/// Classical Runge–Kutta (order 4, fixed step) on matrix states.
using odeint_rk4 = odeint_matrix_stepper<boost::numeric::odeint::runge_kutta4>;
/// Dormand–Prince 5(4) (FSAL, embedded error estimate) on matrix states; wrap it with
/// boost::numeric::odeint::make_controlled or make_dense_output for adaptive steps.
using odeint_dopri5 = odeint_matrix_stepper<boost::numeric::odeint::runge_kutta_dopri5>;

/// The drift of an SDE as an odeint System: (v, dvdt, t) ↦ dvdt = b(t, v).
/// Holds the SDE by pointer: odeint copies systems by value, and the SDE must outlive this object
/// (binding a temporary is refused at compile time). A non-finite drift raises
/// ncsde::evaluation_error naming t and max|V| rather than letting a NaN steer the step control.
template <class S>
  requires requires(const S& s, const matrix& v, matrix& out, double t) { s.drift(v, out, t); }
class drift_system {
 public:
  explicit drift_system(const S& sde) : m_sde(&sde) {}
  explicit drift_system(const S&& sde) = delete;

  /// dvdt = b(t, v), resized to v's shape; throws ncsde::evaluation_error if not finite.
  void operator()(const matrix& v, matrix& dvdt, double t) const {
    detail::resize_like(dvdt, v);
    m_sde->drift(v, dvdt, t);
    if (!dvdt.allFinite())
      throw evaluation_error(detail::format_message(
          "drift_system: the drift returned a non-finite value at t = {} (max |V| = {:.6g})", t,
          v.cwiseAbs().maxCoeff()));
  }

  /// The wrapped SDE.
  const S& sde() const { return *m_sde; }

 private:
  const S* m_sde;
};

/// ODE method of solve_deterministic.
///  - rk4: classical Runge–Kutta on integrate()'s grid t_i = t0 + i·dt (the last step shorter when
///    dt does not divide T − t0), via odeint's integrate_times; global error O(dt⁴).
///  - dopri5: Dormand–Prince 5(4) under odeint's step-size control, via integrate_adaptive; every
///    accepted step keeps its local error estimate, entry by entry, below
///    abs_tol + rel_tol·(|V^{ab}| + h·|b(V)^{ab}|) (odeint's rel_error, a_x = a_dxdt = 1).
enum class ode_method { rk4, dopri5 };

/// Options of solve_deterministic; the rules are checked by it (ncsde::invalid_argument).
struct deterministic_options {
  ode_method method = ode_method::dopri5;
  double dt = 1e-2;               ///< rk4: grid step; dopri5: first trial step. > 0, finite
  double abs_tol = 1e-10;         ///< dopri5: absolute tolerance, >= 0
  double rel_tol = 1e-10;         ///< dopri5: relative tolerance, >= 0; abs_tol + rel_tol > 0
  double blowup_threshold = 1e6;  ///< max|V^{ab}| beyond which V has blown up; in (0, 1e100]
};

/// The deterministic solution at t_stop, with integrate()'s status vocabulary: completed
/// (t_stop = T) or blown_up (t_stop = the time at which the solution was seen beyond the threshold,
/// or at which a trial stage overflowed).
struct deterministic_result {
  path_status status = path_status::completed;
  double t_stop = 0.0;
  long long steps = 0;  ///< accepted steps (a blown-up accepted step included)
  matrix v;             ///< state at t_stop
};

namespace detail {

/// Thrown inside an odeint run to end it when the solution has blown up; caught by
/// solve_deterministic.
struct ode_blowup {
  double t;
  matrix v;
  bool accepted;  ///< an accepted step's state (counted as a step) rather than a trial stage
};

/// The drift with blow-up semantics for solve_deterministic: a trial stage that is non-finite, or
/// beyond the threshold with a non-finite drift, ends the run as blown_up at that stage's time; a
/// non-finite drift within the threshold is a defect of the drift (ncsde::evaluation_error). A
/// finite stage beyond the threshold is evaluated as usual: a too-long trial step may overshoot and
/// is then rejected by the step-size control; only accepted states are held to the threshold.
template <class S>
class guarded_drift {
 public:
  guarded_drift(const S& sde, double threshold) : m_sde(&sde), m_threshold(threshold) {}

  void operator()(const matrix& v, matrix& dvdt, double t) const {
    if (!v.allFinite()) throw ode_blowup{t, v, false};
    resize_like(dvdt, v);
    m_sde->drift(v, dvdt, t);
    if (dvdt.allFinite()) return;
    const double size = v.cwiseAbs().maxCoeff();
    if (size > m_threshold) throw ode_blowup{t, v, false};
    throw evaluation_error(detail::format_message(
        "solve_deterministic: the drift returned a non-finite value at t = {} (max |V| = {:.6g})",
        t, size));
  }

 private:
  const S* m_sde;
  double m_threshold;
};

/// Counts accepted states, ends the run at a blown-up one, and passes the others on to the user's
/// observer (which, as with integrate(), never sees a blown-up state).
template <class Observer>
class guarded_observer {
 public:
  guarded_observer(Observer& user, double threshold, long long& calls)
      : m_user(&user), m_threshold(threshold), m_calls(&calls) {}

  void operator()(const matrix& v, double t) const {
    if (!v.allFinite() || !(v.cwiseAbs().maxCoeff() <= m_threshold)) throw ode_blowup{t, v, true};
    ++*m_calls;
    (*m_user)(v, t);
  }

 private:
  Observer* m_user;
  double m_threshold;
  long long* m_calls;
};

inline void validate_deterministic_options(const deterministic_options& o) {
  if (!(o.dt > 0) || !std::isfinite(o.dt))
    throw_invalid_argument("solve_deterministic", "dt", o.dt, "> 0 and finite");
  if (!(o.abs_tol >= 0) || !std::isfinite(o.abs_tol))
    throw_invalid_argument("solve_deterministic", "abs_tol", o.abs_tol, ">= 0 and finite");
  if (!(o.rel_tol >= 0) || !std::isfinite(o.rel_tol))
    throw_invalid_argument("solve_deterministic", "rel_tol", o.rel_tol, ">= 0 and finite");
  if (o.method == ode_method::dopri5 && !(o.abs_tol + o.rel_tol > 0))
    throw_invalid_argument("solve_deterministic", "abs_tol + rel_tol", o.abs_tol + o.rel_tol,
                           "> 0");
  if (!(o.blowup_threshold > 0) || !(o.blowup_threshold <= 1e100))
    throw_invalid_argument("solve_deterministic", "blowup_threshold", o.blowup_threshold,
                           "in (0, 1e100]");
}

}  // namespace detail

/// Solves the deterministic limit dV = b(t, V) dt, V(t0) = V0, of `prob` on [t0, T] with odeint.
/// obs(v, t) is called at t0 and after every accepted step (odeint's observer convention), the last
/// time at t = T exactly; never on a blown-up state. V0 is validated as by integrate() (for the
/// SDE's state space: finite; square and symmetric on symmetric spaces; positive semidefinite on the
/// cone), t0, T and dt by integrate()'s grid rules, and the
/// options as documented; violations throw ncsde::invalid_argument naming the parameter and value.
/// The state is neither symmetrised nor projected: when b(t, V) is symmetric for symmetric V, the
/// solution stays symmetric up to round-off. odeint's step_adjustment_error (the step-size control
/// failing 500 times in a row) propagates unchanged.
template <class S, class Observer = detail::null_observer>
  requires Sde<S>
deterministic_result solve_deterministic(const problem<S>& prob, const deterministic_options& opt,
                                         Observer observer = {}) {
  namespace odeint = boost::numeric::odeint;
  detail::validate_deterministic_options(opt);
  matrix v = validate_state_on("solve_deterministic", "V0", state_space_of<S>, prob.v0);
  const step_grid grid(prob.t0, prob.t_end, opt.dt);  // rk4's grid

  long long calls = 0;
  const detail::guarded_drift<S> system(prob.sde, opt.blowup_threshold);
  const detail::guarded_observer<Observer> obs(observer, opt.blowup_threshold, calls);
  deterministic_result result;
  try {
    if (grid.steps == 0) {
      obs(v, grid.t0);
    } else if (opt.method == ode_method::rk4) {
      std::vector<double> times(static_cast<std::size_t>(grid.steps) + 1);
      for (long long i = 0; i <= grid.steps; ++i) times[static_cast<std::size_t>(i)] = grid.time(i);
      // Every grid interval is at most dt·(1 + 1e-9) plus round-off, so with a maximal step of 2·dt
      // integrate_times takes exactly one step t_i → t_{i+1} per interval.
      odeint::integrate_times(odeint_rk4(), system, v, times.begin(), times.end(), 2 * grid.dt,
                              obs);
    } else {
      double t = grid.t0;
      double dt = std::min(grid.dt, grid.t_end - grid.t0);
      odeint::integrate_adaptive(odeint::make_controlled(opt.abs_tol, opt.rel_tol, odeint_dopri5()),
                                 system, v, t, grid.t_end, dt, obs);
    }
  } catch (detail::ode_blowup& b) {
    result.status = path_status::blown_up;
    result.t_stop = b.t;
    // `calls` counts the states passed on, t0's included.
    result.steps = b.accepted ? calls : std::max(calls - 1, 0LL);
    result.v = std::move(b.v);
    return result;
  }
  result.status = path_status::completed;
  result.t_stop = grid.t_end;
  result.steps = calls - 1;
  result.v = std::move(v);
  return result;
}

/// An ncsde SDE stepper as an odeint Stepper (stepper_category = stepper_tag) on the uniform grid
/// t_n = t0 + n·dt. do_step(sde, v, t, h) advances v by one step of Stepper with the increment of
/// step n = ⌊(t − t0)/dt + 1/2⌋ drawn from the stream_brownian (with the iterated integrals when
/// Stepper needs them), then, on symmetric and cone spaces, makes v exactly symmetric, as
/// integrate() does.
///  - A full step (h = dt up to 1e-9 relative) spans [t_n, t_{n+1}] with both ends recomputed as
///    t0 + n·dt, so its length is t_{n+1} − t_n, exactly as on integrate()'s grid.
///  - A shorter h is the final partial step [t_n, t_n + h] of a horizon that dt does not divide
///    (the step odeint's integrate_adaptive takes last).
/// Hence, for the same (seed, path),
///   odeint::integrate_const(adapter, sde, v, t0, T, dt, obs)     (dt dividing T − t0), or
///   odeint::integrate_adaptive(adapter, sde, v, t0, T, dt, obs)  (any T)
/// give bit for bit the path of integrate(stepper, problem, {dt, pd_policy::count}, seed, path),
/// with the observer called at the same times with the same states. The adapter applies no cone
/// policy and no blow-up detection (those belong to integrate()): it is the pure scheme.
///
/// The noise source is held by pointer: odeint copies steppers, and every copy must draw from the
/// same source, which must outlive them (binding a temporary source is refused at compile time).
/// The step index, not a count of calls, selects the noise, so the path does not depend on how
/// odeint sequences its calls.
template <class Stepper, class S>
  requires Sde<S>
class odeint_stepper {
 public:
  using state_type = matrix;
  using deriv_type = matrix;
  using value_type = double;
  using time_type = double;
  /// A double, unlike odeint's ODE steppers: strong orders of SDE schemes are fractional (1/2 for
  /// Euler–Maruyama). odeint's integrate functions for stepper_tag do not read the order.
  using order_type = double;
  using stepper_category = boost::numeric::odeint::stepper_tag;

  static_assert(ncsde::Stepper<Stepper>,
                "odeint_stepper: the stepper must declare what it is (the ncsde::Stepper concept, "
                "ncsde/stepper.hpp)");

  /// Stepper's orders on noise of class c (stepper.hpp).
  static constexpr double strong_order(noise_class c) { return Stepper::strong_order(c); }
  static constexpr double weak_order(noise_class c) { return Stepper::weak_order(c); }

  /// The strong order of Stepper on the noise class S declares (general when it declares none).
  static constexpr order_type order() { return Stepper::strong_order(declared_noise_class<S>()); }

  /// Steps 0, 1, … of the grid t0 + n·dt draw their increments from `source`.
  /// Throws ncsde::invalid_argument unless t0 is finite and dt > 0 is finite.
  odeint_stepper(stream_brownian& source, double t0, double dt, Stepper stepper = Stepper())
      : m_source(&source), m_t0(t0), m_dt(dt), m_stepper(std::move(stepper)) {
    if (!std::isfinite(t0)) throw_invalid_argument("odeint_stepper", "t0", t0, "finite");
    if (!(dt > 0) || !std::isfinite(dt))
      throw_invalid_argument("odeint_stepper", "dt", dt, "> 0 and finite");
  }
  odeint_stepper(stream_brownian&& source, double t0, double dt,
                 Stepper stepper = Stepper()) = delete;

  /// One step from (t, v) of length h, as described above. Throws ncsde::invalid_argument when t is
  /// not a grid time (within 1e-9·max(dt, |t|)) at or after t0, or h is not in (0, dt], leaving v
  /// unchanged; ncsde::evaluation_error when a coefficient returns a non-finite value.
  void do_step(const S& sde, matrix& v, double t, double h) {
    const double position = (t - m_t0) / m_dt + 0.5;
    // 9e15 < 2^53: beyond it consecutive grid indices are no longer distinct doubles.
    if (!(position >= 0) || !(position < 9e15))
      throw_invalid_argument(
          "odeint_stepper", "t", t,
          detail::format_message("in [t0, t0 + 9e15·dt) (t0 = {}, dt = {})", m_t0, m_dt));
    const auto n = static_cast<std::uint64_t>(std::floor(position));
    const double t_n = m_t0 + static_cast<double>(n) * m_dt;
    if (!(std::abs(t - t_n) <= 1e-9 * std::max(m_dt, std::abs(t))))
      throw_invalid_argument(
          "odeint_stepper", "t", t,
          detail::format_message("a grid time t0 + n·dt (t0 = {}, dt = {})", m_t0, m_dt));
    if (!(h > 0) || !(h <= m_dt * (1 + 1e-9)))
      throw_invalid_argument("odeint_stepper", "h", h,
                             detail::format_message("in (0, dt] (dt = {})", m_dt));
    const bool full = h >= m_dt * (1 - 1e-9);
    const double length = full ? (m_t0 + static_cast<double>(n + 1) * m_dt) - t_n : h;
    m_source->increment(n, length, Stepper::request.needs_iterated_integrals(), m_inc);
    try {
      m_stepper.do_step(sde, v, t, m_inc);
    } catch (const detail::non_finite_coefficient& e) {
      throw evaluation_error(detail::format_message(
          "odeint_stepper: the {} returned {} at step {}, t = {} (max |V| = {:.6g})", e.which,
          e.what, n, t, v.cwiseAbs().maxCoeff()));
    }
    if constexpr (is_symmetric_space(state_space_of<S>)) symmetrize(v);
  }

  /// The wrapped scheme (with its workspaces).
  const Stepper& stepper() const { return m_stepper; }
  /// The grid's origin t0.
  double t0() const { return m_t0; }
  /// The grid's step dt.
  double dt() const { return m_dt; }

 private:
  stream_brownian* m_source;
  double m_t0;
  double m_dt;
  Stepper m_stepper;
  noise_increment m_inc;
};

}  // namespace ncsde
