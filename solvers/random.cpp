// Counter-based normals and uniforms: Philox4x32-10 words, 53-bit uniforms, Box–Muller with our own
// log and sincos kernels, written once over a "lane pack". The plain C++ scalar pack is the
// reference; the SIMD pack is Google Highway's, compiled for every instruction set Highway targets
// (SSSE3, SSE4, AVX2, AVX-512, NEON, …, and its portable EMU128), and the widest the CPU runs is
// chosen at run time. Built with -ffp-contract=off (CMakeLists.txt): a fused multiply-add in one
// path and not in another would change the last bit, and the paths must agree bit for bit
// (random_detail.hpp).
//
// Highway compiles this file once per target: foreach_target.h includes it again for each one,
// with HWY_NAMESPACE naming that target's namespace. The code outside the per-target section is
// compiled once (the NCSDE_RANDOM_COMMON guard, and HWY_ONCE for the last pass).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "solvers/random.cpp"
// The kernels take the lane count at compile time; scalable vectors (SVE, RVV) have it at run time
// only, so those targets are left out (their CPUs run the NEON or EMU128 code, with the same bits).
// AVX3_DL is left out as in lanes.cpp: Highway 1.0 makes it the static target of a build for a CPU
// that has it (-march=native on Ice Lake and later, Zen 4) without making it attainable, which
// stops the build ("best baseline should be included in dynamic targets"); its CPUs run AVX3.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS \
  (HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128 | HWY_RVV | HWY_AVX3_DL)
#endif
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#ifndef NCSDE_RANDOM_COMMON
#define NCSDE_RANDOM_COMMON

#include <Random123/philox.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ncsde/error.hpp"
#include "ncsde/random.hpp"
#include "random_detail.hpp"
#include "solvers/device/random_kernels.hpp"

namespace ncsde {
namespace {

// ---- the address of a block -------------------------------------------------------------------

// The address of a block, the scalar pack and the kernels written once over packs (block_key,
// make_block_key, scalar_pack, log_kernel, sincos_kernel, philox_uniforms, box_muller, fill_block)
// are shared with the CUDA backend: solvers/device/random_kernels.hpp.
using namespace device;  // NOLINT: the shared kernels, by their names

/// The keys of up to lane_capacity streams, one lane per stream, as 64-bit words (a Philox4x32 word
/// in the low half): what the lane kernels load as packs. Only the first round's key words are
/// kept; the kernel adds the Weyl increments round by round.
constexpr int lane_capacity = lane_stream_capacity;
struct lane_keys {
  alignas(64) std::uint64_t k0[lane_capacity];
  alignas(64) std::uint64_t k1[lane_capacity];
  alignas(64) std::uint64_t h1[lane_capacity];
  alignas(64) std::uint64_t c2[lane_capacity];
  alignas(64) std::uint64_t c3[lane_capacity];
};

/// The addresses of up to lane_capacity streams: stream t is (seed, path[t]) at block (domain,
/// i0[t], i1). Lanes from `streams` up to lane_capacity are padding (path and i0 zero): the key
/// kernels compute them whole packs at a time, and their numbers are never stored.
struct lane_addresses {
  std::uint64_t seed;
  alignas(64) std::uint64_t path[lane_capacity];
  alignas(64) std::uint64_t i0[lane_capacity];
  std::uint64_t i1;
  std::uint64_t domain;
  int streams;
};

lane_addresses make_lane_addresses(std::uint64_t seed, const std::uint64_t* paths,
                                   const std::uint64_t* i0s, std::uint64_t i0, int streams,
                                   random_domain domain, std::uint64_t i1) {
  lane_addresses a{};
  a.seed = seed;
  a.i1 = i1;
  a.domain = static_cast<std::uint64_t>(domain);
  a.streams = streams;
  for (int t = 0; t < streams; ++t) {
    a.path[t] = paths[t];
    a.i0[t] = i0s != nullptr ? i0s[t] : i0;
  }
  return a;
}

/// Stores block (h0, h1, h2) of Philox4x64 as stream t's lane keys: h0 = the Philox4x32 key (lo,
/// hi), h1 the counter words xored with the pair, h2 = (c2, c3).
inline void store_lane_key(lane_keys& keys, int t, std::uint64_t h0, std::uint64_t h1,
                           std::uint64_t h2) {
  keys.k0[t] = h0 & 0xFFFFFFFFu;
  keys.k1[t] = h0 >> 32;
  keys.h1[t] = h1;
  keys.c2[t] = h2 & 0xFFFFFFFFu;
  keys.c3[t] = h2 >> 32;
}

/// make_block_key's words for every stream of `a` with Random123's Philox4x64 (the reference; the
/// SIMD paths compute the same words side by side: lane_keys_kernel). Padding lanes get zero keys
/// (their numbers are computed by the lane kernels, never stored).
void make_lane_keys_scalar(const lane_addresses& a, lane_keys& keys) {
  using philox = r123::Philox4x64;
  auto block = [&](int t) { return block_words(a.seed, a.path[t], a.domain, a.i0[t], a.i1); };
  int t = 0;
  // Four independent Philox4x64-10 calls in one expression: inlined, their ten dependent rounds
  // overlap (about twice the throughput of one call after the other).
  for (; t + 4 <= a.streams; t += 4) {
    const philox::ctr_type h0 = block(t), h1 = block(t + 1), h2 = block(t + 2), h3 = block(t + 3);
    store_lane_key(keys, t, h0[0], h0[1], h0[2]);
    store_lane_key(keys, t + 1, h1[0], h1[1], h1[2]);
    store_lane_key(keys, t + 2, h2[0], h2[1], h2[2]);
    store_lane_key(keys, t + 3, h3[0], h3[1], h3[2]);
  }
  for (; t < a.streams; ++t) {
    const philox::ctr_type h = block(t);
    store_lane_key(keys, t, h[0], h[1], h[2]);
  }
  for (; t < lane_capacity; ++t) store_lane_key(keys, t, 0, 0, 0);
}

/// (lo, hi) of the 128-bit product a·m of 64-bit words, for a constant m = mh·2^32 + ml given as
/// its halves: four 32×32 → 64 products (mul32), as a pack has no 64×64 multiply on most targets.
/// With a = ah·2^32 + al: a·m = al·ml + (al·mh + ah·ml)·2^32 + ah·mh·2^64; the column of 2^32 is
/// summed in two steps that each stay below 2^64 (t = hi(al·ml) + al·mh, w = lo(t) + ah·ml), and
/// the carries of both go to the column of 2^64.
template <class P>
[[gnu::always_inline]] inline void mulhilo64(const typename P::vu& a, const typename P::vu& ml,
                                             const typename P::vu& mh, typename P::vu& lo,
                                             typename P::vu& hi) {
  using vu = typename P::vu;
  const vu low = P::dupu(0xFFFFFFFFu);
  const vu ah = P::template shr<32>(a);
  const vu ll = P::mul32(a, ml);
  const vu t = P::addu(P::template shr<32>(ll), P::mul32(a, mh));
  const vu w = P::addu(P::and_(t, low), P::mul32(ah, ml));
  lo = P::or_(P::and_(ll, low), P::template shl<32>(w));
  hi = P::addu(P::mul32(ah, mh), P::addu(P::template shr<32>(t), P::template shr<32>(w)));
}

/// Philox4x64-10 (Random123's rounds, multipliers and Weyl increments) of the streams in U packs
/// starting at lane `first`, side by side so that their dependent rounds overlap: key (seed,
/// path[t]), counter (0, i0[t], i1, domain). Stores words h0..h2 of each stream as its lane keys.
template <class P, int U>
[[gnu::always_inline]] inline void lane_keys_kernel(const lane_addresses& a, int first,
                                                    lane_keys& keys) {
  using vu = typename P::vu;
  const vu m0l = P::dupu(PHILOX_M4x64_0 & 0xFFFFFFFFu), m0h = P::dupu(PHILOX_M4x64_0 >> 32);
  const vu m1l = P::dupu(PHILOX_M4x64_1 & 0xFFFFFFFFu), m1h = P::dupu(PHILOX_M4x64_1 >> 32);
  vu x0[U], x1[U], x2[U], x3[U], k1[U];
  vu k0 = P::dupu(a.seed);
  for (int u = 0; u < U; ++u) {
    x0[u] = P::dupu(0);
    x1[u] = P::loadu(a.i0 + first + u * P::lanes);
    x2[u] = P::dupu(a.i1);
    x3[u] = P::dupu(a.domain);
    k1[u] = P::loadu(a.path + first + u * P::lanes);
  }
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 = P::addu(k0, P::dupu(PHILOX_W64_0));
      for (int u = 0; u < U; ++u) k1[u] = P::addu(k1[u], P::dupu(PHILOX_W64_1));
    }
    for (int u = 0; u < U; ++u) {
      vu lo0, hi0, lo1, hi1;
      mulhilo64<P>(x0[u], m0l, m0h, lo0, hi0);
      mulhilo64<P>(x2[u], m1l, m1h, lo1, hi1);
      x0[u] = P::xor3(hi1, x1[u], k0);
      x1[u] = lo1;
      x2[u] = P::xor3(hi0, x3[u], k1[u]);
      x3[u] = lo0;
    }
  }
  const vu low = P::dupu(0xFFFFFFFFu);
  for (int u = 0; u < U; ++u) {
    const int t = first + u * P::lanes;
    P::storeu_bits(keys.k0 + t, P::and_(x0[u], low));
    P::storeu_bits(keys.k1 + t, P::template shr<32>(x0[u]));
    P::storeu_bits(keys.h1 + t, x1[u]);
    P::storeu_bits(keys.c2 + t, P::and_(x2[u], low));
    P::storeu_bits(keys.c3 + t, P::template shr<32>(x2[u]));
  }
}

/// The lane keys of every stream of `a` (whole packs: the padding lanes of the last pack too), U
/// packs at a time.
template <class P>
[[gnu::always_inline]] inline void lane_keys_packs(const lane_addresses& a, lane_keys& keys) {
  constexpr int U = 4;
  int t = 0;
  for (; t + U * P::lanes <= a.streams; t += U * P::lanes) lane_keys_kernel<P, U>(a, t, keys);
  for (; t < a.streams; t += P::lanes) lane_keys_kernel<P, 1>(a, t, keys);
}

/// Pairs p, …, p + U − 1 of the streams in lanes [lane, lane + P::lanes): the uniform_pairs rounds
/// with each lane's own key and counter words (lo(h1 ⊕ p), hi(h1 ⊕ p), c2, c3), U pairs side by
/// side so that their dependent rounds overlap, so that every lane gets exactly the numbers its
/// stream's fill_block gives for those pairs.
template <class P, int U, bool Normal>
[[gnu::always_inline]] inline void lane_pairs(const lane_keys& keys, int lane, std::uint64_t p,
                                              typename P::vd (&x)[U], typename P::vd (&y)[U]) {
  using vu = typename P::vu;
  const vu h1 = P::loadu(keys.h1 + lane);
  vu r0[U], r1[U], r2[U], r3[U];
  for (int u = 0; u < U; ++u) {
    const vu c = P::xor_(h1, P::dupu(p + static_cast<std::uint64_t>(u)));
    r0[u] = c;
    r1[u] = P::template shr<32>(c);
    r2[u] = P::loadu(keys.c2 + lane);
    r3[u] = P::loadu(keys.c3 + lane);
  }
  const vu k0[1] = {P::loadu(keys.k0 + lane)}, k1[1] = {P::loadu(keys.k1 + lane)};
  philox_uniforms<P, U, true>(r0, r1, r2, r3, nullptr, k0, k1, x, y);
  if constexpr (Normal) box_muller<P, U>(x, y);
}

/// Pair p of the streams in U packs of lanes, starting at `lane`: lane_pairs with the U packs side
/// by side across streams instead of across pairs (for blocks of few pairs, e.g. one normal per
/// stream).
template <class P, int U, bool Normal>
[[gnu::always_inline]] inline void lane_pairs_across(const lane_keys& keys, int lane,
                                                     std::uint64_t p, typename P::vd (&x)[U],
                                                     typename P::vd (&y)[U]) {
  using vu = typename P::vu;
  vu r0[U], r1[U], r2[U], r3[U], k0[U], k1[U];
  for (int u = 0; u < U; ++u) {
    const int l = lane + u * P::lanes;
    const vu c = P::xor_(P::loadu(keys.h1 + l), P::dupu(p));
    r0[u] = c;
    r1[u] = P::template shr<32>(c);
    r2[u] = P::loadu(keys.c2 + l);
    r3[u] = P::loadu(keys.c3 + l);
    k0[u] = P::loadu(keys.k0 + l);
    k1[u] = P::loadu(keys.k1 + l);
  }
  philox_uniforms<P, U, true, U>(r0, r1, r2, r3, nullptr, k0, k1, x, y);
  if constexpr (Normal) box_muller<P, U>(x, y);
}

/// Stores pair p's numbers (x: entry 2p, y: entry 2p + 1) of lanes [lane, lane + P::lanes) cut to
/// `lanes` and to `count` entries.
template <class P>
[[gnu::always_inline]] inline void store_lane_pair(double* out, std::ptrdiff_t j, int lane,
                                                   int lanes, std::ptrdiff_t count,
                                                   std::ptrdiff_t stride, const typename P::vd& x,
                                                   const typename P::vd& y) {
  if (lane + P::lanes <= lanes) {
    P::storeu(out + j * stride + lane, x);
    if (j + 1 < count) P::storeu(out + (j + 1) * stride + lane, y);
    return;
  }
  alignas(64) double bx[lane_capacity], by[lane_capacity];
  P::storeu(bx, x);
  P::storeu(by, y);
  std::copy(bx, bx + (lanes - lane), out + j * stride + lane);
  if (j + 1 < count) std::copy(by, by + (lanes - lane), out + (j + 1) * stride + lane);
}

/// Entries [0, count) of the streams in `lanes` lanes: out[j·stride + l] is entry j of lane l.
/// Blocks of at least U pairs go U pairs of one pack of streams at a time; shorter blocks U packs
/// of streams at a time (the same numbers either way: only which computations run side by side
/// differs).
template <class P, bool Normal>
[[gnu::always_inline]] inline void fill_lanes(const lane_keys& keys, int lanes, double* out,
                                              std::ptrdiff_t count, std::ptrdiff_t stride) {
  constexpr int U = 4;
  const std::ptrdiff_t pairs = (count + 1) / 2;
  if (pairs < U) {
    for (std::ptrdiff_t q = 0; q < pairs; ++q) {
      const auto p = static_cast<std::uint64_t>(q);
      int lane = 0;
      for (; lane + U * P::lanes <= lanes; lane += U * P::lanes) {
        typename P::vd x[U], y[U];
        lane_pairs_across<P, U, Normal>(keys, lane, p, x, y);
        for (int u = 0; u < U; ++u)
          store_lane_pair<P>(out, 2 * q, lane + u * P::lanes, lanes, count, stride, x[u], y[u]);
      }
      for (; lane < lanes; lane += P::lanes) {
        typename P::vd x[1], y[1];
        lane_pairs<P, 1, Normal>(keys, lane, p, x, y);
        store_lane_pair<P>(out, 2 * q, lane, lanes, count, stride, x[0], y[0]);
      }
    }
    return;
  }
  for (int lane = 0; lane < lanes; lane += P::lanes) {
    std::ptrdiff_t q = 0;
    for (; q + U <= pairs; q += U) {
      typename P::vd x[U], y[U];
      lane_pairs<P, U, Normal>(keys, lane, static_cast<std::uint64_t>(q), x, y);
      for (int u = 0; u < U; ++u)
        store_lane_pair<P>(out, 2 * (q + u), lane, lanes, count, stride, x[u], y[u]);
    }
    for (; q < pairs; ++q) {
      typename P::vd x[1], y[1];
      lane_pairs<P, 1, Normal>(keys, lane, static_cast<std::uint64_t>(q), x, y);
      store_lane_pair<P>(out, 2 * q, lane, lanes, count, stride, x[0], y[0]);
    }
  }
}

/// The entry points of one instruction-set path.
using fill_fn = void (*)(const block_key& key, double* out, std::ptrdiff_t count);
/// The normals of every stream of `a`: out[j·stride + t] is entry j of stream t.
using fill_lanes_fn = void (*)(const lane_addresses& a, double* out, std::ptrdiff_t count,
                               std::ptrdiff_t stride);
struct path_kernels {
  std::int64_t target = 0;  ///< 0: the scalar reference; otherwise a Highway target bit
  fill_fn normals = nullptr;
  fill_fn uniforms = nullptr;
  fill_lanes_fn lane_normals = nullptr;
};

template <bool Normal>
void fill_scalar(const block_key& key, double* out, std::ptrdiff_t count) {
  fill_block<scalar_pack, Normal>(key, out, count);
}
void lane_normals_scalar(const lane_addresses& a, double* out, std::ptrdiff_t count,
                         std::ptrdiff_t stride) {
  lane_keys keys;
  make_lane_keys_scalar(a, keys);
  fill_lanes<scalar_pack, true>(keys, a.streams, out, count, stride);
}

}  // namespace
}  // namespace ncsde

#endif  // NCSDE_RANDOM_COMMON

// ---- the Highway pack, once per target -------------------------------------------------------------

HWY_BEFORE_NAMESPACE();
namespace ncsde {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

/// The lane pack on this target's full vectors: each operation one Highway op (exact integer and
/// bit operations, correctly rounded add, sub, mul, div and sqrt, conversions of exact integers).
struct hwy_pack {
  using D = hn::ScalableTag<double>;
  using DU = hn::RebindToUnsigned<D>;
  using DI = hn::RebindToSigned<D>;
  using DU32 = hn::Repartition<std::uint32_t, DU>;
  static constexpr int lanes = static_cast<int>(hn::MaxLanes(D()));
  static_assert(lanes >= 1 && 2 * lanes <= 16, "the lane kernels' buffers hold 16 numbers");
  struct vd {
    hn::Vec<D> v;
  };
  struct vu {
    hn::Vec<DU> v;
  };
  static vd dup(double x) { return {hn::Set(D(), x)}; }
  static vu dupu(std::uint64_t x) { return {hn::Set(DU(), x)}; }
  static vu loadu(const std::uint64_t* p) { return {hn::LoadU(DU(), p)}; }
  static void storeu(double* out, vd a) { hn::StoreU(a.v, D(), out); }
  static void storeu_bits(std::uint64_t* out, vu a) { hn::StoreU(a.v, DU(), out); }
  /// first, first + 1, …: the constant 0, 1, … (folded at compile time) plus first, not Iota(first),
  /// which goes through memory on some targets.
  static vu iota(std::uint64_t first) {
    return {hn::Add(hn::Set(DU(), first), hn::Iota(DU(), std::uint64_t{0}))};
  }
  static vu xor_(vu a, vu b) { return {hn::Xor(a.v, b.v)}; }
  static vu xor3(vu a, vu b, vu c) { return {hn::Xor3(a.v, b.v, c.v)}; }
  static vu and_(vu a, vu b) { return {hn::And(a.v, b.v)}; }
  static vu or_(vu a, vu b) { return {hn::Or(a.v, b.v)}; }
  static vu addu(vu a, vu b) { return {hn::Add(a.v, b.v)}; }
  template <int n>
  static vu shl(vu a) {
    return {hn::ShiftLeft<n>(a.v)};
  }
  template <int n>
  static vu shr(vu a) {
    return {hn::ShiftRight<n>(a.v)};
  }
  /// The low 32-bit halves multiplied into 64 bits (the even 32-bit lanes, little-endian).
  static vu mul32(vu a, vu b) {
#if HWY_TARGET == HWY_SCALAR
    // One 64-bit lane holds no pair of 32-bit lanes to MulEven: the scalar product instead.
    constexpr std::uint64_t low = 0xFFFFFFFFu;
    return {hn::Set(DU(), (hn::GetLane(a.v) & low) * (hn::GetLane(b.v) & low))};
#else
    return {hn::MulEven(hn::BitCast(DU32(), a.v), hn::BitCast(DU32(), b.v))};
#endif
  }
  static vd add(vd a, vd b) { return {hn::Add(a.v, b.v)}; }
  static vd sub(vd a, vd b) { return {hn::Sub(a.v, b.v)}; }
  static vd mul(vd a, vd b) { return {hn::Mul(a.v, b.v)}; }
  static vd div(vd a, vd b) { return {hn::Div(a.v, b.v)}; }
  static vd sqrt(vd a) { return {hn::Sqrt(a.v)}; }
  static vd as_double(vu a) { return {hn::BitCast(D(), a.v)}; }
  static vu as_bits(vd a) { return {hn::BitCast(DU(), a.v)}; }
  /// n < 2^52 → n as a double, exactly: 2^52 + n has n as its mantissa bits, and subtracting 2^52
  /// is exact (cheaper than a general 64-bit conversion, which most targets emulate).
  static vd small_to_double(vu n) {
    const hn::Vec<D> shifted = hn::BitCast(D(), hn::Or(n.v, hn::Set(DU(), 0x4330000000000000)));
    return {hn::Sub(shifted, hn::Set(D(), 0x1p52))};
  }
  /// n < 2^53 → (n + 1)·2^-53, exactly.
  static vd unit53(vu n) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
    // AVX-512 converts 64-bit integers natively; n + 1 ≤ 2^53 converts exactly.
    const hn::Vec<DI> n1 = hn::BitCast(DI(), hn::Add(n.v, hn::Set(DU(), 1)));
    return {hn::Mul(hn::ConvertTo(D(), n1), hn::Set(D(), 0x1p-53))};
#else
    // n = hi·2^32 + lo with hi < 2^21: both halves convert exactly, the sum and + 1 are exact
    // (≤ 2^53).
    const vd hi = small_to_double({hn::ShiftRight<32>(n.v)});
    const vd lo = small_to_double({hn::And(n.v, hn::Set(DU(), 0xFFFFFFFF))});
    const hn::Vec<D> sum = hn::Add(hn::Mul(hi.v, hn::Set(D(), 0x1p32)), lo.v);
    return {hn::Mul(hn::Add(sum, hn::Set(D(), 1.0)), hn::Set(D(), 0x1p-53))};
#endif
  }
  /// Lanes whose k is odd take a, the others b: 0 − (k & 1) is all ones in the odd lanes and zero
  /// in the others, a mask on every target (plain 64-bit integer operations, no comparison, which
  /// some targets emulate for 64-bit lanes).
  static vd select_odd(vu k, vd a, vd b) {
    const hn::Vec<DU> odd = hn::Sub(hn::Zero(DU()), hn::And(k.v, hn::Set(DU(), 1)));
    return {hn::IfThenElse(hn::MaskFromVec(hn::BitCast(D(), odd)), a.v, b.v)};
  }
  /// out[2i] = even[i], out[2i + 1] = odd[i].
  static void store_pairs(double* out, vd even, vd odd) {
    hn::StoreInterleaved2(even.v, odd.v, D(), out);
  }
};

template <bool Normal>
void fill(const block_key& key, double* out, std::ptrdiff_t count) {
  fill_block<hwy_pack, Normal>(key, out, count);
}
void fill_lane_normals(const lane_addresses& a, double* out, std::ptrdiff_t count,
                       std::ptrdiff_t stride) {
  lane_keys keys;
  lane_keys_packs<hwy_pack>(a, keys);
  fill_lanes<hwy_pack, true>(keys, a.streams, out, count, stride);
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace ncsde
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "solvers/hwy_targets.hpp"

namespace ncsde {
namespace {

// ---- dispatch ---------------------------------------------------------------------------------

constexpr path_kernels scalar_kernels{0, &fill_scalar<true>, &fill_scalar<false>,
                                      &lane_normals_scalar};

// The Highway targets compiled into this file (HWY_TARGETS), each target's entry points: a constant
// table, so that it is complete before any static initialiser runs (the list: hwy_targets.hpp).
#define NCSDE_RANDOM_TARGET(T) \
  path_kernels{HWY_##T, &N_##T::fill<true>, &N_##T::fill<false>, &N_##T::fill_lane_normals},
constexpr path_kernels target_kernels[] = {NCSDE_HWY_TARGETS(NCSDE_RANDOM_TARGET)};
#undef NCSDE_RANDOM_TARGET

/// The kernels of `path`, or nullptr when this file was not compiled for it.
const path_kernels* compiled(detail::simd_path path) {
  if (path.target == 0) return &scalar_kernels;
  for (const path_kernels& k : target_kernels)
    if (k.target == path.target) return &k;
  return nullptr;
}

bool cpu_supports(detail::simd_path path) {
  if (compiled(path) == nullptr) return false;
  return path.target == 0 || (hwy::SupportedTargets() & path.target) != 0;
}

/// The best compiled target this CPU runs (Highway numbers its targets from the best: the lowest
/// bit); the scalar reference when there is none.
const path_kernels& detect_fastest() {
  const path_kernels* best = &scalar_kernels;
  for (const path_kernels& k : target_kernels) {
    if (!cpu_supports({k.target})) continue;
    if (best->target == 0 || k.target < best->target) best = &k;
  }
  return *best;
}

const path_kernels& fastest() {
  static const path_kernels& k = detect_fastest();
  return k;
}

void check_lanes(const char* where, const char* name, int lanes, std::ptrdiff_t stride) {
  if (lanes < 1 || lanes > lane_capacity)
    throw_invalid_argument(where, name, lanes, "in [1, 32] (lane_stream_capacity)");
  if (stride < lanes) throw_invalid_argument(where, "stride", stride, std::string(">= ") + name);
}

const path_kernels& checked_path(const char* where, detail::simd_path path) {
  if (!cpu_supports(path))
    throw_invalid_argument(where, "path", detail::simd_path_name(path),
                           "compiled into the library and supported by this CPU");
  return *compiled(path);
}

}  // namespace

void random_stream::normals(random_domain domain, std::uint64_t i0, std::uint64_t i1, double* out,
                            std::ptrdiff_t count) const {
  if (count <= 0) return;
  fastest().normals(make_block_key(m_seed, m_path, static_cast<std::uint64_t>(domain), i0, i1), out,
                    count);
}

void random_stream::normals(random_domain domain, std::uint64_t i0, std::uint64_t i1,
                            Eigen::Ref<Eigen::VectorXd> out) const {
  normals(domain, i0, i1, out.data(), out.size());
}

void random_stream::uniforms(random_domain domain, std::uint64_t i0, std::uint64_t i1, double* out,
                             std::ptrdiff_t count) const {
  if (count <= 0) return;
  fastest().uniforms(make_block_key(m_seed, m_path, static_cast<std::uint64_t>(domain), i0, i1),
                     out, count);
}

void lane_normals(std::uint64_t seed, const std::uint64_t* paths, int lanes, random_domain domain,
                  std::uint64_t i0, std::uint64_t i1, double* out, std::ptrdiff_t count,
                  std::ptrdiff_t stride) {
  check_lanes("lane_normals", "lanes", lanes, stride);
  if (count <= 0) return;
  fastest().lane_normals(make_lane_addresses(seed, paths, nullptr, i0, lanes, domain, i1), out,
                         count, stride);
}

void lane_normals_at(std::uint64_t seed, const std::uint64_t* paths, const std::uint64_t* i0s,
                     int streams, random_domain domain, std::uint64_t i1, double* out,
                     std::ptrdiff_t count, std::ptrdiff_t stride) {
  check_lanes("lane_normals_at", "streams", streams, stride);
  if (count <= 0) return;
  fastest().lane_normals(make_lane_addresses(seed, paths, i0s, 0, streams, domain, i1), out, count,
                         stride);
}

namespace detail {

std::vector<simd_path> compiled_simd_paths() {
  std::vector<simd_path> paths{scalar_path};
  for (const path_kernels& k : target_kernels) paths.push_back({k.target});
  std::sort(paths.begin() + 1, paths.end(),
            [](simd_path a, simd_path b) { return a.target < b.target; });
  return paths;
}

std::string simd_path_name(simd_path path) {
  return path.target == 0 ? std::string("scalar") : std::string(hwy::TargetName(path.target));
}

bool simd_path_supported(simd_path path) { return cpu_supports(path); }

simd_path fastest_simd_path() { return {fastest().target}; }

void normals_on(simd_path path, const random_stream& stream, random_domain domain, std::uint64_t i0,
                std::uint64_t i1, double* out, std::ptrdiff_t count) {
  const path_kernels& k = checked_path("detail::normals_on", path);
  if (count <= 0) return;
  k.normals(
      make_block_key(stream.seed(), stream.path(), static_cast<std::uint64_t>(domain), i0, i1), out,
      count);
}

void uniforms_on(simd_path path, const random_stream& stream, random_domain domain,
                 std::uint64_t i0, std::uint64_t i1, double* out, std::ptrdiff_t count) {
  const path_kernels& k = checked_path("detail::uniforms_on", path);
  if (count <= 0) return;
  k.uniforms(
      make_block_key(stream.seed(), stream.path(), static_cast<std::uint64_t>(domain), i0, i1), out,
      count);
}

void lane_normals_on(simd_path path, std::uint64_t seed, const std::uint64_t* paths,
                     const std::uint64_t* i0s, int streams, random_domain domain, std::uint64_t i1,
                     double* out, std::ptrdiff_t count, std::ptrdiff_t stride) {
  const path_kernels& k = checked_path("detail::lane_normals_on", path);
  check_lanes("detail::lane_normals_on", "streams", streams, stride);
  if (count <= 0) return;
  k.lane_normals(make_lane_addresses(seed, paths, i0s, 0, streams, domain, i1), out, count, stride);
}

double log_unit(double u) { return log_kernel<scalar_pack>({u}).v; }

void sincos_turns(double t, double& sin_out, double& cos_out) {
  scalar_pack::vd s, c;
  sincos_kernel<scalar_pack>({t}, s, c);
  sin_out = s.v;
  cos_out = c.v;
}

}  // namespace detail
}  // namespace ncsde

#endif  // HWY_ONCE
