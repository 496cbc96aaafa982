// SPDX-License-Identifier: Apache-2.0
// The attention output O = softmax(S) V (attnscore_attention_output): every element within the
// documented bound of the exact output on the converted inputs (a long-double oracle of this
// file's own, no library score call), lse against the same oracle, caches as raw inputs bit for
// bit, the same bits for every thread count and task order, f16 O as the f32 O rounded once, and
// the statuses in their documented order with nothing written on error.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "attn_case.hpp"
#include "attnscore/attnscore.h"
#include "parallel_hook.hpp"
#include "support.hpp"

namespace {

using LD = long double;
using testing::from_bits;
using testing::kGuard16;
using testing::kGuardBits;
using testing::to_bits;

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr attnscore_dtype kF32 = ATTNSCORE_DTYPE_F32, kF16 = ATTNSCORE_DTYPE_F16,
                          kBF16 = ATTNSCORE_DTYPE_BF16, kS8 = ATTNSCORE_DTYPE_S8;
const attnscore_dtype kAllDtypes[] = {kF32, kF16, kBF16, kS8};
constexpr LD kU = 0x1p-24L;  // f32's unit roundoff

LD gamma(LD m) { return m * kU / (1 - m * kU); }

std::size_t elem_bytes(attnscore_dtype t) { return t == kF32 ? 4 : t == kS8 ? 1 : 2; }

const char *dtype_name(attnscore_dtype t) {
  return t == kF32 ? "f32" : t == kF16 ? "f16" : t == kBF16 ? "bf16" : "s8";
}

// How the case's values are drawn.
enum class Pattern {
  kRandom,  // Q, K and V uniform
  kRising,  // scores rising along the keys: every chunk has a new maximum (each one rescales)
  kSpread,  // scores spread over about +-50: weights far below e^-87 underflow
};

struct OutCase {
  attnscore_dtype qk = kF32, v = kF32, o = kF32;
  std::size_t hq = 1, hkv = 1, n_q = 1, n_k = 1, d = 1, dv = 0;  // dv 0: d
  unsigned mask = 0;
  std::size_t p0 = 0, w = 0;
  float softcap = 0.0f, scale = 0.0f;
  enum Sinks { kNone, kFinite, kSomeNoSink, kDominant } sinks = kNone;
  bool v_head_scale = false;  // s8 V: one scale per head instead of per key
  Pattern pattern = Pattern::kRandom;
  float v_amp = 1.0f;
  std::size_t dv_() const { return dv == 0 ? d : dv; }
};

std::string describe(const OutCase &c) {
  return std::string(dtype_name(c.qk)) + " V " + dtype_name(c.v) + " O " + dtype_name(c.o) +
         " heads " + std::to_string(c.hq) + "/" + std::to_string(c.hkv) + " " +
         std::to_string(c.n_q) + "x" + std::to_string(c.n_k) + " d " + std::to_string(c.d) +
         " dv " + std::to_string(c.dv_()) + " mask " + std::to_string(c.mask) + " p0 " +
         std::to_string(c.p0) + " w " + std::to_string(c.w) + " softcap " +
         std::to_string(c.softcap) + " sinks " + std::to_string(c.sinks) + " pattern " +
         std::to_string(static_cast<int>(c.pattern)) + " v_amp " + std::to_string(c.v_amp) +
         (c.v_head_scale ? " V scale per head" : "");
}

bool built(const OutCase &c) {
  return testing::dtype_built(c.qk) && testing::dtype_built(c.v) && testing::dtype_built(c.o);
}

// A heads x rows x cols tensor of any dtype, head-major with padded rows and heads in a buffer of
// NaN (0xff bytes) poison, and the values its elements stand for: the exact conversion of f16
// and bf16; s8 dequantized as the output call does for V (float(q) * scale, rounded once) or
// exactly (q * scale) for Q and K, whose scores the library forms from exact integer sums.
struct Tensor {
  attnscore_dtype dtype = kF32;
  std::size_t heads = 0, rows = 0, cols = 0, hs = 0, rs = 0, off = 0;
  std::vector<unsigned char> mem;
  std::vector<float> scales;  // s8: per row (srs 1) or per head (srs 0)
  std::size_t shs = 0, srs = 0;
  std::vector<LD> val;  // dense heads x rows x cols

  LD at(std::size_t h, std::size_t i, std::size_t t) const {
    return val[(h * rows + i) * cols + t];
  }
  const void *data() const { return mem.data() + off; }
  // Rows [row0, ...) of every head as a descriptor tensor (an append source when row0 > 0).
  attnscore_tensor view(std::size_t row0 = 0) const {
    attnscore_tensor t;
    std::memset(&t, 0, sizeof t);
    t.data = mem.data() + off + row0 * rs * elem_bytes(dtype);
    t.dtype = dtype, t.head_stride = hs, t.row_stride = rs;
    if (dtype == kS8)
      t.scale = scales.data() + 1 + row0 * srs, t.scale_head_stride = shs, t.scale_row_stride = srs;
    return t;
  }
};

Tensor make_tensor(attnscore_dtype dtype, std::size_t heads, std::size_t rows, std::size_t cols,
                   bool per_head_scale, bool dequant_f32,
                   const std::function<float(std::size_t, std::size_t, std::size_t)> &gen) {
  Tensor t;
  t.dtype = dtype, t.heads = heads, t.rows = rows, t.cols = cols;
  t.rs = cols + 1 + cols % 3, t.hs = rows * t.rs + 2, t.off = 3 * elem_bytes(dtype);
  t.mem.assign(t.off + (heads * t.hs + 8) * elem_bytes(dtype), 0xff);
  t.val.resize(heads * rows * cols);
  std::vector<float> x(heads * rows * cols);
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t c = 0; c < cols; ++c) x[(h * rows + i) * cols + c] = gen(h, i, c);
  if (dtype == kS8) {  // symmetric, one scale per row (or per head); element 0 of scales poison
    t.srs = per_head_scale ? 0 : 1, t.shs = per_head_scale ? 1 : rows + 1;
    t.scales.assign(2 + heads * t.shs, kNaN);
  }
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t i = 0; i < rows; ++i) {
      float sc = 0.0f;
      if (dtype == kS8) {
        float mx = 0.0f;
        for (std::size_t r = per_head_scale ? 0 : i; r < (per_head_scale ? rows : i + 1); ++r)
          for (std::size_t c = 0; c < cols; ++c)
            mx = std::max(mx, std::fabs(x[(h * rows + r) * cols + c]));
        sc = std::max(mx / 127.0f, 1e-6f);
        t.scales[1 + h * t.shs + i * t.srs] = sc;
      }
      for (std::size_t c = 0; c < cols; ++c) {
        const std::size_t e = (h * rows + i) * cols + c,
                          at = t.off / elem_bytes(dtype) + h * t.hs + i * t.rs + c;
        const float v = x[e];
        switch (dtype) {
          case kF32:
            std::memcpy(t.mem.data() + at * 4, &v, 4);
            t.val[e] = v;
            break;
          case kF16:
          case kBF16: {
            const std::uint16_t b =
                dtype == kF16 ? testing::f16_nearest(v) : testing::bf16_nearest(v);
            std::memcpy(t.mem.data() + at * 2, &b, 2);
            t.val[e] = dtype == kF16 ? testing::f16_value(b) : testing::bf16_value(b);
            break;
          }
          default: {
            const long r = std::lround(std::max(-128.0f, std::min(127.0f, v / sc)));
            const auto q = static_cast<std::int8_t>(r);
            t.mem[at] = static_cast<unsigned char>(q);
            const float deq = static_cast<float>(q) * sc;  // rounded once, as the call does
            t.val[e] = dequant_f32 ? static_cast<LD>(deq) : static_cast<LD>(q) * sc;
          }
        }
      }
    }
  return t;
}

// The mask by its definition: row i at position p0 + i.
bool visible(const OutCase &c, std::size_t i, std::size_t j) {
  const std::size_t p = c.p0 + i;
  bool v = true;
  if (c.mask & (ATTNSCORE_MASK_CAUSAL | ATTNSCORE_MASK_WINDOW)) v = j <= p;
  if (c.mask & ATTNSCORE_MASK_WINDOW) v = v && j + c.w > p;
  return v;
}

// The nearest float to 1/sqrt(d), the documented default scale.
float default_scale(std::size_t d) {
  return static_cast<float>(1.0L / std::sqrt(static_cast<LD>(d)));
}

// What a call wrote: the whole O and lse buffers, guards included.
struct Result {
  std::vector<unsigned char> o;
  std::vector<float> lse;
  bool operator==(const Result &r) const {  // bits (the guards are NaN)
    return o == r.o && r.lse.size() == lse.size() &&
           std::memcmp(lse.data(), r.lse.data(), lse.size() * sizeof(float)) == 0;
  }
};

// A cache over owned memory, at an odd address (any alignment is accepted).
struct Cache {
  std::vector<unsigned char> mem;
  attnscore_cache *cache = nullptr;
};

attnscore_cache_shape cache_shape(attnscore_cache_kind kind, attnscore_dtype dtype,
                                  std::size_t heads, std::size_t capacity, std::size_t d) {
  attnscore_cache_shape s;
  s.kind = kind, s.dtype = dtype, s.heads = heads, s.capacity = capacity, s.d = d;
  return s;
}

// A cache of the tensor's dtype, heads and cols with room for `capacity` tokens, holding its
// rows [0, n) appended in pieces of 1, 7 and 64 tokens.
std::string fill_cache(attnscore_cache_kind kind, const Tensor &t, std::size_t capacity,
                       std::size_t n, Cache *out) {
  const attnscore_cache_shape shape = cache_shape(kind, t.dtype, t.heads, capacity, t.cols);
  const std::size_t bytes = attnscore_cache_bytes(&shape);
  if (bytes == 0) return "cache_bytes is 0";
  out->mem.assign(bytes + 1, 0xcd);
  attnscore_status st = attnscore_cache_init(out->mem.data() + 1, bytes, &shape, &out->cache);
  if (st != ATTNSCORE_OK) return std::string("cache_init: ") + attnscore_status_string(st);
  const std::size_t pieces[] = {1, 7, 64};
  for (std::size_t j = 0, p = 0; j < n; ++p) {
    const std::size_t m = std::min(pieces[p % 3], n - j);
    const attnscore_tensor src = t.view(j);
    st = attnscore_cache_append(out->cache, m, &src);
    if (st != ATTNSCORE_OK) return std::string("cache_append: ") + attnscore_status_string(st);
    j += m;
  }
  return attnscore_cache_size(out->cache) == n ? "" : "cache_size is not the tokens appended";
}

// A case's inputs, its O and lse buffers' layout, and the oracle.
class OutData {
 public:
  OutCase c;
  Tensor q, k, v;
  std::vector<float> sinks;  // hq logits at [1], poison around
  std::size_t dv, o_hs, o_rs, o_elems, l_hs, l_rs, l_elems;
  static constexpr std::size_t o_off = 2, l_off = 1;

  OutData(const OutCase &c_, std::mt19937 &rng) : c(c_), dv(c_.dv_()) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const std::size_t d = c.d;
    // kRising and kSpread: Q rows constant, each key's dims about one value r_j, so that the
    // score of key j is about 20 r_j or 50 r_j (the default scale: sqrt(d) * amp * r_j).
    const float target = c.pattern == Pattern::kRising ? 20.0f : 50.0f;
    const float amp = target / std::sqrt(static_cast<float>(d));
    std::vector<float> r(c.n_k);
    for (std::size_t j = 0; j < c.n_k; ++j)
      r[j] = c.pattern == Pattern::kRising ? -1.0f + 2.0f * (j + 0.5f) / c.n_k : u(rng);
    const float qk_amp = c.softcap != 0.0f ? 3.0f : 1.0f;  // so that a softcap bites
    const bool rand = c.pattern == Pattern::kRandom;
    q = make_tensor(c.qk, c.hq, c.n_q, d, false, false, [&](std::size_t, std::size_t, std::size_t) {
      return rand ? qk_amp * u(rng) : amp * (1.0f + 0.01f * u(rng));
    });
    k = make_tensor(c.qk, c.hkv, c.n_k, d, false, false,
                    [&](std::size_t, std::size_t j, std::size_t) {
                      return rand ? qk_amp * u(rng) : r[j] + 0.02f * u(rng);
                    });
    v = make_tensor(c.v, c.hkv, c.n_k, dv, c.v_head_scale, true,
                    [&](std::size_t, std::size_t, std::size_t) { return c.v_amp * u(rng); });
    if (c.sinks != OutCase::kNone) {
      sinks.assign(c.hq + 2, kNaN);
      for (std::size_t h = 0; h < c.hq; ++h) {
        float z = 2.0f * u(rng);
        if (c.sinks == OutCase::kSomeNoSink && h % 2 == 0) z = -kInf;
        if (c.sinks == OutCase::kDominant) z = h % 2 == 0 ? 40.0f : 90.0f;
        sinks[1 + h] = z;
      }
    }
    o_rs = dv + 1, o_hs = c.n_q * o_rs + 3;
    o_elems = o_off + c.hq * o_hs + 8;
    l_rs = 2, l_hs = c.n_q * l_rs + 1;
    l_elems = l_off + c.hq * l_hs + 4;
  }

  float scale() const { return c.scale == 0.0f ? default_scale(c.d) : c.scale; }
  std::size_t o_bytes() const { return elem_bytes(c.o); }

  // The descriptor on raw K and V; O and lse at `res`'s buffers.
  attnscore_attention_desc desc(Result *res) const {
    attnscore_attention_desc a = attnscore_attention_dense(c.qk, c.hq, c.hkv, c.n_q, c.n_k, c.d);
    a.q = q.view(), a.k = k.view(), a.v = v.view();
    a.dv = c.dv;
    a.scale = c.scale, a.softcap = c.softcap, a.mask = c.mask, a.pos_offset = c.p0;
    a.window = c.w;
    a.o.dtype = c.o, a.o.head_stride = o_hs, a.o.row_stride = o_rs;
    a.o.data = res->o.data() + o_off * o_bytes();
    a.lse = res->lse.data() + l_off, a.lse_head_stride = l_hs, a.lse_row_stride = l_rs;
    a.sinks = sinks.empty() ? nullptr : sinks.data() + 1;
    return a;
  }

  // O and lse buffers holding their guards (NaN patterns no arithmetic makes).
  Result guarded() const {
    Result r;
    r.o.resize(o_elems * o_bytes());
    for (std::size_t x = 0; x < o_elems; ++x) {
      if (c.o == kF16)
        std::memcpy(r.o.data() + 2 * x, &kGuard16, 2);
      else
        std::memcpy(r.o.data() + 4 * x, &kGuardBits, 4);
    }
    r.lse.assign(l_elems, from_bits(kGuardBits));
    return r;
  }

  bool in_o(std::size_t x) const {
    if (x < o_off) return false;
    const std::size_t e = x - o_off, h = e / o_hs, i = e % o_hs / o_rs, t = e % o_hs % o_rs;
    return h < c.hq && i < c.n_q && t < dv;
  }
  bool in_lse(std::size_t x) const {
    if (x < l_off) return false;
    const std::size_t e = x - l_off, h = e / l_hs, i = e % l_hs / l_rs;
    return h < c.hq && i < c.n_q && e % l_hs % l_rs == 0;
  }
  LD o_at(const Result &r, std::size_t h, std::size_t i, std::size_t t) const {
    const std::size_t x = o_off + h * o_hs + i * o_rs + t;
    if (c.o == kF16) {
      std::uint16_t b;
      std::memcpy(&b, r.o.data() + 2 * x, 2);
      return testing::f16_value(b);
    }
    float f;
    std::memcpy(&f, r.o.data() + 4 * x, 4);
    return f;
  }
  float lse_at(const Result &r, std::size_t h, std::size_t i) const {
    return r.lse[l_off + h * l_hs + i * l_rs];
  }

  // Runs the call with K and V raw or from the caches given, through `par`; the buffers it
  // wrote into *res. Fails when the call does, writes outside O and lse, or changes an input.
  std::string run(const attnscore_cache *kc, const attnscore_cache *vc,
                  const attnscore_parallel *par, Result *res, void *ws = nullptr,
                  std::size_t ws_bytes = 0) const {
    *res = guarded();
    attnscore_attention_desc a = desc(res);
    a.workspace = ws, a.workspace_bytes = ws_bytes;
    if (kc != nullptr) std::memset(&a.k, 0, sizeof a.k), a.k_cache = kc;
    if (vc != nullptr) std::memset(&a.v, 0, sizeof a.v), a.v_cache = vc;
    const std::vector<unsigned char> qm = q.mem, km = k.mem, vm = v.mem;
    const std::vector<float> qs = q.scales, ks = k.scales, vs = v.scales, zs = sinks;
    const attnscore_status st = attnscore_attention_output(&a, par);
    if (st != ATTNSCORE_OK) return std::string("status: ") + attnscore_status_string(st);
    if (qm != q.mem || km != k.mem || vm != v.mem || !same_bits(qs, q.scales) ||
        !same_bits(ks, k.scales) || !same_bits(vs, v.scales) || !same_bits(zs, sinks))
      return "an input was modified";
    const Result g = guarded();
    const std::size_t eb = o_bytes();
    for (std::size_t x = 0; x < o_elems; ++x)
      if (!in_o(x) && std::memcmp(res->o.data() + x * eb, g.o.data() + x * eb, eb) != 0)
        return "wrote outside O at element " + std::to_string(x);
    for (std::size_t x = 0; x < l_elems; ++x)
      if (!in_lse(x) && to_bits(res->lse[x]) != kGuardBits)
        return "wrote outside lse at element " + std::to_string(x);
    return "";
  }

  // Every element of O and lse against the oracle and the documented bound (see check_row).
  std::string check(const Result &r) const {
    for (std::size_t h = 0; h < c.hq; ++h)
      for (std::size_t i = 0; i < c.n_q; ++i) {
        const std::string e = check_row(r, h, i);
        if (!e.empty()) return e + " at h=" + std::to_string(h) + " i=" + std::to_string(i);
      }
    return "";
  }

 private:
  static bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  }

  // Row (h, i) in long double on the converted inputs: scores s_j (scale, then softcap), their
  // error bounds delta_j as the scores contract gives them, then
  //   |O^ - O| <= ((e^(2 delta) - 1) + 2 (R + 1)(eps_e + 2u) + 2u ln(n + 1)
  //                + 2 gamma(n + 3R + 4)) * max_j |v_j| (+ 2^-11 |O| for f16 O) + n 2^-125
  // per element (max_j |v_j| over the row's keys, in that element's column), with a factor 2 of
  // slack on the whole bound. R (chunks seen - 1, + 1 with a sink) is taken as an upper bound:
  // n keys in a row meet at most ceil(n / 256) + 1 chunks of 256 keys or more. The f16 O term
  // also has 2^-25 for binary16's subnormal spacing. lse has no documented bound: it is checked
  // against delta + the same relative terms of the denominator + 2u (|ln L| + |lse|) (the final
  // log and addition), with the same factor 2.
  std::string check_row(const Result &r, std::size_t h, std::size_t i) const {
    const std::size_t hk = h / (c.hq / c.hkv), d = c.d;
    const LD sc = scale();
    const bool s8 = c.qk == kS8;
    std::vector<LD> s;
    std::vector<std::size_t> keys;
    LD delta = 0, m = -INFINITY;
    for (std::size_t j = 0; j < c.n_k; ++j) {
      if (!visible(c, i, j)) continue;
      LD dot = 0, gauge = 0;
      for (std::size_t t = 0; t < d; ++t) {
        const LD p = q.at(h, i, t) * k.at(hk, j, t);
        dot += p, gauge += std::fabs(p);
      }
      LD sj = sc * dot, dj;
      if (s8)  // exact integer sums, then three roundings: fl(acc), the scale product, the score
        dj = gamma(3) * std::fabs(sj) + 2 * FLT_MIN;
      else
        dj = gamma(d + 1) * std::fabs(sc) * gauge + (2 * d + 2) * FLT_MIN * std::max<LD>(1, sc);
      if (c.softcap != 0.0f) {
        sj = c.softcap * std::tanh(sj / c.softcap);  // 1-Lipschitz: dj carries over
        dj += 4 * kU * c.softcap;
      }
      s.push_back(sj), keys.push_back(j);
      delta = std::max(delta, dj), m = std::max(m, sj);
    }
    const bool sink = !sinks.empty() && sinks[1 + h] != -kInf;
    if (sink) m = std::max<LD>(m, sinks[1 + h]);
    const std::size_t vis = keys.size(), n = vis + sink;
    const LD R = static_cast<LD>((vis + 255) / 256 + sink);
    LD L = sink ? std::exp(static_cast<LD>(sinks[1 + h]) - m) : 0;
    std::vector<LD> w(vis);
    for (std::size_t x = 0; x < vis; ++x) w[x] = std::exp(s[x] - m), L += w[x];
    const LD eps_e = 4 * kU;
    const LD rel_l = (std::exp(2 * delta) - 1) + 2 * (R + 1) * (eps_e + 2 * kU) +
                     2 * gamma(static_cast<LD>(n) + 3 * R + 4);
    const LD factor = rel_l + 2 * kU * std::log(static_cast<LD>(n) + 1);
    for (std::size_t t = 0; t < dv; ++t) {
      LD num = 0, vmax = 0;
      for (std::size_t x = 0; x < vis; ++x) {
        const LD vj = v.at(hk, keys[x], t);
        num += w[x] * vj, vmax = std::max(vmax, std::fabs(vj));
      }
      const LD want = L == 0 ? 0 : num / L, got = o_at(r, h, i, t);
      LD bound = factor * vmax + static_cast<LD>(n) * 0x1p-125L;
      if (c.o == kF16) bound += 0x1p-11L * std::fabs(want) + 0x1p-25L;
      bound *= 2;  // slack
      if (!(std::fabs(got - want) <= bound))
        return "O[" + std::to_string(t) + "] = " + std::to_string(static_cast<double>(got)) +
               ", exact " + std::to_string(static_cast<double>(want)) + ", error " +
               std::to_string(static_cast<double>(std::fabs(got - want))) + " > bound " +
               std::to_string(static_cast<double>(bound));
    }
    const float lse = lse_at(r, h, i);
    if (n == 0) return lse == -kInf ? "" : "lse of a row with no key and no sink is not -Inf";
    const LD want = m + std::log(L);
    const LD bound =
        2 * (delta + rel_l + 2 * kU * (std::fabs(std::log(L)) + std::fabs(want)) + FLT_MIN);
    if (!(std::fabs(lse - want) <= bound))
      return "lse = " + std::to_string(lse) + ", exact " +
             std::to_string(static_cast<double>(want)) + ", bound " +
             std::to_string(static_cast<double>(bound));
    return "";
  }
};

// A case checked against the oracle, then with K, V or both from caches: the raw call's bits.
void check_case(const OutCase &c, std::mt19937 &rng, bool caches = true) {
  if (!built(c)) return;
  INFO(describe(c));
  const OutData data(c, rng);
  Result raw;
  REQUIRE(data.run(nullptr, nullptr, nullptr, &raw) == "");
  CHECK(data.check(raw) == "");
  if (!caches) return;
  Cache kc, vc;
  REQUIRE(fill_cache(ATTNSCORE_CACHE_KEYS, data.k, c.n_k + 3, c.n_k, &kc) == "");
  // A value cache keeps one scale per token: s8 V with a scale per head has none to append.
  const bool v_cache = !c.v_head_scale;
  REQUIRE((!v_cache || fill_cache(ATTNSCORE_CACHE_VALUES, data.v, c.n_k + 5, c.n_k, &vc) == ""));
  // A key cache sums the scores in the prefill order at every row count; raw K's decode (at most
  // kDecodeRows query rows, not int8) in its own order (docs/contract.md). There K from a cache
  // is held to the bound, and with V from a cache too, to the K cache's bits.
  const bool k_order = c.qk != kS8 && c.n_q <= attnscore::kDecodeRows;
  using Src = std::pair<const attnscore_cache *, const attnscore_cache *>;  // K, V
  Result k_cached;
  for (const Src &src : {Src{kc.cache, nullptr}, Src{nullptr, vc.cache}, Src{kc.cache, vc.cache}}) {
    if (src.second != nullptr && !v_cache) continue;
    Result got;
    REQUIRE(data.run(src.first, src.second, nullptr, &got) == "");
    INFO("K " << (src.first ? "cache" : "raw") << ", V " << (src.second ? "cache" : "raw"));
    if (src.first == nullptr || !k_order) {
      CHECK(got == raw);
    } else if (src.second == nullptr) {
      CHECK(data.check(got) == "");
      k_cached = got;
    } else {
      CHECK(got == k_cached);
    }
  }
}

const std::size_t kDims[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10,  11,
                             12, 13, 14, 15, 16, 17, 64, 80, 96, 128, 256};

}  // namespace

TEST_CASE("output: every d and dv within the bound, caches bit for bit", "[output][api]") {
  std::mt19937 rng(101);
  const std::size_t nd = sizeof kDims / sizeof kDims[0];
  for (std::size_t x = 0; x < nd; ++x)
    for (std::size_t dv : {kDims[x], kDims[(x * 7 + 3) % nd]}) {
      OutCase c;
      c.qk = kAllDtypes[x % 4], c.v = kAllDtypes[(x + 1 + dv) % 4];
      c.o = x % 2 ? kF16 : kF32;
      c.hq = 2, c.hkv = 1, c.n_q = 2, c.n_k = 5 + x % 4, c.d = kDims[x], c.dv = dv;
      c.mask = x % 3 == 0 ? ATTNSCORE_MASK_CAUSAL : 0, c.p0 = 3;
      check_case(c, rng);
    }
}

TEST_CASE("output: every Q/K, V and O dtype, s8 scales per key and per head", "[output][api]") {
  std::mt19937 rng(202);
  for (attnscore_dtype qk : kAllDtypes)
    for (attnscore_dtype v : kAllDtypes)
      for (attnscore_dtype o : {kF32, kF16})
        for (bool head_scale : {false, true}) {
          if (head_scale && v != kS8) continue;
          OutCase c;
          c.qk = qk, c.v = v, c.o = o, c.v_head_scale = head_scale;
          c.hq = 4, c.hkv = 2, c.n_q = 3, c.n_k = 300, c.d = 24, c.dv = 20;
          c.mask = ATTNSCORE_MASK_CAUSAL, c.p0 = 290, c.sinks = OutCase::kFinite;
          check_case(c, rng);
        }
}

TEST_CASE("output: chunk edges, groups, masks, sinks and softcap", "[output][api]") {
  std::mt19937 rng(303);
  const std::size_t n_ks[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 255, 256, 257, 511, 512, 513};
  const std::size_t groups[] = {1, 2, 4, 5, 8, 16};
  const OutCase::Sinks sinks[] = {OutCase::kNone, OutCase::kFinite, OutCase::kSomeNoSink,
                                  OutCase::kDominant};
  std::size_t x = 0;
  for (std::size_t n_k : n_ks)
    for (unsigned mask : {0u, ATTNSCORE_MASK_CAUSAL, ATTNSCORE_MASK_WINDOW}) {
      ++x;
      OutCase c;
      c.qk = kAllDtypes[x % 4], c.v = kAllDtypes[(x / 4) % 4], c.o = x % 3 ? kF32 : kF16;
      c.hkv = 1 + x % 2, c.hq = c.hkv * groups[x % 6], c.n_q = 3, c.n_k = n_k;
      c.d = 16, c.dv = 24, c.mask = mask;
      c.p0 = mask ? n_k - std::min<std::size_t>(n_k, 2) : 0;  // the last rows see every key
      c.w = n_k > 200 ? 300 : 3;
      c.sinks = sinks[x % 4], c.softcap = x % 5 == 0 ? 5.0f : 0.0f;
      c.scale = x % 7 == 0 ? -0.3f : 0.0f;
      check_case(c, rng);
    }
}

// A window ahead of every key: positions p0 + i past n_k + w - 1 see nothing. With no sink O is 0
// and lse -Inf; with one, O is 0 and lse the sink. The other rows of the same blocks as usual.
TEST_CASE("output: fully masked rows give O = 0, lse -Inf or the sink", "[output][api]") {
  std::mt19937 rng(404);
  for (OutCase::Sinks s : {OutCase::kNone, OutCase::kFinite, OutCase::kSomeNoSink})
    for (std::size_t n_q : {12, 40}) {
      OutCase c;
      c.hq = 4, c.hkv = 2, c.n_q = n_q, c.n_k = 20, c.d = 8, c.dv = 5;
      c.mask = ATTNSCORE_MASK_WINDOW, c.w = 3, c.p0 = 15, c.sinks = s;
      check_case(c, rng);
      c.p0 = 400, c.qk = kS8, c.v = kF16;  // every row masked
      check_case(c, rng);
    }
}

TEST_CASE("output: rescaled every chunk, weights underflowing, large values", "[output][api]") {
  std::mt19937 rng(505);
  for (Pattern pat : {Pattern::kRising, Pattern::kSpread})
    for (attnscore_dtype qk : kAllDtypes)
      for (std::size_t n_k : {257, 513, 1100}) {
        OutCase c;
        c.qk = qk, c.v = qk == kF16 ? kF16 : kBF16, c.pattern = pat;
        c.hq = 2, c.hkv = 1, c.n_q = 2, c.n_k = n_k, c.d = 32, c.dv = 16;
        c.v_amp = qk == kF16 ? 1000.0f : 1e30f;  // f16 V stops at 65504
        c.sinks = n_k == 513 ? OutCase::kFinite : OutCase::kNone;
        check_case(c, rng, false);
        c.v = kF32, c.mask = ATTNSCORE_MASK_CAUSAL, c.p0 = n_k - 2;
        check_case(c, rng, false);
      }
}

TEST_CASE("output: f16 O is the f32 O rounded once", "[output][api]") {
  std::mt19937 rng(606);
  for (attnscore_dtype qk : kAllDtypes)
    for (attnscore_dtype v : kAllDtypes) {
      OutCase c;
      c.qk = qk, c.v = v, c.hq = 4, c.hkv = 2, c.n_q = 5, c.n_k = 270, c.d = 40, c.dv = 33;
      c.mask = ATTNSCORE_MASK_CAUSAL, c.p0 = 260, c.sinks = OutCase::kFinite;
      c.o = kF16;
      if (!built(c)) continue;
      INFO(describe(c));
      const OutData h(c, rng);
      OutData f = h;
      f.c.o = kF32;
      Result r16, r32;
      REQUIRE(h.run(nullptr, nullptr, nullptr, &r16) == "");
      REQUIRE(f.run(nullptr, nullptr, nullptr, &r32) == "");
      std::vector<std::uint16_t> want(f.o_elems), got(f.o_elems);
      REQUIRE(attnscore_convert(f.o_elems, kF32, r32.o.data(), kF16, want.data()) == ATTNSCORE_OK);
      std::memcpy(got.data(), r16.o.data(), r16.o.size());
      for (std::size_t x = 0; x < f.o_elems; ++x)
        if (f.in_o(x) && got[x] != want[x]) FAIL("element " << x << " differs");
      CHECK(std::memcmp(r16.lse.data(), r32.lse.data(), r16.lse.size() * sizeof(float)) == 0);
    }
}

namespace {

// The hook orders the parallel tests run at a thread count: std::threads up to 3, where they start.
std::vector<testing::Hook::Order> hook_orders(std::size_t threads) {
  std::vector<testing::Hook::Order> o = {testing::Hook::kForward, testing::Hook::kReverse,
                                         testing::Hook::kShuffled};
  if (threads <= 3 && testing::threads_available()) o.push_back(testing::Hook::kThreads);
  return o;
}

}  // namespace

// Every thread count and task order, and keys split through a workspace where the blocks are
// fewer than the threads and the keys span several segments: the single-threaded bits each time,
// the split taken whenever the workspace is given, none with half of it.
TEST_CASE("output: the same bits for every thread count, task order and workspace",
          "[output][parallel][api]") {
  std::mt19937 rng(707);
  OutCase cases[5];
  cases[0].hq = 8, cases[0].hkv = 2, cases[0].n_q = 37, cases[0].n_k = 600, cases[0].d = 64;
  cases[0].mask = ATTNSCORE_MASK_CAUSAL, cases[0].p0 = 570, cases[0].sinks = OutCase::kFinite;
  cases[1] = cases[0];
  cases[1].qk = kS8, cases[1].v = kBF16, cases[1].o = kF16, cases[1].dv = 48;
  cases[1].n_q = 1, cases[1].hq = 16, cases[1].mask = ATTNSCORE_MASK_WINDOW, cases[1].w = 300;
  // Three segments of keys on one KV head: decode, causal rows, a window.
  cases[2].qk = kF16, cases[2].hq = 4, cases[2].n_k = 5000, cases[2].d = 64;
  cases[3] = cases[2];
  cases[3].qk = kF32, cases[3].v = kBF16, cases[3].o = kF16, cases[3].hq = 2, cases[3].n_q = 3;
  cases[3].mask = ATTNSCORE_MASK_CAUSAL, cases[3].p0 = 4300, cases[3].sinks = OutCase::kFinite;
  cases[4] = cases[2];
  cases[4].qk = kS8, cases[4].v = kS8, cases[4].hq = 1, cases[4].n_k = 2 * 2048 + 1;
  cases[4].dv = 40, cases[4].mask = ATTNSCORE_MASK_WINDOW, cases[4].w = 2100, cases[4].p0 = 4096;
  CHECK(attnscore_attention_output_workspace(nullptr, 4) == 0);
  for (const OutCase &c : cases) {
    if (!built(c)) continue;
    INFO(describe(c));
    const bool splits = c.n_k > ATTNSCORE_ATTN_SPLIT_KEYS;
    const OutData data(c, rng);
    Result want, tmp;
    REQUIRE(data.run(nullptr, nullptr, nullptr, &want) == "");
    CHECK(data.check(want) == "");
    const attnscore_attention_desc a = data.desc(&tmp);
    for (std::size_t threads = 1; threads <= 16; ++threads) {
      // The long cases at fewer thread counts: they run for the emulated CPUs too.
      if (splits && threads > 3 && threads != 5 && threads != 16) continue;
      const std::size_t bytes = attnscore_attention_output_workspace(&a, threads);
      const bool split = splits && threads > 1;  // else only a float prefill packs K there
      INFO("threads " << threads << " workspace " << bytes);
      REQUIRE((bytes > 0) == (split || (c.qk != kS8 && c.n_q > 3)));
      std::vector<unsigned char> ws(bytes + 1);
      for (testing::Hook::Order order : hook_orders(threads))
        for (std::size_t off : {0, 1, 2}) {  // none, then at two alignments
          if (off > 0 && bytes == 0) continue;
          INFO("order " << order << " workspace offset " << off);
          testing::Hook h{order};
          const attnscore_parallel par{testing::hook_parallel_for, &h, threads};
          Result got;
          REQUIRE(data.run(nullptr, nullptr, &par, &got, off > 0 ? ws.data() + off - 1 : nullptr,
                           off > 0 ? bytes : 0) == "");
          CHECK(h.calls == 1);
          CHECK(h.tasks >= (off > 0 && split ? 2 : 1));
          CHECK(h.tasks <= threads);
          CHECK(got == want);
        }
      if (!split) continue;
      testing::Hook h{testing::Hook::kForward};
      const attnscore_parallel par{testing::hook_parallel_for, &h, threads};
      Result got;
      REQUIRE(data.run(nullptr, nullptr, &par, &got, ws.data(), bytes / 2) == "");
      CHECK(h.tasks == 1);
      CHECK(got == want);
    }
  }
}

// A prefill of f32 Q and K with the workspace the query asks for packs each KV head's K there
// once (as a key cache) instead of once per block of rows: the workspace is written, the bits
// are those of the call without it; too short for the panels, it is left alone. Decode, 16-bit and
// s8 Q, key caches and shapes with one block per KV head ask for none.
TEST_CASE("output: a prefill packs K once in the workspace, the same bits",
          "[output][parallel][api]") {
  std::mt19937 rng(808);
  // f32, bf16 and f16 Q and K; d in one chunk (f16: blocks of several panels) and in two (d 300).
  OutCase cases[4];
  cases[0].hq = 8, cases[0].hkv = 2, cases[0].n_q = 70, cases[0].n_k = 301, cases[0].d = 40;
  cases[0].dv = 24, cases[0].mask = ATTNSCORE_MASK_CAUSAL, cases[0].p0 = 231;
  cases[1] = cases[0];
  cases[1].qk = kBF16, cases[1].v = kF16, cases[1].o = kF16, cases[1].hkv = 8, cases[1].d = 300;
  cases[1].dv = 0, cases[1].mask = ATTNSCORE_MASK_WINDOW, cases[1].w = 90;
  cases[1].sinks = OutCase::kFinite;
  cases[2] = cases[0];
  cases[2].hq = 2, cases[2].hkv = 1, cases[2].n_q = 33, cases[2].n_k = 33, cases[2].mask = 0;
  cases[2].d = 300, cases[2].softcap = 20.0f;
  cases[3] = cases[0];
  cases[3].qk = kF16, cases[3].v = kBF16, cases[3].mask = ATTNSCORE_MASK_WINDOW, cases[3].w = 40;
  for (const OutCase &c : cases) {
    if (!built(c)) continue;
    INFO(describe(c));
    const OutData data(c, rng);
    Result want, tmp;
    REQUIRE(data.run(nullptr, nullptr, nullptr, &want) == "");
    CHECK(data.check(want) == "");
    const attnscore_attention_desc a = data.desc(&tmp);
    const std::size_t bytes = attnscore_attention_output_workspace(&a, 1);
    REQUIRE(bytes > 0);
    for (std::size_t threads = 1; threads <= 3; ++threads) {
      CHECK(attnscore_attention_output_workspace(&a, threads) == bytes);
      for (testing::Hook::Order order : hook_orders(threads))
        for (std::size_t off : {0, 1, 2, 3}) {  // three alignments, then too short at any
          INFO("threads " << threads << " order " << order << " offset " << off);
          const std::size_t n = off < 3 ? bytes : bytes - 65;  // the query adds 64 for alignment
          std::vector<unsigned char> ws(n + off, 0xa5);
          testing::Hook h{order};
          const attnscore_parallel par{testing::hook_parallel_for, &h, threads};
          Result got;
          REQUIRE(data.run(nullptr, nullptr, &par, &got, ws.data() + off % 3, n) == "");
          CHECK(h.calls == 1);
          CHECK(got == want);
          const bool untouched =
              std::all_of(ws.begin(), ws.end(), [](unsigned char b) { return b == 0xa5; });
          CHECK(untouched == (off == 3));
        }
    }
  }
  // What asks for no workspace: decode rows, one block per KV head, s8 Q, a key cache, and the
  // options that run engines of their own where they are available.
  OutCase c = cases[0];
  const OutData data(c, rng);
  Result tmp;
  attnscore_attention_desc a = data.desc(&tmp);
  a.n_q = 3;
  CHECK(attnscore_attention_output_workspace(&a, 1) == 0);
  a = data.desc(&tmp), a.n_q = 32, a.heads_q = 2, a.heads_kv = 2;
  CHECK(attnscore_attention_output_workspace(&a, 1) == 0);
  a = data.desc(&tmp), a.q.dtype = ATTNSCORE_DTYPE_S8, a.k.dtype = ATTNSCORE_DTYPE_S8;
  CHECK(attnscore_attention_output_workspace(&a, 1) == 0);
  a = data.desc(&tmp), a.k_cache = reinterpret_cast<const attnscore_cache *>(&a);
  CHECK(attnscore_attention_output_workspace(&a, 1) == 0);
  for (const auto &[dt, flag] : {std::make_pair(kF16, ATTNSCORE_ATTN_F16_ACCUMULATE),
                                 std::make_pair(kBF16, ATTNSCORE_ATTN_BF16_DOT)}) {
    if (!testing::dtype_built(dt)) continue;
    a = data.desc(&tmp), a.q.dtype = dt, a.k.dtype = dt, a.flags = flag;
    CHECK((attnscore_attention_output_workspace(&a, 1) == 0) ==
          (attnscore_flag_available(flag) == 1));
  }
}

namespace {

// What a fault needs: raw V (kRawV), a value cache (kCacheV), or neither (kAny).
enum FaultKind { kAny, kRawV, kCacheV };

struct Fault {
  attnscore_status status;
  FaultKind kind;
  const char *what;
  std::function<void(attnscore_attention_desc &, const attnscore_parallel **)> apply;
};

// The good descriptor with faults[i] and every later fault compatible with it, applied from the
// last back to faults[i] (so that where two touch one field, the earlier one is in force).
attnscore_attention_desc with_faults(const attnscore_attention_desc &good,
                                     const std::vector<Fault> &faults, std::size_t i,
                                     const attnscore_parallel **par) {
  attnscore_attention_desc a = good;
  const FaultKind kind = faults[i].kind == kCacheV ? kCacheV : kRawV;
  for (std::size_t j = faults.size(); j-- > i;)
    if (j == i || faults[j].kind == kAny || faults[j].kind == kind) faults[j].apply(a, par);
  return a;
}

}  // namespace

// Every status of the output call's own checks in the header's order, each given alone and with
// every later fault (so the order is pinned), nothing written (O and lse keep their guards) and
// the hook never called; the checks shared with attnscore_attention first, S ignored.
TEST_CASE("output: bad input returns its status in the documented order", "[output][api]") {
  if (!testing::dtype_built(kS8)) return;  // s8 V carries its own checks
  std::mt19937 rng(808);
  OutCase c;
  c.hq = 4, c.hkv = 2, c.n_q = 3, c.n_k = 5, c.d = 8, c.dv = 6, c.v = kS8;
  c.sinks = OutCase::kFinite;
  const OutData data(c, rng);
  Result res = data.guarded();
  const Result guards = data.guarded();
  const attnscore_attention_desc good = data.desc(&res);
  const std::size_t big = std::numeric_limits<std::size_t>::max();
  // Caches: the right one, a key cache, and value caches of other heads, dv or size.
  const auto vals = [&](std::size_t heads, std::size_t cols) {
    return make_tensor(kS8, heads, c.n_k, cols, false, true,
                       [](std::size_t, std::size_t, std::size_t) { return 0.5f; });
  };
  const Tensor v_heads = vals(1, c.dv), v_cols = vals(c.hkv, c.dv + 1);
  Cache kc, vc, vc_heads, vc_cols, vc_short;
  REQUIRE(fill_cache(ATTNSCORE_CACHE_KEYS, data.k, 8, c.n_k, &kc) == "");
  REQUIRE(fill_cache(ATTNSCORE_CACHE_VALUES, data.v, 8, c.n_k, &vc) == "");
  REQUIRE(fill_cache(ATTNSCORE_CACHE_VALUES, v_heads, 8, c.n_k, &vc_heads) == "");
  REQUIRE(fill_cache(ATTNSCORE_CACHE_VALUES, v_cols, 8, c.n_k, &vc_cols) == "");
  REQUIRE(fill_cache(ATTNSCORE_CACHE_VALUES, data.v, 8, c.n_k - 1, &vc_short) == "");
  const std::vector<std::uint64_t> junk(64, 0);  // aligned memory with no cache header
  std::vector<float> nan_sinks(c.hq, 0.0f), inf_sinks(c.hq, 0.0f);
  nan_sinks[3] = kNaN, inf_sinks[1] = kInf;
  std::vector<std::vector<float>> bad_scales;  // V's scales with one NaN, +-Inf or subnormal
  for (float x : {kNaN, kInf, -kInf, std::numeric_limits<float>::denorm_min()}) {
    bad_scales.push_back(data.v.scales);
    bad_scales.back()[1 + data.v.shs + 4] = x;  // head 1, key 4
  }
  testing::Hook hook{testing::Hook::kForward};
  const attnscore_parallel good_par{testing::hook_parallel_for, &hook, 2};
  const attnscore_parallel null_par{nullptr, nullptr, 2};
  using D = attnscore_attention_desc;
  using P = const attnscore_parallel *;
  auto *q_mem = const_cast<void *>(data.q.data());
  auto *k_mem = const_cast<void *>(data.k.data());
  auto *o_mem = good.o.data;
  std::vector<Fault> faults = {
      {ATTNSCORE_ERR_ROW_TOO_LONG, kAny, "dv", [](D &a, P *) { a.dv = 4097; }},
      {ATTNSCORE_ERR_UNKNOWN_DTYPE, kRawV, "V dtype",
       [](D &a, P *) { a.v.dtype = static_cast<attnscore_dtype>(77); }},
      {ATTNSCORE_ERR_UNKNOWN_DTYPE, kAny, "O s8", [](D &a, P *) { a.o.dtype = kS8; }},
      {ATTNSCORE_ERR_UNKNOWN_DTYPE, kAny, "O bf16", [](D &a, P *) { a.o.dtype = kBF16; }},
      {ATTNSCORE_ERR_NULL_POINTER, kAny, "O data", [](D &a, P *) { a.o.data = nullptr; }},
      {ATTNSCORE_ERR_NULL_POINTER, kRawV, "V data", [](D &a, P *) { a.v.data = nullptr; }},
      {ATTNSCORE_ERR_NULL_POINTER, kRawV, "V scale", [](D &a, P *) { a.v.scale = nullptr; }},
      {ATTNSCORE_ERR_BAD_CACHE, kCacheV, "key cache as V",
       [&](D &a, P *) { a.v_cache = kc.cache; }},
      {ATTNSCORE_ERR_BAD_CACHE, kCacheV, "no cache",
       [&](D &a, P *) { a.v_cache = reinterpret_cast<const attnscore_cache *>(junk.data()); }},
      {ATTNSCORE_ERR_SHAPE_MISMATCH, kCacheV, "cache heads",
       [&](D &a, P *) { a.v_cache = vc_heads.cache; }},
      {ATTNSCORE_ERR_SHAPE_MISMATCH, kCacheV, "cache d",
       [&](D &a, P *) { a.v_cache = vc_cols.cache; }},
      {ATTNSCORE_ERR_SHAPE_MISMATCH, kCacheV, "cache size",
       [&](D &a, P *) { a.v_cache = vc_short.cache; }},
      {ATTNSCORE_ERR_BAD_LDK, kRawV, "V row stride", [&](D &a, P *) { a.v.row_stride = c.dv - 1; }},
      {ATTNSCORE_ERR_BAD_LDS, kAny, "O row stride", [&](D &a, P *) { a.o.row_stride = c.dv - 1; }},
      {ATTNSCORE_ERR_BAD_SCALE_COUNT, kRawV, "V scale row stride",
       [](D &a, P *) { a.v.scale_row_stride = 2; }},
      {ATTNSCORE_ERR_BAD_SINK, kAny, "NaN sink", [&](D &a, P *) { a.sinks = nan_sinks.data(); }},
      {ATTNSCORE_ERR_BAD_SINK, kAny, "+Inf sink", [&](D &a, P *) { a.sinks = inf_sinks.data(); }},
      {ATTNSCORE_ERR_BAD_HEAD_STRIDE, kRawV, "V heads", [](D &a, P *) { a.v.head_stride = 1; }},
      {ATTNSCORE_ERR_BAD_HEAD_STRIDE, kAny, "O heads", [&](D &a, P *) { a.o.head_stride = c.dv; }},
      {ATTNSCORE_ERR_BAD_HEAD_STRIDE, kAny, "lse heads", [](D &a, P *) { a.lse_head_stride = 1; }},
      {ATTNSCORE_ERR_SIZE_OVERFLOW, kRawV, "V extent", [&](D &a, P *) { a.v.head_stride = big; }},
      {ATTNSCORE_ERR_SIZE_OVERFLOW, kRawV, "V scales extent",
       [&](D &a, P *) { a.v.scale_head_stride = big / 2; }},
      {ATTNSCORE_ERR_SIZE_OVERFLOW, kAny, "O extent",
       [&](D &a, P *) { a.o.head_stride = big / 8; }},
      {ATTNSCORE_ERR_SIZE_OVERFLOW, kAny, "lse extent",
       [&](D &a, P *) { a.lse_head_stride = big / 8; }},
      {ATTNSCORE_ERR_OVERLAP, kAny, "O on Q", [&](D &a, P *) { a.o.data = q_mem; }},
      {ATTNSCORE_ERR_OVERLAP, kAny, "O on K", [&](D &a, P *) { a.o.data = k_mem; }},
      {ATTNSCORE_ERR_OVERLAP, kRawV, "O on V",
       [&](D &a, P *) { a.o.data = const_cast<void *>(data.v.data()); }},
      {ATTNSCORE_ERR_OVERLAP, kCacheV, "O on the value cache",
       [&](D &a, P *) { a.v_cache = vc.cache, a.o.data = vc.mem.data() + 200; }},
      {ATTNSCORE_ERR_OVERLAP, kAny, "lse on Q",
       [&](D &a, P *) { a.lse = static_cast<float *>(q_mem) + 1; }},
      {ATTNSCORE_ERR_OVERLAP, kRawV, "lse on V's scales (those in force)",
       [](D &a, P *) { a.lse = const_cast<float *>(a.v.scale) + 1; }},
      {ATTNSCORE_ERR_OVERLAP, kAny, "lse on the sinks",
       [&](D &a, P *) { a.lse = const_cast<float *>(data.sinks.data()); }},
      {ATTNSCORE_ERR_OVERLAP, kAny, "lse on O",
       [&](D &a, P *) { a.lse = static_cast<float *>(o_mem) + 5; }},
  };
  for (const auto &s : bad_scales)
    faults.push_back({ATTNSCORE_ERR_BAD_QUANT_SCALE, kRawV, "V scale value",
                      [&](D &a, P *) { a.v.scale = s.data() + 1; }});
  faults.push_back({ATTNSCORE_ERR_NULL_POINTER, kAny, "workspace",
                    [](D &a, P *) { a.workspace = nullptr, a.workspace_bytes = 8; }});
  faults.push_back({ATTNSCORE_ERR_SIZE_OVERFLOW, kAny, "workspace extent",
                    [&](D &a, P *) { a.workspace = o_mem, a.workspace_bytes = big; }});
  faults.push_back({ATTNSCORE_ERR_OVERLAP, kAny, "workspace on Q",
                    [&](D &a, P *) { a.workspace = q_mem, a.workspace_bytes = 4; }});
  faults.push_back({ATTNSCORE_ERR_OVERLAP, kAny, "workspace on O",
                    [&](D &a, P *) { a.workspace = o_mem, a.workspace_bytes = 4; }});
  faults.push_back({ATTNSCORE_ERR_NULL_POINTER, kAny, "par", [&](D &, P *p) { *p = &null_par; }});

  const auto expect = [&](const D &a, P par, attnscore_status want) {
    hook.calls = 0;
    CHECK(attnscore_attention_output(&a, par) == want);
    CHECK(res == guards);
    CHECK(hook.calls == 0);
  };
  for (std::size_t i = 0; i < faults.size(); ++i) {
    INFO(faults[i].what);
    D a = good;
    P par = &good_par;
    faults[i].apply(a, &par);
    expect(a, par, faults[i].status);
    par = &good_par;
    a = with_faults(good, faults, i, &par);
    INFO("with every later fault");
    expect(a, par, faults[i].status);
  }

  // The checks shared with attnscore_attention come first (each with every output fault).
  const std::vector<Fault> shared = {
      {ATTNSCORE_ERR_ZERO_DIM, kAny, "d", [](D &a, P *) { a.d = 0; }},
      {ATTNSCORE_ERR_UNKNOWN_DTYPE, kAny, "Q dtype",
       [](D &a, P *) { a.q.dtype = static_cast<attnscore_dtype>(77); }},
      {ATTNSCORE_ERR_NULL_POINTER, kAny, "Q data", [](D &a, P *) { a.q.data = nullptr; }},
      {ATTNSCORE_ERR_BAD_CACHE, kAny, "value cache as K", [&](D &a, P *) { a.k_cache = vc.cache; }},
      {ATTNSCORE_ERR_HEADS_MISMATCH, kAny, "heads_kv", [](D &a, P *) { a.heads_kv = 3; }},
      {ATTNSCORE_ERR_BAD_LDQ, kAny, "Q row stride", [&](D &a, P *) { a.q.row_stride = c.d - 1; }},
      {ATTNSCORE_ERR_BAD_LDK, kAny, "K row stride", [&](D &a, P *) { a.k.row_stride = c.d - 1; }},
      {ATTNSCORE_ERR_BAD_SCALE, kAny, "scale", [](D &a, P *) { a.scale = kNaN; }},
      {ATTNSCORE_ERR_BAD_SOFTCAP, kAny, "softcap", [](D &a, P *) { a.softcap = -1.0f; }},
      {ATTNSCORE_ERR_BAD_FLAGS, kAny, "mask", [](D &a, P *) { a.mask = 4; }},
      {ATTNSCORE_ERR_BAD_WINDOW, kAny, "window",
       [](D &a, P *) { a.mask = ATTNSCORE_MASK_WINDOW, a.window = 0; }},
      {ATTNSCORE_ERR_POSITION_OVERFLOW, kAny, "position",
       [&](D &a, P *) { a.mask = ATTNSCORE_MASK_CAUSAL, a.pos_offset = big - 1; }},
      {ATTNSCORE_ERR_BAD_HEAD_STRIDE, kAny, "Q heads", [](D &a, P *) { a.q.head_stride = 1; }},
      {ATTNSCORE_ERR_SIZE_OVERFLOW, kAny, "K extent",
       [&](D &a, P *) { a.k.head_stride = big / 2; }},
  };
  for (std::size_t i = 0; i < shared.size(); ++i) {
    INFO(shared[i].what << " with every output fault");
    P par = &good_par;
    D a = with_faults(good, faults, 0, &par);
    for (std::size_t j = shared.size(); j-- > i;) shared[j].apply(a, &par);
    expect(a, par, shared[i].status);
  }

  // No-ops whatever the rest: n_k, n_q or heads_q 0.
  for (std::size_t D::*dim : {&D::n_k, &D::n_q, &D::heads_q}) {
    P par = &null_par;
    D a = with_faults(good, faults, 0, &par);
    a.*dim = 0;
    expect(a, par, ATTNSCORE_OK);
  }

  // S is not read and the softmax flag is ignored: the good call's bits either way.
  Result want;
  REQUIRE(data.run(nullptr, nullptr, nullptr, &want) == "");
  D a = good;
  a.s.data = nullptr, a.s.dtype = static_cast<attnscore_dtype>(77), a.s.row_stride = 0;
  a.flags = ATTNSCORE_ATTN_SOFTMAX;
  hook.calls = 0;
  CHECK(attnscore_attention_output(&a, &good_par) == ATTNSCORE_OK);
  CHECK(hook.calls == 1);
  CHECK(res == want);
}

// The lse rows must not overlap either: a row stride of 0 puts every row of a head on one float
// (the buffers are those of the case, so that a call that runs writes inside them).
TEST_CASE("output: lse rows that overlap are refused", "[output][api]") {
  std::mt19937 rng(809);
  OutCase c;
  c.hq = 2, c.hkv = 1, c.n_q = 3, c.n_k = 5, c.d = 8;
  const OutData data(c, rng);
  Result res = data.guarded();
  attnscore_attention_desc a = data.desc(&res);
  a.lse_row_stride = 0;
  CHECK(attnscore_attention_output(&a, nullptr) == ATTNSCORE_ERR_BAD_HEAD_STRIDE);
  a.lse_head_stride = 1;
  CHECK(attnscore_attention_output(&a, nullptr) == ATTNSCORE_ERR_BAD_HEAD_STRIDE);
  a.heads_q = 1;
  CHECK(attnscore_attention_output(&a, nullptr) == ATTNSCORE_ERR_BAD_HEAD_STRIDE);
}

TEST_CASE("output: value caches of every dtype: bytes, init, append, truncate",
          "[output][cache][api]") {
  std::mt19937 rng(909);
  for (attnscore_dtype dt : kAllDtypes) {
    if (!testing::dtype_built(dt)) continue;
    INFO(dtype_name(dt));
    OutCase c;
    c.qk = kF32, c.v = dt, c.hq = 4, c.hkv = 2, c.n_q = 3, c.n_k = 30, c.d = 8, c.dv = 12;
    c.mask = ATTNSCORE_MASK_CAUSAL, c.p0 = 27;
    const OutData data(c, rng);
    const std::size_t cap = 40;
    attnscore_cache_shape shape = cache_shape(ATTNSCORE_CACHE_VALUES, dt, c.hkv, cap, c.dv);
    const std::size_t bytes = attnscore_cache_bytes(&shape);
    REQUIRE(bytes > 0);
    std::vector<unsigned char> mem(bytes + 1);
    attnscore_cache *cache = nullptr;
    CHECK(attnscore_cache_init(mem.data() + 1, bytes - 1, &shape, &cache) ==
          ATTNSCORE_ERR_BUFFER_TOO_SMALL);
    shape.kind = static_cast<attnscore_cache_kind>(2);
    CHECK(attnscore_cache_bytes(&shape) == 0);
    CHECK(attnscore_cache_init(mem.data() + 1, bytes, &shape, &cache) == ATTNSCORE_ERR_BAD_FLAGS);
    shape.kind = ATTNSCORE_CACHE_VALUES;
    REQUIRE(attnscore_cache_init(mem.data() + 1, bytes, &shape, &cache) == ATTNSCORE_OK);
    CHECK(attnscore_cache_size(cache) == 0);

    // Appends: the statuses of a value cache, nothing appended on error.
    attnscore_tensor src = data.v.view();
    src.dtype = dt == kF32 ? kF16 : kF32;
    CHECK(attnscore_cache_append(cache, 2, &src) == ATTNSCORE_ERR_DTYPE_MISMATCH);
    src = data.v.view();
    if (dt == kS8) {
      src.scale_row_stride = 0;
      CHECK(attnscore_cache_append(cache, 2, &src) == ATTNSCORE_ERR_BAD_SCALE_COUNT);
      src = data.v.view();
    }
    src.row_stride = c.dv - 1;
    CHECK(attnscore_cache_append(cache, 2, &src) == ATTNSCORE_ERR_BAD_LDK);
    src = data.v.view();
    CHECK(attnscore_cache_append(cache, cap + 1, &src) == ATTNSCORE_ERR_CACHE_FULL);
    CHECK(attnscore_cache_size(cache) == 0);

    Result want, got;
    REQUIRE(data.run(nullptr, nullptr, nullptr, &want) == "");
    // Rows of other values first, truncated away, then the tensor's from where they were cut.
    const Tensor junk = make_tensor(dt, c.hkv, c.n_k, c.dv, false, true,
                                    [](std::size_t h, std::size_t i, std::size_t t) {
                                      return 0.25f * static_cast<float>(h + i + t % 5);
                                    });
    for (std::size_t keep : {0, 1, 11}) {
      INFO("truncated to " << keep);
      REQUIRE(attnscore_cache_truncate(cache, 0) == ATTNSCORE_OK);
      const attnscore_tensor a = data.v.view(), b = junk.view(keep);
      REQUIRE((keep == 0 || attnscore_cache_append(cache, keep, &a) == ATTNSCORE_OK));
      REQUIRE(attnscore_cache_append(cache, c.n_k - keep, &b) == ATTNSCORE_OK);
      CHECK(attnscore_cache_truncate(cache, c.n_k + 1) == ATTNSCORE_ERR_SHAPE_MISMATCH);
      REQUIRE(attnscore_cache_truncate(cache, keep) == ATTNSCORE_OK);
      CHECK(attnscore_cache_size(cache) == keep);
      const attnscore_tensor rest = data.v.view(keep);
      REQUIRE(attnscore_cache_append(cache, c.n_k - keep, &rest) == ATTNSCORE_OK);
      REQUIRE(data.run(nullptr, cache, nullptr, &got) == "");
      CHECK(got == want);
    }
  }
}
