// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "fuzz/fuzz.hpp"

namespace fuzz {

// ---------------------------------------------------------------------------------------------
// The binary16 converters on any bits, and attnscore_scores_f16_to_f16: each element the f32
// score attnscore_scores_f16 gives at the same level, rounded once to nearest even.

int fuzz_convert(Input &in, int) {
  if (!f16_built()) return -1;
  const std::uint8_t mode = in.u8(), place = in.u8();
  std::size_t n = in.u8() % 80;
  if (mode >= 0xf8) n = huge(in, in.u8());
  const bool to_f32 = mode & 1;
  const bool null_src = place == 0xff, null_dst = place == 0xfe, shared = (place & 0xf0) == 0xe0;
  const FpMode fp_mode((mode & 6) == 6 ? testing::flush_bits() : 0);
  const std::size_t have = n <= 4096 ? n : 1;
  // Source and destination in one buffer when `shared` (overlapping or touching by place % 16).
  const std::size_t src_bytes = have * (to_f32 ? 2 : 4), dst_bytes = have * (to_f32 ? 4 : 2);
  const std::size_t off = shared ? (place % 16) * 4 : 0;  // dst's start in the shared buffer
  std::vector<unsigned char> a(shared ? std::max(src_bytes, off + dst_bytes) : src_bytes),
      b(shared ? 1 : dst_bytes);
  Input values = in.stream();
  for (unsigned char &c : a) c = values.v8();
  for (unsigned char &c : b) c = 0xa5;
  unsigned char *src = a.data(), *dst = shared ? a.data() + off : b.data();
  const void *sp = null_src ? nullptr : static_cast<const void *>(src);
  void *dp = null_dst ? nullptr : static_cast<void *>(dst);
  attnscore_status want = ATTNSCORE_OK;
  if (n != 0) {
    if (sp == nullptr || dp == nullptr) {
      want = ATTNSCORE_ERR_NULL_POINTER;
    } else {
      const Extent es = extent(sp, 1, n, n, to_f32 ? 2 : 4),
                   ed = extent(dp, 1, n, n, to_f32 ? 4 : 2);
      want = !es.ok || !ed.ok ? ATTNSCORE_ERR_SIZE_OVERFLOW
             : meets(es, ed)  ? ATTNSCORE_ERR_OVERLAP
                              : ATTNSCORE_OK;
    }
  }
  if (want == ATTNSCORE_OK && n != have) return -1;  // valid, but too large here
  char what[128];
  std::snprintf(what, sizeof what, "attnscore_%s(%zu)%s", to_f32 ? "f16_to_f32" : "f32_to_f16", n,
                shared ? " in one buffer" : "");
  g_call = what;
  const std::vector<unsigned char> a0 = a, b0 = b;
  const attnscore_status got = api(what, [&] {
    return to_f32 ? attnscore_f16_to_f32(n, static_cast<const std::uint16_t *>(sp),
                                         static_cast<float *>(dp))
                  : attnscore_f32_to_f16(n, static_cast<const float *>(sp),
                                         static_cast<std::uint16_t *>(dp));
  });
  if (got != want) fail("returned %d, expected %d", got, want);
  if (got != ATTNSCORE_OK || n == 0) {
    if (a != a0 || b != b0) fail("memory written on error or no-op");
    return 0;
  }
  if (std::memcmp(a.data(), a0.data(), src_bytes) != 0) fail("the source changed");
  const bool may_flush = g_fp_extra != 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (to_f32) {
      std::uint16_t h;
      float f;
      std::memcpy(&h, a0.data() + 2 * i, 2);
      std::memcpy(&f, dst + 4 * i, 4);
      const float want_f = half_value(h);
      const bool ok = std::isnan(want_f) ? std::isnan(f)
                                         : to_bits(f) == to_bits(want_f) ||
                                               (may_flush && (h & 0x7c00) == 0 &&
                                                to_bits(f) == to_bits(std::copysign(0.0f, want_f)));
      if (!ok)
        fail("element %zu: %#x gave %a, expected %a", i, h, static_cast<double>(f),
             static_cast<double>(want_f));
    } else {
      float f;
      std::uint16_t h;
      std::memcpy(&f, a0.data() + 4 * i, 4);
      std::memcpy(&h, dst + 2 * i, 2);
      const std::uint16_t want_h = f16_nearest(f);
      const bool nan = (want_h & 0x7fff) > 0x7c00;
      // Flushing modes may read a subnormal float as 0 (its binary16 is +-0 anyway) or write a
      // subnormal binary16 as 0.
      const bool ok =
          nan ? (h & 0x7fff) > 0x7c00
              : h == want_h || (may_flush && (want_h & 0x7c00) == 0 && h == (want_h & 0x8000));
      if (!ok)
        fail("element %zu: %a (%#x) gave %#x, expected %#x", i, static_cast<double>(f), to_bits(f),
             h, want_h);
    }
  }
  return 0;
}

int fuzz_f16_out(Input &in, int cap) {
  if (!f16_built()) return -1;
  std::size_t n_q = decode_rows(in, 19), n_k = decode_rows(in, 69), d = decode_d(in);
  if (n_q < 20 && n_k < 70 && d <= kMaxElems)
    while (n_q * n_k * d > (std::size_t{1} << 14)) (n_k > n_q ? n_k : n_q) /= 2;
  const Stride lq = decode_stride(in, d), lk = decode_stride(in, d), ls = decode_stride(in, n_k);
  const std::uint32_t scale_bits = decode_scale(in);
  const float scale = from_bits(scale_bits);
  const std::uint8_t q_mode = in.u8(), k_mode = in.u8(), nulls = in.u8(), place = in.u8();
  const FpMode fp_mode((in.u8() & 3) == 3 ? testing::flush_bits() : 0);
  // The _ex calls' flags: none, f16 accumulation, or unknown bits.
  const std::uint8_t fc = in.u8();
  const unsigned flags = fc < 0x80 ? 0u : fc < 0xf8 ? ATTNSCORE_F16_ACCUMULATE_F16 : fc;
  std::size_t nq = 0, nk = 0, ns = 0;
  const bool fits = !lq.wrap && !lk.wrap && !ls.wrap && span_elems(n_q, d, lq.value, &nq) &&
                    nq <= kMaxElems && span_elems(n_k, d, lk.value, &nk) && nk <= kMaxElems &&
                    span_elems(n_q, n_k, ls.value, &ns) && ns <= kMaxElems;
  if (!fits) nq = nk = ns = 1;
  // S in Q's buffer (after it, touching or overlapping by `place`) or alone.
  const bool s_in_q = place >= 0xe0;
  const std::size_t s_off = s_in_q ? nq - std::min<std::size_t>(nq, place % 4) : 0;
  std::vector<std::uint16_t> qb(s_in_q ? s_off + ns : nq), kb(nk), sb(s_in_q ? 1 : ns);
  std::vector<float> ref(fits ? ns : 1, from_bits(kGuardBits));
  Input values = in.stream();
  for (std::uint16_t &x : qb) x = F16::value(values, q_mode, q_mode).bits;
  for (std::uint16_t &x : kb) x = F16::value(values, k_mode, k_mode).bits;
  for (std::uint16_t &x : sb) x = 0x7e5a;
  const std::uint16_t *qp = nulls == 0xff ? nullptr : qb.data();
  const std::uint16_t *kp = nulls == 0xfe ? nullptr : kb.data();
  std::uint16_t *sp = nulls == 0xfd ? nullptr : s_in_q ? qb.data() + s_off : sb.data();
  const std::size_t ldq = lq.wrap ? d : lq.value, ldk = lk.wrap ? d : lk.value,
                    lds = ls.wrap ? n_k : ls.value;
  // The status: as attnscore_scores_f16, with S's elements two bytes.
  attnscore_status want = ATTNSCORE_OK;
  if (n_q != 0 && n_k != 0) {
    if (d == 0)
      want = ATTNSCORE_ERR_ZERO_DIM;
    else if (!qp || !kp || !sp)
      want = ATTNSCORE_ERR_NULL_POINTER;
    else if (ldq < d)
      want = ATTNSCORE_ERR_BAD_LDQ;
    else if (ldk < d)
      want = ATTNSCORE_ERR_BAD_LDK;
    else if (lds < n_k)
      want = ATTNSCORE_ERR_BAD_LDS;
    else if (scale_rejected(scale))
      want = ATTNSCORE_ERR_BAD_SCALE;
    else {
      const Extent eq = extent(qp, n_q, d, ldq, 2), ek = extent(kp, n_k, d, ldk, 2),
                   es = extent(sp, n_q, n_k, lds, 2);
      want = !eq.ok || !ek.ok || !es.ok       ? ATTNSCORE_ERR_SIZE_OVERFLOW
             : meets(es, eq) || meets(es, ek) ? ATTNSCORE_ERR_OVERLAP
                                              : ATTNSCORE_OK;
      if (want == ATTNSCORE_OK && (flags & ~ATTNSCORE_F16_ACCUMULATE_F16) != 0)
        want = ATTNSCORE_ERR_BAD_FLAGS;
    }
  }
  const bool works = want == ATTNSCORE_OK && n_q != 0 && n_k != 0;
  if (works && (!fits || s_in_q)) return -1;  // valid, but not allocated for it
  char what[200];
  std::snprintf(what, sizeof what,
                "attnscore_scores_f16_to_f16_ex cap %d: %zu x %zu, d %zu, ld %zu/%zu/%zu, scale "
                "%#x, flags %#x",
                cap, n_q, n_k, d, ldq, ldk, lds, scale_bits, flags);
  g_call = what;
  const std::vector<std::uint16_t> q0 = qb, k0 = kb, s0 = sb;
  const attnscore_status got = api("attnscore_scores_f16_to_f16_ex", [&] {
    return flags == 0 && fc % 2 == 0
               ? attnscore_scores_f16_to_f16(n_q, n_k, d, qp, ldq, kp, ldk, sp, lds, scale)
               : attnscore_scores_f16_to_f16_ex(n_q, n_k, d, qp, ldq, kp, ldk, sp, lds, scale,
                                                flags);
  });
  if (got != want) fail("returned %d, expected %d", got, want);
  if (qb != q0 || kb != k0) fail("an input changed");
  if (!works) {
    if (sb != s0) fail("S written on error or no-op");
    return 0;
  }
  // The f32 scores at the same level and with the same flags, rounded here.
  const attnscore_status st = api("attnscore_scores_f16_ex", [&] {
    return attnscore_scores_f16_ex(n_q, n_k, d, qp, ldq, kp, ldk, ref.data(), lds, scale, flags);
  });
  if (st != ATTNSCORE_OK) fail("attnscore_scores_f16_ex returned %d", st);
  // Without f16 arithmetic the flag must change nothing: bit for bit the f32-accumulating call.
  if (flags != 0 && !attnscore_f16_accumulation_available()) {
    std::vector<float> plain(ns, from_bits(kGuardBits));
    // (in the same FP mode as the call it is compared with)
    if (api("attnscore_scores_f16",
            [&] {
              return attnscore_scores_f16(n_q, n_k, d, qp, ldq, kp, ldk, plain.data(), lds, scale);
            }) != ATTNSCORE_OK ||
        std::memcmp(plain.data(), ref.data(), ns * sizeof(float)) != 0)
      fail("f16 accumulation unavailable, yet the flag changed the scores");
  }
  for (std::size_t x = 0; x < ns; ++x) {
    const bool elem = x % lds < n_k;
    const std::uint16_t want_h = elem ? f16_nearest(ref[x]) : 0x7e5a;
    const bool nan = elem && (want_h & 0x7fff) > 0x7c00;
    const bool flushed =
        g_fp_extra != 0 && elem && (want_h & 0x7c00) == 0 && sb[x] == (want_h & 0x8000);
    if (nan ? (sb[x] & 0x7fff) <= 0x7c00 : sb[x] != want_h && !flushed)
      fail("S element %zu = %#x, expected %#x (f32 score %a)", x, sb[x], want_h,
           static_cast<double>(ref[x]));
  }
  return 0;
}

}  // namespace fuzz
