// SPDX-License-Identifier: Apache-2.0
// In-register W x W transposes of float batches, for packing K panels. xsimd 8.1 has no
// transpose, so each x86 level has its own, guarded by the macros of the flags it is compiled
// with; other archs fall back to a round trip through memory.
#ifndef ATTNSCORE_TRANSPOSE_F32_HPP
#define ATTNSCORE_TRANSPOSE_F32_HPP

#include <cstddef>
#include <xsimd/xsimd.hpp>

namespace attnscore {
namespace tile {

// r[i] lane j becomes r[j] lane i.
template <class Arch>
struct Transpose {
  using B = xsimd::batch<float, Arch>;
  static void run(B *r) noexcept {
    constexpr std::size_t W = B::size;
    alignas(64) float m[W * W];
    for (std::size_t i = 0; i < W; ++i) r[i].store_aligned(m + i * W);
    for (std::size_t i = 0; i < W; ++i) {
      alignas(64) float col[W];
      for (std::size_t j = 0; j < W; ++j) col[j] = m[j * W + i];
      r[i] = B::load_aligned(col);
    }
  }
};

#if defined(__SSE2__)
template <>
struct Transpose<xsimd::sse2> {
  static void run(xsimd::batch<float, xsimd::sse2> *r) noexcept {
    __m128 a = r[0], b = r[1], c = r[2], d = r[3];
    _MM_TRANSPOSE4_PS(a, b, c, d);
    r[0] = a, r[1] = b, r[2] = c, r[3] = d;
  }
};
#endif

#if defined(__AVX2__) && defined(__FMA__)
template <>
struct Transpose<xsimd::fma3<xsimd::avx2>> {
  // 8 x 8 in three rounds of 8: unpack pairs, shuffle quads, swap 128-bit halves.
  static void run(xsimd::batch<float, xsimd::fma3<xsimd::avx2>> *r) noexcept {
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
      u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
      u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
      u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
      u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 4; ++i) {
      r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
      r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
  }
};
#endif

#if defined(__AVX512F__)
template <>
struct Transpose<xsimd::avx512f> {
  // 16 x 16 in four rounds of 16: unpack pairs, shuffle quads, then two rounds of 128-bit lane
  // shuffles. The all-ones maskz forms compile to the plain instructions; the plain intrinsics
  // trip GCC 12's false -Wmaybe-uninitialized in its own headers.
  static void run(xsimd::batch<float, xsimd::avx512f> *r) noexcept {
    constexpr __mmask16 kAll = 0xffff;
    __m512 t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
      t[i] = _mm512_maskz_unpacklo_ps(kAll, r[i], r[i + 1]);
      t[i + 1] = _mm512_maskz_unpackhi_ps(kAll, r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
      u[i] = _mm512_maskz_shuffle_ps(kAll, t[i], t[i + 2], 0x44);
      u[i + 1] = _mm512_maskz_shuffle_ps(kAll, t[i], t[i + 2], 0xee);
      u[i + 2] = _mm512_maskz_shuffle_ps(kAll, t[i + 1], t[i + 3], 0x44);
      u[i + 3] = _mm512_maskz_shuffle_ps(kAll, t[i + 1], t[i + 3], 0xee);
    }
    // Now each 128-bit lane of u[4g + c] holds a 4-row column piece of row group g; two rounds
    // of lane shuffles gather the four groups' pieces of each column.
    for (int g = 0; g < 16; g += 8) {
      for (int c = 0; c < 4; ++c) {
        t[g + c] = _mm512_maskz_shuffle_f32x4(kAll, u[g + c], u[g + 4 + c], 0x88);
        t[g + 4 + c] = _mm512_maskz_shuffle_f32x4(kAll, u[g + c], u[g + 4 + c], 0xdd);
      }
    }
    for (int c = 0; c < 8; ++c) {
      r[c] = _mm512_maskz_shuffle_f32x4(kAll, t[c], t[c + 8], 0x88);
      r[c + 8] = _mm512_maskz_shuffle_f32x4(kAll, t[c], t[c + 8], 0xdd);
    }
  }
};
#endif

}  // namespace tile
}  // namespace attnscore

#endif  // ATTNSCORE_TRANSPOSE_F32_HPP
