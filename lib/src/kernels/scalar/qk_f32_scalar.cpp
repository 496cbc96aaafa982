// SPDX-License-Identifier: Apache-2.0
// The scalar level: portable kernels that every build has.
#include "dispatch/kernels.h"

namespace attnscore {
namespace {

constexpr std::size_t kMR = 4, kNR = 4;

}  // namespace

// Same panel layout and per-element order as the SIMD levels: s += q_t * k_t for t in order,
// a multiply then an add (the library is built with -ffp-contract=off, so the compiler cannot
// fuse them on some targets and not others).
void qk_f32_4x4__scalar(std::size_t rows, std::size_t cols, std::size_t d, const float *q,
                        std::size_t ldq, const float *panel, float *s, std::size_t lds, float scale,
                        unsigned flags) noexcept {
  float acc[kMR][kNR] = {};
  if (flags & kAccumulate)
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j) acc[i][j] = s[i * lds + j];
  for (std::size_t t = 0; t < d; ++t)
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < kNR; ++j) acc[i][j] += q[i * ldq + t] * panel[t * kNR + j];
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j)
      s[i * lds + j] = (flags & kFinal) ? acc[i][j] * scale : acc[i][j];
}

void qk_f32_4x4__scalar_pack(std::size_t cols, std::size_t d, const float *k, std::size_t ldk,
                             float *panel) noexcept {
  for (std::size_t t = 0; t < d; ++t)
    for (std::size_t j = 0; j < kNR; ++j) panel[t * kNR + j] = j < cols ? k[j * ldk + t] : 0.0f;
}

// Decode: raw K, one element at a time, in the same order as the prefill kernel; any rows.
void qk_f32_4x4__scalar_dec(std::size_t rows, std::size_t cols, std::size_t d, const float *q,
                            std::size_t ldq, const float *k, std::size_t ldk, float *s,
                            std::size_t lds, float scale) noexcept {
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      float acc = 0.0f;
      for (std::size_t t = 0; t < d; ++t) acc += q[i * ldq + t] * k[j * ldk + t];
      s[i * lds + j] = acc * scale;
    }
  }
}

// Decode from the key cache's panels of kNR keys.
void qk_f32_4x4__scalar_cdec(std::size_t rows, std::size_t cols, std::size_t d, const float *q,
                             std::size_t ldq, const float *panels, std::size_t stride, float *s,
                             std::size_t lds, float scale) noexcept {
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      const float *panel = panels + (j / kNR) * stride + j % kNR;
      float acc = 0.0f;
      for (std::size_t t = 0; t < d; ++t) acc += q[i * ldq + t] * panel[t * kNR];
      s[i * lds + j] = acc * scale;
    }
  }
}

extern const KernelF32 qk_f32_4x4__scalar_kernel = {
    "qk_f32_4x4__scalar",    ATTNSCORE_LEVEL_SCALAR,  kMR, kNR,
    qk_f32_4x4__scalar,      qk_f32_4x4__scalar_pack, kNR, qk_f32_4x4__scalar_dec,
    qk_f32_4x4__scalar_cdec, kMaxDecodeRows};

}  // namespace attnscore
