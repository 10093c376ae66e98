// SPDX-License-Identifier: Apache-2.0
// Tests of the SQLite approval store: schema and migration, durability across store and process
// restarts, exactly-once consumption across processes, fault mapping
// (docs/concepts/approval_store.md#valid-expressions, docs/approvals.md#the-flow,
// #what-the-machine-checks-in-order, #lifetime, #every-answer-of-the-machine, #guarantees;
// docs/plugins.md, docs/approvals.md), and the shared approval_store conformance, prune and history
// suites.
#include <mcpcore/stores/sqlite_approval_store.hpp>
#include <mcpcore/governance/approval.hpp>

// The prune batch's and the history's exact SQL text (inline data only: no definitions of the
// compiled library).
#include <mcpcore/stores/impl/sqlite_common.ipp>

#include <doctest/doctest.h>

#include "support/approval_store_suite.hpp"
#include "support/approval_tickets.hpp"
#include "support/process.hpp"
#include "support/raw_sqlite.hpp"
#include "support/store_opener.hpp"

#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

using namespace mcpcore;
using namespace test_process;
using namespace approval_tickets;
using std::chrono::milliseconds;

static_assert(approval_store<sqlite_approval_store>);
static_assert(approval_store_history<sqlite_approval_store>);
static_assert(mcpcore_test::move_only<sqlite_approval_store>);

namespace {

using test_sqlite::damage_table_root_page;
using test_sqlite::raw_db;

sqlite_approval_store open_store(const std::string& path, sqlite_approval_store_options o = {}) {
  return mcpcore_test::open_or_fail<sqlite_approval_store>(path, o);
}

}  // namespace

// ---- schema and migration ---------------------------------------------------------------------

TEST_CASE("sqlite store schema: a fresh file gets user_version 3, the tickets table, its indexes and WAL mode") {
  const temp_dir dir;
  {
    auto s = open_store(dir.file());
    CHECK(sqlite_approval_store::schema_version == 3);
    // While the store is open (WAL is a property of the file, so this also shows it persists).
    raw_db raw(dir.file());
    CHECK(raw.integer("PRAGMA user_version") == 3);
    CHECK(raw.text("PRAGMA journal_mode") == "wal");
    CHECK(raw.integer("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'mcpcore_approvals'") == 1);
    CHECK(raw.integer("SELECT count(*) FROM pragma_table_info('mcpcore_approvals') WHERE name = 'server'") == 1);
    for (const char* index : {"mcpcore_approvals_dedup", "mcpcore_approvals_submitter", "mcpcore_approvals_pending",
                              "mcpcore_approvals_redeemable", "mcpcore_approvals_finished",
                              "mcpcore_approvals_reviewed"}) {
      CAPTURE(index);
      const std::string q = std::string("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = '") +
                            index + "'";
      CHECK(raw.integer(q.c_str()) == 1);
    }
    // The CHECK constraint keeps statuses to the four of
    // docs/concepts/approval_store.md#valid-expressions.
    CHECK(raw.exec("INSERT INTO mcpcore_approvals (id, definition_id, status, origin, submitted_by, submitted_at, "
                   "scope) VALUES ('x', 'mcp.t', 'consumed', 'mcp', 'a', 0, '{}')") == SQLITE_CONSTRAINT);
  }
  raw_db raw(dir.file());
  CHECK(raw.text("PRAGMA journal_mode") == "wal");
}

TEST_CASE("sqlite store schema: reopening a migrated file is idempotent and keeps the tickets") {
  const temp_dir dir;
  const auto id = tid(1);
  {
    auto s = open_store(dir.file());
    REQUIRE(s.mint(mint_req(id)));
  }
  for (int i = 0; i < 3; ++i) {
    auto s = open_store(dir.file());
    const auto t = s.get(id);
    REQUIRE(t);
    REQUIRE(t->has_value());
    CHECK((*t)->status == approval_status::pending);
  }
  raw_db raw(dir.file());
  CHECK(raw.integer("PRAGMA user_version") == sqlite_approval_store::schema_version);
  CHECK(raw.integer("SELECT count(*) FROM mcpcore_approvals") == 1);
}

TEST_CASE("sqlite store schema: an existing database at user_version 0 is migrated, its other tables untouched") {
  const temp_dir dir;
  {
    raw_db raw(dir.file());
    REQUIRE(raw.exec("CREATE TABLE host_notes (k TEXT); INSERT INTO host_notes VALUES ('kept');") == SQLITE_OK);
  }
  {
    auto s = open_store(dir.file());
    REQUIRE(s.mint(mint_req(tid(1))));
  }
  raw_db raw(dir.file());
  CHECK(raw.integer("PRAGMA user_version") == sqlite_approval_store::schema_version);
  CHECK(raw.text("SELECT k FROM host_notes") == "kept");
  CHECK(raw.integer("SELECT count(*) FROM mcpcore_approvals") == 1);
}

TEST_CASE("sqlite store schema: a database from a newer schema is refused as schema_too_new (permanent), untouched") {
  const temp_dir dir;
  {
    raw_db raw(dir.file());
    REQUIRE(raw.exec("PRAGMA user_version = 99") == SQLITE_OK);
  }
  for (const bool read_only : {false, true}) {
    CAPTURE(read_only);
    sqlite_approval_store_options o;
    o.read_only = read_only;
    const auto s = sqlite_approval_store::open(dir.file(), o);
    REQUIRE_FALSE(s);
    CHECK(s.error() == approval_store_errc::schema_too_new);
    CHECK(is_permanent_store_error(s.error()));
  }
  raw_db raw(dir.file());
  CHECK(raw.integer("PRAGMA user_version") == 99);
  CHECK(raw.integer("SELECT count(*) FROM sqlite_master") == 0);
}

TEST_CASE("sqlite store schema: four processes opening one fresh file together migrate it once") {
  const temp_dir dir;
  const std::string path = dir.file();
  constexpr unsigned n = 4;
  start_gate gate;
  std::vector<pid_t> children;
  for (unsigned i = 0; i < n; ++i) {
    children.push_back(spawn([&] {
      gate.wait();
      auto s = sqlite_approval_store::open(path);
      if (!s) return 10 + static_cast<int>(s.error().code().value());
      const auto id = tid(i + 1);
      const auto m = s->mint(mint_req(id, "alice", "{\"i\":" + std::to_string(i) + "}"));
      return m && m->status == approval_mint_status::created ? 0 : 2;
    }));
  }
  gate.open();
  for (const pid_t pid : children) CHECK(wait_exit(pid) == 0);
  auto s = open_store(path);
  const auto p = s.pending(100);
  REQUIRE(p);
  CHECK(p->size() == n);
  raw_db raw(path);
  CHECK(raw.integer("PRAGMA user_version") == sqlite_approval_store::schema_version);
}

namespace {

// Schema version 1 exactly as the library released it wrote it (sqlite_approval_store.ipp's first
// migration step; never edited): the file an upgrade finds.
constexpr const char* schema_v1 =
    "CREATE TABLE mcpcore_approvals ("
    " id TEXT NOT NULL PRIMARY KEY,"
    " definition_id TEXT NOT NULL,"
    " status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),"
    " origin TEXT NOT NULL,"
    " submitted_by TEXT NOT NULL,"
    " submitted_at INTEGER NOT NULL,"
    " reviewed_by TEXT NOT NULL DEFAULT '',"
    " reviewed_at INTEGER,"
    " review_comment TEXT NOT NULL DEFAULT '',"
    " scope TEXT NOT NULL,"
    " consumed_at INTEGER,"
    " consumed_by TEXT NOT NULL DEFAULT '',"
    " expired_at INTEGER"
    ");"
    "CREATE INDEX mcpcore_approvals_dedup ON mcpcore_approvals (definition_id, submitted_by, submitted_at)"
    " WHERE status = 'pending';"
    "CREATE INDEX mcpcore_approvals_submitter ON mcpcore_approvals (submitted_by) WHERE status = 'pending';"
    "CREATE INDEX mcpcore_approvals_pending ON mcpcore_approvals (submitted_at, id) WHERE status = 'pending';"
    "CREATE INDEX mcpcore_approvals_redeemable ON mcpcore_approvals (reviewed_at)"
    " WHERE status = 'approved' AND consumed_at IS NULL;"
    "PRAGMA user_version = 1;";

// The plan SQLite chooses for `sql` on `path`: the detail column of every EXPLAIN QUERY PLAN row.
std::string query_plan(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  const std::string explain = "EXPLAIN QUERY PLAN " + sql;
  const int rc = sqlite3_prepare_v2(db, explain.c_str(), -1, &s, nullptr);
  const std::string why = rc == SQLITE_OK ? "" : sqlite3_errmsg(db);
  std::string plan;
  while (rc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
    const auto* text = sqlite3_column_text(s, 3);
    if (text != nullptr) plan.append(reinterpret_cast<const char*>(text)).append("\n");
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  REQUIRE_MESSAGE(rc == SQLITE_OK, why);
  return plan;
}

}  // namespace

TEST_CASE("approvals.md/several-servers: a file of schema version 1 is migrated to the current version: its tickets read "
          "with an empty server, new mints keep theirs") {
  const temp_dir dir;
  const std::string path = dir.file();
  {
    raw_db raw(path);
    REQUIRE(raw.exec(schema_v1) == SQLITE_OK);
    // A consumed ticket and a pending one, as version 1 stored them.
    REQUIRE(raw.exec("INSERT INTO mcpcore_approvals (id, definition_id, status, origin, submitted_by, submitted_at,"
                     " reviewed_by, reviewed_at, review_comment, scope, consumed_at, consumed_by) VALUES"
                     " ('00000000000000000000000000000001', 'mcp.deploy', 'approved', 'mcp', 'alice',"
                     " 1700000000000, 'bob', 1700000060000, 'ok', '{\"n\":1}', 1700003600000, 'alice');"
                     "INSERT INTO mcpcore_approvals (id, definition_id, status, origin, submitted_by, submitted_at,"
                     " scope) VALUES ('00000000000000000000000000000002', 'mcp.deploy', 'pending', 'mcp', 'alice',"
                     " 1700000000000, '{\"n\":2}');") == SQLITE_OK);
  }
  auto s = open_store(path);
  {
    raw_db raw(path);
    CHECK(raw.integer("PRAGMA user_version") == sqlite_approval_store::schema_version);
    CHECK(raw.integer("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'mcpcore_approvals_finished'") ==
          1);
    CHECK(raw.integer("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'mcpcore_approvals_reviewed'") ==
          1);
  }
  const auto old = s.get(tid(1));
  REQUIRE(old);
  REQUIRE(old->has_value());
  const approval_ticket& v1 = old->value();
  CHECK(v1.server.empty());
  CHECK(v1.consumed_by == "alice");
  CHECK(v1.review_comment == "ok");
  // Its review is in the history (approvals.md/recently-reviewed).
  const auto reviewed = s.recently_reviewed(10);
  REQUIRE(reviewed);
  REQUIRE(reviewed->size() == 1);
  CHECK(reviewed->front().id == tid(1));
  CHECK(reviewed->front().reviewed_by == "bob");
  const auto listed = s.pending(10);
  REQUIRE(listed);
  REQUIRE(listed->size() == 1);
  CHECK(listed->front().id == tid(2));
  CHECK(listed->front().server.empty());
  // The same key from a new server dedups to the old ticket (approvals.md/several-servers).
  const std::string id3 = tid(3);
  const std::string id4 = tid(4);
  auto again = mint_req(id3, "alice", R"({"n":2})");
  again.server = "s2";
  const auto deduped = s.mint(again);
  REQUIRE(deduped);
  CHECK(deduped->status == approval_mint_status::deduped);
  CHECK(deduped->id == tid(2));
  auto fresh = mint_req(id4, "alice", R"({"n":4})");
  fresh.server = "s2";
  REQUIRE(s.mint(fresh));
  const auto t = s.get(id4);
  REQUIRE(t);
  REQUIRE(t->has_value());
  CHECK(t->value().server == "s2");
  // Retention works on the migrated rows.
  const auto pruned = s.prune(t0 + std::chrono::days{1});
  REQUIRE(pruned);
  CHECK(*pruned == 1);
  const auto gone = s.get(tid(1));
  REQUIRE(gone);
  CHECK_FALSE(gone->has_value());
}

TEST_CASE("approvals.md/retention: the SQLite prune batch selects finished tickets through their index, not a table scan") {
  const temp_dir dir;
  const std::string path = dir.file();
  { auto s = open_store(path); }
  const std::string plan = query_plan(path, detail::sqlite::approval_prune_batch_sql);
  CAPTURE(plan);
  CHECK(plan.find("USING INDEX mcpcore_approvals_finished") != std::string::npos);
  CHECK(plan.find("SCAN mcpcore_approvals") == std::string::npos);
}

TEST_CASE("approvals.md/recently-reviewed: a file of schema version 2 gets the index of reviewed tickets when a writer "
          "opens it, idempotently, and keeps its tickets") {
  const temp_dir dir;
  const std::string path = dir.file();
  const auto count_index = [&] {
    raw_db raw(path);
    return raw.integer("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'mcpcore_approvals_reviewed'");
  };
  {
    auto s = open_store(path);
    mint_approved(s, tid(1));
  }
  // Version 2 exactly: version 3 is version 2 and the index.
  {
    raw_db raw(path);
    REQUIRE(raw.exec("DROP INDEX mcpcore_approvals_reviewed; PRAGMA user_version = 2;") == SQLITE_OK);
  }
  REQUIRE(count_index() == 0);
  // A read-only open cannot migrate: refused until a writer did.
  sqlite_approval_store_options ro;
  ro.read_only = true;
  const auto early = sqlite_approval_store::open(path, ro);
  REQUIRE_FALSE(early);
  CHECK(early.error() == approval_store_errc::read_only);
  for (int round = 0; round < 2; ++round) {
    CAPTURE(round);
    {
      auto s = open_store(path);
      raw_db raw(path);
      CHECK(raw.integer("PRAGMA user_version") == 3);
      CHECK(count_index() == 1);
      const auto listed = s.recently_reviewed(10);
      REQUIRE(listed);
      REQUIRE(listed->size() == 1);
      CHECK(listed->front().id == tid(1));
      check_intact(s, tid(1));
    }
    // The second round: a version 2 file that already has the index (created ahead of the
    // upgrade) migrates all the same.
    raw_db raw(path);
    REQUIRE(raw.exec("PRAGMA user_version = 2") == SQLITE_OK);
  }
  const auto writer = open_store(path);  // migrates the file the last round left at 2
  auto s = open_store(path, ro);
  const auto listed = s.recently_reviewed(10);
  REQUIRE(listed);
  CHECK(listed->size() == 1);
}

TEST_CASE("approvals.md/recently-reviewed: the SQLite history reads the index of reviewed tickets in its order, no table "
          "scan and no sort") {
  const temp_dir dir;
  const std::string path = dir.file();
  { auto s = open_store(path); }
  const auto check_plan = [&] {
    const std::string plan = query_plan(path, detail::sqlite::approval_select_reviewed_sql);
    CAPTURE(plan);
    CHECK(plan.find("USING INDEX mcpcore_approvals_reviewed") != std::string::npos);
    CHECK(plan.find("TEMP B-TREE") == std::string::npos);  // the index order is the result's order
  };
  check_plan();  // an empty file, no statistics
  {
    // A table worth an index: 20,000 reviewed tickets and 2,000 pending ones, with statistics.
    raw_db raw(path);
    REQUIRE(raw.exec("WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 22000)"
                     " INSERT INTO mcpcore_approvals (id, definition_id, status, origin, submitted_by, submitted_at,"
                     " reviewed_by, reviewed_at, scope) SELECT printf('%032x', n), 'mcp.deploy',"
                     " CASE WHEN n <= 20000 THEN 'rejected' ELSE 'pending' END, 'mcp', 'alice', n,"
                     " CASE WHEN n <= 20000 THEN 'bob' ELSE '' END, CASE WHEN n <= 20000 THEN n END, '{}' FROM g;"
                     "ANALYZE;") == SQLITE_OK);
  }
  check_plan();
  auto s = open_store(path);
  const auto listed = s.recently_reviewed(3);
  REQUIRE(listed);
  REQUIRE(listed->size() == 3);
  CHECK((*listed)[0].id == tid(20000));
  CHECK((*listed)[2].id == tid(19998));
}

// ---- durability ---------------------------------------------------------------------------------

TEST_CASE("approvals.md/guarantees: a ticket approved through one store is consumed exactly once through the next") {
  const temp_dir dir;
  const auto id = tid(7);
  {
    auto a = open_store(dir.file());
    mint_approved(a, id);
  }
  auto b = open_store(dir.file());
  const auto t = b.get(id);
  REQUIRE(t);
  REQUIRE(t->has_value());
  CHECK((*t)->status == approval_status::approved);
  CHECK((*t)->reviewed_by == "bob");
  CHECK_FALSE((*t)->consumed_at);
  const auto first = b.consume(consume_req(id));
  REQUIRE(first);
  CHECK(*first == approval_consume_status::consumed);
  const auto second = b.consume(consume_req(id));
  REQUIRE(second);
  CHECK(*second == approval_consume_status::not_consumable);
  const auto after = b.get(id);
  REQUIRE(after);
  REQUIRE(after->has_value());
  CHECK((*after)->consumed_at == t0 + std::chrono::hours{1});
  CHECK((*after)->consumed_by == "alice");
}

TEST_CASE("approvals.md/guarantees: a ticket approved by a process that then dies is consumed exactly once after the restart") {
  const temp_dir dir;
  const std::string path = dir.file();
  const auto id = tid(8);
  const pid_t child = spawn([&] {
    auto s = sqlite_approval_store::open(path);
    if (!s) return 10;
    const auto m = s->mint(mint_req(id));
    if (!m || m->status != approval_mint_status::created) return 11;
    const auto r = s->review(review_req(id));
    if (!r || *r != approval_review_status::reviewed) return 12;
    // Dies without closing: only what was committed (and synced) survives.
    ::_exit(0);
  });
  REQUIRE(wait_exit(child) == 0);
  auto s = open_store(path);
  const auto first = s.consume(consume_req(id));
  REQUIRE(first);
  CHECK(*first == approval_consume_status::consumed);
  const auto second = s.consume(consume_req(id));
  REQUIRE(second);
  CHECK(*second == approval_consume_status::not_consumable);
}

TEST_CASE("approvals.md/guarantees: of four processes consuming one ticket at once, exactly one wins") {
  const temp_dir dir;
  const std::string path = dir.file();
  // Each opens its store after the start: the opening races too.
  mcpcore_test::approval_store_consume_process_race([&] { return sqlite_approval_store::open(path); }, 4,
                                                    mcpcore_test::race_connect::after_start);
}

// ---- faults (docs/approvals.md#every-answer-of-the-machine: transient vs permanent)
// ----------------------------------------------

TEST_CASE("approvals.md/every-answer-of-the-machine: a database locked past the busy timeout is busy (transient) and the tickets stay intact") {
  const temp_dir dir;
  const auto armed = tid(1);
  const auto waiting = tid(2);
  const auto fresh = tid(3);
  sqlite_approval_store_options o;
  o.busy_timeout = milliseconds{50};
  auto s = open_store(dir.file(), o);
  mint_approved(s, armed);
  REQUIRE(s.mint(mint_req(waiting, "carol")));

  raw_db locker(dir.file());
  REQUIRE(locker.exec("BEGIN EXCLUSIVE") == SQLITE_OK);

  const auto started = std::chrono::steady_clock::now();
  const auto m = s.mint(mint_req(fresh, "dave"));
  const auto waited = std::chrono::steady_clock::now() - started;
  REQUIRE_FALSE(m);
  CHECK(m.error() == approval_store_errc::busy);
  CHECK_FALSE(is_permanent_store_error(m.error()));
  CHECK(waited >= milliseconds{45});  // the busy timeout was honoured ...
  CHECK(waited < milliseconds{4000});  // ... and it is the configured one, not the default

  const auto c = s.consume(consume_req(armed));
  REQUIRE_FALSE(c);
  CHECK(c.error() == approval_store_errc::busy);
  CHECK_FALSE(is_permanent_store_error(c.error()));
  const auto r = s.review(review_req(waiting));
  REQUIRE_FALSE(r);
  CHECK(r.error() == approval_store_errc::busy);
  const auto e = s.expire(t0 + std::chrono::days{30}, lifetime);
  REQUIRE_FALSE(e);
  CHECK(e.error() == approval_store_errc::busy);

  // WAL: readers are not blocked by the writer, and nothing changed.
  check_intact(s, armed);
  // A second store can open the already-migrated file while the lock is held.
  auto other = sqlite_approval_store::open(dir.file(), o);
  CHECK(other.has_value());

  REQUIRE(locker.exec("ROLLBACK") == SQLITE_OK);
  const auto c2 = s.consume(consume_req(armed));
  REQUIRE(c2);
  CHECK(*c2 == approval_consume_status::consumed);
  const auto r2 = s.review(review_req(waiting));
  REQUIRE(r2);
  CHECK(*r2 == approval_review_status::reviewed);
  const auto m2 = s.mint(mint_req(fresh, "dave"));
  REQUIRE(m2);
  CHECK(m2->status == approval_mint_status::created);
}

TEST_CASE("approvals.md/every-answer-of-the-machine: a read-only store refuses every write as read_only (permanent) and still reads") {
  const temp_dir dir;
  const auto id = tid(1);
  {
    auto s = open_store(dir.file());
    mint_approved(s, id);
  }
  sqlite_approval_store_options o;
  o.read_only = true;
  auto s = open_store(dir.file(), o);
  const auto m = s.mint(mint_req(tid(2)));
  REQUIRE_FALSE(m);
  CHECK(m.error() == approval_store_errc::read_only);
  CHECK(is_permanent_store_error(m.error()));
  const auto c = s.consume(consume_req(id));
  REQUIRE_FALSE(c);
  CHECK(c.error() == approval_store_errc::read_only);
  const auto r = s.review(review_req(id));
  REQUIRE_FALSE(r);
  CHECK(r.error() == approval_store_errc::read_only);
  const auto e = s.expire(t0, lifetime);
  REQUIRE_FALSE(e);
  CHECK(e.error() == approval_store_errc::read_only);
  check_intact(s, id);
  const auto p = s.pending(10);
  REQUIRE(p);
  CHECK(p->empty());
}

TEST_CASE("approvals.md/every-answer-of-the-machine: a read-only open of a file without the schema is read_only, of a missing file closed") {
  const temp_dir dir;
  sqlite_approval_store_options o;
  o.read_only = true;
  {
    raw_db raw(dir.file());
    REQUIRE(raw.exec("CREATE TABLE t (x)") == SQLITE_OK);
  }
  const auto empty = sqlite_approval_store::open(dir.file(), o);
  REQUIRE_FALSE(empty);
  CHECK(empty.error() == approval_store_errc::read_only);
  CHECK(is_permanent_store_error(empty.error()));
  const auto missing = sqlite_approval_store::open(dir.file("missing.db"), o);
  REQUIRE_FALSE(missing);
  CHECK(missing.error() == approval_store_errc::closed);
  CHECK(is_permanent_store_error(missing.error()));
  CHECK_FALSE(std::filesystem::exists(dir.file("missing.db")));
}

TEST_CASE("approvals.md/every-answer-of-the-machine: create=false does not create a missing file (closed, permanent)") {
  const temp_dir dir;
  sqlite_approval_store_options o;
  o.create = false;
  const auto s = sqlite_approval_store::open(dir.file(), o);
  REQUIRE_FALSE(s);
  CHECK(s.error() == approval_store_errc::closed);
  CHECK(is_permanent_store_error(s.error()));
  CHECK_FALSE(std::filesystem::exists(dir.file()));
  const auto nowhere = sqlite_approval_store::open(dir.file("no/such/dir.db"));
  REQUIRE_FALSE(nowhere);
  CHECK(nowhere.error() == approval_store_errc::closed);
}

TEST_CASE("approvals.md/every-answer-of-the-machine: a database file of mode 0444 refuses writes as read_only (permanent) and still reads") {
  const temp_dir dir;
  const std::string path = dir.file();
  const auto id = tid(1);
  {
    auto s = open_store(path);
    REQUIRE(s.mint(mint_req(id)));
  }
  REQUIRE(::chmod(path.c_str(), 0444) == 0);
  // The checks, as codes: 0 = as expected.
  const auto attempt = [&]() -> int {
    auto s = sqlite_approval_store::open(path);
    if (!s) return 20 + s.error().code().value();
    const auto m = s->mint(mint_req(tid(2)));
    if (m) return 11;
    if (m.error() != approval_store_errc::read_only) return 12;
    if (!is_permanent_store_error(m.error())) return 13;
    const auto r = s->review(review_req(id));
    if (r || r.error() != approval_store_errc::read_only) return 14;
    const auto t = s->get(id);
    if (!t || !t->has_value() || (*t)->status != approval_status::pending) return 15;
    return 0;
  };
  if (::geteuid() != 0) {
    CHECK(attempt() == 0);
    return;
  }
  // root writes through any mode bits: run the attempt as an unprivileged user, in a directory
  // it may write (a reader of a WAL database needs its -shm file; only the database is 0444).
  REQUIRE(::chmod(dir.path().c_str(), 0777) == 0);
  const pid_t child = spawn([&] {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) return 100;
    return attempt();
  });
  const int code = wait_exit(child);
  if (code == 100) {
    MESSAGE("cannot drop privileges here: the mode-0444 case is not exercised");
    return;
  }
  CHECK(code == 0);
}

TEST_CASE("approvals.md/every-answer-of-the-machine: a file that is not a database is corrupt (permanent)") {
  const temp_dir dir;
  {
    std::FILE* f = std::fopen(dir.file().c_str(), "wb");
    REQUIRE(f != nullptr);
    for (int i = 0; i < 8192; ++i) std::fputc("not a database "[i % 15], f);
    std::fclose(f);
  }
  for (const bool read_only : {false, true}) {
    CAPTURE(read_only);
    sqlite_approval_store_options o;
    o.read_only = read_only;
    const auto s = sqlite_approval_store::open(dir.file(), o);
    REQUIRE_FALSE(s);
    CHECK(s.error() == approval_store_errc::corrupt);
    CHECK(is_permanent_store_error(s.error()));
  }
}

namespace {

// A store on a new file at `path` whose ticket `id` was approved, then the root page of the table
// or index `what` damaged while no store had the file open (page 1 stays intact: the file still
// opens).
sqlite_approval_store damaged_store(const std::string& path, const std::string& id, const std::string& what) {
  {
    auto s = open_store(path);
    mint_approved(s, id);
  }
  // The last connection checkpointed the WAL into the file and removed it.
  REQUIRE_FALSE(std::filesystem::exists(path + "-wal"));
  damage_table_root_page(path, what);
  return open_store(path);
}

}  // namespace

TEST_CASE("approvals.md/every-answer-of-the-machine: a damaged table page is reported as corrupt (permanent)") {
  const temp_dir dir;
  const auto id = tid(1);
  auto s = damaged_store(dir.file(), id, "mcpcore_approvals");
  const auto t = s.get(id);
  REQUIRE_FALSE(t);
  CHECK(t.error() == approval_store_errc::corrupt);
  CHECK(is_permanent_store_error(t.error()));
  const auto m = s.mint(mint_req(tid(2), "carol"));
  REQUIRE_FALSE(m);
  CHECK(m.error() == approval_store_errc::corrupt);
  const auto c = s.consume(consume_req(id));
  REQUIRE_FALSE(c);
  CHECK(is_permanent_store_error(c.error()));
  const auto h = s.recently_reviewed(10);
  REQUIRE_FALSE(h);
  CHECK(h.error() == approval_store_errc::corrupt);
}

TEST_CASE("approvals.md/every-answer-of-the-machine: a damaged history index fails recently_reviewed as corrupt "
          "(permanent), get still reads the ticket") {
  const temp_dir dir;
  const auto id = tid(1);
  auto s = damaged_store(dir.file(), id, "mcpcore_approvals_reviewed");
  const auto h = s.recently_reviewed(10);
  REQUIRE_FALSE(h);
  CHECK(h.error() == approval_store_errc::corrupt);
  CHECK(is_permanent_store_error(h.error()));
  check_intact(s, id);
}

TEST_CASE("approvals.md/every-answer-of-the-machine: a moved-from store is closed (permanent), the moved-to store works") {
  const temp_dir dir;
  const auto id = tid(1);
  auto a = open_store(dir.file());
  REQUIRE(a.mint(mint_req(id)));
  sqlite_approval_store b = std::move(a);
  const auto check_closed = [&](sqlite_approval_store& s) {
    const auto m = s.mint(mint_req(tid(2)));
    REQUIRE_FALSE(m);
    CHECK(m.error() == approval_store_errc::closed);
    CHECK(is_permanent_store_error(m.error()));
    const auto g = s.get(id);
    REQUIRE_FALSE(g);
    CHECK(g.error() == approval_store_errc::closed);
    const auto c = s.consume(consume_req(id));
    REQUIRE_FALSE(c);
    CHECK(c.error() == approval_store_errc::closed);
    const auto r = s.review(review_req(id));
    REQUIRE_FALSE(r);
    CHECK(r.error() == approval_store_errc::closed);
    const auto e = s.expire(t0, lifetime);
    REQUIRE_FALSE(e);
    CHECK(e.error() == approval_store_errc::closed);
    const auto p = s.pending(10);
    REQUIRE_FALSE(p);
    CHECK(p.error() == approval_store_errc::closed);
    const auto h = s.recently_reviewed(10);
    REQUIRE_FALSE(h);
    CHECK(h.error() == approval_store_errc::closed);
  };
  check_closed(a);  // NOLINT(bugprone-use-after-move): the moved-from state is what is tested
  const auto g = b.get(id);
  REQUIRE(g);
  CHECK(g->has_value());

  auto c = open_store(dir.file("other.db"));
  c = std::move(b);  // closes other.db's connection, takes b's
  check_closed(b);   // NOLINT(bugprone-use-after-move)
  const auto g2 = c.get(id);
  REQUIRE(g2);
  CHECK(g2->has_value());
}

TEST_CASE("approval_store requirement 3: a failed mint changes nothing (its sweep is rolled back too)") {
  const temp_dir dir;
  const auto old_id = tid(1);
  auto s = open_store(dir.file());
  REQUIRE(s.mint(mint_req(old_id, "carol")));
  // Eight days later the old ticket is due for the sweep, but the insert fails (the id is taken).
  const auto later = t0 + std::chrono::days{8};
  const auto m = s.mint(mint_req(old_id, "alice", "{}", later));
  REQUIRE_FALSE(m);
  CHECK(is_permanent_store_error(m.error()));
  const auto t = s.get(old_id);
  REQUIRE(t);
  REQUIRE(t->has_value());
  CHECK((*t)->status == approval_status::pending);
  CHECK_FALSE((*t)->expired_at);
  // The sweep itself works once the mint succeeds.
  const auto ok = s.mint(mint_req(tid(2), "alice", "{}", later));
  REQUIRE(ok);
  CHECK(ok->status == approval_mint_status::created);
  const auto swept = s.get(old_id);
  REQUIRE(swept);
  REQUIRE(swept->has_value());
  CHECK((*swept)->status == approval_status::expired);
  CHECK((*swept)->expired_at == later);
}

// ---- semantics the SQL must get right --------------------------------------------------------------

TEST_CASE("approvals.md/lifetime: consuming an approved ticket past its lifetime expires it once, the status is persisted") {
  const temp_dir dir;
  const auto id = tid(1);
  auto s = open_store(dir.file());
  mint_approved(s, id);
  const auto reviewed_at = t0 + std::chrono::minutes{1};
  // Exactly at the boundary (reviewed_at == now - lifetime) the ticket is expired (`<=`).
  const auto at = reviewed_at + lifetime;
  const auto just_before = s.get(id);
  REQUIRE(just_before);
  const auto c = s.consume(consume_req(id, "alice", at));
  REQUIRE(c);
  CHECK(*c == approval_consume_status::expired);
  const auto t = s.get(id);
  REQUIRE(t);
  REQUIRE(t->has_value());
  CHECK((*t)->status == approval_status::expired);
  CHECK((*t)->expired_at == at);
  CHECK_FALSE((*t)->consumed_at);
  // Now it is simply not approved any more (approval_consume_request check 4).
  const auto again = s.consume(consume_req(id, "alice", at));
  REQUIRE(again);
  CHECK(*again == approval_consume_status::not_consumable);
}

TEST_CASE("approvals.md/lifetime: one millisecond inside the lifetime an approved ticket is still consumed") {
  const temp_dir dir;
  const auto id = tid(1);
  auto s = open_store(dir.file());
  mint_approved(s, id);
  const auto at = t0 + std::chrono::minutes{1} + lifetime - milliseconds{1};
  const auto c = s.consume(consume_req(id, "alice", at));
  REQUIRE(c);
  CHECK(*c == approval_consume_status::consumed);
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order, approvals.md/the-flow.d: the binding checks run in order: origin before submitter before status") {
  const temp_dir dir;
  const auto id = tid(1);
  auto s = open_store(dir.file());
  mint_approved(s, id);
  approval_consume_request both = consume_req(id, "mallory");
  both.origin = "instruction";
  const auto c1 = s.consume(both);
  REQUIRE(c1);
  CHECK(*c1 == approval_consume_status::foreign_origin);
  const auto c2 = s.consume(consume_req(id, "mallory"));
  REQUIRE(c2);
  CHECK(*c2 == approval_consume_status::foreign_submitter);
  // The refusals left the ticket redeemable (docs/approvals.md#guarantees).
  const auto c3 = s.consume(consume_req(id));
  REQUIRE(c3);
  CHECK(*c3 == approval_consume_status::consumed);
  // A consumed ticket is foreign to others before it is spent for them.
  const auto c4 = s.consume(consume_req(id, "mallory"));
  REQUIRE(c4);
  CHECK(*c4 == approval_consume_status::foreign_submitter);
}

// ---- input ---------------------------------------------------------------------------------------

TEST_CASE("concepts/approval_store.md/valid-expressions: an unknown id is nullopt for get and not_found for consume and review") {
  const temp_dir dir;
  auto s = open_store(dir.file());
  for (const std::string_view id : {std::string_view{}, std::string_view{"nope"}, std::string_view{"' OR 1=1 --"}}) {
    CAPTURE(id);
    const auto g = s.get(id);
    REQUIRE(g);
    CHECK_FALSE(g->has_value());
    const auto c = s.consume(consume_req(id));
    REQUIRE(c);
    CHECK(*c == approval_consume_status::not_found);
    const auto r = s.review(review_req(id));
    REQUIRE(r);
    CHECK(*r == approval_review_status::not_found);
  }
}

TEST_CASE("concepts/approval_store.md/valid-expressions: quotes, SQL text and Unicode round-trip exactly, empty strings stay empty") {
  const temp_dir dir;
  const auto id = tid(1);
  const std::string definition = "mcp.it's \"quoted\"; DROP TABLE mcpcore_approvals; --";
  const std::string submitter = "\xC3\xBC\x73\x65\x72 \xF0\x9F\x98\x80 '\\";  // "üser 😀 '\"
  const std::string scope = R"({"path":"C:\\temp\\a'b","q":"\"","u":"日本語"})";
  const std::string reviewer = "r\xC3\xA9viewer%_*";
  const std::string comment = "looks 'fine' -- \"ok\"\t\n";
  const std::string_view origin{};  // a null view: must be stored as "", not NULL
  auto s = open_store(dir.file());
  const approval_mint_request m{id, definition, origin, submitter, scope, t0, lifetime, 25, 1000};
  const auto minted = s.mint(m);
  REQUIRE(minted);
  REQUIRE(minted->status == approval_mint_status::created);
  // Dedup compares the same exact strings.
  const auto other_id = tid(2);  // alive while `again` views it
  const approval_mint_request again{other_id, definition, origin, submitter, scope, t0, lifetime, 25, 1000};
  const auto deduped = s.mint(again);
  REQUIRE(deduped);
  CHECK(deduped->status == approval_mint_status::deduped);
  CHECK(deduped->id == id);
  const approval_review_request r{id, reviewer, approval_status::approved, comment, t0 + milliseconds{5}, lifetime};
  REQUIRE(s.review(r));

  approval_ticket want;
  want.id = id;
  want.definition_id = definition;
  want.status = approval_status::approved;
  want.origin = origin;
  want.submitted_by = submitter;
  want.submitted_at = t0;
  want.reviewed_by = reviewer;
  want.reviewed_at = t0 + milliseconds{5};
  want.review_comment = comment;
  want.scope = scope;
  const auto got = s.get(id);
  REQUIRE(got);
  REQUIRE(got->has_value());
  CHECK(**got == want);

  const approval_consume_request c{id, submitter, origin, t0 + milliseconds{9}, lifetime};
  const auto consumed = s.consume(c);
  REQUIRE(consumed);
  CHECK(*consumed == approval_consume_status::consumed);
  want.consumed_at = t0 + milliseconds{9};
  want.consumed_by = submitter;
  const auto after = s.get(id);
  REQUIRE(after);
  REQUIRE(after->has_value());
  CHECK(**after == want);
}

TEST_CASE("approvals.md/the-flow: a 1 MiB scope round-trips and deduplicates") {
  const temp_dir dir;
  const auto id = tid(1);
  std::string scope = "{\"blob\":\"";
  while (scope.size() < (std::size_t{1} << 20) - 2) scope.push_back(static_cast<char>('a' + scope.size() % 26));
  scope += "\"}";
  REQUIRE(scope.size() == std::size_t{1} << 20);
  auto s = open_store(dir.file());
  const auto m = s.mint(mint_req(id, "alice", scope));
  REQUIRE(m);
  CHECK(m->status == approval_mint_status::created);
  const auto d = s.mint(mint_req(tid(2), "alice", scope));
  REQUIRE(d);
  CHECK(d->status == approval_mint_status::deduped);
  std::string other = scope;
  other[other.size() - 3] = '!';
  const auto n = s.mint(mint_req(tid(3), "alice", other));
  REQUIRE(n);
  CHECK(n->status == approval_mint_status::created);
  const auto t = s.get(id);
  REQUIRE(t);
  REQUIRE(t->has_value());
  CHECK((*t)->scope == scope);
}

TEST_CASE("approval_store: pending lists oldest first and honours any limit") {
  const temp_dir dir;
  auto s = open_store(dir.file());
  // Submitted out of order; two share a millisecond (ordered by id then).
  REQUIRE(s.mint(mint_req(tid(3), "a", "{}", t0 + milliseconds{2})));
  REQUIRE(s.mint(mint_req(tid(2), "b", "{}", t0 + milliseconds{1})));
  REQUIRE(s.mint(mint_req(tid(1), "c", "{}", t0 + milliseconds{2})));
  const auto all = s.pending(static_cast<std::size_t>(-1));
  REQUIRE(all);
  REQUIRE(all->size() == 3);
  CHECK((*all)[0].id == tid(2));
  CHECK((*all)[1].id == tid(1));
  CHECK((*all)[2].id == tid(3));
  const auto two = s.pending(2);
  REQUIRE(two);
  CHECK(two->size() == 2);
  const auto none = s.pending(0);
  REQUIRE(none);
  CHECK(none->empty());
}

// ---- the shared conformance suite --------------------------------------------------------------------

TEST_CASE("approvals.md/retention: the SQLite store passes the prune suite, and a read-only store refuses to prune") {
  const temp_dir dir;
  mcpcore_test::approval_store_prune_conformance(mcpcore_test::store_files<sqlite_approval_store>(dir, "prune"));
  const auto path = dir.file("prune-ro.db");
  REQUIRE(sqlite_approval_store::open(path));
  sqlite_approval_store_options ro;
  ro.read_only = true;
  auto s = sqlite_approval_store::open(path, ro);
  REQUIRE(s);
  const auto r = s->prune(approval_time{std::chrono::milliseconds{1}});
  REQUIRE_FALSE(r);
  CHECK(r.error() == approval_store_errc::read_only);
}

TEST_CASE("approvals.md/recently-reviewed: the SQLite store passes the history suite, and a read-only store lists the "
          "history") {
  const temp_dir dir;
  mcpcore_test::approval_store_history_conformance(mcpcore_test::store_files<sqlite_approval_store>(dir, "history"));
  const auto path = dir.file("history-ro.db");
  {
    auto w = open_store(path);
    mint_approved(w, tid(1));
  }
  sqlite_approval_store_options ro;
  ro.read_only = true;
  auto s = open_store(path, ro);
  const auto r = s.recently_reviewed(10);
  REQUIRE(r);
  REQUIRE(r->size() == 1);
  CHECK(r->front().id == tid(1));
}

TEST_CASE("approvals.md/recently-reviewed: reviews made through another connection, as by another process, are listed") {
  const temp_dir dir;
  const std::string path = dir.file();
  auto reader = open_store(path);
  const auto before = reader.recently_reviewed(10);
  REQUIRE(before);
  CHECK(before->empty());
  {
    // The child opens a store of its own and never touches the inherited one.
    const pid_t child = spawn([&] {
      auto w = sqlite_approval_store::open(path);
      if (!w) return 10;
      const auto m = w->mint(mint_req(tid(5)));
      if (!m || m->status != approval_mint_status::created) return 11;
      const auto r = w->review(review_req(tid(5), "carol"));
      return r && *r == approval_review_status::reviewed ? 0 : 12;
    });
    REQUIRE(wait_exit(child) == 0);
  }
  const auto listed = reader.recently_reviewed(10);
  REQUIRE(listed);
  REQUIRE(listed->size() == 1);
  CHECK(listed->front().id == tid(5));
  CHECK(listed->front().reviewed_by == "carol");
}

TEST_CASE("plugins.md: the SQLite store passes the approval_store conformance suite") {
  const temp_dir dir;
  mcpcore_test::approval_store_conformance(mcpcore_test::store_files<sqlite_approval_store>(dir, "suite"));
}
