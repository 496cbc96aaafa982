// SPDX-License-Identifier: Apache-2.0
// Fuzz target over the whole public API: the input picks the call, sizes, strides, pointers
// (null, misaligned, overlapping), scale bits, level cap and raw element bits. Each call's status
// is predicted independently from the documented rules; errors must leave memory untouched, and
// results must meet the numerical contract at every level. Buffers have exactly the bytes a call
// may touch, and under ASan everything else (row gaps, leading pads) is poisoned.
//
// This file picks the call (kCalls) and the level cap; each section of calls is a file of
// tests/fuzz/, sharing fuzz.hpp. A new dtype adds a traits struct like F32 and its rows in
// kCalls; a new call adds a row (seeds.py numbers the rows the same way).
#include <cstdint>

#include "fuzz/fuzz.hpp"

#if FUZZ_ASAN
// In every ASan runtime (GCC's and clang's), though GCC ships no header declaring it.
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *,
                                                                             std::size_t),
                                                         void (*free_hook)(const volatile void *));
#endif

namespace fuzz {
namespace {

// The level cap for the call: BEST, a level of this family, another family's, or any value.
int decode_cap(Input &in) {
  const std::uint8_t c = in.u8();
  switch (c % 8) {
    case 0:
    case 1:
      return kBest;
    case 6:
      return kForeign[(c >> 3) % (sizeof kForeign / sizeof kForeign[0])];
    case 7:
      return in.u8();
    default:
      return kFamily[(c >> 3) % (sizeof kFamily / sizeof kFamily[0])];
  }
}

using CallFn = int (*)(Input &, int cap);
const CallFn kCalls[] = {
    fuzz_scores_f32_c,      // 0, scores.cpp
    fuzz_scores_f32_cpp,    // 1
    fuzz_queries,           // 2, queries.cpp
    fuzz_kcache_f32,        // 3, kcache.cpp
    fuzz_attention,         // 4, attention.cpp
    fuzz_scores_f16_c,      // 5, scores.cpp
    fuzz_scores_f16_cpp,    // 6
    fuzz_s8,                // 7, s8.cpp
    fuzz_convert,           // 8, f16.cpp
    fuzz_f16_out,           // 9
    fuzz_quantize,          // 10, quantize.cpp
    fuzz_parallel,          // 11, parallel.cpp
    fuzz_kcache_f16,        // 12, kcache.cpp
    fuzz_kcache_s8,         // 13
    fuzz_scores_bf16_c,     // 14, scores.cpp
    fuzz_kcache_bf16,       // 15, kcache.cpp
    fuzz_attention_output,  // 16, output.cpp
};

}  // namespace
}  // namespace fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  using namespace fuzz;
#if FUZZ_ASAN
  static const bool hooked = __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free) != 0;
  (void)hooked;
#endif
  Input in(data, size);
  const CallFn fn = kCalls[in.u8() % (sizeof kCalls / sizeof kCalls[0])];
  // The cap is process-wide: start from none, then apply this input's (which may be rejected).
  set_cap(kBest);
  const int cap = decode_cap(in);
  g_call = "attnscore_set_max_level";
  const attnscore_status st =
      api("attnscore_set_max_level", [&] { return attnscore_set_max_level(as_level(cap)); });
  const bool valid = in_family(cap) || cap == kBest;
  if (st != (valid ? ATTNSCORE_OK : ATTNSCORE_ERR_UNKNOWN_LEVEL))
    fail("attnscore_set_max_level(%d) returned %d", cap, st);
  if (valid && cap != kBest) {
    const int in_force = api("attnscore_max_level", [] { return attnscore_max_level(); });
    if (in_force != cap) fail("cap %d set, attnscore_max_level() says %d", cap, in_force);
    // The kernel chosen: the best level this CPU supports not above the cap.
    int best = 0;
    for (int l : kFamily)
      if (cap_order(l) <= cap_order(cap) && attnscore_level_supported(as_level(l)) && !int8_only(l))
        best = l;
    const int chosen =
        api("attnscore_kernel_level", [] { return attnscore_kernel_level(ATTNSCORE_DTYPE_F32); });
    if (chosen != best) fail("cap %d: kernel level %d, expected %d", cap, chosen, best);
  }
  const int r = fn(in, cap);
  set_cap(kBest);
  return r;
}
