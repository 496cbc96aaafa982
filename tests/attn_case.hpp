// SPDX-License-Identifier: Apache-2.0
// Attention problems of every dtype for the tests: Q and K (and int8 scales) in strided layouts
// inside poisoned buffers, and the oracle the attention call must match bit for bit: per head,
// the pinned scores call of the dtype at the current level, its rows then finished (softcap, mask,
// softmax) by the step's own finishing. A key cache sums in the prefill order at every row count,
// so its oracle is the scores call with more than kDecodeRows rows (docs/contract.md). The runner
// checks the call with raw K or a key cache, f32 or binary16 S, any parallel-for, and that nothing
// outside S is written.
#ifndef ATTNSCORE_TESTS_ATTN_CASE_HPP
#define ATTNSCORE_TESTS_ATTN_CASE_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attnscore/attnscore.h"
#include "core/finish.h"
#include "dispatch/kernels.h"
#include "support.hpp"

namespace testing {

struct AttnCase {
  attnscore_dtype dtype = ATTNSCORE_DTYPE_F32;
  std::size_t hq = 1, hkv = 1, n_q = 1, n_k = 1, d = 1;
  std::size_t extra_keys = 0;  // K holds n_k + extra_keys tokens; the call reads the first n_k
  unsigned mask = 0;
  std::size_t p0 = 0, w = 0;
  float softcap = 0.0f, scale = 0.0f;
  bool softmax = false;
  unsigned layout = 0;    // 0 dense head-major, 1 padded head-major, 2 token-major
  unsigned q_scales = 0;  // s8: 0 one per row, 1 one per head, 2 one for the tensor
  unsigned k_scales = 0;  // the same for K (a cache needs 0: one per key)
};

// The mask from its definition: row i at position p = p0 + i.
inline bool attn_visible(const AttnCase &c, std::size_t i, std::size_t j) {
  const std::size_t p = c.p0 + i;
  bool v = true;
  if (c.mask & (ATTNSCORE_MASK_CAUSAL | ATTNSCORE_MASK_WINDOW)) v = j <= p;
  if (c.mask & ATTNSCORE_MASK_WINDOW) v = v && j + c.w > p;
  return v;
}

inline bool dtype_built(attnscore_dtype t) { return attnscore_kernel_name(t) != nullptr; }

inline std::string describe(const AttnCase &c) {
  const char *names[] = {"f32", "f16", "s8"};
  return std::string(names[c.dtype]) + " heads " + std::to_string(c.hq) + "/" +
         std::to_string(c.hkv) + " " + std::to_string(c.n_q) + "x" + std::to_string(c.n_k) + " d " +
         std::to_string(c.d) + " mask " + std::to_string(c.mask) + " p0 " + std::to_string(c.p0) +
         " w " + std::to_string(c.w) + " softcap " + std::to_string(c.softcap) +
         (c.softmax ? " softmax" : "") + " layout " + std::to_string(c.layout) + " scales " +
         std::to_string(c.q_scales) + "/" + std::to_string(c.k_scales);
}

// Elements of binary16 S that the call never writes (a NaN pattern).
constexpr std::uint16_t kGuard16 = 0x7d5a;

class AttnData {
 public:
  AttnCase c;
  std::size_t n_kt;                                // K's tokens
  std::size_t q_hs, q_rs, k_hs, k_rs, s_hs, s_rs;  // strides in elements
  static constexpr std::size_t q_off = 3, k_off = 5, s_off = 2, sc_off = 1;
  std::vector<float> qf, kf;  // f32 inputs (NaN poison)
  std::vector<std::uint16_t> qh, kh;
  std::vector<std::int8_t> qi, ki;
  std::vector<float> qs, ks;  // int8 scales (NaN poison)
  std::size_t qs_hs = 0, qs_rs = 0, ks_hs = 0, ks_rs = 0;
  std::size_t s_elems;
  std::vector<float> want;        // the oracle, at s_off with S's strides (set by prepare())
  std::vector<float> want_cache;  // the same with K from a key cache

  AttnData(const AttnCase &c_, std::mt19937 &rng) : c(c_), n_kt(c_.n_k + c_.extra_keys) {
    const std::size_t d = c.d;
    if (c.layout % 3 == 1) {
      q_rs = d + 3, q_hs = c.n_q * q_rs + 5, k_rs = d + 1, k_hs = n_kt * k_rs + 2;
      s_rs = c.n_k + 1, s_hs = c.n_q * s_rs + 3;
    } else if (c.layout % 3 == 2) {
      q_hs = d, q_rs = c.hq * d + 1, k_hs = d + 2, k_rs = c.hkv * (d + 2);
      s_hs = c.n_k, s_rs = c.hq * c.n_k + 2;
    } else {
      q_rs = d, q_hs = c.n_q * d, k_rs = d, k_hs = n_kt * d, s_rs = c.n_k, s_hs = c.n_q * c.n_k;
    }
    const std::size_t q_n = q_off + extent(c.hq, c.n_q, d, q_hs, q_rs) + 16;
    const std::size_t k_n = k_off + extent(c.hkv, n_kt, d, k_hs, k_rs) + 16;
    s_elems = s_off + extent(c.hq, c.n_q, c.n_k, s_hs, s_rs) + 16;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::uniform_int_distribution<int> i8(-128, 127);
    const float amp = c.softcap != 0.0f ? 3.0f : 1.0f;  // so that a softcap bites
    switch (c.dtype) {
      case ATTNSCORE_DTYPE_F32:
        qf.assign(q_n, nan), kf.assign(k_n, nan);
        fill(c.hq, c.n_q, q_hs, q_rs, [&](std::size_t x) { qf[q_off + x] = amp * dist(rng); });
        fill(c.hkv, n_kt, k_hs, k_rs, [&](std::size_t x) { kf[k_off + x] = amp * dist(rng); });
        break;
      case ATTNSCORE_DTYPE_F16:
        qh.assign(q_n, 0x7e00), kh.assign(k_n, 0x7e00);
        fill(c.hq, c.n_q, q_hs, q_rs,
             [&](std::size_t x) { qh[q_off + x] = f16_nearest(amp * dist(rng)); });
        fill(c.hkv, n_kt, k_hs, k_rs,
             [&](std::size_t x) { kh[k_off + x] = f16_nearest(amp * dist(rng)); });
        break;
      default: {
        qi.assign(q_n, 0x5a), ki.assign(k_n, -0x5a);
        fill(c.hq, c.n_q, q_hs, q_rs,
             [&](std::size_t x) { qi[q_off + x] = static_cast<std::int8_t>(i8(rng)); });
        fill(c.hkv, n_kt, k_hs, k_rs,
             [&](std::size_t x) { ki[k_off + x] = static_cast<std::int8_t>(i8(rng)); });
        set_scales(c.q_scales, c.hq, c.n_q, &qs, &qs_hs, &qs_rs, amp, rng);
        set_scales(c.k_scales, c.hkv, n_kt, &ks, &ks_hs, &ks_rs, 1.0f, rng);
        break;
      }
    }
  }

  const void *q_data() const {
    return c.dtype == ATTNSCORE_DTYPE_F32   ? static_cast<const void *>(qf.data() + q_off)
           : c.dtype == ATTNSCORE_DTYPE_F16 ? static_cast<const void *>(qh.data() + q_off)
                                            : static_cast<const void *>(qi.data() + q_off);
  }
  const void *k_data() const {
    return c.dtype == ATTNSCORE_DTYPE_F32   ? static_cast<const void *>(kf.data() + k_off)
           : c.dtype == ATTNSCORE_DTYPE_F16 ? static_cast<const void *>(kh.data() + k_off)
                                            : static_cast<const void *>(ki.data() + k_off);
  }
  std::size_t elem() const {
    return c.dtype == ATTNSCORE_DTYPE_F32 ? 4 : c.dtype == ATTNSCORE_DTYPE_F16 ? 2 : 1;
  }
  const float *q_scale() const { return qs.empty() ? nullptr : qs.data() + sc_off; }
  const float *k_scale() const { return ks.empty() ? nullptr : ks.data() + sc_off; }

  // K's tokens [j0, j0 + n) of every head as an append source (and as the call's raw K at j0 0).
  attnscore_tensor k_tensor(std::size_t j0 = 0) const {
    attnscore_tensor t;
    std::memset(&t, 0, sizeof t);
    t.data = static_cast<const unsigned char *>(k_data()) + j0 * k_rs * elem();
    t.dtype = c.dtype, t.head_stride = k_hs, t.row_stride = k_rs;
    if (c.dtype == ATTNSCORE_DTYPE_S8)
      t.scale = k_scale() + j0 * ks_rs, t.scale_head_stride = ks_hs, t.scale_row_stride = ks_rs;
    return t;
  }

  // The descriptor of the case on raw K (S's data and dtype for the runner to set).
  attnscore_attention_desc desc() const {
    attnscore_attention_desc a = attnscore_attention_dense(c.dtype, c.hq, c.hkv, c.n_q, c.n_k, c.d);
    a.q.data = q_data(), a.q.head_stride = q_hs, a.q.row_stride = q_rs;
    if (c.dtype == ATTNSCORE_DTYPE_S8)
      a.q.scale = q_scale(), a.q.scale_head_stride = qs_hs, a.q.scale_row_stride = qs_rs;
    a.k = k_tensor(0);
    a.s.head_stride = s_hs, a.s.row_stride = s_rs;
    a.scale = c.scale, a.softcap = c.softcap, a.mask = c.mask, a.pos_offset = c.p0;
    a.window = c.w, a.flags = c.softmax ? ATTNSCORE_ATTN_SOFTMAX : 0u;
    return a;
  }

  bool finishes() const { return c.mask != 0 || c.softcap != 0.0f || c.softmax; }

  // The pinned scores call of the dtype on head h (n_q x n_k, row stride n_k); with
  // `prefill_order`, made with more than kDecodeRows rows (Q's, then copies of its last).
  attnscore_status plain(std::size_t h, float *out, bool prefill_order = false) const {
    const std::size_t hk = h / (c.hq / c.hkv);
    const std::size_t qa = q_off + h * q_hs, ka = k_off + hk * k_hs;
    if (prefill_order && c.dtype != ATTNSCORE_DTYPE_S8 && c.n_q <= attnscore::kDecodeRows) {
      const std::size_t n = attnscore::kDecodeRows + 1;
      std::vector<float> s(n * c.n_k), q32(n * c.d);
      std::vector<std::uint16_t> q16(n * c.d);
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t t = 0; t < c.d; ++t) {
          const std::size_t x = qa + std::min(i, c.n_q - 1) * q_rs + t;
          if (c.dtype == ATTNSCORE_DTYPE_F32)
            q32[i * c.d + t] = qf[x];
          else
            q16[i * c.d + t] = qh[x];
        }
      const attnscore_status st =
          c.dtype == ATTNSCORE_DTYPE_F32
              ? attnscore_scores_f32(n, c.n_k, c.d, q32.data(), c.d, kf.data() + ka, k_rs, s.data(),
                                     c.n_k, c.scale)
              : attnscore_scores_f16(n, c.n_k, c.d, q16.data(), c.d, kh.data() + ka, k_rs, s.data(),
                                     c.n_k, c.scale);
      std::memcpy(out, s.data(), c.n_q * c.n_k * sizeof(float));
      return st;
    }
    switch (c.dtype) {
      case ATTNSCORE_DTYPE_F32:
        return attnscore_scores_f32(c.n_q, c.n_k, c.d, qf.data() + qa, q_rs, kf.data() + ka, k_rs,
                                    out, c.n_k, c.scale);
      case ATTNSCORE_DTYPE_F16:
        return attnscore_scores_f16(c.n_q, c.n_k, c.d, qh.data() + qa, q_rs, kh.data() + ka, k_rs,
                                    out, c.n_k, c.scale);
      default:
        return attnscore_scores_s8(c.n_q, c.n_k, c.d, qi.data() + qa, q_rs, q_scale() + h * qs_hs,
                                   qs_rs ? c.n_q : 1, ki.data() + ka, k_rs, k_scale() + hk * ks_hs,
                                   ks_rs ? c.n_k : 1, out, c.n_k, c.scale);
    }
  }

  // The oracle at the current level: the scores call per head, its rows finished as the step
  // documents (softcap, then -Inf outside the mask, or the softmax of the f32 kernel's level).
  std::string prepare() {
    const std::string err = prepare_one(false, &want);
    return err.empty() ? prepare_one(true, &want_cache) : err;
  }
  std::string prepare_one(bool prefill_order, std::vector<float> *oracle) const {
    oracle->assign(s_elems, from_bits(kGuardBits));
    std::vector<float> plain_s(c.n_q * c.n_k);
    const attnscore::SoftmaxSpanFn softmax =
        c.softmax ? attnscore::softmax_for(attnscore_kernel_level(ATTNSCORE_DTYPE_F32)) : nullptr;
    for (std::size_t h = 0; h < c.hq; ++h) {
      const attnscore_status st = plain(h, plain_s.data(), prefill_order);
      if (st != ATTNSCORE_OK) return std::string("scores call: ") + attnscore_status_string(st);
      for (std::size_t i = 0; i < c.n_q; ++i) {
        float *row = plain_s.data() + i * c.n_k;
        if (finishes()) {
          attnscore::Span sp{0, 0};
          bool any = false;
          for (std::size_t j = 0; j < c.n_k; ++j)
            if (attn_visible(c, i, j)) {
              if (!any) sp.lo = j;
              sp.hi = j + 1, any = true;
            }
          attnscore::finish_row(row, c.n_k, sp, c.softcap, softmax);
        }
        std::memcpy(oracle->data() + s_off + h * s_hs + i * s_rs, row, c.n_k * sizeof(float));
      }
    }
    return "";
  }

  // Runs the call (raw K, or `cache` as K) with S of `s_dtype` through `par`, with `flags`
  // added; checks every element of S against the oracle (f16: rounded once by the tests' own
  // binary16 oracle), the mask by its definition, that nothing outside S is written and that no
  // input changed. "" or the first failure. `out` (if given) receives the raw S buffer.
  std::string run(attnscore_dtype s_dtype, const attnscore_cache *cache,
                  const attnscore_parallel *par, unsigned flags = 0,
                  std::vector<unsigned char> *out = nullptr) const {
    attnscore_attention_desc a = desc();
    a.flags |= flags;
    if (cache != nullptr) {
      std::memset(&a.k, 0, sizeof a.k);  // not read
      a.k.dtype = static_cast<attnscore_dtype>(77);
      a.k_cache = cache;
    }
    const bool f16 = s_dtype == ATTNSCORE_DTYPE_F16;
    std::vector<float> s32(f16 ? 0 : s_elems, from_bits(kGuardBits));
    std::vector<std::uint16_t> s16(f16 ? s_elems : 0, kGuard16);
    a.s.dtype = s_dtype;
    a.s.data = f16 ? static_cast<void *>(s16.data() + s_off) : s32.data() + s_off;
    const AttnData before = *this;
    const attnscore_status st = attnscore_attention(&a, par);
    if (st != ATTNSCORE_OK) return std::string("status: ") + attnscore_status_string(st);
    if (!same(qf, before.qf) || !same(kf, before.kf) || !same(qh, before.qh) ||
        !same(kh, before.kh) || !same(qi, before.qi) || !same(ki, before.ki) ||
        !same(qs, before.qs) || !same(ks, before.ks))
      return "an input was modified";
    if (out != nullptr) {
      out->resize(f16 ? s16.size() * 2 : s32.size() * 4);
      std::memcpy(out->data(), f16 ? static_cast<const void *>(s16.data()) : s32.data(),
                  out->size());
    }
    const std::vector<float> &oracle = cache != nullptr ? want_cache : want;
    std::vector<char> in_s(s_elems, 0);
    for (std::size_t h = 0; h < c.hq; ++h)
      for (std::size_t i = 0; i < c.n_q; ++i) {
        double sum = 0;
        bool any = false;
        for (std::size_t j = 0; j < c.n_k; ++j) {
          const std::size_t x = s_off + h * s_hs + i * s_rs + j;
          in_s[x] = 1;
          const std::string at =
              " at h=" + std::to_string(h) + " i=" + std::to_string(i) + " j=" + std::to_string(j);
          if (f16) {
            if (s16[x] != f16_nearest(oracle[x]))
              return "f16 S is not the f32 result rounded once" + at;
            continue;
          }
          if (to_bits(s32[x]) != to_bits(oracle[x]))
            return std::string(finishes() ? "finished score"
                                          : "score differs from the scores call") +
                   at + ": " + std::to_string(s32[x]) + " vs " + std::to_string(oracle[x]);
          const bool vis = attn_visible(c, i, j);
          if (!vis && !c.softmax && s32[x] != -std::numeric_limits<float>::infinity())
            return "masked score is not -Inf" + at;
          if (!vis && c.softmax && to_bits(s32[x]) != 0) return "masked weight is not +0" + at;
          if (vis) sum += s32[x], any = true;
        }
        if (!f16 && c.softmax && any && !(std::fabs(sum - 1.0) <= 1e-4))
          return "weights do not sum to 1 at h=" + std::to_string(h) + " i=" + std::to_string(i);
      }
    for (std::size_t x = 0; x < s_elems; ++x)
      if (!in_s[x] && (f16 ? s16[x] != kGuard16 : to_bits(s32[x]) != kGuardBits))
        return "wrote outside S at " + std::to_string(x);
    return "";
  }

 private:
  // Bits, not values: the poison is NaN.
  template <class T>
  static bool same(const std::vector<T> &a, const std::vector<T> &b) {
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
  }
  static std::size_t extent(std::size_t heads, std::size_t rows, std::size_t cols, std::size_t hs,
                            std::size_t rs) {
    return (heads - 1) * hs + (rows - 1) * rs + cols;
  }
  template <class F>
  void fill(std::size_t heads, std::size_t rows, std::size_t hs, std::size_t rs, F f) {
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t t = 0; t < c.d; ++t) f(h * hs + i * rs + t);
  }
  void set_scales(unsigned mode, std::size_t heads, std::size_t rows, std::vector<float> *v,
                  std::size_t *hs, std::size_t *rs, float amp, std::mt19937 &rng) {
    const std::size_t pad = c.layout % 3 == 1 ? 2 : 0;
    if (mode % 3 == 0)
      *rs = 1, *hs = rows + pad;
    else if (mode % 3 == 1)
      *rs = 0, *hs = 1 + pad;
    else
      *rs = 0, *hs = 0;
    v->assign(sc_off + (heads - 1) * *hs + (rows - 1) * *rs + 1 + 8,
              std::numeric_limits<float>::quiet_NaN());
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t i = 0; i < rows; ++i)
        (*v)[sc_off + h * *hs + i * *rs] =
            amp * (0.004f + static_cast<float>(rng() % 1000) * 3e-5f);
  }
};

// A key cache over owned memory.
struct CacheMem {
  std::vector<unsigned char> mem;
  attnscore_cache *cache = nullptr;
};

// A cache of K's dtype, heads and d, holding `capacity` tokens, made at the current level.
inline std::string make_cache(const AttnData &a, std::size_t capacity, CacheMem *out) {
  const attnscore_cache_shape shape{ATTNSCORE_CACHE_KEYS, a.c.dtype, a.c.hkv, capacity, a.c.d};
  const std::size_t bytes = attnscore_cache_bytes(&shape);
  if (bytes == 0) return "cache_bytes is 0";
  out->mem.assign(bytes + 1, 0xcd);
  // At an odd address: any alignment is accepted.
  const attnscore_status st = attnscore_cache_init(out->mem.data() + 1, bytes, &shape, &out->cache);
  if (st != ATTNSCORE_OK) return std::string("cache_init: ") + attnscore_status_string(st);
  return "";
}

// Appends K's tokens [from, to) in pieces of the sizes in `pieces` (cycled).
inline std::string append_keys(const AttnData &a, attnscore_cache *cache, std::size_t from,
                               std::size_t to, const std::vector<std::size_t> &pieces) {
  for (std::size_t j = from, p = 0; j < to; ++p) {
    const std::size_t n = std::min(pieces[p % pieces.size()], to - j);
    const attnscore_tensor src = a.k_tensor(j);
    const attnscore_status st = attnscore_cache_append(cache, n, &src);
    if (st != ATTNSCORE_OK) return std::string("cache_append: ") + attnscore_status_string(st);
    j += n;
    if (attnscore_cache_size(cache) != j) return "cache_size is not the tokens appended";
  }
  return "";
}

}  // namespace testing

#endif  // ATTNSCORE_TESTS_ATTN_CASE_HPP
