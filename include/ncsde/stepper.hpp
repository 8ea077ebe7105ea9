#pragma once
/// The Stepper concept: what a scheme declares about itself, so that the engine (integrate.hpp,
/// ensemble.hpp, odeint.hpp), the convergence studies and the command line read it from the stepper
/// instead of knowing the schemes (the built-in ones are listed once, in schemes.hpp).
///
/// A stepper is a value type with
///   static constexpr std::string_view name;         // the CLI and JSON name, e.g. "em"
///   static constexpr std::string_view description;  // one line, for listings
///   static constexpr double strong_order(noise_class c);  // the orders theory predicts on noise of
///   static constexpr double weak_order(noise_class c);    // class c (concepts.hpp), both > 0
///   static constexpr noise_request request;         // what a step's increment must carry
///   static constexpr bool preserves_cone;           // maps the PSD cone into itself for any dt
///                                                   // (listed by --list-schemes; the engine does
///                                                   // not rely on it: every step is checked)
/// and a member template do_step(sde, v, t, inc) (StepperFor), and, to run on the compile-time-sized
/// states of integrate(), `template <class OtherState> using rebind_state = ...` (integrate.hpp).
#include <array>
#include <concepts>
#include <cstddef>
#include <string_view>

#include "ncsde/concepts.hpp"
#include "ncsde/noise_increment.hpp"

namespace ncsde {

/// Which iterated Itô integrals I_(j,l) = ∫ (W_j − W_j(t)) dW_l of a step a scheme uses.
enum class iterated_terms {
  none,                 ///< ΔW only (Euler–Maruyama, predictor–corrector)
  symmetric_part_only,  ///< I_(j,l) + I_(l,j) = ΔW_jΔW_l − δ_jl dt only, which the stepper forms
                        ///< from ΔW itself (Milstein for commutative noise)
  with_levy_areas,      ///< the full I_(j,l), Lévy areas included, supplied by the noise source
};

/// "none", "symmetric-part-only", "with-levy-areas".
constexpr std::string_view to_string(iterated_terms i) {
  switch (i) {
    case iterated_terms::none:
      return "none";
    case iterated_terms::symmetric_part_only:
      return "symmetric-part-only";
    case iterated_terms::with_levy_areas:
      return "with-levy-areas";
  }
  return "?";
}

/// What a scheme asks of the noise source, beyond each step's increment ΔW over [t, t + dt].
struct noise_request {
  iterated_terms iterated = iterated_terms::none;
  /// The scheme splits a step's increment into its halves by the Brownian bridge itself (adaptive or
  /// bridged schemes): the engine then refuses, at compile time, a noise source that is not a
  /// BridgedNoiseSource (brownian.hpp). No built-in scheme does; the `refine` cone policy splits
  /// steps on its own account and checks the source at run time.
  bool bridge_splits = false;

  /// The source must supply the step's iterated integrals (NoiseSource's `with_iterated` flag):
  /// only with_levy_areas; symmetric_part_only is formed from ΔW by the stepper.
  constexpr bool needs_iterated_integrals() const {
    return iterated == iterated_terms::with_levy_areas;
  }
  friend constexpr bool operator==(const noise_request&, const noise_request&) = default;
};

/// St declares what a scheme is (see the top of this header); the orders are positive constant
/// expressions.
template <class St>
concept Stepper = std::copy_constructible<St> && requires {
  { St::name } -> std::convertible_to<std::string_view>;
  { St::description } -> std::convertible_to<std::string_view>;
  { St::strong_order(noise_class::general) } -> std::convertible_to<double>;
  { St::weak_order(noise_class::general) } -> std::convertible_to<double>;
  { St::request } -> std::convertible_to<noise_request>;
  { St::preserves_cone } -> std::convertible_to<bool>;
  // Constant expressions (a non-constexpr declaration fails here), orders > 0.
  typename std::bool_constant<(
      St::strong_order(noise_class::general) > 0 &&
      St::strong_order(noise_class::commutative) > 0 &&
      St::strong_order(noise_class::additive) > 0 && St::weak_order(noise_class::general) > 0 &&
      St::weak_order(noise_class::commutative) > 0 && St::weak_order(noise_class::additive) > 0 &&
      !std::string_view(St::name).empty())>;
};

/// St is a Stepper that steps states of type State of the SDE S.
template <class St, class S, class State = matrix>
concept StepperFor = Stepper<St> && Sde<S, State> &&
                     requires(St& st, const S& sde, State& v, double t,
                              const noise_increment& inc) { st.do_step(sde, v, t, inc); };

/// A scheme's declarations as a run-time value (the registry's entries, schemes.hpp).
struct scheme_descriptor {
  std::string_view name;
  std::string_view description;
  std::array<double, 3>
      strong{};                  ///< strong order per noise_class (general, commutative, additive)
  std::array<double, 3> weak{};  ///< weak order per noise_class
  noise_request request;
  bool preserves_cone = false;

  constexpr double strong_order(noise_class c) const { return strong[static_cast<std::size_t>(c)]; }
  constexpr double weak_order(noise_class c) const { return weak[static_cast<std::size_t>(c)]; }
};

/// The descriptor of a stepper type.
template <Stepper St>
constexpr scheme_descriptor describe() {
  constexpr noise_class classes[] = {noise_class::general, noise_class::commutative,
                                     noise_class::additive};
  scheme_descriptor d;
  d.name = St::name;
  d.description = St::description;
  for (std::size_t i = 0; i < 3; ++i) {
    d.strong[i] = St::strong_order(classes[i]);
    d.weak[i] = St::weak_order(classes[i]);
  }
  d.request = St::request;
  d.preserves_cone = St::preserves_cone;
  return d;
}

}  // namespace ncsde
