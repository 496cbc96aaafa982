// SPDX-License-Identifier: Apache-2.0
// Parallel calls: the same bits as the single-threaded call for every thread count, split and
// task order, through the built-in pool and through hooks of the caller's kind.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "attn_case.hpp"
#include "attnscore/attnscore.h"
#include "parallel_hook.hpp"
#include "support.hpp"

namespace {

using testing::Buffer;
using testing::from_bits;
using testing::Hook;
using testing::hook_parallel_for;
using testing::kGuardBits;
using testing::threads_available;
using testing::to_bits;

// The built-in pool, owned (stopped when it goes).
struct Pool {
  attnscore_pool *pool = nullptr;
  attnscore_status status;
  explicit Pool(std::size_t threads) : status(attnscore_pool_create(threads, &pool)) {}
  ~Pool() { attnscore_pool_destroy(pool); }
  Pool(const Pool &) = delete;
  Pool &operator=(const Pool &) = delete;
  attnscore_parallel parallel() const { return attnscore_pool_parallel(pool); }
  std::size_t threads() const { return parallel().threads; }
};

// One head of f32 scores through the attention call (what the 0.1.0 parallel scores call did).
attnscore_status scores_f32(const attnscore_parallel *par, std::size_t n_q, std::size_t n_k,
                            std::size_t d, const float *q, std::size_t ldq, const float *k,
                            std::size_t ldk, float *s, std::size_t lds, float scale) {
  attnscore_attention_desc a = attnscore_attention_dense(ATTNSCORE_DTYPE_F32, 1, 1, n_q, n_k, d);
  a.q.data = q, a.q.row_stride = ldq, a.k.data = k, a.k.row_stride = ldk;
  a.s.data = s, a.s.row_stride = lds, a.scale = scale;
  return attnscore_attention(&a, par);
}

struct Case {
  std::size_t n_q, n_k, d;
};

// Decode (1-3 rows, key ranges), prefill with many key panels (key split), few keys (row split),
// edge tiles, and d past one stack panel's chunk (partial sums through S).
const Case kCases[] = {{1, 1, 3},     {1, 4096, 64},  {3, 1000, 33},  {2, 700, 128},
                       {17, 100, 19}, {64, 64, 64},   {200, 37, 40},  {100, 5, 7},
                       {9, 300, 700}, {33, 257, 128}, {1, 513, 1100}, {130, 130, 96}};

std::vector<float> run_single(const Case &c, const Buffer &q, const Buffer &k, std::size_t lds) {
  std::vector<float> s(c.n_q * lds, from_bits(kGuardBits));
  REQUIRE(attnscore_scores_f32(c.n_q, c.n_k, c.d, q.data(), q.ld, k.data(), k.ld, s.data(), lds,
                               0.0f) == ATTNSCORE_OK);
  return s;
}

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("parallel f32 calls give the single-threaded bits", "[parallel]") {
  testing::CapGuard guard;
  std::mt19937 rng(4242);
  std::vector<std::unique_ptr<Pool>> pools;
  if (threads_available())
    for (std::size_t n : {1, 2, 3, 7}) pools.emplace_back(new Pool(n));
  for (const auto &p : pools) REQUIRE(p->status == ATTNSCORE_OK);
  for (attnscore_level level : testing::runnable_levels()) {
    REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
    for (const Case &c : kCases) {
      Buffer q(c.n_q, c.d, c.d + 3, 1, from_bits(kGuardBits));
      Buffer k(c.n_k, c.d, c.d + 1, 2, from_bits(kGuardBits));
      testing::fill_uniform(q, rng);
      testing::fill_uniform(k, rng);
      const std::size_t lds = c.n_k + 5;
      const std::vector<float> want = run_single(c, q, k, lds);
      auto check = [&](const attnscore_parallel *par, const char *what, std::size_t threads) {
        INFO(attnscore_level_name(level) << " " << c.n_q << "x" << c.n_k << " d " << c.d << ": "
                                         << what << ", " << threads << " threads");
        std::vector<float> got(c.n_q * lds, from_bits(kGuardBits));
        REQUIRE(scores_f32(par, c.n_q, c.n_k, c.d, q.data(), q.ld, k.data(), k.ld, got.data(), lds,
                           0.0f) == ATTNSCORE_OK);
        CHECK(same_bits(got, want));
      };
      check(nullptr, "no pool", 1);
      for (const auto &p : pools) {
        const attnscore_parallel par = p->parallel();
        check(&par, "built-in pool", p->threads());
      }
      for (Hook::Order order : {Hook::kForward, Hook::kReverse, Hook::kShuffled, Hook::kThreads}) {
        for (std::size_t threads : {0, 1, 2, 3, 7, 64}) {
          // (a thread per task: 2 and 3 threads, which under emulators is what stays quick)
          if (order == Hook::kThreads && ((threads != 2 && threads != 3) || !threads_available()))
            continue;
          Hook h{order};
          const attnscore_parallel par{hook_parallel_for, &h, threads};
          check(&par, "caller's hook", threads);
          CHECK(h.calls == 1);  // the hook once per call
          CHECK(h.tasks >= 1);
          CHECK(h.tasks <= std::max<std::size_t>(threads, 1));
        }
      }
    }
  }
}

TEST_CASE("parallel calls on the key cache give the single-threaded bits", "[parallel]") {
  testing::CapGuard guard;
  std::mt19937 rng(977);
  std::unique_ptr<Pool> pool;
  if (threads_available()) pool.reset(new Pool(3));
  REQUIRE((!pool || pool->status == ATTNSCORE_OK));
  for (attnscore_level level : testing::runnable_levels()) {
    REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
    for (const Case &c : kCases) {
      Buffer q(c.n_q, c.d, c.d + 3, 1, from_bits(kGuardBits));
      Buffer k(c.n_k, c.d, c.d, 0, from_bits(kGuardBits));
      testing::fill_uniform(q, rng);
      testing::fill_uniform(k, rng);
      const attnscore_cache_shape shape{ATTNSCORE_CACHE_KEYS, ATTNSCORE_DTYPE_F32, 1, c.n_k, c.d};
      std::vector<unsigned char> mem(attnscore_cache_bytes(&shape));
      attnscore_cache *cache = nullptr;
      REQUIRE(attnscore_cache_init(mem.data(), mem.size(), &shape, &cache) == ATTNSCORE_OK);
      attnscore_tensor src;
      std::memset(&src, 0, sizeof src);
      src.data = k.data(), src.dtype = ATTNSCORE_DTYPE_F32, src.row_stride = k.ld;
      REQUIRE(attnscore_cache_append(cache, c.n_k, &src) == ATTNSCORE_OK);
      const std::size_t lds = c.n_k + 2;
      std::vector<float> want(c.n_q * lds, from_bits(kGuardBits)), got = want;
      attnscore_attention_desc a =
          attnscore_attention_dense(ATTNSCORE_DTYPE_F32, 1, 1, c.n_q, c.n_k, c.d);
      a.q.data = q.data(), a.q.row_stride = q.ld, a.k_cache = cache, a.s.row_stride = lds;
      a.s.data = want.data();
      REQUIRE(attnscore_attention(&a, nullptr) == ATTNSCORE_OK);
      a.s.data = got.data();
      for (std::size_t threads : {1, 2, 3, 7}) {
        INFO(attnscore_level_name(level)
             << " " << c.n_q << "x" << c.n_k << " d " << c.d << ", " << threads << " threads");
        Hook h{threads == 3 ? Hook::kReverse : Hook::kShuffled};
        const attnscore_parallel par = threads == 3 && pool
                                           ? pool->parallel()
                                           : attnscore_parallel{hook_parallel_for, &h, threads};
        std::fill(got.begin(), got.end(), from_bits(kGuardBits));
        REQUIRE(attnscore_attention(&a, &par) == ATTNSCORE_OK);
        CHECK(same_bits(got, want));
        if (par.parallel_for == hook_parallel_for) CHECK(h.calls == 1);
      }
      const attnscore_parallel no_fn{nullptr, nullptr, 2};
      CHECK(attnscore_attention(&a, &no_fn) == ATTNSCORE_ERR_NULL_POINTER);
      // Without the cache (and no raw K): NULL_POINTER, whatever the par.
      a.k_cache = nullptr;
      CHECK(attnscore_attention(&a, nullptr) == ATTNSCORE_ERR_NULL_POINTER);
    }
  }
}

TEST_CASE("parallel calls split the work across the threads", "[parallel]") {
  Hook h{Hook::kForward};
  const attnscore_parallel par{hook_parallel_for, &h, 2};
  std::vector<float> q(512 * 64, 0.5f), k(512 * 64, 0.25f), s(512 * 512);
  REQUIRE(scores_f32(&par, 512, 512, 64, q.data(), 64, k.data(), 64, s.data(), 512, 1.0f) ==
          ATTNSCORE_OK);
  CHECK(h.tasks == 2);  // prefill: both threads get half the key panels
  REQUIRE(scores_f32(&par, 1, 512, 64, q.data(), 64, k.data(), 64, s.data(), 512, 1.0f) ==
          ATTNSCORE_OK);
  CHECK(h.tasks == 4);  // decode: two key ranges
  for (float x : s) REQUIRE(x == 8.0f);
}

TEST_CASE("parallel calls reject bad input without calling the hook", "[parallel]") {
  Hook h{Hook::kForward};
  const attnscore_parallel par{hook_parallel_for, &h, 3};
  std::vector<float> q(4 * 8, 1.0f), k(4 * 8, 1.0f);
  std::vector<float> s(16, from_bits(kGuardBits));
  auto untouched = [&] {
    for (float x : s)
      if (to_bits(x) != kGuardBits) return false;
    return true;
  };
  CHECK(scores_f32(&par, 4, 4, 0, q.data(), 8, k.data(), 8, s.data(), 4, 0.0f) ==
        ATTNSCORE_ERR_ZERO_DIM);
  CHECK(scores_f32(&par, 4, 4, 8, q.data(), 7, k.data(), 8, s.data(), 4, 0.0f) ==
        ATTNSCORE_ERR_BAD_LDQ);
  CHECK(scores_f32(&par, 4, 4, 8, q.data(), 8, k.data(), 8, q.data() + 2, 4, 0.0f) ==
        ATTNSCORE_ERR_OVERLAP);
  CHECK(scores_f32(&par, 4, 4, 8, q.data(), 8, k.data(), 8, s.data(), 4, from_bits(0x7fc00000u)) ==
        ATTNSCORE_ERR_BAD_SCALE);
  CHECK(scores_f32(&par, 0, 4, 8, nullptr, 8, nullptr, 8, nullptr, 4, 0.0f) == ATTNSCORE_OK);
  const attnscore_parallel no_fn{nullptr, &h, 2};
  CHECK(scores_f32(&no_fn, 4, 4, 8, q.data(), 8, k.data(), 8, s.data(), 4, 0.0f) ==
        ATTNSCORE_ERR_NULL_POINTER);
  CHECK(h.calls == 0);
  CHECK(untouched());
  // Then a good call: the hook once.
  CHECK(scores_f32(&par, 4, 4, 8, q.data(), 8, k.data(), 8, s.data(), 4, 1.0f) == ATTNSCORE_OK);
  CHECK(h.calls == 1);
  for (float x : s) CHECK(x == 8.0f);
}

TEST_CASE("the built-in pool", "[parallel]") {
  CHECK(attnscore_pool_create(2, nullptr) == ATTNSCORE_ERR_NULL_POINTER);
  CHECK(attnscore_pool_parallel(nullptr).threads == 0);
  if (!threads_available()) return;
  attnscore_pool *pool = nullptr;
  REQUIRE(attnscore_pool_create(0, &pool) == ATTNSCORE_OK);  // one thread per CPU
  CHECK(attnscore_pool_parallel(pool).threads == std::max(1u, std::thread::hardware_concurrency()));
  attnscore_pool_destroy(pool);
  attnscore_pool_destroy(nullptr);
  const attnscore_parallel none = attnscore_pool_parallel(nullptr);
  CHECK((none.parallel_for == nullptr && none.ctx == nullptr && none.threads == 0));

  // Every task exactly once, over many calls, with calls from two threads taking turns.
  Pool p(3);
  REQUIRE(p.status == ATTNSCORE_OK);
  CHECK(p.threads() == 3);
  const attnscore_parallel par = p.parallel();
  auto hammer = [&] {
    std::vector<std::atomic<int>> hits(37);
    for (int round = 0; round < 50; ++round) {
      for (auto &x : hits) x.store(0);
      par.parallel_for(
          par.ctx,
          [](void *ctx, std::size_t i) {
            (*static_cast<std::vector<std::atomic<int>> *>(ctx))[i].fetch_add(1);
          },
          &hits, hits.size());
      for (auto &x : hits)
        if (x.load() != 1) return false;
    }
    return true;
  };
  bool other_ok = false;
  std::thread other([&] { other_ok = hammer(); });
  const bool ok = hammer();
  other.join();
  CHECK(ok);
  CHECK(other_ok);
}

TEST_CASE("parallel attention calls give the single-threaded bits", "[parallel]") {
  testing::CapGuard guard;
  std::mt19937 rng(31337);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  struct AttnCase {
    std::size_t hq, hkv, n_q, n_k, d;
    unsigned mask, flags;
    std::size_t p0, window;
    float softcap;
  };
  const AttnCase cases[] = {
      {8, 2, 1, 300, 64, ATTNSCORE_MASK_CAUSAL, ATTNSCORE_ATTN_SOFTMAX, 299, 0, 0.0f},
      {4, 4, 70, 90, 32, ATTNSCORE_MASK_CAUSAL | ATTNSCORE_MASK_WINDOW, 0, 20, 33, 0.0f},
      {2, 1, 100, 64, 16, 0, ATTNSCORE_ATTN_SOFTMAX, 0, 0, 30.0f},
      {1, 1, 67, 67, 8, ATTNSCORE_MASK_CAUSAL, ATTNSCORE_ATTN_SOFTMAX, 0, 0, 0.0f},
      {6, 3, 3, 513, 24, 0, 0, 0, 0, 0.0f}};
  for (attnscore_level level : testing::runnable_levels()) {
    REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
    for (const AttnCase &c : cases) {
      attnscore_attention_desc a =
          attnscore_attention_dense(ATTNSCORE_DTYPE_F32, c.hq, c.hkv, c.n_q, c.n_k, c.d);
      a.mask = c.mask, a.flags = c.flags, a.pos_offset = c.p0, a.window = c.window;
      a.softcap = c.softcap;
      std::vector<float> q(c.hq * c.n_q * c.d), k(c.hkv * c.n_k * c.d);
      for (float &x : q) x = dist(rng);
      for (float &x : k) x = dist(rng);
      std::vector<float> want(c.hq * c.n_q * c.n_k, from_bits(kGuardBits)), got = want;
      a.q.data = q.data(), a.k.data = k.data(), a.s.data = want.data();
      REQUIRE(attnscore_attention(&a, nullptr) == ATTNSCORE_OK);
      a.s.data = got.data();
      for (std::size_t threads : {1, 2, 3, 7}) {
        for (Hook::Order order : {Hook::kReverse, Hook::kShuffled, Hook::kThreads}) {
          if (order == Hook::kThreads && (threads > 3 || !threads_available())) continue;
          INFO(attnscore_level_name(level) << " heads " << c.hq << "/" << c.hkv << " " << c.n_q
                                           << "x" << c.n_k << ", " << threads << " threads");
          Hook h{order};
          const attnscore_parallel par{hook_parallel_for, &h, threads};
          std::fill(got.begin(), got.end(), from_bits(kGuardBits));
          REQUIRE(attnscore_attention(&a, &par) == ATTNSCORE_OK);
          CHECK(same_bits(got, want));
          CHECK(h.calls == 1);
        }
      }
      Hook h{Hook::kForward};
      const attnscore_parallel par{hook_parallel_for, &h, 2};
      attnscore_attention_desc bad = a;
      bad.heads_kv = 5;
      CHECK(attnscore_attention(&bad, &par) == ATTNSCORE_ERR_HEADS_MISMATCH);
      CHECK(attnscore_attention(nullptr, &par) == ATTNSCORE_ERR_NULL_POINTER);
      CHECK(h.calls == 0);
    }
  }
}

TEST_CASE("parallel f16 and s8 calls give the single-threaded bits", "[parallel]") {
  testing::CapGuard guard;
  std::mt19937 rng(2718);
  std::uniform_int_distribution<int> i8(-128, 127);
  std::uniform_int_distribution<int> h16(0, 0x7bff);  // finite binary16 bits (sign added below)
  const bool f16_built = attnscore_kernel_name(ATTNSCORE_DTYPE_F16) != nullptr;
  const bool s8_built = attnscore_kernel_name(ATTNSCORE_DTYPE_S8) != nullptr;
  if (!f16_built) WARN("f16 not built: its parallel call is not tested");
  if (!s8_built) WARN("int8 path not built: its parallel call is not tested");
  for (attnscore_level level : testing::runnable_levels()) {
    REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
    for (const Case &c : kCases) {
      if (c.d > 300) continue;  // (d over one f16 panel chunk is covered by the f32 cases)
      const std::size_t lds = c.n_k + 3;
      std::vector<std::uint16_t> qh(c.n_q * c.d), kh(c.n_k * c.d);
      for (auto &x : qh) x = static_cast<std::uint16_t>((h16(rng) >> 4) | (rng() & 0x8000u));
      for (auto &x : kh) x = static_cast<std::uint16_t>((h16(rng) >> 4) | (rng() & 0x8000u));
      std::vector<std::int8_t> q8(c.n_q * c.d), k8(c.n_k * c.d);
      for (auto &x : q8) x = static_cast<std::int8_t>(i8(rng));
      for (auto &x : k8) x = static_cast<std::int8_t>(i8(rng));
      std::vector<float> qs(c.n_q), ks(c.n_k);
      for (auto &x : qs) x = 0.01f + static_cast<float>(rng() % 100) * 1e-4f;
      for (auto &x : ks) x = 0.02f + static_cast<float>(rng() % 100) * 1e-4f;
      std::vector<float> want16(c.n_q * lds, from_bits(kGuardBits)), want8 = want16;
      if (f16_built)
        REQUIRE(attnscore_scores_f16(c.n_q, c.n_k, c.d, qh.data(), c.d, kh.data(), c.d,
                                     want16.data(), lds, 0.0f) == ATTNSCORE_OK);
      if (s8_built)
        REQUIRE(attnscore_scores_s8(c.n_q, c.n_k, c.d, q8.data(), c.d, qs.data(), c.n_q, k8.data(),
                                    c.d, ks.data(), c.n_k, want8.data(), lds,
                                    0.0f) == ATTNSCORE_OK);
      // One head of each dtype through the attention call, S rows of lds.
      attnscore_attention_desc a16 =
          attnscore_attention_dense(ATTNSCORE_DTYPE_F16, 1, 1, c.n_q, c.n_k, c.d);
      a16.q.data = qh.data(), a16.k.data = kh.data(), a16.s.row_stride = lds;
      attnscore_attention_desc a8 =
          attnscore_attention_dense(ATTNSCORE_DTYPE_S8, 1, 1, c.n_q, c.n_k, c.d);
      a8.q.data = q8.data(), a8.q.scale = qs.data(), a8.k.data = k8.data(), a8.k.scale = ks.data();
      a8.s.row_stride = lds;
      for (std::size_t threads : {1, 2, 3, 7}) {
        INFO(attnscore_level_name(level)
             << " " << c.n_q << "x" << c.n_k << " d " << c.d << ", " << threads << " threads");
        Hook h{threads == 2 && threads_available() ? Hook::kThreads : Hook::kShuffled};
        const attnscore_parallel par{hook_parallel_for, &h, threads};
        std::vector<float> got(c.n_q * lds, from_bits(kGuardBits));
        if (f16_built) {
          a16.s.data = got.data();
          REQUIRE(attnscore_attention(&a16, &par) == ATTNSCORE_OK);
          CHECK(same_bits(got, want16));
        }
        std::fill(got.begin(), got.end(), from_bits(kGuardBits));
        if (s8_built) {
          a8.s.data = got.data();
          REQUIRE(attnscore_attention(&a8, &par) == ATTNSCORE_OK);
          CHECK(same_bits(got, want8));
        }
        CHECK(h.calls == (f16_built ? 1u : 0u) + (s8_built ? 1u : 0u));
      }
      Hook h{Hook::kForward};
      const attnscore_parallel par{hook_parallel_for, &h, 2};
      std::vector<float> got(c.n_q * lds, from_bits(kGuardBits));
      const attnscore_status want_bad =
          f16_built ? ATTNSCORE_ERR_BAD_LDQ : ATTNSCORE_ERR_UNKNOWN_DTYPE;
      a16.s.data = got.data(), a16.q.row_stride = c.d - 1;
      CHECK(attnscore_attention(&a16, &par) == want_bad);
      // Scale counts are strides now: a scale row stride other than 0 or 1.
      const attnscore_status want_count =
          s8_built ? ATTNSCORE_ERR_BAD_SCALE_COUNT : ATTNSCORE_ERR_UNKNOWN_DTYPE;
      a8.s.data = got.data(), a8.q.scale_row_stride = 2;
      CHECK(attnscore_attention(&a8, &par) == want_count);
      a8.q.scale_row_stride = 1, a8.k.scale_row_stride = 3;
      CHECK(attnscore_attention(&a8, &par) == want_count);
      CHECK(h.calls == 0u);
      for (float x : got) CHECK(to_bits(x) == kGuardBits);
    }
  }
}

TEST_CASE("parallel attention of every dtype, raw K and caches, f32 and f16 S: the same bits",
          "[parallel]") {
  testing::CapGuard guard;
  std::mt19937 rng(6007);
  std::unique_ptr<Pool> pool;
  if (threads_available()) pool.reset(new Pool(3));
  REQUIRE((!pool || pool->status == ATTNSCORE_OK));
  struct Shape {
    std::size_t hq, hkv, n_q, n_k, d;
    unsigned mask;
    bool softmax;
    float softcap;
  };
  // Decode over many keys (split by keys), one KV head (no head split), prefill split by rows or
  // keys, more KV heads than threads (split by heads), masks, softmax and softcap.
  const Shape shapes[] = {{8, 1, 1, 700, 40, 0, false, 0.0f},
                          {4, 2, 1, 600, 24, ATTNSCORE_MASK_CAUSAL, true, 0.0f},
                          {2, 1, 70, 90, 16, ATTNSCORE_MASK_CAUSAL, true, 0.0f},
                          {1, 1, 9, 300, 33, 0, false, 0.0f},
                          {8, 8, 20, 45, 8, ATTNSCORE_MASK_WINDOW, false, 5.0f},
                          {3, 1, 40, 64, 20, 0, true, 3.0f}};
  for (attnscore_level level : testing::runnable_levels()) {
    REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
    unsigned v = 0;
    for (attnscore_dtype dt : {ATTNSCORE_DTYPE_F32, ATTNSCORE_DTYPE_F16, ATTNSCORE_DTYPE_S8}) {
      if (!testing::dtype_built(dt)) continue;
      for (const Shape &sh : shapes) {
        ++v;
        testing::AttnCase c;
        c.dtype = dt, c.hq = sh.hq, c.hkv = sh.hkv, c.n_q = sh.n_q, c.n_k = sh.n_k, c.d = sh.d;
        c.mask = sh.mask, c.softmax = sh.softmax, c.softcap = sh.softcap;
        c.p0 = sh.n_k > sh.n_q ? sh.n_k - sh.n_q : 0, c.w = 17;
        c.layout = v % 3, c.q_scales = v % 3, c.extra_keys = v % 2;
        INFO(attnscore_level_name(level) << " " << testing::describe(c));
        testing::AttnData data(c, rng);
        REQUIRE(data.prepare() == "");
        testing::CacheMem cm;
        REQUIRE(testing::make_cache(data, c.n_k + c.extra_keys, &cm) == "");
        REQUIRE(testing::append_keys(data, cm.cache, 0, c.n_k + c.extra_keys, {7, 100, 1}) == "");
        const bool f16_out = testing::dtype_built(ATTNSCORE_DTYPE_F16);
        for (int from_cache = 0; from_cache < 2; ++from_cache)
          for (attnscore_dtype st : {ATTNSCORE_DTYPE_F32, ATTNSCORE_DTYPE_F16}) {
            if (st == ATTNSCORE_DTYPE_F16 && !f16_out) continue;
            const attnscore_cache *cache = from_cache ? cm.cache : nullptr;
            std::vector<unsigned char> want, got;
            REQUIRE(data.run(st, cache, nullptr, 0, &want) == "");
            for (std::size_t threads : {1, 2, 3, 7}) {
              INFO(threads << " threads, " << (from_cache ? "cache" : "raw K") << ", S "
                           << (st == ATTNSCORE_DTYPE_F16 ? "f16" : "f32"));
              Hook h{threads == 2 && threads_available() ? Hook::kThreads
                     : threads == 7                      ? Hook::kReverse
                                                         : Hook::kShuffled};
              const attnscore_parallel par{hook_parallel_for, &h, threads};
              CHECK(data.run(st, cache, &par, 0, &got) == "");
              CHECK(got == want);
              CHECK(h.calls == 1);
              CHECK(h.tasks >= 1);
              CHECK(h.tasks <= threads);
              if (threads == 3 && pool) {
                const attnscore_parallel pp = pool->parallel();
                CHECK(data.run(st, cache, &pp, 0, &got) == "");
                CHECK(got == want);
              }
            }
          }
      }
    }
  }
}
