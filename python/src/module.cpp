// The extension ncsde._core: the version, the library's exception types as Python ones, and the
// binders of models.cpp, python_sde.cpp and simulate.cpp. The package ncsde (python/ncsde) re-exports
// it.
#include <pybind11/pybind11.h>

#include <fmt/format.h>

#include <algorithm>
#include <type_traits>
#include <variant>

#include "bindings.hpp"
#include "limits.hpp"
#include "ncsde/error.hpp"

namespace ncsde::python {

void gil_hold::keep_thread_state() {
  // One extra PyGILState_Ensure per thread, released when the thread ends: the thread state then
  // outlives every gil_hold of the thread.
  struct keeper {
    bool kept = false;
    ~keeper() {
      if (!kept || !Py_IsInitialized()) return;
      const PyGILState_STATE s = PyGILState_Ensure();  // takes the GIL
      PyGILState_Release(PyGILState_LOCKED);           // the keeping Ensure (keeps the GIL)
      PyGILState_Release(s);  // the last: deletes the thread state, releases the GIL
    }
  };
  thread_local keeper k;
  if (!k.kept) {
    PyGILState_Ensure();  // the GIL is held: only counts
    k.kept = true;
  }
}

bool holds_complex(const py::handle& object) {
  if (PyComplex_Check(object.ptr())) return true;
  if (py::isinstance<py::array>(object))
    return py::reinterpret_borrow<py::array>(object).dtype().kind() == 'c';
  if (PyFloat_Check(object.ptr()) || PyLong_Check(object.ptr())) return false;
  return py::module_::import("numpy").attr("iscomplexobj")(object).cast<bool>();
}

double_array as_double_array(const py::handle& object, std::string_view where,
                             std::string_view param) {
  if (holds_complex(object))
    throw py::value_error(fmt::format(
        "{}: {} must hold real numbers (got complex values, which would lose their imaginary "
        "parts)",
        where, param));
  double_array a = double_array::ensure(object);
  if (!a)
    throw py::type_error(fmt::format("{}: {} must be an array of real numbers (got {})", where,
                                     param, py::repr(object).cast<std::string>()));
  return a;
}

std::string shape_text(const std::vector<py::ssize_t>& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

matrix as_matrix(const py::handle& object, std::string_view where, std::string_view param) {
  const double_array a = as_double_array(object, where, param);
  if (a.ndim() != 2)
    throw py::value_error(
        fmt::format("{}: {} must be a 2-D array (got shape {})", where, param,
                    shape_text(std::vector<py::ssize_t>(a.shape(), a.shape() + a.ndim()))));
  const auto x = a.unchecked<2>();
  matrix out(x.shape(0), x.shape(1));
  for (py::ssize_t i = 0; i < x.shape(0); ++i)
    for (py::ssize_t j = 0; j < x.shape(1); ++j) out(i, j) = x(i, j);
  return out;
}

py::array_t<double> to_array(const matrix& x) {
  py::array_t<double> out({x.rows(), x.cols()});
  auto o = out.mutable_unchecked<2>();
  for (Eigen::Index i = 0; i < x.rows(); ++i)
    for (Eigen::Index j = 0; j < x.cols(); ++j) o(i, j) = x(i, j);
  return out;
}

py::array_t<double> doubles(const std::vector<double>& x) {
  py::array_t<double> out(static_cast<py::ssize_t>(x.size()));
  std::copy(x.begin(), x.end(), out.mutable_data());
  return out;
}

py::dict fields_dict(const std::vector<report_field>& fields) {
  py::dict d;
  for (const report_field& f : fields)
    std::visit(
        [&](const auto& v) {
          if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::vector<double>>)
            d[py::str(f.name)] = doubles(v);
          else
            d[py::str(f.name)] = v;
        },
        f.value);
  return d;
}

}  // namespace ncsde::python

PYBIND11_MODULE(_core, m) {
  namespace py = pybind11;
  using namespace ncsde::python;
  m.doc() = "ncsde's compiled core (use the package ncsde, which re-exports it).";
  m.attr("__version__") = NCSDE_VERSION;

  // ncsde::invalid_argument derives from std::invalid_argument: pybind11 raises ValueError for it,
  // with the library's message ("<where>: <param> must be <rule> (got <value>)").
  static py::exception<ncsde::evaluation_error> evaluation_error(m, "EvaluationError",
                                                                 PyExc_RuntimeError);
  static py::exception<ncsde::pd_violation> pd_violation(m, "PdViolation", PyExc_RuntimeError);
  static py::exception<ncsde::device_error> device_error(m, "DeviceError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ncsde::evaluation_error& e) {
      evaluation_error(e.what());
    } catch (const ncsde::pd_violation& e) {
      pd_violation(e.what());
    } catch (const ncsde::device_error& e) {
      device_error(e.what());
    } catch (const run_cancelled&) {
      PyErr_SetNone(PyExc_KeyboardInterrupt);
    } catch (const ncsde::cancelled&) {
      PyErr_SetNone(PyExc_KeyboardInterrupt);
    }
  });
  m.attr("EvaluationError").attr("__doc__") =
      "A drift or noise map returned a non-finite value, or a non-symmetric matrix on a symmetric "
      "or cone state space, at a finite state (the message names the path, step and time).";
  m.attr("DeviceError").attr("__doc__") =
      "device='cuda' could not run: this build has no CUDA backend, the process sees no GPU or "
      "not the one named, the driver is too old, or the GPU ran out of memory (the message names "
      "the device and the CUDA runtime's text). Only device='auto' falls back to the CPU.";
  m.attr("PdViolation").attr("__doc__") =
      "A step left the positive-semidefinite cone under policy='throw' (the message names the "
      "path, step, time and smallest eigenvalue).";

  // The program's limits (validation/limits.hpp), which the module's functions apply too.
  py::dict limits;
  limits["max_paths"] = ncsde::cli::max_paths;
  limits["max_threads"] = ncsde::cli::max_threads;
  limits["max_steps_per_path"] = ncsde::cli::max_steps_per_path;
  limits["max_total_steps"] = ncsde::cli::max_total_steps;
  limits["max_network_layers"] = ncsde::cli::max_network_layers;
  limits["max_network_work"] = ncsde::cli::max_network_work;
  limits["max_curve_grid"] = ncsde::cli::max_curve_grid;
  m.attr("limits") = limits;

  py::module_ models = m.def_submodule("models", "The model registry's covariance SDEs.");
  bind_models(models);
  bind_python_sde(m);
  bind_simulate(m);
  bind_convergence(m);
  bind_networks(m);
  bind_statistics(m);
#ifdef NCSDE_PYTHON_COMMANDS
  bind_commands(m);
  bind_validate(m);
#endif
}
