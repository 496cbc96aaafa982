// SPDX-License-Identifier: Apache-2.0
// The public API: every level through the cap, dispatch, bad input, FP environment, C++ wrapper.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attnscore/attnscore.hpp"
#include "attnscore_config.h"
#include "dispatch/kernels.h"
#include "support.hpp"

using testing::Buffer;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();

using testing::CapGuard;
using testing::runnable_levels;

// The best runnable f32 level not above `cap` in the cap order (testing::level_rank).
attnscore_level best_up_to(attnscore_level cap) {
  attnscore_level best = ATTNSCORE_LEVEL_SCALAR;
  const int top = cap == ATTNSCORE_LEVEL_BEST ? 99 : testing::level_rank(cap);
  for (attnscore_level l : runnable_levels())
    if (testing::level_rank(l) <= top && testing::f32_level(l) &&
        testing::level_rank(l) > testing::level_rank(best))
      best = l;
  return best;
}

std::string kernel_suffix() {
  const std::string name = attnscore_kernel_name(ATTNSCORE_DTYPE_F32);
  return name.substr(name.find("__") + 2);
}

// Runs the public call on exact data and checks it bit for bit, guards included.
void check_api_exact(std::size_t n_q, std::size_t n_k, std::size_t d, std::mt19937 &rng) {
  Buffer q(n_q, d, d + 3, 1, kNaN), k(n_k, d, d + 1, 2, kNaN);
  Buffer s(n_q, n_k, n_k + 2, 3, testing::from_bits(testing::kGuardBits));
  testing::fill_ints(q, 3, rng);
  testing::fill_ints(k, 3, rng);
  for (std::size_t i = 0; i < n_q; ++i)
    for (std::size_t j = 0; j < n_k; ++j) s.at(i, j) = kNaN;
  REQUIRE(attnscore_scores_f32(n_q, n_k, d, q.data(), q.ld, k.data(), k.ld, s.data(), s.ld, 0.0f) ==
          ATTNSCORE_OK);
  const float scale = attnscore_default_scale(d);
  CAPTURE(n_q, n_k, d);
  CHECK(testing::check_scores(s, testing::reference(q, k, d, scale), d, scale, true) == "");
}

}  // namespace

TEST_CASE("public API at every level: exact and random data", "[api]") {
  CapGuard guard;
  const attnscore_level level = GENERATE(from_range(runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  CAPTURE(attnscore_level_name(level), attnscore_kernel_name(ATTNSCORE_DTYPE_F32));
  // Levels with int8 kernels only (avx512vnni, neon_dotprod ...) give f32 the best one below.
  REQUIRE(attnscore_kernel_level(ATTNSCORE_DTYPE_F32) == best_up_to(level));
  REQUIRE(kernel_suffix() == attnscore_level_name(best_up_to(level)));
  std::mt19937 rng(5);
  for (std::size_t d : {1, 7, 64, 80, 128, 129})
    for (std::size_t n : {1, 5, 33}) check_api_exact(n, n + 4, d, rng);
  // Decode-like: one query against many keys, random data within the bound.
  Buffer q(1, 128, 128, 0, kNaN), k(3000, 128, 128, 0, kNaN);
  Buffer s(1, 3000, 3000, 0, testing::from_bits(testing::kGuardBits));
  testing::fill_uniform(q, rng);
  testing::fill_uniform(k, rng);
  REQUIRE(attnscore_scores_f32(1, 3000, 128, q.data(), 128, k.data(), 128, s.data(), 3000, 0.f) ==
          ATTNSCORE_OK);
  const float scale = attnscore_default_scale(128);
  CHECK(testing::check_scores(s, testing::reference(q, k, 128, scale), 128, scale, false) == "");
}

TEST_CASE("dispatch picks the best level the CPU supports", "[api][dispatch]") {
  const char *expect = std::getenv("ATTNSCORE_EXPECT_KERNEL");
  const char *env_cap = std::getenv("ATTNSCORE_MAX_LEVEL");
  const std::string name = attnscore_kernel_name(ATTNSCORE_DTYPE_F32);
  INFO("chosen: " << name);
  // Emulated CPUs (ctest, per QEMU_CPU): the level, and where a run names it the kernel itself.
  if (const char *level = std::getenv("ATTNSCORE_EXPECT_LEVEL")) {
    CHECK(kernel_suffix() == level);
    CHECK(attnscore_level_name(attnscore_kernel_level(ATTNSCORE_DTYPE_F32)) == std::string(level));
  }
  if (expect != nullptr) {
    CHECK(name == expect);
  } else if (env_cap == nullptr) {
#if defined(__x86_64__)
    const testing::HostX86 host = testing::host_x86();  // an oracle independent of ours
    const bool avx2 = host.avx2, avx512 = host.avx512;
    // Of the levels this build compiled (ATTNSCORE_ENABLE_<LEVEL>).
    CHECK(kernel_suffix() == (avx512 && ATTNSCORE_HAVE_AVX512 ? "avx512"
                              : avx2 && ATTNSCORE_HAVE_AVX2   ? "avx2"
                              : ATTNSCORE_HAVE_SSE2           ? "sse2"
                                                              : "scalar"));
#endif
    CHECK(attnscore_max_level() == ATTNSCORE_LEVEL_BEST);
  }
  CHECK(attnscore_level_supported(attnscore_kernel_level(ATTNSCORE_DTYPE_F32)));
  CHECK(attnscore_kernel_name(static_cast<attnscore_dtype>(77)) == nullptr);
}

TEST_CASE("the cap from ATTNSCORE_MAX_LEVEL is honoured", "[api][dispatch]") {
  const char *env_cap = std::getenv("ATTNSCORE_MAX_LEVEL");
  if (env_cap == nullptr) {
    SUCCEED("run by ctest with ATTNSCORE_MAX_LEVEL set, once per level");
    return;
  }
  attnscore_level cap;
  REQUIRE(attnscore_level_from_name(env_cap, &cap) == ATTNSCORE_OK);
  CHECK(attnscore_max_level() == cap);
  CHECK(attnscore_kernel_level(ATTNSCORE_DTYPE_F32) == best_up_to(cap));
  // The run-time cap overrides the environment, and BEST hands control back to it.
  CapGuard guard;
  REQUIRE(attnscore_set_max_level(ATTNSCORE_LEVEL_SCALAR) == ATTNSCORE_OK);
  CHECK(attnscore_kernel_level(ATTNSCORE_DTYPE_F32) == ATTNSCORE_LEVEL_SCALAR);
  REQUIRE(attnscore_set_max_level(ATTNSCORE_LEVEL_BEST) == ATTNSCORE_OK);
  CHECK(attnscore_max_level() == cap);
  CHECK(attnscore_kernel_level(ATTNSCORE_DTYPE_F32) == best_up_to(cap));
}

TEST_CASE("an unknown ATTNSCORE_MAX_LEVEL or ATTNSCORE_CPU_TUNING warns once and is ignored",
          "[.][env-warning]") {
  // Run alone by ctest with both set to bogus, so the variables are first read here.
  REQUIRE(std::getenv("ATTNSCORE_MAX_LEVEL") != nullptr);
  REQUIRE(std::getenv("ATTNSCORE_CPU_TUNING") != nullptr);
  std::fflush(stderr);
  const int saved = dup(2);
  std::FILE *capture = std::tmpfile();
  REQUIRE(capture != nullptr);
  dup2(fileno(capture), 2);
  const attnscore_level cap = attnscore_max_level();
  const std::string name = attnscore_kernel_name(ATTNSCORE_DTYPE_F32);
  attnscore_max_level();
  const unsigned tuning = attnscore::cpu_tuning();
  attnscore::cpu_tuning();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::rewind(capture);
  std::string text;
  for (int c; (c = std::fgetc(capture)) != EOF;) text += static_cast<char>(c);
  std::fclose(capture);
  CHECK(cap == ATTNSCORE_LEVEL_BEST);
  CHECK(name.find("__" + std::string(attnscore_level_name(best_up_to(ATTNSCORE_LEVEL_BEST)))) !=
        std::string::npos);
  const std::string needle = "ignoring ATTNSCORE_MAX_LEVEL";
  const std::size_t first = text.find(needle);
  CHECK(first != std::string::npos);
  CHECK(text.find(needle, first + 1) == std::string::npos);
  // ATTNSCORE_CPU_TUNING=bogus too: one warning, and the detected class.
  const std::size_t tune = text.find("ignoring ATTNSCORE_CPU_TUNING=bogus");
  CHECK(tune != std::string::npos);
  CHECK(text.find("ignoring ATTNSCORE_CPU_TUNING", tune + 1) == std::string::npos);
  CHECK(tuning == attnscore::detect_cpu_tuning());
}

TEST_CASE("the run-time cap: every level of the family, unknown levels rejected", "[api]") {
  CapGuard guard;
  for (int v = 0; v < 255; ++v) {
    const auto l = static_cast<attnscore_level>(v);
    if (attnscore_level_name(l) == nullptr) {
      CHECK(attnscore_set_max_level(l) == ATTNSCORE_ERR_UNKNOWN_LEVEL);
      continue;
    }
    const attnscore_status st = attnscore_set_max_level(l);
    CAPTURE(attnscore_level_name(l));
    if (st == ATTNSCORE_OK) {
      CHECK(attnscore_max_level() == l);
      CHECK(attnscore_kernel_level(ATTNSCORE_DTYPE_F32) == best_up_to(l));
    } else {
      CHECK(st == ATTNSCORE_ERR_UNKNOWN_LEVEL);  // a level of another CPU family
    }
  }
  attnscore_level parsed;
  CHECK(attnscore_level_from_name("avx9000", &parsed) == ATTNSCORE_ERR_UNKNOWN_LEVEL);
  CHECK(attnscore_level_from_name(nullptr, &parsed) == ATTNSCORE_ERR_NULL_POINTER);
  REQUIRE(attnscore_level_from_name("scalar", &parsed) == ATTNSCORE_OK);
  CHECK(parsed == ATTNSCORE_LEVEL_SCALAR);
}

TEST_CASE("default scale is the float nearest to 1/sqrt(d)", "[api][scale]") {
  CHECK(attnscore_default_scale(64) == 0.125f);
  CHECK(attnscore_default_scale(1) == 1.0f);
  CHECK(attnscore_default_scale(0) == 0.0f);
  for (std::size_t d = 1; d <= 200000; d += (d < 2000 ? 1 : 97)) {
    const long double exact = 1.0L / std::sqrt(static_cast<long double>(d));
    const float f = attnscore_default_scale(d);
    const long double err = std::fabs(static_cast<long double>(f) - exact);
    const float up = std::nextafter(f, 2.0f), down = std::nextafter(f, 0.0f);
    CAPTURE(d);
    REQUIRE(err <= std::fabs(static_cast<long double>(up) - exact));
    REQUIRE(err <= std::fabs(static_cast<long double>(down) - exact));
  }
  // 0 selects the default; an explicit scale is used as given.
  const float q[2] = {1, 2}, k[2] = {3, 4};
  float s = 0;
  REQUIRE(attnscore_scores_f32(1, 1, 2, q, 2, k, 2, &s, 1, 0.0f) == ATTNSCORE_OK);
  CHECK(s == 11.0f * attnscore_default_scale(2));
  REQUIRE(attnscore_scores_f32(1, 1, 2, q, 2, k, 2, &s, 1, -2.0f) == ATTNSCORE_OK);
  CHECK(s == -22.0f);
}

TEST_CASE("bad input: its own status, nothing written", "[api][errors]") {
  CapGuard guard;
  const attnscore_level level = GENERATE(from_range(runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  CAPTURE(attnscore_level_name(level));
  std::vector<float> q(64, 1.0f), k(64, 1.0f), big(256, 1.0f);
  std::vector<float> s(64, testing::from_bits(testing::kGuardBits));
  const std::vector<float> s0 = s;
  const float inf = std::numeric_limits<float>::infinity();
  const std::size_t huge = SIZE_MAX / 2;
  struct Case {
    const char *what;
    attnscore_status want;
    std::size_t n_q, n_k, d;
    const float *q;
    std::size_t ldq;
    const float *k;
    std::size_t ldk;
    float *s;
    std::size_t lds;
    float scale;
  };
  float *sp = s.data();
  float *alias = big.data();
  const Case cases[] = {
      {"q null", ATTNSCORE_ERR_NULL_POINTER, 2, 2, 4, nullptr, 4, k.data(), 4, sp, 2, 0},
      {"k null", ATTNSCORE_ERR_NULL_POINTER, 2, 2, 4, q.data(), 4, nullptr, 4, sp, 2, 0},
      {"s null", ATTNSCORE_ERR_NULL_POINTER, 2, 2, 4, q.data(), 4, k.data(), 4, nullptr, 2, 0},
      {"d zero", ATTNSCORE_ERR_ZERO_DIM, 2, 2, 0, q.data(), 4, k.data(), 4, sp, 2, 0},
      {"ldq < d", ATTNSCORE_ERR_BAD_LDQ, 2, 2, 4, q.data(), 3, k.data(), 4, sp, 2, 0},
      {"ldk < d", ATTNSCORE_ERR_BAD_LDK, 2, 2, 4, q.data(), 4, k.data(), 3, sp, 2, 0},
      {"lds < n_k", ATTNSCORE_ERR_BAD_LDS, 2, 2, 4, q.data(), 4, k.data(), 4, sp, 1, 0},
      {"scale NaN", ATTNSCORE_ERR_BAD_SCALE, 2, 2, 4, q.data(), 4, k.data(), 4, sp, 2, kNaN},
      {"scale +Inf", ATTNSCORE_ERR_BAD_SCALE, 2, 2, 4, q.data(), 4, k.data(), 4, sp, 2, inf},
      {"scale -Inf", ATTNSCORE_ERR_BAD_SCALE, 2, 2, 4, q.data(), 4, k.data(), 4, sp, 2, -inf},
      {"scale subnormal", ATTNSCORE_ERR_BAD_SCALE, 2, 2, 4, q.data(), 4, k.data(), 4, sp, 2,
       1e-40f},
      {"scale -subnormal", ATTNSCORE_ERR_BAD_SCALE, 2, 2, 4, q.data(), 4, k.data(), 4, sp, 2,
       -1e-45f},
      {"rows*lds overflows", ATTNSCORE_ERR_SIZE_OVERFLOW, 3, 2, 4, q.data(), 4, k.data(), 4, sp,
       huge, 0},
      {"bytes of S overflow", ATTNSCORE_ERR_SIZE_OVERFLOW, 2, 2, 4, q.data(), 4, k.data(), 4, sp,
       SIZE_MAX / 4, 0},
      {"rows*ldq overflows", ATTNSCORE_ERR_SIZE_OVERFLOW, 3, 2, 4, q.data(), huge, k.data(), 4, sp,
       2, 0},
      {"rows*ldk overflows", ATTNSCORE_ERR_SIZE_OVERFLOW, 2, 3, 4, q.data(), 4, k.data(), huge, sp,
       3, 0},
      {"K wraps the address space", ATTNSCORE_ERR_SIZE_OVERFLOW, 2, 2, 4, q.data(), 4, k.data(),
       (SIZE_MAX - reinterpret_cast<std::uintptr_t>(k.data())) / sizeof(float) - 2, sp, 2, 0},
      {"S overlaps Q", ATTNSCORE_ERR_OVERLAP, 2, 2, 4, alias, 4, k.data(), 4, alias + 6, 2, 0},
      {"S overlaps K", ATTNSCORE_ERR_OVERLAP, 2, 2, 4, q.data(), 4, alias + 8, 4, alias, 16, 0},
      {"S is Q", ATTNSCORE_ERR_OVERLAP, 2, 2, 4, alias, 4, k.data(), 4, alias, 2, 0},
  };
  for (const Case &c : cases) {
    const std::vector<float> big0 = big;
    CAPTURE(c.what);
    CHECK(attnscore_scores_f32(c.n_q, c.n_k, c.d, c.q, c.ldq, c.k, c.ldk, c.s, c.lds, c.scale) ==
          c.want);
    CHECK(std::memcmp(s.data(), s0.data(), s.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(big.data(), big0.data(), big.size() * sizeof(float)) == 0);
  }
  // Empty outputs succeed whatever the pointers, and write nothing.
  CHECK(attnscore_scores_f32(0, 5, 4, nullptr, 0, nullptr, 0, nullptr, 0, kNaN) == ATTNSCORE_OK);
  CHECK(attnscore_scores_f32(5, 0, 0, nullptr, 0, nullptr, 0, nullptr, 0, 0) == ATTNSCORE_OK);
  CHECK(attnscore_scores_f32(0, 0, 4, q.data(), 4, k.data(), 4, sp, 0, 0) == ATTNSCORE_OK);
  CHECK(std::memcmp(s.data(), s0.data(), s.size() * sizeof(float)) == 0);
  // Touching, not overlapping, is fine: S directly after Q.
  CHECK(attnscore_scores_f32(2, 2, 4, alias, 4, k.data(), 4, alias + 8, 2, 0) == ATTNSCORE_OK);
}

TEST_CASE("every status has its own message", "[api][errors]") {
  std::vector<std::string> seen;
  // The statuses are numbered without gaps, DTYPE_MISMATCH the last.
  for (int v = 0; v <= ATTNSCORE_ERR_DTYPE_MISMATCH; ++v) {
    const std::string msg = attnscore_status_string(static_cast<attnscore_status>(v));
    CAPTURE(v, msg);
    CHECK(msg != attnscore_status_string(static_cast<attnscore_status>(1000)));
    for (const std::string &other : seen) CHECK(other != msg);
    seen.push_back(msg);
  }
}

TEST_CASE("the FP environment is respected and left unchanged", "[api][fpenv]") {
  CapGuard guard;
  const attnscore_level level = GENERATE(from_range(runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  CAPTURE(attnscore_level_name(level));
  const std::uint64_t original = testing::fp_control();
  std::mt19937 rng(11);
  for (const bool flush : {false, true}) {
    if (flush && testing::flush_bits() == 0) continue;
    const std::uint64_t mode = flush ? original | testing::flush_bits() : original;
    CAPTURE(flush);
    const std::size_t n = 9, d = 96;
    Buffer q(n, d, d, 0, kNaN), k(n, d, d, 0, kNaN);
    Buffer s(n, n, n, 0, testing::from_bits(testing::kGuardBits));
    testing::fill_uniform(q, rng);
    testing::fill_uniform(k, rng);
    q.at(0, 0) = 1e-39f;  // subnormal inputs and products: flushed or not, within the bound
    k.at(0, 0) = 1e-39f;
    k.at(1, 3) = 3e-39f;
    testing::set_fp_control(mode);
    const attnscore_status st =
        attnscore_scores_f32(n, n, d, q.data(), d, k.data(), d, s.data(), n, 0.0f);
    const std::uint64_t after = testing::fp_control();
    testing::set_fp_control(original);
    REQUIRE(st == ATTNSCORE_OK);
    // Control bits only: the sticky exception flags are IEEE's to raise.
    CHECK((after & testing::fp_control_mask()) == (mode & testing::fp_control_mask()));
    const float scale = attnscore_default_scale(d);
    CHECK(testing::check_scores(s, testing::reference(q, k, d, scale), d, scale, false) == "");
  }
}

TEST_CASE("C++ wrapper: views, blocks and shape checks", "[api][cpp]") {
  std::vector<float> q(3 * 8), k(5 * 8), s(3 * 6, testing::from_bits(testing::kGuardBits));
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>(i % 5) - 2.0f;
  for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<float>(i % 3) - 1.0f;
  attnscore::MatrixView<const float> qv(q.data(), 3, 8), kv(k.data(), 5, 8);
  attnscore::MatrixView<float> sv(s.data(), 3, 5, 6);
  REQUIRE(attnscore::scores(qv, kv, sv, 1.0f) == ATTNSCORE_OK);
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 5; ++j) {
      float want = 0;
      for (std::size_t t = 0; t < 8; ++t) want += q[i * 8 + t] * k[j * 8 + t];
      CHECK(s[i * 6 + j] == want);
    }
    CHECK(testing::to_bits(s[i * 6 + 5]) == testing::kGuardBits);
  }
  // A block of S computed alone equals the same block of the whole.
  std::vector<float> part(2 * 2);
  attnscore::MatrixView<float> pv(part.data(), 2, 2);
  REQUIRE(attnscore::scores(qv.block(1, 0, 2, 8), kv.block(2, 0, 2, 8), pv, 1.0f) == ATTNSCORE_OK);
  CHECK(part[0] == s[1 * 6 + 2]);
  CHECK(part[3] == s[2 * 6 + 3]);
  const std::vector<float> s0 = s;
  CHECK(attnscore::scores(qv, kv, attnscore::MatrixView<float>(s.data(), 3, 4, 6)) ==
        ATTNSCORE_ERR_SHAPE_MISMATCH);
  CHECK(attnscore::scores(qv, attnscore::MatrixView<const float>(k.data(), 5, 7), sv) ==
        ATTNSCORE_ERR_SHAPE_MISMATCH);
  CHECK(std::memcmp(s.data(), s0.data(), s.size() * sizeof(float)) == 0);
  CHECK(std::string(attnscore::kernel_name()) == attnscore_kernel_name(ATTNSCORE_DTYPE_F32));
  CHECK(attnscore::default_scale(16) == 0.25f);
}

namespace {

// One head of attention from a key cache, as the removed 0.1.0 scores-from-cache call was: Q of
// n_q rows (row stride ldq) against the first n_k keys of `cache`, S of n_q x n_k (row stride
// lds).
attnscore_status cache_scores(std::size_t n_q, std::size_t n_k, std::size_t d, const float *q,
                              std::size_t ldq, const attnscore_cache *cache, float *s,
                              std::size_t lds, float scale) {
  attnscore_attention_desc a = attnscore_attention_dense(ATTNSCORE_DTYPE_F32, 1, 1, n_q, n_k, d);
  a.q.data = q, a.q.row_stride = ldq;
  a.k_cache = cache;
  a.s.data = s, a.s.row_stride = lds;
  a.scale = scale;
  return attnscore_attention(&a, nullptr);
}

}  // namespace

TEST_CASE("packed key cache: API, errors, C++ wrapper", "[api][kcache]") {
  CapGuard guard;
  const attnscore_level level = GENERATE(from_range(runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  CAPTURE(attnscore_level_name(level));
  const std::size_t d = 24, cap = 40;
  const auto shape = [&](std::size_t capacity, std::size_t dim) {
    return attnscore_cache_shape{ATTNSCORE_CACHE_KEYS, ATTNSCORE_DTYPE_F32, 1, capacity, dim};
  };
  const attnscore_cache_shape sh = shape(cap, d), zero_cap = shape(0, d), zero_d = shape(cap, 0),
                              huge = shape(SIZE_MAX / 2, 64);
  const std::size_t bytes = attnscore_cache_bytes(&sh);
  REQUIRE(bytes >= cap * d * sizeof(float));
  CHECK(attnscore_cache_bytes(&zero_cap) == 0);
  CHECK(attnscore_cache_bytes(&zero_d) == 0);
  CHECK(attnscore_cache_bytes(&huge) == 0);
  std::vector<unsigned char> mem(bytes);
  attnscore_cache *c = nullptr;
  CHECK(attnscore_cache_init(mem.data(), bytes - 1, &sh, &c) == ATTNSCORE_ERR_BUFFER_TOO_SMALL);
  CHECK(attnscore_cache_init(nullptr, bytes, &sh, &c) == ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_cache_init(mem.data(), bytes, &sh, nullptr) == ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_cache_init(mem.data(), bytes, &zero_cap, &c) == ATTNSCORE_ERR_ZERO_DIM);
  CHECK(attnscore_cache_init(mem.data(), bytes, &huge, &c) == ATTNSCORE_ERR_SIZE_OVERFLOW);
  REQUIRE(attnscore_cache_init(mem.data(), bytes, &sh, &c) == ATTNSCORE_OK);
  CHECK(attnscore_cache_size(c) == 0);

  std::mt19937 rng(3);
  Buffer k(cap, d, d, 0, kNaN), q(5, d, d, 0, kNaN);
  testing::fill_ints(k, 3, rng);
  testing::fill_ints(q, 3, rng);
  // Keys [j, j + n) of K as an append source, with row stride ld.
  const auto keys = [&](const float *data, std::size_t ld) {
    attnscore_tensor t;
    std::memset(&t, 0, sizeof t);
    t.data = data, t.dtype = ATTNSCORE_DTYPE_F32, t.head_stride = cap * ld, t.row_stride = ld;
    return t;
  };
  const attnscore_tensor all = keys(k.data(), d), short_ld = keys(k.data(), d - 1),
                         null_keys = keys(nullptr, d),
                         in_cache = keys(reinterpret_cast<const float *>(mem.data() + 64), d),
                         rest = keys(&k.at(7, 0), d);
  CHECK(attnscore_cache_append(c, 2, &short_ld) == ATTNSCORE_ERR_BAD_LDK);
  CHECK(attnscore_cache_append(c, 2, &null_keys) == ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_cache_append(c, 2, nullptr) == ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_cache_append(nullptr, 2, &all) == ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_cache_append(c, cap + 1, &all) == ATTNSCORE_ERR_CACHE_FULL);
  CHECK(attnscore_cache_append(c, 1, &in_cache) == ATTNSCORE_ERR_OVERLAP);
  CHECK(attnscore_cache_size(c) == 0);
  REQUIRE(attnscore_cache_append(c, 7, &all) == ATTNSCORE_OK);
  REQUIRE(attnscore_cache_append(c, 0, nullptr) == ATTNSCORE_OK);
  REQUIRE(attnscore_cache_append(c, cap - 7, &rest) == ATTNSCORE_OK);
  CHECK(attnscore_cache_append(c, 1, &all) == ATTNSCORE_ERR_CACHE_FULL);
  CHECK(attnscore_cache_size(c) == cap);

  // Exact data: the cache's scores are fl(exact * scale), and errors write nothing.
  Buffer s(5, cap, cap + 1, 0, testing::from_bits(testing::kGuardBits));
  const Buffer s0 = s;
  CHECK(cache_scores(5, cap, d, q.data(), d - 1, c, s.data(), s.ld, 0) == ATTNSCORE_ERR_BAD_LDQ);
  CHECK(cache_scores(5, cap, d, q.data(), d, c, s.data(), cap - 1, 0) == ATTNSCORE_ERR_BAD_LDS);
  CHECK(cache_scores(5, cap, d, q.data(), d, c, s.data(), s.ld, kNaN) == ATTNSCORE_ERR_BAD_SCALE);
  // No cache and no raw K: NULL_POINTER.
  CHECK(cache_scores(5, cap, d, q.data(), d, nullptr, s.data(), s.ld, 0) ==
        ATTNSCORE_ERR_NULL_POINTER);
  CHECK(cache_scores(5, cap, d, nullptr, d, c, s.data(), s.ld, 0) == ATTNSCORE_ERR_NULL_POINTER);
  CHECK(cache_scores(1, cap, d, q.data(), d, c, reinterpret_cast<float *>(mem.data()), cap, 0) ==
        ATTNSCORE_ERR_OVERLAP);
  CHECK(cache_scores(2, cap, d, q.data(), d, c, q.data() + d, cap, 0) == ATTNSCORE_ERR_OVERLAP);
  std::vector<unsigned char> junk(256, 0x5a);
  CHECK(cache_scores(5, cap, d, q.data(), d, reinterpret_cast<const attnscore_cache *>(junk.data()),
                     s.data(), s.ld, 0) == ATTNSCORE_ERR_BAD_CACHE);
  // The cache's d and size: another d, or more keys than held, is SHAPE_MISMATCH.
  CHECK(cache_scores(5, cap, d - 1, q.data(), d, c, s.data(), s.ld, 0) ==
        ATTNSCORE_ERR_SHAPE_MISMATCH);
  CHECK(cache_scores(5, cap + 1, d, q.data(), d, c, s.data(), s.ld + 1, 0) ==
        ATTNSCORE_ERR_SHAPE_MISMATCH);
  CHECK(std::memcmp(s.mem.data(), s0.mem.data(), s.mem.size() * sizeof(float)) == 0);
  for (std::size_t i = 0; i < 5; ++i)
    for (std::size_t j = 0; j < cap; ++j) s.at(i, j) = kNaN;
  for (std::size_t n_q : {5, 1}) {
    REQUIRE(cache_scores(n_q, cap, d, q.data(), d, c, s.data(), s.ld, 0) == ATTNSCORE_OK);
    Buffer qn(n_q, d, d, 0, kNaN);
    for (std::size_t i = 0; i < n_q; ++i)
      for (std::size_t t = 0; t < d; ++t) qn.at(i, t) = q.at(i, t);
    Buffer sn(n_q, cap, cap + 1, 0, testing::from_bits(testing::kGuardBits));
    for (std::size_t i = 0; i < n_q; ++i)
      for (std::size_t j = 0; j < cap; ++j) sn.at(i, j) = s.at(i, j);
    const float scale = attnscore_default_scale(d);
    CAPTURE(n_q);
    CHECK(testing::check_scores(sn, testing::reference(qn, k, d, scale), d, scale, true) == "");
  }
  REQUIRE(attnscore_cache_truncate(c, 0) == ATTNSCORE_OK);
  CHECK(attnscore_cache_size(c) == 0);
  CHECK(cache_scores(5, 0, d, q.data(), d, c, s.data(), s.ld, 0) == ATTNSCORE_OK);
  CHECK(cache_scores(5, 1, d, q.data(), d, c, s.data(), s.ld, 0) == ATTNSCORE_ERR_SHAPE_MISMATCH);

  // The C++ wrapper over the same memory: one KV head.
  using attnscore::HeadsView;
  using attnscore::MatrixView;
  attnscore::KeyCache<float> kc(mem.data(), mem.size(), 1, cap, d);
  REQUIRE(kc.status() == ATTNSCORE_OK);
  CHECK((kc.heads() == 1 && kc.capacity() == cap && kc.d() == d));
  CHECK(kc.append(MatrixView<const float>(k.data(), 3, d - 1, d)) == ATTNSCORE_ERR_SHAPE_MISMATCH);
  CHECK(kc.append(HeadsView<const float>(k.data(), 2, 3, d)) == ATTNSCORE_ERR_SHAPE_MISMATCH);
  REQUIRE(kc.append(MatrixView<const float>(k.data(), 9, d)) == ATTNSCORE_OK);
  CHECK(kc.size() == 9);
  std::vector<float> out(2 * 9), raw(2 * 9);
  const MatrixView<const float> q2(q.data(), 2, d);
  REQUIRE(attnscore::attention(q2, kc, MatrixView<float>(out.data(), 2, 9)) == ATTNSCORE_OK);
  REQUIRE(attnscore_scores_f32(2, 9, d, q.data(), d, k.data(), d, raw.data(), 9, 0) ==
          ATTNSCORE_OK);
  CHECK(std::memcmp(out.data(), raw.data(), out.size() * sizeof(float)) == 0);
  // Fewer columns than keys held: the first ones; more: SHAPE_MISMATCH, nothing written.
  std::vector<float> first(2 * 8);
  REQUIRE(attnscore::attention(q2, kc, MatrixView<float>(first.data(), 2, 8)) == ATTNSCORE_OK);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 8; ++j) CHECK(first[i * 8 + j] == raw[i * 9 + j]);
  std::vector<float> wide(2 * 10, 7.0f);
  CHECK(attnscore::attention(q2, kc, MatrixView<float>(wide.data(), 2, 10)) ==
        ATTNSCORE_ERR_SHAPE_MISMATCH);
  CHECK(attnscore::attention(MatrixView<const float>(q.data(), 2, d - 1), kc,
                             MatrixView<float>(out.data(), 2, 9)) == ATTNSCORE_ERR_SHAPE_MISMATCH);
  for (float x : wide) CHECK(x == 7.0f);
  REQUIRE(kc.truncate(4) == ATTNSCORE_OK);
  CHECK(kc.size() == 4);
  CHECK(kc.truncate(5) == ATTNSCORE_ERR_SHAPE_MISMATCH);
  REQUIRE(kc.clear() == ATTNSCORE_OK);
  CHECK(kc.size() == 0);
  attnscore::KeyCache<float> bad(mem.data(), 8, 1, cap, d);
  CHECK(bad.status() == ATTNSCORE_ERR_BUFFER_TOO_SMALL);
  CHECK(bad.append(MatrixView<const float>(k.data(), 1, d)) == ATTNSCORE_ERR_BUFFER_TOO_SMALL);
  CHECK(attnscore::attention(q2, bad, MatrixView<float>(out.data(), 2, 0)) ==
        ATTNSCORE_ERR_BUFFER_TOO_SMALL);
  CHECK((bad.heads() == 0 && bad.size() == 0 && bad.handle() == nullptr));
  CHECK(attnscore::KeyCache<float>::bytes(1, cap, d) == bytes);
  CHECK(attnscore::KeyCache<float>::bytes(1, 0, d) == 0);
}

namespace {

// Runs every task on the calling thread, in reverse order, counting the calls.
struct Reverse {
  int calls = 0;
  static void run(void *ctx, attnscore_task_fn fn, void *task_ctx, std::size_t n) {
    ++static_cast<Reverse *>(ctx)->calls;
    for (std::size_t i = n; i-- > 0;) fn(task_ctx, i);
  }
};

}  // namespace

TEST_CASE("C++ attention: heads, groups, caches, f16 S, options and parallel-fors", "[api][cpp]") {
  using attnscore::HeadsView;
  // 4 query heads on 2 KV heads, 3 rows, 5 keys, d 8; Q token-major (row stride 4 * 8 + 1), K
  // head-major, S head-major with padded rows.
  const std::size_t hq = 4, hkv = 2, n_q = 3, n_k = 5, d = 8, qrs = hq * d + 1, srs = n_k + 2;
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> v(-3, 3);
  std::vector<float> q(n_q * qrs, kNaN), k(hkv * n_k * d);
  for (std::size_t i = 0; i < n_q; ++i)
    for (std::size_t x = 0; x < hq * d; ++x) q[i * qrs + x] = static_cast<float>(v(rng));
  for (float &x : k) x = static_cast<float>(v(rng));
  const HeadsView<const float> Q(q.data(), hq, n_q, d, d, qrs), K(k.data(), hkv, n_k, d);
  std::vector<float> s(hq * n_q * srs, testing::from_bits(testing::kGuardBits));
  const HeadsView<float> S(s.data(), hq, n_q, n_k, n_q * srs, srs);
  REQUIRE(attnscore::attention(Q, K, S) == ATTNSCORE_OK);
  // Each head: the pinned scores call on its KV head (h / 2), bit for bit; the gaps untouched.
  for (std::size_t h = 0; h < hq; ++h) {
    std::vector<float> want(n_q * n_k);
    REQUIRE(attnscore_scores_f32(n_q, n_k, d, q.data() + h * d, qrs, k.data() + h / 2 * n_k * d, d,
                                 want.data(), n_k, 0) == ATTNSCORE_OK);
    for (std::size_t i = 0; i < n_q; ++i) {
      for (std::size_t j = 0; j < n_k; ++j)
        CHECK(testing::to_bits(s[h * n_q * srs + i * srs + j]) ==
              testing::to_bits(want[i * n_k + j]));
      CHECK(testing::to_bits(s[h * n_q * srs + i * srs + n_k]) == testing::kGuardBits);
    }
  }
  const std::vector<float> s_plain = s;
  // Shapes that disagree: SHAPE_MISMATCH before anything else (even a bad option), nothing
  // written; heads that do not divide: the C call's HEADS_MISMATCH.
  attnscore::AttentionOptions bad_opts;
  bad_opts.scale = kNaN;
  CHECK(attnscore::attention(Q, HeadsView<const float>(k.data(), hkv, n_k, d - 1), S, bad_opts) ==
        ATTNSCORE_ERR_SHAPE_MISMATCH);
  CHECK(attnscore::attention(Q, K, HeadsView<float>(s.data(), hq, n_q, n_k - 1, n_q * srs, srs)) ==
        ATTNSCORE_ERR_SHAPE_MISMATCH);
  CHECK(attnscore::attention(Q, K, HeadsView<float>(s.data(), hq - 1, n_q, n_k, n_q * srs, srs)) ==
        ATTNSCORE_ERR_SHAPE_MISMATCH);
  CHECK(attnscore::attention(Q, K, HeadsView<float>(s.data(), hq, n_q + 1, n_k, n_q * srs, srs)) ==
        ATTNSCORE_ERR_SHAPE_MISMATCH);
  CHECK(attnscore::attention(Q, HeadsView<const float>(k.data(), 3, n_k, d), S) ==
        ATTNSCORE_ERR_HEADS_MISMATCH);
  CHECK(attnscore::attention(Q, K, S, bad_opts) == ATTNSCORE_ERR_BAD_SCALE);
  CHECK(std::memcmp(s.data(), s_plain.data(), s.size() * sizeof(float)) == 0);

  // The options reach the descriptor: scale, softcap, mask, softmax (the C call's bits).
  attnscore::AttentionOptions o;
  o.scale = 0.5f, o.softcap = 2.0f, o.mask = ATTNSCORE_MASK_WINDOW, o.pos_offset = 2, o.window = 2;
  o.softmax = true;
  attnscore_attention_desc a = attnscore_attention_dense(ATTNSCORE_DTYPE_F32, hq, hkv, n_q, n_k, d);
  a.q.data = q.data(), a.q.head_stride = d, a.q.row_stride = qrs;
  a.k.data = k.data();
  std::vector<float> s_c(s.size(), testing::from_bits(testing::kGuardBits));
  a.s.data = s_c.data(), a.s.head_stride = n_q * srs, a.s.row_stride = srs;
  a.scale = 0.5f, a.softcap = 2.0f, a.mask = ATTNSCORE_MASK_WINDOW, a.pos_offset = 2, a.window = 2;
  a.flags = ATTNSCORE_ATTN_SOFTMAX;
  REQUIRE(attnscore_attention(&a, nullptr) == ATTNSCORE_OK);
  REQUIRE(attnscore::attention(Q, K, S, o) == ATTNSCORE_OK);
  CHECK(std::memcmp(s.data(), s_c.data(), s.size() * sizeof(float)) == 0);
  // Row 0 at position 2 sees keys 1 and 2 only.
  CHECK((s[0] == 0.0f && s[1] > 0.0f && s[2] > 0.0f && s[3] == 0.0f && s[4] == 0.0f));

  // Through a parallel-for (called once), the built-in pool, and a par without a parallel_for.
  Reverse rev;
  const attnscore_parallel par{Reverse::run, &rev, 3};
  std::vector<float> s_par(s.size(), testing::from_bits(testing::kGuardBits));
  const HeadsView<float> S_par(s_par.data(), hq, n_q, n_k, n_q * srs, srs);
  REQUIRE(attnscore::attention(Q, K, S_par, {}, par) == ATTNSCORE_OK);
  CHECK(rev.calls == 1);
  CHECK(std::memcmp(s_par.data(), s_plain.data(), s.size() * sizeof(float)) == 0);
  REQUIRE(attnscore::attention(Q, K, S_par, {}, &par) == ATTNSCORE_OK);
  CHECK(rev.calls == 2);
  const attnscore::Parallel none(static_cast<const attnscore_parallel *>(nullptr));
  CHECK(none.get() == nullptr);
  const attnscore_parallel no_fn{nullptr, nullptr, 2};
  CHECK(attnscore::attention(Q, K, S_par, {}, no_fn) == ATTNSCORE_ERR_NULL_POINTER);
  if (testing::threads_available()) {
    attnscore::ThreadPool pool(2);
    REQUIRE(pool.status() == ATTNSCORE_OK);
    CHECK(pool.threads() == 2);
    std::fill(s_par.begin(), s_par.end(), testing::from_bits(testing::kGuardBits));
    REQUIRE(attnscore::attention(Q, K, S_par, {}, pool) == ATTNSCORE_OK);
    CHECK(std::memcmp(s_par.data(), s_plain.data(), s.size() * sizeof(float)) == 0);
  }

  // From a KeyCache<float> of the two KV heads, appended in two pieces: the raw K's bits.
  std::vector<unsigned char> mem(attnscore::KeyCache<float>::bytes(hkv, 8, d));
  attnscore::KeyCache<float> cache(mem.data(), mem.size(), hkv, 8, d);
  REQUIRE(cache.status() == ATTNSCORE_OK);
  REQUIRE(cache.append(HeadsView<const float>(k.data(), hkv, 2, d, n_k * d, d)) == ATTNSCORE_OK);
  REQUIRE(cache.append(HeadsView<const float>(k.data() + 2 * d, hkv, 3, d, n_k * d, d)) ==
          ATTNSCORE_OK);
  CHECK(cache.append(HeadsView<const float>(k.data(), 1, 2, d)) == ATTNSCORE_ERR_SHAPE_MISMATCH);
  REQUIRE(cache.size() == n_k);
  std::vector<float> s_cache(s.size(), testing::from_bits(testing::kGuardBits));
  const HeadsView<float> S_cache(s_cache.data(), hq, n_q, n_k, n_q * srs, srs);
  REQUIRE(attnscore::attention(Q, cache, S_cache, {}, par) == ATTNSCORE_OK);
  CHECK(std::memcmp(s_cache.data(), s_plain.data(), s.size() * sizeof(float)) == 0);
  CHECK(attnscore::attention(HeadsView<const float>(q.data(), 3, n_q, d, d, qrs), cache, S_cache) ==
        ATTNSCORE_ERR_SHAPE_MISMATCH);

  // f16 S: each f32 score rounded once (raw K and the cache).
  if (attnscore_kernel_name(ATTNSCORE_DTYPE_F16) != nullptr) {
    std::vector<attnscore::f16> s16(hq * n_q * n_k, attnscore::f16{0x7d5a});
    const HeadsView<attnscore::f16> S16(s16.data(), hq, n_q, n_k);
    for (int from_cache = 0; from_cache < 2; ++from_cache) {
      REQUIRE((from_cache ? attnscore::attention(Q, cache, S16)
                          : attnscore::attention(Q, K, S16)) == ATTNSCORE_OK);
      for (std::size_t h = 0; h < hq; ++h)
        for (std::size_t i = 0; i < n_q; ++i)
          for (std::size_t j = 0; j < n_k; ++j)
            CHECK(s16[(h * n_q + i) * n_k + j].bits ==
                  testing::f16_nearest(s_plain[h * n_q * srs + i * srs + j]));
    }
    // f16 accumulation is for f16 Q and K only: the C call's BAD_FLAGS for f32.
    attnscore::AttentionOptions acc;
    acc.f16_accumulate = true;
    CHECK(attnscore::attention(Q, K, S16, acc) == ATTNSCORE_ERR_BAD_FLAGS);
  }
  CHECK(attnscore::flag_available(ATTNSCORE_ATTN_SOFTMAX));
  CHECK(!attnscore::flag_available(0x80u));
  CHECK(attnscore::flag_available(ATTNSCORE_ATTN_F16_ACCUMULATE) ==
        (attnscore_flag_available(ATTNSCORE_ATTN_F16_ACCUMULATE) != 0));
}
