// SPDX-License-Identifier: Apache-2.0
// Catch2's main, compiled here: Debian's prebuilt Catch2 main library is amd64-only.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
