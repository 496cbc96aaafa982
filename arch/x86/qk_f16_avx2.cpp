// SPDX-License-Identifier: Apache-2.0
// Level avx2: f16 on the 6x16 f32 tile (qk_f32_6x16__avx2). K is converted with F16C
// (vcvtph2ps, 8 halves per ymm) while it is packed or, in decode, while it is streamed; the
// FMA loop is the f32 one. Same NV = 2, KB = 4 as the f32 kernel (its panel and decode widths).
#include "kernels/generic/tile_f16.hpp"

namespace attnscore {

ATTNSCORE_DEFINE_QK_16(qk_f16_6x16__avx2, std::uint16_t, qk_f32_6x16__avx2, ATTNSCORE_LEVEL_AVX2,
                       xsimd::fma3<xsimd::avx2>, 2, 4)

}  // namespace attnscore
