// SPDX-License-Identifier: Apache-2.0
// The key cache of every dtype: its statuses in their order, and attention read from it, the raw
// K call's bits for every head layout it was appended from, in any pieces, after truncation.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attn_case.hpp"
#include "attnscore/attnscore.h"
#include "support.hpp"

namespace {

const attnscore_dtype kDtypes[] = {ATTNSCORE_DTYPE_F32, ATTNSCORE_DTYPE_F16, ATTNSCORE_DTYPE_S8};

}  // namespace

TEST_CASE("cache: bytes, init, append, truncate and size statuses in their order", "[cache][api]") {
  const std::size_t big = std::numeric_limits<std::size_t>::max();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (attnscore_dtype dt : kDtypes) {
    CAPTURE(dt);
    const bool built = testing::dtype_built(dt);
    const std::size_t heads = 2, cap = 10, d = 5;
    const attnscore_cache_shape shape{ATTNSCORE_CACHE_KEYS, dt, heads, cap, d};
    const std::size_t bytes = attnscore_cache_bytes(&shape);
    // bytes: 0 for a NULL or zero-sized shape, an unknown kind or dtype, s8 d past the limit, or
    // a size past size_t.
    CHECK(attnscore_cache_bytes(nullptr) == 0);
    if (!built) {
      CHECK(bytes == 0);
    } else {
      REQUIRE(bytes > 0);
    }
    attnscore_cache_shape s = shape;
    s.heads = 0;
    CHECK(attnscore_cache_bytes(&s) == 0);
    s = shape, s.capacity = 0;
    CHECK(attnscore_cache_bytes(&s) == 0);
    s = shape, s.d = 0;
    CHECK(attnscore_cache_bytes(&s) == 0);
    s = shape, s.kind = static_cast<attnscore_cache_kind>(2);  // keys 0 and values 1 exist
    CHECK(attnscore_cache_bytes(&s) == 0);
    s = shape, s.dtype = static_cast<attnscore_dtype>(4);
    CHECK(attnscore_cache_bytes(&s) == 0);
    s = shape, s.capacity = big / 4;
    CHECK(attnscore_cache_bytes(&s) == 0);
    s = shape, s.d = ATTNSCORE_S8_MAX_D + 1;
    CHECK((attnscore_cache_bytes(&s) == 0) == (dt == ATTNSCORE_DTYPE_S8 || !built));

    // init: NULL_POINTER; BAD_FLAGS (kind); UNKNOWN_DTYPE; ZERO_DIM; DIM_TOO_LARGE (s8);
    // SIZE_OVERFLOW; BUFFER_TOO_SMALL. Each with the later faults too, to pin the order; nothing
    // written on error (neither the memory nor *cache).
    std::vector<unsigned char> mem(bytes + 64, 0xab);
    const std::vector<unsigned char> mem0 = mem;
    attnscore_cache *const sentinel = reinterpret_cast<attnscore_cache *>(&mem);
    attnscore_cache *cache = sentinel;
    const auto init = [&](void *m, std::size_t b, const attnscore_cache_shape *sh,
                          attnscore_cache **out) {
      const attnscore_status st = attnscore_cache_init(m, b, sh, out);
      if (st != ATTNSCORE_OK) {
        CHECK(mem == mem0);
        CHECK(cache == sentinel);
      }
      return st;
    };
    attnscore_cache_shape all_bad = shape;  // every later fault at once
    all_bad.kind = static_cast<attnscore_cache_kind>(9),
    all_bad.dtype = static_cast<attnscore_dtype>(9);
    all_bad.heads = 0;
    CHECK(init(nullptr, bytes, &shape, &cache) == ATTNSCORE_ERR_NULL_POINTER);
    CHECK(init(mem.data(), bytes, nullptr, &cache) == ATTNSCORE_ERR_NULL_POINTER);
    CHECK(init(mem.data(), bytes, &shape, nullptr) == ATTNSCORE_ERR_NULL_POINTER);
    CHECK(init(nullptr, 0, &all_bad, &cache) == ATTNSCORE_ERR_NULL_POINTER);
    CHECK(init(mem.data(), 0, &all_bad, &cache) == ATTNSCORE_ERR_BAD_FLAGS);
    s = all_bad, s.kind = ATTNSCORE_CACHE_KEYS;
    CHECK(init(mem.data(), 0, &s, &cache) == ATTNSCORE_ERR_UNKNOWN_DTYPE);
    s.dtype = dt;
    if (built) {
      for (int which = 0; which < 3; ++which) {
        s = shape;
        (which == 0 ? s.heads : which == 1 ? s.capacity : s.d) = 0;
        s.capacity = which == 1 ? 0 : big;  // overflow too
        CHECK(init(mem.data(), 0, &s, &cache) == ATTNSCORE_ERR_ZERO_DIM);
      }
      s = shape, s.d = ATTNSCORE_S8_MAX_D + 1, s.capacity = big;
      CHECK(init(mem.data(), 0, &s, &cache) ==
            (dt == ATTNSCORE_DTYPE_S8 ? ATTNSCORE_ERR_DIM_TOO_LARGE : ATTNSCORE_ERR_SIZE_OVERFLOW));
      s = shape, s.capacity = big / 2;
      CHECK(init(mem.data(), 0, &s, &cache) == ATTNSCORE_ERR_SIZE_OVERFLOW);
      s = shape, s.heads = big / 4 + 1;
      CHECK(init(mem.data(), big, &s, &cache) == ATTNSCORE_ERR_SIZE_OVERFLOW);
      CHECK(init(mem.data(), bytes - 1, &shape, &cache) == ATTNSCORE_ERR_BUFFER_TOO_SMALL);
      CHECK(init(mem.data() + 3, bytes - 1, &shape, &cache) == ATTNSCORE_ERR_BUFFER_TOO_SMALL);
    } else {
      CHECK(init(mem.data(), bytes, &shape, &cache) == ATTNSCORE_ERR_UNKNOWN_DTYPE);
      continue;
    }
    // Any alignment: the bytes reported suffice at an odd address.
    REQUIRE(attnscore_cache_init(mem.data() + 3, bytes, &shape, &cache) == ATTNSCORE_OK);
    CHECK(cache != sentinel);
    CHECK(attnscore_cache_size(cache) == 0);
    CHECK(attnscore_cache_size(nullptr) == 0);

    // Keys of the cache's dtype: heads x 8 tokens x d, one scale per key for s8.
    const std::size_t n = 8;
    std::vector<float> kf(heads * n * d, 0.5f), ksc(heads * n, 0.25f);
    std::vector<std::uint16_t> kh(heads * n * d, 0x3800);
    std::vector<std::int8_t> ki(heads * n * d, 3);
    attnscore_tensor src;
    std::memset(&src, 0, sizeof src);
    src.dtype = dt, src.head_stride = n * d, src.row_stride = d;
    src.data = dt == ATTNSCORE_DTYPE_F32   ? static_cast<const void *>(kf.data())
               : dt == ATTNSCORE_DTYPE_F16 ? static_cast<const void *>(kh.data())
                                           : static_cast<const void *>(ki.data());
    src.scale = ksc.data(), src.scale_head_stride = n, src.scale_row_stride = 1;
    const bool s8 = dt == ATTNSCORE_DTYPE_S8;

    // append: NULL_POINTER (cache); BAD_CACHE; no-op (n == 0); NULL_POINTER (src); DTYPE_MISMATCH;
    // (s8) BAD_SCALE_COUNT; NULL_POINTER (keys, s8 scales); BAD_LDK; CACHE_FULL; SIZE_OVERFLOW;
    // OVERLAP; (s8) BAD_QUANT_SCALE. Nothing written on error: the cache memory unchanged.
    REQUIRE(attnscore_cache_append(cache, 2, &src) == ATTNSCORE_OK);  // 2 held
    const std::vector<unsigned char> held = mem;
    const auto append = [&](attnscore_cache *c, std::size_t count, const attnscore_tensor *t) {
      const attnscore_status st = attnscore_cache_append(c, count, t);
      if (st != ATTNSCORE_OK) {
        CHECK(mem == held);
        CHECK(attnscore_cache_size(cache) == 2);
      }
      return st;
    };
    attnscore_tensor bad = src;
    bad.dtype = dt == ATTNSCORE_DTYPE_F32 ? ATTNSCORE_DTYPE_S8 : ATTNSCORE_DTYPE_F32;
    bad.data = nullptr, bad.scale = nullptr, bad.row_stride = 0, bad.scale_row_stride = 0;
    std::vector<unsigned char> fake(bytes + 64, 0);  // aligned memory without a header
    auto *not_cache = reinterpret_cast<attnscore_cache *>(
        (reinterpret_cast<std::uintptr_t>(fake.data()) + 63) / 64 * 64);
    auto *misaligned = reinterpret_cast<attnscore_cache *>(reinterpret_cast<char *>(cache) + 1);
    CHECK(append(nullptr, 0, nullptr) == ATTNSCORE_ERR_NULL_POINTER);
    CHECK(append(not_cache, 0, nullptr) == ATTNSCORE_ERR_BAD_CACHE);
    CHECK(append(misaligned, 1, &src) == ATTNSCORE_ERR_BAD_CACHE);
    CHECK(append(cache, 0, nullptr) == ATTNSCORE_OK);
    CHECK(append(cache, 0, &bad) == ATTNSCORE_OK);
    CHECK(append(cache, big, nullptr) == ATTNSCORE_ERR_NULL_POINTER);
    CHECK(append(cache, big, &bad) == ATTNSCORE_ERR_DTYPE_MISMATCH);
    bad.dtype = dt;
    CHECK(append(cache, big, &bad) ==
          (s8 ? ATTNSCORE_ERR_BAD_SCALE_COUNT : ATTNSCORE_ERR_NULL_POINTER));
    bad.scale_row_stride = 1;
    CHECK(append(cache, big, &bad) == ATTNSCORE_ERR_NULL_POINTER);
    bad.data = src.data;
    CHECK(append(cache, big, &bad) == (s8 ? ATTNSCORE_ERR_NULL_POINTER : ATTNSCORE_ERR_BAD_LDK));
    bad.scale = src.scale;
    CHECK(append(cache, big, &bad) == ATTNSCORE_ERR_BAD_LDK);
    bad.row_stride = d - 1;
    CHECK(append(cache, big, &bad) == ATTNSCORE_ERR_BAD_LDK);
    bad.row_stride = d;
    CHECK(append(cache, big, &bad) == ATTNSCORE_ERR_CACHE_FULL);
    CHECK(append(cache, cap - 1, &bad) == ATTNSCORE_ERR_CACHE_FULL);
    bad.head_stride = big - 100;  // past the top of the address space
    CHECK(append(cache, 1, &bad) == ATTNSCORE_ERR_SIZE_OVERFLOW);
    if (s8) {
      bad = src, bad.scale_head_stride = big / 2;
      CHECK(append(cache, 1, &bad) == ATTNSCORE_ERR_SIZE_OVERFLOW);
    }
    // Keys inside the cache's memory (its last bytes), with a bad scale too: OVERLAP first.
    std::vector<float> nan_scales(heads * n, nan);
    bad = src;
    bad.data = reinterpret_cast<const unsigned char *>(cache) + 64;
    bad.scale = nan_scales.data();
    CHECK(append(cache, 1, &bad) == ATTNSCORE_ERR_OVERLAP);
    if (s8) {
      bad = src;
      bad.scale =
          reinterpret_cast<const float *>(reinterpret_cast<const unsigned char *>(cache) + 64);
      CHECK(append(cache, 1, &bad) == ATTNSCORE_ERR_OVERLAP);
      for (float v : {nan, std::numeric_limits<float>::infinity(),
                      std::numeric_limits<float>::denorm_min()}) {
        std::vector<float> one_bad = ksc;
        one_bad[n + 1] = v;  // head 1, second key
        bad = src, bad.scale = one_bad.data();
        CHECK(append(cache, 2, &bad) == ATTNSCORE_ERR_BAD_QUANT_SCALE);
      }
      std::vector<float> zero = ksc;  // 0 is a valid scale
      zero[0] = 0.0f;
      bad = src, bad.scale = zero.data();
      CHECK(attnscore_cache_append(cache, 1, &bad) == ATTNSCORE_OK);
      CHECK(attnscore_cache_truncate(cache, 2) == ATTNSCORE_OK);
    }
    // Exactly full is fine; one more is CACHE_FULL.
    CHECK(attnscore_cache_append(cache, n, &src) == ATTNSCORE_OK);
    CHECK(attnscore_cache_size(cache) == cap);
    CHECK(attnscore_cache_append(cache, 1, &src) == ATTNSCORE_ERR_CACHE_FULL);

    // truncate: NULL_POINTER; BAD_CACHE; SHAPE_MISMATCH (past the tokens held).
    CHECK(attnscore_cache_truncate(nullptr, 0) == ATTNSCORE_ERR_NULL_POINTER);
    CHECK(attnscore_cache_truncate(not_cache, big) == ATTNSCORE_ERR_BAD_CACHE);
    CHECK(attnscore_cache_truncate(misaligned, 0) == ATTNSCORE_ERR_BAD_CACHE);
    CHECK(attnscore_cache_truncate(cache, cap + 1) == ATTNSCORE_ERR_SHAPE_MISMATCH);
    CHECK(attnscore_cache_size(cache) == cap);
    CHECK(attnscore_cache_truncate(cache, cap) == ATTNSCORE_OK);
    CHECK(attnscore_cache_truncate(cache, 3) == ATTNSCORE_OK);
    CHECK(attnscore_cache_size(cache) == 3);
    CHECK(attnscore_cache_truncate(cache, 4) == ATTNSCORE_ERR_SHAPE_MISMATCH);
    CHECK(attnscore_cache_truncate(cache, 0) == ATTNSCORE_OK);
    CHECK(attnscore_cache_size(cache) == 0);
    CHECK(attnscore_cache_size(not_cache) == 0);
    CHECK(attnscore_cache_size(misaligned) == 0);
  }
}

TEST_CASE("cache: attention statuses with a cache as K", "[cache][api]") {
  std::mt19937 rng(31);
  for (attnscore_dtype dt : kDtypes) {
    if (!testing::dtype_built(dt)) continue;
    CAPTURE(dt);
    testing::AttnCase c;
    c.dtype = dt, c.hq = 4, c.hkv = 2, c.n_q = 3, c.n_k = 6, c.d = 8;
    testing::AttnData data(c, rng);
    testing::CacheMem cm;
    REQUIRE(testing::make_cache(data, 8, &cm) == "");
    REQUIRE(testing::append_keys(data, cm.cache, 0, 6, {6}) == "");
    std::vector<float> s(data.s_elems, testing::from_bits(testing::kGuardBits));
    const std::vector<float> s0 = s;
    attnscore_attention_desc good = data.desc();
    std::memset(&good.k, 0, sizeof good.k);  // never read with a cache: no dtype, data or stride
    good.k.dtype = static_cast<attnscore_dtype>(99);
    good.k_cache = cm.cache;
    good.s.data = s.data() + data.s_off;
    REQUIRE(attnscore_attention(&good, nullptr) == ATTNSCORE_OK);
    s = s0;
    const auto expect = [&](const attnscore_attention_desc &a, attnscore_status want) {
      CHECK(attnscore_attention(&a, nullptr) == want);
      CHECK(std::memcmp(s.data(), s0.data(), s.size() * sizeof(float)) == 0);
    };
    // Not a cache: BAD_CACHE (after NULL_POINTER of Q or S).
    std::vector<unsigned char> fake(cm.mem.size() + 64, 0);
    attnscore_attention_desc a = good;
    a.k_cache = reinterpret_cast<const attnscore_cache *>(
        (reinterpret_cast<std::uintptr_t>(fake.data()) + 63) / 64 * 64);
    expect(a, ATTNSCORE_ERR_BAD_CACHE);
    a.k_cache =
        reinterpret_cast<const attnscore_cache *>(reinterpret_cast<const char *>(cm.cache) + 1);
    expect(a, ATTNSCORE_ERR_BAD_CACHE);
    a.q.data = nullptr;
    expect(a, ATTNSCORE_ERR_NULL_POINTER);
    // A cache of another dtype: DTYPE_MISMATCH, before the shape checks and HEADS_MISMATCH.
    for (attnscore_dtype other : kDtypes) {
      if (other == dt || !testing::dtype_built(other)) continue;
      testing::AttnCase oc = c;
      oc.dtype = other, oc.d = 9, oc.hkv = 1;  // its shape wrong too
      testing::AttnData od(oc, rng);
      testing::CacheMem ocm;
      REQUIRE(testing::make_cache(od, 8, &ocm) == "");
      REQUIRE(testing::append_keys(od, ocm.cache, 0, 2, {2}) == "");
      a = good;
      a.k_cache = ocm.cache;
      expect(a, ATTNSCORE_ERR_DTYPE_MISMATCH);
      a.heads_kv = 3;
      expect(a, ATTNSCORE_ERR_DTYPE_MISMATCH);
    }
    // Other heads, other d, more keys than held: SHAPE_MISMATCH, before HEADS_MISMATCH and the
    // strides.
    a = good;
    a.heads_kv = 1;
    expect(a, ATTNSCORE_ERR_SHAPE_MISMATCH);
    a = good;
    a.heads_kv = 4;
    expect(a, ATTNSCORE_ERR_SHAPE_MISMATCH);
    a = good;
    a.d = 7, a.q.row_stride = 7;
    expect(a, ATTNSCORE_ERR_SHAPE_MISMATCH);
    a = good;
    a.n_k = 7, a.s.row_stride = 7, a.s.head_stride = 7 * c.n_q;  // capacity 8, 6 held
    expect(a, ATTNSCORE_ERR_SHAPE_MISMATCH);
    a.heads_q = 3;
    a.q.row_stride = 0;
    expect(a, ATTNSCORE_ERR_SHAPE_MISMATCH);
    a = good;
    a.heads_q = 3;
    expect(a, ATTNSCORE_ERR_HEADS_MISMATCH);
    // Fewer keys than held: fine (the first n_k).
    a = good;
    a.n_k = 2;
    CHECK(attnscore_attention(&a, nullptr) == ATTNSCORE_OK);
    s = s0;
    // S inside the cache's memory: OVERLAP.
    a = good;
    a.s.data = reinterpret_cast<unsigned char *>(cm.cache) + 128;
    const std::vector<unsigned char> before = cm.mem;
    CHECK(attnscore_attention(&a, nullptr) == ATTNSCORE_ERR_OVERLAP);
    CHECK(cm.mem == before);
    // A par without a parallel_for: NULL_POINTER, after the cache's checks.
    const attnscore_parallel no_fn{nullptr, nullptr, 2};
    CHECK(attnscore_attention(&good, &no_fn) == ATTNSCORE_ERR_NULL_POINTER);
    a = good;
    a.heads_kv = 1;
    CHECK(attnscore_attention(&a, &no_fn) == ATTNSCORE_ERR_SHAPE_MISMATCH);
    CHECK(std::memcmp(s.data(), s0.data(), s.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("cache: attention from a multi-head cache is the raw K call's bits", "[cache]") {
  testing::CapGuard guard;
  std::mt19937 rng(2026);
  // (heads_q, heads_kv): a group larger than any tile's rows among them. Shapes (n_q, n_k, d):
  // decode, decode over more keys than a block, short prefill, d over an int8 chunk.
  const std::size_t heads[][2] = {{2, 2}, {4, 2}, {9, 1}};
  const std::size_t shapes[][3] = {{1, 75, 33}, {1, 1100, 16}, {7, 40, 8}, {3, 21, 600}};
  const std::vector<std::size_t> pieces = {1, 2, 5, 1, 13, 3};
  for (attnscore_level level : testing::runnable_levels()) {
    REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
    CAPTURE(attnscore_level_name(level));
    unsigned v = 0;
    for (attnscore_dtype dt : kDtypes) {
      if (!testing::dtype_built(dt)) continue;
      for (const auto &hh : heads)
        for (const auto &sh : shapes)
          for (unsigned layout = 0; layout < 3; ++layout, ++v) {
            // Layouts 0 and 1 append head-major sources, 2 token-major ones.
            testing::AttnCase c;
            c.dtype = dt, c.hq = hh[0], c.hkv = hh[1], c.n_q = sh[0], c.n_k = sh[1];
            c.d = sh[2], c.layout = layout, c.extra_keys = 1 + v % 4;
            c.q_scales = v % 3, c.k_scales = 0;
            // A mask and the softmax every other case, a softcap every third.
            if (v % 2) {
              c.mask = v % 4 == 1 ? ATTNSCORE_MASK_CAUSAL : ATTNSCORE_MASK_WINDOW;
              c.p0 = c.n_k - c.n_q, c.w = 9;
              c.softmax = true;
            }
            c.softcap = v % 3 == 0 ? 3.0f : 0.0f;
            CAPTURE(testing::describe(c));
            testing::AttnData data(c, rng);
            REQUIRE(data.prepare() == "");
            const std::size_t n_kt = c.n_k + c.extra_keys, capacity = n_kt + 5;
            // The raw call first: the oracle's bits.
            REQUIRE(data.run(ATTNSCORE_DTYPE_F32, nullptr, nullptr) == "");
            testing::CacheMem cm;
            REQUIRE(testing::make_cache(data, capacity, &cm) == "");
            REQUIRE(testing::append_keys(data, cm.cache, 0, n_kt, pieces) == "");
            CHECK(data.run(ATTNSCORE_DTYPE_F32, cm.cache, nullptr) == "");
            if (testing::dtype_built(ATTNSCORE_DTYPE_F16))
              CHECK(data.run(ATTNSCORE_DTYPE_F16, cm.cache, nullptr) == "");
            if (dt == ATTNSCORE_DTYPE_F16)  // no f16 accumulation from a cache: the same bits
              CHECK(data.run(ATTNSCORE_DTYPE_F32, cm.cache, nullptr,
                             ATTNSCORE_ATTN_F16_ACCUMULATE) == "");
            // Truncated inside a panel, to empty and to one key less, then appended again: the same
            // bits.
            for (std::size_t keep : {c.n_k / 2 + 1, std::size_t{0}, c.n_k - 1}) {
              CAPTURE(keep);
              REQUIRE(attnscore_cache_truncate(cm.cache, keep) == ATTNSCORE_OK);
              REQUIRE(attnscore_cache_size(cm.cache) == keep);
              REQUIRE(testing::append_keys(data, cm.cache, keep, n_kt, {3, 7}) == "");
              CHECK(data.run(ATTNSCORE_DTYPE_F32, cm.cache, nullptr) == "");
            }
            // Other keys appended over truncated ones, truncated away and the right ones appended
            // again: nothing of the others is left (an int8 cache's key sums included).
            testing::AttnCase oc = c;
            testing::AttnData other(oc, rng);
            const std::size_t keep = c.n_k / 3 + 1;
            REQUIRE(attnscore_cache_truncate(cm.cache, keep) == ATTNSCORE_OK);
            REQUIRE(testing::append_keys(other, cm.cache, keep, n_kt, {4}) == "");
            REQUIRE(attnscore_cache_truncate(cm.cache, keep) == ATTNSCORE_OK);
            REQUIRE(testing::append_keys(data, cm.cache, keep, n_kt, {2, 9}) == "");
            CHECK(data.run(ATTNSCORE_DTYPE_F32, cm.cache, nullptr) == "");
          }
    }
  }
}

TEST_CASE("cache: bound to the kernel chosen at init, whatever the cap later", "[cache]") {
  testing::CapGuard guard;
  std::mt19937 rng(77);
  for (attnscore_dtype dt : kDtypes) {
    if (!testing::dtype_built(dt)) continue;
    // No softmax (its level is the call's): the scores, softcapped and masked, are the init
    // level's bits under every cap.
    testing::AttnCase c;
    c.dtype = dt, c.hq = 4, c.hkv = 2, c.n_q = 5, c.n_k = 70, c.d = 19;
    c.mask = ATTNSCORE_MASK_CAUSAL, c.p0 = 60, c.softcap = 4.0f, c.layout = 2;
    CAPTURE(testing::describe(c));
    REQUIRE(attnscore_set_max_level(ATTNSCORE_LEVEL_BEST) == ATTNSCORE_OK);
    testing::AttnData data(c, rng);
    REQUIRE(data.prepare() == "");
    testing::CacheMem cm;
    REQUIRE(testing::make_cache(data, c.n_k, &cm) == "");
    REQUIRE(testing::append_keys(data, cm.cache, 0, c.n_k, {11, 4}) == "");
    for (attnscore_level level : testing::runnable_levels()) {
      CAPTURE(attnscore_level_name(level));
      REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
      CHECK(data.run(ATTNSCORE_DTYPE_F32, cm.cache, nullptr) == "");
    }
  }
}
