// SPDX-License-Identifier: Apache-2.0
// End-to-end tests, sans-I/O, of the dispatch core driven together with the session layer the way
// an HTTP transport drives them (docs/sessions.md#streamed-post-admission, #streamed-post,
// #close-reasons, #the-sweep, #cancellation, #progress-records, #ordering-guarantees): admission,
// arm, the dispatch on a worker thread, the in-call message sink bridged onto the progress record,
// the streamed-POST pump on the test thread, cancellation, detached operations and GET resume.
#include <mcpcore/dispatch/server.hpp>

#include <doctest/doctest.h>

#include "support/server_fixture.hpp"
#include "support/sse_events.hpp"

#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/session/progress_bridge.hpp>
#include <mcpcore/session/session_metrics.hpp>
#include <mcpcore/session/session_registry.hpp>
#include <mcpcore/session/session_stream.hpp>
#include <mcpcore/session/stream_admission.hpp>
#include <mcpcore/session/stream_budget.hpp>
#include <mcpcore/session/stream_pump.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

using namespace mcpcore;
using namespace std::chrono_literals;
namespace fx = server_fixture;

namespace {

/// How long a test waits for something that should happen at once; reached only on failure.
constexpr std::chrono::milliseconds patience{5000};
/// The longest real wait of one pump pass on the record's wake sink (the pump's own timing runs
/// on the manual clock, which only the test moves).
constexpr std::chrono::milliseconds pass_wait{20};
/// The correlation id of every streamed POST of these tests.
constexpr std::string_view post_cid = "req-post-test";

// ---- small synchronisation helpers ---------------------------------------------------------

using fx::flag;

/// The background work of detached operations: threads a test joins, and joins on destruction
/// (after setting `release` so that no worker waits out its bound on the failure path).
class work_threads {
 public:
  explicit work_threads(flag* release = nullptr) : release_(release) {}
  ~work_threads() {
    if (release_ != nullptr) release_->set();
    join();
  }
  work_threads(const work_threads&) = delete;
  work_threads& operator=(const work_threads&) = delete;

  void spawn(std::function<void()> fn) {
    std::lock_guard lock{mu_};
    threads_.emplace_back(std::move(fn));
  }
  void join() {
    std::vector<std::thread> ts;
    {
      std::lock_guard lock{mu_};
      ts.swap(threads_);
    }
    for (auto& t : ts) {
      if (t.joinable()) t.join();
    }
  }

 private:
  flag* release_;
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

// ---- a minimal SSE reader ----------------------------------------------------------------------

using sse_test::parse_sse;
using sse_test::sse_event;

/// The events that carry a JSON-RPC message: heartbeats (and a priming event, should a pump write
/// one) carry no data and are left out.
std::vector<sse_event> messages_of(std::vector<sse_event> events) {
  std::erase_if(events, [](const sse_event& e) { return e.data.empty(); });
  return events;
}

/// The JSON-RPC message an SSE event carries.
fx::parsed json_of(const sse_event& e) { return fx::parse(e.data); }

// The result of a detached call's final (docs/sessions.md#projection-and-finals): the work's own
// complete result, `{"status":"completed","agents_success":<agents>}` as structured content and
// its text twin (not the handler's provisional "started"), the execution id in `_meta`, and no
// legacy top-level member.
void check_final_result(json::value result, std::string_view execution_id, std::int64_t agents) {
  CHECK(fx::str(result["structuredContent"]["status"]) == "completed");
  CHECK(result["structuredContent"]["agents_success"].to_int64() == agents);
  CHECK(fx::str(fx::at(result["content"], 0)["text"]) == fx::to_json(result["structuredContent"]));
  CHECK(fx::str(result["_meta"][execution_id_meta_key]) == execution_id);
  CHECK_FALSE(result["isError"].exists());
  CHECK_FALSE(result["status"].exists());
  CHECK_FALSE(result["execution_id"].exists());
  CHECK(result.size() == 3);
}

// The final a fleet of `agents` reports.
tool_result fleet_final(int agents) {
  return tool_result::structured(R"({"status":"completed","agents_success":)" + std::to_string(agents) + "}");
}

bool has_method(const sse_event& e, std::string_view method) {
  if (e.data.empty()) return false;
  const auto p = json_of(e);
  return p.root["method"].is_string() && p.root["method"].as_string() == method;
}
bool is_progress(const sse_event& e) { return has_method(e, "notifications/progress"); }
bool is_close(const sse_event& e) { return has_method(e, default_close_notification_method); }
/// Whether `e` is a response (result or error) for the request id spelled `id_json`.
bool is_response_for(const sse_event& e, std::string_view id_json) {
  if (e.data.empty()) return false;
  const auto p = json_of(e);
  return !p.root["method"].exists() && p.root["id"].exists() && fx::to_json(p.root["id"]) == id_json &&
         (p.root["result"].exists() || p.root["error"].exists());
}

std::vector<sse_event> progress_events(const std::vector<sse_event>& events) {
  std::vector<sse_event> out;
  for (const auto& e : events) {
    if (is_progress(e)) out.push_back(e);
  }
  return out;
}

double progress_value(const sse_event& e) {
  const auto p = json_of(e);
  return p.root["params"]["progress"].to_double().value_or(-1);
}

/// Every event's id is above the previous one's.
bool ids_strictly_increase(const std::vector<sse_event>& events) {
  std::uint64_t last = 0;
  for (const auto& e : events) {
    if (!e.id || *e.id <= last) return false;
    last = *e.id;
  }
  return true;
}

// ---- the server, the session layer and the transport around them -------------------------------

std::size_t pin_count(const std::shared_ptr<session>& s) {
  const auto st = s->stream()->stats();
  const auto n = std::count_if(st.pins.begin(), st.pins.end(), [](std::uint64_t p) { return p != 0; });
  return static_cast<std::size_t>(n);
}

/// One server with one session for "alice", a progress bridge and a stream budget, all on one
/// manual clock.
struct harness {
  harness()
      : registry(session_registry_options{}, clock_ref<manual_clock>{clk}, m),
        bridge(registry, progress_bridge_options{}, clock_ref<manual_clock>{clk}, m) {
    caller.id = "alice";
    sess = mint(caller.id);
  }

  std::shared_ptr<session> mint(std::string_view principal_id) {
    auto r = registry.mint(principal_id);
    REQUIRE(r.has_value());
    return *r;
  }

  /// Builds the server from the tools `declare` adds.
  void build(const std::function<void(server_builder&)>& declare) {
    server_info info;
    info.name = "sessions-test";
    info.version = "1.0.0";
    server_builder b{info};
    declare(b);
    srv.emplace(fx::build(b));
  }

  /// Opens a GET stream on `s` after `last_event_id` (a `Last-Event-ID` header value).
  get_attach attach(const std::shared_ptr<session>& s, std::string_view last_event_id) {
    return attach_get(registry, s, last_event_id, budget, "req-get-test", m);
  }

  /// The SSE bytes a GET stream attached after `last_event_id` writes in its first pass (the
  /// replay), read through a `get_pump` that is released afterwards.
  std::vector<sse_event> replay(std::string_view last_event_id) {
    auto a = attach(sess, last_event_id);
    REQUIRE_MESSAGE(!a.refusal.has_value(), "the GET attach was refused");
    REQUIRE(a.attached.status == attach_status::attached);
    get_pump pump{sess->stream(), a.attached.sink, a.attached.generation, clk.steady_now(), "req-get-test"};
    std::string out;
    pump.pass(out);
    pump.release();
    return messages_of(parse_sse(out));
  }

  std::uint64_t cancels(cancel_outcome o) const { return m.cancels[static_cast<std::size_t>(o)].value(); }

  manual_clock clk;
  metrics_registry metrics;
  session_metrics m = bind_session_metrics(metrics);
  session_registry registry;
  progress_bridge bridge;
  stream_budget budget;
  principal caller;
  peer client;
  std::optional<server> srv;
  std::shared_ptr<session> sess;
};

/// The in-call channel of a call with a progress record: every message the dispatch core sends
/// during the call (progress, log messages) becomes a frame of the record.
class bridge_sink final : public message_sink {
 public:
  explicit bridge_sink(progress_call call) : call_(std::move(call)) {}
  bool send(std::string_view message) noexcept override {
    try {
      // `message` returns false also when the frame is only latched for later (arming, or a
      // projection in flight), which is still a delivery: report failure only on a throw.
      (void)call_.message(message);
      return true;
    } catch (...) {
      return false;
    }
  }

 private:
  progress_call call_;
};

/// One `tools/call` POST on the harness's session, handled the way the HTTP transport will:
/// opt-in, admission, arm, the dispatch on a worker thread, the hand-over of its answer to the
/// record, and the streamed-POST pump driven by the test.
class post_call {
 public:
  post_call(harness& h, std::string text, bool accepts_sse, peer* client = nullptr)
      : h_(h), text_(std::move(text)), accepts_sse_(accepts_sse), client_(client != nullptr ? client : &h.client) {
    auto m = parse_message(doc_, text_);
    REQUIRE_MESSAGE(m.has_value(), "the test sent an invalid message: " << text_);
    REQUIRE(m->kind == message_kind::request);
    msg_ = *m;
  }
  ~post_call() {
    if (worker_.joinable()) {
      if (!wait_done(patience)) stop_.request_stop();  // a failed test: unblock a handler that honours it
      worker_.join();
    }
    pump_.reset();  // release: the record parks or is done, the lease goes back
  }
  post_call(const post_call&) = delete;
  post_call& operator=(const post_call&) = delete;

  /// docs/sessions.md#streamed-post-admission opt-in, then docs/sessions.md#streamed-post-admission
  /// admission.
  void admit() {
    post_mode_inputs in;
    in.bridge_available = true;
    in.has_session = true;
    in.progress_token = msg_.params["_meta"]["progressToken"];
    in.accepts_sse = accepts_sse_;
    in.streamed_post_enabled = true;
    mode_ = choose_post_mode(in);
    if (mode_ == post_mode::plain) return;
    const auto token = progress_token_of(in.progress_token);
    REQUIRE(token.has_value());
    admission_ = admit_post(mode_, h_.budget, h_.bridge, h_.sess, request_id{*msg_.id}, *token, h_.m);
  }

  /// docs/sessions.md#streamed-post-admission: arms the record; a streamed arm installs the pump,
  /// anything else answers plain.
  void arm() {
    if (!admission_.call) return;
    armed_ = admission_.call->arm(admission_.mode == post_mode::streamed ? bridge_delivery::streamed
                                                                         : bridge_delivery::get_only);
    if (*armed_ == arm_outcome::streaming) {
      pump_ = std::make_unique<post_pump>(*admission_.call, std::move(admission_.lease), h_.clk.steady_now(),
                                          std::string{post_cid}, post_pump_options{}, 0ms, h_.m);
    } else {
      admission_.lease.release();  // a plain answer holds no stream
    }
  }

  /// Runs `server::handle` on a worker thread, then hands its answer to the record.
  void dispatch() {
    if (admission_.call) adapter_ = std::make_unique<bridge_sink>(*admission_.call);
    worker_ = std::thread([this] {
      progress_call* call = admission_.call ? &*admission_.call : nullptr;
      const dispatch_context ctx{h_.caller, client_, adapter_.get(), stop_.get_token(), call};
      std::string out;
      bool returned = false;
      bool threw = false;
      try {
        returned = h_.srv->handle(msg_, ctx, out);
      } catch (...) {
        threw = true;
      }
      if (call != nullptr) {
        if (!returned) {
          (void)call->complete_without_response();  // cancelled in-call: MCP sends no response
        } else if (call->detached()) {
          call->defer(out);  // the base of the final `finish` publishes
        } else {
          (void)call->complete(out);
        }
      }
      {
        std::lock_guard lock{mu_};
        done_ = true;
        returned_ = returned;
        threw_ = threw;
        out_ = std::move(out);
      }
      cv_.notify_all();
    });
  }

  /// The whole transport up to the pump.
  void start() {
    admit();
    if (admission_.refusal) return;  // answered; nothing is dispatched
    arm();
    dispatch();
  }

  /// Waits until `handle` returned and its answer was handed over.
  bool wait_done(std::chrono::milliseconds timeout = patience) {
    std::unique_lock lock{mu_};
    return cv_.wait_for(lock, timeout, [&] { return done_; });
  }
  /// What `handle` returned. @pre `wait_done()`.
  bool returned() {
    std::lock_guard lock{mu_};
    return returned_;
  }
  bool threw() {
    std::lock_guard lock{mu_};
    return threw_;
  }
  /// The plain JSON answer (`handle`'s output). @pre `wait_done()`.
  std::string answer() {
    std::lock_guard lock{mu_};
    return out_;
  }

  /// One pump pass: waits (bounded, in real time) for the record's wake sink, runs the tick checks
  /// when due, writes, confirms the write. Returns this pass's bytes (also appended to `wire()`).
  std::string pass() {
    REQUIRE(pump_);
    if (pump_->finished()) return {};
    const auto wait = pump_->wait_time(h_.clk.steady_now());
    if (wait > 0ms) (void)admission_.call->wake_sink()->wait_for(std::min(wait, pass_wait));
    const auto now = h_.clk.steady_now();
    if (pump_->tick_due(now)) {
      pump_->tick(now, credential_verdict::valid,
                  h_.registry.validate_and_touch(h_.sess->id(), h_.sess->principal_id()) != nullptr);
    }
    std::string out;
    pump_->pass(now, out);
    pump_->written();
    ++passes_;
    wire_ += out;
    return out;
  }
  /// Passes until the pump finishes (bounded); returns the passes it took.
  int drive(std::chrono::milliseconds timeout = patience) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int n = 0;
    while (!pump_->finished() && std::chrono::steady_clock::now() < deadline) {
      (void)pass();
      ++n;
    }
    REQUIRE_MESSAGE(pump_->finished(), "the POST pump did not finish; wire so far: " << wire_);
    return n;
  }
  /// Passes until `pred(events on the wire)` holds (bounded); false if it never did.
  bool drive_until(const std::function<bool(const std::vector<sse_event>&)>& pred,
                   std::chrono::milliseconds timeout = patience) {
    return sse_test::step_until([&] { return pred(events()); }, [&] { return pump_->finished(); },
                                [&] { (void)pass(); }, timeout);
  }
  /// The pump's releaser (response destructor).
  void release_pump() {
    REQUIRE(pump_);
    pump_->release();
  }

  [[nodiscard]] post_mode mode() const { return mode_; }
  [[nodiscard]] const post_admission& admission() const { return admission_; }
  [[nodiscard]] std::optional<arm_outcome> armed() const { return armed_; }
  [[nodiscard]] progress_call& call() {
    REQUIRE(admission_.call);
    return *admission_.call;
  }
  [[nodiscard]] post_pump* pump() const { return pump_.get(); }
  [[nodiscard]] const std::string& wire() const { return wire_; }
  /// The JSON-RPC messages written so far (see `messages_of`).
  [[nodiscard]] std::vector<sse_event> events() const { return messages_of(parse_sse(wire_)); }
  [[nodiscard]] int passes() const { return passes_; }

 private:
  harness& h_;
  std::string text_;
  bool accepts_sse_;
  peer* client_;
  json::document doc_;
  message msg_;
  post_mode mode_ = post_mode::plain;
  post_admission admission_;
  std::optional<arm_outcome> armed_;
  std::unique_ptr<bridge_sink> adapter_;
  std::unique_ptr<post_pump> pump_;
  std::stop_source stop_;  // the transport's own stop signal
  std::thread worker_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  bool returned_ = false;
  bool threw_ = false;
  std::string out_;
  std::string wire_;
  int passes_ = 0;
};

/// A read tool (no arguments) with handler `h`.
template <class H>
void add_tool(server_builder& b, const std::string& name, H h) {
  b.tool(name)
      .description("Test tool " + name + ".")
      .security("Thing", operation::read)
      .effect(tool_effect::read_only, false)
      .handler(std::move(h));
}

/// `{"progressToken":<token_json>}`, the `_meta` of a progress-carrying call.
std::string progress_meta(std::string_view token_json) {
  return std::string{R"({"progressToken":)"} + std::string{token_json} + "}";
}

/// What `server::handle` does with a client notification: nothing written, false returned (202).
void expect_no_answer(harness& h, peer& client, std::string_view notification) {
  const dispatch_context ctx{h.caller, &client, nullptr, {}, nullptr};
  const auto a = fx::handle(*h.srv, notification, ctx);
  CHECK_FALSE(a.returned);
  CHECK(a.text.empty());
}

}  // namespace

TEST_SUITE("server_sessions") {

TEST_CASE("sessions.md/streamed-post, sessions.md/ordering-guarantees: in-call progress then the final last on the POST, replayable on GET") {
  harness h;
  h.build([](server_builder& b) {
    add_tool(b, "report", [](call_context& ctx, const arguments&) {
      for (int i = 1; i <= 3; ++i) (void)ctx.progress(i, 3, "step");
      return tool_result::text("done");
    });
  });

  post_call c{h, fx::call_tool(7, "report", {}, progress_meta(R"("tok-1")")), true};
  c.start();
  REQUIRE(c.mode() == post_mode::streamed);
  REQUIRE_FALSE(c.admission().refusal.has_value());
  REQUIRE(c.armed() == arm_outcome::streaming);
  (void)c.drive();
  REQUIRE(c.wait_done());
  CHECK(c.returned());
  CHECK(to_string(c.pump()->reason()) == to_string(close_reason::completed));

  const auto events = c.events();
  CAPTURE(c.wire());
  REQUIRE(events.size() == 4);
  CHECK(ids_strictly_increase(events));
  double last = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    const auto& e = events[i];
    CHECK(e.id.value_or(0) > 0);
    CHECK(e.type == stream_event_type);
    REQUIRE(is_progress(e));
    const auto p = json_of(e);
    REQUIRE(p.root["params"]["progressToken"].is_string());  // verbatim: a string stays a string
    CHECK(p.root["params"]["progressToken"].as_string() == "tok-1");
    CHECK(p.root["params"]["total"].to_double() == 3.0);
    CHECK(progress_value(e) > last);
    last = progress_value(e);
  }
  // The final response last, with its ring id; no close frame after it.
  const auto& fin = events.back();
  CHECK(fin.id.value_or(0) > 0);
  CHECK(fin.type == stream_event_type);
  REQUIRE(is_response_for(fin, "7"));
  CHECK(fx::str(fx::at(json_of(fin).root["result"]["content"], 0)["text"]) == "done");
  for (const auto& e : events) CHECK_FALSE(is_close(e));

  // Route (a): the final reached the wire, so it is no longer pinned; the record is done.
  CHECK(pin_count(h.sess) == 0);
  CHECK(to_string(c.call().state_now()) == to_string(bridge_record_state::done));
  c.release_pump();
  CHECK(to_string(c.call().state_now()) == to_string(bridge_record_state::done));
  CHECK(h.bridge.parked() == 0);

  // A GET attach from cursor 0 replays the very same frames, with the same ids.
  const auto replayed = h.replay("0");
  REQUIRE(replayed.size() == events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    CAPTURE(i);
    CHECK(replayed[i].id == events[i].id);
    CHECK(replayed[i].data == events[i].data);
  }
}

TEST_CASE("sessions.md/projection-and-finals: a detached operation streams its progress and its final") {
  flag deferred;  // the call returned and the transport handed its answer to `defer`
  flag finished;
  std::atomic<bool> finish_accepted{false};
  work_threads work{&deferred};
  harness h;
  h.build([&](server_builder& b) {
    add_tool(b, "fleet", [&](call_context& ctx, const arguments&) {
      auto op = mcpcore::detach(ctx, "exec-42");
      work.spawn([op, &deferred, &finished, &finish_accepted]() mutable {
        (void)op.progress(1, 3);
        (void)op.progress(2, 3);
        (void)op.progress(3, 3);
        if (!deferred.wait()) return;
        finish_accepted = op.finish(fleet_final(3));
        finished.set();
      });
      return tool_result::text("started");
    });
  });

  post_call c{h, fx::call_tool(8, "fleet", {}, progress_meta(R"("tok-8")")), true};
  c.start();
  REQUIRE(c.armed() == arm_outcome::streaming);
  REQUIRE(c.wait_done());
  CHECK(c.returned());
  CHECK(c.call().detached());
  deferred.set();
  REQUIRE(finished.wait());
  (void)c.drive();
  work.join();
  CHECK(finish_accepted.load());
  CHECK(to_string(c.pump()->reason()) == to_string(close_reason::completed));

  const auto events = c.events();
  REQUIRE(events.size() == 4);
  CHECK(ids_strictly_increase(events));
  for (std::size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    REQUIRE(is_progress(events[i]));
    const auto p = json_of(events[i]);
    CHECK(p.root["params"]["progressToken"].as_string() == "tok-8");
    CHECK(progress_value(events[i]) == static_cast<double>(i + 1));
    CHECK(p.root["params"]["total"].to_double() == 3.0);
    // docs/sessions.md#ordering-guarantees: the durable handle reaches the client before any
    // terminal.
    CHECK(fx::str(p.root["params"]["_meta"][execution_id_meta_key]) == "exec-42");
  }
  REQUIRE(is_response_for(events.back(), "8"));
  const auto fin = json_of(events.back());
  check_final_result(fin.root["result"], "exec-42", 3);  // replaces the call's provisional result
  CHECK(pin_count(h.sess) == 0);
}

// The transport's cancel, in the order that cannot lose the detach: the bridge first (closes the
// POST stream while the record is still streaming), then the dispatch core (signals the stop token).
TEST_CASE("sessions.md/cancellation: cancelling in-call work stops it and ends its POST stream promptly without a result") {
  fx::gate started;
  std::atomic<bool> saw_stop{false};
  harness h;
  h.build([&](server_builder& b) {
    add_tool(b, "slow", [&](call_context& ctx, const arguments&) {
      (void)ctx.progress(1, 10);
      started.arrive();
      std::mutex mu;
      std::condition_variable_any cv;
      std::unique_lock lock{mu};
      saw_stop = cv.wait_for(lock, ctx.stop_token(), patience, [] { return false; }) || ctx.stop_requested();
      return tool_result::text("too late");
    });
  });

  post_call c{h, fx::call_tool(5, "slow", {}, progress_meta("55")), true};
  c.start();
  REQUIRE(c.armed() == arm_outcome::streaming);
  REQUIRE(started.wait_arrived());
  REQUIRE(c.drive_until([](const auto& ev) { return progress_events(ev).size() == 1; }));
  CHECK_FALSE(c.pump()->finished());

  CHECK(to_string(h.bridge.cancel(h.sess->id(), request_id{5})) == to_string(cancel_outcome::detached));
  expect_no_answer(h, h.client, fx::cancel("5"));  // 202: the dispatch core signals the stop token

  const int passes = c.drive();
  CHECK(passes <= 2);  // promptly: no clock advance, no tick
  REQUIRE(c.wait_done());
  CHECK_FALSE(c.returned());  // MCP: a cancelled request gets no response
  CHECK(saw_stop.load());
  CHECK(to_string(c.pump()->reason()) == to_string(close_reason::cancelled));

  const auto events = c.events();
  REQUIRE_FALSE(events.empty());
  for (const auto& e : events) CHECK_FALSE(is_response_for(e, "5"));
  REQUIRE(is_close(events.back()));
  const auto close = json_of(events.back());
  CHECK(fx::str(close.root["params"]["reason"]) == "cancelled");
  CHECK_FALSE(events.back().id.has_value());  // the close notification is never a ring frame
  c.release_pump();
  CHECK(to_string(c.call().state_now()) == to_string(bridge_record_state::done));
  CHECK(pin_count(h.sess) == 0);
  for (const auto& e : h.replay("0")) CHECK_FALSE(is_response_for(e, "5"));
}

TEST_CASE("sessions.md/cancellation: cancel outcomes are accepted, detached or noop, and never answered") {
  fx::gate holding;
  flag release;
  std::atomic<bool> held_saw_stop{false};
  harness h;
  h.build([&](server_builder& b) {
    add_tool(b, "quick", [](call_context&, const arguments&) { return tool_result::text("quick"); });
    add_tool(b, "held", [&](call_context& ctx, const arguments&) {
      holding.arrive();
      (void)release.wait();
      held_saw_stop = ctx.stop_requested();
      return tool_result::text("held");
    });
  });

  SUBCASE("accepted while arming: the arm degrades and the POST answers plain JSON") {
    post_call c{h, fx::call_tool(31, "quick", {}, progress_meta(R"("t31")")), true};
    c.admit();
    REQUIRE(c.admission().call.has_value());
    CHECK(to_string(h.bridge.cancel(h.sess->id(), request_id{31})) == to_string(cancel_outcome::accepted));
    expect_no_answer(h, h.client, fx::cancel("31"));
    c.arm();
    CHECK(c.armed() == arm_outcome::cancelled);
    CHECK(c.pump() == nullptr);
    c.dispatch();
    REQUIRE(c.wait_done());
    REQUIRE(c.returned());
    const auto answer = fx::parse(c.answer());
    CHECK(fx::to_json(answer.root["id"]) == "31");
    CHECK(fx::str(fx::at(answer.root["result"]["content"], 0)["text"]) == "quick");
    CHECK(h.budget.in_use(stream_surface_post, "alice") == 0);
    CHECK(h.cancels(cancel_outcome::accepted) == 1);
    // After completion a cancel matches nothing.
    CHECK(to_string(h.bridge.cancel(h.sess->id(), request_id{31})) == to_string(cancel_outcome::noop));
    expect_no_answer(h, h.client, fx::cancel("31"));
    CHECK(pin_count(h.sess) == 0);
  }

  SUBCASE("noop: unknown ids, ids of another session, the wrong id type, and after completion") {
    post_call c{h, fx::call_tool(41, "held", {}, progress_meta(R"("t41")")), true};
    c.start();
    REQUIRE(c.armed() == arm_outcome::streaming);
    REQUIRE(holding.wait_arrived());

    CHECK(to_string(h.bridge.cancel(h.sess->id(), request_id{999})) == to_string(cancel_outcome::noop));
    expect_no_answer(h, h.client, fx::cancel("999"));
    // Matched verbatim: the string "41" is another request than the integer 41.
    const request_id as_string{std::string{"41"}};
    CHECK(to_string(h.bridge.cancel(h.sess->id(), as_string)) == to_string(cancel_outcome::noop));
    expect_no_answer(h, h.client, fx::cancel(R"("41")"));
    // Another principal's session naming the same id cancels nothing.
    const auto other = h.mint("bob");
    peer other_client;
    CHECK(to_string(h.bridge.cancel(other->id(), request_id{41})) == to_string(cancel_outcome::noop));
    expect_no_answer(h, other_client, fx::cancel("41"));

    (void)c.pass();
    CHECK_FALSE(c.pump()->finished());
    CHECK_FALSE(c.call().wake_sink()->closed());
    release.set();
    (void)c.drive();
    REQUIRE(c.wait_done());
    CHECK(c.returned());
    CHECK_FALSE(held_saw_stop.load());
    CHECK(to_string(c.pump()->reason()) == to_string(close_reason::completed));
    REQUIRE_FALSE(c.events().empty());
    CHECK(is_response_for(c.events().back(), "41"));

    CHECK(to_string(h.bridge.cancel(h.sess->id(), request_id{41})) == to_string(cancel_outcome::noop));
    expect_no_answer(h, h.client, fx::cancel("41"));
    CHECK(h.cancels(cancel_outcome::noop) == 4);
    CHECK(h.cancels(cancel_outcome::detached) == 0);
    CHECK(h.cancels(cancel_outcome::accepted) == 0);
  }
}

TEST_CASE("sessions.md/cancellation: cancelling a detached operation's stream detaches the response, not the work") {
  flag reported;
  flag resume;
  std::atomic<bool> finish_accepted{false};
  work_threads work{&resume};
  harness h;
  h.build([&](server_builder& b) {
    add_tool(b, "fleet", [&](call_context& ctx, const arguments&) {
      auto op = mcpcore::detach(ctx, "exec-5");
      work.spawn([op, &reported, &resume, &finish_accepted]() mutable {
        (void)op.progress(1, 3);
        reported.set();
        if (!resume.wait()) return;
        (void)op.progress(2, 3);
        finish_accepted = op.finish(fleet_final(2));
      });
      return tool_result::text("started");
    });
  });

  post_call c{h, fx::call_tool(21, "fleet", {}, progress_meta(R"("tok-21")")), true};
  c.start();
  REQUIRE(c.armed() == arm_outcome::streaming);
  REQUIRE(c.wait_done());
  REQUIRE(c.returned());
  REQUIRE(reported.wait());
  REQUIRE(c.drive_until([](const auto& ev) { return progress_events(ev).size() == 1; }));

  CHECK(to_string(h.bridge.cancel(h.sess->id(), request_id{21})) == to_string(cancel_outcome::detached));
  expect_no_answer(h, h.client, fx::cancel("21"));  // the call returned: the dispatch core has nothing to stop
  CHECK(c.drive() <= 2);
  CHECK(to_string(c.pump()->reason()) == to_string(close_reason::cancelled));
  const auto wire = c.events();
  for (const auto& e : wire) CHECK_FALSE(is_response_for(e, "21"));
  REQUIRE(is_close(wire.back()));
  const auto close = json_of(wire.back());
  CHECK(fx::str(close.root["params"]["reason"]) == "cancelled");
  CHECK(fx::str(close.root["params"]["execution_id"]) == "exec-5");
  CHECK(close.root["params"]["partial"].is_bool());
  CHECK((close.root["params"]["partial"].is_bool() && close.root["params"]["partial"].as_bool()));

  // The releaser parks the record for a GET resume; the work keeps going.
  c.release_pump();
  CHECK(to_string(c.call().state_now()) == to_string(bridge_record_state::ring_only));
  CHECK(h.bridge.parked() == 1);
  resume.set();
  work.join();
  CHECK(finish_accepted.load());
  REQUIRE(pin_count(h.sess) == 1);  // the final, pinned in the ring

  const auto replayed = h.replay("0");
  REQUIRE(replayed.size() == 3);
  CHECK(ids_strictly_increase(replayed));
  CHECK(replayed[0].id == progress_events(wire).front().id);  // the frame the POST already wrote
  REQUIRE(is_progress(replayed[0]));
  REQUIRE(is_progress(replayed[1]));
  CHECK(progress_value(replayed[0]) == 1.0);
  CHECK(progress_value(replayed[1]) == 2.0);
  CHECK(fx::str(json_of(replayed[1]).root["params"]["_meta"][execution_id_meta_key]) == "exec-5");
  REQUIRE(is_response_for(replayed[2], "21"));
  const auto fin = json_of(replayed[2]);
  check_final_result(fin.root["result"], "exec-5", 2);
  CHECK(h.sess->stream()->pinned(replayed[2].id.value_or(0)));
}

TEST_CASE("sessions.md/streamed-post-admission: without SSE Accept progress goes live to the GET stream and the POST answers plain") {
  harness h;
  h.build([](server_builder& b) {
    add_tool(b, "report", [](call_context& ctx, const arguments&) {
      for (int i = 1; i <= 3; ++i) (void)ctx.progress(i, 3);
      return tool_result::text("done");
    });
  });
  auto get = h.attach(h.sess, "");
  REQUIRE_FALSE(get.refusal.has_value());
  REQUIRE(get.attached.sink);

  post_call c{h, fx::call_tool(9, "report", {}, progress_meta("77")), false};
  c.start();
  REQUIRE(c.mode() == post_mode::get_only);
  REQUIRE(c.admission().call.has_value());
  CHECK_FALSE(static_cast<bool>(c.admission().lease));
  CHECK(c.armed() == arm_outcome::get_only);
  CHECK(c.pump() == nullptr);
  REQUIRE(c.wait_done());
  REQUIRE(c.returned());

  // The POST: the plain JSON response.
  const auto answer = fx::parse(c.answer());
  CHECK(fx::to_json(answer.root["id"]) == "9");
  CHECK(fx::str(fx::at(answer.root["result"]["content"], 0)["text"]) == "done");

  // The GET sink: the three progress frames, live, and no final.
  stream_sink::batch batch;
  get.attached.sink->take(batch);
  REQUIRE(batch.frames.size() == 3);
  std::uint64_t last_id = 0;
  for (std::size_t i = 0; i < batch.frames.size(); ++i) {
    CAPTURE(i);
    const auto& f = batch.frames[i];
    CHECK(f.id > last_id);
    last_id = f.id;
    const auto p = fx::parse(f.data);
    CHECK(fx::str(p.root["method"]) == "notifications/progress");
    REQUIRE(p.root["params"]["progressToken"].is_integer());  // verbatim: an integer stays an integer
    CHECK(p.root["params"]["progressToken"].to_int64() == 77);
    CHECK(p.root["params"]["progress"].to_double() == static_cast<double>(i + 1));
    CHECK_FALSE(p.root["result"].exists());
  }
  CHECK(pin_count(h.sess) == 0);
  CHECK(to_string(c.call().state_now()) == to_string(bridge_record_state::done));
  CHECK(h.sess->stream()->stats().frames == 3);  // nothing else reached the ring
  h.sess->stream()->detach(*get.attached.sink);
}

TEST_CASE("sessions.md/streamed-post-admission: a streamed call refused at admission dispatches nothing") {
  std::atomic<int> invoked{0};
  harness h;
  h.build([&](server_builder& b) {
    add_tool(b, "count", [&](call_context&, const arguments&) {
      ++invoked;
      return tool_result::text("counted");
    });
  });
  // Four streamed calls already admitted for alice (their leases and charges held).
  std::vector<post_admission> in_flight;
  for (std::int64_t id = 101; id <= 104; ++id) {
    in_flight.push_back(admit_post(post_mode::streamed, h.budget, h.bridge, h.sess, request_id{id},
                                   request_id{std::string{"t"}}, h.m));
    REQUIRE_FALSE(in_flight.back().refusal.has_value());
    REQUIRE(in_flight.back().call.has_value());
  }
  REQUIRE(h.bridge.records() == 4);

  post_call c{h, fx::call_tool(105, "count", {}, progress_meta(R"("t105")")), true};
  c.start();
  REQUIRE(c.admission().refusal.has_value());
  const stream_refusal& r = *c.admission().refusal;
  CHECK(r.http_status == 429);
  CHECK(r.code == errc::stream_cap);
  CHECK(r.reason == stream_reject::post_per_principal_cap);
  CHECK(r.retry_after == std::optional<std::chrono::milliseconds>{30000ms});
  CHECK_FALSE(c.admission().call.has_value());
  CHECK(c.pump() == nullptr);
  CHECK(invoked.load() == 0);
  CHECK(h.bridge.records() == 4);
  CHECK(h.m.stream_rejects[static_cast<std::size_t>(stream_reject::post_per_principal_cap)].value() == 1);

  std::string body;
  write_refusal(body, request_id_view{105}, r, "req-refused");
  const auto refused = fx::parse(body);
  CHECK(fx::to_json(refused.root["id"]) == "105");
  CHECK(refused.root["error"]["code"].to_int64() == -32012);
  CHECK(fx::str(refused.root["error"]["data"]["reason"]) == "post_per_principal_cap");

  for (auto& a : in_flight) {
    a.call->abandon();
    a.lease.release();
  }
  CHECK(h.bridge.records() == 0);
}

TEST_CASE("sessions.md/streamed-post: at the response cap one drain pass writes pending progress, then cap_expired") {
  flag first;
  flag step;
  flag second;
  flag fin;
  std::atomic<bool> finish_accepted{false};
  work_threads work{&fin};
  harness h;
  h.build([&](server_builder& b) {
    add_tool(b, "fleet", [&](call_context& ctx, const arguments&) {
      auto op = mcpcore::detach(ctx, "exec-8");
      work.spawn([op, &first, &step, &second, &fin, &finish_accepted]() mutable {
        (void)op.progress(1, 3);
        first.set();
        if (!step.wait()) return;
        (void)op.progress(2, 3);
        second.set();
        if (!fin.wait()) return;
        finish_accepted = op.finish(fleet_final(3));
      });
      return tool_result::text("started");
    });
  });

  post_call c{h, fx::call_tool(12, "fleet", {}, progress_meta(R"("tok-12")")), true};
  c.start();
  REQUIRE(c.armed() == arm_outcome::streaming);
  REQUIRE(c.wait_done());
  REQUIRE(c.returned());
  REQUIRE(first.wait());
  REQUIRE(c.drive_until([](const auto& ev) { return progress_events(ev).size() == 1; }));
  CHECK_FALSE(c.pump()->finished());

  // Progress still pending when the cap passes.
  step.set();
  REQUIRE(second.wait());
  h.clk.advance(default_post_response_cap + 1s);

  const auto drained = messages_of(parse_sse(c.pass()));
  REQUIRE_FALSE(drained.empty());
  REQUIRE(is_progress(drained.front()));
  CHECK(progress_value(drained.front()) == 2.0);
  CHECK(c.drive() <= 1);
  CHECK(to_string(c.pump()->reason()) == to_string(close_reason::cap_expired));

  const auto wire = c.events();
  const auto progress = progress_events(wire);
  REQUIRE(progress.size() == 2);
  for (const auto& e : wire) CHECK_FALSE(is_response_for(e, "12"));
  REQUIRE(is_close(wire.back()));
  CHECK_FALSE(wire.back().id.has_value());
  const auto close = json_of(wire.back());
  CHECK(fx::str(close.root["params"]["reason"]) == "cap_expired");
  CHECK(fx::str(close.root["params"]["execution_id"]) == "exec-8");
  CHECK((close.root["params"]["partial"].is_bool() && close.root["params"]["partial"].as_bool()));

  c.release_pump();
  CHECK(to_string(c.call().state_now()) == to_string(bridge_record_state::ring_only));
  CHECK(h.bridge.parked() == 1);

  fin.set();
  work.join();
  CHECK(finish_accepted.load());
  REQUIRE(pin_count(h.sess) == 1);

  // A GET resume from the last id the POST wrote replays exactly the final.
  const auto resumed = h.replay(std::to_string(progress.back().id.value_or(0)));
  REQUIRE(resumed.size() == 1);
  CHECK(resumed[0].id > progress.back().id);
  REQUIRE(is_response_for(resumed[0], "12"));
  const auto final_msg = json_of(resumed[0]);
  check_final_result(final_msg.root["result"], "exec-8", 3);
  CHECK(h.sess->stream()->pinned(resumed[0].id.value_or(0)));
}

// A detached operation may finish before its call returns (work that completes at once, or a
// worker that beats the handler's return): the final is still the work's result, published once
// the call returned.
TEST_CASE("sessions.md/projection-and-finals: a detached operation finishing before its call returns answers its final") {
  harness h;
  h.build([](server_builder& b) {
    add_tool(b, "fast", [](call_context& ctx, const arguments&) {
      auto op = mcpcore::detach(ctx, "exec-9");
      (void)op.finish(fleet_final(1));  // the work was already done
      return tool_result::text("started");
    });
  });
  post_call c{h, fx::call_tool(61, "fast", {}, progress_meta(R"("t61")")), true};
  c.start();
  REQUIRE(c.armed() == arm_outcome::streaming);
  REQUIRE(c.wait_done());
  (void)c.drive();
  CHECK(to_string(c.pump()->reason()) == to_string(close_reason::completed));
  const auto events = c.events();
  REQUIRE_FALSE(events.empty());
  REQUIRE(is_response_for(events.back(), "61"));
  const auto final_msg = json_of(events.back());
  check_final_result(final_msg.root["result"], "exec-9", 1);
}

// The dispatch core may hear the cancel before the bridge does: the handler stops, `handle`
// returns false and `complete_without_response` runs first; the stream must still end
// `cancelled` with its close frame, never look like a completion (docs/errors.md#honest-answers).
TEST_CASE("sessions.md/cancellation, sessions.md/close-reasons: a cancelled in-call request's POST ends `cancelled` in either cancel order") {
  fx::gate started;
  harness h;
  h.build([&](server_builder& b) {
    add_tool(b, "slow", [&](call_context& ctx, const arguments&) {
      (void)ctx.progress(1, 10);
      started.arrive();
      std::mutex mu;
      std::condition_variable_any cv;
      std::unique_lock lock{mu};
      (void)cv.wait_for(lock, ctx.stop_token(), patience, [] { return false; });
      return tool_result::text("too late");
    });
  });
  post_call c{h, fx::call_tool(6, "slow", {}, progress_meta(R"("t6")")), true};
  c.start();
  REQUIRE(c.armed() == arm_outcome::streaming);
  REQUIRE(started.wait_arrived());
  REQUIRE(c.drive_until([](const auto& ev) { return progress_events(ev).size() == 1; }));
  expect_no_answer(h, h.client, fx::cancel("6"));  // the dispatch core first
  REQUIRE(c.wait_done());
  CHECK_FALSE(c.returned());
  (void)h.bridge.cancel(h.sess->id(), request_id{6});  // then the bridge: already `noop`
  (void)c.drive();
  CHECK(to_string(c.pump()->reason()) == to_string(close_reason::cancelled));
  const auto events = c.events();
  REQUIRE_FALSE(events.empty());
  CHECK(is_close(events.back()));
}

}  // TEST_SUITE
