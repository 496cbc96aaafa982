// SPDX-License-Identifier: Apache-2.0
// Guard pages: every kernel and the public API on matrices flush against a PROT_NONE page, after
// their last byte or before their first, so one element read or written outside them faults.
// A fault (SIGSEGV) ends the run: that is the failure signal. Needs no sanitizer, so it holds in
// Release builds and under emulators.
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attnscore/attnscore.hpp"
#include "dispatch/kernels.h"
#include "support.hpp"

using attnscore::KernelF32;

namespace {

// Whole pages between two PROT_NONE pages.
class GuardedArea {
 public:
  explicit GuardedArea(std::size_t bytes) : page_(static_cast<std::size_t>(sysconf(_SC_PAGESIZE))) {
    usable_ = (bytes + page_ - 1) / page_ * page_;
    if (usable_ == 0) usable_ = page_;
    void *p = mmap(nullptr, usable_ + 2 * page_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
    base_ = static_cast<unsigned char *>(p);
    REQUIRE(mprotect(base_, page_, PROT_NONE) == 0);
    REQUIRE(mprotect(base_ + page_ + usable_, page_, PROT_NONE) == 0);
  }
  ~GuardedArea() { munmap(base_, usable_ + 2 * page_); }
  GuardedArea(const GuardedArea &) = delete;
  GuardedArea &operator=(const GuardedArea &) = delete;

  // The start of `bytes` whose last byte is the last one before the upper guard page, or whose
  // first byte is the first one after the lower guard page.
  template <class T>
  T *place(std::size_t bytes, bool flush_end) {
    if (bytes > usable_) FAIL("area too small");
    unsigned char *p = flush_end ? base_ + page_ + usable_ - bytes : base_ + page_;
    return reinterpret_cast<T *>(p);
  }

 private:
  std::size_t page_, usable_ = 0;
  unsigned char *base_ = nullptr;
};

// What the case in progress is, printed if it faults (formatted before the call: a signal
// handler can only write it).
char g_case[256];

// Prints g_case on SIGSEGV/SIGBUS, then hands the signal to the previous handler (Catch2's,
// which names the test case) by returning with it restored: the access faults again.
class FaultReporter {
 public:
  FaultReporter() {
    struct sigaction sa {};
    sa.sa_handler = on_fault;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old_segv_);
    sigaction(SIGBUS, &sa, &old_bus_);
  }
  ~FaultReporter() { restore(); }
  FaultReporter(const FaultReporter &) = delete;
  FaultReporter &operator=(const FaultReporter &) = delete;

 private:
  static struct sigaction old_segv_, old_bus_;
  static void restore() {
    sigaction(SIGSEGV, &old_segv_, nullptr);
    sigaction(SIGBUS, &old_bus_, nullptr);
  }
  static void on_fault(int) {
    static const char head[] = "\nguard page hit (read or write outside the matrices) in: ";
    ssize_t r = write(2, head, sizeof head - 1);
    r = write(2, g_case, strnlen(g_case, sizeof g_case));
    r = write(2, "\n", 1);
    (void)r;
    restore();
  }
};
struct sigaction FaultReporter::old_segv_, FaultReporter::old_bus_;

std::vector<const KernelF32 *> usable_f32() { return testing::usable_kernels_f32(); }

// Inputs per dtype: small integers as the element type (binary16 bits for f16), so sums are
// exact. int8 runs with one scale of 1 for Q and K: (float)acc * ((1 * scale) * 1) is the same
// fl(sum * scale).
template <class T>
T from_int(int v) {
  return static_cast<T>(v);
}
template <>
inline std::uint16_t from_int<std::uint16_t>(int v) {  // exact: small integers are f16 values
  return testing::f16_nearest(v);
}
// A bfloat16 element (its bits), distinct from binary16's in the sweeps' element type.
struct BF16 {
  std::uint16_t bits;
};
template <>
inline BF16 from_int<BF16>(int v) {  // exact: small integers are bf16 values
  return {testing::bf16_nearest(v)};
}

// d where vector bodies, tails and chunks of d begin and end; the long ones get fewer shapes.
std::vector<std::size_t> short_d() {
  std::vector<std::size_t> ds;
  for (std::size_t d = 1; d <= 33; ++d) ds.push_back(d);
  for (std::size_t d : {63, 64, 65, 127, 128}) ds.push_back(d);
  return ds;
}
const std::size_t kLongD[] = {255, 256, 257, 511, 512, 513, 1023, 1024, 1025, 2049};

std::vector<std::size_t> all_up_to(std::size_t n) {
  std::vector<std::size_t> v;
  for (std::size_t i = 1; i <= n; ++i) v.push_back(i);
  return v;
}

// 1, the tile's edges and two tiles plus one (deduplicated, ascending).
std::vector<std::size_t> edges(std::size_t tile) {
  std::vector<std::size_t> v;
  for (std::size_t n : {std::size_t{1}, tile - 1, tile, tile + 1, 2 * tile + 1})
    if (n >= 1 && (v.empty() || n > v.back())) v.push_back(n);
  return v;
}

// Q and K of small integers for the largest shape, and the exact expected scores: any
// summation order gives fl(sum * scale), so every level and kernel is checked bit for bit.
template <class T>
struct Problem {
  std::size_t max_q, max_k, d;
  float scale;
  std::vector<T> q, k;
  std::vector<float> want;
  std::vector<double> gauge;  // sum of |q_t k_t| per score (for the f16-accumulation bound)
  Problem(std::size_t max_q_, std::size_t max_k_, std::size_t d_, std::mt19937 &rng)
      : max_q(max_q_),
        max_k(max_k_),
        d(d_),
        scale(attnscore_default_scale(d_)),
        q(max_q_ * d_),
        k(max_k_ * d_),
        want(max_q_ * max_k_),
        gauge(max_q_ * max_k_) {
    std::uniform_int_distribution<int> dist(-3, 3);
    std::vector<int> qi(q.size()), ki(k.size());
    for (std::size_t x = 0; x < q.size(); ++x) q[x] = from_int<T>(qi[x] = dist(rng));
    for (std::size_t x = 0; x < k.size(); ++x) k[x] = from_int<T>(ki[x] = dist(rng));
    for (std::size_t i = 0; i < max_q; ++i)
      for (std::size_t j = 0; j < max_k; ++j) {
        double sum = 0, g = 0;
        for (std::size_t t = 0; t < d; ++t) {
          sum += qi[i * d + t] * ki[j * d + t];
          g += std::abs(qi[i * d + t] * ki[j * d + t]);
        }
        gauge[i * max_k + j] = g;
        want[i * max_k + j] = static_cast<float>(sum * static_cast<double>(scale));
      }
  }
};

template <class T = float>
std::size_t span_bytes(std::size_t rows, std::size_t cols, std::size_t ld) {
  return ((rows - 1) * ld + cols) * sizeof(T);
}

// Copies rows x cols of `src` (dense) to `dst` at stride ld, the gaps between rows poisoned.
template <class T>
void put(T *dst, const T *src, std::size_t rows, std::size_t cols, std::size_t ld) {
  for (std::size_t i = 0; i < rows; ++i) {
    std::memcpy(dst + i * ld, src + i * cols, cols * sizeof(T));
    if (i + 1 < rows) std::memset(dst + i * ld + cols, 0xa5, (ld - cols) * sizeof(T));
  }
}

// The three areas of one d, sized for its largest shape and stride.
struct Areas {
  GuardedArea q, k, s;
  template <class T>
  Areas(const Problem<T> &p, std::size_t pad)
      : q(span_bytes<T>(p.max_q, p.d, p.d + pad)),
        k(span_bytes<T>(p.max_k, p.d, p.d + pad)),
        s(span_bytes(p.max_q, p.max_k, p.max_k + pad)) {}
};

template <class T>
using Call = void (*)(const void *ctx, std::size_t n_q, std::size_t n_k, std::size_t d, const T *q,
                      std::size_t ldq, const T *k, std::size_t ldk, float *s, std::size_t lds,
                      float scale);

// One call with Q, K and S each flush against a guard (after its end or before its start);
// checks every element of S exactly and S's row gaps untouched. Returns "" or the first error.
// exact: every score bit for bit; otherwise (an f16-accumulating kernel) within its bound.
template <class T>
std::string run_guarded(Areas &areas, const Problem<T> &p, std::size_t n_q, std::size_t n_k,
                        std::size_t pad, bool flush_end, Call<T> call, const void *ctx,
                        const char *who, bool exact = true) {
  const std::size_t d = p.d, ldq = d + pad, ldk = d + pad, lds = n_k + pad;
  std::snprintf(g_case, sizeof g_case, "%s: n_q %zu n_k %zu d %zu ld pad %zu, flush against the %s",
                who, n_q, n_k, d, pad, flush_end ? "guard after" : "guard before");
  T *q = areas.q.place<T>(span_bytes<T>(n_q, d, ldq), flush_end);
  T *k = areas.k.place<T>(span_bytes<T>(n_k, d, ldk), flush_end);
  const std::size_t s_bytes = span_bytes(n_q, n_k, lds);
  float *s = areas.s.place<float>(s_bytes, flush_end);
  put(q, p.q.data(), n_q, d, ldq);
  put(k, p.k.data(), n_k, d, ldk);
  std::fill(s, s + s_bytes / sizeof(float), testing::from_bits(testing::kGuardBits));
  call(ctx, n_q, n_k, d, q, ldq, k, ldk, s, lds, p.scale);
  for (std::size_t i = 0; i < n_q; ++i) {
    for (std::size_t j = 0; j < lds && i * lds + j < s_bytes / sizeof(float); ++j) {
      const float got = s[i * lds + j];
      const float want = p.want[i * p.max_k + j];
      const bool close = exact ? testing::to_bits(got) == testing::to_bits(want)
                               : std::fabs(static_cast<double>(got) - want) <=
                                     testing::f16acc_bound(d, p.gauge[i * p.max_k + j], p.scale) +
                                         std::fabs(want) * 0x1p-24;
      const bool ok = j < n_k ? close : testing::to_bits(got) == testing::kGuardBits;
      if (!ok) {
        char msg[128];
        std::snprintf(msg, sizeof msg, ": S[%zu][%zu] = %.9g, expected %s", i, j,
                      static_cast<double>(got), j < n_k ? "the exact score" : "untouched gap");
        return g_case + std::string(msg);
      }
    }
  }
  return "";
}

void call_kernel(const void *ctx, std::size_t n_q, std::size_t n_k, std::size_t d, const float *q,
                 std::size_t ldq, const float *k, std::size_t ldk, float *s, std::size_t lds,
                 float scale) {
  attnscore::run_f32(*static_cast<const KernelF32 *>(ctx), n_q, n_k, d, q, ldq, k, ldk, s, lds,
                     scale);
}

#if ATTNSCORE_HAVE_F16
void call_kernel_f16(const void *ctx, std::size_t n_q, std::size_t n_k, std::size_t d,
                     const std::uint16_t *q, std::size_t ldq, const std::uint16_t *k,
                     std::size_t ldk, float *s, std::size_t lds, float scale) {
  attnscore::run_f16(*static_cast<const attnscore::KernelF16 *>(ctx), n_q, n_k, d, q, ldq, k, ldk,
                     s, lds, scale);
}

const std::uint16_t *bits(const BF16 *p) { return reinterpret_cast<const std::uint16_t *>(p); }

void call_kernel_bf16(const void *ctx, std::size_t n_q, std::size_t n_k, std::size_t d,
                      const BF16 *q, std::size_t ldq, const BF16 *k, std::size_t ldk, float *s,
                      std::size_t lds, float scale) {
  attnscore::run_bf16(*static_cast<const attnscore::KernelF16 *>(ctx), n_q, n_k, d, bits(q), ldq,
                      bits(k), ldk, s, lds, scale);
}
#endif

#if ATTNSCORE_HAVE_S8
const float kOne = 1.0f;
void call_kernel_s8(const void *ctx, std::size_t n_q, std::size_t n_k, std::size_t d,
                    const std::int8_t *q, std::size_t ldq, const std::int8_t *k, std::size_t ldk,
                    float *s, std::size_t lds, float scale) {
  attnscore::run_s8(*static_cast<const attnscore::KernelS8 *>(ctx), n_q, n_k, d, q, ldq, &kOne, 0,
                    k, ldk, &kOne, 0, s, lds, scale);
}
#endif

// Every kernel of one dtype: each shape up to two tiles plus one for short d, the tile edges
// for long d, tight and padded strides, flush against the guard after and before.
template <class T, class Kernel>
void sweep_kernel(const Kernel *kernel, std::size_t mr, std::size_t nr, Call<T> call,
                  bool exact = true) {
  FaultReporter reporter;
  std::mt19937 rng(2024);
  const std::size_t max_q = 2 * mr + 1, max_k = 2 * nr + 1;
  std::size_t cases = 0;
  auto sweep = [&](std::size_t d, const std::vector<std::size_t> &qs,
                   const std::vector<std::size_t> &ks) {
    const Problem<T> p(max_q, max_k, d, rng);
    for (std::size_t pad : {0, 3}) {
      Areas areas(p, pad);
      for (bool flush_end : {true, false})
        for (std::size_t n_q : qs)
          for (std::size_t n_k : ks) {
            const std::string err = run_guarded<T>(areas, p, n_q, n_k, pad, flush_end, call, kernel,
                                                   kernel->name, exact);
            if (!err.empty()) FAIL(err);
            ++cases;
          }
    }
  };
  for (std::size_t d : short_d()) sweep(d, testing::row_counts(mr), all_up_to(max_k));
  for (std::size_t d : kLongD) sweep(d, edges(mr), edges(nr));
  CHECK(cases > 0);
}

// The C API, or (ctx non-null) the C++ wrapper. Every call here is valid: any other status
// than OK aborts with the case.
void call_api(const void *ctx, std::size_t n_q, std::size_t n_k, std::size_t d, const float *q,
              std::size_t ldq, const float *k, std::size_t ldk, float *s, std::size_t lds,
              float scale) {
  attnscore_status st;
  if (ctx == nullptr) {
    st = attnscore_scores_f32(n_q, n_k, d, q, ldq, k, ldk, s, lds, scale);
  } else {
    st = attnscore::scores(attnscore::MatrixView<const float>(q, n_q, d, ldq),
                           attnscore::MatrixView<const float>(k, n_k, d, ldk),
                           attnscore::MatrixView<float>(s, n_q, n_k, lds), scale);
  }
  if (st != ATTNSCORE_OK) {
    std::fprintf(stderr, "%s: status %d\n", g_case, st);
    std::abort();
  }
}

using testing::CapGuard;
using testing::runnable_levels;

}  // namespace

TEST_CASE("every f32 kernel: Q, K and S flush against guard pages", "[guard][kernels][f32]") {
  const KernelF32 *kernel = GENERATE(from_range(usable_f32()));
  CAPTURE(kernel->name);
  sweep_kernel<float>(kernel, kernel->mr, kernel->nr, call_kernel);
}

#if ATTNSCORE_HAVE_F16
TEST_CASE("every f16 kernel: Q, K and S flush against guard pages", "[guard][kernels][f16]") {
  const attnscore::KernelF16 *kernel = GENERATE(from_range(testing::usable_kernels_f16()));
  CAPTURE(kernel->name);
  // An f16-accumulating row has its own tile and its bound (its f32-path members are null).
  if (kernel->acc != nullptr)
    sweep_kernel<std::uint16_t>(kernel, kernel->acc_mr, kernel->acc_nr, call_kernel_f16, false);
  else
    sweep_kernel<std::uint16_t>(kernel, kernel->f32->mr, kernel->f32->nr, call_kernel_f16);
}

TEST_CASE("every bf16 kernel: Q, K and S flush against guard pages", "[guard][kernels][bf16]") {
  const attnscore::KernelF16 *kernel = GENERATE(from_range(testing::usable_kernels_bf16()));
  CAPTURE(kernel->name);
  // The dot-product row: its own tile (exact on these small integers, as every kernel).
  if (kernel->dot != nullptr)
    sweep_kernel<BF16>(kernel, kernel->dot_mr, kernel->dot_nr, call_kernel_bf16);
  else
    sweep_kernel<BF16>(kernel, kernel->f32->mr, kernel->f32->nr, call_kernel_bf16);
}
#endif

#if ATTNSCORE_HAVE_S8
TEST_CASE("every int8 kernel: Q, K and S flush against guard pages", "[guard][kernels][s8]") {
  const attnscore::KernelS8 *kernel = GENERATE(from_range(testing::usable_kernels_s8()));
  CAPTURE(kernel->name);
  sweep_kernel<std::int8_t>(kernel, kernel->mr, kernel->nr, call_kernel_s8);
}
#endif

namespace {

// The public call of one dtype at every runnable level, around the tile edges of the kernel it
// picks (whose mr and nr `tile` gives for the kernel name).
template <class T>
void sweep_api(attnscore_dtype dtype, Call<T> call, const char *who,
               void (*tile)(const std::string &, std::size_t *, std::size_t *)) {
  CapGuard cap;
  const attnscore_level level = GENERATE(from_range(runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  const std::string name = attnscore_kernel_name(dtype);
  CAPTURE(name);
  std::size_t mr = 0, nr = 0;
  tile(name, &mr, &nr);
  REQUIRE(mr != 0);
  FaultReporter reporter;
  std::mt19937 rng(77);
  const std::vector<std::size_t> qs = edges(mr), ks = edges(nr);
  std::vector<std::size_t> ds = short_d();
  ds.insert(ds.end(), std::begin(kLongD), std::end(kLongD));
  unsigned variant = 0;
  for (std::size_t d : ds) {
    const Problem<T> p(qs.back(), ks.back(), d, rng);
    for (std::size_t pad : {0, 1}) {
      Areas areas(p, pad);
      for (bool flush_end : {true, false})
        for (std::size_t n_q : qs)
          for (std::size_t n_k : ks) {
            // ctx alternates null and non-null (the f32 call's C++ wrapper).
            const bool alt = ++variant % 2 == 0;
            const std::string err = run_guarded<T>(areas, p, n_q, n_k, pad, flush_end, call,
                                                   alt ? &variant : nullptr, who);
            if (!err.empty()) FAIL(err);
          }
    }
  }
}

void tile_f32(const std::string &name, std::size_t *mr, std::size_t *nr) {
  const KernelF32 *k = testing::kernel_f32(name);
  if (k != nullptr) *mr = k->mr, *nr = k->nr;
}

}  // namespace

TEST_CASE("public API at every level: Q, K and S flush against guard pages", "[guard][api]") {
  sweep_api<float>(ATTNSCORE_DTYPE_F32, call_api, "C API or attnscore::scores", tile_f32);
}

#if ATTNSCORE_HAVE_F16
namespace {
void call_api_f16(const void *, std::size_t n_q, std::size_t n_k, std::size_t d,
                  const std::uint16_t *q, std::size_t ldq, const std::uint16_t *k, std::size_t ldk,
                  float *s, std::size_t lds, float scale) {
  const attnscore_status st = attnscore_scores_f16(n_q, n_k, d, q, ldq, k, ldk, s, lds, scale);
  if (st != ATTNSCORE_OK) {
    std::fprintf(stderr, "%s: status %d\n", g_case, st);
    std::abort();
  }
}

void tile_f16(const std::string &name, std::size_t *mr, std::size_t *nr) {
  for (const attnscore::KernelF16 *k : testing::usable_kernels_f16())
    if (name == k->name && k->acc == nullptr) *mr = k->f32->mr, *nr = k->f32->nr;
}

void call_api_bf16(const void *, std::size_t n_q, std::size_t n_k, std::size_t d, const BF16 *q,
                   std::size_t ldq, const BF16 *k, std::size_t ldk, float *s, std::size_t lds,
                   float scale) {
  const attnscore_status st =
      attnscore_scores_bf16(n_q, n_k, d, bits(q), ldq, bits(k), ldk, s, lds, scale);
  if (st != ATTNSCORE_OK) {
    std::fprintf(stderr, "%s: status %d\n", g_case, st);
    std::abort();
  }
}

void tile_bf16(const std::string &name, std::size_t *mr, std::size_t *nr) {
  for (const attnscore::KernelF16 *k : testing::usable_kernels_bf16())
    if (name == k->name && k->dot == nullptr) *mr = k->f32->mr, *nr = k->f32->nr;
}

}  // namespace

TEST_CASE("public f16 API at every level: Q, K and S flush against guard pages", "[guard][api]") {
  sweep_api<std::uint16_t>(ATTNSCORE_DTYPE_F16, call_api_f16, "attnscore_scores_f16", tile_f16);
}

TEST_CASE("public bf16 API at every level: Q, K and S flush against guard pages",
          "[guard][api][bf16]") {
  sweep_api<BF16>(ATTNSCORE_DTYPE_BF16, call_api_bf16, "attnscore_scores_bf16", tile_bf16);
}
#endif

#if ATTNSCORE_HAVE_S8
namespace {
// Per-tensor scales, or (ctx non-null) one scale per row and per key (all 1), read from arrays
// that end against a guard page too.
void call_api_s8(const void *ctx, std::size_t n_q, std::size_t n_k, std::size_t d,
                 const std::int8_t *q, std::size_t ldq, const std::int8_t *k, std::size_t ldk,
                 float *s, std::size_t lds, float scale) {
  static GuardedArea qs_area(256 * sizeof(float)), ks_area(256 * sizeof(float));
  const std::size_t qn = ctx != nullptr ? n_q : 1, kn = ctx != nullptr ? n_k : 1;
  float *qs = qs_area.place<float>(qn * sizeof(float), true);
  float *ks = ks_area.place<float>(kn * sizeof(float), true);
  std::fill(qs, qs + qn, 1.0f);
  std::fill(ks, ks + kn, 1.0f);
  const attnscore_status st =
      attnscore_scores_s8(n_q, n_k, d, q, ldq, qs, qn, k, ldk, ks, kn, s, lds, scale);
  if (st != ATTNSCORE_OK) {
    std::fprintf(stderr, "%s: status %d\n", g_case, st);
    std::abort();
  }
}

void tile_s8(const std::string &name, std::size_t *mr, std::size_t *nr) {
  for (const attnscore::KernelS8 *k : testing::usable_kernels_s8())
    if (name == k->name) *mr = k->mr, *nr = k->nr;
}

}  // namespace

TEST_CASE("public int8 API at every level: Q, K, S and scales flush against guard pages",
          "[guard][api]") {
  sweep_api<std::int8_t>(ATTNSCORE_DTYPE_S8, call_api_s8, "attnscore_scores_s8", tile_s8);
}
#endif

namespace {

// The parallel-for of the calls given a `par`: the call splits its work for par.threads threads,
// and the tasks run one after another on this thread (no thread started, so it runs the same
// under every emulator).
void serial_for(void *, attnscore_task_fn fn, void *task_ctx, std::size_t n_tasks) {
  for (std::size_t i = 0; i < n_tasks; ++i) fn(task_ctx, i);
}

// The attention calls: 4 query heads on 2 KV heads, and the sizes swept.
constexpr std::size_t kHq = 4, kHkv = 2, kMaxD = 129, kMaxQ = 17, kMaxK = 70;
const std::size_t kAttnD[] = {1, 8, 17, kMaxD}, kAttnQ[] = {1, 7, kMaxQ},
                  kAttnK[] = {1, 16, 33, kMaxK};

// One attention call's kind: the dtype of Q and K, S's, K raw or from a key cache, and the
// threads of the serial parallel-for (0: par NULL).
struct AttnRun {
  attnscore_dtype dtype, s_dtype;
  bool cache;
  std::size_t threads;
};

// The areas of one level's attention calls, sized for the largest shape of any dtype (and
// `cache_bytes`, the largest cache); each call places its buffers in them.
struct AttnAreas {
  GuardedArea q, k, s, q_scale, k_scale, cache;
  explicit AttnAreas(std::size_t cache_bytes)
      : q(kHq * kMaxQ * kMaxD * sizeof(float)),
        k(kHkv * kMaxK * kMaxD * sizeof(float)),
        s(kHq * kMaxQ * kMaxK * sizeof(float)),
        q_scale(kHq * kMaxQ * sizeof(float)),
        k_scale(kHkv * kMaxK * sizeof(float)),
        cache(cache_bytes) {}
};

const char *dtype_name(attnscore_dtype t) {
  return t == ATTNSCORE_DTYPE_F32    ? "f32"
         : t == ATTNSCORE_DTYPE_F16  ? "f16"
         : t == ATTNSCORE_DTYPE_BF16 ? "bf16"
                                     : "s8";
}

std::size_t dtype_bytes(attnscore_dtype t) {
  return t == ATTNSCORE_DTYPE_F32 ? 4 : t == ATTNSCORE_DTYPE_S8 ? 1 : 2;
}

template <class T>
void push_bytes(std::vector<unsigned char> *out, T v) {
  const auto *p = reinterpret_cast<const unsigned char *>(&v);
  out->insert(out->end(), p, p + sizeof v);
}

// The inputs of every attention call, drawn once for the largest shape: small integers (the
// exact oracle's) as the bytes of each dtype, and int8 scales 1/2, 1 or 2 (every int8 score
// stays exact). A call's dense [heads][rows][d] Q and K are the first elements of these.
struct AttnInputs {
  std::vector<int> q, k;
  std::vector<unsigned char> q_bytes[4], k_bytes[4];  // indexed by attnscore_dtype
  std::vector<float> q_scale, k_scale;
  explicit AttnInputs(std::mt19937 &rng)
      : q(kHq * kMaxQ * kMaxD),
        k(kHkv * kMaxK * kMaxD),
        q_scale(kHq * kMaxQ),
        k_scale(kHkv * kMaxK) {
    std::uniform_int_distribution<int> dist(-3, 3), exponent(-1, 1);
    for (int &v : q) v = dist(rng);
    for (int &v : k) v = dist(rng);
    for (float &v : q_scale) v = std::ldexp(1.0f, exponent(rng));
    for (float &v : k_scale) v = std::ldexp(1.0f, exponent(rng));
    as_dtypes(q, q_bytes);
    as_dtypes(k, k_bytes);
  }

 private:
  static void as_dtypes(const std::vector<int> &v, std::vector<unsigned char> *out) {
    for (int x : v) {
      push_bytes(&out[ATTNSCORE_DTYPE_F32], static_cast<float>(x));
      push_bytes(&out[ATTNSCORE_DTYPE_F16], testing::f16_nearest(x));
      push_bytes(&out[ATTNSCORE_DTYPE_BF16], testing::bf16_nearest(x));
      push_bytes(&out[ATTNSCORE_DTYPE_S8], static_cast<std::int8_t>(x));
    }
  }
};

// One attention call on dense [heads][rows][cols] tensors, each flush against a guard, as are
// the int8 scales (one per row and per key) and, with a cache, the cache's memory: masked scores
// -Inf, the others the exact scores (small integers; int8: its contract's bits; an f16 S: those
// rounded once), or, with the softmax, weights in [0, 1] summing to 1 (0 for a row with every key
// masked). The f16 accumulation, where it has its own path, is held to its bound instead.
std::string run_attention(AttnAreas &areas, const AttnInputs &in, const AttnRun &r, std::size_t n_q,
                          std::size_t n_k, std::size_t d, unsigned mask, unsigned flags,
                          bool flush_end) {
  std::snprintf(g_case, sizeof g_case,
                "attention %s Q and K, %s S, %s K, par threads %zu: heads %zu/%zu n_q %zu n_k %zu "
                "d %zu mask %u flags %u, flush against the %s",
                dtype_name(r.dtype), dtype_name(r.s_dtype), r.cache ? "cached" : "raw", r.threads,
                kHq, kHkv, n_q, n_k, d, mask, flags, flush_end ? "guard after" : "guard before");
  const std::size_t eb = dtype_bytes(r.dtype), sb = dtype_bytes(r.s_dtype);
  const std::size_t q_bytes = kHq * n_q * d * eb, k_bytes = kHkv * n_k * d * eb;
  const std::size_t qs_bytes = kHq * n_q * sizeof(float), ks_bytes = kHkv * n_k * sizeof(float);
  unsigned char *q = areas.q.place<unsigned char>(q_bytes, flush_end);
  unsigned char *k = areas.k.place<unsigned char>(k_bytes, flush_end);
  unsigned char *s = areas.s.place<unsigned char>(kHq * n_q * n_k * sb, flush_end);
  float *q_scale = areas.q_scale.place<float>(qs_bytes, flush_end);
  float *k_scale = areas.k_scale.place<float>(ks_bytes, flush_end);
  std::memcpy(q, in.q_bytes[r.dtype].data(), q_bytes);
  std::memcpy(k, in.k_bytes[r.dtype].data(), k_bytes);
  std::memcpy(q_scale, in.q_scale.data(), qs_bytes);
  std::memcpy(k_scale, in.k_scale.data(), ks_bytes);
  const bool s8 = r.dtype == ATTNSCORE_DTYPE_S8;
  attnscore_attention_desc desc = attnscore_attention_dense(r.dtype, kHq, kHkv, n_q, n_k, d);
  desc.q.data = q, desc.k.data = k, desc.s.data = s, desc.s.dtype = r.s_dtype;
  if (s8) desc.q.scale = q_scale, desc.k.scale = k_scale;
  desc.mask = mask, desc.flags = flags, desc.window = 3;
  desc.pos_offset = n_k > n_q ? n_k - n_q : 0;
  if (r.cache) {
    // Capacity n_k in just the bytes it asks for: past the panels (and int8 scales) that K
    // fills there is only alignment slack.
    const attnscore_cache_shape shape{ATTNSCORE_CACHE_KEYS, r.dtype, kHkv, n_k, d};
    const std::size_t bytes = attnscore_cache_bytes(&shape);
    attnscore_cache *cache = nullptr;
    attnscore_status st = attnscore_cache_init(areas.cache.place<unsigned char>(bytes, flush_end),
                                               bytes, &shape, &cache);
    // K appended in two pieces from K's buffer, the second mostly starting inside a panel.
    const std::size_t ends[] = {0, n_k / 2, n_k};
    for (std::size_t piece = 0; piece < 2 && st == ATTNSCORE_OK; ++piece) {
      attnscore_tensor src = desc.k;
      src.data = k + ends[piece] * d * eb;
      if (s8) src.scale = k_scale + ends[piece];
      st = attnscore_cache_append(cache, ends[piece + 1] - ends[piece], &src);
    }
    if (st != ATTNSCORE_OK) return g_case + std::string(": ") + attnscore_status_string(st);
    if (attnscore_cache_size(cache) != n_k) return g_case + std::string(": cache size");
    desc.k = attnscore_tensor{};  // not read: K is the cache's
    desc.k_cache = cache;
  }
  const attnscore_parallel par{serial_for, nullptr, r.threads};
  const attnscore_status st = attnscore_attention(&desc, r.threads != 0 ? &par : nullptr);
  if (st != ATTNSCORE_OK) return g_case + std::string(": ") + attnscore_status_string(st);
  const float scale = attnscore_default_scale(d);
  const std::size_t g = kHq / kHkv;
  const bool f16_s = r.s_dtype == ATTNSCORE_DTYPE_F16;
  const bool softmax = (flags & ATTNSCORE_ATTN_SOFTMAX) != 0;
  // The f16 accumulation's own path (a cache as K has none: it accumulates in f32 there).
  const bool bounded = (flags & ATTNSCORE_ATTN_F16_ACCUMULATE) != 0 && !r.cache &&
                       attnscore_flag_available(ATTNSCORE_ATTN_F16_ACCUMULATE);
  for (std::size_t h = 0; h < kHq; ++h)
    for (std::size_t i = 0; i < n_q; ++i) {
      const std::size_t p = desc.pos_offset + i;
      double sum = 0;
      bool any = false;
      for (std::size_t j = 0; j < n_k; ++j) {
        const bool seen = mask == 0 || (j <= p && (!(mask & 2) || p - j < desc.window));
        const std::size_t x = (h * n_q + i) * n_k + j;
        std::uint16_t got16 = 0;
        float got32 = 0.0f;
        if (f16_s)
          std::memcpy(&got16, s + x * 2, 2);
        else
          std::memcpy(&got32, s + x * 4, 4);
        const double got = f16_s ? testing::f16_value(got16) : got32;
        const int *qr = &in.q[(h * n_q + i) * d], *kr = &in.k[((h / g) * n_k + j) * d];
        int acc = 0, gauge = 0;
        for (std::size_t t = 0; t < d; ++t) acc += qr[t] * kr[t], gauge += std::abs(qr[t] * kr[t]);
        const float exact = s8 ? testing::s8_score(acc, in.q_scale[h * n_q + i],
                                                   in.k_scale[(h / g) * n_k + j], scale)
                               : static_cast<float>(static_cast<double>(acc) * scale);
        bool ok;
        if (softmax) {
          ok =
              seen ? got >= 0.0 && got <= 1.0 : (f16_s ? got16 == 0 : testing::to_bits(got32) == 0);
        } else if (!seen) {
          ok = f16_s ? got16 == 0xfc00 : got32 == -INFINITY;
        } else if (bounded) {
          const double want = static_cast<double>(acc) * scale;
          double bound = testing::f16acc_bound(d, static_cast<double>(gauge) * scale, scale);
          if (f16_s) bound += 0x1p-11 * (std::fabs(want) + bound) + 0x1p-25;  // S's rounding
          ok = std::fabs(got - want) <= bound;
        } else {
          ok = f16_s ? got16 == testing::f16_nearest(exact)
                     : testing::to_bits(got32) == testing::to_bits(exact);
        }
        if (!ok) {
          char msg[96];
          std::snprintf(msg, sizeof msg, ": S[%zu][%zu][%zu] = %.9g", h, i, j, got);
          return g_case + std::string(msg);
        }
        sum += got, any |= seen;
      }
      // Each f16 weight rounded once more: 2^-12 at most.
      const double tolerance = 1e-4 + (f16_s ? static_cast<double>(n_k) * 0x1p-12 : 0.0);
      if (softmax && any && std::fabs(sum - 1.0) > tolerance)
        return g_case + std::string(": a row of weights does not sum to 1");
    }
  return "";
}

}  // namespace

TEST_CASE("attention at every level: Q, K, S, scales and key caches flush against guard pages",
          "[guard][api]") {
  CapGuard cap;
  const attnscore_level level = GENERATE(from_range(runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  FaultReporter reporter;
  std::mt19937 rng(5);
  const auto built = [](attnscore_dtype t) { return attnscore_kernel_name(t) != nullptr; };
  const attnscore_dtype dtypes[] = {ATTNSCORE_DTYPE_F32, ATTNSCORE_DTYPE_F16, ATTNSCORE_DTYPE_BF16,
                                    ATTNSCORE_DTYPE_S8};
  std::size_t cache_bytes = 0;  // the largest cache of any dtype at this level
  for (attnscore_dtype dtype : dtypes) {
    const attnscore_cache_shape shape{ATTNSCORE_CACHE_KEYS, dtype, kHkv, kMaxK, kMaxD};
    cache_bytes = std::max(cache_bytes, attnscore_cache_bytes(&shape));
  }
  AttnAreas areas(cache_bytes);
  const AttnInputs inputs(rng);
  // Two of three calls through the serial parallel-for: 2 threads split the two KV heads, 3 split
  // keys or rows.
  const std::size_t threads[] = {0, 2, 3};
  unsigned variant = 0;
  for (attnscore_dtype dtype : dtypes) {
    if (!built(dtype)) continue;
    std::vector<unsigned> flag_sets{0, ATTNSCORE_ATTN_SOFTMAX};
    if (dtype == ATTNSCORE_DTYPE_F16)
      for (unsigned f : {0u, ATTNSCORE_ATTN_SOFTMAX})
        flag_sets.push_back(f | ATTNSCORE_ATTN_F16_ACCUMULATE);
    if (dtype == ATTNSCORE_DTYPE_BF16)  // the dot product: exact on these small integers too
      for (unsigned f : {0u, ATTNSCORE_ATTN_SOFTMAX})
        flag_sets.push_back(f | ATTNSCORE_ATTN_BF16_DOT);
    for (attnscore_dtype s_dtype : {ATTNSCORE_DTYPE_F32, ATTNSCORE_DTYPE_F16}) {
      if (!built(s_dtype)) continue;
      for (bool cache : {false, true})
        for (std::size_t d : kAttnD)
          for (std::size_t n_q : kAttnQ)
            for (std::size_t n_k : kAttnK)
              for (unsigned mask = 0; mask < 4; ++mask)
                for (unsigned flags : flag_sets)
                  for (bool flush_end : {true, false}) {
                    const AttnRun r{dtype, s_dtype, cache, threads[++variant % 3]};
                    const std::string err =
                        run_attention(areas, inputs, r, n_q, n_k, d, mask, flags, flush_end);
                    if (!err.empty()) FAIL(err);
                  }
    }
  }
}

namespace {

// The attention output's calls: Q and K as for the scores (f32, and s8 for its own V path), V of
// every dtype raw or from a value cache, O f32 or f16, the log-sum-exp; keys past one chunk.
constexpr std::size_t kOutK = 300, kOutDv = 24;  // V from K's pool: 2 x 300 x 24 values
const std::size_t kOutKs[] = {1, 33, kOutK}, kOutDvs[] = {1, kOutDv};

struct OutAreas {
  GuardedArea q, k, v, v_scale, o, lse, cache, ws;
  explicit OutAreas(std::size_t cache_bytes)
      : q(kHq * kMaxQ * kMaxD * sizeof(float)),
        k(kHkv * kOutK * kMaxD * sizeof(float)),
        v(kHkv * kOutK * kOutDv * sizeof(float)),
        v_scale(kHkv * kOutK * sizeof(float)),
        o(kHq * kMaxQ * kOutDv * sizeof(float)),
        lse(kHq * kMaxQ * sizeof(float)),
        cache(cache_bytes),
        ws(kHkv * (kOutK + 31) * kMaxD * sizeof(float) + 64) {}  // K packed, panels up to 32
};

// One output call, every buffer flush against a guard: O against a double reference of the
// softmax over the exact integer scores (V small integers: exact in every dtype; s8 V scale 1/2),
// within 1e-5 of max |v| (f16 O: plus its rounding); the log-sum-exp likewise.
std::string run_output(OutAreas &areas, const AttnInputs &in, attnscore_dtype v_dtype, bool v_cache,
                       attnscore_dtype o_dtype, std::size_t threads, std::size_t n_q,
                       std::size_t n_k, std::size_t d, std::size_t dv, unsigned mask,
                       bool flush_end) {
  std::snprintf(g_case, sizeof g_case,
                "attention output: %s V (%s), %s O, par threads %zu: heads %zu/%zu n_q %zu n_k "
                "%zu d %zu dv %zu mask %u, flush against the %s",
                dtype_name(v_dtype), v_cache ? "value cache" : "raw", dtype_name(o_dtype), threads,
                kHq, kHkv, n_q, n_k, d, dv, mask, flush_end ? "guard after" : "guard before");
  const std::size_t vb = dtype_bytes(v_dtype), ob = dtype_bytes(o_dtype);
  const std::size_t q_bytes = kHq * n_q * d * 4, k_bytes = kHkv * n_k * d * 4;
  const std::size_t v_bytes = kHkv * n_k * dv * vb, vs_bytes = kHkv * n_k * sizeof(float);
  unsigned char *q = areas.q.place<unsigned char>(q_bytes, flush_end);
  unsigned char *k = areas.k.place<unsigned char>(k_bytes, flush_end);
  unsigned char *v = areas.v.place<unsigned char>(v_bytes, flush_end);
  float *v_scale = areas.v_scale.place<float>(vs_bytes, flush_end);
  unsigned char *o = areas.o.place<unsigned char>(kHq * n_q * dv * ob, flush_end);
  float *lse = areas.lse.place<float>(kHq * n_q * sizeof(float), flush_end);
  // Q and K: the small integers as f32 (Q's first, K's from the same pool); V: K's integers.
  std::memcpy(q, in.q_bytes[ATTNSCORE_DTYPE_F32].data(), q_bytes);
  std::memcpy(k, in.k_bytes[ATTNSCORE_DTYPE_F32].data(), k_bytes);
  std::memcpy(v, in.k_bytes[v_dtype].data(), v_bytes);
  for (std::size_t j = 0; j < kHkv * n_k; ++j) v_scale[j] = 0.5f;
  attnscore_attention_desc desc =
      attnscore_attention_dense(ATTNSCORE_DTYPE_F32, kHq, kHkv, n_q, n_k, d);
  desc.q.data = q, desc.k.data = k, desc.mask = mask, desc.window = 3;
  desc.pos_offset = n_k > n_q ? n_k - n_q : 0;
  desc.dv = dv;
  desc.v = attnscore_tensor{v, v_dtype, n_k * dv, dv, nullptr, 0, 0};
  if (v_dtype == ATTNSCORE_DTYPE_S8) desc.v.scale = v_scale, desc.v.scale_head_stride = n_k;
  if (v_dtype == ATTNSCORE_DTYPE_S8) desc.v.scale_row_stride = 1;
  desc.o = attnscore_output{o, o_dtype, n_q * dv, dv};
  desc.lse = lse, desc.lse_head_stride = n_q, desc.lse_row_stride = 1;
  if (v_cache) {
    const attnscore_cache_shape shape{ATTNSCORE_CACHE_VALUES, v_dtype, kHkv, n_k, dv};
    const std::size_t bytes = attnscore_cache_bytes(&shape);
    attnscore_cache *cache = nullptr;
    attnscore_status st = attnscore_cache_init(areas.cache.place<unsigned char>(bytes, flush_end),
                                               bytes, &shape, &cache);
    if (st == ATTNSCORE_OK) st = attnscore_cache_append(cache, n_k, &desc.v);
    if (st != ATTNSCORE_OK) return g_case + std::string(": ") + attnscore_status_string(st);
    desc.v = attnscore_tensor{};  // not read: V is the cache's
    desc.v_cache = cache;
  }
  // The workspace the query asks for (a prefill packs K there), flush against a guard too.
  const std::size_t ws_bytes = attnscore_attention_output_workspace(&desc, threads);
  desc.workspace = ws_bytes != 0 ? areas.ws.place<unsigned char>(ws_bytes, flush_end) : nullptr;
  desc.workspace_bytes = ws_bytes;
  const attnscore_parallel par{serial_for, nullptr, threads};
  const attnscore_status st = attnscore_attention_output(&desc, threads != 0 ? &par : nullptr);
  if (st != ATTNSCORE_OK) return g_case + std::string(": ") + attnscore_status_string(st);
  const double scale = attnscore_default_scale(d), vmul = v_dtype == ATTNSCORE_DTYPE_S8 ? 0.5 : 1;
  const std::size_t g = kHq / kHkv;
  for (std::size_t h = 0; h < kHq; ++h)
    for (std::size_t i = 0; i < n_q; ++i) {
      const std::size_t p = desc.pos_offset + i;
      std::vector<double> w(n_k, 0.0);
      double m = -INFINITY, l = 0, vmax = 0;
      for (std::size_t j = 0; j < n_k; ++j) {
        if (mask != 0 && (j > p || ((mask & 2) && p - j >= desc.window))) continue;
        const int *qr = &in.q[(h * n_q + i) * d], *kr = &in.k[((h / g) * n_k + j) * d];
        int acc = 0;
        for (std::size_t t = 0; t < d; ++t) acc += qr[t] * kr[t];
        w[j] = acc * scale, m = std::max(m, w[j]);
      }
      for (std::size_t j = 0; j < n_k; ++j) {
        const bool seen = mask == 0 || (j <= p && (!(mask & 2) || p - j < desc.window));
        w[j] = seen ? std::exp(w[j] - m) : 0.0;
        l += w[j];
      }
      for (std::size_t x = 0; x < dv; ++x) {
        double want = 0;
        for (std::size_t j = 0; j < n_k; ++j) {
          const double vj = in.k[((h / g) * n_k + j) * dv + x] * vmul;
          want += w[j] * vj, vmax = std::max(vmax, std::fabs(vj));
        }
        want = l == 0 ? 0.0 : want / l;  // a row that sees no key: O = 0
        const std::size_t at = (h * n_q + i) * dv + x;
        double got;
        if (o_dtype == ATTNSCORE_DTYPE_F16) {
          std::uint16_t bits;
          std::memcpy(&bits, o + at * 2, 2);
          got = testing::f16_value(bits);
        } else {
          float f;
          std::memcpy(&f, o + at * 4, 4);
          got = f;
        }
        const double tol = 1e-5 * vmax + (o_dtype == ATTNSCORE_DTYPE_F16 ? 0x1p-11 * vmax : 0.0);
        if (!(std::fabs(got - want) <= tol)) {
          char msg[96];
          std::snprintf(msg, sizeof msg, ": O[%zu][%zu][%zu] = %.9g, want %.9g", h, i, x, got,
                        want);
          return g_case + std::string(msg);
        }
      }
      const double want_lse = l == 0 ? -INFINITY : m + std::log(l);
      if (!(lse[h * n_q + i] == want_lse ||
            std::fabs(lse[h * n_q + i] - want_lse) <= 1e-5 * (1 + std::fabs(want_lse))))
        return g_case + std::string(": log-sum-exp");
    }
  return "";
}

}  // namespace

TEST_CASE(
    "attention output at every level: Q, K, V, O, lse and value caches flush against "
    "guard pages",
    "[guard][api][output]") {
  CapGuard cap;
  const attnscore_level level = GENERATE(from_range(runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  FaultReporter reporter;
  std::mt19937 rng(7);
  const auto built = [](attnscore_dtype t) { return attnscore_kernel_name(t) != nullptr; };
  const attnscore_dtype dtypes[] = {ATTNSCORE_DTYPE_F32, ATTNSCORE_DTYPE_F16, ATTNSCORE_DTYPE_BF16,
                                    ATTNSCORE_DTYPE_S8};
  std::size_t cache_bytes = 0;
  for (attnscore_dtype dtype : dtypes) {
    const attnscore_cache_shape shape{ATTNSCORE_CACHE_VALUES, dtype, kHkv, kOutK, kOutDv};
    cache_bytes = std::max(cache_bytes, attnscore_cache_bytes(&shape));
  }
  OutAreas areas(cache_bytes);
  // K's pool serves K (kOutK keys of d <= 17) and V.
  const AttnInputs inputs(rng);
  REQUIRE(inputs.k.size() >= kHkv * kOutK * std::max<std::size_t>(17, kOutDv));
  const std::size_t threads[] = {0, 2, 3};
  unsigned variant = 0;
  for (attnscore_dtype v_dtype : dtypes) {
    if (!built(v_dtype)) continue;
    for (attnscore_dtype o_dtype : {ATTNSCORE_DTYPE_F32, ATTNSCORE_DTYPE_F16}) {
      if (!built(o_dtype)) continue;
      for (bool v_cache : {false, true})
        for (std::size_t dv : kOutDvs)
          for (std::size_t n_q : kAttnQ)
            for (std::size_t n_k : kOutKs)
              for (unsigned mask : {0u, 1u, 3u})
                for (bool flush_end : {true, false}) {
                  const std::string err =
                      run_output(areas, inputs, v_dtype, v_cache, o_dtype, threads[++variant % 3],
                                 n_q, n_k, 17, dv, mask, flush_end);
                  if (!err.empty()) FAIL(err);
                }
    }
  }
}
