# SPDX-License-Identifier: Apache-2.0
# 64-bit RISC-V Linux with Debian's g++-riscv64-linux-gnu: the portable core (scalar level) only.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR riscv64)
set(CMAKE_C_COMPILER riscv64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER riscv64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE riscv64-linux-gnu)
# Each test still names its CPU through QEMU_CPU, like the ARM builds.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-riscv64;-L;/usr/riscv64-linux-gnu)
