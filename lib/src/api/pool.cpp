// SPDX-License-Identifier: Apache-2.0
// The small built-in pool, for callers without their own parallel-for.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "attnscore/attnscore.h"

// The built-in pool: workers wait for a job (a generation number), take task indices from an
// atomic counter, and the last to finish wakes the caller, who takes tasks too. Nothing is
// allocated per call.
struct attnscore_pool {
  std::vector<std::thread> workers;
  std::mutex call;  // one parallel-for at a time on a pool
  std::mutex m;
  std::condition_variable start, done;
  std::uint64_t generation = 0;
  bool stop = false;
  attnscore_task_fn fn = nullptr;
  void *task_ctx = nullptr;
  std::size_t n_tasks = 0;
  std::atomic<std::size_t> next{0};
  std::size_t busy = 0;  // workers not yet done with this generation

  void take_tasks() {
    for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n_tasks;)
      fn(task_ctx, i);
  }

  void work() {
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(m);
        start.wait(lock, [&] { return stop || generation != seen; });
        if (stop) return;
        seen = generation;
      }
      take_tasks();
      std::lock_guard<std::mutex> lock(m);
      if (--busy == 0) done.notify_one();
    }
  }

  void parallel_for(attnscore_task_fn f, void *ctx, std::size_t n) {
    std::lock_guard<std::mutex> one_call(call);
    {
      std::lock_guard<std::mutex> lock(m);
      fn = f, task_ctx = ctx, n_tasks = n;
      next.store(0, std::memory_order_relaxed);
      busy = workers.size();
      ++generation;
    }
    start.notify_all();
    take_tasks();
    std::unique_lock<std::mutex> lock(m);
    done.wait(lock, [&] { return busy == 0; });
  }

  void shut_down() noexcept {
    {
      std::lock_guard<std::mutex> lock(m);
      stop = true;
    }
    start.notify_all();
    for (std::thread &t : workers) t.join();
    workers.clear();
  }
};

namespace attnscore {
namespace {

void pool_parallel_for(void *pool, attnscore_task_fn fn, void *task_ctx, std::size_t n_tasks) {
  static_cast<attnscore_pool *>(pool)->parallel_for(fn, task_ctx, n_tasks);
}

}  // namespace

}  // namespace attnscore

using namespace attnscore;

extern "C" {

attnscore_status attnscore_pool_create(size_t threads, attnscore_pool **pool) {
  if (pool == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  attnscore_pool *p = new (std::nothrow) attnscore_pool;
  if (p == nullptr) return ATTNSCORE_ERR_SYSTEM;
  try {
    p->workers.reserve(threads - 1);
    for (std::size_t i = 1; i < threads; ++i) p->workers.emplace_back([p] { p->work(); });
  } catch (...) {  // std::system_error or std::bad_alloc: stop what started
    p->shut_down();
    delete p;
    return ATTNSCORE_ERR_SYSTEM;
  }
  *pool = p;
  return ATTNSCORE_OK;
}

void attnscore_pool_destroy(attnscore_pool *pool) {
  if (pool == nullptr) return;
  pool->shut_down();
  delete pool;
}

attnscore_parallel attnscore_pool_parallel(attnscore_pool *pool) {
  if (pool == nullptr) return {nullptr, nullptr, 0};
  return {pool_parallel_for, pool, pool->workers.size() + 1};
}

}  // extern "C"
