// SPDX-License-Identifier: Apache-2.0
// The attention output O = softmax(S) V without S in memory (attnscore_attention_output). Keys go
// in chunks on a grid fixed by the shape and the kernel; a chunk's scores are the engine's (the
// scores call's bits) in a stack block, its weights are taken against its own maximum, and its
// weighted sum of V rows is merged into its segment's running (max, sum, output) in chunk order,
// and the segments (kSegChunks chunks each, on the same fixed grid) into the row's in segment
// order. A row's result therefore depends only on the shape and level, never on how rows are
// grouped into blocks, blocks into tasks, or (with a caller workspace) segments into tasks.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "core/driver.hpp"
#include "core/finish.h"

namespace attnscore {
namespace {

constexpr std::size_t kBlockRows = 32;    // (head, row) pairs per block
constexpr std::size_t kRowFloats = 4096;  // the f32 output rows of a block (and the chunk sums)
constexpr std::size_t kVFloats = 2048;    // V rows widened at a time
constexpr std::size_t kSegChunks = ATTNSCORE_ATTN_SPLIT_KEYS / ATTNSCORE_ATTN_CHUNK_KEYS;
static_assert(kRowFloats >= ATTNSCORE_ATTN_OUT_MAX_DV, "one output row must fit");
static_assert(kSegChunks * ATTNSCORE_ATTN_CHUNK_KEYS == ATTNSCORE_ATTN_SPLIT_KEYS,
              "a segment is whole chunks");

// The chunk width: ATTNSCORE_ATTN_CHUNK_KEYS rounded up to the engine's key unit, so a chunk
// starts where a key cache's panel does.
std::size_t chunk_keys(const AnyEngine &e) noexcept {
  const std::size_t u = e.unit_f16;
  return (ATTNSCORE_ATTN_CHUNK_KEYS + u - 1) / u * u;
}

// V rows [j, j + n) of KV head hk as f32 rows of dv: in place for f32 (*ld the row stride),
// else widened into buf (*ld = dv).
const float *v_rows(const OutputSpec &o, std::size_t hk, std::size_t j, std::size_t n, float *buf,
                    std::size_t *ld) noexcept {
  const std::size_t at = hk * o.vhs + j * o.vrs, dv = o.dv;
  switch (o.v_dtype) {
    case ATTNSCORE_DTYPE_F32:
      *ld = o.vrs;
      return static_cast<const float *>(o.v) + at;
#if ATTNSCORE_HAVE_F16
    case ATTNSCORE_DTYPE_F16:
    case ATTNSCORE_DTYPE_BF16:
      for (std::size_t r = 0; r < n; ++r)
        o.v_to_f32(dv, static_cast<const std::uint16_t *>(o.v) + at + r * o.vrs, buf + r * dv);
      break;
#endif
    default: {  // s8: each value times its key's scale, rounded once
      const std::int8_t *src = static_cast<const std::int8_t *>(o.v) + at;
      for (std::size_t r = 0; r < n; ++r)
        o.row->dequant(dv, src + r * o.vrs, o.v_scale[hk * o.vshs + (j + r) * o.vsrs],
                       buf + r * dv);
    }
  }
  *ld = dv;
  return buf;
}

// A block: its KV head, first query head, query heads, first row and rows.
struct Block {
  std::size_t hk, h0, gh, i0, nr;
};

// A block's running state: per row its maximum m and sum l, and its outputs acc (rows x dv).
struct State {
  float *m, *l, *acc;
};

// Keys [jb, je) of block blk's rows, chunk by chunk, merged into st (the state of nothing seen:
// m -Inf, l 0, acc 0, on entry). jb is the block's first key or a segment start, so chunks keep
// the grid from key 0.
void run_chunks(const AnyEngine &e, const Problem &p, const Block &blk, std::size_t jb,
                std::size_t je, const State &st) noexcept {
  const std::size_t hk = blk.hk, h0 = blk.h0, gh = blk.gh, i0 = blk.i0, nr = blk.nr;
  const OutputSpec &o = *p.out;
  const std::size_t dv = o.dv, rows = gh * nr, C = chunk_keys(e), unit = e.unit_f16;
  alignas(64) float s[kBlockRows * ATTNSCORE_ATTN_CHUNK_KEYS + 64 * kBlockRows];
  alignas(64) float part[kRowFloats];  // this chunk's weighted sums, rows x dv
  alignas(64) float vbuf[kVFloats];
  float a[kBlockRows], b[kBlockRows];
  float *m = st.m, *l = st.l, *acc = st.acc;
  const std::size_t lo = jb, hi = je;
  for (std::size_t j = lo / C * C; j < hi; j += C) {
    const std::size_t jlo = j > lo / unit * unit ? j : lo / unit * unit;
    const std::size_t jhi = hi < j + C ? hi : j + C;
    const std::size_t cols = jhi - jlo;
    // The raw scores of the block's rows against keys [jlo, jhi): the scores call's bits.
    Problem sp;
    sp.heads_q = gh, sp.heads_kv = 1, sp.n_q = nr, sp.n_k = cols, sp.d = p.d;
    sp.s = s, sp.shs = nr * cols, sp.srs = cols, sp.scale = p.scale, sp.decode = p.decode;
    e.drive_at(e.e, Offsets{h0, hk, i0, jlo}, sp);
    bool any = false;
    for (std::size_t r = 0; r < rows; ++r) {
      const Span v = p.span(i0 + r % nr);
      const std::size_t ka = v.lo > jlo ? v.lo : jlo, kb = v.hi < jhi ? v.hi : jhi;
      a[r] = 1.0f, b[r] = 0.0f;  // a row that sees no key here keeps its state
      if (ka >= kb) continue;
      float *w = s + r * cols + (ka - jlo);
      const std::size_t n = kb - ka;
      if (p.softcap != 0.0f) softcap_span(w, n, p.softcap);
      float mc;
      const float lc = o.row->exp_sum(w, n, &mc);
      const float mn = mc > m[r] ? mc : m[r];
      a[r] = exp_nonpositive(m[r] - mn);  // 0 for the row's first chunk (m = -Inf)
      b[r] = exp_nonpositive(mc - mn);
      m[r] = mn, l[r] = l[r] * a[r] + lc * b[r];
      for (std::size_t x = 0; x < dv; ++x) part[r * dv + x] = 0.0f;
      any = true;
    }
    if (!any) continue;
    // The weighted sums, V widened once per step for all the block's rows.
    const std::size_t step = o.v_dtype == ATTNSCORE_DTYPE_F32 ? cols : kVFloats / dv;
    for (std::size_t k0 = jlo; k0 < jhi; k0 += step) {
      const std::size_t k1 = jhi - k0 < step ? jhi : k0 + step;
      std::size_t ldv;
      const float *vr = v_rows(o, hk, k0, k1 - k0, vbuf, &ldv);
      // Each row's keys of the step in order: those before the keys every active row sees, those
      // keys (one call for all the rows: each V row loaded once), then those after.
      std::size_t ka[kBlockRows], kb[kBlockRows], n_act = 0, lo_all = k0, hi_all = k1;
      const float *w[kBlockRows];
      float *t[kBlockRows];
      for (std::size_t r = 0; r < rows; ++r) {
        const Span v = p.span(i0 + r % nr);
        const std::size_t a0 = v.lo > k0 ? v.lo : k0, b0 = v.hi < k1 ? v.hi : k1;
        if (a0 >= b0 || b[r] == 0.0f) continue;
        ka[n_act] = a0, kb[n_act] = b0, lo_all = a0 > lo_all ? a0 : lo_all;
        hi_all = b0 < hi_all ? b0 : hi_all;
        w[n_act] = s + r * cols + (a0 - jlo), t[n_act] = part + r * dv, ++n_act;
      }
      if (lo_all > hi_all) lo_all = hi_all;
      for (std::size_t x = 0; x < n_act; ++x)
        if (ka[x] < lo_all)
          o.row->pv(1, lo_all - ka[x], dv, &w[x], vr + (ka[x] - k0) * ldv, ldv, &t[x]);
      if (lo_all < hi_all) {
        const float *wc[kBlockRows];
        for (std::size_t x = 0; x < n_act; ++x) wc[x] = w[x] + (lo_all - ka[x]);
        o.row->pv(n_act, hi_all - lo_all, dv, wc, vr + (lo_all - k0) * ldv, ldv, t);
      }
      for (std::size_t x = 0; x < n_act; ++x)
        if (kb[x] > hi_all) {
          const std::size_t from = ka[x] > hi_all ? ka[x] : hi_all;
          const float *wx = w[x] + (from - ka[x]);
          o.row->pv(1, kb[x] - from, dv, &wx, vr + (from - k0) * ldv, ldv, &t[x]);
        }
    }
    for (std::size_t r = 0; r < rows; ++r) {
      if (b[r] == 0.0f && a[r] == 1.0f) continue;
      float *ar = acc + r * dv;
      const float *pr = part + r * dv;
      for (std::size_t x = 0; x < dv; ++x) ar[x] = ar[x] * a[r] + pr[x] * b[r];
    }
  }
}

void clear(std::size_t rows, std::size_t dv, const State &st) noexcept {
  for (std::size_t r = 0; r < rows; ++r) st.m[r] = -std::numeric_limits<float>::infinity();
  for (std::size_t r = 0; r < rows; ++r) st.l[r] = 0.0f;
  for (std::size_t x = 0; x < rows * dv; ++x) st.acc[x] = 0.0f;
}

// A segment's state merged into the row's, as a chunk's into its segment's; the first segment a
// row sees is taken as it is (exact), one that it does not see leaves the row as it was.
void merge(std::size_t rows, std::size_t dv, const State &seg, const State &st) noexcept {
  const float inf = std::numeric_limits<float>::infinity();
  for (std::size_t r = 0; r < rows; ++r) {
    float *ar = st.acc + r * dv;
    const float *sr = seg.acc + r * dv;
    if (st.m[r] == -inf) {
      st.m[r] = seg.m[r], st.l[r] = seg.l[r];
      for (std::size_t x = 0; x < dv; ++x) ar[x] = sr[x];
      continue;
    }
    if (seg.m[r] == -inf) continue;
    const float mn = seg.m[r] > st.m[r] ? seg.m[r] : st.m[r];
    const float a = exp_nonpositive(st.m[r] - mn), b = exp_nonpositive(seg.m[r] - mn);
    st.m[r] = mn, st.l[r] = st.l[r] * a + seg.l[r] * b;
    for (std::size_t x = 0; x < dv; ++x) ar[x] = ar[x] * a + sr[x] * b;
  }
}

// Keys per segment: kSegChunks chunks of the engine's width.
std::size_t segment_keys(const AnyEngine &e) noexcept { return kSegChunks * chunk_keys(e); }

// The keys [lo, hi) rows i0 .. i0 + nr see (spans move right as i grows).
Span block_keys(const Problem &p, std::size_t i0, std::size_t nr) noexcept {
  return Span{p.span(i0).lo, p.span(i0 + nr - 1).hi};
}

// Segment sg of the block into seg (cleared first): the keys it sees there, if any.
void segment(const AnyEngine &e, const Problem &p, const Block &b, std::size_t sg,
             const State &seg) noexcept {
  clear(b.gh * b.nr, p.out->dv, seg);
  const Span k = block_keys(p, b.i0, b.nr);
  const std::size_t SK = segment_keys(e);
  const std::size_t jb = sg * SK > k.lo ? sg * SK : k.lo,
                    je = (sg + 1) * SK < k.hi ? (sg + 1) * SK : k.hi;
  if (jb < je) run_chunks(e, p, b, jb, je, seg);
}

// Each row of a block from its state: the sink joins the denominator, then O = acc / l and
// lse = m + ln l.
void finish_rows(const Problem &p, std::size_t h0, std::size_t gh, std::size_t i0, std::size_t nr,
                 const State &st) noexcept {
  const OutputSpec &o = *p.out;
  const std::size_t dv = o.dv, rows = gh * nr;
  const float inf = std::numeric_limits<float>::infinity();
  float *m = st.m, *l = st.l, *acc = st.acc;
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t h = h0 + r / nr, i = i0 + r % nr;
    float *ar = acc + r * dv;
    float mr = m[r], lr = l[r], sc = 1.0f;
    if (o.sinks != nullptr && o.sinks[h] != -inf) {
      const float z = o.sinks[h], mn = z > mr ? z : mr;
      sc = exp_nonpositive(mr - mn);
      lr = lr * sc + exp_nonpositive(z - mn);
      mr = mn;
    }
    const float inv = lr == 0.0f ? 0.0f : sc / lr;  // no key and no sink: O = 0
    for (std::size_t x = 0; x < dv; ++x) ar[x] *= inv;
    const std::size_t at = h * o.ohs + i * o.ors;
#if ATTNSCORE_HAVE_F16
    if (o.o_f16) {
      o.narrow(dv, ar, static_cast<std::uint16_t *>(o.o) + at);
    } else
#endif
    {
      float *dst = static_cast<float *>(o.o) + at;
      for (std::size_t x = 0; x < dv; ++x) dst[x] = ar[x];
    }
    if (o.lse != nullptr) o.lse[h * o.lhs + i * o.lrs] = lr == 0.0f ? -inf : mr + std::log(lr);
  }
}

// Blocks of (head, row) pairs: the whole group at once when its rows fit (decode: each chunk of
// K and V read once for the group), else runs of rows of one head. Rows per block also keep the
// block's outputs within kRowFloats.
struct Plan {
  std::size_t g, gh, nr, row_blocks, head_blocks, units;
  Plan(std::size_t heads_q, std::size_t heads_kv, std::size_t n_q, std::size_t dv) noexcept {
    g = heads_q / heads_kv;
    const std::size_t cap = kRowFloats / dv < kBlockRows ? kRowFloats / dv : kBlockRows;
    nr = n_q < cap ? n_q : cap;
    gh = cap / nr < g ? cap / nr : g;
    row_blocks = (n_q + nr - 1) / nr, head_blocks = (g + gh - 1) / gh;
    units = heads_kv * head_blocks * row_blocks;
  }
  // One segment's state in the workspace: m and l for the most rows a block has, then acc.
  std::size_t slot_floats(std::size_t dv) const noexcept { return gh * nr * (dv + 2); }
  // The state in slot x of a workspace ws.
  State slot(float *ws, std::size_t x, std::size_t dv) const noexcept {
    float *at = ws + x * slot_floats(dv);
    return State{at, at + gh * nr, at + 2 * gh * nr};
  }
};

// Whether a shape the workspace queries see (unchecked) makes a Plan.
bool plannable(std::size_t heads_q, std::size_t heads_kv, std::size_t n_q,
               std::size_t dv) noexcept {
  return heads_q != 0 && heads_kv != 0 && heads_q % heads_kv == 0 && n_q != 0 && dv != 0 &&
         dv <= ATTNSCORE_ATTN_OUT_MAX_DV;
}

// Block u of the plan.
Block block_of(const Plan &w, std::size_t n_q, std::size_t u) noexcept {
  const std::size_t rb = u % w.row_blocks, rest = u / w.row_blocks;
  const std::size_t hb = rest % w.head_blocks, hk = rest / w.head_blocks;
  const std::size_t h0 = hb * w.gh, i0 = rb * w.nr;
  return Block{hk, hk * w.g + h0, w.g - h0 < w.gh ? w.g - h0 : w.gh, i0,
               n_q - i0 < w.nr ? n_q - i0 : w.nr};
}

// The segments a block sees: [first, end).
Span segments_of(const Problem &p, const Block &b, std::size_t SK) noexcept {
  const Span k = block_keys(p, b.i0, b.nr);
  return k.lo < k.hi ? Span{k.lo / SK, (k.hi - 1) / SK + 1} : Span{0, 0};
}

// Block b's rows: the states of the segments it sees, from seg_of(sg) in order, merged into the
// rows' own, then each row finished. The one merge of both ways to run a block.
template <class SegOf>
void fold_segments(const Problem &p, const Block &b, std::size_t SK, SegOf seg_of) noexcept {
  const std::size_t rows = b.gh * b.nr, dv = p.out->dv;
  alignas(64) float acc[kRowFloats];
  float m[kBlockRows], l[kBlockRows];
  const State st{m, l, acc};
  clear(rows, dv, st);
  const Span in = segments_of(p, b, SK);
  for (std::size_t sg = in.lo; sg < in.hi; ++sg) merge(rows, dv, seg_of(sg), st);
  finish_rows(p, b.h0, b.gh, b.i0, b.nr, st);
}

// Block b on this thread: each segment made in a stack state as it is merged.
void block(const AnyEngine &e, const Problem &p, const Block &b) noexcept {
  alignas(64) float sacc[kRowFloats];
  float sm[kBlockRows], sl[kBlockRows];
  const State seg{sm, sl, sacc};
  fold_segments(p, b, segment_keys(e), [&](std::size_t sg) {
    segment(e, p, b, sg, seg);
    return seg;
  });
}

}  // namespace

std::size_t output_workspace_bytes(std::size_t heads_q, std::size_t heads_kv, std::size_t n_q,
                                   std::size_t n_k, std::size_t dv, std::size_t threads) noexcept {
  if (!plannable(heads_q, heads_kv, n_q, dv)) return 0;
  const Plan w(heads_q, heads_kv, n_q, dv);
  // Segments are at least ATTNSCORE_ATTN_SPLIT_KEYS keys (chunks round up, never down).
  const std::size_t segs = n_k / ATTNSCORE_ATTN_SPLIT_KEYS + (n_k % ATTNSCORE_ATTN_SPLIT_KEYS != 0);
  if (w.units >= threads || segs < 2) return 0;
  std::size_t n;
  if (__builtin_mul_overflow(w.units * segs, w.slot_floats(dv), &n) ||
      __builtin_mul_overflow(n, sizeof(float), &n) || __builtin_add_overflow(n, 64, &n))
    return 0;
  return n;
}

std::size_t output_pack_bytes(std::size_t heads_q, std::size_t heads_kv, std::size_t n_q,
                              std::size_t n_k, std::size_t d, std::size_t dv, std::size_t mr,
                              std::size_t nr) noexcept {
  if (!plannable(heads_q, heads_kv, n_q, dv) || n_k == 0 || d == 0 ||
      (n_q <= kDecodeRows && n_q < mr))
    return 0;  // decode streams K, never packs it
  if (Plan(heads_q, heads_kv, n_q, dv).units / heads_kv < 2) return 0;  // packed once anyway
  const std::size_t panels = n_k / nr + (n_k % nr != 0);
  std::size_t n;
  if (__builtin_mul_overflow(heads_kv * panels, nr * d, &n) ||
      __builtin_mul_overflow(n, sizeof(float), &n) || __builtin_add_overflow(n, 64, &n))
    return 0;
  return n;
}

float *output_pack_buffer(const Problem &p, std::size_t mr, std::size_t nr,
                          const attnscore_parallel *par) noexcept {
  const OutputSpec &o = *p.out;
  const std::size_t threads = par == nullptr || par->threads == 0 ? 1 : par->threads;
  if (o.ws == nullptr || (par != nullptr && output_workspace_bytes(p.heads_q, p.heads_kv, p.n_q,
                                                                   p.n_k, o.dv, threads) != 0))
    return nullptr;  // no workspace, or it is the split's
  const std::size_t need =
      output_pack_bytes(p.heads_q, p.heads_kv, p.n_q, p.n_k, p.d, o.dv, mr, nr);
  const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(o.ws);
  const std::uintptr_t pad = (64 - at % 64) % 64;
  if (need == 0 || o.ws_bytes < need - 64 + pad) return nullptr;
  return reinterpret_cast<float *>(at + pad);
}

void run_output(const AnyEngine &e, const Problem &p, const attnscore_parallel *par) noexcept {
  const std::size_t dv = p.out->dv, SK = segment_keys(e);
  const Plan w(p.heads_q, p.heads_kv, p.n_q, dv);
  const std::size_t threads = par == nullptr || par->threads == 0 ? 1 : par->threads;
  const std::size_t segs = p.n_k / SK + (p.n_k % SK != 0);
  // Fewer blocks than threads, and a workspace for every block's segments: tasks take segments,
  // each leaving its state in the workspace, and the calling thread merges them in order once
  // every task is done. The arithmetic is block()'s, so the bits are the same either way.
  float *ws = nullptr;
  if (par != nullptr && w.units < threads && segs > 1 && p.out->ws != nullptr) {
    const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(p.out->ws);
    const std::uintptr_t pad = (alignof(float) - at % alignof(float)) % alignof(float);
    if (p.out->ws_bytes >= pad &&
        (p.out->ws_bytes - pad) / sizeof(float) / w.slot_floats(dv) / segs >= w.units)
      ws = reinterpret_cast<float *>(at + pad);
  }
  struct Work {
    const AnyEngine *e;
    const Problem *p;
    const Plan *w;
    float *ws;
    std::size_t segs, SK, pairs, per;
  } k{&e, &p, &w, ws, segs, SK, 0, 0};
  if (ws == nullptr) {
    k.pairs = w.units, k.per = (w.units + threads - 1) / threads;  // blocks per task
    const auto task = [](void *ctx, std::size_t index) {
      const Work &k = *static_cast<const Work *>(ctx);
      for (std::size_t u = index * k.per; u < (index + 1) * k.per && u < k.pairs; ++u) {
        block(*k.e, *k.p, block_of(*k.w, k.p->n_q, u));
      }
    };
    if (par == nullptr) return task(&k, 0);
    par->parallel_for(par->ctx, task, &k, (k.pairs + k.per - 1) / k.per);
    return;
  }
  k.pairs = w.units * segs, k.per = (k.pairs + threads - 1) / threads;  // segments per task
  const auto task = [](void *ctx, std::size_t index) {
    const Work &k = *static_cast<const Work *>(ctx);
    for (std::size_t x = index * k.per; x < (index + 1) * k.per && x < k.pairs; ++x) {
      const std::size_t u = x / k.segs, sg = x % k.segs;
      const Block b = block_of(*k.w, k.p->n_q, u);
      const Span in = segments_of(*k.p, b, k.SK);
      if (sg < in.lo || sg >= in.hi) continue;
      segment(*k.e, *k.p, b, sg, k.w->slot(k.ws, x, k.p->out->dv));
    }
  };
  par->parallel_for(par->ctx, task, &k, (k.pairs + k.per - 1) / k.per);
  for (std::size_t u = 0; u < w.units; ++u)
    fold_segments(p, block_of(w, p.n_q, u), SK,
                  [&](std::size_t sg) { return w.slot(ws, u * segs + sg, dv); });
}

}  // namespace attnscore
