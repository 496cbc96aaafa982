// SPDX-License-Identifier: Apache-2.0
// The Eigen anchor, alone in its file: it is built for the host CPU (-march=native) when it can
// be, as an Eigen user would build it, without touching how attnscore itself is built.
#include "bench.hpp"

#ifdef ATTNSCORE_BENCH_EIGEN
#include <Eigen/Core>

#include "attnscore/attnscore.h"

namespace bench {
namespace {

void bm_eigen(benchmark::State &state, Shape sh) {
  using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Data data(sh);
  const float scale = attnscore_default_scale(sh.d);
  const auto n_q = static_cast<Eigen::Index>(sh.n_q), n_k = static_cast<Eigen::Index>(sh.n_k);
  const auto d = static_cast<Eigen::Index>(sh.d);
  Eigen::Map<const Mat> q(data.q.data(), n_q, d);
  Eigen::Map<Mat> s(data.s.data(), n_q, n_k);
  std::size_t i = 0;
  for (auto _ : state) {
    Eigen::Map<const Mat> k(data.k_at(i++), n_k, d);
    s.noalias() = scale * (q * k.transpose());
    benchmark::DoNotOptimize(data.s.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, sh, -1);
}

}  // namespace

bool register_eigen(const Shape &sh) {
  benchmark::RegisterBenchmark(("eigen/" + sh.name()).c_str(), bm_eigen, sh)
      ->Unit(benchmark::kMicrosecond);
  return true;
}

}  // namespace bench
#else
bool bench::register_eigen(const Shape &) { return false; }
#endif
