# SPDX-License-Identifier: Apache-2.0
# 64-bit ARM Linux with Debian's g++-aarch64-linux-gnu; ctest runs the tests under qemu-user.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Debian multiarch: arm64 packages (libbenchmark-dev:arm64) live under /usr/lib/<triple>.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# No -cpu: qemu would default to its most capable CPU; each test names one through QEMU_CPU.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-L;/usr/aarch64-linux-gnu)
