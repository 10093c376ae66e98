// SPDX-License-Identifier: Apache-2.0
// The SQLite approval store: its schema, statements, the calls and the open (what it shares with
// the audit sink, from the connection to the error mapping, is in sqlite_common.ipp).
#ifndef MCPCORE_IMPL_SQLITE_APPROVAL_STORE_IPP
#define MCPCORE_IMPL_SQLITE_APPROVAL_STORE_IPP

#include <mcpcore/stores/sqlite_approval_store.hpp>

#include <mcpcore/stores/impl/sqlite_common.ipp>

#include <sqlite3.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
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
namespace detail::sqlite_store {

using sqlite::column_int;
using sqlite::column_string;
using sqlite::column_view;
using sqlite::migration_step;
using sqlite::run;
using sqlite::scalar;
using sqlite::transaction;

inline std::error_code sqlite_error(int rc) noexcept { return sqlite::sqlite_error<approval_store_errc>(rc); }

// --- schema -----------------------------------------------------------------------------------

// The migrations (sqlite::migrate runs them): each step ends with `PRAGMA user_version =
// <version>`, the version this store owns in the file. To change the schema, append a step and
// raise sqlite_approval_store::schema_version; never edit a published step.
inline constexpr std::array<migration_step, 3> migrations{{
    {1,
     "CREATE TABLE mcpcore_approvals ("
     " id TEXT NOT NULL PRIMARY KEY,"
     " definition_id TEXT NOT NULL,"
     " status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),"
     " origin TEXT NOT NULL,"
     " submitted_by TEXT NOT NULL,"
     " submitted_at INTEGER NOT NULL,"  // ms since the epoch, UTC
     " reviewed_by TEXT NOT NULL DEFAULT '',"
     " reviewed_at INTEGER,"  // NULL until reviewed
     " review_comment TEXT NOT NULL DEFAULT '',"
     " scope TEXT NOT NULL,"
     " consumed_at INTEGER,"  // NULL until consumed
     " consumed_by TEXT NOT NULL DEFAULT '',"
     " expired_at INTEGER"  // NULL unless expired
     ");"
     // Partial indexes hold the live tickets only, so history does not slow the hot paths.
     // Dedup lookup: pending, same definition and submitter (scope and origin filtered).
     "CREATE INDEX mcpcore_approvals_dedup ON mcpcore_approvals (definition_id, submitted_by, submitted_at)"
     " WHERE status = 'pending';"
     // Per-submitter pending count.
     "CREATE INDEX mcpcore_approvals_submitter ON mcpcore_approvals (submitted_by) WHERE status = 'pending';"
     // Global pending count, pending sweep and the oldest-first pending list.
     "CREATE INDEX mcpcore_approvals_pending ON mcpcore_approvals (submitted_at, id) WHERE status = 'pending';"
     // Approved-unconsumed sweep.
     "CREATE INDEX mcpcore_approvals_redeemable ON mcpcore_approvals (reviewed_at)"
     " WHERE status = 'approved' AND consumed_at IS NULL;"
     "PRAGMA user_version = 1;"},
    {2,
     // The minting server (docs/approvals.md#several-servers); version 1's tickets read "".
     "ALTER TABLE mcpcore_approvals ADD COLUMN server TEXT NOT NULL DEFAULT '';"
     // Retention: the finished tickets by their last change, exactly the predicate and the
     // expression of the prune batch (sqlite::approval_prune_batch_sql), so each batch reads the
     // index from its oldest entry instead of scanning the table.
     "CREATE INDEX mcpcore_approvals_finished ON mcpcore_approvals (COALESCE(consumed_at, expired_at, reviewed_at))"
     " WHERE status IN ('rejected', 'expired') OR consumed_at IS NOT NULL;"
     "PRAGMA user_version = 2;"},
    {3,
     // History (approval_store_history): the reviewed tickets, newest review first, exactly the
     // predicate and the order of select_reviewed, so the list reads `limit` index entries
     // instead of scanning and sorting the table. IF NOT EXISTS: a file that already has it (an
     // operator created it ahead of the upgrade) migrates all the same.
     "CREATE INDEX IF NOT EXISTS mcpcore_approvals_reviewed ON mcpcore_approvals (reviewed_at DESC, id)"
     " WHERE reviewed_by <> '';"
     "PRAGMA user_version = 3;"},
}};
static_assert(migrations.back().version == sqlite_approval_store::schema_version,
              "the last migration step must produce schema_version");

// --- cached statements ------------------------------------------------------------------------

#define MCPCORE_SQLITE_TICKET_COLUMNS                                                                  \
  "id, definition_id, status, origin, submitted_by, submitted_at, reviewed_by, reviewed_at, review_comment, " \
  "scope, consumed_at, consumed_by, expired_at, server"

// The store's cached statements (the connection adds those of its transactions).
enum stmt : std::size_t {
  sweep_pending,   // ?1 now, ?2 cutoff
  sweep_approved,  // ?1 now, ?2 cutoff
  find_dedup,      // ?1 definition_id, ?2 submitted_by, ?3 scope, ?4 origin
  count_submitter, // ?1 submitted_by
  count_pending,
  insert_ticket,   // ?1 id, ?2 definition_id, ?3 origin, ?4 submitted_by, ?5 submitted_at, ?6 scope, ?7 server
  select_ticket,   // ?1 id
  consume_cas,     // ?1 now, ?2 consumer, ?3 id, ?4 origin, ?5 consumer, ?6 cutoff
  consume_probe,   // ?1 id
  expire_approved, // ?1 now, ?2 id, ?3 cutoff
  review_probe,    // ?1 id
  expire_pending,  // ?1 now, ?2 id, ?3 cutoff
  review_update,   // ?1 status, ?2 reviewer, ?3 now, ?4 comment, ?5 id
  select_pending,  // ?1 limit
  select_reviewed, // ?1 limit
  prune_batch,     // ?1 older_than, ?2 limit
  stmt_count,
};
inline constexpr std::array<const char*, stmt_count> stmt_sql{{
    "UPDATE mcpcore_approvals SET status = 'expired', expired_at = ?1"
    " WHERE status = 'pending' AND submitted_at <= ?2",
    "UPDATE mcpcore_approvals SET status = 'expired', expired_at = ?1"
    " WHERE status = 'approved' AND consumed_at IS NULL AND reviewed_at <= ?2",
    "SELECT id FROM mcpcore_approvals WHERE status = 'pending' AND definition_id = ?1 AND submitted_by = ?2"
    " AND scope = ?3 AND origin = ?4 ORDER BY submitted_at DESC, rowid DESC LIMIT 1",
    "SELECT count(*) FROM mcpcore_approvals WHERE status = 'pending' AND submitted_by = ?1",
    "SELECT count(*) FROM mcpcore_approvals WHERE status = 'pending'",
    "INSERT INTO mcpcore_approvals (id, definition_id, status, origin, submitted_by, submitted_at, scope, server)"
    " VALUES (?1, ?2, 'pending', ?3, ?4, ?5, ?6, ?7)",
    "SELECT " MCPCORE_SQLITE_TICKET_COLUMNS " FROM mcpcore_approvals WHERE id = ?1",
    // The compare-and-set: the only statement that consumes a ticket.
    "UPDATE mcpcore_approvals SET consumed_at = ?1, consumed_by = ?2"
    " WHERE id = ?3 AND status = 'approved' AND consumed_at IS NULL AND origin = ?4 AND submitted_by = ?5"
    " AND reviewed_at > ?6",
    "SELECT origin, submitted_by, status, consumed_at IS NOT NULL, reviewed_at FROM mcpcore_approvals WHERE id = ?1",
    "UPDATE mcpcore_approvals SET status = 'expired', expired_at = ?1"
    " WHERE id = ?2 AND status = 'approved' AND consumed_at IS NULL AND reviewed_at <= ?3",
    "SELECT status, submitted_by, submitted_at FROM mcpcore_approvals WHERE id = ?1",
    "UPDATE mcpcore_approvals SET status = 'expired', expired_at = ?1"
    " WHERE id = ?2 AND status = 'pending' AND submitted_at <= ?3",
    "UPDATE mcpcore_approvals SET status = ?1, reviewed_by = ?2, reviewed_at = ?3, review_comment = ?4"
    " WHERE id = ?5 AND status = 'pending'",
    "SELECT " MCPCORE_SQLITE_TICKET_COLUMNS
    " FROM mcpcore_approvals WHERE status = 'pending' ORDER BY submitted_at, id LIMIT ?1",
    // History: reads the index mcpcore_approvals_reviewed (its predicate and its order).
    sqlite::approval_select_reviewed_sql,
    // Retention: finished tickets whose last change is before ?1, at most ?2 of them.
    sqlite::approval_prune_batch_sql,
}};
static_assert(std::string_view{sqlite::approval_select_reviewed_sql}.starts_with("SELECT " MCPCORE_SQLITE_TICKET_COLUMNS
                                                                                   " FROM"),
              "the history select reads the ticket columns in read_ticket's order");
#undef MCPCORE_SQLITE_TICKET_COLUMNS

inline std::int64_t to_ms(approval_time t) noexcept { return static_cast<std::int64_t>(t.time_since_epoch().count()); }
inline approval_time from_ms(std::int64_t ms) noexcept { return approval_time{std::chrono::milliseconds{ms}}; }
// now - lifetime, saturated: the instant at or before which a ticket's lifetime has run out.
inline std::int64_t cutoff(approval_time now, std::chrono::milliseconds lifetime) noexcept {
  const auto n = to_ms(now);
  const auto l = static_cast<std::int64_t>(lifetime.count());
  std::int64_t r = 0;
  if (__builtin_sub_overflow(n, l, &r)) {
    return l > 0 ? std::numeric_limits<std::int64_t>::min() : std::numeric_limits<std::int64_t>::max();
  }
  return r;
}

inline std::optional<approval_time> column_time(sqlite3_stmt* s, int i) noexcept {
  if (sqlite3_column_type(s, i) == SQLITE_NULL) return std::nullopt;
  return from_ms(column_int(s, i));
}

// A row of MCPCORE_SQLITE_TICKET_COLUMNS; `corrupt` when the status is not one of ours.
inline result<approval_ticket> read_ticket(sqlite3_stmt* s) {
  approval_ticket t;
  const auto status = parse_approval_status(column_view(s, 2));
  if (!status) return fail(approval_store_errc::corrupt);
  t.id = column_string(s, 0);
  t.definition_id = column_string(s, 1);
  t.status = *status;
  t.origin = column_string(s, 3);
  t.submitted_by = column_string(s, 4);
  t.submitted_at = from_ms(column_int(s, 5));
  t.reviewed_by = column_string(s, 6);
  t.reviewed_at = column_time(s, 7).value_or(approval_time{});
  t.review_comment = column_string(s, 8);
  t.scope = column_string(s, 9);
  t.consumed_at = column_time(s, 10);
  t.consumed_by = column_string(s, 11);
  t.expired_at = column_time(s, 12);
  t.server = column_string(s, 13);
  return t;
}

// The schema version of the file: its user_version (0 for a new file).
inline int read_version(sqlite3* db, std::int64_t& version) noexcept {
  return sqlite::query_int(db, "PRAGMA user_version", version);
}

}  // namespace detail::sqlite_store

// The connection, used under mutex_ by one call at a time (one transaction at a time).
struct sqlite_approval_store::impl : detail::sqlite::connection<detail::sqlite_store::stmt_count> {
  std::mutex mutex_;
  bool read_only_ = false;

  int sweep(std::int64_t now, std::int64_t cut, std::int64_t& expired) noexcept {
    using namespace detail::sqlite_store;
    if (const int rc = run(std::move(use(sweep_pending).bind(1, now).bind(2, cut))); rc != SQLITE_OK) return rc;
    expired = changes();
    if (const int rc = run(std::move(use(sweep_approved).bind(1, now).bind(2, cut))); rc != SQLITE_OK) return rc;
    expired += changes();
    return SQLITE_OK;
  }

  result<approval_mint_result> mint(const approval_mint_request& m) {
    using namespace detail::sqlite_store;
    if (read_only_) return fail(approval_store_errc::read_only);
    const std::int64_t now = to_ms(m.now);
    transaction tx(*this);
    if (tx.begun() != SQLITE_OK) return fail(sqlite_error(tx.begun()));
    std::int64_t expired = 0;
    if (const int rc = sweep(now, cutoff(m.now, m.lifetime), expired); rc != SQLITE_OK) return fail(sqlite_error(rc));
    approval_mint_result out;
    {
      auto s = use(find_dedup);
      s.bind(1, m.definition_id).bind(2, m.submitted_by).bind(3, m.scope).bind(4, m.origin);
      const int rc = s.step();
      if (rc == SQLITE_ROW) {
        out.status = approval_mint_status::deduped;
        out.id = column_string(s.get(), 0);
      } else if (rc != SQLITE_DONE) {
        return fail(sqlite_error(rc));
      }
    }
    if (out.status != approval_mint_status::deduped) {
      std::int64_t mine = 0;
      std::int64_t all = 0;
      if (const int rc = scalar(std::move(use(count_submitter).bind(1, m.submitted_by)), mine); rc != SQLITE_OK) {
        return fail(sqlite_error(rc));
      }
      if (const int rc = scalar(use(count_pending), all); rc != SQLITE_OK) return fail(sqlite_error(rc));
      if (static_cast<std::uint64_t>(mine) >= m.per_submitter_cap) {
        out.status = approval_mint_status::submitter_cap;
      } else if (static_cast<std::uint64_t>(all) >= m.global_cap) {
        out.status = approval_mint_status::global_cap;
      } else {
        auto s = use(insert_ticket);
        s.bind(1, m.id).bind(2, m.definition_id).bind(3, m.origin).bind(4, m.submitted_by);
        s.bind(5, now).bind(6, m.scope).bind(7, m.server);
        if (const int rc = run(std::move(s)); rc != SQLITE_OK) return fail(sqlite_error(rc));
        out.status = approval_mint_status::created;
        out.id = std::string(m.id);
      }
    }
    // The sweep is committed with every outcome, as the request documents.
    if (const int rc = tx.commit(); rc != SQLITE_OK) return fail(sqlite_error(rc));
    return out;
  }

  result<std::optional<approval_ticket>> get(std::string_view id) {
    using namespace detail::sqlite_store;
    auto s = use(select_ticket);
    s.bind(1, id);
    const int rc = s.step();
    if (rc == SQLITE_DONE) return std::optional<approval_ticket>{};
    if (rc != SQLITE_ROW) return fail(sqlite_error(rc));
    auto t = read_ticket(s.get());
    if (!t) return fail(t.error());
    return std::optional<approval_ticket>{std::move(*t)};
  }

  result<approval_consume_status> consume(const approval_consume_request& c) {
    using namespace detail::sqlite_store;
    if (read_only_) return fail(approval_store_errc::read_only);
    const std::int64_t now = to_ms(c.now);
    const std::int64_t cut = cutoff(c.now, c.lifetime);
    // The CAS and, when it does not match, the classification share one write transaction: no
    // other connection can change the ticket in between, so the reported reason is the true one.
    transaction tx(*this);
    if (tx.begun() != SQLITE_OK) return fail(sqlite_error(tx.begun()));
    {
      auto s = use(consume_cas);
      s.bind(1, now).bind(2, c.consumer).bind(3, c.id).bind(4, c.origin).bind(5, c.consumer).bind(6, cut);
      if (const int rc = run(std::move(s)); rc != SQLITE_OK) return fail(sqlite_error(rc));
    }
    if (changes() == 1) {
      if (const int rc = tx.commit(); rc != SQLITE_OK) return fail(sqlite_error(rc));  // rolled back: not won
      return approval_consume_status::consumed;
    }
    // Lost (or never eligible): say why, in the documented order.
    bool stale = false;
    {
      auto s = use(consume_probe);
      s.bind(1, c.id);
      const int rc = s.step();
      if (rc == SQLITE_DONE) return approval_consume_status::not_found;
      if (rc != SQLITE_ROW) return fail(sqlite_error(rc));
      auto* r = s.get();
      if (column_view(r, 0) != c.origin) return approval_consume_status::foreign_origin;
      if (column_view(r, 1) != c.consumer) return approval_consume_status::foreign_submitter;
      if (column_view(r, 2) != to_string(approval_status::approved) || column_int(r, 3) != 0) {
        return approval_consume_status::not_consumable;
      }
      stale = sqlite3_column_type(r, 4) == SQLITE_NULL || column_int(r, 4) <= cut;
    }
    // Approved, unconsumed, ours, yet the CAS did not match: only the lifetime can be the cause.
    if (!stale) return fail(approval_store_errc::internal);
    if (const int rc = run(std::move(use(expire_approved).bind(1, now).bind(2, c.id).bind(3, cut))); rc != SQLITE_OK) {
      return fail(sqlite_error(rc));
    }
    if (changes() != 1) return fail(approval_store_errc::internal);
    if (const int rc = tx.commit(); rc != SQLITE_OK) return fail(sqlite_error(rc));
    return approval_consume_status::expired;
  }

  result<approval_review_status> review(const approval_review_request& r) {
    using namespace detail::sqlite_store;
    if (r.decision != approval_status::approved && r.decision != approval_status::rejected) {
      return fail(approval_store_errc::internal);  // a caller bug, not a store state
    }
    if (read_only_) return fail(approval_store_errc::read_only);
    const std::int64_t now = to_ms(r.now);
    const std::int64_t cut = cutoff(r.now, r.lifetime);
    transaction tx(*this);
    if (tx.begun() != SQLITE_OK) return fail(sqlite_error(tx.begun()));
    bool stale = false;
    {
      auto s = use(review_probe);
      s.bind(1, r.id);
      const int rc = s.step();
      if (rc == SQLITE_DONE) return approval_review_status::not_found;
      if (rc != SQLITE_ROW) return fail(sqlite_error(rc));
      auto* row = s.get();
      if (column_view(row, 0) != to_string(approval_status::pending)) return approval_review_status::already_reviewed;
      stale = column_int(row, 2) <= cut;
      if (!stale && column_view(row, 1) == r.reviewer) return approval_review_status::self_review;
    }
    if (stale) {
      if (const int rc = run(std::move(use(expire_pending).bind(1, now).bind(2, r.id).bind(3, cut)));
          rc != SQLITE_OK) {
        return fail(sqlite_error(rc));
      }
    } else {
      auto s = use(review_update);
      s.bind(1, to_string(r.decision)).bind(2, r.reviewer).bind(3, now).bind(4, r.comment).bind(5, r.id);
      if (const int rc = run(std::move(s)); rc != SQLITE_OK) return fail(sqlite_error(rc));
    }
    // The probe ran in this write transaction, so the conditional update must match.
    if (changes() != 1) return fail(approval_store_errc::internal);
    if (const int rc = tx.commit(); rc != SQLITE_OK) return fail(sqlite_error(rc));
    return stale ? approval_review_status::expired : approval_review_status::reviewed;
  }

  result<std::size_t> expire(approval_time now, std::chrono::milliseconds lifetime) {
    using namespace detail::sqlite_store;
    if (read_only_) return fail(approval_store_errc::read_only);
    transaction tx(*this);
    if (tx.begun() != SQLITE_OK) return fail(sqlite_error(tx.begun()));
    std::int64_t expired = 0;
    if (const int rc = sweep(to_ms(now), cutoff(now, lifetime), expired); rc != SQLITE_OK) {
      return fail(sqlite_error(rc));
    }
    if (const int rc = tx.commit(); rc != SQLITE_OK) return fail(sqlite_error(rc));
    return static_cast<std::size_t>(expired);
  }

  // One batch of prune, its own write transaction; how many rows it removed.
  result<std::size_t> prune(approval_time older_than, std::size_t batch) {
    using namespace detail::sqlite_store;
    if (read_only_) return fail(approval_store_errc::read_only);
    constexpr auto max = static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max());
    transaction tx(*this);
    if (tx.begun() != SQLITE_OK) return fail(sqlite_error(tx.begun()));
    auto s = use(prune_batch);
    s.bind(1, to_ms(older_than)).bind(2, static_cast<std::int64_t>(batch < max ? batch : max));
    if (const int rc = run(std::move(s)); rc != SQLITE_OK) return fail(sqlite_error(rc));
    const auto removed = static_cast<std::size_t>(changes());
    if (const int rc = tx.commit(); rc != SQLITE_OK) return fail(sqlite_error(rc));
    return removed;
  }

  result<std::vector<approval_ticket>> pending(std::size_t limit) {
    constexpr auto max = static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max());
    return list(detail::sqlite_store::select_pending, limit < max ? limit : max);
  }

  result<std::vector<approval_ticket>> recently_reviewed(std::size_t limit) {
    return list(detail::sqlite_store::select_reviewed, limit < max_recently_reviewed ? limit : max_recently_reviewed);
  }

  // The tickets of statement `which`, whose ?1 is the limit. @pre `limit` fits an int64.
  result<std::vector<approval_ticket>> list(detail::sqlite_store::stmt which, std::size_t limit) {
    using namespace detail::sqlite_store;
    std::vector<approval_ticket> out;
    if (limit == 0) return out;
    auto s = use(which);
    s.bind(1, static_cast<std::int64_t>(limit));
    for (;;) {
      const int rc = s.step();
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return fail(sqlite_error(rc));
      auto t = read_ticket(s.get());
      if (!t) return fail(t.error());
      out.push_back(std::move(*t));
    }
    return out;
  }
};

namespace detail::sqlite_store {
// Runs `f(impl)` under the store's mutex (sqlite::locked_call).
template <class R, class Impl, class F>
R locked_call(Impl* p, F&& f) noexcept {
  return sqlite::locked_call<R, approval_store_errc>(p, std::forward<F>(f),
                                                     [](approval_store_errc e) noexcept -> R { return fail(e); });
}
}  // namespace detail::sqlite_store

MCPCORE_DECL result<sqlite_approval_store> sqlite_approval_store::open(const std::string& path,
                                                                      sqlite_approval_store_options options) {
  using namespace detail::sqlite_store;
  // FULL synchronous (sqlite::open_store): a power loss cannot bring back a consumed ticket as
  // redeemable.
  const detail::sqlite::store_schema schema{schema_version, migrations, &read_version, stmt_sql};
  return detail::sqlite::open_store<approval_store_errc, sqlite_approval_store>(
      path, options, "approval store", [] { return sqlite_approval_store(new impl); },
      [](sqlite_approval_store& s) { return s.impl_; }, schema,
      [](approval_store_errc e) -> result<sqlite_approval_store> { return fail(e); });
}

MCPCORE_DECL sqlite_approval_store::sqlite_approval_store(sqlite_approval_store&& other) noexcept
    : impl_(std::exchange(other.impl_, nullptr)) {}

MCPCORE_DECL sqlite_approval_store& sqlite_approval_store::operator=(sqlite_approval_store&& other) noexcept {
  detail::sqlite::move_assign(impl_, other.impl_);
  return *this;
}

MCPCORE_DECL sqlite_approval_store::~sqlite_approval_store() { delete impl_; }

MCPCORE_DECL result<approval_mint_result> sqlite_approval_store::mint(const approval_mint_request& m) {
  return detail::sqlite_store::locked_call<result<approval_mint_result>>(impl_, [&](impl& s) { return s.mint(m); });
}

MCPCORE_DECL result<std::optional<approval_ticket>> sqlite_approval_store::get(std::string_view id) {
  return detail::sqlite_store::locked_call<result<std::optional<approval_ticket>>>(impl_,
                                                                                   [&](impl& s) { return s.get(id); });
}

MCPCORE_DECL result<approval_consume_status> sqlite_approval_store::consume(const approval_consume_request& c) {
  return detail::sqlite_store::locked_call<result<approval_consume_status>>(impl_,
                                                                            [&](impl& s) { return s.consume(c); });
}

MCPCORE_DECL result<approval_review_status> sqlite_approval_store::review(const approval_review_request& r) {
  return detail::sqlite_store::locked_call<result<approval_review_status>>(impl_, [&](impl& s) { return s.review(r); });
}

MCPCORE_DECL result<std::size_t> sqlite_approval_store::expire(approval_time now, std::chrono::milliseconds lifetime) {
  return detail::sqlite_store::locked_call<result<std::size_t>>(impl_,
                                                                [&](impl& s) { return s.expire(now, lifetime); });
}

MCPCORE_DECL result<std::vector<approval_ticket>> sqlite_approval_store::pending(std::size_t limit) {
  return detail::sqlite_store::locked_call<result<std::vector<approval_ticket>>>(
      impl_, [&](impl& s) { return s.pending(limit); });
}

MCPCORE_DECL result<std::vector<approval_ticket>> sqlite_approval_store::recently_reviewed(std::size_t limit) {
  return detail::sqlite_store::locked_call<result<std::vector<approval_ticket>>>(
      impl_, [&](impl& s) { return s.recently_reviewed(limit); });
}

MCPCORE_DECL result<std::size_t> sqlite_approval_store::prune(approval_time older_than,
                                                              approval_prune_options options) {
  const std::size_t batch = options.batch == 0 ? 1 : options.batch;
  std::size_t total = 0;
  for (;;) {
    // The mutex and the write lock are released between batches, so a consume waits for one
    // batch at most.
    auto n = detail::sqlite_store::locked_call<result<std::size_t>>(
        impl_, [&](impl& s) { return s.prune(older_than, batch); });
    if (!n) return n;
    total += *n;
    if (*n < batch) return total;
  }
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_SQLITE_APPROVAL_STORE_IPP
