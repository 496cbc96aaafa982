// SPDX-License-Identifier: Apache-2.0
// A parallel-for hook as callers write one, for the tests of parallel calls: it runs the tasks
// in forward, reverse or shuffled order on the calling thread, or one std::thread per task.
#ifndef ATTNSCORE_TESTS_PARALLEL_HOOK_HPP
#define ATTNSCORE_TESTS_PARALLEL_HOOK_HPP

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "attnscore/attnscore.h"

namespace testing {

// Hooks as callers write them. Each counts its calls and the tasks it ran.
struct Hook {
  enum Order { kForward, kReverse, kShuffled, kThreads } order;
  std::size_t calls = 0, tasks = 0;
};

inline void hook_parallel_for(void *ctx, attnscore_task_fn fn, void *task_ctx, std::size_t n) {
  Hook &h = *static_cast<Hook *>(ctx);
  ++h.calls;
  h.tasks += n;
  std::vector<std::size_t> idx(n);
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  switch (h.order) {
    case Hook::kReverse:
      std::reverse(idx.begin(), idx.end());
      break;
    case Hook::kShuffled: {
      std::mt19937 rng(static_cast<unsigned>(n * 7919));
      std::shuffle(idx.begin(), idx.end(), rng);
      break;
    }
    case Hook::kThreads: {  // one std::thread per task, all at once
      std::vector<std::thread> ts;
      for (std::size_t i : idx) ts.emplace_back([=] { fn(task_ctx, i); });
      for (std::thread &t : ts) t.join();
      return;
    }
    default:
      break;
  }
  for (std::size_t i : idx) fn(task_ctx, i);
}

}  // namespace testing

#endif  // ATTNSCORE_TESTS_PARALLEL_HOOK_HPP
