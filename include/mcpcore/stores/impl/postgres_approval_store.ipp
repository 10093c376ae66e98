// SPDX-License-Identifier: Apache-2.0
// The PostgreSQL approval store: the connection pool, the SQLSTATE mapping, the schema, the calls
// and the open.
#ifndef MCPCORE_IMPL_POSTGRES_APPROVAL_STORE_IPP
#define MCPCORE_IMPL_POSTGRES_APPROVAL_STORE_IPP

#include <mcpcore/stores/postgres_approval_store.hpp>

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>

#include <mcpcore/stores/impl/postgres_common.ipp>

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
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE
namespace detail::pg_store {
// --- schema -----------------------------------------------------------------------------------

struct migration_step {
  int version;
  const char* sql;
};
// To change the schema, append a step and raise postgres_approval_store::schema_version; never
// edit a published step.
inline constexpr std::array<migration_step, 2> migrations{{
    {1,
     "CREATE TABLE mcpcore_approvals ("
     " seq bigint GENERATED ALWAYS AS IDENTITY,"
     " id text NOT NULL PRIMARY KEY,"
     " definition_id text NOT NULL,"
     " status text NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),"
     " origin text NOT NULL,"
     " submitted_by text NOT NULL,"
     " submitted_at bigint NOT NULL,"  // ms since the epoch, UTC
     " reviewed_by text NOT NULL DEFAULT '',"
     " reviewed_at bigint,"  // NULL until reviewed
     " review_comment text NOT NULL DEFAULT '',"
     " scope text NOT NULL,"
     " consumed_at bigint,"  // NULL until consumed
     " consumed_by text NOT NULL DEFAULT '',"
     " expired_at bigint,"  // NULL unless expired
     " server text NOT NULL DEFAULT ''"  // the minting server (docs/approvals.md#several-servers)
     ");"
     "CREATE INDEX mcpcore_approvals_dedup ON mcpcore_approvals (definition_id, submitted_by, submitted_at)"
     " WHERE status = 'pending';"
     "CREATE INDEX mcpcore_approvals_submitter ON mcpcore_approvals (submitted_by) WHERE status = 'pending';"
     "CREATE INDEX mcpcore_approvals_pending ON mcpcore_approvals (submitted_at, id) WHERE status = 'pending';"
     "CREATE INDEX mcpcore_approvals_redeemable ON mcpcore_approvals (reviewed_at)"
     " WHERE status = 'approved' AND consumed_at IS NULL;"
     // Retention: the finished tickets by their last change, the predicate and the expression of
     // the prune batch (sql_approval_prune_batch), so a batch reads the index from its oldest entry.
     "CREATE INDEX mcpcore_approvals_finished ON mcpcore_approvals ((COALESCE(consumed_at, expired_at, reviewed_at)))"
     " WHERE status IN ('rejected', 'expired') OR consumed_at IS NOT NULL;"},
    {2,
     // History (approval_store_history): the reviewed tickets, newest review first, exactly the
     // predicate and the order of sql_approval_select_reviewed, so the list reads `limit` index
     // entries instead of scanning and sorting the table. IF NOT EXISTS: a database that already
     // has it (an operator created it ahead of the upgrade) migrates all the same.
     "CREATE INDEX IF NOT EXISTS mcpcore_approvals_reviewed ON mcpcore_approvals (reviewed_at DESC, id)"
     " WHERE reviewed_by <> '';"},
}};
static_assert(migrations.back().version == postgres_approval_store::schema_version,
              "the last migration step must produce schema_version");

// --- statements -------------------------------------------------------------------------------

#define MCPCORE_PG_TICKET_COLUMNS                                                                       \
  "id, definition_id, status, origin, submitted_by, submitted_at, reviewed_by, reviewed_at, review_comment, " \
  "scope, consumed_at, consumed_by, expired_at, server"

// Serializes the mints of this table (the caps are counts): an advisory lock keyed by the table.
inline constexpr const char* sql_mint_lock =
    "SELECT pg_advisory_xact_lock(1835230051, 'mcpcore_approvals'::regclass::oid::integer)";
inline constexpr const char* sql_sweep =  // $1 now, $2 cutoff
    "UPDATE mcpcore_approvals SET status = 'expired', expired_at = $1"
    " WHERE (status = 'pending' AND submitted_at <= $2)"
    " OR (status = 'approved' AND consumed_at IS NULL AND reviewed_at <= $2)";
inline constexpr const char* sql_find_dedup =  // $1 definition_id, $2 submitted_by, $3 scope, $4 origin
    "SELECT id FROM mcpcore_approvals WHERE status = 'pending' AND definition_id = $1 AND submitted_by = $2"
    " AND scope = $3 AND origin = $4 ORDER BY submitted_at DESC, seq DESC LIMIT 1";
inline constexpr const char* sql_counts =  // $1 submitted_by
    "SELECT count(*) FILTER (WHERE submitted_by = $1), count(*) FROM mcpcore_approvals WHERE status = 'pending'";
// $1 id, $2 definition_id, $3 origin, $4 submitted_by, $5 submitted_at, $6 scope, $7 server
inline constexpr const char* sql_insert =
    "INSERT INTO mcpcore_approvals (id, definition_id, status, origin, submitted_by, submitted_at, scope, server)"
    " VALUES ($1, $2, 'pending', $3, $4, $5, $6, $7)";
inline constexpr const char* sql_select_ticket =  // $1 id
    "SELECT " MCPCORE_PG_TICKET_COLUMNS " FROM mcpcore_approvals WHERE id = $1";
// The compare-and-set: the only statement that consumes a ticket.
inline constexpr const char* sql_consume_cas =  // $1 now, $2 consumer, $3 id, $4 origin, $5 cutoff
    "UPDATE mcpcore_approvals SET consumed_at = $1, consumed_by = $2"
    " WHERE id = $3 AND status = 'approved' AND consumed_at IS NULL AND origin = $4 AND submitted_by = $2"
    " AND reviewed_at > $5 RETURNING id";
inline constexpr const char* sql_consume_probe =  // $1 id
    "SELECT origin, submitted_by, status, consumed_at IS NOT NULL, reviewed_at FROM mcpcore_approvals"
    " WHERE id = $1 FOR UPDATE";
inline constexpr const char* sql_expire_approved =  // $1 now, $2 id, $3 cutoff
    "UPDATE mcpcore_approvals SET status = 'expired', expired_at = $1"
    " WHERE id = $2 AND status = 'approved' AND consumed_at IS NULL AND reviewed_at <= $3";
inline constexpr const char* sql_review_probe =  // $1 id
    "SELECT status, submitted_by, submitted_at FROM mcpcore_approvals WHERE id = $1 FOR UPDATE";
inline constexpr const char* sql_expire_pending =  // $1 now, $2 id, $3 cutoff
    "UPDATE mcpcore_approvals SET status = 'expired', expired_at = $1"
    " WHERE id = $2 AND status = 'pending' AND submitted_at <= $3";
inline constexpr const char* sql_review_update =  // $1 status, $2 reviewer, $3 now, $4 comment, $5 id
    "UPDATE mcpcore_approvals SET status = $1, reviewed_by = $2, reviewed_at = $3, review_comment = $4"
    " WHERE id = $5 AND status = 'pending'";
inline constexpr const char* sql_select_pending =  // $1 limit
    "SELECT " MCPCORE_PG_TICKET_COLUMNS
    " FROM mcpcore_approvals WHERE status = 'pending' ORDER BY submitted_at, id LIMIT $1";
// Retention: sql_approval_prune_batch (postgres_common.ipp); history: sql_approval_select_reviewed
// (postgres_common.ipp), which reads the ticket columns in this order.
static_assert(std::string_view{sql_approval_select_reviewed}.starts_with("SELECT " MCPCORE_PG_TICKET_COLUMNS " FROM"),
              "the history select reads the ticket columns in read_ticket's order");
#undef MCPCORE_PG_TICKET_COLUMNS

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

inline std::string_view text(const PGresult* r, int row, int col) noexcept { return PQgetvalue(r, row, col); }
inline bool is_null(const PGresult* r, int row, int col) noexcept { return PQgetisnull(r, row, col) != 0; }
inline long long affected(const PGresult* r) noexcept { return parse_int(PQcmdTuples(const_cast<PGresult*>(r))).value_or(0); }

inline error corrupt_row() { return {make_error_code(approval_store_errc::corrupt), "malformed row in mcpcore_approvals"}; }

// A row of MCPCORE_PG_TICKET_COLUMNS; `corrupt` when a value is not one of ours.
inline result<approval_ticket> read_ticket(const PGresult* r, int row) {
  approval_ticket t;
  const auto status = parse_approval_status(text(r, row, 2));
  if (!status) return fail(corrupt_row());
  auto time_at = [&](int col) -> std::optional<std::optional<approval_time>> {
    if (is_null(r, row, col)) return std::optional<approval_time>{};
    const auto v = parse_int(PQgetvalue(r, row, col));
    if (!v) return std::nullopt;
    return std::optional<approval_time>{from_ms(*v)};
  };
  const auto submitted = time_at(5);
  const auto reviewed = time_at(7);
  const auto consumed = time_at(10);
  const auto expired = time_at(12);
  if (!submitted || !*submitted || !reviewed || !consumed || !expired) return fail(corrupt_row());
  t.id = text(r, row, 0);
  t.definition_id = text(r, row, 1);
  t.status = *status;
  t.origin = text(r, row, 3);
  t.submitted_by = text(r, row, 4);
  t.submitted_at = **submitted;
  t.reviewed_by = text(r, row, 6);
  t.reviewed_at = reviewed->value_or(approval_time{});
  t.review_comment = text(r, row, 8);
  t.scope = text(r, row, 9);
  t.consumed_at = *consumed;
  t.consumed_by = text(r, row, 11);
  t.expired_at = *expired;
  t.server = text(r, row, 13);
  return t;
}

}  // namespace detail::pg_store

struct postgres_approval_store::impl {
  detail::pg_store::pool pool;

  impl(std::string conninfo, const postgres_approval_store_options& o)
      : pool(std::move(conninfo), {o.max_connections, o.connect_timeout, o.statement_timeout}) {}

  // Runs `f(lease)` on a pooled connection; nothing escapes as an exception.
  template <class R, class F>
  R call(F&& f) noexcept {
    try {
      auto c = pool.acquire();
      if (!c) return fail(c.error());
      detail::pg_store::lease l(pool, *c);
      return std::forward<F>(f)(l);
    } catch (const std::bad_alloc&) {
      return fail(std::make_error_code(std::errc::not_enough_memory));
    } catch (...) {
      return fail(approval_store_errc::internal);
    }
  }

  static result<void> migrate(detail::pg_store::lease& l) {
    using namespace detail::pg_store;
    if (auto r = l.begin(); !r) return r;
    if (auto r = l.run(sql_migration_lock); !r) return r;
    if (auto r = l.run("CREATE TABLE IF NOT EXISTS mcpcore_schema (component text NOT NULL PRIMARY KEY,"
                       " version integer NOT NULL)");
        !r) {
      return r;
    }
    auto v = l.exec("SELECT version FROM mcpcore_schema WHERE component = $1", {"approvals"});
    if (!v) return fail(v.error());
    std::int64_t version = 0;
    if (PQntuples(v->get()) == 1) {
      const auto parsed = parse_int(PQgetvalue(v->get(), 0, 0));
      if (!parsed) return fail(approval_store_errc::corrupt);
      version = *parsed;
    }
    if (version > schema_version) {
      return fail(error(make_error_code(approval_store_errc::schema_too_new),
                        "the approval schema is at version " + std::to_string(version) + ", newer than " +
                            std::to_string(schema_version)));
    }
    if (version == schema_version) return l.commit();
    for (const auto& step : migrations) {
      if (step.version <= version) continue;
      if (auto r = l.run(step.sql); !r) return r;
    }
    if (auto r = l.run("INSERT INTO mcpcore_schema (component, version) VALUES ($1, $2)"
                       " ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version",
                       {"approvals", std::to_string(schema_version)});
        !r) {
      return r;
    }
    return l.commit();
  }

  static result<approval_mint_result> mint(detail::pg_store::lease& l, const approval_mint_request& m) {
    using namespace detail::pg_store;
    const std::int64_t now = to_ms(m.now);
    if (auto r = l.begin(); !r) return fail(r.error());
    if (auto r = l.run(sql_mint_lock); !r) return fail(r.error());
    if (auto r = l.run(sql_sweep, {int_text(now), int_text(cutoff(m.now, m.lifetime))}); !r) return fail(r.error());
    approval_mint_result out;
    auto d = l.exec(sql_find_dedup, {std::string(m.definition_id), std::string(m.submitted_by),
                                     std::string(m.scope), std::string(m.origin)});
    if (!d) return fail(d.error());
    if (PQntuples(d->get()) == 1) {
      out.status = approval_mint_status::deduped;
      out.id = text(d->get(), 0, 0);
    } else {
      auto n = l.exec(sql_counts, {std::string(m.submitted_by)});
      if (!n) return fail(n.error());
      const auto mine = parse_int(PQgetvalue(n->get(), 0, 0));
      const auto all = parse_int(PQgetvalue(n->get(), 0, 1));
      if (!mine || !all) return fail(approval_store_errc::internal);
      if (static_cast<std::uint64_t>(*mine) >= m.per_submitter_cap) {
        out.status = approval_mint_status::submitter_cap;
      } else if (static_cast<std::uint64_t>(*all) >= m.global_cap) {
        out.status = approval_mint_status::global_cap;
      } else {
        if (auto r = l.run(sql_insert, {std::string(m.id), std::string(m.definition_id), std::string(m.origin),
                                        std::string(m.submitted_by), int_text(now), std::string(m.scope),
                                        std::string(m.server)});
            !r) {
          return fail(r.error());
        }
        out.status = approval_mint_status::created;
        out.id = std::string(m.id);
      }
    }
    // The sweep is committed with every outcome, as the request documents.
    if (auto r = l.commit(); !r) return fail(r.error());
    return out;
  }

  static result<std::optional<approval_ticket>> get(detail::pg_store::lease& l, std::string_view id) {
    using namespace detail::pg_store;
    auto r = l.exec(sql_select_ticket, {std::string(id)});
    if (!r) return fail(r.error());
    if (PQntuples(r->get()) == 0) return std::optional<approval_ticket>{};
    auto t = read_ticket(r->get(), 0);
    if (!t) return fail(t.error());
    return std::optional<approval_ticket>{std::move(*t)};
  }

  static result<approval_consume_status> consume(detail::pg_store::lease& l, const approval_consume_request& c) {
    using namespace detail::pg_store;
    const std::int64_t now = to_ms(c.now);
    const std::int64_t cut = cutoff(c.now, c.lifetime);
    if (auto r = l.begin(); !r) return fail(r.error());
    {
      auto r = l.exec(sql_consume_cas,
                      {int_text(now), std::string(c.consumer), std::string(c.id), std::string(c.origin), int_text(cut)});
      if (!r) return fail(r.error());
      if (PQntuples(r->get()) == 1) {
        if (auto k = l.commit(); !k) return fail(k.error());  // not committed: not won
        return approval_consume_status::consumed;
      }
    }
    // Lost (or never eligible): say why, in the documented order, the row locked so that the
    // reason is the true one.
    auto p = l.exec(sql_consume_probe, {std::string(c.id)});
    if (!p) return fail(p.error());
    const PGresult* row = p->get();
    if (PQntuples(row) == 0) return approval_consume_status::not_found;
    if (text(row, 0, 0) != c.origin) return approval_consume_status::foreign_origin;
    if (text(row, 0, 1) != c.consumer) return approval_consume_status::foreign_submitter;
    if (text(row, 0, 2) != to_string(approval_status::approved) || text(row, 0, 3) != "f") {
      return approval_consume_status::not_consumable;
    }
    const auto reviewed = is_null(row, 0, 4) ? std::optional<std::int64_t>{} : parse_int(PQgetvalue(row, 0, 4));
    const bool stale = !reviewed || *reviewed <= cut;
    // Approved, unconsumed, ours, yet the CAS did not match: only the lifetime can be the cause.
    if (!stale) return fail(approval_store_errc::internal);
    auto e = l.exec(sql_expire_approved, {int_text(now), std::string(c.id), int_text(cut)});
    if (!e) return fail(e.error());
    if (affected(e->get()) != 1) return fail(approval_store_errc::internal);
    if (auto k = l.commit(); !k) return fail(k.error());
    return approval_consume_status::expired;
  }

  static result<approval_review_status> review(detail::pg_store::lease& l, const approval_review_request& r) {
    using namespace detail::pg_store;
    const std::int64_t now = to_ms(r.now);
    const std::int64_t cut = cutoff(r.now, r.lifetime);
    if (auto b = l.begin(); !b) return fail(b.error());
    auto p = l.exec(sql_review_probe, {std::string(r.id)});
    if (!p) return fail(p.error());
    const PGresult* row = p->get();
    if (PQntuples(row) == 0) return approval_review_status::not_found;
    if (text(row, 0, 0) != to_string(approval_status::pending)) return approval_review_status::already_reviewed;
    const auto submitted = parse_int(PQgetvalue(row, 0, 2));
    if (!submitted) return fail(corrupt_row());
    const bool stale = *submitted <= cut;
    if (!stale && text(row, 0, 1) == r.reviewer) return approval_review_status::self_review;
    auto u = stale ? l.exec(sql_expire_pending, {int_text(now), std::string(r.id), int_text(cut)})
                   : l.exec(sql_review_update, {std::string(to_string(r.decision)), std::string(r.reviewer),
                                                int_text(now), std::string(r.comment), std::string(r.id)});
    if (!u) return fail(u.error());
    // The probe locked the row, so the conditional update must match.
    if (affected(u->get()) != 1) return fail(approval_store_errc::internal);
    if (auto k = l.commit(); !k) return fail(k.error());
    return stale ? approval_review_status::expired : approval_review_status::reviewed;
  }

  static result<std::size_t> expire(detail::pg_store::lease& l, approval_time now, std::chrono::milliseconds lifetime) {
    using namespace detail::pg_store;
    // One statement: atomic on its own.
    auto r = l.exec(sql_sweep, {int_text(to_ms(now)), int_text(cutoff(now, lifetime))});
    if (!r) return fail(r.error());
    return static_cast<std::size_t>(affected(r->get()));
  }

  static result<std::size_t> prune_batch(detail::pg_store::lease& l, approval_time older_than, std::size_t batch) {
    using namespace detail::pg_store;
    constexpr auto max = static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max());
    auto r = l.exec(sql_approval_prune_batch,
                    {int_text(to_ms(older_than)), int_text(static_cast<std::int64_t>(batch < max ? batch : max))});
    if (!r) return fail(r.error());
    return static_cast<std::size_t>(affected(r->get()));
  }

  static result<std::vector<approval_ticket>> pending(detail::pg_store::lease& l, std::size_t limit) {
    constexpr auto max = static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max());
    return list(l, detail::pg_store::sql_select_pending, limit < max ? limit : max);
  }

  static result<std::vector<approval_ticket>> recently_reviewed(detail::pg_store::lease& l, std::size_t limit) {
    return list(l, detail::pg_store::sql_approval_select_reviewed,
                limit < max_recently_reviewed ? limit : max_recently_reviewed);
  }

  // The tickets of `sql`, whose $1 is the limit. @pre `limit` fits an int64.
  static result<std::vector<approval_ticket>> list(detail::pg_store::lease& l, const char* sql, std::size_t limit) {
    using namespace detail::pg_store;
    std::vector<approval_ticket> out;
    if (limit == 0) return out;
    auto r = l.exec(sql, {int_text(static_cast<std::int64_t>(limit))});
    if (!r) return fail(r.error());
    const int n = PQntuples(r->get());
    out.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      auto t = read_ticket(r->get(), i);
      if (!t) return fail(t.error());
      out.push_back(std::move(*t));
    }
    return out;
  }
};

MCPCORE_DECL result<postgres_approval_store> postgres_approval_store::open(const std::string& conninfo,
                                                                          postgres_approval_store_options options) {
  // A malformed connection string will not clear on retry: permanent.
  char* why = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(conninfo.c_str(), &why);
  if (parsed == nullptr) {
    std::string msg = "invalid PostgreSQL connection string: " + detail::pg_store::trimmed(why);
    PQfreemem(why);
    return fail(error(make_error_code(approval_store_errc::internal), std::move(msg)));
  }
  PQconninfoFree(parsed);
  postgres_approval_store store(nullptr);
  try {
    store.impl_ = new impl(conninfo, options);
  } catch (const std::bad_alloc&) {
    return fail(std::make_error_code(std::errc::not_enough_memory));
  }
  auto r = store.impl_->call<result<void>>([](detail::pg_store::lease& l) { return impl::migrate(l); });
  if (!r) return fail(r.error());
  return store;
}

MCPCORE_DECL postgres_approval_store::postgres_approval_store(postgres_approval_store&& other) noexcept
    : impl_(std::exchange(other.impl_, nullptr)) {}

MCPCORE_DECL postgres_approval_store& postgres_approval_store::operator=(postgres_approval_store&& other) noexcept {
  if (this != &other) {
    delete impl_;
    impl_ = std::exchange(other.impl_, nullptr);
  }
  return *this;
}

MCPCORE_DECL postgres_approval_store::~postgres_approval_store() { delete impl_; }

MCPCORE_DECL result<approval_mint_result> postgres_approval_store::mint(const approval_mint_request& m) {
  if (impl_ == nullptr) return fail(approval_store_errc::closed);
  return impl_->call<result<approval_mint_result>>([&](detail::pg_store::lease& l) { return impl::mint(l, m); });
}

MCPCORE_DECL result<std::optional<approval_ticket>> postgres_approval_store::get(std::string_view id) {
  if (impl_ == nullptr) return fail(approval_store_errc::closed);
  return impl_->call<result<std::optional<approval_ticket>>>(
      [&](detail::pg_store::lease& l) { return impl::get(l, id); });
}

MCPCORE_DECL result<approval_consume_status> postgres_approval_store::consume(const approval_consume_request& c) {
  if (impl_ == nullptr) return fail(approval_store_errc::closed);
  return impl_->call<result<approval_consume_status>>(
      [&](detail::pg_store::lease& l) { return impl::consume(l, c); });
}

MCPCORE_DECL result<approval_review_status> postgres_approval_store::review(const approval_review_request& r) {
  if (r.decision != approval_status::approved && r.decision != approval_status::rejected) {
    return fail(approval_store_errc::internal);  // a caller bug, not a store state
  }
  if (impl_ == nullptr) return fail(approval_store_errc::closed);
  return impl_->call<result<approval_review_status>>([&](detail::pg_store::lease& l) { return impl::review(l, r); });
}

MCPCORE_DECL result<std::size_t> postgres_approval_store::expire(approval_time now,
                                                                std::chrono::milliseconds lifetime) {
  if (impl_ == nullptr) return fail(approval_store_errc::closed);
  return impl_->call<result<std::size_t>>(
      [&](detail::pg_store::lease& l) { return impl::expire(l, now, lifetime); });
}

MCPCORE_DECL result<std::vector<approval_ticket>> postgres_approval_store::pending(std::size_t limit) {
  if (impl_ == nullptr) return fail(approval_store_errc::closed);
  return impl_->call<result<std::vector<approval_ticket>>>(
      [&](detail::pg_store::lease& l) { return impl::pending(l, limit); });
}

MCPCORE_DECL result<std::vector<approval_ticket>> postgres_approval_store::recently_reviewed(std::size_t limit) {
  if (impl_ == nullptr) return fail(approval_store_errc::closed);
  return impl_->call<result<std::vector<approval_ticket>>>(
      [&](detail::pg_store::lease& l) { return impl::recently_reviewed(l, limit); });
}

MCPCORE_DECL result<std::size_t> postgres_approval_store::prune(approval_time older_than,
                                                                approval_prune_options options) {
  if (impl_ == nullptr) return fail(approval_store_errc::closed);
  const std::size_t batch = options.batch == 0 ? 1 : options.batch;
  std::size_t total = 0;
  for (;;) {
    // Each batch leases a connection of its own and commits on its own.
    auto n = impl_->call<result<std::size_t>>(
        [&](detail::pg_store::lease& l) { return impl::prune_batch(l, older_than, batch); });
    if (!n) return n;
    total += *n;
    if (*n < batch) return total;
  }
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_POSTGRES_APPROVAL_STORE_IPP
