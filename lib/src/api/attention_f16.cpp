// SPDX-License-Identifier: Apache-2.0
// The attention step on binary16 Q and K (f32 output), and with binary16 output: the f32 call on
// blocks of S held on the stack, each element then rounded once to f16.
#include <cstdint>
#include <cstring>

#include "core/attention.h"
#include "core/checks.h"
#include "dispatch/kernels.h"

namespace attnscore {
namespace {

// Floats of S computed at a time (32 KiB of stack, beside the driver's panel); with the softmax a
// block holds whole rows, so n_k is limited to this (ATTNSCORE_ATTN_F16_SOFTMAX_MAX_KEYS).
constexpr std::size_t kOutFloats = ATTNSCORE_ATTN_F16_SOFTMAX_MAX_KEYS;
constexpr std::uint16_t kF16NegInf = 0xfc00;

}  // namespace
}  // namespace attnscore

using namespace attnscore;

extern "C" {

attnscore_status attnscore_attention_f16(const attnscore_attention_desc *desc, const uint16_t *q,
                                         const uint16_t *k, float *s) {
  if (desc == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  const attnscore_attention_desc a = *desc;  // one read: a racing writer cannot split checks
  const attnscore_status st = check_attention(a, q, k, s, sizeof(float), sizeof(std::uint16_t));
  if (st != ATTNSCORE_OK || a.heads_q == 0 || a.n_q == 0 || a.n_k == 0) return st;
  const float scale = a.scale == 0.0f ? attnscore_default_scale(a.d) : a.scale;
  run_attention_f16(active_kernel_f16(), a, q, k, s, scale);
  return ATTNSCORE_OK;
}

attnscore_status attnscore_attention_f32_to_f16(const attnscore_attention_desc *desc,
                                                const float *q, const float *k, uint16_t *s) {
  if (desc == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  const attnscore_attention_desc a = *desc;  // one read: a racing writer cannot split checks
  const attnscore_status st = check_attention(a, q, k, s, sizeof(std::uint16_t));
  if (st != ATTNSCORE_OK || a.heads_q == 0 || a.n_q == 0 || a.n_k == 0) return st;
  const bool softmax = (a.flags & ATTNSCORE_ATTN_SOFTMAX) != 0;
  if (softmax && a.n_k > kOutFloats) return ATTNSCORE_ERR_ROW_TOO_LONG;
  const float scale = a.scale == 0.0f ? attnscore_default_scale(a.d) : a.scale;
  const KernelF32 &kernel = active_kernel_f32();
  const ToF16Fn to_f16 = active_kernel_f16().to_f16;

  // Blocks: kc keys (the whole row under the softmax) x rb rows x hs query heads of one group
  // (hs divides the group, so each block's heads share their K head: one sub-call reads it once).
  const std::size_t g = a.heads_q / a.heads_kv;
  const std::size_t kc = a.n_k < kOutFloats ? a.n_k : kOutFloats;
  std::size_t hs = g;
  while (hs * kc > kOutFloats) --hs;
  while (g % hs != 0) --hs;
  const std::size_t rb0 = kOutFloats / (hs * kc);
  const std::size_t rb = rb0 < a.n_q ? rb0 : a.n_q;
  alignas(64) float block[kOutFloats];
  for (std::size_t h0 = 0; h0 < a.heads_q; h0 += hs) {
    const float *kh = k + (h0 / g) * a.k_head_stride;
    for (std::size_t j0 = 0; j0 < a.n_k; j0 += kc) {
      const std::size_t cols = a.n_k - j0 < kc ? a.n_k - j0 : kc;
      for (std::size_t i0 = 0; i0 < a.n_q; i0 += rb) {
        const std::size_t rows = a.n_q - i0 < rb ? a.n_q - i0 : rb;
        // Under a mask, rows before position j0 see no key of this chunk (never with the
        // softmax: its one chunk starts at 0): -Inf, as the f32 call gives.
        std::size_t skip = 0;
        if (a.mask != 0 && a.pos_offset + i0 < j0) {
          skip = j0 - (a.pos_offset + i0) < rows ? j0 - (a.pos_offset + i0) : rows;
          for (std::size_t h = h0; h < h0 + hs; ++h)
            for (std::size_t r = 0; r < skip; ++r) {
              uint16_t *dst = s + h * a.s_head_stride + (i0 + r) * a.s_row_stride + j0;
              for (std::size_t j = 0; j < cols; ++j) dst[j] = kF16NegInf;
            }
          if (skip == rows) continue;
        }
        // The same step on this block: row i0 + skip at position pos_offset + i0 + skip, which
        // is key (position - j0) of the chunk (>= 0 by the skip), so every mask span maps.
        attnscore_attention_desc b = a;
        b.heads_q = hs;
        b.heads_kv = 1;
        b.n_q = rows - skip;
        b.n_k = cols;
        b.s_head_stride = (rows - skip) * cols;
        b.s_row_stride = cols;
        b.pos_offset = a.mask != 0 ? a.pos_offset + i0 + skip - j0 : 0;
        run_attention_f32(kernel, b, q + h0 * a.q_head_stride + (i0 + skip) * a.q_row_stride,
                          kh + j0 * a.k_row_stride, block, scale);
        for (std::size_t h = 0; h < hs; ++h)
          for (std::size_t r = 0; r < rows - skip; ++r)
            to_f16(cols, block + (h * (rows - skip) + r) * cols,
                   s + (h0 + h) * a.s_head_stride + (i0 + skip + r) * a.s_row_stride + j0);
      }
    }
  }
  return ATTNSCORE_OK;
}

}  // extern "C"
