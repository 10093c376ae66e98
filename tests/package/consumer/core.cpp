// SPDX-License-Identifier: Apache-2.0
// Packaging-test consumer of the core: parses a request and answers it through the installed
// headers (directly, or through a shared object that links the static core).
#if defined(CONSUMER_USE_PLUGIN)
#  include "plugin.hpp"

#  include <cstdio>

int main() {
  const int r = consumer_plugin_ping();
  std::printf("plugin: %d\n", r);
  return r;
}
#else
#  include <mcpcore/mcpcore.hpp>

#  include <cstdio>
#  include <string>

#  if defined(CONSUMER_EXPECT_HEADER_ONLY) != defined(MCPCORE_HEADER_ONLY)
#    error "the linked target did not select the expected compile mode"
#  endif

int main() {
  mcpcore::json::document doc;
  const auto msg = mcpcore::parse_message(doc, R"({"jsonrpc":"2.0","id":7,"method":"ping"})");
  if (!msg || msg->method != "ping") return 1;
  std::string out;
  mcpcore::write_result_response(out, *msg->id, "{}");
  std::puts(out.c_str());
  return out == R"({"jsonrpc":"2.0","id":7,"result":{}})" ? 0 : 1;
}
#endif
