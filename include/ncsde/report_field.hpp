#pragma once
/// A named value of a result, the unit of the descriptions from which the program's JSON documents
/// and the Python module's dicts are both made (convergence series, ensemble summaries): a field is
/// named once, where the result is described, and every writer renders the same list.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace ncsde {

struct report_field {
  using value_type =
      std::variant<std::string, double, bool, long long, std::uint64_t, std::vector<double>>;
  std::string name;
  value_type value;
  /// Whether the JSON document writes it (some fields only where they say something, so that a
  /// plain run keeps the document it always had); the Python dicts hold every field.
  bool in_document = true;
};

}  // namespace ncsde
