// SPDX-License-Identifier: Apache-2.0
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz/fuzz.hpp"

namespace fuzz {

// ---------------------------------------------------------------------------------------------
// The packed key cache: its size query, init in memory of exactly the bytes it declares (too few,
// at any alignment), appends in up to three chunks (some bad, some from inside the cache's own
// memory), its queries, a clear, and scores from it. Statuses follow the documented rules
// (attnscore.h); nothing is written on error; scores equal the raw call on the keys appended,
// at the level the cache was made under (the cap stays fixed for one input), bit for bit.

namespace {

// Exactly `bytes` of heap filled with `fill`, so ASan reports a byte past them.
struct Block {
  unsigned char *p = nullptr;
  std::size_t n = 0;
  std::vector<unsigned char> before;
  Block(std::size_t bytes, unsigned char fill) : n(bytes) {
    p = static_cast<unsigned char *>(std::malloc(bytes == 0 ? 1 : bytes));
    if (p == nullptr) std::abort();
    std::memset(p, fill, bytes);
  }
  ~Block() { std::free(p); }
  Block(const Block &) = delete;
  Block &operator=(const Block &) = delete;
  void snapshot() { before.assign(p, p + n); }
  FUZZ_UNGUIDED void expect_untouched(const char *when) const {
    for (std::size_t b = 0; b < n; ++b)
      if (p[b] != before[b]) fail("%s: byte %zu changed", when, b);
  }
};

// The three key caches, as fuzz_kcache drives them (scales: the int8 cache's, else unused).
// The float caches differ only in their names and element type.
#define FUZZ_FLOAT_CACHE(Name, dt, Elem, value_expr, built_expr)                                   \
  struct Name {                                                                                    \
    using T = Elem;                                                                                \
    using H = attnscore_kcache_##dt;                                                               \
    static constexpr const char *kName = #dt;                                                      \
    static constexpr bool kScales = false;                                                         \
    static constexpr std::size_t kMaxD = SIZE_MAX;                                                 \
    static bool built() { return built_expr; }                                                     \
    static T value(Input &in, unsigned mode, int exp) { return value_expr; }                       \
    static std::size_t bytes(std::size_t c, std::size_t d) {                                       \
      return attnscore_kcache_##dt##_bytes(c, d);                                                  \
    }                                                                                              \
    static attnscore_status init(void *m, std::size_t b, std::size_t c, std::size_t d, H **h) {    \
      return attnscore_kcache_##dt##_init(m, b, c, d, h);                                          \
    }                                                                                              \
    static attnscore_status append(H *h, std::size_t n, const T *k, std::size_t ldk,               \
                                   const float *) {                                                \
      return attnscore_kcache_##dt##_append(h, n, k, ldk);                                         \
    }                                                                                              \
    static std::size_t size(const H *h) { return attnscore_kcache_##dt##_size(h); }                \
    static std::size_t dim(const H *h) { return attnscore_kcache_##dt##_dim(h); }                  \
    static attnscore_status clear(H *h) { return attnscore_kcache_##dt##_clear(h); }               \
    static attnscore_status scores(std::size_t n_q, const T *q, std::size_t ldq, const float *,    \
                                   std::size_t, const H *h, float *s, std::size_t lds, float sc) { \
      return attnscore_scores_##dt##_kcache(n_q, q, ldq, h, s, lds, sc);                           \
    }                                                                                              \
    static attnscore_status raw(std::size_t n_q, std::size_t n_k, std::size_t d, const T *q,       \
                                std::size_t ldq, const float *, std::size_t, const T *k,           \
                                std::size_t ldk, const float *, float *s, std::size_t lds,         \
                                float sc) {                                                        \
      return attnscore_scores_##dt(n_q, n_k, d, q, ldq, k, ldk, s, lds, sc);                       \
    }                                                                                              \
  };
FUZZ_FLOAT_CACHE(CacheF32, f32, float, F32::value(in, mode, exp), true)
FUZZ_FLOAT_CACHE(CacheF16, f16, std::uint16_t, F16::value(in, mode, exp).bits, f16_built())
#undef FUZZ_FLOAT_CACHE

struct CacheS8 {
  using T = std::int8_t;
  using H = attnscore_kcache_s8;
  static constexpr const char *kName = "s8";
  static constexpr bool kScales = true;
  static constexpr std::size_t kMaxD = ATTNSCORE_S8_MAX_D;
  static bool built() { return s8_built(); }
  static T value(Input &in, unsigned mode, int) { return s8_value(in, mode); }
  static std::size_t bytes(std::size_t c, std::size_t d) { return attnscore_kcache_s8_bytes(c, d); }
  static attnscore_status init(void *m, std::size_t b, std::size_t c, std::size_t d, H **h) {
    return attnscore_kcache_s8_init(m, b, c, d, h);
  }
  static attnscore_status append(H *h, std::size_t n, const T *k, std::size_t ldk,
                                 const float *ks) {
    return attnscore_kcache_s8_append(h, n, k, ldk, ks);
  }
  static std::size_t size(const H *h) { return attnscore_kcache_s8_size(h); }
  static std::size_t dim(const H *h) { return attnscore_kcache_s8_dim(h); }
  static attnscore_status clear(H *h) { return attnscore_kcache_s8_clear(h); }
  static attnscore_status scores(std::size_t n_q, const T *q, std::size_t ldq, const float *qs,
                                 std::size_t qn, const H *h, float *s, std::size_t lds, float sc) {
    return attnscore_scores_s8_kcache(n_q, q, ldq, qs, qn, h, s, lds, sc);
  }
  static attnscore_status raw(std::size_t n_q, std::size_t n_k, std::size_t d, const T *q,
                              std::size_t ldq, const float *qs, std::size_t qn, const T *k,
                              std::size_t ldk, const float *ks, float *s, std::size_t lds,
                              float sc) {
    return attnscore_scores_s8(n_q, n_k, d, q, ldq, qs, qn, k, ldk, ks, n_k, s, lds, sc);
  }
};

// A matrix of rows x cols elements at stride ld in a block of exactly its extent (nullptr when
// it does not fit the fuzzer's budget; calls with it must then fail before touching memory).
template <class T>
struct ElemMat {
  std::size_t rows, cols, ld, span = 0;
  std::unique_ptr<Block> mem;
  T *at(std::size_t i, std::size_t t) const { return reinterpret_cast<T *>(mem->p) + i * ld + t; }
};

// values == nullptr: S, left with the fill bytes.
template <class C, class T = typename C::T>
ElemMat<T> make_mat(Input &in, Input *values, std::size_t rows, std::size_t cols) {
  ElemMat<T> m{rows, cols, decode_stride(in, cols).value, 0, nullptr};
  std::size_t n, elems;
  const unsigned mode = in.u8();
  const int exp = static_cast<std::int8_t>(in.u8()) * 5 / 4;
  if (!span_elems(rows, cols, m.ld, &n) || n == 0 || n > kMaxElems ||
      !checked_mul(rows, cols, &elems) || elems > kMaxElems)
    return m;
  m.span = n;
  m.mem.reset(new Block(n * sizeof(T), 0xff));
  for (std::size_t i = 0; i < rows && values != nullptr; ++i)
    for (std::size_t t = 0; t < cols; ++t) *m.at(i, t) = C::value(*values, mode, exp);
  return m;
}

attnscore_status predict_append(bool null_cache, bool foreign, std::size_t n, bool null_k,
                                std::size_t ldk, std::size_t d, std::size_t room, bool k_extent) {
  if (null_cache) return ATTNSCORE_ERR_NULL_POINTER;
  if (foreign) return ATTNSCORE_ERR_BAD_CACHE;
  if (n == 0) return ATTNSCORE_OK;
  if (null_k) return ATTNSCORE_ERR_NULL_POINTER;
  if (ldk < d) return ATTNSCORE_ERR_BAD_LDK;
  if (n > room) return ATTNSCORE_ERR_CACHE_FULL;
  if (!k_extent) return ATTNSCORE_ERR_SIZE_OVERFLOW;
  return ATTNSCORE_OK;
}

// qs: the int8 cache's query scales (qn of them), nullptr (with qn 1) for the float caches.
attnscore_status predict_kcache_scores(bool null_cache, bool foreign, std::size_t n_q,
                                       std::size_t n_k, std::size_t d, const void *q,
                                       std::size_t ldq, std::size_t elem, bool has_qs,
                                       const float *qs, std::size_t qn, const float *s,
                                       std::size_t lds, float scale) {
  if (null_cache) return ATTNSCORE_ERR_NULL_POINTER;
  if (foreign) return ATTNSCORE_ERR_BAD_CACHE;
  if (n_q == 0 || n_k == 0) return ATTNSCORE_OK;
  if (q == nullptr || s == nullptr || (has_qs && qs == nullptr)) return ATTNSCORE_ERR_NULL_POINTER;
  if (ldq < d) return ATTNSCORE_ERR_BAD_LDQ;
  if (lds < n_k) return ATTNSCORE_ERR_BAD_LDS;
  if (has_qs && qn != 1 && qn != n_q) return ATTNSCORE_ERR_BAD_SCALE_COUNT;
  if (scale_rejected(scale)) return ATTNSCORE_ERR_BAD_SCALE;
  const Extent qe = extent(q, n_q, d, ldq, elem);
  const Extent se = extent(s, n_q, n_k, lds, sizeof(float));
  const Extent qse = has_qs ? extent(qs, 1, qn, qn, sizeof(float)) : Extent{true, 0, 0};
  if (!qe.ok || !se.ok || !qse.ok) return ATTNSCORE_ERR_SIZE_OVERFLOW;
  if (meets(se, qe) || (has_qs && meets(se, qse))) return ATTNSCORE_ERR_OVERLAP;
  for (std::size_t i = 0; has_qs && i < qn; ++i)
    if (scale_rejected(qs[i])) return ATTNSCORE_ERR_BAD_QUANT_SCALE;
  return ATTNSCORE_OK;
}

// A T-aligned place in [lo, lo + n) for `need` bytes, picked by r; nullptr if none.
template <class T>
T *place_inside(unsigned char *lo, std::size_t n, std::size_t need, std::uint16_t r) {
  constexpr std::size_t a = alignof(T);
  const std::size_t skip = (a - reinterpret_cast<std::uintptr_t>(lo) % a) % a;
  if (n < skip || n - skip < need) return nullptr;
  return reinterpret_cast<T *>(lo + skip + (r % (n - skip - need + 1)) / a * a);
}

template <class C>
int fuzz_kcache(Input &in, int) {
  using T = typename C::T;
  using H = typename C::H;
  if (!C::built()) return -1;
  g_call = "kcache";
  char what[200];
  Input values = in.stream();
  const std::size_t d = decode_d(in);
  std::size_t capacity = decode_rows(in, 69);
  const std::uint8_t mem_mode = in.u8(), cache_mode = in.u8();
  if ((mem_mode & 0xc0) == 0xc0) capacity = in.u16() % 600;

  // The size query: 0 exactly when an argument is 0 or the size overflows.
  std::snprintf(what, sizeof what, "attnscore_kcache_%s_bytes(%zu, %zu)", C::kName, capacity, d);
  g_call = what;
  const std::size_t need = api(what, [&] { return C::bytes(capacity, d); });
  std::size_t raw = 0;
  const bool raw_fits = checked_mul(capacity, d, &raw) && checked_mul(raw, sizeof(T), &raw);
  if (d == 0 || capacity == 0 || !raw_fits || d > C::kMaxD) {
    if (need != 0) fail("returned %zu, expected 0", need);
  } else if (std::size_t pad, cap64;
             checked_add(capacity, 64, &cap64) && checked_mul(cap64, d + 16, &pad) &&
             pad <= SIZE_MAX / 8 &&
             need < raw) {  // (room for 64 padding keys, a header and per-key sums and scales)
    fail("returned %zu, below the keys' %zu bytes", need, raw);
  }

  // Init in memory of exactly the declared bytes: what it asked for, a byte less, a little more,
  // or a few bytes; at an offset from an aligned start.
  constexpr std::size_t kMaxCacheBytes = std::size_t{8} << 20;
  std::size_t bytes;
  switch (mem_mode & 3) {
    case 0:
      bytes = need;
      break;
    case 1:
      bytes = need - (need != 0);
      break;
    case 2:
      bytes = need + (mem_mode >> 2 & 15);
      break;
    default:
      bytes = mem_mode >> 2 & 15;
  }
  if (bytes > kMaxCacheBytes) bytes = mem_mode >> 2 & 15;  // too large to allocate here
  const std::size_t offset = cache_mode & 7;
  Block mem(offset + bytes, 0xa5);
  mem.snapshot();
  const bool null_mem = (cache_mode & 0x38) == 0x38, null_out = (cache_mode & 0x38) == 0x30;
  attnscore_status want = ATTNSCORE_OK;
  if (null_mem || null_out)
    want = ATTNSCORE_ERR_NULL_POINTER;
  else if (d == 0 || capacity == 0)
    want = ATTNSCORE_ERR_ZERO_DIM;
  else if (d > C::kMaxD)
    want = ATTNSCORE_ERR_DIM_TOO_LARGE;
  else if (need == 0)
    want = ATTNSCORE_ERR_SIZE_OVERFLOW;
  else if (bytes < need)
    want = ATTNSCORE_ERR_BUFFER_TOO_SMALL;
  std::snprintf(what, sizeof what,
                "attnscore_kcache_%s_init(%zu bytes at +%zu, capacity %zu, d %zu)", C::kName, bytes,
                offset, capacity, d);
  g_call = what;
  H *cache = nullptr;
  const attnscore_status st = api(what, [&] {
    return C::init(null_mem ? nullptr : mem.p + offset, bytes, capacity, d,
                   null_out ? nullptr : &cache);
  });
  if (st != want) fail("returned %d, expected %d", st, want);
  if (st != ATTNSCORE_OK) {
    mem.expect_untouched("init error");
    if (cache != nullptr) fail("init error, but the cache pointer was set");
  } else {
    const auto *c = reinterpret_cast<const unsigned char *>(cache);
    if (c < mem.p + offset || c >= mem.p + offset + bytes) fail("cache outside its memory");
  }

  // The handle the later calls get: the cache, NULL, or foreign memory (zeros, ones, or a real
  // cache's memory shifted by a few bytes) that no init made.
  const bool valid = st == ATTNSCORE_OK;
  Block foreign(256, (cache_mode & 0x40) ? 0x00 : 0xff);
  H *handle = cache;
  bool null_cache = !valid, alien = false;
  if (!valid || (cache_mode & 0x80)) {
    const std::uint8_t h = in.u8();
    if (valid && h % 4 == 0) {
      handle = reinterpret_cast<H *>(reinterpret_cast<unsigned char *>(cache) + 1 + h / 4 % 15);
      null_cache = false, alien = true;
    } else if (h % 4 != 3) {
      handle = reinterpret_cast<H *>(foreign.p + h / 4 % 64);
      null_cache = false, alien = true;
    } else {
      handle = nullptr, null_cache = true;
    }
  }
  if (alien && valid && handle != cache &&
      reinterpret_cast<unsigned char *>(handle) + 64 > mem.p + offset + bytes)
    handle = reinterpret_cast<H *>(foreign.p);  // stay inside the memory
  foreign.snapshot();

  // Appends: each a K of n keys at its own stride, or from inside the cache's memory.
  std::vector<T> keys;        // every key appended, d elements each
  std::vector<float> kscale;  // and its scale (the int8 cache)
  std::size_t size = 0;
  const unsigned appends = in.u8() % 4;
  for (unsigned a = 0; a < appends; ++a) {
    std::size_t n = decode_rows(in, 69);
    const std::uint8_t kmode = in.u8();
    ElemMat<T> k = make_mat<C>(in, &values, n, d);
    const bool null_k = kmode >= 0xf0;
    // The int8 cache: one scale per key appended (NULL, or some bad ones, as kmode says).
    const bool null_ks = C::kScales && kmode >= 0xe8 && kmode < 0xf0;
    std::vector<float> ks(C::kScales && n <= kMaxElems ? n : 0);
    for (float &x : ks) x = s8_scale_value(values, (kmode & 0x60) == 0x60 ? values.v8() : 0);
    const T *kp = null_k ? nullptr : k.mem ? k.at(0, 0) : reinterpret_cast<T *>(foreign.p);
    const float *ksp = null_ks      ? nullptr
                       : ks.empty() ? reinterpret_cast<float *>(foreign.p)
                                    : ks.data();
    T *in_cache = nullptr;  // K placed in the cache's own memory, holding its whole extent
    if (valid && !alien && !null_k && kmode % 8 == 7 && k.mem != nullptr && n != 0)
      in_cache = place_inside<T>(mem.p + offset, bytes, k.span * sizeof(T), in.u16());
    const bool inside = in_cache != nullptr;
    if (inside) kp = in_cache;
    std::vector<T> rows;  // what the keys were before the call
    if (kp != nullptr && (k.mem || inside) && n != 0)
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t t = 0; t < d; ++t) {
          T v;
          std::memcpy(&v, kp + i * k.ld + t, sizeof v);
          rows.push_back(v);
        }
    std::size_t room = capacity - size;
    attnscore_status want_a =
        predict_append(null_cache, alien, n, null_k || null_ks, k.ld, d, valid ? room : 0,
                       kp == nullptr || extent(kp, n, d, k.ld, sizeof(T)).ok);
    if (want_a == ATTNSCORE_OK && n != 0 && (!k.mem || (C::kScales && ks.empty()))) return -1;
    for (std::size_t i = 0; want_a == ATTNSCORE_OK && i < ks.size() && n != 0; ++i)
      if (scale_rejected(ks[i])) want_a = ATTNSCORE_ERR_BAD_QUANT_SCALE;
    std::snprintf(what, sizeof what, "attnscore_kcache_%s_append(%zu keys, ldk %zu%s%s) at %zu",
                  C::kName, n, k.ld,
                  null_k    ? ", NULL"
                  : null_ks ? ", NULL scales"
                            : "",
                  inside ? ", inside the cache" : "", size);
    g_call = what;
    mem.snapshot();
    if (k.mem) k.mem->snapshot();
    const attnscore_status got = api(what, [&] { return C::append(handle, n, kp, k.ld, ksp); });
    if (k.mem) k.mem->expect_untouched("K after append");
    foreign.expect_untouched("foreign memory after append");
    // K inside the cache's memory: the cache may refuse (it overlaps what the append writes)
    // or take the keys (they lie in memory the append does not touch).
    const bool may_overlap =
        inside && (want_a == ATTNSCORE_OK || want_a == ATTNSCORE_ERR_BAD_QUANT_SCALE);
    if (got != want_a && !(may_overlap && got == ATTNSCORE_ERR_OVERLAP))
      fail("returned %d, expected %d", got, want_a);
    if (got != ATTNSCORE_OK || n == 0) {
      mem.expect_untouched("append error or no-op");
      continue;
    }
    keys.insert(keys.end(), rows.begin(), rows.end());
    kscale.insert(kscale.end(), ks.begin(), ks.end());
    size += n;
    if (inside) {  // the keys must have been read before anything was written
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t t = 0; t < d; ++t) {
          T v;
          std::memcpy(&v, kp + i * k.ld + t, sizeof v);
          if (std::memcmp(&v, &rows[i * d + t], sizeof v) != 0)
            fail("the append wrote over its own keys (key %zu, t %zu)", i, t);
        }
    }
  }

  // Queries, and (sometimes) a clear.
  g_call = "kcache queries";
  const std::size_t want_size = null_cache || alien ? 0 : size;
  const std::size_t want_dim = null_cache || alien ? 0 : d;
  if (api("kcache size", [&] { return C::size(handle); }) != want_size)
    fail("size is not %zu", want_size);
  if (api("kcache dim", [&] { return C::dim(handle); }) != want_dim)
    fail("dim is not %zu", want_dim);
  const std::uint8_t clear = in.u8();
  if (clear >= 0xe0) {
    const attnscore_status want_c = null_cache ? ATTNSCORE_ERR_NULL_POINTER
                                    : alien    ? ATTNSCORE_ERR_BAD_CACHE
                                               : ATTNSCORE_OK;
    if (api("kcache clear", [&] { return C::clear(handle); }) != want_c)
      fail("clear did not return %d", want_c);
    foreign.expect_untouched("foreign memory after clear");
    if (want_c == ATTNSCORE_OK) size = 0, keys.clear(), kscale.clear();
  }

  // Scores from the cache.
  std::size_t n_q = decode_rows(in, 19);
  if (size != 0 && d != 0 && n_q < 20)
    while (n_q * size * d > (std::size_t{1} << 16) && n_q > 1) n_q /= 2;
  ElemMat<T> q = make_mat<C>(in, &values, n_q, d);
  ElemMat<float> s = make_mat<C, float>(in, nullptr, n_q, size);
  const std::uint8_t smode = in.u8();
  // The int8 cache's query scales: 1 or n_q of them (or a wrong count), or NULL.
  const std::size_t qn = C::kScales ? decode_scale_count(in, n_q) : 1;
  const std::uint8_t qs_mode = C::kScales ? in.u8() : 0;
  std::vector<float> qsv(qn <= kMaxElems ? qn : 1);
  for (float &x : qsv) x = s8_scale_value(values, (qs_mode & 0xf0) == 0xf0 ? qs_mode : 0);
  const float *qsp = C::kScales && qs_mode == 0xef ? nullptr : qsv.data();
  const std::uint32_t scale_bits = decode_scale(in);
  const float scale = from_bits(scale_bits);
  const bool null_q = smode >= 0xf8 && (smode & 1), null_s = smode >= 0xf8 && (smode & 2);
  // S inside the cache's memory (refused if it meets the header or the keys' panels).
  float *sp = null_s ? nullptr : s.mem ? s.at(0, 0) : reinterpret_cast<float *>(foreign.p);
  float *s_in_cache = nullptr;
  if (valid && !alien && !null_s && smode % 8 == 6 && s.mem != nullptr && s.span != 0)
    s_in_cache = place_inside<float>(mem.p + offset, bytes, s.span * sizeof(float), in.u16());
  const bool s_inside = s_in_cache != nullptr;
  if (s_inside) sp = s_in_cache;
  const T *qp = null_q ? nullptr : q.mem ? q.at(0, 0) : reinterpret_cast<T *>(foreign.p);
  // (Query scales beyond what was allocated are never reached: the count check comes first.)
  want = predict_kcache_scores(null_cache, alien, n_q, size, d, qp, q.ld, sizeof(T), C::kScales,
                               qsp, qn, sp, s.ld, scale);
  std::snprintf(what, sizeof what,
                "attnscore_scores_%s_kcache(n_q %zu, ldq %zu, %zu keys of %zu, lds %zu, scale "
                "%#x, %zu query scales%s)",
                C::kName, n_q, q.ld, size, d, s.ld, scale_bits, qn,
                s_inside ? ", S inside the cache" : "");
  g_call = what;
  const bool works = want == ATTNSCORE_OK && n_q != 0 && size != 0;
  if (works && (!q.mem || (!s.mem && !s_inside))) return -1;  // valid, but too large to allocate
  mem.snapshot();
  if (q.mem) q.mem->snapshot();
  if (s.mem) s.mem->snapshot();
  const attnscore_status got =
      api(what, [&] { return C::scores(n_q, qp, q.ld, qsp, qn, handle, sp, s.ld, scale); });
  foreign.expect_untouched("foreign memory after scores");
  if (q.mem) q.mem->expect_untouched("Q after scores");
  const bool may_overlap =
      s_inside && (want == ATTNSCORE_OK || want == ATTNSCORE_ERR_BAD_QUANT_SCALE);
  if (got != want && !(may_overlap && got == ATTNSCORE_ERR_OVERLAP))
    fail("returned %d, expected %d", got, want);
  if (!works || got != ATTNSCORE_OK) {
    mem.expect_untouched("scores error or no-op");
    if (s.mem) s.mem->expect_untouched("S after an error");
    return 0;
  }
  // The raw call on the same keys, at the same level: the same bits (a NaN need only be a NaN).
  std::vector<float> ref(n_q * size), again(n_q * size);
  const attnscore_status rs = api("the raw call", [&] {
    return C::raw(n_q, size, d, q.at(0, 0), q.ld, qsp, qn, keys.data(), d, kscale.data(),
                  ref.data(), size, scale);
  });
  if (rs != ATTNSCORE_OK) fail("the raw call returned %d", rs);
  auto expect_ref = [&](const float *out, std::size_t ld, const char *when) {
    for (std::size_t i = 0; i < n_q; ++i)
      for (std::size_t j = 0; j < size; ++j) {
        float x;
        std::memcpy(&x, out + i * ld + j, sizeof x);
        const float y = ref[i * size + j];
        if (to_bits(x) != to_bits(y) && !(std::isnan(x) && std::isnan(y)))
          fail("%s: S[%zu][%zu] = %#x, the raw call %#x", when, i, j, to_bits(x), to_bits(y));
      }
  };
  expect_ref(sp, s.ld, "scores");
  // S written inside the cache's memory must have missed every key: a second call agrees.
  if (s_inside) {
    const attnscore_status st2 = api("the second call", [&] {
      return C::scores(n_q, qp, q.ld, qsp, qn, handle, again.data(), size, scale);
    });
    if (st2 != ATTNSCORE_OK) fail("the second call returned %d", st2);
    expect_ref(again.data(), size, "second call, after S was written inside the cache");
  }
  return 0;
}

}  // namespace

int fuzz_kcache_f32(Input &in, int cap) { return fuzz_kcache<CacheF32>(in, cap); }
int fuzz_kcache_f16(Input &in, int cap) { return fuzz_kcache<CacheF16>(in, cap); }
int fuzz_kcache_s8(Input &in, int cap) { return fuzz_kcache<CacheS8>(in, cap); }

}  // namespace fuzz
