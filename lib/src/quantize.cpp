// SPDX-License-Identifier: Apache-2.0
// The quantization helpers of the int8 path: f32 rows to int8 with a scale per row (the level's
// vectorized QuantS8Fn), and folding per-channel key scales into Q.
#include <cstring>

#include "checks.h"
#include "kernels.h"

using namespace attnscore;

extern "C" {

attnscore_status attnscore_quantize_s8(size_t n, size_t d, const float *x, size_t ldx, int8_t *out,
                                       size_t ldo, float *scales) {
#if !ATTNSCORE_HAVE_S8
  (void)n, (void)d, (void)x, (void)ldx, (void)out, (void)ldo, (void)scales;
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
#else
  if (n == 0) return ATTNSCORE_OK;
  if (d == 0) return ATTNSCORE_ERR_ZERO_DIM;
  if (x == nullptr || out == nullptr || scales == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (ldx < d) return ATTNSCORE_ERR_BAD_LDQ;
  if (ldo < d) return ATTNSCORE_ERR_BAD_LDS;
  std::size_t x_bytes, o_bytes, s_bytes;
  if (!extent_bytes(x, n, d, ldx, sizeof(float), &x_bytes) ||
      !extent_bytes(out, n, d, ldo, 1, &o_bytes) ||
      !extent_bytes(scales, 1, n, n, sizeof(float), &s_bytes))
    return ATTNSCORE_ERR_SIZE_OVERFLOW;
  if (overlaps(out, o_bytes, x, x_bytes) || overlaps(scales, s_bytes, x, x_bytes) ||
      overlaps(scales, s_bytes, out, o_bytes))
    return ATTNSCORE_ERR_OVERLAP;
  // Checked before anything is written: nothing is written on error.
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t t = 0; t < d; ++t) {
      std::uint32_t bits;
      std::memcpy(&bits, x + i * ldx + t, sizeof bits);
      if ((bits & 0x7f800000u) == 0x7f800000u) return ATTNSCORE_ERR_NOT_FINITE;
    }
  active_kernel_s8().quant(n, d, x, ldx, out, ldo, scales);
  return ATTNSCORE_OK;
#endif
}

attnscore_status attnscore_fold_channel_scales(size_t n, size_t d, const float *q, size_t ldq,
                                               const float *channel_scale, float *out, size_t ldo) {
#if !ATTNSCORE_HAVE_S8
  (void)n, (void)d, (void)q, (void)ldq, (void)channel_scale, (void)out, (void)ldo;
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
#else
  if (n == 0) return ATTNSCORE_OK;
  if (d == 0) return ATTNSCORE_ERR_ZERO_DIM;
  if (q == nullptr || channel_scale == nullptr || out == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (ldq < d) return ATTNSCORE_ERR_BAD_LDQ;
  if (ldo < d) return ATTNSCORE_ERR_BAD_LDS;
  std::size_t q_bytes, c_bytes, o_bytes;
  if (!extent_bytes(q, n, d, ldq, sizeof(float), &q_bytes) ||
      !extent_bytes(channel_scale, 1, d, d, sizeof(float), &c_bytes) ||
      !extent_bytes(out, n, d, ldo, sizeof(float), &o_bytes))
    return ATTNSCORE_ERR_SIZE_OVERFLOW;
  const bool in_place = out == q && ldo == ldq;
  if ((!in_place && overlaps(out, o_bytes, q, q_bytes)) ||
      overlaps(out, o_bytes, channel_scale, c_bytes))
    return ATTNSCORE_ERR_OVERLAP;
  // One multiply per element (the compiler vectorizes it; no level-specific rounding exists).
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t t = 0; t < d; ++t) out[i * ldo + t] = q[i * ldq + t] * channel_scale[t];
  return ATTNSCORE_OK;
#endif
}

}  // extern "C"
