// SPDX-License-Identifier: Apache-2.0
// Tests of mcpcore-host's --oauth-* flags (examples/host_server/oauth_setup.hpp,
// docs/host-server.md#with-an-authorization-server): the scope map, the URLs allowed, the
// discovery of the authorization server's metadata through an injected fetcher, and the
// protected-resource metadata. The run against a real authorization server is
// tests/interop/oauth_flow.mjs.
#include "oauth_setup.hpp"

#include <doctest/doctest.h>

#include <map>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/scopes.hpp>
#include <mcpcore/transport/http_fetch.hpp>
#include <mcpcore/transport/jwt_authenticator.hpp>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace {

using mcpcore::transport::fetch_request;
using mcpcore::transport::fetch_response;
using mcpcore_host::oauth_settings;

/// A fetcher that answers from a table of URL → response and records the URLs asked for; any
/// other URL is a connection failure.
struct table_fetcher {
  std::map<std::string, fetch_response> answers;
  std::vector<std::string>* asked;

  mcpcore::result<fetch_response> operator()(const fetch_request& r) const {
    asked->push_back(r.url);
    if (const auto it = answers.find(r.url); it != answers.end()) return it->second;
    return mcpcore::fail(
        mcpcore::error{std::make_error_code(std::errc::connection_refused), "connection refused"});
  }
};

fetch_response json_200(std::string body) {
  return {.status = 200, .content_type = "application/json", .body = std::move(body)};
}

oauth_settings settings(std::string issuer) {
  oauth_settings s;
  s.issuer = std::move(issuer);
  s.audience = "https://mcp.example.com/mcp";
  return s;
}

}  // namespace

TEST_SUITE("host oauth setup") {
  TEST_CASE(
      "host-server.md#with-an-authorization-server: the default scope map is read, operate, "
      "supervise") {
    const auto map = mcpcore_host::scope_map_of({});
    REQUIRE(map.has_value());
    REQUIRE(map->grants().size() == 3);
    CHECK(map->grants()[0].scope == "mcp:read");
    CHECK(map->grants()[0].tier == "readonly");
    CHECK(map->grants()[1].scope == "mcp:operate");
    CHECK(map->grants()[1].tier == "operator");
    CHECK(map->grants()[2].scope == "mcp:supervise");
    CHECK(map->grants()[2].tier == "supervised");
  }

  TEST_CASE("host-server.md#with-an-authorization-server: --oauth-scope is SCOPE=TIER[:ROLE,...]") {
    const auto g =
        mcpcore_host::parse_scope_grant("https://x.example/approve=supervised:approver,auditor");
    REQUIRE(g.has_value());
    CHECK(g->scope == "https://x.example/approve");
    CHECK(g->tier == "supervised");
    CHECK(g->roles == std::vector<std::string>{"approver", "auditor"});
    const auto roles_only = mcpcore_host::parse_scope_grant("mcp:approve=:approver");
    REQUIRE(roles_only.has_value());
    CHECK(roles_only->tier.empty());
    CHECK(roles_only->roles == std::vector<std::string>{"approver"});

    for (const char* bad : {"mcp:read", "=readonly", "mcp:read=root",
                            "mcp:read=", "mcp:read=readonly:", "mcp:read=readonly:a,,b",
                            "mcp:read=readonly:a,a", "mc\"p=readonly"}) {
      CAPTURE(bad);
      const auto refused = mcpcore_host::parse_scope_grant(bad);
      REQUIRE_FALSE(refused.has_value());
      CHECK(refused.error().find("--oauth-scope") != std::string::npos);
    }
    const auto twice = mcpcore_host::scope_map_of({"a=readonly", "a=operator"});
    REQUIRE_FALSE(twice.has_value());
    CHECK(twice.error().find("listed twice") != std::string::npos);
  }

  TEST_CASE(
      "host-server.md#with-an-authorization-server: plain http only to a loopback host with "
      "--oauth-allow-http") {
    CHECK(mcpcore_host::as_url_problem("https://as.example.com", false, "x").empty());
    CHECK(mcpcore_host::as_url_problem("http://127.0.0.1:9000", true, "x").empty());
    CHECK(mcpcore_host::as_url_problem("http://localhost/tenant", true, "x").empty());
    CHECK(mcpcore_host::as_url_problem("http://[::1]:8080", true, "x").empty());
    CHECK(mcpcore_host::as_url_problem("http://127.0.0.1:9000", false, "x")
              .find("--oauth-allow-http") != std::string::npos);
    CHECK(mcpcore_host::as_url_problem("http://as.example.com", true, "x").find("not loopback") !=
          std::string::npos);
    CHECK(mcpcore_host::as_url_problem("http://127.0.0.1.example.com", true, "x")
              .find("not loopback") != std::string::npos);
    for (const char* bad :
         {"ftp://as.example.com", "https://user@as.example.com", "https://as.example.com/?a=b",
          "https://as.example.com/#f", "https://", "https://as example.com"}) {
      CAPTURE(bad);
      CHECK(mcpcore_host::as_url_problem(bad, true, "x").find("is not an http(s):// URL") !=
            std::string::npos);
    }
  }

  TEST_CASE(
      "host-server.md#with-an-authorization-server: RFC 8414 metadata first, then OpenID "
      "Connect's") {
    CHECK(mcpcore_host::metadata_urls("https://as.example.com") ==
          std::vector<std::string>{"https://as.example.com/.well-known/oauth-authorization-server",
                                   "https://as.example.com/.well-known/openid-configuration"});
    CHECK(mcpcore_host::metadata_urls("https://as.example.com/tenant/") ==
          std::vector<std::string>{
              "https://as.example.com/.well-known/oauth-authorization-server/tenant",
              "https://as.example.com/tenant/.well-known/openid-configuration"});
  }

  TEST_CASE(
      "host-server.md#with-an-authorization-server: the jwks_uri comes from the metadata whose "
      "issuer is the flag's") {
    std::vector<std::string> asked;
    const auto s = settings("https://as.example.com");
    SUBCASE("RFC 8414 answers") {
      const table_fetcher f{
          {{"https://as.example.com/.well-known/oauth-authorization-server",
            json_200(
                R"({"issuer":"https://as.example.com","jwks_uri":"https://as.example.com/jwks"})")}},
          &asked};
      const auto uri = mcpcore_host::discover_jwks_uri(s, f);
      REQUIRE(uri.has_value());
      CHECK(*uri == "https://as.example.com/jwks");
      CHECK(asked.size() == 1);
    }
    SUBCASE("a 404 falls back to OpenID Connect discovery") {
      const table_fetcher f{
          {{"https://as.example.com/.well-known/oauth-authorization-server",
            {.status = 404, .content_type = {}, .body = {}}},
           {"https://as.example.com/.well-known/openid-configuration",
            json_200(
                R"({"issuer":"https://as.example.com","jwks_uri":"https://as.example.com/keys"})")}},
          &asked};
      const auto uri = mcpcore_host::discover_jwks_uri(s, f);
      REQUIRE(uri.has_value());
      CHECK(*uri == "https://as.example.com/keys");
      CHECK(asked.size() == 2);
    }
    SUBCASE("another issuer in the document stops the discovery") {
      const table_fetcher f{
          {{"https://as.example.com/.well-known/oauth-authorization-server",
            json_200(
                R"({"issuer":"https://as.example.com/","jwks_uri":"https://as.example.com/jwks"})")}},
          &asked};
      const auto uri = mcpcore_host::discover_jwks_uri(s, f);
      REQUIRE_FALSE(uri.has_value());
      CHECK(uri.error().find("is not --oauth-issuer") != std::string::npos);
      CHECK(asked.size() == 1);
    }
    SUBCASE("a jwks_uri over plain http to another host is refused") {
      const table_fetcher f{
          {{"https://as.example.com/.well-known/oauth-authorization-server",
            json_200(
                R"({"issuer":"https://as.example.com","jwks_uri":"http://keys.example.com/"})")}},
          &asked};
      const auto uri = mcpcore_host::discover_jwks_uri(s, f);
      REQUIRE_FALSE(uri.has_value());
      CHECK(uri.error().find("the jwks_uri of") != std::string::npos);
    }
    SUBCASE("no jwks_uri") {
      const table_fetcher f{{{"https://as.example.com/.well-known/oauth-authorization-server",
                              json_200(R"({"issuer":"https://as.example.com"})")}},
                            &asked};
      const auto uri = mcpcore_host::discover_jwks_uri(s, f);
      REQUIRE_FALSE(uri.has_value());
      CHECK(uri.error().find("no jwks_uri") != std::string::npos);
    }
    SUBCASE("nothing answers: the message names both URLs") {
      const table_fetcher f{
          {{"https://as.example.com/.well-known/openid-configuration", json_200("[1]")}}, &asked};
      const auto uri = mcpcore_host::discover_jwks_uri(s, f);
      REQUIRE_FALSE(uri.has_value());
      CHECK(uri.error().find(
                "cannot discover the metadata of --oauth-issuer https://as.example.com") !=
            std::string::npos);
      CHECK(uri.error().find("oauth-authorization-server: connection refused") !=
            std::string::npos);
      CHECK(uri.error().find("openid-configuration: the answer is not a JSON object") !=
            std::string::npos);
    }
    SUBCASE("a plain http issuer is not fetched without --oauth-allow-http") {
      const table_fetcher f{{}, &asked};
      const auto uri = mcpcore_host::discover_jwks_uri(settings("http://127.0.0.1:9000"), f);
      REQUIRE_FALSE(uri.has_value());
      CHECK(uri.error().find("--oauth-issuer") != std::string::npos);
      CHECK(asked.empty());
    }
  }

  TEST_CASE(
      "host-server.md#with-an-authorization-server: the authenticator needs an audience and starts "
      "on the discovered keys") {
    std::vector<std::string> asked;
    const table_fetcher f{
        {{"https://as.example.com/.well-known/oauth-authorization-server",
          json_200(
              R"({"issuer":"https://as.example.com","jwks_uri":"https://as.example.com/jwks"})")},
         {"https://as.example.com/jwks", json_200(R"({"keys":[]})")}},
        &asked};
    const auto map = mcpcore_host::scope_map_of({});
    REQUIRE(map.has_value());
    auto s = settings("https://as.example.com");
    s.audience.clear();
    const auto refused = mcpcore_host::make_oauth_authenticator(s, *map, f);
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().find("--oauth-audience") != std::string::npos);
    CHECK(asked.empty());

    s.audience = "https://mcp.example.com/mcp";
    const auto made = mcpcore_host::make_oauth_authenticator(s, *map, f);
    REQUIRE(made.has_value());
    CHECK(made->stats().fetches == 1);
    CHECK(asked.back() == "https://as.example.com/jwks");
    const auto checked = made->check("a.b.c");
    REQUIRE_FALSE(checked.has_value());
    CHECK(checked.error() == mcpcore::transport::jwt_refusal::malformed);
  }

  TEST_CASE(
      "host-server.md#with-an-authorization-server: the protected-resource metadata names the "
      "audience, issuer and scopes") {
    const auto map = mcpcore_host::scope_map_of({"mcp:read=readonly", "mcp:write=operator"});
    REQUIRE(map.has_value());
    const auto pr = mcpcore_host::protected_resource_of(settings("https://as.example.com"), *map);
    CHECK(pr.resource == "https://mcp.example.com/mcp");
    CHECK(pr.authorization_servers == std::vector<std::string>{"https://as.example.com"});
    CHECK(pr.scopes_supported == std::vector<std::string>{"mcp:read", "mcp:write"});
    CHECK(pr.challenge_scope == "mcp:read");
  }
}
