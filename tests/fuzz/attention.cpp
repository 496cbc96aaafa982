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
// attnscore_attention_f32: small heads x rows x d tensors in three layouts (head-major, padded,
// token-major), or a stride the input picks; mask, window, offset, softcap, softmax and scale from
// the input. The status is predicted from attnscore.h's check order; errors leave every byte
// unchanged; on success nothing outside S's elements changes and each element meets a double
// reference of the unfused steps (finite data only).

namespace {

struct Attn {
  std::size_t hq, hkv, n_q, n_k, d, qhs, qrs, khs, krs, shs, srs;
  float scale, softcap;
  unsigned mask, flags;
  std::size_t p0, w;
};

// Elements from the first to the last of a heads x rows x cols tensor; false on overflow.
bool span3(std::size_t heads, std::size_t rows, std::size_t cols, std::size_t hs, std::size_t rs,
           std::size_t *n) {
  std::size_t a, b, c;
  return checked_mul(heads - 1, hs, &a) && checked_mul(rows - 1, rs, &b) && checked_add(a, b, &c) &&
         checked_add(c, cols, n);
}

// Heads (and rows) pairwise disjoint: rows nested in heads, or heads nested in rows.
bool nested(std::size_t heads, std::size_t rows, std::size_t cols, std::size_t hs, std::size_t rs) {
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

// qk_elem, s_elem: bytes per element of Q and K, and of S (2 for the binary16 forms).
attnscore_status predict_attention(const Attn &a, const void *q, const void *k, const void *s,
                                   std::size_t qk_elem = 4, std::size_t s_elem = 4) {
  if (a.hq == 0 || a.n_q == 0 || a.n_k == 0) return ATTNSCORE_OK;
  if (a.d == 0) return ATTNSCORE_ERR_ZERO_DIM;
  if (q == nullptr || k == nullptr || s == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (a.hkv == 0 || a.hq % a.hkv != 0) return ATTNSCORE_ERR_HEADS_MISMATCH;
  if (a.qrs < a.d) return ATTNSCORE_ERR_BAD_LDQ;
  if (a.krs < a.d) return ATTNSCORE_ERR_BAD_LDK;
  if (a.srs < a.n_k) return ATTNSCORE_ERR_BAD_LDS;
  if (bad_float(a.scale)) return ATTNSCORE_ERR_BAD_SCALE;
  if (a.softcap != 0.0f && (bad_float(a.softcap) || a.softcap < 0.0f))
    return ATTNSCORE_ERR_BAD_SOFTCAP;
  if (a.mask > 3 || a.flags > 1) return ATTNSCORE_ERR_BAD_FLAGS;
  if ((a.mask & 2) && a.w == 0) return ATTNSCORE_ERR_BAD_WINDOW;
  if (a.mask != 0 && a.p0 > SIZE_MAX - (a.n_q - 1)) return ATTNSCORE_ERR_POSITION_OVERFLOW;
  if (!nested(a.hq, a.n_q, a.d, a.qhs, a.qrs) || !nested(a.hkv, a.n_k, a.d, a.khs, a.krs) ||
      !nested(a.hq, a.n_q, a.n_k, a.shs, a.srs))
    return ATTNSCORE_ERR_BAD_HEAD_STRIDE;
  std::size_t nq, nk, ns;
  if (!span3(a.hq, a.n_q, a.d, a.qhs, a.qrs, &nq) || !span3(a.hkv, a.n_k, a.d, a.khs, a.krs, &nk) ||
      !span3(a.hq, a.n_q, a.n_k, a.shs, a.srs, &ns))
    return ATTNSCORE_ERR_SIZE_OVERFLOW;
  const Extent eq = extent(q, 1, nq, nq, qk_elem), ek = extent(k, 1, nk, nk, qk_elem),
               es = extent(s, 1, ns, ns, s_elem);
  if (!eq.ok || !ek.ok || !es.ok) return ATTNSCORE_ERR_SIZE_OVERFLOW;
  if (meets(es, eq) || meets(es, ek)) return ATTNSCORE_ERR_OVERLAP;
  return ATTNSCORE_OK;
}

std::size_t decode_attn_stride(Input &in, std::size_t dflt) {
  const std::uint8_t c = in.u8();
  if (c < 0xe0) return dflt;
  if (c < 0xf0) return dflt - 1 - c % 4;  // short (wraps to huge from 0)
  return huge(in, c);
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

FUZZ_UNGUIDED void check_attention_values(const Attn &a, const float *q, const float *k,
                                          const float *s, float scale) {
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
        double r = 0, g1 = 0;
        for (std::size_t t = 0; t < a.d; ++t) {
          const double x = static_cast<double>(q[h * a.qhs + i * a.qrs + t]) *
                           k[(h / g) * a.khs + j * a.krs + t];
          r += x;
          g1 += std::fabs(x);
        }
        r *= scale;
        const double raw = r;
        double e = gamma_n(a.d + 1) * g1 * std::fabs(scale) +
                   (2.0 * a.d + 2) * FLT_MIN * std::max(1.0, std::fabs(static_cast<double>(scale)));
        if (a.softcap != 0.0f) {
          r = a.softcap * std::tanh(r / a.softcap);
          e += 2 * u * std::fabs(raw) + 8 * u * std::fabs(r);
        }
        ref[j] = r, tol[j] = e;
        if (vis[j]) mx = std::max(mx, r), emax = std::max(emax, e), ++n_vis;
      }
      if (a.flags)
        for (std::size_t j = 0; j < a.n_k; ++j)
          if (vis[j]) sum += std::exp(ref[j] - mx);
      const float *row = s + h * a.shs + i * a.srs;
      for (std::size_t j = 0; j < a.n_k; ++j) {
        if (!vis[j]) {
          if (to_bits(row[j]) != (a.flags ? 0u : 0xff800000u))
            fail("head %zu row %zu key %zu: masked element is %a", h, i, j,
                 static_cast<double>(row[j]));
          continue;
        }
        double want = ref[j], bound = tol[j] + 1e-30;
        if (a.flags) {
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

}  // namespace

int fuzz_attention(Input &in, int) {
  Attn a{};
  a.hq = in.u8() % 9, a.hkv = in.u8() % 5;
  a.n_q = in.u8() % 20, a.n_k = in.u8() % 40, a.d = in.u8() % 33;
  // Keep an execution short.
  while (a.hq * a.n_q * a.n_k * (a.d + 1) > (std::size_t{1} << 15)) a.n_k /= 2;
  const std::uint8_t lay = in.u8();
  // Defaults: head-major (padded when bit 0 of the tensor's two bits), or token-major.
  const auto layout = [&](unsigned code, std::size_t heads, std::size_t rows, std::size_t cols,
                          std::size_t *hs, std::size_t *rs) {
    if (code == 2) {
      *hs = cols, *rs = heads * cols + 1;
    } else {
      *rs = cols + code, *hs = rows * *rs + code * 3;
    }
  };
  layout(lay % 3, a.hq, a.n_q, a.d, &a.qhs, &a.qrs);
  layout((lay >> 2) % 3, a.hkv, a.n_k, a.d, &a.khs, &a.krs);
  layout((lay >> 4) % 3, a.hq, a.n_q, a.n_k, &a.shs, &a.srs);
  a.qhs = decode_attn_stride(in, a.qhs), a.qrs = decode_attn_stride(in, a.qrs);
  a.khs = decode_attn_stride(in, a.khs), a.krs = decode_attn_stride(in, a.krs);
  a.shs = decode_attn_stride(in, a.shs), a.srs = decode_attn_stride(in, a.srs);
  a.scale = from_bits(decode_scale(in));
  a.softcap = decode_softcap(in);
  const std::uint8_t mask = in.u8(), flags = in.u8();
  a.mask = mask >= 0xf8 ? mask : mask % 4u;
  a.flags = flags >= 0xf8 ? flags : flags % 2u;
  const std::uint8_t pc = in.u8(), wc = in.u8();
  a.p0 = pc >= 0xf0 ? huge(in, pc) : pc % (a.n_k + 4);
  a.w = wc >= 0xf0 ? huge(in, wc) : wc % 9;
  const std::uint8_t nulls = in.u8(), place = in.u8();
  // 0: attnscore_attention_f32; 1: attnscore_attention_f16 (binary16 Q and K); 2:
  // attnscore_attention_f32_to_f16 (binary16 S). Every Q and K value here is a binary16 value.
  const unsigned dt = f16_built() ? in.u8() % 3 : 0;

  char what[200];
  std::snprintf(what, sizeof what,
                "attnscore_attention_f32 heads %zu/%zu n_q %zu n_k %zu d %zu strides q %zu,%zu k "
                "%zu,%zu s %zu,%zu mask %u flags %u p0 %zu w %zu softcap %a scale %a",
                a.hq, a.hkv, a.n_q, a.n_k, a.d, a.qhs, a.qrs, a.khs, a.krs, a.shs, a.srs, a.mask,
                a.flags, a.p0, a.w, static_cast<double>(a.softcap), static_cast<double>(a.scale));
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
  std::vector<float> qbuf(nq + (s_in_q ? ns : 0)), kbuf(nk), sbuf(s_in_q ? 1 : ns);
  float *qp = qbuf.data(), *kp = kbuf.data(), *sp = s_in_q ? qp + place % 8 : sbuf.data();
  for (float &x : qbuf) x = static_cast<float>(static_cast<std::int8_t>(in.v8())) / 64.0f;
  for (float &x : kbuf) x = static_cast<float>(static_cast<std::int8_t>(in.v8())) / 64.0f;
  for (float &x : sbuf) x = from_bits(kGuardBits);
  if (nulls >= 0xf8) {
    if (nulls & 1) qp = nullptr;
    if (nulls & 2) kp = nullptr;
    if (nulls & 4) sp = nullptr;
  }
  // The binary16 tensors of the f16 forms, laid out as the float ones.
  std::vector<std::uint16_t> qh, kh, sh;
  const std::uint16_t *qhp = nullptr, *khp = nullptr;
  std::uint16_t *shp = nullptr;
  if (dt == 1) {
    qh.assign(nq + (s_in_q ? 2 * ns + 16 : 0), 0);
    kh.resize(kbuf.size());
    for (std::size_t x = 0; x < nq; ++x) qh[x] = f16_nearest(qbuf[x]);
    for (std::size_t x = 0; x < kh.size(); ++x) kh[x] = f16_nearest(kbuf[x]);
    qhp = qp ? qh.data() : nullptr, khp = kp ? kh.data() : nullptr;
    if (s_in_q && sp) sp = reinterpret_cast<float *>(qh.data() + 2 * (place % 8));
  } else if (dt == 2) {
    sh.assign(s_in_q ? 1 : ns, 0x7e5a);
    if (sp) shp = s_in_q ? reinterpret_cast<std::uint16_t *>(qbuf.data() + place % 8) : sh.data();
  }
  attnscore_status want = dt == 1   ? predict_attention(a, qhp, khp, sp, 2, 4)
                          : dt == 2 ? predict_attention(a, qp, kp, shp, 4, 2)
                                    : predict_attention(a, qp, kp, sp);
  // A valid call whose tensors were too large to allocate is not made.
  if (want == ATTNSCORE_OK && !empty && (!fits || s_in_q)) return 0;
  const std::vector<float> q0 = qbuf, k0 = kbuf, s0 = sbuf;
  const std::vector<std::uint16_t> qh0 = qh, kh0 = kh, sh0 = sh;
  attnscore_attention_desc desc;
  std::memset(&desc, 0, sizeof desc);
  desc.heads_q = a.hq, desc.heads_kv = a.hkv, desc.n_q = a.n_q, desc.n_k = a.n_k, desc.d = a.d;
  desc.q_head_stride = a.qhs, desc.q_row_stride = a.qrs, desc.k_head_stride = a.khs;
  desc.k_row_stride = a.krs, desc.s_head_stride = a.shs, desc.s_row_stride = a.srs;
  desc.scale = a.scale, desc.softcap = a.softcap, desc.mask = a.mask, desc.flags = a.flags;
  desc.pos_offset = a.p0, desc.window = a.w;
  const attnscore_status st = api("attention", [&] {
    return dt == 1   ? attnscore_attention_f16(&desc, qhp, khp, sp)
           : dt == 2 ? attnscore_attention_f32_to_f16(&desc, qp, kp, shp)
                     : attnscore_attention_f32(&desc, qp, kp, sp);
  });
  if (st != want) fail("(form %u) returned %d, expected %d", dt, st, want);
  if (std::memcmp(q0.data(), qbuf.data(), q0.size() * 4) != 0 ||
      std::memcmp(k0.data(), kbuf.data(), k0.size() * 4) != 0 || qh != qh0 || kh != kh0)
    fail("an input changed");
  if (st != ATTNSCORE_OK || empty) {
    if (std::memcmp(s0.data(), sbuf.data(), s0.size() * 4) != 0 || sh != sh0) fail("S written");
    return 0;
  }
  if (dt != 0) {
    // The f32 call on the same values: f16 input gives its bits, f16 output its bits rounded
    // once; nothing outside S's elements is written.
    std::vector<float> ref(ns, from_bits(kGuardBits));
    if (api("attnscore_attention_f32", [&] {
          return attnscore_attention_f32(&desc, qbuf.data(), kbuf.data(), ref.data());
        }) != ATTNSCORE_OK)
      fail("the f32 call failed");
    for (std::size_t x = 0; x < ns; ++x) {
      if (dt == 1
              ? to_bits(sbuf[x]) != to_bits(ref[x]) && !(std::isnan(sbuf[x]) && std::isnan(ref[x]))
              : sh[x] != (to_bits(ref[x]) == kGuardBits ? 0x7e5a : f16_nearest(ref[x])))
        fail("(form %u) element %zu differs from the f32 call's %a", dt, x,
             static_cast<double>(ref[x]));
    }
    return 0;
  }
  // Nothing outside S's elements.
  std::vector<char> mine(sbuf.size(), 0);
  for (std::size_t h = 0; h < a.hq; ++h)
    for (std::size_t i = 0; i < a.n_q; ++i)
      for (std::size_t j = 0; j < a.n_k; ++j) mine[h * a.shs + i * a.srs + j] = 1;
  for (std::size_t x = 0; x < sbuf.size(); ++x)
    if (!mine[x] && to_bits(sbuf[x]) != kGuardBits) fail("wrote outside S at %zu", x);
  // Values: scores that stay finite, and a softcap whose s / c does not underflow.
  if (std::fabs(a.scale) <= 1e30f && a.softcap <= 1e30f)
    check_attention_values(a, qp, kp, sp, a.scale == 0.0f ? attnscore_default_scale(a.d) : a.scale);
  return 0;
}

}  // namespace fuzz
