// SPDX-License-Identifier: Apache-2.0
// Fuzz target over the whole public API: the input picks the call, sizes, strides, pointers
// (null, misaligned, overlapping), scale bits, level cap and raw element bits. Each call's status
// is predicted independently from the documented rules; errors must leave memory untouched, and
// results must meet the numerical contract at every level. Buffers have exactly the bytes a call
// may touch, and under ASan everything else (row gaps, leading pads) is poisoned.
//
// A new dtype adds a traits struct like F32 and its rows in kCalls; a new call adds a row.
#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "attnscore/attnscore.hpp"
#include "support.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_ASAN 1
#endif
#endif
#ifndef FUZZ_ASAN
#define FUZZ_ASAN 0
#endif
#if FUZZ_ASAN
#include <sanitizer/asan_interface.h>
// In every ASan runtime (GCC's and clang's), though GCC ships no header declaring it.
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *,
                                                                             std::size_t),
                                                         void (*free_hook)(const volatile void *));
#endif

// The checker's own loops need no coverage feedback (with it they would dominate the run time).
#if defined(__clang__) && __clang_major__ >= 13
#define FUZZ_UNGUIDED __attribute__((no_sanitize("coverage")))
#else
#define FUZZ_UNGUIDED
#endif

extern "C" {  // tests/fuzz_c_calls.c
const char *fuzz_c_kernel_name(int dtype);
int fuzz_c_kernel_level(int dtype);
const char *fuzz_c_level_name(int level);
int fuzz_c_level_supported(int level);
int fuzz_c_set_max_level(int level);
const char *fuzz_c_status_string(int status);
}

namespace {

using testing::from_bits;
using testing::kGuardBits;
using testing::to_bits;

// ---------------------------------------------------------------------------------------------
// Input decoding: fields read 0 once the input is exhausted; element values continue from a
// stream seeded by the whole input, so a short input still fills a large matrix.

class Input {
 public:
  Input(const std::uint8_t *data, std::size_t size) : p_(data), n_(size) {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (std::size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
    state_ = h;
  }
  std::uint8_t u8() { return i_ < n_ ? p_[i_++] : 0; }
  // Element values only, from the input-seeded stream: fields read later stay at fixed offsets.
  Input stream() const {
    Input s(nullptr, 0);
    s.state_ = state_;
    return s;
  }
  // Little-endian; the reads are sequenced, so every compiler decodes an input alike.
  std::uint16_t u16() {
    const unsigned lo = u8();
    return static_cast<std::uint16_t>(lo | static_cast<unsigned>(u8()) << 8);
  }
  std::uint32_t u32() {
    const std::uint32_t lo = u16();
    return lo | static_cast<std::uint32_t>(u16()) << 16;
  }
  std::uint64_t u64() {
    const std::uint64_t lo = u32();
    return lo | static_cast<std::uint64_t>(u32()) << 32;
  }
  std::uint8_t v8() { return i_ < n_ ? p_[i_++] : static_cast<std::uint8_t>(next() >> 56); }
  std::uint32_t v32() {
    std::uint32_t v = 0;
    for (int b = 0; b < 4; ++b) v |= static_cast<std::uint32_t>(v8()) << (8 * b);
    return v;
  }

 private:
  std::uint64_t next() {  // splitmix64
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  const std::uint8_t *p_;
  std::size_t n_, i_ = 0;
  std::uint64_t state_;
};

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

// A row stride relative to the row length: tight, padded, short, zero, huge, or (kWrap) chosen
// once the address is known so that the extent ends just around the top of the address space.
struct Stride {
  std::size_t value;
  bool wrap;
  unsigned wrap_delta;
};

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

// kFamily in the cap order (avxvnni, 5, ranks between avx2 and avx512).
#if defined(__x86_64__) || defined(_M_X64)
constexpr int kFamily[] = {0, 1, 2, 5, 3, 4};
constexpr int kForeign[] = {16, 17, 18};
#elif defined(__aarch64__) || defined(__arm__)
constexpr int kFamily[] = {0, 16, 17, 18};
constexpr int kForeign[] = {1, 2, 3, 4, 5};
#else
constexpr int kFamily[] = {0};
constexpr int kForeign[] = {1, 5, 16};
#endif
constexpr int kBest = 255;

struct LevelName {
  const char *name;
  int level;
};
constexpr LevelName kLevelNames[] = {
    {"scalar", 0},  {"sse2", 1},  {"avx2", 2},          {"avx512", 3},     {"avx512vnni", 4},
    {"avxvnni", 5}, {"neon", 16}, {"neon_dotprod", 17}, {"neon_i8mm", 18}, {"best", 255}};

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

attnscore_level as_level(int v) { return static_cast<attnscore_level>(v); }  // v in 0 ... 255

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
thread_local bool g_in_call = false;
thread_local unsigned long g_allocs = 0;

#if FUZZ_ASAN
void on_malloc(const volatile void *, std::size_t) {
  if (g_in_call) ++g_allocs;
}
void on_free(const volatile void *) {}
#endif

// FP control bits a scores case sets around each library call, as a caller may: 0, or the bits
// that flush subnormals (FTZ|DAZ on x86, FZ on aarch64).
std::uint64_t g_fp_extra = 0;

struct FpMode {
  explicit FpMode(std::uint64_t bits) { g_fp_extra = bits; }
  ~FpMode() { g_fp_extra = 0; }
  FpMode(const FpMode &) = delete;
  FpMode &operator=(const FpMode &) = delete;
};

// Targets whose SIMD reads subnormals as 0 whatever the FP mode says (armv7 NEON).
#if defined(__arm__) && !defined(__aarch64__)
constexpr bool kAlwaysFlushes = true;
#else
constexpr bool kAlwaysFlushes = false;
#endif

template <class F>
auto api(const char *what, F f) {
  const std::uint64_t saved = testing::fp_control();
  const std::uint64_t mode = saved | g_fp_extra;
  if (g_fp_extra != 0) testing::set_fp_control(mode);
  g_allocs = 0;
  g_in_call = true;
  auto r = f();
  g_in_call = false;
  const std::uint64_t after = testing::fp_control();
  if (g_fp_extra != 0) testing::set_fp_control(saved);
  if (g_allocs != 0) fail("%s allocated %lu times", what, g_allocs);
  if ((mode ^ after) & testing::fp_control_mask())
    fail("%s changed the FP controls: %#llx -> %#llx", what, static_cast<unsigned long long>(mode),
         static_cast<unsigned long long>(after));
  return r;
}

void set_cap(int level) {
  const attnscore_status st =
      api("attnscore_set_max_level", [&] { return attnscore_set_max_level(as_level(level)); });
  if (st != ATTNSCORE_OK) fail("attnscore_set_max_level(%d) returned %d", level, st);
}

// ---------------------------------------------------------------------------------------------
// Memory: up to three arenas, each exactly as long as the matrices placed in it. A matrix too
// large to allocate gets a 1-element placeholder; such calls must fail before touching memory.

constexpr std::size_t kMaxElems = std::size_t{1} << 16;

struct Mat {
  const char *name;
  std::size_t elem;        // bytes per element
  std::size_t rows, cols;  // as described to the library (a C++ view's own shape)
  Stride ld;
  bool null;
  bool fits;             // span computed without overflow and allocated in full
  std::size_t span;      // elements a call may touch: (rows - 1) * ld + cols (0 if empty)
  int arena;             // 0 ... 2
  long long pos;         // byte offset in its arena
  unsigned char *ptr;    // as passed (nullptr when null)
  unsigned char *place;  // where it lives, even when null is passed
};

struct Arena {
  unsigned char *base = nullptr;
  std::size_t bytes = 0;
  std::vector<unsigned char> before;
};

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

class Memory {
 public:
  Memory() = default;
  Memory(const Memory &) = delete;
  Memory &operator=(const Memory &) = delete;
  ~Memory() {
    disarm();
    for (Arena &a : arenas) std::free(a.base);
  }

  Arena arenas[3];

  // Allocates the arenas for the placed matrices (64-byte aligned bases) and fills them with
  // the guard bits, a signalling NaN that no arithmetic produces.
  FUZZ_UNGUIDED void allocate(Mat *const *mats, int n) {
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

  FUZZ_UNGUIDED void snapshot() {
    for (Arena &a : arenas) a.before.assign(a.base, a.base + a.bytes);
  }

  // Poisons every arena byte outside the described matrices: ASan then reports any access to a
  // row gap or a leading pad, not only past the arena. (ASan's 8-byte granules make this
  // approximate at row starts; the arena ends are exact.)
  FUZZ_UNGUIDED void arm(Mat *const *mats, int n) {
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
  void disarm() {
#if FUZZ_ASAN
    for (Arena &a : arenas)
      if (a.base != nullptr) __asan_unpoison_memory_region(a.base, a.bytes);
#endif
  }

  FUZZ_UNGUIDED void restore() {
    for (Arena &a : arenas)
      if (a.base != nullptr) std::memcpy(a.base, a.before.data(), a.bytes);
  }

  // Every arena byte equals its snapshot, except the elements of `out` (when given: a
  // successful call's S, whose rows are disjoint and ascending since lds >= n_k).
  FUZZ_UNGUIDED void expect_untouched(const Mat *out, const char *when) const {
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

 private:
  FUZZ_UNGUIDED void expect_same(int a, std::size_t from, std::size_t to, const char *when) const {
    const Arena &ar = arenas[a];
    if (to <= from || std::memcmp(ar.base + from, ar.before.data() + from, to - from) == 0) return;
    for (std::size_t b = from; b < to; ++b)
      if (ar.base[b] != ar.before[b])
        fail("%s: arena %d byte %zu changed (%#x -> %#x)", when, a, b, ar.before[b], ar.base[b]);
  }
};

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

struct Extent {
  bool ok;
  std::uintptr_t lo, hi;  // [lo, hi)
};

Extent extent(const void *p, std::size_t rows, std::size_t cols, std::size_t ld, std::size_t elem) {
  std::size_t n, bytes;
  if (!span_elems(rows, cols, ld, &n) || !checked_mul(n, elem, &bytes)) return {false, 0, 0};
  const std::uintptr_t lo = reinterpret_cast<std::uintptr_t>(p);
  if (bytes > UINTPTR_MAX - lo) return {false, 0, 0};  // the end address must exist
  return {true, lo, lo + bytes};
}

bool meets(const Extent &a, const Extent &b) { return a.lo < b.hi && b.lo < a.hi; }

struct Args {  // one scores call as the C API sees it
  std::size_t n_q, n_k, d, ldq, ldk, lds;
  const void *q, *k;
  void *s;
  float scale;
  std::size_t elem_in;  // bytes per Q and K element
};

// NaN, +-Inf or subnormal (by its bits: a caller's DAZ must not turn a subnormal into 0).
bool scale_rejected(float scale) {
  const std::uint32_t exp = to_bits(scale) & 0x7f800000u;
  return exp == 0x7f800000u || (exp == 0 && (to_bits(scale) & 0x7fffffu) != 0);
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

// ---------------------------------------------------------------------------------------------
// The f32 element model: value generators, the per-element expectation and its check.

const std::uint32_t kSpecials[] = {0x00000000u,
                                   0x80000000u,
                                   0x3f800000u,
                                   0xbf800000u,
                                   0x40000000u,
                                   0x3f000000u,
                                   0x40400000u,
                                   0xc0e00000u,
                                   0x7fc00000u,
                                   0xffc00000u,
                                   0x7f800001u,
                                   0x7fc12345u,
                                   0x7f800000u,
                                   0xff800000u,
                                   0x7f7fffffu,
                                   0xff7fffffu,
                                   0x00800000u,
                                   0x80800000u,
                                   0x00000001u,
                                   0x80000001u,
                                   0x007fffffu,
                                   0x000ae398u,
                                   0x1a000000u /* 2^-75: its square underflows */,
                                   0x5f800000u /* 2^64: its square overflows */,
                                   0x5fd02000u,
                                   0x3dcccccdu,
                                   0xbe99999au,
                                   0x477fe000u,
                                   0x4b800000u,
                                   0x4b7fffffu,
                                   0x3eaaaaabu,
                                   0x81c00000u};

struct F32 {
  using T = float;
  static constexpr const char *kName = "f32";
  static constexpr attnscore_dtype kDtype = ATTNSCORE_DTYPE_F32;
  static constexpr const char *kCName = "attnscore_scores_f32";
  static float f(float v) { return v; }

  static float value(Input &in, unsigned mode, int exp) {
    switch (mode % 6) {
      case 0:  // small integers: exact sums in any order
        return static_cast<float>(static_cast<int>(in.v8() % 17) - 8);
      case 1:  // small integers scaled towards overflow or underflow: still exact, or not
        return std::ldexp(static_cast<float>(static_cast<int>(in.v8() % 17) - 8), exp);
      case 2:
        return from_bits(kSpecials[in.v8() % (sizeof kSpecials / sizeof kSpecials[0])]);
      case 3:  // any bit pattern
        return from_bits(in.v32());
      case 4: {  // full mantissas around 1: rounding in every addition
        const std::uint32_t v = in.v32();
        const float m = from_bits(0x3f800000u | (v & 0x7fffffu)) - 1.5f;
        return std::ldexp(m, static_cast<int>((v >> 24) % 9) - 4);
      }
      default:
        return value(in, in.v8() % 5, exp);
    }
  }

  static attnscore_status call_c(const Args &a) {
    return attnscore_scores_f32(a.n_q, a.n_k, a.d, static_cast<const float *>(a.q), a.ldq,
                                static_cast<const float *>(a.k), a.ldk, static_cast<float *>(a.s),
                                a.lds, a.scale);
  }
  static attnscore_status call_cpp(const attnscore::MatrixView<const float> &q,
                                   const attnscore::MatrixView<const float> &k,
                                   const attnscore::MatrixView<float> &s, float scale) {
    if (to_bits(scale) == 0) return attnscore::scores(q, k, s);  // the default argument
    return attnscore::scores(q, k, s, scale);
  }
  // The contract's bound (docs/contract.md, "f32 scores").
  static double bound(std::size_t d, double gauge, float scale) {
    return testing::contract_bound(d, gauge, scale);
  }
};

// Binary16 inputs, as their bits, decoded and encoded here by the format's own rule (never by
// the library's converters).
float half_value(std::uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const float sign = (h & 0x8000) ? -1.0f : 1.0f;
  if (e == 31) return m != 0 ? std::copysign(NAN, sign) : sign * INFINITY;
  return sign * std::ldexp(static_cast<float>(e == 0 ? m : 1024 + m), (e == 0 ? 1 : e) - 25);
}

// The bits of v, which must be a binary16 value (finite, a multiple of 2^-24, |v| <= 65504).
std::uint16_t half_bits(float v) {
  const std::uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  v = std::fabs(v);
  if (v < std::ldexp(1.0f, -14))
    return static_cast<std::uint16_t>(sign | static_cast<int>(std::ldexp(v, 24)));
  int e;
  const float m = std::frexp(v, &e);  // v = m * 2^e, m in [0.5, 1)
  return static_cast<std::uint16_t>(sign | (e + 14) << 10 | static_cast<int>((m * 2 - 1) * 1024));
}

// x rounded to the nearest binary16, ties to even (|x| >= 65520 -> Inf; NaN -> a NaN), by the
// format's rule, in double: every float is exact there.
std::uint16_t half_round(float x) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return 0x7e00;
  double a = std::fabs(static_cast<double>(x));
  if (a >= 65520.0) return sign | 0x7c00;
  int e;
  std::frexp(a, &e);                                   // a = m * 2^e, m in [0.5, 1)
  const int q = std::max(e - 11, -24);                 // the quantum: 11 significant bits, or 2^-24
  const double n = std::nearbyint(std::ldexp(a, -q));  // (default rounding: to nearest even)
  return static_cast<std::uint16_t>(sign | half_bits(static_cast<float>(std::ldexp(n, q))));
}

const std::uint16_t kHalfSpecials[] = {0x0000, 0x8000, 0x3c00, 0xbc00, 0x7bff, 0xfbff,
                                       0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01, 0x0001,
                                       0x8001, 0x03ff, 0x0400, 0x3555, 0x5bff, 0x4000};

struct F16 {
  using T = attnscore::f16;
  static constexpr const char *kName = "f16";
  static constexpr attnscore_dtype kDtype = ATTNSCORE_DTYPE_F16;
  static constexpr const char *kCName = "attnscore_scores_f16";
  static float f(T v) { return half_value(v.bits); }

  static T value(Input &in, unsigned mode, int exp) {
    switch (mode % 5) {
      case 0:  // small integers: exact sums in any order
        return {half_bits(static_cast<float>(static_cast<int>(in.v8() % 17) - 8))};
      case 1:  // small integers scaled from subnormal to near the largest binary16
        return {half_bits(std::ldexp(static_cast<float>(static_cast<int>(in.v8() % 17) - 8),
                                     ((exp % 37) + 37) % 37 - 24))};
      case 2:
        return {kHalfSpecials[in.v8() % (sizeof kHalfSpecials / sizeof kHalfSpecials[0])]};
      case 3:  // any bits
        return {static_cast<std::uint16_t>(in.v8() | in.v8() << 8)};
      default:
        return value(in, in.v8() % 4, exp);
    }
  }

  static attnscore_status call_c(const Args &a) {
    return attnscore_scores_f16(a.n_q, a.n_k, a.d, static_cast<const std::uint16_t *>(a.q), a.ldq,
                                static_cast<const std::uint16_t *>(a.k), a.ldk,
                                static_cast<float *>(a.s), a.lds, a.scale);
  }
  static attnscore_status call_cpp(const attnscore::MatrixView<const T> &q,
                                   const attnscore::MatrixView<const T> &k,
                                   const attnscore::MatrixView<float> &s, float scale) {
    if (to_bits(scale) == 0) return attnscore::scores(q, k, s);
    return attnscore::scores(q, k, s, scale);
  }
  // Products of binary16 values are exact in f32: the same bound as f32 (docs/contract.md).
  static double bound(std::size_t d, double gauge, float scale) {
    return testing::contract_bound(d, gauge, scale);
  }
};

// Whether this build has the f16 path (a build without it answers ATTNSCORE_ERR_UNKNOWN_DTYPE).
bool f16_built() {
  std::uint16_t h = 0x3c00;
  float f;
  return attnscore_f16_to_f32(1, &h, &f) != ATTNSCORE_ERR_UNKNOWN_DTYPE;
}

double gamma_n(std::size_t n) {
  const double nu = static_cast<double>(n) * std::ldexp(1.0, -24);
  return nu / (1.0 - nu);
}

// Exponent of the lowest set bit of a finite non-zero float.
FUZZ_UNGUIDED int low_exp(float x) {
  const std::uint32_t b = to_bits(x);
  const std::uint32_t e = (b >> 23) & 0xffu;
  const std::uint32_t m = (b & 0x7fffffu) | (e != 0 ? 0x800000u : 0u);
  return (e == 0 ? -149 : static_cast<int>(e) - 150) + __builtin_ctz(m);
}

// What one element of S must be. Sound rules only (any summation order, FMA or not):
// - kNaN: a NaN in the row or column, Inf * 0, or infinite products of both signs;
// - kInf: infinite products of one sign and finite products whose sum cannot overflow: that
//   infinity (times the scale's sign); kInfOrNaN: the same but the finite part may overflow to
//   the other infinity, or a flushed subnormal makes Inf * 0, so NaN is allowed too (never the
//   other infinity or a finite value);
// - kFinite: within the contract's bound of the double reference (plus the reference's own
//   rounding; its third term only where subnormals may be read as 0); exact when every partial sum
//   is a normal float or 0 (all products multiples of 2^g, g >= -126, sum |p| <= min(2^(g+24),
//   FLT_MAX), no subnormal input or scale, a normal or zero result: so flushing subnormals changes
//   nothing): then fl(sum * scale) bit for bit, zeros of either sign alike. If the sum could
//   overflow (gauge near FLT_MAX), a non-finite result is allowed too.
struct Expect {
  enum Kind { kFinite, kNaN, kInf, kInfOrNaN } kind;
  bool exact, may_overflow;
  float want;     // exact result, or the infinity
  double r, tol;  // reference and tolerance
};

template <class D>
FUZZ_UNGUIDED std::vector<Expect> expectations(const Args &a, bool flushing) {
  using T = typename D::T;
  const T *q = static_cast<const T *>(a.q);
  const T *k = static_cast<const T *>(a.k);
  const double sc = a.scale;
  const double g1 = gamma_n(a.d + 1);
  const double slack = static_cast<double>(a.d + 2) * std::ldexp(1.0, -52);
  std::vector<Expect> out(a.n_q * a.n_k);
  std::vector<int> qe(a.n_q * a.d), ke(a.n_k * a.d);
  for (std::size_t i = 0; i < a.n_q; ++i)
    for (std::size_t t = 0; t < a.d; ++t) {
      const float v = D::f(q[i * a.ldq + t]);
      qe[i * a.d + t] = v != 0 && std::isfinite(v) ? low_exp(v) : 0;
    }
  for (std::size_t j = 0; j < a.n_k; ++j)
    for (std::size_t t = 0; t < a.d; ++t) {
      const float v = D::f(k[j * a.ldk + t]);
      ke[j * a.d + t] = v != 0 && std::isfinite(v) ? low_exp(v) : 0;
    }
  for (std::size_t i = 0; i < a.n_q; ++i) {
    const T *qi = q + i * a.ldq;
    for (std::size_t j = 0; j < a.n_k; ++j) {
      const T *kj = k + j * a.ldk;
      bool nan = false, pos_inf = false, neg_inf = false, tiny = false, inf_tiny = false;
      double sum = 0, gauge = 0, flushed = 0;  // flushed: sum |p| over subnormal inputs
      int g = INT_MAX;
      for (std::size_t t = 0; t < a.d && !nan; ++t) {
        const float x = D::f(qi[t]), y = D::f(kj[t]);
        if (std::isnan(x) || std::isnan(y)) {
          nan = true;
        } else if (std::isinf(x) || std::isinf(y)) {
          if (x == 0 || y == 0) nan = true;
          (std::signbit(x) != std::signbit(y) ? neg_inf : pos_inf) = true;
          inf_tiny |= std::fabs(x) < FLT_MIN || std::fabs(y) < FLT_MIN;  // Inf * subnormal
        } else {
          const double p = static_cast<double>(x) * static_cast<double>(y);  // exact
          const bool sub = (x != 0 && std::fabs(x) < FLT_MIN) || (y != 0 && std::fabs(y) < FLT_MIN);
          tiny |= sub;
          if (sub) flushed += std::fabs(p);
          sum += p;
          gauge += std::fabs(p);
          if (p != 0) g = std::min(g, qe[i * a.d + t] + ke[j * a.d + t]);
        }
      }
      Expect &e = out[i * a.n_k + j];
      e = {Expect::kFinite, false, false, 0.0f, 0.0, 0.0};
      const bool finite_part_safe = gauge * (1 + 2 * g1) < FLT_MAX;
      if (nan || (pos_inf && neg_inf)) {
        e.kind = Expect::kNaN;
      } else if (pos_inf || neg_inf) {
        // Read as 0 by a flushing mode, a subnormal times Inf gives NaN.
        e.kind = finite_part_safe && !(flushing && inf_tiny) ? Expect::kInf : Expect::kInfOrNaN;
        e.want = (pos_inf != std::signbit(a.scale)) ? INFINITY : -INFINITY;
      } else {
        const double p = gauge * std::fabs(sc);
        e.r = sum * sc;
        // The contract's third term: a subnormal input may be read as 0 (the caller's DAZ or
        // FZ, armv7 NEON); without a flushing mode the bound is the first two terms.
        e.tol = D::bound(a.d, p, a.scale) + (flushing ? flushed * std::fabs(sc) : 0.0) + slack * p;
        e.may_overflow = !finite_part_safe || p * (1 + 2 * g1) >= FLT_MAX;
        e.exact =
            !tiny && std::fabs(a.scale) >= FLT_MIN &&
            (g == INT_MAX || (g >= -126 && gauge <= std::ldexp(1.0, g + 24) && gauge <= FLT_MAX));
        if (e.exact) e.want = static_cast<float>(sum * sc);  // sum and sum * sc exact in double
        // A subnormal result is not exact: flushing modes may give 0. Judged on the exact value,
        // not on the rounded one (which may round up to FLT_MIN).
        if (e.r != 0 && std::fabs(e.r) < FLT_MIN) e.exact = false;
      }
    }
  }
  return out;
}

// Checks S (n_q x n_k at stride lds) against the expectations; `same` (if given) holds results
// that must be identical (the same kernel): bit for bit, except that a NaN need only be a NaN.
FUZZ_UNGUIDED void check_results(const Args &a, const std::vector<Expect> &ex, const float *s,
                                 const std::vector<float> *same, const char *when) {
  for (std::size_t i = 0; i < a.n_q; ++i) {
    for (std::size_t j = 0; j < a.n_k; ++j) {
      const float got = s[i * a.lds + j];
      const Expect &e = ex[i * a.n_k + j];
      bool ok;
      switch (e.kind) {
        case Expect::kNaN:
          ok = std::isnan(got);
          break;
        case Expect::kInf:
          ok = got == e.want;
          break;
        case Expect::kInfOrNaN:
          ok = std::isnan(got) || got == e.want;
          break;
        default:
          if (e.exact)
            ok = got == e.want;  // +0 == -0
          else if (std::isfinite(got))
            ok = std::fabs(static_cast<double>(got) - e.r) <= e.tol;
          else
            ok = e.may_overflow;
      }
      if (to_bits(got) == kGuardBits) fail("%s: S[%zu][%zu] not written", when, i, j);
      if (!ok)
        fail(
            "%s: S[%zu][%zu] = %.9g (bits %#x); expected kind %d exact %d want %.9g, reference "
            "%.17g, tolerance %.3g",
            when, i, j, static_cast<double>(got), to_bits(got), static_cast<int>(e.kind), e.exact,
            static_cast<double>(e.want), e.r, e.tol);
      if (same != nullptr) {
        const float first = (*same)[i * a.n_k + j];
        if (to_bits(first) != to_bits(got) && !(std::isnan(first) && std::isnan(got)))
          fail("%s: S[%zu][%zu] = %#x, but %#x from the same kernel before", when, i, j,
               to_bits(got), to_bits(first));
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The scores calls.

enum class Entry { kC, kCpp };

std::string describe(const char *dtype, Entry entry, const Mat &q, const Mat &k, const Mat &s,
                     std::uint32_t scale_bits, int cap) {
  char buf[1024];
  auto where = [](const Mat &m) {
    char w[96];
    std::snprintf(w, sizeof w, "%sarena %d + %lld bytes%s%s", m.null ? "NULL, " : "", m.arena,
                  m.pos, m.fits ? "" : ", placeholder", m.ld.wrap ? ", wrap ld" : "");
    return std::string(w);
  };
  std::snprintf(buf, sizeof buf,
                "scores_%s via %s, cap %d, scale bits %#x\n  Q %zu x %zu ld %zu (%s)\n  K %zu x "
                "%zu ld %zu (%s)\n  S %zu x %zu ld %zu (%s)",
                dtype, entry == Entry::kC ? "C" : "C++ views", cap, scale_bits, q.rows, q.cols,
                q.ld.value, where(q).c_str(), k.rows, k.cols, k.ld.value, where(k).c_str(), s.rows,
                s.cols, s.ld.value, where(s).c_str());
  return buf;
}

template <class D>
FUZZ_UNGUIDED void fill_values(Input &in, const Mat &m, unsigned mode, int exp) {
  if (!m.fits || m.span == 0) return;  // (rows may be huge when cols is 0)
  typename D::T *base = reinterpret_cast<typename D::T *>(m.place);
  for (std::size_t i = 0; i < m.rows; ++i)
    for (std::size_t t = 0; t < m.cols; ++t) base[i * m.ld.value + t] = D::value(in, mode, exp);
}

template <class D>
attnscore_status call(Entry entry, const Args &a, const Mat &q, const Mat &k, const Mat &s) {
  if (entry == Entry::kC) return api(D::kCName, [&] { return D::call_c(a); });
  using CT = const typename D::T;
  const attnscore::MatrixView<CT> qv(static_cast<CT *>(a.q), q.rows, q.cols, q.ld.value);
  const attnscore::MatrixView<CT> kv(static_cast<CT *>(a.k), k.rows, k.cols, k.ld.value);
  const attnscore::MatrixView<float> sv(static_cast<float *>(a.s), s.rows, s.cols, s.ld.value);
  return api("attnscore::scores", [&] { return D::call_cpp(qv, kv, sv, a.scale); });
}

template <class D>
int fuzz_scores(Input &in, Entry entry, int cap) {
  using T = typename D::T;
  // Shape, then (C++ only) a view whose shape disagrees.
  std::size_t n_q = decode_rows(in, 19), n_k = decode_rows(in, 69);
  const std::size_t d = decode_d(in);
  // Keep each execution short: at most kWork multiply-adds per level (small sizes only), more
  // when d spans several chunks of the kernels (full tiles then still fit).
  const std::size_t work = d > 256 ? std::size_t{1} << 16 : std::size_t{1} << 14;
  if (n_q < 20 && n_k < 70 && d <= kMaxElems)
    while (n_q * n_k * d > work) (n_k > n_q ? n_k : n_q) /= 2;
  std::size_t qr = n_q, qc = d, kr = n_k, kc = d, sr = n_q, sc = n_k;
  const std::uint8_t mis = in.u8();
  if (entry == Entry::kCpp && mis >= 0xc0) {
    std::size_t *field[] = {&qc, &kc, &sr, &sc};
    std::size_t &f = *field[mis % 4];
    const unsigned how = (mis >> 2) % 3;
    f = how == 0 ? f + 1 : how == 1 ? f - 1 : huge(in, in.u8());
  }
  Mat q{"Q", sizeof(T), qr, qc, decode_stride(in, qc), false, false, 0, 0, 0, nullptr, nullptr};
  Mat k{"K", sizeof(T), kr, kc, decode_stride(in, kc), false, false, 0, 1, 0, nullptr, nullptr};
  Mat s{"S", sizeof(float), sr, sc, decode_stride(in, sc), false, false, 0, 2, 0, nullptr, nullptr};
  // Layout: S alone or in Q's or K's arena, K alone or in Q's, placed against its partner.
  const std::uint8_t lay = in.u8(), nulls = in.u8();
  const std::uint16_t r_s = in.u16(), r_k = in.u16(), leads = in.u16();
  const std::uint32_t scale_bits = decode_scale(in);
  const std::uint8_t blk[4] = {in.u8(), in.u8(), in.u8(), in.u8()};
  const std::uint8_t q_mode = in.u8(), k_mode = in.u8();
  // Exponents for scaled integers: -160 ... 158 reaches subnormals and overflow alike.
  const int q_exp = static_cast<std::int8_t>(in.u8()) * 5 / 4;
  const int k_exp = static_cast<std::int8_t>(in.u8()) * 5 / 4;
  // One case in four runs with subnormals flushed, as a caller's FTZ/DAZ (or FZ) would have it.
  const FpMode fp_mode((in.u8() & 3) == 3 ? testing::flush_bits() : 0);
  if (nulls >= 0xf8) q.null = nulls & 1, k.null = nulls & 2, s.null = nulls & 4;

  Mat *mats[] = {&q, &k, &s};
  for (Mat *m : mats) {
    std::size_t n = 0;
    std::size_t elems = 0;  // bounds the loops over rows too (a stride below the row is short)
    m->fits = !m->ld.wrap && span_elems(m->rows, m->cols, m->ld.value, &n) && n <= kMaxElems &&
              checked_mul(m->rows, m->cols, &elems) && elems <= kMaxElems;
    m->span = m->fits ? n : 0;
  }
  if ((lay >> 2) & 1) {
    k.arena = 0;
    const unsigned kmode[] = {4, 0, 6, 2};
    k.pos = snap(kmode[(lay >> 6) & 3], q.pos, length(q), length(k), k.elem, r_k);
  }
  if ((lay & 3) >= 2) {
    const Mat &partner = (lay & 3) == 2 ? q : k;
    s.arena = partner.arena;
    s.pos = snap((lay >> 3) & 7, partner.pos, length(partner), length(s), s.elem, r_s);
  }
  for (int a = 0; a < 3; ++a) {  // shift each arena to start at 0, plus a leading pad
    long long lo = LLONG_MAX;
    for (Mat *m : mats)
      if (m->arena == a) lo = std::min(lo, m->pos);
    const unsigned code = (leads >> (4 * a)) & 15u;
    const long long lead = code < 8 ? 0 : (code - 7) * static_cast<long long>(mats[a]->elem);
    for (Mat *m : mats)
      if (m->arena == a) m->pos += lead - lo;
  }
  // Every matrix aligned to its own element (a float S beside binary16 Q and K too): a C caller
  // cannot pass a misaligned float pointer.
  for (Mat *m : mats) m->pos += (static_cast<long long>(m->elem) - m->pos % m->elem) % m->elem;
  Memory mem;
  mem.allocate(mats, 3);
  set_wrap_strides(mats, 3);

  // Values: Q, then K (the later wins where they share memory); S keeps the guard bits.
  fill_values<D>(in, q, q_mode, q_exp);
  fill_values<D>(in, k, k_mode, k_exp);

  const Args args{q.rows,     k.rows, q.cols, q.ld.value, k.ld.value,
                  s.ld.value, q.ptr,  k.ptr,  s.ptr,      from_bits(scale_bits),
                  sizeof(T)};
  const bool shapes_agree = q.cols == k.cols && s.rows == q.rows && s.cols == k.rows;
  const attnscore_status want =
      entry == Entry::kCpp && !shapes_agree ? ATTNSCORE_ERR_SHAPE_MISMATCH : predict_scores(args);
  const bool works = want == ATTNSCORE_OK && args.n_q != 0 && args.n_k != 0;
  if (works && (!q.fits || !k.fits || !s.fits)) return -1;  // valid, but too large to allocate
  g_call = describe(D::kName, entry, q, k, s, scale_bits, cap);

  // The scale applied: 0 (either sign) selects the float nearest to 1/sqrt(d).
  Args applied = args;
  if (works && applied.scale == 0.0f) {
    applied.scale = api("attnscore_default_scale", [&] { return attnscore_default_scale(d); });
    const long double exact = 1.0L / std::sqrt(static_cast<long double>(d));
    const long double err = std::fabs(static_cast<long double>(applied.scale) - exact);
    for (float nb : {std::nextafter(applied.scale, 0.0f), std::nextafter(applied.scale, 2.0f)})
      if (std::fabs(static_cast<long double>(nb) - exact) < err)
        fail("default scale %a is not the float nearest to 1/sqrt(%zu)",
             static_cast<double>(applied.scale), d);
  }
  const std::vector<Expect> ex =
      works ? expectations<D>(applied, kAlwaysFlushes || g_fp_extra != 0) : std::vector<Expect>();

  mem.snapshot();
  mem.arm(mats, 3);
  const attnscore_status got = call<D>(entry, args, q, k, s);
  mem.disarm();
  const char *msg = api("attnscore_status_string", [&] { return attnscore_status_string(got); });
  if (msg == nullptr || *msg == '\0') fail("no message for status %d", got);
  if (got != want) fail("returned status %d (%s), expected %d", got, msg, want);
  if (!works) {
    mem.expect_untouched(nullptr, "error or no-op");
    return 0;
  }
  mem.expect_untouched(&s, "success");
  const float *sp = reinterpret_cast<const float *>(s.place);
  check_results(applied, ex, sp, nullptr, "first call");
  std::vector<float> first(args.n_q * args.n_k);
  for (std::size_t i = 0; i < args.n_q; ++i)
    std::memcpy(&first[i * args.n_k], sp + i * args.lds, args.n_k * sizeof(float));
  const attnscore_level first_level =
      api("attnscore_kernel_level", [] { return attnscore_kernel_level(D::kDtype); });

  // A block of S computed alone: the same bits as in the whole call.
  {
    const std::size_t i0 = blk[0] % args.n_q, j0 = blk[1] % args.n_k;
    const std::size_t bq = 1 + blk[2] % (args.n_q - i0), bk = 1 + blk[3] % (args.n_k - j0);
    float *part = static_cast<float *>(std::malloc(bq * bk * sizeof(float)));
    Args b = args;
    b.n_q = bq, b.n_k = bk, b.lds = bk, b.s = part;
    b.q = static_cast<const T *>(args.q) + i0 * args.ldq;
    b.k = static_cast<const T *>(args.k) + j0 * args.ldk;
    mem.arm(mats, 3);
    const attnscore_status st = api("block call", [&] { return D::call_c(b); });
    mem.disarm();
    if (st != ATTNSCORE_OK) fail("block (%zu, %zu) %zu x %zu returned %d", i0, j0, bq, bk, st);
    for (std::size_t i = 0; i < bq; ++i)
      for (std::size_t j = 0; j < bk; ++j) {
        const float x = part[i * bk + j], y = first[(i0 + i) * args.n_k + j0 + j];
        if (to_bits(x) != to_bits(y) && !(std::isnan(x) && std::isnan(y)))
          fail("block (%zu, %zu) %zu x %zu: element (%zu, %zu) = %#x, whole call %#x", i0, j0, bq,
               bk, i, j, to_bits(x), to_bits(y));
      }
    std::free(part);
  }

  // Every level this CPU runs: within the contract, and the first call's kernel bit for bit.
  for (int level : kFamily) {
    if (!api("attnscore_level_supported",
             [&] { return attnscore_level_supported(as_level(level)); }))
      continue;
    set_cap(level);
    mem.restore();
    mem.arm(mats, 3);
    const attnscore_status st = call<D>(entry, args, q, k, s);
    mem.disarm();
    char when[64];
    std::snprintf(when, sizeof when, "at level %d", level);
    if (st != ATTNSCORE_OK) fail("%s: returned %d", when, st);
    mem.expect_untouched(&s, when);
    const bool same_kernel = api("attnscore_kernel_level",
                                 [] { return attnscore_kernel_level(D::kDtype); }) == first_level;
    check_results(applied, ex, sp, same_kernel ? &first : nullptr, when);
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// The other calls: level names (hostile strings), levels and statuses as raw values, queries.

// An enum argument as a C caller may pass it: any int, mostly near the enumerators.
int c_enum_value(Input &in) {
  const std::uint8_t m = in.u8();
  return m < 0xf8 ? m : static_cast<std::int32_t>(in.u32());
}

// Levels whose kernels are int8 only: f32 takes the best level below them.
bool int8_only(int level) {
  return level == ATTNSCORE_LEVEL_AVX512VNNI || level == ATTNSCORE_LEVEL_AVXVNNI ||
         level == ATTNSCORE_LEVEL_NEON_DOTPROD || level == ATTNSCORE_LEVEL_NEON_I8MM;
}

// Whether this build has the int8 path (it answers ATTNSCORE_ERR_UNKNOWN_DTYPE otherwise).
bool s8_built() {
  static const bool built = [] {
    const std::int8_t q = 1;
    const float one = 1.0f;
    float s = 0.0f;
    return attnscore_scores_s8(1, 1, 1, &q, 1, &one, 1, &q, 1, &one, 1, &s, 1, 0.0f) !=
           ATTNSCORE_ERR_UNKNOWN_DTYPE;
  }();
  return built;
}

int fuzz_queries(Input &in, int) {
  g_call = "queries";
  // attnscore_level_from_name on a string of exactly its own length (or NULL arguments).
  {
    const std::uint8_t mode = in.u8();
    std::string name;
    if (mode % 4 == 0) {
      name = kLevelNames[in.u8() % (sizeof kLevelNames / sizeof kLevelNames[0])].name;
    } else {
      const std::size_t n = in.u8() % 16;
      for (std::size_t i = 0; i < n; ++i) {
        const char c = static_cast<char>(in.u8());
        name += c != '\0' ? c : '?';  // NUL only at the end
      }
    }
    char *str = static_cast<char *>(std::malloc(name.size() + 1));
    std::memcpy(str, name.c_str(), name.size() + 1);
    const bool null_name = mode == 0xff, null_out = mode == 0xfe;
    attnscore_level out = as_level(0x5a);
    g_call = "attnscore_level_from_name(\"" + name + "\")";
    const attnscore_status st = api("attnscore_level_from_name", [&] {
      return attnscore_level_from_name(null_name ? nullptr : str, null_out ? nullptr : &out);
    });
    attnscore_status want = ATTNSCORE_ERR_UNKNOWN_LEVEL;
    int level = 0x5a;
    for (const LevelName &l : kLevelNames)
      if (name == l.name) want = ATTNSCORE_OK, level = l.level;
    if (null_name || null_out) want = ATTNSCORE_ERR_NULL_POINTER, level = 0x5a;
    if (st != want) fail("returned %d, expected %d", st, want);
    if (static_cast<int>(out) != level) fail("level %d, expected %d", static_cast<int>(out), level);
    std::free(str);
  }
  // Enum arguments as C callers may pass them (tests/fuzz_c_calls.c): levels, dtypes, statuses.
  {
    const int level = c_enum_value(in), dtype = c_enum_value(in), status = c_enum_value(in);
    char what[96];
    std::snprintf(what, sizeof what, "enum values from C: level %d, dtype %d, status %d", level,
                  dtype, status);
    g_call = what;
    const char *name = api("attnscore_level_name", [&] { return fuzz_c_level_name(level); });
    const char *want = nullptr;
    for (const LevelName &l : kLevelNames)
      if (l.level == level) want = l.name;
    if ((name == nullptr) != (want == nullptr) || (want && std::strcmp(name, want) != 0))
      fail("attnscore_level_name gave %s", name ? name : "NULL");
    const int sup = api("attnscore_level_supported", [&] { return fuzz_c_level_supported(level); });
    if (sup != 0 && !in_family(level)) fail("a level of another family is supported");
    if (level == 0 && sup != 1) fail("scalar is not supported");
    const int st = api("attnscore_set_max_level", [&] { return fuzz_c_set_max_level(level); });
    const bool valid = in_family(level) || level == kBest;
    if (st != (valid ? ATTNSCORE_OK : ATTNSCORE_ERR_UNKNOWN_LEVEL))
      fail("attnscore_set_max_level returned %d", st);
    const char *kn = api("attnscore_kernel_name", [&] { return fuzz_c_kernel_name(dtype); });
    // f16 has kernels unless the build left it out (its calls then say so).
    const std::uint16_t one_h = 0x3c00;
    float one_f;
    const bool f16_built = attnscore_f16_to_f32(1, &one_h, &one_f) != ATTNSCORE_ERR_UNKNOWN_DTYPE;
    const bool known = dtype == ATTNSCORE_DTYPE_F32 ||
                       (dtype == ATTNSCORE_DTYPE_F16 && f16_built) ||
                       (dtype == ATTNSCORE_DTYPE_S8 && s8_built());
    if ((kn == nullptr) == known) fail("attnscore_kernel_name gave %s", kn ? kn : "NULL");
    const int kl = api("attnscore_kernel_level", [&] { return fuzz_c_kernel_level(dtype); });
    if (dtype == ATTNSCORE_DTYPE_F32 && !attnscore_level_supported(as_level(kl)))
      fail("the f32 kernel's level %d is not supported", kl);
    const char *msg = api("attnscore_status_string", [&] { return fuzz_c_status_string(status); });
    if (msg == nullptr || *msg == '\0') fail("no message for status %d", status);
  }
  // The default scale of any d, the CPU features.
  {
    const std::size_t d = in.u8() < 0x80 ? in.u16() : huge(in, in.u8());
    const float f = api("attnscore_default_scale", [&] { return attnscore_default_scale(d); });
    if (d == 0 ? f != 0.0f : !(f > 0.0f))
      fail("attnscore_default_scale(%zu) = %a", d, static_cast<double>(f));
    const std::uint64_t feat =
        api("attnscore_cpu_features", [] { return attnscore_cpu_features(); });
    if (feat != attnscore_cpu_features()) fail("CPU features changed");
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// The packed key cache: its size query, init in memory of exactly the bytes it declares (too few,
// at any alignment), appends in up to three chunks (some bad, some from inside the cache's own
// memory), its queries, a clear, and scores from it. Statuses follow the documented rules
// (attnscore.h); nothing is written on error; scores equal the raw call on the keys appended,
// at the level the cache was made under (the cap stays fixed for one input), bit for bit.

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

// The level cap for the call: BEST, a level of this family, another family's, or any value.
int decode_cap(Input &in) {
  const std::uint8_t c = in.u8();
  switch (c % 8) {
    case 0:
    case 1:
      return kBest;
    case 6:
      return kForeign[(c >> 3) % (sizeof kForeign / sizeof kForeign[0])];
    case 7:
      return in.u8();
    default:
      return kFamily[(c >> 3) % (sizeof kFamily / sizeof kFamily[0])];
  }
}

// ---------------------------------------------------------------------------------------------
// attnscore_attention_f32: small heads x rows x d tensors in three layouts (head-major, padded,
// token-major), or a stride the input picks; mask, window, offset, softcap, softmax and scale from
// the input. The status is predicted from attnscore.h's check order; errors leave every byte
// unchanged;
// on success nothing outside S's elements changes and each element meets a double reference of
// the unfused steps (finite data only).

struct Attn {
  std::size_t hq, hkv, n_q, n_k, d, qhs, qrs, khs, krs, shs, srs;
  float scale, softcap;
  unsigned mask, flags;
  std::size_t p0, w;
};

// Elements from the first to the last of a heads x rows x cols tensor; false on overflow.
bool span3(std::size_t heads, std::size_t rows, std::size_t cols, std::size_t hs, std::size_t rs,
           std::size_t *n) {
  std::size_t a, b, c;
  return checked_mul(heads - 1, hs, &a) && checked_mul(rows - 1, rs, &b) && checked_add(a, b, &c) &&
         checked_add(c, cols, n);
}

// Heads (and rows) pairwise disjoint: rows nested in heads, or heads nested in rows.
bool nested(std::size_t heads, std::size_t rows, std::size_t cols, std::size_t hs, std::size_t rs) {
  if (heads == 1) return true;
  if (rows == 1) return hs >= cols;
  std::size_t x, y;
  if (checked_mul(rows - 1, rs, &x) && checked_add(x, cols, &y) && hs >= y) return true;
  return hs >= cols && checked_mul(heads - 1, hs, &x) && checked_add(x, cols, &y) && rs >= y;
}

bool bad_float(float f) {  // NaN, +-Inf or subnormal, by its bits
  const std::uint32_t e = to_bits(f) & 0x7f800000u, m = to_bits(f) & 0x7fffffu;
  return e == 0x7f800000u || (e == 0 && m != 0);
}

// qk_elem, s_elem: bytes per element of Q and K, and of S (2 for the binary16 forms).
attnscore_status predict_attention(const Attn &a, const void *q, const void *k, const void *s,
                                   std::size_t qk_elem = 4, std::size_t s_elem = 4) {
  if (a.hq == 0 || a.n_q == 0 || a.n_k == 0) return ATTNSCORE_OK;
  if (a.d == 0) return ATTNSCORE_ERR_ZERO_DIM;
  if (q == nullptr || k == nullptr || s == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (a.hkv == 0 || a.hq % a.hkv != 0) return ATTNSCORE_ERR_HEADS_MISMATCH;
  if (a.qrs < a.d) return ATTNSCORE_ERR_BAD_LDQ;
  if (a.krs < a.d) return ATTNSCORE_ERR_BAD_LDK;
  if (a.srs < a.n_k) return ATTNSCORE_ERR_BAD_LDS;
  if (bad_float(a.scale)) return ATTNSCORE_ERR_BAD_SCALE;
  if (a.softcap != 0.0f && (bad_float(a.softcap) || a.softcap < 0.0f))
    return ATTNSCORE_ERR_BAD_SOFTCAP;
  if (a.mask > 3 || a.flags > 1) return ATTNSCORE_ERR_BAD_FLAGS;
  if ((a.mask & 2) && a.w == 0) return ATTNSCORE_ERR_BAD_WINDOW;
  if (a.mask != 0 && a.p0 > SIZE_MAX - (a.n_q - 1)) return ATTNSCORE_ERR_POSITION_OVERFLOW;
  if (!nested(a.hq, a.n_q, a.d, a.qhs, a.qrs) || !nested(a.hkv, a.n_k, a.d, a.khs, a.krs) ||
      !nested(a.hq, a.n_q, a.n_k, a.shs, a.srs))
    return ATTNSCORE_ERR_BAD_HEAD_STRIDE;
  std::size_t nq, nk, ns;
  if (!span3(a.hq, a.n_q, a.d, a.qhs, a.qrs, &nq) || !span3(a.hkv, a.n_k, a.d, a.khs, a.krs, &nk) ||
      !span3(a.hq, a.n_q, a.n_k, a.shs, a.srs, &ns))
    return ATTNSCORE_ERR_SIZE_OVERFLOW;
  const Extent eq = extent(q, 1, nq, nq, qk_elem), ek = extent(k, 1, nk, nk, qk_elem),
               es = extent(s, 1, ns, ns, s_elem);
  if (!eq.ok || !ek.ok || !es.ok) return ATTNSCORE_ERR_SIZE_OVERFLOW;
  if (meets(es, eq) || meets(es, ek)) return ATTNSCORE_ERR_OVERLAP;
  return ATTNSCORE_OK;
}

std::size_t decode_attn_stride(Input &in, std::size_t dflt) {
  const std::uint8_t c = in.u8();
  if (c < 0xe0) return dflt;
  if (c < 0xf0) return dflt - 1 - c % 4;  // short (wraps to huge from 0)
  return huge(in, c);
}

float decode_softcap(Input &in) {
  const std::uint8_t c = in.u8();
  switch (c % 16) {
    case 8:
      return 1.5f;
    case 9:
      return 30.0f;
    case 10:
      return -1.0f;
    case 11:
      return from_bits(0x7fc00000u);
    case 12:
      return from_bits(0x7f800000u);
    case 13:
      return from_bits(0x00000001u);
    case 14:
      return from_bits(in.u32());
    default:
      return c % 16 == 15 ? -0.0f : 0.0f;
  }
}

FUZZ_UNGUIDED void check_attention_values(const Attn &a, const float *q, const float *k,
                                          const float *s, float scale) {
  const double u = 1.0 / (1 << 24);
  const std::size_t g = a.hq / a.hkv;
  std::vector<double> ref(a.n_k), tol(a.n_k);
  std::vector<char> vis(a.n_k);
  for (std::size_t h = 0; h < a.hq; ++h)
    for (std::size_t i = 0; i < a.n_q; ++i) {
      const std::size_t p = a.p0 + i;
      double mx = -INFINITY, emax = 0, sum = 0;
      std::size_t n_vis = 0;
      for (std::size_t j = 0; j < a.n_k; ++j) {
        vis[j] = a.mask == 0 || (j <= p && (!(a.mask & 2) || a.w > p - j));  // (no wrap)
        double r = 0, g1 = 0;
        for (std::size_t t = 0; t < a.d; ++t) {
          const double x = static_cast<double>(q[h * a.qhs + i * a.qrs + t]) *
                           k[(h / g) * a.khs + j * a.krs + t];
          r += x;
          g1 += std::fabs(x);
        }
        r *= scale;
        const double raw = r;
        double e = gamma_n(a.d + 1) * g1 * std::fabs(scale) +
                   (2.0 * a.d + 2) * FLT_MIN * std::max(1.0, std::fabs(static_cast<double>(scale)));
        if (a.softcap != 0.0f) {
          r = a.softcap * std::tanh(r / a.softcap);
          e += 2 * u * std::fabs(raw) + 8 * u * std::fabs(r);
        }
        ref[j] = r, tol[j] = e;
        if (vis[j]) mx = std::max(mx, r), emax = std::max(emax, e), ++n_vis;
      }
      if (a.flags)
        for (std::size_t j = 0; j < a.n_k; ++j)
          if (vis[j]) sum += std::exp(ref[j] - mx);
      const float *row = s + h * a.shs + i * a.srs;
      for (std::size_t j = 0; j < a.n_k; ++j) {
        if (!vis[j]) {
          if (to_bits(row[j]) != (a.flags ? 0u : 0xff800000u))
            fail("head %zu row %zu key %zu: masked element is %a", h, i, j,
                 static_cast<double>(row[j]));
          continue;
        }
        double want = ref[j], bound = tol[j] + 1e-30;
        if (a.flags) {
          want = std::exp(ref[j] - mx) / sum;
          const double rel = std::expm1(2 * emax + 2 * std::fabs(ref[j] - mx) * u) +
                             (static_cast<double>(n_vis) / 4 + 16) * u;
          if (!(rel < 1.0)) {  // scores too uncertain to pin a weight: only its range
            if (!(row[j] >= 0.0f && row[j] <= 1.0f))
              fail("head %zu row %zu key %zu: weight %a", h, i, j, static_cast<double>(row[j]));
            continue;
          }
          bound = want * rel + 4 * static_cast<double>(FLT_MIN);
        }
        if (!(std::fabs(row[j] - want) <= bound))
          fail("head %zu row %zu key %zu: %a, expected %a within %a", h, i, j,
               static_cast<double>(row[j]), want, bound);
      }
    }
}

int fuzz_attention(Input &in, int) {
  Attn a{};
  a.hq = in.u8() % 9, a.hkv = in.u8() % 5;
  a.n_q = in.u8() % 20, a.n_k = in.u8() % 40, a.d = in.u8() % 33;
  // Keep an execution short.
  while (a.hq * a.n_q * a.n_k * (a.d + 1) > (std::size_t{1} << 15)) a.n_k /= 2;
  const std::uint8_t lay = in.u8();
  // Defaults: head-major (padded when bit 0 of the tensor's two bits), or token-major.
  const auto layout = [&](unsigned code, std::size_t heads, std::size_t rows, std::size_t cols,
                          std::size_t *hs, std::size_t *rs) {
    if (code == 2) {
      *hs = cols, *rs = heads * cols + 1;
    } else {
      *rs = cols + code, *hs = rows * *rs + code * 3;
    }
  };
  layout(lay % 3, a.hq, a.n_q, a.d, &a.qhs, &a.qrs);
  layout((lay >> 2) % 3, a.hkv, a.n_k, a.d, &a.khs, &a.krs);
  layout((lay >> 4) % 3, a.hq, a.n_q, a.n_k, &a.shs, &a.srs);
  a.qhs = decode_attn_stride(in, a.qhs), a.qrs = decode_attn_stride(in, a.qrs);
  a.khs = decode_attn_stride(in, a.khs), a.krs = decode_attn_stride(in, a.krs);
  a.shs = decode_attn_stride(in, a.shs), a.srs = decode_attn_stride(in, a.srs);
  a.scale = from_bits(decode_scale(in));
  a.softcap = decode_softcap(in);
  const std::uint8_t mask = in.u8(), flags = in.u8();
  a.mask = mask >= 0xf8 ? mask : mask % 4u;
  a.flags = flags >= 0xf8 ? flags : flags % 2u;
  const std::uint8_t pc = in.u8(), wc = in.u8();
  a.p0 = pc >= 0xf0 ? huge(in, pc) : pc % (a.n_k + 4);
  a.w = wc >= 0xf0 ? huge(in, wc) : wc % 9;
  const std::uint8_t nulls = in.u8(), place = in.u8();
  // 0: attnscore_attention_f32; 1: attnscore_attention_f16 (binary16 Q and K); 2:
  // attnscore_attention_f32_to_f16 (binary16 S). Every Q and K value here is a binary16 value.
  const unsigned dt = f16_built() ? in.u8() % 3 : 0;

  char what[200];
  std::snprintf(what, sizeof what,
                "attnscore_attention_f32 heads %zu/%zu n_q %zu n_k %zu d %zu strides q %zu,%zu k "
                "%zu,%zu s %zu,%zu mask %u flags %u p0 %zu w %zu softcap %a scale %a",
                a.hq, a.hkv, a.n_q, a.n_k, a.d, a.qhs, a.qrs, a.khs, a.krs, a.shs, a.srs, a.mask,
                a.flags, a.p0, a.w, static_cast<double>(a.softcap), static_cast<double>(a.scale));
  g_call = what;

  // Buffers exactly as long as each tensor's extent (or one element when it cannot exist); S in
  // Q's buffer when `place` says so, to meet the overlap rule.
  std::size_t nq = 0, nk = 0, ns = 0;
  const bool empty = a.hq == 0 || a.n_q == 0 || a.n_k == 0;
  const bool fits = !empty && a.d > 0 && a.hkv > 0 && span3(a.hq, a.n_q, a.d, a.qhs, a.qrs, &nq) &&
                    nq <= kMaxElems && span3(a.hkv, a.n_k, a.d, a.khs, a.krs, &nk) &&
                    nk <= kMaxElems && span3(a.hq, a.n_q, a.n_k, a.shs, a.srs, &ns) &&
                    ns <= kMaxElems;
  if (!fits) nq = nk = ns = 1;  // placeholders: such a call must fail before touching memory
  const bool s_in_q = place >= 0xf0;
  std::vector<float> qbuf(nq + (s_in_q ? ns : 0)), kbuf(nk), sbuf(s_in_q ? 1 : ns);
  float *qp = qbuf.data(), *kp = kbuf.data(), *sp = s_in_q ? qp + place % 8 : sbuf.data();
  for (float &x : qbuf) x = static_cast<float>(static_cast<std::int8_t>(in.v8())) / 64.0f;
  for (float &x : kbuf) x = static_cast<float>(static_cast<std::int8_t>(in.v8())) / 64.0f;
  for (float &x : sbuf) x = from_bits(kGuardBits);
  if (nulls >= 0xf8) {
    if (nulls & 1) qp = nullptr;
    if (nulls & 2) kp = nullptr;
    if (nulls & 4) sp = nullptr;
  }
  // The binary16 tensors of the f16 forms, laid out as the float ones.
  std::vector<std::uint16_t> qh, kh, sh;
  const std::uint16_t *qhp = nullptr, *khp = nullptr;
  std::uint16_t *shp = nullptr;
  if (dt == 1) {
    qh.assign(nq + (s_in_q ? 2 * ns + 16 : 0), 0);
    kh.resize(kbuf.size());
    for (std::size_t x = 0; x < nq; ++x) qh[x] = half_bits(qbuf[x]);
    for (std::size_t x = 0; x < kh.size(); ++x) kh[x] = half_bits(kbuf[x]);
    qhp = qp ? qh.data() : nullptr, khp = kp ? kh.data() : nullptr;
    if (s_in_q && sp) sp = reinterpret_cast<float *>(qh.data() + 2 * (place % 8));
  } else if (dt == 2) {
    sh.assign(s_in_q ? 1 : ns, 0x7e5a);
    if (sp) shp = s_in_q ? reinterpret_cast<std::uint16_t *>(qbuf.data() + place % 8) : sh.data();
  }
  attnscore_status want = dt == 1   ? predict_attention(a, qhp, khp, sp, 2, 4)
                          : dt == 2 ? predict_attention(a, qp, kp, shp, 4, 2)
                                    : predict_attention(a, qp, kp, sp);
  // A valid call whose tensors were too large to allocate is not made.
  if (want == ATTNSCORE_OK && !empty && (!fits || s_in_q)) return 0;
  const std::vector<float> q0 = qbuf, k0 = kbuf, s0 = sbuf;
  const std::vector<std::uint16_t> qh0 = qh, kh0 = kh, sh0 = sh;
  attnscore_attention_desc desc;
  std::memset(&desc, 0, sizeof desc);
  desc.heads_q = a.hq, desc.heads_kv = a.hkv, desc.n_q = a.n_q, desc.n_k = a.n_k, desc.d = a.d;
  desc.q_head_stride = a.qhs, desc.q_row_stride = a.qrs, desc.k_head_stride = a.khs;
  desc.k_row_stride = a.krs, desc.s_head_stride = a.shs, desc.s_row_stride = a.srs;
  desc.scale = a.scale, desc.softcap = a.softcap, desc.mask = a.mask, desc.flags = a.flags;
  desc.pos_offset = a.p0, desc.window = a.w;
  const attnscore_status st = api("attention", [&] {
    return dt == 1   ? attnscore_attention_f16(&desc, qhp, khp, sp)
           : dt == 2 ? attnscore_attention_f32_to_f16(&desc, qp, kp, shp)
                     : attnscore_attention_f32(&desc, qp, kp, sp);
  });
  if (st != want) fail("(form %u) returned %d, expected %d", dt, st, want);
  if (std::memcmp(q0.data(), qbuf.data(), q0.size() * 4) != 0 ||
      std::memcmp(k0.data(), kbuf.data(), k0.size() * 4) != 0 || qh != qh0 || kh != kh0)
    fail("an input changed");
  if (st != ATTNSCORE_OK || empty) {
    if (std::memcmp(s0.data(), sbuf.data(), s0.size() * 4) != 0 || sh != sh0) fail("S written");
    return 0;
  }
  if (dt != 0) {
    // The f32 call on the same values: f16 input gives its bits, f16 output its bits rounded
    // once; nothing outside S's elements is written.
    std::vector<float> ref(ns, from_bits(kGuardBits));
    if (api("attnscore_attention_f32", [&] {
          return attnscore_attention_f32(&desc, qbuf.data(), kbuf.data(), ref.data());
        }) != ATTNSCORE_OK)
      fail("the f32 call failed");
    for (std::size_t x = 0; x < ns; ++x) {
      if (dt == 1
              ? to_bits(sbuf[x]) != to_bits(ref[x]) && !(std::isnan(sbuf[x]) && std::isnan(ref[x]))
              : sh[x] != (to_bits(ref[x]) == kGuardBits ? 0x7e5a : half_round(ref[x])))
        fail("(form %u) element %zu differs from the f32 call's %a", dt, x,
             static_cast<double>(ref[x]));
    }
    return 0;
  }
  // Nothing outside S's elements.
  std::vector<char> mine(sbuf.size(), 0);
  for (std::size_t h = 0; h < a.hq; ++h)
    for (std::size_t i = 0; i < a.n_q; ++i)
      for (std::size_t j = 0; j < a.n_k; ++j) mine[h * a.shs + i * a.srs + j] = 1;
  for (std::size_t x = 0; x < sbuf.size(); ++x)
    if (!mine[x] && to_bits(sbuf[x]) != kGuardBits) fail("wrote outside S at %zu", x);
  // Values: scores that stay finite, and a softcap whose s / c does not underflow.
  if (std::fabs(a.scale) <= 1e30f && a.softcap <= 1e30f)
    check_attention_values(a, qp, kp, sp, a.scale == 0.0f ? attnscore_default_scale(a.d) : a.scale);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// attnscore_scores_s8: Q, K, S and the two scale arrays placed in up to three arenas (S may sit
// against any of the other four), scale counts 1, n or wrong, raw int8 values or the extremes,
// d up to and past ATTNSCORE_S8_MAX_D. Every level must give exactly
// (float)acc * ((q_scale * scale) * k_scale), evaluated here in float in that order.

constexpr std::size_t kMaxS8Elems = std::size_t{1} << 18;  // room for one row at the d limit

std::size_t decode_scale_count(Input &in, std::size_t n) {
  const std::uint8_t c = in.u8();
  switch (c % 8) {
    case 4:
    case 5:
      return n;
    case 6:
      return c & 8 ? n + 1 : n - 1;  // (SIZE_MAX for n == 0)
    case 7:
      return c >= 0xf0 ? huge(in, in.u8()) : 0;
    default:
      return 1;
  }
}

float s8_scale_value(Input &in, unsigned mode) {
  switch (mode % 8) {
    case 0:
    case 1:
    case 2:
    case 3: {  // normal, either sign, 2^-20 ... 2^19
      const std::uint8_t v = in.v8();
      const float m = 1.0f + static_cast<float>(in.v8()) / 256.0f;
      return std::ldexp(v & 1 ? -m : m, static_cast<int>(v >> 1) % 40 - 20);
    }
    case 4: {
      const float sp[] = {0.0f,   -0.0f,    1.0f,      FLT_MIN,       FLT_MAX,
                          NAN,    INFINITY, -INFINITY, from_bits(1u), from_bits(0x807fffffu),
                          1e-30f, 1e30f};
      return sp[in.v8() % (sizeof sp / sizeof sp[0])];
    }
    case 5:
      return from_bits(in.v32());
    default:  // tiny or huge normals: products that underflow or overflow
      return std::ldexp(
          1.0f + static_cast<float>(in.v8()) / 256.0f,
          in.v8() & 1 ? -126 + static_cast<int>(in.v8() % 8) : 120 - static_cast<int>(in.v8() % 8));
  }
}

std::int8_t s8_value(Input &in, unsigned mode) {
  switch (mode % 4) {
    case 0:
      return static_cast<std::int8_t>(in.v8());
    case 1:  // the extremes: -128 * -128 is the largest product
      return in.v8() & 1 ? std::int8_t{127} : std::int8_t{-128};
    case 2:
      return std::int8_t{-128};
    default:
      return static_cast<std::int8_t>(static_cast<int>(in.v8() % 7) - 3);
  }
}

FUZZ_UNGUIDED float flush(float x) {  // a result a flushing mode may give as 0
  return x != 0 && std::fabs(x) < FLT_MIN ? std::copysign(0.0f, x) : x;
}

// The two values an element may take: as evaluated without flushing, and with every subnormal
// intermediate flushed (a caller's FTZ, or armv7 NEON); equal when nothing is subnormal.
struct S8Want {
  float exact, flushed;
};

FUZZ_UNGUIDED std::vector<S8Want> s8_expectations(std::size_t n_q, std::size_t n_k, std::size_t d,
                                                  const std::int8_t *q, std::size_t ldq,
                                                  const float *qs, bool q_per_row,
                                                  const std::int8_t *k, std::size_t ldk,
                                                  const float *ks, bool k_per_key, float scale) {
  std::vector<S8Want> out(n_q * n_k);
  for (std::size_t i = 0; i < n_q; ++i)
    for (std::size_t j = 0; j < n_k; ++j) {
      std::int64_t acc = 0;
      for (std::size_t t = 0; t < d; ++t)
        acc += static_cast<std::int64_t>(q[i * ldq + t]) * k[j * ldk + t];
      if (acc > INT32_MAX || acc < INT32_MIN) fail("the test's own sum left int32 at d %zu", d);
      const float qsv = qs[q_per_row ? i : 0], ksv = ks[k_per_key ? j : 0];
      const volatile float a = qsv * scale;
      const volatile float b = a * ksv;
      const volatile float r = static_cast<float>(acc) * b;
      const volatile float fa = flush(qsv * scale);
      const volatile float fb = flush(fa * ksv);
      const volatile float fr = flush(static_cast<float>(acc) * fb);
      out[i * n_k + j] = {r, fr};
    }
  return out;
}

// kUnknown: the status depends on scale values past what the fuzzer could allocate.
constexpr attnscore_status kUnknown = ATTNSCORE_STATUS_MAX_ENUM;

attnscore_status predict_s8(std::size_t n_q, std::size_t n_k, std::size_t d, const void *q,
                            std::size_t ldq, const float *qs, std::size_t qn, std::size_t q_have,
                            const void *k, std::size_t ldk, const float *ks, std::size_t kn,
                            std::size_t k_have, const void *s, std::size_t lds, float scale) {
  if (n_q == 0 || n_k == 0) return ATTNSCORE_OK;
  if (d == 0) return ATTNSCORE_ERR_ZERO_DIM;
  if (d > ATTNSCORE_S8_MAX_D) return ATTNSCORE_ERR_DIM_TOO_LARGE;
  if (!q || !k || !s || !qs || !ks) return ATTNSCORE_ERR_NULL_POINTER;
  if (ldq < d) return ATTNSCORE_ERR_BAD_LDQ;
  if (ldk < d) return ATTNSCORE_ERR_BAD_LDK;
  if (lds < n_k) return ATTNSCORE_ERR_BAD_LDS;
  if ((qn != 1 && qn != n_q) || (kn != 1 && kn != n_k)) return ATTNSCORE_ERR_BAD_SCALE_COUNT;
  if (scale_rejected(scale)) return ATTNSCORE_ERR_BAD_SCALE;
  const Extent eq = extent(q, n_q, d, ldq, 1), ek = extent(k, n_k, d, ldk, 1);
  const Extent es = extent(s, n_q, n_k, lds, 4);
  const Extent eqs = extent(qs, 1, qn, qn, 4), eks = extent(ks, 1, kn, kn, 4);
  if (!eq.ok || !ek.ok || !es.ok || !eqs.ok || !eks.ok) return ATTNSCORE_ERR_SIZE_OVERFLOW;
  if (meets(es, eq) || meets(es, ek) || meets(es, eqs) || meets(es, eks))
    return ATTNSCORE_ERR_OVERLAP;
  if (qn > q_have || kn > k_have) return kUnknown;
  for (std::size_t i = 0; i < qn; ++i)
    if (scale_rejected(qs[i])) return ATTNSCORE_ERR_BAD_QUANT_SCALE;
  for (std::size_t j = 0; j < kn; ++j)
    if (scale_rejected(ks[j])) return ATTNSCORE_ERR_BAD_QUANT_SCALE;
  return ATTNSCORE_OK;
}

FUZZ_UNGUIDED void check_s8_results(const std::vector<S8Want> &ex, std::size_t n_q, std::size_t n_k,
                                    const float *s, std::size_t lds, bool may_flush,
                                    const char *when) {
  for (std::size_t i = 0; i < n_q; ++i)
    for (std::size_t j = 0; j < n_k; ++j) {
      const float got = s[i * lds + j];
      const S8Want &w = ex[i * n_k + j];
      const auto same = [&](float x) {
        return to_bits(x) == to_bits(got) || (std::isnan(x) && std::isnan(got));
      };
      if (!same(w.exact) && !(may_flush && same(w.flushed)))
        fail("%s: S[%zu][%zu] = %a (bits %#x), expected %a (flushed %a)", when, i, j,
             static_cast<double>(got), to_bits(got), static_cast<double>(w.exact),
             static_cast<double>(w.flushed));
    }
}

int fuzz_s8(Input &in, int cap) {
  if (!s8_built()) return -1;
  std::size_t n_q = decode_rows(in, 19), n_k = decode_rows(in, 69);
  std::size_t d = decode_d(in);
  const std::uint8_t edge = in.u8();                       // d at the int32 limit of the sums
  if (edge >= 0xfd) d = ATTNSCORE_S8_MAX_D - 0xfe + edge;  // the limit and one past it
  std::size_t work = d > 256 ? std::size_t{1} << 16 : std::size_t{1} << 14;
  if (d <= ATTNSCORE_S8_MAX_D + 1) work = std::max(work, d);
  if (n_q < 20 && n_k < 70 && d <= kMaxS8Elems)
    while (n_q * n_k * d > work) (n_k > n_q ? n_k : n_q) /= 2;
  const std::size_t qn = decode_scale_count(in, n_q), kn = decode_scale_count(in, n_k);
  Mat q{"Q", 1, n_q, d, decode_stride(in, d), false, false, 0, 0, 0, nullptr, nullptr};
  Mat k{"K", 1, n_k, d, decode_stride(in, d), false, false, 0, 1, 0, nullptr, nullptr};
  Mat s{"S", 4, n_q, n_k, decode_stride(in, n_k), false, false, 0, 2, 0, nullptr, nullptr};
  Mat qs{"QS", 4, 1, qn, {qn, false, 0}, false, false, 0, 0, 0, nullptr, nullptr};
  Mat ks{"KS", 4, 1, kn, {kn, false, 0}, false, false, 0, 1, 0, nullptr, nullptr};
  const std::uint8_t lay = in.u8(), nulls = in.u8();
  const std::uint16_t r_s = in.u16(), r_k = in.u16(), r_qs = in.u16(), r_ks = in.u16();
  const std::uint16_t leads = in.u16();
  const std::uint32_t scale_bits = decode_scale(in);
  const std::uint8_t q_mode = in.u8(), k_mode = in.u8(), qs_mode = in.u8(), ks_mode = in.u8();
  const FpMode fp_mode((in.u8() & 3) == 3 ? testing::flush_bits() : 0);
  if (nulls >= 0xf0) {
    q.null = nulls & 1, k.null = nulls & 2, s.null = nulls & 4;
    (nulls & 8 ? qs : ks).null = true;
  }
  Mat *mats[] = {&q, &k, &s, &qs, &ks};
  for (Mat *m : mats) {
    std::size_t n = 0, elems = 0;
    m->fits = !m->ld.wrap && span_elems(m->rows, m->cols, m->ld.value, &n) && n <= kMaxS8Elems &&
              checked_mul(m->rows, m->cols, &elems) && elems <= kMaxS8Elems;
    m->span = m->fits ? n : 0;
  }
  // K alone or against Q; the scales after their matrix (or anywhere near it); S alone or
  // against any of the other four.
  if (lay & 1) {
    k.arena = 0;
    k.pos = snap((lay >> 1) & 7, q.pos, length(q), length(k), 1, r_k);
    ks.arena = 0;
  }
  qs.pos = snap(r_qs & 8 ? r_qs : 7, q.pos, length(q), length(qs), 4, r_qs >> 4);
  ks.pos = snap(r_ks & 8 ? r_ks : 7, k.pos, length(k), length(ks), 4, r_ks >> 4);
  if ((lay >> 4) & 1) {
    const Mat &partner = *mats[(lay >> 5) % 5 == 2 ? 3 : (lay >> 5) % 5];
    s.arena = partner.arena;
    s.pos = snap(r_s, partner.pos, length(partner), length(s), 4, r_s >> 3);
  }
  for (int a = 0; a < 3; ++a) {
    long long lo = LLONG_MAX;
    for (Mat *m : mats)
      if (m->arena == a) lo = std::min(lo, m->pos);
    if (lo == LLONG_MAX) continue;
    const long long lead = ((leads >> (4 * a)) & 15u) < 8 ? 0 : ((leads >> (4 * a)) & 7u);
    for (Mat *m : mats)
      if (m->arena == a) m->pos += lead - lo;
  }
  for (Mat *m : mats) m->pos += (static_cast<long long>(m->elem) - m->pos % m->elem) % m->elem;
  Memory mem;
  mem.allocate(mats, 5);
  set_wrap_strides(mats, 5);

  // Values: Q, K, then the scales (later ones win where they share memory).
  auto fill_s8 = [&](const Mat &m, unsigned mode) {
    if (!m.fits || m.span == 0) return;
    auto *base = reinterpret_cast<std::int8_t *>(m.place);
    for (std::size_t i = 0; i < m.rows; ++i)
      for (std::size_t t = 0; t < m.cols; ++t) base[i * m.ld.value + t] = s8_value(in, mode);
  };
  auto fill_scales = [&](const Mat &m, unsigned mode) {
    if (!m.fits || m.span == 0) return;
    for (std::size_t t = 0; t < m.cols; ++t) {
      const float v = s8_scale_value(in, (mode & 0xf0) == 0xf0 ? mode : mode % 4);
      std::memcpy(m.place + t * 4, &v, 4);
    }
  };
  fill_s8(q, q_mode);
  fill_s8(k, k_mode);
  fill_scales(qs, qs_mode);
  fill_scales(ks, ks_mode);

  const float scale = from_bits(scale_bits);
  const auto *qp = reinterpret_cast<const std::int8_t *>(q.ptr);
  const auto *kp = reinterpret_cast<const std::int8_t *>(k.ptr);
  const auto *qsp = reinterpret_cast<const float *>(qs.ptr);
  const auto *ksp = reinterpret_cast<const float *>(ks.ptr);
  auto *sp = reinterpret_cast<float *>(s.ptr);
  const attnscore_status want =
      predict_s8(n_q, n_k, d, qp, q.ld.value, qsp, qn, qs.fits ? qn : 0, kp, k.ld.value, ksp, kn,
                 ks.fits ? kn : 0, sp, s.ld.value, scale);
  if (want == kUnknown) return -1;  // the call would read scales too many to allocate here
  const bool works = want == ATTNSCORE_OK && n_q != 0 && n_k != 0;
  if (works && (!q.fits || !k.fits || !s.fits)) return -1;  // valid, but too large to allocate
  char what[400];
  std::snprintf(what, sizeof what,
                "attnscore_scores_s8 cap %d: %zu x %zu, d %zu, ld %zu/%zu/%zu, scale counts "
                "%zu/%zu, scale %#x, lay %#x, nulls %#x",
                cap, n_q, n_k, d, q.ld.value, k.ld.value, s.ld.value, qn, kn, scale_bits, lay,
                nulls);
  g_call = what;
  const float applied = works && scale == 0.0f ? attnscore_default_scale(d) : scale;
  const std::vector<S8Want> ex = works ? s8_expectations(n_q, n_k, d, qp, q.ld.value, qsp, qn != 1,
                                                         kp, k.ld.value, ksp, kn != 1, applied)
                                       : std::vector<S8Want>();
  const bool may_flush = kAlwaysFlushes || g_fp_extra != 0;
  auto run = [&] {
    return api("attnscore_scores_s8", [&] {
      return attnscore_scores_s8(n_q, n_k, d, qp, q.ld.value, qsp, qn, kp, k.ld.value, ksp, kn, sp,
                                 s.ld.value, scale);
    });
  };
  mem.snapshot();
  mem.arm(mats, 5);
  const attnscore_status got = run();
  mem.disarm();
  if (got != want) fail("returned %d, expected %d", got, want);
  if (!works) {
    mem.expect_untouched(nullptr, "error or no-op");
    return 0;
  }
  mem.expect_untouched(&s, "success");
  check_s8_results(ex, n_q, n_k, sp, s.ld.value, may_flush, "first call");
  // Every level this CPU runs: the same bits (integer sums do not depend on the order).
  for (int level : kFamily) {
    if (!attnscore_level_supported(as_level(level))) continue;
    set_cap(level);
    mem.restore();
    mem.arm(mats, 5);
    const attnscore_status st = run();
    mem.disarm();
    char when[64];
    std::snprintf(when, sizeof when, "at level %d", level);
    if (st != ATTNSCORE_OK) fail("%s: returned %d", when, st);
    mem.expect_untouched(&s, when);
    check_s8_results(ex, n_q, n_k, sp, s.ld.value, may_flush, when);
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// The binary16 converters on any bits, and attnscore_scores_f16_to_f16: each element the f32
// score attnscore_scores_f16 gives at the same level, rounded once to nearest even.

int fuzz_convert(Input &in, int) {
  if (!f16_built()) return -1;
  const std::uint8_t mode = in.u8(), place = in.u8();
  std::size_t n = in.u8() % 80;
  if (mode >= 0xf8) n = huge(in, in.u8());
  const bool to_f32 = mode & 1;
  const bool null_src = place == 0xff, null_dst = place == 0xfe, shared = (place & 0xf0) == 0xe0;
  const FpMode fp_mode((mode & 6) == 6 ? testing::flush_bits() : 0);
  const std::size_t have = n <= 4096 ? n : 1;
  // Source and destination in one buffer when `shared` (overlapping or touching by place % 16).
  const std::size_t src_bytes = have * (to_f32 ? 2 : 4), dst_bytes = have * (to_f32 ? 4 : 2);
  const std::size_t off = shared ? (place % 16) * 4 : 0;  // dst's start in the shared buffer
  std::vector<unsigned char> a(shared ? std::max(src_bytes, off + dst_bytes) : src_bytes),
      b(shared ? 1 : dst_bytes);
  Input values = in.stream();
  for (unsigned char &c : a) c = values.v8();
  for (unsigned char &c : b) c = 0xa5;
  unsigned char *src = a.data(), *dst = shared ? a.data() + off : b.data();
  const void *sp = null_src ? nullptr : static_cast<const void *>(src);
  void *dp = null_dst ? nullptr : static_cast<void *>(dst);
  attnscore_status want = ATTNSCORE_OK;
  if (n != 0) {
    if (sp == nullptr || dp == nullptr) {
      want = ATTNSCORE_ERR_NULL_POINTER;
    } else {
      const Extent es = extent(sp, 1, n, n, to_f32 ? 2 : 4),
                   ed = extent(dp, 1, n, n, to_f32 ? 4 : 2);
      want = !es.ok || !ed.ok ? ATTNSCORE_ERR_SIZE_OVERFLOW
             : meets(es, ed)  ? ATTNSCORE_ERR_OVERLAP
                              : ATTNSCORE_OK;
    }
  }
  if (want == ATTNSCORE_OK && n != have) return -1;  // valid, but too large here
  char what[128];
  std::snprintf(what, sizeof what, "attnscore_%s(%zu)%s", to_f32 ? "f16_to_f32" : "f32_to_f16", n,
                shared ? " in one buffer" : "");
  g_call = what;
  const std::vector<unsigned char> a0 = a, b0 = b;
  const attnscore_status got = api(what, [&] {
    return to_f32 ? attnscore_f16_to_f32(n, static_cast<const std::uint16_t *>(sp),
                                         static_cast<float *>(dp))
                  : attnscore_f32_to_f16(n, static_cast<const float *>(sp),
                                         static_cast<std::uint16_t *>(dp));
  });
  if (got != want) fail("returned %d, expected %d", got, want);
  if (got != ATTNSCORE_OK || n == 0) {
    if (a != a0 || b != b0) fail("memory written on error or no-op");
    return 0;
  }
  if (std::memcmp(a.data(), a0.data(), src_bytes) != 0) fail("the source changed");
  const bool may_flush = g_fp_extra != 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (to_f32) {
      std::uint16_t h;
      float f;
      std::memcpy(&h, a0.data() + 2 * i, 2);
      std::memcpy(&f, dst + 4 * i, 4);
      const float want_f = half_value(h);
      const bool ok = std::isnan(want_f) ? std::isnan(f)
                                         : to_bits(f) == to_bits(want_f) ||
                                               (may_flush && (h & 0x7c00) == 0 &&
                                                to_bits(f) == to_bits(std::copysign(0.0f, want_f)));
      if (!ok)
        fail("element %zu: %#x gave %a, expected %a", i, h, static_cast<double>(f),
             static_cast<double>(want_f));
    } else {
      float f;
      std::uint16_t h;
      std::memcpy(&f, a0.data() + 4 * i, 4);
      std::memcpy(&h, dst + 2 * i, 2);
      const std::uint16_t want_h = half_round(f);
      const bool nan = (want_h & 0x7fff) > 0x7c00;
      // Flushing modes may read a subnormal float as 0 (its binary16 is +-0 anyway) or write a
      // subnormal binary16 as 0.
      const bool ok =
          nan ? (h & 0x7fff) > 0x7c00
              : h == want_h || (may_flush && (want_h & 0x7c00) == 0 && h == (want_h & 0x8000));
      if (!ok)
        fail("element %zu: %a (%#x) gave %#x, expected %#x", i, static_cast<double>(f), to_bits(f),
             h, want_h);
    }
  }
  return 0;
}

int fuzz_f16_out(Input &in, int cap) {
  if (!f16_built()) return -1;
  std::size_t n_q = decode_rows(in, 19), n_k = decode_rows(in, 69), d = decode_d(in);
  if (n_q < 20 && n_k < 70 && d <= kMaxElems)
    while (n_q * n_k * d > (std::size_t{1} << 14)) (n_k > n_q ? n_k : n_q) /= 2;
  const Stride lq = decode_stride(in, d), lk = decode_stride(in, d), ls = decode_stride(in, n_k);
  const std::uint32_t scale_bits = decode_scale(in);
  const float scale = from_bits(scale_bits);
  const std::uint8_t q_mode = in.u8(), k_mode = in.u8(), nulls = in.u8(), place = in.u8();
  const FpMode fp_mode((in.u8() & 3) == 3 ? testing::flush_bits() : 0);
  // The _ex calls' flags: none, f16 accumulation, or unknown bits.
  const std::uint8_t fc = in.u8();
  const unsigned flags = fc < 0x80 ? 0u : fc < 0xf8 ? ATTNSCORE_F16_ACCUMULATE_F16 : fc;
  std::size_t nq = 0, nk = 0, ns = 0;
  const bool fits = !lq.wrap && !lk.wrap && !ls.wrap && span_elems(n_q, d, lq.value, &nq) &&
                    nq <= kMaxElems && span_elems(n_k, d, lk.value, &nk) && nk <= kMaxElems &&
                    span_elems(n_q, n_k, ls.value, &ns) && ns <= kMaxElems;
  if (!fits) nq = nk = ns = 1;
  // S in Q's buffer (after it, touching or overlapping by `place`) or alone.
  const bool s_in_q = place >= 0xe0;
  const std::size_t s_off = s_in_q ? nq - std::min<std::size_t>(nq, place % 4) : 0;
  std::vector<std::uint16_t> qb(s_in_q ? s_off + ns : nq), kb(nk), sb(s_in_q ? 1 : ns);
  std::vector<float> ref(fits ? ns : 1, from_bits(kGuardBits));
  Input values = in.stream();
  for (std::uint16_t &x : qb) x = F16::value(values, q_mode, q_mode).bits;
  for (std::uint16_t &x : kb) x = F16::value(values, k_mode, k_mode).bits;
  for (std::uint16_t &x : sb) x = 0x7e5a;
  const std::uint16_t *qp = nulls == 0xff ? nullptr : qb.data();
  const std::uint16_t *kp = nulls == 0xfe ? nullptr : kb.data();
  std::uint16_t *sp = nulls == 0xfd ? nullptr : s_in_q ? qb.data() + s_off : sb.data();
  const std::size_t ldq = lq.wrap ? d : lq.value, ldk = lk.wrap ? d : lk.value,
                    lds = ls.wrap ? n_k : ls.value;
  // The status: as attnscore_scores_f16, with S's elements two bytes.
  attnscore_status want = ATTNSCORE_OK;
  if (n_q != 0 && n_k != 0) {
    if (d == 0)
      want = ATTNSCORE_ERR_ZERO_DIM;
    else if (!qp || !kp || !sp)
      want = ATTNSCORE_ERR_NULL_POINTER;
    else if (ldq < d)
      want = ATTNSCORE_ERR_BAD_LDQ;
    else if (ldk < d)
      want = ATTNSCORE_ERR_BAD_LDK;
    else if (lds < n_k)
      want = ATTNSCORE_ERR_BAD_LDS;
    else if (scale_rejected(scale))
      want = ATTNSCORE_ERR_BAD_SCALE;
    else {
      const Extent eq = extent(qp, n_q, d, ldq, 2), ek = extent(kp, n_k, d, ldk, 2),
                   es = extent(sp, n_q, n_k, lds, 2);
      want = !eq.ok || !ek.ok || !es.ok       ? ATTNSCORE_ERR_SIZE_OVERFLOW
             : meets(es, eq) || meets(es, ek) ? ATTNSCORE_ERR_OVERLAP
                                              : ATTNSCORE_OK;
      if (want == ATTNSCORE_OK && (flags & ~ATTNSCORE_F16_ACCUMULATE_F16) != 0)
        want = ATTNSCORE_ERR_BAD_FLAGS;
    }
  }
  const bool works = want == ATTNSCORE_OK && n_q != 0 && n_k != 0;
  if (works && (!fits || s_in_q)) return -1;  // valid, but not allocated for it
  char what[200];
  std::snprintf(what, sizeof what,
                "attnscore_scores_f16_to_f16_ex cap %d: %zu x %zu, d %zu, ld %zu/%zu/%zu, scale "
                "%#x, flags %#x",
                cap, n_q, n_k, d, ldq, ldk, lds, scale_bits, flags);
  g_call = what;
  const std::vector<std::uint16_t> q0 = qb, k0 = kb, s0 = sb;
  const attnscore_status got = api("attnscore_scores_f16_to_f16_ex", [&] {
    return flags == 0 && fc % 2 == 0
               ? attnscore_scores_f16_to_f16(n_q, n_k, d, qp, ldq, kp, ldk, sp, lds, scale)
               : attnscore_scores_f16_to_f16_ex(n_q, n_k, d, qp, ldq, kp, ldk, sp, lds, scale,
                                                flags);
  });
  if (got != want) fail("returned %d, expected %d", got, want);
  if (qb != q0 || kb != k0) fail("an input changed");
  if (!works) {
    if (sb != s0) fail("S written on error or no-op");
    return 0;
  }
  // The f32 scores at the same level and with the same flags, rounded here.
  const attnscore_status st = api("attnscore_scores_f16_ex", [&] {
    return attnscore_scores_f16_ex(n_q, n_k, d, qp, ldq, kp, ldk, ref.data(), lds, scale, flags);
  });
  if (st != ATTNSCORE_OK) fail("attnscore_scores_f16_ex returned %d", st);
  // Without f16 arithmetic the flag must change nothing: bit for bit the f32-accumulating call.
  if (flags != 0 && !attnscore_f16_accumulation_available()) {
    std::vector<float> plain(ns, from_bits(kGuardBits));
    // (in the same FP mode as the call it is compared with)
    if (api("attnscore_scores_f16",
            [&] {
              return attnscore_scores_f16(n_q, n_k, d, qp, ldq, kp, ldk, plain.data(), lds, scale);
            }) != ATTNSCORE_OK ||
        std::memcmp(plain.data(), ref.data(), ns * sizeof(float)) != 0)
      fail("f16 accumulation unavailable, yet the flag changed the scores");
  }
  for (std::size_t x = 0; x < ns; ++x) {
    const bool elem = x % lds < n_k;
    const std::uint16_t want_h = elem ? half_round(ref[x]) : 0x7e5a;
    const bool nan = elem && (want_h & 0x7fff) > 0x7c00;
    const bool flushed =
        g_fp_extra != 0 && elem && (want_h & 0x7c00) == 0 && sb[x] == (want_h & 0x8000);
    if (nan ? (sb[x] & 0x7fff) <= 0x7c00 : sb[x] != want_h && !flushed)
      fail("S element %zu = %#x, expected %#x (f32 score %a)", x, sb[x], want_h,
           static_cast<double>(ref[x]));
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// attnscore_quantize_s8 and attnscore_fold_channel_scales: statuses from the documented rules,
// results against the documented formulas (the same bits at every level), inputs unchanged.

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}

int fuzz_quantize(Input &in, int cap) {
  if (!s8_built()) return -1;
  const std::uint8_t which = in.u8();
  const bool fold = which & 1;
  // attnscore_quantize_f16_s8: binary16 rows, the same bits as quantizing the converted rows.
  const bool half = !fold && (which & 2) && f16_built();
  std::size_t n = decode_rows(in, 19), d = decode_d(in);
  if (n < 20 && d <= kMaxElems)
    while (n * d > (std::size_t{1} << 13)) n /= 2;
  const Stride lx = decode_stride(in, d), lo = decode_stride(in, d);
  const std::uint8_t mode = in.u8(), nulls = in.u8(), place = in.u8();
  const int exp = static_cast<std::int8_t>(in.u8()) * 5 / 4;
  const FpMode fp_mode((in.u8() & 3) == 3 ? testing::flush_bits() : 0);
  std::size_t nx = 0, no = 0;
  const std::size_t ldx = lx.wrap ? d : lx.value, ldo = lo.wrap ? d : lo.value;
  const bool fits = span_elems(n, d, ldx, &nx) && nx <= kMaxElems && span_elems(n, d, ldo, &no) &&
                    no <= kMaxElems && d <= kMaxElems && n <= kMaxElems;
  if (!fits) nx = no = 1;
  // fold: out in x's buffer (in place when place says so, or overlapping); quantize: the
  // scales after x or in out's place.
  // (binary16 rows: only apart)
  const unsigned where = half ? 0 : place % 4;  // 0 apart, 1 out in x, 2 aux in x, 3 in place
  Input values = in.stream();
  std::vector<float> x(nx + (where == 1 ? no : 0) + (where == 2 && fits ? d + n : 0));
  std::vector<std::uint16_t> xh(half ? nx : 0);
  for (float &v : x) v = F32::value(values, mode, exp);
  for (std::size_t i = 0; i < xh.size(); ++i) {
    xh[i] = F16::value(values, mode, exp).bits;
    x[i] = half_value(xh[i]);  // the reference's view of the same rows
  }
  std::vector<float> chan(where == 2       ? 1
                          : d <= kMaxElems ? d
                                           : 1),
      scales(where == 2       ? 1
             : n <= kMaxElems ? n
                              : 1);
  for (float &v : chan) v = F32::value(values, values.v8() % 5, 0);
  std::vector<float> outf(where == 1 || where == 3 ? 1 : no, from_bits(kGuardBits));
  std::vector<std::int8_t> outq(where == 1 ? 1 : no, std::int8_t{0x5a});
  const std::size_t shift = place >> 4;  // where out or the scales start inside x
  float *xp = nulls == 0xff ? nullptr : x.data();
  const std::uint16_t *xhp = nulls == 0xff ? nullptr : xh.data();
  float *op_f = where == 1 ? x.data() + std::min(shift, nx) : where == 3 ? x.data() : outf.data();
  std::int8_t *op_q = where == 1
                          ? reinterpret_cast<std::int8_t *>(x.data()) + std::min(shift, 4 * nx)
                          : outq.data();
  float *aux = where == 2 ? x.data() + std::min(shift, nx) : fold ? chan.data() : scales.data();
  if (nulls == 0xfe) op_f = nullptr, op_q = nullptr;
  if (nulls == 0xfd) aux = nullptr;
  const std::size_t ldo_used = where == 3 && fold ? (nulls == 0xfc ? ldx + 1 : ldx) : ldo;
  attnscore_status want = ATTNSCORE_OK;
  if (n != 0) {
    const void *out = fold ? static_cast<const void *>(op_f) : static_cast<const void *>(op_q);
    if (d == 0)
      want = ATTNSCORE_ERR_ZERO_DIM;
    else if (!xp || !out || !aux)
      want = ATTNSCORE_ERR_NULL_POINTER;
    else if (ldx < d)
      want = ATTNSCORE_ERR_BAD_LDQ;
    else if (ldo_used < d)
      want = ATTNSCORE_ERR_BAD_LDS;
    else {
      const Extent ex = half ? extent(xhp, n, d, ldx, 2) : extent(xp, n, d, ldx, 4);
      const Extent eo = extent(out, n, d, ldo_used, fold ? 4 : 1);
      const Extent ea = fold ? extent(aux, 1, d, d, 4) : extent(aux, 1, n, n, 4);
      if (!ex.ok || !eo.ok || !ea.ok)
        want = ATTNSCORE_ERR_SIZE_OVERFLOW;
      else if (fold)
        want = (!(out == xp && ldo_used == ldx) && meets(eo, ex)) || meets(eo, ea)
                   ? ATTNSCORE_ERR_OVERLAP
                   : ATTNSCORE_OK;
      else if (meets(eo, ex) || meets(ea, ex) || meets(ea, eo))
        want = ATTNSCORE_ERR_OVERLAP;
    }
    if (want == ATTNSCORE_OK && !fold && fits)  // values are checked last
      for (std::size_t i = 0; i < n && want == ATTNSCORE_OK; ++i)
        for (std::size_t t = 0; t < d; ++t)
          if (!std::isfinite(x[i * ldx + t])) want = ATTNSCORE_ERR_NOT_FINITE;
  }
  const bool works = want == ATTNSCORE_OK && n != 0;
  if (works && !fits) return -1;
  char what[200];
  std::snprintf(what, sizeof what, "attnscore_%s cap %d: n %zu, d %zu, ld %zu/%zu, place %#x",
                fold   ? "fold_channel_scales"
                : half ? "quantize_f16_s8"
                       : "quantize_s8",
                cap, n, d, ldx, ldo_used, place);
  g_call = what;
  const std::vector<float> x0 = x, chan0 = chan, scales0 = scales, outf0 = outf;
  const std::vector<std::uint16_t> xh0 = xh;
  const std::vector<std::int8_t> outq0 = outq;
  auto call = [&] {
    return fold ? api("attnscore_fold_channel_scales",
                      [&] {
                        return attnscore_fold_channel_scales(n, d, xp, ldx, aux, op_f, ldo_used);
                      })
           : half
               ? api("attnscore_quantize_f16_s8",
                     [&] { return attnscore_quantize_f16_s8(n, d, xhp, ldx, op_q, ldo_used, aux); })
               : api("attnscore_quantize_s8",
                     [&] { return attnscore_quantize_s8(n, d, xp, ldx, op_q, ldo_used, aux); });
  };
  const attnscore_status got = call();
  if (got != want) fail("returned %d, expected %d", got, want);
  if (xh != xh0) fail("the binary16 rows changed");
  if (!works) {
    if (!same_bits(x, x0) || !same_bits(chan, chan0) || !same_bits(scales, scales0) ||
        outq != outq0 || !same_bits(outf, outf0) || xh != xh0)
      fail("memory written on error or no-op");
    return 0;
  }
  if (where != 0) return 0;  // (aliasing cases: the status is what is checked)
  const bool may_flush = g_fp_extra != 0 || kAlwaysFlushes;
  if (fold) {
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t t = 0; t < d; ++t) {
        const float a = x0[i * ldx + t], c = chan0[t];
        const float want_v = a * c, got_v = outf[i * ldo + t];
        // A flushing mode may read a subnormal factor as 0 or flush a subnormal product.
        const float flushed = flush(a) * flush(c);
        if (to_bits(got_v) != to_bits(want_v) && !(std::isnan(got_v) && std::isnan(want_v)) &&
            !(may_flush && (to_bits(got_v) == to_bits(flush(want_v)) ||
                            to_bits(got_v) == to_bits(flush(flushed)) ||
                            (std::isnan(got_v) && std::isnan(flushed)))))
          fail("out[%zu][%zu] = %a, expected %a", i, t, static_cast<double>(got_v),
               static_cast<double>(want_v));
      }
    return 0;
  }
  const std::vector<std::int8_t> first = outq;
  const std::vector<float> first_scales = scales;
  for (std::size_t i = 0; i < n; ++i) {
    float mx = 0;
    for (std::size_t t = 0; t < d; ++t) mx = std::max(mx, std::fabs(x0[i * ldx + t]));
    // (A flushing mode changes no scale: a subnormal maximum gives 0 either way.)
    const float sc = mx / 127.0f < FLT_MIN ? 0.0f : mx / 127.0f;
    if (to_bits(scales[i]) != to_bits(sc))
      fail("scale[%zu] = %a, expected %a", i, static_cast<double>(scales[i]),
           static_cast<double>(sc));
    for (std::size_t t = 0; t < d; ++t) {
      const float v = x0[i * ldx + t];
      const float r = sc == 0 ? 0.0f : std::nearbyint(v / sc);
      const int w = static_cast<int>(std::max(-128.0f, std::min(127.0f, r)));
      const int g = outq[i * ldo + t];
      // Under a flushing mode a subnormal input may read as 0.
      const bool tiny = v != 0 && std::fabs(v) < FLT_MIN;
      if (g != w && !(may_flush && tiny && g == 0))
        fail("out[%zu][%zu] = %d for %a (scale %a), expected %d", i, t, g, static_cast<double>(v),
             static_cast<double>(sc), w);
    }
  }
  // Every level: the same bytes and scales.
  for (int level : kFamily) {
    if (!attnscore_level_supported(as_level(level))) continue;
    set_cap(level);
    std::fill(outq.begin(), outq.end(), std::int8_t{0x5a});
    if (call() != ATTNSCORE_OK) fail("at level %d: an error", level);
    if (outq != first || !same_bits(scales, first_scales))
      fail("at level %d: other results", level);
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// The parallel calls, through a parallel-for that runs the tasks on this thread in an order the
// input picks: each must return the single-threaded call's status, call the hook only for work,
// run every task index once, and give the single-threaded call's bits. (Threads themselves are
// the thread sanitizer's job; here the splits are.)

struct Hook {
  unsigned order = 0;
  std::size_t calls = 0, tasks = 0;
};

void run_tasks(void *pool_ctx, attnscore_task_fn fn, void *task_ctx, std::size_t n_tasks) {
  Hook &h = *static_cast<Hook *>(pool_ctx);
  ++h.calls;
  h.tasks = n_tasks;
  if (n_tasks == 0 || n_tasks > (std::size_t{1} << 16)) fail("%zu tasks", n_tasks);
  // Ascending, descending, odd then even, or a stride coprime to n_tasks.
  std::size_t step = 1;
  if (h.order % 4 == 3)
    for (step = n_tasks / 2 + 1; step > 1; --step) {
      std::size_t a = n_tasks, b = step;
      while (b != 0) a %= b, std::swap(a, b);
      if (a == 1) break;
    }
  for (std::size_t i = 0; i < n_tasks; ++i) {
    std::size_t t;
    switch (h.order % 4) {
      case 1:
        t = n_tasks - 1 - i;
        break;
      case 2:
        t = i < n_tasks / 2 ? 2 * i + 1 : 2 * (i - n_tasks / 2);
        break;
      case 3:
        t = (i * step) % n_tasks;
        break;
      default:
        t = i;
    }
    fn(task_ctx, t);
  }
}

int fuzz_parallel(Input &in, int cap) {
  const unsigned which = in.u8() % 5;
  const std::uint8_t pmode = in.u8(), tmode = in.u8();
  Hook hook;
  hook.order = pmode >> 4;
  attnscore_parallel par{run_tasks, &hook, tmode < 0xf0 ? std::size_t{tmode} % 9 : huge(in, tmode)};
  if (pmode % 16 == 15) par.parallel_for = nullptr;
  const attnscore_parallel *pp = pmode % 16 == 14 ? nullptr : &par;
  std::size_t n_q = in.u8() % 20, n_k = in.u8() % 70, d = 1 + in.u8() % 40;
  if (in.u8() >= 0xf8) d = 0;
  while (n_q * n_k * d > (std::size_t{1} << 14)) n_k /= 2;
  const std::size_t ldq = d + in.u8() % 3, ldk = d + in.u8() % 3, lds = n_k + in.u8() % 3;
  const std::uint32_t scale_bits = decode_scale(in);
  const float scale = from_bits(scale_bits);
  const std::uint8_t nulls = in.u8();
  const bool null_q = nulls == 0xff, null_s = nulls == 0xfe;
  Input values = in.stream();
  const std::size_t nqe = n_q == 0 ? 0 : (n_q - 1) * ldq + d;
  const std::size_t nke = n_k == 0 ? 0 : (n_k - 1) * ldk + d;
  const std::size_t nse = n_q == 0 ? 0 : (n_q - 1) * lds + n_k;
  std::vector<float> s1(nse + 1, from_bits(kGuardBits)), s2 = s1;
  char what[200];
  std::snprintf(what, sizeof what,
                "parallel call %u, cap %d, %zu threads, order %u%s: %zu x %zu, d %zu, scale %#x",
                which, cap, par.threads, hook.order % 4,
                pp == nullptr      ? ", NULL par"
                : par.parallel_for ? ""
                                   : ", NULL parallel_for",
                n_q, n_k, d, scale_bits);
  g_call = what;
  attnscore_status st1, st2;
  if (which == 0 || which == 3) {  // f32, raw or from a key cache
    std::vector<float> q(nqe), k(nke);
    for (float &x : q) x = F32::value(values, 4, 0);
    for (float &x : k) x = F32::value(values, values.v8() % 6, 0);
    const float *qp = null_q ? nullptr : q.data();
    float *sp1 = null_s ? nullptr : s1.data(), *sp2 = null_s ? nullptr : s2.data();
    if (which == 0) {
      st1 = api("attnscore_scores_f32", [&] {
        return attnscore_scores_f32(n_q, n_k, d, qp, ldq, k.data(), ldk, sp1, lds, scale);
      });
      st2 = api("attnscore_scores_f32_parallel", [&] {
        return attnscore_scores_f32_parallel(pp, n_q, n_k, d, qp, ldq, k.data(), ldk, sp2, lds,
                                             scale);
      });
    } else {
      const std::size_t bytes = attnscore_kcache_f32_bytes(n_k + 1, d + 1);
      std::vector<unsigned char> mem(bytes);
      attnscore_kcache_f32 *cache = nullptr;
      if (attnscore_kcache_f32_init(mem.data(), bytes, n_k + 1, d + 1, &cache) != ATTNSCORE_OK)
        fail("cache init failed");
      // The cache holds d + 1 dimensions: Q's rows are read with d + 1 elements.
      std::vector<float> q1((n_q == 0 ? 0 : (n_q - 1) * (ldq + 1)) + d + 1);
      for (float &x : q1) x = F32::value(values, 4, 0);
      std::vector<float> k1(n_k * (d + 1));
      for (float &x : k1) x = F32::value(values, values.v8() % 6, 0);
      if (n_k != 0 && attnscore_kcache_f32_append(cache, n_k, k1.data(), d + 1) != ATTNSCORE_OK)
        fail("append failed");
      const float *qp1 = null_q ? nullptr : q1.data();
      st1 = api("attnscore_scores_f32_kcache", [&] {
        return attnscore_scores_f32_kcache(n_q, qp1, ldq + 1, cache, sp1, lds, scale);
      });
      st2 = api("attnscore_scores_f32_kcache_parallel", [&] {
        return attnscore_scores_f32_kcache_parallel(pp, n_q, qp1, ldq + 1, cache, sp2, lds, scale);
      });
    }
  } else if (which == 1) {  // f16
    if (!f16_built()) return -1;
    std::vector<std::uint16_t> q(nqe), k(nke);
    for (std::uint16_t &x : q) x = F16::value(values, 4, 0).bits;
    for (std::uint16_t &x : k) x = F16::value(values, values.v8() % 5, 0).bits;
    const std::uint16_t *qp = null_q ? nullptr : q.data();
    float *sp1 = null_s ? nullptr : s1.data(), *sp2 = null_s ? nullptr : s2.data();
    st1 = api("attnscore_scores_f16", [&] {
      return attnscore_scores_f16(n_q, n_k, d, qp, ldq, k.data(), ldk, sp1, lds, scale);
    });
    st2 = api("attnscore_scores_f16_parallel", [&] {
      return attnscore_scores_f16_parallel(pp, n_q, n_k, d, qp, ldq, k.data(), ldk, sp2, lds,
                                           scale);
    });
  } else if (which == 2) {  // s8, per-row or per-tensor scales
    if (!s8_built()) return -1;
    std::vector<std::int8_t> q(nqe), k(nke);
    for (std::int8_t &x : q) x = s8_value(values, 0);
    for (std::int8_t &x : k) x = s8_value(values, values.v8());
    const std::size_t qn = nulls & 1 ? 1 : n_q, kn = nulls & 2 ? 1 : n_k;
    std::vector<float> qs(qn + 1), ks(kn + 1);
    for (float &x : qs) x = s8_scale_value(values, 0);
    for (float &x : ks) x = s8_scale_value(values, 0);
    const std::int8_t *qp = null_q ? nullptr : q.data();
    float *sp1 = null_s ? nullptr : s1.data(), *sp2 = null_s ? nullptr : s2.data();
    st1 = api("attnscore_scores_s8", [&] {
      return attnscore_scores_s8(n_q, n_k, d, qp, ldq, qs.data(), qn, k.data(), ldk, ks.data(), kn,
                                 sp1, lds, scale);
    });
    st2 = api("attnscore_scores_s8_parallel", [&] {
      return attnscore_scores_s8_parallel(pp, n_q, n_k, d, qp, ldq, qs.data(), qn, k.data(), ldk,
                                          ks.data(), kn, sp2, lds, scale);
    });
  } else {  // attention: heads, groups, masks, softcap, softmax
    const std::size_t hkv = 1 + in.u8() % 3, g = 1 + in.u8() % 4, hq = hkv * g;
    while (hq * n_q * n_k * d > (std::size_t{1} << 14)) n_k /= 2;
    attnscore_attention_desc desc = attnscore_attention_desc_dense(hq, hkv, n_q, n_k, d);
    desc.scale = scale;
    desc.softcap = in.u8() & 1 ? 0.0f : 2.5f;
    desc.mask = in.u8() % 4;
    desc.flags = in.u8() % 2;
    desc.pos_offset = in.u8() % (n_k + 3);
    desc.window = 1 + in.u8() % 9;
    std::vector<float> q(hq * n_q * d), k(hkv * n_k * d),
        a1(hq * n_q * n_k + 1, from_bits(kGuardBits)), a2 = a1;
    for (float &x : q) x = static_cast<float>(static_cast<std::int8_t>(values.v8())) / 64.0f;
    for (float &x : k) x = static_cast<float>(static_cast<std::int8_t>(values.v8())) / 64.0f;
    const float *qp = null_q ? nullptr : q.data();
    st1 = api("attnscore_attention_f32",
              [&] { return attnscore_attention_f32(&desc, qp, k.data(), a1.data()); });
    st2 = api("attnscore_attention_f32_parallel",
              [&] { return attnscore_attention_f32_parallel(pp, &desc, qp, k.data(), a2.data()); });
    s1.swap(a1), s2.swap(a2);
  }
  const bool work = st1 == ATTNSCORE_OK && n_q != 0 && n_k != 0;
  const attnscore_status want =
      work && pp != nullptr && par.parallel_for == nullptr ? ATTNSCORE_ERR_NULL_POINTER : st1;
  if (st2 != want) fail("returned %d, the single-threaded call %d", st2, st1);
  if (hook.calls > 1) fail("the hook was called %zu times", hook.calls);
  if (hook.calls == 1 && (want != ATTNSCORE_OK || !work)) fail("the hook was called for no work");
  for (std::size_t x = 0; x < s1.size(); ++x) {
    const std::uint32_t a = to_bits(s1[x]), b = to_bits(s2[x]);
    if (want != ATTNSCORE_OK ? b != kGuardBits
                             : a != b && !(std::isnan(s1[x]) && std::isnan(s2[x])))
      fail("element %zu: %#x, the single-threaded call %#x (%zu tasks)", x, b, a, hook.tasks);
  }
  return 0;
}

// The three key caches, as fuzz_kcache drives them (scales: the int8 cache's, else unused).
// The float caches differ only in their names and element type.
#define FUZZ_FLOAT_CACHE(Name, dt, Elem, value_expr, built_expr)                                   \
  struct Name {                                                                                    \
    using T = Elem;                                                                                \
    using H = attnscore_kcache_##dt;                                                               \
    static constexpr const char *kName = #dt;                                                      \
    static constexpr bool kScales = false;                                                         \
    static constexpr std::size_t kMaxD = SIZE_MAX;                                                 \
    static bool built() { return built_expr; }                                                     \
    static T value(Input &in, unsigned mode, int exp) { return value_expr; }                       \
    static std::size_t bytes(std::size_t c, std::size_t d) {                                       \
      return attnscore_kcache_##dt##_bytes(c, d);                                                  \
    }                                                                                              \
    static attnscore_status init(void *m, std::size_t b, std::size_t c, std::size_t d, H **h) {    \
      return attnscore_kcache_##dt##_init(m, b, c, d, h);                                          \
    }                                                                                              \
    static attnscore_status append(H *h, std::size_t n, const T *k, std::size_t ldk,               \
                                   const float *) {                                                \
      return attnscore_kcache_##dt##_append(h, n, k, ldk);                                         \
    }                                                                                              \
    static std::size_t size(const H *h) { return attnscore_kcache_##dt##_size(h); }                \
    static std::size_t dim(const H *h) { return attnscore_kcache_##dt##_dim(h); }                  \
    static attnscore_status clear(H *h) { return attnscore_kcache_##dt##_clear(h); }               \
    static attnscore_status scores(std::size_t n_q, const T *q, std::size_t ldq, const float *,    \
                                   std::size_t, const H *h, float *s, std::size_t lds, float sc) { \
      return attnscore_scores_##dt##_kcache(n_q, q, ldq, h, s, lds, sc);                           \
    }                                                                                              \
    static attnscore_status raw(std::size_t n_q, std::size_t n_k, std::size_t d, const T *q,       \
                                std::size_t ldq, const float *, std::size_t, const T *k,           \
                                std::size_t ldk, const float *, float *s, std::size_t lds,         \
                                float sc) {                                                        \
      return attnscore_scores_##dt(n_q, n_k, d, q, ldq, k, ldk, s, lds, sc);                       \
    }                                                                                              \
  };
FUZZ_FLOAT_CACHE(CacheF32, f32, float, F32::value(in, mode, exp), true)
FUZZ_FLOAT_CACHE(CacheF16, f16, std::uint16_t, F16::value(in, mode, exp).bits, f16_built())
#undef FUZZ_FLOAT_CACHE

struct CacheS8 {
  using T = std::int8_t;
  using H = attnscore_kcache_s8;
  static constexpr const char *kName = "s8";
  static constexpr bool kScales = true;
  static constexpr std::size_t kMaxD = ATTNSCORE_S8_MAX_D;
  static bool built() { return s8_built(); }
  static T value(Input &in, unsigned mode, int) { return s8_value(in, mode); }
  static std::size_t bytes(std::size_t c, std::size_t d) { return attnscore_kcache_s8_bytes(c, d); }
  static attnscore_status init(void *m, std::size_t b, std::size_t c, std::size_t d, H **h) {
    return attnscore_kcache_s8_init(m, b, c, d, h);
  }
  static attnscore_status append(H *h, std::size_t n, const T *k, std::size_t ldk,
                                 const float *ks) {
    return attnscore_kcache_s8_append(h, n, k, ldk, ks);
  }
  static std::size_t size(const H *h) { return attnscore_kcache_s8_size(h); }
  static std::size_t dim(const H *h) { return attnscore_kcache_s8_dim(h); }
  static attnscore_status clear(H *h) { return attnscore_kcache_s8_clear(h); }
  static attnscore_status scores(std::size_t n_q, const T *q, std::size_t ldq, const float *qs,
                                 std::size_t qn, const H *h, float *s, std::size_t lds, float sc) {
    return attnscore_scores_s8_kcache(n_q, q, ldq, qs, qn, h, s, lds, sc);
  }
  static attnscore_status raw(std::size_t n_q, std::size_t n_k, std::size_t d, const T *q,
                              std::size_t ldq, const float *qs, std::size_t qn, const T *k,
                              std::size_t ldk, const float *ks, float *s, std::size_t lds,
                              float sc) {
    return attnscore_scores_s8(n_q, n_k, d, q, ldq, qs, qn, k, ldk, ks, n_k, s, lds, sc);
  }
};

// A matrix of rows x cols elements at stride ld in a block of exactly its extent (nullptr when
// it does not fit the fuzzer's budget; calls with it must then fail before touching memory).
template <class T>
struct ElemMat {
  std::size_t rows, cols, ld, span = 0;
  std::unique_ptr<Block> mem;
  T *at(std::size_t i, std::size_t t) const { return reinterpret_cast<T *>(mem->p) + i * ld + t; }
};

// values == nullptr: S, left with the fill bytes.
template <class C, class T = typename C::T>
ElemMat<T> make_mat(Input &in, Input *values, std::size_t rows, std::size_t cols) {
  ElemMat<T> m{rows, cols, decode_stride(in, cols).value, 0, nullptr};
  std::size_t n, elems;
  const unsigned mode = in.u8();
  const int exp = static_cast<std::int8_t>(in.u8()) * 5 / 4;
  if (!span_elems(rows, cols, m.ld, &n) || n == 0 || n > kMaxElems ||
      !checked_mul(rows, cols, &elems) || elems > kMaxElems)
    return m;
  m.span = n;
  m.mem.reset(new Block(n * sizeof(T), 0xff));
  for (std::size_t i = 0; i < rows && values != nullptr; ++i)
    for (std::size_t t = 0; t < cols; ++t) *m.at(i, t) = C::value(*values, mode, exp);
  return m;
}

attnscore_status predict_append(bool null_cache, bool foreign, std::size_t n, bool null_k,
                                std::size_t ldk, std::size_t d, std::size_t room, bool k_extent) {
  if (null_cache) return ATTNSCORE_ERR_NULL_POINTER;
  if (foreign) return ATTNSCORE_ERR_BAD_CACHE;
  if (n == 0) return ATTNSCORE_OK;
  if (null_k) return ATTNSCORE_ERR_NULL_POINTER;
  if (ldk < d) return ATTNSCORE_ERR_BAD_LDK;
  if (n > room) return ATTNSCORE_ERR_CACHE_FULL;
  if (!k_extent) return ATTNSCORE_ERR_SIZE_OVERFLOW;
  return ATTNSCORE_OK;
}

// qs: the int8 cache's query scales (qn of them), nullptr (with qn 1) for the float caches.
attnscore_status predict_kcache_scores(bool null_cache, bool foreign, std::size_t n_q,
                                       std::size_t n_k, std::size_t d, const void *q,
                                       std::size_t ldq, std::size_t elem, bool has_qs,
                                       const float *qs, std::size_t qn, const float *s,
                                       std::size_t lds, float scale) {
  if (null_cache) return ATTNSCORE_ERR_NULL_POINTER;
  if (foreign) return ATTNSCORE_ERR_BAD_CACHE;
  if (n_q == 0 || n_k == 0) return ATTNSCORE_OK;
  if (q == nullptr || s == nullptr || (has_qs && qs == nullptr)) return ATTNSCORE_ERR_NULL_POINTER;
  if (ldq < d) return ATTNSCORE_ERR_BAD_LDQ;
  if (lds < n_k) return ATTNSCORE_ERR_BAD_LDS;
  if (has_qs && qn != 1 && qn != n_q) return ATTNSCORE_ERR_BAD_SCALE_COUNT;
  if (scale_rejected(scale)) return ATTNSCORE_ERR_BAD_SCALE;
  const Extent qe = extent(q, n_q, d, ldq, elem);
  const Extent se = extent(s, n_q, n_k, lds, sizeof(float));
  const Extent qse = has_qs ? extent(qs, 1, qn, qn, sizeof(float)) : Extent{true, 0, 0};
  if (!qe.ok || !se.ok || !qse.ok) return ATTNSCORE_ERR_SIZE_OVERFLOW;
  if (meets(se, qe) || (has_qs && meets(se, qse))) return ATTNSCORE_ERR_OVERLAP;
  for (std::size_t i = 0; has_qs && i < qn; ++i)
    if (scale_rejected(qs[i])) return ATTNSCORE_ERR_BAD_QUANT_SCALE;
  return ATTNSCORE_OK;
}

// A T-aligned place in [lo, lo + n) for `need` bytes, picked by r; nullptr if none.
template <class T>
T *place_inside(unsigned char *lo, std::size_t n, std::size_t need, std::uint16_t r) {
  constexpr std::size_t a = alignof(T);
  const std::size_t skip = (a - reinterpret_cast<std::uintptr_t>(lo) % a) % a;
  if (n < skip || n - skip < need) return nullptr;
  return reinterpret_cast<T *>(lo + skip + (r % (n - skip - need + 1)) / a * a);
}

template <class C>
int fuzz_kcache(Input &in, int) {
  using T = typename C::T;
  using H = typename C::H;
  if (!C::built()) return -1;
  g_call = "kcache";
  char what[200];
  Input values = in.stream();
  const std::size_t d = decode_d(in);
  std::size_t capacity = decode_rows(in, 69);
  const std::uint8_t mem_mode = in.u8(), cache_mode = in.u8();
  if ((mem_mode & 0xc0) == 0xc0) capacity = in.u16() % 600;

  // The size query: 0 exactly when an argument is 0 or the size overflows.
  std::snprintf(what, sizeof what, "attnscore_kcache_%s_bytes(%zu, %zu)", C::kName, capacity, d);
  g_call = what;
  const std::size_t need = api(what, [&] { return C::bytes(capacity, d); });
  std::size_t raw = 0;
  const bool raw_fits = checked_mul(capacity, d, &raw) && checked_mul(raw, sizeof(T), &raw);
  if (d == 0 || capacity == 0 || !raw_fits || d > C::kMaxD) {
    if (need != 0) fail("returned %zu, expected 0", need);
  } else if (std::size_t pad, cap64;
             checked_add(capacity, 64, &cap64) && checked_mul(cap64, d + 16, &pad) &&
             pad <= SIZE_MAX / 8 &&
             need < raw) {  // (room for 64 padding keys, a header and per-key sums and scales)
    fail("returned %zu, below the keys' %zu bytes", need, raw);
  }

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
  const bool null_mem = (cache_mode & 0x38) == 0x38, null_out = (cache_mode & 0x38) == 0x30;
  attnscore_status want = ATTNSCORE_OK;
  if (null_mem || null_out)
    want = ATTNSCORE_ERR_NULL_POINTER;
  else if (d == 0 || capacity == 0)
    want = ATTNSCORE_ERR_ZERO_DIM;
  else if (d > C::kMaxD)
    want = ATTNSCORE_ERR_DIM_TOO_LARGE;
  else if (need == 0)
    want = ATTNSCORE_ERR_SIZE_OVERFLOW;
  else if (bytes < need)
    want = ATTNSCORE_ERR_BUFFER_TOO_SMALL;
  std::snprintf(what, sizeof what,
                "attnscore_kcache_%s_init(%zu bytes at +%zu, capacity %zu, d %zu)", C::kName, bytes,
                offset, capacity, d);
  g_call = what;
  H *cache = nullptr;
  const attnscore_status st = api(what, [&] {
    return C::init(null_mem ? nullptr : mem.p + offset, bytes, capacity, d,
                   null_out ? nullptr : &cache);
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
  H *handle = cache;
  bool null_cache = !valid, alien = false;
  if (!valid || (cache_mode & 0x80)) {
    const std::uint8_t h = in.u8();
    if (valid && h % 4 == 0) {
      handle = reinterpret_cast<H *>(reinterpret_cast<unsigned char *>(cache) + 1 + h / 4 % 15);
      null_cache = false, alien = true;
    } else if (h % 4 != 3) {
      handle = reinterpret_cast<H *>(foreign.p + h / 4 % 64);
      null_cache = false, alien = true;
    } else {
      handle = nullptr, null_cache = true;
    }
  }
  if (alien && valid && handle != cache &&
      reinterpret_cast<unsigned char *>(handle) + 64 > mem.p + offset + bytes)
    handle = reinterpret_cast<H *>(foreign.p);  // stay inside the memory
  foreign.snapshot();

  // Appends: each a K of n keys at its own stride, or from inside the cache's memory.
  std::vector<T> keys;        // every key appended, d elements each
  std::vector<float> kscale;  // and its scale (the int8 cache)
  std::size_t size = 0;
  const unsigned appends = in.u8() % 4;
  for (unsigned a = 0; a < appends; ++a) {
    std::size_t n = decode_rows(in, 69);
    const std::uint8_t kmode = in.u8();
    ElemMat<T> k = make_mat<C>(in, &values, n, d);
    const bool null_k = kmode >= 0xf0;
    // The int8 cache: one scale per key appended (NULL, or some bad ones, as kmode says).
    const bool null_ks = C::kScales && kmode >= 0xe8 && kmode < 0xf0;
    std::vector<float> ks(C::kScales && n <= kMaxElems ? n : 0);
    for (float &x : ks) x = s8_scale_value(values, (kmode & 0x60) == 0x60 ? values.v8() : 0);
    const T *kp = null_k ? nullptr : k.mem ? k.at(0, 0) : reinterpret_cast<T *>(foreign.p);
    const float *ksp = null_ks      ? nullptr
                       : ks.empty() ? reinterpret_cast<float *>(foreign.p)
                                    : ks.data();
    T *in_cache = nullptr;  // K placed in the cache's own memory, holding its whole extent
    if (valid && !alien && !null_k && kmode % 8 == 7 && k.mem != nullptr && n != 0)
      in_cache = place_inside<T>(mem.p + offset, bytes, k.span * sizeof(T), in.u16());
    const bool inside = in_cache != nullptr;
    if (inside) kp = in_cache;
    std::vector<T> rows;  // what the keys were before the call
    if (kp != nullptr && (k.mem || inside) && n != 0)
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t t = 0; t < d; ++t) {
          T v;
          std::memcpy(&v, kp + i * k.ld + t, sizeof v);
          rows.push_back(v);
        }
    std::size_t room = capacity - size;
    attnscore_status want_a =
        predict_append(null_cache, alien, n, null_k || null_ks, k.ld, d, valid ? room : 0,
                       kp == nullptr || extent(kp, n, d, k.ld, sizeof(T)).ok);
    if (want_a == ATTNSCORE_OK && n != 0 && (!k.mem || (C::kScales && ks.empty()))) return -1;
    for (std::size_t i = 0; want_a == ATTNSCORE_OK && i < ks.size() && n != 0; ++i)
      if (scale_rejected(ks[i])) want_a = ATTNSCORE_ERR_BAD_QUANT_SCALE;
    std::snprintf(what, sizeof what, "attnscore_kcache_%s_append(%zu keys, ldk %zu%s%s) at %zu",
                  C::kName, n, k.ld,
                  null_k    ? ", NULL"
                  : null_ks ? ", NULL scales"
                            : "",
                  inside ? ", inside the cache" : "", size);
    g_call = what;
    mem.snapshot();
    if (k.mem) k.mem->snapshot();
    const attnscore_status got = api(what, [&] { return C::append(handle, n, kp, k.ld, ksp); });
    if (k.mem) k.mem->expect_untouched("K after append");
    foreign.expect_untouched("foreign memory after append");
    // K inside the cache's memory: the cache may refuse (it overlaps what the append writes)
    // or take the keys (they lie in memory the append does not touch).
    const bool may_overlap =
        inside && (want_a == ATTNSCORE_OK || want_a == ATTNSCORE_ERR_BAD_QUANT_SCALE);
    if (got != want_a && !(may_overlap && got == ATTNSCORE_ERR_OVERLAP))
      fail("returned %d, expected %d", got, want_a);
    if (got != ATTNSCORE_OK || n == 0) {
      mem.expect_untouched("append error or no-op");
      continue;
    }
    keys.insert(keys.end(), rows.begin(), rows.end());
    kscale.insert(kscale.end(), ks.begin(), ks.end());
    size += n;
    if (inside) {  // the keys must have been read before anything was written
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t t = 0; t < d; ++t) {
          T v;
          std::memcpy(&v, kp + i * k.ld + t, sizeof v);
          if (std::memcmp(&v, &rows[i * d + t], sizeof v) != 0)
            fail("the append wrote over its own keys (key %zu, t %zu)", i, t);
        }
    }
  }

  // Queries, and (sometimes) a clear.
  g_call = "kcache queries";
  const std::size_t want_size = null_cache || alien ? 0 : size;
  const std::size_t want_dim = null_cache || alien ? 0 : d;
  if (api("kcache size", [&] { return C::size(handle); }) != want_size)
    fail("size is not %zu", want_size);
  if (api("kcache dim", [&] { return C::dim(handle); }) != want_dim)
    fail("dim is not %zu", want_dim);
  const std::uint8_t clear = in.u8();
  if (clear >= 0xe0) {
    const attnscore_status want_c = null_cache ? ATTNSCORE_ERR_NULL_POINTER
                                    : alien    ? ATTNSCORE_ERR_BAD_CACHE
                                               : ATTNSCORE_OK;
    if (api("kcache clear", [&] { return C::clear(handle); }) != want_c)
      fail("clear did not return %d", want_c);
    foreign.expect_untouched("foreign memory after clear");
    if (want_c == ATTNSCORE_OK) size = 0, keys.clear(), kscale.clear();
  }

  // Scores from the cache.
  std::size_t n_q = decode_rows(in, 19);
  if (size != 0 && d != 0 && n_q < 20)
    while (n_q * size * d > (std::size_t{1} << 16) && n_q > 1) n_q /= 2;
  ElemMat<T> q = make_mat<C>(in, &values, n_q, d);
  ElemMat<float> s = make_mat<C, float>(in, nullptr, n_q, size);
  const std::uint8_t smode = in.u8();
  // The int8 cache's query scales: 1 or n_q of them (or a wrong count), or NULL.
  const std::size_t qn = C::kScales ? decode_scale_count(in, n_q) : 1;
  const std::uint8_t qs_mode = C::kScales ? in.u8() : 0;
  std::vector<float> qsv(qn <= kMaxElems ? qn : 1);
  for (float &x : qsv) x = s8_scale_value(values, (qs_mode & 0xf0) == 0xf0 ? qs_mode : 0);
  const float *qsp = C::kScales && qs_mode == 0xef ? nullptr : qsv.data();
  const std::uint32_t scale_bits = decode_scale(in);
  const float scale = from_bits(scale_bits);
  const bool null_q = smode >= 0xf8 && (smode & 1), null_s = smode >= 0xf8 && (smode & 2);
  // S inside the cache's memory (refused if it meets the header or the keys' panels).
  float *sp = null_s ? nullptr : s.mem ? s.at(0, 0) : reinterpret_cast<float *>(foreign.p);
  float *s_in_cache = nullptr;
  if (valid && !alien && !null_s && smode % 8 == 6 && s.mem != nullptr && s.span != 0)
    s_in_cache = place_inside<float>(mem.p + offset, bytes, s.span * sizeof(float), in.u16());
  const bool s_inside = s_in_cache != nullptr;
  if (s_inside) sp = s_in_cache;
  const T *qp = null_q ? nullptr : q.mem ? q.at(0, 0) : reinterpret_cast<T *>(foreign.p);
  // (Query scales beyond what was allocated are never reached: the count check comes first.)
  want = predict_kcache_scores(null_cache, alien, n_q, size, d, qp, q.ld, sizeof(T), C::kScales,
                               qsp, qn, sp, s.ld, scale);
  std::snprintf(what, sizeof what,
                "attnscore_scores_%s_kcache(n_q %zu, ldq %zu, %zu keys of %zu, lds %zu, scale "
                "%#x, %zu query scales%s)",
                C::kName, n_q, q.ld, size, d, s.ld, scale_bits, qn,
                s_inside ? ", S inside the cache" : "");
  g_call = what;
  const bool works = want == ATTNSCORE_OK && n_q != 0 && size != 0;
  if (works && (!q.mem || (!s.mem && !s_inside))) return -1;  // valid, but too large to allocate
  mem.snapshot();
  if (q.mem) q.mem->snapshot();
  if (s.mem) s.mem->snapshot();
  const attnscore_status got =
      api(what, [&] { return C::scores(n_q, qp, q.ld, qsp, qn, handle, sp, s.ld, scale); });
  foreign.expect_untouched("foreign memory after scores");
  if (q.mem) q.mem->expect_untouched("Q after scores");
  const bool may_overlap =
      s_inside && (want == ATTNSCORE_OK || want == ATTNSCORE_ERR_BAD_QUANT_SCALE);
  if (got != want && !(may_overlap && got == ATTNSCORE_ERR_OVERLAP))
    fail("returned %d, expected %d", got, want);
  if (!works || got != ATTNSCORE_OK) {
    mem.expect_untouched("scores error or no-op");
    if (s.mem) s.mem->expect_untouched("S after an error");
    return 0;
  }
  // The raw call on the same keys, at the same level: the same bits (a NaN need only be a NaN).
  std::vector<float> ref(n_q * size), again(n_q * size);
  const attnscore_status rs = api("the raw call", [&] {
    return C::raw(n_q, size, d, q.at(0, 0), q.ld, qsp, qn, keys.data(), d, kscale.data(),
                  ref.data(), size, scale);
  });
  if (rs != ATTNSCORE_OK) fail("the raw call returned %d", rs);
  auto expect_ref = [&](const float *out, std::size_t ld, const char *when) {
    for (std::size_t i = 0; i < n_q; ++i)
      for (std::size_t j = 0; j < size; ++j) {
        float x;
        std::memcpy(&x, out + i * ld + j, sizeof x);
        const float y = ref[i * size + j];
        if (to_bits(x) != to_bits(y) && !(std::isnan(x) && std::isnan(y)))
          fail("%s: S[%zu][%zu] = %#x, the raw call %#x", when, i, j, to_bits(x), to_bits(y));
      }
  };
  expect_ref(sp, s.ld, "scores");
  // S written inside the cache's memory must have missed every key: a second call agrees.
  if (s_inside) {
    const attnscore_status st2 = api("the second call", [&] {
      return C::scores(n_q, qp, q.ld, qsp, qn, handle, again.data(), size, scale);
    });
    if (st2 != ATTNSCORE_OK) fail("the second call returned %d", st2);
    expect_ref(again.data(), size, "second call, after S was written inside the cache");
  }
  return 0;
}

using CallFn = int (*)(Input &, int cap);
const CallFn kCalls[] = {
    [](Input &in, int cap) { return fuzz_scores<F32>(in, Entry::kC, cap); },
    [](Input &in, int cap) { return fuzz_scores<F32>(in, Entry::kCpp, cap); },
    fuzz_queries,
    fuzz_kcache<CacheF32>,
    fuzz_attention,
    [](Input &in, int cap) { return f16_built() ? fuzz_scores<F16>(in, Entry::kC, cap) : -1; },
    [](Input &in, int cap) { return f16_built() ? fuzz_scores<F16>(in, Entry::kCpp, cap) : -1; },
    fuzz_s8,
    fuzz_convert,
    fuzz_f16_out,
    fuzz_quantize,
    fuzz_parallel,
    fuzz_kcache<CacheF16>,
    fuzz_kcache<CacheS8>,
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
#if FUZZ_ASAN
  static const bool hooked = __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free) != 0;
  (void)hooked;
#endif
  Input in(data, size);
  const CallFn fn = kCalls[in.u8() % (sizeof kCalls / sizeof kCalls[0])];
  // The cap is process-wide: start from none, then apply this input's (which may be rejected).
  set_cap(kBest);
  const int cap = decode_cap(in);
  g_call = "attnscore_set_max_level";
  const attnscore_status st =
      api("attnscore_set_max_level", [&] { return attnscore_set_max_level(as_level(cap)); });
  const bool valid = in_family(cap) || cap == kBest;
  if (st != (valid ? ATTNSCORE_OK : ATTNSCORE_ERR_UNKNOWN_LEVEL))
    fail("attnscore_set_max_level(%d) returned %d", cap, st);
  if (valid && cap != kBest) {
    const int in_force = api("attnscore_max_level", [] { return attnscore_max_level(); });
    if (in_force != cap) fail("cap %d set, attnscore_max_level() says %d", cap, in_force);
    // The kernel chosen: the best level this CPU supports not above the cap.
    int best = 0;
    for (int l : kFamily)
      if (cap_order(l) <= cap_order(cap) && attnscore_level_supported(as_level(l)) && !int8_only(l))
        best = l;
    const int chosen =
        api("attnscore_kernel_level", [] { return attnscore_kernel_level(ATTNSCORE_DTYPE_F32); });
    if (chosen != best) fail("cap %d: kernel level %d, expected %d", cap, chosen, best);
  }
  const int r = fn(in, cap);
  set_cap(kBest);
  return r;
}
