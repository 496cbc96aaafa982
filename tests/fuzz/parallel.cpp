// SPDX-License-Identifier: Apache-2.0
#include <cstdint>

#include "fuzz/fuzz.hpp"

namespace fuzz {

// ---------------------------------------------------------------------------------------------
// attnscore_attention through a parallel-for that runs the tasks on this thread in an order the
// input picks (or NULL par, or one without parallel_for): for every dtype, S f32 or f16, raw K or
// a cache, the call must return the single-threaded call's status (NULL_POINTER for a missing
// parallel_for once the checks pass), call the hook exactly once for work and never otherwise,
// run every task index once, and give the single-threaded call's bits (attention_case compares).
// (Threads themselves are the thread sanitizer's job; here the splits are.)

int fuzz_parallel(Input &in, int cap) {
  const std::uint8_t pmode = in.u8(), tmode = in.u8();
  Hook hook;
  hook.order = pmode >> 4;
  attnscore_parallel par{run_tasks, &hook, tmode < 0xf0 ? std::size_t{tmode} % 9 : huge(in, tmode)};
  if (pmode % 16 == 15) par.parallel_for = nullptr;
  AttnOpts o;
  o.par = pmode % 16 == 14 ? nullptr : &par;  // 14: the case's own choice (usually NULL par)
  o.hook = &hook;
  return attention_case(in, cap, o);
}

}  // namespace fuzz
