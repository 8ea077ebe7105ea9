#pragma once
/// Command-line flags shared by the model-layer subcommands (`ncsde coefficients`, `ncsde simulate`):
/// the architecture and the parameters of ncsde::models::shaped_params (SPEC.md §10), plus the
/// parser of matrices written on the command line.
///
///   --model mlp|resnet|attention|transformer  --c-plus C  --c-minus C  --gamma2 G  --tau0 T
///   --hidden-ratio R  --heads N  --output-projection  --causal
///
/// Defaults are those of shaped_params. Parameter domains are checked once, by the model's
/// constructor; its ncsde::invalid_argument is reported as "ncsde: error: <message> (flag --name)"
/// with exit code 2 (cli::exit_usage).
#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "ncsde/concepts.hpp"
#include "ncsde/models/shaped.hpp"

namespace ncsde::cli {

/// The values of the model flags after parsing.
struct model_flags {
  std::string model = "mlp";
  models::shaped_params params;
};

/// Adds --model and the parameter flags to `sub`, writing into `flags` (which must outlive the
/// parse). The defaults shown by --help are the initial values of `flags`.
void add_model_flags(CLI::App& sub, model_flags& flags);

/// Parses "mlp", "resnet", "attention", "transformer"; throws ncsde::invalid_argument naming --model.
models::architecture parse_architecture(std::string_view text);

/// Builds the covariance SDE of the flags. On a bad parameter prints "ncsde: error: <message>
/// (flag --<name>)" to stderr and returns std::nullopt (the caller exits with cli::exit_usage).
std::optional<models::covariance_sde> make_model(const model_flags& flags);

/// Parses a matrix written row by row: rows separated by ';', entries by ',', blanks around numbers
/// allowed, e.g. "1, 0.5; 0.5, 1". Every entry must be a complete finite decimal number and every row
/// must have as many entries as there are rows (a square matrix). Throws ncsde::invalid_argument
/// naming `flag` and quoting `text` otherwise.
matrix parse_matrix(std::string_view text, std::string_view flag);

/// Validates a parsed matrix as a model state (symmetric, finite; positive semidefinite when
/// `require_psd`) and returns it exactly symmetrised. On failure prints "ncsde: error: <message>" and
/// returns std::nullopt. Parse errors of parse_matrix are reported the same way.
std::optional<matrix> read_state(std::string_view text, std::string_view flag, bool require_psd);

}  // namespace ncsde::cli
