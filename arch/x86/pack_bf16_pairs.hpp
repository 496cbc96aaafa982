// SPDX-License-Identifier: Apache-2.0
// The panel both x86 bf16 dot-product rows read (qk_bf16_avx512bf16.cpp, qk_bf16_amxbf16.cpp):
// 32 keys as pairs of dims, the 32-bit word of pair p of key j at panel[p * 32 + j], which is
// also the layout of AMX's B tiles (a row of pairs, 16 keys to 64 bytes). Each including file
// compiles its own copy with its own flags.
#ifndef ATTNSCORE_PACK_BF16_PAIRS_HPP
#define ATTNSCORE_PACK_BF16_PAIRS_HPP

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "dispatch/kernels.h"
#include "kernels/generic/tile_bf16dot.hpp"
#include "kernels/generic/transpose_f32.hpp"

namespace attnscore {
namespace {

constexpr std::size_t kPairsNR = 32;

// panel[p * kPairsNR + j] = pair p of key j (zero for j >= cols): whole blocks of 16 keys x 16
// pairs as 16 x 16 transposes of 32-bit words, the rest one word at a time.
ATTNSCORE_KERNEL_ENTRY void pack_pairs(std::size_t cols, std::size_t d, const std::uint16_t *k,
                                       std::size_t ldk, float *panel_f) noexcept {
  constexpr std::size_t kW = 16;
  using B = xsimd::batch<float, xsimd::avx512f>;
  auto *panel = reinterpret_cast<std::uint32_t *>(panel_f);
  const std::size_t full = d / 2, pairs = (d + 1) / 2;
  std::size_t p = 0;
  for (; p + kW <= full; p += kW) {
    for (std::size_t j0 = 0; j0 < kPairsNR; j0 += kW) {
      B r[kW];
      for (std::size_t i = 0; i < kW; ++i) {
        // Addresses as integers: a pointer past K (a padding key, the next panel) is never formed.
        const std::uintptr_t src = reinterpret_cast<std::uintptr_t>(k + 2 * p) + (j0 + i) * ldk * 2;
        r[i] = j0 + i < cols
                   ? B(_mm512_castsi512_ps(_mm512_loadu_si512(reinterpret_cast<const void *>(src))))
                   : B(0.0f);
        // The same piece of the next panel's keys: 32 rows read 64 bytes at a time defeat the
        // hardware prefetchers (as in pack_panel). A prefetch never faults.
        __builtin_prefetch(reinterpret_cast<const void *>(src + kPairsNR * ldk * 2));
      }
      tile::Transpose<xsimd::avx512f>::run(r);
      for (std::size_t i = 0; i < kW; ++i) r[i].store_aligned(panel_f + (p + i) * kPairsNR + j0);
    }
  }
  for (; p < pairs; ++p)
    for (std::size_t j = 0; j < kPairsNR; ++j)
      panel[p * kPairsNR + j] = j < cols ? tile::bf16_pair(k + j * ldk, 2 * p, d) : 0u;
}

}  // namespace
}  // namespace attnscore

#endif  // ATTNSCORE_PACK_BF16_PAIRS_HPP
