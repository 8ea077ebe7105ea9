// The Highway targets a file was compiled for, as one list: NCSDE_HWY_TARGETS(X) expands X(T),
// for each target T in HWY_TARGETS, best first (Highway numbers its targets from the best: the
// lowest bit), so that a file's dispatch table is written once as
//   constexpr table tables[] = {NCSDE_HWY_TARGETS(ENTRY)};
// with ENTRY(T) the table entry of target T (its functions in namespace N_##T), comma included.
// Include it after <hwy/highway.h> in the part of a foreach_target.h file compiled once (HWY_ONCE):
// HWY_TARGETS depends on the file's HWY_DISABLED_TARGETS. The scalable targets (SVE, RVV) are not
// listed: the library's kernels take the lane count at compile time.
#pragma once

#include <hwy/highway.h>

#if HWY_TARGETS & HWY_AVX3_DL
#define NCSDE_HWY_IF_AVX3_DL(X) X(AVX3_DL)
#else
#define NCSDE_HWY_IF_AVX3_DL(X)
#endif
#if HWY_TARGETS & HWY_AVX3
#define NCSDE_HWY_IF_AVX3(X) X(AVX3)
#else
#define NCSDE_HWY_IF_AVX3(X)
#endif
#if HWY_TARGETS & HWY_AVX2
#define NCSDE_HWY_IF_AVX2(X) X(AVX2)
#else
#define NCSDE_HWY_IF_AVX2(X)
#endif
#if HWY_TARGETS & HWY_SSE4
#define NCSDE_HWY_IF_SSE4(X) X(SSE4)
#else
#define NCSDE_HWY_IF_SSE4(X)
#endif
#if HWY_TARGETS & HWY_SSSE3
#define NCSDE_HWY_IF_SSSE3(X) X(SSSE3)
#else
#define NCSDE_HWY_IF_SSSE3(X)
#endif
#if HWY_TARGETS & HWY_NEON
#define NCSDE_HWY_IF_NEON(X) X(NEON)
#else
#define NCSDE_HWY_IF_NEON(X)
#endif
#if HWY_TARGETS & HWY_PPC8
#define NCSDE_HWY_IF_PPC8(X) X(PPC8)
#else
#define NCSDE_HWY_IF_PPC8(X)
#endif
#if HWY_TARGETS & HWY_WASM_EMU256
#define NCSDE_HWY_IF_WASM_EMU256(X) X(WASM_EMU256)
#else
#define NCSDE_HWY_IF_WASM_EMU256(X)
#endif
#if HWY_TARGETS & HWY_WASM
#define NCSDE_HWY_IF_WASM(X) X(WASM)
#else
#define NCSDE_HWY_IF_WASM(X)
#endif
#if HWY_TARGETS & HWY_EMU128
#define NCSDE_HWY_IF_EMU128(X) X(EMU128)
#else
#define NCSDE_HWY_IF_EMU128(X)
#endif
#if HWY_TARGETS & HWY_SCALAR
#define NCSDE_HWY_IF_SCALAR(X) X(SCALAR)
#else
#define NCSDE_HWY_IF_SCALAR(X)
#endif

// One target per line; clang-format does not settle on one layout for this macro.
// clang-format off
#define NCSDE_HWY_TARGETS(X) \
  NCSDE_HWY_IF_AVX3_DL(X) \
  NCSDE_HWY_IF_AVX3(X) \
  NCSDE_HWY_IF_AVX2(X) \
  NCSDE_HWY_IF_SSE4(X) \
  NCSDE_HWY_IF_SSSE3(X) \
  NCSDE_HWY_IF_NEON(X) \
  NCSDE_HWY_IF_PPC8(X) \
  NCSDE_HWY_IF_WASM_EMU256(X) \
  NCSDE_HWY_IF_WASM(X) \
  NCSDE_HWY_IF_EMU128(X) \
  NCSDE_HWY_IF_SCALAR(X)
// clang-format on
