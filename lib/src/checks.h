// SPDX-License-Identifier: Apache-2.0
// Argument checks shared by the public calls.
#ifndef ATTNSCORE_CHECKS_H
#define ATTNSCORE_CHECKS_H

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace attnscore {

// Extent in bytes of a row-major matrix, checked against size_t and address-space wrap.
inline bool extent_bytes(const void *base, std::size_t rows, std::size_t cols, std::size_t ld,
                         std::size_t elem, std::size_t *bytes) noexcept {
  std::size_t n;
  if (__builtin_mul_overflow(rows - 1, ld, &n) || __builtin_add_overflow(n, cols, &n) ||
      __builtin_mul_overflow(n, elem, bytes))
    return false;
  std::uintptr_t end;
  return !__builtin_add_overflow(reinterpret_cast<std::uintptr_t>(base), *bytes, &end);
}

// A usable scale: finite and not subnormal (±0 selects the default). A subnormal scale would be
// flushed to zero under FTZ/DAZ and by armv7 NEON, which always flushes: no bound holds then.
// Judged by its bits: under the caller's DAZ a float compare would see a subnormal as 0.
inline bool scale_ok(float scale) noexcept {
  std::uint32_t bits;
  std::memcpy(&bits, &scale, sizeof bits);
  const std::uint32_t exponent = bits & 0x7f800000u, mantissa = bits & 0x007fffffu;
  return exponent != 0x7f800000u && (exponent != 0 || mantissa == 0);
}

// The int a C caller passed for an enum parameter, read without loading it as the enum: any int
// is a defined argument in C, but a value outside the enumerators is undefined to load in C++.
template <class E>
inline int enum_int(const E &e) noexcept {
  static_assert(sizeof(E) == sizeof(int), "int-sized enum (the *_MAX_ENUM sentinel)");
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

inline bool overlaps(const void *a, std::size_t a_bytes, const void *b,
                     std::size_t b_bytes) noexcept {
  const auto a0 = reinterpret_cast<std::uintptr_t>(a), b0 = reinterpret_cast<std::uintptr_t>(b);
  return a0 < b0 + b_bytes && b0 < a0 + a_bytes;
}

}  // namespace attnscore

#endif  // ATTNSCORE_CHECKS_H
