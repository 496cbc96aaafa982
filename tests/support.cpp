// SPDX-License-Identifier: Apache-2.0
// Test support (see support.hpp). Built with -ffp-contract=off, like the whole test target.
#include "support.hpp"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <xmmintrin.h>
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace testing {

const char *tuning_oracle() {
  const char *env = std::getenv("ATTNSCORE_CPU_TUNING");
  for (const char *name : {"generic", "sapphirerapids", "zen4"})
    if (env != nullptr && std::strcmp(env, name) == 0) return name;
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  const bool leaf7 = __get_cpuid_count(7, 0, &a, &b, &c, &d);
  if (__builtin_cpu_is("intel") && leaf7 && (d & (1u << 22)) != 0) return "sapphirerapids";
  if (__builtin_cpu_is("amdfam19h") && leaf7 && (b & (1u << 16)) != 0) return "zen4";
#endif
  return "generic";
}

bool sapphirerapids_tuning() { return std::strcmp(tuning_oracle(), "sapphirerapids") == 0; }

bool zen4_tuning() { return std::strcmp(tuning_oracle(), "zen4") == 0; }

bool amx_bf16_usable() {
#if defined(__x86_64__) && defined(__linux__) && defined(SYS_arch_prctl)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || (c & (1u << 27)) == 0) return false;  // OSXSAVE
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || (d & (1u << 22)) == 0 || (d & (1u << 24)) == 0)
    return false;
  std::uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & 0x600e6u) != 0x600e6u) return false;
  return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) == 0;
#else
  return false;
#endif
}

std::vector<std::size_t> row_counts(std::size_t mr) {
  constexpr std::size_t kEvery = 33;
  std::vector<std::size_t> v;
  for (std::size_t n = 1; n <= 2 * mr + 1 && n <= kEvery; ++n) v.push_back(n);
  for (std::size_t n : {mr - 1, mr, mr + 1, 2 * mr + 1})
    if (n > v.back()) v.push_back(n);
  return v;
}

int level_rank(attnscore_level level) {
  switch (level) {
    case ATTNSCORE_LEVEL_SCALAR:
      return 0;
    case ATTNSCORE_LEVEL_SSE2:
    case ATTNSCORE_LEVEL_NEON:
      return 1;
    case ATTNSCORE_LEVEL_AVX2:
    case ATTNSCORE_LEVEL_NEON_DOTPROD:
      return 2;
    case ATTNSCORE_LEVEL_AVXVNNI:
    case ATTNSCORE_LEVEL_NEON_I8MM:
      return 3;
    case ATTNSCORE_LEVEL_AVX512:
      return 4;
    case ATTNSCORE_LEVEL_AVX512VNNI:
      return 5;
    default:
      return -1;
  }
}

std::vector<attnscore_level> runnable_levels() {
  std::vector<attnscore_level> out;
  for (int v = 0; v < 255; ++v) {
    const auto l = static_cast<attnscore_level>(v);
    if (attnscore_level_name(l) != nullptr && attnscore_level_supported(l)) out.push_back(l);
  }
  return out;
}

float from_bits(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

std::uint32_t to_bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

Buffer::Buffer(std::size_t rows_, std::size_t cols_, std::size_t ld_, std::size_t off_,
               float poison)
    : rows(rows_),
      cols(cols_),
      ld(ld_),
      off(off_),
      mem(off_ + (rows_ ? (rows_ - 1) * ld_ + cols_ : 0) + kTail, poison) {}

bool Buffer::in_matrix(std::size_t index) const {
  if (index < off || rows == 0) return false;
  const std::size_t rel = index - off;
  return rel / ld < rows && rel % ld < cols;
}

void fill_ints(Buffer &b, int r, std::mt19937 &rng) {
  std::uniform_int_distribution<int> dist(-r, r);
  for (std::size_t i = 0; i < b.rows; ++i)
    for (std::size_t j = 0; j < b.cols; ++j) b.at(i, j) = static_cast<float>(dist(rng));
}

void fill_uniform(Buffer &b, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (std::size_t i = 0; i < b.rows; ++i)
    for (std::size_t j = 0; j < b.cols; ++j) b.at(i, j) = dist(rng);
}

Reference reference(const Buffer &q, const Buffer &k, std::size_t d, float scale) {
  Reference ref{std::vector<double>(q.rows * k.rows), std::vector<double>(q.rows * k.rows), k.rows};
  for (std::size_t i = 0; i < q.rows; ++i) {
    for (std::size_t j = 0; j < k.rows; ++j) {
      double sum = 0.0, gauge = 0.0;
      for (std::size_t t = 0; t < d; ++t) {
        const double prod = static_cast<double>(q.at(i, t)) * static_cast<double>(k.at(j, t));
        sum += prod;
        gauge += std::fabs(prod);
      }
      ref.r[i * k.rows + j] = sum * static_cast<double>(scale);
      ref.p[i * k.rows + j] = gauge * std::fabs(static_cast<double>(scale));
    }
  }
  return ref;
}

double contract_bound(std::size_t d, double gauge, float scale) {
  const double u = std::ldexp(1.0, -24);
  const double n = static_cast<double>(d + 1);
  const double gamma = n * u / (1.0 - n * u);
  const double eta = static_cast<double>(2 * d + 2) * std::numeric_limits<float>::min() *
                     std::fmax(1.0, std::fabs(static_cast<double>(scale)));
  return gamma * gauge + eta;
}

double f16acc_bound(std::size_t d, double gauge, float scale) {
  const double u = std::ldexp(1.0, -11);
  const double n = static_cast<double>((d + 7) / 8 + 3 + 1);
  if (n * u >= 1.0) return HUGE_VAL;
  const double gamma = n * u / (1.0 - n * u);
  return gamma * gauge + n * std::ldexp(1.0, -14) * std::fabs(static_cast<double>(scale)) +
         static_cast<double>(std::numeric_limits<float>::min());
}

namespace {

// Guards of S unchanged, then `ok(i, j, got, want)` for every element; "" or the first failure.
template <class Ok, class Bound>
std::string check_each(const Buffer &s, const Reference &ref, Ok ok, Bound bound) {
  char msg[256];
  for (std::size_t idx = 0; idx < s.mem.size(); ++idx) {
    if (!s.in_matrix(idx) && to_bits(s.mem[idx]) != kGuardBits) {
      std::snprintf(msg, sizeof msg, "guard cell %zu (matrix starts at %zu, ld %zu) overwritten",
                    idx, s.off, s.ld);
      return msg;
    }
  }
  for (std::size_t i = 0; i < s.rows; ++i) {
    for (std::size_t j = 0; j < s.cols; ++j) {
      const float got = s.at(i, j);
      const double want = ref.value(i, j);
      if (!ok(i, j, got, want)) {
        std::snprintf(msg, sizeof msg, "S[%zu][%zu] = %.9g, reference %.9g, bound %.3g", i, j,
                      static_cast<double>(got), want, bound(i, j));
        return msg;
      }
    }
  }
  return "";
}

}  // namespace

std::string check_scores_f16acc(const Buffer &s, const Reference &ref, std::size_t d, float scale) {
  auto bound = [&](std::size_t i, std::size_t j) {
    return f16acc_bound(d, ref.gauge(i, j), scale);
  };
  return check_each(
      s, ref,
      [&](std::size_t i, std::size_t j, float got, double want) {
        return std::fabs(got - want) <= bound(i, j);
      },
      bound);
}

std::string check_scores(const Buffer &s, const Reference &ref, std::size_t d, float scale,
                         bool exact) {
  char msg[256];
  for (std::size_t idx = 0; idx < s.mem.size(); ++idx) {
    if (!s.in_matrix(idx) && to_bits(s.mem[idx]) != kGuardBits) {
      std::snprintf(msg, sizeof msg, "guard cell %zu (matrix starts at %zu, ld %zu) overwritten",
                    idx, s.off, s.ld);
      return msg;
    }
  }
  for (std::size_t i = 0; i < s.rows; ++i) {
    for (std::size_t j = 0; j < s.cols; ++j) {
      const float got = s.at(i, j);
      const double want = ref.value(i, j);
      const bool ok = exact ? to_bits(got) == to_bits(static_cast<float>(want))
                            : std::fabs(got - want) <= contract_bound(d, ref.gauge(i, j), scale);
      if (!ok) {
        std::snprintf(msg, sizeof msg, "S[%zu][%zu] = %.9g, reference %.9g, bound %.3g", i, j,
                      static_cast<double>(got), want,
                      exact ? 0.0 : contract_bound(d, ref.gauge(i, j), scale));
        return msg;
      }
    }
  }
  return "";
}

float s8_score(std::int64_t acc, float q_scale, float k_scale, float scale) {
  return static_cast<float>(acc) * ((q_scale * scale) * k_scale);
}

std::string check_scores_s8(const Buffer &s, const Buffer &q, const Buffer &k, std::size_t d,
                            const float *q_scale, std::size_t q_step, const float *k_scale,
                            std::size_t k_step, float scale) {
  char msg[256];
  for (std::size_t idx = 0; idx < s.mem.size(); ++idx) {
    if (!s.in_matrix(idx) && to_bits(s.mem[idx]) != kGuardBits) {
      std::snprintf(msg, sizeof msg, "guard cell %zu (matrix starts at %zu, ld %zu) overwritten",
                    idx, s.off, s.ld);
      return msg;
    }
  }
  for (std::size_t i = 0; i < s.rows; ++i) {
    for (std::size_t j = 0; j < s.cols; ++j) {
      std::int64_t acc = 0;
      for (std::size_t t = 0; t < d; ++t)
        acc += static_cast<std::int64_t>(q.at(i, t)) * static_cast<std::int64_t>(k.at(j, t));
      const float want = s8_score(acc, q_scale[i * q_step], k_scale[j * k_step], scale);
      const float got = s.at(i, j);
      if (to_bits(got) != to_bits(want)) {
        std::snprintf(msg, sizeof msg, "S[%zu][%zu] = %a, want %a (exact sum %lld)", i, j,
                      static_cast<double>(got), static_cast<double>(want),
                      static_cast<long long>(acc));
        return msg;
      }
    }
  }
  return "";
}

#if defined(__x86_64__) || defined(__i386__)
std::uint64_t fp_control() { return _mm_getcsr(); }
void set_fp_control(std::uint64_t v) { _mm_setcsr(static_cast<unsigned>(v)); }
std::uint64_t fp_control_mask() { return 0xffc0; }  // bits 0-5 are the exception flags
std::uint64_t flush_bits() { return 0x8040; }       // FTZ (bit 15) | DAZ (bit 6)
#elif defined(__aarch64__)
std::uint64_t fp_control() {
  std::uint64_t v;
  __asm__ volatile("mrs %0, fpcr" : "=r"(v));
  return v;
}
void set_fp_control(std::uint64_t v) { __asm__ volatile("msr fpcr, %0" : : "r"(v)); }
std::uint64_t fp_control_mask() { return ~std::uint64_t{0}; }  // FPCR holds no flags
std::uint64_t flush_bits() { return std::uint64_t{1} << 24; }  // FZ
#elif defined(__arm__) && defined(__ARM_FP)
// FPSCR: FZ/DN/rounding/trap enables are controls; NZCV, QC and the cumulative exception bits
// are flags. FZ governs VFP scalar code only: armv7 NEON flushes whatever it says.
std::uint64_t fp_control() {
  std::uint32_t v;
  __asm__ volatile("vmrs %0, fpscr" : "=r"(v));
  return v;
}
void set_fp_control(std::uint64_t v) {
  __asm__ volatile("vmsr fpscr, %0" : : "r"(static_cast<std::uint32_t>(v)));
}
std::uint64_t fp_control_mask() { return 0x07ffff00; }         // bits 8-26
std::uint64_t flush_bits() { return std::uint64_t{1} << 24; }  // FZ
#else
std::uint64_t fp_control() { return static_cast<std::uint64_t>(std::fegetround()); }
void set_fp_control(std::uint64_t v) { std::fesetround(static_cast<int>(v)); }
std::uint64_t fp_control_mask() { return ~std::uint64_t{0}; }
std::uint64_t flush_bits() { return 0; }
#endif

namespace {
// 2^k for a normal double's exponent k, built from its bits: scaling by it is exact, as ldexp's
// is, and cheap (libm's ldexp and frexp were most of the suite's time under the emulators).
double pow2(int k) {
  const std::uint64_t bits = static_cast<std::uint64_t>(k + 1023) << 52;
  double r;
  std::memcpy(&r, &bits, sizeof r);
  return r;
}
// frexp's exponent of a >= 0: a = f * 2^e, f in [0.5, 1), for a normal double (for 0 and the
// subnormals, that of the smallest normal: the quanta below are clamped far above it).
int frexp_exponent(double a) {
  std::uint64_t bits;
  std::memcpy(&bits, &a, sizeof bits);
  return std::max(static_cast<int>(bits >> 52 & 2047), 1) - 1022;
}
// The pattern nearest to a = |x| (not NaN, below the overflow threshold) in a binary format with
// p significant bits whose smallest normal is 2^emin: scale the quantum (2^(e - p), or the fixed
// 2^(emin - p + 1) of the subnormals) to 1 and let nearbyint round (to nearest even, the
// default rounding mode); scaling by 2^k is exact. The exponent field is er + bias - 1.
std::uint16_t nearest_magnitude(double a, int p, int emin, int bias) {
  const int quantum = std::max(frexp_exponent(a) - p, emin - p + 1);
  const double r = std::nearbyint(a * pow2(-quantum)) * pow2(quantum);
  if (r < pow2(emin)) return static_cast<std::uint16_t>(r * pow2(p - 1 - emin));
  const int er = frexp_exponent(r);  // r = f * 2^er, f in [0.5, 1)
  const auto mant = static_cast<unsigned>(r * pow2(p - er)) - (1u << (p - 1));
  return static_cast<std::uint16_t>(static_cast<unsigned>(er + bias - 1) << (p - 1) | mant);
}
}  // namespace

double f16_value(std::uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 31) return m ? std::numeric_limits<double>::quiet_NaN() : sign * HUGE_VAL;
  return sign * (e ? (1024 + m) * pow2(e - 25) : m * pow2(-24));
}

std::uint16_t f16_nearest(double x) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return sign | 0x7e00;
  const double a = std::fabs(x);
  if (a >= 65520.0) return sign | 0x7c00;  // the tie between 65504 and 2^16 rounds to even: Inf
  return sign | nearest_magnitude(a, 11, -14, 15);
}

double bf16_value(std::uint16_t h) {
  const int e = (h >> 7) & 255, m = h & 127;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 255) return m ? std::numeric_limits<double>::quiet_NaN() : sign * HUGE_VAL;
  return sign * (e ? (128 + m) * pow2(e - 134) : m * pow2(-133));
}

std::uint16_t bf16_nearest(double x) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return sign | 0x7fc0;
  const double a = std::fabs(x);
  // The tie between the largest finite value (2 - 2^-7) 2^127 and 2^128 rounds to even: Inf.
  if (a >= 511.0 * pow2(119)) return sign | 0x7f80;
  return sign | nearest_magnitude(a, 8, -126, 127);
}

#if defined(__x86_64__)
HostX86 host_x86() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  const bool f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
  const bool avxvnni_bit = __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 4)) != 0;
  __builtin_cpu_init();
  HostX86 h{};
  h.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
  h.avx512 = h.avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  h.avx512vnni = h.avx512 && __builtin_cpu_supports("avx512vnni");
  h.avxvnni = h.avx2 && avxvnni_bit;
  return h;
}
#endif

}  // namespace testing
