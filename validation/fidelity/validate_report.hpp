#pragma once
/// The report of `ncsde validate` from its samples: the comparisons, the rate fit, the
/// extrapolation, the verdicts, and the Markdown and JSON that render them (docs/validation.md).
/// The program samples the registry's SDEs and networks; the Python module (ncsde.validate with a
/// user's SDE, network sampler or wrong SDEs) samples its own and makes the same report here.
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fidelity/fidelity.hpp"
#include "fidelity/variants.hpp"

namespace ncsde::cli {

/// The defaults of a validate run: one set for `ncsde validate`, scripts/main.sh (which runs them)
/// and ncsde.validate. They are the study that shows power (docs/maths.md §9.5): strong attention
/// (γ² = 1, τ₀ = ½) against 10⁵ networks per width n = 32 … 256 and 10⁵ SDE paths, where both wrong
/// SDEs are rejected at every width and the right one is not. The model and its parameters are the
/// study's only when no model is named (a parameter given replaces its value); a named model runs
/// at its own defaults.
struct validate_defaults {
  std::string model = "attention";
  std::vector<std::pair<std::string, double>> parameters{{"gamma2", 1.0}, {"tau0", 0.5}};
  double t_end = 1.0;
  std::vector<int> widths{32, 64, 128, 256};
  long long networks = 100000;
  long long paths = 100000;
  double dt = 1.0 / 1024;
  double stop_level = 5.0;
  double tail_level = 2.5;
  double unstopped_level = 20.0;
  int n_k = 0;  ///< 0: n_k = n
  std::string variants = "auto";
  double alpha = 0.01;
  std::string limit_exponent = "fitted";
  std::uint64_t seed = 1;
};

/// The reference state V3 of docs/maths.md §9.1 (diagonal (1, 1.6, 0.7), ρ¹² = 0.5, ρ¹³ = 0.3,
/// ρ²³ = 0.7): validate's default V0.
matrix validate_reference_state();

/// The times at which validate keeps sample paths: T·j/64, j = 0 … 64, each that is not a step of
/// the dt grid (T/dt not a multiple of 64) moved to the nearest step (T/dt an integer).
std::vector<double> validate_save_times(double t_end, double dt);

/// The wrong SDEs of `--variants` for a model (`shaped`: its covariance_sde, or null for another
/// model): "auto" (vpv unless causal, and no-attention, for the attention architectures; none
/// otherwise), "none", or a comma list of variant names. Throws ncsde::invalid_argument naming
/// `flag` for an unknown name, or for a list given with a model that has no variants.
std::vector<sde_variant> validate_variants(const std::string& text,
                                           const models::covariance_sde* shaped,
                                           const std::string& model, std::string_view flag);

/// The settings of a run, checked as `ncsde validate` and ncsde.validate check them before any
/// sample is drawn (each rule once): the widths non-empty, each ≥ 2 and strictly increasing; the
/// stop, tail and unstopped tail levels > 0 and finite; α in (0, 1); the limit exponent "fitted" or
/// a number in (0, 4], returned (unset for "fitted"). Throws ncsde::invalid_argument naming the
/// setting (the widths as `widths_name`: the program's flag is --n, Python's argument widths).
std::optional<double> check_validate_settings(const std::vector<int>& widths, double stop_level,
                                              double tail_level, double unstopped_level,
                                              double alpha, const std::string& limit_exponent,
                                              std::string_view widths_name = "n");

/// What the report says of the run besides its samples.
struct validate_setup {
  std::string model;            ///< the title's and the JSON's "model"
  std::string parameters;       ///< the title's parameter text
  std::string parameters_json;  ///< the JSON's "params", as JSON text
  std::string sampler;          ///< the networks' source, as the header names it
  std::string n_k = "n";        ///< the key dimension, as the header names it
  int m = 0;
  double t_end = 1.0, dt = 1.0 / 1024;
  long long paths = 0, networks = 0;
  double stop_level = 5.0, tail_level = 2.5, unstopped_level = 20.0, alpha = 0.01;
  std::vector<int> widths;               ///< strictly increasing
  std::optional<double> given_exponent;  ///< β of the extrapolation; unset: fitted
};

/// The samples the report compares. Every width's networks (stopped at the first layer with
/// max_a V^aa > K, and unstopped at depth d = T·n) against the right SDE monitored on that width's
/// grid; an independent SDE run on the widest grid (the noise floor); each wrong SDE, monitored on
/// every width's grid, against the widest networks.
struct validate_samples {
  sde_sample reference;  ///< by_width: one per width; unstopped
  sde_sample floor;      ///< by_width: the widest grid only
  std::vector<std::string> wrong_names;
  std::vector<sde_sample> wrong;                             ///< by_width: one per width
  std::vector<stopped_sample> nets_stopped, nets_unstopped;  ///< one per width
  double network_seconds = 0.0;
};

/// The outcome of a check: the test at the widest n (--check) or the extrapolated gaps
/// (--check-limit). A check whose wrong SDEs are not all rejected lacks power: it cannot tell the
/// right SDE from a wrong one, so whatever the right SDE's result it neither passes nor fails.
/// With no wrong SDE the power is not measured and the right SDE's result decides.
enum class check_outcome { passed, failed, lacks_power };
/// "passed", "failed", "lacks power".
std::string_view to_string(check_outcome outcome);

struct validate_report {
  std::string markdown;
  std::string json;             ///< indented by 2, no final newline
  bool right_accepted = false;  ///< the right SDE not rejected at the widest n
  bool wrong_rejected = true;   ///< every wrong SDE rejected there
  /// --check-limit's verdict: the right SDE's extrapolated gaps 0, every wrong SDE's not (false
  /// with fewer than two widths).
  bool limit_accepted = false;
  check_outcome check = check_outcome::failed;  ///< --check's outcome
  /// --check-limit's outcome (unset with fewer than two widths: nothing is extrapolated).
  std::optional<check_outcome> limit_check;
};

/// The report of the samples. Throws ncsde::invalid_argument when the samples do not fit the setup
/// (sizes of the lists, m, a sample empty).
validate_report make_validate_report(const validate_setup& setup, const validate_samples& samples);

/// The plot script's values.csv: every sample's stopped values (source, path, status, V11, V12, …).
void write_validate_values(std::ostream& out, const validate_setup& setup,
                           const validate_samples& samples);

/// Sample paths for paths.csv: packed V of each path at the times.
struct sampled_paths {
  std::string source;                       ///< "sde", "network_n256", …
  std::vector<double> times;                ///< per save
  std::vector<std::vector<vector>> packed;  ///< [path][save]
};
/// The plot script's paths.csv (source, path, t, V11, V12, …).
void write_validate_paths(std::ostream& out, int m, const std::vector<sampled_paths>& paths);

/// The stopped and unstopped samples of network covariances given at every layer: `layers`
/// [network][layer l = 0..d] packed V. Stopped: at the first l ≥ 1 where V is not finite (status
/// blown_up) or max_a V^aa > stop_level (status stopped), else completed at d; unstopped: V at d
/// (blown_up once any layer was not finite): networks::layer_stop_rule, as sample_networks.
void stop_network_layers(int m, const std::vector<std::vector<vector>>& layers, double stop_level,
                         stopped_sample& stopped, stopped_sample& unstopped);

}  // namespace ncsde::cli
