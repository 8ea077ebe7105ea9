#pragma once
/// The flags of the commands that run ensembles of SDE paths (`ncsde simulate`, `ncsde blowup`): the
/// ensemble's size and streams,
///
///   --paths N  --seed S  --threads N  --scheme NAME
///
/// and the step control,
///
///   --step-control fixed|increment|doubling   how steps are chosen inside each grid step of --dt
///   --tolerance TOL                           the adaptive controllers' tolerance, [1e-12, 1]
///   --max-depth D                             their largest number of halvings of a grid step
///
/// (ncsde::step_control, integrate.hpp: with an adaptive controller --dt is the largest step). The
/// tolerance and depth are checked with fixed steps too, and adaptive runs keep the library's work
/// limits (docs/step_control.md).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <string_view>

#include "ncsde/integrate.hpp"

namespace ncsde::cli {

struct ensemble_flags {
  long long paths = 1000;
  std::uint64_t seed = 1;
  int threads = 0;
  std::string scheme = "em";
  bool batched = true;
  std::string device = "cpu";
};

/// Adds --paths, --seed, --threads, --scheme (any registry scheme), --batched and --device to `sub`,
/// with the initial values of `flags` as their defaults.
void add_ensemble_flags(CLI::App& sub, ensemble_flags& flags);

/// Adds --device (cpu, cuda[:N], auto, emulated; ncsde::parse_device reads it) to `sub`; `runs`
/// names what runs there in the help text.
void add_device_flag(CLI::App& sub, std::string& device, std::string_view runs = "the paths");

struct step_flags {
  std::string control = "fixed";
  double tolerance = 0.05;
  int max_depth = 40;
};

/// Adds the three flags to `sub`, writing into `flags`; `default_control` is --step-control's
/// default.
void add_step_flags(CLI::App& sub, step_flags& flags, const std::string& default_control = "fixed");

/// Sets control, tolerance and max_depth of `opt` from the flags (ncsde::invalid_argument naming the
/// flag and the value for a bad one, whatever the control).
void apply_step_flags(const step_flags& flags, integrate_options& opt);

}  // namespace ncsde::cli
