// SPDX-License-Identifier: Apache-2.0
// The SQLite audit sink: its schema, the connection turn, insert with retention, reads, the open
// (what it shares with the approval store, from the connection to the error mapping, is in
// sqlite_common.ipp).
#ifndef MCPCORE_IMPL_SQLITE_AUDIT_SINK_IPP
#define MCPCORE_IMPL_SQLITE_AUDIT_SINK_IPP

#include <mcpcore/stores/sqlite_audit_sink.hpp>

#include <mcpcore/governance/approval.hpp>
#include <mcpcore/stores/impl/sqlite_common.ipp>

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE
namespace detail::sqlite_audit {

// --- errors -----------------------------------------------------------------------------------

// The two enumerations share their names (so sqlite::map_error serves both) and their values.
static_assert(static_cast<int>(sqlite_audit_errc::busy) == static_cast<int>(approval_store_errc::busy));
static_assert(static_cast<int>(sqlite_audit_errc::io_error) == static_cast<int>(approval_store_errc::io_error));
static_assert(static_cast<int>(sqlite_audit_errc::closed) == static_cast<int>(approval_store_errc::closed));
static_assert(static_cast<int>(sqlite_audit_errc::corrupt) == static_cast<int>(approval_store_errc::corrupt));
static_assert(static_cast<int>(sqlite_audit_errc::read_only) == static_cast<int>(approval_store_errc::read_only));
static_assert(static_cast<int>(sqlite_audit_errc::full) == static_cast<int>(approval_store_errc::full));
static_assert(static_cast<int>(sqlite_audit_errc::schema_too_new) ==
              static_cast<int>(approval_store_errc::schema_too_new));
static_assert(static_cast<int>(sqlite_audit_errc::internal) == static_cast<int>(approval_store_errc::internal));

inline std::error_code sqlite_error(int rc) noexcept { return sqlite::sqlite_error<sqlite_audit_errc>(rc); }

class category_impl final : public std::error_category {
 public:
  [[nodiscard]] const char* name() const noexcept override { return "mcpcore.sqlite_audit"; }
  [[nodiscard]] std::string message(int ev) const override {
    switch (static_cast<sqlite_audit_errc>(ev)) {
      case sqlite_audit_errc::busy: return "audit database busy (locked past the busy timeout)";
      case sqlite_audit_errc::io_error: return "audit database I/O error";
      case sqlite_audit_errc::closed: return "audit database is not open";
      case sqlite_audit_errc::corrupt: return "audit database is corrupt or not a database";
      case sqlite_audit_errc::read_only: return "audit database is read-only";
      case sqlite_audit_errc::full: return "audit database is full";
      case sqlite_audit_errc::schema_too_new: return "audit database schema is newer than this library";
      case sqlite_audit_errc::internal: return "audit database internal error";
    }
    return "unknown audit database error";
  }
  // The approval store's two classes, so that is_permanent_store_error applies to both.
  [[nodiscard]] std::error_condition default_error_condition(int ev) const noexcept override {
    switch (static_cast<sqlite_audit_errc>(ev)) {
      case sqlite_audit_errc::busy:
      case sqlite_audit_errc::io_error: return make_error_condition(approval_store_fault::transient);
      case sqlite_audit_errc::closed:
      case sqlite_audit_errc::corrupt:
      case sqlite_audit_errc::read_only:
      case sqlite_audit_errc::full:
      case sqlite_audit_errc::schema_too_new:
      case sqlite_audit_errc::internal: return make_error_condition(approval_store_fault::permanent);
    }
    return {ev, *this};
  }
};

// --- schema -----------------------------------------------------------------------------------

// The migrations (sqlite::migrate runs them). The audit schema's version lives in its own
// one-row table, not in PRAGMA user_version (the approval store's, when both share a file). To
// change the schema, append a step and raise schema_version; never edit a published step.
inline constexpr std::array<sqlite::migration_step, 1> migrations{{
    {1,
     "CREATE TABLE mcpcore_audit_schema (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);"
     // AUTOINCREMENT: a seq is never reused, even once the rows above it are deleted. Writers
     // take seqs under SQLite's write lock, so seqs also rise in commit order and a reader
     // following `after_seq` never misses a row.
     "CREATE TABLE mcpcore_audit ("
     " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
     " time_ms INTEGER NOT NULL,"  // ms since the epoch, UTC
     " action TEXT NOT NULL,"
     " target_type TEXT NOT NULL,"
     " target_id TEXT NOT NULL,"
     " principal TEXT NOT NULL,"
     " result TEXT NOT NULL"
     "  CHECK (result IN ('success', 'denied', 'failure', 'pending', 'approved', 'not_found')),"
     " detail TEXT NOT NULL,"
     " correlation_id TEXT NOT NULL"
     ");"
     // Time-range reads (query's `since`); retention and tails go by seq, the rowid.
     "CREATE INDEX mcpcore_audit_time ON mcpcore_audit (time_ms);"
     "INSERT INTO mcpcore_audit_schema (id, version) VALUES (1, 1);"},
}};
static_assert(migrations.back().version == sqlite_audit_sink::schema_version,
              "the last migration step must produce schema_version");

// The audit schema version of the file: 0 when it has no audit schema yet (sqlite::read_table_version).
inline int read_version(sqlite3* db, std::int64_t& version) noexcept {
  return sqlite::read_table_version(
      db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'mcpcore_audit_schema'",
      "SELECT version FROM mcpcore_audit_schema WHERE id = 1", version);
}

// --- cached statements ------------------------------------------------------------------------

#define MCPCORE_SQLITE_AUDIT_COLUMNS \
  "seq, time_ms, action, target_type, target_id, principal, result, detail, correlation_id"

// The sink's cached statements (the connection adds those of its transactions).
enum stmt : std::size_t {
  insert_row,  // ?1 time_ms, ?2 action, ?3 target_type, ?4 target_id, ?5 principal, ?6 result,
               // ?7 detail, ?8 correlation_id
  prune,       // ?1 the highest seq to delete
  oldest_seq,
  newest_seq,
  stmt_count,
};
inline constexpr std::array<const char*, stmt_count> stmt_sql{{
    "INSERT INTO mcpcore_audit (time_ms, action, target_type, target_id, principal, result, detail, correlation_id)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    "DELETE FROM mcpcore_audit WHERE seq <= ?1",
    "SELECT coalesce(min(seq), 0) FROM mcpcore_audit",
    "SELECT coalesce(max(seq), 0) FROM mcpcore_audit",
}};

// --- values -----------------------------------------------------------------------------------

using audit_time = std::chrono::system_clock::time_point;

// Whole milliseconds since the epoch, truncated towards the past (as the JSON-lines sink's
// RFC 3339 stamps are).
inline std::int64_t to_ms(audit_time t) noexcept {
  return static_cast<std::int64_t>(std::chrono::floor<std::chrono::milliseconds>(t).time_since_epoch().count());
}
// The time of a stored value, clamped to what the clock can represent (only a foreign writer can
// store one outside it).
inline audit_time from_ms(std::int64_t ms) noexcept {
  using std::chrono::milliseconds;
  const auto lo = static_cast<std::int64_t>(
      std::chrono::ceil<milliseconds>(audit_time::min()).time_since_epoch().count());
  const auto hi = static_cast<std::int64_t>(
      std::chrono::floor<milliseconds>(audit_time::max()).time_since_epoch().count());
  return audit_time{milliseconds{std::clamp(ms, lo, hi)}};
}

inline std::optional<audit_result> parse_result(std::string_view s) noexcept {
  for (const auto r : {audit_result::success, audit_result::denied, audit_result::failure, audit_result::pending,
                       audit_result::approved, audit_result::not_found}) {
    if (to_string(r) == s) return r;
  }
  return std::nullopt;
}

// A row of MCPCORE_SQLITE_AUDIT_COLUMNS; false (corrupt) when `result` is not one of ours.
inline bool read_row(sqlite3_stmt* s, sqlite_audit_row& out) {
  using sqlite::column_int;
  using sqlite::column_string;
  const auto r = parse_result(sqlite::column_view(s, 6));
  if (!r) return false;
  out.seq = column_int(s, 0);
  out.entry.time = from_ms(column_int(s, 1));
  out.entry.action = column_string(s, 2);
  out.entry.target_type = column_string(s, 3);
  out.entry.target_id = column_string(s, 4);
  out.entry.principal_id = column_string(s, 5);
  out.entry.result = *r;
  out.entry.detail = column_string(s, 7);
  out.entry.correlation_id = column_string(s, 8);
  return true;
}

}  // namespace detail::sqlite_audit

MCPCORE_DECL const std::error_category& sqlite_audit_category() noexcept {
  static const detail::sqlite_audit::category_impl category;
  return category;
}

struct sqlite_audit_sink::impl : detail::sqlite::connection<detail::sqlite_audit::stmt_count> {
  // The connection is used by one call at a time (it is opened SQLITE_OPEN_NOMUTEX, and a
  // transaction spans several statements). A call waits for its turn with a deadline rather than
  // on a plain mutex: behind a locked file, queued callers would otherwise each wait their own
  // full busy timeout in turn.
  std::mutex mutex_;
  std::condition_variable released_;
  bool in_use_ = false;  // guarded by mutex_

  std::chrono::milliseconds timeout_{};
  std::int64_t max_rows_ = 0;  // 0: unbounded
  bool read_only_ = false;

  // The connection for one call, within the busy timeout; SQLite's own busy wait gets what is
  // left of it (set again for every call: prune_now leaves it at zero).
  class turn {
   public:
    explicit turn(impl& s) : s_(s) {
      const auto deadline = std::chrono::steady_clock::now() + s_.timeout_;
      {
        std::unique_lock lock(s_.mutex_);
        if (!s_.released_.wait_until(lock, deadline, [this] { return !s_.in_use_; })) return;
        s_.in_use_ = true;
      }
      held_ = true;
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      sqlite3_busy_timeout(s_.db_, static_cast<int>(detail::sqlite::clamp_timeout(left).count()));
    }
    turn(const turn&) = delete;
    turn& operator=(const turn&) = delete;
    ~turn() {
      if (!held_) return;
      {
        const std::lock_guard lock(s_.mutex_);
        s_.in_use_ = false;
      }
      s_.released_.notify_one();
    }
    [[nodiscard]] bool held() const noexcept { return held_; }

   private:
    impl& s_;
    bool held_ = false;
  };

  // One row and the retention, in one BEGIN IMMEDIATE transaction: the row and the deletion of
  // the rows it pushes out of `max_rows` commit together or not at all, so the table never holds
  // more than max_rows rows and a failed prune does not leave the row in. The prune goes by seq
  // (AUTOINCREMENT, never reused): it keeps the newest max_rows seqs, fewer only where rows are
  // already missing.
  int insert(const audit_record& r) noexcept {
    using namespace detail::sqlite_audit;
    using detail::sqlite::run;
    if (read_only_) return SQLITE_READONLY;
    detail::sqlite::transaction tx(*this);
    if (tx.begun() != SQLITE_OK) return tx.begun();
    {
      auto s = use(insert_row);
      s.bind(1, to_ms(r.time)).bind(2, r.action).bind(3, r.target_type).bind(4, r.target_id);
      s.bind(5, r.principal_id).bind(6, to_string(r.result)).bind(7, r.detail).bind(8, r.correlation_id);
      if (const int rc = run(s); rc != SQLITE_OK) return rc;
    }
    if (max_rows_ > 0) {
      const auto seq = static_cast<std::int64_t>(sqlite3_last_insert_rowid(db_));
      if (seq > max_rows_) {
        if (const int rc = run(use(prune).bind(1, seq - max_rows_)); rc != SQLITE_OK) return rc;
      }
    }
    return tx.commit();
  }

  // Applies a lowered max_rows at open, without waiting for the write lock (busy timeout zero;
  // each call's turn sets it again): when another connection holds it, the next record prunes
  // instead. One DELETE, its own transaction.
  void prune_now() noexcept {
    using namespace detail::sqlite_audit;
    using detail::sqlite::scalar;
    if (read_only_ || max_rows_ == 0) return;
    std::int64_t oldest = 0;
    std::int64_t newest = 0;
    if (scalar(use(oldest_seq), oldest) != SQLITE_OK || scalar(use(newest_seq), newest) != SQLITE_OK) return;
    if (newest - oldest < max_rows_) return;
    sqlite3_busy_timeout(db_, 0);
    (void)detail::sqlite::run(use(prune).bind(1, newest - max_rows_));
  }

  result<std::vector<sqlite_audit_row>> select(const sqlite_audit_query& q) {
    using namespace detail::sqlite_audit;
    std::vector<sqlite_audit_row> out;
    if (q.limit == 0) return out;
    // Only the filters in use appear in the SQL (one plan per shape); every value is bound.
    std::string sql = "SELECT " MCPCORE_SQLITE_AUDIT_COLUMNS " FROM mcpcore_audit WHERE seq > ?1";
    if (q.since) sql += " AND time_ms >= ?2";
    if (q.principal_id) sql += " AND principal = ?3";
    if (!q.action_prefix.empty()) {
      // Byte-wise and case-sensitive, unlike LIKE; no wildcard in the prefix is special.
      sql += " AND substr(CAST(action AS BLOB), 1, length(CAST(?4 AS BLOB))) = CAST(?4 AS BLOB)";
    }
    sql += " ORDER BY seq DESC LIMIT ?5";
    sqlite3_stmt* raw = nullptr;
    if (const int rc = sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &raw, nullptr);
        rc != SQLITE_OK) {
      sqlite3_finalize(raw);
      return fail(sqlite_error(rc));
    }
    // `s` (declared after the owner) resets the statement before the owner finalizes it.
    const std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> owner(raw, &sqlite3_finalize);
    detail::sqlite::statement s(raw);
    constexpr auto max = static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max());
    s.bind(1, q.after_seq);
    if (q.since) s.bind(2, to_ms(*q.since));
    if (q.principal_id) s.bind(3, std::string_view{*q.principal_id});
    if (!q.action_prefix.empty()) s.bind(4, std::string_view{q.action_prefix});
    s.bind(5, static_cast<std::int64_t>(q.limit < max ? q.limit : max));
    for (;;) {
      const int rc = s.step();
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return fail(sqlite_error(rc));
      sqlite_audit_row row;
      if (!read_row(s.get(), row)) return fail(sqlite_audit_errc::corrupt);
      out.push_back(std::move(row));
    }
    std::reverse(out.begin(), out.end());  // read newest first, returned oldest first
    return out;
  }
};

#undef MCPCORE_SQLITE_AUDIT_COLUMNS

MCPCORE_DECL result<sqlite_audit_sink> sqlite_audit_sink::open(const std::string& path,
                                                              sqlite_audit_sink_options options) {
  using namespace detail::sqlite_audit;
  const auto attempt = [&]() -> result<sqlite_audit_sink> {
    sqlite_audit_sink sink(new impl);  // closes the connection on every early return
    impl* p = sink.impl_;
    p->timeout_ = detail::sqlite::clamp_timeout(options.busy_timeout);
    constexpr auto max_rows = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    p->max_rows_ = options.max_rows < max_rows ? static_cast<std::int64_t>(options.max_rows) : 0;
    if (const int rc = detail::sqlite::open(*p, path, options.read_only, options.create, options.busy_timeout);
        rc != SQLITE_OK) {
      return fail(sqlite_error(rc));
    }
    std::int64_t version = 0;
    if (const int rc = read_version(p->db_, version); rc != SQLITE_OK) return fail(sqlite_error(rc));
    if (version > schema_version) return fail(sqlite_audit_errc::schema_too_new);
    p->read_only_ = options.read_only || sqlite3_db_readonly(p->db_, "main") == 1;
    bool wal = false;
    if (p->read_only_) {
      // Nothing may be written, so the schema must already be there.
      if (version < schema_version) return fail(sqlite_audit_errc::read_only);
    } else {
      if (const int rc = detail::sqlite::use_wal(p->db_, wal); rc != SQLITE_OK) return fail(sqlite_error(rc));
      bool too_new = false;
      if (const int rc = detail::sqlite::migrate(p->db_, migrations, schema_version, read_version, too_new);
          rc != SQLITE_OK) {
        return fail(too_new ? make_error_code(sqlite_audit_errc::schema_too_new) : sqlite_error(rc));
      }
    }
    // NORMAL (when asked for) only in WAL mode, where a power loss can lose the last commits but
    // never corrupt the file; with a rollback journal NORMAL could corrupt it, so FULL.
    const bool normal = wal && options.synchronous == sqlite_audit_synchronous::normal;
    if (const int rc =
            detail::sqlite::exec(p->db_, normal ? "PRAGMA synchronous = NORMAL" : "PRAGMA synchronous = FULL");
        rc != SQLITE_OK) {
      return fail(sqlite_error(rc));
    }
    if (const int rc = p->prepare(stmt_sql); rc != SQLITE_OK) return fail(sqlite_error(rc));
    p->prune_now();
    return sink;
  };
  auto opened = detail::sqlite::retry_open(options.busy_timeout, make_error_code(sqlite_audit_errc::busy), attempt);
  if (!opened) {
    // docs/errors.md#one-error-shape: the message names the file.
    const std::error_code ec = opened.error().code();
    return fail(error(ec, "cannot open the audit database " + path + ": " + ec.message()));
  }
  return opened;
}

MCPCORE_DECL sqlite_audit_sink::sqlite_audit_sink(sqlite_audit_sink&& other) noexcept
    : impl_(std::exchange(other.impl_, nullptr)) {}

MCPCORE_DECL sqlite_audit_sink& sqlite_audit_sink::operator=(sqlite_audit_sink&& other) noexcept {
  detail::sqlite::move_assign(impl_, other.impl_);
  return *this;
}

MCPCORE_DECL sqlite_audit_sink::~sqlite_audit_sink() { delete impl_; }

MCPCORE_DECL bool sqlite_audit_sink::record(const audit_record& r) noexcept {
  // read_only_ is set once by open: no need to queue for the connection to refuse.
  if (impl_ == nullptr || impl_->read_only_) return false;
  try {
    const impl::turn t(*impl_);
    return t.held() && impl_->insert(r) == SQLITE_OK;
  } catch (...) {
    return false;  // a failed lock: audit_sink requirement 1, not persisted
  }
}

MCPCORE_DECL result<std::vector<sqlite_audit_row>> sqlite_audit_sink::query(const sqlite_audit_query& q) const {
  if (impl_ == nullptr) return fail(sqlite_audit_errc::closed);
  try {
    const impl::turn t(*impl_);
    if (!t.held()) return fail(sqlite_audit_errc::busy);
    return impl_->select(q);
  } catch (const std::bad_alloc&) {
    return fail(std::make_error_code(std::errc::not_enough_memory));
  } catch (...) {
    return fail(sqlite_audit_errc::internal);
  }
}

MCPCORE_DECL result<std::vector<audit_entry>> sqlite_audit_sink::tail(std::size_t limit) const {
  sqlite_audit_query q;
  q.limit = limit;
  auto rows = query(q);
  if (!rows) return fail(rows.error());
  try {
    std::vector<audit_entry> out;
    out.reserve(rows->size());
    for (auto& row : *rows) out.push_back(std::move(row.entry));
    return out;
  } catch (const std::bad_alloc&) {
    return fail(std::make_error_code(std::errc::not_enough_memory));
  }
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_SQLITE_AUDIT_SINK_IPP
