// SPDX-License-Identifier: Apache-2.0
// Level avx2: bf16 on the 6x16 f32 tile (qk_f32_6x16__avx2). Each element is widened exactly to f32
// (vpmovzxwd and a 16-bit shift) while K is packed or streamed and while Q is read; the FMA loop
// is the f32 one. Same NV = 2, KB = 4 as the f32 kernel.
#include "kernels/generic/tile_f16.hpp"

namespace attnscore {

ATTNSCORE_DEFINE_QK_16(qk_bf16_6x16__avx2, Bf16, qk_f32_6x16__avx2, ATTNSCORE_LEVEL_AVX2,
                       xsimd::fma3<xsimd::avx2>, 2, 4)

}  // namespace attnscore
