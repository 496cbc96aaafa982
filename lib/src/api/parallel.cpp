// SPDX-License-Identifier: Apache-2.0
// Parallel calls through the caller's parallel-for, and the small built-in pool.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "core/attention.h"
#include "core/checks.h"
#include "core/engines.hpp"
#include "dispatch/kernels.h"

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

attnscore_status attnscore_scores_f32_parallel(const attnscore_parallel *par, size_t n_q,
                                               size_t n_k, size_t d, const float *q, size_t ldq,
                                               const float *k, size_t ldk, float *s, size_t lds,
                                               float scale) {
  const attnscore_status st =
      check_scores(n_q, n_k, d, q, ldq, k, ldk, s, lds, scale, sizeof(float), sizeof(float));
  if (st != ATTNSCORE_OK || n_q == 0 || n_k == 0) return st;
  if (par != nullptr && par->parallel_for == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (scale == 0.0f) scale = attnscore_default_scale(d);
  drive_parallel(F32Engine<false>{&active_kernel_f32(), {q, 0, ldq}, {k, 0, ldk}, d, scale},
                 scores_problem(n_q, n_k, d, s, lds, scale), par);
  return ATTNSCORE_OK;
}

attnscore_status attnscore_attention_f32_parallel(const attnscore_parallel *par,
                                                  const attnscore_attention_desc *desc,
                                                  const float *q, const float *k, float *s) {
  if (desc == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  const attnscore_attention_desc a = *desc;  // one read, as attnscore_attention_f32
  const attnscore_status st = check_attention(a, q, k, s);
  if (st != ATTNSCORE_OK || a.heads_q == 0 || a.n_q == 0 || a.n_k == 0) return st;
  if (par != nullptr && par->parallel_for == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  const KernelF32 &kn = active_kernel_f32();
  const float scale = a.scale == 0.0f ? attnscore_default_scale(a.d) : a.scale;
  drive_parallel(F32Engine<false>{&kn,
                                  {q, a.q_head_stride, a.q_row_stride},
                                  {k, a.k_head_stride, a.k_row_stride},
                                  a.d,
                                  scale},
                 attention_problem(a, s, scale, kn.level), par);
  return ATTNSCORE_OK;
}

attnscore_status attnscore_scores_f16_parallel(const attnscore_parallel *par, size_t n_q,
                                               size_t n_k, size_t d, const uint16_t *q, size_t ldq,
                                               const uint16_t *k, size_t ldk, float *s, size_t lds,
                                               float scale) {
#if !ATTNSCORE_HAVE_F16
  (void)par, (void)n_q, (void)n_k, (void)d, (void)q, (void)ldq, (void)k, (void)ldk, (void)s;
  (void)lds, (void)scale;
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
#else
  const attnscore_status st = check_scores(n_q, n_k, d, q, ldq, k, ldk, s, lds, scale,
                                           sizeof(std::uint16_t), sizeof(float));
  if (st != ATTNSCORE_OK || n_q == 0 || n_k == 0) return st;
  if (par != nullptr && par->parallel_for == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (scale == 0.0f) scale = attnscore_default_scale(d);
  drive_parallel(F16Engine<false>{&active_kernel_f16(), {q, 0, ldq}, {k, 0, ldk}, d, scale},
                 scores_problem(n_q, n_k, d, s, lds, scale), par);
  return ATTNSCORE_OK;
#endif
}

attnscore_status attnscore_scores_s8_parallel(const attnscore_parallel *par, size_t n_q, size_t n_k,
                                              size_t d, const int8_t *q, size_t ldq,
                                              const float *q_scale, size_t q_scale_count,
                                              const int8_t *k, size_t ldk, const float *k_scale,
                                              size_t k_scale_count, float *s, size_t lds,
                                              float scale) {
#if !ATTNSCORE_HAVE_S8
  (void)par, (void)n_q, (void)n_k, (void)d, (void)q, (void)ldq, (void)q_scale, (void)k;
  (void)q_scale_count, (void)ldk, (void)k_scale, (void)k_scale_count, (void)s, (void)lds;
  (void)scale;
  return ATTNSCORE_ERR_UNKNOWN_DTYPE;
#else
  const attnscore_status st = check_s8(n_q, n_k, d, q, ldq, q_scale, q_scale_count, k, ldk, k_scale,
                                       k_scale_count, s, lds, scale);
  if (st != ATTNSCORE_OK || n_q == 0 || n_k == 0) return st;
  if (par != nullptr && par->parallel_for == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (scale == 0.0f) scale = attnscore_default_scale(d);
  const std::size_t q_step = q_scale_count == 1 ? 0 : 1, k_step = k_scale_count == 1 ? 0 : 1;
  drive_parallel(S8Engine<false>{&active_kernel_s8(),
                                 {q, 0, ldq},
                                 {q_scale, 0, q_step},
                                 {k, 0, ldk},
                                 {k_scale, 0, k_step},
                                 {},
                                 d,
                                 scale},
                 scores_problem(n_q, n_k, d, s, lds, scale), par);
  return ATTNSCORE_OK;
#endif
}

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

size_t attnscore_pool_threads(const attnscore_pool *pool) {
  return pool == nullptr ? 0 : pool->workers.size() + 1;
}

attnscore_parallel attnscore_pool_parallel(attnscore_pool *pool) {
  if (pool == nullptr) return {nullptr, nullptr, 0};
  return {pool_parallel_for, pool, pool->workers.size() + 1};
}

}  // extern "C"
