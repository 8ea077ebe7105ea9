// The lane-group linear algebra of lanes.hpp (lane_product, lane_product_transposed,
// lane_cholesky) and the batched engine's step arithmetic (detail::lane_combine_columns) on Google
// Highway's vectors: solvers/lane_simd-inl.h compiled for every target and
// the widest one the CPU runs chosen at run time, as in random.cpp. Built with -ffp-contract=off:
// the same bits on every target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "solvers/lanes.cpp"
// The targets of lib/models/lane_kernels.cpp (see there).
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS \
  (HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128 | HWY_RVV | HWY_AVX3_DL | HWY_SSSE3)
#endif
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "solvers/lane_simd-inl.h"

#ifndef NCSDE_LANES_COMMON
#define NCSDE_LANES_COMMON

#include <cstdint>
#include <string>
#include <vector>

#include "ncsde/concepts.hpp"
#include "ncsde/dense_kernels.hpp"
#include "ncsde/error.hpp"
#include "ncsde/lanes.hpp"

namespace ncsde {
namespace {

struct lanes_table {
  std::int64_t target;
  void (*product)(const double* l, const double* x, Eigen::Index x_stride, int m, bool lower,
                  double* out, bool transposed);
  void (*cholesky)(const double* v, int lanes, int m, double* l, bool* ok);
  void (*combine)(const detail::lane_combination_args& a);
  void (*matrix_product)(const double* a, const double* b, Eigen::Index bk, Eigen::Index bj, int m,
                         bool row_lower, bool col_lower, double* out);
  bool (*matrix_cholesky)(const double* v, int m, double* l);
  bool (*all_finite)(const double* x, Eigen::Index n);
};

}  // namespace
}  // namespace ncsde

#endif  // NCSDE_LANES_COMMON

HWY_BEFORE_NAMESPACE();
namespace ncsde {
namespace HWY_NAMESPACE {
namespace {

using detail::lane_combination_args;
using lane_simd::chunk;
using lane_simd::D;
using lane_simd::lanes_in;
using lane_simd::lanes_out;
using lane_simd::V;
namespace hn = hwy::HWY_NAMESPACE;
static_assert(chunk >= 1 && batch_width % chunk == 0, "a lane group is a whole number of vectors");

/// out = L X or, with `transposed`, out = X Lᵀ (x: the first operand then), for batch_width lanes.
void product(const double* l, const double* x, Eigen::Index x_stride, int m, bool lower,
             double* out, bool transposed) {
  with_fixed_size(m, [&]<int M>() {
    for (int o = 0; o < batch_width; o += chunk) {
      const lanes_in lo{l + o, batch_width}, xo{x + o, x_stride};
      const lanes_out oo{out + o, batch_width};
      if (transposed)
        lane_simd::product_transposed<M>(xo, lo, m, lower, oo);
      else
        lane_simd::product<M>(lo, xo, m, lower, oo);
    }
  });
}

/// Coordinate k of a chunk of lanes: v + (((t_0 + t_1) + …)), from the left.
HWY_INLINE V combination_entry(const lane_combination_args& a, int o, Eigen::Index k) {
  const Eigen::Index at_k = o + k * a.lanes;
  auto term = [&](int i) {
    const detail::lane_term& t = a.terms[static_cast<std::size_t>(i)];
    const V x = hn::LoadU(D(), t.x + at_k);
    return t.scaled ? hn::Mul(hn::Set(D(), t.scale), x) : x;
  };
  V sum = term(0);
  for (int i = 1; i < a.count; ++i) sum = hn::Add(sum, term(i));
  if (a.v == nullptr) return sum;
  return hn::Add(hn::LoadU(D(), a.v + at_k), sum);
}

/// detail::lane_combine_columns: chunk by chunk of lanes, each column formed, symmetrised (pairs
/// (a, b), a > b, after the diagonal entry of column b, in increasing a, as symmetrize_measured)
/// and measured once.
void combine(const lane_combination_args& a) {
  const V half = hn::Set(D(), 0.5);
  for (int o = 0; o < a.lanes; o += chunk) {
    V asymmetry = hn::Zero(D()), nonfinite = hn::Zero(D()), size = hn::Zero(D());
    auto measure = [&](V x) {
      nonfinite = hn::Add(nonfinite, hn::Sub(x, x));  // 0 for finite x, NaN otherwise
      size = hn::Max(size, hn::Abs(x));               // exact for finite values
    };
    auto store = [&](Eigen::Index k, V x) { hn::StoreU(x, D(), a.out + o + k * a.lanes); };
    if (a.m > 0) {
      const int m = a.m;
      for (int b = 0; b < m; ++b) {
        const Eigen::Index bb = lane_simd::at(b, b, m);
        V d = combination_entry(a, o, bb);
        d = hn::Mul(half, hn::Add(d, d));  // as symmetrize(): d + d may overflow to inf
        store(bb, d);
        measure(d);
        for (int r = b + 1; r < m; ++r) {
          const Eigen::Index rb = lane_simd::at(r, b, m), br = lane_simd::at(b, r, m);
          const V x_rb = combination_entry(a, o, rb), x_br = combination_entry(a, o, br);
          const V gap = hn::Abs(hn::Sub(x_rb, x_br));
          asymmetry = hn::IfThenElse(hn::Le(gap, asymmetry), asymmetry, gap);  // keeps a NaN gap
          const V mean = hn::Mul(half, hn::Add(x_rb, x_br));
          store(rb, mean);
          store(br, mean);
          measure(mean);
          measure(mean);
        }
      }
    } else {
      for (Eigen::Index k = 0; k < a.k; ++k) {
        const V x = combination_entry(a, o, k);
        store(k, x);
        measure(x);
      }
    }
    hn::StoreU(asymmetry, D(), a.asymmetry + o);
    hn::StoreU(nonfinite, D(), a.nonfinite + o);
    hn::StoreU(size, D(), a.size + o);
  }
}

/// The factors of `lanes` lanes (a multiple of batch_width) of column stride `lanes`.
void cholesky(const double* v, int lanes, int m, double* l, bool* ok) {
  with_fixed_size(m, [&]<int M>() {
    HWY_ALIGN double good[chunk];
    for (int o = 0; o < lanes; o += chunk) {
      lane_simd::cholesky<M>(lanes_in{v + o, lanes}, m, lanes_out{l + o, lanes}, good);
      for (int i = 0; i < chunk; ++i) ok[o + i] = good[i] != 0.0;
    }
  });
}

/// detail::matrix_product and matrix_product_transposed (lane_simd::matrix_product).
void matrix_product(const double* a, const double* b, Eigen::Index bk, Eigen::Index bj, int m,
                    bool row_lower, bool col_lower, double* out) {
  with_fixed_size(m, [&]<int M>() {
    lane_simd::matrix_product<M>(a, b, bk, bj, m, row_lower, col_lower, out);
  });
}

/// detail::matrix_cholesky.
bool matrix_cholesky(const double* v, int m, double* l) {
  bool ok = false;
  with_fixed_size(m, [&]<int M>() { ok = lane_simd::matrix_cholesky<M>(v, m, l); });
  return ok;
}

/// detail::all_finite: Σ (x_i − x_i) over two vectors of accumulators is 0 when every x_i is
/// finite and NaN otherwise (∞ − ∞ and NaN − NaN are NaN, and NaN stays NaN in a sum).
bool all_finite(const double* x, Eigen::Index n) {
  const D d;
  const auto w = static_cast<Eigen::Index>(chunk);
  V s0 = hn::Zero(d), s1 = hn::Zero(d);
  Eigen::Index i = 0;
  for (; i + 2 * w <= n; i += 2 * w) {
    const V a = hn::LoadU(d, x + i), b = hn::LoadU(d, x + i + w);
    s0 = hn::Add(s0, hn::Sub(a, a));
    s1 = hn::Add(s1, hn::Sub(b, b));
  }
  double tail = 0.0;
  for (; i < n; ++i) tail += x[i] - x[i];
  return hn::AllTrue(d, hn::Eq(hn::Add(s0, s1), hn::Zero(d))) && tail == 0.0;
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace ncsde
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "solvers/hwy_targets.hpp"

namespace ncsde {
namespace {

#define NCSDE_LANES_TARGET(T)                                                     \
  lanes_table{HWY_##T,           &N_##T::product,        &N_##T::cholesky,        \
              &N_##T::combine,   &N_##T::matrix_product, &N_##T::matrix_cholesky, \
              &N_##T::all_finite},
constexpr lanes_table target_tables[] = {NCSDE_HWY_TARGETS(NCSDE_LANES_TARGET)};
#undef NCSDE_LANES_TARGET

const lanes_table& detect_fastest() {
  const std::int64_t supported = hwy::SupportedTargets();
  const lanes_table* best = nullptr;
  for (const lanes_table& t : target_tables)
    if ((supported & t.target) != 0 && (best == nullptr || t.target < best->target)) best = &t;
  NCSDE_ASSERT(best != nullptr, "lanes: no compiled target runs on this CPU");
  return *best;
}

/// The calling thread's choice (detail::lane_target_scope), else nullptr.
thread_local const lanes_table* chosen = nullptr;

const lanes_table& tables() {
  if (chosen != nullptr) return *chosen;
  static const lanes_table& fastest = detect_fastest();
  return fastest;
}

}  // namespace

void lane_product(const lane_block& l, const Eigen::Ref<const lane_block>& x, int m, bool lower,
                  lane_block& out) {
  NCSDE_ASSERT(l.cols() == static_cast<Eigen::Index>(m) * m && x.cols() == l.cols(),
               "lane_product: L and X must be m×m per lane");
  NCSDE_ASSERT(&out != &l && out.data() != x.data(), "lane_product: out must not be L or X");
  out.resize(batch_width, l.cols());
  tables().product(l.data(), x.data(), x.outerStride(), m, lower, out.data(), false);
}

void lane_product_transposed(const Eigen::Ref<const lane_block>& x, const lane_block& l, int m,
                             bool lower, lane_block& out) {
  NCSDE_ASSERT(l.cols() == static_cast<Eigen::Index>(m) * m && x.cols() == l.cols(),
               "lane_product_transposed: L and X must be m×m per lane");
  NCSDE_ASSERT(&out != &l && out.data() != x.data(),
               "lane_product_transposed: out must not be L or X");
  out.resize(batch_width, l.cols());
  tables().product(l.data(), x.data(), x.outerStride(), m, lower, out.data(), true);
}

namespace detail {

void lane_cholesky_columns(const double* v, int lanes, int m, double* l, bool* ok) {
  NCSDE_ASSERT(lanes >= batch_width && lanes % batch_width == 0,
               "lane_cholesky: the lane count must be a multiple of batch_width");
  tables().cholesky(v, lanes, m, l, ok);
}

void lane_combine_columns(const lane_combination_args& a) {
  NCSDE_ASSERT(a.lanes >= batch_width && a.lanes % batch_width == 0,
               "lane_combine_columns: the lane count must be a multiple of batch_width");
  NCSDE_ASSERT(a.m == 0 || a.k == static_cast<Eigen::Index>(a.m) * a.m,
               "lane_combine_columns: a symmetric state must be m×m");
  NCSDE_ASSERT(a.count >= 1 && a.count <= max_lane_terms,
               "lane_combine_columns: 1 to max_lane_terms terms");
  tables().combine(a);
}

void lane_trial_columns(const lane_trial_args& a) {
  lane_combination_args c;
  c.v = a.v;
  c.terms[0] = lane_term{a.drift, a.h, true};
  c.terms[1] = lane_term{a.noise};
  c.count = 2;
  if (a.term != nullptr) c.terms[c.count++] = lane_term{a.term};
  c.lanes = a.lanes;
  c.k = a.k;
  c.m = a.m;
  c.out = a.trial;
  c.asymmetry = a.asymmetry;
  c.nonfinite = a.nonfinite;
  c.size = a.size;
  lane_combine_columns(c);
}

void matrix_product(const double* l, const double* x, int m, bool lower, double* out) {
  // out(:, d) = Σ_c L(:, c) X(c, d): B = X, B(c, d) = x[c + d·m]; `lower` bounds c by the row.
  tables().matrix_product(l, x, 1, m, m, lower, false, out);
}

void matrix_product_transposed(const double* x, const double* l, int m, bool lower, double* out) {
  // out(:, b) = Σ_d X(:, d) L(b, d): B(d, b) = L(b, d) = l[b + d·m]; `lower` bounds d by the column.
  tables().matrix_product(x, l, m, 1, m, false, lower, out);
}

bool matrix_cholesky(const double* v, int m, double* l) {
  return tables().matrix_cholesky(v, m, l);
}

bool all_finite(const double* x, Eigen::Index n) { return tables().all_finite(x, n); }

std::int64_t lane_target() { return tables().target; }

std::vector<std::string> lane_targets() {
  std::vector<std::string> names;
  const std::int64_t supported = hwy::SupportedTargets();
  for (const lanes_table& t : target_tables)
    if ((supported & t.target) != 0) names.push_back(hwy::TargetName(t.target));
  return names;
}

lane_target_scope::lane_target_scope(const std::string& target) : m_previous(chosen) {
  const std::int64_t supported = hwy::SupportedTargets();
  for (const lanes_table& t : target_tables)
    if ((supported & t.target) != 0 && hwy::TargetName(t.target) == target) {
      chosen = &t;
      return;
    }
  throw_invalid_argument("lane_target_scope", "target", target, "one of detail::lane_targets()");
}

lane_target_scope::~lane_target_scope() { chosen = static_cast<const lanes_table*>(m_previous); }

}  // namespace detail
}  // namespace ncsde
#endif  // HWY_ONCE
