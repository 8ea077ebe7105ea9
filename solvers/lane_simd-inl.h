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

/// out = L X (lanes.hpp lane_product): out(a, d) = Σ_c L(a, c) X(c, d), c from 0 (to a when
/// `lower`). M: m at compile time, or Eigen::Dynamic.
template <int M, class L, class X>
HWY_INLINE void product(const L& l, const X& x, int m_in, bool lower, const lanes_out& o) {
  const int m = M == Eigen::Dynamic ? m_in : M;
  for (int d = 0; d < m; ++d)
    for (int a = 0; a < m; ++a) {
      const int c_end = lower ? a + 1 : m;
      V s = hn::Zero(D());
      for (int c = 0; c < c_end; ++c) s = hn::Add(s, hn::Mul(l(at(a, c, m)), x(at(c, d, m))));
      o.set(at(a, d, m), s);
    }
}

/// out = X Lᵀ (lane_product_transposed): out(a, b) = Σ_d X(a, d) L(b, d), d from 0 (to b when
/// `lower`).
template <int M, class X, class L>
HWY_INLINE void product_transposed(const X& x, const L& l, int m_in, bool lower,
                                   const lanes_out& o) {
  const int m = M == Eigen::Dynamic ? m_in : M;
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a) {
      const int d_end = lower ? b + 1 : m;
      V s = hn::Zero(D());
      for (int d = 0; d < d_end; ++d) s = hn::Add(s, hn::Mul(x(at(a, d, m)), l(at(b, d, m))));
      o.set(at(a, b, m), s);
    }
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

}  // namespace lane_simd
}  // namespace HWY_NAMESPACE
}  // namespace ncsde
HWY_AFTER_NAMESPACE();

#endif  // the per-target guard
