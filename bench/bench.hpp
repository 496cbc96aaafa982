// SPDX-License-Identifier: Apache-2.0
// Shared by the benchmark's files: the standard shapes, their data, counters and probes.
#ifndef ATTNSCORE_BENCH_BENCH_HPP
#define ATTNSCORE_BENCH_BENCH_HPP

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <vector>

#include "attnscore/attnscore.h"

namespace bench {

// One call shape. Decode shapes (one query) run hot (the same K every call, in cache) and cold
// (each call a different copy of K from a pool larger than the last-level cache, as a decode
// step over a layer's KV cache does).
struct Shape {
  std::size_t n_q, n_k, d;
  bool cold = false;
  std::size_t elem = 4;  // bytes of an element of Q and K: 4 (f32) or 2 (f16, bf16)
  std::string name() const {
    return "d" + std::to_string(d) + "/" + std::to_string(n_q) + "x" + std::to_string(n_k) +
           (n_q == 1 ? (cold ? "/cold" : "/hot") : "");
  }
  double flops() const { return 2.0 * static_cast<double>(n_q) * n_k * d; }
  double k_bytes() const { return static_cast<double>(n_k * d * elem); }
  bool decode() const { return n_q == 1; }
};

inline constexpr std::size_t kDims[] = {64, 128};
inline constexpr std::size_t kQK[][2] = {
    {1, 4096}, {1, 32768}, {128, 128}, {512, 512}, {2048, 2048}};
// Bytes of K copies behind a cold decode shape: well past any last-level cache of one core.
inline constexpr std::size_t kColdPoolBytes = std::size_t{512} << 20;

// Every benchmark buffer starts on a 64-byte boundary, as an inference engine's tensors do (and
// the same for every row, ours and the anchors'): S from plain malloc starts mid-line, and then
// every full-vector store of S straddles two lines.
// Blocks of kReuseBytes or more (the cold pools) are kept when freed and handed out again:
// Google Benchmark runs a benchmark's function several times, and faulting in a fresh 512 MiB
// pool each time took seconds a run, most of a short benchmark run's time.
inline constexpr std::size_t kReuseBytes = std::size_t{64} << 20;
void *alloc64(std::size_t bytes);
void free64(void *p) noexcept;
template <class T>
struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <class U>
  Aligned64(const Aligned64<U> &) noexcept {}
  T *allocate(std::size_t n) { return static_cast<T *>(alloc64(n * sizeof(T))); }
  void deallocate(T *p, std::size_t) noexcept { free64(p); }
  template <class U>
  bool operator==(const Aligned64<U> &) const noexcept {
    return true;
  }
  template <class U>
  bool operator!=(const Aligned64<U> &) const noexcept {
    return false;
  }
};
template <class T>
using Buf = std::vector<T, Aligned64<T>>;

// Dense row-major Q, S and one or (cold) many copies of K, unit normal entries.
struct Data {
  Buf<float> q, k, s;
  std::size_t copies;
  explicit Data(const Shape &sh);
  // The K of the i-th call.
  const float *k_at(std::size_t i) const { return k.data() + (i % copies) * k_stride; }
  std::size_t k_stride;
};

// The same as 16-bit float bits of `dtype` (f16 or bf16, converted by the library), for the f16
// and bf16 rows and their anchors: the cold pool holds as many bytes of K as the f32 one.
struct Data16 {
  Buf<std::uint16_t> q, k;
  Buf<float> s;
  std::size_t copies, k_stride;
  Data16(const Shape &sh, attnscore_dtype dtype);
  const std::uint16_t *k_at(std::size_t i) const { return k.data() + (i % copies) * k_stride; }
};

// int8 Q and K for the s8 rows and their anchors: uniform over [-128, 127] (seed 42), the cold
// pool holding as many copies of K as fit kColdPoolBytes. Scales: q 0.01, k 0.02 per row.
struct DataS8 {
  Buf<std::int8_t> q, k;
  std::size_t copies, k_stride;
  explicit DataS8(const Shape &sh);
  const std::int8_t *k_at(std::size_t i) const { return k.data() + (i % copies) * k_stride; }
};

// A level's limits (probe.cpp, compiled with that level's flags).
struct Probe {
  int level;                                         // attnscore_level
  float (*fma_loop)(std::size_t iters);              // iters steps of the FMA peak loop
  double flops_per_iter;                             // floating-point operations per step
  float (*read_sum)(const float *p, std::size_t n);  // streams n floats (64-byte aligned)
  float (*write_plain)(float *p, std::size_t n);     // writes them, plain stores
  float (*write_stream)(float *p, std::size_t n);    // streaming stores, or null
};
bool register_probe(const Probe &probe);

// A level's int8 dot-product peak (probe.cpp, where the level has one: vpdpbusd, sdot):
// `iters` steps of `ops_per_iter` integer operations (a multiply-add counts 2).
struct ProbeI8 {
  int level;
  int (*loop)(std::size_t iters);
  double ops_per_iter;
};
bool register_probe_i8(const ProbeI8 &probe);
// The bf16 dot-product peaks (probe.cpp's objects built for the opt-in bf16 kernels: vdpbf16ps,
// AMX's tdpbf16ps), in the same form: `ops_per_iter` floating-point operations a step (a product
// and its add: 2), `level` here the ATTNSCORE_CPU_* bit the instruction needs.
bool register_probe_bf16dot(const ProbeI8 &probe);

// Rate counters for a benchmark of `sh` at `level` (-1: an anchor, judged against the best
// level): GFLOP and K_GB per second, and the percentage of the limit, %peak (prefill: the FMA
// peak of the level) or %bw (decode: the read bandwidth of the memory holding K), and for
// prefill %write_bw: S's bytes against the write bandwidth into a buffer of S's size.
void set_counters(benchmark::State &state, const Shape &sh, int level);

// The same for the int8 rows (int8 GOP/s; %peak_i8 of the level, or of the best level for
// level -1, an anchor; %bw for cold decode; %write_bw for prefill).
void set_counters_s8(benchmark::State &state, const Shape &sh, int level);

// The same for the bf16 dot-product rows: GFLOP/s and %peak_dot, the share of the measured
// vdpbf16ps peak (prefill); K_GB/s and %bw (decode).
void set_counters_bf16dot(benchmark::State &state, const Shape &sh);

// Whether the bench may start threads: ATTNSCORE_BENCH_NO_THREADS leaves out the two-thread
// probe and the rows with two threads.
bool threads_allowed();

// The limits measured before the benchmarks (0 where none was): the best level's FMA peak in
// GFLOP/s, and the read bandwidth of the cold pool in GB/s with 1 or 2 threads.
double peak_gflops();
double dram_read_gbps(std::size_t threads);

// Registers the attention output rows, attn_out: and (with OpenBLAS) attn_out_unfused:
// (attn_out.cpp).
void register_attention_output();

// Registers the Eigen anchor for a shape (anchor_eigen.cpp); false where Eigen was not found.
bool register_eigen(const Shape &sh);
// Registers the oneDNN int8 anchor (anchor_onednn.cpp); false where oneDNN was not found.
bool register_onednn_s8(const Shape &sh);
// Registers the oneDNN bf16 anchor (anchor_onednn.cpp); false where oneDNN was not found or the
// build has no bf16.
bool register_onednn_bf16(const Shape &sh);
// Registers the XNNPACK f32 and qs8 anchors (anchor_xnnpack.cpp); false where XNNPACK was not
// found.
bool register_xnnpack(const Shape &sh);

}  // namespace bench

#endif  // ATTNSCORE_BENCH_BENCH_HPP
