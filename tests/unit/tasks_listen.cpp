// SPDX-License-Identifier: Apache-2.0
// 2026-07-28 task status notifications on subscriptions/listen over the HTTP endpoint
// (docs/tasks.md#notifications, docs/eras.md#subscriptions): `tasksStatus` in the filter, its
// acknowledgement, the status changes of the owner's task as `notifications/tasks/status` with the
// task as tasks/get describes it, nothing for another principal's listen, and the refusals.
#include <mcpcore/transport/http_endpoint.hpp>

#include <doctest/doctest.h>

#include "support/http_endpoint_fixture.hpp"
#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tasks.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/task.hpp>
#include <mcpcore/stores/memory_task_store.hpp>
#include <mcpcore/wire/json.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using namespace mcpcore;
using namespace std::chrono_literals;
namespace fx = server_fixture;
namespace hx = http_endpoint_fixture;

namespace tasks_listen_test {

/// Client capabilities declaring the tasks extension and elicitation.
constexpr std::string_view ext_caps = R"({"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}})";

struct fixture : hx::endpoint_harness {
  memory_task_store store;
  fx::gate gate;

  explicit fixture(bool with_tasks = true) {
    server_builder b{server_info{.name = "tasks-listen", .version = "1"}};
    if (with_tasks) b.tasks(store);
    b.tool("work")
        .description("Waits for the gate, then answers.")
        .security("Thing", operation::read)
        .effect(tool_effect::read_only, true)
        .task_support(task_support::optional)
        .handler([this](call_context& ctx, const arguments&) {
          gate.arrive();
          if (!gate.block(ctx.stop_token())) return tool_result::text("stopped");
          return tool_result::text("worked");
        });
    b.tool("ask")
        .description("Waits for the gate, asks for a name, then greets it.")
        .security("Thing", operation::read)
        .effect(tool_effect::read_only, true)
        .task_support(task_support::optional)
        .handler([this](call_context& ctx, const arguments&) {
          gate.arrive();
          if (!gate.block(ctx.stop_token())) return tool_result::text("stopped");
          return fx::greet_or_ask(ctx, "name", "Your name?");
        });
    serve(b);
  }
  ~fixture() {
    gate.open();
    exec.join();
  }
  fixture(const fixture&) = delete;
  fixture& operator=(const fixture&) = delete;

  /// A 2026-07-28 `tools/call` of `tool` that becomes a task (its handler held at the gate); its id.
  std::string create_task(std::string_view tool) {
    const std::string body = hx::pr_body("1", "tools/call", R"("name":")" + std::string{tool} + R"(","arguments":{})",
                                         hx::envelope({}, ext_caps));
    hx::request r = hx::pr_post(body, "tools/call", tool);
    r.set("Accept", "application/json, text/event-stream");
    const auto reply = send(r);
    CAPTURE(reply.head.body);
    const auto b = hx::body_of(reply);
    CHECK(fx::str(b.root["result"]["resultType"]) == "task");
    const std::string id = fx::str(b.root["result"]["taskId"]);
    REQUIRE(is_task_id(id));
    return id;
  }
  /// `subscriptions/listen` with `params.notifications` = `filter`, declaring `caps`.
  static hx::request listen(std::string_view id_json, std::string_view filter, std::string_view caps = ext_caps,
                            std::string_view token = "alice-token") {
    const std::string members = std::string{R"("notifications":)"} + std::string{filter};
    return hx::pr_post(hx::pr_body(id_json, "subscriptions/listen", members, hx::envelope({}, caps)),
                       "subscriptions/listen", std::nullopt, token);
  }
};

/// The JSON text of `v`, or "<absent>" (readable in failure messages).
std::string text_of(json::value v) { return v.exists() ? fx::to_json(v) : std::string{"<absent>"}; }

/// A task of `tool` held at the gate, named by its owner's listen "L" (with an id that is no task)
/// and by bob's listen "B"; both acknowledged with every id asked.
struct watched {
  std::string id;
  hx::sse_reader owner;
  hx::sse_reader other;
};

watched watch(fixture& f, std::string_view tool) {
  const std::string id = f.create_task(tool);
  REQUIRE(f.gate.wait_arrived());
  auto reply = f.send(fixture::listen(R"("L")", R"({"tasksStatus":[")" + id + R"(","not-a-task"]})"));
  CAPTURE(reply.head.body);
  REQUIRE(reply.head.status == 200);
  auto owner = f.read(reply);
  REQUIRE(owner.drive_until([](const auto& ev) { return !hx::messages_of(ev).empty(); }));
  const auto ack = fx::parse(owner.messages()[0].data);
  CHECK(fx::str(ack.root["method"]) == "notifications/subscriptions/acknowledged");
  // Every id asked is echoed, whether it names a task or not (no oracle).
  CHECK(text_of(ack.root["params"]["notifications"]) == R"({"tasksStatus":[")" + id + R"(","not-a-task"]})");
  // Another principal's listen naming the same id: granted alike.
  auto other_reply = f.send(fixture::listen(R"("B")", R"({"tasksStatus":[")" + id + R"("]})", ext_caps, "bob-token"));
  REQUIRE(other_reply.head.status == 200);
  auto other = f.read(other_reply);
  REQUIRE(other.drive_until([](const auto& ev) { return !hx::messages_of(ev).empty(); }));
  CHECK(text_of(fx::parse(other.messages()[0].data).root["params"]["notifications"]) ==
        R"({"tasksStatus":[")" + id + R"("]})");
  return watched{id, std::move(owner), std::move(other)};
}

/// Whether a `notifications/tasks/status` whose text holds `needle` arrived.
bool has_status(const std::vector<hx::sse_event>& ev, std::string_view needle) {
  for (const auto& e : ev) {
    if (hx::has_method(e, "notifications/tasks/status") && e.data.find(needle) != std::string::npos) return true;
  }
  return false;
}

/// The `notifications/tasks/status` frames of a stream, parsed.
std::vector<fx::parsed> statuses(const hx::sse_reader& r) {
  std::vector<fx::parsed> out;
  for (const auto& e : r.messages()) {
    if (hx::has_method(e, "notifications/tasks/status")) out.push_back(fx::parse(e.data));
  }
  return out;
}

/// A `notifications/tasks/status` of task `id` on listen "L", completed with the text `text`: the
/// task exactly as tasks/get describes it, member for member (its `_meta` and `resultType` aside).
void check_completed(fixture& f, const std::string& id, json::value done, std::string_view text) {
  CAPTURE(text_of(done));
  CHECK(fx::str(done["taskId"]) == id);
  CHECK(fx::str(done["status"]) == "completed");
  CHECK(fx::str(fx::at(done["result"]["content"], 0)["text"]) == text);
  CHECK_FALSE(done["resultType"].exists());
  CHECK_FALSE(done["inputRequests"].exists());
  CHECK(text_of(done["_meta"]) == R"({"io.modelcontextprotocol/subscriptionId":"L"})");
  const auto got = f.send(hx::pr_post(hx::pr_body("3", "tasks/get", R"("taskId":")" + id + '"', hx::envelope({}, ext_caps)),
                                      "tasks/get", std::string_view{id}));
  const auto g = hx::body_of(got);
  std::size_t members = 0;
  for (const json::member m : done.members()) {
    if (m.key == "_meta") continue;
    ++members;
    CAPTURE(m.key);
    CHECK(text_of(m.value()) == text_of(g.root["result"][m.key]));
  }
  std::size_t expected = 0;
  for (const json::member m : g.root["result"].members()) {
    if (m.key != "_meta" && m.key != "resultType") ++expected;
  }
  CHECK(members == expected);
}

/// Another principal's listen got nothing but its acknowledgement.
void check_silent(hx::sse_reader& other) {
  (void)other.drive_until([](const auto&) { return false; }, 50ms);
  CHECK(other.messages().size() == 1);
  CHECK(statuses(other).empty());
}

}  // namespace tasks_listen_test

using namespace tasks_listen_test;

TEST_SUITE("tasks_listen") {

TEST_CASE("tasks.md/notifications: a 2026 listen naming its own task gets its completion with the full task, another principal's nothing") {
  fixture f;
  auto [id, reader, other] = watch(f, "work");
  f.gate.open();
  REQUIRE(reader.drive_until([](const auto& ev) { return has_status(ev, R"("completed")"); }));
  const auto s = statuses(reader);
  REQUIRE(s.size() == 1);  // created is not a change
  check_completed(f, id, s[0].root["params"], "worked");
  check_silent(other);
}

TEST_CASE("tasks.md/notifications: a 2026 listen gets the cancellation of its task, once") {
  fixture f;
  const std::string id = f.create_task("work");
  REQUIRE(f.gate.wait_arrived());
  auto reply = f.send(fixture::listen("8", R"({"tasksStatus":[")" + id + R"("]})"));
  REQUIRE(reply.head.status == 200);
  auto reader = f.read(reply);
  REQUIRE(reader.drive_until([](const auto& ev) { return !hx::messages_of(ev).empty(); }));
  const auto cancelled = f.send(hx::pr_post(
      hx::pr_body("9", "tasks/cancel", R"("taskId":")" + id + '"', hx::envelope({}, ext_caps)), "tasks/cancel", std::string_view{id}));
  CAPTURE(cancelled.head.body);
  CHECK(cancelled.head.status == 200);
  REQUIRE(reader.drive_until([](const auto& ev) { return has_status(ev, R"("cancelled")"); }));
  f.gate.open();  // the stopped work's late end changes nothing
  f.exec.join();
  (void)reader.drive_until([](const auto&) { return false; }, 50ms);
  const auto s = statuses(reader);
  REQUIRE(s.size() == 1);
  CHECK(fx::str(s[0].root["params"]["taskId"]) == id);
  CHECK(fx::str(s[0].root["params"]["status"]) == "cancelled");
  CHECK_FALSE(s[0].root["params"]["result"].exists());
  CHECK(text_of(s[0].root["params"]["_meta"]) == R"({"io.modelcontextprotocol/subscriptionId":8})");
}

TEST_CASE("tasks.md/notifications: tasksStatus without the tasks extension is -32021 with requiredCapabilities") {
  fixture f;
  const auto r = f.send(fixture::listen("4", R"({"tasksStatus":["x"]})", "{}"));
  CAPTURE(r.head.body);
  hx::check_refusal(r, 400, -32021, "4");
  CHECK(hx::data_of(r, "requiredCapabilities") == R"({"extensions":{"io.modelcontextprotocol/tasks":{}}})");
  CHECK_FALSE(r.stream);
}

TEST_CASE("tasks.md/notifications: a malformed tasksStatus is -32602") {
  fixture f;
  for (const std::string_view filter : {R"({"tasksStatus":"x"})", R"({"tasksStatus":[1]})", R"({"tasksStatus":{}})"}) {
    CAPTURE(filter);
    const auto r = f.send(fixture::listen("5", filter));
    hx::check_refusal(r, 200, -32602, "5");
  }
  // More ids than max_listen_uris.
  std::string many = R"({"tasksStatus":[)";
  for (std::size_t i = 0; i <= default_max_listen_uris; ++i) many += (i == 0 ? "\"t\"" : ",\"t\"");
  many += "]}";
  hx::check_refusal(f.send(fixture::listen("6", many)), 200, -32602, "6");
}

TEST_CASE("tasks.md/notifications: without tasks on the server tasksStatus is not granted") {
  fixture f{false};
  auto r = f.send(fixture::listen("7", R"({"toolsListChanged":true,"tasksStatus":["x"]})", "{}"));
  CAPTURE(r.head.body);
  REQUIRE(r.head.status == 200);
  auto reader = f.read(r);
  REQUIRE(reader.drive_until([](const auto& ev) { return !hx::messages_of(ev).empty(); }));
  CHECK(text_of(fx::parse(reader.messages()[0].data).root["params"]["notifications"]) == R"({"toolsListChanged":true})");
}

TEST_CASE("tasks.md/notifications: a 2026 listen naming its own task gets input_required and completed with the full task") {
  fixture f;
  auto [id, reader, other] = watch(f, "ask");

  // -> input_required.
  f.gate.open();
  REQUIRE(reader.drive_until([](const auto& ev) {
    for (const auto& e : ev) {
      if (hx::has_method(e, "notifications/tasks/status")) return true;
    }
    return false;
  }));
  {
    const auto s = statuses(reader);
    REQUIRE(s.size() == 1);
    const auto p = s[0].root["params"];
    CAPTURE(text_of(p));
    CHECK(fx::str(p["taskId"]) == id);
    CHECK(fx::str(p["status"]) == "input_required");
    CHECK(fx::str(p["inputRequests"]["name"]["method"]) == "elicitation/create");
    CHECK(p["ttlMs"].is_number());
    CHECK(p["pollIntervalMs"].is_number());
    CHECK(p["createdAt"].is_string());
    CHECK_FALSE(p["resultType"].exists());
    CHECK(text_of(p["_meta"]) == R"({"io.modelcontextprotocol/subscriptionId":"L"})");
  }
  // tasks/update answers it: -> working, then -> completed with the result.
  const std::string update = hx::pr_body("2", "tasks/update",
                                         R"("taskId":")" + id +
                                             R"(","inputResponses":{"name":{"action":"accept","content":{"name":"ada"}}})",
                                         hx::envelope({}, ext_caps));
  const auto acked = f.send(hx::pr_post(update, "tasks/update", std::string_view{id}));
  CAPTURE(acked.head.body);
  CHECK(acked.head.status == 200);
  REQUIRE(reader.drive_until([](const auto& ev) {
    for (const auto& e : ev) {
      if (hx::has_method(e, "notifications/tasks/status") && e.data.find(R"("completed")") != std::string::npos) {
        return true;
      }
    }
    return false;
  }));
  const auto s = statuses(reader);
  REQUIRE(!s.empty());
  check_completed(f, id, s.back().root["params"], "hello ada");
  check_silent(other);
}

}  // TEST_SUITE
