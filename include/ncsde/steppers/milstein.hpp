#pragma once
/// Milstein schemes for dV = b dt + G dW with W k-dimensional, G(V)ξ = Σ_j G_j(V) ξ_j:
///   V ← V + b dt + G dW + Σ_{j,l} (L^j G_l)(V) I_(j,l),   L^j G_l = DG_l(V)[G_j(V)],
/// with I_(j,l) = ∫ (W_j − W_j(t)) dW_l the iterated Itô integrals of the step.
///
///  - milstein: general, non-commutative noise. Uses the step's iterated integrals (Lévy areas
///    approximated by Wiktorsson's method, see levy_area.hpp, so the order is kept).
///    Orders: strong 1, weak 1.
///  - milstein_commutative: uses I_(j,l) + I_(l,j) = dW_j dW_l − δ_jl dt only, i.e. drops the Lévy areas.
///    Orders: strong 1 when the noise is commutative (L^j G_l = L^l G_j for all j, l), weak 1 always;
///    on non-commutative noise its strong order falls to 1/2.
///
/// The derivative term, chosen by the stepper's milstein_derivative option:
///  - analytic: the problem's diffusion_derivative (SdeWithDiffusionDerivative; a problem without
///    one is refused with ncsde::invalid_argument at the first step);
///  - derivative_free: the Runge–Kutta form (Kloeden–Platen, 11.1),
///    (L^j G)(V) ξ ≈ [G(Ῡ_j) − G(V)] ξ / √dt with support Ῡ_j = V + b dt + G_j √dt, which has the same
///    strong order and needs only the noise map;
///  - automatic (the default): analytic when the problem has diffusion_derivative, else
///    derivative-free.
/// So one stepper type compares both forms on one problem: milstein<>{milstein_derivative::analytic}
/// against milstein<>{milstein_derivative::derivative_free}. Cost per step: k noise evaluations to form the columns G_j, then k
/// derivative evaluations (or k noise evaluations at the supports) applied to the rows of I:
/// O(k·cost(G)). For k = O(m²) structured noise that is O(m⁵): Milstein pays off for strong-error
/// studies; for law-level (weak) work Euler–Maruyama is the cheaper scheme of the same weak order.
#include <cmath>
#include <string_view>
#include <vector>

#include "ncsde/concepts.hpp"
#include "ncsde/error.hpp"
#include "ncsde/lanes.hpp"
#include "ncsde/noise_increment.hpp"
#include "ncsde/stepper.hpp"
#include "ncsde/steppers/detail.hpp"

namespace ncsde {

/// How the Milstein schemes form the derivative term L^j G_l (see the top of this header).
enum class milstein_derivative { automatic, analytic, derivative_free };

/// Whether `form` takes the analytic derivative term for an SDE S on states State: analytic, or
/// automatic when S has diffusion_derivative; otherwise the derivative-free form. (analytic on an
/// SDE without diffusion_derivative is refused by the stepper's first step.)
template <class S, class State>
constexpr bool milstein_uses_analytic(milstein_derivative form) {
  if constexpr (SdeWithDiffusionDerivative<S, State>)
    return form != milstein_derivative::derivative_free;
  else
    return false;
}

namespace detail {

template <class State, bool Commutative>
class milstein_base {
 public:
  milstein_base() = default;
  explicit milstein_base(milstein_derivative form) : m_form(form) {}

  /// The derivative form this stepper uses.
  milstein_derivative derivative_form() const { return m_form; }

  template <class S>
    requires Sde<S, State>
  void do_step(const S& sde, State& v, double t, const noise_increment& inc) {
    const double h = inc.dt;
    const int k = inc.dimension();
    require_noise_dimension(sde, v, k, "milstein");
    resize_like(m_drift, v);
    resize_like(m_noise, v);
    resize_like(m_term, v);
    resize_like(m_work, v);
    sde.drift(v, m_drift, t);
    require_finite(m_drift, v, "drift");
    sde.diffusion(v, inc.dw, m_noise, t);
    require_finite(m_noise, v, "noise map");

    // The iterated integrals actually used (rows I_(j,·)).
    if constexpr (Commutative) {
      m_iterated.noalias() = 0.5 * inc.dw * inc.dw.transpose();
      m_iterated.diagonal().array() -= 0.5 * h;
    } else {
      NCSDE_ASSERT(inc.has_iterated && inc.iterated.rows() == k,
                   "milstein: the increment carries no iterated integrals");
    }
    const matrix& iterated = Commutative ? m_iterated : inc.iterated;

    // Columns G_j = G(V) e_j.
    if (static_cast<int>(m_columns.size()) != k)
      m_columns.assign(k, State::Zero(v.rows(), v.cols()));
    m_unit.setZero(k);
    for (int j = 0; j < k; ++j) {
      resize_like(m_columns[j], v);
      m_unit(j) = 1.0;
      sde.diffusion(v, m_unit, m_columns[j], t);
      m_unit(j) = 0.0;
    }

    m_term.setZero();
    if constexpr (!SdeWithDiffusionDerivative<S, State>) {
      if (m_form == milstein_derivative::analytic)
        throw invalid_argument(
            "milstein: derivative form 'analytic' needs the SDE's diffusion_derivative(v, h, xi, "
            "out, t), which this SDE does not have (use automatic or derivative_free)");
    }
    if (milstein_uses_analytic<S, State>(m_form)) {
      if constexpr (SdeWithDiffusionDerivative<S, State>) analytic_term(sde, v, t, k, iterated);
    } else {
      derivative_free_term(sde, v, t, h, k, iterated);
    }
    v += h * m_drift + m_noise + m_term;
  }

  /// The batched form (batched.hpp, LaneScheme) for an SDE S with one (BatchedSde): the
  /// derivative-free step on a lane group, in do_step's operations and their order,
  ///   v + ((dt·b + G dW) + M),  M = (Σ_j G(Ῡ_j) I_(j,·) − G(V) Σ_j I_(j,·)) / √dt,
  ///   Ῡ_j = (V + b dt) + √dt G_j,
  /// with I_(j,l) = ½ dW_j dW_l − ½ dt δ_jl (commutative) or each lane's iterated integrals from
  /// its own stream (general: lane_step::iterated, the per-path increment's matrix, Lévy areas
  /// included); the G_j = G(V) e_j formed by diffusion_lanes at the unit vectors (2k + 2 batched
  /// noise evaluations a step); each lane's I and Σ_j I_(j,·) are formed by do_step's own
  /// expressions (O(k²) per lane), so a lane's numbers are the per-path ones bit for bit wherever
  /// diffusion_lanes computes in the per-path order. It takes the runs of the derivative-free form
  /// only (applies): the analytic one would need a batched diffusion_derivative.
  template <class S>
  class lane_form {
   public:
    static constexpr int W = lane_width_of<S>;
    using block = lane_block_of<W>;

    explicit lane_form(const milstein_base&) {}
    static bool applies(const milstein_base& stepper) {
      return !milstein_uses_analytic<S, State>(stepper.derivative_form());
    }

    /// One step of the group: s is the engine's detail::lane_step<S>.
    template <class Step>
    void step(Step& s) {
      const double t = s.t(), h = s.h();
      s.drift(s.v(), m_drift, t);
      s.diffusion(s.v(), s.dw(), m_noise, t);  // dw carries variance dt
      correction(s, t, h);
      // As do_step checks them: the drift, the noise map, the noise map at the supports.
      s.coefficient("drift", m_drift);
      s.coefficient("noise map", m_noise);
      s.coefficient("noise map", m_term);
      s.form_trial({Step::term(h, m_drift), Step::term(m_noise), Step::term(m_term)});
    }

   private:
    /// The correction M of every lane into m_term, from s.v(), m_drift and s.dw().
    template <class Step>
    void correction(Step& s, double t, double h) {
      const int k = s.noise_dimension();
      const Eigen::Index K = s.coordinates();
      const block& v = s.v();
      const double sqrt_h = std::sqrt(h);
      m_unit.setZero(W, k);
      m_columns.resize(static_cast<std::size_t>(k));
      for (int j = 0; j < k; ++j) {
        m_unit.col(j).setConstant(1.0);
        s.diffusion(v, m_unit, m_columns[static_cast<std::size_t>(j)], t);
        m_unit.col(j).setZero();
      }
      // Each lane's I and Σ_j I_(j,·) by do_step's own expressions on its own types, so that they
      // are its numbers bit for bit (the outer product, the diagonal, Eigen's column sums).
      m_lane_iterated.resize(W);
      m_sums.resize(W, k);
      for (int l = 0; l < W; ++l) {
        matrix& it = m_lane_iterated[static_cast<std::size_t>(l)];
        if constexpr (Commutative) {
          m_lane_dw = s.dw().row(l).transpose();
          it.noalias() = 0.5 * m_lane_dw * m_lane_dw.transpose();
          it.diagonal().array() -= 0.5 * h;
        } else {
          it = s.iterated(l);
        }
        m_lane_sum = it.colwise().sum().transpose();  // into a vector, as do_step
        m_sums.row(l) = m_lane_sum.transpose().array();
      }
      m_term.setZero(W, K);
      m_row.resize(W, k);
      for (int j = 0; j < k; ++j) {
        for (int l = 0; l < W; ++l)
          m_row.row(l) = m_lane_iterated[static_cast<std::size_t>(l)].row(j).array();
        m_support = v + h * m_drift + sqrt_h * m_columns[static_cast<std::size_t>(j)];
        s.diffusion(m_support, m_row, m_work, t);
        m_term += m_work;
      }
      m_row = m_sums;
      s.diffusion(v, m_row, m_work, t);
      m_term -= m_work;
      m_term /= sqrt_h;
    }

    block m_drift, m_noise, m_unit, m_term, m_row, m_work, m_support, m_sums;
    std::vector<block> m_columns;
    std::vector<matrix> m_lane_iterated;  ///< [l]: lane l's I, as do_step forms it
    vector m_lane_dw, m_lane_sum;
  };

 protected:
  milstein_derivative m_form = milstein_derivative::automatic;

 private:
  template <class S>
  void analytic_term(const S& sde, const State& v, double t, int k, const matrix& iterated) {
    for (int j = 0; j < k; ++j) {
      m_row = iterated.row(j).transpose();
      sde.diffusion_derivative(v, m_columns[j], m_row, m_work, t);
      require_finite(m_work, v, "noise map derivative");
      m_term += m_work;
    }
  }

  /// Σ_j [G(Ῡ_j) − G(V)] I_(j,·) / √h; the G(V) part sums to G(V) (Σ_j I_(j,·)).
  template <class S>
  void derivative_free_term(const S& sde, const State& v, double t, double h, int k,
                            const matrix& iterated) {
    const double sqrt_h = std::sqrt(h);
    resize_like(m_support, v);
    for (int j = 0; j < k; ++j) {
      m_support = v + h * m_drift + sqrt_h * m_columns[j];
      m_row = iterated.row(j).transpose();
      sde.diffusion(m_support, m_row, m_work, t);
      require_finite(m_work, v, "noise map");
      m_term += m_work;
    }
    m_row = iterated.colwise().sum().transpose();
    sde.diffusion(v, m_row, m_work, t);
    m_term -= m_work;
    m_term /= sqrt_h;
  }

  State m_drift, m_noise, m_term, m_work, m_support;
  std::vector<State> m_columns;
  matrix m_iterated;
  vector m_unit, m_row;
};

}  // namespace detail

/// General (non-commutative) Milstein. Orders: strong 1, weak 1. Needs iterated integrals.
template <class State = matrix>
class milstein : public detail::milstein_base<State, false> {
 public:
  static constexpr std::string_view name = "milstein";
  static constexpr std::string_view description =
      "Milstein with iterated integrals (Wiktorsson Levy areas): any noise";
  static constexpr double strong_order(noise_class) { return 1.0; }
  static constexpr double weak_order(noise_class) { return 1.0; }
  static constexpr noise_request request{iterated_terms::with_levy_areas};
  static constexpr bool preserves_cone = false;
  /// The same scheme on another state type (see euler_maruyama::rebind_state).
  template <class OtherState>
  using rebind_state = milstein<OtherState>;

  milstein() = default;
  /// A stepper forming the derivative term by `form`.
  explicit milstein(milstein_derivative form) : detail::milstein_base<State, false>(form) {}
  /// The same scheme and options on another state type (what rebinding uses).
  template <class OtherState>
  explicit milstein(const milstein<OtherState>& other)
      : detail::milstein_base<State, false>(other.derivative_form()) {}
};

/// Milstein for commutative noise (no Lévy areas). Orders: strong 1 on commutative noise
/// (1/2 otherwise), weak 1.
template <class State = matrix>
class milstein_commutative : public detail::milstein_base<State, true> {
 public:
  static constexpr std::string_view name = "milstein-commutative";
  static constexpr std::string_view description =
      "Milstein without Levy areas: strong order 1 on commutative noise only";
  /// 1 on commutative (and additive) noise; 1/2 on general noise, where the Lévy areas it drops
  /// are a mean-zero O(dt) error per step.
  static constexpr double strong_order(noise_class c) {
    return c == noise_class::general ? 0.5 : 1.0;
  }
  static constexpr double weak_order(noise_class) { return 1.0; }
  static constexpr noise_request request{iterated_terms::symmetric_part_only};
  static constexpr bool preserves_cone = false;
  /// The same scheme on another state type (see euler_maruyama::rebind_state).
  template <class OtherState>
  using rebind_state = milstein_commutative<OtherState>;

  milstein_commutative() = default;
  /// A stepper forming the derivative term by `form`.
  explicit milstein_commutative(milstein_derivative form)
      : detail::milstein_base<State, true>(form) {}
  /// The same scheme and options on another state type (what rebinding uses).
  template <class OtherState>
  explicit milstein_commutative(const milstein_commutative<OtherState>& other)
      : detail::milstein_base<State, true>(other.derivative_form()) {}
};

}  // namespace ncsde
