// SPDX-License-Identifier: Apache-2.0
// Tests of mcpcore::result, mcpcore::fail and mcpcore::error (docs/errors.md#one-error-shape).
#include <mcpcore/expected.hpp>

#include <doctest/doctest.h>

#include <ostream>  // doctest prints std::error_code operands
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

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
  TEST_CASE("result is std::expected with mcpcore::error by default") {
    static_assert(std::is_same_v<result<int>, std::expected<int, error>>);
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

  TEST_CASE("error: a bare code reads its message from the code") {
    const error e = std::make_error_code(std::errc::permission_denied);
    CHECK(e.code() == std::make_error_code(std::errc::permission_denied));
    CHECK(e.message() == std::make_error_code(std::errc::permission_denied).message());
    CHECK_FALSE(e.message().empty());
    CHECK(e.details().empty());
    CHECK(e == std::errc::permission_denied);  // an error condition
    CHECK_FALSE(e == std::errc::invalid_argument);
    CHECK(e == std::make_error_code(std::errc::permission_denied));
    CHECK(std::make_error_code(std::errc::permission_denied) == e);
  }

  TEST_CASE("error: from an error-code enum, with one detail or several") {
    const error built = library_errc::build_refused;
    CHECK(built.code() == make_error_code(library_errc::build_refused));
    CHECK(built == library_errc::build_refused);
    CHECK_FALSE(built == library_errc::token_file_refused);
    CHECK(std::string(built.code().category().name()) == "mcpcore");
    CHECK(built.message() == "the server build was refused");

    const error one(make_error_code(library_errc::token_file_refused), "tokens:3: unknown tier");
    CHECK(one.message() == "tokens:3: unknown tier");
    CHECK(one.details() == std::vector<std::string>{"tokens:3: unknown tier"});

    const error several(make_error_code(library_errc::build_refused), std::vector<std::string>{"a", "b"});
    CHECK(several.message() == "a; b");
    CHECK(several.details().size() == 2);
    CHECK(several == built);  // codes compare, details do not

    const error empty_detail(make_error_code(library_errc::moved_from), std::string{});
    CHECK(empty_detail.message() == "the object was moved from");
  }

  TEST_CASE("error: fail converts codes and enums into result's error") {
    const result<int> from_enum = fail(library_errc::moved_from);
    REQUIRE_FALSE(from_enum);
    CHECK(from_enum.error() == library_errc::moved_from);
    const result<void> from_code = fail(std::make_error_code(std::errc::io_error));
    REQUIRE_FALSE(from_code);
    CHECK(from_code.error().code().value() == static_cast<int>(std::errc::io_error));
  }
}
