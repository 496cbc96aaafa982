/* SPDX-License-Identifier: Apache-2.0 */
/* The C API compiled as strict C99: one call, the same through the attention descriptor, one
 * error, a conversion, the kernel name. */
#include <attnscore/attnscore.h>
#include <stdio.h>

int main(void) {
  const float q[2 * 3] = {1, 2, 3, 4, 5, 6};
  const float k[2 * 3] = {1, 0, -1, 2, 2, 2};
  const float expect[4] = {-2.0f, 12.0f, -2.0f, 30.0f};
  float s[4] = {0, 0, 0, 0}, back = 0;
  uint16_t half = 0;
  attnscore_attention_desc desc;
  attnscore_status st = attnscore_scores_f32(2, 2, 3, q, 3, k, 3, s, 2, 1.0f);
  int i;
  for (i = 0; i < 4; ++i)
    if (st != ATTNSCORE_OK || s[i] != expect[i]) {
      fprintf(stderr, "wrong scores: %s\n", attnscore_status_string(st));
      return 1;
    }
  desc = attnscore_attention_dense(ATTNSCORE_DTYPE_F32, 1, 1, 2, 2, 3);
  desc.q.data = q;
  desc.k.data = k;
  desc.s.data = s;
  desc.scale = 1.0f;
  for (i = 0; i < 4; ++i) s[i] = 0;
  st = attnscore_attention(&desc, NULL);
  for (i = 0; i < 4; ++i)
    if (st != ATTNSCORE_OK || s[i] != expect[i]) {
      fprintf(stderr, "wrong attention scores: %s\n", attnscore_status_string(st));
      return 1;
    }
  st = attnscore_scores_f32(2, 2, 0, q, 3, k, 3, s, 2, 1.0f);
  if (st != ATTNSCORE_ERR_ZERO_DIM) return 1;
  /* 12 is exact in binary16 (0x4a00); a build without f16 refuses the pair. */
  if (attnscore_convert(1, ATTNSCORE_DTYPE_F32, &s[1], ATTNSCORE_DTYPE_F16, &half) ==
      ATTNSCORE_OK) {
    if (half != 0x4a00 ||
        attnscore_convert(1, ATTNSCORE_DTYPE_F16, &half, ATTNSCORE_DTYPE_F32, &back) !=
            ATTNSCORE_OK ||
        back != 12.0f)
      return 1;
  }
  printf("C99 API ok: %s (%s)\n", attnscore_kernel_name(ATTNSCORE_DTYPE_F32),
         attnscore_status_string(st));
  return 0;
}
