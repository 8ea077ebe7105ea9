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
#include <Eigen/Core>

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

/// Whether every one of the n entries of x is finite (Eigen's allFinite, vectorised).
bool all_finite(const double* x, Eigen::Index n);

/// x.allFinite() for a plain Eigen matrix or vector (contiguous storage): the vectorised kernel
/// from 64 entries on, Eigen's inline test below.
template <class X>
bool all_finite(const X& x) {
  if constexpr (X::SizeAtCompileTime != Eigen::Dynamic && X::SizeAtCompileTime < 64)
    return x.allFinite();
  else
    return x.size() < 64 ? x.allFinite() : all_finite(x.data(), x.size());
}

/// Whether a's columns are what the kernels above read: contiguous, leading dimension a.rows().
template <class A>
bool dense_columns(const A& a) {
  return a.innerStride() == 1 && a.outerStride() == a.rows();
}

/// out = L X (matrix_product) on m×m Eigen matrices, maps and refs; an operand that is not
/// contiguous (a Ref to a block of a larger matrix) is copied first.
template <class Out, class Lm, class Xm>
void matrix_product(Out& out, const Lm& l, const Xm& x, bool lower) {
  if (!dense_columns(l) || !dense_columns(x)) {
    const Out lc = l, xc = x;
    matrix_product(out, lc, xc, lower);
    return;
  }
  const int m = static_cast<int>(l.rows());
  out.resize(m, m);
  matrix_product(l.data(), x.data(), m, lower, out.data());
}

/// out = X Lᵀ (matrix_product_transposed) on m×m Eigen matrices, as matrix_product above.
template <class Out, class Xm, class Lm>
void matrix_product_transposed(Out& out, const Xm& x, const Lm& l, bool lower) {
  if (!dense_columns(l) || !dense_columns(x)) {
    const Out lc = l, xc = x;
    matrix_product_transposed(out, xc, lc, lower);
    return;
  }
  const int m = static_cast<int>(l.rows());
  out.resize(m, m);
  matrix_product_transposed(x.data(), l.data(), m, lower, out.data());
}

}  // namespace ncsde::detail
