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
#include "kernels/generic/tile_f32.hpp"

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

// The row's maximum m (-Inf if none; NaN ignored), then row[j] = e^(row[j] - m) for j < n;
// returns their sum: W lane sums in j order, the lanes added in order, then the tail (so the bits
// depend on n and the level only).
template <class Arch>
inline float exp_sum(float *row, std::size_t n, float *m_out) noexcept {
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
  *m_out = m;
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
  return sum;
}

// Softmax of row[0 .. n), n >= 1, in place; see finish_row for the NaN cases.
template <class Arch>
inline void span(float *row, std::size_t n) noexcept {
  using B = xsimd::batch<float, Arch>;
  constexpr std::size_t W = B::size;
  float m;
  const float sum = exp_sum<Arch>(row, n, &m);
  if (!(sum >= 1.0f)) {
    for (std::size_t j = 0; j < n; ++j) row[j] = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  const float inv = 1.0f / sum;
  const B binv(inv);
  std::size_t j = 0;
  for (; j + W <= n; j += W) (B::load_unaligned(row + j) * binv).store_unaligned(row + j);
  for (; j < n; ++j) row[j] *= inv;
}

// t[r][x] += sum_j w[r][j] * v[j * ldv + x] for rows r < R, x < dv, j < n: one fused
// multiply-add per j in j order from t (a multiply and an add where the level has no FMA), so
// each row gets the same bits whichever rows share its tile. R rows x four vectors of dims per
// tile: each V vector loaded feeds R FMAs, each broadcast weight four.
template <class Arch, std::size_t R>
inline void pv_tile(std::size_t n, std::size_t dv, const float *const *w, const float *v,
                    std::size_t ldv, float *const *t) noexcept {
  using B = xsimd::batch<float, Arch>;
  constexpr std::size_t W = B::size;
  std::size_t x = 0;
  for (; x + 4 * W <= dv; x += 4 * W) {
    B acc[R][4];
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t c = 0; c < 4; ++c) acc[r][c] = B::load_unaligned(t[r] + x + c * W);
    for (std::size_t j = 0; j < n; ++j) {
      const float *vr = v + j * ldv + x;
      const B v0 = B::load_unaligned(vr), v1 = B::load_unaligned(vr + W);
      const B v2 = B::load_unaligned(vr + 2 * W), v3 = B::load_unaligned(vr + 3 * W);
      for (std::size_t r = 0; r < R; ++r) {
        const B wj(w[r][j]);
        acc[r][0] = tile::fmadd(wj, v0, acc[r][0]);
        acc[r][1] = tile::fmadd(wj, v1, acc[r][1]);
        acc[r][2] = tile::fmadd(wj, v2, acc[r][2]);
        acc[r][3] = tile::fmadd(wj, v3, acc[r][3]);
      }
    }
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t c = 0; c < 4; ++c) acc[r][c].store_unaligned(t[r] + x + c * W);
  }
  for (; x + W <= dv; x += W) {
    B acc[R];
    for (std::size_t r = 0; r < R; ++r) acc[r] = B::load_unaligned(t[r] + x);
    for (std::size_t j = 0; j < n; ++j) {
      const B vj = B::load_unaligned(v + j * ldv + x);
      for (std::size_t r = 0; r < R; ++r) acc[r] = tile::fmadd(B(w[r][j]), vj, acc[r]);
    }
    for (std::size_t r = 0; r < R; ++r) acc[r].store_unaligned(t[r] + x);
  }
  for (; x < dv; ++x)
    for (std::size_t r = 0; r < R; ++r) {
      float a = t[r][x];
      for (std::size_t j = 0; j < n; ++j) a += w[r][j] * v[j * ldv + x];
      t[r][x] = a;
    }
}

// pv_tile over any number of rows: tiles of 4, then the 1 to 3 left one by one (two tile shapes
// per level, not four: the library's size budget; a decode group is mostly 4 or 8 heads). With
// more rows than one tile, keys go in blocks of 16 KiB of V that every row takes before the next
// block, so all tiles but the first read V from L1, not L2 (d64 prefill 6-9% faster on Sapphire
// Rapids). Each output still sees its FMAs in key order, stored and loaded exactly in between,
// so the blocking changes no bit.
template <class Arch>
inline void pv(std::size_t rows, std::size_t n, std::size_t dv, const float *const *w,
               const float *v, std::size_t ldv, float *const *t) noexcept {
  constexpr std::size_t kMaxRows = 32, kBlockFloats = 4096;
  const std::size_t kb =
      rows <= 4 || rows > kMaxRows || dv > kBlockFloats / 8 ? n : kBlockFloats / dv;
  const float *wb[kMaxRows];
  for (std::size_t j0 = 0; j0 < n; j0 += kb) {
    const std::size_t nb = n - j0 < kb ? n - j0 : kb;
    const float *const *wr = w;
    if (kb < n) {
      for (std::size_t r = 0; r < rows; ++r) wb[r] = w[r] + j0;
      wr = wb;
    }
    const float *vb = v + j0 * ldv;
    std::size_t r = 0;
    for (; r + 4 <= rows; r += 4) pv_tile<Arch, 4>(nb, dv, wr + r, vb, ldv, t + r);
    for (; r < rows; ++r) pv_tile<Arch, 1>(nb, dv, wr + r, vb, ldv, t + r);
  }
}

}  // namespace softmax
}  // namespace attnscore

// Defines a level's softmax `name`, its exp_sum, pv and dequant (a loop the level's flags
// vectorize), and its table row `name_row` (declared
// in finish.h).
#define ATTNSCORE_DEFINE_SOFTMAX_F32(name, level, Arch)                                          \
  ATTNSCORE_KERNEL_ENTRY void name(float *row, std::size_t n) noexcept {                         \
    softmax::span<Arch>(row, n);                                                                 \
  }                                                                                              \
  ATTNSCORE_KERNEL_ENTRY float name##_exp_sum(float *row, std::size_t n, float *m) noexcept {    \
    return softmax::exp_sum<Arch>(row, n, m);                                                    \
  }                                                                                              \
  ATTNSCORE_KERNEL_ENTRY void name##_pv(std::size_t rows, std::size_t n, std::size_t dv,         \
                                        const float *const *w, const float *v, std::size_t ldv,  \
                                        float *const *t) noexcept {                              \
    softmax::pv<Arch>(rows, n, dv, w, v, ldv, t);                                                \
  }                                                                                              \
  ATTNSCORE_KERNEL_ENTRY void name##_dequant(std::size_t n, const std::int8_t *src, float scale, \
                                             float *dst) noexcept {                              \
    for (std::size_t x = 0; x < n; ++x) dst[x] = static_cast<float>(src[x]) * scale;             \
  }                                                                                              \
  extern const SoftmaxF32 name##_row = {#name,          level,     name,                         \
                                        name##_exp_sum, name##_pv, name##_dequant};

#endif  // ATTNSCORE_SOFTMAX_F32_HPP
