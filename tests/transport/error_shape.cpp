// SPDX-License-Identifier: Apache-2.0
// The transport's fallible public calls fail with mcpcore::error: a code to branch on and a
// non-empty message naming what is wrong (docs/errors.md#one-error-shape).
#include <mcpcore/expected.hpp>
#include <mcpcore/transport/asio_http_server.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/transport/token_authenticator.hpp>

#include <doctest/doctest.h>

#include "support/process.hpp"

#include <ostream>  // doctest prints std::error_code operands
#include <cstdio>
#include <string>
#include <system_error>
#include <utility>

using mcpcore::library_errc;
using mcpcore::transport::asio_http_server;
using mcpcore::transport::asio_http_server_options;
using mcpcore::transport::token_authenticator;

TEST_SUITE("error_shape") {
  TEST_CASE("error shape: token_authenticator::load names the file and line of a refused entry") {
    const test_process::temp_dir dir;
    const std::string path = dir.file("tokens");
    {
      std::FILE* f = std::fopen(path.c_str(), "w");
      REQUIRE(f != nullptr);
      std::fputs("# tokens\nsha256:nothex alice readonly service\n", f);
      std::fclose(f);
    }
    const auto r = token_authenticator::load(path);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == library_errc::token_file_refused);
    CHECK(r.error().message().starts_with(path + ":2: "));

    const auto missing = token_authenticator::load(dir.file("absent"));
    REQUIRE_FALSE(missing.has_value());
    CHECK(missing.error() == std::errc::no_such_file_or_directory);
    CHECK(missing.error().message().find(dir.file("absent")) != std::string::npos);
  }

  TEST_CASE("error shape: reload of a moved-from token_authenticator fails with moved_from") {
    auto a = token_authenticator::from_text("");
    REQUIRE(a.has_value());
    const token_authenticator taken = std::move(*a);
    const auto r = a->reload_text("");  // NOLINT(bugprone-use-after-move): the moved-from state is tested
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == library_errc::moved_from);
    CHECK(r.error().message() == "the authenticator was moved from");
    CHECK(taken.size() == 0);
  }

  TEST_CASE("error shape: asio_http_server::run refuses a bad listen address with a message naming it") {
    asio_http_server_options o;
    o.address = "not-an-address";
    o.port = 0;
    asio_http_server srv([](const mcpcore::http_request_view&, mcpcore::http_completion) {}, o);
    const auto r = srv.run();
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == std::errc::invalid_argument);
    CHECK(r.error().message() == "the listen address 'not-an-address' is not an IP address");
  }
}
