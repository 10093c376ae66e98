// SPDX-License-Identifier: Apache-2.0
// docs/concepts/task_store.md's example, compiled and run so that the documentation cannot rot.
#include <mcpcore/governance/task.hpp>

#include <doctest/doctest.h>

#include "support/process.hpp"
#include "support/task_store_suite.hpp"

#include <mcpcore/stores/memory_task_store.hpp>
#include <mcpcore/stores/sqlite_task_store.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace task_store_doc {

// ---- docs/concepts/task_store.md snippet (keep identical) ----
// Counts the tasks that ended, by how they ended, for a status page. A transition is counted
// only when the store answered `updated` to a terminal status: of racing ends of one task
// exactly one is `updated` (requirement 1), so each task is counted once however a cancel
// races its completion. The other members pass through unchanged.
template <mcpcore::task_store Inner>
class ended_counter {
 public:
  explicit ended_counter(Inner& inner) : inner_(&inner) {}
  std::size_t ended(mcpcore::task_status s) const noexcept { return counts_[index(s)].load(); }

  mcpcore::result<mcpcore::task_create_result> create(const mcpcore::task_create_request& c) {
    return inner_->create(c);
  }
  mcpcore::result<std::optional<mcpcore::task_record>> get(std::string_view id, mcpcore::task_time now) {
    return inner_->get(id, now);
  }
  mcpcore::result<mcpcore::task_transition_status> transition(const mcpcore::task_transition& t) {
    auto r = inner_->transition(t);
    if (r && *r == mcpcore::task_transition_status::updated && mcpcore::is_terminal(t.to)) {
      ++counts_[index(t.to)];
    }
    return r;
  }
  mcpcore::result<std::vector<mcpcore::task_record>> list(const mcpcore::task_list_request& l) {
    return inner_->list(l);
  }
  mcpcore::result<std::size_t> expire(mcpcore::task_time now) { return inner_->expire(now); }
  mcpcore::result<std::size_t> abandon_unfinished(mcpcore::task_time now, std::string_view message,
                                                  mcpcore::task_payload kind, std::string_view payload) {
    auto r = inner_->abandon_unfinished(now, message, kind, payload);
    if (r) counts_[index(mcpcore::task_status::failed)] += *r;
    return r;
  }

 private:
  static std::size_t index(mcpcore::task_status s) noexcept { return static_cast<std::size_t>(s); }
  Inner* inner_;
  std::array<std::atomic<std::size_t>, 5> counts_{};
};
static_assert(mcpcore::task_store<ended_counter<mcpcore::memory_task_store>>);
static_assert(mcpcore::task_store<ended_counter<mcpcore::sqlite_task_store>>);
// ---- end of snippet ----

// The suite's make() wants one owning handle: the inner store first, then the counter over it.
struct memory_holder {
  mcpcore::memory_task_store inner;
};
struct counted_memory_store : memory_holder, ended_counter<mcpcore::memory_task_store> {
  counted_memory_store() : ended_counter(inner) {}
};

}  // namespace task_store_doc

TEST_CASE("docs/concepts/task_store.md: the counter passes the task store conformance suite") {
  mcpcore_test::task_store_conformance([] { return std::make_unique<task_store_doc::counted_memory_store>(); });
}

TEST_CASE("docs/concepts/task_store.md: racing ends of one task are counted once") {
  const auto store = std::make_shared<task_store_doc::counted_memory_store>();
  mcpcore_test::task_store_terminal_race([store] { return store; }, 4);  // four tasks, four racers each
  using mcpcore::task_status;
  CHECK(store->ended(task_status::completed) + store->ended(task_status::failed) +
            store->ended(task_status::cancelled) ==
        4);
  CHECK(store->ended(task_status::working) == 0);
}

TEST_CASE("docs/concepts/task_store.md: over the SQLite store, the tasks a restart abandons count as failed") {
  namespace suite = mcpcore_test::task_store_suite_detail;
  const test_process::temp_dir dir;
  const std::string path = dir.file("tasks.db");
  suite::task_spec running;
  suite::task_spec finished;
  {
    auto before = mcpcore::sqlite_task_store::open(path);
    REQUIRE(before);
    suite::create_ok(*before, running);
    suite::create_ok(*before, finished);
    REQUIRE(to_string(suite::transition(*before, finished.record.id, mcpcore::task_status::completed, suite::at(1),
                                        "", mcpcore::task_payload::result, "{}")) == "updated");
  }
  auto after = mcpcore::sqlite_task_store::open(path);  // the restart
  REQUIRE(after);
  task_store_doc::ended_counter<mcpcore::sqlite_task_store> store{*after};
  CHECK(suite::must(store.abandon_unfinished(suite::at(2), "the server restarted", mcpcore::task_payload::none,
                                             "")) == 1);
  CHECK(store.ended(mcpcore::task_status::failed) == 1);
  CHECK(to_string(suite::task(store, running.record.id, suite::at(2)).status) == "failed");
  CHECK(to_string(suite::task(store, finished.record.id, suite::at(2)).status) == "completed");
}
