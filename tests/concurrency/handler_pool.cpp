// SPDX-License-Identifier: Apache-2.0
// The Asio server's handler executor (src/transport/handler_pool.hpp; docs/transport.md#threads),
// run under TSan by the tsan preset: a stream of short calls keeps one warm thread, a backlog
// wakes at most the eager threads, a call that waits holds the queue back by the grace only, and
// stop runs every queued task.
#include "handler_pool.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

using mcpcore::transport::detail::handler_pool;
using namespace std::chrono_literals;

namespace {

// A grace no test run reaches: the watcher never takes a task.
constexpr auto never = std::chrono::seconds{600};

// Waits (bounded) until every thread of the pool sleeps.
bool settle(const handler_pool& pool) {
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (pool.awake() != 0) {
    if (std::chrono::steady_clock::now() > until) {
      return false;
    }
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// A pool of `threads` threads, every one asleep (the first wake is then the executor's choice).
std::unique_ptr<handler_pool> sleeping_pool(std::size_t threads, std::chrono::steady_clock::duration grace,
                                            std::size_t eager) {
  auto pool = std::make_unique<handler_pool>(64, grace, eager);
  pool->start(threads);
  REQUIRE(settle(*pool));
  return pool;
}

// A call that waits until `end()`: submitted, and running on `thread` once made.
struct waiting_call {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<std::thread::id> running;
  std::thread::id thread;
  explicit waiting_call(handler_pool& pool) {
    auto started = running.get_future();
    REQUIRE(pool.submit([this] {
      running.set_value(std::this_thread::get_id());
      released.wait();
    }));
    thread = started.get();
  }
  void end() { release.set_value(); }
};

}  // namespace

TEST_CASE("transport.md/threads: short calls one after another run on one thread, each waking it at most once") {
  const auto owned = sleeping_pool(4, never, 1);
  handler_pool& pool = *owned;
  constexpr int calls = 200;
  std::set<std::thread::id> ran_on;
  for (int i = 0; i < calls; ++i) {
    std::promise<std::thread::id> done;
    auto id = done.get_future();
    REQUIRE(pool.submit([&done] { done.set_value(std::this_thread::get_id()); }));
    ran_on.insert(id.get());
  }
  CHECK(ran_on.size() == 1);
  CHECK(pool.wakes() <= calls);
  CHECK(pool.overdue_takes() == 0);
  pool.stop();
}

TEST_CASE("transport.md/threads: a backlog wakes at most the eager threads, the others sleep") {
  const auto owned = sleeping_pool(4, never, 2);
  handler_pool& pool = *owned;
  std::promise<void> release;
  const std::shared_future<void> released = release.get_future().share();
  std::atomic<int> blocked{0};
  std::atomic<int> after{0};
  std::mutex mu;
  std::set<std::thread::id> ran_on;
  const auto blocker = [&] {
    {
      const std::lock_guard lock(mu);
      ran_on.insert(std::this_thread::get_id());
    }
    blocked.fetch_add(1);
    released.wait();
  };
  REQUIRE(pool.submit(blocker));
  REQUIRE(pool.submit(blocker));
  for (int i = 0; i < 6; ++i) {
    REQUIRE(pool.submit([&] {
      {
        const std::lock_guard lock(mu);
        ran_on.insert(std::this_thread::get_id());
      }
      after.fetch_add(1);
    }));
  }
  // Both blockers run at once: two threads were woken for the backlog.
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (blocked.load() < 2 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(1ms);
  }
  REQUIRE(blocked.load() == 2);
  CHECK(pool.awake() == 2);
  CHECK(after.load() == 0);  // no third thread was woken for the six behind them
  release.set_value();
  const auto drained = std::chrono::steady_clock::now() + 30s;
  while (after.load() < 6 && std::chrono::steady_clock::now() < drained) {
    std::this_thread::sleep_for(1ms);
  }
  CHECK(after.load() == 6);  // taken by the two threads as they came back for the queue
  pool.stop();
  CHECK(ran_on.size() == 2);
  CHECK(pool.wakes() == 2);
  CHECK(pool.overdue_takes() == 0);
}

TEST_CASE("transport.md/threads: a call that waits holds the queue back by the grace, not until it ends") {
  constexpr auto grace = 20ms;
  const auto owned = sleeping_pool(2, grace, 1);
  handler_pool& pool = *owned;
  waiting_call waiting(pool);
  std::promise<std::thread::id> ran;
  auto ran_on = ran.get_future();
  const auto submitted = std::chrono::steady_clock::now();
  REQUIRE(pool.submit([&ran] { ran.set_value(std::this_thread::get_id()); }));
  // The second call runs while the first still waits (it is released only after).
  REQUIRE(ran_on.wait_for(30s) == std::future_status::ready);
  const auto started = std::chrono::steady_clock::now();
  CHECK(ran_on.get() != waiting.thread);
  CHECK(started - submitted >= grace);  // no thread was woken for it at once
  CHECK(pool.overdue_takes() >= 1);
  waiting.end();
  pool.stop();
}

TEST_CASE("transport.md/threads: a thread held past the grace counts as held: the next call wakes another at once") {
  constexpr auto grace = 20ms;
  const auto owned = sleeping_pool(2, grace, 1);
  handler_pool& pool = *owned;
  waiting_call waiting(pool);
  std::this_thread::sleep_for(grace * 3);  // the first call has now run for longer than the grace
  for (int i = 0; i < 3; ++i) {
    std::promise<void> ran;
    auto done = ran.get_future();
    REQUIRE(pool.submit([&ran] { ran.set_value(); }));
    REQUIRE(done.wait_for(30s) == std::future_status::ready);
  }
  // Each was handed to the other thread by submit itself; the watcher never had to take one.
  CHECK(pool.overdue_takes() == 0);
  CHECK(pool.wakes() >= 2);
  waiting.end();
  pool.stop();
}

TEST_CASE("transport.md/threads: stop runs every queued task and refuses new ones, as a full queue does") {
  handler_pool pool(8, never, 1);
  pool.start(1);
  waiting_call waiting(pool);
  std::atomic<int> ran{0};
  for (int i = 0; i < 8; ++i) {
    REQUIRE(pool.submit([&ran] { ran.fetch_add(1); }));
  }
  CHECK_FALSE(pool.submit([&ran] { ran.fetch_add(1); }));  // the queue holds its cap
  std::thread stopper([&pool] { pool.stop(); });
  waiting.end();
  stopper.join();
  CHECK(ran.load() == 8);
  CHECK_FALSE(pool.submit([&ran] { ran.fetch_add(1); }));
  CHECK(ran.load() == 8);
}

TEST_CASE("transport.md/threads: many submitters, tasks that submit, every task runs exactly once") {
  handler_pool pool(4096, 2ms, 2);
  pool.start(4);
  std::atomic<int> ran{0};
  std::atomic<int> refused{0};
  constexpr int per_thread = 500;
  std::vector<std::thread> submitters;
  for (int t = 0; t < 4; ++t) {
    submitters.emplace_back([&] {
      for (int i = 0; i < per_thread; ++i) {
        const bool ok = pool.submit([&] {
          ran.fetch_add(1);
          if (!pool.submit([&ran] { ran.fetch_add(1); })) {
            refused.fetch_add(1);
          }
        });
        if (!ok) {
          refused.fetch_add(2);
        }
        if (i % 64 == 0) {
          std::this_thread::sleep_for(3ms);  // idle gaps: the watcher retires and comes back
        }
      }
    });
  }
  for (auto& s : submitters) {
    s.join();
  }
  constexpr int all = 4 * per_thread * 2;
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (ran.load() + refused.load() < all && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(1ms);
  }
  pool.stop();
  CHECK(refused.load() == 0);
  CHECK(ran.load() == all);
}
