// The lane kernels of the neural covariance SDEs (lane_kernels.hpp) on Google Highway's vectors.
// Each kernel is written once over a chunk of the lane group, as many lanes as the target's vector
// holds (2 on SSE4, 4 on AVX2, 8 on AVX-512, 1 on the scalar target), and runs chunk after chunk
// over the batch_width lanes; Highway compiles this file once per instruction set and the widest
// one the CPU runs is chosen at run time (the same mechanism as solvers/random.cpp).
//
// Every lane goes through the same correctly rounded operations (add, sub, mul, div, sqrt) in the
// same order on every target, and the file is built with -ffp-contract=off (no fused multiply-add),
// so the kernels' numbers are the same bits on every instruction set (batched_model_test checks each
// compiled target against the widest). The ReLU drift's arccos is std::acos, lane by lane.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "lib/models/lane_kernels.cpp"
// As in random.cpp: the kernels take the lane count at compile time, so the scalable targets are
// left out (their CPUs run the NEON or EMU128 code, with the same bits). AVX3_DL adds nothing for
// doubles over AVX3, and SSSE3 nothing over the baseline here: both are left out to keep the build
// short.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS \
  (HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128 | HWY_RVV | HWY_AVX3_DL | HWY_SSSE3)
#endif
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "solvers/lane_simd-inl.h"

#ifndef NCSDE_LANE_KERNELS_COMMON
#define NCSDE_LANE_KERNELS_COMMON

#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <vector>

#include "ncsde/concepts.hpp"
#include "ncsde/error.hpp"
#include "ncsde/models/lane_kernels.hpp"

namespace ncsde::models {
namespace {

void assert_lanes(const lane_block& v, int m, const char* message) {
  NCSDE_ASSERT(m >= 1 && v.cols() == static_cast<Eigen::Index>(m) * m, message);
}

/// The columns of a lane block as the kernels read them: column k of lane group l starts at
/// data + k·stride (stride ≥ batch_width; a lane_block has stride batch_width, a Ref to a block of
/// its columns the parent's).
struct lane_columns {
  const double* data;
  Eigen::Index stride;
};
inline lane_columns columns_of(const lane_block& x) { return {x.data(), batch_width}; }
inline lane_columns columns_of(const Eigen::Ref<const lane_block>& x) {
  return {x.data(), x.outerStride()};
}

/// One instruction set's kernels. The outputs and the workspace are sized by the caller (the
/// public functions below); the kernels only read and write their columns.
struct lane_kernel_table {
  std::int64_t target;
  void (*b_relu)(lane_columns v, int m, double scale, lane_block& out);
  void (*b_att)(lane_columns v, int m, double tau0, lane_block& out,
                lane_coefficient_workspace& ws);
  void (*b_causal)(lane_columns v, int m, double tau0, lane_block& out,
                   lane_coefficient_workspace& ws);
  void (*noise_lin)(lane_columns l, bool lower, lane_columns g, int m, lane_block& out,
                    lane_coefficient_workspace& ws);
  void (*noise_att)(lane_columns l, bool lower, lane_columns v, lane_columns z, int m, double tau0,
                    lane_block& out, lane_coefficient_workspace& ws);
  void (*noise_causal)(lane_columns l, bool lower, lane_columns v, lane_columns z, int m,
                       double tau0, lane_block& out, lane_coefficient_workspace& ws);
};

}  // namespace
}  // namespace ncsde::models

#endif  // NCSDE_LANE_KERNELS_COMMON

// ---- the kernels, once per target ------------------------------------------------------------------

HWY_BEFORE_NAMESPACE();
namespace ncsde::models {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
namespace lane_simd = ncsde::HWY_NAMESPACE::lane_simd;
using lane_simd::at;
using lane_simd::chunk;
using lane_simd::D;
using lane_simd::product;
using lane_simd::product_transposed;
using lane_simd::V;
static_assert(chunk >= 1 && batch_width % chunk == 0, "a lane group is a whole number of vectors");

/// The chunk of lanes [o, o + chunk) of a lane block, read-only.
struct in : lane_simd::lanes_in {
  in(lane_columns c, int o) : lanes_in{c.data + o, c.stride} {}
  in(const lane_block& x, int o) : lanes_in{x.data() + o, batch_width} {}
};
/// The same chunk of a lane block that is written.
struct out : lane_simd::lanes_out {
  out(lane_block& x, int o) : lanes_out{x.data() + o, batch_width} {}
};
HWY_INLINE V dup(double x) { return hn::Set(D(), x); }

// Each kernel below is the per-lane maths of lane_kernels.hpp written operation by operation, in
// the order of the per-path kernels' sums; a comment gives the formula. M: m at compile time, or
// Eigen::Dynamic. The products L X and X Lᵀ are lane_simd's (solvers/lane_simd-inl.h), those of
// lane_product and lane_product_transposed.

/// ζ = L Z Lᵀ (t: L Z).
template <int M>
HWY_INLINE void congruence(const in& l, bool lower, const in& z, int m, const out& t,
                           const out& zeta) {
  product<M>(l, z, m, lower, t);
  product_transposed<M>(t, l, m, lower, zeta);
}

/// out = Y + Yᵀ.
template <int M>
HWY_INLINE void symmetric_sum(const out& y, int m_in, const out& o) {
  const int m = M == Eigen::Dynamic ? m_in : M;
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a) o.set(at(a, b, m), hn::Add(y(at(a, b, m)), y(at(b, a, m))));
}

/// b_relu: b_ab = c ((1 − ρ²)^{1/2} − ρ arccos ρ) √(V_aa V_bb) off the diagonal (0 where
/// V_aa V_bb = 0), ρ = V_ab/√(V_aa V_bb) clamped to [−1, 1], c = (c₊ − c₋)²/(2π); the diagonal 0.
/// The clamps and the max with 0 are comparisons and blends (x < y ? y : x), the NaN behaviour of
/// std::max and std::clamp; arccos is std::acos lane by lane, as in b_relu: bit-identical to it.
template <int M>
void b_relu_chunk(const in& v, int m_in, double scale, const out& o) {
  const int m = M == Eigen::Dynamic ? m_in : M;
  const V zero = hn::Zero(D()), one = dup(1.0), minus_one = dup(-1.0);
  // The diagonal columns of the output hold √V^{aa} until the end, as in b_relu.
  for (int a = 0; a < m; ++a) {
    const V d = v(at(a, a, m));
    o.set(at(a, a, m), hn::Sqrt(hn::IfThenElse(hn::Lt(d, zero), zero, d)));
  }
  HWY_ALIGN double buffer[chunk];
  for (int a = 0; a < m; ++a)
    for (int b = a + 1; b < m; ++b) {
      const V norm = hn::Mul(o(at(a, a, m)), o(at(b, b, m)));
      V rho = hn::Div(v(at(a, b, m)), norm);
      rho = hn::IfThenElse(hn::Lt(rho, minus_one), minus_one, rho);
      rho = hn::IfThenElse(hn::Lt(one, rho), one, rho);
      hn::Store(rho, D(), buffer);
      for (int l = 0; l < chunk; ++l) buffer[l] = std::acos(buffer[l]);
      const V arccos = hn::Load(D(), buffer);
      const V shape = hn::Sub(hn::Sqrt(hn::Sub(one, hn::Mul(rho, rho))), hn::Mul(rho, arccos));
      const V value =
          hn::IfThenElseZero(hn::Gt(norm, zero), hn::Mul(hn::Mul(dup(scale), shape), norm));
      o.set(at(a, b, m), value);
      o.set(at(b, a, m), value);
    }
  for (int a = 0; a < m; ++a) o.set(at(a, a, m), zero);
}

/// b_att: with v̄ the row means, u = ½ (diag(PVP) − tr(PVP)/m),
///   b = τ₀⁻² ((V_aa (Vu)_b + (Vu)_a V_bb)/m + V_ab tr(PVPV)/m²).
template <int M>
void b_att_chunk(const in& v, int m_in, double tau0, const out& o, lane_coefficient_workspace& ws,
                 int lane) {
  const int m = M == Eigen::Dynamic ? m_in : M;
  const double md = static_cast<double>(m);
  const out row_mean(ws.c0, lane), pvp_diag(ws.c1, lane), vu(ws.c2, lane);
  for (int a = 0; a < m; ++a) {
    V s = hn::Zero(D());
    for (int b = 0; b < m; ++b) s = hn::Add(s, v(at(a, b, m)));
    row_mean.set(a, hn::Div(s, dup(md)));
  }
  V grand_mean = hn::Zero(D());
  for (int a = 0; a < m; ++a) grand_mean = hn::Add(grand_mean, row_mean(a));
  grand_mean = hn::Div(grand_mean, dup(md));
  V tr_pvp = hn::Zero(D());
  for (int a = 0; a < m; ++a) {
    const V d = hn::Add(hn::Sub(v(at(a, a, m)), hn::Mul(dup(2.0), row_mean(a))), grand_mean);
    pvp_diag.set(a, d);
    tr_pvp = hn::Add(tr_pvp, d);
  }
  V tr_pvpv = hn::Zero(D());
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a) {
      const V centred =
          hn::Add(hn::Sub(hn::Sub(v(at(a, b, m)), row_mean(a)), row_mean(b)), grand_mean);
      tr_pvpv = hn::Add(tr_pvpv, hn::Mul(centred, v(at(a, b, m))));
    }
  // u in the columns of pvp_diag.
  const V tr_over_m = hn::Div(tr_pvp, dup(md));
  for (int a = 0; a < m; ++a) pvp_diag.set(a, hn::Mul(dup(0.5), hn::Sub(pvp_diag(a), tr_over_m)));
  for (int a = 0; a < m; ++a) {
    V s = hn::Zero(D());
    for (int c = 0; c < m; ++c) s = hn::Add(s, hn::Mul(v(at(a, c, m)), pvp_diag(c)));
    vu.set(a, s);
  }
  const V inv_tau2 = dup(1.0 / (tau0 * tau0));
  const V m2 = dup(md * md);
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a) {
      const V cross = hn::Add(hn::Mul(v(at(a, a, m)), vu(b)), hn::Mul(vu(a), v(at(b, b, m))));
      const V trace_term = hn::Div(hn::Mul(v(at(a, b, m)), tr_pvpv), m2);
      o.set(at(a, b, m), hn::Mul(inv_tau2, hn::Add(hn::Div(cross, dup(md)), trace_term)));
    }
}

/// b_causal through prefix sums: R(i, b) = Σ_{j≤b} V^{ij}, Π(a, b) = Σ_{i≤a} R(i, b),
/// S2(a, b) = Σ_{i≤a} R(i, b)², Q2(a, b) = Σ_{i≤a, j≤b} (V^{ij})²; U's row a is u_aᵀ (zero for
/// a < 2); E = D_κ⁻¹ Diag(V) U V; b = τ₀⁻² (E + Eᵀ + V ∘ T/(κ_a κ_b)), T zero on row and column 0.
template <int M>
void b_causal_chunk(const in& v, int m_in, double tau0, const out& o,
                    lane_coefficient_workspace& ws, int lane) {
  const int m = M == Eigen::Dynamic ? m_in : M;
  const out r(ws.m0, lane), pi(ws.m1, lane), q2(ws.m2, lane), s2(ws.m3, lane), u(ws.m4, lane),
      e(ws.m5, lane);
  for (int i = 0; i < m; ++i) {
    V acc = hn::Zero(D());
    for (int b = 0; b < m; ++b) {
      acc = hn::Add(acc, v(at(i, b, m)));
      r.set(at(i, b, m), acc);
    }
  }
  for (int b = 0; b < m; ++b) {
    V acc_pi = hn::Zero(D()), acc_s2 = hn::Zero(D());
    for (int a = 0; a < m; ++a) {
      const V rab = r(at(a, b, m));
      acc_pi = hn::Add(acc_pi, rab);
      acc_s2 = hn::Add(acc_s2, hn::Mul(rab, rab));
      pi.set(at(a, b, m), acc_pi);
      s2.set(at(a, b, m), acc_s2);
    }
  }
  for (int a = 0; a < m; ++a) {
    V acc = hn::Zero(D());
    for (int b = 0; b < m; ++b) {
      acc = hn::Add(acc, hn::Mul(v(at(a, b, m)), v(at(a, b, m))));
      q2.set(at(a, b, m), hn::Add(acc, a > 0 ? q2(at(a - 1, b, m)) : hn::Zero(D())));
    }
  }
  // u_a = 0 exactly for k ≤ 2 (all diagonal entries of P_a V P_a are equal).
  for (int k = 0; k < m * m; ++k) u.set(k, hn::Zero(D()));
  V tr_a = hn::Zero(D());
  for (int a = 0; a < m; ++a) {
    tr_a = hn::Add(tr_a, v(at(a, a, m)));
    if (a < 2) continue;
    const double k = a + 1.0;
    const V tr_term = hn::Div(tr_a, dup(2.0 * k));
    const V pi_term = hn::Div(pi(at(a, a, m)), dup(k * k));
    for (int nu = 0; nu <= a; ++nu) {
      const V x = hn::Sub(hn::Mul(dup(0.5), v(at(nu, nu, m))), hn::Div(r(at(nu, a, m)), dup(k)));
      u.set(at(a, nu, m), hn::Add(hn::Sub(x, tr_term), pi_term));
    }
  }
  // U is lower triangular: E = U V sums ν ≤ a.
  product<M>(in(ws.m4, lane), v, m, true, e);
  for (int a = 0; a < m; ++a) {
    const V weight = hn::Div(v(at(a, a, m)), dup(a + 1.0));
    for (int b = 0; b < m; ++b) e.set(at(a, b, m), hn::Mul(e(at(a, b, m)), weight));
  }
  const V inv_tau2 = dup(1.0 / (tau0 * tau0));
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a) {
      const double ka = a + 1.0, kb = b + 1.0;
      const V e_sym = hn::Add(e(at(a, b, m)), e(at(b, a, m)));
      if (a == 0 || b == 0) {
        // P_0 = 0: T vanishes on row and column 0 identically.
        o.set(at(a, b, m), hn::Mul(inv_tau2, hn::Add(e_sym, hn::Mul(v(at(a, b, m)), dup(0.0)))));
        continue;
      }
      const V p = pi(at(a, b, m));
      const V t = hn::Add(hn::Sub(hn::Sub(q2(at(a, b, m)), hn::Div(s2(at(a, b, m)), dup(kb))),
                                  hn::Div(s2(at(b, a, m)), dup(ka))),
                          hn::Div(hn::Mul(p, p), dup(ka * kb)));
      o.set(at(a, b, m),
            hn::Mul(inv_tau2, hn::Add(e_sym, hn::Div(hn::Mul(v(at(a, b, m)), t), dup(ka * kb)))));
    }
}

/// noise_lin: (M + Mᵀ)/√2 with M = L G Lᵀ.
template <int M>
void noise_lin_chunk(const in& l, bool lower, const in& g, int m_in, const out& o,
                     lane_coefficient_workspace& ws, int lane) {
  const int m = M == Eigen::Dynamic ? m_in : M;
  const out mm(ws.m1, lane);
  congruence<M>(l, lower, g, m, out(ws.m0, lane), mm);
  const V sqrt2 = dup(std::numbers::sqrt2);
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a)
      o.set(at(a, b, m), hn::Div(hn::Add(mm(at(a, b, m)), mm(at(b, a, m))), sqrt2));
}

/// noise_att: Y + Yᵀ with Y = ζ (P V)/(m τ₀), ζ = L Z Lᵀ, P V = V − 1 v̄ᵀ (v̄ the column means).
template <int M>
void noise_att_chunk(const in& l, bool lower, const in& v, const in& z, int m_in, double tau0,
                     const out& o, lane_coefficient_workspace& ws, int lane) {
  const int m = M == Eigen::Dynamic ? m_in : M;
  const double md = static_cast<double>(m);
  const out zeta(ws.m1, lane), pv(ws.m2, lane), y(ws.m3, lane);
  congruence<M>(l, lower, z, m, out(ws.m0, lane), zeta);
  for (int b = 0; b < m; ++b) {
    V mean = hn::Zero(D());
    for (int a = 0; a < m; ++a) mean = hn::Add(mean, v(at(a, b, m)));
    mean = hn::Div(mean, dup(md));
    for (int a = 0; a < m; ++a) pv.set(at(a, b, m), hn::Sub(v(at(a, b, m)), mean));
  }
  product<M>(in(ws.m1, lane), pv, m, false, y);
  const V scale = dup(md * tau0);
  for (int k = 0; k < m * m; ++k) y.set(k, hn::Div(y(k), scale));
  symmetric_sum<M>(y, m, o);
}

/// noise_causal: Y + Yᵀ with Y = N V/τ₀, row a of N the centred prefix of row a of ζ = L Z Lᵀ
/// divided by a + 1 (N lower triangular).
template <int M>
void noise_causal_chunk(const in& l, bool lower, const in& v, const in& z, int m_in, double tau0,
                        const out& o, lane_coefficient_workspace& ws, int lane) {
  const int m = M == Eigen::Dynamic ? m_in : M;
  const out n(ws.m1, lane), y(ws.m2, lane);
  congruence<M>(l, lower, z, m, out(ws.m0, lane), n);
  for (int a = 0; a < m; ++a) {
    const V k = dup(a + 1.0);
    V mean = hn::Zero(D());
    for (int j = 0; j <= a; ++j) mean = hn::Add(mean, n(at(a, j, m)));
    mean = hn::Div(mean, k);
    for (int j = 0; j <= a; ++j) n.set(at(a, j, m), hn::Div(hn::Sub(n(at(a, j, m)), mean), k));
    for (int j = a + 1; j < m; ++j) n.set(at(a, j, m), hn::Zero(D()));
  }
  product<M>(in(ws.m1, lane), v, m, true, y);
  const V t = dup(tau0);
  for (int k = 0; k < m * m; ++k) y.set(k, hn::Div(y(k), t));
  symmetric_sum<M>(y, m, o);
}

// The entry points: the lane group chunk by chunk.

void b_relu(lane_columns v, int m, double scale, lane_block& o) {
  with_fixed_size(m, [&]<int M>() {
    for (int lane = 0; lane < batch_width; lane += chunk)
      b_relu_chunk<M>(in(v, lane), m, scale, out(o, lane));
  });
}

void b_att(lane_columns v, int m, double tau0, lane_block& o, lane_coefficient_workspace& ws) {
  with_fixed_size(m, [&]<int M>() {
    for (int lane = 0; lane < batch_width; lane += chunk)
      b_att_chunk<M>(in(v, lane), m, tau0, out(o, lane), ws, lane);
  });
}

void b_causal(lane_columns v, int m, double tau0, lane_block& o, lane_coefficient_workspace& ws) {
  with_fixed_size(m, [&]<int M>() {
    for (int lane = 0; lane < batch_width; lane += chunk)
      b_causal_chunk<M>(in(v, lane), m, tau0, out(o, lane), ws, lane);
  });
}

void noise_lin(lane_columns l, bool lower, lane_columns g, int m, lane_block& o,
               lane_coefficient_workspace& ws) {
  with_fixed_size(m, [&]<int M>() {
    for (int lane = 0; lane < batch_width; lane += chunk)
      noise_lin_chunk<M>(in(l, lane), lower, in(g, lane), m, out(o, lane), ws, lane);
  });
}

void noise_att(lane_columns l, bool lower, lane_columns v, lane_columns z, int m, double tau0,
               lane_block& o, lane_coefficient_workspace& ws) {
  with_fixed_size(m, [&]<int M>() {
    for (int lane = 0; lane < batch_width; lane += chunk)
      noise_att_chunk<M>(in(l, lane), lower, in(v, lane), in(z, lane), m, tau0, out(o, lane), ws,
                         lane);
  });
}

void noise_causal(lane_columns l, bool lower, lane_columns v, lane_columns z, int m, double tau0,
                  lane_block& o, lane_coefficient_workspace& ws) {
  with_fixed_size(m, [&]<int M>() {
    for (int lane = 0; lane < batch_width; lane += chunk)
      noise_causal_chunk<M>(in(l, lane), lower, in(v, lane), in(z, lane), m, tau0, out(o, lane), ws,
                            lane);
  });
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace ncsde::models
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "solvers/hwy_targets.hpp"

namespace ncsde::models {
namespace {

// The compiled targets, best first (Highway numbers its targets from the best: the lowest bit).
#define NCSDE_LANE_TARGET(T)                                                                     \
  lane_kernel_table{HWY_##T,           &N_##T::b_relu,    &N_##T::b_att,       &N_##T::b_causal, \
                    &N_##T::noise_lin, &N_##T::noise_att, &N_##T::noise_causal},
constexpr lane_kernel_table target_kernels[] = {NCSDE_HWY_TARGETS(NCSDE_LANE_TARGET)};
#undef NCSDE_LANE_TARGET

/// The table of the calling thread's lane target (ncsde::detail::lane_target: the widest the CPU
/// runs, unless a test chose another), compiled here for the same targets as solvers/lanes.cpp.
const lane_kernel_table& kernels() {
  const std::int64_t target = ncsde::detail::lane_target();
  for (const lane_kernel_table& k : target_kernels)
    if (k.target == target) return k;
  NCSDE_ASSERT(false, "lane kernels: not compiled for the lane target");
  return target_kernels[0];
}

/// Sizes the outputs and the workspace the kernels write.
void size_for(int m, lane_block& out, std::initializer_list<lane_block*> work) {
  const Eigen::Index mm = static_cast<Eigen::Index>(m) * m;
  out.resize(batch_width, mm);
  for (lane_block* w : work) w->resize(batch_width, mm);
}

}  // namespace

void b_relu_lanes(const lane_block& v, int m, double c_plus, double c_minus, lane_block& out) {
  assert_lanes(v, m, "b_relu_lanes: V must be m×m per lane");
  NCSDE_ASSERT(&out != &v, "b_relu_lanes: out must not be V");
  const double scale = (c_plus - c_minus) * (c_plus - c_minus) / (2.0 * std::numbers::pi);
  out.resize(batch_width, v.cols());
  kernels().b_relu(columns_of(v), m, scale, out);
}

void b_att_lanes(const lane_block& v, int m, double tau0, lane_block& out,
                 lane_coefficient_workspace& ws) {
  assert_lanes(v, m, "b_att_lanes: V must be m×m per lane");
  out.resize(batch_width, v.cols());
  for (lane_block* w : {&ws.c0, &ws.c1, &ws.c2}) w->resize(batch_width, m);
  kernels().b_att(columns_of(v), m, tau0, out, ws);
}

void b_causal_lanes(const lane_block& v, int m, double tau0, lane_block& out,
                    lane_coefficient_workspace& ws) {
  assert_lanes(v, m, "b_causal_lanes: V must be m×m per lane");
  size_for(m, out, {&ws.m0, &ws.m1, &ws.m2, &ws.m3, &ws.m4, &ws.m5});
  kernels().b_causal(columns_of(v), m, tau0, out, ws);
}

void noise_lin_lanes(const lane_block& l, bool lower, const Eigen::Ref<const lane_block>& g, int m,
                     lane_block& out, lane_coefficient_workspace& ws) {
  assert_lanes(l, m, "noise_lin_lanes: L must be m×m per lane");
  NCSDE_ASSERT(g.cols() == l.cols(), "noise_lin_lanes: G must be m×m per lane");
  size_for(m, out, {&ws.m0, &ws.m1});
  kernels().noise_lin(columns_of(l), lower, columns_of(g), m, out, ws);
}

void noise_att_lanes(const lane_block& l, bool lower, const lane_block& v,
                     const Eigen::Ref<const lane_block>& z, int m, double tau0, lane_block& out,
                     lane_coefficient_workspace& ws) {
  assert_lanes(l, m, "noise_att_lanes: L must be m×m per lane");
  NCSDE_ASSERT(z.cols() == l.cols() && v.cols() == l.cols(),
               "noise_att_lanes: L, V and Z must be m×m per lane");
  size_for(m, out, {&ws.m0, &ws.m1, &ws.m2, &ws.m3});
  kernels().noise_att(columns_of(l), lower, columns_of(v), columns_of(z), m, tau0, out, ws);
}

void noise_causal_lanes(const lane_block& l, bool lower, const lane_block& v,
                        const Eigen::Ref<const lane_block>& z, int m, double tau0, lane_block& out,
                        lane_coefficient_workspace& ws) {
  assert_lanes(l, m, "noise_causal_lanes: L must be m×m per lane");
  NCSDE_ASSERT(z.cols() == l.cols() && v.cols() == l.cols(),
               "noise_causal_lanes: L, V and Z must be m×m per lane");
  size_for(m, out, {&ws.m0, &ws.m1, &ws.m2});
  kernels().noise_causal(columns_of(l), lower, columns_of(v), columns_of(z), m, tau0, out, ws);
}

}  // namespace ncsde::models
#endif  // HWY_ONCE
