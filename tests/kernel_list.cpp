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

std::vector<const attnscore::KernelF16 *> usable_kernels_f16() {
#if ATTNSCORE_HAVE_F16
  // Rows may need features beyond their level's (FP16 arithmetic): cpu_runs checks both.
  std::size_t n;
  const attnscore::KernelF16 *const *table = attnscore::kernels_f16(&n);
  std::vector<const attnscore::KernelF16 *> usable;
  for (std::size_t i = 0; i < n; ++i) {
    if (attnscore::cpu_runs(*table[i]))
      usable.push_back(table[i]);
    else
      WARN("not run (CPU lacks " << attnscore_level_name(table[i]->level)
                                 << (table[i]->features ? " or FP16 arithmetic" : "")
                                 << "): " << table[i]->name);
  }
  return usable;
#else
  WARN("f16 not built (ATTNSCORE_ENABLE_F16=OFF): no f16 kernel to test");
  return {};
#endif
}

std::vector<const attnscore::KernelF16 *> usable_kernels_bf16() {
#if ATTNSCORE_HAVE_F16
  std::size_t n;
  const attnscore::KernelF16 *const *table = attnscore::kernels_bf16(&n);
  return usable_kernels(table, n);
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
