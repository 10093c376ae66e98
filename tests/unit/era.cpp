// SPDX-License-Identifier: Apache-2.0
// Tests of wire/era.hpp: which eras an endpoint serves and how a revision is classified
// (docs/eras.md#classification, #choosing-the-eras), the per-request `_meta` envelope and the
// order its problems are reported in (docs/eras.md#the-envelope), the client capabilities an input
// request depends on (docs/eras.md#input-requests) and the wire text of the per-request era's
// errors (docs/eras.md#errors, #headers).
#include <mcpcore/wire/era.hpp>

#include <doctest/doctest.h>

#include "support/wire_fixture.hpp"

#include <mcpcore/wire/client_capability.hpp>
#include <mcpcore/wire/error.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>
#include <mcpcore/wire/log_level.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using namespace mcpcore;

namespace {

std::string str(std::string_view s) { return std::string{s}; }

using parsed = wire_fixture::parsed_message;

/// `"key":value` for a `_meta` object; `value_json` is raw JSON.
std::string member(std::string_view key, std::string_view value_json) {
  return "\"" + str(key) + "\":" + str(value_json);
}

/// A tools/list request whose params are `{"_meta":{<members>}}`.
std::string with_meta(const std::vector<std::string>& members) {
  std::string body = R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{)";
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (i != 0) body += ',';
    body += members[i];
  }
  body += "}}}";
  return body;
}

const std::string version_ok = member(meta_key::protocol_version, R"("2026-07-28")");
const std::string caps_ok = member(meta_key::client_capabilities, "{}");

/// What `read_envelope` says of `body`: "ok", or "<key>: <problem>".
std::string verdict(std::string_view body) {
  parsed p{body};
  REQUIRE(p.r.has_value());
  const auto env = read_envelope(*p.r);
  if (env) return "ok";
  return str(env.error().key) + ": " + str(env.error().problem);
}

std::string problem(std::string_view key, std::string_view what) { return str(key) + ": " + str(what); }

/// A parsed error response.
struct answer : wire_fixture::json_object {
  explicit answer(std::string_view text) : json_object{text} { REQUIRE(root["error"].is_object()); }
  [[nodiscard]] json::value error() const { return root["error"]; }
  [[nodiscard]] json::value data() const { return root["error"]["data"]; }
  [[nodiscard]] std::optional<std::int64_t> code() const { return error()["code"].to_int64(); }
  [[nodiscard]] std::string message() const { return str(error()["message"].as_string()); }
};

std::string capabilities(unsigned mask) {
  std::string out;
  write_client_capabilities(out, mask);
  return out;
}

constexpr unsigned bit(client_capability c) { return static_cast<unsigned>(c); }

constexpr client_capability all_capabilities[] = {client_capability::sampling, client_capability::sampling_tools,
                                                  client_capability::elicitation_form,
                                                  client_capability::elicitation_url, client_capability::roots};

/// declares() against the capabilities object `caps_json`.
bool declared(std::string_view caps_json, client_capability c) {
  json::document doc;
  auto r = doc.parse(caps_json);
  REQUIRE(r.has_value());
  return declares(*r, c);
}

/// Checks that each of `declaring` declares `c` and that none of `not_declaring` does.
void check_declares(client_capability c, std::initializer_list<std::string_view> declaring,
                    std::initializer_list<std::string_view> not_declaring) {
  CAPTURE(bit(c));
  for (const std::string_view caps : declaring) {
    CAPTURE(caps);
    CHECK(declared(caps, c));
  }
  for (const std::string_view caps : not_declaring) {
    CAPTURE(caps);
    CHECK_FALSE(declared(caps, c));
  }
}

}  // namespace

TEST_SUITE("era") {
  TEST_CASE("eras.md/choosing-the-eras: serves() maps each served_eras value to the eras it includes") {
    CHECK(serves(served_eras::both, protocol_era::handshake));
    CHECK(serves(served_eras::both, protocol_era::per_request));
    CHECK(serves(served_eras::handshake_only, protocol_era::handshake));
    CHECK_FALSE(serves(served_eras::handshake_only, protocol_era::per_request));
    CHECK_FALSE(serves(served_eras::per_request_only, protocol_era::handshake));
    CHECK(serves(served_eras::per_request_only, protocol_era::per_request));
    static_assert(serves(served_eras::both, protocol_era::per_request));
  }

  TEST_CASE("eras.md/classification: is_per_request_protocol_version names only the served per-request revision") {
    REQUIRE(std::size(per_request_protocol_versions) >= 1);
    CHECK(per_request_protocol_versions[0] == std::string_view{"2026-07-28"});
    CHECK(is_per_request_protocol_version("2026-07-28"));
    CHECK_FALSE(is_per_request_protocol_version("2027-01-01"));
    CHECK_FALSE(is_per_request_protocol_version("v999"));
    CHECK_FALSE(is_per_request_protocol_version("2025-11-25"));
    CHECK_FALSE(is_per_request_protocol_version("2024-11-05"));
    CHECK_FALSE(is_per_request_protocol_version(""));
    CHECK_FALSE(is_per_request_protocol_version("2026-07-28 "));
    CHECK_FALSE(is_per_request_protocol_version("2026-07-2"));
    static_assert(is_per_request_protocol_version("2026-07-28"));
  }

  TEST_CASE("eras.md/classification: names_per_request_era is true at or after 2026-07-28 known or not") {
    CHECK(names_per_request_era("2026-07-28"));
    CHECK(names_per_request_era("2027-01-01"));
    CHECK(names_per_request_era("v999"));
    CHECK(names_per_request_era("2026-07-29"));
    CHECK(names_per_request_era("2026-12-01"));
    CHECK_FALSE(names_per_request_era("2025-11-25"));
    CHECK_FALSE(names_per_request_era("2025-06-18"));
    CHECK_FALSE(names_per_request_era("2024-11-05"));
    CHECK_FALSE(names_per_request_era("2026-07-27"));
    CHECK_FALSE(names_per_request_era(""));
    static_assert(names_per_request_era("2026-07-28") && !names_per_request_era("2025-11-25"));
  }

  TEST_CASE("eras.md/classification: a protocolVersion member of params._meta claims the era whatever its type") {
    const auto claims = [](std::string_view body) {
      parsed p{body};
      REQUIRE(p.r.has_value());
      return claims_per_request_era(*p.r);
    };
    CHECK(claims(with_meta({version_ok, caps_ok})));
    CHECK(claims(with_meta({version_ok})));
    CHECK(claims(with_meta({member(meta_key::protocol_version, "20260728")})));
    CHECK(claims(with_meta({member(meta_key::protocol_version, "null")})));
    CHECK(claims(with_meta({member(meta_key::protocol_version, "{}")})));
    CHECK(claims(with_meta({member(meta_key::protocol_version, R"("2024-11-05")")})));
    // A notification claims it too.
    CHECK(claims(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":{)" + version_ok + "}}}"));

    CHECK_FALSE(claims(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})"));
    CHECK_FALSE(claims(R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}})"));
    CHECK_FALSE(claims(with_meta({})));
    CHECK_FALSE(claims(with_meta({caps_ok, member("progressToken", "1")})));
    CHECK_FALSE(claims(with_meta({member("protocolVersion", R"("2026-07-28")")})));
    // The key outside _meta, or _meta not an object, does not claim.
    CHECK_FALSE(claims(R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{)" + version_ok + "}}"));
    CHECK_FALSE(claims(R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":"x"}})"));
    CHECK_FALSE(claims(R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":[1]}})"));
  }

  TEST_CASE("eras.md/the-envelope: read_envelope refuses a missing or non-string protocolVersion first") {
    const std::string missing = problem(meta_key::protocol_version, "missing");
    const std::string not_string = problem(meta_key::protocol_version, "must be a string");
    CHECK(verdict(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})") == missing);
    CHECK(verdict(R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}})") == missing);
    CHECK(verdict(R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":"x"}})") == missing);
    CHECK(verdict(with_meta({})) == missing);
    // Everything else wrong too: the revision is still reported first.
    CHECK(verdict(with_meta({member(meta_key::client_info, "1"), member(meta_key::log_level, R"("loud")")})) == missing);
    CHECK(verdict(with_meta({caps_ok})) == missing);

    CHECK(verdict(with_meta({member(meta_key::protocol_version, "20260728"), caps_ok})) == not_string);
    CHECK(verdict(with_meta({member(meta_key::protocol_version, "null"), caps_ok})) == not_string);
    CHECK(verdict(with_meta({member(meta_key::protocol_version, R"(["2026-07-28"])")})) == not_string);
    CHECK(verdict(with_meta({member(meta_key::protocol_version, "true")})) == not_string);
  }

  TEST_CASE("eras.md/the-envelope: read_envelope refuses a missing or non-object clientCapabilities second") {
    const std::string missing = problem(meta_key::client_capabilities, "missing");
    const std::string not_object = problem(meta_key::client_capabilities, "must be an object");
    CHECK(verdict(with_meta({version_ok})) == missing);
    CHECK(verdict(with_meta({version_ok, member(meta_key::client_info, "1"), member(meta_key::log_level, "2")})) == missing);
    CHECK(verdict(with_meta({version_ok, member("clientCapabilities", "{}")})) == missing);
    CHECK(verdict(with_meta({version_ok, member(meta_key::client_capabilities, "[]")})) == not_object);
    CHECK(verdict(with_meta({version_ok, member(meta_key::client_capabilities, "null")})) == not_object);
    CHECK(verdict(with_meta({version_ok, member(meta_key::client_capabilities, R"("{}")")})) == not_object);
    CHECK(verdict(with_meta({version_ok, member(meta_key::client_capabilities, "true"),
                             member(meta_key::client_info, "1")})) == not_object);
  }

  TEST_CASE("eras.md/the-envelope: read_envelope refuses a clientInfo that is not an object and then a bad logLevel") {
    const std::string info = problem(meta_key::client_info, "must be an object");
    CHECK(verdict(with_meta({version_ok, caps_ok, member(meta_key::client_info, R"("client")")})) == info);
    CHECK(verdict(with_meta({version_ok, caps_ok, member(meta_key::client_info, "null")})) == info);
    CHECK(verdict(with_meta({version_ok, caps_ok, member(meta_key::client_info, "[]")})) == info);
    CHECK(verdict(with_meta({version_ok, caps_ok, member(meta_key::client_info, "7"),
                             member(meta_key::log_level, R"("loud")")})) == info);

    const std::string not_string = problem(meta_key::log_level, "must be a string");
    const std::string unknown = problem(meta_key::log_level, "unknown log level");
    CHECK(verdict(with_meta({version_ok, caps_ok, member(meta_key::log_level, "3")})) == not_string);
    CHECK(verdict(with_meta({version_ok, caps_ok, member(meta_key::log_level, "null")})) == not_string);
    CHECK(verdict(with_meta({version_ok, caps_ok, member(meta_key::log_level, R"(["debug"])")})) == not_string);
    CHECK(verdict(with_meta({version_ok, caps_ok, member(meta_key::log_level, R"("verbose")")})) == unknown);
    CHECK(verdict(with_meta({version_ok, caps_ok, member(meta_key::log_level, R"("DEBUG")")})) == unknown);
    CHECK(verdict(with_meta({version_ok, caps_ok, member(meta_key::log_level, R"("")")})) == unknown);
    CHECK(verdict(with_meta({version_ok, caps_ok, member(meta_key::log_level, R"("warning ")")})) == unknown);
    CHECK(verdict(with_meta({version_ok, caps_ok, member(meta_key::client_info, "{}"),
                             member(meta_key::log_level, R"("trace")")})) == unknown);
  }

  TEST_CASE("eras.md/the-envelope: a minimal envelope reads with no clientInfo and no log level") {
    parsed p{with_meta({version_ok, caps_ok})};
    REQUIRE(p.r.has_value());
    const auto env = read_envelope(*p.r);
    REQUIRE(env.has_value());
    CHECK(env->protocol_version == std::string_view{"2026-07-28"});
    CHECK(env->client_capabilities.is_object());
    CHECK(env->client_capabilities.size() == 0);
    CHECK_FALSE(env->client_info.exists());
    CHECK_FALSE(env->level.has_value());
  }

  TEST_CASE("eras.md/the-envelope: a full envelope reads clientInfo and capabilities and the log level") {
    parsed p{with_meta({member(meta_key::protocol_version, R"("2099-01-01")"),
                        member(meta_key::client_capabilities, R"({"sampling":{},"roots":{"listChanged":true}})"),
                        member(meta_key::client_info, R"({"name":"probe","version":"1.2.3"})"),
                        member(meta_key::log_level, R"("warning")")})};
    REQUIRE(p.r.has_value());
    const auto env = read_envelope(*p.r);
    REQUIRE(env.has_value());
    // Not a served revision, but a string: the envelope reads (the revision is checked later).
    CHECK(env->protocol_version == std::string_view{"2099-01-01"});
    CHECK(env->client_capabilities["sampling"].is_object());
    CHECK(env->client_capabilities["roots"]["listChanged"].as_bool());
    REQUIRE(env->client_info.is_object());
    CHECK(env->client_info["name"].as_string() == std::string_view{"probe"});
    CHECK(env->client_info["version"].as_string() == std::string_view{"1.2.3"});
    REQUIRE(env->level.has_value());
    CHECK(*env->level == log_level::warning);
  }

  TEST_CASE("eras.md/the-envelope: every level from debug to emergency is a logLevel") {
    const std::pair<std::string_view, log_level> levels[] = {
        {"debug", log_level::debug},     {"info", log_level::info},         {"notice", log_level::notice},
        {"warning", log_level::warning}, {"error", log_level::error},       {"critical", log_level::critical},
        {"alert", log_level::alert},     {"emergency", log_level::emergency}};
    for (const auto& [name, level] : levels) {
      CAPTURE(name);
      parsed p{with_meta({version_ok, caps_ok, member(meta_key::log_level, "\"" + str(name) + "\"")})};
      REQUIRE(p.r.has_value());
      const auto env = read_envelope(*p.r);
      REQUIRE(env.has_value());
      REQUIRE(env->level.has_value());
      CHECK(*env->level == level);
    }
  }

  TEST_CASE("eras.md/the-envelope: unknown _meta keys are ignored and clientInfo may be absent with a logLevel") {
    parsed p{with_meta({member("progressToken", R"("tok-1")"), member("traceparent", R"("00-abc-def-01")"),
                        member("io.modelcontextprotocol/somethingNew", "[1,2,3]"), version_ok,
                        member("io.modelcontextprotocol/protocolVersionX", "5"), caps_ok,
                        member(meta_key::log_level, R"("debug")"), member("clientInfo", "17")})};
    REQUIRE(p.r.has_value());
    CHECK(claims_per_request_era(*p.r));
    const auto env = read_envelope(*p.r);
    REQUIRE(env.has_value());
    CHECK(env->protocol_version == std::string_view{"2026-07-28"});
    CHECK_FALSE(env->client_info.exists());
    REQUIRE(env->level.has_value());
    CHECK(*env->level == log_level::debug);
    // The pass-through keys are still there for whoever reads them.
    CHECK(p.r->params["_meta"]["progressToken"].as_string() == std::string_view{"tok-1"});
  }

  TEST_CASE("eras.md/the-envelope: a claim that is not a string claims the era and is then refused") {
    parsed p{with_meta({member(meta_key::protocol_version, "20260728"), caps_ok})};
    REQUIRE(p.r.has_value());
    CHECK(claims_per_request_era(*p.r));
    const auto env = read_envelope(*p.r);
    REQUIRE_FALSE(env.has_value());
    CHECK(env.error().key == meta_key::protocol_version);
    CHECK(env.error().problem == std::string_view{"must be a string"});
  }

  TEST_CASE("eras.md/input-requests: declares reads sampling and sampling.tools and roots as objects") {
    using enum client_capability;
    check_declares(sampling, {R"({"sampling":{}})", R"({"sampling":{"tools":{}}})"},
                   {R"({"sampling":true})", R"({"sampling":null})", "{}"});
    check_declares(sampling_tools, {R"({"sampling":{"tools":{}}})"},
                   {R"({"sampling":{}})", R"({"sampling":{"tools":true}})", R"({"tools":{}})"});
    check_declares(roots, {R"({"roots":{}})", R"({"roots":{"listChanged":true}})"},
                   {R"({"roots":[]})", R"({"sampling":{},"elicitation":{}})", "{}"});
  }

  TEST_CASE("eras.md/input-requests: declares counts elicitation {} as form and reads form and url") {
    using enum client_capability;
    check_declares(elicitation_form,
                   {R"({"elicitation":{}})", R"({"elicitation":{"form":{}}})",
                    R"({"elicitation":{"form":{},"url":{}}})"},
                   {R"({"elicitation":{"url":{}}})", R"({"elicitation":true})",
                    R"({"elicitation":{"form":true}})", "{}"});
    check_declares(elicitation_url, {R"({"elicitation":{"url":{}}})", R"({"elicitation":{"form":{},"url":{}}})"},
                   {R"({"elicitation":{}})", R"({"elicitation":{"form":{}}})",
                    R"({"elicitation":{"url":true}})", "{}"});
  }

  TEST_CASE("eras.md/input-requests: declares is false for capabilities that are not an object") {
    for (const client_capability c : all_capabilities) {
      CAPTURE(bit(c));
      CHECK_FALSE(declares(json::value{}, c));
      CHECK_FALSE(declared("null", c));
      CHECK_FALSE(declared("[]", c));
      CHECK_FALSE(declared(R"([{"sampling":{},"elicitation":{},"roots":{}}])", c));
      CHECK_FALSE(declared(R"("sampling")", c));
      CHECK_FALSE(declared("1", c));
    }
  }

  TEST_CASE("eras.md/errors: write_client_capabilities writes one capability per bit") {
    CHECK(capabilities(0) == "{}");
    CHECK(capabilities(bit(client_capability::sampling)) == R"({"sampling":{}})");
    CHECK(capabilities(bit(client_capability::sampling_tools)) == R"({"sampling":{"tools":{}}})");
    CHECK(capabilities(bit(client_capability::elicitation_form)) == R"({"elicitation":{"form":{}}})");
    CHECK(capabilities(bit(client_capability::elicitation_url)) == R"({"elicitation":{"url":{}}})");
    CHECK(capabilities(bit(client_capability::roots)) == R"({"roots":{}})");
  }

  TEST_CASE("eras.md/errors: write_client_capabilities combines bits into one object") {
    CHECK(capabilities(bit(client_capability::sampling) | bit(client_capability::sampling_tools)) ==
          R"({"sampling":{"tools":{}}})");
    CHECK(capabilities(bit(client_capability::elicitation_form) | bit(client_capability::elicitation_url)) ==
          R"({"elicitation":{"form":{},"url":{}}})");
    CHECK(capabilities(bit(client_capability::sampling) | bit(client_capability::roots)) ==
          R"({"sampling":{},"roots":{}})");
    CHECK(capabilities(bit(client_capability::elicitation_url) | bit(client_capability::roots)) ==
          R"({"elicitation":{"url":{}},"roots":{}})");
    CHECK(capabilities(0x1fU) == R"({"sampling":{"tools":{}},"elicitation":{"form":{},"url":{}},"roots":{}})");
    // Bits that name no capability are ignored.
    CHECK(capabilities(0xe0U) == "{}");
    CHECK(capabilities(0xe0U | bit(client_capability::roots)) == R"({"roots":{}})");
    // It appends.
    std::string out = "required=";
    write_client_capabilities(out, bit(client_capability::sampling));
    CHECK(out == R"(required={"sampling":{}})");
  }

  TEST_CASE("eras.md/input-requests: what write_client_capabilities writes declares reads back") {
    std::size_t wrong = 0;
    for (unsigned mask = 0; mask < 32; ++mask) {
      const std::string caps = capabilities(mask);
      for (const client_capability c : all_capabilities) {
        bool expected = (mask & bit(c)) != 0;
        if (c == client_capability::sampling && (mask & bit(client_capability::sampling_tools)) != 0) expected = true;
        if (declared(caps, c) != expected) {
          ++wrong;
          MESSAGE("mask " << mask << " capability " << bit(c) << ": " << caps);
        }
      }
    }
    CHECK(wrong == 0);
  }

  TEST_CASE("eras.md/errors: write_envelope_error is -32602 with data.envelope holding key and problem") {
    std::string out;
    write_envelope_error(out, request_id_view{7}, envelope_problem{meta_key::log_level, "unknown log level"},
                         "req-1-2");
    const answer a{out};
    CHECK(a.root["jsonrpc"].as_string() == std::string_view{"2.0"});
    CHECK(a.root["id"].to_int64() == std::optional<std::int64_t>{7});
    CHECK(a.code() == std::optional<std::int64_t>{-32602});
    CHECK(a.message() ==
          "Invalid _meta envelope for the per-request protocol revision: io.modelcontextprotocol/logLevel: unknown log level");
    REQUIRE(a.data().is_object());
    CHECK(a.data()["correlation_id"].as_string() == std::string_view{"req-1-2"});
    CHECK(a.data()["retry_after_ms"].is_null());
    CHECK(a.data()["remediation"].is_string());
    const json::value env = a.data()["envelope"];
    REQUIRE(env.is_object());
    CHECK(env.size() == 2);
    CHECK(env["key"].as_string() == meta_key::log_level);
    CHECK(env["problem"].as_string() == std::string_view{"unknown log level"});
  }

  TEST_CASE("eras.md/errors: write_envelope_error echoes a string id and answers id null when there is none") {
    {
      std::string out;
      write_envelope_error(out, request_id_view{"abc"}, envelope_problem{meta_key::protocol_version, "missing"}, "c-1");
      const answer a{out};
      CHECK(a.root["id"].as_string() == std::string_view{"abc"});
      CHECK(a.data()["envelope"]["key"].as_string() == meta_key::protocol_version);
      CHECK(a.data()["envelope"]["problem"].as_string() == std::string_view{"missing"});
    }
    {
      std::string out;
      write_envelope_error(out, std::nullopt, envelope_problem{meta_key::client_capabilities, "must be an object"},
                           "c-2");
      const answer a{out};
      REQUIRE(a.root["id"].exists());
      CHECK(a.root["id"].is_null());
      CHECK(a.code() == std::optional<std::int64_t>{-32602});
      CHECK(a.data()["correlation_id"].as_string() == std::string_view{"c-2"});
    }
  }

  TEST_CASE("eras.md/errors: write_envelope_error on what read_envelope refused") {
    parsed p{R"({"jsonrpc":"2.0","id":"r-9","method":"tools/call","params":{"_meta":{)" + version_ok + "}}}"};
    REQUIRE(p.r.has_value());
    const auto env = read_envelope(*p.r);
    REQUIRE_FALSE(env.has_value());
    std::string out;
    write_envelope_error(out, p.r->id, env.error(), "req-x");
    const answer a{out};
    CHECK(a.root["id"].as_string() == std::string_view{"r-9"});
    CHECK(a.data()["envelope"]["key"].as_string() == meta_key::client_capabilities);
    CHECK(a.data()["envelope"]["problem"].as_string() == std::string_view{"missing"});
  }

  TEST_CASE("eras.md/errors: write_missing_envelope names the header revision and what is missing") {
    {
      std::string out;
      write_missing_envelope(out, request_id_view{3}, "2026-07-28", false, "req-m-1");
      const answer a{out};
      CHECK(a.root["id"].to_int64() == std::optional<std::int64_t>{3});
      CHECK(a.code() == std::optional<std::int64_t>{-32602});
      CHECK(a.message().find("2026-07-28") != std::string::npos);
      CHECK(a.message().find("envelope") != std::string::npos);
      CHECK(a.data()["correlation_id"].as_string() == std::string_view{"req-m-1"});
      CHECK(a.data()["retry_after_ms"].is_null());
      const json::value missing = a.data()["envelope"]["missing"];
      REQUIRE(missing.is_array());
      REQUIRE(missing.size() == 1);
      CHECK((*missing.elements().begin()).as_string() == std::string_view{"_meta"});
    }
    {
      std::string out;
      write_missing_envelope(out, std::nullopt, "2027-01-01", true, "req-m-2");
      const answer a{out};
      CHECK(a.root["id"].is_null());
      CHECK(a.message().find("2027-01-01") != std::string::npos);
      CHECK(a.data()["correlation_id"].as_string() == std::string_view{"req-m-2"});
      const json::value missing = a.data()["envelope"]["missing"];
      REQUIRE(missing.is_array());
      REQUIRE(missing.size() == 1);
      CHECK((*missing.elements().begin()).as_string() == meta_key::protocol_version);
    }
  }

  TEST_CASE("eras.md/headers: write_header_mismatch is -32020 with data.mismatch holding header and body") {
    std::string out;
    write_header_mismatch(out, request_id_view{"id-1"}, "2025-11-25",
                          "MCP-Protocol-Version 2025-11-25, body 2026-07-28", "req-h-1");
    const answer a{out};
    CHECK(a.root["id"].as_string() == std::string_view{"id-1"});
    CHECK(a.code() == std::optional<std::int64_t>{-32020});
    CHECK(a.message() == str(default_message(errc::header_mismatch)) + ": MCP-Protocol-Version 2025-11-25, body 2026-07-28");
    CHECK(a.data()["correlation_id"].as_string() == std::string_view{"req-h-1"});
    const json::value mismatch = a.data()["mismatch"];
    REQUIRE(mismatch.is_object());
    CHECK(mismatch.size() == 2);
    CHECK(mismatch["header"].as_string() == std::string_view{"2025-11-25"});
    CHECK(mismatch["body"].as_string() == std::string_view{"MCP-Protocol-Version 2025-11-25, body 2026-07-28"});
  }

  TEST_CASE("eras.md/headers: write_header_mismatch with no id and a missing header escapes caller text") {
    std::string out;
    write_header_mismatch(out, std::nullopt, "(missing)", "Mcp-Name \"a\\b\"\n", "req-h-2");
    const answer a{out};
    CHECK(a.root["id"].is_null());
    CHECK(a.code() == std::optional<std::int64_t>{-32020});
    CHECK(a.data()["mismatch"]["header"].as_string() == std::string_view{"(missing)"});
    CHECK(a.data()["mismatch"]["body"].as_string() == std::string_view{"Mcp-Name \"a\\b\"\n"});
    CHECK(a.data()["correlation_id"].as_string() == std::string_view{"req-h-2"});
  }

  TEST_CASE("eras.md/errors: write_unsupported_revision is -32022 with data.supported and data.requested") {
    const std::string_view supported[] = {"2026-07-28"};
    std::string out;
    write_unsupported_revision(out, request_id_view{42}, supported, "2099-01-01", "req-u-1");
    const answer a{out};
    CHECK(a.root["id"].to_int64() == std::optional<std::int64_t>{42});
    CHECK(a.code() == std::optional<std::int64_t>{-32022});
    CHECK(a.message() == "Unsupported protocol version: 2099-01-01");
    CHECK(a.data()["correlation_id"].as_string() == std::string_view{"req-u-1"});
    CHECK(a.data()["remediation"].is_string());
    const json::value list = a.data()["supported"];
    REQUIRE(list.is_array());
    REQUIRE(list.size() == 1);
    CHECK((*list.elements().begin()).as_string() == std::string_view{"2026-07-28"});
    CHECK(a.data()["requested"].as_string() == std::string_view{"2099-01-01"});
  }

  TEST_CASE("eras.md/choosing-the-eras: write_unsupported_revision lists every supported revision and omits an empty requested") {
    const std::string_view supported[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
    std::string out;
    write_unsupported_revision(out, std::nullopt, supported, "", "req-u-2");
    const answer a{out};
    CHECK(a.root["id"].is_null());
    CHECK(a.code() == std::optional<std::int64_t>{-32022});
    CHECK(a.message() == "Unsupported protocol version: the request did not name a protocol version");
    CHECK(a.data()["correlation_id"].as_string() == std::string_view{"req-u-2"});
    const json::value list = a.data()["supported"];
    REQUIRE(list.is_array());
    std::vector<std::string> got;
    for (const json::value v : list.elements()) got.emplace_back(v.as_string());
    CHECK(got == std::vector<std::string>{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"});
    CHECK_FALSE(a.data()["requested"].exists());
  }

  TEST_CASE("eras.md/errors: write_unsupported_revision with nothing supported and an odd requested value stays valid JSON") {
    std::string out;
    write_unsupported_revision(out, request_id_view{"q"}, std::span<const std::string_view>{}, "v\"1\"\t", "req-u-3");
    const answer a{out};
    CHECK(a.root["id"].as_string() == std::string_view{"q"});
    REQUIRE(a.data()["supported"].is_array());
    CHECK(a.data()["supported"].size() == 0);
    CHECK(a.data()["requested"].as_string() == std::string_view{"v\"1\"\t"});
    CHECK(a.message() == "Unsupported protocol version: v\"1\"\t");
  }

  TEST_CASE("eras.md/errors: the per-request codes travel with HTTP 400 and have default messages") {
    static_assert(static_cast<int>(errc::header_mismatch) == -32020);
    static_assert(static_cast<int>(errc::missing_client_capability) == -32021);
    static_assert(static_cast<int>(errc::unsupported_revision) == -32022);
    CHECK(default_http_status(errc::header_mismatch) == 400);
    CHECK(default_http_status(errc::missing_client_capability) == 400);
    CHECK(default_http_status(errc::unsupported_revision) == 400);
    CHECK_FALSE(default_message(errc::header_mismatch).empty());
    CHECK_FALSE(default_message(errc::missing_client_capability).empty());
    CHECK_FALSE(default_message(errc::unsupported_revision).empty());
    CHECK(default_message(errc::header_mismatch) != default_message(errc::unsupported_revision));
    CHECK(default_message(errc::missing_client_capability) != default_message(errc::unsupported_revision));
    CHECK(carries_error_data(errc::header_mismatch));
    CHECK(carries_error_data(errc::missing_client_capability));
    CHECK(carries_error_data(errc::unsupported_revision));
  }
}
