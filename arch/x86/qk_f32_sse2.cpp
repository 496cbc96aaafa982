// SPDX-License-Identifier: Apache-2.0
// Level sse2 (x86-64 baseline, no extra flags): f32 6x8 outer-product tile.
// 16 xmm: 12 accumulators (6 rows x 2 vectors of 4 keys), 2 panel vectors, 1 broadcast of q.
// No FMA at this level: each step is a multiply then an add, in the same order as the scalar
// level.
#include "kernels/generic/tile_f32.hpp"

namespace attnscore {

ATTNSCORE_DEFINE_QK_F32(qk_f32_6x8__sse2, ATTNSCORE_LEVEL_SSE2, xsimd::sse2, 6, 2, 2)

}  // namespace attnscore
