// SPDX-License-Identifier: Apache-2.0
// The s8 tile's operations (see tile_s8.hpp) on vpdpbusd, for both widths: the EVEX form of
// AVX512-VNNI (zmm) and the VEX form of AVX-VNNI (ymm). vpdpbusd multiplies unsigned by signed
// bytes, so Q goes in as Q + 128 (u8, the sign bit flipped) and each key's result is corrected by
// -128 * sum(k), the sums taken once per packed panel. The biased sums can pass 2^31 over long
// d; vpdpbusd wraps (no saturation) and the corrected sum is back in int32 range, so the wrapped
// arithmetic gives the exact result.
//
// Instantiated in each VNNI level's arch file with `Dp` (the one instruction, as
// `static Reg dpbusd(Reg acc, Reg u8, Reg s8)`) defined in that file's anonymous namespace, so
// every instance stays local to its level's object file.
#ifndef ATTNSCORE_OPS_S8_VNNI_HPP
#define ATTNSCORE_OPS_S8_VNNI_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <xsimd/xsimd.hpp>

namespace attnscore {
namespace tile {

template <class ArchT, class Dp>
struct OpsVnni {
  using Arch = ArchT;
  using Acc = xsimd::batch<std::int32_t, Arch>;
  using Reg = typename Acc::register_type;
  using Qe = std::uint8_t;
  using KV = Reg;
  using QB = Reg;
  static constexpr std::size_t kKeysPerVec = Acc::size;
  static constexpr bool kVecQuant = true;
  static constexpr bool kBias = true;

  // Q + 128 as u8, padded with biased zeros (0x80) to a whole group of 4.
  static void prep_q(const std::int8_t *src, std::size_t d, std::uint8_t *dst) noexcept {
    using U = xsimd::batch<std::uint8_t, Arch>;
    const U bias(0x80);
    std::size_t t = 0;
    for (; t + U::size <= d; t += U::size)
      (U::load_unaligned(reinterpret_cast<const std::uint8_t *>(src) + t) ^ bias)
          .store_aligned(dst + t);
    for (; t < d; ++t) dst[t] = static_cast<std::uint8_t>(src[t]) ^ 0x80u;
    for (; t % 4 != 0; ++t) dst[t] = 0x80u;
  }
  static KV load_k(const std::int8_t *p) noexcept {
    return Acc::load_aligned(reinterpret_cast<const std::int32_t *>(p));
  }
  static QB bcast(const std::uint8_t *p) noexcept {
    std::int32_t x;
    std::memcpy(&x, p, sizeof x);
    return Acc(x);
  }
  static Acc madd(Acc acc, QB q, KV k) noexcept { return Dp::dpbusd(acc, q, k); }
  // The accumulators start at -128 * sum(k) (start, in tile_s8.hpp), so they end exact.
  template <std::size_t NV>
  static void finish(const Acc (&acc)[NV], std::int32_t *out) noexcept {
    for (std::size_t v = 0; v < NV; ++v) acc[v].store_aligned(out + Acc::size * v);
  }
  // Raw-K decode (decode_raw, tile_s8.hpp): K + 128 (the sign bit flipped) as the u8 operand
  // and Q signed, so the one correction is -128 * sum(q), taken once per call.
  static constexpr std::size_t kRowBytes = Acc::size * 4;
  static constexpr std::int32_t kRowBias = -128;
  static Acc row_madd(Acc acc, const std::int8_t *k, const std::int8_t *q) noexcept {
    using U = xsimd::batch<std::uint8_t, Arch>;
    return Dp::dpbusd(acc, U::load_unaligned(reinterpret_cast<const std::uint8_t *>(k)) ^ U(0x80),
                      Acc::load_unaligned(reinterpret_cast<const std::int32_t *>(q)));
  }
  // Sum of each key's bytes: vpdpbusd against ones.
  static void panel_sums(const std::int8_t *panel, std::size_t groups, std::size_t nr,
                         std::int32_t *sums) noexcept {
    const Acc ones(0x01010101);
    for (std::size_t v = 0; v < nr; v += Acc::size) {
      Acc s(0);
      for (std::size_t g = 0; g < groups; ++g)
        s = Dp::dpbusd(s, ones, load_k(panel + (g * nr + v) * 4));
      s.store_aligned(sums + v);
    }
  }
};

}  // namespace tile
}  // namespace attnscore

#endif  // ATTNSCORE_OPS_S8_VNNI_HPP
