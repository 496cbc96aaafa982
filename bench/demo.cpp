// SPDX-License-Identifier: Apache-2.0
// The main job: what attnscore chose on this CPU, how fast it runs on the standard shapes, and
// why the scores are scaled by 1/sqrt(d).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "attnscore/attnscore.h"
#include "cpu_info.hpp"

namespace {

std::vector<float> normal(std::size_t n, std::mt19937 &rng) {
  std::normal_distribution<float> dist;
  std::vector<float> v(n);
  for (float &x : v) x = dist(rng);
  return v;
}

// GFLOP/s of the public call: the best of several rounds of at least 50 ms each.
double measure(std::size_t n_q, std::size_t n_k, std::size_t d, std::mt19937 &rng) {
  const std::vector<float> q = normal(n_q * d, rng), k = normal(n_k * d, rng);
  std::vector<float> s(n_q * n_k);
  using clock = std::chrono::steady_clock;
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    std::size_t calls = 0;
    const auto start = clock::now();
    double secs = 0;
    do {
      attnscore_scores_f32(n_q, n_k, d, q.data(), d, k.data(), d, s.data(), n_k, 0.0f);
      ++calls;
      secs = std::chrono::duration<double>(clock::now() - start).count();
    } while (secs < 0.05);
    best = std::max(best, 2.0 * n_q * n_k * d * calls / secs * 1e-9);
  }
  return best;
}

double variance(const std::vector<float> &v) {
  double mean = 0, sq = 0;
  for (float x : v) mean += x;
  mean /= v.size();
  for (float x : v) sq += (x - mean) * (x - mean);
  return sq / v.size();
}

// Mean over rows of the largest softmax weight of the row.
double mean_max_softmax(const std::vector<float> &s, std::size_t rows, std::size_t cols) {
  double total = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    const float *row = &s[i * cols];
    const double m = *std::max_element(row, row + cols);
    double z = 0;
    for (std::size_t j = 0; j < cols; ++j) z += std::exp(row[j] - m);
    total += 1.0 / z;  // the largest weight is exp(m - m) / z
  }
  return total / rows;
}

}  // namespace

int main() {
  const auto cpu = bench::cpu_identity();  // vendor, family, model, name
  std::printf(
      "attnscore %s: S = Q K^T / sqrt(d)\n\nCPU: %s (%s, family %s, model %s)\n"
      "CPU features: %s\nlevels this CPU runs:",
      attnscore_version(), cpu[3].second.c_str(), cpu[0].second.c_str(), cpu[1].second.c_str(),
      cpu[2].second.c_str(), bench::cpu_feature_names().c_str());
  for (int v = 0; v < 255; ++v) {
    const auto level = static_cast<attnscore_level>(v);
    if (attnscore_level_name(level) && attnscore_level_supported(level))
      std::printf(" %s", attnscore_level_name(level));
  }
  std::printf("\n");
  for (const auto &dk : bench::kernels_chosen())
    std::printf("%s kernel chosen: %s (cap: %s)\n", dk.first.c_str(), dk.second.c_str(),
                attnscore_level_name(attnscore_max_level()));
  std::printf("\n");

  std::mt19937 rng(2024);
  std::printf("%-6s %-12s %10s\n", "d", "n_q x n_k", "GFLOP/s");
  const std::size_t shapes[][2] = {{1, 4096}, {1, 32768}, {128, 128}, {512, 512}, {2048, 2048}};
  for (std::size_t d : {64, 128}) {
    for (const auto &sh : shapes) {
      char qk[32];
      std::snprintf(qk, sizeof qk, "%zux%zu", sh[0], sh[1]);
      std::printf("%-6zu %-12s %10.1f\n", d, qk, measure(sh[0], sh[1], d, rng));
    }
  }

  std::printf(
      "\nWhy scale: for unit-variance q and k, q.k has variance d, and softmax saturates.\n"
      "64 queries x 256 keys, entries ~ N(0,1):\n"
      "%-6s %14s %14s %18s %18s\n",
      "d", "var(raw)", "var(scaled)", "max weight raw", "max weight scaled");
  for (std::size_t d : {16, 64, 256, 1024}) {
    const std::size_t n_q = 64, n_k = 256;
    const std::vector<float> q = normal(n_q * d, rng), k = normal(n_k * d, rng);
    std::vector<float> raw(n_q * n_k), scaled(n_q * n_k);
    attnscore_scores_f32(n_q, n_k, d, q.data(), d, k.data(), d, raw.data(), n_k, 1.0f);
    attnscore_scores_f32(n_q, n_k, d, q.data(), d, k.data(), d, scaled.data(), n_k, 0.0f);
    std::printf("%-6zu %14.2f %14.3f %18.3f %18.3f\n", d, variance(raw), variance(scaled),
                mean_max_softmax(raw, n_q, n_k), mean_max_softmax(scaled, n_q, n_k));
  }
  std::printf(
      "(the largest weight is averaged over queries; 1/256 = 0.004 would be uniform attention)\n");
  return 0;
}
