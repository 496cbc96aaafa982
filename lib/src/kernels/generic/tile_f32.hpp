// SPDX-License-Identifier: Apache-2.0
// The f32 kernels, written once over the xsimd arch and instantiated per level in arch/.
#ifndef ATTNSCORE_TILE_F32_HPP
#define ATTNSCORE_TILE_F32_HPP

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <xsimd/xsimd.hpp>

#include "dispatch/kernels.h"
#include "kernels/generic/transpose_f32.hpp"

namespace attnscore {
namespace tile {

// acc + a * b, fused where the level has FMA. xsimd 8.1 has no fused form for the avx512 archs
// (its fma falls back to a multiply and an add): they call the intrinsic.
#if defined(__AVX512F__)
template <class Arch>
constexpr bool kIsAvx512 = std::is_base_of<xsimd::avx512f, Arch>::value;
#else
template <class Arch>
constexpr bool kIsAvx512 = false;
#endif
template <class Arch, std::enable_if_t<!kIsAvx512<Arch>, int> = 0>
inline xsimd::batch<float, Arch> fmadd(xsimd::batch<float, Arch> a, xsimd::batch<float, Arch> b,
                                       xsimd::batch<float, Arch> acc) noexcept {
  return xsimd::fma(a, b, acc);
}
#if defined(__AVX512F__)
template <class Arch, std::enable_if_t<kIsAvx512<Arch>, int> = 0>
inline xsimd::batch<float, Arch> fmadd(xsimd::batch<float, Arch> a, xsimd::batch<float, Arch> b,
                                       xsimd::batch<float, Arch> acc) noexcept {
  return _mm512_fmadd_ps(a, b, acc);
}
#endif

// How the templates below read an element type T of K (and of Q in the decode shapes): `load`
// gives W consecutive elements as a float batch, `load_aligned` the same from a 64-byte aligned
// panel, `one` a single element as a float. For float these are plain loads; the f16 and bf16
// kernels specialise it per arch (tile_f16.hpp) to convert exactly while loading. T is the
// dtype's tag: its elements are storage_t<T> (kernels.h).
template <class Arch, class T>
struct Elem;

template <class Arch>
struct Elem<Arch, float> {
  using B = xsimd::batch<float, Arch>;
  static B load(const float *p) noexcept { return B::load_unaligned(p); }
  static B load_aligned(const float *p) noexcept { return B::load_aligned(p); }
  static float one(float v) noexcept { return v; }
};

// Packs `cols` <= NR keys (rows of K) into a panel: panel[t * NR + j] = k[j * ldk + t] for
// t < d, zero for j >= cols (so the kernel's padding lanes compute 0 * 0, never garbage).
// W x W blocks are transposed in registers: each K row is read as a stream of whole vectors,
// and the panel is written as whole vectors. Templated on the arch, so each level's copy is its
// own symbol.
template <class Arch, std::size_t NR, class T = float>
inline void pack_panel(std::size_t cols, std::size_t d, const storage_t<T> *k, std::size_t ldk,
                       float *panel) noexcept {
  using B = xsimd::batch<float, Arch>;
  using E = Elem<Arch, T>;
  constexpr std::size_t W = B::size;
  std::size_t t = 0;
  for (; t + W <= d; t += W) {
    for (std::size_t j0 = 0; j0 < NR; j0 += W) {
      B r[W];
      for (std::size_t i = 0; i < W; ++i) {
        // Addresses as integers: a pointer past K (a padding key, the next panel) is never formed.
        const std::uintptr_t src =
            reinterpret_cast<std::uintptr_t>(k) + ((j0 + i) * ldk + t) * sizeof(storage_t<T>);
        r[i] = j0 + i < cols ? E::load(reinterpret_cast<const storage_t<T> *>(src)) : B(0.0f);
        // The same piece of the next panel's rows: 2 * W rows read W floats at a time defeat the
        // hardware prefetchers. A prefetch never faults.
        __builtin_prefetch(reinterpret_cast<const void *>(src + NR * ldk * sizeof(storage_t<T>)));
      }
      Transpose<Arch>::run(r);
      for (std::size_t i = 0; i < W; ++i) r[i].store_aligned(panel + (t + i) * NR + j0);
    }
  }
  for (; t < d; ++t)
    for (std::size_t j = 0; j < NR; ++j)
      panel[t * NR + j] = j < cols ? E::one(k[j * ldk + t]) : 0.0f;
}

// Non-temporal stores of S (kStoreNT): on x86 levels whose tile row is whole 64-byte lines (AVX2
// and AVX-512; SSE2's 32-byte rows would leave half lines in the write-combining buffers), else
// none. Writing a 16 MiB S this way ran prefill 2048 x 2048 10-25% faster on an Intel Xeon
// (family 6 model 167); an S that fits L2 (512 x 512) ran 3-7% slower: the driver's threshold.
template <class Arch, std::size_t NR>
constexpr bool kStoresNT =
#if defined(__AVX__)
    (NR * sizeof(float)) % 64 == 0 && xsimd::batch<float, Arch>::size >= 8;
#else
    false;
#endif

template <class Arch>
inline void store_nt(float *dst, xsimd::batch<float, Arch> v) noexcept {
#if defined(__AVX512F__)
  if constexpr (kIsAvx512<Arch>) return _mm512_stream_ps(dst, v);
#endif
#if defined(__AVX__)
  if constexpr (xsimd::batch<float, Arch>::size == 8) return _mm256_stream_ps(dst, v);
#endif
  v.store_aligned(dst);
}

// Outer-product micro-kernel: an MR x NR block of S (NR = NV vectors of W lanes) from raw Q rows
// and a packed K panel; rows <= MR and cols <= NR are present.
//
// Register map (W = lanes of batch<float, Arch>):
//   acc[i][v]  MR*NV vectors: S[i][v*W .. v*W+W-1], one key per lane
//   kv[v]      NV vectors: the panel at t, keys v*W .. v*W+W-1
//   qb         one vector: q[i][t] broadcast
// Each S element is acc = fma(q_t, k_t, acc) for t = 0, 1, ..., d-1 in order (mul then add on
// levels without FMA), whatever the tile, the edge, or whether a call is split in chunks of d
// (partials pass through S unrounded-to-anything-but-float, which is what acc holds): results
// are bit-identical for any block of S and for the packed key cache. The scale is applied once,
// at the final store (non-temporal under kStoreNT for whole, aligned rows: the same bits).
template <class Arch, std::size_t MR, std::size_t NV>
inline void qk_f32_panel(std::size_t rows, std::size_t cols, std::size_t d, const float *q,
                         std::size_t ldq, const float *panel, float *s, std::size_t lds,
                         float scale, unsigned flags) noexcept {
  using B = xsimd::batch<float, Arch>;
  constexpr std::size_t W = B::size, NR = NV * W;
  const float *qr[MR];
  for (std::size_t i = 0; i < MR; ++i) qr[i] = q + (i < rows ? i : rows - 1) * ldq;

  B acc[MR][NV];
  if (flags & kAccumulate) {
    // Reload the partial sums this call stored on the previous chunk of d.
    alignas(64) float part[NR];
    for (std::size_t i = 0; i < MR; ++i) {
      const float *src = s + (i < rows ? i : rows - 1) * lds;
      for (std::size_t j = 0; j < NR; ++j) part[j] = j < cols ? src[j] : 0.0f;
      for (std::size_t v = 0; v < NV; ++v) acc[i][v] = B::load_aligned(part + v * W);
    }
  } else {
    for (std::size_t i = 0; i < MR; ++i)
      for (std::size_t v = 0; v < NV; ++v) acc[i][v] = B(0.0f);
  }
  for (std::size_t t = 0; t < d; ++t) {
    B kv[NV];
    for (std::size_t v = 0; v < NV; ++v) kv[v] = B::load_aligned(panel + t * NR + v * W);
    for (std::size_t i = 0; i < MR; ++i) {
      const B qb(qr[i][t]);
      for (std::size_t v = 0; v < NV; ++v) acc[i][v] = fmadd(qb, kv[v], acc[i][v]);
    }
  }
  const B sc((flags & kFinal) ? scale : 1.0f);
  if constexpr (kStoresNT<Arch, NR>) {
    if (streams_tile(flags, cols, NR, s, lds)) {
      for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t v = 0; v < NV; ++v) store_nt<Arch>(s + i * lds + v * W, acc[i][v] * sc);
      return;
    }
  }
  for (std::size_t i = 0; i < rows; ++i) {
    float *dst = s + i * lds;
    if (cols == NR) {
      for (std::size_t v = 0; v < NV; ++v) {
        const B out = (flags & kFinal) ? acc[i][v] * sc : acc[i][v];
        out.store_unaligned(dst + v * W);
      }
    } else {
      alignas(64) float part[NR];
      for (std::size_t v = 0; v < NV; ++v) {
        const B out = (flags & kFinal) ? acc[i][v] * sc : acc[i][v];
        out.store_aligned(part + v * W);
      }
      for (std::size_t j = 0; j < cols; ++j) dst[j] = part[j];
    }
  }
}

// Vector registers of an arch: 32 on AVX-512 and AArch64, 16 on the others (SSE2, AVX2, armv7).
template <class Arch>
constexpr std::size_t kVectorRegisters =
#if defined(__aarch64__)
    32;
#else
    kIsAvx512<Arch> ? 32 : 16;
#endif

// Rows of the decode tile at an arch (kDecodeRows for the scores call, more for the attention
// call, whose decode rows are the query heads sharing one KV head): a quarter of the register file,
// so that the accumulators and the block being transposed fit.
template <class Arch>
constexpr std::size_t kDecodeGroupRows = kVectorRegisters<Arch> / 4;

// Keys whose dot products the decode tile runs at once for R rows of element type T: the most (a
// power of two, at most W, and for f32 at most 8) whose accumulators, the R query vectors and two
// more fit the register file. (16 f32 keys at AVX-512, one row, left GCC short of registers for
// the key pointers: it kept them in vector registers and spilled accumulators, and cold K read at
// 15 against 26 GB/s on Zen 4. For f16 the cap cost the output call's decode 15% there.)
template <class Arch, std::size_t R, class T = float>
constexpr std::size_t kDecodeKeys = [] {
  constexpr std::size_t W = xsimd::batch<float, Arch>::size, N = kVectorRegisters<Arch>;
  std::size_t n = std::is_same<T, float>::value && W > 8 ? 8 : W;
  while (n > 1 && R * n + R + 2 > N) n /= 2;
  return n;
}();

// Decode micro-kernel, in the dot-product form: rows <= R queries against cols <= KB * W keys of
// raw row-major K. Each K row is read as whole vectors and multiplied into its own accumulator,
// lane l summing t = l, l + W, l + 2W, ... in order (fma); a partial last vector is zero-padded
// in Q and K (0 * 0 adds +0). The W lane sums of each score then go through LaneSums' fixed tree,
// and the scale is applied once. No transposes: the per-key work is the read, the FMAs and a
// share of the tree, so decode streams K at the rate memory gives it. The order differs from the
// prefill kernel's (t in sequence), within the same bound; it is fixed per level, so decode is
// deterministic and any block of keys or rows gives the same bits.
//
// Register map (N vector registers, W lanes), per pass over KI = kDecodeKeys<Arch, R, T> keys:
//   acc[r][i]  R * KI vectors: row r against key i, one lane per t mod W
//   qv[r]      R vectors: the step's W elements of each Q row (x86: the FMA's memory operand)
//   kv         the step's W elements of the key (T other than float: converted while loading)
//   AVX-512 (N 32, W 16): R 1: 16 keys (f32: 8); R 2, 3: 8; R 4: 4; R 8: 2
//   AVX2, armv7 (16, 8 or 4): R 1: 8 or 4; R 2: 4; R 3, 4: 2
//   AArch64 NEON (32, 4): R 1 ... 4: 4 keys; R 8: 2
// A pass leaves its lane sums in part[r][key]; every W keys, LaneSums reduces W of them at once.
// Q is read through qc, W-aligned and zero-padded (converted there once per call for T other than
// float), in pieces of kDecodeDims elements of d.
constexpr std::size_t kDecodeDims = 256;
// How far ahead of its reads the decode prefetches K, in bytes of the stream: the hardware
// prefetchers alone left cold reads at 20 GB/s on Zen 5; 8 KiB gave 36 GB/s (f32 and f16, d 128)
// whatever the code's alignment, where a distance in rows (16-32 KiB) varied 26-37 with it.
// Not on Zen 4 for the scores call's 1 to 3 rows (decode_prefetches(), kernels.h): K alone
// streams faster there with the hardware prefetchers only (26 against 15-23 GB/s cold).
constexpr std::size_t kDecodePrefetchBytes = 8192;

template <class Arch, std::size_t R, std::size_t KB, class T = float>
inline void qk_f32_decode_tile(std::size_t rows, std::size_t cols, std::size_t d,
                               const storage_t<T> *q, std::size_t ldq, const storage_t<T> *k,
                               std::size_t ldk, float *s, std::size_t lds, float scale) noexcept {
  using B = xsimd::batch<float, Arch>;
  using E = Elem<Arch, T>;
  constexpr std::size_t W = B::size, KI = kDecodeKeys<Arch, R, T>, DC = kDecodeDims;
  static_assert(W % KI == 0 && DC % W == 0, "passes tile a group of W keys; pieces whole vectors");
  const storage_t<T> *qr[R];
  for (std::size_t r = 0; r < R; ++r) qr[r] = q + (r < rows ? r : rows - 1) * ldq;
  alignas(64) float qc[R][DC];
  alignas(64) float part[R][W * W];
  // Read once a call; GCC unswitches the loop on it, so either way the loop has no test. A group
  // of more rows (the output call's query heads, which reads V between chunks of K, not one
  // stream) keeps it on Zen 4 too: only the lone K stream was measured faster without.
  const bool prefetch = R > kDecodeRows || decode_prefetches();
  for (std::size_t g0 = 0; g0 < cols; g0 += W) {
    std::size_t t0 = 0;
    do {  // at least once: every part lane is set, even for d == 0
      const std::size_t tn = d - t0 < DC ? d - t0 : DC, tf = tn - tn % W;
      // One piece (d <= DC): Q staged once per call; else once per piece and group.
      if (g0 == 0 || d > DC) {
        for (std::size_t r = 0; r < R; ++r) {
          std::size_t t = 0;
          for (; t < tf; t += W) E::load(qr[r] + t0 + t).store_aligned(qc[r] + t);
          for (; t < tn; ++t) qc[r][t] = E::one(qr[r][t0 + t]);
          for (; t % W != 0; ++t) qc[r][t] = 0.0f;
        }
      }
      for (std::size_t k0 = 0; k0 < W; k0 += KI) {
        if (g0 + k0 >= cols) {  // no key left: sums of 0, so the tree reads set lanes
          for (std::size_t r = 0; r < R; ++r)
            for (std::size_t x = k0 * W; x < (k0 + KI) * W; ++x) part[r][x] = 0.0f;
          continue;
        }
        // Keys past cols repeat the last one (their sums are never stored): no branch inside.
        std::uintptr_t kr[KI];
        for (std::size_t i = 0; i < KI; ++i) {
          const std::size_t j = g0 + k0 + i < cols ? g0 + k0 + i : cols - 1;
          kr[i] = reinterpret_cast<std::uintptr_t>(k) + (j * ldk + t0) * sizeof(storage_t<T>);
        }
        B acc[R][KI];
        for (std::size_t r = 0; r < R; ++r)
          for (std::size_t i = 0; i < KI; ++i)
            acc[r][i] = t0 == 0 ? B(0.0f) : B::load_aligned(part[r] + (k0 + i) * W);
            // Key by key, each row read front to back, the pass unrolled: the reads form one linear
            // stream the hardware prefetchers follow, and the keys' chains overlap out of order.
            // (Interleaving the keys' steps read K in scattered columns: a third less cold
            // bandwidth on Zen 5.)
#pragma GCC unroll 16
        for (std::size_t i0 = 0; i0 < KI; ++i0) {
          // The key's R chains in locals: indexed in acc, GCC kept them in memory and stored
          // all R every step on AArch64 (R 8: 8 stores beside 8 FMAs).
          B a[R];
          for (std::size_t r = 0; r < R; ++r) a[r] = acc[r][i0];
          for (std::size_t t = 0; t < tf; t += W) {
            // (An inner loop of one key, as measured: the plain form compiled to a slower
            // schedule, 24 against 37 GB/s cold on Zen 5, GCC 12.)
#pragma GCC unroll 16
            for (std::size_t i = i0; i < i0 + 1; ++i) {
              const std::uintptr_t src = kr[i] + t * sizeof(storage_t<T>);
              const B kv = E::load(reinterpret_cast<const storage_t<T> *>(src));
              // kDecodePrefetchBytes on in the stream (never faults).
              if (prefetch)
                __builtin_prefetch(reinterpret_cast<const void *>(src + kDecodePrefetchBytes));
#pragma GCC unroll 8
              for (std::size_t r = 0; r < R; ++r)
                a[r] = fmadd(B::load_aligned(qc[r] + t), kv, a[r]);
            }
          }
          for (std::size_t r = 0; r < R; ++r) acc[r][i0] = a[r];
        }
        if (tf < tn) {
          for (std::size_t i = 0; i < KI; ++i) {
            alignas(64) float kt[W] = {};
            const storage_t<T> *src = reinterpret_cast<const storage_t<T> *>(kr[i]) + tf;
            for (std::size_t t = 0; t < tn - tf; ++t) kt[t] = E::one(src[t]);
            const B kv = B::load_aligned(kt);
            for (std::size_t r = 0; r < R; ++r)
              acc[r][i] = fmadd(B::load_aligned(qc[r] + tf), kv, acc[r][i]);
          }
        }
        for (std::size_t r = 0; r < R; ++r)
          for (std::size_t i = 0; i < KI; ++i) acc[r][i].store_aligned(part[r] + (k0 + i) * W);
      }
      t0 += DC;
    } while (t0 < d);
    const B sc(scale);
    const std::size_t n = cols - g0 < W ? cols - g0 : W;
    for (std::size_t r = 0; r < rows; ++r) {
      alignas(64) float out[W];
      (LaneSums<Arch>::run(part[r]) * sc).store_aligned(out);
      for (std::size_t j = 0; j < n; ++j) s[r * lds + g0 + j] = out[j];
    }
  }
}

// Decode entry: picks the instance for the number of rows: 1 ... kDecodeRows + 1 exactly (no FMA
// spent on absent rows), and above that the group maximum (a tile repeats its last row for the
// rows it lacks; rows 5 ... 7 instances would cost library size for rare group sizes).
template <class Arch, std::size_t KB, class T = float, std::size_t R = 1>
inline void qk_f32_decode(std::size_t rows, std::size_t cols, std::size_t d, const storage_t<T> *q,
                          std::size_t ldq, const storage_t<T> *k, std::size_t ldk, float *s,
                          std::size_t lds, float scale) noexcept {
  static_assert(kDecodeGroupRows<Arch> >= kDecodeRows && kDecodeGroupRows<Arch> <= kMaxDecodeRows,
                "the decode tile takes the scores call's rows, and the table says how many more");
  if constexpr (R < kDecodeGroupRows<Arch>) {
    if (rows != R) {
      constexpr std::size_t next = R <= kDecodeRows ? R + 1 : kDecodeGroupRows<Arch>;
      qk_f32_decode<Arch, KB, T, next>(rows, cols, d, q, ldq, k, ldk, s, lds, scale);
      return;
    }
  }
  qk_f32_decode_tile<Arch, R, KB, T>(rows, cols, d, q, ldq, k, ldk, s, lds, scale);
}

// Decode from packed panels (the key cache): rows <= R queries against `cols` keys held in
// consecutive panels of NV * W keys (panel p at panels + p * stride), P panels per pass so that
// R * P * NV independent FMA chains hide the FMA latency. Same per-element order as every
// other f32 shape.
template <class Arch, std::size_t R, std::size_t NV, std::size_t P, class T = float>
inline void qk_f32_panels_decode_tile(std::size_t rows, std::size_t cols, std::size_t d,
                                      const storage_t<T> *q, std::size_t ldq,
                                      const storage_t<T> *panels, std::size_t stride, float *s,
                                      std::size_t lds, float scale) noexcept {
  using B = xsimd::batch<float, Arch>;
  using E = Elem<Arch, T>;
  constexpr std::size_t W = B::size, NR = NV * W;
  const storage_t<T> *qr[R];
  for (std::size_t r = 0; r < R; ++r) qr[r] = q + (r < rows ? r : rows - 1) * ldq;
  for (std::size_t j0 = 0; j0 < cols; j0 += P * NR) {
    const storage_t<T> *base = panels + (j0 / NR) * stride;
    const std::size_t np = (cols - j0 + NR - 1) / NR < P ? (cols - j0 + NR - 1) / NR : P;
    B acc[R][P][NV];
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t p = 0; p < P; ++p)
        for (std::size_t v = 0; v < NV; ++v) acc[r][p][v] = B(0.0f);
    for (std::size_t t = 0; t < d; ++t) {
      for (std::size_t p = 0; p < P; ++p) {
        // Panels past the last present one re-read the last (not stored): no branch inside.
        const storage_t<T> *pp = base + (p < np ? p : np - 1) * stride + t * NR;
#if defined(__x86_64__) || defined(__i386__)
        // The same line of the next pass's panel into L2, one prefetch a line (never faults; as
        // an integer, since past the last panel it points outside the cache): the P panels are P
        // streams a panel apart, and the hardware prefetchers alone left cold reads at 19-20 GB/s
        // on Zen 4, against 24-28 with it (f32 and f16, avx2 and avx512; prefetcht0: 17-25).
        if ((t * NR * sizeof(storage_t<T>)) % 64 == 0)
          __builtin_prefetch(
              reinterpret_cast<const void *>(reinterpret_cast<std::uintptr_t>(base) +
                                             ((p + P) * stride + t * NR) * sizeof(storage_t<T>)),
              0, 2);
#endif
        for (std::size_t v = 0; v < NV; ++v) {
          const B kv = E::load_aligned(pp + v * W);
          for (std::size_t r = 0; r < R; ++r)
            acc[r][p][v] = fmadd(B(E::one(qr[r][t])), kv, acc[r][p][v]);
        }
      }
    }
    const B sc(scale);
    const std::size_t n = cols - j0 < P * NR ? cols - j0 : P * NR;
    for (std::size_t r = 0; r < rows; ++r) {
      alignas(64) float out[P * NR];
      for (std::size_t p = 0; p < P; ++p)
        for (std::size_t v = 0; v < NV; ++v)
          (acc[r][p][v] * sc).store_aligned(out + p * NR + v * W);
      for (std::size_t j = 0; j < n; ++j) s[r * lds + j0 + j] = out[j];
    }
  }
}

template <class Arch, std::size_t NV, std::size_t P, class T = float>
inline void qk_f32_panels_decode(std::size_t rows, std::size_t cols, std::size_t d,
                                 const storage_t<T> *q, std::size_t ldq, const storage_t<T> *panels,
                                 std::size_t stride, float *s, std::size_t lds,
                                 float scale) noexcept {
  if (rows == 1)
    qk_f32_panels_decode_tile<Arch, 1, NV, P, T>(rows, cols, d, q, ldq, panels, stride, s, lds,
                                                 scale);
  else if (rows == 2)
    qk_f32_panels_decode_tile<Arch, 2, NV, P, T>(rows, cols, d, q, ldq, panels, stride, s, lds,
                                                 scale);
  else
    qk_f32_panels_decode_tile<Arch, 3, NV, P, T>(rows, cols, d, q, ldq, panels, stride, s, lds,
                                                 scale);
}

}  // namespace tile
}  // namespace attnscore

// Defines a level's f32 kernel from the templates above, and its table row `name_kernel`
// (declared in kernels.h): the MR x (NV * W) prefill tile `name` with its pack `name_pack`, and
// the decode tile `name_dec`, up to kDecodeRows rows x (KB * W) keys of raw K, and the decode
// from packed panels `name_cdec` (the key cache), four panels per pass.
#define ATTNSCORE_DEFINE_QK_F32(name, level, Arch, MR, NV, KB)                                     \
  ATTNSCORE_KERNEL_ENTRY void name(std::size_t rows, std::size_t cols, std::size_t d,              \
                                   const float *q, std::size_t ldq, const float *panel, float *s,  \
                                   std::size_t lds, float scale, unsigned flags) noexcept {        \
    tile::qk_f32_panel<Arch, MR, NV>(rows, cols, d, q, ldq, panel, s, lds, scale, flags);          \
  }                                                                                                \
  ATTNSCORE_KERNEL_ENTRY void name##_pack(std::size_t cols, std::size_t d, const float *k,         \
                                          std::size_t ldk, float *panel) noexcept {                \
    tile::pack_panel<Arch, NV * xsimd::batch<float, Arch>::size>(cols, d, k, ldk, panel);          \
  }                                                                                                \
  ATTNSCORE_KERNEL_ENTRY void name##_dec(                                                          \
      std::size_t rows, std::size_t cols, std::size_t d, const float *q, std::size_t ldq,          \
      const float *k, std::size_t ldk, float *s, std::size_t lds, float scale) noexcept {          \
    tile::qk_f32_decode<Arch, KB>(rows, cols, d, q, ldq, k, ldk, s, lds, scale);                   \
  }                                                                                                \
  ATTNSCORE_KERNEL_ENTRY void name##_cdec(                                                         \
      std::size_t rows, std::size_t cols, std::size_t d, const float *q, std::size_t ldq,          \
      const float *panels, std::size_t stride, float *s, std::size_t lds, float scale) noexcept {  \
    tile::qk_f32_panels_decode<Arch, NV, 4>(rows, cols, d, q, ldq, panels, stride, s, lds, scale); \
  }                                                                                                \
  extern const KernelF32 name##_kernel = {#name,                                                   \
                                          level,                                                   \
                                          MR,                                                      \
                                          NV * xsimd::batch<float, Arch>::size,                    \
                                          name,                                                    \
                                          name##_pack,                                             \
                                          KB * xsimd::batch<float, Arch>::size,                    \
                                          name##_dec,                                              \
                                          name##_cdec,                                             \
                                          tile::kDecodeGroupRows<Arch>};

#endif  // ATTNSCORE_TILE_F32_HPP
