#pragma once
/// Explicit Itô predictor–corrector (Kloeden & Platen, Numerical Solution of SDEs, §15.5: the weak
/// order-1 family with α = 1/2, η = 0; docs/maths.md §12):
///   predictor  V̄ = V + b(t, V) dt + G(t, V) dW,
///   corrector  V ← V + ½ (b(t + dt, V̄) + b(t, V)) dt + G(t, V) dW.
/// The drift is averaged over the step (trapezoidal rule), the noise map stays at the left point, so
/// the limit is the Itô solution (η = 0 needs no correction of the drift). Orders: weak 1 on every
/// noise class; strong 1/2 (no Milstein term), 1 on additive noise. Needs only the step's increments.
/// Cost: two drift evaluations and one noise evaluation per step.
///
/// On symmetric and cone spaces the predictor is symmetrised (its asymmetry is round-off) before the
/// drift sees it. The scheme does not preserve the PSD cone, and the predictor itself may leave it:
/// a drift defined on the cone only may then return a non-finite value (ncsde::evaluation_error).
#include <string_view>

#include "ncsde/concepts.hpp"
#include "ncsde/lanes.hpp"
#include "ncsde/noise_increment.hpp"
#include "ncsde/state_space.hpp"
#include "ncsde/stepper.hpp"
#include "ncsde/steppers/detail.hpp"
#include "ncsde/symmetric.hpp"

namespace ncsde {

template <class State = matrix>
class predictor_corrector {
 public:
  static constexpr std::string_view name = "predictor-corrector";
  static constexpr std::string_view description =
      "Ito predictor-corrector (Kloeden-Platen 15.5, alpha = 1/2, eta = 0): trapezoidal drift";
  /// 1/2, and 1 on additive noise (as Euler–Maruyama: the corrector changes the drift only).
  static constexpr double strong_order(noise_class c) {
    return c == noise_class::additive ? 1.0 : 0.5;
  }
  static constexpr double weak_order(noise_class) { return 1.0; }
  static constexpr noise_request request{};  ///< the increments only
  static constexpr bool preserves_cone = false;
  /// The same scheme on another state type (see euler_maruyama::rebind_state).
  template <class OtherState>
  using rebind_state = predictor_corrector<OtherState>;

  /// v ← v + ½ (b(t + dt, v̄) + b(t, v)) dt + G(t, v) dw,  v̄ = v + b(t, v) dt + G(t, v) dw.
  template <class S>
    requires Sde<S, State>
  void do_step(const S& sde, State& v, double t, const noise_increment& inc) {
    detail::require_noise_dimension(sde, v, inc.dimension(), "predictor_corrector");
    detail::resize_like(m_drift, v);
    detail::resize_like(m_noise, v);
    detail::resize_like(m_predicted, v);
    detail::resize_like(m_drift_predicted, v);
    sde.drift(v, m_drift, t);
    detail::require_finite(m_drift, v, "drift");
    sde.diffusion(v, inc.dw, m_noise, t);  // inc.dw carries variance dt
    detail::require_finite(m_noise, v, "noise map");
    m_predicted = v + inc.dt * m_drift + m_noise;
    if constexpr (is_symmetric_space(state_space_of<S>)) symmetrize(m_predicted);
    sde.drift(m_predicted, m_drift_predicted, t + inc.dt);
    detail::require_finite(m_drift_predicted, v, "drift");
    v += (0.5 * inc.dt) * (m_drift + m_drift_predicted) + m_noise;
  }

  /// The batched form (batched.hpp, LaneScheme) for an SDE S with one (BatchedSde): the step on a
  /// lane group in do_step's operations and their order: the predictor (v + dt·b) + G dW (as Eigen
  /// evaluates v + dt·b + G dW), symmetrised on symmetric spaces, the drift b̄ there at t + dt, then
  /// v + ((½dt)·(b + b̄) + G dW). It takes every run.
  template <class S>
  class lane_form {
   public:
    explicit lane_form(const predictor_corrector&) {}
    static constexpr bool applies(const predictor_corrector&) { return true; }

    /// One step of the group: s is the engine's detail::lane_step<S>.
    template <class Step>
    void step(Step& s) {
      const double t = s.t(), h = s.h();
      s.drift(s.v(), m_drift, t);
      s.diffusion(s.v(), s.dw(), m_noise, t);  // dw carries variance dt
      s.combine(m_predicted, {Step::term(s.v()), Step::term(h, m_drift), Step::term(m_noise)});
      s.drift(m_predicted, m_drift_predicted, t + h);
      m_drift_sum = m_drift + m_drift_predicted;  // b + b̄, coordinate by coordinate
      // As do_step checks them: the drift, the noise map, the drift at the predictor.
      s.coefficient("drift", m_drift);
      s.coefficient("noise map", m_noise);
      s.coefficient("drift", m_drift_predicted);
      s.form_trial({Step::term(0.5 * h, m_drift_sum), Step::term(m_noise)});
    }

   private:
    lane_block_of<lane_width_of<S>> m_drift, m_noise, m_predicted, m_drift_predicted, m_drift_sum;
  };

 private:
  State m_drift, m_noise, m_predicted, m_drift_predicted;
};

}  // namespace ncsde
