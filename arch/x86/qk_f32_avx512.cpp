// SPDX-License-Identifier: Apache-2.0
// Level avx512 (-mavx512f/bw/dq/vl): f32 4x4 dot tile, 16 of 32 zmm as FMA accumulators.
#include "kernels.h"
#include "tile_f32.hpp"

namespace attnscore {

ATTNSCORE_KERNEL_ENTRY ATTNSCORE_DECLARE_QK_F32(qk_f32_4x4__avx512) {
  tile::qk_f32_dot<xsimd::avx512f, 4, 4>(rows, cols, d, q, ldq, k, ldk, s, lds, scale);
}

}  // namespace attnscore
