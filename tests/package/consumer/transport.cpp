// SPDX-License-Identifier: Apache-2.0
// Packaging-test consumer of mcpcore::transport: a token table from text, and a server object.
#include <mcpcore/transport/asio_http_server.hpp>
#include <mcpcore/transport/token_authenticator.hpp>

#include <cstdio>

int main() {
  using mcpcore::transport::token_authenticator;
  auto tokens = token_authenticator::from_text("sha256:" + token_authenticator::token_digest("abc") +
                                               " alice readonly service\n");
  if (!tokens) {
    std::fprintf(stderr, "%s\n", tokens.error().message().c_str());
    return 1;
  }
  mcpcore::transport::asio_http_server srv([](const mcpcore::http_request_view&, mcpcore::http_completion) {});
  return tokens->size() == 1 && !srv.running() ? 0 : 1;
}
