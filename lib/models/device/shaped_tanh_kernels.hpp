#pragma once
/// The shaped smooth-activation MLP's covariance SDE (models/shaped_tanh.hpp,
/// shaped_activation_sde) on one path in the form a device thread runs
/// (ncsde/host_device.hpp), on raw column-major m×m arrays (entry (a, b) at a + b·m):
///   b^{ab} = q (V^{aa}V^{bb} + 2(V^{ab})²) + r V^{ab}(V^{aa} + V^{bb}),   G(V) ξ = N_lin(L, G).
/// The same IEEE-754 operations in the same order as lib/models/shaped_tanh.cpp (correctly rounded
/// add, mul, div and sqrt only), so the same bits on the host and on a device.
#include "shaped_kernels.hpp"

namespace ncsde::models::device {

/// shaped_activation_sde as plain numbers; models::device_model_of (shaped_device.hpp) fills it.
struct shaped_activation_device_model {
  double q = 0.0;  ///< σ''(0)²/(4a²), the coefficient of V^{aa}V^{bb} + 2(V^{ab})²
  double r = 0.0;  ///< σ'''(0)/(2a²), the coefficient of V^{ab}(V^{aa} + V^{bb})

  /// k = m²: the entries of G, column-major.
  NCSDE_HOST_DEVICE int noise_dimension(int m) const { return m * m; }

  /// Doubles of workspace the diffusion needs (the drift needs none).
  NCSDE_HOST_DEVICE int workspace_doubles(int m) const { return noise_lin_workspace_doubles(m); }

  /// out = b(V), computed on the upper triangle and mirrored (exactly symmetric); ws is not used
  /// (the drift takes one as every device model's does).
  NCSDE_HOST_DEVICE void drift(const double* v, int m, double* out, double* /*ws*/) const {
    for (int a = 0; a < m; ++a)
      for (int b = a; b < m; ++b) {
        const double vab = v[a + b * m];
        const double vaa = v[a + a * m], vbb = v[b + b * m];
        const double value = q * (vaa * vbb + 2.0 * vab * vab) + r * vab * (vaa + vbb);
        out[a + b * m] = value;
        out[b + a * m] = value;
      }
  }

  /// out = N_lin(L, G) = (L G Lᵀ + (L G Lᵀ)ᵀ)/√2 with l the Cholesky factor of V by
  /// ncsde::device::cholesky and G the m² entries of xi. The CPU multiplies by the full L (its
  /// factor may be an eigen-factor); with a lower triangular L the terms it adds beyond the
  /// triangle are ±0 while ξ is finite, and a sum from +0 is never −0, so skipping them gives the
  /// same bits. ws: workspace_doubles(m).
  NCSDE_HOST_DEVICE void diffusion(const double* /*v*/, const double* l, const double* xi, int m,
                                   double* out, double* ws) const {
    noise_lin(l, true, xi, m, out, ws);
  }
};

}  // namespace ncsde::models::device
