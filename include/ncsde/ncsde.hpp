#pragma once
/// Umbrella header of the solver layer. (Boost.Odeint glue is opt-in: include ncsde/odeint.hpp.)
#include "ncsde/analytic.hpp"
#include "ncsde/brownian.hpp"
#include "ncsde/concepts.hpp"
#include "ncsde/convergence.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/ensemble_io.hpp"
#include "ncsde/error.hpp"
#include "ncsde/integrate.hpp"
#include "ncsde/levy_area.hpp"
#include "ncsde/noise.hpp"
#include "ncsde/psd.hpp"
#include "ncsde/random.hpp"
#include "ncsde/schemes.hpp"  // every built-in scheme (steppers/)
#include "ncsde/statistics.hpp"
#include "ncsde/stepper.hpp"
#include "ncsde/symmetric.hpp"
