#include "models/model_flags.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <system_error>
#include <variant>
#include <vector>

#include "command.hpp"
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
    {"c_plus", "--c-plus"},          {"c_minus", "--c-minus"}, {"gamma2", "--gamma2"},
    {"hidden_ratio", "--hidden-ratio"}, {"tau0", "--tau0"},     {"heads", "--heads"},
    {"output_projection", "--output-projection"},               {"causal", "--causal"},
    // The finite networks' own parameters (sample_networks, literal_network, reduced_network).
    {"n", "--n"}, {"d", "--d"}, {"n_k", "--nk"}, {"form", "--attention"}, {"V0", "--V0"},
    {"networks", "--networks"}, {"threads", "--threads"}, {"stop_level", "--stop-level"},
    // The integrator's and the ensembles' (integrate_options, step_grid, ensemble_options).
    {"dt", "--dt"}, {"T", "--T"}, {"blowup_threshold", "--blowup-threshold"}, {"paths", "--paths"},
    // ncsde validate's (validate_command.cpp, variants.hpp).
    {"tail_level", "--tail-level"}, {"unstopped_tail_level", "--unstopped-tail-level"},
    {"alpha", "--alpha"}, {"variant", "--variants"},
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
    pieces.push_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos
                                                                   : pos - start));
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

void add_model_flags(CLI::App& sub, model_flags& flags) {
  models::shaped_params& p = flags.params;
  sub.add_option("--model", flags.model, "Architecture whose covariance SDE is used")
      ->check(CLI::IsMember({"mlp", "resnet", "attention", "transformer"}))
      ->capture_default_str();
  sub.add_option("--c-plus", p.c_plus, "c+, ReLU shaping (finite)")->capture_default_str();
  sub.add_option("--c-minus", p.c_minus, "c-, ReLU shaping (finite)")->capture_default_str();
  sub.add_option("--gamma2", p.gamma2, "gamma^2, residual branch weight, in [0, 1]")
      ->capture_default_str();
  sub.add_option("--tau0", p.tau0, "tau0, attention temperature, > 0")->capture_default_str();
  sub.add_option("--hidden-ratio", p.hidden_ratio, "r, MLP hidden width ratio, > 0")
      ->capture_default_str();
  sub.add_option("--heads", p.heads, "n_h, attention heads, >= 1 (1 for mlp and resnet)")
      ->transform(decimal_integer)
      ->capture_default_str();
  sub.add_flag("--output-projection", p.output_projection,
               "Multi-head output projection W^O present (attention, transformer)");
  sub.add_flag("--causal", p.causal, "Causal attention mask (attention, transformer)");
}

models::architecture parse_architecture(std::string_view text) {
  if (text == "mlp") return models::architecture::mlp;
  if (text == "resnet") return models::architecture::resnet;
  if (text == "attention") return models::architecture::attention;
  if (text == "transformer") return models::architecture::transformer;
  throw_invalid_argument("ncsde", "--model", text, "one of mlp, resnet, attention, transformer");
}

std::optional<models::covariance_sde> make_model(const model_flags& flags) {
  try {
    return models::covariance_sde(parse_architecture(flags.model), flags.params);
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
        matrix_error(flag, text,
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
      ->check(CLI::Range(1LL, 1'000'000'000LL))
      ->capture_default_str();
  sub.add_option("--sampler", flags.sampler,
                 "literal: explicit n×n weights (docs/maths.md §2); reduced: the exact-in-law V-chain "
                 "without weights (docs/maths.md §7), same law, O(m³ + m²·r·n) per layer")
      ->check(CLI::IsMember({"literal", "reduced"}))
      ->capture_default_str();
  sub.add_option("--seed", flags.seed, "Seed of the (seed, network) random streams")
      ->transform(non_negative_integer)
      ->capture_default_str();
  sub.add_option("--threads", flags.threads, "Worker threads (0: all cores)")
      ->transform(decimal_integer)
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
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

std::optional<any_network> make_network(const model_flags& model, const network_flags& net, int m,
                                        networks::attention_form form) {
  try {
    const models::architecture arch = parse_architecture(model.model);
    if (net.sampler == "literal")
      return any_network(std::in_place_type<networks::literal_network>, arch, model.params, m,
                         net.n, net.key_dimension(), form);
    if (net.sampler == "reduced")
      return any_network(std::in_place_type<networks::reduced_network>, arch, model.params, m,
                         net.n, net.key_dimension(), form);
    throw_invalid_argument("ncsde", "--sampler", net.sampler, "one of literal, reduced");
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
    return std::visit(
        [&](const auto& sampler) { return networks::sample_networks(sampler, v0, d, opt); }, net);
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
    return v;
  } catch (const ncsde::invalid_argument& e) {
    std::fprintf(stderr, "ncsde: error: %s\n", e.what());
    return std::nullopt;
  }
}

}  // namespace ncsde::cli
