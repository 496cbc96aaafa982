// SPDX-License-Identifier: Apache-2.0
// CPU feature detection against what the (emulated) CPU is known to have, and the level each
// feature set gets. ctest names the expected features per CPU model in ATTNSCORE_EXPECT_FEATURES.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "attnscore/attnscore.h"
#include "dispatch/kernels.h"
#include "support.hpp"

namespace {

struct Feature {
  const char *name;
  std::uint64_t bit;
};

// Every ATTNSCORE_CPU_* bit, spelled as in the macro's name.
constexpr Feature kFeatures[] = {
    {"SSE2", ATTNSCORE_CPU_SSE2},
    {"AVX2", ATTNSCORE_CPU_AVX2},
    {"FMA", ATTNSCORE_CPU_FMA},
    {"F16C", ATTNSCORE_CPU_F16C},
    {"AVX512F", ATTNSCORE_CPU_AVX512F},
    {"AVX512BW", ATTNSCORE_CPU_AVX512BW},
    {"AVX512DQ", ATTNSCORE_CPU_AVX512DQ},
    {"AVX512VL", ATTNSCORE_CPU_AVX512VL},
    {"AVX512VNNI", ATTNSCORE_CPU_AVX512VNNI},
    {"AVXVNNI", ATTNSCORE_CPU_AVXVNNI},
    {"AVX512BF16", ATTNSCORE_CPU_AVX512BF16},
    {"AMXBF16", ATTNSCORE_CPU_AMXBF16},
    {"NEON", ATTNSCORE_CPU_NEON},
    {"VFPV4", ATTNSCORE_CPU_VFPV4},
    {"ASIMDDP", ATTNSCORE_CPU_ASIMDDP},
    {"FPHP", ATTNSCORE_CPU_FPHP},
    {"ASIMDHP", ATTNSCORE_CPU_ASIMDHP},
    {"I8MM", ATTNSCORE_CPU_I8MM},
    {"BF16", ATTNSCORE_CPU_BF16},
};

std::string names(std::uint64_t mask) {
  std::string out;
  for (const Feature &f : kFeatures)
    if (mask & f.bit) out += (out.empty() ? "" : ",") + std::string(f.name);
  return out;
}

// Parses "NEON,ASIMDDP"; an unknown name fails the test rather than being ignored.
std::uint64_t parse(const std::string &list) {
  std::uint64_t mask = 0;
  std::stringstream in(list);
  for (std::string name; std::getline(in, name, ',');) {
    if (name.empty()) continue;
    std::uint64_t bit = 0;
    for (const Feature &f : kFeatures)
      if (name == f.name) bit = f.bit;
    INFO("feature name: " << name);
    REQUIRE(bit != 0);
    mask |= bit;
  }
  return mask;
}

using testing::CapGuard;

}  // namespace

TEST_CASE("CPU features: detection matches the CPU model", "[cpu]") {
  const std::uint64_t got = attnscore_cpu_features();
  INFO("detected: " << names(got));
  const char *expect = std::getenv("ATTNSCORE_EXPECT_FEATURES");
  if (expect != nullptr) {
    // Exact: a missing bit loses a level, an extra one picks kernels that SIGILL.
    CHECK(names(got) == names(parse(expect)));
  } else {
    // Natively, the baseline of the build's family at least.
#if defined(__x86_64__)
    CHECK((got & ATTNSCORE_CPU_SSE2) != 0);
    CHECK(((got & ATTNSCORE_CPU_AMXBF16) != 0) == testing::amx_bf16_usable());
#elif defined(__aarch64__)
    CHECK((got & ATTNSCORE_CPU_NEON) != 0);
#endif
  }
  CHECK(attnscore_cpu_features() == got);  // detected once: stable
}

TEST_CASE("CPU features: levels follow the features, f32 has no dotprod or i8mm kernel", "[cpu]") {
  const std::uint64_t f = attnscore_cpu_features();
#if ATTNSCORE_FAMILY_ARM
#if defined(__arm__)
  const bool neon = (f & ATTNSCORE_CPU_NEON) && (f & ATTNSCORE_CPU_VFPV4);
#else
  const bool neon = (f & ATTNSCORE_CPU_NEON) != 0;
#endif
  const bool dot = neon && (f & ATTNSCORE_CPU_ASIMDDP);
  CHECK(attnscore::cpu_supports(ATTNSCORE_LEVEL_NEON) == neon);
  CHECK(attnscore::cpu_supports(ATTNSCORE_LEVEL_NEON_DOTPROD) == dot);
  CHECK(attnscore::cpu_supports(ATTNSCORE_LEVEL_NEON_I8MM) == (dot && (f & ATTNSCORE_CPU_I8MM)));
  // neon_dotprod and neon_i8mm are levels (caps) now, their kernels come with int8: for f32 a
  // CPU with them, capped at them or not, still gets the neon kernel.
  CapGuard guard;
  for (attnscore_level cap :
       {ATTNSCORE_LEVEL_BEST, ATTNSCORE_LEVEL_NEON_I8MM, ATTNSCORE_LEVEL_NEON_DOTPROD}) {
    REQUIRE(attnscore_set_max_level(cap) == ATTNSCORE_OK);
    CAPTURE(attnscore_level_name(cap));
    CHECK(attnscore_kernel_level(ATTNSCORE_DTYPE_F32) ==
          (neon && ATTNSCORE_HAVE_NEON ? ATTNSCORE_LEVEL_NEON : ATTNSCORE_LEVEL_SCALAR));
  }
#elif ATTNSCORE_FAMILY_X86
  const bool avx2 = (f & ATTNSCORE_CPU_AVX2) && (f & ATTNSCORE_CPU_FMA) && (f & ATTNSCORE_CPU_F16C);
  CHECK(attnscore::cpu_supports(ATTNSCORE_LEVEL_SSE2) == ((f & ATTNSCORE_CPU_SSE2) != 0));
  CHECK(attnscore::cpu_supports(ATTNSCORE_LEVEL_AVX2) == avx2);
  CHECK(attnscore_set_max_level(ATTNSCORE_LEVEL_NEON) == ATTNSCORE_ERR_UNKNOWN_LEVEL);
#else
  CHECK(f == 0);
  CHECK(attnscore_kernel_level(ATTNSCORE_DTYPE_F32) == ATTNSCORE_LEVEL_SCALAR);
  CHECK(attnscore_set_max_level(ATTNSCORE_LEVEL_NEON) == ATTNSCORE_ERR_UNKNOWN_LEVEL);
#endif
  CHECK(attnscore::cpu_supports(ATTNSCORE_LEVEL_SCALAR));
}

TEST_CASE(
    "the tuning class: Intel cores with AMX-BF16, AMD Zen 4, unless ATTNSCORE_CPU_TUNING says",
    "[dispatch]") {
  using attnscore::tuning_of;
  CHECK(tuning_of("GenuineIntel", 6, true, true) == attnscore::kTuneSapphireRapids);
  CHECK(tuning_of("GenuineIntel", 6, false, true) == attnscore::kTuneGeneric);  // Ice Lake
  CHECK(tuning_of("GenuineIntel", 19, true, true) == attnscore::kTuneGeneric);  // not family 6
  CHECK(tuning_of("AuthenticAMD", 25, false, true) == attnscore::kTuneZen4);
  CHECK(tuning_of("AuthenticAMD", 25, false, false) == attnscore::kTuneGeneric);  // Zen 3
  CHECK(tuning_of("AuthenticAMD", 26, false, true) == attnscore::kTuneGeneric);   // Zen 5
  CHECK(tuning_of("AuthenticAMD", 26, true, true) == attnscore::kTuneGeneric);    // no AMD has AMX
  CHECK(tuning_of("GenuineIotel", 6, true, true) == attnscore::kTuneGeneric);  // all 12 chars read
  CHECK(tuning_of("AuthenticAMX", 25, false, true) == attnscore::kTuneGeneric);
  const unsigned expected = testing::sapphirerapids_tuning() ? attnscore::kTuneSapphireRapids
                            : testing::zen4_tuning()         ? attnscore::kTuneZen4
                                                             : attnscore::kTuneGeneric;
  CHECK(attnscore::cpu_tuning() == expected);
#if defined(__x86_64__) || defined(__i386__)
  CHECK(attnscore::decode_prefetches() == (expected != attnscore::kTuneZen4));
#else
  CHECK(attnscore::decode_prefetches());  // the class applies to x86 kernels only
#endif
  if (std::getenv("ATTNSCORE_CPU_TUNING") == nullptr)
    CHECK(attnscore::detect_cpu_tuning() == expected);
}
