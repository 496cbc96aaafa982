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

// Uniform f32 kernel: an MR x NR block of S from raw Q and K rows; rows <= MR and cols <= NR are
// the rows and columns present (>= 1). Writes exactly rows x cols elements of s; never reads s.
using QkF32Fn = void (*)(std::size_t rows, std::size_t cols, std::size_t d, const float *q,
                         std::size_t ldq, const float *k, std::size_t ldk, float *s,
                         std::size_t lds, float scale) noexcept;

#define ATTNSCORE_DECLARE_QK_F32(name)                                                          \
  void name(std::size_t rows, std::size_t cols, std::size_t d, const float *q, std::size_t ldq, \
            const float *k, std::size_t ldk, float *s, std::size_t lds, float scale) noexcept

ATTNSCORE_DECLARE_QK_F32(qk_f32_1x1__scalar);
#if ATTNSCORE_HAVE_SSE2
ATTNSCORE_DECLARE_QK_F32(qk_f32_3x4__sse2);
#endif
#if ATTNSCORE_HAVE_AVX2
ATTNSCORE_DECLARE_QK_F32(qk_f32_3x4__avx2);
#endif
#if ATTNSCORE_HAVE_AVX512
ATTNSCORE_DECLARE_QK_F32(qk_f32_4x4__avx512);
#endif

// One row of a dtype's kernel table. The name is the symbol, the test name and the bench name.
struct KernelF32 {
  const char *name;
  attnscore_level level;
  std::size_t mr, nr;
  QkF32Fn fn;
};

// The f32 table, best first: every compiled kernel, whether or not this CPU can run it.
const KernelF32 *kernels_f32(std::size_t *count) noexcept;

// The kernel the public API uses now (best usable under the cap); chosen once, then cached.
const KernelF32 &active_kernel_f32() noexcept;

// Whether this CPU can run kernels of `level` (independent of the cap).
bool cpu_supports(attnscore_level level) noexcept;

// The blocking driver: tiles S into the kernel's MR x NR blocks. Arguments must be valid.
void run_f32(const KernelF32 &kernel, std::size_t n_q, std::size_t n_k, std::size_t d,
             const float *q, std::size_t ldq, const float *k, std::size_t ldk, float *s,
             std::size_t lds, float scale) noexcept;

// CPU feature detection (arch/cpu_features_*.cpp): ATTNSCORE_CPU_* bits, detected once.
std::uint64_t detect_cpu_features() noexcept;

}  // namespace attnscore

#endif  // ATTNSCORE_KERNELS_H
