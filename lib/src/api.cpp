// SPDX-License-Identifier: Apache-2.0
// The public compute calls: argument checks, the default scale and the blocking driver.
#include <cmath>
#include <cstdint>

#include "kernels.h"

namespace attnscore {
namespace {

// Extent in bytes of a row-major matrix, checked against size_t and address-space wrap.
bool extent_bytes(const void *base, std::size_t rows, std::size_t cols, std::size_t ld,
                  std::size_t elem, std::size_t *bytes) noexcept {
  std::size_t n;
  if (__builtin_mul_overflow(rows - 1, ld, &n) || __builtin_add_overflow(n, cols, &n) ||
      __builtin_mul_overflow(n, elem, bytes))
    return false;
  std::uintptr_t end;
  return !__builtin_add_overflow(reinterpret_cast<std::uintptr_t>(base), *bytes, &end);
}

bool overlaps(const void *a, std::size_t a_bytes, const void *b, std::size_t b_bytes) noexcept {
  const auto a0 = reinterpret_cast<std::uintptr_t>(a), b0 = reinterpret_cast<std::uintptr_t>(b);
  return a0 < b0 + b_bytes && b0 < a0 + a_bytes;
}

}  // namespace

void run_f32(const KernelF32 &kernel, std::size_t n_q, std::size_t n_k, std::size_t d,
             const float *q, std::size_t ldq, const float *k, std::size_t ldk, float *s,
             std::size_t lds, float scale) noexcept {
  // Keys outer: an NR-key block of K stays in L1 while every Q row streams past it.
  for (std::size_t j = 0; j < n_k; j += kernel.nr) {
    const std::size_t cols = n_k - j < kernel.nr ? n_k - j : kernel.nr;
    for (std::size_t i = 0; i < n_q; i += kernel.mr) {
      const std::size_t rows = n_q - i < kernel.mr ? n_q - i : kernel.mr;
      kernel.fn(rows, cols, d, q + i * ldq, ldq, k + j * ldk, ldk, s + i * lds + j, lds, scale);
    }
  }
}

}  // namespace attnscore

using namespace attnscore;

extern "C" {

float attnscore_default_scale(size_t d) {
  // Computed in double and rounded once: the float nearest to 1/sqrt(d) (exactly 0.125 at 64).
  return d == 0 ? 0.0f : static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
}

const char *attnscore_status_string(attnscore_status status) {
  switch (status) {
    case ATTNSCORE_OK:
      return "success";
    case ATTNSCORE_ERR_NULL_POINTER:
      return "a required pointer is NULL";
    case ATTNSCORE_ERR_ZERO_DIM:
      return "d (the head dimension) is 0";
    case ATTNSCORE_ERR_BAD_LDQ:
      return "ldq is smaller than d";
    case ATTNSCORE_ERR_BAD_LDK:
      return "ldk is smaller than d";
    case ATTNSCORE_ERR_BAD_LDS:
      return "lds is smaller than n_k";
    case ATTNSCORE_ERR_BAD_SCALE:
      return "scale is NaN or infinite";
    case ATTNSCORE_ERR_SIZE_OVERFLOW:
      return "a matrix's size in bytes overflows size_t";
    case ATTNSCORE_ERR_OVERLAP:
      return "the output overlaps an input";
    case ATTNSCORE_ERR_UNKNOWN_LEVEL:
      return "not a level of this build's CPU family";
    case ATTNSCORE_ERR_SHAPE_MISMATCH:
      return "matrix shapes do not agree";
    case ATTNSCORE_ERR_UNKNOWN_DTYPE:
      return "unknown dtype";
  }
  return "unknown attnscore status";
}

attnscore_status attnscore_scores_f32(size_t n_q, size_t n_k, size_t d, const float *q,
                                      size_t ldq, const float *k, size_t ldk, float *s,
                                      size_t lds, float scale) {
  if (n_q == 0 || n_k == 0) return ATTNSCORE_OK;
  if (d == 0) return ATTNSCORE_ERR_ZERO_DIM;
  if (q == nullptr || k == nullptr || s == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (ldq < d) return ATTNSCORE_ERR_BAD_LDQ;
  if (ldk < d) return ATTNSCORE_ERR_BAD_LDK;
  if (lds < n_k) return ATTNSCORE_ERR_BAD_LDS;
  if (!std::isfinite(scale)) return ATTNSCORE_ERR_BAD_SCALE;
  std::size_t q_bytes, k_bytes, s_bytes;
  if (!extent_bytes(q, n_q, d, ldq, sizeof(float), &q_bytes) ||
      !extent_bytes(k, n_k, d, ldk, sizeof(float), &k_bytes) ||
      !extent_bytes(s, n_q, n_k, lds, sizeof(float), &s_bytes))
    return ATTNSCORE_ERR_SIZE_OVERFLOW;
  if (overlaps(s, s_bytes, q, q_bytes) || overlaps(s, s_bytes, k, k_bytes))
    return ATTNSCORE_ERR_OVERLAP;
  if (scale == 0.0f) scale = attnscore_default_scale(d);
  run_f32(active_kernel_f32(), n_q, n_k, d, q, ldq, k, ldk, s, lds, scale);
  return ATTNSCORE_OK;
}

}  // extern "C"
