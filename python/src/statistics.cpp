// ncsde.ks_two_sample: the library's two-sample Kolmogorov–Smirnov test (statistics.hpp), the one
// `ncsde validate` reports.
#include <pybind11/stl.h>

#include <vector>

#include "bindings.hpp"
#include "ncsde/statistics.hpp"

namespace ncsde::python {

void bind_statistics(py::module_& m) {
  m.def(
      "ks_two_sample",
      [](const py::object& a, const py::object& b) {
        const double_array x = as_double_array(a, "ks_two_sample", "a");
        const double_array y = as_double_array(b, "ks_two_sample", "b");
        std::vector<double> u(x.data(), x.data() + x.size()), v(y.data(), y.data() + y.size());
        const ks_result r = ks_two_sample(std::move(u), std::move(v));
        py::dict out;
        out["distance"] = r.distance;
        out["p_value"] = r.p_value;
        out["n1"] = r.n1;
        out["n2"] = r.n2;
        return out;
      },
      py::arg("a"), py::arg("b"), R"doc(
Two-sample Kolmogorov–Smirnov test of the samples a and b (any shape, flattened; ±inf allowed, as
blown-up paths are +inf): distance D = sup |F_a − F_b| over the pooled sample, and the asymptotic
p-value of the Kolmogorov distribution with Stephens' small-sample correction (accurate to a few
1e-3 for n1 n2/(n1 + n2) ≥ 10). Returns dict(distance, p_value, n1, n2). ValueError for an empty
sample or a NaN.)doc");
}

}  // namespace ncsde::python
