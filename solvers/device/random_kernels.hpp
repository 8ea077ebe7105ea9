#pragma once
/// The counter-based generator's kernels (random.hpp documents the layout), written once over a
/// "lane pack" P and compiled for the host and for a CUDA device (host_device.hpp): random.cpp runs
/// them on the plain scalar pack (the reference) and on Google Highway's vectors, and a device
/// thread runs them on the scalar pack, so a path's normals are the same bits on every instruction
/// set and on the GPU (tests/solvers/random_test.cpp checks the host forms against each other,
/// scripts/gpu_check.sh the device against the host).
///
/// A pack type P provides: lanes (doubles per pack), vd and vu (packs of doubles and of 64-bit
/// words), and the operations used below, each exact (integer and bit operations, conversions of
/// exact integers) or one correctly rounded IEEE-754 operation (add, sub, mul, div, sqrt).
#include <Random123/philox.h>

#include <cstddef>
#include <cstdint>

#include "ncsde/host_device.hpp"

namespace ncsde::device {

/// Philox4x32-10 key and counter words of one block (seed, path, domain, i0, i1): the 256 output
/// bits h0..h3 of Philox4x64-10 with key (seed, path) at counter (0, i0, i1, domain) give the key
/// (lo h0, hi h0) and the counter of pair p: (lo(h1 ⊕ p), hi(h1 ⊕ p), lo h2, hi h2). Within a block
/// p ↦ counter is injective; two different blocks meet the same (key, counter) only if their h0 and
/// h2 agree, with probability 2^-128.
struct block_key {
  std::uint32_t k0[10];  ///< round keys: k0 + r·W0 (mod 2^32), r = 0..9
  std::uint32_t k1[10];  ///< round keys: k1 + r·W1 (mod 2^32)
  std::uint64_t h1;      ///< xored with the pair index: counter words 0 and 1
  std::uint32_t c2, c3;  ///< counter words 2 and 3
};

/// Words h0..h3 of block (seed, path, domain, i0, i1): Philox4x64-10 with key (seed, path) at
/// counter (0, i0, i1, domain) (Random123: the reference the SIMD lane keys are checked against).
NCSDE_HOST_DEVICE inline r123::Philox4x64::ctr_type block_words(std::uint64_t seed,
                                                                std::uint64_t path,
                                                                std::uint64_t domain,
                                                                std::uint64_t i0,
                                                                std::uint64_t i1) {
  return r123::Philox4x64()({{0, i0, i1, domain}}, {{seed, path}});
}

NCSDE_HOST_DEVICE inline block_key make_block_key(std::uint64_t seed, std::uint64_t path,
                                                  std::uint64_t domain, std::uint64_t i0,
                                                  std::uint64_t i1) {
  const r123::Philox4x64::ctr_type h = block_words(seed, path, domain, i0, i1);
  block_key b{};
  std::uint32_t k0 = static_cast<std::uint32_t>(h[0]);
  std::uint32_t k1 = static_cast<std::uint32_t>(h[0] >> 32);
  for (int r = 0; r < 10; ++r) {
    b.k0[r] = k0;
    b.k1[r] = k1;
    k0 += 0x9E3779B9u;  // Philox Weyl increments W0, W1 (Random123's PHILOX_W32_0/1)
    k1 += 0xBB67AE85u;
  }
  b.h1 = h[1];
  b.c2 = static_cast<std::uint32_t>(h[2]);
  b.c3 = static_cast<std::uint32_t>(h[2] >> 32);
  return b;
}

// ---- lane packs -------------------------------------------------------------------------------
// A pack holds `lanes` doubles (vd) or 64-bit words (vu). Philox4x32 words live in the low half of
// a 64-bit lane: one unsigned 32×32 → 64 multiply gives hi and lo at once. Upper halves may carry
// garbage between rounds (they never reach a multiply or an output: both read the low half only).

struct scalar_pack {
  static constexpr int lanes = 1;
  struct vd {
    double v;
  };
  struct vu {
    std::uint64_t v;
  };
  NCSDE_KERNEL_INLINE static vd dup(double x) { return {x}; }
  NCSDE_KERNEL_INLINE static vu dupu(std::uint64_t x) { return {x}; }
  NCSDE_KERNEL_INLINE static vu loadu(const std::uint64_t* p) { return {*p}; }
  NCSDE_KERNEL_INLINE static void storeu(double* out, vd a) { *out = a.v; }
  NCSDE_KERNEL_INLINE static void storeu_bits(std::uint64_t* out, vu a) { *out = a.v; }
  NCSDE_KERNEL_INLINE static vu iota(std::uint64_t first) { return {first}; }
  NCSDE_KERNEL_INLINE static vu xor_(vu a, vu b) { return {a.v ^ b.v}; }
  NCSDE_KERNEL_INLINE static vu xor3(vu a, vu b, vu c) { return {a.v ^ b.v ^ c.v}; }
  NCSDE_KERNEL_INLINE static vu and_(vu a, vu b) { return {a.v & b.v}; }
  NCSDE_KERNEL_INLINE static vu or_(vu a, vu b) { return {a.v | b.v}; }
  NCSDE_KERNEL_INLINE static vu addu(vu a, vu b) { return {a.v + b.v}; }
  template <int n>
  NCSDE_KERNEL_INLINE static vu shl(vu a) {
    return {a.v << n};
  }
  template <int n>
  NCSDE_KERNEL_INLINE static vu shr(vu a) {
    return {a.v >> n};
  }
  NCSDE_KERNEL_INLINE static vu mul32(vu a, vu b) {
    return {(a.v & 0xFFFFFFFFu) * (b.v & 0xFFFFFFFFu)};
  }
  NCSDE_KERNEL_INLINE static vd add(vd a, vd b) { return {a.v + b.v}; }
  NCSDE_KERNEL_INLINE static vd sub(vd a, vd b) { return {a.v - b.v}; }
  NCSDE_KERNEL_INLINE static vd mul(vd a, vd b) { return {a.v * b.v}; }
  NCSDE_KERNEL_INLINE static vd div(vd a, vd b) { return {a.v / b.v}; }
  NCSDE_KERNEL_INLINE static vd sqrt(vd a) { return {sqrt_rn(a.v)}; }
  NCSDE_KERNEL_INLINE static vd as_double(vu a) { return {double_of(a.v)}; }
  NCSDE_KERNEL_INLINE static vu as_bits(vd a) { return {bits_of(a.v)}; }
  /// n < 2^53 → (n + 1)·2^-53, exactly.
  NCSDE_KERNEL_INLINE static vd unit53(vu n) { return {static_cast<double>(n.v + 1) * 0x1p-53}; }
  /// n < 2^52 → n as a double, exactly.
  NCSDE_KERNEL_INLINE static vd small_to_double(vu n) { return {static_cast<double>(n.v)}; }
  /// Lanes whose k is odd take a, the others b.
  NCSDE_KERNEL_INLINE static vd select_odd(vu k, vd a, vd b) { return (k.v & 1u) != 0 ? a : b; }
  /// out[2i] = even[i], out[2i + 1] = odd[i].
  NCSDE_KERNEL_INLINE static void store_pairs(double* out, vd even, vd odd) {
    out[0] = even.v;
    out[1] = odd.v;
  }
};

// ---- kernels, written once for every pack -------------------------------------------------------
// Each is [[gnu::always_inline]] so that it is compiled inside the entry point of its instruction
// set (which carries Highway's target attribute); the pack operations are then inlined there too.

/// Polynomial c0 + x·(c1 + x·(… + x·c_last)) (Horner: one fixed order of operations, innermost
/// first; the coefficients are arguments so that device code reads no constant array).
template <class P>
NCSDE_KERNEL_INLINE typename P::vd horner(const typename P::vd&, double c_last) {
  return P::dup(c_last);
}
template <class P, class... C>
NCSDE_KERNEL_INLINE typename P::vd horner(const typename P::vd& x, double c0, double c1,
                                          C... rest) {
  return P::add(P::dup(c0), P::mul(x, horner<P>(x, c1, rest...)));
}

// R(z)/z ≈ Σ_{k≥1} 2z^{k−1}/(2k + 1) on z ∈ [0, ((√2 − 1)/(√2 + 1))²]: Chebyshev fit (mpmath, 60
// digits), error 3.1e-16 in R/z, i.e. below 2^-57 relative to ln m after the factor z·s.
template <class P>
NCSDE_KERNEL_INLINE typename P::vd log_polynomial(const typename P::vd& x) {
  return horner<P>(x, 0x1.5555555555558p-1, 0x1.99999999952e2p-2, 0x1.2492492df14bfp-2,
                   0x1.c71c62e57c0cfp-3, 0x1.7462b4ac51915p-3, 0x1.39fe603f8739ep-3,
                   0x1.2b584c80de001p-3);
}
// ln 2 = ln2_hi + ln2_lo; ln2_hi has 40 significant bits, so e·ln2_hi is exact for |e| < 2^13.
constexpr double ln2_hi = 0x1.62e42fefa4000p-1;
constexpr double ln2_lo = -0x1.8432a1b0e2634p-43;
// sin(2πr)/r and (1 − cos(2πr))/r² as polynomials in w = r² ∈ [0, 1/64]: Chebyshev fits, relative
// errors 2^-58 and 2^-61 (the cosine's error is further scaled by w ≤ 1/64).
template <class P>
NCSDE_KERNEL_INLINE typename P::vd sin_polynomial(const typename P::vd& x) {
  return horner<P>(x, 0x1.921fb54442d18p+2, -0x1.4abbce625be41p+5, 0x1.466bc677587f8p+6,
                   -0x1.32d2cce2e5b19p+6, 0x1.50782fda12d96p+5, -0x1.e30071afc3e59p+3,
                   0x1.e3f38399551bfp+1);
}
template <class P>
NCSDE_KERNEL_INLINE typename P::vd cos_polynomial(const typename P::vd& x) {
  return horner<P>(x, 0x1.3bd3cc9be45dep+4, -0x1.03c1f081b5ac0p+6, 0x1.55d3c7e3cb241p+6,
                   -0x1.e1f5068688d5bp+5, 0x1.a6d1eef479be1p+4, -0x1.f9ce245cada0bp+2,
                   0x1.b2f3eb054afcdp+0);
}

/// ln u for positive normal u (random_detail.hpp, log_unit).
template <class P>
NCSDE_KERNEL_INLINE typename P::vd log_kernel(const typename P::vd& u) {
  using vd = typename P::vd;
  // Adding bits(1) − bits(√2/2) to the bits of u carries into the exponent field exactly when u's
  // mantissa is ≥ √2; the field is then e + 1023 for u = 2^e·m, m ∈ [√2/2, √2), and the low 52
  // bits plus bits(√2/2) are the bits of m.
  constexpr std::uint64_t sqrt_half_bits = 0x3FE6A09E667F3BCD;  // √2/2
  constexpr std::uint64_t offset = 0x3FF0000000000000 - sqrt_half_bits;
  const typename P::vu t = P::addu(P::as_bits(u), P::dupu(offset));
  const vd e = P::sub(P::small_to_double(P::template shr<52>(t)), P::dup(1023.0));
  const vd m =
      P::as_double(P::addu(P::and_(t, P::dupu(0x000FFFFFFFFFFFFF)), P::dupu(sqrt_half_bits)));
  const vd f = P::sub(m, P::dup(1.0));  // exact (Sterbenz)
  const vd hfsq = P::mul(P::mul(P::dup(0.5), f), f);
  const vd s = P::div(f, P::add(P::dup(2.0), f));
  const vd z = P::mul(s, s);
  const vd r = P::mul(z, log_polynomial<P>(z));
  // ln m = f − hfsq + s·(hfsq + R): the large terms f and hfsq enter exactly once, last.
  const vd corr = P::add(P::mul(s, P::add(hfsq, r)), P::mul(e, P::dup(ln2_lo)));
  return P::add(P::mul(e, P::dup(ln2_hi)), P::sub(f, P::sub(hfsq, corr)));
}

/// sin(2πt), cos(2πt) for t ∈ [0, 1] (random_detail.hpp, sincos_turns).
template <class P>
NCSDE_KERNEL_INLINE void sincos_kernel(const typename P::vd& t, typename P::vd& sin_out,
                                       typename P::vd& cos_out) {
  using vd = typename P::vd;
  using vu = typename P::vu;
  // 4t + 1.5·2^52 rounds 4t to the nearest integer q (ties to even) and holds q in its low bits.
  constexpr double shifter = 0x1.8p52;
  const vd shifted = P::add(P::mul(t, P::dup(4.0)), P::dup(shifter));
  const vu q = P::as_bits(shifted);
  const vd r = P::sub(t, P::mul(P::sub(shifted, P::dup(shifter)), P::dup(0.25)));  // exact
  const vd w = P::mul(r, r);
  const vd s = P::mul(r, sin_polynomial<P>(w));
  const vd c = P::sub(P::dup(1.0), P::mul(w, cos_polynomial<P>(w)));
  // 2πt = 2πr + qπ/2: odd q swaps sin and cos; cos is negated for q ≡ 1, 2 and sin for q ≡ 2, 3.
  const vd cos_abs = P::select_odd(q, s, c);
  const vd sin_abs = P::select_odd(q, c, s);
  const vu cos_sign = P::template shl<62>(P::and_(P::addu(q, P::dupu(1)), P::dupu(2)));
  const vu sin_sign = P::template shl<62>(P::and_(q, P::dupu(2)));
  cos_out = P::as_double(P::xor_(P::as_bits(cos_abs), cos_sign));
  sin_out = P::as_double(P::xor_(P::as_bits(sin_abs), sin_sign));
}

/// The ten Philox4x32 rounds on U packs of counter words r0..r3, then the two uniforms of each pack:
/// a = w1·2^32 + w0, b = w3·2^32 + w2, each ((x >> 11) + 1)·2^-53 ∈ (0, 1]. Round r's key words:
/// the block's table (Weyl = false: one stream, key->k0[r], key->k1[r] broadcast) or first + r·W
/// per lane (Weyl = true: several streams, a 64-bit add whose carries go to the upper half, which
/// no multiply or output reads), with KeyPacks = 1 key pack for all U packs (U pairs of the same
/// streams) or KeyPacks = U, one per pack (the same pair of U packs of streams). The U packs side
/// by side, so that the dependent rounds of one overlap with those of the others. (No callback for
/// the keys: a lambda would not carry the caller's target attribute, and vector registers passed
/// across that boundary change the calling convention.)
template <class P, int U, bool Weyl, int KeyPacks = 1>
NCSDE_KERNEL_INLINE void philox_uniforms(typename P::vu (&r0)[U], typename P::vu (&r1)[U],
                                         typename P::vu (&r2)[U], typename P::vu (&r3)[U],
                                         const block_key* key,
                                         const typename P::vu (&first0)[KeyPacks],
                                         const typename P::vu (&first1)[KeyPacks],
                                         typename P::vd (&ua)[U], typename P::vd (&ub)[U]) {
  static_assert(KeyPacks == 1 || KeyPacks == U);
  using vu = typename P::vu;
  const vu m0 = P::dupu(0xD2511F53);  // Random123's PHILOX_M4x32_0, _1
  const vu m1 = P::dupu(0xCD9E8D57);
  vu k0[KeyPacks], k1[KeyPacks];
  for (int q = 0; q < KeyPacks; ++q) {
    k0[q] = first0[q];
    k1[q] = first1[q];
  }
  for (std::size_t round = 0; round < 10; ++round) {
    if constexpr (Weyl) {
      if (round > 0)
        for (int q = 0; q < KeyPacks; ++q) {
          k0[q] = P::addu(k0[q], P::dupu(0x9E3779B9u));  // Philox Weyl increments W0, W1
          k1[q] = P::addu(k1[q], P::dupu(0xBB67AE85u));
        }
    } else {
      k0[0] = P::dupu(key->k0[round]);
      k1[0] = P::dupu(key->k1[round]);
    }
    for (int u = 0; u < U; ++u) {
      const int q = KeyPacks == 1 ? 0 : u;
      const vu p0 = P::mul32(r0[u], m0);
      const vu p1 = P::mul32(r2[u], m1);
      r0[u] = P::xor3(P::template shr<32>(p1), r1[u], k0[q]);
      r1[u] = p1;
      r2[u] = P::xor3(P::template shr<32>(p0), r3[u], k1[q]);
      r3[u] = p0;
    }
  }
  const vu low = P::dupu(0xFFFFFFFF);
  for (int u = 0; u < U; ++u) {
    const vu a = P::or_(P::template shl<32>(r1[u]), P::and_(r0[u], low));
    const vu b = P::or_(P::template shl<32>(r3[u]), P::and_(r2[u], low));
    ua[u] = P::unit53(P::template shr<11>(a));
    ub[u] = P::unit53(P::template shr<11>(b));
  }
}

/// Box–Muller in place on U packs of uniform pairs: x ← √(−2 ln x)·cos 2πy, y ← √(−2 ln x)·sin 2πy.
template <class P, int U>
NCSDE_KERNEL_INLINE void box_muller(typename P::vd (&x)[U], typename P::vd (&y)[U]) {
  for (int u = 0; u < U; ++u) {
    typename P::vd s, c;
    const typename P::vd radius = P::sqrt(P::mul(P::dup(-2.0), log_kernel<P>(x[u])));
    sincos_kernel<P>(y[u], s, c);
    x[u] = P::mul(radius, c);
    y[u] = P::mul(radius, s);
  }
}

/// The two uniforms of pairs first, …, first + U·lanes − 1 of one block: Philox4x32-10 at counter
/// (lo(h1 ⊕ p), hi(h1 ⊕ p), c2, c3) with the block's round keys (philox_uniforms).
template <class P, int U>
NCSDE_KERNEL_INLINE void uniform_pairs(const block_key& key, std::uint64_t first,
                                       typename P::vd (&ua)[U], typename P::vd (&ub)[U]) {
  using vu = typename P::vu;
  vu r0[U], r1[U], r2[U], r3[U];
  for (int u = 0; u < U; ++u) {
    const vu x =
        P::xor_(P::iota(first + static_cast<std::uint64_t>(u * P::lanes)), P::dupu(key.h1));
    r0[u] = x;
    r1[u] = P::template shr<32>(x);
    r2[u] = P::dupu(key.c2);
    r3[u] = P::dupu(key.c3);
  }
  const vu none[1] = {P::dupu(0)};
  philox_uniforms<P, U, false>(r0, r1, r2, r3, &key, none, none, ua, ub);
}

/// Normals (Normal = true: Box–Muller on the uniforms of the same pairs, z0 = √(−2 ln a)·cos 2πb,
/// z1 = √(−2 ln a)·sin 2πb) or the uniforms themselves (x = a, y = b), U packs of pairs.
template <class P, int U, bool Normal>
NCSDE_KERNEL_INLINE void pairs(const block_key& key, std::uint64_t first, typename P::vd (&x)[U],
                               typename P::vd (&y)[U]) {
  uniform_pairs<P, U>(key, first, x, y);
  if constexpr (Normal) box_muller<P, U>(x, y);
}

/// Fills out[0, count) of one block: 2·lanes·U numbers at a time, then single packs; a last partial
/// pack is computed in full into a buffer (the same numbers) and its head copied.
template <class P, bool Normal>
NCSDE_KERNEL_INLINE void fill_block(const block_key& key, double* out, std::ptrdiff_t count) {
  constexpr int U = 2;
  constexpr std::ptrdiff_t pack = 2 * P::lanes;
  std::ptrdiff_t j = 0;
  for (; j + U * pack <= count; j += U * pack) {
    typename P::vd x[U], y[U];
    pairs<P, U, Normal>(key, static_cast<std::uint64_t>(j / 2), x, y);
    for (int u = 0; u < U; ++u) P::store_pairs(out + j + u * pack, x[u], y[u]);
  }
  for (; j < count; j += pack) {
    typename P::vd x[1], y[1];
    pairs<P, 1, Normal>(key, static_cast<std::uint64_t>(j / 2), x, y);
    if (j + pack <= count) {
      P::store_pairs(out + j, x[0], y[0]);
    } else {
      double tail[pack];
      P::store_pairs(tail, x[0], y[0]);
      for (std::ptrdiff_t i = 0; i < count - j; ++i) out[j + i] = tail[i];
    }
  }
}

/// Entries [0, count) of block (seed, path, domain, i0, i1) of the stream: normals (Normal) or
/// uniforms, on the scalar pack; what random_stream::normals() and uniforms() return, bit for bit.
template <bool Normal>
NCSDE_HOST_DEVICE inline void block_numbers(std::uint64_t seed, std::uint64_t path,
                                            std::uint64_t domain, std::uint64_t i0,
                                            std::uint64_t i1, double* out, std::ptrdiff_t count) {
  fill_block<scalar_pack, Normal>(make_block_key(seed, path, domain, i0, i1), out, count);
}

}  // namespace ncsde::device
