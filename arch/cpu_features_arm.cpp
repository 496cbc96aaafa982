// SPDX-License-Identifier: Apache-2.0
// ARM feature detection on Linux: the kernel's AT_HWCAP / AT_HWCAP2 words, never /proc/cpuinfo
// (qemu-user shows the host's there). xsimd 8.1 detects none of dotprod, fp16, i8mm or bf16.
#include <asm/hwcap.h>
#include <sys/auxv.h>

#include "dispatch/kernels.h"

namespace attnscore {
namespace {

// Bit numbers spelled out, since older kernel headers lack the newer names; where the header has
// a name, the compiler checks that both agree.
#if defined(__aarch64__)
constexpr unsigned long kHwcapFphp = 1ul << 9, kHwcapAsimdhp = 1ul << 10;
constexpr unsigned long kHwcapAsimddp = 1ul << 20;
constexpr unsigned long kHwcap2I8mm = 1ul << 13, kHwcap2Bf16 = 1ul << 14;
static_assert(kHwcapFphp == HWCAP_FPHP && kHwcapAsimdhp == HWCAP_ASIMDHP, "arm64 hwcap.h");
static_assert(kHwcapAsimddp == HWCAP_ASIMDDP, "arm64 hwcap.h");
#ifdef HWCAP2_I8MM
static_assert(kHwcap2I8mm == HWCAP2_I8MM && kHwcap2Bf16 == HWCAP2_BF16, "arm64 hwcap.h");
#endif
#else
// AArch32: ARMv8.2 features of a 32-bit process are in AT_HWCAP too (Linux 6.2+ names them).
constexpr unsigned long kHwcapNeon = 1ul << 12, kHwcapVfpv4 = 1ul << 16;
constexpr unsigned long kHwcapFphp = 1ul << 22, kHwcapAsimdhp = 1ul << 23;
constexpr unsigned long kHwcapAsimddp = 1ul << 24, kHwcapBf16 = 1ul << 26, kHwcapI8mm = 1ul << 27;
static_assert(kHwcapNeon == HWCAP_NEON && kHwcapVfpv4 == HWCAP_VFPv4, "arm hwcap.h");
#ifdef HWCAP_I8MM
static_assert(kHwcapFphp == HWCAP_FPHP && kHwcapAsimdhp == HWCAP_ASIMDHP, "arm hwcap.h");
static_assert(kHwcapAsimddp == HWCAP_ASIMDDP && kHwcapI8mm == HWCAP_I8MM, "arm hwcap.h");
static_assert(kHwcapBf16 == HWCAP_ASIMDBF16, "arm hwcap.h");
#endif
#endif

}  // namespace

std::uint64_t detect_cpu_features() noexcept {
  const unsigned long hw = getauxval(AT_HWCAP);
  std::uint64_t f = 0;
#if defined(__aarch64__)
  const unsigned long hw2 = getauxval(AT_HWCAP2);
  // ASIMD is part of the AArch64 Linux ABI: this very code is compiled to use it.
  f |= ATTNSCORE_CPU_NEON;
  if (hw & kHwcapAsimddp) f |= ATTNSCORE_CPU_ASIMDDP;
  if (hw & kHwcapFphp) f |= ATTNSCORE_CPU_FPHP;
  if (hw & kHwcapAsimdhp) f |= ATTNSCORE_CPU_ASIMDHP;
  if (hw2 & kHwcap2I8mm) f |= ATTNSCORE_CPU_I8MM;
  if (hw2 & kHwcap2Bf16) f |= ATTNSCORE_CPU_BF16;
#else
  if (hw & kHwcapNeon) f |= ATTNSCORE_CPU_NEON;
  if (hw & kHwcapVfpv4) f |= ATTNSCORE_CPU_VFPV4;
  if (hw & kHwcapAsimddp) f |= ATTNSCORE_CPU_ASIMDDP;
  if (hw & kHwcapFphp) f |= ATTNSCORE_CPU_FPHP;
  if (hw & kHwcapAsimdhp) f |= ATTNSCORE_CPU_ASIMDHP;
  if (hw & kHwcapI8mm) f |= ATTNSCORE_CPU_I8MM;
  if (hw & kHwcapBf16) f |= ATTNSCORE_CPU_BF16;
#endif
  return f;
}

unsigned detect_cpu_tuning() noexcept { return kTuneGeneric; }

}  // namespace attnscore
