// SPDX-License-Identifier: Apache-2.0
// Tests of the PostgreSQL audit sink against the ctest fixture's PostgreSQL 15 cluster
// (MCPCORE_TEST_PG): rows land in order with every field, a burst past the queue is refused and
// never blocks, a server restart loses nothing queued, flush and close, permanent and transient
// faults of single rows, the row bound, the bytes PostgreSQL refuses, the lost-rows counter and a
// server on the sink (docs/concepts/audit_sink.md#shipped-models,
// docs/concepts/audit_sink.md#durability-classes).
#include <mcpcore/stores/postgres_audit_sink.hpp>
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/governance/policy.hpp>

#include <doctest/doctest.h>

#include "support/pg_cluster.hpp"
#include "support/server_fixture.hpp"
#include "support/store_opener.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace mcpcore;
using std::chrono::milliseconds;

namespace {

// A fresh schema of the test's own (test_pg::scratch_schemas), and the count of the sink's rows in it.
struct scratch : test_pg::scratch_schemas {
  scratch() : scratch_schemas("a") { make(); }
  std::string count() { return test_pg::connection{}.one("SELECT count(*) FROM " + name() + ".mcpcore_audit"); }
};

std::unique_ptr<postgres_audit_sink> open_sink(const std::string& c, postgres_audit_sink_options o = {}) {
  return mcpcore_test::open_or_fail<postgres_audit_sink>(c, o);
}

const std::chrono::system_clock::time_point t0{milliseconds{1'700'000'000'123}};

audit_record rec(std::string_view action, std::string_view detail = "n=1") {
  return {action, "mcp_tool", "deploy", "alice", audit_result::denied, detail, "req-1", t0};
}

// The family a server counts lost audit rows in (docs/metrics.md), in a registry of prefix "t".
auto lost_rows_family(metrics_registry& m) {
  return m.make_counter("mcp_audit_write_failures_total", "audit rows that were not persisted");
}
long long lost_rows_counted(const metrics_registry& m) {
  return server_fixture::series_value(m, "t_mcp_audit_write_failures_total");
}

// A trigger on the sink's table that raises the SQLSTATE `faults` names for a row's action:
// the test decides which rows fail, and how (23514 permanent, 40001 transient).
void install_faults(scratch& s) {
  s.admin().rows("CREATE TABLE " + s.name() + ".faults (action text PRIMARY KEY, sqlstate text NOT NULL)");
  s.admin().rows("CREATE FUNCTION " + s.name() + ".fault() RETURNS trigger LANGUAGE plpgsql AS $$"
                 " DECLARE st text; BEGIN"
                 " SELECT sqlstate INTO st FROM " + s.name() + ".faults WHERE action = NEW.action;"
                 " IF st IS NOT NULL THEN RAISE EXCEPTION 'injected %', st USING ERRCODE = st; END IF;"
                 " RETURN NEW; END $$");
  s.admin().rows("CREATE TRIGGER fault BEFORE INSERT ON " + s.name() + ".mcpcore_audit FOR EACH ROW EXECUTE FUNCTION " +
                 s.name() + ".fault()");
}
void set_fault(scratch& s, const std::string& action, const std::string& sqlstate) {
  s.admin().rows("INSERT INTO " + s.name() + ".faults VALUES ('" + action + "', '" + sqlstate + "')");
}

// Holds ACCESS EXCLUSIVE on the sink's table while it lives (or until `release`): the writer's
// next INSERT waits, so the rows recorded meanwhile go in one later batch.
class table_lock {
 public:
  explicit table_lock(const scratch& s) : c_(s.conninfo()) {
    c_.rows("BEGIN");
    c_.rows("LOCK TABLE mcpcore_audit IN ACCESS EXCLUSIVE MODE");
  }
  void release() {
    if (held_) c_.rows("COMMIT");
    held_ = false;
  }

 private:
  test_pg::connection c_;
  bool held_ = true;
};

// Every one of the `n` rows the sink accepted is in its table, none lost.
void check_all_written(const postgres_audit_sink& sink, scratch& s, std::uint64_t n) {
  CHECK(sink.lost() == 0);
  CHECK(sink.written() == n);
  CHECK(s.count() == std::to_string(n));
}

// Waits up to 10 s for `done`.
template <class F>
bool eventually(F done) {
  const auto until = std::chrono::steady_clock::now() + milliseconds{10'000};
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(milliseconds{10});
  }
  return true;
}

}  // namespace

TEST_CASE("postgres audit sink: rows land in order with every field and the schema row") {
  scratch s;
  auto sink = open_sink(s.conninfo());
  const std::string bytes = "caf\xc3\xa9 'quoted' \\ \"x\"";
  CHECK(sink->record({"mcp.a", "mcp_tool", "a", "", audit_result::success, bytes, "cid-a", t0}));
  for (int i = 0; i < 20; ++i) CHECK(sink->record(rec("mcp.r" + std::to_string(i))));
  REQUIRE(sink->flush(milliseconds{10'000}));
  CHECK(sink->written() == 21);
  CHECK(sink->lost() == 0);
  const auto rows = s.admin().rows("SELECT time_ms, action, target_type, target_id, principal, result, detail,"
                                   " correlation_id FROM " + s.name() + ".mcpcore_audit ORDER BY seq");
  REQUIRE(rows.size() == 21);
  CHECK(rows[0] == "1700000000123|mcp.a|mcp_tool|a||success|" + bytes + "|cid-a");
  for (int i = 0; i < 20; ++i) {
    CHECK(rows[static_cast<std::size_t>(i) + 1] ==
          "1700000000123|mcp.r" + std::to_string(i) + "|mcp_tool|deploy|alice|denied|n=1|req-1");
  }
  CHECK(s.admin().one("SELECT version FROM " + s.name() + ".mcpcore_schema WHERE component = 'audit'") == "1");
}

TEST_CASE("postgres audit sink: a burst larger than the queue is refused and never blocks") {
  scratch s;
  postgres_audit_sink_options o;
  o.max_queued_rows = 10;
  auto sink = open_sink(s.conninfo(), o);
  table_lock lock{s};  // the writer's INSERT waits behind the lock
  int accepted = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) accepted += sink->record(rec("mcp.burst")) ? 1 : 0;
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(took < milliseconds{500});
  CHECK(accepted == 10);
  CHECK(sink->refused() == 90);  // the server counts these: record said false
  CHECK(sink->lost() == 0);
  lock.release();
  REQUIRE(sink->flush(milliseconds{10'000}));
  check_all_written(*sink, s, 10);
  CHECK(sink->refused() == 90);
}

TEST_CASE("postgres audit sink: a server restart in the middle of a batch loses nothing that was queued") {
  scratch s;
  postgres_audit_sink_options o;
  o.retry_backoff = milliseconds{20};
  o.max_retry_backoff = milliseconds{200};
  auto sink = open_sink(s.conninfo(), o);
  for (int i = 0; i < 5; ++i) CHECK(sink->record(rec("mcp.before")));
  REQUIRE(sink->flush(milliseconds{10'000}));
  {
    // The writer's INSERT waits behind a lock when the server restarts: its connection dies
    // mid-statement (transient), the rows stay queued.
    table_lock lock{s};
    for (int i = 0; i < 20; ++i) CHECK(sink->record(rec("mcp.during")));
    std::this_thread::sleep_for(milliseconds{200});
    CHECK(sink->queued() == 20);
    REQUIRE(test_pg::run_cluster_script("restart") == 0);
  }
  for (int i = 0; i < 5; ++i) CHECK(sink->record(rec("mcp.after")));
  REQUIRE(sink->flush(milliseconds{20'000}));
  check_all_written(*sink, s, 30);
}

TEST_CASE("postgres audit sink: close writes the queue, then refuses rows") {
  scratch s;
  auto sink = open_sink(s.conninfo());
  for (int i = 0; i < 50; ++i) CHECK(sink->record(rec("mcp.close")));
  sink->close();
  CHECK(sink->lost() == 0);
  CHECK(s.count() == "50");
  CHECK_FALSE(sink->record(rec("mcp.after")));
  CHECK(sink->refused() == 1);
  CHECK(sink->lost() == 0);
  CHECK(sink->flush(milliseconds{0}));
  sink->close();  // idempotent
}

TEST_CASE("postgres audit sink: close gives up at close_timeout and counts the rest lost") {
  scratch s;
  postgres_audit_sink_options o;
  o.close_timeout = milliseconds{300};
  o.statement_timeout = milliseconds{200};
  auto sink = open_sink(s.conninfo(), o);
  table_lock lock{s};
  for (int i = 0; i < 30; ++i) CHECK(sink->record(rec("mcp.stuck")));
  CHECK_FALSE(sink->flush(milliseconds{100}));
  // The writer's statement waits for the lock until the statement timeout (transient, retried)
  // until the close deadline; then the rows are lost.
  sink->close();
  CHECK(sink->lost() == 30);
  CHECK(sink->written() == 0);
  lock.release();
  CHECK(s.count() == "0");
}

TEST_CASE("postgres audit sink: a permanent error loses only the bad row, counted in lost_rows") {
  scratch s;
  metrics_registry m{"t"};
  postgres_audit_sink_options o;
  o.lost_rows = lost_rows_family(m);
  auto sink = open_sink(s.conninfo(), o);
  s.admin().rows("ALTER TABLE " + s.name() + ".mcpcore_audit ADD CHECK (action <> 'mcp.bad')");  // 23514: permanent
  table_lock lock{s};  // the writer blocks on good1's batch: bad and good2 then go in one batch
  CHECK(sink->record(rec("mcp.good1")));
  std::this_thread::sleep_for(milliseconds{100});
  CHECK(sink->record(rec("mcp.bad")));
  CHECK(sink->record(rec("mcp.good2")));
  lock.release();
  REQUIRE(sink->flush(milliseconds{10'000}));
  CHECK(sink->lost() == 1);
  CHECK(sink->written() == 2);
  CHECK(s.count() == "2");
  CHECK(lost_rows_counted(m) == 1);  // exactly the row lost
  CHECK(s.admin().rows("SELECT action FROM " + s.name() + ".mcpcore_audit ORDER BY seq") ==
        std::vector<std::string>{"mcp.good1", "mcp.good2"});
}

TEST_CASE("postgres audit sink: the table keeps at most max_rows rows, the newest") {
  scratch s;
  postgres_audit_sink_options o;
  o.max_rows = 7;
  o.max_batch_rows = 3;
  auto sink = open_sink(s.conninfo(), o);
  for (int i = 0; i < 25; ++i) CHECK(sink->record(rec("mcp.n" + std::to_string(i))));
  REQUIRE(sink->flush(milliseconds{10'000}));
  CHECK(s.count() == "7");
  CHECK(s.admin().one("SELECT min(action) FROM " + s.name() + ".mcpcore_audit WHERE action = 'mcp.n18'") == "mcp.n18");
  CHECK(s.admin().rows("SELECT 1 FROM " + s.name() + ".mcpcore_audit WHERE action = 'mcp.n17'").empty());
}

TEST_CASE("postgres audit sink: a transient failure during the row-by-row retry keeps the rest queued, not lost") {
  scratch s;
  metrics_registry m{"t"};
  postgres_audit_sink_options o;
  o.retry_backoff = milliseconds{20};
  o.max_retry_backoff = milliseconds{100};
  o.lost_rows = lost_rows_family(m);
  auto sink = open_sink(s.conninfo(), o);
  install_faults(s);
  set_fault(s, "mcp.bad", "23514");    // check_violation: permanent
  set_fault(s, "mcp.flaky", "40001");  // serialization_failure: transient
  {
    table_lock lock{s};  // good0 waits alone; bad, flaky and good1 then go in one batch
    CHECK(sink->record(rec("mcp.good0")));
    std::this_thread::sleep_for(milliseconds{100});
    CHECK(sink->record(rec("mcp.bad")));
    CHECK(sink->record(rec("mcp.flaky")));
    CHECK(sink->record(rec("mcp.good1")));
  }
  // The batch fails on bad (permanent): row by row, bad is lost; flaky fails transiently and must
  // stay queued with good1 behind it, retried with backoff.
  REQUIRE(eventually([&] { return sink->lost() == 1 && sink->queued() == 2; }));
  std::this_thread::sleep_for(milliseconds{300});
  CHECK(sink->lost() == 1);
  CHECK(sink->queued() == 2);
  s.admin().rows("DELETE FROM " + s.name() + ".faults WHERE action = 'mcp.flaky'");  // the conflict clears
  REQUIRE(sink->flush(milliseconds{10'000}));
  CHECK(sink->lost() == 1);
  CHECK(sink->written() == 3);
  CHECK(lost_rows_counted(m) == 1);
  CHECK(s.admin().rows("SELECT action FROM " + s.name() + ".mcpcore_audit ORDER BY seq") ==
        std::vector<std::string>{"mcp.good0", "mcp.flaky", "mcp.good1"});
}

TEST_CASE("postgres audit sink: close returns at close_timeout even in the middle of a retry backoff") {
  scratch s;
  metrics_registry m{"t"};
  postgres_audit_sink_options o;
  o.retry_backoff = milliseconds{3000};
  o.max_retry_backoff = milliseconds{3000};
  o.close_timeout = milliseconds{200};
  o.lost_rows = lost_rows_family(m);
  auto sink = open_sink(s.conninfo(), o);
  install_faults(s);
  set_fault(s, "mcp.flaky", "40001");
  CHECK(sink->record(rec("mcp.flaky")));
  std::this_thread::sleep_for(milliseconds{300});  // the first attempt failed: the writer waits 3 s
  const auto start = std::chrono::steady_clock::now();
  sink->close();
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(took < milliseconds{1500});
  CHECK(sink->lost() == 1);
  CHECK(lost_rows_counted(m) == 1);
}

TEST_CASE("postgres audit sink: close returns at close_timeout without a statement_timeout, the stuck INSERT cancelled") {
  scratch s;
  postgres_audit_sink_options o;
  o.statement_timeout = milliseconds{0};  // none: only the close deadline stops a waiting INSERT
  o.close_timeout = milliseconds{300};
  auto sink = open_sink(s.conninfo(), o);
  table_lock lock{s};
  for (int i = 0; i < 5; ++i) CHECK(sink->record(rec("mcp.stuck")));
  std::this_thread::sleep_for(milliseconds{100});  // the writer's INSERT waits for the lock
  std::atomic<bool> closed{false};
  std::chrono::steady_clock::duration took{};
  std::thread closer([&] {
    const auto start = std::chrono::steady_clock::now();
    sink->close();
    took = std::chrono::steady_clock::now() - start;
    closed = true;
  });
  // Without the cancel, close waits for the lock: released after 3 s so that the test ends.
  for (int i = 0; i < 300 && !closed; ++i) std::this_thread::sleep_for(milliseconds{10});
  lock.release();
  closer.join();
  CHECK(took < milliseconds{2000});
  CHECK(sink->lost() == 5);
  CHECK(sink->written() == 0);
  CHECK(s.count() == "0");
}

TEST_CASE("postgres audit sink: a close_timeout of milliseconds::max() writes the queue, it does not drop it") {
  scratch s;
  postgres_audit_sink_options o;
  o.close_timeout = milliseconds::max();  // "wait as long as it takes"
  o.retry_backoff = milliseconds::max();  // saturated too: no wait that ends before it began
  auto sink = open_sink(s.conninfo(), o);
  {
    table_lock lock{s};
    for (int i = 0; i < 5; ++i) CHECK(sink->record(rec("mcp.kept")));
    std::this_thread::sleep_for(milliseconds{100});
  }
  sink->close();
  check_all_written(*sink, s, 5);
}

TEST_CASE("postgres audit sink: two threads closing at once both return, the rows counted once") {
  scratch s;
  postgres_audit_sink_options o;
  o.close_timeout = milliseconds{300};
  o.statement_timeout = milliseconds{100};
  auto sink = open_sink(s.conninfo(), o);
  table_lock lock{s};
  for (int i = 0; i < 3; ++i) CHECK(sink->record(rec("mcp.stuck")));
  std::thread first([&] { sink->close(); });
  std::this_thread::sleep_for(milliseconds{50});  // the first is joining the writer
  std::thread second([&] { sink->close(); });
  first.join();
  second.join();
  CHECK(sink->lost() == 3);
  lock.release();
}

TEST_CASE("postgres audit sink: a max_rows beyond bigint is unbounded, not a reason to lose every row") {
  scratch s;
  postgres_audit_sink_options o;
  o.max_rows = std::numeric_limits<std::uint64_t>::max();
  auto sink = open_sink(s.conninfo(), o);
  for (int i = 0; i < 3; ++i) CHECK(sink->record(rec("mcp.kept")));
  REQUIRE(sink->flush(milliseconds{10'000}));
  check_all_written(*sink, s, 3);
}

TEST_CASE("postgres audit sink: invalid UTF-8 and NUL bytes are stored as U+FFFD, the row neither lost nor cut") {
  scratch s;
  auto sink = open_sink(s.conninfo());
  using namespace std::string_view_literals;
  // A detail with a NUL inside (libpq would end the value there); a principal with a stray byte
  // (PostgreSQL refuses it: 22021), a target cut inside a sequence, an overlong form.
  CHECK(sink->record(rec("mcp.nul", "before\0after"sv)));
  CHECK(sink->record({"mcp.utf8", "mcp_tool", "t\xe2\x82", "al\xff" "ice", audit_result::success, "n=1",
                      "cid-\xc0\xaf", t0}));
  CHECK(sink->record(rec("mcp.next")));
  REQUIRE(sink->flush(milliseconds{10'000}));
  CHECK(sink->lost() == 0);
  CHECK(sink->written() == 3);
  const auto rows = s.admin().rows("SELECT action, target_id, principal, detail, correlation_id FROM " + s.name() +
                                   ".mcpcore_audit ORDER BY seq");
  REQUIRE_FALSE(rows.empty());
  CHECK(rows[0] == "mcp.nul|deploy|alice|before\xef\xbf\xbd" "after|req-1");
  REQUIRE(rows.size() == 3);
  CHECK(rows[1] == "mcp.utf8|t\xef\xbf\xbd|al\xef\xbf\xbd" "ice|n=1|cid-\xef\xbf\xbd\xef\xbf\xbd");
  CHECK(rows[2] == "mcp.next|deploy|alice|n=1|req-1");
}

TEST_CASE("postgres audit sink: flush waits for the rows accepted before it, not for an empty queue") {
  scratch s;
  postgres_audit_sink_options o;
  o.close_timeout = milliseconds{200};
  o.max_batch_rows = 1;  // the row accepted later never shares a batch with the ten
  auto sink = open_sink(s.conninfo(), o);
  install_faults(s);
  set_fault(s, "mcp.later", "40001");  // a row accepted after the flush began stays queued (transient)
  table_lock lock{s};  // the writer waits on the first row until the flush has begun
  for (int i = 0; i < 10; ++i) CHECK(sink->record(rec("mcp.before")));
  bool later = false;
  std::thread late([&] {  // after the flush below has begun: a row it must not wait for
    std::this_thread::sleep_for(milliseconds{500});
    later = sink->record(rec("mcp.later"));
    lock.release();
  });
  const bool flushed = sink->flush(milliseconds{5000});
  late.join();
  CHECK(later);
  CHECK(flushed);
  CHECK(sink->written() == 10);
  CHECK(sink->queued() == 1);
}

TEST_CASE("postgres audit sink: on a server, a full queue answers audit_persisted:false and rows lost later count in the same family") {
  using namespace server_fixture;
  scratch s;
  metrics_registry m{"t"};
  postgres_audit_sink_options o;
  o.max_queued_rows = 1;
  o.lost_rows = lost_rows_family(m);
  auto sink = open_sink(s.conninfo(), o);

  server_builder b{{.name = "notes", .version = "1.0.0"}};
  b.tool("delete_note")
      .description("Deletes a note.")
      .input_schema(R"({"type":"object","properties":{"id":{"type":"string"}},"required":["id"]})")
      .security("Note", operation::write)
      .effect(tool_effect::destructive, true)
      .handler([](call_context&, const arguments&) { return tool_result::text("done"); });
  b.audit(*sink).metrics(m);
  auto server = build(b);
  const auto gaps = [&] { return lost_rows_counted(m); };
  connection rita{{.id = "rita", .tier = "readonly"}};
  {
    table_lock lock{s};
    // The first denial's row is accepted (the writer then waits on the lock with it); the second
    // finds the queue full: refused, and the answer says so.
    const auto first = rita.send(server, call_tool(1, "delete_note", R"({"id":"n1"})"));
    REQUIRE(first.code() == -32004);
    CHECK_FALSE(first.data()["audit_persisted"].exists());
    REQUIRE(eventually([&] { return sink->queued() == 1; }));
    const auto second = rita.send(server, call_tool(2, "delete_note", R"({"id":"n1"})"));
    REQUIRE(second.code() == -32004);
    REQUIRE(second.data()["audit_persisted"].is_bool());
    CHECK_FALSE(second.data()["audit_persisted"].as_bool());
    CHECK(gaps() == 1);
  }
  REQUIRE(sink->flush(milliseconds{10'000}));
  CHECK(s.count() == "1");
  // A row PostgreSQL refuses after the answer went out: accepted, so the answer cannot say it; the
  // family counts it.
  s.admin().rows("ALTER TABLE " + s.name() + ".mcpcore_audit ADD CHECK (principal <> 'mallory')");
  connection mallory{{.id = "mallory", .tier = "readonly"}};
  const auto third = mallory.send(server, call_tool(3, "delete_note", R"({"id":"n1"})"));
  REQUIRE(third.code() == -32004);
  CHECK_FALSE(third.data()["audit_persisted"].exists());
  REQUIRE(sink->flush(milliseconds{10'000}));
  CHECK(gaps() == 2);
  CHECK(sink->refused() == 1);
  CHECK(sink->lost() == 1);
  CHECK(s.count() == "1");
}

#if defined(MCPCORE_TEST_HOST_DB_STORES)
#  include "host_server/db_stores.hpp"

TEST_CASE("postgres audit sink: mcpcore-host's --audit-db counts rows lost after acceptance in its /metrics family") {
  scratch s;
  metrics_registry m{"t"};
  {
    auto db = mcpcore_host::open_audit_db(s.conninfo(), {}, "srv-1", mcpcore_host::audit_lost_rows(m));
    REQUIRE_MESSAGE(db.has_value(), (db ? std::string{} : db.error()));
    s.admin().rows("ALTER TABLE " + s.name() + ".mcpcore_audit ADD CHECK (principal <> 'mallory')");
    CHECK(db->record(rec("mcp.kept")));
    audit_record refused = rec("mcp.refused");
    refused.principal_id = "mallory";
    CHECK(db->record(refused));  // accepted: the host's answer cannot report it, /metrics does
    CHECK(eventually([&] { return lost_rows_counted(m) == 1; }));
  }
  CHECK(lost_rows_counted(m) == 1);
  CHECK(s.admin().rows("SELECT action, detail FROM " + s.name() + ".mcpcore_audit") ==
        std::vector<std::string>{"mcp.kept|n=1 server=srv-1"});
}
#endif
