// SPDX-License-Identifier: Apache-2.0
// The PostgreSQL audit sink: the queue, the writer thread, the batches and the schema.
#ifndef MCPCORE_IMPL_POSTGRES_AUDIT_SINK_IPP
#define MCPCORE_IMPL_POSTGRES_AUDIT_SINK_IPP

#include <mcpcore/stores/postgres_audit_sink.hpp>

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/stores/impl/postgres_common.ipp>
#include <mcpcore/wire/json_writer.hpp>

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
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
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
// How often close() repeats the cancel of a statement still running past the close deadline.
inline constexpr std::chrono::milliseconds cancel_repeat{50};

// `v` as PostgreSQL's text takes it: well-formed UTF-8 without NUL. A NUL byte, and each ill-formed
// sequence (a stray byte, or a lead byte with the continuation bytes after it), becomes U+FFFD, so a
// row is neither refused (invalid byte sequence, 22021) nor cut at a NUL by libpq.
inline std::string text_value(std::string_view v) {
  if (v.find('\0') == std::string_view::npos && json::is_valid_utf8(v)) return std::string(v);
  constexpr std::string_view replacement = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(v.size() + replacement.size());
  std::size_t i = 0;
  while (i < v.size()) {
    const auto c = static_cast<unsigned char>(v[i]);
    if (c != 0 && c < 0x80) {
      out.push_back(v[i++]);
      continue;
    }
    const std::size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 1;
    if (c != 0 && n > 1 && v.size() - i >= n && json::is_valid_utf8(v.substr(i, n))) {
      out.append(v.substr(i, n));
      i += n;
      continue;
    }
    out.append(replacement);
    ++i;
    for (std::size_t k = 1; k < n && i < v.size() && (static_cast<unsigned char>(v[i]) & 0xC0) == 0x80; ++k) ++i;
  }
  return out;
}

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
  using clock = std::chrono::steady_clock;

  postgres_audit_sink_options options;
  detail::pg_store::pool pool;
  mutable std::mutex mutex;
  std::condition_variable wake;       // the writer: rows queued, or closing
  std::condition_variable drained;    // flush and close: rows left the queue, or the writer stopped
  std::deque<detail::pg_audit::row> queue;  // the batch being written stays at the front until done
  std::uint64_t accepted_total = 0;   // rows ever queued (under `mutex`)
  std::uint64_t removed_total = 0;    // rows ever taken off the queue, written or lost (under `mutex`)
  bool closing = false;
  bool stopped = false;
  clock::time_point close_deadline{};
  std::atomic<std::uint64_t> refused{0};
  std::atomic<std::uint64_t> lost{0};
  std::atomic<std::uint64_t> written{0};
  std::mutex join_mutex;              // close() from several threads: one joins, the others wait
  std::mutex cancel_mutex;
  PGcancel* cancel = nullptr;         // the connection of the statement in flight (under cancel_mutex)
  std::thread writer;

  impl(std::string conninfo, const postgres_audit_sink_options& o)
      : options(o), pool(std::move(conninfo), {1, o.connect_timeout, o.statement_timeout}) {
    if (options.max_queued_rows == 0) options.max_queued_rows = 1;
    options.max_batch_rows = std::clamp<std::size_t>(options.max_batch_rows, 1, detail::pg_audit::max_batch_cap);
    // Beyond bigint the retention bound cannot be bound as a parameter: unbounded, as the SQLite sink.
    if (options.max_rows >= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) options.max_rows = 0;
  }

  // now + d, saturated: a huge timeout means "no deadline", never one in the past.
  static clock::time_point after(clock::time_point now, std::chrono::milliseconds d) noexcept {
    if (d <= std::chrono::milliseconds::zero()) return now;
    const auto room = std::chrono::duration_cast<std::chrono::milliseconds>(clock::time_point::max() - now);
    return d >= room ? clock::time_point::max() : now + d;
  }

  // Arms the cancel handle of the connection a statement runs on, for close() at its deadline.
  class cancel_guard {
   public:
    cancel_guard(impl& i, PGconn* c) noexcept : i_(&i) {
      PGcancel* k = PQgetCancel(c);
      const std::lock_guard<std::mutex> lock(i_->cancel_mutex);
      i_->cancel = k;
    }
    cancel_guard(const cancel_guard&) = delete;
    cancel_guard& operator=(const cancel_guard&) = delete;
    ~cancel_guard() {
      PGcancel* k = nullptr;
      {
        const std::lock_guard<std::mutex> lock(i_->cancel_mutex);
        k = std::exchange(i_->cancel, nullptr);
      }
      if (k != nullptr) PQfreeCancel(k);
    }

   private:
    impl* i_;
  };

  // Cancels the statement in flight, if any (a no-op on an idle connection).
  void cancel_in_flight() noexcept {
    const std::lock_guard<std::mutex> lock(cancel_mutex);
    if (cancel == nullptr) return;
    std::array<char, 256> why{};
    (void)PQcancel(cancel, why.data(), static_cast<int>(why.size()));
  }

  template <class R, class F>
  R call(F&& f) noexcept {
    try {
      auto c = pool.acquire();
      if (!c) return fail(c.error());
      detail::pg_store::lease l(pool, *c);
      const cancel_guard armed(*this, *c);
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
        // The rows max_rows or more below the newest one (as the SQLite sink's retention).
        if (auto r = l.run("DELETE FROM mcpcore_audit WHERE seq <= (SELECT max(seq) FROM mcpcore_audit) - $1",
                           {std::to_string(options.max_rows)});
            !r) {
          return r;
        }
      }
      return l.commit();
    });
  }

  [[nodiscard]] bool past_deadline_locked() const noexcept { return closing && clock::now() >= close_deadline; }
  [[nodiscard]] bool past_deadline() const {
    const std::lock_guard<std::mutex> lock(mutex);
    return past_deadline_locked();
  }

  // Waits `d`, cut short by the close deadline (close() wakes the wait); false when the writer
  // must give up because the deadline passed.
  bool backoff(std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> lock(mutex);
    const auto until = after(clock::now(), d);
    for (;;) {
      if (past_deadline_locked()) return false;
      if (clock::now() >= until) return true;
      wake.wait_until(lock, closing ? std::min(until, close_deadline) : until);
    }
  }

  [[nodiscard]] std::chrono::milliseconds next_delay(std::chrono::milliseconds d) const noexcept {
    return d >= options.max_retry_backoff / 2 ? options.max_retry_backoff : d * 2;
  }

  // Rows accepted and then dropped: lost(), and the host's counter (docs/concepts/audit_sink.md#durability-classes).
  void count_lost(std::uint64_t n) noexcept {
    lost += n;
    options.lost_rows.inc(n);
  }

  // The first `n` rows of the queue are done (written or lost).
  void finish_batch(std::size_t n) {
    {
      const std::lock_guard<std::mutex> lock(mutex);
      queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(n));
      removed_total += n;
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
        if (queue.empty() || past_deadline_locked()) {
          count_lost(queue.size());
          removed_total += queue.size();
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
        if (backoff(delay)) delay = next_delay(delay);
        continue;  // past the close deadline, the loop counts the rest lost
      }
      // Permanent: one row at a time, so that one bad row loses itself only. A transient failure
      // on the way stops the pass: that row and the ones after it stay queued for the next batch.
      std::size_t done = 0;
      bool transient = false;
      for (; done < batch.size() && !past_deadline(); ++done) {
        const auto one = write(batch, done, 1);
        if (one) {
          ++written;
        } else if (is_permanent_store_error(one.error())) {
          count_lost(1);
        } else {
          transient = true;
          break;
        }
      }
      finish_batch(done);
      if (transient && backoff(delay)) delay = next_delay(delay);
    }
  }

  void close() noexcept {
    {
      const std::lock_guard<std::mutex> lock(mutex);
      if (!closing) {
        closing = true;
        close_deadline = after(clock::now(), options.close_timeout);
      }
    }
    wake.notify_all();
    const std::lock_guard<std::mutex> joining(join_mutex);
    if (!writer.joinable() || writer.get_id() == std::this_thread::get_id()) return;
    {
      std::unique_lock<std::mutex> lock(mutex);
      drained.wait_until(lock, close_deadline, [&] { return stopped; });
      // Past the deadline: cancel the statement the writer waits on (a lock, a slow server). A
      // cancel that falls between two statements does nothing, so it is repeated until the
      // writer sees the deadline and stops.
      while (!stopped) {
        lock.unlock();
        cancel_in_flight();
        lock.lock();
        drained.wait_for(lock, detail::pg_audit::cancel_repeat, [&] { return stopped; });
      }
    }
    writer.join();
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
    using detail::pg_audit::text_value;
    detail::pg_audit::row row{{std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                  r.time.time_since_epoch())
                                                  .count()),
                               text_value(r.action), text_value(r.target_type), text_value(r.target_id),
                               text_value(r.principal_id), std::string(to_string(r.result)),
                               text_value(r.detail), text_value(r.correlation_id)}};
    {
      const std::lock_guard<std::mutex> lock(impl_->mutex);
      if (!impl_->closing && impl_->queue.size() < impl_->options.max_queued_rows) {
        impl_->queue.push_back(std::move(row));
        ++impl_->accepted_total;
        impl_->wake.notify_one();
        return true;
      }
    }
  } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory copying the row: refused like a full queue
  }
  ++impl_->refused;
  return false;
}

MCPCORE_DECL bool postgres_audit_sink::flush(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(impl_->mutex);
  // The queue is FIFO: the rows accepted before this call are done once as many rows have left it.
  const std::uint64_t target = impl_->accepted_total;
  const auto done = [&] { return impl_->removed_total >= target; };
  return impl_->drained.wait_until(lock, impl::after(impl::clock::now(), timeout),
                                   [&] { return done() || impl_->stopped; }) &&
         done();
}

MCPCORE_DECL void postgres_audit_sink::close() noexcept { impl_->close(); }

MCPCORE_DECL std::uint64_t postgres_audit_sink::refused() const noexcept { return impl_->refused.load(); }

MCPCORE_DECL std::uint64_t postgres_audit_sink::lost() const noexcept { return impl_->lost.load(); }

MCPCORE_DECL std::uint64_t postgres_audit_sink::written() const noexcept { return impl_->written.load(); }

MCPCORE_DECL std::size_t postgres_audit_sink::queued() const noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->queue.size();
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_POSTGRES_AUDIT_SINK_IPP
