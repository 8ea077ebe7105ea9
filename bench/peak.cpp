// The core's double-precision arithmetic peak, the roofline the models' achieved rates are
// measured against (bench/README.md, "Against the machine"): a throughput loop of independent
// vector multiplies and adds (the operations the library's bit-reproducible kernels use: no fused
// multiply-add) and, beside it, of independent fused multiply-adds (what a kernel that gives up its
// bits could reach). Compiled by Google Highway for every instruction set and run on the widest the
// CPU has (the mechanism of solvers/random.cpp), so a build for the x86-64 baseline still measures
// the AVX-512 or AVX2 peak. Built with -ffp-contract=off (bench/CMakeLists.txt): the compiler must
// not fuse the multiplies and adds of the first loop.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/peak.cpp"
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS \
  (HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128 | HWY_RVV | HWY_AVX3_DL | HWY_SSSE3)
#endif
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cstdint>

HWY_BEFORE_NAMESPACE();
namespace ncsde_bench_peak {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// `iterations` rounds of 8 independent vector multiplies and 8 independent vector adds (16
/// registers, enough chains to cover the latency of two pipes of each); returns the flops done.
/// a = 1 and b = 0 at run time keep every value fixed (no overflow, no subnormals) while the
/// compiler cannot drop an operation.
HWY_NOINLINE double mul_add(std::int64_t iterations, double a_value, double b_value, double* sink) {
  const hn::ScalableTag<double> d;
  const auto a = hn::Set(d, a_value), b = hn::Set(d, b_value);
  auto x0 = hn::Set(d, 1.0), x1 = hn::Set(d, 1.5), x2 = hn::Set(d, 2.0), x3 = hn::Set(d, 2.5);
  auto x4 = hn::Set(d, 3.0), x5 = hn::Set(d, 3.5), x6 = hn::Set(d, 4.0), x7 = hn::Set(d, 4.5);
  auto y0 = x0, y1 = x1, y2 = x2, y3 = x3, y4 = x4, y5 = x5, y6 = x6, y7 = x7;
  for (std::int64_t i = 0; i < iterations; ++i) {
    x0 = hn::Mul(x0, a);
    y0 = hn::Add(y0, b);
    x1 = hn::Mul(x1, a);
    y1 = hn::Add(y1, b);
    x2 = hn::Mul(x2, a);
    y2 = hn::Add(y2, b);
    x3 = hn::Mul(x3, a);
    y3 = hn::Add(y3, b);
    x4 = hn::Mul(x4, a);
    y4 = hn::Add(y4, b);
    x5 = hn::Mul(x5, a);
    y5 = hn::Add(y5, b);
    x6 = hn::Mul(x6, a);
    y6 = hn::Add(y6, b);
    x7 = hn::Mul(x7, a);
    y7 = hn::Add(y7, b);
  }
  const auto s =
      hn::Add(hn::Add(hn::Add(x0, x1), hn::Add(x2, x3)), hn::Add(hn::Add(x4, x5), hn::Add(x6, x7)));
  const auto t =
      hn::Add(hn::Add(hn::Add(y0, y1), hn::Add(y2, y3)), hn::Add(hn::Add(y4, y5), hn::Add(y6, y7)));
  *sink = hn::GetLane(hn::Add(s, t));
  return 16.0 * static_cast<double>(hn::Lanes(d)) * static_cast<double>(iterations);
}

/// `iterations` rounds of 16 independent fused multiply-adds (2 flops each); returns the flops.
HWY_NOINLINE double fused(std::int64_t iterations, double a_value, double b_value, double* sink) {
  const hn::ScalableTag<double> d;
  const auto a = hn::Set(d, a_value), b = hn::Set(d, b_value);
  auto z0 = hn::Set(d, 1.0), z1 = hn::Set(d, 1.5), z2 = hn::Set(d, 2.0), z3 = hn::Set(d, 2.5);
  auto z4 = hn::Set(d, 3.0), z5 = hn::Set(d, 3.5), z6 = hn::Set(d, 4.0), z7 = hn::Set(d, 4.5);
  auto z8 = z0, z9 = z1, z10 = z2, z11 = z3, z12 = z4, z13 = z5, z14 = z6, z15 = z7;
  for (std::int64_t i = 0; i < iterations; ++i) {
    z0 = hn::MulAdd(z0, a, b);
    z1 = hn::MulAdd(z1, a, b);
    z2 = hn::MulAdd(z2, a, b);
    z3 = hn::MulAdd(z3, a, b);
    z4 = hn::MulAdd(z4, a, b);
    z5 = hn::MulAdd(z5, a, b);
    z6 = hn::MulAdd(z6, a, b);
    z7 = hn::MulAdd(z7, a, b);
    z8 = hn::MulAdd(z8, a, b);
    z9 = hn::MulAdd(z9, a, b);
    z10 = hn::MulAdd(z10, a, b);
    z11 = hn::MulAdd(z11, a, b);
    z12 = hn::MulAdd(z12, a, b);
    z13 = hn::MulAdd(z13, a, b);
    z14 = hn::MulAdd(z14, a, b);
    z15 = hn::MulAdd(z15, a, b);
  }
  const auto s = hn::Add(
      hn::Add(hn::Add(hn::Add(z0, z1), hn::Add(z2, z3)), hn::Add(hn::Add(z4, z5), hn::Add(z6, z7))),
      hn::Add(hn::Add(hn::Add(z8, z9), hn::Add(z10, z11)),
              hn::Add(hn::Add(z12, z13), hn::Add(z14, z15))));
  *sink = hn::GetLane(s);
  return 32.0 * static_cast<double>(hn::Lanes(d)) * static_cast<double>(iterations);
}

const char* target_name() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace ncsde_bench_peak
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <benchmark/benchmark.h>

namespace ncsde_bench_peak {
namespace {

HWY_EXPORT(mul_add);
HWY_EXPORT(fused);
HWY_EXPORT(target_name);

/// peak/fp64_mul_add and peak/fp64_fma: flops per second of one core (counter flops_per_second),
/// labelled with the instruction set that ran.
template <bool Fused>
void peak(benchmark::State& state) {
  volatile double a = 1.0, b = 0.0;  // run-time values: the loop cannot be folded
  double sink = 0.0, flops = 0.0;
  constexpr std::int64_t rounds = 1 << 16;
  for (auto _ : state) {
    flops += Fused ? HWY_DYNAMIC_DISPATCH(fused)(rounds, a, b, &sink)
                   : HWY_DYNAMIC_DISPATCH(mul_add)(rounds, a, b, &sink);
    benchmark::DoNotOptimize(sink);
  }
  state.counters["flops_per_second"] = benchmark::Counter(flops, benchmark::Counter::kIsRate);
  state.SetLabel(HWY_DYNAMIC_DISPATCH(target_name)());
}

BENCHMARK(peak<false>)->Name("peak/fp64_mul_add");
BENCHMARK(peak<true>)->Name("peak/fp64_fma");

}  // namespace
}  // namespace ncsde_bench_peak
#endif  // HWY_ONCE
