// SPDX-License-Identifier: Apache-2.0
// The f32 dot-along-d register tile, written once over the xsimd arch and instantiated per level.
#ifndef ATTNSCORE_TILE_F32_HPP
#define ATTNSCORE_TILE_F32_HPP

#include <cstddef>
#include <xsimd/xsimd.hpp>

namespace attnscore {
namespace tile {

// Computes an MR x NR block of S (rows <= MR, cols <= NR present) from raw row-major Q and K.
//
// Register map (W = lanes of batch<float, Arch>):
//   acc[i][j]  MR*NR vectors, lane l holds sum over t = l (mod W) of q_i[t] * k_j[t]
//   kv[j]      NR vectors, K rows j at t .. t+W-1
//   qv         one vector, Q row i at t .. t+W-1, broadcast over the NR keys by reuse
// Then each acc is reduced with hadd, the d % W tail is added in order, and the scale is applied
// once at the store. Rows/cols past the edge reuse the last present row/col and are not stored,
// so every S element runs the same instruction sequence wherever its tile sits: results are
// bit-identical for any split of S into blocks.
template <class Arch, std::size_t MR, std::size_t NR>
inline void qk_f32_dot(std::size_t rows, std::size_t cols, std::size_t d, const float *q,
                       std::size_t ldq, const float *k, std::size_t ldk, float *s, std::size_t lds,
                       float scale) noexcept {
  using B = xsimd::batch<float, Arch>;
  constexpr std::size_t W = B::size;
  const float *qr[MR];
  const float *kr[NR];
  for (std::size_t i = 0; i < MR; ++i) qr[i] = q + (i < rows ? i : rows - 1) * ldq;
  for (std::size_t j = 0; j < NR; ++j) kr[j] = k + (j < cols ? j : cols - 1) * ldk;

  B acc[MR][NR];
  for (std::size_t i = 0; i < MR; ++i)
    for (std::size_t j = 0; j < NR; ++j) acc[i][j] = B(0.0f);
  std::size_t t = 0;
  for (; t + W <= d; t += W) {
    B kv[NR];
    for (std::size_t j = 0; j < NR; ++j) kv[j] = B::load_unaligned(kr[j] + t);
    for (std::size_t i = 0; i < MR; ++i) {
      const B qv = B::load_unaligned(qr[i] + t);
      for (std::size_t j = 0; j < NR; ++j) acc[i][j] = xsimd::fma(qv, kv[j], acc[i][j]);
    }
  }
  float sum[MR][NR];
  for (std::size_t i = 0; i < MR; ++i)
    for (std::size_t j = 0; j < NR; ++j) sum[i][j] = xsimd::hadd(acc[i][j]);
  for (; t < d; ++t)
    for (std::size_t i = 0; i < MR; ++i)
      for (std::size_t j = 0; j < NR; ++j) sum[i][j] += qr[i][t] * kr[j][t];
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) s[i * lds + j] = sum[i][j] * scale;
}

}  // namespace tile
}  // namespace attnscore

#endif  // ATTNSCORE_TILE_F32_HPP
