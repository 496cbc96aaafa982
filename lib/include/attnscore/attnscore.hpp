// SPDX-License-Identifier: Apache-2.0
// attnscore C++ API: strided matrix views over the C core; no exceptions, no allocation.
#ifndef ATTNSCORE_ATTNSCORE_HPP
#define ATTNSCORE_ATTNSCORE_HPP

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "attnscore/attnscore.h"

namespace attnscore {

using Status = attnscore_status;
using Level = attnscore_level;
using Dtype = attnscore_dtype;

/// A row-major matrix view: `rows` x `cols` elements, row i starting at `data + i * ld`.
template <class T>
struct MatrixView {
  T *data = nullptr;
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::size_t ld = 0;  ///< row stride in elements (>= cols)

  constexpr MatrixView() = default;
  constexpr MatrixView(T *data_, std::size_t rows_, std::size_t cols_, std::size_t ld_)
      : data(data_), rows(rows_), cols(cols_), ld(ld_) {}
  /// A dense view: ld == cols.
  constexpr MatrixView(T *data_, std::size_t rows_, std::size_t cols_)
      : data(data_), rows(rows_), cols(cols_), ld(cols_) {}
  /// A read-only view of a writable one.
  template <class U, class = std::enable_if_t<std::is_convertible<U *, T *>::value>>
  constexpr MatrixView(const MatrixView<U> &o)  // NOLINT(google-explicit-constructor)
      : data(o.data), rows(o.rows), cols(o.cols), ld(o.ld) {}

  /// The sub-block of `n_rows` x `n_cols` elements starting at (row, col); no bounds check.
  constexpr MatrixView block(std::size_t row, std::size_t col, std::size_t n_rows,
                             std::size_t n_cols) const {
    return MatrixView(data + row * ld + col, n_rows, n_cols, ld);
  }
};

/// s = scale * q * k^T with q: n_q x d, k: n_k x d, s: n_q x n_k (scale 0: 1/sqrt(d)).
/// Returns ATTNSCORE_ERR_SHAPE_MISMATCH, and writes nothing, if the shapes disagree; otherwise
/// exactly what attnscore_scores_f32 returns.
inline Status scores(MatrixView<const float> q, MatrixView<const float> k, MatrixView<float> s,
                     float scale = 0.0f) noexcept {
  if (q.cols != k.cols || s.rows != q.rows || s.cols != k.rows) return ATTNSCORE_ERR_SHAPE_MISMATCH;
  return attnscore_scores_f32(q.rows, k.rows, q.cols, q.data, q.ld, k.data, k.ld, s.data, s.ld,
                              scale);
}

/// attnscore_scores_f32_parallel over views: the same bits as scores() for any thread count.
inline Status scores(MatrixView<const float> q, MatrixView<const float> k, MatrixView<float> s,
                     const attnscore_parallel &par, float scale = 0.0f) noexcept {
  if (q.cols != k.cols || s.rows != q.rows || s.cols != k.rows) return ATTNSCORE_ERR_SHAPE_MISMATCH;
  return attnscore_scores_f32_parallel(&par, q.rows, k.rows, q.cols, q.data, q.ld, k.data, k.ld,
                                       s.data, s.ld, scale);
}

/// The built-in thread pool (attnscore_pool_create), owned: its threads stop with it.
class ThreadPool {
 public:
  /// `threads` in all, the caller's included (0: one per CPU); check status().
  explicit ThreadPool(std::size_t threads = 0) noexcept
      : status_(attnscore_pool_create(threads, &pool_)) {}
  ~ThreadPool() { attnscore_pool_destroy(pool_); }
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  /// ATTNSCORE_OK if the threads started, else why not.
  Status status() const noexcept { return status_; }
  /// Threads in all (0 if it did not start).
  std::size_t threads() const noexcept { return attnscore_pool_threads(pool_); }
  /// The parallel-for to pass to parallel calls.
  attnscore_parallel parallel() const noexcept { return attnscore_pool_parallel(pool_); }

 private:
  attnscore_pool *pool_ = nullptr;
  Status status_;
};

/// The packed key cache over caller memory (see attnscore_kcache_f32_init): K kept in the
/// kernels' layout, appended a token at a time. Allocation-free; not copyable (it points into
/// the memory it was given).
class KeyCache {
 public:
  /// Bytes of memory for `capacity` keys of dimension d (0 on overflow or a zero argument).
  static std::size_t bytes(std::size_t capacity, std::size_t d) noexcept {
    return attnscore_kcache_f32_bytes(capacity, d);
  }
  /// Initialises the cache in `mem`; check status() before use.
  KeyCache(void *mem, std::size_t mem_bytes, std::size_t capacity, std::size_t d) noexcept
      : status_(attnscore_kcache_f32_init(mem, mem_bytes, capacity, d, &cache_)) {}
  KeyCache(const KeyCache &) = delete;
  KeyCache &operator=(const KeyCache &) = delete;

  /// ATTNSCORE_OK if the cache was initialised, else why not.
  Status status() const noexcept { return status_; }
  /// Appends the rows of `k` (k.cols must be the cache's d: ATTNSCORE_ERR_SHAPE_MISMATCH).
  Status append(MatrixView<const float> k) noexcept {
    if (status_ != ATTNSCORE_OK) return status_;
    if (k.rows != 0 && k.cols != d()) return ATTNSCORE_ERR_SHAPE_MISMATCH;
    return attnscore_kcache_f32_append(cache_, k.rows, k.data, k.ld);
  }
  /// Keys held.
  std::size_t size() const noexcept { return attnscore_kcache_f32_size(cache_); }
  /// The key dimension (0 if not initialised).
  std::size_t d() const noexcept { return attnscore_kcache_f32_dim(cache_); }
  /// Forgets every key.
  Status clear() noexcept { return attnscore_kcache_f32_clear(cache_); }
  /// The C handle.
  const attnscore_kcache_f32 *handle() const noexcept { return cache_; }

 private:
  attnscore_kcache_f32 *cache_ = nullptr;
  Status status_;
};

/// s = scale * q * K^T against every key in the cache (s: q.rows x cache.size()).
inline Status scores(MatrixView<const float> q, const KeyCache &cache, MatrixView<float> s,
                     float scale = 0.0f) noexcept {
  if (cache.status() != ATTNSCORE_OK) return cache.status();
  if (q.cols != cache.d() || s.rows != q.rows || s.cols != cache.size())
    return ATTNSCORE_ERR_SHAPE_MISMATCH;
  return attnscore_scores_f32_kcache(q.rows, q.data, q.ld, cache.handle(), s.data, s.ld, scale);
}

/// attnscore_scores_f32_kcache_parallel over views: the same bits as scores(q, cache, s).
inline Status scores(MatrixView<const float> q, const KeyCache &cache, MatrixView<float> s,
                     const attnscore_parallel &par, float scale = 0.0f) noexcept {
  if (cache.status() != ATTNSCORE_OK) return cache.status();
  if (q.cols != cache.d() || s.rows != q.rows || s.cols != cache.size())
    return ATTNSCORE_ERR_SHAPE_MISMATCH;
  return attnscore_scores_f32_kcache_parallel(&par, q.rows, q.data, q.ld, cache.handle(), s.data,
                                              s.ld, scale);
}

/// A strided `heads` x `rows` x `cols` tensor view: element (h, i, j) at
/// `data + h * head_stride + i * row_stride + j` (strides in elements).
template <class T>
struct HeadsView {
  T *data = nullptr;
  std::size_t heads = 0, rows = 0, cols = 0;
  std::size_t head_stride = 0, row_stride = 0;

  constexpr HeadsView() = default;
  constexpr HeadsView(T *data_, std::size_t heads_, std::size_t rows_, std::size_t cols_,
                      std::size_t head_stride_, std::size_t row_stride_)
      : data(data_),
        heads(heads_),
        rows(rows_),
        cols(cols_),
        head_stride(head_stride_),
        row_stride(row_stride_) {}
  /// A dense head-major view: row_stride == cols, head_stride == rows * cols.
  constexpr HeadsView(T *data_, std::size_t heads_, std::size_t rows_, std::size_t cols_)
      : HeadsView(data_, heads_, rows_, cols_, rows_ * cols_, cols_) {}
  /// A read-only view of a writable one (only where U* converts to T*: the overloads of
  /// attention() by element type stay unambiguous).
  template <class U, std::enable_if_t<std::is_convertible<U *, T *>::value, int> = 0>
  constexpr HeadsView(const HeadsView<U> &o)  // NOLINT(google-explicit-constructor)
      : HeadsView(o.data, o.heads, o.rows, o.cols, o.head_stride, o.row_stride) {}
};

/// The options of an attention step (see attnscore_attention_desc).
struct AttentionOptions {
  float scale = 0.0f;          ///< 0: 1/sqrt(d)
  float softcap = 0.0f;        ///< 0: none
  unsigned mask = 0;           ///< ATTNSCORE_MASK_* bits
  std::size_t pos_offset = 0;  ///< position of query row 0
  std::size_t window = 0;      ///< for ATTNSCORE_MASK_WINDOW
  bool softmax = false;        ///< rows of S become softmax weights
};

namespace detail {
// The descriptor of an attention step on views (shapes already checked).
template <class T>
inline attnscore_attention_desc attention_desc(const HeadsView<const T> &q,
                                               const HeadsView<const T> &k,
                                               std::size_t s_head_stride, std::size_t s_row_stride,
                                               const AttentionOptions &o) noexcept {
  attnscore_attention_desc a =
      attnscore_attention_desc_dense(q.heads, k.heads, q.rows, k.rows, q.cols);
  a.q_head_stride = q.head_stride;
  a.q_row_stride = q.row_stride;
  a.k_head_stride = k.head_stride;
  a.k_row_stride = k.row_stride;
  a.s_head_stride = s_head_stride;
  a.s_row_stride = s_row_stride;
  a.scale = o.scale;
  a.softcap = o.softcap;
  a.mask = o.mask;
  a.pos_offset = o.pos_offset;
  a.window = o.window;
  a.flags = o.softmax ? ATTNSCORE_ATTN_SOFTMAX : 0u;
  return a;
}
}  // namespace detail

/// One attention-scores step of every head: q: heads_q x n_q x d, k: heads_kv x n_k x d,
/// s: heads_q x n_q x n_k. ATTNSCORE_ERR_SHAPE_MISMATCH (nothing written) if the shapes
/// disagree; otherwise exactly what attnscore_attention_f32 returns.
inline Status attention(HeadsView<const float> q, HeadsView<const float> k, HeadsView<float> s,
                        const AttentionOptions &o = AttentionOptions()) noexcept {
  if (q.cols != k.cols || s.heads != q.heads || s.rows != q.rows || s.cols != k.rows)
    return ATTNSCORE_ERR_SHAPE_MISMATCH;
  const attnscore_attention_desc a = detail::attention_desc(q, k, s.head_stride, s.row_stride, o);
  return attnscore_attention_f32(&a, q.data, k.data, s.data);
}

/// An IEEE binary16 value held as its bits: storage only (convert with to_f32 / to_f16, or in
/// rows with attnscore_f16_to_f32 / attnscore_f32_to_f16).
struct f16 {
  std::uint16_t bits;
};
static_assert(sizeof(f16) == 2 && alignof(f16) == 2, "f16 is its 16 bits");

/// The bits of a view's elements (no member access: the data pointer may be null).
inline const std::uint16_t *f16_bits(const f16 *p) noexcept {
  return reinterpret_cast<const std::uint16_t *>(p);
}
inline std::uint16_t *f16_bits(f16 *p) noexcept { return reinterpret_cast<std::uint16_t *>(p); }

/// attention() with S written as binary16 (attnscore_attention_f32_to_f16): the same checks,
/// then exactly what that call returns.
inline Status attention(HeadsView<const float> q, HeadsView<const float> k, HeadsView<f16> s,
                        const AttentionOptions &o = AttentionOptions()) noexcept {
  if (q.cols != k.cols || s.heads != q.heads || s.rows != q.rows || s.cols != k.rows)
    return ATTNSCORE_ERR_SHAPE_MISMATCH;
  const attnscore_attention_desc a = detail::attention_desc(q, k, s.head_stride, s.row_stride, o);
  return attnscore_attention_f32_to_f16(&a, q.data, k.data, f16_bits(s.data));
}

/// attention() on binary16 Q and K (attnscore_attention_f16): f32 accumulation and output; the
/// same checks, then exactly what that call returns.
inline Status attention(HeadsView<const f16> q, HeadsView<const f16> k, HeadsView<float> s,
                        const AttentionOptions &o = AttentionOptions()) noexcept {
  if (q.cols != k.cols || s.heads != q.heads || s.rows != q.rows || s.cols != k.rows)
    return ATTNSCORE_ERR_SHAPE_MISMATCH;
  const attnscore_attention_desc a = detail::attention_desc(q, k, s.head_stride, s.row_stride, o);
  return attnscore_attention_f16(&a, f16_bits(q.data), f16_bits(k.data), s.data);
}

/// The exact f32 value of a binary16 (NaN in a build without f16).
inline float to_f32(f16 h) noexcept {
  float out;
  return attnscore_f16_to_f32(1, &h.bits, &out) == ATTNSCORE_OK ? out : __builtin_nanf("");
}
/// x rounded to the nearest binary16 (ties to even; |x| >= 65520 gives +-Inf).
inline f16 to_f16(float x) noexcept {
  f16 h{0x7e00};
  attnscore_f32_to_f16(1, &x, &h.bits);
  return h;
}

/// s = scale * q * k^T from binary16 q and k, f32 accumulation and output; as
/// attnscore_scores_f16 (ATTNSCORE_ERR_SHAPE_MISMATCH first, as for f32).
inline Status scores(MatrixView<const f16> q, MatrixView<const f16> k, MatrixView<float> s,
                     float scale = 0.0f) noexcept {
  if (q.cols != k.cols || s.rows != q.rows || s.cols != k.rows) return ATTNSCORE_ERR_SHAPE_MISMATCH;
  return attnscore_scores_f16(q.rows, k.rows, q.cols, f16_bits(q.data), q.ld, f16_bits(k.data),
                              k.ld, s.data, s.ld, scale);
}

/// As above, S written as binary16 (each f32 score rounded once): attnscore_scores_f16_to_f16.
inline Status scores(MatrixView<const f16> q, MatrixView<const f16> k, MatrixView<f16> s,
                     float scale = 0.0f) noexcept {
  if (q.cols != k.cols || s.rows != q.rows || s.cols != k.rows) return ATTNSCORE_ERR_SHAPE_MISMATCH;
  return attnscore_scores_f16_to_f16(q.rows, k.rows, q.cols, f16_bits(q.data), q.ld,
                                     f16_bits(k.data), k.ld, f16_bits(s.data), s.ld, scale);
}

/// The packed f16 key cache over caller memory (attnscore_kcache_f16_init), as KeyCache.
class KeyCacheF16 {
 public:
  static std::size_t bytes(std::size_t capacity, std::size_t d) noexcept {
    return attnscore_kcache_f16_bytes(capacity, d);
  }
  KeyCacheF16(void *mem, std::size_t mem_bytes, std::size_t capacity, std::size_t d) noexcept
      : status_(attnscore_kcache_f16_init(mem, mem_bytes, capacity, d, &cache_)) {}
  KeyCacheF16(const KeyCacheF16 &) = delete;
  KeyCacheF16 &operator=(const KeyCacheF16 &) = delete;

  Status status() const noexcept { return status_; }
  Status append(MatrixView<const f16> k) noexcept {
    if (status_ != ATTNSCORE_OK) return status_;
    if (k.rows != 0 && k.cols != d()) return ATTNSCORE_ERR_SHAPE_MISMATCH;
    return attnscore_kcache_f16_append(cache_, k.rows, f16_bits(k.data), k.ld);
  }
  std::size_t size() const noexcept { return attnscore_kcache_f16_size(cache_); }
  std::size_t d() const noexcept { return attnscore_kcache_f16_dim(cache_); }
  Status clear() noexcept { return attnscore_kcache_f16_clear(cache_); }
  const attnscore_kcache_f16 *handle() const noexcept { return cache_; }

 private:
  attnscore_kcache_f16 *cache_ = nullptr;
  Status status_;
};

/// s = scale * q * K^T against every key in the f16 cache.
inline Status scores(MatrixView<const f16> q, const KeyCacheF16 &cache, MatrixView<float> s,
                     float scale = 0.0f) noexcept {
  if (cache.status() != ATTNSCORE_OK) return cache.status();
  if (q.cols != cache.d() || s.rows != q.rows || s.cols != cache.size())
    return ATTNSCORE_ERR_SHAPE_MISMATCH;
  return attnscore_scores_f16_kcache(q.rows, f16_bits(q.data), q.ld, cache.handle(), s.data, s.ld,
                                     scale);
}

/// Symmetric int8 rows with their float scales (the q_scale / k_scale of attnscore_scores_s8):
/// `scales` holds `count` floats, 1 (one scale for every row) or m.rows (one per row).
struct QuantizedView {
  MatrixView<const std::int8_t> m;
  const float *scales = nullptr;
  std::size_t count = 0;

  constexpr QuantizedView() = default;
  constexpr QuantizedView(MatrixView<const std::int8_t> m_, const float *scales_,
                          std::size_t count_)
      : m(m_), scales(scales_), count(count_) {}
};

/// s[i][j] = (float)acc_ij * ((q_scale * scale) * k_scale) from int8 q and k (n_q x d, n_k x d),
/// as attnscore_scores_s8 (ATTNSCORE_ERR_SHAPE_MISMATCH first, as for f32; a wrong scale count
/// is ATTNSCORE_ERR_BAD_SCALE_COUNT from the C call).
inline Status scores(QuantizedView q, QuantizedView k, MatrixView<float> s,
                     float scale = 0.0f) noexcept {
  if (q.m.cols != k.m.cols || s.rows != q.m.rows || s.cols != k.m.rows)
    return ATTNSCORE_ERR_SHAPE_MISMATCH;
  return attnscore_scores_s8(q.m.rows, k.m.rows, q.m.cols, q.m.data, q.m.ld, q.scales, q.count,
                             k.m.data, k.m.ld, k.scales, k.count, s.data, s.ld, scale);
}

/// attnscore_scores_s8_parallel over views: the same bits as scores(q, k, s).
inline Status scores(QuantizedView q, QuantizedView k, MatrixView<float> s,
                     const attnscore_parallel &par, float scale = 0.0f) noexcept {
  if (q.m.cols != k.m.cols || s.rows != q.m.rows || s.cols != k.m.rows)
    return ATTNSCORE_ERR_SHAPE_MISMATCH;
  return attnscore_scores_s8_parallel(&par, q.m.rows, k.m.rows, q.m.cols, q.m.data, q.m.ld,
                                      q.scales, q.count, k.m.data, k.m.ld, k.scales, k.count,
                                      s.data, s.ld, scale);
}

/// f32 rows to int8 with one scale per row (scales: x.rows floats): attnscore_quantize_s8.
/// ATTNSCORE_ERR_SHAPE_MISMATCH (nothing written) if out is not x.rows x x.cols.
inline Status quantize(MatrixView<const float> x, MatrixView<std::int8_t> out,
                       float *scales) noexcept {
  if (out.rows != x.rows || out.cols != x.cols) return ATTNSCORE_ERR_SHAPE_MISMATCH;
  return attnscore_quantize_s8(x.rows, x.cols, x.data, x.ld, out.data, out.ld, scales);
}

/// binary16 rows to int8 with one scale per row: attnscore_quantize_f16_s8 (the bits quantize()
/// gives for the converted rows).
inline Status quantize(MatrixView<const f16> x, MatrixView<std::int8_t> out,
                       float *scales) noexcept {
  if (out.rows != x.rows || out.cols != x.cols) return ATTNSCORE_ERR_SHAPE_MISMATCH;
  return attnscore_quantize_f16_s8(x.rows, x.cols, f16_bits(x.data), x.ld, out.data, out.ld,
                                   scales);
}

/// out[i][t] = q[i][t] * channel_scale[t] (channel_scale: q.cols floats; out may be q itself):
/// attnscore_fold_channel_scales, ATTNSCORE_ERR_SHAPE_MISMATCH if out's shape is not q's.
inline Status fold_channel_scales(MatrixView<const float> q, const float *channel_scale,
                                  MatrixView<float> out) noexcept {
  if (out.rows != q.rows || out.cols != q.cols) return ATTNSCORE_ERR_SHAPE_MISMATCH;
  return attnscore_fold_channel_scales(q.rows, q.cols, q.data, q.ld, channel_scale, out.data,
                                       out.ld);
}

/// The packed int8 key cache over caller memory (attnscore_kcache_s8_init), as KeyCache; each
/// key is appended with its scale.
class KeyCacheS8 {
 public:
  static std::size_t bytes(std::size_t capacity, std::size_t d) noexcept {
    return attnscore_kcache_s8_bytes(capacity, d);
  }
  KeyCacheS8(void *mem, std::size_t mem_bytes, std::size_t capacity, std::size_t d) noexcept
      : status_(attnscore_kcache_s8_init(mem, mem_bytes, capacity, d, &cache_)) {}
  KeyCacheS8(const KeyCacheS8 &) = delete;
  KeyCacheS8 &operator=(const KeyCacheS8 &) = delete;

  Status status() const noexcept { return status_; }
  /// Appends the rows of k with one scale each (k_scale: k.rows floats).
  Status append(MatrixView<const std::int8_t> k, const float *k_scale) noexcept {
    if (status_ != ATTNSCORE_OK) return status_;
    if (k.rows != 0 && k.cols != d()) return ATTNSCORE_ERR_SHAPE_MISMATCH;
    return attnscore_kcache_s8_append(cache_, k.rows, k.data, k.ld, k_scale);
  }
  std::size_t size() const noexcept { return attnscore_kcache_s8_size(cache_); }
  std::size_t d() const noexcept { return attnscore_kcache_s8_dim(cache_); }
  Status clear() noexcept { return attnscore_kcache_s8_clear(cache_); }
  const attnscore_kcache_s8 *handle() const noexcept { return cache_; }

 private:
  attnscore_kcache_s8 *cache_ = nullptr;
  Status status_;
};

/// int8 scores of q against every key in the cache: attnscore_scores_s8_kcache.
inline Status scores(QuantizedView q, const KeyCacheS8 &cache, MatrixView<float> s,
                     float scale = 0.0f) noexcept {
  if (cache.status() != ATTNSCORE_OK) return cache.status();
  if (q.m.cols != cache.d() || s.rows != q.m.rows || s.cols != cache.size())
    return ATTNSCORE_ERR_SHAPE_MISMATCH;
  return attnscore_scores_s8_kcache(q.m.rows, q.m.data, q.m.ld, q.scales, q.count, cache.handle(),
                                    s.data, s.ld, scale);
}

/// The float nearest to 1/sqrt(d), the scale used when 0 is passed.
inline float default_scale(std::size_t d) noexcept { return attnscore_default_scale(d); }
/// A static message for a status.
inline const char *status_string(Status s) noexcept { return attnscore_status_string(s); }
/// Caps the kernel level (ATTNSCORE_LEVEL_BEST removes the cap).
inline Status set_max_level(Level level) noexcept { return attnscore_set_max_level(level); }
/// The cap in force.
inline Level max_level() noexcept { return attnscore_max_level(); }
/// The kernel chosen for a dtype, e.g. "qk_f32_8x32__avx512".
inline const char *kernel_name(Dtype dtype = ATTNSCORE_DTYPE_F32) noexcept {
  return attnscore_kernel_name(dtype);
}
/// The level of the kernel chosen for a dtype.
inline Level kernel_level(Dtype dtype = ATTNSCORE_DTYPE_F32) noexcept {
  return attnscore_kernel_level(dtype);
}
/// A level's name ("avx2"), or nullptr.
inline const char *level_name(Level level) noexcept { return attnscore_level_name(level); }
/// Whether this CPU can run a level compiled into this build.
inline bool level_supported(Level level) noexcept { return attnscore_level_supported(level) != 0; }
/// The CPU features detected at run time (ATTNSCORE_CPU_* bits).
inline std::uint64_t cpu_features() noexcept { return attnscore_cpu_features(); }
/// The version of the library linked, "MAJOR.MINOR.PATCH".
inline const char *version() noexcept { return attnscore_version(); }

}  // namespace attnscore

#endif  // ATTNSCORE_ATTNSCORE_HPP
