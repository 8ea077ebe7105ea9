// Finite-network benchmarks (bench/README.md, item 5; `bench/run` runs them all), m = 4 tokens:
//  - layer/<sampler>/<model>/n:<n>: one layer of the literal network (n×n Gaussian weights drawn
//    and multiplied) and of the exact-in-law reduced sampler (docs/maths.md §7), n ∈ {64, 128, 256,
//    512}; items/s = layers/s. Literal layers carry their operation count (normals, GEMM flops)
//    and their achieved GEMM rate as counters.
//  - eigen/gemm_tall/m:4/n:<n>: Eigen's single-core rate on the literal layer's own product shape,
//    (m×n)·(n×n), the peak the literal GEMM rate is compared with.
//  - network/<sampler>/<model>/n:256/d:256 vs sde/em/<model>/m:4/steps:256: one depth-256
//    network of width 256 (initial state included) against one Euler–Maruyama path of the
//    model's covariance SDE to T = 1 at dt = 1/256 (integrate(), structured noise): the cost of
//    one sample of V_T each way; and sde/em_batched/<model>/m:4/steps:256, the same paths taken
//    by the batched engine (a one-thread batched ensemble of 64 paths per iteration, items = paths,
//    process CPU time), the SDE's cost per sample when many are drawn.
// Ratios, never absolute times, are the result; nothing here asserts a time.
//   build/bench/ncsde_bench_networks [--quick] --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/integrate.hpp"
#include "ncsde/networks/literal.hpp"
#include "ncsde/networks/reduced.hpp"
#include "ncsde/random.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"

namespace {

using namespace ncsde;
using namespace ncsde::bench;

constexpr int tokens = 4;
constexpr int widths[] = {64, 128, 256, 512};

/// Work of one literal layer at m tokens, width n, r = 1, n_k = 1, one head, no W^O
/// (networks/literal.hpp): the Gaussian weights it draws and the flops of its matrix products.
///   mlp          X·W: 2mn²;                                             normals n²
///   resnet       X·W^pre, ·W^post: 4rmn²;                               normals 2rn²
///   attention    X·W^Q, X·W^K: 4mn·n_k; Q·Kᵀ: 2m²n_k; X·W^V: 2mn²; A·(XW^V): 2m²n;
///                                                                       normals n² + 2n·n_k
///   transformer  attention + resnet
struct layer_count {
  double normals = 0.0;
  double gemm_flops = 0.0;
};

layer_count literal_layer_count(const models::covariance_sde& sde, int m, int n) {
  const double md = m, nd = n, nk = 1.0, r = 1.0;
  layer_count c;
  const models::architecture arch = sde.arch();
  if (arch == models::architecture::mlp) return {nd * nd, 2.0 * md * nd * nd};
  if (arch == models::architecture::resnet || arch == models::architecture::transformer) {
    c.normals += 2.0 * r * nd * nd;
    c.gemm_flops += 4.0 * r * md * nd * nd;
  }
  if (has_attention_part(sde)) {
    c.normals += nd * nd + 2.0 * nd * nk;
    c.gemm_flops +=
        4.0 * md * nd * nk + 2.0 * md * md * nk + 2.0 * md * nd * nd + 2.0 * md * md * nd;
  }
  return c;
}

/// Layers between resets of the state: 16 layers are at most T = 1/4 of the SDE's time at n = 64,
/// so no network leaves the regime it starts in, whatever the number of iterations.
constexpr std::uint64_t reset_every = 16;

template <class Network>
void layer(benchmark::State& state, const Network& net) {
  const random_stream stream(1, 0);
  const typename Network::state s0 = net.initial_state(initial_state(net.m()), stream);
  typename Network::state s = s0;
  std::uint64_t l = 0;
  for (auto _ : state) {
    if (l % reset_every == 0) s = s0;
    net.step(s, l++, stream);
    benchmark::DoNotOptimize(s.data());
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["m"] = net.m();
  state.counters["n"] = net.n();
}

/// Eigen's single-core rate on (m×n)·(n×n), 2mn² flops.
void gemm_tall(benchmark::State& state, int m, int n) {
  matrix x(m, n), w(n, n);
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) x(i, j) = std::sin(0.3 * i + 0.7 * j);
    for (int i = 0; i < n; ++i) w(i, j) = std::cos(0.11 * i + 0.53 * j);
  }
  matrix y(m, n);
  for (auto _ : state) {
    y.noalias() = x * w;
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * m * n * double(n);
  state.counters["flops_per_second"] = benchmark::Counter(
      flops * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

/// One depth-d network per iteration (a fresh network each time: stream (1, iteration)).
template <class Network>
void network(benchmark::State& state, const Network& net, int d) {
  const matrix v0 = initial_state(net.m());
  const std::vector<int> depths{d};
  std::uint64_t index = 0;
  for (auto _ : state) {
    const std::vector<matrix> v = net.run(v0, d, depths, random_stream(1, index++));
    benchmark::DoNotOptimize(v.back().data());
  }
  state.SetItemsProcessed(state.iterations());
}

/// One Euler–Maruyama path of `steps` steps of size 1/256 per iteration (structured noise).
void sde_path(benchmark::State& state, const models::covariance_sde& sde, int m, int steps) {
  const problem<models::covariance_sde> prob{sde, initial_state(m), steps * dt};
  integrate_options opt;
  opt.dt = dt;
  euler_maruyama<> stepper;
  std::uint64_t path = 0;
  long long incomplete = 0;
  for (auto _ : state) {
    const path_result r = integrate(stepper, prob, opt, /*seed=*/1, path++);
    if (r.status != path_status::completed) ++incomplete;
    benchmark::DoNotOptimize(r.v.data());
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["incomplete_paths"] = static_cast<double>(incomplete);
}

/// `paths` Euler–Maruyama paths of `steps` steps of size 1/256 per iteration, batched (lane groups,
/// one thread); items are paths.
void sde_paths_batched(benchmark::State& state, const models::covariance_sde& sde, int m,
                       int steps) {
  const problem<models::covariance_sde> prob{sde, initial_state(m), steps * dt};
  integrate_options io;
  io.dt = dt;
  const ensemble_options eo = batched_one_thread(64);
  long long incomplete = 0;
  for (auto _ : state) {
    const ensemble_result r = run_ensemble(euler_maruyama<>{}, prob, io, eo);
    incomplete += eo.paths - r.completed;
    benchmark::DoNotOptimize(r.terminal.mean().data());
  }
  state.SetItemsProcessed(state.iterations() * eo.paths);
  state.counters["incomplete_paths"] = static_cast<double>(incomplete);
}

void register_all() {
  for (const bench_model& model : all_models()) {
    const std::string& name = model.label;
    const models::covariance_sde sde = model.sde();
    const models::architecture arch = sde.arch();
    const models::shaped_params& p = sde.params();
    for (const int n : widths) {
      const std::string tail = name + "/n:" + std::to_string(n);
      const networks::literal_network literal(arch, p, tokens, n);
      const networks::reduced_network reduced(arch, p, tokens, n);
      const layer_count c = literal_layer_count(sde, tokens, n);
      benchmark::RegisterBenchmark(("layer/literal/" + tail).c_str(), [=](benchmark::State& st) {
        layer(st, literal);
        st.counters["normals"] = c.normals;
        st.counters["gemm_flops"] = c.gemm_flops;
        st.counters["gemm_flops_per_second"] = benchmark::Counter(
            c.gemm_flops * static_cast<double>(st.iterations()), benchmark::Counter::kIsRate);
      });
      benchmark::RegisterBenchmark(("layer/reduced/" + tail).c_str(),
                                   [=](benchmark::State& st) { layer(st, reduced); });
    }
    constexpr int n = 256, d = 256;
    const networks::literal_network literal(arch, p, tokens, n);
    const networks::reduced_network reduced(arch, p, tokens, n);
    const std::string tail = name + "/n:256/d:256";
    benchmark::RegisterBenchmark(("network/literal/" + tail).c_str(),
                                 [=](benchmark::State& st) { network(st, literal, d); });
    benchmark::RegisterBenchmark(("network/reduced/" + tail).c_str(),
                                 [=](benchmark::State& st) { network(st, reduced, d); });
    benchmark::RegisterBenchmark(("sde/em/" + name + "/m:4/steps:256").c_str(),
                                 [=](benchmark::State& st) { sde_path(st, sde, tokens, d); });
    benchmark::RegisterBenchmark(
        ("sde/em_batched/" + name + "/m:4/steps:256").c_str(),
        [=](benchmark::State& st) { sde_paths_batched(st, sde, tokens, d); })
        ->MeasureProcessCPUTime();
  }
  for (const int n : widths)
    benchmark::RegisterBenchmark(("eigen/gemm_tall/m:4/n:" + std::to_string(n)).c_str(),
                                 [n](benchmark::State& st) { gemm_tall(st, tokens, n); });
}

}  // namespace

int main(int argc, char** argv) { return ncsde::bench::run_main(argc, argv, register_all); }
