// SPDX-License-Identifier: Apache-2.0
// The opt-in bf16 dot product on AMX (ATTNSCORE_ATTN_BF16_DOT), a row of the avx512 level that
// also needs AMX-BF16: tdpbf16ps multiplies 16 Q rows x 32 dims by 32 dims x 16 keys into 16 x
// 16 f32 sums, 16 times a vdpbf16ps's products. K is packed as the avx512bf16 row packs it
// (pairs of dims: a row of B tiles), Q's tiles are read from the raw rows. tdpbf16ps rounds to
// nearest even and treats subnormal inputs and results as 0 whatever MXCSR says (the contract
// says so); each sum adds its dims' products in t order, a pair at a time.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "dispatch/kernels.h"
#include "kernels/generic/tile_bf16dot.hpp"
#include "pack_bf16_pairs.hpp"

namespace attnscore {
namespace {

// kT: the rows of a tile, the keys of a B tile and the pairs of dims of a step (64-byte rows).
// kBlock: the rows of the four C tiles, kMR: of a call (the tile configuration amortized over
// them).
constexpr std::size_t kMR = 128, kBlock = 32, kNR = kPairsNR, kT = 16, kStepDims = 2 * kT;
static_assert(kPanelFloats / kNR % kT == 0, "a chunk of the driver's panel is whole steps");

// The palette-1 tile configuration (ldtilecfg's 64 bytes).
struct alignas(64) TileConfig {
  std::uint8_t palette, start_row, reserved[14];
  std::uint16_t colsb[16];
  std::uint8_t rows[16];
};

// GCC 12's tile intrinsics are asm statements that do not tell the compiler they read or write
// memory: this orders the stores to a buffer before a tile load from it, and a tile store before
// the reads of its buffer.
inline void memory_barrier() noexcept { __asm__ volatile("" ::: "memory"); }

// The avx512bf16 row's panel, with zero pairs up to a whole step, so that an odd last step reads
// zeros past d rather than what an earlier panel left.
ATTNSCORE_KERNEL_ENTRY void pack(std::size_t cols, std::size_t d, const std::uint16_t *k,
                                 std::size_t ldk, float *panel) noexcept {
  pack_pairs(cols, d, k, ldk, panel);
  const std::size_t pairs = (d + 1) / 2, whole = (pairs + kT - 1) / kT * kT;
  std::memset(panel + pairs * kNR, 0, (whole - pairs) * kNR * sizeof(float));
}

// Register map (tiles) for up to 32 rows x 32 keys; kTwo: rows 16 ... present.
//   tmm0 tmm1   C: rows 0 ... 15 x keys 0 ... 15, 16 ... 31 (f32 sums)
//   tmm2 tmm3   C: rows 16 ... 31, the same keys (kTwo)
//   tmm4 tmm5   A: Q rows 0 ... 15, 16 ... 31 (kTwo), 32 dims of a step
//   tmm6 tmm7   B: the panel's 16 pairs of the step x keys 0 ... 15, 16 ... 31
// Per step: 2 + 2 tile loads (1 + 2 without kTwo), 4 tdpbf16ps (2), 16 x 16 x 32 products each.
// c holds the 32 x 32 sums (row stride kNR floats): read under kAccumulate, written at the end.
template <bool kTwo>
void sums(std::size_t rows, std::size_t d, const std::uint16_t *q, std::size_t ldq,
          const float *panel, float *c, unsigned flags) noexcept {
  constexpr std::size_t kRowB = kNR * sizeof(float);  // bytes per row of c and of the panel
  memory_barrier();
  if (flags & kAccumulate) {
    _tile_loadd(0, c, kRowB);
    _tile_loadd(1, c + kT, kRowB);
    if (kTwo) {
      _tile_loadd(2, c + kT * kNR, kRowB);
      _tile_loadd(3, c + kT * kNR + kT, kRowB);
    }
  } else {
    _tile_zero(0);
    _tile_zero(1);
    if (kTwo) {
      _tile_zero(2);
      _tile_zero(3);
    }
  }
  const auto step = [&](const std::uint16_t *a, std::size_t lda, const float *b) {
    _tile_loadd(4, a, lda * sizeof(std::uint16_t));
    if (kTwo) _tile_loadd(5, a + kT * lda, lda * sizeof(std::uint16_t));
    _tile_loadd(6, b, kRowB);
    _tile_loadd(7, b + kT, kRowB);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    if (kTwo) {
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  };
  std::size_t t = 0;
  for (; t + kStepDims <= d; t += kStepDims) step(q + t, ldq, panel + t / 2 * kNR);
  if (t < d) {  // the last dims of a d not a multiple of 32: Q's rows through zeros
    alignas(64) std::uint16_t a[kBlock * kStepDims] = {};
    for (std::size_t i = 0; i < rows; ++i)
      std::memcpy(a + i * kStepDims, q + i * ldq + t, (d - t) * sizeof(std::uint16_t));
    memory_barrier();
    step(a, kStepDims, panel + t / 2 * kNR);
  }
  _tile_stored(0, c, kRowB);
  _tile_stored(1, c + kT, kRowB);
  if (kTwo) {
    _tile_stored(2, c + kT * kNR, kRowB);
    _tile_stored(3, c + kT * kNR + kT, kRowB);
  }
  memory_barrier();
}

}  // namespace

ATTNSCORE_KERNEL_ENTRY void qk_bf16_128x32__amxbf16(std::size_t rows, std::size_t cols,
                                                    std::size_t d, const std::uint16_t *q,
                                                    std::size_t ldq, const float *panel, float *s,
                                                    std::size_t lds, float scale,
                                                    unsigned flags) noexcept {
  const __mmask16 m0 = static_cast<__mmask16>(cols >= kT ? 0xffffu : (1u << cols) - 1);
  const __mmask16 m1 = static_cast<__mmask16>(cols <= kT ? 0u : (1u << (cols - kT)) - 1);
  const __m512 sc = _mm512_set1_ps((flags & kFinal) ? scale : 1.0f);
  // A large S streamed as the f32 tile streams it (tile_f32.hpp); the driver fences.
  const bool stream = streams_tile(flags, cols, kNR, s, lds);
  alignas(64) float c[kBlock * kNR];
  std::size_t shaped = 0;  // the rows the loaded configuration's tiles have
  for (std::size_t i0 = 0; i0 < rows; i0 += kBlock) {
    const std::size_t br = rows - i0 < kBlock ? rows - i0 : kBlock;
    float *sb = s + i0 * lds;
    if (br != shaped) {
      // Tiles shaped to the rows present: Q is never read past them.
      const std::size_t r0 = br < kT ? br : kT, r1 = br - r0;
      TileConfig cfg{};
      cfg.palette = 1;
      for (const int tmm : {0, 1, 4}) cfg.rows[tmm] = static_cast<std::uint8_t>(r0);
      for (const int tmm : {2, 3, 5}) cfg.rows[tmm] = static_cast<std::uint8_t>(r1);
      cfg.rows[6] = cfg.rows[7] = kT;
      for (int tmm = 0; tmm < 8; ++tmm) cfg.colsb[tmm] = cfg.rows[tmm] ? 64 : 0;
      memory_barrier();
      _tile_loadconfig(&cfg);
      shaped = br;
    }
    if (flags & kAccumulate)
      for (std::size_t i = 0; i < br; ++i) {
        _mm512_store_ps(c + i * kNR, _mm512_maskz_loadu_ps(m0, sb + i * lds));
        _mm512_store_ps(c + i * kNR + kT, _mm512_maskz_loadu_ps(m1, sb + i * lds + kT));
      }
    if (br > kT)
      sums<true>(br, d, q + i0 * ldq, ldq, panel, c, flags);
    else
      sums<false>(br, d, q + i0 * ldq, ldq, panel, c, flags);
    for (std::size_t i = 0; i < br; ++i)
      for (std::size_t v = 0; v < 2; ++v) {
        const __m512 o = _mm512_mul_ps(_mm512_load_ps(c + i * kNR + v * kT), sc);
        float *dst = sb + i * lds + v * kT;
        if (stream)
          _mm512_stream_ps(dst, o);
        else
          _mm512_mask_storeu_ps(dst, v == 0 ? m0 : m1, o);
      }
  }
  // Released after each call, so a caller's own tile use (or none) is undisturbed between calls.
  _tile_release();
}

namespace {

// Register map (tiles) of the decode, S^T = K Q^T: K is read straight from its rows, unpacked.
//   tmm0 tmm1   C: keys 0 ... 15, 16 ... 31 of a step pair x the query rows (f32 sums)
//   tmm2 tmm3   A: those keys x the step's 32 dims (raw K; the last dims of a d not a multiple
//               of 32 through zeros)
//   tmm4        B: the step's 16 pairs of dims x the query rows (Q as columns, built per call)
// Per step: 2 + 1 tile loads, 2 tdpbf16ps (two chains). Each sum is the prefill tile's element
// for element: the same pairs in the same order (a product of two bfloat16 values is exact and
// commutes), so a decode gives the prefill's bits.
constexpr std::size_t kDecKeys = 512;          // keys per call: the tile configuration amortized
constexpr std::size_t kDecB = kMaxDecodeRows;  // words per row of B and of the sums' buffer
// Prefetched this many keys ahead: cold K read 12.0-12.2 GB/s at d 128 against 10.9 without (and
// 11.3-11.9 at 64 keys) on an Intel Xeon with AMX; hot 1 x 4096 fell from 84 to 68 GB/s.
constexpr std::size_t kPrefetchKeys = 32;

void configure_dec(std::size_t rows, std::size_t keys) noexcept {
  TileConfig cfg{};
  cfg.palette = 1;
  const auto colsb = static_cast<std::uint16_t>(rows * sizeof(float));
  cfg.rows[0] = cfg.rows[1] = cfg.rows[2] = cfg.rows[3] = static_cast<std::uint8_t>(keys);
  cfg.colsb[0] = cfg.colsb[1] = colsb;
  cfg.colsb[2] = cfg.colsb[3] = 64;
  cfg.rows[4] = kT;
  cfg.colsb[4] = colsb;
  memory_barrier();
  _tile_loadconfig(&cfg);
}

// The sums of kBlocks (1 or 2) blocks of `keys` keys (what the tiles are configured for) from
// key 0 of k, into c (kDecB floats a key).
template <std::size_t kBlocks>
void dec_blocks(std::size_t keys, std::size_t d, const std::uint16_t *k, std::size_t ldk,
                const std::uint32_t *qb, float *c) noexcept {
  _tile_zero(0);
  if (kBlocks == 2) _tile_zero(1);
  const auto step = [&](const std::uint16_t *a, std::size_t lda, std::size_t p) {
    _tile_loadd(4, qb + p * kDecB, kDecB * sizeof(std::uint32_t));
    _tile_loadd(2, a, lda * sizeof(std::uint16_t));
    _tile_dpbf16ps(0, 2, 4);
    if (kBlocks == 2) {
      _tile_loadd(3, a + kT * lda, lda * sizeof(std::uint16_t));
      _tile_dpbf16ps(1, 3, 4);
    }
  };
  std::size_t t = 0;
  for (; t + kStepDims <= d; t += kStepDims) step(k + t, ldk, t / 2);
  if (t < d) {  // the last dims: each key's through zeros, never past its row
    alignas(64) std::uint16_t a[2 * kT * kStepDims] = {};
    for (std::size_t j = 0; j < kBlocks * keys; ++j)
      std::memcpy(a + j * kStepDims, k + j * ldk + t, (d - t) * sizeof(std::uint16_t));
    memory_barrier();
    step(a, kStepDims, t / 2);
  }
  _tile_stored(0, c, kDecB * sizeof(float));
  if (kBlocks == 2) _tile_stored(1, c + kT * kDecB, kDecB * sizeof(float));
  memory_barrier();
}

}  // namespace

// `rows` <= kMaxDecodeRows x `cols` <= kDecKeys scores from raw Q and K, d <= kDotDecMaxD.
ATTNSCORE_KERNEL_ENTRY void qk_bf16_128x32__amxbf16_dec(std::size_t rows, std::size_t cols,
                                                        std::size_t d, const std::uint16_t *q,
                                                        std::size_t ldq, const std::uint16_t *k,
                                                        std::size_t ldk, float *s, std::size_t lds,
                                                        float scale) noexcept {
  // B of every step: pair p of row n at qb[p * kDecB + n], 0 past d (as the prefill's zeros).
  const std::size_t pairs = (d + 1) / 2, whole = (pairs + kT - 1) / kT * kT;
  alignas(64) std::uint32_t qb[kDotDecMaxD / 2 * kDecB];
  for (std::size_t p = 0; p < whole; ++p)
    for (std::size_t n = 0; n < kDecB; ++n)
      qb[p * kDecB + n] = n < rows && p < pairs ? tile::bf16_pair(q + n * ldq, 2 * p, d) : 0u;
  alignas(64) float c[2 * kT * kDecB];
  const __m512 sc = _mm512_set1_ps(scale);
  const __m512i at =
      _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                         _mm512_set1_epi32(kDecB));
  // Row n of S from the sums of `keys` keys at c (key m's at c[m * kDecB + n]).
  const auto store = [&](std::size_t j, std::size_t keys) {
    for (std::size_t b = 0; b < keys; b += kT) {
      const std::size_t m = keys - b < kT ? keys - b : kT;
      const __mmask16 mask = static_cast<__mmask16>(m == kT ? 0xffffu : (1u << m) - 1);
      for (std::size_t n = 0; n < rows; ++n) {
        const __m512 v =
            _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mask, at, c + b * kDecB + n, 4);
        _mm512_mask_storeu_ps(s + n * lds + j + b, mask, _mm512_mul_ps(v, sc));
      }
    }
  };
  std::size_t j = 0;
  if (cols >= kT) {
    configure_dec(rows, kT);
    for (; j + 2 * kT <= cols; j += 2 * kT) {
      // The rows kPrefetchKeys ahead, line by line (addresses as integers: a prefetch past K
      // never faults, but the pointer would not exist).
      for (std::size_t r = 0; r < 2 * kT; ++r) {
        const std::uintptr_t row =
            reinterpret_cast<std::uintptr_t>(k) + (j + kPrefetchKeys + r) * ldk * 2;
        for (std::size_t b = 0; b < d * 2; b += 64)
          __builtin_prefetch(reinterpret_cast<const void *>(row + b));
      }
      dec_blocks<2>(kT, d, k + j * ldk, ldk, qb, c);
      store(j, 2 * kT);
    }
    if (j + kT <= cols) {
      dec_blocks<1>(kT, d, k + j * ldk, ldk, qb, c);
      store(j, kT);
      j += kT;
    }
  }
  if (j < cols) {  // the last keys: tiles of that many rows, never past K
    configure_dec(rows, cols - j);
    dec_blocks<1>(cols - j, d, k + j * ldk, ldk, qb, c);
    store(j, cols - j);
  }
  _tile_release();
}

ATTNSCORE_BF16DOT_ROW(qk_bf16_128x32__amxbf16, ATTNSCORE_LEVEL_AVX512, ATTNSCORE_CPU_AMXBF16, pack,
                      kMR, kNR, 0, qk_bf16_128x32__amxbf16_dec, kDecKeys, kMaxDecodeRows, nullptr)

}  // namespace attnscore
