// SPDX-License-Identifier: Apache-2.0
// The PostgreSQL approval store (docs/performance.md#postgresql-approval-store-the-cycle-beside-a-bare-update):
// the full ticket cycle per second on postgres_approval_store, beside a floor measured in the same
// run, and the same cycle on sqlite_approval_store for context.
//
// Benchmarks (wall time, UseRealTime: a round trip to the server is waited for, not computed):
// - BM_cycle/postgres: one cycle = mint (creates a fresh ticket) + review (approve) + recall (get,
//   checked approved) + consume (checked won): four calls, four transactions; the counters
//   mint_us, review_us, get_us and consume_us give each step's share (wall microseconds per cycle);
// - BM_consume/postgres: consume alone; between batches of 64, with the timer paused, the next
//   batch is minted and approved;
// - BM_floor_update/libpq: the floor. A bare prepared statement
//   `UPDATE t SET state = 'consumed' WHERE id = $1 AND state = 'approved' RETURNING id` on a
//   table `t (id text primary key, state text)` over one libpq connection, in autocommit; between
//   batches of 64 the next rows are inserted 'approved' (timer paused). Each update must return
//   its id: the same exactly-once statement shape the store's consume uses, with nothing around it;
// - BM_cycle/sqlite_shm, BM_cycle/sqlite_tmp: the cycle on sqlite_approval_store on a fresh file
//   under /dev/shm (tmpfs, no fsync cost; skipped when /dev/shm is not writable) and under /tmp.
//
// The PostgreSQL server is the one of MCPCORE_TEST_PG (a libpq key=value connection string, e.g.
// "host=/tmp/mcpcore-pg-x dbname=mcpcore_test user=postgres" as printed by
// `scripts/pg-test-cluster start`). Every PostgreSQL benchmark works in its own schema
// `mcpcore_bench`, dropped and recreated before each run (so every run starts on empty tables).
// Without MCPCORE_TEST_PG, or when the server cannot be reached, every PostgreSQL benchmark fails
// with SkipWithError ("ERROR OCCURRED"), which the ctest entry bench.postgres_store turns into a
// failure: the benchmark is never skipped silently.
//
// Every operation's result is checked and a wrong one fails the benchmark, so nothing is timed
// that did not do its job.
#include <mcpcore/governance/approval.hpp>
#include <mcpcore/stores/postgres_approval_store.hpp>
#include <mcpcore/stores/sqlite_approval_store.hpp>

#include <benchmark/benchmark.h>
#include <libpq-fe.h>

#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "approval_ops.hpp"

namespace {

using namespace approval_bench;  // the shared ticket fields and checked store operations

// ---- inputs -------------------------------------------------------------------------------------

constexpr std::size_t submitters = 16;
constexpr std::size_t batch = 64;
constexpr const char* bench_schema = "mcpcore_bench";

std::string submitter_name(std::uint64_t n) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "user-%02" PRIu64, n % submitters);
  return buf;
}

/// The n-th ticket: a 32-hex-digit id, a distinct 50-byte scope (as the gate canonicalizes it),
/// submitters in rotation.
struct ticket_spec {
  std::string id;
  std::string scope;
  std::string submitter;
};

ticket_spec spec(std::uint64_t tag, std::uint64_t n) {
  char id[40];
  std::snprintf(id, sizeof id, "%016" PRIx64 "%016" PRIx64, tag, n);
  char scope[80];
  std::snprintf(scope, sizeof scope, R"({"mode":"delete","path":"/srv/data/file-%08)" PRIu64 R"(.txt"})",
                n);
  return {id, scope, submitter_name(n)};
}

// ---- store operations with their checks (false + `why` when the operation did not do its job) ---

/// The recall's read: the ticket is there and approved.
template <class Store>
bool recalled(Store& s, const ticket_spec& t, std::string& why) {
  const auto out = s.get(t.id);
  if (!out) {
    why = "get failed: " + out.error().message();
    return false;
  }
  if (!out->has_value() || (*out)->status != approval_status::approved) {
    why = "get did not find the approved ticket";
    return false;
  }
  return true;
}

template <class Store>
void run_cycle(benchmark::State& state, Store& store) {
  const approval_time now = now_ms();
  std::string why;
  std::uint64_t n = 0;
  // Wall time of each step, summed (the counters mint_us ... consume_us: microseconds per cycle).
  using clock = std::chrono::steady_clock;
  std::chrono::nanoseconds steps[4]{};
  for (auto _ : state) {
    const ticket_spec t = spec(1, n++);
    const auto t0 = clock::now();
    bool ok = mint_created(store, t.id, t.scope, t.submitter, now, why);
    const auto t1 = clock::now();
    ok = ok && reviewed(store, t.id, approval_status::approved, now, why);
    const auto t2 = clock::now();
    ok = ok && recalled(store, t, why);
    const auto t3 = clock::now();
    ok = ok && consumed(store, t.id, t.submitter, now, why);
    const auto t4 = clock::now();
    if (!ok) {
      state.SkipWithError(why.c_str());
      return;
    }
    steps[0] += t1 - t0;
    steps[1] += t2 - t1;
    steps[2] += t3 - t2;
    steps[3] += t4 - t3;
  }
  state.SetItemsProcessed(state.iterations());
  if (state.iterations() > 0) {
    const char* names[4] = {"mint_us", "review_us", "get_us", "consume_us"};
    for (int i = 0; i < 4; ++i) {
      state.counters[names[i]] = std::chrono::duration<double, std::micro>(steps[i]).count() /
                                 static_cast<double>(state.iterations());
    }
  }
}

// ---- PostgreSQL ---------------------------------------------------------------------------------

/// MCPCORE_TEST_PG, or "" with `why`.
std::string server_conninfo(std::string& why) {
  const char* env = std::getenv("MCPCORE_TEST_PG");
  if (env == nullptr || *env == '\0') {
    why = "MCPCORE_TEST_PG is not set: start a cluster (scripts/pg-test-cluster start) and export "
          "the connection string it prints (docs/performance.md)";
    return {};
  }
  const std::string_view s{env};
  if (s.starts_with("postgres://") || s.starts_with("postgresql://")) {
    why = "MCPCORE_TEST_PG must be a key=value connection string, not a URI";
    return {};
  }
  return std::string{s};
}

/// One bare libpq connection (the floor, and the side connection that prepares the schema).
class pg_conn {
 public:
  pg_conn() = default;
  pg_conn(const pg_conn&) = delete;
  pg_conn& operator=(const pg_conn&) = delete;
  ~pg_conn() {
    if (c_ != nullptr) PQfinish(c_);
  }
  bool open(const std::string& conninfo, std::string& why) {
    c_ = PQconnectdb(conninfo.c_str());
    if (PQstatus(c_) != CONNECTION_OK) {
      why = std::string{"cannot connect to MCPCORE_TEST_PG: "} + PQerrorMessage(c_);
      return false;
    }
    return true;
  }
  bool exec(const char* sql, std::string& why) {
    PGresult* r = PQexec(c_, sql);
    const auto st = PQresultStatus(r);
    const bool ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!ok) why = std::string{"PQexec: "} + PQresultErrorMessage(r) + " in: " + sql;
    PQclear(r);
    return ok;
  }
  bool prepare(const char* name, const char* sql, int params, std::string& why) {
    PGresult* r = PQprepare(c_, name, sql, params, nullptr);
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok) why = std::string{"PQprepare: "} + PQresultErrorMessage(r) + " in: " + sql;
    PQclear(r);
    return ok;
  }
  [[nodiscard]] PGconn* get() const noexcept { return c_; }

 private:
  PGconn* c_ = nullptr;
};

/// A fresh, empty schema `mcpcore_bench` and the connection string whose search_path is it; "" and
/// `why` on failure.
std::string fresh_schema(std::string& why) {
  const std::string base = server_conninfo(why);
  if (base.empty()) return {};
  pg_conn side;
  if (!side.open(base, why)) return {};
  const std::string sql = std::string{"SET client_min_messages = warning; DROP SCHEMA IF EXISTS "} +
                          bench_schema + " CASCADE; CREATE SCHEMA " + bench_schema;
  if (!side.exec(sql.c_str(), why)) return {};
  return base + " options='-c search_path=" + bench_schema + "'";
}

void BM_cycle_postgres(benchmark::State& state) {
  std::string why;
  const std::string conninfo = fresh_schema(why);
  if (conninfo.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  auto store = mcpcore::postgres_approval_store::open(conninfo);
  if (!store) {
    state.SkipWithError(("postgres_approval_store::open: " + store.error().message()).c_str());
    return;
  }
  run_cycle(state, *store);
}

void BM_consume_postgres(benchmark::State& state) {
  std::string why;
  const std::string conninfo = fresh_schema(why);
  if (conninfo.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  auto opened = mcpcore::postgres_approval_store::open(conninfo);
  if (!opened) {
    state.SkipWithError(("postgres_approval_store::open: " + opened.error().message()).c_str());
    return;
  }
  auto& store = *opened;
  const approval_time now = now_ms();
  std::vector<ticket_spec> specs(batch);
  std::uint64_t n = 0;
  while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(batch))) {
    state.PauseTiming();
    for (auto& t : specs) {
      t = spec(2, n++);
      if (!mint_created(store, t.id, t.scope, t.submitter, now, why) ||
          !reviewed(store, t.id, approval_status::approved, now, why)) {
        state.SkipWithError(why.c_str());
        return;
      }
    }
    state.ResumeTiming();
    for (const auto& t : specs) {
      if (!consumed(store, t.id, t.submitter, now, why)) {
        state.SkipWithError(why.c_str());
        return;
      }
    }
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_floor_update(benchmark::State& state) {
  std::string why;
  const std::string conninfo = fresh_schema(why);
  pg_conn c;
  if (conninfo.empty() || !c.open(conninfo, why) ||
      !c.exec("CREATE TABLE t (id text PRIMARY KEY, state text NOT NULL)", why) ||
      !c.prepare("ins", "INSERT INTO t (id, state) VALUES ($1, 'approved')", 1, why) ||
      !c.prepare("upd", "UPDATE t SET state = 'consumed' WHERE id = $1 AND state = 'approved' RETURNING id",
                 1, why)) {
    state.SkipWithError(why.c_str());
    return;
  }
  std::vector<ticket_spec> specs(batch);
  std::uint64_t n = 0;
  const auto run = [&](const char* stmt, const std::string& id, ExecStatusType want,
                       bool check_id) {
    const char* values[1] = {id.c_str()};
    PGresult* r = PQexecPrepared(c.get(), stmt, 1, values, nullptr, nullptr, 0);
    bool ok = PQresultStatus(r) == want;
    if (!ok) {
      why = std::string{"PQexecPrepared: "} + PQresultErrorMessage(r);
    } else if (check_id && (PQntuples(r) != 1 || id != PQgetvalue(r, 0, 0))) {
      why = "the bare UPDATE did not return its id";
      ok = false;
    }
    PQclear(r);
    return ok;
  };
  while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(batch))) {
    state.PauseTiming();
    for (auto& t : specs) {
      t = spec(3, n++);
      if (!run("ins", t.id, PGRES_COMMAND_OK, false)) {
        state.SkipWithError(why.c_str());
        return;
      }
    }
    state.ResumeTiming();
    for (const auto& t : specs) {
      if (!run("upd", t.id, PGRES_TUPLES_OK, true)) {
        state.SkipWithError(why.c_str());
        return;
      }
    }
  }
  state.SetItemsProcessed(state.iterations());
}

// ---- SQLite (context) ---------------------------------------------------------------------------

void BM_cycle_sqlite(benchmark::State& state, const char* parent) {
  approval_bench::temp_dir dir{parent, "mcpcore-bench-pg"};
  if (!dir.ok()) {
    state.SkipWithError((std::string{"mkdtemp under "} + parent + " failed").c_str());
    return;
  }
  auto store = mcpcore::sqlite_approval_store::open(dir.path() + "/approvals.db");
  if (!store) {
    state.SkipWithError(("sqlite_approval_store::open: " + store.error().message()).c_str());
    return;
  }
  state.SetLabel(parent);
  run_cycle(state, *store);
}

// ---- registration -------------------------------------------------------------------------------

bool register_all() {
  benchmark::RegisterBenchmark("BM_cycle/postgres", BM_cycle_postgres)->UseRealTime();
  benchmark::RegisterBenchmark("BM_consume/postgres", BM_consume_postgres)->UseRealTime();
  benchmark::RegisterBenchmark("BM_floor_update/libpq", BM_floor_update)->UseRealTime();
  if (::access("/dev/shm", W_OK | X_OK) == 0) {
    benchmark::RegisterBenchmark("BM_cycle/sqlite_shm", BM_cycle_sqlite, "/dev/shm")->UseRealTime();
  }
  benchmark::RegisterBenchmark("BM_cycle/sqlite_tmp", BM_cycle_sqlite, "/tmp")->UseRealTime();
  return true;
}

[[maybe_unused]] const bool registered = register_all();

}  // namespace
