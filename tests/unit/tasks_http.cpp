// SPDX-License-Identifier: Apache-2.0
// Tasks over the HTTP endpoint (docs/tasks.md): the endpoint hands the task its executor and the
// session's channel (2025-11-25 progress and status notifications reach the GET stream), a
// tasks/result waits without a thread and answers on the terminal, the 2026-07-28 Mcp-Name rule of
// tasks/get, tasks/update and tasks/cancel, and cancel_in_flight stops the tasks.
#include <mcpcore/transport/http_endpoint.hpp>

#include <doctest/doctest.h>

#include "support/http_endpoint_fixture.hpp"
#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tasks.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/stores/memory_task_store.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

using namespace mcpcore;
using namespace std::chrono_literals;
namespace fx = server_fixture;
namespace hx = http_endpoint_fixture;

namespace tasks_http_test {

constexpr std::string_view ext_caps = R"({"extensions":{"io.modelcontextprotocol/tasks":{}}})";

struct fixture : hx::endpoint_harness {
  memory_task_store store;
  fx::gate gate;

  explicit fixture(bool with_executor = true) {
    server_builder b{server_info{.name = "tasks-http", .version = "1"}};
    b.tasks(store);
    b.tool("work")
        .description("Reports progress, then waits for the gate (or its stop token).")
        .security("Thing", operation::read)
        .effect(tool_effect::read_only, true)
        .task_support(task_support::optional)
        .handler([this](call_context& ctx, const arguments&) {
          (void)ctx.progress(1, 2, "started");
          gate.arrive();
          if (!gate.block(ctx.stop_token())) return tool_result::text("stopped");
          return tool_result::text("worked");
        });
    b.tool("ask")
        .description("Asks the client for a name (elicitation), then greets it.")
        .security("Thing", operation::read)
        .effect(tool_effect::read_only, true)
        .task_support(task_support::optional)
        .handler([](call_context& ctx, const arguments&) { return fx::greet_or_ask(ctx, "who", "Who?"); });
    serve(b, {}, with_executor);
  }
  ~fixture() {
    gate.open();
    exec.join();
  }
  fixture(const fixture&) = delete;
  fixture& operator=(const fixture&) = delete;

  std::string open_session(std::string_view caps = "{}") {
    const auto r = send(hx::post(fx::initialize(1, "2025-11-25", caps)));
    REQUIRE(r.head.status == 200);
    const auto sid = r.head.header("Mcp-Session-Id");
    REQUIRE(sid.has_value());
    return std::string{*sid};
  }
  hx::request on(std::string body, const std::string& sid) {
    hx::request r = hx::post(std::move(body), sid);
    r.set("MCP-Protocol-Version", "2025-11-25");
    return r;
  }
};

std::string task_of(const http_reply& r) {
  const auto b = hx::body_of(r);
  const std::string id = fx::str(b.root["result"]["task"]["taskId"]);
  REQUIRE_MESSAGE(is_task_id(id), r.head.body);
  return id;
}

}  // namespace tasks_http_test

using namespace tasks_http_test;

TEST_SUITE("tasks_http") {

TEST_CASE("tasks.md/notifications: over HTTP a 2025 task's progress and status notifications reach the session's GET stream") {
  fixture f;
  const std::string sid = f.open_session();
  auto get = f.send(hx::get(sid));
  REQUIRE(get.head.status == 200);
  auto stream = f.read(get);
  hx::request call = f.on(fx::request(2, "tools/call", R"({"name":"work","task":{},"_meta":{"progressToken":"p-1"}})"), sid);
  call.set("Accept", "application/json");  // a JSON answer: the CreateTaskResult
  const auto created = f.send(call);
  CAPTURE(created.head.body);
  const std::string id = task_of(created);
  REQUIRE(f.gate.wait_arrived());
  CHECK(stream.drive_until([](const auto& ev) { return hx::count_if_events(ev, hx::is_progress) == 1; }));
  // tasks/result waits (no thread held) until the work ends, then answers.
  auto waiting = f.start(f.on(fx::request(3, "tasks/result", R"({"taskId":")" + id + R"("})"), sid));
  CHECK_FALSE(waiting->wait(50ms));
  f.gate.open();
  REQUIRE(waiting->wait());
  {
    std::lock_guard lock{waiting->mu};
    const auto b = hx::body_of(*waiting->reply);
    CHECK(fx::str(fx::at(b.root["result"]["content"], 0)["text"]) == "worked");
    CHECK(fx::str(b.root["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"]) == id);
  }
  CHECK(stream.drive_until([](const auto& ev) {
    for (const auto& e : ev) {
      if (hx::has_method(e, "notifications/tasks/status") && e.data.find("\"completed\"") != std::string::npos) return true;
    }
    return false;
  }));
  const auto progress = hx::messages_of(stream.events());
  bool saw_token = false;
  for (const auto& e : progress) {
    if (hx::is_progress(e)) saw_token = e.data.find(R"("progressToken":"p-1")") != std::string::npos;
  }
  CHECK(saw_token);
}

TEST_CASE("tasks.md/input: over HTTP a 2025 task's input request arrives on the GET stream and the POSTed answer resumes it") {
  fixture f;
  const std::string sid = f.open_session(R"({"elicitation":{}})");
  auto get = f.send(hx::get(sid));
  REQUIRE(get.head.status == 200);
  auto stream = f.read(get);
  hx::request call = f.on(fx::request(2, "tools/call", R"({"name":"ask","task":{}})"), sid);
  call.set("Accept", "application/json");
  const std::string id = task_of(f.send(call));
  // The client holds tasks/result while it answers (MCP); it waits without a thread.
  auto waiting = f.start(f.on(fx::request(3, "tasks/result", R"({"taskId":")" + id + R"("})"), sid));
  const auto is_elicitation = [](const auto& e) { return hx::has_method(e, "elicitation/create"); };
  REQUIRE(stream.drive_until([&](const auto& ev) {
    return std::any_of(ev.begin(), ev.end(), is_elicitation);
  }));
  std::int64_t rid = 0;
  for (const auto& e : hx::messages_of(stream.events())) {
    if (!is_elicitation(e)) continue;
    const auto m = fx::parse(e.data);
    CHECK(fx::str(m.root["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"]) == id);
    rid = m.root["id"].to_int64().value_or(0);
  }
  REQUIRE(rid != 0);
  const auto status = f.send(f.on(fx::request(4, "tasks/get", R"({"taskId":")" + id + R"("})"), sid));
  CHECK(fx::str(hx::body_of(status).root["result"]["status"]) == "input_required");
  CHECK_FALSE(waiting->wait(20ms));
  const auto answered = f.send(f.on(fx::client_result(rid, R"({"action":"accept","content":{"name":"Ada"}})"), sid));
  CHECK(answered.head.status == 202);
  REQUIRE(waiting->wait());
  std::lock_guard lock{waiting->mu};
  const auto b = hx::body_of(*waiting->reply);
  CAPTURE(waiting->reply->head.body);
  CHECK(fx::str(fx::at(b.root["result"]["content"], 0)["text"]) == "hello Ada");
}

TEST_CASE("tasks.md/headers: 2026 tasks/get, tasks/update and tasks/cancel need Mcp-Name equal to the task id") {
  fixture f;
  const std::string id_like(32, 'a');
  for (const std::string_view method : {"tasks/get", "tasks/update", "tasks/cancel"}) {
    CAPTURE(method);
    const std::string body = hx::pr_body("1", method, R"("taskId":")" + id_like + R"(","inputResponses":{})",
                                         hx::envelope({}, ext_caps));
    const auto missing = f.send(hx::pr_post(body, method));
    hx::check_refusal(missing, 400, -32020, "1");
    const auto wrong = f.send(hx::pr_post(body, method, std::string_view{"another-task"}));
    hx::check_refusal(wrong, 400, -32020, "1");
    const auto right = f.send(hx::pr_post(body, method, std::string_view{id_like}));
    CHECK(right.head.status != 400);
  }
  // tasks/result and tasks/list name nothing and do not exist in 2026-07-28: 404 -32601.
  const auto result = f.send(hx::pr_post(hx::pr_body("2", "tasks/result", R"("taskId":"x")", hx::envelope({}, ext_caps)),
                                         "tasks/result"));
  hx::check_refusal(result, 404, -32601, "2");
  // Without the extension: 400 -32021, whatever the id.
  const auto gate = f.send(hx::pr_post(hx::pr_body("3", "tasks/get", R"("taskId":"gate-test")"), "tasks/get",
                                       std::string_view{"gate-test"}));
  CHECK(gate.head.status == 400);
  CHECK(hx::code_of(gate) == -32021);
}

TEST_CASE("tasks.md/executors: without a bound executor an optional tool answers as a plain call over HTTP") {
  fixture f{false};
  f.gate.open();
  const std::string sid = f.open_session();
  const auto r = f.send(f.on(fx::request(2, "tools/call", R"({"name":"work","task":{}})"), sid));
  CAPTURE(r.head.body);
  const auto b = hx::body_of(r);
  CHECK(fx::str(fx::at(b.root["result"]["content"], 0)["text"]) == "worked");
  CHECK_FALSE(b.root["result"]["task"].exists());
}

TEST_CASE("tasks.md/shutdown: cancel_in_flight stops the running tasks, which fail") {
  fixture f;
  const std::string sid = f.open_session();
  const std::string id = task_of(f.send(f.on(fx::request(2, "tools/call", R"({"name":"work","task":{}})"), sid)));
  REQUIRE(f.gate.wait_arrived());
  CHECK(f.srv->running_tasks() == 1);
  f.ep->begin_shutdown();
  f.ep->cancel_in_flight();
  f.exec.join();
  CHECK(f.srv->running_tasks() == 0);
}

}  // TEST_SUITE
