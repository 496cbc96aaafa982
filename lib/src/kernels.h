// SPDX-License-Identifier: Apache-2.0
// Every compiled kernel, one declaration each, and the table row that describes it.
#ifndef ATTNSCORE_KERNELS_H
#define ATTNSCORE_KERNELS_H

#include <cstddef>
#include <cstdint>

#include "attnscore/attnscore.h"
#include "attnscore_config.h"

// Arch kernels inline all of xsimd into themselves: an out-of-line xsimd helper compiled with a
// higher level's flags would otherwise be one COMDAT symbol shared with lower levels (SIGILL).
#define ATTNSCORE_KERNEL_ENTRY __attribute__((flatten))

namespace attnscore {

// Kernel flags for calls on a chunk of d: kAccumulate starts from the partial sums the previous
// chunk left in S (instead of 0); kFinal applies the scale at the store (otherwise the raw sums
// are stored for the next chunk).
constexpr unsigned kAccumulate = 1, kFinal = 2;

// Uniform f32 kernel, in two shapes that sum every element in the same order (so any block of
// S gives the same bits whichever shape computed it):
// - prefill: pack puts `cols` <= NR keys into a panel of NR * d floats (t-major, 64-byte
//   aligned, zero-padded keys); fn makes an MR x NR block of S from `rows` <= MR raw Q rows and
//   a panel, writing exactly rows x cols elements of s and reading them only under kAccumulate;
// - decode: dec makes `rows` <= kDecodeRows x `cols` <= NR_dec scores from raw Q and raw K;
//   cdec makes `rows` <= kDecodeRows x any `cols` scores from consecutive prefill panels
//   `stride` floats apart (the packed key cache).
using PackF32Fn = void (*)(std::size_t cols, std::size_t d, const float *k, std::size_t ldk,
                           float *panel) noexcept;
using QkF32Fn = void (*)(std::size_t rows, std::size_t cols, std::size_t d, const float *q,
                         std::size_t ldq, const float *panel, float *s, std::size_t lds,
                         float scale, unsigned flags) noexcept;
using DecF32Fn = void (*)(std::size_t rows, std::size_t cols, std::size_t d, const float *q,
                          std::size_t ldq, const float *k, std::size_t ldk, float *s,
                          std::size_t lds, float scale) noexcept;

using CacheDecF32Fn = void (*)(std::size_t rows, std::size_t cols, std::size_t d, const float *q,
                               std::size_t ldq, const float *panels, std::size_t stride, float *s,
                               std::size_t lds, float scale) noexcept;

// Calls with at most this many query rows take the decode shape.
constexpr std::size_t kDecodeRows = 3;

// One row of a dtype's kernel table, defined beside the kernel's code (ATTNSCORE_DEFINE_QK_F32),
// so its tile sizes have one source. The name is the symbol, the test name and the bench name.
struct KernelF32 {
  const char *name;
  attnscore_level level;
  std::size_t mr, nr;  // prefill tile
  QkF32Fn fn;
  PackF32Fn pack;
  std::size_t nr_dec;  // decode tile: kDecodeRows x nr_dec
  DecF32Fn dec;
  CacheDecF32Fn cdec;
};

extern const KernelF32 qk_f32_4x4__scalar_kernel;
#if ATTNSCORE_HAVE_SSE2
extern const KernelF32 qk_f32_6x8__sse2_kernel;
#endif
#if ATTNSCORE_HAVE_AVX2
extern const KernelF32 qk_f32_6x16__avx2_kernel;
#endif
#if ATTNSCORE_HAVE_AVX512
extern const KernelF32 qk_f32_8x32__avx512_kernel;
#endif
#if ATTNSCORE_HAVE_NEON && defined(__aarch64__)
extern const KernelF32 qk_f32_8x8__neon_kernel;
#elif ATTNSCORE_HAVE_NEON
extern const KernelF32 qk_f32_4x12__neon_kernel;
#endif

// Stack bytes for one packed K panel in a compute call: d is processed in chunks of
// kPanelFloats / NR (256 for NR = 32), so any d works without heap allocation.
constexpr std::size_t kPanelFloats = 8192;

// The f32 table, best first: every compiled kernel, whether or not this CPU can run it.
const KernelF32 *const *kernels_f32(std::size_t *count) noexcept;

// The kernel the public API uses now (best usable under the cap); chosen once, then cached.
const KernelF32 &active_kernel_f32() noexcept;

// Whether this CPU can run kernels of `level` (independent of the cap).
bool cpu_supports(attnscore_level level) noexcept;

// The blocking driver: packs K panel by panel and runs the kernel over S's MR x NR blocks.
// Arguments must be valid (checked by the public API).
void run_f32(const KernelF32 &kernel, std::size_t n_q, std::size_t n_k, std::size_t d,
             const float *q, std::size_t ldq, const float *k, std::size_t ldk, float *s,
             std::size_t lds, float scale) noexcept;

// How a parallel call splits S (lib/src/parallel.cpp): n_tasks blocks of `step` rows (by_rows)
// or keys, each a whole number of tiles, one per thread. Decode calls (n_q <= kDecodeRows and
// below MR) split the keys in multiples of key_unit, at least a few hundred per task; prefill
// calls split the key panels (NR keys), or the row tiles (MR rows) when there are fewer panels
// than threads.
struct Split {
  bool by_rows;
  std::size_t step, n_tasks;
};
Split plan_split(std::size_t n_q, std::size_t n_k, std::size_t mr, std::size_t nr,
                 std::size_t key_unit, std::size_t threads) noexcept;

// CPU feature detection (arch/cpu_features_*.cpp): ATTNSCORE_CPU_* bits, detected once.
std::uint64_t detect_cpu_features() noexcept;

}  // namespace attnscore

#endif  // ATTNSCORE_KERNELS_H
