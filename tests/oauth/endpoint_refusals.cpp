// SPDX-License-Identifier: Apache-2.0
// The JWT authenticator behind the HTTP endpoint (docs/oauth.md#what-is-refused,
// docs/oauth.md#the-401-challenge): each refused token class is a 401 with the invalid_token
// challenge pointing at the protected-resource metadata, and a good token is served.
#include <mcpcore/transport/jwt_authenticator.hpp>

#include <doctest/doctest.h>

#include "jwt_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/wire/http.hpp>

#include <cjose/jwk.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using namespace mcpcore_test_oauth;
using mcpcore::transport::jwt_authenticator;

namespace {

struct keys {
  jwk_ptr rsa = make_rsa("rsa-1");
  jwk_ptr unknown = make_rsa("rsa-unknown");  // never published
};
const keys& endpoint_keys() {
  static const keys k;
  return k;
}

constexpr std::string_view initialize_body =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},)"
    R"("clientInfo":{"name":"oauth-test","version":"1"}}})";

/// A server behind an endpoint that authenticates with the JWT authenticator and serves the
/// protected-resource metadata; requests are dispatched inline (no executor).
struct endpoint_fixture {
  mcpcore::manual_clock clock;
  std::shared_ptr<jwks_endpoint> jwks = std::make_shared<jwks_endpoint>();
  std::optional<mcpcore::server> srv;
  std::unique_ptr<mcpcore::http_endpoint> ep;

  endpoint_fixture() {
    jwks->serve(jwks_of({public_jwk(endpoint_keys().rsa.get())}));
    auto o = base_options();
    o.use_clock(mcpcore::clock_ref{clock});
    const jwt_authenticator auth = must_make<jwt_authenticator>(std::move(o), fetcher(jwks));
    mcpcore::server_builder b{{.name = "oauth-endpoint-test", .version = "1"}};
    auto built = b.build();
    REQUIRE(built.has_value());
    srv.emplace(std::move(*built));  // NOLINT(bugprone-unchecked-optional-access): REQUIRE above
    mcpcore::http_endpoint_options eo;
    eo.protected_resource.resource = std::string{audience};
    eo.protected_resource.authorization_servers = {std::string{issuer}};
    eo.protected_resource.scopes_supported = {"mcp:read", "mcp:write"};
    eo.protected_resource.challenge_scope = "mcp:read";
    ep = std::make_unique<mcpcore::http_endpoint>(*srv, auth, eo);
  }

  /// POSTs initialize with `authorization` (none when empty) and returns the reply.
  mcpcore::http_reply post(const std::string& authorization) {
    std::vector<mcpcore::http_header_view> headers{{"Host", "localhost:8765"},
                                                   {"Content-Type", "application/json"},
                                                   {"Accept", "application/json, text/event-stream"}};
    if (!authorization.empty()) headers.push_back({"Authorization", authorization});
    const mcpcore::http_request_view req{.method = "POST", .target = "/mcp", .body = initialize_body, .headers = headers};
    std::optional<mcpcore::http_reply> out;
    ep->handle(req, [&out](mcpcore::http_reply r) { out = std::move(r); });
    REQUIRE(out.has_value());
    return std::move(*out);  // NOLINT(bugprone-unchecked-optional-access): REQUIRE above
  }
  [[nodiscard]] claims good() const { return user_claims(clock.system_now()); }
  [[nodiscard]] std::int64_t now() const { return seconds_of(clock.system_now()); }
};

std::string challenge_of(const mcpcore::http_reply& r) {
  return std::string{r.head.header("WWW-Authenticate").value_or("<absent>")};
}

}  // namespace

TEST_CASE("oauth.md/what-is-refused: behind the endpoint every refused token is 401 with the invalid_token challenge") {
  endpoint_fixture f;
  const cjose_jwk_t* key = endpoint_keys().rsa.get();
  const std::string good = sign(key, "RS256", "rsa-1", f.good().json());
  std::string tampered = good;
  tampered[tampered.find('.') + 5] = tampered[tampered.find('.') + 5] == 'A' ? 'B' : 'A';
  const std::string payload = b64url(f.good().json());
  const std::vector<std::pair<std::string, std::string>> refused{
      {"expired", sign(key, "RS256", "rsa-1", f.good().set("exp", std::to_string(f.now() - 3600)).json())},
      {"not yet valid", sign(key, "RS256", "rsa-1", f.good().set("nbf", std::to_string(f.now() + 3600)).json())},
      {"another audience", sign(key, "RS256", "rsa-1", f.good().set("aud", quoted("https://other.example/mcp")).json())},
      {"another issuer", sign(key, "RS256", "rsa-1", f.good().set("iss", quoted("https://evil.example")).json())},
      {"an unknown key", sign(endpoint_keys().unknown.get(), "RS256", "rsa-unknown", f.good().json())},
      {"alg none", b64url(R"({"alg":"none","typ":"JWT"})") + "." + payload + "."},
      {"a tampered payload", tampered},
  };
  const std::string want =
      R"(Bearer error="invalid_token", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp:read")";
  for (const auto& [what, token] : refused) {
    CAPTURE(what);
    const mcpcore::http_reply r = f.post("Bearer " + token);
    CHECK(r.head.status == 401);
    CHECK(challenge_of(r) == want);
  }
  // Without a token the challenge has no error; with the good one the request is served.
  const mcpcore::http_reply none = f.post("");
  CHECK(none.head.status == 401);
  CHECK(challenge_of(none) ==
        R"(Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp:read")");
  const mcpcore::http_reply served = f.post("Bearer " + good);
  CHECK(served.head.status == 200);
  CHECK(challenge_of(served) == "<absent>");
}
