// ncsde.sample_networks: the finite networks of a registry model (networks::sample_networks through
// the registry's samplers), as numpy arrays.
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <atomic>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "limits.hpp"
#include "model_handle.hpp"
#include "ncsde/error.hpp"
#include "ncsde/networks/sample.hpp"
#include "ncsde/symmetric.hpp"

namespace ncsde::python {

namespace {

/// The packed upper triangle `packed` of an m×m state into out (C order, both triangles).
void unpack_symmetric(const vector& packed, int m, double* out) {
  int k = 0;
  for (int a = 0; a < m; ++a)
    for (int b = a; b < m; ++b, ++k) {
      out[a * m + b] = packed(k);
      out[b * m + a] = packed(k);
    }
}

}  // namespace

void bind_networks(py::module_& m) {
  m.def(
      "sample_networks",
      [](const model_handle& model, const py::object& v0_object, int n, int d, long long networks,
         std::optional<std::string> sampler, std::optional<int> n_k, const std::string& attention,
         const py::int_& seed, std::optional<int> threads, std::optional<std::vector<int>> depths,
         std::optional<double> stop_level) {
        const unsigned long long seed_value = PyLong_AsUnsignedLongLong(seed.ptr());
        if (PyErr_Occurred()) {
          PyErr_Clear();
          throw py::value_error(
              fmt::format("sample_networks: seed must be an integer in [0, 2^64) (got {})",
                          py::repr(seed).cast<std::string>()));
        }
        const matrix v0 = validate_state("sample_networks", "V0",
                                         as_matrix(v0_object, "sample_networks", "V0"), true);
        const int rows = static_cast<int>(v0.rows());
        networks::attention_form form = networks::attention_form::shaped;
        if (attention == "unshaped")
          form = networks::attention_form::unshaped;
        else if (attention != "shaped")
          throw_invalid_argument("sample_networks", "attention", attention,
                                 "one of shaped, unshaped");
        const models::model_entry& entry = *model.entry;
        // As `ncsde sample-network`: reduced when the model has it, else its first sampler.
        const std::string chosen =
            sampler ? *sampler
                    : (entry.sampler("reduced") != nullptr || entry.samplers.empty()
                           ? std::string("reduced")
                           : entry.samplers.front().name);
        const models::network_instance net = entry.make_network(
            chosen, model.values, models::network_request{rows, n, n_k.value_or(n), form});
        networks::network_options opt;
        opt.seed = seed_value;
        opt.networks = networks;
        opt.threads = threads.value_or(0);
        if (depths) opt.depths = *depths;
        if (stop_level) {
          if (!(*stop_level > 0.0))
            throw_invalid_argument("sample_networks", "stop_level", *stop_level,
                                   "> 0 (None: never stop)");
          opt.stop_level = *stop_level;
        }
        opt.progress = progress_mode::off;
        // The program's limits (validation/limits.hpp), named as this function's arguments,
        // before anything is allocated: work, the literal sampler's weights, the records and the
        // returned arrays.
        if (networks < 1) throw_invalid_argument("sample_networks", "networks", networks, ">= 1");
        if (threads) cli::check_threads(*threads, cli::python_names);
        cli::model_flags flags;
        flags.model = entry.name();
        for (const auto& [name, value] : model.values.items()) {
          const auto it = flags.values.find(name);
          if (it != flags.values.end()) it->second = value;
        }
        cli::network_flags net_flags;
        net_flags.n = n;
        net_flags.d = d;
        net_flags.n_k = n_k.value_or(0);
        net_flags.networks = networks;
        net_flags.threads = opt.threads;
        const bool literal = chosen != "reduced";
        cli::check_network_work(flags, literal, rows, n, net_flags.key_dimension(), networks, d, 1,
                                cli::python_names);
        const std::size_t recorded = depths ? depths->size() : 1;
        const double returned = 8.0 * rows * rows * (static_cast<double>(recorded) + 1.0) + 96.0;
        cli::check_network_memory(flags, net_flags, literal, rows, recorded, 1, returned,
                                  cli::python_names);
        std::atomic<bool> cancel{false};
        const networks::network_ensemble e = run_interruptible<networks::network_ensemble>(
            [&] { return net.sample(v0, d, opt); }, cancel);

        const py::ssize_t count = static_cast<py::ssize_t>(e.records.size());
        const py::ssize_t nd = static_cast<py::ssize_t>(e.depths.size());
        py::array_t<double> v({count, nd, py::ssize_t(rows), py::ssize_t(rows)});
        py::array_t<double> stopped({count, py::ssize_t(rows), py::ssize_t(rows)});
        py::array_t<long long> stop_layer(count);
        py::array_t<double> t_stop(count);
        const py::str names[] = {py::str("completed"), py::str("blown_up"), py::str("stopped")};
        py::list status(count);
        const py::ssize_t e2 = py::ssize_t(rows) * rows;
        for (py::ssize_t i = 0; i < count; ++i) {
          const networks::network_record& r = e.records[static_cast<std::size_t>(i)];
          for (py::ssize_t j = 0; j < nd; ++j)
            unpack_symmetric(r.packed[static_cast<std::size_t>(j)], rows,
                             v.mutable_data() + (i * nd + j) * e2);
          unpack_symmetric(r.stopped_value(), rows, stopped.mutable_data() + i * e2);
          stop_layer.mutable_data()[i] = r.stop_layer;
          t_stop.mutable_data()[i] = e.time(r);
          status[static_cast<std::size_t>(i)] = names[static_cast<int>(r.status)];
        }
        py::dict out;
        out["V"] = v;
        out["stopped_V"] = stopped;
        out["status"] = py::module_::import("numpy").attr("array")(status, "<U9");
        out["stop_layer"] = stop_layer;
        out["t_stop"] = t_stop;
        out["depths"] = e.depths;
        out["sampler"] = chosen;
        out["m"] = e.m;
        out["n"] = e.n;
        out["d"] = e.d;
        out["seed"] = e.seed;
        out["networks"] = e.networks;
        out["completed"] = e.completed;
        out["stopped"] = e.stopped;
        out["blown_up"] = e.blown_up;
        out["stopped_fraction"] = e.stopped_fraction();
        out["stopped_stderr"] = e.stopped_stderr();
        out["seconds"] = e.seconds;
        return out;
      },
      py::arg("model"), py::arg("V0"), py::arg("n"), py::arg("d"), py::kw_only(),
      py::arg("networks") = 1000, py::arg("sampler") = py::none(), py::arg("n_k") = py::none(),
      py::arg("attention") = "shaped", py::arg("seed") = 1, py::arg("threads") = py::none(),
      py::arg("depths") = py::none(), py::arg("stop_level") = py::none(), R"doc(
`networks` finite networks of width n and depth d of the model (an ncsde.models.CovarianceSde) from
the input covariance V0 = X0 X0ᵀ/n, as `ncsde sample-network`: network i on the stream (seed, i),
V = X Xᵀ/n recorded at `depths` (layers in [0, d]; None: d only), stopped at the first layer τ with
max_a V^{aa} > stop_level. sampler: "reduced" (the exact-in-law V-chain), "literal" (explicit
n×n weights) or the model's own (None: reduced when the model has it, else its first); n_k the
attention key dimension (None: n); attention "shaped" or "unshaped". The SDE's time of layer l is
l/n. Returns a dict: V (networks, len(depths), m, m), stopped_V (networks, m, m) at τ∧d, status,
stop_layer, t_stop (= stop_layer/n), depths, sampler, m, n, d, seed, networks, completed, stopped,
blown_up, stopped_fraction, stopped_stderr, seconds. Runs without the GIL; Ctrl-C raises
KeyboardInterrupt within one layer of the networks being run. Arguments beyond the program's
limits (networks, work, memory) raise ValueError naming the argument before anything runs.)doc");
}

}  // namespace ncsde::python
