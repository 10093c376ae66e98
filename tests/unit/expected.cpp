// SPDX-License-Identifier: Apache-2.0
// Tests of mcpcore::result and mcpcore::fail (style guide, project decision 1).
#include <mcpcore/expected.hpp>

#include <doctest/doctest.h>

#include <ostream>  // doctest prints std::error_code operands
#include <string>
#include <system_error>
#include <type_traits>

using namespace mcpcore;

namespace {

result<int> half(int n) {
  if (n % 2 != 0) return fail(std::make_error_code(std::errc::invalid_argument));
  return n / 2;
}

struct detailed_error {
  int code;
  std::string why;
};

result<std::string, detailed_error> name_of(int n) {
  if (n < 0) return fail(detailed_error{n, "negative"});
  return std::to_string(n);
}

}  // namespace

TEST_SUITE("expected") {
  TEST_CASE("result is std::expected with std::error_code by default") {
    static_assert(std::is_same_v<result<int>, std::expected<int, std::error_code>>);
    static_assert(std::is_same_v<result<void, int>, std::expected<void, int>>);
    CHECK(true);
  }

  TEST_CASE("fail carries the error through the common subset") {
    const auto ok = half(8);
    REQUIRE(ok.has_value());
    CHECK(*ok == 4);
    const auto bad = half(3);
    CHECK_FALSE(bad);
    CHECK(bad.error() == std::errc::invalid_argument);
    CHECK(bad.value_or(-1) == -1);
  }

  TEST_CASE("fail works with a structured error type") {
    const auto bad = name_of(-2);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().code == -2);
    CHECK(bad.error().why == "negative");
    CHECK(name_of(12).value() == "12");
  }
}
