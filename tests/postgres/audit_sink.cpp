// SPDX-License-Identifier: Apache-2.0
// Tests of the PostgreSQL audit sink against the ctest fixture's PostgreSQL 15 cluster
// (MCPCORE_TEST_PG): rows land in order with every field, a burst past the queue is counted lost and
// never blocks, a server restart loses nothing queued, flush and close, the row bound
// (docs/concepts/audit_sink.md#shipped-models).
#include <mcpcore/stores/postgres_audit_sink.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/audit.hpp>

#include <doctest/doctest.h>

#include <libpq-fe.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace mcpcore;
using std::chrono::milliseconds;

namespace {

std::string pg_base() {
  const char* e = std::getenv("MCPCORE_TEST_PG");  // NOLINT(concurrency-mt-unsafe)
  REQUIRE_MESSAGE(e != nullptr, "MCPCORE_TEST_PG is not set: run through ctest");
  return e;
}
std::string pg_cluster_dir() {
  const std::string c = pg_base();
  const auto at = c.find("host=");
  REQUIRE(at != std::string::npos);
  const auto end = c.find(' ', at);
  return c.substr(at + 5, end == std::string::npos ? std::string::npos : end - at - 5);
}
int cluster(const std::string& command) {
  const std::string cmd = std::string("bash ") + MCPCORE_PG_TEST_CLUSTER + " " + command + " " + pg_cluster_dir();
  return std::system(cmd.c_str());  // NOLINT(concurrency-mt-unsafe,cert-env33-c)
}

// A raw connection; `rows(sql)` returns every row's columns joined by '|'.
class pg {
 public:
  explicit pg(const std::string& conninfo) : c_(PQconnectdb(conninfo.c_str())) {
    REQUIRE_MESSAGE(PQstatus(c_) == CONNECTION_OK, PQerrorMessage(c_));
  }
  pg(const pg&) = delete;
  pg& operator=(const pg&) = delete;
  ~pg() { PQfinish(c_); }
  std::vector<std::string> rows(const std::string& sql) {
    PGresult* r = PQexec(c_, sql.c_str());
    const auto st = PQresultStatus(r);
    const std::string err = PQresultErrorMessage(r);
    std::vector<std::string> out;
    if (st == PGRES_TUPLES_OK) {
      for (int i = 0; i < PQntuples(r); ++i) {
        std::string line;
        for (int k = 0; k < PQnfields(r); ++k) {
          if (k != 0) line += '|';
          line += PQgetvalue(r, i, k);
        }
        out.push_back(line);
      }
    }
    PQclear(r);
    REQUIRE_MESSAGE((st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK), sql << ": " << err);
    return out;
  }
  std::string one(const std::string& sql) {
    const auto r = rows(sql);
    REQUIRE(r.size() == 1);
    return r[0];
  }

 private:
  PGconn* c_;
};

// A fresh schema per test, dropped at the end.
struct scratch {
  pg admin{pg_base()};
  std::string name = "a" + std::to_string(::getpid());
  scratch() {
    admin.rows("DROP SCHEMA IF EXISTS " + name + " CASCADE");
    admin.rows("CREATE SCHEMA " + name);
  }
  scratch(const scratch&) = delete;
  scratch& operator=(const scratch&) = delete;
  ~scratch() {
    // A fresh connection: a test may have restarted the server under `admin`.
    PGconn* c = PQconnectdb(pg_base().c_str());
    PQclear(PQexec(c, ("DROP SCHEMA IF EXISTS " + name + " CASCADE").c_str()));
    PQfinish(c);
  }
  [[nodiscard]] std::string conninfo() const { return pg_base() + " options='-csearch_path=" + name + "'"; }
  std::string count() { pg a{pg_base()}; return a.one("SELECT count(*) FROM " + name + ".mcpcore_audit"); }
};

std::unique_ptr<postgres_audit_sink> open_sink(const std::string& c, postgres_audit_sink_options o = {}) {
  auto s = postgres_audit_sink::open(c, o);
  if (!s) FAIL("open failed: " << s.error().message());
  return std::move(*s);
}

const std::chrono::system_clock::time_point t0{milliseconds{1'700'000'000'123}};

audit_record rec(std::string_view action, std::string_view detail = "n=1") {
  return {action, "mcp_tool", "deploy", "alice", audit_result::denied, detail, "req-1", t0};
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
  const auto rows = s.admin.rows("SELECT time_ms, action, target_type, target_id, principal, result, detail,"
                                 " correlation_id FROM " + s.name + ".mcpcore_audit ORDER BY seq");
  REQUIRE(rows.size() == 21);
  CHECK(rows[0] == "1700000000123|mcp.a|mcp_tool|a||success|" + bytes + "|cid-a");
  for (int i = 0; i < 20; ++i) {
    CHECK(rows[static_cast<std::size_t>(i) + 1] ==
          "1700000000123|mcp.r" + std::to_string(i) + "|mcp_tool|deploy|alice|denied|n=1|req-1");
  }
  CHECK(s.admin.one("SELECT version FROM " + s.name + ".mcpcore_schema WHERE component = 'audit'") == "1");
}

TEST_CASE("postgres audit sink: a burst larger than the queue is counted lost and never blocks") {
  scratch s;
  postgres_audit_sink_options o;
  o.max_queued_rows = 10;
  auto sink = open_sink(s.conninfo(), o);
  // Hold the table: the writer's INSERT waits behind the lock.
  pg locker{s.conninfo()};
  locker.rows("BEGIN");
  locker.rows("LOCK TABLE mcpcore_audit IN ACCESS EXCLUSIVE MODE");
  int accepted = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) accepted += sink->record(rec("mcp.burst")) ? 1 : 0;
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(took < milliseconds{500});
  CHECK(accepted == 10);
  CHECK(sink->lost() == 90);
  locker.rows("COMMIT");
  REQUIRE(sink->flush(milliseconds{10'000}));
  CHECK(s.count() == "10");
  CHECK(sink->written() == 10);
  CHECK(sink->lost() == 90);
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
    pg locker{s.conninfo()};
    locker.rows("BEGIN");
    locker.rows("LOCK TABLE mcpcore_audit IN ACCESS EXCLUSIVE MODE");
    for (int i = 0; i < 20; ++i) CHECK(sink->record(rec("mcp.during")));
    std::this_thread::sleep_for(milliseconds{200});
    CHECK(sink->queued() == 20);
    REQUIRE(cluster("restart") == 0);
  }
  for (int i = 0; i < 5; ++i) CHECK(sink->record(rec("mcp.after")));
  REQUIRE(sink->flush(milliseconds{20'000}));
  CHECK(sink->lost() == 0);
  CHECK(sink->written() == 30);
  CHECK(s.count() == "30");
}

TEST_CASE("postgres audit sink: close writes the queue, then refuses rows and counts them lost") {
  scratch s;
  auto sink = open_sink(s.conninfo());
  for (int i = 0; i < 50; ++i) CHECK(sink->record(rec("mcp.close")));
  sink->close();
  CHECK(sink->lost() == 0);
  CHECK(s.count() == "50");
  CHECK_FALSE(sink->record(rec("mcp.after")));
  CHECK(sink->lost() == 1);
  CHECK(sink->flush(milliseconds{0}));
  sink->close();  // idempotent
}

TEST_CASE("postgres audit sink: close gives up at close_timeout and counts the rest lost") {
  scratch s;
  postgres_audit_sink_options o;
  o.close_timeout = milliseconds{300};
  o.statement_timeout = milliseconds{200};
  auto sink = open_sink(s.conninfo(), o);
  pg locker{s.conninfo()};
  locker.rows("BEGIN");
  locker.rows("LOCK TABLE mcpcore_audit IN ACCESS EXCLUSIVE MODE");
  for (int i = 0; i < 30; ++i) CHECK(sink->record(rec("mcp.stuck")));
  CHECK_FALSE(sink->flush(milliseconds{100}));
  // The writer's statement waits for the lock until the statement timeout (transient, retried)
  // until the close deadline; then the rows are lost.
  sink->close();
  CHECK(sink->lost() == 30);
  CHECK(sink->written() == 0);
  locker.rows("COMMIT");
  CHECK(s.count() == "0");
}

TEST_CASE("postgres audit sink: a permanent error loses only the bad row") {
  scratch s;
  auto sink = open_sink(s.conninfo());
  s.admin.rows("ALTER TABLE " + s.name + ".mcpcore_audit ADD CHECK (action <> 'mcp.bad')");  // 23514: permanent
  pg locker{s.conninfo()};  // the writer blocks on good1's batch: bad and good2 then go in one batch
  locker.rows("BEGIN");
  locker.rows("LOCK TABLE mcpcore_audit IN ACCESS EXCLUSIVE MODE");
  CHECK(sink->record(rec("mcp.good1")));
  std::this_thread::sleep_for(milliseconds{100});
  CHECK(sink->record(rec("mcp.bad")));
  CHECK(sink->record(rec("mcp.good2")));
  locker.rows("COMMIT");
  REQUIRE(sink->flush(milliseconds{10'000}));
  CHECK(sink->lost() == 1);
  CHECK(sink->written() == 2);
  CHECK(s.count() == "2");
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
  CHECK(s.admin.one("SELECT min(action) FROM " + s.name + ".mcpcore_audit WHERE action = 'mcp.n18'") == "mcp.n18");
  CHECK(s.admin.rows("SELECT 1 FROM " + s.name + ".mcpcore_audit WHERE action = 'mcp.n17'").empty());
}
