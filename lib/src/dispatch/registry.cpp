// SPDX-License-Identifier: Apache-2.0
// Levels, the kernel tables, the cap and the cached choice of kernel.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/checks.h"
#include "dispatch/kernels.h"

namespace attnscore {
namespace {

enum Family { kAny, kX86, kArm };

struct LevelInfo {
  attnscore_level level;
  const char *name;
  std::uint64_t required;  // CPU features the level needs
  Family family;
  int rank;  // order within the family for the cap: a cap admits the levels of rank <= its own
};

constexpr std::uint64_t kAvx2 = ATTNSCORE_CPU_AVX2 | ATTNSCORE_CPU_FMA | ATTNSCORE_CPU_F16C;
constexpr std::uint64_t kAvx512 = kAvx2 | ATTNSCORE_CPU_AVX512F | ATTNSCORE_CPU_AVX512BW |
                                  ATTNSCORE_CPU_AVX512DQ | ATTNSCORE_CPU_AVX512VL;
// armv7's neon level is NEON-VFPv4 (the kernels use fused multiply-add); AArch64 has it in ASIMD.
#if defined(__arm__)
constexpr std::uint64_t kNeon = ATTNSCORE_CPU_NEON | ATTNSCORE_CPU_VFPV4;
#else
constexpr std::uint64_t kNeon = ATTNSCORE_CPU_NEON;
#endif
constexpr std::uint64_t kNeonDot = kNeon | ATTNSCORE_CPU_ASIMDDP;

// Every level. The ranks are not the enum values (those are fixed ABI): avxvnni, added later,
// ranks between avx2 and avx512, so that each x86 cap is a CPU generation's feature set: avx2
// Haswell, avxvnni Alder Lake (AVX-VNNI without AVX-512: int8 on it, f32 on avx2), avx512
// Skylake-X (no VNNI of either form), avx512vnni Cascade Lake and later. The kernel tables
// list their rows in descending rank.
constexpr LevelInfo kAllLevels[] = {
    {ATTNSCORE_LEVEL_SCALAR, "scalar", 0, kAny, 0},
    {ATTNSCORE_LEVEL_SSE2, "sse2", ATTNSCORE_CPU_SSE2, kX86, 1},
    {ATTNSCORE_LEVEL_AVX2, "avx2", kAvx2, kX86, 2},
    {ATTNSCORE_LEVEL_AVXVNNI, "avxvnni", kAvx2 | ATTNSCORE_CPU_AVXVNNI, kX86, 3},
    {ATTNSCORE_LEVEL_AVX512, "avx512", kAvx512, kX86, 4},
    {ATTNSCORE_LEVEL_AVX512VNNI, "avx512vnni", kAvx512 | ATTNSCORE_CPU_AVX512VNNI, kX86, 5},
    {ATTNSCORE_LEVEL_NEON, "neon", kNeon, kArm, 1},
    {ATTNSCORE_LEVEL_NEON_DOTPROD, "neon_dotprod", kNeonDot, kArm, 2},
    {ATTNSCORE_LEVEL_NEON_I8MM, "neon_i8mm", kNeonDot | ATTNSCORE_CPU_I8MM, kArm, 3},
};

// This build's family, and the rank of its top level.
#if ATTNSCORE_FAMILY_X86
constexpr Family kFamily = kX86;
constexpr int kTopRank = 5;
#elif ATTNSCORE_FAMILY_ARM
constexpr Family kFamily = kArm;
constexpr int kTopRank = 3;
#else
constexpr Family kFamily = kAny;
constexpr int kTopRank = 0;
#endif

const LevelInfo *level_info(int level) noexcept {
  for (const LevelInfo &l : kAllLevels)
    if (l.level == level) return &l;
  return nullptr;
}

// Rank of a level within this build's family (scalar is 0), or -1 when the family lacks it.
int level_rank(attnscore_level level) noexcept {
  const LevelInfo *l = level_info(level);
  return l != nullptr && (l->family == kAny || l->family == kFamily) ? l->rank : -1;
}

// Best first; only the kernels this build compiled.
constexpr const KernelF32 *kF32[] = {
#if ATTNSCORE_HAVE_AVX512
    &qk_f32_8x32__avx512_kernel,
#endif
#if ATTNSCORE_HAVE_AVX2
    &qk_f32_6x16__avx2_kernel,
#endif
#if ATTNSCORE_HAVE_SSE2
    &qk_f32_6x8__sse2_kernel,
#endif
#if ATTNSCORE_HAVE_NEON && defined(__aarch64__)
    &qk_f32_8x8__neon_kernel,
#elif ATTNSCORE_HAVE_NEON
    &qk_f32_4x12__neon_kernel,
#endif
    &qk_f32_4x4__scalar_kernel,
};

#if ATTNSCORE_HAVE_F16
// Best first, as kF32; no sse2 row: F16C comes with avx2. The f16-accumulating rows come first;
// only a call that asks for f16 accumulation takes them.
constexpr const KernelF16 *kF16[] = {
#if ATTNSCORE_HAVE_NEON_FP16ACC
    &qk_f16_4x4__neon_fp16acc_kernel,
#endif
#if ATTNSCORE_HAVE_AVX512
    &qk_f16_8x32__avx512_kernel,
#endif
#if ATTNSCORE_HAVE_AVX2
    &qk_f16_6x16__avx2_kernel,
#endif
#if ATTNSCORE_HAVE_NEON && defined(__aarch64__)
    &qk_f16_8x8__neon_kernel,
#elif ATTNSCORE_HAVE_NEON
    &qk_f16_4x12__neon_kernel,
#endif
    &qk_f16_4x4__scalar_kernel,
};

// Best first, as kF32 (every f32 level has its bf16 row). The dot-product row comes first; only
// a call that asks for it takes it.
constexpr const KernelF16 *kBF16[] = {
#if ATTNSCORE_HAVE_AMXBF16
    &qk_bf16_128x32__amxbf16_kernel,
#endif
#if ATTNSCORE_HAVE_AVX512BF16DOT
    &qk_bf16_8x32__avx512bf16_kernel,
#endif
#if ATTNSCORE_HAVE_NEON_BF16DOT
    &qk_bf16_8x8__neon_bf16_kernel,
#endif
#if ATTNSCORE_HAVE_AVX512
    &qk_bf16_8x32__avx512_kernel,
#endif
#if ATTNSCORE_HAVE_AVX2
    &qk_bf16_6x16__avx2_kernel,
#endif
#if ATTNSCORE_HAVE_SSE2
    &qk_bf16_6x8__sse2_kernel,
#endif
#if ATTNSCORE_HAVE_NEON && defined(__aarch64__)
    &qk_bf16_8x8__neon_kernel,
#elif ATTNSCORE_HAVE_NEON
    &qk_bf16_4x12__neon_kernel,
#endif
    &qk_bf16_4x4__scalar_kernel,
};
#endif

// The s8 table, best first (only the kernels this build compiled).
#if ATTNSCORE_HAVE_S8
constexpr const KernelS8 *kS8[] = {
#if ATTNSCORE_HAVE_AVX512VNNI
    &qk_s8_8x32c4__avx512vnni_kernel,
#endif
#if ATTNSCORE_HAVE_AVX512
    &qk_s8_8x16c4__avx512_kernel,
#endif
#if ATTNSCORE_HAVE_AVXVNNI
    &qk_s8_6x16c4__avxvnni_kernel,
#endif
#if ATTNSCORE_HAVE_AVX2
    &qk_s8_4x8c4__avx2_kernel,
#endif
#if ATTNSCORE_HAVE_NEON_I8MM
    &qk_s8_8x8c8__neon_i8mm_kernel,
#endif
#if ATTNSCORE_HAVE_NEON_DOTPROD
    &qk_s8_8x8c4__neon_dotprod_kernel,
#endif
#if ATTNSCORE_HAVE_NEON && defined(__aarch64__)
    &qk_s8_4x8c4__neon_kernel,
#elif ATTNSCORE_HAVE_NEON
    &qk_s8_2x8c4__neon_kernel,
#endif
    &qk_s8_4x4c4__scalar_kernel,
};
std::atomic<const KernelS8 *> g_s8{nullptr};
#endif

// The cap from the environment, read once on first use; BEST when unset or unknown.
attnscore_level env_cap() noexcept {
  static const attnscore_level cap = [] {
    const char *env = std::getenv("ATTNSCORE_MAX_LEVEL");
    if (env == nullptr || *env == '\0') return ATTNSCORE_LEVEL_BEST;
    attnscore_level level = ATTNSCORE_LEVEL_BEST;
    if (attnscore_level_from_name(env, &level) == ATTNSCORE_OK &&
        (level == ATTNSCORE_LEVEL_BEST || level_rank(level) >= 0))
      return level;
    std::fprintf(stderr, "attnscore: ignoring ATTNSCORE_MAX_LEVEL=%s: not a level of this build\n",
                 env);
    return ATTNSCORE_LEVEL_BEST;
  }();
  return cap;
}

constexpr int kNoApiCap = -1;
std::atomic<int> g_api_cap{kNoApiCap};  // a level set by attnscore_set_max_level, or none
std::atomic<const KernelF32 *> g_f32{nullptr};
#if ATTNSCORE_HAVE_F16
std::atomic<const KernelF16 *> g_f16{nullptr}, g_f16acc{nullptr}, g_bf16{nullptr},
    g_bf16dot{nullptr};
#endif

attnscore_level cap_level() noexcept {
  const int api = g_api_cap.load(std::memory_order_acquire);
  return api != kNoApiCap ? static_cast<attnscore_level>(api) : env_cap();
}

int cap_rank() noexcept {
  const attnscore_level cap = cap_level();
  return cap == ATTNSCORE_LEVEL_BEST ? kTopRank : level_rank(cap);
}

// Every dtype's kernel choice: the first row of its table (best first) within the cap that the
// CPU runs and `accept` takes, else `fallback`; cached in `slot` until the cap changes.
template <class K, std::size_t N, class Accept>
const K &pick(std::atomic<const K *> &slot, const K *const (&table)[N], const K &fallback,
              Accept accept) noexcept {
  const K *kernel = slot.load(std::memory_order_acquire);
  if (kernel != nullptr) return *kernel;
  const int cap = cap_rank();
  kernel = &fallback;
  for (const K *row : table) {
    if (level_rank(row->level) <= cap && accept(*row)) {
      kernel = row;
      break;
    }
  }
  slot.store(kernel, std::memory_order_release);
  return *kernel;
}

template <class K, std::size_t N>
const K *const *table_of(const K *const (&table)[N], std::size_t *count) noexcept {
  *count = N;
  return table;
}

}  // namespace

#if ATTNSCORE_HAVE_F16
const KernelF16 *const *kernels_f16(std::size_t *count) noexcept { return table_of(kF16, count); }

bool cpu_runs(const KernelF16 &kernel) noexcept {
  static const std::uint64_t features = detect_cpu_features();
  return cpu_supports(kernel.level) && (kernel.features & ~features) == 0;
}

namespace {
// A row this CPU runs and that no measurement passes over on this core.
bool chosen_here(const KernelF16 &kernel) noexcept {
  return cpu_runs(kernel) && (kernel.slow_on & cpu_tuning()) == 0;
}
}  // namespace

const KernelF16 &active_kernel_f16() noexcept {
  return pick(g_f16, kF16, *kF16[sizeof(kF16) / sizeof(kF16[0]) - 1],
              [](const KernelF16 &k) { return k.acc == nullptr && chosen_here(k); });
}

const KernelF16 *const *kernels_bf16(std::size_t *count) noexcept { return table_of(kBF16, count); }

const KernelF16 &active_kernel_bf16() noexcept {
  return pick(g_bf16, kBF16, *kBF16[sizeof(kBF16) / sizeof(kBF16[0]) - 1],
              [](const KernelF16 &k) { return k.dot == nullptr && chosen_here(k); });
}

const KernelF16 &active_kernel_bf16dot() noexcept {
  // The fallback: the default mode.
  return pick(g_bf16dot, kBF16, active_kernel_bf16(),
              [](const KernelF16 &k) { return k.dot != nullptr && chosen_here(k); });
}

const KernelF16 &active_kernel_f16acc() noexcept {
  // The fallback: f32 accumulation.
  return pick(g_f16acc, kF16, active_kernel_f16(),
              [](const KernelF16 &k) { return k.acc != nullptr && chosen_here(k); });
}
#endif

const KernelF32 *const *kernels_f32(std::size_t *count) noexcept { return table_of(kF32, count); }

unsigned tuning_of(const char *vendor, unsigned family, bool amx_bf16, bool avx512f) noexcept {
  // Every Intel core with AMX-BF16 so far is a Golden Cove or later server core (family 6).
  if (std::memcmp(vendor, "GenuineIntel", 12) == 0 && family == 6 && amx_bf16)
    return kTuneSapphireRapids;
  // Family 25 (0x19) is Zen 3 and Zen 4; only Zen 4 has AVX-512.
  if (std::memcmp(vendor, "AuthenticAMD", 12) == 0 && family == 25 && avx512f) return kTuneZen4;
  return kTuneGeneric;
}

// The tuning class, read once on first use: ATTNSCORE_CPU_TUNING if it names one, else detected.
unsigned cpu_tuning() noexcept {
  static const unsigned tuning = [] {
    const char *env = std::getenv("ATTNSCORE_CPU_TUNING");
    if (env == nullptr || *env == '\0') return detect_cpu_tuning();
    if (std::strcmp(env, "generic") == 0) return kTuneGeneric;
    if (std::strcmp(env, "sapphirerapids") == 0) return kTuneSapphireRapids;
    if (std::strcmp(env, "zen4") == 0) return kTuneZen4;
    std::fprintf(stderr, "attnscore: ignoring ATTNSCORE_CPU_TUNING=%s: not a tuning\n", env);
    return detect_cpu_tuning();
  }();
  return tuning;
}

bool cpu_supports(attnscore_level level) noexcept {
  if (level_rank(level) < 0) return false;
  static const std::uint64_t features = detect_cpu_features();
  return (level_info(level)->required & ~features) == 0;
}

const KernelF32 &active_kernel_f32() noexcept {
  return pick(g_f32, kF32, *kF32[sizeof(kF32) / sizeof(kF32[0]) - 1],
              [](const KernelF32 &k) { return cpu_supports(k.level); });
}

#if ATTNSCORE_HAVE_S8
const KernelS8 *const *kernels_s8(std::size_t *count) noexcept { return table_of(kS8, count); }

const KernelS8 &active_kernel_s8() noexcept {
  return pick(g_s8, kS8, *kS8[sizeof(kS8) / sizeof(kS8[0]) - 1],
              [](const KernelS8 &k) { return cpu_supports(k.level); });
}
#endif

}  // namespace attnscore

using namespace attnscore;

extern "C" {

attnscore_status attnscore_set_max_level(attnscore_level level_in) {
  const int v = enum_int(level_in);
  if (v != ATTNSCORE_LEVEL_BEST && level_info(v) == nullptr) return ATTNSCORE_ERR_UNKNOWN_LEVEL;
  const auto level = static_cast<attnscore_level>(v);
  if (level != ATTNSCORE_LEVEL_BEST && level_rank(level) < 0) return ATTNSCORE_ERR_UNKNOWN_LEVEL;
  g_api_cap.store(level == ATTNSCORE_LEVEL_BEST ? kNoApiCap : static_cast<int>(level),
                  std::memory_order_release);
  g_f32.store(nullptr, std::memory_order_release);
#if ATTNSCORE_HAVE_F16
  g_f16.store(nullptr, std::memory_order_release);
  g_f16acc.store(nullptr, std::memory_order_release);
  g_bf16.store(nullptr, std::memory_order_release);
  g_bf16dot.store(nullptr, std::memory_order_release);
#endif
#if ATTNSCORE_HAVE_S8
  g_s8.store(nullptr, std::memory_order_release);
#endif
  return ATTNSCORE_OK;
}

attnscore_level attnscore_max_level(void) { return cap_level(); }

const char *attnscore_kernel_name(attnscore_dtype dtype) {
  const int v = enum_int(dtype);
  if (v == ATTNSCORE_DTYPE_F32) return active_kernel_f32().name;
#if ATTNSCORE_HAVE_F16
  if (v == ATTNSCORE_DTYPE_F16) return active_kernel_f16().name;
  if (v == ATTNSCORE_DTYPE_BF16) return active_kernel_bf16().name;
#endif
#if ATTNSCORE_HAVE_S8
  if (v == ATTNSCORE_DTYPE_S8) return active_kernel_s8().name;
#endif
  return nullptr;
}

attnscore_level attnscore_kernel_level(attnscore_dtype dtype) {
  const int v = enum_int(dtype);
  if (v == ATTNSCORE_DTYPE_F32) return active_kernel_f32().level;
#if ATTNSCORE_HAVE_F16
  if (v == ATTNSCORE_DTYPE_F16) return active_kernel_f16().level;
  if (v == ATTNSCORE_DTYPE_BF16) return active_kernel_bf16().level;
#endif
#if ATTNSCORE_HAVE_S8
  if (v == ATTNSCORE_DTYPE_S8) return active_kernel_s8().level;
#endif
  return ATTNSCORE_LEVEL_SCALAR;
}

const char *attnscore_level_name(attnscore_level level) {
  const int v = enum_int(level);
  if (v == ATTNSCORE_LEVEL_BEST) return "best";
  const LevelInfo *l = level_info(v);
  return l != nullptr ? l->name : nullptr;
}

attnscore_status attnscore_level_from_name(const char *name, attnscore_level *level) {
  if (name == nullptr || level == nullptr) return ATTNSCORE_ERR_NULL_POINTER;
  if (std::strcmp(name, "best") == 0) {
    *level = ATTNSCORE_LEVEL_BEST;
    return ATTNSCORE_OK;
  }
  for (const LevelInfo &l : kAllLevels) {
    if (std::strcmp(l.name, name) == 0) {
      *level = l.level;
      return ATTNSCORE_OK;
    }
  }
  return ATTNSCORE_ERR_UNKNOWN_LEVEL;
}

int attnscore_level_supported(attnscore_level level_in) {
  const int v = enum_int(level_in);
  if (level_info(v) == nullptr) return 0;
  const auto level = static_cast<attnscore_level>(v);
  if (!cpu_supports(level)) return 0;
  for (const KernelF32 *row : kF32)
    if (row->level == level) return 1;
#if ATTNSCORE_HAVE_S8
  for (const KernelS8 *row : kS8)
    if (row->level == level) return 1;
#endif
  return 0;
}

uint64_t attnscore_cpu_features(void) { return detect_cpu_features(); }

}  // extern "C"
