// SPDX-License-Identifier: Apache-2.0
// Mounting mcpcore on a host's own HTTP server: cpp-httplib (Debian's libcpp-httplib-dev) serves
// `/mcp` through `http_endpoint`, with the blocking-server adapter (mcpcore/transport/
// blocking_adapter.hpp) and the host's own bearer check handing in the principal
// (docs/http.md#mounting-on-a-blocking-server).
//
// Usage: mcpcore-httplib-mount [--port N] [--port-file PATH]
//
// Listens on 127.0.0.1 (port 0: any free port; with --port-file the port is written there once it
// listens). Every request to /mcp needs `Authorization: Bearer <token>` with a token of the host's
// table below, checked by the host's code; anything else is 401 from the host. SIGINT or SIGTERM
// stop it gracefully, with streams open: they end with their close notification, the calls still
// running after the drain are cancelled, and the process exits 0. Diagnostics go to stderr.
#include "../common/atomic_file.hpp"
#include "../common/stop_signals.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/authenticator.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/transport/blocking_adapter.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/version.hpp>
#include <mcpcore/wire/http.hpp>
#include <mcpcore/wire/json.hpp>

#include <httplib.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX sigset_t, sigwait

namespace {

using mcpcore::call_context;
using mcpcore::tool_result;

/// SIGINT and SIGTERM, for sigwait.
using signal_set = sigset_t;  // NOLINT(misc-include-cleaner): <signal.h> declares sigset_t on POSIX

/// The address the example listens on (loopback only).
constexpr const char* listen_address = "127.0.0.1";
/// cpp-httplib's worker threads: each open stream holds one for its lifetime, so this bounds the
/// streams and requests served at once (beyond it, connections wait in cpp-httplib's queue).
constexpr std::size_t http_threads = 16;
/// How long an idle keep-alive connection is kept; also bounds how long `Server::stop` waits for
/// idle connections to go.
constexpr std::time_t keep_alive_seconds = 1;
/// How long a write to a client may block before the connection is dropped (a stream then sees
/// write_failed; its work continues and stays resumable on GET).
constexpr std::time_t write_timeout_seconds = 5;
/// The shutdown drain: how long calls and streams get to finish after SIGTERM before the calls
/// still running are cancelled.
constexpr std::chrono::milliseconds shutdown_drain{2000};

// ---- the host's own authentication -------------------------------------------------------------

/// What the host knows about a caller beyond mcpcore's principal, handed to tool handlers through
/// `principal::context` (`ctx.caller().context`).
struct host_caller final : mcpcore::host_context {
  explicit host_caller(std::string d) : department(std::move(d)) {}
  std::string department;
};

/// One row of the host's token table.
struct token_row {
  std::string_view token;
  std::string_view id;
  std::string_view department;
};

/// The host's fixed token table (a real host looks its own sessions or credentials up here).
/// The tokens are fixed so that tests/interop/httplib_mount.mjs can use them.
constexpr std::array<token_row, 2> token_table{{
    {"httplib-example-alice", "alice", "research"},
    {"httplib-example-bob", "bob", "operations"},
}};

/// The host's bearer check: the principal of `Authorization: Bearer <token>`, or nothing.
std::optional<mcpcore::principal> host_authenticate(const httplib::Request& req) {
  if (req.get_header_value_count("Authorization") != 1) return std::nullopt;
  const std::string value = req.get_header_value("Authorization");
  constexpr std::string_view scheme = "Bearer ";
  if (value.size() <= scheme.size() || !value.starts_with(scheme)) return std::nullopt;
  const std::string_view token = std::string_view{value}.substr(scheme.size());
  for (const auto& row : token_table) {
    if (row.token == token) {
      mcpcore::principal p;
      p.id = std::string{row.id};
      p.kind = mcpcore::principal_kind::service;
      p.context = std::make_shared<const host_caller>(std::string{row.department});
      return p;
    }
  }
  return std::nullopt;
}

// ---- the tools -------------------------------------------------------------------------------------

/// Waits `d`, or less when the call is cancelled; whether it was not cancelled.
bool wait_or_stop(const call_context& ctx, std::chrono::milliseconds d) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock{m};
  (void)cv.wait_for(lock, ctx.stop_token(), d, [] { return false; });
  return !ctx.stop_requested();
}

void declare_tools(mcpcore::server_builder& b) {
  using mcpcore::operation;
  using mcpcore::tool_effect;

  b.tool("echo")
      .description("Returns the given text unchanged.")
      .input_schema(R"({"type":"object","properties":{"text":{"type":"string","maxLength":4096}},)"
                    R"("required":["text"],"additionalProperties":false})")
      .security("Echo", operation::read)
      .effect(tool_effect::read_only, true)
      .handler([](call_context&, const mcpcore::arguments& args) {
        return tool_result::text(std::string{args["text"].as_string()});
      });

  b.tool("whoami")
      .description("Who the host says the caller is: the principal's id and the host's department.")
      .security("Identity", operation::read)
      .effect(tool_effect::read_only, true)
      .handler([](call_context& ctx, const mcpcore::arguments&) {
        const auto* mine = dynamic_cast<const host_caller*>(ctx.caller().context.get());
        return tool_result::text(ctx.caller().id + " of " + (mine != nullptr ? mine->department : "?"));
      });

  b.tool("count_slowly")
      .description("Counts from 1 to `to`, one step every `interval_ms` milliseconds (default 100), reporting "
                   "progress each step. Cancel it to stop early.")
      .input_schema(R"({"type":"object","properties":{"to":{"type":"integer","minimum":1,"maximum":1000},)"
                    R"("interval_ms":{"type":"integer","minimum":0,"maximum":1000}},)"
                    R"("required":["to"],"additionalProperties":false})")
      .security("Counter", operation::read)
      .effect(tool_effect::read_only, true)
      .handler([](call_context& ctx, const mcpcore::arguments& args) {
        const auto to = *args["to"].to_int64();
        const auto interval = std::chrono::milliseconds{args["interval_ms"].to_int64().value_or(100)};
        for (std::int64_t i = 1; i <= to; ++i) {
          if (!wait_or_stop(ctx, interval)) return tool_result::error("cancelled");
          ctx.progress(static_cast<double>(i), static_cast<double>(to),
                       "step " + std::to_string(i) + " of " + std::to_string(to));
        }
        return tool_result::text("counted to " + std::to_string(to));
      });

  b.resource("httplib-mount://about")
      .name("about")
      .description("What this example is.")
      .mime_type("text/plain")
      .handler([](call_context&, std::string_view uri, const mcpcore::uri_variables&) {
        return std::optional{mcpcore::resource_result{}.add_text(
            std::string{uri}, "text/plain", "mcpcore mounted on cpp-httplib through the blocking-server adapter.")};
      });
}

// ---- the mount ---------------------------------------------------------------------------------------

// ---- snippet mount (keep identical) ----
/// Serves POST, GET and DELETE on `path` through `mcp`. Each request is checked by the host's
/// bearer check first (401 from the host), then handed to the endpoint with its principal.
void mount(httplib::Server& http, mcpcore::blocking_adapter& mcp, const std::string& path) {
  auto handler = [&mcp](const httplib::Request& req, httplib::Response& res) {
    auto caller = host_authenticate(req);
    if (!caller) {
      res.status = 401;
      res.set_header("WWW-Authenticate", "Bearer");
      res.set_content(R"({"error":"a valid bearer token is required"})", "application/json");
      return;
    }
    // Views into cpp-httplib's request: nothing is copied.
    std::vector<mcpcore::http_header_view> fields;
    fields.reserve(req.headers.size());
    for (const auto& [name, value] : req.headers) fields.push_back({name, value});
    mcpcore::http_request_view view;
    view.method = req.method;
    view.target = req.target;
    view.body = req.body;
    view.headers = fields;
    view.remote = req.remote_addr;
    // The address the connection arrived on; the endpoint checks `Host` unless it reads as a
    // non-loopback IP address (an empty one is checked too).
    view.local = {.address = req.local_addr,
                  .port = static_cast<std::uint16_t>(req.local_port > 0 ? req.local_port : 0),
                  .loopback = false};

    mcpcore::http_reply reply = mcp.handle(view, std::move(*caller));
    res.status = reply.head.status;
    std::string type = "application/json";
    for (const auto& h : reply.head.headers) {
      if (h.name == "Content-Type") {
        type = h.value;
      } else {
        res.set_header(h.name, h.value);
      }
    }
    if (!reply.stream) {
      res.set_content(reply.head.body, type);
      return;
    }
    // cpp-httplib's provider is a copyable std::function: the stream is shared until it is served.
    auto stream = std::make_shared<std::unique_ptr<mcpcore::http_stream>>(std::move(reply.stream));
    res.set_chunked_content_provider(type, [&mcp, stream](std::size_t /*offset*/, httplib::DataSink& sink) {
      const bool complete = mcp.serve(std::move(*stream), [&sink](std::string_view bytes) {
        return sink.is_writable() && sink.write(bytes.data(), bytes.size());
      });
      if (complete) sink.done();
      return complete;
    });
  };
  http.Post(path, handler);
  http.Get(path, handler);
  http.Delete(path, handler);
}
// ---- end of snippet mount

// ---- snippet shutdown (keep identical) ----
/// Waits for SIGINT or SIGTERM, then stops: new sessions are refused, open streams end with their
/// close notification, calls get the drain to finish and are cancelled after it; only then does
/// cpp-httplib stop (it joins its threads, each of which may be serving a stream).
void stop_on_signal(const signal_set& stop_signals, mcpcore::blocking_adapter& mcp, httplib::Server& http,
                    std::thread& listener) {
  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::fprintf(stderr, "mcpcore-httplib-mount: signal %d, shutting down\n", sig);
  if (!mcp.shutdown(shutdown_drain)) std::fprintf(stderr, "mcpcore-httplib-mount: not idle after the drain\n");
  http.stop();
  listener.join();
}
// ---- end of snippet shutdown

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  std::string port_file;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--port" && i + 1 < argc) {
      port = std::atoi(argv[++i]);  // NOLINT(cert-err34-c): 0 (any port) on junk is fine for an example
    } else if (a == "--port-file" && i + 1 < argc) {
      port_file = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--port N] [--port-file PATH]\n", argv[0]);
      return 2;
    }
  }
  const signal_set stop_signals = mcpcore_examples::block_stop_signals();  // before any thread starts

  mcpcore::server_builder b{{.name = "mcpcore-httplib-mount",
                             .version = MCPCORE_VERSION_STRING,
                             .title = "mcpcore on cpp-httplib",
                             .instructions = "Example tools: echo, whoami, count_slowly (progress)."}};
  declare_tools(b);
  auto server = b.build();
  if (!server) {
    std::fprintf(stderr, "mcpcore-httplib-mount: refused to start: %s\n", server.error().message().c_str());
    return 1;
  }

  // The host authenticates; mcpcore authenticates nothing from headers (a request without a
  // principal handed in would be 401).
  mcpcore::http_endpoint_options options;
  options.path = "/mcp";
  options.aliases = {};
  mcpcore::http_endpoint endpoint{*server, mcpcore::external_authenticator{}, options};
  {
    // Declared after the endpoint (destroyed before it), before the HTTP server (outlives it).
    mcpcore::blocking_adapter mcp{endpoint};
    httplib::Server http;
    http.new_task_queue = [] { return new httplib::ThreadPool(http_threads); };
    http.set_keep_alive_timeout(keep_alive_seconds);
    http.set_write_timeout(write_timeout_seconds, 0);
    http.set_payload_max_length(endpoint.options().max_body_bytes);
    mount(http, mcp, options.path);

    const int bound = port == 0 ? http.bind_to_any_port(std::string{listen_address})
                                : (http.bind_to_port(std::string{listen_address}, port) ? port : -1);
    if (bound <= 0) {
      std::fprintf(stderr, "mcpcore-httplib-mount: cannot listen on %s:%d\n", listen_address, port);
      return 1;
    }
    std::thread listener([&http] { http.listen_after_bind(); });
    if (!port_file.empty() && !mcpcore_examples::write_file_atomically(port_file, std::to_string(bound) + "\n")) {
      std::fprintf(stderr, "mcpcore-httplib-mount: cannot write %s\n", port_file.c_str());
      http.stop();
      listener.join();
      return 1;
    }
    std::printf("mcpcore httplib mount listening on http://%s:%d%s\n", listen_address, bound,
                options.path.c_str());
    std::fflush(stdout);

    stop_on_signal(stop_signals, mcp, http, listener);
  }  // the adapter joins its executor before the endpoint goes
  return 0;
}
