// SPDX-License-Identifier: Apache-2.0
// Tasks through server::handle, in both eras (docs/tasks.md): the negotiation, the creation and its
// wire shape, the handler's run on the background executor, the outcomes, tasks/get, tasks/result
// (waiting for the terminal), tasks/list, tasks/cancel, tasks/update with the 2026-07-28 input
// rounds, the 2025-11-25 input requests to the client on the session, tools that become tasks when
// they detach, visibility to the owner only, expiry, the caps, the restart, the audit rows and the
// metrics.
#include <mcpcore/dispatch/tasks.hpp>

#include <doctest/doctest.h>

#include "support/process.hpp"
#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/operation.hpp>
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/governance/task.hpp>
#include <mcpcore/stores/memory_task_store.hpp>
#include <mcpcore/stores/sqlite_task_store.hpp>
#include <mcpcore/wire/era.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

using namespace mcpcore;
using namespace std::chrono_literals;
namespace fx = server_fixture;

namespace tasks_test {

/// A `background_executor` the test drives: work waits until `run_all` (on the test's thread);
/// `full` refuses every post.
class manual_executor final : public background_executor {
 public:
  bool post(std::function<void()> work) noexcept override {
    try {
      std::lock_guard lock{mu_};
      if (full) return false;
      queue_.push_back(std::move(work));
      return true;
    } catch (...) {
      return false;
    }
  }
  /// Runs the work posted so far and what it posts meanwhile; how many ran.
  int run_all() {
    int n = 0;
    for (;;) {
      std::function<void()> w;
      {
        std::lock_guard lock{mu_};
        if (queue_.empty()) return n;
        w = std::move(queue_.front());
        queue_.pop_front();
      }
      w();
      ++n;
    }
  }
  [[nodiscard]] std::size_t queued() const {
    std::lock_guard lock{mu_};
    return queue_.size();
  }
  bool full = false;

 private:
  mutable std::mutex mu_;
  std::deque<std::function<void()>> queue_;
};

/// A `background_executor` running each work on a thread of its own (joined at the end).
class thread_executor final : public background_executor {
 public:
  ~thread_executor() { join(); }
  bool post(std::function<void()> work) noexcept override {
    try {
      std::lock_guard lock{mu_};
      threads_.emplace_back(std::move(work));
      return true;
    } catch (...) {
      return false;
    }
  }
  void join() {
    std::vector<std::thread> ts;
    {
      std::lock_guard lock{mu_};
      ts.swap(threads_);
    }
    for (auto& t : ts) t.join();
  }

 private:
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

/// A call_resumer that records the suspended call's answer.
class test_resumer final : public call_resumer {
 public:
  std::shared_ptr<void> suspend() noexcept override {
    suspended = true;
    return std::make_shared<int>(0);
  }
  bool post(std::function<void()> task) noexcept override {
    task();
    return true;
  }
  void finish(bool answered, std::string out) noexcept override {
    {
      std::lock_guard lock{mu};
      ++finishes;
      was_answered = answered;
      text = std::move(out);
    }
    done.set();
  }
  bool suspended = false;
  std::mutex mu;
  int finishes = 0;
  bool was_answered = false;
  std::string text;
  fx::flag done;
};

constexpr std::string_view ext_caps = R"({"extensions":{"io.modelcontextprotocol/tasks":{}},"elicitation":{}})";
constexpr std::string_view form = R"({"type":"object","properties":{"name":{"type":"string"}}})";

/// The server of the tests: its tools (every one read-only on "Thing"), a manual clock, a memory
/// store, an audit sink and a metrics registry.
struct task_server {
  manual_clock clk;
  memory_task_store store;
  memory_audit_sink audit;
  metrics_registry metrics{"t"};
  fx::gate gate;                  // `blocking` waits on it
  std::atomic<int> runs{0};       // handler runs of every tool
  std::atomic<bool> saw_stop{false};
  std::shared_ptr<std::string> big = std::make_shared<std::string>(2048, 'x');
  std::mutex kept_mu;
  std::optional<operation_handle> kept;  // `keep` detaches and leaves its operation here
  server srv;

  explicit task_server(task_options o = {}, bool tasks = true) : srv(make(std::move(o), tasks)) {}

  template <class H>
  static tool_builder add(server_builder& b, const std::string& name, H h) {
    auto t = b.tool(name);
    t.description("Test tool " + name + ".")
        .input_schema(R"({"type":"object","properties":{"n":{"type":"integer"}}})")
        .security("Thing", operation::read)
        .effect(tool_effect::read_only, true)
        .handler(std::move(h));
    return t;
  }

  server make(task_options o, bool tasks) {
    server_options so;
    so.page_size = 2;
    server_builder b{server_info{.name = "tasks-test", .version = "1.0.0"}, so};
    b.clock(clock_ref<manual_clock>{clk}).audit(audit).metrics(metrics);
    if (tasks) b.tasks(store, o);
    add(b, "plain", [this](call_context&, const arguments&) {
      ++runs;
      return tool_result::text("plain done");
    });
    add(b, "echo", [this](call_context& ctx, const arguments& a) {
      ++runs;
      (void)ctx.progress(1, 2, "half");
      (void)ctx.progress(2, 2, "all");
      return tool_result::text("echo " + std::to_string(a["n"].to_int64().value_or(0)));
    }).task_support(task_support::optional);
    add(b, "must", [this](call_context&, const arguments&) {
      ++runs;
      return tool_result::text("must done");
    }).task_support(task_support::required);
    add(b, "fails", [this](call_context&, const arguments&) {
      ++runs;
      return tool_result::error("it failed");
    }).task_support(task_support::optional);
    add(b, "throws", [this](call_context&, const arguments&) -> tool_result {
      ++runs;
      throw std::runtime_error("boom");
    }).task_support(task_support::optional);
    add(b, "blocking", [this](call_context& ctx, const arguments&) {
      ++runs;
      gate.arrive();
      if (!gate.block(ctx.stop_token())) {
        saw_stop = true;
        return tool_result::text("stopped (discarded)");
      }
      return tool_result::text("opened");
    }).task_support(task_support::optional);
    add(b, "large", [this](call_context&, const arguments&) { return tool_result::text(*big); })
        .task_support(task_support::optional);
    add(b, "shaped", [](call_context&, const arguments&) { return tool_result::structured(R"({"n":"not a number"})"); })
        .output_schema(R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]})")
        .task_support(task_support::optional);
    add(b, "ask", [this](call_context& ctx, const arguments&) {
      ++runs;
      const auto a = ctx.input("a");
      const auto bb = ctx.input("b");
      if (!a.exists() || !bb.exists()) {
        input_required ir;
        if (!a.exists()) ir.ask("a", input_request::elicit("A?", form));
        if (!bb.exists()) ir.ask("b", input_request::elicit("B?", form));
        return tool_result::need_input(std::move(ir).state("st"));
      }
      return tool_result::text("a=" + fx::str(a["content"]["name"]) + " b=" + fx::str(bb["content"]["name"]) +
                               " state=" + std::string{ctx.round_state()});
    }).task_support(task_support::optional);
    add(b, "later", [this](call_context& ctx, const arguments& a) {
      ++runs;
      const auto n = a["n"].to_int64().value_or(0);
      if (n == 0) return tool_result::text("no detach");
      operation_handle op = detach(ctx, "exec-" + std::to_string(n));
      if (n == 1) (void)op.finish(tool_result::text("finished inline"));
      if (n == 2) {
        std::thread{[op]() mutable { (void)op.finish(tool_result::error("finished later")); }}.join();
      }
      return tool_result::text("provisional");
    }).task_support(task_support::optional, task_start::on_detach);
    add(b, "keep", [this](call_context& ctx, const arguments&) {
      operation_handle op = detach(ctx, "kept");
      std::lock_guard lock{kept_mu};
      kept.emplace(std::move(op));
      return tool_result::text("provisional");
    }).task_support(task_support::optional, task_start::on_detach);
    return fx::build(b);
  }
};

/// A 2025-11-25 client: its peer, its in-call sink, its session channel, an executor.
struct client_2025 {
  principal caller;
  std::shared_ptr<peer> session = std::make_shared<peer>();  // the session's peer, as a transport holds it
  peer& client = *session;
  fx::recording_sink sink;
  std::shared_ptr<fx::recording_sink> channel = std::make_shared<fx::recording_sink>();
  background_executor* exec = nullptr;
  call_resumer* resumer = nullptr;

  explicit client_2025(background_executor* e, std::string who = "alice") : caller{.id = std::move(who)}, exec(e) {}
  [[nodiscard]] dispatch_context ctx() {
    return {caller, &client, &sink, {}, nullptr, nullptr, nullptr, resumer, exec, channel, session};
  }
  fx::answer send(server& s, std::string_view text) { return fx::handle(s, text, ctx()); }
  /// `initialize` declaring `caps`, then `notifications/initialized`.
  void initialize(server& s, std::string_view caps) {
    REQUIRE(send(s, fx::initialize(100, "2025-11-25", caps)).result()["protocolVersion"].is_string());
    (void)send(s, fx::notification("notifications/initialized"));
  }
};

/// Sends a 2026-07-28 message as `who` (its envelope read from the message).
fx::answer send_2026(server& s, std::string_view text, background_executor* exec, std::string_view who = "alice",
                     dispatch_report* report = nullptr) {
  json::document doc;
  auto msg = parse_message(doc, text);
  REQUIRE_MESSAGE(msg.has_value(), "the test sent an invalid message: " << text);
  auto env = read_envelope(*msg);
  REQUIRE_MESSAGE(env.has_value(), "the test sent a refused envelope: " << text);
  principal p;
  p.id = std::string{who};
  const dispatch_context ctx{p, nullptr, nullptr, {}, nullptr, &*env, report, nullptr, exec};
  return fx::handle(s, text, ctx);
}

/// The `_meta` envelope declaring `caps`.
std::string envelope(std::string_view caps) {
  return std::string{R"({"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"} +
         R"("io.modelcontextprotocol/clientCapabilities":)" + std::string{caps} + "}";
}
/// A 2026-07-28 request: `params_members` (without braces) plus the envelope.
std::string req_2026(int id, std::string_view method, std::string_view params_members,
                     std::string_view caps = ext_caps) {
  std::string p = "{";
  p += params_members;
  if (!params_members.empty()) p += ',';
  p += R"("_meta":)" + envelope(caps) + "}";
  return fx::request(id, method, p);
}
std::string call_2026(int id, std::string_view tool, std::string_view args = "{}", std::string_view caps = ext_caps,
                      std::string_view extra = {}) {
  std::string m = R"("name":")" + std::string{tool} + R"(","arguments":)" + std::string{args};
  if (!extra.empty()) m += "," + std::string{extra};
  return req_2026(id, "tools/call", m, caps);
}
/// A 2025-11-25 task-augmented tools/call (`task_json` empty: none).
std::string call_2025(int id, std::string_view tool, std::string_view task_json = "{}", std::string_view args = "{}",
                      std::string_view meta = {}) {
  std::string p = R"({"name":")" + std::string{tool} + R"(","arguments":)" + std::string{args};
  if (!task_json.empty()) p += R"(,"task":)" + std::string{task_json};
  if (!meta.empty()) p += R"(,"_meta":)" + std::string{meta};
  p += "}";
  return fx::request(id, "tools/call", p);
}
std::string task_req(int id, std::string_view method, std::string_view task_id) {
  return fx::request(id, method, R"({"taskId":")" + std::string{task_id} + R"("})");
}
std::string task_req_2026(int id, std::string_view method, std::string_view task_id, std::string_view caps = ext_caps,
                          std::string_view extra = {}) {
  std::string m = R"("taskId":")" + std::string{task_id} + '"';
  if (!extra.empty()) m += "," + std::string{extra};
  return req_2026(id, method, m, caps);
}

/// The task id of a 2025 CreateTaskResult (checked for its shape).
std::string task_id_2025(const fx::answer& a) {
  CAPTURE(a.text);
  const std::string id = fx::str(a.result()["task"]["taskId"]);
  REQUIRE(is_task_id(id));
  return id;
}
std::string task_id_2026(const fx::answer& a) {
  CAPTURE(a.text);
  REQUIRE(fx::str(a.result()["resultType"]) == "task");
  const std::string id = fx::str(a.result()["taskId"]);
  REQUIRE(is_task_id(id));
  return id;
}

/// Whether `s` is an RFC 3339 UTC time with milliseconds.
bool is_iso_ms(std::string_view s) {
  return s.size() == 24 && s[4] == '-' && s[10] == 'T' && s[19] == '.' && s[23] == 'Z';
}

std::vector<audit_entry> rows_of(const memory_audit_sink& a, std::string_view action) {
  std::vector<audit_entry> out;
  for (auto& e : a.entries()) {
    if (e.action == action) out.push_back(e);
  }
  return out;
}

}  // namespace tasks_test

using namespace tasks_test;

TEST_SUITE("tasks") {

// ---- capabilities and listing ---------------------------------------------------------------------

TEST_CASE("tasks.md/capabilities: 2025 initialize advertises tasks, tools/list shows execution.taskSupport") {
  task_server t;
  client_2025 c{nullptr};
  const auto init = c.send(t.srv, fx::initialize(1));
  CAPTURE(init.text);
  CHECK(fx::to_json(init.result()["capabilities"]["tasks"]) ==
        R"({"list":{},"cancel":{},"requests":{"tools":{"call":{}}}})");
  const auto list = c.send(t.srv, fx::request(2, "tools/list", "{}"));
  std::string seen;
  for (std::string cursor;;) {
    const auto page = c.send(t.srv, fx::request(3, "tools/list", cursor.empty() ? "{}" : R"({"cursor":")" + cursor + R"("})"));
    for (const auto tool : page.result()["tools"].elements()) {
      seen += fx::str(tool["name"]) + "=" +
              (tool["execution"].exists() ? fx::str(tool["execution"]["taskSupport"]) : std::string{"-"}) + " ";
    }
    if (!page.result()["nextCursor"].is_string()) break;
    cursor = fx::str(page.result()["nextCursor"]);
  }
  CHECK(seen ==
        "plain=- echo=optional must=required fails=optional throws=optional blocking=optional large=optional "
        "shaped=optional ask=optional later=optional keep=optional ");
  (void)list;
}

TEST_CASE("tasks.md/capabilities: without server_builder::tasks nothing is advertised and params.task is ignored") {
  task_server t{{}, false};
  manual_executor exec;
  client_2025 c{&exec};
  const auto init = c.send(t.srv, fx::initialize(1));
  CHECK_FALSE(init.result()["capabilities"]["tasks"].exists());
  const auto list = c.send(t.srv, fx::request(2, "tools/list", "{}"));
  CHECK(list.text.find("execution") == std::string::npos);
  // MCP: a receiver without the capability processes the request normally.
  const auto r = c.send(t.srv, call_2025(3, "echo", R"({"ttl":60000})", R"({"n":4})"));
  CAPTURE(r.text);
  CHECK(fx::str(fx::at(r.result()["content"], 0)["text"]) == "echo 4");
  CHECK_FALSE(r.result()["task"].exists());
  CHECK(exec.queued() == 0);
  CHECK(c.send(t.srv, task_req(4, "tasks/get", std::string(32, 'a'))).code() == -32601);
  CHECK(c.send(t.srv, task_req(5, "tasks/list", "")).code() == -32601);
  const auto d = send_2026(t.srv, req_2026(6, "server/discover", ""), nullptr);
  CHECK_FALSE(d.result()["capabilities"]["extensions"].exists());
  CHECK(send_2026(t.srv, task_req_2026(7, "tasks/get", std::string(32, 'a')), nullptr).code() == -32601);
}

TEST_CASE("tasks.md/capabilities: 2026 server/discover advertises the extension, never capabilities.tasks") {
  task_server t;
  const auto d = send_2026(t.srv, req_2026(1, "server/discover", ""), nullptr);
  CAPTURE(d.text);
  CHECK(fx::to_json(d.result()["capabilities"]["extensions"]) == R"({"io.modelcontextprotocol/tasks":{}})");
  CHECK_FALSE(d.result()["capabilities"]["tasks"].exists());
}

// ---- 2025-11-25 ------------------------------------------------------------------------------------

TEST_CASE("tasks.md/the-wire: a 2025 task-augmented call answers CreateTaskResult and the handler runs on the executor") {
  task_server t;
  manual_executor exec;
  client_2025 c{&exec};
  const auto r = c.send(t.srv, call_2025(1, "echo", R"({"ttl":60000})", R"({"n":7})"));
  const std::string id = task_id_2025(r);
  const auto task = r.result()["task"];
  CHECK(fx::str(task["status"]) == "working");
  CHECK(task["ttl"].to_int64() == std::optional<std::int64_t>{60000});
  CHECK(task["pollInterval"].to_int64() == std::optional<std::int64_t>{1000});
  CHECK(is_iso_ms(fx::str(task["createdAt"])));
  CHECK(fx::str(task["createdAt"]) == "2026-01-01T00:00:00.000Z");
  CHECK(fx::str(task["lastUpdatedAt"]) == fx::str(task["createdAt"]));
  CHECK_FALSE(r.result()["resultType"].exists());
  CHECK(t.runs == 0);  // not yet: the record exists before the work starts
  const auto g = c.send(t.srv, task_req(2, "tasks/get", id));
  CAPTURE(g.text);
  CHECK(fx::str(g.result()["taskId"]) == id);
  CHECK(fx::str(g.result()["status"]) == "working");
  CHECK_FALSE(g.result()["task"].exists());
  CHECK(exec.run_all() == 1);
  CHECK(t.runs == 1);
  const auto done = c.send(t.srv, task_req(3, "tasks/get", id));
  CHECK(fx::str(done.result()["status"]) == "completed");
  CHECK_FALSE(done.result()["result"].exists());  // 2025: tasks/get carries no payload
  const auto res = c.send(t.srv, task_req(4, "tasks/result", id));
  CAPTURE(res.text);
  CHECK(fx::str(fx::at(res.result()["content"], 0)["text"]) == "echo 7");
  CHECK(fx::str(res.result()["_meta"]["io.modelcontextprotocol/related-task"]["taskId"]) == id);
}

TEST_CASE("tasks.md/limits: the requested ttl is clamped into [min_ttl, max_ttl], none gets the default") {
  task_options o;
  o.min_ttl = 5s;
  o.max_ttl = 2h;
  o.default_ttl = 30min;
  task_server t{o};
  manual_executor exec;
  client_2025 c{&exec};
  const auto ttl_of = [&](int id, std::string_view task) {
    const auto r = c.send(t.srv, call_2025(id, "echo", task));
    CAPTURE(r.text);
    return r.result()["task"]["ttl"].to_int64().value_or(-1);
  };
  CHECK(ttl_of(1, R"({"ttl":10})") == 5000);
  CHECK(ttl_of(2, R"({"ttl":1e12})") == 7200000);
  CHECK(ttl_of(3, "{}") == 1800000);
  CHECK(ttl_of(4, R"({"ttl":60000})") == 60000);
  CHECK(ttl_of(5, R"({"ttl":null})") == 1800000);
  // A ttl that is not a number, a task that is not an object: -32602, no task.
  CHECK(c.send(t.srv, call_2025(6, "echo", R"({"ttl":"long"})")).code() == -32602);
  CHECK(c.send(t.srv, call_2025(7, "echo", "[]")).code() == -32602);
  CHECK(exec.queued() == 5);
}

TEST_CASE("tasks.md/negotiation: 2025 -32601 for a task asked of a forbidden tool and none asked of a required one") {
  task_server t;
  manual_executor exec;
  client_2025 c{&exec};
  const auto forbidden = c.send(t.srv, call_2025(1, "plain", R"({"ttl":1000})"));
  CAPTURE(forbidden.text);
  CHECK(forbidden.code() == -32601);
  CHECK(forbidden.message() == "Tool plain does not support task augmentation");
  const auto required = c.send(t.srv, call_2025(2, "must", ""));
  CAPTURE(required.text);
  CHECK(required.code() == -32601);
  CHECK(required.message() == "Tool must requires task augmentation");
  CHECK(t.runs == 0);
  CHECK(exec.queued() == 0);
  // An optional tool without a task is a plain call; a required one with a task is a task.
  CHECK(fx::str(fx::at(c.send(t.srv, call_2025(3, "echo", "")).result()["content"], 0)["text"]) == "echo 0");
  (void)task_id_2025(c.send(t.srv, call_2025(4, "must")));
}

TEST_CASE("tasks.md/outcomes: a 2025 isError result fails the task, tasks/result returns that result") {
  task_server t;
  manual_executor exec;
  client_2025 c{&exec};
  const std::string id = task_id_2025(c.send(t.srv, call_2025(1, "fails")));
  exec.run_all();
  const auto g = c.send(t.srv, task_req(2, "tasks/get", id));
  CHECK(fx::str(g.result()["status"]) == "failed");
  CHECK(fx::str(g.result()["statusMessage"]) == "the tool reported an error");
  const auto res = c.send(t.srv, task_req(3, "tasks/result", id));
  CAPTURE(res.text);
  CHECK(res.result()["isError"].is_bool());
  CHECK(fx::str(fx::at(res.result()["content"], 0)["text"]) == "it failed");
}

TEST_CASE("tasks.md/outcomes: a handler that throws fails the task with a -32603 error object") {
  task_server t;
  manual_executor exec;
  client_2025 c{&exec};
  const std::string id = task_id_2025(c.send(t.srv, call_2025(1, "throws")));
  exec.run_all();
  CHECK(fx::str(c.send(t.srv, task_req(2, "tasks/get", id)).result()["status"]) == "failed");
  const auto res = c.send(t.srv, task_req(3, "tasks/result", id));
  CAPTURE(res.text);
  CHECK(res.code() == -32603);
  CHECK(res.message() == "The tool failed unexpectedly");
  CHECK(fx::is_correlation_id(res.cid()));
  CHECK(fx::series_value(t.metrics, R"(t_mcp_tool_calls_total{result="failure",tool="throws"})") == 1);
}

TEST_CASE("tasks.md/outcomes: a result that breaks the outputSchema, or is too large, fails the task") {
  task_options o;
  o.max_result_bytes = 1024;
  task_server t{o};
  manual_executor exec;
  client_2025 c{&exec};
  const std::string shaped = task_id_2025(c.send(t.srv, call_2025(1, "shaped")));
  const std::string large = task_id_2025(c.send(t.srv, call_2025(2, "large")));
  exec.run_all();
  const auto s1 = c.send(t.srv, task_req(3, "tasks/result", shaped));
  CAPTURE(s1.text);
  CHECK(s1.code() == -32603);
  CHECK(s1.message() == "The tool returned structured content that does not match its outputSchema");
  CHECK(fx::series_value(t.metrics, R"(t_mcp_tool_output_invalid_total{tool="shaped"})") == 1);
  const auto s2 = c.send(t.srv, task_req(4, "tasks/result", large));
  CAPTURE(s2.text);
  CHECK(s2.code() == -32603);
  CHECK(s2.message() == "The tool's result is too large to keep as a task result");
}

TEST_CASE("tasks.md/notifications: 2025 progress with the original token and status notifications reach the session") {
  task_server t;
  manual_executor exec;
  client_2025 c{&exec};
  const std::string id = task_id_2025(c.send(t.srv, call_2025(1, "echo", "{}", "{}", R"({"progressToken":"tok-9"})")));
  exec.run_all();
  const auto progress = c.channel->with_method("notifications/progress");
  REQUIRE(progress.size() == 2);
  const auto p0 = fx::parse(progress[0]);
  CHECK(fx::str(p0.root["params"]["progressToken"]) == "tok-9");
  CHECK(fx::str(p0.root["params"]["message"]) == "half");
  const auto status = c.channel->with_method("notifications/tasks/status");
  REQUIRE(status.size() == 1);
  const auto st = fx::parse(status[0]);
  CHECK(fx::str(st.root["params"]["taskId"]) == id);
  CHECK(fx::str(st.root["params"]["status"]) == "completed");
  CHECK(st.root["params"]["ttl"].is_integer());
  CHECK(c.sink.size() == 0);  // nothing on the call's own sink: the call answered long ago
}

// ---- 2025-11-25 input inside a task (docs/tasks.md#input) -------------------------------------------

/// The elicitation requests a 2025 task sent on the session, by their message ("A?", "B?").
struct asked_2025 {
  std::int64_t a = 0;
  std::int64_t b = 0;
};
asked_2025 elicitations(const client_2025& c, std::string_view task_id) {
  asked_2025 out;
  const auto requests = c.channel->with_method("elicitation/create");
  REQUIRE(requests.size() == 2);
  for (const auto& text : requests) {
    const auto m = fx::parse(text);
    CAPTURE(text);
    CHECK(fx::str(m.root["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"]) == task_id);
    CHECK(m.root["params"]["requestedSchema"].is_object());
    REQUIRE(m.root["id"].is_integer());
    const std::int64_t rid = *m.root["id"].to_int64();
    (fx::str(m.root["params"]["message"]) == "A?" ? out.a : out.b) = rid;
  }
  REQUIRE(out.a != 0);
  REQUIRE(out.b != 0);
  return out;
}

/// The statuses of the task's status notifications on the session, in order.
std::vector<std::string> statuses_sent(const client_2025& c) {
  std::vector<std::string> out;
  for (const auto& text : c.channel->with_method("notifications/tasks/status")) {
    out.push_back(fx::str(fx::parse(text).root["params"]["status"]));
  }
  return out;
}

/// A 2025 session declaring `caps` whose task of the `ask` tool ran once (its handler asked for input).
struct asking_2025 {
  task_server t;
  manual_executor exec;
  client_2025 c{&exec};
  std::string id;
  int first_runs = 0;
  explicit asking_2025(std::string_view caps = R"({"elicitation":{}})") {
    c.initialize(t.srv, caps);
    id = task_id_2025(c.send(t.srv, call_2025(1, "ask")));
    first_runs = exec.run_all();
  }
};

std::string client_error(std::int64_t id, int code, std::string_view message) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"error":{"code":)" + std::to_string(code) +
         R"(,"message":")" + std::string{message} + R"("}})";
}

TEST_CASE("tasks.md/input: a 2025 task asking for input is input_required, its requests carry related-task _meta, the answers resume it") {
  asking_2025 f;
  auto& [t, exec, c, id, first_runs] = f;
  CHECK(first_runs == 1);
  const auto g = c.send(t.srv, task_req(2, "tasks/get", id));
  CAPTURE(g.text);
  CHECK(fx::str(g.result()["status"]) == "input_required");
  CHECK(fx::str(g.result()["statusMessage"]) == "waiting for input");
  CHECK_FALSE(g.result()["inputRequests"].exists());  // a 2026-07-28 member
  CHECK(statuses_sent(c) == std::vector<std::string>{"input_required"});
  const asked_2025 r = elicitations(c, id);
  CHECK(c.sink.size() == 0);  // the session's channel, not the creating call's
  // One answer: still waiting, nothing runs. The TypeScript client's answer carries no _meta.
  (void)c.send(t.srv, fx::client_result(r.a, R"({"action":"accept","content":{"name":"one"}})"));
  CHECK(fx::str(c.send(t.srv, task_req(3, "tasks/get", id)).result()["status"]) == "input_required");
  CHECK(exec.queued() == 0);
  (void)c.send(t.srv, fx::client_result(r.b, R"({"action":"accept","content":{"name":"two"}})"));
  CHECK(fx::str(c.send(t.srv, task_req(4, "tasks/get", id)).result()["status"]) == "working");
  CHECK(exec.run_all() == 1);
  const auto res = c.send(t.srv, task_req(5, "tasks/result", id));
  CAPTURE(res.text);
  CHECK(fx::str(fx::at(res.result()["content"], 0)["text"]) == "a=one b=two state=st");
  CHECK(statuses_sent(c) == std::vector<std::string>{"input_required", "working", "completed"});
  CHECK(t.runs == 2);
  CHECK(t.srv.running_tasks() == 0);
}

TEST_CASE("tasks.md/input: a 2025 task whose client answers an input request with an error fails, naming the key") {
  asking_2025 f;
  auto& [t, exec, c, id, first_runs] = f;
  const asked_2025 r = elicitations(c, id);
  (void)c.send(t.srv, client_error(r.b, -1, "User declined"));
  const auto res = c.send(t.srv, task_req(2, "tasks/result", id));
  CAPTURE(res.text);
  CHECK(res.code() == -32603);
  CHECK(res.message().find("'b'") != std::string::npos);
  CHECK(fx::str(c.send(t.srv, task_req(3, "tasks/get", id)).result()["status"]) == "failed");
  // The other request is withdrawn; its late answer is dropped.
  const auto withdrawn = c.channel->with_method("notifications/cancelled");
  REQUIRE(withdrawn.size() == 1);
  CHECK(fx::parse(withdrawn[0]).root["params"]["requestId"].to_int64() == r.a);
  (void)c.send(t.srv, fx::client_result(r.a, R"({"action":"accept","content":{"name":"one"}})"));
  CHECK(exec.run_all() == 0);
  CHECK(t.runs == 1);
}

TEST_CASE("tasks.md/input: tasks/cancel of a 2025 task waiting for input cancels it, withdraws its requests, drops late answers") {
  asking_2025 f;
  auto& [t, exec, c, id, first_runs] = f;
  const asked_2025 r = elicitations(c, id);
  const auto cancelled = c.send(t.srv, task_req(2, "tasks/cancel", id));
  CAPTURE(cancelled.text);
  CHECK(fx::str(cancelled.result()["status"]) == "cancelled");
  CHECK(c.channel->with_method("notifications/cancelled").size() == 2);
  (void)c.send(t.srv, fx::client_result(r.a, R"({"action":"accept","content":{"name":"one"}})"));
  (void)c.send(t.srv, fx::client_result(r.b, R"({"action":"accept","content":{"name":"two"}})"));
  CHECK(exec.run_all() == 0);
  CHECK(fx::str(c.send(t.srv, task_req(3, "tasks/get", id)).result()["status"]) == "cancelled");
  CHECK(t.runs == 1);
}

TEST_CASE("tasks.md/input: the end of the session's channel fails a 2025 task waiting for input") {
  asking_2025 f;
  auto& [t, exec, c, id, first_runs] = f;
  (void)elicitations(c, id);
  c.client.input_closed();  // no answer can arrive any more
  const auto res = c.send(t.srv, task_req(2, "tasks/result", id));
  CAPTURE(res.text);
  CHECK(res.code() == -32603);
  CHECK(res.message().find("could not answer") != std::string::npos);
  CHECK(t.srv.running_tasks() == 0);
}

TEST_CASE("tasks.md/input: a 2025 task whose session is gone when it asks for input fails at once") {
  task_server t;
  manual_executor exec;
  auto c = std::make_unique<client_2025>(&exec);
  c->initialize(t.srv, R"({"elicitation":{}})");
  const std::string id = task_id_2025(c->send(t.srv, call_2025(1, "ask")));
  client_2025 other{&exec};
  other.caller = c->caller;
  c.reset();  // the session (its peer and channel) is gone before the handler runs
  exec.run_all();
  const auto res = other.send(t.srv, task_req(2, "tasks/result", id));
  CAPTURE(res.text);
  CHECK(res.code() == -32603);
  CHECK(res.message().find("could not answer") != std::string::npos);
}

TEST_CASE("tasks.md/input: a 2025 task's input requests time out after max_client_request_timeout, the task fails") {
  asking_2025 f;
  auto& [t, exec, c, id, first_runs] = f;
  (void)elicitations(c, id);
  t.clk.advance(30s);
  t.srv.expire_waiting();
  CHECK(fx::str(c.send(t.srv, task_req(2, "tasks/get", id)).result()["status"]) == "input_required");
  t.clk.advance(31s);  // past server_options::max_client_request_timeout (60 s)
  t.srv.expire_waiting();
  const auto res = c.send(t.srv, task_req(3, "tasks/result", id));
  CAPTURE(res.text);
  CHECK(res.code() == -32603);
  CHECK(res.message().find("could not answer 'a'") != std::string::npos);
  const auto withdrawn = c.channel->with_method("notifications/cancelled");
  REQUIRE(withdrawn.size() == 2);
  CHECK(fx::str(fx::parse(withdrawn[0]).root["params"]["reason"]) == "timed out");
}

TEST_CASE("tasks.md/input: a 2025 task asking for input its client did not declare fails -32021 with requiredCapabilities") {
  asking_2025 f{"{}"};
  auto& [t, exec, c, id, first_runs] = f;
  const auto res = c.send(t.srv, task_req(2, "tasks/result", id));
  CAPTURE(res.text);
  CHECK(res.code() == -32021);
  CHECK(res.data()["requiredCapabilities"]["elicitation"].is_object());
  CHECK(c.channel->with_method("elicitation/create").empty());
}

TEST_CASE("tasks.md/input: answers racing tasks/cancel of a 2025 task waiting for input end it once") {
  task_options o;
  o.max_per_principal = 64;
  task_server t{o};
  manual_executor exec;
  client_2025 c{&exec};
  c.initialize(t.srv, R"({"elicitation":{}})");
  for (int i = 0; i < 40; ++i) {
    CAPTURE(i);
    c.channel->clear();
    const std::string id = task_id_2025(c.send(t.srv, call_2025(1000 + i, "ask")));
    exec.run_all();
    const asked_2025 r = elicitations(c, id);
    std::thread answering{[&] {
      (void)c.send(t.srv, fx::client_result(r.a, R"({"action":"accept","content":{"name":"one"}})"));
      (void)c.send(t.srv, fx::client_result(r.b, R"({"action":"accept","content":{"name":"two"}})"));
    }};
    const auto cancelled = c.send(t.srv, task_req(2000 + i, "tasks/cancel", id));
    answering.join();
    exec.run_all();
    const std::string status = fx::str(c.send(t.srv, task_req(3000 + i, "tasks/get", id)).result()["status"]);
    if (cancelled.code() == 0) {
      CHECK(status == "cancelled");
    } else {
      CHECK(cancelled.code() == -32602);  // it had completed first
      CHECK(status == "completed");
    }
    const auto ends = statuses_sent(c);
    CHECK(std::count_if(ends.begin(), ends.end(), [](const std::string& s) {
            return s == "completed" || s == "cancelled" || s == "failed";
          }) == 1);
  }
  CHECK(t.srv.running_tasks() == 0);
}

// ---- visibility (bad input) --------------------------------------------------------------------------

TEST_CASE("tasks.md/visibility: unknown, malformed, expired and foreign task ids answer the same -32602 in 2025") {
  task_options o;
  o.min_ttl = 1s;
  task_server t{o};
  manual_executor exec;
  client_2025 alice{&exec};
  client_2025 bob{&exec, "bob"};
  const std::string id = task_id_2025(alice.send(t.srv, call_2025(1, "echo", R"({"ttl":10000})")));
  exec.run_all();
  const auto refused = [&](client_2025& who, std::string_view method, std::string_view task_id) {
    const auto a = who.send(t.srv, task_req(9, method, task_id));
    CAPTURE(a.text);
    CHECK(a.code() == -32602);
    CHECK(a.message() == "Unknown task");
    return a.message();
  };
  for (const std::string_view method : {"tasks/get", "tasks/result", "tasks/cancel"}) {
    CAPTURE(method);
    refused(alice, method, std::string(32, '0'));  // unknown
    refused(alice, method, "not-a-task-id");        // malformed
    refused(bob, method, id);                       // another principal's
  }
  CHECK(bob.send(t.srv, task_req(10, "tasks/list", "")).result()["tasks"].size() == 0);
  CHECK(fx::str(alice.send(t.srv, task_req(11, "tasks/get", id)).result()["status"]) == "completed");
  t.clk.advance(10s);  // exactly at created_at + ttl: gone
  for (const std::string_view method : {"tasks/get", "tasks/result", "tasks/cancel"}) refused(alice, method, id);
  CHECK(alice.send(t.srv, task_req(12, "tasks/list", "")).result()["tasks"].size() == 0);
}

TEST_CASE("tasks.md/visibility: in 2026 unknown, expired and foreign ids are -32602 on tasks/get, acknowledged on cancel and update") {
  task_server t;
  manual_executor exec;
  const std::string id = task_id_2026(send_2026(t.srv, call_2026(1, "echo"), &exec));
  exec.run_all();
  CHECK(fx::str(send_2026(t.srv, task_req_2026(2, "tasks/get", id), &exec).result()["status"]) == "completed");
  const auto foreign = send_2026(t.srv, task_req_2026(3, "tasks/get", id), &exec, "bob");
  CHECK(foreign.code() == -32602);
  CHECK(foreign.message() == "Unknown task");
  CHECK(send_2026(t.srv, task_req_2026(4, "tasks/get", std::string(32, 'f')), &exec).message() == "Unknown task");
  const auto cancel = send_2026(t.srv, task_req_2026(5, "tasks/cancel", id), &exec, "bob");
  CHECK(fx::to_json(cancel.result()["resultType"]) == R"("complete")");
  CHECK_FALSE(cancel.result()["status"].exists());
  const auto unknown_cancel = send_2026(t.srv, task_req_2026(6, "tasks/cancel", std::string(32, 'f')), &exec);
  CHECK(fx::str(unknown_cancel.result()["resultType"]) == "complete");
  CHECK(fx::str(send_2026(t.srv, task_req_2026(7, "tasks/get", id), &exec).result()["status"]) == "completed");
  t.clk.advance(2h);
  CHECK(send_2026(t.srv, task_req_2026(8, "tasks/get", id), &exec).code() == -32602);
}

// ---- cancellation (bad input) ------------------------------------------------------------------------

TEST_CASE("tasks.md/cancellation: 2025 tasks/cancel stops the work and answers the cancelled task, the late result is discarded") {
  task_server t;
  thread_executor exec;
  client_2025 c{&exec};
  const std::string id = task_id_2025(c.send(t.srv, call_2025(1, "blocking")));
  REQUIRE(t.gate.wait_arrived());
  const auto cancel = c.send(t.srv, task_req(2, "tasks/cancel", id));
  CAPTURE(cancel.text);
  CHECK(fx::str(cancel.result()["taskId"]) == id);
  CHECK(fx::str(cancel.result()["status"]) == "cancelled");
  exec.join();
  CHECK(t.saw_stop);
  CHECK(fx::str(c.send(t.srv, task_req(3, "tasks/get", id)).result()["status"]) == "cancelled");
  CHECK(t.srv.running_tasks() == 0);
  const auto status = c.channel->with_method("notifications/tasks/status");
  REQUIRE(status.size() == 1);
  CHECK(fx::str(fx::parse(status[0]).root["params"]["status"]) == "cancelled");
  CHECK(rows_of(t.audit, "mcp.task.cancelled").size() == 1);
  CHECK(fx::series_value(t.metrics, R"(t_mcp_tasks_finished_total{status="cancelled"})") == 1);
  CHECK(fx::series_value(t.metrics, R"(t_mcp_tasks_finished_total{status="completed"})") == 0);
}

TEST_CASE("tasks.md/cancellation: 2025 cancel of a finished task is -32602 and changes nothing") {
  task_server t;
  manual_executor exec;
  client_2025 c{&exec};
  const std::string id = task_id_2025(c.send(t.srv, call_2025(1, "echo")));
  exec.run_all();
  const auto again = c.send(t.srv, task_req(2, "tasks/cancel", id));
  CAPTURE(again.text);
  CHECK(again.code() == -32602);
  CHECK(again.message() == "Cannot cancel a task that has already ended");
  CHECK(fx::str(c.send(t.srv, task_req(3, "tasks/get", id)).result()["status"]) == "completed");
}

TEST_CASE("tasks.md/tasks-result: the result of a cancelled task is -32602 task was cancelled") {
  task_server t;
  manual_executor exec;
  client_2025 c{&exec};
  const std::string id = task_id_2025(c.send(t.srv, call_2025(1, "echo")));
  CHECK(fx::str(c.send(t.srv, task_req(2, "tasks/cancel", id)).result()["status"]) == "cancelled");
  CHECK(exec.run_all() == 1);  // the run finds the task over and does nothing
  CHECK(t.runs == 0);
  const auto res = c.send(t.srv, task_req(3, "tasks/result", id));
  CAPTURE(res.text);
  CHECK(res.code() == -32602);
  CHECK(res.message() == "task was cancelled");
  const auto twice = c.send(t.srv, task_req(4, "tasks/cancel", id));
  CHECK(twice.code() == -32602);
}

TEST_CASE("tasks.md/cancellation: 2026 tasks/cancel acknowledges and the task settles cancelled") {
  task_server t;
  thread_executor exec;
  const std::string id = task_id_2026(send_2026(t.srv, call_2026(1, "blocking"), &exec));
  REQUIRE(t.gate.wait_arrived());
  const auto ack = send_2026(t.srv, task_req_2026(2, "tasks/cancel", id), &exec);
  CAPTURE(ack.text);
  CHECK(fx::str(ack.result()["resultType"]) == "complete");
  for (const std::string_view key : {"taskId", "status", "result", "error", "inputRequests"}) {
    CHECK_FALSE(ack.result()[key].exists());
  }
  exec.join();
  CHECK(fx::str(send_2026(t.srv, task_req_2026(3, "tasks/get", id), &exec).result()["status"]) == "cancelled");
  // A terminal task's cancel is acknowledged the same way.
  CHECK(fx::str(send_2026(t.srv, task_req_2026(4, "tasks/cancel", id), &exec).result()["resultType"]) == "complete");
}

// ---- caps and executors (bad input) -------------------------------------------------------------------

TEST_CASE("tasks.md/limits: the per-principal cap refuses -32603 with retry_after_ms, other principals go on") {
  task_options o;
  o.max_per_principal = 2;
  o.max_total = 3;
  task_server t{o};
  manual_executor exec;
  client_2025 alice{&exec};
  client_2025 bob{&exec, "bob"};
  (void)task_id_2025(alice.send(t.srv, call_2025(1, "echo")));
  (void)task_id_2025(alice.send(t.srv, call_2025(2, "echo")));
  exec.run_all();  // finished tasks count until their ttl
  const auto third = alice.send(t.srv, call_2025(3, "echo"));
  CAPTURE(third.text);
  CHECK(third.code() == -32603);
  CHECK(third.message() == "Too many tasks for this caller");
  CHECK(third.data()["retry_after_ms"].to_int64() == std::optional<std::int64_t>{60000});
  (void)task_id_2025(bob.send(t.srv, call_2025(4, "echo")));
  const auto global = bob.send(t.srv, call_2025(5, "echo"));
  CHECK(global.code() == -32603);
  CHECK(global.message() == "Too many tasks on this server");
  exec.run_all();  // a refused creation's posted run finds its task over and runs nothing
  CHECK(t.runs == 3);
  CHECK(t.store.size() == 3);
  CHECK(fx::series_value(t.metrics, R"(t_mcp_tasks_refused_total{reason="owner_cap"})") == 1);
  CHECK(fx::series_value(t.metrics, R"(t_mcp_tasks_refused_total{reason="global_cap"})") == 1);
  CHECK(fx::series_value(t.metrics, "t_mcp_tasks_created_total") == 3);
  // A refusal in 2026 is the same answer (the store checks the global cap first).
  CHECK(send_2026(t.srv, call_2026(6, "echo"), &exec).message() == "Too many tasks on this server");
}

TEST_CASE("tasks.md/executors: a full executor refuses the creation with nothing stored") {
  task_server t;
  manual_executor exec;
  exec.full = true;
  client_2025 c{&exec};
  const auto r = c.send(t.srv, call_2025(1, "echo"));
  CAPTURE(r.text);
  CHECK(r.code() == -32603);
  CHECK(r.message() == "Server busy");
  CHECK(r.data()["retry_after_ms"].to_int64() == std::optional<std::int64_t>{1000});
  CHECK(t.store.size() == 0);
  CHECK(c.send(t.srv, task_req(2, "tasks/list", "")).result()["tasks"].size() == 0);
  CHECK(t.srv.running_tasks() == 0);
}

TEST_CASE("tasks.md/executors: without an executor an optional tool runs as a plain call, a required one is -32603") {
  task_server t;
  client_2025 c{nullptr};
  const auto plain = c.send(t.srv, call_2025(1, "echo", "{}", R"({"n":3})"));
  CAPTURE(plain.text);
  CHECK(fx::str(fx::at(plain.result()["content"], 0)["text"]) == "echo 3");
  const auto required = c.send(t.srv, call_2025(2, "must"));
  CAPTURE(required.text);
  CHECK(required.code() == -32603);
  CHECK(required.message() == "tasks are not available on this transport");
  CHECK(t.store.size() == 0);
}

// ---- tasks/list -----------------------------------------------------------------------------------

TEST_CASE("tasks.md/tasks-list: the caller's tasks in creation order, paged, an opaque cursor, junk refused") {
  task_server t;  // page_size 2
  manual_executor exec;
  client_2025 alice{&exec};
  client_2025 bob{&exec, "bob"};
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(task_id_2025(alice.send(t.srv, call_2025(10 + i, "echo"))));
  (void)task_id_2025(bob.send(t.srv, call_2025(20, "echo")));
  const auto p1 = alice.send(t.srv, fx::request(1, "tasks/list", "{}"));
  CAPTURE(p1.text);
  REQUIRE(p1.result()["tasks"].size() == 2);
  CHECK(fx::str(fx::at(p1.result()["tasks"], 0)["taskId"]) == ids[0]);
  CHECK(fx::str(fx::at(p1.result()["tasks"], 1)["taskId"]) == ids[1]);
  CHECK(fx::str(fx::at(p1.result()["tasks"], 0)["status"]) == "working");
  const std::string cursor = fx::str(p1.result()["nextCursor"]);
  const auto p2 = alice.send(t.srv, fx::request(2, "tasks/list", R"({"cursor":")" + cursor + R"("})"));
  CAPTURE(p2.text);
  REQUIRE(p2.result()["tasks"].size() == 1);
  CHECK(fx::str(fx::at(p2.result()["tasks"], 0)["taskId"]) == ids[2]);
  CHECK_FALSE(p2.result()["nextCursor"].exists());
  // Another caller's cursor, an altered one and junk are refused.
  CHECK(bob.send(t.srv, fx::request(3, "tasks/list", R"({"cursor":")" + cursor + R"("})")).code() == -32602);
  std::string altered = cursor;
  altered.back() = altered.back() == '0' ? '1' : '0';
  CHECK(alice.send(t.srv, fx::request(4, "tasks/list", R"({"cursor":")" + altered + R"("})")).code() == -32602);
  CHECK(alice.send(t.srv, fx::request(5, "tasks/list", R"({"cursor":42})")).code() == -32602);
  CHECK(alice.send(t.srv, fx::request(6, "tasks/list", R"({"cursor":"junk"})")).message() == "Invalid cursor");
}

// ---- tasks/result waits --------------------------------------------------------------------------

TEST_CASE("tasks.md/tasks-result: without a resumer tasks/result waits on its thread until the terminal") {
  task_server t;
  thread_executor exec;
  client_2025 c{&exec};
  const std::string id = task_id_2025(c.send(t.srv, call_2025(1, "blocking")));
  REQUIRE(t.gate.wait_arrived());
  std::optional<fx::answer> res;
  std::thread waiter{[&] { res.emplace(c.send(t.srv, task_req(2, "tasks/result", id))); }};
  std::this_thread::sleep_for(50ms);
  CHECK_FALSE(res.has_value());
  t.gate.open();
  waiter.join();
  exec.join();
  REQUIRE(res.has_value());
  CAPTURE(res->text);
  CHECK(fx::str(fx::at(res->result()["content"], 0)["text"]) == "opened");
  CHECK(fx::str(res->result()["_meta"]["io.modelcontextprotocol/related-task"]["taskId"]) == id);
}

TEST_CASE("tasks.md/tasks-result: with a resumer the wait holds no thread and answers once on the terminal") {
  task_server t;
  manual_executor exec;
  test_resumer resumer;
  client_2025 c{&exec};
  c.resumer = &resumer;
  const std::string id = task_id_2025(c.send(t.srv, call_2025(1, "echo", "{}", R"({"n":5})")));
  const auto waiting = c.send(t.srv, task_req(2, "tasks/result", id));
  CHECK_FALSE(waiting.returned);
  CHECK(waiting.text.empty());
  CHECK(resumer.suspended);
  CHECK_FALSE(resumer.done.is_set());
  exec.run_all();
  REQUIRE(resumer.done.wait());
  std::lock_guard lock{resumer.mu};
  CHECK(resumer.finishes == 1);
  CHECK(resumer.was_answered);
  const auto res = fx::parse(resumer.text);
  CHECK(fx::to_json(res.root["id"]) == "2");
  CHECK(fx::str(fx::at(res.root["result"]["content"], 0)["text"]) == "echo 5");
}

TEST_CASE("tasks.md/tasks-result: a cancelled request ends the wait without an answer, and the cap refuses one more") {
  task_options o;
  o.max_result_waits_per_principal = 1;
  task_server t{o};
  manual_executor exec;
  test_resumer resumer;
  client_2025 c{&exec};
  c.resumer = &resumer;
  const std::string id = task_id_2025(c.send(t.srv, call_2025(1, "echo")));
  CHECK_FALSE(c.send(t.srv, task_req(2, "tasks/result", id)).returned);
  test_resumer other;
  c.resumer = &other;
  const auto capped = c.send(t.srv, task_req(3, "tasks/result", id));
  CAPTURE(capped.text);
  CHECK(capped.code() == -32603);
  CHECK(capped.message() == "Too many tasks/result requests of this caller are waiting");
  CHECK_FALSE(other.suspended);
  (void)c.send(t.srv, fx::cancel("2"));
  REQUIRE(resumer.done.wait());
  {
    std::lock_guard lock{resumer.mu};
    CHECK(resumer.finishes == 1);
    CHECK_FALSE(resumer.was_answered);
  }
  // The slot is free again; the terminal answers the new wait, not the ended one.
  CHECK_FALSE(c.send(t.srv, task_req(4, "tasks/result", id)).returned);
  exec.run_all();
  REQUIRE(other.done.wait());
  std::lock_guard lock{resumer.mu};
  CHECK(resumer.finishes == 1);
}

// ---- 2026-07-28 -------------------------------------------------------------------------------------

TEST_CASE("tasks.md/the-wire: a 2026 call declaring the extension answers a flat CreateTaskResult, tasks/get inlines the result") {
  task_server t;
  manual_executor exec;
  const auto r = send_2026(t.srv, call_2026(1, "echo", R"({"n":2})", ext_caps, R"("task":{"ttl":5})"), &exec);
  const std::string id = task_id_2026(r);
  CAPTURE(r.text);
  CHECK(fx::str(r.result()["status"]) == "working");
  CHECK(r.result()["ttlMs"].to_int64() == std::optional<std::int64_t>{3600000});  // params.task is ignored
  CHECK(r.result()["pollIntervalMs"].to_int64() == std::optional<std::int64_t>{1000});
  for (const std::string_view key : {"task", "ttl", "pollInterval", "requestState", "result", "error", "inputRequests"}) {
    CHECK_FALSE(r.result()[key].exists());
  }
  CHECK(r.result()["_meta"]["io.modelcontextprotocol/serverInfo"].is_object());
  const auto working = send_2026(t.srv, task_req_2026(2, "tasks/get", id), &exec);
  CHECK(fx::str(working.result()["resultType"]) == "complete");
  CHECK(fx::str(working.result()["status"]) == "working");
  exec.run_all();
  const auto g = send_2026(t.srv, task_req_2026(3, "tasks/get", id), &exec);
  CAPTURE(g.text);
  CHECK(fx::str(g.result()["status"]) == "completed");
  CHECK(fx::str(fx::at(g.result()["result"]["content"], 0)["text"]) == "echo 2");
  CHECK_FALSE(g.result()["result"]["_meta"]["io.modelcontextprotocol/related-task"].exists());
  CHECK_FALSE(g.result()["requestState"].exists());
}

TEST_CASE("tasks.md/outcomes: a 2026 isError result completes the task with the error result") {
  task_server t;
  manual_executor exec;
  const std::string id = task_id_2026(send_2026(t.srv, call_2026(1, "fails"), &exec));
  exec.run_all();
  const auto g = send_2026(t.srv, task_req_2026(2, "tasks/get", id), &exec);
  CAPTURE(g.text);
  CHECK(fx::str(g.result()["status"]) == "completed");
  CHECK(g.result()["result"]["isError"].is_bool());
  const std::string thrown = task_id_2026(send_2026(t.srv, call_2026(3, "throws"), &exec));
  exec.run_all();
  const auto f = send_2026(t.srv, task_req_2026(4, "tasks/get", thrown), &exec);
  CAPTURE(f.text);
  CHECK(fx::str(f.result()["status"]) == "failed");
  CHECK(f.result()["error"]["code"].to_int64() == std::optional<std::int64_t>{-32603});
  CHECK_FALSE(f.result()["result"].exists());
}

TEST_CASE("tasks.md/negotiation: 2026 without the extension a required tool is -32021, an optional one a plain call") {
  task_server t;
  manual_executor exec;
  const auto must = send_2026(t.srv, call_2026(1, "must", "{}", "{}"), &exec);
  CAPTURE(must.text);
  CHECK(must.code() == -32021);
  CHECK(fx::to_json(must.data()["requiredCapabilities"]) == R"({"extensions":{"io.modelcontextprotocol/tasks":{}}})");
  const auto plain = send_2026(t.srv, call_2026(2, "echo", R"({"n":1})", "{}"), &exec);
  CHECK(fx::str(plain.result()["resultType"]) == "complete");
  CHECK(fx::str(fx::at(plain.result()["content"], 0)["text"]) == "echo 1");
  // A forbidden tool stays a plain call with the extension and a legacy params.task.
  const auto legacy = send_2026(t.srv, call_2026(3, "plain", "{}", ext_caps, R"("task":{"ttl":60000})"), &exec);
  CHECK(fx::str(legacy.result()["resultType"]) == "complete");
  CHECK(exec.queued() == 0);
}

TEST_CASE("tasks.md/errors: every 2026 tasks method without the extension is -32021 before the id is looked up") {
  task_server t;
  for (const std::string_view method : {"tasks/get", "tasks/update", "tasks/cancel"}) {
    CAPTURE(method);
    const auto a = send_2026(t.srv, task_req_2026(1, method, "gate-test", "{}", R"("inputResponses":{})"), nullptr);
    CAPTURE(a.text);
    CHECK(a.code() == -32021);
    CHECK(a.data()["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object());
  }
  // tasks/result and tasks/list do not exist in 2026: -32601 before any other check.
  CHECK(send_2026(t.srv, task_req_2026(2, "tasks/result", "x", "{}"), nullptr).code() == -32601);
  CHECK(send_2026(t.srv, req_2026(3, "tasks/list", "", "{}"), nullptr).code() == -32601);
  CHECK(send_2026(t.srv, req_2026(4, "tasks/list", ""), nullptr).code() == -32601);
  // tasks/update is not a 2025 method.
  client_2025 c{nullptr};
  CHECK(c.send(t.srv, task_req(5, "tasks/update", std::string(32, 'a'))).code() == -32601);
}

TEST_CASE("tasks.md/input: 2026 input_required, tasks/update removes answered keys before the ack, then the handler runs again") {
  task_server t;
  manual_executor exec;
  const std::string id = task_id_2026(send_2026(t.srv, call_2026(1, "ask"), &exec));
  exec.run_all();
  const auto g = send_2026(t.srv, task_req_2026(2, "tasks/get", id), &exec);
  CAPTURE(g.text);
  CHECK(fx::str(g.result()["status"]) == "input_required");
  CHECK(fx::str(g.result()["inputRequests"]["a"]["method"]) == "elicitation/create");
  CHECK(g.result()["inputRequests"]["b"].is_object());
  // Unknown keys are ignored and acknowledged.
  const auto junk = send_2026(t.srv, task_req_2026(3, "tasks/update", id, ext_caps,
                                                   R"("inputResponses":{"zz":{"action":"accept"}})"),
                              &exec);
  CHECK(fx::str(junk.result()["resultType"]) == "complete");
  const auto first = send_2026(t.srv, task_req_2026(4, "tasks/update", id, ext_caps,
                                                    R"("inputResponses":{"a":{"action":"accept","content":{"name":"one"}}})"),
                               &exec);
  CAPTURE(first.text);
  CHECK(fx::str(first.result()["resultType"]) == "complete");
  CHECK_FALSE(first.result()["status"].exists());
  const auto partial = send_2026(t.srv, task_req_2026(5, "tasks/get", id), &exec);
  CAPTURE(partial.text);
  CHECK(fx::str(partial.result()["status"]) == "input_required");
  CHECK_FALSE(partial.result()["inputRequests"]["a"].exists());
  CHECK(partial.result()["inputRequests"]["b"].is_object());
  CHECK(exec.queued() == 0);
  (void)send_2026(t.srv, task_req_2026(6, "tasks/update", id, ext_caps,
                                       R"("inputResponses":{"b":{"action":"accept","content":{"name":"two"}}})"),
                  &exec);
  CHECK(fx::str(send_2026(t.srv, task_req_2026(7, "tasks/get", id), &exec).result()["status"]) == "working");
  CHECK(exec.run_all() == 1);
  const auto done = send_2026(t.srv, task_req_2026(8, "tasks/get", id), &exec);
  CAPTURE(done.text);
  CHECK(fx::str(done.result()["status"]) == "completed");
  CHECK(fx::str(fx::at(done.result()["result"]["content"], 0)["text"]) == "a=one b=two state=st");
  CHECK(t.runs == 2);
}

TEST_CASE("tasks.md/input: input responses over max_input_responses_bytes are refused -32602 and nothing is stored") {
  task_options o;
  o.max_input_responses_bytes = 64;
  task_server t{o};
  manual_executor exec;
  const std::string id = task_id_2026(send_2026(t.srv, call_2026(1, "ask"), &exec));
  exec.run_all();
  const std::string long_name(100, 'n');
  const auto big = send_2026(t.srv, task_req_2026(2, "tasks/update", id, ext_caps,
                                                  R"("inputResponses":{"a":{"action":"accept","content":{"name":")" +
                                                      long_name + R"("}}})"),
                             &exec);
  CAPTURE(big.text);
  CHECK(big.code() == -32602);
  CHECK(big.message() == "The input responses are too large");
  const auto g = send_2026(t.srv, task_req_2026(3, "tasks/get", id), &exec);
  CHECK(g.result()["inputRequests"]["a"].is_object());
}

TEST_CASE("tasks.md/input: a 2026 task waiting for input past its ttl is swept by the maintenance tick") {
  task_options o;
  o.default_ttl = 10s;
  o.sweep_interval = 1s;
  task_server t{o};
  manual_executor exec;
  const std::string id = task_id_2026(send_2026(t.srv, call_2026(1, "ask"), &exec));
  exec.run_all();
  CHECK(t.srv.running_tasks() == 1);
  t.clk.advance(11s);
  t.srv.expire_waiting();
  CHECK(t.srv.running_tasks() == 0);
  CHECK(t.store.size() == 0);
  CHECK(send_2026(t.srv, task_req_2026(2, "tasks/get", id), &exec).code() == -32602);
}

// ---- tools that become tasks when they detach --------------------------------------------------------

TEST_CASE("tasks.md/detached-work: an on_detach tool answers plainly until it detaches, then its finish completes the task") {
  task_server t;
  client_2025 c{nullptr};  // no executor needed: the host's work finishes the task
  const auto plain = c.send(t.srv, call_2025(1, "later", "{}", R"({"n":0})"));
  CAPTURE(plain.text);
  CHECK(fx::str(fx::at(plain.result()["content"], 0)["text"]) == "no detach");
  CHECK(t.store.size() == 0);
  const auto inline_finish = c.send(t.srv, call_2025(2, "later", "{}", R"({"n":1})"));
  const std::string id1 = task_id_2025(inline_finish);
  const auto r1 = c.send(t.srv, task_req(3, "tasks/result", id1));
  CAPTURE(r1.text);
  CHECK(fx::str(fx::at(r1.result()["content"], 0)["text"]) == "finished inline");
  CHECK(fx::str(r1.result()["_meta"]["mcpcore/executionId"]) == "exec-1");
  CHECK(fx::str(r1.result()["_meta"]["io.modelcontextprotocol/related-task"]["taskId"]) == id1);
  const std::string id2 = task_id_2025(c.send(t.srv, call_2025(4, "later", "{}", R"({"n":2})")));
  CHECK(fx::str(c.send(t.srv, task_req(5, "tasks/get", id2)).result()["status"]) == "failed");  // isError in 2025
  // In 2026 the same tool becomes a task only with the extension.
  const auto r2026 = send_2026(t.srv, call_2026(6, "later", R"({"n":1})"), nullptr);
  const std::string id3 = task_id_2026(r2026);
  CHECK(fx::str(send_2026(t.srv, task_req_2026(7, "tasks/get", id3), nullptr).result()["status"]) == "completed");
  const auto no_ext = send_2026(t.srv, call_2026(8, "later", R"({"n":1})", "{}"), nullptr);
  CHECK(fx::str(no_ext.result()["resultType"]) == "complete");
  CHECK(fx::str(fx::at(no_ext.result()["content"], 0)["text"]) == "provisional");
}

TEST_CASE("tasks.md/notifications: a detached task's progress goes to the session with the original token, and stops at the terminal") {
  task_server t;
  client_2025 c{nullptr};
  const std::string id = task_id_2025(c.send(t.srv, call_2025(1, "keep", "{}", "{}", R"({"progressToken":7})")));
  operation_handle op;
  {
    std::lock_guard lock{t.kept_mu};
    REQUIRE(t.kept.has_value());
    op = *t.kept;
  }
  CHECK(op.progress(1, 4, "one"));
  CHECK_FALSE(op.progress(1, 4, "not more"));  // progress only increases
  CHECK(op.finish(tool_result::text("kept result")));
  CHECK_FALSE(op.progress(2, 4, "after the end"));
  CHECK_FALSE(op.finish(tool_result::text("again")));  // one terminal
  const auto progress = c.channel->with_method("notifications/progress");
  REQUIRE(progress.size() == 1);
  CHECK(fx::to_json(fx::parse(progress[0]).root["params"]["progressToken"]) == "7");
  const auto res = c.send(t.srv, task_req(2, "tasks/result", id));
  CAPTURE(res.text);
  CHECK(fx::str(fx::at(res.result()["content"], 0)["text"]) == "kept result");
  CHECK(fx::str(res.result()["_meta"]["mcpcore/executionId"]) == "kept");
}

TEST_CASE("tasks.md/detached-work: detached work whose handles are all gone without a terminal fails its task") {
  task_server t;
  client_2025 c{nullptr};
  const std::string id = task_id_2025(c.send(t.srv, call_2025(1, "keep")));
  CHECK(t.srv.running_tasks() == 1);
  {
    std::lock_guard lock{t.kept_mu};
    t.kept.reset();  // the last handle
  }
  CHECK(t.srv.running_tasks() == 0);
  const auto g = c.send(t.srv, task_req(2, "tasks/get", id));
  CHECK(fx::str(g.result()["status"]) == "failed");
  CHECK(fx::str(g.result()["statusMessage"]) == "the detached work ended without a result");
  const auto res = c.send(t.srv, task_req(3, "tasks/result", id));
  CHECK(res.code() == -32603);
}

TEST_CASE("tasks.md/detached-work: a creation refused at detach answers its refusal") {
  task_options o;
  o.max_per_principal = 1;
  task_server t{o};
  client_2025 c{nullptr};
  (void)task_id_2025(c.send(t.srv, call_2025(1, "later", "{}", R"({"n":1})")));
  const auto refused = c.send(t.srv, call_2025(2, "later", "{}", R"({"n":1})"));
  CAPTURE(refused.text);
  CHECK(refused.code() == -32603);
  CHECK(refused.message() == "Too many tasks for this caller");
}

TEST_CASE("tasks.md/detached-work: tasks/cancel requests the detached work's stop token in both eras, its late final is dropped") {
  task_server t;
  client_2025 c{nullptr};
  const auto take_kept = [&t] {
    std::lock_guard lock{t.kept_mu};
    REQUIRE(t.kept.has_value());
    operation_handle op = *t.kept;
    t.kept.reset();
    return op;
  };
  // 2025-11-25: the task's operation carries the task's stop token; tasks/cancel requests it.
  const std::string id = task_id_2025(c.send(t.srv, call_2025(1, "keep")));
  operation_handle op = take_kept();
  const std::stop_token st = op.stop_token();
  CHECK(st.stop_possible());
  CHECK_FALSE(st.stop_requested());
  int stops = 0;
  const std::stop_callback on_stop{st, [&stops] { ++stops; }};
  const auto cancelled = c.send(t.srv, task_req(2, "tasks/cancel", id));
  CAPTURE(cancelled.text);
  CHECK(fx::str(cancelled.result()["status"]) == "cancelled");
  CHECK(st.stop_requested());
  CHECK(stops == 1);
  CHECK_FALSE(op.finish(tool_result::text("finished after the cancel")));
  CHECK(fx::str(c.send(t.srv, task_req(3, "tasks/get", id)).result()["status"]) == "cancelled");
  // 2026-07-28: the same through the extension's tasks/cancel.
  const std::string id2 = task_id_2026(send_2026(t.srv, call_2026(4, "keep"), nullptr));
  operation_handle op2 = take_kept();
  CHECK_FALSE(op2.stop_token().stop_requested());
  (void)send_2026(t.srv, task_req_2026(5, "tasks/cancel", id2), nullptr);
  CHECK(op2.stop_token().stop_requested());
  CHECK(fx::str(send_2026(t.srv, task_req_2026(6, "tasks/get", id2), nullptr).result()["status"]) == "cancelled");
  // A task that ended is not stopped by anything later.
  const std::string id3 = task_id_2025(c.send(t.srv, call_2025(7, "keep")));
  operation_handle op3 = take_kept();
  CHECK(op3.finish(tool_result::text("done")));
  CHECK(c.send(t.srv, task_req(8, "tasks/cancel", id3)).code() == -32602);
  t.srv.cancel_tasks();
  CHECK_FALSE(op3.stop_token().stop_requested());
}

TEST_CASE("operation_source.md/stopping-the-work: a detached plain call's stop token is never requested") {
  task_server t;
  client_2025 c{nullptr};
  const auto plain = c.send(t.srv, call_2025(1, "keep", ""));  // no params.task: a plain call
  CAPTURE(plain.text);
  CHECK(fx::str(fx::at(plain.result()["content"], 0)["text"]) == "provisional");
  operation_handle op;
  {
    std::lock_guard lock{t.kept_mu};
    REQUIRE(t.kept.has_value());
    op = *t.kept;
  }
  CHECK_FALSE(op.stop_token().stop_possible());
  t.srv.cancel_tasks();
  CHECK_FALSE(op.stop_token().stop_requested());
  CHECK_FALSE(operation_handle{}.stop_token().stop_possible());
}

TEST_CASE("tasks.md/notifications: a detached task's progress carries the execution id in _meta") {
  task_server t;
  client_2025 c{nullptr};
  (void)task_id_2025(c.send(t.srv, call_2025(1, "keep", "{}", "{}", R"({"progressToken":"tok"})")));
  operation_handle op;
  {
    std::lock_guard lock{t.kept_mu};
    REQUIRE(t.kept.has_value());
    op = *t.kept;
  }
  CHECK(op.progress(0, std::nullopt, "started"));
  const auto progress = c.channel->with_method("notifications/progress");
  REQUIRE(progress.size() == 1);
  const auto n = fx::parse(progress[0]);
  CHECK(fx::str(n.root["params"]["progressToken"]) == "tok");
  CHECK(fx::str(n.root["params"]["_meta"]["mcpcore/executionId"]) == "kept");
  CHECK(op.finish(tool_result::text("kept result")));
}

TEST_CASE("tasks.md/detached-work: a creation refused at detach hands the work an operation already asked to stop") {
  task_options o;
  o.max_per_principal = 1;
  task_server t{o};
  client_2025 c{nullptr};
  (void)task_id_2025(c.send(t.srv, call_2025(1, "keep")));
  const auto refused = c.send(t.srv, call_2025(2, "keep"));
  CAPTURE(refused.text);
  CHECK(refused.message() == "Too many tasks for this caller");
  operation_handle op;
  {
    std::lock_guard lock{t.kept_mu};
    REQUIRE(t.kept.has_value());
    op = *t.kept;
  }
  // Nobody will read this work's outcome: it should not start, or stop at once.
  CHECK(op.stop_token().stop_requested());
  CHECK_FALSE(op.progress(1, 2, "nowhere"));
  CHECK_FALSE(op.finish(tool_result::text("nowhere")));
}

// ---- shutdown, restart, audit ------------------------------------------------------------------------

TEST_CASE("tasks.md/shutdown: cancel_tasks stops the running work, the task fails and its waits end") {
  task_server t;
  thread_executor exec;
  test_resumer resumer;
  client_2025 c{&exec};
  c.resumer = &resumer;
  const std::string id = task_id_2025(c.send(t.srv, call_2025(1, "blocking")));
  REQUIRE(t.gate.wait_arrived());
  CHECK(t.srv.running_tasks() == 1);
  CHECK_FALSE(c.send(t.srv, task_req(2, "tasks/result", id)).returned);
  t.srv.cancel_tasks();
  exec.join();
  REQUIRE(resumer.done.wait());
  {
    std::lock_guard lock{resumer.mu};
    CHECK_FALSE(resumer.was_answered);
  }
  CHECK(t.saw_stop);
  c.resumer = nullptr;
  const auto g = c.send(t.srv, task_req(3, "tasks/get", id));
  CHECK(fx::str(g.result()["status"]) == "failed");
  CHECK(fx::str(g.result()["statusMessage"]) == "the server stopped before the task finished");
  CHECK(t.srv.running_tasks() == 0);
}

TEST_CASE("tasks.md/shutdown: cancel_tasks requests a detached task's stop token, its final then fails the task as stopped") {
  task_server t;
  client_2025 c{nullptr};
  const std::string id = task_id_2025(c.send(t.srv, call_2025(1, "keep")));
  operation_handle op;
  {
    std::lock_guard lock{t.kept_mu};
    REQUIRE(t.kept.has_value());
    op = *t.kept;
    t.kept.reset();
  }
  CHECK(t.srv.running_tasks() == 1);
  t.srv.cancel_tasks();
  CHECK(op.stop_token().stop_requested());
  // The work reports what it had when it stopped: the task fails as one the server stopped.
  CHECK(op.finish(tool_result::text("partial work")));
  const auto g = c.send(t.srv, task_req(2, "tasks/get", id));
  CAPTURE(g.text);
  CHECK(fx::str(g.result()["status"]) == "failed");
  CHECK(fx::str(g.result()["statusMessage"]) == "the server stopped before the task finished");
  CHECK(c.send(t.srv, task_req(3, "tasks/result", id)).code() == -32603);
  CHECK(t.srv.running_tasks() == 0);
}

TEST_CASE("tasks.md/restart: a build with abandon_unfinished_at_build fails the tasks an earlier run left live") {
  memory_task_store store;
  task_record r;
  r.id = std::string(32, 'c');
  r.owner = "alice";
  r.tool = "echo";
  r.created_at = r.updated_at = std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now());
  r.ttl = std::chrono::hours{1};
  r.poll_interval = 1s;
  REQUIRE(store.create({r, 10, 10, r.created_at}).has_value());
  server_builder b{server_info{.name = "restart", .version = "1"}};
  b.tasks(store);
  b.tool("echo").description("x").security("Thing", operation::read).effect(tool_effect::read_only, true)
      .handler([](call_context&, const arguments&) { return tool_result::text("x"); });
  server s = fx::build(b);
  const auto now = store.get(r.id, r.created_at);
  REQUIRE(now.has_value());
  REQUIRE(now->has_value());
  CHECK((*now)->status == task_status::failed);
  CHECK((*now)->status_message == "the server restarted before the task finished");
  CHECK((*now)->payload_kind == task_payload::error);
  client_2025 c{nullptr};
  const auto res = c.send(s, task_req(1, "tasks/result", r.id));
  CAPTURE(res.text);
  CHECK(res.code() == -32603);
}

TEST_CASE("tasks.md/restart: with a SQLite store a finished task's result survives a restart and a live one is failed") {
  const test_process::temp_dir dir;
  const std::string path = dir.file("tasks.db");
  const auto build_over = [](sqlite_task_store& store) {
    server_builder b{server_info{.name = "restart", .version = "1"}};
    b.tasks(store);
    b.tool("echo").description("x").security("Thing", operation::read).effect(tool_effect::read_only, true)
        .task_support(task_support::optional)
        .handler([](call_context&, const arguments&) { return tool_result::text("echoed"); });
    return fx::build(b);
  };
  std::string done;
  std::string live;
  {
    auto store = sqlite_task_store::open(path);
    REQUIRE(store.has_value());
    manual_executor exec;
    server s = build_over(*store);
    client_2025 c{&exec};
    done = task_id_2025(c.send(s, call_2025(1, "echo")));
    exec.run_all();
    live = task_id_2025(c.send(s, call_2025(2, "echo")));  // its run never starts: the process "dies"
  }
  auto store = sqlite_task_store::open(path);
  REQUIRE(store.has_value());
  server s = build_over(*store);
  client_2025 c{nullptr};
  const auto result = c.send(s, task_req(3, "tasks/result", done));
  CAPTURE(result.text);
  CHECK(fx::str(fx::at(result.result()["content"], 0)["text"]) == "echoed");
  const auto g = c.send(s, task_req(4, "tasks/get", live));
  CHECK(fx::str(g.result()["status"]) == "failed");
  CHECK(fx::str(g.result()["statusMessage"]) == "the server restarted before the task finished");
  const auto lost = c.send(s, task_req(5, "tasks/result", live));
  CAPTURE(lost.text);
  CHECK(lost.code() == -32603);
  CHECK(lost.message() == "the server restarted before the task finished");
}

TEST_CASE("tasks.md/audit: creation and the terminal are audited, the metrics count them") {
  task_server t;
  manual_executor exec;
  client_2025 c{&exec};
  const std::string id = task_id_2025(c.send(t.srv, call_2025(1, "echo")));
  CHECK(fx::series_value(t.metrics, "t_mcp_tasks_running") == 1);
  exec.run_all();
  const auto created = rows_of(t.audit, "mcp.task.created");
  REQUIRE(created.size() == 1);
  CHECK(created[0].target_id == id);
  CHECK(created[0].principal_id == "alice");
  CHECK(created[0].detail == "tool=echo");
  const auto finished = rows_of(t.audit, "mcp.task.finished");
  REQUIRE(finished.size() == 1);
  CHECK(finished[0].detail == "status=completed");
  CHECK(fx::series_value(t.metrics, "t_mcp_tasks_created_total") == 1);
  CHECK(fx::series_value(t.metrics, R"(t_mcp_tasks_finished_total{status="completed"})") == 1);
  CHECK(fx::series_value(t.metrics, "t_mcp_tasks_running") == 0);
  CHECK(fx::series_value(t.metrics, R"(t_mcp_requests_total{method="tasks/get"})") == 0);
  (void)c.send(t.srv, task_req(2, "tasks/get", id));
  CHECK(fx::series_value(t.metrics, R"(t_mcp_requests_total{method="tasks/get"})") == 1);
}

TEST_CASE("tasks.md/options: task_options that cannot work refuse the build") {
  memory_task_store store;
  task_options o;
  o.min_ttl = 10s;
  o.max_ttl = 1s;
  o.max_per_principal = 0;
  server_builder b{server_info{.name = "bad", .version = "1"}};
  b.tasks(store, o);
  const auto r = b.build();
  REQUIRE_FALSE(r.has_value());
  const std::string why = r.error().message();
  CHECK(why.find("task_options.max_ttl is shorter than task_options.min_ttl") != std::string::npos);
  CHECK(why.find("task_options.max_per_principal is 0") != std::string::npos);
}

}  // TEST_SUITE
