// SPDX-License-Identifier: Apache-2.0
// The SQLite audit sink: audit rows in one table, shared safely by threads and processes.
#ifndef MCPCORE_SQLITE_AUDIT_SINK_HPP
#define MCPCORE_SQLITE_AUDIT_SINK_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/audit.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

/// Why a `sqlite_audit_sink` call failed (category `sqlite_audit_category()`).
///
/// The same vocabulary, values and classes as `approval_store_errc`: each code is equivalent to
/// `approval_store_fault::transient` (busy, io_error) or `approval_store_fault::permanent` (all
/// others), so `is_permanent_store_error` (approval.hpp) classifies these codes too.
enum class sqlite_audit_errc : std::uint8_t {
  busy = 1,        ///< locked or busy past the busy timeout (transient)
  io_error,        ///< an I/O error that may clear (transient)
  closed,          ///< the file cannot be opened, or the sink was moved from (permanent)
  corrupt,         ///< the database is damaged or not a database (permanent)
  read_only,       ///< the database cannot be written (permanent)
  full,            ///< the disk or the database is full (permanent)
  schema_too_new,  ///< written by a newer audit schema than this library knows (permanent)
  internal,        ///< any other failure (permanent)
};
/// Category of `sqlite_audit_errc` ("mcpcore.sqlite_audit").
[[nodiscard]] MCPCORE_DECL const std::error_category& sqlite_audit_category() noexcept;
/// Makes a `std::error_code` of `sqlite_audit_category()`.
[[nodiscard]] inline std::error_code make_error_code(sqlite_audit_errc e) noexcept {
  return {static_cast<int>(e), sqlite_audit_category()};
}

/// The default `sqlite_audit_sink_options::busy_timeout`.
inline constexpr std::chrono::milliseconds sqlite_audit_default_busy_timeout{5000};
/// The default `sqlite_audit_sink_options::max_rows` (some hundreds of MB at typical row sizes).
inline constexpr std::uint64_t sqlite_audit_default_max_rows = 1'000'000;
/// The default `sqlite_audit_query::limit`.
inline constexpr std::size_t sqlite_audit_default_query_limit = 100;

/// How hard a commit of `sqlite_audit_sink::record` pushes the row to storage (SQLite's
/// `PRAGMA synchronous`).
enum class sqlite_audit_synchronous : std::uint8_t {
  /// `synchronous=NORMAL`: the WAL is written to the operating system at every commit and
  /// synced at checkpoints. A process crash loses no row that `record` reported persisted; a
  /// power loss or kernel crash may lose the most recent rows (never corrupts the file). The
  /// default: an audit row per request does not pay an `fsync` per request.
  normal,
  /// `synchronous=FULL`: the WAL is synced at every commit; a committed row survives power loss.
  full,
};

/// How a `sqlite_audit_sink` opens its database.
struct sqlite_audit_sink_options {
  /// The longest `record`, `tail` and `query` wait for the sink's own connection (another
  /// thread's call) and for the file (another connection's write lock) together; past it the
  /// call fails (`record` returns `false`, the others `sqlite_audit_errc::busy`). `open` retries
  /// a busy file for as long. Zero or negative: fail at once, even behind another thread's call
  /// on this sink; values above `INT_MAX` milliseconds (about 24.8 days) are clamped.
  std::chrono::milliseconds busy_timeout{sqlite_audit_default_busy_timeout};
  /// Open the database read-only (the admin "audit tail"): nothing is created, migrated or
  /// pruned, the schema must already be at `sqlite_audit_sink::schema_version` (otherwise `open`
  /// fails with `read_only`), and `record` returns `false`. `create` is ignored.
  bool read_only = false;
  /// Create the file when it does not exist (otherwise opening a missing file fails with
  /// `closed`).
  bool create = true;
  /// The durability of a committed row; see `sqlite_audit_synchronous`. When the file cannot be
  /// in WAL mode (a file system without shared memory), `full` is used whatever this says.
  sqlite_audit_synchronous synchronous = sqlite_audit_synchronous::normal;
  /// Retention: the most rows the table keeps. Each `record` deletes, in the transaction of its
  /// insert, the rows whose `seq` is `max_rows` or more below the row it inserted, so at most
  /// `max_rows` rows remain, the newest (fewer when rows were deleted otherwise, or another sink
  /// on the file keeps fewer). `open` applies a lowered limit at once when the file is not
  /// locked (otherwise the next `record` does, in one larger delete). 0: unbounded.
  std::uint64_t max_rows = sqlite_audit_default_max_rows;
};

/// One stored row: its sequence number and the row.
struct sqlite_audit_row {
  /// The row's `seq`: assigned at insertion, increasing in commit order across every sink on the
  /// file, never reused (not even after pruning).
  std::int64_t seq = 0;
  /// The row. `time` has millisecond precision (truncated towards the past when recorded).
  audit_entry entry{};
};

/// Which rows `sqlite_audit_sink::query` returns: those matching every filter given, newest
/// `limit` of them, oldest first.
struct sqlite_audit_query {
  /// The most rows returned: the newest matching ones. 0 returns none.
  std::size_t limit = sqlite_audit_default_query_limit;
  /// Only rows with `seq` above this (to follow the table: pass the last `seq` seen).
  std::int64_t after_seq = 0;
  /// Only rows of this principal, compared exactly ("" selects the system's own rows).
  std::optional<std::string> principal_id{};
  /// Only rows whose action starts with these bytes (case-sensitive; "" matches every row).
  std::string action_prefix{};
  /// Only rows with `time` at or after this, compared in whole milliseconds (truncated).
  std::optional<std::chrono::system_clock::time_point> since{};
};

/// An `audit_sink` that keeps its rows in an SQLite database file (docs/plugins.md,
/// docs/security.md#audit-and-the-one-cid-pattern).
///
/// @par Schema
/// The library creates and migrates its schema. It does not use `PRAGMA user_version` (the
/// approval store owns it, and a host may keep both in one file): the audit schema's version is
/// the one row of its own table. Version 1:
/// @code{.sql}
/// CREATE TABLE mcpcore_audit_schema (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
/// CREATE TABLE mcpcore_audit (
///   seq INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused
///   time_ms INTEGER NOT NULL,               -- ms since the Unix epoch (UTC), truncated
///   action TEXT NOT NULL, target_type TEXT NOT NULL, target_id TEXT NOT NULL,
///   principal TEXT NOT NULL,                -- audit_record::principal_id; '' for the system
///   result TEXT NOT NULL
///     CHECK (result IN ('success', 'denied', 'failure', 'pending', 'approved', 'not_found')),
///   detail TEXT NOT NULL, correlation_id TEXT NOT NULL);
/// CREATE INDEX mcpcore_audit_time ON mcpcore_audit (time_ms);
/// @endcode
/// Strings are stored as given (bytes, not re-encoded). Migration steps run inside one
/// `BEGIN IMMEDIATE` transaction, so processes opening a fresh file together migrate it once;
/// an up-to-date file is opened without taking the write lock. A file whose audit schema version
/// is above `schema_version` is refused with `schema_too_new` and left untouched. Other tables
/// in the file are left alone.
///
/// @par Durability and retention
/// The database runs in WAL mode (readers never wait for the writer), with
/// `options.synchronous` (`normal` by default: a process crash loses nothing `record` reported
/// persisted, a power loss may lose the last rows) and `options.max_rows` (1,000,000 by default)
/// as the retention. `record` is one `BEGIN IMMEDIATE` transaction holding one `INSERT` and the
/// retention `DELETE`; `true` means it committed. `sqlite_audit_synchronous::full` makes every
/// committed row survive power loss too, at an `fsync` per row. A file system without shared
/// memory keeps a rollback journal instead of WAL; the sink then always uses
/// `synchronous=FULL` (there, NORMAL could corrupt the file on a power loss on some file systems).
///
/// @par Reads
/// `tail` and `query` order rows by `seq`, the order in which they committed (not by `time`,
/// which comes from each caller's clock); each reads one consistent snapshot and never waits
/// for another connection's write transaction.
///
/// @par Errors
/// `record` answers `false` for every failure (busy past the timeout, read-only, disk full,
/// I/O error, corruption, a moved-from sink, an exception inside) and never throws; the row is
/// not retried. The other members return a `sqlite_audit_errc`, from the SQLite result code
/// (extended codes by their primary code) as the approval store maps them:
/// | SQLite | `sqlite_audit_errc` | class |
/// |---|---|---|
/// | `SQLITE_BUSY`, `SQLITE_LOCKED`, `SQLITE_PROTOCOL`; the sink's connection held past the timeout | `busy` | transient |
/// | `SQLITE_IOERR` (all extended codes) | `io_error` | transient |
/// | `SQLITE_CORRUPT`, `SQLITE_NOTADB`; a stored `result` outside the vocabulary | `corrupt` | permanent |
/// | `SQLITE_READONLY` (all extended codes) | `read_only` | permanent |
/// | `SQLITE_FULL` | `full` | permanent |
/// | `SQLITE_CANTOPEN` (missing file, missing directory, no permission); a moved-from sink | `closed` | permanent |
/// | audit schema version above `schema_version` | `schema_too_new` | permanent |
/// | anything else (`SQLITE_NOMEM`, `SQLITE_TOOBIG`, a clashing table, ...) | `internal` | permanent |
/// Out of memory while copying rows out is `std::errc::not_enough_memory` (transient), never
/// thrown.
///
/// @par Thread safety
/// Every member may be called concurrently: the sink holds one connection, opened with
/// `SQLITE_OPEN_NOMUTEX`, that one call at a time uses; a call waits for it at most
/// `busy_timeout` (together with SQLite's wait for the file), so callers queued behind a locked
/// file each return within about `busy_timeout`. `tail` and `query` hold the connection while
/// they read: keep their limits modest, or read through a second (read-only) sink. Moving and
/// destruction must not race with other calls. Several sinks (connections) on one file, in one
/// process or many, are safe. Do not carry an open sink across `fork()`: open it again in the
/// child (SQLite's POSIX locks belong to the process).
///
/// Movable (a moved-from sink's `record` returns `false`, its reads fail with `closed`), not
/// copyable. Link `mcpcore::sqlite` (header-only users link SQLite 3.35 or later themselves).
class sqlite_audit_sink {
 public:
  /// The audit schema version this library writes.
  static constexpr int schema_version = 1;

  /// Opens (creating and migrating when needed) the database at `path`.
  ///
  /// @par Errors
  /// As in the class's table; a file that is not a database is `corrupt`, a missing file (with
  /// `create` false or `read_only`) or directory is `closed`, a read-only open of a file without
  /// the audit schema is `read_only`. Opening a fresh file together with other processes is
  /// retried within `busy_timeout`.
  [[nodiscard]] MCPCORE_DECL static result<sqlite_audit_sink> open(const std::string& path,
                                                                   sqlite_audit_sink_options options = {});
  /// Takes `other`'s connection; `other` is left moved-from.
  MCPCORE_DECL sqlite_audit_sink(sqlite_audit_sink&& other) noexcept;
  /// Closes this sink's connection and takes `other`'s.
  MCPCORE_DECL sqlite_audit_sink& operator=(sqlite_audit_sink&& other) noexcept;
  /// Closes the connection (the last connection on a file checkpoints and removes the WAL).
  MCPCORE_DECL ~sqlite_audit_sink();
  sqlite_audit_sink(const sqlite_audit_sink&) = delete;
  sqlite_audit_sink& operator=(const sqlite_audit_sink&) = delete;

  /// Inserts `r` (and applies the retention) in one transaction; `true` when it committed,
  /// `false` on any failure, which leaves the table unchanged. Never throws.
  MCPCORE_DECL bool record(const audit_record& r) noexcept;
  /// The last `limit` rows by `seq`, oldest first (all of them when there are fewer).
  [[nodiscard]] MCPCORE_DECL result<std::vector<audit_entry>> tail(std::size_t limit) const;
  /// The newest `q.limit` rows matching `q`, oldest first, with their `seq`.
  [[nodiscard]] MCPCORE_DECL result<std::vector<sqlite_audit_row>> query(const sqlite_audit_query& q) const;

 private:
  struct impl;
  explicit sqlite_audit_sink(impl* p) noexcept : impl_(p) {}
  impl* impl_;
};

static_assert(audit_sink<sqlite_audit_sink>);

MCPCORE_END_NAMESPACE

template <>
struct std::is_error_code_enum<mcpcore::sqlite_audit_errc> : std::true_type {};

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/stores/impl/sqlite_audit_sink.ipp>
#endif

#endif  // MCPCORE_SQLITE_AUDIT_SINK_HPP
