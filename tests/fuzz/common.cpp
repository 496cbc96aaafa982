// SPDX-License-Identifier: Apache-2.0
// The fuzz target's shared parts (fuzz.hpp): input decoding, levels, failure reports, memory
// arenas and status prediction.
#include <algorithm>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "fuzz/fuzz.hpp"

#if FUZZ_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace fuzz {

// ---------------------------------------------------------------------------------------------
// Input decoding: fields read 0 once the input is exhausted; element values continue from a
// stream seeded by the whole input, so a short input still fills a large matrix.

// Sizes at size_t's edges, where element counts, byte counts or row offsets overflow (on 32-bit
// size_t as on 64-bit), and just past what the fuzzer allocates.
std::size_t huge(Input &in, unsigned which) {
  constexpr std::size_t kMax = SIZE_MAX;
  constexpr unsigned kBits = std::numeric_limits<std::size_t>::digits;
  switch (which % 16) {
    case 0:
      return kMax;
    case 1:
      return kMax - 1;
    case 2:
      return kMax / 2;
    case 3:
      return kMax / 2 + 1;
    case 4:
      return kMax / 4;  // the most floats whose byte count fits
    case 5:
      return kMax / 4 + 1;  // the fewest whose byte count does not
    case 6:
      return kMax / 8;
    case 7:
      return kMax / 16 + 1;
    case 8:
      return std::size_t{1} << (kBits / 2);  // squared, it overflows
    case 9:
      return (std::size_t{1} << (kBits / 2)) - 1;
    case 10:
      return std::size_t{1} << (kBits - 8);
    case 11:
      return std::size_t{1} << 31;
    case 12:
      return (std::size_t{1} << 20) + 1;
    case 13:
      return static_cast<std::size_t>(in.u32());
    default:
      return static_cast<std::size_t>(in.u64());
  }
}

// n_q and n_k: 0 ... 19 (past 2 * MR + 1 of every tile), n_k also up to 69 (past 2 * NR + 1),
// rarely huge.
std::size_t decode_rows(Input &in, std::size_t small_max) {
  const std::uint8_t c = in.u8();
  if (c >= 0xf0) return huge(in, c);
  return c < 0x80 ? c % 20 : c % (small_max + 1);
}

// d: mostly 0 ... 39 (every tail), then up to 599 and 2199 (chunks of d), rarely huge.
std::size_t decode_d(Input &in) {
  const std::uint8_t c = in.u8();
  if (c < 0xd8) return c % 40;
  if (c < 0xe8) return 40 + in.u16() % 560;
  if (c < 0xf0) return 600 + in.u16() % 1600;
  return huge(in, c);
}

Stride decode_stride(Input &in, std::size_t cols) {
  const std::uint8_t m = in.u8();
  switch (m % 16) {
    case 4:
      return {cols + 1, false, 0};
    case 5:
      return {cols + 3, false, 0};
    case 6:
      return {cols + 7, false, 0};
    case 7:
      return {cols + 17, false, 0};
    case 8:
      return {cols - 1, false, 0};  // SIZE_MAX for cols == 0: any value is an input
    case 9:
      return {cols - 1 - in.u8(), false, 0};
    case 10:
      return {0, false, 0};
    case 11:
      return {huge(in, in.u8()), false, 0};
    case 12:
      return {cols + in.u8(), false, 0};
    case 13:
      return {cols, true, in.u8() % 4u};
    case 14:
      return {cols + in.u16(), false, 0};
    default:
      return {cols, false, 0};
  }
}

// Scale bits: 0 (the default), -0, NaN, +-Inf, subnormals, the largest float, or any bits.
std::uint32_t decode_scale(Input &in) {
  const std::uint8_t m = in.u8();
  switch (m % 16) {
    case 5:
      return 0x80000000u;
    case 6:
      return 0x7fc00000u;
    case 7:
      return 0x7f800000u;
    case 8:
      return 0xff800000u;
    case 9:
      return 0x00000001u;
    case 10:
      return 0x00400000u;
    case 11:
      return 0x7f7fffffu;
    case 12:
      return 0xbf800000u;
    case 13:
      return 0x3f800000u;
    case 14:
    case 15:
      return in.u32();
    default:
      return 0;
  }
}

// ---------------------------------------------------------------------------------------------
// Levels: this build's CPU family, from the target (the same rule the build uses), and every
// documented level name. Written out here so that the expectations do not come from the library.

// A level's place in the cap order (its index in kFamily), -1 outside the family.
int cap_order(int level) {
  for (std::size_t i = 0; i < sizeof kFamily / sizeof kFamily[0]; ++i)
    if (kFamily[i] == level) return static_cast<int>(i);
  return -1;
}

bool in_family(int level) {
  for (int l : kFamily)
    if (l == level) return true;
  return false;
}

// ---------------------------------------------------------------------------------------------
// Failure reports: the decoded call, then abort() so libFuzzer saves the input.

std::string g_call;  // description of the call being checked

[[noreturn]] __attribute__((format(printf, 1, 2))) void fail(const char *fmt, ...) {
  std::fprintf(stderr, "\n== attnscore fuzz check failed: ");
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "\n== call: %s\n", g_call.c_str());
  std::abort();
}

// Every library call goes through here: no heap allocation inside it, FP controls unchanged.
namespace {
thread_local bool g_in_call = false;
thread_local unsigned long g_allocs = 0;
}  // namespace

void begin_counting_allocs() {
  g_allocs = 0;
  g_in_call = true;
}

unsigned long end_counting_allocs() {
  g_in_call = false;
  return g_allocs;
}

#if FUZZ_ASAN
void on_malloc(const volatile void *, std::size_t) {
  if (g_in_call) ++g_allocs;
}
void on_free(const volatile void *) {}
#endif

// FP control bits a scores case sets around each library call, as a caller may: 0, or the bits
// that flush subnormals (FTZ|DAZ on x86, FZ on aarch64).
std::uint64_t g_fp_extra = 0;

void set_cap(int level) {
  const attnscore_status st =
      api("attnscore_set_max_level", [&] { return attnscore_set_max_level(as_level(level)); });
  if (st != ATTNSCORE_OK) fail("attnscore_set_max_level(%d) returned %d", level, st);
}

// ---------------------------------------------------------------------------------------------
// Memory: up to three arenas, each exactly as long as the matrices placed in it. A matrix too
// large to allocate gets a 1-element placeholder; such calls must fail before touching memory.

bool checked_mul(std::size_t a, std::size_t b, std::size_t *r) {
  if (a != 0 && b > SIZE_MAX / a) return false;
  *r = a * b;
  return true;
}
bool checked_add(std::size_t a, std::size_t b, std::size_t *r) {
  if (b > SIZE_MAX - a) return false;
  *r = a + b;
  return true;
}

// Elements from the first to the last of a matrix; false if that does not fit in size_t.
bool span_elems(std::size_t rows, std::size_t cols, std::size_t ld, std::size_t *n) {
  if (rows == 0 || cols == 0) {
    *n = 0;
    return true;
  }
  std::size_t r;
  return checked_mul(rows - 1, ld, &r) && checked_add(r, cols, n);
}

// Bytes a matrix takes in its arena (one element for a placeholder).
long long length(const Mat &m) { return static_cast<long long>((m.fits ? m.span : 1) * m.elem); }

Memory::~Memory() {
  disarm();
  for (Arena &a : arenas) std::free(a.base);
}

FUZZ_UNGUIDED void Memory::allocate(Mat *const *mats, int n) {
  for (int a = 0; a < 3; ++a) {
    long long end = 0;
    bool used = false;
    for (int m = 0; m < n; ++m) {
      if (mats[m]->arena != a) continue;
      used = true;
      end = std::max(end, mats[m]->pos + length(*mats[m]));
    }
    if (!used) continue;
    Arena &ar = arenas[a];
    ar.bytes = static_cast<std::size_t>(end);
    void *p = nullptr;
    if (posix_memalign(&p, 64, ar.bytes) != 0) std::abort();
    ar.base = static_cast<unsigned char *>(p);
    for (std::size_t b = 0; b + 4 <= ar.bytes; b += 4) std::memcpy(ar.base + b, &kGuardBits, 4);
  }
  for (int m = 0; m < n; ++m) {
    Mat &x = *mats[m];
    x.place = arenas[x.arena].base + x.pos;
    x.ptr = x.null ? nullptr : x.place;
  }
}

FUZZ_UNGUIDED void Memory::snapshot() {
  for (Arena &a : arenas) a.before.assign(a.base, a.base + a.bytes);
}

// (ASan's 8-byte granules make the poisoning approximate at row starts; the arena ends are
// exact.)
FUZZ_UNGUIDED void Memory::arm(Mat *const *mats, int n) {
#if FUZZ_ASAN
  for (Arena &a : arenas)
    if (a.base != nullptr) __asan_poison_memory_region(a.base, a.bytes);
  for (int m = 0; m < n; ++m) {
    const Mat &x = *mats[m];
    if (!x.fits || x.span == 0) continue;
    for (std::size_t r = 0; r < x.rows; ++r)
      __asan_unpoison_memory_region(x.place + r * x.ld.value * x.elem, x.cols * x.elem);
  }
#else
  (void)mats, (void)n;
#endif
}

void Memory::disarm() {
#if FUZZ_ASAN
  for (Arena &a : arenas)
    if (a.base != nullptr) __asan_unpoison_memory_region(a.base, a.bytes);
#endif
}

FUZZ_UNGUIDED void Memory::restore() {
  for (Arena &a : arenas)
    if (a.base != nullptr) std::memcpy(a.base, a.before.data(), a.bytes);
}

FUZZ_UNGUIDED void Memory::expect_untouched(const Mat *out, const char *when) const {
  for (int a = 0; a < 3; ++a) {
    const Arena &ar = arenas[a];
    if (ar.base == nullptr) continue;
    std::size_t from = 0;
    if (out != nullptr && out->arena == a && out->fits && out->span != 0) {
      const std::size_t start = static_cast<std::size_t>(out->place - ar.base);
      for (std::size_t r = 0; r < out->rows; ++r) {
        const std::size_t row = start + r * out->ld.value * out->elem;
        expect_same(a, from, row, when);
        from = row + out->cols * out->elem;
      }
    }
    expect_same(a, from, ar.bytes, when);
  }
}

FUZZ_UNGUIDED void Memory::expect_same(int a, std::size_t from, std::size_t to,
                                       const char *when) const {
  const Arena &ar = arenas[a];
  if (to <= from || std::memcmp(ar.base + from, ar.before.data() + from, to - from) == 0) return;
  for (std::size_t b = from; b < to; ++b)
    if (ar.base[b] != ar.before[b])
      fail("%s: arena %d byte %zu changed (%#x -> %#x)", when, a, b, ar.before[b], ar.base[b]);
}
// Strides chosen from the address (Stride::wrap): extents ending just around the top.
void set_wrap_strides(Mat *const *mats, int n) {
  for (int i = 0; i < n; ++i) {
    Mat *m = mats[i];
    if (!m->ld.wrap) continue;
    m->ld.value = m->cols;
    if (m->rows >= 2 && m->place != nullptr) {
      const std::uintptr_t room =
          (UINTPTR_MAX - reinterpret_cast<std::uintptr_t>(m->place)) / m->elem;
      if (room >= m->cols) m->ld.value = (room - m->cols) / (m->rows - 1) + m->ld.wrap_delta - 1;
    }
  }
}

// Where a matrix of n bytes goes relative to a partner of m bytes at p in the same arena (in
// bytes; `unit` is the moving matrix's element size).
long long snap(unsigned mode, long long p, long long m, long long n, long long unit,
               std::uint16_t r) {
  switch (mode % 8) {
    case 0:
      return p + m;  // just after it: touching
    case 1:
      return p - n;  // just before it: touching
    case 2:
      return p + m - unit;  // on its last element
    case 3:
      return p - n + unit;  // last element on its first
    case 4:
      return p;  // the same start
    case 5:
      return p + static_cast<long long>(r % (m / unit + 1)) * unit;  // inside it
    case 6:
      return p + static_cast<std::int16_t>(r) * unit;  // anywhere near
    default:
      return p + m + static_cast<long long>(r % 8) * unit;  // after a gap
  }
}

// ---------------------------------------------------------------------------------------------
// Status prediction from the documented rules (attnscore.h: the statuses and the check order):
// n_q or n_k zero -> OK (no-op); d zero; a NULL pointer; ldq < d; ldk < d; lds < n_k; scale not
// finite or subnormal; a matrix whose extent in bytes, or whose end address, does not fit; S's
// extent meeting Q's or K's. The C++ wrapper first checks that the shapes agree.

Extent extent(const void *p, std::size_t rows, std::size_t cols, std::size_t ld, std::size_t elem) {
  std::size_t n, bytes;
  if (!span_elems(rows, cols, ld, &n) || !checked_mul(n, elem, &bytes)) return {false, 0, 0};
  const std::uintptr_t lo = reinterpret_cast<std::uintptr_t>(p);
  if (bytes > UINTPTR_MAX - lo) return {false, 0, 0};  // the end address must exist
  return {true, lo, lo + bytes};
}

bool meets(const Extent &a, const Extent &b) { return a.lo < b.hi && b.lo < a.hi; }

// NaN, +-Inf or subnormal (by its bits: a caller's DAZ must not turn a subnormal into 0).
bool scale_rejected(float scale) {
  const std::uint32_t exp = to_bits(scale) & 0x7f800000u;
  return exp == 0x7f800000u || (exp == 0 && (to_bits(scale) & 0x7fffffu) != 0);
}

bool dtype_built(int dtype) {
  switch (dtype) {
    case ATTNSCORE_DTYPE_F32:
      return true;
    case ATTNSCORE_DTYPE_F16:
    case ATTNSCORE_DTYPE_BF16:
      return f16_built();
    case ATTNSCORE_DTYPE_S8:
      return s8_built();
    default:
      return false;
  }
}

std::size_t dtype_bytes(int dtype) {
  if (dtype == ATTNSCORE_DTYPE_F32) return 4;
  return dtype == ATTNSCORE_DTYPE_F16 || dtype == ATTNSCORE_DTYPE_BF16 ? 2 : 1;
}

attnscore_status predict_scores(const Args &a) {
  if (a.n_q == 0 || a.n_k == 0) return ATTNSCORE_OK;
  if (a.d == 0) return ATTNSCORE_ERR_ZERO_DIM;
  if (a.q == nullptr || a.k == nullptr || a.s == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (a.ldq < a.d) return ATTNSCORE_ERR_BAD_LDQ;
  if (a.ldk < a.d) return ATTNSCORE_ERR_BAD_LDK;
  if (a.lds < a.n_k) return ATTNSCORE_ERR_BAD_LDS;
  if (scale_rejected(a.scale)) return ATTNSCORE_ERR_BAD_SCALE;
  const Extent q = extent(a.q, a.n_q, a.d, a.ldq, a.elem_in);
  const Extent k = extent(a.k, a.n_k, a.d, a.ldk, a.elem_in);
  const Extent s = extent(a.s, a.n_q, a.n_k, a.lds, sizeof(float));
  if (!q.ok || !k.ok || !s.ok) return ATTNSCORE_ERR_SIZE_OVERFLOW;
  if (meets(s, q) || meets(s, k)) return ATTNSCORE_ERR_OVERLAP;
  return ATTNSCORE_OK;
}

}  // namespace fuzz
