// SPDX-License-Identifier: Apache-2.0
// attnscore C++ API: typed strided views over the C core; no exceptions, no allocation.
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

/// An IEEE binary16 value held as its bits: storage only (see to_f32, to_f16 and convert).
struct f16 {
  std::uint16_t bits;
};
static_assert(sizeof(f16) == 2 && alignof(f16) == 2, "f16 is its 16 bits");

/// A bfloat16 value held as its bits: storage only (see to_f32, to_bf16 and convert).
struct bf16 {
  std::uint16_t bits;
};
static_assert(sizeof(bf16) == 2 && alignof(bf16) == 2, "bf16 is its 16 bits");

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

/// The bits of a view's elements (no member access: the data pointer may be null).
inline const std::uint16_t *f16_bits(const f16 *p) noexcept {
  return reinterpret_cast<const std::uint16_t *>(p);
}
inline std::uint16_t *f16_bits(f16 *p) noexcept { return reinterpret_cast<std::uint16_t *>(p); }
inline const std::uint16_t *f16_bits(const bf16 *p) noexcept {
  return reinterpret_cast<const std::uint16_t *>(p);
}

namespace detail {
template <class T>
struct DtypeOf;
template <>
struct DtypeOf<float> : std::integral_constant<Dtype, ATTNSCORE_DTYPE_F32> {};
template <>
struct DtypeOf<f16> : std::integral_constant<Dtype, ATTNSCORE_DTYPE_F16> {};
template <>
struct DtypeOf<bf16> : std::integral_constant<Dtype, ATTNSCORE_DTYPE_BF16> {};
template <>
struct DtypeOf<std::int8_t> : std::integral_constant<Dtype, ATTNSCORE_DTYPE_S8> {};
}  // namespace detail

/// s = scale * q * k^T with q: n_q x d, k: n_k x d, s: n_q x n_k (scale 0: 1/sqrt(d)).
/// Returns ATTNSCORE_ERR_SHAPE_MISMATCH, and writes nothing, if the shapes disagree; otherwise
/// exactly what attnscore_scores_f32 returns.
inline Status scores(MatrixView<const float> q, MatrixView<const float> k, MatrixView<float> s,
                     float scale = 0.0f) noexcept {
  if (q.cols != k.cols || s.rows != q.rows || s.cols != k.rows) return ATTNSCORE_ERR_SHAPE_MISMATCH;
  return attnscore_scores_f32(q.rows, k.rows, q.cols, q.data, q.ld, k.data, k.ld, s.data, s.ld,
                              scale);
}

/// The same from binary16 q and k, f32 accumulation and output: attnscore_scores_f16.
inline Status scores(MatrixView<const f16> q, MatrixView<const f16> k, MatrixView<float> s,
                     float scale = 0.0f) noexcept {
  if (q.cols != k.cols || s.rows != q.rows || s.cols != k.rows) return ATTNSCORE_ERR_SHAPE_MISMATCH;
  return attnscore_scores_f16(q.rows, k.rows, q.cols, f16_bits(q.data), q.ld, f16_bits(k.data),
                              k.ld, s.data, s.ld, scale);
}

/// The same from bfloat16 q and k, f32 accumulation and output: attnscore_scores_bf16.
inline Status scores(MatrixView<const bf16> q, MatrixView<const bf16> k, MatrixView<float> s,
                     float scale = 0.0f) noexcept {
  if (q.cols != k.cols || s.rows != q.rows || s.cols != k.rows) return ATTNSCORE_ERR_SHAPE_MISMATCH;
  return attnscore_scores_bf16(q.rows, k.rows, q.cols, f16_bits(q.data), q.ld, f16_bits(k.data),
                               k.ld, s.data, s.ld, scale);
}

/// s[i][j] = (float)acc_ij * ((q_scale * scale) * k_scale) from int8 q and k: attnscore_scores_s8
/// (ATTNSCORE_ERR_SHAPE_MISMATCH first; a wrong scale count is the C call's BAD_SCALE_COUNT).
inline Status scores(QuantizedView q, QuantizedView k, MatrixView<float> s,
                     float scale = 0.0f) noexcept {
  if (q.m.cols != k.m.cols || s.rows != q.m.rows || s.cols != k.m.rows)
    return ATTNSCORE_ERR_SHAPE_MISMATCH;
  return attnscore_scores_s8(q.m.rows, k.m.rows, q.m.cols, q.m.data, q.m.ld, q.scales, q.count,
                             k.m.data, k.m.ld, k.scales, k.count, s.data, s.ld, scale);
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
  /// A matrix as one head.
  template <class U, std::enable_if_t<std::is_convertible<U *, T *>::value, int> = 0>
  constexpr HeadsView(const MatrixView<U> &m)  // NOLINT(google-explicit-constructor)
      : HeadsView(m.data, 1, m.rows, m.cols, m.rows * m.ld, m.ld) {}
};

/// Symmetric int8 heads with their float scales: row i of head h scaled by
/// `scales[h * scale_head_stride + i * scale_row_stride]`, scale_row_stride 1 (one per row) or
/// 0 (one per head; both 0: one for the tensor).
struct QuantizedHeadsView {
  HeadsView<const std::int8_t> m;
  const float *scales = nullptr;
  std::size_t scale_head_stride = 0, scale_row_stride = 0;

  constexpr QuantizedHeadsView() = default;
  constexpr QuantizedHeadsView(HeadsView<const std::int8_t> m_, const float *scales_,
                               std::size_t scale_head_stride_, std::size_t scale_row_stride_)
      : m(m_),
        scales(scales_),
        scale_head_stride(scale_head_stride_),
        scale_row_stride(scale_row_stride_) {}
  /// One scale per row, dense: head h's at scales + h * m.rows.
  constexpr QuantizedHeadsView(HeadsView<const std::int8_t> m_, const float *scales_)
      : QuantizedHeadsView(m_, scales_, m_.rows, 1) {}
  /// A quantized matrix as one head (a count neither 1 nor rows: BAD_SCALE_COUNT from the call).
  constexpr QuantizedHeadsView(const QuantizedView &q)  // NOLINT(google-explicit-constructor)
      : QuantizedHeadsView(q.m, q.scales, 0,
                           q.count == q.m.rows ? 1
                           : q.count == 1      ? 0
                                               : ~std::size_t{0}) {}
};

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
  std::size_t threads() const noexcept { return parallel().threads; }
  /// The parallel-for to pass to the C calls.
  attnscore_parallel parallel() const noexcept { return attnscore_pool_parallel(pool_); }

 private:
  attnscore_pool *pool_ = nullptr;
  Status status_;
};

/// Where a call runs its tasks: none (the calling thread, the default), a caller's
/// attnscore_parallel, or a ThreadPool (one that did not start makes the call return its status).
class Parallel {
 public:
  constexpr Parallel() noexcept = default;
  Parallel(const attnscore_parallel *par) noexcept  // NOLINT(google-explicit-constructor)
      : par_(par != nullptr ? *par : attnscore_parallel{}), set_(par != nullptr) {}
  Parallel(const attnscore_parallel &par) noexcept  // NOLINT(google-explicit-constructor)
      : par_(par), set_(true) {}
  Parallel(const ThreadPool &pool) noexcept  // NOLINT(google-explicit-constructor)
      : par_(pool.parallel()), set_(pool.status() == ATTNSCORE_OK), status_(pool.status()) {}

  /// ATTNSCORE_OK, or the status of a pool that did not start.
  Status status() const noexcept { return status_; }
  /// The C argument (nullptr: the calling thread).
  const attnscore_parallel *get() const noexcept { return set_ ? &par_ : nullptr; }

 private:
  attnscore_parallel par_{};
  bool set_ = false;
  Status status_ = ATTNSCORE_OK;
};

namespace detail {
// The keys a cache of T appends: a view of T, int8 with its scales.
template <class T>
using KeysOf =
    std::conditional_t<std::is_same<T, std::int8_t>::value, QuantizedHeadsView, HeadsView<const T>>;

template <class T>
const HeadsView<T> &shape(const HeadsView<T> &v) noexcept {
  return v;
}
inline const HeadsView<const std::int8_t> &shape(const QuantizedHeadsView &v) noexcept {
  return v.m;
}

template <class T>
attnscore_tensor tensor(const HeadsView<T> &v) noexcept {
  return {v.data, DtypeOf<std::remove_const_t<T>>::value, v.head_stride, v.row_stride, nullptr, 0,
          0};
}
inline attnscore_tensor tensor(const QuantizedHeadsView &v) noexcept {
  return {v.m.data, ATTNSCORE_DTYPE_S8,  v.m.head_stride,   v.m.row_stride,
          v.scales, v.scale_head_stride, v.scale_row_stride};
}
template <class T>
attnscore_output output(const HeadsView<T> &v) noexcept {
  return {v.data, DtypeOf<T>::value, v.head_stride, v.row_stride};
}
}  // namespace detail

/// A KV cache over caller memory (attnscore_cache): `heads` KV heads of up to `capacity` tokens
/// of dimension d, of element type T (float, f16, bf16 or std::int8_t: the dtype is part of the
/// type, so Q and the appended rows are checked against it at compile time), holding keys
/// (KeyCache, packed for the scores kernels) or values (ValueCache, rows for P.V).
/// Allocation-free; not copyable (it points into the memory it was given).
template <class T, attnscore_cache_kind Kind>
class Cache {
  static_assert(std::is_same<T, float>::value || std::is_same<T, f16>::value ||
                    std::is_same<T, bf16>::value || std::is_same<T, std::int8_t>::value,
                "Cache<T>: T is float, f16, bf16 or std::int8_t");

 public:
  /// What append() takes: HeadsView<const T>, or for int8 a QuantizedHeadsView (one scale per
  /// token: scale_row_stride 1).
  using Keys = detail::KeysOf<T>;

  /// Bytes of memory for the cache (0 on overflow or a zero argument).
  static std::size_t bytes(std::size_t heads, std::size_t capacity, std::size_t d) noexcept {
    const attnscore_cache_shape shape = make_shape(heads, capacity, d);
    return attnscore_cache_bytes(&shape);
  }
  /// Initialises the cache in `mem`; check status() before use.
  Cache(void *mem, std::size_t mem_bytes, std::size_t heads, std::size_t capacity,
        std::size_t d) noexcept
      : shape_(make_shape(heads, capacity, d)) {
    status_ = attnscore_cache_init(mem, mem_bytes, &shape_, &cache_);
    if (status_ != ATTNSCORE_OK) cache_ = nullptr;
  }
  Cache(const Cache &) = delete;
  Cache &operator=(const Cache &) = delete;

  /// ATTNSCORE_OK if the cache was initialised, else why not.
  Status status() const noexcept { return status_; }
  /// Appends k.rows tokens of every head (k: heads() x n x d(), else
  /// ATTNSCORE_ERR_SHAPE_MISMATCH); then what attnscore_cache_append returns.
  Status append(const Keys &k) noexcept {
    if (status_ != ATTNSCORE_OK) return status_;
    const auto &v = detail::shape(k);
    if (v.rows == 0) return ATTNSCORE_OK;
    if (v.heads != heads() || v.cols != d()) return ATTNSCORE_ERR_SHAPE_MISMATCH;
    const attnscore_tensor t = detail::tensor(k);
    return attnscore_cache_append(cache_, v.rows, &t);
  }
  /// Tokens held per head.
  std::size_t size() const noexcept { return attnscore_cache_size(cache_); }
  /// KV heads (0 if not initialised).
  std::size_t heads() const noexcept { return cache_ != nullptr ? shape_.heads : 0; }
  /// Tokens per head it can hold (0 if not initialised).
  std::size_t capacity() const noexcept { return cache_ != nullptr ? shape_.capacity : 0; }
  /// The key dimension (0 if not initialised).
  std::size_t d() const noexcept { return cache_ != nullptr ? shape_.d : 0; }
  /// Keeps the first `size` tokens of every head (above size(): ATTNSCORE_ERR_SHAPE_MISMATCH).
  Status truncate(std::size_t size) noexcept {
    return status_ != ATTNSCORE_OK ? status_ : attnscore_cache_truncate(cache_, size);
  }
  /// Forgets every token.
  Status clear() noexcept { return truncate(0); }
  /// The C handle (nullptr if not initialised).
  const attnscore_cache *handle() const noexcept { return cache_; }
  attnscore_cache *handle() noexcept { return cache_; }

 private:
  static attnscore_cache_shape make_shape(std::size_t heads, std::size_t capacity,
                                          std::size_t d) noexcept {
    return {Kind, detail::DtypeOf<T>::value, heads, capacity, d};
  }

  attnscore_cache_shape shape_;
  attnscore_cache *cache_ = nullptr;
  Status status_;
};

/// Keys packed for the scores kernels (ATTNSCORE_CACHE_KEYS).
template <class T>
using KeyCache = Cache<T, ATTNSCORE_CACHE_KEYS>;
/// Values as rows for attention_output (ATTNSCORE_CACHE_VALUES).
template <class T>
using ValueCache = Cache<T, ATTNSCORE_CACHE_VALUES>;

/// The options of an attention step (see attnscore_attention_desc).
struct AttentionOptions {
  float scale = 0.0f;           ///< 0: 1/sqrt(d)
  float softcap = 0.0f;         ///< 0: none
  unsigned mask = 0;            ///< ATTNSCORE_MASK_* bits
  std::size_t pos_offset = 0;   ///< position of query row 0
  std::size_t window = 0;       ///< keys seen under ATTNSCORE_MASK_WINDOW
  bool softmax = false;         ///< rows of S become softmax weights
  bool f16_accumulate = false;  ///< ATTNSCORE_ATTN_F16_ACCUMULATE (f16 Q and K only)
  bool bf16_dot = false;        ///< ATTNSCORE_ATTN_BF16_DOT (bf16 Q and K only)
};

namespace detail {
template <class Q, class S>
attnscore_attention_desc desc(const Q &q, std::size_t heads_kv, std::size_t n_k, const S &s,
                              const AttentionOptions &o) noexcept {
  const auto &qv = shape(q);
  attnscore_attention_desc a{};
  a.heads_q = qv.heads, a.heads_kv = heads_kv, a.n_q = qv.rows, a.n_k = n_k, a.d = qv.cols;
  a.q = tensor(q);
  a.s = output(s);
  a.scale = o.scale, a.softcap = o.softcap, a.mask = o.mask;
  a.pos_offset = o.pos_offset, a.window = o.window;
  a.flags = (o.softmax ? ATTNSCORE_ATTN_SOFTMAX : 0u) |
            (o.f16_accumulate ? ATTNSCORE_ATTN_F16_ACCUMULATE : 0u) |
            (o.bf16_dot ? ATTNSCORE_ATTN_BF16_DOT : 0u);
  return a;
}

template <class Q, class K, class S>
Status attention(const Q &q, const K &k, const S &s, const AttentionOptions &o,
                 const Parallel &par) noexcept {
  const auto &qv = shape(q), &kv = shape(k);
  if (qv.cols != kv.cols || s.heads != qv.heads || s.rows != qv.rows || s.cols != kv.rows)
    return ATTNSCORE_ERR_SHAPE_MISMATCH;
  if (par.status() != ATTNSCORE_OK) return par.status();
  attnscore_attention_desc a = desc(q, kv.heads, kv.rows, s, o);
  a.k = tensor(k);
  return attnscore_attention(&a, par.get());
}

template <class Q, class T, class S>
Status attention(const Q &q, const KeyCache<T> &k, const S &s, const AttentionOptions &o,
                 const Parallel &par) noexcept {
  if (k.status() != ATTNSCORE_OK) return k.status();
  const auto &qv = shape(q);
  if (qv.cols != k.d() || s.heads != qv.heads || s.rows != qv.rows || s.cols > k.size())
    return ATTNSCORE_ERR_SHAPE_MISMATCH;
  if (par.status() != ATTNSCORE_OK) return par.status();
  attnscore_attention_desc a = desc(q, k.heads(), s.cols, s, o);
  a.k.dtype = DtypeOf<T>::value;
  a.k_cache = k.handle();
  return attnscore_attention(&a, par.get());
}
}  // namespace detail

/// One attention-scores step of every head (attnscore_attention): q: heads_q x n_q x d,
/// K: heads_kv x n_k x d (heads_kv dividing heads_q), s: heads_q x n_q x n_k as float or f16.
/// K is a view, or the first s.cols tokens of a KeyCache of the same element type (usually all
/// of them: s.cols == cache.size()). ATTNSCORE_ERR_SHAPE_MISMATCH (nothing written) if the
/// shapes disagree; a cache's or a pool's failed status; otherwise what attnscore_attention
/// returns. Unmasked scores without softcap are the bits of scores() on each head.
///@{
inline Status attention(HeadsView<const float> q, HeadsView<const float> k, HeadsView<float> s,
                        const AttentionOptions &o = AttentionOptions(),
                        Parallel par = Parallel()) noexcept {
  return detail::attention(q, k, s, o, par);
}
inline Status attention(HeadsView<const float> q, HeadsView<const float> k, HeadsView<f16> s,
                        const AttentionOptions &o = AttentionOptions(),
                        Parallel par = Parallel()) noexcept {
  return detail::attention(q, k, s, o, par);
}
inline Status attention(HeadsView<const float> q, const KeyCache<float> &k, HeadsView<float> s,
                        const AttentionOptions &o = AttentionOptions(),
                        Parallel par = Parallel()) noexcept {
  return detail::attention(q, k, s, o, par);
}
inline Status attention(HeadsView<const float> q, const KeyCache<float> &k, HeadsView<f16> s,
                        const AttentionOptions &o = AttentionOptions(),
                        Parallel par = Parallel()) noexcept {
  return detail::attention(q, k, s, o, par);
}
inline Status attention(HeadsView<const f16> q, HeadsView<const f16> k, HeadsView<float> s,
                        const AttentionOptions &o = AttentionOptions(),
                        Parallel par = Parallel()) noexcept {
  return detail::attention(q, k, s, o, par);
}
inline Status attention(HeadsView<const f16> q, HeadsView<const f16> k, HeadsView<f16> s,
                        const AttentionOptions &o = AttentionOptions(),
                        Parallel par = Parallel()) noexcept {
  return detail::attention(q, k, s, o, par);
}
inline Status attention(HeadsView<const f16> q, const KeyCache<f16> &k, HeadsView<float> s,
                        const AttentionOptions &o = AttentionOptions(),
                        Parallel par = Parallel()) noexcept {
  return detail::attention(q, k, s, o, par);
}
inline Status attention(HeadsView<const f16> q, const KeyCache<f16> &k, HeadsView<f16> s,
                        const AttentionOptions &o = AttentionOptions(),
                        Parallel par = Parallel()) noexcept {
  return detail::attention(q, k, s, o, par);
}
inline Status attention(HeadsView<const bf16> q, HeadsView<const bf16> k, HeadsView<float> s,
                        const AttentionOptions &o = AttentionOptions(),
                        Parallel par = Parallel()) noexcept {
  return detail::attention(q, k, s, o, par);
}
inline Status attention(HeadsView<const bf16> q, HeadsView<const bf16> k, HeadsView<f16> s,
                        const AttentionOptions &o = AttentionOptions(),
                        Parallel par = Parallel()) noexcept {
  return detail::attention(q, k, s, o, par);
}
inline Status attention(HeadsView<const bf16> q, const KeyCache<bf16> &k, HeadsView<float> s,
                        const AttentionOptions &o = AttentionOptions(),
                        Parallel par = Parallel()) noexcept {
  return detail::attention(q, k, s, o, par);
}
inline Status attention(HeadsView<const bf16> q, const KeyCache<bf16> &k, HeadsView<f16> s,
                        const AttentionOptions &o = AttentionOptions(),
                        Parallel par = Parallel()) noexcept {
  return detail::attention(q, k, s, o, par);
}
inline Status attention(const QuantizedHeadsView &q, const QuantizedHeadsView &k,
                        HeadsView<float> s, const AttentionOptions &o = AttentionOptions(),
                        Parallel par = Parallel()) noexcept {
  return detail::attention(q, k, s, o, par);
}
inline Status attention(const QuantizedHeadsView &q, const QuantizedHeadsView &k, HeadsView<f16> s,
                        const AttentionOptions &o = AttentionOptions(),
                        Parallel par = Parallel()) noexcept {
  return detail::attention(q, k, s, o, par);
}
inline Status attention(const QuantizedHeadsView &q, const KeyCache<std::int8_t> &k,
                        HeadsView<float> s, const AttentionOptions &o = AttentionOptions(),
                        Parallel par = Parallel()) noexcept {
  return detail::attention(q, k, s, o, par);
}
inline Status attention(const QuantizedHeadsView &q, const KeyCache<std::int8_t> &k,
                        HeadsView<f16> s, const AttentionOptions &o = AttentionOptions(),
                        Parallel par = Parallel()) noexcept {
  return detail::attention(q, k, s, o, par);
}
///@}

/// The options of an attention output step: those of attention() (the softmax is implied, its
/// flag ignored) and the output's own (see attnscore_attention_desc).
struct OutputOptions : AttentionOptions {
  /// nullptr, or each row's log-sum-exp: (h, i) at lse[h * lse_head_stride + i * lse_row_stride]
  float *lse = nullptr;
  std::size_t lse_head_stride = 0, lse_row_stride = 0;
  const float *sinks = nullptr;  ///< nullptr, or one logit per query head
  /// nullptr, or scratch for splitting the keys across threads or packing K once (prefill)
  /// (attnscore_attention_output_workspace)
  void *workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

namespace detail {
// The parts of an attention operand: a view (int8 with its scales), or a cache's tokens.
struct Operand {
  attnscore_tensor t{};
  const attnscore_cache *cache = nullptr;
  std::size_t heads = 0, rows = 0, cols = 0;
  Status status = ATTNSCORE_OK;
};
template <class T>
Operand operand(const HeadsView<T> &v) noexcept {
  return {tensor(v), nullptr, v.heads, v.rows, v.cols};
}
inline Operand operand(const QuantizedHeadsView &v) noexcept {
  return {tensor(v), nullptr, v.m.heads, v.m.rows, v.m.cols};
}
template <class T, attnscore_cache_kind K>
Operand operand(const Cache<T, K> &c) noexcept {
  attnscore_tensor t{};
  t.dtype = DtypeOf<T>::value;
  return {t, c.handle(), c.heads(), c.size(), c.d(), c.status()};
}
}  // namespace detail

/// The attention output of every head (attnscore_attention_output): q: heads_q x n_q x d; k:
/// heads_kv x n_k x d (a view of Q's element type, or a KeyCache: n_k its size); v: heads_kv x
/// n_k x dv of any element type (a view, or a ValueCache holding at least n_k tokens); o: heads_q
/// x n_q x dv as float or f16. ATTNSCORE_ERR_SHAPE_MISMATCH (nothing written) if the shapes
/// disagree; a cache's or a pool's failed status; otherwise what attnscore_attention_output
/// returns.
template <class Q, class K, class V, class O>
Status attention_output(const Q &q, const K &k, const V &v, const HeadsView<O> &o,
                        const OutputOptions &opt = OutputOptions(),
                        Parallel par = Parallel()) noexcept {
  static_assert(std::is_same<O, float>::value || std::is_same<O, f16>::value,
                "attention_output: O is float or f16");
  const detail::Operand qo = detail::operand(q), ko = detail::operand(k), vo = detail::operand(v);
  if (ko.status != ATTNSCORE_OK) return ko.status;
  if (vo.status != ATTNSCORE_OK) return vo.status;
  const std::size_t n_k = ko.rows;
  if (ko.cols != qo.cols || vo.heads != ko.heads || vo.rows < n_k ||
      (vo.cache == nullptr && vo.rows != n_k) || o.heads != qo.heads || o.rows != qo.rows ||
      o.cols != vo.cols)
    return ATTNSCORE_ERR_SHAPE_MISMATCH;
  if (par.status() != ATTNSCORE_OK) return par.status();
  attnscore_attention_desc a = detail::desc(q, ko.heads, n_k, o, opt);
  a.s = attnscore_output{};
  a.k = ko.t, a.k_cache = ko.cache, a.v = vo.t, a.v_cache = vo.cache, a.dv = vo.cols;
  a.o = detail::output(o);
  a.lse = opt.lse, a.lse_head_stride = opt.lse_head_stride, a.lse_row_stride = opt.lse_row_stride;
  a.sinks = opt.sinks, a.workspace = opt.workspace, a.workspace_bytes = opt.workspace_bytes;
  return attnscore_attention_output(&a, par.get());
}

/// Converts n values: binary16 to f32 exactly (attnscore_convert).
inline Status convert(std::size_t n, const f16 *src, float *dst) noexcept {
  return attnscore_convert(n, ATTNSCORE_DTYPE_F16, src, ATTNSCORE_DTYPE_F32, dst);
}
/// Converts n values: f32 to binary16, rounded to nearest even (|x| >= 65520 gives +-Inf).
inline Status convert(std::size_t n, const float *src, f16 *dst) noexcept {
  return attnscore_convert(n, ATTNSCORE_DTYPE_F32, src, ATTNSCORE_DTYPE_F16, dst);
}
/// The exact f32 value of a binary16 (NaN in a build without f16).
inline float to_f32(f16 h) noexcept {
  float out;
  return convert(1, &h, &out) == ATTNSCORE_OK ? out : __builtin_nanf("");
}
/// x rounded to the nearest binary16 (ties to even; |x| >= 65520 gives +-Inf).
inline f16 to_f16(float x) noexcept {
  f16 h{0x7e00};
  convert(1, &x, &h);
  return h;
}

/// Converts n values: bfloat16 to f32 exactly (attnscore_convert).
inline Status convert(std::size_t n, const bf16 *src, float *dst) noexcept {
  return attnscore_convert(n, ATTNSCORE_DTYPE_BF16, src, ATTNSCORE_DTYPE_F32, dst);
}
/// Converts n values: f32 to bfloat16, rounded to nearest even (a NaN made quiet).
inline Status convert(std::size_t n, const float *src, bf16 *dst) noexcept {
  return attnscore_convert(n, ATTNSCORE_DTYPE_F32, src, ATTNSCORE_DTYPE_BF16, dst);
}
/// The exact f32 value of a bfloat16 (NaN in a build without f16).
inline float to_f32(bf16 h) noexcept {
  float out;
  return convert(1, &h, &out) == ATTNSCORE_OK ? out : __builtin_nanf("");
}
/// x rounded to the nearest bfloat16 (ties to even).
inline bf16 to_bf16(float x) noexcept {
  bf16 h{0x7fc0};
  convert(1, &x, &h);
  return h;
}

/// f32 rows to int8 with one scale per row (scales: x.rows floats): attnscore_quantize_s8.
/// ATTNSCORE_ERR_SHAPE_MISMATCH (nothing written) if out is not x.rows x x.cols.
inline Status quantize(MatrixView<const float> x, MatrixView<std::int8_t> out,
                       float *scales) noexcept {
  if (out.rows != x.rows || out.cols != x.cols) return ATTNSCORE_ERR_SHAPE_MISMATCH;
  return attnscore_quantize_s8(x.rows, x.cols, ATTNSCORE_DTYPE_F32, x.data, x.ld, out.data, out.ld,
                               scales);
}
/// binary16 rows to int8 with one scale per row (the bits quantize() gives the converted rows).
inline Status quantize(MatrixView<const f16> x, MatrixView<std::int8_t> out,
                       float *scales) noexcept {
  if (out.rows != x.rows || out.cols != x.cols) return ATTNSCORE_ERR_SHAPE_MISMATCH;
  return attnscore_quantize_s8(x.rows, x.cols, ATTNSCORE_DTYPE_F16, x.data, x.ld, out.data, out.ld,
                               scales);
}
/// bfloat16 rows to int8 with one scale per row (the bits quantize() gives the converted rows).
inline Status quantize(MatrixView<const bf16> x, MatrixView<std::int8_t> out,
                       float *scales) noexcept {
  if (out.rows != x.rows || out.cols != x.cols) return ATTNSCORE_ERR_SHAPE_MISMATCH;
  return attnscore_quantize_s8(x.rows, x.cols, ATTNSCORE_DTYPE_BF16, x.data, x.ld, out.data, out.ld,
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

/// The float nearest to 1/sqrt(d), the scale used when 0 is passed.
inline float default_scale(std::size_t d) noexcept { return attnscore_default_scale(d); }
/// A static message for a status.
inline const char *status_string(Status s) noexcept { return attnscore_status_string(s); }
/// Whether an ATTNSCORE_ATTN_* bit takes its own path now (attnscore_flag_available).
inline bool flag_available(unsigned flag) noexcept { return attnscore_flag_available(flag) != 0; }
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
/// Parses a level name (ATTNSCORE_ERR_UNKNOWN_LEVEL if it is none).
inline Status level_from_name(const char *name, Level *level) noexcept {
  return attnscore_level_from_name(name, level);
}
/// Whether this CPU can run a level compiled into this build.
inline bool level_supported(Level level) noexcept { return attnscore_level_supported(level) != 0; }
/// The CPU features detected at run time (ATTNSCORE_CPU_* bits).
inline std::uint64_t cpu_features() noexcept { return attnscore_cpu_features(); }
/// The version of the library linked, "MAJOR.MINOR.PATCH".
inline const char *version() noexcept { return attnscore_version(); }

}  // namespace attnscore

#endif  // ATTNSCORE_ATTNSCORE_HPP
