// SPDX-License-Identifier: Apache-2.0
// Fuzzes the JSON-RPC envelope: mcpcore::parse_message on arbitrary bytes.
//
// Invariants:
//  - parse_message never crashes, with one json::document reused across inputs (as a
//    connection reuses it);
//  - an accepted message, re-serialized with json::writer and parsed again, is accepted again
//    with the same kind, method and id, and its serialization is a fixed point;
//  - a refused message yields an error response (write_error_response) that is valid JSON with
//    the refusal's code, the echoed id (or null), and the error.data envelope.
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include "fuzz_check.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace json = mcpcore::json;

namespace {

bool same_id(const std::optional<mcpcore::request_id_view>& a, json::value v) {
  if (!a) return v.is_null();
  if (a->is_string()) return v.is_string() && v.as_string() == a->as_string();
  return v.is_integer() && v.to_int64() == a->as_integer();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static json::document doc;      // reused, as a connection reuses its document
  static json::document reparsed; // the second parse, kept apart so both views stay valid
  static std::string out;
  static std::string out2;

  const std::string_view body{reinterpret_cast<const char*>(data), size};
  const auto msg = mcpcore::parse_message(doc, body);

  if (msg) {
    MCPCORE_FUZZ_CHECK(msg->root.is_object());
    MCPCORE_FUZZ_CHECK(doc.root().node() == msg->root.node());
    if (msg->kind == mcpcore::message_kind::response) MCPCORE_FUZZ_CHECK(msg->id.has_value());
    if (msg->kind == mcpcore::message_kind::notification) MCPCORE_FUZZ_CHECK(!msg->id.has_value());
    if (msg->kind == mcpcore::message_kind::request) MCPCORE_FUZZ_CHECK(msg->id.has_value());
    MCPCORE_FUZZ_CHECK(!msg->params.exists() || msg->params.is_object());

    out.clear();
    json::writer w{out};
    w.value(msg->root);
    const auto again = mcpcore::parse_message(reparsed, out);
    MCPCORE_FUZZ_CHECK(again.has_value());
    MCPCORE_FUZZ_CHECK(again->kind == msg->kind);
    MCPCORE_FUZZ_CHECK(again->method == msg->method);
    MCPCORE_FUZZ_CHECK(again->id == msg->id);
    MCPCORE_FUZZ_CHECK(again->params.exists() == msg->params.exists());
    MCPCORE_FUZZ_CHECK(again->params.size() == msg->params.size());
    MCPCORE_FUZZ_CHECK(again->root.size() == msg->root.size());

    // Compact output is a fixed point of parse + write.
    out2.clear();
    json::writer w2{out2};
    w2.value(again->root);
    MCPCORE_FUZZ_CHECK(out2 == out);
  } else {
    const mcpcore::message_error& e = msg.error();
    MCPCORE_FUZZ_CHECK(e.code == mcpcore::errc::parse_error || e.code == mcpcore::errc::invalid_request ||
                       e.code == mcpcore::errc::invalid_params);
    MCPCORE_FUZZ_CHECK(!e.message.empty());
    // A body that is not JSON cannot have told us an id.
    if (e.code == mcpcore::errc::parse_error) MCPCORE_FUZZ_CHECK(!e.id.has_value());

    out.clear();
    mcpcore::write_error_response(out, e, "req-18f3c2a1b07-2a");
    const auto root = reparsed.parse(out);
    MCPCORE_FUZZ_CHECK(root.has_value());
    MCPCORE_FUZZ_CHECK(root->is_object());
    MCPCORE_FUZZ_CHECK((*root)["jsonrpc"].is_string() && (*root)["jsonrpc"].as_string() == "2.0");
    MCPCORE_FUZZ_CHECK(same_id(e.id, (*root)["id"]));
    const json::value error = (*root)["error"];
    MCPCORE_FUZZ_CHECK(error.is_object());
    MCPCORE_FUZZ_CHECK(error["code"].to_int64() == static_cast<std::int64_t>(e.code));
    MCPCORE_FUZZ_CHECK(error["message"].is_string() && error["message"].as_string() == e.message);
    const json::value envelope = error["data"];
    MCPCORE_FUZZ_CHECK(envelope["correlation_id"].is_string() &&
                       envelope["correlation_id"].as_string() == "req-18f3c2a1b07-2a");
    MCPCORE_FUZZ_CHECK(envelope["retry_after_ms"].is_null());
    MCPCORE_FUZZ_CHECK(envelope["remediation"].is_string() && envelope["remediation"].as_string() == e.remediation);
    // With an id echoed, the error response is itself a well-formed JSON-RPC response.
    if (e.id) {
      const auto as_message = mcpcore::read_message(*root);
      MCPCORE_FUZZ_CHECK(as_message.has_value());
      MCPCORE_FUZZ_CHECK(as_message->kind == mcpcore::message_kind::response);
      MCPCORE_FUZZ_CHECK(as_message->id == e.id);
    }
  }
  return 0;
}
