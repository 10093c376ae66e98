// SPDX-License-Identifier: Apache-2.0
// Concurrency tests of the stream budget (run under TSan by the tsan preset;
// docs/sessions.md#the-stream-budget).
#include <mcpcore/session/stream_budget.hpp>

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using mcpcore::stream_budget;
using mcpcore::stream_budget_mode;
using mcpcore::stream_budget_options;
using mcpcore::stream_budget_reject;
using mcpcore::stream_lease;

TEST_SUITE("concurrency") {
  TEST_CASE("sessions.md/the-stream-budget: enforce_caps traffic from many threads never exceeds the caps") {
    constexpr std::size_t global_cap = 16;
    constexpr std::size_t per_principal_cap = 3;
    constexpr int threads = 8;
    constexpr int iterations = 4000;
    const std::array<std::string_view, 3> principals{"alice", "bob", "carol"};
    const std::array<std::string_view, 2> surfaces{mcpcore::stream_surface_get, mcpcore::stream_surface_post};

    stream_budget b{stream_budget_options{global_cap}};
    std::atomic<bool> done{false};
    std::atomic<bool> global_ok{true};
    std::atomic<bool> per_principal_ok{true};
    std::atomic<long> granted{0};
    std::atomic<long> refused_global{0};
    std::atomic<long> refused_principal{0};
    {
      std::vector<std::jthread> workers;
      // an observer: the total never exceeds the global cap, a pair never exceeds its cap
      workers.emplace_back([&] {
        while (!done.load()) {
          if (b.in_use() > global_cap) global_ok = false;
          for (const auto s : surfaces) {
            for (const auto p : principals) {
              if (b.in_use(s, p) > per_principal_cap) per_principal_ok = false;
            }
          }
          if (b.entries() > surfaces.size() * principals.size()) per_principal_ok = false;
        }
      });
      std::vector<std::jthread> writers;
      for (int t = 0; t < threads; ++t) {
        writers.emplace_back([&, t] {
          std::vector<stream_lease> held;
          for (int i = 0; i < iterations; ++i) {
            const auto k = static_cast<std::size_t>(t + i);
            auto r = b.try_acquire(surfaces[k % surfaces.size()], principals[(k / 2) % principals.size()],
                                   per_principal_cap);
            if (r.has_value()) {
              ++granted;
              held.push_back(std::move(*r));
              if (b.in_use() > global_cap) global_ok = false;
            } else if (r.error() == stream_budget_reject::global_stream_cap) {
              ++refused_global;
            } else {
              ++refused_principal;
            }
            // release some, sometimes out of order, sometimes twice, sometimes by move-assignment
            if (held.size() > 2 || (i % 5) == 0) {
              if (!held.empty()) {
                const std::size_t victim = static_cast<std::size_t>(i) % held.size();
                held[victim].release();
                held[victim].release();
                held.erase(held.begin() + static_cast<std::ptrdiff_t>(victim));
              }
            }
            if (held.size() == 2 && (i % 7) == 0) held[0] = std::move(held[1]);
            if (!held.empty() && !held.back()) held.pop_back();
          }
        });
      }
      writers.clear();  // join the writers
      done = true;
    }
    CHECK(global_ok.load());
    CHECK(per_principal_ok.load());
    CHECK(granted.load() > 0);
    CHECK(granted + refused_global + refused_principal == long{threads} * iterations);
    CHECK(b.in_use() == 0);
    CHECK(b.entries() == 0);
  }

  TEST_CASE("sessions.md/get-attach-replay-resume: takeovers from many threads are all counted and all returned") {
    constexpr std::size_t global_cap = 4;
    constexpr int threads = 6;
    constexpr int per_thread = 200;
    stream_budget b{stream_budget_options{global_cap}};
    std::atomic<long> refused{0};
    std::atomic<bool> enforce_over_cap{false};
    std::vector<std::vector<stream_lease>> held(threads);
    {
      std::vector<std::jthread> workers;
      for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
          auto& mine = held[static_cast<std::size_t>(t)];
          for (int i = 0; i < per_thread; ++i) {
            const std::string principal = "p" + std::to_string((t + i) % 5);
            auto r = b.try_acquire(mcpcore::stream_surface_get, principal, 1, stream_budget_mode::takeover);
            if (!r.has_value()) {
              ++refused;
              continue;
            }
            mine.push_back(std::move(*r));
            // a first attach racing with the takeovers: once this thread alone holds the global
            // cap's worth of takeover leases, every enforce_caps acquire must be refused
            auto e = b.try_acquire(mcpcore::stream_surface_post, principal, 0);
            if (e.has_value() && mine.size() >= global_cap) enforce_over_cap = true;
          }
        });
      }
    }
    CHECK(refused.load() == 0);
    CHECK_FALSE(enforce_over_cap.load());
    CHECK(b.in_use() == std::size_t{threads} * per_thread);
    CHECK(b.entries() == 5);
    for (std::size_t i = 0; i < 5; ++i) {
      CHECK(b.in_use(mcpcore::stream_surface_get, "p" + std::to_string(i)) == threads * per_thread / 5);
    }
    {
      std::vector<std::jthread> releasers;
      for (auto& v : held) {
        releasers.emplace_back([&v] { v.clear(); });
      }
    }
    CHECK(b.in_use() == 0);
    CHECK(b.entries() == 0);
  }
}
