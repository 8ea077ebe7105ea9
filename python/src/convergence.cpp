// ncsde.convergence: the measured orders of `ncsde convergence` (standard_convergence_studies,
// run_convergence) as Python data.
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bindings.hpp"
#include "limits.hpp"
#include "model_handle.hpp"
#include "ncsde/convergence.hpp"
#include "ncsde/error.hpp"
#include "python_convergence.hpp"

namespace ncsde::python {

namespace {

/// A series as Python data: every field of series_fields (the description the program's JSON
/// writes), numbers as floats (NaN kept), lists of numbers as numpy arrays.
py::dict series_dict(const convergence_series& s) { return fields_dict(series_fields(s)); }

/// `value` (None, a name or a list of names) as a list of names; empty for None. ValueError naming
/// `what` for anything else (a registry model among them: its orders are not measured here).
std::vector<std::string> names_of(const py::object& value, std::string_view what) {
  if (value.is_none()) return {};
  if (py::isinstance<py::str>(value)) return {value.cast<std::string>()};
  if (py::isinstance<model_handle>(value))
    throw py::value_error(fmt::format(
        "convergence: {} is a registry model (an ncsde.models.CovarianceSde), whose orders "
        "this function does not measure: it has no closed-form solution and no noise map in "
        "Python. Give the named problems (ncsde.convergence_problems()), or the SDE as an "
        "ncsde.PythonSde (drift and noise map) with V0 and T",
        what));
  try {
    return value.cast<std::vector<std::string>>();
  } catch (const py::cast_error&) {
    throw py::value_error(
        fmt::format("convergence: {} must be None, a name or a list of names (got {})", what,
                    py::repr(value).cast<std::string>()));
  }
}

/// A Python object shared by copies of std::functions on the engine's threads: the copies share
/// the pointer (no reference counts touched without the GIL); the last owner drops the object with
/// the GIL held.
struct held_object {
  py::object object;
  explicit held_object(py::object o) : object(std::move(o)) {}
  held_object(const held_object&) = delete;
  held_object& operator=(const held_object&) = delete;
  ~held_object() {
    py::handle h = object.release();
    if (!Py_IsInitialized()) return;
    gil_hold gil;
    h.dec_ref();
  }
};

noise_class parse_noise(const std::string& text) {
  if (text == "general") return noise_class::general;
  if (text == "commutative") return noise_class::commutative;
  if (text == "additive") return noise_class::additive;
  throw_invalid_argument("convergence", "noise", text, "one of general, commutative, additive");
}

/// The study of a Python SDE (ncsde.convergence(sde, V0=…, …)).
py::list convergence_of_python_sde(const std::shared_ptr<python_callbacks>& cb,
                                   const py::object& v0, double t_end, const py::object& exact,
                                   const py::object& weak, const std::string& noise,
                                   const std::string& name, int levels, int first_level,
                                   long long paths, convergence_options opt) {
  if (v0.is_none()) throw py::value_error("convergence: a PythonSde needs its initial state V0=");
  const double_array a = as_double_array(v0, "convergence", "V0");
  if (a.ndim() < 1 || a.ndim() > 2 || (a.ndim() == 1 && cb->space != state_space::euclidean))
    throw py::value_error(fmt::format(
        "convergence: V0 must be a matrix (a vector on the euclidean space) (got shape {})",
        shape_text({a.shape(), a.shape() + a.ndim()})));
  python_convergence_problem p;
  p.name = name;
  const Eigen::Index rows = a.shape(0), cols = a.ndim() == 2 ? a.shape(1) : 1;
  p.v0.resize(rows, cols);
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index j = 0; j < cols; ++j) p.v0(i, j) = a.data()[i * cols + j];
  p.t_end = t_end;
  p.noise = parse_noise(noise);
  if (levels != 0) p.levels = levels;
  if (first_level >= 0) p.first_level = first_level;
  if (paths != 0) p.paths = paths;
  std::vector<py::ssize_t> shape(a.shape(), a.shape() + a.ndim());
  auto to_python = [shape, rows, cols](const matrix& x) {
    py::array_t<double> out(shape);
    for (Eigen::Index i = 0; i < rows; ++i)
      for (Eigen::Index j = 0; j < cols; ++j) out.mutable_data()[i * cols + j] = x(i, j);
    return out;
  };
  if (!exact.is_none()) {
    if (!PyCallable_Check(exact.ptr()))
      throw py::type_error("convergence: exact must be a callable (V0, W_T, t) -> X_T");
    auto fn = std::make_shared<held_object>(exact);
    p.exact = [fn, to_python, shape, rows, cols](const matrix& x0,
                                                 const Eigen::Ref<const vector>& w, double t) {
      gil_hold gil;
      py::array_t<double> wa(static_cast<py::ssize_t>(w.size()));
      std::copy(w.data(), w.data() + w.size(), wa.mutable_data());
      const double_array r =
          as_double_array(fn->object(to_python(x0), wa, t), "convergence", "exact's result");
      if (std::vector<py::ssize_t>(r.shape(), r.shape() + r.ndim()) != shape)
        throw py::value_error(fmt::format("convergence: exact returned shape {} (expected {})",
                                          shape_text({r.shape(), r.shape() + r.ndim()}),
                                          shape_text(shape)));
      matrix x(rows, cols);
      for (Eigen::Index i = 0; i < rows; ++i)
        for (Eigen::Index j = 0; j < cols; ++j) x(i, j) = r.data()[i * cols + j];
      return x;
    };
  }
  if (!weak.is_none()) {
    if (!PyCallable_Check(weak.ptr()))
      throw py::type_error("convergence: weak must be a callable f(X) -> float");
    auto fn = std::make_shared<held_object>(weak);
    const std::string label =
        py::hasattr(weak, "__name__") ? weak.attr("__name__").cast<std::string>() : "f";
    p.weak = functional(label, [fn, to_python](const matrix& x) {
      gil_hold gil;
      return fn->object(to_python(x)).cast<double>();
    });
  } else if (opt.weak) {
    opt.weak = false;  // no functional: strong errors only
    if (!opt.strong)
      throw py::value_error("convergence: kind='weak' needs weak=, a callable f(X) -> float");
  }
  std::atomic<bool> cancel{false};
  auto run = [&]<state_space Space>() {
    python_sde<Space> x;
    x.callbacks = cb;
    x.shape = shape;
    x.rows = rows;
    x.cols = cols;
    x.cancel = &cancel;
    return run_interruptible<std::vector<convergence_series>>(
        [&] { return run_python_convergence(x, p, opt); }, cancel);
  };
  std::vector<convergence_series> rows_out;
  switch (cb->space) {
    case state_space::euclidean:
      rows_out = run.template operator()<state_space::euclidean>();
      break;
    case state_space::symmetric:
      rows_out = run.template operator()<state_space::symmetric>();
      break;
    case state_space::psd_cone:
      rows_out = run.template operator()<state_space::psd_cone>();
      break;
  }
  py::list out;
  for (const convergence_series& r : rows_out) out.append(series_dict(r));
  return out;
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
         std::optional<int> threads, double strong_tolerance, double weak_tolerance,
         const py::object& v0, double t_end, const py::object& exact, const py::object& weak,
         const std::string& noise, bool weak_differences, const std::string& name) {
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
        opt.weak_differences = weak_differences;
        if (const std::vector<std::string> s = names_of(schemes, "schemes"); !s.empty())
          opt.schemes = s;
        if (py::isinstance<python_callbacks>(problems)) {
          opt.paths = 0;  // the problem's paths (below) are the run's
          opt.levels = 0;
          opt.first_level = -1;
          return convergence_of_python_sde(problems.cast<std::shared_ptr<python_callbacks>>(), v0,
                                           t_end, exact, weak, noise, name, levels, first_level,
                                           paths, opt);
        }
        const std::vector<std::string> wanted = names_of(problems, "problems");
        if (!v0.is_none() || !exact.is_none() || !weak.is_none())
          throw py::value_error(
              "convergence: V0, exact and weak belong to a study of an ncsde.PythonSde (the "
              "named problems have their own)");

        const std::vector<convergence_study> studies = standard_convergence_studies();
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
      py::arg("strong_tolerance") = 0.05, py::arg("weak_tolerance") = 0.1,
      py::arg("V0") = py::none(), py::arg("T") = 1.0, py::arg("exact") = py::none(),
      py::arg("weak") = py::none(), py::arg("noise") = "general",
      py::arg("weak_differences") = false, py::arg("name") = "python-sde", R"doc(
Measured strong and weak orders of the registry's schemes on the analytic test problems, as
`ncsde convergence` measures them: every path p on the stream (seed, p) sampled once on the finest
grid, dt = T/2^l over the levels, the order the weighted least-squares slope of log error on
log dt with its standard error and 95% interval, checked against the order the scheme declares.

problems, schemes: None (all), a name or a list of names (ncsde.convergence_problems(),
the scheme names of ncsde.simulate). kind: "both", "strong" or "weak". paths, levels,
first_level: 0 / −1 for each problem's defaults. Returns one dict per series, the fields of the
program's JSON (series_fields) all present: problem, scheme, kind, order, stderr, ci_low, ci_high,
expected, tolerance, pass, unresolved, pre_asymptotic, local_slopes, paths, seed, dts, errors,
errors_stderr (arrays), cone_exits, failed_paths, error_measure, reference, functional, seconds.
Runs without the GIL; Ctrl-C takes effect when the current problem's run ends.

A user's SDE: problems an ncsde.PythonSde, with V0 (its initial state), T, and optionally
exact(V0, W_T, t) -> X_T (a pathwise solution: the strong reference and the weak control) and
weak f(X) -> float (the weak functional). Without exact, the strong reference is general
Milstein on a grid 16 times finer than the finest level, on the same Brownian path. Without a
closed form (always for a PythonSde without exact, or with weak_differences=True) the weak orders
come from the coupled differences E f(X_dt) − E f(X_dt/2) of successive levels on the same paths,
whose slope in dt is the weak order (their standard errors are the sample's). noise: "general",
"commutative" or "additive", the class deciding the expected strong orders. name labels the
series. The callables run with the GIL, one path at a time (paths × levels × steps calls: keep
the study small, or write the SDE in C++ for large ones).)doc");
}

}  // namespace ncsde::python
