#pragma once
/// Internals of solvers/random.cpp, shared with its tests only (not installed): the instruction-set
/// paths of the generator and the scalar form of its elementary kernels.
///
/// Every path performs the same IEEE-754 binary64 operations (add, sub, mul, div, sqrt, each
/// correctly rounded, no fused multiply-add, in the same order) on the same operands; the integer
/// and bit manipulations and the integer-to-double conversions are exact. So the scalar reference
/// and every Highway target (SSE4, AVX2, AVX-512, NEON, EMU128, …) give bit-identical numbers.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ncsde/random.hpp"

namespace ncsde::detail {

/// An instruction-set path of random_stream::normals() and uniforms(): the plain C++ reference
/// (target 0) or one Google Highway target compiled into the library (a HWY_* target bit, e.g.
/// HWY_AVX2).
struct simd_path {
  std::int64_t target = 0;
  friend bool operator==(simd_path, simd_path) = default;
};

/// The plain C++ reference path; every CPU runs it.
inline constexpr simd_path scalar_path{};

/// Every path compiled into the library: the reference first, then Highway's targets from the best
/// (widest) down, whether or not this CPU runs them.
std::vector<simd_path> compiled_simd_paths();

/// "scalar", or Highway's name of the target ("AVX2", "AVX3" for AVX-512, "SSE4", "EMU128", …).
std::string simd_path_name(simd_path path);

/// True if `path` is compiled in and this CPU (and its operating system) can run it; scalar always.
bool simd_path_supported(simd_path path);

/// The best supported path: the one random_stream uses.
simd_path fastest_simd_path();

/// random_stream::normals() / uniforms() forced onto `path`.
/// Throws ncsde::invalid_argument naming the path if it is not compiled in or this CPU cannot run it.
void normals_on(simd_path path, const random_stream& stream, random_domain domain, std::uint64_t i0,
                std::uint64_t i1, double* out, std::ptrdiff_t count);
void uniforms_on(simd_path path, const random_stream& stream, random_domain domain,
                 std::uint64_t i0, std::uint64_t i1, double* out, std::ptrdiff_t count);

/// lane_normals_at() forced onto `path`.
void lane_normals_on(simd_path path, std::uint64_t seed, const std::uint64_t* paths,
                     const std::uint64_t* i0s, int streams, random_domain domain, std::uint64_t i1,
                     double* out, std::ptrdiff_t count, std::ptrdiff_t stride);

/// ln(u) for a positive normal double u (the generator uses u in [2^-53, 1]): u = 2^e·m with
/// m ∈ [√2/2, √2), f = m − 1, s = f/(2 + f), ln m = f − f²/2 + s·(f²/2 + R(s²)) where
/// R(z) = Σ_{k≥1} 2z^k/(2k + 1) is a degree-7 polynomial (approximation error below 2^-57 relative
/// to ln m), and e·ln 2 is added in two parts (the high part has 40 significant bits, so e·ln2_hi
/// is exact).
double log_unit(double u);

/// sin(2πt) and cos(2πt) for t ∈ [0, 1]: q = round(4t) and r = t − q/4 ∈ [−1/8, 1/8] are exact
/// (no rounding of 2π·t), sin(2πr) = r·S(r²) and cos(2πr) = 1 − r²·C(r²) with degree-6 polynomials
/// S and C (approximation errors below 2^-57 relative), then the quadrant q mod 4 swaps and
/// negates.
void sincos_turns(double t, double& sin_out, double& cos_out);

}  // namespace ncsde::detail
