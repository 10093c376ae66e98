// SPDX-License-Identifier: Apache-2.0
// The PostgreSQL approval store: one database shared by several servers, a bounded connection pool.
#ifndef MCPCORE_POSTGRES_APPROVAL_STORE_HPP
#define MCPCORE_POSTGRES_APPROVAL_STORE_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/governance/approval.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

/// Default of `postgres_approval_store_options::max_connections`.
inline constexpr std::size_t default_postgres_max_connections = 4;
/// Default of `postgres_approval_store_options::connect_timeout`.
inline constexpr std::chrono::milliseconds default_postgres_connect_timeout{5000};
/// Default of `postgres_approval_store_options::statement_timeout`.
inline constexpr std::chrono::milliseconds default_postgres_statement_timeout{5000};

/// How a `postgres_approval_store` connects.
struct postgres_approval_store_options {
  /// The most connections the store's pool holds open at once (0 counts as 1). A call that finds
  /// them all busy waits for one, at most `connect_timeout`, then fails `busy` (transient).
  std::size_t max_connections = default_postgres_max_connections;
  /// How long opening one connection may take (libpq's `connect_timeout`, whole seconds, at
  /// least 2), and how long a call waits for a free pooled connection.
  std::chrono::milliseconds connect_timeout = default_postgres_connect_timeout;
  /// The server-side `statement_timeout` of every connection: a statement running longer (for
  /// example waiting for a row lock held elsewhere) is cancelled and the call fails `busy`
  /// (transient), its transaction rolled back. Zero: no timeout.
  std::chrono::milliseconds statement_timeout = default_postgres_statement_timeout;
};

/// An `approval_store` in a PostgreSQL database (docs/plugins.md), shared by any number of
/// servers: exactly-once consumption holds across processes and machines.
///
/// @par Schema
/// The library creates and migrates its tables, versioned in the table `mcpcore_schema`
/// (`component` = 'approvals', `version`), in the connection's current schema (`search_path`).
/// Version 1 is the table `mcpcore_approvals` with the columns of the SQLite store's version 2
/// (times as `bigint` milliseconds since the Unix epoch; `server`, the minting server) plus an
/// identity `seq` (dedup's tie-break), and the same five indexes: four partial ones over the live
/// tickets and `mcpcore_approvals_finished`, over the finished ones by their last change, which
/// `prune` reads. Version 2 adds the SQLite store's version 3 index `mcpcore_approvals_reviewed`
/// (`reviewed_at DESC, id` where `reviewed_by <> ''`), which `recently_reviewed` reads; opening a
/// version 1 database migrates it, after which a process with an older library refuses it
/// (`schema_too_new`). Migration runs in one transaction under an advisory lock, so
/// servers starting together migrate once. A database whose version is above `schema_version`
/// is refused with `schema_too_new` and left untouched.
///
/// @par Exactly-once
/// `consume` is one conditional `UPDATE ... WHERE id = $1 AND status = 'approved' AND
/// consumed_at IS NULL AND origin = $2 AND submitted_by = $3 AND reviewed_at > $4 RETURNING id`:
/// the row it returns says this caller won. When it returns none, the reason is read with
/// `SELECT ... FOR UPDATE` in the same transaction (so it is the true one). `mint` serializes
/// with other mints through a transaction-level advisory lock (the caps are counts); `review`
/// locks its row. Every value is a bound parameter.
///
/// @par Errors
/// A failed call rolls its transaction back: nothing changed. SQLSTATEs map to
/// `approval_store_errc`:
/// | PostgreSQL | `approval_store_errc` | class |
/// |---|---|---|
/// | class 08 (connection exception), 57P01 (admin shutdown, `pg_terminate_backend`), 57P02 (crash shutdown), 57P03 (cannot connect now), a lost connection, a connection that cannot be opened | `io_error` | transient |
/// | 25006 (read-only transaction: a standby, `default_transaction_read_only`) | `io_error` | transient |
/// | 40001 (serialization failure), 40P01 (deadlock), 57014 (statement timeout), no free pooled connection | `busy` | transient |
/// | 53100 (disk full) | `full` | permanent |
/// | version above `schema_version` | `schema_too_new` | permanent |
/// | anything else | `internal` | permanent |
/// The error's `message()` carries the SQLSTATE and the server's message. A connection that
/// failed with a connection error or 25006 is closed and dropped from the pool, together with
/// the pool's idle connections (a restarted server has closed them all); the next call opens a
/// fresh one, so the store reconnects on its own after a server restart.
///
/// @par Thread safety
/// Every member may be called concurrently; each call holds one pooled connection. Moving a
/// store is not thread-safe. Do not carry an open store across `fork()`.
///
/// Movable (a moved-from store answers every call with `closed`), not copyable.
class postgres_approval_store {
 public:
  /// The schema version this library writes.
  static constexpr int schema_version = 2;

  /// Connects to `conninfo` (a libpq connection string or URI), creating and migrating the
  /// schema when needed. The connection is kept in the pool.
  [[nodiscard]] MCPCORE_DECL static result<postgres_approval_store> open(
      const std::string& conninfo, postgres_approval_store_options options = {});
  MCPCORE_DECL postgres_approval_store(postgres_approval_store&& other) noexcept;
  MCPCORE_DECL postgres_approval_store& operator=(postgres_approval_store&& other) noexcept;
  MCPCORE_DECL ~postgres_approval_store();
  postgres_approval_store(const postgres_approval_store&) = delete;
  postgres_approval_store& operator=(const postgres_approval_store&) = delete;

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
  /// `reviewed_at` first (ties by id), one statement reading the index
  /// `mcpcore_approvals_reviewed`. It sees the reviews of every server sharing the database.
  [[nodiscard]] MCPCORE_DECL result<std::vector<approval_ticket>> recently_reviewed(std::size_t limit);
  /// Retention (docs/approvals.md#retention): removes the consumed, rejected and expired tickets
  /// whose last change is before `older_than`, in batches of `options.batch`; each batch one statement on a pooled
  /// connection, its own transaction (`DELETE ... WHERE id = ANY (ARRAY(SELECT id ... LIMIT n FOR
  /// UPDATE SKIP LOCKED))`, the select reading the index of finished tickets): rows locked by a
  /// running consume or review are skipped, never waited for.
  /// Returns how many it removed; on an error the batches already committed stay removed.
  [[nodiscard]] MCPCORE_DECL result<std::size_t> prune(approval_time older_than, approval_prune_options options = {});

 private:
  struct impl;
  explicit postgres_approval_store(impl* p) noexcept : impl_(p) {}
  impl* impl_;
};

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/stores/impl/postgres_approval_store.ipp>
#endif

#endif  // MCPCORE_POSTGRES_APPROVAL_STORE_HPP
