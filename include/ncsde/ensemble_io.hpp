#pragma once
/// Output of ensemble runs: CSV (one row per path) and a JSON summary.
#include <iosfwd>
#include <string>
#include <vector>

#include "ncsde/ensemble.hpp"
#include "ncsde/report_field.hpp"

namespace ncsde {

/// Header `path,status,t_stop,V11,V12,…,V1m,V22,…,Vmm` (upper triangle, row-major, 1-indexed), then one
/// row per path (requires ensemble_options::keep_paths). Numbers are written with 17 significant digits
/// (round-trip exact); a blown-up path's non-finite entries are written as inf / nan.
void write_csv(const ensemble_result& r, std::ostream& out);

/// The saved states in long form: header `path,t,V11,V12,…,Vmm`, one row per path and save time the
/// path reached (requires keep_paths and save_times), for sample paths such as ρ_t.
void write_saved_csv(const ensemble_result& r, std::ostream& out);

/// The summary as a JSON document: run parameters, counts and fractions (with standard errors),
/// explosion-time quantiles, cone-event counters, mean and covariance of the packed terminal state over
/// completed paths, per-save-time moments, and functional quantiles. Non-finite numbers become null,
/// except +inf quantiles, written as the string "inf".
std::string summary_json(const ensemble_result& r, int indent = 2);

/// A short human-readable table of the same summary.
std::string summary_table(const ensemble_result& r);

/// The pieces of the summary, each described once (report_field) for every writer: summary_json,
/// `ncsde blowup`'s report and the Python module's ncsde.Result.
/// Cone events: violations, projected, refined, boundary, paths_with_violations, min_eigenvalue.
std::vector<report_field> pd_fields(const ensemble_result& r);
/// What the paths ran on (ensemble_result::device): device, note, handed_back.
std::vector<report_field> device_fields(const ensemble_result& r);
/// Adaptive stepping: control, tolerance, steps, refinements, unresolved, deepest_halving,
/// steps_per_path, exhausted.
std::vector<report_field> stepping_fields(const ensemble_result& r);
/// Quantiles q0.05, q0.25, q0.5, q0.75, q0.95 of the explosion times (NaN without blown-up paths).
std::vector<report_field> explosion_time_quantiles(const ensemble_result& r);
/// A summarised functional: name, levels, quantiles_completed, quantiles_all (over all paths,
/// +inf for blown-up ones), mean_completed, mean_completed_stderr.
std::vector<report_field> functional_fields(const functional_summary& f);

}  // namespace ncsde
