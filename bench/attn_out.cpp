// SPDX-License-Identifier: Apache-2.0
// The attention output rows: attnscore_attention_output (O = softmax(S) V, S never in memory)
// beside the unfused step it replaces, attnscore_attention writing the softmax weights S (f32)
// and then OpenBLAS's sgemm for P V (when OpenBLAS was found).
//   decode:  32 query heads on 8 KV heads, d = dv = 128, one query; K and V from key and value
//            caches of f32, f16 or s8; hot and cold; 1 and 2 threads of the built-in pool.
//   split:   the same on one KV head (f16), 1 and 2 threads, 2 with the key-split workspace.
//   prefill: one head, d = dv = 64 and 128, n_q = n_k = 512 and 2048, f32 tensors (and bf16 at
//            d 128), causal or not; `packed` rows give the call the workspace it asks for (K
//            packed once).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "attnscore/attnscore.hpp"
#include "bench.hpp"
#ifdef ATTNSCORE_BENCH_OPENBLAS
#include <cblas.h>
#endif

namespace bench {
namespace {

constexpr std::size_t kHeadsQ = 32, kHeadsKV = 8, kDecodeD = 128;
// Tokens of random K and V made once; longer caches repeat them (the values do not change the
// time, and drawing 64K tokens of normal numbers per shape would take seconds).
constexpr std::size_t kBaseTokens = 4096;

// f32 Q (heads_q x d) and K, V (heads_kv x kBaseTokens x d), unit normal (seed 42).
struct Base {
  Buf<float> q, k, v;
  Base() : q(kHeadsQ * kDecodeD), k(kHeadsKV * kBaseTokens * kDecodeD), v(k.size()) {
    std::mt19937 rng(42);
    std::normal_distribution<float> dist;
    for (auto *b : {&q, &k, &v})
      for (float &x : *b) x = dist(rng);
  }
};
const Base &base() {
  static const Base b;
  return b;
}

std::size_t elem_bytes(attnscore_dtype dtype) {
  return dtype == ATTNSCORE_DTYPE_F32 ? 4 : dtype == ATTNSCORE_DTYPE_S8 ? 1 : 2;
}
const char *dtype_name(attnscore_dtype dtype) {
  return dtype == ATTNSCORE_DTYPE_F32 ? "f32" : dtype == ATTNSCORE_DTYPE_S8 ? "s8" : "f16";
}

// The base tokens in one dtype: f32 as they are, f16 rounded, s8 quantized per row (token; Q:
// per query head) with attnscore_quantize_s8. `f32` holds the values the library reads back
// (f16 widened, s8 q * scale), the V of the unfused step.
struct Typed {
  Buf<unsigned char> data;
  Buf<float> scale, f32;
  Typed(attnscore_dtype dtype, const Buf<float> &x, std::size_t rows) : f32(x) {
    data.resize(x.size() * elem_bytes(dtype));
    if (dtype == ATTNSCORE_DTYPE_F32) {
      std::memcpy(data.data(), x.data(), x.size() * sizeof(float));
    } else if (dtype == ATTNSCORE_DTYPE_S8) {
      scale.resize(rows);
      auto *q8 = reinterpret_cast<std::int8_t *>(data.data());
      attnscore_quantize_s8(rows, kDecodeD, ATTNSCORE_DTYPE_F32, x.data(), kDecodeD, q8, kDecodeD,
                            scale.data());
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t t = 0; t < kDecodeD; ++t)
          f32[r * kDecodeD + t] = static_cast<float>(q8[r * kDecodeD + t]) * scale[r];
    } else {
      attnscore_convert(x.size(), ATTNSCORE_DTYPE_F32, x.data(), dtype, data.data());
      attnscore_convert(x.size(), dtype, data.data(), ATTNSCORE_DTYPE_F32, f32.data());
    }
  }
};

// A decode layer: copies of the key and value caches (one, hot; cold: as many as fill
// kColdPoolBytes, at least 2, each call the next), Q, O and (unfused) S and f32 V.
struct Decode {
  attnscore_dtype dtype;
  std::size_t n_k;
  bool cold;
  std::size_t hkv;  // KV heads: kHeadsKV, or 1 for the split rows
  std::size_t copies = 0;
  Buf<unsigned char> kmem, vmem;
  std::vector<attnscore_cache *> kc, vc;
  Typed q;
  Buf<float> o, s, v32;  // v32: copies x heads_kv x n_k x dv, made by the first unfused row
  bool checked = false;  // the unfused O was compared with the fused one

  Decode(attnscore_dtype dt, std::size_t n, bool c, std::size_t kv)
      : dtype(dt), n_k(n), cold(c), hkv(kv), q(dt, base().q, kHeadsQ), o(kHeadsQ * kDecodeD) {}

  // Fills the caches; false (and the benchmark skipped) where one cannot be built.
  bool build(benchmark::State &state) {
    const Typed k(dtype, base().k, kHeadsKV * kBaseTokens),
        v(dtype, base().v, kHeadsKV * kBaseTokens);
    const attnscore_cache_shape ks{ATTNSCORE_CACHE_KEYS, dtype, hkv, n_k, kDecodeD};
    const attnscore_cache_shape vs{ATTNSCORE_CACHE_VALUES, dtype, hkv, n_k, kDecodeD};
    const std::size_t kb = attnscore_cache_bytes(&ks), vb = attnscore_cache_bytes(&vs);
    if (kb == 0 || vb == 0) {
      state.SkipWithError("no cache of this dtype in this build");
      return false;
    }
    copies = cold ? std::max<std::size_t>(2, kColdPoolBytes / (kb + vb)) : 1;
    kmem.resize(copies * kb);
    vmem.resize(copies * vb);
    kc.resize(copies);
    vc.resize(copies);
    for (std::size_t c = 0; c < copies; ++c) {
      if (attnscore_cache_init(kmem.data() + c * kb, kb, &ks, &kc[c]) != ATTNSCORE_OK ||
          attnscore_cache_init(vmem.data() + c * vb, vb, &vs, &vc[c]) != ATTNSCORE_OK) {
        state.SkipWithError("cannot make the caches");
        return false;
      }
      for (std::size_t j = 0; j < n_k; j += kBaseTokens) {
        const std::size_t n = std::min(kBaseTokens, n_k - j);
        for (const auto &[cache, src] : {std::make_pair(kc[c], &k), std::make_pair(vc[c], &v)}) {
          const attnscore_tensor t{src->data.data(),
                                   dtype,
                                   kBaseTokens * kDecodeD,
                                   kDecodeD,
                                   src->scale.empty() ? nullptr : src->scale.data(),
                                   kBaseTokens,
                                   1};
          if (attnscore_cache_append(cache, n, &t) != ATTNSCORE_OK) {
            state.SkipWithError("cannot fill the caches");
            return false;
          }
        }
      }
    }
    return true;
  }

  // The f32 V of every copy, as the fused call reads the value cache (outside the timing).
  void make_v32() {
    if (!v32.empty()) return;
    const Typed v(dtype, base().v, kHeadsKV * kBaseTokens);
    const std::size_t per = kHeadsKV * n_k * kDecodeD;
    v32.resize(copies * per);
    for (std::size_t c = 0; c < copies; ++c)
      for (std::size_t h = 0; h < kHeadsKV; ++h)
        for (std::size_t j = 0; j < n_k; j += kBaseTokens)
          std::memcpy(v32.data() + c * per + (h * n_k + j) * kDecodeD,
                      v.f32.data() + h * kBaseTokens * kDecodeD,
                      std::min(kBaseTokens, n_k - j) * kDecodeD * sizeof(float));
  }

  // The descriptor of copy c: K and V from its caches, O f32.
  attnscore_attention_desc desc(std::size_t c) {
    attnscore_attention_desc a = attnscore_attention_dense(dtype, kHeadsQ, hkv, 1, n_k, kDecodeD);
    a.q.data = q.data.data();
    if (dtype == ATTNSCORE_DTYPE_S8) a.q.scale = q.scale.data();
    a.k_cache = kc[c];
    a.v_cache = vc[c];
    a.dv = kDecodeD;
    a.o = attnscore_output{o.data(), ATTNSCORE_DTYPE_F32, kDecodeD, kDecodeD};
    return a;
  }
};

// The decode data of the last shape run, kept for the next rows of the same shape (fused and
// unfused, 1 and 2 threads, every repetition): building a cold pool takes longer than its rows.
Decode *decode_data(benchmark::State &state, attnscore_dtype dtype, std::size_t n_k, bool cold,
                    std::size_t hkv = kHeadsKV) {
  static std::unique_ptr<Decode> last;
  if (last && last->dtype == dtype && last->n_k == n_k && last->cold == cold && last->hkv == hkv)
    return last.get();
  last.reset();
  auto made = std::make_unique<Decode>(dtype, n_k, cold, hkv);
  if (!made->build(state)) return nullptr;
  last = std::move(made);
  return last.get();
}

// KV_GB (the bytes of K and V elements a call reads in the caches' dtype; s8 scales not
// counted) per second, and %bw against the cold pool's read bandwidth with as many threads. The
// unfused rows count the same bytes, so the rates compare times.
void decode_counters(benchmark::State &state, attnscore_dtype dtype, std::size_t n_k,
                     std::size_t threads, std::size_t hkv = kHeadsKV) {
  using C = benchmark::Counter;
  const double gb = static_cast<double>(hkv * n_k * 2 * kDecodeD * elem_bytes(dtype)) * 1e-9;
  state.counters["KV_GB"] = C(gb, C::kIsIterationInvariantRate);
  const double bw = dram_read_gbps(threads);
  if (bw > 0) state.counters["%bw"] = C(gb / bw * 100, C::kIsIterationInvariantRate);
}

#ifdef ATTNSCORE_BENCH_OPENBLAS
// Largest |a - b| over max |b|: the unfused output against the fused one.
float rel_diff(const Buf<float> &a, const Buf<float> &b) {
  float diff = 0, big = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff = std::max(diff, std::fabs(a[i] - b[i])), big = std::max(big, std::fabs(b[i]));
  return big > 0 ? diff / big : diff;
}
// Summed in another order (the sgemm's), the two outputs differ by a few f32 roundings.
constexpr float kMaxRelDiff = 1e-4f;
#endif

// The decode rows' data, once the row's pool has started (else the row is skipped: null).
Decode *decode_setup(benchmark::State &state, const attnscore::ThreadPool &pool,
                     attnscore_dtype dtype, std::size_t n_k, bool cold,
                     std::size_t hkv = kHeadsKV) {
  if (pool.status() != ATTNSCORE_OK) {
    state.SkipWithError(attnscore_status_string(pool.status()));
    return nullptr;
  }
  return decode_data(state, dtype, n_k, cold, hkv);
}

// hkv 1 (32 query heads on one KV head) is one block, so two threads share its keys only through
// a workspace: `split` gives the call the size attnscore_attention_output_workspace asks for.
void bm_decode(benchmark::State &state, attnscore_dtype dtype, std::size_t n_k, bool cold,
               std::size_t threads, std::size_t hkv, bool split) {
  attnscore::ThreadPool pool(threads);
  Decode *data = decode_setup(state, pool, dtype, n_k, cold, hkv);
  if (data == nullptr) return;
  const attnscore_parallel par = pool.parallel();
  attnscore_attention_desc a = data->desc(0);
  std::vector<unsigned char> ws(split ? attnscore_attention_output_workspace(&a, threads) : 0);
  if (split) state.counters["ws_KiB"] = static_cast<double>(ws.size()) / 1024;
  std::size_t i = 0;
  for (auto _ : state) {
    a = data->desc(i++ % data->copies);
    a.workspace = ws.empty() ? nullptr : ws.data(), a.workspace_bytes = ws.size();
    const attnscore_status st = attnscore_attention_output(&a, &par);
    if (st != ATTNSCORE_OK) state.SkipWithError(attnscore_status_string(st));
    benchmark::DoNotOptimize(data->o.data());
    benchmark::ClobberMemory();
  }
  decode_counters(state, dtype, n_k, threads, hkv);
}

// Prefill: one head of f32 Q, K and V (n x d each, unit normal), O n x d; S for the unfused rows.
struct Prefill {
  Buf<float> q, k, v, o, s;
  Buf<unsigned char> q16, k16, v16;  // bf16 rows: Q, K and V as bfloat16
  attnscore_attention_desc a;
  Prefill(std::size_t n, std::size_t d, bool causal, attnscore_dtype dtype = ATTNSCORE_DTYPE_F32)
      : q(n * d), k(n * d), v(n * d), o(n * d), a(attnscore_attention_dense(dtype, 1, 1, n, n, d)) {
    std::mt19937 rng(42);
    std::normal_distribution<float> dist;
    for (auto *b : {&q, &k, &v})
      for (float &x : *b) x = dist(rng);
    a.q.data = q.data(), a.k.data = k.data();
    a.v = attnscore_tensor{v.data(), ATTNSCORE_DTYPE_F32, n * d, d, nullptr, 0, 0};
    if (dtype != ATTNSCORE_DTYPE_F32) {
      for (auto [from, to] :
           {std::make_pair(&q, &q16), std::make_pair(&k, &k16), std::make_pair(&v, &v16)}) {
        to->resize(n * d * 2);
        attnscore_convert(n * d, ATTNSCORE_DTYPE_F32, from->data(), dtype, to->data());
      }
      a.q.data = q16.data(), a.k.data = k16.data(), a.v.data = v16.data(), a.v.dtype = dtype;
    }
    a.dv = d;
    a.o = attnscore_output{o.data(), ATTNSCORE_DTYPE_F32, n * d, d};
    a.mask = causal ? ATTNSCORE_MASK_CAUSAL : 0u;
  }
};

// GFLOP: 2 n_q n_k d for QK^T and as many for PV, halved under the causal mask (the work the
// mask leaves), the same count for both rows; %peak against the best level's FMA peak.
void prefill_counters(benchmark::State &state, std::size_t n, std::size_t d, bool causal) {
  using C = benchmark::Counter;
  const double gflop = 4.0 * n * n * d * (causal ? 0.5 : 1.0) * 1e-9;
  state.counters["GFLOP"] = C(gflop, C::kIsIterationInvariantRate);
  const double peak = peak_gflops();
  if (peak > 0) state.counters["%peak"] = C(gflop / peak * 100, C::kIsIterationInvariantRate);
}

// packed: the call gets the workspace attnscore_attention_output_workspace asks for (K packed
// once, not once per block of rows).
void bm_prefill(benchmark::State &state, std::size_t n, std::size_t d, bool causal, bool packed,
                attnscore_dtype dtype) {
  Prefill data(n, d, causal, dtype);
  std::vector<unsigned char> ws(packed ? attnscore_attention_output_workspace(&data.a, 1) : 0);
  if (packed && ws.empty()) return state.SkipWithError("no workspace for this shape");
  data.a.workspace = ws.empty() ? nullptr : ws.data(), data.a.workspace_bytes = ws.size();
  for (auto _ : state) {
    const attnscore_status st = attnscore_attention_output(&data.a, nullptr);
    if (st != ATTNSCORE_OK) state.SkipWithError(attnscore_status_string(st));
    benchmark::DoNotOptimize(data.o.data());
    benchmark::ClobberMemory();
  }
  prefill_counters(state, n, d, causal);
}

#ifdef ATTNSCORE_BENCH_OPENBLAS
// P V for the query heads of one KV head (rows g x n_q of S, contiguous), one sgemm.
struct PV {
  const float *s, *v;
  float *o;
  std::size_t rows, n_k, dv;
};
void pv_head(void *ctx, std::size_t h) {
  const PV &t = *static_cast<const PV *>(ctx);
  const int rows = static_cast<int>(t.rows), n_k = static_cast<int>(t.n_k);
  const int dv = static_cast<int>(t.dv);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, dv, n_k, 1.0f,
              t.s + h * t.rows * t.n_k, n_k, t.v + h * t.n_k * t.dv, dv, 0.0f,
              t.o + h * t.rows * t.dv, dv);
}

// The unfused decode: attnscore_attention with ATTNSCORE_ATTN_SOFTMAX on the same key cache
// writing S (f32), then one sgemm per KV head (P of its 4 query heads times its f32 V), the heads
// split over the same pool (OpenBLAS itself on one thread). V is f32 whatever the caches' dtype,
// converted before the timing.
void bm_decode_unfused(benchmark::State &state, attnscore_dtype dtype, std::size_t n_k, bool cold,
                       std::size_t threads) {
  attnscore::ThreadPool pool(threads);
  Decode *data = decode_setup(state, pool, dtype, n_k, cold);
  if (data == nullptr) return;
  const attnscore_parallel par = pool.parallel();
  data->make_v32();
  data->s.resize(kHeadsQ * n_k);
  Buf<float> o(kHeadsQ * kDecodeD);
  const std::size_t per = kHeadsKV * n_k * kDecodeD;
  auto step = [&](std::size_t c) {
    attnscore_attention_desc a = data->desc(c);
    a.s.data = data->s.data();
    a.flags = ATTNSCORE_ATTN_SOFTMAX;
    const attnscore_status st = attnscore_attention(&a, &par);
    if (st != ATTNSCORE_OK) return st;
    PV t{data->s.data(), data->v32.data() + c * per, o.data(), kHeadsQ / kHeadsKV, n_k, kDecodeD};
    par.parallel_for(par.ctx, pv_head, &t, kHeadsKV);
    return ATTNSCORE_OK;
  };
  if (!data->checked) {
    const attnscore_attention_desc a = data->desc(0);
    if (step(0) != ATTNSCORE_OK || attnscore_attention_output(&a, &par) != ATTNSCORE_OK ||
        !(rel_diff(o, data->o) <= kMaxRelDiff)) {
      state.SkipWithError("the unfused output differs from the fused one");
      return;
    }
    data->checked = true;
  }
  std::size_t i = 0;
  for (auto _ : state) {
    const attnscore_status st = step(i++ % data->copies);
    if (st != ATTNSCORE_OK) state.SkipWithError(attnscore_status_string(st));
    benchmark::DoNotOptimize(o.data());
    benchmark::ClobberMemory();
  }
  decode_counters(state, dtype, n_k, threads);
}

// The unfused prefill: attnscore_attention (mask, softmax) writing S, then one sgemm P V.
void bm_prefill_unfused(benchmark::State &state, std::size_t n, std::size_t d, bool causal) {
  Prefill data(n, d, causal);
  data.s.resize(n * n);
  Buf<float> o(n * d);
  attnscore_attention_desc a = data.a;
  a.s.data = data.s.data();
  a.flags = ATTNSCORE_ATTN_SOFTMAX;
  auto step = [&] {
    const attnscore_status st = attnscore_attention(&a, nullptr);
    PV t{data.s.data(), data.v.data(), o.data(), n, n, d};
    if (st == ATTNSCORE_OK) pv_head(&t, 0);
    return st;
  };
  if (step() != ATTNSCORE_OK || attnscore_attention_output(&data.a, nullptr) != ATTNSCORE_OK ||
      !(rel_diff(o, data.o) <= kMaxRelDiff)) {
    state.SkipWithError("the unfused output differs from the fused one");
    return;
  }
  for (auto _ : state) {
    const attnscore_status st = step();
    if (st != ATTNSCORE_OK) state.SkipWithError(attnscore_status_string(st));
    benchmark::DoNotOptimize(o.data());
    benchmark::ClobberMemory();
  }
  prefill_counters(state, n, d, causal);
}
#endif

}  // namespace

void register_attention_output() {
  for (std::size_t n_k : {4096, 16384, 65536})
    for (attnscore_dtype dtype : {ATTNSCORE_DTYPE_F32, ATTNSCORE_DTYPE_F16, ATTNSCORE_DTYPE_S8}) {
      if (attnscore_kernel_name(dtype) == nullptr) continue;  // left out of this build
      for (bool cold : {false, true})
        for (std::size_t threads : {1, 2}) {
          if (threads > 1 && !threads_allowed()) continue;
          const std::string name = std::string(dtype_name(dtype)) + "/t" + std::to_string(threads) +
                                   "/32q8kv/d128/1x" + std::to_string(n_k) +
                                   (cold ? "/cold" : "/hot");
          benchmark::RegisterBenchmark(("attn_out:" + name).c_str(), bm_decode, dtype, n_k, cold,
                                       threads, kHeadsKV, false)
              ->Unit(benchmark::kMicrosecond)
              ->UseRealTime();
#ifdef ATTNSCORE_BENCH_OPENBLAS
          benchmark::RegisterBenchmark(("attn_out_unfused:" + name).c_str(), bm_decode_unfused,
                                       dtype, n_k, cold, threads)
              ->Unit(benchmark::kMicrosecond)
              ->UseRealTime();
#endif
        }
    }
  // One KV head: 1 thread, 2 threads without and with the workspace.
  for (std::size_t n_k : {16384, 65536})
    for (bool cold : {false, true})
      for (const auto &[threads, split] :
           {std::make_pair(1, false), std::make_pair(2, false), std::make_pair(2, true)}) {
        if (threads > 1 && !threads_allowed()) continue;
        const std::string name = std::string(split ? "attn_out_split" : "attn_out") + ":f16/t" +
                                 std::to_string(threads) + "/32q1kv/d128/1x" + std::to_string(n_k) +
                                 (cold ? "/cold" : "/hot");
        benchmark::RegisterBenchmark(name.c_str(), bm_decode, ATTNSCORE_DTYPE_F16, n_k, cold,
                                     static_cast<std::size_t>(threads), std::size_t{1}, split)
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
      }
  for (std::size_t d : {64, 128})
    for (std::size_t n : {512, 2048})
      for (bool causal : {false, true}) {
        const std::string name = std::string(causal ? "causal" : "nomask") + "/1q1kv/d" +
                                 std::to_string(d) + "/" + std::to_string(n) + "x" +
                                 std::to_string(n);
        for (bool packed : {false, true})
          benchmark::RegisterBenchmark(((packed ? "attn_out_packed:" : "attn_out:") + name).c_str(),
                                       bm_prefill, n, d, causal, packed, ATTNSCORE_DTYPE_F32)
              ->Unit(benchmark::kMicrosecond);
        // bf16 Q, K and V (the default mode: the f32 tiles on the widened values), d 128.
        if (d == 128 && attnscore_kernel_name(ATTNSCORE_DTYPE_BF16) != nullptr)
          for (bool packed : {false, true})
            benchmark::RegisterBenchmark(
                ((packed ? "attn_out_packed:" : "attn_out:") + name + "/bf16").c_str(), bm_prefill,
                n, d, causal, packed, ATTNSCORE_DTYPE_BF16)
                ->Unit(benchmark::kMicrosecond);
#ifdef ATTNSCORE_BENCH_OPENBLAS
        benchmark::RegisterBenchmark(("attn_out_unfused:" + name).c_str(), bm_prefill_unfused, n, d,
                                     causal)
            ->Unit(benchmark::kMicrosecond);
#endif
      }
}

}  // namespace bench
