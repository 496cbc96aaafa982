// SPDX-License-Identifier: Apache-2.0
// Level neon_i8mm (-march=armv8.2-a+dotprod+i8mm, aarch64): s8 8x8c8 tile on smmla. smmla
// multiplies a 2x8 by an 8x2 int8 matrix into 2x2 int32 lanes: 32 products an instruction, all
// of them used, against sdot's 16. Its operands are pairs: 8 dims of two rows of Q (prepared once
// per call) and 8 dims of two keys, so the panel groups 8 dims (kg = 8):
// panel[(g * 8 + j) * 8 + u] = k[j][8g + u], and keys 2v, 2v + 1 of a group are one vector.
//
// Register map (32 q registers), per group of 8 dims:
//   acc[p][v]  16 accumulators: rows 2p, 2p + 1 x keys 2v, 2v + 1, lanes (r0 k0, r0 k1, r1 k0,
//              r1 k1)
//   kv[v]      4 panel vectors (key pairs)
//   qv         1 Q row-pair vector
// 4 panel loads + 4 Q loads feed 16 smmla (8 x 8 x 8 products).
#include <arm_neon.h>

#include "kernels/generic/tile_s8.hpp"

namespace attnscore {
namespace {

constexpr std::size_t kMR = 8, kNR = 8, kG = 8;
using Arch = xsimd::neon64;

// Decode (raw K, decode_raw in tile_s8.hpp) runs sdot, which this level has too.
struct OpsI8mmRow {
  using Acc = xsimd::batch<std::int32_t, Arch>;
  static constexpr std::size_t kRowBytes = 16;
  static constexpr std::int32_t kRowBias = 0;
  static Acc row_madd(Acc acc, const std::int8_t *k, const std::int8_t *q) noexcept {
    return vdotq_s32(acc, vld1q_s8(k), vld1q_s8(q));
  }
};

// `rows` <= MR rows (MR even) x `cols` keys of S from ceil(cols / 8) panels (see kernels.h).
template <std::size_t MR>
void mmla_panels(std::size_t rows, std::size_t cols, std::size_t d, const std::int8_t *q,
                 std::size_t ldq, const std::int8_t *panel, const float *qs, const float *ks,
                 float *s, std::size_t lds, unsigned flags) noexcept {
  constexpr std::size_t P = MR / 2, NV = kNR / 2;
  const std::size_t groups = (d + kG - 1) / kG;
  // Row pairs, 16 bytes a group: 8 dims of row 2p, then of row 2p + 1 (a missing odd row
  // repeats the last; its results are not stored), zero past d.
  alignas(16) std::int8_t qp[P][2 * kS8Chunk];
  for (std::size_t p = 0; p < P; ++p)
    for (std::size_t h = 0; h < 2; ++h) {
      const std::size_t r = 2 * p + h < rows ? 2 * p + h : rows - 1;
      for (std::size_t g = 0; g < groups; ++g) {
        std::int8_t *dst = qp[p] + 16 * g + 8 * h;
        const std::size_t n = d - kG * g < kG ? d - kG * g : kG;
        std::memcpy(dst, q + r * ldq + kG * g, n);
        std::memset(dst + n, 0, kG - n);
      }
    }

  for (std::size_t j = 0; j < cols; j += kNR, panel += kNR * groups * kG) {
    int32x4_t acc[P][NV];
    for (std::size_t p = 0; p < P; ++p)
      for (std::size_t v = 0; v < NV; ++v) acc[p][v] = vdupq_n_s32(0);
    for (std::size_t g = 0; g < groups; ++g) {
      int8x16_t kv[NV];
      for (std::size_t v = 0; v < NV; ++v) kv[v] = vld1q_s8(panel + (g * kNR + 2 * v) * kG);
      for (std::size_t p = 0; p < P; ++p) {
        const int8x16_t qv = vld1q_s8(qp[p] + 16 * g);
        for (std::size_t v = 0; v < NV; ++v) acc[p][v] = vmmlaq_s32(acc[p][v], qv, kv[v]);
      }
    }
    const std::size_t cj = cols - j < kNR ? cols - j : kNR;
    for (std::size_t p = 0; p < P; ++p) {
      // Row 2p: the low halves (keys 2v, 2v + 1) in key order; row 2p + 1: the high halves.
      alignas(16) std::int32_t out[2][kNR];
      for (std::size_t v = 0; v < NV; ++v) {
        vst1_s32(out[0] + 2 * v, vget_low_s32(acc[p][v]));
        vst1_s32(out[1] + 2 * v, vget_high_s32(acc[p][v]));
      }
      for (std::size_t h = 0; h < 2 && 2 * p + h < rows; ++h)
        tile::store_row<Arch, kNR>(out[h], cj, qs[2 * p + h], ks + j, s + (2 * p + h) * lds + j,
                                   flags);
    }
  }
}

}  // namespace

ATTNSCORE_KERNEL_ENTRY void qk_s8_8x8c8__neon_i8mm(std::size_t rows, std::size_t cols,
                                                   std::size_t d, const std::int8_t *q,
                                                   std::size_t ldq, const std::int8_t *panel,
                                                   const std::int32_t *, const float *qs,
                                                   const float *ks, float *s, std::size_t lds,
                                                   unsigned flags) noexcept {
  // Fewer rows run fewer row pairs (decode, the bottom edge).
  if (rows <= 2)
    mmla_panels<2>(rows, cols, d, q, ldq, panel, qs, ks, s, lds, flags);
  else if (rows <= 4)
    mmla_panels<4>(rows, cols, d, q, ldq, panel, qs, ks, s, lds, flags);
  else
    mmla_panels<kMR>(rows, cols, d, q, ldq, panel, qs, ks, s, lds, flags);
}

// Each key's 8-dim groups are whole 8-byte moves; padding keys and dims are zeros.
ATTNSCORE_KERNEL_ENTRY void qk_s8_8x8c8__neon_i8mm_pack(std::size_t cols, std::size_t d,
                                                        const std::int8_t *k, std::size_t ldk,
                                                        std::int8_t *panel,
                                                        std::int32_t *) noexcept {
  const std::size_t groups = (d + kG - 1) / kG;
  for (std::size_t g = 0; g < groups; ++g) {
    const std::size_t n = d - kG * g < kG ? d - kG * g : kG;
    for (std::size_t j = 0; j < kNR; ++j) {
      std::int8_t *dst = panel + (g * kNR + j) * kG;
      if (j < cols) {
        std::memcpy(dst, k + j * ldk + kG * g, n);
        std::memset(dst + n, 0, kG - n);
      } else {
        std::memset(dst, 0, kG);
      }
    }
  }
}

// (the scalar quantizers: see qk_s8_neon.cpp)
extern const KernelS8 qk_s8_8x8c8__neon_i8mm_kernel = {"qk_s8_8x8c8__neon_i8mm",
                                                       ATTNSCORE_LEVEL_NEON_I8MM,
                                                       kMR,
                                                       kNR,
                                                       kG,
                                                       qk_s8_8x8c8__neon_i8mm,
                                                       qk_s8_8x8c8__neon_i8mm_pack,
                                                       quantize_s8_scalar,
                                                       quantize_scaled_s8_scalar,
                                                       tile::decode_raw<OpsI8mmRow>};

}  // namespace attnscore
