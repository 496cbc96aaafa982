// SPDX-License-Identifier: Apache-2.0
// Level neon: f16 on the f32 NEON tile (aarch64 qk_f32_8x8__neon: FCVTL; armv7
// qk_f32_4x12__neon: NEON-VFPv4 VCVT.F32.F16), K converted while packed or streamed. NV and KB
// are the f32 kernel's (qk_f32_neon.cpp).
#include "kernels/generic/tile_f16.hpp"

namespace attnscore {

#if defined(__aarch64__)
ATTNSCORE_DEFINE_QK_16(qk_f16_8x8__neon, std::uint16_t, qk_f32_8x8__neon, ATTNSCORE_LEVEL_NEON,
                       tile::NeonArch, 2, 4)
#else
ATTNSCORE_DEFINE_QK_16(qk_f16_4x12__neon, std::uint16_t, qk_f32_4x12__neon, ATTNSCORE_LEVEL_NEON,
                       tile::NeonArch, 3, 2)
#endif

}  // namespace attnscore
