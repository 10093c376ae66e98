// SPDX-License-Identifier: Apache-2.0
// Concurrency tests of the dispatch core (run under TSan by the tsan preset): concurrent
// tools/call on one server and one peer, with live kill-switch flips and cancellations
// (docs/design.md#json-rpc, #the-toolscall-pipeline, docs/security.md#the-gate-order,
// docs/sessions.md#lock-discipline; MCP 2025-11-25 cancellation).
#include <mcpcore/dispatch/server.hpp>

#include <doctest/doctest.h>

#include "support/server_fixture.hpp"

#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/metrics.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace mcpcore;
using namespace server_fixture;

namespace {

constexpr int threads = 4;
constexpr int calls_per_thread = 150;
constexpr int total_calls = threads * calls_per_thread;

// A read tool and a write tool that log, report progress and wait a little (so that
// cancellations find them running), leaving early when cancelled.
server make_server(memory_audit_sink& audit, metrics_registry& metrics) {
  server_builder b{{.name = "concurrency", .version = "1"}};
  auto work = [](call_context& ctx, const arguments& args) {
    ctx.log(log_level::warning, "working");
    ctx.progress(1);
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock lock{m};
    const auto wait = std::chrono::microseconds{args["us"].to_int64().value_or(0)};
    (void)cv.wait_for(lock, ctx.stop_token(), wait, [] { return false; });
    ctx.progress(2);
    return tool_result::text(ctx.stop_requested() ? "stopped" : "ok");
  };
  b.tool("read")
      .description("Reads.")
      .input_schema(R"({"type":"object","properties":{"us":{"type":"integer","minimum":0}},"additionalProperties":false})")
      .security("Thing", operation::read)
      .effect(tool_effect::read_only, true)
      .handler(work);
  b.tool("write")
      .description("Writes.")
      .input_schema(R"({"type":"object","properties":{"us":{"type":"integer","minimum":0}},"additionalProperties":false})")
      .security("Thing", operation::write)
      .effect(tool_effect::additive, false)
      .handler(work);
  b.audit(audit).metrics(metrics);
  return build(b);
}

std::string id_json(int id) {
  // odd ids travel as strings, even ids as integers: both kinds share the in-flight table
  return id % 2 == 0 ? std::to_string(id) : "\"" + std::to_string(id) + "\"";
}

}  // namespace

TEST_SUITE("concurrency") {
  TEST_CASE("dispatch core: 4 threads call tools on one peer while switches flip and calls are cancelled") {
    memory_audit_sink audit{8192};
    metrics_registry metrics{"t"};
    auto srv = make_server(audit, metrics);
    connection c;
    c.send(srv, initialize(0));

    std::array<std::atomic<bool>, total_calls> targeted{};
    std::array<std::atomic<int>, total_calls> outcome{};  // 0 unset, 1 answered, 2 no answer
    std::atomic<int> finished_threads{0};
    std::atomic<int> cancels_sent{0};
    std::atomic<int> failures{0};
    std::array<std::atomic<int>, threads> current{};  // the id each caller is serving, -1 between calls
    for (auto& cur : current) cur = -1;

    std::vector<std::thread> callers;
    for (int t = 0; t < threads; ++t) {
      callers.emplace_back([&, t] {
        for (int i = 0; i < calls_per_thread; ++i) {
          const int id = t * calls_per_thread + i;
          const char* tool = (i % 3 == 0) ? "write" : "read";
          const std::string args = R"({"us":)" + std::to_string((i % 5) * 500) + "}";
          const std::string meta = R"({"progressToken":)" + std::to_string(id) + "}";
          current[static_cast<std::size_t>(t)] = id;
          const auto a = c.send(srv, call_tool(id_json(id), tool, args, meta));
          current[static_cast<std::size_t>(t)] = -1;
          if (a.returned) {
            outcome[static_cast<std::size_t>(id)] = 1;
            // exactly one response: one JSON object (parsed whole), for this id
            const bool ok = a.root.is_object() && to_json(a.root["id"]) == id_json(id) &&
                            (a.root["result"].exists() != a.root["error"].exists());
            if (!ok) ++failures;
            const auto code = a.code();
            if (code != 0 && code != -32005 && code != -32004) ++failures;
          } else {
            outcome[static_cast<std::size_t>(id)] = 2;
            if (!a.text.empty()) ++failures;
          }
        }
        ++finished_threads;
      });
    }

    std::thread flipper{[&] {
      std::minstd_rand rng{7};
      while (finished_threads.load() < threads) {
        srv.switches().set_disabled(rng() % 4 == 0);
        srv.switches().set_read_only(rng() % 2 == 0);
        std::this_thread::sleep_for(std::chrono::microseconds{100});
      }
      srv.switches().set_disabled(false);
      srv.switches().set_read_only(false);
    }};

    std::thread canceller{[&] {
      std::minstd_rand rng{11};
      while (finished_threads.load() < threads) {
        // mostly calls in flight (accepted), sometimes any id (often a noop)
        int id = current[rng() % threads].load();
        if (id < 0 || rng() % 4 == 0) id = static_cast<int>(rng() % total_calls);
        if (!targeted[static_cast<std::size_t>(id)].exchange(true)) {
          (void)c.send(srv, cancel(id_json(id)));
          ++cancels_sent;
        }
        std::this_thread::sleep_for(std::chrono::microseconds{150});
      }
    }};

    for (auto& t : callers) t.join();
    flipper.join();
    canceller.join();

    CHECK(failures == 0);
    int unanswered = 0;
    for (int id = 0; id < total_calls; ++id) {
      CAPTURE(id);
      const int o = outcome[static_cast<std::size_t>(id)].load();
      CHECK(o != 0);
      if (o == 2) {
        ++unanswered;
        CHECK(targeted[static_cast<std::size_t>(id)].load());  // only a cancelled call goes unanswered
      }
    }
    CHECK(c.client.active_calls() == 0);

    const std::string text = exposition(metrics);
    long long cancelled = 0;
    for (const auto* tool : {"read", "write"}) {
      cancelled += series_value(text, std::string{R"(t_mcp_tool_calls_total{result="cancelled",tool=")"} + tool + R"("})");
    }
    CHECK(cancelled == unanswered);
    CHECK(series_value(text, R"(t_mcp_cancel_notifications_total{outcome="accepted"})") +
              series_value(text, R"(t_mcp_cancel_notifications_total{outcome="noop"})") ==
          cancels_sent.load());
    CHECK(series_value(text, R"(t_mcp_cancel_notifications_total{outcome="accepted"})") >= unanswered);
    CHECK(series_value(text, R"(t_mcp_requests_total{method="tools/call"})") == total_calls);

    // every in-call message is one well-formed notification
    for (const auto& m : c.sink.messages()) {
      mcpcore::json::document d;
      auto r = d.parse(m);
      REQUIRE(r.has_value());
      CHECK((*r)["method"].is_string());
      CHECK_FALSE((*r)["id"].exists());
    }
    MESSAGE("calls: " << total_calls << ", unanswered (cancelled): " << unanswered << ", cancels sent: " << cancels_sent.load());
  }

  TEST_CASE("dispatch core: concurrent server-to-client requests on one peer are each matched to their caller") {
    server_builder b{{.name = "concurrency", .version = "1"}};
    b.tool("ask")
        .description("Asks the client.")
        .input_schema(R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false})")
        .security("Thing", operation::read)
        .effect(tool_effect::read_only, true)
        .handler([](call_context& ctx, const arguments& args) {
          auto r = ctx.request("ping", {}, std::chrono::milliseconds{5000});
          if (!r) return tool_result::error(r.error().message());
          return tool_result::text(to_json(r->value()["echo"]) + "/" + std::to_string(*args["n"].to_int64()));
        });
    auto srv = build(b);
    connection c;
    constexpr int asks = 32;
    std::atomic<int> failures{0};
    std::atomic<bool> done{false};
    // the "client": answers every ping with its own id
    std::thread client{[&] {
      std::size_t seen = 0;
      while (!done.load()) {
        const auto msgs = c.sink.messages();
        for (; seen < msgs.size(); ++seen) {
          mcpcore::json::document d;
          auto r = d.parse(msgs[seen]);
          if (!r || !(*r)["id"].is_integer()) continue;
          const auto rid = *(*r)["id"].to_int64();
          (void)c.send(srv, client_result(rid, R"({"echo":)" + std::to_string(rid) + "}"));
        }
        std::this_thread::sleep_for(std::chrono::microseconds{200});
      }
    }};
    std::vector<std::thread> callers;
    std::mutex mu;
    std::vector<std::string> texts;
    for (int t = 0; t < threads; ++t) {
      callers.emplace_back([&, t] {
        for (int i = 0; i < asks / threads; ++i) {
          const int n = t * 100 + i;
          const auto a = c.send(srv, call_tool(n, "ask", R"({"n":)" + std::to_string(n) + "}"));
          if (!a.returned || !a.result().exists() || a.result()["isError"].exists()) ++failures;
          std::lock_guard lock{mu};
          texts.push_back(str(at(a.result()["content"], 0)["text"]));
        }
      });
    }
    for (auto& t : callers) t.join();
    done = true;
    client.join();
    CHECK(failures == 0);
    REQUIRE(texts.size() == asks);
    // each call got the answer to its own request: request ids are distinct across the calls
    std::vector<std::string> echoed;
    for (const auto& t : texts) echoed.push_back(t.substr(0, t.find('/')));
    std::sort(echoed.begin(), echoed.end());
    CHECK(std::adjacent_find(echoed.begin(), echoed.end()) == echoed.end());
  }
}
