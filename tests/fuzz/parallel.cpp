// SPDX-License-Identifier: Apache-2.0
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

#include "fuzz/fuzz.hpp"

namespace fuzz {

// ---------------------------------------------------------------------------------------------
// The parallel calls, through a parallel-for that runs the tasks on this thread in an order the
// input picks: each must return the single-threaded call's status, call the hook only for work,
// run every task index once, and give the single-threaded call's bits. (Threads themselves are
// the thread sanitizer's job; here the splits are.)

namespace {

struct Hook {
  unsigned order = 0;
  std::size_t calls = 0, tasks = 0;
};

void run_tasks(void *pool_ctx, attnscore_task_fn fn, void *task_ctx, std::size_t n_tasks) {
  Hook &h = *static_cast<Hook *>(pool_ctx);
  ++h.calls;
  h.tasks = n_tasks;
  if (n_tasks == 0 || n_tasks > (std::size_t{1} << 16)) fail("%zu tasks", n_tasks);
  // Ascending, descending, odd then even, or a stride coprime to n_tasks.
  std::size_t step = 1;
  if (h.order % 4 == 3)
    for (step = n_tasks / 2 + 1; step > 1; --step) {
      std::size_t a = n_tasks, b = step;
      while (b != 0) a %= b, std::swap(a, b);
      if (a == 1) break;
    }
  for (std::size_t i = 0; i < n_tasks; ++i) {
    std::size_t t;
    switch (h.order % 4) {
      case 1:
        t = n_tasks - 1 - i;
        break;
      case 2:
        t = i < n_tasks / 2 ? 2 * i + 1 : 2 * (i - n_tasks / 2);
        break;
      case 3:
        t = (i * step) % n_tasks;
        break;
      default:
        t = i;
    }
    fn(task_ctx, t);
  }
}

}  // namespace

int fuzz_parallel(Input &in, int cap) {
  const unsigned which = in.u8() % 5;
  const std::uint8_t pmode = in.u8(), tmode = in.u8();
  Hook hook;
  hook.order = pmode >> 4;
  attnscore_parallel par{run_tasks, &hook, tmode < 0xf0 ? std::size_t{tmode} % 9 : huge(in, tmode)};
  if (pmode % 16 == 15) par.parallel_for = nullptr;
  const attnscore_parallel *pp = pmode % 16 == 14 ? nullptr : &par;
  std::size_t n_q = in.u8() % 20, n_k = in.u8() % 70, d = 1 + in.u8() % 40;
  if (in.u8() >= 0xf8) d = 0;
  while (n_q * n_k * d > (std::size_t{1} << 14)) n_k /= 2;
  const std::size_t ldq = d + in.u8() % 3, ldk = d + in.u8() % 3, lds = n_k + in.u8() % 3;
  const std::uint32_t scale_bits = decode_scale(in);
  const float scale = from_bits(scale_bits);
  const std::uint8_t nulls = in.u8();
  const bool null_q = nulls == 0xff, null_s = nulls == 0xfe;
  Input values = in.stream();
  const std::size_t nqe = n_q == 0 ? 0 : (n_q - 1) * ldq + d;
  const std::size_t nke = n_k == 0 ? 0 : (n_k - 1) * ldk + d;
  const std::size_t nse = n_q == 0 ? 0 : (n_q - 1) * lds + n_k;
  std::vector<float> s1(nse + 1, from_bits(kGuardBits)), s2 = s1;
  char what[200];
  std::snprintf(what, sizeof what,
                "parallel call %u, cap %d, %zu threads, order %u%s: %zu x %zu, d %zu, scale %#x",
                which, cap, par.threads, hook.order % 4,
                pp == nullptr      ? ", NULL par"
                : par.parallel_for ? ""
                                   : ", NULL parallel_for",
                n_q, n_k, d, scale_bits);
  g_call = what;
  attnscore_status st1, st2;
  if (which == 0 || which == 3) {  // f32, raw or from a key cache
    std::vector<float> q(nqe), k(nke);
    for (float &x : q) x = F32::value(values, 4, 0);
    for (float &x : k) x = F32::value(values, values.v8() % 6, 0);
    const float *qp = null_q ? nullptr : q.data();
    float *sp1 = null_s ? nullptr : s1.data(), *sp2 = null_s ? nullptr : s2.data();
    if (which == 0) {
      st1 = api("attnscore_scores_f32", [&] {
        return attnscore_scores_f32(n_q, n_k, d, qp, ldq, k.data(), ldk, sp1, lds, scale);
      });
      st2 = api("attnscore_scores_f32_parallel", [&] {
        return attnscore_scores_f32_parallel(pp, n_q, n_k, d, qp, ldq, k.data(), ldk, sp2, lds,
                                             scale);
      });
    } else {
      const std::size_t bytes = attnscore_kcache_f32_bytes(n_k + 1, d + 1);
      std::vector<unsigned char> mem(bytes);
      attnscore_kcache_f32 *cache = nullptr;
      if (attnscore_kcache_f32_init(mem.data(), bytes, n_k + 1, d + 1, &cache) != ATTNSCORE_OK)
        fail("cache init failed");
      // The cache holds d + 1 dimensions: Q's rows are read with d + 1 elements.
      std::vector<float> q1((n_q == 0 ? 0 : (n_q - 1) * (ldq + 1)) + d + 1);
      for (float &x : q1) x = F32::value(values, 4, 0);
      std::vector<float> k1(n_k * (d + 1));
      for (float &x : k1) x = F32::value(values, values.v8() % 6, 0);
      if (n_k != 0 && attnscore_kcache_f32_append(cache, n_k, k1.data(), d + 1) != ATTNSCORE_OK)
        fail("append failed");
      const float *qp1 = null_q ? nullptr : q1.data();
      st1 = api("attnscore_scores_f32_kcache", [&] {
        return attnscore_scores_f32_kcache(n_q, qp1, ldq + 1, cache, sp1, lds, scale);
      });
      st2 = api("attnscore_scores_f32_kcache_parallel", [&] {
        return attnscore_scores_f32_kcache_parallel(pp, n_q, qp1, ldq + 1, cache, sp2, lds, scale);
      });
    }
  } else if (which == 1) {  // f16
    if (!f16_built()) return -1;
    std::vector<std::uint16_t> q(nqe), k(nke);
    for (std::uint16_t &x : q) x = F16::value(values, 4, 0).bits;
    for (std::uint16_t &x : k) x = F16::value(values, values.v8() % 5, 0).bits;
    const std::uint16_t *qp = null_q ? nullptr : q.data();
    float *sp1 = null_s ? nullptr : s1.data(), *sp2 = null_s ? nullptr : s2.data();
    st1 = api("attnscore_scores_f16", [&] {
      return attnscore_scores_f16(n_q, n_k, d, qp, ldq, k.data(), ldk, sp1, lds, scale);
    });
    st2 = api("attnscore_scores_f16_parallel", [&] {
      return attnscore_scores_f16_parallel(pp, n_q, n_k, d, qp, ldq, k.data(), ldk, sp2, lds,
                                           scale);
    });
  } else if (which == 2) {  // s8, per-row or per-tensor scales
    if (!s8_built()) return -1;
    std::vector<std::int8_t> q(nqe), k(nke);
    for (std::int8_t &x : q) x = s8_value(values, 0);
    for (std::int8_t &x : k) x = s8_value(values, values.v8());
    const std::size_t qn = nulls & 1 ? 1 : n_q, kn = nulls & 2 ? 1 : n_k;
    std::vector<float> qs(qn + 1), ks(kn + 1);
    for (float &x : qs) x = s8_scale_value(values, 0);
    for (float &x : ks) x = s8_scale_value(values, 0);
    const std::int8_t *qp = null_q ? nullptr : q.data();
    float *sp1 = null_s ? nullptr : s1.data(), *sp2 = null_s ? nullptr : s2.data();
    st1 = api("attnscore_scores_s8", [&] {
      return attnscore_scores_s8(n_q, n_k, d, qp, ldq, qs.data(), qn, k.data(), ldk, ks.data(), kn,
                                 sp1, lds, scale);
    });
    st2 = api("attnscore_scores_s8_parallel", [&] {
      return attnscore_scores_s8_parallel(pp, n_q, n_k, d, qp, ldq, qs.data(), qn, k.data(), ldk,
                                          ks.data(), kn, sp2, lds, scale);
    });
  } else {  // attention: heads, groups, masks, softcap, softmax
    const std::size_t hkv = 1 + in.u8() % 3, g = 1 + in.u8() % 4, hq = hkv * g;
    while (hq * n_q * n_k * d > (std::size_t{1} << 14)) n_k /= 2;
    attnscore_attention_desc desc = attnscore_attention_desc_dense(hq, hkv, n_q, n_k, d);
    desc.scale = scale;
    desc.softcap = in.u8() & 1 ? 0.0f : 2.5f;
    desc.mask = in.u8() % 4;
    desc.flags = in.u8() % 2;
    desc.pos_offset = in.u8() % (n_k + 3);
    desc.window = 1 + in.u8() % 9;
    std::vector<float> q(hq * n_q * d), k(hkv * n_k * d),
        a1(hq * n_q * n_k + 1, from_bits(kGuardBits)), a2 = a1;
    for (float &x : q) x = static_cast<float>(static_cast<std::int8_t>(values.v8())) / 64.0f;
    for (float &x : k) x = static_cast<float>(static_cast<std::int8_t>(values.v8())) / 64.0f;
    const float *qp = null_q ? nullptr : q.data();
    st1 = api("attnscore_attention_f32",
              [&] { return attnscore_attention_f32(&desc, qp, k.data(), a1.data()); });
    st2 = api("attnscore_attention_f32_parallel",
              [&] { return attnscore_attention_f32_parallel(pp, &desc, qp, k.data(), a2.data()); });
    s1.swap(a1), s2.swap(a2);
  }
  const bool work = st1 == ATTNSCORE_OK && n_q != 0 && n_k != 0;
  const attnscore_status want =
      work && pp != nullptr && par.parallel_for == nullptr ? ATTNSCORE_ERR_NULL_POINTER : st1;
  if (st2 != want) fail("returned %d, the single-threaded call %d", st2, st1);
  if (hook.calls > 1) fail("the hook was called %zu times", hook.calls);
  if (hook.calls == 1 && (want != ATTNSCORE_OK || !work)) fail("the hook was called for no work");
  for (std::size_t x = 0; x < s1.size(); ++x) {
    const std::uint32_t a = to_bits(s1[x]), b = to_bits(s2[x]);
    if (want != ATTNSCORE_OK ? b != kGuardBits
                             : a != b && !(std::isnan(s1[x]) && std::isnan(s2[x])))
      fail("element %zu: %#x, the single-threaded call %#x (%zu tasks)", x, b, a, hook.tasks);
  }
  return 0;
}

}  // namespace fuzz
