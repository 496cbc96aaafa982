// SPDX-License-Identifier: Apache-2.0
// Level avx512: bf16 on the 8x32 f32 tile (qk_f32_8x32__avx512). Each element is widened exactly
// to f32 (vpmovzxwd and a 16-bit shift, 16 per zmm) while K is packed or streamed and while Q is
// read; the FMA loop is the f32 one. Same NV = 2, KB = 2 as the f32 kernel.
#include "kernels/generic/tile_f16.hpp"

namespace attnscore {

ATTNSCORE_DEFINE_QK_16(qk_bf16_8x32__avx512, Bf16, qk_f32_8x32__avx512, ATTNSCORE_LEVEL_AVX512,
                       xsimd::avx512f, 2, 2)

}  // namespace attnscore
