// SPDX-License-Identifier: Apache-2.0
// Tests of the compile-mode configuration.
#include <mcpcore/detail/config.hpp>

#include <doctest/doctest.h>

#include <string_view>

#define MCPCORE_TEST_STR2(x) #x
#define MCPCORE_TEST_STR(x) MCPCORE_TEST_STR2(x)

TEST_SUITE("detail_config") {
  TEST_CASE("exactly one compile mode is active and the ABI tag names it") {
    constexpr std::string_view tag = MCPCORE_TEST_STR(MCPCORE_ABI_TAG);
#if defined(MCPCORE_HEADER_ONLY)
    CHECK(tag == "v0_ho");
#else
    CHECK(tag == "v0_sc");
#endif
  }
}
