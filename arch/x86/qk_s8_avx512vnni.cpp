// SPDX-License-Identifier: Apache-2.0
// Level avx512vnni (avx512 flags + -mavx512vnni): s8 8x32c4 tile on the EVEX vpdpbusd (the
// operations and the Q + 128 / -128 * sum(k) scheme in ops_s8_vnni.hpp).
// 32 zmm: 16 accumulators (8 rows x 2 vectors of 16 keys), 2 panel vectors, 1 broadcast of 4
// bytes of Q. Per group of 4 dims: 2 panel loads + 8 broadcast loads feed 16 vpdpbusd.
#include <immintrin.h>

#include "ops_s8_vnni.hpp"
#include "tile_s8.hpp"

// GCC 12 reports maybe-uninitialized inside its own AVX-512 headers (the _mm512_undefined_ps of
// the unmasked max/roundscale intrinsics that xsimd's float batches use): a false positive.
#if defined(__GNUC__) && !defined(__clang__)  // (clang has no such warning)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace attnscore {
namespace {

struct Dp512 {
  static __m512i dpbusd(__m512i acc, __m512i u8, __m512i s8) noexcept {
    return _mm512_dpbusd_epi32(acc, u8, s8);
  }
  // (the all-ones maskz extracts: the plain ones trip GCC 12's false -Wmaybe-uninitialized)
  static std::int32_t hsum(__m512i x) noexcept {
    const __m256i h = _mm256_add_epi32(_mm512_maskz_extracti32x8_epi32(0xff, x, 0),
                                       _mm512_maskz_extracti32x8_epi32(0xff, x, 1));
    __m128i v = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0x4e));
    return _mm_cvtsi128_si32(_mm_add_epi32(v, _mm_shuffle_epi32(v, 0xb1)));
  }
  // n < 64 bytes, the rest zero: a masked load, which never touches the bytes past n.
  static __m512i load_tail(const std::uint8_t *p, std::size_t n) noexcept {
    return _mm512_maskz_loadu_epi8((__mmask64{1} << n) - 1, p);
  }
};
using OpsVnni512 = tile::OpsVnni<xsimd::avx512f, Dp512>;

}  // namespace

ATTNSCORE_DEFINE_QK_S8(qk_s8_8x32c4__avx512vnni, ATTNSCORE_LEVEL_AVX512VNNI, OpsVnni512, 8, 2)

}  // namespace attnscore
