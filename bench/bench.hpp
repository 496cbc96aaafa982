// SPDX-License-Identifier: Apache-2.0
// Shared by the benchmark's files: the standard shapes, their data and their counters.
#ifndef ATTNSCORE_BENCH_BENCH_HPP
#define ATTNSCORE_BENCH_BENCH_HPP

#include <benchmark/benchmark.h>

#include <cstddef>
#include <string>
#include <vector>

namespace bench {

// One call shape: decode (one query against a KV cache) or prefill.
struct Shape {
  std::size_t n_q, n_k, d;
  std::string name() const {
    return "d" + std::to_string(d) + "/" + std::to_string(n_q) + "x" + std::to_string(n_k);
  }
  double flops() const { return 2.0 * static_cast<double>(n_q) * n_k * d; }
  bool decode() const { return n_q == 1; }
};

inline constexpr std::size_t kDims[] = {64, 128};
inline constexpr std::size_t kQK[][2] = {{1, 4096}, {1, 32768}, {128, 128}, {512, 512}, {2048, 2048}};

// Dense row-major Q, K (unit normal) and S for a shape.
struct Data {
  std::vector<float> q, k, s;
  explicit Data(const Shape &sh);
};

// Rate counters GFLOP (per second) for every shape; K_GB (per second) of K read for decode.
void set_counters(benchmark::State &state, const Shape &sh);

// Registers the Eigen anchor for a shape (anchor_eigen.cpp); false where Eigen was not found.
bool register_eigen(const Shape &sh);

}  // namespace bench

#endif  // ATTNSCORE_BENCH_BENCH_HPP
