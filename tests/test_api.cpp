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

TEST_CASE("an unknown ATTNSCORE_MAX_LEVEL warns once and is ignored", "[.][env-warning]") {
  // Run alone by ctest with ATTNSCORE_MAX_LEVEL=bogus, so the variable is first read here.
  REQUIRE(std::getenv("ATTNSCORE_MAX_LEVEL") != nullptr);
  std::fflush(stderr);
  const int saved = dup(2);
  std::FILE *capture = std::tmpfile();
  REQUIRE(capture != nullptr);
  dup2(fileno(capture), 2);
  const attnscore_level cap = attnscore_max_level();
  const std::string name = attnscore_kernel_name(ATTNSCORE_DTYPE_F32);
  attnscore_max_level();
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
  for (int v = 0; v <= ATTNSCORE_ERR_ROW_TOO_LONG; ++v) {  // the statuses are numbered without gaps
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

TEST_CASE("packed key cache: API, errors, C++ wrapper", "[api][kcache]") {
  CapGuard guard;
  const attnscore_level level = GENERATE(from_range(runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  CAPTURE(attnscore_level_name(level));
  const std::size_t d = 24, cap = 40;
  const std::size_t bytes = attnscore_kcache_f32_bytes(cap, d);
  REQUIRE(bytes >= cap * d * sizeof(float));
  CHECK(attnscore_kcache_f32_bytes(0, d) == 0);
  CHECK(attnscore_kcache_f32_bytes(cap, 0) == 0);
  CHECK(attnscore_kcache_f32_bytes(SIZE_MAX / 2, 64) == 0);
  std::vector<unsigned char> mem(bytes);
  attnscore_kcache_f32 *c = nullptr;
  CHECK(attnscore_kcache_f32_init(mem.data(), bytes - 1, cap, d, &c) ==
        ATTNSCORE_ERR_BUFFER_TOO_SMALL);
  CHECK(attnscore_kcache_f32_init(nullptr, bytes, cap, d, &c) == ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_kcache_f32_init(mem.data(), bytes, cap, d, nullptr) ==
        ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_kcache_f32_init(mem.data(), bytes, 0, d, &c) == ATTNSCORE_ERR_ZERO_DIM);
  CHECK(attnscore_kcache_f32_init(mem.data(), bytes, SIZE_MAX / 2, 64, &c) ==
        ATTNSCORE_ERR_SIZE_OVERFLOW);
  REQUIRE(attnscore_kcache_f32_init(mem.data(), bytes, cap, d, &c) == ATTNSCORE_OK);
  CHECK(attnscore_kcache_f32_size(c) == 0);
  CHECK(attnscore_kcache_f32_dim(c) == d);

  std::mt19937 rng(3);
  Buffer k(cap, d, d, 0, kNaN), q(5, d, d, 0, kNaN);
  testing::fill_ints(k, 3, rng);
  testing::fill_ints(q, 3, rng);
  CHECK(attnscore_kcache_f32_append(c, 2, k.data(), d - 1) == ATTNSCORE_ERR_BAD_LDK);
  CHECK(attnscore_kcache_f32_append(c, 2, nullptr, d) == ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_kcache_f32_append(nullptr, 2, k.data(), d) == ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_kcache_f32_append(c, cap + 1, k.data(), d) == ATTNSCORE_ERR_CACHE_FULL);
  CHECK(attnscore_kcache_f32_append(c, 1, reinterpret_cast<const float *>(mem.data() + 64), d) ==
        ATTNSCORE_ERR_OVERLAP);
  CHECK(attnscore_kcache_f32_size(c) == 0);
  REQUIRE(attnscore_kcache_f32_append(c, 7, k.data(), d) == ATTNSCORE_OK);
  REQUIRE(attnscore_kcache_f32_append(c, 0, nullptr, d) == ATTNSCORE_OK);
  REQUIRE(attnscore_kcache_f32_append(c, cap - 7, &k.at(7, 0), d) == ATTNSCORE_OK);
  CHECK(attnscore_kcache_f32_append(c, 1, k.data(), d) == ATTNSCORE_ERR_CACHE_FULL);
  CHECK(attnscore_kcache_f32_size(c) == cap);

  // Exact data: the cache's scores are fl(exact * scale), and errors write nothing.
  Buffer s(5, cap, cap + 1, 0, testing::from_bits(testing::kGuardBits));
  const Buffer s0 = s;
  CHECK(attnscore_scores_f32_kcache(5, q.data(), d - 1, c, s.data(), s.ld, 0) ==
        ATTNSCORE_ERR_BAD_LDQ);
  CHECK(attnscore_scores_f32_kcache(5, q.data(), d, c, s.data(), cap - 1, 0) ==
        ATTNSCORE_ERR_BAD_LDS);
  CHECK(attnscore_scores_f32_kcache(5, q.data(), d, c, s.data(), s.ld, kNaN) ==
        ATTNSCORE_ERR_BAD_SCALE);
  CHECK(attnscore_scores_f32_kcache(5, q.data(), d, nullptr, s.data(), s.ld, 0) ==
        ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_scores_f32_kcache(5, nullptr, d, c, s.data(), s.ld, 0) ==
        ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_scores_f32_kcache(1, q.data(), d, c, reinterpret_cast<float *>(mem.data()), cap,
                                    0) == ATTNSCORE_ERR_OVERLAP);
  CHECK(attnscore_scores_f32_kcache(2, q.data(), d, c, q.data() + d, cap, 0) ==
        ATTNSCORE_ERR_OVERLAP);
  std::vector<unsigned char> junk(256, 0x5a);
  CHECK(attnscore_scores_f32_kcache(5, q.data(), d,
                                    reinterpret_cast<const attnscore_kcache_f32 *>(junk.data()),
                                    s.data(), s.ld, 0) == ATTNSCORE_ERR_BAD_CACHE);
  CHECK(std::memcmp(s.mem.data(), s0.mem.data(), s.mem.size() * sizeof(float)) == 0);
  for (std::size_t i = 0; i < 5; ++i)
    for (std::size_t j = 0; j < cap; ++j) s.at(i, j) = kNaN;
  for (std::size_t n_q : {5, 1}) {
    REQUIRE(attnscore_scores_f32_kcache(n_q, q.data(), d, c, s.data(), s.ld, 0) == ATTNSCORE_OK);
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
  REQUIRE(attnscore_kcache_f32_clear(c) == ATTNSCORE_OK);
  CHECK(attnscore_kcache_f32_size(c) == 0);
  CHECK(attnscore_scores_f32_kcache(5, q.data(), d, c, s.data(), s.ld, 0) == ATTNSCORE_OK);

  // The C++ wrapper over the same memory.
  attnscore::KeyCache kc(mem.data(), mem.size(), cap, d);
  REQUIRE(kc.status() == ATTNSCORE_OK);
  CHECK(kc.append(attnscore::MatrixView<const float>(k.data(), 3, d - 1, d)) ==
        ATTNSCORE_ERR_SHAPE_MISMATCH);
  REQUIRE(kc.append(attnscore::MatrixView<const float>(k.data(), 9, d)) == ATTNSCORE_OK);
  CHECK(kc.size() == 9);
  std::vector<float> out(2 * 9), raw(2 * 9);
  REQUIRE(attnscore::scores(attnscore::MatrixView<const float>(q.data(), 2, d), kc,
                            attnscore::MatrixView<float>(out.data(), 2, 9)) == ATTNSCORE_OK);
  REQUIRE(attnscore_scores_f32(2, 9, d, q.data(), d, k.data(), d, raw.data(), 9, 0) ==
          ATTNSCORE_OK);
  CHECK(std::memcmp(out.data(), raw.data(), out.size() * sizeof(float)) == 0);
  CHECK(attnscore::scores(attnscore::MatrixView<const float>(q.data(), 2, d), kc,
                          attnscore::MatrixView<float>(out.data(), 2, 8)) ==
        ATTNSCORE_ERR_SHAPE_MISMATCH);
  attnscore::KeyCache bad(mem.data(), 8, cap, d);
  CHECK(bad.status() == ATTNSCORE_ERR_BUFFER_TOO_SMALL);
  CHECK(bad.append(attnscore::MatrixView<const float>(k.data(), 1, d)) ==
        ATTNSCORE_ERR_BUFFER_TOO_SMALL);
}
