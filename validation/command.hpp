#pragma once
/// The subcommands of the `ncsde` program. A subcommand is one file defining a function that
/// returns its `command`; main.cpp lists them (one line per subcommand).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "limits.hpp"

namespace ncsde::cli {

/// Exit codes shared by all subcommands.
inline constexpr int exit_ok = 0;
inline constexpr int exit_failure =
    1;  ///< the run failed, or (with --check) a result is out of tolerance
inline constexpr int exit_usage = 2;  ///< bad command line or parameter values, unwritable outputs
/// (validate --check, --check-limit) the run lacks the power to decide: a wrong SDE is not rejected
inline constexpr int exit_inconclusive = 3;

namespace detail {

/// Rewrites the integer in `text` as an optional '-' and decimal digits without leading zeros, or
/// returns false when `text` is not an integer written in decimal: an optional sign ('-' only with
/// `allow_negative`), digits, an optional fraction and an optional exponent, with an integer value
/// of at most 20 digits ("1e6", "2.5e3" and "+010" are 1000000, 2500 and 10; "1.5", "1e-3",
/// "0x10" are refused). CLI11 2.1 reads integers with strtoll/strtoull in base 0, where "010" is
/// octal 8, "0x10" is 16 and "1e6" is an error; the canonical text reads as the number written.
inline bool canonical_decimal(std::string& text, bool allow_negative) {
  std::string_view rest = text;
  bool negative = false;
  if (!rest.empty() && (rest.front() == '+' || (allow_negative && rest.front() == '-'))) {
    negative = rest.front() == '-';
    rest.remove_prefix(1);
  }
  auto take_digits = [&rest]() {
    const std::size_t end = std::min(rest.find_first_not_of("0123456789"), rest.size());
    const std::string_view digits = rest.substr(0, end);
    rest.remove_prefix(end);
    return digits;
  };
  std::string digits(take_digits());
  std::string_view fraction;
  if (!rest.empty() && rest.front() == '.') {
    rest.remove_prefix(1);
    fraction = take_digits();
  }
  if (digits.empty() && fraction.empty()) return false;
  long long exponent = 0;
  if (!rest.empty() && (rest.front() == 'e' || rest.front() == 'E')) {
    rest.remove_prefix(1);
    if (!rest.empty() && rest.front() == '+') rest.remove_prefix(1);
    const std::string_view e = take_digits();
    if (e.empty() || e.size() > 3) return false;
    exponent = std::stoll(std::string(e));
  }
  if (!rest.empty()) return false;
  // value = digits.fraction × 10^exponent: an integer when the fraction's significant digits
  // fit in the exponent.
  fraction = fraction.substr(0, std::min(fraction.find_last_not_of('0') + 1, fraction.size()));
  if (static_cast<long long>(fraction.size()) > exponent) return false;
  digits += fraction;
  digits.append(static_cast<std::size_t>(exponent) - fraction.size(), '0');
  if (digits.empty()) digits = "0";  // ".0": no digit before the point, no significant one after
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size() - 1));
  if (digits.size() > 20) return false;
  text = (negative && digits != "0" ? "-" : "") + digits;
  return true;
}

}  // namespace detail

/// CLI11 transform for integer flags (add it with ->transform(), before any range check): the
/// value must be an integer written in decimal, as digits or with an exponent ("1e6"), so "1.5",
/// "1e-3" and "0x10" are refused with the flag and the text named, and "010" is ten, not CLI11's
/// octal eight.
inline const CLI::Validator decimal_integer(
    [](std::string& text) -> std::string {
      const std::string given = text;
      if (!detail::canonical_decimal(text, /*allow_negative=*/true))
        return "must be a decimal integer such as 1000 or 1e6 (got '" + given + "')";
      return {};
    },
    "", "decimal integer");

/// CLI11 transform for unsigned flags such as --seed (add it with ->transform()): a decimal integer
/// in [0, 2^64 − 1], as digits or with an exponent. Without it CLI11 would wrap "-5" around to
/// 2^64 − 5, clamp 2^64 and above to 2^64 − 1 and read "010" as octal.
inline const CLI::Validator non_negative_integer(
    [](std::string& text) -> std::string {
      const std::string given = text;
      if (!detail::canonical_decimal(text, /*allow_negative=*/false))
        return "must be a non-negative integer (got '" + given + "')";
      std::uint64_t value = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (ec != std::errc() || end != text.data() + text.size())
        return "must be at most 2^64 - 1 = " +
               std::to_string(std::numeric_limits<std::uint64_t>::max()) + " (got '" + given + "')";
      return {};
    },
    "NONNEGATIVE", "non-negative integer");

/// The flags every command spells alike. --format with its choices (table, json unless given).
inline CLI::Option* add_format_flag(CLI::App& sub, std::string& format, const std::string& help,
                                    std::vector<std::string> choices = {"table", "json"}) {
  return sub.add_option("--format", format, help)
      ->check(CLI::IsMember(std::move(choices)))
      ->capture_default_str();
}
/// --seed of the random streams: a decimal integer in [0, 2^64 − 1].
inline CLI::Option* add_seed_flag(CLI::App& sub, std::uint64_t& seed, const std::string& help) {
  return sub.add_option("--seed", seed, help)
      ->transform(non_negative_integer)
      ->capture_default_str();
}
/// --threads: worker threads in [0, max_threads], 0 for all cores.
inline CLI::Option* add_threads_flag(CLI::App& sub, int& threads) {
  return sub.add_option("--threads", threads, "Worker threads (0: all cores)")
      ->transform(decimal_integer)
      ->check(CLI::Range(0, max_threads))
      ->capture_default_str();
}

/// --plots DIR: the directory a command writes its data and figures into; `what` says which.
inline CLI::Option* add_plots_flag(CLI::App& sub, std::string& dir, const std::string& what) {
  return sub.add_option("--plots", dir, what)->type_name("DIR");
}

/// One `ncsde <name>` subcommand. setup() adds the options to the CLI11 subcommand `sub` and
/// returns the action to run once the command line has been parsed (it returns the exit code).
struct command {
  std::string name;
  std::string description;
  std::function<std::function<int()>(CLI::App& sub)> setup;
};

/// The program's arguments argv[1…], kept by main() for a command that records how it was called
/// (the shards of `ncsde validate` carry their command line, which `ncsde merge` parses again).
inline std::vector<std::string>& program_arguments() {
  static std::vector<std::string> arguments;
  return arguments;
}

/// The program after MPI's start: loads the --models-library files (named anywhere in argv),
/// parses argv with every command below and runs the one named; returns the exit code (errors are
/// written to stderr as "ncsde <command>: error: …"). argv[0] is the program's name. main.cpp
/// calls it, and so does the Python module (in its own process, without MPI).
int run_program(int argc, char** argv);

/// Flushes the standard output after a command: when it cannot be written (a full disk, /dev/full,
/// an I/O error) prints "ncsde <command>: cannot write the standard output: <reason>" and returns
/// exit_failure (or `rc` when that already is a failure); returns `rc` otherwise. A failed write is
/// a failed run.
int finish_standard_output(std::string_view command, int rc);

/// `ncsde convergence`: measured strong and weak orders of the schemes (validation/convergence/).
command convergence_command();

/// `ncsde coefficients`: drift and diffusion of a model's covariance SDE at one state (validation/models/).
command coefficients_command();

/// `ncsde simulate`: an ensemble of paths of a model's covariance SDE (validation/models/).
command simulate_command();

/// `ncsde merge`: the shards of a simulate run joined into its output (validation/models/).
command merge_command();

/// `ncsde validate`: SDE vs finite networks, laws of the stopped processes (validation/fidelity/).
command validate_command();

/// `ncsde sample-network`: finite shaped networks, summarised at depth d (validation/networks/).
command sample_network_command();

/// `ncsde rank-collapse`: unshaped vs shaped attention networks over depth (validation/networks/).
command rank_collapse_command();

/// `ncsde blowup`: the blow-up law of a model's covariance SDE (validation/blowup/).
command blowup_command();

/// `ncsde models`: the registered models, their parameters and samplers (validation/models/).
command models_command();

}  // namespace ncsde::cli
