#pragma once
/// Wrappers of the built-in covariance SDE that hide parts of its interface from integrate().
#include "ncsde/concepts.hpp"
#include "ncsde/models/shaped.hpp"

namespace support {

/// The covariance SDE through its dynamic-size coefficients only (a user SDE without fixed-size
/// overloads): integrate() steps it on ncsde::matrix whatever m.
struct dynamic_only {
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  ncsde::models::covariance_sde sde;
  int noise_dimension(int m) const { return sde.noise_dimension(m); }
  void drift(const ncsde::matrix& v, ncsde::matrix& out, double t) const { sde.drift(v, out, t); }
  void diffusion(const ncsde::matrix& v, const ncsde::vector& xi, ncsde::matrix& out,
                 double t) const {
    sde.diffusion(v, xi, out, t);
  }
};
static_assert(!ncsde::Sde<dynamic_only, ncsde::square_matrix<3>>);

}  // namespace support
