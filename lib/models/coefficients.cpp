#include "ncsde/models/coefficients.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "ncsde/dense_kernels.hpp"
#include "ncsde/error.hpp"
#include "ncsde/psd.hpp"
#include "ncsde/symmetric.hpp"

namespace ncsde::models {

namespace {

// The products below are the lane kernels' sums (dense_kernels.hpp), bit for bit a lane's; `lower`
// (L lower triangular) skips the upper triangle as the lanes' products do.
using ncsde::detail::matrix_product;
using ncsde::detail::matrix_product_transposed;

/// out = P V = V − 1 v̄ᵀ with v̄ the column means of V, each a sum over rows from 0.
template <int M>
void centre_rows(const square_matrix<M>& v, square_matrix<M>& out) {
  const int m = static_cast<int>(v.rows());
  const double md = static_cast<double>(m);
  out.resize(m, m);
  // Each column's sum from 0 in increasing row, four columns' sums side by side (independent
  // chains: the same sums, not latency-bound).
  int b = 0;
  for (; b + 4 <= m; b += 4) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    for (int a = 0; a < m; ++a) {
      s0 += v(a, b);
      s1 += v(a, b + 1);
      s2 += v(a, b + 2);
      s3 += v(a, b + 3);
    }
    const double means[4] = {s0 / md, s1 / md, s2 / md, s3 / md};
    for (int c = 0; c < 4; ++c)
      for (int a = 0; a < m; ++a) out(a, b + c) = v(a, b + c) - means[c];
  }
  for (; b < m; ++b) {
    double mean = 0.0;
    for (int a = 0; a < m; ++a) mean += v(a, b);
    mean /= md;
    for (int a = 0; a < m; ++a) out(a, b) = v(a, b) - mean;
  }
}

/// Φ = V P V P V = (PV)ᵀ V (PV) for symmetric V.
matrix phi_full(const matrix& v) {
  matrix pv;
  centre_rows<Eigen::Dynamic>(v, pv);
  return pv.transpose() * v * pv;
}

/// P_a V (0-indexed a): rows 0..a of V centred over those rows, the others zero.
matrix centre_prefix_rows(const matrix& v, int a) {
  const int m = static_cast<int>(v.rows());
  matrix out = matrix::Zero(m, m);
  const Eigen::RowVectorXd mean = v.topRows(a + 1).colwise().mean();
  out.topRows(a + 1) = v.topRows(a + 1).rowwise() - mean;
  return out;
}

template <class Derived>
void assert_square(const Eigen::MatrixBase<Derived>& v, const char* message) {
  NCSDE_ASSERT(v.rows() == v.cols() && v.rows() >= 1, message);
}

}  // namespace

template <int M>
void b_relu(const square_matrix<M>& v, double c_plus, double c_minus, square_matrix<M>& out) {
  assert_square(v, "b_relu: V must be square");
  const int m = static_cast<int>(v.rows());
  const double scale = (c_plus - c_minus) * (c_plus - c_minus) / (2.0 * std::numbers::pi);
  NCSDE_ASSERT(&out != &v, "b_relu: out must not be V");
  out.resize(m, m);
  // The diagonal of `out` holds √V^{aa} (m square roots, not two per pair) until the end.
  for (int a = 0; a < m; ++a) out(a, a) = std::sqrt(std::max(v(a, a), 0.0));
  for (int a = 0; a < m; ++a) {
    for (int b = a + 1; b < m; ++b) {
      const double norm = out(a, a) * out(b, b);
      double value = 0.0;
      if (norm > 0.0) {
        const double rho = std::clamp(v(a, b) / norm, -1.0, 1.0);
        value = scale * (std::sqrt(1.0 - rho * rho) - rho * std::acos(rho)) * norm;
      }
      out(a, b) = value;
      out(b, a) = value;
    }
  }
  // ν(1) = 0: the diagonal is 0 exactly, independent of how ρ^{aa} rounds.
  out.diagonal().setZero();
}

template <int M>
void b_att(const square_matrix<M>& v, double tau0, square_matrix<M>& out,
           coefficient_workspace<M>& ws) {
  assert_square(v, "b_att: V must be square");
  const int m = static_cast<int>(v.rows());
  const double md = static_cast<double>(m);
  // PVP = V − 1v̄ᵀ − v̄1ᵀ + v̿ 11ᵀ (v̄ the row means, v̿ the grand mean).
  column_vector<M>& row_mean = ws.c0;
  column_vector<M>& pvp_diag = ws.c1;
  column_vector<M>& u = ws.c2;
  column_vector<M>& vu = ws.c3;
  // Every sum from 0 in increasing index, as the lane kernel's (b_att_lanes); the sums of
  // different rows run side by side, a column of V at a time (the same sums, vectorised).
  row_mean.setZero(m);
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a) row_mean(a) += v(a, b);
  for (int a = 0; a < m; ++a) row_mean(a) /= md;
  double grand_mean = 0.0;
  for (int a = 0; a < m; ++a) grand_mean += row_mean(a);
  grand_mean /= md;
  pvp_diag.resize(m);
  double tr_pvp = 0.0;
  for (int a = 0; a < m; ++a) {
    pvp_diag(a) = v(a, a) - 2.0 * row_mean(a) + grand_mean;
    tr_pvp += pvp_diag(a);
  }
  // tr(PVPV) = Σ_ab (PVP)^{ab} V^{ba}.
  double tr_pvpv = 0.0;
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a)
      tr_pvpv += (v(a, b) - row_mean(a) - row_mean(b) + grand_mean) * v(a, b);
  u.resize(m);
  for (int a = 0; a < m; ++a) u(a) = 0.5 * (pvp_diag(a) - tr_pvp / md);
  vu.setZero(m);
  for (int c = 0; c < m; ++c)
    for (int a = 0; a < m; ++a) vu(a) += v(a, c) * u(c);
  const double inv_tau2 = 1.0 / (tau0 * tau0);
  // V's diagonal as a vector (into pvp_diag, read no more), so that a column's entries read
  // contiguous memory only and the loop over rows vectorises: the same expression per entry.
  column_vector<M>& diag = pvp_diag;
  for (int a = 0; a < m; ++a) diag(a) = v(a, a);
  const double md2 = md * md;
  out.resize(m, m);
  for (int b = 0; b < m; ++b) {
    const double vu_b = vu(b), v_bb = diag(b);
    for (int a = 0; a < m; ++a)
      out(a, b) = inv_tau2 * ((diag(a) * vu_b + vu(a) * v_bb) / md + v(a, b) * tr_pvpv / md2);
  }
}

template <int M>
void b_causal(const square_matrix<M>& v, double tau0, square_matrix<M>& out,
              coefficient_workspace<M>& ws) {
  assert_square(v, "b_causal: V must be square");
  const int m = static_cast<int>(v.rows());
  // Prefix sums (0-indexed, inclusive): R(i, b) = Σ_{j≤b} V^{ij}, Π, Q2 over the leading blocks,
  // S2(a, b) = Σ_{i≤a} R(i, b)².
  square_matrix<M>& r = ws.m0;
  square_matrix<M>& pi = ws.m1;
  square_matrix<M>& q2 = ws.m2;
  square_matrix<M>& s2 = ws.m3;
  square_matrix<M>& u = ws.m4;
  square_matrix<M>& e = ws.m5;
  r.resize(m, m);
  pi.resize(m, m);
  q2.resize(m, m);
  s2.resize(m, m);
  // The rows' running sums side by side, a column at a time (the same sums, vectorised).
  column_vector<M>& acc = ws.c0;
  acc.setZero(m);
  for (int b = 0; b < m; ++b)
    for (int i = 0; i < m; ++i) r(i, b) = acc(i) += v(i, b);
  for (int b = 0; b < m; ++b) {
    double acc_pi = 0.0, acc_s2 = 0.0;
    for (int a = 0; a < m; ++a) {
      acc_pi += r(a, b);
      acc_s2 += r(a, b) * r(a, b);
      pi(a, b) = acc_pi;
      s2(a, b) = acc_s2;
    }
  }
  acc.setZero(m);
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a) {
      acc(a) += v(a, b) * v(a, b);
      q2(a, b) = acc(a) + (a > 0 ? q2(a - 1, b) : 0.0);
    }
  // U: row a is u_aᵀ. u_a^ν = V^{νν}/2 − R(ν, a)/k − tr_a(V)/(2k) + Π(a, a)/k² for ν ≤ a. For k ≤ 2
  // all diagonal entries of P_a V P_a are equal, so u_a = 0 identically: set it exactly.
  u.setZero(m, m);
  double tr_a = 0.0;
  for (int a = 0; a < m; ++a) {
    tr_a += v(a, a);
    if (a < 2) continue;
    const double k = a + 1.0;
    for (int nu = 0; nu <= a; ++nu)
      u(a, nu) = 0.5 * v(nu, nu) - r(nu, a) / k - tr_a / (2.0 * k) + pi(a, a) / (k * k);
  }
  // E = D_κ⁻¹ Diag(V) U V (U lower triangular: the sums stop at ν = a).
  matrix_product(e, u, v, true);
  for (int a = 0; a < m; ++a) e.row(a) *= v(a, a) / (a + 1.0);
  const double inv_tau2 = 1.0 / (tau0 * tau0);
  out.resize(m, m);
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a) {
      const double ka = a + 1.0, kb = b + 1.0;
      // P_0 = 0, so T vanishes on row and column 0 identically: set it exactly.
      const double t = (a == 0 || b == 0) ? 0.0
                                          : q2(a, b) - s2(a, b) / kb - s2(b, a) / ka +
                                                pi(a, b) * pi(a, b) / (ka * kb);
      out(a, b) = inv_tau2 * (e(a, b) + e(b, a) + v(a, b) * t / (ka * kb));
    }
}

void b_relu(const matrix& v, double c_plus, double c_minus, matrix& out) {
  b_relu<Eigen::Dynamic>(v, c_plus, c_minus, out);
}

void b_att(const matrix& v, double tau0, matrix& out) {
  coefficient_workspace<Eigen::Dynamic> ws;
  b_att<Eigen::Dynamic>(v, tau0, out, ws);
}

void b_causal(const matrix& v, double tau0, matrix& out) {
  coefficient_workspace<Eigen::Dynamic> ws;
  b_causal<Eigen::Dynamic>(v, tau0, out, ws);
}

void sigma_lin(const matrix& v, matrix& sigma) {
  assert_square(v, "sigma_lin: V must be square");
  fill_packed_covariance(static_cast<int>(v.rows()), sigma, [&](int a, int b, int c, int d) {
    return v(a, c) * v(b, d) + v(a, d) * v(b, c);
  });
}

void sigma_att(const matrix& v, double tau0, matrix& sigma) {
  assert_square(v, "sigma_att: V must be square");
  const int m = static_cast<int>(v.rows());
  const matrix phi = phi_full(v);
  const double scale = 1.0 / (static_cast<double>(m) * m * tau0 * tau0);
  fill_packed_covariance(m, sigma, [&](int a, int b, int c, int d) {
    return scale *
           (v(a, c) * phi(b, d) + v(a, d) * phi(b, c) + v(b, c) * phi(a, d) + v(b, d) * phi(a, c));
  });
}

void sigma_causal(const matrix& v, double tau0, matrix& sigma) {
  assert_square(v, "sigma_causal: V must be square");
  const int m = static_cast<int>(v.rows());
  // Φ_{ac} = V P_a V P_c V = (P_a V)ᵀ V (P_c V), scaled here by 1/(k_a k_c).
  std::vector<matrix> pv(m);
  for (int a = 0; a < m; ++a) pv[a] = centre_prefix_rows(v, a);
  std::vector<matrix> phi(static_cast<std::size_t>(m) * m);
  for (int a = 0; a < m; ++a) {
    const matrix left = pv[a].transpose() * v;
    for (int c = 0; c < m; ++c) phi[a * m + c] = left * pv[c] / ((a + 1.0) * (c + 1.0));
  }
  const double scale = 1.0 / (tau0 * tau0);
  fill_packed_covariance(m, sigma, [&](int a, int b, int c, int d) {
    return scale * (v(a, c) * phi[a * m + c](b, d) + v(a, d) * phi[a * m + d](b, c) +
                    v(b, c) * phi[b * m + c](a, d) + v(b, d) * phi[b * m + d](a, c));
  });
}

template <int M>
void noise_lin(const square_matrix<M>& l, bool lower, const square_ref<M>& g, square_matrix<M>& out,
               coefficient_workspace<M>& ws) {
  NCSDE_ASSERT(g.rows() == l.rows() && g.cols() == l.rows(), "noise_lin: G must be m×m");
  square_matrix<M>& lg = ws.m0;
  square_matrix<M>& mm = ws.m1;
  matrix_product(lg, l, g, lower);
  matrix_product_transposed(mm, lg, l, lower);
  out = (mm + mm.transpose()) / std::numbers::sqrt2;
}

template <int M>
void noise_att(const square_matrix<M>& l, bool lower, const square_matrix<M>& v,
               const square_ref<M>& z, double tau0, square_matrix<M>& out,
               coefficient_workspace<M>& ws) {
  NCSDE_ASSERT(z.rows() == l.rows() && z.cols() == l.rows() && v.rows() == l.rows(),
               "noise_att: L, V and Z must be m×m");
  const double m = static_cast<double>(v.rows());
  square_matrix<M>& lz = ws.m0;
  square_matrix<M>& zeta = ws.m1;
  square_matrix<M>& pv = ws.m2;
  square_matrix<M>& y = ws.m3;
  matrix_product(lz, l, z, lower);
  matrix_product_transposed(zeta, lz, l, lower);
  centre_rows<M>(v, pv);
  matrix_product(y, zeta, pv, false);
  y /= m * tau0;
  out = y + y.transpose();
}

template <int M>
void noise_causal(const square_matrix<M>& l, bool lower, const square_matrix<M>& v,
                  const square_ref<M>& z, double tau0, square_matrix<M>& out,
                  coefficient_workspace<M>& ws) {
  NCSDE_ASSERT(z.rows() == l.rows() && z.cols() == l.rows() && v.rows() == l.rows(),
               "noise_causal: L, V and Z must be m×m");
  const int m = static_cast<int>(v.rows());
  square_matrix<M>& lz = ws.m0;
  square_matrix<M>& n = ws.m1;
  square_matrix<M>& y = ws.m2;
  matrix_product(lz, l, z, lower);
  matrix_product_transposed(n, lz, l, lower);
  for (int a = 0; a < m; ++a) {
    const double k = a + 1.0;
    double mean = 0.0;
    for (int j = 0; j <= a; ++j) mean += n(a, j);
    mean /= k;
    n.row(a).head(a + 1).array() -= mean;
    n.row(a).head(a + 1) /= k;
    n.row(a).tail(m - a - 1).setZero();
  }
  // N is lower triangular: the sums stop at the row.
  matrix_product(y, n, v, true);
  y /= tau0;
  out = y + y.transpose();
}

void noise_lin(const matrix& l, const Eigen::Ref<const matrix>& g, matrix& out) {
  coefficient_workspace<Eigen::Dynamic> ws;
  noise_lin<Eigen::Dynamic>(l, false, g, out, ws);
}

void noise_att(const matrix& l, const matrix& v, const Eigen::Ref<const matrix>& z, double tau0,
               matrix& out) {
  coefficient_workspace<Eigen::Dynamic> ws;
  noise_att<Eigen::Dynamic>(l, false, v, z, tau0, out, ws);
}

void noise_causal(const matrix& l, const matrix& v, const Eigen::Ref<const matrix>& z, double tau0,
                  matrix& out) {
  coefficient_workspace<Eigen::Dynamic> ws;
  noise_causal<Eigen::Dynamic>(l, false, v, z, tau0, out, ws);
}

template <int M>
bool basic_psd_factor<M>::compute(const square_matrix<M>& v) {
  assert_square(v, "psd_factor: V must be square");
  m_lower = ncsde::detail::cholesky_factor(v, m_l);
  if (m_lower) return true;
  m_eigen.compute(v, Eigen::ComputeEigenvectors);
  m_l = m_eigen.eigenvectors() * m_eigen.eigenvalues().cwiseMax(0.0).cwiseSqrt().asDiagonal();
  return false;
}

matrix factor(const matrix& v) {
  psd_factor f;
  f.compute(v);
  return f.l();
}

NCSDE_MODELS_KERNELS(, 2)
NCSDE_MODELS_KERNELS(, 3)
NCSDE_MODELS_KERNELS(, 4)
NCSDE_MODELS_KERNELS(, 8)
NCSDE_MODELS_KERNELS(, Eigen::Dynamic)

}  // namespace ncsde::models
