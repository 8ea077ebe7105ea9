#include "models/model_flags.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <system_error>
#include <vector>

#include "command.hpp"
#include "limits.hpp"
#include "ncsde/error.hpp"
#include "ncsde/symmetric.hpp"

namespace ncsde::cli {

namespace {

/// The shaped_params field names as the model's messages spell them, and their flags.
struct parameter_flag {
  std::string_view param;
  std::string_view flag;
};
constexpr parameter_flag parameter_flags[] = {
    {"c_plus", "--c-plus"},
    {"c_minus", "--c-minus"},
    {"gamma2", "--gamma2"},
    {"hidden_ratio", "--hidden-ratio"},
    {"tau0", "--tau0"},
    {"heads", "--heads"},
    {"output_projection", "--output-projection"},
    {"causal", "--causal"},
    // The finite networks' own parameters (sample_networks, literal_network, reduced_network).
    {"n", "--n"},
    {"d", "--d"},
    {"n_k", "--nk"},
    {"form", "--attention"},
    {"V0", "--V0"},
    {"networks", "--networks"},
    {"threads", "--threads"},
    {"stop_level", "--stop-level"},
    // The integrator's and the ensembles' (integrate_options, step_grid, ensemble_options).
    {"dt", "--dt"},
    {"T", "--T"},
    {"blowup_threshold", "--blowup-threshold"},
    {"paths", "--paths"},
    // ncsde validate's (validate_command.cpp, variants.hpp).
    {"tail_level", "--tail-level"},
    {"unstopped_tail_level", "--unstopped-tail-level"},
    {"alpha", "--alpha"},
    {"limit_exponent", "--limit-exponent"},
    {"check_limit", "--check-limit"},
    {"variant", "--variants"},
    {"sampler", "--sampler"},
};

/// The flag of the parameter a "<where>: <param> must be ..." message names, or "" when none does.
std::string_view flag_of_message(std::string_view message) {
  const std::size_t colon = message.find(": ");
  if (colon == std::string_view::npos) return {};
  const std::string_view rest = message.substr(colon + 2);
  const std::size_t space = rest.find(' ');
  const std::string_view param = rest.substr(0, space);
  for (const parameter_flag& p : parameter_flags)
    if (p.param == param) return p.flag;
  // The parameters of the other registered models, by the names their messages give them.
  static const std::vector<std::pair<std::string, std::string>> registered = [] {
    std::vector<std::pair<std::string, std::string>> out;
    for (const models::parameter& p : models::registry().all_parameters())
      out.emplace_back(p.field_name(), "--" + p.name);
    return out;
  }();
  for (const auto& [field, flag] : registered)
    if (field == param) return flag;
  return {};
}

std::string_view trim(std::string_view s) {
  const std::size_t first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const std::size_t last = s.find_last_not_of(" \t");
  return s.substr(first, last - first + 1);
}

/// Splits on `sep`, keeping empty pieces (so "1,,2" has an empty entry and is rejected).
std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> pieces;
  std::size_t start = 0;
  for (;;) {
    const std::size_t pos = s.find(sep, start);
    pieces.push_back(
        s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) return pieces;
    start = pos + 1;
  }
}

[[noreturn]] void matrix_error(std::string_view flag, std::string_view text,
                               const std::string& why) {
  throw_invalid(flag, fmt::format("malformed matrix '{}': {} (write rows separated by ';' and "
                                  "entries by ',', e.g. \"1,0.5;0.5,1\")",
                                  text, why));
}

}  // namespace

model_flags::model_flags() {
  for (const models::parameter& p : models::registry().all_parameters())
    values.emplace(p.name, p.default_value);
}

void model_flags::reset() {
  model = "mlp";
  for (const models::parameter& p : models::registry().all_parameters())
    values.find(p.name)->second = p.default_value;
}

const models::model_entry& model_flags::entry() const {
  return models::registry().at(model, "ncsde");
}

models::parameter_values model_flags::parameter_values() const {
  const models::model_entry& e = entry();
  models::parameter_values out;
  for (const auto& [name, option] : options)
    if (e.find_parameter(name) == nullptr && option->count() > 0) {
      std::string list;
      for (const models::parameter& p : e.info.parameters)
        list += (list.empty() ? "--" : ", --") + p.name;
      throw_invalid("ncsde", fmt::format("--{} is not a parameter of {} (its parameters: {})", name,
                                         model, list.empty() ? "none" : list));
    }
  for (const models::parameter& p : e.info.parameters) out.set(p.name, values.find(p.name)->second);
  return out;
}

models::shaped_params model_flags::params() const {
  models::parameter_values all;
  for (const auto& [name, value] : values) all.set(name, value);
  return models::shaped_params_of(all);
}

void add_model_flags(CLI::App& sub, model_flags& flags) {
  sub.add_option("--model", flags.model, "Architecture whose covariance SDE is used")
      ->check(CLI::IsMember(models::registry().names()))
      ->capture_default_str();
  for (const models::parameter& p : models::registry().all_parameters()) {
    models::parameter_value& target = flags.values.find(p.name)->second;
    const std::string flag = "--" + p.name;
    CLI::Option* option = nullptr;
    switch (p.kind) {
      case models::parameter_kind::real:
        option = sub.add_option(flag, std::get<double>(target), p.help)->capture_default_str();
        break;
      case models::parameter_kind::integer:
        option = sub.add_option(flag, std::get<int>(target), p.help)
                     ->transform(decimal_integer)
                     ->capture_default_str();
        break;
      case models::parameter_kind::flag:
        option = sub.add_flag(flag, std::get<bool>(target), p.help);
        break;
      case models::parameter_kind::choice:
        option = sub.add_option(flag, std::get<std::string>(target), p.help)
                     ->check(CLI::IsMember(p.choices))
                     ->capture_default_str();
        break;
    }
    flags.options.emplace_back(p.name, option);
  }
}

models::architecture parse_architecture(std::string_view text) {
  if (const std::optional<models::architecture> arch = builtin_architecture(text)) return *arch;
  throw_invalid_argument("ncsde", "--model", text, "one of mlp, resnet, attention, transformer");
}

std::optional<models::architecture> builtin_architecture(std::string_view text) {
  if (text == "mlp") return models::architecture::mlp;
  if (text == "resnet") return models::architecture::resnet;
  if (text == "attention") return models::architecture::attention;
  if (text == "transformer") return models::architecture::transformer;
  return std::nullopt;
}

std::optional<models::model_instance> make_model(const model_flags& flags) {
  try {
    return flags.entry().make(flags.parameter_values());
  } catch (const ncsde::invalid_argument& e) {
    report_invalid_argument(e);
    return std::nullopt;
  }
}

matrix parse_matrix(std::string_view text, std::string_view flag) {
  if (trim(text).empty()) matrix_error(flag, text, "it is empty");
  const std::vector<std::string_view> rows = split(text, ';');
  const int m = static_cast<int>(rows.size());
  // The entries are collected row by row, each row counted before it is read, and the m×m matrix
  // is made only at the end: the memory grows with the text, so "1;;;…" (m separators) is refused
  // at row 1 instead of asking for m² doubles first.
  std::vector<double> entries_read;
  for (int a = 0; a < m; ++a) {
    const std::vector<std::string_view> entries = split(rows[static_cast<std::size_t>(a)], ',');
    if (static_cast<int>(entries.size()) != m)
      matrix_error(flag, text,
                   fmt::format("row {} has {} entries, expected {} (a square matrix with {} rows)",
                               a + 1, entries.size(), m, m));
    for (int b = 0; b < m; ++b) {
      const std::string_view entry = trim(entries[static_cast<std::size_t>(b)]);
      double x = 0.0;
      const char* end = entry.data() + entry.size();
      // from_chars rejects a leading '+'; accept it as the usual spelling of a sign (one sign:
      // "+-1" is not a number).
      const bool plus = !entry.empty() && entry.front() == '+';
      const char* begin = plus ? entry.data() + 1 : entry.data();
      const auto [ptr, ec] = std::from_chars(begin, end, x);
      if (entry.empty() || (plus && begin != end && *begin == '-') || ec != std::errc() ||
          ptr != end || !std::isfinite(x))
        matrix_error(
            flag, text,
            fmt::format("entry ({}, {}) '{}' is not a finite number", a + 1, b + 1, entry));
      entries_read.push_back(x);
    }
  }
  matrix v(m, m);
  for (int a = 0; a < m; ++a)
    for (int b = 0; b < m; ++b) v(a, b) = entries_read[static_cast<std::size_t>(a) * m + b];
  return v;
}

std::optional<matrix> read_state(std::string_view text, std::string_view flag, bool require_psd) {
  try {
    return validate_state(flag, "the matrix", parse_matrix(text, flag), require_psd);
  } catch (const ncsde::invalid_argument& e) {
    std::fprintf(stderr, "ncsde: error: %s\n", e.what());
    return std::nullopt;
  }
}

void add_network_flags(CLI::App& sub, network_flags& flags, bool require_size) {
  CLI::Option* n = sub.add_option("--n", flags.n, "Width n of the networks, >= 2 (and >= m)")
                       ->transform(decimal_integer)
                       ->check(CLI::Range(2, 1'000'000));
  CLI::Option* d = sub.add_option("--d", flags.d, "Depth d (layers; T = d/n), >= 1")
                       ->transform(decimal_integer)
                       ->check(CLI::Range(1, 100'000'000));
  if (require_size) {
    n->required();
    d->required();
  } else {
    n->capture_default_str();
    d->capture_default_str();
  }
  sub.add_option("--nk", flags.n_k, "Key dimension n_k of W^Q, W^K, >= 1 (default: n)")
      ->transform(decimal_integer)
      ->check(CLI::Range(1, 1'000'000));
  sub.add_option("--networks", flags.networks, "Number of independent networks")
      ->transform(decimal_integer)
      ->check(CLI::Range(1LL, max_networks))
      ->capture_default_str();
  flags.sampler_option =
      sub.add_option(
             "--sampler", flags.sampler,
             "literal: explicit n×n weights (docs/maths.md §2); reduced: the exact-in-law V-chain "
             "without weights (docs/maths.md §7), same law, O(m³ + m²·r·n) per layer")
          ->check(CLI::IsMember({"literal", "reduced"}))
          ->capture_default_str();
  add_seed_flag(sub, flags.seed, "Seed of the (seed, network) random streams");
  add_threads_flag(sub, flags.threads);
}

CLI::Option* add_integer_list(CLI::App& sub, const std::string& name, std::vector<int>& values,
                              const std::string& description) {
  return sub.add_option(name, values, description)->delimiter(',')->transform(decimal_integer);
}

networks::attention_form parse_attention_form(std::string_view text) {
  if (text == "shaped") return networks::attention_form::shaped;
  if (text == "unshaped") return networks::attention_form::unshaped;
  throw_invalid_argument("ncsde", "--attention", text, "one of shaped, unshaped");
}

std::string resolve_sampler(const models::model_entry& entry, const std::string& requested,
                            bool given) {
  if (given || entry.sampler(requested) != nullptr || entry.samplers.empty()) return requested;
  return entry.samplers.front().name;
}

std::string network_flags::sampler_for(const models::model_entry& entry) const {
  return resolve_sampler(entry, sampler, sampler_option != nullptr && sampler_option->count() > 0);
}

std::optional<any_network> make_network(const model_flags& model, const network_flags& net, int m,
                                        networks::attention_form form) {
  try {
    const models::model_entry& entry = model.entry();
    return entry.make_network(net.sampler_for(entry), model.parameter_values(),
                              models::network_request{m, net.n, net.key_dimension(), form});
  } catch (const ncsde::invalid_argument& e) {
    report_invalid_argument(e);
    return std::nullopt;
  }
}

networks::network_options network_options_of(const network_flags& net) {
  networks::network_options opt;
  opt.seed = net.seed;
  opt.networks = net.networks;
  opt.threads = net.threads;
  return opt;
}

std::optional<networks::network_ensemble> sample_any_network(const any_network& net,
                                                             const matrix& v0, int d,
                                                             const networks::network_options& opt) {
  try {
    return net.sample(v0, d, opt);
  } catch (const ncsde::invalid_argument& e) {
    report_invalid_argument(e);
    return std::nullopt;
  }
}

void report_invalid_argument(const ncsde::invalid_argument& e) {
  const std::string_view flag = flag_of_message(e.what());
  if (flag.empty())
    std::fprintf(stderr, "ncsde: error: %s\n", e.what());
  else
    std::fprintf(stderr, "ncsde: error: %s (flag %.*s)\n", e.what(), static_cast<int>(flag.size()),
                 flag.data());
}

std::optional<matrix> read_initial_state(std::string_view text, std::string_view flag,
                                         int min_size) {
  try {
    const matrix v = validate_state(flag, fmt::format("the matrix '{}'", text),
                                    parse_matrix(text, flag), /*require_psd=*/true);
    if (v.rows() < min_size)
      throw_invalid(flag, fmt::format("the matrix '{}' must have m >= {} rows (got {})", text,
                                      min_size, v.rows()));
    // The numbers' range: beyond 1e100 the summaries' second moments (squares summed over the
    // ensemble) overflow to inf; the SDE side's --blowup-threshold has the same ceiling.
    if (v.size() > 0 && !(v.cwiseAbs().maxCoeff() <= max_state_entry))
      throw_invalid(flag, fmt::format("the matrix '{}' has an entry of magnitude {:.3g}, above "
                                      "the {:g} the summaries can square and sum",
                                      text, v.cwiseAbs().maxCoeff(), max_state_entry));
    return v;
  } catch (const ncsde::invalid_argument& e) {
    std::fprintf(stderr, "ncsde: error: %s\n", e.what());
    return std::nullopt;
  }
}

}  // namespace ncsde::cli
