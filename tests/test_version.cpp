// SPDX-License-Identifier: Apache-2.0
// The version: the header's macros, the library's functions and CMake's project(VERSION) agree.
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "attnscore/attnscore.hpp"

TEST_CASE("version: header, library and project agree", "[version]") {
  // The project's version as CMake knows it, passed in by tests/CMakeLists.txt.
  const std::string project = ATTNSCORE_TEST_PROJECT_VERSION;
  CHECK(std::string(ATTNSCORE_VERSION_STRING) == project);
  CHECK(std::string(attnscore_version()) == project);
  CHECK(std::string(attnscore::version()) == project);
  char parts[32];
  std::snprintf(parts, sizeof parts, "%d.%d.%d", ATTNSCORE_VERSION_MAJOR, ATTNSCORE_VERSION_MINOR,
                ATTNSCORE_VERSION_PATCH);
  CHECK(std::string(parts) == project);
  // The number for compile-time comparisons is the header's parts; the library reports its
  // version as the string alone, so its parts must give the same number.
  CHECK(ATTNSCORE_VERSION_NUMBER ==
        ATTNSCORE_VERSION_MAJOR * 10000 + ATTNSCORE_VERSION_MINOR * 100 + ATTNSCORE_VERSION_PATCH);
  unsigned major = 0, minor = 0, patch = 0;
  char tail = 0;
  REQUIRE(std::sscanf(attnscore_version(), "%u.%u.%u%c", &major, &minor, &patch, &tail) == 3);
  CHECK(major * 10000 + minor * 100 + patch == static_cast<unsigned>(ATTNSCORE_VERSION_NUMBER));
#if ATTNSCORE_VERSION_NUMBER < 100
#error "ATTNSCORE_VERSION_NUMBER is usable in #if and 0.1.0 is 100"
#endif
}
