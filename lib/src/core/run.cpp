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

}  // namespace

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
      if (p.out != nullptr) {
        // Prefill of the output call with room in the workspace: K packed once, as a cache, not
        // once per block of rows (the cache gives the raw call's bits).
        const KernelF32 &k = active_kernel_f32();
        if (float *panels = output_pack_buffer(p, k.mr, k.nr, par)) {
          const std::size_t nr = k.nr, P = a.n_k / nr + (a.n_k % nr != 0);
          const auto *src = static_cast<const float *>(a.k.data);
          for (std::size_t hk = 0; hk < a.heads_kv; ++hk)
            for (std::size_t j = 0; j < a.n_k; j += nr)
              k.pack(a.n_k - j < nr ? a.n_k - j : nr, d,
                     src + hk * a.k.head_stride + j * a.k.row_stride, a.k.row_stride,
                     panels + (hk * P + j / nr) * nr * d);
          OutputSpec o = *p.out;
          o.ws = nullptr, o.ws_bytes = 0;
          Problem packed = p;
          packed.out = &o;
          return drive_parallel(
              F32Engine<true>{&k, q_view<float>(a.q), {panels, P * nr * d, nr * d}, d, scale},
              packed, par);
        }
      }
      return drive_parallel(
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
      const bool bf16 = enum_int(a.q.dtype) == ATTNSCORE_DTYPE_BF16;
      const KernelF16 &k = bf16 ? ((a.flags & ATTNSCORE_ATTN_BF16_DOT) ? active_kernel_bf16dot()
                                                                       : active_kernel_bf16())
                           : (a.flags & ATTNSCORE_ATTN_F16_ACCUMULATE) ? active_kernel_f16acc()
                                                                       : active_kernel_f16();
      if (k.dot != nullptr)
        return drive_parallel(Bf16DotEngine{&k, q_view<U>(a.q), k_view<U>(a.k), d, scale}, p, par);
      if (k.acc != nullptr)
        return drive_parallel(F16AccEngine{&k, q_view<U>(a.q), k_view<U>(a.k), d, scale}, p, par);
      return drive_parallel(F16Engine<false>{&k, q_view<U>(a.q), k_view<U>(a.k), d, scale}, p, par);
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
