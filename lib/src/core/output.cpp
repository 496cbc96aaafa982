// SPDX-License-Identifier: Apache-2.0
// The attention output O = softmax(S) V without S in memory (attnscore_attention_output). Keys go
// in chunks on a grid fixed by the shape and the kernel; a chunk's scores are the engine's (the
// scores call's bits) in a stack block, its weights are taken against its own maximum, and its
// weighted sum of V rows is merged into the row's running (max, sum, output) in chunk order. A
// row's result therefore depends only on the shape and level, never on how rows are grouped
// into blocks or blocks into tasks.
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
static_assert(kRowFloats >= ATTNSCORE_ATTN_OUT_MAX_DV, "one output row must fit");

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

// Rows i0 .. i0 + nr of query heads h0 .. h0 + gh (all of KV head hk): every key chunk they see,
// then each row finished into O and the log-sum-exp.
void block(const AnyEngine &e, const Problem &p, std::size_t hk, std::size_t h0, std::size_t gh,
           std::size_t i0, std::size_t nr) noexcept {
  const OutputSpec &o = *p.out;
  const std::size_t dv = o.dv, rows = gh * nr, C = chunk_keys(e), unit = e.unit_f16;
  const float inf = std::numeric_limits<float>::infinity();
  alignas(64) float s[kBlockRows * ATTNSCORE_ATTN_CHUNK_KEYS + 64 * kBlockRows];
  alignas(64) float acc[kRowFloats];   // running outputs, rows x dv
  alignas(64) float part[kRowFloats];  // this chunk's weighted sums, rows x dv
  alignas(64) float vbuf[kVFloats];
  float m[kBlockRows], l[kBlockRows], a[kBlockRows], b[kBlockRows];
  for (std::size_t r = 0; r < rows; ++r) m[r] = -inf, l[r] = 0.0f;
  for (std::size_t x = 0; x < rows * dv; ++x) acc[x] = 0.0f;
  // Spans move right as i grows: the block sees keys [lo, hi).
  const std::size_t lo = p.span(i0).lo, hi = p.span(i0 + nr - 1).hi;
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
  // Each row: the sink joins the denominator, then O = acc / l and lse = m + ln l.
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

}  // namespace

void run_output(const AnyEngine &e, const Problem &p, const attnscore_parallel *par) noexcept {
  // Blocks of (head, row) pairs: the whole group at once when its rows fit (decode: each chunk
  // of K and V read once for the group), else runs of rows of one head. Rows per block also
  // keep the block's outputs within kRowFloats.
  const std::size_t g = p.heads_q / p.heads_kv, dv = p.out->dv;
  const std::size_t cap = kRowFloats / dv < kBlockRows ? kRowFloats / dv : kBlockRows;
  const std::size_t nr = p.n_q < cap ? p.n_q : cap;
  const std::size_t gh = cap / nr < g ? cap / nr : g;
  const std::size_t row_blocks = (p.n_q + nr - 1) / nr, head_blocks = (g + gh - 1) / gh;
  const std::size_t units = p.heads_kv * head_blocks * row_blocks;
  const std::size_t threads = par == nullptr || par->threads == 0 ? 1 : par->threads;
  const std::size_t per = (units + threads - 1) / threads;  // blocks per task
  struct Work {
    const AnyEngine *e;
    const Problem *p;
    std::size_t g, gh, nr, row_blocks, head_blocks, units, per;
  } w{&e, &p, g, gh, nr, row_blocks, head_blocks, units, per};
  const auto task = [](void *ctx, std::size_t index) {
    const Work &w = *static_cast<const Work *>(ctx);
    for (std::size_t u = index * w.per; u < (index + 1) * w.per && u < w.units; ++u) {
      const std::size_t rb = u % w.row_blocks, rest = u / w.row_blocks;
      const std::size_t hb = rest % w.head_blocks, hk = rest / w.head_blocks;
      const std::size_t h0 = hb * w.gh, i0 = rb * w.nr;
      const std::size_t gh = w.g - h0 < w.gh ? w.g - h0 : w.gh;
      const std::size_t nr = w.p->n_q - i0 < w.nr ? w.p->n_q - i0 : w.nr;
      block(*w.e, *w.p, hk, hk * w.g + h0, gh, i0, nr);
    }
  };
  if (par == nullptr) return task(&w, 0);
  par->parallel_for(par->ctx, task, &w, (units + per - 1) / per);
}

}  // namespace attnscore
