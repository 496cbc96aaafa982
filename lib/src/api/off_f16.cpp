// SPDX-License-Identifier: Apache-2.0
// A build without f16 (ATTNSCORE_ENABLE_F16=OFF): the f16 calls exist and report that the dtype
// is missing, writing nothing.
#include "attnscore/attnscore.h"

extern "C" {

attnscore_status attnscore_scores_f16(size_t, size_t, size_t, const uint16_t *, size_t,
                                      const uint16_t *, size_t, float *, size_t, float) {
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
}

attnscore_status attnscore_scores_f16_to_f16(size_t, size_t, size_t, const uint16_t *, size_t,
                                             const uint16_t *, size_t, uint16_t *, size_t, float) {
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
}

attnscore_status attnscore_scores_f16_ex(size_t, size_t, size_t, const uint16_t *, size_t,
                                         const uint16_t *, size_t, float *, size_t, float,
                                         unsigned) {
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
}

attnscore_status attnscore_scores_f16_to_f16_ex(size_t, size_t, size_t, const uint16_t *, size_t,
                                                const uint16_t *, size_t, uint16_t *, size_t, float,
                                                unsigned) {
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
}

int attnscore_f16_accumulation_available(void) { return 0; }

attnscore_status attnscore_f16_to_f32(size_t, const uint16_t *, float *) {
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
}

attnscore_status attnscore_f32_to_f16(size_t, const float *, uint16_t *) {
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
}

size_t attnscore_kcache_f16_bytes(size_t, size_t) { return 0; }

attnscore_status attnscore_kcache_f16_init(void *, size_t, size_t, size_t,
                                           attnscore_kcache_f16 **) {
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
}

attnscore_status attnscore_kcache_f16_append(attnscore_kcache_f16 *, size_t, const uint16_t *,
                                             size_t) {
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
}

size_t attnscore_kcache_f16_size(const attnscore_kcache_f16 *) { return 0; }

size_t attnscore_kcache_f16_dim(const attnscore_kcache_f16 *) { return 0; }

attnscore_status attnscore_kcache_f16_clear(attnscore_kcache_f16 *) {
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
}

attnscore_status attnscore_scores_f16_kcache(size_t, const uint16_t *, size_t,
                                             const attnscore_kcache_f16 *, float *, size_t, float) {
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
}

attnscore_status attnscore_attention_f16(const attnscore_attention_desc *, const uint16_t *,
                                         const uint16_t *, float *) {
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
}

attnscore_status attnscore_attention_f32_to_f16(const attnscore_attention_desc *, const float *,
                                                const float *, uint16_t *) {
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
}

}  // extern "C"
