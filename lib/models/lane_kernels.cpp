#include "ncsde/models/lane_kernels.hpp"

#include <cmath>
#include <numbers>

#include "ncsde/concepts.hpp"
#include "ncsde/error.hpp"

namespace ncsde::models {

namespace {

/// Column of entry (a, b) of an m×m lane state.
inline Eigen::Index at(int a, int b, int m) { return a + static_cast<Eigen::Index>(b) * m; }

void assert_lanes(const lane_block& v, int m, const char* message) {
  NCSDE_ASSERT(m >= 1 && v.cols() == static_cast<Eigen::Index>(m) * m, message);
}

/// out = Y + Yᵀ lane by lane.
template <int M>
void symmetric_sum(const lane_block& y, int m_in, lane_block& out) {
  const int m = M == Eigen::Dynamic ? m_in : M;
  out.resize(batch_width, y.cols());
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a) out.col(at(a, b, m)) = y.col(at(a, b, m)) + y.col(at(b, a, m));
}

/// zeta = L Z Lᵀ lane by lane (t: the workspace of L Z).
template <int M>
void lane_congruence(const lane_block& l, bool lower, const Eigen::Ref<const lane_block>& z, int m,
                     lane_block& t, lane_block& zeta) {
  lane_product<M>(l, z, m, lower, t);
  lane_product_transposed<M>(t, l, m, lower, zeta);
}

template <int M>
void b_relu_lanes_impl(const lane_block& v, int m_in, double c_plus, double c_minus,
                       lane_block& out) {
  const int m = M == Eigen::Dynamic ? m_in : M;
  assert_lanes(v, m, "b_relu_lanes: V must be m×m per lane");
  NCSDE_ASSERT(&out != &v, "b_relu_lanes: out must not be V");
  const double scale = (c_plus - c_minus) * (c_plus - c_minus) / (2.0 * std::numbers::pi);
  out.resize(batch_width, v.cols());
  // The diagonal columns of `out` hold √V^{aa} until the end, as in b_relu.
  for (int a = 0; a < m; ++a) out.col(at(a, a, m)) = v.col(at(a, a, m)).max(0.0).sqrt();
  lane_column norm, rho, arccos;
  for (int a = 0; a < m; ++a)
    for (int b = a + 1; b < m; ++b) {
      norm = out.col(at(a, a, m)) * out.col(at(b, b, m));
      // std::clamp to [−1, 1]; where norm = 0 the quotient is not finite and the lane takes 0.
      rho = (v.col(at(a, b, m)) / norm).max(-1.0).min(1.0);
      for (int l = 0; l < batch_width; ++l) arccos(l) = std::acos(rho(l));
      const lane_column value =
          (norm > 0.0).select(scale * ((1.0 - rho * rho).sqrt() - rho * arccos) * norm, 0.0);
      out.col(at(a, b, m)) = value;
      out.col(at(b, a, m)) = value;
    }
  for (int a = 0; a < m; ++a) out.col(at(a, a, m)).setZero();
}

template <int M>
void b_att_lanes_impl(const lane_block& v, int m_in, double tau0, lane_block& out,
                      lane_coefficient_workspace& ws) {
  const int m = M == Eigen::Dynamic ? m_in : M;
  assert_lanes(v, m, "b_att_lanes: V must be m×m per lane");
  const double md = static_cast<double>(m);
  // Columns of ws.c0: the row means v̄; ws.c1: diag(PVP); ws.c2: V u.
  lane_block& row_mean = ws.c0;
  lane_block& pvp_diag = ws.c1;
  lane_block& vu = ws.c2;
  row_mean.resize(batch_width, m);
  pvp_diag.resize(batch_width, m);
  vu.resize(batch_width, m);
  lane_column s, grand_mean, tr_pvp, tr_pvpv;
  for (int a = 0; a < m; ++a) {
    s.setZero();
    for (int b = 0; b < m; ++b) s += v.col(at(a, b, m));
    row_mean.col(a) = s / md;
  }
  grand_mean.setZero();
  for (int a = 0; a < m; ++a) grand_mean += row_mean.col(a);
  grand_mean /= md;
  tr_pvp.setZero();
  for (int a = 0; a < m; ++a) {
    pvp_diag.col(a) = v.col(at(a, a, m)) - 2.0 * row_mean.col(a) + grand_mean;
    tr_pvp += pvp_diag.col(a);
  }
  tr_pvpv.setZero();
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a)
      tr_pvpv += (v.col(at(a, b, m)) - row_mean.col(a) - row_mean.col(b) + grand_mean) *
                 v.col(at(a, b, m));
  // u in the columns of pvp_diag: u = ½ (diag(PVP) − tr(PVP)/m).
  for (int a = 0; a < m; ++a) pvp_diag.col(a) = 0.5 * (pvp_diag.col(a) - tr_pvp / md);
  for (int a = 0; a < m; ++a) {
    s.setZero();
    for (int c = 0; c < m; ++c) s += v.col(at(a, c, m)) * pvp_diag.col(c);
    vu.col(a) = s;
  }
  const double inv_tau2 = 1.0 / (tau0 * tau0);
  out.resize(batch_width, v.cols());
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a)
      out.col(at(a, b, m)) =
          inv_tau2 * ((v.col(at(a, a, m)) * vu.col(b) + vu.col(a) * v.col(at(b, b, m))) / md +
                      v.col(at(a, b, m)) * tr_pvpv / (md * md));
}

template <int M>
void b_causal_lanes_impl(const lane_block& v, int m_in, double tau0, lane_block& out,
                         lane_coefficient_workspace& ws) {
  const int m = M == Eigen::Dynamic ? m_in : M;
  assert_lanes(v, m, "b_causal_lanes: V must be m×m per lane");
  // The prefix sums of b_causal: R(i, b) = Σ_{j≤b} V^{ij}, Π, Q2 over the leading blocks,
  // S2(a, b) = Σ_{i≤a} R(i, b)²; U's row a is u_aᵀ; E = D_κ⁻¹ Diag(V) U V.
  lane_block& r = ws.m0;
  lane_block& pi = ws.m1;
  lane_block& q2 = ws.m2;
  lane_block& s2 = ws.m3;
  lane_block& u = ws.m4;
  lane_block& e = ws.m5;
  const Eigen::Index mm = v.cols();
  r.resize(batch_width, mm);
  pi.resize(batch_width, mm);
  q2.resize(batch_width, mm);
  s2.resize(batch_width, mm);
  lane_column acc, acc_pi, acc_s2, tr_a;
  for (int i = 0; i < m; ++i) {
    acc.setZero();
    for (int b = 0; b < m; ++b) r.col(at(i, b, m)) = acc += v.col(at(i, b, m));
  }
  for (int b = 0; b < m; ++b) {
    acc_pi.setZero();
    acc_s2.setZero();
    for (int a = 0; a < m; ++a) {
      acc_pi += r.col(at(a, b, m));
      acc_s2 += r.col(at(a, b, m)) * r.col(at(a, b, m));
      pi.col(at(a, b, m)) = acc_pi;
      s2.col(at(a, b, m)) = acc_s2;
    }
  }
  for (int a = 0; a < m; ++a) {
    acc.setZero();
    for (int b = 0; b < m; ++b) {
      acc += v.col(at(a, b, m)) * v.col(at(a, b, m));
      if (a > 0)
        q2.col(at(a, b, m)) = acc + q2.col(at(a - 1, b, m));
      else
        q2.col(at(a, b, m)) = acc + 0.0;
    }
  }
  // u_a = 0 exactly for k ≤ 2 (all diagonal entries of P_a V P_a are equal).
  u.setZero(batch_width, mm);
  tr_a.setZero();
  for (int a = 0; a < m; ++a) {
    tr_a += v.col(at(a, a, m));
    if (a < 2) continue;
    const double k = a + 1.0;
    for (int nu = 0; nu <= a; ++nu)
      u.col(at(a, nu, m)) = 0.5 * v.col(at(nu, nu, m)) - r.col(at(nu, a, m)) / k -
                            tr_a / (2.0 * k) + pi.col(at(a, a, m)) / (k * k);
  }
  // U is lower triangular: E = U V sums ν ≤ a.
  lane_product<M>(u, v, m, true, e);
  for (int a = 0; a < m; ++a) {
    const lane_column weight = v.col(at(a, a, m)) / (a + 1.0);
    for (int b = 0; b < m; ++b) e.col(at(a, b, m)) *= weight;
  }
  const double inv_tau2 = 1.0 / (tau0 * tau0);
  out.resize(batch_width, mm);
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a) {
      const double ka = a + 1.0, kb = b + 1.0;
      if (a == 0 || b == 0) {
        // P_0 = 0: T vanishes on row and column 0 identically.
        out.col(at(a, b, m)) =
            inv_tau2 * (e.col(at(a, b, m)) + e.col(at(b, a, m)) + v.col(at(a, b, m)) * 0.0);
        continue;
      }
      const lane_column t = q2.col(at(a, b, m)) - s2.col(at(a, b, m)) / kb -
                            s2.col(at(b, a, m)) / ka +
                            pi.col(at(a, b, m)) * pi.col(at(a, b, m)) / (ka * kb);
      out.col(at(a, b, m)) =
          inv_tau2 * (e.col(at(a, b, m)) + e.col(at(b, a, m)) + v.col(at(a, b, m)) * t / (ka * kb));
    }
}

template <int M>
void noise_lin_lanes_impl(const lane_block& l, bool lower, const Eigen::Ref<const lane_block>& g,
                          int m_in, lane_block& out, lane_coefficient_workspace& ws) {
  const int m = M == Eigen::Dynamic ? m_in : M;
  assert_lanes(l, m, "noise_lin_lanes: L must be m×m per lane");
  NCSDE_ASSERT(g.cols() == l.cols(), "noise_lin_lanes: G must be m×m per lane");
  lane_block& mm = ws.m1;
  lane_congruence<M>(l, lower, g, m, ws.m0, mm);
  out.resize(batch_width, l.cols());
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a)
      out.col(at(a, b, m)) = (mm.col(at(a, b, m)) + mm.col(at(b, a, m))) / std::numbers::sqrt2;
}

template <int M>
void noise_att_lanes_impl(const lane_block& l, bool lower, const lane_block& v,
                          const Eigen::Ref<const lane_block>& z, int m_in, double tau0,
                          lane_block& out, lane_coefficient_workspace& ws) {
  const int m = M == Eigen::Dynamic ? m_in : M;
  assert_lanes(l, m, "noise_att_lanes: L must be m×m per lane");
  NCSDE_ASSERT(z.cols() == l.cols() && v.cols() == l.cols(),
               "noise_att_lanes: L, V and Z must be m×m per lane");
  const double md = static_cast<double>(m);
  lane_block& zeta = ws.m1;
  lane_block& pv = ws.m2;
  lane_block& y = ws.m3;
  lane_congruence<M>(l, lower, z, m, ws.m0, zeta);
  // P V = V − 1 v̄ᵀ, v̄ the column means.
  pv.resize(batch_width, v.cols());
  lane_column mean;
  for (int b = 0; b < m; ++b) {
    mean.setZero();
    for (int a = 0; a < m; ++a) mean += v.col(at(a, b, m));
    mean /= md;
    for (int a = 0; a < m; ++a) pv.col(at(a, b, m)) = v.col(at(a, b, m)) - mean;
  }
  lane_product<M>(zeta, pv, m, false, y);
  y /= md * tau0;
  symmetric_sum<M>(y, m, out);
}

template <int M>
void noise_causal_lanes_impl(const lane_block& l, bool lower, const lane_block& v,
                             const Eigen::Ref<const lane_block>& z, int m_in, double tau0,
                             lane_block& out, lane_coefficient_workspace& ws) {
  const int m = M == Eigen::Dynamic ? m_in : M;
  assert_lanes(l, m, "noise_causal_lanes: L must be m×m per lane");
  NCSDE_ASSERT(z.cols() == l.cols() && v.cols() == l.cols(),
               "noise_causal_lanes: L, V and Z must be m×m per lane");
  lane_block& n = ws.m1;
  lane_block& y = ws.m2;
  lane_congruence<M>(l, lower, z, m, ws.m0, n);
  lane_column mean;
  for (int a = 0; a < m; ++a) {
    const double k = a + 1.0;
    mean.setZero();
    for (int j = 0; j <= a; ++j) mean += n.col(at(a, j, m));
    mean /= k;
    for (int j = 0; j <= a; ++j) n.col(at(a, j, m)) = (n.col(at(a, j, m)) - mean) / k;
    for (int j = a + 1; j < m; ++j) n.col(at(a, j, m)).setZero();
  }
  // N is lower triangular: Y = N V sums j ≤ a.
  lane_product<M>(n, v, m, true, y);
  y /= tau0;
  symmetric_sum<M>(y, m, out);
}

/// f.template operator()<M>() for m = M in fixed_sizes, f.template operator()<Eigen::Dynamic>()
/// otherwise: the kernels' loops unrolled on the fixed sizes.
template <class F>
void with_lane_size(int m, F&& f) {
  switch (m) {
#define NCSDE_LANE_SIZE_CASE(M) \
  case M:                       \
    return f.template operator()<M>();
    NCSDE_FIXED_SIZES(NCSDE_LANE_SIZE_CASE)
#undef NCSDE_LANE_SIZE_CASE
    default:
      return f.template operator()<Eigen::Dynamic>();
  }
}

}  // namespace

void b_relu_lanes(const lane_block& v, int m, double c_plus, double c_minus, lane_block& out) {
  with_lane_size(m, [&]<int M>() { b_relu_lanes_impl<M>(v, m, c_plus, c_minus, out); });
}

void b_att_lanes(const lane_block& v, int m, double tau0, lane_block& out,
                 lane_coefficient_workspace& ws) {
  with_lane_size(m, [&]<int M>() { b_att_lanes_impl<M>(v, m, tau0, out, ws); });
}

void b_causal_lanes(const lane_block& v, int m, double tau0, lane_block& out,
                    lane_coefficient_workspace& ws) {
  with_lane_size(m, [&]<int M>() { b_causal_lanes_impl<M>(v, m, tau0, out, ws); });
}

void noise_lin_lanes(const lane_block& l, bool lower, const Eigen::Ref<const lane_block>& g, int m,
                     lane_block& out, lane_coefficient_workspace& ws) {
  with_lane_size(m, [&]<int M>() { noise_lin_lanes_impl<M>(l, lower, g, m, out, ws); });
}

void noise_att_lanes(const lane_block& l, bool lower, const lane_block& v,
                     const Eigen::Ref<const lane_block>& z, int m, double tau0, lane_block& out,
                     lane_coefficient_workspace& ws) {
  with_lane_size(m, [&]<int M>() { noise_att_lanes_impl<M>(l, lower, v, z, m, tau0, out, ws); });
}

void noise_causal_lanes(const lane_block& l, bool lower, const lane_block& v,
                        const Eigen::Ref<const lane_block>& z, int m, double tau0, lane_block& out,
                        lane_coefficient_workspace& ws) {
  with_lane_size(m, [&]<int M>() { noise_causal_lanes_impl<M>(l, lower, v, z, m, tau0, out, ws); });
}

}  // namespace ncsde::models
