#include "ncsde/ensemble_io.hpp"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>
#include <vector>

#include "report_field_json.hpp"

namespace ncsde {
namespace {

using json = nlohmann::ordered_json;

json number(double x) {
  if (std::isfinite(x)) return x;
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return nullptr;
}

json vector_json(const vector& v) {
  json a = json::array();
  for (Eigen::Index i = 0; i < v.size(); ++i) a.push_back(number(v(i)));
  return a;
}

json matrix_json(const matrix& m) {
  json rows = json::array();
  for (Eigen::Index i = 0; i < m.rows(); ++i) rows.push_back(vector_json(m.row(i).transpose()));
  return rows;
}

/// The fields as an object, in their order (non-finite numbers as number() writes them).
json fields_json(const std::vector<report_field>& fields) {
  return detail::fields_json<json>(fields, number);
}

json moments_json(const moments& mo) {
  json j;
  j["count"] = mo.count();
  j["mean"] = vector_json(mo.mean());
  j["stderr"] = mo.count() > 1 ? vector_json(mo.standard_error()) : json::array();
  // null when the run kept the variances only (ensemble_options::covariance).
  j["covariance"] = mo.has_covariance() ? matrix_json(mo.covariance()) : json(nullptr);
  return j;
}

/// The result's layout; a result assembled by hand without one is an m×m cone state.
state_layout layout_of(const ensemble_result& r) {
  if (r.layout.rows > 0) return r.layout;
  return {state_space::psd_cone, r.m, r.m, false};
}

std::string entry_names(const ensemble_result& r) {
  std::string s;
  for (const std::string& name : layout_of(r).names()) s += "," + name;
  return s;
}

}  // namespace

void write_csv(const ensemble_result& r, std::ostream& out) {
  out << "path,status,t_stop" << entry_names(r) << '\n';
  for (const path_record& rec : r.records) {
    out << rec.path << ',' << to_string(rec.status) << ',' << fmt::format("{:.17g}", rec.t_stop);
    for (Eigen::Index i = 0; i < rec.packed.size(); ++i)
      out << ',' << fmt::format("{:.17g}", rec.packed(i));
    out << '\n';
  }
}

void write_saved_csv(const ensemble_result& r, std::ostream& out) {
  out << "path,t" << entry_names(r) << '\n';
  for (const path_record& rec : r.records)
    for (std::size_t j = 0; j < rec.saved.size(); ++j) {
      out << rec.path << ',' << fmt::format("{:.17g}", r.save_times[j]);
      for (Eigen::Index i = 0; i < rec.saved[j].size(); ++i)
        out << ',' << fmt::format("{:.17g}", rec.saved[j](i));
      out << '\n';
    }
}

std::string summary_json(const ensemble_result& r, int indent) {
  json j;
  j["scheme"] = r.scheme;
  j["m"] = r.m;
  const state_layout layout = layout_of(r);
  if (layout.space != state_space::psd_cone) {
    // Cone runs keep the document they always had; other spaces say what their states are.
    j["state_space"] = std::string(to_string(layout.space));
    j["shape"] =
        layout.vector_state ? json::array({layout.rows}) : json::array({layout.rows, layout.cols});
  }
  j["t0"] = r.t0;
  j["T"] = r.t_end;
  j["dt"] = r.dt;
  j["seed"] = r.seed;
  j["threads"] = r.threads;
  // A run asked to use a device says what it ran on (CPU runs keep the document they always had).
  if (r.device.shown()) j["device"] = fields_json(device_fields(r));
  j["paths"] = r.paths;
  j["completed"] = r.completed;
  j["stopped"] = r.stopped;
  j["blown_up"] = r.blown_up;
  j["blown_up_fraction"] = r.blown_up_fraction();
  j["blown_up_fraction_stderr"] = r.blown_up_stderr();
  j["explosion_time_quantiles"] = fields_json(explosion_time_quantiles(r));
  j["pd"] = fields_json(pd_fields(r));
  // Adaptive runs only: fixed-step documents stay as they were.
  if (r.control != step_control::fixed) j["step_control"] = fields_json(stepping_fields(r));
  j["entries"] = layout.names();
  j["terminal_completed"] = moments_json(r.terminal);
  j["at_stop"] = moments_json(r.at_stop);
  json saved = json::array();
  for (std::size_t i = 0; i < r.saved.size(); ++i) {
    json s = moments_json(r.saved[i]);
    s["t"] = r.save_times[i];
    saved.push_back(s);
  }
  j["saved"] = saved;
  json fs = json::array();
  for (const functional_summary& f : r.functionals) fs.push_back(fields_json(functional_fields(f)));
  j["functionals"] = fs;
  j["seconds"] = r.seconds;
  return j.dump(indent);
}

std::vector<report_field> device_fields(const ensemble_result& r) {
  return {
      {"device", r.device.device}, {"note", r.device.note}, {"handed_back", r.device.handed_back}};
}

std::vector<report_field> pd_fields(const ensemble_result& r) {
  return {{"violations", r.pd.violations},
          {"projected", r.pd.projected},
          {"refined", r.pd.refined},
          {"boundary", r.pd.boundary},
          {"paths_with_violations", r.paths_with_violations},
          {"min_eigenvalue", r.pd.min_eigenvalue}};
}

std::vector<report_field> stepping_fields(const ensemble_result& r) {
  return {{"control", std::string(to_string(r.control))},
          {"tolerance", r.tolerance},
          {"steps", r.steps},
          {"refinements", r.stepping.refinements},
          {"unresolved", r.stepping.unresolved},
          {"deepest_halving", static_cast<long long>(r.stepping.deepest)},
          {"steps_per_path", r.paths ? double(r.steps) / double(r.paths) : 0.0},
          // Paths that used up their work limit before T (only adaptive steps can).
          {"exhausted", r.exhausted}};
}

std::vector<report_field> explosion_time_quantiles(const ensemble_result& r) {
  std::vector<report_field> out;
  for (const double q : {0.05, 0.25, 0.5, 0.75, 0.95})
    out.push_back({fmt::format("q{:g}", q), quantile_sorted(r.explosion_times, q)});
  return out;
}

std::vector<report_field> functional_fields(const functional_summary& f) {
  return {{"name", f.name},
          {"levels", f.levels},
          {"quantiles_completed", f.completed},
          {"quantiles_all", f.all},
          {"mean_completed", f.completed_mean},
          {"mean_completed_stderr", f.completed_stderr}};
}

std::string summary_table(const ensemble_result& r) {
  std::string s;
  const state_layout layout = layout_of(r);
  if (layout.space == state_space::psd_cone)
    s += fmt::format(
        "scheme {}  m = {}  T = {}  dt = {}  paths = {}  seed = {}  threads = {}  ({:.2f} s)\n",
        r.scheme, r.m, r.t_end, r.dt, r.paths, r.seed, r.threads, r.seconds);
  else
    s += fmt::format(
        "scheme {}  state {}×{} ({})  T = {}  dt = {}  paths = {}  seed = {}  threads = {}  "
        "({:.2f} s)\n",
        r.scheme, layout.rows, layout.cols, to_string(layout.space), r.t_end, r.dt, r.paths, r.seed,
        r.threads, r.seconds);
  if (r.device.device == "cpu" && r.device.shown())
    s += fmt::format("device cpu ({})\n", r.device.note);
  else if (r.device.shown())
    s += fmt::format("device {}{}{}  ({} paths resumed on the CPU at an exceptional step)\n",
                     r.device.device, r.device.note.empty() ? "" : ": ", r.device.note,
                     r.device.handed_back);
  s += fmt::format("completed {}  stopped {}  blown up {} ({:.4f} ± {:.4f})\n", r.completed,
                   r.stopped, r.blown_up, r.blown_up_fraction(), r.blown_up_stderr());
  if (r.control != step_control::fixed)
    s += fmt::format(
        "steps: {} control, tolerance {}: {:.1f} per path, {} refinements, {} unresolved, "
        "deepest halving {}\n",
        to_string(r.control), r.tolerance, r.paths ? double(r.steps) / double(r.paths) : 0.0,
        r.stepping.refinements, r.stepping.unresolved, r.stepping.deepest);
  if (r.exhausted > 0)
    s += fmt::format(
        "exhausted {}: paths that used up their work limit before T (neither completed nor blown "
        "up; blown-up fraction between {:.4f} and {:.4f})\n",
        r.exhausted, r.blown_up_fraction(),
        r.paths ? double(r.blown_up + r.exhausted) / double(r.paths) : 0.0);
  if (layout.space == state_space::psd_cone)
    s += fmt::format(
        "cone: violations {}  projected {}  refined {}  boundary {}  paths with violations {}\n",
        r.pd.violations, r.pd.projected, r.pd.refined, r.pd.boundary, r.paths_with_violations);
  if (r.terminal.count() > 0) {
    s += "entry      mean(completed)        stderr\n";
    const vector se = r.terminal.standard_error();
    if (is_symmetric_space(layout.space)) {
      int i = 0;
      for (int a = 1; a <= r.m; ++a)
        for (int b = a; b <= r.m; ++b, ++i)
          s += fmt::format("V{}{:<6} {:>16.8g} {:>14.3g}\n", a, b, r.terminal.mean()(i), se(i));
    } else {
      const std::vector<std::string> names = layout.names();
      for (std::size_t i = 0; i < names.size(); ++i)
        s += fmt::format("{:<8} {:>16.8g} {:>14.3g}\n", names[i],
                         r.terminal.mean()(static_cast<Eigen::Index>(i)),
                         se(static_cast<Eigen::Index>(i)));
    }
  }
  for (const functional_summary& f : r.functionals) {
    s += fmt::format("{} quantiles (completed | all, blown-up = inf):\n", f.name);
    for (std::size_t q = 0; q < f.levels.size(); ++q)
      s += fmt::format("  q{:<5g} {:>14.6g} | {:>14.6g}\n", f.levels[q], f.completed[q], f.all[q]);
  }
  return s;
}

}  // namespace ncsde
