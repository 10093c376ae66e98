// SPDX-License-Identifier: Apache-2.0
// Tests of the clock_source concept, the system clock source and the manual clock
// (docs/plugins.md).
#include <mcpcore/governance/clock.hpp>

#include <doctest/doctest.h>

#include "archetypes.hpp"

#include <chrono>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using std::chrono::steady_clock;
using std::chrono::system_clock;

namespace {

struct no_members {};
struct steady_only {
  steady_clock::time_point steady_now() const noexcept { return {}; }
};
struct steady_may_throw {
  steady_clock::time_point steady_now() const { return {}; }
  system_clock::time_point system_now() const noexcept { return {}; }
};
struct system_may_throw {
  steady_clock::time_point steady_now() const noexcept { return {}; }
  system_clock::time_point system_now() const { return {}; }
};
struct swapped_clocks {  // wrong return types
  system_clock::time_point steady_now() const noexcept { return {}; }
  steady_clock::time_point system_now() const noexcept { return {}; }
};
struct not_const {
  steady_clock::time_point steady_now() noexcept { return {}; }
  system_clock::time_point system_now() noexcept { return {}; }
};

static_assert(mcpcore::clock_source<archetypes::clock_source>);
static_assert(mcpcore::clock_source<mcpcore::system_clock_source>);
static_assert(mcpcore::clock_source<mcpcore::manual_clock>);
static_assert(mcpcore::clock_source<mcpcore::clock_ref<mcpcore::manual_clock>>);
static_assert(!mcpcore::clock_source<int>);
static_assert(!mcpcore::clock_source<no_members>);
static_assert(!mcpcore::clock_source<steady_only>);
static_assert(!mcpcore::clock_source<steady_may_throw>);  // noexcept is required
static_assert(!mcpcore::clock_source<system_may_throw>);
static_assert(!mcpcore::clock_source<swapped_clocks>);
static_assert(!mcpcore::clock_source<not_const>);  // read through a const reference

// 2026-01-01T00:00:00Z is 1767225600 s after the Unix epoch.
static_assert(mcpcore::manual_clock::initial_system.time_since_epoch() == 1767225600s);
static_assert(mcpcore::manual_clock::initial_steady.time_since_epoch() == 1h);

}  // namespace

TEST_SUITE("clock") {
  TEST_CASE("plugins.md: system_clock_source reads the process clocks") {
    const mcpcore::system_clock_source c{};
    const auto s0 = steady_clock::now();
    const auto w0 = system_clock::now();
    const auto s1 = c.steady_now();
    const auto w1 = c.system_now();
    const auto s2 = steady_clock::now();
    CHECK(s0 <= s1);
    CHECK(s1 <= s2);
    CHECK(w1 - w0 < 1min);  // the wall clock may step, but not by this much here
    CHECK(w1 - w0 > -1min);
  }

  TEST_CASE("manual_clock starts at steady epoch + 1h and 2026-01-01T00:00:00Z, and stays there") {
    const mcpcore::manual_clock c;
    CHECK(c.steady_now() == steady_clock::time_point{1h});
    CHECK(c.system_now() == system_clock::time_point{std::chrono::sys_days{std::chrono::year{2026} / 1 / 1}});
    std::this_thread::sleep_for(2ms);
    CHECK(c.steady_now() == steady_clock::time_point{1h});
    CHECK(c.system_now() == mcpcore::manual_clock::initial_system);
  }

  TEST_CASE("manual_clock::advance moves both clocks by the same amount") {
    mcpcore::manual_clock c;
    c.advance(1500ms);
    CHECK(c.steady_now() == mcpcore::manual_clock::initial_steady + 1500ms);
    CHECK(c.system_now() == mcpcore::manual_clock::initial_system + 1500ms);
    c.advance(1ns);
    CHECK(c.steady_now() == mcpcore::manual_clock::initial_steady + 1500ms + 1ns);
    c.advance(0ns);
    CHECK(c.steady_now() == mcpcore::manual_clock::initial_steady + 1500ms + 1ns);
    c.advance(std::chrono::hours{24 * 7});
    CHECK(c.system_now() == mcpcore::manual_clock::initial_system + std::chrono::hours{24 * 7} + 1500ms + 1ns);
  }

  TEST_CASE("manual_clock::set_system moves the wall clock alone, backwards too") {
    mcpcore::manual_clock c;
    c.advance(10s);
    const auto earlier = mcpcore::manual_clock::initial_system - 1h;
    c.set_system(earlier);
    CHECK(c.system_now() == earlier);
    CHECK(c.steady_now() == mcpcore::manual_clock::initial_steady + 10s);
    c.advance(1s);  // advance after a step continues from the new wall time
    CHECK(c.system_now() == earlier + 1s);
  }

  TEST_CASE("clock_ref reads the clock it refers to, including later moves") {
    mcpcore::manual_clock c;
    const mcpcore::clock_ref ref{c};
    const auto copy = ref;  // copyable
    c.advance(5s);
    CHECK(ref.steady_now() == c.steady_now());
    CHECK(copy.system_now() == mcpcore::manual_clock::initial_system + 5s);
  }

  TEST_CASE("manual_clock is thread-safe: concurrent advances all land, readers never see time go back") {
    mcpcore::manual_clock c;
    constexpr int writers = 4;
    constexpr int steps = 10000;
    bool monotonic = true;
    {
      std::vector<std::jthread> threads;
      for (int t = 0; t < writers; ++t) {
        threads.emplace_back([&c] {
          for (int i = 0; i < steps; ++i) c.advance(1us);
        });
      }
      threads.emplace_back([&c, &monotonic] {
        auto last = c.steady_now();
        for (int i = 0; i < steps; ++i) {
          const auto now = c.steady_now();
          monotonic = monotonic && now >= last;
          last = now;
        }
      });
    }
    CHECK(monotonic);
    CHECK(c.steady_now() == mcpcore::manual_clock::initial_steady + std::chrono::microseconds{writers * steps});
    CHECK(c.system_now() == mcpcore::manual_clock::initial_system + std::chrono::microseconds{writers * steps});
  }
}
