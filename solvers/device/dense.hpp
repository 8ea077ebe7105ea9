#pragma once
/// The dense arithmetic of a step on one m×m matrix in the form a device thread runs
/// (ncsde/host_device.hpp): the products and the Cholesky factorisation of
/// ncsde/dense_kernels.hpp, one entry at a time. Each entry's sum runs over the same index, from
/// the same start (+0 for a product, V_ij for the factorisation), in the same increasing order,
/// through the same correctly rounded operations as detail::matrix_product,
/// detail::matrix_product_transposed and detail::matrix_cholesky (and so as the lanes'
/// lane_product, lane_product_transposed and lane_cholesky): a path's numbers are the CPU's bit for
/// bit when both sides are compiled without contraction (host_device.hpp).
///
/// Matrices are column-major with leading dimension m: entry (a, b) at a + b·m. Outputs must not
/// overlap the inputs. Sizes are not validated.
#include "ncsde/host_device.hpp"

namespace ncsde::device {

/// out = L X: out(a, d) = Σ_c L(a, c) X(c, d), c increasing from 0, the sum starting from +0; with
/// `lower` (L lower triangular) only c ≤ a. Skipping the zero terms of a lower triangular L leaves
/// every sum as it is while X is finite: a sum from +0 is never −0, so adding ±0 changes nothing.
NCSDE_HOST_DEVICE inline void product(const double* l, const double* x, int m, bool lower,
                                      double* out) {
  for (int d = 0; d < m; ++d)
    for (int a = 0; a < m; ++a) {
      const int c_end = lower ? a + 1 : m;
      double s = 0.0;
      for (int c = 0; c < c_end; ++c) s = s + l[a + c * m] * x[c + d * m];
      out[a + d * m] = s;
    }
}

/// out = X Lᵀ: out(a, b) = Σ_d X(a, d) L(b, d), d increasing from 0, the sum starting from +0; with
/// `lower` only d ≤ b.
NCSDE_HOST_DEVICE inline void product_transposed(const double* x, const double* l, int m,
                                                 bool lower, double* out) {
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a) {
      const int d_end = lower ? b + 1 : m;
      double s = 0.0;
      for (int d = 0; d < d_end; ++d) s = s + x[a + d * m] * l[b + d * m];
      out[a + b * m] = s;
    }
}

/// The Cholesky factor L (lower, upper triangle 0, L Lᵀ = V) by the left-looking column algorithm
/// of detail::small_cholesky (psd.hpp), reading V's lower triangle:
///   L_jj = √(V_jj − Σ_{k<j} L_jk²),  L_ij = (V_ij − Σ_{k<j} L_ik L_jk)/L_jj  (i > j),
/// each difference starting from V's entry and subtracting the products in increasing k. Returns
/// false, with L unspecified, as soon as a pivot is not > 0 (or is NaN).
NCSDE_HOST_DEVICE inline bool cholesky(const double* v, int m, double* l) {
  for (int k = 0; k < m * m; ++k) l[k] = 0.0;
  for (int j = 0; j < m; ++j) {
    double d = v[j + j * m];
    for (int k = 0; k < j; ++k) d = d - l[j + k * m] * l[j + k * m];
    // !(d > 0), not d <= 0: the negated form also rejects NaN.
    if (!(d > 0.0)) return false;
    const double ljj = sqrt_rn(d);
    l[j + j * m] = ljj;
    for (int i = j + 1; i < m; ++i) {
      double s = v[i + j * m];
      for (int k = 0; k < j; ++k) s = s - l[i + k * m] * l[j + k * m];
      l[i + j * m] = s / ljj;
    }
  }
  return true;
}

}  // namespace ncsde::device
