// SPDX-License-Identifier: Apache-2.0
// The packed f16 key cache: K kept as binary16 in the f32 kernel's panel layout (half the bytes
// of the f32 cache), in caller memory, appended one token at a time. Decode converts the panels
// in registers; prefill converts one chunk of a panel at a time into an f32 panel on the stack.
#include <cstdint>
#include <cstring>

#include "checks.h"
#include "engines.hpp"
#include "kernels.h"

// Lives at the start of the caller's memory (aligned up); the panels follow at 64 bytes.
struct attnscore_kcache_f16 {
  std::uint64_t magic;
  const attnscore::KernelF16 *kernel;
  std::size_t d, capacity, size;
  std::uint16_t *panels;  // ceil(capacity / NR) panels of NR * d halves
};

namespace attnscore {
namespace {

constexpr std::uint64_t kMagic = 0x6b63616368653136ull;  // "kcache16"

bool valid(const attnscore_kcache_f16 *c) noexcept { return cache_valid(c, kMagic); }

bool cache_bytes(const KernelF16 &kernel, std::size_t capacity, std::size_t d,
                 std::size_t *bytes) noexcept {
  const std::size_t nr = kernel.f32->nr;
  const std::size_t panels = capacity / nr + (capacity % nr != 0);
  std::size_t n;
  return !__builtin_mul_overflow(panels, nr, &n) && !__builtin_mul_overflow(n, d, &n) &&
         !__builtin_mul_overflow(n, sizeof(std::uint16_t), &n) &&
         !__builtin_add_overflow(n, sizeof(attnscore_kcache_f16) + 2 * 64, bytes);
}

std::uintptr_t align_up(std::uintptr_t p, std::uintptr_t a) noexcept {
  return (p + a - 1) & ~(a - 1);
}

}  // namespace
}  // namespace attnscore

using namespace attnscore;

extern "C" {

size_t attnscore_kcache_f16_bytes(size_t capacity, size_t d) {
  std::size_t bytes;
  if (capacity == 0 || d == 0 || !cache_bytes(active_kernel_f16(), capacity, d, &bytes)) return 0;
  return bytes;
}

attnscore_status attnscore_kcache_f16_init(void *mem, size_t bytes, size_t capacity, size_t d,
                                           attnscore_kcache_f16 **cache) {
  if (mem == nullptr || cache == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (capacity == 0 || d == 0) return ATTNSCORE_ERR_ZERO_DIM;
  const KernelF16 &kernel = active_kernel_f16();
  std::size_t need;
  if (!cache_bytes(kernel, capacity, d, &need)) return ATTNSCORE_ERR_SIZE_OVERFLOW;
  if (bytes < need) return ATTNSCORE_ERR_BUFFER_TOO_SMALL;
  const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(mem);
  auto *c = reinterpret_cast<attnscore_kcache_f16 *>(align_up(base, alignof(attnscore_kcache_f16)));
  const std::uintptr_t panels = align_up(reinterpret_cast<std::uintptr_t>(c + 1), 64);
  *c = {kMagic, &kernel, d, capacity, 0, reinterpret_cast<std::uint16_t *>(panels)};
  *cache = c;
  return ATTNSCORE_OK;
}

attnscore_status attnscore_kcache_f16_append(attnscore_kcache_f16 *cache, size_t n,
                                             const uint16_t *k, size_t ldk) {
  if (cache == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (!valid(cache)) return ATTNSCORE_ERR_BAD_CACHE;
  if (n == 0) return ATTNSCORE_OK;
  if (k == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (ldk < cache->d) return ATTNSCORE_ERR_BAD_LDK;
  if (n > cache->capacity - cache->size) return ATTNSCORE_ERR_CACHE_FULL;
  std::size_t k_bytes;
  if (!extent_bytes(k, n, cache->d, ldk, sizeof(std::uint16_t), &k_bytes))
    return ATTNSCORE_ERR_SIZE_OVERFLOW;
  const std::size_t nr = cache->kernel->f32->nr, d = cache->d;
  const std::size_t panel_elems = nr * d;
  const std::size_t used_panels = cache->size / nr + (cache->size % nr != 0);
  const std::size_t new_panels = (cache->size + n) / nr + ((cache->size + n) % nr != 0);
  if (overlaps(k, k_bytes, cache, sizeof *cache) ||
      overlaps(k, k_bytes, cache->panels, new_panels * panel_elems * sizeof(std::uint16_t)))
    return ATTNSCORE_ERR_OVERLAP;
  // Panels are zeroed as they are started, so padding keys are +0, never stale data.
  std::memset(cache->panels + used_panels * panel_elems, 0,
              (new_panels - used_panels) * panel_elems * sizeof(std::uint16_t));
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t j = cache->size + i;
    std::uint16_t *dst = cache->panels + (j / nr) * panel_elems + j % nr;
    const std::uint16_t *src = k + i * ldk;
    for (std::size_t t = 0; t < d; ++t) dst[t * nr] = src[t];
  }
  cache->size += n;
  return ATTNSCORE_OK;
}

size_t attnscore_kcache_f16_size(const attnscore_kcache_f16 *cache) {
  return valid(cache) ? cache->size : 0;
}

size_t attnscore_kcache_f16_dim(const attnscore_kcache_f16 *cache) {
  return valid(cache) ? cache->d : 0;
}

attnscore_status attnscore_kcache_f16_clear(attnscore_kcache_f16 *cache) {
  if (cache == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (!valid(cache)) return ATTNSCORE_ERR_BAD_CACHE;
  cache->size = 0;
  return ATTNSCORE_OK;
}

attnscore_status attnscore_scores_f16_kcache(size_t n_q, const uint16_t *q, size_t ldq,
                                             const attnscore_kcache_f16 *cache, float *s,
                                             size_t lds, float scale) {
  if (cache == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (!valid(cache)) return ATTNSCORE_ERR_BAD_CACHE;
  const std::size_t n_k = cache->size, d = cache->d;
  if (n_q == 0 || n_k == 0) return ATTNSCORE_OK;
  if (q == nullptr || s == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (ldq < d) return ATTNSCORE_ERR_BAD_LDQ;
  if (lds < n_k) return ATTNSCORE_ERR_BAD_LDS;
  if (!scale_ok(scale)) return ATTNSCORE_ERR_BAD_SCALE;
  std::size_t q_bytes, s_bytes;
  if (!extent_bytes(q, n_q, d, ldq, sizeof(std::uint16_t), &q_bytes) ||
      !extent_bytes(s, n_q, n_k, lds, sizeof(float), &s_bytes))
    return ATTNSCORE_ERR_SIZE_OVERFLOW;
  const KernelF16 &kernel = *cache->kernel;
  const KernelF32 &f32 = *kernel.f32;
  const std::size_t stride = f32.nr * d;
  const std::size_t panel_bytes =
      (n_k / f32.nr + (n_k % f32.nr != 0)) * stride * sizeof(std::uint16_t);
  if (overlaps(s, s_bytes, q, q_bytes) || overlaps(s, s_bytes, cache, sizeof *cache) ||
      overlaps(s, s_bytes, cache->panels, panel_bytes))
    return ATTNSCORE_ERR_OVERLAP;
  if (scale == 0.0f) scale = attnscore_default_scale(d);
  drive(F16Engine<true>{&kernel, {q, 0, ldq}, {cache->panels, 0, stride}, d, scale},
        scores_problem(n_q, n_k, d, s, lds, scale));
  return ATTNSCORE_OK;
}

}  // extern "C"
