// SPDX-License-Identifier: Apache-2.0
// The oneDNN anchors (libdnnl-dev), one thread, the primitive created once outside the timed loop
// (as an inference engine holds it): for the int8 rows its s8 x s8 matmul with f32 output and
// per-key output scales; for the bf16 rows its bf16 x bf16 matmul with f32 output. K is given as
// attnscore gets it, row-major n_k x d (oneDNN's "ba" weights), so any packing oneDNN does per
// call is in its time, as ours is in ours.
#include "bench.hpp"

#ifdef ATTNSCORE_BENCH_ONEDNN
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

namespace bench {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// Q (n_q x d) x K^T into f32 S with `attr`, Q and K of `type`, the i-th call on data.k_at(i);
// false (the benchmark skipped) where oneDNN has no such matmul here.
template <class D>
bool time_matmul(benchmark::State &state, const Shape &sh, D &data, dt type,
                 const dnnl::primitive_attr &attr) {
  const auto n_q = static_cast<dnnl::memory::dim>(sh.n_q),
             n_k = static_cast<dnnl::memory::dim>(sh.n_k), d = static_cast<dnnl::memory::dim>(sh.d);
  Buf<float> s(sh.n_q * sh.n_k);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const dnnl::memory::desc q_md({n_q, d}, type, tag::ab), k_md({d, n_k}, type, tag::ba),
      s_md({n_q, n_k}, dt::f32, tag::ab);
  dnnl::matmul::primitive_desc pd;
  try {
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(q_md, k_md, s_md), attr, eng);
  } catch (const dnnl::error &) {  // e.g. bf16 below AVX-512
    state.SkipWithError("oneDNN has no matmul for this type on this CPU");
    return false;
  }
  const dnnl::matmul mm(pd);
  state.SetLabel(pd.impl_info_str());  // the implementation oneDNN chose (its ISA)
  // oneDNN memory takes void *; it only reads Q and K.
  dnnl::memory q_mem(q_md, eng, const_cast<void *>(static_cast<const void *>(data.q.data()))),
      k_mem(k_md, eng), s_mem(s_md, eng, s.data());
  std::size_t i = 0;
  for (auto _ : state) {
    k_mem.set_data_handle(const_cast<void *>(static_cast<const void *>(data.k_at(i++))));
    mm.execute(strm, {{DNNL_ARG_SRC, q_mem}, {DNNL_ARG_WEIGHTS, k_mem}, {DNNL_ARG_DST, s_mem}});
    strm.wait();
    benchmark::DoNotOptimize(s.data());
    benchmark::ClobberMemory();
  }
  return true;
}

void bm_onednn_s8(benchmark::State &state, Shape sh) {
  // The same data and scales as the attnscore s8 row (bm_s8): q_scale 0.01, k_scale 0.02.
  const DataS8 data(sh);
  dnnl::primitive_attr attr;
  // Per-key output scales (mask: dimension 1): (q_scale * scale) * k_scale, one per key.
  const float qs = 0.01f * attnscore_default_scale(sh.d);
  attr.set_output_scales(1 << 1, std::vector<float>(sh.n_k, qs * 0.02f));
  if (time_matmul(state, sh, data, dt::s8, attr)) set_counters_s8(state, sh, -1);
}

// The same bf16 data as the attnscore bf16 rows, the scale as one output scale.
void bm_onednn_bf16(benchmark::State &state, Shape sh) {
  const Data16 data(sh, ATTNSCORE_DTYPE_BF16);
  dnnl::primitive_attr attr;
  attr.set_output_scales(0, {attnscore_default_scale(sh.d)});
  if (time_matmul(state, sh, data, dt::bf16, attr)) set_counters(state, sh, -1);
}

}  // namespace

bool register_onednn_s8(const Shape &sh) {
  if (attnscore_kernel_name(ATTNSCORE_DTYPE_S8) == nullptr) return false;  // no int8 rows
  omp_set_num_threads(1);  // one thread, like one attnscore call
  benchmark::RegisterBenchmark(("onednn_s8/" + sh.name()).c_str(), bm_onednn_s8, sh)
      ->Unit(benchmark::kMicrosecond);
  return true;
}

bool register_onednn_bf16(const Shape &sh) {
  if (attnscore_kernel_name(ATTNSCORE_DTYPE_BF16) == nullptr) return false;  // no bf16 rows
  omp_set_num_threads(1);
  // With AVX512_BF16 oneDNN multiplies pairs with vdpbf16ps (its own summation order, denormals
  // flushed): a fast mode, not the f32 call's bits that our default bf16 gives. "_dpbf16" says so.
  const auto isa = static_cast<int>(dnnl::get_effective_cpu_isa());
  const bool dot = (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
  benchmark::RegisterBenchmark(((dot ? "onednn_bf16_dpbf16/" : "onednn_bf16/") + sh.name()).c_str(),
                               bm_onednn_bf16, sh)
      ->Unit(benchmark::kMicrosecond);
  return true;
}

}  // namespace bench
#else
bool bench::register_onednn_s8(const Shape &) { return false; }
bool bench::register_onednn_bf16(const Shape &) { return false; }
#endif
