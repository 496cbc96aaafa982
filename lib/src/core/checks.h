// SPDX-License-Identifier: Apache-2.0
// Argument checks shared by the public calls.
#ifndef ATTNSCORE_CHECKS_H
#define ATTNSCORE_CHECKS_H

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "attnscore/attnscore.h"

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

// Extent in bytes of a strided 3-D tensor (heads x rows x cols, strides hs and rs, unit stride
// within a row), checked against size_t and address-space wrap.
inline bool extent3_bytes(const void *base, std::size_t heads, std::size_t rows, std::size_t cols,
                          std::size_t hs, std::size_t rs, std::size_t elem,
                          std::size_t *bytes) noexcept {
  std::size_t a, b, n;
  if (__builtin_mul_overflow(heads - 1, hs, &a) || __builtin_mul_overflow(rows - 1, rs, &b) ||
      __builtin_add_overflow(a, b, &n) || __builtin_add_overflow(n, cols, &n) ||
      __builtin_mul_overflow(n, elem, bytes))
    return false;
  std::uintptr_t end;
  return !__builtin_add_overflow(reinterpret_cast<std::uintptr_t>(base), *bytes, &end);
}

// 1 for an unusable scale: infinite, NaN or subnormal (±0 is usable: it selects the default, or
// is an all-zero row's quantization scale). A subnormal scale would be flushed to zero under
// FTZ/DAZ and by armv7 NEON, which always flushes: no bound holds then. Judged by its bits: under
// the caller's DAZ a float compare would see a subnormal as 0. Branch-free, so loops vectorize.
inline std::uint32_t scale_bad(float scale) noexcept {
  std::uint32_t bits;
  std::memcpy(&bits, &scale, sizeof bits);
  const std::uint32_t exponent = bits & 0x7f800000u, mantissa = bits & 0x007fffffu;
  return static_cast<std::uint32_t>(exponent == 0x7f800000u) |
         (static_cast<std::uint32_t>(exponent == 0) & static_cast<std::uint32_t>(mantissa != 0));
}

inline bool scale_ok(float scale) noexcept { return scale_bad(scale) == 0; }

// Every scale of v[0 ... n - 1] usable. Every one is read, with no branch per scale: a decode
// call's thousands of per-key scales cost a few hundred cycles, not thousands.
inline bool scales_ok(const float *v, std::size_t n) noexcept {
  std::uint32_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) bad |= scale_bad(v[i]);
  return bad == 0;
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

// Every check of a scores call on raw Q and K, in the documented order (attnscore.h, "Check
// order");
// in_elem and out_elem are the bytes of an input and an output element. ATTNSCORE_OK with
// n_q or n_k zero is the successful no-op.
inline attnscore_status check_scores(std::size_t n_q, std::size_t n_k, std::size_t d, const void *q,
                                     std::size_t ldq, const void *k, std::size_t ldk, const void *s,
                                     std::size_t lds, float scale, std::size_t in_elem,
                                     std::size_t out_elem) noexcept {
  if (n_q == 0 || n_k == 0) return ATTNSCORE_OK;
  if (d == 0) return ATTNSCORE_ERR_ZERO_DIM;
  if (q == nullptr || k == nullptr || s == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (ldq < d) return ATTNSCORE_ERR_BAD_LDQ;
  if (ldk < d) return ATTNSCORE_ERR_BAD_LDK;
  if (lds < n_k) return ATTNSCORE_ERR_BAD_LDS;
  if (!scale_ok(scale)) return ATTNSCORE_ERR_BAD_SCALE;
  std::size_t q_bytes, k_bytes, s_bytes;
  if (!extent_bytes(q, n_q, d, ldq, in_elem, &q_bytes) ||
      !extent_bytes(k, n_k, d, ldk, in_elem, &k_bytes) ||
      !extent_bytes(s, n_q, n_k, lds, out_elem, &s_bytes))
    return ATTNSCORE_ERR_SIZE_OVERFLOW;
  if (overlaps(s, s_bytes, q, q_bytes) || overlaps(s, s_bytes, k, k_bytes))
    return ATTNSCORE_ERR_OVERLAP;
  return ATTNSCORE_OK;
}

// A key cache handle made by its init: aligned for its header (checked before the header is
// read: a caller's stray pointer must not become a misaligned load) and carrying its magic.
template <class Cache>
bool cache_valid(const Cache *c, std::uint64_t magic) noexcept {
  return c != nullptr && reinterpret_cast<std::uintptr_t>(c) % alignof(Cache) == 0 &&
         c->magic == magic;
}

}  // namespace attnscore

#endif  // ATTNSCORE_CHECKS_H
