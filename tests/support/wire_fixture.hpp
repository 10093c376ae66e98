// SPDX-License-Identifier: Apache-2.0
// Shared helpers of the wire-level tests: a client message parsed into a document of its own, and
// a JSON object text parsed into a document of its own.
#ifndef MCPCORE_TESTS_SUPPORT_WIRE_FIXTURE_HPP
#define MCPCORE_TESTS_SUPPORT_WIRE_FIXTURE_HPP

#include <mcpcore/expected.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <doctest/doctest.h>

#include <string_view>

namespace wire_fixture {

/// One body parsed into its own document; the message's views live as long as this object.
struct parsed_message {
  mcpcore::json::document doc;
  mcpcore::result<mcpcore::message, mcpcore::message_error> r;
  explicit parsed_message(std::string_view body) : doc{}, r{mcpcore::parse_message(doc, body)} {}
  parsed_message(const parsed_message&) = delete;
  parsed_message& operator=(const parsed_message&) = delete;
};

/// A JSON text parsed into its own document; REQUIREs that it is JSON and an object.
struct json_object {
  mcpcore::json::document doc;
  mcpcore::json::value root;
  explicit json_object(std::string_view text) {
    auto r = doc.parse(text);
    REQUIRE(r.has_value());
    root = *r;
    REQUIRE(root.is_object());
  }
};

}  // namespace wire_fixture

#endif  // MCPCORE_TESTS_SUPPORT_WIRE_FIXTURE_HPP
