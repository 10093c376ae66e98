// SPDX-License-Identifier: Apache-2.0
// Concurrency tests of the approval stores: the at-most-once consume race (approval_store
// requirement 1, docs/approvals.md#what-the-machine-checks-in-order, #guarantees), run under TSan
// by the tsan preset.
#include <mcpcore/stores/memory_approval_store.hpp>

#include <doctest/doctest.h>

#include "support/approval_store_suite.hpp"
#include "support/process.hpp"

#include <mcpcore/stores/sqlite_approval_store.hpp>

#include <memory>
#include <string>
#include <utility>

TEST_SUITE("concurrency") {
  TEST_CASE("memory_approval_store: of 16 concurrent consumes of one ticket exactly one wins (approvals.md/guarantees)") {
    // Every "connection" is a shared handle to the one in-process store.
    const auto store = std::make_shared<mcpcore::memory_approval_store>();
    mcpcore_test::approval_store_consume_race([store] { return store; }, 16);
    CHECK(store->size() == 4);  // the suite's four tickets, all consumed and kept as history
  }
}

TEST_SUITE("concurrency") {
  TEST_CASE("sqlite_approval_store: of 8 concurrent consumes of one ticket exactly one wins (approvals.md/guarantees)") {
    // Twice: with one connection per thread, and with one store shared by all threads.
    const test_process::temp_dir dir;
    const auto open = [](const std::string& path) {
      auto s = mcpcore::sqlite_approval_store::open(path);
      if (!s) FAIL("open failed: " << s.error().message());
      return std::make_unique<mcpcore::sqlite_approval_store>(std::move(*s));
    };
    {
      // One store (one connection) per thread on one file: the race crosses connections and
      // is decided by SQLite's write lock and the conditional UPDATE, as between processes.
      const std::string path = dir.file("connections.db");
      mcpcore_test::approval_store_consume_race([&] { return open(path); }, 8);
    }
    {
      // One store shared by every thread: the race is decided under the store's own mutex.
      const std::shared_ptr<mcpcore::sqlite_approval_store> shared = open(dir.file("shared.db"));
      mcpcore_test::approval_store_consume_race([shared] { return shared; }, 8);
    }
  }
}
