// SPDX-License-Identifier: Apache-2.0
#include "plugin.hpp"

#include <mcpcore/mcpcore.hpp>

#include <string>

int consumer_plugin_ping() {
  mcpcore::server_builder b{{.name = "plugin", .version = "1"}};
  auto srv = b.build();
  if (!srv) return 2;
  mcpcore::json::document doc;
  const auto msg = mcpcore::parse_message(doc, R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
  return msg && msg->method == "ping" ? 0 : 1;
}
