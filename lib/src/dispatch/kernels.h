// SPDX-License-Identifier: Apache-2.0
// Every compiled kernel, one declaration each, and the table row that describes it.
#ifndef ATTNSCORE_KERNELS_H
#define ATTNSCORE_KERNELS_H

#include <cstddef>
#include <cstdint>

#include "attnscore/attnscore.h"
#include "attnscore_config.h"

// Arch kernels inline all of xsimd into themselves: an out-of-line xsimd helper compiled with a
// higher level's flags would otherwise be one COMDAT symbol shared with lower levels (SIGILL).
#define ATTNSCORE_KERNEL_ENTRY __attribute__((flatten))

namespace attnscore {

// Kernel flags for calls on a chunk of d: kAccumulate starts from the partial sums the previous
// chunk left in S (instead of 0); kFinal applies the scale at the store (otherwise the raw sums
// are stored for the next chunk). kStream (s8): the panels stream from memory (the key cache,
// read once per call), so the kernel prefetches ahead of them. kStoreNT (f32 prefill, with
// kFinal): S is larger than the caches and not read again by the call, so whole 64-byte aligned
// tile rows may be stored non-temporally (no read for ownership, no eviction of Q and K); the
// driver fences once after its loop.
constexpr unsigned kAccumulate = 1, kFinal = 2, kStream = 4, kStoreNT = 8;

// Whether a tile of `cols` keys (NR the tile's width, a multiple of 16 floats) stores S
// non-temporally: kStoreNT at the final store, every row whole and on 64-byte lines, or none
// streamed (one test per tile).
inline bool streams_tile(unsigned flags, std::size_t cols, std::size_t nr, const float *s,
                         std::size_t lds) noexcept {
  return (flags & (kFinal | kStoreNT)) == (kFinal | kStoreNT) && cols == nr &&
         reinterpret_cast<std::uintptr_t>(s) % 64 == 0 && lds % (64 / sizeof(float)) == 0;
}

// Uniform f32 kernel, in two shapes that sum every element in the same order (so any block of
// S gives the same bits whichever shape computed it):
// - prefill: pack puts `cols` <= NR keys into a panel of NR * d floats (t-major, 64-byte
//   aligned, zero-padded keys); fn makes an MR x NR block of S from `rows` <= MR raw Q rows and
//   a panel, writing exactly rows x cols elements of s and reading them only under kAccumulate;
// - decode: dec makes `rows` <= dec_rows x `cols` <= NR_dec scores from raw Q and raw K (the
//   scores call gives it at most kDecodeRows);
//   cdec makes `rows` <= kDecodeRows x any `cols` scores from consecutive prefill panels
//   `stride` floats apart (the packed key cache).
using PackF32Fn = void (*)(std::size_t cols, std::size_t d, const float *k, std::size_t ldk,
                           float *panel) noexcept;
using QkF32Fn = void (*)(std::size_t rows, std::size_t cols, std::size_t d, const float *q,
                         std::size_t ldq, const float *panel, float *s, std::size_t lds,
                         float scale, unsigned flags) noexcept;
using DecF32Fn = void (*)(std::size_t rows, std::size_t cols, std::size_t d, const float *q,
                          std::size_t ldq, const float *k, std::size_t ldk, float *s,
                          std::size_t lds, float scale) noexcept;

using CacheDecF32Fn = void (*)(std::size_t rows, std::size_t cols, std::size_t d, const float *q,
                               std::size_t ldq, const float *panels, std::size_t stride, float *s,
                               std::size_t lds, float scale) noexcept;

// Calls with at most this many query rows take the decode shape.
constexpr std::size_t kDecodeRows = 3;
// The most rows any level's decode tile takes (KernelF32::dec_rows): the attention call's decode
// puts the query heads of one KV head in the rows, so each block of K is transposed once for all.
constexpr std::size_t kMaxDecodeRows = 8;

// One row of a dtype's kernel table, defined beside the kernel's code (ATTNSCORE_DEFINE_QK_F32),
// so its tile sizes have one source. The name is the symbol, the test name and the bench name.
struct KernelF32 {
  const char *name;
  attnscore_level level;
  std::size_t mr, nr;  // prefill tile
  QkF32Fn fn;
  PackF32Fn pack;
  std::size_t nr_dec;  // decode tile: kDecodeRows x nr_dec
  DecF32Fn dec;
  CacheDecF32Fn cdec;
  std::size_t dec_rows;  // dec takes up to this many rows (>= kDecodeRows, <= kMaxDecodeRows)
};

extern const KernelF32 qk_f32_4x4__scalar_kernel;
#if ATTNSCORE_HAVE_SSE2
extern const KernelF32 qk_f32_6x8__sse2_kernel;
#endif
#if ATTNSCORE_HAVE_AVX2
extern const KernelF32 qk_f32_6x16__avx2_kernel;
#endif
#if ATTNSCORE_HAVE_AVX512
extern const KernelF32 qk_f32_8x32__avx512_kernel;
#endif
#if ATTNSCORE_HAVE_NEON && defined(__aarch64__)
extern const KernelF32 qk_f32_8x8__neon_kernel;
#elif ATTNSCORE_HAVE_NEON
extern const KernelF32 qk_f32_4x12__neon_kernel;
#endif

// Stack bytes for one packed K panel in a compute call: d is processed in chunks of
// kPanelFloats / NR (256 for NR = 32), so any d works without heap allocation.
constexpr std::size_t kPanelFloats = 8192;

// The f32 table, best first: every compiled kernel, whether or not this CPU can run it.
const KernelF32 *const *kernels_f32(std::size_t *count) noexcept;

// The kernel the public API uses now (best usable under the cap); chosen once, then cached.
const KernelF32 &active_kernel_f32() noexcept;

// Whether this CPU can run kernels of `level` (independent of the cap).
bool cpu_supports(attnscore_level level) noexcept;

// The blocking driver: packs K panel by panel and runs the kernel over S's MR x NR blocks.
// Arguments must be valid (checked by the public API).
void run_f32(const KernelF32 &kernel, std::size_t n_q, std::size_t n_k, std::size_t d,
             const float *q, std::size_t ldq, const float *k, std::size_t ldk, float *s,
             std::size_t lds, float scale) noexcept;

// The element type tag of bfloat16 in the templates and engines: its values are stored as their
// bits (uint16_t), as binary16's are, so the tag (not the storage type) says which they are.
struct Bf16 {};
template <class T>
struct Storage {
  using type = T;
};
template <>
struct Storage<Bf16> {
  using type = std::uint16_t;
};
template <class T>
using storage_t = typename Storage<T>::type;

#if ATTNSCORE_HAVE_F16
// The 16-bit float kernels (binary16, and bfloat16 in the same row type). The f16 kernel of a
// level: binary16 inputs (as their bits) converted to f32 while K is packed
// or streamed and while Q is read, then the f32 arithmetic of the same level (its micro-kernel
// `f32->fn` for prefill), so every element is summed in the f32 kernel's order from the exactly
// converted values. Panels are the f32 kernel's (NR = f32->nr); the key cache keeps them as f16.
// - pack: `cols` <= NR keys of raw f16 K into an f32 panel, as PackF32Fn;
// - dec: `rows` <= dec_rows x `cols` <= nr_dec scores from raw f16 Q and K, as DecF32Fn;
// - cdec: as CacheDecF32Fn, from f16 panels (the f16 key cache);
// - to_f32 / narrow: n elements, exactly / rounded to nearest even (the public row converters).
// A bf16 row is the same with bfloat16 for binary16 (its conversion to f32 a 16-bit shift).
using PackF16Fn = void (*)(std::size_t cols, std::size_t d, const std::uint16_t *k, std::size_t ldk,
                           float *panel) noexcept;
using DecF16Fn = void (*)(std::size_t rows, std::size_t cols, std::size_t d, const std::uint16_t *q,
                          std::size_t ldq, const std::uint16_t *k, std::size_t ldk, float *s,
                          std::size_t lds, float scale) noexcept;
using CacheDecF16Fn = void (*)(std::size_t rows, std::size_t cols, std::size_t d,
                               const std::uint16_t *q, std::size_t ldq, const std::uint16_t *panels,
                               std::size_t stride, float *s, std::size_t lds, float scale) noexcept;
using ToF32Fn = void (*)(std::size_t n, const std::uint16_t *src, float *dst) noexcept;
using ToF16Fn = void (*)(std::size_t n, const float *src, std::uint16_t *dst) noexcept;
// An f16-accumulating kernel (the opt-in ATTNSCORE_F16_ACCUMULATE_F16): `rows` <= acc_mr x any
// `cols` scores from raw f16 Q and K, summed in binary16, the scale applied in f32.
using AccF16Fn = void (*)(std::size_t rows, std::size_t cols, std::size_t d, const std::uint16_t *q,
                          std::size_t ldq, const std::uint16_t *k, std::size_t ldk, float *s,
                          std::size_t lds, float scale) noexcept;

// The opt-in bf16 dot-product kernel (ATTNSCORE_ATTN_BF16_DOT): `rows` <= dot_mr x `cols` <=
// dot_nr scores from raw bf16 Q rows and a panel that the row's `pack` made of `cols` keys in the
// row's own layout (x86: pairs of dims, the 32-bit word at panel[(t / 2) * dot_nr + j] holding
// dims t and t + 1 of key j; AArch64: 4 dims of a key pair a block), zero past d and past cols,
// within kPanelFloats for 2 * kPanelFloats / dot_nr dims; summed by the CPU's bf16 dot product;
// d in chunks, flags as QkF32Fn.
using QkDotFn = void (*)(std::size_t rows, std::size_t cols, std::size_t d, const std::uint16_t *q,
                         std::size_t ldq, const float *panel, float *s, std::size_t lds,
                         float scale, unsigned flags) noexcept;
// A dot-product row's Q layout, where its dot does not read raw rows: `rows` <= dot_mr rows of dims
// [0, d) of Q (row stride ldq) into `out` (dot_mr x d rounded up to 32 elements at most), zero
// past d and past rows; dot then takes `out` as q (ldq unused).
using PackQDotFn = void (*)(std::size_t rows, std::size_t d, const std::uint16_t *q,
                            std::size_t ldq, std::uint16_t *out) noexcept;
// A dot-product row's decode kernel (dec, as DecF16Fn, with the prefill's bits) takes d up to this.
constexpr std::size_t kDotDecMaxD = 512;

// A row of the f16 (or bf16) table: an f32-accumulating kernel (acc == nullptr: f32, pack ...
// narrow set),
// or an f16-accumulating one (acc set, the f32-path members null), which the default choice
// never takes. `features`: CPU features needed beyond the level's (FP16 arithmetic).
struct KernelF16 {
  const char *name;
  attnscore_level level;
  const KernelF32 *f32;  // the same level's f32 kernel: prefill micro-kernel, mr, nr
  PackF16Fn pack;
  std::size_t nr_dec;
  DecF16Fn dec;
  CacheDecF16Fn cdec;
  ToF32Fn to_f32;
  ToF16Fn narrow;
  std::uint64_t features;
  AccF16Fn acc;
  std::size_t acc_mr, acc_nr;
  std::size_t dec_rows;  // dec takes up to this many rows, as KernelF32::dec_rows
  QkDotFn dot;           // a bf16 dot-product row (pack set, the f32-path members null), or null
  std::size_t dot_mr, dot_nr;
  unsigned slow_on;  // kTune* cores where this row measured slower than the row the choice falls to
  PackQDotFn qpack;  // a dot-product row's Q packing, or null (its dot reads raw Q rows)
};

extern const KernelF16 qk_f16_4x4__scalar_kernel;
#if ATTNSCORE_HAVE_AVX2
extern const KernelF16 qk_f16_6x16__avx2_kernel;
#endif
#if ATTNSCORE_HAVE_AVX512
extern const KernelF16 qk_f16_8x32__avx512_kernel;
#endif
#if ATTNSCORE_HAVE_NEON && defined(__aarch64__)
extern const KernelF16 qk_f16_8x8__neon_kernel;
#elif ATTNSCORE_HAVE_NEON
extern const KernelF16 qk_f16_4x12__neon_kernel;
#endif
#if ATTNSCORE_HAVE_NEON_FP16ACC
extern const KernelF16 qk_f16_4x4__neon_fp16acc_kernel;
#endif

// The bf16 rows: every f32 level's, sse2 included (the conversion is an integer shift), and the
// opt-in dot-product rows of the avx512 level (AMX-BF16, or AVX512_BF16, also needed) and of the
// neon level (BF16 also needed, AArch64).
#if ATTNSCORE_HAVE_AMXBF16
extern const KernelF16 qk_bf16_128x32__amxbf16_kernel;
#endif
#if ATTNSCORE_HAVE_AVX512BF16DOT
extern const KernelF16 qk_bf16_8x32__avx512bf16_kernel;
#endif
#if ATTNSCORE_HAVE_NEON_BF16DOT
extern const KernelF16 qk_bf16_8x8__neon_bf16_kernel;
#endif
extern const KernelF16 qk_bf16_4x4__scalar_kernel;
#if ATTNSCORE_HAVE_SSE2
extern const KernelF16 qk_bf16_6x8__sse2_kernel;
#endif
#if ATTNSCORE_HAVE_AVX2
extern const KernelF16 qk_bf16_6x16__avx2_kernel;
#endif
#if ATTNSCORE_HAVE_AVX512
extern const KernelF16 qk_bf16_8x32__avx512_kernel;
#endif
#if ATTNSCORE_HAVE_NEON && defined(__aarch64__)
extern const KernelF16 qk_bf16_8x8__neon_kernel;
#elif ATTNSCORE_HAVE_NEON
extern const KernelF16 qk_bf16_4x12__neon_kernel;
#endif

// The f16 table, best first, and the kernel the public API uses now (as for f32).
const KernelF16 *const *kernels_f16(std::size_t *count) noexcept;
const KernelF16 &active_kernel_f16() noexcept;
// The kernel of a call with ATTNSCORE_F16_ACCUMULATE_F16: the first f16-accumulating row this CPU
// runs under the cap, else (no FP16 arithmetic, cap, build) active_kernel_f16().
const KernelF16 &active_kernel_f16acc() noexcept;
// Whether this CPU runs a row: its level and its extra features.
bool cpu_runs(const KernelF16 &kernel) noexcept;
// The bf16 table and the kernel the public API uses now.
const KernelF16 *const *kernels_bf16(std::size_t *count) noexcept;
const KernelF16 &active_kernel_bf16() noexcept;
// The kernel of a call with ATTNSCORE_ATTN_BF16_DOT: the dot-product row where this CPU runs it
// under the cap, else active_kernel_bf16().
const KernelF16 &active_kernel_bf16dot() noexcept;

// The f16 blocking driver (f32 output), as run_f32 (an f16-accumulating kernel: its own tiles
// over S, no packing). Arguments must be valid.
void run_f16(const KernelF16 &kernel, std::size_t n_q, std::size_t n_k, std::size_t d,
             const std::uint16_t *q, std::size_t ldq, const std::uint16_t *k, std::size_t ldk,
             float *s, std::size_t lds, float scale) noexcept;
// The bf16 blocking driver: the f16 one with a bf16 row (the engine reads the format only
// through the row's functions).
inline void run_bf16(const KernelF16 &kernel, std::size_t n_q, std::size_t n_k, std::size_t d,
                     const std::uint16_t *q, std::size_t ldq, const std::uint16_t *k,
                     std::size_t ldk, float *s, std::size_t lds, float scale) noexcept {
  run_f16(kernel, n_q, n_k, d, q, ldq, k, ldk, s, lds, scale);
}
#endif  // ATTNSCORE_HAVE_F16

// s8 kernels (kernels/generic/tile_s8.hpp, kernels/scalar/qk_s8_scalar.cpp). K is packed NR keys at
// a time into a panel of groups of KG (4 or 8) dims: panel[(g * NR + j) * KG + u] = k[j][KG g + u],
// zero padded; pack may also write sums[j] = the sum of key j's values (for kernels whose products
// are biased). fn makes `rows` <= MR x `cols` scores from ceil(cols / NR) panels one after the
// other (panel p at p * NR * groups * KG bytes, its sums and key scales at p * NR, padded to whole
// panels), so a row tile of Q is prepared once per call: exact int32 sums, then (float)sum * (qs[i]
// * ks[j]) at kFinal, where qs[i] = q_scale * scale of row i and ks[j] the scale of key j. d is
// done in chunks of kS8Chunk, the int32 partials passing through S as raw bits (kAccumulate).
using PackS8Fn = void (*)(std::size_t cols, std::size_t d, const std::int8_t *k, std::size_t ldk,
                          std::int8_t *panel, std::int32_t *sums) noexcept;
using QkS8Fn = void (*)(std::size_t rows, std::size_t cols, std::size_t d, const std::int8_t *q,
                        std::size_t ldq, const std::int8_t *panel, const std::int32_t *sums,
                        const float *qs, const float *ks, float *s, std::size_t lds,
                        unsigned flags) noexcept;
// One query row against raw K (a decode step: no packing, each key read once, in order), for
// d <= kS8Chunk: s[j] = (float)sum_t q[t] k[j][t] * (qs * k_scale[j * k_step]), the same bits
// as fn. Kernels without it leave it null and the driver packs.
using DecodeS8Fn = void (*)(std::size_t cols, std::size_t d, const std::int8_t *q,
                            const std::int8_t *k, std::size_t ldk, float qs, const float *k_scale,
                            std::size_t k_step, float *s) noexcept;

// Quantizes n rows of d floats: scales[i] = max|x| / 127 (0, and a zero row, when that is not a
// normal float), out = x / scales[i] rounded to nearest even, saturated to int8. Inputs finite.
using QuantS8Fn = void (*)(std::size_t n, std::size_t d, const float *x, std::size_t ldx,
                           std::int8_t *out, std::size_t ldo, float *scales) noexcept;
void quantize_s8_scalar(std::size_t n, std::size_t d, const float *x, std::size_t ldx,
                        std::int8_t *out, std::size_t ldo, float *scales) noexcept;
// The second half of QuantS8Fn alone: n floats divided by a given normal scale, rounded to
// nearest even and saturated (the f16 quantizer's chunks of converted values).
using QuantScaledS8Fn = void (*)(std::size_t n, const float *x, float scale,
                                 std::int8_t *out) noexcept;
void quantize_scaled_s8_scalar(std::size_t n, const float *x, float scale,
                               std::int8_t *out) noexcept;

struct KernelS8 {
  const char *name;
  attnscore_level level;
  std::size_t mr, nr;
  std::size_t kg;  // dims per panel group: 4, or 8 (smmla's 2 x 8 operands)
  QkS8Fn fn;
  PackS8Fn pack;
  QuantS8Fn quant;               // the quantization helper at this level
  QuantScaledS8Fn quant_scaled;  // its second half, with the scale given
  DecodeS8Fn decode;             // or null
};

constexpr std::size_t kS8Chunk = 512;  // dims per panel: a multiple of 4
constexpr std::size_t kS8MaxNR = 64, kS8MaxMR = 16;
// The driver's stack block of packed K (run_s8): at least one panel of kS8MaxNR x kS8Chunk, and
// at most kS8BlockKeys keys (their sums and scales are kept beside it).
constexpr std::size_t kS8BlockBytes = 32 * 1024, kS8BlockKeys = 1024;
static_assert(kS8BlockBytes >= kS8MaxNR * kS8Chunk, "a block holds a panel");

extern const KernelS8 qk_s8_4x4c4__scalar_kernel;
#if ATTNSCORE_HAVE_S8 && ATTNSCORE_HAVE_AVX2
extern const KernelS8 qk_s8_4x8c4__avx2_kernel;
#endif
#if ATTNSCORE_HAVE_S8 && ATTNSCORE_HAVE_AVX512
extern const KernelS8 qk_s8_8x16c4__avx512_kernel;
#endif
#if ATTNSCORE_HAVE_S8 && ATTNSCORE_HAVE_AVX512VNNI
extern const KernelS8 qk_s8_8x32c4__avx512vnni_kernel;
#endif
#if ATTNSCORE_HAVE_S8 && ATTNSCORE_HAVE_AVXVNNI
extern const KernelS8 qk_s8_6x16c4__avxvnni_kernel;
#endif
#if ATTNSCORE_HAVE_S8 && ATTNSCORE_HAVE_NEON && defined(__aarch64__)
extern const KernelS8 qk_s8_4x8c4__neon_kernel;
#elif ATTNSCORE_HAVE_S8 && ATTNSCORE_HAVE_NEON
extern const KernelS8 qk_s8_2x8c4__neon_kernel;
#endif
#if ATTNSCORE_HAVE_S8 && ATTNSCORE_HAVE_NEON_DOTPROD
extern const KernelS8 qk_s8_8x8c4__neon_dotprod_kernel;
#endif
#if ATTNSCORE_HAVE_S8 && ATTNSCORE_HAVE_NEON_I8MM
extern const KernelS8 qk_s8_8x8c8__neon_i8mm_kernel;
#endif

// The s8 table, best first, and the kernel the public API uses now.
const KernelS8 *const *kernels_s8(std::size_t *count) noexcept;
const KernelS8 &active_kernel_s8() noexcept;

// The s8 blocking driver; q_step / k_step are 0 (one scale) or 1 (one per row / key).
// Arguments must be valid (checked by the public API).
// Every check of attnscore_scores_s8, in the documented order (OK with n_q or n_k 0: no-op).
attnscore_status check_s8(std::size_t n_q, std::size_t n_k, std::size_t d, const std::int8_t *q,
                          std::size_t ldq, const float *q_scale, std::size_t q_scale_count,
                          const std::int8_t *k, std::size_t ldk, const float *k_scale,
                          std::size_t k_scale_count, const float *s, std::size_t lds,
                          float scale) noexcept;
void run_s8(const KernelS8 &kernel, std::size_t n_q, std::size_t n_k, std::size_t d,
            const std::int8_t *q, std::size_t ldq, const float *q_scale, std::size_t q_step,
            const std::int8_t *k, std::size_t ldk, const float *k_scale, std::size_t k_step,
            float *s, std::size_t lds, float scale) noexcept;

// CPU feature detection (arch/cpu_features_*.cpp): ATTNSCORE_CPU_* bits, detected once.
std::uint64_t detect_cpu_features() noexcept;

// Cores on which a measurement changed a kernel choice (registry.cpp): Intel's server cores with
// AMX (Sapphire, Emerald and Granite Rapids), where `vdpbf16ps` runs at half the f32 FMA's rate,
// so a row whose `slow_on` has the bit is passed over there; AMD Zen 4, where the float decode's
// software prefetch slows the stream the hardware prefetchers keep up alone.
constexpr unsigned kTuneGeneric = 0;
constexpr unsigned kTuneSapphireRapids = 1;
constexpr unsigned kTuneZen4 = 2;
// The class of a core from its CPUID vendor string (12 chars), family, and whether it has
// AMX-BF16 and AVX-512F.
unsigned tuning_of(const char *vendor, unsigned family, bool amx_bf16, bool avx512f) noexcept;
// This core's class (arch/cpu_features_*.cpp: kTuneGeneric off x86).
unsigned detect_cpu_tuning() noexcept;
// The class in effect: ATTNSCORE_CPU_TUNING (`generic`, `sapphirerapids`, `zen4`) if set, else
// detected.
unsigned cpu_tuning() noexcept;
// Whether the float decode tile (tile_f32.hpp) prefetches K ahead of its stream: not on Zen 4.
// A constant off x86, so no other build carries the loop without it.
inline bool decode_prefetches() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  return (cpu_tuning() & kTuneZen4) == 0;
#else
  return true;
#endif
}

}  // namespace attnscore

#endif  // ATTNSCORE_KERNELS_H
