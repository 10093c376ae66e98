// SPDX-License-Identifier: Apache-2.0
// Tests of the PostgreSQL event bridge against the ctest fixture's PostgreSQL 15 cluster
// (MCPCORE_TEST_PG): two servers, each with a bridge on one channel; events cross once and do not
// echo; a killed listener connection reconnects and reports the gap; close is prompt; payload bounds
// (docs/server.md#events-across-servers).
#include <mcpcore/session/postgres_event_bridge.hpp>
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/approval.hpp>

#include <doctest/doctest.h>

#include "support/http_endpoint_fixture.hpp"
#include "support/pg_cluster.hpp"
#include "support/server_fixture.hpp"
#include "support/store_opener.hpp"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

using namespace mcpcore;
using std::chrono::milliseconds;

namespace {

using http_endpoint_fixture::eventually;  // up to 5 s
using test_pg::base_conninfo;

// Runs one statement on a fresh connection; the first row ("" if none).
std::string sql_one(const std::string& sql) { return test_pg::connection{}.exec(sql); }

std::string channel(std::string_view tag) { return "evt_" + std::string(tag) + "_" + std::to_string(::getpid()); }

server make_server(std::string_view name) {
  server_builder b{server_info{.name = std::string(name), .version = "1.0.0"}, server_options{}};
  http_endpoint_fixture::add_tool(b, "echo", [](call_context&, const arguments&) { return tool_result::text("e"); }, true);
  http_endpoint_fixture::add_tool(b, "spare", [](call_context&, const arguments&) { return tool_result::text("s"); }, true);
  b.prompt("greeting").description("Prompt.").handler([](call_context&, const prompt_arguments&) {
    return prompt_result{"Prompt"}.add_user_text("hi");
  });
  b.resource("test://doc").name("doc").mime_type("text/plain").handler(http_endpoint_fixture::text_resource("t"));
  return server_fixture::build(b);
}

// Every event one subscriber saw, as "kind|uri".
struct recorder {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> seen;
  std::function<void(const server_event&)> callback() {
    return [this](const server_event& e) {
      const std::lock_guard<std::mutex> lock(mu);
      seen.push_back(std::to_string(static_cast<int>(e.kind)) + "|" + std::string(e.uri));
      cv.notify_all();
    };
  }
  // Waits until `n` events were seen (at most 5 s); the events.
  std::vector<std::string> wait_for(std::size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::seconds(5), [&] { return seen.size() >= n; });
    return seen;
  }
  std::vector<std::string> now() {
    const std::lock_guard<std::mutex> lock(mu);
    return seen;
  }
};

std::string ev(server_event_kind k, std::string_view uri = {}) {
  return std::to_string(static_cast<int>(k)) + "|" + std::string(uri);
}

std::unique_ptr<postgres_event_bridge> open_bridge(server& s, const std::string& ch, postgres_event_bridge_options o = {}) {
  o.channel = ch;
  return mcpcore_test::open_or_fail<postgres_event_bridge>(s, base_conninfo(), std::move(o));
}

// Servers A and B, each with a subscriber recording its events and a bridge on one channel of
// their own (named after `tag`).
struct bridged_pair {
  explicit bridged_pair(std::string_view tag, const postgres_event_bridge_options& o = {})
      : ch(channel(tag)), bridge_a(open_bridge(a, ch, o)), bridge_b(open_bridge(b, ch, o)) {}
  server a = make_server("a");
  server b = make_server("b");
  recorder on_a;
  recorder on_b;
  event_subscription sub_a = a.subscribe(on_a.callback());
  event_subscription sub_b = b.subscribe(on_b.callback());
  std::string ch;
  std::unique_ptr<postgres_event_bridge> bridge_a;
  std::unique_ptr<postgres_event_bridge> bridge_b;
};

// Lets a wrong second delivery (an echo, a duplicate) arrive before the counts are checked.
void settle() { std::this_thread::sleep_for(milliseconds(300)); }

}  // namespace

TEST_CASE("server.md/events-across-servers: a resource update on A reaches B's subscriber once and does not echo back to A") {
  bridged_pair p{"update"};
  CHECK(p.bridge_a->origin() != p.bridge_b->origin());

  p.a.notify_resource_updated("test://doc");
  const auto got = p.on_b.wait_for(1);
  settle();
  CHECK(p.on_b.now() == std::vector<std::string>{ev(server_event_kind::resource_updated, "test://doc")});
  // A saw its own local event only: B did not send it back.
  CHECK(p.on_a.now() == std::vector<std::string>{ev(server_event_kind::resource_updated, "test://doc")});
  CHECK(p.bridge_a->sent() == 1);
  CHECK(p.bridge_b->sent() == 0);
  CHECK(p.bridge_b->received() == 1);
  CHECK(p.bridge_a->received() == 0);
  CHECK(p.bridge_a->gaps() == 0);
  CHECK(p.bridge_b->gaps() == 0);
}

TEST_CASE("server.md/events-across-servers: a list change on A reaches B once, task_status is not bridged") {
  bridged_pair p{"lists"};

  p.a.publish(server_event{.kind = server_event_kind::task_status, .task_id = "t1", .owner = "alice", .task_json = "{}"});
  REQUIRE(p.a.remove_tool("spare"));
  p.on_b.wait_for(1);
  settle();
  CHECK(p.on_b.now() == std::vector<std::string>{ev(server_event_kind::tools_list_changed)});
  CHECK(p.on_a.now().size() == 2);  // its own task_status and list change
  CHECK(p.bridge_a->sent() == 1);
  CHECK(p.bridge_b->sent() == 0);
  CHECK(p.bridge_a->received() == 0);

  // And back the other way.
  p.b.publish(server_event{server_event_kind::prompts_list_changed, {}});
  p.on_a.wait_for(3);
  settle();
  CHECK(p.on_a.now().back() == ev(server_event_kind::prompts_list_changed));
  CHECK(p.on_a.now().size() == 3);
  CHECK(p.on_b.now().size() == 2);
  CHECK(p.bridge_b->sent() == 1);
  CHECK(p.bridge_a->sent() == 1);
}

TEST_CASE("server.md/events-across-servers: B's killed listener reconnects, counts one gap, publishes the list_changed burst, and events flow again") {
  postgres_event_bridge_options o;
  o.retry_backoff = milliseconds(20);
  bridged_pair p{"gap", o};

  const std::string killed = sql_one("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = "
                                     "'mcpcore-events-" + p.bridge_b->origin() + "'");
  REQUIRE(killed == "1");
  REQUIRE(eventually([&] { return p.bridge_b->gaps() == 1; }));
  p.on_b.wait_for(3);
  settle();
  const std::vector<std::string> burst{ev(server_event_kind::tools_list_changed), ev(server_event_kind::prompts_list_changed),
                                       ev(server_event_kind::resources_list_changed)};
  CHECK(p.on_b.now() == burst);
  CHECK(p.bridge_b->gaps() == 1);
  CHECK(p.bridge_a->gaps() == 0);
  // The burst is B's own business: not sent to A.
  CHECK(p.on_a.now().empty());
  CHECK(p.bridge_b->sent() == 0);

  p.a.notify_resource_updated("test://doc");
  p.on_b.wait_for(4);
  settle();
  CHECK(p.on_b.now().size() == 4);
  CHECK(p.on_b.now().back() == ev(server_event_kind::resource_updated, "test://doc"));
  // And B's own events reach A over the new connection.
  p.b.notify_resource_updated("test://doc");
  p.on_a.wait_for(2);
  settle();
  CHECK(p.on_a.now().size() == 2);
  CHECK(p.bridge_b->sent() == 1);
}

TEST_CASE("server.md/events-across-servers: close returns promptly and later events are not sent") {
  server a = make_server("a");
  const std::string ch = channel("close");
  auto bridge = open_bridge(a, ch);
  std::this_thread::sleep_for(milliseconds(100));  // the thread is waiting in poll
  const auto t0 = std::chrono::steady_clock::now();
  bridge->close();
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK(took < milliseconds(500));
  a.notify_resource_updated("test://doc");
  CHECK(bridge->sent() == 0);
  bridge->close();  // idempotent
}

TEST_CASE("server.md/events-across-servers: a URI past the payload bound is counted, not sent, a bad payload is rejected, a bad channel refused") {
  bridged_pair p{"bounds"};

  p.a.notify_resource_updated("test://" + std::string(postgres_event_max_payload, 'x'));
  CHECK(p.bridge_a->oversized() == 1);
  sql_one("SELECT pg_notify('" + p.ch + "', 'not json')");
  sql_one("SELECT pg_notify('" + p.ch + R"(', '{"o":"zz","k":"resource_updated"}'))");
  REQUIRE(eventually([&] { return p.bridge_b->rejected() == 2; }));
  // A URI just under the bound still crosses.
  const std::string fits = "test://" + std::string(postgres_event_max_payload - 80, 'y');
  p.a.notify_resource_updated(fits);
  p.on_b.wait_for(1);
  CHECK(p.on_b.now() == std::vector<std::string>{ev(server_event_kind::resource_updated, fits)});
  CHECK(p.bridge_a->oversized() == 1);

  postgres_event_bridge_options bad;
  bad.channel = "Bad-Channel";
  auto refused = postgres_event_bridge::open(p.a, base_conninfo(), bad);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code() == std::make_error_code(std::errc::invalid_argument));
}

TEST_CASE("server.md/events-across-servers: the outgoing queue is bounded and drops are counted") {
  server a = make_server("a");
  const std::string ch = channel("queue");
  postgres_event_bridge_options o;
  o.max_queued = 2;
  o.retry_backoff = milliseconds(20);
  auto bridge = open_bridge(a, ch, o);
  // Kill the connection so that the queue cannot drain, then publish past the cap.
  sql_one("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'mcpcore-events-" +
          bridge->origin() + "'");
  for (int i = 0; i < 200; ++i) a.notify_resource_updated("test://doc");
  CHECK(bridge->dropped() >= 1);
  // After the reconnection every event is either sent or counted dropped.
  CHECK(eventually([&] { return bridge->sent() + bridge->dropped() == 200; }));
  CHECK(bridge->sent() <= 3);
  CHECK(bridge->gaps() == 1);
}

TEST_CASE("server.md/events-across-servers: notify sends one event from a process without a server, and every bridge publishes it") {
  bridged_pair p{"oneshot"};

  postgres_event_bridge_options o;
  o.channel = p.ch;
  const auto sent = postgres_event_bridge::notify(
      base_conninfo(), server_event{.kind = server_event_kind::resource_updated, .uri = "test://doc"}, o);
  REQUIRE_MESSAGE(sent.has_value(), (sent ? std::string{} : sent.error().message()));
  p.on_a.wait_for(1);
  p.on_b.wait_for(1);
  settle();
  // Its origin is its own, so both bridges publish it, once each; neither sends it back.
  CHECK(p.on_a.now() == std::vector<std::string>{ev(server_event_kind::resource_updated, "test://doc")});
  CHECK(p.on_b.now() == std::vector<std::string>{ev(server_event_kind::resource_updated, "test://doc")});
  CHECK(p.bridge_a->received() == 1);
  CHECK(p.bridge_b->received() == 1);
  CHECK(p.bridge_a->sent() == 0);
  CHECK(p.bridge_b->sent() == 0);

  // What it cannot send is refused before it connects.
  o.channel = "Bad-Channel";
  const auto bad = postgres_event_bridge::notify(base_conninfo(), server_event{.kind = server_event_kind::tools_list_changed}, o);
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().code() == std::make_error_code(std::errc::invalid_argument));
  o.channel = p.ch;
  const auto task = postgres_event_bridge::notify(
      base_conninfo(), server_event{.kind = server_event_kind::task_status, .task_id = "t", .owner = "o", .task_json = "{}"}, o);
  REQUIRE_FALSE(task.has_value());
  CHECK(task.error().code() == std::make_error_code(std::errc::message_size));
  const auto too_long = postgres_event_bridge::notify(
      base_conninfo(), server_event{.kind = server_event_kind::resource_updated, .uri = std::string(9000, 'u')}, o);
  REQUIRE_FALSE(too_long.has_value());
  CHECK(too_long.error().code() == std::make_error_code(std::errc::message_size));
  // An unreachable database is an io_error.
  const auto down = postgres_event_bridge::notify(
      "host=/nonexistent dbname=x", server_event{.kind = server_event_kind::tools_list_changed}, o);
  REQUIRE_FALSE(down.has_value());
  CHECK(down.error().code() == make_error_code(approval_store_errc::io_error));
  settle();
  CHECK(p.on_a.now().size() == 1);
  CHECK(p.on_b.now().size() == 1);
}
