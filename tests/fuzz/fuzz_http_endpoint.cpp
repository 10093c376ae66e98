// SPDX-License-Identifier: Apache-2.0
// Fuzzes the sans-I/O MCP Streamable HTTP endpoint end to end (mcpcore::http_endpoint over a
// mcpcore::server): a short script of requests and events against ONE endpoint per input, so that
// sessions, GET streams, resume, DELETE, cancellation, the SSE upgrade and approvals are reachable.
//
// Input: segments separated by NUL bytes (at most `max_segments`).
//  - The first segment, when it starts with '%', lists option letters: s sessions off,
//    r require_session, p streamed_post off, b max_body_bytes 64, c small caps (sessions, stream
//    budget, ring, sink queue, bridge records, TTLs), o/h an allowed Origin/Host
//    (https://app.example, mcp.example), v no loopback Host check, l no loopback same-origin,
//    m metrics registry, u audit sink, k kill switch on, a protected-resource metadata served
//    (docs/oauth.md#protected-resource-metadata); the executor: q queued (tasks run on
//    `run`/`runall` and at the end), x refusing, n none (the library's inline dispatch); default
//    an executor that runs each task at once.
//  - A segment starting with '!' is commands separated by white space: run, runall, pull (every
//    open stream once), drain (every stream until finished, bounded), +<ms> (advance the manual
//    clock), tick, shutdown, drop (write_failed and destroy the oldest stream), close (the newest
//    stream, session_terminated), valid/stale/revoked/indeterminate (the re-validation verdict),
//    approve/reject (the last approval id, by an assured human), kill/unkill, ready/unready,
//    finish/oprogress (the newest detached operation). Inside a paused handler (the `pause` tool):
//    progress, log, closestream, detach, sample, ping (act on the innermost paused call) and
//    resume (the handler returns).
//  - Any other segment is a request: "METHOD TARGET" on the first line (no target: /mcp), then
//    "Name: value" header lines up to an empty line, then the body. A trailing CR of a line is
//    dropped. "@local: <addr>" sets the local address (default 127.0.0.1:8765; empty or unreadable:
//    checked as loopback).
//    In header values $0..$3 stand for the id of the n-th session minted in this input, $$ for the
//    latest, $e for the last SSE event id seen, $p for the last POST stream's priming id (also in
//    the target); in the target and the body $A stands for the last approval id answered.
//
// Bodies whose params._meta claims the per-request era (docs/eras.md) take that era's route:
// sessions are ignored there, streams have no priming event or ids. The tool asker returns an
// input-required result until its input arrives (requestState round trips).
//
// The server has tools echo (plain), report (3 progress notifications), logger (log messages),
// sampler (sampling/createMessage with a 0 ms timeout), closer (close_stream then a log), fleet
// (detached work), thrower (throws), pause (runs the following segments while the call is in
// flight) and delete_tag (approval-gated for the "supervised" tier). Tokens: "Bearer alice"
// (supervised), "Bearer bob" (no tier), "Bearer ro" (readonly), "Bearer oauth-none" and
// "Bearer oauth-read" (OAuth principals with the scopes openid and mcp:read, for step-up:
// docs/oauth.md#step-up); "Bearer throw" makes the authenticator throw; anything else fails.
//
// Invariants:
//  - the completion of every `handle` is called exactly once (by the end of the input);
//  - every MCP-path status is one of 200 202 400 401 403 404 405 406 409 410 413 415 429 500 503;
//    405 carries Allow and no body, 202 no body, 401 WWW-Authenticate: Bearer and -32001, a 403
//    with WWW-Authenticate an insufficient_scope challenge and -32004; the metadata is a JSON
//    object naming its resource;
//  - a JSON answer is one JSON-RPC 2.0 response: the request's id or null (a result: the id),
//    exactly one of result and error; an error has an integer code and a string message and,
//    except -32005 (the kill switch, no data), error.data with correlation_id and retry_after_ms;
//    Retry-After appears exactly on 429/503 answers with a numeric retry_after_ms;
//  - header names are tokens and no header value holds CR, LF or NUL; Mcp-Session-Id is 32
//    lowercase hex on a 200 answer to POST;
//  - a stream answers 200 text/event-stream; each pull appends whole events (a blank line last)
//    made only of id/event/data/retry fields and comments; ids increase strictly within a stream;
//    an event committed after a stream attached is written on one stream only (MCP: no broadcast;
//    a GET resume may replay what existed when it attached; a GET whose cursor no stream had
//    written, a guess, is exempt);
//    a POST stream starts with the priming event (retry, empty data); non-empty data is a JSON
//    object, a JSON-RPC 2.0 message for `message` events; a POST stream carries at most one
//    response, for its own request id;
//  - a session is never served to another principal, nor after its DELETE or the shutdown: a
//    request naming such a session (sessions on, not initialize) never gets a result, a stream,
//    a 202 or a DELETE's 200; with sessions off no answer carries Mcp-Session-Id;
//  - when every stream is destroyed and the endpoint shut down, the stream budget is back to 0;
//    nothing leaks (LSan) and no sanitizer fires.
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/approval_endpoint.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/authenticator.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/governance/scopes.hpp>
#include <mcpcore/session/progress_bridge.hpp>
#include <mcpcore/session/stream_budget.hpp>
#include <mcpcore/stores/memory_approval_store.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/wire/http.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include "fuzz_check.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace {

using namespace mcpcore;
using namespace std::chrono_literals;

constexpr std::size_t max_segments = 32;
constexpr std::size_t max_commands = 48;  // per command segment
constexpr std::size_t max_streams = 8;    // open at once; the oldest is dropped beyond
constexpr std::size_t max_pause_depth = 2;
constexpr int drain_pulls = 16;
constexpr int final_pulls = 32;
constexpr std::size_t max_sessions_kept = 4;
constexpr std::chrono::milliseconds max_advance{24 * 3600 * 1000};

/// MCPCORE_FUZZ_TRACE=1 prints every request, answer and pulled chunk (to read what a seed or a
/// reproducer does: `MCPCORE_FUZZ_TRACE=1 fuzz_http_endpoint <file>`).
const bool trace = std::getenv("MCPCORE_FUZZ_TRACE") != nullptr;

// ---- small helpers -------------------------------------------------------------------------------

bool is_tchar(char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return std::string_view{"!#$%&'*+-.^_`|~"}.find(c) != std::string_view::npos;
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool is_lower_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::optional<std::uint64_t> to_u64(std::string_view s) {
  std::uint64_t n = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), n);
  if (r.ec != std::errc{} || r.ptr != s.data() + s.size()) return std::nullopt;
  return n;
}

/// `req-<hex>-<hex>`.
bool is_correlation_id(std::string_view s) {
  if (s.substr(0, 4) != "req-") return false;
  s.remove_prefix(4);
  const auto dash = s.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == s.size()) return false;
  return is_lower_hex(s.substr(0, dash)) && is_lower_hex(s.substr(dash + 1));
}

bool ieq(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

/// The principal `fuzz_authenticator` finds for an Authorization value ("" for none).
std::string principal_of(std::optional<std::string_view> authorization) {
  if (!authorization) return {};
  if (*authorization == "Bearer alice") return "alice";
  if (*authorization == "Bearer bob") return "bob";
  if (*authorization == "Bearer ro") return "carol";
  if (*authorization == "Bearer oauth-none" || *authorization == "Bearer oauth-read") return "dave";
  return {};
}

std::string compact(json::value v) {
  std::string s;
  json::writer w{s};
  w.value(v);
  return s;
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  std::size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
  return s;
}

std::string_view path_of(std::string_view target) {
  const auto q = target.find_first_of("?#");
  return q == std::string_view::npos ? target : target.substr(0, q);
}

/// Checks a JSON-RPC error object (mcpcore's: the data envelope unless -32005).
void check_error_object(json::value error) {
  MCPCORE_FUZZ_CHECK(error.is_object());
  MCPCORE_FUZZ_CHECK(error["code"].is_integer());
  MCPCORE_FUZZ_CHECK(error["message"].is_string());
  const std::int64_t code = error["code"].to_int64().value_or(0);
  const json::value data = error["data"];
  if (code == -32005) {
    MCPCORE_FUZZ_CHECK(!data.exists());
    return;
  }
  MCPCORE_FUZZ_CHECK(data.is_object());
  MCPCORE_FUZZ_CHECK(data["correlation_id"].is_string());
  MCPCORE_FUZZ_CHECK(is_correlation_id(data["correlation_id"].as_string()));
  const json::value retry = data["retry_after_ms"];
  MCPCORE_FUZZ_CHECK(retry.is_null() || (retry.is_integer() && retry.to_int64().value_or(-1) >= 0));
}

// ---- the authenticator ------------------------------------------------------------------------------

/// The scope map of the OAuth principals and the server's step-up.
scope_map fuzz_scopes() {
  return scope_map{{{.scope = "mcp:read", .tier = "readonly", .roles = {}},
                    {.scope = "mcp:operate", .tier = "operator", .roles = {}},
                    {.scope = "mcp:supervise", .tier = "supervised", .roles = {}}}};
}

struct fuzz_authenticator {
  std::shared_ptr<std::atomic<credential_verdict>> verdict;

  [[nodiscard]] std::optional<principal> authenticate(const http_request_view& req) const {
    const auto a = req.header("Authorization");
    if (!a) return std::nullopt;
    if (*a == "Bearer alice") return principal{.id = "alice", .tier = "supervised"};
    if (*a == "Bearer bob") return principal{.id = "bob"};
    if (*a == "Bearer ro") return principal{.id = "carol", .tier = "readonly"};
    if (*a == "Bearer oauth-none" || *a == "Bearer oauth-read") {
      principal p{.id = "dave"};
      fuzz_scopes().apply({*a == "Bearer oauth-read" ? std::string_view{"mcp:read"} : std::string_view{"openid"}}, p);
      return p;
    }
    if (*a == "Bearer throw") throw std::runtime_error("authenticator failure");
    return std::nullopt;
  }
  [[nodiscard]] credential_verdict revalidate(const principal& /*p*/) const noexcept { return verdict->load(); }
};
static_assert(authenticator<fuzz_authenticator>);

// ---- one input ------------------------------------------------------------------------------------

/// What the checks need to know about a request after `handle` returned.
struct request_info {
  std::string method;
  std::string principal;   // who the Authorization header names ("" when it fails)
  std::string session;       // the Mcp-Session-Id header (the first one)
  std::uint64_t cursor = 0;  // Last-Event-ID read as the endpoint reads it (0: none or malformed)
  bool bad_session = false;  // names a session this input saw deleted, shut down or minted by another
  bool mcp = false;        // on the MCP path
  bool approvals = false;  // on an approval route
  bool metadata = false;   // on the protected-resource metadata's path
  bool post_initialize = false;
  bool per_request = false;  // the body claims the per-request era (docs/eras.md#classification)
  std::optional<std::string> id_json;  // the body's top-level "id" (string or integer), compact
};

struct open_stream {
  std::unique_ptr<http_stream> s;
  bool post = false;
  bool per_request = false;   // a per-request call's stream (docs/eras.md#streams)
  std::uint64_t serial = 0;   // this input's n-th stream
  std::string session;        // the session it belongs to
  // The ids the ring had handed out when a GET attached: it may replay those, even if another
  // stream wrote them too; anything newer must reach one stream only.
  std::uint64_t replay_limit = 0;
  // A GET whose Last-Event-ID no stream of the session had written: the client guessed a cursor
  // (possibly of a POST answer not delivered yet), so it may see what that answer sends too.
  bool guessed = false;
  std::optional<std::string> id_json;  // POST: the request's id
  std::uint64_t last_id = 0;
  std::size_t events = 0;
  std::size_t own_responses = 0;
  std::shared_ptr<std::atomic<bool>> woken = std::make_shared<std::atomic<bool>>(false);
};

constexpr std::string_view gated_schema =
    R"({"type":"object","properties":{"tag":{"type":"string"},"approval_id":{"type":"string"}},)"
    R"("required":["tag"],"additionalProperties":false})";

class driver {
 public:
  explicit driver(std::string_view input) {
    while (!input.empty() && segments_.size() < max_segments) {
      const auto nul = input.find('\0');
      segments_.push_back(input.substr(0, nul));
      input = nul == std::string_view::npos ? std::string_view{} : input.substr(nul + 1);
    }
    std::string_view opts;
    if (!segments_.empty() && segments_.front().starts_with('%')) {
      opts = segments_.front().substr(1);
      next_ = 1;
    }
    const auto has = [&](char c) { return opts.find(c) != std::string_view::npos; };

    srv_.emplace(build_server());
    http_endpoint_options o;
    o.get_stream.revalidation.jitter_max = 0ms;
    o.post_stream.revalidation.jitter_max = 0ms;
    if (has('s')) o.sessions = false;
    sessions_on_ = o.sessions;
    if (has('r')) o.require_session = true;
    if (has('p')) o.streamed_post = false;
    if (has('b')) o.max_body_bytes = 64;
    if (has('c')) {
      o.session.max_sessions = 3;
      o.session.max_sessions_per_principal = 2;
      o.session.idle_ttl = 60s;
      o.session.stream.ring_frames = 6;
      o.session.stream.ring_bytes = 2048;
      o.session.stream.sink_queue_frames = 3;
      o.session.stream.get_streams_per_principal = 1;
      o.session.stream.open_channels = 2;
      o.budget.global_cap = 2;
      o.bridge.max_records = 2;
      o.bridge.parked_pressure_threshold = 1;
      o.bridge.arming_reap_after = 5s;
      o.bridge.streaming_park_after = 10s;
    }
    if (has('o')) o.allowed_origins = {"https://app.example"};
    if (has('h')) o.allowed_hosts = {"mcp.example"};
    if (has('v')) o.validate_loopback_host = false;
    if (has('l')) o.allow_loopback_same_origin = false;
    o.resource_metadata_url = "https://auth.example/.well-known/oauth-protected-resource";
    if (has('a')) {
      o.resource_metadata_url.clear();  // the served document's own URL
      o.protected_resource.resource = "http://127.0.0.1:8765/mcp";
      o.protected_resource.authorization_servers = {"https://auth.example"};
      o.protected_resource.scopes_supported = {"mcp:read", "mcp:operate", "mcp:supervise"};
      o.protected_resource.challenge_scope = "mcp:read";
    }
    ep_ = std::make_unique<http_endpoint>(*srv_, fuzz_authenticator{verdict_}, std::move(o),
                                          clock_ref<manual_clock>{clk_});
    if (has('q')) {
      exec_binding_ = ep_->bind_executor([this](std::function<void()> task) {
        queue_.push_back(std::move(task));
        return true;
      });
    } else if (has('x')) {
      exec_binding_ = ep_->bind_executor([](const std::function<void()>& /*task*/) { return false; });
    } else if (!has('n')) {
      exec_binding_ = ep_->bind_executor([](const std::function<void()>& task) {
        task();
        return true;
      });
    }
    if (has('m')) ep_->set_metrics(metrics_);
    if (has('u')) ep_->set_audit(audit_);
    ep_->set_approvals(approval_routes_);
    ep_->set_readiness([this] { return ready_; });
    if (has('k')) srv_->switches().set_disabled(true);
  }

  driver(const driver&) = delete;
  driver& operator=(const driver&) = delete;

  ~driver() {
    // Destroy every stream and let every task finish before the endpoint goes (docs/http.md).
    paused_.clear();
    streams_.clear();
    run_all();
    ops_.clear();
    ep_.reset();
  }

  void run() {
    run_segments(false);
    // The end: every queued task runs, every stream is pulled to its end (bounded), the endpoint
    // shuts down, the streams go.
    run_all();
    for (auto& st : streams_) drain(st, final_pulls);
    run_all();
    ep_->begin_shutdown();
    for (auto& st : streams_) drain(st, 4);
    streams_.clear();
    run_all();
    ops_.clear();
    ep_->tick();
    for (const int c : completions_) MCPCORE_FUZZ_CHECK(c == 1);
    MCPCORE_FUZZ_CHECK(ep_->budget().in_use() == 0);
  }

 private:
  // ---- the server ----------------------------------------------------------------------------

  template <class H>
  void add_tool(server_builder& b, const std::string& name, H h) {
    b.tool(name)
        .description("Fuzz tool " + name + ".")
        .security("Thing", operation::read)
        .effect(tool_effect::read_only, false)
        .handler(std::move(h));
  }

  server build_server() {
    server_builder b{{.name = "fuzz-http-endpoint", .version = "1.0.0"}};
    add_tool(b, "echo", [](call_context&, const arguments&) { return tool_result::text("echoed"); });
    add_tool(b, "report", [](call_context& ctx, const arguments&) {
      for (int i = 1; i <= 3; ++i) (void)ctx.progress(i, 3, "step");
      return tool_result::text("reported");
    });
    add_tool(b, "logger", [](call_context& ctx, const arguments&) {
      (void)ctx.log(log_level::info, "one");
      (void)ctx.log(log_level::warning, "two");
      return tool_result::text("logged");
    });
    add_tool(b, "sampler", [](call_context& ctx, const arguments&) {
      auto r = ctx.request("sampling/createMessage",
                           R"({"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10})",
                           0ms);
      return r ? tool_result::text("sampled") : tool_result::error("sampling failed");
    });
    add_tool(b, "closer", [](call_context& ctx, const arguments&) {
      (void)ctx.close_stream(500ms);
      (void)ctx.log(log_level::info, "after the close");
      return tool_result::text("closed");
    });
    add_tool(b, "fleet", [this](call_context& ctx, const arguments&) {
      operation_handle op = detach(ctx, "exec-7");
      (void)op.progress(1, 2);
      ops_.push_back(std::move(op));
      return tool_result::text("started");
    });
    // docs/eras.md#input-requests: asks for a name until it gets one (requestState round trips).
    add_tool(b, "asker", [](call_context& ctx, const arguments&) {
      const json::value name = ctx.input("name")["content"]["name"];
      if (name.is_string()) return tool_result::text("hello " + std::string{name.as_string()});
      return tool_result::need_input(input_required{}
                                         .ask("name", input_request::elicit("Name?", R"({"type":"object"})"))
                                         .state(std::string{ctx.round_state()} + "+"));
    });
    add_tool(b, "thrower", [](call_context&, const arguments&) -> tool_result {
      throw std::runtime_error("handler failure");
    });
    add_tool(b, "pause", [this](call_context& ctx, const arguments&) {
      interleave(ctx);
      return tool_result::text("resumed");
    });
    b.tool("delete_tag")
        .description("Deletes a tag.")
        .input_schema(std::string{gated_schema})
        .security("Tag", operation::delete_)
        .effect(tool_effect::destructive, true)
        .handler([](call_context&, const arguments& args) {
          return tool_result::text("deleted " + std::string{args["tag"].as_string()});
        });
    b.approvals(approvals_).clock(clock_ref<manual_clock>{clk_});
    b.oauth_scopes(fuzz_scopes());
    auto r = b.build();
    if (!r) {
      std::fprintf(stderr, "fuzz_http_endpoint: the server did not build: %s\n", r.error().message().c_str());
      __builtin_trap();
    }
    return std::move(*r);
  }

  // ---- the script ------------------------------------------------------------------------------

  /// Runs segments until the input ends or (inside a pause) a `resume`.
  void run_segments(bool in_pause) {
    while (next_ < segments_.size()) {
      const std::string_view seg = segments_[next_++];
      if (seg.starts_with('!')) {
        if (commands(seg.substr(1)) && in_pause) return;
      } else {
        send(seg);
      }
    }
  }

  /// Runs one handler's pause: the following segments run while the call is in flight.
  void interleave(call_context& ctx) {
    if (paused_.size() >= max_pause_depth) return;
    paused_.push_back(&ctx);
    run_segments(true);
    paused_.pop_back();
  }

  /// Runs the commands of one segment; whether it said `resume`.
  bool commands(std::string_view text) {
    std::size_t n = 0;
    while (!text.empty() && n < max_commands) {
      const auto start = text.find_first_not_of(" \t\r\n");
      if (start == std::string_view::npos) break;
      text.remove_prefix(start);
      const auto end = text.find_first_of(" \t\r\n");
      const std::string_view word = text.substr(0, end);
      text = end == std::string_view::npos ? std::string_view{} : text.substr(end);
      ++n;
      if (command(word)) return true;
    }
    return false;
  }

  bool command(std::string_view w) {
    call_context* ctx = paused_.empty() ? nullptr : paused_.back();
    if (trace) std::fprintf(stderr, "! %.*s%s\n", static_cast<int>(w.size()), w.data(), ctx != nullptr ? " (paused)" : "");
    if (w == "run") {
      run_one();
    } else if (w == "runall") {
      run_all();
    } else if (w == "pull") {
      for (std::size_t i = 0; i < streams_.size(); ++i) pull(streams_[i]);
    } else if (w == "drain") {
      for (std::size_t i = 0; i < streams_.size(); ++i) drain(streams_[i], drain_pulls);
    } else if (w.starts_with('+')) {
      if (const auto ms = to_u64(w.substr(1))) {
        const auto capped = std::min<std::uint64_t>(*ms, static_cast<std::uint64_t>(max_advance.count()));
        clk_.advance(std::chrono::milliseconds{static_cast<std::int64_t>(capped)});
      }
    } else if (w == "tick") {
      ep_->tick();
    } else if (w == "shutdown") {
      ep_->begin_shutdown();
      for (auto& [id, owner] : owners_) owner.clear();
    } else if (w == "drop") {
      if (!streams_.empty()) {
        streams_.front().s->write_failed();
        streams_.pop_front();
      }
    } else if (w == "close") {
      if (!streams_.empty()) streams_.back().s->close(close_reason::session_terminated);
    } else if (w == "valid") {
      verdict_->store(credential_verdict::valid);
    } else if (w == "stale") {
      verdict_->store(credential_verdict::valid_stale);
    } else if (w == "revoked") {
      verdict_->store(credential_verdict::revoked);
    } else if (w == "indeterminate") {
      verdict_->store(credential_verdict::indeterminate);
    } else if (w == "approve" || w == "reject") {
      if (!approval_id_.empty()) {
        const principal human{.id = "reviewer", .kind = principal_kind::human_interactive, .assured = true};
        if (w == "approve") {
          (void)approvals_.approve(approval_id_, human);
        } else {
          (void)approvals_.reject(approval_id_, human, "no");
        }
      }
    } else if (w == "kill") {
      srv_->switches().set_disabled(true);
    } else if (w == "unkill") {
      srv_->switches().set_disabled(false);
    } else if (w == "ready") {
      ready_ = true;
    } else if (w == "unready") {
      ready_ = false;
    } else if (w == "finish") {
      if (!ops_.empty()) (void)ops_.back().finish(tool_result::structured(R"({"status":"completed","agents_success":2})"));
    } else if (w == "oprogress") {
      if (!ops_.empty()) (void)ops_.back().progress(progress_ += 1, 100);
    } else if (w == "resume") {
      return ctx != nullptr;
    } else if (ctx != nullptr) {
      if (w == "progress") {
        (void)ctx->progress(progress_ += 1, 100, "step");
      } else if (w == "log") {
        (void)ctx->log(log_level::error, "paused\nline");
      } else if (w == "closestream") {
        (void)ctx->close_stream(250ms);
      } else if (w == "detach") {
        ops_.push_back(detach(*ctx, "exec-9"));
      } else if (w == "sample") {
        (void)ctx->request("sampling/createMessage", R"({"messages":[],"maxTokens":1})", 0ms);
      } else if (w == "ping") {
        (void)ctx->request("ping", {}, 0ms);
      }
    }
    return false;
  }

  void run_one() {
    if (queue_.empty()) return;
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    task();
  }
  void run_all() {
    // Bounded: a task may queue more (a paused handler sending requests).
    for (int i = 0; i < 256 && !queue_.empty(); ++i) run_one();
    MCPCORE_FUZZ_CHECK(queue_.empty());
  }

  // ---- requests --------------------------------------------------------------------------------

  std::string substitute_header(std::string_view v) const {
    std::string s{v};
    if (s.find('$') == std::string::npos) return s;
    for (std::size_t i = 0; i < max_sessions_kept; ++i) {
      const std::string key = "$" + std::to_string(i);
      s = replace_all(std::move(s), key, i < sessions_.size() ? sessions_[i] : std::string{});
    }
    s = replace_all(std::move(s), "$$", sessions_.empty() ? std::string{} : sessions_.back());
    s = replace_all(std::move(s), "$e", std::to_string(last_event_));
    s = replace_all(std::move(s), "$p", std::to_string(last_priming_));
    return s;
  }

  void send(std::string_view seg) {
    const auto take_line = [&seg]() {
      const auto nl = seg.find('\n');
      std::string_view line = seg.substr(0, nl);
      seg = nl == std::string_view::npos ? std::string_view{} : seg.substr(nl + 1);
      if (line.ends_with('\r')) line.remove_suffix(1);
      return line;
    };
    const std::string_view first = take_line();
    const auto sp = first.find(' ');
    std::string method{first.substr(0, sp)};
    std::string target = sp == std::string_view::npos ? std::string{"/mcp"} : substitute_header(first.substr(sp + 1));
    if (!approval_id_.empty()) target = replace_all(std::move(target), "$A", approval_id_);
    std::vector<http_header> headers;
    std::string local = "127.0.0.1:8765";
    while (!seg.empty()) {
      const std::string_view line = take_line();
      if (line.empty()) break;
      const auto colon = line.find(':');
      std::string_view name = line.substr(0, colon);
      std::string_view value = colon == std::string_view::npos ? std::string_view{} : line.substr(colon + 1);
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
      if (name == "@local") {
        local = std::string{value};
        continue;
      }
      headers.push_back(http_header{std::string{name}, substitute_header(value)});
    }
    std::string body{seg};
    if (!approval_id_.empty()) body = replace_all(std::move(body), "$A", approval_id_);

    request_info info;
    info.method = method;
    const auto first_header = [&headers](std::string_view name) -> std::optional<std::string_view> {
      for (const http_header& h : headers) {
        if (ieq(h.name, name)) return std::string_view{h.value};
      }
      return std::nullopt;
    };
    info.principal = principal_of(first_header("Authorization"));
    const std::string_view path = path_of(target);
    info.mcp = path == "/mcp" || path == "/mcp/v1/";
    info.approvals = path.starts_with("/api/v1/approvals/");
    info.metadata = path.starts_with("/.well-known/oauth-protected-resource");
    {
      json::document doc;
      if (auto root = doc.parse(body); root && root->is_object()) {
        const json::value id = (*root)["id"];
        if (id.is_string() || id.is_integer()) info.id_json = compact(id);
        info.post_initialize = method == "POST" && (*root)["method"].is_string() &&
                               (*root)["method"].as_string() == "initialize";
        // docs/eras.md#classification: a claim in params._meta makes it per-request, where the
        // session header means nothing.
        info.per_request = method == "POST" && (*root)["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].exists();
      }
    }
    if (const auto sid = first_header("Mcp-Session-Id")) info.session = std::string{*sid};
    if (auto last = first_header("Last-Event-ID")) {
      while (!last->empty() && (last->front() == ' ' || last->front() == '\t')) last->remove_prefix(1);
      while (!last->empty() && (last->back() == ' ' || last->back() == '\t')) last->remove_suffix(1);
      if (all_digits(*last)) info.cursor = to_u64(*last).value_or(0);
    }
    if (sessions_on_ && info.mcp && !info.post_initialize && !info.per_request) {
      if (const auto sid = first_header("Mcp-Session-Id")) {
        for (const auto& [id, owner] : owners_) {
          if (id == *sid) info.bad_session = owner.empty() || owner != info.principal;
        }
      }
    }

    std::vector<http_header_view> fields;
    fields.reserve(headers.size());
    for (const http_header& h : headers) fields.push_back(http_header_view{h.name, h.value});
    http_request_view view;
    view.method = method;
    view.target = target;
    view.body = body;
    view.headers = fields;
    view.remote = "127.0.0.1:50000";
    view.local = parse_local_address(local);

    const std::size_t slot = completions_.size();
    completions_.push_back(0);
    if (trace) std::fprintf(stderr, "[%zu] %s %s (%zu headers, %zu body bytes)\n", slot, method.c_str(), target.c_str(), headers.size(), body.size());
    // The head checks (docs/http.md#head-checks) refuse only what handle refuses, with the same
    // status: handle runs the same checks again.
    http_request_view head = view;
    head.body = {};
    head.declared_length = body.size();
    const std::optional<http_response> refused = ep_->check_head(head);
    const int head_status = refused ? refused->status : 0;
    if (refused) MCPCORE_FUZZ_CHECK(head_status == 200 || (head_status >= 400 && head_status < 500));
    ep_->handle(view, [this, slot, info, head_status](http_reply r) {
      if (trace && head_status != 0) std::fprintf(stderr, "head %d handle %d\n", head_status, r.head.status);
      if (head_status != 0) MCPCORE_FUZZ_CHECK(r.head.status == head_status);
      on_reply(slot, info, std::move(r));
    });
  }

  // ---- replies ---------------------------------------------------------------------------------

  void on_reply(std::size_t slot, const request_info& info, http_reply r) {
    MCPCORE_FUZZ_CHECK(slot < completions_.size());
    MCPCORE_FUZZ_CHECK(++completions_[slot] == 1);
    const int status = r.head.status;
    if (trace) {
      std::fprintf(stderr, "[%zu] -> %d%s %s\n", slot, status, r.stream ? " (stream)" : "", r.head.body.c_str());
    }

    for (const http_header& h : r.head.headers) {
      MCPCORE_FUZZ_CHECK(!h.name.empty());
      for (const char c : h.name) MCPCORE_FUZZ_CHECK(is_tchar(c));
      for (const char c : h.value) MCPCORE_FUZZ_CHECK(c != '\r' && c != '\n' && c != '\0');
    }
    if (const auto cid = r.head.header("X-Correlation-Id")) MCPCORE_FUZZ_CHECK(is_correlation_id(*cid));

    if (r.stream) {
      MCPCORE_FUZZ_CHECK(!info.bad_session);
      MCPCORE_FUZZ_CHECK(status == 200);
      MCPCORE_FUZZ_CHECK(r.head.header("Content-Type") == std::optional<std::string_view>{"text/event-stream"});
      MCPCORE_FUZZ_CHECK(r.head.body.empty());
      MCPCORE_FUZZ_CHECK(info.mcp);
      MCPCORE_FUZZ_CHECK(info.method == "POST" || info.method == "GET");
      keep(std::move(r.stream), info);
      return;
    }
    if (info.approvals && !info.mcp) {
      MCPCORE_FUZZ_CHECK(status >= 200 && status <= 599);
      return;  // fuzz_approval checks the approval routes
    }
    if (!info.mcp) {
      // 400: a repeated Host, refused on every route (docs/security.md#dns-rebinding-host-and-origin);
      // 204: the metadata's preflight.
      MCPCORE_FUZZ_CHECK(status == 200 || status == 204 || status == 400 || status == 403 || status == 404 ||
                         status == 405 || status == 503);
      if (info.metadata && status == 200) {
        json::document doc;
        const auto root = doc.parse(r.head.body);
        MCPCORE_FUZZ_CHECK(root.has_value() && root->is_object());
        MCPCORE_FUZZ_CHECK((*root)["resource"].is_string());
      }
      if (status == 204) MCPCORE_FUZZ_CHECK(info.metadata && info.method == "OPTIONS");
      return;
    }

    switch (status) {
      case 200: case 202: case 400: case 401: case 403: case 404: case 405: case 406: case 409: case 410:
      case 413: case 415: case 429: case 500: case 503:
        break;
      default:
        std::fprintf(stderr, "unexpected status %d\n", status);
        MCPCORE_FUZZ_CHECK(false);
    }
    if (status == 405) {
      MCPCORE_FUZZ_CHECK(r.head.body.empty());
      const auto allow = r.head.header("Allow");
      MCPCORE_FUZZ_CHECK(allow && (*allow == "GET, POST, DELETE" || *allow == "POST"));
      return;
    }
    if (status == 202) {
      MCPCORE_FUZZ_CHECK(!info.bad_session);
      MCPCORE_FUZZ_CHECK(r.head.body.empty());
      MCPCORE_FUZZ_CHECK(info.method == "POST");
      return;
    }
    if (r.head.body.empty()) {
      MCPCORE_FUZZ_CHECK(status == 200 && info.method == "DELETE");
      MCPCORE_FUZZ_CHECK(!info.bad_session);
      // The session is over (the header named it: the endpoint validated it).
      for (auto& [id, owner] : owners_) {
        if (id == info.session) owner.clear();
      }
      return;
    }
    MCPCORE_FUZZ_CHECK(r.head.header("Content-Type") == std::optional<std::string_view>{"application/json"});
    json::document doc;
    const auto root = doc.parse(r.head.body);
    MCPCORE_FUZZ_CHECK(root.has_value());
    MCPCORE_FUZZ_CHECK(root->is_object());
    MCPCORE_FUZZ_CHECK((*root)["jsonrpc"].is_string() && (*root)["jsonrpc"].as_string() == "2.0");
    const json::value id = (*root)["id"];
    MCPCORE_FUZZ_CHECK(id.exists());
    MCPCORE_FUZZ_CHECK(id.is_null() || (info.id_json && compact(id) == *info.id_json));
    const json::value result = (*root)["result"];
    const json::value error = (*root)["error"];
    MCPCORE_FUZZ_CHECK(result.exists() != error.exists());
    if (result.exists()) {
      MCPCORE_FUZZ_CHECK(!info.bad_session);
      MCPCORE_FUZZ_CHECK(!id.is_null());
      MCPCORE_FUZZ_CHECK(status == 200);
      MCPCORE_FUZZ_CHECK(info.method == "POST");
    } else {
      check_error_object(error);
      const std::int64_t code = error["code"].to_int64().value_or(0);
      if (status == 401) {
        MCPCORE_FUZZ_CHECK(code == -32001);
        const auto challenge = r.head.header("WWW-Authenticate");
        MCPCORE_FUZZ_CHECK(challenge && challenge->starts_with("Bearer"));
      }
      if (const auto challenge = r.head.header("WWW-Authenticate"); challenge && status == 403) {
        MCPCORE_FUZZ_CHECK(challenge->starts_with(R"(Bearer error="insufficient_scope", scope=")"));
        MCPCORE_FUZZ_CHECK(code == -32004);
        MCPCORE_FUZZ_CHECK(info.principal == "dave");
      }
      if (code == -32006) {
        const json::value aid = error["data"]["approval_id"];
        if (aid.is_string() && is_approval_id(aid.as_string())) approval_id_ = std::string{aid.as_string()};
      }
      const json::value retry = error["data"]["retry_after_ms"];
      const bool retry_header = r.head.header("Retry-After").has_value();
      if (retry_header) {
        MCPCORE_FUZZ_CHECK(status == 429 || status == 503);
        MCPCORE_FUZZ_CHECK(retry.is_integer());
        MCPCORE_FUZZ_CHECK(all_digits(*r.head.header("Retry-After")));
      } else if (status == 429 || status == 503) {
        MCPCORE_FUZZ_CHECK(!retry.is_integer() || code == -32005);
      }
    }
    if (const auto sid = r.head.header("Mcp-Session-Id")) {
      MCPCORE_FUZZ_CHECK(sessions_on_);
      MCPCORE_FUZZ_CHECK(status == 200 && info.post_initialize && result.exists());
      owners_.emplace_back(std::string{*sid}, info.principal);
      MCPCORE_FUZZ_CHECK(sid->size() == 32 && is_lower_hex(*sid));
      if (sessions_.size() < max_sessions_kept) {
        sessions_.emplace_back(*sid);
      } else {
        sessions_.back() = std::string{*sid};
      }
    }
  }

  void keep(std::unique_ptr<http_stream> s, const request_info& info) {
    if (streams_.size() >= max_streams) {
      streams_.front().s->write_failed();
      streams_.pop_front();
    }
    open_stream st;
    st.s = std::move(s);
    st.post = info.method == "POST";
    st.per_request = info.per_request;
    st.id_json = info.id_json;
    st.serial = ++stream_serial_;
    st.session = info.session;
    if (!st.post) {
      // The GET attached within this very `handle` (single-threaded: nothing committed since).
      if (auto sess = ep_->sessions().validate_and_touch(info.session, info.principal)) {
        st.replay_limit = sess->stream()->stats().next_id - 1;
      }
      const auto seen = written_.find(info.session);
      st.guessed = info.cursor != 0 && (seen == written_.end() || !seen->second.contains(info.cursor));
      if (st.guessed) guessed_.push_back(st.serial);
    }
    auto w = st.woken;
    st.s->on_ready([w] { w->store(true); });
    streams_.push_back(std::move(st));
  }

  // ---- streams ---------------------------------------------------------------------------------

  void pull(open_stream& st) {
    if (st.s == nullptr || st.s->finished()) return;
    const auto wait = st.s->wait_time(clk_.steady_now());
    MCPCORE_FUZZ_CHECK(wait.count() >= 0);
    st.woken->store(false);
    std::string out;
    st.s->pull(clk_.steady_now(), out);
    if (!out.empty()) st.s->written();
    if (trace && !out.empty()) std::fprintf(stderr, "pulled %s stream:\n%s", st.post ? "POST" : "GET", out.c_str());
    check_chunk(st, out);
  }

  /// Pulls until the stream finished, at most `n` times, moving the clock over idle waits.
  void drain(open_stream& st, int n) {
    for (int i = 0; i < n && st.s != nullptr && !st.s->finished(); ++i) {
      const auto wait = st.s->wait_time(clk_.steady_now());
      if (wait.count() > 0 && !st.woken->load()) clk_.advance(std::min<std::chrono::milliseconds>(wait, 60s));
      pull(st);
    }
  }

  struct sse_event {
    bool has_id = false;
    bool has_retry = false;
    bool has_data = false;
    std::string type;
    std::string data;
  };

  void check_chunk(open_stream& st, std::string_view out) {
    if (out.empty()) return;
    MCPCORE_FUZZ_CHECK(out.ends_with("\n\n"));  // whole events only
    sse_event cur;
    bool any = false;
    while (!out.empty()) {
      const auto nl = out.find('\n');
      const std::string_view line = out.substr(0, nl);
      out = nl == std::string_view::npos ? std::string_view{} : out.substr(nl + 1);
      MCPCORE_FUZZ_CHECK(line.find('\r') == std::string_view::npos);
      if (line.empty()) {
        if (any) dispatch(st, cur);
        cur = sse_event{};
        any = false;
        continue;
      }
      if (line.front() == ':') continue;
      any = true;
      const auto colon = line.find(':');
      const std::string_view field = line.substr(0, colon);
      std::string_view value = colon == std::string_view::npos ? std::string_view{} : line.substr(colon + 1);
      if (value.starts_with(' ')) value.remove_prefix(1);
      if (field == "id") {
        MCPCORE_FUZZ_CHECK(!st.per_request);  // docs/eras.md#streams: no event ids
        MCPCORE_FUZZ_CHECK(all_digits(value));
        const auto id = to_u64(value);
        MCPCORE_FUZZ_CHECK(id && *id > st.last_id);
        st.last_id = *id;
        last_event_ = *id;
        // MCP transports: the server MUST NOT broadcast a message across streams. A frame committed
        // after a stream attached reaches that stream or another, never both.
        auto& first = written_[st.session].try_emplace(*id, st.serial).first->second;
        const auto is_guess = [this](std::uint64_t serial) {
          return std::find(guessed_.begin(), guessed_.end(), serial) != guessed_.end();
        };
        if (first != st.serial && *id > st.replay_limit && !is_guess(first) && !is_guess(st.serial)) {
          std::fprintf(stderr, "event %llu went to stream %llu and live to stream %llu\n",
                       static_cast<unsigned long long>(*id), static_cast<unsigned long long>(first),
                       static_cast<unsigned long long>(st.serial));
          MCPCORE_FUZZ_CHECK(false);
        }
        cur.has_id = true;
        if (st.post && st.events == 0) last_priming_ = *id;
      } else if (field == "event") {
        cur.type = std::string{value};
      } else if (field == "data") {
        if (cur.has_data) cur.data.push_back('\n');
        cur.data.append(value);
        cur.has_data = true;
      } else if (field == "retry") {
        MCPCORE_FUZZ_CHECK(all_digits(value));
        cur.has_retry = true;
      } else {
        std::fprintf(stderr, "unexpected SSE field: %.*s\n", static_cast<int>(field.size()), field.data());
        MCPCORE_FUZZ_CHECK(false);
      }
    }
    MCPCORE_FUZZ_CHECK(!any);
  }

  void dispatch(open_stream& st, const sse_event& e) {
    if (st.per_request) {
      // docs/eras.md#streams: no priming event, no event ids, no retry.
      MCPCORE_FUZZ_CHECK(!e.has_retry);
      MCPCORE_FUZZ_CHECK(!e.data.empty());
    } else if (st.post && st.events == 0) {
      // The priming event (SEP-1699): retry, one empty data line.
      MCPCORE_FUZZ_CHECK(e.has_retry);
      MCPCORE_FUZZ_CHECK(e.has_data && e.data.empty());
    }
    ++st.events;
    if (e.data.empty()) return;
    json::document doc;
    const auto root = doc.parse(e.data);
    MCPCORE_FUZZ_CHECK(root.has_value());
    MCPCORE_FUZZ_CHECK(root->is_object());
    if (!e.type.empty() && e.type != "message") return;
    MCPCORE_FUZZ_CHECK((*root)["jsonrpc"].is_string() && (*root)["jsonrpc"].as_string() == "2.0");
    const json::value method = (*root)["method"];
    if (method.exists()) {
      MCPCORE_FUZZ_CHECK(method.is_string());
      return;
    }
    const json::value id = (*root)["id"];
    MCPCORE_FUZZ_CHECK(id.exists());
    const json::value result = (*root)["result"];
    const json::value error = (*root)["error"];
    MCPCORE_FUZZ_CHECK(result.exists() != error.exists());
    if (error.exists()) check_error_object(error);
    if (st.post) {
      MCPCORE_FUZZ_CHECK(st.id_json && compact(id) == *st.id_json);
      MCPCORE_FUZZ_CHECK(++st.own_responses == 1);
    }
  }

  // ---- state -----------------------------------------------------------------------------------

  std::vector<std::string_view> segments_;
  std::size_t next_ = 0;

  manual_clock clk_;
  std::shared_ptr<std::atomic<credential_verdict>> verdict_ =
      std::make_shared<std::atomic<credential_verdict>>(credential_verdict::valid);
  memory_approval_store store_;
  approval_service approvals_{store_, clock_ref<manual_clock>{clk_}};
  approval_endpoint approval_routes_{approvals_, allow_all_authorizer{}};
  metrics_registry metrics_{"fuzz"};
  memory_audit_sink audit_;
  std::optional<server> srv_;
  std::unique_ptr<http_endpoint> ep_;
  http_executor_binding exec_binding_;  // the executor of the 'q', 'x' and default modes

  std::deque<std::function<void()>> queue_;
  std::vector<int> completions_;
  std::deque<open_stream> streams_;
  std::uint64_t stream_serial_ = 0;
  // Per session: which stream wrote each event id first.
  std::map<std::string, std::map<std::uint64_t, std::uint64_t>> written_;
  std::vector<std::uint64_t> guessed_;  // the streams of GETs with a guessed cursor
  std::vector<operation_handle> ops_;
  std::vector<call_context*> paused_;
  std::vector<std::string> sessions_;
  // Every session minted in this input and its principal ("" once deleted or shut down).
  std::vector<std::pair<std::string, std::string>> owners_;
  bool sessions_on_ = true;
  std::string approval_id_;
  std::uint64_t last_event_ = 0;
  std::uint64_t last_priming_ = 0;
  double progress_ = 0;
  bool ready_ = true;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input{reinterpret_cast<const char*>(data), size};
  driver d{input};
  d.run();
  return 0;
}
