// SPDX-License-Identifier: Apache-2.0
// The SQLite task store: durable tasks and results, shared safely by threads and processes.
#ifndef MCPCORE_SQLITE_TASK_STORE_HPP
#define MCPCORE_SQLITE_TASK_STORE_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/task.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

/// The default `sqlite_task_store_options::busy_timeout`.
inline constexpr std::chrono::milliseconds default_sqlite_task_store_busy_timeout{5000};

/// How a `sqlite_task_store` opens its database.
struct sqlite_task_store_options {
  /// How long a statement (and `open`) waits for another connection's lock before failing with
  /// `approval_store_errc::busy` (transient). Zero or negative: fail at once; values above
  /// `INT_MAX` milliseconds are clamped.
  std::chrono::milliseconds busy_timeout{default_sqlite_task_store_busy_timeout};
  /// Open the database read-only (status pages): nothing is created or migrated, the task schema
  /// must already be at `schema_version` (otherwise `open` fails with `read_only`), and every
  /// write (`create`, `transition`, `expire`, `abandon_unfinished`) fails with `read_only`.
  /// `create` is ignored.
  bool read_only = false;
  /// Create the file when it does not exist (otherwise opening a missing file fails with
  /// `closed`).
  bool create = true;
};

/// A `task_store` in an SQLite database file: a finished task's result survives a restart
/// (docs/concepts/task_store.md#shipped-models, docs/plugins.md).
///
/// @par Schema
/// The library creates and migrates its schema. It does not use `PRAGMA user_version` (the
/// approval store owns it, and a host may keep approvals, tasks and audit rows in one file): the
/// task schema's version is the one row of its own table. Version 1:
/// @code{.sql}
/// CREATE TABLE mcpcore_task_schema (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
/// CREATE TABLE mcpcore_tasks (
///   seq INTEGER PRIMARY KEY AUTOINCREMENT,    -- task_record::seq, never reused
///   id TEXT NOT NULL UNIQUE, owner TEXT NOT NULL, tool TEXT NOT NULL,
///   status TEXT NOT NULL
///     CHECK (status IN ('working', 'input_required', 'completed', 'failed', 'cancelled')),
///   status_message TEXT NOT NULL,
///   created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,   -- ms since the Unix epoch (UTC)
///   ttl_ms INTEGER NOT NULL, poll_interval_ms INTEGER NOT NULL,
///   expires_at INTEGER NOT NULL,              -- created_at + ttl_ms, saturated to 64 bits
///   payload_kind TEXT NOT NULL CHECK (payload_kind IN ('none', 'input_requests', 'result', 'error')),
///   payload TEXT NOT NULL);                   -- JSON text; '' for none
/// CREATE INDEX mcpcore_tasks_owner ON mcpcore_tasks (owner, seq);   -- listings, the owner cap
/// CREATE INDEX mcpcore_tasks_expiry ON mcpcore_tasks (expires_at);  -- the sweep
/// CREATE INDEX mcpcore_tasks_live ON mcpcore_tasks (expires_at)     -- abandon_unfinished
///   WHERE status IN ('working', 'input_required');
/// @endcode
/// Migration steps run inside one `BEGIN IMMEDIATE` transaction, so processes opening a fresh
/// file together migrate it once; an up-to-date file is opened without taking the write lock. A
/// file whose task schema version is above `schema_version` is refused with `schema_too_new` and
/// left untouched. Other tables in the file (the approval store's, the audit sink's, a host's)
/// are left alone, whichever store opens the file first.
///
/// @par Durability and atomicity
/// The database runs in WAL mode (readers never wait for the writer) with `synchronous=FULL` (a
/// committed transition survives power loss) and the configured busy timeout. Every write is
/// one `BEGIN IMMEDIATE` transaction: `create` holds the sweep, the checks and the insert;
/// `transition` is one conditional `UPDATE ... WHERE id = ? AND expires_at > now AND status IN
/// ('working', 'input_required')` whose change count says whether this caller won, so of racing
/// terminal transitions exactly one is `updated`, across threads and across processes that share
/// the file; `abandon_unfinished` is one `UPDATE` of the live, unexpired tasks. `get` and `list`
/// are single statements (one consistent snapshot each). The caps are counted with `count(*)`,
/// linear in the tasks held: keep `max_total` in the thousands.
///
/// @par Restart
/// No work of an earlier process survives it: a server that opens this store at start calls
/// `abandon_unfinished` once, which turns every task left `working` or `input_required` into
/// `failed` (with the message and payload it is given) while finished results stay readable by
/// their owners until their ttl.
///
/// @par Errors
/// A failed call rolls its transaction back: nothing changed. The codes are those of the
/// approval stores (`approval_store_errc`, classified by `is_permanent_store_error`), mapped from
/// SQLite result codes as `sqlite_approval_store` maps them:
/// | SQLite | `approval_store_errc` | class |
/// |---|---|---|
/// | `SQLITE_BUSY`, `SQLITE_LOCKED`, `SQLITE_PROTOCOL` | `busy` | transient |
/// | `SQLITE_IOERR` (all extended codes) | `io_error` | transient |
/// | `SQLITE_CORRUPT`, `SQLITE_NOTADB`; a stored status or payload kind not of the vocabulary | `corrupt` | permanent |
/// | `SQLITE_READONLY` (all extended codes); writes on a read-only store | `read_only` | permanent |
/// | `SQLITE_FULL` | `full` | permanent |
/// | `SQLITE_CANTOPEN` (missing file, missing directory, no permission); a moved-from store | `closed` | permanent |
/// | task schema version above `schema_version` | `schema_too_new` | permanent |
/// | anything else (`SQLITE_NOMEM`, `SQLITE_TOOBIG`, a clashing table, ...) | `internal` | permanent |
/// The error's message says "task store" (and, from `open`, names the file). An exception
/// inside a member (out of memory while copying strings) is reported as
/// `std::errc::not_enough_memory` (transient), never thrown.
///
/// @par Thread safety
/// Every member may be called concurrently: the store holds one connection, opened with
/// `SQLITE_OPEN_NOMUTEX`, behind its own mutex. Moving a store is not thread-safe. Several
/// stores (connections) on one file, in one process or many, are safe. Do not carry an open
/// store across `fork()`: open it again in the child.
///
/// Movable (a moved-from store answers every call with `closed`), not copyable. Link
/// `mcpcore::sqlite` (header-only users link SQLite 3.35 or later themselves).
class sqlite_task_store {
 public:
  /// The task schema version this library writes.
  static constexpr int schema_version = 1;

  /// Opens (creating and migrating when needed) the database at `path`.
  ///
  /// @par Errors
  /// As in the class's table; a file that is not a database is `corrupt`, a missing file (with
  /// `create` false or `read_only`) or directory is `closed`, a read-only open of a file without
  /// the task schema is `read_only`. Opening a fresh file together with other processes is
  /// retried within `busy_timeout`.
  [[nodiscard]] MCPCORE_DECL static result<sqlite_task_store> open(const std::string& path,
                                                                   sqlite_task_store_options options = {});
  /// Takes `other`'s connection; `other` is left moved-from.
  MCPCORE_DECL sqlite_task_store(sqlite_task_store&& other) noexcept;
  /// Closes this store's connection and takes `other`'s.
  MCPCORE_DECL sqlite_task_store& operator=(sqlite_task_store&& other) noexcept;
  /// Closes the connection.
  MCPCORE_DECL ~sqlite_task_store();
  sqlite_task_store(const sqlite_task_store&) = delete;
  sqlite_task_store& operator=(const sqlite_task_store&) = delete;

  /// @see task_create_request. `c.record.seq` is ignored; the result carries the assigned one.
  [[nodiscard]] MCPCORE_DECL result<task_create_result> create(const task_create_request& c);
  /// Task `id` with its payload; `std::nullopt` when unknown or expired at `now`.
  [[nodiscard]] MCPCORE_DECL result<std::optional<task_record>> get(std::string_view id, task_time now);
  /// @see task_transition
  [[nodiscard]] MCPCORE_DECL result<task_transition_status> transition(const task_transition& t);
  /// @see task_list_request (records without their payload).
  [[nodiscard]] MCPCORE_DECL result<std::vector<task_record>> list(const task_list_request& l);
  /// Deletes the tasks expired at `now`; how many.
  [[nodiscard]] MCPCORE_DECL result<std::size_t> expire(task_time now);
  /// Every live task not expired at `now` becomes `failed` with `status_message`, `payload_kind`
  /// and `payload`, `updated_at = now`, in one `UPDATE`; how many.
  [[nodiscard]] MCPCORE_DECL result<std::size_t> abandon_unfinished(task_time now, std::string_view status_message,
                                                                   task_payload payload_kind,
                                                                   std::string_view payload);

 private:
  struct impl;
  explicit sqlite_task_store(impl* p) noexcept : impl_(p) {}
  impl* impl_;
};

static_assert(task_store<sqlite_task_store>);

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/stores/impl/sqlite_task_store.ipp>
#endif

#endif  // MCPCORE_SQLITE_TASK_STORE_HPP
