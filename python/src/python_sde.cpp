// ncsde.PythonSde: the Python class and the checks of what its callables return.
#include "python_sde.hpp"

#include <fmt/format.h>

#include <string>

namespace ncsde::python {

python_callbacks::~python_callbacks() {
  if (!Py_IsInitialized()) {  // interpreter gone: nothing to decrement
    drift.release();
    noise_map.release();
    return;
  }
  py::gil_scoped_acquire gil;
  drift = py::object();
  noise_map = py::object();
}

double_array checked_result(const py::object& result, coefficient which,
                            const std::vector<py::ssize_t>& expected) {
  const char* name = which == coefficient::drift ? "drift" : "noise_map";
  if (holds_complex(result))
    throw py::value_error(fmt::format(
        "PythonSde: {} returned complex values; it must return real numbers of shape {}", name,
        shape_text(expected)));
  double_array r = double_array::ensure(result);
  if (!r)
    throw py::type_error(fmt::format(
        "PythonSde: {} returned {}, not an array of real numbers of shape {} (the shape of x)",
        name, py::repr(result).cast<std::string>(), shape_text(expected)));
  const std::vector<py::ssize_t> got(r.shape(), r.shape() + r.ndim());
  if (got != expected)
    throw py::value_error(fmt::format(
        "PythonSde: {} returned an array of shape {} for x of shape {} (it must have x's shape)",
        name, shape_text(got), shape_text(expected)));
  return r;
}

namespace {

state_space parse_space(const std::string& s) {
  if (s == "euclidean") return state_space::euclidean;
  if (s == "symmetric") return state_space::symmetric;
  if (s == "psd_cone") return state_space::psd_cone;
  throw py::value_error(fmt::format(
      "PythonSde: state_space must be one of euclidean, symmetric, psd_cone (got '{}')", s));
}

}  // namespace

void bind_python_sde(py::module_& m) {
  py::class_<python_callbacks, std::shared_ptr<python_callbacks>>(m, "PythonSde", R"doc(
An SDE  dX = b(t, X) dt + G(t, X) dW  written in Python, accepted by ncsde.simulate like a
built-in model; W is a noise_dimension-dimensional Brownian motion.

drift(x, t) -> b at every state of the batch x;
noise_map(x, xi, t) -> G(t, x_l) xi_l for every l (linear in xi; the engine draws xi ~ N(0, dt I)).

With batched=True (the default) x has shape (W, *state_shape) and xi shape (W, k), and both
callables return an array of x's shape: the batched schemes ("em", "milstein-commutative") evaluate W = 64 paths
per call (each path on its own (seed, path) random stream, so results do not depend on how paths
are grouped), the other schemes W = 1. With batched=False they get one state (shape state_shape)
and xi of shape (k,) per call: slow, one Python call per path and step.

state_space: "euclidean" (any vector or matrix state; nothing is checked but blow-up),
"symmetric" (square symmetric states, symmetrised after each step; non-symmetric coefficients are
refused) or "psd_cone" (also the positive-semidefinite cone check and policy). The state shape
is V0's shape in ncsde.simulate: () or (d,) or (rows, cols).

The callables run with the GIL held, on the engine's worker threads; an exception they raise ends
the run and propagates to the caller of simulate with its traceback.)doc")
      .def(py::init([](py::object drift, py::object noise_map, int noise_dimension,
                       const std::string& space, bool batched) {
             if (!PyCallable_Check(drift.ptr()))
               throw py::type_error(fmt::format("PythonSde: drift must be callable (got {})",
                                                py::repr(drift).cast<std::string>()));
             if (!PyCallable_Check(noise_map.ptr()))
               throw py::type_error(fmt::format("PythonSde: noise_map must be callable (got {})",
                                                py::repr(noise_map).cast<std::string>()));
             if (noise_dimension < 1 || noise_dimension > max_noise_dimension)
               throw py::value_error(
                   fmt::format("PythonSde: noise_dimension must be in [1, {}] (got {})",
                               max_noise_dimension, noise_dimension));
             auto cb = std::make_shared<python_callbacks>();
             cb->drift = std::move(drift);
             cb->noise_map = std::move(noise_map);
             cb->k = noise_dimension;
             cb->space = parse_space(space);
             cb->batched = batched;
             return cb;
           }),
           py::kw_only(), py::arg("drift"), py::arg("noise_map"), py::arg("noise_dimension"),
           py::arg("state_space") = "euclidean", py::arg("batched") = true)
      .def_property_readonly("drift", [](const python_callbacks& c) { return c.drift; })
      .def_property_readonly("noise_map", [](const python_callbacks& c) { return c.noise_map; })
      .def_property_readonly("noise_dimension", [](const python_callbacks& c) { return c.k; })
      .def_property_readonly(
          "state_space", [](const python_callbacks& c) { return std::string(to_string(c.space)); })
      .def_property_readonly("batched", [](const python_callbacks& c) { return c.batched; })
      .def("__repr__", [](const python_callbacks& c) {
        return fmt::format(
            "ncsde.PythonSde(drift={}, noise_map={}, noise_dimension={}, "
            "state_space='{}', batched={})",
            py::repr(c.drift).cast<std::string>(), py::repr(c.noise_map).cast<std::string>(), c.k,
            to_string(c.space), c.batched ? "True" : "False");
      });
}

}  // namespace ncsde::python
