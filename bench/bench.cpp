// SPDX-License-Identifier: Apache-2.0
// Google Benchmark: the public API at every level this CPU runs, on the standard shapes, beside
// OpenBLAS (sgemm, or sgemv for decode) and Eigen when found, and beside the limits measured in
// this same run (FMA peak per level, read bandwidth per memory level), so every ratio comes from
// one run.
#include "bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>

#include "attnscore/attnscore.h"
#ifdef ATTNSCORE_BENCH_OPENBLAS
#include <cblas.h>
#endif

namespace bench {
namespace {

std::vector<Probe> &probes() {
  static std::vector<Probe> list;
  return list;
}

std::map<int, double> g_peak;        // level -> measured FMA GFLOP/s
std::map<int, double> g_peak_i8;     // level -> measured int8 dot-product GOPS
std::map<std::size_t, double> g_bw;  // K bytes -> measured GB/s reading that much, hot
double g_dram_bw = 0;                // GB/s reading the cold pool
int g_best_level = 0;

// The best of 5 rounds of at least 30 ms of calls to `step(i)` (the i-th call of a round),
// each call doing `amount` units of work: units per second, in billions.
template <class Step>
double best_rate(double amount, Step step) {
  using clock = std::chrono::steady_clock;
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    std::size_t calls = 0;
    float sink = 0;
    const auto t0 = clock::now();
    double secs;
    do sink += step(calls++);
    while ((secs = std::chrono::duration<double>(clock::now() - t0).count()) < 0.03);
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

}  // namespace

std::vector<ProbeI8> &probes_i8() {
  static std::vector<ProbeI8> list;
  return list;
}

bool register_probe_i8(const ProbeI8 &probe) {
  probes_i8().push_back(probe);
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

void set_counters(benchmark::State &state, const Shape &sh, int level) {
  using C = benchmark::Counter;
  state.counters["GFLOP"] = C(sh.flops() * 1e-9, C::kIsIterationInvariantRate);
  if (sh.decode()) {
    state.counters["K_GB"] = C(sh.k_bytes() * 1e-9, C::kIsIterationInvariantRate);
    const double bw = sh.cold ? g_dram_bw : g_bw[static_cast<std::size_t>(sh.k_bytes())];
    if (bw > 0)
      state.counters["%bw"] = C(sh.k_bytes() * 1e-9 / bw * 100, C::kIsIterationInvariantRate);
  } else {
    const double peak = g_peak[level < 0 ? g_best_level : level];
    if (peak > 0)
      state.counters["%peak"] = C(sh.flops() * 1e-9 / peak * 100, C::kIsIterationInvariantRate);
  }
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

// Decode through the packed key cache (a pool of caches for cold runs), at one level.
void bm_kcache(benchmark::State &state, attnscore_level level, bench::Shape sh) {
  attnscore_set_max_level(level);
  bench::Data data(sh);
  const std::size_t bytes = attnscore_kcache_f32_bytes(sh.n_k, sh.d);
  std::vector<unsigned char> mem(bytes * data.copies);
  std::vector<attnscore_kcache_f32 *> caches(data.copies);
  for (std::size_t c = 0; c < data.copies; ++c) {
    if (attnscore_kcache_f32_init(mem.data() + c * bytes, bytes, sh.n_k, sh.d, &caches[c]) !=
            ATTNSCORE_OK ||
        attnscore_kcache_f32_append(caches[c], sh.n_k, data.k_at(c), sh.d) != ATTNSCORE_OK) {
      state.SkipWithError("cannot build the key cache");
      return;
    }
  }
  attnscore_set_max_level(ATTNSCORE_LEVEL_BEST);
  std::size_t i = 0;
  for (auto _ : state) {
    const attnscore_status st = attnscore_scores_f32_kcache(
        sh.n_q, data.q.data(), sh.d, caches[i++ % caches.size()], data.s.data(), sh.n_k, 0.0f);
    if (st != ATTNSCORE_OK) state.SkipWithError(attnscore_status_string(st));
    benchmark::DoNotOptimize(data.s.data());
    benchmark::ClobberMemory();
  }
  bench::set_counters(state, sh, level);
}

// The int8 path at one level: per-row scales, K (cold: many copies) as int8.
void bm_s8(benchmark::State &state, attnscore_level level, bench::Shape sh) {
  if (attnscore_set_max_level(level) != ATTNSCORE_OK) {
    state.SkipWithError("level not in this build");
    return;
  }
  const std::size_t k_elems = (sh.n_k * sh.d + 63) / 64 * 64;
  const std::size_t copies =
      sh.cold ? std::max<std::size_t>(2, bench::kColdPoolBytes / k_elems) : 1;
  std::vector<std::int8_t> q(sh.n_q * sh.d), k(copies * k_elems);
  std::vector<float> qs(sh.n_q, 0.01f), ks(sh.n_k, 0.02f), s(sh.n_q * sh.n_k);
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> v(-128, 127);
  for (auto &x : q) x = static_cast<std::int8_t>(v(rng));
  for (std::size_t i = 0; i < sh.n_k * sh.d; ++i) k[i] = static_cast<std::int8_t>(v(rng));
  for (std::size_t c = 1; c < copies; ++c)
    std::memcpy(k.data() + c * k_elems, k.data(), sh.n_k * sh.d);
  std::size_t i = 0;
  for (auto _ : state) {
    const attnscore_status st = attnscore_scores_s8(
        sh.n_q, sh.n_k, sh.d, q.data(), sh.d, qs.data(), sh.n_q,
        k.data() + (i++ % copies) * k_elems, sh.d, ks.data(), sh.n_k, s.data(), sh.n_k, 0.0f);
    if (st != ATTNSCORE_OK) state.SkipWithError(attnscore_status_string(st));
    benchmark::DoNotOptimize(s.data());
    benchmark::ClobberMemory();
  }
  using C = benchmark::Counter;
  state.counters["GOP"] = C(sh.flops() * 1e-9, C::kIsIterationInvariantRate);
  const int kl = attnscore_kernel_level(ATTNSCORE_DTYPE_S8);
  if (sh.decode()) {
    const double kb = static_cast<double>(sh.n_k * sh.d) * 1e-9;
    state.counters["K_GB"] = C(kb, C::kIsIterationInvariantRate);
    if (sh.cold && bench::g_dram_bw > 0)
      state.counters["%bw"] = C(kb / bench::g_dram_bw * 100, C::kIsIterationInvariantRate);
  } else if (bench::g_peak_i8.count(kl)) {
    state.counters["%peak_i8"] =
        C(sh.flops() * 1e-9 / bench::g_peak_i8[kl] * 100, C::kIsIterationInvariantRate);
  }
  attnscore_set_max_level(ATTNSCORE_LEVEL_BEST);
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
  if (best == nullptr) return;
  bench::g_best_level = best->level;
  std::vector<float> pool(bench::kColdPoolBytes / sizeof(float), 1.0f);
  for (std::size_t d : bench::kDims)
    for (const auto &qk : bench::kQK)
      if (qk[0] == 1) {
        const std::size_t bytes = qk[1] * d * sizeof(float);
        std::vector<float> hot(bytes / sizeof(float), 1.0f);
        bench::g_bw[bytes] = bench::measure_read(*best, hot, bytes);
        char key[64], value[32];
        std::snprintf(key, sizeof key, "read_gbps_%zuKiB", bytes >> 10);
        std::snprintf(value, sizeof value, "%.1f", bench::g_bw[bytes]);
        benchmark::AddCustomContext(key, value);
      }
  bench::g_dram_bw = bench::measure_read(*best, pool, std::size_t{64} << 20);
  char value[32];
  std::snprintf(value, sizeof value, "%.1f", bench::g_dram_bw);
  benchmark::AddCustomContext("read_gbps_dram", value);
}

}  // namespace

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
#ifdef ATTNSCORE_BENCH_OPENBLAS
  openblas_set_num_threads(1);  // one thread, like one attnscore call
  benchmark::AddCustomContext("openblas_core", openblas_get_corename());
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr)
    std::fprintf(stderr, "warning: OPENBLAS_CORETYPE is set: OpenBLAS may run a slower kernel\n");
#endif
  benchmark::AddCustomContext("attnscore_f32_kernel", attnscore_kernel_name(ATTNSCORE_DTYPE_F32));
  if (const char *s8 = attnscore_kernel_name(ATTNSCORE_DTYPE_S8))
    benchmark::AddCustomContext("attnscore_s8_kernel", s8);
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
            benchmark::RegisterBenchmark(("kcache:" + kernel + "/" + sh.name()).c_str(), bm_kcache,
                                         level, sh)
                ->Unit(benchmark::kMicrosecond);
        }
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
        }
#ifdef ATTNSCORE_BENCH_OPENBLAS
        benchmark::RegisterBenchmark(
            ((sh.decode() ? "openblas_sgemv/" : "openblas_sgemm/") + sh.name()).c_str(),
            bm_openblas, sh)
            ->Unit(benchmark::kMicrosecond);
#endif
        bench::register_eigen(sh);
      }
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
