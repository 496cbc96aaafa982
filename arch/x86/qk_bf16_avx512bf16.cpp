// SPDX-License-Identifier: Apache-2.0
// The opt-in bf16 dot-product kernel (ATTNSCORE_ATTN_BF16_DOT), a row of the avx512 level that
// also needs AVX512_BF16: vdpbf16ps adds two bf16 products to each f32 lane, 32 products an
// instruction, twice the f32 FMA's. K is packed as pairs of dims (a 16 x 16 transpose of 32-bit
// words per 16 keys x 32 dims), Q's pairs are broadcast from the raw rows. vdpbf16ps rounds to
// nearest even and treats subnormal inputs and results as 0 whatever MXCSR says (the contract
// says so); the sums of a lane are in t order, a pair at a time.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "dispatch/kernels.h"
#include "kernels/generic/tile_bf16dot.hpp"
#include "pack_bf16_pairs.hpp"

namespace attnscore {
namespace {

constexpr std::size_t kMR = 8, kNR = kPairsNR, kW = 16;

// Register map (zmm), R rows:
//   acc[i][v]  2R: S[i][16 v .. 16 v + 15], one key per lane
//   kv[v]      2: the panel's pair p of keys 16 v ..
//   qb         1: pair p of Q row i broadcast (vpbroadcastd from memory)
// Per pair of dims: 2 loads, R broadcasts, 2R vdpbf16ps (32 R products).
template <std::size_t R>
void dot_tile(std::size_t rows, std::size_t cols, std::size_t d, const std::uint16_t *q,
              std::size_t ldq, const float *panel, float *s, std::size_t lds, float scale,
              unsigned flags) noexcept {
  const std::uint16_t *qr[R];
  for (std::size_t i = 0; i < R; ++i) qr[i] = q + (i < rows ? i : rows - 1) * ldq;
  __m512 acc[R][2];
  for (std::size_t i = 0; i < R; ++i) {
    if (flags & kAccumulate) {
      alignas(64) float part[kNR];
      const float *src = s + (i < rows ? i : rows - 1) * lds;
      for (std::size_t j = 0; j < kNR; ++j) part[j] = j < cols ? src[j] : 0.0f;
      acc[i][0] = _mm512_load_ps(part), acc[i][1] = _mm512_load_ps(part + kW);
    } else {
      acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    }
  }
  const auto step = [&](std::size_t p, const std::uint32_t *w) {
    const __m512bh k0 = (__m512bh)_mm512_load_ps(panel + p * kNR);
    const __m512bh k1 = (__m512bh)_mm512_load_ps(panel + p * kNR + kW);
    for (std::size_t i = 0; i < R; ++i) {
      const __m512bh qb = (__m512bh)_mm512_set1_epi32(static_cast<int>(w[i]));
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], qb, k0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], qb, k1);
    }
  };
  std::size_t p = 0;
  for (; 2 * p + 1 < d; ++p) {  // whole pairs: no test inside
    std::uint32_t w[R];
    for (std::size_t i = 0; i < R; ++i) std::memcpy(&w[i], qr[i] + 2 * p, sizeof w[i]);
    step(p, w);
  }
  if (2 * p < d) {  // the last dim of an odd d: its pair's upper half 0
    std::uint32_t w[R];
    for (std::size_t i = 0; i < R; ++i) w[i] = qr[i][2 * p];
    step(p, w);
  }
  const __m512 sc = _mm512_set1_ps((flags & kFinal) ? scale : 1.0f);
  // A large S streamed as the f32 tile streams it (tile_f32.hpp); the driver fences.
  if (streams_tile(flags, cols, kNR, s, lds)) {
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t v = 0; v < 2; ++v)
        _mm512_stream_ps(s + i * lds + v * kW, _mm512_mul_ps(acc[i][v], sc));
    return;
  }
  for (std::size_t i = 0; i < rows; ++i) {
    // Whole tiles straight to S; an edge tile through a buffer (never past its columns).
    alignas(64) float out[kNR];
    float *dst = cols == kNR ? s + i * lds : out;
    for (std::size_t v = 0; v < 2; ++v) {
      const __m512 o = (flags & kFinal) ? _mm512_mul_ps(acc[i][v], sc) : acc[i][v];
      _mm512_storeu_ps(dst + v * kW, o);
    }
    if (cols != kNR)
      for (std::size_t j = 0; j < cols; ++j) s[i * lds + j] = out[j];
  }
}

}  // namespace

// Not chosen on Sapphire Rapids class cores: there vdpbf16ps peaks at half the f32 FMA's GFLOP/s
// (106 against 213 measured on one), and the tile ran 0.73x the default bf16 mode.
ATTNSCORE_DEFINE_BF16DOT(qk_bf16_8x32__avx512bf16, ATTNSCORE_LEVEL_AVX512, ATTNSCORE_CPU_AVX512BF16,
                         pack_pairs, nullptr, kMR, kNR, kTuneSapphireRapids)

}  // namespace attnscore
