/* SPDX-License-Identifier: Apache-2.0 */
/* An installed attnscore used from strict C99: a known case computed (the BLAS-style call, the
 * attention call and a key cache), an error, the version. */
#include <attnscore/attnscore.h>
#include <stdio.h>
#include <string.h>

/* Q is 2 x 4, K is 3 x 4; d = 4, so the default scale is exactly 1/2. Small integers: every
 * sum is exact, and so is the expected result. */
static const float q[2 * 4] = {1, 2, 3, 4, -1, 0, 2, 1};
static const float k[3 * 4] = {1, 0, 0, 0, 1, 1, 1, 1, 2, -1, 0, 3};
static const float expect[2 * 3] = {0.5f, 5.0f, 6.0f, -0.5f, 1.0f, 0.5f};

static int check(const char *what, attnscore_status st, const float *s) {
  size_t i;
  if (st != ATTNSCORE_OK) {
    fprintf(stderr, "consumer (C), %s: %s\n", what, attnscore_status_string(st));
    return 1;
  }
  for (i = 0; i < 6; ++i) {
    if (s[i] != expect[i]) {
      fprintf(stderr, "consumer (C), %s: s[%u] = %g, expected %g\n", what, (unsigned)i, s[i],
              expect[i]);
      return 1;
    }
  }
  return 0;
}

int main(void) {
  float s[2 * 3];
  attnscore_attention_desc desc;
  attnscore_cache_shape shape;
  attnscore_cache *cache = NULL;
  attnscore_tensor keys;
  unsigned char mem[16384];

  memset(s, 0, sizeof s);
  if (check("scores", attnscore_scores_f32(2, 3, 4, q, 4, k, 4, s, 3, 0.0f), s)) return 1;

  /* The same as one head of the attention call. */
  memset(s, 0, sizeof s);
  desc = attnscore_attention_dense(ATTNSCORE_DTYPE_F32, 1, 1, 2, 3, 4);
  desc.q.data = q;
  desc.k.data = k;
  desc.s.data = s;
  if (check("attention", attnscore_attention(&desc, NULL), s)) return 1;

  /* And with K appended to a key cache of one head in a caller's buffer. */
  shape.kind = ATTNSCORE_CACHE_KEYS;
  shape.dtype = ATTNSCORE_DTYPE_F32;
  shape.heads = 1;
  shape.capacity = 3;
  shape.d = 4;
  if (attnscore_cache_bytes(&shape) == 0 || attnscore_cache_bytes(&shape) > sizeof mem ||
      attnscore_cache_init(mem, sizeof mem, &shape, &cache) != ATTNSCORE_OK) {
    fprintf(stderr, "consumer (C): cannot make the key cache\n");
    return 1;
  }
  keys = desc.k;
  if (attnscore_cache_append(cache, 3, &keys) != ATTNSCORE_OK || attnscore_cache_size(cache) != 3) {
    fprintf(stderr, "consumer (C): cannot append the keys\n");
    return 1;
  }
  memset(s, 0, sizeof s);
  desc.k.data = NULL; /* not read: the keys come from the cache */
  desc.k_cache = cache;
  if (check("key cache", attnscore_attention(&desc, NULL), s)) return 1;

  /* A bad stride: its own status, and S untouched. */
  s[0] = 42.0f;
  if (attnscore_scores_f32(2, 3, 4, q, 3, k, 4, s, 3, 0.0f) != ATTNSCORE_ERR_BAD_LDQ ||
      s[0] != 42.0f) {
    fprintf(stderr, "consumer (C): a bad ldq was not reported\n");
    return 1;
  }
  /* The library linked is the one whose header we compiled against. */
  if (strcmp(attnscore_version(), ATTNSCORE_VERSION_STRING) != 0) {
    fprintf(stderr, "consumer (C): header %s, library %s\n", ATTNSCORE_VERSION_STRING,
            attnscore_version());
    return 1;
  }
  printf("consumer (C99): attnscore %s, kernel %s: ok\n", attnscore_version(),
         attnscore_kernel_name(ATTNSCORE_DTYPE_F32));
  return 0;
}
