// SPDX-License-Identifier: Apache-2.0
// The f16 path: every converter on all 65,536 binary16 patterns (and every rounding boundary the
// other way), at every f16 kernel and through attnscore_convert at every level; specials; the f16
// key cache's statuses; f16 S (the output dtype of the attention call); f16 accumulation (its
// flag); bad input. The shape sweep of every f16 kernel, and every kernel's key cache, are in
// test_kernels.cpp (the one kernel tester).
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attnscore/attnscore.hpp"
#include "dispatch/kernels.h"
#include "support.hpp"

namespace {

// One head of attnscore_attention on f16 Q and K, in the shape of the BLAS-style calls: S of
// `s_dtype` (f32, or binary16: what the removed _to_f16 calls gave) with row stride lds, and
// `flags` (ATTNSCORE_ATTN_F16_ACCUMULATE: what the removed _ex calls' option gave).
attnscore_status attention_f16(std::size_t n_q, std::size_t n_k, std::size_t d,
                               const std::uint16_t *q, std::size_t ldq, const std::uint16_t *k,
                               std::size_t ldk, void *s, attnscore_dtype s_dtype, std::size_t lds,
                               float scale, unsigned flags = 0) {
  attnscore_attention_desc a = attnscore_attention_dense(ATTNSCORE_DTYPE_F16, 1, 1, n_q, n_k, d);
  a.q.data = q, a.q.row_stride = ldq;
  a.k.data = k, a.k.row_stride = ldk;
  a.s.data = s, a.s.dtype = s_dtype, a.s.row_stride = lds;
  a.scale = scale, a.flags = flags;
  return attnscore_attention(&a, nullptr);
}

}  // namespace

#if !ATTNSCORE_HAVE_F16

TEST_CASE("f16 left out of the build: every f16 call says so", "[f16][api]") {
  WARN("f16 not built (ATTNSCORE_ENABLE_F16=OFF): the f16 tests are skipped");
  std::uint16_t h[4] = {0x3c00, 0x3c00, 0x3c00, 0x3c00}, out16[1] = {0};
  float s[1] = {0}, f[1] = {0};
  const float one[4] = {1, 1, 1, 1};
  CHECK(attnscore_kernel_name(ATTNSCORE_DTYPE_F16) == nullptr);
  CHECK(attnscore_scores_f16(1, 1, 1, h, 1, h + 1, 1, s, 1, 0) == ATTNSCORE_ERR_UNKNOWN_DTYPE);
  // f16 Q and K (f32 or f16 S, with f16 accumulation or not), f16 S of f32 inputs.
  CHECK(attention_f16(1, 1, 1, h, 1, h + 1, 1, s, ATTNSCORE_DTYPE_F32, 1, 0) ==
        ATTNSCORE_ERR_UNKNOWN_DTYPE);
  CHECK(attention_f16(1, 1, 1, h, 1, h + 1, 1, out16, ATTNSCORE_DTYPE_F16, 1, 0) ==
        ATTNSCORE_ERR_UNKNOWN_DTYPE);
  CHECK(attention_f16(1, 1, 1, h, 1, h + 1, 1, s, ATTNSCORE_DTYPE_F32, 1, 0,
                      ATTNSCORE_ATTN_F16_ACCUMULATE) == ATTNSCORE_ERR_UNKNOWN_DTYPE);
  attnscore_attention_desc a = attnscore_attention_dense(ATTNSCORE_DTYPE_F32, 1, 1, 1, 1, 1);
  a.q.data = one, a.k.data = one + 1, a.s.data = out16, a.s.dtype = ATTNSCORE_DTYPE_F16;
  CHECK(attnscore_attention(&a, nullptr) == ATTNSCORE_ERR_UNKNOWN_DTYPE);
  CHECK(attnscore_convert(1, ATTNSCORE_DTYPE_F16, h, ATTNSCORE_DTYPE_F32, f) ==
        ATTNSCORE_ERR_UNKNOWN_DTYPE);
  CHECK(attnscore_convert(1, ATTNSCORE_DTYPE_F32, f, ATTNSCORE_DTYPE_F16, out16) ==
        ATTNSCORE_ERR_UNKNOWN_DTYPE);
  const attnscore_cache_shape shape{ATTNSCORE_CACHE_KEYS, ATTNSCORE_DTYPE_F16, 1, 4, 4};
  CHECK(attnscore_cache_bytes(&shape) == 0);
  CHECK(attnscore_flag_available(ATTNSCORE_ATTN_F16_ACCUMULATE) == 0);
  CHECK(s[0] == 0.0f);
  CHECK(out16[0] == 0);
  CHECK(f[0] == 0.0f);
}

#else

using attnscore::KernelF16;
using testing::CapGuard;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();

// The f32-accumulating kernels (the f16-accumulating rows have no converters; the kernel tester
// sweeps them all).
std::vector<const KernelF16 *> usable_f16() {
  std::vector<const KernelF16 *> out;
  for (const KernelF16 *k : testing::usable_kernels_f16())
    if (k->acc == nullptr) out.push_back(k);
  return out;
}

// armv7 NEON always returns the default NaN (no payload, positive); every other converter keeps
// the sign and payload of a NaN and makes it quiet.
bool keeps_nan_payload(attnscore_level level) {
#if defined(__arm__)
  return level != ATTNSCORE_LEVEL_NEON;
#else
  (void)level;
  return true;
#endif
}

std::uint32_t bits_of(float x) { return testing::to_bits(x); }

// f16 -> f32 of every pattern through `convert(n, src, dst)`, in one call and in calls of 7
// (the vector converters' tails). Returns "" or the first failure.
template <class Convert>
std::string check_all_to_f32(Convert convert, bool nan_payload) {
  std::vector<std::uint16_t> in(65536);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::uint16_t>(i);
  for (const std::size_t chunk : {std::size_t{65536}, std::size_t{7}}) {
    std::vector<float> out(65536 + 1, testing::from_bits(testing::kGuardBits));
    for (std::size_t i = 0; i < in.size(); i += chunk)
      convert(std::min(chunk, in.size() - i), in.data() + i, out.data() + i);
    if (bits_of(out[65536]) != testing::kGuardBits) return "wrote past the end";
    for (std::size_t i = 0; i < in.size(); ++i) {
      const auto h = static_cast<std::uint16_t>(i);
      const double v = testing::f16_value(h);
      const std::uint32_t got = bits_of(out[i]);
      bool ok;
      if (std::isnan(v))
        ok = nan_payload ? got == ((h & 0x8000u) << 16 | 0x7fc00000u | (h & 0x3ffu) << 13)
                         : std::isnan(out[i]);
      else
        ok = got == bits_of(static_cast<float>(v));  // binary16 values are all floats, exactly
      if (!ok) {
        char msg[96];
        std::snprintf(msg, sizeof msg, "f16 0x%04x gave f32 0x%08x (chunk %zu)", h, got, chunk);
        return msg;
      }
    }
  }
  return "";
}

// Every f32 value where f32 -> f16 rounding can go wrong: each binary16 value of either sign,
// each midpoint between neighbours (ties to even) and the floats either side of it, the
// overflow boundary (65520 rounds to Inf), f32 subnormals, Inf and NaNs with payloads.
std::vector<float> to_f16_inputs() {
  std::vector<float> xs;
  for (unsigned p = 0; p < 0x7c00; ++p) {
    const double v = testing::f16_value(static_cast<std::uint16_t>(p));
    const double next =
        p + 1 < 0x7c00 ? testing::f16_value(static_cast<std::uint16_t>(p + 1)) : 65536.0;
    const auto mid = static_cast<float>((v + next) / 2);  // 12 significant bits: exact
    for (const float x :
         {static_cast<float>(v), mid, std::nextafter(mid, 0.0f), std::nextafter(mid, FLT_MAX)}) {
      xs.push_back(x);
      xs.push_back(-x);
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (const float x : {inf, -inf, FLT_MAX, 65520.0f, 1e10f, 1e-40f, -1e-45f, FLT_MIN})
    xs.push_back(x);
  for (const std::uint32_t b :
       {0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x7fa00000u, 0xffffffffu, 0x7fbfe000u})
    xs.push_back(testing::from_bits(b));
  return xs;
}

template <class Convert>
std::string check_all_to_f16(Convert convert, bool nan_payload) {
  const std::vector<float> xs = to_f16_inputs();
  for (const std::size_t chunk : {xs.size(), std::size_t{5}}) {
    std::vector<std::uint16_t> out(xs.size() + 1, 0xa5a5);
    for (std::size_t i = 0; i < xs.size(); i += chunk)
      convert(std::min(chunk, xs.size() - i), xs.data() + i, out.data() + i);
    if (out[xs.size()] != 0xa5a5) return "wrote past the end";
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const std::uint32_t b = bits_of(xs[i]);
      const std::uint16_t got = out[i];
      bool ok;
      if (std::isnan(xs[i]))
        ok = nan_payload ? got == ((b >> 16 & 0x8000u) | 0x7e00u | (b >> 13 & 0x3ffu))
                         : ((got & 0x7c00) == 0x7c00 && (got & 0x3ff) != 0);
      else
        ok = got == testing::f16_nearest(xs[i]);
      if (!ok) {
        char msg[112];
        std::snprintf(msg, sizeof msg, "f32 0x%08x (%.9g) gave f16 0x%04x, want 0x%04x", b,
                      static_cast<double>(xs[i]), got, testing::f16_nearest(xs[i]));
        return msg;
      }
    }
  }
  return "";
}

// Random binary16 values of roughly unit size, as bits and as floats.
void random_f16(std::size_t n, std::mt19937 &rng, std::vector<std::uint16_t> &h,
                std::vector<float> &f) {
  std::normal_distribution<float> dist;
  h.resize(n);
  f.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    h[i] = testing::f16_nearest(dist(rng));
    f[i] = static_cast<float>(testing::f16_value(h[i]));
  }
}

}  // namespace

TEST_CASE("every f16 kernel's converters: all 65536 patterns, every rounding boundary",
          "[f16][kernels][convert]") {
  const KernelF16 *kernel = GENERATE(from_range(usable_f16()));
  CAPTURE(kernel->name);
  const bool payload = keeps_nan_payload(kernel->level);
  CHECK(check_all_to_f32(kernel->to_f32, payload) == "");
  CHECK(check_all_to_f16(kernel->narrow, payload) == "");
}

TEST_CASE("public f16 converters at every level", "[f16][api][convert]") {
  CapGuard guard;
  const attnscore_level level = GENERATE(from_range(testing::runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  CAPTURE(attnscore_level_name(level), attnscore_kernel_name(ATTNSCORE_DTYPE_F16));
  const bool payload = keeps_nan_payload(attnscore_kernel_level(ATTNSCORE_DTYPE_F16));
  const attnscore_dtype F16 = ATTNSCORE_DTYPE_F16, F32 = ATTNSCORE_DTYPE_F32;
  CHECK(check_all_to_f32(
            [&](std::size_t n, const std::uint16_t *src, float *dst) {
              REQUIRE(attnscore_convert(n, F16, src, F32, dst) == ATTNSCORE_OK);
            },
            payload) == "");
  CHECK(check_all_to_f16(
            [&](std::size_t n, const float *src, std::uint16_t *dst) {
              REQUIRE(attnscore_convert(n, F32, src, F16, dst) == ATTNSCORE_OK);
            },
            payload) == "");
  // The C++ converters are the same calls.
  CHECK(check_all_to_f32(
            [](std::size_t n, const std::uint16_t *src, float *dst) {
              REQUIRE(attnscore::convert(n, reinterpret_cast<const attnscore::f16 *>(src), dst) ==
                      ATTNSCORE_OK);
            },
            payload) == "");
  CHECK(check_all_to_f16(
            [](std::size_t n, const float *src, std::uint16_t *dst) {
              REQUIRE(attnscore::convert(n, src, reinterpret_cast<attnscore::f16 *>(dst)) ==
                      ATTNSCORE_OK);
            },
            payload) == "");
  // Bad input: its status, nothing written. A pair other than f16 -> f32 and f32 -> f16 is
  // UNKNOWN_DTYPE first, whatever the rest (n == 0 and NULL included).
  std::vector<std::uint16_t> h(8, 0x3c00);
  std::vector<float> f(8, 2.0f);
  const attnscore_dtype S8 = ATTNSCORE_DTYPE_S8, bogus = static_cast<attnscore_dtype>(77);
  for (const auto &pair :
       {std::make_pair(F32, F32), std::make_pair(F16, F16), std::make_pair(S8, F32),
        std::make_pair(F32, S8), std::make_pair(F16, bogus), std::make_pair(bogus, F16)}) {
    CAPTURE(pair.first, pair.second);
    CHECK(attnscore_convert(3, pair.first, h.data(), pair.second, f.data()) ==
          ATTNSCORE_ERR_UNKNOWN_DTYPE);
    CHECK(attnscore_convert(0, pair.first, nullptr, pair.second, nullptr) ==
          ATTNSCORE_ERR_UNKNOWN_DTYPE);
  }
  CHECK(attnscore_convert(0, F16, nullptr, F32, nullptr) == ATTNSCORE_OK);
  CHECK(attnscore_convert(0, F32, nullptr, F16, nullptr) == ATTNSCORE_OK);
  CHECK(attnscore_convert(3, F16, nullptr, F32, f.data()) == ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_convert(3, F16, h.data(), F32, nullptr) == ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_convert(SIZE_MAX / 2, F16, h.data(), F32, f.data()) ==
        ATTNSCORE_ERR_SIZE_OVERFLOW);
  CHECK(attnscore_convert(3, F32, nullptr, F16, h.data()) == ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_convert(3, F32, f.data(), F16, nullptr) == ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_convert(SIZE_MAX / 2, F32, f.data(), F16, h.data()) ==
        ATTNSCORE_ERR_SIZE_OVERFLOW);
  auto *mem = reinterpret_cast<std::uint16_t *>(f.data());  // dst over src: overlap
  CHECK(attnscore_convert(4, F16, mem + 2, F32, f.data()) == ATTNSCORE_ERR_OVERLAP);
  CHECK(attnscore_convert(4, F32, f.data(), F16, mem + 7) == ATTNSCORE_ERR_OVERLAP);
  for (float x : f) CHECK(x == 2.0f);
  for (std::uint16_t x : h) CHECK(x == 0x3c00);
  // Touching is fine: 4 halves right after 2 floats.
  CHECK(attnscore_convert(2, F32, f.data(), F16, mem + 4) == ATTNSCORE_OK);
  CHECK((mem[4] == 0x4000 && mem[5] == 0x4000));
}

TEST_CASE("f16 dispatch: one f16 kernel per level, of the level chosen for f32",
          "[f16][api][dispatch]") {
  CapGuard guard;
  const attnscore_level level = GENERATE(from_range(testing::runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  const char *name = attnscore_kernel_name(ATTNSCORE_DTYPE_F16);
  REQUIRE(name != nullptr);
  CAPTURE(attnscore_level_name(level), name);
  const std::string s = name;
  CHECK(s.rfind("qk_f16_", 0) == 0);
  CHECK(s.substr(s.find("__") + 2) ==
        attnscore_level_name(attnscore_kernel_level(ATTNSCORE_DTYPE_F16)));
  // f16 runs at the f32 kernel's level, except sse2, which has no F16C (scalar then).
  const attnscore_level f32_level = attnscore_kernel_level(ATTNSCORE_DTYPE_F32);
  CHECK(attnscore_kernel_level(ATTNSCORE_DTYPE_F16) ==
        (f32_level == ATTNSCORE_LEVEL_SSE2 ? ATTNSCORE_LEVEL_SCALAR : f32_level));
}

TEST_CASE("f16 scores equal f32 scores of the converted inputs, bit for bit, at every level",
          "[f16][api]") {
  CapGuard guard;
  const attnscore_level level = GENERATE(from_range(testing::runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  CAPTURE(attnscore_level_name(level));
  // The f32 path at the f16 kernel's level (sse2 has no f16 kernel: compare with scalar then).
  const attnscore_level f16_level = attnscore_kernel_level(ATTNSCORE_DTYPE_F16);
  std::mt19937 rng(5);
  for (const std::size_t n_q : {1, 2, 3, 4, 9, 40}) {
    for (const std::size_t d : {1, 7, 64, 128, 300}) {
      const std::size_t n_k = 37 + n_q;
      std::vector<std::uint16_t> qh, kh;
      std::vector<float> qf, kf;
      random_f16(n_q * d, rng, qh, qf);
      random_f16(n_k * d, rng, kh, kf);
      std::vector<float> s16(n_q * n_k, kNaN), s32(n_q * n_k, kNaN);
      REQUIRE(attnscore_scores_f16(n_q, n_k, d, qh.data(), d, kh.data(), d, s16.data(), n_k, 0) ==
              ATTNSCORE_OK);
      REQUIRE(attnscore_set_max_level(f16_level) == ATTNSCORE_OK);
      REQUIRE(attnscore_scores_f32(n_q, n_k, d, qf.data(), d, kf.data(), d, s32.data(), n_k, 0) ==
              ATTNSCORE_OK);
      REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
      CAPTURE(n_q, d);
      CHECK(std::memcmp(s16.data(), s32.data(), s16.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("f16 specials: Inf, NaN, subnormals kept, 2 x 65504 summed in f32", "[f16][api][ieee]") {
  CapGuard guard;
  const attnscore_level level = GENERATE(from_range(testing::runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  CAPTURE(attnscore_level_name(level), attnscore_kernel_name(ATTNSCORE_DTYPE_F16));
  for (const std::size_t n_q : {1, 9}) {  // decode and prefill
    CAPTURE(n_q);
    const std::size_t d = 2, n_k = 5;
    // Keys: (65504, 65504), (2^10, 0), (+Inf, 1), (NaN, 1), (-65504, -65504).
    const std::uint16_t keys[n_k * d] = {0x7bff, 0x7bff, 0x6400, 0x0000, 0x7c00,
                                         0x3c00, 0x7e00, 0x3c00, 0xfbff, 0xfbff};
    // Every query row: (1, 1), except row 0: (2^-24, 1), the smallest subnormal.
    std::vector<std::uint16_t> q(n_q * d, 0x3c00);
    q[0] = 0x0001;
    std::vector<float> s(n_q * n_k, 0.0f);
    REQUIRE(attnscore_scores_f16(n_q, n_k, d, q.data(), d, keys, d, s.data(), n_k, 1.0f) ==
            ATTNSCORE_OK);
    const float inf = std::numeric_limits<float>::infinity();
    // Row 0: 2^-24 * 2^10 = 2^-14 exactly (the subnormal input was kept, not flushed).
    CHECK(s[1] == std::ldexp(1.0f, -14));
    CHECK(s[0] == static_cast<float>(65504.0 * std::ldexp(1.0, -24) + 65504.0));
    for (std::size_t i = 1; i < n_q; ++i) {
      CHECK(s[i * n_k + 0] == 131008.0f);  // past 65504: f32 accumulation does not overflow
      CHECK(s[i * n_k + 4] == -131008.0f);
      CHECK(s[i * n_k + 1] == 1024.0f);
    }
    for (std::size_t i = 0; i < n_q; ++i) {
      CHECK(s[i * n_k + 2] == inf);
      CHECK(std::isnan(s[i * n_k + 3]));
    }
    // The f16 output: each score rounded once; past 65504 (from 65520) it is +-Inf.
    std::vector<std::uint16_t> s16(n_q * n_k, 0);
    REQUIRE(attention_f16(n_q, n_k, d, q.data(), d, keys, d, s16.data(), ATTNSCORE_DTYPE_F16, n_k,
                          1.0f) == ATTNSCORE_OK);
    CHECK(s16[1] == 0x0400);  // 2^-14, the smallest normal
    for (std::size_t i = 1; i < n_q; ++i) {
      CHECK(s16[i * n_k + 0] == 0x7c00);
      CHECK(s16[i * n_k + 4] == 0xfc00);
      CHECK(s16[i * n_k + 1] == 0x6400);
    }
    for (std::size_t i = 0; i < n_q; ++i) {
      CHECK(s16[i * n_k + 2] == 0x7c00);
      CHECK((s16[i * n_k + 3] & 0x7c00) == 0x7c00);
      CHECK((s16[i * n_k + 3] & 0x03ff) != 0);
    }
  }
}

TEST_CASE("f16 output: each score is the f32 score rounded once, blocks and guards", "[f16][api]") {
  CapGuard guard;
  const attnscore_level level = GENERATE(from_range(testing::runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  CAPTURE(attnscore_level_name(level));
  std::mt19937 rng(17);
  struct Case {
    std::size_t n_q, n_k, d;
  };
  // Long rows and many rows: past the call's blocks of S.
  for (const Case c : {Case{1, 2100, 64}, Case{3, 700, 33}, Case{33, 70, 80}, Case{70, 130, 17}}) {
    const std::size_t lds = c.n_k + 3;
    std::vector<std::uint16_t> qh, kh;
    std::vector<float> qf, kf;
    random_f16(c.n_q * c.d, rng, qh, qf);
    random_f16(c.n_k * c.d, rng, kh, kf);
    std::vector<float> s32(c.n_q * c.n_k);
    std::vector<std::uint16_t> s16(c.n_q * lds + 1, 0xa5a5);
    const float scale = 0.75f;
    REQUIRE(attnscore_scores_f16(c.n_q, c.n_k, c.d, qh.data(), c.d, kh.data(), c.d, s32.data(),
                                 c.n_k, scale) == ATTNSCORE_OK);
    REQUIRE(attention_f16(c.n_q, c.n_k, c.d, qh.data(), c.d, kh.data(), c.d, s16.data(),
                          ATTNSCORE_DTYPE_F16, lds, scale) == ATTNSCORE_OK);
    CAPTURE(c.n_q, c.n_k, c.d);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < c.n_q; ++i) {
      for (std::size_t j = 0; j < lds; ++j) {
        const std::uint16_t want = j < c.n_k ? testing::f16_nearest(s32[i * c.n_k + j]) : 0xa5a5;
        bad += s16[i * lds + j] != want;
      }
    }
    CHECK(bad == 0);
    CHECK(s16.back() == 0xa5a5);
  }
}

TEST_CASE("f16 bad input: its own status, nothing written", "[f16][api][errors]") {
  CapGuard guard;
  const attnscore_level level = GENERATE(from_range(testing::runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  CAPTURE(attnscore_level_name(level));
  std::vector<std::uint16_t> q(64, 0x3c00), k(64, 0x3c00), big(256, 0x3c00);
  std::vector<float> s(64, testing::from_bits(testing::kGuardBits));
  std::vector<std::uint16_t> s16(64, 0xa5a5);
  const std::vector<float> s0 = s;
  const std::vector<std::uint16_t> s160 = s16;
  const float inf = std::numeric_limits<float>::infinity();
  const std::size_t huge = SIZE_MAX / 2;
  struct Case {
    const char *what;
    attnscore_status want;
    std::size_t n_q, n_k, d;
    const std::uint16_t *q;
    std::size_t ldq;
    const std::uint16_t *k;
    std::size_t ldk;
    bool s_null;
    std::size_t lds;
    float scale;
  };
  const std::uint16_t *qp = q.data(), *kp = k.data();
  const Case cases[] = {
      {"q null", ATTNSCORE_ERR_NULL_POINTER, 2, 2, 4, nullptr, 4, kp, 4, false, 2, 0},
      {"k null", ATTNSCORE_ERR_NULL_POINTER, 2, 2, 4, qp, 4, nullptr, 4, false, 2, 0},
      {"s null", ATTNSCORE_ERR_NULL_POINTER, 2, 2, 4, qp, 4, kp, 4, true, 2, 0},
      {"d zero", ATTNSCORE_ERR_ZERO_DIM, 2, 2, 0, qp, 4, kp, 4, false, 2, 0},
      {"ldq < d", ATTNSCORE_ERR_BAD_LDQ, 2, 2, 4, qp, 3, kp, 4, false, 2, 0},
      {"ldk < d", ATTNSCORE_ERR_BAD_LDK, 2, 2, 4, qp, 4, kp, 3, false, 2, 0},
      {"lds < n_k", ATTNSCORE_ERR_BAD_LDS, 2, 2, 4, qp, 4, kp, 4, false, 1, 0},
      {"scale NaN", ATTNSCORE_ERR_BAD_SCALE, 2, 2, 4, qp, 4, kp, 4, false, 2, kNaN},
      {"scale -Inf", ATTNSCORE_ERR_BAD_SCALE, 2, 2, 4, qp, 4, kp, 4, false, 2, -inf},
      {"scale subnormal", ATTNSCORE_ERR_BAD_SCALE, 2, 2, 4, qp, 4, kp, 4, false, 2, 1e-40f},
      {"rows*lds overflows", ATTNSCORE_ERR_SIZE_OVERFLOW, 3, 2, 4, qp, 4, kp, 4, false, huge, 0},
      {"rows*ldq overflows", ATTNSCORE_ERR_SIZE_OVERFLOW, 3, 2, 4, qp, huge, kp, 4, false, 2, 0},
      {"K wraps the address space", ATTNSCORE_ERR_SIZE_OVERFLOW, 2, 2, 4, qp, 4, kp,
       (SIZE_MAX - reinterpret_cast<std::uintptr_t>(kp)) / 2 - 2, false, 2, 0},
  };
  for (const Case &c : cases) {
    CAPTURE(c.what);
    CHECK(attnscore_scores_f16(c.n_q, c.n_k, c.d, c.q, c.ldq, c.k, c.ldk,
                               c.s_null ? nullptr : s.data(), c.lds, c.scale) == c.want);
    // f16 S (through the attention call): the same status.
    CHECK(attention_f16(c.n_q, c.n_k, c.d, c.q, c.ldq, c.k, c.ldk, c.s_null ? nullptr : s16.data(),
                        ATTNSCORE_DTYPE_F16, c.lds, c.scale) == c.want);
    CHECK(std::memcmp(s.data(), s0.data(), s.size() * sizeof(float)) == 0);
    CHECK(s16 == s160);
  }
  // Overlap: S (f32, 4 bytes an element) over Q or K, in one buffer of halves.
  auto *alias = reinterpret_cast<float *>(big.data() + 64);
  const std::vector<std::uint16_t> big0 = big;
  CHECK(attnscore_scores_f16(2, 2, 4, big.data() + 60, 4, kp, 4, alias, 2, 0) ==
        ATTNSCORE_ERR_OVERLAP);
  CHECK(attnscore_scores_f16(2, 2, 4, qp, 4, big.data() + 70, 4, alias, 2, 0) ==
        ATTNSCORE_ERR_OVERLAP);
  CHECK(attention_f16(2, 2, 4, big.data(), 4, kp, 4, big.data() + 7, ATTNSCORE_DTYPE_F16, 2, 0) ==
        ATTNSCORE_ERR_OVERLAP);
  CHECK(attention_f16(2, 2, 4, qp, 4, big.data() + 70, 4, alias, ATTNSCORE_DTYPE_F32, 2, 0) ==
        ATTNSCORE_ERR_OVERLAP);
  CHECK(big == big0);
  // Touching is fine: S (4 halves of f16 output) right after Q (8 halves).
  CHECK(attention_f16(2, 2, 4, big.data(), 4, kp, 4, big.data() + 8, ATTNSCORE_DTYPE_F16, 2, 0) ==
        ATTNSCORE_OK);
  // Empty outputs succeed whatever the rest.
  CHECK(attnscore_scores_f16(0, 5, 4, nullptr, 0, nullptr, 0, nullptr, 0, kNaN) == ATTNSCORE_OK);
  CHECK(attention_f16(5, 0, 0, nullptr, 0, nullptr, 0, nullptr, ATTNSCORE_DTYPE_F16, 0, 0) ==
        ATTNSCORE_OK);
  CHECK(attention_f16(0, 5, 4, nullptr, 0, nullptr, 0, nullptr, ATTNSCORE_DTYPE_F16, 0, kNaN) ==
        ATTNSCORE_OK);

  // The key cache (one KV head), and attention from it.
  const std::size_t cap = 10, d = 8;
  const auto shape = [](std::size_t capacity, std::size_t dim) {
    return attnscore_cache_shape{ATTNSCORE_CACHE_KEYS, ATTNSCORE_DTYPE_F16, 1, capacity, dim};
  };
  const attnscore_cache_shape sh = shape(cap, d), zero_cap = shape(0, d), zero_d = shape(cap, 0),
                              too_big = shape(SIZE_MAX / 2, 64);
  const std::size_t bytes = attnscore_cache_bytes(&sh);
  REQUIRE(bytes > 0);
  CHECK(attnscore_cache_bytes(&zero_cap) == 0);
  CHECK(attnscore_cache_bytes(&too_big) == 0);
  std::vector<unsigned char> mem(bytes);
  attnscore_cache *c = nullptr;
  CHECK(attnscore_cache_init(mem.data(), bytes - 1, &sh, &c) == ATTNSCORE_ERR_BUFFER_TOO_SMALL);
  CHECK(attnscore_cache_init(nullptr, bytes, &sh, &c) == ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_cache_init(mem.data(), bytes, &zero_d, &c) == ATTNSCORE_ERR_ZERO_DIM);
  CHECK(attnscore_cache_init(mem.data(), bytes, &too_big, &c) == ATTNSCORE_ERR_SIZE_OVERFLOW);
  REQUIRE(attnscore_cache_init(mem.data(), bytes, &sh, &c) == ATTNSCORE_OK);
  std::vector<std::uint16_t> keys(cap * d, 0x3c00);
  const auto src = [&](const std::uint16_t *data, std::size_t ld) {
    attnscore_tensor t;
    std::memset(&t, 0, sizeof t);
    t.data = data, t.dtype = ATTNSCORE_DTYPE_F16, t.head_stride = cap * ld, t.row_stride = ld;
    return t;
  };
  const attnscore_tensor all = src(keys.data(), d), short_ld = src(keys.data(), d - 1),
                         null_keys = src(nullptr, d),
                         self = src(reinterpret_cast<const std::uint16_t *>(c), d);
  CHECK(attnscore_cache_append(c, 2, &short_ld) == ATTNSCORE_ERR_BAD_LDK);
  CHECK(attnscore_cache_append(c, 2, &null_keys) == ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_cache_append(c, cap + 1, &all) == ATTNSCORE_ERR_CACHE_FULL);
  CHECK(attnscore_cache_append(c, 1, &self) == ATTNSCORE_ERR_OVERLAP);
  CHECK(attnscore_cache_size(c) == 0);
  REQUIRE(attnscore_cache_append(c, cap, &all) == ATTNSCORE_OK);
  std::vector<float> out(5 * cap, 3.0f);
  // Attention from the cache: Q's row stride ldq, S's lds, K the first n_k keys of `cache`.
  const auto from_cache = [&](std::size_t n_q, std::size_t ldq, const attnscore_cache *cache,
                              float *s_out, std::size_t lds, float scale) {
    attnscore_attention_desc a = attnscore_attention_dense(ATTNSCORE_DTYPE_F16, 1, 1, n_q, cap, d);
    a.q.data = q.data(), a.q.row_stride = ldq;
    a.k_cache = cache;
    a.s.data = s_out, a.s.row_stride = lds;
    a.scale = scale;
    return attnscore_attention(&a, nullptr);
  };
  CHECK(from_cache(5, d - 1, c, out.data(), cap, 0) == ATTNSCORE_ERR_BAD_LDQ);
  CHECK(from_cache(5, d, c, out.data(), cap - 1, 0) == ATTNSCORE_ERR_BAD_LDS);
  CHECK(from_cache(5, d, c, out.data(), cap, kNaN) == ATTNSCORE_ERR_BAD_SCALE);
  CHECK(from_cache(5, d, nullptr, out.data(), cap, 0) == ATTNSCORE_ERR_NULL_POINTER);  // no K
  CHECK(from_cache(1, d, c, reinterpret_cast<float *>(mem.data()), cap, 0) ==
        ATTNSCORE_ERR_OVERLAP);
  // A cache of another dtype (f32) is a cache, not an f16 one: DTYPE_MISMATCH.
  const attnscore_cache_shape sh32{ATTNSCORE_CACHE_KEYS, ATTNSCORE_DTYPE_F32, 1, cap, d};
  std::vector<unsigned char> mem32(attnscore_cache_bytes(&sh32));
  attnscore_cache *c32 = nullptr;
  REQUIRE(attnscore_cache_init(mem32.data(), mem32.size(), &sh32, &c32) == ATTNSCORE_OK);
  CHECK(attnscore_cache_append(c32, 1, &all) == ATTNSCORE_ERR_DTYPE_MISMATCH);
  CHECK(from_cache(1, d, c32, out.data(), cap, 0) == ATTNSCORE_ERR_DTYPE_MISMATCH);
  CHECK(attnscore_cache_size(c32) == 0);
  // A real cache's address shifted by a byte: refused before its header is read (misaligned).
  const auto *shifted =
      reinterpret_cast<const attnscore_cache *>(reinterpret_cast<const unsigned char *>(c) + 1);
  CHECK(from_cache(1, d, shifted, out.data(), cap, 0) == ATTNSCORE_ERR_BAD_CACHE);
  CHECK(attnscore_cache_size(shifted) == 0);
  CHECK(attnscore_cache_append(const_cast<attnscore_cache *>(shifted), 1, &all) ==
        ATTNSCORE_ERR_BAD_CACHE);
  for (float x : out) CHECK(x == 3.0f);
  CHECK(attnscore_cache_size(c) == cap);
}

namespace {

// Whether ATTNSCORE_ATTN_F16_ACCUMULATE should accumulate in binary16 under `cap`, from the
// features detected (independent of the registry): an f16-accumulating kernel compiled, FP16
// arithmetic (FPHP and ASIMDHP) and a cap at neon or above.
bool expect_f16acc(attnscore_level cap) {
  const std::uint64_t fp16 = ATTNSCORE_CPU_FPHP | ATTNSCORE_CPU_ASIMDHP;
  return ATTNSCORE_HAVE_NEON_FP16ACC && (attnscore_cpu_features() & fp16) == fp16 &&
         cap != ATTNSCORE_LEVEL_SCALAR;
}

bool f16acc_available() { return attnscore_flag_available(ATTNSCORE_ATTN_F16_ACCUMULATE) != 0; }

}  // namespace

TEST_CASE("f16 accumulation: opt-in, within its bound, or the f32 call's bits where unavailable",
          "[f16][api][f16acc]") {
  CapGuard guard;
  const attnscore_level level = GENERATE(from_range(testing::runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  const bool avail = f16acc_available();
  CAPTURE(attnscore_level_name(level), attnscore::active_kernel_f16acc().name, avail);
  REQUIRE(avail == expect_f16acc(level));
  CHECK((attnscore::active_kernel_f16acc().acc != nullptr) == avail);
  // Never the default: the plain call keeps its f32-accumulating kernel.
  CHECK(attnscore::active_kernel_f16().acc == nullptr);
  std::mt19937 rng(23);
  std::size_t differ = 0;
  for (const std::size_t n_q : {1, 2, 3, 4, 5, 9}) {
    for (const std::size_t d : {1, 7, 8, 9, 64, 128, 300}) {
      const std::size_t n_k = 19 + n_q;
      testing::Buffer q(n_q, d, d + 1, 1, kNaN), k(n_k, d, d + 3, 2, kNaN);
      testing::fill_uniform(q, rng);
      testing::fill_uniform(k, rng);
      std::vector<std::uint16_t> qh(q.mem.size()), kh(k.mem.size());
      for (std::size_t i = 0; i < q.mem.size(); ++i) {
        qh[i] = testing::f16_nearest(q.mem[i]);
        q.mem[i] = static_cast<float>(testing::f16_value(qh[i]));
      }
      for (std::size_t i = 0; i < k.mem.size(); ++i) {
        kh[i] = testing::f16_nearest(k.mem[i]);
        k.mem[i] = static_cast<float>(testing::f16_value(kh[i]));
      }
      testing::Buffer s(n_q, n_k, n_k + 2, 3, testing::from_bits(testing::kGuardBits));
      std::vector<float> plain(n_q * n_k);
      const float scale = 0.3f;
      REQUIRE(attention_f16(n_q, n_k, d, qh.data() + 1, q.ld, kh.data() + 2, k.ld, s.data(),
                            ATTNSCORE_DTYPE_F32, s.ld, scale,
                            ATTNSCORE_ATTN_F16_ACCUMULATE) == ATTNSCORE_OK);
      REQUIRE(attnscore_scores_f16(n_q, n_k, d, qh.data() + 1, q.ld, kh.data() + 2, k.ld,
                                   plain.data(), n_k, scale) == ATTNSCORE_OK);
      CAPTURE(n_q, d);
      const testing::Reference ref = testing::reference(q, k, d, scale);
      CHECK(testing::check_scores_f16acc(s, ref, d, scale) == "");
      bool same = true;
      for (std::size_t i = 0; i < n_q; ++i)
        for (std::size_t j = 0; j < n_k; ++j)
          same = same && testing::to_bits(s.at(i, j)) == testing::to_bits(plain[i * n_k + j]);
      if (!avail) CHECK(same);  // the fallback: exactly the f32-accumulating call
      differ += !same;
      // The f16 output: each f32 score of the same call rounded once.
      std::vector<std::uint16_t> s16(n_q * n_k, 0xa5a5);
      REQUIRE(attention_f16(n_q, n_k, d, qh.data() + 1, q.ld, kh.data() + 2, k.ld, s16.data(),
                            ATTNSCORE_DTYPE_F16, n_k, scale,
                            ATTNSCORE_ATTN_F16_ACCUMULATE) == ATTNSCORE_OK);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < n_q; ++i)
        for (std::size_t j = 0; j < n_k; ++j)
          bad += s16[i * n_k + j] != testing::f16_nearest(s.at(i, j));
      CHECK(bad == 0);
    }
  }
  // Where it is available, f16 accumulation really happened: most shapes round differently.
  if (avail) CHECK(differ > 20);
}

TEST_CASE("f16 accumulation overflows past 65504 (f32 accumulation does not)",
          "[f16][api][f16acc][ieee]") {
  CapGuard guard;
  const attnscore_level level = GENERATE(from_range(testing::runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  const bool avail = f16acc_available();
  CAPTURE(attnscore_level_name(level), avail);
  for (const std::size_t n_q : {1, 9}) {
    const std::size_t d = 2, n_k = 3;
    // Keys (65504, 65504), (-65504, -65504), (1, 1); every query (1, 1).
    const std::uint16_t keys[n_k * d] = {0x7bff, 0x7bff, 0xfbff, 0xfbff, 0x3c00, 0x3c00};
    std::vector<std::uint16_t> q(n_q * d, 0x3c00);
    std::vector<float> s(n_q * n_k, kNaN), plain(n_q * n_k, kNaN);
    REQUIRE(attention_f16(n_q, n_k, d, q.data(), d, keys, d, s.data(), ATTNSCORE_DTYPE_F32, n_k,
                          1.0f, ATTNSCORE_ATTN_F16_ACCUMULATE) == ATTNSCORE_OK);
    REQUIRE(attention_f16(n_q, n_k, d, q.data(), d, keys, d, plain.data(), ATTNSCORE_DTYPE_F32, n_k,
                          1.0f, 0) == ATTNSCORE_OK);
    const float inf = std::numeric_limits<float>::infinity();
    CAPTURE(n_q);
    for (std::size_t i = 0; i < n_q; ++i) {
      CHECK(plain[i * n_k + 0] == 131008.0f);
      CHECK(plain[i * n_k + 1] == -131008.0f);
      CHECK(s[i * n_k + 0] == (avail ? inf : 131008.0f));
      CHECK(s[i * n_k + 1] == (avail ? -inf : -131008.0f));
      CHECK(s[i * n_k + 2] == 2.0f);
    }
  }
}

TEST_CASE("f16 option bits: unknown bits are ATTNSCORE_ERR_BAD_FLAGS, in their place",
          "[f16][api][f16acc][errors]") {
  std::vector<std::uint16_t> q(8, 0x3c00), k(8, 0x3c00), s16(4, 0xa5a5);
  std::vector<float> s(4, 3.0f);
  const attnscore_dtype F32 = ATTNSCORE_DTYPE_F32, F16 = ATTNSCORE_DTYPE_F16;
  for (const unsigned flags : {4u, 0x80000000u, ATTNSCORE_ATTN_F16_ACCUMULATE | 4u}) {
    CAPTURE(flags);
    CHECK(attention_f16(2, 2, 4, q.data(), 4, k.data(), 4, s.data(), F32, 2, 0, flags) ==
          ATTNSCORE_ERR_BAD_FLAGS);
    CHECK(attention_f16(2, 2, 4, q.data(), 4, k.data(), 4, s16.data(), F16, 2, 0, flags) ==
          ATTNSCORE_ERR_BAD_FLAGS);
    // The checks before it come first; n_q == 0 is a no-op whatever the rest.
    CHECK(attention_f16(2, 2, 4, nullptr, 4, k.data(), 4, s.data(), F32, 2, 0, flags) ==
          ATTNSCORE_ERR_NULL_POINTER);
    CHECK(attention_f16(2, 2, 4, q.data(), 4, k.data(), 4, s.data(), F32, 1, 0, flags) ==
          ATTNSCORE_ERR_BAD_LDS);
    CHECK(attention_f16(2, 2, 4, q.data(), 4, k.data(), 4, s.data(), F32, 2, kNaN, flags) ==
          ATTNSCORE_ERR_BAD_SCALE);
    CHECK(attention_f16(0, 2, 4, q.data(), 4, k.data(), 4, s.data(), F32, 2, 0, flags) ==
          ATTNSCORE_OK);
    // ... and the ones after it (sizes, overlap) come later.
    CHECK(attention_f16(2, 2, 4, q.data(), 4, k.data(), 4, q.data(), F16, 2, 0, flags) ==
          ATTNSCORE_ERR_BAD_FLAGS);
    CHECK(attention_f16(2, 2, 4, q.data(), 4, k.data(), 4, s.data(), F32, SIZE_MAX / 2, 0, flags) ==
          ATTNSCORE_ERR_BAD_FLAGS);
  }
  // The known flag is fine with f16 Q and K, f32 or f16 S.
  CHECK(attention_f16(2, 2, 4, q.data(), 4, k.data(), 4, q.data(), F16, 2, 0,
                      ATTNSCORE_ATTN_F16_ACCUMULATE) == ATTNSCORE_ERR_OVERLAP);
  for (float x : s) CHECK(x == 3.0f);
  for (std::uint16_t x : s16) CHECK(x == 0xa5a5);
  for (std::uint16_t x : q) CHECK(x == 0x3c00);
}

TEST_CASE("f16 accumulation on the emulated CPUs: the kernel each gets", "[f16][api][f16acc]") {
  const char *expect = std::getenv("ATTNSCORE_EXPECT_F16ACC_KERNEL");
  if (expect == nullptr || std::getenv("ATTNSCORE_MAX_LEVEL") != nullptr) {
    SUCCEED("asserted by the emulator entries (ctest sets ATTNSCORE_EXPECT_F16ACC_KERNEL)");
    return;
  }
  CHECK(std::string(attnscore::active_kernel_f16acc().name) == expect);
  CHECK(f16acc_available() == (attnscore::active_kernel_f16acc().acc != nullptr));
}

TEST_CASE("C++ f16 views and key cache", "[f16][api]") {
  using attnscore::f16;
  using attnscore::HeadsView;
  using attnscore::MatrixView;
  std::vector<f16> q(3 * 4), k(5 * 4);
  for (auto &x : q) x = f16{0x3c00};  // 1.0
  for (auto &x : k) x = f16{0xc000};  // -2.0
  std::vector<float> s(3 * 5);
  MatrixView<const f16> Q(q.data(), 3, 4), K(k.data(), 5, 4);
  REQUIRE(attnscore::scores(Q, K, MatrixView<float>(s.data(), 3, 5), 1.0f) == ATTNSCORE_OK);
  for (float x : s) CHECK(x == -8.0f);
  CHECK(attnscore::scores(Q, K, MatrixView<float>(s.data(), 3, 4)) == ATTNSCORE_ERR_SHAPE_MISMATCH);
  // f16 S through attention(): -8 * 0.5 = -4.
  std::vector<f16> s16(3 * 5);
  attnscore::AttentionOptions half;
  half.scale = 0.5f;
  REQUIRE(attnscore::attention(Q, K, MatrixView<f16>(s16.data(), 3, 5), half) == ATTNSCORE_OK);
  for (auto x : s16) CHECK(x.bits == 0xc400);  // -4.0
  CHECK(attnscore::attention(Q, K, MatrixView<f16>(s16.data(), 3, 4), half) ==
        ATTNSCORE_ERR_SHAPE_MISMATCH);
  // f16 accumulation through the option: exact here, so the same values either way.
  attnscore::AttentionOptions acc = half;
  acc.f16_accumulate = true;
  std::fill(s.begin(), s.end(), 0.0f);
  REQUIRE(attnscore::attention(Q, K, MatrixView<float>(s.data(), 3, 5), acc) == ATTNSCORE_OK);
  for (float x : s) CHECK(x == -4.0f);
  // The key cache.
  std::vector<unsigned char> mem(attnscore::KeyCache<f16>::bytes(1, 8, 4));
  attnscore::KeyCache<f16> cache(mem.data(), mem.size(), 1, 8, 4);
  REQUIRE(cache.status() == ATTNSCORE_OK);
  CHECK(cache.append(MatrixView<const f16>(k.data(), 5, 3, 4)) == ATTNSCORE_ERR_SHAPE_MISMATCH);
  REQUIRE(cache.append(K) == ATTNSCORE_OK);
  CHECK(cache.size() == 5);
  attnscore::AttentionOptions one;
  one.scale = 1.0f;
  std::fill(s.begin(), s.end(), 0.0f);
  REQUIRE(attnscore::attention(Q, cache, MatrixView<float>(s.data(), 3, 5), one) == ATTNSCORE_OK);
  for (float x : s) CHECK(x == -8.0f);
  std::fill(s16.begin(), s16.end(), f16{0});
  REQUIRE(attnscore::attention(Q, cache, MatrixView<f16>(s16.data(), 3, 5), half) == ATTNSCORE_OK);
  for (auto x : s16) CHECK(x.bits == 0xc400);
  CHECK(attnscore::attention(Q, cache, MatrixView<f16>(s16.data(), 3, 6)) ==
        ATTNSCORE_ERR_SHAPE_MISMATCH);
  CHECK(attnscore::to_f32(attnscore::to_f16(65519.0f)) == 65504.0f);
  CHECK(std::isinf(attnscore::to_f32(attnscore::to_f16(65520.0f))));
  CHECK(attnscore::to_f16(-2.0f).bits == 0xc000);
  CHECK(attnscore::to_f32(f16{0x0001}) == std::ldexp(1.0f, -24));
}

#endif  // ATTNSCORE_HAVE_F16
