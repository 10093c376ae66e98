// SPDX-License-Identifier: Apache-2.0
// Concurrency tests of the run-time tables (docs/server.md#tables-that-change): registrations and
// removals racing calls, list requests, reads and event subscribers, run under TSan by the tsan
// preset.
#include <mcpcore/dispatch/server.hpp>

#include <doctest/doctest.h>

#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/wire/json.hpp>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace mcpcore;
namespace fx = server_fixture;

namespace {

void declare(tool_builder& t, std::string text) {
  t.description("Answers.")
      .security("Thing", operation::read)
      .effect(tool_effect::read_only, true)
      .handler([text = std::move(text)](call_context&, const arguments&) { return tool_result::text(text); });
}

}  // namespace

TEST_SUITE("concurrency") {
  TEST_CASE("server.md/tables-that-change: registrations and removals race calls, lists, reads and subscribers") {
    server_builder b{{.name = "race", .version = "1"}, {.page_size = 3, .list_changed = true}};
    tool_builder stable = b.tool("stable");
    declare(stable, "stable");
    auto srv = fx::build(b);
    std::atomic<int> events{0};
    auto sub = srv.subscribe([&](const server_event&) { events.fetch_add(1, std::memory_order_relaxed); });
    std::atomic<bool> stop{false};
    std::atomic<int> bad{0};

    std::vector<std::thread> writers;
    for (int w = 0; w < 2; ++w) {
      writers.emplace_back([&, w] {
        for (int i = 0; i < 200; ++i) {
          const std::string name = "t" + std::to_string((i + w) % 5);
          if (i % 3 == 2) {
            (void)srv.remove_tool(name);
          } else if (!srv.add_tool(name, [&](tool_builder& t) { declare(t, name); }).has_value()) {
            bad.fetch_add(1);
          }
          const std::string uri = "res://" + std::to_string(i % 4);
          if (i % 2 == 0) {
            (void)srv.add_resource(uri, [](resource_builder& r) {
              r.name("r").handler([](call_context&, std::string_view u, const uri_variables&) {
                return std::optional<resource_result>{resource_result{}.add_text(std::string{u}, "text/plain", "x")};
              });
            });
          } else {
            (void)srv.remove_resource(uri);
          }
          (void)srv.set_tool_enabled("t1", i % 2 == 0);
        }
      });
    }
    std::vector<std::thread> readers;
    for (int r = 0; r < 3; ++r) {
      readers.emplace_back([&, r] {
        fx::connection c;
        std::int64_t id = 0;
        while (!stop.load()) {
          const auto call = c.send(srv, fx::call_tool(++id, "t" + std::to_string(r % 5)));
          // Either the tool answers its own name or it is unknown at that moment.
          if (call.code() == 0) {
            if (fx::str(fx::at(call.result()["content"], 0)["text"]) != "t" + std::to_string(r % 5)) bad.fetch_add(1);
          } else if (call.code() != -32602) {
            bad.fetch_add(1);
          }
          const auto list = c.send(srv, fx::request(++id, "tools/list"));
          if (!list.result()["tools"].is_array()) bad.fetch_add(1);
          const auto next = list.result()["nextCursor"];
          if (next.is_string()) {
            // Valid, or refused as stale after a change in between: never anything else.
            const auto page = c.send(srv, fx::request(++id, "tools/list", R"({"cursor":")" + fx::str(next) + R"("})"));
            if (page.code() != 0 && page.code() != -32602) bad.fetch_add(1);
          }
          const auto read = c.send(srv, fx::request(++id, "resources/read", R"({"uri":"res://0"})"));
          if (read.code() != 0 && read.code() != -32002) bad.fetch_add(1);
          (void)c.send(srv, fx::initialize(++id));
          (void)srv.publishes(server_event_kind::tools_list_changed);
          (void)srv.param_headers("t0");
        }
      });
    }
    for (auto& t : writers) t.join();
    stop.store(true);
    for (auto& t : readers) t.join();
    CHECK(bad.load() == 0);
    CHECK(events.load() > 0);
    fx::connection c;
    CHECK(fx::str(fx::at(c.send(srv, fx::call_tool(1, "stable")).result()["content"], 0)["text"]) == "stable");
  }
}
