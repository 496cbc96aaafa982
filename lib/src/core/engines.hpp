// SPDX-License-Identifier: Apache-2.0
// The engines of the one driver (driver.hpp): each dtype's kernel row bound to its K source, raw
// rows (kCache false) or a packed key cache (kCache true). Strides are in elements.
#ifndef ATTNSCORE_ENGINES_HPP
#define ATTNSCORE_ENGINES_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/driver.hpp"
#include "dispatch/kernels.h"

namespace attnscore {

// Q as the engines read it: element (h, i, t) at q[h * hs + i * rs + t].
template <class T>
struct QView {
  const T *p;
  std::size_t hs, rs;
  const T *at(std::size_t h, std::size_t i) const noexcept { return p + h * hs + i * rs; }
  QView rebased(std::size_t h0, std::size_t i0) const noexcept { return {at(h0, i0), hs, rs}; }
};

// Raw K: key j of KV head hk at k[hk * hs + j * rs]. A cache: panels of NR keys (d-major, `stride`
// elements each), KV head hk's first panel at panels + hk * hs.
template <class T>
struct KView {
  const T *p;
  std::size_t hs, rs;
};

// The per-row (per-key) scales of an s8 tensor: scale of head h, row i at p[h * hs + i * rs]
// (rs 0: one scale per head).
struct ScaleView {
  const float *p;
  std::size_t hs, rs;
  float at(std::size_t h, std::size_t i) const noexcept { return p[h * hs + i * rs]; }
  ScaleView rebased(std::size_t h0, std::size_t i0) const noexcept {
    return {p + h0 * hs + i0 * rs, hs, rs};
  }
};

// The kernel row of a float input type: f32, or a 16-bit format's bits (binary16 or bfloat16:
// the row's converters say which) through its KernelF16 row.
template <class T>
struct FloatKernel {
  using type = KernelF32;
};
#if ATTNSCORE_HAVE_F16
template <>
struct FloatKernel<std::uint16_t> {
  using type = KernelF16;
};
#endif

// f32 Q and K, or 16-bit Q and K (binary16, bfloat16) converted exactly to f32, through a level's
// f32 arithmetic. Prefill packs NR keys at a time from raw K (16-bit converted while packed) or
// reads a cache's panels in place (16-bit: a chunk of a panel converted at a time); 16-bit Q rows
// are converted into `qc` before the f32 micro-kernel reads them, so every element is summed as the
// f32 call sums the converted values. A 16-bit block holds as many panels as fit whole d in the
// panel buffer (up to kPanelsF16): each Q row is then converted once per P * NR keys, not per NR
// (at d 128, a 16-bit prefill ran 0.87-0.92x f32 converting Q per panel). Decode streams raw K
// through `dec`, or the cache's panels through `cdec`. Raw K may come packed beforehand (`pk`,
// the output call's workspace): every panel of whole d, NR * d floats, as pack() makes it here,
// read in place. A block of P > 1 panels is then one chunk (P * NR * d fits the panel buffer,
// so chunk() >= d), and its panels lie one after another as they would in `panel`.
constexpr std::size_t kPanelsF16 = 4;

template <class T, bool kCache>
struct FloatEngine {
  static constexpr bool kF16 = !std::is_same<T, float>::value;
  const typename FloatKernel<T>::type *k;
  QView<T> q;
  KView<T> kv;
  std::size_t d;
  float scale;
  const float *pk = nullptr;  // raw K packed beforehand: KV head hk's panels at pk + hk * pk_hs
  std::size_t pk_hs = 0;
  struct Scratch {
    alignas(64) float panel[kCache && !kF16 ? 1 : kPanelFloats];
    alignas(64) float qc[kF16 ? kPanelFloats : 1];  // MR rows of kc floats (MR <= NR everywhere)
    const float *block;
  };

  const KernelF32 &f32() const noexcept {
    if constexpr (kF16)
      return *k->f32;
    else
      return *k;
  }
  std::size_t nr() const noexcept { return f32().nr; }
  std::size_t mr() const noexcept { return f32().mr; }
  // Panels per prepared block: 1 for f32 (no Q to convert), else up to kPanelsF16 of whole d.
  std::size_t panels() const noexcept {
    const std::size_t fit = kPanelFloats / (nr() * d);
    return !kF16 || fit < 1 ? 1 : fit < kPanelsF16 ? fit : kPanelsF16;
  }
  std::size_t chunk() const noexcept { return kPanelFloats / (panels() * nr()); }
  std::size_t block(std::size_t, bool) const noexcept { return panels() * nr(); }
  void prepare(Scratch &sc, std::size_t hk, std::size_t j, std::size_t keys, std::size_t t,
               std::size_t dc) const noexcept {
    const std::size_t nr = this->nr();
    if constexpr (kCache && !kF16) {  // one panel, read in place
      sc.block = kv.p + hk * kv.hs + j / nr * kv.rs + t * nr;
    } else if (!kCache && pk != nullptr) {  // packed beforehand: t > 0 only with one panel
      sc.block = pk + hk * pk_hs + j * d + t * nr;
    } else {
      sc.block = sc.panel;
      for (std::size_t c = 0; c < keys; c += nr) {  // panel c / nr of the block
        float *panel = sc.panel + c * dc;
        if constexpr (!kCache)
          k->pack(keys - c < nr ? keys - c : nr, dc, kv.p + hk * kv.hs + (j + c) * kv.rs + t, kv.rs,
                  panel);
        else
          k->to_f32(dc * nr, kv.p + hk * kv.hs + (j + c) / nr * kv.rs + t * nr, panel);
      }
    }
  }
  void tile(Scratch &sc, std::size_t h, std::size_t i, std::size_t rows, std::size_t keys,
            std::size_t t, std::size_t dc, float *s, std::size_t lds,
            unsigned flags) const noexcept {
    if constexpr (kF16) {
      const std::size_t kc = chunk(), nr = this->nr();
      for (std::size_t r = 0; r < rows; ++r) k->to_f32(dc, q.at(h, i + r) + t, sc.qc + r * kc);
      for (std::size_t c = 0; c < keys; c += nr)
        f32().fn(rows, keys - c < nr ? keys - c : nr, dc, sc.qc, kc, sc.block + c * dc, s + c, lds,
                 scale, flags);
    } else {
      k->fn(rows, keys, dc, q.at(h, i) + t, q.rs, sc.block, s, lds, scale, flags);
    }
  }
  bool decodes(std::size_t n_q) const noexcept { return n_q <= kDecodeRows && n_q < mr(); }
  std::size_t dec_rows(bool by_heads) const noexcept {
    return by_heads && !kCache ? k->dec_rows : kDecodeRows;
  }
  std::size_t dec_keys(std::size_t, std::size_t n_k) const noexcept {
    return kCache ? n_k : k->nr_dec;
  }
  std::size_t key_align() const noexcept { return kCache ? nr() : 1; }
  std::size_t key_unit(bool decoding) const noexcept {
    return kCache || !decoding ? nr() : k->nr_dec;
  }
  void dec(std::size_t hk, std::size_t h, std::size_t i, std::size_t rows, bool by_heads,
           std::size_t j, std::size_t cols, float *s, std::size_t lds) const noexcept {
    const std::size_t ldq = by_heads ? q.hs : q.rs;
    if constexpr (kCache)
      k->cdec(rows, cols, d, q.at(h, i), ldq, kv.p + hk * kv.hs + j / nr() * kv.rs, kv.rs, s, lds,
              scale);
    else
      k->dec(rows, cols, d, q.at(h, i), ldq, kv.p + hk * kv.hs + j * kv.rs, kv.rs, s, lds, scale);
  }
  FloatEngine rebased(std::size_t h0, std::size_t hk0, std::size_t i0,
                      std::size_t j0) const noexcept {
    FloatEngine e = *this;
    e.q = q.rebased(h0, i0);
    e.kv.p += hk0 * kv.hs + (kCache ? j0 / nr() * kv.rs : j0 * kv.rs);
    if (pk != nullptr) e.pk += hk0 * pk_hs + j0 * d;
    return e;
  }
};
template <bool kCache>
using F32Engine = FloatEngine<float, kCache>;

#if ATTNSCORE_HAVE_F16
template <bool kCache>
using F16Engine = FloatEngine<std::uint16_t, kCache>;

// The opt-in binary16 accumulation (raw K): acc_mr rows against any keys, the whole of d at once,
// no packing; the same tile serves both shapes.
struct F16AccEngine {
  const KernelF16 *k;
  QView<std::uint16_t> q;
  KView<std::uint16_t> kv;
  std::size_t d;
  float scale;
  struct Scratch {
    const std::uint16_t *keys;
  };

  std::size_t mr() const noexcept { return k->acc_mr; }
  std::size_t chunk() const noexcept { return d; }
  std::size_t block(std::size_t n_k, bool shared) const noexcept {
    return shared ? k->acc_nr * 16 : n_k;
  }
  void prepare(Scratch &sc, std::size_t hk, std::size_t j, std::size_t, std::size_t,
               std::size_t) const noexcept {
    sc.keys = kv.p + hk * kv.hs + j * kv.rs;
  }
  void tile(Scratch &sc, std::size_t h, std::size_t i, std::size_t rows, std::size_t keys,
            std::size_t, std::size_t, float *s, std::size_t lds, unsigned) const noexcept {
    k->acc(rows, keys, d, q.at(h, i), q.rs, sc.keys, kv.rs, s, lds, scale);
  }
  bool decodes(std::size_t) const noexcept { return false; }
  std::size_t dec_rows(bool) const noexcept { return k->acc_mr; }
  std::size_t dec_keys(std::size_t, std::size_t n_k) const noexcept { return n_k; }
  std::size_t key_align() const noexcept { return 1; }
  std::size_t key_unit(bool) const noexcept { return k->acc_nr; }
  void dec(std::size_t hk, std::size_t h, std::size_t i, std::size_t rows, bool by_heads,
           std::size_t j, std::size_t cols, float *s, std::size_t lds) const noexcept {
    k->acc(rows, cols, d, q.at(h, i), by_heads ? q.hs : q.rs, kv.p + hk * kv.hs + j * kv.rs, kv.rs,
           s, lds, scale);
  }
  F16AccEngine rebased(std::size_t h0, std::size_t hk0, std::size_t i0,
                       std::size_t j0) const noexcept {
    F16AccEngine e = *this;
    e.q = q.rebased(h0, i0);
    e.kv.p += hk0 * kv.hs + j0 * kv.rs;
    return e;
  }
};

// The opt-in bf16 dot product (raw K): NR keys at a time packed in the row's layout, then the row
// tiles over the panels. A row whose dot reads Q in a layout of its own (qpack: AArch64's BFMMLA
// operands) keeps that Q in the second half of the buffer and up to kDotPanels panels in the
// first, so each Q tile is packed once per block of panels. A row with a decode kernel (AMX: raw
// K, the prefill's bits) takes the decode shape for d up to kDotDecMaxD; without one a decode
// step packs its block of keys once for the group's heads, as prefill does.
constexpr std::size_t kDotPanels = 8;

struct Bf16DotEngine {
  const KernelF16 *k;
  QView<std::uint16_t> q;
  KView<std::uint16_t> kv;
  std::size_t d;
  float scale;
  struct Scratch {
    alignas(64) float panel[kPanelFloats];  // the panels, and a packed Q tile (qpack rows)
  };

  // Floats of the packed Q tile at the end of the buffer.
  std::size_t q_floats() const noexcept { return k->qpack != nullptr ? kPanelFloats / 2 : 0; }
  // Floats of one panel of dc dims in any row's layout (x86 pairs of dims, whole AMX steps of 32
  // dims; AArch64 groups of 4 dims).
  std::size_t stride(std::size_t dc) const noexcept { return (dc + 31) / 32 * 16 * k->dot_nr; }
  std::size_t mr() const noexcept { return k->dot_mr; }
  std::size_t chunk() const noexcept {
    if (k->qpack == nullptr) return 2 * (kPanelFloats / k->dot_nr);
    // A panel in the first half, dot_mr rows of Q (2 per float, whole 32s) in the second.
    const std::size_t by_k = kPanelFloats / k->dot_nr, by_q = kPanelFloats / k->dot_mr / 32 * 32;
    return by_k < by_q ? by_k : by_q;
  }
  std::size_t panels() const noexcept {
    if (k->qpack == nullptr) return 1;
    const std::size_t fit = (kPanelFloats - q_floats()) / stride(d < chunk() ? d : chunk());
    return fit < 1 ? 1 : fit < kDotPanels ? fit : kDotPanels;
  }
  std::size_t block(std::size_t, bool) const noexcept { return panels() * k->dot_nr; }
  void prepare(Scratch &sc, std::size_t hk, std::size_t j, std::size_t keys, std::size_t t,
               std::size_t dc) const noexcept {
    const std::size_t nr = k->dot_nr;
    for (std::size_t c = 0; c < keys; c += nr)
      k->pack(keys - c < nr ? keys - c : nr, dc, kv.p + hk * kv.hs + (j + c) * kv.rs + t, kv.rs,
              sc.panel + c / nr * stride(dc));
  }
  void tile(Scratch &sc, std::size_t h, std::size_t i, std::size_t rows, std::size_t keys,
            std::size_t t, std::size_t dc, float *s, std::size_t lds,
            unsigned flags) const noexcept {
    const std::uint16_t *qt = q.at(h, i) + t;
    std::size_t ldq = q.rs;
    if (k->qpack != nullptr) {
      auto *packed = reinterpret_cast<std::uint16_t *>(sc.panel + kPanelFloats - q_floats());
      k->qpack(rows, dc, qt, ldq, packed);
      qt = packed, ldq = 0;
    }
    const std::size_t nr = k->dot_nr;
    for (std::size_t c = 0; c < keys; c += nr)
      k->dot(rows, keys - c < nr ? keys - c : nr, dc, qt, ldq, sc.panel + c / nr * stride(dc),
             s + c, lds, scale, flags);
  }
  bool decodes(std::size_t n_q) const noexcept {
    return k->dec != nullptr && d <= kDotDecMaxD && n_q <= kDecodeRows;
  }
  std::size_t dec_rows(bool by_heads) const noexcept {
    return by_heads ? k->dec_rows : kDecodeRows;
  }
  std::size_t dec_keys(std::size_t, std::size_t) const noexcept { return k->nr_dec; }
  std::size_t key_align() const noexcept { return 1; }
  std::size_t key_unit(bool) const noexcept { return k->dot_nr; }
  void dec(std::size_t hk, std::size_t h, std::size_t i, std::size_t rows, bool by_heads,
           std::size_t j, std::size_t cols, float *s, std::size_t lds) const noexcept {
    k->dec(rows, cols, d, q.at(h, i), by_heads ? q.hs : q.rs, kv.p + hk * kv.hs + j * kv.rs, kv.rs,
           s, lds, scale);
  }
  Bf16DotEngine rebased(std::size_t h0, std::size_t hk0, std::size_t i0,
                        std::size_t j0) const noexcept {
    Bf16DotEngine e = *this;
    e.q = q.rebased(h0, i0);
    e.kv.p += hk0 * kv.hs + j0 * kv.rs;
    return e;
  }
};
#endif  // ATTNSCORE_HAVE_F16

#if ATTNSCORE_HAVE_S8
// An int8 cache's layout beyond its panels: each panel holds all of d in groups of KG dims (so
// chunk c of kS8Chunk dims is itself a kernel panel, at t * NR bytes), with NR key sums per chunk
// and the keys' scales beside it.
struct S8CacheView {
  std::size_t panel_bytes, chunks;
  // The NR sums of KV head hk, panel p, chunk c at sums[hk * sums_hs + (p * chunks + c) * NR].
  const std::int32_t *sums;
  std::size_t sums_hs;
  const float *scales;  // key j of KV head hk: scales[hk * scales_hs + j]
  std::size_t scales_hs;
};

// int8 Q and K: exact int32 sums, then (float)sum * ((q_scale * scale) * k_scale). Raw K is packed
// a block of panels at a time (kS8BlockBytes: a block stays in L1, and a tile's S rows are written
// as long runs); a cache's panels are read in place, all keys in one call when d is one chunk (so
// the kernel streams them with prefetching, kStream) unless blocks of keys are shared by several
// heads or cut by a mask.
template <bool kCache>
struct S8Engine {
  const KernelS8 *k;
  QView<std::int8_t> q;
  ScaleView qs;
  KView<std::int8_t> kv;  // raw K, or the cache's panels (rs unused, hs in bytes)
  ScaleView ks;           // raw K's scales
  S8CacheView cache;      // kCache only
  std::size_t d;
  float scale;
  struct Scratch {
    alignas(64) std::int8_t block[kCache ? 1 : kS8BlockBytes];
    alignas(64) std::int32_t sums[kCache ? 1 : kS8BlockKeys];
    alignas(64) float ks[kCache ? 1 : kS8BlockKeys];
    const std::int8_t *pb;
    const std::int32_t *ps;
    const float *pk;
  };

  std::size_t panel_bytes(std::size_t dc) const noexcept {
    return k->nr * ((dc + k->kg - 1) / k->kg * k->kg);
  }
  std::size_t mr() const noexcept { return k->mr; }
  std::size_t chunk() const noexcept { return kS8Chunk; }
  std::size_t block(std::size_t n_k, bool shared) const noexcept {
    if constexpr (kCache) {
      if (cache.chunks != 1) return k->nr;
      return shared ? kS8BlockKeys / k->nr * k->nr : n_k;
    } else {
      (void)n_k, (void)shared;
      std::size_t panels = kS8BlockBytes / panel_bytes(d < kS8Chunk ? d : kS8Chunk);
      if (panels * k->nr > kS8BlockKeys) panels = kS8BlockKeys / k->nr;
      return panels * k->nr;
    }
  }
  void prepare(Scratch &sc, std::size_t hk, std::size_t j, std::size_t keys, std::size_t t,
               std::size_t dc) const noexcept {
    const std::size_t nr = k->nr;
    if constexpr (kCache) {
      (void)keys, (void)dc;
      const std::size_t p = j / nr;
      sc.pb = kv.p + hk * kv.hs + p * cache.panel_bytes + t * nr;
      sc.ps = cache.sums + hk * cache.sums_hs + (p * cache.chunks + t / kS8Chunk) * nr;
      sc.pk = cache.scales + hk * cache.scales_hs + j;
    } else {
      const std::size_t pbytes = panel_bytes(dc), np = (keys + nr - 1) / nr;
      for (std::size_t p = 0; p < np; ++p) {
        const std::size_t jp = j + p * nr, cols = keys - p * nr < nr ? keys - p * nr : nr;
        k->pack(cols, dc, kv.p + hk * kv.hs + jp * kv.rs + t, kv.rs, sc.block + p * pbytes,
                sc.sums + p * nr);
        const float *src = ks.p + hk * ks.hs + jp * ks.rs;
        if (ks.rs != 0 && cols == nr)  // per-key scales of a whole panel: one copy
          std::memcpy(sc.ks + p * nr, src, nr * sizeof(float));
        else
          for (std::size_t u = 0; u < nr; ++u) sc.ks[p * nr + u] = u < cols ? src[u * ks.rs] : 0.0f;
      }
      sc.pb = sc.block, sc.ps = sc.sums, sc.pk = sc.ks;
    }
  }
  void tile(Scratch &sc, std::size_t h, std::size_t i, std::size_t rows, std::size_t keys,
            std::size_t t, std::size_t dc, float *s, std::size_t lds,
            unsigned flags) const noexcept {
    if (kCache && cache.chunks == 1) flags |= kStream;
    run(sc, h, i, rows, false, keys, t, dc, s, lds, flags);
  }
  // Rows of Q: rows i ... of head h, or (by_heads) row i of heads h ... (their stride q.hs).
  void run(const Scratch &sc, std::size_t h, std::size_t i, std::size_t rows, bool by_heads,
           std::size_t keys, std::size_t t, std::size_t dc, float *s, std::size_t lds,
           unsigned flags) const noexcept {
    // The first product of the combined scale, (q_scale * scale), rounded as the contract says.
    float qsc[kS8MaxMR];
    for (std::size_t r = 0; r < rows; ++r)
      qsc[r] = (by_heads ? qs.at(h + r, i) : qs.at(h, i + r)) * scale;
    k->fn(rows, keys, dc, q.at(h, i) + t, by_heads ? q.hs : q.rs, sc.pb, sc.ps, qsc, sc.pk, s, lds,
          flags);
  }
  // Raw K with d <= kS8Chunk: the kernel's decode, when it has one. A cache of one chunk: its
  // panels streamed in place with the heads of a group (or the rows) as the tile's rows, so each
  // panel is read once for up to MR heads.
  bool decodes(std::size_t n_q) const noexcept {
    if constexpr (kCache)
      return n_q == 1 && cache.chunks == 1;
    else
      return n_q == 1 && d <= kS8Chunk && k->decode != nullptr;
  }
  std::size_t dec_rows(bool by_heads) const noexcept {
    if constexpr (kCache) return k->mr;
    return by_heads ? kMaxDecodeRows : 1;
  }
  // One call streams every key when it holds the whole group; else the group's calls share blocks
  // of K while they are in L1.
  std::size_t dec_keys(std::size_t g, std::size_t n_k) const noexcept {
    if constexpr (kCache) return g <= k->mr ? n_k : kS8BlockKeys / k->nr * k->nr;
    return g == 1 ? n_k : kS8BlockKeys;
  }
  std::size_t key_align() const noexcept { return kCache ? k->nr : 1; }
  std::size_t key_unit(bool) const noexcept { return k->nr; }
  void dec(std::size_t hk, std::size_t h, std::size_t i, std::size_t rows, bool by_heads,
           std::size_t j, std::size_t cols, float *s, std::size_t lds) const noexcept {
    if constexpr (kCache) {
      Scratch sc;
      prepare(sc, hk, j, cols, 0, d);
      run(sc, h, i, rows, by_heads, cols, 0, d, s, lds, kFinal | kStream);
    } else {
      for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t hh = by_heads ? h + r : h, ii = by_heads ? i : i + r;
        k->decode(cols, d, q.at(hh, ii), kv.p + hk * kv.hs + j * kv.rs, kv.rs,
                  qs.at(hh, ii) * scale, ks.p + hk * ks.hs + j * ks.rs, ks.rs, s + r * lds);
      }
    }
  }
  S8Engine rebased(std::size_t h0, std::size_t hk0, std::size_t i0, std::size_t j0) const noexcept {
    S8Engine e = *this;
    e.q = q.rebased(h0, i0);
    e.qs = qs.rebased(h0, i0);
    if constexpr (kCache) {
      const std::size_t p = j0 / k->nr;
      e.kv.p += hk0 * kv.hs + p * cache.panel_bytes;
      e.cache.sums += hk0 * cache.sums_hs + p * cache.chunks * k->nr;
      e.cache.scales += hk0 * cache.scales_hs + j0;
    } else {
      e.kv.p += hk0 * kv.hs + j0 * kv.rs;
      e.ks = ks.rebased(hk0, j0);
    }
    return e;
  }
};
#endif  // ATTNSCORE_HAVE_S8

}  // namespace attnscore

#endif  // ATTNSCORE_ENGINES_HPP
