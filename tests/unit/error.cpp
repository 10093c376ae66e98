// SPDX-License-Identifier: Apache-2.0
// Tests of the error-code table, its category and the error.data envelope
// (docs/errors.md#error-codes, #the-errordata-envelope).
#include <mcpcore/wire/error.hpp>

#include <doctest/doctest.h>

#include <mcpcore/wire/json.hpp>

#include <set>
#include <ostream>  // doctest prints std::error_code operands
#include <string>
#include <system_error>

using namespace mcpcore;

namespace {

// Every code of docs/errors.md#error-codes, plus -32002 (MCP resource not found) and -32015
// (docs/errors.md#error-codes).
constexpr errc all_codes[] = {
    errc::parse_error,        errc::invalid_request,   errc::method_not_found,
    errc::invalid_params,     errc::internal_error,    errc::resource_not_found,
    errc::permission_denied,  errc::tier_denied,       errc::mcp_disabled,
    errc::approval_required,  errc::unknown_session,   errc::origin_rejected,
    errc::unsupported_protocol_version, errc::session_cap, errc::not_acceptable,
    errc::stream_cap,         errc::stream_poisoned,   errc::terminal_unavailable,
    errc::shutting_down,
};

}  // namespace

TEST_SUITE("error") {
  TEST_CASE("the codes carry the numbers of errors.md/error-codes") {
    static_assert(static_cast<int>(errc::parse_error) == -32700);
    static_assert(static_cast<int>(errc::invalid_request) == -32600);
    static_assert(static_cast<int>(errc::method_not_found) == -32601);
    static_assert(static_cast<int>(errc::invalid_params) == -32602);
    static_assert(static_cast<int>(errc::internal_error) == -32603);
    static_assert(static_cast<int>(errc::resource_not_found) == -32002);
    static_assert(static_cast<int>(errc::permission_denied) == -32003);
    static_assert(static_cast<int>(errc::tier_denied) == -32004);
    static_assert(static_cast<int>(errc::mcp_disabled) == -32005);
    static_assert(static_cast<int>(errc::approval_required) == -32006);
    static_assert(static_cast<int>(errc::unknown_session) == -32007);
    static_assert(static_cast<int>(errc::origin_rejected) == -32008);
    static_assert(static_cast<int>(errc::unsupported_protocol_version) == -32009);
    static_assert(static_cast<int>(errc::session_cap) == -32010);
    static_assert(static_cast<int>(errc::not_acceptable) == -32011);
    static_assert(static_cast<int>(errc::stream_cap) == -32012);
    static_assert(static_cast<int>(errc::stream_poisoned) == -32013);
    static_assert(static_cast<int>(errc::terminal_unavailable) == -32014);
    static_assert(static_cast<int>(errc::shutting_down) == -32015);
    std::set<int> distinct;
    for (errc e : all_codes) distinct.insert(static_cast<int>(e));
    CHECK(distinct.size() == std::size(all_codes));
  }

  TEST_CASE("HTTP statuses follow errors.md/error-codes") {
    static_assert(default_http_status(errc::parse_error) == 200);
    static_assert(default_http_status(errc::invalid_params) == 200);
    static_assert(default_http_status(errc::tier_denied) == 200);
    static_assert(default_http_status(errc::mcp_disabled) == 200);
    static_assert(default_http_status(errc::approval_required) == 200);
    static_assert(default_http_status(errc::unknown_session) == 404);
    static_assert(default_http_status(errc::origin_rejected) == 403);
    static_assert(default_http_status(errc::unsupported_protocol_version) == 400);
    static_assert(default_http_status(errc::session_cap) == 429);
    static_assert(default_http_status(errc::not_acceptable) == 406);
    static_assert(default_http_status(errc::stream_cap) == 429);
    static_assert(default_http_status(errc::stream_poisoned) == 410);
    static_assert(default_http_status(errc::shutting_down) == 503);
  }

  TEST_CASE("only the kill switch answers without error.data (errors.md/the-errordata-envelope, http.md/processing-order-on-the-mcp-path)") {
    for (errc e : all_codes) {
      CAPTURE(static_cast<int>(e));
      CHECK(carries_error_data(e) == (e != errc::mcp_disabled));
    }
  }

  TEST_CASE("errc converts to std::error_code in the jsonrpc category") {
    const std::error_code ec = errc::method_not_found;
    CHECK(ec.value() == -32601);
    CHECK(std::string{ec.category().name()} == "mcpcore.jsonrpc");
    CHECK(ec.message() == "Method not found");
    CHECK(ec == make_error_code(errc::method_not_found));
    CHECK(ec != make_error_code(errc::invalid_params));
    CHECK(&ec.category() == &jsonrpc_category());
    // A zero value is success; no mcpcore code is zero, so every code converts to a failure.
    for (errc e : all_codes) CHECK(static_cast<bool>(make_error_code(e)));
  }

  TEST_CASE("every code has a distinct, non-empty default message") {
    std::set<std::string_view> messages;
    for (errc e : all_codes) {
      CAPTURE(static_cast<int>(e));
      CHECK_FALSE(default_message(e).empty());
      CHECK(jsonrpc_category().message(static_cast<int>(e)) == default_message(e));
      messages.insert(default_message(e));
    }
    CHECK(messages.size() == std::size(all_codes));
    CHECK(default_message(errc::mcp_disabled) == "MCP is disabled on this server");
    CHECK(default_message(errc::shutting_down) == "server is shutting down");
    CHECK(default_message(errc::stream_poisoned) == "Stream terminated; final response undeliverable");
  }

  TEST_CASE("the envelope always has correlation_id, retry_after_ms and remediation (errors.md/the-errordata-envelope)") {
    std::string out;
    json::writer w{out};
    write_error_data(w, error_data{.correlation_id = "req-1-0"});
    CHECK(out == R"({"correlation_id":"req-1-0","retry_after_ms":null,"remediation":null})");
  }

  TEST_CASE("an approval-required envelope carries the ticket members (errors.md/the-errordata-envelope, approvals.md/what-the-machine-checks-in-order)") {
    std::string out;
    json::writer w{out};
    write_error_data(w, error_data{.correlation_id = "req-18f3c2a1b07-2a",
                                   .retry_after_ms = std::chrono::milliseconds{30000},
                                   .remediation = "an admin must approve this approval_id",
                                   .approval_id = "0123456789abcdef0123456789abcdef",
                                   .status_url = "/api/v1/approvals/0123456789abcdef0123456789abcdef"});
    CHECK(out ==
          R"({"correlation_id":"req-18f3c2a1b07-2a","retry_after_ms":30000,)"
          R"("remediation":"an admin must approve this approval_id",)"
          R"("approval_id":"0123456789abcdef0123456789abcdef",)"
          R"("status_url":"/api/v1/approvals/0123456789abcdef0123456789abcdef"})");
  }

  TEST_CASE("execution_id is absent, null or a string, reason and audit_persisted when set (errors.md/the-errordata-envelope)") {
    const auto render = [](const error_data& d) {
      std::string out;
      json::writer w{out};
      write_error_data(w, d);
      return out;
    };
    SUBCASE("absent") { CHECK(render({.correlation_id = "c"}).find("execution_id") == std::string::npos); }
    SUBCASE("null") {
      error_data d{.correlation_id = "c"};
      d.execution_id = std::optional<std::string_view>{};
      CHECK(render(d) == R"({"correlation_id":"c","retry_after_ms":null,"remediation":null,"execution_id":null})");
    }
    SUBCASE("string, reason and audit gap") {
      error_data d{.correlation_id = "c", .reason = "post_pin_slots", .audit_persisted = false};
      d.execution_id = std::optional<std::string_view>{"exec-9"};
      CHECK(render(d) ==
            R"({"correlation_id":"c","retry_after_ms":null,"remediation":null,"execution_id":"exec-9",)"
            R"("reason":"post_pin_slots","audit_persisted":false})");
    }
  }

  TEST_CASE("caller-derived text is escaped, so the envelope stays valid JSON (errors.md/the-errordata-envelope)") {
    std::string out;
    json::writer w{out};
    write_error_data(w, error_data{.correlation_id = "c", .remediation = "say \"hi\"\n\x01 \xff"});
    json::document doc;
    auto root = doc.parse(out);
    REQUIRE(root);
    CHECK((*root)["remediation"].as_string() == "say \"hi\"\n\x01 \xEF\xBF\xBD");
  }

  TEST_CASE("make_error fills the default message and honours carries_error_data") {
    const error_data data{.correlation_id = "req-a-1", .remediation = "retry later"};
    const error_object invalid = make_error(errc::invalid_params, "", data);
    CHECK(invalid.code == -32602);
    CHECK(invalid.message == "Invalid params");
    CHECK(invalid.data_json == R"({"correlation_id":"req-a-1","retry_after_ms":null,"remediation":"retry later"})");

    const error_object custom = make_error(errc::method_not_found, "Unknown method: x", data);
    CHECK(custom.message == "Unknown method: x");

    const error_object disabled = make_error(errc::mcp_disabled, "", data);
    CHECK(disabled.code == -32005);
    CHECK(disabled.message == "MCP is disabled on this server");
    CHECK(disabled.data_json.empty());
  }
}
