// SPDX-License-Identifier: Apache-2.0
// The XNNPACK anchor (libxnnpack-dev): its fully-connected operator, S = Q K^T with K as the
// [output_channels, input_channels] weights, one thread (no pthreadpool). Two rows per dtype:
// - xnnpack_<dtype>: K packed when the operator is created, outside the timed loop, as an
//   inference engine does with weights (cold decode: one operator per copy of K in the pool, so
//   every call reads a different packed K from memory);
// - xnnpack_<dtype>_packing: the operator created, run and deleted in the timed call, as a KV
//   cache that changes every step would need (the packing pass is in its time, as ours is).
// f32: the scale is folded into Q once, outside the timing (XNNPACK has no scale argument).
// qs8: per-tensor scales and int8 output (XNNPACK's qs8 operator has no f32 output), so its S
// is a quarter of the bytes of ours; the integer dot products are the same work.
#include "bench.hpp"

#ifdef ATTNSCORE_BENCH_XNNPACK
#include <xnnpack.h>

#include <cmath>
#include <limits>
#include <memory>

#include "attnscore/attnscore.h"

namespace bench {
namespace {

struct OpDelete {
  void operator()(xnn_operator_t op) const { xnn_delete_operator(op); }
};
using Op = std::unique_ptr<xnn_operator, OpDelete>;

// The f32 operator over K (n_k x d), or null on failure.
Op make_f32(const Shape &sh, const float *k) {
  xnn_operator_t op = nullptr;
  const float inf = std::numeric_limits<float>::infinity();
  if (xnn_create_fully_connected_nc_f32(sh.d, sh.n_k, sh.d, sh.n_k, k, nullptr, -inf, inf, 0,
                                        &op) != xnn_status_success)
    return nullptr;
  return Op(op);
}

// The qs8 operator over int8 K with the benchmark's scales (q 0.01, k 0.02; S's scale chosen
// so typical scores fit int8).
Op make_qs8(const Shape &sh, const std::int8_t *k) {
  xnn_operator_t op = nullptr;
  const float s_scale = 0.01f * 0.02f * 128.0f * std::sqrt(static_cast<float>(sh.d)) / 127.0f;
  if (xnn_create_fully_connected_nc_qs8(sh.d, sh.n_k, sh.d, sh.n_k, 0, 0.01f, 0.02f, k, nullptr, 0,
                                        s_scale, -128, 127, 0, &op) != xnn_status_success)
    return nullptr;
  return Op(op);
}

bool setup(xnn_operator_t op, std::size_t n_q, const float *q, float *s) {
  return xnn_setup_fully_connected_nc_f32(op, n_q, q, s, nullptr) == xnn_status_success;
}
bool setup(xnn_operator_t op, std::size_t n_q, const std::int8_t *q, std::int8_t *s) {
  return xnn_setup_fully_connected_nc_qs8(op, n_q, q, s, nullptr) == xnn_status_success;
}

// Times S = Q K^T for the K copies `k_at(i)`, the operator made by `make` (packed once per copy,
// or in every call when `packing`).
template <class T, class Make, class KAt>
void run(benchmark::State &state, const Shape &sh, bool packing, std::size_t copies, const T *q,
         T *s, Make make, KAt k_at) {
  std::vector<Op> ops;
  if (!packing)
    for (std::size_t c = 0; c < copies; ++c) {
      ops.push_back(make(sh, k_at(c)));
      if (!ops.back() || !setup(ops.back().get(), sh.n_q, q, s)) {
        state.SkipWithError("XNNPACK: creating or setting up the operator failed");
        return;
      }
    }
  std::size_t i = 0;
  for (auto _ : state) {
    bool ok;
    if (packing) {
      const Op op = make(sh, k_at(i++ % copies));
      ok = op && setup(op.get(), sh.n_q, q, s) &&
           xnn_run_operator(op.get(), nullptr) == xnn_status_success;
    } else {
      ok = xnn_run_operator(ops[i++ % copies].get(), nullptr) == xnn_status_success;
    }
    if (!ok) {
      state.SkipWithError("XNNPACK: running the operator failed");
      return;
    }
    benchmark::DoNotOptimize(s);
    benchmark::ClobberMemory();
  }
}

void bm_xnnpack_f32(benchmark::State &state, Shape sh, bool packing) {
  Data data(sh);
  const float scale = attnscore_default_scale(sh.d);
  for (float &x : data.q) x *= scale;
  run(state, sh, packing, data.copies, data.q.data(), data.s.data(), make_f32,
      [&](std::size_t c) { return data.k_at(c); });
  set_counters(state, sh, -1);
}

void bm_xnnpack_qs8(benchmark::State &state, Shape sh, bool packing) {
  const DataS8 data(sh);  // the attnscore s8 rows' data
  Buf<std::int8_t> s(sh.n_q * sh.n_k);
  run(state, sh, packing, data.copies, data.q.data(), s.data(), make_qs8,
      [&](std::size_t c) { return data.k_at(c); });
  set_counters_s8(state, sh, -1);
}

}  // namespace

bool register_xnnpack(const Shape &sh) {
  static const bool ready = xnn_initialize(nullptr) == xnn_status_success;
  if (!ready) return false;
  for (bool packing : {false, true}) {
    const std::string suffix = packing ? "_packing/" : "/";
    benchmark::RegisterBenchmark(("xnnpack_f32" + suffix + sh.name()).c_str(), bm_xnnpack_f32, sh,
                                 packing)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("xnnpack_qs8" + suffix + sh.name()).c_str(), bm_xnnpack_qs8, sh,
                                 packing)
        ->Unit(benchmark::kMicrosecond);
  }
  return true;
}

}  // namespace bench
#else
bool bench::register_xnnpack(const Shape &) { return false; }
#endif
