#pragma once
/// Euler–Maruyama:  V ← V + b(t, V) dt + G(t, V) dW.
/// Orders: strong 1/2 (strong 1 when the noise is additive), weak 1. Any noise (commutative or not);
/// needs only the step's increments, no iterated integrals. Cost: one drift and one noise evaluation.
#include <string_view>

#include "ncsde/concepts.hpp"
#include "ncsde/device.hpp"
#include "ncsde/lanes.hpp"
#include "ncsde/noise_increment.hpp"
#include "ncsde/stepper.hpp"
#include "ncsde/steppers/detail.hpp"

namespace ncsde {

template <class State = matrix>
class euler_maruyama {
 public:
  static constexpr std::string_view name = "em";
  static constexpr std::string_view description = "Euler-Maruyama: V + b dt + G dW";
  /// 1/2, and 1 on additive noise (where EM is the Milstein scheme).
  static constexpr double strong_order(noise_class c) {
    return c == noise_class::additive ? 1.0 : 0.5;
  }
  static constexpr double weak_order(noise_class) { return 1.0; }
  static constexpr noise_request request{};  ///< the increments only
  /// The device engine steps it (device.hpp; solvers/device/path_engine.hpp, the same operations).
  static constexpr device_scheme device_form = device_scheme::euler_maruyama;
  static constexpr bool preserves_cone = false;
  /// The same scheme on another state type (integrate() and run_ensemble() step fixed-size states
  /// square_matrix<m> with it); the scheme has no parameters, so a default-constructed one is equal.
  template <class OtherState>
  using rebind_state = euler_maruyama<OtherState>;

  /// v ← v + b(t, v) inc.dt + G(t, v) inc.dw.
  template <class S>
    requires Sde<S, State>
  void do_step(const S& sde, State& v, double t, const noise_increment& inc) {
    detail::require_noise_dimension(sde, v, inc.dimension(), "euler_maruyama");
    detail::resize_like(m_drift, v);
    detail::resize_like(m_noise, v);
    sde.drift(v, m_drift, t);
    detail::require_finite(m_drift, v, "drift");
    sde.diffusion(v, inc.dw, m_noise, t);  // inc.dw carries variance dt
    detail::require_finite(m_noise, v, "noise map");
    v += inc.dt * m_drift + m_noise;
  }

  /// The batched form (batched.hpp, LaneScheme) for an SDE S with one (BatchedSde): the step on a
  /// lane group, v + (dt·b + G dW) with b and G dW from drift_lanes and diffusion_lanes, summed in
  /// do_step's order (Eigen evaluates v += dt·b + G dW coordinate by coordinate as
  /// v + ((dt·b) + G dW)). It takes every run.
  template <class S>
  class lane_form {
   public:
    explicit lane_form(const euler_maruyama&) {}
    static constexpr bool applies(const euler_maruyama&) { return true; }

    /// One step of the group: s is the engine's detail::lane_step<S>.
    template <class Step>
    void step(Step& s) {
      s.drift(s.v(), m_drift, s.t());
      s.diffusion(s.v(), s.dw(), m_noise, s.t());  // dw carries variance dt
      s.coefficient("drift", m_drift);
      s.coefficient("noise map", m_noise);
      s.form_trial({Step::term(s.h(), m_drift), Step::term(m_noise)});
    }

   private:
    lane_block_of<lane_width_of<S>> m_drift, m_noise;
  };

 private:
  State m_drift, m_noise;
};

}  // namespace ncsde
