// Ensembles and paths of covariance_sde with euler_maruyama<>, compiled once for every program
// (declared extern in models/shaped.hpp).
#include "ncsde/models/shaped.hpp"

namespace ncsde {
NCSDE_COVARIANCE_SDE_RUNS(, euler_maruyama<>)
}  // namespace ncsde
