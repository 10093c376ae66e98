// SPDX-License-Identifier: Apache-2.0
// Concurrency tests of the HTTP endpoint's fair dispatch queues (run under TSan by the tsan
// preset; docs/sessions.md#fair-dispatch): many principals submitting from many threads to a small
// executor that sometimes refuses; every task runs exactly once or is refused, the per-principal
// cap holds at every moment, and the queues end empty.
#include <mcpcore/transport/impl/fair_dispatch.ipp>

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

using namespace mcpcore;

namespace {

/// `n` threads over one FIFO; refuses every `refuse_every`-th closure (0: never).
class pool {
 public:
  pool(std::size_t n, std::uint64_t refuse_every) : refuse_every_(refuse_every) {
    for (std::size_t i = 0; i < n; ++i) threads_.emplace_back([this] { work(); });
  }
  ~pool() { stop(); }
  pool(const pool&) = delete;
  pool& operator=(const pool&) = delete;

  bool submit(std::function<void()> task) {
    {
      const std::lock_guard lock{mu_};
      if (refuse_every_ != 0 && ++submitted_ % refuse_every_ == 0) return false;
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
    return true;
  }
  void stop() {
    {
      const std::lock_guard lock{mu_};
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock{mu_};
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }
  const std::uint64_t refuse_every_;
  std::uint64_t submitted_ = 0;  // guarded by mu_
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace

TEST_SUITE("concurrency") {
  TEST_CASE("sessions.md/fair-dispatch: many principals from many threads: each task runs once or is refused, the cap always holds") {
    constexpr std::size_t cap = 3;
    constexpr int submitters = 4;
    constexpr int per_submitter = 300;
    const std::array<std::string_view, 3> principals{"alice", "bob", "carol"};
    for (const std::uint64_t refuse_every : {std::uint64_t{0}, std::uint64_t{7}}) {
      CAPTURE(refuse_every);
      auto fair = std::make_shared<detail::fair_dispatch>(cap);
      std::array<std::atomic<int>, 3> running{};
      std::atomic<bool> cap_ok{true};
      std::atomic<std::uint64_t> ran{0};
      std::atomic<std::uint64_t> taken{0};
      std::atomic<std::uint64_t> busy{0};
      std::atomic<std::uint64_t> capped{0};
      {
        pool exec{2, refuse_every};
        {
          std::vector<std::jthread> workers;
          workers.reserve(submitters);
          for (int t = 0; t < submitters; ++t) {
            workers.emplace_back([&, t] {
              for (int i = 0; i < per_submitter; ++i) {
                const std::size_t p = static_cast<std::size_t>(i + t) % principals.size();
                const auto r = fair->submit(
                    principals[p],
                    [&, p] {
                      if (static_cast<std::size_t>(++running[p]) > cap) cap_ok = false;
                      std::this_thread::yield();
                      --running[p];
                      ++ran;
                    },
                    [&exec](std::function<void()> c) { return exec.submit(std::move(c)); });
                switch (r) {
                  case detail::fair_submit::taken: ++taken; break;
                  case detail::fair_submit::busy: ++busy; break;
                  case detail::fair_submit::principal_cap: ++capped; break;
                }
                if (fair->in_flight(principals[p]) > cap) cap_ok = false;
              }
            });
          }
        }
        exec.stop();  // runs every queued closure, then joins
      }
      CHECK(cap_ok.load());
      CHECK(taken.load() + busy.load() + capped.load() == static_cast<std::uint64_t>(submitters * per_submitter));
      CHECK(ran.load() == taken.load());
      for (const auto p : principals) CHECK(fair->in_flight(p) == 0);
      if (refuse_every == 0) CHECK(busy.load() == 0);
    }
  }
}
