// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "fuzz/fuzz.hpp"

namespace fuzz {

// ---------------------------------------------------------------------------------------------
// attnscore_scores_s8: Q, K, S and the two scale arrays placed in up to three arenas (S may sit
// against any of the other four), scale counts 1, n or wrong, raw int8 values or the extremes,
// d up to and past ATTNSCORE_S8_MAX_D. Every level must give exactly
// (float)acc * ((q_scale * scale) * k_scale), evaluated here in float in that order.

namespace {

constexpr std::size_t kMaxS8Elems = std::size_t{1} << 18;  // room for one row at the d limit

}  // namespace

std::size_t decode_scale_count(Input &in, std::size_t n) {
  const std::uint8_t c = in.u8();
  switch (c % 8) {
    case 4:
    case 5:
      return n;
    case 6:
      return c & 8 ? n + 1 : n - 1;  // (SIZE_MAX for n == 0)
    case 7:
      return c >= 0xf0 ? huge(in, in.u8()) : 0;
    default:
      return 1;
  }
}

float s8_scale_value(Input &in, unsigned mode) {
  switch (mode % 8) {
    case 0:
    case 1:
    case 2:
    case 3: {  // normal, either sign, 2^-20 ... 2^19
      const std::uint8_t v = in.v8();
      const float m = 1.0f + static_cast<float>(in.v8()) / 256.0f;
      return std::ldexp(v & 1 ? -m : m, static_cast<int>(v >> 1) % 40 - 20);
    }
    case 4: {
      const float sp[] = {0.0f,   -0.0f,    1.0f,      FLT_MIN,       FLT_MAX,
                          NAN,    INFINITY, -INFINITY, from_bits(1u), from_bits(0x807fffffu),
                          1e-30f, 1e30f};
      return sp[in.v8() % (sizeof sp / sizeof sp[0])];
    }
    case 5:
      return from_bits(in.v32());
    default:  // tiny or huge normals: products that underflow or overflow
      return std::ldexp(
          1.0f + static_cast<float>(in.v8()) / 256.0f,
          in.v8() & 1 ? -126 + static_cast<int>(in.v8() % 8) : 120 - static_cast<int>(in.v8() % 8));
  }
}

std::int8_t s8_value(Input &in, unsigned mode) {
  switch (mode % 4) {
    case 0:
      return static_cast<std::int8_t>(in.v8());
    case 1:  // the extremes: -128 * -128 is the largest product
      return in.v8() & 1 ? std::int8_t{127} : std::int8_t{-128};
    case 2:
      return std::int8_t{-128};
    default:
      return static_cast<std::int8_t>(static_cast<int>(in.v8() % 7) - 3);
  }
}

FUZZ_UNGUIDED float flush(float x) {  // a result a flushing mode may give as 0
  return x != 0 && std::fabs(x) < FLT_MIN ? std::copysign(0.0f, x) : x;
}

namespace {

// The two values an element may take: as evaluated without flushing, and with every subnormal
// intermediate flushed (a caller's FTZ, or armv7 NEON); equal when nothing is subnormal.
struct S8Want {
  float exact, flushed;
};

FUZZ_UNGUIDED std::vector<S8Want> s8_expectations(std::size_t n_q, std::size_t n_k, std::size_t d,
                                                  const std::int8_t *q, std::size_t ldq,
                                                  const float *qs, bool q_per_row,
                                                  const std::int8_t *k, std::size_t ldk,
                                                  const float *ks, bool k_per_key, float scale) {
  std::vector<S8Want> out(n_q * n_k);
  for (std::size_t i = 0; i < n_q; ++i)
    for (std::size_t j = 0; j < n_k; ++j) {
      std::int64_t acc = 0;
      for (std::size_t t = 0; t < d; ++t)
        acc += static_cast<std::int64_t>(q[i * ldq + t]) * k[j * ldk + t];
      if (acc > INT32_MAX || acc < INT32_MIN) fail("the test's own sum left int32 at d %zu", d);
      const float qsv = qs[q_per_row ? i : 0], ksv = ks[k_per_key ? j : 0];
      const volatile float a = qsv * scale;
      const volatile float b = a * ksv;
      const volatile float r = static_cast<float>(acc) * b;
      const volatile float fa = flush(qsv * scale);
      const volatile float fb = flush(fa * ksv);
      const volatile float fr = flush(static_cast<float>(acc) * fb);
      out[i * n_k + j] = {r, fr};
    }
  return out;
}

// kUnknown: the status depends on scale values past what the fuzzer could allocate.
constexpr attnscore_status kUnknown = ATTNSCORE_STATUS_MAX_ENUM;

attnscore_status predict_s8(std::size_t n_q, std::size_t n_k, std::size_t d, const void *q,
                            std::size_t ldq, const float *qs, std::size_t qn, std::size_t q_have,
                            const void *k, std::size_t ldk, const float *ks, std::size_t kn,
                            std::size_t k_have, const void *s, std::size_t lds, float scale) {
  if (n_q == 0 || n_k == 0) return ATTNSCORE_OK;
  if (d == 0) return ATTNSCORE_ERR_ZERO_DIM;
  if (d > ATTNSCORE_S8_MAX_D) return ATTNSCORE_ERR_DIM_TOO_LARGE;
  if (!q || !k || !s || !qs || !ks) return ATTNSCORE_ERR_NULL_POINTER;
  if (ldq < d) return ATTNSCORE_ERR_BAD_LDQ;
  if (ldk < d) return ATTNSCORE_ERR_BAD_LDK;
  if (lds < n_k) return ATTNSCORE_ERR_BAD_LDS;
  if ((qn != 1 && qn != n_q) || (kn != 1 && kn != n_k)) return ATTNSCORE_ERR_BAD_SCALE_COUNT;
  if (scale_rejected(scale)) return ATTNSCORE_ERR_BAD_SCALE;
  const Extent eq = extent(q, n_q, d, ldq, 1), ek = extent(k, n_k, d, ldk, 1);
  const Extent es = extent(s, n_q, n_k, lds, 4);
  const Extent eqs = extent(qs, 1, qn, qn, 4), eks = extent(ks, 1, kn, kn, 4);
  if (!eq.ok || !ek.ok || !es.ok || !eqs.ok || !eks.ok) return ATTNSCORE_ERR_SIZE_OVERFLOW;
  if (meets(es, eq) || meets(es, ek) || meets(es, eqs) || meets(es, eks))
    return ATTNSCORE_ERR_OVERLAP;
  if (qn > q_have || kn > k_have) return kUnknown;
  for (std::size_t i = 0; i < qn; ++i)
    if (scale_rejected(qs[i])) return ATTNSCORE_ERR_BAD_QUANT_SCALE;
  for (std::size_t j = 0; j < kn; ++j)
    if (scale_rejected(ks[j])) return ATTNSCORE_ERR_BAD_QUANT_SCALE;
  return ATTNSCORE_OK;
}

FUZZ_UNGUIDED void check_s8_results(const std::vector<S8Want> &ex, std::size_t n_q, std::size_t n_k,
                                    const float *s, std::size_t lds, bool may_flush,
                                    const char *when) {
  for (std::size_t i = 0; i < n_q; ++i)
    for (std::size_t j = 0; j < n_k; ++j) {
      const float got = s[i * lds + j];
      const S8Want &w = ex[i * n_k + j];
      const auto same = [&](float x) {
        return to_bits(x) == to_bits(got) || (std::isnan(x) && std::isnan(got));
      };
      if (!same(w.exact) && !(may_flush && same(w.flushed)))
        fail("%s: S[%zu][%zu] = %a (bits %#x), expected %a (flushed %a)", when, i, j,
             static_cast<double>(got), to_bits(got), static_cast<double>(w.exact),
             static_cast<double>(w.flushed));
    }
}

}  // namespace

int fuzz_s8(Input &in, int cap) {
  if (!s8_built()) return -1;
  std::size_t n_q = decode_rows(in, 19), n_k = decode_rows(in, 69);
  std::size_t d = decode_d(in);
  const std::uint8_t edge = in.u8();                       // d at the int32 limit of the sums
  if (edge >= 0xfd) d = ATTNSCORE_S8_MAX_D - 0xfe + edge;  // the limit and one past it
  std::size_t work = d > 256 ? std::size_t{1} << 16 : std::size_t{1} << 14;
  if (d <= ATTNSCORE_S8_MAX_D + 1) work = std::max(work, d);
  if (n_q < 20 && n_k < 70 && d <= kMaxS8Elems)
    while (n_q * n_k * d > work) (n_k > n_q ? n_k : n_q) /= 2;
  const std::size_t qn = decode_scale_count(in, n_q), kn = decode_scale_count(in, n_k);
  Mat q{"Q", 1, n_q, d, decode_stride(in, d), false, false, 0, 0, 0, nullptr, nullptr};
  Mat k{"K", 1, n_k, d, decode_stride(in, d), false, false, 0, 1, 0, nullptr, nullptr};
  Mat s{"S", 4, n_q, n_k, decode_stride(in, n_k), false, false, 0, 2, 0, nullptr, nullptr};
  Mat qs{"QS", 4, 1, qn, {qn, false, 0}, false, false, 0, 0, 0, nullptr, nullptr};
  Mat ks{"KS", 4, 1, kn, {kn, false, 0}, false, false, 0, 1, 0, nullptr, nullptr};
  const std::uint8_t lay = in.u8(), nulls = in.u8();
  const std::uint16_t r_s = in.u16(), r_k = in.u16(), r_qs = in.u16(), r_ks = in.u16();
  const std::uint16_t leads = in.u16();
  const std::uint32_t scale_bits = decode_scale(in);
  const std::uint8_t q_mode = in.u8(), k_mode = in.u8(), qs_mode = in.u8(), ks_mode = in.u8();
  const FpMode fp_mode((in.u8() & 3) == 3 ? testing::flush_bits() : 0);
  if (nulls >= 0xf0) {
    q.null = nulls & 1, k.null = nulls & 2, s.null = nulls & 4;
    (nulls & 8 ? qs : ks).null = true;
  }
  Mat *mats[] = {&q, &k, &s, &qs, &ks};
  for (Mat *m : mats) {
    std::size_t n = 0, elems = 0;
    m->fits = !m->ld.wrap && span_elems(m->rows, m->cols, m->ld.value, &n) && n <= kMaxS8Elems &&
              checked_mul(m->rows, m->cols, &elems) && elems <= kMaxS8Elems;
    m->span = m->fits ? n : 0;
  }
  // K alone or against Q; the scales after their matrix (or anywhere near it); S alone or
  // against any of the other four.
  if (lay & 1) {
    k.arena = 0;
    k.pos = snap((lay >> 1) & 7, q.pos, length(q), length(k), 1, r_k);
    ks.arena = 0;
  }
  qs.pos = snap(r_qs & 8 ? r_qs : 7, q.pos, length(q), length(qs), 4, r_qs >> 4);
  ks.pos = snap(r_ks & 8 ? r_ks : 7, k.pos, length(k), length(ks), 4, r_ks >> 4);
  if ((lay >> 4) & 1) {
    const Mat &partner = *mats[(lay >> 5) % 5 == 2 ? 3 : (lay >> 5) % 5];
    s.arena = partner.arena;
    s.pos = snap(r_s, partner.pos, length(partner), length(s), 4, r_s >> 3);
  }
  for (int a = 0; a < 3; ++a) {
    long long lo = LLONG_MAX;
    for (Mat *m : mats)
      if (m->arena == a) lo = std::min(lo, m->pos);
    if (lo == LLONG_MAX) continue;
    const long long lead = ((leads >> (4 * a)) & 15u) < 8 ? 0 : ((leads >> (4 * a)) & 7u);
    for (Mat *m : mats)
      if (m->arena == a) m->pos += lead - lo;
  }
  for (Mat *m : mats) m->pos += (static_cast<long long>(m->elem) - m->pos % m->elem) % m->elem;
  Memory mem;
  mem.allocate(mats, 5);
  set_wrap_strides(mats, 5);

  // Values: Q, K, then the scales (later ones win where they share memory).
  auto fill_s8 = [&](const Mat &m, unsigned mode) {
    if (!m.fits || m.span == 0) return;
    auto *base = reinterpret_cast<std::int8_t *>(m.place);
    for (std::size_t i = 0; i < m.rows; ++i)
      for (std::size_t t = 0; t < m.cols; ++t) base[i * m.ld.value + t] = s8_value(in, mode);
  };
  auto fill_scales = [&](const Mat &m, unsigned mode) {
    if (!m.fits || m.span == 0) return;
    for (std::size_t t = 0; t < m.cols; ++t) {
      const float v = s8_scale_value(in, (mode & 0xf0) == 0xf0 ? mode : mode % 4);
      std::memcpy(m.place + t * 4, &v, 4);
    }
  };
  fill_s8(q, q_mode);
  fill_s8(k, k_mode);
  fill_scales(qs, qs_mode);
  fill_scales(ks, ks_mode);

  const float scale = from_bits(scale_bits);
  const auto *qp = reinterpret_cast<const std::int8_t *>(q.ptr);
  const auto *kp = reinterpret_cast<const std::int8_t *>(k.ptr);
  const auto *qsp = reinterpret_cast<const float *>(qs.ptr);
  const auto *ksp = reinterpret_cast<const float *>(ks.ptr);
  auto *sp = reinterpret_cast<float *>(s.ptr);
  const attnscore_status want =
      predict_s8(n_q, n_k, d, qp, q.ld.value, qsp, qn, qs.fits ? qn : 0, kp, k.ld.value, ksp, kn,
                 ks.fits ? kn : 0, sp, s.ld.value, scale);
  if (want == kUnknown) return -1;  // the call would read scales too many to allocate here
  const bool works = want == ATTNSCORE_OK && n_q != 0 && n_k != 0;
  if (works && (!q.fits || !k.fits || !s.fits)) return -1;  // valid, but too large to allocate
  char what[400];
  std::snprintf(what, sizeof what,
                "attnscore_scores_s8 cap %d: %zu x %zu, d %zu, ld %zu/%zu/%zu, scale counts "
                "%zu/%zu, scale %#x, lay %#x, nulls %#x",
                cap, n_q, n_k, d, q.ld.value, k.ld.value, s.ld.value, qn, kn, scale_bits, lay,
                nulls);
  g_call = what;
  const float applied = works && scale == 0.0f ? attnscore_default_scale(d) : scale;
  const std::vector<S8Want> ex = works ? s8_expectations(n_q, n_k, d, qp, q.ld.value, qsp, qn != 1,
                                                         kp, k.ld.value, ksp, kn != 1, applied)
                                       : std::vector<S8Want>();
  const bool may_flush = kAlwaysFlushes || g_fp_extra != 0;
  auto run = [&] {
    return api("attnscore_scores_s8", [&] {
      return attnscore_scores_s8(n_q, n_k, d, qp, q.ld.value, qsp, qn, kp, k.ld.value, ksp, kn, sp,
                                 s.ld.value, scale);
    });
  };
  mem.snapshot();
  mem.arm(mats, 5);
  const attnscore_status got = run();
  mem.disarm();
  if (got != want) fail("returned %d, expected %d", got, want);
  if (!works) {
    mem.expect_untouched(nullptr, "error or no-op");
    return 0;
  }
  mem.expect_untouched(&s, "success");
  check_s8_results(ex, n_q, n_k, sp, s.ld.value, may_flush, "first call");
  // Every level this CPU runs: the same bits (integer sums do not depend on the order).
  for (int level : kFamily) {
    if (!attnscore_level_supported(as_level(level))) continue;
    set_cap(level);
    mem.restore();
    mem.arm(mats, 5);
    const attnscore_status st = run();
    mem.disarm();
    char when[64];
    std::snprintf(when, sizeof when, "at level %d", level);
    if (st != ATTNSCORE_OK) fail("%s: returned %d", when, st);
    mem.expect_untouched(&s, when);
    check_s8_results(ex, n_q, n_k, sp, s.ld.value, may_flush, when);
  }
  return 0;
}

}  // namespace fuzz
