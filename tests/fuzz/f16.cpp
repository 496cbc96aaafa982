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
// attnscore_convert on any bits (and unsupported dtype pairs) for binary16 and bfloat16, and f16
// Q, K and S through attnscore_attention.

namespace {

// A 16-bit float format as the converter's reference sees it: the oracle's value and nearest
// bits, the exponent bits, the f32 bits its narrowing drops, and the f32 exponents of its largest
// finite values and of values just below its normals. bfloat16 is converted in integer
// arithmetic: exact whatever the FP mode, a NaN widened keeping its bits, narrowed to
// (bits >> 16) | 0x40 (attnscore.h); binary16 may flush and gives some quiet NaN.
struct Format16 {
  int dtype;
  float (*value)(std::uint16_t);
  std::uint16_t (*nearest)(double);
  std::uint16_t exp_mask;
  unsigned dropped;
  std::uint32_t top_exp, sub_exp;
  bool integer;
};

const Format16 kBinary16{
    ATTNSCORE_DTYPE_F16, half_value, f16_nearest, 0x7c00, 13, 0x8e, 0x70, false};
const Format16 kBfloat16{
    ATTNSCORE_DTYPE_BF16, bf16_float, bf16_nearest, 0x7f80, 16, 0xfe, 0x00, true};

// An f32 source at the format's edges: the exponent kept, all ones, the format's largest or just
// below its normals; the dropped bits kept, 0, or at and around the tie.
std::uint32_t edge_f32(const Format16 &fmt, std::uint32_t b, std::uint8_t r) {
  const std::uint32_t exps[] = {(b >> 23) & 0xffu, 0xffu, fmt.top_exp, fmt.sub_exp};
  b = (b & 0x807fffffu) | exps[r % 4] << 23;
  const std::uint32_t tie = 1u << (fmt.dropped - 1), low = (tie << 1) - 1;
  const std::uint32_t lows[] = {b & low, 0, tie - 1, tie, tie + 1, low};
  return (b & ~low) | lows[(r >> 2) % 6];
}

// A 16-bit source at the edges: the exponent kept, all ones (infinities, NaNs of any payload) or 0.
std::uint16_t edge_16(const Format16 &fmt, std::uint16_t h, std::uint8_t r) {
  const unsigned e = fmt.exp_mask, exps[] = {h & e, e, 0u};
  return static_cast<std::uint16_t>((h & ~e) | exps[r % 3]);
}

}  // namespace

int fuzz_convert(Input &in, int) {
  if (!f16_built()) return -1;
  const std::uint8_t mode = in.u8(), place = in.u8();
  std::size_t n = in.u8() % 80;
  if (mode >= 0xf8) n = huge(in, in.u8());
  // The dtype pair: a 16-bit float (pair bit 0 below 0xe0: bfloat16, else binary16) -> f32 or
  // f32 -> it, or (pair >= 0xe0) any two of f32, f16, s8 and (0xe_) a value that is no dtype or
  // (0xf_) bf16, an unsupported pair but for those four.
  const std::uint8_t pair = in.u8();
  const int picked = pair < 0xe0 && (pair & 1) ? ATTNSCORE_DTYPE_BF16 : ATTNSCORE_DTYPE_F16;
  int src_dt = mode & 1 ? picked : ATTNSCORE_DTYPE_F32;
  int dst_dt = mode & 1 ? ATTNSCORE_DTYPE_F32 : picked;
  if (pair >= 0xe0) {
    const int dts[] = {ATTNSCORE_DTYPE_F32, ATTNSCORE_DTYPE_F16, ATTNSCORE_DTYPE_S8,
                       pair >= 0xf0 ? ATTNSCORE_DTYPE_BF16 : 4};
    src_dt = dts[pair % 4], dst_dt = dts[(pair >> 2) % 4];
  }
  const auto is16 = [](int dt) { return dt == ATTNSCORE_DTYPE_F16 || dt == ATTNSCORE_DTYPE_BF16; };
  const bool supported = (is16(src_dt) && dst_dt == ATTNSCORE_DTYPE_F32) ||
                         (src_dt == ATTNSCORE_DTYPE_F32 && is16(dst_dt));
  const bool to_f32 = is16(src_dt);
  const Format16 &fmt = (to_f32 ? src_dt : dst_dt) == ATTNSCORE_DTYPE_BF16 ? kBfloat16 : kBinary16;
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
  // (mode bit 3) sources at the edges: random bits seldom hit a tie or a NaN's low payload.
  for (std::size_t i = 0; (mode & 8) && mode < 0xf8 && i < have; ++i) {
    if (to_f32) {
      std::uint16_t h;
      std::memcpy(&h, a.data() + 2 * i, 2);
      h = edge_16(fmt, h, values.v8());
      std::memcpy(a.data() + 2 * i, &h, 2);
    } else {
      std::uint32_t v;
      std::memcpy(&v, a.data() + 4 * i, 4);
      v = edge_f32(fmt, v, values.v8());
      std::memcpy(a.data() + 4 * i, &v, 4);
    }
  }
  unsigned char *src = a.data(), *dst = shared ? a.data() + off : b.data();
  const void *sp = null_src ? nullptr : static_cast<const void *>(src);
  void *dp = null_dst ? nullptr : static_cast<void *>(dst);
  // The order: an unsupported pair; the no-op; NULL_POINTER; SIZE_OVERFLOW; OVERLAP.
  attnscore_status want = ATTNSCORE_OK;
  if (!supported) {
    want = ATTNSCORE_ERR_UNKNOWN_DTYPE;
  } else if (n != 0) {
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
  std::snprintf(what, sizeof what, "attnscore_convert(%zu, %d -> %d)%s", n, src_dt, dst_dt,
                shared ? " in one buffer" : "");
  g_call = what;
  const std::vector<unsigned char> a0 = a, b0 = b;
  const attnscore_status got = api(what, [&] {
    return static_cast<attnscore_status>(fuzz_c_convert(n, src_dt, sp, dst_dt, dp));
  });
  if (got != want) fail("returned %d, expected %d", got, want);
  if (got != ATTNSCORE_OK || n == 0) {
    if (a != a0 || b != b0) fail("memory written on error or no-op");
    return 0;
  }
  if (std::memcmp(a.data(), a0.data(), src_bytes) != 0) fail("the source changed");
  const bool may_flush = g_fp_extra != 0 && !fmt.integer;
  const std::uint16_t em = fmt.exp_mask;
  for (std::size_t i = 0; i < n; ++i) {
    if (to_f32) {
      std::uint16_t h;
      float f;
      std::memcpy(&h, a0.data() + 2 * i, 2);
      std::memcpy(&f, dst + 4 * i, 4);
      const float want_f = fmt.value(h);
      const bool nan_ok = fmt.integer ? to_bits(f) == std::uint32_t{h} << 16 : std::isnan(f);
      const bool ok = std::isnan(want_f) ? nan_ok
                                         : to_bits(f) == to_bits(want_f) ||
                                               (may_flush && (h & em) == 0 &&
                                                to_bits(f) == to_bits(std::copysign(0.0f, want_f)));
      if (!ok)
        fail("element %zu: %#x gave %a (%#x), expected %a", i, h, static_cast<double>(f),
             to_bits(f), static_cast<double>(want_f));
    } else {
      float f;
      std::uint16_t h;
      std::memcpy(&f, a0.data() + 4 * i, 4);
      std::memcpy(&h, dst + 2 * i, 2);
      const bool nan = std::isnan(f);
      const std::uint16_t want_h = nan && fmt.integer
                                       ? static_cast<std::uint16_t>(to_bits(f) >> 16 | 0x40u)
                                       : fmt.nearest(f);
      // Flushing modes may read a subnormal float as 0 (its binary16 is +-0 anyway) or write a
      // subnormal binary16 as 0.
      const bool ok = nan && !fmt.integer ? (h & 0x7fff) > em
                                          : h == want_h || (may_flush && (want_h & em) == 0 &&
                                                            h == (want_h & 0x8000));
      if (!ok)
        fail("element %zu: %a (%#x) gave %#x, expected %#x", i, static_cast<double>(f), to_bits(f),
             h, want_h);
    }
  }
  return 0;
}

// f16 Q and K to f16 S through attnscore_attention (the old binary16-output call's ground): each
// element the f32 S of the same call rounded once, the f32 call's bits on the same values, f16
// accumulation (when it is no path here) changing nothing; attention_case checks all of it.
int fuzz_f16_out(Input &in, int cap) {
  if (!f16_built()) return -1;
  AttnOpts o;
  o.qk = ATTNSCORE_DTYPE_F16, o.s = ATTNSCORE_DTYPE_F16;
  return attention_case(in, cap, o);
}

}  // namespace fuzz
