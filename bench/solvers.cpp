// Solver-layer micro-benchmarks. Each pair compares ncsde's choice with the obvious alternative in the
// same run; quote ratios, not absolute times (the machines are noisy).
//   build/bench/ncsde_bench_solvers --benchmark_min_time=0.2
#include <Random123/philox.h>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "../solvers/random_detail.hpp"
#include "ncsde/analytic.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/levy_area.hpp"
#include "ncsde/noise.hpp"
#include "ncsde/random.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"

namespace {

// Normals, blocks of 1024 (and 3, one chi-squared attempt block, and 36): ncsde's generator
// (Philox4x32-10 words, its own Box–Muller kernels, the widest instruction set) vs the generator it
// replaced (Philox4x64-10 words and std::log/cos/sin, scalar) vs std::mt19937_64 +
// std::normal_distribution (not reproducible across standard libraries, the reason ncsde does not
// use it); and ncsde's generator forced onto each instruction-set path (same numbers, bit for bit).
void normals_philox(benchmark::State& state, Eigen::Index count) {
  const ncsde::random_stream stream(1, 2);
  ncsde::vector out(count);
  std::uint64_t step = 0;
  for (auto _ : state) {
    stream.normals(ncsde::random_domain::increments, step++, 0, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * out.size());
}
void bench_normals_philox(benchmark::State& state) { normals_philox(state, 1024); }
BENCHMARK(bench_normals_philox);
void bench_normals_philox_small(benchmark::State& state) { normals_philox(state, state.range(0)); }
BENCHMARK(bench_normals_philox_small)->Arg(3)->Arg(36);

void bench_normals_path(benchmark::State& state, ncsde::detail::simd_path path) {
  if (!ncsde::detail::simd_path_supported(path)) {
    state.SkipWithError("instruction set not supported by this CPU");
    return;
  }
  const ncsde::random_stream stream(1, 2);
  std::vector<double> out(static_cast<std::size_t>(state.range(0)));
  std::uint64_t step = 0;
  for (auto _ : state) {
    ncsde::detail::normals_on(path, stream, ncsde::random_domain::increments, step++, 0, out.data(),
                              state.range(0));
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
// One benchmark per compiled path: bench_normals_path/<path>/1024 with the path's name in lower case
// ("scalar", Highway's "avx2", "avx3" for AVX-512, "sse4", …).
[[maybe_unused]] const bool normals_path_benchmarks = [] {
  for (const ncsde::detail::simd_path path : ncsde::detail::compiled_simd_paths()) {
    std::string name = ncsde::detail::simd_path_name(path);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    benchmark::RegisterBenchmark(("bench_normals_path/" + name).c_str(), bench_normals_path, path)
        ->Arg(1024);
  }
  return true;
}();

// The generator before Philox4x32: one Philox4x64-10 call (counter (j/4, i0, i1, domain)) per four
// normals, two Box–Muller pairs with std::log, std::cos, std::sin.
void bench_normals_philox4x64_libm(benchmark::State& state) {
  using philox = r123::Philox4x64;
  const philox::key_type key = {{1, 2}};
  const auto unit = [](std::uint64_t bits) {
    return (static_cast<double>(bits >> 11) + 1.0) * 0x1p-53;
  };
  const std::ptrdiff_t count = state.range(0);
  std::vector<double> out(static_cast<std::size_t>(count));
  std::uint64_t step = 0;
  for (auto _ : state) {
    philox::ctr_type ctr = {{0, step++, 0, 1}};
    for (std::ptrdiff_t j = 0; j < count; j += 4) {
      ctr[0] = static_cast<std::uint64_t>(j / 4);
      const philox::ctr_type r = philox()(ctr, key);
      for (std::ptrdiff_t pair = 0; pair < 2; ++pair) {
        const double radius = std::sqrt(-2.0 * std::log(unit(r[2 * pair])));
        const double angle = 2.0 * std::numbers::pi * unit(r[2 * pair + 1]);
        const std::ptrdiff_t k = j + 2 * pair;
        if (k < count) out[static_cast<std::size_t>(k)] = radius * std::cos(angle);
        if (k + 1 < count) out[static_cast<std::size_t>(k + 1)] = radius * std::sin(angle);
      }
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * count);
}
BENCHMARK(bench_normals_philox4x64_libm)->Arg(3)->Arg(36)->Arg(1024);

void bench_normals_std(benchmark::State& state) {
  std::mt19937_64 gen(1);
  std::normal_distribution<double> normal;
  ncsde::vector out(1024);
  for (auto _ : state) {
    for (Eigen::Index i = 0; i < out.size(); ++i) out(i) = normal(gen);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * out.size());
}
BENCHMARK(bench_normals_std);

// Iterated integrals for k noise dimensions at dt = 1e-3: Wiktorsson (p ~ h^{-1/2} terms) vs the
// plain Fourier series of the same accuracy (p ~ 1/h terms).
void bench_iterated(benchmark::State& state, ncsde::levy_area_method method) {
  const int k = static_cast<int>(state.range(0));
  const ncsde::random_stream stream(3, 4);
  ncsde::iterated_integrals gen(method);
  ncsde::noise_increment inc;
  inc.dt = 1e-3;
  inc.dw = ncsde::vector::Constant(k, 0.01);
  std::uint64_t step = 0;
  for (auto _ : state) {
    gen.generate(inc, stream, step++, 1);
    benchmark::DoNotOptimize(inc.iterated.data());
  }
  state.counters["terms"] = ncsde::levy_area_terms(k, inc.dt, method);
}
BENCHMARK_CAPTURE(bench_iterated, wiktorsson, ncsde::levy_area_method::wiktorsson)
    ->Arg(2)
    ->Arg(8)
    ->Arg(18);
BENCHMARK_CAPTURE(bench_iterated, fourier, ncsde::levy_area_method::fourier)
    ->Arg(2)
    ->Arg(8)
    ->Arg(18);

// Structured O(m³) noise L W Lᵀ (k = m²) vs the dense adapter's O(m⁶) factor of Σ_lin, one EM step:
// the same SDE (analytic::linear_covariance), once as a noise map and once through its covariance().
ncsde::matrix bench_state(int m) {
  ncsde::matrix v = ncsde::matrix::Identity(m, m);
  for (int a = 0; a < m; ++a)
    for (int b = 0; b < m; ++b)
      if (a != b) v(a, b) = 0.3 / (1.0 + std::abs(a - b));
  return v;
}

template <class S>
void bench_em_step(benchmark::State& state, S sde) {
  const int m = static_cast<int>(state.range(0));
  const ncsde::matrix v0 = bench_state(m);
  const int k = sde.noise_dimension(m);
  const ncsde::random_stream stream(5, 6);
  ncsde::euler_maruyama<> em;
  ncsde::noise_increment inc;
  inc.dt = 1e-3;
  inc.dw.resize(k);
  ncsde::matrix v = v0;
  std::uint64_t step = 0;
  for (auto _ : state) {
    stream.normals(ncsde::random_domain::increments, step++, 0, inc.dw);
    inc.dw *= std::sqrt(inc.dt);
    v = v0;  // the dense path caches its factor per state: reset so each step factors afresh
    v(0, 0) += 1e-12 * static_cast<double>(step % 2);
    em.do_step(sde, v, 0.0, inc);
    benchmark::DoNotOptimize(v.data());
  }
}
void bench_em_structured(benchmark::State& state) {
  bench_em_step(state, ncsde::analytic::linear_covariance{});
}
void bench_em_dense(benchmark::State& state) {
  bench_em_step(state, ncsde::dense_covariance_noise<ncsde::analytic::linear_covariance>({}));
}
BENCHMARK(bench_em_structured)->RangeMultiplier(2)->Range(2, 16);
BENCHMARK(bench_em_dense)->RangeMultiplier(2)->Range(2, 16);

// Ensembles path by path vs batched (ensemble_options::batched, lane groups of batch_width paths),
// one thread, 4096 paths, dt = 10⁻³, 200 steps: ns per path-step (counter ns_per_path_step; the
// numbers bench/baselines/torch_em.py compares with a batched PyTorch Euler–Maruyama).
//   batched/gbm/scalar/<mode>:      dX = μX dt + σX dW on ℝ (a vector state of length 1, euclidean);
//   batched/gbm/cone/<mode>:        analytic::gbm on 1×1 matrices, the cone check after every step;
//   batched/lincov/m:<m>/<mode>:    analytic::linear_covariance (k = m² noises, L W Lᵀ), m = 4, 8.
struct scalar_gbm {
  double mu = 0.5;
  double sigma = 0.5;
  int noise_dimension(int) const { return 1; }
  template <class X>
  void drift(const X& x, X& out, double) const {
    out = mu * x;
  }
  template <class X>
  void diffusion(const X& x, const ncsde::vector& xi, X& out, double) const {
    out = (sigma * xi(0)) * x;
  }
  void drift_lanes(const ncsde::lane_block& v, ncsde::lane_block& out, double) const {
    out = mu * v;
  }
  void diffusion_lanes(const ncsde::lane_block& v, const ncsde::lane_block& xi,
                       ncsde::lane_block& out, double) const {
    out.col(0) = (sigma * xi.col(0)) * v.col(0);
  }
};

constexpr long long batched_paths = 4096;
constexpr long long batched_steps = 200;

template <class S, class State>
void batched_ensemble(benchmark::State& state, const S& sde, const State& v0, bool batched) {
  ncsde::integrate_options io;
  io.dt = 1e-3;
  ncsde::ensemble_options eo;
  eo.paths = batched_paths;
  eo.seed = 7;
  eo.threads = 1;
  eo.batched = batched;
  eo.progress = ncsde::progress_mode::off;
  const ncsde::problem<S, State> prob{sde, v0, io.dt * static_cast<double>(batched_steps)};
  long long completed = 0;
  for (auto _ : state) {
    const ncsde::ensemble_result r = ncsde::run_ensemble(ncsde::euler_maruyama<>{}, prob, io, eo);
    completed = r.completed;
    benchmark::DoNotOptimize(r.terminal.mean().data());
  }
  const double path_steps = static_cast<double>(batched_paths * batched_steps);
  state.counters["ns_per_path_step"] =
      benchmark::Counter(path_steps * 1e-9, benchmark::Counter::kIsIterationInvariantRate |
                                                benchmark::Counter::kInvert);
  state.counters["paths"] = static_cast<double>(batched_paths);
  state.counters["steps"] = static_cast<double>(batched_steps);
  state.counters["incomplete_paths"] = static_cast<double>(batched_paths - completed);
}

void register_batched() {
  for (const bool batched : {false, true}) {
    const std::string mode = batched ? "batched" : "per_path";
    benchmark::RegisterBenchmark(("batched/gbm/scalar/" + mode).c_str(),
                                 [batched](benchmark::State& st) {
                                   batched_ensemble(st, scalar_gbm{},
                                                    ncsde::vector(ncsde::vector::Ones(1)), batched);
                                 })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("batched/gbm/cone/" + mode).c_str(),
                                 [batched](benchmark::State& st) {
                                   batched_ensemble(st, ncsde::analytic::gbm{},
                                                    ncsde::matrix(ncsde::matrix::Ones(1, 1)),
                                                    batched);
                                 })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    for (const int m : {4, 8})
      benchmark::RegisterBenchmark(("batched/lincov/m:" + std::to_string(m) + "/" + mode).c_str(),
                                   [batched, m](benchmark::State& st) {
                                     batched_ensemble(st, ncsde::analytic::linear_covariance{},
                                                      bench_state(m), batched);
                                   })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_batched();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
