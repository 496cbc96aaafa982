// SPDX-License-Identifier: Apache-2.0
// attnscore_attention: the descriptor's checks in the header's order, then the engine of its
// dtype and K source through the one driver (split through the caller's parallel-for).
#include <cstring>
#include <limits>

#include "core/checks.h"
#include "core/driver.hpp"
#include "core/finish.h"
#include "core/kcache.h"
#include "dispatch/kernels.h"

namespace attnscore {
namespace {

constexpr unsigned kKnownMask = ATTNSCORE_MASK_CAUSAL | ATTNSCORE_MASK_WINDOW;
constexpr unsigned kKnownFlags =
    ATTNSCORE_ATTN_SOFTMAX | ATTNSCORE_ATTN_F16_ACCUMULATE | ATTNSCORE_ATTN_BF16_DOT;

bool built(int dtype) noexcept {
  return dtype == ATTNSCORE_DTYPE_F32 ||
         (ATTNSCORE_HAVE_F16 && (dtype == ATTNSCORE_DTYPE_F16 || dtype == ATTNSCORE_DTYPE_BF16)) ||
         (ATTNSCORE_HAVE_S8 && dtype == ATTNSCORE_DTYPE_S8);
}

std::size_t elem_bytes(int dtype) noexcept {
  return dtype == ATTNSCORE_DTYPE_F32                                    ? 4
         : dtype == ATTNSCORE_DTYPE_F16 || dtype == ATTNSCORE_DTYPE_BF16 ? 2
                                                                         : 1;
}

// Whether the heads x rows x cols elements with strides (hs, rs, 1) are pairwise distinct:
// rows of cols elements nested in heads (head-major), or heads nested in rows (token-major).
// Assumes rows > 0 and heads > 0 (rows closer than cols: not distinct; the lse's rows can be).
bool disjoint(std::size_t heads, std::size_t rows, std::size_t cols, std::size_t hs,
              std::size_t rs) noexcept {
  if (rows > 1 && rs < cols) return false;
  if (heads == 1) return true;
  if (rows == 1) return hs >= cols;
  std::size_t span;  // elements of one head (rows nested in it) or of one row (heads in it)
  if (!__builtin_mul_overflow(rows - 1, rs, &span) && !__builtin_add_overflow(span, cols, &span) &&
      hs >= span)
    return true;
  return hs >= cols && !__builtin_mul_overflow(heads - 1, hs, &span) &&
         !__builtin_add_overflow(span, cols, &span) && rs >= span;
}

// A usable softcap: 0 (none) or positive, finite and normal (judged by bits, as scale_ok).
bool softcap_ok(float c) noexcept {
  std::uint32_t bits;
  std::memcpy(&bits, &c, sizeof bits);
  if ((bits & 0x7fffffffu) == 0) return true;  // +0 or -0: no softcap
  return (bits >> 31) == 0 && scale_ok(c) && (bits & 0x7f800000u) != 0;
}

// The extent in bytes of an s8 tensor's scales (heads x rows of one float, strides hs, rs).
bool scales_extent(const attnscore_tensor &t, std::size_t heads, std::size_t rows,
                   std::size_t *bytes) noexcept {
  return extent3_bytes(t.scale, heads, rows, 1, t.scale_head_stride, t.scale_row_stride,
                       sizeof(float), bytes);
}

// Every scale of an s8 tensor usable (rs 0 or 1, checked before).
bool tensor_scales_ok(const attnscore_tensor &t, std::size_t heads, std::size_t rows) noexcept {
  const std::size_t per_head = t.scale_row_stride == 0 ? 1 : rows;
  for (std::size_t h = 0; h < heads; ++h)
    if (!scales_ok(t.scale + h * t.scale_head_stride, per_head)) return false;
  return true;
}

// The extents (bytes) of the inputs, for the overlap checks.
struct Extents {
  std::size_t q = 0, k = 0, qs = 0, ks = 0;
};

bool is_cache_of(const CacheCore *c, attnscore_cache_kind kind) noexcept {
  return c != nullptr && c->kind == kind;
}

// Every check of attnscore_attention, in the order the header documents; `scores` false: those of
// attnscore_attention_output, which has no S (its own checks follow in check_output).
attnscore_status check(const attnscore_attention_desc &a, const CacheCore **cache, bool scores,
                       Extents *x) noexcept {
  if (a.heads_q == 0 || a.n_q == 0 || a.n_k == 0) return ATTNSCORE_OK;
  if (a.d == 0) return ATTNSCORE_ERR_ZERO_DIM;
  const int qt = enum_int(a.q.dtype), st = enum_int(a.s.dtype);
  const bool raw_k = a.k_cache == nullptr;
  if (!built(qt) || (raw_k && !built(enum_int(a.k.dtype))) ||
      (scores && st != ATTNSCORE_DTYPE_F32 && !(ATTNSCORE_HAVE_F16 && st == ATTNSCORE_DTYPE_F16)))
    return ATTNSCORE_ERR_UNKNOWN_DTYPE;
  const bool s8 = qt == ATTNSCORE_DTYPE_S8;
  if (s8 && a.d > ATTNSCORE_S8_MAX_D) return ATTNSCORE_ERR_DIM_TOO_LARGE;
  if (a.q.data == nullptr || (scores && a.s.data == nullptr) || (raw_k && a.k.data == nullptr) ||
      (s8 && (a.q.scale == nullptr || (raw_k && a.k.scale == nullptr))))
    return ATTNSCORE_ERR_NULL_POINTER;
  if (!raw_k) {
    *cache = cache_core(a.k_cache);
    if (!is_cache_of(*cache, ATTNSCORE_CACHE_KEYS)) return ATTNSCORE_ERR_BAD_CACHE;
  }
  if ((raw_k ? enum_int(a.k.dtype) : static_cast<int>((*cache)->dtype)) != qt)
    return ATTNSCORE_ERR_DTYPE_MISMATCH;
  if (!raw_k && ((*cache)->heads != a.heads_kv || (*cache)->d != a.d || a.n_k > (*cache)->size))
    return ATTNSCORE_ERR_SHAPE_MISMATCH;
  if (a.heads_kv == 0 || a.heads_q % a.heads_kv != 0) return ATTNSCORE_ERR_HEADS_MISMATCH;
  if (a.q.row_stride < a.d) return ATTNSCORE_ERR_BAD_LDQ;
  if (raw_k && a.k.row_stride < a.d) return ATTNSCORE_ERR_BAD_LDK;
  if (scores && a.s.row_stride < a.n_k) return ATTNSCORE_ERR_BAD_LDS;
  if (s8 && (a.q.scale_row_stride > 1 || (raw_k && a.k.scale_row_stride > 1)))
    return ATTNSCORE_ERR_BAD_SCALE_COUNT;
  if (!scale_ok(a.scale)) return ATTNSCORE_ERR_BAD_SCALE;
  if (!softcap_ok(a.softcap)) return ATTNSCORE_ERR_BAD_SOFTCAP;
  if ((a.mask & ~kKnownMask) != 0 || (a.flags & ~kKnownFlags) != 0 ||
      ((a.flags & ATTNSCORE_ATTN_F16_ACCUMULATE) && qt != ATTNSCORE_DTYPE_F16) ||
      ((a.flags & ATTNSCORE_ATTN_BF16_DOT) && qt != ATTNSCORE_DTYPE_BF16))
    return ATTNSCORE_ERR_BAD_FLAGS;
  if ((a.mask & ATTNSCORE_MASK_WINDOW) && a.window == 0) return ATTNSCORE_ERR_BAD_WINDOW;
  std::size_t last;
  if (a.mask != 0 && __builtin_add_overflow(a.pos_offset, a.n_q - 1, &last))
    return ATTNSCORE_ERR_POSITION_OVERFLOW;
  if (!disjoint(a.heads_q, a.n_q, a.d, a.q.head_stride, a.q.row_stride) ||
      (raw_k && !disjoint(a.heads_kv, a.n_k, a.d, a.k.head_stride, a.k.row_stride)) ||
      (scores && !disjoint(a.heads_q, a.n_q, a.n_k, a.s.head_stride, a.s.row_stride)))
    return ATTNSCORE_ERR_BAD_HEAD_STRIDE;
  const std::size_t e = elem_bytes(qt);
  std::size_t s_bytes = 0;
  if (!extent3_bytes(a.q.data, a.heads_q, a.n_q, a.d, a.q.head_stride, a.q.row_stride, e, &x->q) ||
      (raw_k && !extent3_bytes(a.k.data, a.heads_kv, a.n_k, a.d, a.k.head_stride, a.k.row_stride, e,
                               &x->k)) ||
      (scores && !extent3_bytes(a.s.data, a.heads_q, a.n_q, a.n_k, a.s.head_stride, a.s.row_stride,
                                elem_bytes(st), &s_bytes)) ||
      (s8 && !scales_extent(a.q, a.heads_q, a.n_q, &x->qs)) ||
      (s8 && raw_k && !scales_extent(a.k, a.heads_kv, a.n_k, &x->ks)))
    return ATTNSCORE_ERR_SIZE_OVERFLOW;
  const void *s = a.s.data;
  if (scores && (overlaps(s, s_bytes, a.q.data, x->q) ||
                 (raw_k ? overlaps(s, s_bytes, a.k.data, x->k)
                        : overlaps(s, s_bytes, *cache, (*cache)->bytes)) ||
                 (s8 && overlaps(s, s_bytes, a.q.scale, x->qs)) ||
                 (s8 && raw_k && overlaps(s, s_bytes, a.k.scale, x->ks))))
    return ATTNSCORE_ERR_OVERLAP;
  if (s8 && (!tensor_scales_ok(a.q, a.heads_q, a.n_q) ||
             (raw_k && !tensor_scales_ok(a.k, a.heads_kv, a.n_k))))
    return ATTNSCORE_ERR_BAD_QUANT_SCALE;
  if (scores && st == ATTNSCORE_DTYPE_F16 && (a.flags & ATTNSCORE_ATTN_SOFTMAX) &&
      a.n_k > ATTNSCORE_ATTN_F16_SOFTMAX_MAX_KEYS)
    return ATTNSCORE_ERR_ROW_TOO_LONG;
  return ATTNSCORE_OK;
}

#if ATTNSCORE_HAVE_OUTPUT
// The output call's own checks (V, O, lse, sinks), after check(); the order the header documents.
attnscore_status check_output(const attnscore_attention_desc &a, const CacheCore *kc,
                              const Extents &x, const CacheCore **vcache) noexcept {
  const std::size_t dv = a.dv == 0 ? a.d : a.dv;
  if (dv > ATTNSCORE_ATTN_OUT_MAX_DV) return ATTNSCORE_ERR_ROW_TOO_LONG;
  const bool raw_v = a.v_cache == nullptr;
  const int ot = enum_int(a.o.dtype);
  if ((raw_v && !built(enum_int(a.v.dtype))) ||
      (ot != ATTNSCORE_DTYPE_F32 && !(ATTNSCORE_HAVE_F16 && ot == ATTNSCORE_DTYPE_F16)))
    return ATTNSCORE_ERR_UNKNOWN_DTYPE;
  const bool vs8 = raw_v && enum_int(a.v.dtype) == ATTNSCORE_DTYPE_S8;
  if (a.o.data == nullptr || (raw_v && a.v.data == nullptr) || (vs8 && a.v.scale == nullptr))
    return ATTNSCORE_ERR_NULL_POINTER;
  if (!raw_v) {
    *vcache = cache_core(a.v_cache);
    if (!is_cache_of(*vcache, ATTNSCORE_CACHE_VALUES)) return ATTNSCORE_ERR_BAD_CACHE;
    if ((*vcache)->heads != a.heads_kv || (*vcache)->d != dv || a.n_k > (*vcache)->size)
      return ATTNSCORE_ERR_SHAPE_MISMATCH;
  }
  if (raw_v && a.v.row_stride < dv) return ATTNSCORE_ERR_BAD_LDK;
  if (a.o.row_stride < dv) return ATTNSCORE_ERR_BAD_LDS;
  if (vs8 && a.v.scale_row_stride > 1) return ATTNSCORE_ERR_BAD_SCALE_COUNT;
  for (std::size_t h = 0; a.sinks != nullptr && h < a.heads_q; ++h)
    if (a.sinks[h] != a.sinks[h] || a.sinks[h] == std::numeric_limits<float>::infinity())
      return ATTNSCORE_ERR_BAD_SINK;
  const bool lse = a.lse != nullptr;
  if ((raw_v && !disjoint(a.heads_kv, a.n_k, dv, a.v.head_stride, a.v.row_stride)) ||
      !disjoint(a.heads_q, a.n_q, dv, a.o.head_stride, a.o.row_stride) ||
      (lse && !disjoint(a.heads_q, a.n_q, 1, a.lse_head_stride, a.lse_row_stride)))
    return ATTNSCORE_ERR_BAD_HEAD_STRIDE;
  std::size_t v_bytes = 0, vs_bytes = 0, o_bytes, l_bytes = 0, z_bytes = 0;
  if ((raw_v && !extent3_bytes(a.v.data, a.heads_kv, a.n_k, dv, a.v.head_stride, a.v.row_stride,
                               elem_bytes(enum_int(a.v.dtype)), &v_bytes)) ||
      (vs8 && !scales_extent(a.v, a.heads_kv, a.n_k, &vs_bytes)) ||
      !extent3_bytes(a.o.data, a.heads_q, a.n_q, dv, a.o.head_stride, a.o.row_stride,
                     elem_bytes(ot), &o_bytes) ||
      (lse && !extent3_bytes(a.lse, a.heads_q, a.n_q, 1, a.lse_head_stride, a.lse_row_stride,
                             sizeof(float), &l_bytes)) ||
      (a.sinks != nullptr &&
       !extent3_bytes(a.sinks, 1, 1, a.heads_q, 0, 0, sizeof(float), &z_bytes)))
    return ATTNSCORE_ERR_SIZE_OVERFLOW;
  // Each output against every input and the other output.
  const struct {
    const void *p;
    std::size_t n;
  } in[] = {
      {a.q.data, x.q},
      {kc != nullptr ? static_cast<const void *>(kc) : a.k.data, kc != nullptr ? kc->bytes : x.k},
      {a.q.scale, x.qs},
      {kc != nullptr ? nullptr : a.k.scale, x.ks},
      {raw_v ? a.v.data : static_cast<const void *>(*vcache), raw_v ? v_bytes : (*vcache)->bytes},
      {vs8 ? a.v.scale : nullptr, vs_bytes},
      {a.sinks, z_bytes},
      {lse ? a.lse : nullptr, l_bytes}};
  // Whether [p, p + n) meets any of the first k of them.
  const auto meets = [&in](const void *p, std::size_t n, std::size_t k) {
    for (std::size_t i = 0; i < k; ++i)
      if (in[i].p != nullptr && in[i].n != 0 && overlaps(p, n, in[i].p, in[i].n)) return true;
    return false;
  };
  constexpr std::size_t all = sizeof in / sizeof in[0];
  if (meets(a.o.data, o_bytes, all) || (lse && meets(a.lse, l_bytes, all - 1)))
    return ATTNSCORE_ERR_OVERLAP;
  if (vs8 && !tensor_scales_ok(a.v, a.heads_kv, a.n_k)) return ATTNSCORE_ERR_BAD_QUANT_SCALE;
  // The workspace against every operand (it is written).
  const std::size_t wb = a.workspace_bytes;
  if (wb == 0) return ATTNSCORE_OK;
  if (a.workspace == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  std::size_t w_bytes;
  if (!extent3_bytes(a.workspace, 1, 1, wb, 0, 0, 1, &w_bytes)) return ATTNSCORE_ERR_SIZE_OVERFLOW;
  if (meets(a.workspace, w_bytes, all) || overlaps(a.workspace, w_bytes, a.o.data, o_bytes))
    return ATTNSCORE_ERR_OVERLAP;
  return ATTNSCORE_OK;
}

#endif  // ATTNSCORE_HAVE_OUTPUT

}  // namespace
}  // namespace attnscore

using namespace attnscore;

extern "C" {

attnscore_attention_desc attnscore_attention_dense(attnscore_dtype dtype, size_t heads_q,
                                                   size_t heads_kv, size_t n_q, size_t n_k,
                                                   size_t d) {
  attnscore_attention_desc a;
  std::memset(&a, 0, sizeof a);
  a.heads_q = heads_q, a.heads_kv = heads_kv, a.n_q = n_q, a.n_k = n_k, a.d = d;
  a.q.dtype = dtype, a.q.head_stride = n_q * d, a.q.row_stride = d;
  a.k.dtype = dtype, a.k.head_stride = n_k * d, a.k.row_stride = d;
  if (enum_int(dtype) == ATTNSCORE_DTYPE_S8)  // one scale per row and per key
    a.q.scale_head_stride = n_q, a.q.scale_row_stride = 1, a.k.scale_head_stride = n_k,
    a.k.scale_row_stride = 1;
  a.s.dtype = ATTNSCORE_DTYPE_F32, a.s.head_stride = n_q * n_k, a.s.row_stride = n_k;
  return a;
}

attnscore_status attnscore_attention(const attnscore_attention_desc *desc,
                                     const attnscore_parallel *par) {
  if (desc == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  const attnscore_attention_desc a = *desc;  // one read: a racing writer cannot split checks
  const CacheCore *cache = nullptr;
  Extents x;
  const attnscore_status st = check(a, &cache, true, &x);
  if (st != ATTNSCORE_OK || a.heads_q == 0 || a.n_q == 0 || a.n_k == 0) return st;
  if (par != nullptr && par->parallel_for == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  const float scale = a.scale == 0.0f ? attnscore_default_scale(a.d) : a.scale;
  // The softmax of the f32 kernel chosen now, whatever the dtype: one softmax per cap.
  Problem p = attention_problem(a, nullptr, scale, active_kernel_f32().level);
  if (enum_int(a.s.dtype) == ATTNSCORE_DTYPE_F32) {
    p.s = static_cast<float *>(a.s.data);
  } else {
#if ATTNSCORE_HAVE_F16
    p.s16 = static_cast<std::uint16_t *>(a.s.data);
    p.to_f16 = active_kernel_f16().narrow;
#endif
  }
  run_attention(a, cache, p, par);
  return ATTNSCORE_OK;
}

#if !ATTNSCORE_HAVE_OUTPUT
attnscore_status attnscore_attention_output(const attnscore_attention_desc *,
                                            const attnscore_parallel *) {
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;  // a build without the output call
}
size_t attnscore_attention_output_workspace(const attnscore_attention_desc *, size_t) { return 0; }
#else
size_t attnscore_attention_output_workspace(const attnscore_attention_desc *desc, size_t threads) {
  if (desc == nullptr) return 0;
  const attnscore_attention_desc &a = *desc;
  const std::size_t dv = a.dv == 0 ? a.d : a.dv;
  const std::size_t split =
      output_workspace_bytes(a.heads_q, a.heads_kv, a.n_q, a.n_k, dv, threads == 0 ? 1 : threads);
  return split != 0 ? split : output_pack_query(a, dv);
}

attnscore_status attnscore_attention_output(const attnscore_attention_desc *desc,
                                            const attnscore_parallel *par) {
  if (desc == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  const attnscore_attention_desc a = *desc;
  const CacheCore *kc = nullptr, *vc = nullptr;
  Extents x;
  attnscore_status st = check(a, &kc, false, &x);
  if (st != ATTNSCORE_OK || a.heads_q == 0 || a.n_q == 0 || a.n_k == 0) return st;
  st = check_output(a, kc, x, &vc);
  if (st != ATTNSCORE_OK) return st;
  if (par != nullptr && par->parallel_for == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  const float scale = a.scale == 0.0f ? attnscore_default_scale(a.d) : a.scale;
  const attnscore_level level = active_kernel_f32().level;
  Problem p = attention_problem(a, nullptr, scale, level);
  p.softmax = nullptr;
  OutputSpec o;
  o.dv = a.dv == 0 ? a.d : a.dv;
  if (vc == nullptr) {
    o.v_dtype = enum_int(a.v.dtype), o.v = a.v.data, o.vhs = a.v.head_stride;
    o.vrs = a.v.row_stride, o.v_scale = a.v.scale, o.vshs = a.v.scale_head_stride;
    o.vsrs = a.v.scale_row_stride;
  } else {  // rows of d elements, one after another per head; s8 scales per token
    o.v_dtype = vc->dtype, o.v = vc->panels, o.vhs = vc->panels_per_head * vc->d, o.vrs = vc->d;
    o.v_scale = vc->scales, o.vshs = vc->panels_per_head, o.vsrs = 1;
  }
#if ATTNSCORE_HAVE_F16
  if (o.v_dtype == ATTNSCORE_DTYPE_F16) o.v_to_f32 = active_kernel_f16().to_f32;
  if (o.v_dtype == ATTNSCORE_DTYPE_BF16) o.v_to_f32 = active_kernel_bf16().to_f32;
  o.o_f16 = enum_int(a.o.dtype) == ATTNSCORE_DTYPE_F16;
  o.narrow = active_kernel_f16().narrow;
#endif
  o.o = a.o.data, o.ohs = a.o.head_stride, o.ors = a.o.row_stride;
  o.lse = a.lse, o.lhs = a.lse_head_stride, o.lrs = a.lse_row_stride;
  o.sinks = a.sinks, o.row = &softmax_row_for(level);
  o.ws = a.workspace_bytes != 0 ? a.workspace : nullptr, o.ws_bytes = a.workspace_bytes;
  p.out = &o;
  run_attention(a, kc, p, par);
  return ATTNSCORE_OK;
}
#endif

int attnscore_flag_available(unsigned flag) {
  if (flag == ATTNSCORE_ATTN_SOFTMAX) return 1;
#if ATTNSCORE_HAVE_F16
  if (flag == ATTNSCORE_ATTN_F16_ACCUMULATE) return active_kernel_f16acc().acc != nullptr;
  if (flag == ATTNSCORE_ATTN_BF16_DOT) return active_kernel_bf16dot().dot != nullptr;
#endif
  return 0;
}

}  // extern "C"
