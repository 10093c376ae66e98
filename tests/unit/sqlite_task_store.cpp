// SPDX-License-Identifier: Apache-2.0
// Tests of the SQLite task store: schema and migration, a file shared with the approval store and
// the audit sink, results across store and process restarts, the error mapping
// (docs/concepts/task_store.md#shipped-models, #restart, #errors), and the shared task_store
// conformance suite.
#include <mcpcore/stores/sqlite_task_store.hpp>

#include <doctest/doctest.h>

#include "support/process.hpp"
#include "support/raw_sqlite.hpp"
#include "support/store_opener.hpp"
#include "support/task_store_suite.hpp"

#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/task.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/stores/sqlite_approval_store.hpp>
#include <mcpcore/stores/sqlite_audit_sink.hpp>

#include <sqlite3.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

using namespace mcpcore;
using namespace test_process;
using std::chrono::milliseconds;
using test_sqlite::damage_table_root_page;
using test_sqlite::raw_db;
namespace suite = mcpcore_test::task_store_suite_detail;

static_assert(task_store<sqlite_task_store>);
static_assert(mcpcore_test::move_only<sqlite_task_store>);

namespace {

sqlite_task_store open_store(const std::string& path, sqlite_task_store_options o = {}) {
  return mcpcore_test::open_or_fail<sqlite_task_store>(path, o);
}

std::string tasks_db(const temp_dir& dir) { return dir.file("tasks.db"); }

const std::string result_json = R"({"content":[{"type":"text","text":"42"}],"structuredContent":{"answer":42}})";
const std::string restart_error = R"({"code":-32603,"message":"the server restarted before the task finished"})";

// Creates a working task of alice's (bob's when `owner` says so) at t0; its spec.
suite::task_spec create_task(sqlite_task_store& s, const char* owner = "alice") {
  suite::task_spec t;
  t.by(owner);
  suite::create_ok(s, t);
  return t;
}

// Every member of `s` fails with `e`.
void check_every_write_fails(sqlite_task_store& s, approval_store_errc e, const std::string& live_id) {
  suite::task_spec t;
  const auto c = s.create(t.request());
  REQUIRE_FALSE(c);
  CHECK(c.error() == e);
  CHECK(is_permanent_store_error(c.error()));
  const auto tr = s.transition(task_transition{live_id, task_status::completed, "", task_payload::none, "", suite::t0});
  REQUIRE_FALSE(tr);
  CHECK(tr.error() == e);
  const auto x = s.expire(suite::at(suite::ttl.count() * 10));
  REQUIRE_FALSE(x);
  CHECK(x.error() == e);
  const auto a = s.abandon_unfinished(suite::t0, "restart", task_payload::none, "");
  REQUIRE_FALSE(a);
  CHECK(a.error() == e);
}

}  // namespace

// ---- schema and migration ---------------------------------------------------------------------

TEST_CASE("sqlite_task_store schema: a fresh file gets version 1 in its own table, the tasks table, its indexes and WAL, and leaves user_version alone") {
  const temp_dir dir;
  {
    auto s = open_store(tasks_db(dir));
    CHECK(sqlite_task_store::schema_version == 1);
    raw_db raw(tasks_db(dir));
    CHECK(raw.integer("SELECT version FROM mcpcore_task_schema WHERE id = 1") == 1);
    CHECK(raw.integer("PRAGMA user_version") == 0);  // the approval store's
    CHECK(raw.text("PRAGMA journal_mode") == "wal");
    for (const char* index : {"mcpcore_tasks_owner", "mcpcore_tasks_expiry", "mcpcore_tasks_live"}) {
      CAPTURE(index);
      const std::string q =
          std::string("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = '") + index + "'";
      CHECK(raw.integer(q.c_str()) == 1);
    }
    // The CHECK constraints keep statuses and payload kinds to task.hpp's vocabulary.
    CHECK(raw.exec("INSERT INTO mcpcore_tasks (id, owner, tool, status, status_message, created_at, updated_at,"
                   " ttl_ms, poll_interval_ms, expires_at, payload_kind, payload)"
                   " VALUES ('x', 'a', 't', 'running', '', 0, 0, 1, 1, 1, 'none', '')") == SQLITE_CONSTRAINT);
    CHECK(raw.exec("INSERT INTO mcpcore_tasks (id, owner, tool, status, status_message, created_at, updated_at,"
                   " ttl_ms, poll_interval_ms, expires_at, payload_kind, payload)"
                   " VALUES ('x', 'a', 't', 'working', '', 0, 0, 1, 1, 1, 'blob', '')") == SQLITE_CONSTRAINT);
  }
  raw_db raw(tasks_db(dir));
  CHECK(raw.text("PRAGMA journal_mode") == "wal");
}

TEST_CASE("sqlite_task_store schema: a newer task schema is refused as schema_too_new (permanent), untouched") {
  const temp_dir dir;
  {
    auto s = open_store(tasks_db(dir));
    create_task(s);
  }
  {
    raw_db raw(tasks_db(dir));
    REQUIRE(raw.exec("UPDATE mcpcore_task_schema SET version = 2") == SQLITE_OK);
  }
  for (const bool read_only : {false, true}) {
    CAPTURE(read_only);
    sqlite_task_store_options o;
    o.read_only = read_only;
    const auto s = sqlite_task_store::open(tasks_db(dir), o);
    REQUIRE_FALSE(s);
    CHECK(s.error() == approval_store_errc::schema_too_new);
    CHECK(is_permanent_store_error(s.error()));
    CHECK(s.error().message().find("task store") != std::string::npos);
  }
  raw_db raw(tasks_db(dir));
  CHECK(raw.integer("SELECT version FROM mcpcore_task_schema") == 2);
  CHECK(raw.integer("SELECT count(*) FROM mcpcore_tasks") == 1);
}

TEST_CASE("sqlite_task_store schema: one file holds the approval store, the audit sink and the task store, whichever opens first") {
  for (const bool tasks_first : {true, false}) {
    CAPTURE(tasks_first);
    const temp_dir dir;
    const std::string path = dir.file("host.db");
    const approval_mint_request m{"0123456789abcdef0123456789abcdef",
                                  "mcp.deploy",
                                  approval_origin_mcp,
                                  "alice",
                                  "{}",
                                  suite::t0,
                                  std::chrono::days{7},
                                  25,
                                  1000};
    suite::task_spec t;
    {
      std::optional<sqlite_task_store> tasks;
      if (tasks_first) tasks.emplace(open_store(path));
      auto approvals = sqlite_approval_store::open(path);
      REQUIRE(approvals);
      auto audit = sqlite_audit_sink::open(path);
      REQUIRE(audit);
      if (!tasks_first) tasks.emplace(open_store(path));
      const auto minted = approvals->mint(m);
      REQUIRE(minted);
      CHECK(minted->status == approval_mint_status::created);
      suite::create_ok(*tasks, t);
      CHECK(audit->record(audit_record{"mcp.tasks/create", "task", t.record.id, "alice", audit_result::success, "",
                                       "cid-1", std::chrono::system_clock::now()}));
    }
    // Reopened in the other order, each finds its own rows and version.
    auto approvals = sqlite_approval_store::open(path);
    REQUIRE(approvals);
    auto tasks = open_store(path);
    const auto ticket = approvals->get(m.id);
    REQUIRE(ticket);
    CHECK(ticket->has_value());
    CHECK(suite::task(tasks, t.record.id, suite::t0).owner == "alice");
    raw_db raw(path);
    CHECK(raw.integer("PRAGMA user_version") == sqlite_approval_store::schema_version);
    CHECK(raw.integer("SELECT version FROM mcpcore_task_schema") == sqlite_task_store::schema_version);
    CHECK(raw.integer("SELECT version FROM mcpcore_audit_schema") == sqlite_audit_sink::schema_version);
    CHECK(raw.integer("SELECT count(*) FROM mcpcore_approvals") == 1);
    CHECK(raw.integer("SELECT count(*) FROM mcpcore_tasks") == 1);
    CHECK(raw.integer("SELECT count(*) FROM mcpcore_audit") == 1);
  }
}

TEST_CASE("sqlite_task_store schema: four processes opening one fresh file together migrate it once and keep every task") {
  const temp_dir dir;
  const std::string path = tasks_db(dir);
  constexpr unsigned n = 4;
  start_gate gate;
  std::vector<pid_t> children;
  for (unsigned i = 0; i < n; ++i) {
    children.push_back(spawn([&] {
      gate.wait();
      auto s = sqlite_task_store::open(path);
      if (!s) return 10 + static_cast<int>(s.error().code().value());
      suite::task_spec t;
      const auto c = s->create(t.request());
      return c && c->status == task_create_status::created ? 0 : 2;
    }));
  }
  gate.open();
  for (const pid_t pid : children) CHECK(wait_exit(pid) == 0);
  auto s = open_store(path);
  CHECK(suite::list_ids(s, "alice", 0, 100).size() == n);
  raw_db raw(path);
  CHECK(raw.integer("SELECT count(*) FROM mcpcore_task_schema") == 1);
}

// ---- restarts ---------------------------------------------------------------------------------

TEST_CASE("concepts/task_store.md/restart: a finished task's result survives closing and reopening the store, a live one is failed by abandon_unfinished after the reopen") {
  const temp_dir dir;
  suite::task_spec done;
  suite::task_spec live;
  suite::task_spec asking;
  std::uint64_t done_seq = 0;
  {
    auto s = open_store(tasks_db(dir));
    done_seq = suite::create_ok(s, done);
    suite::create_ok(s, live);
    suite::create_ok(s, asking);
    REQUIRE(to_string(suite::transition(s, done.record.id, task_status::completed, suite::at(5), "", task_payload::result,
                                        result_json)) == "updated");
    REQUIRE(to_string(suite::transition(s, live.record.id, task_status::working, suite::at(6), "halfway")) ==
            "updated");
    REQUIRE(to_string(suite::transition(s, asking.record.id, task_status::input_required, suite::at(7), "",
                                        task_payload::input_requests, R"({"q":{}})")) == "updated");
  }
  auto s = open_store(tasks_db(dir));
  // What a server does at start with a durable store.
  CHECK(suite::must(s.abandon_unfinished(suite::at(100), "the server restarted", task_payload::error, restart_error)) ==
        2);
  const auto d = suite::task(s, done.record.id, suite::at(100));
  CHECK(to_string(d.status) == "completed");
  CHECK(to_string(d.payload_kind) == "result");
  CHECK(d.payload == result_json);
  CHECK(d.seq == done_seq);
  CHECK(suite::show(d.updated_at) == suite::show(suite::at(5)));
  for (const auto* t : {&live, &asking}) {
    const auto r = suite::task(s, t->record.id, suite::at(100));
    CHECK(to_string(r.status) == "failed");
    CHECK(r.status_message == "the server restarted");
    CHECK(to_string(r.payload_kind) == "error");
    CHECK(r.payload == restart_error);
    CHECK(suite::show(r.updated_at) == suite::show(suite::at(100)));
    // Failed is final: the work that might still report for it finds it terminal.
    CHECK(to_string(suite::transition(s, t->record.id, task_status::completed, suite::at(101))) == "terminal");
  }
  // The owner still lists all three; the result stays until its ttl, then goes.
  CHECK(suite::list_ids(s, "alice", 0, 10, suite::at(100)).size() == 3);
  CHECK(suite::get(s, done.record.id, suite::at(suite::ttl.count())) == std::nullopt);
}

TEST_CASE("concepts/task_store.md/restart: tasks of a process that dies without closing: the finished result is readable after the restart, the running one is failed") {
  const temp_dir dir;
  const std::string path = tasks_db(dir);
  suite::task_spec done;
  suite::task_spec running;
  const pid_t child = spawn([&] {
    auto s = sqlite_task_store::open(path);
    if (!s) return 10;
    for (const auto* t : {&done, &running}) {
      const auto c = s->create(t->request());
      if (!c || c->status != task_create_status::created) return 11;
    }
    const auto r = s->transition(task_transition{done.record.id, task_status::completed, "", task_payload::result,
                                                 result_json, suite::at(1)});
    if (!r || *r != task_transition_status::updated) return 12;
    // Dies without closing: only what was committed (and synced) survives.
    ::_exit(0);
  });
  REQUIRE(wait_exit(child) == 0);
  auto s = open_store(path);
  CHECK(suite::must(s.abandon_unfinished(suite::at(50), "the server restarted", task_payload::error, restart_error)) ==
        1);
  const auto d = suite::task(s, done.record.id, suite::at(50));
  CHECK(to_string(d.status) == "completed");
  CHECK(d.payload == result_json);
  const auto r = suite::task(s, running.record.id, suite::at(50));
  CHECK(to_string(r.status) == "failed");
  CHECK(r.payload == restart_error);
}

TEST_CASE("sqlite_task_store: seq never repeats, not after the newest tasks were deleted and the store reopened") {
  const temp_dir dir;
  std::uint64_t last = 0;
  {
    auto s = open_store(tasks_db(dir));
    for (int i = 0; i < 3; ++i) last = suite::create_ok(s, suite::task_spec{});
    REQUIRE(suite::must(s.expire(suite::at(suite::ttl.count()))) == 3);
  }
  auto s = open_store(tasks_db(dir));
  suite::task_spec later;
  later.when(suite::at(suite::ttl.count()));
  CHECK(suite::create_ok(s, later) > last);
}

// ---- errors -----------------------------------------------------------------------------------

TEST_CASE("concepts/task_store.md/errors: a database locked past the busy timeout is busy (transient) and the tasks stay intact") {
  const temp_dir dir;
  sqlite_task_store_options o;
  o.busy_timeout = milliseconds{50};
  auto s = open_store(tasks_db(dir), o);
  const auto a = create_task(s);
  raw_db locker(tasks_db(dir));
  REQUIRE(locker.exec("BEGIN EXCLUSIVE") == SQLITE_OK);

  const auto started = std::chrono::steady_clock::now();
  suite::task_spec b;
  const auto c = s.create(b.request());
  const auto waited = std::chrono::steady_clock::now() - started;
  REQUIRE_FALSE(c);
  CHECK(c.error() == approval_store_errc::busy);
  CHECK_FALSE(is_permanent_store_error(c.error()));
  CHECK(c.error().message() == "task store busy (locked past the busy timeout)");
  CHECK(waited >= milliseconds{45});
  CHECK(waited < milliseconds{4000});
  const auto t = s.transition(task_transition{a.record.id, task_status::completed, "", task_payload::none, "", suite::at(1)});
  REQUIRE_FALSE(t);
  CHECK(t.error() == approval_store_errc::busy);
  const auto x = s.expire(suite::at(suite::ttl.count()));
  REQUIRE_FALSE(x);
  CHECK(x.error() == approval_store_errc::busy);
  const auto ab = s.abandon_unfinished(suite::at(1), "restart", task_payload::none, "");
  REQUIRE_FALSE(ab);
  CHECK(ab.error() == approval_store_errc::busy);
  // WAL: readers are not blocked by the writer, and nothing changed.
  CHECK(to_string(suite::task(s, a.record.id, suite::at(1)).status) == "working");

  REQUIRE(locker.exec("ROLLBACK") == SQLITE_OK);
  CHECK(to_string(suite::transition(s, a.record.id, task_status::completed, suite::at(2))) == "updated");
  suite::create_ok(s, b);
}

TEST_CASE("concepts/task_store.md/errors: a read-only store refuses every write as read_only (permanent) and still reads") {
  const temp_dir dir;
  suite::task_spec a;
  {
    auto s = open_store(tasks_db(dir));
    suite::create_ok(s, a);
  }
  sqlite_task_store_options o;
  o.read_only = true;
  auto s = open_store(tasks_db(dir), o);
  check_every_write_fails(s, approval_store_errc::read_only, a.record.id);
  const auto c = s.create(suite::task_spec{}.request());
  REQUIRE_FALSE(c);
  CHECK(c.error().message() == "task store is read-only");
  CHECK(to_string(suite::task(s, a.record.id, suite::t0).status) == "working");
  CHECK(suite::list_ids(s, "alice", 0, 10) == std::vector<std::string>{a.record.id});
}

TEST_CASE("concepts/task_store.md/errors: a read-only open of a file without the task schema is read_only, of a missing file closed") {
  const temp_dir dir;
  {
    auto approvals = sqlite_approval_store::open(tasks_db(dir));  // another store's schema only
    REQUIRE(approvals);
  }
  sqlite_task_store_options o;
  o.read_only = true;
  const auto empty = sqlite_task_store::open(tasks_db(dir), o);
  REQUIRE_FALSE(empty);
  CHECK(empty.error() == approval_store_errc::read_only);
  CHECK(is_permanent_store_error(empty.error()));
  const auto missing = sqlite_task_store::open(dir.file("missing.db"), o);
  REQUIRE_FALSE(missing);
  CHECK(missing.error() == approval_store_errc::closed);
  CHECK_FALSE(std::filesystem::exists(dir.file("missing.db")));
  raw_db raw(tasks_db(dir));
  CHECK(raw.integer("SELECT count(*) FROM sqlite_master WHERE name = 'mcpcore_tasks'") == 0);
}

TEST_CASE("concepts/task_store.md/errors: create=false does not create a missing file, a missing directory is closed (permanent)") {
  const temp_dir dir;
  sqlite_task_store_options o;
  o.create = false;
  const auto s = sqlite_task_store::open(tasks_db(dir), o);
  REQUIRE_FALSE(s);
  CHECK(s.error() == approval_store_errc::closed);
  CHECK(is_permanent_store_error(s.error()));
  CHECK_FALSE(std::filesystem::exists(tasks_db(dir)));
  const std::string nowhere_path = dir.file("no/such/dir.db");
  const auto nowhere = sqlite_task_store::open(nowhere_path);
  REQUIRE_FALSE(nowhere);
  CHECK(nowhere.error() == approval_store_errc::closed);
  // docs/errors.md#one-error-shape: the message names the store and the file.
  CHECK(nowhere.error().message() == "cannot open the task store " + nowhere_path + ": task store is not open");
}

TEST_CASE("concepts/task_store.md/errors: a file that is not a database is corrupt (permanent)") {
  const temp_dir dir;
  {
    std::FILE* f = std::fopen(tasks_db(dir).c_str(), "wb");
    REQUIRE(f != nullptr);
    for (int i = 0; i < 8192; ++i) std::fputc("not a database "[i % 15], f);
    std::fclose(f);
  }
  for (const bool read_only : {false, true}) {
    CAPTURE(read_only);
    sqlite_task_store_options o;
    o.read_only = read_only;
    const auto s = sqlite_task_store::open(tasks_db(dir), o);
    REQUIRE_FALSE(s);
    CHECK(s.error() == approval_store_errc::corrupt);
    CHECK(is_permanent_store_error(s.error()));
  }
}

TEST_CASE("concepts/task_store.md/errors: a damaged table page is reported as corrupt (permanent)") {
  const temp_dir dir;
  const std::string path = tasks_db(dir);
  suite::task_spec a;
  {
    auto s = open_store(path);
    suite::create_ok(s, a);
  }
  REQUIRE_FALSE(std::filesystem::exists(path + "-wal"));  // checkpointed into the file
  damage_table_root_page(path, "mcpcore_tasks");  // page 1 stays intact: the file still opens
  auto s = open_store(path);
  const auto g = s.get(a.record.id, suite::t0);
  REQUIRE_FALSE(g);
  CHECK(g.error() == approval_store_errc::corrupt);
  CHECK(is_permanent_store_error(g.error()));
  const auto l = s.list(task_list_request{"alice", 0, 10, suite::t0});
  REQUIRE_FALSE(l);
  CHECK(l.error() == approval_store_errc::corrupt);
  const auto c = s.create(suite::task_spec{}.request());
  REQUIRE_FALSE(c);
  CHECK(is_permanent_store_error(c.error()));
  const auto t = s.transition(task_transition{a.record.id, task_status::completed, "", task_payload::none, "", suite::t0});
  REQUIRE_FALSE(t);
  CHECK(is_permanent_store_error(t.error()));
}

TEST_CASE("concepts/task_store.md/errors: a stored status outside the vocabulary reads as corrupt (permanent)") {
  const temp_dir dir;
  suite::task_spec a;
  {
    auto s = open_store(tasks_db(dir));
    suite::create_ok(s, a);
  }
  {
    raw_db raw(tasks_db(dir));
    REQUIRE(raw.exec("PRAGMA ignore_check_constraints = ON; UPDATE mcpcore_tasks SET status = 'running'") == SQLITE_OK);
  }
  auto s = open_store(tasks_db(dir));
  const auto g = s.get(a.record.id, suite::t0);
  REQUIRE_FALSE(g);
  CHECK(g.error() == approval_store_errc::corrupt);
  const auto l = s.list(task_list_request{"alice", 0, 10, suite::t0});
  REQUIRE_FALSE(l);
  CHECK(l.error() == approval_store_errc::corrupt);
  // The conditional update does not match 'running', and the probe cannot read it.
  const auto t = s.transition(task_transition{a.record.id, task_status::completed, "", task_payload::none, "", suite::t0});
  REQUIRE_FALSE(t);
  CHECK(t.error() == approval_store_errc::corrupt);
}

TEST_CASE("concepts/task_store.md/errors: a moved-from store is closed (permanent), the moved-to store works") {
  const temp_dir dir;
  auto a = open_store(tasks_db(dir));
  const auto t = create_task(a);
  sqlite_task_store b = std::move(a);
  const auto check_closed = [&](sqlite_task_store& s) {
    check_every_write_fails(s, approval_store_errc::closed, t.record.id);
    const auto g = s.get(t.record.id, suite::t0);
    REQUIRE_FALSE(g);
    CHECK(g.error() == approval_store_errc::closed);
    const auto l = s.list(task_list_request{"alice", 0, 10, suite::t0});
    REQUIRE_FALSE(l);
    CHECK(l.error() == approval_store_errc::closed);
  };
  check_closed(a);  // NOLINT(bugprone-use-after-move): the moved-from state is what is tested
  CHECK(suite::get(b, t.record.id, suite::t0).has_value());

  auto c = open_store(dir.file("other.db"));
  c = std::move(b);  // closes other.db's connection, takes b's
  check_closed(b);   // NOLINT(bugprone-use-after-move)
  CHECK(suite::get(c, t.record.id, suite::t0).has_value());
}

// ---- the shared conformance suite -------------------------------------------------------------

TEST_CASE("plugins.md: the SQLite task store passes the task_store conformance suite") {
  const temp_dir dir;
  mcpcore_test::task_store_conformance(mcpcore_test::store_files<sqlite_task_store>(dir, "suite"));
}

TEST_CASE("concepts/task_store.md/semantic-requirements: requirements 1 and 5 across connections: one racing terminal transition wins, racing creates never overrun a cap") {
  const temp_dir dir;
  const auto open = [](const std::string& path) { return std::make_unique<sqlite_task_store>(open_store(path)); };
  const std::string race_path = dir.file("race.db");
  mcpcore_test::task_store_terminal_race([&] { return open(race_path); }, 4);
  const std::string caps_path = dir.file("caps.db");
  mcpcore_test::task_store_create_race([&] { return open(caps_path); }, 4, 8);
}
