#include "ncsde/schemes.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ncsde {

std::size_t find_scheme(std::string_view name, std::string_view param) {
  for (std::size_t i = 0; i < builtin_schemes::size; ++i)
    if (builtin_schemes::descriptors[i].name == name) return i;
  throw invalid_argument(
      fmt::format("{} must be one of {} (got '{}')", param, scheme_name_list(), name));
}

const scheme_descriptor& scheme_descriptor_of(std::string_view name, std::string_view param) {
  return builtin_schemes::descriptors[find_scheme(name, param)];
}

std::vector<std::string> scheme_names() {
  std::vector<std::string> names;
  for (const scheme_descriptor& d : builtin_schemes::descriptors) names.emplace_back(d.name);
  return names;
}

std::string scheme_name_list() { return fmt::format("{}", fmt::join(scheme_names(), ", ")); }

}  // namespace ncsde
