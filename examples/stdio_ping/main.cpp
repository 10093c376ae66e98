// SPDX-License-Identifier: Apache-2.0
// The smallest mcpcore program: newline-delimited JSON-RPC on stdin/stdout that answers ping.
//
// Every line is one message. `ping` is answered with `{}`, any other request with -32601 and
// the error.data envelope; notifications and responses get no answer (JSON-RPC 2.0); malformed
// lines get the error the wire layer chose. Lines longer than --max-line bytes are refused
// without being buffered. Diagnostics go to stderr, as MCP's stdio transport requires.
#include <mcpcore/wire/correlation_id.hpp>
#include <mcpcore/wire/error.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace {

/// Longest message line accepted, in bytes (the HTTP transport's body cap,
/// docs/http.md#processing-order-on-the-mcp-path).
constexpr std::size_t default_max_line = std::size_t{4} << 20;

void answer(std::string_view line, mcpcore::json::document& doc, std::string& out) {
  using namespace mcpcore;
  const auto msg = parse_message(doc, line);
  if (!msg) {
    write_error_response(out, msg.error(), next_correlation_id().view());
    return;
  }
  const message& m = *msg;
  if (m.kind != message_kind::request || !m.id) return;  // a request always has an id
  if (m.method == "ping") {
    write_result_response(out, *m.id, "{}");
    return;
  }
  const std::string text = "Unknown method: " + std::string{m.method};
  const auto cid = next_correlation_id();
  write_error_response(out, m.id, errc::method_not_found, text, error_data{.correlation_id = cid.view()});
}

void refuse_long_line(std::string& out, std::size_t max_line) {
  using namespace mcpcore;
  const auto cid = next_correlation_id();
  const std::string text = "Invalid Request: the message exceeds " + std::to_string(max_line) + " bytes";
  write_error_response(out, std::nullopt, errc::invalid_request, text,
                       error_data{.correlation_id = cid.view(), .remediation = "send a shorter message"});
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t max_line = default_max_line;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--max-line" && i + 1 < argc) {
      max_line = std::strtoull(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: %s [--max-line BYTES]\n", argv[0]);
      return 2;
    }
  }
  std::fprintf(stderr, "mcpcore-stdio-ping: reading newline-delimited JSON-RPC on stdin (max %zu bytes per line)\n",
               max_line);

  mcpcore::json::document doc;
  std::string line, out;
  bool overlong = false;
  int c;
  const auto finish_line = [&] {
    out.clear();
    if (overlong) {
      refuse_long_line(out, max_line);
    } else if (line.find_first_not_of(" \t\r") != std::string::npos) {
      answer(line, doc, out);
    }
    if (!out.empty()) {
      out.push_back('\n');
      std::fwrite(out.data(), 1, out.size(), stdout);
      std::fflush(stdout);
    }
    line.clear();
    overlong = false;
  };
  while ((c = std::getchar()) != EOF) {
    if (c == '\n') {
      finish_line();
    } else if (!overlong) {
      if (line.size() == max_line) {
        overlong = true;  // keep reading to the newline, holding nothing
        line.clear();
        line.shrink_to_fit();
      } else {
        line.push_back(static_cast<char>(c));
      }
    }
  }
  if (!line.empty() || overlong) finish_line();
  return 0;
}
