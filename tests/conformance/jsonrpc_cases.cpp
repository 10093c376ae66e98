// SPDX-License-Identifier: Apache-2.0
// Data-driven JSON-RPC 2.0 envelope cases (data/jsonrpc_cases.json) run through parse_message.
#include <mcpcore/wire/jsonrpc.hpp>

#include <doctest/doctest.h>

#include <mcpcore/wire/correlation_id.hpp>

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

// The case file is read with simdjson's DOM API directly, so that the expectations do not pass
// through the JSON layer under test. Each case is
//   {"name", "rule", "input" | "input_hex", "expect"}
// where expect is {"kind", "method"?, "id"?, "has_params"?, "has_result"?, "has_error"?} for a
// message that must be accepted, or {"error": <code>, "id": <echoed id or null>} for a refusal.

namespace {

using namespace mcpcore;

/// An expected id: absent (no id / `null` in an error response), an integer, or a string.
struct expected_id {
  enum class type { none, integer, string } kind = type::none;
  std::int64_t integer = 0;
  std::string text;
};

struct rpc_case {
  std::string name;
  std::string rule;
  std::string input;  // raw body bytes
  bool expect_error = false;
  // accepted messages
  std::string kind;
  std::optional<std::string> method;
  std::optional<bool> has_params, has_result, has_error;
  // accepted messages and refusals
  expected_id id;
  // refusals
  std::int64_t code = 0;
};

struct case_file {
  std::vector<rpc_case> cases;
  std::vector<std::string> problems;  // why the file or a case could not be read
};

constexpr std::string_view case_path = MCPCORE_TEST_DATA_DIR "/jsonrpc_cases.json";

std::optional<std::string> decode_hex(std::string_view hex) {
  const auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int hi = nibble(hex[i]);
    const int lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
}

// Reads an id from the case file: `null`/absent is none, otherwise an int64 or a string.
bool read_expected_id(simdjson::dom::element e, expected_id& out) {
  switch (e.type()) {
    case simdjson::dom::element_type::NULL_VALUE: out.kind = expected_id::type::none; return true;
    case simdjson::dom::element_type::INT64:
      out.kind = expected_id::type::integer;
      out.integer = e.get_int64().value_unsafe();
      return true;
    case simdjson::dom::element_type::STRING:
      out.kind = expected_id::type::string;
      out.text = std::string{e.get_string().value_unsafe()};
      return true;
    default: return false;
  }
}

std::optional<bool> read_optional_bool(simdjson::dom::object o, std::string_view key, bool& bad) {
  simdjson::dom::element e;
  if (o.at_key(key).get(e) != simdjson::SUCCESS) return std::nullopt;
  bool b = false;
  if (e.get_bool().get(b) != simdjson::SUCCESS) {
    bad = true;
    return std::nullopt;
  }
  return b;
}

case_file load_cases() {
  case_file file;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto err = parser.load(std::string{case_path}).get(root); err != simdjson::SUCCESS) {
    file.problems.push_back("cannot load " + std::string{case_path} + ": " + simdjson::error_message(err));
    return file;
  }
  simdjson::dom::array cases;
  if (root["cases"].get_array().get(cases) != simdjson::SUCCESS) {
    file.problems.push_back("the case file has no \"cases\" array");
    return file;
  }
  std::size_t index = 0;
  for (simdjson::dom::element ce : cases) {
    rpc_case c;
    const std::string where = "case #" + std::to_string(index++);
    simdjson::dom::object o;
    std::string_view s;
    if (ce.get_object().get(o) != simdjson::SUCCESS) {
      file.problems.push_back(where + ": not an object");
      continue;
    }
    if (o["name"].get_string().get(s) != simdjson::SUCCESS || s.empty()) {
      file.problems.push_back(where + ": no name");
      continue;
    }
    c.name = std::string{s};
    if (o["rule"].get_string().get(s) != simdjson::SUCCESS || s.empty()) {
      file.problems.push_back(c.name + ": no rule");
      continue;
    }
    c.rule = std::string{s};
    if (o["input"].get_string().get(s) == simdjson::SUCCESS) {
      c.input = std::string{s};
    } else if (o["input_hex"].get_string().get(s) == simdjson::SUCCESS) {
      auto bytes = decode_hex(s);
      if (!bytes) {
        file.problems.push_back(c.name + ": input_hex is not hex");
        continue;
      }
      c.input = std::move(*bytes);
    } else {
      file.problems.push_back(c.name + ": neither input nor input_hex");
      continue;
    }
    simdjson::dom::object ex;
    if (o["expect"].get_object().get(ex) != simdjson::SUCCESS) {
      file.problems.push_back(c.name + ": no expect object");
      continue;
    }
    simdjson::dom::element id_e;
    const bool has_id = ex.at_key("id").get(id_e) == simdjson::SUCCESS;
    if (has_id && !read_expected_id(id_e, c.id)) {
      file.problems.push_back(c.name + ": expect.id is neither null, an int64 nor a string");
      continue;
    }
    std::int64_t code = 0;
    if (ex["error"].get_int64().get(code) == simdjson::SUCCESS) {
      c.expect_error = true;
      c.code = code;
      if (!has_id) {
        file.problems.push_back(c.name + ": an error expectation must state the echoed id (or null)");
        continue;
      }
    } else if (ex["kind"].get_string().get(s) == simdjson::SUCCESS &&
               (s == "request" || s == "notification" || s == "response")) {
      c.kind = std::string{s};
      if (ex["method"].get_string().get(s) == simdjson::SUCCESS) c.method = std::string{s};
      bool bad = false;
      c.has_params = read_optional_bool(ex, "has_params", bad);
      c.has_result = read_optional_bool(ex, "has_result", bad);
      c.has_error = read_optional_bool(ex, "has_error", bad);
      if (bad) {
        file.problems.push_back(c.name + ": has_* members must be booleans");
        continue;
      }
      if (has_id && c.id.kind == expected_id::type::none) {
        file.problems.push_back(c.name + ": an accepted message's id is absent, never null");
        continue;
      }
      if (c.kind != "response" && (!c.method || !c.has_params)) {
        file.problems.push_back(c.name + ": a request/notification expectation needs method and has_params");
        continue;
      }
    } else {
      file.problems.push_back(c.name + ": expect has neither an integer error nor a known kind");
      continue;
    }
    file.cases.push_back(std::move(c));
  }
  return file;
}

const case_file& all_cases() {
  static const case_file file = load_cases();
  return file;
}

std::string describe(const std::optional<request_id_view>& id) {
  if (!id) return "(none)";
  if (id->is_string()) return "\"" + std::string{id->as_string()} + "\"";
  return std::to_string(id->as_integer());
}

std::string describe(const expected_id& id) {
  switch (id.kind) {
    case expected_id::type::none: return "(none)";
    case expected_id::type::integer: return std::to_string(id.integer);
    case expected_id::type::string: return "\"" + id.text + "\"";
  }
  return "?";
}

bool same_id(const std::optional<request_id_view>& actual, const expected_id& expected) {
  switch (expected.kind) {
    case expected_id::type::none: return !actual.has_value();
    case expected_id::type::integer: return actual && actual->is_integer() && actual->as_integer() == expected.integer;
    case expected_id::type::string: return actual && actual->is_string() && actual->as_string() == expected.text;
  }
  return false;
}

// The id member of a written error response, compared with the expectation (null = none).
bool same_id(simdjson::dom::element actual, const expected_id& expected) {
  switch (expected.kind) {
    case expected_id::type::none: return actual.is_null();
    case expected_id::type::integer: {
      std::int64_t n = 0;
      return actual.get_int64().get(n) == simdjson::SUCCESS && n == expected.integer;
    }
    case expected_id::type::string: {
      std::string_view s;
      return actual.get_string().get(s) == simdjson::SUCCESS && s == expected.text;
    }
  }
  return false;
}

// JSON-RPC 2.0 §5.1 names each code; mcpcore's messages start with that name.
std::string_view message_prefix(std::int64_t code) {
  switch (code) {
    case -32700: return "Parse error";
    case -32600: return "Invalid Request";
    case -32602: return "Invalid params";
    default: return "";
  }
}

std::string_view kind_name(message_kind k) {
  switch (k) {
    case message_kind::request: return "request";
    case message_kind::notification: return "notification";
    case message_kind::response: return "response";
  }
  return "?";
}

void check_accepted(const rpc_case& c, const result<message, message_error>& r) {
  if (!r) {
    FAIL_CHECK("refused with " << static_cast<int>(r.error().code) << " \"" << std::string{r.error().message}
                               << "\"; expected a " << c.kind);
    return;
  }
  const message& m = *r;
  CHECK(kind_name(m.kind) == c.kind);
  CHECK(m.root.is_object());
  INFO("id: actual " << describe(m.id) << ", expected " << describe(c.id));
  CHECK(same_id(m.id, c.id));
  if (c.kind == "response") {
    CHECK(m.method.empty());
    CHECK_FALSE(m.params.exists());
    CHECK(m.result.exists() != m.error.exists());
    if (c.has_result) CHECK(m.result.exists() == *c.has_result);
    if (c.has_error) CHECK(m.error.exists() == *c.has_error);
    if (m.error.exists()) {
      CHECK(m.error.is_object());
      CHECK(m.error["code"].to_int64().has_value());
      CHECK(m.error["message"].is_string());
    }
  } else {
    CHECK(std::string{m.method} == *c.method);
    CHECK(m.params.exists() == *c.has_params);
    if (m.params.exists()) CHECK(m.params.is_object());
    CHECK_FALSE(m.result.exists());
    CHECK_FALSE(m.error.exists());
    CHECK(m.id.has_value() == (c.kind == "request"));
  }
}

void check_refused(const rpc_case& c, const result<message, message_error>& r) {
  if (r) {
    FAIL_CHECK("accepted as a " << std::string{kind_name(r->kind)} << "; expected error " << c.code);
    return;
  }
  const message_error& e = r.error();
  const std::string text{e.message};
  INFO("message: " << text);
  INFO("id: actual " << describe(e.id) << ", expected " << describe(c.id));
  CHECK(static_cast<std::int64_t>(e.code) == c.code);
  CHECK(same_id(e.id, c.id));
  CHECK(text.starts_with(message_prefix(c.code)));
  CHECK_FALSE(e.remediation.empty());

  // The answer the server would send: valid JSON with the same code and id
  // (docs/design.md#json-rpc).
  const correlation_id cid = next_correlation_id();
  std::string body;
  write_error_response(body, e, cid);
  INFO("response: " << body);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  REQUIRE(parser.parse(body).get(doc) == simdjson::SUCCESS);
  std::string_view jsonrpc;
  CHECK((doc["jsonrpc"].get_string().get(jsonrpc) == simdjson::SUCCESS && jsonrpc == "2.0"));
  simdjson::dom::element id;
  REQUIRE(doc["id"].get(id) == simdjson::SUCCESS);
  CHECK(same_id(id, c.id));
  std::int64_t code = 0;
  CHECK((doc["error"]["code"].get_int64().get(code) == simdjson::SUCCESS && code == c.code));
  std::string_view message;
  CHECK((doc["error"]["message"].get_string().get(message) == simdjson::SUCCESS && message == text));
  std::string_view correlation;
  CHECK((doc["error"]["data"]["correlation_id"].get_string().get(correlation) == simdjson::SUCCESS &&
         correlation == cid.view()));
  CHECK(doc["error"]["data"]["retry_after_ms"].is_null());
}

}  // namespace

TEST_SUITE("jsonrpc conformance") {
  TEST_CASE("the case file loads and holds at least 60 well-formed, uniquely named cases") {
    const case_file& file = all_cases();
    for (const std::string& p : file.problems) FAIL_CHECK(p);
    REQUIRE(file.problems.empty());
    REQUIRE(file.cases.size() >= 60);
    std::set<std::string> names;
    for (const rpc_case& c : file.cases) {
      INFO("case: " << c.name);
      CHECK(names.insert(c.name).second);
    }
  }

  TEST_CASE("every case of jsonrpc_cases.json is answered as its rule says (design.md/json-rpc)") {
    const case_file& file = all_cases();
    REQUIRE(file.problems.empty());
    REQUIRE(file.cases.size() >= 60);
    // One document for every case: reuse must not leak state from one message into the next.
    static json::document doc;
    for (const rpc_case& c : file.cases) {
      SUBCASE(c.name.c_str()) {
        INFO("rule: " << c.rule);
        const auto r = parse_message(doc, c.input);
        if (c.expect_error) {
          check_refused(c, r);
        } else {
          check_accepted(c, r);
        }
      }
    }
  }

  TEST_CASE("the cases give the same answers through one document in file order and in reverse") {
    // Without subcases: one pass each way through a single document, so that a case's answer
    // cannot depend on what the document parsed before it.
    const case_file& file = all_cases();
    REQUIRE(file.cases.size() >= 60);
    json::document forward;
    json::document backward;
    std::vector<std::string> answers;
    const auto answer = [](const result<message, message_error>& r) {
      if (!r) return "error " + std::to_string(static_cast<int>(r.error().code)) + " " + describe(r.error().id);
      return std::string{kind_name(r->kind)} + " " + std::string{r->method} + " " + describe(r->id);
    };
    for (const rpc_case& c : file.cases) answers.push_back(answer(parse_message(forward, c.input)));
    for (std::size_t i = file.cases.size(); i-- > 0;) {
      INFO("case: " << file.cases[i].name);
      CHECK(answer(parse_message(backward, file.cases[i].input)) == answers[i]);
    }
  }
}
