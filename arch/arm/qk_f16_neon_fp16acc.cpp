// SPDX-License-Identifier: Apache-2.0
// The opt-in f16 accumulation (ATTNSCORE_F16_ACCUMULATE_F16) on AArch64 cores with FP16
// arithmetic (FPHP + ASIMDHP): a row of the neon level that also needs those features. Built with
// -march=armv8.2-a+fp16 in its own object, the only code that may use FP16 arithmetic; everything
// here is in an anonymous namespace or a kernel entry, so no copy is shared with other objects.
#include <arm_neon.h>

#include "dispatch/kernels.h"

namespace attnscore {
namespace {

constexpr std::size_t kMR = 4, kNR = 4, kLanes = 8;

inline float16x8_t load8(const std::uint16_t *p) noexcept {
  return vreinterpretq_f16_u16(vld1q_u16(p));
}

// The last n < 8 halves of a row, zero-padded: the padding lanes add fma(0, 0, acc) = acc exactly.
inline float16x8_t load_tail(const std::uint16_t *p, std::size_t n) noexcept {
  std::uint16_t buf[kLanes] = {};
  for (std::size_t i = 0; i < n; ++i) buf[i] = p[i];
  return load8(buf);
}

// R query rows x keys in groups of kNR, each score a dot product along d.
//
// Register map:
//   acc[r][c]  R*kNR vectors of 8 binary16 lanes: lane l sums q[r][t]*k[c][t] for t = l mod 8,
//              t in order, one vfmaq_f16 (one rounding to binary16) per term
//   qv[r]      R vectors: q[r][t .. t+7];  kv: k[c][t .. t+7]
// Then each score's 8 lanes are reduced by a fixed tree, ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)),
// rounded to binary16 at each step, converted to f32 (exactly) and scaled in f32. The order of
// every score depends on d only, never on its place in S: any block gives the same bits.
template <std::size_t R>
void tile(std::size_t rows, std::size_t cols, std::size_t d, const std::uint16_t *q,
          std::size_t ldq, const std::uint16_t *k, std::size_t ldk, float *s, std::size_t lds,
          float scale) noexcept {
  const std::uint16_t *qr[R];
  for (std::size_t r = 0; r < R; ++r) qr[r] = q + (r < rows ? r : rows - 1) * ldq;
  const float32x4_t sc = vdupq_n_f32(scale);
  for (std::size_t j0 = 0; j0 < cols; j0 += kNR) {
    const std::size_t nc = cols - j0 < kNR ? cols - j0 : kNR;
    // Absent keys repeat the last present one (computed, never stored).
    const std::uint16_t *kr[kNR];
    for (std::size_t c = 0; c < kNR; ++c) kr[c] = k + (j0 + (c < nc ? c : nc - 1)) * ldk;
    float16x8_t acc[R][kNR];
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t c = 0; c < kNR; ++c) acc[r][c] = vdupq_n_f16(0);
    std::size_t t = 0;
    for (; t + kLanes <= d; t += kLanes) {
      float16x8_t qv[R];
      for (std::size_t r = 0; r < R; ++r) qv[r] = load8(qr[r] + t);
      for (std::size_t c = 0; c < kNR; ++c) {
        const float16x8_t kv = load8(kr[c] + t);
        for (std::size_t r = 0; r < R; ++r) acc[r][c] = vfmaq_f16(acc[r][c], qv[r], kv);
      }
    }
    if (t < d) {
      float16x8_t qv[R];
      for (std::size_t r = 0; r < R; ++r) qv[r] = load_tail(qr[r] + t, d - t);
      for (std::size_t c = 0; c < kNR; ++c) {
        const float16x8_t kv = load_tail(kr[c] + t, d - t);
        for (std::size_t r = 0; r < R; ++r) acc[r][c] = vfmaq_f16(acc[r][c], qv[r], kv);
      }
    }
    for (std::size_t r = 0; r < rows; ++r) {
      // FADDP pairs neighbours: [a01 a23 a45 a67 b01 ...], then [a0123 a4567 b0123 ... d4567],
      // then the four sums in lanes 0-3.
      const float16x8_t p01 = vpaddq_f16(acc[r][0], acc[r][1]);
      const float16x8_t p23 = vpaddq_f16(acc[r][2], acc[r][3]);
      const float16x8_t quad = vpaddq_f16(p01, p23);
      const float16x8_t sum = vpaddq_f16(quad, quad);
      const float32x4_t out = vmulq_f32(vcvt_f32_f16(vget_low_f16(sum)), sc);
      float *dst = s + r * lds + j0;
      if (nc == kNR) {
        vst1q_f32(dst, out);
      } else {
        float part[kNR];
        vst1q_f32(part, out);
        for (std::size_t c = 0; c < nc; ++c) dst[c] = part[c];
      }
    }
  }
}

}  // namespace

ATTNSCORE_KERNEL_ENTRY void qk_f16_4x4__neon_fp16acc(std::size_t rows, std::size_t cols,
                                                     std::size_t d, const std::uint16_t *q,
                                                     std::size_t ldq, const std::uint16_t *k,
                                                     std::size_t ldk, float *s, std::size_t lds,
                                                     float scale) noexcept {
  if (rows == 1)
    tile<1>(rows, cols, d, q, ldq, k, ldk, s, lds, scale);
  else if (rows == 2)
    tile<2>(rows, cols, d, q, ldq, k, ldk, s, lds, scale);
  else if (rows == 3)
    tile<3>(rows, cols, d, q, ldq, k, ldk, s, lds, scale);
  else
    tile<kMR>(rows, cols, d, q, ldq, k, ldk, s, lds, scale);
}

extern const KernelF16 qk_f16_4x4__neon_fp16acc_kernel = {
    "qk_f16_4x4__neon_fp16acc",
    ATTNSCORE_LEVEL_NEON,
    nullptr,
    nullptr,
    kNR,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    ATTNSCORE_CPU_FPHP | ATTNSCORE_CPU_ASIMDHP,
    qk_f16_4x4__neon_fp16acc,
    kMR,
    kNR,
    0,  // no decode tile: rows go through acc
    nullptr,
    0,
    0,
    kTuneGeneric,
    nullptr};

}  // namespace attnscore
