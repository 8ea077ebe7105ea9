#pragma once
/// The chosen model's parameters as the reports of the model commands print them: `name = value`
/// text and a JSON object, one entry per parameter the model takes (model_flags::parameter_values).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <string>
#include <variant>

#include "models/model_flags.hpp"

namespace ncsde::cli {

/// "name = value, name = value, …" in the registry's order.
inline std::string parameter_text(const model_flags& model) {
  std::string out;
  const models::parameter_values values = model.parameter_values();
  for (const auto& [name, value] : values.items())
    out += fmt::format("{}{} = {}", out.empty() ? "" : ", ", name,
                       std::visit([](const auto& x) { return fmt::format("{}", x); }, value));
  return out;
}

/// {"name": value, …}.
inline nlohmann::json parameter_values_json(const model_flags& model) {
  nlohmann::json j = nlohmann::json::object();
  const models::parameter_values values = model.parameter_values();
  for (const auto& [name, value] : values.items())
    std::visit([&, key = name](const auto& x) { j[key] = x; }, value);
  return j;
}

}  // namespace ncsde::cli
