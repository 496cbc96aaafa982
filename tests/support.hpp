// SPDX-License-Identifier: Apache-2.0
// Test support: double-precision oracle, the contract's error bound, poisoned buffers, FP state.
#ifndef ATTNSCORE_TESTS_SUPPORT_HPP
#define ATTNSCORE_TESTS_SUPPORT_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attnscore/attnscore.h"

namespace attnscore {
struct KernelF32;  // lib/src/kernels.h
struct KernelF16;
struct KernelS8;
}  // namespace attnscore

namespace testing {

// Every compiled f32 kernel this CPU can run, best first (the kernel testers' one list); the
// compiled ones it cannot run are reported through Catch2's WARN, never skipped silently.
std::vector<const attnscore::KernelF32 *> usable_kernels_f32();
// The f32 kernel of that name in the table, or nullptr.
const attnscore::KernelF32 *kernel_f32(const std::string &name);

// The same for the f16 table (empty in a build without f16).
std::vector<const attnscore::KernelF16 *> usable_kernels_f16();
// The bf16 table's (also KernelF16 rows; empty in a build without f16).
std::vector<const attnscore::KernelF16 *> usable_kernels_bf16();
// The same for the s8 table (empty in a build without the int8 path).
std::vector<const attnscore::KernelS8 *> usable_kernels_s8();
// The levels that have an f32 kernel this CPU runs (int8-only levels such as avx512vnni do not).
bool f32_level(attnscore_level level);

// A level's place in the cap order, as docs/dispatch.md's level table documents it (not the enum
// value: avxvnni, numbered after avx512vnni, ranks between avx2 and avx512); -1 if unknown.
int level_rank(attnscore_level level);

// The tuning class the library should apply, by an oracle independent of its detection:
// ATTNSCORE_CPU_TUNING's word if it names a class, else "sapphirerapids" for an Intel core (the
// compiler runtime's) whose CPUID leaf 7 has AMX-BF16 (EDX bit 22), "zen4" for an AMD family 25
// core whose leaf 7 has AVX-512F (EBX bit 16), else "generic".
const char *tuning_oracle();
// Whether that class is the Sapphire Rapids one, or the Zen 4 one.
bool sapphirerapids_tuning();
bool zen4_tuning();

// Whether this process may run AMX-BF16, by an oracle independent of the library's detection:
// CPUID leaf 7 (EDX bits 22 and 24), XCR0's tile and ZMM state, and (Linux) the kernel granting
// the tile data to the process (asked here again; a second request is a no-op).
bool amx_bf16_usable();

// The row counts a kernel sweep gives a tile of mr rows: every count up to 2 mr + 1, but for a tall
// tile (AMX's 128 rows, made of 32-row blocks) every count up to 33 (each remainder of a block,
// and one row into the next) and then mr's own edges (mr - 1, mr, mr + 1, 2 mr + 1), so that the
// sweep's size does not grow with mr.
std::vector<std::size_t> row_counts(std::size_t mr);

// The levels of this build's family that this CPU runs, plus scalar.
std::vector<attnscore_level> runnable_levels();

#if defined(__x86_64__)
// The x86 levels this CPU runs by an oracle independent of the library's detection: the
// compiler runtime's CPU model (which checks XCR0 too), and CPUID for the two features clang 14's
// __builtin_cpu_supports does not know (f16c, avxvnni; their registers are the AVX2 ones).
struct HostX86 {
  bool avx2, avx512, avx512vnni, avxvnni;
};
HostX86 host_x86();
#endif

// Restores the run-time level cap when a test ends, however it ends.
struct CapGuard {
  CapGuard() = default;
  CapGuard(const CapGuard &) = delete;
  CapGuard &operator=(const CapGuard &) = delete;
  ~CapGuard() { attnscore_set_max_level(ATTNSCORE_LEVEL_BEST); }
};

// Bit pattern that marks memory a call must not write (a NaN no arithmetic produces).
constexpr std::uint32_t kGuardBits = 0x7fa5a5a5u;

float from_bits(std::uint32_t b);
std::uint32_t to_bits(float f);

// A row-major matrix inside a larger buffer: `off` elements of poison before it, NaN in the gap
// between the row end and the stride, and `kTail` poisoned elements after the last row.
struct Buffer {
  static constexpr std::size_t kTail = 64;
  std::size_t rows, cols, ld, off;
  std::vector<float> mem;
  Buffer(std::size_t rows_, std::size_t cols_, std::size_t ld_, std::size_t off_, float poison);
  float *data() { return mem.data() + off; }
  const float *data() const { return mem.data() + off; }
  float &at(std::size_t i, std::size_t j) { return mem[off + i * ld + j]; }
  float at(std::size_t i, std::size_t j) const { return mem[off + i * ld + j]; }
  bool in_matrix(std::size_t index) const;  // whether mem[index] is an element of the matrix
};

// Fills the matrix of `b` (not its poison) with integers in [-r, r], or uniform reals in [-1, 1].
void fill_ints(Buffer &b, int r, std::mt19937 &rng);
void fill_uniform(Buffer &b, std::mt19937 &rng);

// Reference scores in double (this file is built with -ffp-contract=off): R = scale * sum q k,
// and the gauge P = |scale| * sum |q k| for the error bound.
struct Reference {
  std::vector<double> r, p;
  std::size_t n_k;
  double value(std::size_t i, std::size_t j) const { return r[i * n_k + j]; }
  double gauge(std::size_t i, std::size_t j) const { return p[i * n_k + j]; }
};
Reference reference(const Buffer &q, const Buffer &k, std::size_t d, float scale);

// The numerical contract: gamma(d+1) * P + (2d+2) * FLT_MIN * max(1, |scale|).
double contract_bound(std::size_t d, double gauge, float scale);

// The bound of the opt-in f16 accumulation (docs/contract.md): with u = 2^-11 and
// m = ceil(d / 8) + 3 roundings to binary16 per product, gamma16(m + 1) * P + (m + 1) * 2^-14 *
// |scale| + FLT_MIN.
double f16acc_bound(std::size_t d, double gauge, float scale);
// check_scores with that bound (guards checked the same way).
std::string check_scores_f16acc(const Buffer &s, const Reference &ref, std::size_t d, float scale);

// Checks S against the reference: exact (bit-identical to fl(R)) or within the contract, and
// every element of the S buffer outside the matrix still holding kGuardBits. Returns "" when
// all is well, else a description of the first failure.
std::string check_scores(const Buffer &s, const Reference &ref, std::size_t d, float scale,
                         bool exact);

// The int8 contract (README "int8"): fl(fl(acc) * ((q_scale * scale) * k_scale)) for the exact
// integer sum acc, evaluated in float in that order; the tests' one s8 oracle.
float s8_score(std::int64_t acc, float q_scale, float k_scale, float scale);
// Checks S of an int8 call on Q and K (Buffers holding int8 values) bit for bit against
// s8_score, with q_scale[i * q_step] and k_scale[j * k_step] (steps 0 or 1), and every element of
// the S buffer outside the matrix still holding kGuardBits. "" or the first failure.
std::string check_scores_s8(const Buffer &s, const Buffer &q, const Buffer &k, std::size_t d,
                            const float *q_scale, std::size_t q_step, const float *k_scale,
                            std::size_t k_step, float scale);

// An independent binary16 oracle (ldexp arithmetic, nothing shared with the library's bit
// twiddling): the value of a pattern (NaN for NaN patterns), and the pattern nearest to x
// (ties to even, |x| >= 65520 to +-Inf, NaN to the quiet NaN 0x7e00 with x's sign).
double f16_value(std::uint16_t h);
std::uint16_t f16_nearest(double x);
// The same for bfloat16 (8 significant bits, binary32's exponent range), in double arithmetic:
// the value of its bits, and the bfloat16 nearest to x (ties to even; NaN: quiet, sign kept).
double bf16_value(std::uint16_t h);
std::uint16_t bf16_nearest(double x);

// The FP control state (MXCSR on x86, FPCR on aarch64, the fenv rounding mode elsewhere).
std::uint64_t fp_control();
void set_fp_control(std::uint64_t v);
// The bits of fp_control() that are controls (rounding, flushing, traps), not sticky flags.
std::uint64_t fp_control_mask();
// The bits that flush subnormals (FTZ|DAZ on x86, FZ on aarch64), 0 where there are none.
std::uint64_t flush_bits();

// Whether this process may start threads. qemu-user 7.2 hangs starting any thread of an ARM
// guest on this host, so the cross builds' ctest sets ATTNSCORE_TEST_NO_THREADS: there the
// splits and task orders are still checked through hooks that run the tasks on this thread.
bool threads_available();

}  // namespace testing

#endif  // ATTNSCORE_TESTS_SUPPORT_HPP
