/// `ncsde models`: the registered models (ncsde/models/registry.hpp), their parameters (flag,
/// kind, default, domain, help) and their finite-network samplers: what --model accepts.
///
///   ncsde models [--format table|json]
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>

#include "command.hpp"
#include "ncsde/models/registry.hpp"

namespace ncsde::cli {
namespace {

std::string default_text(const models::parameter_value& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, bool>)
          return x ? "on" : "off";
        else
          return fmt::format("{}", x);
      },
      v);
}

std::string models_table() {
  std::string out;
  for (const models::model_entry& e : models::registry().entries()) {
    out += fmt::format("{}\n  {}\n  networks: {}\n", e.name(), e.info.description,
                       e.samplers.empty() ? std::string("none") : e.sampler_names());
    for (const models::parameter& p : e.info.parameters)
      out +=
          fmt::format("  --{:<20} {:<8} default {:<6} {} [{}]\n", p.name, models::to_string(p.kind),
                      default_text(p.default_value), p.help, p.domain);
    out += '\n';
  }
  return out;
}

std::string models_json() {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const models::model_entry& e : models::registry().entries()) {
    nlohmann::ordered_json m;
    m["name"] = e.name();
    m["description"] = e.info.description;
    m["samplers"] = nlohmann::ordered_json::array();
    for (const models::network_sampler_entry& s : e.samplers) m["samplers"].push_back(s.name);
    m["parameters"] = nlohmann::ordered_json::array();
    for (const models::parameter& p : e.info.parameters) {
      nlohmann::ordered_json q;
      q["flag"] = "--" + p.name;
      q["kind"] = models::to_string(p.kind);
      std::visit([&](const auto& x) { q["default"] = x; }, p.default_value);
      q["domain"] = p.domain;
      q["help"] = p.help;
      if (!p.choices.empty()) q["choices"] = p.choices;
      m["parameters"].push_back(q);
    }
    j.push_back(m);
  }
  return j.dump(2) + "\n";
}

}  // namespace

command models_command() {
  command c;
  c.name = "models";
  c.description =
      "List the registered models (what --model accepts), their parameters and samplers";
  c.setup = [](CLI::App& sub) -> std::function<int()> {
    auto format = std::make_shared<std::string>("table");
    add_format_flag(sub, *format, "Output format");
    return [format]() {
      std::cout << (*format == "json" ? models_json() : models_table());
      return exit_ok;
    };
  };
  return c;
}

}  // namespace ncsde::cli
