// SPDX-License-Identifier: Apache-2.0
// The PostgreSQL audit sink: rows queued in memory, written in batches by a background thread.
#ifndef MCPCORE_POSTGRES_AUDIT_SINK_HPP
#define MCPCORE_POSTGRES_AUDIT_SINK_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/stores/postgres_approval_store.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

MCPCORE_BEGIN_NAMESPACE

/// Default of `postgres_audit_sink_options::max_queued_rows`.
inline constexpr std::size_t default_postgres_audit_max_queued_rows = 10'000;
/// Default of `postgres_audit_sink_options::max_batch_rows`.
inline constexpr std::size_t default_postgres_audit_max_batch_rows = 500;
/// Default of `postgres_audit_sink_options::retry_backoff`.
inline constexpr std::chrono::milliseconds default_postgres_audit_retry_backoff{50};
/// Default of `postgres_audit_sink_options::max_retry_backoff`.
inline constexpr std::chrono::milliseconds default_postgres_audit_max_retry_backoff{2000};
/// Default of `postgres_audit_sink_options::close_timeout`.
inline constexpr std::chrono::milliseconds default_postgres_audit_close_timeout{5000};
/// Default of `postgres_audit_sink_options::max_rows` (the SQLite sink's default).
inline constexpr std::uint64_t default_postgres_audit_max_rows = 1'000'000;

/// How a `postgres_audit_sink` connects, queues and keeps its rows
/// (docs/configuration.md#audit-audithpp-sqlite_audit_sinkhpp-postgres_audit_sinkhpp).
struct postgres_audit_sink_options {
  /// How long opening one connection may take (libpq's `connect_timeout`, whole seconds, at least 2).
  std::chrono::milliseconds connect_timeout = default_postgres_connect_timeout;
  /// The server-side `statement_timeout` of the writer's connection (zero: none).
  std::chrono::milliseconds statement_timeout = default_postgres_statement_timeout;
  /// The most rows waiting in memory (0 counts as 1). `record` on a full queue returns `false`
  /// and counts the row in `refused()`; it never waits.
  std::size_t max_queued_rows = default_postgres_audit_max_queued_rows;
  /// The most rows one `INSERT` (one transaction) writes (0 counts as 1, above 4000 as 4000).
  std::size_t max_batch_rows = default_postgres_audit_max_batch_rows;
  /// The first wait after a transient failure; it doubles up to `max_retry_backoff`.
  std::chrono::milliseconds retry_backoff = default_postgres_audit_retry_backoff;
  /// The longest wait between two attempts.
  std::chrono::milliseconds max_retry_backoff = default_postgres_audit_max_retry_backoff;
  /// How long the destructor (and `close`) keeps writing the queued rows; those left then are
  /// lost. At the deadline the statement in flight is cancelled.
  std::chrono::milliseconds close_timeout = default_postgres_audit_close_timeout;
  /// Retention, as `sqlite_audit_sink_options::max_rows`: each batch deletes, in its transaction,
  /// the rows whose `seq` is `max_rows` or more below the newest row. 0 (or `INT64_MAX` and
  /// above): unbounded.
  std::uint64_t max_rows = default_postgres_audit_max_rows;
  /// Where the rows lost after `record` accepted them are counted (a permanent error on the row,
  /// the close deadline), besides `lost()`. Give it the server's
  /// `mcp_audit_write_failures_total` series (`metrics.make_counter("mcp_audit_write_failures_total",
  /// ...)`): the family then counts every row missing from the trail, refused or lost
  /// (docs/concepts/audit_sink.md#durability-classes). Inert by default. The metrics sink that
  /// owns the cell must outlive this sink.
  counter lost_rows{};
};

/// An `audit_sink` that writes its rows to a PostgreSQL database shared by several servers
/// (docs/concepts/audit_sink.md#shipped-models). Durability class: *accepted*
/// (docs/concepts/audit_sink.md#durability-classes).
///
/// `record` copies the row into a bounded in-memory queue and returns at once, never touching the
/// network: `true` means accepted (queued, not yet committed: it will be written, or counted lost),
/// `false` means refused (the queue was full or the sink closed; counted in `refused()`, and the
/// server reports the gap as for any sink). A background thread writes the queue in order, up to
/// `max_batch_rows` rows per multi-row `INSERT`, one transaction per batch with the retention
/// `DELETE`. Transient failures (the approval store's SQLSTATE classes: a lost connection, a
/// restarted server, a read-only server, a serialization failure, a statement timeout) are
/// retried with backoff, the rows kept queued; after a permanent failure the batch is written row
/// by row, and only the rows that fail permanently on their own are dropped. Every accepted row
/// that is dropped (permanent error, close deadline) counts in `lost()` and in
/// `options.lost_rows`. A commit whose reply was lost is retried: a row may then be written twice
/// (at least once, never silently missing).
///
/// Values are stored as text: invalid UTF-8 and NUL bytes (which PostgreSQL's `text` refuses)
/// become U+FFFD, so no row is lost, or cut short, for its bytes.
///
/// @par Schema
/// Version 1 in `mcpcore_schema` (component 'audit'), migrated under the approval store's advisory
/// lock: table `mcpcore_audit (seq bigint identity, time_ms, action, target_type, target_id,
/// principal, result, detail, correlation_id)` with an index on `time_ms`, the SQLite sink's
/// columns. A newer version is refused with `schema_too_new`.
///
/// Errors of `open` use `approval_store_errc` (the shared SQLSTATE map). Thread safety: every
/// member may be called concurrently, except moving-from and destruction. Not copyable, not movable.
class postgres_audit_sink {
 public:
  /// The schema version this library writes.
  static constexpr int schema_version = 1;

  /// Connects, creates or migrates the schema, starts the writer thread.
  [[nodiscard]] MCPCORE_DECL static result<std::unique_ptr<postgres_audit_sink>> open(
      const std::string& conninfo, postgres_audit_sink_options options = {});
  /// `close()`.
  MCPCORE_DECL ~postgres_audit_sink();
  postgres_audit_sink(const postgres_audit_sink&) = delete;
  postgres_audit_sink& operator=(const postgres_audit_sink&) = delete;

  /// Queues a copy of `r`: `true` when accepted, `false` (counted in `refused()`) when the queue
  /// is full or the sink is closed. Never blocks on the database, never throws.
  MCPCORE_DECL bool record(const audit_record& r) noexcept;
  /// Waits at most `timeout` until every row accepted before the call is written or lost; `true`
  /// when they all are (rows accepted meanwhile are not waited for).
  MCPCORE_DECL bool flush(std::chrono::milliseconds timeout);
  /// Refuses new rows, writes the queue until `close_timeout` (then cancels the statement in
  /// flight), counts what is left as lost, stops the thread. Returns within about
  /// `close_timeout`, unless a connection attempt is under way (at most `connect_timeout` more).
  /// Idempotent; may be called from several threads at once.
  MCPCORE_DECL void close() noexcept;
  /// Rows `record` refused (`false`: queue full, sink closed, no memory for the copy).
  [[nodiscard]] MCPCORE_DECL std::uint64_t refused() const noexcept;
  /// Rows accepted and then dropped (permanent error on the row, close deadline); each one is
  /// also counted in `options.lost_rows`.
  [[nodiscard]] MCPCORE_DECL std::uint64_t lost() const noexcept;
  /// Rows committed.
  [[nodiscard]] MCPCORE_DECL std::uint64_t written() const noexcept;
  /// Rows waiting in the queue now.
  [[nodiscard]] MCPCORE_DECL std::size_t queued() const noexcept;

 private:
  struct impl;
  explicit postgres_audit_sink(impl* p) noexcept : impl_(p) {}
  impl* impl_;
};

static_assert(audit_sink<postgres_audit_sink>);

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/stores/impl/postgres_audit_sink.ipp>
#endif

#endif  // MCPCORE_POSTGRES_AUDIT_SINK_HPP
