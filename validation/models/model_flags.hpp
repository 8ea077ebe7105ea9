#pragma once
/// Command-line flags shared by the model-layer subcommands (`ncsde coefficients`, `simulate`,
/// `validate`, `sample-network`, `rank-collapse`), generated from the model registry
/// (ncsde/models/registry.hpp): --model NAME for every registered model, and one flag per
/// parameter of any registered model, with the parameter's default and help, e.g. for the four
/// architectures (ncsde::models::shaped_params, docs/maths.md §10)
///
///   --model mlp|resnet|attention|transformer|shaped-tanh  --c-plus C  --c-minus C  --gamma2 G
///   --tau0 T  --hidden-ratio R  --heads N  --output-projection  --causal   (shaped-tanh: --a, --activation)
///
/// plus the parser of matrices written on the command line. A parameter flag the chosen model does
/// not take is refused, naming the model's parameters. Parameter domains are checked once, by the
/// model's constructor; its ncsde::invalid_argument is reported as "ncsde: error: <message> (flag
/// --name)" with exit code 2 (cli::exit_usage).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ncsde/concepts.hpp"
#include "ncsde/error.hpp"
#include "ncsde/models/registry.hpp"
#include "ncsde/models/shaped.hpp"
#include "ncsde/networks/literal.hpp"
#include "ncsde/networks/reduced.hpp"
#include "ncsde/networks/sample.hpp"

namespace ncsde::cli {

/// The values of the model flags after parsing.
struct model_flags {
  std::string model = "mlp";
  /// The value of every registered model's parameter, by flag name (the flags' targets: a node
  /// of the map does not move), at the parameter's default until parsed.
  std::map<std::string, models::parameter_value, std::less<>> values;
  /// The parameter flags, to tell the given ones (set by add_model_flags).
  std::vector<std::pair<std::string, const CLI::Option*>> options;

  model_flags();
  /// Puts --model and every parameter back to its default in place: the map's nodes, which the
  /// flags of add_model_flags write into, and `options` are kept (assigning a new model_flags
  /// would free the nodes an App still refers to).
  void reset();
  /// The registry entry of `model`; throws ncsde::invalid_argument naming --model and the
  /// registered models.
  const models::model_entry& entry() const;
  /// The values of the parameters `model` takes. Throws ncsde::invalid_argument when a parameter
  /// flag the model does not take was given ("--gamma2 is not a parameter of shaped-tanh (its
  /// parameters: --a, --activation)").
  models::parameter_values parameter_values() const;
  /// The shaped_params of the four architectures' flags (their defaults for another model).
  models::shaped_params params() const;
};

/// Adds --model and the parameter flags to `sub`, writing into `flags` (which must outlive the
/// parse). The defaults shown by --help are the initial values of `flags`.
void add_model_flags(CLI::App& sub, model_flags& flags);

/// Parses "mlp", "resnet", "attention", "transformer"; throws ncsde::invalid_argument naming --model.
models::architecture parse_architecture(std::string_view text);

/// The architecture of a built-in model name, or std::nullopt for any other registered model.
std::optional<models::architecture> builtin_architecture(std::string_view text);

/// Builds the model of the flags (registry entry, parameter values). On a bad parameter prints
/// "ncsde: error: <message> (flag --<name>)" to stderr and returns std::nullopt (the caller exits
/// with cli::exit_usage).
std::optional<models::model_instance> make_model(const model_flags& flags);

/// Parses a matrix written row by row: rows separated by ';', entries by ',', blanks around numbers
/// allowed, e.g. "1, 0.5; 0.5, 1". Every entry must be a complete finite decimal number and every row
/// must have as many entries as there are rows (a square matrix). Throws ncsde::invalid_argument
/// naming `flag` and quoting `text` otherwise.
matrix parse_matrix(std::string_view text, std::string_view flag);

/// Validates a parsed matrix as a model state (symmetric, finite; positive semidefinite when
/// `require_psd`) and returns it exactly symmetrised. On failure prints "ncsde: error: <message>" and
/// returns std::nullopt. Parse errors of parse_matrix are reported the same way.
std::optional<matrix> read_state(std::string_view text, std::string_view flag, bool require_psd);

/// The values of the finite-network flags (`ncsde sample-network`, `ncsde rank-collapse`) after
/// parsing: width n, depth d (T = d/n), key dimension n_k, ensemble size, sampler, seed, threads.
struct network_flags {
  int n = 64;
  int d = 64;
  int n_k = 0;  ///< 0 (the flag was not given): n_k = n
  long long networks = 1000;
  std::string sampler = "reduced";
  std::uint64_t seed = 1;
  int threads = 0;
  const CLI::Option* sampler_option = nullptr;  ///< set by add_network_flags
  /// n_k as used: the --nk value, or n when it was not given.
  int key_dimension() const { return n_k > 0 ? n_k : n; }
  /// The sampler as used for `entry`: --sampler, or, when the flag was not given and the model
  /// has no sampler of the default's name, the model's first sampler (shaped-tanh: literal).
  std::string sampler_for(const models::model_entry& entry) const;
};

/// Adds --n, --d, --nk, --networks, --sampler (literal|reduced), --seed and --threads to `sub`,
/// writing into `flags` (which must outlive the parse); the defaults shown by --help are the
/// initial values of `flags`, and `require_size` makes --n and --d mandatory instead. Values
/// outside n ≥ 2, d ≥ 1, n_k ≥ 1, networks ≥ 1, threads ≥ 0 and unknown samplers are refused by
/// CLI11 with the flag and the value in the message (exit code 2).
void add_network_flags(CLI::App& sub, network_flags& flags, bool require_size);

/// Adds the option `name` (e.g. "--n") holding a comma-separated list of integers, each a decimal
/// integer as decimal_integer reads it ("32,64,1e3"), to `sub`, writing into `values` (which must
/// outlive the parse). Rules on the values (range, order) are the command's.
CLI::Option* add_integer_list(CLI::App& sub, const std::string& name, std::vector<int>& values,
                              const std::string& description);

/// A finite-network sampler of any kind and model (docs/maths.md §2 literal weights, §7 reduced in
/// law, or a registered model's own), behind the registry's type-erased handle.
using any_network = models::network_instance;

/// The sampler a model uses when the --sampler flag was not given: `requested` when the model
/// has it, else its first sampler. (A given flag is used as given.)
std::string resolve_sampler(const models::model_entry& entry, const std::string& requested,
                            bool given);

/// Parses "shaped", "unshaped"; throws ncsde::invalid_argument naming --attention.
networks::attention_form parse_attention_form(std::string_view text);

/// Builds the sampler of the flags (network_flags::sampler_for) for m tokens with attention form
/// `form`. On a bad parameter
/// (n < m, heads not dividing n, r·n not an integer, unshaped attention without attention, or any
/// model-parameter rule) prints the library's message with its flag (report_invalid_argument) and
/// returns std::nullopt (the caller exits with cli::exit_usage).
std::optional<any_network> make_network(const model_flags& model, const network_flags& net, int m,
                                        networks::attention_form form);

/// The network_options of the flags: seed, ensemble size and threads; depths, stop level and the
/// rest keep network_options' defaults for the command to set.
networks::network_options network_options_of(const network_flags& net);

/// networks::sample_networks(sampler, v0, d, opt) on the sampler `net` holds. A bad argument (a
/// stop level or depth out of range, a V0 the sampler refuses) is printed by
/// report_invalid_argument and gives std::nullopt (the caller exits with cli::exit_usage); any
/// other exception propagates.
std::optional<networks::network_ensemble> sample_any_network(const any_network& net,
                                                             const matrix& v0, int d,
                                                             const networks::network_options& opt);

/// Prints a library ncsde::invalid_argument ("<where>: <param> must be …") to stderr as
/// "ncsde: error: <message> (flag --<name>)" when <param> belongs to a flag of the model or network
/// flags or of the run flags (e.g. n_k → --nk, form → --attention, stop_level → --stop-level,
/// dt → --dt, T → --T), else without the flag.
void report_invalid_argument(const ncsde::invalid_argument& e);

/// The largest magnitude of an entry of a network's initial state: beyond it the summaries' second
/// moments overflow (the SDE side's --blowup-threshold has the same ceiling, 1e100).
inline constexpr double max_state_entry = 1e100;

/// As read_state (require_psd), with the flag and the matrix text in every message
/// ("--V0: the matrix '1,2;0,1' is not symmetric …"), m ≥ min_size rows and every entry of
/// magnitude at most max_state_entry required.
std::optional<matrix> read_initial_state(std::string_view text, std::string_view flag,
                                         int min_size);

}  // namespace ncsde::cli
