// SPDX-License-Identifier: Apache-2.0
// docs/tasks.md's example, compiled and run so that the documentation cannot rot: the tool runs as a
// task when a 2025-11-25 call asks for one, and its result is read with tasks/result.
#include <mcpcore/dispatch/tasks.hpp>

#include <doctest/doctest.h>

#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/stores/memory_task_store.hpp>
#include <mcpcore/wire/json.hpp>

#include <deque>
#include <functional>
#include <string>
#include <utility>

namespace tasks_doc {

namespace fx = server_fixture;

/// Runs the posted work when the test says so.
struct queue_executor final : mcpcore::background_executor {
  bool post(std::function<void()> work) noexcept override {
    try {
      queue.push_back(std::move(work));
      return true;
    } catch (...) {
      return false;
    }
  }
  std::deque<std::function<void()>> queue;
};

TEST_CASE("docs/tasks.md: the example tool runs as a task and tasks/result reads its result") {
// ---- docs/tasks.md snippet (keep identical) ----
mcpcore::memory_task_store tasks;            // or sqlite_task_store: results survive a restart
mcpcore::server_builder b{{.name = "host", .version = "1.0"}};
b.tasks(tasks);                              // task_options{} unless given
b.tool("export")
    .description("Exports the report (long)")
    .security("Report", mcpcore::operation::read)
    .effect(mcpcore::tool_effect::read_only, true)
    .task_support(mcpcore::task_support::optional)
    .handler([](mcpcore::call_context& ctx, const mcpcore::arguments&) {
      // ... the long work, watching ctx.stop_token() ...
      ctx.progress(1, 1, "written");
      return mcpcore::tool_result::text("exported");
    });
// ---- end of snippet
  mcpcore::server srv = fx::build(b);
  queue_executor exec;
  mcpcore::principal who{.id = "alice"};
  mcpcore::peer client;
  const mcpcore::dispatch_context ctx{who, &client, nullptr, {}, nullptr, nullptr, nullptr, nullptr, &exec};
  const auto created = fx::handle(
      srv, fx::request(1, "tools/call", R"({"name":"export","task":{"ttl":60000}})"), ctx);
  const std::string id = fx::str(created.result()["task"]["taskId"]);
  REQUIRE(mcpcore::is_task_id(id));
  REQUIRE(exec.queue.size() == 1);
  exec.queue.front()();
  const auto result = fx::handle(srv, fx::request(2, "tasks/result", R"({"taskId":")" + id + R"("})"), ctx);
  CAPTURE(result.text);
  CHECK(fx::str(fx::at(result.result()["content"], 0)["text"]) == "exported");
}

}  // namespace tasks_doc
