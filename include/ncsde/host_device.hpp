#pragma once
/// Code that compiles for the host and for a CUDA device: the arithmetic that the CPU engine and the
/// CUDA backend share (step_rules.hpp, solvers/device/), so that a rule of the step lives in one
/// place and the unit suite tests the device's arithmetic on the host.
///
/// NCSDE_HOST_DEVICE marks a function for both (CUDA's __host__ __device__ under nvcc, nothing
/// elsewhere); NCSDE_KERNEL_INLINE one that is always inlined into its caller (on the host the
/// caller may carry an instruction-set attribute, as random.cpp's Highway targets do, and vector
/// arguments must not cross a call). Such code uses no exceptions, no allocation and nothing of the
/// standard library that a device lacks; it reads its operands from plain arrays.
///
/// Rounding. Host and device give the same bits only when both perform the same correctly rounded
/// IEEE-754 operations in the same order: the host code is compiled with -ffp-contract=off (every
/// ncsde target is) and the device code with --fmad=false and CUDA's default correctly rounded
/// division and square root (never --use_fast_math).
#include <bit>
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define NCSDE_HOST_DEVICE __host__ __device__
#define NCSDE_KERNEL_INLINE __host__ __device__ __forceinline__
#else
#define NCSDE_HOST_DEVICE
#define NCSDE_KERNEL_INLINE [[gnu::always_inline]] inline
#endif

namespace ncsde::device {

/// The bits of a double, and the double of 64 bits (std::bit_cast on the host).
NCSDE_KERNEL_INLINE std::uint64_t bits_of(double x) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint64_t>(__double_as_longlong(x));
#else
  return std::bit_cast<std::uint64_t>(x);
#endif
}
NCSDE_KERNEL_INLINE double double_of(std::uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(b));
#else
  return std::bit_cast<double>(b);
#endif
}

/// The correctly rounded square root (IEEE-754; CUDA's default double sqrt is).
NCSDE_KERNEL_INLINE double sqrt_rn(double x) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(x);
#else
  return std::sqrt(x);
#endif
}

/// |x| (std::fabs on the host: the sign bit cleared, NaN included).
NCSDE_KERNEL_INLINE double abs_value(double x) {
#if defined(__CUDA_ARCH__)
  return fabs(x);
#else
  return std::fabs(x);
#endif
}

/// x rounded to the nearest integer, halfway cases away from zero (std::llround on the host).
NCSDE_KERNEL_INLINE long long nearest_integer(double x) {
#if defined(__CUDA_ARCH__)
  return llround(x);
#else
  return std::llround(x);
#endif
}

}  // namespace ncsde::device
