#pragma once
// The fields of a result (ncsde/report_field.hpp) as a JSON object, for the library's writers
// (convergence_json, summary_json): the fields in the document, in their order, each number through
// the writer's `number` (how it writes a non-finite one), lists of numbers element by element.
#include <type_traits>
#include <variant>
#include <vector>

#include "ncsde/report_field.hpp"

namespace ncsde::detail {

template <class Json, class Number>
Json fields_json(const std::vector<report_field>& fields, Number number) {
  Json j = Json::object();
  for (const report_field& f : fields) {
    if (!f.in_document) continue;
    Json& slot = j[f.name];
    std::visit(
        [&](const auto& v) {
          using value = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<value, double>) {
            slot = number(v);
          } else if constexpr (std::is_same_v<value, std::vector<double>>) {
            slot = Json::array();
            for (const double x : v) slot.push_back(number(x));
          } else {
            slot = v;
          }
        },
        f.value);
  }
  return j;
}

}  // namespace ncsde::detail
