#pragma once
/// The subcommands of the `ncsde` program. A subcommand is one file defining a function that
/// returns its `command`; main.cpp lists them (one line per subcommand).
#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace ncsde::cli {

/// Exit codes shared by all subcommands.
inline constexpr int exit_ok = 0;
inline constexpr int exit_failure =
    1;  ///< the run failed, or (with --check) a result is out of tolerance
inline constexpr int exit_usage = 2;  ///< bad command line or bad parameter values

/// CLI11 check for unsigned flags such as --seed: a decimal integer in [0, 2^64). Without it CLI11
/// would wrap "-5" around to 2^64 − 5.
inline const CLI::Validator non_negative_integer(
    [](std::string& text) -> std::string {
      if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
        return "must be a non-negative integer (got '" + text + "')";
      return {};
    },
    "NONNEGATIVE", "non-negative integer");

/// One `ncsde <name>` subcommand. setup() adds the options to the CLI11 subcommand `sub` and
/// returns the action to run once the command line has been parsed (it returns the exit code).
struct command {
  std::string name;
  std::string description;
  std::function<std::function<int()>(CLI::App& sub)> setup;
};

/// `ncsde convergence`: measured strong and weak orders of the schemes (validation/convergence/).
command convergence_command();

/// `ncsde coefficients`: drift and diffusion of a model's covariance SDE at one state (validation/models/).
command coefficients_command();

/// `ncsde simulate`: an ensemble of paths of a model's covariance SDE (validation/models/).
command simulate_command();

/// `ncsde validate`: SDE vs finite networks, laws of the stopped processes (validation/fidelity/).
command validate_command();

/// `ncsde sample-network`: finite shaped networks, summarised at depth d (validation/networks/).
command sample_network_command();

/// `ncsde rank-collapse`: unshaped vs shaped attention networks over depth (validation/networks/).
command rank_collapse_command();

}  // namespace ncsde::cli
