// SPDX-License-Identifier: Apache-2.0
// The attention driver's pieces, shared by the public call and the tests.
#ifndef ATTNSCORE_ATTENTION_H
#define ATTNSCORE_ATTENTION_H

#include <cstddef>

#include "attnscore/attnscore.h"
#include "kernels.h"

namespace attnscore {

// The keys [lo, hi) that query row i sees under the descriptor's mask (lo == hi: none).
struct Span {
  std::size_t lo, hi;
};
Span visible_keys(const attnscore_attention_desc &a, std::size_t i) noexcept;

// Every argument check of the attention calls, in the order the statuses are documented; the
// dtype-independent part (the extents assume 4-byte elements).
attnscore_status check_attention(const attnscore_attention_desc &a, const void *q, const void *k,
                                 const void *s) noexcept;

// e^x for x <= 0 in f32 (0 below -87, NaN not handled): the softmax's exponential.
float exp_nonpositive(float x) noexcept;

// One row of raw scores made final: the softcap on the keys [lo, hi), then -Inf outside them,
// or the softmax over them and 0 outside (all zeros for an empty span).
void finish_row(float *row, std::size_t n_k, Span sp, float softcap, bool softmax) noexcept;

// The driver at one kernel; arguments valid (check_attention), scale resolved.
void run_attention_f32(const KernelF32 &kernel, const attnscore_attention_desc &a, const float *q,
                       const float *k, float *s, float scale) noexcept;

}  // namespace attnscore

#endif  // ATTNSCORE_ATTENTION_H
