// SPDX-License-Identifier: Apache-2.0
// Plug-ins of the host's own (examples/README.md, step 4; docs/plugins.md): an authenticator that
// reads an `X-Api-Key` header and an audit sink that appends JSON lines to a file, both models of
// mcpcore's concepts, wired into a server and Streamable HTTP on 127.0.0.1.
//
// Usage: mcpcore-custom-plugins <audit.jsonl> [port]   (port 0, the default, picks a free one)
// Prints "listening on 127.0.0.1:<port>" on stdout once bound, then serves until stdin ends.
// The key is read from the environment variable MCPCORE_EXAMPLE_API_KEY (it never appears on a
// command line). examples/custom_plugins/check_custom_plugins.sh runs it.
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/authenticator.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/transport/asio_http_server.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/wire/http.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace {

/// One API key, one principal (docs/concepts/authenticator.md has a fuller model: many keys,
/// revocation). The comparison reads every byte of the key whatever the given one holds.
class api_key_authenticator {
 public:
  api_key_authenticator(std::string key, mcpcore::principal who) : key_(std::move(key)), who_(std::move(who)) {}

  std::optional<mcpcore::principal> authenticate(const mcpcore::http_request_view& req) const {
    const auto given = req.header("X-Api-Key");
    if (!given || req.header_repeated("X-Api-Key") || !same_secret(*given)) return std::nullopt;
    return who_;
  }
  /// A held-open stream re-checks its principal here (docs/sessions.md#credential-re-validation).
  mcpcore::credential_verdict revalidate(const mcpcore::principal& p) const {
    return p.id == who_.id ? mcpcore::credential_verdict::valid : mcpcore::credential_verdict::revoked;
  }

 private:
  bool same_secret(std::string_view given) const noexcept {
    unsigned diff = key_.size() == given.size() ? 0U : 1U;
    for (std::size_t i = 0; i < key_.size(); ++i) {
      const char g = i < given.size() ? given[i] : '\0';
      diff |= static_cast<unsigned>(static_cast<unsigned char>(key_[i]) ^ static_cast<unsigned char>(g));
    }
    return diff == 0U;
  }
  std::string key_;
  mcpcore::principal who_;
};
static_assert(mcpcore::authenticator<api_key_authenticator>);

/// Appends each audit row as one JSON line (the format of `append_audit_json`) and flushes it.
class jsonl_file_sink {
 public:
  explicit jsonl_file_sink(std::FILE* f) noexcept : file_(f) {}
  bool record(const mcpcore::audit_record& r) {
    std::string line;
    mcpcore::append_audit_json(line, r);  // copies: the record's views die after this call
    line.push_back('\n');
    const std::lock_guard lock{mutex_};  // called from many threads at once
    return std::fwrite(line.data(), 1, line.size(), file_) == line.size() && std::fflush(file_) == 0;
  }

 private:
  std::mutex mutex_;
  std::FILE* file_;
};
static_assert(mcpcore::audit_sink<jsonl_file_sink>);

}  // namespace

int main(int argc, char** argv) {
  const char* key = std::getenv("MCPCORE_EXAMPLE_API_KEY");  // NOLINT(concurrency-mt-unsafe): before any thread
  if (argc < 2 || argc > 3 || key == nullptr || *key == '\0') {
    std::fprintf(stderr, "usage: MCPCORE_EXAMPLE_API_KEY=<key> %s <audit.jsonl> [port]\n", argv[0]);
    return 2;
  }
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> audit_file{std::fopen(argv[1], "a"), &std::fclose};
  if (!audit_file) {
    std::perror(argv[1]);
    return 1;
  }
  const auto port = static_cast<std::uint16_t>(argc == 3 ? std::strtoul(argv[2], nullptr, 10) : 0);

  jsonl_file_sink audit{audit_file.get()};
  mcpcore::server_builder b{{.name = "custom-plugins", .version = "1.0.0"}};
  b.tool("whoami")
      .description("Says who the server authenticated.")
      .security("Identity", mcpcore::operation::read)
      .effect(mcpcore::tool_effect::read_only, /*idempotent=*/true)
      .handler([](mcpcore::call_context& ctx, const mcpcore::arguments&) {
        return mcpcore::tool_result::text("you are " + ctx.caller().id);
      });
  b.audit(audit);  // the sink outlives the server: declared before it
  auto server = b.build();
  if (!server) {
    std::fprintf(stderr, "custom-plugins: %s\n", server.error().message().c_str());
    return 1;
  }
  mcpcore::http_endpoint endpoint{*server, api_key_authenticator{key, {.id = "api-client", .tier = "operator"}}};
  mcpcore::transport::asio_http_server http{endpoint, {.port = port}};
  if (auto started = http.start(); !started) {
    std::fprintf(stderr, "custom-plugins: %s\n", started.error().message().c_str());
    return 1;
  }
  std::printf("listening on 127.0.0.1:%u\n", static_cast<unsigned>(http.port()));
  std::fflush(stdout);
  while (std::getchar() != EOF) {
  }
  http.stop();
  return 0;
}
