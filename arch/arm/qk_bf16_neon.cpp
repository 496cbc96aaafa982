// SPDX-License-Identifier: Apache-2.0
// Level neon: bf16 on the f32 tile of the level (AArch64 8x8, armv7 4x12). Each element is widened
// exactly to f32 (vshll #16) while K is packed or streamed and while Q is read; the FMA loop is the
// f32 one. Same NV and KB as the f32 kernel.
#include "kernels/generic/tile_f16.hpp"

namespace attnscore {

#if defined(__aarch64__)
ATTNSCORE_DEFINE_QK_16(qk_bf16_8x8__neon, Bf16, qk_f32_8x8__neon, ATTNSCORE_LEVEL_NEON,
                       tile::NeonArch, 2, 4)
#else
ATTNSCORE_DEFINE_QK_16(qk_bf16_4x12__neon, Bf16, qk_f32_4x12__neon, ATTNSCORE_LEVEL_NEON,
                       tile::NeonArch, 3, 2)
#endif

}  // namespace attnscore
