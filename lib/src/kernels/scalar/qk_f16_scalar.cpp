// SPDX-License-Identifier: Apache-2.0
// The scalar level's 16-bit float kernels, binary16 and bfloat16: the software converter
// (convert_f16.hpp, convert_bf16.hpp) in front of the scalar f32 arithmetic, in the same order
// (s += q_t * k_t, t in order, a multiply then an add).
#include "dispatch/kernels.h"
#include "kernels/scalar/convert_bf16.hpp"
#include "kernels/scalar/convert_f16.hpp"

namespace attnscore {
namespace {

constexpr std::size_t kNR = 4;  // qk_f32_4x4__scalar's panel width

// A 16-bit format: its exact widening and its rounding narrowing.
struct F16Format {
  static float widen(std::uint16_t h) noexcept { return f16_to_f32(h); }
  static std::uint16_t narrow(float x) noexcept { return f32_to_f16(x); }
};
struct Bf16Format {
  static float widen(std::uint16_t h) noexcept { return bf16_to_f32(h); }
  static std::uint16_t narrow(float x) noexcept { return f32_to_bf16(x); }
};

template <class F>
void pack(std::size_t cols, std::size_t d, const std::uint16_t *k, std::size_t ldk,
          float *panel) noexcept {
  for (std::size_t t = 0; t < d; ++t)
    for (std::size_t j = 0; j < kNR; ++j)
      panel[t * kNR + j] = j < cols ? F::widen(k[j * ldk + t]) : 0.0f;
}

template <class F>
void dec(std::size_t rows, std::size_t cols, std::size_t d, const std::uint16_t *q, std::size_t ldq,
         const std::uint16_t *k, std::size_t ldk, float *s, std::size_t lds, float scale) noexcept {
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      float acc = 0.0f;
      for (std::size_t t = 0; t < d; ++t)
        acc += F::widen(q[i * ldq + t]) * F::widen(k[j * ldk + t]);
      s[i * lds + j] = acc * scale;
    }
  }
}

template <class F>
void cdec(std::size_t rows, std::size_t cols, std::size_t d, const std::uint16_t *q,
          std::size_t ldq, const std::uint16_t *panels, std::size_t stride, float *s,
          std::size_t lds, float scale) noexcept {
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      const std::uint16_t *panel = panels + (j / kNR) * stride + j % kNR;
      float acc = 0.0f;
      for (std::size_t t = 0; t < d; ++t)
        acc += F::widen(q[i * ldq + t]) * F::widen(panel[t * kNR]);
      s[i * lds + j] = acc * scale;
    }
  }
}

template <class F>
void to_f32(std::size_t n, const std::uint16_t *src, float *dst) noexcept {
  for (std::size_t i = 0; i < n; ++i) dst[i] = F::widen(src[i]);
}

template <class F>
void narrow(std::size_t n, const float *src, std::uint16_t *dst) noexcept {
  for (std::size_t i = 0; i < n; ++i) dst[i] = F::narrow(src[i]);
}

template <class F>
constexpr KernelF16 row(const char *name) noexcept {
  return {name,
          ATTNSCORE_LEVEL_SCALAR,
          &qk_f32_4x4__scalar_kernel,
          pack<F>,
          kNR,
          dec<F>,
          cdec<F>,
          to_f32<F>,
          narrow<F>,
          0,
          nullptr,
          0,
          0,
          kMaxDecodeRows,
          nullptr,
          0,
          0,
          kTuneGeneric,
          nullptr};
}

}  // namespace

extern const KernelF16 qk_f16_4x4__scalar_kernel = row<F16Format>("qk_f16_4x4__scalar");
extern const KernelF16 qk_bf16_4x4__scalar_kernel = row<Bf16Format>("qk_bf16_4x4__scalar");

}  // namespace attnscore
