// SPDX-License-Identifier: Apache-2.0
// What the opt-in bf16 dot-product kernels share (arch/x86/qk_bf16_avx512bf16.cpp,
// arch/arm/qk_bf16_neon_bf16.cpp): the pair of dims one 32-bit word holds, and the row of the
// bf16 table built from a kernel's pack and its R-row tile.
#ifndef ATTNSCORE_TILE_BF16DOT_HPP
#define ATTNSCORE_TILE_BF16DOT_HPP

#include <cstddef>
#include <cstdint>

#include "dispatch/kernels.h"

namespace attnscore {
namespace tile {

// Dims t and t + 1 of a row as one 32-bit word, t in the low half (t + 1 past d: 0).
inline std::uint32_t bf16_pair(const std::uint16_t *row, std::size_t t, std::size_t d) noexcept {
  std::uint32_t w = row[t];
  if (t + 1 < d) w |= static_cast<std::uint32_t>(row[t + 1]) << 16;
  return w;
}

}  // namespace tile
}  // namespace attnscore

// The table row `name_kernel` (kernels.h) of a dot-product kernel `name` and its `pack`, with a
// decode kernel `dec` of nr_dec keys x dec_rows rows, or none (nullptr, 0, 0), and a Q packing
// `qpack` or none (nullptr).
#define ATTNSCORE_BF16DOT_ROW(name, level, feature, pack, MR, NR, slow_on, dec, nr_dec, dec_rows, \
                              qpack)                                                              \
  extern const KernelF16 name##_kernel = {                                                        \
      #name,   level, nullptr, pack,     nr_dec, dec, nullptr, nullptr, nullptr, feature,         \
      nullptr, 0,     0,       dec_rows, name,   MR,  NR,      slow_on, qpack};

// Defines a dot-product kernel `name` and its table row from the including file's `pack`, `qpack`
// (or nullptr) and `dot_tile<R>` (its anonymous namespace): the tile for the rows
// present, 1 ... 4 exactly (a decode step's group), else all MR (a tile repeats its last row for
// the rows it lacks); the sums of a row do not depend on R.
#define ATTNSCORE_DEFINE_BF16DOT(name, level, feature, pack, qpack, MR, NR, slow_on)              \
  ATTNSCORE_KERNEL_ENTRY void name(                                                               \
      std::size_t rows, std::size_t cols, std::size_t d, const std::uint16_t *q, std::size_t ldq, \
      const float *panel, float *s, std::size_t lds, float scale, unsigned flags) noexcept {      \
    switch (rows) {                                                                               \
      case 1:                                                                                     \
        return dot_tile<1>(rows, cols, d, q, ldq, panel, s, lds, scale, flags);                   \
      case 2:                                                                                     \
        return dot_tile<2>(rows, cols, d, q, ldq, panel, s, lds, scale, flags);                   \
      case 3:                                                                                     \
        return dot_tile<3>(rows, cols, d, q, ldq, panel, s, lds, scale, flags);                   \
      case 4:                                                                                     \
        return dot_tile<4>(rows, cols, d, q, ldq, panel, s, lds, scale, flags);                   \
      default:                                                                                    \
        return dot_tile<MR>(rows, cols, d, q, ldq, panel, s, lds, scale, flags);                  \
    }                                                                                             \
  }                                                                                               \
  ATTNSCORE_BF16DOT_ROW(name, level, feature, pack, MR, NR, slow_on, nullptr, 0, 0, qpack)

#endif  // ATTNSCORE_TILE_BF16DOT_HPP
