# SPDX-License-Identifier: Apache-2.0
# The CPU family of the target and the SIMD levels compiled for it, each with its one flag set.
include(CheckCXXSourceCompiles)

set(ATTNSCORE_FAMILY_X86 0)
set(ATTNSCORE_FAMILY_ARM 0)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(ATTNSCORE_FAMILY_X86 1)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|armv7.*|arm)$")
  set(ATTNSCORE_FAMILY_ARM 1)
endif()

# Level name, its compile flags and a probe the compiler must accept with them.
set(ATTNSCORE_SIMD_LEVELS)
if(ATTNSCORE_FAMILY_X86)
  set(ATTNSCORE_FLAGS_SSE2 "")
  set(ATTNSCORE_FLAGS_AVX2 -mavx2 -mfma -mf16c)
  set(ATTNSCORE_FLAGS_AVX512 -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx2 -mfma -mf16c)
  set(ATTNSCORE_PROBE_SSE2 "#include <emmintrin.h>\nint main(){__m128 a=_mm_set1_ps(1.f);return (int)_mm_cvtss_f32(a);}")
  set(ATTNSCORE_PROBE_AVX2 "#include <immintrin.h>\nint main(){__m256 a=_mm256_fmadd_ps(_mm256_set1_ps(1.f),_mm256_set1_ps(1.f),_mm256_set1_ps(1.f));return (int)_mm256_cvtss_f32(a);}")
  set(ATTNSCORE_PROBE_AVX512 "#include <immintrin.h>\nint main(){__m512 a=_mm512_fmadd_ps(_mm512_set1_ps(1.f),_mm512_set1_ps(1.f),_mm512_set1_ps(1.f));return (int)_mm512_reduce_add_ps(a);}")
  # avx512vnni: avx512 plus vpdpbusd (int8 kernels only; f32 keeps avx512).
  set(ATTNSCORE_FLAGS_AVX512VNNI ${ATTNSCORE_FLAGS_AVX512} -mavx512vnni)
  set(ATTNSCORE_PROBE_AVX512VNNI "#include <immintrin.h>\nint main(){__m512i a=_mm512_dpbusd_epi32(_mm512_set1_epi32(1),_mm512_set1_epi8(1),_mm512_set1_epi8(2));return _mm512_reduce_add_epi32(a);}")
  # avxvnni: avx2 plus the VEX vpdpbusd of AVX-VNNI (int8 kernels only; Alder Lake has it
  # without AVX-512).
  set(ATTNSCORE_FLAGS_AVXVNNI ${ATTNSCORE_FLAGS_AVX2} -mavxvnni)
  set(ATTNSCORE_PROBE_AVXVNNI "#include <immintrin.h>\nint main(){__m256i a=_mm256_dpbusd_avx_epi32(_mm256_set1_epi32(1),_mm256_set1_epi8(1),_mm256_set1_epi8(2));return _mm256_extract_epi32(a,0);}")
  list(APPEND ATTNSCORE_SIMD_LEVELS SSE2 AVX2 AVXVNNI AVX512 AVX512VNNI)
elseif(ATTNSCORE_FAMILY_ARM)
  # NEON is the ARM builds' baseline (no flags): aarch64 always has it, and the armv7 toolchain
  # file adds -mfpu=neon-vfpv4. The probe needs VFPv4's fused multiply-add, which the kernel uses.
  set(ATTNSCORE_FLAGS_NEON "")
  set(ATTNSCORE_PROBE_NEON "#include <arm_neon.h>\nint main(){float32x4_t a=vdupq_n_f32(1.f);a=vfmaq_f32(a,a,a);return (int)vgetq_lane_f32(a,0);}")
  list(APPEND ATTNSCORE_SIMD_LEVELS NEON)
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
    # int8 dot products (int8 kernels only): sdot, and smmla on top of it.
    set(ATTNSCORE_FLAGS_NEON_DOTPROD -march=armv8.2-a+dotprod)
    set(ATTNSCORE_PROBE_NEON_DOTPROD "#include <arm_neon.h>\nint main(){int32x4_t a=vdotq_s32(vdupq_n_s32(0),vdupq_n_s8(1),vdupq_n_s8(2));return vgetq_lane_s32(a,0);}")
    set(ATTNSCORE_FLAGS_NEON_I8MM -march=armv8.2-a+dotprod+i8mm)
    set(ATTNSCORE_PROBE_NEON_I8MM "#include <arm_neon.h>\nint main(){int32x4_t a=vmmlaq_s32(vdupq_n_s32(0),vdupq_n_s8(1),vdupq_n_s8(2));return vgetq_lane_s32(a,0);}")
    list(APPEND ATTNSCORE_SIMD_LEVELS NEON_DOTPROD NEON_I8MM)
  endif()
endif()

foreach(level IN LISTS ATTNSCORE_SIMD_LEVELS)
  option(ATTNSCORE_ENABLE_${level} "Compile the ${level} kernels (if the compiler can)" ON)
  set(ATTNSCORE_HAVE_${level} 0)
  if(ATTNSCORE_ENABLE_${level})
    set(CMAKE_REQUIRED_FLAGS "${ATTNSCORE_FLAGS_${level}}")
    string(REPLACE ";" " " CMAKE_REQUIRED_FLAGS "${CMAKE_REQUIRED_FLAGS}")
    check_cxx_source_compiles("${ATTNSCORE_PROBE_${level}}" ATTNSCORE_COMPILER_HAS_${level})
    unset(CMAKE_REQUIRED_FLAGS)
    if(ATTNSCORE_COMPILER_HAS_${level})
      set(ATTNSCORE_HAVE_${level} 1)
    endif()
  endif()
endforeach()
# Not a level: the opt-in f16 accumulation kernel (FP16 arithmetic, FPHP + ASIMDHP on aarch64),
# a row of the neon level that also needs those features; only its own object gets these flags.
set(ATTNSCORE_HAVE_NEON_FP16ACC 0)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$" AND ATTNSCORE_HAVE_NEON)
  set(ATTNSCORE_FLAGS_NEON_FP16ACC -march=armv8.2-a+fp16)
  set(CMAKE_REQUIRED_FLAGS "-march=armv8.2-a+fp16")
  check_cxx_source_compiles("#include <arm_neon.h>\nint main(){float16x8_t a=vdupq_n_f16(1);a=vfmaq_f16(a,a,a);a=vpaddq_f16(a,a);return (int)vgetq_lane_f16(a,0);}"
                            ATTNSCORE_COMPILER_HAS_NEON_FP16ACC)
  unset(CMAKE_REQUIRED_FLAGS)
  if(ATTNSCORE_COMPILER_HAS_NEON_FP16ACC)
    set(ATTNSCORE_HAVE_NEON_FP16ACC 1)
  endif()
endif()
# Not a level either: the opt-in bf16 dot-product kernel (vdpbf16ps), a row of the avx512 level
# that also needs AVX512_BF16; only its own object gets -mavx512bf16.
set(ATTNSCORE_HAVE_AVX512BF16DOT 0)
if(ATTNSCORE_HAVE_AVX512)
  set(ATTNSCORE_FLAGS_AVX512BF16DOT ${ATTNSCORE_FLAGS_AVX512} -mavx512bf16)
  string(REPLACE ";" " " CMAKE_REQUIRED_FLAGS "${ATTNSCORE_FLAGS_AVX512BF16DOT}")
  check_cxx_source_compiles("#include <immintrin.h>\nint main(){__m512 a=_mm512_dpbf16_ps(_mm512_setzero_ps(),(__m512bh)_mm512_set1_epi32(1),(__m512bh)_mm512_set1_epi32(1));return (int)_mm512_reduce_add_ps(a);}"
                            ATTNSCORE_COMPILER_HAS_AVX512BF16DOT)
  unset(CMAKE_REQUIRED_FLAGS)
  if(ATTNSCORE_COMPILER_HAS_AVX512BF16DOT)
    set(ATTNSCORE_HAVE_AVX512BF16DOT 1)
  endif()
endif()
# The AMX tile kernel of the same option (tdpbf16ps), also a row of the avx512 level: it needs
# AMX-TILE and AMX-BF16 and the tile state the OS grants a process; only its object gets -mamx-*.
set(ATTNSCORE_HAVE_AMXBF16 0)
if(ATTNSCORE_HAVE_AVX512BF16DOT)
  set(ATTNSCORE_FLAGS_AMXBF16 ${ATTNSCORE_FLAGS_AVX512} -mamx-tile -mamx-bf16)
  string(REPLACE ";" " " CMAKE_REQUIRED_FLAGS "${ATTNSCORE_FLAGS_AMXBF16}")
  check_cxx_source_compiles("#include <immintrin.h>\nint main(){_tile_zero(0);_tile_dpbf16ps(0,1,2);_tile_release();return 0;}"
                            ATTNSCORE_COMPILER_HAS_AMXBF16)
  unset(CMAKE_REQUIRED_FLAGS)
  if(ATTNSCORE_COMPILER_HAS_AMXBF16)
    set(ATTNSCORE_HAVE_AMXBF16 1)
  endif()
endif()
# And its AArch64 counterpart (BFDOT, the BF16 extension), a row of the neon level.
set(ATTNSCORE_HAVE_NEON_BF16DOT 0)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$" AND ATTNSCORE_HAVE_NEON)
  set(ATTNSCORE_FLAGS_NEON_BF16DOT -march=armv8.2-a+bf16)
  set(CMAKE_REQUIRED_FLAGS "-march=armv8.2-a+bf16")
  check_cxx_source_compiles("#include <arm_neon.h>\nint main(){bfloat16x8_t b=vreinterpretq_bf16_u16(vdupq_n_u16(1));float32x4_t a=vbfdotq_laneq_f32(vdupq_n_f32(0),b,b,1);return (int)vgetq_lane_f32(a,0);}"
                            ATTNSCORE_COMPILER_HAS_NEON_BF16DOT)
  unset(CMAKE_REQUIRED_FLAGS)
  if(ATTNSCORE_COMPILER_HAS_NEON_BF16DOT)
    set(ATTNSCORE_HAVE_NEON_BF16DOT 1)
  endif()
endif()
foreach(level SSE2 AVX2 AVXVNNI AVX512 AVX512VNNI NEON NEON_DOTPROD NEON_I8MM)
  if(NOT DEFINED ATTNSCORE_HAVE_${level})
    set(ATTNSCORE_HAVE_${level} 0)
  endif()
endforeach()
