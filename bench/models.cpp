// Model-layer benchmarks (bench/README.md, items 1, 2 and 4; `bench/run` runs them all):
//  - path_step/<scheme>/<noise>/<model>/m:<m>: the cost of one path step of integrate() for every
//    scheme of the registry (ncsde/schemes.hpp: "em", "milstein" with Wiktorsson Lévy areas, …),
//    with the structured O(m³) noise of covariance_sde or with the dense O(m⁶) factor of its
//    covariance() (dense_covariance_noise); items/s = path-steps/s. Structured EM steps carry the
//    operation count of the bound as counters.
//  - path_step_batched/em/structured/<model>/m:<m>: the same Euler–Maruyama path step taken by the
//    batched engine (ensemble_options::batched: lane groups of batch_width paths, one thread),
//    items/s = path-steps/s in process CPU time; carries the bound's operation count too.
//  - eigen/gemm, eigen/gemv, libm/acos: the single-core rates that the bound charges flops at.
//  - lanes/normals, lanes/product/m:<m>: the SIMD rates of the batched engine's bound: lane_normals_at
//    on 32 streams (the engine's draw of four steps of a lane group) and lane_product (m×m products
//    of batch_width lanes side by side).
//  - ensemble/em/<model>/m:<m>/threads:<t>: run_ensemble throughput on 1 and 2 threads; the
//    threads:1 runs are also ncsde's side of the numpy comparison (baselines/numpy_em.py reads
//    their counters: paths, steps, dt and the model's parameters).
//  - ensemble/em_batched/<model>/m:<m>/threads:<t>: the same ensembles with
//    ensemble_options::batched (lane groups of batch_width paths, batched.hpp).
//  - registry/em/<model>/m:4: an ensemble of every model of the model registry through its
//    type-erased handle (shaped-tanh included); items/s = path-steps/s.
// The models are built through the model registry (common.hpp, bench_model).
// Ratios, never absolute times, are the result (the machines are noisy); nothing asserts a time.
//   build/bench/ncsde_bench_models [--quick] --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "common.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/integrate.hpp"
#include "ncsde/lanes.hpp"
#include "ncsde/models/shaped.hpp"
#include "ncsde/noise.hpp"
#include "ncsde/random.hpp"
#include "ncsde/schemes.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"

namespace {

using namespace ncsde;
using namespace ncsde::bench;

constexpr int sizes[] = {2, 4, 8, 16, 32, 64};

/// Step of the path-step and ensemble benchmarks. A step's noise moves the spectrum of V by about
/// √(k_lin·dt·m) relative to V₀'s smallest eigenvalue (0.82): at dt = 1/256 the transformer
/// (k_lin = 1.75) leaves the positive-definite cone on every step at m = 64 and pays an
/// eigendecomposition for the projection, which is a property of that step size and not of the
/// step's cost. At 2⁻¹⁰ no model projects at any m benchmarked (counter projected_per_step).
constexpr double path_dt = 0x1p-10;

/// Operation count of one structured Euler–Maruyama step of a model at size m, the work the bound
/// (bench/README.md, "The bound") charges at the measured rates. Products are counted as
/// evaluated: 2m³ flops for every m×m product (L is stored dense, so L·G costs 2m³, not the m³ of
/// a triangular product); the Cholesky factor m³/3 is charged at the GEMM rate, O(m²) work at the
/// GEMV rate, acos at the measured acos rate.
///   normals   k = m² (G) or 2m² (G, Z)
///   factor L  m³/3 (gemm)
///   N_lin     L·G, ·Lᵀ: 4m³ (gemm); (M + Mᵀ)/√2, ×√k_lin: 3m²
///   N_att     L·Z, ·Lᵀ, ζ·PV: 6m³ (gemm); PV 2m², /(mτ₀), ζPV + (ζPV)ᵀ, ×√k_att, add: 6m²
///   N_causal  L·Z, ·Lᵀ, N·V: 6m³ (gemm); prefix centring m², /τ₀, NV + (NV)ᵀ, ×, add: 5m²
///   b_att     V·u 2m², row means m², tr(PVPV) 5m², entries 7m², ×γ² and add 2m²: 17m²
///   b_causal  U·V: 2m³ (gemm); prefix sums R, Π, S2, Q2 7m², U 2.5m², rows of E m²,
///             entries 12.5m², ×γ² and add 2m²: 25m²
///   b_relu    per pair a < b: 3 √, ÷, clamp 2, 1 − ρ², √, ρ·acos, −, ×2: 14 flops and one acos
///             (m(m−1)/2 acos), ×γ² and add 2m²: 9m²
///   update    V + dt·b + N: 3m²
/// Not counted: the engine's work around the step (symmetrisation, the blow-up scan, finiteness
/// checks of the coefficients, the positive-definiteness check of the new state), which is the
/// library's overhead over the bound.
struct op_count {
  double normals = 0.0;
  double gemm_flops = 0.0;
  double elementwise_flops = 0.0;
  double acos = 0.0;
};

op_count em_step_count(const models::covariance_sde& sde, int m) {
  const double m2 = double(m) * m, m3 = m2 * m;
  const bool causal = sde.params().causal;
  op_count c;
  c.normals = sde.noise_dimension(m);
  c.gemm_flops = m3 / 3.0 + 4.0 * m3;
  c.elementwise_flops = 3.0 * m2 + 3.0 * m2;  // N_lin, update
  if (has_relu_part(sde)) {
    c.elementwise_flops += 9.0 * m2;
    c.acos = m * (m - 1) / 2.0;
  }
  if (has_attention_part(sde) && !causal) {
    c.gemm_flops += 6.0 * m3;
    c.elementwise_flops += 6.0 * m2 + 17.0 * m2;
  }
  if (has_attention_part(sde) && causal) {
    c.gemm_flops += 6.0 * m3 + 2.0 * m3;
    c.elementwise_flops += 5.0 * m2 + 25.0 * m2;
  }
  return c;
}

enum class noise { structured, dense };

/// A scheme that uses iterated integrals (the Milstein family) forms the k columns G_j of the noise
/// map and a derivative term per column every step, O(k·cost(G)); one without (Euler–Maruyama,
/// predictor–corrector) evaluates the noise map once.
bool per_column(const scheme_descriptor& d) { return d.request.iterated != iterated_terms::none; }

/// Largest m run for a scheme and noise: where one step would take ≳ 1 s the size is skipped (the
/// bench/README.md gives the extrapolation from the fitted exponent). Dense EM factors a K×K Σ per step,
/// K = m(m+1)/2 (m = 64: K = 2080); Milstein evaluates the noise map at k supports per step and
/// draws k×k iterated integrals (k = 2m² with attention: 8192 at m = 64, a 512 MB matrix).
int size_cap(const scheme_descriptor& s, noise n) {
  if (!per_column(s)) return n == noise::structured ? 64 : (quick ? 16 : 32);
  return n == noise::structured ? (quick ? 8 : 16) : (quick ? 4 : 16);
}

/// Path length per benchmark iteration: long enough to amortise integrate()'s set-up, short enough
/// that one iteration of the O(m⁶) and O(m⁵) cases stays well under a second. Milstein through the
/// dense adapter takes one step from V₀ per path: its eigen-factor is not a smooth function of V
/// (eigenvector signs and order jump between V and the supports V + b dt + G_j √dt), so the
/// derivative-free correction [G(Ῡ_j) − G(V)]/√dt is O(1/√dt) and after a few steps the state
/// leaves the region where Σ is positive semidefinite (noise.hpp: the adapter is a reference for
/// EM). The cost of a step does not depend on the state, so one step from V₀ measures it.
int path_steps(const scheme_descriptor& s, noise n, int m) {
  int steps = 64;
  if (n == noise::dense) steps = m <= 4 ? 64 : m <= 8 ? 16 : m <= 16 ? 4 : 1;
  if (per_column(s)) steps = n == noise::dense ? 1 : m <= 4 ? 16 : m <= 8 ? 4 : 1;
  if (quick) steps = std::max(1, steps / 4);
  return steps;
}

/// One path of `steps` steps per iteration. Paths start alternately from V₀ and (1 + 2⁻²⁰)V₀: both
/// noise maps cache their factor for the last state they saw, and a path must not start on the
/// factor its predecessor left behind (a 1-step path would otherwise never factor at all).
template <class Stepper, class S>
void path_step(benchmark::State& state, const S& sde, int m, int steps) {
  problem<S> prob{sde, initial_state(m), steps * path_dt};
  const matrix v0 = prob.v0, v0_scaled = (1.0 + 0x1p-20) * prob.v0;
  integrate_options opt;
  opt.dt = path_dt;
  Stepper stepper;
  std::uint64_t path = 0;
  long long taken = 0, incomplete = 0, projected = 0;
  for (auto _ : state) {
    prob.v0 = path % 2 == 0 ? v0 : v0_scaled;
    const path_result r = integrate(stepper, prob, opt, /*seed=*/1, path++);
    taken += r.steps;
    projected += r.pd.projected;
    if (r.status != path_status::completed) ++incomplete;
    benchmark::DoNotOptimize(r.v.data());
  }
  state.SetItemsProcessed(taken);
  state.counters["projected_per_step"] =
      static_cast<double>(projected) / static_cast<double>(taken);
  state.counters["m"] = m;
  state.counters["k"] = sde.noise_dimension(m);
  state.counters["steps_per_path"] = steps;
  state.counters["incomplete_paths"] = static_cast<double>(incomplete);
}

/// path_step/<scheme>/{structured,dense}/<model>/m:<m> for every registry scheme, in registry
/// order; the structured EM steps also carry the bound's operation count.
void register_path_steps() {
  for (const bench_model& model : all_models())
    for (const int m : sizes) {
      const std::string tail = model.label + "/m:" + std::to_string(m);
      const models::covariance_sde sde = model.sde();
      const dense_covariance_noise<models::covariance_sde> dense(sde);
      builtin_schemes::for_each([&]<class St>(std::type_identity<St>) {
        constexpr scheme_descriptor d = describe<St>();
        const std::string head = "path_step/" + std::string(d.name) + "/";
        if (m <= size_cap(d, noise::structured)) {
          const int steps = path_steps(d, noise::structured, m);
          const op_count c = em_step_count(sde, m);
          benchmark::RegisterBenchmark((head + "structured/" + tail).c_str(),
                                       [=](benchmark::State& st) {
                                         path_step<St>(st, sde, m, steps);
                                         if constexpr (std::is_same_v<St, euler_maruyama<>>) {
                                           st.counters["normals"] = c.normals;
                                           st.counters["gemm_flops"] = c.gemm_flops;
                                           st.counters["elementwise_flops"] = c.elementwise_flops;
                                           st.counters["acos"] = c.acos;
                                         }
                                       });
        }
        if (m <= size_cap(d, noise::dense)) {
          const int steps = path_steps(d, noise::dense, m);
          benchmark::RegisterBenchmark((head + "dense/" + tail).c_str(), [=](benchmark::State& st) {
            path_step<St>(st, dense, m, steps);
          });
        }
      });
    }
}

/// The batched engine's path step: a one-thread batched ensemble of `paths` paths (lane groups of
/// batch_width) of `steps` Euler–Maruyama steps per iteration; items are path-steps, timed in
/// process CPU time.
void batched_path_step(benchmark::State& state, const models::covariance_sde& sde, int m, int steps,
                       long long paths) {
  const problem<models::covariance_sde> prob{sde, initial_state(m), steps * path_dt};
  integrate_options io;
  io.dt = path_dt;
  const ensemble_options eo = batched_one_thread(paths);
  long long taken = 0, incomplete = 0;
  for (auto _ : state) {
    const ensemble_result r = run_ensemble(euler_maruyama<>{}, prob, io, eo);
    taken += r.completed * steps;
    for (const double t : r.stop_times) taken += std::llround((t - prob.t0) / path_dt);
    for (const double t : r.explosion_times) taken += std::llround((t - prob.t0) / path_dt);
    incomplete += eo.paths - r.completed;
    benchmark::DoNotOptimize(r.terminal.mean().data());
  }
  state.SetItemsProcessed(taken);
  state.counters["m"] = m;
  state.counters["k"] = sde.noise_dimension(m);
  state.counters["steps_per_path"] = steps;
  state.counters["incomplete_paths"] = static_cast<double>(incomplete);
}

/// path_step_batched/em/structured/<model>/m:<m>, m ≤ 16, with the bound's operation count.
void register_batched_path_steps() {
  for (const bench_model& model : all_models())
    for (const int m : {2, 4, 8, 16}) {
      const models::covariance_sde sde = model.sde();
      const op_count c = em_step_count(sde, m);
      // 256 paths (32 lane groups) of 64 steps: the ensemble's set-up (a worker thread, the
      // summaries) under 2% of an iteration at m = 4.
      const int steps = quick ? 16 : 64;
      const long long paths = quick ? 64 : 256;
      benchmark::RegisterBenchmark(
          ("path_step_batched/em/structured/" + model.label + "/m:" + std::to_string(m)).c_str(),
          [=](benchmark::State& st) {
            batched_path_step(st, sde, m, steps, paths);
            st.counters["normals"] = c.normals;
            st.counters["gemm_flops"] = c.gemm_flops;
            st.counters["elementwise_flops"] = c.elementwise_flops;
            st.counters["acos"] = c.acos;
          })
          ->MeasureProcessCPUTime();
    }
}

/// Operands of the rate benchmarks: fixed, well-scaled, not all equal.
matrix operand(int rows, int cols, double shift) {
  matrix a(rows, cols);
  for (int j = 0; j < cols; ++j)
    for (int i = 0; i < rows; ++i) a(i, j) = std::sin(1.0 + shift + 0.37 * i + 0.91 * j);
  return a;
}

/// Eigen's single-core m×m GEMM rate (C = A·B, 2m³ flops).
void eigen_gemm(benchmark::State& state, int m) {
  const matrix a = operand(m, m, 0.0), b = operand(m, m, 1.0);
  matrix c(m, m);
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * m * m * m;
  state.counters["flops_per_second"] = benchmark::Counter(
      flops * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

/// Eigen's single-core m×m GEMV rate (y = A·x, 2m² flops).
void eigen_gemv(benchmark::State& state, int m) {
  const matrix a = operand(m, m, 0.0);
  const vector x = operand(m, 1, 2.0);
  vector y(m);
  for (auto _ : state) {
    y.noalias() = a * x;
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * m * m;
  state.counters["flops_per_second"] = benchmark::Counter(
      flops * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

/// The same rates on compile-time-sized m×m operands (the sizes of the fixed-size path, is_fixed_size):
/// Eigen's product through its blocked GEMM (`lazy` false) and its coefficient-based product
/// (`lazy` true, what the fixed-size kernels use), and the fixed-size GEMV. The bound charges flops
/// at the best rate Eigen reaches at a size, whichever kernel reaches it.
template <int M>
void eigen_gemm_fixed(benchmark::State& state, bool lazy) {
  const square_matrix<M> a = operand(M, M, 0.0), b = operand(M, M, 1.0);
  square_matrix<M> c;
  for (auto _ : state) {
    if (lazy)
      c.noalias() = a.lazyProduct(b);
    else
      c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["flops_per_second"] = benchmark::Counter(
      2.0 * M * M * M * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

template <int M>
void eigen_gemv_fixed(benchmark::State& state) {
  const square_matrix<M> a = operand(M, M, 0.0);
  const column_vector<M> x = operand(M, 1, 2.0);
  column_vector<M> y;
  for (auto _ : state) {
    y.noalias() = a * x;
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.counters["flops_per_second"] = benchmark::Counter(
      2.0 * M * M * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

template <int M>
void register_fixed_rates() {
  const std::string tail = "/m:" + std::to_string(M);
  benchmark::RegisterBenchmark(("eigen/gemm_fixed" + tail).c_str(),
                               [](benchmark::State& st) { eigen_gemm_fixed<M>(st, false); });
  benchmark::RegisterBenchmark(("eigen/gemm_fixed_lazy" + tail).c_str(),
                               [](benchmark::State& st) { eigen_gemm_fixed<M>(st, true); });
  benchmark::RegisterBenchmark(("eigen/gemv_fixed" + tail).c_str(),
                               [](benchmark::State& st) { eigen_gemv_fixed<M>(st); });
}

/// std::acos over correlations in (−1, 1), the transcendental of b_relu; items/s = acos/s.
void libm_acos(benchmark::State& state) {
  vector x(1024), y(1024);
  for (Eigen::Index i = 0; i < x.size(); ++i) x(i) = std::sin(0.7 * static_cast<double>(i)) * 0.99;
  for (auto _ : state) {
    for (Eigen::Index i = 0; i < x.size(); ++i) y(i) = std::acos(x(i));
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * x.size());
}

/// The batched engine's normals: lane_normals_at on 32 streams, 8 paths at 4 consecutive steps (the
/// engine's draw ahead), 32 normals each (k = 2m² at m = 4); items/s = normals/s.
void lane_normals_rate(benchmark::State& state) {
  constexpr int streams = lane_stream_capacity, count = 32;
  std::array<std::uint64_t, streams> paths{}, steps{};
  std::vector<double> out(static_cast<std::size_t>(streams) * count);
  std::uint64_t step = 0;
  for (auto _ : state) {
    for (int t = 0; t < streams; ++t) {
      paths[static_cast<std::size_t>(t)] = static_cast<std::uint64_t>(t % batch_width);
      steps[static_cast<std::size_t>(t)] = step + static_cast<std::uint64_t>(t / batch_width);
    }
    lane_normals_at(1, paths.data(), steps.data(), streams, random_domain::increments, 0,
                    out.data(), count, streams);
    step += streams / batch_width;
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * streams * count);
}

/// The lane kernels' m×m product rate: lane_product (full, not triangular) on batch_width lanes,
/// 2m³ flops per lane.
void lane_product_rate(benchmark::State& state, int m) {
  const auto mm = static_cast<Eigen::Index>(m) * m;
  lane_block a(batch_width, mm), b(batch_width, mm), c(batch_width, mm);
  for (Eigen::Index j = 0; j < mm; ++j)
    for (int l = 0; l < batch_width; ++l) {
      a(l, j) = std::sin(1.0 + 0.37 * static_cast<double>(l) + 0.91 * static_cast<double>(j));
      b(l, j) = std::sin(2.0 + 0.53 * static_cast<double>(l) + 0.29 * static_cast<double>(j));
    }
  for (auto _ : state) {
    lane_product(a, b, m, /*lower=*/false, c);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * m * m * m * batch_width;
  state.counters["flops_per_second"] = benchmark::Counter(
      flops * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void register_rates() {
  for (const int m : sizes) {
    benchmark::RegisterBenchmark(("eigen/gemm/m:" + std::to_string(m)).c_str(),
                                 [m](benchmark::State& st) { eigen_gemm(st, m); });
    benchmark::RegisterBenchmark(("eigen/gemv/m:" + std::to_string(m)).c_str(),
                                 [m](benchmark::State& st) { eigen_gemv(st, m); });
  }
  register_fixed_rates<2>();
  register_fixed_rates<4>();
  register_fixed_rates<8>();
  benchmark::RegisterBenchmark("libm/acos", libm_acos);
  benchmark::RegisterBenchmark("lanes/normals", lane_normals_rate);
  for (const int m : {2, 4, 8, 16})
    benchmark::RegisterBenchmark(("lanes/product/m:" + std::to_string(m)).c_str(),
                                 [m](benchmark::State& st) { lane_product_rate(st, m); });
}

/// run_ensemble throughput: `paths` Euler–Maruyama paths of `steps` steps of 2⁻¹⁰ on `threads`
/// threads. Items are path-steps (a blown-up path counts the steps it took); items/s in wall time
/// (the speed-up), cpu_time the CPU time of the whole process (all threads: the numpy comparison,
/// which a loaded machine distorts less). The horizon (T = 1/4 for 256 steps) keeps blow-up rare:
/// under 0.5% of transformer paths, none with attention.
void ensemble(benchmark::State& state, const bench_model& model, int m, int threads,
              long long paths, int steps, bool batched) {
  const problem<models::covariance_sde> prob{model.sde(), initial_state(m), steps * path_dt};
  integrate_options io;
  io.dt = path_dt;
  ensemble_options eo;
  eo.seed = 1;
  eo.paths = paths;
  eo.threads = threads;
  eo.batched = batched;
  eo.progress = progress_mode::off;
  long long taken = 0;
  for (auto _ : state) {
    const ensemble_result r = run_ensemble(euler_maruyama<>{}, prob, io, eo);
    taken += r.completed * steps;
    for (const double t : r.stop_times) taken += std::llround((t - prob.t0) / path_dt);
    for (const double t : r.explosion_times) taken += std::llround((t - prob.t0) / path_dt);
    benchmark::DoNotOptimize(r.terminal.mean().data());
  }
  state.SetItemsProcessed(taken);
  state.counters["path_steps_per_iteration"] =
      static_cast<double>(taken) / static_cast<double>(state.iterations());
  const models::shaped_params& p = prob.sde.params();
  state.counters["m"] = m;
  state.counters["threads"] = threads;
  state.counters["paths"] = static_cast<double>(paths);
  state.counters["steps"] = steps;
  state.counters["dt"] = path_dt;
  state.counters["c_plus"] = p.c_plus;
  state.counters["c_minus"] = p.c_minus;
  state.counters["gamma2"] = p.gamma2;
  state.counters["hidden_ratio"] = p.hidden_ratio;
  state.counters["tau0"] = p.tau0;
  state.counters["heads"] = p.heads;
}

void register_ensembles() {
  // 1024 paths = 16 blocks of 64: an even split over 2 threads.
  constexpr long long paths = 1024;
  const int steps = quick ? 64 : 256;
  for (const bool batched : {false, true})
    for (const char* label : {"attention", "transformer"})
      for (const int m : {4, 16})
        for (const int threads : {1, 2})
          benchmark::RegisterBenchmark(
              (std::string(batched ? "ensemble/em_batched/" : "ensemble/em/") + label +
               "/m:" + std::to_string(m) + "/threads:" + std::to_string(threads))
                  .c_str(),
              [=](benchmark::State& st) {
                ensemble(st, find_model(label), m, threads, paths, steps, batched);
              })
              ->UseRealTime()
              ->MeasureProcessCPUTime();
}

/// registry/em/<model>/m:4: a one-thread ensemble of every model of the registry at its defaults,
/// run through the registry's type-erased handle (model_instance::run_ensemble with the scheme
/// named "em", as `ncsde simulate --model <model>` runs it), so that a model registered in a few
/// lines (shaped-tanh) is benchmarked beside the built-in ones; items/s = path-steps/s (wall
/// time: the ensemble's worker thread runs the paths).
void registry_ensemble(benchmark::State& state, const models::model_entry& entry, int m,
                       int steps) {
  const models::model_instance sde = entry.make();
  integrate_options io;
  io.dt = path_dt;
  ensemble_options eo;
  eo.seed = 1;
  eo.paths = 256;
  eo.threads = 1;
  eo.progress = progress_mode::off;
  const double t_end = steps * path_dt;
  long long taken = 0;
  for (auto _ : state) {
    const ensemble_result r = sde.run_ensemble("em", initial_state(m), t_end, io, eo);
    taken += r.completed * steps;
    for (const double t : r.stop_times) taken += std::llround(t / path_dt);
    for (const double t : r.explosion_times) taken += std::llround(t / path_dt);
    benchmark::DoNotOptimize(r.terminal.mean().data());
  }
  state.SetItemsProcessed(taken);
  state.counters["m"] = m;
  state.counters["k"] = sde.noise_dimension(m);
}

void register_registry_ensembles() {
  const int steps = quick ? 64 : 256;
  for (const models::model_entry& entry : models::registry().entries())
    benchmark::RegisterBenchmark(
        ("registry/em/" + entry.name() + "/m:4").c_str(),
        [&entry, steps](benchmark::State& st) { registry_ensemble(st, entry, 4, steps); })
        ->UseRealTime()
        ->MeasureProcessCPUTime();
}

/// roofline/em/{path,batched}/<model>/m:<m>, m ∈ {16, 64, 128}: the structured Euler–Maruyama step
/// per path (integrate(), one path of `steps` steps per iteration) and batched (a one-thread batched
/// ensemble, process CPU time), with the step's flops (em_step_count: products as evaluated, and
/// the O(m²) work) as counters; bench/run divides them by the time per path-step and compares the
/// rate with the core's FP64 peak measured in the same run (peak/fp64_mul_add, bench/peak.cpp).
/// The batched runs keep to whole lane groups and few steps at large m (one iteration of 8 paths
/// of 2 steps at m = 128 is about 0.1 s).
void register_roofline() {
  for (const bench_model& model : all_models())
    for (const int m : {16, 64, 128}) {
      if (quick && m == 128) continue;
      const models::covariance_sde sde = model.sde();
      const op_count c = em_step_count(sde, m);
      const std::string tail = model.label + "/m:" + std::to_string(m);
      auto counters = [c](benchmark::State& st) {
        st.counters["gemm_flops"] = c.gemm_flops;
        st.counters["elementwise_flops"] = c.elementwise_flops;
      };
      const int steps = m <= 16 ? 64 : m <= 64 ? 8 : 2;
      benchmark::RegisterBenchmark(("roofline/em/path/" + tail).c_str(), [=](benchmark::State& st) {
        path_step<euler_maruyama<>>(st, sde, m, steps);
        counters(st);
      });
      const long long paths = m <= 16 ? 256 : m <= 64 ? 16 : 8;
      benchmark::RegisterBenchmark(("roofline/em/batched/" + tail).c_str(),
                                   [=](benchmark::State& st) {
                                     batched_path_step(st, sde, m, steps, paths);
                                     counters(st);
                                   })
          ->MeasureProcessCPUTime();
    }
}

/// ensemble_large/em/transformer/m:64/paths:256/threads:<t>: the default (per-path) ensemble of 256
/// paths at m = 64 on 1 and 2 threads, wall time: whether a large-m run with few paths uses the
/// cores (64 blocks of 4 paths: automatic_block_size).
void register_large_ensembles() {
  const int steps = quick ? 2 : 4;
  for (const int threads : {1, 2})
    benchmark::RegisterBenchmark(
        ("ensemble_large/em/transformer/m:64/paths:256/threads:" + std::to_string(threads)).c_str(),
        [=](benchmark::State& st) {
          ensemble(st, find_model("transformer"), 64, threads, 256, steps, false);
        })
        ->UseRealTime()
        ->MeasureProcessCPUTime();
}

}  // namespace

int main(int argc, char** argv) {
  return ncsde::bench::run_main(argc, argv, [] {
    register_rates();
    register_path_steps();
    register_batched_path_steps();
    register_ensembles();
    register_registry_ensembles();
    register_roofline();
    register_large_ensembles();
  });
}
