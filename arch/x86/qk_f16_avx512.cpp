// SPDX-License-Identifier: Apache-2.0
// Level avx512: f16 on the 8x32 f32 tile (qk_f32_8x32__avx512). K is converted with
// _mm512_cvtph_ps (16 halves per zmm) while it is packed or streamed; the FMA loop is the f32
// one. Same NV = 2, KB = 2 as the f32 kernel.
#include "kernels/generic/tile_f16.hpp"

namespace attnscore {

ATTNSCORE_DEFINE_QK_16(qk_f16_8x32__avx512, std::uint16_t, qk_f32_8x32__avx512,
                       ATTNSCORE_LEVEL_AVX512, xsimd::avx512f, 2, 2)

}  // namespace attnscore
