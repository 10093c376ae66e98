// SPDX-License-Identifier: Apache-2.0
// The blocking-server adapter (docs/http.md#mounting-on-a-blocking-server): the pull loop wakes on
// its waker, a failed write ends it, the bounded executor refuses when full and joins on
// destruction, and the adapter counts requests, streams and tasks until the endpoint is idle.
#include <mcpcore/transport/blocking_adapter.hpp>

#include <doctest/doctest.h>

#include "support/http_endpoint_fixture.hpp"
#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/session/session_registry.hpp>
#include <mcpcore/session/stream_types.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/wire/http.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

using namespace mcpcore;
using namespace std::chrono_literals;
using namespace http_endpoint_fixture;
namespace fx = server_fixture;

namespace {

using steady = std::chrono::steady_clock;

/// A stream the test feeds: `push` queues bytes and wakes, `end` finishes it after what is queued.
/// It asks for a wait of `wait` between pulls, so a loop that ignored its waker would be slow.
class fed_stream final : public http_stream {
 public:
  explicit fed_stream(std::chrono::milliseconds wait = 10s) : wait_(wait) {}

  void push(std::string bytes) {
    std::function<void()> w;
    {
      std::lock_guard lock{mu_};
      pending_ += bytes;
      w = waker_;
    }
    if (w) w();
  }
  void end() {
    std::function<void()> w;
    {
      std::lock_guard lock{mu_};
      ending_ = true;
      w = waker_;
    }
    if (w) w();
  }
  [[nodiscard]] bool has_waker() const {
    std::lock_guard lock{mu_};
    return static_cast<bool>(waker_);
  }

  void on_ready(std::function<void()> waker) override {
    std::lock_guard lock{mu_};
    waker_ = std::move(waker);
  }
  void pull(steady::time_point /*now*/, std::string& out) noexcept override {
    std::lock_guard lock{mu_};
    out += pending_;
    pending_.clear();
    if (ending_) done_ = true;
  }
  [[nodiscard]] std::chrono::milliseconds wait_time(steady::time_point /*now*/) const noexcept override {
    return wait_;
  }
  void written() noexcept override { ++written_count; }
  void write_failed() noexcept override { ++failed_count; }
  [[nodiscard]] bool finished() const noexcept override {
    std::lock_guard lock{mu_};
    return done_;
  }
  void close(close_reason /*reason*/) noexcept override {
    std::lock_guard lock{mu_};
    pending_ += "closed\n";
    ending_ = true;
  }

  std::atomic<int> written_count{0};
  std::atomic<int> failed_count{0};

 private:
  const std::chrono::milliseconds wait_;
  mutable std::mutex mu_;
  std::function<void()> waker_;
  std::string pending_;
  bool ending_ = false;
  bool done_ = false;
};

/// A writer collecting what the pull loop writes.
struct collected {
  std::mutex mu;
  std::string text;
  blocking_write writer() {
    return [this](std::string_view bytes) {
      std::lock_guard lock{mu};
      text += bytes;
      return true;
    };
  }
  std::string get() {
    std::lock_guard lock{mu};
    return text;
  }
};

/// A server with a tool held until its gate opens, an endpoint over it without an executor (the
/// adapter binds its own), and the adapter.
struct adapter_fixture : endpoint_harness {
  explicit adapter_fixture(blocking_adapter_options o = {}) {
    server_info info;
    info.name = "blocking-adapter-test";
    info.version = "1";
    server_builder b{info};
    add_tool(b, "held", [this](call_context& ctx, const arguments&) {
      held.arrive();
      if (!held.block(ctx.stop_token())) saw_stop = true;
      return tool_result::text("held done");
    });
    add_tool(b, "quick", [](call_context&, const arguments&) { return tool_result::text("quick done"); });
    serve(b, {}, false);
    adapter = std::make_unique<blocking_adapter>(*ep, o);
  }
  ~adapter_fixture() {
    held.open();
    adapter.reset();
  }
  adapter_fixture(const adapter_fixture&) = delete;
  adapter_fixture& operator=(const adapter_fixture&) = delete;

  /// A session: initialize, then notifications/initialized.
  std::string session() {
    const auto init = adapter->handle(post(fx::initialize(1)).view());
    REQUIRE(init.head.status == 200);
    const std::string sid{init.head.header("Mcp-Session-Id").value_or("")};
    REQUIRE_FALSE(sid.empty());
    const auto ack = adapter->handle(post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", sid).view());
    REQUIRE(ack.head.status == 202);
    return sid;
  }

  fx::gate held;
  std::atomic<bool> saw_stop{false};
  std::unique_ptr<blocking_adapter> adapter;
};

std::string call(std::int64_t id, std::string_view tool) {
  return fx::request(id, "tools/call", R"({"name":")" + std::string{tool} + R"(","arguments":{}})");
}

}  // namespace

TEST_CASE("blocking_adapter: pump_stream wakes on the waker long before wait_time, and ends with the stream") {
  fed_stream s{10s};
  collected out;
  // Ends the stream whatever happens, so that a failing check cannot leave the loop running.
  struct ender {
    fed_stream& st;
    ~ender() { st.end(); }
  };
  auto done = std::async(std::launch::async, [&] { return pump_stream(s, out.writer()); });
  const ender end_anyway{s};
  REQUIRE(eventually([&] { return s.has_waker(); }));
  const auto t0 = steady::now();
  s.push("data: one\n\n");
  REQUIRE(eventually([&] { return out.get() == "data: one\n\n"; }, 2s));
  CHECK(steady::now() - t0 < 2s);  // woken, not timed out (wait_time is 10 s)
  s.push("data: two\n\n");
  s.end();
  REQUIRE(done.wait_for(2s) == std::future_status::ready);
  CHECK(done.get());
  CHECK(out.get() == "data: one\n\ndata: two\n\n");
  CHECK(s.written_count.load() == 2);
  CHECK(s.failed_count.load() == 0);
}

TEST_CASE("blocking_adapter: a write that fails or throws ends pump_stream with write_failed") {
  fed_stream s;
  s.push("data: x\n\n");
  CHECK_FALSE(pump_stream(s, [](std::string_view) { return false; }));
  CHECK(s.failed_count.load() == 1);
  CHECK(s.written_count.load() == 0);

  fed_stream t;
  t.push("data: y\n\n");
  CHECK_FALSE(pump_stream(t, [](std::string_view) -> bool { throw std::runtime_error("peer gone"); }));
  CHECK(t.failed_count.load() == 1);
}

TEST_CASE("blocking_adapter: the executor refuses a task when its queue is full, and every task after stop") {
  blocking_executor ex{{.threads = 1, .queue_cap = 1}};
  fx::gate g;
  std::atomic<int> ran{0};
  REQUIRE(ex.submit([&] {
    g.arrive();
    g.block({});
    ++ran;
  }));
  REQUIRE(g.wait_arrived());
  CHECK(ex.running() == 1);
  CHECK(ex.submit([&] { ++ran; }));        // queued: the one place
  CHECK_FALSE(ex.submit([&] { ++ran; }));  // full
  CHECK_FALSE(ex.executor()([&] { ++ran; }));
  CHECK(ex.queued() == 1);
  CHECK_FALSE(ex.submit({}));
  g.open();
  ex.stop();  // runs the queued task, joins
  CHECK(ran.load() == 2);
  CHECK_FALSE(ex.submit([&] { ++ran; }));
  CHECK(ex.running() == 0);
}

TEST_CASE("blocking_adapter: destroying the executor runs the queued tasks and joins the running one") {
  std::atomic<int> ran{0};
  auto late = [&] {
    blocking_executor ex{{.threads = 1, .queue_cap = 4}};
    http_executor exec = ex.executor();
    REQUIRE(ex.submit([&] {
      std::this_thread::sleep_for(100ms);
      ++ran;
    }));
    REQUIRE(ex.submit([&] { ++ran; }));
    return exec;
  }();
  CHECK(ran.load() == 2);                // the destructor waited for both
  CHECK_FALSE(late([&] { ++ran; }));  // the executor outlived its pool: it refuses
  CHECK(ran.load() == 2);
}

TEST_CASE("blocking_adapter: a request answers synchronously through the bound executor, counted while it runs") {
  adapter_fixture f{{.executor = {.threads = 2, .queue_cap = 4}}};
  const auto sid = f.session();
  CHECK(f.adapter->active_requests() == 0);
  auto pending = std::async(std::launch::async, [&] { return f.adapter->handle(post(call(2, "held"), sid, "alice-token").view()); });
  REQUIRE(f.held.wait_arrived());
  CHECK(f.adapter->active_requests() == 1);
  CHECK(f.adapter->active_tasks() == 1);
  CHECK_FALSE(f.adapter->wait_idle(20ms));
  f.held.open();
  const auto r = pending.get();
  CHECK(r.head.status == 200);
  CHECK(r.head.body.find("held done") != std::string::npos);
  CHECK(f.adapter->wait_idle(patience));
  CHECK(f.adapter->active_requests() == 0);
  CHECK(f.adapter->active_tasks() == 0);
}

TEST_CASE("blocking_adapter: with the executor full a request is answered 503 at once") {
  adapter_fixture f{{.executor = {.threads = 1, .queue_cap = 1}}};
  const auto sid = f.session();
  auto first = std::async(std::launch::async, [&] { return f.adapter->handle(post(call(2, "held"), sid).view()); });
  REQUIRE(f.held.wait_arrived());
  auto second = std::async(std::launch::async, [&] { return f.adapter->handle(post(call(3, "quick"), sid).view()); });
  REQUIRE(eventually([&] { return f.adapter->active_tasks() == 2; }));
  const auto third = f.adapter->handle(post(call(4, "quick"), sid).view());
  CHECK(third.head.status == 503);
  f.held.open();
  CHECK(first.get().head.status == 200);
  CHECK(second.get().head.status == 200);
}

TEST_CASE("blocking_adapter: wait_idle returns when the last stream ends") {
  adapter_fixture f;
  const auto sid = f.session();
  auto r = f.adapter->handle(get(sid).view());
  REQUIRE(r.head.status == 200);
  REQUIRE(r.stream);
  CHECK(f.adapter->active_streams() == 1);
  collected out;
  auto served = std::async(std::launch::async, [&, s = std::move(r.stream)]() mutable {
    return f.adapter->serve(std::move(s), out.writer());
  });
  CHECK_FALSE(f.adapter->wait_idle(50ms));  // the GET stream is open
  const auto t0 = steady::now();
  CHECK(f.adapter->handle(del(sid).view()).head.status == 200);  // ends the session and its stream
  CHECK(f.adapter->wait_idle(patience));
  CHECK(steady::now() - t0 < 3s);
  CHECK(served.wait_for(patience) == std::future_status::ready);
  CHECK(served.get());
  CHECK(f.adapter->active_streams() == 0);
}

TEST_CASE("blocking_adapter: a stream that is never served still counts until it is destroyed") {
  adapter_fixture f;
  const auto sid = f.session();
  auto r = f.adapter->handle(get(sid).view());
  REQUIRE(r.stream);
  CHECK(f.adapter->active_streams() == 1);
  CHECK_FALSE(f.adapter->wait_idle(10ms));
  r.stream.reset();
  CHECK(f.adapter->active_streams() == 0);
  CHECK(f.adapter->wait_idle(10ms));
}

TEST_CASE("blocking_adapter: shutdown closes an open stream promptly and its pull loop writes the close") {
  adapter_fixture f;
  const auto sid = f.session();
  auto r = f.adapter->handle(get(sid).view());
  REQUIRE(r.stream);
  collected out;
  auto served = std::async(std::launch::async, [&, s = std::move(r.stream)]() mutable {
    return f.adapter->serve(std::move(s), out.writer());
  });
  REQUIRE(eventually([&] { return !out.get().empty(); }));  // the priming bytes
  const auto t0 = steady::now();
  CHECK(f.adapter->shutdown(patience));
  CHECK(steady::now() - t0 < 2s);
  CHECK(served.get());
  CHECK(out.get().find(default_close_notification_method) != std::string::npos);
  // A stream handed out after the shutdown began is closed at once.
  const auto late = f.adapter->handle(post(fx::initialize(9)).view());
  CHECK(late.head.status == 503);
}

TEST_CASE("blocking_adapter: shutdown cancels the calls still running after the drain") {
  adapter_fixture f;
  const auto sid = f.session();
  auto pending = std::async(std::launch::async, [&] { return f.adapter->handle(post(call(2, "held"), sid).view()); });
  REQUIRE(f.held.wait_arrived());
  const auto t0 = steady::now();
  CHECK(f.adapter->shutdown(100ms));  // not idle after the drain: cancel_in_flight ends the call
  CHECK(steady::now() - t0 < 2s);
  CHECK(f.saw_stop.load());
  pending.get();
}

TEST_CASE("blocking_adapter: the tick thread collects an idle session without any request") {
  adapter_fixture f{{.tick_interval = 5ms}};
  (void)f.session();
  REQUIRE(f.ep->sessions().size() == 1);
  f.clk.advance(default_session_idle_ttl + 1s);
  CHECK(eventually([&] { return f.ep->sessions().size() == 0; }));
}

TEST_CASE("blocking_adapter: destruction stops the tick thread at once and unbinds the executor") {
  adapter_fixture f{{.tick_interval = std::chrono::hours{1}}};
  const auto t0 = steady::now();
  f.adapter.reset();
  CHECK(steady::now() - t0 < 1s);
  // The executor is unbound: another owner may bind one.
  thread_executor other;
  auto binding = f.ep->bind_executor(other.get());
  CHECK(binding.bound());
}

TEST_CASE("blocking_adapter: a second adapter on one endpoint throws and leaves nothing running") {
  adapter_fixture f;
  CHECK_THROWS_AS(blocking_adapter(*f.ep), std::logic_error);
  CHECK(f.adapter->handle(post(fx::initialize(1)).view()).head.status == 200);
}
