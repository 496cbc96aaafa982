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
  ATTNSCORE_OK = 0, /**< success, including a call's no-op case (see the check order) */
  /** a pointer the call needs is NULL: an input, an output or an out-parameter, the descriptor,
   * a tensor's data or (s8) scales, a cache handle, or a par whose parallel_for is NULL */
  ATTNSCORE_ERR_NULL_POINTER = 1,
  ATTNSCORE_ERR_ZERO_DIM = 2, /**< d == 0 (a cache shape: heads, capacity or d 0) */
  ATTNSCORE_ERR_BAD_LDQ = 3,  /**< ldq < d (Q's row_stride; a quantizer's ldx) */
  ATTNSCORE_ERR_BAD_LDK = 4,  /**< ldk < d (K's or an appended tensor's row_stride) */
  ATTNSCORE_ERR_BAD_LDS = 5,  /**< lds < n_k (S's row_stride; quantize and fold: ldo < d) */
  /** scale is NaN, +-Inf or subnormal (FTZ/DAZ and armv7 NEON would flush it to 0; +-0 selects
   * the default) */
  ATTNSCORE_ERR_BAD_SCALE = 6,
  /** a matrix's extent in bytes does not fit in size_t (32 bits on armv7) or would end past the
   * top of the address space */
  ATTNSCORE_ERR_SIZE_OVERFLOW = 7,
  /** the memory a call writes (S; the out and scales of convert, quantize_s8 and the fold; the
   * cache appended to) meets memory it reads (Q, K, a key cache, s8 scales, keys appended,
   * channel_scale) or another output's; touching is fine, inputs may overlap each other */
  ATTNSCORE_ERR_OVERLAP = 8,
  /** attnscore_set_max_level with a level this build's CPU family lacks;
   * attnscore_level_from_name with a name that is no level at all */
  ATTNSCORE_ERR_UNKNOWN_LEVEL = 9,
  /** shapes disagree: C++ views; attention on a cache of other heads or d, or n_k above the
   * tokens it holds; attnscore_cache_truncate above the tokens held */
  ATTNSCORE_ERR_SHAPE_MISMATCH = 10,
  /** a dtype value that is none, that the call does not take, or that this build leaves out
   * (ATTNSCORE_ENABLE_F16=OFF, ATTNSCORE_ENABLE_S8=OFF) */
  ATTNSCORE_ERR_UNKNOWN_DTYPE = 11,
  ATTNSCORE_ERR_BUFFER_TOO_SMALL = 12, /**< cache memory smaller than attnscore_cache_bytes */
  ATTNSCORE_ERR_CACHE_FULL = 13,       /**< appending past the cache's capacity */
  /** not a cache made by attnscore_cache_init: a misaligned pointer, or memory without the
   * cache's header (a marker, not a proof: copied or freed cache memory is the caller's error) */
  ATTNSCORE_ERR_BAD_CACHE = 14,
  /** s8: attnscore_scores_s8 with q_scale_count neither 1 nor n_q or k_scale_count neither 1
   * nor n_k; attnscore_attention with Q's or raw K's scale_row_stride above 1;
   * attnscore_cache_append to an s8 cache with src's scale_row_stride not 1 */
  ATTNSCORE_ERR_BAD_SCALE_COUNT = 15,
  ATTNSCORE_ERR_BAD_QUANT_SCALE = 16, /**< s8: a q/k scale value NaN, infinite or subnormal */
  ATTNSCORE_ERR_DIM_TOO_LARGE = 17,   /**< s8: d > ATTNSCORE_S8_MAX_D (int32 sums could overflow) */
  ATTNSCORE_ERR_NOT_FINITE = 18,      /**< quantization input holds a NaN or an infinity */
  /** heads_kv is 0 or does not divide heads_q (with a k_cache, heads_kv 0 is SHAPE_MISMATCH) */
  ATTNSCORE_ERR_HEADS_MISMATCH = 19,
  /** attention: the heads (or rows) of Q, K or S overlap each other (a stride too small for the
   * layout) */
  ATTNSCORE_ERR_BAD_HEAD_STRIDE = 20,
  ATTNSCORE_ERR_BAD_WINDOW = 21,  /**< ATTNSCORE_MASK_WINDOW with a window of 0 */
  ATTNSCORE_ERR_BAD_SOFTCAP = 22, /**< softcap negative, NaN, infinite or subnormal (0: off) */
  /** attention, under a mask: pos_offset + n_q - 1 does not fit in size_t */
  ATTNSCORE_ERR_POSITION_OVERFLOW = 23,
  /** unknown bits in the attention descriptor's mask or flags, ATTNSCORE_ATTN_F16_ACCUMULATE
   * with a Q that is not f16 or ATTNSCORE_ATTN_BF16_DOT with one that is not bf16;
   * attnscore_cache_init with an unknown cache kind */
  ATTNSCORE_ERR_BAD_FLAGS = 24,
  ATTNSCORE_ERR_SYSTEM = 25, /**< the system refused a thread or memory (pool creation) */
  ATTNSCORE_ERR_ROW_TOO_LONG =
      26, /**< f16 softmax output: n_k > ATTNSCORE_ATTN_F16_SOFTMAX_MAX_KEYS; attention output:
           * dv > ATTNSCORE_ATTN_OUT_MAX_DV */
  /** attention: K's dtype (or the key cache's) is not Q's; attnscore_cache_append: the tensor's
   * dtype is not the cache's */
  ATTNSCORE_ERR_DTYPE_MISMATCH = 27,
  /** attnscore_attention_output: a sink logit NaN or +Inf (-Inf is no sink) */
  ATTNSCORE_ERR_BAD_SINK = 28,
  ATTNSCORE_STATUS_MAX_ENUM = 0x7fffffff /**< not a status: makes every int value a valid one */
} attnscore_status;

/*
 * Check order. Each call checks its arguments before it writes anything, and a call with several
 * faults gets the status of the first check that fails, in this order (statuses without their
 * ATTNSCORE_ERR_ prefix; "no-op": ATTNSCORE_OK with nothing read or written):
 *
 * attnscore_scores_f32 (and attnscore::scores, which first returns SHAPE_MISMATCH when
 * q.cols != k.cols, s.rows != q.rows or s.cols != k.rows, even for empty views):
 *   n_q == 0 or n_k == 0: no-op, whatever the rest (NULL, a NaN scale, ...); d == 0: ZERO_DIM;
 *   q, k or s NULL: NULL_POINTER; ldq < d: BAD_LDQ; ldk < d: BAD_LDK; lds < n_k: BAD_LDS; scale
 *   NaN, +-Inf or subnormal: BAD_SCALE; a matrix's extent, ((rows - 1) * ld + cols) * element
 *   bytes, past size_t or the top of the address space: SIZE_OVERFLOW; S's extent (first to
 *   last element, row gaps included) meeting Q's or K's: OVERLAP.
 * attnscore_scores_f16, attnscore_scores_bf16: as the f32 call (Q and K elements of 2 bytes).
 * attnscore_scores_s8: no-op; ZERO_DIM; DIM_TOO_LARGE; NULL_POINTER (also q_scale, k_scale);
 *   BAD_LDQ, BAD_LDK, BAD_LDS; BAD_SCALE_COUNT; BAD_SCALE; SIZE_OVERFLOW; OVERLAP (S against Q,
 *   K and both scale arrays); BAD_QUANT_SCALE (0 is allowed).
 * attnscore_attention: desc NULL: NULL_POINTER; heads_q, n_q or n_k 0: no-op, whatever the rest
 *   (par included); ZERO_DIM; Q's dtype, raw K's or S's not a dtype this build has, or S
 *   neither f32 nor f16: UNKNOWN_DTYPE; s8 with d > ATTNSCORE_S8_MAX_D: DIM_TOO_LARGE; q.data,
 *   s.data, raw k.data or (s8) q.scale, raw k.scale NULL: NULL_POINTER; a k_cache that is no
 *   cache: BAD_CACHE; K's (or the cache's) dtype not Q's: DTYPE_MISMATCH; a cache whose heads
 *   differ from heads_kv or whose d differs from d, or that holds fewer than n_k tokens:
 *   SHAPE_MISMATCH; heads_kv 0 or not dividing heads_q: HEADS_MISMATCH (so with a cache,
 *   heads_kv 0 is SHAPE_MISMATCH); q.row_stride < d: BAD_LDQ; raw k.row_stride < d: BAD_LDK;
 *   s.row_stride < n_k: BAD_LDS; (s8) a scale_row_stride of Q or raw K above 1: BAD_SCALE_COUNT;
 *   BAD_SCALE; BAD_SOFTCAP; unknown mask or flag bits, ATTNSCORE_ATTN_F16_ACCUMULATE with Q
 *   not f16, or ATTNSCORE_ATTN_BF16_DOT with Q not bf16: BAD_FLAGS; BAD_WINDOW; under a mask,
 * pos_offset + n_q - 1 past SIZE_MAX: POSITION_OVERFLOW; heads or rows that overlap in Q, raw K or
 * S, i.e. neither rows nested in heads (head_stride >= (rows - 1) * row_stride + cols) nor heads
 * nested in rows (head_stride >= cols and row_stride >= (heads - 1) * head_stride + cols):
 * BAD_HEAD_STRIDE; a tensor's extent ((heads - 1) * head_stride + (rows - 1) * row_stride + cols) *
 * element bytes (s8 scales: 4 bytes, cols 1) past size_t or the address space: SIZE_OVERFLOW; S's
 * extent meeting Q's, raw K's, the cache's memory or (s8) a scale array's: OVERLAP; (s8) a scale
 *   value NaN, infinite or subnormal: BAD_QUANT_SCALE; f16 S with ATTNSCORE_ATTN_SOFTMAX and
 *   n_k > ATTNSCORE_ATTN_F16_SOFTMAX_MAX_KEYS: ROW_TOO_LONG; then a par whose parallel_for is
 *   NULL: NULL_POINTER (a NULL par runs on the calling thread).
 * attnscore_attention_output: as attnscore_attention without the checks of S (its dtype, data,
 *   row_stride, strides, extent and overlaps, ROW_TOO_LONG), up to and including BAD_QUANT_SCALE
 *   (a k_cache that is not a key cache: BAD_CACHE); then dv (0: d) above
 *   ATTNSCORE_ATTN_OUT_MAX_DV: ROW_TOO_LONG; raw V's dtype not one this build has, or O neither
 *   f32 nor f16: UNKNOWN_DTYPE; o.data, raw v.data or (s8 V) v.scale NULL: NULL_POINTER; a
 *   v_cache that is not a value cache: BAD_CACHE; a value cache whose heads differ from
 *   heads_kv or whose d differs from dv, or that holds fewer than n_k tokens: SHAPE_MISMATCH;
 *   raw v.row_stride < dv: BAD_LDK; o.row_stride < dv: BAD_LDS; (s8 V) scale_row_stride above
 *   1: BAD_SCALE_COUNT; a sink NaN or +Inf: BAD_SINK; heads or rows that overlap in raw V, O or
 *   lse (cols 1): BAD_HEAD_STRIDE; an extent of V, its scales, O, lse or sinks past size_t or
 *   the address space: SIZE_OVERFLOW; O meeting Q, K (or the key cache), V (or the value cache),
 *   a scale array, the sinks or lse, or lse meeting any of those inputs: OVERLAP; (s8 V) a scale
 *   value NaN, infinite or subnormal: BAD_QUANT_SCALE; workspace NULL with workspace_bytes
 *   above 0: NULL_POINTER; the workspace past the address space: SIZE_OVERFLOW; the workspace
 *   meeting any of the operands above: OVERLAP; then a par whose parallel_for is NULL:
 *   NULL_POINTER.
 * attnscore_cache_init: mem, shape or cache NULL: NULL_POINTER; a kind other than
 *   ATTNSCORE_CACHE_KEYS and ATTNSCORE_CACHE_VALUES: BAD_FLAGS; a dtype other than f32, f16,
 *   bf16 and s8: UNKNOWN_DTYPE;
 * heads, capacity or d 0: ZERO_DIM; s8 with d > ATTNSCORE_S8_MAX_D: DIM_TOO_LARGE; a dtype the
 * build leaves out: UNKNOWN_DTYPE; a size past size_t: SIZE_OVERFLOW; bytes below
 *   attnscore_cache_bytes: BUFFER_TOO_SMALL.
 * attnscore_cache_append: cache NULL: NULL_POINTER; BAD_CACHE; n == 0: no-op; src NULL:
 *   NULL_POINTER; src->dtype not the cache's: DTYPE_MISMATCH; (s8) scale_row_stride not 1:
 *   BAD_SCALE_COUNT; data or (s8) scale NULL: NULL_POINTER; row_stride < d: BAD_LDK; more than
 *   the room left: CACHE_FULL; SIZE_OVERFLOW; keys or scales meeting the cache's memory:
 *   OVERLAP; (s8) BAD_QUANT_SCALE.
 * attnscore_cache_truncate: NULL_POINTER; BAD_CACHE; size above the tokens held: SHAPE_MISMATCH.
 * attnscore_convert: a pair other than f16 or bf16 -> f32 and f32 -> f16 or bf16: UNKNOWN_DTYPE;
 *   n == 0: no-op;
 *   NULL_POINTER; SIZE_OVERFLOW; OVERLAP.
 * attnscore_quantize_s8: src_dtype not f32, f16 or bf16: UNKNOWN_DTYPE; n == 0: no-op; ZERO_DIM;
 *   NULL_POINTER; ldx < d: BAD_LDQ; ldo < d: BAD_LDS; SIZE_OVERFLOW; OVERLAP (x, out and scales
 *   pairwise); NOT_FINITE.
 * attnscore_fold_channel_scales: n == 0: no-op; ZERO_DIM; NULL_POINTER; BAD_LDQ; ldo < d:
 *   BAD_LDS; SIZE_OVERFLOW; OVERLAP (out against q and channel_scale; out may be q itself
 *   only with ldo == ldq).
 * Without a dtype in the build (ATTNSCORE_ENABLE_F16=OFF, ATTNSCORE_ENABLE_S8=OFF),
 * attnscore_scores_f16, attnscore_scores_bf16 and attnscore_convert (no f16: the option covers
 * both 16-bit float dtypes), attnscore_scores_s8 and attnscore_fold_channel_scales (no int8)
 * return UNKNOWN_DTYPE before any other check, and attnscore_quantize_s8 right after its
 * src_dtype check (without int8 for any src_dtype, without f16 for an f16 or bf16 one).
 * attnscore_pool_create: NULL_POINTER, SYSTEM; attnscore_set_max_level: UNKNOWN_LEVEL;
 * attnscore_level_from_name: NULL_POINTER, UNKNOWN_LEVEL.
 */

/** Input element types. */
typedef enum attnscore_dtype {
  ATTNSCORE_DTYPE_F32 = 0,  /**< IEEE binary32 */
  ATTNSCORE_DTYPE_F16 = 1,  /**< IEEE binary16, passed as its bits (uint16_t) */
  ATTNSCORE_DTYPE_S8 = 2,   /**< symmetric int8 with float scales, exact int32 sums */
  ATTNSCORE_DTYPE_BF16 = 3, /**< bfloat16 (the top 16 bits of a binary32), passed as its bits */
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
/** AMX-TILE and AMX-BF16, the tile state saved by the OS and (Linux) granted to the process. */
#define ATTNSCORE_CPU_AMXBF16 (UINT64_C(1) << 11)
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
 * Scaled attention scores from bfloat16 inputs (each element passed as its 16 bits): as
 * attnscore_scores_f32 on the exactly converted values (a bfloat16 is the top half of a binary32),
 * with f32 accumulation and f32 output: every result is bit for bit the f32 call's on the
 * converted inputs at the same level, so the same contract, scale default and statuses, checked
 * in the same order. A build without f16 (ATTNSCORE_ENABLE_F16=OFF, which leaves out both 16-bit
 * float dtypes) returns ATTNSCORE_ERR_UNKNOWN_DTYPE.
 */
attnscore_status attnscore_scores_bf16(size_t n_q, size_t n_k, size_t d, const uint16_t *q,
                                       size_t ldq, const uint16_t *k, size_t ldk, float *s,
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
 * attnscore_attention (the one call that takes one, as `par`) runs on the calling thread when
 * par is NULL; otherwise, once every check has passed, it calls par->parallel_for exactly once,
 * whatever the thread count. A parallel_for of NULL is ATTNSCORE_ERR_NULL_POINTER, the last check
 * (a no-op returns ATTNSCORE_OK before it). The split never changes a bit of the results. */
typedef struct attnscore_parallel {
  attnscore_parallel_for_fn parallel_for; /**< called once per call (never for a no-op or error) */
  void *ctx;                              /**< passed to parallel_for as pool_ctx */
  /** threads that run tasks at once (0 counts as 1): the call asks for 1 to that many tasks */
  size_t threads;
} attnscore_parallel;

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

/**
 * The parallel-for that runs tasks on the pool, its `threads` the pool's (the caller's thread
 * included); all zero for NULL. Calls given it from several threads at once take turns on it.
 */
attnscore_parallel attnscore_pool_parallel(attnscore_pool *pool);

/**
 * An input tensor of the attention call or a cache append: heads x rows x d elements of `dtype`,
 * element (h, i, t) at data[h * head_stride + i * row_stride + t] (strides in elements), so that
 * head-major and token-major layouts, and views into a larger buffer, need no copy.
 * ATTNSCORE_DTYPE_S8 tensors carry their dequantization scales: row i of head h is scaled by
 * scale[h * scale_head_stride + i * scale_row_stride], scale_row_stride 1 (one scale per row or
 * key) or 0 (one per head; both strides 0: one for the tensor). Other dtypes ignore the scales.
 */
typedef struct attnscore_tensor {
  const void *data;
  attnscore_dtype dtype;
  size_t head_stride, row_stride;
  const float *scale;
  size_t scale_head_stride, scale_row_stride;
} attnscore_tensor;

/** The output tensor S: heads x rows x n_k elements of `dtype` (ATTNSCORE_DTYPE_F32, or
 * ATTNSCORE_DTYPE_F16: each f32 result rounded once to nearest even). */
typedef struct attnscore_output {
  void *data;
  attnscore_dtype dtype;
  size_t head_stride, row_stride;
} attnscore_output;

/** What a cache holds (attnscore_cache_shape.kind). */
typedef enum attnscore_cache_kind {
  ATTNSCORE_CACHE_KEYS = 0,   /**< keys, in the layout the scores kernels read */
  ATTNSCORE_CACHE_VALUES = 1, /**< values, rows of d (the value dimension) as P.V reads them */
  ATTNSCORE_CACHE_KIND_MAX_ENUM = 0x7fffffff
} attnscore_cache_kind;

/** A cache's shape, fixed at init. */
typedef struct attnscore_cache_shape {
  attnscore_cache_kind kind;
  attnscore_dtype dtype; /**< f32, f16, bf16 or s8 (s8: each key keeps its scale) */
  size_t heads;          /**< KV heads of the layer, appended together */
  size_t capacity;       /**< tokens per head */
  size_t d;
} attnscore_cache_shape;

/**
 * A packed KV cache for every KV head of a layer: each head's tokens kept in the layout its
 * kernel reads (panels of NR keys, d-major; int8 with per-key sums and scales), appended a token
 * or more at a time and never repacked, in memory the caller provides (no heap). It is bound to
 * the kernel of its dtype chosen at init (later changes of the cap do not affect it); scores read
 * from it are bit-identical to the same call on raw K with that kernel.
 */
typedef struct attnscore_cache attnscore_cache;

/** Bytes a cache of this shape needs under the current kernel choice (alignment slack
 * included); 0 for a NULL or zero-sized shape, an unknown kind or dtype (or one this build leaves
 * out), s8 with d above ATTNSCORE_S8_MAX_D, or a size past size_t. */
size_t attnscore_cache_bytes(const attnscore_cache_shape *shape);

/** Makes an empty cache in `mem` (`bytes` long, any alignment); `*cache` then points into it.
 * An unknown shape->kind is ATTNSCORE_ERR_BAD_FLAGS; other statuses in the check order. */
attnscore_status attnscore_cache_init(void *mem, size_t bytes, const attnscore_cache_shape *shape,
                                      attnscore_cache **cache);

/** Appends n tokens of every head after those held (`src`: heads x n x d of the cache's dtype;
 * s8 with one scale per token, scale_row_stride 1, else ATTNSCORE_ERR_BAD_SCALE_COUNT); n == 0
 * is a no-op once the handle is checked; nothing is appended on error. */
attnscore_status attnscore_cache_append(attnscore_cache *cache, size_t n,
                                        const attnscore_tensor *src);

/** Tokens held per head (0 for NULL or a non-cache). */
size_t attnscore_cache_size(const attnscore_cache *cache);

/** Keeps the first `size` tokens of every head (0: empties it; a rejected speculative token is
 * dropped the same way); `size` above the tokens held is ATTNSCORE_ERR_SHAPE_MISMATCH. */
attnscore_status attnscore_cache_truncate(attnscore_cache *cache, size_t size);

/** Mask bits (attnscore_attention_desc.mask). Query row i sits at position p = pos_offset + i. */
#define ATTNSCORE_MASK_CAUSAL 1u /**< row i sees keys 0 ... p */
#define ATTNSCORE_MASK_WINDOW 2u /**< row i sees keys p - window + 1 ... p (implies causal) */
/** Option bits (attnscore_attention_desc.flags). */
#define ATTNSCORE_ATTN_SOFTMAX 1u /**< each row of S becomes softmax weights */
/** f16 Q and K accumulated in binary16 (ARMv8.2 FP16 arithmetic; a Q of another dtype is
 * ATTNSCORE_ERR_BAD_FLAGS), never the default: less accurate (docs/contract.md) and sums past
 * 65504 become +-Inf. Where the CPU, the cap, the build or a cache as K has no such path the call
 * accumulates in f32, exactly as without the flag (attnscore_flag_available says which). */
#define ATTNSCORE_ATTN_F16_ACCUMULATE 2u

/** bf16 Q and K through the CPU's bf16 dot-product instruction (AVX512_BF16 vdpbf16ps; a Q of
 * another dtype is ATTNSCORE_ERR_BAD_FLAGS), never the default: the products of each pair of
 * dims are added to an f32 sum in t order, a pair per instruction, within the f32 contract's
 * bound, but subnormal inputs and sums are flushed to 0 whatever the FP mode (docs/contract.md).
 * Where the CPU, the cap, the build or a cache as K has no such path the call is the default bf16
 * call, bit for bit (attnscore_flag_available says which). */
#define ATTNSCORE_ATTN_BF16_DOT 4u

/** The most keys an f16 S takes with ATTNSCORE_ATTN_SOFTMAX (a row's f32 weights are held on the
 * stack before they are rounded). */
#define ATTNSCORE_ATTN_F16_SOFTMAX_MAX_KEYS 8192

/**
 * One attention-scores step for every head of a layer, any dtype:
 *   S[h][i][j] = finish(scale * sum_t Q[h][i][t] * K[h / g][j][t]),  g = heads_q / heads_kv,
 * for h < heads_q, i < n_q, j < n_k (grouped- and multi-query attention), where finish applies
 * the softcap, then the mask (-Inf) or the softmax (masked keys 0; a row with no key all 0).
 * K is `k`, or the first n_k tokens of `k_cache` (then `k` is not read). Q and K share a dtype:
 * f32; f16 or bf16 (f32 accumulation: every result the f32 call gives on the converted values); s8
 * (the integer sums exact, then (float)acc * ((q_scale * scale) * k_scale), as
 * attnscore_scores_s8).
 */
typedef struct attnscore_attention_desc {
  size_t heads_q, heads_kv; /**< heads_kv must divide heads_q */
  size_t n_q, n_k, d;
  attnscore_tensor q;             /**< heads_q x n_q x d */
  attnscore_tensor k;             /**< heads_kv x n_k x d, unless k_cache is set */
  const attnscore_cache *k_cache; /**< K from a cache of kind ATTNSCORE_CACHE_KEYS, or NULL */
  attnscore_output s;             /**< heads_q x n_q x n_k */
  float scale;                    /**< 0.0f: attnscore_default_scale(d) */
  float softcap;                  /**< 0.0f: none; c > 0: s -> c * tanh(s / c) after the scale */
  unsigned mask;                  /**< ATTNSCORE_MASK_* bits */
  unsigned flags;                 /**< ATTNSCORE_ATTN_* bits */
  size_t pos_offset;              /**< position of query row 0 (used by the masks) */
  size_t window;                  /**< keys seen under ATTNSCORE_MASK_WINDOW (>= 1) */
  /* The attention output (read by attnscore_attention_output only; attnscore_attention ignores
   * these, and attnscore_attention_output ignores s). */
  size_t dv;                      /**< the value dimension (0: d) */
  attnscore_tensor v;             /**< heads_kv x n_k x dv, any dtype (s8 with its scales) */
  const attnscore_cache *v_cache; /**< V from a cache of kind ATTNSCORE_CACHE_VALUES, or NULL */
  attnscore_output o;             /**< heads_q x n_q x dv, f32 or f16 */
  /** NULL, or heads_q x n_q floats, element (h, i) at lse[h * lse_head_stride + i *
   * lse_row_stride]: each row's log-sum-exp, ln(sum over visible keys of e^s + e^sink), -Inf
   * for a row with no visible key and no sink */
  float *lse;
  size_t lse_head_stride, lse_row_stride;
  /** NULL, or one logit per query head (attention sinks): e^sink joins each row's denominator
   * and adds no value; -Inf is no sink */
  const float *sinks;
  /** NULL, or workspace_bytes of scratch memory in which attnscore_attention_output splits the
   * keys of blocks too few for the threads, or (prefill) packs K once
   * (attnscore_attention_output_workspace gives the size; less may run without either, the same
   * bits). It may not meet any other operand. */
  void *workspace;
  size_t workspace_bytes;
} attnscore_attention_desc;

/** A descriptor of dense head-major tensors of one dtype (Q and K rows of d, S rows of n_k, f32
 * S; s8: one scale per row and per key), data NULL, no cache, scale 0 (the default), no
 * softcap, mask or option. */
attnscore_attention_desc attnscore_attention_dense(attnscore_dtype dtype, size_t heads_q,
                                                   size_t heads_kv, size_t n_q, size_t n_k,
                                                   size_t d);

/**
 * Runs the step the descriptor describes, its work split into tasks through `par` (NULL: the
 * calling thread), the same bits for any thread count. Unmasked scores with no softcap are
 * bit-identical to the BLAS-style call of the dtype on the same head at the same level; register
 * tiles that the mask hides wholly are not computed. No allocation; FP environment unchanged.
 * @return ATTNSCORE_OK, or the first failing check in the order written above; nothing written
 *         on error.
 */
attnscore_status attnscore_attention(const attnscore_attention_desc *desc,
                                     const attnscore_parallel *par);

/** The largest value dimension attnscore_attention_output takes (a row's f32 output is held on
 * the stack). */
#define ATTNSCORE_ATTN_OUT_MAX_DV 2048

/**
 * The attention output for every head of a layer, S never in memory:
 *   O[h][i] = sum_j w_j V[h / g][j] / (e^(sink_h - m) + sum_j w_j),  w_j = e^(S[h][i][j] - m),
 * over the keys j that row i sees, m the row's largest score, S[h][i][j] as attnscore_attention
 * makes it before any softmax (the scale, then the softcap; ATTNSCORE_ATTN_SOFTMAX is implied
 * and its flag bit ignored). Keys are taken in chunks of ATTNSCORE_ATTN_CHUNK_KEYS (rounded up to
 * the kernel's panel width) from key 0, each chunk's weights and weighted sum made against the
 * chunk's own maximum, then merged into the row in chunk order (online softmax), so a row's
 * result depends on the shape and the level only: bit-identical for any thread count and split.
 * Chunks are merged in order into segments of ATTNSCORE_ATTN_SPLIT_KEYS keys, segments in order
 * into the row; with a workspace (desc->workspace), segments of blocks fewer than the threads
 * run as tasks of their own, or a prefill packs each KV head's K there once rather than once
 * per block of rows, the same bits.
 * A row with no visible key gets O = 0 (lse -Inf, or the sink). V is converted to f32 (s8: each
 * value q * scale rounded once) and summed in f32. The accuracy bound is in docs/contract.md.
 * Memory: no allocation; about 99 KiB of stack per task beside the scores path's.
 * @return the checks of attnscore_attention without those of S, then those of V, O, lse and
 *         sinks (the check-order comment above); nothing written on error. n_k == 0 is a no-op.
 *         A build without the call (ATTNSCORE_ENABLE_OUTPUT=OFF) returns
 *         ATTNSCORE_ERR_UNKNOWN_DTYPE.
 */
attnscore_status attnscore_attention_output(const attnscore_attention_desc *desc,
                                            const attnscore_parallel *par);

/** Keys per chunk of attnscore_attention_output's online softmax (before rounding up to the
 * kernel's panel width). */
#define ATTNSCORE_ATTN_CHUNK_KEYS 256

/** Keys per segment of attnscore_attention_output: ATTNSCORE_ATTN_SPLIT_KEYS /
 * ATTNSCORE_ATTN_CHUNK_KEYS chunks, merged in order into a segment's state; segments, on the
 * same grid from key 0, are merged in order into the row's, and are what tasks share out when a
 * workspace lets the keys be split. */
#define ATTNSCORE_ATTN_SPLIT_KEYS 2048

/**
 * The bytes of workspace with which attnscore_attention_output on this descriptor's shape (heads,
 * n_q, n_k, dv) splits the keys across `threads` tasks (0 counts as 1): above 0 only when its
 * blocks of (query head, row) pairs, one KV head each (up to 32 pairs, whole GQA groups for
 * decode), are fewer than the threads and n_k exceeds ATTNSCORE_ATTN_SPLIT_KEYS. Each block's
 * segments then run as separate tasks and the calling thread merges them, in order, once the
 * parallel_for returns. Otherwise, for raw K of f32, f16 or bf16 (not under
 * ATTNSCORE_ATTN_F16_ACCUMULATE or ATTNSCORE_ATTN_BF16_DOT where they run) in prefill (more rows
 * than the decode shape takes) whose KV heads each serve two blocks or more: the bytes to pack K
 * once, every KV head's keys in the kernel's f32 panels (heads_kv x n_k rounded up to the panel
 * width x d floats, plus 64). 0 as well for a NULL desc or a shape the call refuses.
 */
size_t attnscore_attention_output_workspace(const attnscore_attention_desc *desc, size_t threads);

/** 1 if the option bit `flag` takes its own path now (this build, this CPU, the cap in force):
 * ATTNSCORE_ATTN_F16_ACCUMULATE accumulates in binary16; ATTNSCORE_ATTN_BF16_DOT runs the bf16
 * dot product; ATTNSCORE_ATTN_SOFTMAX always 1. 0 for
 * other bits and where the call falls back. */
int attnscore_flag_available(unsigned flag);

/** Converts n values from one dtype to another: binary16 -> f32 exactly (a NaN made quiet), f32
 * -> binary16 rounded to nearest even (|x| >= 65520 gives +-Inf); bfloat16 -> f32 exactly (the
 * same bits in the top half: a NaN stays as it is), f32 -> bfloat16 rounded to nearest even (no
 * flushing of subnormals; a NaN keeps its sign and top payload bits and is made quiet). Other
 * pairs: ATTNSCORE_ERR_UNKNOWN_DTYPE. */
attnscore_status attnscore_convert(size_t n, attnscore_dtype src_dtype, const void *src,
                                   attnscore_dtype dst_dtype, void *dst);

/**
 * Quantizes n rows of d values of `src_dtype` (f32, or binary16 or bfloat16 bits: the same bits
 * as on the exactly converted values), row stride ldx, to symmetric int8 with one scale per row:
 * scales[i] = max_t |x[i][t]| / 127, out[i*ldo + t] = x[i][t] / scales[i] rounded to an integer,
 * ties to even, and saturated to -128..127 (the two divisions round in the caller's rounding
 * mode, as all float arithmetic here; the rounding to an integer is always to nearest even).
 * Subnormal inputs read as 0 under the caller's DAZ/FZ. A row whose scale would be below FLT_MIN
 * (all zeros, or tiny) gets scale 0 and zeros. The results are the same bits at every level, and
 * feed the s8 scores (one scale per row).
 * @return ATTNSCORE_OK; ATTNSCORE_ERR_UNKNOWN_DTYPE (another src_dtype, or a build without the
 *         int8 path or without f16 for binary16 and bfloat16), checked first; then n == 0 is a
 * no-op; ATTNSCORE_ERR_ZERO_DIM, ATTNSCORE_ERR_NULL_POINTER, ATTNSCORE_ERR_BAD_LDQ (ldx < d),
 *         ATTNSCORE_ERR_BAD_LDS (ldo < d), ATTNSCORE_ERR_SIZE_OVERFLOW, ATTNSCORE_ERR_OVERLAP
 *         (out or scales meet x or each other), ATTNSCORE_ERR_NOT_FINITE (a NaN or infinity in
 *         x). Nothing written on error.
 */
attnscore_status attnscore_quantize_s8(size_t n, size_t d, attnscore_dtype src_dtype, const void *x,
                                       size_t ldx, int8_t *out, size_t ldo, float *scales);

/**
 * Folds per-channel key scales into Q: out[i*ldo + t] = q[i*ldq + t] * channel_scale[t]. For a
 * K cache quantized per channel (k[j][t] ~ kq[j][t] * channel_scale[t]), scores against the
 * int8 kq then go through attnscore_scores_s8 with k_scale 1: quantize the folded Q per row
 * with attnscore_quantize_s8 first. out may be q itself (ldo == ldq); otherwise they must not
 * overlap, and out must not overlap channel_scale.
 * @return ATTNSCORE_OK; n == 0 is a no-op; ATTNSCORE_ERR_ZERO_DIM, ATTNSCORE_ERR_NULL_POINTER,
 *         ATTNSCORE_ERR_BAD_LDQ, ATTNSCORE_ERR_BAD_LDS (ldo < d), ATTNSCORE_ERR_SIZE_OVERFLOW,
 *         ATTNSCORE_ERR_OVERLAP; ATTNSCORE_ERR_UNKNOWN_DTYPE without the int8 path (before any
 *         other check).
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
 * unknown dtype or one this build leaves out. */
const char *attnscore_kernel_name(attnscore_dtype dtype);

/** The level of the kernel attnscore_kernel_name() reports (ATTNSCORE_LEVEL_SCALAR where that is
 * NULL). */
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

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTNSCORE_ATTNSCORE_H */
