// Lane-group linear algebra on Google Highway's vectors, once per target: the products and the
// Cholesky factorisation of the m×m states of a lane group (lanes.hpp), written over a chunk of
// lanes as wide as the target's vector. Included by the files that Highway compiles per target
// (solvers/lanes.cpp, lib/models/lane_kernels.cpp) after <hwy/foreach_target.h>; the guard below is
// Highway's per-target include guard (it toggles with HWY_TARGET_TOGGLE), so each target's pass
// sees this code once.
//
// Every lane goes through correctly rounded add, sub, mul, div and sqrt in the order of the sums
// below, and the including files are built with -ffp-contract=off: the numbers are the same bits on
// every target.
#if defined(NCSDE_SOLVERS_LANE_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NCSDE_SOLVERS_LANE_SIMD_INL_H_
#undef NCSDE_SOLVERS_LANE_SIMD_INL_H_
#else
#define NCSDE_SOLVERS_LANE_SIMD_INL_H_
#endif

#include <hwy/highway.h>
#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstddef>

HWY_BEFORE_NAMESPACE();
namespace ncsde {
namespace HWY_NAMESPACE {
namespace lane_simd {

namespace hn = hwy::HWY_NAMESPACE;
using D = hn::ScalableTag<double>;
using V = hn::Vec<D>;
/// Lanes per vector: the chunk of a lane group one instruction advances.
constexpr int chunk = static_cast<int>(hn::MaxLanes(D()));

/// Column of entry (a, b) of an m×m lane state.
HWY_INLINE Eigen::Index at(int a, int b, int m) { return a + static_cast<Eigen::Index>(b) * m; }

/// A chunk of lanes of a lane block, read-only: column k starts at p + k·stride.
struct lanes_in {
  const double* p;
  Eigen::Index stride;
  HWY_INLINE V operator()(Eigen::Index k) const { return hn::LoadU(D(), p + k * stride); }
};
/// A chunk of lanes of a lane block that is written.
struct lanes_out {
  double* p;
  Eigen::Index stride;
  HWY_INLINE V operator()(Eigen::Index k) const { return hn::LoadU(D(), p + k * stride); }
  HWY_INLINE void set(Eigen::Index k, V x) const { hn::StoreU(x, D(), p + k * stride); }
};

/// The products below compute a tile of kRows × kCols entries of the output at once: kRows·kCols
/// independent sums, enough to keep the adder busy while each waits for the one before it, and
/// the loads of a step shared by the tile's rows and columns. Each entry's sum still runs over its
/// index from 0 in increasing order, starting from +0, as the one-entry loop does (the entries the
/// tiles leave over take that loop): the tiling changes which entries are computed together,
/// never an entry's operations, so the numbers are those of the one-entry loop bit for bit.
/// AVX-512's 32 registers hold a 4 × 4 tile and its operands; 16-register targets a 4 × 2 one.
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
constexpr int kRows = 4, kCols = 4;
#else
constexpr int kRows = 4, kCols = 2;
#endif

/// out = L X (lanes.hpp lane_product): out(a, d) = Σ_c L(a, c) X(c, d), c from 0 (to a when
/// `lower`). M: m at compile time, or Eigen::Dynamic.
template <int M, class L, class X>
HWY_INLINE void product(const L& l, const X& x, int m_in, bool lower, const lanes_out& o) {
  const int m = M == Eigen::Dynamic ? m_in : M;
  auto one = [&](int a, int d) {
    const int c_end = lower ? a + 1 : m;
    V s = hn::Zero(D());
    for (int c = 0; c < c_end; ++c) s = hn::Add(s, hn::Mul(l(at(a, c, m)), x(at(c, d, m))));
    o.set(at(a, d, m), s);
  };
  int d = 0;
  for (; d + kCols <= m; d += kCols) {
    int a = 0;
    for (; a + kRows <= m; a += kRows) {
      V s[kRows][kCols];
      for (int r = 0; r < kRows; ++r)
        for (int j = 0; j < kCols; ++j) s[r][j] = hn::Zero(D());
      // Every row of the tile sums c < a + 1 at least; row a + r, under `lower`, to a + r.
      const int common = lower ? a + 1 : m;
      for (int c = 0; c < common; ++c) {
        V lc[kRows], xc[kCols];
        for (int r = 0; r < kRows; ++r) lc[r] = l(at(a + r, c, m));
        for (int j = 0; j < kCols; ++j) xc[j] = x(at(c, d + j, m));
        for (int r = 0; r < kRows; ++r)
          for (int j = 0; j < kCols; ++j) s[r][j] = hn::Add(s[r][j], hn::Mul(lc[r], xc[j]));
      }
      if (lower)
        for (int r = 1; r < kRows; ++r)
          for (int c = common; c <= a + r; ++c) {
            const V lc = l(at(a + r, c, m));
            for (int j = 0; j < kCols; ++j)
              s[r][j] = hn::Add(s[r][j], hn::Mul(lc, x(at(c, d + j, m))));
          }
      for (int r = 0; r < kRows; ++r)
        for (int j = 0; j < kCols; ++j) o.set(at(a + r, d + j, m), s[r][j]);
    }
    for (; a < m; ++a)
      for (int j = 0; j < kCols; ++j) one(a, d + j);
  }
  for (; d < m; ++d)
    for (int a = 0; a < m; ++a) one(a, d);
}

/// out = X Lᵀ (lane_product_transposed): out(a, b) = Σ_d X(a, d) L(b, d), d from 0 (to b when
/// `lower`).
template <int M, class X, class L>
HWY_INLINE void product_transposed(const X& x, const L& l, int m_in, bool lower,
                                   const lanes_out& o) {
  const int m = M == Eigen::Dynamic ? m_in : M;
  auto one = [&](int a, int b) {
    const int d_end = lower ? b + 1 : m;
    V s = hn::Zero(D());
    for (int d = 0; d < d_end; ++d) s = hn::Add(s, hn::Mul(x(at(a, d, m)), l(at(b, d, m))));
    o.set(at(a, b, m), s);
  };
  int b = 0;
  for (; b + kCols <= m; b += kCols) {
    int a = 0;
    for (; a + kRows <= m; a += kRows) {
      V s[kRows][kCols];
      for (int r = 0; r < kRows; ++r)
        for (int j = 0; j < kCols; ++j) s[r][j] = hn::Zero(D());
      // Every column of the tile sums d < b + 1 at least; column b + j, under `lower`, to b + j.
      const int common = lower ? b + 1 : m;
      for (int d = 0; d < common; ++d) {
        V xa[kRows], lb[kCols];
        for (int r = 0; r < kRows; ++r) xa[r] = x(at(a + r, d, m));
        for (int j = 0; j < kCols; ++j) lb[j] = l(at(b + j, d, m));
        for (int r = 0; r < kRows; ++r)
          for (int j = 0; j < kCols; ++j) s[r][j] = hn::Add(s[r][j], hn::Mul(xa[r], lb[j]));
      }
      if (lower)
        for (int j = 1; j < kCols; ++j)
          for (int d = common; d <= b + j; ++d) {
            const V lb = l(at(b + j, d, m));
            for (int r = 0; r < kRows; ++r)
              s[r][j] = hn::Add(s[r][j], hn::Mul(x(at(a + r, d, m)), lb));
          }
      for (int r = 0; r < kRows; ++r)
        for (int j = 0; j < kCols; ++j) o.set(at(a + r, b + j, m), s[r][j]);
    }
    for (; a < m; ++a)
      for (int j = 0; j < kCols; ++j) one(a, b + j);
  }
  for (; b < m; ++b)
    for (int a = 0; a < m; ++a) one(a, b);
}

/// The Cholesky factor of the chunk's states (lane_cholesky): the left-looking column algorithm,
/// L_jj = √(V_jj − Σ_{k<j} L_jk²), L_ij = (V_ij − Σ_{k<j} L_ik L_jk)/L_jj, the upper triangle set
/// to 0. ok(lane) gets 1 where every pivot is > 0 (not NaN), 0 elsewhere.
template <int M>
HWY_INLINE void cholesky(const lanes_in& v, int m_in, const lanes_out& l, double* ok) {
  const int m = M == Eigen::Dynamic ? m_in : M;
  for (int j = 0; j < m; ++j)
    for (int i = 0; i < j; ++i) l.set(at(i, j, m), hn::Zero(D()));
  auto good = hn::FirstN(D(), static_cast<std::size_t>(chunk));
  for (int j = 0; j < m; ++j) {
    V d = v(at(j, j, m));
    for (int k = 0; k < j; ++k) d = hn::Sub(d, hn::Mul(l(at(j, k, m)), l(at(j, k, m))));
    good = hn::And(good, hn::Gt(d, hn::Zero(D())));
    const V ljj = hn::Sqrt(d);
    l.set(at(j, j, m), ljj);
    for (int i = j + 1; i < m; ++i) {
      V s = v(at(i, j, m));
      for (int k = 0; k < j; ++k) s = hn::Sub(s, hn::Mul(l(at(i, k, m)), l(at(j, k, m))));
      l.set(at(i, j, m), hn::Div(s, ljj));
    }
  }
  hn::StoreU(hn::IfThenElseZero(good, hn::Set(D(), 1.0)), D(), ok);
}

// ---- one matrix, vectorised over its rows ---------------------------------------------------------
// The same sums on one m×m matrix (column-major, leading dimension m), the per-path form of the
// lane arithmetic above: a vector holds `chunk` consecutive rows of one column, and each entry's
// sum runs over the same index, from +0 (or from V_ij in the factorisation), in the same increasing
// order, with the same correctly rounded operations, as that entry's sum in a lane. So a path's
// product or factor is bit for bit the one its lane gets, on every target. Rows that do not fill a
// vector take the entry-by-entry loop (the same operations).

/// out(:, j) = Σ_k A(:, k) B(k, j) over k < m; with `row_lower` only k ≤ a (row a), with
/// `col_lower` only k ≤ j. A column-major m×m; B(k, j) = b[k·bk + j·bj].
template <int M>
HWY_INLINE void matrix_product(const double* a, const double* b, Eigen::Index bk, Eigen::Index bj,
                               int m_in, bool row_lower, bool col_lower, double* out) {
  const int m = M == Eigen::Dynamic ? m_in : M;
  const Eigen::Index ld = m;
  auto bkj = [&](int k, int j) { return b[k * bk + j * bj]; };
  auto end = [&](int row, int j) { return row_lower ? row + 1 : col_lower ? j + 1 : m; };
  auto one = [&](int row, int j) {
    double s = 0.0;
    const int e = end(row, j);
    for (int k = 0; k < e; ++k) s += a[row + k * ld] * bkj(k, j);
    out[row + j * ld] = s;
  };
  if constexpr (M != Eigen::Dynamic && M < chunk) {
    // A fixed size below one vector: a column's rows in a small array, which the compiler unrolls
    // and vectorises as it is (no sum is reordered). A skipped term (k > row under `row_lower`)
    // adds +0 instead, which leaves every sum as it is: a sum from +0 never becomes −0.
    for (int j = 0; j < M; ++j) {
      double s[M] = {};
      const int k_end = col_lower ? j + 1 : M;
      for (int k = 0; k < k_end; ++k) {
        const double bk = bkj(k, j);
        for (int row = 0; row < M; ++row) {
          const double p = a[row + k * M] * bk;
          s[row] += row_lower && k > row ? 0.0 : p;
        }
      }
      for (int row = 0; row < M; ++row) out[row + j * M] = s[row];
    }
    return;
  }
  constexpr int kC = 4;
  const int full_rows = m / chunk * chunk;
  // R vectors of rows from row a0, C columns from j0.
  auto tile = [&]<int R, int C>(int a0, int j0) {
    V s[R][C];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) s[r][c] = hn::Zero(D());
    // Every row and column of the tile sums k < common at least.
    const int common = row_lower ? a0 + 1 : col_lower ? j0 + 1 : m;
    for (int k = 0; k < common; ++k) {
      V ak[R];
      for (int r = 0; r < R; ++r) ak[r] = hn::LoadU(D(), a + a0 + r * chunk + k * ld);
      for (int c = 0; c < C; ++c) {
        const V bc = hn::Set(D(), bkj(k, j0 + c));
        for (int r = 0; r < R; ++r) s[r][c] = hn::Add(s[r][c], hn::Mul(ak[r], bc));
      }
    }
    if (row_lower) {
      // Row a sums k ≤ a: in the vector of rows from a_r, the rows from k − a_r on.
      const int k_end = std::min(m, a0 + R * chunk);
      for (int k = common; k < k_end; ++k)
        for (int r = 0; r < R; ++r) {
          const int skip = k - (a0 + r * chunk);
          if (skip >= chunk) continue;
          const V ak = hn::LoadU(D(), a + a0 + r * chunk + k * ld);
          const auto live = hn::Not(hn::FirstN(D(), static_cast<std::size_t>(std::max(skip, 0))));
          for (int c = 0; c < C; ++c) {
            const V bc = hn::Set(D(), bkj(k, j0 + c));
            s[r][c] = hn::IfThenElse(live, hn::Add(s[r][c], hn::Mul(ak, bc)), s[r][c]);
          }
        }
    }
    if (col_lower)
      for (int c = 1; c < C; ++c)
        for (int k = common; k <= j0 + c; ++k) {
          const V bc = hn::Set(D(), bkj(k, j0 + c));
          for (int r = 0; r < R; ++r)
            s[r][c] = hn::Add(s[r][c], hn::Mul(hn::LoadU(D(), a + a0 + r * chunk + k * ld), bc));
        }
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) hn::StoreU(s[r][c], D(), out + a0 + r * chunk + (j0 + c) * ld);
  };
  auto columns = [&]<int C>(int j0) {
    int a0 = 0;
    for (; a0 + 2 * chunk <= full_rows; a0 += 2 * chunk) tile.template operator()<2, C>(a0, j0);
    for (; a0 < full_rows; a0 += chunk) tile.template operator()<1, C>(a0, j0);
    for (int row = full_rows; row < m; ++row)
      for (int c = 0; c < C; ++c) one(row, j0 + c);
  };
  int j0 = 0;
  for (; j0 + kC <= m; j0 += kC) columns.template operator()<kC>(j0);
  for (; j0 < m; ++j0) columns.template operator()<1>(j0);
}

/// The Cholesky factor of one m×m matrix by the algorithm and in the order of `cholesky` above, the
/// rows below the pivot a vector at a time. Returns false as soon as a pivot is not > 0 (or NaN),
/// with L unspecified.
template <int M>
HWY_INLINE bool matrix_cholesky(const double* v, int m_in, double* l) {
  const int m = M == Eigen::Dynamic ? m_in : M;
  const Eigen::Index ld = m;
  for (int j = 0; j < m; ++j)
    for (int i = 0; i < j; ++i) l[i + j * ld] = 0.0;
  for (int j = 0; j < m; ++j) {
    double d = v[j + j * ld];
    for (int k = 0; k < j; ++k) d -= l[j + k * ld] * l[j + k * ld];
    if (!(d > 0.0)) return false;
    const double ljj = std::sqrt(d);
    l[j + j * ld] = ljj;
    const V pivot = hn::Set(D(), ljj);
    int i = j + 1;
    for (; i + 2 * chunk <= m; i += 2 * chunk) {
      V s0 = hn::LoadU(D(), v + i + j * ld), s1 = hn::LoadU(D(), v + i + chunk + j * ld);
      for (int k = 0; k < j; ++k) {
        const V ljk = hn::Set(D(), l[j + k * ld]);
        s0 = hn::Sub(s0, hn::Mul(hn::LoadU(D(), l + i + k * ld), ljk));
        s1 = hn::Sub(s1, hn::Mul(hn::LoadU(D(), l + i + chunk + k * ld), ljk));
      }
      hn::StoreU(hn::Div(s0, pivot), D(), l + i + j * ld);
      hn::StoreU(hn::Div(s1, pivot), D(), l + i + chunk + j * ld);
    }
    for (; i + chunk <= m; i += chunk) {
      V s = hn::LoadU(D(), v + i + j * ld);
      for (int k = 0; k < j; ++k)
        s = hn::Sub(s, hn::Mul(hn::LoadU(D(), l + i + k * ld), hn::Set(D(), l[j + k * ld])));
      hn::StoreU(hn::Div(s, pivot), D(), l + i + j * ld);
    }
    for (; i < m; ++i) {
      double s = v[i + j * ld];
      for (int k = 0; k < j; ++k) s -= l[i + k * ld] * l[j + k * ld];
      l[i + j * ld] = s / ljj;
    }
  }
  return true;
}

}  // namespace lane_simd
}  // namespace HWY_NAMESPACE
}  // namespace ncsde
HWY_AFTER_NAMESPACE();

#endif  // the per-target guard
