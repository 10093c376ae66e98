// SPDX-License-Identifier: Apache-2.0
// Tests of the JSON-RPC 2.0 envelope: ids, message parsing and refusals, response builders.
#include <mcpcore/wire/jsonrpc.hpp>

#include <doctest/doctest.h>

#include "support/wire_fixture.hpp"

#include <mcpcore/wire/correlation_id.hpp>

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

using namespace mcpcore;
using namespace std::string_view_literals;

namespace {

// The remediation every envelope refusal except positional params carries.
constexpr std::string_view single_message_hint =
    "send exactly one JSON-RPC 2.0 message per request: a UTF-8 JSON object with \"jsonrpc\":\"2.0\"";

using parsed = wire_fixture::parsed_message;

std::string str(std::string_view s) { return std::string{s}; }

std::string describe(const std::optional<request_id_view>& id) {
  if (!id) return "(none)";
  if (id->is_string()) return "\"" + str(id->as_string()) + "\"";
  return std::to_string(id->as_integer());
}

bool is_lower_hex_number(std::string_view s) {
  if (s.empty() || (s.size() > 1 && s[0] == '0') || s.size() > 16) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// `req-<hex ms>-<hex seq>`, lowercase hex without leading zeros
// (docs/errors.md#the-errordata-envelope).
bool is_correlation_id(std::string_view s) {
  if (!s.starts_with("req-")) return false;
  s.remove_prefix(4);
  const auto dash = s.find('-');
  if (dash == std::string_view::npos) return false;
  return is_lower_hex_number(s.substr(0, dash)) && is_lower_hex_number(s.substr(dash + 1));
}

}  // namespace

TEST_SUITE("jsonrpc") {
  // ---------------------------------------------------------------------------------------------
  // Ids (docs/design.md#json-rpc: ids compare as exact JSON values)

  TEST_CASE("request_id_view compares as an exact JSON value: 1 and \"1\" differ (design.md/json-rpc)") {
    static_assert(request_id_view{1} == request_id_view{1});
    static_assert(request_id_view{1} != request_id_view{"1"});
    static_assert(request_id_view{"1"} != request_id_view{1});
    static_assert(request_id_view{std::int64_t{0}} != request_id_view{""});
    static_assert(request_id_view{"a"} == request_id_view{"a"sv});
    static_assert(request_id_view{"a"} != request_id_view{"A"});
    static_assert(request_id_view{-1} != request_id_view{1});
    static_assert(request_id_view{"abc"}.is_string() && !request_id_view{"abc"}.is_integer());
    static_assert(request_id_view{7}.is_integer() && request_id_view{7}.as_integer() == 7);
    static_assert(request_id_view{"xy"}.as_string() == "xy");
    // A string id of the same text from different storage is the same id.
    const std::string owned = "tools-1";
    CHECK(request_id_view{owned} == request_id_view{"tools-1"});
    CHECK(request_id_view{std::numeric_limits<std::int64_t>::min()} ==
          request_id_view{std::numeric_limits<std::int64_t>::min()});
  }

  TEST_CASE("string ids compare after unescaping: \"\\u0041\" equals \"A\" (design.md/json-rpc)") {
    parsed escaped{R"({"jsonrpc":"2.0","id":"\u0041","method":"ping"})"};
    parsed plain{R"({"jsonrpc":"2.0","id":"A","method":"ping"})"};
    parsed integer{R"({"jsonrpc":"2.0","id":65,"method":"ping"})"};
    REQUIRE(escaped.r);
    REQUIRE(plain.r);
    REQUIRE(integer.r);
    REQUIRE(escaped.r->id);
    CHECK(escaped.r->id->is_string());
    CHECK(escaped.r->id->as_string() == "A");
    CHECK(*escaped.r->id == *plain.r->id);
    CHECK(*escaped.r->id == request_id_view{"A"});
    CHECK(*escaped.r->id != *integer.r->id);  // 65 is 'A' in ASCII, but a number is not a string
    CHECK(hash_value(*escaped.r->id) == hash_value(*plain.r->id));

    parsed pair{R"({"jsonrpc":"2.0","id":"\ud83d\ude00 \/","method":"ping"})"};
    REQUIRE(pair.r);
    CHECK(*pair.r->id == request_id_view{"\xF0\x9F\x98\x80 /"});
  }

  TEST_CASE("request_id owns its text and round-trips through its view") {
    SUBCASE("integer") {
      const request_id id = std::int64_t{42};
      CHECK(id.view().is_integer());
      CHECK(id.view().as_integer() == 42);
      CHECK(request_id{id.view()} == id);
      const request_id_view v = id;  // implicit conversion
      CHECK(v == request_id_view{42});
    }
    SUBCASE("integer limits") {
      for (std::int64_t n : {std::numeric_limits<std::int64_t>::min(), std::int64_t{-1}, std::int64_t{0},
                             std::numeric_limits<std::int64_t>::max()}) {
        CAPTURE(n);
        const request_id id{request_id_view{n}};
        CHECK(id.view() == request_id_view{n});
        CHECK(id == request_id{n});
      }
    }
    SUBCASE("string copied out of a view outlives the viewed storage") {
      std::string source = "abc";
      const request_id id{request_id_view{source}};
      source.assign("zzz");
      CHECK(id.view().is_string());
      CHECK(id.view().as_string() == "abc");
      CHECK(id == request_id{std::string{"abc"}});
    }
    SUBCASE("long string (beyond any small-string buffer)") {
      const std::string text(300, 'x');
      const request_id id{std::string{text}};
      CHECK(id.view().as_string() == text);
      CHECK(request_id{id.view()} == id);
    }
    SUBCASE("an id kept from a parsed message survives the document's next parse") {
      json::document doc;
      auto first = parse_message(doc, R"({"jsonrpc":"2.0","id":"keep-\u00e9","method":"ping"})");
      REQUIRE(first);
      REQUIRE(first->id);
      const request_id kept{*first->id};
      auto second = parse_message(doc, R"({"jsonrpc":"2.0","id":"other-id-of-another-length","method":"ping"})");
      REQUIRE(second);
      CHECK(kept.view().as_string() == "keep-\xC3\xA9");
      CHECK(kept.view() != *second->id);
    }
    SUBCASE("integer and string ids of the same digits differ") {
      CHECK(request_id{1} != request_id{std::string{"1"}});
      CHECK(request_id{std::string{""}} != request_id{std::int64_t{0}});
      CHECK(request_id{std::string{"1"}} == request_id{std::string{"1"}});
    }
  }

  TEST_CASE("request_id is a std::unordered_map key, hashes agree with == (design.md/json-rpc)") {
    std::unordered_map<request_id, int> in_flight;
    in_flight.emplace(request_id{1}, 1);
    in_flight.emplace(request_id{std::string{"1"}}, 2);
    in_flight.emplace(request_id{std::numeric_limits<std::int64_t>::max()}, 3);
    in_flight.emplace(request_id{std::numeric_limits<std::int64_t>::min()}, 4);
    in_flight.emplace(request_id{std::string{""}}, 5);
    in_flight.emplace(request_id{std::string{"abc"}}, 6);
    in_flight.emplace(request_id{std::int64_t{0}}, 7);
    CHECK(in_flight.size() == 7);
    // A second insertion of an equal id finds the first.
    CHECK_FALSE(in_flight.emplace(request_id{1}, 99).second);
    CHECK_FALSE(in_flight.emplace(request_id{std::string{"abc"}}, 99).second);

    CHECK(in_flight.at(request_id{1}) == 1);
    CHECK(in_flight.at(request_id{std::string{"1"}}) == 2);
    CHECK(in_flight.at(request_id{std::numeric_limits<std::int64_t>::max()}) == 3);
    CHECK(in_flight.at(request_id{std::numeric_limits<std::int64_t>::min()}) == 4);
    CHECK(in_flight.at(request_id{std::string{""}}) == 5);
    CHECK(in_flight.at(request_id{std::int64_t{0}}) == 7);

    // Keys built from parsed messages (escaped spelling) find the same entries.
    parsed p{R"({"jsonrpc":"2.0","id":"\u0061bc","method":"ping"})"};
    REQUIRE(p.r);
    REQUIRE(p.r->id);
    CHECK(in_flight.at(request_id{*p.r->id}) == 6);
    CHECK(in_flight.count(request_id{2}) == 0);
    CHECK(in_flight.erase(request_id{std::string{"1"}}) == 1);
    CHECK(in_flight.count(request_id{1}) == 1);

    // std::hash of the owning id and of the view agree; equal ids hash equal.
    const std::hash<request_id> owning_hash;
    const std::hash<request_id_view> view_hash;
    const std::string storage = "abc";
    CHECK(owning_hash(request_id{std::string{"abc"}}) == view_hash(request_id_view{storage}));
    CHECK(owning_hash(request_id{std::string{"abc"}}) == view_hash(*p.r->id));
    CHECK(owning_hash(request_id{5}) == view_hash(request_id_view{5}));
    CHECK(hash_value(request_id_view{5}) == view_hash(request_id_view{5}));
    // Integers and strings hash apart (jsonrpc.hpp hash_value).
    CHECK(view_hash(request_id_view{1}) != view_hash(request_id_view{"1"}));

    std::unordered_set<request_id_view> views{request_id_view{1}, request_id_view{"1"}, request_id_view{1}};
    CHECK(views.size() == 2);
  }

  TEST_CASE("write_id writes integers, escaped strings, and null when there is no id") {
    std::string out;
    json::writer w{out};
    w.begin_array();
    write_id(w, request_id_view{-9});
    write_id(w, request_id_view{"a\"b"});
    write_id(w, std::optional<request_id_view>{});
    write_id(w, std::optional<request_id_view>{request_id_view{std::numeric_limits<std::int64_t>::min()}});
    w.end_array();
    CHECK(out == R"([-9,"a\"b",null,-9223372036854775808])");
  }

  // ---------------------------------------------------------------------------------------------
  // Message kinds (JSON-RPC 2.0 §4-§5, docs/design.md#json-rpc)

  TEST_CASE("a request carries method, id and object params, absent params stay absent (design.md/json-rpc)") {
    SUBCASE("with params") {
      parsed p{R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"x":1}}})"};
      REQUIRE(p.r);
      const message& m = *p.r;
      CHECK(m.kind == message_kind::request);
      CHECK(m.method == "tools/call");
      REQUIRE(m.id);
      CHECK(*m.id == request_id_view{7});
      REQUIRE(m.params.exists());
      CHECK(m.params.is_object());
      CHECK(m.params.size() == 2);
      CHECK(m.params["name"].as_string() == "echo");
      CHECK(m.params["arguments"]["x"].to_int64() == std::optional<std::int64_t>{1});
      CHECK_FALSE(m.result.exists());
      CHECK_FALSE(m.error.exists());
      CHECK(m.root.is_object());
      CHECK(m.root.size() == 4);
    }
    SUBCASE("without params") {
      parsed p{R"({"jsonrpc":"2.0","id":"r1","method":"ping"})"};
      REQUIRE(p.r);
      CHECK(p.r->kind == message_kind::request);
      CHECK(p.r->method == "ping");
      CHECK(*p.r->id == request_id_view{"r1"});
      CHECK_FALSE(p.r->params.exists());
    }
    SUBCASE("with empty object params") {
      parsed p{R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}})"};
      REQUIRE(p.r);
      CHECK(p.r->params.exists());
      CHECK(p.r->params.is_object());
      CHECK(p.r->params.size() == 0);
    }
    SUBCASE("unknown members are ignored, member order does not matter") {
      parsed p{R"({"x":[1,{"y":null}],"method":"ping","_meta":{},"id":3,"jsonrpc":"2.0"})"};
      REQUIRE(p.r);
      CHECK(p.r->kind == message_kind::request);
      CHECK(p.r->method == "ping");
      CHECK(*p.r->id == request_id_view{3});
    }
  }

  TEST_CASE("a notification has a method and no id, it is not a request (design.md/json-rpc, http.md/processing-order-on-the-mcp-path)") {
    parsed bare{R"({"jsonrpc":"2.0","method":"notifications/initialized"})"};
    REQUIRE(bare.r);
    CHECK(bare.r->kind == message_kind::notification);
    CHECK(bare.r->method == "notifications/initialized");
    CHECK_FALSE(bare.r->id.has_value());
    CHECK_FALSE(bare.r->params.exists());

    parsed with_params{R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r1"}})"};
    REQUIRE(with_params.r);
    CHECK(with_params.r->kind == message_kind::notification);
    CHECK(with_params.r->params["requestId"].as_string() == "r1");
  }

  TEST_CASE("a response carries an id and a result of any JSON value, null included (JSON-RPC 2.0 §5)") {
    struct row {
      const char* body;
      json::kind result_kind;
    };
    const row rows[] = {
        {R"({"jsonrpc":"2.0","id":1,"result":{"roots":[]}})", json::kind::object},
        {R"({"jsonrpc":"2.0","id":1,"result":null})", json::kind::null},
        {R"({"jsonrpc":"2.0","id":1,"result":[]})", json::kind::array},
        {R"({"jsonrpc":"2.0","id":1,"result":"text"})", json::kind::string},
        {R"({"jsonrpc":"2.0","id":1,"result":0})", json::kind::number},
        {R"({"jsonrpc":"2.0","id":1,"result":false})", json::kind::boolean},
    };
    for (const row& x : rows) {
      INFO("body: " << x.body);
      parsed p{x.body};
      REQUIRE(p.r);
      CHECK(p.r->kind == message_kind::response);
      CHECK(p.r->method.empty());
      CHECK(*p.r->id == request_id_view{1});
      REQUIRE(p.r->result.exists());
      CHECK(p.r->result.kind() == x.result_kind);
      CHECK_FALSE(p.r->error.exists());
      CHECK_FALSE(p.r->params.exists());
    }
  }

  TEST_CASE("an error response carries an error object with integer code and string message (JSON-RPC 2.0 §5.1)") {
    parsed p{R"({"jsonrpc":"2.0","id":"s-1","error":{"code":-32601,"message":"Method not found","data":{"m":"x"}}})"};
    REQUIRE(p.r);
    CHECK(p.r->kind == message_kind::response);
    CHECK(*p.r->id == request_id_view{"s-1"});
    CHECK_FALSE(p.r->result.exists());
    REQUIRE(p.r->error.is_object());
    CHECK(p.r->error["code"].to_int64() == std::optional<std::int64_t>{-32601});
    CHECK(p.r->error["message"].as_string() == "Method not found");
    CHECK(p.r->error["data"]["m"].as_string() == "x");
  }

  TEST_CASE("read_message interprets any parsed value, not only a document's root") {
    json::document doc;
    auto root = doc.parse(R"({"inner":{"jsonrpc":"2.0","id":2,"method":"ping"},"list":[]})");
    REQUIRE(root);
    auto inner = read_message((*root)["inner"]);
    REQUIRE(inner);
    CHECK(inner->kind == message_kind::request);
    CHECK(inner->root.node() == (*root)["inner"].node());
    auto list = read_message((*root)["list"]);
    REQUIRE_FALSE(list);
    CHECK(list.error().code == errc::invalid_request);
    // An absent value (a failed lookup) is not an object.
    auto absent = read_message(json::value{});
    REQUIRE_FALSE(absent);
    CHECK(absent.error().code == errc::invalid_request);
    CHECK(absent.error().message == "Invalid Request: the message must be a JSON object");
    CHECK_FALSE(absent.error().id.has_value());
  }

  // ---------------------------------------------------------------------------------------------
  // Refusals (docs/design.md#json-rpc, JSON-RPC 2.0 §5.1)

  TEST_CASE("every refusal of read_message has its code and exact message (design.md/json-rpc, errors.md/error-codes)") {
    struct row {
      const char* body;
      errc code;
      std::string_view message;
      std::optional<request_id_view> id;
    };
    const row rows[] = {
        // Not a single object.
        {R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])", errc::invalid_request,
         "Invalid Request: batches are not supported; send one message per request", std::nullopt},
        {"[]", errc::invalid_request, "Invalid Request: batches are not supported; send one message per request",
         std::nullopt},
        {R"("ping")", errc::invalid_request, "Invalid Request: the message must be a JSON object", std::nullopt},
        {"42", errc::invalid_request, "Invalid Request: the message must be a JSON object", std::nullopt},
        {"null", errc::invalid_request, "Invalid Request: the message must be a JSON object", std::nullopt},
        {"true", errc::invalid_request, "Invalid Request: the message must be a JSON object", std::nullopt},
        // Ids (docs/errors.md#error-codes: null is invalid; docs/design.md#json-rpc: string or
        // integer).
        {R"({"jsonrpc":"2.0","id":null,"method":"ping"})", errc::invalid_request,
         "Invalid Request: id must not be null", std::nullopt},
        {R"({"jsonrpc":"2.0","id":true,"method":"ping"})", errc::invalid_request,
         "Invalid Request: id must be a string or a signed 64-bit integer", std::nullopt},
        {R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})", errc::invalid_request,
         "Invalid Request: id must be a string or a signed 64-bit integer", std::nullopt},
        // jsonrpc member; a valid id is echoed.
        {R"({"id":1,"method":"ping"})", errc::invalid_request, R"(Invalid Request: jsonrpc must be "2.0")",
         request_id_view{1}},
        {R"({"jsonrpc":"1.0","id":"a","method":"ping"})", errc::invalid_request,
         R"(Invalid Request: jsonrpc must be "2.0")", request_id_view{"a"}},
        {R"({"jsonrpc":2.0,"method":"ping"})", errc::invalid_request, R"(Invalid Request: jsonrpc must be "2.0")",
         std::nullopt},
        {"{}", errc::invalid_request, R"(Invalid Request: jsonrpc must be "2.0")", std::nullopt},
        // method.
        {R"({"jsonrpc":"2.0","id":2,"method":5})", errc::invalid_request, "Invalid Request: method must be a string",
         request_id_view{2}},
        {R"({"jsonrpc":"2.0","method":null})", errc::invalid_request, "Invalid Request: method must be a string",
         std::nullopt},
        {R"({"jsonrpc":"2.0","id":3,"method":"ping","result":{}})", errc::invalid_request,
         "Invalid Request: a message cannot carry both method and result or error", std::nullopt},
        {R"({"jsonrpc":"2.0","id":3,"method":"ping","error":{"code":1,"message":"x"}})", errc::invalid_request,
         "Invalid Request: a message cannot carry both method and result or error", std::nullopt},
        // params (docs/design.md#json-rpc: non-object params for MCP methods are -32602).
        {R"({"jsonrpc":"2.0","id":4,"method":"ping","params":[1]})", errc::invalid_params,
         "Invalid params: params must be an object", request_id_view{4}},
        {R"({"jsonrpc":"2.0","method":"ping","params":[]})", errc::invalid_params,
         "Invalid params: params must be an object", std::nullopt},
        {R"({"jsonrpc":"2.0","id":5,"method":"ping","params":"x"})", errc::invalid_request,
         "Invalid Request: params must be an object", request_id_view{5}},
        {R"({"jsonrpc":"2.0","id":5,"method":"ping","params":null})", errc::invalid_request,
         "Invalid Request: params must be an object", request_id_view{5}},
        {R"({"jsonrpc":"2.0","id":5,"method":"ping","params":3})", errc::invalid_request,
         "Invalid Request: params must be an object", request_id_view{5}},
        // Neither a request nor a response.
        {R"({"jsonrpc":"2.0","id":6})", errc::invalid_request, "Invalid Request: method is missing",
         request_id_view{6}},
        {R"({"jsonrpc":"2.0","id":6,"Method":"ping"})", errc::invalid_request, "Invalid Request: method is missing",
         request_id_view{6}},
        // Responses: a refusal never echoes the id, which belongs to the server's numbering
        // (docs/errors.md#malformed-responses).
        {R"({"jsonrpc":"2.0","result":{}})", errc::invalid_request, "Invalid Request: a response must carry an id",
         std::nullopt},
        {R"({"jsonrpc":"2.0","error":{"code":1,"message":"x"}})", errc::invalid_request,
         "Invalid Request: a response must carry an id", std::nullopt},
        {R"({"jsonrpc":"2.0","id":7,"result":1,"error":{"code":1,"message":"x"}})", errc::invalid_request,
         "Invalid Request: a response carries exactly one of result and error", std::nullopt},
        {R"({"jsonrpc":"2.0","id":8,"error":"boom"})", errc::invalid_request,
         "Invalid Request: error must be an object with an integer code and a string message", std::nullopt},
        {R"({"jsonrpc":"2.0","id":8,"error":{"code":"1","message":"x"}})", errc::invalid_request,
         "Invalid Request: error must be an object with an integer code and a string message", std::nullopt},
        {R"({"jsonrpc":"2.0","id":8,"error":{"code":1.0,"message":"x"}})", errc::invalid_request,
         "Invalid Request: error must be an object with an integer code and a string message", std::nullopt},
        {R"({"jsonrpc":"2.0","id":8,"error":{"code":18446744073709551615,"message":"x"}})", errc::invalid_request,
         "Invalid Request: error must be an object with an integer code and a string message", std::nullopt},
        {R"({"jsonrpc":"2.0","id":8,"error":{"message":"x"}})", errc::invalid_request,
         "Invalid Request: error must be an object with an integer code and a string message", std::nullopt},
        {R"({"jsonrpc":"2.0","id":8,"error":{"code":1}})", errc::invalid_request,
         "Invalid Request: error must be an object with an integer code and a string message", std::nullopt},
        {R"({"jsonrpc":"2.0","id":8,"error":{"code":1,"message":null}})", errc::invalid_request,
         "Invalid Request: error must be an object with an integer code and a string message", std::nullopt},
        {R"({"id":9,"result":{}})", errc::invalid_request, R"(Invalid Request: jsonrpc must be "2.0")", std::nullopt},
    };
    for (const row& x : rows) {
      INFO("body: " << x.body);
      parsed p{x.body};
      REQUIRE_FALSE(p.r);
      const message_error& e = p.r.error();
      CHECK(e.code == x.code);
      CHECK(str(e.message) == str(x.message));
      INFO("id: " << describe(e.id) << ", expected " << describe(x.id));
      CHECK(e.id == x.id);
      if (x.code == errc::invalid_params) {
        CHECK(e.remediation == "pass named parameters in a JSON object; MCP has no positional params");
      } else {
        CHECK(e.remediation == single_message_hint);
      }
    }
  }

  TEST_CASE("id echo policy: a valid id is echoed on later refusals, an invalid id never (design.md/json-rpc)") {
    SUBCASE("valid string id echoed verbatim after unescaping") {
      parsed p{R"({"jsonrpc":"1.0","id":"\u0041-\"q\"","method":"ping"})"};
      REQUIRE_FALSE(p.r);
      REQUIRE(p.r.error().id);
      CHECK(*p.r.error().id == request_id_view{"A-\"q\""});
    }
    SUBCASE("valid integer id echoed on a params refusal") {
      parsed p{R"({"jsonrpc":"2.0","id":-9223372036854775808,"method":"ping","params":[]})"};
      REQUIRE_FALSE(p.r);
      CHECK(p.r.error().id == std::optional<request_id_view>{std::numeric_limits<std::int64_t>::min()});
    }
    SUBCASE("invalid id: no id, even though later members are also wrong") {
      for (const char* body : {R"({"jsonrpc":"1.0","id":{},"method":5})", R"({"id":[1],"method":"ping"})",
                               R"({"jsonrpc":"2.0","id":1e2,"method":"ping","params":[]})",
                               R"({"jsonrpc":"2.0","id":null,"method":"ping"})"}) {
        INFO("body: " << body);
        parsed p{body};
        REQUIRE_FALSE(p.r);
        CHECK(p.r.error().code == errc::invalid_request);
        CHECK_FALSE(p.r.error().id.has_value());
      }
    }
    SUBCASE("text that is not JSON has no id") {
      parsed p{R"({"jsonrpc":"2.0","id":1,"method":"ping")"};
      REQUIRE_FALSE(p.r);
      CHECK(p.r.error().code == errc::parse_error);
      CHECK_FALSE(p.r.error().id.has_value());
    }
    SUBCASE("a repeated member name refuses the whole object, so no id is read") {
      parsed p{R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":1,"a":2}})"};
      REQUIRE_FALSE(p.r);
      CHECK(p.r.error().code == errc::invalid_request);
      CHECK_FALSE(p.r.error().id.has_value());
    }
  }

  TEST_CASE("a refusal of a response-shaped message answers id null, never the response's id (errors.md/malformed-responses)") {
    for (const char* body : {R"({"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}})",
                             R"({"jsonrpc":"2.0","id":1,"error":"boom"})", R"({"jsonrpc":"1.0","id":1,"result":{}})",
                             R"({"jsonrpc":"2.0","id":"s-1","method":"ping","result":{}})"}) {
      INFO("body: " << body);
      parsed p{body};
      REQUIRE_FALSE(p.r);
      CHECK_FALSE(p.r.error().id.has_value());
      std::string out;
      write_error_response(out, p.r.error(), "req-1-1");
      CHECK(out.find(R"("id":null)") != std::string::npos);
    }
  }

  TEST_CASE("ids at the int64 limits are accepted, out-of-range and non-integer ids are refused (design.md/json-rpc)") {
    SUBCASE("limits accepted") {
      parsed max{R"({"jsonrpc":"2.0","id":9223372036854775807,"method":"ping"})"};
      parsed min{R"({"jsonrpc":"2.0","id":-9223372036854775808,"method":"ping"})"};
      parsed zero{R"({"jsonrpc":"2.0","id":0,"method":"ping"})"};
      REQUIRE(max.r);
      REQUIRE(min.r);
      REQUIRE(zero.r);
      CHECK(*max.r->id == request_id_view{std::numeric_limits<std::int64_t>::max()});
      CHECK(*min.r->id == request_id_view{std::numeric_limits<std::int64_t>::min()});
      CHECK(*zero.r->id == request_id_view{std::int64_t{0}});
    }
    SUBCASE("refused as invalid_request without an id") {
      for (std::string_view id : {"9223372036854775808"sv, "18446744073709551615"sv, "1.0"sv, "1e2"sv, "-1.5"sv,
                                  "true"sv, "false"sv, "{}"sv, "[]"sv, "[1]"sv}) {
        INFO("id: " << id);
        const std::string body = R"({"jsonrpc":"2.0","id":)" + str(id) + R"(,"method":"ping"})";
        parsed p{body};
        REQUIRE_FALSE(p.r);
        CHECK(p.r.error().code == errc::invalid_request);
        CHECK(p.r.error().message == "Invalid Request: id must be a string or a signed 64-bit integer");
        CHECK_FALSE(p.r.error().id.has_value());
      }
    }
    SUBCASE("integers beyond 64 bits are refused without an id") {
      // The JSON layer refuses some of these as numbers (-32700) before read_message sees them;
      // either way the message is refused and no id is echoed.
      for (std::string_view id : {"-9223372036854775809"sv, "18446744073709551616"sv, "1e400"sv}) {
        INFO("id: " << id);
        const std::string body = R"({"jsonrpc":"2.0","id":)" + str(id) + R"(,"method":"ping"})";
        parsed p{body};
        REQUIRE_FALSE(p.r);
        CHECK((p.r.error().code == errc::invalid_request || p.r.error().code == errc::parse_error));
        CHECK_FALSE(p.r.error().id.has_value());
      }
    }
  }

  TEST_CASE("JSON-level refusals of parse_message: codes and exact messages (design.md/json-rpc)") {
    struct row {
      std::string body;
      errc code;
      std::string_view message;
    };
    // Far beyond the limit; the exact boundary is tested below and in the conformance data.
    const std::string deep = R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"a":)" + std::string(200, '[') + "1" +
                             std::string(200, ']') + "}}";
    const row rows[] = {
        {"", errc::parse_error, "Parse error: the body holds no JSON value"},
        {" \r\n\t", errc::parse_error, "Parse error: the body holds no JSON value"},
        {R"({"jsonrpc":"2.0","id":1,"method":"ping"} x)", errc::parse_error, "Parse error: invalid JSON"},
        {R"({"jsonrpc":"2.0","id":1,"method":"ping",})", errc::parse_error, "Parse error: invalid JSON"},
        {"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", errc::parse_error,
         "Parse error: invalid JSON"},  // a leading BOM (RFC 8259 §8.1 allows refusing it)
        {"{\"jsonrpc\":\"2.0\",\"id\":\"\xFF\",\"method\":\"ping\"}", errc::parse_error,
         "Parse error: the body is not valid UTF-8"},
        {"{\"jsonrpc\":\"2.0\",\"id\":\"\xC0\xAF\",\"method\":\"ping\"}", errc::parse_error,
         "Parse error: the body is not valid UTF-8"},
        {R"({"jsonrpc":"2.0","id":"\ud800","method":"ping"})", errc::parse_error,
         "Parse error: invalid string (bad escape, lone surrogate or raw control character)"},
        {R"({"jsonrpc":"2.0","id":"\x","method":"ping"})", errc::parse_error,
         "Parse error: invalid string (bad escape, lone surrogate or raw control character)"},
        {"{\"jsonrpc\":\"2.0\",\"id\":\"a\x01\",\"method\":\"ping\"}", errc::parse_error,
         "Parse error: invalid string (bad escape, lone surrogate or raw control character)"},
        {R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"x":1e400}})", errc::parse_error,
         "Parse error: invalid or out-of-range number"},
        {R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"x":01}})", errc::parse_error,
         "Parse error: invalid or out-of-range number"},
        {deep, errc::parse_error, "Parse error: JSON nesting exceeds the server's limit"},
        {R"({"jsonrpc":"2.0","id":1,"id":2,"method":"ping"})", errc::invalid_request,
         "Invalid Request: an object repeats a member name"},
        {R"({"jsonrpc":"2.0","id":1,"\u0069d":1,"method":"ping"})", errc::invalid_request,
         "Invalid Request: an object repeats a member name"},
    };
    json::document doc;  // reused: a refusal must not poison the next parse
    for (const row& x : rows) {
      INFO("body: " << x.body);
      auto r = parse_message(doc, x.body);
      REQUIRE_FALSE(r);
      CHECK(r.error().code == x.code);
      CHECK(str(r.error().message) == str(x.message));
      CHECK_FALSE(r.error().id.has_value());
      CHECK(r.error().remediation == single_message_hint);
      auto ok = parse_message(doc, R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
      CHECK(ok.has_value());
    }
  }

  TEST_CASE("nesting of exactly 128 levels is accepted (json.hpp default_max_depth)") {
    // Root object, params object and 126 arrays: 128 containers enclosing one another, whether
    // the innermost one is empty or holds a scalar. (129 levels: conformance data.)
    for (std::string_view inner : {""sv, "1"sv}) {
      INFO("innermost: [" << inner << "]");
      const std::string body = R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"a":)" + std::string(126, '[') +
                               str(inner) + std::string(126, ']') + "}}";
      parsed p{body};
      REQUIRE(p.r);
      CHECK(p.r->kind == message_kind::request);
    }
  }

  TEST_CASE("a body over the document's size limit is a parse error (design.md/json-rpc)") {
    json::parse_options options;
    options.max_bytes = 16;
    json::document doc{options};
    auto r = parse_message(doc, R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
    REQUIRE_FALSE(r);
    CHECK(r.error().code == errc::parse_error);
    CHECK(r.error().message == "Parse error: the body exceeds the server's JSON size limit");
    CHECK_FALSE(r.error().id.has_value());
  }

  // ---------------------------------------------------------------------------------------------
  // Builders (docs/design.md#json-rpc, docs/errors.md#the-errordata-envelope)

  TEST_CASE("write_result_response writes the exact success envelope (design.md/json-rpc)") {
    SUBCASE("raw result") {
      std::string out;
      write_result_response(out, 7, "{}");
      CHECK(out == R"({"jsonrpc":"2.0","id":7,"result":{}})");
    }
    SUBCASE("string id is escaped, raw result copied verbatim") {
      std::string out;
      write_result_response(out, "a\"b\n", R"({"tools":[],"n":1.50})");
      CHECK(out == R"({"jsonrpc":"2.0","id":"a\"b\n","result":{"tools":[],"n":1.50}})");
    }
    SUBCASE("null and scalar results") {
      std::string out;
      write_result_response(out, std::int64_t{0}, "null");
      CHECK(out == R"({"jsonrpc":"2.0","id":0,"result":null})");
      out.clear();
      write_result_response(out, std::numeric_limits<std::int64_t>::min(), "\"x\"");
      CHECK(out == R"({"jsonrpc":"2.0","id":-9223372036854775808,"result":"x"})");
    }
    SUBCASE("result written by a callback") {
      std::string out;
      write_result_response(out, "r-1", [](json::writer& w) {
        w.begin_object().key("content").begin_array().end_array().member("isError", false).end_object();
      });
      CHECK(out == R"({"jsonrpc":"2.0","id":"r-1","result":{"content":[],"isError":false}})");
    }
    SUBCASE("callback writing a scalar result") {
      std::string out;
      write_result_response(out, 3, [](json::writer& w) { w.value(std::int64_t{42}); });
      CHECK(out == R"({"jsonrpc":"2.0","id":3,"result":42})");
    }
    SUBCASE("builders append to what the string already holds") {
      std::string out = "data: ";
      write_result_response(out, 1, "{}");
      CHECK(out == R"(data: {"jsonrpc":"2.0","id":1,"result":{}})");
      out += "\n";
      write_result_response(out, 2, [](json::writer& w) { w.begin_object().end_object(); });
      CHECK(out == "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}");
    }
  }

  TEST_CASE("write_error_response(error_object) writes data only when there is some (design.md/json-rpc)") {
    SUBCASE("without data") {
      std::string out;
      write_error_response(out, request_id_view{7}, error_object{-32601, "Unknown method: x/y", ""});
      CHECK(out == R"({"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Unknown method: x/y"}})");
    }
    SUBCASE("with data") {
      std::string out;
      write_error_response(out, request_id_view{"q"}, error_object{-32602, "Invalid params", R"({"a":[1,null]})"});
      CHECK(out == R"({"jsonrpc":"2.0","id":"q","error":{"code":-32602,"message":"Invalid params","data":{"a":[1,null]}}})");
    }
    SUBCASE("no id is written as null") {
      std::string out;
      write_error_response(out, std::nullopt, error_object{-32700, "Parse error", ""});
      CHECK(out == R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}})");
    }
    SUBCASE("from make_error, the envelope is always present") {
      error_data d;
      d.correlation_id = "req-1-0";
      std::string out;
      write_error_response(out, request_id_view{1}, make_error(errc::internal_error, "", d));
      CHECK(out == R"({"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error","data":{"correlation_id":"req-1-0","retry_after_ms":null,"remediation":null}}})");
    }
  }

  TEST_CASE("write_error_response(errc) writes the A4 envelope: correlation_id, retry_after_ms, remediation (errors.md/the-errordata-envelope)") {
    SUBCASE("empty message selects the default; absent retry and hint are null") {
      error_data d;
      d.correlation_id = "req-18f3c2a1b07-2a";
      std::string out;
      write_error_response(out, request_id_view{7}, errc::invalid_params, "", d);
      CHECK(out == R"({"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Invalid params","data":{"correlation_id":"req-18f3c2a1b07-2a","retry_after_ms":null,"remediation":null}}})");
    }
    SUBCASE("retry and remediation present") {
      error_data d;
      d.correlation_id = "req-1-2";
      d.retry_after_ms = std::chrono::milliseconds{5000};
      d.remediation = "wait";
      std::string out;
      write_error_response(out, request_id_view{"s"}, errc::stream_cap, "Stream limit reached", d);
      CHECK(out == R"({"jsonrpc":"2.0","id":"s","error":{"code":-32012,"message":"Stream limit reached","data":{"correlation_id":"req-1-2","retry_after_ms":5000,"remediation":"wait"}}})");
    }
    SUBCASE("no id") {
      error_data d;
      d.correlation_id = "req-a-0";
      std::string out;
      write_error_response(out, std::nullopt, errc::unknown_session, "", d);
      CHECK(out == R"({"jsonrpc":"2.0","id":null,"error":{"code":-32007,"message":"Unknown or expired session","data":{"correlation_id":"req-a-0","retry_after_ms":null,"remediation":null}}})");
    }
  }

  TEST_CASE("mcp_disabled (-32005) carries no error.data even when data is given (errors.md/the-errordata-envelope, http.md/processing-order-on-the-mcp-path)") {
    error_data d;
    d.correlation_id = "req-1-1";
    d.retry_after_ms = std::chrono::milliseconds{1000};
    d.remediation = "ask the operator";
    std::string out;
    write_error_response(out, std::nullopt, errc::mcp_disabled, "", d);
    CHECK(out == R"({"jsonrpc":"2.0","id":null,"error":{"code":-32005,"message":"MCP is disabled on this server"}})");

    std::string with_id;
    write_error_response(with_id, request_id_view{4}, errc::mcp_disabled, "disabled", d);
    CHECK(with_id == R"({"jsonrpc":"2.0","id":4,"error":{"code":-32005,"message":"disabled"}})");

    json::document doc;
    auto root = doc.parse(with_id);
    REQUIRE(root);
    CHECK_FALSE((*root)["error"]["data"].exists());
  }

  TEST_CASE("hostile text in message and remediation becomes valid, faithful JSON (design.md/json-out-jsonwriter, errors.md/the-errordata-envelope)") {
    // Quotes, backslash, newline, a C0 control, DEL, a lone continuation byte, a truncated
    // sequence and an encoded surrogate.
    const std::string hostile = "say \"hi\"\\ \n\x01\x1f\x7f \x80|\xE2\x82|\xED\xA0\x80 end";
    // Each maximal ill-formed subpart becomes U+FFFD; ED A0 80 is three (json_writer.hpp).
    const std::string repaired =
        "say \"hi\"\\ \n\x01\x1f\x7f \xEF\xBF\xBD|\xEF\xBF\xBD|\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD end";

    SUBCASE("error_object message") {
      std::string out;
      write_error_response(out, request_id_view{1}, error_object{-32603, hostile, ""});
      CHECK(out == "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32603,\"message\":\"say \\\"hi\\\"\\\\ "
                   "\\n\\u0001\\u001f\x7f \xEF\xBF\xBD|\xEF\xBF\xBD|\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD end\"}}");
      CHECK(json::is_valid_utf8(out));
      json::document doc;
      auto root = doc.parse(out);
      REQUIRE(root);
      CHECK(str((*root)["error"]["message"].as_string()) == repaired);
    }
    SUBCASE("errc message and remediation") {
      error_data d;
      d.correlation_id = "req-1-0";
      d.remediation = hostile;
      std::string out;
      write_error_response(out, request_id_view{hostile}, errc::tier_denied, hostile, d);
      CHECK(json::is_valid_utf8(out));
      json::document doc;
      auto root = doc.parse(out);
      REQUIRE(root);
      CHECK(str((*root)["id"].as_string()) == repaired);
      CHECK(str((*root)["error"]["message"].as_string()) == repaired);
      CHECK(str((*root)["error"]["data"]["remediation"].as_string()) == repaired);
      CHECK((*root)["error"]["code"].to_int64() == std::optional<std::int64_t>{-32004});
    }
  }

  TEST_CASE("the error response of a refused message parses back with code, id and the A4 envelope (errors.md/the-errordata-envelope)") {
    struct row {
      const char* body;
      errc code;
      std::optional<request_id> id;
    };
    const row rows[] = {
        {"{", errc::parse_error, std::nullopt},
        {"[]", errc::invalid_request, std::nullopt},
        {R"({"jsonrpc":"2.0","id":"x\"y","method":7})", errc::invalid_request, request_id{std::string{"x\"y"}}},
        {R"({"jsonrpc":"2.0","id":12,"method":"tools/call","params":[1]})", errc::invalid_params, request_id{12}},
    };
    for (const row& x : rows) {
      INFO("body: " << x.body);
      parsed p{x.body};
      REQUIRE_FALSE(p.r);
      const correlation_id cid = next_correlation_id();
      REQUIRE(is_correlation_id(cid.view()));
      std::string out;
      write_error_response(out, p.r.error(), cid);
      INFO("response: " << out);

      json::document doc;
      auto root = doc.parse(out);
      REQUIRE(root);
      CHECK((*root)["jsonrpc"].as_string() == "2.0");
      if (x.id) {
        REQUIRE((*root)["id"].exists());
        if (x.id->view().is_string()) {
          CHECK((*root)["id"].as_string() == x.id->view().as_string());
        } else {
          CHECK((*root)["id"].to_int64() == std::optional<std::int64_t>{x.id->view().as_integer()});
        }
      } else {
        CHECK((*root)["id"].is_null());
      }
      const json::value error = (*root)["error"];
      CHECK(error["code"].to_int64() == std::optional<std::int64_t>{static_cast<std::int64_t>(x.code)});
      CHECK(error["message"].as_string() == p.r.error().message);
      const json::value data = error["data"];
      REQUIRE(data.is_object());
      REQUIRE(data["correlation_id"].is_string());
      CHECK(is_correlation_id(data["correlation_id"].as_string()));
      CHECK(data["correlation_id"].as_string() == cid.view());
      // Resending the same bytes cannot succeed: retry_after_ms is present and null.
      REQUIRE(data["retry_after_ms"].exists());
      CHECK(data["retry_after_ms"].is_null());
      REQUIRE(data["remediation"].is_string());
      CHECK(data["remediation"].as_string() == p.r.error().remediation);
      CHECK_FALSE(data["remediation"].as_string().empty());
    }
  }

  TEST_CASE("the error response of a refused message has exact bytes") {
    parsed p{"nope"};
    REQUIRE_FALSE(p.r);
    std::string out;
    write_error_response(out, p.r.error(), "req-18f3c2a1b07-2a");
    CHECK(out ==
          R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: invalid JSON","data":{"correlation_id":"req-18f3c2a1b07-2a","retry_after_ms":null,"remediation":"send exactly one JSON-RPC 2.0 message per request: a UTF-8 JSON object with \"jsonrpc\":\"2.0\""}}})");

    parsed q{R"({"jsonrpc":"2.0","id":5,"method":"m","params":[]})"};
    REQUIRE_FALSE(q.r);
    std::string out2;
    write_error_response(out2, q.r.error(), "req-0-0");
    CHECK(out2 ==
          R"({"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"Invalid params: params must be an object","data":{"correlation_id":"req-0-0","retry_after_ms":null,"remediation":"pass named parameters in a JSON object; MCP has no positional params"}}})");
  }

  TEST_CASE("write_notification and write_request write params only when given") {
    std::string out;
    write_notification(out, "notifications/tools/list_changed");
    CHECK(out == R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
    out.clear();
    write_notification(out, "notifications/progress", R"({"progressToken":"t","progress":0.5})");
    CHECK(out == R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":0.5}})");
    out.clear();
    write_request(out, 1, "roots/list");
    CHECK(out == R"({"jsonrpc":"2.0","id":1,"method":"roots/list"})");
    out.clear();
    write_request(out, "srv-1", "sampling/createMessage", R"({"messages":[]})");
    CHECK(out == R"({"jsonrpc":"2.0","id":"srv-1","method":"sampling/createMessage","params":{"messages":[]}})");
    out.clear();
    write_request(out, 2, "we\"ird\n");  // the method is escaped like any string
    CHECK(out == R"({"jsonrpc":"2.0","id":2,"method":"we\"ird\n"})");
  }

  TEST_CASE("every builder's output re-parses as a message of the right kind (round trip)") {
    json::document doc;
    SUBCASE("result response") {
      std::string out;
      write_result_response(out, request_id_view{"rt-1"}, R"({"a":[1,2]})");
      auto r = parse_message(doc, out);
      REQUIRE(r);
      CHECK(r->kind == message_kind::response);
      CHECK(*r->id == request_id_view{"rt-1"});
      CHECK(r->result["a"].size() == 2);
      CHECK_FALSE(r->error.exists());
    }
    SUBCASE("callback result response with a null result") {
      std::string out;
      write_result_response(out, std::numeric_limits<std::int64_t>::max(), [](json::writer& w) { w.null(); });
      auto r = parse_message(doc, out);
      REQUIRE(r);
      CHECK(r->kind == message_kind::response);
      CHECK(*r->id == request_id_view{std::numeric_limits<std::int64_t>::max()});
      CHECK(r->result.is_null());
    }
    SUBCASE("error response with an id, from each overload") {
      error_data d;
      d.correlation_id = "req-1-1";
      std::string a, b, c;
      write_error_response(a, request_id_view{9}, error_object{-32601, "Unknown method: x", ""});
      write_error_response(b, request_id_view{9}, errc::tier_denied, "", d);
      write_error_response(c, message_error{errc::invalid_params, "Invalid params", "hint", request_id_view{9}},
                           "req-2-2");
      for (const std::string* out : {&a, &b, &c}) {
        INFO("body: " << *out);
        auto r = parse_message(doc, *out);
        REQUIRE(r);
        CHECK(r->kind == message_kind::response);
        CHECK(*r->id == request_id_view{9});
        CHECK(r->error.is_object());
        CHECK_FALSE(r->result.exists());
      }
    }
    SUBCASE("error response without an id is not a message a peer may send back (id null, design.md/json-rpc)") {
      std::string out;
      write_error_response(out, std::nullopt, error_object{-32700, "Parse error", ""});
      auto r = parse_message(doc, out);
      REQUIRE_FALSE(r);
      CHECK(r.error().code == errc::invalid_request);
    }
    SUBCASE("notification, with and without params") {
      std::string bare, full;
      write_notification(bare, "notifications/message");
      write_notification(full, "notifications/message", R"({"level":"info","data":"x"})");
      auto r1 = parse_message(doc, bare);
      REQUIRE(r1);
      CHECK(r1->kind == message_kind::notification);
      CHECK(r1->method == "notifications/message");
      CHECK_FALSE(r1->params.exists());
      CHECK_FALSE(r1->id.has_value());
      json::document other;
      auto r2 = parse_message(other, full);
      REQUIRE(r2);
      CHECK(r2->kind == message_kind::notification);
      CHECK(r2->params["level"].as_string() == "info");
    }
    SUBCASE("request, with and without params") {
      std::string bare, full;
      write_request(bare, "p\u00e9-1", "ping");
      write_request(full, -5, "elicitation/create", R"({"message":"?"})");
      auto r1 = parse_message(doc, bare);
      REQUIRE(r1);
      CHECK(r1->kind == message_kind::request);
      CHECK(r1->method == "ping");
      CHECK(*r1->id == request_id_view{"p\u00e9-1"});
      CHECK_FALSE(r1->params.exists());
      json::document other;
      auto r2 = parse_message(other, full);
      REQUIRE(r2);
      CHECK(r2->kind == message_kind::request);
      CHECK(*r2->id == request_id_view{-5});
      CHECK(r2->method == "elicitation/create");
      CHECK(r2->params["message"].as_string() == "?");
    }
  }
}
