// SPDX-License-Identifier: Apache-2.0
// Tests of the SQLite audit sink: rows and their fields
// (docs/security.md#audit-and-the-one-cid-pattern), reads, retention, schema and its version,
// sharing a file, durability across restarts and crashes, and fault mapping.
#include <mcpcore/stores/sqlite_audit_sink.hpp>

#include <doctest/doctest.h>

#include "support/process.hpp"
#include "support/raw_sqlite.hpp"
#include "support/store_opener.hpp"

#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/stores/sqlite_approval_store.hpp>

#include <sqlite3.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

using namespace mcpcore;
using namespace test_process;
using std::chrono::milliseconds;

static_assert(audit_sink<sqlite_audit_sink>);
static_assert(mcpcore_test::move_only<sqlite_audit_sink>);
static_assert(noexcept(std::declval<sqlite_audit_sink&>().record(std::declval<const audit_record&>())));
static_assert(std::is_error_code_enum_v<sqlite_audit_errc>);
static_assert(sqlite_audit_sink_options{}.busy_timeout == milliseconds{5000});
static_assert(sqlite_audit_sink_options{}.max_rows == 1'000'000);
static_assert(sqlite_audit_sink_options{}.synchronous == sqlite_audit_synchronous::normal);

namespace {

using audit_time = std::chrono::system_clock::time_point;
const audit_time t0{milliseconds{1'700'000'000'000}};

using test_sqlite::raw_db;

sqlite_audit_sink open_sink(const std::string& path, sqlite_audit_sink_options o = {}) {
  return mcpcore_test::open_or_fail<sqlite_audit_sink>(path, o);
}

// A tool-call row of docs/security.md#audit-and-the-one-cid-pattern, told apart by its correlation
// id (which it views: keep `cid` alive as long as the row).
audit_record row(const std::string& cid, std::string_view principal = "alice", audit_time t = t0) {
  audit_record r;
  r.action = "mcp.delete_tag";
  r.target_type = "mcp_tool";
  r.target_id = "delete_tag";
  r.principal_id = principal;
  r.result = audit_result::success;
  r.detail = "tier=operator";
  r.correlation_id = cid;
  r.time = t;
  return r;
}

std::string cid(int i) { return "req-" + std::to_string(i); }

std::vector<sqlite_audit_row> all_rows(const sqlite_audit_sink& s) {
  sqlite_audit_query q;
  q.limit = 1'000'000;
  auto rows = s.query(q);
  REQUIRE(rows);
  return std::move(*rows);
}

}  // namespace

// ---- rows ---------------------------------------------------------------------------------------

TEST_CASE("sqlite_audit_sink: security.md/audit-and-the-one-cid-pattern: every field round-trips, time in milliseconds, result as its string") {
  const temp_dir dir;
  const std::string path = dir.file("audit.db");
  auto s = open_sink(path);
  const audit_result results[] = {audit_result::success, audit_result::denied,   audit_result::failure,
                                  audit_result::pending, audit_result::approved, audit_result::not_found};
  // 1.700000000123456789 s: the sub-millisecond part is truncated, as the JSON-lines stamps are.
  const audit_time t = t0 + std::chrono::nanoseconds{123'456'789};
  for (const auto r : results) {
    audit_record rec;
    rec.action = "mcp.deploy";
    rec.target_type = "mcp_tool";
    rec.target_id = "deploy";
    rec.principal_id = "alice";
    rec.result = r;
    rec.detail = "approval_id=abc (deduped)";
    rec.correlation_id = "req-1";
    rec.time = t;
    REQUIRE(s.record(rec));
  }
  const auto tail = s.tail(10);
  REQUIRE(tail);
  REQUIRE(tail->size() == 6);
  for (std::size_t i = 0; i < 6; ++i) {
    CAPTURE(i);
    const auto& e = (*tail)[i];
    CHECK(e.action == "mcp.deploy");
    CHECK(e.target_type == "mcp_tool");
    CHECK(e.target_id == "deploy");
    CHECK(e.principal_id == "alice");
    CHECK(e.result == results[i]);
    CHECK(e.detail == "approval_id=abc (deduped)");
    CHECK(e.correlation_id == "req-1");
    CHECK(e.time == t0 + milliseconds{123});
  }
  // On disk: integer milliseconds and the vocabulary's strings.
  raw_db raw(path);
  CHECK(raw.integer("SELECT time_ms FROM mcpcore_audit ORDER BY seq LIMIT 1") == 1'700'000'000'123);
  CHECK(raw.text("SELECT group_concat(result, ',') FROM (SELECT result FROM mcpcore_audit ORDER BY seq)") ==
        "success,denied,failure,pending,approved,not_found");
  CHECK(raw.text("SELECT principal FROM mcpcore_audit LIMIT 1") == "alice");
}

TEST_CASE("sqlite_audit_sink: security.md/audit-and-the-one-cid-pattern: quotes, SQL, Unicode, invalid UTF-8, NUL bytes, empty fields round-trip") {
  const temp_dir dir;
  auto s = open_sink(dir.file("audit.db"));
  const std::string sql = "x'); DROP TABLE mcpcore_audit; --";
  const std::string unicode = "caf\xC3\xA9 \xF0\x9F\x94\x91 \"quoted\" 'single'";
  const std::string invalid = std::string("bad \xFF\xC3 utf8");
  const std::string nul = std::string("a\0b", 3);
  audit_record rec;
  rec.action = sql;
  rec.target_type = unicode;
  rec.target_id = invalid;
  rec.principal_id = "";  // the system itself
  rec.result = audit_result::failure;
  rec.detail = nul;
  rec.correlation_id = "";
  rec.time = audit_time{};  // the epoch
  REQUIRE(s.record(rec));
  const auto rows = all_rows(s);
  REQUIRE(rows.size() == 1);
  const auto& e = rows[0].entry;
  CHECK(e.action == sql);
  CHECK(e.target_type == unicode);
  CHECK(e.target_id == invalid);
  CHECK(e.principal_id.empty());
  CHECK(e.result == audit_result::failure);
  CHECK(e.detail == nul);
  CHECK(e.correlation_id.empty());
  CHECK(e.time == audit_time{});
  // A time before the epoch is kept too (truncated towards the past).
  rec.time = audit_time{} - std::chrono::microseconds{1500};
  REQUIRE(s.record(rec));
  const auto t = s.tail(1);
  REQUIRE(t);
  REQUIRE(t->size() == 1);
  CHECK((*t)[0].time == audit_time{} - milliseconds{2});
}

TEST_CASE("sqlite_audit_sink: audit_sink requirement 1: a result outside the vocabulary is not persisted (false)") {
  const temp_dir dir;
  auto s = open_sink(dir.file("audit.db"));
  const std::string id = cid(1);
  auto rec = row(id);
  rec.result = static_cast<audit_result>(200);
  CHECK_FALSE(s.record(rec));
  CHECK(all_rows(s).empty());
  CHECK(s.record(row(cid(2))));  // the sink is still usable
  CHECK(all_rows(s).size() == 1);
}

// ---- reads --------------------------------------------------------------------------------------

TEST_CASE("sqlite_audit_sink: tail: the last `limit` rows, oldest first, fewer when there are fewer, none for 0") {
  const temp_dir dir;
  auto s = open_sink(dir.file("audit.db"));
  const auto empty = s.tail(5);
  REQUIRE(empty);
  CHECK(empty->empty());
  // Recorded with decreasing times: the order is the recording order (seq), not the time.
  for (int i = 0; i < 10; ++i) REQUIRE(s.record(row(cid(i), "alice", t0 - std::chrono::seconds{i})));
  const auto three = s.tail(3);
  REQUIRE(three);
  REQUIRE(three->size() == 3);
  CHECK((*three)[0].correlation_id == cid(7));
  CHECK((*three)[1].correlation_id == cid(8));
  CHECK((*three)[2].correlation_id == cid(9));
  const auto every = s.tail(100);
  REQUIRE(every);
  REQUIRE(every->size() == 10);
  for (int i = 0; i < 10; ++i) CHECK((*every)[static_cast<std::size_t>(i)].correlation_id == cid(i));
  const auto none = s.tail(0);
  REQUIRE(none);
  CHECK(none->empty());
  const auto huge = s.tail(static_cast<std::size_t>(-1));
  REQUIRE(huge);
  CHECK(huge->size() == 10);
}

TEST_CASE("sqlite_audit_sink: query: seq counts rows, principal, action prefix, time and seq filters combine") {
  const temp_dir dir;
  auto s = open_sink(dir.file("audit.db"));
  const auto at = [](int sec) { return t0 + std::chrono::seconds{sec}; };
  // A record's views must outlive it: the correlation ids are kept here.
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(cid(i));
  auto a = row(ids[0], "alice", at(0));
  a.action = "mcp.session.open";
  REQUIRE(s.record(a));                          // seq 1
  REQUIRE(s.record(row(ids[1], "bob", at(1))));  // seq 2, mcp.delete_tag
  a = row(ids[2], "", at(2));
  a.action = "mcp.bridge.done_reap";
  REQUIRE(s.record(a));  // seq 3, the system
  a = row(ids[3], "alice", at(3));
  a.action = "MCP.session.close";
  REQUIRE(s.record(a));                            // seq 4: another case
  REQUIRE(s.record(row(ids[4], "alice", at(4))));  // seq 5
  a = row(ids[5], "alice", at(5));
  a.action = "mcp%";
  REQUIRE(s.record(a));  // seq 6: a LIKE wildcard, taken literally

  const auto run = [&](const sqlite_audit_query& q) {
    const auto r = s.query(q);
    REQUIRE(r);
    std::vector<std::int64_t> seqs;
    for (const auto& x : *r) seqs.push_back(x.seq);
    return seqs;
  };
  using seqs = std::vector<std::int64_t>;
  sqlite_audit_query q;
  CHECK(run(q) == seqs{1, 2, 3, 4, 5, 6});
  CHECK(all_rows(s)[2].entry.correlation_id == cid(2));
  q.principal_id = "alice";
  CHECK(run(q) == seqs{1, 4, 5, 6});
  q.principal_id = "";
  CHECK(run(q) == seqs{3});
  q.principal_id.reset();
  q.action_prefix = "mcp.session.";
  CHECK(run(q) == seqs{1});  // case-sensitive: not MCP.session.close
  q.action_prefix = "mcp%";
  CHECK(run(q) == seqs{6});  // no wildcard
  q.action_prefix = "mcp.";
  CHECK(run(q) == seqs{1, 2, 3, 5});
  q.since = at(2);
  CHECK(run(q) == seqs{3, 5});
  q.since = at(2) + std::chrono::microseconds{500};  // compared in whole (truncated) milliseconds
  CHECK(run(q) == seqs{3, 5});
  q.principal_id = "alice";
  CHECK(run(q) == seqs{5});
  q = {};
  q.after_seq = 4;
  CHECK(run(q) == seqs{5, 6});
  q.after_seq = 0;
  q.limit = 2;
  CHECK(run(q) == seqs{5, 6});  // the newest matching rows, oldest first
  q.action_prefix = "mcp.";
  CHECK(run(q) == seqs{3, 5});
  q.limit = 0;
  CHECK(run(q).empty());
}

// ---- retention ----------------------------------------------------------------------------------

TEST_CASE("sqlite_audit_sink: retention: past max_rows each record prunes the oldest, seq is never reused") {
  const temp_dir dir;
  const std::string path = dir.file("audit.db");
  {
    sqlite_audit_sink_options o;
    o.max_rows = 5;
    auto s = open_sink(path, o);
    for (int i = 1; i <= 5; ++i) REQUIRE(s.record(row(cid(i))));
    CHECK(all_rows(s).size() == 5);
    for (int i = 6; i <= 12; ++i) {
      REQUIRE(s.record(row(cid(i))));
      const auto rows = all_rows(s);
      REQUIRE(rows.size() == 5);
      CHECK(rows.front().seq == i - 4);
      CHECK(rows.back().seq == i);
      CHECK(rows.back().entry.correlation_id == cid(i));
    }
  }
  {
    // A lowered limit is applied at open; seq continues above every row ever recorded.
    sqlite_audit_sink_options o;
    o.max_rows = 2;
    auto s = open_sink(path, o);
    auto rows = all_rows(s);
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].seq == 11);
    CHECK(rows[1].seq == 12);
    REQUIRE(s.record(row(cid(13))));
    rows = all_rows(s);
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].seq == 12);
    CHECK(rows[1].seq == 13);
  }
  {
    // 0: unbounded.
    sqlite_audit_sink_options o;
    o.max_rows = 0;
    auto s = open_sink(path, o);
    for (int i = 14; i <= 40; ++i) REQUIRE(s.record(row(cid(i))));
    const auto rows = all_rows(s);
    REQUIRE(rows.size() == 29);
    CHECK(rows.front().seq == 12);
    CHECK(rows.back().seq == 40);
  }
  raw_db raw(path);
  CHECK(raw.integer("SELECT count(*) FROM mcpcore_audit") == 29);
}

// ---- schema -------------------------------------------------------------------------------------

TEST_CASE("sqlite_audit_sink schema: a fresh file gets version 1 in its own table, the audit table, its index and WAL") {
  const temp_dir dir;
  const std::string path = dir.file("audit.db");
  {
    auto s = open_sink(path);
    CHECK(sqlite_audit_sink::schema_version == 1);
    raw_db raw(path);
    CHECK(raw.integer("SELECT version FROM mcpcore_audit_schema") == 1);
    CHECK(raw.integer("SELECT count(*) FROM mcpcore_audit_schema") == 1);
    CHECK(raw.integer("PRAGMA user_version") == 0);  // not the sink's
    CHECK(raw.text("PRAGMA journal_mode") == "wal");
    CHECK(raw.integer("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'mcpcore_audit'") == 1);
    CHECK(raw.integer("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'mcpcore_audit_time'") ==
          1);
    // The CHECK constraint keeps results to the vocabulary of
    // docs/security.md#audit-and-the-one-cid-pattern.
    CHECK(raw.exec("INSERT INTO mcpcore_audit (time_ms, action, target_type, target_id, principal, result, detail, "
                   "correlation_id) VALUES (0, 'a', '', '', '', 'ok', '', '')") == SQLITE_CONSTRAINT);
  }
  raw_db raw(path);
  CHECK(raw.text("PRAGMA journal_mode") == "wal");
}

TEST_CASE("sqlite_audit_sink schema: reopening keeps the rows, the file's other tables are untouched") {
  const temp_dir dir;
  const std::string path = dir.file("audit.db");
  {
    raw_db raw(path);
    REQUIRE(raw.exec("CREATE TABLE host_notes (k TEXT); INSERT INTO host_notes VALUES ('kept');") == SQLITE_OK);
  }
  {
    auto s = open_sink(path);
    for (int i = 0; i < 3; ++i) REQUIRE(s.record(row(cid(i))));
  }
  for (int n = 0; n < 3; ++n) {
    auto s = open_sink(path);
    const auto rows = all_rows(s);
    REQUIRE(rows.size() == 3);
    CHECK(rows[0].entry.correlation_id == cid(0));
    CHECK(rows[2].entry.correlation_id == cid(2));
  }
  raw_db raw(path);
  CHECK(raw.text("SELECT k FROM host_notes") == "kept");
  CHECK(raw.integer("SELECT version FROM mcpcore_audit_schema") == 1);
}

TEST_CASE("sqlite_audit_sink schema: a newer audit schema is refused as schema_too_new (permanent), untouched") {
  const temp_dir dir;
  const std::string path = dir.file("audit.db");
  {
    auto s = open_sink(path);
    REQUIRE(s.record(row(cid(1))));
  }
  {
    raw_db raw(path);
    REQUIRE(raw.exec("UPDATE mcpcore_audit_schema SET version = 99") == SQLITE_OK);
  }
  for (const bool read_only : {false, true}) {
    CAPTURE(read_only);
    sqlite_audit_sink_options o;
    o.read_only = read_only;
    o.max_rows = 0;
    const auto s = sqlite_audit_sink::open(path, o);
    REQUIRE_FALSE(s);
    CHECK(s.error() == sqlite_audit_errc::schema_too_new);
    CHECK(is_permanent_store_error(s.error()));
  }
  raw_db raw(path);
  CHECK(raw.integer("SELECT version FROM mcpcore_audit_schema") == 99);
  CHECK(raw.integer("SELECT count(*) FROM mcpcore_audit") == 1);
}

TEST_CASE("sqlite_audit_sink schema: one file holds the approval store and the audit sink, each with its own version") {
  for (const bool sink_first : {false, true}) {
    CAPTURE(sink_first);
    const temp_dir dir;
    const std::string path = dir.file("host.db");
    std::optional<sqlite_audit_sink> sink;
    if (sink_first) sink.emplace(open_sink(path));
    auto store = sqlite_approval_store::open(path);
    REQUIRE(store);
    if (!sink_first) sink.emplace(open_sink(path));
    const approval_mint_request m{"0123456789abcdef0123456789abcdef",
                                  "mcp.deploy",
                                  approval_origin_mcp,
                                  "alice",
                                  "{}",
                                  approval_time{milliseconds{1'700'000'000'000}},
                                  std::chrono::days{7},
                                  25,
                                  1000};
    const auto minted = store->mint(m);
    REQUIRE(minted);
    CHECK(minted->status == approval_mint_status::created);
    REQUIRE(sink->record(row(cid(1))));
    raw_db raw(path);
    CHECK(raw.integer("PRAGMA user_version") == sqlite_approval_store::schema_version);
    CHECK(raw.integer("SELECT version FROM mcpcore_audit_schema") == sqlite_audit_sink::schema_version);
    CHECK(raw.integer("SELECT count(*) FROM mcpcore_approvals") == 1);
    CHECK(raw.integer("SELECT count(*) FROM mcpcore_audit") == 1);
  }
}

TEST_CASE("sqlite_audit_sink schema: four processes opening a fresh file migrate it once and keep every row") {
  const temp_dir dir;
  const std::string path = dir.file("audit.db");
  constexpr int n = 4;
  constexpr int per_child = 10;
  start_gate gate;
  std::vector<pid_t> children;
  for (int i = 0; i < n; ++i) {
    children.push_back(spawn([&] {
      gate.wait();
      auto s = sqlite_audit_sink::open(path);
      if (!s) return 10 + s.error().code().value();
      for (int j = 0; j < per_child; ++j) {
        if (!s->record(row(cid(i * 100 + j)))) return 2;
      }
      return 0;
    }));
  }
  gate.open();
  for (const pid_t pid : children) CHECK(wait_exit(pid) == 0);
  auto s = open_sink(path);
  const auto rows = all_rows(s);
  CHECK(rows.size() == n * per_child);
  for (std::size_t i = 1; i < rows.size(); ++i) CHECK(rows[i].seq == rows[i - 1].seq + 1);
  raw_db raw(path);
  CHECK(raw.integer("SELECT count(*) FROM mcpcore_audit_schema") == 1);
}

// ---- sharing and durability -----------------------------------------------------------------------

TEST_CASE("sqlite_audit_sink: security.md/audit-and-the-one-cid-pattern: two sinks on one file interleave their rows, each sees the other's") {
  const temp_dir dir;
  const std::string path = dir.file("audit.db");
  auto a = open_sink(path);
  auto b = open_sink(path);
  for (int i = 0; i < 6; ++i) REQUIRE((i % 2 == 0 ? a : b).record(row(cid(i), i % 2 == 0 ? "a" : "b")));
  for (const sqlite_audit_sink* s : {&a, &b}) {
    const auto t = s->tail(10);
    REQUIRE(t);
    REQUIRE(t->size() == 6);
    for (int i = 0; i < 6; ++i) {
      CHECK((*t)[static_cast<std::size_t>(i)].correlation_id == cid(i));
      CHECK((*t)[static_cast<std::size_t>(i)].principal_id == (i % 2 == 0 ? "a" : "b"));
    }
  }
}

TEST_CASE("sqlite_audit_sink: security.md/audit-and-the-one-cid-pattern: a process dying right after record returned true loses no row") {
  const temp_dir dir;
  const std::string path = dir.file("audit.db");
  for (const auto sync : {sqlite_audit_synchronous::normal, sqlite_audit_synchronous::full}) {
    CAPTURE(static_cast<int>(sync));
    const pid_t child = spawn([&] {
      sqlite_audit_sink_options o;
      o.synchronous = sync;
      auto s = sqlite_audit_sink::open(path, o);
      if (!s) return 10;
      for (int i = 0; i < 25; ++i) {
        if (!s->record(row(cid(i)))) return 11;
      }
      ::_exit(0);  // no destructor, no checkpoint: the rows are only in the WAL
    });
    REQUIRE(wait_exit(child) == 0);
  }
  auto s = open_sink(path);
  const auto rows = all_rows(s);
  REQUIRE(rows.size() == 50);
  CHECK(rows[24].entry.correlation_id == cid(24));
  CHECK(rows[49].entry.correlation_id == cid(24));
}

// ---- faults ----------------------------------------------------------------------------------------

TEST_CASE("sqlite_audit_sink: audit_sink requirement 5: record on a locked file is false after the busy timeout") {
  const temp_dir dir;
  const std::string path = dir.file("audit.db");
  sqlite_audit_sink_options o;
  o.busy_timeout = milliseconds{100};
  auto s = open_sink(path, o);
  REQUIRE(s.record(row(cid(1))));

  raw_db locker(path);
  REQUIRE(locker.exec("BEGIN IMMEDIATE") == SQLITE_OK);  // another connection's write transaction
  const auto started = std::chrono::steady_clock::now();
  CHECK_FALSE(s.record(row(cid(2))));
  const auto waited = std::chrono::steady_clock::now() - started;
  CHECK(waited >= milliseconds{90});   // the busy timeout was honoured ...
  CHECK(waited < milliseconds{4000});  // ... and it is the configured one, not the default

  // WAL: readers are not blocked by the writer; a second sink opens the migrated file.
  const auto t = s.tail(10);
  REQUIRE(t);
  CHECK(t->size() == 1);
  auto other = sqlite_audit_sink::open(path, o);
  CHECK(other.has_value());

  // Callers queued on the sink's one connection share the timeout: none waits its own in turn.
  {
    constexpr int threads = 8;
    std::atomic<int> persisted{0};
    std::vector<std::thread> pool;
    const auto begun = std::chrono::steady_clock::now();
    for (int i = 0; i < threads; ++i) {
      pool.emplace_back([&s, &persisted, i] {
        if (s.record(row(cid(100 + i)))) persisted.fetch_add(1);
      });
    }
    for (auto& th : pool) th.join();
    const auto took = std::chrono::steady_clock::now() - begun;
    CHECK(persisted.load() == 0);
    CHECK(took < milliseconds{700});  // 8 x 100 ms if each waited its own timeout in turn
  }

  REQUIRE(locker.exec("ROLLBACK") == SQLITE_OK);
  CHECK(s.record(row(cid(3))));
  const auto after = s.tail(10);
  REQUIRE(after);
  REQUIRE(after->size() == 2);
  CHECK((*after)[1].correlation_id == cid(3));
}

TEST_CASE("sqlite_audit_sink: a zero busy timeout fails a locked record at once") {
  const temp_dir dir;
  const std::string path = dir.file("audit.db");
  sqlite_audit_sink_options o;
  o.busy_timeout = milliseconds{0};
  auto s = open_sink(path, o);
  raw_db locker(path);
  REQUIRE(locker.exec("BEGIN IMMEDIATE") == SQLITE_OK);
  const auto started = std::chrono::steady_clock::now();
  CHECK_FALSE(s.record(row(cid(1))));
  CHECK(std::chrono::steady_clock::now() - started < milliseconds{1000});
  REQUIRE(locker.exec("ROLLBACK") == SQLITE_OK);
  CHECK(s.record(row(cid(2))));
}

TEST_CASE("sqlite_audit_sink: a read-only sink refuses to record (false) and still reads") {
  const temp_dir dir;
  const std::string path = dir.file("audit.db");
  {
    auto s = open_sink(path);
    REQUIRE(s.record(row(cid(1))));
  }
  sqlite_audit_sink_options o;
  o.read_only = true;
  o.max_rows = 1;  // never applied by a read-only sink
  auto ro = open_sink(path, o);
  CHECK_FALSE(ro.record(row(cid(2))));
  // A writer beside it works, and the reader sees its rows.
  auto rw = open_sink(path);
  REQUIRE(rw.record(row(cid(3))));
  const auto t = ro.tail(10);
  REQUIRE(t);
  REQUIRE(t->size() == 2);
  CHECK((*t)[0].correlation_id == cid(1));
  CHECK((*t)[1].correlation_id == cid(3));
}

TEST_CASE("sqlite_audit_sink: a read-only open of a file without the schema is read_only, of a missing file closed") {
  const temp_dir dir;
  sqlite_audit_sink_options o;
  o.read_only = true;
  {
    raw_db raw(dir.file("other.db"));
    REQUIRE(raw.exec("CREATE TABLE t (x)") == SQLITE_OK);
  }
  const auto empty = sqlite_audit_sink::open(dir.file("other.db"), o);
  REQUIRE_FALSE(empty);
  CHECK(empty.error() == sqlite_audit_errc::read_only);
  CHECK(is_permanent_store_error(empty.error()));
  const auto missing = sqlite_audit_sink::open(dir.file("missing.db"), o);
  REQUIRE_FALSE(missing);
  CHECK(missing.error() == sqlite_audit_errc::closed);
  CHECK_FALSE(std::filesystem::exists(dir.file("missing.db")));
}

TEST_CASE("sqlite_audit_sink: a missing directory, or a missing file with create=false, is closed (permanent)") {
  const temp_dir dir;
  const auto nowhere = sqlite_audit_sink::open(dir.file("no/such/dir/audit.db"));
  REQUIRE_FALSE(nowhere);
  CHECK(nowhere.error() == sqlite_audit_errc::closed);
  CHECK(is_permanent_store_error(nowhere.error()));
  sqlite_audit_sink_options o;
  o.create = false;
  const auto missing = sqlite_audit_sink::open(dir.file("audit.db"), o);
  REQUIRE_FALSE(missing);
  CHECK(missing.error() == sqlite_audit_errc::closed);
  CHECK_FALSE(std::filesystem::exists(dir.file("audit.db")));
}

TEST_CASE("sqlite_audit_sink: a file that is not a database is corrupt (permanent)") {
  const temp_dir dir;
  const std::string path = dir.file("audit.db");
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    for (int i = 0; i < 8192; ++i) std::fputc("not a database "[i % 15], f);
    std::fclose(f);
  }
  for (const bool read_only : {false, true}) {
    CAPTURE(read_only);
    sqlite_audit_sink_options o;
    o.read_only = read_only;
    const auto s = sqlite_audit_sink::open(path, o);
    REQUIRE_FALSE(s);
    CHECK(s.error() == sqlite_audit_errc::corrupt);
    CHECK(is_permanent_store_error(s.error()));
  }
}

TEST_CASE("sqlite_audit_sink: a stored result outside the vocabulary reads as corrupt (permanent)") {
  const temp_dir dir;
  const std::string path = dir.file("audit.db");
  auto s = open_sink(path);
  REQUIRE(s.record(row(cid(1))));
  {
    raw_db raw(path);
    REQUIRE(raw.exec("PRAGMA ignore_check_constraints = 1") == SQLITE_OK);
    REQUIRE(raw.exec("UPDATE mcpcore_audit SET result = 'bogus'") == SQLITE_OK);
  }
  const auto t = s.tail(10);
  REQUIRE_FALSE(t);
  CHECK(t.error() == sqlite_audit_errc::corrupt);
  CHECK(is_permanent_store_error(t.error()));
}

TEST_CASE("sqlite_audit_sink: a moved-from sink records nothing, its reads are closed, the moved-to one works") {
  const temp_dir dir;
  auto a = open_sink(dir.file("audit.db"));
  REQUIRE(a.record(row(cid(1))));
  sqlite_audit_sink b = std::move(a);
  const auto check_closed = [](sqlite_audit_sink& s) {
    CHECK_FALSE(s.record(row(cid(9))));
    const auto t = s.tail(10);
    REQUIRE_FALSE(t);
    CHECK(t.error() == sqlite_audit_errc::closed);
    const auto q = s.query({});
    REQUIRE_FALSE(q);
    CHECK(q.error() == sqlite_audit_errc::closed);
  };
  check_closed(a);  // NOLINT(bugprone-use-after-move): the moved-from state is what is tested
  REQUIRE(b.record(row(cid(2))));
  auto c = open_sink(dir.file("other.db"));
  c = std::move(b);
  check_closed(b);  // NOLINT(bugprone-use-after-move)
  const auto t = c.tail(10);
  REQUIRE(t);
  REQUIRE(t->size() == 2);
  CHECK((*t)[1].correlation_id == cid(2));
}

TEST_CASE("sqlite_audit_sink: sqlite_audit_errc: category, messages, and the approval store's fault classes") {
  CHECK(std::string_view{sqlite_audit_category().name()} == "mcpcore.sqlite_audit");
  const std::error_code busy = sqlite_audit_errc::busy;
  CHECK(busy.category() == sqlite_audit_category());
  CHECK(busy.message().find("busy") != std::string::npos);
  CHECK(busy == approval_store_fault::transient);
  CHECK_FALSE(is_permanent_store_error(busy));
  CHECK_FALSE(is_permanent_store_error(sqlite_audit_errc::io_error));
  for (const auto e : {sqlite_audit_errc::closed, sqlite_audit_errc::corrupt, sqlite_audit_errc::read_only,
                       sqlite_audit_errc::full, sqlite_audit_errc::schema_too_new, sqlite_audit_errc::internal}) {
    CAPTURE(static_cast<int>(e));
    CHECK(is_permanent_store_error(e));
    CHECK_FALSE(make_error_code(e).message().empty());
  }
  // Not confused with the approval store's codes of the same value.
  CHECK(make_error_code(sqlite_audit_errc::busy) != make_error_code(approval_store_errc::busy));
}
