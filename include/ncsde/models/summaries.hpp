#pragma once
/// The summaries of a covariance ensemble that the `ncsde` program and the Python module report, so
/// that both name and compute them alike (their outputs are compared bit for bit).
#include <vector>

#include "ncsde/ensemble.hpp"

namespace ncsde::models {

/// The functionals summarised for m×m states: every correlation ρ^{ab} (a < b, named rho<a><b>,
/// 1-indexed), then every diagonal entry V^{aa} (named V<a><a>).
std::vector<functional> summary_functionals(int m);

}  // namespace ncsde::models
