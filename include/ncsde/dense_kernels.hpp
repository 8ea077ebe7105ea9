#pragma once
/// The dense arithmetic of a step on one m×m matrix: the products and the Cholesky factorisation
/// that the models' coefficients and the positive-definiteness check run per path. They are the
/// per-path form of the lane-group arithmetic (lanes.hpp): each entry's sum runs over the same
/// index, in the same increasing order, through the same correctly rounded operations (no fused
/// multiply-add) as the same entry of a lane of lane_product, lane_product_transposed or
/// lane_cholesky, so a path's numbers are its lane's numbers bit for bit. A vector holds
/// consecutive rows of a column; the code is compiled for every instruction set Google Highway
/// targets and the widest the CPU runs is chosen at run time (detail::lane_target, lanes.hpp), with
/// the same bits on every one.
///
/// Matrices are column-major with leading dimension m (an Eigen matrix's data()); outputs must not
/// overlap the inputs. Sizes are not validated (hot paths).

namespace ncsde::detail {

/// out = L X: out(a, d) = Σ_c L(a, c) X(c, d), c increasing from 0; with `lower` (L lower
/// triangular) only c ≤ a.
void matrix_product(const double* l, const double* x, int m, bool lower, double* out);

/// out = X Lᵀ: out(a, b) = Σ_d X(a, d) L(b, d), d increasing from 0; with `lower` only d ≤ b.
void matrix_product_transposed(const double* x, const double* l, int m, bool lower, double* out);

/// The Cholesky factor L (lower, upper triangle 0, L Lᵀ = V) by the left-looking column algorithm
/// of small_cholesky (psd.hpp), reading V's lower triangle: L_jj = √(V_jj − Σ_{k<j} L_jk²),
/// L_ij = (V_ij − Σ_{k<j} L_ik L_jk)/L_jj. Returns false, with L unspecified, when a pivot is not
/// > 0 (or is NaN).
bool matrix_cholesky(const double* v, int m, double* l);

}  // namespace ncsde::detail
