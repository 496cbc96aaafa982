// SPDX-License-Identifier: Apache-2.0
// The f16 compute calls and row converters: argument checks, then the driver (core/run.cpp).
#include <cstdint>

#include "core/checks.h"
#include "dispatch/kernels.h"

namespace attnscore {
namespace {

// The checks of attnscore_scores_f32 (checks.h), with binary16 inputs and `s_elem`-byte output.
attnscore_status check_f16_call(std::size_t n_q, std::size_t n_k, std::size_t d, const void *q,
                                std::size_t ldq, const void *k, std::size_t ldk, const void *s,
                                std::size_t lds, float scale, std::size_t s_elem) noexcept {
  return check_scores(n_q, n_k, d, q, ldq, k, ldk, s, lds, scale, sizeof(std::uint16_t), s_elem);
}

// Floats of S computed at a time by attnscore_scores_f16_to_f16 before rounding them to f16.
constexpr std::size_t kOutFloats = 2048;

constexpr unsigned kF16Flags = ATTNSCORE_F16_ACCUMULATE_F16;

// The kernel a call with `flags` runs (f16 accumulation only where the CPU and cap allow it).
const KernelF16 &kernel_for(unsigned flags) noexcept {
  return (flags & ATTNSCORE_F16_ACCUMULATE_F16) ? active_kernel_f16acc() : active_kernel_f16();
}

}  // namespace
}  // namespace attnscore

using namespace attnscore;

extern "C" {

attnscore_status attnscore_scores_f16(size_t n_q, size_t n_k, size_t d, const uint16_t *q,
                                      size_t ldq, const uint16_t *k, size_t ldk, float *s,
                                      size_t lds, float scale) {
  return attnscore_scores_f16_ex(n_q, n_k, d, q, ldq, k, ldk, s, lds, scale, 0);
}

attnscore_status attnscore_scores_f16_ex(size_t n_q, size_t n_k, size_t d, const uint16_t *q,
                                         size_t ldq, const uint16_t *k, size_t ldk, float *s,
                                         size_t lds, float scale, unsigned flags) {
  if (n_q == 0 || n_k == 0) return ATTNSCORE_OK;
  const attnscore_status st = check_f16_call(n_q, n_k, d, q, ldq, k, ldk, s, lds, scale, 4);
  if (st != ATTNSCORE_OK) return st;
  if (flags & ~kF16Flags) return ATTNSCORE_ERR_BAD_FLAGS;
  if (scale == 0.0f) scale = attnscore_default_scale(d);
  run_f16(kernel_for(flags), n_q, n_k, d, q, ldq, k, ldk, s, lds, scale);
  return ATTNSCORE_OK;
}

attnscore_status attnscore_scores_f16_to_f16(size_t n_q, size_t n_k, size_t d, const uint16_t *q,
                                             size_t ldq, const uint16_t *k, size_t ldk, uint16_t *s,
                                             size_t lds, float scale) {
  return attnscore_scores_f16_to_f16_ex(n_q, n_k, d, q, ldq, k, ldk, s, lds, scale, 0);
}

attnscore_status attnscore_scores_f16_to_f16_ex(size_t n_q, size_t n_k, size_t d, const uint16_t *q,
                                                size_t ldq, const uint16_t *k, size_t ldk,
                                                uint16_t *s, size_t lds, float scale,
                                                unsigned flags) {
  if (n_q == 0 || n_k == 0) return ATTNSCORE_OK;
  const attnscore_status st = check_f16_call(n_q, n_k, d, q, ldq, k, ldk, s, lds, scale, 2);
  if (st != ATTNSCORE_OK) return st;
  if (flags & ~kF16Flags) return ATTNSCORE_ERR_BAD_FLAGS;
  if (scale == 0.0f) scale = attnscore_default_scale(d);
  const KernelF16 &kernel = kernel_for(flags);
  // The converter of the f32-accumulating kernel (an f16-accumulating row has none).
  const ToF16Fn to_f16 = active_kernel_f16().to_f16;
  // Blocks of S in f32 on the stack, each element the bits attnscore_scores_f16(_ex) gives (any
  // block of S is computed as in the whole call), then rounded once to f16.
  alignas(64) float block[kOutFloats];
  const std::size_t rb = n_q < 32 ? n_q : 32, cb = kOutFloats / rb;
  for (std::size_t i = 0; i < n_q; i += rb) {
    const std::size_t rows = n_q - i < rb ? n_q - i : rb;
    for (std::size_t j = 0; j < n_k; j += cb) {
      const std::size_t cols = n_k - j < cb ? n_k - j : cb;
      run_f16(kernel, rows, cols, d, q + i * ldq, ldq, k + j * ldk, ldk, block, cols, scale);
      for (std::size_t r = 0; r < rows; ++r) to_f16(cols, block + r * cols, s + (i + r) * lds + j);
    }
  }
  return ATTNSCORE_OK;
}

int attnscore_f16_accumulation_available(void) { return active_kernel_f16acc().acc != nullptr; }

attnscore_status attnscore_f16_to_f32(size_t n, const uint16_t *src, float *dst) {
  if (n == 0) return ATTNSCORE_OK;
  if (src == nullptr || dst == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  std::size_t src_bytes, dst_bytes;
  if (!extent_bytes(src, 1, n, n, sizeof(std::uint16_t), &src_bytes) ||
      !extent_bytes(dst, 1, n, n, sizeof(float), &dst_bytes))
    return ATTNSCORE_ERR_SIZE_OVERFLOW;
  if (overlaps(src, src_bytes, dst, dst_bytes)) return ATTNSCORE_ERR_OVERLAP;
  active_kernel_f16().to_f32(n, src, dst);
  return ATTNSCORE_OK;
}

attnscore_status attnscore_f32_to_f16(size_t n, const float *src, uint16_t *dst) {
  if (n == 0) return ATTNSCORE_OK;
  if (src == nullptr || dst == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  std::size_t src_bytes, dst_bytes;
  if (!extent_bytes(src, 1, n, n, sizeof(float), &src_bytes) ||
      !extent_bytes(dst, 1, n, n, sizeof(std::uint16_t), &dst_bytes))
    return ATTNSCORE_ERR_SIZE_OVERFLOW;
  if (overlaps(src, src_bytes, dst, dst_bytes)) return ATTNSCORE_ERR_OVERLAP;
  active_kernel_f16().to_f16(n, src, dst);
  return ATTNSCORE_OK;
}

}  // extern "C"
