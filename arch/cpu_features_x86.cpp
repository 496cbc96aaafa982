// SPDX-License-Identifier: Apache-2.0
// x86 feature detection: CPUID for what the core has, XGETBV for what the OS saves on a switch.
// xsimd 8.1's own detection misreads AVX and skips the OS check, so it is not used.
#include <cpuid.h>

#include <cstring>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "dispatch/kernels.h"

namespace attnscore {
namespace {

std::uint64_t xgetbv0() noexcept {
  std::uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
}

constexpr std::uint64_t kXcrYmm = 0x6;        // XMM and YMM state
constexpr std::uint64_t kXcrZmm = 0xe6;       // + opmask, ZMM_Hi256, Hi16_ZMM state
constexpr std::uint64_t kXcrTiles = 0x60000;  // XTILECFG and XTILEDATA state

// Linux saves the 8 KiB of tile data only for processes that ask (arch_prctl
// ARCH_REQ_XCOMP_PERM for XTILEDATA, once per process; it then sizes their signal frames for it).
// Elsewhere the tiles are not used: no other OS has been tested.
bool tiles_granted() noexcept {
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

}  // namespace

std::uint64_t detect_cpu_features() noexcept {
  unsigned a, b, c, d;
  std::uint64_t f = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  if (d & (1u << 26)) f |= ATTNSCORE_CPU_SSE2;
  const bool osxsave = c & (1u << 27);
  const std::uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  const bool ymm = osxsave && (c & (1u << 28)) && (xcr0 & kXcrYmm) == kXcrYmm;
  const bool zmm = ymm && (xcr0 & kXcrZmm) == kXcrZmm;
  if (ymm && (c & (1u << 12))) f |= ATTNSCORE_CPU_FMA;
  if (ymm && (c & (1u << 29))) f |= ATTNSCORE_CPU_F16C;
  unsigned max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  if (ymm && (b & (1u << 5))) f |= ATTNSCORE_CPU_AVX2;
  if (zmm) {
    if (b & (1u << 16)) f |= ATTNSCORE_CPU_AVX512F;
    if (b & (1u << 17)) f |= ATTNSCORE_CPU_AVX512DQ;
    if (b & (1u << 30)) f |= ATTNSCORE_CPU_AVX512BW;
    if (b & (1u << 31)) f |= ATTNSCORE_CPU_AVX512VL;
    if (c & (1u << 11)) f |= ATTNSCORE_CPU_AVX512VNNI;
  }
  unsigned sub1_eax = 0;
  if (a >= 1) {
    unsigned b1, c1, d1;
    __cpuid_count(7, 1, sub1_eax, b1, c1, d1);
  }
  if (ymm && (sub1_eax & (1u << 4))) f |= ATTNSCORE_CPU_AVXVNNI;
  if (zmm && (sub1_eax & (1u << 5))) f |= ATTNSCORE_CPU_AVX512BF16;
  // AMX-BF16 (bit 22) and AMX-TILE (bit 24) of leaf 7's EDX.
  const bool amx = (d & (1u << 22)) && (d & (1u << 24));
  if (zmm && amx && (xcr0 & kXcrTiles) == kXcrTiles && tiles_granted()) f |= ATTNSCORE_CPU_AMXBF16;
  return f;
}

unsigned detect_cpu_tuning() noexcept {
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return kTuneGeneric;
  const unsigned max_leaf = a;
  char vendor[12];
  std::memcpy(vendor, &b, 4), std::memcpy(vendor + 4, &d, 4), std::memcpy(vendor + 8, &c, 4);
  __get_cpuid(1, &a, &b, &c, &d);
  const unsigned base = (a >> 8) & 0xf, family = base == 0xf ? base + ((a >> 20) & 0xff) : base;
  // The core's (CPUID), not whether the OS lets a process use the tiles or the zmm state.
  bool amx_bf16 = false, avx512f = false;
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    amx_bf16 = d & (1u << 22);
    avx512f = b & (1u << 16);
  }
  return tuning_of(vendor, family, amx_bf16, avx512f);
}

}  // namespace attnscore
