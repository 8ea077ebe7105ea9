#pragma once
/// The rules that decide a trial step's fate from its numbers, in the one form that the CPU engine
/// (integrate.hpp's settle, the batched engine) and the device engine (device.hpp) both run: the
/// symmetrisation that measures what it removed, the blow-up rule and the round-off bound of an
/// asymmetry. Plain functions on plain numbers and arrays (host_device.hpp), so that a device path
/// ends, fails and is handed back by the same rule as a CPU path.
#include "ncsde/host_device.hpp"

namespace ncsde::step_rules {

/// The trial has blown up: not finite, or max |X| not within the threshold (the negated form also
/// takes a NaN size).
NCSDE_KERNEL_INLINE bool blows_up(bool finite, double size, double threshold) {
  return !finite || !(size <= threshold);
}

/// The round-off a symmetrisation may remove from a trial of max |X| = size: symmetry_tolerance
/// (symmetric.hpp) relative to max(1, size).
NCSDE_KERNEL_INLINE double asymmetry_tolerance(double size, double symmetry_tolerance) {
  return symmetry_tolerance * (1.0 < size ? size : 1.0);  // std::max(1.0, size), NaN → 1
}

/// The asymmetry a symmetrisation removed is more than round-off.
NCSDE_KERNEL_INLINE bool beyond_round_off(double asymmetry, double size,
                                          double symmetry_tolerance) {
  return asymmetry > asymmetry_tolerance(size, symmetry_tolerance);
}

/// The stop level's rule (integrate_options::stop_level): some diagonal entry of the m×m state v
/// (column-major) exceeds `level`, i.e. max_a V^{aa} > level on a finite state.
NCSDE_KERNEL_INLINE bool passes_stop_level(const double* v, int m, double level) {
  for (int a = 0; a < m; ++a)
    if (v[a + a * m] > level) return true;
  return false;
}

/// Symmetrises the m×m matrix stored column-major at v (entry (a, b) at a + b·m) in place, each
/// off-diagonal pair replaced by its mean, and returns the largest |v(a, b) − v(b, a)| before (NaN
/// when an off-diagonal pair is not finite). The diagonal becomes ½(d + d), as symmetrize() does
/// (d + d may overflow to inf).
NCSDE_KERNEL_INLINE double symmetrize_measured(double* v, int m) {
  double worst = 0.0;
  for (int b = 0; b < m; ++b) {
    double& d = v[b + b * m];
    d = 0.5 * (d + d);
    for (int a = b + 1; a < m; ++a) {
      double& x = v[a + b * m];
      double& y = v[b + a * m];
      const double gap = device::abs_value(x - y);
      if (!(gap <= worst)) worst = gap;  // keeps a NaN
      const double mean = 0.5 * (x + y);
      x = mean;
      y = mean;
    }
  }
  return worst;
}

}  // namespace ncsde::step_rules
