// SPDX-License-Identifier: Apache-2.0
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz/fuzz.hpp"

namespace fuzz {

// ---------------------------------------------------------------------------------------------
// The KV cache (attnscore_cache_*) of one dtype per call-table row: its size query and init for
// any shape (an unknown kind or dtype too), in memory of exactly the bytes it declares (too few,
// at any alignment); appends of every head in up to three chunks from head-major, token-major or
// padded tensors (some bad, some from inside the cache's own memory); its size, a truncate, and
// attention scores from it (S inside the cache's memory too). Statuses follow the code's check
// order (lib/src/core/kcache.cpp; attnscore_attention's for the scores); nothing is written on
// error; scores equal the raw call on the keys appended, at the level the cache was made under
// (the cap stays fixed for one input), bit for bit.

namespace {

// Exactly `bytes` of heap filled with `fill`, so ASan reports a byte past them.
struct Block {
  unsigned char *p = nullptr;
  std::size_t n = 0;
  std::vector<unsigned char> before;
  Block(std::size_t bytes, unsigned char fill) : n(bytes) {
    p = static_cast<unsigned char *>(std::malloc(bytes == 0 ? 1 : bytes));
    if (p == nullptr) std::abort();
    std::memset(p, fill, bytes);
  }
  ~Block() { std::free(p); }
  Block(const Block &) = delete;
  Block &operator=(const Block &) = delete;
  void snapshot() { before.assign(p, p + n); }
  FUZZ_UNGUIDED void expect_untouched(const char *when) const {
    for (std::size_t b = 0; b < n; ++b)
      if (p[b] != before[b]) fail("%s: byte %zu changed", when, b);
  }
};

// A T-aligned place in [lo, lo + n) for `need` bytes, picked by r; nullptr if none.
template <class T>
T *place_inside(unsigned char *lo, std::size_t n, std::size_t need, std::uint16_t r) {
  constexpr std::size_t a = alignof(T);
  const std::size_t skip = (a - reinterpret_cast<std::uintptr_t>(lo) % a) % a;
  if (n < skip || n - skip < need) return nullptr;
  return reinterpret_cast<T *>(lo + skip + (r % (n - skip - need + 1)) / a * a);
}

// One element of a dtype from the value stream, written at p.
void put_value(int dtype, Input &values, unsigned mode, int exp, unsigned char *p) {
  if (dtype == ATTNSCORE_DTYPE_F32) {
    const float v = F32::value(values, mode, exp);
    std::memcpy(p, &v, 4);
  } else if (dtype == ATTNSCORE_DTYPE_F16 || dtype == ATTNSCORE_DTYPE_BF16) {
    const std::uint16_t v = dtype == ATTNSCORE_DTYPE_F16 ? F16::value(values, mode, exp).bits
                                                         : BF16::value(values, mode, exp).bits;
    std::memcpy(p, &v, 2);
  } else {
    const std::int8_t v = s8_value(values, mode);
    std::memcpy(p, &v, 1);
  }
}

int fuzz_cache(Input &in, int dtype) {
  if (!dtype_built(dtype)) return -1;
  const bool s8 = dtype == ATTNSCORE_DTYPE_S8;
  const std::size_t elem = dtype_bytes(dtype), max_d = s8 ? ATTNSCORE_S8_MAX_D : SIZE_MAX;
  char what[240];
  Input values = in.stream();
  const std::size_t d = decode_d(in);
  std::size_t capacity = decode_rows(in, 69);
  const std::uint8_t mem_mode = in.u8(), cache_mode = in.u8(), shape_mode = in.u8();
  if ((mem_mode & 0xc0) == 0xc0) capacity = in.u16() % 600;
  std::size_t heads = 1 + shape_mode % 4;
  if ((shape_mode & 0x30) == 0x30) heads = (shape_mode & 0x40) ? 0 : huge(in, in.u8());
  // The shape's kind and dtype: the cache's, or (shape_mode >= 0xf0) an unknown kind (2 ... 5: 0
  // and 1 are the key and value caches) or dtype.
  attnscore_cache_shape shape{ATTNSCORE_CACHE_KEYS, static_cast<attnscore_dtype>(dtype), heads,
                              capacity, d};
  bool bad_kind = false, bad_dtype = false;
  if (shape_mode >= 0xf0) {
    if (shape_mode & 1)
      shape.kind = static_cast<attnscore_cache_kind>(2 + (shape_mode >> 1) % 4), bad_kind = true;
    else
      shape.dtype = static_cast<attnscore_dtype>(4 + (shape_mode >> 1) % 4), bad_dtype = true;
  }

  // The size query: 0 exactly for an unknown kind or dtype, a zero size, s8 past its d, or a
  // size past size_t.
  std::snprintf(what, sizeof what, "attnscore_cache_bytes(%s, heads %zu, capacity %zu, d %zu)",
                bad_kind    ? "bad kind"
                : bad_dtype ? "bad dtype"
                            : "",
                heads, capacity, d);
  g_call = what;
  const std::size_t need = api(what, [&] { return attnscore_cache_bytes(&shape); });
  std::size_t raw = 0;
  const bool raw_fits = checked_mul(capacity, d, &raw) && checked_mul(raw, heads, &raw) &&
                        checked_mul(raw, elem, &raw);
  const bool zero = d == 0 || capacity == 0 || heads == 0;
  if (bad_kind || bad_dtype || zero || !raw_fits || d > max_d) {
    if (need != 0) fail("returned %zu, expected 0", need);
  } else if (std::size_t pad, cap64;
             checked_add(capacity, 64, &cap64) && checked_mul(cap64, d + 16, &pad) &&
             checked_mul(pad, heads, &pad) && pad <= SIZE_MAX / 8 && need < raw) {
    fail("returned %zu, below the keys' %zu bytes", need, raw);
  }
  if (api("attnscore_cache_bytes(NULL)", [] { return attnscore_cache_bytes(nullptr); }) != 0)
    fail("attnscore_cache_bytes(NULL) is not 0");

  // Init in memory of exactly the declared bytes: what it asked for, a byte less, a little more,
  // or a few bytes; at an offset from an aligned start.
  constexpr std::size_t kMaxCacheBytes = std::size_t{8} << 20;
  std::size_t bytes;
  switch (mem_mode & 3) {
    case 0:
      bytes = need;
      break;
    case 1:
      bytes = need - (need != 0);
      break;
    case 2:
      bytes = need + (mem_mode >> 2 & 15);
      break;
    default:
      bytes = mem_mode >> 2 & 15;
  }
  if (bytes > kMaxCacheBytes) bytes = mem_mode >> 2 & 15;  // too large to allocate here
  const std::size_t offset = cache_mode & 7;
  Block mem(offset + bytes, 0xa5);
  mem.snapshot();
  const bool null_mem = (cache_mode & 0x38) == 0x38, null_out = (cache_mode & 0x38) == 0x30,
             null_shape = (cache_mode & 0x38) == 0x28 && (mem_mode & 0x30) == 0x30;
  // The order (kcache.cpp): NULL_POINTER; an unknown kind (BAD_FLAGS); UNKNOWN_DTYPE; ZERO_DIM;
  // DIM_TOO_LARGE; SIZE_OVERFLOW; BUFFER_TOO_SMALL.
  attnscore_status want = ATTNSCORE_OK;
  if (null_mem || null_out || null_shape)
    want = ATTNSCORE_ERR_NULL_POINTER;
  else if (bad_kind)
    want = ATTNSCORE_ERR_BAD_FLAGS;
  else if (bad_dtype)
    want = ATTNSCORE_ERR_UNKNOWN_DTYPE;
  else if (zero)
    want = ATTNSCORE_ERR_ZERO_DIM;
  else if (d > max_d)
    want = ATTNSCORE_ERR_DIM_TOO_LARGE;
  else if (need == 0)
    want = ATTNSCORE_ERR_SIZE_OVERFLOW;
  else if (bytes < need)
    want = ATTNSCORE_ERR_BUFFER_TOO_SMALL;
  std::snprintf(what, sizeof what,
                "attnscore_cache_init(%zu bytes at +%zu, dtype %d, heads %zu, capacity %zu, d %zu)",
                bytes, offset, dtype, heads, capacity, d);
  g_call = what;
  attnscore_cache *cache = nullptr;
  const attnscore_status st = api(what, [&] {
    return attnscore_cache_init(null_mem ? nullptr : mem.p + offset, bytes,
                                null_shape ? nullptr : &shape, null_out ? nullptr : &cache);
  });
  if (st != want) fail("returned %d, expected %d", st, want);
  if (st != ATTNSCORE_OK) {
    mem.expect_untouched("init error");
    if (cache != nullptr) fail("init error, but the cache pointer was set");
  } else {
    const auto *c = reinterpret_cast<const unsigned char *>(cache);
    if (c < mem.p + offset || c >= mem.p + offset + bytes) fail("cache outside its memory");
  }

  // The handle the later calls get: the cache, NULL, or foreign memory (zeros, ones, or a real
  // cache's memory shifted by a few bytes) that no init made.
  const bool valid = st == ATTNSCORE_OK;
  Block foreign(256, (cache_mode & 0x40) ? 0x00 : 0xff);
  attnscore_cache *handle = cache;
  bool null_cache = !valid, alien = false;
  if (!valid || (cache_mode & 0x80)) {
    const std::uint8_t h = in.u8();
    if (valid && h % 4 == 0) {
      handle = reinterpret_cast<attnscore_cache *>(reinterpret_cast<unsigned char *>(cache) + 1 +
                                                   h / 4 % 15);
      null_cache = false, alien = true;
    } else if (h % 4 != 3) {
      handle = reinterpret_cast<attnscore_cache *>(foreign.p + h / 4 % 64);
      null_cache = false, alien = true;
    } else {
      handle = nullptr, null_cache = true;
    }
  }
  if (alien && valid && handle != cache &&
      reinterpret_cast<unsigned char *>(handle) + 64 > mem.p + offset + bytes)
    handle = reinterpret_cast<attnscore_cache *>(foreign.p);  // stay inside the memory
  foreign.snapshot();
  const bool usable = valid && !null_cache && !alien;

  // Appends: n keys of every head from a tensor of its own layout, or from inside the cache's
  // memory. keys[h]: every key appended to head h (d elements each), kscale[h] their scales.
  std::vector<std::vector<unsigned char>> keys(usable ? heads : 0);
  std::vector<std::vector<float>> kscale(usable ? heads : 0);
  std::size_t size = 0;
  const unsigned appends = in.u8() % 4;
  for (unsigned ap = 0; ap < appends; ++ap) {
    const std::size_t n = decode_rows(in, 69);
    const std::uint8_t kmode = in.u8(), lmode = in.u8();
    const unsigned vmode = in.u8();
    const int exp = static_cast<std::int8_t>(in.u8()) * 5 / 4;
    // The source's layout: head-major (rows of d plus a pad), token-major, or a stride picked.
    const std::size_t h1 = usable ? heads : 1, pad = lmode % 3;
    std::size_t rs = d + pad, hs = n * rs + pad;
    if (lmode & 4) hs = d + pad, rs = h1 * (d + pad);  // token-major
    if (lmode >= 0xf0) rs = decode_stride(in, d).value;
    std::size_t span = 0;
    std::size_t nd = 0;  // (a zero stride: n keys may share one row)
    const bool fits = n != 0 && d != 0 && checked_mul(n, d, &nd) && nd <= kMaxElems &&
                      span3(h1, n, d, hs, rs, &span) && span <= kMaxElems;
    std::unique_ptr<Block> src(new Block((fits ? span : 1) * elem, 0xee));
    for (std::size_t x = 0; fits && x < span; ++x)
      put_value(dtype, values, vmode, exp, src->p + x * elem);
    // s8: one scale per key of each head (bad ones as kmode says); a stride other than 1 is a
    // bad count.
    const std::size_t sh = n, sr = (kmode & 0x18) == 0x18 ? 2 : 1;
    std::size_t sspan = 0;
    const bool sfits = fits && span3(h1, n, 1, sh, sr, &sspan);
    std::vector<float> ks(s8 && sfits ? sspan : 1, 1.0f);
    for (float &x : ks) x = s8_scale_value(values, (kmode & 0x60) == 0x60 ? values.v8() : 0);
    attnscore_tensor t{src->p, static_cast<attnscore_dtype>(dtype), hs, rs, ks.data(), sh, sr};
    const bool null_t = kmode == 0xff, null_k = kmode == 0xfe, null_ks = s8 && kmode == 0xfd,
               mismatch = kmode == 0xfc;
    if (null_k) t.data = nullptr;
    if (null_ks) t.scale = nullptr;
    if (mismatch) t.dtype = static_cast<attnscore_dtype>((dtype + 1) % 4);
    // K placed in the cache's own memory, holding its whole extent.
    unsigned char *in_cache = nullptr;
    if (usable && !null_k && kmode % 8 == 7 && fits)
      in_cache = place_inside<unsigned char>(mem.p + offset, bytes, span * elem, in.u16());
    if (in_cache != nullptr) {
      while (reinterpret_cast<std::uintptr_t>(in_cache) % elem != 0) ++in_cache;  // (room: see
      if (in_cache + span * elem > mem.p + offset + bytes) in_cache = nullptr;    //  place_inside)
    }
    const bool inside = in_cache != nullptr;
    if (inside) t.data = in_cache;
    // What the keys are before the call, per head.
    std::vector<std::vector<unsigned char>> rows(h1);
    for (std::size_t h = 0; fits && t.data != nullptr && h < h1; ++h)
      for (std::size_t i = 0; i < n; ++i)
        rows[h].insert(rows[h].end(),
                       static_cast<const unsigned char *>(t.data) + (h * hs + i * rs) * elem,
                       static_cast<const unsigned char *>(t.data) + (h * hs + i * rs + d) * elem);
    // The order (kcache.cpp): NULL cache; BAD_CACHE; the no-op; NULL tensor; DTYPE_MISMATCH;
    // (s8) BAD_SCALE_COUNT; NULL keys or scales; BAD_LDK; CACHE_FULL; SIZE_OVERFLOW; OVERLAP;
    // (s8) BAD_QUANT_SCALE.
    attnscore_status want_a = ATTNSCORE_OK;
    const Extent ek = extent3(t.data, h1, n, d, hs, rs, elem);
    const Extent eks = s8 ? extent3(t.scale, h1, n, 1, sh, sr, 4) : Extent{true, 0, 0};
    if (null_cache)
      want_a = ATTNSCORE_ERR_NULL_POINTER;
    else if (alien)
      want_a = ATTNSCORE_ERR_BAD_CACHE;
    else if (n == 0)
      want_a = ATTNSCORE_OK;
    else if (null_t)
      want_a = ATTNSCORE_ERR_NULL_POINTER;
    else if (mismatch)
      want_a = ATTNSCORE_ERR_DTYPE_MISMATCH;
    else if (s8 && sr != 1)
      want_a = ATTNSCORE_ERR_BAD_SCALE_COUNT;
    else if (null_k || null_ks)
      want_a = ATTNSCORE_ERR_NULL_POINTER;
    else if (rs < d)
      want_a = ATTNSCORE_ERR_BAD_LDK;
    else if (n > capacity - size)
      want_a = ATTNSCORE_ERR_CACHE_FULL;
    else if (!ek.ok || !eks.ok)
      want_a = ATTNSCORE_ERR_SIZE_OVERFLOW;
    if (want_a == ATTNSCORE_OK && n != 0 && !fits) return -1;  // valid, but too large here
    for (std::size_t h = 0; s8 && want_a == ATTNSCORE_OK && n != 0 && h < h1; ++h)
      for (std::size_t i = 0; i < n; ++i)
        if (scale_rejected(ks[h * sh + i])) want_a = ATTNSCORE_ERR_BAD_QUANT_SCALE;
    std::snprintf(what, sizeof what, "attnscore_cache_append(%zu keys, strides %zu,%zu%s%s) at %zu",
                  n, hs, rs,
                  null_t    ? ", NULL tensor"
                  : null_k  ? ", NULL keys"
                  : null_ks ? ", NULL scales"
                            : "",
                  inside ? ", inside the cache" : "", size);
    g_call = what;
    mem.snapshot();
    src->snapshot();
    const std::vector<float> ks0 = ks;
    const attnscore_status got =
        api(what, [&] { return attnscore_cache_append(handle, n, null_t ? nullptr : &t); });
    src->expect_untouched("K after append");
    foreign.expect_untouched("foreign memory after append");
    if (std::memcmp(ks.data(), ks0.data(), ks.size() * 4) != 0) fail("the scales changed");
    // K inside the cache's memory: the cache may refuse (it overlaps the cache) or take the keys
    // (they lie in memory the cache does not use).
    const bool may_overlap =
        inside && (want_a == ATTNSCORE_OK || want_a == ATTNSCORE_ERR_BAD_QUANT_SCALE);
    if (got != want_a && !(may_overlap && got == ATTNSCORE_ERR_OVERLAP))
      fail("returned %d, expected %d", got, want_a);
    if (got != ATTNSCORE_OK || n == 0) {
      mem.expect_untouched("append error or no-op");
      continue;
    }
    for (std::size_t h = 0; h < heads; ++h) {
      keys[h].insert(keys[h].end(), rows[h].begin(), rows[h].end());
      for (std::size_t i = 0; i < n; ++i) kscale[h].push_back(s8 ? ks[h * sh + i] : 1.0f);
    }
    size += n;
    if (inside)  // the keys must have been read before anything was written: compare below
      for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t i = 0; i < n; ++i)
          if (std::memcmp(in_cache + (h * hs + i * rs) * elem, &rows[h][i * d * elem], d * elem) !=
              0)
            fail("the append wrote over its own keys (head %zu, key %zu)", h, i);
  }

  // The size, and (sometimes) a truncate: to a size held, or past it (SHAPE_MISMATCH).
  g_call = "attnscore_cache_size / attnscore_cache_truncate";
  const std::size_t want_size = usable ? size : 0;
  if (api("attnscore_cache_size", [&] { return attnscore_cache_size(handle); }) != want_size)
    fail("size is not %zu", want_size);
  const std::uint8_t trunc = in.u8();
  if (trunc >= 0xc0) {
    const std::size_t to = trunc >= 0xf8 ? size + 1 + trunc % 4
                           : size == 0   ? 0
                                         : trunc % (size + 1);
    const attnscore_status want_t = null_cache  ? ATTNSCORE_ERR_NULL_POINTER
                                    : alien     ? ATTNSCORE_ERR_BAD_CACHE
                                    : to > size ? ATTNSCORE_ERR_SHAPE_MISMATCH
                                                : ATTNSCORE_OK;
    mem.snapshot();
    const attnscore_status got_t =
        api("attnscore_cache_truncate", [&] { return attnscore_cache_truncate(handle, to); });
    if (got_t != want_t) fail("truncate to %zu returned %d, expected %d", to, got_t, want_t);
    foreign.expect_untouched("foreign memory after truncate");
    if (got_t != ATTNSCORE_OK) mem.expect_untouched("truncate error");
    if (got_t == ATTNSCORE_OK) {
      size = to;
      for (std::size_t h = 0; h < heads; ++h) keys[h].resize(to * d * elem), kscale[h].resize(to);
    }
    if (api("attnscore_cache_size", [&] { return attnscore_cache_size(handle); }) !=
        (usable ? size : 0))
      fail("size after truncate is not %zu", usable ? size : std::size_t{0});
  }

  // Scores from the cache: every head of it (heads_q = heads * g), n_k up to the keys held (or
  // past them), S alone or inside the cache's memory.
  const std::uint8_t qmode = in.u8(), smode = in.u8();
  const std::size_t g = 1 + qmode % 3;
  std::size_t n_q = 1 + in.u8() % 8, n_k = size;
  if (smode % 8 == 5) n_k = size + 1;
  if (smode % 8 == 4 && size > 1) n_k = size - 1;
  const std::size_t hkv = usable ? heads : 1 + qmode / 4 % 2, hq = hkv * g;
  if (hq > 64 || d > 4096) return 0;
  while (n_q > 1 && hq * n_q * (n_k + 1) * (d + 1) > (std::size_t{1} << 16)) n_q /= 2;
  if (hq * n_q * (n_k + 1) * (d + 1) > (std::size_t{1} << 18)) return 0;
  std::vector<unsigned char> qb(hq * n_q * (d == 0 ? 1 : d) * elem);
  for (std::size_t x = 0; x < qb.size() / elem; ++x)
    put_value(dtype, values, qmode >> 4, 0, &qb[x * elem]);
  std::vector<float> qs(hq * n_q);
  for (float &x : qs) x = s8_scale_value(values, 0);
  attnscore_attention_desc a =
      attnscore_attention_dense(static_cast<attnscore_dtype>(dtype), hq, hkv, n_q, n_k, d);
  a.q.data = qb.data(), a.q.scale = qs.data();
  a.k_cache = handle;
  a.scale = from_bits(decode_scale(in));
  a.mask = smode >> 6, a.pos_offset = n_k - (n_k != 0), a.window = 1 + smode % 16;
  if (smode & 8) a.flags = ATTNSCORE_ATTN_SOFTMAX;
  const std::size_t ns = hq * n_q * n_k;
  std::vector<float> sv(ns + 1, from_bits(kGuardBits));
  float *sp = sv.data();
  const bool s_inside = usable && smode % 8 == 6 && ns != 0;
  if (s_inside) {
    float *at = place_inside<float>(mem.p + offset, bytes, ns * sizeof(float), in.u16());
    if (at == nullptr) return 0;
    sp = at;
  }
  a.s.data = sp;
  const CacheFacts facts{usable, dtype, heads, d, size, mem.p + offset, bytes};
  const attnscore_status want_s = predict_attention(a, &facts, false);
  const attnscore_status want_o = predict_attention(a, &facts, true);
  std::snprintf(what, sizeof what,
                "attnscore_attention from the cache: heads %zu/%zu, n_q %zu, n_k %zu of %zu, d "
                "%zu, mask %u, flags %u%s",
                hq, hkv, n_q, n_k, size, d, a.mask, a.flags,
                s_inside ? ", S inside the cache" : "");
  g_call = what;
  mem.snapshot();
  const std::vector<unsigned char> q0 = qb;
  const std::vector<float> s0 = sv;
  const attnscore_status got = api(what, [&] { return attnscore_attention(&a, nullptr); });
  foreign.expect_untouched("foreign memory after scores");
  if (qb != q0) fail("Q changed");
  if (got != want_s && !(got == ATTNSCORE_ERR_OVERLAP && want_o == ATTNSCORE_ERR_OVERLAP))
    fail("returned %d, expected %d", got, want_s);
  if (got != ATTNSCORE_OK || ns == 0) {
    mem.expect_untouched("scores error or no-op");
    if (std::memcmp(s0.data(), sv.data(), sv.size() * 4) != 0) fail("S written on an error");
    return 0;
  }
  if (!s_inside && to_bits(sv[ns]) != kGuardBits) fail("wrote past S");
  // The raw call on the keys appended (dense head-major), at the same level: the same bits.
  std::vector<unsigned char> kall;
  std::vector<float> ksall;
  for (std::size_t h = 0; h < heads; ++h) {
    kall.insert(kall.end(), keys[h].begin(), keys[h].begin() + n_k * d * elem);
    ksall.insert(ksall.end(), kscale[h].begin(), kscale[h].begin() + n_k);
  }
  std::vector<float> ref(ns, 0.0f), again(ns, 0.0f);
  attnscore_attention_desc r = a;
  r.k_cache = nullptr, r.k.data = kall.data(), r.k.scale = ksall.data(), r.s.data = ref.data();
  // The cache sums in the prefill order at every row count; raw K's decode (at most kDecodeRows
  // rows, not int8) in its own: then the raw call takes more rows, Q's and copies of its last.
  const std::size_t n_pre = !s8 && n_q <= kDecodeRows ? kDecodeRows + 1 : n_q;
  std::vector<unsigned char> qpad(hq * n_pre * (d == 0 ? 1 : d) * elem);
  std::vector<float> spad(hq * n_pre * n_k);
  if (n_pre != n_q) {
    for (std::size_t h = 0; h < hq; ++h)
      for (std::size_t i = 0; i < n_pre; ++i)
        std::memcpy(&qpad[(h * n_pre + i) * d * elem],
                    &qb[(h * n_q + (i < n_q ? i : n_q - 1)) * d * elem], d * elem);
    r.n_q = n_pre, r.q.data = qpad.data(), r.q.head_stride = n_pre * d, r.q.row_stride = d;
    r.s.data = spad.data(), r.s.head_stride = n_pre * n_k, r.s.row_stride = n_k;
  }
  const attnscore_status rs = api("the raw call", [&] { return attnscore_attention(&r, nullptr); });
  if (rs != ATTNSCORE_OK) fail("the raw call returned %d", rs);
  if (n_pre != n_q)
    for (std::size_t h = 0; h < hq; ++h)
      std::memcpy(&ref[h * n_q * n_k], &spad[h * n_pre * n_k], n_q * n_k * sizeof(float));
  auto expect_ref = [&](const float *out, const char *when) {
    for (std::size_t x = 0; x < ns; ++x) {
      float v;
      std::memcpy(&v, out + x, sizeof v);
      if (to_bits(v) != to_bits(ref[x]) && !(std::isnan(v) && std::isnan(ref[x])))
        fail("%s: S element %zu = %#x, the raw call %#x", when, x, to_bits(v), to_bits(ref[x]));
    }
  };
  expect_ref(sp, "scores");
  // S written inside the cache's memory must have missed every key: a second call agrees.
  if (s_inside) {
    attnscore_attention_desc b = a;
    b.s.data = again.data();
    const attnscore_status st2 =
        api("the second call", [&] { return attnscore_attention(&b, nullptr); });
    if (st2 != ATTNSCORE_OK) fail("the second call returned %d", st2);
    expect_ref(again.data(), "second call, after S was written inside the cache");
  }
  return 0;
}

}  // namespace

int fuzz_kcache_f32(Input &in, int) { return fuzz_cache(in, ATTNSCORE_DTYPE_F32); }
int fuzz_kcache_f16(Input &in, int) { return fuzz_cache(in, ATTNSCORE_DTYPE_F16); }
int fuzz_kcache_s8(Input &in, int) { return fuzz_cache(in, ATTNSCORE_DTYPE_S8); }
int fuzz_kcache_bf16(Input &in, int) { return fuzz_cache(in, ATTNSCORE_DTYPE_BF16); }

}  // namespace fuzz
