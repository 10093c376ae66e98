// SPDX-License-Identifier: Apache-2.0
// Parses the benchmark's tools/call request N times with one of three parsers, or dispatches
// bench_dispatch.cpp's echo tools/call N times, for counting instructions under
// `valgrind --tool=callgrind` (deterministic, unlike timings on a shared machine;
// docs/performance.md).
// Usage: mcpcore_parse_instructions <none|simdjson|document|message|dispatch|dispatch_parse|publish|publish_setup> [N]
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
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/session/session_stream.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <simdjson.h>

#include "bench_inputs.hpp"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s <none|simdjson|document|message|dispatch|dispatch_parse|publish|publish_setup> "
                 "[iterations]\n",
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
  } else if (mode != "none") {
    std::fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
  }
  std::printf("%ld\n", checksum);
  return 0;
}
