// SPDX-License-Identifier: Apache-2.0
// The kernel tester: every compiled kernel of every dtype (f32, f16, bf16, int8) this CPU can run,
// over the shape sweep of the design, and the key cache of every dtype against its kernel.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/driver.hpp"
#include "dispatch/kernels.h"
#include "support.hpp"

using attnscore::KernelF32;
using testing::Buffer;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();

// A kernel of any dtype as the sweep sees it: its tile sizes, and a run through its blocking
// driver on float matrices whose values the dtype holds exactly (f16, bf16: their values, int8:
// integers in [-128, 127], as round_to_dtype and fill_exact make them; the run passes copies in
// the dtype, f16 and bf16 made by the tests' own oracle, with NaN (f16, bf16) or -77 (int8) in the
// gaps between rows and a misaligned base).
// An f16-accumulating kernel (acc16) is held to its own bound (support.hpp, f16acc_bound)
// instead of bit-exactness or the f32 contract; an int8 kernel is always held to the int8
// contract bit for bit (support.hpp, s8_score), with scales of 1 unless a case gives its own.
struct AnyKernel {
  std::string name;
  attnscore_level level;
  std::size_t mr, nr, nr_dec;
  bool acc16 = false;
  const KernelF32 *f32 = nullptr;
#if ATTNSCORE_HAVE_F16
  const attnscore::KernelF16 *f16 = nullptr;  // a binary16 row, or a bfloat16 one (bf16)
#endif
  bool bf16 = false;
#if ATTNSCORE_HAVE_S8
  const attnscore::KernelS8 *s8 = nullptr;
#endif

  attnscore_dtype dtype() const {
    if (is_s8()) return ATTNSCORE_DTYPE_S8;
    if (f32 != nullptr) return ATTNSCORE_DTYPE_F32;
    return bf16 ? ATTNSCORE_DTYPE_BF16 : ATTNSCORE_DTYPE_F16;
  }

  // The elements of a rows x cols matrix m (row stride ld) in this dtype, at the same strides,
  // as bytes (for a cache append and the attention call's Q).
  std::vector<unsigned char> in_dtype(std::size_t rows, std::size_t cols, const float *m,
                                      std::size_t ld) const {
    const std::size_t e = dtype() == ATTNSCORE_DTYPE_F32 ? 4 : is_s8() ? 1 : 2;
    std::vector<unsigned char> b(((rows - 1) * ld + cols) * e + 16, 0xa5);
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j) {
        unsigned char *at = b.data() + (i * ld + j) * e;
        const float x = m[i * ld + j];
        if (e == 4) {
          std::memcpy(at, &x, 4);
        } else if (e == 2) {
          const std::uint16_t h = nearest16(x);
          std::memcpy(at, &h, 2);
        } else {
          *at = static_cast<unsigned char>(static_cast<std::int8_t>(x));
        }
      }
    return b;
  }

  // A bf16 dot-product row: held to the f32 contract's bound (its sums are in another order),
  // and exact on the exact integer data like every kernel.
  bool dot() const {
#if ATTNSCORE_HAVE_F16
    return f16 != nullptr && f16->dot != nullptr;
#else
    return false;
#endif
  }

  // The summation order of this kernel's raw-K decode (docs/contract.md, "Summation order"):
  // f32, f16 and bf16 kernels above scalar sum lane l of W over t = l, l + W, ... (fused where
  // the level has FMA) and then the lanes in a fixed tree; 0 where the decode sums in the
  // prefill order (scalar, int8, f16 accumulation, the bf16 dot product). Written here from the
  // contract, not read from the library.
  std::size_t decode_lanes() const {
    if (is_s8() || acc16 || dot()) return 0;
    switch (level) {
      case ATTNSCORE_LEVEL_SSE2:
      case ATTNSCORE_LEVEL_NEON:
        return 4;
      case ATTNSCORE_LEVEL_AVX2:
        return 8;
      case ATTNSCORE_LEVEL_AVX512:
        return 16;
      default:
        return 0;
    }
  }
  bool decode_fused() const { return level != ATTNSCORE_LEVEL_SSE2; }

  bool is_s8() const {
#if ATTNSCORE_HAVE_S8
    return s8 != nullptr;
#else
    return false;
#endif
  }

  // q_scale / k_scale (int8 only): one per row / key when given, else a single 1.
  void run(std::size_t n_q, std::size_t n_k, std::size_t d, const float *q, std::size_t ldq,
           const float *k, std::size_t ldk, float *s, std::size_t lds, float scale,
           const float *q_scale = nullptr, const float *k_scale = nullptr) const {
#if ATTNSCORE_HAVE_S8
    if (s8 != nullptr) {
      const float one = 1.0f;
      const std::vector<std::int8_t> qb = bytes(n_q, d, q, ldq), kb = bytes(n_k, d, k, ldk);
      attnscore::run_s8(*s8, n_q, n_k, d, qb.data() + pad(ldq), ldq, q_scale ? q_scale : &one,
                        q_scale ? 1 : 0, kb.data() + pad(ldk), ldk, k_scale ? k_scale : &one,
                        k_scale ? 1 : 0, s, lds, scale);
      return;
    }
#endif
    (void)q_scale, (void)k_scale;
#if ATTNSCORE_HAVE_F16
    if (f16 != nullptr) {
      const std::vector<std::uint16_t> qh = halves(n_q, d, q, ldq), kh = halves(n_k, d, k, ldk);
      (bf16 ? attnscore::run_bf16 : attnscore::run_f16)(*f16, n_q, n_k, d, qh.data() + 1, ldq,
                                                        kh.data() + 1, ldk, s, lds, scale);
      return;
    }
#endif
    attnscore::run_f32(*f32, n_q, n_k, d, q, ldq, k, ldk, s, lds, scale);
  }

  // Rows the decode tile takes (the attention call's g-row tile; int8: the one-row decode
  // kernel, 0 without one), and one call of it: `rows` x `cols` <= nr_dec scores from raw Q and K.
  std::size_t dec_rows() const {
#if ATTNSCORE_HAVE_S8
    if (s8 != nullptr) return s8->decode != nullptr ? 1 : 0;
#endif
#if ATTNSCORE_HAVE_F16
    if (f16 != nullptr) return f16->dec_rows;
#endif
    return f32->dec_rows;
  }
  void dec(std::size_t rows, std::size_t cols, std::size_t d, const float *q, std::size_t ldq,
           const float *k, std::size_t ldk, float *s, std::size_t lds, float scale) const {
#if ATTNSCORE_HAVE_S8
    if (s8 != nullptr) {  // one row (dec_rows)
      const float one = 1.0f;
      const std::vector<std::int8_t> qb = bytes(rows, d, q, ldq), kb = bytes(cols, d, k, ldk);
      s8->decode(cols, d, qb.data() + pad(ldq), kb.data() + pad(ldk), ldk, scale, &one, 0, s);
      return;
    }
#endif
#if ATTNSCORE_HAVE_F16
    if (f16 != nullptr) {
      const std::vector<std::uint16_t> qh = halves(rows, d, q, ldq), kh = halves(cols, d, k, ldk);
      f16->dec(rows, cols, d, qh.data() + 1, ldq, kh.data() + 1, ldk, s, lds, scale);
      return;
    }
#endif
    f32->dec(rows, cols, d, q, ldq, k, ldk, s, lds, scale);
  }

  // Rounds the matrix of `b` (values in [-1, 1]) to values this dtype holds (nothing to do for
  // f32; int8: to the integers of [-127, 127], as a quantizer of scale 1/127 would).
  void round_to_dtype(Buffer &b) const {
    for (std::size_t i = 0; i < b.rows; ++i)
      for (std::size_t j = 0; j < b.cols; ++j) {
        float &x = b.at(i, j);
        if (is_s8()) x = std::nearbyint(x * 127.0f);
#if ATTNSCORE_HAVE_F16
        if (f16 != nullptr) x = static_cast<float>(value16(nearest16(x)));
#endif
      }
  }

  // Uniform reals in [-1, 1] for Q and K (in that order from rng), rounded to this dtype.
  void fill_random(Buffer &q, Buffer &k, std::mt19937 &rng) const {
    testing::fill_uniform(q, rng);
    testing::fill_uniform(k, rng);
    round_to_dtype(q);
    round_to_dtype(k);
  }

  // Exact integer data: small integers (sums exact in any order), or for int8 the full range,
  // and in every seventh case (variant) only its extremes -128 and 127.
  void fill_exact(Buffer &b, std::mt19937 &rng, unsigned variant) const {
    if (!is_s8()) return testing::fill_ints(b, 4, rng);
    std::uniform_int_distribution<int> full(-128, 127), coin(0, 1);
    for (std::size_t i = 0; i < b.rows; ++i)
      for (std::size_t j = 0; j < b.cols; ++j)
        b.at(i, j) = static_cast<float>(variant % 7 != 0 ? full(rng) : coin(rng) ? -128 : 127);
  }

  // S checked against the reference of Q and K: the dtype's contract (see above); `exact`
  // (f32, f16): bit-identical to fl(R), else within the contract's bound.
  std::string check(const Buffer &s, const Buffer &q, const Buffer &k, std::size_t d, float scale,
                    bool exact, const float *q_scale = nullptr,
                    const float *k_scale = nullptr) const {
    if (is_s8()) {
      const float one = 1.0f;
      return testing::check_scores_s8(s, q, k, d, q_scale ? q_scale : &one, q_scale ? 1 : 0,
                                      k_scale ? k_scale : &one, k_scale ? 1 : 0, scale);
    }
    const testing::Reference ref = testing::reference(q, k, d, scale);
    if (acc16) return testing::check_scores_f16acc(s, ref, d, scale);
    return testing::check_scores(s, ref, d, scale, exact);
  }

 private:
  // The int8 copy's misaligned start, varying with the stride (bytes have no alignment to miss,
  // but the kernels' vector loads cross lines differently).
  static std::size_t pad(std::size_t ld) { return 1 + ld % 7; }
  static std::vector<std::int8_t> bytes(std::size_t rows, std::size_t cols, const float *m,
                                        std::size_t ld) {
    std::vector<std::int8_t> b(pad(ld) + (rows - 1) * ld + cols + 1, std::int8_t{-77});
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j)
        b[pad(ld) + i * ld + j] = static_cast<std::int8_t>(m[i * ld + j]);
    return b;
  }
  // The 16-bit format's nearest value and the value of its bits (the tests' oracle).
  std::uint16_t nearest16(double x) const {
    return bf16 ? testing::bf16_nearest(x) : testing::f16_nearest(x);
  }
  double value16(std::uint16_t h) const {
    return bf16 ? testing::bf16_value(h) : testing::f16_value(h);
  }
  std::vector<std::uint16_t> halves(std::size_t rows, std::size_t cols, const float *m,
                                    std::size_t ld) const {
    std::vector<std::uint16_t> h(1 + (rows - 1) * ld + cols + 1, bf16 ? 0x7fc0 : 0x7e00);
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j) h[1 + i * ld + j] = nearest16(m[i * ld + j]);
    return h;
  }
};

// One score in the decode order (see decode_lanes) in float arithmetic: lane l of W sums
// q_t * k_t over t = l, l + W, ... from +0, zero-padded to whole vectors; then
// x[l] += x[l + h] for h = W/2, ..., 1; the scale last.
float decode_order(const float *q, const float *k, std::size_t d, float scale, std::size_t w,
                   bool fused) {
  float x[16];
  const std::size_t padded = (d + w - 1) / w * w;
  for (std::size_t l = 0; l < w; ++l) {
    float acc = 0.0f;
    for (std::size_t t = l; t < padded; t += w) {
      const float a = t < d ? q[t] : 0.0f, b = t < d ? k[t] : 0.0f;
      acc = fused ? std::fma(a, b, acc) : acc + a * b;
    }
    x[l] = acc;
  }
  for (std::size_t h = w / 2; h >= 1; h /= 2)
    for (std::size_t l = 0; l < h; ++l) x[l] = x[l] + x[l + h];
  return x[0] * scale;
}

// Every usable kernel of every dtype, f32 first, then f16, bf16 and int8: each table's kernels this
// CPU runs (the others reported by testing::usable_kernels_*).
std::vector<AnyKernel> usable_all() {
  std::vector<AnyKernel> all;
  for (const KernelF32 *k : testing::usable_kernels_f32()) {
    AnyKernel a{k->name, k->level, k->mr, k->nr, k->nr_dec};
    a.f32 = k;
    all.push_back(a);
  }
#if ATTNSCORE_HAVE_F16
  for (const attnscore::KernelF16 *k : testing::usable_kernels_f16()) {
    AnyKernel a = k->acc != nullptr
                      ? AnyKernel{k->name, k->level, k->acc_mr, k->acc_nr, k->nr_dec, true}
                      : AnyKernel{k->name, k->level, k->f32->mr, k->f32->nr, k->nr_dec};
    a.f16 = k;
    all.push_back(a);
  }
  for (const attnscore::KernelF16 *k : testing::usable_kernels_bf16()) {
    AnyKernel a = k->dot != nullptr
                      ? AnyKernel{k->name, k->level, k->dot_mr, k->dot_nr,
                                  k->dec != nullptr ? k->nr_dec : k->dot_nr}
                      : AnyKernel{k->name, k->level, k->f32->mr, k->f32->nr, k->nr_dec};
    a.f16 = k, a.bf16 = true;
    all.push_back(a);
  }
#endif
#if ATTNSCORE_HAVE_S8
  for (const attnscore::KernelS8 *k : testing::usable_kernels_s8()) {
    AnyKernel a{k->name, k->level, k->mr, k->nr, k->nr};  // decode: one row, any cols
    a.s8 = k;
    all.push_back(a);
  }
#endif
  return all;
}

// One call shape; the layout variant rotates through dense, padded (prime) strides and
// misaligned base pointers so that every kernel sees all of them across the sweep.
struct Shape {
  std::size_t n_q, n_k, d, ldq, ldk, lds, q_off, k_off, s_off;
};

Shape make_shape(std::size_t n_q, std::size_t n_k, std::size_t d, unsigned variant) {
  switch (variant % 4) {
    case 0:
      return {n_q, n_k, d, d, d, n_k, 0, 0, 0};
    case 1:
      return {n_q, n_k, d, d + 7, d + 3, n_k + 5, 1, 3, 2};
    case 2:
      return {n_q, n_k, d, d + 1, d + 13, n_k + 1, 5, 1, 7};
    default:
      return {n_q, n_k, d, d + 11, d, n_k + 3, 3, 2, 1};
  }
}

// Runs `kernel` through the blocking driver on `sh`; returns "" or the first failure. An int8
// kernel gets per-row and per-key scales in every other case (variant), one each otherwise.
std::string run_case(const AnyKernel &kernel, const Shape &sh, bool exact, float scale,
                     std::mt19937 &rng, unsigned variant = 1) {
  Buffer q(sh.n_q, sh.d, sh.ldq, sh.q_off, kNaN), k(sh.n_k, sh.d, sh.ldk, sh.k_off, kNaN);
  Buffer s(sh.n_q, sh.n_k, sh.lds, sh.s_off, testing::from_bits(testing::kGuardBits));
  if (exact) {
    kernel.fill_exact(q, rng, variant);
    kernel.fill_exact(k, rng, variant);
  } else {
    kernel.fill_random(q, k, rng);
  }
  std::vector<float> qs, ks;  // int8: per-row and per-key scales
  if (kernel.is_s8() && variant % 2 == 0) {
    std::uniform_real_distribution<float> sd(0.001f, 0.1f);
    for (std::size_t i = 0; i < sh.n_q; ++i) qs.push_back(sd(rng));
    for (std::size_t j = 0; j < sh.n_k; ++j) ks.push_back(sd(rng));
  }
  const float *qsp = qs.empty() ? nullptr : qs.data(), *ksp = ks.empty() ? nullptr : ks.data();
  for (std::size_t i = 0; i < sh.n_q; ++i)
    for (std::size_t j = 0; j < sh.n_k; ++j) s.at(i, j) = kNaN;
  const std::vector<float> q_before = q.mem, k_before = k.mem;
  kernel.run(sh.n_q, sh.n_k, sh.d, q.data(), sh.ldq, k.data(), sh.ldk, s.data(), sh.lds, scale, qsp,
             ksp);
  if (std::memcmp(q_before.data(), q.mem.data(), q.mem.size() * sizeof(float)) != 0 ||
      std::memcmp(k_before.data(), k.mem.data(), k.mem.size() * sizeof(float)) != 0)
    return "an input was modified";
  return kernel.check(s, q, k, sh.d, scale, exact, qsp, ksp);
}

// n_k over 1 ... NR + 1, then past two and to three panels, of both the prefill and the decode
// tile.
std::vector<std::size_t> n_k_sweep(const AnyKernel &kernel) {
  std::vector<std::size_t> ns;
  for (std::size_t n = 1; n <= kernel.nr + 1; ++n) ns.push_back(n);
  for (std::size_t nr : {kernel.nr, kernel.nr_dec})
    for (std::size_t n : {nr - 1, nr + 1, 2 * nr - 1, 2 * nr + 1, 3 * nr})
      if (n > kernel.nr + 1 && std::find(ns.begin(), ns.end(), n) == ns.end()) ns.push_back(n);
  return ns;
}

// int8 also around its chunks of d (kS8Chunk).
std::vector<std::size_t> sweep_d(const AnyKernel &kernel) {
  std::vector<std::size_t> ds;
  for (std::size_t d = 1; d <= 33; ++d) ds.push_back(d);
  for (std::size_t d : {63, 64, 65, 80, 96, 127, 128, 256, 1000}) ds.push_back(d);
  if (kernel.is_s8())
    for (std::size_t d : {511, 512, 513, 1025}) ds.push_back(d);
  return ds;
}

}  // namespace

TEST_CASE("every kernel: exact integer data, full sweep, bit for bit",
          "[kernels][f16][f32][s8][sweep]") {
  const AnyKernel kernel_row = GENERATE(from_range(usable_all()));
  const AnyKernel *kernel = &kernel_row;
  CAPTURE(kernel->name);
  std::mt19937 rng(1234);
  unsigned variant = 0, cases = 0;
  for (std::size_t d : sweep_d(*kernel)) {
    for (std::size_t n_q : testing::row_counts(kernel->mr)) {
      // int8's long d: fewer row counts, the same edges.
      if (kernel->is_s8() && d > 256 && n_q % 3 != 1) continue;
      for (std::size_t n_k : n_k_sweep(*kernel)) {
        const Shape sh = make_shape(n_q, n_k, d, variant++);
        // Mostly the default scale; every fifth case a negative one with a full mantissa.
        const float scale = variant % 5 ? attnscore_default_scale(d) : -0.3f;
        const std::string err = run_case(*kernel, sh, true, scale, rng, variant);
        if (!err.empty()) {
          CAPTURE(n_q, n_k, d, sh.ldq, sh.ldk, sh.lds, sh.q_off, sh.k_off, sh.s_off, scale);
          FAIL(err);
        }
        ++cases;
      }
    }
  }
#if ATTNSCORE_HAVE_S8
  // int8: around the driver's blocks of packed K (as many NR-key panels of a chunk of d as
  // kS8BlockBytes holds, at most kS8BlockKeys keys): one key short of a block, one past, and
  // two and a half blocks, so that tiles run across several panels of a block and several blocks.
  if (kernel->is_s8())
    for (std::size_t d : {64, 100, 513}) {
      const std::size_t dc = std::min(d, attnscore::kS8Chunk), kg = kernel->s8->kg,
                        panel = kernel->nr * ((dc + kg - 1) / kg * kg);
      const std::size_t keys =
          std::min(attnscore::kS8BlockBytes / panel, attnscore::kS8BlockKeys / kernel->nr) *
          kernel->nr;
      for (std::size_t n_q : {std::size_t{1}, kernel->mr + 1})
        for (std::size_t n_k : {keys - 1, keys + 1, 2 * keys + kernel->nr / 2}) {
          const Shape sh = make_shape(n_q, n_k, d, variant++);
          const std::string err =
              run_case(*kernel, sh, true, attnscore_default_scale(d), rng, variant);
          if (!err.empty()) {
            CAPTURE(n_q, n_k, d, keys, sh.ldq, sh.ldk, sh.lds);
            FAIL(err);
          }
          ++cases;
        }
    }
#endif
  CHECK(cases > 0);
}

TEST_CASE("every kernel: random data within the contract's bound", "[kernels][f16][f32][s8]") {
  const AnyKernel kernel_row = GENERATE(from_range(usable_all()));
  const AnyKernel *kernel = &kernel_row;
  CAPTURE(kernel->name);
  std::mt19937 rng(99);
  unsigned variant = 0;
  for (std::size_t d : {1, 3, 8, 15, 16, 17, 33, 64, 80, 128, 256, 1000, 4099}) {
    for (std::size_t n_q : {std::size_t{1}, kernel->mr, 2 * kernel->mr + 1}) {
      for (std::size_t n_k : {std::size_t{1}, kernel->nr + 1, kernel->nr_dec + 3}) {
        const Shape sh = make_shape(n_q, n_k, d, variant++);
        const std::string err =
            run_case(*kernel, sh, false, attnscore_default_scale(d), rng, variant);
        if (!err.empty()) {
          CAPTURE(n_q, n_k, d, variant);
          FAIL(err);
        }
      }
    }
  }
}

TEST_CASE("every kernel: any block of S gives the same bits as the whole call",
          "[kernels][f16][f32][s8][determinism]") {
  const AnyKernel kernel_row = GENERATE(from_range(usable_all()));
  const AnyKernel *kernel = &kernel_row;
  CAPTURE(kernel->name);
  std::mt19937 rng(7);
  const std::size_t n_q = 3 * kernel->mr + 2, n_k = 3 * kernel->nr + 3, d = 77;
  Buffer q(n_q, d, d, 0, kNaN), k(n_k, d, d + 2, 0, kNaN);
  kernel->fill_random(q, k, rng);
  std::vector<float> whole(n_q * n_k), again(n_q * n_k);
  kernel->run(n_q, n_k, d, q.data(), q.ld, k.data(), k.ld, whole.data(), n_k, 0.1f);
  kernel->run(n_q, n_k, d, q.data(), q.ld, k.data(), k.ld, again.data(), n_k, 0.1f);
  REQUIRE(std::memcmp(whole.data(), again.data(), whole.size() * sizeof(float)) == 0);
  // Blocks that start and end off the register-tile grid. A block of at most kDecodeRows rows
  // takes the decode path, whose order may differ from the whole call's (decode_lanes): it is
  // held to the decode call of its rows over every key instead.
  for (std::size_t i0 = 0; i0 < n_q; i0 += 1 + i0 % 3) {
    for (std::size_t j0 = 0; j0 < n_k; j0 += 1 + j0 % 5) {
      const std::size_t bq = 1 + (i0 * 7 + j0) % (n_q - i0), bk = 1 + (j0 * 5 + i0) % (n_k - j0);
      std::vector<float> part(bq * bk);
      kernel->run(bq, bk, d, q.data() + i0 * q.ld, q.ld, k.data() + j0 * k.ld, k.ld, part.data(),
                  bk, 0.1f);
      const bool own_path = bq <= attnscore::kDecodeRows && kernel->decode_lanes() != 0;
      std::vector<float> rows_all;
      if (own_path) {
        rows_all.resize(bq * n_k);
        kernel->run(bq, n_k, d, q.data() + i0 * q.ld, q.ld, k.data(), k.ld, rows_all.data(), n_k,
                    0.1f);
      }
      for (std::size_t i = 0; i < bq; ++i)
        for (std::size_t j = 0; j < bk; ++j) {
          const float want = own_path ? rows_all[i * n_k + j0 + j] : whole[(i0 + i) * n_k + j0 + j];
          if (testing::to_bits(part[i * bk + j]) != testing::to_bits(want)) {
            CAPTURE(i0, j0, bq, bk, i, j, own_path);
            FAIL("block result differs from the whole call");
          }
        }
    }
  }
}

TEST_CASE("every kernel: an S past the caches gives the bits of its row blocks",
          "[kernels][f16][f32][s8][determinism]") {
  // A call whose S reaches kStoreNTBytes stores whole 64-byte aligned tile rows non-temporally
  // (at avx2 and avx512); blocks of 64 rows stay below it and store through the caches. Both must
  // give the same bits, with S aligned (streamed) and one float off it (plain stores).
  const AnyKernel kernel_row = GENERATE(from_range(usable_all()));
  const AnyKernel *kernel = &kernel_row;
  CAPTURE(kernel->name);
  std::mt19937 rng(11);
  constexpr std::size_t n_k = 1027, lds = 1040, d = 3, rb = 64;
  const std::size_t n_q = attnscore::kStoreNTBytes / sizeof(float) / n_k + 1;
  REQUIRE(n_q % rb > attnscore::kDecodeRows);  // every block takes the prefill path
  Buffer q(n_q, d, d, 0, kNaN), k(n_k, d, d, 0, kNaN);
  kernel->fill_random(q, k, rng);
  std::vector<float> mem(n_q * lds + 32), block(rb * n_k);
  const std::size_t a = (64 - reinterpret_cast<std::uintptr_t>(mem.data()) % 64) % 64 / 4;
  for (const std::size_t off : {a, a + 1}) {
    CAPTURE(off - a);
    float *s = mem.data() + off;
    kernel->run(n_q, n_k, d, q.data(), q.ld, k.data(), k.ld, s, lds, 0.1f);
    for (std::size_t i0 = 0; i0 < n_q; i0 += rb) {
      const std::size_t rows = std::min(rb, n_q - i0);
      kernel->run(rows, n_k, d, q.data() + i0 * q.ld, q.ld, k.data(), k.ld, block.data(), n_k,
                  0.1f);
      for (std::size_t i = 0; i < rows; ++i)
        if (std::memcmp(s + (i0 + i) * lds, block.data() + i * n_k, n_k * sizeof(float)) != 0) {
          CAPTURE(i0 + i);
          FAIL("the whole call differs from its block of rows");
        }
    }
  }
}

TEST_CASE("every kernel: the decode tile at every row count gives its documented order's bits",
          "[kernels][f16][f32][s8][determinism]") {
  // The attention call's decode puts up to dec_rows query heads in the decode tile's rows; the
  // scores call gives it at most kDecodeRows. Every row count against the decode order written
  // in the contract (decode_order), or where that is the prefill order, against the prefill
  // kernel (the driver with at least kDecodeRows + 1 rows); on exact integer data (also checked
  // against the exact sum) and on random data.
  const AnyKernel kernel_row = GENERATE(from_range(usable_all()));
  const AnyKernel *kernel = &kernel_row;
  CAPTURE(kernel->name);
  // An f16-accumulating row, and a bf16 dot-product row without a decode kernel, have no decode
  // tile (their own kernel).
  if (kernel->acc16 || (kernel->dot() && kernel->dec_rows() == 0)) return;
  // An int8 kernel's decode kernel takes one row (d up to a chunk); some kernels have none.
  if (kernel->is_s8() && kernel->dec_rows() == 0) return;
  if (!kernel->is_s8()) {
    REQUIRE(kernel->dec_rows() >= attnscore::kDecodeRows);
    REQUIRE(kernel->dec_rows() <= attnscore::kMaxDecodeRows);
  }
  std::mt19937 rng(2718);
  const std::size_t nr = kernel->nr_dec;
  unsigned variant = 0;
  for (std::size_t rows = 1; rows <= kernel->dec_rows(); ++rows)
    for (std::size_t d : {1, 3, 4, 8, 15, 16, 17, 33, 64, 100, 128, 512})
      for (std::size_t cols : {std::size_t{1}, nr / 2 - 1, nr / 2, nr / 2 + 1, nr - 1, nr}) {
        if (cols == 0) continue;
        const bool exact = variant % 2 == 0;
        const Shape sh = make_shape(rows, cols, d, variant++);
        // Q with the prefill driver's rows: the tile's rows then copies of the first.
        const std::size_t n_pre = rows > attnscore::kDecodeRows ? rows : attnscore::kDecodeRows + 1;
        Buffer q(n_pre, d, sh.ldq, sh.q_off, kNaN), k(cols, d, sh.ldk, sh.k_off, kNaN);
        if (exact) {
          kernel->fill_exact(q, rng, variant);
          kernel->fill_exact(k, rng, variant);
        } else {
          kernel->fill_random(q, k, rng);
        }
        const float scale = variant % 3 ? attnscore_default_scale(d) : -0.3f;
        Buffer s(rows, cols, sh.lds, sh.s_off, testing::from_bits(testing::kGuardBits));
        for (std::size_t i = 0; i < rows; ++i)
          for (std::size_t j = 0; j < cols; ++j) s.at(i, j) = kNaN;
        kernel->dec(rows, cols, d, q.data(), sh.ldq, k.data(), sh.ldk, s.data(), sh.lds, scale);
        std::vector<float> pre(n_pre * cols, kNaN);
        kernel->run(n_pre, cols, d, q.data(), sh.ldq, k.data(), sh.ldk, pre.data(), cols, scale);
        CAPTURE(rows, cols, d, sh.ldq, sh.ldk, sh.lds, scale, exact);
        Buffer q_rows(rows, d, sh.ldq, sh.q_off, kNaN);
        q_rows.mem.assign(q.mem.begin(), q.mem.begin() + q_rows.mem.size());
        const std::string err = kernel->check(s, q_rows, k, d, scale, exact);
        if (!err.empty()) FAIL(err);
        const std::size_t w = kernel->decode_lanes();
        for (std::size_t i = 0; i < rows; ++i)
          for (std::size_t j = 0; j < cols; ++j) {
            const float want = w == 0 ? pre[i * cols + j]
                                      : decode_order(&q.at(i, 0), &k.at(j, 0), d, scale, w,
                                                     kernel->decode_fused());
            if (testing::to_bits(s.at(i, j)) != testing::to_bits(want)) {
              CAPTURE(i, j, s.at(i, j), want, w);
              FAIL((w == 0 ? "decode tile differs from the prefill kernel"
                           : "decode tile differs from its documented order"));
            }
          }
      }
}

TEST_CASE("every kernel: NaN and Inf propagate", "[kernels][f16][f32][ieee]") {
  const AnyKernel kernel_row = GENERATE(from_range(usable_all()));
  const AnyKernel *kernel = &kernel_row;
  CAPTURE(kernel->name);
  if (kernel->is_s8()) return;  // int8 holds no NaN or Inf
  const float inf = std::numeric_limits<float>::infinity();
  for (std::size_t d : {1, 5, 16, 37, 128}) {
    const std::size_t n_q = kernel->mr + 1, n_k = kernel->nr + 1;
    std::vector<float> q(n_q * d, 1.0f), k(n_k * d, 0.5f), s(n_q * n_k);
    q[0 * d + d - 1] = kNaN;  // row 0: NaN in its last element (the tail, for most d)
    k[1 * d + d / 2] = inf;   // key 1: +Inf, times positive q gives +Inf
    kernel->run(n_q, n_k, d, q.data(), d, k.data(), d, s.data(), n_k, 1.0f);
    CAPTURE(d);
    for (std::size_t j = 0; j < n_k; ++j) CHECK(std::isnan(s[j]));
    for (std::size_t i = 1; i < n_q; ++i) {
      CHECK(s[i * n_k + 1] == inf);
      CHECK(s[i * n_k + 0] == static_cast<float>(0.5 * d));
    }
  }
}

TEST_CASE("every kernel: the key cache of its dtype gives the same bits as the raw call",
          "[kernels][f16][f32][s8][kcache][sweep]") {
  // The cap at the kernel's level makes it the one a cache binds at init; the cache holds two KV
  // heads appended together in uneven pieces, and attention from it (GQA groups of 1 and 3
  // query heads, decode and prefill row counts) must give each head the raw driver's bits.
  const AnyKernel kernel_row = GENERATE(from_range(usable_all()));
  const AnyKernel *kernel = &kernel_row;
  CAPTURE(kernel->name);
  // f16-accumulating and bf16 dot-product rows never read a cache (the default path there).
  if (kernel->acc16 || kernel->dot()) return;
  testing::CapGuard guard;
  REQUIRE(attnscore_set_max_level(kernel->level) == ATTNSCORE_OK);
  const attnscore_dtype dtype = kernel->dtype();
  REQUIRE(std::string(attnscore_kernel_name(dtype)) == kernel->name);
  const bool s8 = kernel->is_s8();
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> sd(0.001f, 0.1f);
  const std::size_t nr = kernel->nr, mr = kernel->mr, hkv = 2;
  for (std::size_t d : {1, 5, 16, 17, 64, 100, 128, 300, 513, 2100}) {
    for (std::size_t n_k : {std::size_t{1}, nr - 1, nr + 1, 4 * nr + 3, 9 * nr}) {
      if (n_k == 0 || (d > 300 && n_k > nr + 1)) continue;
      // K: both heads in one buffer, head-major (head stride n_k rows), padded rows.
      const std::size_t ldk = d + 3;
      Buffer k(hkv * n_k, d, ldk, 0, kNaN);
      if (s8) {
        kernel->fill_exact(k, rng, static_cast<unsigned>(d + n_k));
      } else {
        testing::fill_uniform(k, rng);
        kernel->round_to_dtype(k);
      }
      std::vector<float> ks(hkv * n_k);  // int8: one scale per key
      for (float &x : ks) x = sd(rng);
      const std::vector<unsigned char> kd = kernel->in_dtype(hkv * n_k, d, k.data(), ldk);
      const attnscore_cache_shape shape{ATTNSCORE_CACHE_KEYS, dtype, hkv, n_k, d};
      const std::size_t bytes = attnscore_cache_bytes(&shape);
      REQUIRE(bytes > 0);
      // An odd address: the cache aligns itself inside the caller's memory.
      std::vector<unsigned char> mem(bytes + 3);
      attnscore_cache *cache = nullptr;
      REQUIRE(attnscore_cache_init(mem.data() + 3, bytes, &shape, &cache) == ATTNSCORE_OK);
      const std::size_t esz = dtype == ATTNSCORE_DTYPE_F32 ? 4 : s8 ? 1 : 2;
      // Appends keys [from, to) of both heads in uneven pieces, as tokens arrive.
      const auto append = [&](std::size_t from, std::size_t to, std::size_t step) {
        for (std::size_t done = from; done < to; done += step, step = step * 3 % 7 + 1) {
          step = step < to - done ? step : to - done;
          attnscore_tensor src;
          std::memset(&src, 0, sizeof src);
          src.data = kd.data() + done * ldk * esz, src.dtype = dtype;
          src.head_stride = n_k * ldk, src.row_stride = ldk;
          src.scale = ks.data() + done, src.scale_head_stride = n_k, src.scale_row_stride = 1;
          REQUIRE(attnscore_cache_append(cache, step, &src) == ATTNSCORE_OK);
        }
        REQUIRE(attnscore_cache_size(cache) == to);
      };
      append(0, n_k, 1);
      // Attention from the cache against the raw driver on each head: "" or the first failure.
      const auto compare = [&](std::size_t n_q, std::size_t g) -> std::string {
        const std::size_t hq = hkv * g;
        Buffer q(hq * n_q, d, d, 0, kNaN);  // head-major, dense
        if (s8) {
          kernel->fill_exact(q, rng, static_cast<unsigned>(n_q));
        } else {
          testing::fill_uniform(q, rng);
          kernel->round_to_dtype(q);
        }
        std::vector<float> qs(hq * n_q);
        for (float &x : qs) x = sd(rng);
        const std::vector<unsigned char> qd = kernel->in_dtype(hq * n_q, d, q.data(), d);
        attnscore_attention_desc a = attnscore_attention_dense(dtype, hq, hkv, n_q, n_k, d);
        a.q.data = qd.data();
        if (s8) a.q.scale = qs.data();  // dense: one per row, head stride n_q
        a.k_cache = cache;
        std::vector<float> cached(hq * n_q * n_k + 5, kNaN);
        a.s.data = cached.data();
        if (attnscore_attention(&a, nullptr) != ATTNSCORE_OK) return "attention status";
        const float scale = attnscore_default_scale(d);
        // The cache sums in the prefill order at every row count (its decode reads packed
        // panels): the raw call with more than kDecodeRows rows, Q's then copies of its last.
        const std::size_t n_pre = s8 ? n_q : std::max(n_q, attnscore::kDecodeRows + 1);
        for (std::size_t h = 0; h < hq; ++h) {
          std::vector<float> raw(n_pre * n_k), qpad(n_pre * d);
          for (std::size_t i = 0; i < n_pre; ++i)
            std::memcpy(&qpad[i * d], q.data() + (h * n_q + std::min(i, n_q - 1)) * d,
                        d * sizeof(float));
          const std::size_t hk = h / g;
          kernel->run(n_pre, n_k, d, qpad.data(), d, k.data() + hk * n_k * ldk, ldk, raw.data(),
                      n_k, scale, s8 ? qs.data() + h * n_q : nullptr,
                      s8 ? ks.data() + hk * n_k : nullptr);
          if (std::memcmp(raw.data(), cached.data() + h * n_q * n_k, n_q * n_k * sizeof(float)) !=
              0)
            return "head " + std::to_string(h) + " differs from the raw call";
        }
        for (std::size_t i = hq * n_q * n_k; i < cached.size(); ++i)
          if (!std::isnan(cached[i])) return "wrote past S";
        return "";
      };
      for (std::size_t n_q : {std::size_t{1}, std::size_t{2}, std::size_t{3}, mr, 2 * mr + 1})
        for (std::size_t g : {1, 3}) {
          CAPTURE(d, n_k, n_q, g);
          const std::string err = compare(n_q, g);
          if (!err.empty()) FAIL(err);
        }
      // Truncated inside a panel and appended again: the same bits.
      const std::size_t keep = n_k / 2;
      REQUIRE(attnscore_cache_truncate(cache, keep) == ATTNSCORE_OK);
      append(keep, n_k, 2);
      for (std::size_t n_q : {std::size_t{1}, mr + 1}) {
        CAPTURE(d, n_k, n_q, keep);
        const std::string err = compare(n_q, 1);
        if (!err.empty()) FAIL(err);
      }
      REQUIRE(attnscore_cache_truncate(cache, 0) == ATTNSCORE_OK);
      REQUIRE(attnscore_cache_size(cache) == 0);
    }
  }
}

#if ATTNSCORE_HAVE_S8
std::vector<AnyKernel> usable_s8() {
  std::vector<AnyKernel> s8;
  for (const AnyKernel &k : usable_all())
    if (k.is_s8()) s8.push_back(k);
  return s8;
}

TEST_CASE("every s8 kernel: -128 and 127 extremes over d up to the limit", "[kernels][s8]") {
  const AnyKernel kernel_row = GENERATE(from_range(usable_s8()));
  const AnyKernel *kernel = &kernel_row;
  CAPTURE(kernel->name);
  const std::size_t d = ATTNSCORE_S8_MAX_D, n_q = kernel->mr + 1, n_k = kernel->nr + 1;
  // Rows of -128 and 127 (and one mixed row) against keys of both: sums up to 128^2 * d, the
  // largest an int32 holds; the biased forms (VNNI's Q + 128) pass 2^31 on the way.
  Buffer q(n_q, d, d, 0, kNaN), k(n_k, d, d + 1, 1, kNaN);
  for (std::size_t i = 0; i < n_q; ++i)
    for (std::size_t t = 0; t < d; ++t)
      q.at(i, t) = i % 3 == 0 ? -128.0f : i % 3 == 1 ? 127.0f : (t % 2 ? 127.0f : -128.0f);
  for (std::size_t j = 0; j < n_k; ++j)
    for (std::size_t t = 0; t < d; ++t) k.at(j, t) = j % 2 == 0 ? -128.0f : 127.0f;
  Buffer s(n_q, n_k, n_k, 0, testing::from_bits(testing::kGuardBits));
  for (std::size_t i = 0; i < n_q; ++i)
    for (std::size_t j = 0; j < n_k; ++j) s.at(i, j) = kNaN;
  kernel->run(n_q, n_k, d, q.data(), q.ld, k.data(), k.ld, s.data(), s.ld, 1.0f);
  const std::string err = kernel->check(s, q, k, d, 1.0f, true);
  if (!err.empty()) FAIL(err);
  // The largest sum itself, 128^2 * 131071 = 2147467264 (rounded to float once).
  CHECK(s.at(0, 0) == static_cast<float>(2147467264));
}
#endif
