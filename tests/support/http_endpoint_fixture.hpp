// SPDX-License-Identifier: Apache-2.0
// Shared driver of the sans-I/O HTTP endpoint tests: a thread-per-task executor, a two-principal
// authenticator, the requests a client sends (both eras), a box a reply lands in, accessors of a
// reply's headers, body and error, the SSE message predicates, an SSE stream reader on a manual
// clock, and a harness owning the server, the endpoint and its executor.
#ifndef MCPCORE_TESTS_SUPPORT_HTTP_ENDPOINT_FIXTURE_HPP
#define MCPCORE_TESTS_SUPPORT_HTTP_ENDPOINT_FIXTURE_HPP

#include <mcpcore/transport/http_endpoint.hpp>

#include <doctest/doctest.h>

#include "support/header_views.hpp"
#include "support/server_fixture.hpp"
#include "support/sse_events.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/wire/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace http_endpoint_fixture {

using namespace std::chrono_literals;
using server_fixture::patience;

/// The longest real wait of one stream pull for its waker (stream timing runs on the manual clock).
inline constexpr std::chrono::milliseconds pull_wait{20};

// ---- synchronisation ---------------------------------------------------------------------------

/// Polls `pred` until it holds (bounded); whether it did.
inline bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout = patience) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return pred();
}

/// An executor with a thread per task, joined at the end (or refusing every task while `refuse`).
class thread_executor {
 public:
  thread_executor() = default;
  ~thread_executor() { join(); }
  thread_executor(const thread_executor&) = delete;
  thread_executor& operator=(const thread_executor&) = delete;

  mcpcore::http_executor get() {
    return [this](std::function<void()> task) {
      if (refuse.load()) return false;
      std::lock_guard lock{mu_};
      threads_.emplace_back(std::move(task));
      return true;
    };
  }
  /// Joins every task, also those the joined ones submitted.
  void join() {
    for (;;) {
      std::vector<std::thread> ts;
      {
        std::lock_guard lock{mu_};
        ts.swap(threads_);
      }
      if (ts.empty()) return;
      for (auto& t : ts) t.join();
    }
  }
  std::atomic<bool> refuse{false};

 private:
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

// ---- the authenticator -------------------------------------------------------------------------

/// Two principals: `Authorization: Bearer alice-token` is alice, `bob-token` is bob; anything
/// else fails. Re-validation answers the shared verdict (valid unless a test changes it).
struct two_principals {
  std::shared_ptr<std::atomic<mcpcore::credential_verdict>> verdict =
      std::make_shared<std::atomic<mcpcore::credential_verdict>>(mcpcore::credential_verdict::valid);

  [[nodiscard]] std::optional<mcpcore::principal> authenticate(const mcpcore::http_request_view& req) const {
    const auto a = req.header("Authorization");
    if (!a) return std::nullopt;
    mcpcore::principal p;
    if (*a == "Bearer alice-token") {
      p.id = "alice";
    } else if (*a == "Bearer bob-token") {
      p.id = "bob";
    } else {
      return std::nullopt;
    }
    return p;
  }
  [[nodiscard]] mcpcore::credential_verdict revalidate(const mcpcore::principal& /*p*/) const noexcept {
    return verdict->load();
  }
};
static_assert(mcpcore::authenticator<two_principals>);

// ---- requests ----------------------------------------------------------------------------------

/// A request the test owns; `view()` is valid while it lives and its fields do not change.
struct request {
  std::string method = "POST";
  std::string target = "/mcp";
  std::vector<mcpcore::http_header> headers;
  std::string body;
  std::string local = "127.0.0.1:8765";

  request& set(std::string name, std::string value) {
    for (auto& h : headers) {
      if (h.name == name) {
        h.value = std::move(value);
        return *this;
      }
    }
    headers.push_back(mcpcore::http_header{std::move(name), std::move(value)});
    return *this;
  }
  request& drop(std::string_view name) {
    std::erase_if(headers, [&](const mcpcore::http_header& h) { return h.name == name; });
    return *this;
  }
  [[nodiscard]] mcpcore::http_request_view view() const {
    return {.method = method,
            .target = target,
            .body = body,
            .headers = fields.of(headers),
            .remote = "127.0.0.1:50000",
            .local = mcpcore::parse_local_address(local)};
  }
  /// The views of `headers` the last `view()` handed out.
  test_support::header_views fields;
};

/// A request as the TypeScript SDK client sends it: `Host`, `Content-Type` (when a body has one),
/// `Accept`, the bearer `token`, and `Mcp-Session-Id` when `session_id` is not empty.
inline request client_request(std::string method, std::string body, std::string_view content_type,
                              std::string_view accept, std::string_view session_id, std::string_view token) {
  request r;
  r.method = std::move(method);
  r.body = std::move(body);
  r.set("Host", "localhost:8765");
  if (!content_type.empty()) r.set("Content-Type", std::string{content_type});
  r.set("Accept", std::string{accept});
  r.set("Authorization", "Bearer " + std::string{token});
  if (!session_id.empty()) r.set("Mcp-Session-Id", std::string{session_id});
  return r;
}

/// A POST of a JSON-RPC message (no era headers).
inline request post(std::string body, std::string_view session_id = {}, std::string_view token = "alice-token") {
  return client_request("POST", std::move(body), "application/json", "application/json, text/event-stream",
                        session_id, token);
}

/// A GET (an SSE stream) on `session_id` (none when empty).
inline request get(std::string_view session_id, std::string_view token = "alice-token") {
  return client_request("GET", {}, {}, "text/event-stream", session_id, token);
}

inline request del(std::string_view session_id, std::string_view token = "alice-token") {
  request r = get(session_id, token);
  r.method = "DELETE";
  r.drop("Accept");
  return r;
}

// ---- the per-request era (MCP 2026-07-28) ------------------------------------------------------

/// The per-request revision.
inline constexpr std::string_view rev = "2026-07-28";

/// The `_meta` envelope of a per-request request: the revision, `caps` and `extra` members
/// (JSON text without braces, e.g. `"progressToken":1`).
inline std::string envelope(std::string_view extra = {}, std::string_view caps = "{}", std::string_view version = rev) {
  std::string m = R"({"io.modelcontextprotocol/protocolVersion":")";
  m += version;
  m += R"(","io.modelcontextprotocol/clientCapabilities":)";
  m += caps;
  if (!extra.empty()) {
    m += ',';
    m += extra;
  }
  m += '}';
  return m;
}

/// A request whose params are `members` (JSON text without braces) and `_meta` = `meta`.
inline std::string pr_body(std::string_view id_json, std::string_view method, std::string_view members = {},
                           const std::string& meta = envelope()) {
  std::string p = "{";
  p += members;
  if (!members.empty()) p += ',';
  p += R"("_meta":)";
  p += meta;
  p += '}';
  return server_fixture::request(id_json, method, p);
}

/// A per-request POST with its `MCP-Protocol-Version` and `Mcp-Method` headers, and `Mcp-Name`
/// when `name` is given.
inline request pr_post(std::string body, std::string_view method, std::optional<std::string_view> name = std::nullopt,
                       std::string_view token = "alice-token") {
  request r = post(std::move(body), {}, token);
  r.set("MCP-Protocol-Version", std::string{rev});
  r.set("Mcp-Method", std::string{method});
  if (name) r.set("Mcp-Name", std::string{*name});
  return r;
}

// ---- replies -----------------------------------------------------------------------------------

/// Where a reply lands (from any thread); counts the calls of the completion.
struct reply_box {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<mcpcore::http_reply> reply;
  int calls = 0;

  void put(mcpcore::http_reply r) {
    {
      std::lock_guard lock{mu};
      reply = std::move(r);
      ++calls;
    }
    cv.notify_all();
  }
  bool wait(std::chrono::milliseconds timeout = patience) {
    std::unique_lock lock{mu};
    return cv.wait_for(lock, timeout, [&] { return reply.has_value(); });
  }
};

/// A completion that puts the reply into `box`.
inline mcpcore::http_completion into(const std::shared_ptr<reply_box>& box) {
  return [box](mcpcore::http_reply r) { box->put(std::move(r)); };
}

inline std::string header_of(const mcpcore::http_reply& r, std::string_view name) {
  return std::string{r.head.header(name).value_or("<absent>")};
}

inline server_fixture::parsed body_of(const mcpcore::http_reply& r) { return server_fixture::parse(r.head.body); }

/// `error.code` of the reply's body, or 0.
inline std::int64_t code_of(const mcpcore::http_reply& r) {
  return body_of(r).root["error"]["code"].to_int64().value_or(0);
}

/// The JSON text of `path` in the reply's body, or "<absent>".
inline std::string json_at(const mcpcore::http_reply& r,
                           const std::function<mcpcore::json::value(mcpcore::json::value)>& path) {
  const auto p = body_of(r);
  const mcpcore::json::value v = path(p.root);
  return v.exists() ? server_fixture::to_json(v) : std::string{"<absent>"};
}
inline std::string id_of(const mcpcore::http_reply& r) {
  return json_at(r, [](mcpcore::json::value v) { return v["id"]; });
}
inline std::string data_of(const mcpcore::http_reply& r, std::string_view member) {
  return json_at(r, [member](mcpcore::json::value v) { return v["error"]["data"][member]; });
}

/// The checks every JSON refusal of the per-request era shares: the status, the code, the id
/// echoed, the content type.
inline void check_refusal(const mcpcore::http_reply& r, int status, std::int64_t code, std::string_view id_json) {
  CAPTURE(r.head.body);
  CHECK(r.head.status == status);
  CHECK(code_of(r) == code);
  CHECK(id_of(r) == id_json);
  CHECK(header_of(r, "Content-Type") == "application/json");
}

// ---- SSE ---------------------------------------------------------------------------------------

using sse_test::parse_sse;
using sse_test::sse_event;

/// The events carrying a JSON-RPC message (priming events, heartbeats and retry blocks left out).
inline std::vector<sse_event> messages_of(const std::vector<sse_event>& events) {
  std::vector<sse_event> out;
  for (const auto& e : events) {
    if (!e.data.empty()) out.push_back(e);
  }
  return out;
}

inline bool has_method(const sse_event& e, std::string_view method) {
  if (e.data.empty()) return false;
  const auto p = server_fixture::parse(e.data);
  return p.root["method"].is_string() && p.root["method"].as_string() == method;
}
inline bool is_progress(const sse_event& e) { return has_method(e, "notifications/progress"); }
inline bool is_log(const sse_event& e) { return has_method(e, "notifications/message"); }
inline bool is_close(const sse_event& e) { return has_method(e, mcpcore::default_close_notification_method); }
inline bool is_response_for(const sse_event& e, std::string_view id_json) {
  if (e.data.empty()) return false;
  const auto p = server_fixture::parse(e.data);
  return !p.root["method"].exists() && server_fixture::to_json(p.root["id"]) == id_json &&
         (p.root["result"].exists() || p.root["error"].exists());
}
inline std::size_t count_if_events(const std::vector<sse_event>& ev, bool (*pred)(const sse_event&)) {
  return static_cast<std::size_t>(std::count_if(ev.begin(), ev.end(), pred));
}

/// Reads an `http_stream` the way a transport does: pull, write (always succeeds), `written()`,
/// and between pulls wait for the waker (bounded in real time; the stream's own timing runs on the
/// manual clock). Movable; the stream it owns stays where it is.
class sse_reader {
 public:
  sse_reader(std::unique_ptr<mcpcore::http_stream> s, mcpcore::manual_clock& clk)
      : s_(std::move(s)), clk_(&clk), wake_(std::make_shared<wake_state>()) {
    REQUIRE(s_);
    auto w = wake_;
    s_->on_ready([w] { w->set(); });
  }
  sse_reader(const sse_reader&) = delete;
  sse_reader& operator=(const sse_reader&) = delete;
  sse_reader(sse_reader&&) = default;
  sse_reader& operator=(sse_reader&&) = default;
  ~sse_reader() = default;

  /// One pull; its bytes.
  std::string pull() {
    if (!s_ || s_->finished()) return {};
    const auto wait = s_->wait_time(clk_->steady_now());
    if (wait > 0ms) wake_->wait(std::min<std::chrono::milliseconds>(wait, pull_wait));
    std::string out;
    s_->pull(clk_->steady_now(), out);
    if (!out.empty()) s_->written();
    wire_ += out;
    return out;
  }
  /// Pulls until `pred(events)` holds or the stream finished (bounded); whether `pred` held.
  bool drive_until(const std::function<bool(const std::vector<sse_event>&)>& pred,
                   std::chrono::milliseconds timeout = patience) {
    return sse_test::step_until([&] { return pred(events()); }, [&] { return finished(); }, [&] { (void)pull(); },
                                timeout);
  }
  /// Pulls until the stream finished (bounded).
  void drive_to_end(std::chrono::milliseconds timeout = patience) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!finished() && std::chrono::steady_clock::now() < deadline) (void)pull();
    REQUIRE_MESSAGE(finished(), "the stream did not finish; wire so far: " << wire_);
  }
  /// The client goes away: the write fails and the transport destroys the stream.
  void drop() {
    if (!s_) return;
    s_->write_failed();
    s_.reset();
  }
  /// The transport destroys the stream without a failed write (it gave up on it).
  void destroy() { s_.reset(); }
  [[nodiscard]] bool finished() const { return !s_ || s_->finished(); }
  [[nodiscard]] bool alive() const { return static_cast<bool>(s_); }
  [[nodiscard]] mcpcore::http_stream* stream() const { return s_.get(); }
  [[nodiscard]] const std::string& wire() const { return wire_; }
  [[nodiscard]] std::vector<sse_event> events() const { return parse_sse(wire_); }
  /// The events carrying a message (comments are not events).
  [[nodiscard]] std::vector<sse_event> messages() const { return messages_of(events()); }

 private:
  struct wake_state {
    std::mutex mu;
    std::condition_variable cv;
    bool woken = false;
    void set() {
      {
        std::lock_guard lock{mu};
        woken = true;
      }
      cv.notify_all();
    }
    void wait(std::chrono::milliseconds d) {
      std::unique_lock lock{mu};
      (void)cv.wait_for(lock, d, [&] { return woken; });
      woken = false;
    }
  };
  std::unique_ptr<mcpcore::http_stream> s_;
  mcpcore::manual_clock* clk_;
  std::shared_ptr<wake_state> wake_;
  std::string wire_;
};

// ---- the harness ---------------------------------------------------------------------------------

/// Adds a read tool `name` (no arguments) with handler `h`.
template <class H>
void add_tool(mcpcore::server_builder& b, const std::string& name, H h, bool idempotent = false) {
  b.tool(name)
      .description("Test tool " + name + ".")
      .security("Thing", mcpcore::operation::read)
      .effect(mcpcore::tool_effect::read_only, idempotent)
      .handler(std::move(h));
}

/// A resource handler answering `text` (text/plain) for the URI read.
inline auto text_resource(std::string text) {
  return [text = std::move(text)](mcpcore::call_context&, std::string_view uri, const mcpcore::uri_variables&) {
    return std::optional<mcpcore::resource_result>{
        mcpcore::resource_result{}.add_text(std::string{uri}, "text/plain", text)};
  };
}

/// Test options: no revalidation jitter.
inline mcpcore::http_endpoint_options test_options() {
  mcpcore::http_endpoint_options o;
  o.get_stream.revalidation.jitter_max = 0ms;
  o.post_stream.revalidation.jitter_max = 0ms;
  return o;
}

/// The base of a test's fixture: the server, the endpoint over it on a manual clock and the
/// thread-per-task executor it dispatches on. The fixture declares its tools and calls `serve`;
/// a fixture whose tools use its own members joins `exec` in its destructor.
struct endpoint_harness {
  endpoint_harness() = default;
  ~endpoint_harness() { exec.join(); }
  endpoint_harness(const endpoint_harness&) = delete;
  endpoint_harness& operator=(const endpoint_harness&) = delete;

  /// Builds the server from `b` and the endpoint over it (`test_options()` changed by `tweak`),
  /// with `exec` bound unless `with_executor` is false.
  void serve(mcpcore::server_builder& b, const std::function<void(mcpcore::http_endpoint_options&)>& tweak = {},
             bool with_executor = true) {
    srv.emplace(server_fixture::build(b));
    mcpcore::http_endpoint_options o = test_options();
    if (tweak) tweak(o);
    ep = std::make_unique<mcpcore::http_endpoint>(*srv, auth, o, mcpcore::clock_ref<mcpcore::manual_clock>{clk});
    if (with_executor) exec_binding = ep->bind_executor(exec.get());
  }

  /// Sends `r` and waits for its reply.
  mcpcore::http_reply send(const request& r) {
    auto box = start(r);
    REQUIRE_MESSAGE(box->wait(), "no reply to " << r.method << " " << r.body);
    std::lock_guard lock{box->mu};
    CHECK(box->calls == 1);
    return std::move(*box->reply);
  }
  /// Sends `r` without waiting (the reply lands in the returned box).
  std::shared_ptr<reply_box> start(const request& r) {
    auto box = std::make_shared<reply_box>();
    ep->handle(r.view(), into(box));
    return box;
  }
  /// A reader of the reply's stream.
  sse_reader read(mcpcore::http_reply& r) {
    REQUIRE(r.stream);
    return sse_reader{std::move(r.stream), clk};
  }

  mcpcore::manual_clock clk;
  two_principals auth;
  std::optional<mcpcore::server> srv;
  thread_executor exec;
  std::unique_ptr<mcpcore::http_endpoint> ep;
  mcpcore::http_executor_binding exec_binding;  // `exec` is the endpoint's executor while it is bound
};

}  // namespace http_endpoint_fixture

#endif  // MCPCORE_TESTS_SUPPORT_HTTP_ENDPOINT_FIXTURE_HPP
