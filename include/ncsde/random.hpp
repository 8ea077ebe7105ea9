#pragma once
/// Counter-based random streams (Random123 Philox4x64-10).
///
/// A stream is keyed by (seed, path): the numbers of a path depend on nothing else, not on the
/// thread that runs it, nor on which other paths ran, nor in which order. Within a stream every
/// block of numbers is addressed by a counter (domain, i0, i1, j) — for instance (increments, step,
/// 0, j) — so any number can be recomputed at random access: a Brownian path can be refined (bridge)
/// or coarsened without storing it, and the same step of the same path always sees the same noise.
///
/// Normals come from Box–Muller on two 53-bit uniforms in (0, 1]: exactly two uniforms per pair of
/// normals, so the count of uniforms per block is fixed (no rejection) and a counter maps to fixed
/// numbers. std::normal_distribution (whose algorithm differs between standard libraries) and Eigen's
/// Random() never appear where results must reproduce.
#include <Eigen/Core>

#include <cstdint>

namespace ncsde {

/// What a block of random numbers is used for; part of the counter, so domains never overlap.
enum class random_domain : std::uint64_t {
  increments = 1,    ///< Brownian increments of a step: (step, 0)
  levy_area = 2,     ///< normals of the iterated-integral (Lévy area) approximation: (step, node)
  bridge = 3,        ///< Brownian-bridge midpoints when a step is refined: (step, node)
  initial = 4,       ///< random initial conditions: (0, 0)
  user = 16,         ///< free for problems and applications: (i0, i1)
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

}  // namespace ncsde
