// SPDX-License-Identifier: Apache-2.0
// The limits the benchmark measures ours against, in the same binary: the FMA peak of one core
// at a level, and the read and write bandwidth of the memory level that holds a buffer. Compiled
// once per level with that level's flags (ATTNSCORE_PROBE_LEVEL), so xsimd::default_arch is its
// widest arch.
#include <xsimd/xsimd.hpp>
#if defined(__SSE2__)
#include <immintrin.h>
#elif defined(__ARM_NEON)
#include <arm_neon.h>
#endif

#include "attnscore/attnscore.h"
#include "bench.hpp"
#include "kernels/generic/tile_f32.hpp"

namespace {

using Arch = xsimd::default_arch;
using B = xsimd::batch<float, Arch>;

// The f32 limits, at every level but avxvnni: an int8-only level (f32 runs avx2's probe),
// numbered above avx512, which the bandwidth probe's choice of the highest level would take.
// (Not in the objects built for the bf16 dot products alone: ATTNSCORE_PROBE_BF16DOT, _AMXBF16.)
#if !(defined(__AVXVNNI__) && !defined(__AVX512F__)) && !defined(ATTNSCORE_PROBE_BF16DOT) && \
    !defined(ATTNSCORE_PROBE_AMXBF16)
#define ATTNSCORE_PROBE_F32 1
// `iters` steps of 12 independent multiply-adds (FMAs where the level has them, through the
// kernels' own tile::fmadd, since xsimd 8.1 has no fused form at avx512f): 12 chains
// cover 2 pipes x 4-6 cycles of latency, and 12 + 2 registers fit every level's register file.
float fma_loop(std::size_t iters) {
  constexpr int kChains = 12;
  B acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = B(1.0f + c * 1e-3f);
  const B a(0.999999f), b(1e-7f);
  for (std::size_t i = 0; i < iters; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = attnscore::tile::fmadd(acc[c], a, b);
  B sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum += acc[c];
  return xsimd::hadd(sum);
}

double peak_flops_per_iter() { return 12.0 * B::size * 2.0; }

// Sums n floats (n a multiple of 4 * W) with 4 independent vector chains: bound by reads.
float read_sum(const float *p, std::size_t n) {
  B s0(0.0f), s1(0.0f), s2(0.0f), s3(0.0f);
  for (std::size_t i = 0; i < n; i += 4 * B::size) {
    s0 += B::load_aligned(p + i);
    s1 += B::load_aligned(p + i + B::size);
    s2 += B::load_aligned(p + i + 2 * B::size);
    s3 += B::load_aligned(p + i + 3 * B::size);
  }
  return xsimd::hadd(s0 + s1 + s2 + s3);
}

// Writes n floats (n a multiple of W, 64-byte aligned) with plain vector stores, as the kernels
// write S: each line is read for ownership before it is written.
float write_plain(float *p, std::size_t n) {
  const B v(1.0f);
  for (std::size_t i = 0; i < n; i += B::size) v.store_aligned(p + i);
  return 0.0f;
}

// The same with streaming stores where the level has them (no read for ownership), else null:
// the write limit is the faster of the two.
#if defined(__SSE2__)
float write_stream(float *p, std::size_t n) {
  for (std::size_t i = 0; i < n; i += B::size) {
#if defined(__AVX512F__)
    _mm512_stream_ps(p + i, _mm512_set1_ps(1.0f));
#elif defined(__AVX__)
    _mm256_stream_ps(p + i, _mm256_set1_ps(1.0f));
#else
    _mm_stream_ps(p + i, _mm_set1_ps(1.0f));
#endif
  }
  _mm_sfence();
  return 0.0f;
}
#else
constexpr float (*write_stream)(float *, std::size_t) = nullptr;
#endif
#endif

// The int8 dot-product peak: independent chains of the level's widest int8 multiply-add
// (vpdpbusd zmm: 64 MACs; ymm: 32; smmla: 32; sdot: 16), as the s8 kernels use it. On x86 a
// step is one asm block on fixed registers: GCC 12 kept an intrinsic loop's accumulators on the
// stack or copied each through a second register, and 12 chains left no margin over the latency:
// that probe read 3-12% under this one, and under what the s8 kernel's own inner loop reaches.
#define ATTNSCORE_DP4(a, b, c, d) ATTNSCORE_DP(a) ATTNSCORE_DP(b) ATTNSCORE_DP(c) ATTNSCORE_DP(d)
// `iters` steps of ATTNSCORE_DP on 24 accumulators in zmm2-25, operands a and b.
#define ATTNSCORE_ZMM24_LOOP(a_init, b_init)                                                    \
  const __m512i a = a_init, b = b_init;                                                         \
  for (std::size_t i = 0; i < iters; ++i)                                                       \
    __asm__ volatile(ATTNSCORE_DP4(2, 3, 4, 5) ATTNSCORE_DP4(6, 7, 8, 9)                        \
                         ATTNSCORE_DP4(10, 11, 12, 13) ATTNSCORE_DP4(14, 15, 16, 17)            \
                             ATTNSCORE_DP4(18, 19, 20, 21) ATTNSCORE_DP4(22, 23, 24, 25)        \
                     :                                                                          \
                     : "v"(a), "v"(b)                                                           \
                     : "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
                       "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18",  \
                       "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25");          \
  return 0
#if defined(__AVX512VNNI__) || defined(__AVXVNNI__)
#if defined(__AVX512VNNI__)
// 24 chains in zmm2-25, the operands in two more.
#define ATTNSCORE_DP(r) "vpdpbusd %1, %0, %%zmm" #r "\n\t"
constexpr double kI8OpsPerIter = 24 * 64 * 2;  // chains x MACs x 2
int i8_loop(std::size_t iters) { ATTNSCORE_ZMM24_LOOP(_mm512_set1_epi8(3), _mm512_set1_epi8(-5)); }
#else
// 14 chains in ymm2-15, the operands in the other two of the 16.
#define ATTNSCORE_DP(r) "%{vex%} vpdpbusd %1, %0, %%ymm" #r "\n\t"
constexpr double kI8OpsPerIter = 14 * 32 * 2;
int i8_loop(std::size_t iters) {
  const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-5);
  for (std::size_t i = 0; i < iters; ++i)
    __asm__ volatile(ATTNSCORE_DP4(2, 3, 4, 5) ATTNSCORE_DP4(6, 7, 8, 9)
                         ATTNSCORE_DP4(10, 11, 12, 13) ATTNSCORE_DP(14) ATTNSCORE_DP(15)
                     :
                     : "x"(a), "x"(b)
                     : "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
                       "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
  return 0;
}
#endif
const bool registered_i8 =
    bench::register_probe_i8({ATTNSCORE_PROBE_LEVEL, i8_loop, kI8OpsPerIter});
#elif defined(__ARM_FEATURE_DOTPROD)
// smmla where the level has it (32 products an instruction, as the neon_i8mm kernel uses it),
// else sdot (16).
#if defined(__ARM_FEATURE_MATMUL_INT8)
constexpr int kI8Macs = 32;
int32x4_t i8_madd(int32x4_t acc, int8x16_t a, int8x16_t b) { return vmmlaq_s32(acc, a, b); }
#else
constexpr int kI8Macs = 16;
int32x4_t i8_madd(int32x4_t acc, int8x16_t a, int8x16_t b) { return vdotq_s32(acc, a, b); }
#endif
int i8_loop(std::size_t iters) {
  constexpr int kChains = 12;
  int32x4_t acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = vdupq_n_s32(c);
  const int8x16_t a = vdupq_n_s8(3), b = vdupq_n_s8(-5);
  for (std::size_t i = 0; i < iters; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = i8_madd(acc[c], a, b);
  int32x4_t sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = vaddq_s32(sum, acc[c]);
  return vgetq_lane_s32(sum, 0);
}
const bool registered_i8 =
    bench::register_probe_i8({ATTNSCORE_PROBE_LEVEL, i8_loop, 12 * kI8Macs * 2});
#endif

#if defined(ATTNSCORE_PROBE_BF16DOT)
// The bf16 dot-product peak: 24 chains of vdpbf16ps zmm (32 products and their adds each), as the
// int8 probe's.
#define ATTNSCORE_DP(r) "vdpbf16ps %1, %0, %%zmm" #r "\n\t"
int bf16dot_loop(std::size_t iters) {
  ATTNSCORE_ZMM24_LOOP(_mm512_set1_epi32(0x3f803f80), _mm512_set1_epi32(0x3c003c00));
}
const bool registered_bf16dot =
    bench::register_probe_bf16dot({ATTNSCORE_CPU_AVX512BF16, bf16dot_loop, 24 * 32 * 2});
#endif

#if defined(ATTNSCORE_PROBE_AMXBF16)
// The AMX peak: 4 independent tdpbf16ps a step (16 x 16 x 32 products and their adds each), the
// kernel's 2 x 2 tiles, on tiles of zeros (the speed does not depend on the values).
int amx_loop(std::size_t iters) {
  alignas(64) unsigned char cfg[64] = {1};  // palette 1; then colsb[16] at 16, rows[16] at 48
  for (int t = 0; t < 8; ++t) cfg[16 + 2 * t] = 64, cfg[48 + t] = 16;
  __asm__ volatile("" ::: "memory");  // the stores before ldtilecfg reads them
  _tile_loadconfig(cfg);
  _tile_zero(4);
  _tile_zero(5);
  _tile_zero(6);
  _tile_zero(7);
  for (std::size_t i = 0; i < iters; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_release();
  return 0;
}
const bool registered_amx =
    bench::register_probe_bf16dot({ATTNSCORE_CPU_AMXBF16, amx_loop, 4 * 16 * 16 * 32 * 2});
#endif

#ifdef ATTNSCORE_PROBE_F32
const bool registered = bench::register_probe(
    {ATTNSCORE_PROBE_LEVEL, fma_loop, peak_flops_per_iter(), read_sum, write_plain, write_stream});
#endif

}  // namespace
