// SPDX-License-Identifier: Apache-2.0
// The PostgreSQL audit sink: the queue, the writer thread, the batches and the schema.
#ifndef MCPCORE_IMPL_POSTGRES_AUDIT_SINK_IPP
#define MCPCORE_IMPL_POSTGRES_AUDIT_SINK_IPP

#include <mcpcore/stores/postgres_audit_sink.hpp>

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/stores/impl/postgres_common.ipp>

#include <libpq-fe.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE
namespace detail::pg_audit {

// One queued row: copies of the record's views.
struct row {
  std::array<std::string, 8> values;  // time_ms, action, target_type, target_id, principal, result, detail, cid
};

inline constexpr std::size_t max_batch_cap = 4000;  // 8 parameters a row, PostgreSQL allows 65535

// To change the schema, append a step and raise postgres_audit_sink::schema_version.
inline constexpr const char* migration_v1 =
    "CREATE TABLE mcpcore_audit ("
    " seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " time_ms bigint NOT NULL,"
    " action text NOT NULL, target_type text NOT NULL, target_id text NOT NULL,"
    " principal text NOT NULL,"
    " result text NOT NULL"
    "  CHECK (result IN ('success', 'denied', 'failure', 'pending', 'approved', 'not_found')),"
    " detail text NOT NULL, correlation_id text NOT NULL);"
    "CREATE INDEX mcpcore_audit_time ON mcpcore_audit (time_ms);";

inline std::string insert_sql(std::size_t rows) {
  std::string sql =
      "INSERT INTO mcpcore_audit (time_ms, action, target_type, target_id, principal, result, detail,"
      " correlation_id) VALUES ";
  for (std::size_t i = 0; i < rows; ++i) {
    if (i != 0) sql += ',';
    sql += '(';
    for (std::size_t k = 0; k < 8; ++k) {
      if (k != 0) sql += ',';
      sql += '$';
      sql += std::to_string(i * 8 + k + 1);
    }
    sql += ')';
  }
  return sql;
}

}  // namespace detail::pg_audit

struct postgres_audit_sink::impl {
  postgres_audit_sink_options options;
  detail::pg_store::pool pool;
  mutable std::mutex mutex;
  std::condition_variable wake;       // the writer: rows queued, or closing
  std::condition_variable drained;    // flush: a batch finished
  std::deque<detail::pg_audit::row> queue;  // the batch being written stays at the front until done
  bool closing = false;
  bool stopped = false;
  std::chrono::steady_clock::time_point close_deadline{};
  std::atomic<std::uint64_t> lost{0};
  std::atomic<std::uint64_t> written{0};
  std::thread writer;

  impl(std::string conninfo, const postgres_audit_sink_options& o)
      : options(o), pool(std::move(conninfo), {1, o.connect_timeout, o.statement_timeout}) {
    if (options.max_queued_rows == 0) options.max_queued_rows = 1;
    options.max_batch_rows = std::clamp<std::size_t>(options.max_batch_rows, 1, detail::pg_audit::max_batch_cap);
  }

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
    auto v = l.exec("SELECT version FROM mcpcore_schema WHERE component = $1", {"audit"});
    if (!v) return fail(v.error());
    std::int64_t version = 0;
    if (PQntuples(v->get()) == 1) {
      const auto parsed = parse_int(PQgetvalue(v->get(), 0, 0));
      if (!parsed) return fail(approval_store_errc::corrupt);
      version = *parsed;
    }
    if (version > schema_version) {
      return fail(error(make_error_code(approval_store_errc::schema_too_new),
                        "the audit schema is at version " + std::to_string(version) + ", newer than " +
                            std::to_string(schema_version)));
    }
    if (version == schema_version) return l.commit();
    if (auto r = l.run(detail::pg_audit::migration_v1); !r) return r;
    if (auto r = l.run("INSERT INTO mcpcore_schema (component, version) VALUES ($1, $2)"
                       " ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version",
                       {"audit", std::to_string(schema_version)});
        !r) {
      return r;
    }
    return l.commit();
  }

  // One transaction: the rows [first, first + n) of `batch`, then the retention.
  result<void> write(const std::vector<detail::pg_audit::row>& batch, std::size_t first, std::size_t n) {
    return call<result<void>>([&](detail::pg_store::lease& l) -> result<void> {
      std::vector<std::string> params;
      params.reserve(n * 8);
      for (std::size_t i = first; i < first + n; ++i) {
        for (const auto& v : batch[i].values) params.push_back(v);
      }
      if (auto r = l.begin(); !r) return r;
      if (auto r = l.exec(detail::pg_audit::insert_sql(n).c_str(), params); !r) return fail(r.error());
      if (options.max_rows != 0) {
        // The rows max_rows or more below the last one inserted (as the SQLite sink's retention).
        if (auto r = l.run("DELETE FROM mcpcore_audit WHERE seq <= (SELECT max(seq) FROM mcpcore_audit) - $1",
                           {std::to_string(options.max_rows)});
            !r) {
          return r;
        }
      }
      return l.commit();
    });
  }

  // Waits `d` or until closing past the deadline; false when the writer must give up.
  bool backoff(std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> lock(mutex);
    const auto until = std::chrono::steady_clock::now() + d;
    wake.wait_until(lock, closing ? std::min(until, close_deadline) : until,
                    [&] { return closing && std::chrono::steady_clock::now() >= close_deadline; });
    return !(closing && std::chrono::steady_clock::now() >= close_deadline);
  }

  void finish_batch(std::size_t n) {
    {
      const std::lock_guard<std::mutex> lock(mutex);
      queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(n));
    }
    drained.notify_all();
  }

  void run() noexcept {
    auto delay = options.retry_backoff;
    for (;;) {
      std::vector<detail::pg_audit::row> batch;
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [&] { return !queue.empty() || closing; });
        if (queue.empty() || (closing && std::chrono::steady_clock::now() >= close_deadline)) {
          lost += queue.size();
          queue.clear();
          stopped = true;
          drained.notify_all();
          return;
        }
        const std::size_t n = std::min(queue.size(), options.max_batch_rows);
        try {
          batch.assign(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(n));
        } catch (...) {
          continue;  // out of memory: try again (the rows stay queued)
        }
      }
      const auto r = write(batch, 0, batch.size());
      if (r) {
        written += batch.size();
        delay = options.retry_backoff;
        finish_batch(batch.size());
        continue;
      }
      if (!is_permanent_store_error(r.error())) {
        if (!backoff(delay)) continue;  // closing past the deadline: the loop counts the rest lost
        delay = std::min(delay * 2, options.max_retry_backoff);
        continue;
      }
      // Permanent: one row at a time, so that one bad row loses itself only.
      for (std::size_t i = 0; i < batch.size(); ++i) {
        if (write(batch, i, 1)) {
          ++written;
        } else {
          ++lost;
        }
      }
      finish_batch(batch.size());
    }
  }

  void close() noexcept {
    {
      const std::lock_guard<std::mutex> lock(mutex);
      if (!closing) {
        closing = true;
        close_deadline = std::chrono::steady_clock::now() + options.close_timeout;
      }
    }
    wake.notify_all();
    if (writer.joinable() && writer.get_id() != std::this_thread::get_id()) writer.join();
  }
};

MCPCORE_DECL result<std::unique_ptr<postgres_audit_sink>> postgres_audit_sink::open(
    const std::string& conninfo, postgres_audit_sink_options options) {
  char* why = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(conninfo.c_str(), &why);
  if (parsed == nullptr) {
    std::string msg = "invalid PostgreSQL connection string: " + detail::pg_store::trimmed(why);
    PQfreemem(why);
    return fail(error(make_error_code(approval_store_errc::internal), std::move(msg)));
  }
  PQconninfoFree(parsed);
  try {
    auto state = std::make_unique<impl>(conninfo, options);
    // The sink's allocation is sequenced before its argument: if it throws, `state` still frees the impl.
    std::unique_ptr<postgres_audit_sink> sink(new postgres_audit_sink(state.release()));
    auto r = sink->impl_->call<result<void>>([](detail::pg_store::lease& l) { return impl::migrate(l); });
    if (!r) return fail(r.error());
    impl* p = sink->impl_;
    p->writer = std::thread([p] { p->run(); });
    return sink;
  } catch (const std::bad_alloc&) {
    return fail(std::make_error_code(std::errc::not_enough_memory));
  } catch (const std::system_error& e) {
    return fail(e.code());
  }
}

MCPCORE_DECL postgres_audit_sink::~postgres_audit_sink() {
  close();
  delete impl_;
}

MCPCORE_DECL bool postgres_audit_sink::record(const audit_record& r) noexcept {
  try {
    detail::pg_audit::row row{{std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                  r.time.time_since_epoch())
                                                  .count()),
                               std::string(r.action), std::string(r.target_type), std::string(r.target_id),
                               std::string(r.principal_id), std::string(to_string(r.result)),
                               std::string(r.detail), std::string(r.correlation_id)}};
    {
      const std::lock_guard<std::mutex> lock(impl_->mutex);
      if (!impl_->closing && impl_->queue.size() < impl_->options.max_queued_rows) {
        impl_->queue.push_back(std::move(row));
        impl_->wake.notify_one();
        return true;
      }
    }
  } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory copying the row: lost like a full queue
  }
  ++impl_->lost;
  return false;
}

MCPCORE_DECL bool postgres_audit_sink::flush(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(impl_->mutex);
  return impl_->drained.wait_for(lock, timeout, [&] { return impl_->queue.empty() || impl_->stopped; }) &&
         impl_->queue.empty();
}

MCPCORE_DECL void postgres_audit_sink::close() noexcept { impl_->close(); }

MCPCORE_DECL std::uint64_t postgres_audit_sink::lost() const noexcept { return impl_->lost.load(); }

MCPCORE_DECL std::uint64_t postgres_audit_sink::written() const noexcept { return impl_->written.load(); }

MCPCORE_DECL std::size_t postgres_audit_sink::queued() const noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->queue.size();
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_POSTGRES_AUDIT_SINK_IPP
