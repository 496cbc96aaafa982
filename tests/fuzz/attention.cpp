// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "fuzz/fuzz.hpp"

namespace fuzz {

// Elements from the first to the last of a heads x rows x cols tensor; false on overflow.
bool span3(std::size_t heads, std::size_t rows, std::size_t cols, std::size_t hs, std::size_t rs,
           std::size_t *n) {
  std::size_t a, b, c;
  return checked_mul(heads - 1, hs, &a) && checked_mul(rows - 1, rs, &b) && checked_add(a, b, &c) &&
         checked_add(c, cols, n);
}

// The extent of a heads x rows x cols tensor (strides hs, rs) as an address range.
Extent extent3(const void *p, std::size_t heads, std::size_t rows, std::size_t cols, std::size_t hs,
               std::size_t rs, std::size_t elem) {
  std::size_t n;
  if (!span3(heads, rows, cols, hs, rs, &n)) return {false, 0, 0};
  return extent(p, 1, n, n, elem);
}

// The attention section: its model and checks (attention_case, below, says what it covers).

namespace {

struct Attn {
  std::size_t hq, hkv, n_q, n_k, d, qhs, qrs, khs, krs, shs, srs;
  float scale, softcap;
  unsigned mask, flags;
  std::size_t p0, w;
};

}  // namespace

// Heads (and rows) pairwise disjoint: rows nested in heads, or heads nested in rows.
bool nested(std::size_t heads, std::size_t rows, std::size_t cols, std::size_t hs, std::size_t rs) {
  if (rows > 1 && rs < cols) return false;  // rows that overlap (only the lse's can get here)
  if (heads == 1) return true;
  if (rows == 1) return hs >= cols;
  std::size_t x, y;
  if (checked_mul(rows - 1, rs, &x) && checked_add(x, cols, &y) && hs >= y) return true;
  return hs >= cols && checked_mul(heads - 1, hs, &x) && checked_add(x, cols, &y) && rs >= y;
}

bool bad_float(float f) {  // NaN, +-Inf or subnormal, by its bits
  const std::uint32_t e = to_bits(f) & 0x7f800000u, m = to_bits(f) & 0x7fffffu;
  return e == 0x7f800000u || (e == 0 && m != 0);
}

int dtype_int(const attnscore_dtype &e) {
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

// S is f32 or f16 only.
bool dtype_known(int dtype, bool output) {
  return dtype_built(dtype) &&
         (!output || dtype == ATTNSCORE_DTYPE_F32 || dtype == ATTNSCORE_DTYPE_F16);
}

// Every scale of an s8 tensor usable (rows per head: 1 when scale_row_stride is 0).
bool scales_usable(const attnscore_tensor &t, std::size_t heads, std::size_t rows) {
  const std::size_t per_head = t.scale_row_stride == 0 ? 1 : rows;
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t i = 0; i < per_head; ++i)
      if (bad_float(t.scale[h * t.scale_head_stride + i])) return false;
  return true;
}

// attnscore_attention's status from the check order (the order of its `check`): the no-op;
// ZERO_DIM; UNKNOWN_DTYPE; DIM_TOO_LARGE; NULL_POINTER; BAD_CACHE; DTYPE_MISMATCH; a cache's
// SHAPE_MISMATCH; HEADS_MISMATCH; BAD_LDQ, BAD_LDK, BAD_LDS; BAD_SCALE_COUNT; BAD_SCALE;
// BAD_SOFTCAP; BAD_FLAGS; BAD_WINDOW; POSITION_OVERFLOW; BAD_HEAD_STRIDE; SIZE_OVERFLOW; OVERLAP;
// BAD_QUANT_SCALE; ROW_TOO_LONG. With count_cache, S meeting the memory given to the cache's init
// counts as OVERLAP (the cache uses only a part of that memory: the caller accepts either).
// Without scores, the same checks without any of S's (attnscore_attention_output's first part).
attnscore_status predict_attention(const attnscore_attention_desc &a, const CacheFacts *c,
                                   bool count_cache, bool scores) {
  if (a.heads_q == 0 || a.n_q == 0 || a.n_k == 0) return ATTNSCORE_OK;
  if (a.d == 0) return ATTNSCORE_ERR_ZERO_DIM;
  const int qt = dtype_int(a.q.dtype), kt = dtype_int(a.k.dtype), st = dtype_int(a.s.dtype);
  const bool raw = a.k_cache == nullptr;
  if (!dtype_known(qt, false) || (raw && !dtype_known(kt, false)) ||
      (scores && !dtype_known(st, true)))
    return ATTNSCORE_ERR_UNKNOWN_DTYPE;
  const bool s8 = qt == ATTNSCORE_DTYPE_S8;
  if (s8 && a.d > ATTNSCORE_S8_MAX_D) return ATTNSCORE_ERR_DIM_TOO_LARGE;
  if (a.q.data == nullptr || (scores && a.s.data == nullptr) || (raw && a.k.data == nullptr) ||
      (s8 && (a.q.scale == nullptr || (raw && a.k.scale == nullptr))))
    return ATTNSCORE_ERR_NULL_POINTER;
  if (!raw && (c == nullptr || !c->valid)) return ATTNSCORE_ERR_BAD_CACHE;
  if ((raw ? kt : c->dtype) != qt) return ATTNSCORE_ERR_DTYPE_MISMATCH;
  if (!raw && (c->heads != a.heads_kv || c->d != a.d || a.n_k > c->size))
    return ATTNSCORE_ERR_SHAPE_MISMATCH;
  if (a.heads_kv == 0 || a.heads_q % a.heads_kv != 0) return ATTNSCORE_ERR_HEADS_MISMATCH;
  if (a.q.row_stride < a.d) return ATTNSCORE_ERR_BAD_LDQ;
  if (raw && a.k.row_stride < a.d) return ATTNSCORE_ERR_BAD_LDK;
  if (scores && a.s.row_stride < a.n_k) return ATTNSCORE_ERR_BAD_LDS;
  if (s8 && (a.q.scale_row_stride > 1 || (raw && a.k.scale_row_stride > 1)))
    return ATTNSCORE_ERR_BAD_SCALE_COUNT;
  if (bad_float(a.scale)) return ATTNSCORE_ERR_BAD_SCALE;
  if (a.softcap != 0.0f && (bad_float(a.softcap) || a.softcap < 0.0f))
    return ATTNSCORE_ERR_BAD_SOFTCAP;
  if (a.mask > 3 || a.flags > 7 || ((a.flags & 2) && qt != ATTNSCORE_DTYPE_F16) ||
      ((a.flags & 4) && qt != ATTNSCORE_DTYPE_BF16))
    return ATTNSCORE_ERR_BAD_FLAGS;
  if ((a.mask & 2) && a.window == 0) return ATTNSCORE_ERR_BAD_WINDOW;
  if (a.mask != 0 && a.pos_offset > SIZE_MAX - (a.n_q - 1)) return ATTNSCORE_ERR_POSITION_OVERFLOW;
  if (!nested(a.heads_q, a.n_q, a.d, a.q.head_stride, a.q.row_stride) ||
      (raw && !nested(a.heads_kv, a.n_k, a.d, a.k.head_stride, a.k.row_stride)) ||
      (scores && !nested(a.heads_q, a.n_q, a.n_k, a.s.head_stride, a.s.row_stride)))
    return ATTNSCORE_ERR_BAD_HEAD_STRIDE;
  const std::size_t e = dtype_bytes(qt);
  const Extent eq = extent3(a.q.data, a.heads_q, a.n_q, a.d, a.q.head_stride, a.q.row_stride, e);
  const Extent ek =
      raw ? extent3(a.k.data, a.heads_kv, a.n_k, a.d, a.k.head_stride, a.k.row_stride, e)
          : Extent{true, 0, 0};
  const Extent es = scores ? extent3(a.s.data, a.heads_q, a.n_q, a.n_k, a.s.head_stride,
                                     a.s.row_stride, dtype_bytes(st))
                           : Extent{true, 0, 0};
  const Extent eqs =
      s8 ? extent3(a.q.scale, a.heads_q, a.n_q, 1, a.q.scale_head_stride, a.q.scale_row_stride, 4)
         : Extent{true, 0, 0};
  const Extent eks = s8 && raw ? extent3(a.k.scale, a.heads_kv, a.n_k, 1, a.k.scale_head_stride,
                                         a.k.scale_row_stride, 4)
                               : Extent{true, 0, 0};
  if (!eq.ok || !ek.ok || !es.ok || !eqs.ok || !eks.ok) return ATTNSCORE_ERR_SIZE_OVERFLOW;
  const Extent ec =
      !raw && count_cache ? extent(c->mem, 1, c->bytes, c->bytes, 1) : Extent{true, 0, 0};
  if (scores &&
      (meets(es, eq) || (raw && meets(es, ek)) || (!raw && count_cache && meets(es, ec)) ||
       (s8 && meets(es, eqs)) || (s8 && raw && meets(es, eks))))
    return ATTNSCORE_ERR_OVERLAP;
  if (s8 &&
      (!scales_usable(a.q, a.heads_q, a.n_q) || (raw && !scales_usable(a.k, a.heads_kv, a.n_k))))
    return ATTNSCORE_ERR_BAD_QUANT_SCALE;
  if (scores && st == ATTNSCORE_DTYPE_F16 && (a.flags & 1) &&
      a.n_k > ATTNSCORE_ATTN_F16_SOFTMAX_MAX_KEYS)
    return ATTNSCORE_ERR_ROW_TOO_LONG;
  return ATTNSCORE_OK;
}

std::size_t decode_attn_stride(Input &in, std::size_t dflt) {
  const std::uint8_t c = in.u8();
  if (c < 0xe0) return dflt;
  if (c < 0xf0) return dflt - 1 - c % 4;  // short (wraps to huge from 0)
  return huge(in, c);
}

void attn_layout(unsigned code, std::size_t heads, std::size_t rows, std::size_t cols,
                 std::size_t *hs, std::size_t *rs) {
  if (code == 2) {
    *hs = cols, *rs = heads * cols + 1;
  } else {
    *rs = cols + code, *hs = rows * *rs + code * 3;
  }
}

float decode_softcap(Input &in) {
  const std::uint8_t c = in.u8();
  switch (c % 16) {
    case 8:
      return 1.5f;
    case 9:
      return 30.0f;
    case 10:
      return -1.0f;
    case 11:
      return from_bits(0x7fc00000u);
    case 12:
      return from_bits(0x7f800000u);
    case 13:
      return from_bits(0x00000001u);
    case 14:
      return from_bits(in.u32());
    default:
      return c % 16 == 15 ? -0.0f : 0.0f;
  }
}

namespace {

// `score(h, i, j, &r, &e)`: the scaled score before the softcap and its error bound.
template <class Score>
FUZZ_UNGUIDED void check_attention_values(const Attn &a, const float *s, Score score) {
  const double u = 1.0 / (1 << 24);
  const std::size_t g = a.hq / a.hkv;
  std::vector<double> ref(a.n_k), tol(a.n_k);
  std::vector<char> vis(a.n_k);
  for (std::size_t h = 0; h < a.hq; ++h)
    for (std::size_t i = 0; i < a.n_q; ++i) {
      const std::size_t p = a.p0 + i;
      double mx = -INFINITY, emax = 0, sum = 0;
      std::size_t n_vis = 0;
      for (std::size_t j = 0; j < a.n_k; ++j) {
        vis[j] = a.mask == 0 || (j <= p && (!(a.mask & 2) || a.w > p - j));  // (no wrap)
        double r, e;
        score(h, h / g, i, j, &r, &e);
        const double raw = r;
        if (a.softcap != 0.0f) {
          r = a.softcap * std::tanh(r / a.softcap);
          e += 2 * u * std::fabs(raw) + 8 * u * std::fabs(r);
        }
        ref[j] = r, tol[j] = e;
        if (vis[j]) mx = std::max(mx, r), emax = std::max(emax, e), ++n_vis;
      }
      if (a.flags & ATTNSCORE_ATTN_SOFTMAX)
        for (std::size_t j = 0; j < a.n_k; ++j)
          if (vis[j]) sum += std::exp(ref[j] - mx);
      const float *row = s + h * a.shs + i * a.srs;
      for (std::size_t j = 0; j < a.n_k; ++j) {
        if (!vis[j]) {
          if (to_bits(row[j]) != (a.flags & ATTNSCORE_ATTN_SOFTMAX ? 0u : 0xff800000u))
            fail("head %zu row %zu key %zu: masked element is %a", h, i, j,
                 static_cast<double>(row[j]));
          continue;
        }
        double want = ref[j], bound = tol[j] + 1e-30;
        if (a.flags & ATTNSCORE_ATTN_SOFTMAX) {
          want = std::exp(ref[j] - mx) / sum;
          const double rel = std::expm1(2 * emax + 2 * std::fabs(ref[j] - mx) * u) +
                             (static_cast<double>(n_vis) / 4 + 16) * u;
          if (!(rel < 1.0)) {  // scores too uncertain to pin a weight: only its range
            if (!(row[j] >= 0.0f && row[j] <= 1.0f))
              fail("head %zu row %zu key %zu: weight %a", h, i, j, static_cast<double>(row[j]));
            continue;
          }
          bound = want * rel + 4 * static_cast<double>(FLT_MIN);
        }
        if (!(std::fabs(row[j] - want) <= bound))
          fail("head %zu row %zu key %zu: %a, expected %a within %a", h, i, j,
               static_cast<double>(row[j]), want, bound);
      }
    }
}

// Elements (h, i, j) of S given by the desc: fills `mine` (one flag per element of a buffer of
// n elements).
std::vector<char> s_elements(const attnscore_attention_desc &a, std::size_t n) {
  std::vector<char> mine(n, 0);
  for (std::size_t h = 0; h < a.heads_q; ++h)
    for (std::size_t i = 0; i < a.n_q; ++i)
      for (std::size_t j = 0; j < a.n_k; ++j)
        mine[h * a.s.head_stride + i * a.s.row_stride + j] = 1;
  return mine;
}

}  // namespace

// Typed copies of the int8 values r of a tensor: f32 r / 64, binary16 or bfloat16 of that (all
// exact), or int8 r.
Buf typed(const std::vector<std::int8_t> &r, int dtype, std::size_t extra_bytes) {
  Buf out;
  out.elem = dtype_bytes(dtype);
  out.b.assign(r.size() * out.elem + extra_bytes, 0);
  for (std::size_t x = 0; x < r.size(); ++x) {
    const float f = static_cast<float>(r[x]) / 64.0f;
    if (dtype == ATTNSCORE_DTYPE_F32) std::memcpy(out.at(x), &f, 4);
    if (dtype == ATTNSCORE_DTYPE_F16 || dtype == ATTNSCORE_DTYPE_BF16) {
      const std::uint16_t h = dtype == ATTNSCORE_DTYPE_F16 ? f16_nearest(f) : bf16_nearest(f);
      std::memcpy(out.at(x), &h, 2);
    }
    if (dtype == ATTNSCORE_DTYPE_S8) std::memcpy(out.at(x), &r[x], 1);
  }
  return out;
}

// An s8 tensor's scales: per row (0), per head (1), per tensor (2), or a row stride of 2 (3: a
// bad count); the buffer as long as their extent.
void scale_layout(unsigned mode, std::size_t heads, std::size_t rows, attnscore_tensor *t,
                  std::vector<float> *v, Input &values) {
  switch (mode % 4) {
    case 0:
      t->scale_head_stride = rows, t->scale_row_stride = 1;
      break;
    case 1:
      t->scale_head_stride = 1, t->scale_row_stride = 0;
      break;
    case 2:
      t->scale_head_stride = 0, t->scale_row_stride = 0;
      break;
    default:
      t->scale_head_stride = 2 * rows, t->scale_row_stride = 2;
  }
  std::size_t n = 1;
  if (heads == 0 || rows == 0 ||
      !span3(heads, rows, 1, t->scale_head_stride, t->scale_row_stride, &n) || n > kMaxElems)
    n = 1;
  v->resize(n);
  for (float &x : *v) x = s8_scale_value(values, 0) / 64.0f;
}

void run_tasks(void *pool_ctx, attnscore_task_fn fn, void *task_ctx, std::size_t n_tasks) {
  Hook &h = *static_cast<Hook *>(pool_ctx);
  ++h.calls;
  h.tasks = n_tasks;
  if (n_tasks == 0 || n_tasks > (std::size_t{1} << 16)) fail("%zu tasks", n_tasks);
  // Ascending, descending, odd then even, or a stride coprime to n_tasks.
  std::size_t step = 1;
  if (h.order % 4 == 3)
    for (step = n_tasks / 2 + 1; step > 1; --step) {
      std::size_t x = n_tasks, y = step;
      while (y != 0) x %= y, std::swap(x, y);
      if (x == 1) break;
    }
  for (std::size_t i = 0; i < n_tasks; ++i) {
    std::size_t t;
    switch (h.order % 4) {
      case 1:
        t = n_tasks - 1 - i;
        break;
      case 2:
        t = i < n_tasks / 2 ? 2 * i + 1 : 2 * (i - n_tasks / 2);
        break;
      case 3:
        t = (i * step) % n_tasks;
        break;
      default:
        t = i;
    }
    fn(task_ctx, t);
  }
}

// ---------------------------------------------------------------------------------------------
// attnscore_attention: heads x rows x d tensors of any dtype (f32, f16, bf16, s8 with scales per
// row, head or tensor) in three layouts (head-major, padded, token-major) or strides the input
// picks; S f32 or f16; K raw or from a multi-head cache (or a cache that does not fit the call);
// mask, window, offset, softcap, softmax, f16 accumulation and scale from the input; through a
// parallel-for or not. The status is predicted from the check order; errors leave every byte
// unchanged; on success nothing outside S's elements changes, a cache gives the raw call's bits,
// f16 S is the f32 S rounded once, f16 or bf16 Q and K give the f32 call's bits on their values, a
// parallel call the single-threaded call's bits, and each element meets a double reference of
// the unfused steps (f32), or the exact int8 formula (s8).
int attention_case(Input &in, int, const AttnOpts &o) {
  Attn a{};
  a.hq = in.u8() % 9, a.hkv = in.u8() % 5;
  a.n_q = in.u8() % 20, a.n_k = in.u8() % 40, a.d = in.u8() % 33;
  // Keep an execution short.
  while (a.hq * a.n_q * a.n_k * (a.d + 1) > (std::size_t{1} << 15)) a.n_k /= 2;
  const std::uint8_t lay = in.u8();
  attn_layout(lay % 3, a.hq, a.n_q, a.d, &a.qhs, &a.qrs);
  attn_layout((lay >> 2) % 3, a.hkv, a.n_k, a.d, &a.khs, &a.krs);
  attn_layout((lay >> 4) % 3, a.hq, a.n_q, a.n_k, &a.shs, &a.srs);
  a.qhs = decode_attn_stride(in, a.qhs), a.qrs = decode_attn_stride(in, a.qrs);
  a.khs = decode_attn_stride(in, a.khs), a.krs = decode_attn_stride(in, a.krs);
  a.shs = decode_attn_stride(in, a.shs), a.srs = decode_attn_stride(in, a.srs);
  a.scale = from_bits(decode_scale(in));
  a.softcap = decode_softcap(in);
  const std::uint8_t mask = in.u8(), flags = in.u8();
  a.mask = mask >= 0xf8 ? mask : mask % 4u;
  // Softmax (bit 0), f16 accumulation (bits 4-6 set), the bf16 dot product (bits 5-6 alone), or
  // unknown bits.
  a.flags = flags >= 0xf8 ? flags
                          : flags % 2u | ((flags & 0x70) == 0x70 ? 2u : 0u) |
                                ((flags & 0x70) == 0x60 ? 4u : 0u);
  const std::uint8_t pc = in.u8(), wc = in.u8();
  a.p0 = pc >= 0xf0 ? huge(in, pc) : pc % (a.n_k + 4);
  a.w = wc >= 0xf0 ? huge(in, wc) : wc % 9;
  const std::uint8_t nulls = in.u8(), place = in.u8();
  // Q and K's dtype (f32, f16, s8; bits 3-4 01: bf16), S's (bit 2: f16; bits 3-4 10: bf16, which
  // S cannot be); K raw or a cache; scale layouts; par.
  const std::uint8_t dt = in.u8(), ksrc = in.u8(), scm = in.u8(), pb = in.u8();
  int qt = o.qk >= 0 ? o.qk : (dt & 0x18) == 0x08 ? ATTNSCORE_DTYPE_BF16 : dt % 3;
  const int st = o.s >= 0 ? o.s : (dt & 0x18) == 0x10 ? ATTNSCORE_DTYPE_BF16 : (dt >> 2) & 1;
  if (!dtype_built(qt)) return -1;
  const int dt_model = qt;
  int kt = qt;
  if (ksrc >= 0xf0) kt = (qt + 1 + ksrc % 3) % 4;  // another dtype: DTYPE_MISMATCH
  if (dt == 0xff) qt = 4 + (ksrc & 7);             // no dtype at all: UNKNOWN_DTYPE
  const bool use_cache = ksrc % 4 == 3;
  const unsigned cache_variant = (ksrc >> 2) % 8;  // 4: heads, 5: d, 6: a key short, 7: foreign
  const bool s8 = dt_model == ATTNSCORE_DTYPE_S8;

  // The parallel-for: the section's, or from the input (a hook, or one without parallel_for).
  Hook own;
  own.order = pb >> 4;
  attnscore_parallel own_par{run_tasks, &own, std::size_t{pb} % 9};
  if (pb % 16 == 13) own_par.parallel_for = nullptr;
  const attnscore_parallel *pp = o.par != nullptr ? o.par : pb % 4 == 1 ? &own_par : nullptr;
  Hook *hook = o.par != nullptr ? o.hook : &own;

  char what[300];
  std::snprintf(what, sizeof what,
                "attnscore_attention dtype %d/%d S %d%s heads %zu/%zu n_q %zu n_k %zu d %zu "
                "strides q %zu,%zu k %zu,%zu s %zu,%zu mask %u flags %u p0 %zu w %zu softcap %a "
                "scale %a scales %#x%s",
                qt, kt, st, use_cache ? " cache" : "", a.hq, a.hkv, a.n_q, a.n_k, a.d, a.qhs, a.qrs,
                a.khs, a.krs, a.shs, a.srs, a.mask, a.flags, a.p0, a.w,
                static_cast<double>(a.softcap), static_cast<double>(a.scale), scm,
                pp == nullptr ? "" : " par");
  g_call = what;

  // Buffers exactly as long as each tensor's extent (or one element when it cannot exist); S in
  // Q's buffer when `place` says so, to meet the overlap rule.
  std::size_t nq = 0, nk = 0, ns = 0;
  const bool empty = a.hq == 0 || a.n_q == 0 || a.n_k == 0;
  const bool fits = !empty && a.d > 0 && a.hkv > 0 && span3(a.hq, a.n_q, a.d, a.qhs, a.qrs, &nq) &&
                    nq <= kMaxElems && span3(a.hkv, a.n_k, a.d, a.khs, a.krs, &nk) &&
                    nk <= kMaxElems && span3(a.hq, a.n_q, a.n_k, a.shs, a.srs, &ns) &&
                    ns <= kMaxElems;
  if (!fits) nq = nk = ns = 1;  // placeholders: such a call must fail before touching memory
  const bool s_in_q = place >= 0xf0;
  const std::size_t se = dtype_bytes(st);
  Input values = in.stream();
  std::vector<std::int8_t> qr(nq), kr(nk);
  for (std::int8_t &x : qr) x = static_cast<std::int8_t>(values.v8());
  for (std::int8_t &x : kr) x = static_cast<std::int8_t>(values.v8());
  Buf qb = typed(qr, dt_model, s_in_q ? ns * se + 32 : 0), kb = typed(kr, kt);
  Buf sb;
  sb.elem = se;
  sb.b.assign(s_in_q ? 4 : ns * se, 0);
  for (std::size_t x = 0; x + 4 <= sb.b.size(); x += 4) std::memcpy(&sb.b[x], &kGuardBits, 4);
  const std::vector<unsigned char> guard = sb.b;
  void *sp = s_in_q ? qb.b.data() + (place % 8) * 4 : sb.b.data();
  // The int8 scales (bad values when scm >= 0xf0).
  attnscore_attention_desc desc;
  std::memset(&desc, 0, sizeof desc);
  std::vector<float> qs, ks;
  scale_layout(scm % 4, a.hq, a.n_q, &desc.q, &qs, values);
  scale_layout((scm >> 2) % 4, a.hkv, a.n_k, &desc.k, &ks, values);
  if (scm >= 0xf0) {
    const float bad[] = {NAN, INFINITY, from_bits(1u), from_bits(0x807fffffu)};
    std::vector<float> &v = scm & 1 ? ks : qs;
    v[values.v8() % v.size()] = bad[(scm >> 1) % 4];
  }
  desc.heads_q = a.hq, desc.heads_kv = a.hkv, desc.n_q = a.n_q, desc.n_k = a.n_k, desc.d = a.d;
  desc.q.data = qb.b.data(), desc.q.dtype = static_cast<attnscore_dtype>(qt);
  desc.q.head_stride = a.qhs, desc.q.row_stride = a.qrs, desc.q.scale = qs.data();
  desc.k.data = kb.b.data(), desc.k.dtype = static_cast<attnscore_dtype>(kt);
  desc.k.head_stride = a.khs, desc.k.row_stride = a.krs, desc.k.scale = ks.data();
  desc.s.data = sp, desc.s.dtype = static_cast<attnscore_dtype>(st);
  desc.s.head_stride = a.shs, desc.s.row_stride = a.srs;
  desc.scale = a.scale, desc.softcap = a.softcap, desc.mask = a.mask, desc.flags = a.flags;
  desc.pos_offset = a.p0, desc.window = a.w;
  if (nulls >= 0xf8) {
    if (nulls & 1) desc.q.data = nullptr;
    if (nulls & 2) desc.k.data = nullptr;
    if (nulls & 4) desc.s.data = nullptr;
  } else if (nulls >= 0xf0) {
    if (nulls & 1) desc.q.scale = nullptr;
    if (nulls & 2) desc.k.scale = nullptr;
  }

  // K from a cache: dense keys of the cache's dtype, one scale per key, appended in two parts.
  const std::size_t c_heads = std::max<std::size_t>(1, a.hkv + (cache_variant == 4)),
                    c_d = a.d + (cache_variant == 5), c_cap = a.n_k + 2;
  const std::size_t c_n = a.n_k - (cache_variant == 6 && a.n_k > 0);
  // A dtype this build leaves out has no cache: the call is then given foreign memory.
  const bool cache_fits =
      use_cache && a.d > 0 && c_heads * c_cap * c_d <= kMaxElems && dtype_known(kt, false);
  std::vector<std::int8_t> cr(cache_fits ? c_heads * c_n * c_d : 0);
  for (std::int8_t &x : cr) x = static_cast<std::int8_t>(values.v8());
  Buf ckeys = typed(cr, kt);
  std::vector<float> cks(cache_fits ? c_heads * c_n : 0);
  for (float &x : cks) x = s8_scale_value(values, 0) / 64.0f;
  std::vector<unsigned char> cmem, foreign(256, 0x5a);
  CacheFacts facts{false, kt, c_heads, c_d, c_n, nullptr, 0};
  if (use_cache) {
    const attnscore_cache_shape shape{ATTNSCORE_CACHE_KEYS, static_cast<attnscore_dtype>(kt),
                                      c_heads, c_cap, c_d};
    attnscore_cache *cache = nullptr;
    if (cache_fits) {
      cmem.assign(attnscore_cache_bytes(&shape), 0);
      if (attnscore_cache_init(cmem.data(), cmem.size(), &shape, &cache) != ATTNSCORE_OK)
        fail("cache init failed");
      const std::size_t first = c_n == 0 ? 0 : ksrc % c_n;
      for (std::size_t part = 0; part < 2; ++part) {
        const std::size_t from = part == 0 ? 0 : first, n = part == 0 ? first : c_n - first;
        if (n == 0) continue;
        const attnscore_tensor t{ckeys.at(from * c_d),
                                 static_cast<attnscore_dtype>(kt),
                                 c_n * c_d,
                                 c_d,
                                 cks.data() + from,
                                 c_n,
                                 1};
        if (attnscore_cache_append(cache, n, &t) != ATTNSCORE_OK) fail("cache append failed");
      }
      facts.valid = cache_variant != 7, facts.mem = cmem.data(), facts.bytes = cmem.size();
    }
    desc.k_cache = facts.valid ? cache
                               : reinterpret_cast<const attnscore_cache *>(
                                     cache_variant == 7 && cache != nullptr
                                         ? reinterpret_cast<unsigned char *>(cache) + 8
                                         : foreign.data() + 64);
  }
  const attnscore_status want_strict = predict_attention(desc, &facts, false);
  const attnscore_status want_any = predict_attention(desc, &facts, true);
  attnscore_status want = want_strict;
  // A valid call whose tensors were too large to allocate is not made.
  if (want == ATTNSCORE_OK && !empty && (!fits || s_in_q || (use_cache && !cache_fits))) return 0;
  const bool work = want == ATTNSCORE_OK && !empty;
  if (work && pp != nullptr && pp->parallel_for == nullptr) want = ATTNSCORE_ERR_NULL_POINTER;
  const std::vector<unsigned char> q0 = qb.b, k0 = kb.b, s0 = sb.b, c0 = cmem, f0 = foreign;
  const std::vector<float> qs0 = qs, ks0 = ks;
  hook->calls = 0;
  const attnscore_status got =
      api("attnscore_attention", [&] { return attnscore_attention(&desc, pp); });
  if (got != want && !(got == ATTNSCORE_ERR_OVERLAP && want_any == ATTNSCORE_ERR_OVERLAP))
    fail("returned %d, expected %d", got, want);
  const auto same_floats = [](const std::vector<float> &x, const std::vector<float> &y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * 4) == 0;
  };
  if (q0 != qb.b || k0 != kb.b || !same_floats(qs0, qs) || !same_floats(ks0, ks) || c0 != cmem ||
      f0 != foreign)
    fail("an input changed");
  const bool hooked = pp != nullptr && pp->parallel_for != nullptr && got == ATTNSCORE_OK && work;
  if (hook->calls != (hooked ? 1u : 0u))
    fail("the hook was called %zu times (%zu tasks)", hook->calls, hook->tasks);
  if (got != ATTNSCORE_OK || empty) {
    if (s0 != sb.b) fail("S written");
    return 0;
  }
  // Nothing outside S's elements.
  const std::vector<char> mine = s_elements(desc, ns);
  for (std::size_t x = 0; x < ns; ++x)
    if (!mine[x] && std::memcmp(&sb.b[x * se], &guard[x * se], se) != 0)
      fail("wrote outside S at %zu", x);
  // Another call of the same step into a fresh S of the same layout (serially).
  auto again = [&](attnscore_attention_desc d2, int s_dtype, const char *why) {
    Buf out;
    out.elem = dtype_bytes(s_dtype);
    out.b.assign(ns * out.elem, 0);
    d2.s.data = out.b.data(), d2.s.dtype = static_cast<attnscore_dtype>(s_dtype);
    const attnscore_status r = api(why, [&] { return attnscore_attention(&d2, nullptr); });
    if (r != ATTNSCORE_OK) fail("%s returned %d", why, r);
    return out;
  };
  auto same = [&](const Buf &x, const Buf &y, const char *why) {
    for (std::size_t e = 0; e < ns; ++e) {
      if (!mine[e]) continue;
      const bool nan = x.elem == 4 ? std::isnan(x.f32(e)) && std::isnan(y.f32(e))
                                   : (x.u16(e) & 0x7fff) > 0x7c00 && (y.u16(e) & 0x7fff) > 0x7c00;
      if (std::memcmp(&x.b[e * x.elem], &y.b[e * y.elem], x.elem) != 0 && !nan)
        fail("%s: element %zu differs", why, e);
    }
  };
  Buf s_main = sb;
  // A parallel call: the single-threaded call's bits.
  if (pp != nullptr) same(s_main, again(desc, st, "the single-threaded call"), "parallel call");
  // K from a cache: the raw call's bits on the keys appended (f32 accumulation, as the cache),
  // unless raw K takes the decode path, whose order differs from the cache's (kDecodeRows): then
  // the values are checked below, and the checks after this one run on the raw call.
  attnscore_attention_desc raw = desc;
  Buf cache_own;  // the cache's f32 S where raw K's differs (held to the values check)
  if (use_cache) {
    raw.k_cache = nullptr;
    raw.k = attnscore_tensor{
        ckeys.b.data(), static_cast<attnscore_dtype>(kt), c_n * c_d, c_d, cks.data(), c_n, 1};
    raw.flags &= ~6u;
    const Buf s_raw = again(raw, st, "the raw call");
    if (s8 || a.n_q > kDecodeRows) {
      same(s_main, s_raw, "cache against raw K");
    } else {
      cache_own =
          st == ATTNSCORE_DTYPE_F32 ? s_main : again(desc, ATTNSCORE_DTYPE_F32, "the cache call");
      s_main = s_raw;
    }
  }
  // f16 S: the f32 S rounded once.
  Buf s32 = s_main;
  if (st == ATTNSCORE_DTYPE_F16) {
    s32 = again(raw, ATTNSCORE_DTYPE_F32, "the call with f32 S");
    for (std::size_t e = 0; e < ns; ++e) {
      if (!mine[e]) continue;
      const std::uint16_t want_h = f16_nearest(s32.f32(e)), h = s_main.u16(e);
      if (h != want_h && !((want_h & 0x7fff) > 0x7c00 && (h & 0x7fff) > 0x7c00))
        fail("f16 S element %zu = %#x, the f32 S %a rounds to %#x", e, h,
             static_cast<double>(s32.f32(e)), want_h);
    }
  }
  // f16 or bf16 Q and K: the f32 call's bits on the same values (unless f16 accumulation ran).
  if (dt_model == ATTNSCORE_DTYPE_F16 || dt_model == ATTNSCORE_DTYPE_BF16) {
    if ((raw.flags & 2) && attnscore_flag_available(ATTNSCORE_ATTN_F16_ACCUMULATE)) return 0;
    if ((raw.flags & 4) && attnscore_flag_available(ATTNSCORE_ATTN_BF16_DOT)) return 0;
    Buf qf = typed(qr, ATTNSCORE_DTYPE_F32), kf = typed(use_cache ? cr : kr, ATTNSCORE_DTYPE_F32);
    attnscore_attention_desc f = raw;
    f.q.data = qf.b.data(), f.q.dtype = ATTNSCORE_DTYPE_F32;
    f.k.data = kf.b.data(), f.k.dtype = ATTNSCORE_DTYPE_F32;
    f.flags &= ~6u;
    same(s32, again(f, ATTNSCORE_DTYPE_F32, "the f32 call"), "16-bit Q and K against f32");
  }
  // Values: scores that stay finite, and a softcap whose s / c does not underflow.
  const float scale = a.scale == 0.0f ? attnscore_default_scale(a.d) : a.scale;
  if (!(std::fabs(a.scale) <= 1e30f && a.softcap <= 1e30f)) return 0;
  const std::size_t khs = use_cache ? c_n * c_d : a.khs, krs = use_cache ? c_d : a.krs;
  const std::vector<std::int8_t> &kv = use_cache ? cr : kr;
  std::vector<float> out(ns);
  for (std::size_t e = 0; e < ns; ++e) out[e] = s32.f32(e);
  if (!s8) {
    std::vector<float> own(cache_own.b.empty() ? 0 : ns);
    for (std::size_t e = 0; e < own.size(); ++e) own[e] = cache_own.f32(e);
    for (const std::vector<float> *o : {&out, &own}) {
      if (o->empty()) continue;
      check_attention_values(
          a, o->data(),
          [&](std::size_t h, std::size_t hk, std::size_t i, std::size_t j, double *r, double *e) {
            double sum = 0, g1 = 0;
            for (std::size_t t = 0; t < a.d; ++t) {
              const double x =
                  (qr[h * a.qhs + i * a.qrs + t] / 64.0) * (kv[hk * khs + j * krs + t] / 64.0);
              sum += x, g1 += std::fabs(x);
            }
            *r = sum * scale;
            *e = gamma_n(a.d + 1) * g1 * std::fabs(scale) +
                 (2.0 * a.d + 2) * FLT_MIN * std::max(1.0, std::fabs(static_cast<double>(scale)));
          });
    }
    return 0;
  }
  // s8: (float)acc * ((q_scale * scale) * k_scale), evaluated in float in that order.
  const attnscore_tensor &qt_ = desc.q;
  const attnscore_tensor &kt_ = raw.k;
  auto s8_score = [&](std::size_t h, std::size_t hk, std::size_t i, std::size_t j) {
    std::int64_t acc = 0;
    for (std::size_t t = 0; t < a.d; ++t)
      acc += static_cast<std::int64_t>(qr[h * a.qhs + i * a.qrs + t]) * kv[hk * khs + j * krs + t];
    const float q_s = qt_.scale[h * qt_.scale_head_stride + i * qt_.scale_row_stride];
    const float k_s = kt_.scale[hk * kt_.scale_head_stride + j * kt_.scale_row_stride];
    return static_cast<float>(acc) * ((q_s * scale) * k_s);
  };
  const std::size_t g = a.hq / a.hkv;
  for (std::size_t h = 0; h < a.hq; ++h)
    for (std::size_t i = 0; i < a.n_q; ++i)
      for (std::size_t j = 0; j < a.n_k; ++j)
        if (!(std::fabs(s8_score(h, h / g, i, j)) <= 1e30f)) return 0;
  check_attention_values(a, out.data(),
                         [&](std::size_t h, std::size_t hk, std::size_t i, std::size_t j, double *r,
                             double *e) { *r = s8_score(h, hk, i, j), *e = 0; });
  return 0;
}

int fuzz_attention(Input &in, int cap) { return attention_case(in, cap, AttnOpts{}); }

}  // namespace fuzz
