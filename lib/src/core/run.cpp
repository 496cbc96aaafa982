// SPDX-License-Identifier: Apache-2.0
// The driver's entry points (arguments checked, scale resolved): each binds a kernel row and its K,
// raw or a cache, to an engine (engines.hpp) and runs the one loop (driver.hpp). The public calls
// and the kernel tests all come through here, so each engine's loop is compiled once.
#include "core/checks.h"
#include "core/engines.hpp"
#include "core/kcache.h"
#include "dispatch/kernels.h"

namespace attnscore {
namespace {

template <class T>
QView<T> q_view(const attnscore_tensor &t) noexcept {
  return {static_cast<const T *>(t.data), t.head_stride, t.row_stride};
}
template <class T>
KView<T> k_view(const attnscore_tensor &t) noexcept {
  return {static_cast<const T *>(t.data), t.head_stride, t.row_stride};
}
#if ATTNSCORE_HAVE_S8
ScaleView scale_view(const attnscore_tensor &t) noexcept {
  return {t.scale, t.scale_head_stride, t.scale_row_stride};
}
#endif

// A float cache's panels as K: KV head hk's first panel at hk * P * NR * d elements.
template <class T>
KView<T> cache_view(const CacheCore &c) noexcept {
  const std::size_t stride = c.nr * c.d;
  return {reinterpret_cast<const T *>(c.panels), c.panels_per_head * stride, stride};
}

#if ATTNSCORE_HAVE_F16
// The 16-bit kernel row of a call with Q of binary16 or bfloat16 and its options.
const KernelF16 &kernel_u16(const attnscore_attention_desc &a) noexcept {
  if (enum_int(a.q.dtype) == ATTNSCORE_DTYPE_BF16)
    return (a.flags & ATTNSCORE_ATTN_BF16_DOT) ? active_kernel_bf16dot() : active_kernel_bf16();
  return (a.flags & ATTNSCORE_ATTN_F16_ACCUMULATE) ? active_kernel_f16acc() : active_kernel_f16();
}
#endif

// Raw float K through its engine. In the output call's prefill, with room in the workspace
// (output_pack_buffer), each KV head's K is first packed there by the engine's own pack, which
// every block of rows would otherwise do again: the same panels, so the same bits.
template <class T>
void drive_raw(FloatEngine<T, false> e, const Problem &p, const attnscore_parallel *par) noexcept {
#if ATTNSCORE_HAVE_OUTPUT
  float *pk = p.out != nullptr ? output_pack_buffer(p, e.mr(), e.nr(), par) : nullptr;
#else
  float *pk = nullptr;  // no output call in this build
#endif
  if (pk == nullptr) return drive_parallel(e, p, par);
  const std::size_t nr = e.nr(), d = e.d, P = p.n_k / nr + (p.n_k % nr != 0);
  for (std::size_t hk = 0; hk < p.heads_kv; ++hk)
    for (std::size_t j = 0; j < p.n_k; j += nr)
      e.k->pack(p.n_k - j < nr ? p.n_k - j : nr, d, e.kv.p + hk * e.kv.hs + j * e.kv.rs, e.kv.rs,
                pk + (hk * P + j / nr) * nr * d);
  e.pk = pk, e.pk_hs = P * nr * d;
  OutputSpec o = *p.out;
  o.ws = nullptr, o.ws_bytes = 0;  // nothing left for a split
  Problem packed = p;
  packed.out = &o;
  drive_parallel(e, packed, par);
}

}  // namespace

#if ATTNSCORE_HAVE_OUTPUT
std::size_t output_pack_query(const attnscore_attention_desc &a, std::size_t dv) noexcept {
  if (a.k_cache != nullptr) return 0;  // already packed
  const KernelF32 *f = nullptr;
  if (enum_int(a.q.dtype) == ATTNSCORE_DTYPE_F32) f = &active_kernel_f32();
#if ATTNSCORE_HAVE_F16
  if (enum_int(a.q.dtype) == ATTNSCORE_DTYPE_F16 || enum_int(a.q.dtype) == ATTNSCORE_DTYPE_BF16) {
    const KernelF16 &k = kernel_u16(a);
    if (k.dot == nullptr && k.acc == nullptr) f = k.f32;  // the options' own engines pack apart
  }
#endif
  if (f == nullptr) return 0;
  return output_pack_bytes(a.heads_q, a.heads_kv, a.n_q, a.n_k, a.d, dv, f->mr, f->nr);
}
#endif

void run_attention(const attnscore_attention_desc &a, const CacheCore *c, const Problem &p,
                   const attnscore_parallel *par) noexcept {
  const std::size_t d = a.d;
  const float scale = p.scale;
  switch (enum_int(a.q.dtype)) {
    case ATTNSCORE_DTYPE_F32:
      if (c != nullptr)
        return drive_parallel(F32Engine<true>{static_cast<const KernelF32 *>(c->kernel),
                                              q_view<float>(a.q), cache_view<float>(*c), d, scale},
                              p, par);
      return drive_raw(
          F32Engine<false>{&active_kernel_f32(), q_view<float>(a.q), k_view<float>(a.k), d, scale},
          p, par);
#if ATTNSCORE_HAVE_F16
    case ATTNSCORE_DTYPE_F16:
    case ATTNSCORE_DTYPE_BF16: {
      // One pair of engines for both 16-bit formats: they reach the format only through the
      // kernel row, so bf16 shares f16's compiled driver loops (library size).
      using U = std::uint16_t;
      if (c != nullptr)
        return drive_parallel(F16Engine<true>{static_cast<const KernelF16 *>(c->kernel),
                                              q_view<U>(a.q), cache_view<U>(*c), d, scale},
                              p, par);
      const KernelF16 &k = kernel_u16(a);
      if (k.dot != nullptr)
        return drive_parallel(Bf16DotEngine{&k, q_view<U>(a.q), k_view<U>(a.k), d, scale}, p, par);
      if (k.acc != nullptr)
        return drive_parallel(F16AccEngine{&k, q_view<U>(a.q), k_view<U>(a.k), d, scale}, p, par);
      return drive_raw(F16Engine<false>{&k, q_view<U>(a.q), k_view<U>(a.k), d, scale}, p, par);
    }
#endif
#if ATTNSCORE_HAVE_S8
    case ATTNSCORE_DTYPE_S8: {
      using I = std::int8_t;
      if (c != nullptr) {
        const std::size_t P = c->panels_per_head;
        const S8CacheView view{c->panel_bytes,        c->chunks, c->sums,
                               P * c->chunks * c->nr, c->scales, P * c->nr};
        return drive_parallel(
            S8Engine<true>{static_cast<const KernelS8 *>(c->kernel),
                           q_view<I>(a.q),
                           scale_view(a.q),
                           {reinterpret_cast<const I *>(c->panels), P * c->panel_bytes, 0},
                           {},
                           view,
                           d,
                           scale},
            p, par);
      }
      return drive_parallel(S8Engine<false>{&active_kernel_s8(),
                                            q_view<I>(a.q),
                                            scale_view(a.q),
                                            k_view<I>(a.k),
                                            scale_view(a.k),
                                            {},
                                            d,
                                            scale},
                            p, par);
    }
#endif
    default:
      return;  // checked: not reached
  }
}

void run_f32(const KernelF32 &kernel, std::size_t n_q, std::size_t n_k, std::size_t d,
             const float *q, std::size_t ldq, const float *k, std::size_t ldk, float *s,
             std::size_t lds, float scale) noexcept {
  drive_call(F32Engine<false>{&kernel, {q, 0, ldq}, {k, 0, ldk}, d, scale},
             scores_problem(n_q, n_k, d, s, lds, scale));
}

#if ATTNSCORE_HAVE_F16
void run_f16(const KernelF16 &kernel, std::size_t n_q, std::size_t n_k, std::size_t d,
             const std::uint16_t *q, std::size_t ldq, const std::uint16_t *k, std::size_t ldk,
             float *s, std::size_t lds, float scale) noexcept {
  const Problem p = scores_problem(n_q, n_k, d, s, lds, scale);
  if (kernel.dot != nullptr)
    drive_call(Bf16DotEngine{&kernel, {q, 0, ldq}, {k, 0, ldk}, d, scale}, p);
  else if (kernel.acc != nullptr)
    drive_call(F16AccEngine{&kernel, {q, 0, ldq}, {k, 0, ldk}, d, scale}, p);
  else
    drive_call(F16Engine<false>{&kernel, {q, 0, ldq}, {k, 0, ldk}, d, scale}, p);
}

#endif

#if ATTNSCORE_HAVE_S8
void run_s8(const KernelS8 &kernel, std::size_t n_q, std::size_t n_k, std::size_t d,
            const std::int8_t *q, std::size_t ldq, const float *q_scale, std::size_t q_step,
            const std::int8_t *k, std::size_t ldk, const float *k_scale, std::size_t k_step,
            float *s, std::size_t lds, float scale) noexcept {
  drive_call(S8Engine<false>{&kernel,
                             {q, 0, ldq},
                             {q_scale, 0, q_step},
                             {k, 0, ldk},
                             {k_scale, 0, k_step},
                             {},
                             d,
                             scale},
             scores_problem(n_q, n_k, d, s, lds, scale));
}
#endif

}  // namespace attnscore
