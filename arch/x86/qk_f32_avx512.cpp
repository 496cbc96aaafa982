// SPDX-License-Identifier: Apache-2.0
// Level avx512 (-mavx512f/bw/dq/vl): f32 8x32 outer-product tile.
// 32 zmm: 16 FMA accumulators (8 rows x 2 vectors of 16 keys), 2 panel vectors, 1 broadcast of q.
// Per step of d: 2 panel loads + 8 broadcast loads feed 16 FMAs, so two 512-bit FMA pipes
// (Zen 5, Skylake-SP) stay busy with loads to spare.
#include "kernels/generic/tile_f32.hpp"

namespace attnscore {

ATTNSCORE_DEFINE_QK_F32(qk_f32_8x32__avx512, ATTNSCORE_LEVEL_AVX512, xsimd::avx512f, 8, 2, 2)

}  // namespace attnscore
