// Counter-based normals and uniforms: Philox4x32-10 words, 53-bit uniforms, Box–Muller with our own
// log and sincos kernels, written once over a "lane pack" (scalar, AVX2, AVX-512) and dispatched at
// run time. Built with -ffp-contract=off (CMakeLists.txt): a fused multiply-add in one path and not
// in another would change the last bit, and the paths must agree bit for bit (random_detail.hpp).
#include "ncsde/random.hpp"

#include <Random123/philox.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>

#include "ncsde/error.hpp"
#include "random_detail.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NCSDE_RANDOM_X86_SIMD 1
#include <immintrin.h>
#else
#define NCSDE_RANDOM_X86_SIMD 0
#endif

namespace ncsde {
namespace {

// ---- the address of a block -------------------------------------------------------------------

/// Philox4x32-10 key and counter words of one block (seed, path, domain, i0, i1): the 256 output
/// bits h0..h3 of Philox4x64-10 with key (seed, path) at counter (0, i0, i1, domain) give the key
/// (lo h0, hi h0) and the counter of pair p: (lo(h1 ⊕ p), hi(h1 ⊕ p), lo h2, hi h2). Within a block
/// p ↦ counter is injective; two different blocks meet the same (key, counter) only if their h0 and
/// h2 agree, with probability 2^-128.
struct block_key {
  std::array<std::uint32_t, 10> k0;  ///< round keys: k0 + r·W0 (mod 2^32), r = 0..9
  std::array<std::uint32_t, 10> k1;  ///< round keys: k1 + r·W1 (mod 2^32)
  std::uint64_t h1;                  ///< xored with the pair index: counter words 0 and 1
  std::uint32_t c2, c3;              ///< counter words 2 and 3
};

block_key make_block_key(std::uint64_t seed, std::uint64_t path, random_domain domain,
                         std::uint64_t i0, std::uint64_t i1) {
  using philox = r123::Philox4x64;
  const philox::key_type key = {{seed, path}};
  const philox::ctr_type ctr = {{0, i0, i1, static_cast<std::uint64_t>(domain)}};
  const philox::ctr_type h = philox()(ctr, key);
  block_key b{};
  std::uint32_t k0 = static_cast<std::uint32_t>(h[0]);
  std::uint32_t k1 = static_cast<std::uint32_t>(h[0] >> 32);
  for (int r = 0; r < 10; ++r) {
    b.k0[static_cast<std::size_t>(r)] = k0;
    b.k1[static_cast<std::size_t>(r)] = k1;
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
  static vd dup(double x) { return {x}; }
  static vu dupu(std::uint64_t x) { return {x}; }
  static vu loadu(const std::uint64_t* p) { return {*p}; }
  static void storeu(double* out, vd a) { *out = a.v; }
  static vu iota(std::uint64_t first) { return {first}; }
  static vu xor_(vu a, vu b) { return {a.v ^ b.v}; }
  static vu xor3(vu a, vu b, vu c) { return {a.v ^ b.v ^ c.v}; }
  static vu and_(vu a, vu b) { return {a.v & b.v}; }
  static vu or_(vu a, vu b) { return {a.v | b.v}; }
  static vu addu(vu a, vu b) { return {a.v + b.v}; }
  template <int n>
  static vu shl(vu a) {
    return {a.v << n};
  }
  template <int n>
  static vu shr(vu a) {
    return {a.v >> n};
  }
  static vu mul32(vu a, vu b) { return {(a.v & 0xFFFFFFFFu) * (b.v & 0xFFFFFFFFu)}; }
  static vd add(vd a, vd b) { return {a.v + b.v}; }
  static vd sub(vd a, vd b) { return {a.v - b.v}; }
  static vd mul(vd a, vd b) { return {a.v * b.v}; }
  static vd div(vd a, vd b) { return {a.v / b.v}; }
  static vd sqrt(vd a) { return {std::sqrt(a.v)}; }
  static vd as_double(vu a) { return {std::bit_cast<double>(a.v)}; }
  static vu as_bits(vd a) { return {std::bit_cast<std::uint64_t>(a.v)}; }
  /// n < 2^53 → (n + 1)·2^-53, exactly.
  static vd unit53(vu n) { return {static_cast<double>(n.v + 1) * 0x1p-53}; }
  /// n < 2^52 → n as a double, exactly.
  static vd small_to_double(vu n) { return {static_cast<double>(n.v)}; }
  /// Lanes whose k is odd take a, the others b.
  static vd select_odd(vu k, vd a, vd b) { return (k.v & 1u) != 0 ? a : b; }
  /// out[2i] = even[i], out[2i + 1] = odd[i].
  static void store_pairs(double* out, vd even, vd odd) {
    out[0] = even.v;
    out[1] = odd.v;
  }
};

#if NCSDE_RANDOM_X86_SIMD

#define NCSDE_AVX2 [[gnu::target("avx2")]]
struct avx2_pack {
  static constexpr int lanes = 4;
  struct vd {
    __m256d v;
  };
  struct vu {
    __m256i v;
  };
  NCSDE_AVX2 static vd dup(double x) { return {_mm256_set1_pd(x)}; }
  NCSDE_AVX2 static vu dupu(std::uint64_t x) {
    return {_mm256_set1_epi64x(static_cast<long long>(x))};
  }
  NCSDE_AVX2 static vu loadu(const std::uint64_t* p) {
    return {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))};
  }
  NCSDE_AVX2 static void storeu(double* out, vd a) { _mm256_storeu_pd(out, a.v); }
  NCSDE_AVX2 static vu iota(std::uint64_t first) {
    return {_mm256_add_epi64(_mm256_set1_epi64x(static_cast<long long>(first)),
                             _mm256_setr_epi64x(0, 1, 2, 3))};
  }
  NCSDE_AVX2 static vu xor_(vu a, vu b) { return {_mm256_xor_si256(a.v, b.v)}; }
  NCSDE_AVX2 static vu xor3(vu a, vu b, vu c) {
    return {_mm256_xor_si256(_mm256_xor_si256(a.v, b.v), c.v)};
  }
  NCSDE_AVX2 static vu and_(vu a, vu b) { return {_mm256_and_si256(a.v, b.v)}; }
  NCSDE_AVX2 static vu or_(vu a, vu b) { return {_mm256_or_si256(a.v, b.v)}; }
  NCSDE_AVX2 static vu addu(vu a, vu b) { return {_mm256_add_epi64(a.v, b.v)}; }
  template <int n>
  NCSDE_AVX2 static vu shl(vu a) {
    return {_mm256_slli_epi64(a.v, n)};
  }
  template <int n>
  NCSDE_AVX2 static vu shr(vu a) {
    return {_mm256_srli_epi64(a.v, n)};
  }
  NCSDE_AVX2 static vu mul32(vu a, vu b) { return {_mm256_mul_epu32(a.v, b.v)}; }
  NCSDE_AVX2 static vd add(vd a, vd b) { return {_mm256_add_pd(a.v, b.v)}; }
  NCSDE_AVX2 static vd sub(vd a, vd b) { return {_mm256_sub_pd(a.v, b.v)}; }
  NCSDE_AVX2 static vd mul(vd a, vd b) { return {_mm256_mul_pd(a.v, b.v)}; }
  NCSDE_AVX2 static vd div(vd a, vd b) { return {_mm256_div_pd(a.v, b.v)}; }
  NCSDE_AVX2 static vd sqrt(vd a) { return {_mm256_sqrt_pd(a.v)}; }
  NCSDE_AVX2 static vd as_double(vu a) { return {_mm256_castsi256_pd(a.v)}; }
  NCSDE_AVX2 static vu as_bits(vd a) { return {_mm256_castpd_si256(a.v)}; }
  NCSDE_AVX2 static vd small_to_double(vu n) {
    // 2^52 + n has n as its mantissa bits (n < 2^52); subtracting 2^52 is exact.
    const __m256i magic = _mm256_set1_epi64x(0x4330000000000000);
    return {
        _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(n.v, magic)), _mm256_set1_pd(0x1p52))};
  }
  NCSDE_AVX2 static vd unit53(vu n) {
    // n = hi·2^32 + lo with hi < 2^21: both halves convert exactly, the sum and +1 are exact (≤
    // 2^53).
    const vd hi = small_to_double({_mm256_srli_epi64(n.v, 32)});
    const vd lo = small_to_double({_mm256_and_si256(n.v, _mm256_set1_epi64x(0xFFFFFFFF))});
    const __m256d sum = _mm256_add_pd(_mm256_mul_pd(hi.v, _mm256_set1_pd(0x1p32)), lo.v);
    return {_mm256_mul_pd(_mm256_add_pd(sum, _mm256_set1_pd(1.0)), _mm256_set1_pd(0x1p-53))};
  }
  NCSDE_AVX2 static vd select_odd(vu k, vd a, vd b) {
    // blendv reads the sign bit: move bit 0 of k there.
    return {_mm256_blendv_pd(b.v, a.v, _mm256_castsi256_pd(_mm256_slli_epi64(k.v, 63)))};
  }
  NCSDE_AVX2 static void store_pairs(double* out, vd even, vd odd) {
    const __m256d lo = _mm256_unpacklo_pd(even.v, odd.v);  // e0 o0 e2 o2
    const __m256d hi = _mm256_unpackhi_pd(even.v, odd.v);  // e1 o1 e3 o3
    _mm256_storeu_pd(out, _mm256_permute2f128_pd(lo, hi, 0x20));
    _mm256_storeu_pd(out + 4, _mm256_permute2f128_pd(lo, hi, 0x31));
  }
};
#undef NCSDE_AVX2

#define NCSDE_AVX512 [[gnu::target("avx512f,avx512dq")]]
// The maskz forms with an all-ones mask are the plain instructions; GCC 12's unmasked intrinsics
// start from _mm512_undefined_*() and trip -Wmaybe-uninitialized.
struct avx512_pack {
  static constexpr int lanes = 8;
  static constexpr __mmask8 all8 = 0xFF;
  struct vd {
    __m512d v;
  };
  struct vu {
    __m512i v;
  };
  NCSDE_AVX512 static vd dup(double x) { return {_mm512_set1_pd(x)}; }
  NCSDE_AVX512 static vu dupu(std::uint64_t x) {
    return {_mm512_set1_epi64(static_cast<long long>(x))};
  }
  NCSDE_AVX512 static vu loadu(const std::uint64_t* p) { return {_mm512_loadu_si512(p)}; }
  NCSDE_AVX512 static void storeu(double* out, vd a) { _mm512_storeu_pd(out, a.v); }
  NCSDE_AVX512 static vu iota(std::uint64_t first) {
    return {_mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(first)),
                             _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7))};
  }
  NCSDE_AVX512 static vu xor_(vu a, vu b) { return {_mm512_xor_si512(a.v, b.v)}; }
  NCSDE_AVX512 static vu xor3(vu a, vu b, vu c) {
    return {_mm512_ternarylogic_epi64(a.v, b.v, c.v, 0x96)};
  }
  NCSDE_AVX512 static vu and_(vu a, vu b) { return {_mm512_and_si512(a.v, b.v)}; }
  NCSDE_AVX512 static vu or_(vu a, vu b) { return {_mm512_or_si512(a.v, b.v)}; }
  NCSDE_AVX512 static vu addu(vu a, vu b) { return {_mm512_add_epi64(a.v, b.v)}; }
  template <int n>
  NCSDE_AVX512 static vu shl(vu a) {
    return {_mm512_maskz_slli_epi64(all8, a.v, n)};
  }
  template <int n>
  NCSDE_AVX512 static vu shr(vu a) {
    return {_mm512_maskz_srli_epi64(all8, a.v, n)};
  }
  NCSDE_AVX512 static vu mul32(vu a, vu b) { return {_mm512_maskz_mul_epu32(all8, a.v, b.v)}; }
  NCSDE_AVX512 static vd add(vd a, vd b) { return {_mm512_add_pd(a.v, b.v)}; }
  NCSDE_AVX512 static vd sub(vd a, vd b) { return {_mm512_sub_pd(a.v, b.v)}; }
  NCSDE_AVX512 static vd mul(vd a, vd b) { return {_mm512_mul_pd(a.v, b.v)}; }
  NCSDE_AVX512 static vd div(vd a, vd b) { return {_mm512_div_pd(a.v, b.v)}; }
  NCSDE_AVX512 static vd sqrt(vd a) { return {_mm512_maskz_sqrt_pd(all8, a.v)}; }
  NCSDE_AVX512 static vd as_double(vu a) { return {_mm512_castsi512_pd(a.v)}; }
  NCSDE_AVX512 static vu as_bits(vd a) { return {_mm512_castpd_si512(a.v)}; }
  NCSDE_AVX512 static vd small_to_double(vu n) { return {_mm512_cvtepu64_pd(n.v)}; }
  NCSDE_AVX512 static vd unit53(vu n) {
    const __m512i n1 = _mm512_add_epi64(n.v, _mm512_set1_epi64(1));  // ≤ 2^53: converts exactly
    return {_mm512_mul_pd(_mm512_cvtepu64_pd(n1), _mm512_set1_pd(0x1p-53))};
  }
  NCSDE_AVX512 static vd select_odd(vu k, vd a, vd b) {
    return {_mm512_mask_blend_pd(_mm512_test_epi64_mask(k.v, _mm512_set1_epi64(1)), b.v, a.v)};
  }
  NCSDE_AVX512 static void store_pairs(double* out, vd even, vd odd) {
    const __m512d lo = _mm512_maskz_unpacklo_pd(all8, even.v, odd.v);  // e0 o0 e2 o2 e4 o4 e6 o6
    const __m512d hi = _mm512_maskz_unpackhi_pd(all8, even.v, odd.v);  // e1 o1 e3 o3 e5 o5 e7 o7
    _mm512_storeu_pd(out,
                     _mm512_permutex2var_pd(lo, _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11), hi));
    _mm512_storeu_pd(out + 8,
                     _mm512_permutex2var_pd(lo, _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15), hi));
  }
};
#undef NCSDE_AVX512

#endif  // NCSDE_RANDOM_X86_SIMD

// ---- kernels, written once for every pack -------------------------------------------------------
// Each is [[gnu::always_inline]] so that it is compiled inside the entry point of its instruction
// set (which carries the target attribute); the pack operations are then inlined there too.

/// Polynomial c[0] + x·(c[1] + x·(… + x·c[N−1])) (Horner: one fixed order of operations).
template <class P, std::size_t N>
[[gnu::always_inline]] inline typename P::vd horner(const typename P::vd& x,
                                                    const std::array<double, N>& c) {
  typename P::vd acc = P::dup(c[N - 1]);
  for (std::size_t k = N - 1; k-- > 0;) acc = P::add(P::dup(c[k]), P::mul(x, acc));
  return acc;
}

// R(z)/z ≈ Σ_{k≥1} 2z^{k−1}/(2k + 1) on z ∈ [0, ((√2 − 1)/(√2 + 1))²]: Chebyshev fit (mpmath, 60
// digits), error 3.1e-16 in R/z, i.e. below 2^-57 relative to ln m after the factor z·s.
constexpr std::array<double, 7> log_coeffs = {
    0x1.5555555555558p-1, 0x1.99999999952e2p-2, 0x1.2492492df14bfp-2, 0x1.c71c62e57c0cfp-3,
    0x1.7462b4ac51915p-3, 0x1.39fe603f8739ep-3, 0x1.2b584c80de001p-3};
// ln 2 = ln2_hi + ln2_lo; ln2_hi has 40 significant bits, so e·ln2_hi is exact for |e| < 2^13.
constexpr double ln2_hi = 0x1.62e42fefa4000p-1;
constexpr double ln2_lo = -0x1.8432a1b0e2634p-43;
// sin(2πr)/r and (1 − cos(2πr))/r² as polynomials in w = r² ∈ [0, 1/64]: Chebyshev fits, relative
// errors 2^-58 and 2^-61 (the cosine's error is further scaled by w ≤ 1/64).
constexpr std::array<double, 7> sin_coeffs = {
    0x1.921fb54442d18p+2, -0x1.4abbce625be41p+5, 0x1.466bc677587f8p+6, -0x1.32d2cce2e5b19p+6,
    0x1.50782fda12d96p+5, -0x1.e30071afc3e59p+3, 0x1.e3f38399551bfp+1};
constexpr std::array<double, 7> cos_coeffs = {
    0x1.3bd3cc9be45dep+4, -0x1.03c1f081b5ac0p+6, 0x1.55d3c7e3cb241p+6, -0x1.e1f5068688d5bp+5,
    0x1.a6d1eef479be1p+4, -0x1.f9ce245cada0bp+2, 0x1.b2f3eb054afcdp+0};

/// ln u for positive normal u (random_detail.hpp, log_unit).
template <class P>
[[gnu::always_inline]] inline typename P::vd log_kernel(const typename P::vd& u) {
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
  const vd r = P::mul(z, horner<P>(z, log_coeffs));
  // ln m = f − hfsq + s·(hfsq + R): the large terms f and hfsq enter exactly once, last.
  const vd corr = P::add(P::mul(s, P::add(hfsq, r)), P::mul(e, P::dup(ln2_lo)));
  return P::add(P::mul(e, P::dup(ln2_hi)), P::sub(f, P::sub(hfsq, corr)));
}

/// sin(2πt), cos(2πt) for t ∈ [0, 1] (random_detail.hpp, sincos_turns).
template <class P>
[[gnu::always_inline]] inline void sincos_kernel(const typename P::vd& t, typename P::vd& sin_out,
                                                 typename P::vd& cos_out) {
  using vd = typename P::vd;
  using vu = typename P::vu;
  // 4t + 1.5·2^52 rounds 4t to the nearest integer q (ties to even) and holds q in its low bits.
  constexpr double shifter = 0x1.8p52;
  const vd shifted = P::add(P::mul(t, P::dup(4.0)), P::dup(shifter));
  const vu q = P::as_bits(shifted);
  const vd r = P::sub(t, P::mul(P::sub(shifted, P::dup(shifter)), P::dup(0.25)));  // exact
  const vd w = P::mul(r, r);
  const vd s = P::mul(r, horner<P>(w, sin_coeffs));
  const vd c = P::sub(P::dup(1.0), P::mul(w, horner<P>(w, cos_coeffs)));
  // 2πt = 2πr + qπ/2: odd q swaps sin and cos; cos is negated for q ≡ 1, 2 and sin for q ≡ 2, 3.
  const vd cos_abs = P::select_odd(q, s, c);
  const vd sin_abs = P::select_odd(q, c, s);
  const vu cos_sign = P::template shl<62>(P::and_(P::addu(q, P::dupu(1)), P::dupu(2)));
  const vu sin_sign = P::template shl<62>(P::and_(q, P::dupu(2)));
  cos_out = P::as_double(P::xor_(P::as_bits(cos_abs), cos_sign));
  sin_out = P::as_double(P::xor_(P::as_bits(sin_abs), sin_sign));
}

/// The two uniforms of pairs first, …, first + U·lanes − 1 (U packs side by side, so that the ten
/// dependent Philox rounds of one pack overlap with those of the others): Philox4x32-10 at counter
/// (lo(h1 ⊕ p), hi(h1 ⊕ p), c2, c3) gives words w0..w3; a = w1·2^32 + w0, b = w3·2^32 + w2, and
/// each becomes ((x >> 11) + 1)·2^-53 ∈ (0, 1].
/// The ten Philox4x32 rounds on U packs of counter words r0..r3, then the two uniforms of each pack:
/// a = w1·2^32 + w0, b = w3·2^32 + w2, each ((x >> 11) + 1)·2^-53 ∈ (0, 1]. Round r's key words:
/// the block's table (Weyl = false: one stream, key->k0[r], key->k1[r] broadcast) or first + r·W
/// per lane (Weyl = true: several streams, a 64-bit add whose carries go to the upper half, which
/// no multiply or output reads). The U packs side by side, so that the dependent rounds of one
/// overlap with those of the others. (No callback for the keys: a lambda would not carry the
/// caller's target attribute, and vector registers passed across that boundary change the calling
/// convention.)
template <class P, int U, bool Weyl>
[[gnu::always_inline]] inline void philox_uniforms(
    typename P::vu (&r0)[U], typename P::vu (&r1)[U], typename P::vu (&r2)[U],
    typename P::vu (&r3)[U], const block_key* key, const typename P::vu& first0,
    const typename P::vu& first1, typename P::vd (&ua)[U], typename P::vd (&ub)[U]) {
  using vu = typename P::vu;
  const vu m0 = P::dupu(0xD2511F53);  // Random123's PHILOX_M4x32_0, _1
  const vu m1 = P::dupu(0xCD9E8D57);
  vu k0 = first0, k1 = first1;
  for (std::size_t round = 0; round < 10; ++round) {
    if constexpr (Weyl) {
      if (round > 0) {
        k0 = P::addu(k0, P::dupu(0x9E3779B9u));  // Philox Weyl increments W0, W1
        k1 = P::addu(k1, P::dupu(0xBB67AE85u));
      }
    } else {
      k0 = P::dupu(key->k0[round]);
      k1 = P::dupu(key->k1[round]);
    }
    for (int u = 0; u < U; ++u) {
      const vu p0 = P::mul32(r0[u], m0);
      const vu p1 = P::mul32(r2[u], m1);
      r0[u] = P::xor3(P::template shr<32>(p1), r1[u], k0);
      r1[u] = p1;
      r2[u] = P::xor3(P::template shr<32>(p0), r3[u], k1);
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
[[gnu::always_inline]] inline void box_muller(typename P::vd (&x)[U], typename P::vd (&y)[U]) {
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
[[gnu::always_inline]] inline void uniform_pairs(const block_key& key, std::uint64_t first,
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
  philox_uniforms<P, U, false>(r0, r1, r2, r3, &key, P::dupu(0), P::dupu(0), ua, ub);
}

/// Normals (Normal = true: Box–Muller on the uniforms of the same pairs, z0 = √(−2 ln a)·cos 2πb,
/// z1 = √(−2 ln a)·sin 2πb) or the uniforms themselves (x = a, y = b), U packs of pairs.
template <class P, int U, bool Normal>
[[gnu::always_inline]] inline void pairs(const block_key& key, std::uint64_t first,
                                         typename P::vd (&x)[U], typename P::vd (&y)[U]) {
  uniform_pairs<P, U>(key, first, x, y);
  if constexpr (Normal) box_muller<P, U>(x, y);
}

/// Fills out[0, count) of one block: 2·lanes·U numbers at a time, then single packs; a last partial
/// pack is computed in full into a buffer (the same numbers) and its head copied.
template <class P, bool Normal>
[[gnu::always_inline]] inline void fill_block(const block_key& key, double* out,
                                              std::ptrdiff_t count) {
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
      alignas(64) double tail[pack];
      P::store_pairs(tail, x[0], y[0]);
      std::copy(tail, tail + (count - j), out + j);
    }
  }
}

/// The keys of up to lane_capacity streams at one address, one lane per stream, as 64-bit words
/// (a Philox4x32 word in the low half): what the lane kernels load as packs. Only the first round's
/// key words are kept; the kernel adds the Weyl increments round by round.
constexpr int lane_capacity = 16;
struct lane_keys {
  alignas(64) std::uint64_t k0[lane_capacity];
  alignas(64) std::uint64_t k1[lane_capacity];
  alignas(64) std::uint64_t h1[lane_capacity];
  alignas(64) std::uint64_t c2[lane_capacity];
  alignas(64) std::uint64_t c3[lane_capacity];
};

/// make_block_key's words for `lanes` streams (padding lanes up to lane_capacity get zero keys:
/// their numbers are computed by the lane kernels, never stored).
void make_lane_keys(std::uint64_t seed, const std::uint64_t* paths, int lanes, random_domain domain,
                    std::uint64_t i0, std::uint64_t i1, lane_keys& keys) {
  using philox = r123::Philox4x64;
  const philox::ctr_type ctr = {{0, i0, i1, static_cast<std::uint64_t>(domain)}};
  auto store = [&](int l, const philox::ctr_type& h) {
    // h0 = the Philox4x32 key (lo, hi), h1 the counter words xored with the pair, h2 = (c2, c3).
    keys.k0[l] = h[0] & 0xFFFFFFFFu;
    keys.k1[l] = h[0] >> 32;
    keys.h1[l] = h[1];
    keys.c2[l] = h[2] & 0xFFFFFFFFu;
    keys.c3[l] = h[2] >> 32;
  };
  int l = 0;
  // Four independent Philox4x64-10 calls in one expression: inlined, their ten dependent rounds
  // overlap (about twice the throughput of one call after the other).
  for (; l + 4 <= lanes; l += 4) {
    const philox::ctr_type h0 = philox()(ctr, {{seed, paths[l]}});
    const philox::ctr_type h1 = philox()(ctr, {{seed, paths[l + 1]}});
    const philox::ctr_type h2 = philox()(ctr, {{seed, paths[l + 2]}});
    const philox::ctr_type h3 = philox()(ctr, {{seed, paths[l + 3]}});
    store(l, h0);
    store(l + 1, h1);
    store(l + 2, h2);
    store(l + 3, h3);
  }
  for (; l < lanes; ++l) store(l, philox()(ctr, {{seed, paths[l]}}));
  // Padding lanes: zero keys (their numbers are computed by the lane kernels, never stored).
  for (; l < lane_capacity; ++l) keys.k0[l] = keys.k1[l] = keys.h1[l] = keys.c2[l] = keys.c3[l] = 0;
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
  philox_uniforms<P, U, true>(r0, r1, r2, r3, nullptr, P::loadu(keys.k0 + lane),
                              P::loadu(keys.k1 + lane), x, y);
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
template <class P, bool Normal>
[[gnu::always_inline]] inline void fill_lanes(const lane_keys& keys, int lanes, double* out,
                                              std::ptrdiff_t count, std::ptrdiff_t stride) {
  constexpr int U = 4;
  const std::ptrdiff_t pairs = (count + 1) / 2;
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

template <bool Normal>
void fill_scalar(const block_key& key, double* out, std::ptrdiff_t count) {
  fill_block<scalar_pack, Normal>(key, out, count);
}

#if NCSDE_RANDOM_X86_SIMD
template <bool Normal>
[[gnu::target("avx2")]] void fill_avx2(const block_key& key, double* out, std::ptrdiff_t count) {
  fill_block<avx2_pack, Normal>(key, out, count);
}
template <bool Normal>
[[gnu::target("avx512f,avx512dq")]] void fill_avx512(const block_key& key, double* out,
                                                     std::ptrdiff_t count) {
  fill_block<avx512_pack, Normal>(key, out, count);
}
#endif

template <bool Normal>
void fill_lanes_scalar(const lane_keys& keys, int lanes, double* out, std::ptrdiff_t count,
                       std::ptrdiff_t stride) {
  fill_lanes<scalar_pack, Normal>(keys, lanes, out, count, stride);
}

#if NCSDE_RANDOM_X86_SIMD
template <bool Normal>
[[gnu::target("avx2")]] void fill_lanes_avx2(const lane_keys& keys, int lanes, double* out,
                                             std::ptrdiff_t count, std::ptrdiff_t stride) {
  fill_lanes<avx2_pack, Normal>(keys, lanes, out, count, stride);
}
template <bool Normal>
[[gnu::target("avx512f,avx512dq")]] void fill_lanes_avx512(const lane_keys& keys, int lanes,
                                                           double* out, std::ptrdiff_t count,
                                                           std::ptrdiff_t stride) {
  fill_lanes<avx512_pack, Normal>(keys, lanes, out, count, stride);
}
#endif

// ---- dispatch ---------------------------------------------------------------------------------

bool cpu_supports(detail::simd_path path) {
  switch (path) {
    case detail::simd_path::scalar:
      return true;
#if NCSDE_RANDOM_X86_SIMD
    case detail::simd_path::avx2:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx2");
    case detail::simd_path::avx512:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
#else
    case detail::simd_path::avx2:
    case detail::simd_path::avx512:
      return false;
#endif
  }
  return false;
}

detail::simd_path detect_fastest() {
  if (cpu_supports(detail::simd_path::avx512)) return detail::simd_path::avx512;
  if (cpu_supports(detail::simd_path::avx2)) return detail::simd_path::avx2;
  return detail::simd_path::scalar;
}

detail::simd_path fastest() {
  static const detail::simd_path path = detect_fastest();
  return path;
}

template <bool Normal>
void fill(detail::simd_path path, const block_key& key, double* out, std::ptrdiff_t count) {
  switch (path) {
#if NCSDE_RANDOM_X86_SIMD
    case detail::simd_path::avx512:
      fill_avx512<Normal>(key, out, count);
      return;
    case detail::simd_path::avx2:
      fill_avx2<Normal>(key, out, count);
      return;
#endif
    default:
      fill_scalar<Normal>(key, out, count);
      return;
  }
}

template <bool Normal>
void fill_lanes_on(detail::simd_path path, const lane_keys& keys, int lanes, double* out,
                   std::ptrdiff_t count, std::ptrdiff_t stride) {
  switch (path) {
#if NCSDE_RANDOM_X86_SIMD
    case detail::simd_path::avx512:
      fill_lanes_avx512<Normal>(keys, lanes, out, count, stride);
      return;
    case detail::simd_path::avx2:
      fill_lanes_avx2<Normal>(keys, lanes, out, count, stride);
      return;
#endif
    default:
      fill_lanes_scalar<Normal>(keys, lanes, out, count, stride);
      return;
  }
}

void check_lanes(const char* where, int lanes, std::ptrdiff_t stride) {
  if (lanes < 1 || lanes > lane_capacity)
    throw_invalid_argument(where, "lanes", lanes, "in [1, 16]");
  if (stride < lanes) throw_invalid_argument(where, "stride", stride, ">= lanes");
}

void check_path(const char* where, detail::simd_path path) {
  if (!cpu_supports(path))
    throw_invalid_argument(where, "path", static_cast<int>(path), "supported by this CPU");
}

}  // namespace

void random_stream::normals(random_domain domain, std::uint64_t i0, std::uint64_t i1, double* out,
                            std::ptrdiff_t count) const {
  if (count <= 0) return;
  fill<true>(fastest(), make_block_key(m_seed, m_path, domain, i0, i1), out, count);
}

void random_stream::normals(random_domain domain, std::uint64_t i0, std::uint64_t i1,
                            Eigen::Ref<Eigen::VectorXd> out) const {
  normals(domain, i0, i1, out.data(), out.size());
}

void random_stream::uniforms(random_domain domain, std::uint64_t i0, std::uint64_t i1, double* out,
                             std::ptrdiff_t count) const {
  if (count <= 0) return;
  fill<false>(fastest(), make_block_key(m_seed, m_path, domain, i0, i1), out, count);
}

void lane_normals(std::uint64_t seed, const std::uint64_t* paths, int lanes, random_domain domain,
                  std::uint64_t i0, std::uint64_t i1, double* out, std::ptrdiff_t count,
                  std::ptrdiff_t stride) {
  check_lanes("lane_normals", lanes, stride);
  if (count <= 0) return;
  lane_keys keys;
  make_lane_keys(seed, paths, lanes, domain, i0, i1, keys);
  fill_lanes_on<true>(fastest(), keys, lanes, out, count, stride);
}

namespace detail {

bool simd_path_supported(simd_path path) { return cpu_supports(path); }

simd_path fastest_simd_path() { return fastest(); }

void normals_on(simd_path path, const random_stream& stream, random_domain domain, std::uint64_t i0,
                std::uint64_t i1, double* out, std::ptrdiff_t count) {
  check_path("detail::normals_on", path);
  if (count <= 0) return;
  fill<true>(path, make_block_key(stream.seed(), stream.path(), domain, i0, i1), out, count);
}

void uniforms_on(simd_path path, const random_stream& stream, random_domain domain,
                 std::uint64_t i0, std::uint64_t i1, double* out, std::ptrdiff_t count) {
  check_path("detail::uniforms_on", path);
  if (count <= 0) return;
  fill<false>(path, make_block_key(stream.seed(), stream.path(), domain, i0, i1), out, count);
}

void lane_normals_on(simd_path path, std::uint64_t seed, const std::uint64_t* paths, int lanes,
                     random_domain domain, std::uint64_t i0, std::uint64_t i1, double* out,
                     std::ptrdiff_t count, std::ptrdiff_t stride) {
  check_path("detail::lane_normals_on", path);
  check_lanes("detail::lane_normals_on", lanes, stride);
  if (count <= 0) return;
  lane_keys keys;
  make_lane_keys(seed, paths, lanes, domain, i0, i1, keys);
  fill_lanes_on<true>(path, keys, lanes, out, count, stride);
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
