// SPDX-License-Identifier: Apache-2.0
// The packed key cache, one implementation for every dtype: K kept in the layout its kernel row
// reads (panels of NR keys, d-major; int8 in groups of KG dims with per-chunk key sums and the
// keys' scales beside), for every KV head of a layer, in caller memory, appended a token at a
// time and never repacked. Scores read it through the one driver (driver.hpp), so they are the
// raw call's bits with the kernel chosen at init.
#include <cstdint>
#include <cstring>

#include "core/checks.h"
#include "core/engines.hpp"
#include "dispatch/kernels.h"

namespace attnscore {

// Lives at the start of the caller's memory (aligned up); each region follows at 64 bytes:
// panels (heads x P panels of panel_bytes), then for int8 the sums (heads x P x chunks x NR) and
// the scales (heads x P x NR).
struct CacheCore {
  std::uint64_t magic;  // kCacheMagic + dtype
  const void *kernel;   // the dtype's kernel row chosen at init
  std::size_t heads, d, capacity, size;
  std::size_t nr, kg, elem;  // panel width, dims per group (1 for floats), element bytes
  std::size_t panels_per_head, panel_bytes, chunks;
  unsigned char *panels;
  std::int32_t *sums;
  float *scales;
  std::size_t bytes;  // from the header to the end of the last region
};

}  // namespace attnscore

// The public handles: one core, a distinct C type per dtype.
struct attnscore_kcache_f32 {
  attnscore::CacheCore core;
};
struct attnscore_kcache_f16 {
  attnscore::CacheCore core;
};
struct attnscore_kcache_s8 {
  attnscore::CacheCore core;
};

namespace attnscore {
namespace {

constexpr std::uint64_t kCacheMagic = 0x6b63616368650000ull;  // "kcache" + dtype

std::uintptr_t align_up(std::uintptr_t p, std::uintptr_t a) noexcept {
  return (p + a - 1) & ~(a - 1);
}

// The geometry of a cache of a dtype under the kernel chosen now; false on overflow.
struct Layout {
  const void *kernel;
  std::size_t nr, kg, elem, panels, panel_bytes, chunks;
  std::size_t panels_bytes, sums_bytes, scales_bytes;
  std::size_t total;  // bytes the caller provides: the regions, the header and alignment slack
};

bool layout(attnscore_dtype dtype, std::size_t heads, std::size_t capacity, std::size_t d,
            Layout *l) noexcept {
  l->kg = 1, l->chunks = 0;
  if (dtype == ATTNSCORE_DTYPE_F32) {
    l->kernel = &active_kernel_f32(), l->nr = active_kernel_f32().nr, l->elem = sizeof(float);
#if ATTNSCORE_HAVE_F16
  } else if (dtype == ATTNSCORE_DTYPE_F16) {
    l->kernel = &active_kernel_f16(), l->nr = active_kernel_f16().f32->nr;
    l->elem = sizeof(std::uint16_t);
#endif
#if ATTNSCORE_HAVE_S8
  } else if (dtype == ATTNSCORE_DTYPE_S8) {
    const KernelS8 &k = active_kernel_s8();
    l->kernel = &k, l->nr = k.nr, l->kg = k.kg, l->elem = 1;
    l->chunks = (d + kS8Chunk - 1) / kS8Chunk;
#endif
  } else {
    return false;
  }
  l->panels = capacity / l->nr + (capacity % l->nr != 0);   // per head
  const std::size_t row = (d + l->kg - 1) / l->kg * l->kg;  // a key's dims, padded to groups
  std::size_t all, panels, sums, scales;
  if (__builtin_mul_overflow(l->panels, heads, &all) ||
      __builtin_mul_overflow(l->nr * l->elem, row, &l->panel_bytes) ||
      __builtin_mul_overflow(all, l->panel_bytes, &panels) ||
      __builtin_mul_overflow(all * l->chunks, l->nr * sizeof(std::int32_t), &sums) ||
      __builtin_mul_overflow(l->chunks != 0 ? all : 0, l->nr * sizeof(float), &scales))
    return false;
  // The header, then each region 64 bytes aligned (slack for the header's own alignment too).
  l->panels_bytes = panels, l->sums_bytes = sums, l->scales_bytes = scales;
  std::size_t n;
  return !__builtin_add_overflow(panels, sums, &n) && !__builtin_add_overflow(n, scales, &n) &&
         !__builtin_add_overflow(n, sizeof(CacheCore) + alignof(CacheCore) + 3 * 64, &l->total);
}

template <class Handle>
const CacheCore *core_of(const Handle *h, attnscore_dtype dtype) noexcept {
  // Callers may pass any pointer: a misaligned one is no cache (and must not be read as one).
  if (h == nullptr || reinterpret_cast<std::uintptr_t>(h) % alignof(CacheCore) != 0) return nullptr;
  const CacheCore *c = &h->core;
  return c->magic == kCacheMagic + static_cast<std::uint64_t>(dtype) ? c : nullptr;
}
template <class Handle>
CacheCore *core_of(Handle *h, attnscore_dtype dtype) noexcept {
  return const_cast<CacheCore *>(core_of(static_cast<const Handle *>(h), dtype));
}

std::size_t cache_bytes(attnscore_dtype dtype, std::size_t capacity, std::size_t d) noexcept {
  Layout l;
  if (capacity == 0 || d == 0 || (dtype == ATTNSCORE_DTYPE_S8 && d > ATTNSCORE_S8_MAX_D) ||
      !layout(dtype, 1, capacity, d, &l))
    return 0;
  return l.total;
}

template <class Handle>
attnscore_status cache_init(attnscore_dtype dtype, void *mem, std::size_t bytes,
                            std::size_t capacity, std::size_t d, Handle **cache) noexcept {
  if (mem == nullptr || cache == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (capacity == 0 || d == 0) return ATTNSCORE_ERR_ZERO_DIM;
  if (dtype == ATTNSCORE_DTYPE_S8 && d > ATTNSCORE_S8_MAX_D) return ATTNSCORE_ERR_DIM_TOO_LARGE;
  Layout l;
  if (!layout(dtype, 1, capacity, d, &l)) return ATTNSCORE_ERR_SIZE_OVERFLOW;
  if (bytes < l.total) return ATTNSCORE_ERR_BUFFER_TOO_SMALL;
  const std::uintptr_t at = align_up(reinterpret_cast<std::uintptr_t>(mem), alignof(CacheCore));
  const std::uintptr_t panels = align_up(at + sizeof(CacheCore), 64);
  const std::uintptr_t sums = align_up(panels + l.panels_bytes, 64);
  const std::uintptr_t scales = align_up(sums + l.sums_bytes, 64);
  auto *h = reinterpret_cast<Handle *>(at);
  h->core = {kCacheMagic + static_cast<std::uint64_t>(dtype),
             l.kernel,
             1,
             d,
             capacity,
             0,
             l.nr,
             l.kg,
             l.elem,
             l.panels,
             l.panel_bytes,
             l.chunks,
             reinterpret_cast<unsigned char *>(panels),
             reinterpret_cast<std::int32_t *>(sums),
             reinterpret_cast<float *>(scales),
             scales + l.scales_bytes - at};
  *cache = h;
  return ATTNSCORE_OK;
}

// Appends n keys of every KV head: key i of head h at k + (h * khs + i * krs) elements, its scale
// (int8) at ks[h * kshs + i]. Checks in the documented order, nothing written on error.
attnscore_status cache_append(CacheCore *c, std::size_t n, const void *k, std::size_t khs,
                              std::size_t krs, const float *ks, std::size_t kshs) noexcept {
  const bool s8 = c->chunks != 0;
  if (n == 0) return ATTNSCORE_OK;
  if (k == nullptr || (s8 && ks == nullptr)) return ATTNSCORE_ERR_NULL_POINTER;
  if (krs < c->d) return ATTNSCORE_ERR_BAD_LDK;
  if (n > c->capacity - c->size) return ATTNSCORE_ERR_CACHE_FULL;
  std::size_t k_bytes, ks_bytes = 0;
  if (!extent3_bytes(k, c->heads, n, c->d, khs, krs, c->elem, &k_bytes) ||
      (s8 && !extent3_bytes(ks, c->heads, n, 1, kshs, 1, sizeof(float), &ks_bytes)))
    return ATTNSCORE_ERR_SIZE_OVERFLOW;
  if (overlaps(k, k_bytes, c, c->bytes) || (s8 && overlaps(ks, ks_bytes, c, c->bytes)))
    return ATTNSCORE_ERR_OVERLAP;
  for (std::size_t h = 0; s8 && h < c->heads; ++h)
    if (!scales_ok(ks + h * kshs, n)) return ATTNSCORE_ERR_BAD_QUANT_SCALE;
  const std::size_t nr = c->nr, kg = c->kg, d = c->d, P = c->panels_per_head;
  const std::size_t used = c->size / nr + (c->size % nr != 0);
  const std::size_t fresh = (c->size + n) / nr + ((c->size + n) % nr != 0) - used;
  const auto *src = static_cast<const unsigned char *>(k);
  for (std::size_t h = 0; h < c->heads; ++h) {
    // Panels are zeroed as they are started: padding keys and dims are 0, sums and scales too.
    unsigned char *panels = c->panels + h * P * c->panel_bytes;
    std::memset(panels + used * c->panel_bytes, 0, fresh * c->panel_bytes);
    if (s8) {
      std::memset(c->sums + (h * P + used) * c->chunks * nr, 0,
                  fresh * c->chunks * nr * sizeof(std::int32_t));
      std::memset(c->scales + (h * P + used) * nr, 0, fresh * nr * sizeof(float));
    }
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t j = c->size + i, p = j / nr, jj = j % nr;
      const unsigned char *key = src + (h * khs + i * krs) * c->elem;
      unsigned char *panel = panels + p * c->panel_bytes;
      // Dim t of key jj sits at ((t / KG) * NR + jj) * KG + t % KG elements (KG 1: t * NR + jj).
      for (std::size_t t = 0; t < d; ++t)
        std::memcpy(panel + (((t / kg) * nr + jj) * kg + t % kg) * c->elem, key + t * c->elem,
                    c->elem);
      if (s8) {
        const auto *kq = reinterpret_cast<const std::int8_t *>(key);
        std::int32_t *sums = c->sums + (h * P + p) * c->chunks * nr + jj;
        for (std::size_t t = 0; t < d; ++t) sums[t / kS8Chunk * nr] += kq[t];
        c->scales[h * P * nr + j] = ks[h * kshs + i];
      }
    }
  }
  c->size += n;
  return ATTNSCORE_OK;
}

// The checks of a scores call on a cache, in the documented order (int8: with the query scales,
// qs_count 1 or n_q); ATTNSCORE_OK with n_q or the cache's size zero is the successful no-op.
attnscore_status check_cache_scores(std::size_t n_q, const void *q, std::size_t ldq,
                                    const float *qs, std::size_t qs_count, const void *handle,
                                    const CacheCore *c, const float *s, std::size_t lds,
                                    float scale) noexcept {
  if (handle == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (c == nullptr) return ATTNSCORE_ERR_BAD_CACHE;
  const bool s8 = c->chunks != 0;
  const std::size_t n_k = c->size, d = c->d;
  if (n_q == 0 || n_k == 0) return ATTNSCORE_OK;
  if (q == nullptr || s == nullptr || (s8 && qs == nullptr)) return ATTNSCORE_ERR_NULL_POINTER;
  if (ldq < d) return ATTNSCORE_ERR_BAD_LDQ;
  if (lds < n_k) return ATTNSCORE_ERR_BAD_LDS;
  if (s8 && qs_count != 1 && qs_count != n_q) return ATTNSCORE_ERR_BAD_SCALE_COUNT;
  if (!scale_ok(scale)) return ATTNSCORE_ERR_BAD_SCALE;
  std::size_t q_bytes, s_bytes, qs_bytes = 0;
  if (!extent_bytes(q, n_q, d, ldq, c->elem, &q_bytes) ||
      !extent_bytes(s, n_q, n_k, lds, sizeof(float), &s_bytes) ||
      (s8 && !extent_bytes(qs, 1, qs_count, qs_count, sizeof(float), &qs_bytes)))
    return ATTNSCORE_ERR_SIZE_OVERFLOW;
  if (overlaps(s, s_bytes, q, q_bytes) || (s8 && overlaps(s, s_bytes, qs, qs_bytes)) ||
      overlaps(s, s_bytes, c, c->bytes))
    return ATTNSCORE_ERR_OVERLAP;
  if (s8 && !scales_ok(qs, qs_count)) return ATTNSCORE_ERR_BAD_QUANT_SCALE;
  return ATTNSCORE_OK;
}

// The engine that reads a float cache's panels: KV head hk's at panels + hk * P * NR * d.
template <class T>
FloatEngine<T, true> float_engine(const CacheCore &c, const T *q, std::size_t ldq,
                                  float scale) noexcept {
  const std::size_t stride = c.nr * c.d;
  return {static_cast<const typename FloatKernel<T>::type *>(c.kernel),
          {q, 0, ldq},
          {reinterpret_cast<const T *>(c.panels), c.panels_per_head * stride, stride},
          c.d,
          scale};
}

template <class T, class Handle>
attnscore_status float_cache_scores(attnscore_dtype dtype, const attnscore_parallel *par,
                                    std::size_t n_q, const T *q, std::size_t ldq,
                                    const Handle *cache, float *s, std::size_t lds,
                                    float scale) noexcept {
  const CacheCore *c = core_of(cache, dtype);
  const attnscore_status st = check_cache_scores(n_q, q, ldq, nullptr, 0, cache, c, s, lds, scale);
  if (st != ATTNSCORE_OK || n_q == 0 || c->size == 0) return st;
  if (par != nullptr && par->parallel_for == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (scale == 0.0f) scale = attnscore_default_scale(c->d);
  drive_parallel(float_engine(*c, q, ldq, scale), scores_problem(n_q, c->size, c->d, s, lds, scale),
                 par);
  return ATTNSCORE_OK;
}

template <class Handle>
std::size_t cache_size(const Handle *h, attnscore_dtype dtype) noexcept {
  const CacheCore *c = core_of(h, dtype);
  return c == nullptr ? 0 : c->size;
}
template <class Handle>
std::size_t cache_dim(const Handle *h, attnscore_dtype dtype) noexcept {
  const CacheCore *c = core_of(h, dtype);
  return c == nullptr ? 0 : c->d;
}
template <class Handle>
attnscore_status cache_clear(Handle *h, attnscore_dtype dtype) noexcept {
  if (h == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  CacheCore *c = core_of(h, dtype);
  if (c == nullptr) return ATTNSCORE_ERR_BAD_CACHE;
  c->size = 0;
  return ATTNSCORE_OK;
}
template <class Handle>
attnscore_status checked_append(Handle *h, attnscore_dtype dtype, std::size_t n, const void *k,
                                std::size_t ldk, const float *ks) noexcept {
  if (h == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  CacheCore *c = core_of(h, dtype);
  if (c == nullptr) return ATTNSCORE_ERR_BAD_CACHE;
  return cache_append(c, n, k, 0, ldk, ks, 0);
}

}  // namespace
}  // namespace attnscore

using namespace attnscore;

extern "C" {

size_t attnscore_kcache_f32_bytes(size_t capacity, size_t d) {
  return cache_bytes(ATTNSCORE_DTYPE_F32, capacity, d);
}
attnscore_status attnscore_kcache_f32_init(void *mem, size_t bytes, size_t capacity, size_t d,
                                           attnscore_kcache_f32 **cache) {
  return cache_init(ATTNSCORE_DTYPE_F32, mem, bytes, capacity, d, cache);
}
attnscore_status attnscore_kcache_f32_append(attnscore_kcache_f32 *cache, size_t n, const float *k,
                                             size_t ldk) {
  return checked_append(cache, ATTNSCORE_DTYPE_F32, n, k, ldk, nullptr);
}
size_t attnscore_kcache_f32_size(const attnscore_kcache_f32 *cache) {
  return cache_size(cache, ATTNSCORE_DTYPE_F32);
}
size_t attnscore_kcache_f32_dim(const attnscore_kcache_f32 *cache) {
  return cache_dim(cache, ATTNSCORE_DTYPE_F32);
}
attnscore_status attnscore_kcache_f32_clear(attnscore_kcache_f32 *cache) {
  return cache_clear(cache, ATTNSCORE_DTYPE_F32);
}
attnscore_status attnscore_scores_f32_kcache(size_t n_q, const float *q, size_t ldq,
                                             const attnscore_kcache_f32 *cache, float *s,
                                             size_t lds, float scale) {
  return float_cache_scores(ATTNSCORE_DTYPE_F32, nullptr, n_q, q, ldq, cache, s, lds, scale);
}
attnscore_status attnscore_scores_f32_kcache_parallel(const attnscore_parallel *par, size_t n_q,
                                                      const float *q, size_t ldq,
                                                      const attnscore_kcache_f32 *cache, float *s,
                                                      size_t lds, float scale) {
  return float_cache_scores(ATTNSCORE_DTYPE_F32, par, n_q, q, ldq, cache, s, lds, scale);
}

#if ATTNSCORE_HAVE_F16  // without f16, api/off_f16.cpp reports the dtype missing
size_t attnscore_kcache_f16_bytes(size_t capacity, size_t d) {
  return cache_bytes(ATTNSCORE_DTYPE_F16, capacity, d);
}
attnscore_status attnscore_kcache_f16_init(void *mem, size_t bytes, size_t capacity, size_t d,
                                           attnscore_kcache_f16 **cache) {
  return cache_init(ATTNSCORE_DTYPE_F16, mem, bytes, capacity, d, cache);
}
attnscore_status attnscore_kcache_f16_append(attnscore_kcache_f16 *cache, size_t n,
                                             const uint16_t *k, size_t ldk) {
  return checked_append(cache, ATTNSCORE_DTYPE_F16, n, k, ldk, nullptr);
}
size_t attnscore_kcache_f16_size(const attnscore_kcache_f16 *cache) {
  return cache_size(cache, ATTNSCORE_DTYPE_F16);
}
size_t attnscore_kcache_f16_dim(const attnscore_kcache_f16 *cache) {
  return cache_dim(cache, ATTNSCORE_DTYPE_F16);
}
attnscore_status attnscore_kcache_f16_clear(attnscore_kcache_f16 *cache) {
  return cache_clear(cache, ATTNSCORE_DTYPE_F16);
}
attnscore_status attnscore_scores_f16_kcache(size_t n_q, const uint16_t *q, size_t ldq,
                                             const attnscore_kcache_f16 *cache, float *s,
                                             size_t lds, float scale) {
  return float_cache_scores(ATTNSCORE_DTYPE_F16, nullptr, n_q, q, ldq, cache, s, lds, scale);
}
#endif

#if ATTNSCORE_HAVE_S8
size_t attnscore_kcache_s8_bytes(size_t capacity, size_t d) {
  return cache_bytes(ATTNSCORE_DTYPE_S8, capacity, d);
}
attnscore_status attnscore_kcache_s8_init(void *mem, size_t bytes, size_t capacity, size_t d,
                                          attnscore_kcache_s8 **cache) {
  return cache_init(ATTNSCORE_DTYPE_S8, mem, bytes, capacity, d, cache);
}
attnscore_status attnscore_kcache_s8_append(attnscore_kcache_s8 *cache, size_t n, const int8_t *k,
                                            size_t ldk, const float *k_scale) {
  return checked_append(cache, ATTNSCORE_DTYPE_S8, n, k, ldk, k_scale);
}
size_t attnscore_kcache_s8_size(const attnscore_kcache_s8 *cache) {
  return cache_size(cache, ATTNSCORE_DTYPE_S8);
}
size_t attnscore_kcache_s8_dim(const attnscore_kcache_s8 *cache) {
  return cache_dim(cache, ATTNSCORE_DTYPE_S8);
}
attnscore_status attnscore_kcache_s8_clear(attnscore_kcache_s8 *cache) {
  return cache_clear(cache, ATTNSCORE_DTYPE_S8);
}
attnscore_status attnscore_scores_s8_kcache(size_t n_q, const int8_t *q, size_t ldq,
                                            const float *q_scale, size_t q_scale_count,
                                            const attnscore_kcache_s8 *cache, float *s, size_t lds,
                                            float scale) {
  const CacheCore *c = core_of(cache, ATTNSCORE_DTYPE_S8);
  const attnscore_status st =
      check_cache_scores(n_q, q, ldq, q_scale, q_scale_count, cache, c, s, lds, scale);
  if (st != ATTNSCORE_OK || n_q == 0 || c->size == 0) return st;
  if (scale == 0.0f) scale = attnscore_default_scale(c->d);
  const std::size_t P = c->panels_per_head;
  const S8CacheView view{c->panel_bytes,        c->chunks, c->sums,
                         P * c->chunks * c->nr, c->scales, P * c->nr};
  drive(S8Engine<true>{static_cast<const KernelS8 *>(c->kernel),
                       {q, 0, ldq},
                       {q_scale, 0, q_scale_count == 1 ? 0u : 1u},
                       {reinterpret_cast<const std::int8_t *>(c->panels), P * c->panel_bytes, 0},
                       {},
                       view,
                       c->d,
                       scale},
        scores_problem(n_q, c->size, c->d, s, lds, scale));
  return ATTNSCORE_OK;
}

#else  // no int8 path: the functions exist and say so

size_t attnscore_kcache_s8_bytes(size_t, size_t) { return 0; }
attnscore_status attnscore_kcache_s8_init(void *, size_t, size_t, size_t, attnscore_kcache_s8 **) {
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
}
attnscore_status attnscore_kcache_s8_append(attnscore_kcache_s8 *, size_t, const int8_t *, size_t,
                                            const float *) {
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
}
size_t attnscore_kcache_s8_size(const attnscore_kcache_s8 *) { return 0; }
size_t attnscore_kcache_s8_dim(const attnscore_kcache_s8 *) { return 0; }
attnscore_status attnscore_kcache_s8_clear(attnscore_kcache_s8 *) {
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
}
attnscore_status attnscore_scores_s8_kcache(size_t, const int8_t *, size_t, const float *, size_t,
                                            const attnscore_kcache_s8 *, float *, size_t, float) {
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
}
#endif

}  // extern "C"
