#pragma once
/// Counter-based random streams (Random123 Philox).
///
/// A stream is keyed by (seed, path): the numbers of a path depend on nothing else, not on the
/// thread that runs it, nor on which other paths ran, nor in which order. Within a stream every
/// block of numbers is addressed by a counter (domain, i0, i1, j) — for instance (increments, step,
/// 0, j) — so any number can be recomputed at random access: a Brownian path can be refined (bridge)
/// or coarsened without storing it, and the same step of the same path always sees the same noise.
///
/// The numbers of block (seed, path, domain, i0, i1): Philox4x64-10 with key (seed, path) at
/// counter (0, i0, i1, domain) gives four words h0..h3; pair p = 0, 1, … of the block is then
/// Philox4x32-10 with key (lo h0, hi h0) at counter (lo(h1 ⊕ p), hi(h1 ⊕ p), lo h2, hi h2), giving
/// 32-bit words w0..w3 (lo/hi: low/high 32 bits). Entries 2p and 2p + 1 are
///   uniforms:  a = (((w1·2^32 + w0) >> 11) + 1)·2^-53,  b = (((w3·2^32 + w2) >> 11) + 1)·2^-53,
///              both in (0, 1];
///   normals:   √(−2 ln a)·cos 2πb,  √(−2 ln a)·sin 2πb  (Box–Muller).
/// Exactly two uniforms per pair of normals (no rejection), so an address maps to fixed numbers.
/// Within a block p ↦ counter is injective; two different blocks share their Philox4x32 key and
/// counter words only with probability about 2^-128.
///
/// Reproducibility. ln and sin/cos of 2πb are ncsde's own kernels, not libm (ln within 1 ulp,
/// sin/cos within 2 ulp over the tests' 10^6 arguments; 2πb is reduced exactly, in turns).
/// random.cpp picks at run time the best Google Highway target the CPU runs (AVX-512, AVX2, SSE4,
/// …; the plain C++ scalar path is the reference); all of them perform the same correctly rounded
/// IEEE-754 operations in the same order (no fused multiply-add: random.cpp is compiled with
/// -ffp-contract=off, and must not be compiled with -ffast-math), so the numbers are
/// bit-identical whatever the instruction set, the standard library, the thread
/// count or the order in which blocks are requested, on any platform whose doubles are IEEE-754
/// binary64 without excess precision (by construction; the tests check the paths against each other
/// bit for bit). std::normal_distribution (whose algorithm differs between standard libraries) and
/// Eigen's Random() never appear where results must reproduce.
#include <Eigen/Core>

#include <cstdint>

namespace ncsde {

/// What a block of random numbers is used for; part of the counter, so domains never overlap.
enum class random_domain : std::uint64_t {
  increments = 1,  ///< Brownian increments of a step: (step, 0)
  levy_area = 2,   ///< normals of the iterated-integral (Lévy area) approximation: (step, node)
  bridge = 3,      ///< Brownian-bridge midpoints when a step is refined: (step, node)
  initial = 4,     ///< random initial conditions: (0, 0)
  user = 16,       ///< free for problems and applications: (i0, i1)
};

/// A (seed, path)-keyed Philox stream. Cheap to copy (four words); const and thread-safe.
class random_stream {
 public:
  random_stream(std::uint64_t seed, std::uint64_t path) : m_seed(seed), m_path(path) {}

  std::uint64_t seed() const { return m_seed; }
  std::uint64_t path() const { return m_path; }

  /// Fills `out` with iid standard normals: entry j is a fixed function of (seed, path, domain, i0,
  /// i1, j). Entries of different sizes agree on their common prefix.
  void normals(random_domain domain, std::uint64_t i0, std::uint64_t i1,
               Eigen::Ref<Eigen::VectorXd> out) const;
  void normals(random_domain domain, std::uint64_t i0, std::uint64_t i1, double* out,
               std::ptrdiff_t count) const;

  /// Fills `out` with iid uniforms in (0, 1], same addressing as normals().
  void uniforms(random_domain domain, std::uint64_t i0, std::uint64_t i1, double* out,
                std::ptrdiff_t count) const;

 private:
  std::uint64_t m_seed;
  std::uint64_t m_path;
};

/// Most streams lane_normals() and lane_normals_at() compute in one call.
inline constexpr int lane_stream_capacity = 32;

/// The normals of `lanes` streams (seed, paths[l]) at one address, for stepping several paths at
/// once (batched.hpp): out[j·stride + l] = entry j of random_stream(seed, paths[l]).normals(domain,
/// i0, i1, …), bit for bit, for j < count and l < lanes (1 ≤ lanes ≤ lane_stream_capacity,
/// stride ≥ lanes). The streams are computed side by side, one per SIMD lane, on the same
/// instruction-set path as random_stream; so are the Philox4x64 block keys of the streams. Throws
/// ncsde::invalid_argument for lanes or stride out of range.
void lane_normals(std::uint64_t seed, const std::uint64_t* paths, int lanes, random_domain domain,
                  std::uint64_t i0, std::uint64_t i1, double* out, std::ptrdiff_t count,
                  std::ptrdiff_t stride);

/// lane_normals() with an i0 of its own per stream: out[j·stride + t] = entry j of
/// random_stream(seed, paths[t]).normals(domain, i0s[t], i1, …), bit for bit, for t < streams
/// (1 ≤ streams ≤ lane_stream_capacity, stride ≥ streams). The batched engine takes the increments
/// of several steps of a lane group in one call (i0 = the step), so that more streams are computed
/// side by side. Throws ncsde::invalid_argument for streams or stride out of range.
void lane_normals_at(std::uint64_t seed, const std::uint64_t* paths, const std::uint64_t* i0s,
                     int streams, random_domain domain, std::uint64_t i1, double* out,
                     std::ptrdiff_t count, std::ptrdiff_t stride);

}  // namespace ncsde
