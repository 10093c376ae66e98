// SPDX-License-Identifier: Apache-2.0
// Concurrency tests of the task stores: racing terminal transitions of one task (task_store
// requirement 1: exactly one is updated, as when tasks/cancel races the task's completion) and
// racing creates against the caps (requirement 5), run under TSan by the tsan preset
// (docs/concepts/task_store.md#semantic-requirements).
#include <mcpcore/stores/memory_task_store.hpp>

#include <doctest/doctest.h>

#include "support/process.hpp"
#include "support/task_store_suite.hpp"

#include <mcpcore/stores/sqlite_task_store.hpp>

#include <memory>
#include <string>
#include <utility>

TEST_SUITE("concurrency") {
  TEST_CASE("memory_task_store: of 16 concurrent terminal transitions of one task exactly one is updated, 16 racing creators never overrun a cap (concepts/task_store.md/semantic-requirements)") {
    // Every "connection" is a shared handle to the one in-process store.
    const auto store = std::make_shared<mcpcore::memory_task_store>();
    mcpcore_test::task_store_terminal_race([store] { return store; }, 16);
    CHECK(store->size() == 4);  // the four raced tasks, each ended once
    const auto caps = std::make_shared<mcpcore::memory_task_store>();
    mcpcore_test::task_store_create_race([caps] { return caps; }, 16, 4);
    CHECK(caps->size() == 24);
  }
}

TEST_SUITE("concurrency") {
  TEST_CASE("sqlite_task_store: of 8 concurrent terminal transitions of one task exactly one is updated, across connections and on one store (concepts/task_store.md/semantic-requirements)") {
    const test_process::temp_dir dir;
    const auto open = [](const std::string& path) {
      auto s = mcpcore::sqlite_task_store::open(path);
      if (!s) FAIL("open failed: " << s.error().message());
      return std::make_unique<mcpcore::sqlite_task_store>(std::move(*s));
    };
    {
      // One store (one connection) per thread on one file: the race is decided by SQLite's write
      // lock and the conditional UPDATE, as between processes.
      const std::string path = dir.file("connections.db");
      mcpcore_test::task_store_terminal_race([&] { return open(path); }, 8);
      const std::string caps = dir.file("connections-caps.db");
      mcpcore_test::task_store_create_race([&] { return open(caps); }, 8, 4);
    }
    {
      // One store shared by every thread: the race is decided under the store's own mutex.
      const std::shared_ptr<mcpcore::sqlite_task_store> shared = open(dir.file("shared.db"));
      mcpcore_test::task_store_terminal_race([shared] { return shared; }, 8);
      const std::shared_ptr<mcpcore::sqlite_task_store> caps = open(dir.file("shared-caps.db"));
      mcpcore_test::task_store_create_race([caps] { return caps; }, 8, 4);
    }
  }
}
