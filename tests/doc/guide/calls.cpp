// SPDX-License-Identifier: Apache-2.0
// docs/guide.md's snippets of what a handler does during its call (#progress-and-logging,
// #cancellation, #requests-to-the-client, #detached-work), compiled and run through server::handle
// with a peer and a recording message sink.
#include <mcpcore/dispatch/server.hpp>

#include <doctest/doctest.h>

#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/operation.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/wire/client_capability.hpp>
#include <mcpcore/wire/json_writer.hpp>
#include <mcpcore/wire/log_level.hpp>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace guide_calls {

namespace fx = server_fixture;
using namespace std::chrono_literals;

/// The host's own work queue (a stand-in: the test runs the tasks itself).
struct work_queue {
  std::vector<std::function<void()>> tasks;
  void post(std::function<void()> f) { tasks.push_back(std::move(f)); }
};

void declare(mcpcore::server_builder& b, work_queue& jobs) {
// ---- snippet guide_progress_logging (keep identical) ----
b.tool("import")
    .description("Imports `count` records, reporting progress.")
    .input_schema(R"({"type":"object","properties":{"count":{"type":"integer","minimum":1}},"required":["count"]})")
    .security("Records", mcpcore::operation::write)
    .effect(mcpcore::tool_effect::additive, /*idempotent=*/false)
    .handler([](mcpcore::call_context& ctx, const mcpcore::arguments& args) {
      const auto count = *args["count"].to_int64();
      ctx.log(mcpcore::log_level::info, "import started", "importer");  // notifications/message
      for (std::int64_t i = 1; i <= count; ++i) {
        if (ctx.stop_requested()) return mcpcore::tool_result::error("cancelled");  // no answer is sent
        // ... import record i ...
        ctx.progress(static_cast<double>(i), static_cast<double>(count));  // only if the client asked
      }
      return mcpcore::tool_result::text("imported " + std::to_string(count) + " records");
    });
// ---- end of snippet guide_progress_logging

// ---- snippet guide_cancellation (keep identical) ----
b.tool("wait")
    .description("Waits up to `seconds`, or until the call is cancelled.")
    .input_schema(R"({"type":"object","properties":{"seconds":{"type":"integer","minimum":0,"maximum":60}}})")
    .security("Clock", mcpcore::operation::read)
    .effect(mcpcore::tool_effect::read_only, true)
    .handler([](mcpcore::call_context& ctx, const mcpcore::arguments& args) {
      std::mutex m;
      std::condition_variable_any cv;
      std::unique_lock lock{m};
      // Wakes as soon as the stop token is signalled: notifications/cancelled or shutdown.
      const bool cancelled = cv.wait_for(lock, ctx.stop_token(), std::chrono::seconds{args["seconds"].to_int64().value_or(1)},
                                         [] { return false; });
      return mcpcore::tool_result::text(cancelled ? "cancelled" : "waited");
    });
// ---- end of snippet guide_cancellation

// ---- snippet guide_client_requests (keep identical) ----
b.tool("list_roots")
    .description("Lists the client's roots.")
    .security("Roots", mcpcore::operation::read)
    .effect(mcpcore::tool_effect::read_only, true)
    .handler([](mcpcore::call_context& ctx, const mcpcore::arguments&) {
      // Waits for the client's answer (bounded by the timeout and by cancellation of this call).
      auto reply = ctx.request("roots/list", {}, std::chrono::seconds{10});
      if (!reply) return mcpcore::tool_result::error("could not ask the client: " + reply.error().message());
      if (reply->is_error()) return mcpcore::tool_result::error("the client refused roots/list");
      std::string uris;
      for (const auto root : reply->value()["roots"].elements()) uris += std::string{root["uri"].as_string()} + "\n";
      return mcpcore::tool_result::text(uris);
    });
// ---- end of snippet guide_client_requests

// ---- snippet guide_need_input (keep identical) ----
b.tool("drop_table")
    .description("Drops a table after the user confirms.")
    .input_schema(R"({"type":"object","properties":{"table":{"type":"string"}},"required":["table"]})")
    .security("Table", mcpcore::operation::delete_)
    .effect(mcpcore::tool_effect::destructive, true)
    .handler([](mcpcore::call_context& ctx, const mcpcore::arguments& args) {
      const auto answer = ctx.input("confirm");  // absent on the first round
      if (!answer["action"].is_string()) {
        if (!ctx.client_declares(mcpcore::client_capability::elicitation_form)) {
          return mcpcore::tool_result::error("this tool needs a client that can ask its user");
        }
        return mcpcore::tool_result::need_input(mcpcore::input_required{}.ask(
            "confirm", mcpcore::input_request::elicit("Drop table " + std::string{args["table"].as_string()} + "?",
                                                      R"({"type":"object","properties":{}})")));
      }
      if (answer["action"].as_string() != "accept") return mcpcore::tool_result::text("kept");
      return mcpcore::tool_result::text("dropped " + std::string{args["table"].as_string()});
    });
// ---- end of snippet guide_need_input

// ---- snippet guide_detach (keep identical) ----
b.tool("export")
    .description("Starts an export and returns at once; progress and the outcome follow.")
    .security("Export", mcpcore::operation::read)
    .effect(mcpcore::tool_effect::read_only, false)
    .handler([&jobs](mcpcore::call_context& ctx, const mcpcore::arguments&) {
      const std::string id = "export-42";  // a durable id the client can fetch the outcome by
      mcpcore::operation_handle op = mcpcore::detach(ctx, id);
      jobs.post([op]() mutable {  // the host's own thread; ctx is not valid there
        op.progress(50, 100, "half way");
        op.finish(mcpcore::tool_result::text("exported 1000 rows"));  // replaces the answer below
      });
      return mcpcore::tool_result::text("export started: " + id);  // the provisional answer
    });
// ---- end of snippet guide_detach
}

mcpcore::server make_server(work_queue& jobs) {
  mcpcore::server_builder b{{.name = "guide-calls", .version = "1.0.0"}};
  declare(b, jobs);
  auto s = b.build();
  REQUIRE_MESSAGE(s.has_value(), (s ? std::string{} : s.error().message()));
  return std::move(*s);
}

TEST_CASE("guide.md#progress: the documented tool sends progress and a log message on a session") {
  work_queue jobs;
  auto s = make_server(jobs);
  fx::connection conn;
  REQUIRE(conn.send(s, fx::initialize(1)).returned);
  auto a = conn.send(s, fx::call_tool(2, "import", R"({"count":3})", R"({"progressToken":"t"})"));
  CAPTURE(a.text);
  CHECK(fx::str(fx::at(a.result()["content"], 0)["text"]) == "imported 3 records");
  const auto progress = conn.sink.with_method("notifications/progress");
  REQUIRE(progress.size() == 3);
  CHECK(progress.back().find(R"("progressToken":"t","progress":3,"total":3)") != std::string::npos);
  CHECK(conn.sink.with_method("notifications/message").size() == 1);
}

TEST_CASE("guide.md#cancellation: the documented tool stops at once when the call is cancelled") {
  work_queue jobs;
  auto s = make_server(jobs);
  fx::connection conn;
  REQUIRE(conn.send(s, fx::initialize(1)).returned);
  const auto start = std::chrono::steady_clock::now();
  fx::answer a;
  std::thread call{[&] { a = conn.send(s, fx::call_tool(2, "wait", R"({"seconds":30})")); }};
  while (conn.client.active_calls() == 0 && std::chrono::steady_clock::now() - start < fx::patience) {
    std::this_thread::sleep_for(1ms);
  }
  conn.send(s, fx::cancel("2"));
  call.join();
  CHECK_FALSE(a.returned);  // a cancelled call is not answered
  CHECK(a.text.empty());
  CHECK(std::chrono::steady_clock::now() - start < 10s);
}

TEST_CASE("guide.md#requests-to-the-client: without a channel the documented tool reports the failure") {
  work_queue jobs;
  auto s = make_server(jobs);
  const mcpcore::principal who{.id = "guide-user"};
  auto a = fx::handle(s, fx::call_tool(1, "list_roots"), mcpcore::dispatch_context{who});
  CAPTURE(a.text);
  CHECK(a.result()["isError"].as_bool());
  CHECK(fx::str(fx::at(a.result()["content"], 0)["text"]).starts_with("could not ask the client: "));
}

TEST_CASE("guide.md#requests-to-the-client: the documented tool reads the client's roots on a session") {
  work_queue jobs;
  auto s = make_server(jobs);
  fx::connection conn;
  REQUIRE(conn.send(s, fx::initialize(1, "2025-11-25", R"({"roots":{}})")).returned);
  fx::answer a;
  std::thread call{[&] { a = conn.send(s, fx::call_tool(2, "list_roots")); }};
  const auto request = conn.sink.wait_for_method("roots/list");
  REQUIRE(request.has_value());
  const auto parsed = fx::parse(*request);
  const auto id = parsed.root["id"].to_int64();
  REQUIRE(id.has_value());
  conn.send(s, fx::client_result(*id, R"({"roots":[{"uri":"file:///work"}]})"));
  call.join();
  CAPTURE(a.text);
  CHECK(fx::str(fx::at(a.result()["content"], 0)["text"]) == "file:///work\n");
}

TEST_CASE("guide.md#input-requests: the documented tool refuses a client that cannot ask its user") {
  work_queue jobs;
  auto s = make_server(jobs);
  fx::connection conn;
  REQUIRE(conn.send(s, fx::initialize(1)).returned);  // no elicitation capability
  auto a = conn.send(s, fx::call_tool(2, "drop_table", R"({"table":"users"})"));
  CAPTURE(a.text);
  CHECK(a.result()["isError"].as_bool());
  CHECK(fx::str(fx::at(a.result()["content"], 0)["text"]) == "this tool needs a client that can ask its user");
}

TEST_CASE("guide.md#detached-work: the documented tool answers at once and its work reports later") {
  work_queue jobs;
  auto s = make_server(jobs);
  const mcpcore::principal who{.id = "guide-user"};
  auto a = fx::handle(s, fx::call_tool(1, "export"), mcpcore::dispatch_context{who});
  CAPTURE(a.text);
  CHECK(fx::str(fx::at(a.result()["content"], 0)["text"]) == "export started: export-42");
  REQUIRE(jobs.tasks.size() == 1);
  jobs.tasks.front()();  // unbound here (no session): every report is accepted and goes nowhere
}

}  // namespace guide_calls
