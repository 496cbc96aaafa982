// SPDX-License-Identifier: Apache-2.0
// Level neon (aarch64 ASIMD, armv7 NEON): s8 tile on widening multiplies. vmull_s8 makes 8
// int16 products (each within -128 * 127 ... 128^2, exact in int16) of 2 keys x 4 dims, and
// vpadalq_s16 adds them in pairs into int32 lanes: pairs are only ever summed in 32 bits (two
// -128 * -128 products would overflow int16). Each key's sum is split over two lanes, added at
// the end.
//   aarch64 4x8c4: 16 accumulators (4 rows x 4 vectors of 2 keys), 4 panel d-registers, 1
//     broadcast of 4 bytes of Q, the products.
//   armv7 2x8c4: 8 accumulators (2 rows x 4 vectors of 2 keys) of the 16 q registers.
#include <arm_neon.h>

#include "kernels/generic/tile_s8.hpp"

namespace attnscore {
namespace {

struct OpsNeon {
#if defined(__aarch64__)
  using Arch = xsimd::neon64;
#else
  using Arch = xsimd::neon;
#endif
  using Acc = xsimd::batch<std::int32_t, Arch>;
  using Qe = std::int8_t;
  using KV = int8x8_t;
  using QB = int8x8_t;
  static constexpr std::size_t kKeysPerVec = 2;
  // xsimd 8.1 divides float batches on NEON (AArch64 too) with a reciprocal estimate, not
  // correctly rounded: the scalar quantizer, whose bits every level shares.
  static constexpr bool kVecQuant = false;
  static constexpr bool kBias = false;

  static void prep_q(const std::int8_t *src, std::size_t d, std::int8_t *dst) noexcept {
    std::memcpy(dst, src, d);
    for (std::size_t t = d; t % 4 != 0; ++t) dst[t] = 0;
  }
  static KV load_k(const std::int8_t *p) noexcept { return vld1_s8(p); }
  static QB bcast(const std::int8_t *p) noexcept {
    std::int32_t x;
    std::memcpy(&x, p, sizeof x);
    return vreinterpret_s8_s32(vdup_n_s32(x));
  }
  static Acc madd(Acc acc, QB q, KV k) noexcept { return vpadalq_s16(acc, vmull_s8(k, q)); }
  template <std::size_t NV>
  static void finish(const Acc (&acc)[NV], std::int32_t *out) noexcept {
    static_assert(NV % 2 == 0, "keys are finished four at a time");
    for (std::size_t v = 0; v < NV; v += 2) {
      const int32x4_t a = acc[v], b = acc[v + 1];
#if defined(__aarch64__)
      vst1q_s32(out + 2 * v, vpaddq_s32(a, b));
#else
      vst1q_s32(out + 2 * v, vcombine_s32(vpadd_s32(vget_low_s32(a), vget_high_s32(a)),
                                          vpadd_s32(vget_low_s32(b), vget_high_s32(b))));
#endif
    }
  }
  // Raw-K decode (decode_raw, tile_s8.hpp): 16 bytes of a K row and of Q in two widening
  // multiplies, pairs added in 32 bits, as madd.
  static constexpr std::size_t kRowBytes = 16;
  static constexpr std::int32_t kRowBias = 0;
  static Acc row_madd(Acc acc, const std::int8_t *k, const std::int8_t *q) noexcept {
    const int8x16_t kk = vld1q_s8(k), qq = vld1q_s8(q);
    const int32x4_t a = vpadalq_s16(acc, vmull_s8(vget_low_s8(kk), vget_low_s8(qq)));
    return vpadalq_s16(a, vmull_s8(vget_high_s8(kk), vget_high_s8(qq)));
  }
  static void panel_sums(const std::int8_t *, std::size_t, std::size_t, std::int32_t *) noexcept {}
};

}  // namespace

#if defined(__aarch64__)
ATTNSCORE_DEFINE_QK_S8(qk_s8_4x8c4__neon, ATTNSCORE_LEVEL_NEON, OpsNeon, 4, 4)
#else
ATTNSCORE_DEFINE_QK_S8(qk_s8_2x8c4__neon, ATTNSCORE_LEVEL_NEON, OpsNeon, 2, 4)
#endif

}  // namespace attnscore
