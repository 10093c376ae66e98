// SPDX-License-Identifier: Apache-2.0
// Tests of the protected-resource metadata the HTTP endpoint serves and of its 401 challenge
// (docs/oauth.md#protected-resource-metadata, docs/oauth.md#the-401-challenge; RFC 9728, RFC 6750).
#include <mcpcore/transport/http_endpoint.hpp>

#include <doctest/doctest.h>

#include "support/http_endpoint_fixture.hpp"
#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/wire/json.hpp>

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

using namespace mcpcore;
using namespace http_endpoint_fixture;
namespace fx = server_fixture;

namespace {

protected_resource_options example_resource() {
  protected_resource_options o;
  o.resource = "https://mcp.example.test/mcp";
  o.authorization_servers = {"https://auth.example.test"};
  o.scopes_supported = {"mcp:read", "mcp:operate"};
  o.challenge_scope = "mcp:read";
  o.resource_name = "Example MCP";
  return o;
}

struct fixture : endpoint_harness {
  explicit fixture(const std::function<void(http_endpoint_options&)>& tweak) {
    server_info info;
    info.name = "resource-metadata-test";
    info.version = "1.0.0";
    server_builder b{info};
    serve(b, tweak);
  }
};

std::vector<std::string> strings(json::value array) {
  std::vector<std::string> out;
  for (const json::value v : array.elements()) out.push_back(fx::str(v));
  return out;
}

request get_path(std::string target) {
  request r;
  r.method = "GET";
  r.target = std::move(target);
  r.set("Host", "localhost:8765");
  return r;
}

}  // namespace

TEST_CASE("oauth.md/protected-resource-metadata: the document is served at the well-known path and at it with the resource's path") {
  fixture f{[](http_endpoint_options& o) { o.protected_resource = example_resource(); }};
  for (const char* target : {"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"}) {
    CAPTURE(target);
    const http_reply r = f.send(get_path(target));
    REQUIRE(r.head.status == 200);
    CHECK(header_of(r, "Content-Type") == "application/json");
    CHECK(header_of(r, "Access-Control-Allow-Origin") == "*");
    const auto doc = body_of(r);
    CHECK(fx::str(doc.root["resource"]) == "https://mcp.example.test/mcp");
    CHECK(strings(doc.root["authorization_servers"]) == std::vector<std::string>{"https://auth.example.test"});
    CHECK(strings(doc.root["scopes_supported"]) == std::vector<std::string>{"mcp:read", "mcp:operate"});
    CHECK(strings(doc.root["bearer_methods_supported"]) == std::vector<std::string>{"header"});
    CHECK(fx::str(doc.root["resource_name"]) == "Example MCP");
  }
  CHECK(f.ep->matches("/.well-known/oauth-protected-resource/mcp"));
  // Another suffix is not this resource's document.
  CHECK(f.send(get_path("/.well-known/oauth-protected-resource/other")).head.status == 404);
  CHECK_FALSE(f.ep->matches("/.well-known/oauth-protected-resource/other"));
}

TEST_CASE("oauth.md/protected-resource-metadata: it needs no credential, is refused for a foreign Host, and answers only GET and its preflight") {
  fixture f{[](http_endpoint_options& o) { o.protected_resource = example_resource(); }};
  request r = get_path("/.well-known/oauth-protected-resource/mcp");
  r.set("Authorization", "Bearer not-a-token");  // ignored: the document is public
  CHECK(f.send(r).head.status == 200);
  request foreign = get_path("/.well-known/oauth-protected-resource/mcp");
  foreign.set("Host", "evil.example:8765");
  CHECK(f.send(foreign).head.status == 403);
  request post_it = get_path("/.well-known/oauth-protected-resource/mcp");
  post_it.method = "POST";
  const http_reply refused = f.send(post_it);
  CHECK(refused.head.status == 405);
  CHECK(header_of(refused, "Allow") == "GET, OPTIONS");
  request preflight = get_path("/.well-known/oauth-protected-resource");
  preflight.method = "OPTIONS";
  const http_reply pre = f.send(preflight);
  CHECK(pre.head.status == 204);
  CHECK(header_of(pre, "Access-Control-Allow-Origin") == "*");
  CHECK(header_of(pre, "Access-Control-Allow-Headers") == "MCP-Protocol-Version");
  // check_head says the same before any body is read; the preflight passes to handle.
  CHECK_FALSE(f.ep->check_head(r.view()).has_value());
  CHECK_FALSE(f.ep->check_head(preflight.view()).has_value());
  const std::optional<http_response> head405 = f.ep->check_head(post_it.view());
  REQUIRE(head405.has_value());
  CHECK(head405->status == 405);  // NOLINT(bugprone-unchecked-optional-access): REQUIRE above
}

TEST_CASE("oauth.md/the-401-challenge: it points at the served document, names the scope, and says invalid_token only when a token was presented") {
  fixture f{[](http_endpoint_options& o) { o.protected_resource = example_resource(); }};
  const http_reply bad = f.send(post(fx::request(1, "ping"), {}, "wrong"));
  CHECK(bad.head.status == 401);
  CHECK(header_of(bad, "WWW-Authenticate") ==
        R"(Bearer error="invalid_token", resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource/mcp", scope="mcp:read")");
  request none = post(fx::request(1, "ping"));
  none.drop("Authorization");
  CHECK(header_of(f.send(none), "WWW-Authenticate") ==
        R"(Bearer resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource/mcp", scope="mcp:read")");
  // A resource at the root has no suffixed form; a configured URL wins over the derived one.
  fixture root{[](http_endpoint_options& o) {
    o.protected_resource = example_resource();
    o.protected_resource.resource = "https://mcp.example.test/";
    o.protected_resource.challenge_scope.clear();
  }};
  CHECK(header_of(root.send(none), "WWW-Authenticate") ==
        R"(Bearer resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource")");
  fixture configured{[](http_endpoint_options& o) {
    o.protected_resource = example_resource();
    o.resource_metadata_url = "https://elsewhere.example.test/prm";
  }};
  CHECK(header_of(configured.send(none), "WWW-Authenticate") ==
        R"(Bearer resource_metadata="https://elsewhere.example.test/prm", scope="mcp:read")");
}

TEST_CASE("oauth.md/protected-resource-metadata: off by default, and the constructor refuses what it cannot serve") {
  fixture off{[](http_endpoint_options&) {}};
  CHECK(off.send(get_path("/.well-known/oauth-protected-resource")).head.status == 404);
  CHECK_FALSE(off.ep->matches("/.well-known/oauth-protected-resource"));
  const auto refuses = [](const std::function<void(protected_resource_options&)>& spoil) {
    server_info info;
    info.name = "x";
    info.version = "1";
    server_builder b{info};
    server s = fx::build(b);
    http_endpoint_options o;
    o.protected_resource = example_resource();
    spoil(o.protected_resource);
    bool threw = false;
    try {
      http_endpoint ep{s, two_principals{}, o};
    } catch (const std::invalid_argument&) {
      threw = true;
    }
    return threw;
  };
  CHECK(refuses([](protected_resource_options& o) { o.resource = "mcp.example.test/mcp"; }));
  CHECK(refuses([](protected_resource_options& o) { o.resource = "https://mcp.example.test/mcp#frag"; }));
  CHECK(refuses([](protected_resource_options& o) { o.resource = "https://mcp.example.test/mcp?x=1"; }));
  CHECK(refuses([](protected_resource_options& o) { o.resource = "https://user@mcp.example.test/mcp"; }));
  CHECK(refuses([](protected_resource_options& o) { o.resource = "https:///mcp"; }));
  CHECK(refuses([](protected_resource_options& o) { o.authorization_servers.clear(); }));
  CHECK(refuses([](protected_resource_options& o) { o.authorization_servers = {"ftp://auth.example.test"}; }));
  CHECK(refuses([](protected_resource_options& o) { o.scopes_supported = {"has space"}; }));
  CHECK(refuses([](protected_resource_options& o) { o.challenge_scope = "a  b"; }));
  CHECK(refuses([](protected_resource_options& o) { o.resource_name = "line\nbreak"; }));
  CHECK(refuses([](protected_resource_options& o) { o.resource.clear(); }));  // servers without a resource
  CHECK_FALSE(refuses([](protected_resource_options& o) { o.challenge_scope = "a b"; }));
}
