// SPDX-License-Identifier: Apache-2.0
// Level sse2: bf16 on the 6x8 f32 tile (qk_f32_6x8__sse2). Each element is widened exactly to f32
// (interleaved below a zero half, punpcklwd) while K is packed or streamed and while Q is read;
// the arithmetic is the f32 kernel's. Same NV = 2, KB = 2 as the f32 kernel.
#include "kernels/generic/tile_f16.hpp"

namespace attnscore {

ATTNSCORE_DEFINE_QK_16(qk_bf16_6x8__sse2, Bf16, qk_f32_6x8__sse2, ATTNSCORE_LEVEL_SSE2, xsimd::sse2,
                       2, 2)

}  // namespace attnscore
