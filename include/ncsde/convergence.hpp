#pragma once
/// Measured convergence orders (docs/convergence.md; the estimators and why they are unbiased:
/// "How the errors are estimated" there, and docs/maths.md §12–13).
///
/// Contract. run_convergence(cp, opt) runs every selected registry scheme on the problem's ladder
/// dt_l = (T − t0)/2^l, l = first_level … first_level + levels − 1, every level and scheme on the
/// same Brownian path p (stream (seed, p), sampled once on the finest grid, Lévy areas joined by
/// Chen's relation), and returns per scheme and kind (strong, weak) the mean error per level with
/// its Monte Carlo standard error and the weighted least-squares slope of log error on log dt,
/// checked against the order the scheme declares for the problem's noise class. Strong errors are
/// against the pathwise solution or a fine-grid general Milstein reference; weak errors use the
/// problem's closed forms when it has them (an exact control, euler_weak, weak_value) and the
/// coupled differences of successive levels otherwise. Paths that blow up or stop are left out of
/// their series and counted. The result is bit-identical for any thread count and any path
/// sharing (MPI). Bad options are ncsde::invalid_argument naming the option.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ncsde/brownian.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/error.hpp"
#include "ncsde/executor.hpp"
#include "ncsde/integrate.hpp"
#include "ncsde/report_field.hpp"
#include "ncsde/schemes.hpp"
#include "ncsde/statistics.hpp"
#include "ncsde/stepper.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"
#include "ncsde/steppers/milstein.hpp"
#include "ncsde/symmetric.hpp"

namespace ncsde {

/// "general", "commutative", "additive".
std::string_view to_string(noise_class c);

enum class error_kind { strong, weak };
/// "strong", "weak".
std::string_view to_string(error_kind k);

/// The order theory predicts, as the scheme declares it (stepper.hpp): its strong or weak order on
/// noise of class `noise`. E.g. weak 1 for every built-in scheme; strong: EM 1/2 (1 on additive
/// noise), Milstein 1, Milstein without Lévy areas 1 on commutative or additive noise and 1/2
/// otherwise.
double expected_order(const scheme_descriptor& scheme, error_kind k, noise_class noise);
/// The same for the registry's scheme called `scheme` (find_scheme's ncsde::invalid_argument).
double expected_order(std::string_view scheme, error_kind k, noise_class noise);
/// The same with the noise class general or, when commutative_noise, commutative.
double expected_order(std::string_view scheme, error_kind k, bool commutative_noise);

/// A strong error measure e(X_dt(T), X_ref(T)) ≥ 0 of a study, with the name it is reported under.
struct strong_error_measure {
  std::string name;
  std::function<double(const matrix& approx, const matrix& reference)> error;
};
/// |X^{ab}_dt − X^{ab}_ref| (0-indexed; b = 0 for a state with one column).
strong_error_measure component_error(int a, int b);
/// |f(X_dt) − f(X_ref)| for a functional f of the state.
strong_error_measure functional_error(functional f);

/// A problem with a known solution, set up for a convergence study.
template <class S>
struct convergence_problem {
  convergence_problem(std::string name_, problem<S> prob_)
      : name(std::move(name_)), prob(std::move(prob_)) {}

  std::string name;
  std::string description;
  problem<S> prob;  ///< SDE, V0, horizon [t0, T]
  /// The noise class deciding the expected strong orders: the SDE's declared class (general when it
  /// declares none) unless set here.
  noise_class noise = declared_noise_class<S>();
  /// Shorthand kept for existing problems: true makes a `general` class commutative.
  bool commutative_noise = false;
  /// The strong error; empty: the Frobenius norm ‖X_dt(T) − X_ref(T)‖_F of the whole state.
  strong_error_measure strong_error;
  /// The effective noise class.
  noise_class effective_noise() const {
    return noise == noise_class::general && commutative_noise ? noise_class::commutative : noise;
  }
  int first_level = 1;       ///< coarsest dt = (T − t0)/2^first_level
  int levels = 5;            ///< number of step sizes (≥ 3)
  long long paths = 1000;    ///< default number of paths (all strong errors, order-1 weak errors)
  long long weak_paths = 0;  ///< default paths of the O(dt)-variance weak errors (0: = paths)
  int reference_ratio = 16;  ///< fine steps per finest coarse step when there is no exact solution
  int control_ratio = 4;     ///< EM control steps per finest coarse step (divides reference_ratio)
  /// Pathwise exact solution V_T(V0, W_T, T − t0); empty: fine-grid Milstein reference.
  std::function<matrix(const matrix& v0, const Eigen::Ref<const vector>& w_t, double t)> exact;
  functional weak;          ///< f of the weak error
  double weak_exact = 0.0;  ///< E f(V_T)
  /// E f(V_n) of n Euler–Maruyama steps of size h from V0 (exact); required for EM's weak error
  /// when exact and weak_value are both empty.
  std::function<double(double h, long long n)> euler_weak;
  /// Optional: weak_value(t) returns u(t, ·) = E[f(V_T) | V_t = ·] of the exact SDE, which must be
  /// a polynomial of degree ≤ 2 in the entries of V (the martingale control variate of EM, see
  /// above).
  std::function<std::function<double(const matrix&)>(double t)> weak_value;
  /// The first tolerance of the adaptive study (run_adaptive_convergence), in (0, 1]: chosen so
  /// that the controllers already refine the grid step T/2^first_level at every level.
  double adaptive_tolerance = 0.005;
};

struct convergence_options {
  std::uint64_t seed = 1;
  long long paths = 0;  ///< 0: the problem's default; otherwise ≥ 2
  /// Paths of the O(dt)-variance weak errors (see above). 0: `paths` when that is set, else the
  /// problem's default. Never fewer than the paths actually used for strong errors.
  long long weak_paths = 0;
  int threads = 0;       ///< 0: all hardware threads
  int levels = 0;        ///< 0: the problem's default; otherwise in [3, 16]
  int first_level = -1;  ///< coarsest dt = (T − t0)/2^first_level; −1: the problem's default
  /// Names of registry schemes (schemes.hpp), every built-in one by default; an unknown name is an
  /// ncsde::invalid_argument listing the known ones, a repeated one counts once.
  std::vector<std::string> schemes = scheme_names();
  bool strong = true;
  bool weak = true;
  /// Weak orders from the coupled differences of successive levels (see the file comment) even
  /// when the problem has the closed forms of the controls; a problem without them (no exact
  /// solution, euler_weak or weak_value) uses the differences anyway.
  bool weak_differences = false;
  double strong_tolerance = 0.05;  ///< pass: |order − expected| ≤ tolerance
  double weak_tolerance = 0.1;
  /// How the Milstein schemes form their derivative term (milstein.hpp): automatic uses the
  /// problem's diffusion_derivative when it has one.
  milstein_derivative derivative = milstein_derivative::automatic;
  progress_mode progress = progress_mode::automatic;
  /// Null: this process runs every path. Otherwise (MPI: mpi::rank_sharing) it runs its share,
  /// the root returns the series, bit for bit the one-process ones (seconds aside), and the other
  /// processes an empty vector.
  std::shared_ptr<const path_sharing> sharing;
};

/// One error series: a scheme's strong or weak errors over the levels and the fitted order.
struct convergence_series {
  std::string problem;
  std::string scheme;  ///< the registry name, e.g. "em"
  error_kind kind = error_kind::strong;
  long long paths = 0;  ///< paths the errors of this series average over
  std::uint64_t seed = 0;
  std::vector<double> dts, errors, errors_stderr;
  linear_fit fit;  ///< slope = measured order (NaN when some error is not positive)
  double expected = 0.0;
  double tolerance = 0.0;
  bool pass = false;  ///< |fit.slope − expected| ≤ tolerance
  /// Not pass, but the local slopes are still moving towards the expected order
  /// (is_pre_asymptotic): the levels are too coarse to measure it. Refine (more or finer levels).
  bool pre_asymptotic = false;
  /// Not pass, and fewer than two levels have an error above twice its standard error: the
  /// errors are noise, the slope says nothing (more paths, or coarser levels).
  bool unresolved = false;
  /// Coarse steps (every path of the series, all levels) that left the PSD cone (cone problems).
  long long cone_exits = 0;
  /// Paths left out of this series because one of its runs (or the reference) blew up or stopped
  /// before T: counted here, the errors average over the other paths.
  long long failed_paths = 0;
  std::string error_measure;  ///< the strong error measure's name (empty: Frobenius norm)
  std::string reference;      ///< "exact" or how the reference was computed
  std::string functional;     ///< the weak functional's name (weak series)
  double seconds = 0.0;       ///< wall time of the whole problem's run
};

/// The local slopes of log error against log dt between consecutive levels (NaN where an error is
/// not positive).
std::vector<double> local_slopes(const std::vector<double>& dts, const std::vector<double>& errors);

/// Whether a series whose fitted order `fitted` misses `expected` by more than `tolerance` is still
/// pre-asymptotic: at least two local slopes, all finite, each (coarse to fine) closer to the
/// expected order than the one before, and the finest closer than the fitted order: the slopes are
/// still moving towards it as dt shrinks. A label for the reader, not a pass: such a series needs
/// finer levels.
bool is_pre_asymptotic(const std::vector<double>& dts, const std::vector<double>& errors,
                       double expected, double fitted, double tolerance);

namespace detail {

/// The scheme of the weak-error controls: the coupled control Y (no pathwise solution) and the
/// martingale control (an EM step is affine in its increment) are Euler–Maruyama chains.
using control_stepper = euler_maruyama<>;
/// Its index in the registry.
inline constexpr std::size_t control_scheme = builtin_schemes::index_of<control_stepper>;

/// Per-path result slots of a driver: paths [first, last) own bytes_per_path bytes each, path p's
/// at data + (p − first)·bytes_per_path.
struct path_slots {
  void* data = nullptr;
  std::size_t bytes_per_path = 0;
  long long first = 0, last = 0;
};

/// Runs `run` on this process's share of the paths [0, total) (sharing.mine, whole blocks of
/// block_size), then gathers every share's slots at the root (sharing.gather) and writes them into
/// `slots` there: the root's slots end as one process running [0, total) would leave them. True
/// on the root, false elsewhere (whose slots hold only its own share).
bool run_shared(const path_sharing& sharing, long long total, long long block_size,
                const std::function<void(path_range)>& run, const std::vector<path_slots>& slots);

/// Checks options against a problem and resolves the defaults; throws ncsde::invalid_argument.
struct convergence_plan {
  std::vector<std::size_t> schemes;  ///< registry indices (builtin_schemes), in the order asked for
  std::vector<int> extended;  ///< indices into schemes of the weak series that use weak_paths
  int first_level = 0, levels = 0;
  long long paths = 0;          ///< paths of the full pass
  long long weak_paths = 0;     ///< ≥ paths; paths ≥ `paths` run the extended weak series only
  long long n_fine = 0;         ///< fine steps
  long long control_ratio = 1;  ///< fine steps per step of the EM control (no exact solution)
  std::vector<bool> has_weak;   ///< per scheme: a weak series is produced
  /// Per scheme: its weak samples are f(V_dt) − Z with Z the EM martingale control on the same path
  /// and step (EM itself, and the schemes coupled to it; see the file comment).
  std::vector<bool> martingale_weak;
  double span = 0.0;  ///< T − t0
  bool exact = false;
  bool strong = true, weak = true;
  bool martingale =
      false;              ///< EM's weak error uses the martingale control (problem has weak_value)
  bool control = false;   ///< the full pass computes the control Y (some weak series couples to it)
  bool iterated = false;  ///< the grid carries iterated integrals
  /// Weak series from the coupled differences f(X_dt) − f(X_dt/2) of successive levels (no
  /// control; the kernel stores f(X_dt) itself).
  bool differences = false;
  bool extended_iterated = false;  ///< the extended pass's grid carries them (a scheme there asks)
  int threads = 1;
  std::uint64_t seed = 0;
  milstein_derivative derivative =
      milstein_derivative::automatic;  ///< of the studied Milstein schemes
  /// No series to produce (only weak errors asked for, of schemes that have none on this problem).
  bool empty() const {
    return !strong && std::find(has_weak.begin(), has_weak.end(), true) == has_weak.end();
  }
  int values_per_path() const { return static_cast<int>(schemes.size()) * levels * 2; }
  int extended_values_per_path() const { return static_cast<int>(extended.size()) * levels; }
};
/// What the plan and the summaries read of a convergence_problem: its name, horizon, defaults,
/// noise class and which closed forms it has (problem_facts_of).
struct problem_facts {
  std::string name;
  double t0 = 0.0, t_end = 1.0;
  int first_level = 1, levels = 5;
  long long paths = 1000, weak_paths = 0;
  int reference_ratio = 16, control_ratio = 4;
  noise_class noise = noise_class::general;  ///< the effective class
  bool exact = false;                        ///< a pathwise solution
  bool euler_weak = false, weak_functional = false, weak_value = false;
};
template <class S>
problem_facts problem_facts_of(const convergence_problem<S>& cp) {
  return {cp.name,
          cp.prob.t0,
          cp.prob.t_end,
          cp.first_level,
          cp.levels,
          cp.paths,
          cp.weak_paths,
          cp.reference_ratio,
          cp.control_ratio,
          cp.effective_noise(),
          static_cast<bool>(cp.exact),
          static_cast<bool>(cp.euler_weak),
          static_cast<bool>(cp.weak.f),
          static_cast<bool>(cp.weak_value)};
}

convergence_plan make_convergence_plan(const problem_facts& problem,
                                       const convergence_options& opt);

/// The per-path values of a run: `values` for paths [0, paths) (path-major, then scheme, level,
/// kind), `extended` for paths [paths, weak_paths) (path-major, then extended scheme, level), the
/// cone exits of both, and per scheme the offset that turns the mean weak sample into the weak
/// error; with the names the series carry.
struct convergence_values {
  std::vector<double> values, extended;
  std::vector<long long> exits, extended_exits;
  std::vector<double> weak_offsets;
  std::string error_measure, reference, functional_name;
};

/// Summaries and fits from the per-path values.
std::vector<convergence_series> summarize_convergence(const problem_facts& problem,
                                                      const convergence_plan& plan,
                                                      const convergence_values& v,
                                                      const convergence_options& opt,
                                                      double seconds);

/// Observer of an Euler–Maruyama run accumulating the martingale control Z (see the file comment):
/// at each grid time t_{n+1} it adds u_{n+1}(V_{n+1}) − E_n[u_{n+1}(V_{n+1})], where the
/// conditional expectation comes from the stepper applied to V_n with the zero and the unit
/// increments.
template <class S>
class martingale_observer {
 public:
  /// values[i] = u(t0 + i·stride·dt, ·) on the finest grid; this run's step is stride fine-grid
  /// steps.
  martingale_observer(const S& sde, const std::vector<std::function<double(const matrix&)>>& values,
                      long long stride, double dt, int k)
      : m_sde(sde), m_values(values), m_stride(stride), m_k(k) {
    m_inc.dt = dt;
    m_inc.dw = vector::Zero(k);
  }

  void operator()(const matrix& v, double t) {
    if (m_calls++ > 0) {
      const auto& u = m_values[static_cast<std::size_t>((m_calls - 1) * m_stride)];
      // A = step(V_n, 0), C_j = step(V_n, e_j) − A, symmetrised as the integration engine does.
      m_inc.dw.setZero();
      m_a = m_previous;
      m_em.do_step(m_sde, m_a, m_t, m_inc);
      symmetrize(m_a);
      m_zero.setZero(v.rows(), v.cols());
      const double u0 = u(m_zero);
      double quadratic = 0.0;
      for (int j = 0; j < m_k; ++j) {
        m_inc.dw(j) = 1.0;
        m_c = m_previous;
        m_em.do_step(m_sde, m_c, m_t, m_inc);
        m_inc.dw(j) = 0.0;
        symmetrize(m_c);
        m_c -= m_a;
        quadratic += 0.5 * (u(m_c) + u((-m_c).eval())) - u0;  // q(C_j) by polarisation
      }
      m_z += u(v) - (u(m_a) + m_inc.dt * quadratic);
    }
    m_previous = v;
    m_t = t;
  }

  double z() const { return m_z; }

 private:
  const S& m_sde;
  const std::vector<std::function<double(const matrix&)>>& m_values;
  long long m_stride;
  int m_k;
  long long m_calls = 0;
  double m_z = 0.0, m_t = 0.0;
  noise_increment m_inc;
  matrix m_previous, m_a, m_c, m_zero;
  euler_maruyama<> m_em;
};

/// Everything one worker thread needs for a path: its own copies of the SDE and the steppers.
template <class S>
class convergence_kernel {
 public:
  convergence_kernel(const convergence_problem<S>& cp, const convergence_plan& plan,
                     const std::vector<std::function<double(const matrix&)>>& values)
      : m_cp(cp),
        m_plan(plan),
        m_values(values),
        m_sde(cp.prob.sde),
        m_steppers(builtin_schemes::make_tuple(
            [&]<class St>(std::type_identity<St>) { return configured<St>(plan.derivative); })),
        m_martingale_runs(static_cast<std::size_t>(plan.levels)) {
    m_options.policy = pd_policy::count;
    m_k = m_sde.noise_dimension(static_cast<int>(cp.prob.v0.rows()));
  }

  /// Full pass: fills values[(scheme·levels + level)·2 + kind] (kind 0 strong, 1 weak without
  /// offset) and the cone exits per scheme for path p. A run that does not reach T (blown up or
  /// stopped) gives NaN values, which leave the path out of that series (summarize_convergence);
  /// a reference or control that does not reach T gives NaN values to every series.
  void run(long long p, double* values, long long* exits) {
    const double h = m_plan.span / static_cast<double>(m_plan.n_fine);
    const brownian_grid grid(random_stream(m_plan.seed, static_cast<std::uint64_t>(p)), m_k,
                             m_plan.n_fine, h, m_plan.iterated);
    constexpr double nan = std::numeric_limits<double>::quiet_NaN();
    for (martingale_run& r : m_martingale_runs) r.done = false;
    matrix v_ref;
    double control = 0.0;
    long long ignored = 0;
    bool reference_ok = true;
    if (m_plan.exact) {
      v_ref = m_cp.exact(m_cp.prob.v0, grid.value(m_plan.n_fine), m_plan.span);
      if (m_plan.control) control = m_cp.weak.f(v_ref);
    } else {
      if (m_plan.strong) reference_ok = run_scheme(m_reference, grid, 1, p, ignored, v_ref);
      if (m_plan.control) {
        matrix v_control;
        if (run_scheme(m_em, grid, m_plan.control_ratio, p, ignored, v_control))
          control = m_cp.weak.f(v_control);
        else
          reference_ok = false;
      }
    }
    const int levels = m_plan.levels;
    for (std::size_t s = 0; s < m_plan.schemes.size(); ++s) {
      exits[s] = 0;
      if (!m_plan.strong && !m_plan.has_weak[s]) continue;  // this scheme has no series
      for (int l = 0; l < levels; ++l) {
        const long long steps = 1LL << (m_plan.first_level + l);
        const long long ratio = m_plan.n_fine / steps;
        double* out = values + (static_cast<std::ptrdiff_t>(s) * levels + l) * 2;
        if (!reference_ok) {
          out[0] = out[1] = nan;
          continue;
        }
        matrix v;
        bool ok = true;
        bool z_ok = true;
        double z = 0.0;  // the EM martingale control (martingale_weak schemes)
        builtin_schemes::visit(m_plan.schemes[s], [&]<class St>(std::type_identity<St>) {
          if constexpr (std::is_same_v<St, control_stepper>) {
            if (m_plan.martingale_weak[s]) {
              const martingale_run& r = em_martingale(grid, l, p);
              ok = r.ok;
              v = r.v;
              z = r.z;
              exits[s] += r.exits;
              return;
            }
          }
          ok = run_scheme(std::get<St>(m_steppers), grid, ratio, p, exits[s], v);
          if (ok && m_plan.martingale_weak[s]) {
            const martingale_run& r = em_martingale(grid, l, p);
            z_ok = r.ok;
            z = r.z;
          }
        });
        if (!ok) {
          out[0] = out[1] = nan;
          continue;
        }
        out[0] = !m_plan.strong            ? 0.0
                 : m_cp.strong_error.error ? m_cp.strong_error.error(v, v_ref)
                                           : (v - v_ref).norm();
        if (!m_plan.has_weak[s])
          out[1] = 0.0;
        else if (m_plan.martingale_weak[s])
          out[1] = z_ok ? m_cp.weak.f(v) - z : nan;  // an EM control that failed: no sample
        else
          out[1] = m_cp.weak.f(v) - control;
      }
    }
  }

  /// Extended pass: weak values (without offset) of the extended schemes only,
  /// values[e·levels + level], and their cone exits exits[e], from a grid without iterated
  /// integrals unless one of them asks for them. NaN for a run (or control) that does not reach T.
  void run_extended(long long p, double* values, long long* exits) {
    const double h = m_plan.span / static_cast<double>(m_plan.n_fine);
    const brownian_grid grid(random_stream(m_plan.seed, static_cast<std::uint64_t>(p)), m_k,
                             m_plan.n_fine, h, m_plan.extended_iterated);
    constexpr double nan = std::numeric_limits<double>::quiet_NaN();
    long long ignored = 0;
    double control = nan;
    if (m_plan.differences) {
      control = 0.0;  // the series take differences of f(X_dt) between levels
    } else if (m_plan.exact) {
      control = m_cp.weak.f(m_cp.exact(m_cp.prob.v0, grid.value(m_plan.n_fine), m_plan.span));
    } else {
      matrix v_control;
      if (run_scheme(m_em, grid, m_plan.control_ratio, p, ignored, v_control))
        control = m_cp.weak.f(v_control);
    }
    const int levels = m_plan.levels;
    for (std::size_t e = 0; e < m_plan.extended.size(); ++e) {
      const std::size_t scheme = m_plan.schemes[static_cast<std::size_t>(m_plan.extended[e])];
      exits[e] = 0;
      for (int l = 0; l < levels; ++l) {
        const long long ratio = m_plan.n_fine / (1LL << (m_plan.first_level + l));
        matrix v;
        const bool ok = builtin_schemes::visit(scheme, [&]<class St>(std::type_identity<St>) {
          return run_scheme(std::get<St>(m_steppers), grid, ratio, p, exits[e], v);
        });
        values[static_cast<std::ptrdiff_t>(e) * levels + l] = ok ? m_cp.weak.f(v) - control : nan;
      }
    }
  }

 private:
  /// The EM run at one level with its martingale control Z (once per path and level, shared by
  /// EM's own series and the schemes coupled to it).
  struct martingale_run {
    bool done = false;
    bool ok = false;
    double z = 0.0;
    long long exits = 0;
    matrix v;
  };

  const martingale_run& em_martingale(const brownian_grid& grid, int l, long long p) {
    martingale_run& r = m_martingale_runs[static_cast<std::size_t>(l)];
    if (!r.done) {
      const long long steps = 1LL << (m_plan.first_level + l);
      martingale_observer<S> obs(m_sde, m_values, (1LL << (m_plan.levels - 1 - l)),
                                 m_plan.span / static_cast<double>(steps), m_k);
      r.exits = 0;
      r.ok = run_scheme(std::get<control_stepper>(m_steppers), grid, m_plan.n_fine / steps, p,
                        r.exits, r.v, obs);
      r.z = obs.z();
      r.done = true;
    }
    return r;
  }

  /// A stepper of scheme St with the study's options: the Milstein derivative form for the schemes
  /// that take one, default-constructed otherwise.
  template <class St>
  static St configured(milstein_derivative derivative) {
    if constexpr (std::is_constructible_v<St, milstein_derivative>)
      return St(derivative);
    else
      return St{};
  }

  template <class Stepper>
  bool run_scheme(Stepper& stepper, const brownian_grid& grid, long long ratio, long long p,
                  long long& exits, matrix& v) {
    null_observer obs;
    return run_scheme(stepper, grid, ratio, p, exits, v, obs);
  }

  /// v = the state at T of `stepper` at `ratio` fine steps a step, counting its cone exits; false
  /// (v unspecified) when the path blew up or stopped before T.
  template <class Stepper, class Observer>
  bool run_scheme(Stepper& stepper, const brownian_grid& grid, long long ratio, long long p,
                  long long& exits, matrix& v, Observer& obs) {
    const long long steps = m_plan.n_fine / ratio;
    const step_grid sg(m_cp.prob.t0, m_cp.prob.t_end, m_plan.span / static_cast<double>(steps));
    grid_brownian_source source(grid, ratio);
    path_integrator<Stepper, S, grid_brownian_source, Observer> engine(stepper, m_sde, source,
                                                                       m_options, p);
    path_result r = engine.run(m_cp.prob.v0, sg, obs);
    exits += r.pd.violations;
    v = std::move(r.v);
    return r.status == path_status::completed;
  }

  const convergence_problem<S>& m_cp;
  const convergence_plan& m_plan;
  const std::vector<std::function<double(const matrix&)>>& m_values;
  S m_sde;
  int m_k = 0;
  integrate_options m_options;
  builtin_schemes::tuple m_steppers;  ///< one stepper of each scheme, by type
  control_stepper m_em;               ///< the EM control on the fine grid (no pathwise solution)
  milstein<> m_reference;             ///< the fine-grid reference (derivative form automatic)
  std::vector<martingale_run> m_martingale_runs;  ///< [level], this path's
};

/// The executor's worker of run_convergence: path p writes only its own slots of the value arrays.
template <class S>
struct convergence_worker {
  using block_type = path_range;
  convergence_kernel<S> kernel;
  const convergence_plan& plan;
  double* values;
  double* extended;
  long long* exits;
  long long* extended_exits;
  path_range begin_block(const block_info& info) const { return info.range; }
  void run_path(long long p, path_range&) {
    const long long ns = static_cast<long long>(plan.schemes.size());
    const long long ne = static_cast<long long>(plan.extended.size());
    if (p < plan.paths)
      kernel.run(p, values + p * plan.values_per_path(), exits + p * ns);
    else
      kernel.run_extended(p, extended + (p - plan.paths) * plan.extended_values_per_path(),
                          extended_exits + (p - plan.paths) * ne);
  }
};

}  // namespace detail

/// Runs the study of `cp` (see the file comment) and returns one series per selected scheme and
/// kind (strong first; none when only weak errors are asked for, of schemes that have no weak
/// series on the problem, see above). Throws ncsde::invalid_argument for bad options
/// (paths < 2, levels outside [3, 16], threads < 0, more than 2^24 fine steps, no scheme selected, a
/// scheme name the registry does not list, a problem without exact solution and without
/// euler_weak) and rethrows the error of the lowest-numbered failing path.
template <class S>
  requires Sde<S>
std::vector<convergence_series> run_convergence(const convergence_problem<S>& cp,
                                                const convergence_options& opt) {
  const auto start = std::chrono::steady_clock::now();
  {
    integrate_options count_policy, resolved;
    count_policy.policy = pd_policy::count;
    detail::validate_problem("convergence (" + cp.name + ")", cp.prob, count_policy,
                             /*iterated=*/true, resolved);
  }
  const detail::problem_facts facts = detail::problem_facts_of(cp);
  const detail::convergence_plan plan = detail::make_convergence_plan(facts, opt);
  if (plan.empty()) return {};
  // u(t_i, ·) on the finest coarse grid, shared read-only by all workers.
  std::vector<std::function<double(const matrix&)>> values;
  if (plan.martingale) {
    const long long finest = 1LL << (plan.first_level + plan.levels - 1);
    for (long long i = 0; i <= finest; ++i)
      values.push_back(cp.weak_value(cp.prob.t0 + plan.span * static_cast<double>(i) /
                                                      static_cast<double>(finest)));
  }
  const int per_path = plan.values_per_path();
  const int per_extended = plan.extended_values_per_path();
  const std::size_t ns = plan.schemes.size();
  const long long total = plan.weak_paths;
  detail::convergence_values out;
  std::vector<double>& values_per_path = out.values;
  std::vector<double>& extended = out.extended;
  std::vector<long long>& exits = out.exits;
  std::vector<long long>& extended_exits = out.extended_exits;
  values_per_path.resize(static_cast<std::size_t>(plan.paths) * static_cast<std::size_t>(per_path));
  extended.resize(static_cast<std::size_t>(total - plan.paths) *
                  static_cast<std::size_t>(per_extended));
  exits.resize(static_cast<std::size_t>(plan.paths) * ns);
  extended_exits.resize(static_cast<std::size_t>(total - plan.paths) * plan.extended.size());

  // Path p writes only its own slots of the arrays above, so the blocks need no reduction and any
  // block size gives the same results.
  executor_options xopt;
  xopt.threads = plan.threads;
  xopt.block_size = 8;
  xopt.progress = opt.progress;
  xopt.label = "convergence " + cp.name;
  auto run = [&](path_range range) {
    execute(
        range, xopt,
        [&] {
          return detail::convergence_worker<S>{detail::convergence_kernel<S>(cp, plan, values),
                                               plan,
                                               values_per_path.data(),
                                               extended.data(),
                                               exits.data(),
                                               extended_exits.data()};
        },
        [](const block_info&, path_range&&) {});
  };
  if (!opt.sharing) {
    run(path_range{0, total});
  } else {
    const auto slots = [](auto& v, long long per_path, long long first, long long last) {
      return detail::path_slots{v.data(), sizeof(v[0]) * static_cast<std::size_t>(per_path), first,
                                last};
    };
    const auto ns_ll = static_cast<long long>(ns);
    const auto next = static_cast<long long>(plan.extended.size());
    if (!detail::run_shared(
            *opt.sharing, total, xopt.block_size, run,
            {slots(values_per_path, per_path, 0, plan.paths),
             slots(extended, per_extended, plan.paths, total), slots(exits, ns_ll, 0, plan.paths),
             slots(extended_exits, next, plan.paths, total)}))
      return {};
  }
  // Per scheme: the mean of the weak samples minus E f(V_T) is mean(sample) + offset.
  const double h_control = plan.span / static_cast<double>(plan.n_fine / plan.control_ratio);
  const double control_offset =
      plan.control && !plan.exact
          ? cp.euler_weak(h_control, plan.n_fine / plan.control_ratio) - cp.weak_exact
          : 0.0;
  for (std::size_t s = 0; s < plan.schemes.size(); ++s)
    out.weak_offsets.push_back(plan.martingale_weak[s] ? -cp.weak_exact : control_offset);
  out.reference =
      plan.exact ? std::string("exact")
                 : detail::format_message("milstein on the fine grid (dt/{})", cp.reference_ratio);
  out.error_measure = cp.strong_error.name;
  out.functional_name = cp.weak.name;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return detail::summarize_convergence(facts, plan, out, opt, seconds);
}

// ---- orders of the adaptive step controllers at matched cost ----
//
// The study of run_adaptive_convergence, on a problem with a pathwise exact solution. Path p is
// the Brownian tree of stream (seed, p) below a grid of step dt_grid = (T − t0)/2^first_level
// (stream_brownian, brownian.hpp): an adaptive run at any tolerance reads its pieces off that
// tree, so W_T = the sum of the grid steps' increments whatever the tolerance, and the exact
// solution X(W_T) is the reference of every level. Per tolerance tol_l = tol_0/2^l the run records
// the strong error ‖X_tol(T) − X(W_T)‖_F, the weak sample f(X_tol(T)) − f(X(W_T)) (the coupled
// control with E f(X(W_T)) = E f(X_T) exactly, so its mean is the weak error, unbiased) and the
// cost, the pieces the controller took (path_result::steps). Beside it, on the same paths, the
// fixed-step ladder of the problem and one level finer: the tree read at depths 0 … fixed_levels − 1
// (tree_brownian_source), i.e. dt = dt_grid/2^d, whose cost is its number of steps.
//
// Order at matched cost: error ∝ cost^{−p}, p the weighted least-squares slope of log error on
// log(1/mean cost) (fit_line_weighted, as run_convergence). For fixed steps cost ∝ 1/dt, so p is the
// order in dt and the two are comparable. The slope of log error on log tol is reported too (how
// the error follows the tolerance, which need not be how it follows the work). The fixed error at
// an adaptive level's cost is interpolated linearly in log–log between the fixed levels around it
// (the fixed fit line outside their range), and ratio = fixed error / adaptive error at that
// cost: > 1 when the controller buys more accuracy per step than uniform steps. The cost is the
// steps taken; the doubling controller also computes one full step per two halves, which it only
// compares, so its work in drift and noise evaluations is 1.5× its steps.

/// Options of run_adaptive_convergence; the bad ones are ncsde::invalid_argument naming them.
struct adaptive_convergence_options {
  std::uint64_t seed = 1;
  long long paths = 0;                             ///< 0: the problem's default; otherwise ≥ 2
  int threads = 0;                                 ///< 0: all hardware threads
  std::string scheme = "em";                       ///< a registry name (schemes.hpp)
  step_control control = step_control::increment;  ///< increment or doubling (not fixed)
  double tolerance = 0.0;  ///< tol_0 in (0, 1]; 0: the problem's adaptive_tolerance
  int levels = 5;          ///< number of tolerances tol_0/2^l, in [3, 16]
  int max_depth = 40;      ///< the controller's largest number of halvings of a grid step, 1..50
  int first_level = -1;    ///< dt_grid = (T − t0)/2^first_level; −1: the problem's first_level
  int fixed_levels = 0;  ///< fixed steps dt_grid/2^d, d < fixed_levels; 0: the problem's levels + 1
  bool strong = true;
  bool weak = true;
  milstein_derivative derivative = milstein_derivative::automatic;
  progress_mode progress = progress_mode::automatic;
  /// As convergence_options::sharing: the root returns the series, the other processes nothing.
  std::shared_ptr<const path_sharing> sharing;
};

/// One series of the adaptive study: a scheme's strong or weak errors under one controller over the
/// tolerances, the fixed-step errors on the same paths, and the fits (see above).
struct adaptive_convergence_series {
  std::string problem;
  std::string scheme;
  step_control control = step_control::increment;
  error_kind kind = error_kind::strong;
  long long paths = 0;         ///< paths the errors average over
  long long failed_paths = 0;  ///< paths left out: some run blew up or stopped before T
  std::uint64_t seed = 0;
  double grid_dt = 0.0;  ///< the grid step, the largest adaptive step
  int max_depth = 0;
  std::vector<double> tolerances, cost, cost_stderr, errors, errors_stderr;
  linear_fit fit;            ///< slope of log error on log(1/cost): the order at matched cost
  linear_fit fit_tolerance;  ///< slope of log error on log tol
  std::vector<double> fixed_cost, fixed_errors, fixed_errors_stderr;
  linear_fit fixed_fit;  ///< slope of log error on log(1/steps) = the fixed-step order in dt
  /// Per tolerance: the fixed-step error at that level's cost, and fixed error / adaptive error.
  std::vector<double> fixed_at_cost, ratio;
  std::vector<bool> extrapolated;  ///< the cost lies outside the fixed ladder's costs
  double expected = 0.0;           ///< the scheme's fixed-step order on the problem's noise class
  long long unresolved = 0;        ///< pieces at the depth limit (all paths and levels)
  int deepest = 0;                 ///< deepest piece of any path and level
  std::string error_measure, functional;
  double seconds = 0.0;
};

namespace detail {

/// Fit of log error on x with weights from the standard errors (σ = stderr/error, the standard
/// error of log error), as run_convergence fits its series: fit_line_weighted, fit_line when some
/// standard error is zero, NaN slope when some error is not positive.
linear_fit fit_log_errors(const std::vector<double>& x, const std::vector<double>& errors,
                          const std::vector<double>& errors_stderr);

/// Checked and resolved options of run_adaptive_convergence.
struct adaptive_plan {
  std::size_t scheme = 0;
  step_control control = step_control::increment;
  std::vector<double> tolerances;
  int max_depth = 40;
  int first_level = 0;
  int fixed_levels = 0;
  long long grid_steps = 0;
  double span = 0.0, grid_dt = 0.0;
  long long paths = 0;
  int threads = 1;
  std::uint64_t seed = 0;
  bool strong = true, weak = true;
  milstein_derivative derivative = milstein_derivative::automatic;
  int levels() const { return static_cast<int>(tolerances.size()); }
  /// Per path: (strong, weak, cost, unresolved, deepest) per tolerance, then (strong, weak) per
  /// fixed level.
  int values_per_path() const { return 5 * levels() + 2 * fixed_levels; }
};
adaptive_plan make_adaptive_plan(const std::string& name, double t0, double t_end, int first_level,
                                 int levels, long long paths, double default_tolerance, bool exact,
                                 bool has_weak_functional, const adaptive_convergence_options& opt);

std::vector<adaptive_convergence_series> summarize_adaptive(
    const std::string& name, noise_class noise, const adaptive_plan& plan,
    const std::vector<double>& values, const std::string& error_measure,
    const std::string& functional_name, double seconds);

/// One worker's SDE and stepper copies; run(p, out) fills path p's values (NaN: the path is out).
template <class S>
class adaptive_kernel {
 public:
  adaptive_kernel(const convergence_problem<S>& cp, const adaptive_plan& plan)
      : m_cp(cp),
        m_plan(plan),
        m_steppers(builtin_schemes::make_tuple([&]<class St>(std::type_identity<St>) {
          if constexpr (std::is_constructible_v<St, milstein_derivative>)
            return St(plan.derivative);
          else
            return St{};
        })) {
    m_k = cp.prob.sde.noise_dimension(static_cast<int>(cp.prob.v0.rows()));
    m_fixed.policy = pd_policy::count;
    m_fixed.control = step_control::fixed;
  }

  void run(long long p, double* out) {
    const random_stream stream(m_plan.seed, static_cast<std::uint64_t>(p));
    const step_grid grid(m_cp.prob.t0, m_cp.prob.t_end, m_plan.grid_dt);
    // W_T: the sum of the grid steps' increments, the roots of the tree every run reads.
    stream_brownian roots(stream, m_k);
    vector w = vector::Zero(m_k);
    for (long long i = 0; i < grid.steps; ++i) {
      roots.increment(static_cast<std::uint64_t>(i), grid.step_size(i), false, m_inc);
      w += m_inc.dw;
    }
    const matrix v_ref = m_cp.exact(m_cp.prob.v0, w, m_plan.span);
    const double f_ref = m_plan.weak ? m_cp.weak.f(v_ref) : 0.0;
    constexpr double nan = std::numeric_limits<double>::quiet_NaN();
    auto record = [&](const path_result& r, double* slot) {
      if (r.status != path_status::completed) {
        slot[0] = slot[1] = nan;
        return;
      }
      slot[0] = !m_plan.strong            ? 0.0
                : m_cp.strong_error.error ? m_cp.strong_error.error(r.v, v_ref)
                                          : (r.v - v_ref).norm();
      slot[1] = m_plan.weak ? m_cp.weak.f(r.v) - f_ref : 0.0;
    };
    builtin_schemes::visit(m_plan.scheme, [&]<class St>(std::type_identity<St>) {
      St& stepper = std::get<St>(m_steppers);
      integrate_options opt = m_fixed;
      opt.control = m_plan.control;
      opt.max_depth = m_plan.max_depth;
      for (int l = 0; l < m_plan.levels(); ++l) {
        opt.tolerance = m_plan.tolerances[static_cast<std::size_t>(l)];
        stream_brownian source(stream, m_k);
        null_observer obs;
        const path_result r =
            integrate_path(stepper, m_cp.prob, m_cp.prob.v0, 0, {}, grid, opt, source, p, obs);
        double* slot = out + 5 * l;
        record(r, slot);
        slot[2] = static_cast<double>(r.steps);
        slot[3] = static_cast<double>(r.stepping.unresolved);
        slot[4] = static_cast<double>(r.stepping.deepest);
      }
      for (int d = 0; d < m_plan.fixed_levels; ++d) {
        tree_brownian_source source(stream, m_k, m_plan.grid_dt, d);
        const step_grid fine(m_cp.prob.t0, m_cp.prob.t_end, source.dt());
        null_observer obs;
        const path_result r =
            integrate_path(stepper, m_cp.prob, m_cp.prob.v0, 0, {}, fine, m_fixed, source, p, obs);
        record(r, out + 5 * m_plan.levels() + 2 * d);
      }
    });
  }

 private:
  const convergence_problem<S>& m_cp;
  const adaptive_plan& m_plan;
  builtin_schemes::tuple m_steppers;
  integrate_options m_fixed;
  noise_increment m_inc;
  int m_k = 0;
};

template <class S>
struct adaptive_worker {
  using block_type = path_range;
  adaptive_kernel<S> kernel;
  const adaptive_plan& plan;
  double* values;
  path_range begin_block(const block_info& info) const { return info.range; }
  void run_path(long long p, path_range&) { kernel.run(p, values + p * plan.values_per_path()); }
};

}  // namespace detail

/// Runs the adaptive study of `cp` (see above): one series per kind asked for (strong first).
/// Throws ncsde::invalid_argument for a problem without pathwise exact solution (or, for weak
/// errors, without weak functional), a scheme the registry does not list, the fixed controller,
/// tol_0 outside (0, 1], levels outside [3, 16], max_depth outside [1, 50], first_level outside
/// [0, 20], fixed_levels outside [2, 16] (or 0), paths < 2, threads < 0. Reproducible as
/// run_convergence: path p uses only stream (seed, p), values are summed in path order.
template <class S>
  requires Sde<S>
std::vector<adaptive_convergence_series> run_adaptive_convergence(
    const convergence_problem<S>& cp, const adaptive_convergence_options& opt) {
  const auto start = std::chrono::steady_clock::now();
  const std::string where = "adaptive convergence (" + cp.name + ")";
  const detail::adaptive_plan plan = detail::make_adaptive_plan(
      cp.name, cp.prob.t0, cp.prob.t_end, cp.first_level, cp.levels, cp.paths,
      cp.adaptive_tolerance, static_cast<bool>(cp.exact), static_cast<bool>(cp.weak.f), opt);
  {
    integrate_options count_policy, resolved;
    count_policy.policy = pd_policy::count;
    detail::validate_problem(where, cp.prob, count_policy, /*iterated=*/true, resolved);
    // The work limits (integrate.hpp, step_control) at every tolerance, before any path runs.
    resolved.control = plan.control;
    resolved.max_depth = plan.max_depth;
    const step_grid grid(cp.prob.t0, cp.prob.t_end, plan.grid_dt);
    for (const double tol : plan.tolerances) {
      resolved.tolerance = tol;
      detail::check_work(where, cp.prob.sde, cp.prob.v0, grid, resolved, "max_path_steps");
    }
  }
  std::vector<double> values(static_cast<std::size_t>(plan.paths) *
                             static_cast<std::size_t>(plan.values_per_path()));
  executor_options xopt;
  xopt.threads = plan.threads;
  xopt.block_size = 8;
  xopt.progress = opt.progress;
  xopt.label = "adaptive convergence " + cp.name;
  auto run = [&](path_range range) {
    execute(
        range, xopt,
        [&] {
          return detail::adaptive_worker<S>{detail::adaptive_kernel<S>(cp, plan), plan,
                                            values.data()};
        },
        [](const block_info&, path_range&&) {});
  };
  if (!opt.sharing)
    run(path_range{0, plan.paths});
  else if (!detail::run_shared(
               *opt.sharing, plan.paths, xopt.block_size, run,
               {detail::path_slots{
                   values.data(), sizeof(double) * static_cast<std::size_t>(plan.values_per_path()),
                   0, plan.paths}}))
    return {};
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return detail::summarize_adaptive(cp.name, cp.effective_noise(), plan, values,
                                    cp.strong_error.name, cp.weak.name, seconds);
}

/// The series as a JSON array of objects: problem, scheme, step_control, kind, tolerances, cost,
/// cost_stderr, errors, errors_stderr, order, stderr, ci_low, ci_high (order at matched cost),
/// order_tolerance, order_tolerance_stderr, fixed_steps, fixed_errors, fixed_errors_stderr,
/// fixed_order, fixed_stderr, fixed_ci_low, fixed_ci_high, fixed_at_cost, ratio, extrapolated,
/// expected, paths, failed_paths, seed, grid_dt, max_depth, unresolved, deepest, reference,
/// functional (weak), seconds. Non-finite numbers become null.
std::string adaptive_convergence_json(const std::vector<adaptive_convergence_series>& series,
                                      int indent = 2);

/// The series as a text table: problem, scheme, controller, kind, order at matched cost ± stderr,
/// its 95% CI, the slope against tol, the fixed-step order ± stderr, the costs, and the ratio fixed
/// / adaptive error at the finest tolerance's cost.
std::string adaptive_convergence_table(const std::vector<adaptive_convergence_series>& series);

/// A study with its problem type erased: what the `ncsde convergence` command lists and runs.
struct convergence_study {
  std::string name;
  std::string description;
  std::function<std::vector<convergence_series>(const convergence_options&)> run;
  /// The adaptive study (run_adaptive_convergence); empty for a problem without pathwise solution.
  std::function<std::vector<adaptive_convergence_series>(const adaptive_convergence_options&)>
      run_adaptive;
};

template <class S>
convergence_study make_convergence_study(convergence_problem<S> cp) {
  convergence_study study;
  study.name = cp.name;
  study.description = cp.description;
  auto shared = std::make_shared<const convergence_problem<S>>(std::move(cp));
  study.run = [shared](const convergence_options& opt) { return run_convergence(*shared, opt); };
  if (shared->exact)
    study.run_adaptive = [shared](const adaptive_convergence_options& opt) {
      return run_adaptive_convergence(*shared, opt);
    };
  return study;
}

/// The problems of analytic.hpp with the horizons, initial states, coefficients, levels and path
/// counts of the default `ncsde convergence` run (chosen so that every error is in its asymptotic
/// regime and far above the Monte Carlo floor, and every slope's standard error is below 0.03):
/// gbm, hadamard, matrix-gbm, noncommutative, linear-covariance, wishart.
std::vector<convergence_study> standard_convergence_studies();

/// Every field of a series' result, the one description that convergence_json writes as JSON and
/// the Python module (ncsde.convergence) as a dict: problem, scheme, kind, order, stderr, ci_low,
/// ci_high (the fitted slope), expected, tolerance, pass, unresolved, pre_asymptotic,
/// local_slopes, paths, seed, dts, errors, errors_stderr, cone_exits, failed_paths, error_measure,
/// reference, functional, seconds. unresolved, pre_asymptotic, local_slopes, failed_paths,
/// error_measure and functional are in the document only where they say something.
std::vector<report_field> series_fields(const convergence_series& s);

/// The series as a JSON array of objects, one per series with its series_fields (those in the
/// document). Non-finite numbers become null.
std::string convergence_json(const std::vector<convergence_series>& series, int indent = 2);

/// The series as a text table: problem, scheme, kind, order, stderr, 95% CI, expected, pass/fail.
std::string convergence_table(const std::vector<convergence_series>& series);

}  // namespace ncsde
