// SPDX-License-Identifier: Apache-2.0
// Concurrency test of the blocking-server adapter (run under TSan by the tsan preset;
// docs/http.md#mounting-on-a-blocking-server): a pull loop under a storm of wakes and a close from
// another thread, and client threads opening sessions, calling (plain and streamed), serving GET
// streams and deleting sessions through one adapter while its tick runs, its counts are read and
// the shutdown begins in the middle.
#include <mcpcore/transport/blocking_adapter.hpp>

#include <doctest/doctest.h>

#include "support/http_endpoint_fixture.hpp"
#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/session/stream_types.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/wire/http.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

using namespace mcpcore;
using namespace std::chrono_literals;
using namespace http_endpoint_fixture;
namespace fx = server_fixture;

namespace {

using steady = std::chrono::steady_clock;

/// A stream fed by another thread: numbered lines, then the end (or a close from any thread).
class storm_stream final : public http_stream {
 public:
  void push(std::size_t n) {
    std::function<void()> w;
    {
      std::lock_guard lock{mu_};
      pending_ += std::to_string(n);
      pending_ += '\n';
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
  [[nodiscard]] std::chrono::milliseconds wait_time(steady::time_point /*now*/) const noexcept override { return 10s; }
  void written() noexcept override {}
  void write_failed() noexcept override {}
  [[nodiscard]] bool finished() const noexcept override {
    std::lock_guard lock{mu_};
    return done_;
  }
  void close(close_reason /*reason*/) noexcept override {
    std::function<void()> w;
    {
      std::lock_guard lock{mu_};
      ending_ = true;
      w = waker_;
    }
    if (w) w();
  }

 private:
  mutable std::mutex mu_;
  std::function<void()> waker_;
  std::string pending_;
  bool ending_ = false;
  bool done_ = false;
};

std::string call(std::int64_t id, std::string_view tool, std::string_view meta = {}) {
  std::string p = R"({"name":")" + std::string{tool} + R"(","arguments":{})";
  if (!meta.empty()) p += R"(,"_meta":)" + std::string{meta};
  p += '}';
  return fx::request(id, "tools/call", p);
}

}  // namespace

TEST_CASE("blocking_adapter: a pull loop under a storm of wakes writes every byte in order and ends") {
  constexpr std::size_t lines = 5000;
  storm_stream s;
  std::string out;
  std::thread producer([&] {
    for (std::size_t i = 0; i < lines; ++i) s.push(i);
    s.end();
  });
  const auto t0 = steady::now();
  CHECK(pump_stream(s, [&](std::string_view b) {
    out += b;
    return true;
  }));
  producer.join();
  CHECK(steady::now() - t0 < 5s);  // never waited out the 10 s wait_time
  std::string expected;
  for (std::size_t i = 0; i < lines; ++i) expected += std::to_string(i) + '\n';
  CHECK(out == expected);
}

TEST_CASE("blocking_adapter: a close from another thread ends a waiting pull loop promptly") {
  for (int round = 0; round < 50; ++round) {
    storm_stream s;
    std::atomic<bool> started{false};
    std::thread closer([&] {
      while (!started.load()) std::this_thread::yield();
      s.close(close_reason::session_terminated);
    });
    const auto t0 = steady::now();
    started = true;
    CHECK(pump_stream(s, [](std::string_view) { return true; }));
    closer.join();
    CHECK(steady::now() - t0 < 5s);
  }
}

TEST_CASE("blocking_adapter: streams destroyed while the shutdown closes them") {
  struct fixture : endpoint_harness {
    fixture() {
      server_info info;
      info.name = "blocking-adapter-close-race";
      info.version = "1";
      server_builder b{info};
      add_tool(b, "quick", [](call_context&, const arguments&) { return tool_result::text("quick"); });
      serve(b, {}, false);
      adapter = std::make_unique<blocking_adapter>(*ep, blocking_adapter_options{.tick_interval = 0ms});
    }
    ~fixture() { adapter.reset(); }
    fixture(const fixture&) = delete;
    fixture& operator=(const fixture&) = delete;
    std::unique_ptr<blocking_adapter> adapter;
  } f;

  std::atomic<bool> stop{false};
  std::vector<std::thread> makers;
  for (int t = 0; t < 3; ++t) {
    makers.emplace_back([&] {
      while (!stop.load()) {
        // A stream handed out by the adapter, destroyed at once (as a client that left would).
        auto r = f.adapter->handle_with([](http_completion done) {
          done(http_reply{.head = {}, .stream = std::make_unique<storm_stream>()});
        });
        r.stream.reset();
      }
    });
  }
  const auto until = steady::now() + 300ms;
  while (steady::now() < until) f.adapter->begin_shutdown();  // each pass closes every stream in the set
  stop = true;
  for (auto& t : makers) t.join();
  CHECK(f.adapter->wait_idle(patience));
  CHECK(f.adapter->active_streams() == 0);
}

TEST_CASE("blocking_adapter: clients, streams, counts and the shutdown racing through one adapter") {
  struct fixture : endpoint_harness {
    fixture() {
      server_info info;
      info.name = "blocking-adapter-concurrency";
      info.version = "1";
      server_builder b{info};
      add_tool(b, "quick", [](call_context&, const arguments&) { return tool_result::text("quick"); });
      add_tool(b, "count", [](call_context& ctx, const arguments&) {
        for (int i = 1; i <= 3 && !ctx.stop_requested(); ++i) {
          std::this_thread::sleep_for(1ms);
          ctx.progress(i, 3);
        }
        return tool_result::text("counted");
      });
      serve(b, {}, false);
      adapter = std::make_unique<blocking_adapter>(
          *ep, blocking_adapter_options{.executor = {.threads = 3, .queue_cap = 8}, .tick_interval = 5ms});
    }
    ~fixture() { adapter.reset(); }
    fixture(const fixture&) = delete;
    fixture& operator=(const fixture&) = delete;
    std::unique_ptr<blocking_adapter> adapter;
  } f;

  constexpr int clients = 4;
  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0};
  std::atomic<std::size_t> bytes{0};
  const auto sink = [&bytes](std::string_view b) {
    bytes += b.size();
    return true;
  };
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      const std::string token = (c % 2 == 0) ? "alice-token" : "bob-token";
      std::int64_t id = 10;
      while (!stop.load()) {
        const auto init = f.adapter->handle(post(fx::initialize(++id), {}, token).view());
        if (init.head.status != 200) continue;  // 503 once the shutdown began, 429 at the session cap
        const std::string sid{init.head.header("Mcp-Session-Id").value_or("")};
        (void)f.adapter->handle(post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", sid, token).view());
        // A GET stream served on its own thread, ended by the DELETE below (or the shutdown).
        auto g = f.adapter->handle(get(sid, token).view());
        std::thread getter;
        if (g.stream) {
          getter = std::thread([&, s = std::move(g.stream)]() mutable { (void)f.adapter->serve(std::move(s), sink); });
        }
        (void)f.adapter->handle(post(call(++id, "quick"), sid, token).view());
        auto streamed = f.adapter->handle(post(call(++id, "count", R"({"progressToken":"p"})"), sid, token).view());
        if (streamed.stream) (void)f.adapter->serve(std::move(streamed.stream), sink);
        (void)f.adapter->handle(del(sid, token).view());
        if (getter.joinable()) getter.join();
        ++rounds;
      }
    });
  }
  threads.emplace_back([&] {
    while (!stop.load()) {
      (void)f.adapter->active_requests();
      (void)f.adapter->active_streams();
      (void)f.adapter->active_tasks();
      (void)f.adapter->wait_idle(0ms);
      std::this_thread::sleep_for(1ms);
    }
  });

  REQUIRE(eventually([&] { return rounds.load() >= 4 * clients; }, 20s));
  // Clients keep coming while the shutdown runs: it may or may not see the adapter idle.
  (void)f.adapter->shutdown(50ms);
  std::this_thread::sleep_for(20ms);  // clients now meet a shut-down endpoint
  stop = true;
  for (auto& t : threads) t.join();
  CHECK(f.adapter->wait_idle(patience));
  CHECK(f.adapter->active_requests() == 0);
  CHECK(f.adapter->active_streams() == 0);
  CHECK(f.adapter->active_tasks() == 0);
  CHECK(bytes.load() > 0);
}
