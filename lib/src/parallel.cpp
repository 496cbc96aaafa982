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

#include "attention.h"
#include "checks.h"
#include "kernels.h"

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

std::size_t ceil_div(std::size_t a, std::size_t b) noexcept { return a / b + (a % b != 0); }

// Keys per task below which a decode split costs more than it saves (a few KiB of K).
constexpr std::size_t kMinDecodeKeys = 256;

// One attention call split into tasks: ranges of KV-head groups (each with its query heads), or,
// with fewer groups than threads, ranges of query rows in every head (their positions, and so the
// masks, kept). Every head and row is computed as in the whole call, so the bits do not change.
struct AttnSplit {
  const KernelF32 *kernel;
  attnscore_attention_desc a;
  const float *q, *k;
  float *s;
  float scale;
  bool by_rows;
  std::size_t step;
};

void run_attn_task(void *ctx, std::size_t task) {
  const AttnSplit &w = *static_cast<const AttnSplit *>(ctx);
  attnscore_attention_desc a = w.a;
  const float *q = w.q, *k = w.k;
  float *s = w.s;
  const std::size_t n = w.by_rows ? a.n_q : a.heads_kv, first = task * w.step;
  if (first >= n) return;
  const std::size_t count = std::min(w.step, n - first);
  if (w.by_rows) {
    q += first * a.q_row_stride;
    s += first * a.s_row_stride;
    a.n_q = count;
    a.pos_offset += first;  // cannot overflow: the whole call's last position fits
  } else {
    const std::size_t g = a.heads_q / a.heads_kv;
    q += first * g * a.q_head_stride;
    s += first * g * a.s_head_stride;
    k += first * a.k_head_stride;
    a.heads_kv = count;
    a.heads_q = count * g;
  }
  run_attention_f32(*w.kernel, a, q, k, s, w.scale);
}

// The other dtypes' calls: `run(i0, rows, j0, cols)` computes that block of S with the
// single-threaded driver; tasks are blocks of the split, as for f32.
template <class Run>
struct BlockTask {
  const Run *run;
  std::size_t n_q, n_k;
  Split split;
};

template <class Run>
void run_block_task(void *ctx, std::size_t task) {
  const BlockTask<Run> &w = *static_cast<const BlockTask<Run> *>(ctx);
  const std::size_t n = w.split.by_rows ? w.n_q : w.n_k, first = task * w.split.step;
  if (first >= n) return;
  const std::size_t count = std::min(w.split.step, n - first);
  if (w.split.by_rows)
    (*w.run)(first, count, 0, w.n_k);
  else
    (*w.run)(0, w.n_q, first, count);
}

template <class Run>
void run_blocks(const attnscore_parallel *par, const Split &split, std::size_t n_q, std::size_t n_k,
                const Run &run) {
  if (par == nullptr) return run(0, n_q, 0, n_k);
  const BlockTask<Run> w{&run, n_q, n_k, split};
  par->parallel_for(par->ctx, run_block_task<Run>, const_cast<BlockTask<Run> *>(&w), split.n_tasks);
}

}  // namespace

Split plan_split(std::size_t n_q, std::size_t n_k, std::size_t mr, std::size_t nr,
                 std::size_t key_unit, std::size_t threads) noexcept {
  Split p;
  if (threads == 0) threads = 1;
  if (n_q <= kDecodeRows && n_q < mr) {  // decode: key ranges
    const std::size_t tasks = std::max<std::size_t>(1, std::min(threads, n_k / kMinDecodeKeys));
    p.by_rows = false;
    p.step = ceil_div(ceil_div(n_k, tasks), key_unit) * key_unit;
  } else if (ceil_div(n_k, nr) >= threads) {  // prefill: key panels
    p.by_rows = false;
    p.step = ceil_div(ceil_div(n_k, nr), threads) * nr;
  } else {  // prefill with few keys: row tiles
    p.by_rows = true;
    p.step = ceil_div(ceil_div(n_q, mr), threads) * mr;
  }
  p.n_tasks = ceil_div(p.by_rows ? n_q : n_k, p.step);
  return p;
}

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
  const KernelF32 &kn = active_kernel_f32();
  // Each block runs the same driver as the whole call, and every element is summed over t in the
  // same order in any block, so the split never changes a bit.
  const auto run = [&](std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols) {
    run_f32(kn, rows, cols, d, q + i0 * ldq, ldq, k + j0 * ldk, ldk, s + i0 * lds + j0, lds, scale);
  };
  const Split split =
      plan_split(n_q, n_k, kn.mr, kn.nr, kn.nr_dec, par == nullptr ? 1 : par->threads);
  run_blocks(par, split, n_q, n_k, run);
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
  AttnSplit w{&kn,   a,         q, k, s, a.scale == 0.0f ? attnscore_default_scale(a.d) : a.scale,
              false, a.heads_kv};
  const std::size_t threads = par == nullptr || par->threads == 0 ? 1 : par->threads;
  std::size_t n_tasks = 1;
  if (a.heads_kv >= threads) {
    w.step = ceil_div(a.heads_kv, threads);
    n_tasks = ceil_div(a.heads_kv, w.step);
  } else if (a.n_q >= 2 * kn.mr) {  // whole row tiles per task
    w.by_rows = true;
    w.step = ceil_div(ceil_div(a.n_q, kn.mr), threads) * kn.mr;
    n_tasks = ceil_div(a.n_q, w.step);
  }
  if (par == nullptr)
    run_attn_task(&w, 0);
  else
    par->parallel_for(par->ctx, run_attn_task, &w, n_tasks);
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
  const KernelF16 &kn = active_kernel_f16();
  const auto run = [&](std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols) {
    run_f16(kn, rows, cols, d, q + i0 * ldq, ldq, k + j0 * ldk, ldk, s + i0 * lds + j0, lds, scale);
  };
  const Split split =
      plan_split(n_q, n_k, kn.f32->mr, kn.f32->nr, kn.nr_dec, par == nullptr ? 1 : par->threads);
  run_blocks(par, split, n_q, n_k, run);
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
  const KernelS8 &kn = active_kernel_s8();
  const std::size_t q_step = q_scale_count == 1 ? 0 : 1, k_step = k_scale_count == 1 ? 0 : 1;
  // Integer sums are exact, so any split gives the same bits; blocks of whole tiles still.
  const auto run = [&](std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols) {
    run_s8(kn, rows, cols, d, q + i0 * ldq, ldq, q_scale + i0 * q_step, q_step, k + j0 * ldk, ldk,
           k_scale + j0 * k_step, k_step, s + i0 * lds + j0, lds, scale);
  };
  const Split split = plan_split(n_q, n_k, kn.mr, kn.nr, kn.nr, par == nullptr ? 1 : par->threads);
  run_blocks(par, split, n_q, n_k, run);
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
