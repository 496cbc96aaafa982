// SPDX-License-Identifier: Apache-2.0
// The s8 kernels, written once over a level's int8 multiply-accumulate ("Ops", below) and its
// xsimd arch, and instantiated per level in arch/ with the Ops type in an anonymous namespace
// there (so every instance is local to its level's object file).
//
// An Ops type provides:
//   Arch, Acc = xsimd::batch<int32_t, Arch>   the accumulator (W int32 lanes)
//   kKeysPerVec                               keys one accumulator covers (W, or W/2 when each
//                                             key's sum is split over two lanes)
//   Qe, prep_q(src, d, dst)                   a Q row converted once per tile call into the
//                                             operand form (u8, int16 ...), padded to 4 elements
//   KV load_k(p)                              kKeysPerVec keys x 4 dims of the panel
//   QB bcast(p)                               4 dims of a prepared Q row, for every key
//   Acc madd(acc, qb, kv)                     acc + the products, in exact int32 arithmetic
//   finish<NV>(acc, out)                      the NV * kKeysPerVec exact sums, in key order
//   kLaneGroups, QV load_q(p),                optional (NEON's indexed sdot): kLaneGroups * 4
//   madd_lane<L>(acc, qv, kv)                 dims of a prepared Q row in one load, and the
//                                             multiply-add of its L-th 4 (no broadcast per group)
//   kBias, panel_sums(panel, groups, nr, sums)  when products are biased (VNNI's Q + 128), the
//                                             per-key sums of K: the accumulators of a biased
//                                             level start at -128 * sum(k) (one vector of
//                                             kKeysPerVec == W keys), so they end exact
#ifndef ATTNSCORE_TILE_S8_HPP
#define ATTNSCORE_TILE_S8_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <xsimd/xsimd.hpp>

#include "dispatch/kernels.h"
#include "kernels/generic/transpose_f32.hpp"

namespace attnscore {
namespace tile {

// int32 -> float (exact for |x| < 2^24, else rounded to nearest even, the same on every level).
// Internal linkage: each level's object file keeps its own copy.
template <class Arch>
static inline xsimd::batch<float, Arch> to_f32(const xsimd::batch<std::int32_t, Arch> &x) noexcept {
  return xsimd::to_float(x);
}
#if defined(__AVX512F__)
// GCC 12 warns (maybe-uninitialized) inside the unmasked intrinsic; the all-ones maskz form is
// the same instruction.
static inline xsimd::batch<float, xsimd::avx512f> to_f32(
    const xsimd::batch<std::int32_t, xsimd::avx512f> &x) noexcept {
  return _mm512_maskz_cvtepi32_ps(0xffff, x);
}
#endif

// The int32 lanes added up (wrapping, as the vector adds do).
template <class Arch>
static inline std::int32_t hsum(const xsimd::batch<std::int32_t, Arch> &x) noexcept {
  return xsimd::hadd(x);
}
#if defined(__AVX512F__)
// The all-ones maskz extracts: xsimd's, through the plain ones, trip GCC 12's false
// -Wmaybe-uninitialized.
static inline std::int32_t hsum(const xsimd::batch<std::int32_t, xsimd::avx512f> &x) noexcept {
  const __m256i h = _mm256_add_epi32(_mm512_maskz_extracti32x8_epi32(0xff, x, 0),
                                     _mm512_maskz_extracti32x8_epi32(0xff, x, 1));
  __m128i v = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0x4e));
  return _mm_cvtsi128_si32(_mm_add_epi32(v, _mm_shuffle_epi32(v, 0xb1)));
}
#endif

// rows[0 ... W - 1] each summed, into one vector (xsimd's haddp).
template <class Arch>
static inline xsimd::batch<float, Arch> hsums(const xsimd::batch<float, Arch> *rows) noexcept {
  return xsimd::haddp(rows);
}
#if defined(__AVX512F__)
// Halves added first, then two AVX haddps: xsimd's AVX-512 form trips GCC 12's false
// -Wmaybe-uninitialized.
static inline xsimd::batch<float, xsimd::avx512f> hsums(
    const xsimd::batch<float, xsimd::avx512f> *rows) noexcept {
  xsimd::batch<float, xsimd::avx2> half[16];
  for (std::size_t i = 0; i < 16; ++i)
    half[i] = _mm256_add_ps(_mm512_maskz_extractf32x8_ps(0xff, rows[i], 0),
                            _mm512_maskz_extractf32x8_ps(0xff, rows[i], 1));
  const __m512 lo = _mm512_maskz_insertf32x8(0xffff, _mm512_setzero_ps(), xsimd::haddp(half), 0);
  return _mm512_maskz_insertf32x8(0xffff, lo, xsimd::haddp(half + 8), 1);
}
#endif

// Packs `cols` <= NR keys into an s8 panel: panel[(g * NR + j) * 4 + u] = k[j * ldk + 4g + u],
// zero for j >= cols and for 4g + u >= d. Each group of 4 bytes moves as one 32-bit lane: W x W
// blocks of them are transposed in registers as float bit patterns (loads, shuffles and stores
// only, so every bit is kept).
template <class Ops, std::size_t NR>
inline void pack_s8_panel(std::size_t cols, std::size_t d, const std::int8_t *k, std::size_t ldk,
                          std::int8_t *panel, std::int32_t *sums) noexcept {
  using Arch = typename Ops::Arch;
  using B = xsimd::batch<float, Arch>;
  constexpr std::size_t W = B::size;
  const std::size_t groups = (d + 3) / 4, gv = d / (4 * W) * W;  // gv groups go by vectors
  for (std::size_t j0 = 0; j0 < NR; j0 += W) {
    // Keys j0 ... j0 + W - 1, `present` of them in K; addresses as integers: a pointer past K
    // (a padding key) is never formed.
    const std::size_t present = cols > j0 ? (cols - j0 < W ? cols - j0 : W) : 0;
    const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(k) + j0 * ldk;
    for (std::size_t g = 0; g < gv; g += W) {
      B r[W];
      for (std::size_t i = 0; i < W; ++i) {
        const std::uintptr_t src = base + i * ldk + g * 4;
        // (loaded as bytes, then viewed as floats: a K row has no float alignment)
        r[i] = i < present
                   ? xsimd::bitwise_cast<B>(xsimd::batch<std::uint8_t, Arch>::load_unaligned(
                         reinterpret_cast<const std::uint8_t *>(src)))
                   : B(0.0f);
        // The same bytes of the next panel's key: a decode step streams K from DRAM.
        __builtin_prefetch(reinterpret_cast<const void *>(src + NR * ldk));
      }
      Transpose<Arch>::run(r);
      for (std::size_t i = 0; i < W; ++i)
        r[i].store_aligned(reinterpret_cast<float *>(panel + ((g + i) * NR + j0) * 4));
    }
  }
  std::size_t g = gv;
  for (; g < groups; ++g)
    for (std::size_t j = 0; j < NR; ++j)
      for (std::size_t u = 0; u < 4; ++u)
        panel[(g * NR + j) * 4 + u] = j < cols && 4 * g + u < d ? k[j * ldk + 4 * g + u] : 0;
  if (Ops::kBias) Ops::panel_sums(panel, groups, NR, sums);
}

// Stores one row of a tile: NR exact sums `out` (cols <= NR of them in S), at kFinal as
// (float)sum * (qs * ks[j]); under kAccumulate added to the int32 partials S holds first.
template <class Arch, std::size_t NR>
inline void store_row(const std::int32_t *out, std::size_t cols, float qs, const float *ks,
                      float *dst, unsigned flags) noexcept {
  using F = xsimd::batch<float, Arch>;
  using I = xsimd::batch<std::int32_t, Arch>;
  constexpr std::size_t W = I::size;
  const F qsi(qs);
  if (cols == NR && (flags & (kAccumulate | kFinal)) == kFinal) {  // the common case: to S
    for (std::size_t w = 0; w < NR; w += W)
      (to_f32(I::load_aligned(out + w)) * (qsi * F::load_unaligned(ks + w)))
          .store_unaligned(dst + w);
    return;
  }
  alignas(64) std::int32_t sum[NR];
  std::memcpy(sum, out, sizeof sum);
  if (flags & kAccumulate) {
    alignas(64) std::int32_t prev[NR] = {};
    std::memcpy(prev, dst, cols * sizeof(std::int32_t));
    for (std::size_t w = 0; w < NR; w += W)
      (I::load_aligned(sum + w) + I::load_aligned(prev + w)).store_aligned(sum + w);
  }
  if (flags & kFinal) {
    alignas(64) float res[NR];
    for (std::size_t w = 0; w < NR; w += W)
      (to_f32(I::load_aligned(sum + w)) * (qsi * F::load_unaligned(ks + w))).store_aligned(res + w);
    std::memcpy(dst, res, cols * sizeof(float));
  } else {
    std::memcpy(dst, sum, cols * sizeof(std::int32_t));
  }
}

// f(integral_constant<L>) for each L of the sequence, in order.
template <class F, std::size_t... L>
inline void each_lane(const F &f, std::index_sequence<L...>) noexcept {
  (f(std::integral_constant<std::size_t, L>{}), ...);
}

template <class Ops, class = void>
struct HasLaneQ : std::false_type {};
template <class Ops>
struct HasLaneQ<Ops, std::void_t<decltype(Ops::kLaneGroups)>> : std::true_type {};

// MR x cols block of S from `rows` <= MR raw Q rows and ceil(cols / NR) packed panels, each
// following the last (panel p at p * NR * groups * 4 bytes, its sums and key scales at p * NR;
// the last panel may hold fewer than NR keys). Q is prepared once for all of them.
//
// Register map (W = int32 lanes of Acc; KPV = keys per accumulator):
//   acc[i][v]  MR*NV accumulators: row i, keys v*KPV ... v*KPV + KPV - 1
//   kv[v]      NV panel vectors: KPV keys x 4 dims at group g
//   qb         one broadcast of 4 dims of prepared Q row i
//   (Ops with kLaneGroups: qv[i], MR vectors of Q for kLaneGroups groups; kv[v] per group)
// Sums are exact in int32 (|sum| <= 128^2 * ATTNSCORE_S8_MAX_D < 2^31; wrapping intermediates,
// as VNNI's biased ones, come back in range), so the order of the adds does not matter: every
// level and every path gives the same integers, and the float epilogue
// (float)acc * ((qs[i]) * ks[j]) is the same operations everywhere.
// Under kAccumulate the block starts from the int32 partials a previous chunk of d left in S
// (as raw int32 bits); without kFinal it stores its partials there.
template <class Ops, std::size_t MR, std::size_t NV>
inline void qk_s8_panel(std::size_t rows, std::size_t cols, std::size_t d, const std::int8_t *q,
                        std::size_t ldq, const std::int8_t *panel, const std::int32_t *sums,
                        const float *qs, const float *ks, float *s, std::size_t lds,
                        unsigned flags) noexcept {
  using Acc = typename Ops::Acc;
  using Arch = typename Ops::Arch;
  constexpr std::size_t KPV = Ops::kKeysPerVec, NR = NV * KPV, W = Acc::size;
  static_assert(NR % W == 0, "the epilogue works in whole vectors");
  static_assert(!Ops::kBias || KPV == W, "a biased level's start is one vector of sums");
  const std::size_t groups = (d + 3) / 4;

  alignas(64) typename Ops::Qe qp[MR][kS8Chunk];
  for (std::size_t i = 0; i < MR; ++i) Ops::prep_q(q + (i < rows ? i : rows - 1) * ldq, d, qp[i]);

  // Under kStream, the lines kStreamAhead panels ahead are prefetched as each group is read
  // (integers: a pointer past the panels is never formed).
  constexpr std::size_t kStreamAhead = 2;
  const std::uintptr_t ahead = flags & kStream ? kStreamAhead * NR * groups * 4 : 0;
  const auto prefetch = [&](std::size_t g) {
    if (ahead != 0)
      for (std::size_t c = 0; c < NR * 4; c += 64)
        __builtin_prefetch(reinterpret_cast<const void *>(reinterpret_cast<std::uintptr_t>(panel) +
                                                          ahead + g * NR * 4 + c));
  };
  for (std::size_t j = 0; j < cols; j += NR, panel += NR * groups * 4) {
    const std::size_t cj = cols - j < NR ? cols - j : NR;
    Acc start[NV];
    for (std::size_t v = 0; v < NV; ++v)
      start[v] = Ops::kBias ? -(Acc::load_aligned(sums + j + v * KPV) << 7) : Acc(0);
    Acc acc[MR][NV];
    for (std::size_t i = 0; i < MR; ++i)
      for (std::size_t v = 0; v < NV; ++v) acc[i][v] = start[v];
    std::size_t g = 0;
    if constexpr (HasLaneQ<Ops>::value) {
      // LG groups a step: each Q row loaded once, each group's 4 dims taken by lane, so no
      // broadcast (a load and a dup) per row and group; each lane's multiply-adds reach all
      // MR * NV accumulators before the next lane's (independent chains for in-order cores).
      constexpr std::size_t LG = Ops::kLaneGroups;
      for (; g + LG <= groups; g += LG) {
        typename Ops::QV qv[MR];
        for (std::size_t i = 0; i < MR; ++i) qv[i] = Ops::load_q(qp[i] + 4 * g);
        const auto lane = [&](auto l) {
          constexpr std::size_t L = decltype(l)::value;
          prefetch(g + L);
          typename Ops::KV kv[NV];
          for (std::size_t v = 0; v < NV; ++v)
            kv[v] = Ops::load_k(panel + ((g + L) * NR + v * KPV) * 4);
          for (std::size_t i = 0; i < MR; ++i)
            for (std::size_t v = 0; v < NV; ++v)
              acc[i][v] = Ops::template madd_lane<L>(acc[i][v], qv[i], kv[v]);
        };
        each_lane(lane, std::make_index_sequence<LG>{});
      }
    }
    for (; g < groups; ++g) {
      prefetch(g);
      typename Ops::KV kv[NV];
      for (std::size_t v = 0; v < NV; ++v) kv[v] = Ops::load_k(panel + (g * NR + v * KPV) * 4);
      for (std::size_t i = 0; i < MR; ++i) {
        const typename Ops::QB qb = Ops::bcast(qp[i] + 4 * g);
        for (std::size_t v = 0; v < NV; ++v) acc[i][v] = Ops::madd(acc[i][v], qb, kv[v]);
      }
    }

    // Over MR (a constant, unrolled), not `rows`: a runtime index would put acc on the stack.
#pragma GCC unroll 16
    for (std::size_t i = 0; i < MR; ++i) {
      if (i >= rows) break;
      alignas(64) std::int32_t out[NR];
      Ops::template finish<NV>(acc[i], out);
      store_row<Arch, NR>(out, cj, qs[i], ks + j, s + i * lds + j, flags);
    }
  }
}

// The tile for `rows` rows: fewer than MR rows (decode, the bottom edge) run an instance with
// fewer row registers instead of repeating rows, so a decode step does 1/MR of a full tile's
// work. Exact integer sums: every instance gives the same bits.
template <class Ops, std::size_t MR, std::size_t NV>
inline void qk_s8_rows(std::size_t rows, std::size_t cols, std::size_t d, const std::int8_t *q,
                       std::size_t ldq, const std::int8_t *panel, const std::int32_t *sums,
                       const float *qs, const float *ks, float *s, std::size_t lds,
                       unsigned flags) noexcept {
  if (rows == 1)
    qk_s8_panel<Ops, 1, NV>(rows, cols, d, q, ldq, panel, sums, qs, ks, s, lds, flags);
  else if (rows == 2 && MR > 2)
    qk_s8_panel<Ops, 2, NV>(rows, cols, d, q, ldq, panel, sums, qs, ks, s, lds, flags);
  else if (rows <= 4 && MR > 4)
    qk_s8_panel<Ops, (MR > 4 ? 4 : MR), NV>(rows, cols, d, q, ldq, panel, sums, qs, ks, s, lds,
                                            flags);
  else
    qk_s8_panel<Ops, MR, NV>(rows, cols, d, q, ldq, panel, sums, qs, ks, s, lds, flags);
}

// Ties-to-even correction of a truncated value v with fraction f = y - v (|f| < 1, exact).
static inline std::int32_t step_even(std::int32_t v, float f) noexcept {
  const float a = f < 0 ? -f : f;
  if (a > 0.5f || (a == 0.5f && (v & 1) != 0)) return f < 0 ? v - 1 : v + 1;
  return v;
}

// Quantizes d floats with a given normal scale: o[t] = x[t] / scale rounded to nearest even and
// saturated (QuantScaledS8Fn in kernels.h), for levels with a correctly rounded vector division
// (x86; not xsimd 8.1's NEON, a reciprocal estimate): every operation is the scalar helper's,
// so the bits are the same at every level.
template <class Arch>
inline void quantize_scaled(std::size_t d, const float *r, float scale, std::int8_t *o) noexcept {
  using B = xsimd::batch<float, Arch>;
  constexpr std::size_t W = B::size;
  const B sb(scale), lo(-128.0f), hi(127.0f);
  std::size_t t = 0;
  for (; t + W <= d; t += W) {
    // Clamped first, then rounded (the same as rounding, then saturating). Rounding to
    // nearest even without the rounding mode: truncate (explicit in the conversion), take the
    // fraction (y minus its integer part: exact), and step away from zero past one half, or
    // at one half from an odd integer.
    const B y = xsimd::min(xsimd::max(B::load_unaligned(r + t) / sb, lo), hi);
    const auto ti = xsimd::batch_cast<std::int32_t>(y);
    alignas(64) std::int32_t v[W];
    alignas(64) float frac[W];
    ti.store_aligned(v);
    (y - xsimd::batch_cast<float>(ti)).store_aligned(frac);
    for (std::size_t l = 0; l < W; ++l)
      o[t + l] = static_cast<std::int8_t>(step_even(v[l], frac[l]));
  }
  for (; t < d; ++t) {
    alignas(64) float one[W] = {r[t]};
    const B y = xsimd::min(xsimd::max(B::load_aligned(one) / sb, lo), hi);
    const auto ti = xsimd::batch_cast<std::int32_t>(y);
    o[t] =
        static_cast<std::int8_t>(step_even(ti.get(0), (y - xsimd::batch_cast<float>(ti)).get(0)));
  }
}

// The quantization helper (QuantS8Fn in kernels.h) on quantize_scaled: max|x| per row, then the
// row divided by max / 127.
template <class Arch>
inline void quantize_rows(std::size_t n, std::size_t d, const float *x, std::size_t ldx,
                          std::int8_t *out, std::size_t ldo, float *scales) noexcept {
  using B = xsimd::batch<float, Arch>;
  constexpr std::size_t W = B::size;
  for (std::size_t i = 0; i < n; ++i) {
    const float *r = x + i * ldx;
    std::int8_t *o = out + i * ldo;
    B m(0.0f);
    std::size_t t = 0;
    for (; t + W <= d; t += W) m = xsimd::max(m, xsimd::abs(B::load_unaligned(r + t)));
    alignas(64) float lanes[W];
    m.store_aligned(lanes);
    float mx = 0.0f;
    for (std::size_t l = 0; l < W; ++l) mx = lanes[l] > mx ? lanes[l] : mx;
    for (; t < d; ++t) mx = std::fabs(r[t]) > mx ? std::fabs(r[t]) : mx;
    const float scale = mx / 127.0f;
    if (!(scale >= 1.17549435e-38f)) {  // below FLT_MIN (or zero): the row becomes zeros
      scales[i] = 0.0f;
      std::memset(o, 0, d);
      continue;
    }
    scales[i] = scale;
    quantize_scaled<Arch>(d, r, scale, o);
  }
}

// Decode (DecodeS8Fn) on raw K: one query row, each key row read once, in order, by whole
// steps of kRowBytes; the tail of d goes through a zero-filled copy, against Q's zero padding.
// Where the Ops have it:
//   kRowBytes, Acc row_madd(acc, k, q)   acc + the products of kRowBytes bytes of a K row and Q,
//                                        in int32 lanes (exact: no wrapping below kS8Chunk)
//   kRowBias                             times sum(q), the correction of a biased product
//                                        (VNNI's K + 128: -128), else 0
// W keys at a time, their lanes summed together (haddp) and scaled as one vector: a key's own
// horizontal sum and scalar store cost more than its multiply-adds at d <= 128. The sums go
// through float, exactly: every lane, partial and whole sum is an integer below 2^24 in
// magnitude (kS8Chunk products of at most 255 * 128), so each float add is exact.
template <class Ops>
inline void decode_raw(std::size_t cols, std::size_t d, const std::int8_t *q, const std::int8_t *k,
                       std::size_t ldk, float qs, const float *k_scale, std::size_t k_step,
                       float *s) noexcept {
  using Acc = typename Ops::Acc;
  using F = xsimd::batch<float, typename Acc::arch_type>;
  constexpr std::size_t VB = Ops::kRowBytes, W = Acc::size;
  static_assert(kS8Chunk * 255 * 128 < (1 << 24), "decode sums are exact in float");
  // Keys a prefetch runs ahead: a decode step streams K from DRAM, and the hardware prefetcher
  // alone left the reads a third short of the bandwidth (avx512vnni).
  constexpr std::size_t kAhead = 32;
  alignas(64) std::int8_t qb[kS8Chunk + VB] = {};
  std::memcpy(qb, q, d);
  std::int32_t sum_q = 0;
  if (Ops::kRowBias != 0)
    for (std::size_t t = 0; t < d; ++t) sum_q += q[t];
  const std::int32_t bias = Ops::kRowBias * sum_q;
  const std::size_t full = d / VB, tail = d % VB;
  // A row's tail goes through `last`, zeroed once: each copy rewrites only its first `tail` bytes.
  alignas(64) std::int8_t last[VB] = {};
  // G key rows from `row` on, each into its own accumulator, the rows interleaved so the G chains
  // run side by side (one Q load per step for all).
  const auto rows_madd = [&](auto g, const std::int8_t *row, Acc *acc) {
    constexpr std::size_t G = decltype(g)::value;
    for (std::size_t u = 0; u < G; ++u) acc[u] = Acc(0);
    for (std::size_t c = 0; c < full * VB; c += VB)
      for (std::size_t u = 0; u < G; ++u) acc[u] = Ops::row_madd(acc[u], row + u * ldk + c, qb + c);
    if (tail != 0)
      for (std::size_t u = 0; u < G; ++u) {
        std::memcpy(last, row + u * ldk + full * VB, tail);
        acc[u] = Ops::row_madd(acc[u], last, qb + full * VB);
      }
  };
  std::size_t j = 0;
  for (; j + W <= cols; j += W) {
    const std::int8_t *row = k + j * ldk;
    // (integers: a pointer past K is never formed)
    const std::uintptr_t ahead = reinterpret_cast<std::uintptr_t>(row) + kAhead * ldk;
    for (std::size_t u = 0; u < W; ++u)
      for (std::size_t c = 0; c < d; c += 64)
        __builtin_prefetch(reinterpret_cast<const void *>(ahead + u * ldk + c));
    Acc acc[W];
    rows_madd(std::integral_constant<std::size_t, W>{}, row, acc);
    F lanes[W];
    for (std::size_t u = 0; u < W; ++u) lanes[u] = to_f32(acc[u]);
    const F dot = hsums(lanes) + F(static_cast<float>(bias));
    const F ks = k_step != 0 ? F::load_unaligned(k_scale + j) : F(k_scale[0]);
    (dot * (F(qs) * ks)).store_unaligned(s + j);
  }
  for (; j < cols; ++j) {  // the last keys, one at a time
    Acc acc[1];
    rows_madd(std::integral_constant<std::size_t, 1>{}, k + j * ldk, acc);
    s[j] = static_cast<float>(hsum(acc[0]) + bias) * (qs * k_scale[j * k_step]);
  }
}

// The decode of a level's Ops, where they have one (kRowBytes), else null.
template <class Ops, class = void>
struct DecodeOf {
  static constexpr DecodeS8Fn fn = nullptr;
};
template <class Ops>
struct DecodeOf<Ops, std::void_t<decltype(Ops::kRowBytes)>> {
  static constexpr DecodeS8Fn fn = &decode_raw<Ops>;
};

}  // namespace tile
}  // namespace attnscore

// Defines a level's s8 kernel `name` (MR x NV * KPV tile) from Ops, and its table row
// `name_kernel` (declared in kernels.h).
#define ATTNSCORE_DEFINE_QK_S8(name, level, Ops, MR, NV)                                         \
  ATTNSCORE_KERNEL_ENTRY void name(                                                              \
      std::size_t rows, std::size_t cols, std::size_t d, const std::int8_t *q, std::size_t ldq,  \
      const std::int8_t *panel, const std::int32_t *sums, const float *qs, const float *ks,      \
      float *s, std::size_t lds, unsigned flags) noexcept {                                      \
    tile::qk_s8_rows<Ops, MR, NV>(rows, cols, d, q, ldq, panel, sums, qs, ks, s, lds, flags);    \
  }                                                                                              \
  ATTNSCORE_KERNEL_ENTRY void name##_pack(std::size_t cols, std::size_t d, const std::int8_t *k, \
                                          std::size_t ldk, std::int8_t *panel,                   \
                                          std::int32_t *sums) noexcept {                         \
    tile::pack_s8_panel<Ops, NV * Ops::kKeysPerVec>(cols, d, k, ldk, panel, sums);               \
  }                                                                                              \
  ATTNSCORE_KERNEL_ENTRY void name##_quant(std::size_t n, std::size_t d, const float *x,         \
                                           std::size_t ldx, std::int8_t *out, std::size_t ldo,   \
                                           float *scales) noexcept {                             \
    tile::quantize_rows<typename Ops::Arch>(n, d, x, ldx, out, ldo, scales);                     \
  }                                                                                              \
  ATTNSCORE_KERNEL_ENTRY void name##_quant_scaled(std::size_t n, const float *x, float scale,    \
                                                  std::int8_t *out) noexcept {                   \
    tile::quantize_scaled<typename Ops::Arch>(n, x, scale, out);                                 \
  }                                                                                              \
  extern const KernelS8 name##_kernel = {                                                        \
      #name,                                                                                     \
      level,                                                                                     \
      MR,                                                                                        \
      NV * Ops::kKeysPerVec,                                                                     \
      4,                                                                                         \
      name,                                                                                      \
      name##_pack,                                                                               \
      Ops::kVecQuant ? name##_quant : quantize_s8_scalar,                                        \
      Ops::kVecQuant ? name##_quant_scaled : quantize_scaled_s8_scalar,                          \
      tile::DecodeOf<Ops>::fn};

#endif  // ATTNSCORE_TILE_S8_HPP
