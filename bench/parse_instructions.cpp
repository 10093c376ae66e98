// SPDX-License-Identifier: Apache-2.0
// Runs one of mcpcore's hot paths N times, for counting instructions under
// `valgrind --tool=callgrind` (deterministic, unlike timings on a shared machine;
// docs/performance.md). scripts/instruction-gate runs each measured path and its setup run and
// compares the instructions per operation with bench/instructions.baseline
// (docs/instruction-gate.md).
// Usage: mcpcore_parse_instructions <mode> [N]   (N defaults to 20000)
//   modes: none simdjson document message dispatch dispatch_parse schema schema_setup publish
//          publish_setup replay replay_setup endpoint2025 endpoint2026 endpoint_setup toolchain
//
// Every mode prints one number, a count of results that were right, so that a run that measured
// nothing (a refused server, a failed check) shows: ctest's PASS_REGULAR_EXPRESSION and the gate
// compare it with what the mode must print. Per operation: (mode N - setup) / N, where the setup
// run is named below for each measured mode.
//
// `none` builds the 403-byte tools/call request of bench_inputs.hpp and does nothing else (prints
// 0): the setup of `simdjson`, `document` and `message`, which parse that request N times with
// simdjson's DOM parser, json::document and parse_message (the envelope parse) and print the sum
// of the tape sizes or method lengths (`message` N prints 10 * N: "tools/call").
//
// `dispatch` builds BM_dispatch_tools_call's server (open tier policy, allow-all RBAC, null audit,
// a metrics registry) and sends it the echo tools/call N times (parse_message, then
// server::handle); it prints how many answers were the expected bytes. `dispatch 0` is its setup.
// `dispatch_parse` builds the same server but only parses the same request N times (it prints
// N), so that dispatch - dispatch_parse is server::handle (plus the output check) and dispatch N -
// dispatch 0 the whole call.
//
// `schema` is BM_schema_validate_typical (bench_schema.cpp): the echo tool's input schema compiled
// once, then `compiled_schema::validate` of the parsed arguments {"text":"hello"} N times; it
// prints how many validations accepted them. `schema_setup` compiles the schema, parses the
// arguments and validates nothing (prints N). Both first check that the schema refuses
// {"text":42} at /text and accepts {"text":"hello"} (else they print 0), so that the validation
// measured is one that can fail.
//
// `publish` publishes bench_session.cpp's 218-byte progress frame N times with
// session_stream::publish_ring_only (a ring at its default bounds, so that eviction runs once it
// is full) and prints how many got an id; `publish_setup` builds the same stream and frame and
// publishes nothing (prints N), so that publish N - publish_setup N is N ring publishes.
//
// `replay` is BM_resume_replay_full_ring (bench_session.cpp): a stream whose ring was filled to
// its default bounds with the progress frame (twice the frame bound published, so that the byte
// bound binds and the ring is full), then N resumes from just before the oldest frame
// (attach_and_replay, which queues every frame held, then detach); it prints how many attached
// and replayed the whole ring. `replay_setup` fills the same ring and resumes nothing (prints N
// when the ring holds frames).
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
//     (endpoint2026 0 is the build without the session, the setup of endpoint2026).
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
//
// `toolchain` prints the compiler and the simdjson version this driver was built with, and
// whether it was optimized with NDEBUG (the header of bench/instructions.baseline).
//
// MCPCORE_INSTRUCTION_GATE_SLOWDOWN=<percent>, defined only for the gate's self-test binary
// (bench/CMakeLists.txt, docs/instruction-gate.md#the-self-test), adds to every measured
// operation a loop over a volatile counter worth about that percentage of the operation's
// instructions, so that the gate must report every path over budget. Without it the slowdown
// compiles to nothing.
#include <mcpcore/dispatch/schema.hpp>
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/authenticator.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/session/session_stream.hpp>
#include <mcpcore/session/stream_budget.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/wire/http.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <simdjson.h>

#include "bench_inputs.hpp"

#include <charconv>
#include <cstddef>
#include <cstdint>
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

// ---- the gate's self-test slowdown --------------------------------------------------------------

// What each measured operation costs, roughly, in instructions (Release, g++ 12; the gate's
// baseline, bench/instructions.baseline, holds the measured figures). They only size the
// self-test's slowdown: a path that became 3 times dearer than this would still grow by more than
// the gate's 3 % tolerance at a 10 % slowdown (docs/instruction-gate.md#the-self-test).
constexpr long nominal_message = 7'500;
constexpr long nominal_dispatch = 9'700;
constexpr long nominal_schema = 880;
constexpr long nominal_publish = 780;
constexpr long nominal_replay = 235'000;  // a whole ring of about 300 frames
constexpr long nominal_endpoint2025 = 24'500;
constexpr long nominal_endpoint2026 = 28'500;

#ifdef MCPCORE_INSTRUCTION_GATE_SLOWDOWN
// One turn of the loop below: load, add and store of the volatile counter, then the loop's own
// increment, compare and branch (g++ -O3 does not unroll it; the self-test's output shows the
// resulting growth per path).
constexpr long instructions_per_spin = 6;
constexpr long slowdown_percent = MCPCORE_INSTRUCTION_GATE_SLOWDOWN;
static_assert(slowdown_percent > 0, "MCPCORE_INSTRUCTION_GATE_SLOWDOWN is a percentage");
volatile long slowdown_counter = 0;

// Spends about slowdown_percent % of `nominal` instructions: a volatile store the compiler may
// neither drop nor merge, standing for a regression inside the operation.
[[gnu::noinline]] void slow_down(long nominal) {
  const long spins = nominal * slowdown_percent / 100 / instructions_per_spin;
  for (long i = 0; i < spins; ++i) slowdown_counter = slowdown_counter + 1;
}
#else
constexpr void slow_down(long /*nominal*/) {}
#endif

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

// BM_schema_validate_typical's schema (the echo tool's), its valid arguments and the invalid ones
// that must be refused at /text.
constexpr std::string_view echo_schema =
    R"({"type":"object","properties":{"text":{"type":"string","maxLength":4096}},)"
    R"("required":["text"],"additionalProperties":false})";
constexpr std::string_view echo_arguments = R"({"text":"hello"})";
constexpr std::string_view echo_bad_arguments = R"({"text":42})";

// Compiles the echo schema and checks that it refuses the invalid arguments at /text and accepts
// the valid ones (parsed into `doc`); the compiled schema and the valid instance, or nothing.
struct schema_bench {
  schema_bench() {
    auto compiled = mcpcore::schema::compiled_schema::compile(echo_schema);
    if (!compiled) {
      std::fprintf(stderr, "the echo schema does not compile\n");
      return;
    }
    mcpcore::json::document bad_doc;
    const auto bad = bad_doc.parse(echo_bad_arguments);
    const auto refusal = bad ? compiled->validate(*bad) : std::nullopt;
    if (!refusal || refusal->path != "/text") {
      std::fprintf(stderr, "the invalid arguments were not refused at /text\n");
      return;
    }
    const auto valid = doc.parse(echo_arguments);
    if (!valid || compiled->validate(*valid)) {
      std::fprintf(stderr, "the valid arguments were refused\n");
      return;
    }
    schema.emplace(std::move(*compiled));
    instance = *valid;
  }
  mcpcore::json::document doc;
  std::optional<mcpcore::schema::compiled_schema> schema;  // empty when a check failed
  mcpcore::json::value instance;
};

// BM_resume_replay_full_ring's stream: the default ring filled with the progress frame, and the
// cursor just before its oldest frame.
struct replay_bench {
  replay_bench() {
    for (std::size_t i = 0; i < mcpcore::default_ring_frames * 2; ++i) (void)stream.publish_ring_only(progress_frame);
    const auto stats = stream.stats();
    held = stats.frames;
    cursor = stats.oldest_id - 1;
  }
  // One resume from the cursor: whether it attached and queued the whole ring.
  bool resume() {
    auto a = stream.attach_and_replay(cursor, budget, "bench");
    const bool right = a.status == mcpcore::attach_status::attached && a.replayed == held;
    if (a.sink) stream.detach(*a.sink);
    return right;
  }
  mcpcore::session_stream stream;
  mcpcore::stream_budget budget;
  std::size_t held = 0;
  std::uint64_t cursor = 0;
};

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
    slow_down(per_request ? nominal_endpoint2026 : nominal_endpoint2025);
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
                 "usage: %s <none|simdjson|document|message|dispatch|dispatch_parse|schema|schema_setup|publish|"
                 "publish_setup|replay|replay_setup|endpoint2025|endpoint2026|endpoint_setup|toolchain> "
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
    for (long i = 0; i < n; ++i) {
      checksum += static_cast<long>(mcpcore::parse_message(doc, text)->method.size());
      slow_down(nominal_message);
    }
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
      slow_down(nominal_dispatch);
    }
  } else if (mode == "schema" || mode == "schema_setup") {
    const schema_bench b;
    if (!b.schema) return 1;
    if (mode == "schema") {
      for (long i = 0; i < n; ++i) {
        checksum += !b.schema->validate(b.instance) ? 1 : 0;
        slow_down(nominal_schema);
      }
    } else {
      checksum = n;
    }
  } else if (mode == "publish" || mode == "publish_setup") {
    mcpcore::session_stream stream;
    const std::string frame = progress_frame;
    if (mode == "publish") {
      for (long i = 0; i < n; ++i) {
        checksum += stream.publish_ring_only(frame) != 0 ? 1 : 0;
        slow_down(nominal_publish);
      }
    } else {
      checksum = n;
    }
  } else if (mode == "replay" || mode == "replay_setup") {
    replay_bench b;
    if (b.held == 0) {
      std::fprintf(stderr, "the ring holds no frame\n");
      return 1;
    }
    if (mode == "replay") {
      for (long i = 0; i < n; ++i) {
        checksum += b.resume() ? 1 : 0;
        slow_down(nominal_replay);
      }
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
  } else if (mode == "toolchain") {
    // One line, for the baseline's header: what the counts depend on besides mcpcore's code.
#if defined(__clang__)
    const char* const compiler = "clang++ " __clang_version__;
#elif defined(__GNUC__)
    const char* const compiler = "g++ " __VERSION__;
#else
    const char* const compiler = "an unknown compiler";
#endif
#if defined(__OPTIMIZE__) && defined(NDEBUG)
    const char* const build = "optimized, NDEBUG";
#else
    const char* const build = "NOT an optimized NDEBUG build";
#endif
    std::printf("%s; simdjson %d.%d.%d; %s\n", compiler, simdjson::SIMDJSON_VERSION_MAJOR,
                simdjson::SIMDJSON_VERSION_MINOR, simdjson::SIMDJSON_VERSION_REVISION, build);
    return 0;
  } else if (mode != "none") {
    std::fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
  }
  std::printf("%ld\n", checksum);
  return 0;
}
