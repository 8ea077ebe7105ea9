#pragma once
/// The standard convergence studies by name, for the tests of the convergence engines.
#include <algorithm>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "ncsde/convergence.hpp"

namespace ncsde::test {

/// The study of standard_convergence_studies() called `name` (a failed REQUIRE when there is none).
inline const convergence_study& standard_study(const std::string& name) {
  static const std::vector<convergence_study> studies = standard_convergence_studies();
  const auto it =
      std::find_if(studies.begin(), studies.end(), [&](const auto& s) { return s.name == name; });
  REQUIRE(it != studies.end());
  return *it;
}

}  // namespace ncsde::test
