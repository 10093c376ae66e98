// SPDX-License-Identifier: Apache-2.0
// Tests that the forward declarations agree with the definitions.
#include <mcpcore/fwd.hpp>

#include <doctest/doctest.h>

#include <mcpcore/mcpcore.hpp>
#include <mcpcore/stores/sqlite_approval_store.hpp>
#include <mcpcore/stores/sqlite_audit_sink.hpp>

#include <type_traits>

TEST_SUITE("fwd") {
  TEST_CASE("forward-declared types are the complete public types") {
    // Redeclaring with a different underlying type or class-key would not compile here.
    static_assert(std::is_enum_v<mcpcore::errc>);
    static_assert(std::is_same_v<std::underlying_type_t<mcpcore::json::kind>, std::uint8_t>);
    static_assert(std::is_class_v<mcpcore::json::document>);
    static_assert(std::is_class_v<mcpcore::request_id_view>);
    static_assert(std::is_aggregate_v<mcpcore::sse::event>);
    static_assert(std::is_same_v<std::underlying_type_t<mcpcore::approval_store_errc>, std::uint8_t>);
    static_assert(std::is_aggregate_v<mcpcore::approval_ticket>);
    static_assert(std::is_class_v<mcpcore::sqlite_approval_store>);
    static_assert(std::is_same_v<std::underlying_type_t<mcpcore::sqlite_audit_errc>, std::uint8_t>);
    static_assert(std::is_class_v<mcpcore::sqlite_audit_sink>);
    static_assert(std::is_aggregate_v<mcpcore::http_response>);
    CHECK(true);
  }
}
