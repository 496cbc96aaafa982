// SPDX-License-Identifier: Apache-2.0
// Google Benchmark: the public API at every level this CPU runs, on the standard shapes, beside
// OpenBLAS (sgemm, or sgemv for decode), Eigen and (int8, bf16) oneDNN when found, and beside the
// limits measured in this same run (FMA peak per level, read bandwidth per memory level), so every
// ratio comes from one run.
#include "bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "attnscore/attnscore.hpp"
#include "cpu_info.hpp"
#ifdef ATTNSCORE_BENCH_OPENBLAS
#include <cblas.h>
#endif

namespace bench {
namespace {

std::vector<Probe> &probes() {
  static std::vector<Probe> list;
  return list;
}

std::map<int, double> g_peak;                // level -> measured FMA GFLOP/s
std::map<int, double> g_peak_i8;             // level -> measured int8 dot-product GOPS
std::map<std::uint64_t, double> g_peak_dot;  // GFLOP/s of vdpbf16ps, tdpbf16ps: by CPU bit
std::map<std::size_t, double> g_bw;          // K bytes -> measured GB/s reading that much, hot
std::map<std::size_t, double> g_wbw;         // S bytes -> measured GB/s writing that much
double g_dram_bw = 0;                        // GB/s reading the cold pool
double g_dram_bw2 = 0;                       // the same with two threads, each reading its half

int g_best_level = 0;

// Seconds of CPU time this thread has used: the clock Google Benchmark's rate counters divide
// by, so that on a shared core a probe and a benchmark both leave out the time others held it.
double thread_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The best of 20 rounds of at least 5 ms of calls to `step(i)` (the i-th call of a round),
// each call doing `amount` units of work: units per second, in billions. Many short rounds: on a
// shared machine some of them fall between other tenants' bursts.
template <class Step>
double best_rate(double amount, Step step) {
  double best = 0;
  for (int round = 0; round < 20; ++round) {
    std::size_t calls = 0;
    float sink = 0;
    const double t0 = thread_seconds();
    double secs;
    do sink += step(calls++);
    while ((secs = thread_seconds() - t0) < 0.005);
    benchmark::DoNotOptimize(sink);
    best = std::max(best, calls * amount / secs * 1e-9);
  }
  return best;
}

// GFLOP/s of a level's FMA loop.
double measure_peak(const Probe &p) {
  constexpr std::size_t kIters = 1 << 16;
  return best_rate(kIters * p.flops_per_iter, [&](std::size_t) { return p.fma_loop(kIters); });
}

// GB/s reading `bytes` (cycling through the copies in `buf` when it holds more).
double measure_read(const Probe &p, const std::vector<float> &buf, std::size_t bytes) {
  const std::size_t n = bytes / sizeof(float), copies = buf.size() / n;
  return best_rate(static_cast<double>(bytes),
                   [&](std::size_t i) { return p.read_sum(buf.data() + (i % copies) * n, n); });
}

// GB/s writing `bytes` (64-byte aligned): the faster of plain and streaming stores.
double measure_write(const Probe &p, std::size_t bytes) {
  Buf<float> buf(bytes / sizeof(float), 0.0f);
  double best = 0;
  for (auto write : {p.write_plain, p.write_stream})
    if (write != nullptr)
      best = std::max(best, best_rate(static_cast<double>(bytes),
                                      [&](std::size_t) { return write(buf.data(), buf.size()); }));
  return best;
}

// %write_bw of a prefill shape: S's bytes per second against the write bandwidth into a buffer
// of its size. Where it nears 100, writing S bounds the call, whatever the arithmetic.
void set_write_counter(benchmark::State &state, const Shape &sh) {
  using C = benchmark::Counter;
  const std::size_t bytes = sh.n_q * sh.n_k * sizeof(float);
  if (!sh.decode() && g_wbw.count(bytes))
    state.counters["%write_bw"] =
        C(static_cast<double>(bytes) * 1e-9 / g_wbw[bytes] * 100, C::kIsIterationInvariantRate);
}

}  // namespace

std::vector<ProbeI8> &probes_i8() {
  static std::vector<ProbeI8> list;
  return list;
}
std::vector<ProbeI8> &probes_bf16dot() {
  static std::vector<ProbeI8> list;
  return list;
}

namespace {
struct Block {
  void *p;
  std::size_t bytes;
};
std::mutex g_blocks_mutex;
std::vector<Block> g_live_blocks, g_free_blocks;  // big blocks in use; kept for reuse (<= 2)
}  // namespace

void *alloc64(std::size_t bytes) {
  if (bytes < kReuseBytes) return ::operator new (bytes, std::align_val_t{64});
  const std::lock_guard<std::mutex> lock(g_blocks_mutex);
  auto fit = std::find_if(g_free_blocks.begin(), g_free_blocks.end(),
                          [&](const Block &b) { return b.bytes >= bytes && b.bytes / 2 < bytes; });
  Block b{nullptr, bytes};
  if (fit != g_free_blocks.end()) {
    b = *fit;
    g_free_blocks.erase(fit);
  } else {
    b.p = ::operator new (bytes, std::align_val_t{64});
  }
  g_live_blocks.push_back(b);
  return b.p;
}

void free64(void *p) noexcept {
  {
    const std::lock_guard<std::mutex> lock(g_blocks_mutex);
    auto live = std::find_if(g_live_blocks.begin(), g_live_blocks.end(),
                             [&](const Block &b) { return b.p == p; });
    if (live != g_live_blocks.end()) {
      g_free_blocks.push_back(*live);
      g_live_blocks.erase(live);
      if (g_free_blocks.size() <= 2) return;
      p = g_free_blocks.front().p;  // the oldest goes
      g_free_blocks.erase(g_free_blocks.begin());
    }
  }
  ::operator delete (p, std::align_val_t{64});
}

bool register_probe_i8(const ProbeI8 &probe) {
  probes_i8().push_back(probe);
  return true;
}

bool register_probe_bf16dot(const ProbeI8 &probe) {
  probes_bf16dot().push_back(probe);
  return true;
}

bool register_probe(const Probe &probe) {
  probes().push_back(probe);
  return true;
}

Data::Data(const Shape &sh)
    : q(sh.n_q * sh.d), s(sh.n_q * sh.n_k), k_stride((sh.n_k * sh.d + 15) / 16 * 16) {
  copies = sh.cold ? std::max<std::size_t>(2, kColdPoolBytes / (k_stride * sizeof(float))) : 1;
  k.resize(copies * k_stride);
  std::mt19937 rng(42);
  std::normal_distribution<float> dist;
  for (float &x : q) x = dist(rng);
  for (std::size_t i = 0; i < sh.n_k * sh.d; ++i) k[i] = dist(rng);
  for (std::size_t c = 1; c < copies; ++c)
    std::memcpy(k.data() + c * k_stride, k.data(), sh.n_k * sh.d * sizeof(float));
}

Data16::Data16(const Shape &sh, attnscore_dtype dtype)
    : q(sh.n_q * sh.d), s(sh.n_q * sh.n_k), k_stride((sh.n_k * sh.d + 31) / 32 * 32) {
  copies = sh.cold ? std::max<std::size_t>(2, kColdPoolBytes / (k_stride * 2)) : 1;
  k.resize(copies * k_stride);
  Shape f32_shape = sh;
  f32_shape.cold = false;
  const Data hot(f32_shape);
  attnscore_convert(q.size(), ATTNSCORE_DTYPE_F32, hot.q.data(), dtype, q.data());
  attnscore_convert(sh.n_k * sh.d, ATTNSCORE_DTYPE_F32, hot.k.data(), dtype, k.data());
  for (std::size_t c = 1; c < copies; ++c)
    std::memcpy(k.data() + c * k_stride, k.data(), sh.n_k * sh.d * 2);
}

DataS8::DataS8(const Shape &sh) : q(sh.n_q * sh.d), k_stride((sh.n_k * sh.d + 63) / 64 * 64) {
  copies = sh.cold ? std::max<std::size_t>(2, kColdPoolBytes / k_stride) : 1;
  k.resize(copies * k_stride);
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> v(-128, 127);
  for (auto &x : q) x = static_cast<std::int8_t>(v(rng));
  for (std::size_t i = 0; i < sh.n_k * sh.d; ++i) k[i] = static_cast<std::int8_t>(v(rng));
  for (std::size_t c = 1; c < copies; ++c)
    std::memcpy(k.data() + c * k_stride, k.data(), sh.n_k * sh.d);
}

// ATTNSCORE_BENCH_NO_THREADS: qemu-user 7.2 cannot start an ARM guest's threads here.
bool threads_allowed() { return std::getenv("ATTNSCORE_BENCH_NO_THREADS") == nullptr; }

double peak_gflops() { return g_peak.count(g_best_level) ? g_peak[g_best_level] : 0; }
double dram_read_gbps(std::size_t threads) {
  return threads == 1 ? g_dram_bw : threads == 2 ? g_dram_bw2 : 0;
}

void set_counters(benchmark::State &state, const Shape &sh, int level) {
  using C = benchmark::Counter;
  state.counters["GFLOP"] = C(sh.flops() * 1e-9, C::kIsIterationInvariantRate);
  // %peak on every shape (decode is far below it: its limit is %bw).
  const double peak = g_peak[level < 0 ? g_best_level : level];
  if (peak > 0)
    state.counters["%peak"] = C(sh.flops() * 1e-9 / peak * 100, C::kIsIterationInvariantRate);
  if (sh.decode()) {
    state.counters["K_GB"] = C(sh.k_bytes() * 1e-9, C::kIsIterationInvariantRate);
    const double bw = sh.cold ? g_dram_bw : g_bw[static_cast<std::size_t>(sh.k_bytes())];
    if (bw > 0)
      state.counters["%bw"] = C(sh.k_bytes() * 1e-9 / bw * 100, C::kIsIterationInvariantRate);
  }
  set_write_counter(state, sh);
}

void set_counters_s8(benchmark::State &state, const Shape &sh, int level) {
  using C = benchmark::Counter;
  if (level < 0) level = attnscore_kernel_level(ATTNSCORE_DTYPE_S8);
  state.counters["GOP"] = C(sh.flops() * 1e-9, C::kIsIterationInvariantRate);
  if (sh.decode()) {
    const double kb = static_cast<double>(sh.n_k * sh.d) * 1e-9;
    state.counters["K_GB"] = C(kb, C::kIsIterationInvariantRate);
    if (sh.cold && g_dram_bw > 0)
      state.counters["%bw"] = C(kb / g_dram_bw * 100, C::kIsIterationInvariantRate);
  } else if (g_peak_i8.count(level)) {
    state.counters["%peak_i8"] =
        C(sh.flops() * 1e-9 / g_peak_i8[level] * 100, C::kIsIterationInvariantRate);
  }
  set_write_counter(state, sh);
}

void set_counters_bf16dot(benchmark::State &state, const Shape &sh) {
  using C = benchmark::Counter;
  state.counters["GFLOP"] = C(sh.flops() * 1e-9, C::kIsIterationInvariantRate);
  if (sh.decode()) {
    state.counters["K_GB"] = C(sh.k_bytes() * 1e-9, C::kIsIterationInvariantRate);
    const double bw = sh.cold ? g_dram_bw : g_bw[static_cast<std::size_t>(sh.k_bytes())];
    if (bw > 0)
      state.counters["%bw"] = C(sh.k_bytes() * 1e-9 / bw * 100, C::kIsIterationInvariantRate);
  } else {
    // The peak of the instruction the flag's kernel runs: AMX's wherever the CPU has it.
    const std::uint64_t amx = attnscore_cpu_features() & ATTNSCORE_CPU_AMXBF16;
    const double peak = g_peak_dot[amx != 0 ? amx : ATTNSCORE_CPU_AVX512BF16];
    if (peak > 0)
      state.counters["%peak_dot"] = C(sh.flops() * 1e-9 / peak * 100, C::kIsIterationInvariantRate);
  }
  set_write_counter(state, sh);
}

}  // namespace bench

namespace {

void bm_attnscore(benchmark::State &state, attnscore_level level, bench::Shape sh) {
  if (attnscore_set_max_level(level) != ATTNSCORE_OK) {
    state.SkipWithError("level not in this build");
    return;
  }
  bench::Data data(sh);
  std::size_t i = 0;
  for (auto _ : state) {
    const attnscore_status st =
        attnscore_scores_f32(sh.n_q, sh.n_k, sh.d, data.q.data(), sh.d, data.k_at(i++), sh.d,
                             data.s.data(), sh.n_k, 0.0f);
    if (st != ATTNSCORE_OK) state.SkipWithError(attnscore_status_string(st));
    benchmark::DoNotOptimize(data.s.data());
    benchmark::ClobberMemory();
  }
  bench::set_counters(state, sh, level);
  attnscore_set_max_level(ATTNSCORE_LEVEL_BEST);
}

// Builds `copies` key caches of `shape` in `mem`, filling cache c with the tensor keys(c)
// (attnscore_tensor of `shape.capacity` tokens per head); skips the benchmark when one cannot be
// built.
template <class Keys>
bool make_caches(benchmark::State &state, std::size_t copies, const attnscore_cache_shape &shape,
                 bench::Buf<unsigned char> &mem, std::vector<attnscore_cache *> &caches,
                 Keys keys) {
  const std::size_t bytes = attnscore_cache_bytes(&shape);
  mem.resize(copies * bytes);
  caches.resize(copies);
  for (std::size_t c = 0; c < copies; ++c) {
    const attnscore_tensor k = keys(c);
    if (bytes == 0 ||
        attnscore_cache_init(mem.data() + c * bytes, bytes, &shape, &caches[c]) != ATTNSCORE_OK ||
        attnscore_cache_append(caches[c], shape.capacity, &k) != ATTNSCORE_OK) {
      state.SkipWithError("cannot build the key cache");
      return false;
    }
  }
  return true;
}

// The timed loop: call(i) for the i-th iteration, its status checked, its output `out` kept.
template <class Call>
void time_calls(benchmark::State &state, const float *out, Call call) {
  std::size_t i = 0;
  for (auto _ : state) {
    const attnscore_status st = call(i++);
    if (st != ATTNSCORE_OK) state.SkipWithError(attnscore_status_string(st));
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
}

// The data of the f32, f16 and bf16 rows, by the dtype of Q and K.
template <attnscore_dtype D>
auto make_data(const bench::Shape &sh) {
  if constexpr (D == ATTNSCORE_DTYPE_F32)
    return bench::Data(sh);
  else
    return bench::Data16(sh, D);
}

// Decode through the packed f32, f16 or bf16 key cache of one head (a pool of caches for cold
// runs), at one level: attnscore_attention with the cache as K.
template <attnscore_dtype dtype>
void bm_kcache(benchmark::State &state, attnscore_level level, bench::Shape sh) {
  attnscore_set_max_level(level);
  auto data = make_data<dtype>(sh);
  bench::Buf<unsigned char> mem;
  std::vector<attnscore_cache *> caches;
  const attnscore_cache_shape shape{ATTNSCORE_CACHE_KEYS, dtype, 1, sh.n_k, sh.d};
  if (!make_caches(state, data.copies, shape, mem, caches, [&](std::size_t c) {
        return attnscore_tensor{data.k_at(c), dtype, sh.n_k * sh.d, sh.d, nullptr, 0, 0};
      }))
    return;
  attnscore_set_max_level(ATTNSCORE_LEVEL_BEST);
  attnscore_attention_desc a = attnscore_attention_dense(dtype, 1, 1, sh.n_q, sh.n_k, sh.d);
  a.q.data = data.q.data();
  a.s.data = data.s.data();
  time_calls(state, data.s.data(), [&](std::size_t i) {
    a.k_cache = caches[i % caches.size()];
    return attnscore_attention(&a, nullptr);
  });
  bench::set_counters(state, sh, level);
}

// The best level through the built-in pool of `threads` threads (wall-clock time: the work of
// all threads). %bw for cold decode is against two threads' measured read bandwidth.
void bm_threads(benchmark::State &state, std::size_t threads, bench::Shape sh) {
  attnscore::ThreadPool pool(threads);
  if (pool.status() != ATTNSCORE_OK) {
    state.SkipWithError(attnscore_status_string(pool.status()));
    return;
  }
  const attnscore_parallel par = pool.parallel();
  bench::Data data(sh);
  attnscore_attention_desc a =
      attnscore_attention_dense(ATTNSCORE_DTYPE_F32, 1, 1, sh.n_q, sh.n_k, sh.d);
  a.q.data = data.q.data();
  a.s.data = data.s.data();
  std::size_t i = 0;
  for (auto _ : state) {
    a.k.data = data.k_at(i++);
    const attnscore_status st = attnscore_attention(&a, &par);
    if (st != ATTNSCORE_OK) state.SkipWithError(attnscore_status_string(st));
    benchmark::DoNotOptimize(data.s.data());
    benchmark::ClobberMemory();
  }
  using C = benchmark::Counter;
  state.counters["GFLOP"] = C(sh.flops() * 1e-9, C::kIsIterationInvariantRate);
  if (sh.decode()) {
    state.counters["K_GB"] = C(sh.k_bytes() * 1e-9, C::kIsIterationInvariantRate);
    const double bw = threads == 2 && sh.cold   ? bench::g_dram_bw2
                      : threads == 1 && sh.cold ? bench::g_dram_bw
                                                : 0;
    if (bw > 0)
      state.counters["%bw"] = C(sh.k_bytes() * 1e-9 / bw * 100, C::kIsIterationInvariantRate);
  }
}

// The f16 and bf16 rows: attnscore_scores_f16 or attnscore_scores_bf16 (f32 accumulation and
// output) on 16-bit Q and K of `dtype`.
void bm_attnscore_16(benchmark::State &state, attnscore_dtype dtype, attnscore_level level,
                     bench::Shape sh) {
  if (attnscore_set_max_level(level) != ATTNSCORE_OK) {
    state.SkipWithError("level not in this build");
    return;
  }
  const auto scores = dtype == ATTNSCORE_DTYPE_BF16 ? attnscore_scores_bf16 : attnscore_scores_f16;
  bench::Data16 data(sh, dtype);
  std::size_t i = 0;
  for (auto _ : state) {
    const attnscore_status st = scores(sh.n_q, sh.n_k, sh.d, data.q.data(), sh.d, data.k_at(i++),
                                       sh.d, data.s.data(), sh.n_k, 0.0f);
    if (st != ATTNSCORE_OK) state.SkipWithError(attnscore_status_string(st));
    benchmark::DoNotOptimize(data.s.data());
    benchmark::ClobberMemory();
  }
  bench::set_counters(state, sh, level);
  attnscore_set_max_level(ATTNSCORE_LEVEL_BEST);
}

// The opt-in bf16 dot product (attnscore_attention with ATTNSCORE_ATTN_BF16_DOT, one head), on
// the bf16 rows' data: its kernel where the flag runs it (the rows are registered only there).
void bm_bf16dot(benchmark::State &state, bench::Shape sh) {
  bench::Data16 data(sh, ATTNSCORE_DTYPE_BF16);
  attnscore_attention_desc a =
      attnscore_attention_dense(ATTNSCORE_DTYPE_BF16, 1, 1, sh.n_q, sh.n_k, sh.d);
  a.q.data = data.q.data(), a.s.data = data.s.data(), a.flags = ATTNSCORE_ATTN_BF16_DOT;
  std::size_t i = 0;
  for (auto _ : state) {
    a.k.data = data.k_at(i++);
    const attnscore_status st = attnscore_attention(&a, nullptr);
    if (st != ATTNSCORE_OK) state.SkipWithError(attnscore_status_string(st));
    benchmark::DoNotOptimize(data.s.data());
    benchmark::ClobberMemory();
  }
  bench::set_counters_bf16dot(state, sh);
}

// The int8 path at one level: per-row scales, K (cold: many copies) as int8.
void bm_s8(benchmark::State &state, attnscore_level level, bench::Shape sh) {
  if (attnscore_set_max_level(level) != ATTNSCORE_OK) {
    state.SkipWithError("level not in this build");
    return;
  }
  const bench::DataS8 data(sh);
  bench::Buf<float> qs(sh.n_q, 0.01f), ks(sh.n_k, 0.02f), s(sh.n_q * sh.n_k);
  std::size_t i = 0;
  for (auto _ : state) {
    const attnscore_status st =
        attnscore_scores_s8(sh.n_q, sh.n_k, sh.d, data.q.data(), sh.d, qs.data(), sh.n_q,
                            data.k_at(i++), sh.d, ks.data(), sh.n_k, s.data(), sh.n_k, 0.0f);
    if (st != ATTNSCORE_OK) state.SkipWithError(attnscore_status_string(st));
    benchmark::DoNotOptimize(s.data());
    benchmark::ClobberMemory();
  }
  bench::set_counters_s8(state, sh, attnscore_kernel_level(ATTNSCORE_DTYPE_S8));
  attnscore_set_max_level(ATTNSCORE_LEVEL_BEST);
}

// Decode through the packed int8 key cache of one KV head (a pool of caches for cold runs) at one
// level, for `group` query heads at once: 1, or the query heads of one KV head under grouped-query
// attention (each cached key read once for all of them). K_GB and %bw count the cache's int8 keys.
void bm_kcache_s8(benchmark::State &state, attnscore_level level, bench::Shape sh,
                  std::size_t group) {
  attnscore_set_max_level(level);
  const attnscore_cache_shape shape{ATTNSCORE_CACHE_KEYS, ATTNSCORE_DTYPE_S8, 1, sh.n_k, sh.d};
  const std::size_t bytes = attnscore_cache_bytes(&shape);
  const std::size_t copies =
      sh.cold && bytes != 0 ? std::max<std::size_t>(2, bench::kColdPoolBytes / bytes) : 1;
  bench::Buf<unsigned char> mem;
  bench::Buf<std::int8_t> q(group * sh.d), k(sh.n_k * sh.d);
  bench::Buf<float> qs(group, 0.01f), ks(sh.n_k, 0.02f), s(group * sh.n_k);
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> v(-128, 127);
  for (auto &x : q) x = static_cast<std::int8_t>(v(rng));
  for (auto &x : k) x = static_cast<std::int8_t>(v(rng));
  std::vector<attnscore_cache *> caches;
  if (!make_caches(state, copies, shape, mem, caches, [&](std::size_t) {
        return attnscore_tensor{
            k.data(), ATTNSCORE_DTYPE_S8, sh.n_k * sh.d, sh.d, ks.data(), sh.n_k, 1};
      }))
    return;
  attnscore_set_max_level(ATTNSCORE_LEVEL_BEST);
  // `group` query heads of one row each on the one KV head, one scale per query head.
  attnscore_attention_desc a =
      attnscore_attention_dense(ATTNSCORE_DTYPE_S8, group, 1, sh.n_q, sh.n_k, sh.d);
  a.q.data = q.data();
  a.q.scale = qs.data();
  a.q.scale_head_stride = 1;
  a.q.scale_row_stride = 0;
  a.s.data = s.data();
  time_calls(state, s.data(), [&](std::size_t i) {
    a.k_cache = caches[i % copies];
    return attnscore_attention(&a, nullptr);
  });
  bench::set_counters_s8(state, sh, level);
  state.counters["GOP"] = benchmark::Counter(static_cast<double>(group) * sh.flops() * 1e-9,
                                             benchmark::Counter::kIsIterationInvariantRate);
}

#ifdef ATTNSCORE_BENCH_OPENBLAS
void bm_openblas(benchmark::State &state, bench::Shape sh) {
  bench::Data data(sh);
  const float scale = attnscore_default_scale(sh.d);
  const int n_q = static_cast<int>(sh.n_q), n_k = static_cast<int>(sh.n_k);
  const int d = static_cast<int>(sh.d);
  std::size_t i = 0;
  for (auto _ : state) {
    const float *k = data.k_at(i++);
    if (sh.decode())  // s = scale * K q: OpenBLAS's best call for one query
      cblas_sgemv(CblasRowMajor, CblasNoTrans, n_k, d, scale, k, d, data.q.data(), 1, 0.0f,
                  data.s.data(), 1);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n_q, n_k, d, scale, data.q.data(), d, k,
                  d, 0.0f, data.s.data(), n_k);
    benchmark::DoNotOptimize(data.s.data());
    benchmark::ClobberMemory();
  }
  bench::set_counters(state, sh, -1);
}
#endif

// The attention step of a layer (issue shapes): 32 query heads on 8 KV heads, d = 128; decode
// (1 query x 4096 keys) and prefill (512 x 512). Variants: the fused call with or without the
// causal mask and the softmax, against the unfused sequence (one scores call per head, then the
// caller's own mask-and-softmax pass), and the single-head decode on the same bytes of K.
struct AttnShape {
  std::size_t hq, hkv, n_q, n_k, d;
  std::string name() const {
    return std::to_string(hq) + "q" + std::to_string(hkv) + "kv/d" + std::to_string(d) + "/" +
           std::to_string(n_q) + "x" + std::to_string(n_k);
  }
};

struct AttnData {
  bench::Buf<float> q, k, s;
  explicit AttnData(const AttnShape &a)
      : q(a.hq * a.n_q * a.d), k(a.hkv * a.n_k * a.d), s(a.hq * a.n_q * a.n_k) {
    std::mt19937 rng(42);
    std::normal_distribution<float> dist;
    for (float &x : q) x = dist(rng);
    for (float &x : k) x = dist(rng);
  }
};

void attn_counters(benchmark::State &state, const AttnShape &a) {
  using C = benchmark::Counter;
  // Work of the unmasked scores: the same count for every variant, so rates compare times.
  state.counters["GFLOP"] =
      C(2.0 * a.hq * a.n_q * a.n_k * a.d * 1e-9, C::kIsIterationInvariantRate);
  state.counters["K_GB"] = C(static_cast<double>(a.hkv * a.n_k * a.d * sizeof(float)) * 1e-9,
                             C::kIsIterationInvariantRate);
}

void bm_attention(benchmark::State &state, AttnShape sh, bool causal, bool softmax) {
  AttnData data(sh);
  attnscore_attention_desc a =
      attnscore_attention_dense(ATTNSCORE_DTYPE_F32, sh.hq, sh.hkv, sh.n_q, sh.n_k, sh.d);
  a.q.data = data.q.data();
  a.k.data = data.k.data();
  a.s.data = data.s.data();
  a.mask = causal ? ATTNSCORE_MASK_CAUSAL : 0u;
  a.pos_offset = sh.n_k - sh.n_q;  // the queries are the last positions (decode, prefill)
  a.flags = softmax ? ATTNSCORE_ATTN_SOFTMAX : 0u;
  for (auto _ : state) {
    const attnscore_status st = attnscore_attention(&a, nullptr);
    if (st != ATTNSCORE_OK) state.SkipWithError(attnscore_status_string(st));
    benchmark::DoNotOptimize(data.s.data());
    benchmark::ClobberMemory();
  }
  attn_counters(state, sh);
}

// The unfused sequence: a scores call per head (K head h / g), then a plain pass that masks and
// takes a stable softmax of each row.
void bm_attention_unfused(benchmark::State &state, AttnShape sh, bool causal, bool softmax) {
  AttnData data(sh);
  const std::size_t g = sh.hq / sh.hkv, p0 = sh.n_k - sh.n_q;
  for (auto _ : state) {
    for (std::size_t h = 0; h < sh.hq; ++h) {
      float *s = data.s.data() + h * sh.n_q * sh.n_k;
      attnscore_scores_f32(sh.n_q, sh.n_k, sh.d, data.q.data() + h * sh.n_q * sh.d, sh.d,
                           data.k.data() + (h / g) * sh.n_k * sh.d, sh.d, s, sh.n_k, 0.0f);
      if (!causal && !softmax) continue;
      for (std::size_t i = 0; i < sh.n_q; ++i) {
        float *row = s + i * sh.n_k;
        const std::size_t hi = causal ? std::min(sh.n_k, p0 + i + 1) : sh.n_k;
        for (std::size_t j = hi; j < sh.n_k; ++j) row[j] = -std::numeric_limits<float>::infinity();
        if (!softmax) continue;
        float m = row[0], sum = 0;
        for (std::size_t j = 1; j < hi; ++j) m = std::max(m, row[j]);
        for (std::size_t j = 0; j < sh.n_k; ++j) sum += row[j] = std::exp(row[j] - m);
        for (std::size_t j = 0; j < sh.n_k; ++j) row[j] /= sum;
      }
    }
    benchmark::DoNotOptimize(data.s.data());
    benchmark::ClobberMemory();
  }
  attn_counters(state, sh);
}

// The single-head decode (the scores call, one query) on as many bytes of K as the layer holds.
void bm_single_head_decode(benchmark::State &state, AttnShape sh) {
  const AttnShape one{1, 1, 1, sh.hkv * sh.n_k, sh.d};
  AttnData data(one);
  for (auto _ : state) {
    attnscore_scores_f32(1, one.n_k, one.d, data.q.data(), one.d, data.k.data(), one.d,
                         data.s.data(), one.n_k, 0.0f);
    benchmark::DoNotOptimize(data.s.data());
    benchmark::ClobberMemory();
  }
  attn_counters(state, one);
}

void register_attention() {
  const AttnShape shapes[] = {{32, 8, 1, 4096, 128}, {32, 8, 512, 512, 128}};
  for (const AttnShape &sh : shapes) {
    for (bool causal : {false, true})
      for (bool softmax : {false, true}) {
        const std::string opt =
            std::string(causal ? "causal" : "nomask") + (softmax ? "+softmax" : "");
        benchmark::RegisterBenchmark(("attn_fused:" + opt + "/" + sh.name()).c_str(), bm_attention,
                                     sh, causal, softmax)
            ->Unit(benchmark::kMicrosecond);
        benchmark::RegisterBenchmark(("attn_unfused:" + opt + "/" + sh.name()).c_str(),
                                     bm_attention_unfused, sh, causal, softmax)
            ->Unit(benchmark::kMicrosecond);
      }
    if (sh.n_q == 1)
      benchmark::RegisterBenchmark(("attn_single_head:" + sh.name()).c_str(), bm_single_head_decode,
                                   sh)
          ->Unit(benchmark::kMicrosecond);
  }
}

std::vector<attnscore_level> runnable_levels() {
  std::vector<attnscore_level> out;
  for (int v = 0; v < 255; ++v) {
    const auto level = static_cast<attnscore_level>(v);
    if (attnscore_level_name(level) != nullptr && attnscore_level_supported(level))
      out.push_back(level);
  }
  return out;
}

// Measures every limit once, before any benchmark, and adds them to the run's context.
void measure_limits() {
  const bench::Probe *best = nullptr;
  for (const bench::Probe &p : bench::probes()) {
    if (!attnscore_level_supported(static_cast<attnscore_level>(p.level))) continue;
    const double peak = bench::measure_peak(p);
    bench::g_peak[p.level] = peak;
    char value[32];
    std::snprintf(value, sizeof value, "%.1f", peak);
    benchmark::AddCustomContext(
        std::string("peak_gflops_") + attnscore_level_name(static_cast<attnscore_level>(p.level)),
        value);
    if (best == nullptr || p.level > best->level) best = &p;
  }
  for (const bench::ProbeI8 &p : bench::probes_i8()) {
    if (!attnscore_level_supported(static_cast<attnscore_level>(p.level))) continue;
    constexpr std::size_t kIters = 1 << 16;
    const double peak = bench::best_rate(kIters * p.ops_per_iter,
                                         [&](std::size_t) { return p.loop(kIters) * 1e-30f; });
    bench::g_peak_i8[p.level] = peak;
    char value[32];
    std::snprintf(value, sizeof value, "%.1f", peak);
    benchmark::AddCustomContext(
        std::string("peak_i8_gops_") + attnscore_level_name(static_cast<attnscore_level>(p.level)),
        value);
  }
  for (const bench::ProbeI8 &p : bench::probes_bf16dot()) {
    // Wherever the CPU has the instruction, also where the tuning passes the kernel over: the
    // peak is the measurement that says why.
    const std::uint64_t needs = static_cast<std::uint64_t>(p.level);
    if ((attnscore_cpu_features() & needs) == 0) continue;
    constexpr std::size_t kIters = 1 << 16;
    const double peak = bench::best_rate(kIters * p.ops_per_iter,
                                         [&](std::size_t) { return p.loop(kIters) * 1e-30f; });
    bench::g_peak_dot[needs] = peak;
    char value[32];
    std::snprintf(value, sizeof value, "%.1f", peak);
    benchmark::AddCustomContext(
        needs == ATTNSCORE_CPU_AMXBF16 ? "peak_amx_bf16_gflops" : "peak_bf16dot_gflops", value);
  }
  if (best == nullptr) return;
  bench::g_best_level = best->level;
  std::vector<float> pool(bench::kColdPoolBytes / sizeof(float), 1.0f);
  for (std::size_t d : bench::kDims)
    for (const auto &qk : bench::kQK)
      if (qk[0] == 1) {
        // K of f32 and (half the bytes) of f16.
        for (const std::size_t bytes : {qk[1] * d * sizeof(float), qk[1] * d * 2}) {
          if (bench::g_bw.count(bytes)) continue;
          std::vector<float> hot(bytes / sizeof(float), 1.0f);
          bench::g_bw[bytes] = bench::measure_read(*best, hot, bytes);
          char key[64], value[32];
          std::snprintf(key, sizeof key, "read_gbps_%zuKiB", bytes >> 10);
          std::snprintf(value, sizeof value, "%.1f", bench::g_bw[bytes]);
          benchmark::AddCustomContext(key, value);
        }
      }
  for (const auto &qk : bench::kQK) {
    const std::size_t bytes = qk[0] * qk[1] * sizeof(float);
    if (qk[0] == 1 || bench::g_wbw.count(bytes)) continue;
    bench::g_wbw[bytes] = bench::measure_write(*best, bytes);
    char key[64], value[32];
    std::snprintf(key, sizeof key, "write_gbps_%zuKiB", bytes >> 10);
    std::snprintf(value, sizeof value, "%.1f", bench::g_wbw[bytes]);
    benchmark::AddCustomContext(key, value);
  }
  bench::g_dram_bw = bench::measure_read(*best, pool, std::size_t{64} << 20);
  char value[32];
  std::snprintf(value, sizeof value, "%.1f", bench::g_dram_bw);
  benchmark::AddCustomContext("read_gbps_dram", value);
  if (!bench::threads_allowed()) return;
  // Two threads each streaming its own half of the pool, 64 MiB per call, timed by the wall
  // clock (as the two-thread benchmarks are): the limit of a two-thread decode.
  const std::size_t half = pool.size() / 2, chunk = (std::size_t{64} << 20) / sizeof(float);
  double best2 = 0;
  for (int round = 0; round < 3; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    std::thread other([&] {
      for (std::size_t c = 0; c + chunk <= half; c += chunk) best->read_sum(pool.data() + c, chunk);
    });
    for (std::size_t c = 0; c + chunk <= half; c += chunk)
      best->read_sum(pool.data() + half + c, chunk);
    other.join();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best2 = std::max(best2,
                     static_cast<double>(2 * (half / chunk) * chunk * sizeof(float)) / secs * 1e-9);
  }
  bench::g_dram_bw2 = best2;
  std::snprintf(value, sizeof value, "%.1f", best2);
  benchmark::AddCustomContext("read_gbps_dram_2threads", value);
}

// The display reporter that --benchmark_format asks for, with the percentage counters (%peak,
// %bw, %write_bw, %peak_i8) shown as the plain numbers they are: they are computed as rates (the
// limit's share per second of the benchmark's time), and the console would print "%bw=38.5/s".
class PlainPercentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context &context) override { return inner_->ReportContext(context); }
  void ReportRuns(const std::vector<Run> &runs) override {
    std::vector<Run> plain = runs;
    for (Run &run : plain)
      for (auto &counter : run.counters)
        if (counter.first.rfind('%', 0) == 0) counter.second.flags = benchmark::Counter::kDefaults;
    inner_->ReportRuns(plain);
  }
  void Finalize() override { inner_->Finalize(); }

 private:
  // Google Benchmark keeps this one for the whole run (a static it never frees).
  benchmark::BenchmarkReporter *inner_ = benchmark::CreateDefaultDisplayReporter();
};

}  // namespace

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
#ifdef ATTNSCORE_BENCH_OPENBLAS
  openblas_set_num_threads(1);  // one thread, like one attnscore call
  // OpenBLAS picks its kernel from the CPU model (or OPENBLAS_CORETYPE); a model it does not
  // know (as in many VMs) gets an old SSE kernel. The anchor must run its best kernel.
  const std::string core = openblas_get_corename();
  benchmark::AddCustomContext("openblas_core", core);
  const std::uint64_t cpu = attnscore_cpu_features();
  const bool avx512_core = core == "SkylakeX" || core == "Cooperlake" || core == "SapphireRapids";
  const char *best =
      (cpu & ATTNSCORE_CPU_AVX512F) && !avx512_core ? "SkylakeX"
      : (cpu & ATTNSCORE_CPU_AVX2) && !avx512_core && core != "Haswell" && core != "Zen" ? "Haswell"
                                                                                         : nullptr;
  if (best != nullptr)
    std::fprintf(stderr,
                 "warning: OpenBLAS runs its %s kernel on this CPU; for a fair anchor run with "
                 "OPENBLAS_CORETYPE=%s\n",
                 core.c_str(), best);
#endif
  // What the board is and what it runs: the CPU features detected and the kernel chosen per
  // dtype (attnscore_<dtype>_kernel), before the limits measured on it.
  benchmark::AddCustomContext("attnscore_version", attnscore_version());
  for (const auto &kv : bench::cpu_identity()) benchmark::AddCustomContext(kv.first, kv.second);
  benchmark::AddCustomContext("cpu_features", bench::cpu_feature_names());
  for (const auto &dk : bench::kernels_chosen())
    benchmark::AddCustomContext("attnscore_" + dk.first + "_kernel", dk.second);
  measure_limits();
  for (std::size_t d : bench::kDims) {
    for (const auto &qk : bench::kQK) {
      for (bool cold : {false, true}) {
        if (cold && qk[0] != 1) continue;
        const bench::Shape sh{qk[0], qk[1], d, cold};
        for (attnscore_level level : runnable_levels()) {
          attnscore_set_max_level(level);
          const std::string kernel = attnscore_kernel_name(ATTNSCORE_DTYPE_F32);
          const bool own = attnscore_kernel_level(ATTNSCORE_DTYPE_F32) == level;
          attnscore_set_max_level(ATTNSCORE_LEVEL_BEST);
          if (!own) continue;  // an int8-only level: f32 runs the level below, already listed
          benchmark::RegisterBenchmark((kernel + "/" + sh.name()).c_str(), bm_attnscore, level, sh)
              ->Unit(benchmark::kMicrosecond);
          if (sh.decode())
            benchmark::RegisterBenchmark(("kcache:" + kernel + "/" + sh.name()).c_str(),
                                         bm_kcache<ATTNSCORE_DTYPE_F32>, level, sh)
                ->Unit(benchmark::kMicrosecond);
        }
        for (std::size_t threads : {1, 2})
          if (bench::threads_allowed())
            benchmark::RegisterBenchmark(
                ("threads:" + std::to_string(threads) + "/" +
                 attnscore_kernel_name(ATTNSCORE_DTYPE_F32) + "/" + sh.name())
                    .c_str(),
                bm_threads, threads, sh)
                ->Unit(benchmark::kMicrosecond)
                ->UseRealTime();
        // The f16 and bf16 rows beside them: one per level whose kernel of the dtype is its own
        // (sse2 has none for f16).
        bench::Shape sh16 = sh;
        sh16.elem = 2;
        for (attnscore_dtype dtype : {ATTNSCORE_DTYPE_F16, ATTNSCORE_DTYPE_BF16})
          for (attnscore_level level : runnable_levels()) {
            attnscore_set_max_level(level);
            const char *name16 = attnscore_kernel_name(dtype);
            const bool own = name16 != nullptr && attnscore_kernel_level(dtype) == level;
            const std::string kernel = name16 ? name16 : "";
            attnscore_set_max_level(ATTNSCORE_LEVEL_BEST);
            if (!own) continue;
            benchmark::RegisterBenchmark((kernel + "/" + sh.name()).c_str(), bm_attnscore_16, dtype,
                                         level, sh16)
                ->Unit(benchmark::kMicrosecond);
            if (sh.decode())
              benchmark::RegisterBenchmark(("kcache:" + kernel + "/" + sh.name()).c_str(),
                                           dtype == ATTNSCORE_DTYPE_BF16
                                               ? bm_kcache<ATTNSCORE_DTYPE_BF16>
                                               : bm_kcache<ATTNSCORE_DTYPE_F16>,
                                           level, sh16)
                  ->Unit(benchmark::kMicrosecond);
          }
        if (attnscore_flag_available(ATTNSCORE_ATTN_BF16_DOT))
          benchmark::RegisterBenchmark(("bf16dot/" + sh.name()).c_str(), bm_bf16dot, sh16)
              ->Unit(benchmark::kMicrosecond);
        // s8 beside f32: each level with its own s8 kernel.
        for (attnscore_level level : runnable_levels()) {
          attnscore_set_max_level(level);
          const char *s8 = attnscore_kernel_name(ATTNSCORE_DTYPE_S8);
          const bool own = s8 != nullptr && attnscore_kernel_level(ATTNSCORE_DTYPE_S8) == level;
          attnscore_set_max_level(ATTNSCORE_LEVEL_BEST);
          if (own)
            benchmark::RegisterBenchmark((std::string(s8) + "/" + sh.name()).c_str(), bm_s8, level,
                                         sh)
                ->Unit(benchmark::kMicrosecond);
          // The key cache, for one query head and for a group of 4 on one KV head (grouped-query
          // decode).
          if (own && sh.decode())
            for (std::size_t group : {1, 4})
              benchmark::RegisterBenchmark(
                  ((group == 1 ? "kcache:" : "kcache_g4:") + std::string(s8) + "/" + sh.name())
                      .c_str(),
                  bm_kcache_s8, level, sh, group)
                  ->Unit(benchmark::kMicrosecond);
        }
#ifdef ATTNSCORE_BENCH_OPENBLAS
        benchmark::RegisterBenchmark(
            ((sh.decode() ? "openblas_sgemv/" : "openblas_sgemm/") + sh.name()).c_str(),
            bm_openblas, sh)
            ->Unit(benchmark::kMicrosecond);
#endif
        bench::register_eigen(sh);
        bench::register_onednn_s8(sh);
        bench::register_onednn_bf16(sh16);
        bench::register_xnnpack(sh);
      }
    }
  }
  register_attention();
  bench::register_attention_output();
  PlainPercentReporter display;
  benchmark::RunSpecifiedBenchmarks(&display);
  benchmark::Shutdown();
  return 0;
}
