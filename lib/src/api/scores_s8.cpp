// SPDX-License-Identifier: Apache-2.0
// attnscore_scores_s8: argument checks, then the driver (core/run.cpp). In a build without
// the int8 path (ATTNSCORE_ENABLE_S8=OFF) the call exists and reports ATTNSCORE_ERR_UNKNOWN_DTYPE.
#include "core/checks.h"
#include "dispatch/kernels.h"

using namespace attnscore;

#if ATTNSCORE_HAVE_S8
namespace attnscore {

attnscore_status check_s8(std::size_t n_q, std::size_t n_k, std::size_t d, const std::int8_t *q,
                          std::size_t ldq, const float *q_scale, std::size_t q_scale_count,
                          const std::int8_t *k, std::size_t ldk, const float *k_scale,
                          std::size_t k_scale_count, const float *s, std::size_t lds,
                          float scale) noexcept {
  if (n_q == 0 || n_k == 0) return ATTNSCORE_OK;
  if (d == 0) return ATTNSCORE_ERR_ZERO_DIM;
  if (d > ATTNSCORE_S8_MAX_D) return ATTNSCORE_ERR_DIM_TOO_LARGE;
  if (q == nullptr || k == nullptr || s == nullptr || q_scale == nullptr || k_scale == nullptr)
    return ATTNSCORE_ERR_NULL_POINTER;
  if (ldq < d) return ATTNSCORE_ERR_BAD_LDQ;
  if (ldk < d) return ATTNSCORE_ERR_BAD_LDK;
  if (lds < n_k) return ATTNSCORE_ERR_BAD_LDS;
  if ((q_scale_count != 1 && q_scale_count != n_q) || (k_scale_count != 1 && k_scale_count != n_k))
    return ATTNSCORE_ERR_BAD_SCALE_COUNT;
  if (!scale_ok(scale)) return ATTNSCORE_ERR_BAD_SCALE;
  std::size_t q_bytes, k_bytes, s_bytes, qs_bytes, ks_bytes;
  if (!extent_bytes(q, n_q, d, ldq, 1, &q_bytes) || !extent_bytes(k, n_k, d, ldk, 1, &k_bytes) ||
      !extent_bytes(s, n_q, n_k, lds, sizeof(float), &s_bytes) ||
      !extent_bytes(q_scale, 1, q_scale_count, q_scale_count, sizeof(float), &qs_bytes) ||
      !extent_bytes(k_scale, 1, k_scale_count, k_scale_count, sizeof(float), &ks_bytes))
    return ATTNSCORE_ERR_SIZE_OVERFLOW;
  if (overlaps(s, s_bytes, q, q_bytes) || overlaps(s, s_bytes, k, k_bytes) ||
      overlaps(s, s_bytes, q_scale, qs_bytes) || overlaps(s, s_bytes, k_scale, ks_bytes))
    return ATTNSCORE_ERR_OVERLAP;
  if (!scales_ok(q_scale, q_scale_count) || !scales_ok(k_scale, k_scale_count))
    return ATTNSCORE_ERR_BAD_QUANT_SCALE;
  return ATTNSCORE_OK;
}

}  // namespace attnscore
#endif

extern "C" {

attnscore_status attnscore_scores_s8(size_t n_q, size_t n_k, size_t d, const int8_t *q, size_t ldq,
                                     const float *q_scale, size_t q_scale_count, const int8_t *k,
                                     size_t ldk, const float *k_scale, size_t k_scale_count,
                                     float *s, size_t lds, float scale) {
#if !ATTNSCORE_HAVE_S8
  (void)n_q, (void)n_k, (void)d, (void)q, (void)ldq, (void)q_scale, (void)q_scale_count, (void)k;
  (void)ldk, (void)k_scale, (void)k_scale_count, (void)s, (void)lds, (void)scale;
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
#else
  const attnscore_status st = check_s8(n_q, n_k, d, q, ldq, q_scale, q_scale_count, k, ldk, k_scale,
                                       k_scale_count, s, lds, scale);
  if (st != ATTNSCORE_OK || n_q == 0 || n_k == 0) return st;
  if (scale == 0.0f) scale = attnscore_default_scale(d);
  run_s8(active_kernel_s8(), n_q, n_k, d, q, ldq, q_scale, q_scale_count == 1 ? 0 : 1, k, ldk,
         k_scale, k_scale_count == 1 ? 0 : 1, s, lds, scale);
  return ATTNSCORE_OK;
#endif
}

}  // extern "C"
