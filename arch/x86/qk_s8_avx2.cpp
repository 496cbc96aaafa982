// SPDX-License-Identifier: Apache-2.0
// Level avx2 (-mavx2 -mfma -mf16c): s8 4x8c4 tile, int8 sign-extended to 16 bits (vpmovsxbw)
// and multiplied in pairs (vpmaddwd): each pair sum is at most 2 * 128^2, exact in int32 (never
// vpmaddubsw, whose 16-bit pair sums saturate at -128 * -128 * 2). One accumulator covers 4
// keys, each key's sum split over two lanes, added at the end.
// 16 ymm: 8 accumulators (4 rows x 2 vectors of 4 keys), 2 widened panel vectors, 1 broadcast
// of 4 int16 of Q, the products.
#include <immintrin.h>

#include "kernels/generic/tile_s8.hpp"

namespace attnscore {
namespace {

struct OpsAvx2 {
  using Arch = xsimd::fma3<xsimd::avx2>;
  using Acc = xsimd::batch<std::int32_t, Arch>;
  using Qe = std::int16_t;
  using KV = __m256i;
  using QB = __m256i;
  static constexpr std::size_t kKeysPerVec = 4;
  static constexpr bool kVecQuant = true;
  static constexpr bool kBias = false;

  static void prep_q(const std::int8_t *src, std::size_t d, std::int16_t *dst) noexcept {
    std::size_t t = 0;
    for (; t + 16 <= d; t += 16)
      _mm256_storeu_si256(
          reinterpret_cast<__m256i *>(dst + t),
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i *>(src + t))));
    for (; t < d; ++t) dst[t] = src[t];
    for (; t % 4 != 0; ++t) dst[t] = 0;
  }
  static KV load_k(const std::int8_t *p) noexcept {
    return _mm256_cvtepi8_epi16(_mm_load_si128(reinterpret_cast<const __m128i *>(p)));
  }
  static QB bcast(const std::int16_t *p) noexcept {
    long long x;
    std::memcpy(&x, p, sizeof x);
    return _mm256_set1_epi64x(x);
  }
  static Acc madd(Acc acc, QB q, KV k) noexcept {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(k, q));
  }
  template <std::size_t NV>
  static void finish(const Acc (&acc)[NV], std::int32_t *out) noexcept {
    const __m256i even = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    for (std::size_t v = 0; v < NV; ++v) {
      const __m256i a = acc[v];
      const __m256i pair = _mm256_add_epi32(a, _mm256_srli_epi64(a, 32));
      _mm_store_si128(reinterpret_cast<__m128i *>(out + 4 * v),
                      _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(pair, even)));
    }
  }
  // Raw-K decode (decode_raw, tile_s8.hpp): 16 bytes of a K row and of Q, sign-extended, in
  // vpmaddwd pairs (each pair sum within 2 * 128^2: exact in int32).
  static constexpr std::size_t kRowBytes = 16;
  static constexpr std::int32_t kRowBias = 0;
  static Acc row_madd(Acc acc, const std::int8_t *k, const std::int8_t *q) noexcept {
    const __m256i kk = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i *>(k)));
    const __m256i qq = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i *>(q)));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(kk, qq));
  }
  static void panel_sums(const std::int8_t *, std::size_t, std::size_t, std::int32_t *) noexcept {}
};

}  // namespace

ATTNSCORE_DEFINE_QK_S8(qk_s8_4x8c4__avx2, ATTNSCORE_LEVEL_AVX2, OpsAvx2, 4, 2)

}  // namespace attnscore
