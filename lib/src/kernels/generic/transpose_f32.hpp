// SPDX-License-Identifier: Apache-2.0
// In-register W x W transposes of float batches, for packing K panels, and the lane-sum tree of
// the decode's dot products. xsimd 8.1 has neither, so each x86 and NEON level has its own,
// guarded by the macros of the flags it is compiled with; other archs go through memory.
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

// The decode's horizontal sums: v holds W vectors of W lanes (vector k at v + k * W, 64-byte
// aligned); lane k of the result is the sum of vector k's lanes in one fixed tree, the same at
// every level: x[l] += x[l + h] for h = W/2, W/4, ..., 1, then x[0]. The SIMD forms below reduce
// W vectors at once (W - 1 adds and 2(W - 1) shuffles) and give the same bits as this one.
template <class Arch>
struct LaneSums {
  using B = xsimd::batch<float, Arch>;
  static B run(const float *v) noexcept {
    constexpr std::size_t W = B::size;
    alignas(64) float out[W];
    for (std::size_t k = 0; k < W; ++k) {
      float x[W];
      for (std::size_t l = 0; l < W; ++l) x[l] = v[k * W + l];
      for (std::size_t h = W / 2; h >= 1; h /= 2)
        for (std::size_t l = 0; l < h; ++l) x[l] = x[l] + x[l + h];
      out[k] = x[0];
    }
    return B::load_aligned(out);
  }
};

#if defined(__SSE2__)
// h = 2 then h = 1 within 128 bits: [x0 x1 y0 y1] + [x2 x3 y2 y3], then [x0 x2 y0 y2] + [x1 x3 y1
// y3].
inline __m128 lane_sums_h2(__m128 x, __m128 y) noexcept {
  return _mm_add_ps(_mm_shuffle_ps(x, y, 0x44), _mm_shuffle_ps(x, y, 0xee));
}
inline __m128 lane_sums_h1(__m128 x, __m128 y) noexcept {
  return _mm_add_ps(_mm_shuffle_ps(x, y, 0x88), _mm_shuffle_ps(x, y, 0xdd));
}
template <>
struct LaneSums<xsimd::sse2> {
  static xsimd::batch<float, xsimd::sse2> run(const float *v) noexcept {
    const __m128 a = lane_sums_h2(_mm_load_ps(v), _mm_load_ps(v + 4));
    const __m128 b = lane_sums_h2(_mm_load_ps(v + 8), _mm_load_ps(v + 12));
    return lane_sums_h1(a, b);
  }
};
#endif

#if defined(__AVX2__) && defined(__FMA__)
template <>
struct LaneSums<xsimd::fma3<xsimd::avx2>> {
  // h = 4 across the 128-bit halves ([key k | key k + 4]), then h = 2 and h = 1 within them.
  static xsimd::batch<float, xsimd::fma3<xsimd::avx2>> run(const float *v) noexcept {
    __m256 p[4];
    for (int k = 0; k < 4; ++k) {
      const __m256 a = _mm256_load_ps(v + k * 8), b = _mm256_load_ps(v + (k + 4) * 8);
      p[k] = _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
    }
    const auto h2 = [](__m256 x, __m256 y) {
      return _mm256_add_ps(_mm256_shuffle_ps(x, y, 0x44), _mm256_shuffle_ps(x, y, 0xee));
    };
    const __m256 x = h2(p[0], p[1]), y = h2(p[2], p[3]);
    return _mm256_add_ps(_mm256_shuffle_ps(x, y, 0x88), _mm256_shuffle_ps(x, y, 0xdd));
  }
};
#endif

#if defined(__AVX512F__)
template <>
struct LaneSums<xsimd::avx512f> {
  // h = 8: [key a | key a + 4] for a in {c, c + 8}; h = 4: P_c = [c, c + 4, c + 8, c + 12] by
  // 128-bit block; h = 2: [P_c | P_c+1] per block; h = 1 leaves block b = keys 4b ... 4b + 3.
  static xsimd::batch<float, xsimd::avx512f> run(const float *v) noexcept {
    constexpr __mmask16 kAll = 0xffff;
    const auto h8 = [&](int a) {
      const __m512 x = _mm512_load_ps(v + a * 16), y = _mm512_load_ps(v + (a + 4) * 16);
      return _mm512_add_ps(_mm512_maskz_shuffle_f32x4(kAll, x, y, 0x44),
                           _mm512_maskz_shuffle_f32x4(kAll, x, y, 0xee));
    };
    __m512 p[4];
    for (int c = 0; c < 4; ++c) {
      const __m512 x = h8(c), y = h8(c + 8);
      p[c] = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(kAll, x, y, 0x88),
                           _mm512_maskz_shuffle_f32x4(kAll, x, y, 0xdd));
    }
    const auto h2 = [&](__m512 x, __m512 y) {
      return _mm512_add_ps(_mm512_maskz_shuffle_ps(kAll, x, y, 0x44),
                           _mm512_maskz_shuffle_ps(kAll, x, y, 0xee));
    };
    const __m512 x = h2(p[0], p[1]), y = h2(p[2], p[3]);
    return _mm512_add_ps(_mm512_maskz_shuffle_ps(kAll, x, y, 0x88),
                         _mm512_maskz_shuffle_ps(kAll, x, y, 0xdd));
  }
};
#endif

#if defined(__ARM_NEON)
// [a0 + a2, a1 + a3, b0 + b2, b1 + b3], then [x0 + x1, x2 + x3, y0 + y1, y2 + y3].
inline float32x4_t lane_sums_neon(const float *v) noexcept {
  const auto h2 = [](float32x4_t a, float32x4_t b) {
    return vaddq_f32(vcombine_f32(vget_low_f32(a), vget_low_f32(b)),
                     vcombine_f32(vget_high_f32(a), vget_high_f32(b)));
  };
  const float32x4_t x = h2(vld1q_f32(v), vld1q_f32(v + 4)),
                    y = h2(vld1q_f32(v + 8), vld1q_f32(v + 12));
  const float32x4x2_t u = vuzpq_f32(x, y);
  return vaddq_f32(u.val[0], u.val[1]);
}
template <>
struct LaneSums<xsimd::neon> {
  static xsimd::batch<float, xsimd::neon> run(const float *v) noexcept { return lane_sums_neon(v); }
};
#if defined(__aarch64__)
template <>
struct LaneSums<xsimd::neon64> {
  static xsimd::batch<float, xsimd::neon64> run(const float *v) noexcept {
    return lane_sums_neon(v);
  }
};
#endif
#endif

}  // namespace tile
}  // namespace attnscore

#endif  // ATTNSCORE_TRANSPOSE_F32_HPP
