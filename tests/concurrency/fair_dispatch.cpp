// SPDX-License-Identifier: Apache-2.0
// Concurrency tests of the HTTP endpoint's fair dispatch queues (run under TSan by the tsan
// preset; docs/sessions.md#fair-dispatch): many principals submitting from many threads to a small
// executor that sometimes refuses; every task runs exactly once or is refused, the per-principal
// cap holds at every moment, and the queues end empty.
#include <mcpcore/transport/impl/fair_dispatch.ipp>

#include <doctest/doctest.h>

#include "support/task_pool.hpp"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

using namespace mcpcore;

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
        test_support::task_pool exec{2, refuse_every};
        {
          std::vector<std::jthread> workers;
          workers.reserve(submitters);
          for (int t = 0; t < submitters; ++t) {
            workers.emplace_back([&, t] {
              for (int i = 0; i < per_submitter; ++i) {
                const std::size_t p = static_cast<std::size_t>(i + t) % principals.size();
                const auto r = fair->submit(
                    principals[p],
                    [&, p, i](detail::fair_slot& slot) {
                      if (static_cast<std::size_t>(++running[p]) > cap) cap_ok = false;
                      std::this_thread::yield();
                      --running[p];
                      // every other task frees its slot itself (as the endpoint does when it
                      // answers) before it returns; the rest are freed on return
                      if (i % 2 == 0) slot.release();
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
