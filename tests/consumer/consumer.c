/* SPDX-License-Identifier: Apache-2.0 */
/* An installed attnscore used from strict C99: a known case computed, an error, the version. */
#include <attnscore/attnscore.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  /* Q is 2 x 4, K is 3 x 4; d = 4, so the default scale is exactly 1/2. Small integers: every
   * sum is exact, and so is the expected result. */
  const float q[2 * 4] = {1, 2, 3, 4, -1, 0, 2, 1};
  const float k[3 * 4] = {1, 0, 0, 0, 1, 1, 1, 1, 2, -1, 0, 3};
  const float expect[2 * 3] = {0.5f, 5.0f, 6.0f, -0.5f, 1.0f, 0.5f};
  float s[2 * 3];
  size_t i;
  attnscore_status st;

  memset(s, 0, sizeof s);
  st = attnscore_scores_f32(2, 3, 4, q, 4, k, 4, s, 3, 0.0f);
  if (st != ATTNSCORE_OK) {
    fprintf(stderr, "consumer (C): %s\n", attnscore_status_string(st));
    return 1;
  }
  for (i = 0; i < 6; ++i) {
    if (s[i] != expect[i]) {
      fprintf(stderr, "consumer (C): s[%u] = %g, expected %g\n", (unsigned)i, s[i], expect[i]);
      return 1;
    }
  }
  /* A bad stride: its own status, and S untouched. */
  s[0] = 42.0f;
  if (attnscore_scores_f32(2, 3, 4, q, 3, k, 4, s, 3, 0.0f) != ATTNSCORE_ERR_BAD_LDQ ||
      s[0] != 42.0f) {
    fprintf(stderr, "consumer (C): a bad ldq was not reported\n");
    return 1;
  }
  /* The library linked is the one whose header we compiled against. */
  if (strcmp(attnscore_version(), ATTNSCORE_VERSION_STRING) != 0 ||
      attnscore_version_number() != ATTNSCORE_VERSION_NUMBER) {
    fprintf(stderr, "consumer (C): header %s, library %s\n", ATTNSCORE_VERSION_STRING,
            attnscore_version());
    return 1;
  }
  printf("consumer (C99): attnscore %s, kernel %s: ok\n", attnscore_version(),
         attnscore_kernel_name(ATTNSCORE_DTYPE_F32));
  return 0;
}
