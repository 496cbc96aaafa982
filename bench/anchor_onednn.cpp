// SPDX-License-Identifier: Apache-2.0
// The oneDNN anchor for the int8 rows (libdnnl-dev): its s8 x s8 matmul with f32 output and
// per-key output scales, one thread, the primitive created once outside the timed loop (as an
// inference engine holds it). K is given as attnscore gets it, row-major n_k x d (oneDNN's "ba"
// weights), so any packing oneDNN does per call is in its time, as ours is in ours.
#include "bench.hpp"

#ifdef ATTNSCORE_BENCH_ONEDNN
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include "attnscore/attnscore.h"

namespace bench {
namespace {

void bm_onednn_s8(benchmark::State &state, Shape sh) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const auto n_q = static_cast<dnnl::memory::dim>(sh.n_q),
             n_k = static_cast<dnnl::memory::dim>(sh.n_k), d = static_cast<dnnl::memory::dim>(sh.d);
  // The same data and scales as the attnscore s8 row (bm_s8): q_scale 0.01, k_scale 0.02.
  DataS8 data(sh);  // non-const: oneDNN memory takes void *
  Buf<float> s(sh.n_q * sh.n_k);

  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const dnnl::memory::desc q_md({n_q, d}, dt::s8, tag::ab), k_md({d, n_k}, dt::s8, tag::ba),
      s_md({n_q, n_k}, dt::f32, tag::ab);
  dnnl::primitive_attr attr;
  // Per-key output scales (mask: dimension 1): (q_scale * scale) * k_scale, one per key.
  const float qs = 0.01f * attnscore_default_scale(sh.d);
  attr.set_output_scales(1 << 1, std::vector<float>(sh.n_k, qs * 0.02f));
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(q_md, k_md, s_md), attr, eng);
  const dnnl::matmul mm(pd);
  dnnl::memory q_mem(q_md, eng, data.q.data()), k_mem(k_md, eng, data.k.data()),
      s_mem(s_md, eng, s.data());
  std::size_t i = 0;
  for (auto _ : state) {
    k_mem.set_data_handle(data.k.data() + (i++ % data.copies) * data.k_stride);
    mm.execute(strm, {{DNNL_ARG_SRC, q_mem}, {DNNL_ARG_WEIGHTS, k_mem}, {DNNL_ARG_DST, s_mem}});
    strm.wait();
    benchmark::DoNotOptimize(s.data());
    benchmark::ClobberMemory();
  }
  set_counters_s8(state, sh, -1);
}

}  // namespace

bool register_onednn_s8(const Shape &sh) {
  omp_set_num_threads(1);  // one thread, like one attnscore call
  benchmark::RegisterBenchmark(("onednn_s8/" + sh.name()).c_str(), bm_onednn_s8, sh)
      ->Unit(benchmark::kMicrosecond);
  return true;
}

}  // namespace bench
#else
bool bench::register_onednn_s8(const Shape &) { return false; }
#endif
