// SPDX-License-Identifier: Apache-2.0
// The one blocked driver. Every scores, key-cache and attention call of every dtype runs the loop
// in drive(), so the promises that tie those calls together (any block of S gives the same bits,
// a cache gives the raw call's bits, any thread count gives the same bits) follow from one loop.
// A dtype's kernel row bound to its K source (raw rows or a packed cache) is an "engine": a small
// copyable value with the interface below. The driver owns the blocking, the heads, the masks, the
// finishing of rows and the split into tasks.
//
// Engine interface (E):
//   using Scratch;                     stack buffers of one drive() call (packed K, converted Q)
//   mr()                               rows of a prefill tile
//   chunk()                            dims of d per prepared chunk
//   block(n_k, shared)                 keys per prepared block (a multiple of the panel width);
//                                      shared: the block serves several heads or is cut by a mask
//   prepare(sc, hk, j, keys, t, dc)    makes keys [j, j + keys) x dims [t, t + dc) of KV head hk
//                                      ready for tile() (packs raw K; points into a cache)
//   tile(sc, h, i, rows, keys, t, dc, s, lds, flags)   rows [i, i + rows) of query head h against
//                                      the prepared block (kAccumulate / kFinal as for the kernels)
//   decodes(n_q)                       whether calls of n_q rows take the decode shape
//   dec_rows(by_heads)                 rows per dec() call: the heads of a group (one query row),
//                                      or the query rows of one head
//   dec_keys(group, n_k)               keys per dec() call
//   key_align()                        dec() calls start at multiples of this (a cache's panels)
//   key_unit(decoding)                 key splits between tasks are multiples of this
//   dec(hk, h, i, rows, by_heads, j, cols, s, lds)   the decode shape: heads h ... (row 0) or rows
//                                      i ... of head h, against keys [j, j + cols)
//   rebased(h0, hk0, i0, j0)           the engine for query heads from h0, KV heads from hk0, query
//                                      rows from i0 and keys from j0 (a multiple of key_unit)
#ifndef ATTNSCORE_DRIVER_HPP
#define ATTNSCORE_DRIVER_HPP

#include <cstddef>
#include <cstdint>

#if defined(__SSE__) || defined(_M_X64)
#include <xmmintrin.h>
#endif

#include "core/finish.h"
#include "dispatch/kernels.h"

namespace attnscore {

// The attention output's operands (attnscore_attention_output, checked): V as f32 rows (f32 V
// read in place; f16 and bf16 widened by to_f32, s8 dequantized, a block at a time), O, the
// log-sum-exp and the sinks, and the level's exp_sum and pv.
struct OutputSpec {
  std::size_t dv = 0;
  int v_dtype = 0;
  const void *v = nullptr;
  std::size_t vhs = 0, vrs = 0;    // V head and row strides (elements)
  const float *v_scale = nullptr;  // s8 V: per key (vsrs 1) or per head (vsrs 0)
  std::size_t vshs = 0, vsrs = 0;
#if ATTNSCORE_HAVE_F16
  ToF32Fn v_to_f32 = nullptr;  // f16 or bf16 V
  ToF16Fn narrow = nullptr;    // f16 O
#endif
  void *o = nullptr;
  bool o_f16 = false;
  std::size_t ohs = 0, ors = 0;
  float *lse = nullptr;
  std::size_t lhs = 0, lrs = 0;
  const float *sinks = nullptr;
  const SoftmaxF32 *row = nullptr;
  void *ws = nullptr;  // the caller's workspace for a split of the keys, or null
  std::size_t ws_bytes = 0;
};

// A checked call in the driver's terms: shapes, S (f32) and what finishes its rows.
struct Problem {
  std::size_t heads_q = 1, heads_kv = 1, n_q = 0, n_k = 0, d = 0;
  float *s = nullptr;
  std::size_t shs = 0, srs = 0;  // S head and row strides
  float scale = 1.0f;            // resolved (never 0)
  float softcap = 0.0f;
  unsigned mask = 0;
  std::size_t pos_offset = 0, window = 0;
  SoftmaxSpanFn softmax = nullptr;  // null: no softmax
#if ATTNSCORE_HAVE_F16
  // A binary16 S instead (s null; strides shs, srs): f32 blocks rounded once by to_f16.
  std::uint16_t *s16 = nullptr;
  ToF16Fn to_f16 = nullptr;
#endif
  // The attention output instead of S (s null): output.cpp.
  const OutputSpec *out = nullptr;
  // The decode shape (e.decodes(n_q) of the whole call, set by drive_parallel): every part of a
  // call takes the path of the whole, whose summation order may differ from the other's.
  bool decode = false;
  // Whole f32 tile rows of S stored non-temporally (kStoreNT), set with `decode`: an S of
  // kStoreNTBytes or more that the call does not read back (no finishing). Never a block on the
  // stack (the binary16 S, the attention output), which the call reads at once.
  bool store_nt = false;

  bool finishes() const noexcept { return mask != 0 || softcap != 0.0f || softmax != nullptr; }

  // The keys [lo, hi) that query row i sees (lo == hi: none).
  Span span(std::size_t i) const noexcept {
    Span sp{0, n_k};
    if (mask == 0) return sp;
    const std::size_t p = pos_offset + i;  // checked: no overflow
    sp.hi = p >= n_k ? n_k : p + 1;
    if ((mask & ATTNSCORE_MASK_WINDOW) && p >= window) sp.lo = p - window + 1;
    if (sp.lo > sp.hi) sp.lo = sp.hi;
    return sp;
  }
};

// A single-head scores call: S is n_q x n_k with row stride lds.
inline Problem scores_problem(std::size_t n_q, std::size_t n_k, std::size_t d, float *s,
                              std::size_t lds, float scale) noexcept {
  Problem p;
  p.n_q = n_q, p.n_k = n_k, p.d = d, p.s = s, p.shs = 0, p.srs = lds, p.scale = scale;
  return p;
}

// An attention call (arguments checked, scale resolved); the softmax is the level's.
inline Problem attention_problem(const attnscore_attention_desc &a, float *s, float scale,
                                 attnscore_level level) noexcept {
  Problem p;
  p.heads_q = a.heads_q, p.heads_kv = a.heads_kv, p.n_q = a.n_q, p.n_k = a.n_k, p.d = a.d;
  p.s = s, p.shs = a.s.head_stride, p.srs = a.s.row_stride, p.scale = scale;
  p.softcap = a.softcap, p.mask = a.mask, p.pos_offset = a.pos_offset, p.window = a.window;
  p.softmax = (a.flags & ATTNSCORE_ATTN_SOFTMAX) ? softmax_for(level) : nullptr;
  return p;
}

// The f32 S of a whole call from which prefill stores it non-temporally: past every L2 seen (1 to
// 2 MiB), where writing through the caches read each line for ownership and evicted Q and K.
constexpr std::size_t kStoreNTBytes = std::size_t{4} << 20;

// The paths of a whole call: decode or prefill (their summation orders differ), and whether its
// S is stored non-temporally.
template <class E>
void set_paths(const E &e, Problem &p) noexcept {
  p.decode = e.decodes(p.n_q);
  p.store_nt = p.s != nullptr && !p.finishes() && p.out == nullptr &&
               p.heads_q * p.n_q * p.n_k >= kStoreNTBytes / sizeof(float);
}

// Rows of a head computed before their rows are finished, so that the block of S being finished
// is still in L2 (rounded up to a multiple of MR). Without finishing, all rows form one block.
constexpr std::size_t kRowBlock = 64;

// Not inlined: one copy per engine, whatever calls it.
template <class E>
__attribute__((noinline)) void drive(const E &engine, const Problem &p) noexcept {
  // A local copy: the kernels are called through pointers, so the engine's fields read through a
  // reference would be loaded again after every call (2.5% more instructions in an sse2 decode).
  const E e = engine;
  const std::size_t g = p.heads_q / p.heads_kv, n_q = p.n_q, n_k = p.n_k, d = p.d;
  typename E::Scratch sc;
  const auto finish_group = [&](std::size_t hk, std::size_t r0, std::size_t r1) {
    if (!p.finishes()) return;
    for (std::size_t h = hk * g; h < (hk + 1) * g; ++h)
      for (std::size_t i = r0; i < r1; ++i)
        finish_row(p.s + h * p.shs + i * p.srs, n_k, p.span(i), p.softcap, p.softmax);
  };

  if (p.decode) {
    // Decode: only the keys some row sees are computed. With one query row the group's heads are
    // the tile's rows, so each block of K is read (and transposed) once for up to dec_rows heads;
    // larger groups take it in near-equal parts while it is in L1.
    const std::size_t unit = e.key_align(), dk = e.dec_keys(g, n_k);
    for (std::size_t hk = 0; hk < p.heads_kv; ++hk) {
      if (n_q == 1) {
        const Span sp = p.span(0);
        const std::size_t parts = (g + e.dec_rows(true) - 1) / e.dec_rows(true);
        const std::size_t step = (g + parts - 1) / parts;
        for (std::size_t j = sp.lo / unit * unit; j < sp.hi; j += dk) {
          const std::size_t cols = sp.hi - j < dk ? sp.hi - j : dk;
          for (std::size_t r = 0; r < g; r += step)
            e.dec(hk, hk * g + r, 0, g - r < step ? g - r : step, true, j, cols,
                  p.s + (hk * g + r) * p.shs + j, p.shs);
        }
      } else {
        const std::size_t R = e.dec_rows(false);
        for (std::size_t h = hk * g; h < (hk + 1) * g; ++h)
          for (std::size_t i = 0; i < n_q; i += R) {
            const std::size_t rows = n_q - i < R ? n_q - i : R;
            const std::size_t lo = p.span(i).lo / unit * unit, hi = p.span(i + rows - 1).hi;
            for (std::size_t j = lo; j < hi; j += dk) {
              const std::size_t cols = hi - j < dk ? hi - j : dk;
              e.dec(hk, h, i, rows, false, j, cols, p.s + h * p.shs + i * p.srs + j, p.srs);
            }
          }
      }
      finish_group(hk, 0, n_q);
    }
    return;
  }

  // Prefill: within a block of rows, each prepared block of keys serves the rows of every head of
  // the group that see at least one of its keys, starting at the first such row (the kernels give
  // the same bits for any block, so tiles need not sit on a grid); wholly masked blocks are not
  // even prepared.
  const std::size_t mr = e.mr(), kc = e.chunk(), bk = e.block(n_k, p.mask != 0 || g > 1);
  const std::size_t mc = p.finishes() ? (kRowBlock + mr - 1) / mr * mr : n_q;
  for (std::size_t hk = 0; hk < p.heads_kv; ++hk)
    for (std::size_t r0 = 0; r0 < n_q; r0 += mc) {
      const std::size_t r1 = n_q - r0 < mc ? n_q : r0 + mc;
      for (std::size_t j = 0; j < n_k; j += bk) {
        const std::size_t keys = n_k - j < bk ? n_k - j : bk;
        std::size_t ia = r0, ib = r1;  // spans move right as i grows
        while (ia < ib && p.span(ia).hi <= j) ++ia;
        while (ib > ia && p.span(ib - 1).lo >= j + keys) --ib;
        if (ia == ib) continue;
        for (std::size_t t = 0; t < d; t += kc) {
          const std::size_t dc = d - t < kc ? d - t : kc;
          const unsigned flags = (t > 0 ? kAccumulate : 0u) | (t + dc == d ? kFinal : 0u) |
                                 (p.store_nt ? kStoreNT : 0u);
          e.prepare(sc, hk, j, keys, t, dc);
          for (std::size_t h = hk * g; h < (hk + 1) * g; ++h)
            for (std::size_t i = ia; i < ib; i += mr) {
              const std::size_t rows = ib - i < mr ? ib - i : mr;
              e.tile(sc, h, i, rows, keys, t, dc, p.s + h * p.shs + i * p.srs + j, p.srs, flags);
            }
        }
      }
      finish_group(hk, r0, r1);
    }
#if defined(__SSE__) || defined(_M_X64)
  // Non-temporal stores are weakly ordered: done before the call (or task) returns.
  if (p.store_nt) _mm_sfence();
#endif
}

// Where a sub-problem starts in the whole call: its first query head, KV head, query row and key
// (keys a multiple of the engine's key_unit). Offsets add, as rebased() does.
struct Offsets {
  std::size_t h0 = 0, hk0 = 0, i0 = 0, j0 = 0;
};

// A whole call on the calling thread: drive() with the call's paths.
template <class E>
void drive_call(const E &e, Problem p) noexcept {
  set_paths(e, p);
  drive(e, p);
}

// An engine with its type erased, for the steps that run once per call or per block of S: the
// split into tasks and the binary16 blocks. Templated, those steps were compiled once per engine
// and per caller and made a third of the library on aarch64; only drive() needs the engine's type.
struct AnyEngine {
  const void *e;
  void (*drive_at)(const void *e, const Offsets &o, const Problem &p) noexcept;
  bool decoding;                   // e.decodes(n_q) of the whole call
  std::size_t mr, unit, unit_f16;  // e.mr(), e.key_unit(decoding), e.key_unit(false)
};

// drive() on the engine rebased to `o`.
template <class E>
void drive_at(const void *e, const Offsets &o, const Problem &p) noexcept {
  drive(static_cast<const E *>(e)->rebased(o.h0, o.hk0, o.i0, o.j0), p);
}

// One call split into tasks run through `par` (split.cpp): ranges of KV heads (each with its query
// heads); else, for unfinished scores, ranges of keys (decode, or prefill with enough panels);
// else ranges of whole row tiles (their positions, and so the masks, kept). Every element is
// computed as in the whole call, so the split never changes a bit. par == nullptr: the calling
// thread; else par->parallel_for is called exactly once, whatever the thread count. A binary16 S
// (p.s16) is computed in f32 blocks on the stack, each element then rounded once.
void drive_parallel(const AnyEngine &e, const Problem &p, const attnscore_parallel *par) noexcept;

template <class E>
void drive_parallel(const E &e, const Problem &p, const attnscore_parallel *par) noexcept {
  Problem whole = p;
  set_paths(e, whole);
  drive_parallel(AnyEngine{&e, &drive_at<E>, whole.decode, e.mr(), e.key_unit(whole.decode),
                           e.key_unit(false)},
                 whole, par);
}

// The attention output of p.out on the engine (output.cpp): online softmax over chunks of keys
// whose scores the engine makes into a stack block; tasks over (KV head, heads, rows) blocks.
void run_output(const AnyEngine &e, const Problem &p, const attnscore_parallel *par) noexcept;

// attnscore_attention_output_workspace on a checked shape (dv resolved; output.cpp).
std::size_t output_workspace_bytes(std::size_t heads_q, std::size_t heads_kv, std::size_t n_q,
                                   std::size_t n_k, std::size_t dv, std::size_t threads) noexcept;

// The bytes of workspace in which an output call packs raw K once, every KV head's f32 panels
// of whole d, instead of once per block of rows: above 0 for a prefill (not the decode shape of
// a kernel of mr rows) whose KV heads each serve two blocks or more.
std::size_t output_pack_bytes(std::size_t heads_q, std::size_t heads_kv, std::size_t n_q,
                              std::size_t n_k, std::size_t d, std::size_t dv, std::size_t mr,
                              std::size_t nr) noexcept;

// The 64-byte aligned workspace of p.out for output_pack_bytes, or null: no workspace, one too
// small, or one that the split of the keys takes (output_workspace_bytes above 0).
float *output_pack_buffer(const Problem &p, std::size_t mr, std::size_t nr,
                          const attnscore_parallel *par) noexcept;

struct CacheCore;

// The bytes of workspace in which the output call on `a` (value dimension dv) packs raw K once
// (output_pack_bytes for the engine of its dtype, options and K source; run.cpp), or 0.
std::size_t output_pack_query(const attnscore_attention_desc &a, std::size_t dv) noexcept;

// An attention call (arguments checked; p from attention_problem, its S set) on the engine of its
// dtype and K source, raw K or the cache c (run.cpp: every engine's drive() is compiled there).
void run_attention(const attnscore_attention_desc &a, const CacheCore *c, const Problem &p,
                   const attnscore_parallel *par) noexcept;

}  // namespace attnscore

#endif  // ATTNSCORE_DRIVER_HPP
