// Solver-layer micro-benchmarks. Each pair compares ncsde's choice with the obvious alternative in the
// same run; quote ratios, not absolute times (the machines are noisy).
//   build/bench/ncsde_bench_solvers --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <random>

#include "ncsde/analytic.hpp"
#include "ncsde/levy_area.hpp"
#include "ncsde/noise.hpp"
#include "ncsde/random.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"

namespace {

// Counter-based Philox normals vs std::mt19937_64 + std::normal_distribution (not reproducible
// across standard libraries, the reason ncsde does not use it).
void bench_normals_philox(benchmark::State& state) {
  const ncsde::random_stream stream(1, 2);
  ncsde::vector out(1024);
  std::uint64_t step = 0;
  for (auto _ : state) {
    stream.normals(ncsde::random_domain::increments, step++, 0, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * out.size());
}
BENCHMARK(bench_normals_philox);

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
BENCHMARK_CAPTURE(bench_iterated, wiktorsson, ncsde::levy_area_method::wiktorsson)->Arg(2)->Arg(8)->Arg(18);
BENCHMARK_CAPTURE(bench_iterated, fourier, ncsde::levy_area_method::fourier)->Arg(2)->Arg(8)->Arg(18);

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

}  // namespace

BENCHMARK_MAIN();
