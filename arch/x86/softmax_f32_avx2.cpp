// SPDX-License-Identifier: Apache-2.0
// Level avx2: the attention call's softmax, 8 lanes.
#include "kernels/generic/softmax_f32.hpp"

namespace attnscore {

ATTNSCORE_DEFINE_SOFTMAX_F32(softmax_f32__avx2, ATTNSCORE_LEVEL_AVX2, xsimd::fma3<xsimd::avx2>)

}  // namespace attnscore
