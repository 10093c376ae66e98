// SPDX-License-Identifier: Apache-2.0
// Per-principal fairness of the HTTP endpoint's handler queue (docs/sessions.md#fair-dispatch): one
// principal flooding a small executor does not delay another principal's call past the first
// thread that frees, and its requests beyond `max_dispatch_per_principal` are refused 429.
// Assertions are on ordering and counts, never on wall-clock thresholds.
#include <mcpcore/transport/http_endpoint.hpp>

#include <doctest/doctest.h>

#include "support/http_endpoint_fixture.hpp"
#include "support/server_fixture.hpp"
#include "support/task_pool.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/metrics.hpp>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

using namespace mcpcore;
using namespace std::chrono_literals;
using namespace http_endpoint_fixture;
namespace fx = server_fixture;

namespace {

/// Handlers that record the order they start in; `flood` calls wait for one permit each.
struct recorder {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> starts;  // "<principal>:<tool>"
  int permits = 0;
  bool all_go = false;

  void start(const std::string& what) {
    {
      const std::lock_guard lock{mu};
      starts.push_back(what);
    }
    cv.notify_all();
  }
  /// Waits for one permit (or `all_go`); false when none came within the test's patience.
  bool wait_permit() {
    std::unique_lock lock{mu};
    if (!cv.wait_for(lock, fx::patience, [&] { return all_go || permits > 0; })) return false;
    if (!all_go) --permits;
    return true;
  }
  void release(int n = 1) {
    {
      const std::lock_guard lock{mu};
      permits += n;
    }
    cv.notify_all();
  }
  void release_all() {
    {
      const std::lock_guard lock{mu};
      all_go = true;
    }
    cv.notify_all();
  }
  bool wait_starts(std::size_t n) {
    std::unique_lock lock{mu};
    return cv.wait_for(lock, fx::patience, [&] { return starts.size() >= n; });
  }
  std::vector<std::string> snapshot() {
    const std::lock_guard lock{mu};
    return starts;
  }
};

constexpr std::size_t pool_threads = 2;
constexpr std::size_t cap = 6;

struct fixture {
  explicit fixture(std::size_t per_principal_cap = cap) {
    server_info info;
    info.name = "fair-dispatch-test";
    info.version = "1";
    server_builder b{info};
    b.metrics(metrics);
    add_tool(b, "flood", [this](call_context& ctx, const arguments&) {
      rec.start(ctx.caller().id + ":flood");
      return rec.wait_permit() ? tool_result::text("flooded") : tool_result::error("no permit");
    });
    add_tool(b, "quick", [this](call_context& ctx, const arguments&) {
      rec.start(ctx.caller().id + ":quick");
      return tool_result::text("quick");
    });
    srv.emplace(fx::build(b));
    http_endpoint_options o = test_options();
    o.max_dispatch_per_principal = per_principal_cap;
    ep = std::make_unique<http_endpoint>(*srv, auth, o, clock_ref<manual_clock>{clk});
    ep->set_metrics(metrics);
    binding = ep->bind_executor(pool.executor());
  }
  ~fixture() {
    rec.release_all();
    pool.stop();
  }
  fixture(const fixture&) = delete;
  fixture& operator=(const fixture&) = delete;

  std::shared_ptr<reply_box> start(const request& r) {
    auto box = std::make_shared<reply_box>();
    ep->handle(r.view(), into(box));
    return box;
  }
  http_reply send(const request& r) {
    auto box = start(r);
    REQUIRE(box->wait());
    const std::lock_guard lock{box->mu};
    return std::move(*box->reply);
  }

  recorder rec;
  metrics_registry metrics;
  manual_clock clk;
  two_principals auth;
  std::optional<server> srv;
  std::unique_ptr<http_endpoint> ep;
  test_support::task_pool pool{pool_threads};
  http_executor_binding binding;
};

/// A plain (non-streamed) tools/call POST without a session.
request call(std::int64_t id, std::string_view tool, std::string_view token) {
  return client_request("POST", fx::call_tool(id, tool), "application/json", "application/json", {}, token);
}

}  // namespace

TEST_SUITE("fair_dispatch") {

TEST_CASE("sessions.md/fair-dispatch: a flooding principal does not delay another's call past the first thread that frees") {
  fixture f;
  // alice fills both threads and queues four more (six in flight: her cap)
  std::vector<std::shared_ptr<reply_box>> flood;
  flood.reserve(cap);
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(cap); ++i) flood.push_back(f.start(call(i + 1, "flood", "alice-token")));
  REQUIRE(f.rec.wait_starts(pool_threads));
  // bob's call arrives behind alice's four queued ones
  auto quick = f.start(call(100, "quick", "bob-token"));
  CHECK_FALSE(quick->wait(20ms));  // every thread is busy
  // one thread frees: it runs bob's call, not alice's next
  f.rec.release(1);
  REQUIRE(quick->wait());
  {
    const std::lock_guard lock{quick->mu};
    CHECK(quick->reply->head.status == 200);
  }
  const auto starts = f.rec.snapshot();
  REQUIRE(starts.size() >= pool_threads + 1);
  CHECK(starts[0] == "alice:flood");
  CHECK(starts[1] == "alice:flood");
  CHECK(starts[2] == "bob:quick");
  // alice's queue then drains in order, every call answered
  f.rec.release(static_cast<int>(cap));
  for (const auto& b : flood) {
    REQUIRE(b->wait());
    const std::lock_guard lock{b->mu};
    CHECK(b->reply->head.status == 200);
  }
  CHECK(f.rec.snapshot().size() == cap + 1);
}

TEST_CASE("sessions.md/fair-dispatch: beyond max_dispatch_per_principal a request is 429 -32603 with retry_after_ms, others are served") {
  fixture f;
  std::vector<std::shared_ptr<reply_box>> flood;
  flood.reserve(cap);
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(cap); ++i) flood.push_back(f.start(call(i + 1, "flood", "alice-token")));
  REQUIRE(f.rec.wait_starts(pool_threads));
  const auto refused = f.send(call(50, "quick", "alice-token"));
  CAPTURE(refused.head.body);
  CHECK(refused.head.status == 429);
  CHECK(code_of(refused) == -32603);
  CHECK(id_of(refused) == "50");
  CHECK(data_of(refused, "retry_after_ms") == "1000");
  CHECK(header_of(refused, "Retry-After") == "1");
  CHECK(fx::str(body_of(refused).root["error"]["message"]) == "Too many requests in flight");
  std::string text;
  f.metrics.write_prometheus(text);
  CHECK(text.find(R"(mcp_dispatch_rejects_total{reason="principal_cap"} 1)") != std::string::npos);
  // another principal is not refused
  auto quick = f.start(call(101, "quick", "bob-token"));
  f.rec.release(1);
  REQUIRE(quick->wait());
  {
    const std::lock_guard lock{quick->mu};
    CHECK(quick->reply->head.status == 200);
  }
  // once alice's calls are answered she is served again
  f.rec.release_all();
  for (const auto& b : flood) REQUIRE(b->wait());
  REQUIRE(eventually([&] { return f.send(call(60, "quick", "alice-token")).head.status == 200; }));
}

TEST_CASE("sessions.md/fair-dispatch: a request's slot is free once its answer is delivered, before its handler returns") {
  // At a cap of 1, the next call sent from inside the first call's completion (its answer is
  // delivered, the handler thread has not left the dispatch yet) is served, not refused 429: a
  // client that sends its next request the moment an answer arrives never meets its own finished call.
  for (const bool per_request : {false, true}) {
    CAPTURE(per_request);
    fixture f{1};
    const auto make = [&](std::int64_t id) {
      if (!per_request) return call(id, "quick", "alice-token");
      return pr_post(pr_body(std::to_string(id), "tools/call", R"("name":"quick","arguments":{})"), "tools/call",
                     "quick");
    };
    const request first = make(1);
    const request next = make(2);
    auto first_box = std::make_shared<reply_box>();
    auto next_box = std::make_shared<reply_box>();
    f.ep->handle(first.view(), [&f, &next, first_box, next_box](http_reply r) {
      f.ep->handle(next.view(), into(next_box));
      first_box->put(std::move(r));
    });
    REQUIRE(first_box->wait());
    REQUIRE(next_box->wait());
    const std::lock_guard lock_first{first_box->mu};
    const std::lock_guard lock_next{next_box->mu};
    CHECK(first_box->reply->head.status == 200);
    CAPTURE(next_box->reply->head.body);
    CHECK(next_box->reply->head.status == 200);
    std::string text;
    f.metrics.write_prometheus(text);
    CHECK(text.find(R"(mcp_dispatch_rejects_total{reason="principal_cap"} 1)") == std::string::npos);
  }
}

}  // TEST_SUITE
