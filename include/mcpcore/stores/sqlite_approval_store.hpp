// SPDX-License-Identifier: Apache-2.0
// The SQLite approval store: durable, shared safely by threads and processes (WAL, busy timeout).
#ifndef MCPCORE_SQLITE_APPROVAL_STORE_HPP
#define MCPCORE_SQLITE_APPROVAL_STORE_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/governance/approval.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

/// How a `sqlite_approval_store` opens its database.
struct sqlite_approval_store_options {
  /// How long a statement waits for another connection's lock before failing with
  /// `approval_store_errc::busy` (transient). Zero or negative: fail at once; values above
  /// `INT_MAX` milliseconds are clamped.
  std::chrono::milliseconds busy_timeout{5000};
  /// Open the database read-only (status pages): nothing is created or migrated, the schema
  /// must already be at `schema_version` (otherwise `open` fails with `read_only`), and every
  /// write (`mint`, `consume`, `review`, `expire`) fails with `read_only`. `create` is ignored.
  bool read_only = false;
  /// Create the file when it does not exist (otherwise opening a missing file fails with
  /// `closed`).
  bool create = true;
};

/// An `approval_store` in an SQLite database file (the durable embedded default, docs/plugins.md).
///
/// @par Schema
/// The library creates and migrates its schema, versioned with `PRAGMA user_version`. Version 3
/// is one table, four partial indexes over the live tickets, one over the finished ones and one
/// over the reviewed ones:
/// @code{.sql}
/// CREATE TABLE mcpcore_approvals (
///   id TEXT NOT NULL PRIMARY KEY, definition_id TEXT NOT NULL,
///   status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),
///   origin TEXT NOT NULL, submitted_by TEXT NOT NULL, submitted_at INTEGER NOT NULL,
///   reviewed_by TEXT NOT NULL DEFAULT '', reviewed_at INTEGER,        -- NULL until reviewed
///   review_comment TEXT NOT NULL DEFAULT '', scope TEXT NOT NULL,
///   consumed_at INTEGER, consumed_by TEXT NOT NULL DEFAULT '',        -- NULL until consumed
///   expired_at INTEGER,                                               -- NULL unless expired
///   server TEXT NOT NULL DEFAULT '');                                 -- the minting server (v2)
/// -- dedup, per-submitter count, pending count/sweep/list, approved-unconsumed sweep:
/// CREATE INDEX mcpcore_approvals_dedup ON mcpcore_approvals (definition_id, submitted_by, submitted_at)
///   WHERE status = 'pending';
/// CREATE INDEX mcpcore_approvals_submitter ON mcpcore_approvals (submitted_by) WHERE status = 'pending';
/// CREATE INDEX mcpcore_approvals_pending ON mcpcore_approvals (submitted_at, id) WHERE status = 'pending';
/// CREATE INDEX mcpcore_approvals_redeemable ON mcpcore_approvals (reviewed_at)
///   WHERE status = 'approved' AND consumed_at IS NULL;
/// -- retention (v2): finished tickets by their last change, what each prune batch reads
/// CREATE INDEX mcpcore_approvals_finished ON mcpcore_approvals (COALESCE(consumed_at, expired_at, reviewed_at))
///   WHERE status IN ('rejected', 'expired') OR consumed_at IS NOT NULL;
/// -- history (v3): the reviewed tickets, newest review first, what recently_reviewed reads
/// CREATE INDEX mcpcore_approvals_reviewed ON mcpcore_approvals (reviewed_at DESC, id)
///   WHERE reviewed_by <> '';
/// @endcode
/// Version 1 had neither `server` nor the last two indexes, version 2 not the last one; opening
/// an older file migrates it (version 1's tickets read `server` ""). A process with an older
/// library then refuses the file (`schema_too_new`), and a read-only open of an older file is
/// refused (`read_only`) until a writer migrated it.
/// Times are integer milliseconds since the Unix epoch (UTC). Migration steps run inside one
/// `BEGIN IMMEDIATE` transaction, so processes opening a fresh file together migrate it once;
/// an up-to-date file is opened without taking the write lock. A database whose user_version is
/// above `schema_version` is refused with `schema_too_new` and left untouched. The store owns
/// the file's `user_version`; other tables in the same file are left alone.
///
/// @par Durability and exactly-once
/// The database runs in WAL mode (readers never wait for the writer) with `synchronous=FULL`
/// (a committed consume survives power loss) and the configured busy timeout. Every write is
/// one `BEGIN IMMEDIATE` transaction. `consume` is one conditional
/// `UPDATE ... WHERE id=? AND status='approved' AND consumed_at IS NULL AND origin=? AND
/// submitted_by=? AND reviewed_at > now-lifetime` whose change count says whether this caller
/// won, so exactly-once holds across threads and across processes that share the file; when it
/// did not win, the reason is classified in the same transaction (so it is the true one).
///
/// @par Errors
/// A failed call rolls its transaction back: nothing changed. SQLite result codes (extended
/// codes by their primary code) map to `approval_store_errc`:
/// | SQLite | `approval_store_errc` | class |
/// |---|---|---|
/// | `SQLITE_BUSY`, `SQLITE_LOCKED`, `SQLITE_PROTOCOL` | `busy` | transient |
/// | `SQLITE_IOERR` (all extended codes) | `io_error` | transient |
/// | `SQLITE_CORRUPT`, `SQLITE_NOTADB` | `corrupt` | permanent |
/// | `SQLITE_READONLY` (all extended codes); writes on a read-only store | `read_only` | permanent |
/// | `SQLITE_FULL` | `full` | permanent |
/// | `SQLITE_CANTOPEN` (missing file, missing directory, no permission); a moved-from store | `closed` | permanent |
/// | user_version above `schema_version` | `schema_too_new` | permanent |
/// | anything else (constraint violations, `SQLITE_NOMEM`, `SQLITE_TOOBIG`, ...) | `internal` | permanent |
/// An exception inside a member (out of memory while copying strings) is reported as
/// `std::errc::not_enough_memory` (transient), never thrown.
///
/// @par Thread safety
/// Every member may be called concurrently: the store holds one connection, opened with
/// `SQLITE_OPEN_NOMUTEX`, behind its own mutex (a transaction spans several statements, so the
/// mutex is needed anyway). Moving a store is not thread-safe. Several stores (connections) on
/// one file, in one process or many, are safe. Do not carry an open store across `fork()`: open
/// it again in the child (SQLite's POSIX locks belong to the process).
///
/// Movable (a moved-from store answers every call with `closed`), not copyable.
class sqlite_approval_store {
 public:
  /// The schema version this library writes.
  static constexpr int schema_version = 3;

  /// Opens (creating and migrating when needed) the database at `path`.
  ///
  /// @par Errors
  /// As in the class's table; a file that is not a database is `corrupt`, a missing file
  /// (with `create` false or `read_only`) is `closed`.
  [[nodiscard]] MCPCORE_DECL static result<sqlite_approval_store> open(const std::string& path,
                                                                       sqlite_approval_store_options options = {});
  MCPCORE_DECL sqlite_approval_store(sqlite_approval_store&& other) noexcept;
  MCPCORE_DECL sqlite_approval_store& operator=(sqlite_approval_store&& other) noexcept;
  MCPCORE_DECL ~sqlite_approval_store();
  sqlite_approval_store(const sqlite_approval_store&) = delete;
  sqlite_approval_store& operator=(const sqlite_approval_store&) = delete;

  /// @see approval_mint_request
  [[nodiscard]] MCPCORE_DECL result<approval_mint_result> mint(const approval_mint_request& m);
  /// Ticket `id`; `std::nullopt` when there is none.
  [[nodiscard]] MCPCORE_DECL result<std::optional<approval_ticket>> get(std::string_view id);
  /// @see approval_consume_request
  [[nodiscard]] MCPCORE_DECL result<approval_consume_status> consume(const approval_consume_request& c);
  /// @see approval_review_request. A `decision` other than approved or rejected is `internal`.
  [[nodiscard]] MCPCORE_DECL result<approval_review_status> review(const approval_review_request& r);
  /// The lifetime sweep of `approval_mint_request` step 1, alone; how many tickets expired.
  [[nodiscard]] MCPCORE_DECL result<std::size_t> expire(approval_time now, std::chrono::milliseconds lifetime);
  /// Up to `limit` pending tickets, oldest `submitted_at` first (ties by id).
  [[nodiscard]] MCPCORE_DECL result<std::vector<approval_ticket>> pending(std::size_t limit);
  /// `approval_store_history` (docs/approvals.md#recently-reviewed): up to
  /// `min(limit, max_recently_reviewed)` tickets whose `reviewed_by` is not empty, newest
  /// `reviewed_at` first (ties by id), read through the index `mcpcore_approvals_reviewed`. It
  /// sees every connection's reviews (other processes sharing the file). Works on a read-only
  /// store.
  [[nodiscard]] MCPCORE_DECL result<std::vector<approval_ticket>> recently_reviewed(std::size_t limit);
  /// Retention (docs/approvals.md#retention): removes the consumed, rejected and expired tickets
  /// whose last change is before `older_than`, in batches of `options.batch`; each batch one `BEGIN IMMEDIATE`
  /// transaction (`DELETE ... WHERE rowid IN (SELECT rowid ... LIMIT n)`, the select reading the index of
  /// finished tickets), the store's mutex released
  /// between batches. Fails `read_only` on a read-only store.
  /// Returns how many it removed; on an error the batches already committed stay removed.
  [[nodiscard]] MCPCORE_DECL result<std::size_t> prune(approval_time older_than, approval_prune_options options = {});

 private:
  struct impl;
  explicit sqlite_approval_store(impl* p) noexcept : impl_(p) {}
  impl* impl_;
};

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/stores/impl/sqlite_approval_store.ipp>
#endif

#endif  // MCPCORE_SQLITE_APPROVAL_STORE_HPP
