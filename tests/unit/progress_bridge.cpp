// SPDX-License-Identifier: Apache-2.0
// Tests of the progress bridge (docs/sessions.md#pinned-finals, #streamed-post, #progress-records,
// #shutdown, #lock-discipline, #exception-boundaries, #ordering-guarantees): admission and its
// refusals, pin accounting and reclaim, arm, projection, finals, cancellation, sweep, shutdown.
#include <mcpcore/session/progress_bridge.hpp>

#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/session/session_metrics.hpp>
#include <mcpcore/session/session_registry.hpp>
#include <mcpcore/session/session_stream.hpp>
#include <mcpcore/session/stream_budget.hpp>
#include <mcpcore/wire/error.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace mcpcore;
using namespace std::chrono_literals;

namespace {

// A final as `operation_handle::finish` hands it to the record: the work's complete result object.
operation_final final_of(std::string result_json) {
  operation_final f;
  f.result_json = std::move(result_json);
  return f;
}
// The result object of a finished fleet run (its structured content, its text twin, the execution
// id in `_meta`), as the dispatch core writes it.
constexpr std::string_view fleet_result =
    R"({"content":[{"type":"text","text":"{\"status\":\"completed\",\"agents_success\":3}"}],)"
    R"("structuredContent":{"status":"completed","agents_success":3},"_meta":{"mcpcore/executionId":"ex-7"}})";

// A bridge and a registry on a manual clock, with metrics and an audit trail to inspect.
struct fixture {
  explicit fixture(progress_bridge_options o = {}, session_registry_options ro = {})
      : registry(ro, clock_ref<manual_clock>{clk}, m),
        bridge(std::make_unique<progress_bridge>(registry, o, clock_ref<manual_clock>{clk}, m)) {
    bridge->set_audit(audit);
  }

  std::shared_ptr<session> mint(std::string_view principal = "alice") {
    auto r = registry.mint(principal);
    REQUIRE(r.has_value());
    return *r;
  }
  progress_call reserve(const std::shared_ptr<session>& s, const request_id& id, bool streamed,
                        const request_id& token = request_id{std::string{"tok"}}) {
    auto r = bridge->reserve(s, id, token, streamed);
    REQUIRE(r.has_value());
    return *r;
  }
  // A streamed record armed streaming.
  progress_call streaming(const std::shared_ptr<session>& s, const request_id& id) {
    auto c = reserve(s, id, true);
    REQUIRE(c.arm(bridge_delivery::streamed) == arm_outcome::streaming);
    return c;
  }
  // A streamed record armed, then parked by its POST closing without a final.
  progress_call parked(const std::shared_ptr<session>& s, const request_id& id) {
    auto c = streaming(s, id);
    c.on_post_closed();
    REQUIRE(c.state_now() == bridge_record_state::ring_only);
    return c;
  }
  std::vector<audit_entry> rows(std::string_view action) const {
    std::vector<audit_entry> out;
    for (auto& e : audit.entries()) {
      if (e.action == action) out.push_back(e);
    }
    return out;
  }
  std::uint64_t rejects(bridge_reject r) const { return m.bridge_rejects[static_cast<std::size_t>(r)].value(); }
  std::uint64_t degrades(bridge_degrade d) const { return m.bridge_degrades[static_cast<std::size_t>(d)].value(); }
  std::uint64_t cancels(cancel_outcome o) const { return m.cancels[static_cast<std::size_t>(o)].value(); }
  std::uint64_t expires(expire_disposition d) const { return m.forced_expires[static_cast<std::size_t>(d)].value(); }

  manual_clock clk;
  metrics_registry metrics;
  session_metrics m = bind_session_metrics(metrics);
  memory_audit_sink audit;
  session_registry registry;
  std::unique_ptr<progress_bridge> bridge;
};

// Every ring frame of `s` after `cursor`, read through a fresh GET attach (detached again after).
std::vector<stream_frame> ring(const std::shared_ptr<session>& s, std::uint64_t cursor = 0) {
  stream_budget budget;
  auto a = s->stream()->attach_and_replay(cursor, budget, s->principal_id());
  REQUIRE(a.status == attach_status::attached);
  stream_sink::batch b;
  a.sink->take(b);
  s->stream()->detach(*a.sink);
  return b.frames;
}

std::size_t pins(const std::shared_ptr<session>& s) {
  const auto st = s->stream()->stats();
  return static_cast<std::size_t>(std::count_if(st.pins.begin(), st.pins.end(), [](std::uint64_t p) { return p != 0; }));
}

// A parsed frame (the document owns the text).
struct parsed {
  explicit parsed(std::string_view text) {
    auto r = doc.parse(text);
    REQUIRE(r.has_value());
    root = *r;
  }
  json::document doc;
  json::value root;
};

std::string success(std::int64_t id, std::string_view result_json) {
  std::string out;
  write_result_response(out, request_id_view{id}, result_json);
  return out;
}

// Publishes `n` pinned finals no record references (orphans, docs/sessions.md#pinned-finals).
std::vector<std::uint64_t> orphan_pins(const std::shared_ptr<session>& s, std::size_t n) {
  std::vector<std::uint64_t> ids;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t id = s->stream()->publish_final(R"({"jsonrpc":"2.0","id":"old","result":{}})");
    REQUIRE(id != 0);
    ids.push_back(id);
  }
  return ids;
}

const request_id str_tok{std::string{"tok"}};

}  // namespace

TEST_SUITE("progress_bridge") {
  TEST_CASE("sessions.md/progress-records: defaults are 256 records, pressure above 64, arming 300 s, streaming 600 s") {
    const progress_bridge_options o;
    CHECK(o.max_records == 256);
    CHECK(o.parked_pressure_threshold == 64);
    CHECK(o.arming_reap_after == 300s);
    CHECK(o.streaming_park_after == 600s);
    CHECK(o.enabled);
    CHECK(default_post_response_cap == 120s);
    CHECK(execution_id_meta_key == "mcpcore/executionId");
    fixture f;
    CHECK(f.bridge->options().max_records == 256);
    CHECK(f.bridge->records() == 0);
    CHECK(f.bridge->parked() == 0);
  }

  TEST_CASE("sessions.md/progress-records: record states have wire names") {
    CHECK(to_string(bridge_record_state::arming) == "arming");
    CHECK(to_string(bridge_record_state::streaming) == "streaming");
    CHECK(to_string(bridge_record_state::get_only) == "get_only");
    CHECK(to_string(bridge_record_state::ring_only) == "ring_only");
    CHECK(to_string(bridge_record_state::done) == "done");
    CHECK(to_string(bridge_record_state::aborted) == "aborted");
    CHECK(to_string(static_cast<bridge_record_state>(42)).empty());
  }

  TEST_CASE("sessions.md/streamed-post-admission: a reservation is an arming record with its charge and wake sink") {
    fixture f;
    auto s = f.mint();
    auto streamed = f.reserve(s, 1, true);
    auto plain = f.reserve(s, 2, false);
    CHECK(streamed.state_now() == bridge_record_state::arming);
    CHECK(streamed.id() == request_id{1});
    CHECK(streamed.wake_sink() != nullptr);
    CHECK(plain.wake_sink() == nullptr);
    CHECK(f.bridge->records() == 2);
    CHECK(f.m.bridge_records_active.value() == 2);
    CHECK(f.bridge->charges(s->id()) == 1);  // streamed only
    CHECK(f.bridge->charges("other") == 0);
    plain.set_execution_id("ex-1");
    CHECK(plain.execution_id() == "ex-1");
  }

  TEST_CASE("sessions.md/streamed-post-admission: refusals come in order shutdown, disabled, unknown_session") {
    SUBCASE("shutdown before disabled") {
      progress_bridge_options o;
      o.enabled = false;
      fixture f{o};
      auto s = f.mint();
      f.bridge->shutdown();
      auto r = f.bridge->reserve(s, 1, str_tok, true);
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().reason == bridge_reject::shutdown);
      CHECK(f.rejects(bridge_reject::shutdown) == 1);
      CHECK(f.rejects(bridge_reject::disabled) == 0);
    }
    SUBCASE("disabled before unknown_session") {
      progress_bridge_options o;
      o.enabled = false;
      fixture f{o};
      auto r = f.bridge->reserve(nullptr, 1, str_tok, false);
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().reason == bridge_reject::disabled);
      CHECK(f.rejects(bridge_reject::disabled) == 1);
      CHECK(f.bridge->records() == 0);
    }
    SUBCASE("unknown_session: null, terminated") {
      fixture f;
      auto r = f.bridge->reserve(nullptr, 1, str_tok, false);
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().reason == bridge_reject::unknown_session);
      auto s = f.mint();
      REQUIRE(f.registry.terminate(s->id(), s->principal_id()));
      r = f.bridge->reserve(s, 1, str_tok, true);
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().reason == bridge_reject::unknown_session);
      CHECK(f.rejects(bridge_reject::unknown_session) == 2);
    }
  }

  TEST_CASE("sessions.md/progress-records: the session check does not touch the session (no keep-alive by reservations)") {
    fixture f;
    auto s = f.mint();
    const auto ttl = f.registry.options().idle_ttl;
    f.clk.advance(ttl - 1s);
    CHECK(f.bridge->reserve(s, 1, str_tok, false).has_value());
    f.clk.advance(2s);  // past the TTL since the mint: a touching check would have kept it alive
    auto r = f.bridge->reserve(s, 2, str_tok, false);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().reason == bridge_reject::unknown_session);
  }

  TEST_CASE("sessions.md/progress-records: the key is (session, exact id): \"1\" and 1 differ, a duplicate precedes global_cap") {
    progress_bridge_options o;
    o.max_records = 3;
    fixture f{o};
    auto s = f.mint();
    auto t = f.mint("bob");
    auto a = f.reserve(s, 1, false);
    auto b = f.reserve(s, request_id{std::string{"1"}}, false);  // a string id is another key
    auto c = f.reserve(t, 1, false);                             // another session: another key
    CHECK(f.bridge->records() == 3);
    auto r = f.bridge->reserve(s, 1, str_tok, false);  // at the cap, yet the duplicate is reported
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().reason == bridge_reject::duplicate_request_id);
    r = f.bridge->reserve(s, request_id{std::string{"1"}}, str_tok, true);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().reason == bridge_reject::duplicate_request_id);
    CHECK(f.rejects(bridge_reject::duplicate_request_id) == 2);
    r = f.bridge->reserve(s, 2, str_tok, false);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().reason == bridge_reject::global_cap);
    CHECK(f.rejects(bridge_reject::global_cap) == 1);
  }

  TEST_CASE("sessions.md/streamed-post-admission: global_cap is reported before pin_slots") {
    progress_bridge_options o;
    o.max_records = 4;
    fixture f{o};
    auto s = f.mint();
    std::vector<progress_call> calls;
    for (int i = 1; i <= 4; ++i) calls.push_back(f.reserve(s, i, true));  // the pin slots are full too
    auto r = f.bridge->reserve(s, 5, str_tok, true);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().reason == bridge_reject::global_cap);
    CHECK(f.rejects(bridge_reject::pin_slots) == 0);
  }

  TEST_CASE("sessions.md/streamed-post-admission: an abandoned record is erased at once, its id is free again") {
    fixture f;
    auto s = f.mint();
    auto a = f.reserve(s, 1, true);
    CHECK(f.bridge->charges(s->id()) == 1);
    CHECK(f.bridge->cancel(s->id(), 1) == cancel_outcome::accepted);
    a.abandon();
    CHECK(a.state_now() == bridge_record_state::aborted);
    CHECK(f.bridge->records() == 0);
    CHECK(f.bridge->charges(s->id()) == 0);
    CHECK(f.m.bridge_records_active.value() == 0);
    a.abandon();  // idempotent
    CHECK(f.bridge->records() == 0);
    CHECK_FALSE(a.progress(1, 2));
    CHECK_FALSE(a.complete(success(1, "{}")));
    CHECK(a.arm(bridge_delivery::streamed) == arm_outcome::not_armed);
    CHECK(f.degrades(bridge_degrade::arm_not_armed) == 1);
    auto again = f.reserve(s, 1, true);  // the cancel intent was discarded with the record
    CHECK(again.arm(bridge_delivery::streamed) == arm_outcome::streaming);
  }

  TEST_CASE("sessions.md/progress-records: global cap rejects and never evicts a dispatched record") {
    progress_bridge_options o;
    o.max_records = 2;
    fixture f{o};
    auto s = f.mint();
    auto a = f.reserve(s, 1, false);
    auto b = f.reserve(s, 2, false);
    REQUIRE(a.arm(bridge_delivery::get_only) == arm_outcome::get_only);
    auto r = f.bridge->reserve(s, 3, str_tok, false);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().reason == bridge_reject::global_cap);
    CHECK(f.bridge->records() == 2);
    CHECK(a.state_now() == bridge_record_state::get_only);
    CHECK(b.state_now() == bridge_record_state::arming);
    // Room comes back only when a record is done and swept.
    CHECK(a.complete(success(1, "{}")));
    CHECK(a.state_now() == bridge_record_state::done);
    CHECK(f.bridge->records() == 2);  // a done record waits for the sweep
    f.bridge->sweep();
    CHECK(f.bridge->records() == 1);
    CHECK(f.bridge->reserve(s, 3, str_tok, false).has_value());
  }

  TEST_CASE("sessions.md/pinned-finals: pin_slots counts charges, held=charges while calls are in flight") {
    fixture f;
    auto s = f.mint();
    std::vector<progress_call> calls;
    for (int i = 1; i <= 4; ++i) calls.push_back(f.reserve(s, i, true));
    CHECK(f.bridge->charges(s->id()) == 4);
    auto r = f.bridge->reserve(s, 5, str_tok, true);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().reason == bridge_reject::pin_slots);
    CHECK(r.error().held_by_charges);
    CHECK(f.m.pin_slots_reject_charges.value() == 1);
    CHECK(f.m.pin_slots_reject_pins.value() == 0);
    CHECK(f.rejects(bridge_reject::pin_slots) == 1);
    // pin_slots concerns streamed calls only.
    CHECK(f.bridge->reserve(s, 5, str_tok, false).has_value());
    // Another session has its own slots.
    auto t = f.mint("bob");
    CHECK(f.bridge->reserve(t, 1, str_tok, true).has_value());
    // A streamed reservation armed GET-only gives its charge back.
    CHECK(calls[0].arm(bridge_delivery::get_only) == arm_outcome::get_only);
    CHECK(f.bridge->charges(s->id()) == 3);
    CHECK(f.bridge->reserve(s, 6, str_tok, true).has_value());
  }

  TEST_CASE("sessions.md/pinned-finals: pin_slots with held=pins when pinned finals (not written) hold the slots") {
    fixture f;
    auto s = f.mint();
    std::vector<progress_call> calls;
    for (int i = 1; i <= 4; ++i) {
      calls.push_back(f.streaming(s, i));
      CHECK(calls.back().complete(success(i, "{}")));
    }
    CHECK(f.bridge->charges(s->id()) == 0);  // each charge settled into a pin
    CHECK(pins(s) == 4);
    auto r = f.bridge->reserve(s, 5, str_tok, true);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().reason == bridge_reject::pin_slots);
    CHECK_FALSE(r.error().held_by_charges);
    CHECK(f.m.pin_slots_reject_pins.value() == 1);
    CHECK(f.m.pin_slots_reject_charges.value() == 0);
    CHECK(pins(s) == 4);  // a refusal costs no pin
    // route (a): a final written on its POST frees its slot
    post_batch b;
    calls[0].take(b, false);
    REQUIRE(b.final_included);
    calls[0].on_final_written();
    CHECK(pins(s) == 3);
    CHECK(f.bridge->reserve(s, 5, str_tok, true).has_value());
  }

  TEST_CASE("sessions.md/pinned-finals: reclaim takes orphans lowest id first, then the oldest parked final") {
    fixture f;
    auto s = f.mint();
    auto p1 = f.parked(s, 1);
    auto p2 = f.parked(s, 2);
    const auto orphans = orphan_pins(s, 2);  // ids after nothing else: both are orphans
    CHECK(p2.complete(success(2, R"({"n":2})")));  // parked: published pinned
    CHECK(p1.complete(success(1, R"({"n":1})")));
    CHECK(pins(s) == 4);
    CHECK(f.bridge->charges(s->id()) == 0);
    const auto final2 = s->stream()->stats().next_id - 2;  // p2's final, older than p1's
    const auto final1 = s->stream()->stats().next_id - 1;

    // 1st admission: the lowest orphan yields.
    auto a = f.bridge->reserve(s, 10, str_tok, true);
    REQUIRE(a.has_value());
    CHECK_FALSE(s->stream()->pinned(orphans[0]));
    CHECK(s->stream()->pinned(orphans[1]));
    CHECK(f.m.pin_displaced_for_admission.value() == 1);
    // 2nd: the other orphan.
    auto b = f.bridge->reserve(s, 11, str_tok, true);
    REQUIRE(b.has_value());
    CHECK_FALSE(s->stream()->pinned(orphans[1]));
    CHECK(s->stream()->pinned(final1));
    CHECK(s->stream()->pinned(final2));
    // 3rd: no orphan left; the parked record with the OLDEST park order (p1) yields, whatever its id.
    auto c = f.bridge->reserve(s, 12, str_tok, true);
    REQUIRE(c.has_value());
    CHECK_FALSE(s->stream()->pinned(final1));
    CHECK(s->stream()->pinned(final2));
    CHECK(p1.state_now() == bridge_record_state::done);
    CHECK(p2.state_now() == bridge_record_state::ring_only);
    CHECK(f.m.pin_displaced_for_admission.value() == 3);
    CHECK(f.m.pin_release_raced.value() == 0);

    const auto rows = f.rows("mcp.bridge.pin_displaced_for_admission");
    REQUIRE(rows.size() == 3);
    CHECK(rows[0].detail == "event_id=" + std::to_string(orphans[0]) + " orphan=true");
    CHECK(rows[1].detail == "event_id=" + std::to_string(orphans[1]) + " orphan=true");
    CHECK(rows[2].detail == "event_id=" + std::to_string(final1) + " orphan=false");
    CHECK(rows[0].principal_id == "alice");
    CHECK(rows[0].target_id == s->id().substr(0, 8));
    f.bridge->sweep();  // the reclaimed record is done: reaped
    CHECK(f.bridge->records() == 4);
  }

  TEST_CASE("sessions.md/pinned-finals: a parked record whose final is not yet published is not reclaimable") {
    fixture f;
    auto s = f.mint();
    auto p = f.parked(s, 1);  // holds its charge: no final yet
    orphan_pins(s, 3);
    auto a = f.bridge->reserve(s, 2, str_tok, true);  // reclaims an orphan
    REQUIRE(a.has_value());
    auto b = f.bridge->reserve(s, 3, str_tok, true);
    REQUIRE(b.has_value());
    auto c = f.bridge->reserve(s, 4, str_tok, true);
    REQUIRE(c.has_value());
    CHECK(pins(s) == 0);
    auto r = f.bridge->reserve(s, 5, str_tok, true);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().held_by_charges);
    CHECK(p.state_now() == bridge_record_state::ring_only);
  }

  TEST_CASE("sessions.md/pinned-finals: reclaim is declined while a projection of the session is in flight") {
    fixture f;
    auto s = f.mint();
    // A live GET sink whose waker blocks: a GET-only projection stays in flight inside it.
    struct gate {
      std::mutex mu;
      std::condition_variable cv;
      bool entered = false;
      bool release = false;
      int calls = 0;
    } g;
    stream_budget budget;
    auto a = s->stream()->attach_and_replay(0, budget, s->principal_id());
    REQUIRE(a.status == attach_status::attached);
    a.sink->set_waker(
        [](void* ctx) noexcept {
          auto& gg = *static_cast<gate*>(ctx);
          std::unique_lock<std::mutex> lk(gg.mu);
          if (gg.calls++ != 0) return;
          gg.entered = true;
          gg.cv.notify_all();
          gg.cv.wait(lk, [&] { return gg.release; });
        },
        &g);
    auto call = f.reserve(s, 1, false);
    REQUIRE(call.arm(bridge_delivery::get_only) == arm_outcome::get_only);
    orphan_pins(s, 4);
    std::atomic<bool> committed{false};
    std::thread reporter([&] { committed = call.progress(1, 2); });
    {
      std::unique_lock<std::mutex> lk(g.mu);
      g.cv.wait(lk, [&] { return g.entered; });
    }
    auto r = f.bridge->reserve(s, 2, str_tok, true);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().reason == bridge_reject::pin_slots);
    CHECK_FALSE(r.error().held_by_charges);
    CHECK(pins(s) == 4);
    {
      const std::lock_guard<std::mutex> lk(g.mu);
      g.release = true;
    }
    g.cv.notify_all();
    reporter.join();
    CHECK(committed.load());
    a.sink->set_waker(nullptr, nullptr);
    CHECK(f.bridge->reserve(s, 2, str_tok, true).has_value());  // the claim is released: reclaim goes on
    CHECK(pins(s) == 3);
    s->stream()->detach(*a.sink);
  }

  TEST_CASE("sessions.md/streamed-post-admission: arm outcomes and their degrade counters") {
    fixture f;
    auto s = f.mint();
    SUBCASE("streamed and GET-only") {
      auto a = f.reserve(s, 1, true);
      CHECK(a.arm(bridge_delivery::streamed) == arm_outcome::streaming);
      CHECK(a.state_now() == bridge_record_state::streaming);
      CHECK(f.bridge->charges(s->id()) == 1);
      CHECK(a.arm(bridge_delivery::streamed) == arm_outcome::already_armed);
      CHECK(f.degrades(bridge_degrade::arm_already_armed) == 1);
      auto b = f.reserve(s, 2, false);
      CHECK(b.arm(bridge_delivery::get_only) == arm_outcome::get_only);
      CHECK(b.arm(bridge_delivery::get_only) == arm_outcome::already_armed);
      CHECK(f.degrades(bridge_degrade::arm_already_armed) == 2);
    }
    SUBCASE("a streamed arm of a non-streamed reservation is GET-only") {
      auto a = f.reserve(s, 1, false);
      CHECK(a.arm(bridge_delivery::streamed) == arm_outcome::get_only);
      CHECK(a.state_now() == bridge_record_state::get_only);
    }
    SUBCASE("a cancel that landed while arming degrades to a plain answer and frees the charge") {
      auto a = f.reserve(s, 1, true);
      CHECK(f.bridge->cancel(s->id(), 1) == cancel_outcome::accepted);
      CHECK(f.bridge->charges(s->id()) == 1);
      CHECK(a.arm(bridge_delivery::streamed) == arm_outcome::cancelled);
      CHECK(a.state_now() == bridge_record_state::get_only);
      CHECK(f.bridge->charges(s->id()) == 0);
      CHECK(f.degrades(bridge_degrade::arm_cancelled) == 1);
    }
  }

  TEST_CASE("sessions.md/projection-and-finals: progress frame shape, token verbatim, execution id in _meta") {
    fixture f;
    auto s = f.mint();
    SUBCASE("string token, total, message, execution id") {
      auto c = f.reserve(s, 1, false, request_id{std::string{"tok-1"}});
      c.set_execution_id("ex-42");
      REQUIRE(c.arm(bridge_delivery::get_only) == arm_outcome::get_only);
      CHECK(c.progress(3, 10, "3/10 agents responded"));
      const auto frames = ring(s);
      REQUIRE(frames.size() == 1);
      CHECK(frames[0].data ==
            R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok-1","progress":3,)"
            R"("total":10,"message":"3/10 agents responded","_meta":{"mcpcore/executionId":"ex-42"}}})");
    }
    SUBCASE("integer token, no total, no message, no execution id") {
      auto c = f.reserve(s, 1, false, request_id{7});
      REQUIRE(c.arm(bridge_delivery::get_only) == arm_outcome::get_only);
      CHECK(c.progress(2.5));
      const auto frames = ring(s);
      REQUIRE(frames.size() == 1);
      CHECK(frames[0].data ==
            R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":2.5}})");
    }
  }

  TEST_CASE("sessions.md/projection-and-finals: total 0 is skipped, progress clamps to total, the watermark strictly increases") {
    fixture f;
    auto s = f.mint();
    auto c = f.reserve(s, 1, false);
    REQUIRE(c.arm(bridge_delivery::get_only) == arm_outcome::get_only);
    CHECK_FALSE(c.progress(0, 0));
    CHECK(f.m.progress_suppressed.value() == 1);
    CHECK(ring(s).empty());
    CHECK(c.progress(0, 10));  // the first frame always goes, 0/N included
    CHECK(c.progress(15, 10));  // clamped to 10
    CHECK_FALSE(c.progress(12, 10));  // clamps to 10: not above the watermark
    CHECK_FALSE(c.progress(4, 10));
    CHECK(f.m.progress_suppressed.value() == 3);
    const auto frames = ring(s);
    REQUIRE(frames.size() == 2);
    parsed a{frames[0].data};
    parsed b{frames[1].data};
    CHECK(a.root["params"]["progress"].to_double() == 0.0);
    CHECK(b.root["params"]["progress"].to_double() == 10.0);
    CHECK(b.root["params"]["total"].to_double() == 10.0);
    CHECK(frames[0].id < frames[1].id);
  }

  TEST_CASE("sessions.md/progress-records: progress latches while arming (latest wins) and projects at arm") {
    fixture f;
    auto s = f.mint();
    auto c = f.reserve(s, 1, false);
    CHECK_FALSE(c.progress(1, 10));
    CHECK_FALSE(c.progress(2, 10));  // overwrites the untaken snapshot
    CHECK(f.m.progress_suppressed.value() == 1);
    CHECK_FALSE(c.message(R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}})"));
    CHECK(ring(s).empty());
    REQUIRE(c.arm(bridge_delivery::get_only) == arm_outcome::get_only);
    const auto frames = ring(s);
    REQUIRE(frames.size() == 2);
    CHECK(frames[0].data.find("notifications/message") != std::string::npos);
    parsed p{frames[1].data};
    CHECK(p.root["params"]["progress"].to_double() == 2.0);
  }

  TEST_CASE("sessions.md/progress-records: in-call messages queue up to the bound while arming, more are dropped") {
    fixture f;
    auto s = f.mint();
    auto c = f.reserve(s, 1, false);
    for (int i = 0; i < 64; ++i) CHECK_FALSE(c.message(R"({"jsonrpc":"2.0","method":"notifications/message"})"));
    CHECK(f.m.frames_dropped.value() == 0);
    CHECK_FALSE(c.message(R"({"jsonrpc":"2.0","method":"notifications/message"})"));
    CHECK(f.m.frames_dropped.value() == 1);
    REQUIRE(c.arm(bridge_delivery::get_only) == arm_outcome::get_only);
    CHECK(ring(s).size() == 64);
    CHECK(c.message(R"({"jsonrpc":"2.0","method":"notifications/message"})"));
    CHECK(ring(s).size() == 65);
  }

  TEST_CASE("sessions.md/streamed-post-admission, sessions.md/progress-records: GET-only progress goes live to the GET sink, no final frame") {
    fixture f;
    auto s = f.mint();
    stream_budget budget;
    auto get = s->stream()->attach_and_replay(0, budget, s->principal_id());
    REQUIRE(get.status == attach_status::attached);
    auto c = f.reserve(s, 1, false);
    REQUIRE(c.arm(bridge_delivery::get_only) == arm_outcome::get_only);
    CHECK(c.progress(1, 2));
    stream_sink::batch b;
    get.sink->take(b);
    REQUIRE(b.frames.size() == 1);
    CHECK(b.frames[0].id == 1);
    const auto next = s->stream()->stats().next_id;
    CHECK(c.complete(success(1, "{}")));
    CHECK(c.state_now() == bridge_record_state::done);
    CHECK(s->stream()->stats().next_id == next);  // the POST answered: nothing published
    CHECK(pins(s) == 0);
    CHECK_FALSE(c.progress(2, 2));  // dropped after the terminal
    f.bridge->sweep();
    CHECK(f.bridge->records() == 0);
    s->stream()->detach(*get.sink);
  }

  TEST_CASE("sessions.md/streamed-post: streaming frames are ring-only, taken in id order, the final last and pinned") {
    fixture f;
    auto s = f.mint();
    stream_budget budget;
    auto get = s->stream()->attach_and_replay(0, budget, s->principal_id());
    REQUIRE(get.status == attach_status::attached);
    auto c = f.streaming(s, 1);
    c.set_execution_id("ex-1");
    CHECK(c.progress(1, 3));
    CHECK(c.wake_sink()->ready());  // poked
    CHECK(c.progress(2, 3));
    CHECK(c.message(R"({"jsonrpc":"2.0","method":"notifications/message"})"));
    CHECK_FALSE(get.sink->ready());  // MCP: never one message on two streams
    post_batch b;
    c.take(b, false);
    REQUIRE(b.frames.size() == 3);
    CHECK_FALSE(b.final_included);
    CHECK_FALSE(b.cap_settled);
    CHECK(b.frames[0].id == 1);
    CHECK(b.frames[1].id == 2);
    CHECK(b.frames[2].id == 3);
    const std::string response = success(1, R"({"content":[]})");
    CHECK(c.complete(response));
    CHECK_FALSE(c.complete(success(1, "{}")));  // exactly one terminal
    CHECK_FALSE(c.finish(final_of(R"({"content":[]})")));
    CHECK_FALSE(c.progress(3, 3));  // the final is always last
    CHECK(f.bridge->charges(s->id()) == 0);
    c.take(b, false);
    REQUIRE(b.frames.size() == 1);
    CHECK(b.final_included);
    CHECK(b.frames[0].id == 4);
    CHECK(b.frames[0].data == response);
    CHECK(s->stream()->pinned(4));
    CHECK_FALSE(get.sink->ready());
    s->stream()->detach(*get.sink);
    const auto frames = ring(s);  // exactly what the POST got, same ids (resume from there)
    REQUIRE(frames.size() == 4);
    CHECK(frames[3].data == response);
    c.on_final_written();
    CHECK_FALSE(s->stream()->pinned(4));
    CHECK(c.state_now() == bridge_record_state::done);
    c.on_post_closed();  // after the final: nothing to park
    CHECK(c.state_now() == bridge_record_state::done);
    CHECK(f.bridge->parked() == 0);
    c.take(b, false);
    CHECK(b.frames.empty());
  }

  TEST_CASE("sessions.md/streamed-post-admission: a terminal that latched while arming is projected at arm, last") {
    fixture f;
    auto s = f.mint();
    auto c = f.reserve(s, 1, true);
    CHECK_FALSE(c.progress(1, 2));
    CHECK(c.complete(success(1, "{}")));
    CHECK_FALSE(c.progress(2, 2));
    CHECK(ring(s).empty());
    REQUIRE(c.arm(bridge_delivery::streamed) == arm_outcome::streaming);
    post_batch b;
    c.take(b, false);
    REQUIRE(b.frames.size() == 2);
    CHECK(b.final_included);
    CHECK(b.frames[0].data.find("notifications/progress") != std::string::npos);
    CHECK(b.frames[1].data == success(1, "{}"));
  }

  TEST_CASE("sessions.md/streamed-post: cap expiry runs one drain pass, then settles, a terminal wins over the cap") {
    fixture f;
    auto s = f.mint();
    SUBCASE("drain then settle") {
      auto c = f.streaming(s, 1);
      CHECK(c.progress(1, 2));
      post_batch b;
      c.take(b, true);  // the drain pass: frames, not settled
      CHECK(b.frames.size() == 1);
      CHECK_FALSE(b.cap_settled);
      c.take(b, true);
      CHECK(b.frames.empty());
      CHECK(b.cap_settled);
      c.on_post_closed();
      CHECK(c.state_now() == bridge_record_state::ring_only);
      CHECK(f.bridge->parked() == 1);
      // The final of parked work is published pinned for a GET resume.
      CHECK(c.complete(success(1, "{}")));
      CHECK(c.state_now() == bridge_record_state::ring_only);
      CHECK(s->stream()->pinned(2));
    }
    SUBCASE("a terminal before the cap is taken instead") {
      auto c = f.streaming(s, 1);
      CHECK(c.complete(success(1, "{}")));
      post_batch b;
      c.take(b, true);
      CHECK(b.final_included);
      CHECK_FALSE(b.cap_settled);
    }
    SUBCASE("a terminal after the drain pass still wins") {
      auto c = f.streaming(s, 1);
      post_batch b;
      c.take(b, true);
      CHECK_FALSE(b.cap_settled);
      CHECK(c.complete(success(1, "{}")));
      c.take(b, true);
      CHECK(b.final_included);
      CHECK_FALSE(b.cap_settled);
    }
  }

  TEST_CASE("sessions.md/streamed-post, sessions.md/pinned-finals: a parked final replays on GET even past the cursor, once written, sweep reaps") {
    fixture f;
    auto s = f.mint();
    auto c = f.streaming(s, 1);
    CHECK(c.progress(1, 2));
    c.on_post_closed();  // the POST ended without its final
    c.on_post_closed();  // idempotent
    CHECK(f.bridge->parked() == 1);
    CHECK(c.progress(2, 2));  // parked: ring-only
    const std::string response = success(1, R"({"content":[]})");
    CHECK(c.complete(response));
    CHECK(s->stream()->pinned(3));
    CHECK(c.state_now() == bridge_record_state::ring_only);
    const auto frames = ring(s, 0);
    REQUIRE(frames.size() == 3);
    CHECK(frames[2].id == 3);
    CHECK(frames[2].data == response);
    f.bridge->sweep();  // still pinned: stays parked
    CHECK(f.bridge->records() == 1);
    // a resume whose cursor is at the final does not release it: the final replays, and the
    // write on the GET wire releases it
    stream_budget budget;
    auto a = s->stream()->attach_and_replay(3, budget, s->principal_id());
    REQUIRE(a.status == attach_status::attached);
    CHECK(a.pins_replayed == 1);
    stream_sink::batch b;
    a.sink->take(b);
    REQUIRE(b.frames.size() == 1);
    CHECK(b.frames[0].id == 3);
    f.bridge->sweep();
    CHECK(f.bridge->records() == 1);  // replayed but not yet written
    const std::vector<std::uint64_t> wrote{3};
    CHECK(s->stream()->written(wrote) == 1);
    s->stream()->detach(*a.sink);
    f.bridge->sweep();
    CHECK(f.bridge->records() == 0);
    CHECK(f.bridge->parked() == 0);
  }

  TEST_CASE("sessions.md/streamed-post-admission, sessions.md/progress-records: a streamed record parked before arm keeps its latched work for a resume") {
    fixture f;
    auto s = f.mint();
    auto c = f.reserve(s, 1, true);
    CHECK_FALSE(c.progress(1, 2));  // latched while arming
    c.on_post_closed();             // post-dispatch failure: park, never abandon
    CHECK(c.state_now() == bridge_record_state::ring_only);
    CHECK(f.bridge->parked() == 1);
    CHECK(ring(s).size() == 1);  // the latched progress went ring-only
    CHECK(c.arm(bridge_delivery::streamed) == arm_outcome::already_armed);
    CHECK(c.complete(success(1, "{}")));
    CHECK(s->stream()->pinned(2));
    CHECK(f.bridge->charges(s->id()) == 0);
    // A GET-only reservation has nothing to park.
    auto plain = f.reserve(s, 2, false);
    plain.on_post_closed();
    CHECK(plain.state_now() == bridge_record_state::arming);
  }

  TEST_CASE("sessions.md/cancellation: cancel outcomes accepted, detached, noop") {
    fixture f;
    auto s = f.mint();
    auto t = f.mint("bob");
    auto arming = f.reserve(s, 1, true);
    auto live = f.streaming(s, 2);
    auto plain = f.reserve(s, 3, false);
    REQUIRE(plain.arm(bridge_delivery::get_only) == arm_outcome::get_only);
    CHECK(f.bridge->cancel(s->id(), 1) == cancel_outcome::accepted);
    CHECK(f.bridge->cancel(s->id(), 1) == cancel_outcome::noop);  // duplicate
    CHECK(f.bridge->cancel(s->id(), 2) == cancel_outcome::detached);
    CHECK(live.wake_sink()->closed());
    CHECK(live.wake_sink()->reason() == close_reason::cancelled);
    CHECK(f.bridge->cancel(s->id(), 2) == cancel_outcome::noop);  // duplicate
    CHECK(f.bridge->cancel(s->id(), 3) == cancel_outcome::noop);  // GET-only: nothing to detach
    CHECK(f.bridge->cancel(s->id(), 9) == cancel_outcome::noop);  // unknown
    CHECK(f.bridge->cancel(s->id(), request_id{std::string{"2"}}) == cancel_outcome::noop);  // verbatim
    CHECK(f.bridge->cancel(t->id(), 2) == cancel_outcome::noop);  // another session
    CHECK(plain.complete(success(3, "{}")));
    CHECK(f.bridge->cancel(s->id(), 3) == cancel_outcome::noop);  // finished
    CHECK(f.cancels(cancel_outcome::accepted) == 1);
    CHECK(f.cancels(cancel_outcome::detached) == 1);
    CHECK(f.cancels(cancel_outcome::noop) == 7);
    // The work is never touched: the detached call parks when its pump releases, and its final stays
    // fetchable by resume.
    live.on_post_closed();
    CHECK(live.state_now() == bridge_record_state::ring_only);
    CHECK(live.complete(success(2, "{}")));
    CHECK(pins(s) == 1);
  }

  TEST_CASE("sessions.md/projection-and-finals: a streamed final is the work's complete result, replacing the provisional one") {
    fixture f;
    auto s = f.mint();
    auto c = f.streaming(s, 7);
    c.set_execution_id("ex-7");
    c.mark_detached();
    c.defer(success(7, R"({"content":[{"type":"text","text":"started"}],"structuredContent":{"status":"running"}})"));
    CHECK(c.finish(final_of(std::string{fleet_result})));
    CHECK_FALSE(c.finish(final_of(R"({"content":[]})")));  // one terminal
    post_batch b;
    c.take(b, false);
    REQUIRE(b.final_included);
    CHECK(b.frames.back().data == success(7, fleet_result));  // byte for byte: nothing added, nothing kept
    parsed p{b.frames.back().data};
    const auto r = p.root["result"];
    CHECK(r["structuredContent"]["status"].as_string() == "completed");
    CHECK(r["_meta"]["mcpcore/executionId"].as_string() == "ex-7");
    CHECK_FALSE(r["status"].exists());
    CHECK_FALSE(r["execution_id"].exists());
  }

  TEST_CASE("sessions.md/projection-and-finals: a parked final, and one finished before its call returned, are the work's result") {
    fixture f;
    auto s = f.mint();
    SUBCASE("parked: pinned for a GET resume") {
      auto c = f.parked(s, 7);
      c.set_execution_id("ex-7");
      c.mark_detached();
      c.defer(success(7, R"({"content":[{"type":"text","text":"started"}]})"));
      CHECK(c.finish(final_of(std::string{fleet_result})));
      const auto frames = ring(s);
      REQUIRE_FALSE(frames.empty());
      CHECK(frames.back().data == success(7, fleet_result));
      CHECK(s->stream()->pinned(frames.back().id));
    }
    SUBCASE("finished before the call returned: published when it returns") {
      auto c = f.streaming(s, 7);
      c.set_execution_id("ex-7");
      c.mark_detached();
      CHECK(c.finish(final_of(std::string{fleet_result})));
      CHECK_FALSE(c.progress(1, 2));  // the terminal is accepted: the final stays last
      post_batch b;
      c.take(b, false);
      CHECK_FALSE(b.final_included);  // not before the call returned
      c.defer(success(7, R"({"content":[{"type":"text","text":"started"}]})"));
      c.take(b, false);
      REQUIRE(b.final_included);
      CHECK(b.frames.back().data == success(7, fleet_result));
    }
    SUBCASE("GET-only: the POST answered the provisional result; no final frame goes anywhere") {
      auto c = f.reserve(s, 7, false);
      REQUIRE(c.arm(bridge_delivery::get_only) == arm_outcome::get_only);
      c.set_execution_id("ex-7");
      c.mark_detached();
      CHECK(c.progress(1, 2));  // live on the GET stream
      c.defer(success(7, R"({"content":[{"type":"text","text":"started"}]})"));
      CHECK(c.finish(final_of(std::string{fleet_result})));
      for (const auto& fr : ring(s)) CHECK(fr.data.find("\"result\"") == std::string::npos);
      CHECK(c.state_now() == bridge_record_state::done);
    }
  }

  TEST_CASE("sessions.md/projection-and-finals: an invalid final is the -32603 error it carries") {
    fixture f;
    auto s = f.mint();
    auto c = f.streaming(s, request_id{std::string{"r1"}});
    c.mark_detached();
    c.defer(success(1, R"({"content":[]})"));
    error_data d;
    d.correlation_id = "req-1";
    operation_final bad;
    bad.error = make_error(errc::internal_error, "The tool returned structured content that does not match its outputSchema", d);
    CHECK(c.finish(std::move(bad)));
    post_batch b;
    c.take(b, false);
    REQUIRE(b.final_included);
    parsed p{b.frames.back().data};
    CHECK(p.root["id"].as_string() == "r1");
    CHECK(p.root["error"]["code"].to_int64() == -32603);
    CHECK_FALSE(p.root["result"].exists());
  }

  TEST_CASE("sessions.md/projection-and-finals: legacy_final_members adds status, execution_id and the structured members") {
    progress_bridge_options o;
    o.legacy_final_members = true;
    fixture f{o};
    auto s = f.mint();
    const auto final_for = [&](const request_id& id, std::string result_json) {
      auto c = f.streaming(s, id);
      c.set_execution_id("ex-7");
      c.mark_detached();
      c.defer(success(1, R"({"content":[]})"));
      REQUIRE(c.finish(final_of(std::move(result_json))));
      post_batch b;
      c.take(b, false);
      REQUIRE(b.final_included);
      return b.frames.back().data;
    };
    SUBCASE("the status of the structured content") {
      parsed p{final_for(1, std::string{fleet_result})};  // duplicate keys would fail to parse
      const auto r = p.root["result"];
      CHECK(r["status"].as_string() == "completed");
      CHECK(r["execution_id"].as_string() == "ex-7");
      CHECK(r["agents_success"].to_int64() == 3);
      CHECK(r["structuredContent"]["agents_success"].to_int64() == 3);
      CHECK(r["_meta"]["mcpcore/executionId"].as_string() == "ex-7");
      CHECK(r.size() == 6);  // content, structuredContent, _meta, status, execution_id, agents_success
    }
    SUBCASE("an error result without a status: failed") {
      parsed p{final_for(2, R"({"content":[{"type":"text","text":"boom"}],"isError":true})")};
      CHECK(p.root["result"]["status"].as_string() == "failed");
      CHECK(p.root["result"]["isError"].as_bool());
    }
    SUBCASE("a success without a status: completed") {
      parsed p{final_for(3, R"({"content":[{"type":"text","text":"done"}],"structuredContent":{"n":1}})")};
      CHECK(p.root["result"]["status"].as_string() == "completed");
      CHECK(p.root["result"]["n"].to_int64() == 1);
    }
  }

  TEST_CASE("sessions.md: complete_without_response ends the record without a final and wakes the pump") {
    fixture f;
    auto s = f.mint();
    auto c = f.streaming(s, 1);
    post_batch b;
    c.take(b, false);
    CHECK_FALSE(c.wake_sink()->ready());
    const auto next = s->stream()->stats().next_id;
    CHECK(c.complete_without_response());
    CHECK_FALSE(c.complete_without_response());
    CHECK_FALSE(c.complete(success(1, "{}")));
    CHECK(c.state_now() == bridge_record_state::done);
    CHECK(c.wake_sink()->ready());
    CHECK(f.bridge->charges(s->id()) == 0);
    CHECK(s->stream()->stats().next_id == next);
    c.take(b, false);
    CHECK(b.frames.empty());
    CHECK_FALSE(b.final_included);
  }

  TEST_CASE("MCP resumability: a record armed on a channel commits its frames there and its final ends it") {
    fixture f;
    auto s = f.mint();
    stream_budget budget;
    const auto ch = s->stream()->open_channel();
    auto c = f.reserve(s, 1, true);
    REQUIRE(c.arm(bridge_delivery::streamed, ch.channel) == arm_outcome::streaming);
    auto resumed = s->stream()->attach_and_replay(ch.priming_id, budget, s->principal_id());
    REQUIRE(resumed.status == attach_status::attached);
    REQUIRE(resumed.channel == ch.channel);
    auto get = s->stream()->attach_and_replay(0, budget, s->principal_id());
    REQUIRE(get.status == attach_status::attached);
    c.on_post_closed();  // the POST went away: parked, its frames ride the channel
    CHECK(c.progress(1, 2));
    CHECK(c.complete(success(1, R"({"content":[]})")));
    stream_sink::batch b;
    resumed.sink->take(b);
    REQUIRE(b.frames.size() == 2);
    CHECK(b.frames[0].channel == ch.channel);
    CHECK(b.frames[1].data == success(1, R"({"content":[]})"));
    CHECK(b.closed);
    CHECK(b.reason == close_reason::completed);
    CHECK_FALSE(get.sink->ready());  // never on the GET stream
    CHECK(s->stream()->stats().channels_open == 0);
    s->stream()->detach(*resumed.sink);
    s->stream()->detach(*get.sink);
  }

  TEST_CASE("MCP resumability: a channel the record does not stream on, or a call ended without a response, is ended") {
    fixture f;
    auto s = f.mint();
    SUBCASE("armed GET-only") {
      const auto ch = s->stream()->open_channel();
      auto c = f.reserve(s, 1, false);
      CHECK(c.arm(bridge_delivery::streamed, ch.channel) == arm_outcome::get_only);
      CHECK(s->stream()->stats().channels_open == 0);
    }
    SUBCASE("armed twice") {
      auto c = f.streaming(s, 1);
      const auto ch = s->stream()->open_channel();
      CHECK(c.arm(bridge_delivery::streamed, ch.channel) == arm_outcome::already_armed);
      CHECK(s->stream()->stats().channels_open == 0);
    }
    SUBCASE("cancelled in the call") {
      const auto ch = s->stream()->open_channel();
      auto c = f.reserve(s, 1, true);
      REQUIRE(c.arm(bridge_delivery::streamed, ch.channel) == arm_outcome::streaming);
      CHECK(s->stream()->stats().channels_open == 1);
      CHECK(c.complete_without_response());
      CHECK(s->stream()->stats().channels_open == 0);
    }
    SUBCASE("ended without a response before the arm") {
      const auto ch = s->stream()->open_channel();
      auto c = f.reserve(s, 1, true);
      CHECK(c.complete_without_response());
      (void)c.arm(bridge_delivery::streamed, ch.channel);
      CHECK(s->stream()->stats().channels_open == 0);
    }
  }

  TEST_CASE("sessions.md/the-sweep: arming records are reaped only when older than 300 s") {
    fixture f;
    auto s = f.mint();
    auto c = f.reserve(s, 1, true);
    f.clk.advance(300s);
    f.bridge->sweep();
    CHECK(f.bridge->records() == 1);  // exactly 300 s: not older
    f.clk.advance(1ms);
    f.bridge->sweep();
    CHECK(f.bridge->records() == 0);
    CHECK(f.bridge->charges(s->id()) == 0);
    CHECK(f.m.bridge_records_active.value() == 0);
    CHECK(c.arm(bridge_delivery::streamed) == arm_outcome::not_armed);
    CHECK_FALSE(c.progress(1, 2));
  }

  TEST_CASE("sessions.md/the-sweep: a stranded streaming record is parked (never reaped) when older than 600 s") {
    session_registry_options ro;
    ro.idle_ttl = 3600s;
    fixture f{{}, ro};
    auto s = f.mint();
    auto c = f.streaming(s, 1);
    f.clk.advance(600s);
    f.bridge->sweep();
    CHECK(c.state_now() == bridge_record_state::streaming);
    f.clk.advance(1ms);
    f.bridge->sweep();
    CHECK(c.state_now() == bridge_record_state::ring_only);
    CHECK(f.m.streaming_backstop.value() == 1);
    CHECK(f.bridge->records() == 1);
    CHECK(f.bridge->parked() == 1);
    post_batch b;
    c.take(b, false);  // the pump is gone as far as the bridge cares
    CHECK(b.frames.empty());
  }

  TEST_CASE("sessions.md/the-sweep: records of dead sessions are torn down, charges released once") {
    fixture f;
    auto s = f.mint();
    auto plain = f.reserve(s, 1, false);
    REQUIRE(plain.arm(bridge_delivery::get_only) == arm_outcome::get_only);
    auto parked = f.parked(s, 2);
    auto live = f.streaming(s, 3);
    CHECK(f.bridge->charges(s->id()) == 2);
    SUBCASE("DELETE") { REQUIRE(f.registry.terminate(s->id(), s->principal_id())); }
    SUBCASE("idle TTL") { f.clk.advance(f.registry.options().idle_ttl + 1ms); }
    f.bridge->sweep();
    CHECK(f.bridge->records() == 0);
    CHECK(f.bridge->charges(s->id()) == 0);
    CHECK(f.m.streaming_backstop.value() == 1);  // the streaming one was parked first
    CHECK(f.m.bridge_records_active.value() == 0);
    CHECK_FALSE(plain.progress(1, 2));  // later reports are no-ops
    CHECK_FALSE(parked.complete(success(2, "{}")));
    CHECK_FALSE(live.complete(success(3, "{}")));
    CHECK(pins(s) == 0);
  }

  TEST_CASE("sessions.md/projection-and-finals: the fallback final is an error result, so no output schema is broken by it") {
    progress_bridge_options o;
    o.parked_pressure_threshold = 1;
    fixture f{o};
    auto s = f.mint();
    auto a = f.parked(s, 1);
    a.set_execution_id("ex-a");
    a.mark_detached();
    REQUIRE(a.finish(final_of(std::string{fleet_result})));  // a terminal, but its call never returned
    auto b = f.parked(s, 2);          // newer: pushes a out
    f.bridge->sweep();
    REQUIRE(f.expires(expire_disposition::fallback_final) == 1);
    const auto frames = ring(s);
    bool seen = false;
    for (const auto& fr : frames) {
      parsed p{fr.data};
      if (!p.root["id"].is_number() || p.root["id"].to_int64() != 1) continue;
      seen = true;
      REQUIRE(p.root["result"]["isError"].is_bool());
      CHECK(p.root["result"]["isError"].as_bool());
      CHECK_FALSE(p.root["result"]["structuredContent"].exists());
      CHECK(p.root["result"]["content"].size() == 1);
      CHECK(p.root["result"]["_meta"]["mcpcore/executionId"].as_string() == "ex-a");
      // A complete error result: no top-level status or detail unless legacy_final_members is on.
      CHECK_FALSE(p.root["result"]["execution_id"].exists());
      CHECK_FALSE(p.root["result"]["status"].exists());
      CHECK(p.root["result"].size() == 3);
    }
    CHECK(seen);
  }

  TEST_CASE("sessions.md/the-sweep: pressure expires the oldest parked records with their disposition") {
    progress_bridge_options o;
    o.parked_pressure_threshold = 1;
    fixture f{o};
    auto s = f.mint();
    auto t = f.mint("bob");
    auto a = f.parked(s, 1);  // oldest, with a real final
    CHECK(a.complete(success(1, "{}")));
    const auto a_final = s->stream()->stats().next_id - 1;
    auto b = f.parked(s, 2);  // no terminal yet
    b.set_execution_id("ex-b");
    auto c = f.parked(t, 3);  // newest: survives
    CHECK(f.bridge->parked() == 3);
    f.bridge->sweep();
    CHECK(f.bridge->parked() == 1);
    CHECK(f.bridge->records() == 1);
    CHECK(c.state_now() == bridge_record_state::ring_only);
    CHECK(f.expires(expire_disposition::none) == 1);
    CHECK(f.expires(expire_disposition::synthesize_unavailable) == 1);
    CHECK(f.expires(expire_disposition::fallback_final) == 0);
    CHECK(f.m.pressure_budget_exhausted.value() == 0);
    CHECK(s->stream()->pinned(a_final));  // nothing lost: the real final stays (an orphan now)
    // b's -32014 frame, pinned, carrying the execution id
    const auto frames = ring(s);
    REQUIRE_FALSE(frames.empty());
    CHECK(s->stream()->pinned(frames.back().id));
    parsed p{frames.back().data};
    CHECK(p.root["id"].to_int64() == 2);
    CHECK(p.root["error"]["code"].to_int64() == static_cast<std::int64_t>(errc::terminal_unavailable));
    CHECK(p.root["error"]["code"].to_int64() == -32014);
    CHECK(p.root["error"]["data"]["execution_id"].as_string() == "ex-b");
    CHECK(p.root["error"]["data"]["correlation_id"].is_string());
    // torn down: later reports are no-ops, and the charges went with the records
    CHECK_FALSE(b.complete(success(2, "{}")));
    CHECK(pins(s) == 2);
    CHECK(f.bridge->charges(s->id()) == 0);
  }

  TEST_CASE("sessions.md/the-sweep: pressure expires the flooding principal's parked records, never another's within its share") {
    progress_bridge_options o;
    o.parked_pressure_threshold = 4;
    fixture f{o};
    auto op = f.mint("op");
    auto mine = f.parked(op, 1);  // the oldest parked record, of a principal with one
    CHECK(mine.complete(success(1, "{}")));
    // op2 floods from several sessions (each holds at most max_pinned_finals parked finals)
    std::vector<std::shared_ptr<session>> op2;
    std::vector<progress_call> flood;
    for (std::int64_t i = 0; i < 6; ++i) {
      if (i % 2 == 0) op2.push_back(f.mint("op2"));
      flood.push_back(f.parked(op2.back(), 100 + i));
    }
    CHECK(f.bridge->parked() == 7);
    f.bridge->sweep();
    CHECK(f.bridge->parked() == 4);
    // op's result is still held for its GET resume; op2 lost its three oldest
    CHECK(mine.state_now() == bridge_record_state::ring_only);
    for (std::size_t i = 0; i < 3; ++i) CHECK(flood[i].state_now() == bridge_record_state::done);
    for (std::size_t i = 3; i < 6; ++i) CHECK(flood[i].state_now() == bridge_record_state::ring_only);
    CHECK(f.m.pressure_budget_exhausted.value() == 0);
  }

  TEST_CASE("sessions.md/the-sweep: a principal's parked records above max_parked_per_principal expire oldest first, below the global threshold too") {
    progress_bridge_options o;
    CHECK(o.max_parked_per_principal == default_max_parked_per_principal);
    CHECK(default_max_parked_per_principal == 16);
    o.max_parked_per_principal = 2;
    fixture f{o};
    auto op = f.mint("op");
    auto a = f.parked(op, 1);
    auto b = f.parked(op, 2);
    std::vector<std::shared_ptr<session>> op2;
    std::vector<progress_call> flood;
    for (std::int64_t i = 0; i < 5; ++i) {
      if (i % 2 == 0) op2.push_back(f.mint("op2"));
      flood.push_back(f.parked(op2.back(), 100 + i));
    }
    f.bridge->sweep();
    CHECK(f.bridge->parked() == 4);
    CHECK(a.state_now() == bridge_record_state::ring_only);
    CHECK(b.state_now() == bridge_record_state::ring_only);
    CHECK(f.expires(expire_disposition::synthesize_unavailable) == 3);
    CHECK(flood[3].state_now() == bridge_record_state::ring_only);
    CHECK(flood[4].state_now() == bridge_record_state::ring_only);
  }

  TEST_CASE("sessions.md/shutdown: shutdown refuses reservations, poisons unresolved streams, writes one row") {
    fixture f;
    auto resolved = f.mint("alice");
    auto unresolved = f.mint("bob");
    auto r1 = f.reserve(resolved, 1, false);
    REQUIRE(r1.arm(bridge_delivery::get_only) == arm_outcome::get_only);
    CHECK(r1.complete(success(1, "{}")));
    auto r2 = f.streaming(unresolved, 1);
    f.bridge->shutdown();
    CHECK(f.bridge->records() == 0);
    CHECK(f.bridge->charges(unresolved->id()) == 0);
    CHECK(f.m.bridge_records_active.value() == 0);
    CHECK(unresolved->stream()->poisoned());
    CHECK_FALSE(resolved->stream()->poisoned());
    CHECK(r2.wake_sink()->closed());
    CHECK_FALSE(r2.progress(1, 2));
    CHECK_FALSE(r2.complete(success(1, "{}")));
    auto rows = f.rows("mcp.bridge.shutdown_reap");
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].detail == "count=2");
    auto r = f.bridge->reserve(resolved, 2, str_tok, false);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().reason == bridge_reject::shutdown);
    f.bridge->shutdown();  // idempotent
    f.bridge->sweep();
    CHECK(f.rows("mcp.bridge.shutdown_reap").size() == 1);
  }

  TEST_CASE("sessions.md/shutdown: the destructor runs shutdown, calls outlive the bridge as no-ops") {
    fixture f;
    auto s = f.mint();
    auto c = f.streaming(s, 1);
    f.bridge.reset();
    CHECK(f.rows("mcp.bridge.shutdown_reap").size() == 1);
    CHECK(s->stream()->poisoned());
    CHECK_FALSE(c.progress(1, 2));
    CHECK_FALSE(c.complete(success(1, "{}")));
    post_batch b;
    c.take(b, true);
    CHECK(b.cap_settled);
    c.on_post_closed();
    c.on_final_written();
    CHECK(c.arm(bridge_delivery::streamed) == arm_outcome::not_armed);
  }
}
