// SPDX-License-Identifier: Apache-2.0
// Concurrency tests of the SQLite audit sink (audit_sink requirement 2,
// docs/security.md#audit-and-the-one-cid-pattern): threads recording through one sink and through
// several sinks on one file, run under TSan by the tsan preset.
#include <mcpcore/stores/sqlite_audit_sink.hpp>

#include <doctest/doctest.h>

#include "support/process.hpp"

#include <mcpcore/governance/audit.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

// Every row recorded by `threads` threads, `per_thread` each, through `sink_for(thread)`, while
// another thread reads through `reader`; then checks that each row is there exactly once.
template <class SinkFor>
void record_race(SinkFor sink_for, const mcpcore::sqlite_audit_sink& reader, int threads, int per_thread) {
  std::atomic<int> failed{0};
  std::atomic<bool> done{false};
  std::atomic<int> read_errors{0};
  std::atomic<int> out_of_order{0};
  {
    std::vector<std::jthread> pool;
    pool.emplace_back([&] {
      // Reads while the writers run: every tail is ordered by seq.
      while (!done.load()) {
        mcpcore::sqlite_audit_query q;
        q.limit = 50;
        const auto rows = reader.query(q);
        if (!rows) {
          read_errors.fetch_add(1);
          continue;
        }
        for (std::size_t i = 1; i < rows->size(); ++i) {
          if ((*rows)[i].seq <= (*rows)[i - 1].seq) out_of_order.fetch_add(1);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{1});
      }
    });
    std::vector<std::jthread> writers;
    for (int t = 0; t < threads; ++t) {
      writers.emplace_back([&, t] {
        mcpcore::sqlite_audit_sink& sink = sink_for(t);
        for (int i = 0; i < per_thread; ++i) {
          const std::string cid = "t" + std::to_string(t) + "-" + std::to_string(i);
          const std::string principal = "p" + std::to_string(t);
          const std::string detail = "n=" + std::to_string(i);  // the record views these strings
          mcpcore::audit_record r;
          r.action = "mcp.echo";
          r.target_type = "mcp_tool";
          r.target_id = "echo";
          r.principal_id = principal;
          r.detail = detail;
          r.correlation_id = cid;
          r.time = std::chrono::system_clock::now();
          if (!sink.record(r)) failed.fetch_add(1);
        }
      });
    }
    writers.clear();  // joins
    done.store(true);
  }
  CHECK(failed.load() == 0);
  CHECK(read_errors.load() == 0);
  CHECK(out_of_order.load() == 0);

  mcpcore::sqlite_audit_query all;
  all.limit = static_cast<std::size_t>(threads * per_thread) + 10;
  const auto rows = reader.query(all);
  REQUIRE(rows);
  CHECK(rows->size() == static_cast<std::size_t>(threads * per_thread));
  std::map<std::string, int> seen;
  std::map<std::string, int> last_per_thread;  // each thread's rows appear in its own order
  bool ordered = true;
  for (std::size_t i = 0; i < rows->size(); ++i) {
    const auto& e = (*rows)[i].entry;
    ++seen[e.correlation_id];
    if (i > 0 && (*rows)[i].seq <= (*rows)[i - 1].seq) ordered = false;
    const int n = std::stoi(e.detail.substr(2));
    const auto [it, inserted] = last_per_thread.emplace(e.principal_id, n);
    if (!inserted) {
      if (n != it->second + 1) ordered = false;
      it->second = n;
    }
  }
  CHECK(ordered);
  CHECK(seen.size() == static_cast<std::size_t>(threads * per_thread));
  for (int t = 0; t < threads; ++t) {
    for (int i = 0; i < per_thread; ++i) {
      const std::string cid = "t" + std::to_string(t) + "-" + std::to_string(i);
      const auto it = seen.find(cid);
      const int times = it == seen.end() ? 0 : it->second;
      if (times != 1) FAIL_CHECK(cid << " is present " << times << " times");
    }
  }
}

mcpcore::sqlite_audit_sink open_sink(const std::string& path) {
  auto s = mcpcore::sqlite_audit_sink::open(path);
  if (!s) FAIL("open failed: " << s.error().message());
  return std::move(*s);
}

}  // namespace

TEST_SUITE("concurrency") {
  TEST_CASE("sqlite_audit_sink: 4 threads recording through one sink, one reading, every row present exactly once") {
    const test_process::temp_dir dir;
    auto sink = open_sink(dir.file("audit.db"));
    record_race([&](int) -> mcpcore::sqlite_audit_sink& { return sink; }, sink, 4, 200);
  }

  TEST_CASE("sqlite_audit_sink: 4 threads on two sinks of one file, a third sink reading, every row exactly once") {
    // Two connections contend for SQLite's write lock, as two processes would.
    const test_process::temp_dir dir;
    const std::string path = dir.file("audit.db");
    auto a = open_sink(path);
    auto b = open_sink(path);
    const auto reader = open_sink(path);
    record_race([&](int t) -> mcpcore::sqlite_audit_sink& { return t % 2 == 0 ? a : b; }, reader, 4, 100);
  }
}
