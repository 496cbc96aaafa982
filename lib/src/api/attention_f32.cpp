// SPDX-License-Identifier: Apache-2.0
// attnscore_attention_f32 and the dense descriptor: checks, then the driver (core/run.cpp).
#include <cstring>

#include "core/attention.h"
#include "dispatch/kernels.h"

using namespace attnscore;

extern "C" {

attnscore_attention_desc attnscore_attention_desc_dense(size_t heads_q, size_t heads_kv, size_t n_q,
                                                        size_t n_k, size_t d) {
  attnscore_attention_desc a;
  std::memset(&a, 0, sizeof a);
  a.heads_q = heads_q;
  a.heads_kv = heads_kv;
  a.n_q = n_q;
  a.n_k = n_k;
  a.d = d;
  a.q_head_stride = n_q * d;
  a.q_row_stride = d;
  a.k_head_stride = n_k * d;
  a.k_row_stride = d;
  a.s_head_stride = n_q * n_k;
  a.s_row_stride = n_k;
  return a;
}

attnscore_status attnscore_attention_f32(const attnscore_attention_desc *desc, const float *q,
                                         const float *k, float *s) {
  if (desc == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  const attnscore_attention_desc a = *desc;  // one read: a racing writer cannot split checks
  const attnscore_status st = check_attention(a, q, k, s);
  if (st != ATTNSCORE_OK || a.heads_q == 0 || a.n_q == 0 || a.n_k == 0) return st;
  const float scale = a.scale == 0.0f ? attnscore_default_scale(a.d) : a.scale;
  run_attention_f32(active_kernel_f32(), a, q, k, s, scale);
  return ATTNSCORE_OK;
}

}  // extern "C"
