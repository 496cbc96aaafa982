// SPDX-License-Identifier: Apache-2.0
// The packed int8 key cache: keys in s8 panels (all of d, groups of 4 dims, so each chunk of
// kS8Chunk dims is itself a kernel panel), their scales, and per-chunk key sums, in caller
// memory; appended one token at a time.
#include <cstdint>
#include <cstring>

#include "checks.h"
#include "engines.hpp"
#include "kernels.h"

#if ATTNSCORE_HAVE_S8
struct attnscore_kcache_s8 {
  std::uint64_t magic;
  const attnscore::KernelS8 *kernel;
  std::size_t d, capacity, size, chunks, panel_bytes;
  std::int8_t *panels;  // ceil(capacity / NR) panels of NR * round4(d) bytes
  std::int32_t *sums;   // per panel, per chunk: NR key sums
  float *scales;        // capacity rounded up to NR, zero padded
};

namespace attnscore {
namespace {

constexpr std::uint64_t kMagicS8 = 0x6b63616368657338ull;  // "kcaches8"

bool valid(const attnscore_kcache_s8 *c) noexcept { return cache_valid(c, kMagicS8); }

std::uintptr_t align_up(std::uintptr_t p, std::uintptr_t a) noexcept {
  return (p + a - 1) & ~(a - 1);
}

struct Layout {
  std::size_t panels, panel_bytes, chunks, total;
};

bool layout(const KernelS8 &kernel, std::size_t capacity, std::size_t d, Layout *l) noexcept {
  l->panels = capacity / kernel.nr + (capacity % kernel.nr != 0);
  l->chunks = (d + kS8Chunk - 1) / kS8Chunk;
  l->panel_bytes = kernel.nr * ((d + kernel.kg - 1) / kernel.kg * kernel.kg);
  std::size_t a, b, c;
  return !__builtin_mul_overflow(l->panels, l->panel_bytes, &a) &&
         !__builtin_mul_overflow(l->panels * l->chunks, kernel.nr * sizeof(std::int32_t), &b) &&
         !__builtin_mul_overflow(l->panels, kernel.nr * sizeof(float), &c) &&
         !__builtin_add_overflow(a, b, &a) && !__builtin_add_overflow(a, c, &a) &&
         !__builtin_add_overflow(a, sizeof(attnscore_kcache_s8) + 4 * 64, &l->total);
}

}  // namespace
}  // namespace attnscore

using namespace attnscore;
#endif

extern "C" {

#if ATTNSCORE_HAVE_S8
size_t attnscore_kcache_s8_bytes(size_t capacity, size_t d) {
  Layout l;
  if (capacity == 0 || d == 0 || d > ATTNSCORE_S8_MAX_D ||
      !layout(active_kernel_s8(), capacity, d, &l))
    return 0;
  return l.total;
}

attnscore_status attnscore_kcache_s8_init(void *mem, size_t bytes, size_t capacity, size_t d,
                                          attnscore_kcache_s8 **cache) {
  if (mem == nullptr || cache == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (capacity == 0 || d == 0) return ATTNSCORE_ERR_ZERO_DIM;
  if (d > ATTNSCORE_S8_MAX_D) return ATTNSCORE_ERR_DIM_TOO_LARGE;
  const KernelS8 &kernel = active_kernel_s8();
  Layout l;
  if (!layout(kernel, capacity, d, &l)) return ATTNSCORE_ERR_SIZE_OVERFLOW;
  if (bytes < l.total) return ATTNSCORE_ERR_BUFFER_TOO_SMALL;
  const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(mem);
  auto *c = reinterpret_cast<attnscore_kcache_s8 *>(align_up(base, alignof(attnscore_kcache_s8)));
  const std::uintptr_t panels = align_up(reinterpret_cast<std::uintptr_t>(c + 1), 64);
  const std::uintptr_t sums = align_up(panels + l.panels * l.panel_bytes, 64);
  const std::uintptr_t scales =
      align_up(sums + l.panels * l.chunks * kernel.nr * sizeof(std::int32_t), 64);
  *c = {kMagicS8,
        &kernel,
        d,
        capacity,
        0,
        l.chunks,
        l.panel_bytes,
        reinterpret_cast<std::int8_t *>(panels),
        reinterpret_cast<std::int32_t *>(sums),
        reinterpret_cast<float *>(scales)};
  *cache = c;
  return ATTNSCORE_OK;
}

attnscore_status attnscore_kcache_s8_append(attnscore_kcache_s8 *cache, size_t n, const int8_t *k,
                                            size_t ldk, const float *k_scale) {
  if (cache == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (!valid(cache)) return ATTNSCORE_ERR_BAD_CACHE;
  if (n == 0) return ATTNSCORE_OK;
  if (k == nullptr || k_scale == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (ldk < cache->d) return ATTNSCORE_ERR_BAD_LDK;
  if (n > cache->capacity - cache->size) return ATTNSCORE_ERR_CACHE_FULL;
  std::size_t k_bytes, ks_bytes;
  if (!extent_bytes(k, n, cache->d, ldk, 1, &k_bytes) ||
      !extent_bytes(k_scale, 1, n, n, sizeof(float), &ks_bytes))
    return ATTNSCORE_ERR_SIZE_OVERFLOW;
  const std::size_t nr = cache->kernel->nr, kg = cache->kernel->kg, d = cache->d;
  const std::size_t chunks = cache->chunks;
  const std::size_t new_panels = (cache->size + n) / nr + ((cache->size + n) % nr != 0);
  const auto cache_begin = reinterpret_cast<std::uintptr_t>(cache);
  const auto cache_end = reinterpret_cast<std::uintptr_t>(cache->scales + new_panels * nr);
  if (overlaps(k, k_bytes, cache, cache_end - cache_begin) ||
      overlaps(k_scale, ks_bytes, cache, cache_end - cache_begin))
    return ATTNSCORE_ERR_OVERLAP;
  if (!scales_ok(k_scale, n)) return ATTNSCORE_ERR_BAD_QUANT_SCALE;
  const std::size_t used_panels = cache->size / nr + (cache->size % nr != 0);
  // Panels are zeroed as they are started: padding keys and dims are 0, sums and scales too.
  std::memset(cache->panels + used_panels * cache->panel_bytes, 0,
              (new_panels - used_panels) * cache->panel_bytes);
  std::memset(cache->sums + used_panels * chunks * nr, 0,
              (new_panels - used_panels) * chunks * nr * sizeof(std::int32_t));
  std::memset(cache->scales + used_panels * nr, 0, (new_panels - used_panels) * nr * sizeof(float));
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t j = cache->size + i, p = j / nr, jj = j % nr;
    std::int8_t *panel = cache->panels + p * cache->panel_bytes;
    const std::int8_t *src = k + i * ldk;
    for (std::size_t t = 0; t < d; ++t) {
      panel[((t / kg) * nr + jj) * kg + t % kg] = src[t];
      cache->sums[(p * chunks + t / kS8Chunk) * nr + jj] += src[t];
    }
    cache->scales[j] = k_scale[i];
  }
  cache->size += n;
  return ATTNSCORE_OK;
}

size_t attnscore_kcache_s8_size(const attnscore_kcache_s8 *cache) {
  return valid(cache) ? cache->size : 0;
}

size_t attnscore_kcache_s8_dim(const attnscore_kcache_s8 *cache) {
  return valid(cache) ? cache->d : 0;
}

attnscore_status attnscore_kcache_s8_clear(attnscore_kcache_s8 *cache) {
  if (cache == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (!valid(cache)) return ATTNSCORE_ERR_BAD_CACHE;
  cache->size = 0;
  return ATTNSCORE_OK;
}

attnscore_status attnscore_scores_s8_kcache(size_t n_q, const int8_t *q, size_t ldq,
                                            const float *q_scale, size_t q_scale_count,
                                            const attnscore_kcache_s8 *cache, float *s, size_t lds,
                                            float scale) {
  if (cache == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (!valid(cache)) return ATTNSCORE_ERR_BAD_CACHE;
  const std::size_t n_k = cache->size, d = cache->d;
  if (n_q == 0 || n_k == 0) return ATTNSCORE_OK;
  if (q == nullptr || s == nullptr || q_scale == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (ldq < d) return ATTNSCORE_ERR_BAD_LDQ;
  if (lds < n_k) return ATTNSCORE_ERR_BAD_LDS;
  if (q_scale_count != 1 && q_scale_count != n_q) return ATTNSCORE_ERR_BAD_SCALE_COUNT;
  if (!scale_ok(scale)) return ATTNSCORE_ERR_BAD_SCALE;
  std::size_t q_bytes, s_bytes, qs_bytes;
  if (!extent_bytes(q, n_q, d, ldq, 1, &q_bytes) ||
      !extent_bytes(s, n_q, n_k, lds, sizeof(float), &s_bytes) ||
      !extent_bytes(q_scale, 1, q_scale_count, q_scale_count, sizeof(float), &qs_bytes))
    return ATTNSCORE_ERR_SIZE_OVERFLOW;
  const KernelS8 &kernel = *cache->kernel;
  const std::size_t nr = kernel.nr, panels = n_k / nr + (n_k % nr != 0);
  const auto cache_begin = reinterpret_cast<std::uintptr_t>(cache);
  const auto cache_end = reinterpret_cast<std::uintptr_t>(cache->scales + panels * nr);
  if (overlaps(s, s_bytes, q, q_bytes) || overlaps(s, s_bytes, q_scale, qs_bytes) ||
      overlaps(s, s_bytes, cache, cache_end - cache_begin))
    return ATTNSCORE_ERR_OVERLAP;
  if (!scales_ok(q_scale, q_scale_count)) return ATTNSCORE_ERR_BAD_QUANT_SCALE;
  if (scale == 0.0f) scale = attnscore_default_scale(d);
  const std::size_t q_step = q_scale_count == 1 ? 0 : 1;
  const S8CacheView view{cache->panel_bytes, cache->chunks, cache->sums, 0, cache->scales, 0};
  drive(
      S8Engine<true>{
          &kernel, {q, 0, ldq}, {q_scale, 0, q_step}, {cache->panels, 0, 0}, {}, view, d, scale},
      scores_problem(n_q, n_k, d, s, lds, scale));
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
