// SPDX-License-Identifier: Apache-2.0
// Level neon, AArch64 only: the attention call's softmax, 4 lanes. (armv7 NEON flushes
// subnormals, so armv7 keeps the portable loop, which runs on VFP.)
#include "kernels/generic/softmax_f32.hpp"

namespace attnscore {

#if defined(__aarch64__)
ATTNSCORE_DEFINE_SOFTMAX_F32(softmax_f32__neon, ATTNSCORE_LEVEL_NEON, xsimd::neon64)
#endif

}  // namespace attnscore
