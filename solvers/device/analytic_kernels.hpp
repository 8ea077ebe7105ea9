#pragma once
/// The device forms of the analytic test problems (ncsde/analytic.hpp) whose parameters are plain
/// scalars: gbm, linear_covariance and wishart, on one path in the form a device thread runs
/// (ncsde/host_device.hpp), on raw column-major m×m arrays (entry (a, b) at a + b·m) with a
/// caller-provided workspace. Each drift and diffusion performs the IEEE-754 operations of the
/// problem's per-path drift and diffusion (solvers/analytic.cpp) in the same order, entry by
/// entry as Eigen evaluates them, with the products of dense.hpp where the CPU calls
/// detail::matrix_product and detail::matrix_product_transposed; they use only correctly rounded
/// +, −, ×, ÷ and √, so a path is the CPU path bit for bit on the host and on a device alike.
/// tests/solvers/device_analytic_test.cpp checks that.
///
/// The noise maps take the lower Cholesky factor L of V (cholesky in dense.hpp), which is
/// detail::gram_factor's factor of a positive-definite V bit for bit; a V without one (on the
/// boundary of the cone or off it) takes gram_factor's symmetric square root, which has no device
/// form: the device engine hands such a path back to the CPU before the step.
///
/// hadamard_linear and lifted_linear have no device form: their coefficients are m×m matrices
/// (A and the B_j), which a device thread would have to read from device memory that the SDE
/// object does not own.
///
/// Outputs must not overlap the inputs or the workspace. Sizes are not validated.
#include "dense.hpp"

namespace ncsde::device {

/// √2: the double nearest to it, std::numbers::sqrt2 (linear_covariance's W = (Ξ + Ξᵀ)/√2).
inline constexpr double analytic_sqrt2 = 1.414213562373095048801688724209698079;

/// analytic::gbm as plain numbers: b(V) = μ V, G(V) ξ = σ ξ₁ V (k = 1).
struct gbm_device_model {
  double mu = 0.5;     ///< μ
  double sigma = 0.5;  ///< σ

  NCSDE_HOST_DEVICE int noise_dimension(int) const { return 1; }
  NCSDE_HOST_DEVICE int workspace_doubles(int) const { return 0; }

  /// out = μ V, entry by entry (gbm::drift: `mu * v`).
  NCSDE_HOST_DEVICE void drift(const double* v, int m, double* out, double*) const {
    const int mm = m * m;
    for (int c = 0; c < mm; ++c) out[c] = mu * v[c];
  }

  /// out = (σ ξ₁) V: the scalar σ ξ₁ first, then each entry (gbm::diffusion). L is not read.
  NCSDE_HOST_DEVICE void diffusion(const double* v, const double*, const double* xi, int m,
                                   double* out, double*) const {
    const int mm = m * m;
    const double s = sigma * xi[0];
    for (int c = 0; c < mm; ++c) out[c] = s * v[c];
  }
};

/// analytic::linear_covariance as plain numbers: b(V) = 0, G(V) ξ = L W Lᵀ with W = (Ξ + Ξᵀ)/√2,
/// Ξ the m×m matrix holding ξ column-major (k = m²).
struct linear_covariance_device_model {
  NCSDE_HOST_DEVICE int noise_dimension(int m) const { return m * m; }
  /// W and T = L W.
  NCSDE_HOST_DEVICE int workspace_doubles(int m) const { return 2 * m * m; }

  /// out = +0 (linear_covariance::drift: setZero).
  NCSDE_HOST_DEVICE void drift(const double*, int m, double* out, double*) const {
    const int mm = m * m;
    for (int c = 0; c < mm; ++c) out[c] = 0.0;
  }

  /// out = (L W) Lᵀ as linear_covariance::diffusion forms it: W^{ab} = (Ξ^{ab} + Ξ^{ba})/√2, then
  /// T = L W (product, L lower triangular) and out = T Lᵀ (product_transposed). V is not read.
  /// ws: workspace_doubles(m).
  NCSDE_HOST_DEVICE void diffusion(const double*, const double* l, const double* xi, int m,
                                   double* out, double* ws) const {
    double* w = ws;
    double* t = ws + m * m;
    for (int b = 0; b < m; ++b)
      for (int a = 0; a < m; ++a) w[a + b * m] = (xi[a + b * m] + xi[b + a * m]) / analytic_sqrt2;
    product(l, w, m, true, t);
    product_transposed(t, l, m, true, out);
  }
};

/// analytic::wishart as plain numbers: b(V) = p·I, G(V) ξ = L Ξ + Ξᵀ Lᵀ, Ξ the m×m matrix holding
/// ξ column-major (k = m²).
struct wishart_device_model {
  double p = 1.0;  ///< the degrees of freedom p

  NCSDE_HOST_DEVICE int noise_dimension(int m) const { return m * m; }
  /// T = L Ξ.
  NCSDE_HOST_DEVICE int workspace_doubles(int m) const { return m * m; }

  /// out = p·I entry by entry (wishart::drift: `p * Identity`, p × 1 on the diagonal and p × 0
  /// off it).
  NCSDE_HOST_DEVICE void drift(const double*, int m, double* out, double*) const {
    for (int b = 0; b < m; ++b)
      for (int a = 0; a < m; ++a) out[a + b * m] = p * (a == b ? 1.0 : 0.0);
  }

  /// out = T + Tᵀ with T = L Ξ (product, L lower triangular), as wishart::diffusion forms it:
  /// out^{ab} = T^{ab} + T^{ba}. V is not read. ws: workspace_doubles(m).
  NCSDE_HOST_DEVICE void diffusion(const double*, const double* l, const double* xi, int m,
                                   double* out, double* ws) const {
    double* t = ws;
    product(l, xi, m, true, t);
    for (int b = 0; b < m; ++b)
      for (int a = 0; a < m; ++a) out[a + b * m] = t[a + b * m] + t[b + a * m];
  }
};

}  // namespace ncsde::device
