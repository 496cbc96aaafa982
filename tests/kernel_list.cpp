// SPDX-License-Identifier: Apache-2.0
// The kernel testers' one list of kernels (see support.hpp); needs the library's internal table.
#include <catch2/catch.hpp>

#include "dispatch/kernels.h"
#include "support.hpp"

namespace testing {

std::vector<const attnscore::KernelF32 *> usable_kernels_f32() {
  std::size_t n;
  const attnscore::KernelF32 *const *table = attnscore::kernels_f32(&n);
  std::vector<const attnscore::KernelF32 *> usable;
  for (std::size_t i = 0; i < n; ++i) {
    if (attnscore::cpu_supports(table[i]->level))
      usable.push_back(table[i]);
    else
      WARN("not run (CPU lacks " << attnscore_level_name(table[i]->level)
                                 << "): " << table[i]->name);
  }
  return usable;
}

const attnscore::KernelF32 *kernel_f32(const std::string &name) {
  std::size_t n;
  const attnscore::KernelF32 *const *table = attnscore::kernels_f32(&n);
  for (std::size_t i = 0; i < n; ++i)
    if (name == table[i]->name) return table[i];
  return nullptr;
}

// The other dtypes' tables: every compiled kernel this CPU runs (the others reported).
template <class K>
std::vector<const K *> usable_kernels(const K *const *table, std::size_t n) {
  std::vector<const K *> usable;
  for (std::size_t i = 0; i < n; ++i) {
    if (attnscore::cpu_supports(table[i]->level))
      usable.push_back(table[i]);
    else
      WARN("not run (CPU lacks " << attnscore_level_name(table[i]->level)
                                 << "): " << table[i]->name);
  }
  return usable;
}

#if ATTNSCORE_HAVE_F16
// A 16-bit table's rows this CPU runs: some need features beyond their level's (`extra`: FP16
// arithmetic, AVX512_BF16), which cpu_runs checks too.
std::vector<const attnscore::KernelF16 *> usable_kernels_16(
    const attnscore::KernelF16 *const *table, std::size_t n, const char *extra) {
  std::vector<const attnscore::KernelF16 *> usable;
  for (std::size_t i = 0; i < n; ++i) {
    if (attnscore::cpu_runs(*table[i]))
      usable.push_back(table[i]);
    else
      WARN("not run (CPU lacks " << attnscore_level_name(table[i]->level)
                                 << (table[i]->features ? extra : "") << "): " << table[i]->name);
  }
  return usable;
}
#endif

std::vector<const attnscore::KernelF16 *> usable_kernels_f16() {
#if ATTNSCORE_HAVE_F16
  std::size_t n;
  const attnscore::KernelF16 *const *table = attnscore::kernels_f16(&n);
  return usable_kernels_16(table, n, " or FP16 arithmetic");
#else
  WARN("f16 not built (ATTNSCORE_ENABLE_F16=OFF): no f16 kernel to test");
  return {};
#endif
}

std::vector<const attnscore::KernelF16 *> usable_kernels_bf16() {
#if ATTNSCORE_HAVE_F16
  std::size_t n;
  const attnscore::KernelF16 *const *table = attnscore::kernels_bf16(&n);
  return usable_kernels_16(table, n, " or AVX512_BF16");
#else
  WARN("bf16 not built (ATTNSCORE_ENABLE_F16=OFF): no bf16 kernel to test");
  return {};
#endif
}

std::vector<const attnscore::KernelS8 *> usable_kernels_s8() {
#if ATTNSCORE_HAVE_S8
  std::size_t n;
  const attnscore::KernelS8 *const *table = attnscore::kernels_s8(&n);
  return usable_kernels(table, n);
#else
  WARN("int8 not built (ATTNSCORE_ENABLE_S8=OFF): no s8 kernel to test");
  return {};
#endif
}

bool f32_level(attnscore_level level) {
  std::size_t n;
  const attnscore::KernelF32 *const *table = attnscore::kernels_f32(&n);
  for (std::size_t i = 0; i < n; ++i)
    if (table[i]->level == level && attnscore::cpu_supports(level)) return true;
  return false;
}

}  // namespace testing
