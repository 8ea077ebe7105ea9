#include "ncsde/models/summaries.hpp"

#include <fmt/format.h>

#include <utility>

namespace ncsde::models {

std::vector<functional> summary_functionals(int m) {
  std::vector<functional> out;
  for (int i = 0; i < m; ++i)
    for (int j = i + 1; j < m; ++j) {
      functional f = correlation_functional(i, j);
      f.name = fmt::format("rho{}{}", i + 1, j + 1);
      out.push_back(std::move(f));
    }
  for (int i = 0; i < m; ++i) {
    functional f = entry_functional(i, i);
    f.name = fmt::format("V{}{}", i + 1, i + 1);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace ncsde::models
