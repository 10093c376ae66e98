// SPDX-License-Identifier: Apache-2.0
// Tests of the PostgreSQL approval store against a real PostgreSQL 15 cluster (scripts/pg-test-cluster,
// started by the ctest fixture; MCPCORE_TEST_PG is its connection string): the shared approval_store
// conformance, prune and history suites, the schema and its migration, exactly-once consumption across stores and processes, and every
// fault mapped to the transient answer with the ticket intact
// (docs/concepts/approval_store.md#semantic-requirements, docs/approvals.md#guarantees,
// docs/approvals.md#every-answer-of-the-machine).
#include <mcpcore/stores/postgres_approval_store.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/approval.hpp>

// The prune batch's and the history's exact SQL text (inline definitions only: nothing of the
// compiled library).
#include <mcpcore/stores/impl/postgres_common.ipp>

#include <doctest/doctest.h>

#include "support/approval_store_suite.hpp"
#include "support/approval_tickets.hpp"
#include "support/pg_cluster.hpp"
#include "support/store_opener.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace mcpcore;
using std::chrono::milliseconds;
using namespace approval_tickets;
using test_pg::base_conninfo;
using test_pg::scratch_schemas;

static_assert(approval_store<postgres_approval_store>);
static_assert(approval_store_history<postgres_approval_store>);
static_assert(mcpcore_test::move_only<postgres_approval_store>);

namespace {

postgres_approval_store open_store(const std::string& conninfo, postgres_approval_store_options o = {}) {
  return mcpcore_test::open_or_fail<postgres_approval_store>(conninfo, o);
}

void check_transient(const error& e) {
  CAPTURE(e.message());
  CHECK_FALSE(is_permanent_store_error(e));
  CHECK((e == approval_store_errc::io_error || e == approval_store_errc::busy));
}

// The failed call changed nothing, and the store serves again: the ticket intact, then consumed.
void check_recovers(postgres_approval_store& s, const std::string& id) {
  check_intact(s, id);
  const auto r = s.consume(consume_req(id));
  REQUIRE(r);
  CHECK(*r == approval_consume_status::consumed);
}

// Ticket `id`'s row lock, held on a connection of its own (as a consume in its transaction holds
// it) until `release()`.
class row_lock {
 public:
  row_lock(const std::string& conninfo, const std::string& id) : c_(conninfo) {
    c_.exec("BEGIN");
    c_.exec("SELECT id FROM mcpcore_approvals WHERE id = $1 FOR UPDATE", {id});
  }
  void release() { c_.exec("ROLLBACK"); }

 private:
  test_pg::connection c_;
};

// Makes the store's schema at `c` and fills it, through `raw` (a connection to `c`), with a table
// worth an index: 20,000 rejected tickets (ids r1 to r20000, submitted and reviewed by bob at 1 to
// 20000) and 2,000 pending ones, then gathers statistics.
void fill_for_plans(const std::string& c, test_pg::connection& raw) {
  { auto s = open_store(c); }
  raw.exec("INSERT INTO mcpcore_approvals (id, definition_id, status, origin, submitted_by, submitted_at,"
           " reviewed_by, reviewed_at, scope) SELECT 'r' || g, 'mcp.deploy', 'rejected', 'mcp', 'alice', g, 'bob', g,"
           " '{}' FROM generate_series(1, 20000) g");
  raw.exec("INSERT INTO mcpcore_approvals (id, definition_id, status, origin, submitted_by, submitted_at, scope)"
           " SELECT 'p' || g, 'mcp.deploy', 'pending', 'mcp', 'alice', g, '{}' FROM generate_series(1, 2000) g");
  raw.exec("ANALYZE mcpcore_approvals");
}

// The plan PostgreSQL chooses for `sql` with `params`: EXPLAIN's rows, one a line.
std::string explain(test_pg::connection& raw, const char* sql, const std::vector<std::string>& params) {
  std::string plan;
  for (const auto& line : raw.rows(std::string{"EXPLAIN "} + sql, params)) plan.append(line).append("\n");
  return plan;
}

}  // namespace

TEST_CASE("plugins.md: the PostgreSQL store passes the approval_store conformance suite") {
  scratch_schemas schemas;
  mcpcore_test::approval_store_conformance(
      mcpcore_test::store_opener<postgres_approval_store>([&] { return schemas.make(); }));
}

TEST_CASE("approvals.md/retention: the PostgreSQL store passes the prune suite") {
  scratch_schemas schemas;
  mcpcore_test::approval_store_prune_conformance(
      mcpcore_test::store_opener<postgres_approval_store>([&] { return schemas.make(); }));
}

TEST_CASE("approvals.md/retention: postgres prune skips a row a consume holds instead of waiting, and a consume during a prune is not blocked") {
  scratch_schemas schemas;
  const auto c = schemas.make();
  auto s = open_store(c);
  for (unsigned i = 1; i <= 3; ++i) {
    mint_approved(s, tid(i));
    const auto r = s.consume(consume_req(tid(i)));
    REQUIRE(r);
    REQUIRE(*r == approval_consume_status::consumed);
  }
  const auto after = t0 + std::chrono::hours{2};  // every consumed_at is t0 + 1h
  {
    // A second consume of ticket 1 on another connection, caught inside its transaction: it
    // holds the row's lock (the probe's SELECT ... FOR UPDATE).
    row_lock other(c, tid(1));
    const auto start = std::chrono::steady_clock::now();
    const auto n = s.prune(after);
    const auto took = std::chrono::steady_clock::now() - start;
    REQUIRE_MESSAGE(n, (n ? "" : n.error().message()));
    CHECK(*n == 2);
    CHECK(took < std::chrono::seconds{2});  // the statement timeout (5 s) was not waited for
    const auto held = s.get(tid(1));
    REQUIRE(held);
    CHECK(held->has_value());
    other.release();
  }
  const auto rest = s.prune(after);
  REQUIRE(rest);
  CHECK(*rest == 1);

  // Many old rows, pruned in batches on one store while another (its own connection) consumes.
  test_pg::connection bulk(c);
  bulk.exec("INSERT INTO mcpcore_approvals (id, definition_id, status, origin, submitted_by, submitted_at,"
            " reviewed_by, reviewed_at, scope) SELECT 'bulk' || g, 'mcp.deploy', 'rejected', 'mcp', 'alice', 1,"
            " 'bob', 2, '{}' FROM generate_series(1, 20000) g");
  auto consumer = open_store(c);
  constexpr unsigned live = 20;
  for (unsigned i = 0; i < live; ++i) mint_approved(consumer, tid(100 + i));
  std::atomic<bool> done{false};
  mcpcore::result<std::size_t> pruned = 0;
  std::jthread pruner([&] {
    pruned = s.prune(after, approval_prune_options{500});
    done = true;
  });
  auto slowest = std::chrono::steady_clock::duration::zero();
  unsigned consumed = 0;
  for (unsigned i = 0; i < live && !done; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const auto r = consumer.consume(consume_req(tid(100 + i)));
    slowest = std::max(slowest, std::chrono::steady_clock::now() - start);
    REQUIRE(r);
    CHECK(*r == approval_consume_status::consumed);
    ++consumed;
  }
  pruner.join();
  REQUIRE_MESSAGE(pruned, (pruned ? "" : pruned.error().message()));
  // The bulk rows, plus those of the live tickets consumed (at t0 + 1h) before the last batch ran.
  CHECK(*pruned >= 20000);
  CHECK(*pruned <= 20000 + consumed);
  MESSAGE("consumes during the prune: " << consumed << ", slowest "
                                         << std::chrono::duration_cast<milliseconds>(slowest).count() << " ms");
  CHECK(slowest < std::chrono::seconds{1});
}

TEST_CASE("postgres store schema: open creates version 2 with the server column, the index of finished tickets and the index of reviewed ones, reopening keeps the tickets, a newer version is schema_too_new") {
  scratch_schemas schemas;
  const auto c = schemas.make();
  {
    auto s = open_store(c);
    mint_approved(s, tid(1));
  }
  test_pg::connection raw(c);
  CHECK(postgres_approval_store::schema_version == 2);
  CHECK(raw.exec("SELECT version FROM mcpcore_schema WHERE component = 'approvals'") == "2");
  CHECK(raw.exec("SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema()"
                 " AND tablename = 'mcpcore_approvals'") == "7");
  CHECK(raw.exec("SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema()"
                 " AND indexname = 'mcpcore_approvals_finished'") == "1");
  CHECK(raw.exec("SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema()"
                 " AND indexname = 'mcpcore_approvals_reviewed'") == "1");
  CHECK(raw.exec("SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema()"
                 " AND table_name = 'mcpcore_approvals' AND column_name = 'server' AND is_nullable = 'NO'") == "1");
  {
    auto s = open_store(c);  // idempotent
    check_intact(s, tid(1));
  }
  raw.exec("UPDATE mcpcore_schema SET version = 3 WHERE component = 'approvals'");
  const auto s = postgres_approval_store::open(c);
  REQUIRE_FALSE(s);
  CHECK(s.error() == approval_store_errc::schema_too_new);
  CHECK(is_permanent_store_error(s.error()));
  CHECK(raw.exec("SELECT count(*) FROM mcpcore_approvals") == "1");  // untouched
}

TEST_CASE("approvals.md/recently-reviewed: a PostgreSQL database of schema version 1 gets the index of reviewed tickets when a store opens it, idempotently, and keeps its tickets") {
  scratch_schemas schemas;
  const auto c = schemas.make();
  {
    auto s = open_store(c);
    mint_approved(s, tid(1));
  }
  test_pg::connection raw(c);
  const auto count_index = [&] {
    return raw.exec("SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema()"
                    " AND indexname = 'mcpcore_approvals_reviewed'");
  };
  // Version 1 exactly: version 2 is version 1 and the index.
  raw.exec("DROP INDEX mcpcore_approvals_reviewed");
  raw.exec("UPDATE mcpcore_schema SET version = 1 WHERE component = 'approvals'");
  REQUIRE(count_index() == "0");
  for (int round = 0; round < 2; ++round) {
    CAPTURE(round);
    {
      auto s = open_store(c);
      CHECK(raw.exec("SELECT version FROM mcpcore_schema WHERE component = 'approvals'") == "2");
      CHECK(count_index() == "1");
      const auto listed = s.recently_reviewed(10);
      REQUIRE(listed);
      REQUIRE(listed->size() == 1);
      CHECK(listed->front().id == tid(1));
      check_intact(s, tid(1));
    }
    // The second round: a version 1 database that already has the index (created ahead of the
    // upgrade) migrates all the same.
    raw.exec("UPDATE mcpcore_schema SET version = 1 WHERE component = 'approvals'");
  }
}

TEST_CASE("approvals.md/recently-reviewed: the PostgreSQL store passes the history suite") {
  scratch_schemas schemas;
  mcpcore_test::approval_store_history_conformance(
      mcpcore_test::store_opener<postgres_approval_store>([&] { return schemas.make(); }));
}

TEST_CASE("approvals.md/recently-reviewed: decisions made through another store on the same database, as by another server, are listed") {
  scratch_schemas schemas;
  const auto c = schemas.make();
  auto page = open_store(c);
  auto other = open_store(c);
  const auto before = page.recently_reviewed(10);
  REQUIRE(before);
  CHECK(before->empty());
  REQUIRE(other.mint(mint_req(tid(1))));
  REQUIRE(other.mint(mint_req(tid(2), "dave", R"({"n":2})")));
  const auto a = other.review(review_req(tid(1), "carol"));
  REQUIRE(a);
  REQUIRE(*a == approval_review_status::reviewed);
  const auto b = page.review(review_req(tid(2), "bob", approval_status::rejected, t0 + std::chrono::minutes{2}));
  REQUIRE(b);
  REQUIRE(*b == approval_review_status::reviewed);
  const auto listed = page.recently_reviewed(10);
  REQUIRE(listed);
  REQUIRE(listed->size() == 2);
  CHECK((*listed)[0].id == tid(2));
  CHECK((*listed)[0].reviewed_by == "bob");
  CHECK((*listed)[1].id == tid(1));
  CHECK((*listed)[1].reviewed_by == "carol");
}

TEST_CASE("approvals.md/recently-reviewed: the PostgreSQL history reads the index of reviewed tickets in its order, no sequential scan and no sort") {
  scratch_schemas schemas;
  const auto c = schemas.make();
  test_pg::connection raw(c);
  fill_for_plans(c, raw);
  for (const char* limit : {"1", "200"}) {
    CAPTURE(limit);
    const std::string plan = explain(raw, detail::pg_store::sql_approval_select_reviewed, {limit});
    CAPTURE(plan);
    CHECK(plan.find("Index Scan using mcpcore_approvals_reviewed") != std::string::npos);
    CHECK(plan.find("Seq Scan") == std::string::npos);
    CHECK(plan.find("Sort") == std::string::npos);  // the index order is the result's order
  }
  auto s = open_store(c);
  const auto listed = s.recently_reviewed(3);
  REQUIRE(listed);
  REQUIRE(listed->size() == 3);
  CHECK((*listed)[0].id == "r20000");
  CHECK((*listed)[2].id == "r19998");
}

TEST_CASE("postgres store: a malformed connection string is permanent, an unreachable server transient") {
  const auto bad = postgres_approval_store::open("host=/tmp nosuchkeyword=1");
  REQUIRE_FALSE(bad);
  CHECK(is_permanent_store_error(bad.error()));
  postgres_approval_store_options o;
  o.connect_timeout = milliseconds{2000};
  const auto gone = postgres_approval_store::open("host=/nonexistent-mcpcore-dir dbname=x user=postgres", o);
  REQUIRE_FALSE(gone);
  check_transient(gone.error());
}

TEST_CASE("postgres store: quotes, SQL text and Unicode are bound parameters and round-trip exactly") {
  scratch_schemas schemas;
  auto s = open_store(schemas.make());
  const std::string scope = R"({"q":"'; DROP TABLE mcpcore_approvals; --","u":"é✓"})";
  const auto m = s.mint(mint_req(tid(2), "alice", scope));
  REQUIRE(m);
  REQUIRE(m->status == approval_mint_status::created);
  const auto t = s.get(tid(2));
  REQUIRE(t);
  REQUIRE(t->has_value());
  CHECK((*t)->scope == scope);
  const auto again = s.mint(mint_req(tid(3), "alice", scope));
  REQUIRE(again);
  CHECK(again->status == approval_mint_status::deduped);
}

TEST_CASE("approvals.md/retention: the PostgreSQL prune batch selects finished tickets through their index, not a sequential scan") {
  scratch_schemas schemas;
  const auto c = schemas.make();
  test_pg::connection raw(c);
  fill_for_plans(c, raw);
  for (const char* older_than : {"100", "30000"}) {
    CAPTURE(older_than);
    const std::string plan = explain(raw, detail::pg_store::sql_approval_prune_batch, {older_than, "500"});
    CAPTURE(plan);
    CHECK(plan.find("Index") != std::string::npos);
    CHECK(plan.find("using mcpcore_approvals_finished") != std::string::npos);
    CHECK(plan.find("Seq Scan") == std::string::npos);  // neither the batch's select nor the delete scans
  }
}

// ---- faults: each transient, the ticket intact, the next call served
// (docs/approvals.md#every-answer-of-the-machine) ------------------------------------------------

TEST_CASE("postgres store fault: a server restart between calls is transient, then the store reconnects") {
  scratch_schemas schemas;
  auto s = open_store(schemas.make());
  mint_approved(s, tid(4));
  REQUIRE(test_pg::run_cluster_script("restart") == 0);
  const auto first = s.consume(consume_req(tid(4)));  // on the pooled connection the restart closed
  REQUIRE_FALSE(first);
  check_transient(first.error());
  check_recovers(s, tid(4));
}

TEST_CASE("postgres store fault: a server restart before a history read is transient, then the history is served") {
  scratch_schemas schemas;
  auto s = open_store(schemas.make());
  mint_approved(s, tid(4));
  REQUIRE(test_pg::run_cluster_script("restart") == 0);
  const auto first = s.recently_reviewed(10);  // on the pooled connection the restart closed
  REQUIRE_FALSE(first);
  check_transient(first.error());
  const auto second = s.recently_reviewed(10);
  REQUIRE_MESSAGE(second, (second ? "" : second.error().message()));
  REQUIRE(second->size() == 1);
  CHECK(second->front().id == tid(4));
}

TEST_CASE("postgres store: a moved-from store answers recently_reviewed closed (permanent), as pending") {
  scratch_schemas schemas;
  auto a = open_store(schemas.make());
  const postgres_approval_store b = std::move(a);
  const auto p = a.pending(10);  // NOLINT(bugprone-use-after-move): the moved-from state is what is tested
  REQUIRE_FALSE(p);
  CHECK(p.error() == approval_store_errc::closed);
  const auto h = a.recently_reviewed(10);  // NOLINT(bugprone-use-after-move)
  REQUIRE_FALSE(h);
  CHECK(h.error() == approval_store_errc::closed);
  CHECK(is_permanent_store_error(h.error()));
}

TEST_CASE("postgres store fault: pg_terminate_backend of the pool's connection is transient, then it reconnects") {
  scratch_schemas schemas;
  const std::string app = "mcpcore_term_" + std::to_string(::getpid());
  auto s = open_store(schemas.make("application_name=" + app));
  mint_approved(s, tid(5));
  CHECK(schemas.admin().exec("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1",
                             {app}) == "1");
  const auto first = s.consume(consume_req(tid(5)));
  REQUIRE_FALSE(first);
  check_transient(first.error());
  check_recovers(s, tid(5));
}

TEST_CASE("postgres store fault: a row lock held past statement_timeout is busy (transient), the ticket intact") {
  scratch_schemas schemas;
  const auto c = schemas.make();
  postgres_approval_store_options o;
  o.statement_timeout = milliseconds{300};
  auto s = open_store(c, o);
  mint_approved(s, tid(6));
  row_lock holder(c, tid(6));
  const auto start = std::chrono::steady_clock::now();
  const auto blocked = s.consume(consume_req(tid(6)));
  const auto waited = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(blocked);
  check_transient(blocked.error());
  CHECK(blocked.error() == approval_store_errc::busy);
  CHECK(blocked.error().message().find("57014") != std::string::npos);
  CHECK(waited < std::chrono::seconds{3});
  holder.release();
  check_recovers(s, tid(6));
}

TEST_CASE("postgres store fault: a read-only server (default_transaction_read_only) is transient, the ticket intact") {
  scratch_schemas schemas;
  auto s = open_store(schemas.make());
  mint_approved(s, tid(7));
  test_pg::connection admin(base_conninfo());
  // Server-wide, as a standby or a server put read-only; reset whatever happens below.
  struct reset_guard {
    test_pg::connection& a;
    ~reset_guard() {
      try {
        a.exec("ALTER SYSTEM RESET default_transaction_read_only");
        a.exec("SELECT pg_reload_conf()");
      } catch (...) {  // NOLINT(bugprone-empty-catch): best effort in a destructor
      }
    }
  } guard{admin};
  admin.exec("ALTER SYSTEM SET default_transaction_read_only = on");
  admin.exec("SELECT pg_reload_conf()");
  std::this_thread::sleep_for(milliseconds{300});  // every backend reloads at its next command
  const auto refused = s.consume(consume_req(tid(7)));
  REQUIRE_FALSE(refused);
  check_transient(refused.error());
  CHECK(refused.error().message().find("25006") != std::string::npos);
  admin.exec("ALTER SYSTEM RESET default_transaction_read_only");
  admin.exec("SELECT pg_reload_conf()");
  std::this_thread::sleep_for(milliseconds{300});
  check_recovers(s, tid(7));
}

TEST_CASE("postgres store pool: never more than max_connections open, a call finding none free within connect_timeout is busy") {
  scratch_schemas schemas;
  const std::string app = "mcpcore_pool_" + std::to_string(::getpid());
  const auto c = schemas.make("application_name=" + app);
  postgres_approval_store_options o;
  o.max_connections = 2;
  o.connect_timeout = milliseconds{300};
  o.statement_timeout = milliseconds{3000};
  auto s = open_store(c, o);
  mint_approved(s, tid(9));
  row_lock holder(c, tid(9));
  // Two consumes wait on the row lock, holding both pooled connections.
  std::vector<std::jthread> blocked;
  blocked.reserve(2);
  for (int i = 0; i < 2; ++i) {
    blocked.emplace_back([&] { (void)s.consume(consume_req(tid(9))); });
  }
  std::this_thread::sleep_for(milliseconds{500});
  const auto third = s.get(tid(9));
  REQUIRE_FALSE(third);
  CHECK(third.error() == approval_store_errc::busy);
  CHECK_FALSE(is_permanent_store_error(third.error()));
  // The holder's own session has the same application_name.
  CHECK(schemas.admin().exec("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", {app}) == "3");
  holder.release();
  blocked.clear();
  const auto t = s.get(tid(9));
  REQUIRE(t);
  REQUIRE(t->has_value());
  CHECK((*t)->consumed_at.has_value());  // one of the two waiting consumes won, once
}

TEST_CASE("postgres store pool: a connect_timeout of milliseconds::max() waits for a free connection instead of overflowing into busy") {
  scratch_schemas schemas;
  const auto c = schemas.make();
  postgres_approval_store_options o;
  o.max_connections = 1;
  o.connect_timeout = milliseconds::max();
  o.statement_timeout = milliseconds{5000};
  auto s = open_store(c, o);  // libpq's connect_timeout is computed from it without overflow
  mint_approved(s, tid(10));
  row_lock holder(c, tid(10));
  // The one pooled connection waits on the row lock; a second call waits for it.
  std::jthread first([&] { (void)s.consume(consume_req(tid(10))); });
  std::this_thread::sleep_for(milliseconds{300});
  std::optional<result<std::optional<approval_ticket>>> second;
  std::jthread waiter([&] { second.emplace(s.get(tid(10))); });
  std::this_thread::sleep_for(milliseconds{300});
  holder.release();
  first.join();
  waiter.join();
  REQUIRE(second.has_value());
  REQUIRE_MESSAGE(second->has_value(), (second->has_value() ? std::string{} : second->error().message()));
  REQUIRE((*second)->has_value());
  CHECK((**second)->consumed_at.has_value());
}

// ---- exactly once across stores and processes (docs/approvals.md#guarantees) -------------------

TEST_CASE("approvals.md/guarantees: of 8 threads, each with its own PostgreSQL store, consuming one ticket exactly one wins") {
  scratch_schemas schemas;
  const auto c = schemas.make();
  mcpcore_test::approval_store_consume_race(mcpcore_test::store_opener<postgres_approval_store>([&] { return c; }), 8);
}

TEST_CASE("approvals.md/guarantees: of 8 processes consuming one ticket on PostgreSQL at once, exactly one wins") {
  scratch_schemas schemas;
  const auto c = schemas.make();
  // Each connected before the start: the race is the consume.
  mcpcore_test::approval_store_consume_process_race([&] { return postgres_approval_store::open(c); }, 8,
                                                    mcpcore_test::race_connect::before_start);
}
