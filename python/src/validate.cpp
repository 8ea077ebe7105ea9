// The pieces of ncsde.validate with a user's parts (python/ncsde/validate.py): the stopped samples
// of any SDE the module runs (a registry model, a variant of one, an ncsde.PythonSde), the stopped
// samples of network covariances given layer by layer, and the report of `ncsde validate` made
// from them (validation/fidelity/validate_report.hpp: the program's own comparisons and text).
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "fidelity/validate_report.hpp"
#include "fidelity/variants.hpp"
#include "limits.hpp"
#include "model_handle.hpp"
#include "ncsde/models/stopped_sample.hpp"
#include "python_sde.hpp"

namespace ncsde::python {

namespace {

struct sde_sample_handle {
  models::sde_sample sample;
  std::vector<double> save_times;  ///< the times of sample.kept
};

struct network_sample_handle {
  cli::stopped_sample stopped, unstopped;
};

/// The stopped samples of a Python SDE, one Euler–Maruyama ensemble per width (stopped when
/// max_a V^aa > K at a grid time k/n) and one unstopped: the rules of models::sample_sde, on the
/// batched engine (whose paths are the per-path engine's, bit for bit), so that a Python SDE costs
/// one interpreter call per block of 64 paths and step.
template <state_space Space>
models::sde_sample sample_python(const python_sde<Space>& sde, const matrix& v0,
                                 const models::sde_sample_options& opt) {
  const std::vector<long long> per_layer = models::detail::steps_per_layer(opt);
  integrate_options iopt;
  iopt.dt = opt.dt;
  // The program's policy on the cone (project, models::sde_sample_options); a Python SDE on the
  // symmetric space has no cone to leave.
  iopt.policy = Space == state_space::psd_cone ? opt.policy : pd_policy::automatic;
  iopt.blowup_threshold = opt.blowup_threshold;
  ensemble_options eopt;
  eopt.paths = opt.paths;
  eopt.seed = opt.seed;
  eopt.threads = opt.threads;
  eopt.keep_paths = true;
  eopt.batched = sde.callbacks->batched;
  eopt.progress = progress_mode::off;

  models::sde_sample out;
  out.m = static_cast<int>(v0.rows());
  out.widths = opt.widths;
  auto fill = [](const ensemble_result& r, cli::stopped_sample& s) {
    for (const path_record& p : r.records) {
      s.status.push_back(p.status);
      s.packed.push_back(p.packed);
    }
  };
  {
    // A Python SDE has no device form: the run refuses a device by name ("auto" notes why it ran
    // on the CPU, and the report says so); the runs below are the CPU's either way.
    ensemble_options unstopped = eopt;
    unstopped.device = opt.device;
    const ensemble_result r = run_python_sde(sde, v0, "em", opt.t_end, iopt, unstopped);
    out.device = r.device;
    fill(r, out.unstopped);
    out.pd = r.pd;
    out.paths_with_violations = r.paths_with_violations;
    out.seconds += r.seconds;
  }
  if (const long long kept = std::min<long long>(opt.kept_paths, opt.paths); kept > 0) {
    // The first paths again with their states saved (path p is the stream (seed, p) in any run):
    // the whole run keeps no saves.
    integrate_options saving = iopt;
    saving.save_times = opt.save_times;
    ensemble_options first = eopt;
    first.paths = kept;
    for (const path_record& p : run_python_sde(sde, v0, "em", opt.t_end, saving, first).records)
      out.kept.push_back(p.saved);
  }
  for (const long long k : per_layer) {
    integrate_options stopped = iopt;
    const double dt = opt.dt, level = opt.stop_level;
    stopped.stop_condition = [k, dt, level](const matrix& v, double t) {
      return std::llround(t / dt) % k == 0 && v.diagonal().maxCoeff() > level;
    };
    const ensemble_result r = run_python_sde(sde, v0, "em", opt.t_end, stopped, eopt);
    out.by_width.emplace_back();
    fill(r, out.by_width.back());
    out.seconds += r.seconds;
  }
  return out;
}

/// A (count, L, m, m) array of covariances as [count][L] upper triangles, entry (a, b) for a ≤ b
/// row by row (pack_upper's order), read from the array's own (a, b) entries.
std::vector<std::vector<vector>> packed_layers(const double_array& a) {
  const int m = static_cast<int>(a.shape(2));
  const py::ssize_t count = a.shape(0), depth = a.shape(1);
  std::vector<std::vector<vector>> packed(static_cast<std::size_t>(count));
  for (py::ssize_t i = 0; i < count; ++i) {
    packed[i].reserve(static_cast<std::size_t>(depth));
    for (py::ssize_t l = 0; l < depth; ++l) {
      const double* v = a.data() + (i * depth + l) * m * m;
      vector& out = packed[i].emplace_back(packed_size(m));
      for (int r = 0, e = 0; r < m; ++r)
        for (int c = r; c < m; ++c) out(e++) = v[r * m + c];
    }
  }
  return packed;
}

/// Entry `name` of the setup dict (ValueError when it is missing).
template <class T>
T setup_value(const py::dict& setup, const char* name) {
  if (!setup.contains(name))
    throw py::value_error(fmt::format("validate: the setup has no '{}'", name));
  return setup[name].cast<T>();
}

}  // namespace

void bind_validate(py::module_& m) {
  py::class_<sde_sample_handle>(m, "_SdeSample")
      .def_property_readonly(
          "paths", [](const sde_sample_handle& h) { return h.sample.unstopped.status.size(); })
      .def_property_readonly("seconds",
                             [](const sde_sample_handle& h) { return h.sample.seconds; });
  py::class_<network_sample_handle>(m, "_NetworkSample")
      .def_property_readonly(
          "networks", [](const network_sample_handle& h) { return h.stopped.status.size(); });

  m.def(
      "_sample_stopped_sde",
      [](const py::object& sde, const py::object& v0, double t_end, double dt,
         const std::vector<int>& widths, double stop_level, long long paths,
         unsigned long long seed, int threads, int kept_paths, const std::string& variant,
         const std::string& device) {
        const matrix x0 = as_matrix(v0, "validate", "V0");
        if (x0.rows() != x0.cols() || x0.rows() < 2)
          throw py::value_error(
              fmt::format("validate: V0 must be a square matrix, at least 2x2 (got {}x{})",
                          x0.rows(), x0.cols()));
        cli::check_paths(paths, cli::python_names);
        cli::check_threads(threads, cli::python_names);
        models::sde_sample_options opt;
        opt.t_end = t_end;
        opt.dt = dt;
        opt.widths = widths;
        opt.stop_level = stop_level;
        opt.paths = paths;
        opt.seed = seed;
        opt.threads = threads;
        opt.kept_paths = kept_paths;
        opt.device = parse_device(device, "device");
        (void)models::detail::steps_per_layer(opt);  // dt against every width's grid
        const step_grid grid(0.0, t_end, dt);
        cli::check_sde_steps(t_end, dt, static_cast<double>(grid.steps), paths, "paths", 1,
                             cli::python_names);
        std::atomic<bool> cancel{false};
        sde_sample_handle h;
        if (kept_paths > 0) opt.save_times = cli::validate_save_times(t_end, dt);
        h.save_times = opt.save_times;
        if (py::isinstance<model_handle>(sde)) {
          const model_handle& model = sde.cast<const model_handle&>();
          if (variant.empty()) {
            h.sample = run_interruptible<models::sde_sample>(
                [&] { return model.sde.sample_sde(x0, opt); }, cancel);
          } else {
            const models::covariance_sde* shaped = model.sde.get<models::covariance_sde>();
            if (shaped == nullptr)
              throw_invalid_argument("validate", "variants", variant,
                                     "a variant of an attention architecture (attention, "
                                     "transformer) or an SDE object");
            const cli::variant_sde wrong(*shaped, cli::parse_variant(variant, "variants"));
            h.sample = run_interruptible<models::sde_sample>(
                [&] { return models::sample_sde(wrong, x0, opt); }, cancel);
          }
          return h;
        }
        if (!py::isinstance<python_callbacks>(sde))
          throw py::type_error(fmt::format(
              "validate: an SDE must be a model name, an ncsde.models.CovarianceSde or an "
              "ncsde.PythonSde (got {})",
              py::repr(sde.get_type()).cast<std::string>()));
        auto cb = sde.cast<std::shared_ptr<python_callbacks>>();
        if (cb->space == state_space::euclidean)
          throw py::value_error(
              "validate: a PythonSde must have state_space 'symmetric' or 'psd_cone' (the "
              "covariance V of the networks)");
        auto run = [&]<state_space Space>() {
          python_sde<Space> x;
          x.callbacks = cb;
          x.shape = {x0.rows(), x0.cols()};
          x.rows = x0.rows();
          x.cols = x0.cols();
          x.cancel = &cancel;
          return run_interruptible<models::sde_sample>([&] { return sample_python(x, x0, opt); },
                                                       cancel);
        };
        h.sample = cb->space == state_space::psd_cone
                       ? run.template operator()<state_space::psd_cone>()
                       : run.template operator()<state_space::symmetric>();
        return h;
      },
      py::arg("sde"), py::arg("V0"), py::arg("T"), py::arg("dt"), py::arg("widths"),
      py::arg("stop_level"), py::arg("paths"), py::arg("seed"), py::arg("threads"),
      py::arg("kept_paths"), py::arg("variant") = "", py::arg("device") = "cpu",
      "The SDE side of ncsde.validate (the program's sample_sde for registry models).");

  m.def(
      "_validate_reference_state", [] { return to_array(cli::validate_reference_state()); },
      "validate's default V0, the reference state V3 of docs/maths.md §9.1.");
  m.def(
      "_check_validate_settings",
      [](const std::vector<int>& widths, double stop_level, double tail_level,
         double unstopped_level, double alpha, const std::string& limit_exponent) {
        return cli::check_validate_settings(widths, stop_level, tail_level, unstopped_level, alpha,
                                            limit_exponent, "widths");
      },
      "validate's checks of its settings (cli::check_validate_settings), the widths named "
      "widths: ValueError naming the setting; returns the given limit exponent or None.");
  m.def(
      "_validate_defaults",
      [] {
        const cli::validate_defaults d;
        py::dict params;
        for (const auto& [name, value] : d.parameters) params[py::str(name)] = value;
        py::dict out;
        out["model"] = d.model;
        out["params"] = params;
        out["T"] = d.t_end;
        out["widths"] = py::tuple(py::cast(d.widths));
        out["networks"] = d.networks;
        out["paths"] = d.paths;
        out["dt"] = d.dt;
        out["stop_level"] = d.stop_level;
        out["tail_level"] = d.tail_level;
        out["unstopped_tail_level"] = d.unstopped_level;
        out["nk"] = d.n_k;
        out["variants"] = d.variants;
        out["alpha"] = d.alpha;
        out["limit_exponent"] = d.limit_exponent;
        out["seed"] = d.seed;
        return out;
      },
      "The defaults of ncsde validate (cli::validate_defaults), by ncsde.validate's argument "
      "names: the default study's model and parameters, and every setting.");
  m.def(
      "_validate_variants",
      [](const std::string& text, const py::object& sde) {
        const models::covariance_sde* shaped = nullptr;
        std::string model = "a PythonSde";
        if (py::isinstance<model_handle>(sde)) {
          const model_handle& h = sde.cast<const model_handle&>();
          shaped = h.sde.get<models::covariance_sde>();
          model = h.sde.name();
        }
        std::vector<std::string> names;
        for (const cli::sde_variant v : cli::validate_variants(text, shaped, model, "variants"))
          names.emplace_back(cli::to_string(v));
        return names;
      },
      py::arg("text"), py::arg("sde"),
      "The variant names of validate's `variants` text for the SDE (the program's rule).");
  m.def(
      "_network_sample",
      [](const py::object& layers, double stop_level) {
        const double_array a = as_double_array(layers, "validate", "networks");
        if (a.ndim() != 4 || a.shape(2) != a.shape(3) || a.shape(1) < 2 || a.shape(0) < 1)
          throw py::value_error(fmt::format(
              "validate: network covariances must have shape (networks, d + 1, m, m), V at the "
              "layers 0..d (got shape {})",
              shape_text({a.shape(), a.shape() + a.ndim()})));
        network_sample_handle h;
        cli::stop_network_layers(static_cast<int>(a.shape(2)), packed_layers(a), stop_level,
                                 h.stopped, h.unstopped);
        return h;
      },
      py::arg("layers"), py::arg("stop_level"),
      "Network covariances (networks, d + 1, m, m) as the stopped samples ncsde validate takes.");

  m.def(
      "_validate_report",
      [](const py::dict& setup, const sde_sample_handle& reference, const sde_sample_handle& floor,
         const std::vector<std::string>& wrong_names,
         const std::vector<const sde_sample_handle*>& wrong,
         const std::vector<const network_sample_handle*>& nets, double network_seconds,
         const std::optional<std::string>& data_dir, const py::object& network_paths,
         const std::vector<double>& network_times, const std::string& network_source) {
        cli::validate_setup s;
        s.model = setup_value<std::string>(setup, "model");
        s.parameters = setup_value<std::string>(setup, "parameters");
        s.parameters_json = setup_value<std::string>(setup, "parameters_json");
        s.sampler = setup_value<std::string>(setup, "sampler");
        s.n_k = setup_value<std::string>(setup, "n_k");
        s.m = setup_value<int>(setup, "m");
        s.t_end = setup_value<double>(setup, "T");
        s.dt = setup_value<double>(setup, "dt");
        s.paths = setup_value<long long>(setup, "paths");
        s.networks = setup_value<long long>(setup, "networks");
        s.stop_level = setup_value<double>(setup, "stop_level");
        s.tail_level = setup_value<double>(setup, "tail_level");
        s.unstopped_level = setup_value<double>(setup, "unstopped_tail_level");
        s.alpha = setup_value<double>(setup, "alpha");
        s.widths = setup_value<std::vector<int>>(setup, "widths");
        s.given_exponent = setup_value<std::optional<double>>(setup, "limit_exponent");
        cli::validate_samples samples;
        samples.reference = reference.sample;
        samples.floor = floor.sample;
        samples.wrong_names = wrong_names;
        for (const sde_sample_handle* w : wrong) samples.wrong.push_back(w->sample);
        for (const network_sample_handle* n : nets) {
          samples.nets_stopped.push_back(n->stopped);
          samples.nets_unstopped.push_back(n->unstopped);
        }
        samples.network_seconds = network_seconds;
        const cli::validate_report r = cli::make_validate_report(s, samples);
        if (data_dir) {
          // The plot script's data: the report, the stopped values, and sample paths (the SDE's
          // kept paths and the first networks at the widest n).
          const std::filesystem::path dir(*data_dir);
          auto open = [&](const char* name) {
            std::ofstream f(dir / name);
            if (!f)
              throw std::runtime_error(
                  fmt::format("validate: cannot write {}", (dir / name).string()));
            return f;
          };
          std::vector<cli::sampled_paths> paths(1);
          paths[0].source = "sde";
          paths[0].times = reference.save_times;
          paths[0].packed = reference.sample.kept;
          if (!network_paths.is_none()) {
            cli::sampled_paths& n = paths.emplace_back();
            n.source = network_source;
            n.times = network_times;
            n.packed = packed_layers(as_double_array(network_paths, "validate", "network paths"));
          }
          std::ofstream md = open("validation.md"), json = open("validation.json"),
                        values = open("values.csv"), trajectories = open("paths.csv");
          md << r.markdown;
          json << r.json << '\n';
          cli::write_validate_values(values, s, samples);
          cli::write_validate_paths(trajectories, s.m, paths);
          for (std::ofstream* f : {&md, &json, &values, &trajectories})
            if (!f->flush())
              throw std::runtime_error(fmt::format("validate: cannot write into {}", dir.string()));
        }
        return py::make_tuple(r.markdown, r.json, r.right_accepted, r.wrong_rejected,
                              r.limit_accepted);
      },
      py::arg("setup"), py::arg("reference"), py::arg("floor"), py::arg("wrong_names"),
      py::arg("wrong"), py::arg("networks"), py::arg("network_seconds"), py::arg("data_dir"),
      py::arg("network_paths"), py::arg("network_times"), py::arg("network_source"),
      "The report of ncsde validate from samples: (markdown, json, right_accepted, "
      "wrong_rejected, limit_accepted); with data_dir, the plot script's data files too.");
}

}  // namespace ncsde::python
