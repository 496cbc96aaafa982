// SPDX-License-Identifier: Apache-2.0
// The attention call against a double-precision reference built from the unfused steps
// (scores, softcap, mask, softmax), at every level this CPU runs; its bad input; its exp.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attn_case.hpp"
#include "attnscore/attnscore.h"
#include "core/finish.h"
#include "support.hpp"

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();
constexpr double kU = 1.0 / (1 << 24);  // unit roundoff of f32

struct Case {
  std::size_t hq, hkv, n_q, n_k, d;
  unsigned mask;
  std::size_t p0, w;
  float softcap;
  bool softmax;
  unsigned layout;
  float scale;
};

// A strided tensor inside a poisoned buffer (`off` poison elements first, a poisoned tail).
struct Tensor {
  std::size_t heads, rows, cols, hs, rs, off;
  std::vector<float> mem;
  Tensor(std::size_t heads_, std::size_t rows_, std::size_t cols_, std::size_t hs_, std::size_t rs_,
         std::size_t off_, float poison)
      : heads(heads_), rows(rows_), cols(cols_), hs(hs_), rs(rs_), off(off_) {
    mem.assign(off + (heads - 1) * hs + (rows - 1) * rs + cols + 32, poison);
  }
  float *data() { return mem.data() + off; }
  float &at(std::size_t h, std::size_t i, std::size_t j) { return mem[off + h * hs + i * rs + j]; }
};

// The three layouts: dense head-major, padded head-major, token-major (heads inside rows).
attnscore_attention_desc make_desc(const Case &c) {
  attnscore_attention_desc a =
      attnscore_attention_dense(ATTNSCORE_DTYPE_F32, c.hq, c.hkv, c.n_q, c.n_k, c.d);
  if (c.layout % 3 == 1) {
    a.q.row_stride = c.d + 3;
    a.q.head_stride = c.n_q * a.q.row_stride + 5;
    a.k.row_stride = c.d + 1;
    a.k.head_stride = c.n_k * a.k.row_stride + 2;
    a.s.row_stride = c.n_k + 1;
    a.s.head_stride = c.n_q * a.s.row_stride + 3;
  } else if (c.layout % 3 == 2) {
    a.q.head_stride = c.d;
    a.q.row_stride = c.hq * c.d + 1;
    a.k.head_stride = c.d + 2;
    a.k.row_stride = c.hkv * (c.d + 2);
    a.s.head_stride = c.n_k;
    a.s.row_stride = c.hq * c.n_k + 2;
  }
  a.scale = c.scale;
  a.softcap = c.softcap;
  a.mask = c.mask;
  a.pos_offset = c.p0;
  a.window = c.w;
  a.flags = c.softmax ? ATTNSCORE_ATTN_SOFTMAX : 0u;
  return a;
}

// The f32 call on the descriptor with these pointers (no par: the calling thread).
attnscore_status attention_f32(attnscore_attention_desc a, const float *q, const float *k,
                               float *s) {
  a.q.data = q, a.k.data = k, a.s.data = s;
  return attnscore_attention(&a, nullptr);
}

// The mask, from its definition: row i at position p = p0 + i.
bool visible(const Case &c, std::size_t i, std::size_t j) {
  const std::size_t p = c.p0 + i;
  bool v = true;
  if (c.mask & (ATTNSCORE_MASK_CAUSAL | ATTNSCORE_MASK_WINDOW)) v = j <= p;
  if (c.mask & ATTNSCORE_MASK_WINDOW) v = v && j + c.w > p;
  return v;
}

// The binary16 output call on the same case: every element the f32 call's value `s` rounded once
// to f16 (by the tests' own oracle), nothing written outside S; "" or the first failure.
std::string check_f16_output(const Case &c, const attnscore_attention_desc &a, Tensor &q, Tensor &k,
                             Tensor &s) {
  constexpr std::uint16_t kGuard = 0x7d5a;  // a NaN pattern the call never writes
  std::vector<std::uint16_t> h16(s.mem.size(), kGuard);
  attnscore_attention_desc a16 = a;
  a16.q.data = q.data(), a16.k.data = k.data(), a16.s.data = h16.data() + s.off;
  a16.s.dtype = ATTNSCORE_DTYPE_F16;
  const attnscore_status st = attnscore_attention(&a16, nullptr);
  if (st != ATTNSCORE_OK) return std::string("f16 output status: ") + attnscore_status_string(st);
  std::vector<char> in_s(s.mem.size(), 0);
  for (std::size_t h = 0; h < c.hq; ++h)
    for (std::size_t i = 0; i < c.n_q; ++i)
      for (std::size_t j = 0; j < c.n_k; ++j) {
        const std::size_t x = s.off + h * s.hs + i * s.rs + j;
        in_s[x] = 1;
        const float want = s.mem[x];
        const std::uint16_t bits = std::isnan(want) ? 0 : testing::f16_nearest(want);
        if (std::isnan(want) ? !std::isnan(testing::f16_value(h16[x])) : h16[x] != bits)
          return "f16 output is not the f32 value rounded once at h=" + std::to_string(h) +
                 " i=" + std::to_string(i) + " j=" + std::to_string(j);
      }
  for (std::size_t x = 0; x < h16.size(); ++x)
    if (!in_s[x] && h16[x] != kGuard) return "f16 output wrote outside S at " + std::to_string(x);
  return "";
}

// The binary16-input call on the same case (Q and K hold binary16 values): bit for bit the f32
// call's output `s`, nothing written outside S; "" or the first failure.
std::string check_f16_input(const Case &c, const attnscore_attention_desc &a, Tensor &q, Tensor &k,
                            Tensor &s) {
  std::vector<std::uint16_t> qh(q.mem.size(), 0x7e00), kh(k.mem.size(), 0x7e00);
  for (std::size_t x = 0; x < q.mem.size(); ++x)
    if (!std::isnan(q.mem[x])) qh[x] = testing::f16_nearest(q.mem[x]);
  for (std::size_t x = 0; x < k.mem.size(); ++x)
    if (!std::isnan(k.mem[x])) kh[x] = testing::f16_nearest(k.mem[x]);
  std::vector<float> out(s.mem.size(), testing::from_bits(testing::kGuardBits));
  attnscore_attention_desc ah = a;
  ah.q.data = qh.data() + q.off, ah.k.data = kh.data() + k.off, ah.s.data = out.data() + s.off;
  ah.q.dtype = ah.k.dtype = ATTNSCORE_DTYPE_F16;
  const attnscore_status st = attnscore_attention(&ah, nullptr);
  if (st != ATTNSCORE_OK) return std::string("f16 input status: ") + attnscore_status_string(st);
  for (std::size_t x = 0; x < out.size(); ++x)
    if (testing::to_bits(out[x]) != testing::to_bits(s.mem[x])) {
      (void)c;
      return "f16 input differs from the f32 call at buffer index " + std::to_string(x);
    }
  return "";
}

// How run_case runs: the f32 call alone, or also the f16-output or the f16-input call.
enum class Mode { kF32, kF16Out, kF16In };

// Runs one case at the current level (and the f16 call of `mode`, checked against the f32
// call's output); "" or the first failure.
std::string run_case(const Case &c, std::mt19937 &rng, Mode mode = Mode::kF32) {
  const attnscore_attention_desc a = make_desc(c);
  const std::size_t g = c.hq / c.hkv;
  Tensor q(c.hq, c.n_q, c.d, a.q.head_stride, a.q.row_stride, c.layout % 4, kNaN);
  Tensor k(c.hkv, c.n_k, c.d, a.k.head_stride, a.k.row_stride, 1 + c.layout % 3, kNaN);
  Tensor s(c.hq, c.n_q, c.n_k, a.s.head_stride, a.s.row_stride, 2,
           testing::from_bits(testing::kGuardBits));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  // Larger entries under a softcap, so that it bites (|s| up to several times c).
  const float amp = c.softcap != 0.0f ? 3.0f : 1.0f;
  for (std::size_t h = 0; h < c.hq; ++h)
    for (std::size_t i = 0; i < c.n_q; ++i)
      for (std::size_t t = 0; t < c.d; ++t) q.at(h, i, t) = amp * dist(rng);
  for (std::size_t h = 0; h < c.hkv; ++h)
    for (std::size_t j = 0; j < c.n_k; ++j)
      for (std::size_t t = 0; t < c.d; ++t) k.at(h, j, t) = amp * dist(rng);
  if (mode == Mode::kF16In) {  // values binary16 holds
    for (float &x : q.mem)
      if (!std::isnan(x)) x = static_cast<float>(testing::f16_value(testing::f16_nearest(x)));
    for (float &x : k.mem)
      if (!std::isnan(x)) x = static_cast<float>(testing::f16_value(testing::f16_nearest(x)));
  }
  for (std::size_t h = 0; h < c.hq; ++h)
    for (std::size_t i = 0; i < c.n_q; ++i)
      for (std::size_t j = 0; j < c.n_k; ++j) s.at(h, i, j) = kNaN;
  const std::vector<float> q0 = q.mem, k0 = k.mem;

  const attnscore_status st = attention_f32(a, q.data(), k.data(), s.data());
  if (st != ATTNSCORE_OK) return std::string("status: ") + attnscore_status_string(st);
  // Bits, not values: the poison is NaN.
  if (std::memcmp(q0.data(), q.mem.data(), q0.size() * sizeof(float)) != 0 ||
      std::memcmp(k0.data(), k.mem.data(), k0.size() * sizeof(float)) != 0)
    return "an input was modified";
  // Nothing written outside S's elements.
  std::vector<char> in_s(s.mem.size(), 0);
  for (std::size_t h = 0; h < c.hq; ++h)
    for (std::size_t i = 0; i < c.n_q; ++i)
      for (std::size_t j = 0; j < c.n_k; ++j) in_s[s.off + h * s.hs + i * s.rs + j] = 1;
  for (std::size_t x = 0; x < s.mem.size(); ++x)
    if (!in_s[x] && testing::to_bits(s.mem[x]) != testing::kGuardBits)
      return "wrote outside S at " + std::to_string(x);
  if (mode != Mode::kF32) {
    const std::string err =
        mode == Mode::kF16Out ? check_f16_output(c, a, q, k, s) : check_f16_input(c, a, q, k, s);
    if (!err.empty()) return err;
  }

  const float scale = c.scale != 0.0f ? c.scale : attnscore_default_scale(c.d);
  std::vector<float> plain(c.n_q * c.n_k);
  for (std::size_t h = 0; h < c.hq; ++h) {
    const std::size_t hk = h / g;
    // The unfused first step at the same level: the scores call on this head.
    if (attnscore_scores_f32(c.n_q, c.n_k, c.d, &q.at(h, 0, 0), q.rs, &k.at(hk, 0, 0), k.rs,
                             plain.data(), c.n_k, c.scale) != ATTNSCORE_OK)
      return "scores call failed";
    for (std::size_t i = 0; i < c.n_q; ++i) {
      // Double reference of the row: scores, softcap, mask, softmax; and each score's error bound.
      std::vector<double> ref(c.n_k), tol(c.n_k), raw(c.n_k);
      double mx = -INFINITY, emax = 0;
      std::size_t n_vis = 0;
      for (std::size_t j = 0; j < c.n_k; ++j) {
        double r = 0, p = 0;
        for (std::size_t t = 0; t < c.d; ++t) {
          const double prod = static_cast<double>(q.at(h, i, t)) * k.at(hk, j, t);
          r += prod;
          p += std::fabs(prod);
        }
        r *= scale;
        p *= std::fabs(scale);
        raw[j] = r;
        double e = testing::contract_bound(c.d, p, scale);
        if (c.softcap != 0.0f) {
          // c tanh(x / c) is 1-Lipschitz; the f32 steps add about |r| u (the division) and a few
          // ulps of the result (tanh, the product).
          const double cap = c.softcap;
          r = cap * std::tanh(r / cap);
          e += 2 * kU * std::fabs(raw[j]) + 8 * kU * std::fabs(r);
        }
        ref[j] = r;
        tol[j] = e;
        if (visible(c, i, j)) {
          mx = std::max(mx, r);
          emax = std::max(emax, e);
          ++n_vis;
        }
      }
      const float *row = &s.at(h, i, 0);
      if (!c.softmax) {
        for (std::size_t j = 0; j < c.n_k; ++j) {
          const bool vis = visible(c, i, j);
          if (!vis) {
            if (row[j] != -kInf) return "masked score is not -Inf";
            continue;
          }
          if (c.softcap == 0.0f &&
              testing::to_bits(row[j]) != testing::to_bits(plain[i * c.n_k + j]))
            return "score differs from attnscore_scores_f32 at h=" + std::to_string(h) +
                   " i=" + std::to_string(i) + " j=" + std::to_string(j);
          if (!(std::fabs(row[j] - ref[j]) <= tol[j] + 1e-30))
            return "score outside its bound at h=" + std::to_string(h) + " i=" + std::to_string(i) +
                   " j=" + std::to_string(j);
        }
        continue;
      }
      double sum = 0;
      for (std::size_t j = 0; j < c.n_k; ++j)
        if (visible(c, i, j)) sum += std::exp(ref[j] - mx);
      double got_sum = 0;
      for (std::size_t j = 0; j < c.n_k; ++j) {
        if (!visible(c, i, j)) {
          if (testing::to_bits(row[j]) != 0) return "masked weight is not +0";
          continue;
        }
        const double p = std::exp(ref[j] - mx) / sum;
        // Score errors (the max's too) scale the weight by at most e^(2 emax); then rounding of
        // x = s - max (|x| u), exp (2 ulp), the 8-way sum and the final product.
        const double x = std::fabs(ref[j] - mx);
        const double rel =
            std::expm1(2 * emax + 2 * x * kU) + (static_cast<double>(n_vis) / 4 + 16) * kU;
        if (!(std::fabs(row[j] - p) <= p * rel + 4 * static_cast<double>(FLT_MIN)))
          return "weight outside its bound at h=" + std::to_string(h) + " i=" + std::to_string(i) +
                 " j=" + std::to_string(j) + ": " + std::to_string(row[j]) + " vs " +
                 std::to_string(p);
        got_sum += row[j];
      }
      if (n_vis > 0 && !(std::fabs(got_sum - 1.0) <= 1e-4)) return "weights do not sum to 1";
    }
  }
  return "";
}

std::vector<attnscore::KernelF32 const *> kernels() { return testing::usable_kernels_f32(); }

// The mask variants of the sweep: none; causal from 0 (prefill), ending at the last key (chunked
// prefill or decode on a cache), past the keys; windows of 1, 3 and a panel and a half.
void set_mask(Case &c, unsigned v, std::size_t nr) {
  const std::size_t end = c.n_k >= c.n_q ? c.n_k - c.n_q : 0;
  c.w = 0;
  switch (v % 8) {
    case 0:
      c.mask = 0, c.p0 = 12345;  // ignored without a mask
      break;
    case 1:
      c.mask = ATTNSCORE_MASK_CAUSAL, c.p0 = 0;
      break;
    case 2:
      c.mask = ATTNSCORE_MASK_CAUSAL, c.p0 = end;
      break;
    case 3:
      c.mask = ATTNSCORE_MASK_CAUSAL, c.p0 = c.n_k + 7;
      break;
    case 4:
      c.mask = ATTNSCORE_MASK_WINDOW, c.p0 = end, c.w = 1;
      break;
    case 5:
      c.mask = ATTNSCORE_MASK_WINDOW | ATTNSCORE_MASK_CAUSAL, c.p0 = 0, c.w = 3;
      break;
    case 6:
      c.mask = ATTNSCORE_MASK_WINDOW, c.p0 = end, c.w = nr + nr / 2;
      break;
    default:
      c.mask = ATTNSCORE_MASK_CAUSAL, c.p0 = end / 2;
      break;
  }
}

}  // namespace

TEST_CASE("attention: every level, heads, groups, masks, options, tile edges", "[attention][f32]") {
  const attnscore::KernelF32 *kernel = GENERATE(from_range(kernels()));
  CAPTURE(kernel->name);
  testing::CapGuard guard;
  REQUIRE(attnscore_set_max_level(kernel->level) == ATTNSCORE_OK);
  REQUIRE(std::string(attnscore_kernel_name(ATTNSCORE_DTYPE_F32)) == kernel->name);
  std::mt19937 rng(2024);
  // (heads_q, heads_kv): group sizes 1, 2 (= heads_q), 4, 8 (= heads_q), 8, 3.
  const std::size_t heads[][2] = {{3, 3}, {2, 1}, {8, 2}, {8, 1}, {16, 2}, {6, 2}};
  const std::size_t mr = kernel->mr, nr = kernel->nr;
  const std::vector<std::size_t> nqs = {1, 2, 3, mr - 1, mr, mr + 1, 2 * mr + 1, 70};
  const std::vector<std::size_t> nks = {1, nr - 1, nr, nr + 1, 2 * nr + 3, kernel->nr_dec + 1};
  const std::size_t ds[] = {1, 17, 64, 5};
  unsigned v = 0;
  for (const auto &hh : heads)
    for (std::size_t n_q : nqs)
      for (std::size_t n_k : nks) {
        if (n_q == 0 || n_k == 0) continue;
        Case c{hh[0], hh[1], n_q, n_k, ds[v % 4], 0, 0, 0, 0.0f, false, v % 3, 0.0f};
        set_mask(c, v / 3 + v, nr);
        c.softmax = v % 2 == 1;
        c.softcap = v % 5 == 2 ? 2.5f : 0.0f;
        c.scale = v % 7 == 3 ? -0.3f : 0.0f;
        ++v;
        const std::string err = run_case(c, rng);
        if (!err.empty()) {
          CAPTURE(c.hq, c.hkv, c.n_q, c.n_k, c.d, c.mask, c.p0, c.w, c.softcap, c.softmax, c.layout,
                  c.scale);
          FAIL(err);
        }
      }
}

TEST_CASE("attention: every mask with every option, prefill and decode shapes",
          "[attention][f32]") {
  const attnscore::KernelF32 *kernel = GENERATE(from_range(kernels()));
  CAPTURE(kernel->name);
  testing::CapGuard guard;
  REQUIRE(attnscore_set_max_level(kernel->level) == ATTNSCORE_OK);
  std::mt19937 rng(77);
  for (std::size_t n_q : {std::size_t{1}, 3 * kernel->mr + 2})
    for (unsigned m = 0; m < 8; ++m)
      for (unsigned opt = 0; opt < 4; ++opt) {
        Case c{4, 2, n_q, 3 * kernel->nr + 5, 40, 0, 0, 0, 0.0f, false, m + opt, 0.0f};
        set_mask(c, m, kernel->nr);
        c.softmax = (opt & 1) != 0;
        c.softcap = (opt & 2) ? 1.5f : 0.0f;
        const std::string err = run_case(c, rng);
        if (!err.empty()) {
          CAPTURE(c.n_q, c.n_k, c.mask, c.p0, c.w, c.softcap, c.softmax);
          FAIL(err);
        }
      }
}

#if ATTNSCORE_HAVE_F16
TEST_CASE("attention: f16 output is the f32 call's result rounded once", "[attention][f16]") {
  const attnscore::KernelF32 *kernel = GENERATE(from_range(kernels()));
  CAPTURE(kernel->name);
  testing::CapGuard guard;
  REQUIRE(attnscore_set_max_level(kernel->level) == ATTNSCORE_OK);
  std::mt19937 rng(1616);
  const std::size_t heads[][2] = {{2, 2}, {8, 2}, {4, 1}};
  const std::size_t kMax = ATTNSCORE_ATTN_F16_SOFTMAX_MAX_KEYS;
  // Keys around the f16 blocks: a block of whole rows, several rows per block, one row split
  // into key chunks (no softmax), with masks whose rows start past a chunk's first key.
  const std::size_t shapes[][2] = {{1, 37},   {5, 3 * kernel->nr + 1}, {70, 130},
                                   {1, kMax}, {2, kMax + 3},           {3, 2 * kMax + 1}};
  unsigned v = 0;
  for (const auto &hh : heads)
    for (const auto &sh : shapes)
      for (unsigned m = 0; m < 8; ++m, ++v) {
        if (sh[1] > kMax && v % 3 != 0) continue;  // the long rows: a third of the masks
        Case c{hh[0], hh[1], sh[0], sh[1], std::size_t{v % 2 ? 16u : 5u}, 0, 0, 0,
               0.0f,  false, v % 3, 0.0f};
        set_mask(c, m, sh[1] > kMax ? kMax - 2 : kernel->nr);
        if (m == 3 && sh[1] > kMax) c.p0 = kMax + 1;  // rows start inside the second chunk
        c.softmax = sh[1] <= kMax && v % 2 == 0;
        c.softcap = v % 5 == 1 ? 2.0f : 0.0f;
        const std::string err = run_case(c, rng, Mode::kF16Out);
        if (!err.empty()) {
          CAPTURE(c.hq, c.hkv, c.n_q, c.n_k, c.d, c.mask, c.p0, c.w, c.softcap, c.softmax);
          FAIL(err);
        }
      }
}

TEST_CASE("attention: f16 input gives the f32 call's bits on the converted values",
          "[attention][f16]") {
  // Every f16 kernel at its level, where the f32 kernel of the same level runs the f32 call.
  for (const attnscore::KernelF16 *kernel : testing::usable_kernels_f16()) {
    CAPTURE(kernel->name);
    if (kernel->acc != nullptr) continue;  // opt-in f16 accumulation: not an attention kernel
    testing::CapGuard guard;
    REQUIRE(attnscore_set_max_level(kernel->level) == ATTNSCORE_OK);
    REQUIRE(std::string(attnscore_kernel_name(ATTNSCORE_DTYPE_F32)) == kernel->f32->name);
    REQUIRE(std::string(attnscore_kernel_name(ATTNSCORE_DTYPE_F16)) == kernel->name);
    std::mt19937 rng(1717);
    const std::size_t heads[][2] = {{3, 3}, {8, 2}, {8, 1}, {6, 2}, {16, 2}};
    const std::size_t mr = kernel->f32->mr, nr = kernel->f32->nr;
    const std::vector<std::size_t> nqs = {1, 2, mr + 1, 70};
    const std::vector<std::size_t> nks = {1, nr + 1, kernel->nr_dec + 3};
    unsigned v = 0;
    for (const auto &hh : heads)
      for (std::size_t n_q : nqs)
        for (std::size_t n_k : nks) {
          Case c{hh[0], hh[1], n_q, n_k, v % 3 ? 17u : 64u, 0, 0, 0, 0.0f, false, v % 3, 0.0f};
          set_mask(c, v, nr);
          c.softmax = v % 2 == 1;
          c.softcap = v % 5 == 2 ? 2.5f : 0.0f;
          ++v;
          const std::string err = run_case(c, rng, Mode::kF16In);
          if (!err.empty()) {
            CAPTURE(c.hq, c.hkv, c.n_q, c.n_k, c.d, c.mask, c.p0, c.w, c.softcap, c.softmax);
            FAIL(err);
          }
        }
  }
}

TEST_CASE("attention: f16 output rejects a softmax over too many keys", "[attention][f16][api]") {
  constexpr std::size_t kMax = ATTNSCORE_ATTN_F16_SOFTMAX_MAX_KEYS;
  const std::size_t n_k = kMax + 1, d = 2;
  std::vector<float> q(d, 1.0f), k(n_k * d, 1.0f);
  std::vector<std::uint16_t> s(n_k, 0x1234);
  attnscore_attention_desc a = attnscore_attention_dense(ATTNSCORE_DTYPE_F32, 1, 1, 1, n_k, d);
  a.q.data = q.data(), a.k.data = k.data(), a.s.data = s.data();
  a.s.dtype = ATTNSCORE_DTYPE_F16;
  a.flags = ATTNSCORE_ATTN_SOFTMAX;
  CHECK(attnscore_attention(&a, nullptr) == ATTNSCORE_ERR_ROW_TOO_LONG);
  for (std::uint16_t x : s) REQUIRE(x == 0x1234);
  a.flags = 0;  // scores alone: any length
  CHECK(attnscore_attention(&a, nullptr) == ATTNSCORE_OK);
  CHECK(s[0] == testing::f16_nearest(2.0 * attnscore_default_scale(d)));
  // The S extent is counted in 2-byte elements: a stride past the end of memory overflows.
  {
    attnscore_attention_desc b = a;
    b.s.row_stride = SIZE_MAX / 2 + 1;
    b.n_q = 2;
    b.heads_q = b.heads_kv = 1;
    b.q.row_stride = d;
    CHECK(attnscore_attention(&b, nullptr) != ATTNSCORE_OK);
  }
  // f32 S: a softmax over any number of keys.
  std::vector<float> s32(n_k, kNaN);
  a.s.dtype = ATTNSCORE_DTYPE_F32, a.s.data = s32.data(), a.flags = ATTNSCORE_ATTN_SOFTMAX;
  CHECK(attnscore_attention(&a, nullptr) == ATTNSCORE_OK);
  CHECK(s32[0] == Approx(1.0 / n_k));

  // Every input dtype, raw K and a key cache: the limit itself is fine (the weights rounded
  // once), one key more is ROW_TOO_LONG, checked last (after OVERLAP and BAD_QUANT_SCALE).
  testing::CapGuard guard;
  std::mt19937 rng(8192);
  for (attnscore_dtype dt : {ATTNSCORE_DTYPE_F32, ATTNSCORE_DTYPE_F16, ATTNSCORE_DTYPE_S8}) {
    if (!testing::dtype_built(dt)) continue;
    testing::AttnCase c;
    c.dtype = dt, c.n_q = 2, c.n_k = kMax, c.extra_keys = 1, c.d = 3, c.softmax = true;
    c.mask = ATTNSCORE_MASK_CAUSAL, c.p0 = kMax - 2;
    testing::AttnData data(c, rng);
    REQUIRE(data.prepare() == "");
    CAPTURE(testing::describe(c));
    CHECK(data.run(ATTNSCORE_DTYPE_F16, nullptr, nullptr) == "");
    testing::CacheMem cm;
    REQUIRE(testing::make_cache(data, kMax + 1, &cm) == "");
    REQUIRE(testing::append_keys(data, cm.cache, 0, kMax + 1, {1000, 3, 7000}) == "");
    CHECK(data.run(ATTNSCORE_DTYPE_F16, cm.cache, nullptr) == "");
    std::vector<std::uint16_t> s16(2 * (kMax + 1), 0x1234);
    for (int from_cache = 0; from_cache < 2; ++from_cache) {
      attnscore_attention_desc b = data.desc();
      b.n_k = kMax + 1, b.s.row_stride = kMax + 1, b.s.head_stride = 2 * (kMax + 1);
      b.s.dtype = ATTNSCORE_DTYPE_F16, b.s.data = s16.data();
      if (from_cache) b.k_cache = cm.cache;
      CHECK(attnscore_attention(&b, nullptr) == ATTNSCORE_ERR_ROW_TOO_LONG);
      attnscore_attention_desc o = b;  // S over Q: OVERLAP first
      o.s.data = const_cast<void *>(b.q.data);
      CHECK(attnscore_attention(&o, nullptr) == ATTNSCORE_ERR_OVERLAP);
      if (dt == ATTNSCORE_DTYPE_S8) {
        std::vector<float> bad_scale(2, std::numeric_limits<float>::infinity());
        o = b;
        o.q.scale = bad_scale.data(), o.q.scale_head_stride = 0, o.q.scale_row_stride = 1;
        CHECK(attnscore_attention(&o, nullptr) == ATTNSCORE_ERR_BAD_QUANT_SCALE);
      }
      for (std::uint16_t x : s16) REQUIRE(x == 0x1234);
    }
  }
}

#else
TEST_CASE("attention: the f16 calls report the dtype missing", "[attention][f16][api]") {
  attnscore_attention_desc a = attnscore_attention_dense(ATTNSCORE_DTYPE_F16, 1, 1, 1, 1, 1);
  const float x = 1.0f;
  const std::uint16_t h = 0x3c00;
  float out = 0.0f;
  std::uint16_t out16 = 0;
  a.q.data = &h, a.k.data = &h, a.s.data = &out;
  CHECK(attnscore_attention(&a, nullptr) == ATTNSCORE_ERR_UNKNOWN_DTYPE);
  a = attnscore_attention_dense(ATTNSCORE_DTYPE_F32, 1, 1, 1, 1, 1);
  a.q.data = &x, a.k.data = &x, a.s.data = &out16, a.s.dtype = ATTNSCORE_DTYPE_F16;
  CHECK(attnscore_attention(&a, nullptr) == ATTNSCORE_ERR_UNKNOWN_DTYPE);
}
#endif  // ATTNSCORE_HAVE_F16

TEST_CASE("attention: masked and skipped tiles match the unmasked call bit for bit",
          "[attention][f32]") {
  // A causal prefill at the active level: every visible score equals the unmasked call's.
  std::mt19937 rng(5);
  const std::size_t hq = 4, hkv = 1, n = 100, d = 32;
  std::vector<float> q(hq * n * d), k(hkv * n * d), full(hq * n * n), causal(hq * n * n);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (float &x : q) x = dist(rng);
  for (float &x : k) x = dist(rng);
  attnscore_attention_desc a = attnscore_attention_dense(ATTNSCORE_DTYPE_F32, hq, hkv, n, n, d);
  REQUIRE(attention_f32(a, q.data(), k.data(), full.data()) == ATTNSCORE_OK);
  a.mask = ATTNSCORE_MASK_CAUSAL;
  REQUIRE(attention_f32(a, q.data(), k.data(), causal.data()) == ATTNSCORE_OK);
  for (std::size_t h = 0; h < hq; ++h)
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        const std::size_t x = (h * n + i) * n + j;
        if (j <= i)
          REQUIRE(testing::to_bits(causal[x]) == testing::to_bits(full[x]));
        else
          REQUIRE(causal[x] == -kInf);
      }
}

TEST_CASE("attention: fully masked rows give zeros, NaN scores give NaN rows", "[attention]") {
  // Window 1 ending before key 0 cannot happen; a causal row at position p sees p + 1 keys, so a
  // row sees nothing only through the window past the keys: n_k keys, position n_k + w.
  const std::size_t n_k = 5, d = 4;
  std::vector<float> q(2 * d, 1.0f), k(n_k * d, 0.5f), s(2 * n_k, kNaN);
  attnscore_attention_desc a = attnscore_attention_dense(ATTNSCORE_DTYPE_F32, 1, 1, 2, n_k, d);
  a.mask = ATTNSCORE_MASK_WINDOW;
  a.window = 2;
  a.pos_offset = n_k;  // row 0 sees key n_k - 1 only; row 1 (position n_k + 1) sees none
  a.flags = ATTNSCORE_ATTN_SOFTMAX;
  REQUIRE(attention_f32(a, q.data(), k.data(), s.data()) == ATTNSCORE_OK);
  for (std::size_t j = 0; j + 1 < n_k; ++j) CHECK(testing::to_bits(s[j]) == 0);
  CHECK(s[n_k - 1] == 1.0f);
  for (std::size_t j = 0; j < n_k; ++j) CHECK(testing::to_bits(s[n_k + j]) == 0);
  // A NaN in a visible score: that row's visible weights are NaN, the masked ones 0.
  q[0] = kNaN;
  a.mask = 0;
  a.flags = ATTNSCORE_ATTN_SOFTMAX;
  REQUIRE(attention_f32(a, q.data(), k.data(), s.data()) == ATTNSCORE_OK);
  for (std::size_t j = 0; j < n_k; ++j) CHECK(std::isnan(s[j]));
  for (std::size_t j = 0; j < n_k; ++j) CHECK(s[n_k + j] == 1.0f / n_k);
}

TEST_CASE("attention: the softmax is stable for scores far beyond exp's range", "[attention]") {
  const std::size_t n_k = 5, d = 4;
  std::vector<float> q(d, 100.0f), k(n_k * d), s(n_k, kNaN);
  for (std::size_t j = 0; j < n_k; ++j)
    for (std::size_t t = 0; t < d; ++t) k[j * d + t] = static_cast<float>(j);
  attnscore_attention_desc a = attnscore_attention_dense(ATTNSCORE_DTYPE_F32, 1, 1, 1, n_k, d);
  a.scale = 1.0f;  // scores 0, 400, ..., 1600: e^1600 overflows without the max subtracted
  a.flags = ATTNSCORE_ATTN_SOFTMAX;
  REQUIRE(attention_f32(a, q.data(), k.data(), s.data()) == ATTNSCORE_OK);
  for (std::size_t j = 0; j + 1 < n_k; ++j) CHECK(s[j] == 0.0f);
  CHECK(s[n_k - 1] == 1.0f);
}

TEST_CASE("attention: the softmax's exp is within 2 ulp of e^x on [-87, 0]", "[attention]") {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> wide(-87.0f, 0.0f), narrow(-1.0f, 0.0f);
  double worst = 0;
  for (int n = 0; n < 200000; ++n) {
    const float x = n % 2 ? wide(rng) : narrow(rng);
    const double ref = std::exp(static_cast<double>(x));
    const float got = attnscore::exp_nonpositive(x);
    // Error in units of the last place of the result's binade.
    const double ulp = std::ldexp(1.0, std::ilogb(ref) - 23);
    worst = std::max(worst, std::fabs(got - ref) / ulp);
  }
  CAPTURE(worst);
  CHECK(worst <= 2.0);
  CHECK(attnscore::exp_nonpositive(0.0f) == 1.0f);
  CHECK(attnscore::exp_nonpositive(-0.0f) == 1.0f);
  CHECK(attnscore::exp_nonpositive(-88.0f) == 0.0f);
  CHECK(attnscore::exp_nonpositive(-kInf) == 0.0f);
  CHECK(attnscore::exp_nonpositive(-1e30f) == 0.0f);
}

TEST_CASE("attention: bad input returns its status and writes nothing", "[attention][api]") {
  const std::size_t hq = 4, hkv = 2, n_q = 3, n_k = 5, d = 8;
  std::vector<float> q(hq * n_q * d, 1.0f), k(hkv * n_k * d, 1.0f);
  std::vector<float> s(hq * n_q * n_k + 16, testing::from_bits(testing::kGuardBits));
  const attnscore_attention_desc good =
      attnscore_attention_dense(ATTNSCORE_DTYPE_F32, hq, hkv, n_q, n_k, d);
  const auto untouched = [&] {
    for (float x : s)
      if (testing::to_bits(x) != testing::kGuardBits) return false;
    return true;
  };
  const auto expect = [&](const attnscore_attention_desc &a, attnscore_status want) {
    CHECK(attention_f32(a, q.data(), k.data(), s.data()) == want);
    CHECK(untouched());
  };
  const float subnormal = std::numeric_limits<float>::denorm_min();
  const std::size_t big = std::numeric_limits<std::size_t>::max();

  CHECK(attnscore_attention(nullptr, nullptr) == ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attention_f32(good, nullptr, k.data(), s.data()) == ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attention_f32(good, q.data(), nullptr, s.data()) == ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attention_f32(good, q.data(), k.data(), nullptr) == ATTNSCORE_ERR_NULL_POINTER);
  {
    attnscore_attention_desc a = good;
    a.d = 0;
    expect(a, ATTNSCORE_ERR_ZERO_DIM);
  }
  for (std::size_t kv : {std::size_t{0}, std::size_t{3}}) {
    attnscore_attention_desc a = good;
    a.heads_kv = kv;
    expect(a, ATTNSCORE_ERR_HEADS_MISMATCH);
  }
  {
    attnscore_attention_desc a = good;
    a.heads_q = 6;  // 6 % 4: not a multiple (heads_kv = 4)
    a.heads_kv = 4;
    expect(a, ATTNSCORE_ERR_HEADS_MISMATCH);
  }
  {
    attnscore_attention_desc a = good;
    a.q.row_stride = d - 1;
    expect(a, ATTNSCORE_ERR_BAD_LDQ);
    a = good;
    a.k.row_stride = d - 1;
    expect(a, ATTNSCORE_ERR_BAD_LDK);
    a = good;
    a.s.row_stride = n_k - 1;
    expect(a, ATTNSCORE_ERR_BAD_LDS);
  }
  for (float sc : {kNaN, kInf, -kInf, subnormal}) {
    attnscore_attention_desc a = good;
    a.scale = sc;
    expect(a, ATTNSCORE_ERR_BAD_SCALE);
  }
  for (float cap : {-1.0f, kNaN, kInf, -kInf, subnormal, -subnormal}) {
    attnscore_attention_desc a = good;
    a.softcap = cap;
    CAPTURE(cap);
    expect(a, ATTNSCORE_ERR_BAD_SOFTCAP);
  }
  {
    attnscore_attention_desc a = good;
    a.mask = 4;
    expect(a, ATTNSCORE_ERR_BAD_FLAGS);
    a = good;
    a.flags = 4;
    expect(a, ATTNSCORE_ERR_BAD_FLAGS);
    a = good;  // binary16 accumulation asked of f32 Q and K
    a.flags = ATTNSCORE_ATTN_F16_ACCUMULATE;
    expect(a, ATTNSCORE_ERR_BAD_FLAGS);
    a = good;
    a.mask = ATTNSCORE_MASK_WINDOW;
    a.window = 0;
    expect(a, ATTNSCORE_ERR_BAD_WINDOW);
    a.mask = ATTNSCORE_MASK_WINDOW | ATTNSCORE_MASK_CAUSAL;
    expect(a, ATTNSCORE_ERR_BAD_WINDOW);
  }
  {
    // The last row's position pos_offset + n_q - 1 must fit; only checked under a mask.
    attnscore_attention_desc a = good;
    a.mask = ATTNSCORE_MASK_CAUSAL;
    a.pos_offset = big - (n_q - 2);
    expect(a, ATTNSCORE_ERR_POSITION_OVERFLOW);
    a.mask = ATTNSCORE_MASK_WINDOW;
    a.window = 4;
    expect(a, ATTNSCORE_ERR_POSITION_OVERFLOW);
    a.mask = 0;
    std::vector<float> s2(s.size());
    CHECK(attention_f32(a, q.data(), k.data(), s2.data()) == ATTNSCORE_OK);
    a.mask = ATTNSCORE_MASK_CAUSAL;
    a.pos_offset = big - (n_q - 1);  // the largest: every key visible
    CHECK(attention_f32(a, q.data(), k.data(), s2.data()) == ATTNSCORE_OK);
    for (std::size_t x = 0; x < hq * n_q * n_k; ++x) CHECK(s2[x] == Approx(d / std::sqrt(8.0)));
  }
  {
    // Head strides under which heads overlap (rows nested in heads, or heads in rows).
    attnscore_attention_desc a = good;
    a.q.head_stride = n_q * d - 1;
    expect(a, ATTNSCORE_ERR_BAD_HEAD_STRIDE);
    a = good;
    a.k.head_stride = 0;
    expect(a, ATTNSCORE_ERR_BAD_HEAD_STRIDE);
    a = good;
    a.s.head_stride = n_q * n_k - 1;
    expect(a, ATTNSCORE_ERR_BAD_HEAD_STRIDE);
    a = good;  // token-major S with rows too short for the heads inside them
    a.s.head_stride = n_k;
    a.s.row_stride = hq * n_k - 1;
    expect(a, ATTNSCORE_ERR_BAD_HEAD_STRIDE);
    a = good;  // and heads closer than a row
    a.q.head_stride = d - 1;
    a.q.row_stride = hq * d;
    expect(a, ATTNSCORE_ERR_BAD_HEAD_STRIDE);
  }
  {
    attnscore_attention_desc a = good;
    a.k.head_stride = big / 2;
    expect(a, ATTNSCORE_ERR_SIZE_OVERFLOW);
  }
  {
    // S inside Q or K.
    attnscore_attention_desc a = good;
    std::vector<float> qs(hq * n_q * d + hq * n_q * n_k, 1.0f);
    const std::vector<float> before = qs;
    CHECK(attention_f32(a, qs.data(), k.data(), qs.data() + 5) == ATTNSCORE_ERR_OVERLAP);
    CHECK(attention_f32(a, q.data(), qs.data(), qs.data() + 5) == ATTNSCORE_ERR_OVERLAP);
    CHECK(qs == before);
  }
  {
    // Zero heads, queries or keys: a no-op whatever the rest.
    for (int which = 0; which < 3; ++which) {
      attnscore_attention_desc a = good;
      (which == 0 ? a.heads_q : which == 1 ? a.n_q : a.n_k) = 0;
      a.d = 0;
      a.softcap = -1.0f;
      CHECK(attention_f32(a, nullptr, nullptr, nullptr) == ATTNSCORE_OK);
    }
  }
  {
    // Token-major layouts (heads inside rows) are valid.
    attnscore_attention_desc a = good;
    a.q.head_stride = d;
    a.q.row_stride = hq * d;
    a.s.head_stride = n_k;
    a.s.row_stride = hq * n_k;
    CHECK(attention_f32(a, q.data(), k.data(), s.data()) == ATTNSCORE_OK);
  }
  std::fill(s.begin(), s.end(), testing::from_bits(testing::kGuardBits));  // written just above
  {
    // Dtypes: unknown ones (Q, raw K, S; S is f32 or f16 only), then Q's against K's.
    attnscore_attention_desc a = good;
    a.q.dtype = static_cast<attnscore_dtype>(7);
    expect(a, ATTNSCORE_ERR_UNKNOWN_DTYPE);
    a = good;
    a.k.dtype = static_cast<attnscore_dtype>(-1);
    expect(a, ATTNSCORE_ERR_UNKNOWN_DTYPE);
    a = good;
    a.s.dtype = ATTNSCORE_DTYPE_S8;
    expect(a, ATTNSCORE_ERR_UNKNOWN_DTYPE);
    a = good;
    a.k.dtype =
        testing::dtype_built(ATTNSCORE_DTYPE_F16) ? ATTNSCORE_DTYPE_F16 : ATTNSCORE_DTYPE_S8;
    expect(a, testing::dtype_built(a.k.dtype) ? ATTNSCORE_ERR_DTYPE_MISMATCH
                                              : ATTNSCORE_ERR_UNKNOWN_DTYPE);
    // The order: UNKNOWN_DTYPE before NULL_POINTER before DTYPE_MISMATCH before HEADS_MISMATCH.
    a.heads_kv = 3;
    expect(a, testing::dtype_built(a.k.dtype) ? ATTNSCORE_ERR_DTYPE_MISMATCH
                                              : ATTNSCORE_ERR_UNKNOWN_DTYPE);
    a.q.data = nullptr;
    CHECK(attnscore_attention(&a, nullptr) == (testing::dtype_built(a.k.dtype)
                                                   ? ATTNSCORE_ERR_NULL_POINTER
                                                   : ATTNSCORE_ERR_UNKNOWN_DTYPE));
    a.q.dtype = static_cast<attnscore_dtype>(7);
    CHECK(attnscore_attention(&a, nullptr) == ATTNSCORE_ERR_UNKNOWN_DTYPE);
    CHECK(untouched());
  }
  {
    // A par without a parallel_for: NULL_POINTER after every other check, the hook never called.
    attnscore_attention_desc a = good;
    a.q.data = q.data(), a.k.data = k.data(), a.s.data = s.data();
    const attnscore_parallel no_fn{nullptr, nullptr, 2};
    CHECK(attnscore_attention(&a, &no_fn) == ATTNSCORE_ERR_NULL_POINTER);
    a.scale = kNaN;
    CHECK(attnscore_attention(&a, &no_fn) == ATTNSCORE_ERR_BAD_SCALE);
    a.scale = 0.0f, a.n_k = 0;  // a no-op stays one
    CHECK(attnscore_attention(&a, &no_fn) == ATTNSCORE_OK);
    CHECK(untouched());
  }
  for (int v = ATTNSCORE_ERR_HEADS_MISMATCH; v <= ATTNSCORE_ERR_DTYPE_MISMATCH; ++v) {
    const std::string msg = attnscore_status_string(static_cast<attnscore_status>(v));
    CHECK(msg != "unknown attnscore status");
  }
}

// The 0.1.0 C++ wrapper's case through the C call (the wrapper's own shape checks belong to the
// C++ header's tests).
TEST_CASE("attention: equal scores, f16 S and f16 Q and K on one descriptor", "[attention][api]") {
  const std::size_t hq = 4, hkv = 2, n_q = 2, n_k = 7, d = 16;
  std::vector<float> q(hq * n_q * d, 0.5f), k(hkv * n_k * d, 0.25f), s(hq * n_q * n_k, kNaN);
  attnscore_attention_desc a = attnscore_attention_dense(ATTNSCORE_DTYPE_F32, hq, hkv, n_q, n_k, d);
  a.mask = ATTNSCORE_MASK_CAUSAL;
  a.pos_offset = 2;
  a.flags = ATTNSCORE_ATTN_SOFTMAX;
  REQUIRE(attention_f32(a, q.data(), k.data(), s.data()) == ATTNSCORE_OK);
  // Equal scores: row 0 (position 2) spreads over 3 keys, row 1 over 4.
  for (std::size_t h = 0; h < hq; ++h)
    for (std::size_t j = 0; j < n_k; ++j) {
      CHECK(s[(h * n_q + 0) * n_k + j] == (j <= 2 ? Approx(1.0 / 3) : Approx(0.0)));
      CHECK(s[(h * n_q + 1) * n_k + j] == (j <= 3 ? Approx(1.0 / 4) : Approx(0.0)));
    }
  if (!testing::dtype_built(ATTNSCORE_DTYPE_F16)) return;
  // f16 output: the f32 weights rounded once (the tests' oracle and attnscore_convert agree).
  std::vector<std::uint16_t> h(hq * n_q * n_k, 0x7d5a), conv(h.size(), 0);
  attnscore_attention_desc a16 = a;
  a16.q.data = q.data(), a16.k.data = k.data(), a16.s.data = h.data();
  a16.s.dtype = ATTNSCORE_DTYPE_F16;
  REQUIRE(attnscore_attention(&a16, nullptr) == ATTNSCORE_OK);
  REQUIRE(attnscore_convert(s.size(), ATTNSCORE_DTYPE_F32, s.data(), ATTNSCORE_DTYPE_F16,
                            conv.data()) == ATTNSCORE_OK);
  for (std::size_t x = 0; x < h.size(); ++x) {
    CHECK(h[x] == testing::f16_nearest(s[x]));
    CHECK(h[x] == conv[x]);
  }
  // f16 input (0.5 and 0.25 are binary16 values): the f32 call's bits.
  std::vector<std::uint16_t> qh(q.size(), 0x3800), kh(k.size(), 0x3400);
  std::vector<float> s16(s.size(), kNaN);
  attnscore_attention_desc ah = a;
  ah.q.dtype = ah.k.dtype = ATTNSCORE_DTYPE_F16;
  ah.q.data = qh.data(), ah.k.data = kh.data(), ah.s.data = s16.data();
  REQUIRE(attnscore_attention(&ah, nullptr) == ATTNSCORE_OK);
  CHECK(std::memcmp(s16.data(), s.data(), s.size() * sizeof(float)) == 0);
}

namespace {

// The mask variants of set_mask on a generic case.
void set_mask(testing::AttnCase &c, unsigned v, std::size_t nr) {
  Case f{c.hq, c.hkv, c.n_q, c.n_k, c.d, 0, 0, 0, 0.0f, false, 0, 0.0f};
  set_mask(f, v, nr);
  c.mask = f.mask, c.p0 = f.p0, c.w = f.w;
}

}  // namespace

TEST_CASE("attention: int8 Q and K (raw and cached), every mask, group and option, every level",
          "[attention][s8]") {
  if (!testing::dtype_built(ATTNSCORE_DTYPE_S8)) {
    WARN("int8 path not built");
    return;
  }
  testing::CapGuard guard;
  std::mt19937 rng(808);
  const std::size_t heads[][2] = {{4, 2}, {8, 1}, {3, 3}};
  const std::size_t shapes[][3] = {{1, 37, 40}, {2, 70, 5}, {9, 33, 67}, {40, 131, 16}};
  for (attnscore_level level : testing::runnable_levels()) {
    REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
    CAPTURE(attnscore_level_name(level), attnscore_kernel_name(ATTNSCORE_DTYPE_S8));
    unsigned v = 0;
    for (const auto &hh : heads)
      for (const auto &sh : shapes)
        for (unsigned m = 0; m < 8; ++m)
          for (unsigned opt = 0; opt < 4; ++opt, ++v) {
            testing::AttnCase c;
            c.dtype = ATTNSCORE_DTYPE_S8;
            c.hq = hh[0], c.hkv = hh[1], c.n_q = sh[0], c.n_k = sh[1], c.d = sh[2];
            set_mask(c, m, 16);
            c.softmax = (opt & 1) != 0;
            c.softcap = (opt & 2) ? 2.5f : 0.0f;
            c.layout = v % 3;
            c.q_scales = v % 3, c.k_scales = (v / 3) % 3;
            c.scale = v % 7 == 3 ? -0.3f : 0.0f;
            c.extra_keys = v % 2;
            testing::AttnData data(c, rng);
            const std::string prep = data.prepare();
            std::string err = prep.empty() ? data.run(ATTNSCORE_DTYPE_F32, nullptr, nullptr) : prep;
            // binary16 S: the same results rounded once.
            if (err.empty() && testing::dtype_built(ATTNSCORE_DTYPE_F16))
              err = data.run(ATTNSCORE_DTYPE_F16, nullptr, nullptr);
            // K from an int8 cache (one scale per key), appended in uneven pieces.
            if (err.empty() && c.k_scales == 0) {
              testing::CacheMem cm;
              err = testing::make_cache(data, c.n_k + c.extra_keys + 3, &cm);
              if (err.empty())
                err = testing::append_keys(data, cm.cache, 0, c.n_k + c.extra_keys, {5, 1, 17});
              if (err.empty()) err = data.run(ATTNSCORE_DTYPE_F32, cm.cache, nullptr);
            }
            if (!err.empty()) {
              CAPTURE(testing::describe(c));
              FAIL(err);
            }
          }
  }
}

TEST_CASE("attention: f16 S is the f32 result rounded once for every input dtype",
          "[attention][f16]") {
  if (!testing::dtype_built(ATTNSCORE_DTYPE_F16)) {
    WARN("f16 not built");
    return;
  }
  testing::CapGuard guard;
  std::mt19937 rng(1661);
  for (attnscore_level level : testing::runnable_levels()) {
    REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
    CAPTURE(attnscore_level_name(level));
    unsigned v = 0;
    for (attnscore_dtype dt : {ATTNSCORE_DTYPE_F32, ATTNSCORE_DTYPE_F16, ATTNSCORE_DTYPE_S8}) {
      if (!testing::dtype_built(dt)) continue;
      const std::size_t shapes[][2] = {{1, 300}, {19, 45}};
      for (const auto &sh : shapes)
        for (unsigned m = 0; m < 8; ++m)
          for (int softmax = 0; softmax < 2; ++softmax, ++v) {
            testing::AttnCase c;
            c.dtype = dt, c.hq = 4, c.hkv = 2, c.n_q = sh[0], c.n_k = sh[1], c.d = 24;
            set_mask(c, m, 16);
            c.softmax = softmax != 0;
            c.softcap = v % 3 == 1 ? 2.0f : 0.0f;
            c.layout = v % 3, c.q_scales = v % 3;
            testing::AttnData data(c, rng);
            std::string err = data.prepare();
            std::vector<unsigned char> b32, b16;
            if (err.empty()) err = data.run(ATTNSCORE_DTYPE_F32, nullptr, nullptr, 0, &b32);
            if (err.empty()) err = data.run(ATTNSCORE_DTYPE_F16, nullptr, nullptr, 0, &b16);
            if (!err.empty()) {
              CAPTURE(testing::describe(c));
              FAIL(err);
            }
            // And the library's own conversion of the f32 S agrees, element for element of S.
            std::vector<std::uint16_t> conv(data.s_elems);
            REQUIRE(attnscore_convert(data.s_elems, ATTNSCORE_DTYPE_F32, b32.data(),
                                      ATTNSCORE_DTYPE_F16, conv.data()) == ATTNSCORE_OK);
            for (std::size_t h = 0; h < c.hq; ++h)
              for (std::size_t i = 0; i < c.n_q; ++i)
                for (std::size_t j = 0; j < c.n_k; ++j) {
                  const std::size_t x = data.s_off + h * data.s_hs + i * data.s_rs + j;
                  std::uint16_t got;
                  std::memcpy(&got, b16.data() + 2 * x, 2);
                  if (got != conv[x]) {
                    CAPTURE(testing::describe(c), h, i, j);
                    FAIL("f16 S differs from attnscore_convert of the f32 S");
                  }
                }
          }
    }
  }
}
