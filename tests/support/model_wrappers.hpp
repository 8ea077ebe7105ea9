#pragma once
/// Wrappers of an SDE that hide parts of its interface: what the library does with an SDE that gives
/// only the three members of ncsde::Sde.
#include "ncsde/concepts.hpp"
#include "ncsde/models/shaped.hpp"

namespace support {

/// `S` through its drift and noise map on ncsde::matrix only (a user SDE without fixed-size
/// overloads, a dense Σ or a batched form), on S's state space.
template <class S>
struct coefficients_only {
  static constexpr ncsde::state_space space = S::space;
  S sde;
  int noise_dimension(int m) const { return sde.noise_dimension(m); }
  void drift(const ncsde::matrix& v, ncsde::matrix& out, double t) const { sde.drift(v, out, t); }
  void diffusion(const ncsde::matrix& v, const ncsde::vector& xi, ncsde::matrix& out,
                 double t) const {
    sde.diffusion(v, xi, out, t);
  }
};

/// The covariance SDE through its dynamic-size coefficients only: integrate() steps it on
/// ncsde::matrix whatever m.
using dynamic_only = coefficients_only<ncsde::models::covariance_sde>;
static_assert(!ncsde::Sde<dynamic_only, ncsde::square_matrix<3>>);

}  // namespace support
