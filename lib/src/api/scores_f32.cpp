// SPDX-License-Identifier: Apache-2.0
// attnscore_scores_f32: argument checks and the default scale, then the driver (core/run.cpp);
// the status messages.
#include <cmath>
#include <cstdint>

#include "core/checks.h"
#include "dispatch/kernels.h"

using namespace attnscore;

extern "C" {

float attnscore_default_scale(size_t d) {
  // Computed in double and rounded once: the float nearest to 1/sqrt(d) (exactly 0.125 at 64).
  return d == 0 ? 0.0f : static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
}

const char *attnscore_status_string(attnscore_status status_in) {
  const int v = enum_int(status_in);
  // The int8 path's statuses.
  if (v == ATTNSCORE_ERR_BAD_SCALE_COUNT)
    return "a scale count is neither 1 nor the rows it scales";
  if (v == ATTNSCORE_ERR_BAD_QUANT_SCALE)
    return "a quantization scale is NaN, infinite or subnormal";
  if (v == ATTNSCORE_ERR_DIM_TOO_LARGE) return "d is larger than the int8 path accepts";
  if (v == ATTNSCORE_ERR_NOT_FINITE) return "a value to quantize is NaN or infinite";
  if (v < 0 || v > ATTNSCORE_ERR_BAD_SINK) return "unknown attnscore status";
  switch (static_cast<attnscore_status>(v)) {
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
      return "scale is NaN, infinite or subnormal";
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
    case ATTNSCORE_ERR_BUFFER_TOO_SMALL:
      return "the key cache's memory is too small";
    case ATTNSCORE_ERR_CACHE_FULL:
      return "the key cache is full";
    case ATTNSCORE_ERR_BAD_CACHE:
      return "not an initialised key cache";
    case ATTNSCORE_ERR_HEADS_MISMATCH:
      return "heads_kv is 0 or does not divide heads_q";
    case ATTNSCORE_ERR_BAD_HEAD_STRIDE:
      return "the heads or rows of a tensor overlap (a stride is too small)";
    case ATTNSCORE_ERR_BAD_WINDOW:
      return "the sliding window is 0";
    case ATTNSCORE_ERR_BAD_SOFTCAP:
      return "softcap is negative, NaN, infinite or subnormal";
    case ATTNSCORE_ERR_POSITION_OVERFLOW:
      return "a query position (pos_offset + row) overflows size_t";
    case ATTNSCORE_ERR_BAD_FLAGS:
      return "unknown mask or option bits";
    case ATTNSCORE_ERR_SYSTEM:
      return "the system refused a thread or memory";
    case ATTNSCORE_ERR_ROW_TOO_LONG:
      return "f16 softmax output: more keys than ATTNSCORE_ATTN_F16_SOFTMAX_MAX_KEYS; attention "
             "output: dv above ATTNSCORE_ATTN_OUT_MAX_DV";
    case ATTNSCORE_ERR_BAD_SINK:
      return "an attention sink logit is NaN or +Inf";
    case ATTNSCORE_ERR_DTYPE_MISMATCH:
      return "Q and K (or the cache) are of different dtypes";
    case ATTNSCORE_ERR_BAD_SCALE_COUNT:
    case ATTNSCORE_ERR_BAD_QUANT_SCALE:
    case ATTNSCORE_ERR_DIM_TOO_LARGE:
    case ATTNSCORE_ERR_NOT_FINITE:
    case ATTNSCORE_STATUS_MAX_ENUM:
      break;
  }
  return "unknown attnscore status";
}

attnscore_status attnscore_scores_f32(size_t n_q, size_t n_k, size_t d, const float *q, size_t ldq,
                                      const float *k, size_t ldk, float *s, size_t lds,
                                      float scale) {
  const attnscore_status st =
      check_scores(n_q, n_k, d, q, ldq, k, ldk, s, lds, scale, sizeof(float), sizeof(float));
  if (st != ATTNSCORE_OK || n_q == 0 || n_k == 0) return st;
  if (scale == 0.0f) scale = attnscore_default_scale(d);
  run_f32(active_kernel_f32(), n_q, n_k, d, q, ldq, k, ldk, s, lds, scale);
  return ATTNSCORE_OK;
}

}  // extern "C"
