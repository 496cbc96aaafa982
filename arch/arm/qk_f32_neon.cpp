// SPDX-License-Identifier: Apache-2.0
// Level neon (the ARM builds' baseline, no extra flags): the f32 kernels of tile_f32.hpp, with
// the prefill micro-kernel specialised for NEON. Instantiated as the generic template, GCC 12
// keeps its runtime-indexed accumulators in memory on ARM and stores all of them on every step of
// d (llvm-mca: Cortex-A76 FMA pipes under half busy); here every accumulator index is a
// constant, and on AArch64 one 128-bit load carries four steps of a Q row, consumed by
// lane-indexed FMLA (bench/mca.sh prints the figures). Same per-element operation as the
// template (an FMA per t, t in order, scale at the final store), so the decode and key-cache
// paths, still the template's, give the same bits.
//
//   aarch64 (xsimd::neon64, 32 q registers): 8x8 = 16 accumulators (8 rows x 2 vectors of 4
//     keys), 8 Q vectors (4 steps of d each), 2 panel vectors: 26 registers. Per 4 steps: 8 + 8
//     loads feed 64 FMAs. 12 rows or 3 panel vectors would need more than 32 registers.
//   armv7 (xsimd::neon, NEON-VFPv4, 16 q registers): 4x12 = 12 accumulators, 3 panel vectors,
//     1 broadcast of q: all 16. AArch32 has no by-lane fused multiply-add, so q is broadcast
//     per step.
#include <arm_neon.h>

#include "kernels/generic/tile_f32.hpp"

namespace attnscore {
namespace {

#if defined(__aarch64__)
using Arch = xsimd::neon64;
constexpr std::size_t kMR = 8, kNV = 2, kKB = 4;
#else
using Arch = xsimd::neon;
constexpr std::size_t kMR = 4, kNV = 3, kKB = 2;
#endif
constexpr std::size_t kW = 4, kNR = kNV * kW;

// tile::qk_f32_panel's contract and arithmetic (see there), for NEON registers.
inline void panel_neon(std::size_t rows, std::size_t cols, std::size_t d, const float *q,
                       std::size_t ldq, const float *panel, float *s, std::size_t lds, float scale,
                       unsigned flags) noexcept {
  const float *qr[kMR];
#pragma GCC unroll 16
  for (std::size_t i = 0; i < kMR; ++i) qr[i] = q + (i < rows ? i : rows - 1) * ldq;
  float32x4_t acc[kMR][kNV];
#pragma GCC unroll 16
  for (std::size_t i = 0; i < kMR; ++i) {
    if (flags & kAccumulate) {
      alignas(16) float part[kNR];
      const float *src = s + (i < rows ? i : rows - 1) * lds;
      for (std::size_t j = 0; j < kNR; ++j) part[j] = j < cols ? src[j] : 0.0f;
#pragma GCC unroll 16
      for (std::size_t v = 0; v < kNV; ++v) acc[i][v] = vld1q_f32(part + v * kW);
    } else {
#pragma GCC unroll 16
      for (std::size_t v = 0; v < kNV; ++v) acc[i][v] = vdupq_n_f32(0.0f);
    }
  }
  std::size_t t = 0;
#if defined(__aarch64__)
  // Odd panel vectors through a second pointer the compiler cannot relate to the first: it
  // would pair neighbours into LDP Q, which in-order cores (Cortex-A55) issue far slower than
  // two LDR Q.
  const float *pa = panel, *pb = panel + kW;
  __asm__("" : "+r"(pb));
  for (; t + kW <= d; t += kW, pa += kW * kNR, pb += kW * kNR) {
    float32x4_t qv[kMR];
#pragma GCC unroll 16
    for (std::size_t i = 0; i < kMR; ++i) qv[i] = vld1q_f32(qr[i] + t);
#define ATTNSCORE_NEON_STEP(l)                                                     \
  {                                                                                \
    float32x4_t kv[kNV];                                                           \
    _Pragma("GCC unroll 16") for (std::size_t v = 0; v < kNV; ++v) kv[v] =         \
        vld1q_f32((v % 2 ? pb : pa) + (l)*kNR + (v - v % 2) * kW);                 \
    _Pragma("GCC unroll 16") for (std::size_t i = 0; i < kMR; ++i)                 \
        _Pragma("GCC unroll 16") for (std::size_t v = 0; v < kNV; ++v) acc[i][v] = \
            vfmaq_laneq_f32(acc[i][v], kv[v], qv[i], (l));                         \
  }
    ATTNSCORE_NEON_STEP(0)
    ATTNSCORE_NEON_STEP(1)
    ATTNSCORE_NEON_STEP(2)
    ATTNSCORE_NEON_STEP(3)
#undef ATTNSCORE_NEON_STEP
  }
#endif
  for (; t < d; ++t) {
    float32x4_t kv[kNV];
#pragma GCC unroll 16
    for (std::size_t v = 0; v < kNV; ++v) kv[v] = vld1q_f32(panel + t * kNR + v * kW);
#pragma GCC unroll 16
    for (std::size_t i = 0; i < kMR; ++i) {
      const float32x4_t qb = vdupq_n_f32(qr[i][t]);
#pragma GCC unroll 16
      for (std::size_t v = 0; v < kNV; ++v) acc[i][v] = vfmaq_f32(acc[i][v], qb, kv[v]);
    }
  }
  const float32x4_t sc = vdupq_n_f32((flags & kFinal) ? scale : 1.0f);
#pragma GCC unroll 16
  for (std::size_t i = 0; i < kMR; ++i) {
    if (i >= rows) break;
    alignas(16) float out[kNR];
#pragma GCC unroll 16
    for (std::size_t v = 0; v < kNV; ++v)
      vst1q_f32(out + v * kW, (flags & kFinal) ? vmulq_f32(acc[i][v], sc) : acc[i][v]);
    float *dst = s + i * lds;
    for (std::size_t j = 0; j < cols; ++j) dst[j] = out[j];
  }
}

}  // namespace

// Used by ATTNSCORE_DEFINE_QK_F32 below in place of the generic body (this file is the only one
// that instantiates the template for a NEON arch).
template <>
inline void tile::qk_f32_panel<Arch, kMR, kNV>(std::size_t rows, std::size_t cols, std::size_t d,
                                               const float *q, std::size_t ldq, const float *panel,
                                               float *s, std::size_t lds, float scale,
                                               unsigned flags) noexcept {
  panel_neon(rows, cols, d, q, ldq, panel, s, lds, scale, flags);
}

#if defined(__aarch64__)
ATTNSCORE_DEFINE_QK_F32(qk_f32_8x8__neon, ATTNSCORE_LEVEL_NEON, Arch, kMR, kNV, kKB)
#else
ATTNSCORE_DEFINE_QK_F32(qk_f32_4x12__neon, ATTNSCORE_LEVEL_NEON, Arch, kMR, kNV, kKB)
#endif

}  // namespace attnscore
