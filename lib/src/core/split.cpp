// SPDX-License-Identifier: Apache-2.0
// The steps around the one loop that need no engine type: the split of a call into tasks and the
// binary16 S computed in f32 blocks (driver.hpp).
#include <cstddef>
#include <cstdint>

#include "core/driver.hpp"

namespace attnscore {
namespace {

#if ATTNSCORE_HAVE_F16
// Floats of S computed at a time for a binary16 S (32 KiB of stack beside the engine's scratch);
// with the softmax a block holds whole rows, so n_k is limited to this.
constexpr std::size_t kOutFloats = ATTNSCORE_ATTN_F16_SOFTMAX_MAX_KEYS;

// A binary16 S: the f32 results in blocks on the stack, each element then rounded once. Blocks
// are kc keys (the whole row under the softmax) x rb rows x hs query heads of one group (hs
// divides the group, so a block's heads share their K head and read it once); each is the same
// step on a sub-problem, so every element is the f32 call's.
void drive_f16(const AnyEngine &e, const Offsets &o, const Problem &p) noexcept {
  constexpr std::uint16_t kF16NegInf = 0xfc00;
  const std::size_t g = p.heads_q / p.heads_kv, unit = e.unit_f16;
  const std::size_t kc = p.n_k <= kOutFloats ? p.n_k : kOutFloats / unit * unit;
  std::size_t hs = g;
  while (hs * kc > kOutFloats) --hs;
  while (g % hs != 0) --hs;
  const std::size_t rb = kOutFloats / (hs * kc) < p.n_q ? kOutFloats / (hs * kc) : p.n_q;
  alignas(64) float block[kOutFloats];
  for (std::size_t h0 = 0; h0 < p.heads_q; h0 += hs)
    for (std::size_t j0 = 0; j0 < p.n_k; j0 += kc) {
      const std::size_t cols = p.n_k - j0 < kc ? p.n_k - j0 : kc;
      for (std::size_t i0 = 0; i0 < p.n_q; i0 += rb) {
        const std::size_t rows = p.n_q - i0 < rb ? p.n_q - i0 : rb;
        // Under a mask, rows before position j0 see no key of this chunk (never with the
        // softmax: its one chunk starts at 0): -Inf, as an f32 S gives.
        std::size_t skip = 0;
        if (p.mask != 0 && p.pos_offset + i0 < j0) {
          skip = j0 - (p.pos_offset + i0) < rows ? j0 - (p.pos_offset + i0) : rows;
          for (std::size_t h = h0; h < h0 + hs; ++h)
            for (std::size_t r = 0; r < skip; ++r)
              for (std::size_t j = 0; j < cols; ++j)
                p.s16[h * p.shs + (i0 + r) * p.srs + j0 + j] = kF16NegInf;
          if (skip == rows) continue;
        }
        // Row i0 + skip at position pos_offset + i0 + skip is key (position - j0) of the chunk
        // (>= 0 by the skip), so every mask span maps.
        Problem b = p;
        b.heads_q = hs, b.heads_kv = 1, b.n_q = rows - skip, b.n_k = cols;
        b.s = block, b.shs = (rows - skip) * cols, b.srs = cols, b.s16 = nullptr;
        b.store_nt = false;
        b.pos_offset = p.mask != 0 ? p.pos_offset + i0 + skip - j0 : 0;
        const Offsets ob{o.h0 + h0, o.hk0 + h0 / g, o.i0 + i0 + skip, o.j0 + j0};
        e.drive_at(e.e, ob, b);
        for (std::size_t h = 0; h < hs; ++h)
          for (std::size_t r = 0; r < rows - skip; ++r)
            p.to_f16(cols, block + (h * (rows - skip) + r) * cols,
                     p.s16 + (h0 + h) * p.shs + (i0 + skip + r) * p.srs + j0);
      }
    }
}
#endif

// The sub-problem at `o` with its S as it asks: f32 directly, or binary16 through blocks.
void run_problem(const AnyEngine &e, const Offsets &o, const Problem &p) noexcept {
#if ATTNSCORE_HAVE_F16
  if (p.s16 != nullptr) return drive_f16(e, o, p);
#endif
  e.drive_at(e.e, o, p);
}

// Keys per task below which a decode split costs more than it saves (a few KiB of K).
constexpr std::size_t kMinDecodeKeys = 256;

}  // namespace

void drive_parallel(const AnyEngine &e, const Problem &p, const attnscore_parallel *par) noexcept {
#if ATTNSCORE_HAVE_OUTPUT
  if (p.out != nullptr) return run_output(e, p, par);
#endif
  if (par == nullptr) return run_problem(e, Offsets{}, p);
  const std::size_t threads = par->threads == 0 ? 1 : par->threads;
  const auto ceil_div = [](std::size_t a, std::size_t b) { return a / b + (a % b != 0); };
  enum class By { heads, keys, rows } by = By::heads;
  std::size_t step = p.heads_kv, n = p.heads_kv;
  const bool decoding = e.decoding;
  const std::size_t unit = e.unit;
  if (p.heads_kv >= threads) {
    step = ceil_div(p.heads_kv, threads);
  } else if (!p.finishes() && decoding) {
    const std::size_t tasks = p.n_k / kMinDecodeKeys < threads ? p.n_k / kMinDecodeKeys : threads;
    by = By::keys, n = p.n_k;
    step = ceil_div(ceil_div(p.n_k, tasks == 0 ? 1 : tasks), unit) * unit;
  } else if (!p.finishes() && !decoding && ceil_div(p.n_k, unit) >= threads) {
    by = By::keys, n = p.n_k;
    step = ceil_div(ceil_div(p.n_k, unit), threads) * unit;
  } else if (!decoding && p.n_q >= 2 * e.mr) {
    by = By::rows, n = p.n_q;
    step = ceil_div(ceil_div(p.n_q, e.mr), threads) * e.mr;
  }
  struct Work {
    const AnyEngine *e;
    const Problem *p;
    By by;
    std::size_t step, n;
  } w{&e, &p, by, step, n};
  const auto task = [](void *ctx, std::size_t index) {
    const Work &w = *static_cast<const Work *>(ctx);
    const std::size_t first = index * w.step;
    if (first >= w.n) return;
    const std::size_t count = w.n - first < w.step ? w.n - first : w.step;
    Problem q = *w.p;
    const std::size_t g = q.heads_q / q.heads_kv;
    // The element of S this task starts at (S is f32 or binary16, with the same strides).
    std::size_t at;
    Offsets o;
    if (w.by == By::heads) {
      at = first * g * q.shs;
      q.heads_kv = count, q.heads_q = count * g;
      o.h0 = first * g, o.hk0 = first;
    } else if (w.by == By::keys) {
      at = first;
      q.n_k = count;
      o.j0 = first;
    } else {
      at = first * q.srs;
      q.n_q = count;
      q.pos_offset += first;  // cannot overflow: the whole call's last position fits
      o.i0 = first;
    }
    if (q.s != nullptr) q.s += at;
#if ATTNSCORE_HAVE_F16
    if (q.s16 != nullptr) q.s16 += at;
#endif
    run_problem(*w.e, o, q);
  };
  par->parallel_for(par->ctx, task, &w, ceil_div(n, step));
}

}  // namespace attnscore
