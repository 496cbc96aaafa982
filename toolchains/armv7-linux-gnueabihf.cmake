# SPDX-License-Identifier: Apache-2.0
# 32-bit ARM Linux (hard float) with Debian's g++-arm-linux-gnueabihf; ctest runs under qemu-user.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR armv7l)
set(CMAKE_C_COMPILER arm-linux-gnueabihf-gcc)
set(CMAKE_CXX_COMPILER arm-linux-gnueabihf-g++)
# NEON with VFPv4 (fused multiply-add) is this build's baseline: Debian armhf's own is VFPv3-D16.
set(CMAKE_C_FLAGS_INIT "-march=armv7-a -mfpu=neon-vfpv4 -mfloat-abi=hard")
set(CMAKE_CXX_FLAGS_INIT "-march=armv7-a -mfpu=neon-vfpv4 -mfloat-abi=hard")
set(CMAKE_LIBRARY_ARCHITECTURE arm-linux-gnueabihf)
# No -cpu: qemu would default to its most capable CPU; each test names one through QEMU_CPU.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-arm;-L;/usr/arm-linux-gnueabihf)
