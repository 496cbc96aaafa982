// SPDX-License-Identifier: Apache-2.0
// attnscore_scores_f16, attnscore_scores_bf16 and attnscore_convert: argument checks, then the
// driver (core/run.cpp) or the level's converters.
#include <cstdint>

#include "core/checks.h"
#include "dispatch/kernels.h"

namespace attnscore {
namespace {

// Every check of a conversion of n elements (n > 0), in the documented order.
attnscore_status check_convert(std::size_t n, const void *src, std::size_t src_elem,
                               const void *dst, std::size_t dst_elem) noexcept {
  if (src == nullptr || dst == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  std::size_t src_bytes, dst_bytes;
  if (!extent_bytes(src, 1, n, n, src_elem, &src_bytes) ||
      !extent_bytes(dst, 1, n, n, dst_elem, &dst_bytes))
    return ATTNSCORE_ERR_SIZE_OVERFLOW;
  if (overlaps(src, src_bytes, dst, dst_bytes)) return ATTNSCORE_ERR_OVERLAP;
  return ATTNSCORE_OK;
}

// Both 16-bit BLAS-style calls: the f32 call's checks (2-byte elements), then the driver with
// the format's kernel row, chosen only once the arguments are good.
attnscore_status scores_16(const KernelF16 &(*kernel)() noexcept, std::size_t n_q, std::size_t n_k,
                           std::size_t d, const std::uint16_t *q, std::size_t ldq,
                           const std::uint16_t *k, std::size_t ldk, float *s, std::size_t lds,
                           float scale) noexcept {
  const attnscore_status st = check_scores(n_q, n_k, d, q, ldq, k, ldk, s, lds, scale,
                                           sizeof(std::uint16_t), sizeof(float));
  if (st != ATTNSCORE_OK || n_q == 0 || n_k == 0) return st;
  if (scale == 0.0f) scale = attnscore_default_scale(d);
  run_f16(kernel(), n_q, n_k, d, q, ldq, k, ldk, s, lds, scale);
  return ATTNSCORE_OK;
}

}  // namespace
}  // namespace attnscore

using namespace attnscore;

extern "C" {

attnscore_status attnscore_scores_f16(size_t n_q, size_t n_k, size_t d, const uint16_t *q,
                                      size_t ldq, const uint16_t *k, size_t ldk, float *s,
                                      size_t lds, float scale) {
  return scores_16(active_kernel_f16, n_q, n_k, d, q, ldq, k, ldk, s, lds, scale);
}

attnscore_status attnscore_scores_bf16(size_t n_q, size_t n_k, size_t d, const uint16_t *q,
                                       size_t ldq, const uint16_t *k, size_t ldk, float *s,
                                       size_t lds, float scale) {
  return scores_16(active_kernel_bf16, n_q, n_k, d, q, ldq, k, ldk, s, lds, scale);
}

attnscore_status attnscore_convert(size_t n, attnscore_dtype src_dtype, const void *src,
                                   attnscore_dtype dst_dtype, void *dst) {
  const int from = enum_int(src_dtype), to = enum_int(dst_dtype);
  const auto half = [](int t) { return t == ATTNSCORE_DTYPE_F16 || t == ATTNSCORE_DTYPE_BF16; };
  const bool widen = half(from) && to == ATTNSCORE_DTYPE_F32;
  const bool narrow = from == ATTNSCORE_DTYPE_F32 && half(to);
  if (!widen && !narrow) return ATTNSCORE_ERR_UNKNOWN_DTYPE;
  if (n == 0) return ATTNSCORE_OK;
  const attnscore_status st = check_convert(n, src, widen ? 2 : 4, dst, widen ? 4 : 2);
  if (st != ATTNSCORE_OK) return st;
  const KernelF16 &conv =
      (widen ? from : to) == ATTNSCORE_DTYPE_F16 ? active_kernel_f16() : active_kernel_bf16();
  if (widen)
    conv.to_f32(n, static_cast<const std::uint16_t *>(src), static_cast<float *>(dst));
  else
    conv.narrow(n, static_cast<const float *>(src), static_cast<std::uint16_t *>(dst));
  return ATTNSCORE_OK;
}

}  // extern "C"
