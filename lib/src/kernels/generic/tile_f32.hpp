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
// at the final store.
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

// Decode micro-kernel: rows <= R queries against cols <= KB * W keys read from raw row-major K,
// with no panel: each W x W block of K (W keys x W dims) is read and transposed in registers once
// and fed to the FMAs of all R rows, in the same sequence as the prefill kernel, so every element
// is summed in the same order (fma over t = 0 ... d-1) and the results are bit-identical to
// prefill. R > kDecodeRows is the attention call's g-row tile: the query heads of one KV head.
//
// Register map (N vector registers, W lanes):
//   acc[r][b]  R * KBI vectors, one key per lane (keys b*W ...): independent FMA chains
//   blk[W]     the block being loaded and transposed, then one step of d per vector
//   qb         q[r][t] broadcast (x86: the FMA's memory operand)
// KBI of the KB blocks are in flight at a time: all KB for R <= kDecodeRows (the scores call's
// tile, unchanged), else the largest power of two dividing KB with R * KBI <= N - 2W (the
// transpose needs about 2W registers at its widest):
//   AVX-512 (N 32, W 16), R 4..8: 1 block, 4..8 chains; the 16 shuffles per W keys of a step
//     and the R FMAs share ports 0 and 5, so more blocks in flight gain nothing and spill;
//   AVX2 (16, 8), R 4: 1 block, 4 chains (shuffles on port 5, FMAs on ports 0 and 1);
//   AArch64 NEON (32, 4), R 8: 2 blocks, 16 chains; R 4..6: 4 blocks (KB);
//   armv7 NEON (16, 4), R 4: 2 blocks (KB), 8 chains.
template <class Arch, std::size_t R, std::size_t KB>
constexpr std::size_t kDecodeBlocksInFlight = [] {
  constexpr std::size_t W = xsimd::batch<float, Arch>::size, N = kVectorRegisters<Arch>;
  if (R <= kDecodeRows) return KB;
  std::size_t n = 1;
  while (2 * n <= KB && KB % (2 * n) == 0 && R * 2 * n <= N - 2 * W) n *= 2;
  return n;
}();

template <class Arch, std::size_t R, std::size_t KB, class T = float>
inline void qk_f32_decode_tile(std::size_t rows, std::size_t cols, std::size_t d,
                               const storage_t<T> *q, std::size_t ldq, const storage_t<T> *k,
                               std::size_t ldk, float *s, std::size_t lds, float scale) noexcept {
  using B = xsimd::batch<float, Arch>;
  using E = Elem<Arch, T>;
  constexpr std::size_t W = B::size, KBI = kDecodeBlocksInFlight<Arch, R, KB>;
  const storage_t<T> *qr[R];
  for (std::size_t r = 0; r < R; ++r) qr[r] = q + (r < rows ? r : rows - 1) * ldq;
  for (std::size_t b0 = 0; b0 < KB && b0 * W < cols; b0 += KBI) {
    B acc[R][KBI];
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t b = 0; b < KBI; ++b) acc[r][b] = B(0.0f);
    std::size_t t = 0;
    for (; t + W <= d; t += W) {
      // Other types than float: this step's W elements of each Q row, converted once.
      alignas(64) float qc[R][W];
      if (!std::is_same<T, float>::value)
        for (std::size_t r = 0; r < R; ++r) E::load(qr[r] + t).store_aligned(qc[r]);
#pragma GCC unroll 4
      for (std::size_t b = 0; b < KBI; ++b) {
        B blk[W];
        const std::size_t j0 = (b0 + b) * W;
        const std::uintptr_t src0 =
            reinterpret_cast<std::uintptr_t>(k) + (j0 * ldk + t) * sizeof(storage_t<T>);
        const std::size_t row_bytes = ldk * sizeof(storage_t<T>), ahead = KB * W * row_bytes;
        if (j0 + W <= cols) {
          // A whole block (every block but the last): no per-key test on the hot path.
#pragma GCC unroll 16
          for (std::size_t i = 0; i < W; ++i) {
            const std::uintptr_t src = src0 + i * row_bytes;
            blk[i] = E::load(reinterpret_cast<const storage_t<T> *>(src));
            // The next tile's keys, same dims: see pack_panel.
            __builtin_prefetch(reinterpret_cast<const void *>(src + ahead));
          }
        } else {
          for (std::size_t i = 0; i < W; ++i) {
            // Addresses as integers: a pointer past K (a padding key) is never formed.
            const std::uintptr_t src = src0 + i * row_bytes;
            blk[i] = j0 + i < cols ? E::load(reinterpret_cast<const storage_t<T> *>(src)) : B(0.0f);
          }
        }
        Transpose<Arch>::run(blk);
        // Constant indices throughout (unrolled): the accumulators stay in registers.
#pragma GCC unroll 16
        for (std::size_t tt = 0; tt < W; ++tt)
#pragma GCC unroll 8
          for (std::size_t r = 0; r < R; ++r)
            acc[r][b] = fmadd(B(std::is_same<T, float>::value ? E::one(qr[r][t + tt]) : qc[r][tt]),
                              blk[tt], acc[r][b]);
      }
    }
    for (; t < d; ++t) {
      for (std::size_t b = 0; b < KBI; ++b) {
        alignas(64) float col[W];
        for (std::size_t i = 0; i < W; ++i) {
          const std::size_t j = (b0 + b) * W + i;
          col[i] = j < cols ? E::one(k[j * ldk + t]) : 0.0f;
        }
        const B kv = B::load_aligned(col);
        for (std::size_t r = 0; r < R; ++r) acc[r][b] = fmadd(B(E::one(qr[r][t])), kv, acc[r][b]);
      }
    }
    const B sc(scale);
    const std::size_t j0 = b0 * W, n = cols - j0 < KBI * W ? cols - j0 : KBI * W;
    for (std::size_t r = 0; r < rows; ++r) {
      alignas(64) float out[KBI * W];
      for (std::size_t b = 0; b < KBI; ++b) (acc[r][b] * sc).store_aligned(out + b * W);
      for (std::size_t j = 0; j < n; ++j) s[r * lds + j0 + j] = out[j];
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
