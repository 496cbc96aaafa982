// SPDX-License-Identifier: Apache-2.0
// The limits the benchmark measures ours against, in the same binary: the FMA peak of one core
// at a level, and the read bandwidth of the memory level that holds a buffer. Compiled once per
// level with that level's flags (ATTNSCORE_PROBE_LEVEL), so xsimd::default_arch is its widest arch.
#include <xsimd/xsimd.hpp>

#include "attnscore/attnscore.h"
#include "bench.hpp"
#include "tile_f32.hpp"

namespace {

using Arch = xsimd::default_arch;
using B = xsimd::batch<float, Arch>;

// `iters` steps of 12 independent multiply-adds (FMAs where the level has them, through the
// kernels' own tile::fmadd, since xsimd 8.1 has no fused form at avx512f): 12 chains
// cover 2 pipes x 4-6 cycles of latency, and 12 + 2 registers fit every level's register file.
float fma_loop(std::size_t iters) {
  constexpr int kChains = 12;
  B acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = B(1.0f + c * 1e-3f);
  const B a(0.999999f), b(1e-7f);
  for (std::size_t i = 0; i < iters; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = attnscore::tile::fmadd(acc[c], a, b);
  B sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum += acc[c];
  return xsimd::hadd(sum);
}

double peak_flops_per_iter() { return 12.0 * B::size * 2.0; }

// Sums n floats (n a multiple of 4 * W) with 4 independent vector chains: bound by reads.
float read_sum(const float *p, std::size_t n) {
  B s0(0.0f), s1(0.0f), s2(0.0f), s3(0.0f);
  for (std::size_t i = 0; i < n; i += 4 * B::size) {
    s0 += B::load_aligned(p + i);
    s1 += B::load_aligned(p + i + B::size);
    s2 += B::load_aligned(p + i + 2 * B::size);
    s3 += B::load_aligned(p + i + 3 * B::size);
  }
  return xsimd::hadd(s0 + s1 + s2 + s3);
}

const bool registered =
    bench::register_probe({ATTNSCORE_PROBE_LEVEL, fma_loop, peak_flops_per_iter(), read_sum});

}  // namespace
