// SPDX-License-Identifier: Apache-2.0
// Concurrency test of the task engine (run under TSan by the tsan preset; docs/tasks.md#outcomes,
// #cancellation, #tasks-result): a task's own end races its cancellation, while `tasks/result`
// requests wait for it without a thread and `tasks/get` reads it. Every task ends exactly once, in
// one terminal status the store and the counters agree on, and every wait is answered exactly
// once, with the answer of that status.
#include <mcpcore/dispatch/tasks.hpp>

#include <doctest/doctest.h>

#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/operation.hpp>
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/governance/task.hpp>
#include <mcpcore/stores/memory_task_store.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <atomic>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

using namespace mcpcore;
using namespace std::chrono_literals;
namespace fx = server_fixture;

namespace {

/// Keeps the posted runs until the test starts them (on a thread of its choice).
class held_executor final : public background_executor {
 public:
  bool post(std::function<void()> work) noexcept override {
    try {
      std::lock_guard lock{mu_};
      queue_.push_back(std::move(work));
      return true;
    } catch (...) {
      return false;
    }
  }
  std::function<void()> take() {
    std::lock_guard lock{mu_};
    if (queue_.empty()) return {};
    auto w = std::move(queue_.front());
    queue_.pop_front();
    return w;
  }

 private:
  std::mutex mu_;
  std::deque<std::function<void()>> queue_;
};

/// Records the answers of one suspended `tasks/result`.
class counting_resumer final : public call_resumer {
 public:
  std::shared_ptr<void> suspend() noexcept override { return std::make_shared<int>(0); }
  bool post(std::function<void()> task) noexcept override {
    task();
    return true;
  }
  void finish(bool answered, std::string out) noexcept override {
    std::lock_guard lock{mu};
    ++finishes;
    was_answered = answered;
    text = std::move(out);
  }
  std::mutex mu;
  int finishes = 0;
  bool was_answered = false;
  std::string text;
};

std::string call(int id, std::string_view tool) {
  return fx::request(id, "tools/call", R"({"name":")" + std::string{tool} + R"(","arguments":{},"task":{}})");
}
std::string task_req(int id, std::string_view method, std::string_view task_id) {
  return fx::request(id, method, R"({"taskId":")" + std::string{task_id} + R"("})");
}

/// How long detached work waits for its stop before it ends on its own (far beyond a cancel's delivery).
constexpr auto stop_bound = 5s;

}  // namespace

TEST_SUITE("concurrency.tasks") {

TEST_CASE("tasks.md/outcomes: a task's end races its cancellation: exactly one terminal, every tasks/result wait answered once") {
  constexpr int rounds = 60;
  constexpr int waiters = 3;
  memory_task_store store;
  metrics_registry metrics{"t"};
  held_executor exec;
  std::mutex finishers_mu;
  std::vector<std::thread> finishers;  // the detached work's threads, joined each round
  server_builder b{server_info{.name = "race", .version = "1"}};
  b.tasks(store).metrics(metrics);
  b.tool("quick")
      .description("Answers at once.")
      .security("Thing", operation::read)
      .effect(tool_effect::read_only, true)
      .task_support(task_support::optional)
      .handler([](call_context&, const arguments&) { return tool_result::text("quick done"); });
  // Detaches and finishes from another thread: the detached work's end races the cancellation too.
  b.tool("detaching")
      .description("Finishes its task from a thread of its own.")
      .security("Thing", operation::read)
      .effect(tool_effect::read_only, true)
      .task_support(task_support::optional, task_start::on_detach)
      .handler([&finishers_mu, &finishers](call_context& ctx, const arguments&) {
        operation_handle op = detach(ctx, "race");
        std::thread t{[op]() mutable { (void)op.finish(tool_result::text("detached done")); }};
        std::lock_guard lock{finishers_mu};
        finishers.push_back(std::move(t));
        return tool_result::text("provisional");
      });
  server srv = fx::build(b);

  int completed = 0;
  int cancelled = 0;
  for (int round = 0; round < rounds; ++round) {
    const bool detaching = round % 3 == 2;
    principal who{.id = "p" + std::to_string(round % 7)};
    peer client;
    fx::recording_sink sink;
    const dispatch_context plain{who, &client, &sink, {}, nullptr, nullptr, nullptr, nullptr, &exec};
    const auto created = fx::handle(srv, call(1, detaching ? "detaching" : "quick"), plain);
    const std::string id = fx::str(created.result()["task"]["taskId"]);
    REQUIRE(is_task_id(id));
    // A wait answers through its resumer, or at once (a task already over answers directly).
    std::vector<std::unique_ptr<counting_resumer>> resumers;
    for (int w = 0; w < waiters; ++w) {
      resumers.push_back(std::make_unique<counting_resumer>());
      const dispatch_context ctx{who, &client, &sink, {}, nullptr, nullptr, nullptr, resumers.back().get(), &exec};
      auto direct = fx::handle(srv, task_req(10 + w, "tasks/result", id), ctx);
      if (direct.returned) {
        std::lock_guard lock{resumers.back()->mu};
        ++resumers.back()->finishes;
        resumers.back()->was_answered = true;
        resumers.back()->text = direct.text;
      }
    }
    std::function<void()> run = exec.take();
    std::barrier start{3};
    std::thread runner{[&] {
      start.arrive_and_wait();
      if (run) run();
    }};
    std::thread canceller{[&] {
      start.arrive_and_wait();
      (void)fx::handle(srv, task_req(2, "tasks/cancel", id), plain);
    }};
    std::thread reader{[&] {
      start.arrive_and_wait();
      (void)fx::handle(srv, task_req(3, "tasks/get", id), plain);
    }};
    runner.join();
    canceller.join();
    reader.join();
    {
      std::lock_guard lock{finishers_mu};
      for (auto& t : finishers) t.join();
      finishers.clear();
    }
    REQUIRE(srv.running_tasks() == 0);
    const auto got = fx::handle(srv, task_req(4, "tasks/get", id), plain);
    const std::string status = fx::str(got.result()["status"]);
    CAPTURE(status);
    REQUIRE((status == "completed" || status == "cancelled"));
    (status == "completed" ? completed : cancelled) += 1;
    for (const auto& r : resumers) {
      std::lock_guard lock{r->mu};
      CHECK(r->finishes == 1);
      CHECK(r->was_answered);
      const auto a = fx::parse(r->text);
      if (status == "completed") {
        CHECK(fx::str(fx::at(a.root["result"]["content"], 0)["text"]).ends_with("done"));
      } else {
        CHECK(a.root["error"]["code"].to_int64() == std::optional<std::int64_t>{-32602});
      }
    }
  }
  CHECK(completed + cancelled == rounds);
  CHECK(fx::series_value(metrics, R"(t_mcp_tasks_finished_total{status="completed"})") == completed);
  CHECK(fx::series_value(metrics, R"(t_mcp_tasks_finished_total{status="cancelled"})") == cancelled);
  CHECK(fx::series_value(metrics, "t_mcp_tasks_running") == 0);
}

TEST_CASE("tasks.md/detached-work: tasks/cancel racing the detached work's own end: the stop reaches the work, one terminal") {
  constexpr int rounds = 24;
  memory_task_store store;
  task_options o;
  o.max_per_principal = 64;
  std::mutex workers_mu;
  std::vector<std::thread> workers;
  std::atomic<int> stopped{0};  // workers whose wait ended by the stop
  server_builder b{server_info{.name = "race", .version = "1"}};
  b.tasks(store, o);
  // Detaches; its worker ends at once on even rounds (racing the cancel), else waits for its stop.
  b.tool("work")
      .description("Detached work that watches its operation's stop token.")
      .input_schema(R"({"type":"object","properties":{"quick":{"type":"boolean"}}})")
      .security("Thing", operation::read)
      .effect(tool_effect::read_only, true)
      .task_support(task_support::optional, task_start::on_detach)
      .handler([&](call_context& ctx, const arguments& args) {
        const bool quick = args["quick"].is_bool() && args["quick"].as_bool();
        operation_handle op = detach(ctx, "race");
        std::thread t{[op, quick, &stopped]() mutable {
          if (!quick) {
            std::mutex m;
            std::condition_variable_any cv;
            std::unique_lock lock{m};
            (void)cv.wait_for(lock, op.stop_token(), stop_bound, [] { return false; });
            if (op.stop_token().stop_requested()) ++stopped;
          }
          (void)op.finish(tool_result::text("work done"));
        }};
        std::lock_guard lock{workers_mu};
        workers.push_back(std::move(t));
        return tool_result::text("provisional");
      });
  server srv = fx::build(b);
  principal who{.id = "p"};
  peer client;
  fx::recording_sink sink;
  const dispatch_context ctx{who, &client, &sink, {}, nullptr, nullptr, nullptr, nullptr, nullptr};
  int waited = 0;
  for (int round = 0; round < rounds; ++round) {
    const bool quick = round % 2 == 0;
    const auto created = fx::handle(
        srv, fx::request(1, "tools/call", std::string{R"({"name":"work","arguments":{"quick":)"} +
                                              (quick ? "true" : "false") + R"(},"task":{}})"),
        ctx);
    const std::string id = fx::str(created.result()["task"]["taskId"]);
    REQUIRE(is_task_id(id));
    const auto started = std::chrono::steady_clock::now();
    std::thread canceller{[&] { (void)fx::handle(srv, task_req(2, "tasks/cancel", id), ctx); }};
    canceller.join();
    {
      std::lock_guard lock{workers_mu};
      for (auto& t : workers) t.join();
      workers.clear();
    }
    const auto took = std::chrono::steady_clock::now() - started;
    REQUIRE(srv.running_tasks() == 0);
    const std::string status = fx::str(fx::handle(srv, task_req(3, "tasks/get", id), ctx).result()["status"]);
    CAPTURE(status);
    CHECK((status == "completed" || status == "cancelled"));
    if (!quick) {
      ++waited;
      CHECK(status == "cancelled");  // the worker could not end before it was stopped
      CHECK(took < stop_bound);      // it ended because it was told, not at its bound
    }
  }
  CHECK(stopped == waited);
}

TEST_CASE("tasks.md/shutdown: cancel_tasks racing tasks that end and tasks/result waits ending leaves nothing behind") {
  memory_task_store store;
  held_executor exec;
  server_builder b{server_info{.name = "race", .version = "1"}};
  task_options o;
  o.max_per_principal = 64;
  b.tasks(store, o);
  b.tool("wait")
      .description("Waits for its stop token (at most 2 s).")
      .security("Thing", operation::read)
      .effect(tool_effect::read_only, true)
      .task_support(task_support::optional)
      .handler([](call_context& ctx, const arguments&) {
        std::mutex m;
        std::condition_variable_any cv;
        std::unique_lock lock{m};
        (void)cv.wait_for(lock, ctx.stop_token(), 2s, [] { return false; });
        return tool_result::text("waited");
      });
  server srv = fx::build(b);
  principal who{.id = "p"};
  peer client;
  fx::recording_sink sink;
  const dispatch_context ctx{who, &client, &sink, {}, nullptr, nullptr, nullptr, nullptr, &exec};
  constexpr int count = 16;
  std::vector<std::unique_ptr<counting_resumer>> resumers;
  std::vector<std::thread> runs;
  for (int i = 0; i < count; ++i) {
    const auto created = fx::handle(srv, call(100 + i, "wait"), ctx);
    const std::string id = fx::str(created.result()["task"]["taskId"]);
    REQUIRE(is_task_id(id));
    resumers.push_back(std::make_unique<counting_resumer>());
    const dispatch_context wctx{who, &client, &sink, {}, nullptr, nullptr, nullptr, resumers.back().get(), &exec};
    (void)fx::handle(srv, task_req(200 + i, "tasks/result", id), wctx);
    runs.emplace_back(exec.take());
  }
  std::thread stopper{[&] { srv.cancel_tasks(); }};
  stopper.join();
  for (auto& t : runs) t.join();
  CHECK(srv.running_tasks() == 0);
  for (const auto& r : resumers) {
    std::lock_guard lock{r->mu};
    CHECK(r->finishes == 1);
  }
}

}  // TEST_SUITE
