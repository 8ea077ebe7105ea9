#pragma once
/// Umbrella header of the solver layer: what a user needs to define an SDE, integrate it and run
/// ensembles. Opt-in, because they are heavier or are test tooling: ncsde/odeint.hpp (Boost.Odeint
/// glue), ncsde/convergence.hpp (measured convergence orders) and ncsde/analytic.hpp (problems with
/// known solutions). tests/hygiene checks that this header stays within its line budget.
#include "ncsde/brownian.hpp"
#include "ncsde/concepts.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/ensemble_io.hpp"
#include "ncsde/error.hpp"
#include "ncsde/executor.hpp"
#include "ncsde/integrate.hpp"
#include "ncsde/levy_area.hpp"
#include "ncsde/noise.hpp"
#include "ncsde/noise_increment.hpp"
#include "ncsde/psd.hpp"
#include "ncsde/random.hpp"
#include "ncsde/schemes.hpp"  // every built-in scheme (steppers/)
#include "ncsde/statistics.hpp"
#include "ncsde/stepper.hpp"
#include "ncsde/symmetric.hpp"
