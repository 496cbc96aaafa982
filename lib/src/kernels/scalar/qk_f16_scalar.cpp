// SPDX-License-Identifier: Apache-2.0
// The scalar level's f16 kernel: the software converter (convert_f16.hpp) in front of the scalar
// f32 arithmetic, in the same order (s += q_t * k_t, t in order, a multiply then an add).
#include "dispatch/kernels.h"
#include "kernels/scalar/convert_f16.hpp"

namespace attnscore {
namespace {

constexpr std::size_t kNR = 4;  // qk_f32_4x4__scalar's panel width

}  // namespace

void qk_f16_4x4__scalar_pack(std::size_t cols, std::size_t d, const std::uint16_t *k,
                             std::size_t ldk, float *panel) noexcept {
  for (std::size_t t = 0; t < d; ++t)
    for (std::size_t j = 0; j < kNR; ++j)
      panel[t * kNR + j] = j < cols ? f16_to_f32(k[j * ldk + t]) : 0.0f;
}

void qk_f16_4x4__scalar_dec(std::size_t rows, std::size_t cols, std::size_t d,
                            const std::uint16_t *q, std::size_t ldq, const std::uint16_t *k,
                            std::size_t ldk, float *s, std::size_t lds, float scale) noexcept {
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      float acc = 0.0f;
      for (std::size_t t = 0; t < d; ++t)
        acc += f16_to_f32(q[i * ldq + t]) * f16_to_f32(k[j * ldk + t]);
      s[i * lds + j] = acc * scale;
    }
  }
}

void qk_f16_4x4__scalar_cdec(std::size_t rows, std::size_t cols, std::size_t d,
                             const std::uint16_t *q, std::size_t ldq, const std::uint16_t *panels,
                             std::size_t stride, float *s, std::size_t lds, float scale) noexcept {
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      const std::uint16_t *panel = panels + (j / kNR) * stride + j % kNR;
      float acc = 0.0f;
      for (std::size_t t = 0; t < d; ++t)
        acc += f16_to_f32(q[i * ldq + t]) * f16_to_f32(panel[t * kNR]);
      s[i * lds + j] = acc * scale;
    }
  }
}

void qk_f16_4x4__scalar_to_f32(std::size_t n, const std::uint16_t *src, float *dst) noexcept {
  for (std::size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}

void qk_f16_4x4__scalar_to_f16(std::size_t n, const float *src, std::uint16_t *dst) noexcept {
  for (std::size_t i = 0; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

extern const KernelF16 qk_f16_4x4__scalar_kernel = {"qk_f16_4x4__scalar",
                                                    ATTNSCORE_LEVEL_SCALAR,
                                                    &qk_f32_4x4__scalar_kernel,
                                                    qk_f16_4x4__scalar_pack,
                                                    kNR,
                                                    qk_f16_4x4__scalar_dec,
                                                    qk_f16_4x4__scalar_cdec,
                                                    qk_f16_4x4__scalar_to_f32,
                                                    qk_f16_4x4__scalar_to_f16,
                                                    0,
                                                    nullptr,
                                                    0,
                                                    0,
                                                    kMaxDecodeRows};

}  // namespace attnscore
