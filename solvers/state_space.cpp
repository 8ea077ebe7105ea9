#include "ncsde/state_space.hpp"

#include <fmt/format.h>

namespace ncsde {

std::string_view to_string(state_space s) {
  switch (s) {
    case state_space::euclidean:
      return "euclidean";
    case state_space::symmetric:
      return "symmetric";
    case state_space::psd_cone:
      return "psd_cone";
  }
  return "?";
}

std::vector<std::string> state_layout::names() const {
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(size()));
  if (is_symmetric_space(space)) {
    for (Eigen::Index a = 1; a <= rows; ++a)
      for (Eigen::Index b = a; b <= cols; ++b) out.push_back(fmt::format("V{}{}", a, b));
  } else if (vector_state) {
    for (Eigen::Index i = 1; i <= rows; ++i) out.push_back(fmt::format("X{}", i));
  } else {
    for (Eigen::Index a = 1; a <= rows; ++a)
      for (Eigen::Index b = 1; b <= cols; ++b) out.push_back(fmt::format("X{}{}", a, b));
  }
  return out;
}

}  // namespace ncsde
