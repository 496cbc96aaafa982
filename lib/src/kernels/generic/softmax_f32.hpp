// SPDX-License-Identifier: Apache-2.0
// The softmax of one row's visible scores, written once over the xsimd arch and instantiated per
// level in arch/ (the attention call's fused softmax).
#ifndef ATTNSCORE_SOFTMAX_F32_HPP
#define ATTNSCORE_SOFTMAX_F32_HPP

#include <cstddef>
#include <cstdint>
#include <limits>
#include <xsimd/xsimd.hpp>

#include "core/finish.h"

namespace attnscore {
namespace softmax {

// e^x for x <= 0, W lanes at a time: the same operations in the same order as exp_nonpositive
// (attention.cpp), so each lane gives the same bits. Multiplies and adds stay separate (no FMA).
template <class Arch>
inline xsimd::batch<float, Arch> exp_nonpositive(xsimd::batch<float, Arch> x) noexcept {
  using B = xsimd::batch<float, Arch>;
  using I = xsimd::batch<std::int32_t, Arch>;
  const auto in_range = x >= B(-87.0f);  // false for NaN and -Inf
  const B xc = xsimd::select(in_range, x, B(0.0f));
  const B t = xc * B(1.44269504088896341f) + B(12582912.0f);
  const B n = t - B(12582912.0f);
  const B r = (xc - n * B(0.693359375f)) - n * B(-2.12194440e-4f);
  B p(1.9875691500e-4f);
  p = p * r + B(1.3981999507e-3f);
  p = p * r + B(8.3334519073e-3f);
  p = p * r + B(4.1665795894e-2f);
  p = p * r + B(1.6666665459e-1f);
  p = p * r + B(5.0000001201e-1f);
  const B er = p * (r * r) + r + B(1.0f);
  // A multiply, not a shift: GCC 12 warns (maybe-uninitialized) inside _mm512_slli_epi32.
  const I e = (xsimd::bitwise_cast<I>(t) - I(0x4b400000 - 127)) * I(1 << 23);
  const B y = er * xsimd::bitwise_cast<B>(e);
  return xsimd::select(x < B(-87.0f), B(0.0f), xsimd::select(in_range, y, x));
}

// Softmax of row[0 .. n), n >= 1, in place; see finish_row for the NaN cases.
template <class Arch>
inline void span(float *row, std::size_t n) noexcept {
  using B = xsimd::batch<float, Arch>;
  constexpr std::size_t W = B::size;
  const float inf = std::numeric_limits<float>::infinity();
  B vm(-inf);
  std::size_t j = 0;
  for (; j + W <= n; j += W) {
    const B v = B::load_unaligned(row + j);
    vm = xsimd::select(v > vm, v, vm);
  }
  alignas(64) float lanes[W];
  vm.store_aligned(lanes);
  float m = -inf;
  for (std::size_t l = 0; l < W; ++l) m = lanes[l] > m ? lanes[l] : m;
  for (std::size_t t = j; t < n; ++t) m = row[t] > m ? row[t] : m;
  const B bm(m);
  B vs(0.0f);
  for (j = 0; j + W <= n; j += W) {
    const B e = exp_nonpositive<Arch>(B::load_unaligned(row + j) - bm);
    e.store_unaligned(row + j);
    vs = vs + e;
  }
  vs.store_aligned(lanes);
  float sum = 0.0f;
  for (std::size_t l = 0; l < W; ++l) sum += lanes[l];
  for (; j < n; ++j) {
    row[j] = attnscore::exp_nonpositive(row[j] - m);
    sum += row[j];
  }
  if (!(sum >= 1.0f)) {
    for (j = 0; j < n; ++j) row[j] = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  const float inv = 1.0f / sum;
  const B binv(inv);
  for (j = 0; j + W <= n; j += W) (B::load_unaligned(row + j) * binv).store_unaligned(row + j);
  for (; j < n; ++j) row[j] *= inv;
}

}  // namespace softmax
}  // namespace attnscore

// Defines a level's softmax `name` and its table row `name_row` (declared in attention.h).
#define ATTNSCORE_DEFINE_SOFTMAX_F32(name, level, Arch)                  \
  ATTNSCORE_KERNEL_ENTRY void name(float *row, std::size_t n) noexcept { \
    softmax::span<Arch>(row, n);                                         \
  }                                                                      \
  extern const SoftmaxF32 name##_row = {#name, level, name};

#endif  // ATTNSCORE_SOFTMAX_F32_HPP
