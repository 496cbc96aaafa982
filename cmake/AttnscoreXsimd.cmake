# SPDX-License-Identifier: Apache-2.0
# xsimd is a private, header-only build dependency. We take the header alone: Debian's CMake
# config is not found in cross builds (it lives under the host's multiarch directory) and its
# target drags in an xtl link dependency we do not use.
find_path(ATTNSCORE_XSIMD_INCLUDE_DIR xsimd/xsimd.hpp PATHS /usr/include NO_CMAKE_FIND_ROOT_PATH)
if(NOT ATTNSCORE_XSIMD_INCLUDE_DIR)
  message(FATAL_ERROR "xsimd not found: install libxsimd-dev")
endif()
add_library(attnscore_xsimd INTERFACE)
target_include_directories(attnscore_xsimd SYSTEM INTERFACE ${ATTNSCORE_XSIMD_INCLUDE_DIR})
