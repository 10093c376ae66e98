// SPDX-License-Identifier: Apache-2.0
// Tests of the in-memory task store: the task_store conformance suite
// (docs/concepts/task_store.md#valid-expressions, #semantic-requirements), its bounds and its
// races.
#include <mcpcore/stores/memory_task_store.hpp>

#include <doctest/doctest.h>

#include "support/task_store_suite.hpp"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

using namespace mcpcore;
namespace suite = mcpcore_test::task_store_suite_detail;

static_assert(task_store<memory_task_store>);

TEST_CASE("memory_task_store passes the task_store conformance suite (concepts/task_store.md/valid-expressions, concepts/task_store.md/semantic-requirements)") {
  mcpcore_test::task_store_conformance([] { return std::make_unique<memory_task_store>(); });
}

TEST_CASE("memory_task_store: size() counts live, terminal and expired-but-unswept tasks, refusals add nothing") {
  memory_task_store s;
  CHECK(s.size() == 0);
  suite::task_spec a;
  a.lasting(std::chrono::milliseconds{10});
  suite::create_ok(s, a);
  suite::task_spec b;
  suite::create_ok(s, b);
  REQUIRE(to_string(suite::transition(s, b.record.id, task_status::completed, suite::at(1))) == "updated");
  CHECK(s.size() == 2);
  suite::task_spec capped;
  capped.max_per_owner = 2;
  CHECK(to_string(suite::create(s, capped).status) == "owner_cap");
  suite::task_spec dup;
  dup.record.id = b.record.id;
  CHECK(to_string(suite::create(s, dup).status) == "duplicate_id");
  CHECK(s.size() == 2);
  CHECK(suite::get(s, a.record.id, suite::at(10)) == std::nullopt);
  CHECK(s.size() == 2);  // get does not sweep
  CHECK(suite::must(s.expire(suite::at(10))) == 1);
  CHECK(s.size() == 1);
}

TEST_CASE("concepts/task_store.md/semantic-requirements: requirement 5: memory_task_store holds at most max_total tasks whatever is asked") {
  memory_task_store s;
  for (int i = 0; i < 2000; ++i) {
    suite::task_spec t;
    t.by("owner-" + std::to_string(i % 50)).max_total = 64;
    t.max_per_owner = 1000;
    (void)suite::create(s, t);
  }
  CHECK(s.size() == 64);
  // Expiry gives the room back, to the same bound.
  for (int i = 0; i < 200; ++i) {
    suite::task_spec t;
    t.when(suite::at(suite::ttl.count())).max_total = 64;
    (void)suite::create(s, t);
  }
  CHECK(s.size() == 64);
  CHECK(suite::list_ids(s, "alice", 0, 1000, suite::at(suite::ttl.count())).size() == 64);
}

TEST_CASE("concepts/task_store.md/semantic-requirements: requirements 1 and 5: memory_task_store: of racing terminal transitions exactly one is updated, racing creates never overrun a cap") {
  const auto store = std::make_shared<memory_task_store>();
  mcpcore_test::task_store_terminal_race([store] { return store; }, 4);
  const auto fresh = std::make_shared<memory_task_store>();
  mcpcore_test::task_store_create_race([fresh] { return fresh; }, 4, 8);
  CHECK(fresh->size() == 24);
}
