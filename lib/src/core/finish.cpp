// SPDX-License-Identifier: Apache-2.0
// How the attention step finishes its rows: the softcap, the masks (without a mask tensor) and
// the fused softmax, with its exponential.
#include "core/finish.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "dispatch/kernels.h"

namespace attnscore {
namespace {

// Cephes-style expf: x = n ln2 + r, |r| <= ln2 / 2 (ln2 split in two so n ln2_hi is exact),
// e^r by a degree-6 polynomial, 2^n put into the exponent bits. Below -87 (results under about
// 2^-125) it returns 0, which keeps n in the normal range; NaN gives NaN. The special cases are
// bit masks, not branches or float compares (which may raise "invalid" on NaN, so that under
// -ftrapping-math the compiler keeps them as branches): the loops that call it vectorize.
inline float exp_np(float x) noexcept {
  const float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  const float kRound = 12582912.0f;  // 1.5 * 2^23: v + kRound rounds v to an integer
  constexpr std::uint32_t kRoundBits = 0x4b400000u, k87 = 0x42ae0000u, kInfBits = 0x7f800000u;
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  const std::uint32_t a = u & 0x7fffffffu;
  const std::uint32_t in_range = -static_cast<std::uint32_t>(a <= k87);             // |x| <= 87
  const std::uint32_t keep = -static_cast<std::uint32_t>(a > kInfBits) | in_range;  // or NaN
  const std::uint32_t xcb = u & in_range;  // 0 out of range: no overflow below
  float xc;
  std::memcpy(&xc, &xcb, sizeof xc);
  const float t = xc * kLog2e + kRound;
  const float n = t - kRound;
  const float r = (xc - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = p * (r * r) + r + 1.0f;
  std::uint32_t tb;
  std::memcpy(&tb, &t, sizeof tb);
  const std::uint32_t e = (tb - kRoundBits + 127u) << 23;  // 2^n, n = tb - kRoundBits
  float two_n;
  std::memcpy(&two_n, &e, sizeof two_n);
  const float y = er * two_n;
  std::uint32_t yb;
  std::memcpy(&yb, &y, sizeof yb);
  yb = ((yb & in_range) | (u & ~in_range)) & keep;  // in range: y; NaN: x; else (-Inf too): +0
  float out;
  std::memcpy(&out, &yb, sizeof out);
  return out;
}

}  // namespace

float exp_nonpositive(float x) noexcept { return exp_np(x); }

namespace {

// Eight partial maxima, then eight partial sums: the loops vectorize; the summation error grows
// with n / 8.
float exp_sum_portable(float *row, std::size_t n, float *m_out) noexcept {
  const float inf = std::numeric_limits<float>::infinity();
  constexpr std::size_t L = 8;
  float mx[L], part[L] = {};
  for (std::size_t l = 0; l < L; ++l) mx[l] = -inf;
  std::size_t j = 0;
  for (; j + L <= n; j += L)
    for (std::size_t l = 0; l < L; ++l) mx[l] = row[j + l] > mx[l] ? row[j + l] : mx[l];
  for (std::size_t l = 0; j < n; ++j, ++l) mx[l] = row[j] > mx[l] ? row[j] : mx[l];
  float m = mx[0];
  for (std::size_t l = 1; l < L; ++l) m = mx[l] > m ? mx[l] : m;
  *m_out = m;
  for (j = 0; j < n; ++j) row[j] = exp_np(row[j] - m);
  for (j = 0; j + L <= n; j += L)
    for (std::size_t l = 0; l < L; ++l) part[l] += row[j + l];
  for (std::size_t l = 0; j < n; ++j, ++l) part[l] += row[j];
  return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

}  // namespace

void softmax_span_portable(float *row, std::size_t n) noexcept {
  float m;
  const float sum = exp_sum_portable(row, n, &m);
  if (!(sum >= 1.0f)) {
    // NaN: a NaN score, a +Inf max (Inf - Inf) or every score -Inf (-Inf + Inf). The max gives
    // e^0 = 1 otherwise. No weights, as the unfused steps would give: NaN over the visible keys.
    for (std::size_t j = 0; j < n; ++j) row[j] = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  const float inv = 1.0f / sum;
  for (std::size_t j = 0; j < n; ++j) row[j] *= inv;
}

namespace {

void pv_portable(std::size_t rows, std::size_t n, std::size_t dv, const float *const *w,
                 const float *v, std::size_t ldv, float *const *t) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t x = 0; x < dv; ++x) t[r][x] += w[r][j] * v[j * ldv + x];
}

void dequant_portable(std::size_t n, const std::int8_t *src, float scale, float *dst) noexcept {
  for (std::size_t x = 0; x < n; ++x) dst[x] = static_cast<float>(src[x]) * scale;
}

const SoftmaxF32 kPortableRow = {"softmax_f32__portable",
                                 ATTNSCORE_LEVEL_SCALAR,
                                 softmax_span_portable,
                                 exp_sum_portable,
                                 pv_portable,
                                 dequant_portable};

}  // namespace

const SoftmaxF32 &softmax_row_for(attnscore_level level) noexcept {
  static const SoftmaxF32 *const kRows[] = {
#if ATTNSCORE_HAVE_AVX512
    &softmax_f32__avx512_row,
#endif
#if ATTNSCORE_HAVE_AVX2
    &softmax_f32__avx2_row,
#endif
#if ATTNSCORE_HAVE_NEON && defined(__aarch64__)
    &softmax_f32__neon_row,
#endif
    nullptr
  };
  for (const SoftmaxF32 *row : kRows)
    if (row != nullptr && row->level == level) return *row;
  return kPortableRow;
}

SoftmaxSpanFn softmax_for(attnscore_level level) noexcept { return softmax_row_for(level).fn; }

void softcap_span(float *row, std::size_t n, float c) noexcept {
  // Where |s / c| < 2^-12, tanh(x) = x within 2^-25 relatively: s is the softcapped value, and
  // computing s / c there could lose its bits to the subnormal range (a tiny s, a huge c).
  const float small = c * 0x1p-12f;
  for (std::size_t j = 0; j < n; ++j)
    if (!(std::fabs(row[j]) < small)) row[j] = c * std::tanh(row[j] / c);
}

void finish_row(float *row, std::size_t n_k, Span sp, float softcap,
                SoftmaxSpanFn softmax) noexcept {
  const float inf = std::numeric_limits<float>::infinity();
  if (softcap != 0.0f) softcap_span(row + sp.lo, sp.hi - sp.lo, softcap);
  if (softmax == nullptr) {
    for (std::size_t j = 0; j < sp.lo; ++j) row[j] = -inf;
    for (std::size_t j = sp.hi; j < n_k; ++j) row[j] = -inf;
    return;
  }
  for (std::size_t j = 0; j < sp.lo; ++j) row[j] = 0.0f;
  for (std::size_t j = sp.hi; j < n_k; ++j) row[j] = 0.0f;
  if (sp.lo < sp.hi) softmax(row + sp.lo, sp.hi - sp.lo);  // else every key masked: all zeros
}

}  // namespace attnscore
