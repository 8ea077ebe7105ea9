#pragma once
/// The step-control flags of the commands that integrate paths (`ncsde simulate`, `ncsde blowup`):
///
///   --step-control fixed|increment|doubling   how steps are chosen inside each grid step of --dt
///   --tolerance TOL                           the adaptive controllers' tolerance, (0, 1]
///   --max-depth D                             their largest number of halvings of a grid step
///
/// (ncsde::step_control, integrate.hpp: with an adaptive controller --dt is the largest step).
#include <CLI/CLI.hpp>

#include <string>

#include "ncsde/integrate.hpp"

namespace ncsde::cli {

struct step_flags {
  std::string control = "fixed";
  double tolerance = 0.05;
  int max_depth = 40;
};

/// Adds the three flags to `sub`, writing into `flags`; `default_control` is --step-control's
/// default.
void add_step_flags(CLI::App& sub, step_flags& flags, const std::string& default_control = "fixed");

/// Sets control, tolerance and max_depth of `opt` from the flags (ncsde::invalid_argument naming the
/// flag for a bad value).
void apply_step_flags(const step_flags& flags, integrate_options& opt);

}  // namespace ncsde::cli
