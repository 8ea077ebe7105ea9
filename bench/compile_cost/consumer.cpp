// A consumer translation unit: an ensemble of the built-in transformer covariance SDE, as a user's
// program would write it. bench/compile_cost/measure.sh times its compilation (-O2): what a user pays
// at compile time for ncsde's headers (the engine's instantiations for covariance_sde are compiled in
// the library and declared extern in models/shaped.hpp).
#include <cstdio>

#include "ncsde/ensemble.hpp"
#include "ncsde/models/shaped.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"

int main() {
  ncsde::models::shaped_params p;
  const ncsde::models::covariance_sde sde(ncsde::models::architecture::transformer, p);
  ncsde::matrix v0(2, 2);
  v0 << 1.0, 0.5, 0.5, 1.0;
  const ncsde::problem<ncsde::models::covariance_sde> prob{sde, v0, 1.0};
  ncsde::integrate_options io;
  io.dt = 1e-2;
  ncsde::ensemble_options eo;
  eo.paths = 100;
  const ncsde::ensemble_result r = ncsde::run_ensemble(ncsde::euler_maruyama<>{}, prob, io, eo);
  std::printf("%lld of %lld paths completed\n", r.completed, r.paths);
  return 0;
}
