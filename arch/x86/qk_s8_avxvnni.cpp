// SPDX-License-Identifier: Apache-2.0
// Level avxvnni (avx2 flags + -mavxvnni): s8 6x16c4 tile on the VEX vpdpbusd of AVX-VNNI (the
// operations and the Q + 128 / -128 * sum(k) scheme in ops_s8_vnni.hpp, shared with avx512vnni).
// 16 ymm: 12 accumulators (6 rows x 2 vectors of 8 keys), 2 panel vectors, 1 broadcast of 4
// bytes of Q. Per group of 4 dims: 2 panel loads + 6 broadcast loads feed 12 vpdpbusd.
#include <immintrin.h>

#include "kernels/generic/ops_s8_vnni.hpp"
#include "kernels/generic/tile_s8.hpp"

namespace attnscore {
namespace {

struct Dp256 {
  // The VEX encoding (the _avx_ intrinsic): this level has no AVX-512.
  static __m256i dpbusd(__m256i acc, __m256i u8, __m256i s8) noexcept {
    return _mm256_dpbusd_avx_epi32(acc, u8, s8);
  }
};
using OpsAvxVnni = tile::OpsVnni<xsimd::fma3<xsimd::avx2>, Dp256>;

}  // namespace

ATTNSCORE_DEFINE_QK_S8(qk_s8_6x16c4__avxvnni, ATTNSCORE_LEVEL_AVXVNNI, OpsAvxVnni, 6, 2)

}  // namespace attnscore
