// SPDX-License-Identifier: Apache-2.0
// The quantization helpers of the int8 path: f32 (and f16) rows to int8 with a scale per row
// (the level's vectorized QuantS8Fn), and folding per-channel key scales into Q.
#include <cfloat>
#include <cstring>

#include "core/checks.h"
#include "dispatch/kernels.h"

using namespace attnscore;

#if ATTNSCORE_HAVE_S8
namespace {
// The quantizers' argument checks (n > 0), in the documented order; x has elem-byte elements.
attnscore_status check_quantize(std::size_t n, std::size_t d, const void *x, std::size_t ldx,
                                std::size_t elem, const std::int8_t *out, std::size_t ldo,
                                const float *scales) noexcept {
  if (d == 0) return ATTNSCORE_ERR_ZERO_DIM;
  if (x == nullptr || out == nullptr || scales == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (ldx < d) return ATTNSCORE_ERR_BAD_LDQ;
  if (ldo < d) return ATTNSCORE_ERR_BAD_LDS;
  std::size_t x_bytes, o_bytes, s_bytes;
  if (!extent_bytes(x, n, d, ldx, elem, &x_bytes) || !extent_bytes(out, n, d, ldo, 1, &o_bytes) ||
      !extent_bytes(scales, 1, n, n, sizeof(float), &s_bytes))
    return ATTNSCORE_ERR_SIZE_OVERFLOW;
  if (overlaps(out, o_bytes, x, x_bytes) || overlaps(scales, s_bytes, x, x_bytes) ||
      overlaps(scales, s_bytes, out, o_bytes))
    return ATTNSCORE_ERR_OVERLAP;
  return ATTNSCORE_OK;
}
}  // namespace
#endif

extern "C" {

attnscore_status attnscore_quantize_s8(size_t n, size_t d, attnscore_dtype src_dtype,
                                       const void *x_in, size_t ldx, int8_t *out, size_t ldo,
                                       float *scales) {
  const int dtype = enum_int(src_dtype);
  if (dtype != ATTNSCORE_DTYPE_F32 && dtype != ATTNSCORE_DTYPE_F16 && dtype != ATTNSCORE_DTYPE_BF16)
    return ATTNSCORE_ERR_UNKNOWN_DTYPE;
#if !ATTNSCORE_HAVE_S8
  (void)n, (void)d, (void)x_in, (void)ldx, (void)out, (void)ldo, (void)scales;
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
#else
  if (dtype != ATTNSCORE_DTYPE_F32 && !ATTNSCORE_HAVE_F16) return ATTNSCORE_ERR_UNKNOWN_DTYPE;
  if (n == 0) return ATTNSCORE_OK;
  if (dtype == ATTNSCORE_DTYPE_F32) {
    const float *x = static_cast<const float *>(x_in);
    const attnscore_status st = check_quantize(n, d, x, ldx, sizeof(float), out, ldo, scales);
    if (st != ATTNSCORE_OK) return st;
    // Checked before anything is written: nothing is written on error.
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t t = 0; t < d; ++t) {
        std::uint32_t bits;
        std::memcpy(&bits, x + i * ldx + t, sizeof bits);
        if ((bits & 0x7f800000u) == 0x7f800000u) return ATTNSCORE_ERR_NOT_FINITE;
      }
    active_kernel_s8().quant(n, d, x, ldx, out, ldo, scales);
    return ATTNSCORE_OK;
  }
#if ATTNSCORE_HAVE_F16
  const std::uint16_t *x = static_cast<const std::uint16_t *>(x_in);
  const attnscore_status st = check_quantize(n, d, x, ldx, sizeof(std::uint16_t), out, ldo, scales);
  if (st != ATTNSCORE_OK) return st;
  // A 16-bit format's exponent bits: all set for Inf and NaN.
  const std::uint16_t exp_mask = dtype == ATTNSCORE_DTYPE_F16 ? 0x7c00u : 0x7f80u;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t t = 0; t < d; ++t)
      if ((x[i * ldx + t] & exp_mask) == exp_mask) return ATTNSCORE_ERR_NOT_FINITE;
  // The f32 helper's operations on the exactly converted values: the row's max magnitude from
  // the bits (16-bit float magnitudes order as their bits), then the row converted a chunk at a
  // time on the stack and divided by the scale at this level.
  const KernelF16 &conv = dtype == ATTNSCORE_DTYPE_F16 ? active_kernel_f16() : active_kernel_bf16();
  const KernelS8 &quant = active_kernel_s8();
  constexpr std::size_t kChunk = 1024;
  alignas(64) float buf[kChunk];
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint16_t *r = x + i * ldx;
    std::int8_t *o = out + i * ldo;
    std::uint16_t mx = 0;
    for (std::size_t t = 0; t < d; ++t) mx = (r[t] & 0x7fffu) > mx ? (r[t] & 0x7fffu) : mx;
    float mxf;
    conv.to_f32(1, &mx, &mxf);
    const float scale = mxf / 127.0f;
    if (!(scale >= FLT_MIN)) {  // as the f32 helper: zero scale, zero row
      scales[i] = 0.0f;
      std::memset(o, 0, d);
      continue;
    }
    scales[i] = scale;
    for (std::size_t t = 0; t < d; t += kChunk) {
      const std::size_t len = d - t < kChunk ? d - t : kChunk;
      conv.to_f32(len, r + t, buf);
      quant.quant_scaled(len, buf, scale, o + t);
    }
  }
#endif
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
