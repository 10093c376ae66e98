// SPDX-License-Identifier: Apache-2.0
// Tests of the session registry (docs/sessions.md#the-session-registry,
// docs/http.md#delete-sessions-on, docs/sessions.md#shutdown) and of the CSPRNG helper behind its
// ids (detail/random.hpp, internal, tested here).
#include <mcpcore/session/session_registry.hpp>

#include <mcpcore/detail/random.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/session/session_metrics.hpp>
#include <mcpcore/session/session_stream.hpp>
#include <mcpcore/session/stream_budget.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

using namespace mcpcore;
using namespace std::chrono_literals;

namespace {

bool is_lower_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// A registry on a manual clock, with metrics and an audit trail to inspect.
struct fixture {
  explicit fixture(session_registry_options o = {}) : reg(o, clock_ref<manual_clock>{clk}, m) { reg.set_audit(audit); }

  std::shared_ptr<session> mint(std::string_view principal, std::string_view cid = {}) {
    auto r = reg.mint(principal, cid);
    REQUIRE(r.has_value());
    REQUIRE(*r != nullptr);
    return *r;
  }
  // The rows with `action`, oldest first.
  std::vector<audit_entry> rows(std::string_view action) const {
    std::vector<audit_entry> out;
    for (auto& e : audit.entries()) {
      if (e.action == action) out.push_back(e);
    }
    return out;
  }
  std::uint64_t rejects(session_reject r) const { return m.session_rejects[static_cast<std::size_t>(r) - 1].value(); }

  manual_clock clk;
  metrics_registry metrics;
  session_metrics m = bind_session_metrics(metrics);
  memory_audit_sink audit;
  session_registry reg;
};

session_registry_options caps(std::size_t global, std::size_t per_principal) {
  session_registry_options o;
  o.max_sessions = global;
  o.max_sessions_per_principal = per_principal;
  return o;
}

struct throwing_sink {
  int calls = 0;
  bool record(const audit_record&) {
    ++calls;
    throw std::runtime_error("audit store down");
  }
};

}  // namespace

TEST_SUITE("session_registry") {
  // ---- the CSPRNG helper --------------------------------------------------------------------------

  TEST_CASE("sessions.md/the-session-registry: random_hex gives 2n lowercase hex characters of fresh CSPRNG bytes") {
    for (int i = 0; i < 50; ++i) {
      const auto h = detail::random_hex(16);
      REQUIRE(h.has_value());
      CHECK(h->size() == 32);
      CHECK(is_lower_hex(*h));
    }
    const auto empty = detail::random_hex(0);
    REQUIRE(empty.has_value());
    CHECK(empty->empty());
    std::set<std::string> seen;
    for (int i = 0; i < 500; ++i) seen.insert(detail::random_hex(16).value());
    CHECK(seen.size() == 500);
  }

  TEST_CASE("sessions.md/the-session-registry: random_hex's in-place expansion never re-encodes its own output") {
    // Were a raw byte overwritten by hex text before being read, its pair would encode an ASCII
    // digit or letter (high nibble 3 or 6). Over 4096 bytes every high nibble must still occur,
    // in the last quarter as much as anywhere.
    const auto h = detail::random_hex(4096);
    REQUIRE(h.has_value());
    REQUIRE(h->size() == 8192);
    CHECK(is_lower_hex(*h));
    std::array<int, 16> high{};
    for (std::size_t i = 6144; i < h->size(); i += 2) {
      const char c = (*h)[i];
      ++high[static_cast<std::size_t>(c <= '9' ? c - '0' : c - 'a' + 10)];
    }
    for (const int n : high) CHECK(n > 0);
  }

  TEST_CASE("sessions.md/the-session-registry: fill_random fills the whole buffer, and an empty request succeeds") {
    CHECK(detail::fill_random(nullptr, 0));
    std::array<unsigned char, 1024> a{};
    std::array<unsigned char, 1024> b{};
    REQUIRE(detail::fill_random(a.data(), a.size()));
    REQUIRE(detail::fill_random(b.data(), b.size()));
    CHECK(a != b);
    // 1024 zero bytes left at the tail would mean a short read was not continued
    CHECK(std::any_of(a.begin() + 1000, a.end(), [](unsigned char c) { return c != 0; }));
  }

  // ---- defaults and ids ---------------------------------------------------------------------------

  TEST_CASE("sessions.md/the-session-registry: defaults are 8 per principal, 1024 global, a 30 minute idle TTL, 5 draws") {
    const session_registry_options o;
    CHECK(o.max_sessions == 1024);
    CHECK(o.max_sessions_per_principal == 8);
    CHECK(o.idle_ttl == 30min);
    CHECK(default_max_sessions == 1024);
    CHECK(default_max_sessions_per_principal == 8);
    CHECK(default_session_idle_ttl == 1800s);
    CHECK(session_id_length == 32);
    CHECK(session_id_attempts == 5);  // the first draw plus four retries
    const session_registry r;         // the system clock
    CHECK(r.options().max_sessions == 1024);
    CHECK(r.size() == 0);
    CHECK_FALSE(r.shutting_down());
    static_assert(!std::is_copy_constructible_v<session_registry>);
    static_assert(!std::is_copy_constructible_v<session>);
  }

  TEST_CASE("sessions.md/the-session-registry: an id is 32 lowercase hex characters and ids are distinct") {
    fixture f{caps(600, 600)};
    std::set<std::string> ids;
    for (int i = 0; i < 500; ++i) {
      const auto s = f.mint(i % 2 == 0 ? "alice" : "bob");
      CHECK(s->id().size() == session_id_length);
      CHECK(is_lower_hex(s->id()));
      ids.insert(s->id());
    }
    CHECK(ids.size() == 500);
    CHECK(f.reg.size() == 500);
    CHECK(f.reg.count("alice") == 250);
    CHECK(f.reg.count("bob") == 250);
  }

  TEST_CASE("sessions.md/the-session-registry: a session is bound to its principal and gets the configured stream bounds") {
    session_registry_options o;
    o.stream.ring_frames = 7;
    fixture f{o};
    const auto s = f.mint("alice");
    CHECK(s->principal_id() == "alice");
    REQUIRE(s->stream() != nullptr);
    CHECK(s->stream()->options().ring_frames == 7);
    CHECK(f.reg.now() == f.clk.steady_now());
    f.clk.advance(5s);
    CHECK(f.reg.now() == f.clk.steady_now());
  }

  // ---- caps ---------------------------------------------------------------------------------------

  TEST_CASE("sessions.md/the-session-registry: the ninth session of a principal whose sessions are all busy is refused per_principal_cap, nothing is evicted") {
    fixture f;
    std::vector<std::shared_ptr<session>> held;
    std::vector<session_hold> busy;
    for (int i = 0; i < 8; ++i) {
      held.push_back(f.mint("alice"));
      busy.emplace_back(held.back());
    }
    const auto r = f.reg.mint("alice", "cid-9");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == session_reject::per_principal_cap);
    CHECK(f.reg.count("alice") == 8);
    CHECK(f.reg.size() == 8);
    for (const auto& s : held) CHECK(f.reg.validate_and_touch(s->id(), "alice") == s);
    CHECK(f.mint("bob")->principal_id() == "bob");  // another principal is not affected
    CHECK(f.rejects(session_reject::per_principal_cap) == 1);
    CHECK(f.rejects(session_reject::global_cap) == 0);
    CHECK(f.m.sessions_evicted.value() == 0);
    const auto rejects = f.rows("mcp.session.reject");
    REQUIRE(rejects.size() == 1);
    CHECK(rejects[0].target_type == "McpSession");
    CHECK(rejects[0].target_id.empty());
    CHECK(rejects[0].principal_id == "alice");
    CHECK(rejects[0].result == audit_result::denied);
    CHECK(rejects[0].detail == "reason=per_principal_cap");
    CHECK(rejects[0].correlation_id == "cid-9");
    // one session let go: the next mint evicts exactly that one
    const std::string freed = held[5]->id();
    busy[5].reset();
    CHECK(f.mint("alice", "cid-10")->principal_id() == "alice");
    CHECK_FALSE(f.reg.exists(freed, "alice"));
    CHECK(f.reg.count("alice") == 8);
  }

  TEST_CASE("sessions.md/the-session-registry: at the per-principal cap the least recently used idle session is evicted, audited and counted") {
    stream_budget budget;  // outlives every sink (declared before the registry)
    fixture f;
    std::vector<std::shared_ptr<session>> s;
    for (int i = 0; i < 8; ++i) {
      s.push_back(f.mint("alice"));
      f.clk.advance(1s);
    }
    // s[0] is used again (most recent now); s[1] is busy (a stream or a call holds it): the least
    // recently used idle session is s[2].
    f.clk.advance(1s);
    CHECK(f.reg.validate_and_touch(s[0]->id(), "alice") == s[0]);
    session_hold hold;
    CHECK(f.reg.validate_and_touch(s[1]->id(), "alice", hold) == s[1]);
    CHECK(s[1]->busy());
    f.clk.advance(1s);
    // a sink attached without a hold: the registry knows only holds; the eviction closes it
    const auto sink = s[2]->stream()->attach_and_replay(0, budget, "alice").sink;
    REQUIRE(sink);
    const auto ninth = f.reg.mint("alice", "cid-9");
    REQUIRE(ninth.has_value());
    CHECK(f.reg.count("alice") == 8);
    CHECK(f.reg.size() == 8);
    CHECK_FALSE(f.reg.exists(s[2]->id(), "alice"));
    CHECK(f.reg.validate_and_touch(s[2]->id(), "alice") == nullptr);
    for (const std::size_t i : {0U, 1U, 3U, 4U, 5U, 6U, 7U}) CHECK(f.reg.exists(s[i]->id(), "alice"));
    CHECK(sink->closed());
    CHECK(sink->reason() == close_reason::session_terminated);
    CHECK(f.m.sessions_evicted.value() == 1);
    CHECK(f.m.sessions_expired.value() == 0);
    CHECK(f.rejects(session_reject::per_principal_cap) == 0);
    CHECK(f.rows("mcp.session.reject").empty());
    const auto closes = f.rows("mcp.session.close");
    REQUIRE(closes.size() == 1);
    CHECK(closes[0].target_id == s[2]->id().substr(0, 8));
    CHECK(closes[0].principal_id == "alice");
    CHECK(closes[0].detail == "reason=evicted");
    CHECK(closes[0].correlation_id == "cid-9");
    // a hold given back makes s[1] evictable again, after the other idle ones older than it
    hold.reset();
    CHECK_FALSE(s[1]->busy());
    CHECK(f.reg.mint("alice").has_value());
    CHECK_FALSE(f.reg.exists(s[3]->id(), "alice"));
    CHECK(f.reg.exists(s[1]->id(), "alice"));
    CHECK(f.m.sessions_evicted.value() == 2);
  }

  TEST_CASE("sessions.md/the-session-registry: eviction never crosses principals, and can be turned off") {
    fixture f{caps(10, 2)};
    const auto b1 = f.mint("bob");
    f.clk.advance(1s);
    f.mint("alice");
    f.mint("alice");
    CHECK(f.reg.mint("alice").has_value());  // evicts alice's oldest, not bob's older session
    CHECK(f.reg.exists(b1->id(), "bob"));
    CHECK(f.reg.count("alice") == 2);
    session_registry_options off = caps(10, 2);
    off.evict_idle_at_principal_cap = false;
    fixture g{off};
    g.mint("alice");
    g.mint("alice");
    const auto r = g.reg.mint("alice");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == session_reject::per_principal_cap);
    CHECK(g.m.sessions_evicted.value() == 0);
  }

  TEST_CASE("sessions.md/the-session-registry: the global cap refuses global_cap, checked before the per-principal cap") {
    fixture f{caps(3, 2)};
    const auto a1 = f.mint("alice");
    const auto a2 = f.mint("alice");
    const auto b1 = f.mint("bob");
    // alice is at her cap too, but the global cap is checked first
    auto r = f.reg.mint("alice");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == session_reject::global_cap);
    r = f.reg.mint("carol");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == session_reject::global_cap);
    CHECK(f.rejects(session_reject::global_cap) == 2);
    CHECK(f.rejects(session_reject::per_principal_cap) == 0);
    for (const auto& s : {a1, a2, b1}) CHECK(f.reg.validate_and_touch(s->id(), s->principal_id()) == s);
    CHECK(f.reg.size() == 3);
    CHECK(f.reg.count("carol") == 0);
    const auto rejects = f.rows("mcp.session.reject");
    REQUIRE(rejects.size() == 2);
    CHECK(rejects[1].detail == "reason=global_cap");
    CHECK(rejects[1].principal_id == "carol");
    // a slot freed by DELETE is usable again
    CHECK(f.reg.terminate(b1->id(), "bob"));
    CHECK(f.mint("carol")->principal_id() == "carol");
  }

  TEST_CASE("sessions.md/the-session-registry: both caps are configurable") {
    fixture f{caps(10, 2)};
    const session_hold h1{f.mint("alice")};
    const session_hold h2{f.mint("alice")};
    auto r = f.reg.mint("alice");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == session_reject::per_principal_cap);
    CHECK(f.reg.options().max_sessions_per_principal == 2);
    fixture zero{caps(0, 8)};
    r = zero.reg.mint("alice");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == session_reject::global_cap);
    CHECK(zero.reg.size() == 0);
  }

  // ---- shutdown -------------------------------------------------------------------------------------

  TEST_CASE("sessions.md/shutdown: after begin_shutdown every mint is refused shutdown, before the caps") {
    fixture f{caps(1, 1)};
    const auto s = f.mint("alice");
    f.reg.begin_shutdown();
    f.reg.begin_shutdown();  // idempotent
    CHECK(f.reg.shutting_down());
    for (const auto* p : {"alice", "bob"}) {
      const auto r = f.reg.mint(p, "cid-s");
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error() == session_reject::shutdown);
    }
    CHECK(f.rejects(session_reject::shutdown) == 2);
    CHECK(f.rejects(session_reject::global_cap) == 0);
    // existing sessions keep working until terminated
    CHECK(f.reg.validate_and_touch(s->id(), "alice") == s);
    const auto rejects = f.rows("mcp.session.reject");
    REQUIRE(rejects.size() == 2);
    CHECK(rejects[0].detail == "reason=shutdown");
    CHECK(rejects[0].correlation_id == "cid-s");
  }

  TEST_CASE("sessions.md/shutdown: terminate_all ends every session with reason shutdown and closes their sinks") {
    stream_budget budget;  // outlives every sink (declared before the registry)
    fixture f;
    const auto a = f.mint("alice");
    const auto b = f.mint("bob");
    f.mint("bob");
    auto att = a->stream()->attach_and_replay(0, budget, "alice");
    REQUIRE(att.status == attach_status::attached);
    f.reg.begin_shutdown();
    CHECK(f.reg.terminate_all() == 3);
    CHECK(f.reg.size() == 0);
    CHECK(f.reg.count("alice") == 0);
    CHECK(f.reg.count("bob") == 0);
    CHECK(f.m.sessions_active.value() == 0);
    CHECK(att.sink->closed());
    CHECK(att.sink->reason() == close_reason::session_terminated);
    CHECK_FALSE(f.reg.exists(a->id(), "alice"));
    CHECK(f.reg.validate_and_touch(b->id(), "bob") == nullptr);
    const auto closes = f.rows("mcp.session.close");
    REQUIRE(closes.size() == 3);
    for (const auto& c : closes) {
      CHECK(c.detail == "reason=shutdown");
      CHECK(c.target_id.size() == 8);
    }
    CHECK(f.reg.terminate_all() == 0);
    CHECK(f.m.sessions_expired.value() == 0);  // not idle expiries
  }

  // ---- binding --------------------------------------------------------------------------------------

  TEST_CASE("sessions.md/the-session-registry: a foreign principal's id is unknown to validate, exists and terminate") {
    fixture f;
    const auto s = f.mint("alice");
    CHECK(f.reg.validate_and_touch(s->id(), "mallory") == nullptr);
    CHECK_FALSE(f.reg.exists(s->id(), "mallory"));
    CHECK_FALSE(f.reg.terminate(s->id(), "mallory"));
    // the same answers as for an id that never existed
    const std::string unknown(32, 'a');
    CHECK(f.reg.validate_and_touch(unknown, "alice") == nullptr);
    CHECK_FALSE(f.reg.exists(unknown, "alice"));
    CHECK_FALSE(f.reg.terminate(unknown, "alice"));
    CHECK(f.reg.validate_and_touch("", "alice") == nullptr);
    // and the session is untouched
    CHECK(f.reg.size() == 1);
    CHECK(f.reg.validate_and_touch(s->id(), "alice") == s);
    CHECK(f.rows("mcp.session.close").empty());
    CHECK(f.rows("mcp.session.reject").empty());  // the HTTP layer writes the unknown_session row
  }

  TEST_CASE("sessions.md/the-session-registry: a foreign validate does not extend the session's life") {
    fixture f;
    const auto s = f.mint("alice");
    f.clk.advance(20min);
    CHECK(f.reg.validate_and_touch(s->id(), "mallory") == nullptr);
    f.clk.advance(10min);  // 30 minutes since alice's last use
    CHECK_FALSE(f.reg.exists(s->id(), "alice"));
    CHECK(f.reg.validate_and_touch(s->id(), "alice") == nullptr);
  }

  // ---- idle TTL -------------------------------------------------------------------------------------

  TEST_CASE("sessions.md/the-session-registry: idle expiry slides: a touch at +29 min keeps the session alive at +58 min") {
    fixture f;
    const auto s = f.mint("alice");
    f.clk.advance(29min);
    CHECK(f.reg.validate_and_touch(s->id(), "alice") == s);
    f.clk.advance(29min);
    CHECK(f.reg.exists(s->id(), "alice"));
    CHECK(f.reg.validate_and_touch(s->id(), "alice") == s);
    f.clk.advance(30min);
    CHECK(f.reg.validate_and_touch(s->id(), "alice") == nullptr);
  }

  TEST_CASE("sessions.md/the-session-registry: a session expires at exactly idle_ttl since its last use") {
    session_registry_options o;
    o.idle_ttl = 1000ms;
    fixture f{o};
    const auto s = f.mint("alice");
    f.clk.advance(999ms + 999us + 999ns);
    CHECK(f.reg.exists(s->id(), "alice"));
    f.clk.advance(1ns);
    CHECK_FALSE(f.reg.exists(s->id(), "alice"));
    CHECK(f.reg.validate_and_touch(s->id(), "alice") == nullptr);
    CHECK(f.reg.size() == 0);  // the validate reaped it
    CHECK(f.m.sessions_expired.value() == 1);
  }

  TEST_CASE("sessions.md/the-session-registry: exists never refreshes the idle time") {
    fixture f;
    const auto s = f.mint("alice");
    f.clk.advance(20min);
    CHECK(f.reg.exists(s->id(), "alice"));
    f.clk.advance(10min);
    CHECK_FALSE(f.reg.exists(s->id(), "alice"));
  }

  TEST_CASE("sessions.md/the-session-registry: exists is false once expired even before the GC ran") {
    fixture f;
    const auto s = f.mint("alice");
    f.clk.advance(31min);
    CHECK_FALSE(f.reg.exists(s->id(), "alice"));
    CHECK(f.reg.size() == 1);  // still held: exists does not collect
    CHECK(f.reg.count("alice") == 1);
    CHECK(f.reg.collect_garbage() == 1);
    CHECK(f.reg.size() == 0);
    CHECK(f.reg.count("alice") == 0);
  }

  TEST_CASE("sessions.md/the-session-registry: the GC erases expired sessions and closes their GET sinks session_terminated") {
    stream_budget budget;  // outlives every sink (declared before the registry)
    fixture f;
    const auto old = f.mint("alice", "cid-open");
    const auto young = f.mint("bob");
    auto att = old->stream()->attach_and_replay(0, budget, "alice");
    REQUIRE(att.status == attach_status::attached);
    REQUIRE(att.sink != nullptr);
    f.clk.advance(20min);
    CHECK(f.reg.validate_and_touch(young->id(), "bob") == young);
    f.clk.advance(10min);
    CHECK(f.reg.collect_garbage() == 1);
    CHECK(att.sink->closed());
    CHECK(att.sink->reason() == close_reason::session_terminated);
    CHECK(f.reg.size() == 1);
    CHECK(f.reg.count("alice") == 0);
    CHECK(f.reg.validate_and_touch(young->id(), "bob") == young);
    CHECK(f.m.sessions_expired.value() == 1);
    CHECK(f.m.sessions_active.value() == 1);
    const auto closes = f.rows("mcp.session.close");
    REQUIRE(closes.size() == 1);
    CHECK(closes[0].detail == "reason=idle_expired");
    CHECK(closes[0].target_type == "McpSession");
    CHECK(closes[0].target_id == old->id().substr(0, 8));
    CHECK(closes[0].principal_id == "alice");
    CHECK(closes[0].result == audit_result::success);
    CHECK(closes[0].correlation_id.empty());  // the system's doing
    CHECK(f.reg.collect_garbage() == 0);
  }

  TEST_CASE("sessions.md/the-session-registry: mint collects expired sessions before checking the caps") {
    fixture f{caps(1, 1)};
    const auto old = f.mint("alice");
    f.clk.advance(30min);
    const auto fresh = f.mint("bob");  // the only slot was freed by the GC inside mint
    CHECK(f.reg.size() == 1);
    CHECK(f.reg.exists(fresh->id(), "bob"));
    CHECK(f.reg.count("alice") == 0);
    CHECK(f.m.sessions_expired.value() == 1);
    const auto closes = f.rows("mcp.session.close");
    REQUIRE(closes.size() == 1);
    CHECK(closes[0].detail == "reason=idle_expired");
    CHECK(closes[0].target_id == old->id().substr(0, 8));
  }

  TEST_CASE("sessions.md/the-session-registry: validate reaps the expired session it looked up, and only that one") {
    fixture f;
    const auto a = f.mint("alice");
    const auto b = f.mint("alice");
    f.clk.advance(30min);
    CHECK(f.reg.validate_and_touch(a->id(), "alice") == nullptr);
    CHECK(f.reg.size() == 1);
    CHECK(f.reg.count("alice") == 1);
    // even a foreign lookup of an expired id reaps it: the answer is "unknown" either way
    CHECK(f.reg.validate_and_touch(b->id(), "mallory") == nullptr);
    CHECK(f.reg.size() == 0);
    CHECK(f.reg.count("alice") == 0);
    CHECK(f.m.sessions_expired.value() == 2);
    CHECK(f.rows("mcp.session.close").size() == 2);
  }

  TEST_CASE("http.md/delete-sessions-on: the stream state outlives the registry entry while it is held") {
    std::shared_ptr<session_stream> stream;
    {
      fixture f;
      const auto s = f.mint("alice");
      stream = s->stream();
      CHECK(f.reg.terminate(s->id(), "alice"));
      CHECK(stream->publish(R"({"jsonrpc":"2.0","method":"notifications/message"})") > 0);
    }
    // the registry is gone, the stream is not
    CHECK(stream->stats().frames == 1);
  }

  // ---- terminate ------------------------------------------------------------------------------------

  TEST_CASE("http.md/delete-sessions-on: terminate ends the session once, the second DELETE is unknown") {
    stream_budget budget;  // outlives every sink (declared before the registry)
    fixture f;
    const auto s = f.mint("alice");
    const auto keep = f.mint("alice");
    auto att = s->stream()->attach_and_replay(0, budget, "alice");
    REQUIRE(att.status == attach_status::attached);
    CHECK(f.reg.count("alice") == 2);
    CHECK(f.reg.terminate(s->id(), "alice", "deleted", "cid-del"));
    CHECK(att.sink->closed());
    CHECK(att.sink->reason() == close_reason::session_terminated);
    CHECK_FALSE(f.reg.terminate(s->id(), "alice", "deleted", "cid-del2"));
    CHECK(f.reg.validate_and_touch(s->id(), "alice") == nullptr);
    CHECK_FALSE(f.reg.exists(s->id(), "alice"));
    CHECK(f.reg.count("alice") == 1);
    CHECK(f.reg.size() == 1);
    CHECK(f.reg.terminate(keep->id(), "alice"));
    CHECK(f.reg.count("alice") == 0);
    CHECK(f.reg.size() == 0);
    CHECK(f.m.sessions_active.value() == 0);
    CHECK(f.m.sessions_expired.value() == 0);
    const auto closes = f.rows("mcp.session.close");
    REQUIRE(closes.size() == 2);
    CHECK(closes[0].detail == "reason=deleted");
    CHECK(closes[0].correlation_id == "cid-del");
    CHECK(closes[0].target_id == s->id().substr(0, 8));
    CHECK(closes[0].principal_id == "alice");
    CHECK(closes[1].detail == "reason=deleted");  // the default reason
  }

  TEST_CASE("http.md/delete-sessions-on: a replay-window termination is audited with its reason") {
    fixture f;
    const auto s = f.mint("alice");
    CHECK(f.reg.terminate(s->id(), "alice", "replay_window_exceeded", "cid-gap"));
    const auto closes = f.rows("mcp.session.close");
    REQUIRE(closes.size() == 1);
    CHECK(closes[0].detail == "reason=replay_window_exceeded");
    CHECK(closes[0].correlation_id == "cid-gap");
  }

  TEST_CASE("sessions.md/the-session-registry: terminating an expired session answers unknown and reaps it as idle") {
    fixture f;
    const auto s = f.mint("alice");
    f.clk.advance(30min);
    CHECK_FALSE(f.reg.terminate(s->id(), "alice", "deleted", "cid-late"));
    CHECK(f.reg.size() == 0);
    const auto closes = f.rows("mcp.session.close");
    REQUIRE(closes.size() == 1);
    CHECK(closes[0].detail == "reason=idle_expired");
    CHECK(closes[0].correlation_id.empty());
    CHECK(f.m.sessions_expired.value() == 1);
  }

  // ---- audit and metrics --------------------------------------------------------------------------

  TEST_CASE("security.md/audit-and-the-one-cid-pattern: mcp.session.open names the session by its first 8 characters") {
    fixture f;
    const auto s = f.mint("alice", "cid-1");
    const auto opens = f.rows("mcp.session.open");
    REQUIRE(opens.size() == 1);
    CHECK(opens[0].target_type == "McpSession");
    CHECK(opens[0].target_id == s->id().substr(0, 8));
    CHECK(opens[0].principal_id == "alice");
    CHECK(opens[0].result == audit_result::success);
    CHECK(opens[0].detail.empty());
    CHECK(opens[0].correlation_id == "cid-1");
    CHECK(opens[0].time == manual_clock::initial_system);
    f.clk.advance(1h);
    f.mint("bob");
    CHECK(f.rows("mcp.session.open").back().time == manual_clock::initial_system + 1h);
  }

  TEST_CASE("metrics.md/names-and-registration: sessions_active follows size, opens and rejects are counted by reason") {
    fixture f{caps(3, 2)};
    CHECK(f.m.sessions_active.value() == 0);
    const auto a = f.mint("alice");
    const session_hold busy_a{a};
    const session_hold busy_b{f.mint("alice")};
    CHECK(f.m.sessions_active.value() == 2);
    CHECK_FALSE(f.reg.mint("alice").has_value());
    f.mint("bob");
    CHECK_FALSE(f.reg.mint("carol").has_value());
    CHECK(f.m.sessions_opened.value() == 3);
    CHECK(f.m.sessions_active.value() == 3);
    CHECK(f.rejects(session_reject::per_principal_cap) == 1);
    CHECK(f.rejects(session_reject::global_cap) == 1);
    CHECK(f.rejects(session_reject::shutdown) == 0);
    CHECK(f.rejects(session_reject::id_generation) == 0);
    CHECK(f.reg.terminate(a->id(), "alice"));
    CHECK(f.m.sessions_active.value() == 2);
    f.clk.advance(30min);
    CHECK(f.reg.collect_garbage() == 2);
    CHECK(f.m.sessions_active.value() == 0);
    CHECK(f.m.sessions_expired.value() == 2);
    CHECK(f.m.session_gc_failures.value() == 0);
    std::string text;
    f.metrics.write_prometheus(text);
    CHECK(text.find("mcpcore_mcp_session_rejects_total{reason=\"global_cap\"} 1") != std::string::npos);
  }

  TEST_CASE("security.md/audit-and-the-one-cid-pattern: a throwing audit sink never fails the operation") {
    manual_clock clk;
    throwing_sink sink;
    session_registry reg{caps(1, 1), clock_ref<manual_clock>{clk}};
    reg.set_audit(sink);
    auto r = reg.mint("alice");
    REQUIRE(r.has_value());
    const auto s = *r;
    CHECK_FALSE(reg.mint("bob").has_value());
    CHECK(reg.terminate(s->id(), "alice"));
    CHECK(sink.calls == 3);
    CHECK(reg.size() == 0);
  }

  TEST_CASE("sessions.md/the-session-registry: a registry without an audit sink or metrics still works") {
    manual_clock clk;
    session_registry reg{session_registry_options{}, clock_ref<manual_clock>{clk}};
    auto r = reg.mint("alice");
    REQUIRE(r.has_value());
    CHECK(reg.validate_and_touch((*r)->id(), "alice") == *r);
    clk.advance(30min);
    CHECK(reg.collect_garbage() == 1);
  }
}
