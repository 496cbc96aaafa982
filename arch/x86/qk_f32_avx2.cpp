// SPDX-License-Identifier: Apache-2.0
// Level avx2 (-mavx2 -mfma -mf16c): f32 6x16 outer-product tile (the BLIS/MLAS Haswell shape).
// 16 ymm: 12 FMA accumulators (6 rows x 2 vectors of 8 keys), 2 panel vectors, 1 broadcast of q;
// two FMA pipes of latency 4-5 need >= 10 independent accumulators.
#include "kernels/generic/tile_f32.hpp"

namespace attnscore {

ATTNSCORE_DEFINE_QK_F32(qk_f32_6x16__avx2, ATTNSCORE_LEVEL_AVX2, xsimd::fma3<xsimd::avx2>, 6, 2, 4)

}  // namespace attnscore
