// SPDX-License-Identifier: Apache-2.0
// CPU families without a SIMD level here (the scalar level only): no features to detect.
#include "dispatch/kernels.h"

namespace attnscore {

std::uint64_t detect_cpu_features() noexcept { return 0; }

unsigned detect_cpu_tuning() noexcept { return kTuneGeneric; }

}  // namespace attnscore
