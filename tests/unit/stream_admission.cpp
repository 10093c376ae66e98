// SPDX-License-Identifier: Apache-2.0
// Tests of the sans-I/O glue around held-open responses (docs/http.md#get-sessions-on,
// docs/sessions.md#get-attach-replay-resume, #streamed-post-admission, #streamed-post,
// #close-reasons, #ordering-guarantees, docs/errors.md#honest-answers): GET refusals and the gap
// rule, the streamed-POST opt-in and admission, the post-dispatch 500s and the streamed-POST pump.
#include <mcpcore/session/stream_admission.hpp>

#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/session/progress_bridge.hpp>
#include <mcpcore/session/session_metrics.hpp>
#include <mcpcore/session/session_registry.hpp>
#include <mcpcore/session/session_stream.hpp>
#include <mcpcore/session/stream_budget.hpp>
#include <mcpcore/session/stream_pump.hpp>
#include <mcpcore/wire/error.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>
#include <mcpcore/wire/retry.hpp>

#include <doctest/doctest.h>

#include "support/sse_events.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using namespace mcpcore;
using namespace std::chrono_literals;
using std::chrono::milliseconds;

namespace {

const request_id str_tok{std::string{"tok"}};

// A registry, a bridge and a budget on a manual clock, with metrics and an audit trail.
struct fixture {
  explicit fixture(progress_bridge_options bo = {}, session_registry_options ro = {}, stream_budget_options so = {})
      : registry(std::move(ro), clock_ref<manual_clock>{clk}, m),
        bridge(registry, bo, clock_ref<manual_clock>{clk}, m),
        budget(so) {
    registry.set_audit(audit);
  }

  std::shared_ptr<session> mint(std::string_view principal = "alice") {
    auto r = registry.mint(principal);
    REQUIRE(r.has_value());
    return *r;
  }
  post_admission admit(post_mode mode, const std::shared_ptr<session>& s, const request_id& id,
                       const request_id& token = str_tok) {
    return admit_post(mode, budget, bridge, s, id, token, m);
  }
  std::uint64_t rejects(stream_reject r) const { return m.stream_rejects[static_cast<std::size_t>(r)].value(); }
  std::uint64_t degrades(bridge_degrade d) const { return m.bridge_degrades[static_cast<std::size_t>(d)].value(); }
  std::uint64_t closes(close_reason r) const { return m.stream_closes[static_cast<std::size_t>(r)].value(); }
  std::vector<audit_entry> rows(std::string_view action) const {
    std::vector<audit_entry> out;
    for (auto& e : audit.entries()) {
      if (e.action == action) out.push_back(e);
    }
    return out;
  }

  manual_clock clk;
  metrics_registry metrics;
  session_metrics m = bind_session_metrics(metrics);
  memory_audit_sink audit;
  session_registry registry;
  progress_bridge bridge;
  stream_budget budget;
};

// A parsed JSON text (the document owns it).
struct parsed {
  explicit parsed(std::string_view text) {
    auto r = doc.parse(text);
    REQUIRE(r.has_value());
    root = *r;
  }
  json::document doc;
  json::value root;
};

using sse_test::sse_event;

// Pump output as a client reads it.
std::vector<sse_event> events(std::string_view out) { return sse_test::parse_sse(out); }

std::string success(std::int64_t id, std::string_view result_json) {
  std::string out;
  write_result_response(out, request_id_view{id}, result_json);
  return out;
}

post_pump_options pump_options(milliseconds cap = default_post_response_cap, milliseconds tick = 3000ms) {
  post_pump_options o;
  o.tick = tick;
  o.response_cap = cap;
  o.revalidation.grace = 60000ms;
  o.revalidation.jitter_max = 0ms;
  o.revalidation.max_staleness = 15000ms;
  return o;
}

// A streamed POST admitted and armed, its pump, and the work's handle on the call.
struct streamed_post {
  streamed_post(fixture& f, const std::shared_ptr<session>& s, const request_id& id,
                post_pump_options o = pump_options(), std::string_view execution_id = "exec-1") {
    auto a = f.admit(post_mode::streamed, s, id);
    REQUIRE(a.mode == post_mode::streamed);
    REQUIRE(a.call.has_value());
    REQUIRE(static_cast<bool>(a.lease));
    work.emplace(*a.call);
    REQUIRE(work->arm(bridge_delivery::streamed) == arm_outcome::streaming);
    if (!execution_id.empty()) work->set_execution_id(std::string{execution_id});
    pump = std::make_unique<post_pump>(std::move(*a.call), std::move(a.lease), f.clk.steady_now(), "cid-post",
                                       std::move(o), 0ms, f.m);
  }
  std::string pass(fixture& f) {
    std::string out;
    pump->pass(f.clk.steady_now(), out);
    return out;
  }
  std::optional<progress_call> work;
  std::unique_ptr<post_pump> pump;
};

// The params of a close notification in `ev`, checked to be one.
void check_close(const sse_event& ev, std::string_view reason, std::string_view execution_id) {
  CHECK_FALSE(ev.id.has_value());  // off-ring
  CHECK(ev.type == "message");
  parsed p{ev.data};
  CHECK(p.root["method"].as_string() == default_close_notification_method);
  const json::value params = p.root["params"];
  CHECK(params["reason"].as_string() == reason);
  CHECK(params["correlation_id"].as_string() == "cid-post");
  CHECK(params["retry_after_ms"].is_null());
  if (execution_id.empty()) {
    CHECK_FALSE(params["execution_id"].exists());
  } else {
    CHECK(params["execution_id"].as_string() == execution_id);
    CHECK(params["partial"].as_bool());
  }
}

}  // namespace

TEST_SUITE("stream_admission") {
  // ---- refusals ------------------------------------------------------------------------------

  TEST_CASE("http.md/get-sessions-on: the pre-attach GET refusals are 400 -32600, 404 -32007, 406 -32011") {
    const auto missing = get_refusal(stream_reject::missing_session_header);
    CHECK(missing.http_status == 400);
    CHECK(missing.code == errc::invalid_request);
    CHECK(missing.message == "Mcp-Session-Id header required");
    CHECK(missing.reason == stream_reject::missing_session_header);
    CHECK_FALSE(missing.retry_after.has_value());
    CHECK(missing.remediation.find("initialize") != std::string_view::npos);

    const auto unknown = get_refusal(stream_reject::unknown_session);
    CHECK(unknown.http_status == 404);
    CHECK(unknown.code == errc::unknown_session);
    CHECK(unknown.message == "Unknown or expired session");
    CHECK(unknown.reason == stream_reject::unknown_session);
    CHECK_FALSE(unknown.retry_after.has_value());
    CHECK(unknown.remediation.find("re-initialize") != std::string_view::npos);

    const auto accept = get_refusal(stream_reject::not_acceptable);
    CHECK(accept.http_status == 406);
    CHECK(accept.code == errc::not_acceptable);
    CHECK(accept.message == "GET requires Accept: text/event-stream");
    CHECK(accept.reason == stream_reject::not_acceptable);
    CHECK_FALSE(accept.retry_after.has_value());
    CHECK_FALSE(accept.remediation.empty());
  }

  TEST_CASE("sessions.md/get-attach-replay-resume: each attach refusal has its status, code, reason, retry floor and remediation") {
    const auto poisoned = get_refusal(attach_status::poisoned);
    CHECK(poisoned.http_status == 410);
    CHECK(poisoned.code == errc::stream_poisoned);
    CHECK(poisoned.message == "Stream terminated; final response undeliverable");
    CHECK(poisoned.reason == stream_reject::terminal_poisoned);
    CHECK_FALSE(poisoned.retry_after.has_value());  // a retry cannot succeed
    CHECK(poisoned.remediation.find("execution id") != std::string_view::npos);
    CHECK(poisoned.remediation.find("do not re-POST") != std::string_view::npos);

    const auto gap = get_refusal(attach_status::gap);
    CHECK(gap.http_status == 404);
    CHECK(gap.code == errc::unknown_session);
    CHECK(gap.message == "Replay window exceeded");
    CHECK(gap.reason == stream_reject::replay_window_exceeded);
    CHECK_FALSE(gap.retry_after.has_value());
    CHECK(gap.remediation.find("re-initialize") != std::string_view::npos);
    CHECK(gap.remediation.find("execution id") != std::string_view::npos);

    const auto handover = get_refusal(attach_status::handover_pending);
    CHECK(handover.http_status == 429);
    CHECK(handover.code == errc::stream_cap);
    CHECK(handover.message == "An earlier stream on this session is still closing");
    CHECK(handover.reason == stream_reject::stream_handover_pending);
    CHECK(handover.retry_after == retry::handover);
    CHECK(handover.retry_after == 5000ms);

    const auto global = get_refusal(attach_status::global_stream_cap);
    CHECK(global.http_status == 429);
    CHECK(global.code == errc::stream_cap);
    CHECK(global.message == "Concurrent stream cap reached");
    CHECK(global.reason == stream_reject::global_stream_cap);
    CHECK(global.retry_after == retry::stream_cap);
    CHECK(global.remediation.find("stream_budget_options::global_cap") != std::string_view::npos);

    const auto mine = get_refusal(attach_status::per_principal_stream_cap);
    CHECK(mine.http_status == 429);
    CHECK(mine.code == errc::stream_cap);
    CHECK(mine.message == "Concurrent stream cap reached");
    CHECK(mine.reason == stream_reject::per_principal_stream_cap);
    CHECK(mine.retry_after == retry::stream_cap);
    CHECK(mine.remediation.find("session_stream_options::get_streams_per_principal") != std::string_view::npos);
  }

  TEST_CASE("errors.md/the-errordata-envelope: write_refusal writes the JSON-RPC error with the envelope, id null for a GET") {
    std::string out;
    write_refusal(out, std::nullopt, get_refusal(attach_status::handover_pending), "req-1-2");
    parsed p{out};
    CHECK(p.root["jsonrpc"].as_string() == "2.0");
    CHECK(p.root["id"].is_null());
    const json::value e = p.root["error"];
    CHECK(e["code"].to_int64() == -32012);
    CHECK(e["message"].as_string() == "An earlier stream on this session is still closing");
    const json::value d = e["data"];
    CHECK(d["correlation_id"].as_string() == "req-1-2");
    CHECK(d["retry_after_ms"].to_int64() == 5000);
    CHECK(d["reason"].as_string() == "stream_handover_pending");
    CHECK(d["remediation"].is_string());
  }

  TEST_CASE("errors.md/the-errordata-envelope: write_refusal echoes a request id and writes retry_after_ms null when none") {
    fixture f;
    auto s = f.mint();
    auto first = f.admit(post_mode::streamed, s, 7);
    REQUIRE(first.call.has_value());
    auto dup = f.admit(post_mode::streamed, s, 7);
    REQUIRE(dup.refusal.has_value());
    std::string out;
    write_refusal(out, request_id_view{7}, *dup.refusal, "cid-\"x\"");
    parsed p{out};
    CHECK(p.root["id"].to_int64() == 7);
    const json::value e = p.root["error"];
    CHECK(e["code"].to_int64() == -32600);
    CHECK(e["message"].as_string() == "That request id is already in flight on this session");
    CHECK(e["data"]["correlation_id"].as_string() == "cid-\"x\"");  // escaped on the wire
    CHECK(e["data"]["retry_after_ms"].is_null());
    CHECK(e["data"]["reason"].as_string() == "post_duplicate_request_id");
    CHECK(e["data"]["remediation"].as_string().find("Last-Event-ID") != std::string_view::npos);
  }

  // ---- GET attach ----------------------------------------------------------------------------

  TEST_CASE("http.md/get-sessions-on: a malformed Last-Event-ID reads as 0: everything replays, no termination") {
    fixture f;
    auto s = f.mint();
    for (int i = 0; i < 3; ++i) REQUIRE(s->stream()->publish(R"({"jsonrpc":"2.0","method":"n"})") != 0);
    for (std::string_view header : {"", "abc", "-1", "+2", " 2", "2x", "1.0", "99999999999999999999999999"}) {
      CAPTURE(header);
      auto a = attach_get(f.registry, s, header, f.budget, "cid", f.m);
      REQUIRE_FALSE(a.refusal.has_value());
      CHECK(a.attached.status == attach_status::attached);
      REQUIRE(a.attached.sink != nullptr);
      CHECK(a.attached.replayed == 3);
      s->stream()->detach(*a.attached.sink);
    }
    CHECK(f.registry.validate_and_touch(s->id(), "alice") != nullptr);
    CHECK(f.rejects(stream_reject::replay_window_exceeded) == 0);
    CHECK(f.budget.in_use() == 0);
  }

  TEST_CASE("sessions.md/get-attach-replay-resume: a valid cursor replays only the frames after it") {
    fixture f;
    auto s = f.mint();
    for (int i = 0; i < 3; ++i) REQUIRE(s->stream()->publish(R"({"jsonrpc":"2.0","method":"n"})") != 0);
    auto a = attach_get(f.registry, s, "2", f.budget, "cid", f.m);
    REQUIRE_FALSE(a.refusal.has_value());
    REQUIRE(a.attached.sink != nullptr);
    stream_sink::batch b;
    a.attached.sink->take(b);
    REQUIRE(b.frames.size() == 1);
    CHECK(b.frames[0].id == 3);
    s->stream()->detach(*a.attached.sink);
  }

  TEST_CASE("sessions.md/get-attach-replay-resume: a cursor from the future is a gap: 404 and the session is terminated") {
    fixture f;
    auto s = f.mint();
    REQUIRE(s->stream()->publish(R"({"jsonrpc":"2.0","method":"n"})") == 1);
    auto a = attach_get(f.registry, s, "5", f.budget, "req-gap", f.m);
    REQUIRE(a.refusal.has_value());
    CHECK(a.attached.sink == nullptr);
    CHECK(a.refusal->http_status == 404);
    CHECK(a.refusal->code == errc::unknown_session);
    CHECK(a.refusal->message == "Replay window exceeded");
    CHECK(a.refusal->reason == stream_reject::replay_window_exceeded);
    // One coherent signal: the session is gone, so the next POST 404s too.
    CHECK(f.registry.validate_and_touch(s->id(), "alice") == nullptr);
    const auto closes = f.rows("mcp.session.close");
    REQUIRE(closes.size() == 1);
    CHECK(closes[0].detail == "reason=replay_window_exceeded");
    CHECK(closes[0].correlation_id == "req-gap");
    CHECK(f.rejects(stream_reject::replay_window_exceeded) == 1);
    CHECK(f.budget.in_use() == 0);

    std::string out;
    write_refusal(out, std::nullopt, *a.refusal, "req-gap");
    parsed p{out};
    CHECK(p.root["id"].is_null());
    CHECK(p.root["error"]["code"].to_int64() == -32007);
    CHECK(p.root["error"]["data"]["reason"].as_string() == "replay_window_exceeded");
    CHECK(p.root["error"]["data"]["retry_after_ms"].is_null());
    CHECK(p.root["error"]["data"]["correlation_id"].as_string() == "req-gap");
  }

  TEST_CASE("sessions.md/get-attach-replay-resume: a poisoned stream answers 410 and the session stays") {
    fixture f;
    auto s = f.mint();
    s->stream()->poison();
    auto a = attach_get(f.registry, s, "", f.budget, "cid", f.m);
    REQUIRE(a.refusal.has_value());
    CHECK(a.refusal->http_status == 410);
    CHECK(a.refusal->code == errc::stream_poisoned);
    CHECK(a.refusal->reason == stream_reject::terminal_poisoned);
    CHECK_FALSE(a.refusal->retry_after.has_value());
    CHECK(f.rejects(stream_reject::terminal_poisoned) == 1);
    CHECK(f.registry.validate_and_touch(s->id(), "alice") != nullptr);
  }

  TEST_CASE("sessions.md/get-attach-replay-resume: a live and a draining sink make the next attach 429 handover, retry 5 s") {
    fixture f;
    auto s = f.mint();
    auto first = attach_get(f.registry, s, "", f.budget, "cid", f.m);
    REQUIRE_FALSE(first.refusal.has_value());
    auto second = attach_get(f.registry, s, "", f.budget, "cid", f.m);  // takes over; the first drains
    REQUIRE_FALSE(second.refusal.has_value());
    CHECK(second.attached.took_over);
    auto third = attach_get(f.registry, s, "", f.budget, "cid", f.m);
    REQUIRE(third.refusal.has_value());
    CHECK(third.refusal->http_status == 429);
    CHECK(third.refusal->code == errc::stream_cap);
    CHECK(third.refusal->reason == stream_reject::stream_handover_pending);
    CHECK(third.refusal->retry_after == 5000ms);
    CHECK(f.rejects(stream_reject::stream_handover_pending) == 1);
    s->stream()->detach(*first.attached.sink);
    s->stream()->detach(*second.attached.sink);
    CHECK(f.budget.in_use() == 0);
  }

  TEST_CASE("sessions.md/get-attach-replay-resume, sessions.md/the-stream-budget: the global and the per-principal GET caps answer 429, retry 5 s") {
    SUBCASE("global") {
      stream_budget_options so;
      so.global_cap = 0;
      fixture f{{}, {}, so};
      auto s = f.mint();
      auto a = attach_get(f.registry, s, "", f.budget, "cid", f.m);
      REQUIRE(a.refusal.has_value());
      CHECK(a.refusal->http_status == 429);
      CHECK(a.refusal->reason == stream_reject::global_stream_cap);
      CHECK(a.refusal->retry_after == retry::stream_cap);
      CHECK(f.rejects(stream_reject::global_stream_cap) == 1);
    }
    SUBCASE("per principal") {
      session_registry_options ro;
      ro.stream.get_streams_per_principal = 1;
      fixture f{{}, ro};
      auto s1 = f.mint();
      auto s2 = f.mint();
      auto a = attach_get(f.registry, s1, "", f.budget, "cid", f.m);
      REQUIRE_FALSE(a.refusal.has_value());
      auto b = attach_get(f.registry, s2, "", f.budget, "cid", f.m);
      REQUIRE(b.refusal.has_value());
      CHECK(b.refusal->http_status == 429);
      CHECK(b.refusal->code == errc::stream_cap);
      CHECK(b.refusal->reason == stream_reject::per_principal_stream_cap);
      CHECK(b.refusal->retry_after == retry::stream_cap);
      CHECK(f.rejects(stream_reject::per_principal_stream_cap) == 1);
      // Another principal is not affected.
      auto t = f.mint("bob");
      auto c = attach_get(f.registry, t, "", f.budget, "cid", f.m);
      CHECK_FALSE(c.refusal.has_value());
      s1->stream()->detach(*a.attached.sink);
      t->stream()->detach(*c.attached.sink);
    }
  }

  // ---- opt-in --------------------------------------------------------------------------------

  TEST_CASE("sessions.md/streamed-post-admission: the mode matrix: token type, session, bridge, Accept, streamed POST enabled") {
    parsed p{R"({"s":"a","i":7,"neg":-3,"zero":0,"f":1.0,"e":1e2,"half":0.5,"b":true,"n":null,"o":{},"a":[],)"
             R"("big":18446744073709551615})"};
    const auto mode = [&](std::string_view key, bool accepts = true, bool session = true, bool bridge = true,
                          bool enabled = true) {
      post_mode_inputs in;
      in.bridge_available = bridge;
      in.has_session = session;
      in.progress_token = p.root[key];
      in.accepts_sse = accepts;
      in.streamed_post_enabled = enabled;
      return choose_post_mode(in);
    };
    // The progress token is the gate.
    CHECK(mode("s") == post_mode::streamed);
    CHECK(mode("i") == post_mode::streamed);
    CHECK(mode("neg") == post_mode::streamed);
    CHECK(mode("zero") == post_mode::streamed);
    CHECK(mode("f") == post_mode::plain);  // 1.0 is a float, not an integer
    CHECK(mode("e") == post_mode::plain);
    CHECK(mode("half") == post_mode::plain);
    CHECK(mode("b") == post_mode::plain);
    CHECK(mode("n") == post_mode::plain);
    CHECK(mode("o") == post_mode::plain);
    CHECK(mode("a") == post_mode::plain);
    CHECK(mode("big") == post_mode::plain);      // beyond int64: not an id
    CHECK(mode("missing") == post_mode::plain);  // absent
    // Eligible, but no SSE Accept or streamed POST disabled: GET-only.
    CHECK(mode("s", false) == post_mode::get_only);
    CHECK(mode("i", true, true, true, false) == post_mode::get_only);
    // No session or no bridge: plain, whatever else.
    CHECK(mode("s", true, false) == post_mode::plain);
    CHECK(mode("s", true, true, false) == post_mode::plain);
    CHECK(mode("s", false, false, false, false) == post_mode::plain);
    // A default input is plain.
    CHECK(choose_post_mode(post_mode_inputs{}) == post_mode::plain);
  }

  TEST_CASE("sessions.md/streamed-post-admission: progress_token_of keeps strings and integers exactly, nothing else") {
    parsed p{R"({"s":"1","i":1,"neg":-9223372036854775808,"f":1.0,"b":false,"n":null,"o":{"x":1},)"
             R"("big":9223372036854775808,"esc":"a\u0041"})"};
    const auto s = progress_token_of(p.root["s"]);
    REQUIRE(s.has_value());
    CHECK(s->view().is_string());
    CHECK(s->view().as_string() == "1");
    const auto i = progress_token_of(p.root["i"]);
    REQUIRE(i.has_value());
    CHECK(i->view().is_integer());
    CHECK(i->view().as_integer() == 1);
    CHECK_FALSE(*s == *i);  // "1" and 1 are different tokens
    const auto neg = progress_token_of(p.root["neg"]);
    REQUIRE(neg.has_value());
    CHECK(neg->view().as_integer() == INT64_MIN);
    const auto esc = progress_token_of(p.root["esc"]);
    REQUIRE(esc.has_value());
    CHECK(esc->view().as_string() == "aA");
    CHECK_FALSE(progress_token_of(p.root["f"]).has_value());
    CHECK_FALSE(progress_token_of(p.root["b"]).has_value());
    CHECK_FALSE(progress_token_of(p.root["n"]).has_value());
    CHECK_FALSE(progress_token_of(p.root["o"]).has_value());
    CHECK_FALSE(progress_token_of(p.root["big"]).has_value());
    CHECK_FALSE(progress_token_of(json::value{}).has_value());
  }

  // ---- admission -----------------------------------------------------------------------------

  TEST_CASE("sessions.md/streamed-post-admission: plain admits nothing, get_only reserves without a lease, streamed takes both") {
    fixture f;
    auto s = f.mint();
    auto plain = f.admit(post_mode::plain, s, 1);
    CHECK(plain.mode == post_mode::plain);
    CHECK_FALSE(plain.call.has_value());
    CHECK_FALSE(static_cast<bool>(plain.lease));
    CHECK_FALSE(plain.refusal.has_value());
    CHECK_FALSE(plain.degraded.has_value());
    CHECK(f.bridge.records() == 0);

    auto get_only = f.admit(post_mode::get_only, s, 2);
    CHECK(get_only.mode == post_mode::get_only);
    REQUIRE(get_only.call.has_value());
    CHECK(get_only.call->wake_sink() == nullptr);  // not a streamed reservation
    CHECK_FALSE(static_cast<bool>(get_only.lease));
    CHECK(f.budget.in_use() == 0);
    CHECK(f.bridge.charges(s->id()) == 0);

    auto streamed = f.admit(post_mode::streamed, s, 3);
    CHECK(streamed.mode == post_mode::streamed);
    REQUIRE(streamed.call.has_value());
    CHECK(streamed.call->wake_sink() != nullptr);
    CHECK(static_cast<bool>(streamed.lease));
    CHECK(f.budget.in_use(stream_surface_post, "alice") == 1);
    CHECK(f.bridge.charges(s->id()) == 1);
    CHECK(f.bridge.records() == 2);
  }

  TEST_CASE("sessions.md/streamed-post-admission: the POST per-principal cap (4) refuses 429 post_per_principal_cap, retry 30 s") {
    fixture f;
    auto s = f.mint();
    std::vector<stream_lease> held;
    for (int i = 0; i < 4; ++i) {
      auto l = f.budget.try_acquire(stream_surface_post, "alice", default_post_streams_per_principal);
      REQUIRE(l.has_value());
      held.push_back(std::move(*l));
    }
    auto a = f.admit(post_mode::streamed, s, 1);
    REQUIRE(a.refusal.has_value());
    CHECK(a.mode == post_mode::plain);
    CHECK_FALSE(a.call.has_value());
    CHECK_FALSE(static_cast<bool>(a.lease));
    CHECK(a.refusal->http_status == 429);
    CHECK(a.refusal->code == errc::stream_cap);
    CHECK(a.refusal->message == "Concurrent stream cap reached");
    CHECK(a.refusal->reason == stream_reject::post_per_principal_cap);
    CHECK(a.refusal->retry_after == retry::streamed_post);
    CHECK(a.refusal->retry_after == 30000ms);
    CHECK(a.refusal->remediation.find("without Accept: text/event-stream") != std::string_view::npos);
    CHECK(f.rejects(stream_reject::post_per_principal_cap) == 1);
    CHECK(f.bridge.records() == 0);  // nothing reserved, nothing dispatched
    CHECK(f.budget.in_use() == 4);
    // GET-only takes no lease, so the cap does not apply to it.
    auto g = f.admit(post_mode::get_only, s, 2);
    CHECK(g.mode == post_mode::get_only);
  }

  TEST_CASE("sessions.md/streamed-post-admission: the global budget cap refuses 429 post_global_cap") {
    stream_budget_options so;
    so.global_cap = 1;
    fixture f{{}, {}, so};
    auto s = f.mint();
    auto other = f.budget.try_acquire(stream_surface_get, "bob", 0);
    REQUIRE(other.has_value());
    auto a = f.admit(post_mode::streamed, s, 1);
    REQUIRE(a.refusal.has_value());
    CHECK(a.refusal->http_status == 429);
    CHECK(a.refusal->code == errc::stream_cap);
    CHECK(a.refusal->reason == stream_reject::post_global_cap);
    CHECK(a.refusal->retry_after == retry::streamed_post);
    CHECK(f.rejects(stream_reject::post_global_cap) == 1);
    CHECK(f.bridge.records() == 0);
    std::string out;
    write_refusal(out, request_id_view{1}, *a.refusal, "cid");
    parsed p{out};
    CHECK(p.root["error"]["code"].to_int64() == -32012);
    CHECK(p.root["error"]["data"]["retry_after_ms"].to_int64() == 30000);
    CHECK(p.root["error"]["data"]["reason"].as_string() == "post_global_cap");
  }

  TEST_CASE("sessions.md/streamed-post-admission: a duplicate id is 409 on a streamed request, a silent plain degrade on GET-only") {
    fixture f;
    auto s = f.mint();
    auto first = f.admit(post_mode::streamed, s, request_id{std::string{"req-1"}});
    REQUIRE(first.call.has_value());
    REQUIRE(f.budget.in_use() == 1);

    auto dup = f.admit(post_mode::streamed, s, request_id{std::string{"req-1"}});
    REQUIRE(dup.refusal.has_value());
    CHECK(dup.mode == post_mode::plain);
    CHECK(dup.refusal->http_status == 409);
    CHECK(dup.refusal->code == errc::invalid_request);
    CHECK(dup.refusal->reason == stream_reject::post_duplicate_request_id);
    CHECK_FALSE(dup.refusal->retry_after.has_value());
    CHECK(dup.refusal->remediation.find("fresh") != std::string_view::npos);
    CHECK(f.rejects(stream_reject::post_duplicate_request_id) == 1);
    CHECK(f.budget.in_use() == 1);  // the refused request's lease went back

    auto quiet = f.admit(post_mode::get_only, s, request_id{std::string{"req-1"}});
    CHECK_FALSE(quiet.refusal.has_value());
    CHECK(quiet.mode == post_mode::plain);
    CHECK_FALSE(quiet.call.has_value());
    REQUIRE(quiet.degraded.has_value());
    CHECK(*quiet.degraded == bridge_degrade::reserve_rejected);
    CHECK(f.degrades(bridge_degrade::reserve_rejected) == 1);
    CHECK(f.rejects(stream_reject::post_duplicate_request_id) == 1);

    // The integer 1 is another id than the string "1" (exact match).
    auto s1 = f.admit(post_mode::streamed, s, request_id{std::string{"1"}});
    auto i1 = f.admit(post_mode::streamed, s, 1);
    CHECK(s1.call.has_value());
    CHECK(i1.call.has_value());
  }

  TEST_CASE("sessions.md/streamed-post-admission: a session gone before the reservation is 404 post_unknown_session") {
    fixture f;
    auto s = f.mint();
    REQUIRE(f.registry.terminate(s->id(), "alice"));
    auto a = f.admit(post_mode::streamed, s, 1);
    REQUIRE(a.refusal.has_value());
    CHECK(a.refusal->http_status == 404);
    CHECK(a.refusal->code == errc::unknown_session);
    CHECK(a.refusal->message == "Unknown or expired session");
    CHECK(a.refusal->reason == stream_reject::post_unknown_session);
    CHECK_FALSE(a.refusal->retry_after.has_value());
    CHECK(f.rejects(stream_reject::post_unknown_session) == 1);
    CHECK(f.budget.in_use() == 0);
    auto g = f.admit(post_mode::get_only, s, 2);
    REQUIRE(g.refusal.has_value());
    CHECK(g.refusal->reason == stream_reject::post_unknown_session);
    auto n = f.admit(post_mode::streamed, nullptr, 3);
    REQUIRE(n.refusal.has_value());
    CHECK(n.refusal->reason == stream_reject::post_unknown_session);
    CHECK(f.budget.in_use() == 0);
  }

  TEST_CASE("sessions.md/streamed-post-admission: the bridge record cap is 429 post_record_cap, retry 30 s") {
    progress_bridge_options bo;
    bo.max_records = 1;
    fixture f{bo};
    auto s = f.mint();
    auto first = f.admit(post_mode::streamed, s, 1);
    REQUIRE(first.call.has_value());
    auto a = f.admit(post_mode::streamed, s, 2);
    REQUIRE(a.refusal.has_value());
    CHECK(a.refusal->http_status == 429);
    CHECK(a.refusal->code == errc::stream_cap);
    CHECK(a.refusal->message == "Streamed request capacity reached");
    CHECK(a.refusal->reason == stream_reject::post_record_cap);
    CHECK(a.refusal->retry_after == retry::streamed_post);
    CHECK(f.rejects(stream_reject::post_record_cap) == 1);
    CHECK(f.budget.in_use() == 1);  // only the first request's lease
  }

  TEST_CASE("sessions.md/pinned-finals, sessions.md/streamed-post-admission: pin_slots is 429 post_pin_slots with the remediation of whichever half holds them") {
    SUBCASE("held by pins: finals committed, not yet written") {
      fixture f;
      auto s = f.mint();
      std::vector<progress_call> calls;
      for (int i = 1; i <= 4; ++i) {
        auto r = f.bridge.reserve(s, i, str_tok, true);
        REQUIRE(r.has_value());
        REQUIRE(r->arm(bridge_delivery::streamed) == arm_outcome::streaming);
        REQUIRE(r->complete(success(i, "{}")));
        calls.push_back(*r);
      }
      REQUIRE(f.bridge.charges(s->id()) == 0);
      auto a = f.admit(post_mode::streamed, s, 5);
      REQUIRE(a.refusal.has_value());
      CHECK(a.refusal->http_status == 429);
      CHECK(a.refusal->code == errc::stream_cap);
      CHECK(a.refusal->message == "Too many undelivered streamed results on this session");
      CHECK(a.refusal->reason == stream_reject::post_pin_slots);
      CHECK(a.refusal->retry_after == retry::streamed_post);
      CHECK(a.refusal->remediation.find("cursor one below the lowest id") != std::string_view::npos);
      CHECK(f.rejects(stream_reject::post_pin_slots) == 1);
      CHECK(f.budget.in_use() == 0);
    }
    SUBCASE("held by charges: streamed calls in flight") {
      fixture f;
      auto s = f.mint();
      std::vector<progress_call> calls;
      for (int i = 1; i <= 4; ++i) {
        auto r = f.bridge.reserve(s, i, str_tok, true);
        REQUIRE(r.has_value());
        calls.push_back(*r);
      }
      auto a = f.admit(post_mode::streamed, s, 5);
      REQUIRE(a.refusal.has_value());
      CHECK(a.refusal->reason == stream_reject::post_pin_slots);
      CHECK(a.refusal->remediation == "wait for one of your streamed calls on this session to finish");
      CHECK(f.budget.in_use() == 0);
    }
  }

  TEST_CASE("sessions.md/streamed-post-admission: a disabled or shut-down bridge degrades to plain and returns the lease") {
    SUBCASE("disabled") {
      progress_bridge_options bo;
      bo.enabled = false;
      fixture f{bo};
      auto s = f.mint();
      auto a = f.admit(post_mode::streamed, s, 1);
      CHECK(a.mode == post_mode::plain);
      CHECK_FALSE(a.refusal.has_value());
      CHECK_FALSE(a.call.has_value());
      CHECK_FALSE(static_cast<bool>(a.lease));
      REQUIRE(a.degraded.has_value());
      CHECK(*a.degraded == bridge_degrade::reserve_rejected);
      CHECK(f.budget.in_use() == 0);
      CHECK(f.degrades(bridge_degrade::reserve_rejected) == 1);
      auto g = f.admit(post_mode::get_only, s, 2);
      CHECK(g.mode == post_mode::plain);
      CHECK(g.degraded == bridge_degrade::reserve_rejected);
    }
    SUBCASE("shutdown") {
      fixture f;
      auto s = f.mint();
      f.bridge.shutdown();
      auto a = f.admit(post_mode::streamed, s, 1);
      CHECK(a.mode == post_mode::plain);
      CHECK_FALSE(a.refusal.has_value());
      REQUIRE(a.degraded.has_value());
      CHECK(*a.degraded == bridge_degrade::reserve_rejected);
      CHECK(f.budget.in_use() == 0);
      CHECK(f.budget.entries() == 0);
    }
  }

  // ---- post-dispatch failures ----------------------------------------------------------------

  TEST_CASE("sessions.md/streamed-post-admission: the post-dispatch 500s are -32603 with execution_id, retry null and fetch-by-id") {
    SUBCASE("stream install failed, with an execution id") {
      std::string out;
      write_post_dispatch_failure(out, request_id_view{"r1"}, post_dispatch_failure::stream_install_failed, "cid-9",
                                  "exec-42");
      parsed p{out};
      CHECK(p.root["id"].as_string() == "r1");
      const json::value e = p.root["error"];
      CHECK(e["code"].to_int64() == -32603);
      CHECK(e["message"].as_string() == "streamed response could not be established");
      CHECK(e["data"]["correlation_id"].as_string() == "cid-9");
      CHECK(e["data"]["retry_after_ms"].is_null());
      CHECK(e["data"]["execution_id"].as_string() == "exec-42");
      const std::string_view rem = e["data"]["remediation"].as_string();
      CHECK(rem.find("execution id") != std::string_view::npos);
      CHECK(rem.find("do not re-POST") != std::string_view::npos);
    }
    SUBCASE("dispatch threw, no execution id yet") {
      std::string out;
      write_post_dispatch_failure(out, request_id_view{3}, post_dispatch_failure::dispatch_threw, "cid-9", "");
      parsed p{out};
      CHECK(p.root["id"].to_int64() == 3);
      const json::value e = p.root["error"];
      CHECK(e["code"].to_int64() == -32603);
      CHECK(e["message"].as_string() == "dispatched, but the response could not be completed");
      REQUIRE(e["data"]["execution_id"].exists());
      CHECK(e["data"]["execution_id"].is_null());
      CHECK(e["data"]["retry_after_ms"].is_null());
    }
  }

  // ---- post pump -----------------------------------------------------------------------------

  TEST_CASE("sessions.md/streamed-post: progress frames then the final last, with ring ids, completed only after written()") {
    fixture f;
    auto s = f.mint();
    streamed_post p{f, s, 11};
    CHECK(f.m.post_streams_active.value() == 1);
    CHECK(p.pass(f).empty());  // nothing yet, no tick: no heartbeat
    REQUIRE(p.work->progress(1, 10));
    REQUIRE(p.work->progress(2, 10));
    REQUIRE(p.work->complete(success(11, R"({"ok":true})")));
    const std::string out = p.pass(f);
    const auto evs = events(out);
    REQUIRE(evs.size() == 3);
    CHECK(evs[0].id == 1u);
    CHECK(evs[1].id == 2u);
    CHECK(evs[2].id == 3u);
    for (const auto& e : evs) CHECK(e.type == "message");
    parsed first{evs[0].data};
    CHECK(first.root["method"].as_string() == "notifications/progress");
    CHECK(first.root["params"]["_meta"][execution_id_meta_key].as_string() == "exec-1");
    parsed final_frame{evs[2].data};
    CHECK(final_frame.root["id"].to_int64() == 11);
    CHECK(final_frame.root["result"]["ok"].as_bool());

    CHECK_FALSE(p.pump->finished());  // not before the bytes reached the wire
    CHECK(p.pass(f).empty());         // nothing while the final is in flight
    // Nothing after the final, not even a heartbeat or the close frame of a revocation.
    f.clk.advance(3000ms);
    p.pump->tick(f.clk.steady_now(), credential_verdict::revoked, true);
    CHECK(p.pass(f).empty());
    CHECK(s->stream()->pinned(3));
    p.pump->written();
    CHECK(p.pump->finished());
    CHECK(p.pump->reason() == close_reason::completed);
    CHECK(p.work->state_now() == bridge_record_state::done);
    CHECK_FALSE(s->stream()->pinned(3));  // route (a)
    CHECK(p.pass(f).empty());             // no close frame after a final
    p.pump->release();
    CHECK(f.closes(close_reason::completed) == 1);
    CHECK(f.m.post_streams_active.value() == 0);
    CHECK(f.budget.in_use() == 0);
    CHECK(p.work->state_now() == bridge_record_state::done);
  }

  TEST_CASE("sessions.md/streamed-post: at the cap one drain pass writes pending progress, the next closes cap_expired") {
    fixture f;
    auto s = f.mint();
    streamed_post p{f, s, 1, pump_options(1000ms)};
    CHECK(p.pump->wait_time(f.clk.steady_now()) == 1000ms);  // the cap is nearer than the tick
    REQUIRE(p.work->progress(1, 10));
    f.clk.advance(1000ms);
    CHECK(p.pump->wait_time(f.clk.steady_now()) == 0ms);
    const auto drain = events(p.pass(f));
    REQUIRE(drain.size() == 1);
    CHECK(drain[0].id == 1u);
    CHECK_FALSE(p.pump->finished());
    const auto close = events(p.pass(f));
    REQUIRE(close.size() == 1);
    check_close(close[0], "cap_expired", "exec-1");
    CHECK(p.pump->finished());
    CHECK(p.pump->reason() == close_reason::cap_expired);
    p.pump->release();
    CHECK(f.closes(close_reason::cap_expired) == 1);
    // The work continues: the record parks for a GET resume.
    CHECK(p.work->state_now() == bridge_record_state::ring_only);
    CHECK(f.budget.in_use() == 0);
  }

  TEST_CASE("sessions.md/streamed-post: a terminal latched before the cap wins over it") {
    fixture f;
    auto s = f.mint();
    streamed_post p{f, s, 1, pump_options(1000ms)};
    REQUIRE(p.work->complete(success(1, "{}")));
    f.clk.advance(5000ms);
    const auto evs = events(p.pass(f));
    REQUIRE(evs.size() == 1);
    CHECK(evs[0].id == 1u);
    parsed fin{evs[0].data};
    CHECK(fin.root["id"].to_int64() == 1);
    p.pump->written();
    CHECK(p.pump->reason() == close_reason::completed);
  }

  TEST_CASE("sessions.md/cancellation: a cancel closes the POST cancelled with execution_id and partial, the record parks") {
    fixture f;
    auto s = f.mint();
    streamed_post p{f, s, 5};
    REQUIRE(p.work->progress(1, 4));
    CHECK(f.bridge.cancel(s->id(), 5) == cancel_outcome::detached);
    const auto evs = events(p.pass(f));
    REQUIRE(evs.size() == 1);  // the queued progress stays in the ring, not on this wire
    check_close(evs[0], "cancelled", "exec-1");
    CHECK(p.pump->finished());
    CHECK(p.pump->reason() == close_reason::cancelled);
    p.pump->release();
    CHECK(p.work->state_now() == bridge_record_state::ring_only);
    CHECK(f.closes(close_reason::cancelled) == 1);
  }

  TEST_CASE("sessions.md/streamed-post: a write failure finishes client_disconnect and the record parks with its final pinned") {
    fixture f;
    auto s = f.mint();
    streamed_post p{f, s, 2};
    REQUIRE(p.work->complete(success(2, "{}")));
    const auto evs = events(p.pass(f));
    REQUIRE(evs.size() == 1);
    p.pump->write_failed();
    CHECK(p.pump->finished());
    CHECK(p.pump->reason() == close_reason::client_disconnect);
    p.pump->written();  // too late: nothing changes
    CHECK(p.pump->reason() == close_reason::client_disconnect);
    p.pump->release();
    CHECK(p.work->state_now() == bridge_record_state::ring_only);
    CHECK(s->stream()->pinned(*evs[0].id));  // a GET resume can still recover it
    CHECK(f.closes(close_reason::client_disconnect) == 1);
  }

  TEST_CASE("sessions.md/streamed-post releaser: release returns the lease, pairs the gauge and is idempotent") {
    fixture f;
    auto s = f.mint();
    {
      streamed_post p{f, s, 1};
      CHECK(f.budget.in_use() == 1);
      CHECK(f.m.post_streams_active.value() == 1);
      p.pump->release();  // before finishing: the peer went away
      CHECK(p.pump->finished());
      CHECK(p.pump->reason() == close_reason::client_disconnect);
      CHECK(f.budget.in_use() == 0);
      CHECK(f.m.post_streams_active.value() == 0);
      CHECK(f.closes(close_reason::client_disconnect) == 1);
      p.pump->release();
      CHECK(f.m.post_streams_active.value() == 0);
      CHECK(f.closes(close_reason::client_disconnect) == 1);
      CHECK(p.work->state_now() == bridge_record_state::ring_only);
    }  // the destructor runs release again: still once
    CHECK(f.m.post_streams_active.value() == 0);
    CHECK(f.closes(close_reason::client_disconnect) == 1);
    {
      streamed_post q{f, s, 2};
      CHECK(f.budget.in_use() == 1);
    }  // the destructor releases
    CHECK(f.budget.in_use() == 0);
    CHECK(f.m.post_streams_active.value() == 0);
  }

  TEST_CASE("sessions.md/sse-frames, sessions.md/streamed-post: a heartbeat only on a pass that writes nothing after a tick elapsed") {
    fixture f;
    auto s = f.mint();
    streamed_post p{f, s, 1};
    CHECK_FALSE(p.pump->tick_due(f.clk.steady_now()));
    CHECK(p.pump->wait_time(f.clk.steady_now()) == 3000ms);
    CHECK(p.pass(f).empty());
    f.clk.advance(3000ms);
    REQUIRE(p.pump->tick_due(f.clk.steady_now()));
    p.pump->tick(f.clk.steady_now(), credential_verdict::valid, true);
    CHECK(p.pass(f) == "event: heartbeat\ndata: \n\n");
    CHECK(p.pass(f).empty());  // once per tick
    f.clk.advance(3000ms);
    p.pump->tick(f.clk.steady_now(), credential_verdict::valid, true);
    REQUIRE(p.work->progress(1, 2));
    const auto evs = events(p.pass(f));
    REQUIRE(evs.size() == 1);  // frames instead of a heartbeat
    CHECK(evs[0].type == "message");
    CHECK(p.pass(f).empty());
    CHECK_FALSE(p.pump->finished());
  }

  TEST_CASE("sessions.md/credential-re-validation, sessions.md/close-reasons: a revocation seen by a tick closes credential_revoked with a frame") {
    fixture f;
    auto s = f.mint();
    streamed_post p{f, s, 1};
    f.clk.advance(3000ms);
    p.pump->tick(f.clk.steady_now(), credential_verdict::revoked, true);
    CHECK(p.pump->reason() == close_reason::credential_revoked);  // recorded, not yet finished
    const auto evs = events(p.pass(f));
    REQUIRE(evs.size() == 1);
    check_close(evs[0], "credential_revoked", "exec-1");
    CHECK(p.pump->finished());
    p.pump->write_failed();  // the first reason stands
    CHECK(p.pump->reason() == close_reason::credential_revoked);
    p.pump->release();
    CHECK(f.closes(close_reason::credential_revoked) == 1);
  }

  TEST_CASE("sessions.md/credential-re-validation: an indeterminate verdict arms the grace deadline, which bounds the wait") {
    fixture f;
    auto s = f.mint();
    auto o = pump_options(default_post_response_cap, 3000ms);
    o.revalidation.grace = 4000ms;
    streamed_post p{f, s, 1, o};
    f.clk.advance(3000ms);
    p.pump->tick(f.clk.steady_now(), credential_verdict::indeterminate, true);
    CHECK(p.pump->wait_time(f.clk.steady_now()) == 1000ms);  // the deadline (4 s) before the next tick (6 s)
    f.clk.advance(1000ms);
    CHECK(p.pump->tick_due(f.clk.steady_now()));
    p.pump->tick(f.clk.steady_now(), credential_verdict::indeterminate, true);
    const auto evs = events(p.pass(f));
    REQUIRE(evs.size() == 1);
    check_close(evs[0], "auth_unavailable", "exec-1");
  }

  TEST_CASE("sessions.md/the-get-pump, sessions.md/close-reasons: a session gone at a tick closes session_terminated") {
    fixture f;
    auto s = f.mint();
    streamed_post p{f, s, 1};
    REQUIRE(f.registry.terminate(s->id(), "alice"));
    f.clk.advance(3000ms);
    p.pump->tick(f.clk.steady_now(), credential_verdict::valid,
                 f.registry.validate_and_touch(s->id(), "alice") != nullptr);
    const auto evs = events(p.pass(f));
    REQUIRE(evs.size() == 1);
    check_close(evs[0], "session_terminated", "exec-1");
    CHECK(p.pump->reason() == close_reason::session_terminated);
  }

  TEST_CASE("sessions.md/close-reasons: without an execution id the close frame carries neither execution_id nor partial") {
    fixture f;
    auto s = f.mint();
    streamed_post p{f, s, 1, pump_options(), ""};
    CHECK(f.bridge.cancel(s->id(), 1) == cancel_outcome::detached);
    const auto evs = events(p.pass(f));
    REQUIRE(evs.size() == 1);
    check_close(evs[0], "cancelled", "");
  }

  TEST_CASE("sessions.md/close-reasons, errors.md/honest-answers: work that ends without a response (cancelled) ends the POST cancelled, with its frame") {
    fixture f;
    auto s = f.mint();
    streamed_post p{f, s, 1};
    REQUIRE(p.work->complete_without_response());
    const auto evs = events(p.pass(f));
    REQUIRE(evs.size() == 1);
    check_close(evs[0], "cancelled", "exec-1");
    CHECK(p.pump->finished());
    CHECK(p.pump->reason() == close_reason::cancelled);
  }

  TEST_CASE("sessions.md/pinned-finals, sessions.md/shutdown: a bridge shutdown under a live pump closes it internal_error with a frame") {
    fixture f;
    auto s = f.mint();
    streamed_post p{f, s, 1};
    REQUIRE(p.work->progress(1, 2));
    f.bridge.shutdown();
    const auto evs = events(p.pass(f));
    REQUIRE(evs.size() == 1);
    check_close(evs[0], "internal_error", "exec-1");
    CHECK(p.pump->reason() == close_reason::internal_error);
  }

  TEST_CASE("sessions.md/streamed-post: the response cap saturates instead of overflowing") {
    fixture f;
    auto s = f.mint();
    streamed_post p{f, s, 1, pump_options(milliseconds::max())};
    CHECK(p.pump->wait_time(f.clk.steady_now()) == 3000ms);
    f.clk.advance(1h);
    p.pump->tick(f.clk.steady_now(), credential_verdict::valid, true);
    CHECK(p.pass(f) == "event: heartbeat\ndata: \n\n");
    CHECK_FALSE(p.pump->finished());
  }
}
