// SPDX-License-Identifier: Apache-2.0
// End-to-end tests, sans-I/O, of the HTTP endpoint's session lifecycle: eviction of idle sessions
// at the per-principal cap (docs/sessions.md#the-session-registry), the one count of a cancel
// (docs/metrics.md), and shutdown: parked calls end at once, running calls are cancelled at the
// end of the drain (docs/sessions.md#shutdown).
#include <mcpcore/transport/http_endpoint.hpp>

#include <doctest/doctest.h>

#include "support/http_endpoint_fixture.hpp"
#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/session/session_registry.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

using namespace mcpcore;
using namespace std::chrono_literals;
using namespace http_endpoint_fixture;
namespace fx = server_fixture;

namespace {

/// The sum of every series of the family `name` in `text` (a Prometheus exposition).
double family_sum(const std::string& text, std::string_view name) {
  double sum = 0;
  std::istringstream in{text};
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line.front() == '#') continue;
    const auto at = line.find(name);
    if (at == std::string::npos) continue;
    const auto after = at + name.size();
    if (after >= line.size() || (line[after] != '{' && line[after] != ' ')) continue;
    sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

// The registry the endpoint reports to, in a base before the harness so that it outlives the
// endpoint the harness owns (the bridge's destructor still moves its gauges).
struct with_metrics {
  metrics_registry metrics;
};

struct fixture : with_metrics, endpoint_harness {
  explicit fixture(const std::function<void(http_endpoint_options&)>& tweak = {}) {
    server_info info;
    info.name = "endpoint-lifecycle-test";
    info.version = "1";
    server_builder b{info};
    b.metrics(metrics);
    add_tool(b, "held", [this](call_context& ctx, const arguments&) {
      held_started.arrive();
      if (!held_gate.block(ctx.stop_token())) held_saw_stop = true;
      return tool_result::text("held done");
    });
    add_tool(b, "sampler", [this](call_context& ctx, const arguments&) {
      sampler_started.arrive();
      auto r = ctx.request("sampling/createMessage",
                           R"({"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":100})",
                           fx::patience * 2);
      sampler_ended.set();
      if (!r) return tool_result::error("sampling failed: " + r.error().message());
      return tool_result::text("sampled");
    });
    serve(b, tweak);
    ep->set_metrics(metrics);
  }
  ~fixture() {
    held_gate.open();
    exec.join();
  }
  fixture(const fixture&) = delete;
  fixture& operator=(const fixture&) = delete;

  std::string open_session(std::string_view token = "alice-token", std::string_view caps = "{}") {
    const auto r = send(post(fx::initialize(1, "2025-11-25", caps), {}, token));
    REQUIRE(r.head.status == 200);
    const auto sid = r.head.header("Mcp-Session-Id");
    REQUIRE(sid.has_value());
    return std::string{*sid};
  }
  std::string exposition() const {
    std::string out;
    metrics.write_prometheus(out);
    return out;
  }

  fx::gate held_started;
  fx::gate held_gate;
  std::atomic<bool> held_saw_stop{false};
  fx::gate sampler_started;
  fx::flag sampler_ended;
};

}  // namespace

TEST_SUITE("endpoint_lifecycle") {

TEST_CASE("sessions.md/the-session-registry: a ninth initialize without DELETE evicts the least recently used idle session") {
  fixture f;
  std::vector<std::string> sids;
  for (int i = 0; i < 8; ++i) {
    sids.push_back(f.open_session());
    f.clk.advance(1s);
  }
  // every session but the second is used again: the second is the least recently used
  for (std::size_t i = 0; i < sids.size(); ++i) {
    if (i == 1) continue;
    CHECK(f.send(post(fx::request(2, "ping"), sids[i])).head.status == 200);
    f.clk.advance(1s);
  }
  const auto ninth = f.send(post(fx::initialize(3)));
  CAPTURE(ninth.head.body);
  REQUIRE(ninth.head.status == 200);
  CHECK(f.ep->sessions().count("alice") == 8);
  const auto gone = f.send(post(fx::request(4, "ping"), sids[1]));
  CHECK(gone.head.status == 404);
  CHECK(code_of(gone) == -32007);
  for (std::size_t i = 0; i < sids.size(); ++i) {
    if (i != 1) CHECK(f.send(post(fx::request(5, "ping"), sids[i])).head.status == 200);
  }
  CHECK(family_sum(f.exposition(), "mcp_sessions_evicted_total") == 1);
}

TEST_CASE("sessions.md/the-session-registry: when every session of the principal is busy the ninth initialize is 429 -32010") {
  fixture f;
  std::vector<std::string> sids;
  std::vector<sse_reader> streams;
  // four sessions hold an open GET stream (the default GET cap per principal is 4)
  for (int i = 0; i < 4; ++i) {
    sids.push_back(f.open_session());
    auto g = f.send(get(sids.back()));
    REQUIRE(g.head.status == 200);
    streams.push_back(f.read(g));
  }
  // four are busy with a call in flight
  std::vector<std::shared_ptr<reply_box>> calls;
  for (int i = 0; i < 4; ++i) {
    sids.push_back(f.open_session());
    calls.push_back(f.start(post(fx::call_tool(9, "held"), sids.back())));
  }
  REQUIRE(f.held_started.wait_arrived(4));
  const auto refused = f.send(post(fx::initialize(3)));
  CHECK(refused.head.status == 429);
  CHECK(code_of(refused) == -32010);
  CHECK(f.ep->sessions().count("alice") == 8);
  CHECK(family_sum(f.exposition(), "mcp_sessions_evicted_total") == 0);
  // another principal is not affected
  CHECK(f.send(post(fx::initialize(4), {}, "bob-token")).head.status == 200);
  // a stream closed by its client lets its session go: the next initialize evicts that one
  streams[3].drop();
  const auto again = f.send(post(fx::initialize(5)));
  CHECK(again.head.status == 200);
  CHECK(f.send(post(fx::request(6, "ping"), sids[3])).head.status == 404);
  CHECK(f.send(post(fx::request(7, "ping"), sids[4])).head.status == 200);
  f.held_gate.open();
  for (const auto& c : calls) REQUIRE(c->wait());
}

TEST_CASE("metrics.md: one HTTP notifications/cancelled raises mcp_cancel_notifications_total by exactly 1") {
  fixture f;
  const auto sid = f.open_session();
  const double before = family_sum(f.exposition(), "mcp_cancel_notifications_total");
  auto call = f.start(post(fx::call_tool(21, "held"), sid));
  REQUIRE(f.held_started.wait_arrived());
  CHECK(f.send(post(fx::cancel("21"), sid)).head.status == 202);
  REQUIRE(call->wait());
  CHECK(f.held_saw_stop.load());
  CHECK(family_sum(f.exposition(), "mcp_cancel_notifications_total") - before == 1);
  // a cancel naming nothing is counted once too
  CHECK(f.send(post(fx::cancel("99"), sid)).head.status == 202);
  CHECK(family_sum(f.exposition(), "mcp_cancel_notifications_total") - before == 2);
}

TEST_CASE("sessions.md/shutdown: a call still running at the end of the drain has its stop token fired") {
  fixture f;
  const auto sid = f.open_session();
  auto call = f.start(post(fx::call_tool(31, "held"), sid));
  REQUIRE(f.held_started.wait_arrived());
  f.ep->begin_shutdown();
  // the drain: the call keeps running
  CHECK_FALSE(call->wait(50ms));
  CHECK_FALSE(f.held_saw_stop.load());
  f.ep->cancel_in_flight();
  REQUIRE(eventually([&] { return f.held_saw_stop.load(); }));
  CHECK(call->wait());
  f.ep->cancel_in_flight();  // idempotent
}

TEST_CASE("sessions.md/shutdown: a call parked on its client's answer ends at once on begin_shutdown") {
  fixture f;
  const auto sid = f.open_session("alice-token", R"({"sampling":{}})");
  auto r = f.send(post(fx::call_tool(41, "sampler"), sid));
  REQUIRE(f.sampler_started.wait_arrived());
  auto reader = f.read(r);
  REQUIRE(reader.drive_until([](const auto& ev) {
    return std::any_of(ev.begin(), ev.end(), [](const sse_event& e) { return has_method(e, "sampling/createMessage"); });
  }));
  CHECK_FALSE(f.sampler_ended.is_set());
  f.ep->begin_shutdown();
  // without the fix the call waits out its client-request timeout (twice the test's patience)
  CHECK(f.sampler_ended.wait());
}

}  // TEST_SUITE
