// SPDX-License-Identifier: Apache-2.0
// mcpcore's side of the HTTP load benchmark (bench/http/run.sh): a server with the `echo` tool
// (and `progress10`, the same call with 10 progress notifications before its result, for the
// streamed-call targets) behind http_endpoint and transport::asio_http_server, on 127.0.0.1.
//
//   mcpcore_bench_http_echo_server [--port N] [--port-file PATH] [--io-threads N]
//                                  [--handler-threads N] [--max-sessions N] [--max-streams N]
//                                  [--max-dispatch N] [--transport-only | --inline-dispatch]
//                                  [--principal-per-token] [--bridge-records N] [--tick-ms N]
//
//   --port             port on 127.0.0.1 (default 0: ephemeral)
//   --port-file        write the bound port there once listening (the harness waits for it)
//   --io-threads       asio_http_server_options::io_threads (default: the transport's default)
//   --handler-threads  asio_http_server_options::handler_threads (default: the transport's default)
//   --max-sessions     raise the session caps (global and per principal: every request is the one
//                      principal "bench") to N; for the idle-session and idle-stream measurements
//                      and the session-churn targets (each wrk connection holds a session)
//   --max-streams      raise the stream budget's global cap, the per-principal GET stream cap and
//                      the server's connection cap to N (plus a margin); for the idle-stream one
//   --max-dispatch     http_endpoint_options::max_dispatch_per_principal (default: the endpoint's,
//                      16; docs/sessions.md#fair-dispatch). Every request is the one principal, so
//                      the load client's connections all count against it: run.sh sets it above
//                      its connection count, so that a request sent the moment the previous answer
//                      arrived (before its dispatch slot is released) or a request left running by
//                      the previous wrk run is not refused 429
//   --transport-only   no MCP: the Asio server with a handler that answers every request, on its
//                      I/O thread, 200 with the fixed body of the echo response to id 1 (what the
//                      nginx ceiling serves); the transport's own cost, for comparison
//   --inline-dispatch  run each dispatch on the I/O thread that parsed the request (the endpoint's
//                      own default executor) instead of the server's handler pool: measures what
//                      the hand-off costs. Not a production setting: a slow tool would stall
//                      every connection of that I/O thread
//   --principal-per-token  each request is the principal "bench-<token>" named by its
//                      `Authorization: Bearer <token>` (any token of 1 to 64 bytes; without the
//                      header "bench"): the streamed-call targets open their sessions as several
//                      principals, since the endpoint holds at most 4 streamed POSTs of one
//                      principal open at once (docs/sessions.md#the-stream-budget)
//   --bridge-records   progress_bridge_options::max_records (default: the bridge's, 256): the
//                      records of streamed calls alive at once, a finished call's counted until the
//                      sweep of the maintenance tick reaps it (docs/sessions.md#progress-records)
//   --tick-ms          asio_http_server_options::tick_interval in ms (default: the transport's, 3000):
//                      how often the endpoint's maintenance (the sweep among it) runs. With both
//                      defaults a server admits about 256 streamed calls per 3 s and refuses the
//                      rest 429 (post_record_cap); the streamed-call targets raise both
//                      (bench/http/run.sh)
//
// The tool and the dispatch plug-ins are those of bench/bench_dispatch.cpp's minimal server:
// `echo` with the input schema below (progress10 takes the same), the open tier policy, the
// allow-all authorizer, no audit, and a metrics registry (also given to the endpoint, so the
// session metrics are counted too). Every request is authenticated as the fixed principal "bench"
// (see --principal-per-token). It runs until SIGINT or SIGTERM, then stops gracefully.
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/authenticator.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/transport/asio_http_server.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/version.hpp>

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

namespace {

constexpr std::string_view echo_schema =
    R"({"type":"object","properties":{"text":{"type":"string","maxLength":4096}},)"
    R"("required":["text"],"additionalProperties":false})";

/// The echo response to a request with id 1 (the body of --transport-only, and of the nginx ceiling).
constexpr std::string_view fixed_echo_response =
    R"({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}})";

/// Progress notifications that the progress10 tool sends before its result (bench/http/stream.lua
/// expects exactly this many).
constexpr int progress_steps = 10;

/// The principal of every request (without --principal-per-token, or without a bearer token).
constexpr std::string_view default_principal = "bench";

/// Longest bearer token --principal-per-token takes as a principal's name; a longer one is 401.
constexpr std::size_t max_token_bytes = 64;

/// --principal-per-token: each request is the principal that its bearer token names
/// ("bench-<token>"), or "bench" without an Authorization header. Not an authentication (every
/// token is admitted): it lets a client act as several principals, as several clients would. The
/// streamed-call targets need that: the endpoint holds at most 4 streamed POSTs of one principal
/// open at once (docs/sessions.md#the-stream-budget), fewer than the load client's connections.
class token_principal_authenticator {
 public:
  [[nodiscard]] std::optional<mcpcore::principal> authenticate(const mcpcore::http_request_view& req) const {
    mcpcore::principal who;
    who.id = std::string{default_principal};
    who.kind = mcpcore::principal_kind::service;
    if (const auto value = req.header("Authorization")) {
      constexpr std::string_view scheme = "Bearer ";
      if (!value->starts_with(scheme)) return std::nullopt;
      const std::string_view token = value->substr(scheme.size());
      if (token.empty() || token.size() > max_token_bytes) return std::nullopt;
      who.id += '-';
      who.id += token;
    }
    return who;
  }
  [[nodiscard]] mcpcore::credential_verdict revalidate(const mcpcore::principal& /*who*/) const noexcept {
    return mcpcore::credential_verdict::valid;
  }
};

/// Connections kept free beyond --max-streams (the harness's own requests, the load client).
constexpr std::size_t connection_margin = 64;

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "echo_server: %s\nusage: echo_server [--port N] [--port-file PATH] [--io-threads N] "
               "[--handler-threads N] [--max-sessions N] [--max-streams N] [--max-dispatch N]\n"
               "                   [--transport-only | --inline-dispatch] [--principal-per-token]\n"
               "                   [--bridge-records N] [--tick-ms N]\n",
               why);
  std::exit(2);
}

std::size_t positive(const char* text) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0' || v == 0) usage("a count must be a positive integer");
  return static_cast<std::size_t>(v);
}

}  // namespace

int main(int argc, char** argv) {
  mcpcore::transport::asio_http_server_options transport_options;
  transport_options.address = "127.0.0.1";
  transport_options.port = 0;
  mcpcore::http_endpoint_options endpoint_options;
  std::string port_file;
  bool transport_only = false;
  bool inline_dispatch = false;
  bool principal_per_token = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--transport-only") {
      transport_only = true;
      continue;
    }
    if (a == "--inline-dispatch") {
      inline_dispatch = true;
      continue;
    }
    if (a == "--principal-per-token") {
      principal_per_token = true;
      continue;
    }
    if (i + 1 >= argc) usage("an option lacks its value");
    const char* v = argv[++i];
    if (a == "--port") {
      const std::size_t port = std::strtoull(v, nullptr, 10);
      if (port > 65535) usage("--port must be 0 to 65535");
      transport_options.port = static_cast<std::uint16_t>(port);
    } else if (a == "--port-file") {
      port_file = v;
    } else if (a == "--io-threads") {
      transport_options.io_threads = positive(v);
    } else if (a == "--handler-threads") {
      transport_options.handler_threads = positive(v);
    } else if (a == "--max-sessions") {
      const std::size_t n = positive(v);
      endpoint_options.session.max_sessions = n;
      endpoint_options.session.max_sessions_per_principal = n;
    } else if (a == "--bridge-records") {
      endpoint_options.bridge.max_records = positive(v);
    } else if (a == "--tick-ms") {
      transport_options.tick_interval = std::chrono::milliseconds{positive(v)};
    } else if (a == "--max-dispatch") {
      endpoint_options.max_dispatch_per_principal = positive(v);
    } else if (a == "--max-streams") {
      const std::size_t n = positive(v);
      endpoint_options.budget.global_cap = n;
      endpoint_options.session.stream.get_streams_per_principal = n;
      transport_options.max_connections = n + connection_margin;
    } else {
      usage("unknown option");
    }
  }

  mcpcore::metrics_registry metrics;
  mcpcore::server_builder b{{.name = "mcpcore-bench-http-echo", .version = MCPCORE_VERSION_STRING}};
  b.tool("echo")
      .description("Returns the given text unchanged.")
      .input_schema(std::string{echo_schema})
      .security("Echo", mcpcore::operation::read)
      .effect(mcpcore::tool_effect::read_only, true)
      .handler([](mcpcore::call_context&, const mcpcore::arguments& args) {
        return mcpcore::tool_result::text(std::string{args["text"].as_string()});
      });
  // progress10: the streamed call of run.sh's stream targets (stream.lua). With a progress token it
  // sends progress_steps notifications/progress (1 to 10 of 10) before its result, so the endpoint
  // answers it as an SSE stream; without one it is the echo call.
  b.tool("progress10")
      .description("Reports progress 10 times, then returns the given text unchanged.")
      .input_schema(std::string{echo_schema})
      .security("Echo", mcpcore::operation::read)
      .effect(mcpcore::tool_effect::read_only, true)
      .handler([](mcpcore::call_context& ctx, const mcpcore::arguments& args) {
        if (ctx.wants_progress()) {
          for (int i = 1; i <= progress_steps; ++i) {
            (void)ctx.progress(static_cast<double>(i), static_cast<double>(progress_steps));
          }
        }
        return mcpcore::tool_result::text(std::string{args["text"].as_string()});
      });
  b.policy(mcpcore::open_tier_policy{}).authorizer(mcpcore::allow_all_authorizer{}).metrics(metrics);
  auto built = b.build();
  if (!built) {
    std::fprintf(stderr, "echo_server: refused to build: %s\n", built.error().message().c_str());
    return 1;
  }
  mcpcore::server& srv = *built;

  mcpcore::principal caller;
  caller.id = std::string{default_principal};
  caller.kind = mcpcore::principal_kind::service;
  std::optional<mcpcore::http_endpoint> endpoint_storage;
  if (principal_per_token) {
    endpoint_storage.emplace(srv, token_principal_authenticator{}, std::move(endpoint_options));
  } else {
    endpoint_storage.emplace(srv, mcpcore::fixed_authenticator{caller}, std::move(endpoint_options));
  }
  mcpcore::http_endpoint& endpoint = *endpoint_storage;
  endpoint.set_metrics(metrics);

  // SIGINT and SIGTERM are taken by sigwait below: block them before any thread starts, so that
  // every thread inherits the mask. A peer that resets a connection must not kill the process.
  std::signal(SIGPIPE, SIG_IGN);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::optional<mcpcore::transport::asio_http_server> http_storage;
  if (transport_only) {
    http_storage.emplace(
        [](const mcpcore::http_request_view&, mcpcore::http_completion done) {
          mcpcore::http_reply reply;
          reply.head.status = 200;
          reply.head.headers.push_back({"Content-Type", "application/json"});
          reply.head.body = std::string{fixed_echo_response};
          done(std::move(reply));
        },
        transport_options);
  } else if (inline_dispatch) {
    // The server drives the endpoint through a plain handler, so it binds no executor: with none
    // bound the endpoint dispatches inline, on the I/O thread (docs/http.md#the-executor). The
    // benchmark runs for seconds, so the endpoint's maintenance tick is not needed.
    http_storage.emplace(
        [&endpoint](const mcpcore::http_request_view& request, mcpcore::http_completion done) {
          endpoint.handle(request, std::move(done));
        },
        transport_options);
  } else {
    http_storage.emplace(endpoint, transport_options);
  }
  mcpcore::transport::asio_http_server& http = *http_storage;
  if (auto started = http.start(); !started) {
    std::fprintf(stderr, "echo_server: cannot listen: %s\n", started.error().message().c_str());
    return 1;
  }
  if (!port_file.empty()) {  // written whole, then renamed: a reader never sees a partial number
    const std::string partial = port_file + ".partial";
    std::ofstream out(partial);
    out << http.port() << '\n';
    out.close();
    if (!out || std::rename(partial.c_str(), port_file.c_str()) != 0) {
      std::fprintf(stderr, "echo_server: cannot write %s\n", port_file.c_str());
      return 1;
    }
  }
  // The thread counts the server runs with: an option left at 0 is sized to the machine's hardware
  // threads when the server starts (docs/transport.md#threads); run.sh records this line.
  const std::size_t hardware = std::max<std::size_t>(std::thread::hardware_concurrency(), 1);
  const std::size_t io_threads = transport_options.io_threads != 0 ? transport_options.io_threads
                                                                   : mcpcore::transport::sized_io_threads(hardware);
  const std::size_t handler_threads = transport_options.handler_threads != 0
                                          ? transport_options.handler_threads
                                          : mcpcore::transport::sized_handler_threads(hardware);
  std::fprintf(stderr, "echo_server: mcpcore %s listening on http://127.0.0.1:%u/mcp (io %zu, handler %zu threads%s)\n",
               MCPCORE_VERSION_STRING, static_cast<unsigned>(http.port()), io_threads, handler_threads,
               transport_only ? ", transport only" : inline_dispatch ? ", dispatch inline" : "");

  int sig = 0;
  sigwait(&stop_signals, &sig);
  http.stop();
  return 0;
}
