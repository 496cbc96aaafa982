// SPDX-License-Identifier: Apache-2.0
// Google Benchmark: the public API at every level this CPU runs, on the standard shapes, beside
// OpenBLAS (sgemm, or sgemv for decode) and Eigen when found, so comparisons come from one run.
#include "bench.hpp"

#include <cstdio>
#include <random>

#include "attnscore/attnscore.h"
#ifdef ATTNSCORE_BENCH_OPENBLAS
#include <cblas.h>
#endif

namespace bench {

Data::Data(const Shape &sh) : q(sh.n_q * sh.d), k(sh.n_k * sh.d), s(sh.n_q * sh.n_k) {
  std::mt19937 rng(42);
  std::normal_distribution<float> dist;
  for (float &x : q) x = dist(rng);
  for (float &x : k) x = dist(rng);
}

void set_counters(benchmark::State &state, const Shape &sh) {
  state.counters["GFLOP"] =
      benchmark::Counter(sh.flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  if (sh.decode())
    state.counters["K_GB"] =
        benchmark::Counter(static_cast<double>(sh.n_k * sh.d * sizeof(float)) * 1e-9,
                           benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace bench

namespace {

void bm_attnscore(benchmark::State &state, attnscore_level level, bench::Shape sh) {
  if (attnscore_set_max_level(level) != ATTNSCORE_OK) {
    state.SkipWithError("level not in this build");
    return;
  }
  bench::Data data(sh);
  for (auto _ : state) {
    const attnscore_status st = attnscore_scores_f32(sh.n_q, sh.n_k, sh.d, data.q.data(), sh.d,
                                                     data.k.data(), sh.d, data.s.data(), sh.n_k,
                                                     0.0f);
    if (st != ATTNSCORE_OK) state.SkipWithError(attnscore_status_string(st));
    benchmark::DoNotOptimize(data.s.data());
    benchmark::ClobberMemory();
  }
  bench::set_counters(state, sh);
  attnscore_set_max_level(ATTNSCORE_LEVEL_BEST);
}

#ifdef ATTNSCORE_BENCH_OPENBLAS
void bm_openblas(benchmark::State &state, bench::Shape sh) {
  bench::Data data(sh);
  const float scale = attnscore_default_scale(sh.d);
  const int n_q = static_cast<int>(sh.n_q), n_k = static_cast<int>(sh.n_k);
  const int d = static_cast<int>(sh.d);
  for (auto _ : state) {
    if (sh.decode())  // s = scale * K q: OpenBLAS's best call for one query
      cblas_sgemv(CblasRowMajor, CblasNoTrans, n_k, d, scale, data.k.data(), d, data.q.data(), 1,
                  0.0f, data.s.data(), 1);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n_q, n_k, d, scale, data.q.data(), d,
                  data.k.data(), d, 0.0f, data.s.data(), n_k);
    benchmark::DoNotOptimize(data.s.data());
    benchmark::ClobberMemory();
  }
  bench::set_counters(state, sh);
}
#endif

}  // namespace

int main(int argc, char **argv) {
#ifdef ATTNSCORE_BENCH_OPENBLAS
  openblas_set_num_threads(1);  // one thread, like attnscore's single call
#endif
  std::printf("attnscore f32 kernel on this CPU: %s\n", attnscore_kernel_name(ATTNSCORE_DTYPE_F32));
  for (std::size_t d : bench::kDims) {
    for (const auto &qk : bench::kQK) {
      const bench::Shape sh{qk[0], qk[1], d};
      for (int v = 0; v < 255; ++v) {
        const auto level = static_cast<attnscore_level>(v);
        if (attnscore_level_name(level) == nullptr || !attnscore_level_supported(level)) continue;
        attnscore_set_max_level(level);
        const std::string kernel = attnscore_kernel_name(ATTNSCORE_DTYPE_F32);
        attnscore_set_max_level(ATTNSCORE_LEVEL_BEST);
        benchmark::RegisterBenchmark((kernel + "/" + sh.name()).c_str(), bm_attnscore, level, sh)
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
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
