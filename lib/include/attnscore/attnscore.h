/* SPDX-License-Identifier: Apache-2.0 */
/* attnscore C API: scaled attention scores S = scale * Q * K^T. */
#ifndef ATTNSCORE_ATTNSCORE_H
#define ATTNSCORE_ATTNSCORE_H

#include <stddef.h>
#include <stdint.h>

#include "attnscore/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Result of every attnscore call. ATTNSCORE_OK is 0; every failure has its own code. This header
 * is the one reference for the statuses and the order in which each call checks them (below the
 * enum); on any status but ATTNSCORE_OK nothing is written. */
typedef enum attnscore_status {
  ATTNSCORE_OK = 0, /**< success, including the no-op n_q == 0 or n_k == 0 (whatever the rest) */
  /** q, k or s (or another pointer the call needs) is NULL, with n_q, n_k and d non-zero */
  ATTNSCORE_ERR_NULL_POINTER = 1,
  ATTNSCORE_ERR_ZERO_DIM = 2, /**< d == 0 (with n_q and n_k non-zero) */
  ATTNSCORE_ERR_BAD_LDQ = 3,  /**< ldq < d */
  ATTNSCORE_ERR_BAD_LDK = 4,  /**< ldk < d */
  ATTNSCORE_ERR_BAD_LDS = 5,  /**< lds < n_k */
  /** scale is NaN, +-Inf or subnormal (FTZ/DAZ and armv7 NEON would flush it to 0; +-0 selects
   * the default) */
  ATTNSCORE_ERR_BAD_SCALE = 6,
  /** a matrix's extent in bytes does not fit in size_t (32 bits on armv7) or would end past the
   * top of the address space */
  ATTNSCORE_ERR_SIZE_OVERFLOW = 7,
  ATTNSCORE_ERR_OVERLAP = 8, /**< the memory S spans meets the memory Q or K spans (touching is
                                  fine; Q and K may overlap each other) */
  /** attnscore_set_max_level with a level this build's CPU family lacks;
   * attnscore_level_from_name with a name that is no level at all */
  ATTNSCORE_ERR_UNKNOWN_LEVEL = 9,
  ATTNSCORE_ERR_SHAPE_MISMATCH = 10, /**< C++ views whose shapes disagree */
  /** a call of a dtype this build leaves out (ATTNSCORE_ENABLE_F16=OFF, ATTNSCORE_ENABLE_S8=OFF) */
  ATTNSCORE_ERR_UNKNOWN_DTYPE = 11,
  ATTNSCORE_ERR_BUFFER_TOO_SMALL =
      12,                        /**< key cache memory smaller than attnscore_kcache_*_bytes */
  ATTNSCORE_ERR_CACHE_FULL = 13, /**< appending past the key cache's capacity */
  /** not a key cache made by attnscore_kcache_*_init: a misaligned pointer, or memory without the
   * cache's header (a marker, not a proof: copied or freed cache memory is the caller's error) */
  ATTNSCORE_ERR_BAD_CACHE = 14,
  ATTNSCORE_ERR_BAD_SCALE_COUNT = 15, /**< s8: a scale count neither 1 nor n_q (n_k) */
  ATTNSCORE_ERR_BAD_QUANT_SCALE = 16, /**< s8: a q/k scale value NaN, infinite or subnormal */
  ATTNSCORE_ERR_DIM_TOO_LARGE = 17,   /**< s8: d > ATTNSCORE_S8_MAX_D (int32 sums could overflow) */
  ATTNSCORE_ERR_NOT_FINITE = 18,      /**< quantization input holds a NaN or an infinity */
  ATTNSCORE_ERR_HEADS_MISMATCH = 19,  /**< heads_kv is 0 or does not divide heads_q */
  /** attention: the heads (or rows) of Q, K or S overlap each other (a stride too small for the
   * layout) */
  ATTNSCORE_ERR_BAD_HEAD_STRIDE = 20,
  ATTNSCORE_ERR_BAD_WINDOW = 21,  /**< ATTNSCORE_MASK_WINDOW with a window of 0 */
  ATTNSCORE_ERR_BAD_SOFTCAP = 22, /**< softcap negative, NaN, infinite or subnormal (0: off) */
  /** attention, under a mask: pos_offset + n_q - 1 does not fit in size_t */
  ATTNSCORE_ERR_POSITION_OVERFLOW = 23,
  /** unknown bits in the attention descriptor's mask or flags, or in the options of
   * attnscore_scores_f16_ex / attnscore_scores_f16_to_f16_ex */
  ATTNSCORE_ERR_BAD_FLAGS = 24,
  ATTNSCORE_ERR_SYSTEM = 25, /**< the system refused a thread or memory (pool creation) */
  ATTNSCORE_ERR_ROW_TOO_LONG =
      26, /**< f16 softmax output: n_k > ATTNSCORE_ATTN_F16_SOFTMAX_MAX_KEYS */
  ATTNSCORE_STATUS_MAX_ENUM = 0x7fffffff /**< not a status: makes every int value a valid one */
} attnscore_status;

/*
 * Check order. Each call checks its arguments before it reads or writes any memory, and a call
 * with several faults gets the status of the first check that fails, in this order:
 *
 * attnscore_scores_f32 (and attnscore::scores, which first returns ATTNSCORE_ERR_SHAPE_MISMATCH
 * when q.cols != k.cols, s.rows != q.rows or s.cols != k.rows, even for empty views):
 *   n_q == 0 or n_k == 0: ATTNSCORE_OK, nothing read or written, whatever the rest (NULL, a NaN
 *   scale, ...); d == 0: ZERO_DIM; q, k or s NULL: NULL_POINTER; ldq < d: BAD_LDQ; ldk < d:
 *   BAD_LDK; lds < n_k: BAD_LDS; scale NaN, +-Inf or subnormal: BAD_SCALE; a matrix's extent,
 *   ((rows - 1) * ld + cols) * element bytes, past size_t or the top of the address space:
 *   SIZE_OVERFLOW; S's extent (first to last element, row gaps included) meeting Q's or K's:
 *   OVERLAP.
 * attnscore_scores_f16, attnscore_scores_f16_to_f16: as the f32 call (elements of 2 bytes; S of
 *   4 or 2). The _ex forms: the same, then BAD_FLAGS for unknown option bits.
 * attnscore_scores_s8: no-op; ZERO_DIM; DIM_TOO_LARGE; NULL_POINTER (also q_scale, k_scale);
 *   BAD_LDQ, BAD_LDK, BAD_LDS; BAD_SCALE_COUNT; BAD_SCALE; SIZE_OVERFLOW; OVERLAP (S against Q,
 *   K and both scale arrays); BAD_QUANT_SCALE (0 is allowed).
 * attnscore_quantize_s8, attnscore_quantize_f16_s8, attnscore_fold_channel_scales: no-op (n == 0);
 *   ZERO_DIM; NULL_POINTER; BAD_LDQ (input), BAD_LDS (output); SIZE_OVERFLOW; OVERLAP (the fold
 *   may work in place only with ldo == ldq); the quantizers then NOT_FINITE.
 * attnscore_f16_to_f32, attnscore_f32_to_f16: no-op (n == 0); NULL_POINTER; SIZE_OVERFLOW;
 *   OVERLAP.
 * Key caches, _init: NULL_POINTER; ZERO_DIM; (s8) DIM_TOO_LARGE; SIZE_OVERFLOW; BUFFER_TOO_SMALL.
 *   _append: NULL_POINTER (cache); BAD_CACHE; no-op (n == 0); NULL_POINTER (keys, s8 scales);
 *   BAD_LDK; CACHE_FULL; SIZE_OVERFLOW; OVERLAP (keys meeting the cache); (s8) BAD_QUANT_SCALE.
 *   Scores: NULL_POINTER (cache); BAD_CACHE; no-op; then as the raw call, with S also checked
 *   against the cache's memory.
 * attnscore_attention_f32: desc NULL: NULL_POINTER; heads_q, n_q or n_k 0: a successful no-op
 *   whatever the rest; ZERO_DIM; q, k or s NULL: NULL_POINTER; HEADS_MISMATCH; q_row_stride < d,
 *   k_row_stride < d, s_row_stride < n_k: BAD_LDQ, BAD_LDK, BAD_LDS; BAD_SCALE; BAD_SOFTCAP;
 *   unknown mask or flag bits: BAD_FLAGS; BAD_WINDOW; under a mask, pos_offset + n_q - 1 past
 *   SIZE_MAX: POSITION_OVERFLOW; heads or rows that overlap in Q, K or S, i.e. neither rows nested
 *   in heads (head_stride >= (rows - 1) * row_stride + cols) nor heads nested in rows
 *   (head_stride >= cols and row_stride >= (heads - 1) * head_stride + cols): BAD_HEAD_STRIDE; a
 *   tensor's extent ((heads - 1) * head_stride + (rows - 1) * row_stride + cols) * element bytes
 *   past size_t or the address space: SIZE_OVERFLOW; S's extent meeting Q's or K's: OVERLAP.
 * attnscore_attention_f16, attnscore_attention_f32_to_f16: as attnscore_attention_f32 (elements
 *   of 2 bytes for the binary16 tensors); then, f16 output with the softmax, ROW_TOO_LONG past
 *   ATTNSCORE_ATTN_F16_SOFTMAX_MAX_KEYS keys.
 * Every _parallel call: as its single-threaded call, then NULL_POINTER for a par whose
 *   parallel_for is NULL (a NULL par runs on the calling thread).
 * Without the dtype in the build (ATTNSCORE_ENABLE_F16=OFF, ATTNSCORE_ENABLE_S8=OFF) the calls of
 * that dtype return UNKNOWN_DTYPE; attnscore_pool_create: NULL_POINTER, SYSTEM;
 * attnscore_set_max_level and attnscore_level_from_name: UNKNOWN_LEVEL.
 */

/** Input element types. */
typedef enum attnscore_dtype {
  ATTNSCORE_DTYPE_F32 = 0,              /**< IEEE binary32 */
  ATTNSCORE_DTYPE_F16 = 1,              /**< IEEE binary16, passed as its bits (uint16_t) */
  ATTNSCORE_DTYPE_S8 = 2,               /**< symmetric int8 with float scales, exact int32 sums */
  ATTNSCORE_DTYPE_MAX_ENUM = 0x7fffffff /**< not a dtype: makes every int value a valid one */
} attnscore_dtype;

/** Kernel levels: feature bundles; scalar is in every build. A cap admits the levels up to it in
 * the cap order, which is the enum order within a CPU family except for avxvnni (added later):
 * scalar, sse2, avx2, avxvnni, avx512, avx512vnni; scalar, neon, neon_dotprod, neon_i8mm. */
typedef enum attnscore_level {
  ATTNSCORE_LEVEL_SCALAR = 0,           /**< portable C++, always built */
  ATTNSCORE_LEVEL_SSE2 = 1,             /**< x86-64 baseline */
  ATTNSCORE_LEVEL_AVX2 = 2,             /**< AVX2 + FMA + F16C, OS saves YMM */
  ATTNSCORE_LEVEL_AVX512 = 3,           /**< AVX-512 F/BW/DQ/VL, OS saves ZMM */
  ATTNSCORE_LEVEL_AVX512VNNI = 4,       /**< avx512 + AVX512_VNNI */
  ATTNSCORE_LEVEL_AVXVNNI = 5,          /**< avx2 + AVX-VNNI (int8 only); ranks below avx512 */
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

/** Mask bits (attnscore_attention_desc.mask). Query row i sits at position p = pos_offset + i. */
#define ATTNSCORE_MASK_CAUSAL 1u /**< row i sees keys 0 ... p */
#define ATTNSCORE_MASK_WINDOW 2u /**< row i sees keys p - window + 1 ... p (implies causal) */
/** Option bits (attnscore_attention_desc.flags). */
#define ATTNSCORE_ATTN_SOFTMAX 1u /**< each row of S becomes softmax weights (f32) */

/**
 * One attention-scores step for every head of a layer. The same descriptor serves every input
 * dtype (one attnscore_attention_<dtype> call each). Strides are in elements.
 *   Q: heads_q x n_q x d,  q[h * q_head_stride + i * q_row_stride + t]
 *   K: heads_kv x n_k x d, k[h * k_head_stride + j * k_row_stride + t]
 *   S: heads_q x n_q x n_k, s[h * s_head_stride + i * s_row_stride + j]
 * Query head h reads K head h / (heads_q / heads_kv) (grouped- and multi-query attention).
 */
typedef struct attnscore_attention_desc {
  size_t heads_q, heads_kv; /**< heads_kv must divide heads_q */
  size_t n_q, n_k, d;
  size_t q_head_stride, q_row_stride;
  size_t k_head_stride, k_row_stride;
  size_t s_head_stride, s_row_stride;
  float scale;       /**< 0.0f: attnscore_default_scale(d) */
  float softcap;     /**< 0.0f: none; c > 0: s -> c * tanh(s / c) after the scale */
  unsigned mask;     /**< ATTNSCORE_MASK_* bits; masked scores are -Inf (0 after softmax) */
  unsigned flags;    /**< ATTNSCORE_ATTN_* bits */
  size_t pos_offset; /**< position of query row 0 (used by the masks) */
  size_t window;     /**< keys seen under ATTNSCORE_MASK_WINDOW (>= 1) */
} attnscore_attention_desc;

/** A descriptor for dense tensors (head-major, rows of d or n_k elements), scale 0 (default),
 * no softcap, no mask, no softmax. */
attnscore_attention_desc attnscore_attention_desc_dense(size_t heads_q, size_t heads_kv, size_t n_q,
                                                        size_t n_k, size_t d);

/**
 * The scores of every head (see attnscore_attention_desc), then the softcap, the mask and the
 * softmax that the descriptor asks for, in one call with no copy of K. Unmasked scores (with no
 * softcap) are bit-identical to attnscore_scores_f32 on the same head at the same level; register
 * tiles that the mask hides wholly are not computed. With ATTNSCORE_ATTN_SOFTMAX a row whose keys
 * are all masked becomes all zeros.
 * @return ATTNSCORE_OK (also when heads_q, n_q or n_k is 0, whatever the rest), or an error
 *         status; on error nothing is written to s. No allocation; FP environment unchanged.
 */
attnscore_status attnscore_attention_f32(const attnscore_attention_desc *desc, const float *q,
                                         const float *k, float *s);

/**
 * attnscore_attention_f32 on IEEE binary16 Q and K (each element passed as its 16 bits), with
 * f32 accumulation and f32 output, as attnscore_scores_f16: every result is the one
 * attnscore_attention_f32 gives on the exactly converted values at the same level. Statuses as
 * attnscore_attention_f32 (Q's and K's extents counted in 2-byte elements), and
 * ATTNSCORE_ERR_UNKNOWN_DTYPE in a build without f16.
 */
attnscore_status attnscore_attention_f16(const attnscore_attention_desc *desc, const uint16_t *q,
                                         const uint16_t *k, float *s);

/** The most keys attnscore_attention_f32_to_f16 takes with ATTNSCORE_ATTN_SOFTMAX (a row's f32
 * scores are held on the stack while its softmax is taken). */
#define ATTNSCORE_ATTN_F16_SOFTMAX_MAX_KEYS 8192

/**
 * As attnscore_attention_f32, but S is written as binary16 (strides in elements of S): each
 * element is the score (or, with ATTNSCORE_ATTN_SOFTMAX, the weight) attnscore_attention_f32
 * gives, rounded once to nearest even (-Inf stays -Inf; |score| >= 65520 gives +-Inf).
 * @return as attnscore_attention_f32 (S's extent counted in 2-byte elements), then
 *         ATTNSCORE_ERR_ROW_TOO_LONG for the softmax with n_k >
 * ATTNSCORE_ATTN_F16_SOFTMAX_MAX_KEYS; ATTNSCORE_ERR_UNKNOWN_DTYPE in a build without f16. Nothing
 * written on error.
 */
attnscore_status attnscore_attention_f32_to_f16(const attnscore_attention_desc *desc,
                                                const float *q, const float *k, uint16_t *s);

/**
 * One task of a parallel call: computes part `index` (0 ... n_tasks - 1) of the work behind
 * `task_ctx`. Tasks are independent: any order, any thread, at the same time.
 */
typedef void (*attnscore_task_fn)(void *task_ctx, size_t index);

/**
 * The caller's parallel-for: runs fn(task_ctx, i) exactly once for every i < n_tasks, on any
 * threads in any order, and returns when all have finished. `pool_ctx` is the context given in
 * attnscore_parallel.
 */
typedef void (*attnscore_parallel_for_fn)(void *pool_ctx, attnscore_task_fn fn, void *task_ctx,
                                          size_t n_tasks);

/** A parallel-for to run a call's tasks on: the caller's thread pool, or attnscore_pool_parallel.
 */
typedef struct attnscore_parallel {
  attnscore_parallel_for_fn parallel_for; /**< called once per call (never for a no-op or error) */
  void *ctx;                              /**< passed to parallel_for as pool_ctx */
  size_t threads; /**< threads that run tasks at once: the call makes that many (0 counts as 1) */
} attnscore_parallel;

/**
 * attnscore_scores_f32 with its work split into tasks run through `par` (NULL: on the calling
 * thread). S is split into blocks of whole register tiles (along the keys, or along the rows
 * when there are fewer key panels than threads); every block gives the bits the whole call
 * gives, so the results are identical to attnscore_scores_f32 for any thread count, split or
 * task order. Statuses as attnscore_scores_f32, then ATTNSCORE_ERR_NULL_POINTER if
 * par->parallel_for is NULL; on error nothing is written and the hook is not called.
 */
attnscore_status attnscore_scores_f32_parallel(const attnscore_parallel *par, size_t n_q,
                                               size_t n_k, size_t d, const float *q, size_t ldq,
                                               const float *k, size_t ldk, float *s, size_t lds,
                                               float scale);

/**
 * attnscore_scores_f32_kcache with its work split into tasks run through `par` (NULL: on the
 * calling thread): ranges of whole key panels (or of row tiles), bit-identical to the
 * single-threaded call for any thread count. Statuses as attnscore_scores_f32_kcache, then
 * ATTNSCORE_ERR_NULL_POINTER if par->parallel_for is NULL.
 */
attnscore_status attnscore_scores_f32_kcache_parallel(const attnscore_parallel *par, size_t n_q,
                                                      const float *q, size_t ldq,
                                                      const attnscore_kcache_f32 *cache, float *s,
                                                      size_t lds, float scale);

/**
 * attnscore_attention_f32 with its work split into tasks run through `par` (NULL: on the calling
 * thread): ranges of KV-head groups (each with its query heads), or, with fewer groups than
 * threads, ranges of whole row tiles of every head. Bit-identical to attnscore_attention_f32 for
 * any thread count. Statuses as attnscore_attention_f32, then ATTNSCORE_ERR_NULL_POINTER if
 * par->parallel_for is NULL.
 */
attnscore_status attnscore_attention_f32_parallel(const attnscore_parallel *par,
                                                  const attnscore_attention_desc *desc,
                                                  const float *q, const float *k, float *s);

/**
 * attnscore_scores_f16 and attnscore_scores_s8 with their work split into tasks run through `par`
 * (NULL: on the calling thread), as attnscore_scores_f32_parallel: the same bits as the
 * single-threaded call for any thread count. Statuses as the single-threaded call, then
 * ATTNSCORE_ERR_NULL_POINTER if par->parallel_for is NULL.
 */
attnscore_status attnscore_scores_f16_parallel(const attnscore_parallel *par, size_t n_q,
                                               size_t n_k, size_t d, const uint16_t *q, size_t ldq,
                                               const uint16_t *k, size_t ldk, float *s, size_t lds,
                                               float scale);
attnscore_status attnscore_scores_s8_parallel(const attnscore_parallel *par, size_t n_q, size_t n_k,
                                              size_t d, const int8_t *q, size_t ldq,
                                              const float *q_scale, size_t q_scale_count,
                                              const int8_t *k, size_t ldk, const float *k_scale,
                                              size_t k_scale_count, float *s, size_t lds,
                                              float scale);

/** The built-in thread pool, for callers without one (never created implicitly). */
typedef struct attnscore_pool attnscore_pool;

/**
 * Starts a pool of `threads` threads in all: the calling thread of each parallel call and
 * threads - 1 workers (0: one per CPU the system reports). Errors: ATTNSCORE_ERR_NULL_POINTER,
 * ATTNSCORE_ERR_SYSTEM (a thread or memory refused; nothing is left running).
 */
attnscore_status attnscore_pool_create(size_t threads, attnscore_pool **pool);

/** Stops and joins the workers and frees the pool (NULL: no-op). No call may be using it. */
void attnscore_pool_destroy(attnscore_pool *pool);

/** The threads of a pool, the caller's included (0 for NULL). */
size_t attnscore_pool_threads(const attnscore_pool *pool);

/**
 * The parallel-for that runs tasks on the pool (all zero for NULL). Parallel calls given it
 * from several threads at once take turns on the pool.
 */
attnscore_parallel attnscore_pool_parallel(attnscore_pool *pool);

/**
 * Scaled attention scores from IEEE binary16 inputs (each element passed as its 16 bits):
 * as attnscore_scores_f32 on the exactly converted values, with f32 accumulation and f32 output:
 * the same contract (every product of two binary16 values is exact in f32, so only the sums
 * round), scale default and statuses, checked in the same order. A build without f16
 * (ATTNSCORE_ENABLE_F16=OFF) returns ATTNSCORE_ERR_UNKNOWN_DTYPE from every f16 call.
 */
attnscore_status attnscore_scores_f16(size_t n_q, size_t n_k, size_t d, const uint16_t *q,
                                      size_t ldq, const uint16_t *k, size_t ldk, float *s,
                                      size_t lds, float scale);

/**
 * As attnscore_scores_f16, but S is written as binary16: each element is the f32 score
 * attnscore_scores_f16 gives, rounded once to nearest even; |score| >= 65520 gives +-Inf.
 */
attnscore_status attnscore_scores_f16_to_f16(size_t n_q, size_t n_k, size_t d, const uint16_t *q,
                                             size_t ldq, const uint16_t *k, size_t ldk, uint16_t *s,
                                             size_t lds, float scale);

/** Option bits of attnscore_scores_f16_ex and attnscore_scores_f16_to_f16_ex. */
/** Accumulate in binary16 (ARMv8.2 FP16 arithmetic), never the default: less accurate (see the
 * bound in docs/contract.md) and sums past 65504 become +-Inf. Where the CPU, the level cap or the
 * build has no FP16 arithmetic the call accumulates in f32 instead, exactly as without the flag:
 * attnscore_f16_accumulation_available() says which. */
#define ATTNSCORE_F16_ACCUMULATE_F16 1u

/**
 * attnscore_scores_f16 with option bits (ATTNSCORE_F16_* ; 0 gives attnscore_scores_f16).
 * Statuses as attnscore_scores_f16, then ATTNSCORE_ERR_BAD_FLAGS for unknown bits.
 */
attnscore_status attnscore_scores_f16_ex(size_t n_q, size_t n_k, size_t d, const uint16_t *q,
                                         size_t ldq, const uint16_t *k, size_t ldk, float *s,
                                         size_t lds, float scale, unsigned flags);

/** attnscore_scores_f16_to_f16 with option bits: each score is the f32 score
 * attnscore_scores_f16_ex gives with the same flags, rounded once to binary16. */
attnscore_status attnscore_scores_f16_to_f16_ex(size_t n_q, size_t n_k, size_t d, const uint16_t *q,
                                                size_t ldq, const uint16_t *k, size_t ldk,
                                                uint16_t *s, size_t lds, float scale,
                                                unsigned flags);

/** 1 if ATTNSCORE_F16_ACCUMULATE_F16 accumulates in binary16 now (this build, this CPU, the cap
 * in force); 0 if such calls fall back to f32 accumulation. */
int attnscore_f16_accumulation_available(void);

/** Converts n binary16 values to f32, exactly (subnormals kept; a NaN stays NaN, made quiet).
 * Errors: ATTNSCORE_ERR_NULL_POINTER, ATTNSCORE_ERR_SIZE_OVERFLOW, ATTNSCORE_ERR_OVERLAP. */
attnscore_status attnscore_f16_to_f32(size_t n, const uint16_t *src, float *dst);

/** Converts n f32 values to binary16, rounded to nearest even (|x| >= 65520 gives +-Inf,
 * subnormal results exact where representable, a NaN stays NaN). Errors as attnscore_f16_to_f32.
 */
attnscore_status attnscore_f32_to_f16(size_t n, const float *src, uint16_t *dst);

/** The packed f16 key cache: as attnscore_kcache_f32, keys kept as binary16 (half the bytes),
 * bound to the f16 kernel chosen at init; its scores are bit-identical to attnscore_scores_f16
 * on the same keys with that kernel. */
typedef struct attnscore_kcache_f16 attnscore_kcache_f16;

/** As attnscore_kcache_f32_bytes, for the f16 cache (0 in a build without f16). */
size_t attnscore_kcache_f16_bytes(size_t capacity, size_t d);
/** As attnscore_kcache_f32_init. */
attnscore_status attnscore_kcache_f16_init(void *mem, size_t bytes, size_t capacity, size_t d,
                                           attnscore_kcache_f16 **cache);
/** As attnscore_kcache_f32_append, with binary16 keys. */
attnscore_status attnscore_kcache_f16_append(attnscore_kcache_f16 *cache, size_t n,
                                             const uint16_t *k, size_t ldk);
/** Keys held (0 for NULL or a non-cache). */
size_t attnscore_kcache_f16_size(const attnscore_kcache_f16 *cache);
/** The key dimension d (0 for NULL or a non-cache). */
size_t attnscore_kcache_f16_dim(const attnscore_kcache_f16 *cache);
/** Forgets every key. */
attnscore_status attnscore_kcache_f16_clear(attnscore_kcache_f16 *cache);
/** As attnscore_scores_f32_kcache, with binary16 queries, against the f16 cache. */
attnscore_status attnscore_scores_f16_kcache(size_t n_q, const uint16_t *q, size_t ldq,
                                             const attnscore_kcache_f16 *cache, float *s,
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
 * As attnscore_quantize_s8, from IEEE binary16 rows (each element passed as its 16 bits): the
 * same bits as attnscore_quantize_s8 on the exactly converted values. Statuses as
 * attnscore_quantize_s8 (ATTNSCORE_ERR_NOT_FINITE for a binary16 NaN or infinity), and
 * ATTNSCORE_ERR_UNKNOWN_DTYPE in a build without the int8 path or without f16.
 */
attnscore_status attnscore_quantize_f16_s8(size_t n, size_t d, const uint16_t *x, size_t ldx,
                                           int8_t *out, size_t ldo, float *scales);

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

/** The version of the library linked, "MAJOR.MINOR.PATCH" (ATTNSCORE_VERSION_STRING of its build;
 * compare with the header's to catch a stale library). */
const char *attnscore_version(void);

/** The same as a number, MAJOR * 10000 + MINOR * 100 + PATCH (ATTNSCORE_VERSION_NUMBER). */
unsigned attnscore_version_number(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTNSCORE_ATTNSCORE_H */
