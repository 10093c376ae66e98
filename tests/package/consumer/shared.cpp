// SPDX-License-Identifier: Apache-2.0
// Packaging-test consumer of the shared libraries (BUILD_SHARED_LIBS=ON,
// docs/configuration.md#shared-and-static-libraries): plug-ins of the host's own, instantiated in
// this program and called from inside libmcpcore.so and libmcpcore_transport.so, which are built
// with hidden symbols. An authenticator, an audit sink, a tool handler and a host context; one
// tools/call served through `server::handle`, and the same call over HTTP through
// `asio_http_server` on an ephemeral loopback port (once refused 401, once answered).
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/authenticator.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/transport/asio_http_server.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/wire/http.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace {

/// The host's own context of a request, read back by the tool with dynamic_cast.
struct host_session final : mcpcore::host_context {
  explicit host_session(std::string n) : name(std::move(n)) {}
  std::string name;
};

class key_authenticator {
 public:
  std::optional<mcpcore::principal> authenticate(const mcpcore::http_request_view& req) const {
    const auto key = req.header("X-Api-Key");
    if (!key || *key != "consumer-key") return std::nullopt;
    return mcpcore::principal{.id = "api-client", .tier = "operator"};
  }
  mcpcore::credential_verdict revalidate(const mcpcore::principal&) const { return mcpcore::credential_verdict::valid; }
};
static_assert(mcpcore::authenticator<key_authenticator>);

class counting_sink {
 public:
  bool record(const mcpcore::audit_record& r) {
    if (r.target_id == "whoami") calls.fetch_add(1);
    return true;
  }
  std::atomic<int> calls{0};
};
static_assert(mcpcore::audit_sink<counting_sink>);

/// One POST /mcp over loopback; the whole response (Connection: close), or "" on a socket error.
std::string post(std::uint16_t port, std::string_view body, std::string_view extra_header) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return {};
  timeval tv{.tv_sec = 10, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
    std::string req = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                      "\r\nConnection: close\r\nContent-Type: application/json\r\n"
                      "Accept: application/json, text/event-stream\r\n";
    req.append(extra_header).append("Content-Length: ").append(std::to_string(body.size())).append("\r\n\r\n");
    req.append(body);
    if (::send(fd, req.data(), req.size(), 0) == static_cast<ssize_t>(req.size())) {
      char buf[4096];
      for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return out;
}

int fail(const char* what, std::string_view got) {
  std::fprintf(stderr, "consumer_shared: %s: %.*s\n", what, static_cast<int>(got.size()), got.data());
  return 1;
}

}  // namespace

int main() {
  counting_sink audit;
  mcpcore::server_builder b{{.name = "shared-consumer", .version = "1"}};
  b.tool("whoami")
      .description("Says who called, and from which host session.")
      .security("Identity", mcpcore::operation::read)
      .handler([](mcpcore::call_context& ctx, const mcpcore::arguments&) {
        const auto* s = dynamic_cast<const host_session*>(ctx.caller().context.get());
        return mcpcore::tool_result::text(ctx.caller().id + "@" + (s ? s->name : "none"));
      });
  b.audit(audit);
  auto server = b.build();
  if (!server) return fail("build", server.error().message());

  // In process: a principal handed in with the host's context.
  constexpr std::string_view call =
      R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"whoami","arguments":{}}})";
  mcpcore::json::document doc;
  const auto msg = mcpcore::parse_message(doc, call);
  if (!msg) return fail("parse", call);
  const mcpcore::principal alice{.id = "alice", .context = std::make_shared<const host_session>("s-42")};
  std::string out;
  if (!server->handle(*msg, {.caller = alice}, out) || out.find(R"("text":"alice@s-42")") == std::string::npos) {
    return fail("server::handle", out);
  }

  // Over HTTP: the authenticator's model is called from libmcpcore.so, the server runs in
  // libmcpcore_transport.so.
  mcpcore::http_endpoint endpoint{*server, key_authenticator{}};
  mcpcore::transport::asio_http_server http{endpoint, {.port = 0}};
  if (auto started = http.start(); !started) return fail("start", started.error().message());
  const auto refused = post(http.port(), call, "");
  const auto answered = post(http.port(), call, "X-Api-Key: consumer-key\r\n");
  http.stop();
  if (!refused.starts_with("HTTP/1.1 401")) return fail("without the key", refused);
  if (!answered.starts_with("HTTP/1.1 200") || answered.find(R"("text":"api-client@none")") == std::string::npos) {
    return fail("with the key", answered);
  }
  if (http.running()) return fail("stop", "still running");
  if (audit.calls.load() != 2) return fail("audit rows", std::to_string(audit.calls.load()));
  std::puts("consumer_shared: in process and over HTTP, through the shared libraries");
  return 0;
}
