// SPDX-License-Identifier: Apache-2.0
// The driver's entry points at one kernel row (arguments checked, scale resolved): each binds the
// row and its raw K to an engine (engines.hpp) and runs the one loop (driver.hpp). The public
// calls, the parallel calls and the kernel tests all come through here.
#include "core/engines.hpp"
#include "dispatch/kernels.h"

namespace attnscore {

void run_f32(const KernelF32 &kernel, std::size_t n_q, std::size_t n_k, std::size_t d,
             const float *q, std::size_t ldq, const float *k, std::size_t ldk, float *s,
             std::size_t lds, float scale) noexcept {
  drive(F32Engine<false>{&kernel, {q, 0, ldq}, {k, 0, ldk}, d, scale},
        scores_problem(n_q, n_k, d, s, lds, scale));
}

#if ATTNSCORE_HAVE_F16
void run_f16(const KernelF16 &kernel, std::size_t n_q, std::size_t n_k, std::size_t d,
             const std::uint16_t *q, std::size_t ldq, const std::uint16_t *k, std::size_t ldk,
             float *s, std::size_t lds, float scale) noexcept {
  const Problem p = scores_problem(n_q, n_k, d, s, lds, scale);
  if (kernel.acc != nullptr)
    drive(F16AccEngine{&kernel, {q, 0, ldq}, {k, 0, ldk}, d, scale}, p);
  else
    drive(F16Engine<false>{&kernel, {q, 0, ldq}, {k, 0, ldk}, d, scale}, p);
}
#endif

#if ATTNSCORE_HAVE_S8
void run_s8(const KernelS8 &kernel, std::size_t n_q, std::size_t n_k, std::size_t d,
            const std::int8_t *q, std::size_t ldq, const float *q_scale, std::size_t q_step,
            const std::int8_t *k, std::size_t ldk, const float *k_scale, std::size_t k_step,
            float *s, std::size_t lds, float scale) noexcept {
  drive(S8Engine<false>{&kernel,
                        {q, 0, ldq},
                        {q_scale, 0, q_step},
                        {k, 0, ldk},
                        {k_scale, 0, k_step},
                        {},
                        d,
                        scale},
        scores_problem(n_q, n_k, d, s, lds, scale));
}
#endif

}  // namespace attnscore
