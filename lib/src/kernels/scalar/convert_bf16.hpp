// SPDX-License-Identifier: Apache-2.0
// bfloat16 <-> binary32, bit-exact: a bfloat16 is the top half of a binary32, so widening is a
// 16-bit shift (exact; a NaN keeps its bits) and narrowing rounds the low half away, to nearest
// even, in integer arithmetic (a NaN keeps its sign and top payload bits and is made quiet; no
// flushing, whatever the FPU's modes). Inline: every level compiles (and vectorises) it itself.
#ifndef ATTNSCORE_CONVERT_BF16_HPP
#define ATTNSCORE_CONVERT_BF16_HPP

#include <cstdint>
#include <cstring>

namespace attnscore {

inline float bf16_to_f32(std::uint16_t h) noexcept {
  const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

inline std::uint16_t f32_to_bf16(float x) noexcept {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  if ((b & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((b >> 16) | 0x40u);
  // Adding 0x7fff (0x8000 when the kept half is odd) carries exactly when the dropped half is
  // above the tie (or at it, odd); a carry into the exponent is the correct rounding up.
  return static_cast<std::uint16_t>((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

}  // namespace attnscore

#endif  // ATTNSCORE_CONVERT_BF16_HPP
