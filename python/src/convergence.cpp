// ncsde.convergence: the measured orders of `ncsde convergence` (standard_convergence_studies,
// run_convergence) as Python data.
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "limits.hpp"
#include "ncsde/convergence.hpp"
#include "ncsde/error.hpp"

namespace ncsde::python {

namespace {

py::array_t<double> doubles(const std::vector<double>& x) {
  py::array_t<double> out(static_cast<py::ssize_t>(x.size()));
  std::copy(x.begin(), x.end(), out.mutable_data());
  return out;
}

py::dict series_dict(const convergence_series& s) {
  py::dict d;
  d["problem"] = s.problem;
  d["scheme"] = s.scheme;
  d["kind"] = std::string(to_string(s.kind));
  d["order"] = s.fit.slope;
  d["stderr"] = s.fit.slope_stderr;
  d["ci_low"] = s.fit.ci_low;
  d["ci_high"] = s.fit.ci_high;
  d["expected"] = s.expected;
  d["tolerance"] = s.tolerance;
  d["pass"] = s.pass;
  d["pre_asymptotic"] = s.pre_asymptotic;
  d["paths"] = s.paths;
  d["seed"] = s.seed;
  d["dts"] = doubles(s.dts);
  d["errors"] = doubles(s.errors);
  d["errors_stderr"] = doubles(s.errors_stderr);
  d["cone_exits"] = s.cone_exits;
  d["failed_paths"] = s.failed_paths;
  d["error_measure"] = s.error_measure;
  d["reference"] = s.reference;
  d["functional"] = s.functional;
  d["seconds"] = s.seconds;
  return d;
}

/// `value` (None, a name or a list of names) as a list of names; empty for None.
std::vector<std::string> names_of(const py::object& value) {
  if (value.is_none()) return {};
  if (py::isinstance<py::str>(value)) return {value.cast<std::string>()};
  return value.cast<std::vector<std::string>>();
}

}  // namespace

void bind_convergence(py::module_& m) {
  m.def(
      "convergence_problems",
      [] {
        py::list out;
        for (const convergence_study& s : standard_convergence_studies()) {
          py::dict d;
          d["name"] = s.name;
          d["description"] = s.description;
          out.append(d);
        }
        return out;
      },
      "The problems of ncsde.convergence (name, description): the analytic test SDEs of "
      "`ncsde convergence`.");
  m.def(
      "convergence",
      [](const py::object& problems, const py::object& schemes, const std::string& kind,
         long long paths, int levels, int first_level, const py::int_& seed,
         std::optional<int> threads, double strong_tolerance, double weak_tolerance) {
        if (kind != "both" && kind != "strong" && kind != "weak")
          throw_invalid_argument("convergence", "kind", kind, "one of both, strong, weak");
        const unsigned long long seed_value = PyLong_AsUnsignedLongLong(seed.ptr());
        if (PyErr_Occurred()) {
          PyErr_Clear();
          throw py::value_error(
              fmt::format("convergence: seed must be an integer in [0, 2^64) (got {})",
                          py::repr(seed).cast<std::string>()));
        }
        // The program's limits (validation/limits.hpp), named as this function's arguments.
        if (paths != 0) cli::check_paths(paths, cli::python_names);
        if (threads) cli::check_threads(*threads, cli::python_names);
        convergence_options opt;
        opt.seed = seed_value;
        opt.paths = paths;
        opt.threads = threads.value_or(0);
        opt.levels = levels;
        opt.first_level = first_level;
        opt.strong_tolerance = strong_tolerance;
        opt.weak_tolerance = weak_tolerance;
        opt.strong = kind != "weak";
        opt.weak = kind != "strong";
        opt.progress = progress_mode::off;
        if (const std::vector<std::string> s = names_of(schemes); !s.empty()) opt.schemes = s;

        const std::vector<convergence_study> studies = standard_convergence_studies();
        std::vector<std::string> wanted = names_of(problems);
        std::vector<std::string> known;
        for (const convergence_study& s : studies) known.push_back(s.name);
        for (const std::string& w : wanted)
          if (std::find(known.begin(), known.end(), w) == known.end())
            throw_invalid_argument("convergence", "problem", w,
                                   fmt::format("one of {}", fmt::join(known, ", ")));
        py::list out;
        for (const convergence_study& s : studies) {
          if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), s.name) == wanted.end())
            continue;
          // One problem at a time without the GIL; Ctrl-C is raised when the problem's run ends.
          std::atomic<bool> cancel{false};
          const std::vector<convergence_series> rows =
              run_interruptible<std::vector<convergence_series>>([&] { return s.run(opt); },
                                                                 cancel);
          for (const convergence_series& r : rows) out.append(series_dict(r));
        }
        return out;
      },
      py::arg("problems") = py::none(), py::arg("schemes") = py::none(), py::kw_only(),
      py::arg("kind") = "both", py::arg("paths") = 0, py::arg("levels") = 0,
      py::arg("first_level") = -1, py::arg("seed") = 1, py::arg("threads") = py::none(),
      py::arg("strong_tolerance") = 0.05, py::arg("weak_tolerance") = 0.1, R"doc(
Measured strong and weak orders of the registry's schemes on the analytic test problems, as
`ncsde convergence` measures them: every path p on the stream (seed, p) sampled once on the finest
grid, dt = T/2^l over the levels, the order the weighted least-squares slope of log error on
log dt with its standard error and 95% interval, checked against the order the scheme declares.

problems, schemes: None (all), a name or a list of names (ncsde.convergence_problems(),
the scheme names of ncsde.simulate). kind: "both", "strong" or "weak". paths, levels,
first_level: 0 / −1 for each problem's defaults. Returns one dict per series: problem, scheme,
kind, order, stderr, ci_low, ci_high, expected, tolerance, pass, pre_asymptotic, paths, seed,
dts, errors, errors_stderr (arrays), cone_exits, failed_paths, error_measure, reference, functional, seconds.
Runs without the GIL; Ctrl-C takes effect when the current problem's run ends.)doc");
}

}  // namespace ncsde::python
