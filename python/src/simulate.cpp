// ncsde.simulate and its Result: run_ensemble on a registry model or a Python SDE, the per-path
// outcomes as numpy arrays and the library's summaries as Python values.
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "limits.hpp"
#include "model_handle.hpp"
#include "ncsde/device.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/ensemble_io.hpp"
#include "ncsde/error.hpp"
#include "ncsde/integrate.hpp"
#include "ncsde/models/summaries.hpp"
#include "ncsde/symmetric.hpp"
#include "python_sde.hpp"

namespace ncsde::python {

namespace {

/// A finished run: the library's result and its per-path arrays (None without keep_paths).
struct result_handle {
  ensemble_result r;
  std::vector<py::ssize_t> shape;  ///< the state shape
  py::object terminal = py::none(), saved = py::none(), status = py::none(), t_stop = py::none();
};

/// Number of entries of a state of `shape`.
py::ssize_t entries(const std::vector<py::ssize_t>& shape) {
  py::ssize_t n = 1;
  for (py::ssize_t s : shape) n *= s;
  return n;
}

/// The state with coordinates `packed` (state_layout::pack) into out[0, entries) in C order.
void unpack(const state_layout& layout, const vector& packed, double* out) {
  const Eigen::Index rows = layout.rows, cols = layout.cols;
  if (is_symmetric_space(layout.space)) {
    Eigen::Index k = 0;
    for (Eigen::Index a = 0; a < rows; ++a)
      for (Eigen::Index b = a; b < cols; ++b) {
        out[a * cols + b] = packed(k);
        out[b * cols + a] = packed(k);
        ++k;
      }
  } else {
    for (Eigen::Index i = 0; i < rows * cols; ++i) out[i] = packed(i);  // row-major = C order
  }
}

py::array_t<double> state_array(const state_layout& layout, const std::vector<py::ssize_t>& shape,
                                const vector& packed) {
  py::array_t<double> out(shape);
  if (packed.size() == layout.size())
    unpack(layout, packed, out.mutable_data());
  else  // moments of an empty set of paths
    std::fill_n(out.mutable_data(), entries(shape), std::numeric_limits<double>::quiet_NaN());
  return out;
}

/// The per-path arrays of r (which kept its paths' records).
void fill_paths(result_handle& h) {
  using namespace pybind11::literals;
  const ensemble_result& r = h.r;
  const py::ssize_t n = static_cast<py::ssize_t>(r.records.size());
  const py::ssize_t e = entries(h.shape);
  const py::ssize_t saves = static_cast<py::ssize_t>(r.save_times.size());
  std::vector<py::ssize_t> tshape{n}, sshape{n, saves};
  tshape.insert(tshape.end(), h.shape.begin(), h.shape.end());
  sshape.insert(sshape.end(), h.shape.begin(), h.shape.end());
  py::array_t<double> terminal(tshape), saved(sshape), t_stop(n);
  double* tp = terminal.mutable_data();
  double* sp = saved.mutable_data();
  std::fill_n(sp, n * saves * e, std::numeric_limits<double>::quiet_NaN());
  const py::str names[] = {py::str("completed"), py::str("blown_up"), py::str("stopped"),
                           py::str("exhausted")};
  py::list status(n);
  for (py::ssize_t p = 0; p < n; ++p) {
    const path_record& rec = r.records[static_cast<std::size_t>(p)];
    unpack(r.layout, rec.packed, tp + p * e);
    for (std::size_t j = 0; j < rec.saved.size(); ++j)
      unpack(r.layout, rec.saved[j], sp + (p * saves + static_cast<py::ssize_t>(j)) * e);
    t_stop.mutable_data()[p] = rec.t_stop;
    status[static_cast<std::size_t>(p)] = names[static_cast<int>(rec.status)];
  }
  h.terminal = terminal;
  h.saved = saved;
  h.t_stop = t_stop;
  h.status = py::module_::import("numpy").attr("array")(status, "dtype"_a = "<U9");
}

/// V0 of a Python SDE: its shape is the state shape; () and (d,) are vector states.
struct python_state {
  std::vector<py::ssize_t> shape;
  matrix as_matrix;
  vector as_vector;
  bool is_vector = false;
};

python_state python_initial_state(const py::handle& v0, state_space space) {
  const double_array a = as_double_array(v0, "simulate", "V0");
  python_state s;
  s.shape.assign(a.shape(), a.shape() + a.ndim());
  const double* p = a.data();
  if (a.ndim() > 2)
    throw py::value_error(fmt::format(
        "simulate: V0 must be a scalar, a vector or a matrix (got shape {})", shape_text(s.shape)));
  if (a.ndim() < 2) {
    if (space != state_space::euclidean)
      throw py::value_error(
          fmt::format("simulate: V0 must be a square matrix on the {} state space "
                      "(got shape {})",
                      to_string(space), shape_text(s.shape)));
    s.is_vector = true;
    s.as_vector = Eigen::Map<const vector>(p, a.size());
    return s;
  }
  s.as_matrix.resize(a.shape(0), a.shape(1));
  for (py::ssize_t i = 0; i < a.shape(0); ++i)
    for (py::ssize_t j = 0; j < a.shape(1); ++j) s.as_matrix(i, j) = p[i * a.shape(1) + j];
  return s;
}

}  // namespace

void bind_simulate(py::module_& m) {
  using namespace pybind11::literals;
  py::class_<result_handle>(m, "Result", R"doc(
The outcome of ncsde.simulate: per-path arrays (with keep_paths=True, else None), counters and the
library's summaries. Path p always used the random stream (seed, p).)doc")
      .def_readonly("terminal", &result_handle::terminal,
                    "(paths, *state_shape) float64: each path's state at T ∧ τ (τ its blow-up or "
                    "stopping time; a blown-up path holds the state that crossed the threshold).")
      .def_readonly("saved", &result_handle::saved,
                    "(paths, len(save_times), *state_shape) float64: the states at the save times "
                    "(NaN after a path stopped or blew up).")
      .def_readonly("status", &result_handle::status,
                    "(paths,) str: 'completed', 'blown_up' or 'stopped'.")
      .def_readonly("t_stop", &result_handle::t_stop,
                    "(paths,) float64: T for completed paths, else the time of the step that blew "
                    "up or stopped.")
      .def_property_readonly("state_shape",
                             [](const result_handle& h) { return py::tuple(py::cast(h.shape)); })
      .def_property_readonly("paths", [](const result_handle& h) { return h.r.paths; })
      .def_property_readonly("completed", [](const result_handle& h) { return h.r.completed; })
      .def_property_readonly("blown_up", [](const result_handle& h) { return h.r.blown_up; })
      .def_property_readonly("stopped", [](const result_handle& h) { return h.r.stopped; })
      .def_property_readonly(
          "exhausted", [](const result_handle& h) { return h.r.exhausted; },
          "Paths that used up their work limit before T (adaptive steps; docs/step_control.md).")
      .def_property_readonly("blown_up_fraction",
                             [](const result_handle& h) { return h.r.blown_up_fraction(); })
      .def_property_readonly(
          "blown_up_stderr", [](const result_handle& h) { return h.r.blown_up_stderr(); },
          "Binomial standard error of blown_up_fraction.")
      .def_property_readonly(
          "steps", [](const result_handle& h) { return h.r.steps; },
          "Steps taken, summed over the paths (adaptive runs; 0 with fixed "
          "steps).")
      .def_property_readonly(
          "pd", [](const result_handle& h) { return fields_dict(pd_fields(h.r)); },
          "Cone events: violations, projected, refined, boundary, "
          "min_eigenvalue, paths_with_violations (zero off the cone).")
      .def_property_readonly(
          "stepping", [](const result_handle& h) { return fields_dict(stepping_fields(h.r)); },
          "Adaptive stepping, as the JSON summary's step_control: control, tolerance, steps, "
          "refinements, unresolved, deepest_halving, steps_per_path, exhausted.")
      .def_property_readonly("seed", [](const result_handle& h) { return h.r.seed; })
      .def_property_readonly("scheme", [](const result_handle& h) { return h.r.scheme; })
      .def_property_readonly("threads", [](const result_handle& h) { return h.r.threads; })
      .def_property_readonly("seconds", [](const result_handle& h) { return h.r.seconds; })
      .def_property_readonly(
          "device", [](const result_handle& h) { return fields_dict(device_fields(h.r)); },
          "What the paths ran on: {'device': 'cpu' | 'cuda:N' | 'emulated', 'note': why 'auto' "
          "chose it or the GPU's name, 'handed_back': device paths the CPU resumed at an "
          "exceptional step}")
      .def_property_readonly("t0", [](const result_handle& h) { return h.r.t0; })
      .def_property_readonly("T", [](const result_handle& h) { return h.r.t_end; })
      .def_property_readonly("dt", [](const result_handle& h) { return h.r.dt; })
      .def_property_readonly("state_space",
                             [](const result_handle& h) { return to_string(h.r.layout.space); })
      .def_property_readonly(
          "coordinates", [](const result_handle& h) { return h.r.layout.names(); },
          "Names of the packed coordinates (V11, V12, … or X1, …).")
      .def_property_readonly("save_times",
                             [](const result_handle& h) { return doubles(h.r.save_times); })
      .def_property_readonly(
          "explosion_times", [](const result_handle& h) { return doubles(h.r.explosion_times); },
          "Sorted, one per blown-up path.")
      .def_property_readonly(
          "stop_times", [](const result_handle& h) { return doubles(h.r.stop_times); },
          "Sorted, one per stopped path.")
      .def_property_readonly(
          "terminal_mean",
          [](const result_handle& h) {
            return state_array(h.r.layout, h.shape, h.r.terminal.mean());
          },
          "Mean state at T over completed paths (NaN when none completed).")
      .def_property_readonly(
          "terminal_covariance",
          [](const result_handle& h) { return to_array(h.r.terminal.covariance()); },
          "Covariance of the packed coordinates at T over completed paths (K, K); ValueError "
          "when the run kept their variances only (simulate's covariance).")
      .def_property_readonly(
          "saved_mean",
          [](const result_handle& h) {
            py::list out;
            for (const moments& s : h.r.saved)
              out.append(state_array(h.r.layout, h.shape, s.mean()));
            return out;
          },
          "Mean state at each save time over the paths alive then.")
      .def_property_readonly(
          "functionals",
          [](const result_handle& h) {
            py::dict out;
            for (const functional_summary& f : h.r.functionals) {
              py::dict d = fields_dict(functional_fields(f));
              d.attr("pop")("name");
              out[py::str(f.name)] = d;
            }
            return out;
          },
          "Quantiles of the summarised functionals (ρ^{ab} and V^{aa} on square symmetric "
          "states, as `ncsde simulate`): name -> dict with the JSON summary's fields: levels, "
          "quantiles_completed (over completed paths), quantiles_all (over all paths, +inf for "
          "blown-up ones), mean_completed, mean_completed_stderr.")
      .def(
          "summary_json", [](const result_handle& h) { return summary_json(h.r); },
          "The summary as the JSON document `ncsde simulate --format json` prints.")
      .def(
          "summary_table", [](const result_handle& h) { return summary_table(h.r); },
          "The summary as the table `ncsde simulate` prints.")
      .def("__repr__", [](const result_handle& h) {
        return fmt::format(
            "<ncsde.Result scheme={} paths={} completed={} blown_up={} stopped={} exhausted={} "
            "state_shape={} T={} dt={} seed={}>",
            h.r.scheme, h.r.paths, h.r.completed, h.r.blown_up, h.r.stopped, h.r.exhausted,
            shape_text(h.shape), h.r.t_end, h.r.dt, h.r.seed);
      });

  m.def(
      "simulate",
      [](const py::object& sde, const py::object& v0, double t_end, double dt, long long paths,
         const std::string& scheme, const py::int_& seed, std::optional<int> threads,
         std::optional<std::vector<double>> save_times, std::optional<double> stop_level,
         const std::string& policy, double blowup_threshold, const std::string& control,
         double tolerance, int max_depth, std::optional<bool> batched, bool keep_paths,
         bool progress, const std::string& covariance, const std::string& device) {
        const unsigned long long seed_value = PyLong_AsUnsignedLongLong(seed.ptr());
        if (PyErr_Occurred()) {
          PyErr_Clear();
          throw py::value_error(
              fmt::format("simulate: seed must be an integer in [0, 2^64) (got {})",
                          py::repr(seed).cast<std::string>()));
        }
        const bool is_model = py::isinstance<model_handle>(sde);
        const bool is_python = py::isinstance<python_callbacks>(sde);
        if (!is_model && !is_python)
          throw py::type_error(
              fmt::format("simulate: sde must be an ncsde.models.CovarianceSde "
                          "or an ncsde.PythonSde (got {})",
                          py::repr(sde.get_type()).cast<std::string>()));

        integrate_options iopt;
        iopt.dt = dt;
        iopt.policy = parse_pd_policy(policy, "policy");
        iopt.blowup_threshold = blowup_threshold;
        if (save_times) iopt.save_times = *save_times;
        iopt.control = parse_step_control(control, "step_control");
        iopt.tolerance = tolerance;
        iopt.max_depth = max_depth;

        ensemble_options eopt;
        eopt.seed = seed_value;
        eopt.paths = paths;
        eopt.keep_paths = keep_paths;
        eopt.progress = progress ? progress_mode::on : progress_mode::off;
        eopt.covariance = parse_covariance_mode(covariance, "covariance");
        eopt.device = parse_device(device, "device");

        // The program's limits (validation/limits.hpp), named as this function's arguments,
        // before anything is allocated.
        cli::check_paths(paths, cli::python_names);
        if (threads) cli::check_threads(*threads, cli::python_names);
        validate_options(iopt);
        const step_grid grid(0.0, t_end, dt);
        cli::check_sde_steps(t_end, dt, static_cast<double>(grid.steps), paths, "paths", 1,
                             cli::python_names);
        // Memory: the ensemble's per-path data (as `ncsde simulate`) and, with keep_paths, the
        // arrays of Result (terminal and saved states, status, t_stop).
        auto check_memory_of = [&](py::ssize_t rows, py::ssize_t cols, std::size_t functionals) {
          const double entries = static_cast<double>(rows) * static_cast<double>(cols);
          const double saves = static_cast<double>(iopt.save_times.size());
          double per_path = cli::ensemble_bytes_per_path(entries, functionals, keep_paths,
                                                         iopt.save_times.size());
          if (keep_paths) per_path += 8.0 * entries * (1.0 + saves) + 4.0 * 9 + 8.0;
          // The summaries: the packed coordinates (K ≤ entries; m(m + 1)/2 on the symmetric
          // spaces, where the covariance is kept up to a larger m), with or without their
          // covariance; bounded above by K = entries.
          const double fewest =
              rows == cols ? static_cast<double>(packed_size(static_cast<int>(rows))) : entries;
          const bool full = keeps_covariance(eopt.covariance, static_cast<int>(fewest));
          const double summaries = cli::ensemble_summary_bytes(entries, static_cast<double>(paths),
                                                               iopt.save_times.size(), full);
          cli::check_memory("paths", std::to_string(paths),
                            per_path * static_cast<double>(paths) + summaries,
                            fmt::format("{:.0f} bytes per path and {:.0f} of summaries{}", per_path,
                                        summaries, full ? " (with the covariance)" : ""));
        };

        if (stop_level) {
          if (!(*stop_level > 0.0))
            throw_invalid_argument("simulate", "stop_level", *stop_level, "> 0 (None: never stop)");
          // As `ncsde simulate --stop-level`: stopped at the first step with max_a V^{aa} > K.
          iopt.stop_level = *stop_level;
        }

        std::atomic<bool> cancel{false};
        result_handle h;
        if (is_model) {
          const model_handle& model = sde.cast<const model_handle&>();
          const matrix x0 = as_matrix(v0, "simulate", "V0");
          h.shape = {x0.rows(), x0.cols()};
          eopt.threads = threads.value_or(0);
          eopt.batched = batched.value_or(true);
          if (x0.rows() == x0.cols())
            eopt.functionals = models::summary_functionals(int(x0.rows()));
          check_memory_of(x0.rows(), x0.cols(), eopt.functionals.size());
          // Checked after every step: Ctrl-C ends the run at the next step of every path. On a
          // device (which takes no stop condition) the executor's check between batches does it.
          if (eopt.device.kind == device_kind::cpu)
            iopt.stop_condition = [&cancel](const matrix&, double) {
              if (cancel.load(std::memory_order_relaxed)) throw run_cancelled();
              return false;
            };
          h.r = run_interruptible<ensemble_result>(
              [&] { return model.sde.run_ensemble(scheme, x0, t_end, iopt, eopt); }, cancel);
        } else {
          auto cb = sde.cast<std::shared_ptr<python_callbacks>>();
          const python_state s = python_initial_state(v0, cb->space);
          h.shape = s.shape;
          eopt.threads = threads.value_or(1);
          eopt.batched = batched.value_or(cb->batched);
          const bool square = !s.is_vector && s.as_matrix.rows() == s.as_matrix.cols();
          if (square && cb->space != state_space::euclidean)
            eopt.functionals = models::summary_functionals(int(s.as_matrix.rows()));
          check_memory_of(s.is_vector ? s.as_vector.size() : s.as_matrix.rows(),
                          s.is_vector ? 1 : s.as_matrix.cols(), eopt.functionals.size());
          auto run = [&]<state_space Space>() {
            python_sde<Space> x;
            x.callbacks = cb;
            x.shape = s.shape;
            x.rows = s.is_vector ? s.as_vector.size() : s.as_matrix.rows();
            x.cols = s.is_vector ? 1 : s.as_matrix.cols();
            x.cancel = &cancel;
            return run_interruptible<ensemble_result>(
                [&] {
                  if constexpr (Space == state_space::euclidean) {
                    if (s.is_vector)
                      return run_python_sde(x, s.as_vector, scheme, t_end, iopt, eopt);
                  }
                  return run_python_sde(x, s.as_matrix, scheme, t_end, iopt, eopt);
                },
                cancel);
          };
          switch (cb->space) {
            case state_space::euclidean:
              h.r = run.template operator()<state_space::euclidean>();
              break;
            case state_space::symmetric:
              h.r = run.template operator()<state_space::symmetric>();
              break;
            case state_space::psd_cone:
              h.r = run.template operator()<state_space::psd_cone>();
              break;
          }
        }
        if (keep_paths) fill_paths(h);
        return h;
      },
      py::arg("sde"), py::arg("V0"), py::arg("T"), py::kw_only(), py::arg("dt") = 1e-3,
      py::arg("paths") = 1000, py::arg("scheme") = "em", py::arg("seed") = 1,
      py::arg("threads") = py::none(), py::arg("save_times") = py::none(),
      py::arg("stop_level") = py::none(), py::arg("policy") = "automatic",
      py::arg("blowup_threshold") = 1e6, py::arg("step_control") = "fixed",
      py::arg("tolerance") = 0.05, py::arg("max_depth") = 40, py::arg("batched") = py::none(),
      py::arg("keep_paths") = true, py::arg("progress") = false,
      py::arg("covariance") = "automatic", py::arg("device") = "cpu", R"doc(
Runs `paths` independent paths of `sde` from V0 on [0, T] with the scheme named `scheme` ("em",
"milstein", "milstein-commutative", "predictor-corrector") and returns an ncsde.Result.

Path p draws its Brownian increments from the counter-based stream (seed, p), so results do not
depend on `threads`, and a run is bit-identical to `ncsde simulate` with the same model, V0, T,
dt, paths, seed, scheme and policy. The run releases the GIL (a Python SDE takes it for each call
of its callables); Ctrl-C raises KeyboardInterrupt within a fraction of a second of the current
step.

sde: an ncsde.models.CovarianceSde or an ncsde.PythonSde. V0: the initial state (symmetric PSD
(m, m) for models; for a PythonSde its shape is the state shape). dt: step (the largest step with
an adaptive step_control). threads: worker threads (None: all cores for models, 1 for a PythonSde,
whose callables serialise on the GIL). save_times: grid times at which to keep every path's state
(Result.saved). stop_level: stop a path at the first step with max_a V^{aa} > stop_level.
policy: the cone policy ("automatic" = "count": exits are counted and the scheme's law is kept;
"count", "project", "refine",
"throw"). blowup_threshold: max |V^{ab}| above which a path has blown up. step_control: "fixed",
"increment" or "doubling" (with tolerance, max_depth). batched: step lane groups (8 paths, 64 for a PythonSde) where the
run allows it (None: True for models, whose batched paths are the per-path ones bit for bit; the PythonSde's own flag). keep_paths: fill the per-path
arrays (False: summaries only). progress: a progress bar on stderr. covariance: what the
summaries keep of the packed coordinates' spread, "full" (Result.terminal_covariance, K² numbers),
"diagonal" (their variances) or "automatic" (full for K ≤ 136, i.e. m ≤ 16 on matrices).
device: where the paths run, "cpu", "cuda" or "cuda:N" (a GPU: a model's SDE, scheme "em", fixed
steps), "auto" (a GPU when there is one and the run allows it, else the CPU:
Result.device says which and why) or "emulated" (the GPU kernels on the CPU); the same paths as
the CPU's, bit for bit where the GPU's arithmetic is the CPU's (docs/gpu.md).

Bad arguments raise ValueError naming the argument and the value.)doc");
}

}  // namespace ncsde::python
