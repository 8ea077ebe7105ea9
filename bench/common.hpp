#pragma once
/// What the model and network benchmarks share: the models as benchmarked, the initial state, the
/// time step, and a main() that understands `--quick`.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ncsde/concepts.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/models/registry.hpp"
#include "ncsde/models/shaped.hpp"

namespace ncsde::bench {

/// A benchmarked model: an entry of the model registry (models::registry()) with parameter values
/// over its defaults, under a label used in benchmark names and tables. The benchmarks build every
/// SDE through the registry, as `ncsde simulate` does; the operation counts of the hardware bound
/// (models.cpp, networks.cpp) are per architecture, read from the SDE built.
struct bench_model {
  std::string label;
  std::string model;               ///< the registry name
  models::parameter_values given;  ///< values over the entry's defaults

  /// The SDE, as the registry builds it (complete(given), the model's own checks).
  models::model_instance instance() const { return models::registry().at(model).make(given); }
  /// The concrete covariance SDE (the registry's built-in architectures), for the templated
  /// benchmarks that step the concrete type; throws std::logic_error for another SDE type.
  models::covariance_sde sde() const {
    const models::model_instance i = instance();
    const auto* s = i.get<models::covariance_sde>();
    if (s == nullptr) throw std::logic_error("bench: " + label + " is not a covariance_sde");
    return *s;
  }
};

/// The five SDEs of the suite: the four architectures of the registry at their defaults (c₊ = 0,
/// c₋ = −2, γ² = 1/2, r = 1, τ₀ = 1, one head, no W^O) and causal attention (`--causal`).
/// bench/baselines/numpy_em.py reads the parameters back from the benchmark counters, so the two
/// sides integrate the same SDE.
inline const std::vector<bench_model>& all_models() {
  static const std::vector<bench_model> list = [] {
    std::vector<bench_model> l;
    for (const char* name : {"mlp", "resnet", "attention", "transformer"})
      l.push_back({name, name, {}});
    bench_model causal{"causal", "attention", {}};
    causal.given.set("causal", true);
    l.push_back(std::move(causal));
    return l;
  }();
  return list;
}

/// The entry of all_models() labelled `label`.
inline const bench_model& find_model(std::string_view label) {
  for (const bench_model& b : all_models())
    if (b.label == label) return b;
  throw std::logic_error("bench: no model labelled " + std::string(label));
}

/// True when the SDE has the ReLU-type (MLP) drift and linear noise: mlp, resnet, transformer.
inline bool has_relu_part(const models::covariance_sde& s) {
  return s.arch() != models::architecture::attention;
}
/// True when the SDE has the attention drift and noise: attention (causal or not), transformer.
inline bool has_attention_part(const models::covariance_sde& s) {
  return s.arch() == models::architecture::attention ||
         s.arch() == models::architecture::transformer;
}

/// Time step of the SDE paths set against width-256 networks: the layer step 1/n, n = 256.
inline constexpr double dt = 1.0 / 256.0;

/// V₀ = I + C, C^{ab} = 0.3/(1 + |a − b|) off the diagonal: correlated tokens, positive definite
/// for every m (the Toeplitz symbol is ≥ 1 − 0.6(1 − ln 2) > 0.8). The attention-type SDEs blow up
/// from it in finite time (docs/maths.md §8.1): about 5% of attention and 7% of transformer paths
/// by T = 1 at m = 4, under 0.5% by T = 1/4. numpy_em.py builds the same matrix.
inline matrix initial_state(int m) {
  matrix v = matrix::Identity(m, m);
  for (int a = 0; a < m; ++a)
    for (int b = 0; b < m; ++b)
      if (a != b) v(a, b) = 0.3 / (1.0 + std::abs(a - b));
  return v;
}

/// The options of the benchmarks' batched ensembles: `paths` paths from seed 1 on one thread, lane
/// groups of batch_width paths (ensemble_options::batched), no progress display.
inline ensemble_options batched_one_thread(long long paths) {
  ensemble_options eo;
  eo.seed = 1;
  eo.paths = paths;
  eo.threads = 1;
  eo.batched = true;
  eo.progress = progress_mode::off;
  return eo;
}

/// Set by `--quick` (shorter paths, smaller sizes where a size is optional).
inline bool quick = false;

/// main() of a benchmark binary: strips `--quick`, registers the benchmarks, runs them.
template <class Register>
int run_main(int argc, char** argv, Register register_benchmarks) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (i > 0 && std::strcmp(argv[i], "--quick") == 0)
      quick = true;
    else
      args.push_back(argv[i]);
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;
  register_benchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace ncsde::bench
