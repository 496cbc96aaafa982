// SPDX-License-Identifier: Apache-2.0
// Level avx512: the attention call's softmax, 16 lanes.
#include "kernels/generic/softmax_f32.hpp"

namespace attnscore {

ATTNSCORE_DEFINE_SOFTMAX_F32(softmax_f32__avx512, ATTNSCORE_LEVEL_AVX512, xsimd::avx512f)

}  // namespace attnscore
