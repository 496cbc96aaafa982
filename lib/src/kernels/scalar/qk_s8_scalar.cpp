// SPDX-License-Identifier: Apache-2.0
// The scalar s8 kernel and quantizer (portable, in every build with the int8 path).
#include <cfloat>
#include <cmath>
#include <cstring>

#include "dispatch/kernels.h"

namespace attnscore {
namespace {

constexpr std::size_t kMR = 4, kNR = 4;

}  // namespace

// Same panel layout as the SIMD levels (groups of 4 dims per key). Every partial sum is a sum of
// a prefix of the products, so it stays within +-128^2 * ATTNSCORE_S8_MAX_D: no int32 overflow.
void qk_s8_4x4c4__scalar(std::size_t rows, std::size_t cols, std::size_t d, const std::int8_t *q,
                         std::size_t ldq, const std::int8_t *panel, const std::int32_t *,
                         const float *qs, const float *ks, float *s, std::size_t lds,
                         unsigned flags) noexcept {
  const std::size_t panel_bytes = kNR * ((d + 3) / 4 * 4);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      const std::int8_t *p = panel + j / kNR * panel_bytes;
      std::int32_t acc = 0;
      if (flags & kAccumulate) std::memcpy(&acc, s + i * lds + j, sizeof acc);
      for (std::size_t t = 0; t < d; ++t)
        acc += q[i * ldq + t] * p[((t / 4) * kNR + j % kNR) * 4 + t % 4];
      if (flags & kFinal)
        s[i * lds + j] = static_cast<float>(acc) * (qs[i] * ks[j]);
      else
        std::memcpy(s + i * lds + j, &acc, sizeof acc);
    }
  }
}

void qk_s8_4x4c4__scalar_pack(std::size_t cols, std::size_t d, const std::int8_t *k,
                              std::size_t ldk, std::int8_t *panel, std::int32_t *sums) noexcept {
  const std::size_t groups = (d + 3) / 4;
  for (std::size_t j = 0; j < kNR; ++j) {
    std::int32_t sum = 0;
    for (std::size_t t = 0; t < 4 * groups; ++t) {
      const std::int8_t v = j < cols && t < d ? k[j * ldk + t] : 0;
      panel[((t / 4) * kNR + j) * 4 + t % 4] = v;
      sum += v;
    }
    sums[j] = sum;
  }
}

namespace {

// Round to nearest, ties to even, whatever the caller's rounding mode (floor is exact, and so is
// y - floor(y) for the |y| <= 2^23 this sees).
float round_even(float y) noexcept {
  const float f = std::floor(y), frac = y - f;
  if (frac > 0.5f || (frac == 0.5f && std::fmod(f, 2.0f) != 0.0f)) return f + 1.0f;
  return f;
}

}  // namespace

void quantize_scaled_s8_scalar(std::size_t n, const float *x, float scale,
                               std::int8_t *out) noexcept {
  for (std::size_t t = 0; t < n; ++t) {
    const float y = round_even(x[t] / scale);
    out[t] = static_cast<std::int8_t>(y < -128.0f ? -128.0f : y > 127.0f ? 127.0f : y);
  }
}

void quantize_s8_scalar(std::size_t n, std::size_t d, const float *x, std::size_t ldx,
                        std::int8_t *out, std::size_t ldo, float *scales) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    const float *r = x + i * ldx;
    std::int8_t *o = out + i * ldo;
    float mx = 0.0f;
    for (std::size_t t = 0; t < d; ++t) mx = std::fabs(r[t]) > mx ? std::fabs(r[t]) : mx;
    const float scale = mx / 127.0f;
    if (!(scale >= FLT_MIN)) {  // zero, or a scale that flushing modes would read as zero
      scales[i] = 0.0f;
      std::memset(o, 0, d);
      continue;
    }
    scales[i] = scale;
    quantize_scaled_s8_scalar(d, r, scale, o);
  }
}

extern const KernelS8 qk_s8_4x4c4__scalar_kernel = {"qk_s8_4x4c4__scalar",
                                                    ATTNSCORE_LEVEL_SCALAR,
                                                    kMR,
                                                    kNR,
                                                    4,
                                                    qk_s8_4x4c4__scalar,
                                                    qk_s8_4x4c4__scalar_pack,
                                                    quantize_s8_scalar,
                                                    quantize_scaled_s8_scalar,
                                                    nullptr};

}  // namespace attnscore
