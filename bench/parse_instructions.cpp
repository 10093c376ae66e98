// SPDX-License-Identifier: Apache-2.0
// Parses the benchmark's tools/call request N times with one of three parsers, or dispatches
// bench_dispatch.cpp's echo tools/call N times, for counting instructions under
// `valgrind --tool=callgrind` (deterministic, unlike timings on a shared machine;
// docs/performance.md).
// Usage: mcpcore_parse_instructions <none|simdjson|document|message|dispatch|dispatch_parse|publish|publish_setup|
//                                    endpoint2025|endpoint2026|endpoint_setup> [N]
//
// `dispatch` builds BM_dispatch_tools_call's server (open tier policy, allow-all RBAC, null audit,
// a metrics registry) and sends it the echo tools/call N times (parse_message, then
// server::handle); it prints how many answers were the expected bytes. `dispatch_parse` builds the
// same server but only parses the same request N times (it prints N), so that
// dispatch - dispatch_parse is server::handle (plus the output check) and dispatch N - dispatch 0
// the whole call.
//
// `publish` publishes bench_session.cpp's 218-byte progress frame N times with
// session_stream::publish_ring_only (a ring at its default bounds, so that eviction runs once it
// is full) and prints how many got an id; `publish_setup` builds the same stream and frame and
// publishes nothing, so that publish N - publish_setup N is N ring publishes.
//
// `endpoint2025` and `endpoint2026` send the HTTP load benchmark's echo tools/call N times through
// the whole sans-I/O endpoint (`http_endpoint::handle`), over the same echo server as `dispatch`,
// with bench/http/echo_server.cpp's endpoint (default options, a fixed authenticator answering the
// service principal "bench", the metrics registry bound with set_metrics) and an inline executor
// (bound with bind_executor; it runs each submitted task on the calling thread before returning
// true, so every reply is delivered before handle() returns). Every request is a POST to /mcp
// from 127.0.0.1:50000 to 127.0.0.1:8765 (so the loopback Host check runs) with a `disconnected`
// stop token that can be signalled (as asio_http_server's per-connection one) and never is.
//   endpoint2025: the handshake era, as bench/http/echo.lua after run.sh's open_session: one
//     session opened first (initialize + notifications/initialized, setup, not counted), then N
//     POSTs with Host, Content-Type, Accept: application/json, text/event-stream,
//     MCP-Protocol-Version: 2025-11-25 and Mcp-Session-Id; ids 1..N.
//   endpoint2026: the per-request era, as bench/http/echo2026.lua: no session; N POSTs with Host,
//     Content-Type, Accept, MCP-Protocol-Version: 2026-07-28, Mcp-Method: tools/call and
//     Mcp-Name: echo, the body's params._meta carrying the protocol version and
//     clientCapabilities {}; ids 1..N.
//   endpoint_setup: builds the same server and endpoint and opens the session, sends nothing,
//     and prints 1 (the session is open): what endpoint2025 N spends besides its N calls
//     (endpoint2026 0 is the build without the session).
// Each prints how many replies were right: status 200, no stream, and a body that is
// `{"jsonrpc":"2.0","id":<the id>,"result":{"content":[{"type":"text","text":"hello"}]` followed by
// `}}` (endpoint2025: the whole body) or by `,"resultType":"complete"` (endpoint2026: the stamp
// the dispatch core appends; the server's `_meta` after it is not checked). The check compares at
// fixed positions rather than searching, so that it costs the same in both modes. Besides
// handle() the loop does, per request: the body written into one reused string (a fixed prefix,
// the id by std::to_chars, a fixed suffix: the same three appends in both modes, only the suffix
// is longer in 2026), a request view over headers built once (no Content-Length: the endpoint
// never reads it), a completion capturing one pointer (stored in the std::function, no
// allocation) that moves the reply into a reused optional, and that check.
// Per request: (mode N - mode 0) / N.
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/authenticator.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/session/session_stream.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/wire/http.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <simdjson.h>

#include "bench_inputs.hpp"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

// The request and answer of BM_dispatch_tools_call (bench_dispatch.cpp).
constexpr std::string_view echo_request =
    R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}})";
constexpr std::string_view echo_response =
    R"({"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello"}]}})";

// bench_session.cpp's progress frame (218 bytes).
const std::string progress_frame =
    R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok-0001",)"
    R"("progress":41,"total":120,"message":"41/120 agents responded","_meta":{"mcpcore/executionId":)"
    R"("3f9a1c2e7b4d4e0f9a1c2e7b4d4e0f9a"}}})";

// BM_dispatch_tools_call's server and the sinks it refers to.
struct echo_server {
  echo_server() {
    mcpcore::server_builder b{{.name = "mcpcore-bench", .version = "1"}};
    b.tool("echo")
        .description("Returns the given text unchanged.")
        .input_schema(R"({"type":"object","properties":{"text":{"type":"string","maxLength":4096}},)"
                      R"("required":["text"],"additionalProperties":false})")
        .security("Echo", mcpcore::operation::read)
        .effect(mcpcore::tool_effect::read_only, true)
        .handler([](mcpcore::call_context&, const mcpcore::arguments& args) {
          return mcpcore::tool_result::text(std::string{args["text"].as_string()});
        });
    b.metrics(metrics)
        .policy(mcpcore::open_tier_policy{})
        .authorizer(mcpcore::allow_all_authorizer{})
        .audit(audit);
    auto built = b.build();
    if (built) {
      server.emplace(std::move(*built));
    } else {
      std::fprintf(stderr, "the echo server was refused: %s\n", built.error().message().c_str());
    }
  }
  mcpcore::metrics_registry metrics;
  mcpcore::null_audit_sink audit;
  std::optional<mcpcore::server> server;
};

// ---- the endpoint modes ---------------------------------------------------------------------------

// The bodies of echo.lua and echo2026.lua around the id.
constexpr std::string_view body_prefix = R"({"jsonrpc":"2.0","id":)";
constexpr std::string_view body_suffix_2025 =
    R"(,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}})";
constexpr std::string_view body_suffix_2026 =
    R"(,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},)"
    R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
    R"("io.modelcontextprotocol/clientCapabilities":{}}}})";
// What a right reply holds after its id: the echo content, then the end of the result and of
// the message (2025) or the per-request era's stamp (2026).
constexpr std::string_view expected_result = R"(,"result":{"content":[{"type":"text","text":"hello"}])";
constexpr std::string_view expected_end_2025 = "}}";
constexpr std::string_view expected_stamp_2026 = R"(,"resultType":"complete")";
// run.sh's open_session.
constexpr std::string_view initialize_body =
    R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
    R"("capabilities":{},"clientInfo":{"name":"mcpcore-http-bench","version":"1"}}})";
constexpr std::string_view initialized_body = R"({"jsonrpc":"2.0","method":"notifications/initialized"})";

mcpcore::principal bench_principal() {
  mcpcore::principal p;
  p.id = "bench";
  p.kind = mcpcore::principal_kind::service;
  return p;
}

// echo_server.cpp's endpoint over the `dispatch` echo server, with an inline executor, and the
// "connection" its requests arrive on.
struct endpoint_bench {
  endpoint_bench() {
    if (!s.server) return;
    endpoint.emplace(*s.server, mcpcore::fixed_authenticator{bench_principal()});
    endpoint->set_metrics(s.metrics);
    binding = endpoint->bind_executor([](std::function<void()> task) {
      task();
      return true;
    });
  }

  // One POST to /mcp with `headers` and `body`; the reply (delivered before handle returns,
  // since the executor is inline), or nothing.
  std::optional<mcpcore::http_reply>& post(const std::vector<mcpcore::http_header>& headers, std::string_view body) {
    reply.reset();
    fields.clear();
    for (const auto& h : headers) fields.push_back(mcpcore::http_header_view{h.name, h.value});
    const mcpcore::http_request_view view{.method = "POST",
                                          .target = "/mcp",
                                          .body = body,
                                          .headers = fields,
                                          .remote = "127.0.0.1:50000",
                                          .local = local,
                                          .disconnected = connection.get_token()};
    endpoint->handle(view, [this](mcpcore::http_reply r) { reply = std::move(r); });
    return reply;
  }

  // run.sh's open_session: initialize, then notifications/initialized on the minted session;
  // the session id, or empty when either step failed.
  std::string open_session() {
    std::vector<mcpcore::http_header> h{{"Host", "127.0.0.1:8765"},
                                        {"Content-Type", "application/json"},
                                        {"Accept", "application/json, text/event-stream"}};
    auto& init = post(h, initialize_body);
    if (!init || init->head.status != 200) return {};
    const auto sid = init->head.header("Mcp-Session-Id");
    if (!sid) return {};
    std::string id{*sid};
    h.push_back({"MCP-Protocol-Version", "2025-11-25"});
    h.push_back({"Mcp-Session-Id", id});
    auto& note = post(h, initialized_body);
    if (!note || note->head.status != 202) return {};
    return id;
  }

  echo_server s;
  std::optional<mcpcore::http_endpoint> endpoint;  // empty when the server was refused
  mcpcore::http_executor_binding binding;
  std::stop_source connection;  // asio_http_server's per-connection `gone_`, never signalled
  std::optional<mcpcore::http_reply> reply;
  // The header views of the request in flight (asio_http_server builds them the same way), and
  // the loopback listener's address.
  std::vector<mcpcore::http_header_view> fields;
  const mcpcore::http_local_address local{.address = "127.0.0.1", .port = 8765, .loopback = true};
};

// Sends N echo tools/calls with `headers` and the body `body_prefix <id> suffix`, ids 1..N;
// how many replies were right.
long send_echo_calls(endpoint_bench& b, const std::vector<mcpcore::http_header>& headers, std::string_view suffix,
                     bool per_request, long n) {
  long right = 0;
  std::string body;
  body.reserve(body_prefix.size() + 24 + suffix.size());
  for (long i = 1; i <= n; ++i) {
    char digits[24];
    const char* const end = std::to_chars(digits, digits + sizeof digits, i).ptr;
    const std::string_view id{digits, static_cast<std::size_t>(end - digits)};
    body.assign(body_prefix);
    body.append(id);
    body.append(suffix);
    const auto& r = b.post(headers, body);
    if (!r || r->head.status != 200 || r->stream) continue;
    std::string_view got = r->head.body;
    if (!got.starts_with(body_prefix)) continue;
    got.remove_prefix(body_prefix.size());
    if (!got.starts_with(id)) continue;
    got.remove_prefix(id.size());
    if (!got.starts_with(expected_result)) continue;
    got.remove_prefix(expected_result.size());
    if (per_request ? !got.starts_with(expected_stamp_2026) : got != expected_end_2025) continue;
    ++right;
  }
  return right;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s <none|simdjson|document|message|dispatch|dispatch_parse|publish|publish_setup|"
                 "endpoint2025|endpoint2026|endpoint_setup> [iterations]\n",
                 argv[0]);
    return 2;
  }
  const std::string_view mode = argv[1];
  const long n = argc > 2 ? std::strtol(argv[2], nullptr, 10) : 20000;
  const std::string text = mcpcore_bench::tools_call_request();
  long checksum = 0;  // printed, so that no parse can be optimized away
  if (mode == "simdjson") {
    simdjson::dom::parser parser;
    const simdjson::padded_string padded{text};
    for (long i = 0; i < n; ++i) {
      simdjson::dom::element root;
      checksum += parser.parse(padded).get(root) == simdjson::SUCCESS;
    }
  } else if (mode == "document") {
    mcpcore::json::document doc;
    for (long i = 0; i < n; ++i) checksum += static_cast<long>(doc.parse(text)->size());
  } else if (mode == "message") {
    mcpcore::json::document doc;
    for (long i = 0; i < n; ++i) checksum += static_cast<long>(mcpcore::parse_message(doc, text)->method.size());
  } else if (mode == "dispatch" || mode == "dispatch_parse") {
    echo_server s;
    if (!s.server) return 1;
    mcpcore::principal caller;
    caller.id = "bench-service";
    mcpcore::peer client;
    const mcpcore::dispatch_context ctx{.caller = caller, .client = &client};
    mcpcore::json::document doc;
    std::string out;
    const bool handle = mode == "dispatch";
    for (long i = 0; i < n; ++i) {
      auto m = mcpcore::parse_message(doc, echo_request);
      if (!m) continue;
      if (!handle) {
        ++checksum;
        continue;
      }
      out.clear();
      checksum += s.server->handle(*m, ctx, out) && out == echo_response;
    }
  } else if (mode == "publish" || mode == "publish_setup") {
    mcpcore::session_stream stream;
    const std::string frame = progress_frame;
    if (mode == "publish") {
      for (long i = 0; i < n; ++i) checksum += stream.publish_ring_only(frame) != 0 ? 1 : 0;
    } else {
      checksum = n;
    }
  } else if (mode == "endpoint2025" || mode == "endpoint_setup") {
    endpoint_bench b;
    if (!b.endpoint) return 1;
    const std::string sid = b.open_session();
    if (sid.empty()) {
      std::fprintf(stderr, "the session could not be opened\n");
      return 1;
    }
    if (mode == "endpoint_setup") {
      checksum = 1;  // the session is open
    } else {
      const std::vector<mcpcore::http_header> headers{{"Host", "127.0.0.1:8765"},
                                                      {"Content-Type", "application/json"},
                                                      {"Accept", "application/json, text/event-stream"},
                                                      {"MCP-Protocol-Version", "2025-11-25"},
                                                      {"Mcp-Session-Id", sid}};
      checksum = send_echo_calls(b, headers, body_suffix_2025, false, n);
    }
  } else if (mode == "endpoint2026") {
    endpoint_bench b;
    if (!b.endpoint) return 1;
    const std::vector<mcpcore::http_header> headers{{"Host", "127.0.0.1:8765"},
                                                    {"Content-Type", "application/json"},
                                                    {"Accept", "application/json, text/event-stream"},
                                                    {"MCP-Protocol-Version", "2026-07-28"},
                                                    {"Mcp-Method", "tools/call"},
                                                    {"Mcp-Name", "echo"}};
    checksum = send_echo_calls(b, headers, body_suffix_2026, true, n);
  } else if (mode != "none") {
    std::fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
  }
  std::printf("%ld\n", checksum);
  return 0;
}
