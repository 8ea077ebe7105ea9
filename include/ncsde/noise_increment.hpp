#pragma once
/// The increment of the driving Brownian motion over one step: what a stepper consumes. Light on
/// purpose (Eigen/Core only), so that a scheme's header does not pull in eigensolvers.
#include "ncsde/concepts.hpp"

namespace ncsde {

/// One Brownian increment over [t, t + dt] of a k-dimensional standard Brownian motion W:
///   dw(j) = W_j(t + dt) − W_j(t) ~ N(0, dt), and, when has_iterated,
///   iterated(j, l) = I_(j,l) = ∫_t^{t+dt} (W_j(s) − W_j(t)) dW_l(s)   (Itô; inner index first),
/// so that iterated + iteratedᵀ = dw dwᵀ − dt·I and iterated − iteratedᵀ = 2 × Lévy area.
struct noise_increment {
  double dt = 0.0;
  vector dw;
  matrix iterated;
  bool has_iterated = false;

  int dimension() const { return static_cast<int>(dw.size()); }
};

}  // namespace ncsde
