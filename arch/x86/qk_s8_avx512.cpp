// SPDX-License-Identifier: Apache-2.0
// Level avx512 (-mavx512f/bw/dq/vl): s8 8x16c4 tile, int8 sign-extended to 16 bits (vpmovsxbw)
// and multiplied in pairs (vpmaddwd): each pair sum is at most 2 * 128^2, exact in int32.
// One accumulator covers 8 keys, each key's sum split over two lanes (dims 0-1 and 2-3 of each
// group), added at the end.
// 32 zmm: 16 accumulators (8 rows x 2 vectors of 8 keys), 2 widened panel vectors, 1 broadcast
// of 4 int16 of Q.
#include <immintrin.h>

#include "kernels/generic/tile_s8.hpp"

// GCC 12 reports maybe-uninitialized inside its own AVX-512 headers (the _mm512_undefined_ps of
// the unmasked max/roundscale intrinsics that xsimd's float batches use): a false positive.
#if defined(__GNUC__) && !defined(__clang__)  // (clang has no such warning)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace attnscore {
namespace {

struct OpsAvx512 {
  using Arch = xsimd::avx512f;
  using Acc = xsimd::batch<std::int32_t, Arch>;
  using Qe = std::int16_t;
  using KV = __m512i;
  using QB = __m512i;
  static constexpr std::size_t kKeysPerVec = 8;
  static constexpr bool kVecQuant = true;
  static constexpr bool kBias = false;

  static void prep_q(const std::int8_t *src, std::size_t d, std::int16_t *dst) noexcept {
    std::size_t t = 0;
    for (; t + 32 <= d; t += 32)
      _mm512_storeu_si512(
          dst + t,
          _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + t))));
    if (t < d) {  // masked: never reads past the row
      const __mmask32 m = (~0u) >> (32 - (d - t));
      _mm512_storeu_si512(dst + t, _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(m, src + t)));
    }
  }
  static KV load_k(const std::int8_t *p) noexcept {
    return _mm512_cvtepi8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i *>(p)));
  }
  static QB bcast(const std::int16_t *p) noexcept {
    long long x;
    std::memcpy(&x, p, sizeof x);
    return _mm512_set1_epi64(x);
  }
  static Acc madd(Acc acc, QB q, KV k) noexcept {
    return _mm512_add_epi32(acc, _mm512_madd_epi16(k, q));
  }
  template <std::size_t NV>
  static void finish(const Acc (&acc)[NV], std::int32_t *out) noexcept {
    for (std::size_t v = 0; v < NV; ++v) {
      const __m512i a = acc[v];
      // (All-ones maskz forms: GCC 12 warns inside the plain intrinsics.)
      // Lane 2j + lane 2j+1 in the low half of each 64-bit lane, then narrowed: 8 keys in order.
      const __m512i pair = _mm512_add_epi32(a, _mm512_maskz_srli_epi64(0xff, a, 32));
      _mm256_store_si256(reinterpret_cast<__m256i *>(out + 8 * v),
                         _mm512_maskz_cvtepi64_epi32(0xff, pair));
    }
  }
  // Raw-K decode (decode_raw, tile_s8.hpp): 32 bytes of a K row and of Q, sign-extended, in
  // vpmaddwd pairs (each pair sum within 2 * 128^2: exact in int32).
  static constexpr std::size_t kRowBytes = 32;
  static constexpr std::int32_t kRowBias = 0;
  static Acc row_madd(Acc acc, const std::int8_t *k, const std::int8_t *q) noexcept {
    const __m512i kk =
        _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(k)));
    const __m512i qq =
        _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(q)));
    return _mm512_add_epi32(acc, _mm512_madd_epi16(kk, qq));
  }
  static void panel_sums(const std::int8_t *, std::size_t, std::size_t, std::int32_t *) noexcept {}
};

}  // namespace

ATTNSCORE_DEFINE_QK_S8(qk_s8_8x16c4__avx512, ATTNSCORE_LEVEL_AVX512, OpsAvx512, 8, 2)

}  // namespace attnscore
