#pragma once
/// The batched path engine: a scheme's lane form (LaneScheme below: Euler–Maruyama, both Milstein
/// schemes and the predictor–corrector declare one in their headers) on a
/// group of batch_width paths at once, for SDEs with a batched form (BatchedSde, lanes.hpp).
/// run_ensemble() uses it when ensemble_options::batched is set and the run allows it
/// (batched_run_allowed below, and the scheme's own lane_form::applies); every other run, and every
/// SDE without a batched form, steps path by path (integrate.hpp), unchanged.
///
/// Per-path semantics are those of path_integrator, lane by lane:
///  - lane l is path first + l and draws its increments from the same stream (seed, path) at the
///    same addresses (lane_normals_at gives random_stream's numbers bit for bit; the increments of
///    up to four steps of the group are drawn in one call); a scheme that reads Lévy areas gets
///    each lane's increment from the per-path engine's own source (stream_brownian on the lane's
///    stream, the run's levy_area and area_depth), iterated integrals included;
///  - each lane has its own blow-up, stop condition, symmetrisation, cone check and pd_policy, its
///    own counters and its own status, decided by the one settle (integrate.hpp) that decides a
///    path's steps; a lane that has stopped is masked (its row is reset to V0 and its results
///    kept) while the others go on, and a lane that is projected is projected alone;
///  - the step is that of the scheme, in its operations and their order: the scheme's lane form
///    evaluates the coefficients it needs on lane blocks (lane_step: drift_lanes and
///    diffusion_lanes, shape-checked) and hands its terms, in the order of its per-path
///    expression, to lane_step::form_trial (detail::lane_combine_columns: the sum, the
///    symmetrisation and the measurements settle reads, in one pass).
/// So a path's result is that of the unbatched path up to the SDE's batched coefficients: when
/// drift_lanes and diffusion_lanes perform the per-path operations in the same order the results
/// are bit-identical. The library's SDEs all do (gbm and the other analytic problems, the built-in
/// models): their per-path products and factorisations run the lane arithmetic's operations
/// (dense_kernels.hpp). A user's SDE whose batched form sums in another order agrees to round-off
/// while its paths stay off the cone's boundary. The cone check uses lane_cholesky, which is the
/// per-path check's factorisation (detail::cholesky_factor) lane by lane, so classification is the
/// per-path one; lanes it does not factor are classified by the per-path checker.
/// Lanes never interact, so results do not depend on the grouping, the thread count or the path
/// range (ensemble.hpp).
///
/// Not batched (these run path by path): schemes without a lane form, or whose lane form does not
/// apply to the run (milstein_commutative with the analytic derivative form: it would need a
/// batched diffusion_derivative), adaptive steps (step_control other than fixed: lanes would no
/// longer share a step), pd_policy refine (a refined lane would take its own sub-steps), and
/// sources other than the default (seed, path) stream.
#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <limits>
#include <type_traits>
#include <vector>

#include "ncsde/brownian.hpp"
#include "ncsde/error.hpp"
#include "ncsde/integrate.hpp"
#include "ncsde/lanes.hpp"
#include "ncsde/psd.hpp"
#include "ncsde/random.hpp"
#include "ncsde/state_space.hpp"

namespace ncsde {

/// A run the batched engine can take: fixed steps and a pd_policy other than refine.
inline bool batched_run_allowed(const integrate_options& resolved) {
  return resolved.control == step_control::fixed && resolved.policy != pd_policy::refine;
}

namespace detail {

/// The lowest failing lane of a group and its error (lane −1: none).
struct lane_failure {
  int lane = -1;
  std::exception_ptr error;

  void record(int l, std::exception_ptr e) {
    if (lane < 0 || l < lane) {
      lane = l;
      error = std::move(e);
    }
  }
};

/// One step of a lane group as a scheme's lane form sees it (LaneScheme): the group's states v()
/// (lane_width_of<S> × coordinates()), the increments dw() (× noise_dimension(), variance h()),
/// the step [t(), t() + h()]; the SDE's batched coefficients at any block of states, sized and
/// shape-checked; combine, for the scheme's intermediate states; and form_trial, which forms every
/// lane's trial state from the scheme's terms and measures it for settle. The lane form names its
/// coefficient blocks (coefficient()) in the order the per-path scheme checks them for finiteness,
/// so that a lane whose coefficient is not finite fails with the per-path message. Made by the
/// engine (lane_integrator), one per worker.
template <class S>
class lane_step {
 public:
  static constexpr int W = lane_width_of<S>;
  using block = lane_block_of<W>;
  using column = lane_column_of<W>;

  /// A coefficient block of the step as the lane form named it.
  struct named_block {
    const char* which;
    const block* x;
  };
  static constexpr int max_coefficients = 4;

  lane_step(const S& sde, const block& v, const block& dw, block& trial, column& asymmetry,
            column& nonfinite, column& size)
      : m_sde(sde),
        m_v(v),
        m_dw(dw),
        m_trial(trial),
        m_asymmetry(asymmetry),
        m_nonfinite(nonfinite),
        m_size(size) {}

  const block& v() const { return m_v; }
  const block& dw() const { return m_dw; }
  double t() const { return m_t; }
  double h() const { return m_h; }
  Eigen::Index coordinates() const { return m_rows * m_cols; }
  int noise_dimension() const { return m_k; }
  /// Lane l's iterated Itô integrals I_(j,l) of the step (k × k), the matrix the per-path engine's
  /// increment carries (stream_brownian on the lane's own stream): for schemes whose noise request
  /// reads Lévy areas only. A lane that is not live has zeros.
  const matrix& iterated(int l) const {
    NCSDE_ASSERT(m_increments != nullptr, "lane_step::iterated: the scheme reads no Levy areas");
    return m_increments[static_cast<std::size_t>(l)].iterated;
  }

  /// out = b(t, X_l) in row l: S::drift_lanes, out sized W × coordinates().
  void drift(const block& x, block& out, double t) const {
    out.resize(W, coordinates());
    m_sde.drift_lanes(x, out, t);
    check_shape(out, "drift_lanes");
  }
  /// out = G(t, X_l) ξ_l in row l: S::diffusion_lanes, out sized W × coordinates().
  void diffusion(const block& x, const block& xi, block& out, double t) const {
    out.resize(W, coordinates());
    m_sde.diffusion_lanes(x, xi, out, t);
    check_shape(out, "diffusion_lanes");
  }

  /// x as a term of form_trial; scale·x.
  static detail::lane_term term(const block& x) { return detail::lane_term{x.data()}; }
  static detail::lane_term term(double scale, const block& x) {
    return detail::lane_term{x.data(), scale, true};
  }

  /// The trial state of every lane: v + (((t_0 + t_1) + t_2) + …) coordinate by coordinate, the
  /// sums from the left as the per-path scheme's expression (detail::lane_combine_columns), then
  /// on symmetric spaces symmetrised as symmetrize_measured, and measured for settle.
  void form_trial(std::initializer_list<detail::lane_term> terms) {
    combine_into(m_v.data(), terms, m_trial, m_asymmetry, m_nonfinite, m_size);
  }

  /// An intermediate state of the scheme (a predictor): out = ((t_0 + t_1) + …) coordinate by
  /// coordinate, the sums from the left (detail::lane_combine_columns without v), then on
  /// symmetric spaces symmetrised as symmetrize() (symmetric.hpp), as the per-path scheme does.
  void combine(block& out, std::initializer_list<detail::lane_term> terms) {
    combine_into(nullptr, terms, out, m_scratch_asymmetry, m_scratch_nonfinite, m_scratch_size);
  }

  /// Names x, a coefficient block of this step that the trial depends on, `which` as the per-path
  /// scheme names it ("drift", "noise map"); blocks are checked in the order they are named.
  void coefficient(const char* which, const block& x) {
    NCSDE_ASSERT(m_count < max_coefficients, "lane_step::coefficient: too many coefficients");
    m_coefficients[static_cast<std::size_t>(m_count++)] = named_block{which, &x};
  }

  /// The engine's: a new step from the current v() over [t, t + h]; increments: the W lanes'
  /// increments with their iterated integrals, or nullptr when the scheme reads none.
  void begin(double t, double h, Eigen::Index rows, Eigen::Index cols, int k,
             const noise_increment* increments = nullptr) {
    m_increments = increments;
    m_t = t;
    m_h = h;
    m_rows = rows;
    m_cols = cols;
    m_k = k;
    m_count = 0;
  }
  /// The engine's: the coefficient blocks named in this step, in order.
  const named_block* coefficients_begin() const { return m_coefficients.data(); }
  const named_block* coefficients_end() const { return m_coefficients.data() + m_count; }

 private:
  void combine_into(const double* v, std::initializer_list<detail::lane_term> terms, block& out,
                    column& asymmetry, column& nonfinite, column& size) const {
    NCSDE_ASSERT(terms.size() >= 1 && terms.size() <= detail::max_lane_terms,
                 "lane_step: a combination of 1 to max_lane_terms terms");
    out.resize(W, coordinates());
    detail::lane_combination_args a;
    a.v = v;
    for (const detail::lane_term& t : terms) a.terms[static_cast<std::size_t>(a.count++)] = t;
    a.lanes = W;
    a.k = coordinates();
    a.m = is_symmetric_space(state_space_of<S>) ? static_cast<int>(m_rows) : 0;
    a.out = out.data();
    a.asymmetry = asymmetry.data();
    a.nonfinite = nonfinite.data();
    a.size = size.data();
    detail::lane_combine_columns(a);
  }

  void check_shape(const block& out, const char* which) const {
    if (out.cols() != coordinates())
      throw evaluation_error(format_message(
          "integrate: {} returned {} coordinates per lane for a state of {} coordinates", which,
          out.cols(), coordinates()));
  }

  const S& m_sde;
  const block& m_v;
  const block& m_dw;
  block& m_trial;
  column &m_asymmetry, &m_nonfinite, &m_size;
  column m_scratch_asymmetry, m_scratch_nonfinite, m_scratch_size;  ///< combine()'s, unread
  double m_t = 0.0, m_h = 0.0;
  Eigen::Index m_rows = 0, m_cols = 0;
  int m_k = 0;
  const noise_increment* m_increments = nullptr;
  std::array<named_block, max_coefficients> m_coefficients{};
  int m_count = 0;
};

}  // namespace detail

/// Stepper has a batched form for S (the batched engine, above): S has one (BatchedSde), and the
/// scheme declares Stepper::lane_form<S>, made from the stepper, with
///   lane_form<S>::applies(stepper): whether it steps this stepper's runs (its options may ask for
///       a form the lanes do not take), and
///   form.step(s): one step of the group, s a detail::lane_step<S>: the coefficients it needs,
///       named in the per-path order of checks, then s.form_trial with its terms in the order of
///       its per-path expression.
/// Adding a batched scheme is its header (the lane form) and its registry line (schemes.hpp).
template <class Stepper, class S>
concept LaneScheme =
    BatchedSde<S> && requires { typename Stepper::template lane_form<S>; } &&
    std::constructible_from<typename Stepper::template lane_form<S>, const Stepper&> &&
    requires(const Stepper& st, typename Stepper::template lane_form<S>& form,
             detail::lane_step<S>& s) {
      { Stepper::template lane_form<S>::applies(st) } -> std::convertible_to<bool>;
      form.step(s);
    };

namespace detail {

/// The scheme Stepper (a LaneScheme for S, stepping State) on lane groups of W = lane_width_of<S>
/// paths of an SDE S with a batched form, states of type State (a compile-time-sized matrix or
/// vector, or the dynamic type). One per worker thread: it holds the lane blocks, the scheme's
/// lane form and the per-lane checker.
template <class S, class State, class Stepper>
  requires LaneScheme<Stepper, S>
class lane_integrator {
 public:
  static constexpr state_space space = state_space_of<S>;
  static constexpr int W = lane_width_of<S>;
  using block = lane_block_of<W>;
  using column = lane_column_of<W>;
  using mask = lane_mask_of<W>;
  using result_type = basic_path_result<State>;
  /// The scheme reads Lévy areas: each lane's increment, iterated integrals included, is that of
  /// the per-path engine's source, stream_brownian on the lane's (seed, path) stream with the
  /// run's levy_area and area_depth, drawn by the same code.
  static constexpr bool reads_areas = Stepper::request.needs_iterated_integrals();

  /// opt: the run's resolved options (batched_run_allowed); k: the noise dimension; the stepper's
  /// lane form must apply (lane_form::applies).
  lane_integrator(const Stepper& stepper, const S& sde, const integrate_options& opt,
                  std::uint64_t seed, int k)
      : m_sde(sde),
        m_opt(opt),
        m_seed(seed),
        m_k(k),
        m_form(stepper),
        m_step(m_sde, m_v, m_dw, m_trial, m_asymmetry, m_nonfinite, m_size) {}
  // m_step refers to the members above.
  lane_integrator(const lane_integrator&) = delete;
  lane_integrator& operator=(const lane_integrator&) = delete;

  /// Runs the paths first, …, first + lanes − 1 (1 ≤ lanes ≤ W) from v0 on `grid` into
  /// results[0, lanes); errors go to `failure` (the lowest failing lane), and a failed lane's
  /// result is unspecified.
  void run(long long first, int lanes, const State& v0, const step_grid& grid,
           std::array<result_type, W>& results, lane_failure& failure) {
    const Eigen::Index rows = v0.rows(), cols = v0.cols(), K = rows * cols;
    m_first = first;
    m_rows = rows;
    m_cols = cols;
    // Whether a lane may stop: the stop condition, or the stop level (square states only).
    const bool has_level = m_opt.stop_level < std::numeric_limits<double>::infinity();
    const bool stops = static_cast<bool>(m_opt.stop_condition) || has_level;
    m_v.resize(W, K);
    m_trial.resize(W, K);
    // The increments of up to `ahead` steps at once (lane_normals_at: more streams side by side);
    // row s·W + l of m_ahead is lane l's at step ahead_first + s.
    const int ahead = steps_ahead();
    m_ahead.setZero(static_cast<Eigen::Index>(ahead) * W, m_k);
    long long ahead_first = 0, ahead_count = 0;
    m_dw.resize(W, m_k);
    if constexpr (reads_areas) {
      m_sources.clear();
      for (int l = 0; l < lanes; ++l)
        m_sources.emplace_back(random_stream(m_seed, static_cast<std::uint64_t>(first + l)), m_k,
                               m_opt.levy_area, m_opt.area_depth);
      m_dw.setZero();
      for (noise_increment& inc : m_increments) {
        inc.dt = 0.0;
        inc.dw.setZero(m_k);
        inc.iterated.setZero(m_k, m_k);
        inc.has_iterated = true;
      }
    }
    for (Eigen::Index b = 0; b < cols; ++b)
      for (Eigen::Index a = 0; a < rows; ++a) m_v.col(a + b * rows).setConstant(v0(a, b));
    const block start = m_v;
    std::array<std::uint64_t, W> paths{};
    std::array<bool, W> active{};
    for (int l = 0; l < W; ++l) {
      paths[static_cast<std::size_t>(l)] = static_cast<std::uint64_t>(first + l);
      active[static_cast<std::size_t>(l)] = l < lanes;
      result_type& r = results[static_cast<std::size_t>(l)];  // reset (r.v is set by finish)
      r.status = path_status::completed;
      r.t_stop = grid.t0;
      r.steps = 0;
      r.pd = pd_counters{};
      r.stepping = step_stats{};
      r.saved.clear();
    }
    int alive = lanes;
    std::size_t next_save = 0;
    auto save_due = [&](long long i) {
      while (next_save < grid.save_steps.size() && grid.save_steps[next_save] == i) {
        for (int l = 0; l < lanes; ++l)
          if (active[static_cast<std::size_t>(l)])
            results[static_cast<std::size_t>(l)].saved.push_back(lane_state(m_v, l));
        ++next_save;
      }
    };
    auto finish = [&](int l, path_status st) {
      result_type& r = results[static_cast<std::size_t>(l)];
      r.status = st;
      r.v = lane_state(m_v, l);
      active[static_cast<std::size_t>(l)] = false;
      m_v.row(l) = start.row(l);  // a benign state for the masked lane
      --alive;
    };
    auto fail = [&](int l, std::exception_ptr e) {
      failure.record(l, std::move(e));
      active[static_cast<std::size_t>(l)] = false;
      m_v.row(l) = start.row(l);
      --alive;
    };
    // An error of the whole group, not attributable to a lane: the group's first live path.
    auto fail_group = [&](std::exception_ptr e) {
      for (int l = 0; l < lanes; ++l)
        if (active[static_cast<std::size_t>(l)]) {
          fail(l, std::move(e));
          return;
        }
    };
    save_due(0);
    for (long long i = 0; i < grid.steps && alive > 0; ++i) {
      const double t = grid.time(i);
      const double h = grid.step_size(i);
      try {
        if constexpr (reads_areas) {
          // A live lane's increment by its own source; a lane that is not live keeps zeros or its
          // last increment (its row is V0 and its results are not read).
          for (int l = 0; l < lanes; ++l) {
            if (!active[static_cast<std::size_t>(l)]) continue;
            noise_increment& inc = m_increments[static_cast<std::size_t>(l)];
            m_sources[static_cast<std::size_t>(l)].increment(static_cast<std::uint64_t>(i), h, true,
                                                             inc);
            m_dw.row(l) = inc.dw.transpose().array();
          }
        } else {
          if (i >= ahead_first + ahead_count) {
            ahead_first = i;
            ahead_count = std::min<long long>(ahead, grid.steps - i);
            draw_ahead(paths, lanes, i, static_cast<int>(ahead_count), ahead);
          }
          m_dw = m_ahead.middleRows(static_cast<Eigen::Index>(i - ahead_first) * W, W) *
                 std::sqrt(h);  // as stream_brownian: dw = z·√dt
        }
        // The scheme's step: its coefficients, then the trial states and their measurements.
        m_step.begin(t, h, rows, cols, m_k, reads_areas ? m_increments.data() : nullptr);
        m_form.step(m_step);
      } catch (...) {
        fail_group(std::current_exception());
        return;
      }
      // Per lane, the first coefficient (in the per-path order of checks) that is not finite, or
      // nullptr. A lane's trial state is finite only if its coefficients are (V is finite and
      // dt > 0: an infinite or NaN coefficient makes the trial's entries infinite or NaN,
      // symmetrised or not), so the coefficients are scanned only when some trial is not finite.
      std::array<const char*, W> bad{};
      if (!(m_nonfinite == 0.0).all())
        for (auto c = m_step.coefficients_begin(); c != m_step.coefficients_end(); ++c) {
          const mask ok = finite_lanes(*c->x);
          for (int l = 0; l < W; ++l)
            if (!ok(l) && bad[static_cast<std::size_t>(l)] == nullptr)
              bad[static_cast<std::size_t>(l)] = c->which;
        }
      if constexpr (space == state_space::psd_cone) {
        // lane_cholesky is the per-path check's factorisation (detail::cholesky_factor) lane by
        // lane, bit for bit: a lane it factors is the per-path check's positive-definite state.
        lane_cholesky(m_trial, static_cast<int>(rows), m_factor, m_factored);
      }
      // The common step: every lane of the group live and settling as is (plain_group), no stop
      // condition: the group's state moves as one block, which is what settle() and the row copy
      // below do lane by lane in that case.
      if (alive == W && !stops && plain_group(bad)) {
        m_v.swap(m_trial);
        // The cone check's factors are those of the new states: the SDE's next noise map may take
        // them instead of factorising again.
        if constexpr (space == state_space::psd_cone && BatchedSdeWithCholeskyHint<S>)
          m_sde.use_cholesky_lanes(m_v, m_factor, m_factored);
        const double t_next = grid.time(i + 1);
        for (result_type& r : results) {
          r.steps = i + 1;
          r.t_stop = t_next;
        }
        save_due(i + 1);
        continue;
      }
      for (int l = 0; l < lanes; ++l) {
        if (!active[static_cast<std::size_t>(l)]) continue;
        result_type& r = results[static_cast<std::size_t>(l)];
        const long long path = first + l;
        if (const char* which = bad[static_cast<std::size_t>(l)]) {
          fail(l,
               std::make_exception_ptr(coefficient_error(which, non_finite_coefficient{}.what, path,
                                                         i, t, m_v.row(l).abs().maxCoeff())));
          continue;
        }
        try {
          const path_status st = settle(l, r, t, h, i);
          r.steps = i + 1;
          r.t_stop = grid.time(i + 1);
          if (st == path_status::blown_up) {
            r.t_stop = t + h;
            m_v.row(l) = m_trial.row(l);
            finish(l, st);
            continue;
          }
          m_v.row(l) = m_trial.row(l);
          if (stops) {
            lane_into(m_v, l, m_dynamic);
            if ((m_opt.stop_condition && m_opt.stop_condition(m_dynamic, r.t_stop)) ||
                (has_level &&
                 step_rules::passes_stop_level(m_dynamic.data(), static_cast<int>(m_dynamic.rows()),
                                               m_opt.stop_level)))
              finish(l, path_status::stopped);
          }
        } catch (...) {
          fail(l, std::current_exception());
        }
      }
      save_due(i + 1);
    }
    for (int l = 0; l < lanes; ++l)
      if (active[static_cast<std::size_t>(l)]) {
        results[static_cast<std::size_t>(l)].t_stop = grid.time(grid.steps);
        finish(l, path_status::completed);
      }
  }

 private:
  /// Steps whose increments one draw_ahead computes: as many as lane_normals_at takes lane groups
  /// (32 streams: 4 steps of 8 lanes), while their normals stay within 32 KiB; 1 for wide groups.
  int steps_ahead() const {
    constexpr long long budget = 4096;  // doubles
    const long long fit = budget / (static_cast<long long>(W) * std::max(m_k, 1));
    return static_cast<int>(std::clamp<long long>(fit, 1, std::max(1, lane_stream_capacity / W)));
  }

  /// The increments' normals of steps first_step, …, first_step + count − 1 into m_ahead (count ≤
  /// ahead, the row blocks of m_ahead). One lane_normals_at call for all W lanes of every step when
  /// they fit (the lanes past `lanes` are computed too, as streams of the paths that would be there,
  /// and never read by a live lane); a wider group takes one step at a time in chunks of at most
  /// lane_stream_capacity of its live lanes.
  void draw_ahead(const std::array<std::uint64_t, W>& paths, int lanes, long long first_step,
                  int count, int ahead) {
    const auto stride = static_cast<std::ptrdiff_t>(ahead) * W;
    // (Groups wider than lane_stream_capacity never fit: the branch is not compiled for them.)
    if constexpr (W <= lane_stream_capacity) {
      if (count * W <= lane_stream_capacity) {
        std::array<std::uint64_t, lane_stream_capacity> stream_paths{}, stream_steps{};
        for (int s = 0; s < count; ++s)
          for (int l = 0; l < W; ++l) {
            stream_paths[static_cast<std::size_t>(s * W + l)] = paths[static_cast<std::size_t>(l)];
            stream_steps[static_cast<std::size_t>(s * W + l)] =
                static_cast<std::uint64_t>(first_step + s);
          }
        lane_normals_at(m_seed, stream_paths.data(), stream_steps.data(), count * W,
                        random_domain::increments, 0, m_ahead.data(), m_k, stride);
        return;
      }
    }
    for (int c = 0; c < lanes; c += lane_stream_capacity)
      lane_normals(m_seed, paths.data() + c, std::min(lane_stream_capacity, lanes - c),
                   random_domain::increments, static_cast<std::uint64_t>(first_step), 0,
                   m_ahead.data() + c, m_k, stride);
  }

  /// Lane l of `block` as a state.
  State lane_state(const block& lanes, int l) const {
    State x(m_rows, m_cols);
    lane_into(lanes, l, x);
    return x;
  }
  /// Lane l of `block` into x (sized already, or resized once).
  template <class Out>
  void lane_into(const block& lanes, int l, Out& x) const {
    x.resize(m_rows, m_cols);
    for (Eigen::Index b = 0; b < m_cols; ++b)
      for (Eigen::Index a = 0; a < m_rows; ++a) x(a, b) = lanes(l, a + b * m_rows);
  }
  void store_lane(const State& x, int l) {
    for (Eigen::Index b = 0; b < m_cols; ++b)
      for (Eigen::Index a = 0; a < m_rows; ++a) m_trial(l, a + b * m_rows) = x(a, b);
  }

  /// Whether all coordinates of each lane of x are finite, a column at a time: x − x is 0 for a
  /// finite x and NaN otherwise, and a sum with a NaN in it is NaN.
  mask finite_lanes(const block& x) {
    m_finite_sum.setZero();
    for (Eigen::Index c = 0; c < x.cols(); ++c) m_finite_sum += x.col(c) - x.col(c);
    return m_finite_sum == 0.0;
  }

  /// Lane l's trial measurements (form_trial's), as settle reads them.
  trial_measurements measured(int l) const {
    return trial_measurements{m_nonfinite(l) == 0.0, m_size(l), m_asymmetry(l)};
  }

  /// Whether settle() completes every lane without a change to its trial state or its counters:
  /// coefficients finite (`bad`: none named) and settles_unchanged (integrate.hpp), on the cone
  /// with the lanes factored by lane_cholesky as the positive-definite ones.
  bool plain_group(const std::array<const char*, W>& bad) const {
    for (int l = 0; l < W; ++l)
      if (bad[static_cast<std::size_t>(l)] != nullptr ||
          !settles_unchanged<space>(measured(l), m_factored(l), m_opt))
        return false;
    return true;
  }

  /// The one settle (integrate.hpp) for lane l: blow-up, symmetry, the cone and its policy; on
  /// success the trial row is the new state. A lane factored by lane_cholesky is positive definite
  /// without the per-path checker (the same verdict, see the top of this header).
  path_status settle(int l, result_type& r, double t, double h, long long grid_step) {
    const step_site at{first_path_of(l), grid_step, t, h};
    if (settle_measured<space>(measured(l), m_opt, at)) return path_status::blown_up;
    if constexpr (space == state_space::psd_cone) {
      if (m_factored(l)) return path_status::completed;
      lane_into(m_trial, l, m_x);
      const cone_fate fate = settle_cone(m_checker.check(m_x), m_opt, r.pd, at, [&] {
        m_checker.project(m_x, m_opt.pd_floor);
        store_lane(m_x, l);
      });
      if (fate == cone_fate::refine)
        throw invalid_argument("integrate: pd policy 'refine' is not taken by the batched engine");
    }
    return path_status::completed;
  }

  long long first_path_of(int l) const { return m_first + l; }

  S m_sde;  ///< a copy per worker (coefficients may keep mutable workspaces)
  const integrate_options& m_opt;
  std::uint64_t m_seed;
  int m_k;
  long long m_first = 0;
  Eigen::Index m_rows = 0, m_cols = 0;
  block m_v, m_trial, m_dw, m_factor;
  Eigen::ArrayXXd m_ahead;  ///< (ahead·W) × k: the normals of the steps drawn ahead
  std::vector<stream_brownian> m_sources;         ///< reads_areas: the live lanes' sources
  std::array<noise_increment, W> m_increments{};  ///< reads_areas: the lanes' increments
  /// lane_cholesky's verdict on the trial states (m_factor): the lanes the cone check passes by it.
  mask m_factored = mask::Constant(false);
  column m_asymmetry = column::Zero(), m_size = column::Zero();
  column m_nonfinite = column::Zero(), m_finite_sum = column::Zero();
  typename Stepper::template lane_form<S> m_form;  ///< the scheme's step and workspaces
  lane_step<S> m_step;                             ///< what m_form sees of the step
  State m_x;
  matrix m_dynamic;
  std::conditional_t<space == state_space::psd_cone, basic_psd_checker<State>, std::monostate>
      m_checker;
};

}  // namespace detail
}  // namespace ncsde
