// SPDX-License-Identifier: Apache-2.0
// Level neon_dotprod (-march=armv8.2-a+dotprod, aarch64): s8 8x8c4 tile on the indexed sdot.
// Each sdot adds, per int32 lane (one key), the 4 products of 4 dims: exact, one key per lane;
// its Q operand is one 4-byte lane of a register holding 16 dims of a Q row.
// 32 q registers, 4 groups a step: 16 accumulators (8 rows x 2 vectors of 4 keys), 8 Q rows of
// 16 dims, 2 panel vectors of the step's current group.
#include <arm_neon.h>

#include "kernels/generic/tile_s8.hpp"

namespace attnscore {
namespace {

struct OpsDot {
  using Arch = xsimd::neon64;
  using Acc = xsimd::batch<std::int32_t, Arch>;
  using Qe = std::int8_t;
  using KV = int8x16_t;
  using QB = int8x16_t;
  static constexpr std::size_t kKeysPerVec = 4;
  static constexpr bool kVecQuant = false;  // see qk_s8_neon.cpp
  static constexpr bool kBias = false;

  static void prep_q(const std::int8_t *src, std::size_t d, std::int8_t *dst) noexcept {
    std::memcpy(dst, src, d);
    for (std::size_t t = d; t % 4 != 0; ++t) dst[t] = 0;
  }
  static KV load_k(const std::int8_t *p) noexcept { return vld1q_s8(p); }
  static QB bcast(const std::int8_t *p) noexcept {
    std::int32_t x;
    std::memcpy(&x, p, sizeof x);
    return vreinterpretq_s8_s32(vdupq_n_s32(x));
  }
  static Acc madd(Acc acc, QB q, KV k) noexcept { return vdotq_s32(acc, k, q); }
  // The indexed sdot (tile_s8.hpp's step of 4 groups): sdot v.4s, k.16b, q.4b[L].
  static constexpr std::size_t kLaneGroups = 4;
  using QV = int8x16_t;
  static QV load_q(const std::int8_t *p) noexcept { return vld1q_s8(p); }
  template <std::size_t L>
  static Acc madd_lane(Acc acc, QV q, KV k) noexcept {
    return vdotq_laneq_s32(acc, k, q, L);
  }
  template <std::size_t NV>
  static void finish(const Acc (&acc)[NV], std::int32_t *out) noexcept {
    for (std::size_t v = 0; v < NV; ++v) vst1q_s32(out + 4 * v, acc[v]);
  }
  // Raw-K decode (decode_raw, tile_s8.hpp): sdot on 16 bytes of a K row and of Q.
  static constexpr std::size_t kRowBytes = 16;
  static constexpr std::int32_t kRowBias = 0;
  static Acc row_madd(Acc acc, const std::int8_t *k, const std::int8_t *q) noexcept {
    return vdotq_s32(acc, vld1q_s8(k), vld1q_s8(q));
  }
  static void panel_sums(const std::int8_t *, std::size_t, std::size_t, std::int32_t *) noexcept {}
};

}  // namespace

ATTNSCORE_DEFINE_QK_S8(qk_s8_8x8c4__neon_dotprod, ATTNSCORE_LEVEL_NEON_DOTPROD, OpsDot, 8, 2)

}  // namespace attnscore
