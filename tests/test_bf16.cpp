// SPDX-License-Identifier: Apache-2.0
// The bf16 path: both converters on all 65,536 bfloat16 patterns and every rounding boundary of
// each, at every bf16 kernel and through attnscore_convert at every level; dispatch; the default
// mode's contract, bit for bit the f32 call on the converted inputs (scores, attention from raw K
// and from the key cache, GQA, masks, softmax, f16 S); quantization from bf16; bad input. The
// shape sweep of every bf16 kernel and its key cache are in test_kernels.cpp (the kernel tester).
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include "attnscore/attnscore.hpp"
#include "dispatch/kernels.h"
#include "support.hpp"

#if !ATTNSCORE_HAVE_F16

TEST_CASE("bf16 left out of the build: its calls say so", "[bf16][api]") {
  std::uint16_t h[4] = {0x3f80, 0x3f80, 0x3f80, 0x3f80};
  float s[4] = {7.0f, 7.0f, 7.0f, 7.0f};
  CHECK(attnscore_scores_bf16(1, 1, 4, h, 4, h, 4, s, 1, 0.0f) == ATTNSCORE_ERR_UNKNOWN_DTYPE);
  CHECK(attnscore_convert(1, ATTNSCORE_DTYPE_BF16, h, ATTNSCORE_DTYPE_F32, s) ==
        ATTNSCORE_ERR_UNKNOWN_DTYPE);
  CHECK(s[0] == 7.0f);
  CHECK(attnscore_kernel_name(ATTNSCORE_DTYPE_BF16) == nullptr);
}

#else

using attnscore::KernelF16;
using testing::CapGuard;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr attnscore_dtype BF16 = ATTNSCORE_DTYPE_BF16, F32 = ATTNSCORE_DTYPE_F32;

std::uint32_t bits_of(float x) { return testing::to_bits(x); }

// bf16 -> f32 of every pattern through `convert(n, src, dst)`, in one call and in calls of 7 (the
// vector converters' tails): the value of the bits (the oracle), and for a NaN the same bits in
// the top half (widening keeps them all). Returns "" or the first failure.
template <class Convert>
std::string check_all_to_f32(Convert convert) {
  std::vector<std::uint16_t> in(65536);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::uint16_t>(i);
  for (const std::size_t chunk : {std::size_t{65536}, std::size_t{7}}) {
    std::vector<float> out(65536 + 1, testing::from_bits(testing::kGuardBits));
    for (std::size_t i = 0; i < in.size(); i += chunk)
      convert(std::min(chunk, in.size() - i), in.data() + i, out.data() + i);
    if (bits_of(out[65536]) != testing::kGuardBits) return "wrote past the end";
    for (std::size_t i = 0; i < in.size(); ++i) {
      const auto h = static_cast<std::uint16_t>(i);
      const double v = testing::bf16_value(h);
      const std::uint32_t got = bits_of(out[i]);
      const bool ok = std::isnan(v) ? got == static_cast<std::uint32_t>(h) << 16
                                    : got == bits_of(static_cast<float>(v));
      if (!ok) {
        char msg[96];
        std::snprintf(msg, sizeof msg, "bf16 0x%04x gave f32 0x%08x (chunk %zu)", h, got, chunk);
        return msg;
      }
    }
  }
  return "";
}

// Every f32 value where f32 -> bf16 rounding can go wrong: each bf16 value of either sign, the
// midpoint to its neighbour (ties to even) and the floats either side of it, the overflow
// boundary, f32 subnormals (never flushed), Inf and NaNs with payloads.
std::vector<float> to_bf16_inputs() {
  std::vector<float> xs;
  for (std::uint32_t p = 0; p < 0x7f80; ++p) {
    const float v = testing::from_bits(p << 16), mid = testing::from_bits(p << 16 | 0x8000);
    for (const float x : {v, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, FLT_MAX)}) {
      xs.push_back(x);
      xs.push_back(-x);
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (const float x : {inf, -inf, FLT_MAX, 1e-40f, -1e-45f, FLT_MIN, 3.0e38f}) xs.push_back(x);
  for (const std::uint32_t b :
       {0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x7fa00000u, 0xffffffffu, 0x7f80ffffu, 0xff810000u})
    xs.push_back(testing::from_bits(b));
  return xs;
}

template <class Convert>
std::string check_all_to_bf16(Convert convert) {
  const std::vector<float> xs = to_bf16_inputs();
  for (const std::size_t chunk : {xs.size(), std::size_t{5}}) {
    std::vector<std::uint16_t> out(xs.size() + 1, 0xa5a5);
    for (std::size_t i = 0; i < xs.size(); i += chunk)
      convert(std::min(chunk, xs.size() - i), xs.data() + i, out.data() + i);
    if (out[xs.size()] != 0xa5a5) return "wrote past the end";
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const std::uint32_t b = bits_of(xs[i]);
      // A NaN keeps its sign and top payload bits, made quiet; any other value, the nearest.
      const std::uint16_t want = std::isnan(xs[i]) ? static_cast<std::uint16_t>(b >> 16 | 0x40u)
                                                   : testing::bf16_nearest(xs[i]);
      if (out[i] != want) {
        char msg[112];
        std::snprintf(msg, sizeof msg, "f32 0x%08x (%.9g) gave bf16 0x%04x, want 0x%04x", b,
                      static_cast<double>(xs[i]), out[i], want);
        return msg;
      }
    }
  }
  return "";
}

// Random bf16 values of roughly unit size, as bits and as floats.
void random_bf16(std::size_t n, std::mt19937 &rng, std::vector<std::uint16_t> &h,
                 std::vector<float> &f) {
  std::normal_distribution<float> dist;
  h.resize(n);
  f.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    h[i] = testing::bf16_nearest(dist(rng));
    f[i] = static_cast<float>(testing::bf16_value(h[i]));
  }
}

}  // namespace

TEST_CASE("every bf16 kernel's converters: all 65536 patterns, every rounding boundary",
          "[bf16][kernels][convert]") {
  const KernelF16 *kernel = GENERATE(from_range(testing::usable_kernels_bf16()));
  CAPTURE(kernel->name);
  if (kernel->dot != nullptr) return;  // the dot-product row has no converters
  CHECK(check_all_to_f32(kernel->to_f32) == "");
  CHECK(check_all_to_bf16(kernel->narrow) == "");
}

TEST_CASE("public bf16 converters at every level; bad input", "[bf16][api][convert]") {
  CapGuard guard;
  const attnscore_level level = GENERATE(from_range(testing::runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  CAPTURE(attnscore_level_name(level), attnscore_kernel_name(BF16));
  CHECK(check_all_to_f32([](std::size_t n, const std::uint16_t *src, float *dst) {
          REQUIRE(attnscore_convert(n, BF16, src, F32, dst) == ATTNSCORE_OK);
        }) == "");
  CHECK(check_all_to_bf16([](std::size_t n, const float *src, std::uint16_t *dst) {
          REQUIRE(attnscore_convert(n, F32, src, BF16, dst) == ATTNSCORE_OK);
        }) == "");
  // Pairs of a 16-bit dtype with itself or the other: UNKNOWN_DTYPE, nothing written.
  std::uint16_t h[2] = {0x3f80, 0x4000}, o[2] = {7, 7};
  for (const attnscore_dtype to : {BF16, ATTNSCORE_DTYPE_F16, ATTNSCORE_DTYPE_S8})
    CHECK(attnscore_convert(2, BF16, h, to, o) == ATTNSCORE_ERR_UNKNOWN_DTYPE);
  CHECK(attnscore_convert(2, ATTNSCORE_DTYPE_F16, h, BF16, o) == ATTNSCORE_ERR_UNKNOWN_DTYPE);
  CHECK(attnscore_convert(2, BF16, nullptr, F32, o) == ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_convert(1, F32, reinterpret_cast<float *>(h), BF16, h) == ATTNSCORE_ERR_OVERLAP);
  CHECK((o[0] == 7 && o[1] == 7 && h[0] == 0x3f80 && h[1] == 0x4000));
}

TEST_CASE("bf16 dispatch: the bf16 kernel of the level chosen for f32", "[bf16][api][dispatch]") {
  CapGuard guard;
  const attnscore_level level = GENERATE(from_range(testing::runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  const char *name = attnscore_kernel_name(BF16);
  REQUIRE(name != nullptr);
  CAPTURE(attnscore_level_name(level), name);
  const std::string s = name;
  CHECK(s.rfind("qk_bf16_", 0) == 0);
  CHECK(s.substr(s.find("__") + 2) == attnscore_level_name(attnscore_kernel_level(BF16)));
  // Every f32 level has its bf16 row (the conversion is a shift: sse2 too), on the same tile.
  CHECK(attnscore_kernel_level(BF16) == attnscore_kernel_level(F32));
  const std::string f32 = attnscore_kernel_name(F32);
  CHECK(s.substr(s.find('_', 3)) == f32.substr(f32.find('_', 3)));
}

TEST_CASE("bf16 scores and attention equal the f32 call on the converted inputs, bit for bit",
          "[bf16][api]") {
  CapGuard guard;
  const attnscore_level level = GENERATE(from_range(testing::runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  CAPTURE(attnscore_level_name(level));
  std::mt19937 rng(11);
  for (const std::size_t n_q : {1, 2, 3, 4, 9, 40}) {
    for (const std::size_t d : {1, 7, 64, 128, 300}) {
      const std::size_t n_k = 37 + n_q;
      std::vector<std::uint16_t> qh, kh;
      std::vector<float> qf, kf;
      random_bf16(n_q * d, rng, qh, qf);
      random_bf16(n_k * d, rng, kh, kf);
      std::vector<float> sb(n_q * n_k, kNaN), s32(n_q * n_k, kNaN);
      REQUIRE(attnscore_scores_bf16(n_q, n_k, d, qh.data(), d, kh.data(), d, sb.data(), n_k, 0) ==
              ATTNSCORE_OK);
      REQUIRE(attnscore_scores_f32(n_q, n_k, d, qf.data(), d, kf.data(), d, s32.data(), n_k, 0) ==
              ATTNSCORE_OK);
      CAPTURE(n_q, d);
      CHECK(std::memcmp(sb.data(), s32.data(), sb.size() * sizeof(float)) == 0);
    }
  }
  // The attention call, GQA (4 query heads on 2 KV heads), K raw and from a bf16 cache, with a
  // causal window, softcap and softmax, f32 and f16 S: the f32 call's bits on the same values
  // (from a cache: an f32 cache's, whose decode sums in another order than raw K's).
  const std::size_t hq = 4, hkv = 2, d = 72, n_k = 70;
  std::vector<std::uint16_t> kh;
  std::vector<float> kf;
  random_bf16(hkv * n_k * d, rng, kh, kf);
  const attnscore_cache_shape shape{ATTNSCORE_CACHE_KEYS, BF16, hkv, n_k, d};
  std::vector<unsigned char> mem(attnscore_cache_bytes(&shape));
  REQUIRE(!mem.empty());
  attnscore_cache *cache = nullptr;
  REQUIRE(attnscore_cache_init(mem.data(), mem.size(), &shape, &cache) == ATTNSCORE_OK);
  attnscore_tensor src;
  std::memset(&src, 0, sizeof src);
  src.data = kh.data(), src.dtype = BF16, src.head_stride = n_k * d, src.row_stride = d;
  REQUIRE(attnscore_cache_append(cache, n_k, &src) == ATTNSCORE_OK);
  const attnscore_cache_shape shape32{ATTNSCORE_CACHE_KEYS, F32, hkv, n_k, d};
  std::vector<unsigned char> mem32(attnscore_cache_bytes(&shape32));
  attnscore_cache *cache32 = nullptr;
  REQUIRE(attnscore_cache_init(mem32.data(), mem32.size(), &shape32, &cache32) == ATTNSCORE_OK);
  src.data = kf.data(), src.dtype = F32;
  REQUIRE(attnscore_cache_append(cache32, n_k, &src) == ATTNSCORE_OK);
  for (const std::size_t n_q : {1, 3, 17}) {
    std::vector<std::uint16_t> qh;
    std::vector<float> qf;
    random_bf16(hq * n_q * d, rng, qh, qf);
    for (const int variant : {0, 1, 2, 3}) {
      const bool from_cache = variant & 1, f16_s = variant & 2;
      attnscore_attention_desc a = attnscore_attention_dense(BF16, hq, hkv, n_q, n_k, d);
      a.q.data = qh.data(), a.k.data = kh.data();
      if (from_cache) a.k_cache = cache;
      a.mask = ATTNSCORE_MASK_CAUSAL | ATTNSCORE_MASK_WINDOW, a.window = 40;
      a.pos_offset = n_k - n_q, a.softcap = 3.0f;
      a.flags = variant == 3 ? ATTNSCORE_ATTN_SOFTMAX : 0u;
      const std::size_t elem = f16_s ? 2 : 4, bytes = hq * n_q * n_k * elem;
      if (f16_s) a.s.dtype = ATTNSCORE_DTYPE_F16;
      std::vector<unsigned char> sb(bytes + 8, 0xa5), s32(bytes + 8, 0x5a);
      a.s.data = sb.data();
      REQUIRE(attnscore_attention(&a, nullptr) == ATTNSCORE_OK);
      attnscore_attention_desc f = a;
      f.q.dtype = f.k.dtype = F32, f.q.data = qf.data(), f.k.data = kf.data();
      f.k_cache = from_cache ? cache32 : nullptr;
      f.s.data = s32.data();
      REQUIRE(attnscore_attention(&f, nullptr) == ATTNSCORE_OK);
      CAPTURE(n_q, from_cache, f16_s, a.flags);
      CHECK(std::memcmp(sb.data(), s32.data(), bytes) == 0);
      CHECK((sb[bytes] == 0xa5 && sb[bytes + 7] == 0xa5));
    }
  }
}

namespace {

// Whether the bf16 dot product runs under a cap of `level`, by oracles independent of the
// library's detection: the compiler runtime's and CPUID (x86) or the kernel's auxiliary vector
// (AArch64). Sapphire Rapids class cores pass over vdpbf16ps (half the FMA's rate there), not AMX.
bool dot_expected(attnscore_level level) {
#if defined(__x86_64__) && ATTNSCORE_HAVE_AVX512BF16DOT
  const bool avx512 = __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512dq") &&
                      testing::level_rank(level) >= testing::level_rank(ATTNSCORE_LEVEL_AVX512);
  const bool amx = ATTNSCORE_HAVE_AMXBF16 && testing::amx_bf16_usable();
  return avx512 &&
         (amx || (__builtin_cpu_supports("avx512bf16") && !testing::sapphirerapids_tuning()));
#elif defined(__aarch64__) && ATTNSCORE_HAVE_NEON_BF16DOT
  return (getauxval(AT_HWCAP2) & HWCAP2_BF16) != 0 &&
         testing::level_rank(level) >= testing::level_rank(ATTNSCORE_LEVEL_NEON);
#else
  (void)level;
  return false;
#endif
}

// One head of bf16 attention, n_q x n_k from q and k (rows of d), S f32, with `flags`.
std::vector<float> attend(std::size_t n_q, std::size_t n_k, std::size_t d, const std::uint16_t *q,
                          const std::uint16_t *k, unsigned flags, float scale = 0.0f) {
  attnscore_attention_desc a = attnscore_attention_dense(BF16, 1, 1, n_q, n_k, d);
  std::vector<float> s(n_q * n_k, kNaN);
  a.q.data = q, a.k.data = k, a.s.data = s.data(), a.flags = flags, a.scale = scale;
  REQUIRE(attnscore_attention(&a, nullptr) == ATTNSCORE_OK);
  return s;
}

}  // namespace

TEST_CASE("bf16 dot product: opt-in, within the bound, subnormals flushed, else the default bits",
          "[bf16][api][bf16dot]") {
  CapGuard guard;
  const attnscore_level level = GENERATE(from_range(testing::runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  const int avail = attnscore_flag_available(ATTNSCORE_ATTN_BF16_DOT);
  CAPTURE(attnscore_level_name(level), avail);
  // Available exactly where the CPU has AVX512_BF16 (or AArch64 BF16) and the cap admits its level.
  CHECK(avail == (dot_expected(level) ? 1 : 0));
  std::mt19937 rng(17);
  for (const std::size_t d : {1, 2, 7, 64, 128, 300, 1100}) {
    const std::size_t n_q = 11, n_k = 45;
    std::vector<std::uint16_t> qh, kh;
    std::vector<float> qf, kf;
    random_bf16(n_q * d, rng, qh, qf);
    random_bf16(n_k * d, rng, kh, kf);
    const std::vector<float> dot =
        attend(n_q, n_k, d, qh.data(), kh.data(), ATTNSCORE_ATTN_BF16_DOT);
    const std::vector<float> def = attend(n_q, n_k, d, qh.data(), kh.data(), 0);
    CAPTURE(d);
    if (!avail) {
      CHECK(std::memcmp(dot.data(), def.data(), dot.size() * sizeof(float)) == 0);
      continue;
    }
    // The f32 contract's bound against a long-double reference (no subnormals here).
    const double scale = attnscore_default_scale(d);
    const double u = std::ldexp(1.0, -24), gamma = (d + 1) * u / (1 - (d + 1) * u);
    for (std::size_t i = 0; i < n_q; ++i)
      for (std::size_t j = 0; j < n_k; ++j) {
        long double exact = 0, gauge = 0;
        for (std::size_t t = 0; t < d; ++t) {
          const long double p = static_cast<long double>(qf[i * d + t]) * kf[j * d + t];
          exact += p, gauge += std::fabs(p);
        }
        const double err = std::fabs(static_cast<double>(dot[i * n_k + j] - exact * scale));
        const double bound = gamma * scale * static_cast<double>(gauge) + 1e-30;
        if (!(err <= bound)) {
          CAPTURE(i, j, err, bound);
          FAIL("outside the bound");
        }
      }
    // Any block of rows gives the same bits: each row alone against the whole call.
    for (std::size_t i = 0; i < n_q; i += 5) {
      const std::vector<float> one =
          attend(1, n_k, d, qh.data() + i * d, kh.data(), ATTNSCORE_ATTN_BF16_DOT);
      CHECK(std::memcmp(one.data(), dot.data() + i * n_k, n_k * sizeof(float)) == 0);
    }
  }
  // Subnormals: a subnormal input (2^-133) and a subnormal sum (2^-64 * 2^-64 = 2^-128) are 0
  // under the dot product; the default path keeps both where the FP mode does.
  const std::uint16_t sub[4] = {0x0001, 0x0001, 0x0001, 0x0001}, one[4] = {0x3f80, 0, 0, 0},
                      tiny[4] = {0x1f80, 0, 0, 0};
  for (const auto &qk : {std::make_pair(sub, one), std::make_pair(tiny, tiny)}) {
    const float d_s = attend(1, 1, 4, qk.first, qk.second, 0, 1.0f)[0];
    const float x_s = attend(1, 1, 4, qk.first, qk.second, ATTNSCORE_ATTN_BF16_DOT, 1.0f)[0];
    // (armv7 NEON flushes subnormals in the default mode too: no dot product there.)
    if (avail) CHECK(d_s > 0.0f);
    CHECK(x_s == (avail ? 0.0f : d_s));
  }
}

TEST_CASE("bf16 quantization: the f32 helper's bits on the converted rows", "[bf16][api][s8]") {
#if ATTNSCORE_HAVE_S8
  std::mt19937 rng(3);
  const std::size_t n = 5, d = 1100;  // past the helper's chunk of converted values
  std::vector<std::uint16_t> xh;
  std::vector<float> xf;
  random_bf16(n * d, rng, xh, xf);
  std::fill(xh.begin() + d, xh.begin() + 2 * d, 0x8000);  // an all -0 row: scale 0
  std::fill(xf.begin() + d, xf.begin() + 2 * d, -0.0f);
  std::vector<std::int8_t> ob(n * d, 9), of(n * d, 7);
  std::vector<float> sb(n, kNaN), sf(n, kNaN);
  REQUIRE(attnscore_quantize_s8(n, d, BF16, xh.data(), d, ob.data(), d, sb.data()) == ATTNSCORE_OK);
  REQUIRE(attnscore_quantize_s8(n, d, F32, xf.data(), d, of.data(), d, sf.data()) == ATTNSCORE_OK);
  CHECK(ob == of);
  CHECK(std::memcmp(sb.data(), sf.data(), n * sizeof(float)) == 0);
  CHECK(sb[1] == 0.0f);
  // Inf and NaN (exponent bits all set) are NOT_FINITE, nothing written.
  for (const std::uint16_t bad : {0x7f80, 0xff80, 0x7fc1}) {
    xh[3 * d + 17] = bad;
    std::vector<std::int8_t> o(n * d, 9);
    std::vector<float> s(n, 7.0f);
    CHECK(attnscore_quantize_s8(n, d, BF16, xh.data(), d, o.data(), d, s.data()) ==
          ATTNSCORE_ERR_NOT_FINITE);
    CHECK((o[0] == 9 && s[0] == 7.0f));
  }
#else
  WARN("int8 not built: no quantization to test");
#endif
}

TEST_CASE("bf16 bad input: its own status, nothing written", "[bf16][api][errors]") {
  std::uint16_t q[8] = {0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80};
  float s[4] = {7.0f, 7.0f, 7.0f, 7.0f};
  // The f32 call's checks in the f32 call's order.
  CHECK(attnscore_scores_bf16(0, 1, 4, nullptr, 0, nullptr, 0, nullptr, 0, kNaN) == ATTNSCORE_OK);
  CHECK(attnscore_scores_bf16(1, 1, 0, q, 4, q, 4, s, 1, 0) == ATTNSCORE_ERR_ZERO_DIM);
  CHECK(attnscore_scores_bf16(1, 1, 4, q, 4, nullptr, 4, s, 1, 0) == ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_scores_bf16(1, 1, 4, q, 3, q, 4, s, 1, 0) == ATTNSCORE_ERR_BAD_LDQ);
  CHECK(attnscore_scores_bf16(1, 1, 4, q, 4, q, 3, s, 1, 0) == ATTNSCORE_ERR_BAD_LDK);
  CHECK(attnscore_scores_bf16(1, 2, 4, q, 4, q, 4, s, 1, 0) == ATTNSCORE_ERR_BAD_LDS);
  CHECK(attnscore_scores_bf16(1, 1, 4, q, 4, q, 4, s, 1, kNaN) == ATTNSCORE_ERR_BAD_SCALE);
  CHECK(attnscore_scores_bf16(1, 1, 4, q, 4, q, 4, reinterpret_cast<float *>(q + 2), 1, 0) ==
        ATTNSCORE_ERR_OVERLAP);
  CHECK((s[0] == 7.0f && q[2] == 0x3f80));
  // Attention: bf16 Q against f16 K (or an f16 cache) is DTYPE_MISMATCH; f16 accumulation is
  // an f16 option: BAD_FLAGS with bf16 Q.
  attnscore_attention_desc a = attnscore_attention_dense(BF16, 1, 1, 1, 1, 4);
  a.q.data = q, a.k.data = q + 4, a.s.data = s;
  a.k.dtype = ATTNSCORE_DTYPE_F16;
  CHECK(attnscore_attention(&a, nullptr) == ATTNSCORE_ERR_DTYPE_MISMATCH);
  a.k.dtype = BF16, a.flags = ATTNSCORE_ATTN_F16_ACCUMULATE;
  CHECK(attnscore_attention(&a, nullptr) == ATTNSCORE_ERR_BAD_FLAGS);
  // The dot product is a bf16 option: BAD_FLAGS with f16 (or f32) Q.
  attnscore_attention_desc h = a;
  h.q.dtype = h.k.dtype = ATTNSCORE_DTYPE_F16, h.flags = ATTNSCORE_ATTN_BF16_DOT;
  CHECK(attnscore_attention(&h, nullptr) == ATTNSCORE_ERR_BAD_FLAGS);
  h.q.dtype = h.k.dtype = F32;
  CHECK(attnscore_attention(&h, nullptr) == ATTNSCORE_ERR_BAD_FLAGS);
  CHECK(s[0] == 7.0f);
  a.flags = 0;
  REQUIRE(attnscore_attention(&a, nullptr) == ATTNSCORE_OK);
  CHECK(s[0] == 2.0f);  // 4 x 1 x 1 x 1/sqrt(4)
  // A bf16 cache takes bf16 keys only.
  const attnscore_cache_shape shape{ATTNSCORE_CACHE_KEYS, BF16, 1, 4, 4};
  std::vector<unsigned char> mem(attnscore_cache_bytes(&shape));
  REQUIRE(!mem.empty());
  attnscore_cache *cache = nullptr;
  REQUIRE(attnscore_cache_init(mem.data(), mem.size(), &shape, &cache) == ATTNSCORE_OK);
  attnscore_tensor src;
  std::memset(&src, 0, sizeof src);
  src.data = q, src.dtype = ATTNSCORE_DTYPE_F16, src.row_stride = 4;
  CHECK(attnscore_cache_append(cache, 1, &src) == ATTNSCORE_ERR_DTYPE_MISMATCH);
  CHECK(attnscore_cache_size(cache) == 0);
}

TEST_CASE("C++ bf16 views, key cache, converters and quantizer", "[bf16][api]") {
  using attnscore::bf16;
  using attnscore::MatrixView;
  std::vector<bf16> q(3 * 4, bf16{0x3f80}), k(5 * 4, bf16{0xc000});  // 1.0 and -2.0
  std::vector<float> s(3 * 5);
  MatrixView<const bf16> Q(q.data(), 3, 4), K(k.data(), 5, 4);
  REQUIRE(attnscore::scores(Q, K, MatrixView<float>(s.data(), 3, 5), 1.0f) == ATTNSCORE_OK);
  for (float x : s) CHECK(x == -8.0f);
  CHECK(attnscore::scores(Q, K, MatrixView<float>(s.data(), 3, 4)) == ATTNSCORE_ERR_SHAPE_MISMATCH);
  std::vector<attnscore::f16> s16(3 * 5);
  attnscore::AttentionOptions half;
  half.scale = 0.5f;
  REQUIRE(attnscore::attention(Q, K, MatrixView<attnscore::f16>(s16.data(), 3, 5), half) ==
          ATTNSCORE_OK);
  for (auto x : s16) CHECK(x.bits == 0xc400);  // -4.0 in binary16
  std::vector<unsigned char> mem(attnscore::KeyCache<bf16>::bytes(1, 8, 4));
  attnscore::KeyCache<bf16> cache(mem.data(), mem.size(), 1, 8, 4);
  REQUIRE(cache.status() == ATTNSCORE_OK);
  REQUIRE(cache.append(K) == ATTNSCORE_OK);
  std::fill(s.begin(), s.end(), 0.0f);
  REQUIRE(attnscore::attention(Q, cache, MatrixView<float>(s.data(), 3, 5), half) == ATTNSCORE_OK);
  for (float x : s) CHECK(x == -4.0f);
  CHECK(attnscore::to_bf16(1.0f + 0x1p-8f).bits == 0x3f80);  // the tie: to even
  CHECK(attnscore::to_bf16(1.0f + 0x1p-8f + 0x1p-20f).bits == 0x3f81);
  CHECK(attnscore::to_f32(bf16{0x0001}) == std::ldexp(1.0f, -133));
#if ATTNSCORE_HAVE_S8
  std::vector<std::int8_t> o(3 * 4);
  float sc[3];
  REQUIRE(attnscore::quantize(Q, MatrixView<std::int8_t>(o.data(), 3, 4), sc) == ATTNSCORE_OK);
  CHECK((o[0] == 127 && sc[0] == 1.0f / 127.0f));
#endif
}

#endif  // ATTNSCORE_HAVE_F16
