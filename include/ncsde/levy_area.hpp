#pragma once
/// Iterated Itô integrals I_(j,l) = ∫ (W_j − W_j(t)) dW_l over one step, from the step's increment dw
/// and extra normals; needed by Milstein for non-commutative noise.
///
/// I = (dw dwᵀ − dt·Id)/2 + A, with A the (antisymmetric) Lévy area. A cannot be computed from dw; it is
/// approximated from the Fourier series of the Brownian bridge on the step, truncated after p terms:
///  - levy_area_method::wiktorsson (default): the truncated series plus Wiktorsson's (2001) Gaussian
///    approximation of the tail, whose conditional covariance given dw is matched exactly. Mean-square
///    error of A on a step of size h: ≤ √(5k)·h / (√12·π·p) (max over entries). Choosing
///    p = ⌈√(5k) / (√12·π·√h)⌉ makes this ≤ h^{3/2}, the local error Milstein's strong order 1 can absorb.
///    Cost: 2kp + k(k−1)/2 normals and O(k²p) flops per step, i.e. O(k^{5/2}·h^{-1/2}).
///  - levy_area_method::fourier: the truncated series without tail correction (Milstein 1994); error
///    ≈ √3·h / (√2·π·√p), so p = ⌈3 / (2π²h)⌉ terms for the same accuracy: O(k²/h) per step. Kept as a
///    baseline; Wiktorsson is cheaper by a factor ~√(1/(k h)) for the step sizes used here.
/// Why Wiktorsson: it is the classical method with a proven O(h^{3/2}) error at O(h^{-1/2}) terms, needs
/// no precomputed tables, and uses a fixed number of normals per step, so counter-based streams
/// address them directly (domain levy_area, keyed by step and bridge node).
#include <cstdint>

#include "ncsde/concepts.hpp"
#include "ncsde/noise_increment.hpp"
#include "ncsde/random.hpp"

namespace ncsde {

enum class levy_area_method { wiktorsson, fourier };

/// Number of series terms p that keeps the area's mean-square error at most h^{3/2} (see above).
int levy_area_terms(int k, double h, levy_area_method method);

/// Series terms for the 2^depth leaves of a Chen-consistent area tree of a step of size h
/// (stream_brownian's area_depth): the fewest with which the leaves' mean-square errors, summed over
/// the step, stay within the bound levy_area_terms(k, h) gives the step itself. Wiktorsson's error
/// of a leaf is proportional to h_leaf/p, Fourier's to h_leaf/√p, so this is levy_area_terms(k, h)
/// times 2^(−depth/2), resp. 2^(−depth): the terms of a step of size 2^depth·h. A piece of depth d then carries an
/// area error at most 2^(−d/2) times the step's (the sum over its 2^(depth−d) leaves).
int levy_area_leaf_terms(int k, double h, int depth, levy_area_method method);

/// Reusable generator (its workspaces make a step allocation-free after the first).
class iterated_integrals {
 public:
  explicit iterated_integrals(levy_area_method method = levy_area_method::wiktorsson)
      : m_method(method) {}

  levy_area_method method() const { return m_method; }

  /// Sets inc.iterated (and has_iterated) from inc.dw and inc.dt, with the series' normals taken from
  /// `stream` at (levy_area, step, node). terms = 0 chooses levy_area_terms(k, dt, method).
  void generate(noise_increment& inc, const random_stream& stream, std::uint64_t step,
                std::uint64_t node, int terms = 0);

  /// As generate(), with the normals supplied (size normals_needed(k, p)): for tests and custom sources.
  void generate_from(noise_increment& inc, const Eigen::Ref<const vector>& normals, int terms);

  /// Normals one generate() consumes for dimension k and p terms.
  static std::ptrdiff_t normals_needed(int k, int terms, levy_area_method method);

 private:
  levy_area_method m_method;
  vector m_normals, m_w, m_gw;
  matrix m_x, m_y, m_a;
};

}  // namespace ncsde
