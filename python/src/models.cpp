// ncsde.models: the registry's covariance SDEs (ncsde/models/registry.hpp) from Python, by name and
// keyword parameters, with their drift and diffusion covariance.
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <string>

#include "bindings.hpp"
#include "model_handle.hpp"
#include "ncsde/error.hpp"
#include "ncsde/models/models_library.hpp"
#include "ncsde/models/registry.hpp"
#include "ncsde/symmetric.hpp"

namespace ncsde::python {

namespace {

/// The Python spelling of a parameter: its flag name with '-' as '_' ("c-plus" → "c_plus").
std::string python_name(const models::parameter& p) {
  std::string s = p.name;
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

std::string parameter_list(const models::model_entry& entry) {
  std::string out;
  for (const models::parameter& p : entry.info.parameters)
    out += (out.empty() ? "" : ", ") + python_name(p);
  return out.empty() ? "none" : out;
}

std::string repr_text(const py::handle& value) { return py::repr(value).cast<std::string>(); }

/// `value` as the kind of parameter p; ValueError "<model>: <name> must be <rule> (got <value>)".
models::parameter_value convert(const models::model_entry& entry, const models::parameter& p,
                                const py::handle& value) {
  const std::string name = python_name(p);
  auto refuse = [&](std::string_view rule) -> models::parameter_value {
    throw py::value_error(
        fmt::format("{}: {} must be {} (got {})", entry.name(), name, rule, repr_text(value)));
  };
  const bool is_bool = py::isinstance<py::bool_>(value) ||
                       py::isinstance(value, py::module_::import("numpy").attr("bool_"));
  switch (p.kind) {
    case models::parameter_kind::real:
      if (is_bool || holds_complex(value) ||
          !(py::isinstance<py::float_>(value) || py::isinstance<py::int_>(value) ||
            py::hasattr(value, "__float__")))
        return refuse("a real number");
      return value.cast<double>();
    case models::parameter_kind::integer: {
      if (is_bool || !py::hasattr(value, "__index__")) return refuse("an integer");
      const long long x = py::int_(py::reinterpret_borrow<py::object>(value)).cast<long long>();
      if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
        return refuse("an integer of at most 31 bits");
      return static_cast<int>(x);
    }
    case models::parameter_kind::flag:
      if (!is_bool) return refuse("True or False");
      return value.cast<bool>();
    case models::parameter_kind::choice:
      if (!py::isinstance<py::str>(value))
        return refuse(fmt::format("one of {}", fmt::join(p.choices, ", ")));
      return value.cast<std::string>();
  }
  return refuse("a value");
}

py::object to_python(const models::parameter_value& v) {
  return std::visit([](const auto& x) -> py::object { return py::cast(x); }, v);
}

py::dict describe(const models::model_entry& e) {
  py::list parameters;
  for (const models::parameter& p : e.info.parameters) {
    py::dict d;
    d["name"] = python_name(p);
    d["kind"] = std::string(models::to_string(p.kind));
    d["default"] = to_python(p.default_value);
    d["help"] = p.help;
    d["domain"] = p.domain;
    d["choices"] = p.choices;
    parameters.append(d);
  }
  py::list samplers;
  for (const models::network_sampler_entry& s : e.samplers) samplers.append(s.name);
  py::dict out;
  out["name"] = e.name();
  out["description"] = e.info.description;
  out["parameters"] = parameters;
  out["samplers"] = samplers;
  return out;
}

/// V as a validated symmetric m×m state (square, finite, symmetric within round-off).
matrix state_argument(const py::handle& v, std::string_view where) {
  return validate_state(where, "V", as_matrix(v, where, "V"), /*require_psd=*/false);
}

}  // namespace

model_handle make_model_handle(const std::string& name, const py::dict& kwargs) {
  const models::model_entry& entry = models::registry().at(name, "covariance_sde");
  models::parameter_values given;
  for (const auto& [key, value] : kwargs) {
    const std::string k = key.cast<std::string>();
    const models::parameter* p = nullptr;
    for (const models::parameter& q : entry.info.parameters)
      if (python_name(q) == k || q.name == k) p = &q;
    if (p == nullptr)
      throw py::value_error(fmt::format("{}: {} is not a parameter of {} (its parameters: {})",
                                        entry.name(), k, entry.name(), parameter_list(entry)));
    given.set(p->name, convert(entry, *p, value));
  }
  model_handle h{entry.make(given), {}, &entry, entry.complete(given)};
  for (const models::parameter& p : entry.info.parameters)
    h.params.emplace_back(python_name(p), h.values.items().find(p.name)->second);
  return h;
}

void bind_models(py::module_& m) {
  py::class_<model_handle>(m, "CovarianceSde", R"doc(
A registered model's covariance SDE  dV = b(V) dt + G(V) dW  on the positive-semidefinite cone
(made by ncsde.models.covariance_sde; accepted by ncsde.simulate).)doc")
      .def_property_readonly(
          "name", [](const model_handle& h) { return h.sde.name(); }, "The registry name.")
      .def_property_readonly(
          "params",
          [](const model_handle& h) {
            py::dict d;
            for (const auto& [k, v] : h.params) d[py::str(k)] = to_python(v);
            return d;
          },
          "Every parameter's value (defaults filled in), by its Python name.")
      .def(
          "noise_dimension", [](const model_handle& h, int m) { return h.sde.noise_dimension(m); },
          py::arg("m"), "k, the number of standard normals one increment of an m×m state needs.")
      .def(
          "drift",
          [](const model_handle& h, const py::object& v, double t) {
            const matrix x = state_argument(v, "drift");
            matrix out(x.rows(), x.cols());
            {
              py::gil_scoped_release release;
              h.sde.drift(x, out, t);
            }
            return to_array(out);
          },
          py::arg("V"), py::arg("t") = 0.0, R"doc(
b(V) as an (m, m) array. V: a symmetric (m, m) array (ValueError otherwise).)doc")
      .def(
          "covariance",
          [](const model_handle& h, const py::object& v, double t) {
            const matrix x = state_argument(v, "covariance");
            matrix sigma;
            {
              py::gil_scoped_release release;
              h.sde.covariance(x, sigma, t);
            }
            return to_array(sigma);
          },
          py::arg("V"), py::arg("t") = 0.0, R"doc(
Σ(V) over packed pairs: a (K, K) array, K = m(m+1)/2, rows and columns the upper-triangle pairs
(1,1), (1,2), …, (m,m) in row-major order, Σ^{ab,cd} = Cov(dV^{ab}, dV^{cd}) / dt.)doc")
      .def(
          "diffusion_covariance",
          [](const model_handle& h, const py::object& v, double t) {
            const matrix x = state_argument(v, "diffusion_covariance");
            const int n = static_cast<int>(x.rows());
            matrix sigma;
            {
              py::gil_scoped_release release;
              h.sde.covariance(x, sigma, t);
            }
            py::array_t<double> out({n, n, n, n});
            auto o = out.mutable_unchecked<4>();
            for (int a = 0; a < n; ++a)
              for (int b = 0; b < n; ++b)
                for (int c = 0; c < n; ++c)
                  for (int d = 0; d < n; ++d)
                    o(a, b, c, d) = sigma(packed_index(std::min(a, b), std::max(a, b), n),
                                          packed_index(std::min(c, d), std::max(c, d), n));
            return out;
          },
          py::arg("V"), py::arg("t") = 0.0, R"doc(
The diffusion covariance C[a, b, c, d] = Cov(dV^{ab}, dV^{cd}) / dt at V as an (m, m, m, m) array
(symmetric under a↔b, c↔d and (ab)↔(cd)). V: a symmetric (m, m) array.)doc")
      .def("__repr__", [](const model_handle& h) {
        std::string args;
        for (const auto& [k, v] : h.params)
          args += fmt::format(", {}={}", k, repr_text(to_python(v)));
        return fmt::format("ncsde.models.covariance_sde('{}'{})", h.sde.name(), args);
      });

  m.def(
      "covariance_sde",
      [](const std::string& name, const py::kwargs& kwargs) {
        return make_model_handle(name, kwargs);
      },
      py::arg("name"), R"doc(
The covariance SDE of the registered model `name` with keyword parameters (Python spelling of the
command line's flags: c_plus, c_minus, gamma2, tau0, hidden_ratio, heads, output_projection,
causal for mlp/resnet/attention/transformer; a, activation for shaped-tanh). Unknown models or
parameters and values outside a parameter's domain raise ValueError naming the parameter and the
value, e.g. covariance_sde("transformer", tau0=-1) → "transformer: tau0 must be finite and > 0
(got -1)".)doc");

  m.def(
      "list",
      [] {
        py::list out;
        for (const models::model_entry& e : models::registry().entries()) out.append(describe(e));
        return out;
      },
      R"doc(
The registered models in registration order: dicts with name, description, parameters (each a dict
with name, kind, default, help, domain, choices) and samplers (the finite networks' names).)doc");
  m.def(
      "names", [] { return models::registry().names(); }, "The registered models' names.");
  m.def(
      "load_library",
      [](const py::object& path) {
        const std::string p = py::str(py::module_::import("os").attr("fspath")(path));
        return models::load_models_library(p);
      },
      py::arg("path"), R"doc(
Adds the models of a C++ models library (a shared library defining NCSDE_MODELS_LIBRARY, built
against this version of ncsde: ncsde/models/models_library.hpp) to the registry, so that
covariance_sde(name, ...), simulate and sample_networks take them like the built-in models.
Returns the names it added. ValueError naming the path when the file cannot be loaded, defines no
models or was built against another ncsde; a name already registered raises ValueError too.)doc");
}

}  // namespace ncsde::python
