// SPDX-License-Identifier: Apache-2.0
// The SQLite task store: its schema, statements, the calls and the open (what it shares with the
// approval store and the audit sink, from the connection to the error mapping, is in
// sqlite_common.ipp).
#ifndef MCPCORE_IMPL_SQLITE_TASK_STORE_IPP
#define MCPCORE_IMPL_SQLITE_TASK_STORE_IPP

#include <mcpcore/stores/sqlite_task_store.hpp>

#include <mcpcore/governance/approval.hpp>
#include <mcpcore/stores/impl/sqlite_common.ipp>

#include <sqlite3.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <limits>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE
namespace detail::sqlite_task {

using sqlite::column_int;
using sqlite::column_string;
using sqlite::column_view;
using sqlite::migration_step;
using sqlite::run;
using sqlite::scalar;
using sqlite::transaction;

// --- errors -----------------------------------------------------------------------------------

// What an approval_store_errc means when a task store reports it (the category's own messages
// speak of the approval store).
constexpr const char* describe(approval_store_errc e) noexcept {
  switch (e) {
    case approval_store_errc::busy: return "task store busy (locked past the busy timeout)";
    case approval_store_errc::io_error: return "task store I/O error";
    case approval_store_errc::closed: return "task store is not open";
    case approval_store_errc::corrupt: return "task store is corrupt or not a database";
    case approval_store_errc::read_only: return "task store is read-only";
    case approval_store_errc::full: return "task store is full";
    case approval_store_errc::schema_too_new: return "task store schema is newer than this library";
    case approval_store_errc::internal: return "task store internal error";
  }
  return "task store error";
}

// The error of a failed call: the approval stores' code, a message that names the task store.
inline std::unexpected<error> failure(approval_store_errc e) noexcept {
  try {
    return fail(error(make_error_code(e), describe(e)));
  } catch (...) {
    return fail(error(make_error_code(e)));
  }
}
inline std::unexpected<error> sqlite_failure(int rc) noexcept {
  return failure(sqlite::map_error<approval_store_errc>(rc));
}

// --- schema -----------------------------------------------------------------------------------

// The migrations (sqlite::migrate runs them). The task schema's version lives in its own one-row
// table, not in PRAGMA user_version (the approval store's, when both share a file). To change
// the schema, append a step and raise sqlite_task_store::schema_version; never edit a published
// step.
inline constexpr std::array<migration_step, 1> migrations{{
    {1,
     "CREATE TABLE mcpcore_task_schema (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);"
     // AUTOINCREMENT: a seq is never reused, even once the tasks above it are deleted. Writers
     // take seqs under SQLite's write lock, so seqs also rise in commit order.
     "CREATE TABLE mcpcore_tasks ("
     " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
     " id TEXT NOT NULL UNIQUE,"
     " owner TEXT NOT NULL,"
     " tool TEXT NOT NULL,"
     " status TEXT NOT NULL"
     "  CHECK (status IN ('working', 'input_required', 'completed', 'failed', 'cancelled')),"
     " status_message TEXT NOT NULL,"
     " created_at INTEGER NOT NULL,"  // ms since the epoch, UTC
     " updated_at INTEGER NOT NULL,"
     " ttl_ms INTEGER NOT NULL,"
     " poll_interval_ms INTEGER NOT NULL,"
     " expires_at INTEGER NOT NULL,"  // created_at + ttl_ms, saturated
     " payload_kind TEXT NOT NULL CHECK (payload_kind IN ('none', 'input_requests', 'result', 'error')),"
     " payload TEXT NOT NULL"
     ");"
     // Listings and the owner cap.
     "CREATE INDEX mcpcore_tasks_owner ON mcpcore_tasks (owner, seq);"
     // The sweep.
     "CREATE INDEX mcpcore_tasks_expiry ON mcpcore_tasks (expires_at);"
     // abandon_unfinished: the live tasks only.
     "CREATE INDEX mcpcore_tasks_live ON mcpcore_tasks (expires_at) WHERE status IN ('working', 'input_required');"
     "INSERT INTO mcpcore_task_schema (id, version) VALUES (1, 1);"},
}};
static_assert(migrations.back().version == sqlite_task_store::schema_version,
              "the last migration step must produce schema_version");

// The task schema version of the file: 0 when it has no task schema yet (sqlite::read_table_version).
inline int read_version(sqlite3* db, std::int64_t& version) noexcept {
  return sqlite::read_table_version(
      db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'mcpcore_task_schema'",
      "SELECT version FROM mcpcore_task_schema WHERE id = 1", version);
}

// --- cached statements ------------------------------------------------------------------------

// A record's columns; the listing selects '' in place of the payload.
#define MCPCORE_SQLITE_TASK_COLUMNS \
  "seq, id, owner, tool, status, status_message, created_at, updated_at, ttl_ms, poll_interval_ms, payload_kind"
#define MCPCORE_SQLITE_TASK_LIVE "status IN ('working', 'input_required')"

// The store's cached statements (the connection adds those of its transactions).
enum stmt : std::size_t {
  sweep,        // ?1 now
  find_id,      // ?1 id
  count_all,
  count_owner,  // ?1 owner
  insert_task,  // ?1 id, ?2 owner, ?3 tool, ?4 status, ?5 status_message, ?6 created_at, ?7 updated_at,
                // ?8 ttl_ms, ?9 poll_interval_ms, ?10 expires_at, ?11 payload_kind, ?12 payload
  select_task,  // ?1 id, ?2 now
  update_live,  // ?1 status, ?2 status_message, ?3 now, ?4 payload_kind, ?5 payload, ?6 id
  probe_task,   // ?1 id, ?2 now
  list_owner,   // ?1 owner, ?2 after_seq, ?3 now, ?4 limit
  abandon,      // ?1 status_message, ?2 now, ?3 payload_kind, ?4 payload
  stmt_count,
};
inline constexpr std::array<const char*, stmt_count> stmt_sql{{
    "DELETE FROM mcpcore_tasks WHERE expires_at <= ?1",
    "SELECT count(*) FROM mcpcore_tasks WHERE id = ?1",
    "SELECT count(*) FROM mcpcore_tasks",
    "SELECT count(*) FROM mcpcore_tasks WHERE owner = ?1",
    "INSERT INTO mcpcore_tasks (id, owner, tool, status, status_message, created_at, updated_at, ttl_ms,"
    " poll_interval_ms, expires_at, payload_kind, payload) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    "SELECT " MCPCORE_SQLITE_TASK_COLUMNS ", payload FROM mcpcore_tasks WHERE id = ?1 AND expires_at > ?2",
    // The compare-and-set of a transition: only a live, unexpired task changes.
    "UPDATE mcpcore_tasks SET status = ?1, status_message = ?2, updated_at = ?3, payload_kind = ?4, payload = ?5"
    " WHERE id = ?6 AND expires_at > ?3 AND " MCPCORE_SQLITE_TASK_LIVE,
    "SELECT status FROM mcpcore_tasks WHERE id = ?1 AND expires_at > ?2",
    "SELECT " MCPCORE_SQLITE_TASK_COLUMNS ", '' FROM mcpcore_tasks"
    " WHERE owner = ?1 AND seq > ?2 AND expires_at > ?3 ORDER BY seq LIMIT ?4",
    "UPDATE mcpcore_tasks SET status = 'failed', status_message = ?1, updated_at = ?2, payload_kind = ?3,"
    " payload = ?4 WHERE " MCPCORE_SQLITE_TASK_LIVE " AND expires_at > ?2",
}};
#undef MCPCORE_SQLITE_TASK_COLUMNS
#undef MCPCORE_SQLITE_TASK_LIVE

inline std::int64_t to_ms(task_time t) noexcept { return static_cast<std::int64_t>(t.time_since_epoch().count()); }
inline task_time from_ms(std::int64_t ms) noexcept { return task_time{std::chrono::milliseconds{ms}}; }
// created_at + ttl, saturated: the instant from which the task is expired.
inline std::int64_t expires_at(task_time created_at, std::chrono::milliseconds ttl) noexcept {
  const auto c = to_ms(created_at);
  const auto l = static_cast<std::int64_t>(ttl.count());
  std::int64_t r = 0;
  if (__builtin_add_overflow(c, l, &r)) {
    return l > 0 ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
  }
  return r;
}
// An unsigned count or seq as SQLite's signed integer (saturated).
inline std::int64_t to_int64(std::uint64_t v) noexcept {
  constexpr auto max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  return static_cast<std::int64_t>(v < max ? v : max);
}

// A row of the record's columns and a payload; `corrupt` when a status or payload kind is not
// one of ours.
inline result<task_record> read_task(sqlite3_stmt* s) {
  const auto status = parse_task_status(column_view(s, 4));
  const auto kind = parse_task_payload(column_view(s, 10));
  if (!status || !kind) return failure(approval_store_errc::corrupt);
  task_record t;
  t.seq = static_cast<std::uint64_t>(column_int(s, 0));
  t.id = column_string(s, 1);
  t.owner = column_string(s, 2);
  t.tool = column_string(s, 3);
  t.status = *status;
  t.status_message = column_string(s, 5);
  t.created_at = from_ms(column_int(s, 6));
  t.updated_at = from_ms(column_int(s, 7));
  t.ttl = std::chrono::milliseconds{column_int(s, 8)};
  t.poll_interval = std::chrono::milliseconds{column_int(s, 9)};
  t.payload_kind = *kind;
  t.payload = column_string(s, 11);
  return t;
}

}  // namespace detail::sqlite_task

// The connection, used under mutex_ by one call at a time (one transaction at a time).
struct sqlite_task_store::impl : detail::sqlite::connection<detail::sqlite_task::stmt_count> {
  std::mutex mutex_;
  bool read_only_ = false;

  result<task_create_result> create(const task_create_request& c) {
    using namespace detail::sqlite_task;
    if (read_only_) return failure(approval_store_errc::read_only);
    const task_record& r = c.record;
    transaction tx(*this);
    if (tx.begun() != SQLITE_OK) return sqlite_failure(tx.begun());
    // 1. the sweep, committed with every outcome.
    if (const int rc = run(std::move(use(sweep).bind(1, to_ms(c.now)))); rc != SQLITE_OK) return sqlite_failure(rc);
    task_create_result out{task_create_status::created, 0};
    std::int64_t n = 0;
    // 2.-4. the refusals, counted after the sweep.
    if (const int rc = scalar(std::move(use(find_id).bind(1, r.id)), n); rc != SQLITE_OK) return sqlite_failure(rc);
    if (n != 0) {
      out.status = task_create_status::duplicate_id;
    } else {
      if (const int rc = scalar(use(count_all), n); rc != SQLITE_OK) return sqlite_failure(rc);
      if (static_cast<std::uint64_t>(n) >= c.max_total) {
        out.status = task_create_status::global_cap;
      } else {
        if (const int rc = scalar(std::move(use(count_owner).bind(1, r.owner)), n); rc != SQLITE_OK) {
          return sqlite_failure(rc);
        }
        if (static_cast<std::uint64_t>(n) >= c.max_per_owner) out.status = task_create_status::owner_cap;
      }
    }
    if (out.status == task_create_status::created) {
      // 5. insert: AUTOINCREMENT assigns the next seq.
      auto s = use(insert_task);
      s.bind(1, r.id).bind(2, r.owner).bind(3, r.tool).bind(4, to_string(r.status)).bind(5, r.status_message);
      s.bind(6, to_ms(r.created_at)).bind(7, to_ms(r.updated_at)).bind(8, static_cast<std::int64_t>(r.ttl.count()));
      s.bind(9, static_cast<std::int64_t>(r.poll_interval.count())).bind(10, expires_at(r.created_at, r.ttl));
      s.bind(11, to_string(r.payload_kind)).bind(12, r.payload);
      if (const int rc = run(std::move(s)); rc != SQLITE_OK) return sqlite_failure(rc);
      out.seq = static_cast<std::uint64_t>(sqlite3_last_insert_rowid(db_));
    }
    if (const int rc = tx.commit(); rc != SQLITE_OK) return sqlite_failure(rc);
    return out;
  }

  result<std::optional<task_record>> get(std::string_view id, task_time now) {
    using namespace detail::sqlite_task;
    auto s = use(select_task);
    s.bind(1, id).bind(2, to_ms(now));
    const int rc = s.step();
    if (rc == SQLITE_DONE) return std::optional<task_record>{};
    if (rc != SQLITE_ROW) return sqlite_failure(rc);
    auto t = read_task(s.get());
    if (!t) return fail(std::move(t.error()));
    return std::optional<task_record>{std::move(*t)};
  }

  result<task_transition_status> transition(const task_transition& t) {
    using namespace detail::sqlite_task;
    if (read_only_) return failure(approval_store_errc::read_only);
    const std::int64_t now = to_ms(t.now);
    transaction tx(*this);
    if (tx.begun() != SQLITE_OK) return sqlite_failure(tx.begun());
    {
      auto s = use(update_live);
      s.bind(1, to_string(t.to)).bind(2, t.status_message).bind(3, now).bind(4, to_string(t.payload_kind));
      s.bind(5, t.payload).bind(6, t.id);
      if (const int rc = run(std::move(s)); rc != SQLITE_OK) return sqlite_failure(rc);
    }
    if (changes() == 1) {
      if (const int rc = tx.commit(); rc != SQLITE_OK) return sqlite_failure(rc);  // rolled back: not won
      return task_transition_status::updated;
    }
    // Nothing changed: say why, in the same write transaction (so it is the true reason).
    auto s = use(probe_task);
    s.bind(1, t.id).bind(2, now);
    const int rc = s.step();
    if (rc == SQLITE_DONE) return task_transition_status::not_found;
    if (rc != SQLITE_ROW) return sqlite_failure(rc);
    const auto status = parse_task_status(column_view(s.get(), 0));
    if (!status) return failure(approval_store_errc::corrupt);
    // Unexpired and present, yet the conditional update did not match: only a terminal status.
    if (!is_terminal(*status)) return failure(approval_store_errc::internal);
    return task_transition_status::terminal;
  }

  result<std::vector<task_record>> list(const task_list_request& l) {
    using namespace detail::sqlite_task;
    std::vector<task_record> out;
    if (l.limit == 0) return out;
    auto s = use(list_owner);
    s.bind(1, l.owner).bind(2, to_int64(l.after_seq)).bind(3, to_ms(l.now)).bind(4, to_int64(l.limit));
    for (;;) {
      const int rc = s.step();
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return sqlite_failure(rc);
      auto t = read_task(s.get());
      if (!t) return fail(std::move(t.error()));
      out.push_back(std::move(*t));
    }
    return out;
  }

  result<std::size_t> expire(task_time now) {
    using namespace detail::sqlite_task;
    if (read_only_) return failure(approval_store_errc::read_only);
    transaction tx(*this);
    if (tx.begun() != SQLITE_OK) return sqlite_failure(tx.begun());
    if (const int rc = run(std::move(use(sweep).bind(1, to_ms(now)))); rc != SQLITE_OK) return sqlite_failure(rc);
    const auto n = static_cast<std::size_t>(changes());
    if (const int rc = tx.commit(); rc != SQLITE_OK) return sqlite_failure(rc);
    return n;
  }

  result<std::size_t> abandon_unfinished(task_time now, std::string_view message, task_payload kind,
                                         std::string_view payload) {
    using namespace detail::sqlite_task;
    if (read_only_) return failure(approval_store_errc::read_only);
    transaction tx(*this);
    if (tx.begun() != SQLITE_OK) return sqlite_failure(tx.begun());
    auto s = use(abandon);
    s.bind(1, message).bind(2, to_ms(now)).bind(3, to_string(kind)).bind(4, payload);
    if (const int rc = run(std::move(s)); rc != SQLITE_OK) return sqlite_failure(rc);
    const auto n = static_cast<std::size_t>(changes());
    if (const int rc = tx.commit(); rc != SQLITE_OK) return sqlite_failure(rc);
    return n;
  }
};

namespace detail::sqlite_task {
// Runs `f(impl)` under the store's mutex (sqlite::locked_call).
template <class R, class Impl, class F>
R locked_call(Impl* p, F&& f) noexcept {
  return sqlite::locked_call<R, approval_store_errc>(p, std::forward<F>(f),
                                                     [](approval_store_errc e) noexcept -> R { return failure(e); });
}
}  // namespace detail::sqlite_task

MCPCORE_DECL result<sqlite_task_store> sqlite_task_store::open(const std::string& path,
                                                              sqlite_task_store_options options) {
  using namespace detail::sqlite_task;
  // FULL synchronous (sqlite::open_store): a power loss cannot bring back a finished task as live,
  // nor lose its result.
  const detail::sqlite::store_schema schema{schema_version, migrations, &read_version, stmt_sql};
  return detail::sqlite::open_store<approval_store_errc, sqlite_task_store>(
      path, options, "task store", [] { return sqlite_task_store(new impl); },
      [](sqlite_task_store& s) { return s.impl_; }, schema,
      [](approval_store_errc e) -> result<sqlite_task_store> { return failure(e); });
}

MCPCORE_DECL sqlite_task_store::sqlite_task_store(sqlite_task_store&& other) noexcept
    : impl_(std::exchange(other.impl_, nullptr)) {}

MCPCORE_DECL sqlite_task_store& sqlite_task_store::operator=(sqlite_task_store&& other) noexcept {
  detail::sqlite::move_assign(impl_, other.impl_);
  return *this;
}

MCPCORE_DECL sqlite_task_store::~sqlite_task_store() { delete impl_; }

MCPCORE_DECL result<task_create_result> sqlite_task_store::create(const task_create_request& c) {
  return detail::sqlite_task::locked_call<result<task_create_result>>(impl_, [&](impl& s) { return s.create(c); });
}

MCPCORE_DECL result<std::optional<task_record>> sqlite_task_store::get(std::string_view id, task_time now) {
  return detail::sqlite_task::locked_call<result<std::optional<task_record>>>(impl_,
                                                                              [&](impl& s) { return s.get(id, now); });
}

MCPCORE_DECL result<task_transition_status> sqlite_task_store::transition(const task_transition& t) {
  return detail::sqlite_task::locked_call<result<task_transition_status>>(impl_,
                                                                          [&](impl& s) { return s.transition(t); });
}

MCPCORE_DECL result<std::vector<task_record>> sqlite_task_store::list(const task_list_request& l) {
  return detail::sqlite_task::locked_call<result<std::vector<task_record>>>(impl_, [&](impl& s) { return s.list(l); });
}

MCPCORE_DECL result<std::size_t> sqlite_task_store::expire(task_time now) {
  return detail::sqlite_task::locked_call<result<std::size_t>>(impl_, [&](impl& s) { return s.expire(now); });
}

MCPCORE_DECL result<std::size_t> sqlite_task_store::abandon_unfinished(task_time now, std::string_view status_message,
                                                                       task_payload payload_kind,
                                                                       std::string_view payload) {
  return detail::sqlite_task::locked_call<result<std::size_t>>(
      impl_, [&](impl& s) { return s.abandon_unfinished(now, status_message, payload_kind, payload); });
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_SQLITE_TASK_STORE_IPP
