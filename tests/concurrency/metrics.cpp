// SPDX-License-Identifier: Apache-2.0
// Concurrency tests of the metrics registry (run under TSan by the tsan preset; docs/plugins.md
// metrics_sink requirement 4).
#include <mcpcore/governance/metrics.hpp>

#include <doctest/doctest.h>

#include "support/exposition.hpp"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using mcpcore::counter;
using mcpcore::gauge;
using mcpcore::metric_label;

TEST_SUITE("concurrency") {
  TEST_CASE("metrics registry: 4 threads register and update while another scrapes") {
    mcpcore::metrics_registry r{"t"};
    constexpr int threads = 4;
    constexpr int iterations = 20000;
    constexpr int series_per_thread = 50;

    // shared series, pre-seeded before the threads start (docs/metrics.md#names-and-registration)
    const std::array shared_label{metric_label{"reason", "shared"}};
    const counter shared = r.make_counter("hits_total", "Hits.", shared_label);
    const gauge level = r.make_gauge("level", "Level.");

    std::atomic<bool> done{false};
    std::atomic<int> scrapes{0};
    bool scrape_ok = true;
    {
      std::vector<std::jthread> workers;
      workers.emplace_back([&] {
        // scrape concurrently until the writers finish; every scrape sees a monotone counter
        long long last = 0;
        while (!done.load(std::memory_order_acquire)) {
          std::string out;
          r.write_prometheus(out);
          const long long v = series_value(out, "t_hits_total{reason=\"shared\"}");
          scrape_ok = scrape_ok && v >= last;
          last = v;
          scrapes.fetch_add(1, std::memory_order_relaxed);
        }
      });
      std::vector<std::jthread> writers;
      for (int t = 0; t < threads; ++t) {
        writers.emplace_back([&, t] {
          const std::string mine = "w" + std::to_string(t);
          for (int i = 0; i < iterations; ++i) {
            shared.inc();
            level.add(i % 2 == 0 ? 1 : -1);
            if (i % (iterations / series_per_thread) == 0) {
              // register new series (and re-find the shared one) while others increment and scrape
              const std::string n = std::to_string(i);
              const std::array l{metric_label{"thread", mine}, metric_label{"n", n}};
              r.make_counter("per_thread_total", "Per thread.", l).inc();
              r.make_counter("hits_total", "Hits.", shared_label).inc(0);
            }
          }
        });
      }
      writers.clear();  // join the writers
      done.store(true, std::memory_order_release);
    }

    CHECK(scrape_ok);
    CHECK(scrapes.load() > 0);
    CHECK(shared.value() == std::uint64_t{threads} * iterations);
    CHECK(level.value() == 0);
    CHECK(r.conflicts() == 0);
    std::string out;
    r.write_prometheus(out);
    CHECK(series_value(out, "t_hits_total{reason=\"shared\"}") == static_cast<long long>(threads) * iterations);
    for (int t = 0; t < threads; ++t) {
      const std::string series = "t_per_thread_total{n=\"0\",thread=\"w" + std::to_string(t) + "\"}";
      CHECK(series_value(out, series) == 1);
    }
  }

  TEST_CASE("metrics registry: racing registrations of one series all get the same cell") {
    mcpcore::metrics_registry r;
    constexpr int threads = 4;
    std::array<counter, threads> got{};
    {
      std::vector<std::jthread> workers;
      for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
          const std::array l{metric_label{"k", "v"}};
          got[static_cast<std::size_t>(t)] = r.make_counter("race_total", "Race.", l);
          got[static_cast<std::size_t>(t)].inc();
        });
      }
    }
    for (const counter& c : got) CHECK(c.value() == threads);
  }
}
