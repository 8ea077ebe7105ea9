// Ensembles and paths of covariance_sde with milstein_commutative<>, compiled once for every program
// (declared extern in models/shaped.hpp).
#include "ncsde/models/shaped.hpp"

namespace ncsde {
NCSDE_COVARIANCE_SDE_RUNS(, milstein_commutative<>)
}  // namespace ncsde
