// SPDX-License-Identifier: Apache-2.0
// Level avx2 (-mavx2 -mfma -mf16c): f32 3x4 dot tile, 12 of 16 ymm as FMA accumulators.
#include "kernels.h"
#include "tile_f32.hpp"

namespace attnscore {

ATTNSCORE_KERNEL_ENTRY ATTNSCORE_DECLARE_QK_F32(qk_f32_3x4__avx2) {
  tile::qk_f32_dot<xsimd::fma3<xsimd::avx2>, 3, 4>(rows, cols, d, q, ldq, k, ldk, s, lds, scale);
}

}  // namespace attnscore
