// SPDX-License-Identifier: Apache-2.0
// The int8 path through the public API: every level, dispatch, every bad input.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cfenv>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attnscore/attnscore.h"
#include "attnscore/attnscore.hpp"
#include "attnscore_config.h"
#include "support.hpp"

#if ATTNSCORE_HAVE_S8

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();

// (float)acc * ((qs * scale) * ks), acc the exact sum: the contract, by the tests' s8 oracle.
float expected(const std::int8_t *q, const std::int8_t *k, std::size_t d, float qs, float ks,
               float scale) {
  std::int64_t acc = 0;
  for (std::size_t t = 0; t < d; ++t) acc += std::int64_t{q[t]} * k[t];
  return testing::s8_score(acc, qs, ks, scale);
}

// The suffix of a kernel name: its level.
std::string level_of(const char *name) {
  const std::string s = name;
  return s.substr(s.find("__") + 2);
}

}  // namespace

TEST_CASE("s8 public API at every level: bit for bit", "[api][s8]") {
  testing::CapGuard guard;
  const attnscore_level level = GENERATE(from_range(testing::runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  const char *name = attnscore_kernel_name(ATTNSCORE_DTYPE_S8);
  REQUIRE(name != nullptr);
  CAPTURE(attnscore_level_name(level), name);
  CHECK(testing::level_rank(attnscore_kernel_level(ATTNSCORE_DTYPE_S8)) <=
        testing::level_rank(level));
  CHECK(level_of(name) == attnscore_level_name(attnscore_kernel_level(ATTNSCORE_DTYPE_S8)));
  // Every level but sse2 has an int8 kernel (docs/dispatch.md): a cap at a level this CPU runs
  // gets it.
  if (level != ATTNSCORE_LEVEL_SSE2) CHECK(attnscore_kernel_level(ATTNSCORE_DTYPE_S8) == level);
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> v(-128, 127);
  std::uniform_real_distribution<float> sd(0.001f, 0.05f);
  for (std::size_t d : {1, 3, 4, 5, 64, 100, 128, 600})
    for (std::size_t n_q : {1, 2, 3, 9, 40})
      for (std::size_t n_k : {1, 7, 33, 70}) {
        const std::size_t ldq = d + 1, ldk = d + 3, lds = n_k + 2;
        // Exactly the bytes the call may read (no tail after the last row's d elements): an
        // overread is an ASan error.
        std::vector<std::int8_t> q((n_q - 1) * ldq + d), k((n_k - 1) * ldk + d);
        for (auto &x : q) x = static_cast<std::int8_t>(v(rng));
        for (auto &x : k) x = static_cast<std::int8_t>(v(rng));
        const bool per_row = (d + n_q + n_k) % 2 == 0;
        std::vector<float> qs(per_row ? n_q : 1), ks(per_row ? n_k : 1);
        for (float &x : qs) x = sd(rng);
        for (float &x : ks) x = sd(rng);
        std::vector<float> s(n_q * lds, testing::from_bits(testing::kGuardBits));
        REQUIRE(attnscore_scores_s8(n_q, n_k, d, q.data(), ldq, qs.data(), qs.size(), k.data(), ldk,
                                    ks.data(), ks.size(), s.data(), lds, 0.0f) == ATTNSCORE_OK);
        const float scale = attnscore_default_scale(d);
        for (std::size_t i = 0; i < n_q; ++i) {
          for (std::size_t j = 0; j < lds; ++j) {
            CAPTURE(d, n_q, n_k, i, j);
            if (j >= n_k) {
              REQUIRE(testing::to_bits(s[i * lds + j]) == testing::kGuardBits);
              continue;
            }
            const float want = expected(&q[i * ldq], &k[j * ldk], d, qs[per_row ? i : 0],
                                        ks[per_row ? j : 0], scale);
            REQUIRE(testing::to_bits(s[i * lds + j]) == testing::to_bits(want));
          }
        }
      }
}

TEST_CASE("s8 dispatch picks the best int8 level the CPU supports", "[api][dispatch][s8]") {
  const char *name = attnscore_kernel_name(ATTNSCORE_DTYPE_S8);
  REQUIRE(name != nullptr);
  INFO("chosen: " << name);
  // Emulated CPUs (ctest, per QEMU_CPU) name the kernel or level they must get.
  const char *expect_kernel = std::getenv("ATTNSCORE_EXPECT_S8_KERNEL");
  const char *expect_level = std::getenv("ATTNSCORE_EXPECT_S8_LEVEL");
  if (expect_kernel != nullptr) CHECK(std::string(name) == expect_kernel);
  if (expect_level != nullptr) {
    CHECK(level_of(name) == expect_level);
    CHECK(attnscore_level_name(attnscore_kernel_level(ATTNSCORE_DTYPE_S8)) ==
          std::string(expect_level));
  }
#if defined(__x86_64__)
  if (expect_kernel == nullptr && expect_level == nullptr &&
      std::getenv("ATTNSCORE_MAX_LEVEL") == nullptr) {
    const testing::HostX86 host = testing::host_x86();  // an oracle independent of ours
    const bool vnni = host.avx512vnni, avx512 = host.avx512, avx2 = host.avx2;
    const bool avxvnni = host.avxvnni && ATTNSCORE_HAVE_AVXVNNI;
    CHECK(level_of(name) == (vnni      ? "avx512vnni"
                             : avx512  ? "avx512"
                             : avxvnni ? "avxvnni"
                             : avx2    ? "avx2"
                                       : "scalar"));
  }
#endif
  CHECK(attnscore_level_supported(attnscore_kernel_level(ATTNSCORE_DTYPE_S8)));
}

TEST_CASE("s8 bad input: its own status, nothing written", "[api][errors][s8]") {
  testing::CapGuard guard;
  const attnscore_level level = GENERATE(from_range(testing::runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  CAPTURE(attnscore_level_name(level));
  std::vector<std::int8_t> q(64, 1), k(64, 1);
  std::vector<float> s(64, testing::from_bits(testing::kGuardBits));
  const std::vector<float> s0 = s;
  const float one = 1.0f, two[2] = {1.0f, 1.0f};
  const float inf = std::numeric_limits<float>::infinity();
  const float sub = std::numeric_limits<float>::denorm_min();
  const float bad2[2] = {1.0f, kNaN}, inf2[2] = {inf, 1.0f}, sub2[2] = {1.0f, sub};
  const std::size_t huge = SIZE_MAX / 2;
  struct Case {
    const char *what;
    attnscore_status want;
    std::size_t n_q, n_k, d;
    const std::int8_t *q;
    std::size_t ldq;
    const float *qs;
    std::size_t qn;
    const std::int8_t *k;
    std::size_t ldk;
    const float *ks;
    std::size_t kn;
    float *s;
    std::size_t lds;
    float scale;
  };
  const std::int8_t *Q = q.data(), *K = k.data();
  float *S = s.data();
  const Case cases[] = {
      {"n_q 0 with NULLs", ATTNSCORE_OK, 0, 2, 2, nullptr, 0, nullptr, 0, nullptr, 0, nullptr, 0,
       nullptr, 0, kNaN},
      {"n_k 0", ATTNSCORE_OK, 2, 0, 2, Q, 2, &one, 5, K, 2, &one, 1, S, 0, 0.0f},
      {"d 0", ATTNSCORE_ERR_ZERO_DIM, 2, 2, 0, Q, 2, &one, 1, K, 2, &one, 1, S, 2, 0.0f},
      {"d past the int32 bound", ATTNSCORE_ERR_DIM_TOO_LARGE, 1, 1, ATTNSCORE_S8_MAX_D + 1, Q,
       ATTNSCORE_S8_MAX_D + 1, &one, 1, K, ATTNSCORE_S8_MAX_D + 1, &one, 1, S, 1, 0.0f},
      {"q NULL", ATTNSCORE_ERR_NULL_POINTER, 2, 2, 2, nullptr, 2, &one, 1, K, 2, &one, 1, S, 2,
       0.0f},
      {"k NULL", ATTNSCORE_ERR_NULL_POINTER, 2, 2, 2, Q, 2, &one, 1, nullptr, 2, &one, 1, S, 2,
       0.0f},
      {"s NULL", ATTNSCORE_ERR_NULL_POINTER, 2, 2, 2, Q, 2, &one, 1, K, 2, &one, 1, nullptr, 2,
       0.0f},
      {"q_scale NULL", ATTNSCORE_ERR_NULL_POINTER, 2, 2, 2, Q, 2, nullptr, 1, K, 2, &one, 1, S, 2,
       0.0f},
      {"k_scale NULL", ATTNSCORE_ERR_NULL_POINTER, 2, 2, 2, Q, 2, &one, 1, K, 2, nullptr, 1, S, 2,
       0.0f},
      {"ldq < d", ATTNSCORE_ERR_BAD_LDQ, 2, 2, 3, Q, 2, &one, 1, K, 3, &one, 1, S, 2, 0.0f},
      {"ldk < d", ATTNSCORE_ERR_BAD_LDK, 2, 2, 3, Q, 3, &one, 1, K, 2, &one, 1, S, 2, 0.0f},
      {"lds < n_k", ATTNSCORE_ERR_BAD_LDS, 2, 2, 2, Q, 2, &one, 1, K, 2, &one, 1, S, 1, 0.0f},
      {"q_scale_count 0", ATTNSCORE_ERR_BAD_SCALE_COUNT, 2, 2, 2, Q, 2, two, 0, K, 2, two, 2, S, 2,
       0.0f},
      {"q_scale_count 3 for 2 rows", ATTNSCORE_ERR_BAD_SCALE_COUNT, 2, 2, 2, Q, 2, two, 3, K, 2,
       two, 2, S, 2, 0.0f},
      {"k_scale_count 2 for 3 keys", ATTNSCORE_ERR_BAD_SCALE_COUNT, 2, 3, 2, Q, 2, two, 2, K, 2,
       two, 2, S, 3, 0.0f},
      {"k_scale_count 0", ATTNSCORE_ERR_BAD_SCALE_COUNT, 2, 2, 2, Q, 2, two, 1, K, 2, two, 0, S, 2,
       0.0f},
      {"scale NaN", ATTNSCORE_ERR_BAD_SCALE, 2, 2, 2, Q, 2, &one, 1, K, 2, &one, 1, S, 2, kNaN},
      {"scale -Inf", ATTNSCORE_ERR_BAD_SCALE, 2, 2, 2, Q, 2, &one, 1, K, 2, &one, 1, S, 2, -inf},
      {"scale subnormal", ATTNSCORE_ERR_BAD_SCALE, 2, 2, 2, Q, 2, &one, 1, K, 2, &one, 1, S, 2,
       sub},
      {"q extent overflows", ATTNSCORE_ERR_SIZE_OVERFLOW, 3, 2, 2, Q, huge, &one, 1, K, 2, &one, 1,
       S, 2, 0.0f},
      {"s extent overflows", ATTNSCORE_ERR_SIZE_OVERFLOW, 3, 2, 2, Q, 2, &one, 1, K, 2, &one, 1, S,
       huge, 0.0f},
      {"s overlaps q_scale", ATTNSCORE_ERR_OVERLAP, 1, 1, 2, Q, 2, S, 1, K, 2, &one, 1, S, 1, 0.0f},
      {"s overlaps k_scale", ATTNSCORE_ERR_OVERLAP, 1, 1, 2, Q, 2, &one, 1, K, 2, S + 0, 1, S, 1,
       0.0f},
      {"s overlaps q", ATTNSCORE_ERR_OVERLAP, 1, 1, 2, reinterpret_cast<const std::int8_t *>(S) + 2,
       2, &one, 1, K, 2, &one, 1, S, 1, 0.0f},
      {"a q_scale NaN", ATTNSCORE_ERR_BAD_QUANT_SCALE, 2, 2, 2, Q, 2, bad2, 2, K, 2, &one, 1, S, 2,
       0.0f},
      {"a k_scale +Inf", ATTNSCORE_ERR_BAD_QUANT_SCALE, 2, 2, 2, Q, 2, &one, 1, K, 2, inf2, 2, S, 2,
       0.0f},
      {"a k_scale subnormal", ATTNSCORE_ERR_BAD_QUANT_SCALE, 2, 2, 2, Q, 2, &one, 1, K, 2, sub2, 2,
       S, 2, 0.0f},
  };
  for (const Case &c : cases) {
    CAPTURE(c.what);
    std::copy(s0.begin(), s0.end(), s.begin());
    const attnscore_status st = attnscore_scores_s8(c.n_q, c.n_k, c.d, c.q, c.ldq, c.qs, c.qn, c.k,
                                                    c.ldk, c.ks, c.kn, c.s, c.lds, c.scale);
    CHECK(st == c.want);
    CHECK(std::memcmp(s.data(), s0.data(), s.size() * sizeof(float)) == 0);
  }
  // One bad scale at any place among many, per key and per row (the check reads them by
  // vectors, then a tail).
  for (const float bad : {kNaN, inf, -inf, sub, -sub}) {
    for (std::size_t at = 0; at < 61; ++at) {
      CAPTURE(bad, at);
      std::vector<float> scales(61, 1.0f);
      scales[at] = bad;
      std::copy(s0.begin(), s0.end(), s.begin());
      CHECK(attnscore_scores_s8(1, 61, 1, Q, 1, &one, 1, K, 1, scales.data(), 61, S, 61, 0.0f) ==
            ATTNSCORE_ERR_BAD_QUANT_SCALE);
      CHECK(attnscore_scores_s8(61, 1, 1, Q, 1, scales.data(), 61, K, 1, &one, 1, S, 1, 0.0f) ==
            ATTNSCORE_ERR_BAD_QUANT_SCALE);
      CHECK(std::memcmp(s.data(), s0.data(), s.size() * sizeof(float)) == 0);
    }
  }
  // A zero scale (an all-zero row quantizes to it) is a value, not an error.
  const float zero = 0.0f;
  REQUIRE(attnscore_scores_s8(1, 1, 2, Q, 2, &zero, 1, K, 2, &one, 1, S, 1, 0.0f) == ATTNSCORE_OK);
  CHECK(s[0] == 0.0f);
}

// Independent reference of the quantizer: the divisions in the caller's rounding mode `mode`,
// the rounding to an integer to nearest even (nearbyint in the default mode).
void quantize_ref(const float *x, std::size_t d, std::int8_t *out, float *scale, int mode) {
  float mx = 0.0f;
  for (std::size_t t = 0; t < d; ++t) mx = std::max(mx, std::fabs(x[t]));
  std::vector<float> y(d);
  const int saved = std::fegetround();
  std::fesetround(mode);
  const volatile float den = 127.0f;
  *scale = mx / den;
  if (*scale >= FLT_MIN)
    for (std::size_t t = 0; t < d; ++t) y[t] = x[t] / *scale;
  std::fesetround(saved);
  if (*scale < FLT_MIN) *scale = 0.0f;
  for (std::size_t t = 0; t < d; ++t) {
    const float r = *scale == 0.0f ? 0.0f : std::nearbyint(y[t]);
    out[t] = static_cast<std::int8_t>(std::min(127.0f, std::max(-128.0f, r)));
  }
}

TEST_CASE("s8 quantization helper at every level, in every rounding mode", "[api][s8][quantize]") {
  testing::CapGuard guard;
  const attnscore_level level = GENERATE(from_range(testing::runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  CAPTURE(attnscore_level_name(level));
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  for (std::size_t d : {1, 3, 8, 15, 16, 17, 64, 100, 129}) {
    const std::size_t n = 7, ldx = d + 2, ldo = d + 1;
    std::vector<float> x(n * ldx, kNaN);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t t = 0; t < d; ++t) {
        float v = nd(rng) * (i == 3 ? 1e-3f : 10.0f);
        if (i == 1) v = 0.0f;                                                // an all-zero row
        if (i == 2) v = t == 0 ? 127.0f : static_cast<float>(t % 9) - 4.5f;  // scale 1: ties
        if (i == 4) v = t == 0 ? 1e-37f : 0.0f;                              // scale below FLT_MIN
        x[i * ldx + t] = v;
      }
    for (const int mode : {FE_TONEAREST, FE_UPWARD, FE_TOWARDZERO}) {
      std::vector<std::int8_t> out(n * ldo, 99);
      std::vector<float> scales(n, kNaN);
      const int saved = std::fegetround();
      std::fesetround(mode);
      const attnscore_status st = attnscore_quantize_s8(n, d, ATTNSCORE_DTYPE_F32, x.data(), ldx,
                                                        out.data(), ldo, scales.data());
      std::fesetround(saved);
      REQUIRE(st == ATTNSCORE_OK);
      for (std::size_t i = 0; i < n; ++i) {
        std::vector<std::int8_t> want(d);
        float ws;
        quantize_ref(&x[i * ldx], d, want.data(), &ws, mode);
        CAPTURE(d, i, mode);
        REQUIRE(testing::to_bits(scales[i]) == testing::to_bits(ws));
        for (std::size_t t = 0; t < d; ++t) REQUIRE(int{out[i * ldo + t]} == int{want[t]});
        if (d < ldo) REQUIRE(out[i * ldo + d] == 99);  // the gap is not written
      }
    }
  }
  // Ties at scale 1 go to even: 2.5 -> 2, 3.5 -> 4, -0.5 -> 0.
  const float tie[4] = {127.0f, 2.5f, 3.5f, -0.5f};
  std::int8_t o[4];
  float sc;
  REQUIRE(attnscore_quantize_s8(1, 4, ATTNSCORE_DTYPE_F32, tie, 4, o, 4, &sc) == ATTNSCORE_OK);
  CHECK(sc == 1.0f);
  CHECK((o[0] == 127 && o[1] == 2 && o[2] == 4 && o[3] == 0));
}

#if ATTNSCORE_HAVE_F16
TEST_CASE("s8 quantization from f16 rows at every level, in every rounding mode",
          "[api][s8][quantize][f16]") {
  testing::CapGuard guard;
  const attnscore_level level = GENERATE(from_range(testing::runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  CAPTURE(attnscore_level_name(level));
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> bits(0, 0x7bff);  // every finite magnitude
  for (std::size_t d : {1, 3, 16, 17, 100, 1024, 1500}) {
    const std::size_t n = 6, ldx = d + 3, ldo = d + 2;
    std::vector<std::uint16_t> x(n * ldx, 0x7e00);  // NaN in the gaps: never read
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t t = 0; t < d; ++t) {
        std::uint16_t h = static_cast<std::uint16_t>(bits(rng) | (rng() & 1 ? 0x8000 : 0));
        if (i == 1) h = t % 2 ? 0x8000 : 0;                          // zeros of both signs
        if (i == 2) h = t == 0 ? 0x57f0 : 0x3800 | (t % 2) << 10;    // 127: ties 0.5, 1.5
        if (i == 3) h = static_cast<std::uint16_t>(rng() & 0x83ff);  // subnormals only
        if (i == 4 && t == d / 2) h = 0xfbff;                        // -65504
        x[i * ldx + t] = h;
      }
    for (const int mode : {FE_TONEAREST, FE_DOWNWARD}) {
      std::vector<std::int8_t> out(n * ldo, 99);
      std::vector<float> scales(n, kNaN);
      const int saved = std::fegetround();
      std::fesetround(mode);
      const attnscore_status st = attnscore_quantize_s8(n, d, ATTNSCORE_DTYPE_F16, x.data(), ldx,
                                                        out.data(), ldo, scales.data());
      std::fesetround(saved);
      REQUIRE(st == ATTNSCORE_OK);
      for (std::size_t i = 0; i < n; ++i) {
        std::vector<float> xf(d);
        for (std::size_t t = 0; t < d; ++t)
          xf[t] = static_cast<float>(testing::f16_value(x[i * ldx + t]));
        std::vector<std::int8_t> want(d);
        float ws;
        quantize_ref(xf.data(), d, want.data(), &ws, mode);
        CAPTURE(d, i, mode);
        REQUIRE(testing::to_bits(scales[i]) == testing::to_bits(ws));
        for (std::size_t t = 0; t < d; ++t) REQUIRE(int{out[i * ldo + t]} == int{want[t]});
        if (d < ldo) REQUIRE(out[i * ldo + d] == 99);
      }
    }
  }
  // As the int8 example (README, docs/api.md): 127 and -50.25 (exact in binary16) quantize to
  // 127, -50.
  const std::uint16_t h[2] = {0x57f0, 0xd248};
  std::int8_t o[2];
  float sc;
  REQUIRE(attnscore_quantize_s8(1, 2, ATTNSCORE_DTYPE_F16, h, 2, o, 2, &sc) == ATTNSCORE_OK);
  CHECK((sc == 1.0f && o[0] == 127 && o[1] == -50));
  // Bad input: its status, nothing written.
  const std::uint16_t bad[4] = {0x3c00, 0x4000, 0x7c00, 0xfe00};  // 1, 2, +Inf, NaN
  std::int8_t b8[4] = {9, 9, 9, 9};
  float bs[2] = {7.0f, 7.0f};
  CHECK(attnscore_quantize_s8(0, 0, ATTNSCORE_DTYPE_F16, nullptr, 0, nullptr, 0, nullptr) ==
        ATTNSCORE_OK);
  CHECK(attnscore_quantize_s8(1, 0, ATTNSCORE_DTYPE_F16, bad, 2, b8, 2, bs) ==
        ATTNSCORE_ERR_ZERO_DIM);
  CHECK(attnscore_quantize_s8(1, 2, ATTNSCORE_DTYPE_F16, nullptr, 2, b8, 2, bs) ==
        ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_quantize_s8(1, 2, ATTNSCORE_DTYPE_F16, bad, 2, nullptr, 2, bs) ==
        ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_quantize_s8(1, 2, ATTNSCORE_DTYPE_F16, bad, 1, b8, 2, bs) ==
        ATTNSCORE_ERR_BAD_LDQ);
  CHECK(attnscore_quantize_s8(1, 2, ATTNSCORE_DTYPE_F16, bad, 2, b8, 1, bs) ==
        ATTNSCORE_ERR_BAD_LDS);
  CHECK(attnscore_quantize_s8(2, 2, ATTNSCORE_DTYPE_F16, bad, SIZE_MAX / 2, b8, 2, bs) ==
        ATTNSCORE_ERR_SIZE_OVERFLOW);
  CHECK(attnscore_quantize_s8(1, 2, ATTNSCORE_DTYPE_F16, bad, 2,
                              reinterpret_cast<std::int8_t *>(bs), 2, bs) == ATTNSCORE_ERR_OVERLAP);
  CHECK(attnscore_quantize_s8(2, 2, ATTNSCORE_DTYPE_F16, bad, 2, b8, 2, bs) ==
        ATTNSCORE_ERR_NOT_FINITE);
  CHECK(attnscore_quantize_s8(1, 1, ATTNSCORE_DTYPE_F16, bad + 2, 1, b8, 1, bs) ==
        ATTNSCORE_ERR_NOT_FINITE);
  CHECK(attnscore_quantize_s8(1, 1, ATTNSCORE_DTYPE_F16, bad + 3, 1, b8, 1, bs) ==
        ATTNSCORE_ERR_NOT_FINITE);
  CHECK((b8[0] == 9 && b8[1] == 9 && b8[2] == 9 && b8[3] == 9 && bs[0] == 7.0f));
  // C++: a shape mismatch first.
  attnscore::MatrixView<const attnscore::f16> hv(reinterpret_cast<const attnscore::f16 *>(h), 1, 2);
  CHECK(attnscore::quantize(hv, attnscore::MatrixView<std::int8_t>(b8, 1, 1), bs) ==
        ATTNSCORE_ERR_SHAPE_MISMATCH);
  REQUIRE(attnscore::quantize(hv, attnscore::MatrixView<std::int8_t>(b8, 1, 2), bs) ==
          ATTNSCORE_OK);
  CHECK((bs[0] == 1.0f && b8[0] == 127 && b8[1] == -50));
}
#endif

TEST_CASE("s8 quantization helpers: bad input, nothing written", "[api][s8][quantize][errors]") {
  const float x[4] = {1.0f, 2.0f, std::numeric_limits<float>::infinity(), 4.0f};
  std::int8_t out[4] = {9, 9, 9, 9};
  float sc[2] = {7.0f, 7.0f};
  CHECK(attnscore_quantize_s8(0, 0, ATTNSCORE_DTYPE_F32, nullptr, 0, nullptr, 0, nullptr) ==
        ATTNSCORE_OK);
  // A source dtype not f32, f16 or bf16: UNKNOWN_DTYPE first, whatever the rest.
  for (const int dt : {int{ATTNSCORE_DTYPE_S8}, 4, 77, -1}) {
    CAPTURE(dt);
    const auto bad_dtype = static_cast<attnscore_dtype>(dt);
    CHECK(attnscore_quantize_s8(1, 2, bad_dtype, x, 2, out, 2, sc) == ATTNSCORE_ERR_UNKNOWN_DTYPE);
    CHECK(attnscore_quantize_s8(0, 0, bad_dtype, nullptr, 0, nullptr, 0, nullptr) ==
          ATTNSCORE_ERR_UNKNOWN_DTYPE);
  }
  CHECK(attnscore_quantize_s8(1, 0, ATTNSCORE_DTYPE_F32, x, 2, out, 2, sc) ==
        ATTNSCORE_ERR_ZERO_DIM);
  CHECK(attnscore_quantize_s8(1, 2, ATTNSCORE_DTYPE_F32, nullptr, 2, out, 2, sc) ==
        ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_quantize_s8(1, 2, ATTNSCORE_DTYPE_F32, x, 2, out, 2, nullptr) ==
        ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_quantize_s8(1, 2, ATTNSCORE_DTYPE_F32, x, 1, out, 2, sc) ==
        ATTNSCORE_ERR_BAD_LDQ);
  CHECK(attnscore_quantize_s8(1, 2, ATTNSCORE_DTYPE_F32, x, 2, out, 1, sc) ==
        ATTNSCORE_ERR_BAD_LDS);
  CHECK(attnscore_quantize_s8(2, 2, ATTNSCORE_DTYPE_F32, x, SIZE_MAX / 2, out, 2, sc) ==
        ATTNSCORE_ERR_SIZE_OVERFLOW);
  CHECK(attnscore_quantize_s8(1, 2, ATTNSCORE_DTYPE_F32, x, 2, reinterpret_cast<std::int8_t *>(sc),
                              2, sc) == ATTNSCORE_ERR_OVERLAP);
  CHECK(attnscore_quantize_s8(2, 2, ATTNSCORE_DTYPE_F32, x, 2, out, 2, sc) ==
        ATTNSCORE_ERR_NOT_FINITE);
  CHECK((out[0] == 9 && out[1] == 9 && out[2] == 9 && out[3] == 9 && sc[0] == 7.0f));
  float q[4] = {1.0f, 2.0f, 3.0f, 4.0f}, f[4];
  const float ch[2] = {0.5f, 4.0f};
  CHECK(attnscore_fold_channel_scales(1, 0, q, 2, ch, f, 2) == ATTNSCORE_ERR_ZERO_DIM);
  CHECK(attnscore_fold_channel_scales(1, 2, q, 2, nullptr, f, 2) == ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_fold_channel_scales(1, 2, q, 1, ch, f, 2) == ATTNSCORE_ERR_BAD_LDQ);
  CHECK(attnscore_fold_channel_scales(1, 2, q, 2, ch, f, 1) == ATTNSCORE_ERR_BAD_LDS);
  CHECK(attnscore_fold_channel_scales(2, 2, q, 2, ch, q + 1, 2) == ATTNSCORE_ERR_OVERLAP);
  REQUIRE(attnscore_fold_channel_scales(2, 2, q, 2, ch, q, 2) == ATTNSCORE_OK);  // in place
  CHECK((q[0] == 0.5f && q[1] == 8.0f && q[2] == 1.5f && q[3] == 16.0f));
}

TEST_CASE("s8 worked example: per-channel K cache through the folded Q", "[api][s8][quantize]") {
  // K quantized per channel t (as per-channel caches are), Q folded and quantized per row: the
  // s8 scores equal (float)acc * ((q_scale * scale) * 1) over the int8 data that results.
  const std::size_t n_q = 3, n_k = 5, d = 8;
  std::mt19937 rng(8);
  std::normal_distribution<float> nd;
  std::vector<float> q(n_q * d), k(n_k * d), ch(d), qf(n_q * d), qscale(n_q);
  for (float &v : q) v = nd(rng);
  std::vector<std::int8_t> k8(n_k * d), q8(n_q * d);
  std::uniform_int_distribution<int> iv(-128, 127);
  for (auto &v : k8) v = static_cast<std::int8_t>(iv(rng));
  for (std::size_t t = 0; t < d; ++t) ch[t] = 0.01f * static_cast<float>(t + 1);
  REQUIRE(attnscore_fold_channel_scales(n_q, d, q.data(), d, ch.data(), qf.data(), d) ==
          ATTNSCORE_OK);
  REQUIRE(attnscore_quantize_s8(n_q, d, ATTNSCORE_DTYPE_F32, qf.data(), d, q8.data(), d,
                                qscale.data()) == ATTNSCORE_OK);
  const float one = 1.0f;
  std::vector<float> s(n_q * n_k);
  REQUIRE(attnscore_scores_s8(n_q, n_k, d, q8.data(), d, qscale.data(), n_q, k8.data(), d, &one, 1,
                              s.data(), n_k, 0.0f) == ATTNSCORE_OK);
  const float scale = attnscore_default_scale(d);
  for (std::size_t i = 0; i < n_q; ++i)
    for (std::size_t j = 0; j < n_k; ++j) {
      CHECK(testing::to_bits(s[i * n_k + j]) ==
            testing::to_bits(expected(&q8[i * d], &k8[j * d], d, qscale[i], 1.0f, scale)));
      // And close to the f32 scores of Q against the dequantized K (quantization error only).
      double exact = 0;
      for (std::size_t t = 0; t < d; ++t) exact += double{q[i * d + t]} * ch[t] * k8[j * d + t];
      CHECK(std::fabs(s[i * n_k + j] - exact * scale) <= 0.02 * (1 + std::fabs(exact * scale)));
    }
}

TEST_CASE("s8 README example, with numbers", "[api][s8][quantize]") {
  const float q[2] = {127.0f, -50.2f}, k[2] = {12.7f, 127.0f}, ties[3] = {127.0f, 62.5f, -63.5f};
  std::int8_t q8[2], k8[2], t8[3];
  float qs, ks, ts, s;
  REQUIRE(attnscore_quantize_s8(1, 2, ATTNSCORE_DTYPE_F32, q, 2, q8, 2, &qs) == ATTNSCORE_OK);
  REQUIRE(attnscore_quantize_s8(1, 2, ATTNSCORE_DTYPE_F32, k, 2, k8, 2, &ks) == ATTNSCORE_OK);
  REQUIRE(attnscore_quantize_s8(1, 3, ATTNSCORE_DTYPE_F32, ties, 3, t8, 3, &ts) == ATTNSCORE_OK);
  CHECK((qs == 1.0f && q8[0] == 127 && q8[1] == -50));
  CHECK((ks == 1.0f && k8[0] == 13 && k8[1] == 127));
  CHECK((t8[1] == 62 && t8[2] == -64));
  REQUIRE(attnscore_scores_s8(1, 1, 2, q8, 2, &qs, 1, k8, 2, &ks, 1, &s, 1, 1.0f) == ATTNSCORE_OK);
  CHECK(s == -4699.0f);
}

namespace {

// An int8 key cache of one KV head, over owned memory (at an odd address: any alignment works).
struct S8Cache {
  std::vector<unsigned char> mem;
  attnscore_cache *cache = nullptr;
  attnscore_status init(std::size_t capacity, std::size_t d, std::size_t at = 5) {
    const attnscore_cache_shape sh{ATTNSCORE_CACHE_KEYS, ATTNSCORE_DTYPE_S8, 1, capacity, d};
    mem.assign(attnscore_cache_bytes(&sh) + at, 0);
    return attnscore_cache_init(mem.data() + at, mem.size() - at, &sh, &cache);
  }
};

// n keys of row stride ldk with one scale per key, as an append source.
attnscore_tensor s8_keys(const std::int8_t *k, std::size_t ldk, const float *scales) {
  attnscore_tensor t;
  std::memset(&t, 0, sizeof t);
  t.data = k, t.dtype = ATTNSCORE_DTYPE_S8, t.row_stride = ldk;
  t.scale = scales, t.scale_row_stride = 1;
  return t;
}

// One head of attention on int8 Q (n_q rows, row stride ldq, scales q_scale[i * q_step]) from
// the first n_k keys of `cache`, S of row stride lds: the removed 0.1.0 scores-from-cache call.
attnscore_status s8_from_cache(std::size_t n_q, std::size_t n_k, std::size_t d,
                               const std::int8_t *q, std::size_t ldq, const float *q_scale,
                               std::size_t q_step, const attnscore_cache *cache, float *s,
                               std::size_t lds, float scale) {
  attnscore_attention_desc a = attnscore_attention_dense(ATTNSCORE_DTYPE_S8, 1, 1, n_q, n_k, d);
  a.q.data = q, a.q.row_stride = ldq, a.q.scale = q_scale, a.q.scale_row_stride = q_step;
  a.k_cache = cache;
  a.s.data = s, a.s.row_stride = lds;
  a.scale = scale;
  return attnscore_attention(&a, nullptr);
}

}  // namespace

TEST_CASE("s8 packed key cache: same bits as the raw call, at every level", "[api][s8][kcache]") {
  testing::CapGuard guard;
  const attnscore_level level = GENERATE(from_range(testing::runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  CAPTURE(attnscore_level_name(level), attnscore_kernel_name(ATTNSCORE_DTYPE_S8));
  std::mt19937 rng(23);
  std::uniform_int_distribution<int> v(-128, 127);
  std::uniform_real_distribution<float> sd(0.001f, 0.05f);
  for (std::size_t d : {1, 5, 64, 100, 513}) {
    for (std::size_t n_k : {1, 7, 33, 100}) {
      const std::size_t ldk = d + 3;
      std::vector<std::int8_t> k(n_k * ldk);
      for (auto &x : k) x = static_cast<std::int8_t>(v(rng));
      std::vector<float> ks(n_k);
      for (float &x : ks) x = sd(rng);
      S8Cache c;
      REQUIRE(c.init(n_k, d) == ATTNSCORE_OK);
      for (std::size_t done = 0, step = 1; done < n_k; done += step, step = step * 3 % 7 + 1) {
        step = std::min(step, n_k - done);
        const attnscore_tensor src = s8_keys(&k[done * ldk], ldk, &ks[done]);
        REQUIRE(attnscore_cache_append(c.cache, step, &src) == ATTNSCORE_OK);
      }
      REQUIRE(attnscore_cache_size(c.cache) == n_k);
      for (std::size_t n_q : {1, 2, 3, 8, 17}) {
        std::vector<std::int8_t> q(n_q * d);
        for (auto &x : q) x = static_cast<std::int8_t>(v(rng));
        std::vector<float> qs(n_q);
        for (float &x : qs) x = sd(rng);
        std::vector<float> raw(n_q * n_k), cached(n_q * n_k + 3, kNaN);
        REQUIRE(attnscore_scores_s8(n_q, n_k, d, q.data(), d, qs.data(), n_q, k.data(), ldk,
                                    ks.data(), n_k, raw.data(), n_k, 0.0f) == ATTNSCORE_OK);
        REQUIRE(s8_from_cache(n_q, n_k, d, q.data(), d, qs.data(), 1, c.cache, cached.data(), n_k,
                              0.0f) == ATTNSCORE_OK);
        CAPTURE(d, n_k, n_q);
        REQUIRE(std::memcmp(raw.data(), cached.data(), raw.size() * sizeof(float)) == 0);
        for (std::size_t i = raw.size(); i < cached.size(); ++i) REQUIRE(std::isnan(cached[i]));
        const float want = expected(&q[0], &k[0], d, qs[0], ks[0], attnscore_default_scale(d));
        REQUIRE(testing::to_bits(cached[0]) == testing::to_bits(want));
      }
    }
  }
  // Errors: nothing appended, nothing written.
  S8Cache c;
  const attnscore_cache_shape sh{ATTNSCORE_CACHE_KEYS, ATTNSCORE_DTYPE_S8, 1, 4, 8},
      too_long{ATTNSCORE_CACHE_KEYS, ATTNSCORE_DTYPE_S8, 1, 4, ATTNSCORE_S8_MAX_D + 1};
  std::vector<unsigned char> mem(attnscore_cache_bytes(&sh));
  CHECK(attnscore_cache_bytes(&too_long) == 0);
  CHECK(attnscore_cache_init(mem.data(), mem.size() - 1, &sh, &c.cache) ==
        ATTNSCORE_ERR_BUFFER_TOO_SMALL);
  CHECK(attnscore_cache_init(mem.data(), mem.size(), &too_long, &c.cache) ==
        ATTNSCORE_ERR_DIM_TOO_LARGE);
  REQUIRE(attnscore_cache_init(mem.data(), mem.size(), &sh, &c.cache) == ATTNSCORE_OK);
  const std::int8_t k8[5 * 8] = {};
  const float ks5[5] = {1, 1, 1, 1, 1}, bad[2] = {1.0f, kNaN};
  const attnscore_tensor five = s8_keys(k8, 8, ks5), nan_scale = s8_keys(k8, 8, bad),
                         short_ld = s8_keys(k8, 7, ks5), no_scales = s8_keys(k8, 8, nullptr);
  attnscore_tensor per_head = five;  // one scale for every key: not what a cache keeps
  per_head.scale_row_stride = 0;
  CHECK(attnscore_cache_append(c.cache, 5, &five) == ATTNSCORE_ERR_CACHE_FULL);
  CHECK(attnscore_cache_append(c.cache, 2, &nan_scale) == ATTNSCORE_ERR_BAD_QUANT_SCALE);
  CHECK(attnscore_cache_append(c.cache, 2, &short_ld) == ATTNSCORE_ERR_BAD_LDK);
  CHECK(attnscore_cache_append(c.cache, 2, &no_scales) == ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_cache_append(c.cache, 2, &per_head) == ATTNSCORE_ERR_BAD_SCALE_COUNT);
  CHECK(attnscore_cache_size(c.cache) == 0);
  REQUIRE(attnscore_cache_append(c.cache, 2, &five) == ATTNSCORE_OK);
  float s[2] = {5.0f, 5.0f};
  const float one = 1.0f;
  // Q's scales: a row stride of 2 is neither per row (1) nor one for the head (0).
  CHECK(s8_from_cache(1, 2, 8, k8, 8, &one, 2, c.cache, s, 2, 0.0f) ==
        ATTNSCORE_ERR_BAD_SCALE_COUNT);
  CHECK(s8_from_cache(1, 2, 8, k8, 8, &one, 0, c.cache, s, 1, 0.0f) == ATTNSCORE_ERR_BAD_LDS);
  CHECK(s8_from_cache(1, 2, 8, k8, 8, &one, 0, reinterpret_cast<const attnscore_cache *>(ks5), s, 2,
                      0.0f) == ATTNSCORE_ERR_BAD_CACHE);
  CHECK(s8_from_cache(1, 2, 8, k8, 8, &bad[1], 0, c.cache, s, 2, 0.0f) ==
        ATTNSCORE_ERR_BAD_QUANT_SCALE);
  CHECK(s8_from_cache(1, 3, 8, k8, 8, &one, 0, c.cache, s, 3, 0.0f) ==
        ATTNSCORE_ERR_SHAPE_MISMATCH);  // 2 keys held
  // A real cache's address shifted by a byte: refused before its header is read (misaligned).
  const auto *shifted = reinterpret_cast<const attnscore_cache *>(
      reinterpret_cast<const unsigned char *>(c.cache) + 1);
  CHECK(s8_from_cache(1, 2, 8, k8, 8, &one, 0, shifted, s, 2, 0.0f) == ATTNSCORE_ERR_BAD_CACHE);
  CHECK(attnscore_cache_size(shifted) == 0);
  CHECK((s[0] == 5.0f && s[1] == 5.0f));
  REQUIRE(s8_from_cache(1, 2, 8, k8, 8, &one, 0, c.cache, s, 2, 0.0f) == ATTNSCORE_OK);
  CHECK((s[0] == 0.0f && s[1] == 0.0f));
  REQUIRE(attnscore_cache_truncate(c.cache, 0) == ATTNSCORE_OK);
  CHECK(attnscore_cache_size(c.cache) == 0);
}

// Runs every task on the calling thread, in reverse order (any order must give the same bits).
void reverse_parallel_for(void *, attnscore_task_fn fn, void *task_ctx, std::size_t n) {
  for (std::size_t i = n; i-- > 0;) fn(task_ctx, i);
}

TEST_CASE("C++ int8 views, attention, quantization, fold and key cache", "[api][s8]") {
  using attnscore::MatrixView;
  using attnscore::QuantizedView;
  // q: 3 x 4 of 2 (one scale 0.5), k: 5 x 4 of -3 (scale j + 1 for key j), scale 1:
  // acc = 4 * 2 * -3 = -24, s[i][j] = -24 * ((0.5 * 1) * (j + 1)) = -12 (j + 1).
  std::vector<std::int8_t> q(3 * 6, 2), k(5 * 4, -3);
  const float qs = 0.5f, ks[5] = {1, 2, 3, 4, 5};
  std::vector<float> s(3 * 7, kNaN);
  const QuantizedView Q(MatrixView<const std::int8_t>(q.data(), 3, 4, 6), &qs, 1);
  const QuantizedView K(MatrixView<const std::int8_t>(k.data(), 5, 4), ks, 5);
  REQUIRE(attnscore::scores(Q, K, MatrixView<float>(s.data(), 3, 5, 7), 1.0f) == ATTNSCORE_OK);
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 5; ++j) CHECK(s[i * 7 + j] == -12.0f * static_cast<float>(j + 1));
    CHECK((std::isnan(s[i * 7 + 5]) && std::isnan(s[i * 7 + 6])));
  }
  // Shapes that disagree: nothing written; a wrong scale count comes from the C call.
  std::vector<float> s2(3 * 5, 7.0f);
  CHECK(attnscore::scores(Q, K, MatrixView<float>(s2.data(), 3, 4), 1.0f) ==
        ATTNSCORE_ERR_SHAPE_MISMATCH);
  CHECK(attnscore::scores(Q, QuantizedView(MatrixView<const std::int8_t>(k.data(), 5, 3), ks, 5),
                          MatrixView<float>(s2.data(), 3, 5),
                          1.0f) == ATTNSCORE_ERR_SHAPE_MISMATCH);
  CHECK(attnscore::scores(Q, QuantizedView(K.m, ks, 4), MatrixView<float>(s2.data(), 3, 5)) ==
        ATTNSCORE_ERR_BAD_SCALE_COUNT);
  for (float x : s2) CHECK(x == 7.0f);
  // attention() on the same views (one head), through a parallel-for: the same values.
  const attnscore_parallel par{reverse_parallel_for, nullptr, 3};
  attnscore::AttentionOptions unit;
  unit.scale = 1.0f;
  REQUIRE(attnscore::attention(Q, K, MatrixView<float>(s2.data(), 3, 5), unit, par) ==
          ATTNSCORE_OK);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 5; ++j) CHECK(s2[i * 5 + j] == -12.0f * static_cast<float>(j + 1));
  CHECK(attnscore::attention(Q, K, MatrixView<float>(s2.data(), 2, 5), unit, par) ==
        ATTNSCORE_ERR_SHAPE_MISMATCH);
  // A scale count neither 1 nor the rows: the C call's BAD_SCALE_COUNT.
  CHECK(attnscore::attention(Q, QuantizedView(K.m, ks, 4), MatrixView<float>(s2.data(), 3, 5),
                             unit) == ATTNSCORE_ERR_BAD_SCALE_COUNT);
  // Heads: two query heads (the second Q's rows doubled) on K as one KV head, f16 S.
  std::vector<std::int8_t> q2(2 * 3 * 4, 2);
  for (std::size_t x = 12; x < 24; ++x) q2[x] = 4;
  const float qs2[2] = {0.5f, 0.25f};  // one scale per head: the same scores
  const attnscore::QuantizedHeadsView Q2(
      attnscore::HeadsView<const std::int8_t>(q2.data(), 2, 3, 4), qs2, 1, 0);
  std::vector<float> s3(2 * 3 * 5, kNaN);
  REQUIRE(attnscore::attention(Q2, K, attnscore::HeadsView<float>(s3.data(), 2, 3, 5), unit) ==
          ATTNSCORE_OK);
  for (std::size_t x = 0; x < s3.size(); ++x)
    CHECK(s3[x] == -12.0f * static_cast<float>(x % 5 + 1));
  if (attnscore_kernel_name(ATTNSCORE_DTYPE_F16) != nullptr) {
    std::vector<attnscore::f16> s16(2 * 3 * 5, attnscore::f16{0});
    REQUIRE(attnscore::attention(Q2, K, attnscore::HeadsView<attnscore::f16>(s16.data(), 2, 3, 5),
                                 unit) == ATTNSCORE_OK);
    for (std::size_t x = 0; x < s16.size(); ++x)
      CHECK(s16[x].bits == testing::f16_nearest(-12.0 * static_cast<double>(x % 5 + 1)));
  }

  // quantize: {254, -1, 0.5} has scale 2 and quantizes to {127, -0 (ties to even), 0};
  // {-12.7, 1} has scale 0.1 (12.7 / 127 rounded) and -127, 10.
  const float x[2 * 3] = {254.0f, -1.0f, 0.5f, -12.7f, 1.0f, 0.0f};
  std::int8_t x8[2 * 3] = {9, 9, 9, 9, 9, 9};
  float xs[2] = {};
  CHECK(attnscore::quantize(MatrixView<const float>(x, 2, 3), MatrixView<std::int8_t>(x8, 2, 2),
                            xs) == ATTNSCORE_ERR_SHAPE_MISMATCH);
  CHECK(x8[0] == 9);
  REQUIRE(attnscore::quantize(MatrixView<const float>(x, 2, 2, 3),
                              MatrixView<std::int8_t>(x8, 2, 2, 3), xs) == ATTNSCORE_OK);
  CHECK((xs[0] == 2.0f && x8[0] == 127 && x8[1] == 0 && x8[2] == 9));
  CHECK((xs[1] == 12.7f / 127.0f && x8[3] == -127 && x8[4] == 10 && x8[5] == 9));

  // fold: in place and into another view.
  float f[2 * 2] = {1.0f, 2.0f, 3.0f, 4.0f}, g[2 * 2];
  const float ch[2] = {0.5f, 4.0f};
  CHECK(attnscore::fold_channel_scales(MatrixView<const float>(f, 2, 2), ch,
                                       MatrixView<float>(g, 1, 2)) == ATTNSCORE_ERR_SHAPE_MISMATCH);
  REQUIRE(attnscore::fold_channel_scales(MatrixView<const float>(f, 2, 2), ch,
                                         MatrixView<float>(g, 2, 2)) == ATTNSCORE_OK);
  CHECK((g[0] == 0.5f && g[1] == 8.0f && g[2] == 1.5f && g[3] == 16.0f));
  REQUIRE(attnscore::fold_channel_scales(MatrixView<const float>(f, 2, 2), ch,
                                         MatrixView<float>(f, 2, 2)) == ATTNSCORE_OK);
  CHECK((f[0] == 0.5f && f[3] == 16.0f));

  // The key cache (one KV head): the same values as the raw call.
  using KeyCache8 = attnscore::KeyCache<std::int8_t>;
  std::vector<unsigned char> mem(KeyCache8::bytes(1, 8, 4));
  KeyCache8 cache(mem.data(), mem.size(), 1, 8, 4);
  REQUIRE(cache.status() == ATTNSCORE_OK);
  CHECK(cache.d() == 4);
  CHECK(cache.append(QuantizedView(MatrixView<const std::int8_t>(k.data(), 5, 3), ks, 5)) ==
        ATTNSCORE_ERR_SHAPE_MISMATCH);
  // One scale for all keys: a cache keeps one per key (the C call's BAD_SCALE_COUNT).
  CHECK(cache.append(QuantizedView(MatrixView<const std::int8_t>(k.data(), 2, 4), ks, 1)) ==
        ATTNSCORE_ERR_BAD_SCALE_COUNT);
  REQUIRE(cache.append(QuantizedView(MatrixView<const std::int8_t>(k.data(), 2, 4), ks, 2)) ==
          ATTNSCORE_OK);
  REQUIRE(cache.append(QuantizedView(MatrixView<const std::int8_t>(k.data() + 8, 3, 4), ks + 2,
                                     3)) == ATTNSCORE_OK);
  CHECK(cache.size() == 5);
  std::fill(s2.begin(), s2.end(), 0.0f);
  CHECK(attnscore::attention(Q, cache, MatrixView<float>(s2.data(), 3, 6), unit) ==
        ATTNSCORE_ERR_SHAPE_MISMATCH);
  for (float x : s2) CHECK(x == 0.0f);
  REQUIRE(attnscore::attention(Q, cache, MatrixView<float>(s2.data(), 3, 5), unit) == ATTNSCORE_OK);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 5; ++j) CHECK(s2[i * 5 + j] == -12.0f * static_cast<float>(j + 1));
  // The first 4 keys only.
  std::vector<float> s4(3 * 4, kNaN);
  REQUIRE(attnscore::attention(Q, cache, MatrixView<float>(s4.data(), 3, 4), unit, par) ==
          ATTNSCORE_OK);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 4; ++j) CHECK(s4[i * 4 + j] == -12.0f * static_cast<float>(j + 1));
  REQUIRE(cache.clear() == ATTNSCORE_OK);
  CHECK(cache.size() == 0);
  // A cache that failed to initialise reports why, from every call.
  KeyCache8 small(mem.data(), 1, 1, 8, 4);
  CHECK(small.status() == ATTNSCORE_ERR_BUFFER_TOO_SMALL);
  CHECK(small.append(QuantizedView(MatrixView<const std::int8_t>(k.data(), 1, 4), ks, 1)) ==
        ATTNSCORE_ERR_BUFFER_TOO_SMALL);
  CHECK(attnscore::attention(Q, small, MatrixView<float>(s2.data(), 3, 0)) ==
        ATTNSCORE_ERR_BUFFER_TOO_SMALL);
}

TEST_CASE("s8 statuses have their own messages", "[api][s8]") {
  for (attnscore_status st : {ATTNSCORE_ERR_BAD_SCALE_COUNT, ATTNSCORE_ERR_BAD_QUANT_SCALE,
                              ATTNSCORE_ERR_DIM_TOO_LARGE, ATTNSCORE_ERR_NOT_FINITE}) {
    CHECK(std::string(attnscore_status_string(st)) !=
          attnscore_status_string(static_cast<attnscore_status>(1000)));
  }
}

#else

TEST_CASE("s8 in a build without the int8 path", "[api][s8]") {
  WARN("int8 path not built (ATTNSCORE_ENABLE_S8=OFF): s8 cases skipped");
  const std::int8_t q[2] = {1, 2};
  const float one = 1.0f;
  float s = 5.0f;
  CHECK(attnscore_scores_s8(1, 1, 2, q, 2, &one, 1, q, 2, &one, 1, &s, 1, 0.0f) ==
        ATTNSCORE_ERR_UNKNOWN_DTYPE);
  CHECK(s == 5.0f);
  CHECK(attnscore_kernel_name(ATTNSCORE_DTYPE_S8) == nullptr);
  // Attention on int8 Q and K, an int8 cache, the quantizer (from f32 and f16) and the fold.
  attnscore_attention_desc a = attnscore_attention_dense(ATTNSCORE_DTYPE_S8, 1, 1, 1, 1, 2);
  a.q.data = q, a.q.scale = &one, a.k.data = q, a.k.scale = &one, a.s.data = &s;
  CHECK(attnscore_attention(&a, nullptr) == ATTNSCORE_ERR_UNKNOWN_DTYPE);
  const attnscore_cache_shape shape{ATTNSCORE_CACHE_KEYS, ATTNSCORE_DTYPE_S8, 1, 4, 2};
  CHECK(attnscore_cache_bytes(&shape) == 0);
  std::int8_t out[2] = {9, 9};
  float sc = 7.0f, f[2] = {1.0f, 2.0f};
  const std::uint16_t h[2] = {0x3c00, 0x4000};
  CHECK(attnscore_quantize_s8(1, 2, ATTNSCORE_DTYPE_F32, f, 2, out, 2, &sc) ==
        ATTNSCORE_ERR_UNKNOWN_DTYPE);
  CHECK(attnscore_quantize_s8(1, 2, ATTNSCORE_DTYPE_F16, h, 2, out, 2, &sc) ==
        ATTNSCORE_ERR_UNKNOWN_DTYPE);
  CHECK(attnscore_fold_channel_scales(1, 2, f, 2, f, f, 2) == ATTNSCORE_ERR_UNKNOWN_DTYPE);
  CHECK((out[0] == 9 && out[1] == 9 && sc == 7.0f && s == 5.0f));
}

#endif
