#pragma once
/// The batched path engine: Euler–Maruyama or the commutative Milstein scheme on a group of
/// batch_width paths at once, for SDEs with a batched form (BatchedSde, lanes.hpp). run_ensemble()
/// uses it when ensemble_options::batched is set and the run allows it (batched_run_allowed below); every other run, and every SDE without a
/// batched form, steps path by path (integrate.hpp), unchanged.
///
/// Per-path semantics are those of path_integrator, lane by lane:
///  - lane l is path first + l and draws its increments from the same stream (seed, path) at the
///    same addresses (lane_normals_at gives random_stream's numbers bit for bit; the increments of
///    up to four steps of the group are drawn in one call);
///  - each lane has its own blow-up, stop condition, symmetrisation, cone check and pd_policy, its
///    own counters and its own status; a lane that has stopped is masked (its row is reset to V0 and
///    its results kept) while the others go on, and a lane that is projected is projected alone;
///  - the step is that of the scheme, in its operations and their order: V + (b dt + G dW) for
///    euler_maruyama; for milstein_commutative the derivative-free form (milstein.hpp),
///    V + ((b dt + G dW) + M) with M = (Σ_j G(Ῡ_j) I_(j,·) − G(V) Σ_j I_(j,·)) / √dt,
///    Ῡ_j = (V + b dt) + √dt G_j, I_(j,l) = ½ dW_j dW_l − ½ dt δ_jl, the G_j = G(V) e_j formed by
///    diffusion_lanes at the unit vectors (2k + 2 batched noise evaluations a step); each lane's I
///    and Σ_j I_(j,·) are formed by the per-path stepper's own expressions (O(k²) per lane), so a
///    lane's numbers are the per-path ones bit for bit wherever diffusion_lanes computes in the
///    per-path order.
/// So a path's result is that of the unbatched path up to the SDE's batched coefficients: when
/// drift_lanes and diffusion_lanes perform the per-path operations in the same order (gbm, the
/// scalar and vector examples) the results are bit-identical; otherwise (a matrix product summed in
/// another order than Eigen's) they agree to round-off while the paths stay off the cone's
/// boundary (a coefficient that switches branch there, as gram_factor switches from the Cholesky
/// factor to the PSD square root, may take the other branch on a boundary state). The cone check on fixed sizes m ∈
/// fixed_sizes uses lane_cholesky, which is small_cholesky lane by lane, so classification is the
/// per-path one; on ncsde::matrix states (Eigen::LLT per path) a lane passes by lane_cholesky only
/// with a wide margin over round-off. Lanes that do not pass are classified by the per-path
/// checker.
/// Lanes never interact, so results do not depend on the grouping, the thread count or the path
/// range (ensemble.hpp).
///
/// Not batched (these run path by path): other schemes (and milstein_commutative with the
/// analytic derivative form: it would need a batched diffusion_derivative), adaptive steps
/// (step_control other than fixed: lanes would no longer share a step), pd_policy refine (a refined lane would take its own
/// sub-steps), and sources other than the default (seed, path) stream.
#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <type_traits>
#include <vector>

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

/// The schemes the batched engine steps.
enum class lane_scheme { euler_maruyama, milstein_commutative };

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

/// `Scheme` on lane groups of W = lane_width_of<S> paths of an SDE S with a batched form, states of type State (a
/// compile-time-sized matrix or vector, or the dynamic type). One per worker thread: it holds the
/// lane blocks and the per-lane checker.
template <class S, class State, lane_scheme Scheme = lane_scheme::euler_maruyama>
class lane_integrator {
 public:
  static constexpr state_space space = state_space_of<S>;
  static constexpr int W = lane_width_of<S>;
  using block = lane_block_of<W>;
  using column = lane_column_of<W>;
  using mask = lane_mask_of<W>;
  using result_type = basic_path_result<State>;

  /// opt: the run's resolved options (batched_run_allowed); k: the noise dimension.
  lane_integrator(const S& sde, const integrate_options& opt, std::uint64_t seed, int k)
      : m_sde(sde), m_opt(opt), m_seed(seed), m_k(k) {}

  /// Runs the paths first, …, first + lanes − 1 (1 ≤ lanes ≤ W) from v0 on `grid` into
  /// results[0, lanes); errors go to `failure` (the lowest failing lane), and a failed lane's
  /// result is unspecified.
  void run(long long first, int lanes, const State& v0, const step_grid& grid,
           std::array<result_type, W>& results, lane_failure& failure) {
    const Eigen::Index rows = v0.rows(), cols = v0.cols(), K = rows * cols;
    m_first = first;
    m_rows = rows;
    m_cols = cols;
    m_v.resize(W, K);
    m_trial.resize(W, K);
    m_drift.resize(W, K);
    m_noise.resize(W, K);
    // The increments of up to `ahead` steps at once (lane_normals_at: more streams side by side);
    // row s·W + l of m_ahead is lane l's at step ahead_first + s.
    const int ahead = steps_ahead();
    m_ahead.setZero(static_cast<Eigen::Index>(ahead) * W, m_k);
    long long ahead_first = 0, ahead_count = 0;
    m_dw.resize(W, m_k);
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
        if (i >= ahead_first + ahead_count) {
          ahead_first = i;
          ahead_count = std::min<long long>(ahead, grid.steps - i);
          draw_ahead(paths, lanes, i, static_cast<int>(ahead_count), ahead);
        }
        m_dw = m_ahead.middleRows(static_cast<Eigen::Index>(i - ahead_first) * W, W) *
               std::sqrt(h);  // as stream_brownian: dw = z·√dt
        m_sde.drift_lanes(m_v, m_drift, t);
        m_sde.diffusion_lanes(m_v, m_dw, m_noise, t);
      } catch (...) {
        fail_group(std::current_exception());
        return;
      }
      check_shape(m_drift, "drift_lanes", K);
      check_shape(m_noise, "diffusion_lanes", K);
      if constexpr (Scheme == lane_scheme::milstein_commutative) {
        try {
          milstein_term(t, h, K);
        } catch (...) {
          fail_group(std::current_exception());
          return;
        }
      }
      form_trial(h, K);
      // Which lanes' coefficients are finite. A lane's trial state is finite only if they are (V
      // is finite and dt > 0: an infinite or NaN coefficient makes its entries of dt·b, G dW or M
      // infinite or NaN, and so the trial's, symmetrised or not), so the coefficients are scanned
      // only when some trial is not finite.
      mask drift_ok = mask::Constant(true), noise_ok = mask::Constant(true);
      if (!(m_nonfinite == 0.0).all()) {
        drift_ok = finite_lanes(m_drift);
        noise_ok = finite_lanes(m_noise);
        if constexpr (Scheme == lane_scheme::milstein_commutative)
          noise_ok = noise_ok && finite_lanes(m_term);
      }
      if constexpr (space == state_space::psd_cone) {
        lane_cholesky(m_trial, static_cast<int>(rows), m_factor, m_cholesky_ok);
        m_factored = m_cholesky_ok;
        // The per-path check factorises ncsde::matrix states with Eigen::LLT, whose sums run in
        // another order: there a lane counts as positive definite only with a wide margin (for
        // m = 1 the two factorisations are the same operation); the other lanes go to the per-path
        // checker.
        if constexpr (State::RowsAtCompileTime == Eigen::Dynamic)
          if (rows > 1) require_pivot_margin(m_trial, static_cast<int>(rows), m_factor, m_factored);
      }
      // The common step: every lane of the group live and settling as is (plain_group), no stop
      // condition: the group's state moves as one block, which is what settle() and the row copy
      // below do lane by lane in that case.
      if (alive == W && !m_opt.stop_condition && plain_group(drift_ok, noise_ok)) {
        m_v.swap(m_trial);
        // The cone check's factors are those of the new states: the SDE's next noise map may take
        // them instead of factorising again.
        if constexpr (space == state_space::psd_cone && BatchedSdeWithCholeskyHint<S>)
          m_sde.use_cholesky_lanes(m_v, m_factor, m_cholesky_ok);
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
        if (!drift_ok(l) || !noise_ok(l)) {
          fail(l, std::make_exception_ptr(coefficient_error(drift_ok(l) ? "noise map" : "drift",
                                                            non_finite_coefficient{}.what, path, i,
                                                            t, m_v.row(l).abs().maxCoeff())));
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
          if (m_opt.stop_condition) {
            lane_into(m_v, l, m_dynamic);
            if (m_opt.stop_condition(m_dynamic, r.t_stop)) finish(l, path_status::stopped);
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
    for (int c = 0; c < lanes; c += lane_stream_capacity)
      lane_normals(m_seed, paths.data() + c, std::min(lane_stream_capacity, lanes - c),
                   random_domain::increments, static_cast<std::uint64_t>(first_step), 0,
                   m_ahead.data() + c, m_k, stride);
  }

  /// The commutative Milstein correction M of every lane into m_term (derivative-free form, in the
  /// per-path stepper's operations: see the top of this header), from m_v, m_drift and m_dw.
  void milstein_term(double t, double h, Eigen::Index K) {
    const double sqrt_h = std::sqrt(h);
    m_unit.setZero(W, m_k);
    m_columns.resize(static_cast<std::size_t>(m_k));
    for (int j = 0; j < m_k; ++j) {
      m_unit.col(j).setConstant(1.0);
      m_columns[static_cast<std::size_t>(j)].resize(W, K);
      m_sde.diffusion_lanes(m_v, m_unit, m_columns[static_cast<std::size_t>(j)], t);
      m_unit.col(j).setZero();
      check_shape(m_columns[static_cast<std::size_t>(j)], "diffusion_lanes", K);
    }
    // Each lane's I and Σ_j I_(j,·) by the per-path stepper's own expressions on its own types, so
    // that they are its numbers bit for bit (milstein.hpp: the outer product, the diagonal, Eigen's
    // column sums).
    m_lane_iterated.resize(W);
    m_sums.resize(W, m_k);
    for (int l = 0; l < W; ++l) {
      m_lane_dw = m_dw.row(l).transpose();
      matrix& it = m_lane_iterated[static_cast<std::size_t>(l)];
      it.noalias() = 0.5 * m_lane_dw * m_lane_dw.transpose();
      it.diagonal().array() -= 0.5 * h;
      m_lane_sum = it.colwise().sum().transpose();  // into a vector, as the per-path stepper
      m_sums.row(l) = m_lane_sum.transpose().array();
    }
    m_term.setZero(W, K);
    m_row.resize(W, m_k);
    m_work.resize(W, K);
    for (int j = 0; j < m_k; ++j) {
      for (int l = 0; l < W; ++l)
        m_row.row(l) = m_lane_iterated[static_cast<std::size_t>(l)].row(j).array();
      m_support = m_v + h * m_drift + sqrt_h * m_columns[static_cast<std::size_t>(j)];
      m_sde.diffusion_lanes(m_support, m_row, m_work, t);
      check_shape(m_work, "diffusion_lanes", K);
      m_term += m_work;
    }
    m_row = m_sums;
    m_sde.diffusion_lanes(m_v, m_row, m_work, t);
    check_shape(m_work, "diffusion_lanes", K);
    m_term -= m_work;
    m_term /= sqrt_h;
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

  static void check_shape(const block& out, const char* which, Eigen::Index K) {
    if (out.cols() != K)
      throw evaluation_error(format_message(
          "integrate: {} returned {} coordinates per lane for a state of {} coordinates", which,
          out.cols(), K));
  }

  /// The trial states of every lane and the checks' measurements (lane_trial_columns, in the
  /// per-path operations; settle() then decides lane by lane): euler_maruyama v + (dt·b + G dW),
  /// milstein_commutative v + ((dt·b + G dW) + M); on symmetric spaces symmetrised as
  /// symmetrize_measured (state_space.hpp) with its measure in m_asymmetry; whether each lane is
  /// finite (m_nonfinite) and its max |X| (m_size).
  void form_trial(double h, Eigen::Index K) {
    m_trial.resize(W, K);
    detail::lane_trial_args a{};
    a.v = m_v.data();
    a.drift = m_drift.data();
    a.noise = m_noise.data();
    a.term = Scheme == lane_scheme::milstein_commutative ? m_term.data() : nullptr;
    a.h = h;
    a.lanes = W;
    a.k = K;
    a.m = is_symmetric_space(space) ? static_cast<int>(m_rows) : 0;
    a.trial = m_trial.data();
    a.asymmetry = m_asymmetry.data();
    a.nonfinite = m_nonfinite.data();
    a.size = m_size.data();
    detail::lane_trial_columns(a);
  }

  /// Whether settle() completes every lane without a change to its trial state or its counters:
  /// coefficients and trial finite, no blow-up, symmetric within tolerance, and on the cone
  /// factored by lane_cholesky (settle()'s first tests, on the whole group).
  bool plain_group(const mask& drift_ok, const mask& noise_ok) const {
    mask ok = drift_ok && noise_ok && m_nonfinite == 0.0 && m_size <= m_opt.blowup_threshold;
    if constexpr (is_symmetric_space(space))
      ok = ok && !(m_asymmetry > symmetry_tolerance * m_size.max(1.0));
    if constexpr (space == state_space::psd_cone) ok = ok && m_factored;
    return ok.all();
  }

  /// path_integrator::settle for lane l: blow-up, symmetry, the cone and its policy; on success the
  /// trial row is the new state.
  path_status settle(int l, result_type& r, double t, double h, long long grid_step) {
    const double asymmetry = m_asymmetry(l);
    const bool finite = m_nonfinite(l) == 0.0;
    const double size = m_size(l);
    if (!finite || !(size <= m_opt.blowup_threshold)) return path_status::blown_up;
    if constexpr (is_symmetric_space(space)) {
      if (asymmetry > symmetry_tolerance * std::max(1.0, size))
        throw asymmetry_error(first_path_of(l), grid_step, t, asymmetry,
                              symmetry_tolerance * std::max(1.0, size), space);
    }
    if constexpr (space != state_space::psd_cone) {
      return path_status::completed;
    } else {
      if (m_factored(l)) return path_status::completed;
      lane_into(m_trial, l, m_x);
      const psd_result pr = m_checker.check(m_x);
      if (pr.status == psd_status::boundary) ++r.pd.boundary;
      if (pr.status != psd_status::outside) return path_status::completed;
      ++r.pd.violations;
      if (!(r.pd.min_eigenvalue <= pr.min_eigenvalue)) r.pd.min_eigenvalue = pr.min_eigenvalue;
      switch (m_opt.policy) {
        case pd_policy::automatic:  // resolved to count
        case pd_policy::count:
          return path_status::completed;
        case pd_policy::project:
          m_checker.project(m_x, m_opt.pd_floor);
          ++r.pd.projected;
          store_lane(m_x, l);
          return path_status::completed;
        case pd_policy::throw_error:
          throw cone_exit_error(first_path_of(l), grid_step, t + h, pr.min_eigenvalue);
        case pd_policy::refine:
          break;
      }
      throw invalid_argument("integrate: pd policy 'refine' is not taken by the batched engine");
    }
  }

  long long first_path_of(int l) const { return m_first + l; }

  S m_sde;  ///< a copy per worker (coefficients may keep mutable workspaces)
  const integrate_options& m_opt;
  std::uint64_t m_seed;
  int m_k;
  long long m_first = 0;
  Eigen::Index m_rows = 0, m_cols = 0;
  block m_v, m_trial, m_drift, m_noise, m_dw, m_factor;
  Eigen::ArrayXXd m_ahead;  ///< (ahead·W) × k: the normals of the steps drawn ahead
  // The commutative Milstein scheme's workspaces.
  block m_unit, m_term, m_row, m_work, m_support, m_sums;
  std::vector<block> m_columns;
  std::vector<matrix> m_lane_iterated;  ///< [l]: lane l's I, as the per-path stepper forms it
  vector m_lane_dw, m_lane_sum;
  /// lane_cholesky's verdict on the trial states (m_factor), and the lanes the cone check passes
  /// by it (on ncsde::matrix states, those with the pivot margin as well).
  mask m_cholesky_ok = mask::Constant(false), m_factored = mask::Constant(false);
  column m_asymmetry = column::Zero(), m_size = column::Zero();
  column m_nonfinite = column::Zero(), m_finite_sum = column::Zero();
  State m_x;
  matrix m_dynamic;
  std::conditional_t<space == state_space::psd_cone, basic_psd_checker<State>, std::monostate>
      m_checker;
};

}  // namespace detail
}  // namespace ncsde
