// SPDX-License-Identifier: Apache-2.0
// The 16-bit float kernels: tile_f32.hpp's templates reading binary16 (x86 F16C / AVX-512
// vcvtph2ps, NEON vcvt_f32_f16) or bfloat16 (a widening shift) through a converting Elem, per
// arch, and the row converters of the same arch. The prefill micro-kernel is the f32 one of the
// same level (kernels.h, KernelF16::f32).
#ifndef ATTNSCORE_TILE_F16_HPP
#define ATTNSCORE_TILE_F16_HPP

#include <cstddef>
#include <cstdint>
#include <xsimd/xsimd.hpp>

#if defined(__ARM_NEON)
#include <arm_neon.h>
#endif

#include "kernels/generic/tile_f32.hpp"
#include "kernels/scalar/convert_bf16.hpp"

namespace attnscore {
namespace tile {

// Elem<Arch, uint16_t> (binary16) and Elem<Arch, Bf16> add, for the row converters: `store` (W
// floats to the 16-bit format, rounded to nearest even) and `narrow_one` (one float).
#if defined(__F16C__) && defined(__AVX2__) && defined(__FMA__)
template <>
struct Elem<xsimd::fma3<xsimd::avx2>, std::uint16_t> {
  using B = xsimd::batch<float, xsimd::fma3<xsimd::avx2>>;
  static B load(const std::uint16_t *p) noexcept {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
  }
  static B load_aligned(const std::uint16_t *p) noexcept { return load(p); }
  static float one(std::uint16_t h) noexcept { return _cvtsh_ss(h); }
  static void store(std::uint16_t *p, const B &v) noexcept {
    _mm_storeu_si128(reinterpret_cast<__m128i *>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static std::uint16_t narrow_one(float x) noexcept {
    return _cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT);
  }
};
#endif

#if defined(__AVX512F__) && defined(__F16C__)
// The all-ones maskz forms are the plain instructions; the plain intrinsics trip GCC 12's false
// -Wmaybe-uninitialized in its own headers (as in transpose_f32.hpp).
template <>
struct Elem<xsimd::avx512f, std::uint16_t> {
  using B = xsimd::batch<float, xsimd::avx512f>;
  static B load(const std::uint16_t *p) noexcept {
    return _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
  }
  static B load_aligned(const std::uint16_t *p) noexcept { return load(p); }
  static float one(std::uint16_t h) noexcept { return _cvtsh_ss(h); }
  static void store(std::uint16_t *p, const B &v) noexcept {
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(p),
                        _mm512_maskz_cvtps_ph(0xffff, v, _MM_FROUND_TO_NEAREST_INT));
  }
  static std::uint16_t narrow_one(float x) noexcept {
    return _cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT);
  }
};
#endif

#if defined(__ARM_NEON)
// AArch64 FCVTL / FCVTN; armv7 NEON-VFPv4 VCVT.F32.F16 / VCVT.F16.F32 (built with
// -mfp16-format=ieee so that the binary16 vector types exist).
#if defined(__aarch64__)
using NeonArch = xsimd::neon64;
#else
using NeonArch = xsimd::neon;
#endif
template <>
struct Elem<NeonArch, std::uint16_t> {
  using B = xsimd::batch<float, NeonArch>;
  static B load(const std::uint16_t *p) noexcept {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
  }
  static B load_aligned(const std::uint16_t *p) noexcept { return load(p); }
  static float one(std::uint16_t h) noexcept {
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
  }
  static void store(std::uint16_t *p, const B &v) noexcept {
    vst1_u16(p, vreinterpret_u16_f16(vcvt_f16_f32(v)));
  }
  static std::uint16_t narrow_one(float x) noexcept {
    return vget_lane_u16(vreinterpret_u16_f16(vcvt_f16_f32(vdupq_n_f32(x))), 0);
  }
};
#endif

// bfloat16: the load widens each element to 32 bits with it in the top half (exact); W floats
// are narrowed by the scalar rounding (convert_bf16.hpp), which each level compiles itself.
template <class Arch>
struct Bf16Elem {
  using B = xsimd::batch<float, Arch>;
  static float one(std::uint16_t h) noexcept { return bf16_to_f32(h); }
  static void store(std::uint16_t *p, const B &v) noexcept {
    alignas(64) float x[B::size];
    v.store_aligned(x);
    for (std::size_t i = 0; i < B::size; ++i) p[i] = f32_to_bf16(x[i]);
  }
  static std::uint16_t narrow_one(float x) noexcept { return f32_to_bf16(x); }
};
#if defined(__SSE2__)
template <>
struct Elem<xsimd::sse2, Bf16> : Bf16Elem<xsimd::sse2> {
  static B load(const std::uint16_t *p) noexcept {
    const __m128i h = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(p));
    return _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), h));
  }
  static B load_aligned(const std::uint16_t *p) noexcept { return load(p); }
};
#endif
#if defined(__AVX2__) && defined(__FMA__)
template <>
struct Elem<xsimd::fma3<xsimd::avx2>, Bf16> : Bf16Elem<xsimd::fma3<xsimd::avx2>> {
  static B load(const std::uint16_t *p) noexcept {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static B load_aligned(const std::uint16_t *p) noexcept { return load(p); }
};
#endif
#if defined(__AVX512F__)
template <>
struct Elem<xsimd::avx512f, Bf16> : Bf16Elem<xsimd::avx512f> {
  static B load(const std::uint16_t *p) noexcept {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
    // The maskz forms, as for binary16 above (GCC 12's false warning on the plain ones).
    return _mm512_castsi512_ps(
        _mm512_maskz_slli_epi32(0xffff, _mm512_maskz_cvtepu16_epi32(0xffff, h), 16));
  }
  static B load_aligned(const std::uint16_t *p) noexcept { return load(p); }
};
#endif
#if defined(__ARM_NEON)
template <>
struct Elem<NeonArch, Bf16> : Bf16Elem<NeonArch> {
  static B load(const std::uint16_t *p) noexcept {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
  }
  static B load_aligned(const std::uint16_t *p) noexcept { return load(p); }
};
#endif

// The row converters of an arch and 16-bit format T: n elements, W at a time, the tail one by one.
template <class Arch, class T>
inline void widen_row(std::size_t n, const std::uint16_t *src, float *dst) noexcept {
  using E = Elem<Arch, T>;
  constexpr std::size_t W = xsimd::batch<float, Arch>::size;
  std::size_t i = 0;
  for (; i + W <= n; i += W) E::load(src + i).store_unaligned(dst + i);
  for (; i < n; ++i) dst[i] = E::one(src[i]);
}

template <class Arch, class T>
inline void narrow_row(std::size_t n, const float *src, std::uint16_t *dst) noexcept {
  using E = Elem<Arch, T>;
  using B = xsimd::batch<float, Arch>;
  constexpr std::size_t W = B::size;
  std::size_t i = 0;
  for (; i + W <= n; i += W) E::store(dst + i, B::load_unaligned(src + i));
  for (; i < n; ++i) dst[i] = E::narrow_one(src[i]);
}

}  // namespace tile
}  // namespace attnscore

// Defines a level's 16-bit float kernel `name` of format T (std::uint16_t: binary16, Bf16) and its
// table row `name_kernel` (kernels.h) on top of the same level's f32 kernel `f32name` (NV * W keys
// per panel, KB * W keys per decode tile, as given to ATTNSCORE_DEFINE_QK_F32 there).
#define ATTNSCORE_DEFINE_QK_16(name, T, f32name, level, Arch, NV, KB)                              \
  ATTNSCORE_KERNEL_ENTRY void name##_pack(std::size_t cols, std::size_t d, const std::uint16_t *k, \
                                          std::size_t ldk, float *panel) noexcept {                \
    tile::pack_panel<Arch, NV * xsimd::batch<float, Arch>::size, T>(cols, d, k, ldk, panel);       \
  }                                                                                                \
  ATTNSCORE_KERNEL_ENTRY void name##_dec(                                                          \
      std::size_t rows, std::size_t cols, std::size_t d, const std::uint16_t *q, std::size_t ldq,  \
      const std::uint16_t *k, std::size_t ldk, float *s, std::size_t lds, float scale) noexcept {  \
    tile::qk_f32_decode<Arch, KB, T>(rows, cols, d, q, ldq, k, ldk, s, lds, scale);                \
  }                                                                                                \
  ATTNSCORE_KERNEL_ENTRY void name##_cdec(std::size_t rows, std::size_t cols, std::size_t d,       \
                                          const std::uint16_t *q, std::size_t ldq,                 \
                                          const std::uint16_t *panels, std::size_t stride,         \
                                          float *s, std::size_t lds, float scale) noexcept {       \
    tile::qk_f32_panels_decode<Arch, NV, 4, T>(rows, cols, d, q, ldq, panels, stride, s, lds,      \
                                               scale);                                             \
  }                                                                                                \
  ATTNSCORE_KERNEL_ENTRY void name##_to_f32(std::size_t n, const std::uint16_t *src,               \
                                            float *dst) noexcept {                                 \
    tile::widen_row<Arch, T>(n, src, dst);                                                         \
  }                                                                                                \
  ATTNSCORE_KERNEL_ENTRY void name##_narrow(std::size_t n, const float *src,                       \
                                            std::uint16_t *dst) noexcept {                         \
    tile::narrow_row<Arch, T>(n, src, dst);                                                        \
  }                                                                                                \
  extern const KernelF16 name##_kernel = {#name,                                                   \
                                          level,                                                   \
                                          &f32name##_kernel,                                       \
                                          name##_pack,                                             \
                                          KB * xsimd::batch<float, Arch>::size,                    \
                                          name##_dec,                                              \
                                          name##_cdec,                                             \
                                          name##_to_f32,                                           \
                                          name##_narrow,                                           \
                                          0,                                                       \
                                          nullptr,                                                 \
                                          0,                                                       \
                                          0,                                                       \
                                          tile::kDecodeGroupRows<Arch>,                            \
                                          nullptr,                                                 \
                                          0,                                                       \
                                          0,                                                       \
                                          kTuneGeneric,                                            \
                                          nullptr};

#endif  // ATTNSCORE_TILE_F16_HPP
