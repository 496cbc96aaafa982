// SPDX-License-Identifier: Apache-2.0
// The opt-in bf16 dot-product kernel (ATTNSCORE_ATTN_BF16_DOT) on AArch64 with the BF16 extension
// (ARMv8.6; Neoverse V1/N2, Graviton3, Cortex-A510/A710/X2 and later), a row of the neon level
// that also needs it: BFMMLA multiplies a 2 x 4 block of bf16 (two Q rows, four dims) by a 4 x 2
// block (four dims of two keys) into a 2 x 2 block of f32 sums, 16 products an instruction, twice
// BFDOT's at the same issue rate on every core llvm-mca models. Architecturally each sum is two
// BFDOT steps, dims 4g, 4g + 1 and then 4g + 2, 4g + 3: BFDOT's flushing and rounding, a lane's
// sums in t order, a pair at a time (the contract says so). K is packed as 4 dims of a key pair
// (two 64-bit halves zipped), and Q the same way for its row pairs (qpack, once per block of
// panels: zipped in the loop, the zips took the multiply pipes' issue slots).
#include <arm_neon.h>

#include <cstring>

#include "dispatch/kernels.h"
#include "kernels/generic/tile_bf16dot.hpp"

namespace attnscore {
namespace {

constexpr std::size_t kMR = 8, kNR = 8, kKP = kNR / 2, kRP = kMR / 2;  // key pairs, row pairs

// Dims 4g ... 4g + 3 of a row, 0 past d.
inline uint16x4_t group_tail(const std::uint16_t *row, std::size_t g, std::size_t d) noexcept {
  std::uint16_t v[4] = {};
  for (std::size_t u = 0; u < 4 && 4 * g + u < d; ++u) v[u] = row[4 * g + u];
  return vld1_u16(v);
}

// Rows 2p and 2p + 1 of `src` (zero past n) in blocks of 16 bytes, dims 4g ... 4g + 3 of row 2p
// then of row 2p + 1, block (g, p) at out + (g * pairs + p) * 8 (zero past d, whole groups).
void zip_pairs(std::size_t n, std::size_t pairs, std::size_t d, const std::uint16_t *src,
               std::size_t ld, std::uint16_t *out) noexcept {
  const std::size_t groups = (d + 3) / 4;
  for (std::size_t p = 0; p < pairs; ++p) {
    const std::size_t r0 = 2 * p, r1 = 2 * p + 1;
    std::size_t g = 0;
    for (; 4 * g + 8 <= d; g += 2) {
      const uint64x2_t a =
          r0 < n ? vreinterpretq_u64_u16(vld1q_u16(src + r0 * ld + 4 * g)) : vdupq_n_u64(0);
      const uint64x2_t b =
          r1 < n ? vreinterpretq_u64_u16(vld1q_u16(src + r1 * ld + 4 * g)) : vdupq_n_u64(0);
      vst1q_u16(out + (g * pairs + p) * 8, vreinterpretq_u16_u64(vzip1q_u64(a, b)));
      vst1q_u16(out + ((g + 1) * pairs + p) * 8, vreinterpretq_u16_u64(vzip2q_u64(a, b)));
    }
    for (; g < groups; ++g) {
      const uint16x4_t a = r0 < n ? group_tail(src + r0 * ld, g, d) : vdup_n_u16(0);
      const uint16x4_t b = r1 < n ? group_tail(src + r1 * ld, g, d) : vdup_n_u16(0);
      vst1q_u16(out + (g * pairs + p) * 8, vcombine_u16(a, b));
    }
  }
}

// K: the panel of `cols` keys (block (g, kp) of keys 2kp, 2kp + 1).
ATTNSCORE_KERNEL_ENTRY void pack(std::size_t cols, std::size_t d, const std::uint16_t *k,
                                 std::size_t ldk, float *panel) noexcept {
  zip_pairs(cols, kKP, d, k, ldk, reinterpret_cast<std::uint16_t *>(panel));
}

// Q: `rows` rows as the tile reads them (block (g, r) of rows 2r, 2r + 1).
ATTNSCORE_KERNEL_ENTRY void qpack(std::size_t rows, std::size_t d, const std::uint16_t *q,
                                  std::size_t ldq, std::uint16_t *out) noexcept {
  zip_pairs(rows, kRP, d, q, ldq, out);
}

inline bfloat16x8_t block(const std::uint16_t *p, std::size_t i) noexcept {
  return vreinterpretq_bf16_u16(vld1q_u16(p + i * 8));
}

// Register map (v registers), R rows in P = ceil(R / 2) row pairs:
//   acc[r][kp]  4P: S[2r .. 2r + 1][2kp .. 2kp + 1] (2 x 2: lanes 0-1 row 2r, 2-3 row 2r + 1)
//   qg[r]       P: dims 4g ... 4g + 3 of rows 2r and 2r + 1 (qpack's block)
//   kg[kp]      4: the same dims of keys 2kp and 2kp + 1 (the panel's block)
// Per 4 dims: P + 4 loads, 4P BFMMLA (64 P products).
template <std::size_t R>
void dot_tile(std::size_t rows, std::size_t cols, std::size_t d, const std::uint16_t *q,
              std::size_t, const float *panel, float *s, std::size_t lds, float scale,
              unsigned flags) noexcept {
  constexpr std::size_t P = (R + 1) / 2;
  const auto *kz = reinterpret_cast<const std::uint16_t *>(panel);
  float32x4_t acc[P][kKP];
  for (std::size_t r = 0; r < P; ++r) {
    alignas(16) float part[2][kNR] = {};
    if (flags & kAccumulate)
      for (std::size_t h = 0; h < 2; ++h)
        if (2 * r + h < rows)
          for (std::size_t j = 0; j < cols; ++j) part[h][j] = s[(2 * r + h) * lds + j];
    for (std::size_t kp = 0; kp < kKP; ++kp) {
      const float64x2_t a = vreinterpretq_f64_f32(vld1q_f32(part[0] + (kp & ~std::size_t{1}) * 2));
      const float64x2_t b = vreinterpretq_f64_f32(vld1q_f32(part[1] + (kp & ~std::size_t{1}) * 2));
      acc[r][kp] = vreinterpretq_f32_f64(kp % 2 == 0 ? vzip1q_f64(a, b) : vzip2q_f64(a, b));
    }
  }
  for (std::size_t g = 0, groups = (d + 3) / 4; g < groups; ++g) {
    bfloat16x8_t qg[P], kg[kKP];
    for (std::size_t r = 0; r < P; ++r) qg[r] = block(q, g * kRP + r);
    for (std::size_t kp = 0; kp < kKP; ++kp) kg[kp] = block(kz, g * kKP + kp);
    for (std::size_t r = 0; r < P; ++r)
      for (std::size_t kp = 0; kp < kKP; ++kp) acc[r][kp] = vbfmmlaq_f32(acc[r][kp], qg[r], kg[kp]);
  }
  const float32x4_t sc = vdupq_n_f32((flags & kFinal) ? scale : 1.0f);
  for (std::size_t r = 0; r < P; ++r) {
    alignas(16) float out[2][kNR];
    for (std::size_t kp = 0; kp < kKP; kp += 2) {
      const float64x2_t a = vreinterpretq_f64_f32(vmulq_f32(acc[r][kp], sc));
      const float64x2_t b = vreinterpretq_f64_f32(vmulq_f32(acc[r][kp + 1], sc));
      vst1q_f32(out[0] + 2 * kp, vreinterpretq_f32_f64(vzip1q_f64(a, b)));
      vst1q_f32(out[1] + 2 * kp, vreinterpretq_f32_f64(vzip2q_f64(a, b)));
    }
    for (std::size_t h = 0; h < 2; ++h)
      if (2 * r + h < rows) std::memcpy(s + (2 * r + h) * lds, out[h], cols * sizeof(float));
  }
}

}  // namespace

ATTNSCORE_DEFINE_BF16DOT(qk_bf16_8x8__neon_bf16, ATTNSCORE_LEVEL_NEON, ATTNSCORE_CPU_BF16, pack,
                         qpack, kMR, kNR, kTuneGeneric)

}  // namespace attnscore
