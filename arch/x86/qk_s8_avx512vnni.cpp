// SPDX-License-Identifier: Apache-2.0
// Level avx512vnni (avx512 flags + -mavx512vnni): s8 8x32c4 tile on the EVEX vpdpbusd (the
// operations and the Q + 128 / -128 * sum(k) scheme in ops_s8_vnni.hpp).
// 32 zmm: 16 accumulators (8 rows x 2 vectors of 16 keys), 2 panel vectors, 1 broadcast of 4
// bytes of Q. Per group of 4 dims: 2 panel loads + 8 broadcast loads feed 16 vpdpbusd.
#include <immintrin.h>

#include "kernels/generic/ops_s8_vnni.hpp"
#include "kernels/generic/tile_s8.hpp"

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
};
using OpsVnni512 = tile::OpsVnni<xsimd::avx512f, Dp512>;

}  // namespace

ATTNSCORE_DEFINE_QK_S8(qk_s8_8x32c4__avx512vnni, ATTNSCORE_LEVEL_AVX512VNNI, OpsVnni512, 8, 2)

}  // namespace attnscore
