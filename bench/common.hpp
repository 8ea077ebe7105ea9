#pragma once
/// What the model and network benchmarks share: the models as benchmarked, the initial state, the
/// time step, and a main() that understands `--quick`.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ncsde/concepts.hpp"
#include "ncsde/models/shaped.hpp"

namespace ncsde::bench {

/// The five SDEs of the suite: the four architectures of models/shaped.hpp and causal attention.
enum class model_id { mlp, resnet, attention, transformer, causal };

inline constexpr model_id all_models[] = {model_id::mlp, model_id::resnet, model_id::attention,
                                          model_id::transformer, model_id::causal};

/// The model's name in benchmark names and tables.
inline const char* model_name(model_id id) {
  switch (id) {
    case model_id::mlp:
      return "mlp";
    case model_id::resnet:
      return "resnet";
    case model_id::attention:
      return "attention";
    case model_id::transformer:
      return "transformer";
    case model_id::causal:
      return "causal";
  }
  return "?";
}

/// The architecture behind a model id (causal is attention with the causal mask).
inline models::architecture model_architecture(model_id id) {
  switch (id) {
    case model_id::mlp:
      return models::architecture::mlp;
    case model_id::resnet:
      return models::architecture::resnet;
    case model_id::attention:
    case model_id::causal:
      return models::architecture::attention;
    case model_id::transformer:
      return models::architecture::transformer;
  }
  return models::architecture::mlp;
}

/// Parameters of every benchmarked model: the library defaults (c₊ = 0, c₋ = −2, γ² = 1/2, r = 1,
/// τ₀ = 1, one head, no W^O), plus the causal mask for `causal`. bench/baselines/numpy_em.py reads
/// them back from the benchmark counters, so the two sides integrate the same SDE.
inline models::shaped_params model_params(model_id id) {
  models::shaped_params p;
  p.causal = id == model_id::causal;
  return p;
}

/// The covariance SDE of a model with model_params(id).
inline models::covariance_sde make_sde(model_id id) {
  return models::covariance_sde(model_architecture(id), model_params(id));
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
