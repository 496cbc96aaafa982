// SPDX-License-Identifier: Apache-2.0
// The scalar level: portable kernels that every build has, and the reference order for f32.
#include "kernels.h"

namespace attnscore {

// One output per call, summed in order of t (the library is built with -ffp-contract=off, so the
// compiler cannot fuse this into FMAs on some targets and not others).
void qk_f32_1x1__scalar(std::size_t rows, std::size_t cols, std::size_t d, const float *q,
                        std::size_t ldq, const float *k, std::size_t ldk, float *s,
                        std::size_t lds, float scale) noexcept {
  (void)rows, (void)cols, (void)ldq, (void)ldk, (void)lds;
  float sum = 0.0f;
  for (std::size_t t = 0; t < d; ++t) sum += q[t] * k[t];
  s[0] = sum * scale;
}

}  // namespace attnscore
