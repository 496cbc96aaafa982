// SPDX-License-Identifier: Apache-2.0
// Catch2's main, compiled here: Debian's prebuilt Catch2 main library is amd64-only.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#include <cstdlib>

#include "support.hpp"

// Here rather than in support.cpp, which the fuzz target shares without Catch2.
bool testing::threads_available() {
  static const bool ok = std::getenv("ATTNSCORE_TEST_NO_THREADS") == nullptr;
  if (!ok) WARN("ATTNSCORE_TEST_NO_THREADS: the pool and the thread-per-task hook are not run");
  return ok;
}
