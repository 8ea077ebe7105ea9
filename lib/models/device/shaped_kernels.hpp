#pragma once
/// The coefficients of the shaped covariance SDEs on one path in the form a device thread runs
/// (ncsde/host_device.hpp): the building blocks of models/coefficients.hpp and their
/// composition by covariance_sde (models/shaped.hpp), on raw column-major m×m arrays (entry (a, b)
/// at a + b·m) with caller-provided workspaces. Every function performs the IEEE-754 operations of
/// its CPU counterpart (lib/models/coefficients.cpp, lib/models/shaped.cpp) in the same order, with
/// the products of solvers/device/dense.hpp, so on the host its results are the CPU's bit for bit;
/// tests/models/device_kernels_test.cpp checks that.
///
/// The one operation a device does not round as the host does is arccos (b_relu): CUDA's acos is
/// not glibc's, and the two may differ in the last bit. On a device the ReLU drift (mlp, resnet,
/// transformer) therefore equals the CPU's to round-off, not bit for bit; every other coefficient,
/// and the noise of every architecture, uses only correctly rounded add, sub, mul, div and sqrt and
/// is the same bits on both.
///
/// Outputs must not overlap the inputs or the workspace. Sizes are not validated.
#include <cmath>

#include "../../../solvers/device/dense.hpp"

namespace ncsde::models::device {

/// π and √2: the doubles nearest to them, as std::numbers::pi and std::numbers::sqrt2.
inline constexpr double pi = 3.141592653589793238462643383279502884;
inline constexpr double sqrt2 = 1.414213562373095048801688724209698079;

/// std::max(x, 0.0): (x < 0) ? 0 : x, so a NaN and −0 pass through unchanged.
NCSDE_KERNEL_INLINE double max_zero(double x) { return x < 0.0 ? 0.0 : x; }

/// std::clamp(x, lo, hi) = std::min(std::max(x, lo), hi): a NaN passes through (both comparisons
/// are false), where fmin/fmax would turn it into a bound.
NCSDE_KERNEL_INLINE double clamp(double x, double lo, double hi) {
  const double y = x < lo ? lo : x;
  return hi < y ? hi : y;
}

/// arccos: glibc's std::acos on the host; CUDA's acos on a device (may differ in the last bit).
NCSDE_KERNEL_INLINE double arccos(double x) {
#if defined(__CUDA_ARCH__)
  return ::acos(x);
#else
  return std::acos(x);
#endif
}

/// Doubles of workspace the kernels below need (m×m states).
NCSDE_HOST_DEVICE constexpr int b_att_workspace_doubles(int m) { return 4 * m; }
NCSDE_HOST_DEVICE constexpr int b_causal_workspace_doubles(int m) { return 5 * m * m + m; }
NCSDE_HOST_DEVICE constexpr int noise_lin_workspace_doubles(int m) { return 2 * m * m; }
NCSDE_HOST_DEVICE constexpr int noise_att_workspace_doubles(int m) { return 3 * m * m; }
NCSDE_HOST_DEVICE constexpr int noise_causal_workspace_doubles(int m) { return 2 * m * m; }

/// out = P V = V − 1 v̄ᵀ, v̄ the column means of V, each a sum over rows from +0 in increasing row.
NCSDE_HOST_DEVICE inline void centre_rows(const double* v, int m, double* out) {
  const double md = static_cast<double>(m);
  for (int b = 0; b < m; ++b) {
    double mean = 0.0;
    for (int a = 0; a < m; ++a) mean = mean + v[a + b * m];
    mean = mean / md;
    for (int a = 0; a < m; ++a) out[a + b * m] = v[a + b * m] - mean;
  }
}

/// ReLU drift b_ReLU^{ab} = ν(ρ^{ab}) √(V^{aa}V^{bb}) (models::b_relu): ρ clipped to [−1, 1],
/// max(V^{aa}, 0) under the square root, the diagonal exactly 0. Reads V's upper triangle.
NCSDE_HOST_DEVICE inline void b_relu(const double* v, int m, double c_plus, double c_minus,
                                     double* out) {
  const double scale = (c_plus - c_minus) * (c_plus - c_minus) / (2.0 * pi);
  // The diagonal of `out` holds √V^{aa} until the end.
  for (int a = 0; a < m; ++a) out[a + a * m] = ncsde::device::sqrt_rn(max_zero(v[a + a * m]));
  for (int a = 0; a < m; ++a)
    for (int b = a + 1; b < m; ++b) {
      const double norm = out[a + a * m] * out[b + b * m];
      double value = 0.0;
      if (norm > 0.0) {
        const double rho = clamp(v[a + b * m] / norm, -1.0, 1.0);
        value = scale * (ncsde::device::sqrt_rn(1.0 - rho * rho) - rho * arccos(rho)) * norm;
      }
      out[a + b * m] = value;
      out[b + a * m] = value;
    }
  for (int a = 0; a < m; ++a) out[a + a * m] = 0.0;
}

/// Full-attention drift without γ² (models::b_att):
///   b_att = (1/τ₀²) [(diag(V)(Vu)ᵀ + (Vu)diag(V)ᵀ)/m + (tr(PVPV)/m²) V],
///   u = ½ [diag(PVP) − (tr(PVP)/m) 1],  PVP = V − 1v̄ᵀ − v̄1ᵀ + v̿ 11ᵀ.
/// ws: b_att_workspace_doubles(m).
NCSDE_HOST_DEVICE inline void b_att(const double* v, int m, double tau0, double* out, double* ws) {
  const double md = static_cast<double>(m);
  double* row_mean = ws;
  double* pvp_diag = ws + m;
  double* u = ws + 2 * m;
  double* vu = ws + 3 * m;
  for (int a = 0; a < m; ++a) {
    double s = 0.0;
    for (int b = 0; b < m; ++b) s = s + v[a + b * m];
    row_mean[a] = s / md;
  }
  double grand_mean = 0.0;
  for (int a = 0; a < m; ++a) grand_mean = grand_mean + row_mean[a];
  grand_mean = grand_mean / md;
  double tr_pvp = 0.0;
  for (int a = 0; a < m; ++a) {
    pvp_diag[a] = v[a + a * m] - 2.0 * row_mean[a] + grand_mean;
    tr_pvp = tr_pvp + pvp_diag[a];
  }
  // tr(PVPV) = Σ_ab (PVP)^{ab} V^{ba}: one sum, b the outer index.
  double tr_pvpv = 0.0;
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a)
      tr_pvpv = tr_pvpv + (v[a + b * m] - row_mean[a] - row_mean[b] + grand_mean) * v[a + b * m];
  for (int a = 0; a < m; ++a) u[a] = 0.5 * (pvp_diag[a] - tr_pvp / md);
  for (int a = 0; a < m; ++a) {
    double s = 0.0;
    for (int c = 0; c < m; ++c) s = s + v[a + c * m] * u[c];
    vu[a] = s;
  }
  const double inv_tau2 = 1.0 / (tau0 * tau0);
  const double md2 = md * md;
  for (int b = 0; b < m; ++b) {
    const double vu_b = vu[b], v_bb = v[b + b * m];
    for (int a = 0; a < m; ++a)
      out[a + b * m] =
          inv_tau2 * ((v[a + a * m] * vu_b + vu[a] * v_bb) / md + v[a + b * m] * tr_pvpv / md2);
  }
}

/// Causal-attention drift without γ² (models::b_causal, 0-indexed tokens, k_a = a + 1):
///   b_causal = (1/τ₀²) [E + Eᵀ + D_κ⁻¹ (V∘T) D_κ⁻¹],  E = D_κ⁻¹ Diag(V) U V,
/// through the prefix sums R^{ib} = Σ_{j≤b} V^{ij}, Π, Q2 and S2 of models/coefficients.hpp.
/// ws: b_causal_workspace_doubles(m).
NCSDE_HOST_DEVICE inline void b_causal(const double* v, int m, double tau0, double* out,
                                       double* ws) {
  const int mm = m * m;
  double* r = ws;  // R; E once U is formed (R is read no more)
  double* pi_sum = ws + mm;
  double* q2 = ws + 2 * mm;
  double* s2 = ws + 3 * mm;
  double* u = ws + 4 * mm;
  double* acc = ws + 5 * mm;
  for (int i = 0; i < m; ++i) acc[i] = 0.0;
  for (int b = 0; b < m; ++b)
    for (int i = 0; i < m; ++i) {
      acc[i] = acc[i] + v[i + b * m];
      r[i + b * m] = acc[i];
    }
  for (int b = 0; b < m; ++b) {
    double acc_pi = 0.0, acc_s2 = 0.0;
    for (int a = 0; a < m; ++a) {
      const double rab = r[a + b * m];
      acc_pi = acc_pi + rab;
      acc_s2 = acc_s2 + rab * rab;
      pi_sum[a + b * m] = acc_pi;
      s2[a + b * m] = acc_s2;
    }
  }
  for (int i = 0; i < m; ++i) acc[i] = 0.0;
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a) {
      acc[a] = acc[a] + v[a + b * m] * v[a + b * m];
      q2[a + b * m] = acc[a] + (a > 0 ? q2[a - 1 + b * m] : 0.0);
    }
  // U: row a is u_aᵀ, identically 0 for k_a ≤ 2.
  for (int k = 0; k < mm; ++k) u[k] = 0.0;
  double tr_a = 0.0;
  for (int a = 0; a < m; ++a) {
    tr_a = tr_a + v[a + a * m];
    if (a < 2) continue;
    const double k = a + 1.0;
    for (int nu = 0; nu <= a; ++nu)
      u[a + nu * m] =
          0.5 * v[nu + nu * m] - r[nu + a * m] / k - tr_a / (2.0 * k) + pi_sum[a + a * m] / (k * k);
  }
  // E = D_κ⁻¹ Diag(V) U V (U lower triangular).
  double* e = r;
  ncsde::device::product(u, v, m, true, e);
  for (int a = 0; a < m; ++a) {
    const double f = v[a + a * m] / (a + 1.0);
    for (int b = 0; b < m; ++b) e[a + b * m] = e[a + b * m] * f;
  }
  const double inv_tau2 = 1.0 / (tau0 * tau0);
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a) {
      const double ka = a + 1.0, kb = b + 1.0;
      // P_0 = 0: T vanishes on row and column 0 exactly.
      const double t = (a == 0 || b == 0)
                           ? 0.0
                           : q2[a + b * m] - s2[a + b * m] / kb - s2[b + a * m] / ka +
                                 pi_sum[a + b * m] * pi_sum[a + b * m] / (ka * kb);
      out[a + b * m] = inv_tau2 * (e[a + b * m] + e[b + a * m] + v[a + b * m] * t / (ka * kb));
    }
}

/// Linear noise N_lin = (M + Mᵀ)/√2, M = L G Lᵀ (models::noise_lin); `lower`: L is lower
/// triangular (the products skip its upper triangle). ws: noise_lin_workspace_doubles(m).
NCSDE_HOST_DEVICE inline void noise_lin(const double* l, bool lower, const double* g, int m,
                                        double* out, double* ws) {
  double* lg = ws;
  double* mm = ws + m * m;
  ncsde::device::product(l, g, m, lower, lg);
  ncsde::device::product_transposed(lg, l, m, lower, mm);
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a) out[a + b * m] = (mm[a + b * m] + mm[b + a * m]) / sqrt2;
}

/// Attention noise N_att = Y + Yᵀ, Y = ζ (PV)/(mτ₀), ζ = L Z Lᵀ (models::noise_att).
/// ws: noise_att_workspace_doubles(m).
NCSDE_HOST_DEVICE inline void noise_att(const double* l, bool lower, const double* v,
                                        const double* z, int m, double tau0, double* out,
                                        double* ws) {
  const int mm = m * m;
  double* lz = ws;  // L Z; then Y
  double* zeta = ws + mm;
  double* pv = ws + 2 * mm;
  ncsde::device::product(l, z, m, lower, lz);
  ncsde::device::product_transposed(lz, l, m, lower, zeta);
  centre_rows(v, m, pv);
  double* y = lz;
  ncsde::device::product(zeta, pv, m, false, y);
  const double scale = static_cast<double>(m) * tau0;
  for (int k = 0; k < mm; ++k) y[k] = y[k] / scale;
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a) out[a + b * m] = y[a + b * m] + y[b + a * m];
}

/// Causal attention noise N_causal = Y + Yᵀ, Y = N V/τ₀, row a of N = (1/k_a) ζ^{a·} P_a, ζ = L Z
/// Lᵀ (models::noise_causal). ws: noise_causal_workspace_doubles(m).
NCSDE_HOST_DEVICE inline void noise_causal(const double* l, bool lower, const double* v,
                                           const double* z, int m, double tau0, double* out,
                                           double* ws) {
  const int mm = m * m;
  double* lz = ws;  // L Z; then Y
  double* n = ws + mm;
  ncsde::device::product(l, z, m, lower, lz);
  ncsde::device::product_transposed(lz, l, m, lower, n);
  for (int a = 0; a < m; ++a) {
    const double k = a + 1.0;
    double mean = 0.0;
    for (int j = 0; j <= a; ++j) mean = mean + n[a + j * m];
    mean = mean / k;
    for (int j = 0; j <= a; ++j) n[a + j * m] = (n[a + j * m] - mean) / k;
    for (int j = a + 1; j < m; ++j) n[a + j * m] = 0.0;
  }
  // N is lower triangular.
  double* y = lz;
  ncsde::device::product(n, v, m, true, y);
  for (int k = 0; k < mm; ++k) y[k] = y[k] / tau0;
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a) out[a + b * m] = y[a + b * m] + y[b + a * m];
}

/// Doubles of workspace shaped_device_model::drift and ::diffusion need: the drift's b_att|causal
/// or b_ReLU result plus b_causal's scratch (6m² + m), which covers the diffusion's 4m².
NCSDE_HOST_DEVICE constexpr int shaped_workspace_doubles(int m) {
  return m * m + b_causal_workspace_doubles(m);
}

/// covariance_sde (models/shaped.hpp) as plain numbers, for one path at a time:
///   b(V) = att_weight · b_att|causal(V) + relu_weight · b_ReLU(V),
///   G(V) ξ = √k_lin N_lin(L, G) + √k_att N_att|causal(L, V, Z),  ξ = (vec G, vec Z).
/// models::device_model_of (shaped_device.hpp) fills it from a covariance_sde.
struct shaped_device_model {
  double att_weight = 0.0;     ///< weight of b_att|causal: γ² with attention, 0 otherwise
  double relu_weight = 0.0;    ///< weight of b_ReLU: 1 (mlp), γ² (resnet, transformer), 0
  double k_lin = 0.0;          ///< Σ_lin coefficient
  double k_att = 0.0;          ///< Σ_att|causal coefficient
  double tau0 = 1.0;           ///< τ₀
  double c_plus = 0.0;         ///< c₊
  double c_minus = -2.0;       ///< c₋
  bool causal = false;         ///< b_causal and N_causal in place of b_att and N_att
  bool has_attention = false;  ///< ξ has a Z part (attention, transformer)

  /// k = m² (G only), 2m² with attention (G then Z).
  NCSDE_HOST_DEVICE int noise_dimension(int m) const { return has_attention ? 2 * m * m : m * m; }

  /// Doubles of workspace drift and diffusion need: shaped_workspace_doubles(m).
  NCSDE_HOST_DEVICE int workspace_doubles(int m) const { return shaped_workspace_doubles(m); }

  /// out = b(V) as covariance_sde::drift: out = 0, then out += w · b for each term with w ≠ 0 (so
  /// a −0 term becomes +0, as on the CPU). ws: shaped_workspace_doubles(m).
  NCSDE_HOST_DEVICE void drift(const double* v, int m, double* out, double* ws) const {
    const int mm = m * m;
    double* work = ws;
    double* kernels = ws + mm;
    for (int k = 0; k < mm; ++k) out[k] = 0.0;
    if (att_weight != 0.0) {
      if (causal)
        b_causal(v, m, tau0, work, kernels);
      else
        b_att(v, m, tau0, work, kernels);
      for (int k = 0; k < mm; ++k) out[k] = out[k] + att_weight * work[k];
    }
    if (relu_weight != 0.0) {
      b_relu(v, m, c_plus, c_minus, work);
      for (int k = 0; k < mm; ++k) out[k] = out[k] + relu_weight * work[k];
    }
  }

  /// out = G(V) ξ as covariance_sde::diffusion, given l, the Cholesky factor of V by
  /// ncsde::device::cholesky (the CPU's factor of a positive-definite V, bit for bit), and xi with
  /// noise_dimension(m) entries. A V without a Cholesky factor (on the boundary of the cone or off
  /// it) takes the CPU's eigen-factor, which has no device form. ws: shaped_workspace_doubles(m).
  NCSDE_HOST_DEVICE void diffusion(const double* v, const double* l, const double* xi, int m,
                                   double* out, double* ws) const {
    const int mm = m * m;
    noise_lin(l, true, xi, m, out, ws);
    const double scale_lin = ncsde::device::sqrt_rn(k_lin);
    for (int k = 0; k < mm; ++k) out[k] = out[k] * scale_lin;
    if (has_attention && k_att != 0.0) {
      double* work = ws;
      double* kernels = ws + mm;
      if (causal)
        noise_causal(l, true, v, xi + mm, m, tau0, work, kernels);
      else
        noise_att(l, true, v, xi + mm, m, tau0, work, kernels);
      const double scale_att = ncsde::device::sqrt_rn(k_att);
      for (int k = 0; k < mm; ++k) out[k] = out[k] + scale_att * work[k];
    }
  }
};

}  // namespace ncsde::models::device
