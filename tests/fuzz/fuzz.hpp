// SPDX-License-Identifier: Apache-2.0
// The fuzz target's shared parts: input decoding, levels, failure reports, the checked library
// call, memory arenas, status prediction, and the element models more than one section uses.
// Each section is a file of tests/fuzz/ (common.cpp holds what is declared here without a
// section of its own); fuzz_api.cpp lets the input pick one call of one section.
#ifndef ATTNSCORE_TESTS_FUZZ_FUZZ_HPP
#define ATTNSCORE_TESTS_FUZZ_FUZZ_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
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

// The checker's own loops need no coverage feedback (with it they would dominate the run time).
#if defined(__clang__) && __clang_major__ >= 13
#define FUZZ_UNGUIDED __attribute__((no_sanitize("coverage")))
#else
#define FUZZ_UNGUIDED
#endif

// The enum-taking calls as C callers make them (c_calls.c): any int as a dtype.
extern "C" {
int fuzz_c_convert(std::size_t n, int src_dtype, const void *src, int dst_dtype, void *dst);
int fuzz_c_quantize_s8(std::size_t n, std::size_t d, int src_dtype, const void *x, std::size_t ldx,
                       std::int8_t *out, std::size_t ldo, float *scales);
}

namespace fuzz {

using testing::from_bits;
using testing::kGuardBits;
using testing::to_bits;

// ---------------------------------------------------------------------------------------------
// Input decoding (common.cpp): fields read 0 once the input is exhausted; element values
// continue from a stream seeded by the whole input, so a short input still fills a large matrix.

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

// Sizes at size_t's edges, where element counts, byte counts or row offsets overflow.
std::size_t huge(Input &in, unsigned which);
// n_q and n_k: 0 ... 19, n_k also up to small_max, rarely huge.
std::size_t decode_rows(Input &in, std::size_t small_max);
// d: mostly 0 ... 39, then up to 599 and 2199, rarely huge.
std::size_t decode_d(Input &in);

// A row stride relative to the row length: tight, padded, short, zero, huge, or (kWrap) chosen
// once the address is known so that the extent ends just around the top of the address space.
struct Stride {
  std::size_t value;
  bool wrap;
  unsigned wrap_delta;
};
Stride decode_stride(Input &in, std::size_t cols);
// Scale bits: 0 (the default), -0, NaN, +-Inf, subnormals, the largest float, or any bits.
std::uint32_t decode_scale(Input &in);

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

// A scores or attention call of at most this many query rows on raw f32, f16 or bf16 K takes the
// decode path, which sums in another order than prefill and the key cache (docs/contract.md,
// "Summation order"): their bits are compared only within a path.
constexpr std::size_t kDecodeRows = 3;

struct LevelName {
  const char *name;
  int level;
};
constexpr LevelName kLevelNames[] = {
    {"scalar", 0},  {"sse2", 1},  {"avx2", 2},          {"avx512", 3},     {"avx512vnni", 4},
    {"avxvnni", 5}, {"neon", 16}, {"neon_dotprod", 17}, {"neon_i8mm", 18}, {"best", 255}};

// A level's place in the cap order (its index in kFamily), -1 outside the family.
int cap_order(int level);
bool in_family(int level);
inline attnscore_level as_level(int v) { return static_cast<attnscore_level>(v); }  // 0 ... 255
// Levels whose kernels are int8 only: f32 takes the best level below them (queries.cpp).
bool int8_only(int level);

// ---------------------------------------------------------------------------------------------
// Failure reports: the decoded call, then abort() so libFuzzer saves the input.

extern std::string g_call;  // description of the call being checked

[[noreturn]] __attribute__((format(printf, 1, 2))) void fail(const char *fmt, ...);

// Every library call goes through api(): no heap allocation inside it, FP controls unchanged.
// The count is this thread's, kept in common.cpp behind functions: GCC's UBSan reports a null
// store through another unit's extern thread_local.
void begin_counting_allocs();
unsigned long end_counting_allocs();  // allocations since begin_counting_allocs
#if FUZZ_ASAN
void on_malloc(const volatile void *, std::size_t);
void on_free(const volatile void *);
#endif

// FP control bits a scores case sets around each library call, as a caller may: 0, or the bits
// that flush subnormals (FTZ|DAZ on x86, FZ on aarch64).
extern std::uint64_t g_fp_extra;

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
  begin_counting_allocs();
  auto r = f();
  const unsigned long allocs = end_counting_allocs();
  const std::uint64_t after = testing::fp_control();
  if (g_fp_extra != 0) testing::set_fp_control(saved);
  if (allocs != 0) fail("%s allocated %lu times", what, allocs);
  if ((mode ^ after) & testing::fp_control_mask())
    fail("%s changed the FP controls: %#llx -> %#llx", what, static_cast<unsigned long long>(mode),
         static_cast<unsigned long long>(after));
  return r;
}

void set_cap(int level);

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

bool checked_mul(std::size_t a, std::size_t b, std::size_t *r);
bool checked_add(std::size_t a, std::size_t b, std::size_t *r);
// Elements from the first to the last of a matrix; false if that does not fit in size_t.
bool span_elems(std::size_t rows, std::size_t cols, std::size_t ld, std::size_t *n);
// Bytes a matrix takes in its arena (one element for a placeholder).
long long length(const Mat &m);

class Memory {
 public:
  Memory() = default;
  Memory(const Memory &) = delete;
  Memory &operator=(const Memory &) = delete;
  ~Memory();

  Arena arenas[3];

  // Allocates the arenas for the placed matrices (64-byte aligned bases) and fills them with
  // the guard bits, a signalling NaN that no arithmetic produces.
  FUZZ_UNGUIDED void allocate(Mat *const *mats, int n);
  FUZZ_UNGUIDED void snapshot();
  // Poisons every arena byte outside the described matrices: ASan then reports any access to a
  // row gap or a leading pad, not only past the arena.
  FUZZ_UNGUIDED void arm(Mat *const *mats, int n);
  void disarm();
  FUZZ_UNGUIDED void restore();
  // Every arena byte equals its snapshot, except the elements of `out` (when given: a
  // successful call's S, whose rows are disjoint and ascending since lds >= n_k).
  FUZZ_UNGUIDED void expect_untouched(const Mat *out, const char *when) const;

 private:
  FUZZ_UNGUIDED void expect_same(int a, std::size_t from, std::size_t to, const char *when) const;
};

// Strides chosen from the address (Stride::wrap): extents ending just around the top.
void set_wrap_strides(Mat *const *mats, int n);
// Where a matrix of n bytes goes relative to a partner of m bytes at p in the same arena (in
// bytes; `unit` is the moving matrix's element size).
long long snap(unsigned mode, long long p, long long m, long long n, long long unit,
               std::uint16_t r);

// ---------------------------------------------------------------------------------------------
// Status prediction from the documented rules (common.cpp).

struct Extent {
  bool ok;
  std::uintptr_t lo, hi;  // [lo, hi)
};
Extent extent(const void *p, std::size_t rows, std::size_t cols, std::size_t ld, std::size_t elem);
bool meets(const Extent &a, const Extent &b);

struct Args {  // one scores call as the C API sees it
  std::size_t n_q, n_k, d, ldq, ldk, lds;
  const void *q, *k;
  void *s;
  float scale;
  std::size_t elem_in;  // bytes per Q and K element
};

// NaN, +-Inf or subnormal (by its bits: a caller's DAZ must not turn a subnormal into 0).
bool scale_rejected(float scale);
attnscore_status predict_scores(const Args &a);

// ---------------------------------------------------------------------------------------------
// The element models (scores.cpp): value generators, and the f32, f16 and bf16 scores calls.

struct F32 {
  using T = float;
  static constexpr const char *kName = "f32";
  static constexpr attnscore_dtype kDtype = ATTNSCORE_DTYPE_F32;
  static constexpr const char *kCName = "attnscore_scores_f32";
  static constexpr bool kViews = true;     // has a C++ view type (attnscore::scores)
  static constexpr bool kF32Bits = false;  // documented as the f32 call's bits
  static float f(float v) { return v; }
  static float value(Input &in, unsigned mode, int exp);
  static attnscore_status call_c(const Args &a);
  static attnscore_status call_cpp(const attnscore::MatrixView<const float> &q,
                                   const attnscore::MatrixView<const float> &k,
                                   const attnscore::MatrixView<float> &s, float scale);
  // The contract's bound (docs/contract.md, "f32 scores").
  static double bound(std::size_t d, double gauge, float scale);
};

// Binary16 values by the tests' one binary16 oracle (support.hpp: the format's own rule, never
// the library's converters): f16_nearest(x) rounds to the nearest binary16's bits (the bits of x
// itself when x is a binary16 value), half_value(h) is the value of h as a float (exact).
using testing::f16_nearest;
inline float half_value(std::uint16_t h) { return static_cast<float>(testing::f16_value(h)); }

struct F16 {
  using T = attnscore::f16;
  static constexpr const char *kName = "f16";
  static constexpr attnscore_dtype kDtype = ATTNSCORE_DTYPE_F16;
  static constexpr const char *kCName = "attnscore_scores_f16";
  static constexpr bool kViews = true;
  static constexpr bool kF32Bits = false;
  static float f(T v) { return half_value(v.bits); }
  static T value(Input &in, unsigned mode, int exp);
  static attnscore_status call_c(const Args &a);
  static attnscore_status call_cpp(const attnscore::MatrixView<const T> &q,
                                   const attnscore::MatrixView<const T> &k,
                                   const attnscore::MatrixView<float> &s, float scale);
  // Products of binary16 values are exact in f32: the same bound as f32 (docs/contract.md).
  static double bound(std::size_t d, double gauge, float scale);
};

// bfloat16 by the tests' bfloat16 oracle (support.hpp), as binary16 above: bf16_nearest(x) the
// nearest bfloat16's bits, bf16_float(h) the value of h (exact; a NaN's payload not kept).
using testing::bf16_nearest;
inline float bf16_float(std::uint16_t h) { return static_cast<float>(testing::bf16_value(h)); }

// bfloat16 bits: the C++ API has no bfloat16 view type, so only the C call is fuzzed.
struct Bf16Bits {
  std::uint16_t bits;
};

struct BF16 {
  using T = Bf16Bits;
  static constexpr const char *kName = "bf16";
  static constexpr attnscore_dtype kDtype = ATTNSCORE_DTYPE_BF16;
  static constexpr const char *kCName = "attnscore_scores_bf16";
  static constexpr bool kViews = false;
  static constexpr bool kF32Bits = true;  // attnscore.h: bit for bit, at the same level
  static float f(T v) { return bf16_float(v.bits); }
  static T value(Input &in, unsigned mode, int exp);
  static attnscore_status call_c(const Args &a);
  // Products of bfloat16 values are f32 products: the f32 bound (docs/contract.md).
  static double bound(std::size_t d, double gauge, float scale);
};

// Whether this build has the f16 path (a build without it answers ATTNSCORE_ERR_UNKNOWN_DTYPE);
// it covers bfloat16 too.
bool f16_built();
// Whether this build has the int8 path (queries.cpp).
bool s8_built();
// Any int as a dtype: whether this build has it (common.cpp), and its bytes per element.
bool dtype_built(int dtype);
std::size_t dtype_bytes(int dtype);
double gamma_n(std::size_t n);

// The int8 model (s8.cpp): scale counts 1, n or wrong; scale values; int8 values; a result a
// flushing mode may give as 0.
std::size_t decode_scale_count(Input &in, std::size_t n);
float s8_scale_value(Input &in, unsigned mode);
std::int8_t s8_value(Input &in, unsigned mode);
FUZZ_UNGUIDED float flush(float x);

// ---------------------------------------------------------------------------------------------
// attnscore_attention (attention.cpp), shared with the parallel, cache and f16 sections.

// Elements from the first to the last of a heads x rows x cols tensor; false on overflow.
bool span3(std::size_t heads, std::size_t rows, std::size_t cols, std::size_t hs, std::size_t rs,
           std::size_t *n);
// Its extent as an address range.
Extent extent3(const void *p, std::size_t heads, std::size_t rows, std::size_t cols, std::size_t hs,
               std::size_t rs, std::size_t elem);

// What the fuzzer knows of a cache it passes as K.
struct CacheFacts {
  bool valid;  // a handle init returned (else BAD_CACHE)
  int dtype;
  std::size_t heads, d, size;
  const void *mem;  // the memory given to init
  std::size_t bytes;
};
// The status from the check order (lib/src/api/attention.cpp `check`); with count_cache, S
// meeting the cache's memory counts as OVERLAP (the cache uses only a part of that memory).
// Without scores: those checks without S's, the first part of attnscore_attention_output's.
attnscore_status predict_attention(const attnscore_attention_desc &a, const CacheFacts *c,
                                   bool count_cache, bool scores = true);

// The attention section's helpers the output section shares.
// Heads (and rows) of a heads x rows x cols tensor pairwise disjoint: rows nested in heads, or
// heads nested in rows (the documented BAD_HEAD_STRIDE rule).
bool nested(std::size_t heads, std::size_t rows, std::size_t cols, std::size_t hs, std::size_t rs);
bool bad_float(float f);  // NaN, +-Inf or subnormal, by its bits
int dtype_int(const attnscore_dtype &e);
// A dtype this build has (output: also f32 or f16, as S and O are).
bool dtype_known(int dtype, bool output);
// Every scale of an s8 tensor usable (rows per head: 1 when scale_row_stride is 0).
bool scales_usable(const attnscore_tensor &t, std::size_t heads, std::size_t rows);
// A stride: the layout's default `dflt`, short by 1 ... 4, or huge.
std::size_t decode_attn_stride(Input &in, std::size_t dflt);
// A tensor's default strides: head-major (code 0), padded (1, 3), or token-major (2).
void attn_layout(unsigned code, std::size_t heads, std::size_t rows, std::size_t cols,
                 std::size_t *hs, std::size_t *rs);
// A softcap: none (+-0), 1.5, 30, or bad (negative, NaN, Inf, subnormal, any bits).
float decode_softcap(Input &in);

// A byte buffer holding elements of `elem` bytes (memcpy access: any element type).
struct Buf {
  std::vector<unsigned char> b;
  std::size_t elem = 4;
  void *at(std::size_t x) { return b.data() + x * elem; }
  float f32(std::size_t x) const {
    float v;
    std::memcpy(&v, b.data() + x * 4, 4);
    return v;
  }
  std::uint16_t u16(std::size_t x) const {
    std::uint16_t v;
    std::memcpy(&v, b.data() + x * 2, 2);
    return v;
  }
};

// Typed copies of the int8 values r of a tensor: f32 r / 64, binary16 or bfloat16 of that (all
// exact), or int8 r.
Buf typed(const std::vector<std::int8_t> &r, int dtype, std::size_t extra_bytes = 0);
// An s8 tensor's scales: per row (0), per head (1), per tensor (2), or a row stride of 2 (3: a
// bad count); the buffer as long as their extent.
void scale_layout(unsigned mode, std::size_t heads, std::size_t rows, attnscore_tensor *t,
                  std::vector<float> *v, Input &values);

// A parallel-for that runs the tasks on this thread in an order the input picks, counting calls.
struct Hook {
  unsigned order = 0;
  std::size_t calls = 0, tasks = 0;
};
void run_tasks(void *pool_ctx, attnscore_task_fn fn, void *task_ctx, std::size_t n_tasks);

// One attention case: Q and K's dtype or S's forced (-1: from the input), a parallel-for the
// section makes the call through (nullptr: from the input; then `hook` is its context).
struct AttnOpts {
  int qk = -1, s = -1;
  const attnscore_parallel *par = nullptr;
  Hook *hook = nullptr;
};
int attention_case(Input &in, int cap, const AttnOpts &o);

// ---------------------------------------------------------------------------------------------
// The sections' calls, as fuzz_api.cpp's table lists them: each decodes the rest of the input
// under the level cap `cap`, returns 0, or -1 for an input it does not use.

int fuzz_scores_f32_c(Input &in, int cap);
int fuzz_scores_f32_cpp(Input &in, int cap);
int fuzz_scores_f16_c(Input &in, int cap);
int fuzz_scores_f16_cpp(Input &in, int cap);
int fuzz_queries(Input &in, int cap);
int fuzz_attention(Input &in, int cap);
int fuzz_s8(Input &in, int cap);
int fuzz_convert(Input &in, int cap);
int fuzz_f16_out(Input &in, int cap);
int fuzz_quantize(Input &in, int cap);
int fuzz_parallel(Input &in, int cap);
int fuzz_kcache_f32(Input &in, int cap);
int fuzz_kcache_f16(Input &in, int cap);
int fuzz_kcache_s8(Input &in, int cap);
int fuzz_scores_bf16_c(Input &in, int cap);
int fuzz_kcache_bf16(Input &in, int cap);
int fuzz_attention_output(Input &in, int cap);

}  // namespace fuzz

#endif  // ATTNSCORE_TESTS_FUZZ_FUZZ_HPP
