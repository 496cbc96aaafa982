// SPDX-License-Identifier: Apache-2.0
// The packed key cache: K in prefill panels, in caller memory, appended one token at a time.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "checks.h"
#include "engines.hpp"
#include "kernels.h"

// Lives at the start of the caller's memory (aligned up); the panels follow at 64 bytes.
struct attnscore_kcache_f32 {
  std::uint64_t magic;
  const attnscore::KernelF32 *kernel;
  std::size_t d, capacity, size;
  float *panels;  // ceil(capacity / NR) panels of NR * d floats
};

namespace attnscore {
namespace {

constexpr std::uint64_t kMagic = 0x6b63616368653332ull;  // "kcache32"

// Callers may pass any pointer: a misaligned one is no cache (and must not be read as one).
bool valid(const attnscore_kcache_f32 *c) noexcept { return cache_valid(c, kMagic); }

// Bytes for the header, the worst-case alignment slack and the panels; false on overflow.
bool cache_bytes(const KernelF32 &kernel, std::size_t capacity, std::size_t d,
                 std::size_t *bytes) noexcept {
  const std::size_t panels = capacity / kernel.nr + (capacity % kernel.nr != 0);
  std::size_t n;
  return !__builtin_mul_overflow(panels, kernel.nr, &n) && !__builtin_mul_overflow(n, d, &n) &&
         !__builtin_mul_overflow(n, sizeof(float), &n) &&
         !__builtin_add_overflow(n, sizeof(attnscore_kcache_f32) + 2 * 64, bytes);
}

std::uintptr_t align_up(std::uintptr_t p, std::uintptr_t a) noexcept {
  return (p + a - 1) & ~(a - 1);
}

// The checks of a scores call on a cache, in the documented order; ATTNSCORE_OK with n_q or the
// cache's size zero is the successful no-op.
attnscore_status check_cache_scores(std::size_t n_q, const float *q, std::size_t ldq,
                                    const attnscore_kcache_f32 *cache, const float *s,
                                    std::size_t lds, float scale) noexcept {
  if (cache == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (!valid(cache)) return ATTNSCORE_ERR_BAD_CACHE;
  const std::size_t n_k = cache->size, d = cache->d;
  if (n_q == 0 || n_k == 0) return ATTNSCORE_OK;
  if (q == nullptr || s == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (ldq < d) return ATTNSCORE_ERR_BAD_LDQ;
  if (lds < n_k) return ATTNSCORE_ERR_BAD_LDS;
  if (!scale_ok(scale)) return ATTNSCORE_ERR_BAD_SCALE;
  std::size_t q_bytes, s_bytes;
  if (!extent_bytes(q, n_q, d, ldq, sizeof(float), &q_bytes) ||
      !extent_bytes(s, n_q, n_k, lds, sizeof(float), &s_bytes))
    return ATTNSCORE_ERR_SIZE_OVERFLOW;
  const KernelF32 &kernel = *cache->kernel;
  const std::size_t stride = kernel.nr * d;
  const std::size_t panel_bytes = (n_k / kernel.nr + (n_k % kernel.nr != 0)) * stride * 4;
  if (overlaps(s, s_bytes, q, q_bytes) || overlaps(s, s_bytes, cache, sizeof *cache) ||
      overlaps(s, s_bytes, cache->panels, panel_bytes))
    return ATTNSCORE_ERR_OVERLAP;
  return ATTNSCORE_OK;
}

// The engine reading the cache's panels (one KV head).
F32Engine<true> engine(const attnscore_kcache_f32 *c, const float *q, std::size_t ldq,
                       float scale) noexcept {
  return {c->kernel, {q, 0, ldq}, {c->panels, 0, c->kernel->nr * c->d}, c->d, scale};
}

}  // namespace
}  // namespace attnscore

using namespace attnscore;

extern "C" {

size_t attnscore_kcache_f32_bytes(size_t capacity, size_t d) {
  std::size_t bytes;
  if (capacity == 0 || d == 0 || !cache_bytes(active_kernel_f32(), capacity, d, &bytes)) return 0;
  return bytes;
}

attnscore_status attnscore_kcache_f32_init(void *mem, size_t bytes, size_t capacity, size_t d,
                                           attnscore_kcache_f32 **cache) {
  if (mem == nullptr || cache == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (capacity == 0 || d == 0) return ATTNSCORE_ERR_ZERO_DIM;
  const KernelF32 &kernel = active_kernel_f32();
  std::size_t need;
  if (!cache_bytes(kernel, capacity, d, &need)) return ATTNSCORE_ERR_SIZE_OVERFLOW;
  if (bytes < need) return ATTNSCORE_ERR_BUFFER_TOO_SMALL;
  const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(mem);
  auto *c = reinterpret_cast<attnscore_kcache_f32 *>(align_up(base, alignof(attnscore_kcache_f32)));
  const std::uintptr_t panels = align_up(reinterpret_cast<std::uintptr_t>(c + 1), 64);
  *c = {kMagic, &kernel, d, capacity, 0, reinterpret_cast<float *>(panels)};
  *cache = c;
  return ATTNSCORE_OK;
}

attnscore_status attnscore_kcache_f32_append(attnscore_kcache_f32 *cache, size_t n, const float *k,
                                             size_t ldk) {
  if (cache == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (!valid(cache)) return ATTNSCORE_ERR_BAD_CACHE;
  if (n == 0) return ATTNSCORE_OK;
  if (k == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (ldk < cache->d) return ATTNSCORE_ERR_BAD_LDK;
  if (n > cache->capacity - cache->size) return ATTNSCORE_ERR_CACHE_FULL;
  std::size_t k_bytes;
  if (!extent_bytes(k, n, cache->d, ldk, sizeof(float), &k_bytes))
    return ATTNSCORE_ERR_SIZE_OVERFLOW;
  const std::size_t nr = cache->kernel->nr, d = cache->d;
  const std::size_t panel_floats = nr * d;
  const std::size_t used_panels = cache->size / nr + (cache->size % nr != 0);
  const std::size_t new_panels = (cache->size + n) / nr + ((cache->size + n) % nr != 0);
  if (overlaps(k, k_bytes, cache, sizeof *cache) ||
      overlaps(k, k_bytes, cache->panels, new_panels * panel_floats * sizeof(float)))
    return ATTNSCORE_ERR_OVERLAP;
  // Panels are zeroed as they are started, so padding keys are 0, never stale data.
  std::memset(cache->panels + used_panels * panel_floats, 0,
              (new_panels - used_panels) * panel_floats * sizeof(float));
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t j = cache->size + i;
    float *dst = cache->panels + (j / nr) * panel_floats + j % nr;
    const float *src = k + i * ldk;
    for (std::size_t t = 0; t < d; ++t) dst[t * nr] = src[t];
  }
  cache->size += n;
  return ATTNSCORE_OK;
}

size_t attnscore_kcache_f32_size(const attnscore_kcache_f32 *cache) {
  return valid(cache) ? cache->size : 0;
}

size_t attnscore_kcache_f32_dim(const attnscore_kcache_f32 *cache) {
  return valid(cache) ? cache->d : 0;
}

attnscore_status attnscore_kcache_f32_clear(attnscore_kcache_f32 *cache) {
  if (cache == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (!valid(cache)) return ATTNSCORE_ERR_BAD_CACHE;
  cache->size = 0;
  return ATTNSCORE_OK;
}

attnscore_status attnscore_scores_f32_kcache(size_t n_q, const float *q, size_t ldq,
                                             const attnscore_kcache_f32 *cache, float *s,
                                             size_t lds, float scale) {
  return attnscore_scores_f32_kcache_parallel(nullptr, n_q, q, ldq, cache, s, lds, scale);
}

attnscore_status attnscore_scores_f32_kcache_parallel(const attnscore_parallel *par, size_t n_q,
                                                      const float *q, size_t ldq,
                                                      const attnscore_kcache_f32 *cache, float *s,
                                                      size_t lds, float scale) {
  const attnscore_status st = check_cache_scores(n_q, q, ldq, cache, s, lds, scale);
  if (st != ATTNSCORE_OK || n_q == 0 || cache->size == 0) return st;
  if (par != nullptr && par->parallel_for == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (scale == 0.0f) scale = attnscore_default_scale(cache->d);
  drive_parallel(engine(cache, q, ldq, scale),
                 scores_problem(n_q, cache->size, cache->d, s, lds, scale), par);
  return ATTNSCORE_OK;
}

}  // extern "C"
