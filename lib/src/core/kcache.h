// SPDX-License-Identifier: Apache-2.0
// The key cache's core, as the attention call reads it (core/kcache.cpp).
#ifndef ATTNSCORE_KCACHE_H
#define ATTNSCORE_KCACHE_H

#include <cstddef>
#include <cstdint>

#include "attnscore/attnscore.h"

namespace attnscore {

// Lives at the start of the caller's memory (aligned up); each region follows at 64 bytes:
// panels (heads x P panels of panel_bytes), then for int8 the sums (heads x P x chunks x NR; keys
// only) and the scales (heads x P x NR). A value cache is the same with NR = 1 and no kernel:
// each head's rows of d elements one after another, and no sums.
struct CacheCore {
  std::uint64_t magic;  // a marker + kind + dtype
  attnscore_cache_kind kind;
  attnscore_dtype dtype;  // f32, f16, bf16 or s8
  const void *kernel;     // the dtype's kernel row chosen at init
  std::size_t heads, d, capacity, size;
  std::size_t nr, kg, elem;  // panel width, dims per group (1 for floats), element bytes
  std::size_t panels_per_head, panel_bytes, chunks;
  unsigned char *panels;
  std::int32_t *sums;
  float *scales;
  std::size_t bytes;  // from the header to the end of the last region
};

}  // namespace attnscore

// The public handle.
struct attnscore_cache {
  attnscore::CacheCore core;
};

namespace attnscore {
// The cache behind a handle, or null for a pointer that is no cache (misaligned, or without the
// header's marker).
const CacheCore *cache_core(const attnscore_cache *cache) noexcept;
}  // namespace attnscore

#endif  // ATTNSCORE_KCACHE_H
