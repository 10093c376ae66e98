// SPDX-License-Identifier: Apache-2.0
// Packaging-test consumer of mcpcore::oauth: a JWT authenticator whose key fetch fails (it starts
// anyway and refuses tokens), and an introspection authenticator that refuses a malformed token.
#include <mcpcore/transport/http_fetch.hpp>
#include <mcpcore/transport/introspection_authenticator.hpp>
#include <mcpcore/transport/jwt_authenticator.hpp>

#include <mcpcore/expected.hpp>

#include <cstdio>
#include <system_error>

int main() {
  namespace t = mcpcore::transport;
  const t::fetch_function unreachable = [](const t::fetch_request&) -> mcpcore::result<t::fetch_response> {
    return mcpcore::fail(mcpcore::error(std::make_error_code(std::errc::host_unreachable), "no network here"));
  };
  t::jwt_authenticator_options jo;
  jo.issuer = "https://as.example";
  jo.audience = "https://mcp.example/mcp";
  jo.jwks_uri = "https://as.example/jwks";
  auto jwt = t::jwt_authenticator::make(jo, unreachable);
  if (!jwt) {
    std::fprintf(stderr, "jwt: %s\n", jwt.error().message().c_str());
    return 1;
  }
  t::introspection_authenticator_options io;
  io.introspection_endpoint = "https://as.example/introspect";
  io.client_id = "mcp";
  io.client_secret = "secret";
  io.issuer = "https://as.example";
  io.audience = "https://mcp.example/mcp";
  auto intro = t::introspection_authenticator::make(io, unreachable);
  if (!intro) {
    std::fprintf(stderr, "introspection: %s\n", intro.error().message().c_str());
    return 1;
  }
  return !jwt->check("not.a-token").has_value() && !intro->check("").has_value() ? 0 : 1;
}
