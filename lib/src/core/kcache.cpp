// SPDX-License-Identifier: Apache-2.0
// The packed key cache, one implementation for every dtype: K kept in the layout its kernel row
// reads (panels of NR keys, d-major; int8 in groups of KG dims with per-chunk key sums and the
// keys' scales beside), for every KV head of a layer, in caller memory, appended a token at a
// time and never repacked. Scores read it through the one driver (driver.hpp), so they are the
// raw call's bits with the kernel chosen at init.
#include "core/kcache.h"

#include <cstdint>
#include <cstring>

#include "core/checks.h"
#include "core/engines.hpp"
#include "dispatch/kernels.h"

namespace attnscore {
namespace {

constexpr std::uint64_t kCacheMagic = 0x6b63616368650000ull;  // "kcache" + kind * 256 + dtype

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

bool layout(attnscore_cache_kind kind, attnscore_dtype dtype, std::size_t heads,
            std::size_t capacity, std::size_t d, Layout *l) noexcept {
  l->kg = 1, l->chunks = 0;
  const bool s8 = dtype == ATTNSCORE_DTYPE_S8;
  if (kind == ATTNSCORE_CACHE_VALUES) {
    // Rows as attnscore_attention_output reads them: no kernel, one row per "panel".
    if (!(dtype == ATTNSCORE_DTYPE_F32 ||
          (ATTNSCORE_HAVE_F16 && (dtype == ATTNSCORE_DTYPE_F16 || dtype == ATTNSCORE_DTYPE_BF16)) ||
          (ATTNSCORE_HAVE_S8 && s8)))
      return false;
    l->kernel = nullptr, l->nr = 1;
    l->elem = dtype == ATTNSCORE_DTYPE_F32 ? sizeof(float) : s8 ? 1 : sizeof(std::uint16_t);
  } else if (dtype == ATTNSCORE_DTYPE_F32) {
    l->kernel = &active_kernel_f32(), l->nr = active_kernel_f32().nr, l->elem = sizeof(float);
#if ATTNSCORE_HAVE_F16
  } else if (dtype == ATTNSCORE_DTYPE_F16) {
    l->kernel = &active_kernel_f16(), l->nr = active_kernel_f16().f32->nr;
    l->elem = sizeof(std::uint16_t);
  } else if (dtype == ATTNSCORE_DTYPE_BF16) {
    l->kernel = &active_kernel_bf16(), l->nr = active_kernel_bf16().f32->nr;
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
      __builtin_mul_overflow(s8 ? all : 0, l->nr * sizeof(float), &scales))
    return false;
  // The header, then each region 64 bytes aligned (slack for the header's own alignment too).
  l->panels_bytes = panels, l->sums_bytes = sums, l->scales_bytes = scales;
  std::size_t n;
  return !__builtin_add_overflow(panels, sums, &n) && !__builtin_add_overflow(n, scales, &n) &&
         !__builtin_add_overflow(n, sizeof(CacheCore) + alignof(CacheCore) + 3 * 64, &l->total);
}

constexpr std::uint64_t magic_of(attnscore_cache_kind kind, attnscore_dtype dtype) noexcept {
  return kCacheMagic + static_cast<std::uint64_t>(kind) * 256 + static_cast<std::uint64_t>(dtype);
}

// Appends n keys of every KV head: key i of head h at k + (h * khs + i * krs) elements, its scale
// (int8) at ks[h * kshs + i]. Checks in the documented order, nothing written on error.
attnscore_status cache_append(CacheCore *c, std::size_t n, const void *k, std::size_t khs,
                              std::size_t krs, const float *ks, std::size_t kshs) noexcept {
  const bool s8 = c->dtype == ATTNSCORE_DTYPE_S8;
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
        for (std::size_t t = 0; c->chunks != 0 && t < d; ++t) sums[t / kS8Chunk * nr] += kq[t];
        c->scales[h * P * nr + j] = ks[h * kshs + i];
      }
    }
  }
  c->size += n;
  return ATTNSCORE_OK;
}

// Forgets the tokens from `size` on: the lanes they held in the last partial panel of each head
// are zeroed (their sums and scales too), as append leaves padding, so that the panel reads the
// same as one never filled past `size`.
void cache_truncate(CacheCore *c, std::size_t size) noexcept {
  const std::size_t nr = c->nr, kg = c->kg, P = c->panels_per_head, p = size / nr;
  const std::size_t used = c->size / nr + (c->size % nr != 0);
  for (std::size_t h = 0; h < c->heads && size % nr != 0 && p < used; ++h) {
    unsigned char *panel = c->panels + (h * P + p) * c->panel_bytes;
    for (std::size_t jj = size % nr; jj < nr; ++jj) {
      for (std::size_t t = 0; t < c->d; ++t)
        std::memset(panel + (((t / kg) * nr + jj) * kg + t % kg) * c->elem, 0, c->elem);
      for (std::size_t ch = 0; ch < c->chunks; ++ch)
        c->sums[((h * P + p) * c->chunks + ch) * nr + jj] = 0;
      if (c->dtype == ATTNSCORE_DTYPE_S8) c->scales[(h * P + p) * nr + jj] = 0.0f;
    }
  }
  c->size = size;
}

bool shape_ok(const attnscore_cache_shape *shape) noexcept {
  return shape != nullptr && (enum_int(shape->kind) == ATTNSCORE_CACHE_KEYS ||
                              enum_int(shape->kind) == ATTNSCORE_CACHE_VALUES);
}

}  // namespace

const CacheCore *cache_core(const attnscore_cache *cache) noexcept {
  // Callers may pass any pointer: a misaligned one is no cache (and must not be read as one).
  if (cache == nullptr || reinterpret_cast<std::uintptr_t>(cache) % alignof(CacheCore) != 0)
    return nullptr;
  const CacheCore *c = &cache->core;
  return c->magic == kCacheMagic + static_cast<std::uint64_t>(enum_int(c->kind)) * 256 +
                         static_cast<std::uint64_t>(enum_int(c->dtype))
             ? c
             : nullptr;
}

}  // namespace attnscore

using namespace attnscore;

extern "C" {

size_t attnscore_cache_bytes(const attnscore_cache_shape *shape) {
  Layout l;
  if (!shape_ok(shape) || shape->heads == 0 || shape->capacity == 0 || shape->d == 0 ||
      (enum_int(shape->dtype) == ATTNSCORE_DTYPE_S8 && shape->d > ATTNSCORE_S8_MAX_D) ||
      !layout(static_cast<attnscore_cache_kind>(enum_int(shape->kind)),
              static_cast<attnscore_dtype>(enum_int(shape->dtype)), shape->heads, shape->capacity,
              shape->d, &l))
    return 0;
  return l.total;
}

attnscore_status attnscore_cache_init(void *mem, size_t bytes,
                                      const attnscore_cache_shape *shape_in,
                                      attnscore_cache **cache) {
  if (mem == nullptr || shape_in == nullptr || cache == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  const attnscore_cache_shape shape = *shape_in;
  if (!shape_ok(&shape)) return ATTNSCORE_ERR_BAD_FLAGS;
  const int dtype_v = enum_int(shape.dtype);
  if (dtype_v != ATTNSCORE_DTYPE_F32 && dtype_v != ATTNSCORE_DTYPE_F16 &&
      dtype_v != ATTNSCORE_DTYPE_BF16 && dtype_v != ATTNSCORE_DTYPE_S8)
    return ATTNSCORE_ERR_UNKNOWN_DTYPE;
  const auto dtype = static_cast<attnscore_dtype>(dtype_v);
  if (shape.heads == 0 || shape.capacity == 0 || shape.d == 0) return ATTNSCORE_ERR_ZERO_DIM;
  if (dtype == ATTNSCORE_DTYPE_S8 && shape.d > ATTNSCORE_S8_MAX_D)
    return ATTNSCORE_ERR_DIM_TOO_LARGE;
  Layout l;
  const auto kind = static_cast<attnscore_cache_kind>(enum_int(shape.kind));
  if (!layout(kind, dtype, shape.heads, shape.capacity, shape.d, &l)) {
    // layout() also refuses a dtype this build leaves out.
    if (((dtype == ATTNSCORE_DTYPE_F16 || dtype == ATTNSCORE_DTYPE_BF16) && !ATTNSCORE_HAVE_F16) ||
        (dtype == ATTNSCORE_DTYPE_S8 && !ATTNSCORE_HAVE_S8))
      return ATTNSCORE_ERR_UNKNOWN_DTYPE;
    return ATTNSCORE_ERR_SIZE_OVERFLOW;
  }
  if (bytes < l.total) return ATTNSCORE_ERR_BUFFER_TOO_SMALL;
  const std::uintptr_t at = align_up(reinterpret_cast<std::uintptr_t>(mem), alignof(CacheCore));
  const std::uintptr_t panels = align_up(at + sizeof(CacheCore), 64);
  const std::uintptr_t sums = align_up(panels + l.panels_bytes, 64);
  const std::uintptr_t scales = align_up(sums + l.sums_bytes, 64);
  auto *h = reinterpret_cast<attnscore_cache *>(at);
  h->core = {magic_of(kind, dtype),
             kind,
             dtype,
             l.kernel,
             shape.heads,
             shape.d,
             shape.capacity,
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

attnscore_status attnscore_cache_append(attnscore_cache *cache, size_t n,
                                        const attnscore_tensor *src_in) {
  if (cache == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  CacheCore *c = const_cast<CacheCore *>(cache_core(cache));
  if (c == nullptr) return ATTNSCORE_ERR_BAD_CACHE;
  if (n == 0) return ATTNSCORE_OK;
  if (src_in == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  const attnscore_tensor src = *src_in;
  if (enum_int(src.dtype) != c->dtype) return ATTNSCORE_ERR_DTYPE_MISMATCH;
  if (c->dtype == ATTNSCORE_DTYPE_S8 && src.scale_row_stride != 1)
    return ATTNSCORE_ERR_BAD_SCALE_COUNT;
  return cache_append(c, n, src.data, src.head_stride, src.row_stride, src.scale,
                      src.scale_head_stride);
}

size_t attnscore_cache_size(const attnscore_cache *cache) {
  const CacheCore *c = cache_core(cache);
  return c == nullptr ? 0 : c->size;
}

attnscore_status attnscore_cache_truncate(attnscore_cache *cache, size_t size) {
  if (cache == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  CacheCore *c = const_cast<CacheCore *>(cache_core(cache));
  if (c == nullptr) return ATTNSCORE_ERR_BAD_CACHE;
  if (size > c->size) return ATTNSCORE_ERR_SHAPE_MISMATCH;
  cache_truncate(c, size);
  return ATTNSCORE_OK;
}

}  // extern "C"
