// SPDX-License-Identifier: Apache-2.0
// How the attention step finishes its rows (softcap, masks, softmax), for the driver and the tests.
#ifndef ATTNSCORE_FINISH_H
#define ATTNSCORE_FINISH_H

#include <cstddef>
#include <cstdint>

#include "attnscore/attnscore.h"
#include "dispatch/kernels.h"

namespace attnscore {

// The keys [lo, hi) that query row i sees under the descriptor's mask (lo == hi: none).
struct Span {
  std::size_t lo, hi;
};

// e^x for x <= 0 in f32 (0 below -87, NaN not handled): the softmax's exponential.
float exp_nonpositive(float x) noexcept;

// A level's softmax of one row's visible scores, row[0 .. n), n >= 1, in place (arch/
// softmax_f32_<level>.cpp, from softmax_f32.hpp); levels without one use the portable loop.
// The attention output's steps of the same level: exp_sum finds the row's maximum *m (-Inf for
// none), makes row[j] = e^(row[j] - *m) and returns their sum; pv adds sum_j w[r][j] * v[j * ldv +
// x] to t[r][x] (r < rows, x < dv, j < n) in j order, each row's bits the same whichever rows share
// the call.
using SoftmaxSpanFn = void (*)(float *row, std::size_t n) noexcept;
using ExpSumFn = float (*)(float *row, std::size_t n, float *m) noexcept;
using PvF32Fn = void (*)(std::size_t rows, std::size_t n, std::size_t dv, const float *const *w,
                         const float *v, std::size_t ldv, float *const *t) noexcept;
// dequant: dst[x] = (float)src[x] * scale, x < n (int8 V rows).
using DequantS8Fn = void (*)(std::size_t n, const std::int8_t *src, float scale,
                             float *dst) noexcept;
struct SoftmaxF32 {
  const char *name;
  attnscore_level level;
  SoftmaxSpanFn fn;
  ExpSumFn exp_sum;
  PvF32Fn pv;
  DequantS8Fn dequant;
};
#if ATTNSCORE_HAVE_AVX2
extern const SoftmaxF32 softmax_f32__avx2_row;
#endif
#if ATTNSCORE_HAVE_AVX512
extern const SoftmaxF32 softmax_f32__avx512_row;
#endif
#if ATTNSCORE_HAVE_NEON && defined(__aarch64__)
extern const SoftmaxF32 softmax_f32__neon_row;
#endif

// The portable softmax of row[0 .. n) (every level without its own; the compiler vectorizes it
// for the baseline ISA).
void softmax_span_portable(float *row, std::size_t n) noexcept;

// The softmax for a kernel's level.
SoftmaxSpanFn softmax_for(attnscore_level level) noexcept;

// The softmax row of a kernel's level (the portable one where the level has none).
const SoftmaxF32 &softmax_row_for(attnscore_level level) noexcept;

// The softcap c * tanh(s / c) on row[0 .. n) in place (c > 0).
void softcap_span(float *row, std::size_t n, float c) noexcept;

// One row of raw scores made final: the softcap on the keys [lo, hi), then -Inf outside them,
// or the softmax (by `softmax`, or none when null) over them and 0 outside (all zeros for an
// empty span).
void finish_row(float *row, std::size_t n_k, Span sp, float softcap,
                SoftmaxSpanFn softmax) noexcept;

}  // namespace attnscore

#endif  // ATTNSCORE_FINISH_H
