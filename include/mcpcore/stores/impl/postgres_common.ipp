// SPDX-License-Identifier: Apache-2.0
// What the PostgreSQL stores share: the bounded connection pool (connect, SET statement_timeout),
// the SQLSTATE classification and the statement lease. One copy, used by postgres_approval_store and
// postgres_audit_sink (docs/concepts/approval_store.md, docs/concepts/audit_sink.md).
#ifndef MCPCORE_IMPL_POSTGRES_COMMON_IPP
#define MCPCORE_IMPL_POSTGRES_COMMON_IPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/approval.hpp>

#include <libpq-fe.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE
namespace detail::pg_store {

// Serializes migrations of every schema in the database ('mcpc' 'ore!').
inline constexpr const char* sql_migration_lock = "SELECT pg_advisory_xact_lock(1835230051, 1869768993)";

// The approval store's retention batch (postgres_approval_store::prune; $1 older_than, $2 limit):
// the finished tickets (rejected, expired, or consumed) whose last change (consumed_at, expired_at,
// or the rejection's reviewed_at: the first that is set) is before $1. One statement, its own
// transaction. The inner select has the predicate and the expression of the index
// mcpcore_approvals_finished, so it reads the index, not the table; rows a running consume or
// review holds are skipped, never waited for; the delete finds the selected ids through the
// primary key (`= ANY (ARRAY(...))`: `IN (SELECT ...)` may hash-join the whole table instead).
// It lives here, in a file of inline definitions only, so that a test can EXPLAIN it without
// linking the store twice.
inline constexpr const char* sql_approval_prune_batch =
    "DELETE FROM mcpcore_approvals WHERE id = ANY (ARRAY(SELECT id FROM mcpcore_approvals"
    " WHERE (status IN ('rejected', 'expired') OR consumed_at IS NOT NULL)"
    " AND COALESCE(consumed_at, expired_at, reviewed_at) < $1 LIMIT $2 FOR UPDATE SKIP LOCKED))";

// The approval store's history (postgres_approval_store::recently_reviewed; $1 limit): the tickets
// a reviewer decided, newest review first, ties by id. The predicate and the order are those of
// the partial index mcpcore_approvals_reviewed (reviewed_at DESC, id), so the server reads $1
// entries of it and sorts nothing. The columns are the store's ticket columns, in their order.
inline constexpr const char* sql_approval_select_reviewed =
    "SELECT id, definition_id, status, origin, submitted_by, submitted_at, reviewed_by, reviewed_at,"
    " review_comment, scope, consumed_at, consumed_by, expired_at, server"
    " FROM mcpcore_approvals WHERE reviewed_by <> '' ORDER BY reviewed_at DESC, id LIMIT $1";

// How a pool connects (each store's options name them).
struct connect_options {
  std::size_t max_connections;
  std::chrono::milliseconds connect_timeout;
  std::chrono::milliseconds statement_timeout;
};

struct result_deleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using pg_result = std::unique_ptr<PGresult, result_deleter>;

// --- SQLSTATE mapping (the class comment's table) ---------------------------------------------

// What a failed statement means: its code, and whether the connection must be dropped.
struct failure_class {
  approval_store_errc code;
  bool drop_connection;
};
inline failure_class classify_sqlstate(std::string_view state) noexcept {
  using e = approval_store_errc;
  // No SQLSTATE: a client-side failure, in practice a lost connection.
  if (state.size() != 5) return {e::io_error, true};
  if (state.starts_with("08") || state == "57P01" || state == "57P02" || state == "57P03") return {e::io_error, true};
  // A read-only transaction: a standby or a server put read-only; a fresh connection may reach a
  // writable primary.
  if (state == "25006") return {e::io_error, true};
  if (state == "40001" || state == "40P01" || state == "57014") return {e::busy, false};
  if (state == "53100") return {e::full, false};
  return {e::internal, false};
}

inline std::string trimmed(const char* s) {
  std::string out = s != nullptr ? s : "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

inline std::string int_text(std::int64_t v) { return std::to_string(v); }

inline std::optional<std::int64_t> parse_int(const char* s) noexcept {
  if (s == nullptr) return std::nullopt;
  const std::string_view v(s);
  std::int64_t out = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc{} || end != v.data() + v.size()) return std::nullopt;
  return out;
}

// libpq's `connect_timeout` for `t`: whole seconds rounded up, 2 at least (libpq takes 1 as 2)
// and at most what libpq reads (an int), without overflow for any `t`.
inline std::string connect_timeout_seconds(std::chrono::milliseconds t) {
  const std::int64_t ms = t.count();
  const std::int64_t up = ms / 1000 + (ms % 1000 > 0 ? 1 : 0);
  return std::to_string(std::clamp<std::int64_t>(up, 2, std::numeric_limits<int>::max()));
}

// --- the pool ---------------------------------------------------------------------------------

inline void ignore_notice(void* /*arg*/, const char* /*message*/) noexcept {}

// A bounded set of connections to one database.
class pool {
 public:
  pool(std::string conninfo, const connect_options& o)
      : conninfo_(std::move(conninfo)), options_(o) {
    if (options_.max_connections == 0) options_.max_connections = 1;
  }
  pool(const pool&) = delete;
  pool& operator=(const pool&) = delete;
  ~pool() {
    for (PGconn* c : idle_) PQfinish(c);
  }

  // A connection: an idle one, else a new one while fewer than max_connections are open, else
  // the first one released within connect_timeout (else `busy`).
  result<PGconn*> acquire() {
    std::unique_lock<std::mutex> lock(mutex_);
    // Saturated: a steady_clock deadline past its range would be one already gone.
    const auto wait = std::clamp(options_.connect_timeout, std::chrono::milliseconds{0},
                                 std::chrono::milliseconds{std::chrono::hours{24 * 365}});
    const bool free = cv_.wait_for(lock, wait, [&] {
      return !idle_.empty() || open_ < options_.max_connections;
    });
    if (!free) {
      return fail(error(make_error_code(approval_store_errc::busy),
                        "no free PostgreSQL connection in the pool within connect_timeout"));
    }
    if (!idle_.empty()) {
      PGconn* c = idle_.back();
      idle_.pop_back();
      return c;
    }
    ++open_;
    lock.unlock();
    auto c = connect();
    if (!c) {
      lock.lock();
      --open_;
      cv_.notify_one();
    }
    return c;
  }

  // Gives `c` back; a dropped connection is closed, and with it every idle one (a server that
  // dropped one has usually dropped them all: it restarted).
  void release(PGconn* c, bool drop) noexcept {
    std::vector<PGconn*> closing;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (drop || PQstatus(c) != CONNECTION_OK || PQtransactionStatus(c) != PQTRANS_IDLE) {
        closing.push_back(c);
        if (drop) {
          closing.insert(closing.end(), idle_.begin(), idle_.end());
          idle_.clear();
        }
        open_ -= closing.size();
      } else {
        idle_.push_back(c);
      }
    }
    cv_.notify_all();
    for (PGconn* d : closing) PQfinish(d);
  }

 private:
  result<PGconn*> connect() const {
    using std::chrono::milliseconds;
    // libpq's connect_timeout is in whole seconds, 2 at least.
    const std::string timeout = connect_timeout_seconds(options_.connect_timeout);
    const std::array<const char*, 4> keys{"dbname", "connect_timeout", "fallback_application_name", nullptr};
    const std::array<const char*, 4> values{conninfo_.c_str(), timeout.c_str(), "mcpcore", nullptr};
    PGconn* c = PQconnectdbParams(keys.data(), values.data(), 1);
    if (c == nullptr) return fail(std::make_error_code(std::errc::not_enough_memory));
    if (PQstatus(c) != CONNECTION_OK) {
      std::string why = "cannot connect to PostgreSQL: " + trimmed(PQerrorMessage(c));
      PQfinish(c);
      return fail(error(make_error_code(approval_store_errc::io_error), std::move(why)));
    }
    PQsetNoticeProcessor(c, &ignore_notice, nullptr);
    // The statement timeout, bound as a parameter (milliseconds; 0 disables it).
    const std::string ms = std::to_string(std::max<std::int64_t>(0, options_.statement_timeout.count()));
    const char* param = ms.c_str();
    const pg_result r(PQexecParams(c, "SELECT set_config('statement_timeout', $1, false)", 1, nullptr, &param,
                                   nullptr, nullptr, 0));
    if (!r || PQresultStatus(r.get()) != PGRES_TUPLES_OK) {
      std::string why = "cannot configure the PostgreSQL connection: " + trimmed(PQerrorMessage(c));
      PQfinish(c);
      return fail(error(make_error_code(approval_store_errc::io_error), std::move(why)));
    }
    return c;
  }

  std::string conninfo_;
  connect_options options_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<PGconn*> idle_;
  std::size_t open_ = 0;
};

// One call's connection: statements, and the transaction rolled back unless committed.
class lease {
 public:
  lease(pool& p, PGconn* c) noexcept : pool_(&p), c_(c) {}
  lease(const lease&) = delete;
  lease& operator=(const lease&) = delete;
  ~lease() {
    if (!drop_ && PQtransactionStatus(c_) != PQTRANS_IDLE) {
      const pg_result r(PQexec(c_, "ROLLBACK"));
      if (!r || PQresultStatus(r.get()) != PGRES_COMMAND_OK) drop_ = true;
    }
    pool_->release(c_, drop_);
  }

  // Runs `sql` with text parameters $1..$n (always bound, never spliced).
  result<pg_result> exec(const char* sql, std::initializer_list<std::string> params = {}) {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const auto& p : params) values.push_back(p.c_str());
    return exec_values(sql, values);
  }
  // The same with the parameters in a vector (a multi-row statement).
  result<pg_result> exec(const char* sql, const std::vector<std::string>& params) {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const auto& p : params) values.push_back(p.c_str());
    return exec_values(sql, values);
  }
  result<pg_result> exec_values(const char* sql, const std::vector<const char*>& values) {
    const auto& params = values;
    pg_result r(params.size() == 0
                    ? PQexec(c_, sql)
                    : PQexecParams(c_, sql, static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                                   nullptr, 0));
    if (r) {
      const auto st = PQresultStatus(r.get());
      if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return r;
    }
    return fail(failure(r.get()));
  }
  // Statements without a result.
  result<void> run(const char* sql, std::initializer_list<std::string> params = {}) {
    auto r = exec(sql, params);
    if (!r) return fail(r.error());
    return {};
  }
  result<void> begin() { return run("BEGIN"); }
  result<void> commit() { return run("COMMIT"); }

 private:
  error failure(const PGresult* r) {
    const char* state = r != nullptr ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    const std::string_view s = state != nullptr ? state : "";
    const auto f = classify_sqlstate(s);
    if (f.drop_connection || PQstatus(c_) != CONNECTION_OK) drop_ = true;
    std::string msg = "PostgreSQL";
    if (!s.empty()) msg.append(" ").append(s);
    msg.append(": ").append(trimmed(r != nullptr ? PQresultErrorMessage(r) : PQerrorMessage(c_)));
    return {make_error_code(f.code), std::move(msg)};
  }

  pool* pool_;
  PGconn* c_;
  bool drop_ = false;
};

}  // namespace detail::pg_store
MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_POSTGRES_COMMON_IPP
