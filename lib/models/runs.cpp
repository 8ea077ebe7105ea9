// Ensembles and paths of covariance_sde with every built-in scheme, compiled once for every program
// (declared extern in models/shaped.hpp).
#include "ncsde/models/shaped.hpp"

#define NCSDE_DETAIL_COVARIANCE_SDE_RUNS(Stepper) NCSDE_COVARIANCE_SDE_RUNS(, Stepper)
namespace ncsde {
NCSDE_FOR_EACH_BUILTIN_SCHEME(NCSDE_DETAIL_COVARIANCE_SDE_RUNS)
}  // namespace ncsde
