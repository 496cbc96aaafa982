// SPDX-License-Identifier: Apache-2.0
// The f16 kernels: tile_f32.hpp's templates reading binary16 through a converting Elem, per arch
// (x86 F16C / AVX-512 vcvtph2ps, NEON vcvt_f32_f16), and the row converters of the same arch.
// The prefill micro-kernel is the f32 one of the same level (kernels.h, KernelF16::f32).
#ifndef ATTNSCORE_TILE_F16_HPP
#define ATTNSCORE_TILE_F16_HPP

#include <cstddef>
#include <cstdint>
#include <xsimd/xsimd.hpp>

#if defined(__ARM_NEON)
#include <arm_neon.h>
#endif

#include "kernels/generic/tile_f32.hpp"

namespace attnscore {
namespace tile {

// Elem<Arch, uint16_t> adds, for the row converters: `store` (W floats to binary16, rounded to
// nearest even) and `one_f16` (one float).
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
  static std::uint16_t one_f16(float x) noexcept { return _cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT); }
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
  static std::uint16_t one_f16(float x) noexcept { return _cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT); }
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
  static std::uint16_t one_f16(float x) noexcept {
    return vget_lane_u16(vreinterpret_u16_f16(vcvt_f16_f32(vdupq_n_f32(x))), 0);
  }
};
#endif

// The row converters of an arch: n elements, W at a time, the tail one by one.
template <class Arch>
inline void f16_to_f32_row(std::size_t n, const std::uint16_t *src, float *dst) noexcept {
  using E = Elem<Arch, std::uint16_t>;
  constexpr std::size_t W = xsimd::batch<float, Arch>::size;
  std::size_t i = 0;
  for (; i + W <= n; i += W) E::load(src + i).store_unaligned(dst + i);
  for (; i < n; ++i) dst[i] = E::one(src[i]);
}

template <class Arch>
inline void f32_to_f16_row(std::size_t n, const float *src, std::uint16_t *dst) noexcept {
  using E = Elem<Arch, std::uint16_t>;
  using B = xsimd::batch<float, Arch>;
  constexpr std::size_t W = B::size;
  std::size_t i = 0;
  for (; i + W <= n; i += W) E::store(dst + i, B::load_unaligned(src + i));
  for (; i < n; ++i) dst[i] = E::one_f16(src[i]);
}

}  // namespace tile
}  // namespace attnscore

// Defines a level's f16 kernel `name` and its table row `name_kernel` (kernels.h) on top of the
// same level's f32 kernel `f32name` (NV * W keys per panel, KB * W keys per decode tile, as
// given to ATTNSCORE_DEFINE_QK_F32 there).
#define ATTNSCORE_DEFINE_QK_F16(name, f32name, level, Arch, NV, KB)                                \
  ATTNSCORE_KERNEL_ENTRY void name##_pack(std::size_t cols, std::size_t d, const std::uint16_t *k, \
                                          std::size_t ldk, float *panel) noexcept {                \
    tile::pack_panel<Arch, NV * xsimd::batch<float, Arch>::size, std::uint16_t>(cols, d, k, ldk,   \
                                                                                panel);            \
  }                                                                                                \
  ATTNSCORE_KERNEL_ENTRY void name##_dec(                                                          \
      std::size_t rows, std::size_t cols, std::size_t d, const std::uint16_t *q, std::size_t ldq,  \
      const std::uint16_t *k, std::size_t ldk, float *s, std::size_t lds, float scale) noexcept {  \
    tile::qk_f32_decode<Arch, KB, std::uint16_t>(rows, cols, d, q, ldq, k, ldk, s, lds, scale);    \
  }                                                                                                \
  ATTNSCORE_KERNEL_ENTRY void name##_cdec(std::size_t rows, std::size_t cols, std::size_t d,       \
                                          const std::uint16_t *q, std::size_t ldq,                 \
                                          const std::uint16_t *panels, std::size_t stride,         \
                                          float *s, std::size_t lds, float scale) noexcept {       \
    tile::qk_f32_panels_decode<Arch, NV, 4, std::uint16_t>(rows, cols, d, q, ldq, panels, stride,  \
                                                           s, lds, scale);                         \
  }                                                                                                \
  ATTNSCORE_KERNEL_ENTRY void name##_to_f32(std::size_t n, const std::uint16_t *src,               \
                                            float *dst) noexcept {                                 \
    tile::f16_to_f32_row<Arch>(n, src, dst);                                                       \
  }                                                                                                \
  ATTNSCORE_KERNEL_ENTRY void name##_to_f16(std::size_t n, const float *src,                       \
                                            std::uint16_t *dst) noexcept {                         \
    tile::f32_to_f16_row<Arch>(n, src, dst);                                                       \
  }                                                                                                \
  extern const KernelF16 name##_kernel = {#name,                                                   \
                                          level,                                                   \
                                          &f32name##_kernel,                                       \
                                          name##_pack,                                             \
                                          KB * xsimd::batch<float, Arch>::size,                    \
                                          name##_dec,                                              \
                                          name##_cdec,                                             \
                                          name##_to_f32,                                           \
                                          name##_to_f16,                                           \
                                          0,                                                       \
                                          nullptr,                                                 \
                                          0,                                                       \
                                          0,                                                       \
                                          tile::kDecodeGroupRows<Arch>};

#endif  // ATTNSCORE_TILE_F16_HPP
