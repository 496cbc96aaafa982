/* SPDX-License-Identifier: Apache-2.0 */
/* attnscore C API: scaled attention scores S = scale * Q * K^T. */
#ifndef ATTNSCORE_ATTNSCORE_H
#define ATTNSCORE_ATTNSCORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Result of every attnscore call. ATTNSCORE_OK is 0; every failure has its own code. */
typedef enum attnscore_status {
  ATTNSCORE_OK = 0,                  /**< success (also the no-op n_q == 0 or n_k == 0) */
  ATTNSCORE_ERR_NULL_POINTER = 1,    /**< q, k or s is NULL while n_q, n_k and d are non-zero */
  ATTNSCORE_ERR_ZERO_DIM = 2,        /**< d == 0 (with n_q and n_k non-zero) */
  ATTNSCORE_ERR_BAD_LDQ = 3,         /**< ldq < d */
  ATTNSCORE_ERR_BAD_LDK = 4,         /**< ldk < d */
  ATTNSCORE_ERR_BAD_LDS = 5,         /**< lds < n_k */
  ATTNSCORE_ERR_BAD_SCALE = 6,       /**< scale is NaN, infinite or subnormal */
  ATTNSCORE_ERR_SIZE_OVERFLOW = 7,   /**< a matrix's extent in bytes does not fit in size_t */
  ATTNSCORE_ERR_OVERLAP = 8,         /**< the memory of s overlaps that of q or k */
  ATTNSCORE_ERR_UNKNOWN_LEVEL = 9,   /**< a level this build's CPU family does not have */
  ATTNSCORE_ERR_SHAPE_MISMATCH = 10, /**< C++ views whose shapes disagree */
  ATTNSCORE_ERR_UNKNOWN_DTYPE = 11,  /**< a dtype this build does not provide */
  ATTNSCORE_ERR_BUFFER_TOO_SMALL =
      12,                        /**< key cache memory smaller than attnscore_kcache_f32_bytes */
  ATTNSCORE_ERR_CACHE_FULL = 13, /**< appending past the key cache's capacity */
  ATTNSCORE_ERR_BAD_CACHE = 14,  /**< not a key cache made by attnscore_kcache_f32_init */
  ATTNSCORE_ERR_BAD_SCALE_COUNT = 20, /**< s8: a scale count neither 1 nor n_q (n_k) */
  ATTNSCORE_ERR_BAD_QUANT_SCALE = 21, /**< s8: a q/k scale value NaN, infinite or subnormal */
  ATTNSCORE_ERR_DIM_TOO_LARGE = 22,   /**< s8: d > ATTNSCORE_S8_MAX_D (int32 sums could overflow) */
  ATTNSCORE_ERR_NOT_FINITE = 23,      /**< quantization input holds a NaN or an infinity */
  ATTNSCORE_STATUS_MAX_ENUM = 0x7fffffff /**< not a status: makes every int value a valid one */
} attnscore_status;

/** Input element types. */
typedef enum attnscore_dtype {
  ATTNSCORE_DTYPE_F32 = 0,              /**< IEEE binary32 */
  ATTNSCORE_DTYPE_S8 = 2,               /**< symmetric int8 with float scales, exact int32 sums */
  ATTNSCORE_DTYPE_MAX_ENUM = 0x7fffffff /**< not a dtype: makes every int value a valid one */
} attnscore_dtype;

/** Kernel levels: feature bundles, best first within a CPU family; scalar is in every build. */
typedef enum attnscore_level {
  ATTNSCORE_LEVEL_SCALAR = 0,           /**< portable C++, always built */
  ATTNSCORE_LEVEL_SSE2 = 1,             /**< x86-64 baseline */
  ATTNSCORE_LEVEL_AVX2 = 2,             /**< AVX2 + FMA + F16C, OS saves YMM */
  ATTNSCORE_LEVEL_AVX512 = 3,           /**< AVX-512 F/BW/DQ/VL, OS saves ZMM */
  ATTNSCORE_LEVEL_AVX512VNNI = 4,       /**< avx512 + AVX512_VNNI */
  ATTNSCORE_LEVEL_NEON = 16,            /**< aarch64 ASIMD, armv7 NEON-VFPv4 */
  ATTNSCORE_LEVEL_NEON_DOTPROD = 17,    /**< neon + ASIMDDP (sdot) */
  ATTNSCORE_LEVEL_NEON_I8MM = 18,       /**< neon_dotprod + I8MM (smmla) */
  ATTNSCORE_LEVEL_BEST = 255,           /**< no cap: the best level the CPU supports */
  ATTNSCORE_LEVEL_MAX_ENUM = 0x7fffffff /**< not a level: makes every int value a valid one */
} attnscore_level;

/** CPU feature bits reported by attnscore_cpu_features(). x86 bits need the OS to save the state.
 */
#define ATTNSCORE_CPU_SSE2 (UINT64_C(1) << 0)
#define ATTNSCORE_CPU_AVX2 (UINT64_C(1) << 1)
#define ATTNSCORE_CPU_FMA (UINT64_C(1) << 2)
#define ATTNSCORE_CPU_F16C (UINT64_C(1) << 3)
#define ATTNSCORE_CPU_AVX512F (UINT64_C(1) << 4)
#define ATTNSCORE_CPU_AVX512BW (UINT64_C(1) << 5)
#define ATTNSCORE_CPU_AVX512DQ (UINT64_C(1) << 6)
#define ATTNSCORE_CPU_AVX512VL (UINT64_C(1) << 7)
#define ATTNSCORE_CPU_AVX512VNNI (UINT64_C(1) << 8)
#define ATTNSCORE_CPU_AVXVNNI (UINT64_C(1) << 9)
#define ATTNSCORE_CPU_AVX512BF16 (UINT64_C(1) << 10)
#define ATTNSCORE_CPU_NEON (UINT64_C(1) << 32)
#define ATTNSCORE_CPU_VFPV4 (UINT64_C(1) << 33)
#define ATTNSCORE_CPU_ASIMDDP (UINT64_C(1) << 34)
#define ATTNSCORE_CPU_FPHP (UINT64_C(1) << 35)
#define ATTNSCORE_CPU_ASIMDHP (UINT64_C(1) << 36)
#define ATTNSCORE_CPU_I8MM (UINT64_C(1) << 37)
#define ATTNSCORE_CPU_BF16 (UINT64_C(1) << 38)

/**
 * Scaled attention scores in f32: s[i*lds + j] = scale * sum_t q[i*ldq + t] * k[j*ldk + t]
 * for i < n_q, j < n_k, t < d. All matrices are row-major with row strides in elements.
 *
 * @param scale 0.0f selects attnscore_default_scale(d), the float nearest to 1/sqrt(d).
 * @return ATTNSCORE_OK, or an error status; on error nothing is written to s.
 *         n_q == 0 or n_k == 0 is a successful no-op, whatever the other arguments.
 * Accuracy: |s - exact| <= gamma(d+1) * |scale| * sum_t |q_t k_t| + (2d+2) * FLT_MIN *
 * max(1,|scale|), gamma(n) = n u / (1 - n u), u = 2^-24; plus |scale| * sum |q_t k_t| over the t
 * where q_t or k_t is subnormal, when the FP mode reads subnormals as 0 (the caller's DAZ or FZ;
 * always on armv7 NEON). Bit-identical across runs and for any
 * block of rows and columns of the same call, at a given level. No allocation; the FP environment
 * is left unchanged.
 */
attnscore_status attnscore_scores_f32(size_t n_q, size_t n_k, size_t d, const float *q, size_t ldq,
                                      const float *k, size_t ldk, float *s, size_t lds,
                                      float scale);

/**
 * A packed key cache: K kept in the layout the f32 kernels read (panels of NR keys, d-major), so
 * that a decode step streams it with no transposition and no copy, and a KV cache can grow one
 * token at a time without repacking. It lives entirely in memory the caller provides.
 * It is bound to the f32 kernel chosen when it is initialised (its layout depends on it); later
 * changes of the level cap do not affect it. Scores read from it are bit-identical to
 * attnscore_scores_f32 on the same keys with that kernel.
 */
typedef struct attnscore_kcache_f32 attnscore_kcache_f32;

/** Bytes of memory a cache of `capacity` keys of dimension d needs under the current kernel
 * choice; 0 if d or capacity is 0 or the size overflows size_t. */
size_t attnscore_kcache_f32_bytes(size_t capacity, size_t d);

/**
 * Makes an empty cache for up to `capacity` keys of dimension `d` in `mem` (`bytes` long, any
 * alignment); `*cache` then points into `mem`. Errors: ATTNSCORE_ERR_NULL_POINTER (mem or cache),
 * ATTNSCORE_ERR_ZERO_DIM (d or capacity 0), ATTNSCORE_ERR_SIZE_OVERFLOW,
 * ATTNSCORE_ERR_BUFFER_TOO_SMALL (bytes < attnscore_kcache_f32_bytes(capacity, d)).
 */
attnscore_status attnscore_kcache_f32_init(void *mem, size_t bytes, size_t capacity, size_t d,
                                           attnscore_kcache_f32 **cache);

/**
 * Appends n keys (rows of k, stride ldk >= d) after those already held; n == 0 is a no-op.
 * Errors: ATTNSCORE_ERR_NULL_POINTER, ATTNSCORE_ERR_BAD_CACHE, ATTNSCORE_ERR_BAD_LDK,
 * ATTNSCORE_ERR_CACHE_FULL (nothing appended), ATTNSCORE_ERR_SIZE_OVERFLOW, ATTNSCORE_ERR_OVERLAP
 * (k inside the cache's memory).
 */
attnscore_status attnscore_kcache_f32_append(attnscore_kcache_f32 *cache, size_t n, const float *k,
                                             size_t ldk);

/** Keys held (0 for NULL or a non-cache). */
size_t attnscore_kcache_f32_size(const attnscore_kcache_f32 *cache);

/** The key dimension d (0 for NULL or a non-cache). */
size_t attnscore_kcache_f32_dim(const attnscore_kcache_f32 *cache);

/** Forgets every key (the memory stays the caller's and the cache stays initialised). */
attnscore_status attnscore_kcache_f32_clear(attnscore_kcache_f32 *cache);

/**
 * Scores against every key in the cache: s[i*lds + j] for i < n_q, j < size, as
 * attnscore_scores_f32 with k the cached keys, with the same statuses (ATTNSCORE_ERR_BAD_CACHE
 * for a cache not made by attnscore_kcache_f32_init) and nothing written on error. An empty
 * cache or n_q == 0 is a no-op.
 */
attnscore_status attnscore_scores_f32_kcache(size_t n_q, const float *q, size_t ldq,
                                             const attnscore_kcache_f32 *cache, float *s,
                                             size_t lds, float scale);

/** The largest d attnscore_scores_s8 accepts: 131071 * (-128)^2 still fits in an int32 sum. */
#define ATTNSCORE_S8_MAX_D 131071

/**
 * Scores from symmetric int8 Q and K with float scales:
 *   s[i*lds + j] = (float)acc_ij * ((q_scale[i or 0] * scale) * k_scale[j or 0])
 * where acc_ij is the exact integer sum over t < d of q[i*ldq + t] * k[j*ldk + t], and the
 * products are evaluated in float in exactly that order, so every level gives the same bits.
 * q_scale_count is 1 (one scale for Q) or n_q (one per row); k_scale_count is 1 or n_k (one per
 * key). scale 0.0f selects attnscore_default_scale(d). The full range -128..127 is accepted.
 * @return as attnscore_scores_f32, plus ATTNSCORE_ERR_DIM_TOO_LARGE (d > ATTNSCORE_S8_MAX_D),
 *         ATTNSCORE_ERR_NULL_POINTER (also q_scale, k_scale), ATTNSCORE_ERR_BAD_SCALE_COUNT,
 *         ATTNSCORE_ERR_BAD_QUANT_SCALE (a scale value NaN, infinite or subnormal), and
 *         ATTNSCORE_ERR_UNKNOWN_DTYPE in a build without int8 support. Nothing written on error.
 */
attnscore_status attnscore_scores_s8(size_t n_q, size_t n_k, size_t d, const int8_t *q, size_t ldq,
                                     const float *q_scale, size_t q_scale_count, const int8_t *k,
                                     size_t ldk, const float *k_scale, size_t k_scale_count,
                                     float *s, size_t lds, float scale);

/**
 * A packed int8 key cache: keys in the s8 kernels' panel layout with their per-key scales (and
 * the per-key sums the kernel needs), in memory the caller provides; appended per token, never
 * repacked. Bound to the s8 kernel chosen at init. Scores from it are bit-identical to
 * attnscore_scores_s8 on the same keys and scales (with k_scale_count == n_k).
 */
typedef struct attnscore_kcache_s8 attnscore_kcache_s8;

/** Bytes for a cache of `capacity` keys of dimension d (0 if an argument is 0, d is above
 * ATTNSCORE_S8_MAX_D, or the size overflows). */
size_t attnscore_kcache_s8_bytes(size_t capacity, size_t d);

/** As attnscore_kcache_f32_init, plus ATTNSCORE_ERR_DIM_TOO_LARGE (d > ATTNSCORE_S8_MAX_D) and
 * ATTNSCORE_ERR_UNKNOWN_DTYPE without the int8 path. */
attnscore_status attnscore_kcache_s8_init(void *mem, size_t bytes, size_t capacity, size_t d,
                                          attnscore_kcache_s8 **cache);

/** Appends n keys (rows of k, stride ldk) with one scale each (k_scale[0 .. n-1]). Errors as
 * attnscore_kcache_f32_append, plus ATTNSCORE_ERR_BAD_QUANT_SCALE (nothing appended). */
attnscore_status attnscore_kcache_s8_append(attnscore_kcache_s8 *cache, size_t n, const int8_t *k,
                                            size_t ldk, const float *k_scale);

/** Keys held / d (0 for NULL or a non-cache). */
size_t attnscore_kcache_s8_size(const attnscore_kcache_s8 *cache);
size_t attnscore_kcache_s8_dim(const attnscore_kcache_s8 *cache);

/** Forgets every key. */
attnscore_status attnscore_kcache_s8_clear(attnscore_kcache_s8 *cache);

/** attnscore_scores_s8 against every cached key (n_q x size), with the same statuses and order
 * (ATTNSCORE_ERR_BAD_CACHE for a non-cache; q_scale_count 1 or n_q). */
attnscore_status attnscore_scores_s8_kcache(size_t n_q, const int8_t *q, size_t ldq,
                                            const float *q_scale, size_t q_scale_count,
                                            const attnscore_kcache_s8 *cache, float *s, size_t lds,
                                            float scale);

/**
 * Quantizes n rows of d floats (row stride ldx) to symmetric int8 with one scale per row:
 * scales[i] = max_t |x[i][t]| / 127, out[i*ldo + t] = x[i][t] / scales[i] rounded to an integer,
 * ties to even, and saturated to -128..127 (the two divisions round in the caller's rounding
 * mode, as all float arithmetic here; the rounding to an integer is always to nearest even).
 * Subnormal inputs read as 0 under the caller's DAZ/FZ. A row whose scale would
 * be below FLT_MIN (all zeros, or tiny) gets scale 0 and zeros. The results are the same bits at
 * every level, and feed attnscore_scores_s8 (q_scale or k_scale with one scale per row).
 * @return ATTNSCORE_OK; n == 0 is a no-op; ATTNSCORE_ERR_ZERO_DIM (d == 0),
 *         ATTNSCORE_ERR_NULL_POINTER, ATTNSCORE_ERR_BAD_LDQ (ldx < d), ATTNSCORE_ERR_BAD_LDS
 *         (ldo < d), ATTNSCORE_ERR_SIZE_OVERFLOW, ATTNSCORE_ERR_OVERLAP (out or scales meet x
 *         or each other), ATTNSCORE_ERR_NOT_FINITE (a NaN or infinity in x), and
 *         ATTNSCORE_ERR_UNKNOWN_DTYPE without the int8 path. Nothing written on error.
 */
attnscore_status attnscore_quantize_s8(size_t n, size_t d, const float *x, size_t ldx, int8_t *out,
                                       size_t ldo, float *scales);

/**
 * Folds per-channel key scales into Q: out[i*ldo + t] = q[i*ldq + t] * channel_scale[t]. For a
 * K cache quantized per channel (k[j][t] ~ kq[j][t] * channel_scale[t]), scores against the
 * int8 kq then go through attnscore_scores_s8 with k_scale 1: quantize the folded Q per row
 * with attnscore_quantize_s8 first. out may be q itself (ldo == ldq); otherwise they must not
 * overlap.
 * @return ATTNSCORE_OK; n == 0 is a no-op; ATTNSCORE_ERR_ZERO_DIM, ATTNSCORE_ERR_NULL_POINTER,
 *         ATTNSCORE_ERR_BAD_LDQ, ATTNSCORE_ERR_BAD_LDS (ldo < d), ATTNSCORE_ERR_SIZE_OVERFLOW,
 *         ATTNSCORE_ERR_OVERLAP; ATTNSCORE_ERR_UNKNOWN_DTYPE without the int8 path.
 */
attnscore_status attnscore_fold_channel_scales(size_t n, size_t d, const float *q, size_t ldq,
                                               const float *channel_scale, float *out, size_t ldo);

/** The scale used when 0.0f is passed: the float nearest to 1/sqrt(d); 0.0f for d == 0. */
float attnscore_default_scale(size_t d);

/** A static English message for any status value (unknown values get a generic message). */
const char *attnscore_status_string(attnscore_status status);

/**
 * Caps the kernel level at run time (for tests and benchmarks), overriding ATTNSCORE_MAX_LEVEL;
 * ATTNSCORE_LEVEL_BEST removes this run-time cap, so the environment's applies again.
 * Not to be called while another thread computes scores.
 * @return ATTNSCORE_ERR_UNKNOWN_LEVEL for a level outside this build's CPU family.
 */
attnscore_status attnscore_set_max_level(attnscore_level level);

/** The cap in force: from attnscore_set_max_level, else ATTNSCORE_MAX_LEVEL, else BEST. */
attnscore_level attnscore_max_level(void);

/** The kernel chosen for a dtype on this CPU under the cap, e.g. "qk_f32_8x32__avx512"; NULL for an
 * unknown dtype. */
const char *attnscore_kernel_name(attnscore_dtype dtype);

/** The level of the kernel attnscore_kernel_name() reports. */
attnscore_level attnscore_kernel_level(attnscore_dtype dtype);

/** A level's name as ATTNSCORE_MAX_LEVEL spells it ("scalar", "avx2", ...); NULL if unknown. */
const char *attnscore_level_name(attnscore_level level);

/** Parses a level name; returns ATTNSCORE_ERR_UNKNOWN_LEVEL for a name that is not a level. */
attnscore_status attnscore_level_from_name(const char *name, attnscore_level *level);

/** Whether this CPU (and OS) can run a level; 0 for levels not compiled into this build. */
int attnscore_level_supported(attnscore_level level);

/** The CPU features detected at run time (ATTNSCORE_CPU_* bits). */
uint64_t attnscore_cpu_features(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTNSCORE_ATTNSCORE_H */
