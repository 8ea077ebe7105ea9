/// `ncsde coefficients`: the drift b(V) and the diffusion Σ(V) of a model's covariance SDE at one
/// state V (docs/maths.md §3.3, §4; ncsde/models/shaped.hpp).
///
///   ncsde coefficients --V "v11,v12;v21,v22" [--model M] [model flags] [--format json|table]
///
/// json: {"model": M, "m": m, "drift": m×m nested array of b(V), "diffusion": flat array of the m⁴
/// numbers Σ^{ab,cd} = Cov(dV^{ab}, dV^{cd})/dt, row-major in (a, b, c, d)}, numbers with 17
/// significant digits (round-trip exact). The full tensor is expanded from the packed K×K
/// covariance() by its symmetries Σ^{ab,cd} = Σ^{ba,cd} = Σ^{ab,dc}. table: the drift matrix and the
/// packed Σ with its (a,b) labels (1-indexed). A V at which some coefficient is not finite (an
/// overflow: Σ is quadratic in V) is refused with exit code 2, naming --V and the entry, or naming
/// the model's parameters when the coefficients overflow at V = I as well (--tau0 1e-300). A V
/// whose output would not fit in memory (m⁴ numbers) is refused before it is computed. A model
/// without the dense Σ (a models-library SDE that gives only its noise map) prints its drift, with
/// "diffusion": null and "diffusion_missing" saying what is missing (exit 0).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "command.hpp"
#include "limits.hpp"
#include "models/model_flags.hpp"
#include "ncsde/error.hpp"
#include "ncsde/symmetric.hpp"

namespace ncsde::cli {
namespace {

struct coefficients_args {
  model_flags model;
  std::string v;
  std::string format = "json";
};

/// A JSON number with 17 significant digits; non-finite values become null.
std::string json_number(double x) { return std::isfinite(x) ? fmt::format("{:.17g}", x) : "null"; }

/// Σ^{ab,cd} read from the packed K×K operator (any order of a, b and of c, d).
double full_entry(const matrix& sigma, int a, int b, int c, int d, int m) {
  const int i = packed_index(std::min(a, b), std::max(a, b), m);
  const int j = packed_index(std::min(c, d), std::max(c, d), m);
  return sigma(i, j);
}

/// What the output says of a model without the dense Σ.
constexpr std::string_view no_sigma =
    "the model gives its noise map G(V)xi but not the dense Sigma(V) (covariance(), "
    "ncsde::CovarianceSde): the diffusion is not printed";

std::string coefficients_json(const std::string& model, const matrix& drift,
                              const std::optional<matrix>& sigma_or_none) {
  const int m = static_cast<int>(drift.rows());
  std::string out = fmt::format("{{\n  \"model\": \"{}\",\n  \"m\": {},\n  \"drift\": [", model, m);
  for (int a = 0; a < m; ++a) {
    out += a == 0 ? "[" : ", [";
    for (int b = 0; b < m; ++b) out += (b == 0 ? "" : ", ") + json_number(drift(a, b));
    out += "]";
  }
  if (!sigma_or_none)
    return out + fmt::format("],\n  \"diffusion\": null,\n  \"diffusion_missing\": \"{}\"\n}}\n",
                             no_sigma);
  const matrix& sigma = *sigma_or_none;
  out += "],\n  \"diffusion\": [";
  bool first = true;
  for (int a = 0; a < m; ++a)
    for (int b = 0; b < m; ++b)
      for (int c = 0; c < m; ++c)
        for (int d = 0; d < m; ++d) {
          out += (first ? "" : ", ") + json_number(full_entry(sigma, a, b, c, d, m));
          first = false;
        }
  out += "]\n}\n";
  return out;
}

std::string coefficients_table(const std::string& model, const matrix& drift,
                               const std::optional<matrix>& sigma_or_none) {
  const int m = static_cast<int>(drift.rows());
  std::string out = fmt::format("model {}, m = {}\n\ndrift b(V):\n", model, m);
  for (int a = 0; a < m; ++a) {
    for (int b = 0; b < m; ++b) out += fmt::format("{:>24.17g}", drift(a, b));
    out += '\n';
  }
  if (!sigma_or_none) return out + fmt::format("\ndiffusion: {}\n", no_sigma);
  const matrix& sigma = *sigma_or_none;
  out += "\ndiffusion Sigma^{ab,cd} = Cov(dV^ab, dV^cd)/dt over packed pairs a <= b:\n";
  out += fmt::format("{:>8}", "");
  for (int c = 0; c < m; ++c)
    for (int d = c; d < m; ++d) out += fmt::format("{:>24}", fmt::format("({},{})", c + 1, d + 1));
  out += '\n';
  for (int a = 0, i = 0; a < m; ++a)
    for (int b = a; b < m; ++b, ++i) {
      out += fmt::format("{:>8}", fmt::format("({},{})", a + 1, b + 1));
      for (int j = 0; j < sigma.cols(); ++j) out += fmt::format("{:>24.17g}", sigma(i, j));
      out += '\n';
    }
  return out;
}

/// Throws ncsde::invalid_argument naming `flag` when b(V) or Σ(V) has a non-finite entry: a finite V
/// whose entries are large enough for the coefficients to overflow (Σ is quadratic in V, so
/// |V| ≈ 1e154 already gives inf), or parameters that overflow them at any V (--tau0 1e-300).
/// The first such entry is named, 1-indexed.
void require_finite_coefficients(std::string_view flag, std::string_view text, const matrix& drift,
                                 const matrix& sigma) {
  const int m = static_cast<int>(drift.rows());
  std::string entry;
  for (int a = 0; a < m && entry.empty(); ++a)
    for (int b = 0; b < m && entry.empty(); ++b)
      if (!std::isfinite(drift(a, b)))
        entry = fmt::format("b^{{{}{}}} = {}", a + 1, b + 1, drift(a, b));
  for (int a = 0, i = 0; a < m && entry.empty(); ++a)
    for (int b = a; b < m && entry.empty(); ++b, ++i)
      for (int c = 0, j = 0; c < m && entry.empty(); ++c)
        for (int d = c; d < m && entry.empty(); ++d, ++j)
          if (!std::isfinite(sigma(i, j)))
            entry =
                fmt::format("Sigma^{{{}{},{}{}}} = {}", a + 1, b + 1, c + 1, d + 1, sigma(i, j));
  if (!entry.empty())
    throw_invalid(flag, fmt::format("the coefficients overflow (are not finite) at V = '{}': {}",
                                    text, entry));
}

/// The model parameters given on the command line, "--tau0 1e-300, --c-plus 2", or "".
std::string given_parameters(const model_flags& flags) {
  std::string out;
  for (const auto& [name, option] : flags.options)
    if (option != nullptr && option->count() > 0)
      out += fmt::format("{}--{} {}", out.empty() ? "" : ", ", name, option->as<std::string>());
  return out;
}

/// Whose fault an overflow is: the model's parameters when the coefficients also overflow at the
/// identity of the same size (a V of unit scale), --V otherwise.
std::string overflow_culprit(const models::model_instance& sde, const model_flags& flags, int m) {
  const matrix eye = matrix::Identity(m, m);
  matrix drift, sigma;
  sde.drift(eye, drift, 0.0);
  sde.covariance(eye, sigma, 0.0);
  if (drift.allFinite() && sigma.allFinite()) return "--V";
  const std::string given = given_parameters(flags);
  return given.empty() ? std::string("the model's parameters")
                       : fmt::format(
                             "the model's parameters ({}; the coefficients overflow at V = "
                             "I too)",
                             given);
}

int run_coefficients_command(const coefficients_args& a) {
  const std::optional<models::model_instance> sde = make_model(a.model);
  if (!sde) return exit_usage;
  const std::optional<matrix> v = read_state(a.v, "--V", true);
  if (!v) return exit_usage;
  if (!sde->has_covariance()) {
    // The drift alone, and what is missing: the engine needs only the noise map G(V)ξ, which a
    // model may give without the dense Σ (ncsde::CovarianceSde's covariance()).
    matrix drift;
    sde->drift(*v, drift, 0.0);
    if (!drift.allFinite()) {
      std::fprintf(stderr,
                   "ncsde: error: coefficients: the drift of model %s is not finite at "
                   "V = '%s'\n",
                   a.model.model.c_str(), a.v.c_str());
      return exit_usage;
    }
    std::cout << (a.format == "json" ? coefficients_json(a.model.model, drift, std::nullopt)
                                     : coefficients_table(a.model.model, drift, std::nullopt));
    return exit_ok;
  }
  // Memory (limits.hpp): the packed K×K covariance, the model's own m×m work, and the output
  // text (about 26 bytes a number: the m⁴ entries of the JSON tensor, or the K² of the table).
  const double m = static_cast<double>(v->rows());
  const double K = m * (m + 1) / 2;
  const double numbers = a.format == "json" ? m * m * m * m : K * K;
  try {
    check_memory(
        "--V", fmt::format("(m = {})", v->rows()), 8.0 * K * K + 26.0 * numbers,
        fmt::format("Sigma's {:.0f} packed entries and the {:.0f} numbers of the {} output", K * K,
                    numbers, a.format));
  } catch (const ncsde::invalid_argument& e) {
    std::fprintf(stderr, "ncsde: error: %s\n", e.what());
    return exit_usage;
  }
  matrix drift, sigma;
  sde->drift(*v, drift, 0.0);
  sde->covariance(*v, sigma, 0.0);
  try {
    if (!drift.allFinite() || !sigma.allFinite())
      require_finite_coefficients(overflow_culprit(*sde, a.model, static_cast<int>(v->rows())), a.v,
                                  drift, sigma);
  } catch (const ncsde::invalid_argument& e) {
    std::fprintf(stderr, "ncsde: error: %s\n", e.what());
    return exit_usage;
  }
  std::cout << (a.format == "json" ? coefficients_json(a.model.model, drift, sigma)
                                   : coefficients_table(a.model.model, drift, sigma));
  return exit_ok;
}

}  // namespace

command coefficients_command() {
  command c;
  c.name = "coefficients";
  c.description = "Print the drift b(V) and diffusion Sigma(V) of a model's covariance SDE at V";
  c.setup = [](CLI::App& sub) -> std::function<int()> {
    auto a = std::make_shared<coefficients_args>();
    add_model_flags(sub, a->model);
    sub.add_option("--V", a->v,
                   "The state V, symmetric positive semidefinite: rows separated by ';', entries "
                   "by ',' (e.g. \"1,0.5;0.5,1\")")
        ->required();
    add_format_flag(sub, a->format, "Output format", {"json", "table"});
    return [a]() { return run_coefficients_command(*a); };
  };
  return c;
}

}  // namespace ncsde::cli
