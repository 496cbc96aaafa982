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
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attnscore/attnscore.hpp"
#include "kernels.h"
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
  float *place(std::size_t bytes, bool flush_end) {
    if (bytes > usable_) FAIL("area too small");
    unsigned char *p = flush_end ? base_ + page_ + usable_ - bytes : base_ + page_;
    return reinterpret_cast<float *>(p);
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
struct Problem {
  std::size_t max_q, max_k, d;
  float scale;
  std::vector<float> q, k, want;
  Problem(std::size_t max_q_, std::size_t max_k_, std::size_t d_, std::mt19937 &rng)
      : max_q(max_q_),
        max_k(max_k_),
        d(d_),
        scale(attnscore_default_scale(d_)),
        q(max_q_ * d_),
        k(max_k_ * d_),
        want(max_q_ * max_k_) {
    std::uniform_int_distribution<int> dist(-3, 3);
    for (float &x : q) x = static_cast<float>(dist(rng));
    for (float &x : k) x = static_cast<float>(dist(rng));
    for (std::size_t i = 0; i < max_q; ++i)
      for (std::size_t j = 0; j < max_k; ++j) {
        double sum = 0;
        for (std::size_t t = 0; t < d; ++t)
          sum += static_cast<double>(q[i * d + t]) * static_cast<double>(k[j * d + t]);
        want[i * max_k + j] = static_cast<float>(sum * static_cast<double>(scale));
      }
  }
};

std::size_t span_bytes(std::size_t rows, std::size_t cols, std::size_t ld) {
  return ((rows - 1) * ld + cols) * sizeof(float);
}

// Copies rows x cols of `src` (dense) to `dst` at stride ld, the gaps between rows poisoned.
void put(float *dst, const float *src, std::size_t rows, std::size_t cols, std::size_t ld) {
  const float guard = testing::from_bits(testing::kGuardBits);
  for (std::size_t i = 0; i < rows; ++i) {
    std::memcpy(dst + i * ld, src + i * cols, cols * sizeof(float));
    if (i + 1 < rows) std::fill(dst + i * ld + cols, dst + (i + 1) * ld, guard);
  }
}

// The three areas of one d, sized for its largest shape and stride.
struct Areas {
  GuardedArea q, k, s;
  Areas(const Problem &p, std::size_t pad)
      : q(span_bytes(p.max_q, p.d, p.d + pad)),
        k(span_bytes(p.max_k, p.d, p.d + pad)),
        s(span_bytes(p.max_q, p.max_k, p.max_k + pad)) {}
};

using Call = void (*)(const void *ctx, std::size_t n_q, std::size_t n_k, std::size_t d,
                      const float *q, std::size_t ldq, const float *k, std::size_t ldk, float *s,
                      std::size_t lds, float scale);

// One call with Q, K and S each flush against a guard (after its end or before its start);
// checks every element of S exactly and S's row gaps untouched. Returns "" or the first error.
std::string run_guarded(Areas &areas, const Problem &p, std::size_t n_q, std::size_t n_k,
                        std::size_t pad, bool flush_end, Call call, const void *ctx,
                        const char *who) {
  const std::size_t d = p.d, ldq = d + pad, ldk = d + pad, lds = n_k + pad;
  std::snprintf(g_case, sizeof g_case, "%s: n_q %zu n_k %zu d %zu ld pad %zu, flush against the %s",
                who, n_q, n_k, d, pad, flush_end ? "guard after" : "guard before");
  float *q = areas.q.place(span_bytes(n_q, d, ldq), flush_end);
  float *k = areas.k.place(span_bytes(n_k, d, ldk), flush_end);
  const std::size_t s_bytes = span_bytes(n_q, n_k, lds);
  float *s = areas.s.place(s_bytes, flush_end);
  put(q, p.q.data(), n_q, d, ldq);
  put(k, p.k.data(), n_k, d, ldk);
  std::fill(s, s + s_bytes / sizeof(float), testing::from_bits(testing::kGuardBits));
  call(ctx, n_q, n_k, d, q, ldq, k, ldk, s, lds, p.scale);
  for (std::size_t i = 0; i < n_q; ++i) {
    for (std::size_t j = 0; j < lds && i * lds + j < s_bytes / sizeof(float); ++j) {
      const float got = s[i * lds + j];
      const bool ok = j < n_k ? testing::to_bits(got) == testing::to_bits(p.want[i * p.max_k + j])
                              : testing::to_bits(got) == testing::kGuardBits;
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
  FaultReporter reporter;
  std::mt19937 rng(2024);
  const std::size_t max_q = 2 * kernel->mr + 1, max_k = 2 * kernel->nr + 1;
  std::size_t cases = 0;
  auto sweep = [&](std::size_t d, const std::vector<std::size_t> &qs,
                   const std::vector<std::size_t> &ks) {
    const Problem p(max_q, max_k, d, rng);
    for (std::size_t pad : {0, 3}) {
      Areas areas(p, pad);
      for (bool flush_end : {true, false})
        for (std::size_t n_q : qs)
          for (std::size_t n_k : ks) {
            const std::string err =
                run_guarded(areas, p, n_q, n_k, pad, flush_end, call_kernel, kernel, kernel->name);
            if (!err.empty()) FAIL(err);
            ++cases;
          }
    }
  };
  for (std::size_t d : short_d()) sweep(d, all_up_to(max_q), all_up_to(max_k));
  for (std::size_t d : kLongD) sweep(d, edges(kernel->mr), edges(kernel->nr));
  CHECK(cases > 0);
}

TEST_CASE("public API at every level: Q, K and S flush against guard pages", "[guard][api]") {
  CapGuard cap;
  const attnscore_level level = GENERATE(from_range(runnable_levels()));
  REQUIRE(attnscore_set_max_level(level) == ATTNSCORE_OK);
  const std::string name = attnscore_kernel_name(ATTNSCORE_DTYPE_F32);
  CAPTURE(name);
  // The chosen kernel's tile, for the shapes around its edges.
  const KernelF32 *kernel = testing::kernel_f32(name);
  REQUIRE(kernel != nullptr);
  FaultReporter reporter;
  std::mt19937 rng(77);
  const std::vector<std::size_t> qs = edges(kernel->mr), ks = edges(kernel->nr);
  std::vector<std::size_t> ds = short_d();
  ds.insert(ds.end(), std::begin(kLongD), std::end(kLongD));
  const int cpp = 1;  // any non-null context selects the C++ wrapper
  unsigned variant = 0;
  for (std::size_t d : ds) {
    const Problem p(qs.back(), ks.back(), d, rng);
    for (std::size_t pad : {0, 1}) {
      Areas areas(p, pad);
      for (bool flush_end : {true, false})
        for (std::size_t n_q : qs)
          for (std::size_t n_k : ks) {
            const bool use_cpp = ++variant % 2 == 0;
            const std::string err =
                run_guarded(areas, p, n_q, n_k, pad, flush_end, call_api, use_cpp ? &cpp : nullptr,
                            use_cpp ? "attnscore::scores" : "C API");
            if (!err.empty()) FAIL(err);
          }
    }
  }
}
