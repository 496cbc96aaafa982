// SPDX-License-Identifier: Apache-2.0
// The int8 path through the public API: every level, dispatch, every bad input.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attnscore/attnscore.h"
#include "attnscore_config.h"
#include "support.hpp"

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();

// (float)acc * ((qs * scale) * ks), acc the exact sum: the contract, written independently.
float expected(const std::int8_t *q, const std::int8_t *k, std::size_t d, float qs, float ks,
               float scale) {
  std::int64_t acc = 0;
  for (std::size_t t = 0; t < d; ++t) acc += std::int64_t{q[t]} * k[t];
  return static_cast<float>(acc) * ((qs * scale) * ks);
}

// The suffix of a kernel name: its level.
std::string level_of(const char *name) {
  const std::string s = name;
  return s.substr(s.find("__") + 2);
}

}  // namespace

#if ATTNSCORE_HAVE_S8

TEST_CASE("s8 public API at every level: bit for bit", "[api][s8]") {
  testing::CapGuard guard;
  const attnscore_level level = GENERATE(from_range(testing::runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  const char *name = attnscore_kernel_name(ATTNSCORE_DTYPE_S8);
  REQUIRE(name != nullptr);
  CAPTURE(attnscore_level_name(level), name);
  CHECK(attnscore_kernel_level(ATTNSCORE_DTYPE_S8) <= level);
  CHECK(level_of(name) == attnscore_level_name(attnscore_kernel_level(ATTNSCORE_DTYPE_S8)));
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> v(-128, 127);
  std::uniform_real_distribution<float> sd(0.001f, 0.05f);
  for (std::size_t d : {1, 3, 4, 5, 64, 100, 128, 600})
    for (std::size_t n_q : {1, 2, 3, 9, 40})
      for (std::size_t n_k : {1, 7, 33, 70}) {
        const std::size_t ldq = d + 1, ldk = d + 3, lds = n_k + 2;
        std::vector<std::int8_t> q(n_q * ldq), k(n_k * ldk);
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
    // The compiler runtime's CPU model as an independent oracle.
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                      __builtin_cpu_supports("f16c");
    const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                        __builtin_cpu_supports("avx512vl");
    const bool vnni = avx512 && __builtin_cpu_supports("avx512vnni");
    CHECK(level_of(name) == (vnni ? "avx512vnni" : avx512 ? "avx512" : avx2 ? "avx2" : "scalar"));
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
  // A zero scale (an all-zero row quantizes to it) is a value, not an error.
  const float zero = 0.0f;
  REQUIRE(attnscore_scores_s8(1, 1, 2, Q, 2, &zero, 1, K, 2, &one, 1, S, 1, 0.0f) == ATTNSCORE_OK);
  CHECK(s[0] == 0.0f);
}

TEST_CASE("s8 statuses have their own messages", "[api][s8]") {
  for (attnscore_status st : {ATTNSCORE_ERR_BAD_SCALE_COUNT, ATTNSCORE_ERR_BAD_QUANT_SCALE,
                              ATTNSCORE_ERR_DIM_TOO_LARGE}) {
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
}

#endif
