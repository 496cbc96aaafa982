// SPDX-License-Identifier: Apache-2.0
// Scalar binary16 conversion (see convert_f16.hpp).
#include "kernels/scalar/convert_f16.hpp"

#include <cstring>

namespace attnscore {

std::uint32_t f16_to_f32_bits(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return sign | 0x7f800000u | (mantissa << 13) | (mantissa ? 0x400000u : 0);
  if (exponent != 0) return sign | ((exponent + 112) << 23) | (mantissa << 13);
  if (mantissa == 0) return sign;
  // Subnormal: mantissa * 2^-24 with its top bit at position p is 1.x * 2^(p - 24).
  int p = 9;
  while (!(mantissa & (1u << p))) --p;
  return sign | (static_cast<std::uint32_t>(p + 103) << 23) | ((mantissa << (23 - p)) & 0x7fffffu);
}

float f16_to_f32(std::uint16_t h) noexcept {
  const std::uint32_t bits = f16_to_f32_bits(h);
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

std::uint16_t f32_bits_to_f16(std::uint32_t f) noexcept {
  const auto sign = static_cast<std::uint16_t>((f >> 16) & 0x8000u);
  const std::uint32_t a = f & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u | static_cast<std::uint16_t>((a >> 13) & 0x3ffu);
  if (a >= 0x477ff000u) return sign | 0x7c00u;  // 65520 (and Inf): past the last tie
  if (a >= 0x38800000u) {                       // a binary16 normal: drop 13 bits, ties to even
    std::uint32_t r = (a >> 13) - (112u << 10);
    const std::uint32_t rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;  // may carry into the exponent
    return sign | static_cast<std::uint16_t>(r);
  }
  if (a <= 0x33000000u) return sign;  // <= 2^-25, half the smallest subnormal: ties to 0
  // Subnormal result: the value in units of 2^-24, rounded to nearest even (may reach 2^-14).
  const std::uint32_t m = (a & 0x7fffffu) | 0x800000u, shift = 126 - (a >> 23);
  std::uint32_t r = m >> shift;
  const std::uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rem > half || (rem == half && (r & 1u))) ++r;
  return sign | static_cast<std::uint16_t>(r);
}

std::uint16_t f32_to_f16(float x) noexcept {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return f32_bits_to_f16(bits);
}

}  // namespace attnscore
