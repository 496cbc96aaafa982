// SPDX-License-Identifier: Apache-2.0
// Bit-exact scalar IEEE binary16 <-> binary32 conversion: the scalar level's converter and the
// reference the vector converters are held to. Out of line (convert_f16.cpp, baseline flags): arch
// files use their own conversion instructions, never these.
#ifndef ATTNSCORE_F16_HPP
#define ATTNSCORE_F16_HPP

#include <cstdint>

namespace attnscore {

// binary16 bits -> binary32 bits, exact (every binary16 value, subnormals included, is a
// binary32 normal or zero); a NaN keeps its sign and payload and becomes quiet, as F16C and
// FCVTL do.
std::uint32_t f16_to_f32_bits(std::uint16_t h) noexcept;
float f16_to_f32(std::uint16_t h) noexcept;

// binary32 bits -> binary16 bits, rounded to nearest even; |x| >= 65520 gives +-Inf; a NaN keeps
// its sign and the top 9 bits of its payload and becomes quiet (as F16C and FCVTN do).
std::uint16_t f32_bits_to_f16(std::uint32_t f) noexcept;
std::uint16_t f32_to_f16(float x) noexcept;

}  // namespace attnscore

#endif  // ATTNSCORE_F16_HPP
