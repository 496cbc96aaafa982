// SPDX-License-Identifier: Apache-2.0
// Level avx512vnni (avx512 flags + -mavx512vnni): s8 8x32c4 tile on vpdpbusd.
// vpdpbusd multiplies unsigned by signed bytes, so Q goes in as Q + 128 (u8) and each key's
// result is corrected by -128 * sum(k), the sums taken once per packed panel. The biased
// products can pass 2^31 over long d; vpdpbusd wraps (no saturation), and the corrected sum is
// back in int32 range, so the wrapped arithmetic gives the exact result.
// 32 zmm: 16 accumulators (8 rows x 2 vectors of 16 keys), 2 panel vectors, 1 broadcast of 4
// bytes of Q. Per group of 4 dims: 2 panel loads + 8 broadcast loads feed 16 vpdpbusd.
#include <immintrin.h>

#include "tile_s8.hpp"

// GCC 12 reports maybe-uninitialized inside its own AVX-512 headers (the _mm512_undefined_ps of
// the unmasked max/roundscale intrinsics that xsimd's float batches use): a false positive.
#if defined(__GNUC__) && !defined(__clang__)  // (clang has no such warning)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace attnscore {
namespace {

struct OpsVnni {
  using Arch = xsimd::avx512f;
  using Acc = xsimd::batch<std::int32_t, Arch>;
  using Qe = std::uint8_t;
  using KV = __m512i;
  using QB = __m512i;
  static constexpr std::size_t kKeysPerVec = 16;
  static constexpr bool kVecQuant = true;
  static constexpr bool kBias = true;

  static void prep_q(const std::int8_t *src, std::size_t d, std::uint8_t *dst) noexcept {
    const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
    std::size_t t = 0;
    for (; t + 64 <= d; t += 64)
      _mm512_storeu_si512(dst + t, _mm512_xor_si512(_mm512_loadu_si512(src + t), bias));
    if (t < d) {  // masked: never reads past the row
      const __mmask64 m = (~0ull) >> (64 - (d - t));
      _mm512_storeu_si512(dst + t, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, src + t), bias));
    }
  }
  static KV load_k(const std::int8_t *p) noexcept { return _mm512_load_si512(p); }
  static QB bcast(const std::uint8_t *p) noexcept {
    std::int32_t x;
    std::memcpy(&x, p, sizeof x);
    return _mm512_set1_epi32(x);
  }
  static Acc madd(Acc acc, QB q, KV k) noexcept { return _mm512_dpbusd_epi32(acc, q, k); }
  template <std::size_t NV>
  static void finish(const Acc (&acc)[NV], const std::int32_t *sums, std::int32_t *out) noexcept {
    for (std::size_t v = 0; v < NV; ++v) {
      const __m512i corr = _mm512_maskz_slli_epi32(0xffff, _mm512_load_si512(sums + 16 * v), 7);
      _mm512_store_si512(out + 16 * v, _mm512_sub_epi32(acc[v], corr));
    }
  }
  static void panel_sums(const std::int8_t *panel, std::size_t groups, std::size_t nr,
                         std::int32_t *sums) noexcept {
    const __m512i ones = _mm512_set1_epi8(1);
    for (std::size_t v = 0; v < nr; v += 16) {
      __m512i s = _mm512_setzero_si512();
      for (std::size_t g = 0; g < groups; ++g)
        s = _mm512_dpbusd_epi32(s, ones, _mm512_load_si512(panel + (g * nr + v) * 4));
      _mm512_store_si512(sums + v, s);
    }
  }
};

}  // namespace

ATTNSCORE_DEFINE_QK_S8(qk_s8_8x32c4__avx512vnni, ATTNSCORE_LEVEL_AVX512VNNI, OpsVnni, 8, 2)

}  // namespace attnscore
