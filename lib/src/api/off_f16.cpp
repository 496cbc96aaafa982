// SPDX-License-Identifier: Apache-2.0
// A build without the 16-bit float dtypes (ATTNSCORE_ENABLE_F16=OFF): the f16 and bf16 calls
// exist and report that the dtype is missing, writing nothing.
#include "attnscore/attnscore.h"

extern "C" {

attnscore_status attnscore_scores_f16(size_t, size_t, size_t, const uint16_t *, size_t,
                                      const uint16_t *, size_t, float *, size_t, float) {
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
}

attnscore_status attnscore_scores_bf16(size_t, size_t, size_t, const uint16_t *, size_t,
                                       const uint16_t *, size_t, float *, size_t, float) {
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
}

attnscore_status attnscore_convert(size_t, attnscore_dtype, const void *, attnscore_dtype, void *) {
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
}

}  // extern "C"
