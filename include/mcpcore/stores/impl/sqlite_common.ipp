// SPDX-License-Identifier: Apache-2.0
// What the SQLite stores (approvals, tasks) and the SQLite audit sink share: the connection and its open
// (flags, busy timeout, WAL, the retried open), cached statements and transactions, schema
// migration, reading columns, and the mapping of SQLite result codes to their error enums.
#ifndef MCPCORE_IMPL_SQLITE_COMMON_IPP
#define MCPCORE_IMPL_SQLITE_COMMON_IPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/stores/impl/store_call.ipp>

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

MCPCORE_BEGIN_NAMESPACE
namespace detail::sqlite {

// --- statement text the tests read --------------------------------------------------------------

// The approval store's retention batch (sqlite_approval_store::prune; ?1 older_than, ?2 limit): the
// finished tickets (rejected, expired, or consumed) whose last change (consumed_at, expired_at, or
// the rejection's reviewed_at: the first that is set) is before ?1. The predicate
// and the expression are those of the index mcpcore_approvals_finished, word for word (SQLite
// uses a partial expression index only then). It lives here, in a file of inline definitions
// only, so that a test can ask SQLite for its plan (EXPLAIN QUERY PLAN) without linking the store
// twice.
inline constexpr const char* approval_prune_batch_sql =
    "DELETE FROM mcpcore_approvals WHERE rowid IN (SELECT rowid FROM mcpcore_approvals"
    " WHERE (status IN ('rejected', 'expired') OR consumed_at IS NOT NULL)"
    " AND COALESCE(consumed_at, expired_at, reviewed_at) < ?1 LIMIT ?2)";

// The approval store's history (sqlite_approval_store::recently_reviewed; ?1 limit): the tickets a
// reviewer decided, newest review first, ties by id. The predicate and the order are those of the
// partial index mcpcore_approvals_reviewed (reviewed_at DESC, id), so SQLite reads ?1 entries of
// it and sorts nothing. The columns are the store's ticket columns, in their order.
inline constexpr const char* approval_select_reviewed_sql =
    "SELECT id, definition_id, status, origin, submitted_by, submitted_at, reviewed_by, reviewed_at,"
    " review_comment, scope, consumed_at, consumed_by, expired_at, server"
    " FROM mcpcore_approvals WHERE reviewed_by <> '' ORDER BY reviewed_at DESC, id LIMIT ?1";

// --- errors -----------------------------------------------------------------------------------

// The error for an SQLite result code (primary or extended). `Errc` is approval_store_errc or
// sqlite_audit_errc, which have the same enumerators (see the tables in their headers).
template <class Errc>
constexpr Errc map_error(int rc) noexcept {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_PROTOCOL:  // a race on the WAL locks that outlasted SQLite's own retries
      return Errc::busy;
    case SQLITE_IOERR: return Errc::io_error;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return Errc::corrupt;
    case SQLITE_READONLY: return Errc::read_only;
    case SQLITE_FULL: return Errc::full;
    case SQLITE_CANTOPEN: return Errc::closed;
    default: return Errc::internal;
  }
}
template <class Errc>
std::error_code sqlite_error(int rc) noexcept {
  return make_error_code(map_error<Errc>(rc));
}

// --- statements -------------------------------------------------------------------------------

// One use of a cached statement: binds, steps, and on destruction resets it and drops the
// bindings (text is bound without a copy, so it must not outlive the bound views).
class statement {
 public:
  explicit statement(sqlite3_stmt* s) noexcept : s_(s) {}
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;
  ~statement() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  statement& bind(int i, std::string_view v) noexcept {
    // A null pointer would bind SQL NULL: an empty view binds the empty string.
    const char* p = v.data() != nullptr ? v.data() : "";
    keep(sqlite3_bind_text64(s_, i, p, static_cast<sqlite3_uint64>(v.size()), SQLITE_STATIC, SQLITE_UTF8));
    return *this;
  }
  statement& bind(int i, std::int64_t v) noexcept {
    keep(sqlite3_bind_int64(s_, i, static_cast<sqlite3_int64>(v)));
    return *this;
  }
  // SQLITE_ROW, SQLITE_DONE or an error (a failed bind is reported here).
  int step() noexcept { return rc_ != SQLITE_OK ? rc_ : sqlite3_step(s_); }
  [[nodiscard]] sqlite3_stmt* get() const noexcept { return s_; }

 private:
  void keep(int rc) noexcept {
    if (rc_ == SQLITE_OK) rc_ = rc;
  }
  sqlite3_stmt* s_;
  int rc_ = SQLITE_OK;
};

inline std::string column_string(sqlite3_stmt* s, int i) {
  const auto* p = sqlite3_column_text(s, i);  // before sqlite3_column_bytes (the documented order)
  const int n = sqlite3_column_bytes(s, i);
  if (p == nullptr || n <= 0) return {};
  return {reinterpret_cast<const char*>(p), static_cast<std::size_t>(n)};
}
inline std::string_view column_view(sqlite3_stmt* s, int i) noexcept {
  const auto* p = sqlite3_column_text(s, i);
  const int n = sqlite3_column_bytes(s, i);
  if (p == nullptr || n <= 0) return {};
  return {reinterpret_cast<const char*>(p), static_cast<std::size_t>(n)};
}
inline std::int64_t column_int(sqlite3_stmt* s, int i) noexcept {
  return static_cast<std::int64_t>(sqlite3_column_int64(s, i));
}

// Runs a statement that returns no rows.
inline int run(statement& s) noexcept {
  const int rc = s.step();
  return rc == SQLITE_DONE ? SQLITE_OK : (rc == SQLITE_ROW ? SQLITE_INTERNAL : rc);
}
inline int run(statement&& s) noexcept { return run(s); }
// Runs a statement that returns one integer.
inline int scalar(statement& s, std::int64_t& out) noexcept {
  const int rc = s.step();
  if (rc != SQLITE_ROW) return rc == SQLITE_DONE ? SQLITE_INTERNAL : rc;
  out = column_int(s.get(), 0);
  return SQLITE_OK;
}
inline int scalar(statement&& s, std::int64_t& out) noexcept { return scalar(s, out); }

// Runs `sql` (one or more statements, no results wanted).
inline int exec(sqlite3* db, const char* sql) noexcept { return sqlite3_exec(db, sql, nullptr, nullptr, nullptr); }

// Prepares `sql` once, steps it once and hands its row to `read`; `no_row` when it has none.
template <class Read>
int query_row(sqlite3* db, const char* sql, int no_row, Read&& read) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &raw, nullptr);
  const std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> owner(raw, &sqlite3_finalize);
  if (rc != SQLITE_OK) return rc;
  rc = sqlite3_step(raw);
  if (rc == SQLITE_DONE) return no_row;
  if (rc != SQLITE_ROW) return rc;
  std::forward<Read>(read)(raw);
  return SQLITE_OK;
}
// The single integer that a one-row statement such as a PRAGMA returns.
inline int query_int(sqlite3* db, const char* sql, std::int64_t& out, int no_row = SQLITE_INTERNAL) noexcept {
  return query_row(db, sql, no_row, [&](sqlite3_stmt* s) noexcept { out = column_int(s, 0); });
}
// The single text that a one-row statement returns.
inline int query_text(sqlite3* db, const char* sql, std::string& out) {
  return query_row(db, sql, SQLITE_INTERNAL, [&](sqlite3_stmt* s) { out = column_string(s, 0); });
}

// --- the connection ---------------------------------------------------------------------------

// The connection of one store object, with its `N` cached statements and the three of its
// transactions. One call uses it at a time: the owner serialises the calls (a transaction spans
// several statements), so it is opened SQLITE_OPEN_NOMUTEX.
template <std::size_t N>
struct connection {
  sqlite3* db_ = nullptr;
  std::array<sqlite3_stmt*, N> stmts_{};
  std::array<sqlite3_stmt*, 3> tx_{};  // BEGIN IMMEDIATE, COMMIT, ROLLBACK

  connection() = default;
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  ~connection() {
    for (auto* s : stmts_) sqlite3_finalize(s);
    for (auto* s : tx_) sqlite3_finalize(s);
    sqlite3_close_v2(db_);
  }

  // Prepares the statements once for the connection's lifetime (SQLITE_PREPARE_PERSISTENT).
  int prepare(const std::array<const char*, N>& sql) noexcept {
    static constexpr std::array<const char*, 3> tx_sql{{"BEGIN IMMEDIATE", "COMMIT", "ROLLBACK"}};
    for (std::size_t i = 0; i < tx_.size(); ++i) {
      if (const int rc = sqlite3_prepare_v3(db_, tx_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &tx_[i], nullptr);
          rc != SQLITE_OK) {
        return rc;
      }
    }
    for (std::size_t i = 0; i < N; ++i) {
      if (const int rc = sqlite3_prepare_v3(db_, sql[i], -1, SQLITE_PREPARE_PERSISTENT, &stmts_[i], nullptr);
          rc != SQLITE_OK) {
        return rc;
      }
    }
    return SQLITE_OK;
  }

  statement use(std::size_t which) noexcept { return statement{stmts_[which]}; }
  // Rows changed by the last INSERT, UPDATE or DELETE.
  [[nodiscard]] std::int64_t changes() const noexcept { return static_cast<std::int64_t>(sqlite3_changes(db_)); }
};

// BEGIN IMMEDIATE ... COMMIT; rolled back on destruction unless committed. IMMEDIATE takes the
// write lock at the start, waiting within the busy timeout: a deferred transaction that read
// first and then wrote could meet SQLITE_BUSY on its upgrade, which the busy handler cannot wait
// out (it would deadlock with the other writer), so every write here begins IMMEDIATE.
template <std::size_t N>
class transaction {
 public:
  explicit transaction(connection<N>& c) noexcept : c_(c), rc_(run(statement{c.tx_[0]})) {}
  transaction(const transaction&) = delete;
  transaction& operator=(const transaction&) = delete;
  ~transaction() {
    // Some errors (full, I/O, out of memory) end the transaction themselves.
    if (rc_ == SQLITE_OK && !committed_ && sqlite3_get_autocommit(c_.db_) == 0) (void)run(statement{c_.tx_[2]});
  }
  [[nodiscard]] int begun() const noexcept { return rc_; }
  int commit() noexcept {
    const int rc = run(statement{c_.tx_[1]});
    committed_ = rc == SQLITE_OK;
    return rc;
  }

 private:
  connection<N>& c_;
  int rc_;
  bool committed_ = false;
};

// --- opening ----------------------------------------------------------------------------------

// The busy timeout as SQLite takes it: [0, INT_MAX] milliseconds.
inline std::chrono::milliseconds clamp_timeout(std::chrono::milliseconds t) noexcept {
  constexpr std::chrono::milliseconds max{std::numeric_limits<int>::max()};
  return std::clamp(t, std::chrono::milliseconds{0}, max);
}

// Opens the connection's database file: read-only, or read-write (created when `create`), with
// extended result codes and the busy timeout, during which SQLite itself retries a statement
// that meets another connection's lock before answering SQLITE_BUSY. SQLITE_INTERNAL when SQLite
// could not allocate the connection at all; after any other failure the connection still holds
// a handle, closed with it.
template <std::size_t N>
int open(connection<N>& c, const std::string& path, bool read_only, bool create,
         std::chrono::milliseconds busy_timeout) noexcept {
  const int flags =
      SQLITE_OPEN_NOMUTEX | (read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0)));
  if (const int rc = sqlite3_open_v2(path.c_str(), &c.db_, flags, nullptr); rc != SQLITE_OK) {
    return c.db_ == nullptr ? SQLITE_INTERNAL : rc;
  }
  sqlite3_extended_result_codes(c.db_, 1);
  sqlite3_busy_timeout(c.db_, static_cast<int>(clamp_timeout(busy_timeout).count()));
  return SQLITE_OK;
}

// Asks for write-ahead logging: readers then never block the writer nor it them, and a commit
// appends to the log rather than rewriting the file, so several processes can share one
// database. SQLite answers the mode now in effect (`wal` tells which): a file system without
// shared memory keeps its rollback journal, slower for readers but just as safe.
inline int use_wal(sqlite3* db, bool& wal) {
  std::string mode;
  const int rc = query_text(db, "PRAGMA journal_mode = WAL", mode);
  wal = rc == SQLITE_OK && mode == "wal";
  return rc;
}

// Pause between attempts of an open refused by a concurrent opener.
inline constexpr std::chrono::milliseconds open_retry_interval{5};

// Runs `attempt` (one whole open, returning result<T>) until it is not refused as `busy` or
// `timeout` has passed. Opening a fresh file from several processes at once can fail with
// SQLITE_BUSY without the busy handler ever running: switching to WAL, or a reader upgrading to
// writer (the migration), is refused at once to avoid a deadlock, so the open is retried whole.
// Out of memory is the transient `std::errc::not_enough_memory`.
template <class Attempt>
auto retry_open(std::chrono::milliseconds timeout, std::error_code busy, Attempt&& attempt) -> decltype(attempt()) {
  const auto deadline = std::chrono::steady_clock::now() + clamp_timeout(timeout);
  try {
    for (;;) {
      auto r = attempt();
      if (r || r.error() != busy || std::chrono::steady_clock::now() >= deadline) return r;
      std::this_thread::sleep_for(open_retry_interval);
    }
  } catch (const std::bad_alloc&) {
    return fail(std::make_error_code(std::errc::not_enough_memory));
  }
}

// --- schema migration -------------------------------------------------------------------------

// One migration: the SQL that takes a schema from `version - 1` to `version` and records it.
// To change a schema, append a step and raise its schema_version; never edit a published step.
struct migration_step {
  int version;
  const char* sql;
};

// Brings a schema to `target` with `steps`, `read_version(db, v)` reading where it is (0: none):
// a no-op, without the write lock, when it is already there. The pending steps run in order
// inside one BEGIN IMMEDIATE transaction, so a database is always at a version the steps name,
// and processes opening a fresh file together migrate it once. `too_new`: the file is at a
// version above `target` (then the result is SQLITE_ERROR and nothing is changed).
template <std::size_t N, class ReadVersion>
int migrate(sqlite3* db, const std::array<migration_step, N>& steps, std::int64_t target, ReadVersion read_version,
            bool& too_new) noexcept {
  std::int64_t version = 0;
  if (const int rc = read_version(db, version); rc != SQLITE_OK) return rc;
  if (version > target) {
    too_new = true;
    return SQLITE_ERROR;
  }
  if (version == target) return SQLITE_OK;
  // Another process may be migrating the same file: take the write lock, then look again.
  if (const int rc = exec(db, "BEGIN IMMEDIATE"); rc != SQLITE_OK) return rc;
  int rc = read_version(db, version);
  if (rc == SQLITE_OK && version > target) {
    too_new = true;
    rc = SQLITE_ERROR;
  }
  for (const auto& step : steps) {
    if (rc != SQLITE_OK) break;
    if (step.version <= version) continue;
    rc = exec(db, step.sql);
  }
  if (rc == SQLITE_OK) rc = exec(db, "COMMIT");
  if (rc != SQLITE_OK && sqlite3_get_autocommit(db) == 0) exec(db, "ROLLBACK");
  return rc;
}

// The schema version a store keeps in a table of its own (one row, id 1; the audit sink's and the
// task store's, which share files whose user_version the approval store owns): 0 when the file has
// no such table yet. `count_sql` counts the table in sqlite_master, `version_sql` reads the row.
// Reading the schema also turns a file that is not a database into SQLITE_NOTADB here; the table
// without its row is not a state the library leaves: SQLITE_CORRUPT.
inline int read_table_version(sqlite3* db, const char* count_sql, const char* version_sql,
                              std::int64_t& version) noexcept {
  std::int64_t tables = 0;
  if (const int rc = query_int(db, count_sql, tables); rc != SQLITE_OK) return rc;
  if (tables == 0) {
    version = 0;
    return SQLITE_OK;
  }
  return query_int(db, version_sql, version, SQLITE_CORRUPT);
}

// --- a store's calls and its open ------------------------------------------------------------

// Runs `f(*p)` holding `p->mutex_` (detail::guarded_store_call); `refuse(e)` makes the error of the
// store's own code `e`: a moved-from store (`p` null) is `Errc::closed`, an exception other than
// out of memory `Errc::internal`.
template <class R, class Errc, class Impl, class F, class Refuse>
R locked_call(Impl* p, F&& f, Refuse&& refuse) noexcept {
  if (p == nullptr) return refuse(Errc::closed);
  return guarded_store_call(
      p->mutex_, [&]() -> R { return std::forward<F>(f)(*p); }, [&]() -> R { return refuse(Errc::internal); });
}

// What `open_store` needs to know of one store's schema.
template <std::size_t M, std::size_t S, class ReadVersion>
struct store_schema {
  std::int64_t version;                          // the version this library writes
  const std::array<migration_step, M>& steps;    // sqlite::migrate's steps up to `version`
  ReadVersion read_version;                      // where a file is (0: no schema yet)
  const std::array<const char*, S>& statements;  // the store's cached statements
};

// Opens a store's connection (`impl_of(store)` of the store `make()` returns; it closes the
// connection on every early return): the file with the flags and busy timeout of `o`; the
// schema version read first (which also turns a file that is not a database into `corrupt`); a
// newer one refused `schema_too_new`; read-only (asked for, or the file is) needs the schema
// already there, else `read_only`; otherwise WAL and the migration; then `synchronous = FULL`
// (a commit is on disk when it returns, in WAL mode too) and the statements. The whole open is
// retried while it is refused `busy` (retry_open), and a failure's message names the file:
// "cannot open the <what> <path>: <message>" (docs/errors.md#one-error-shape).
template <class Errc, class Store, class Options, class Make, class ImplOf, class Schema, class Refuse>
result<Store> open_store(const std::string& path, const Options& o, std::string_view what, Make&& make,
                         ImplOf&& impl_of, const Schema& schema, Refuse&& refuse) {
  const auto sqlite_failure = [&](int rc) { return refuse(map_error<Errc>(rc)); };
  const auto attempt = [&]() -> result<Store> {
    Store store = make();
    auto* p = impl_of(store);
    if (const int rc = open(*p, path, o.read_only, o.create, o.busy_timeout); rc != SQLITE_OK) {
      return sqlite_failure(rc);
    }
    std::int64_t version = 0;
    if (const int rc = schema.read_version(p->db_, version); rc != SQLITE_OK) return sqlite_failure(rc);
    if (version > schema.version) return refuse(Errc::schema_too_new);
    p->read_only_ = o.read_only || sqlite3_db_readonly(p->db_, "main") == 1;
    if (p->read_only_) {
      if (version < schema.version) return refuse(Errc::read_only);  // nothing may be written
    } else {
      bool wal = false;  // either journal is safe with synchronous = FULL
      if (const int rc = use_wal(p->db_, wal); rc != SQLITE_OK) return sqlite_failure(rc);
      bool too_new = false;
      if (const int rc = migrate(p->db_, schema.steps, schema.version, schema.read_version, too_new); rc != SQLITE_OK) {
        return too_new ? refuse(Errc::schema_too_new) : sqlite_failure(rc);
      }
    }
    if (const int rc = exec(p->db_, "PRAGMA synchronous = FULL"); rc != SQLITE_OK) return sqlite_failure(rc);
    if (const int rc = p->prepare(schema.statements); rc != SQLITE_OK) return sqlite_failure(rc);
    return store;
  };
  auto opened = retry_open(o.busy_timeout, make_error_code(Errc::busy), attempt);
  if (!opened) {
    const std::error_code ec = opened.error().code();
    const std::string why = opened.error().message();
    return fail(error(ec, "cannot open the " + std::string{what} + " " + path + ": " + why));
  }
  return opened;
}

// --- the public classes' moves ----------------------------------------------------------------

// The move assignment of a class that owns its implementation through a raw pointer (which keeps
// the implementation's type, and SQLite, out of the public header): the old one is closed.
template <class Impl>
void move_assign(Impl*& mine, Impl*& other) noexcept {
  if (&mine == &other) return;
  delete mine;
  mine = std::exchange(other, nullptr);
}

}  // namespace detail::sqlite
MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_SQLITE_COMMON_IPP
