// SPDX-License-Identifier: Apache-2.0
// The host's approval store and audit sink: SQLite files in the data directory (the default), or one
// PostgreSQL database shared by several hosts (docs/host-server.md#several-hosts-on-postgresql).
//
// Built with PostgreSQL support when MCPCORE_HOST_POSTGRES is 1 (examples/CMakeLists.txt sets it when
// mcpcore::postgres exists); without it, asking for PostgreSQL is refused with a clear message.
#ifndef MCPCORE_HOST_DB_STORES_HPP
#define MCPCORE_HOST_DB_STORES_HPP

#include <mcpcore/expected.hpp>
#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/stores/sqlite_approval_store.hpp>
#include <mcpcore/stores/sqlite_audit_sink.hpp>

#if MCPCORE_HOST_POSTGRES
#  include <mcpcore/stores/postgres_approval_store.hpp>
#  include <mcpcore/stores/postgres_audit_sink.hpp>

#  include <libpq-fe.h>
#endif

#include <chrono>
#include <cstddef>
#include <expected>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace mcpcore_host {

/// Whether this build can keep approvals and audit in PostgreSQL.
inline constexpr bool postgres_available = MCPCORE_HOST_POSTGRES != 0;

/// What a flag naming a PostgreSQL database says in a build without PostgreSQL support.
inline std::string postgres_unavailable(std::string_view flag) {
  return std::string{flag} +
         " needs PostgreSQL support, and this build has none (configure with -DMCPCORE_POSTGRES=ON and libpq-dev)";
}

/// The approval store of the host: a model of `mcpcore::approval_store` (and of
/// `mcpcore::approval_store_prunable`) over either engine.
class approval_db {
 public:
  using store_type = std::variant<mcpcore::sqlite_approval_store
#if MCPCORE_HOST_POSTGRES
                                  ,
                                  mcpcore::postgres_approval_store
#endif
                                  >;

  explicit approval_db(store_type s) : s_(std::move(s)) {}

  /// The server id stamped on the tickets minted without one from now on: for a host whose id
  /// (`<hostname>:<port>`) is known only once its ephemeral port is bound, after the approval
  /// service (and its `approval_options::server_id`) was made (docs/host-server.md#flags).
  void set_late_server_id(std::string_view server_id) {
    std::string id{server_id};
    const std::lock_guard lock{hooks_->m};
    hooks_->late_id = std::move(id);
  }

  /// Called with the ticket's id after each `review` that decided a ticket (the store answered
  /// `approval_review_status::reviewed`), on the reviewing thread, once per decision: never for a
  /// refused review (already reviewed, expired, self-review, unknown) nor for a store error. The
  /// host announces `host://approvals/<id>` with it (docs/host-server.md#approval-tickets-as-resources).
  /// `f` must not throw; empty: nothing is called. Any thread.
  void set_on_reviewed(std::function<void(std::string_view id)> f) {
    const std::lock_guard lock{hooks_->m};
    hooks_->on_reviewed = std::move(f);
  }

  mcpcore::result<mcpcore::approval_mint_result> mint(const mcpcore::approval_mint_request& m) {
    if (m.server.empty()) {
      std::string late;
      {
        const std::lock_guard lock{hooks_->m};
        late = hooks_->late_id;
      }
      if (!late.empty()) {
        mcpcore::approval_mint_request stamped = m;
        stamped.server = late;
        return std::visit([&](auto& s) { return s.mint(stamped); }, s_);
      }
    }
    return std::visit([&](auto& s) { return s.mint(m); }, s_);
  }
  mcpcore::result<std::optional<mcpcore::approval_ticket>> get(std::string_view id) {
    return std::visit([&](auto& s) { return s.get(id); }, s_);
  }
  mcpcore::result<std::vector<mcpcore::approval_ticket>> recently_reviewed(std::size_t limit) {
    return std::visit([&](auto& s) { return s.recently_reviewed(limit); }, s_);
  }
  mcpcore::result<mcpcore::approval_consume_status> consume(const mcpcore::approval_consume_request& c) {
    return std::visit([&](auto& s) { return s.consume(c); }, s_);
  }
  mcpcore::result<mcpcore::approval_review_status> review(const mcpcore::approval_review_request& r) {
    auto reviewed = std::visit([&](auto& s) { return s.review(r); }, s_);
    if (reviewed && *reviewed == mcpcore::approval_review_status::reviewed) {
      std::function<void(std::string_view)> announce;
      {
        const std::lock_guard lock{hooks_->m};
        announce = hooks_->on_reviewed;
      }
      if (announce) announce(r.id);
    }
    return reviewed;
  }
  mcpcore::result<std::size_t> expire(mcpcore::approval_time now, std::chrono::milliseconds lifetime) {
    return std::visit([&](auto& s) { return s.expire(now, lifetime); }, s_);
  }
  mcpcore::result<std::vector<mcpcore::approval_ticket>> pending(std::size_t limit) {
    return std::visit([&](auto& s) { return s.pending(limit); }, s_);
  }
  /// Retention on either engine (docs/approvals.md#retention).
  mcpcore::result<std::size_t> prune(mcpcore::approval_time older_than, const mcpcore::approval_prune_options& o = {}) {
    return std::visit([&](auto& s) { return s.prune(older_than, o); }, s_);
  }

 private:
  /// On the heap: the store moves (std::variant), the hooks stay where the host set them.
  struct hooks {
    std::mutex m;
    std::string late_id;
    std::function<void(std::string_view)> on_reviewed;
  };
  store_type s_;
  std::unique_ptr<hooks> hooks_ = std::make_unique<hooks>();
};

static_assert(mcpcore::approval_store_prunable<approval_db>);

/// Opens the approval store: the PostgreSQL database `conninfo` when it is not empty (a libpq
/// connection string or postgres:// URI; the schema is created or migrated), else the SQLite file
/// `sqlite_path` (created when `create`). The error is a sentence; it never repeats `conninfo`,
/// which may hold a password.
inline std::expected<approval_db, std::string> open_approval_db(const std::string& conninfo,
                                                                 const std::string& sqlite_path, bool create,
                                                                 [[maybe_unused]] std::string_view flag = "--approvals-db") {
  if (!conninfo.empty()) {
#if MCPCORE_HOST_POSTGRES
    auto store = mcpcore::postgres_approval_store::open(conninfo);
    if (!store) return std::unexpected("cannot open the PostgreSQL approvals database: " + store.error().message());
    return approval_db{std::move(*store)};
#else
    return std::unexpected(postgres_unavailable(flag));
#endif
  }
  mcpcore::sqlite_approval_store_options so;
  so.create = create;
  auto store = mcpcore::sqlite_approval_store::open(sqlite_path, so);
  if (!store) {
    return std::unexpected("cannot open the approvals database " + sqlite_path + ": " + store.error().message());
  }
  return approval_db{std::move(*store)};
}

/// The `server=<id>` field a host appends to the detail of every audit row it writes.
inline std::string server_field(std::string_view server_id) {
  return "server=" + mcpcore::sanitize_audit_value(server_id);
}

/// The audit sink of the host over either engine: every row it records gets `server=<id>` appended
/// to its detail, so rows from several hosts in one database say where they came from.
class audit_db {
 public:
  using sink_type = std::variant<mcpcore::sqlite_audit_sink
#if MCPCORE_HOST_POSTGRES
                                 ,
                                 std::unique_ptr<mcpcore::postgres_audit_sink>
#endif
                                 >;

  audit_db(sink_type s, std::string_view server_id) : st_(std::make_unique<state>(std::move(s))) {
    set_server_id(server_id);
  }

  /// Changes the server id of the rows recorded from now on (for a port known only once bound).
  void set_server_id(std::string_view server_id) {
    std::string field = server_field(server_id);
    const std::lock_guard lock{st_->m};
    st_->field = std::move(field);
  }

  bool record(const mcpcore::audit_record& r) {
    std::string detail;
    {
      const std::lock_guard lock{st_->m};
      detail = st_->field;
    }
    if (!r.detail.empty()) detail = std::string{r.detail} + ' ' + detail;
    mcpcore::audit_record copy = r;
    copy.detail = detail;
    return std::visit(
        [&](auto& s) {
          if constexpr (std::is_same_v<std::decay_t<decltype(s)>, mcpcore::sqlite_audit_sink>) {
            return s.record(copy);
          } else {
            return s->record(copy);
          }
        },
        st_->sink);
  }

 private:
  struct state {
    explicit state(sink_type s) : sink(std::move(s)) {}
    sink_type sink;
    std::mutex m;
    std::string field;
  };
  std::unique_ptr<state> st_;
};

static_assert(mcpcore::audit_sink<audit_db>);

/// The series the PostgreSQL sink counts its lost rows in: the server's own
/// `mcp_audit_write_failures_total`, so /metrics shows every row missing from the trail
/// (docs/concepts/audit_sink.md#durability-classes). `m` must outlive the audit sink.
inline mcpcore::counter audit_lost_rows(mcpcore::metrics_registry& m) {
  return m.make_counter("mcp_audit_write_failures_total", "audit rows that were not persisted");
}

/// Opens the audit sink: PostgreSQL `conninfo` when not empty, else the SQLite file `sqlite_path`.
/// The PostgreSQL sink accepts rows and writes them later: those it loses then count in
/// `lost_rows` (`audit_lost_rows`); the SQLite sink writes each row before `record` returns, and
/// a row it cannot write is `false`, counted by the server.
inline std::expected<audit_db, std::string> open_audit_db(const std::string& conninfo, const std::string& sqlite_path,
                                                          std::string_view server_id,
                                                          [[maybe_unused]] mcpcore::counter lost_rows = {}) {
  if (!conninfo.empty()) {
#if MCPCORE_HOST_POSTGRES
    mcpcore::postgres_audit_sink_options options;
    options.lost_rows = lost_rows;
    auto sink = mcpcore::postgres_audit_sink::open(conninfo, options);
    if (!sink) return std::unexpected("cannot open the PostgreSQL audit database: " + sink.error().message());
    return audit_db{std::move(*sink), server_id};
#else
    return std::unexpected(postgres_unavailable("--audit-db"));
#endif
  }
  auto sink = mcpcore::sqlite_audit_sink::open(sqlite_path);
  if (!sink) return std::unexpected("cannot open the audit database " + sqlite_path + ": " + sink.error().message());
  return audit_db{std::move(*sink), server_id};
}

#if MCPCORE_HOST_POSTGRES
namespace pg {
struct conn_closer {
  void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
struct result_clearer {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using conn_ptr = std::unique_ptr<PGconn, conn_closer>;
using result_ptr = std::unique_ptr<PGresult, result_clearer>;

/// One read-only query with text parameters; the rows, or a sentence.
inline std::expected<result_ptr, std::string> query(const std::string& conninfo, const char* sql,
                                                    const std::vector<std::string>& params) {
  conn_ptr conn{PQconnectdb(conninfo.c_str())};
  if (!conn || PQstatus(conn.get()) != CONNECTION_OK) {
    return std::unexpected(std::string{"cannot connect to the PostgreSQL audit database: "} +
                           (conn ? PQerrorMessage(conn.get()) : "out of memory"));
  }
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p.c_str());
  result_ptr res{PQexecParams(conn.get(), sql, static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                              nullptr, 0)};
  if (!res || PQresultStatus(res.get()) != PGRES_TUPLES_OK) {
    return std::unexpected(std::string{"cannot read the PostgreSQL audit database: "} + PQerrorMessage(conn.get()));
  }
  return res;
}
}  // namespace pg

/// The newest `limit` rows of the PostgreSQL audit table (mcpcore::postgres_audit_sink's schema), oldest first.
inline std::expected<std::vector<mcpcore::audit_entry>, std::string> postgres_audit_tail(const std::string& conninfo,
                                                                                          std::size_t limit) {
  auto res = pg::query(conninfo,
                       "SELECT time_ms, action, target_type, target_id, principal, result, detail, correlation_id"
                       " FROM (SELECT * FROM mcpcore_audit ORDER BY seq DESC LIMIT $1::bigint) t ORDER BY seq",
                       {std::to_string(limit)});
  if (!res) return std::unexpected(std::move(res.error()));
  PGresult* r = res->get();
  std::vector<mcpcore::audit_entry> out;
  const int rows = PQntuples(r);
  out.reserve(static_cast<std::size_t>(rows));
  for (int i = 0; i < rows; ++i) {
    mcpcore::audit_entry e;
    e.time = std::chrono::system_clock::time_point{std::chrono::milliseconds{std::stoll(PQgetvalue(r, i, 0))}};
    e.action = PQgetvalue(r, i, 1);
    e.target_type = PQgetvalue(r, i, 2);
    e.target_id = PQgetvalue(r, i, 3);
    e.principal_id = PQgetvalue(r, i, 4);
    const std::string_view result = PQgetvalue(r, i, 5);
    for (const auto candidate : {mcpcore::audit_result::success, mcpcore::audit_result::denied,
                                 mcpcore::audit_result::failure, mcpcore::audit_result::pending,
                                 mcpcore::audit_result::approved, mcpcore::audit_result::not_found}) {
      if (mcpcore::to_string(candidate) == result) e.result = candidate;
    }
    e.detail = PQgetvalue(r, i, 6);
    e.correlation_id = PQgetvalue(r, i, 7);
    out.push_back(std::move(e));
  }
  return out;
}
#endif

}  // namespace mcpcore_host

#endif  // MCPCORE_HOST_DB_STORES_HPP
