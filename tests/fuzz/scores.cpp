// SPDX-License-Identifier: Apache-2.0
// The f32, f16 and bf16 scores calls (attnscore_scores_f32, attnscore_scores_f16,
// attnscore_scores_bf16, and the C++ views), and the element models other sections share.
#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz/fuzz.hpp"

namespace fuzz {

// ---------------------------------------------------------------------------------------------
// The f32 element model: value generators, the per-element expectation and its check.

namespace {

const std::uint32_t kSpecials[] = {0x00000000u,
                                   0x80000000u,
                                   0x3f800000u,
                                   0xbf800000u,
                                   0x40000000u,
                                   0x3f000000u,
                                   0x40400000u,
                                   0xc0e00000u,
                                   0x7fc00000u,
                                   0xffc00000u,
                                   0x7f800001u,
                                   0x7fc12345u,
                                   0x7f800000u,
                                   0xff800000u,
                                   0x7f7fffffu,
                                   0xff7fffffu,
                                   0x00800000u,
                                   0x80800000u,
                                   0x00000001u,
                                   0x80000001u,
                                   0x007fffffu,
                                   0x000ae398u,
                                   0x1a000000u /* 2^-75: its square underflows */,
                                   0x5f800000u /* 2^64: its square overflows */,
                                   0x5fd02000u,
                                   0x3dcccccdu,
                                   0xbe99999au,
                                   0x477fe000u,
                                   0x4b800000u,
                                   0x4b7fffffu,
                                   0x3eaaaaabu,
                                   0x81c00000u};

}  // namespace

float F32::value(Input &in, unsigned mode, int exp) {
  switch (mode % 6) {
    case 0:  // small integers: exact sums in any order
      return static_cast<float>(static_cast<int>(in.v8() % 17) - 8);
    case 1:  // small integers scaled towards overflow or underflow: still exact, or not
      return std::ldexp(static_cast<float>(static_cast<int>(in.v8() % 17) - 8), exp);
    case 2:
      return from_bits(kSpecials[in.v8() % (sizeof kSpecials / sizeof kSpecials[0])]);
    case 3:  // any bit pattern
      return from_bits(in.v32());
    case 4: {  // full mantissas around 1: rounding in every addition
      const std::uint32_t v = in.v32();
      const float m = from_bits(0x3f800000u | (v & 0x7fffffu)) - 1.5f;
      return std::ldexp(m, static_cast<int>((v >> 24) % 9) - 4);
    }
    default:
      return value(in, in.v8() % 5, exp);
  }
}

attnscore_status F32::call_c(const Args &a) {
  return attnscore_scores_f32(a.n_q, a.n_k, a.d, static_cast<const float *>(a.q), a.ldq,
                              static_cast<const float *>(a.k), a.ldk, static_cast<float *>(a.s),
                              a.lds, a.scale);
}

attnscore_status F32::call_cpp(const attnscore::MatrixView<const float> &q,
                               const attnscore::MatrixView<const float> &k,
                               const attnscore::MatrixView<float> &s, float scale) {
  if (to_bits(scale) == 0) return attnscore::scores(q, k, s);  // the default argument
  return attnscore::scores(q, k, s, scale);
}

double F32::bound(std::size_t d, double gauge, float scale) {
  return testing::contract_bound(d, gauge, scale);
}

namespace {

const std::uint16_t kHalfSpecials[] = {0x0000, 0x8000, 0x3c00, 0xbc00, 0x7bff, 0xfbff,
                                       0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01, 0x0001,
                                       0x8001, 0x03ff, 0x0400, 0x3555, 0x5bff, 0x4000};

}  // namespace

F16::T F16::value(Input &in, unsigned mode, int exp) {
  switch (mode % 5) {
    case 0:  // small integers: exact sums in any order
      return {f16_nearest(static_cast<float>(static_cast<int>(in.v8() % 17) - 8))};
    case 1:  // small integers scaled from subnormal to near the largest binary16
      return {f16_nearest(std::ldexp(static_cast<float>(static_cast<int>(in.v8() % 17) - 8),
                                     ((exp % 37) + 37) % 37 - 24))};
    case 2:
      return {kHalfSpecials[in.v8() % (sizeof kHalfSpecials / sizeof kHalfSpecials[0])]};
    case 3:  // any bits
      return {static_cast<std::uint16_t>(in.v8() | in.v8() << 8)};
    default:
      return value(in, in.v8() % 4, exp);
  }
}

attnscore_status F16::call_c(const Args &a) {
  return attnscore_scores_f16(a.n_q, a.n_k, a.d, static_cast<const std::uint16_t *>(a.q), a.ldq,
                              static_cast<const std::uint16_t *>(a.k), a.ldk,
                              static_cast<float *>(a.s), a.lds, a.scale);
}

attnscore_status F16::call_cpp(const attnscore::MatrixView<const T> &q,
                               const attnscore::MatrixView<const T> &k,
                               const attnscore::MatrixView<float> &s, float scale) {
  if (to_bits(scale) == 0) return attnscore::scores(q, k, s);
  return attnscore::scores(q, k, s, scale);
}

double F16::bound(std::size_t d, double gauge, float scale) {
  return testing::contract_bound(d, gauge, scale);
}

namespace {

// Bit patterns: signed zeros, 1, the largest finite, infinities, quiet and signalling NaNs,
// subnormals, the smallest normal, 1/3, and 2^-75 and 2^64 (their squares under- and overflow).
const std::uint16_t kBf16Specials[] = {0x0000, 0x8000, 0x3f80, 0xbf80, 0x7f7f, 0xff7f, 0x7f80,
                                       0xff80, 0x7fc0, 0xffc0, 0x7f81, 0x0001, 0x8001, 0x007f,
                                       0x0080, 0x3eab, 0x4000, 0x1a00, 0x5f80};

}  // namespace

BF16::T BF16::value(Input &in, unsigned mode, int exp) {
  switch (mode % 5) {
    case 0:  // small integers: exact sums in any order
      return {bf16_nearest(static_cast<int>(in.v8() % 17) - 8)};
    case 1:  // small integers scaled towards overflow or underflow (f32's exponent range)
      return {
          bf16_nearest(std::ldexp(static_cast<double>(static_cast<int>(in.v8() % 17) - 8), exp))};
    case 2:
      return {kBf16Specials[in.v8() % (sizeof kBf16Specials / sizeof kBf16Specials[0])]};
    case 3:  // any bits
      return {static_cast<std::uint16_t>(in.v8() | in.v8() << 8)};
    default:
      return value(in, in.v8() % 4, exp);
  }
}

attnscore_status BF16::call_c(const Args &a) {
  return attnscore_scores_bf16(a.n_q, a.n_k, a.d, static_cast<const std::uint16_t *>(a.q), a.ldq,
                               static_cast<const std::uint16_t *>(a.k), a.ldk,
                               static_cast<float *>(a.s), a.lds, a.scale);
}

double BF16::bound(std::size_t d, double gauge, float scale) {
  return testing::contract_bound(d, gauge, scale);
}

// Whether this build has the f16 path (a build without it answers ATTNSCORE_ERR_UNKNOWN_DTYPE).
bool f16_built() {
  std::uint16_t h = 0x3c00;
  float f;
  return attnscore_convert(1, ATTNSCORE_DTYPE_F16, &h, ATTNSCORE_DTYPE_F32, &f) !=
         ATTNSCORE_ERR_UNKNOWN_DTYPE;
}

double gamma_n(std::size_t n) {
  const double nu = static_cast<double>(n) * std::ldexp(1.0, -24);
  return nu / (1.0 - nu);
}

namespace {

// Exponent of the lowest set bit of a finite non-zero float.
FUZZ_UNGUIDED int low_exp(float x) {
  const std::uint32_t b = to_bits(x);
  const std::uint32_t e = (b >> 23) & 0xffu;
  const std::uint32_t m = (b & 0x7fffffu) | (e != 0 ? 0x800000u : 0u);
  return (e == 0 ? -149 : static_cast<int>(e) - 150) + __builtin_ctz(m);
}

// What one element of S must be. Sound rules only (any summation order, FMA or not):
// - kNaN: a NaN in the row or column, Inf * 0, or infinite products of both signs;
// - kInf: infinite products of one sign and finite products whose sum cannot overflow: that
//   infinity (times the scale's sign); kInfOrNaN: the same but the finite part may overflow to
//   the other infinity, or a flushed subnormal makes Inf * 0, so NaN is allowed too (never the
//   other infinity or a finite value);
// - kFinite: within the contract's bound of the double reference (plus the reference's own
//   rounding; its third term only where subnormals may be read as 0); exact when every partial sum
//   is a normal float or 0 (all products multiples of 2^g, g >= -126, sum |p| <= min(2^(g+24),
//   FLT_MAX), no subnormal input or scale, a normal or zero result: so flushing subnormals changes
//   nothing): then fl(sum * scale) bit for bit, zeros of either sign alike. If the sum could
//   overflow (gauge near FLT_MAX), a non-finite result is allowed too.
struct Expect {
  enum Kind { kFinite, kNaN, kInf, kInfOrNaN } kind;
  bool exact, may_overflow;
  float want;     // exact result, or the infinity
  double r, tol;  // reference and tolerance
};

template <class D>
FUZZ_UNGUIDED std::vector<Expect> expectations(const Args &a, bool flushing) {
  using T = typename D::T;
  const T *q = static_cast<const T *>(a.q);
  const T *k = static_cast<const T *>(a.k);
  const double sc = a.scale;
  const double g1 = gamma_n(a.d + 1);
  const double slack = static_cast<double>(a.d + 2) * std::ldexp(1.0, -52);
  std::vector<Expect> out(a.n_q * a.n_k);
  std::vector<int> qe(a.n_q * a.d), ke(a.n_k * a.d);
  for (std::size_t i = 0; i < a.n_q; ++i)
    for (std::size_t t = 0; t < a.d; ++t) {
      const float v = D::f(q[i * a.ldq + t]);
      qe[i * a.d + t] = v != 0 && std::isfinite(v) ? low_exp(v) : 0;
    }
  for (std::size_t j = 0; j < a.n_k; ++j)
    for (std::size_t t = 0; t < a.d; ++t) {
      const float v = D::f(k[j * a.ldk + t]);
      ke[j * a.d + t] = v != 0 && std::isfinite(v) ? low_exp(v) : 0;
    }
  for (std::size_t i = 0; i < a.n_q; ++i) {
    const T *qi = q + i * a.ldq;
    for (std::size_t j = 0; j < a.n_k; ++j) {
      const T *kj = k + j * a.ldk;
      bool nan = false, pos_inf = false, neg_inf = false, tiny = false, inf_tiny = false;
      double sum = 0, gauge = 0, flushed = 0;  // flushed: sum |p| over subnormal inputs
      int g = INT_MAX;
      for (std::size_t t = 0; t < a.d && !nan; ++t) {
        const float x = D::f(qi[t]), y = D::f(kj[t]);
        if (std::isnan(x) || std::isnan(y)) {
          nan = true;
        } else if (std::isinf(x) || std::isinf(y)) {
          if (x == 0 || y == 0) nan = true;
          (std::signbit(x) != std::signbit(y) ? neg_inf : pos_inf) = true;
          inf_tiny |= std::fabs(x) < FLT_MIN || std::fabs(y) < FLT_MIN;  // Inf * subnormal
        } else {
          const double p = static_cast<double>(x) * static_cast<double>(y);  // exact
          const bool sub = (x != 0 && std::fabs(x) < FLT_MIN) || (y != 0 && std::fabs(y) < FLT_MIN);
          tiny |= sub;
          if (sub) flushed += std::fabs(p);
          sum += p;
          gauge += std::fabs(p);
          if (p != 0) g = std::min(g, qe[i * a.d + t] + ke[j * a.d + t]);
        }
      }
      Expect &e = out[i * a.n_k + j];
      e = {Expect::kFinite, false, false, 0.0f, 0.0, 0.0};
      const bool finite_part_safe = gauge * (1 + 2 * g1) < FLT_MAX;
      if (nan || (pos_inf && neg_inf)) {
        e.kind = Expect::kNaN;
      } else if (pos_inf || neg_inf) {
        // Read as 0 by a flushing mode, a subnormal times Inf gives NaN.
        e.kind = finite_part_safe && !(flushing && inf_tiny) ? Expect::kInf : Expect::kInfOrNaN;
        e.want = (pos_inf != std::signbit(a.scale)) ? INFINITY : -INFINITY;
      } else {
        const double p = gauge * std::fabs(sc);
        e.r = sum * sc;
        // The contract's third term: a subnormal input may be read as 0 (the caller's DAZ or
        // FZ, armv7 NEON); without a flushing mode the bound is the first two terms.
        e.tol = D::bound(a.d, p, a.scale) + (flushing ? flushed * std::fabs(sc) : 0.0) + slack * p;
        e.may_overflow = !finite_part_safe || p * (1 + 2 * g1) >= FLT_MAX;
        e.exact =
            !tiny && std::fabs(a.scale) >= FLT_MIN &&
            (g == INT_MAX || (g >= -126 && gauge <= std::ldexp(1.0, g + 24) && gauge <= FLT_MAX));
        if (e.exact) e.want = static_cast<float>(sum * sc);  // sum and sum * sc exact in double
        // A subnormal result is not exact: flushing modes may give 0. Judged on the exact value,
        // not on the rounded one (which may round up to FLT_MIN).
        if (e.r != 0 && std::fabs(e.r) < FLT_MIN) e.exact = false;
      }
    }
  }
  return out;
}

// Checks S (n_q x n_k at stride lds) against the expectations; `same` (if given) holds results
// that must be identical (the same kernel): bit for bit, except that a NaN need only be a NaN.
FUZZ_UNGUIDED void check_results(const Args &a, const std::vector<Expect> &ex, const float *s,
                                 const std::vector<float> *same, const char *when) {
  for (std::size_t i = 0; i < a.n_q; ++i) {
    for (std::size_t j = 0; j < a.n_k; ++j) {
      const float got = s[i * a.lds + j];
      const Expect &e = ex[i * a.n_k + j];
      bool ok;
      switch (e.kind) {
        case Expect::kNaN:
          ok = std::isnan(got);
          break;
        case Expect::kInf:
          ok = got == e.want;
          break;
        case Expect::kInfOrNaN:
          ok = std::isnan(got) || got == e.want;
          break;
        default:
          if (e.exact)
            ok = got == e.want;  // +0 == -0
          else if (std::isfinite(got))
            ok = std::fabs(static_cast<double>(got) - e.r) <= e.tol;
          else
            ok = e.may_overflow;
      }
      if (to_bits(got) == kGuardBits) fail("%s: S[%zu][%zu] not written", when, i, j);
      if (!ok)
        fail(
            "%s: S[%zu][%zu] = %.9g (bits %#x); expected kind %d exact %d want %.9g, reference "
            "%.17g, tolerance %.3g",
            when, i, j, static_cast<double>(got), to_bits(got), static_cast<int>(e.kind), e.exact,
            static_cast<double>(e.want), e.r, e.tol);
      if (same != nullptr) {
        const float first = (*same)[i * a.n_k + j];
        if (to_bits(first) != to_bits(got) && !(std::isnan(first) && std::isnan(got)))
          fail("%s: S[%zu][%zu] = %#x, but %#x from the same kernel before", when, i, j,
               to_bits(got), to_bits(first));
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The scores calls.

enum class Entry { kC, kCpp };

std::string describe(const char *dtype, Entry entry, const Mat &q, const Mat &k, const Mat &s,
                     std::uint32_t scale_bits, int cap) {
  char buf[1024];
  auto where = [](const Mat &m) {
    char w[96];
    std::snprintf(w, sizeof w, "%sarena %d + %lld bytes%s%s", m.null ? "NULL, " : "", m.arena,
                  m.pos, m.fits ? "" : ", placeholder", m.ld.wrap ? ", wrap ld" : "");
    return std::string(w);
  };
  std::snprintf(buf, sizeof buf,
                "scores_%s via %s, cap %d, scale bits %#x\n  Q %zu x %zu ld %zu (%s)\n  K %zu x "
                "%zu ld %zu (%s)\n  S %zu x %zu ld %zu (%s)",
                dtype, entry == Entry::kC ? "C" : "C++ views", cap, scale_bits, q.rows, q.cols,
                q.ld.value, where(q).c_str(), k.rows, k.cols, k.ld.value, where(k).c_str(), s.rows,
                s.cols, s.ld.value, where(s).c_str());
  return buf;
}

template <class D>
FUZZ_UNGUIDED void fill_values(Input &in, const Mat &m, unsigned mode, int exp) {
  if (!m.fits || m.span == 0) return;  // (rows may be huge when cols is 0)
  typename D::T *base = reinterpret_cast<typename D::T *>(m.place);
  for (std::size_t i = 0; i < m.rows; ++i)
    for (std::size_t t = 0; t < m.cols; ++t) base[i * m.ld.value + t] = D::value(in, mode, exp);
}

template <class D>
attnscore_status call(Entry entry, const Args &a, const Mat &q, const Mat &k, const Mat &s) {
  if constexpr (D::kViews) {
    if (entry == Entry::kCpp) {
      using CT = const typename D::T;
      const attnscore::MatrixView<CT> qv(static_cast<CT *>(a.q), q.rows, q.cols, q.ld.value);
      const attnscore::MatrixView<CT> kv(static_cast<CT *>(a.k), k.rows, k.cols, k.ld.value);
      const attnscore::MatrixView<float> sv(static_cast<float *>(a.s), s.rows, s.cols, s.ld.value);
      return api("attnscore::scores", [&] { return D::call_cpp(qv, kv, sv, a.scale); });
    }
  }
  return api(D::kCName, [&] { return D::call_c(a); });
}

// S (at stride a.lds) against attnscore_scores_f32 on the converted Q and K under the cap in
// force: bit for bit, except that a NaN need only be a NaN (the oracle drops NaN payloads).
template <class D>
FUZZ_UNGUIDED void expect_f32_bits(const Args &a, const float *s, const char *when) {
  using T = typename D::T;
  std::vector<float> q(a.n_q * a.d), k(a.n_k * a.d), f(a.n_q * a.n_k);
  for (std::size_t i = 0; i < a.n_q; ++i)
    for (std::size_t t = 0; t < a.d; ++t)
      q[i * a.d + t] = D::f(static_cast<const T *>(a.q)[i * a.ldq + t]);
  for (std::size_t j = 0; j < a.n_k; ++j)
    for (std::size_t t = 0; t < a.d; ++t)
      k[j * a.d + t] = D::f(static_cast<const T *>(a.k)[j * a.ldk + t]);
  const attnscore_status st = api("attnscore_scores_f32", [&] {
    return attnscore_scores_f32(a.n_q, a.n_k, a.d, q.data(), a.d, k.data(), a.d, f.data(), a.n_k,
                                a.scale);
  });
  if (st != ATTNSCORE_OK) fail("%s: the f32 call returned %d", when, st);
  for (std::size_t i = 0; i < a.n_q; ++i)
    for (std::size_t j = 0; j < a.n_k; ++j) {
      const float got = s[i * a.lds + j], want = f[i * a.n_k + j];
      if (to_bits(got) != to_bits(want) && !(std::isnan(got) && std::isnan(want)))
        fail("%s: S[%zu][%zu] = %#x, the f32 call on the converted inputs %#x", when, i, j,
             to_bits(got), to_bits(want));
    }
}

template <class D>
int fuzz_scores(Input &in, Entry entry, int cap) {
  using T = typename D::T;
  // Shape, then (C++ only) a view whose shape disagrees.
  std::size_t n_q = decode_rows(in, 19), n_k = decode_rows(in, 69);
  const std::size_t d = decode_d(in);
  // Keep each execution short: at most kWork multiply-adds per level (small sizes only), more
  // when d spans several chunks of the kernels (full tiles then still fit).
  const std::size_t work = d > 256 ? std::size_t{1} << 16 : std::size_t{1} << 14;
  if (n_q < 20 && n_k < 70 && d <= kMaxElems)
    while (n_q * n_k * d > work) (n_k > n_q ? n_k : n_q) /= 2;
  std::size_t qr = n_q, qc = d, kr = n_k, kc = d, sr = n_q, sc = n_k;
  const std::uint8_t mis = in.u8();
  if (entry == Entry::kCpp && mis >= 0xc0) {
    std::size_t *field[] = {&qc, &kc, &sr, &sc};
    std::size_t &f = *field[mis % 4];
    const unsigned how = (mis >> 2) % 3;
    f = how == 0 ? f + 1 : how == 1 ? f - 1 : huge(in, in.u8());
  }
  Mat q{"Q", sizeof(T), qr, qc, decode_stride(in, qc), false, false, 0, 0, 0, nullptr, nullptr};
  Mat k{"K", sizeof(T), kr, kc, decode_stride(in, kc), false, false, 0, 1, 0, nullptr, nullptr};
  Mat s{"S", sizeof(float), sr, sc, decode_stride(in, sc), false, false, 0, 2, 0, nullptr, nullptr};
  // Layout: S alone or in Q's or K's arena, K alone or in Q's, placed against its partner.
  const std::uint8_t lay = in.u8(), nulls = in.u8();
  const std::uint16_t r_s = in.u16(), r_k = in.u16(), leads = in.u16();
  const std::uint32_t scale_bits = decode_scale(in);
  const std::uint8_t blk[4] = {in.u8(), in.u8(), in.u8(), in.u8()};
  const std::uint8_t q_mode = in.u8(), k_mode = in.u8();
  // Exponents for scaled integers: -160 ... 158 reaches subnormals and overflow alike.
  const int q_exp = static_cast<std::int8_t>(in.u8()) * 5 / 4;
  const int k_exp = static_cast<std::int8_t>(in.u8()) * 5 / 4;
  // One case in four runs with subnormals flushed, as a caller's FTZ/DAZ (or FZ) would have it.
  const FpMode fp_mode((in.u8() & 3) == 3 ? testing::flush_bits() : 0);
  if (nulls >= 0xf8) q.null = nulls & 1, k.null = nulls & 2, s.null = nulls & 4;

  Mat *mats[] = {&q, &k, &s};
  for (Mat *m : mats) {
    std::size_t n = 0;
    std::size_t elems = 0;  // bounds the loops over rows too (a stride below the row is short)
    m->fits = !m->ld.wrap && span_elems(m->rows, m->cols, m->ld.value, &n) && n <= kMaxElems &&
              checked_mul(m->rows, m->cols, &elems) && elems <= kMaxElems;
    m->span = m->fits ? n : 0;
  }
  if ((lay >> 2) & 1) {
    k.arena = 0;
    const unsigned kmode[] = {4, 0, 6, 2};
    k.pos = snap(kmode[(lay >> 6) & 3], q.pos, length(q), length(k), k.elem, r_k);
  }
  if ((lay & 3) >= 2) {
    const Mat &partner = (lay & 3) == 2 ? q : k;
    s.arena = partner.arena;
    s.pos = snap((lay >> 3) & 7, partner.pos, length(partner), length(s), s.elem, r_s);
  }
  for (int a = 0; a < 3; ++a) {  // shift each arena to start at 0, plus a leading pad
    long long lo = LLONG_MAX;
    for (Mat *m : mats)
      if (m->arena == a) lo = std::min(lo, m->pos);
    const unsigned code = (leads >> (4 * a)) & 15u;
    const long long lead = code < 8 ? 0 : (code - 7) * static_cast<long long>(mats[a]->elem);
    for (Mat *m : mats)
      if (m->arena == a) m->pos += lead - lo;
  }
  // Every matrix aligned to its own element (a float S beside binary16 Q and K too): a C caller
  // cannot pass a misaligned float pointer.
  for (Mat *m : mats) m->pos += (static_cast<long long>(m->elem) - m->pos % m->elem) % m->elem;
  Memory mem;
  mem.allocate(mats, 3);
  set_wrap_strides(mats, 3);

  // Values: Q, then K (the later wins where they share memory); S keeps the guard bits.
  fill_values<D>(in, q, q_mode, q_exp);
  fill_values<D>(in, k, k_mode, k_exp);

  const Args args{q.rows,     k.rows, q.cols, q.ld.value, k.ld.value,
                  s.ld.value, q.ptr,  k.ptr,  s.ptr,      from_bits(scale_bits),
                  sizeof(T)};
  const bool shapes_agree = q.cols == k.cols && s.rows == q.rows && s.cols == k.rows;
  const attnscore_status want =
      entry == Entry::kCpp && !shapes_agree ? ATTNSCORE_ERR_SHAPE_MISMATCH : predict_scores(args);
  const bool works = want == ATTNSCORE_OK && args.n_q != 0 && args.n_k != 0;
  if (works && (!q.fits || !k.fits || !s.fits)) return -1;  // valid, but too large to allocate
  g_call = describe(D::kName, entry, q, k, s, scale_bits, cap);

  // The scale applied: 0 (either sign) selects the float nearest to 1/sqrt(d).
  Args applied = args;
  if (works && applied.scale == 0.0f) {
    applied.scale = api("attnscore_default_scale", [&] { return attnscore_default_scale(d); });
    const long double exact = 1.0L / std::sqrt(static_cast<long double>(d));
    const long double err = std::fabs(static_cast<long double>(applied.scale) - exact);
    for (float nb : {std::nextafter(applied.scale, 0.0f), std::nextafter(applied.scale, 2.0f)})
      if (std::fabs(static_cast<long double>(nb) - exact) < err)
        fail("default scale %a is not the float nearest to 1/sqrt(%zu)",
             static_cast<double>(applied.scale), d);
  }
  const std::vector<Expect> ex =
      works ? expectations<D>(applied, kAlwaysFlushes || g_fp_extra != 0) : std::vector<Expect>();

  mem.snapshot();
  mem.arm(mats, 3);
  const attnscore_status got = call<D>(entry, args, q, k, s);
  mem.disarm();
  const char *msg = api("attnscore_status_string", [&] { return attnscore_status_string(got); });
  if (msg == nullptr || *msg == '\0') fail("no message for status %d", got);
  if (got != want) fail("returned status %d (%s), expected %d", got, msg, want);
  if (!works) {
    mem.expect_untouched(nullptr, "error or no-op");
    return 0;
  }
  mem.expect_untouched(&s, "success");
  const float *sp = reinterpret_cast<const float *>(s.place);
  check_results(applied, ex, sp, nullptr, "first call");
  if constexpr (D::kF32Bits) expect_f32_bits<D>(args, sp, "first call");
  std::vector<float> first(args.n_q * args.n_k);
  for (std::size_t i = 0; i < args.n_q; ++i)
    std::memcpy(&first[i * args.n_k], sp + i * args.lds, args.n_k * sizeof(float));
  const attnscore_level first_level =
      api("attnscore_kernel_level", [] { return attnscore_kernel_level(D::kDtype); });

  // A block of S computed alone: the same bits as in the whole call, or where the block and the
  // whole call take different paths (kDecodeRows), as the block's rows over every key.
  {
    const std::size_t i0 = blk[0] % args.n_q, j0 = blk[1] % args.n_k;
    const std::size_t bq = 1 + blk[2] % (args.n_q - i0), bk = 1 + blk[3] % (args.n_k - j0);
    float *part = static_cast<float *>(std::malloc(bq * bk * sizeof(float)));
    Args b = args;
    b.n_q = bq, b.n_k = bk, b.lds = bk, b.s = part;
    b.q = static_cast<const T *>(args.q) + i0 * args.ldq;
    b.k = static_cast<const T *>(args.k) + j0 * args.ldk;
    mem.arm(mats, 3);
    const attnscore_status st = api("block call", [&] { return D::call_c(b); });
    mem.disarm();
    if (st != ATTNSCORE_OK) fail("block (%zu, %zu) %zu x %zu returned %d", i0, j0, bq, bk, st);
    std::vector<float> ref = first;
    if ((bq <= kDecodeRows) != (args.n_q <= kDecodeRows)) {
      ref.assign(bq * args.n_k, 0.0f);
      Args r = b;
      r.n_k = args.n_k, r.lds = args.n_k, r.s = ref.data(), r.k = args.k;
      mem.arm(mats, 3);
      const attnscore_status rs = api("rows call", [&] { return D::call_c(r); });
      mem.disarm();
      if (rs != ATTNSCORE_OK) fail("rows %zu x %zu returned %d", i0, bq, rs);
      ref.insert(ref.begin(), i0 * args.n_k, 0.0f);  // at the whole call's row index
    }
    for (std::size_t i = 0; i < bq; ++i)
      for (std::size_t j = 0; j < bk; ++j) {
        const float x = part[i * bk + j], y = ref[(i0 + i) * args.n_k + j0 + j];
        if (to_bits(x) != to_bits(y) && !(std::isnan(x) && std::isnan(y)))
          fail("block (%zu, %zu) %zu x %zu: element (%zu, %zu) = %#x, whole call %#x", i0, j0, bq,
               bk, i, j, to_bits(x), to_bits(y));
      }
    std::free(part);
  }

  // Every level this CPU runs: within the contract, and the first call's kernel bit for bit.
  for (int level : kFamily) {
    if (!api("attnscore_level_supported",
             [&] { return attnscore_level_supported(as_level(level)); }))
      continue;
    set_cap(level);
    mem.restore();
    mem.arm(mats, 3);
    const attnscore_status st = call<D>(entry, args, q, k, s);
    mem.disarm();
    char when[64];
    std::snprintf(when, sizeof when, "at level %d", level);
    if (st != ATTNSCORE_OK) fail("%s: returned %d", when, st);
    mem.expect_untouched(&s, when);
    const bool same_kernel = api("attnscore_kernel_level",
                                 [] { return attnscore_kernel_level(D::kDtype); }) == first_level;
    check_results(applied, ex, sp, same_kernel ? &first : nullptr, when);
    if constexpr (D::kF32Bits) expect_f32_bits<D>(args, sp, when);
  }
  return 0;
}

}  // namespace

int fuzz_scores_f32_c(Input &in, int cap) { return fuzz_scores<F32>(in, Entry::kC, cap); }
int fuzz_scores_f32_cpp(Input &in, int cap) { return fuzz_scores<F32>(in, Entry::kCpp, cap); }
int fuzz_scores_f16_c(Input &in, int cap) {
  return f16_built() ? fuzz_scores<F16>(in, Entry::kC, cap) : -1;
}
int fuzz_scores_f16_cpp(Input &in, int cap) {
  return f16_built() ? fuzz_scores<F16>(in, Entry::kCpp, cap) : -1;
}
int fuzz_scores_bf16_c(Input &in, int cap) {
  return f16_built() ? fuzz_scores<BF16>(in, Entry::kC, cap) : -1;
}

}  // namespace fuzz
