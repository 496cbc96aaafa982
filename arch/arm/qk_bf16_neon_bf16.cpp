// SPDX-License-Identifier: Apache-2.0
// The opt-in bf16 dot-product kernel (ATTNSCORE_ATTN_BF16_DOT) on AArch64 with the BF16 extension
// (ARMv8.6; Neoverse V1/N2, Graviton3, Cortex-A510/A710/X2 and later), a row of the neon level
// that also needs it: BFDOT adds two bf16 products to each f32 lane, 8 products an instruction.
// K is packed as pairs of dims (4 x 4 transposes of 32-bit words per 4 keys x 8 dims), each Q row
// is loaded 4 pairs at a time and its pairs taken by lane (the indexed BFDOT). BFDOT flushes
// subnormal inputs and results to 0 (the contract says so); a lane's sums are in t order, a pair
// at a time.
#include <arm_neon.h>

#include <cstring>

#include "dispatch/kernels.h"
#include "kernels/generic/tile_bf16dot.hpp"
#include "kernels/generic/transpose_f32.hpp"

namespace attnscore {
namespace {

constexpr std::size_t kMR = 8, kNR = 8, kW = 4;
using B = xsimd::batch<float, xsimd::neon64>;

// panel[p * kNR + j] = pair p of key j (zero for j >= cols): whole blocks of 4 keys x 4 pairs as
// 4 x 4 transposes of 32-bit words, the rest one word at a time.
ATTNSCORE_KERNEL_ENTRY void pack(std::size_t cols, std::size_t d, const std::uint16_t *k,
                                 std::size_t ldk, float *panel_f) noexcept {
  auto *panel = reinterpret_cast<std::uint32_t *>(panel_f);
  const std::size_t full = d / 2, pairs = (d + 1) / 2;
  std::size_t p = 0;
  for (; p + kW <= full; p += kW) {
    for (std::size_t j0 = 0; j0 < kNR; j0 += kW) {
      B r[kW];
      for (std::size_t i = 0; i < kW; ++i)
        r[i] = j0 + i < cols ? B(vreinterpretq_f32_u16(vld1q_u16(k + (j0 + i) * ldk + 2 * p)))
                             : B(0.0f);
      tile::Transpose<xsimd::neon64>::run(r);
      for (std::size_t i = 0; i < kW; ++i) r[i].store_aligned(panel_f + (p + i) * kNR + j0);
    }
  }
  for (; p < pairs; ++p)
    for (std::size_t j = 0; j < kNR; ++j)
      panel[p * kNR + j] = j < cols ? tile::bf16_pair(k + j * ldk, 2 * p, d) : 0u;
}

inline bfloat16x8_t kpairs(const float *panel, std::size_t p, std::size_t v) noexcept {
  return vreinterpretq_bf16_f32(vld1q_f32(panel + p * kNR + v * kW));
}

// Register map (v registers), R rows:
//   acc[i][v]  2R: S[i][4 v .. 4 v + 3], one key per lane
//   qv[i]      R: 4 pairs of dims of Q row i, taken by lane
//   k          2 at a time: the panel's pair p of keys 4 v ..
// Per 4 pairs of dims: R + 8 loads, 8R indexed BFDOT (64 R products).
template <std::size_t R>
void dot_tile(std::size_t rows, std::size_t cols, std::size_t d, const std::uint16_t *q,
              std::size_t ldq, const float *panel, float *s, std::size_t lds, float scale,
              unsigned flags) noexcept {
  const std::uint16_t *qr[R];
  for (std::size_t i = 0; i < R; ++i) qr[i] = q + (i < rows ? i : rows - 1) * ldq;
  float32x4_t acc[R][2];
  for (std::size_t i = 0; i < R; ++i) {
    if (flags & kAccumulate) {
      alignas(16) float part[kNR];
      const float *src = s + (i < rows ? i : rows - 1) * lds;
      for (std::size_t j = 0; j < kNR; ++j) part[j] = j < cols ? src[j] : 0.0f;
      acc[i][0] = vld1q_f32(part), acc[i][1] = vld1q_f32(part + kW);
    } else {
      acc[i][0] = acc[i][1] = vdupq_n_f32(0.0f);
    }
  }
  const std::size_t full = d / 2;
  std::size_t p = 0;
  for (; p + kW <= full; p += kW) {
    bfloat16x8_t qv[R];
    for (std::size_t i = 0; i < R; ++i) qv[i] = vreinterpretq_bf16_u16(vld1q_u16(qr[i] + 2 * p));
#define ATTNSCORE_BFDOT_LANE(l)                                                    \
  {                                                                                \
    const bfloat16x8_t k0 = kpairs(panel, p + l, 0), k1 = kpairs(panel, p + l, 1); \
    for (std::size_t i = 0; i < R; ++i) {                                          \
      acc[i][0] = vbfdotq_laneq_f32(acc[i][0], k0, qv[i], l);                      \
      acc[i][1] = vbfdotq_laneq_f32(acc[i][1], k1, qv[i], l);                      \
    }                                                                              \
  }
    // The lane is an immediate: one block per lane.
    ATTNSCORE_BFDOT_LANE(0) ATTNSCORE_BFDOT_LANE(1) ATTNSCORE_BFDOT_LANE(2) ATTNSCORE_BFDOT_LANE(3)
#undef ATTNSCORE_BFDOT_LANE
  }
  for (; p < (d + 1) / 2; ++p) {  // the last pairs one at a time (an odd d's upper half 0)
    const bfloat16x8_t k0 = kpairs(panel, p, 0), k1 = kpairs(panel, p, 1);
    for (std::size_t i = 0; i < R; ++i) {
      const bfloat16x8_t qb = vreinterpretq_bf16_u32(vdupq_n_u32(tile::bf16_pair(qr[i], 2 * p, d)));
      acc[i][0] = vbfdotq_f32(acc[i][0], k0, qb);
      acc[i][1] = vbfdotq_f32(acc[i][1], k1, qb);
    }
  }
  const float32x4_t sc = vdupq_n_f32((flags & kFinal) ? scale : 1.0f);
  for (std::size_t i = 0; i < rows; ++i) {
    // Whole tiles straight to S; an edge tile through a buffer (never past its columns).
    alignas(16) float out[kNR];
    float *dst = cols == kNR ? s + i * lds : out;
    for (std::size_t v = 0; v < 2; ++v)
      vst1q_f32(dst + v * kW, (flags & kFinal) ? vmulq_f32(acc[i][v], sc) : acc[i][v]);
    if (cols != kNR)
      for (std::size_t j = 0; j < cols; ++j) s[i * lds + j] = out[j];
  }
}

}  // namespace

ATTNSCORE_DEFINE_BF16DOT(qk_bf16_8x8__neon_bf16, ATTNSCORE_LEVEL_NEON, ATTNSCORE_CPU_BF16, pack,
                         kMR, kNR, kTuneGeneric)

}  // namespace attnscore
