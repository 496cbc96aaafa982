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

// ---------------------------------------------------------------------------------------------
// attnscore_attention_output: the attention section's descriptor (heads, GQA, n_q, n_k, d,
// strides, Q and K of any dtype or none, K raw or from a key cache, mask, window, offset,
// softcap, scale, flags) plus the value dimension (0: d; up to and past ATTNSCORE_ATTN_OUT_MAX_DV
// and huge), V of any dtype or none (s8 with its scales) raw or from a value cache (or a cache of
// the wrong kind or shape), O f32, f16 or another dtype, lse NULL or strided, sinks (finite,
// -Inf, +Inf, NaN), O and lse placed on the inputs, NULL pointers and a parallel-for of 1 ... 16
// threads run on this thread (or one without parallel_for; with the workspace the size query
// gives for the shape and threads, so the keys of few blocks split, or a prefill packs K). The
// status is predicted from the check order (attnscore_attention's without S, then V, O, lse and
// sinks, as lib/src/api/attention.cpp's check_output); on error no byte of O, lse, the inputs or
// the caches changes; on success only O's and lse's elements change, each O element lies within the
// visible values of its column (a convex combination; with a sink, |O| <= max |v|; 0 for a row with
// no visible key and no sink), lse is -Inf exactly for such a row and otherwise finite and close to
// a double reference, and a parallel call gives the single-threaded call's bytes.

namespace {

constexpr std::size_t kMaxOut = std::size_t{1} << 18;  // V and O elements allocated at most

// A cache of either kind for the call: heads x n x d int8 values typed to its dtype (one scale
// per token), appended in two parts; or (facts.valid false) a handle no init made.
struct CacheCase {
  std::vector<std::int8_t> raw;
  Buf vals;
  std::vector<float> scales;
  std::vector<unsigned char> mem;
  attnscore_cache *cache = nullptr;
  CacheFacts facts{false, 0, 0, 0, 0, nullptr, 0};
  std::size_t n = 0, d = 0;
  const attnscore_cache *handle = nullptr;
};

// variant: 0 ... 2 the call's shape, 3 the handle shifted by 8 bytes, 4 one more head, 5 d + 1,
// 6 a token short, 7 a cache of the other kind.
void make_cache(CacheCase *c, attnscore_cache_kind kind, int dtype, unsigned variant,
                std::size_t heads, std::size_t n_k, std::size_t d, Input &values,
                std::uint8_t split, std::vector<unsigned char> *foreign) {
  const attnscore_cache_kind made =
      variant == 7 ? (kind == ATTNSCORE_CACHE_KEYS ? ATTNSCORE_CACHE_VALUES : ATTNSCORE_CACHE_KEYS)
                   : kind;
  const std::size_t c_heads = std::max<std::size_t>(1, heads + (variant == 4));
  const std::size_t c_d = d + (variant == 5), cap = n_k + 2;
  c->n = n_k - (variant == 6 && n_k > 0), c->d = c_d;
  c->facts = CacheFacts{false, dtype, c_heads, c_d, c->n, nullptr, 0};
  const bool fits = d > 0 && d <= ATTNSCORE_ATTN_OUT_MAX_DV && n_k <= 4096 &&
                    c_heads * cap * c_d <= kMaxOut && dtype_known(dtype, false);
  if (fits) {
    c->raw.resize(c_heads * c->n * c_d);
    for (std::int8_t &x : c->raw) x = static_cast<std::int8_t>(values.v8());
    c->vals = typed(c->raw, dtype);
    c->scales.resize(c_heads * c->n);
    for (float &x : c->scales) x = s8_scale_value(values, 0) / 64.0f;
    const attnscore_cache_shape shape{made, static_cast<attnscore_dtype>(dtype), c_heads, cap, c_d};
    c->mem.assign(attnscore_cache_bytes(&shape), 0);
    if (attnscore_cache_init(c->mem.data(), c->mem.size(), &shape, &c->cache) != ATTNSCORE_OK)
      fail("cache init failed (kind %d)", static_cast<int>(made));
    const std::size_t first = c->n == 0 ? 0 : split % c->n;
    for (std::size_t part = 0; part < 2; ++part) {
      const std::size_t from = part == 0 ? 0 : first, n = part == 0 ? first : c->n - first;
      if (n == 0) continue;
      const attnscore_tensor t{c->vals.at(from * c_d),
                               static_cast<attnscore_dtype>(dtype),
                               c->n * c_d,
                               c_d,
                               c->scales.data() + from,
                               c->n,
                               1};
      if (attnscore_cache_append(c->cache, n, &t) != ATTNSCORE_OK) fail("cache append failed");
    }
    c->facts.valid = variant != 3 && variant != 7;
    c->facts.mem = c->mem.data(), c->facts.bytes = c->mem.size();
  }
  c->handle = c->facts.valid ? c->cache
                             : reinterpret_cast<const attnscore_cache *>(
                                   variant == 3 && c->cache != nullptr
                                       ? reinterpret_cast<unsigned char *>(c->cache) + 8
                                       : foreign->data() + 64);
}

// NaN (any sign) or +Inf, by its bits: the sinks the call refuses.
bool bad_sink(float z) {
  const std::uint32_t b = to_bits(z);
  return (b & 0x7fffffffu) > 0x7f800000u || b == 0x7f800000u;
}

// The status from the check order: attnscore_attention's checks without S's, then those of
// check_output: ROW_TOO_LONG (dv); UNKNOWN_DTYPE (raw V, O); NULL_POINTER (O, raw V, s8 V's
// scales); a value cache's BAD_CACHE and SHAPE_MISMATCH; BAD_LDK (V), BAD_LDS (O);
// BAD_SCALE_COUNT (V); BAD_SINK; BAD_HEAD_STRIDE (V, O, lse); SIZE_OVERFLOW (V, its scales, O,
// lse, sinks); OVERLAP (O against every input and lse, lse against every input);
// BAD_QUANT_SCALE (V). With count_cache, a cache's whole init memory counts as its extent.
attnscore_status predict_output(const attnscore_attention_desc &a, const CacheFacts *kc,
                                const CacheFacts *vc, bool count_cache) {
  const attnscore_status st = predict_attention(a, kc, count_cache, false);
  if (st != ATTNSCORE_OK || a.heads_q == 0 || a.n_q == 0 || a.n_k == 0) return st;
  const std::size_t dv = a.dv == 0 ? a.d : a.dv;
  if (dv > ATTNSCORE_ATTN_OUT_MAX_DV) return ATTNSCORE_ERR_ROW_TOO_LONG;
  const bool raw_v = a.v_cache == nullptr, raw_k = a.k_cache == nullptr;
  const int qt = dtype_int(a.q.dtype), vt = dtype_int(a.v.dtype), ot = dtype_int(a.o.dtype);
  if ((raw_v && !dtype_known(vt, false)) || !dtype_known(ot, true))
    return ATTNSCORE_ERR_UNKNOWN_DTYPE;
  const bool vs8 = raw_v && vt == ATTNSCORE_DTYPE_S8, s8 = qt == ATTNSCORE_DTYPE_S8;
  if (a.o.data == nullptr || (raw_v && a.v.data == nullptr) || (vs8 && a.v.scale == nullptr))
    return ATTNSCORE_ERR_NULL_POINTER;
  if (!raw_v) {
    if (vc == nullptr || !vc->valid) return ATTNSCORE_ERR_BAD_CACHE;
    if (vc->heads != a.heads_kv || vc->d != dv || a.n_k > vc->size)
      return ATTNSCORE_ERR_SHAPE_MISMATCH;
  }
  if (raw_v && a.v.row_stride < dv) return ATTNSCORE_ERR_BAD_LDK;
  if (a.o.row_stride < dv) return ATTNSCORE_ERR_BAD_LDS;
  if (vs8 && a.v.scale_row_stride > 1) return ATTNSCORE_ERR_BAD_SCALE_COUNT;
  for (std::size_t h = 0; a.sinks != nullptr && h < a.heads_q; ++h)
    if (bad_sink(a.sinks[h])) return ATTNSCORE_ERR_BAD_SINK;
  const bool lse = a.lse != nullptr;
  if ((raw_v && !nested(a.heads_kv, a.n_k, dv, a.v.head_stride, a.v.row_stride)) ||
      !nested(a.heads_q, a.n_q, dv, a.o.head_stride, a.o.row_stride) ||
      (lse && !nested(a.heads_q, a.n_q, 1, a.lse_head_stride, a.lse_row_stride)))
    return ATTNSCORE_ERR_BAD_HEAD_STRIDE;
  const Extent none{true, 0, 0};
  const Extent ev = raw_v ? extent3(a.v.data, a.heads_kv, a.n_k, dv, a.v.head_stride,
                                    a.v.row_stride, dtype_bytes(vt))
                          : none;
  const Extent evs =
      vs8 ? extent3(a.v.scale, a.heads_kv, a.n_k, 1, a.v.scale_head_stride, a.v.scale_row_stride, 4)
          : none;
  const Extent eo =
      extent3(a.o.data, a.heads_q, a.n_q, dv, a.o.head_stride, a.o.row_stride, dtype_bytes(ot));
  const Extent el =
      lse ? extent3(a.lse, a.heads_q, a.n_q, 1, a.lse_head_stride, a.lse_row_stride, 4) : none;
  const Extent ez = a.sinks != nullptr ? extent3(a.sinks, 1, 1, a.heads_q, 0, 0, 4) : none;
  if (!ev.ok || !evs.ok || !eo.ok || !el.ok || !ez.ok) return ATTNSCORE_ERR_SIZE_OVERFLOW;
  // The inputs' extents (all fit: predict_attention checked Q's and K's).
  const std::size_t e = dtype_bytes(qt);
  const auto cache_extent = [&](const CacheFacts *c) {
    return count_cache && c != nullptr && c->valid ? extent(c->mem, 1, c->bytes, c->bytes, 1)
                                                   : none;
  };
  const Extent in[] = {
      extent3(a.q.data, a.heads_q, a.n_q, a.d, a.q.head_stride, a.q.row_stride, e),
      raw_k ? extent3(a.k.data, a.heads_kv, a.n_k, a.d, a.k.head_stride, a.k.row_stride, e)
            : cache_extent(kc),
      s8 ? extent3(a.q.scale, a.heads_q, a.n_q, 1, a.q.scale_head_stride, a.q.scale_row_stride, 4)
         : none,
      s8 && raw_k
          ? extent3(a.k.scale, a.heads_kv, a.n_k, 1, a.k.scale_head_stride, a.k.scale_row_stride, 4)
          : none,
      raw_v ? ev : cache_extent(vc),
      evs,
      ez};
  if (lse && meets(eo, el)) return ATTNSCORE_ERR_OVERLAP;
  for (const Extent &x : in)
    if (meets(eo, x) || (lse && meets(el, x))) return ATTNSCORE_ERR_OVERLAP;
  if (vs8 && !scales_usable(a.v, a.heads_kv, a.n_k)) return ATTNSCORE_ERR_BAD_QUANT_SCALE;
  return ATTNSCORE_OK;
}

// Elements of a heads x rows x cols tensor in a buffer of n elements: one flag each.
std::vector<char> elements(std::size_t heads, std::size_t rows, std::size_t cols, std::size_t hs,
                           std::size_t rs, std::size_t n) {
  std::vector<char> mine(n, 0);
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t x = 0; x < cols; ++x) mine[h * hs + i * rs + x] = 1;
  return mine;
}

void fill_guard(std::vector<unsigned char> *b) {
  for (std::size_t x = 0; x + 4 <= b->size(); x += 4) std::memcpy(&(*b)[x], &kGuardBits, 4);
}

}  // namespace

int fuzz_attention_output(Input &in, int) {
  std::size_t hq = in.u8() % 9, hkv = in.u8() % 5, n_q = in.u8() % 20;
  const std::uint8_t kc = in.u8();
  std::size_t n_k = kc < 0xc0 ? kc % 40 : 200 + std::size_t{in.u8()} * 2;  // past a chunk
  const std::uint8_t dc = in.u8();
  const std::size_t d = dc == 0xff ? ATTNSCORE_S8_MAX_D + 1 : dc % 33;  // s8: DIM_TOO_LARGE
  const std::uint8_t dvc = in.u8();
  const std::size_t dv = dvc < 0xf0    ? (dvc == 0 ? 0 : dvc % 40)
                         : dvc == 0xf0 ? ATTNSCORE_ATTN_OUT_MAX_DV
                         : dvc == 0xf1 ? ATTNSCORE_ATTN_OUT_MAX_DV + 1
                                       : huge(in, dvc);
  const std::size_t dve = dv == 0 ? d : dv;  // the value dimension in force
  // Keep an execution short.
  while (d <= 32 && dve <= ATTNSCORE_ATTN_OUT_MAX_DV && hq * n_q * n_k * (d + dve + 2) > (1u << 17))
    n_k /= 2;
  // Default layouts (bits 0-1 Q, 2-3 K, 4-5 V, 6-7 O), then each stride from the input.
  const std::uint8_t lay = in.u8();
  std::size_t qhs, qrs, khs, krs, vhs, vrs, ohs, ors;
  attn_layout(lay % 4, hq, n_q, d, &qhs, &qrs);
  attn_layout((lay >> 2) % 4, hkv, n_k, d, &khs, &krs);
  attn_layout((lay >> 4) % 4, hkv, n_k, dve, &vhs, &vrs);
  attn_layout(lay >> 6, hq, n_q, dve, &ohs, &ors);
  qhs = decode_attn_stride(in, qhs), qrs = decode_attn_stride(in, qrs);
  khs = decode_attn_stride(in, khs), krs = decode_attn_stride(in, krs);
  vhs = decode_attn_stride(in, vhs), vrs = decode_attn_stride(in, vrs);
  ohs = decode_attn_stride(in, ohs), ors = decode_attn_stride(in, ors);
  const float scale = from_bits(decode_scale(in));
  const float softcap = decode_softcap(in);
  const std::uint8_t mask = in.u8(), flags = in.u8();
  const unsigned a_mask = mask >= 0xf8 ? mask : mask % 4u;
  const unsigned a_flags = flags >= 0xf8 ? flags
                                         : flags % 2u | ((flags & 0x70) == 0x70 ? 2u : 0u) |
                                               ((flags & 0x70) == 0x60 ? 4u : 0u);
  const std::uint8_t pc = in.u8(), wc = in.u8();
  const std::size_t p0 = pc >= 0xf0 ? huge(in, pc) : pc % (n_k + 4);
  const std::size_t w = wc >= 0xf0 ? huge(in, wc) : wc % 9;
  // nulls: >= 0xf8 Q, K, V data (bits 0-2); 0xf0 ... 0xf7 their scales; 0xe8 ... 0xef O's data
  // (bit 0) or the descriptor (bit 1). place: O or lse on an input or on each other.
  const std::uint8_t nulls = in.u8(), place = in.u8();
  // dt: Q and K's dtype as the attention section's; ksrc, vsrc % 4 == 3: from a cache of variant
  // (>> 2) % 8 (make_cache); ksrc >= 0xf0: K of another dtype; vt % 4: V's dtype (f32, f16, s8,
  // bf16), >= 0xf8 none, bits 4-5 its scale layout; ot % 8: O f32 (0-3), f16 (4, 5), bf16 (6),
  // s8 or none (7); scm: Q's and K's scale layouts, >= 0xf0 a bad scale (Q, K or V); sk: sinks;
  // lb: lse; pb: the parallel-for.
  const std::uint8_t dt = in.u8(), ksrc = in.u8(), vsrc = in.u8(), vtc = in.u8(), otc = in.u8();
  const std::uint8_t scm = in.u8(), sk = in.u8(), lb = in.u8(), pb = in.u8();
  int qt = (dt & 0x18) == 0x08 ? ATTNSCORE_DTYPE_BF16 : dt % 3;
  if (!dtype_built(qt)) return -1;
  const int q_model = qt;
  int kt = qt;
  if (ksrc >= 0xf0) kt = (qt + 1 + ksrc % 3) % 4;
  if (dt == 0xff) qt = 4 + (ksrc & 7);
  const int unknown[] = {4, 7, -1, 0x7fffffff};
  const int vt = vtc < 0xf8 ? vtc % 4 : unknown[vtc % 4];
  const int v_model = dtype_built(vt) ? vt : ATTNSCORE_DTYPE_F32;
  const int ot = otc % 8 < 4      ? ATTNSCORE_DTYPE_F32
                 : otc % 8 < 6    ? ATTNSCORE_DTYPE_F16
                 : otc % 8 == 6   ? ATTNSCORE_DTYPE_BF16
                 : (otc >> 3) & 1 ? ATTNSCORE_DTYPE_S8
                                  : 99;
  const bool k_cache = ksrc % 4 == 3, v_cache = vsrc % 4 == 3;
  const std::size_t oe = dtype_bytes(ot);

  // pb >= 0x80: a hook of 1 + pb % 16 threads, its task order (pb >> 4) % 4, bit 6 no
  // parallel_for; else NULL par.
  Hook hook;
  hook.order = (pb >> 4) % 4;
  attnscore_parallel par{run_tasks, &hook, 1 + std::size_t{pb} % 16};
  if (pb & 0x40) par.parallel_for = nullptr;
  const attnscore_parallel *pp = pb >= 0x80 ? &par : nullptr;

  // lse: NULL (lb < 0x80), head-major, token-major, padded, overlapping heads, or huge strides.
  const bool has_lse = lb >= 0x80;
  std::size_t lhs = n_q, lrs = 1;
  if (lb % 4 == 1) lhs = 1, lrs = hq;
  if (lb % 4 == 2) lhs = 2 * n_q + 3, lrs = 2;
  if (lb % 4 == 3) lhs = n_q > 0 ? n_q - 1 : 0, lrs = 1;
  if (lb >= 0xf0) lhs = huge(in, lb);

  char what[400];
  std::snprintf(what, sizeof what,
                "attnscore_attention_output dtype %d/%d V %d%s O %d heads %zu/%zu n_q %zu n_k %zu "
                "d %zu dv %zu strides q %zu,%zu k %zu,%zu v %zu,%zu o %zu,%zu mask %u flags %u p0 "
                "%zu w %zu softcap %a scale %a%s lse %s %zu,%zu sinks %#x place %#x nulls %#x%s",
                qt, kt, vt, v_cache ? " cache" : "", ot, hq, hkv, n_q, n_k, d, dv, qhs, qrs, khs,
                krs, vhs, vrs, ohs, ors, a_mask, a_flags, p0, w, static_cast<double>(softcap),
                static_cast<double>(scale), k_cache ? " K cache" : "", has_lse ? "" : "NULL", lhs,
                lrs, sk, place, nulls, pp == nullptr ? "" : " par");
  g_call = what;

  // Buffers exactly as long as each tensor's extent (one element when it cannot exist).
  std::size_t nq = 0, nk = 0, nv = 0, no = 0, nl = 0;
  const bool empty = hq == 0 || n_q == 0 || n_k == 0;
  const bool fits = !empty && d > 0 && hkv > 0 && dve > 0 && dve <= ATTNSCORE_ATTN_OUT_MAX_DV &&
                    span3(hq, n_q, d, qhs, qrs, &nq) && nq <= kMaxElems &&
                    (k_cache || (span3(hkv, n_k, d, khs, krs, &nk) && nk <= kMaxElems)) &&
                    (v_cache || (span3(hkv, n_k, dve, vhs, vrs, &nv) && nv <= kMaxOut)) &&
                    span3(hq, n_q, dve, ohs, ors, &no) && no <= kMaxOut &&
                    (!has_lse || (span3(hq, n_q, 1, lhs, lrs, &nl) && nl <= kMaxElems));
  if (!fits) nq = nk = nv = no = nl = 1;
  nq = std::max<std::size_t>(nq, 1), nk = std::max<std::size_t>(nk, 1);
  nv = std::max<std::size_t>(nv, 1), nl = std::max<std::size_t>(nl, 1);
  // Placements: O in Q (0xe0 ...), in V (0xe8 ...), on the sinks (0xf0 ...); lse in O (0xf4 ...),
  // in K (0xf8 ...), in Q (0xfc ...).
  const std::size_t off = (place % 4) * 4, o_bytes = no * oe, l_bytes = nl * 4;
  const bool o_in_q = place >= 0xe0 && place < 0xe8, o_in_v = place >= 0xe8 && place < 0xf0;
  const bool o_on_z = place >= 0xf0 && place < 0xf4;
  const bool l_in_o = has_lse && place >= 0xf4 && place < 0xf8;
  const bool l_in_k = has_lse && place >= 0xf8 && place < 0xfc, l_in_q = has_lse && place >= 0xfc;
  const bool aliased = o_in_q || o_in_v || o_on_z || l_in_o || l_in_k || l_in_q;
  Input values = in.stream();
  std::vector<std::int8_t> qr(nq), kr(nk), vr(nv);
  for (std::int8_t &x : qr) x = static_cast<std::int8_t>(values.v8());
  for (std::int8_t &x : kr) x = static_cast<std::int8_t>(values.v8());
  for (std::int8_t &x : vr) x = static_cast<std::int8_t>(values.v8());
  Buf qb = typed(qr, q_model, (o_in_q ? o_bytes : 0) + (l_in_q ? l_bytes : 0) + 16);
  Buf kb = typed(kr, kt, l_in_k ? l_bytes + 16 : 0);
  Buf vb = typed(vr, v_model, o_in_v ? o_bytes + 16 : 0);
  std::vector<unsigned char> ob(o_bytes + (l_in_o ? l_bytes + 16 : 0)), lbuf(l_bytes);
  fill_guard(&ob), fill_guard(&lbuf);
  // Sinks: NULL (sk % 8 == 0), all -Inf (1), finite, or (sk >= 0xc0) one head's a special.
  std::vector<float> sinks(std::max<std::size_t>(hq, 1) + (o_on_z ? o_bytes / 4 + 4 : 0));
  for (float &z : sinks) z = sk % 8 == 1 ? -INFINITY : static_cast<float>(values.v8() - 128) / 16;
  if (sk >= 0xc0) {
    const float special[] = {-INFINITY, INFINITY, NAN,           from_bits(0xffc00001u),
                             1e30f,     -1e30f,   from_bits(1u), FLT_MAX};
    sinks[values.v8() % std::max<std::size_t>(hq, 1)] = special[(sk >> 3) % 8];
  }
  attnscore_attention_desc desc;
  std::memset(&desc, 0, sizeof desc);
  std::vector<float> qs, ks, vs;
  scale_layout(scm % 4, hq, n_q, &desc.q, &qs, values);
  scale_layout((scm >> 2) % 4, hkv, n_k, &desc.k, &ks, values);
  scale_layout((vtc >> 4) % 4, hkv, n_k, &desc.v, &vs, values);
  if (scm >= 0xf0) {
    const float bad[] = {NAN, INFINITY, from_bits(1u), from_bits(0x807fffffu)};
    std::vector<float> &v = scm % 3 == 0 ? qs : scm % 3 == 1 ? ks : vs;
    v[values.v8() % v.size()] = bad[(scm >> 2) % 4];
  }
  desc.heads_q = hq, desc.heads_kv = hkv, desc.n_q = n_q, desc.n_k = n_k, desc.d = d;
  desc.q.data = qb.b.data(), desc.q.dtype = static_cast<attnscore_dtype>(qt);
  desc.q.head_stride = qhs, desc.q.row_stride = qrs, desc.q.scale = qs.data();
  desc.k.data = kb.b.data(), desc.k.dtype = static_cast<attnscore_dtype>(kt);
  desc.k.head_stride = khs, desc.k.row_stride = krs, desc.k.scale = ks.data();
  desc.v.data = vb.b.data(), desc.v.dtype = static_cast<attnscore_dtype>(vt);
  desc.v.head_stride = vhs, desc.v.row_stride = vrs, desc.v.scale = vs.data();
  desc.scale = scale, desc.softcap = softcap, desc.mask = a_mask, desc.flags = a_flags;
  desc.pos_offset = p0, desc.window = w, desc.dv = dv;
  unsigned char *op = o_in_q   ? qb.b.data() + off
                      : o_in_v ? vb.b.data() + off
                      : o_on_z ? reinterpret_cast<unsigned char *>(sinks.data() + place % 4)
                               : ob.data();
  float *lp = !has_lse ? nullptr
              : l_in_o ? reinterpret_cast<float *>(ob.data() + off)
              : l_in_k ? reinterpret_cast<float *>(kb.b.data() + off)
              : l_in_q ? reinterpret_cast<float *>(qb.b.data() + off)
                       : reinterpret_cast<float *>(lbuf.data());
  desc.o.data = op, desc.o.dtype = static_cast<attnscore_dtype>(ot);
  desc.o.head_stride = ohs, desc.o.row_stride = ors;
  desc.lse = lp, desc.lse_head_stride = lhs, desc.lse_row_stride = lrs;
  desc.sinks = sk % 8 == 0 ? nullptr : sinks.data();
  bool desc_null = false;
  if (nulls >= 0xf8) {
    if (nulls & 1) desc.q.data = nullptr;
    if (nulls & 2) desc.k.data = nullptr;
    if (nulls & 4) desc.v.data = nullptr;
  } else if (nulls >= 0xf0) {
    if (nulls & 1) desc.q.scale = nullptr;
    if (nulls & 2) desc.k.scale = nullptr;
    if (nulls & 4) desc.v.scale = nullptr;
  } else if (nulls >= 0xe8) {
    if (nulls & 1) desc.o.data = nullptr;
    if (nulls & 2) desc_null = true;
  }
  // The caches.
  std::vector<unsigned char> foreign(256, 0x5a);
  CacheCase kcc, vcc;
  if (k_cache) {
    make_cache(&kcc, ATTNSCORE_CACHE_KEYS, kt, (ksrc >> 2) % 8, hkv, n_k, d, values, ksrc,
               &foreign);
    desc.k_cache = kcc.handle;
  }
  if (v_cache) {
    make_cache(&vcc, ATTNSCORE_CACHE_VALUES, vt, (vsrc >> 2) % 8, hkv, n_k, dve, values, vsrc,
               &foreign);
    desc.v_cache = vcc.handle;
  }
  // A parallel call gets the workspace that splits its keys or packs K, where the shape has one
  // (whatever the descriptor holds, the size query must return; a size it could not mean is not
  // taken).
  const std::size_t ws_bytes =
      attnscore_attention_output_workspace(desc_null ? nullptr : &desc, par.threads);
  std::vector<unsigned char> ws(pp != nullptr && ws_bytes <= (std::size_t{64} << 20) ? ws_bytes
                                                                                     : 0);
  desc.workspace = ws.empty() ? nullptr : ws.data(), desc.workspace_bytes = ws.size();
  const CacheFacts *kf = k_cache ? &kcc.facts : nullptr, *vf = v_cache ? &vcc.facts : nullptr;
  attnscore_status want =
      desc_null ? ATTNSCORE_ERR_NULL_POINTER : predict_output(desc, kf, vf, false);
  const attnscore_status want_any =
      desc_null ? ATTNSCORE_ERR_NULL_POINTER : predict_output(desc, kf, vf, true);
  // A valid call whose tensors were too large to allocate, or placed on each other, is not made.
  if (want == ATTNSCORE_OK && !empty && (!fits || aliased)) return 0;
  const bool work = want == ATTNSCORE_OK && !empty;
  if (work && pp != nullptr && pp->parallel_for == nullptr) want = ATTNSCORE_ERR_NULL_POINTER;
  const std::vector<unsigned char> q0 = qb.b, k0 = kb.b, v0 = vb.b, o0 = ob, l0 = lbuf;
  const std::vector<unsigned char> kc0 = kcc.mem, vc0 = vcc.mem, f0 = foreign;
  const std::vector<float> qs0 = qs, ks0 = ks, vs0 = vs, z0 = sinks;
  const attnscore_status got = api("attnscore_attention_output", [&] {
    return attnscore_attention_output(desc_null ? nullptr : &desc, pp);
  });
  if (got != want && !(got == ATTNSCORE_ERR_OVERLAP && want_any == ATTNSCORE_ERR_OVERLAP))
    fail("returned %d, expected %d", got, want);
  const auto same_floats = [](const std::vector<float> &x, const std::vector<float> &y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * 4) == 0;
  };
  if (q0 != qb.b || k0 != kb.b || v0 != vb.b || !same_floats(qs0, qs) || !same_floats(ks0, ks) ||
      !same_floats(vs0, vs) || !same_floats(z0, sinks) || kc0 != kcc.mem || vc0 != vcc.mem ||
      f0 != foreign)
    fail("an input or a cache changed");
  const bool hooked = pp != nullptr && pp->parallel_for != nullptr && got == ATTNSCORE_OK && work;
  if (hook.calls != (hooked ? 1u : 0u))
    fail("the hook was called %zu times (%zu tasks)", hook.calls, hook.tasks);
  if (hooked && (hook.tasks < 1 || hook.tasks > par.threads))
    fail("%zu tasks for %zu threads", hook.tasks, par.threads);
  if (got != ATTNSCORE_OK || empty) {
    if (o0 != ob) fail("O written");
    if (l0 != lbuf) fail("lse written");
    return 0;
  }
  // Nothing outside O's and lse's elements.
  const std::vector<char> o_mine = elements(hq, n_q, dve, ohs, ors, no);
  const std::vector<char> l_mine = elements(hq, n_q, has_lse ? 1 : 0, lhs, lrs, nl);
  for (std::size_t x = 0; x < no; ++x)
    if (!o_mine[x] && std::memcmp(&ob[x * oe], &o0[x * oe], oe) != 0)
      fail("wrote outside O at %zu", x);
  for (std::size_t x = 0; x < nl; ++x)
    if (!l_mine[x] && std::memcmp(&lbuf[x * 4], &l0[x * 4], 4) != 0)
      fail("wrote outside lse at %zu", x);
  // A parallel call: the single-threaded call's bytes.
  if (pp != nullptr) {
    attnscore_attention_desc d2 = desc;
    std::vector<unsigned char> o2 = o0, l2 = l0;
    d2.o.data = o2.data(), d2.workspace = nullptr, d2.workspace_bytes = 0;
    if (has_lse) d2.lse = reinterpret_cast<float *>(l2.data());
    const attnscore_status r =
        api("the single-threaded call", [&] { return attnscore_attention_output(&d2, nullptr); });
    if (r != ATTNSCORE_OK) fail("the single-threaded call returned %d", r);
    if (o2 != ob) fail("the parallel call's O differs from the single-threaded call's");
    if (l2 != lbuf) fail("the parallel call's lse differs from the single-threaded call's");
  }

  // Values. V element (hk, j, x), from the raw tensor or the cache, as the call reads it.
  const std::size_t g = hq / hkv;
  const auto v_at = [&](std::size_t hk, std::size_t j, std::size_t x) -> float {
    const std::int8_t r =
        v_cache ? vcc.raw[(hk * vcc.n + j) * vcc.d + x] : vr[hk * vhs + j * vrs + x];
    const int t = v_cache ? vt : v_model;
    if (t != ATTNSCORE_DTYPE_S8) return static_cast<float>(r) / 64.0f;  // exact in every dtype
    const float sc = v_cache ? vcc.scales[hk * vcc.n + j]
                             : vs[hk * desc.v.scale_head_stride + j * desc.v.scale_row_stride];
    return static_cast<float>(r) * sc;
  };
  // Scores (before the softcap) and their error bounds, as the attention section's models.
  const float sc_used = scale == 0.0f ? attnscore_default_scale(d) : scale;
  const std::size_t kh = k_cache ? kcc.n * kcc.d : khs, kr_ = k_cache ? kcc.d : krs;
  const std::vector<std::int8_t> &kv = k_cache ? kcc.raw : kr;
  const bool s8 = q_model == ATTNSCORE_DTYPE_S8;
  const auto score = [&](std::size_t h, std::size_t hk, std::size_t i, std::size_t j, double *r,
                         double *e) {
    if (s8) {
      std::int64_t acc = 0;
      for (std::size_t t = 0; t < d; ++t)
        acc += static_cast<std::int64_t>(qr[h * qhs + i * qrs + t]) * kv[hk * kh + j * kr_ + t];
      const float q_s = qs[h * desc.q.scale_head_stride + i * desc.q.scale_row_stride];
      const float k_s = k_cache ? kcc.scales[hk * kcc.n + j]
                                : ks[hk * desc.k.scale_head_stride + j * desc.k.scale_row_stride];
      *r = static_cast<float>(acc) * ((q_s * sc_used) * k_s), *e = 0;
      return;
    }
    double sum = 0, g1 = 0;
    for (std::size_t t = 0; t < d; ++t) {
      const double x = (qr[h * qhs + i * qrs + t] / 64.0) * (kv[hk * kh + j * kr_ + t] / 64.0);
      sum += x, g1 += std::fabs(x);
    }
    *r = sum * sc_used;
    *e = gamma_n(d + 1) * g1 * std::fabs(sc_used) +
         (2.0 * d + 2) * FLT_MIN * std::max(1.0, std::fabs(static_cast<double>(sc_used)));
  };
  const bool exact_scores = (a_flags & 6u) == 0;  // f16 accumulation or the bf16 dot: no bound
  const double u = 1.0 / (1 << 24);
  std::vector<double> ref(n_k), tol(n_k), wref(n_k);
  std::vector<char> vis(n_k);
  for (std::size_t h = 0; h < hq; ++h)
    for (std::size_t i = 0; i < n_q; ++i) {
      const std::size_t hk = h / g, p = p0 + i;
      std::size_t n_vis = 0;
      double mx = -INFINITY, emax = 0;
      bool finite = true;
      for (std::size_t j = 0; j < n_k; ++j) {
        vis[j] = a_mask == 0 || (j <= p && (!(a_mask & 2) || w > p - j));
        if (!vis[j]) continue;
        ++n_vis;
        double r, e;
        score(h, hk, i, j, &r, &e);
        if (!(std::fabs(r) <= 1e30)) finite = false;
        if (softcap != 0.0f) {
          const double raw = r;
          r = softcap * std::tanh(r / softcap);
          e += 2 * u * std::fabs(raw) + 8 * u * std::fabs(r);
        }
        ref[j] = r, tol[j] = e;
        mx = std::max(mx, r), emax = std::max(emax, e);
      }
      const float z = desc.sinks != nullptr ? desc.sinks[h] : -INFINITY;
      const bool sink = z != -INFINITY;
      // lse: -Inf for no key and no sink, the sink for no key, else near the reference.
      if (has_lse) {
        float l;
        std::memcpy(&l, &lbuf[(h * lhs + i * lrs) * 4], 4);
        if (n_vis == 0 && !sink && to_bits(l) != 0xff800000u)
          fail("head %zu row %zu: no key, no sink, lse %a", h, i, static_cast<double>(l));
        if (n_vis == 0 && sink && !(std::fabs(l - z) <= 1e-6 * (1 + std::fabs(z))))
          fail("head %zu row %zu: no key, sink %a, lse %a", h, i, static_cast<double>(z),
               static_cast<double>(l));
        if (n_vis > 0 && finite && !std::isfinite(l))
          fail("head %zu row %zu: lse %a", h, i, static_cast<double>(l));
        if (n_vis > 0 && finite && exact_scores) {
          const double m = sink ? std::max(mx, static_cast<double>(z)) : mx;
          double sum = sink ? std::exp(z - m) : 0;
          for (std::size_t j = 0; j < n_k; ++j)
            if (vis[j]) sum += std::exp(ref[j] - m);
          const double want_l = m + std::log(sum);
          const double bound = 2 * emax + 1e-5 * (1 + std::fabs(want_l)) + (n_vis + 8) * 4 * u;
          if (!(std::fabs(l - want_l) <= bound))
            fail("head %zu row %zu: lse %a, expected %a within %a", h, i, static_cast<double>(l),
                 want_l, bound);
        }
      }
      if (!finite) continue;
      // The reference weights against the row's maximum (the sink's too), and their sum.
      const double m = sink ? std::max(mx, static_cast<double>(z)) : mx;
      double den = sink ? std::exp(z - m) : 0;
      for (std::size_t j = 0; j < n_k; ++j)
        if (vis[j]) wref[j] = std::exp(ref[j] - m), den += wref[j];
      // O: a convex combination of the visible values of its column (scaled by less than 1 with
      // a sink), 0 for a row with no key and no sink.
      for (std::size_t x = 0; x < dve; ++x) {
        const std::size_t at = h * ohs + i * ors + x;
        float o;
        if (ot == ATTNSCORE_DTYPE_F16) {
          std::uint16_t hb;
          std::memcpy(&hb, &ob[at * 2], 2);
          o = half_value(hb);
        } else {
          std::memcpy(&o, &ob[at * 4], 4);
        }
        if (n_vis == 0) {
          if (o != 0.0f)
            fail("head %zu row %zu col %zu: no key, O %a", h, i, x, static_cast<double>(o));
          continue;
        }
        double lo = INFINITY, hi = -INFINITY, big = 0;
        for (std::size_t j = 0; j < n_k; ++j)
          if (vis[j]) {
            const double v = v_at(hk, j, x);
            lo = std::min(lo, v), hi = std::max(hi, v), big = std::max(big, std::fabs(v));
          }
        // An f16 O past binary16's range is +-Inf: nothing to compare.
        if (ot == ATTNSCORE_DTYPE_F16 && big >= 65504) continue;
        if (sink) lo = -big, hi = big;
        double t = big * (n_vis + 16) * 4 * u;
        if (ot == ATTNSCORE_DTYPE_F16) t += big / 1024 + 1.0 / (1 << 24);
        if (!(o >= lo - t && o <= hi + t))
          fail("head %zu row %zu col %zu: O %a outside [%a, %a] (%zu keys%s)", h, i, x,
               static_cast<double>(o), lo, hi, n_vis, sink ? ", a sink" : "");
        const double rel = 2 * std::expm1(2 * emax);  // the weights' spread from the scores'
        if (!exact_scores || !(rel < 1)) continue;
        // And near the double reference of the weights (the sink in the denominator).
        double num = 0;
        for (std::size_t j = 0; j < n_k; ++j)
          if (vis[j]) num += wref[j] * v_at(hk, j, x);
        const double want_o = num / den;
        double bound = big * (rel + (n_vis + 16) * 8 * u);
        if (ot == ATTNSCORE_DTYPE_F16) bound += std::fabs(want_o) / 1024 + 1.0 / (1 << 24);
        if (!(std::fabs(o - want_o) <= bound))
          fail("head %zu row %zu col %zu: O %a, expected %a within %a (%zu keys%s)", h, i, x,
               static_cast<double>(o), want_o, bound, n_vis, sink ? ", a sink" : "");
      }
    }
  return 0;
}

}  // namespace fuzz
