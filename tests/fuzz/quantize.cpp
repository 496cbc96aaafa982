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
// attnscore_quantize_s8 (f32, binary16 or bfloat16 rows, or a dtype it does not take) and
// attnscore_fold_channel_scales: statuses from the documented rules,
// results against the documented formulas (the same bits at every level), inputs unchanged.

namespace {

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}

}  // namespace

int fuzz_quantize(Input &in, int cap) {
  if (!s8_built()) return -1;
  const std::uint8_t which = in.u8();
  const bool fold = which & 1;
  // attnscore_quantize_s8 of 16-bit float rows (binary16, bit 2 bfloat16): the same bits as
  // quantizing the converted rows; or (which >= 0xf0) a src dtype it does not take (s8, or no
  // dtype at all: 4, 6, 8).
  const bool half = !fold && (which & 2) && f16_built(), bf16 = half && (which & 4);
  const bool bad_dtype = !fold && which >= 0xf0;
  const int src_dtype = bad_dtype ? ATTNSCORE_DTYPE_S8 + 2 * ((which >> 2) & 3)
                        : bf16    ? ATTNSCORE_DTYPE_BF16
                        : half    ? ATTNSCORE_DTYPE_F16
                                  : ATTNSCORE_DTYPE_F32;
  std::size_t n = decode_rows(in, 19), d = decode_d(in);
  if (n < 20 && d <= kMaxElems)
    while (n * d > (std::size_t{1} << 13)) n /= 2;
  const Stride lx = decode_stride(in, d), lo = decode_stride(in, d);
  const std::uint8_t mode = in.u8(), nulls = in.u8(), place = in.u8();
  const int exp = static_cast<std::int8_t>(in.u8()) * 5 / 4;
  const FpMode fp_mode((in.u8() & 3) == 3 ? testing::flush_bits() : 0);
  std::size_t nx = 0, no = 0;
  const std::size_t ldx = lx.wrap ? d : lx.value, ldo = lo.wrap ? d : lo.value;
  const bool fits = span_elems(n, d, ldx, &nx) && nx <= kMaxElems && span_elems(n, d, ldo, &no) &&
                    no <= kMaxElems && d <= kMaxElems && n <= kMaxElems;
  if (!fits) nx = no = 1;
  // fold: out in x's buffer (in place when place says so, or overlapping); quantize: the
  // scales after x or in out's place.
  // (16-bit rows: only apart)
  const unsigned where = half ? 0 : place % 4;  // 0 apart, 1 out in x, 2 aux in x, 3 in place
  Input values = in.stream();
  std::vector<float> x(nx + (where == 1 ? no : 0) + (where == 2 && fits ? d + n : 0));
  std::vector<std::uint16_t> xh(half ? nx : 0);
  for (float &v : x) v = F32::value(values, mode, exp);
  for (std::size_t i = 0; i < xh.size(); ++i) {
    xh[i] = bf16 ? BF16::value(values, mode, exp).bits : F16::value(values, mode, exp).bits;
    x[i] = bf16 ? bf16_float(xh[i]) : half_value(xh[i]);  // the reference's view of the same rows
  }
  std::vector<float> chan(where == 2       ? 1
                          : d <= kMaxElems ? d
                                           : 1),
      scales(where == 2       ? 1
             : n <= kMaxElems ? n
                              : 1);
  for (float &v : chan) v = F32::value(values, values.v8() % 5, 0);
  std::vector<float> outf(where == 1 || where == 3 ? 1 : no, from_bits(kGuardBits));
  std::vector<std::int8_t> outq(where == 1 ? 1 : no, std::int8_t{0x5a});
  const std::size_t shift = place >> 4;  // where out or the scales start inside x
  float *xp = nulls == 0xff ? nullptr : x.data();
  const std::uint16_t *xhp = nulls == 0xff ? nullptr : xh.data();
  float *op_f = where == 1 ? x.data() + std::min(shift, nx) : where == 3 ? x.data() : outf.data();
  std::int8_t *op_q = where == 1
                          ? reinterpret_cast<std::int8_t *>(x.data()) + std::min(shift, 4 * nx)
                          : outq.data();
  float *aux = where == 2 ? x.data() + std::min(shift, nx) : fold ? chan.data() : scales.data();
  if (nulls == 0xfe) op_f = nullptr, op_q = nullptr;
  if (nulls == 0xfd) aux = nullptr;
  const std::size_t ldo_used = where == 3 && fold ? (nulls == 0xfc ? ldx + 1 : ldx) : ldo;
  // The quantizer checks its src dtype first, before the no-op.
  attnscore_status want = ATTNSCORE_OK;
  if (bad_dtype) {
    want = ATTNSCORE_ERR_UNKNOWN_DTYPE;
  } else if (n != 0) {
    const void *out = fold ? static_cast<const void *>(op_f) : static_cast<const void *>(op_q);
    if (d == 0)
      want = ATTNSCORE_ERR_ZERO_DIM;
    else if (!xp || !out || !aux)
      want = ATTNSCORE_ERR_NULL_POINTER;
    else if (ldx < d)
      want = ATTNSCORE_ERR_BAD_LDQ;
    else if (ldo_used < d)
      want = ATTNSCORE_ERR_BAD_LDS;
    else {
      const Extent ex = half ? extent(xhp, n, d, ldx, 2) : extent(xp, n, d, ldx, 4);
      const Extent eo = extent(out, n, d, ldo_used, fold ? 4 : 1);
      const Extent ea = fold ? extent(aux, 1, d, d, 4) : extent(aux, 1, n, n, 4);
      if (!ex.ok || !eo.ok || !ea.ok)
        want = ATTNSCORE_ERR_SIZE_OVERFLOW;
      else if (fold)
        want = (!(out == xp && ldo_used == ldx) && meets(eo, ex)) || meets(eo, ea)
                   ? ATTNSCORE_ERR_OVERLAP
                   : ATTNSCORE_OK;
      else if (meets(eo, ex) || meets(ea, ex) || meets(ea, eo))
        want = ATTNSCORE_ERR_OVERLAP;
    }
    if (want == ATTNSCORE_OK && !fold && fits)  // values are checked last
      for (std::size_t i = 0; i < n && want == ATTNSCORE_OK; ++i)
        for (std::size_t t = 0; t < d; ++t)
          if (!std::isfinite(x[i * ldx + t])) want = ATTNSCORE_ERR_NOT_FINITE;
  }
  const bool works = want == ATTNSCORE_OK && n != 0 && !bad_dtype;
  if (works && !fits) return -1;
  char what[200];
  std::snprintf(what, sizeof what, "attnscore_%s cap %d: n %zu, d %zu, ld %zu/%zu, place %#x",
                fold   ? "fold_channel_scales"
                : bf16 ? "quantize_s8 (bf16)"
                : half ? "quantize_s8 (f16)"
                       : "quantize_s8",
                cap, n, d, ldx, ldo_used, place);
  g_call = what;
  const std::vector<float> x0 = x, chan0 = chan, scales0 = scales, outf0 = outf;
  const std::vector<std::uint16_t> xh0 = xh;
  const std::vector<std::int8_t> outq0 = outq;
  auto call = [&] {
    return fold ? api("attnscore_fold_channel_scales",
                      [&] {
                        return attnscore_fold_channel_scales(n, d, xp, ldx, aux, op_f, ldo_used);
                      })
                : api("attnscore_quantize_s8", [&] {
                    return static_cast<attnscore_status>(fuzz_c_quantize_s8(
                        n, d, src_dtype, half ? static_cast<const void *>(xhp) : xp, ldx, op_q,
                        ldo_used, aux));
                  });
  };
  const attnscore_status got = call();
  if (got != want) fail("returned %d, expected %d", got, want);
  if (xh != xh0) fail("the 16-bit rows changed");
  if (!works) {
    if (!same_bits(x, x0) || !same_bits(chan, chan0) || !same_bits(scales, scales0) ||
        outq != outq0 || !same_bits(outf, outf0) || xh != xh0)
      fail("memory written on error or no-op");
    return 0;
  }
  if (where != 0) return 0;  // (aliasing cases: the status is what is checked)
  const bool may_flush = g_fp_extra != 0 || kAlwaysFlushes;
  if (fold) {
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t t = 0; t < d; ++t) {
        const float a = x0[i * ldx + t], c = chan0[t];
        const float want_v = a * c, got_v = outf[i * ldo + t];
        // A flushing mode may read a subnormal factor as 0 or flush a subnormal product.
        const float flushed = flush(a) * flush(c);
        if (to_bits(got_v) != to_bits(want_v) && !(std::isnan(got_v) && std::isnan(want_v)) &&
            !(may_flush && (to_bits(got_v) == to_bits(flush(want_v)) ||
                            to_bits(got_v) == to_bits(flush(flushed)) ||
                            (std::isnan(got_v) && std::isnan(flushed)))))
          fail("out[%zu][%zu] = %a, expected %a", i, t, static_cast<double>(got_v),
               static_cast<double>(want_v));
      }
    return 0;
  }
  const std::vector<std::int8_t> first = outq;
  const std::vector<float> first_scales = scales;
  for (std::size_t i = 0; i < n; ++i) {
    float mx = 0;
    for (std::size_t t = 0; t < d; ++t) mx = std::max(mx, std::fabs(x0[i * ldx + t]));
    // (A flushing mode changes no scale: a subnormal maximum gives 0 either way.)
    const float sc = mx / 127.0f < FLT_MIN ? 0.0f : mx / 127.0f;
    if (to_bits(scales[i]) != to_bits(sc))
      fail("scale[%zu] = %a, expected %a", i, static_cast<double>(scales[i]),
           static_cast<double>(sc));
    for (std::size_t t = 0; t < d; ++t) {
      const float v = x0[i * ldx + t];
      const float r = sc == 0 ? 0.0f : std::nearbyint(v / sc);
      const int w = static_cast<int>(std::max(-128.0f, std::min(127.0f, r)));
      const int g = outq[i * ldo + t];
      // Under a flushing mode a subnormal input may read as 0.
      const bool tiny = v != 0 && std::fabs(v) < FLT_MIN;
      if (g != w && !(may_flush && tiny && g == 0))
        fail("out[%zu][%zu] = %d for %a (scale %a), expected %d", i, t, g, static_cast<double>(v),
             static_cast<double>(sc), w);
    }
  }
  // Every level: the same bytes and scales.
  for (int level : kFamily) {
    if (!attnscore_level_supported(as_level(level))) continue;
    set_cap(level);
    std::fill(outq.begin(), outq.end(), std::int8_t{0x5a});
    if (call() != ATTNSCORE_OK) fail("at level %d: an error", level);
    if (outq != first || !same_bits(scales, first_scales))
      fail("at level %d: other results", level);
  }
  return 0;
}

}  // namespace fuzz
