// SPDX-License-Identifier: Apache-2.0
// Tests of the version macros.
#include <mcpcore/version.hpp>

#include <doctest/doctest.h>

#include <string>

TEST_SUITE("version") {
  TEST_CASE("the integer and string forms agree") {
    static_assert(MCPCORE_VERSION ==
                  MCPCORE_VERSION_MAJOR * 10000 + MCPCORE_VERSION_MINOR * 100 + MCPCORE_VERSION_PATCH);
    const std::string expected = std::to_string(MCPCORE_VERSION_MAJOR) + "." +
                                 std::to_string(MCPCORE_VERSION_MINOR) + "." +
                                 std::to_string(MCPCORE_VERSION_PATCH);
    CHECK(expected == MCPCORE_VERSION_STRING);
  }
}
