/* SPDX-License-Identifier: Apache-2.0 */
/* The enum-taking calls as C callers make them. In C any int converts to an enum type, so the
 * library gets values it does not know (a newer header's dtype, a corrupted level); the fuzz
 * target passes them from here, since in C++ merely forming such a value is undefined. */
#include <attnscore/attnscore.h>

const char *fuzz_c_kernel_name(int dtype) { return attnscore_kernel_name((attnscore_dtype)dtype); }

int fuzz_c_kernel_level(int dtype) { return (int)attnscore_kernel_level((attnscore_dtype)dtype); }

const char *fuzz_c_level_name(int level) { return attnscore_level_name((attnscore_level)level); }

int fuzz_c_level_supported(int level) { return attnscore_level_supported((attnscore_level)level); }

int fuzz_c_set_max_level(int level) { return (int)attnscore_set_max_level((attnscore_level)level); }

const char *fuzz_c_status_string(int status) {
  return attnscore_status_string((attnscore_status)status);
}

int fuzz_c_convert(size_t n, int src_dtype, const void *src, int dst_dtype, void *dst) {
  return (int)attnscore_convert(n, (attnscore_dtype)src_dtype, src, (attnscore_dtype)dst_dtype,
                                dst);
}

int fuzz_c_quantize_s8(size_t n, size_t d, int src_dtype, const void *x, size_t ldx, int8_t *out,
                       size_t ldo, float *scales) {
  return (int)attnscore_quantize_s8(n, d, (attnscore_dtype)src_dtype, x, ldx, out, ldo, scales);
}
