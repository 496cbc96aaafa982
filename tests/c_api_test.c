/* SPDX-License-Identifier: Apache-2.0 */
/* The C API compiled as strict C99: one call, one error, the kernel name. */
#include <attnscore/attnscore.h>
#include <stdio.h>

int main(void) {
  const float q[2 * 3] = {1, 2, 3, 4, 5, 6};
  const float k[2 * 3] = {1, 0, -1, 2, 2, 2};
  float s[4] = {0, 0, 0, 0};
  attnscore_status st = attnscore_scores_f32(2, 2, 3, q, 3, k, 3, s, 2, 1.0f);
  if (st != ATTNSCORE_OK || s[0] != -2.0f || s[1] != 12.0f || s[2] != -2.0f || s[3] != 30.0f) {
    fprintf(stderr, "wrong scores: %s\n", attnscore_status_string(st));
    return 1;
  }
  st = attnscore_scores_f32(2, 2, 0, q, 3, k, 3, s, 2, 1.0f);
  if (st != ATTNSCORE_ERR_ZERO_DIM) return 1;
  printf("C99 API ok: %s (%s)\n", attnscore_kernel_name(ATTNSCORE_DTYPE_F32),
         attnscore_status_string(st));
  return 0;
}
