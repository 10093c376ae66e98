// SPDX-License-Identifier: Apache-2.0
// The PostgreSQL event bridge: the outgoing queue, the listener thread, reconnection and gaps
// (docs/server.md#events-across-servers).
#ifndef MCPCORE_IMPL_POSTGRES_EVENT_BRIDGE_IPP
#define MCPCORE_IMPL_POSTGRES_EVENT_BRIDGE_IPP

#include <mcpcore/session/postgres_event_bridge.hpp>

#include <mcpcore/detail/config.hpp>
#include <mcpcore/detail/random.hpp>
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/approval.hpp>
#include <mcpcore/session/impl/bridge_payload.ipp>
#include <mcpcore/stores/impl/postgres_common.ipp>

#include <fcntl.h>
#include <libpq-fe.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

MCPCORE_BEGIN_NAMESPACE
namespace detail::pg_events {

static_assert(max_payload == postgres_event_max_payload, "the payload functions apply the bridge's bound");

// True on a thread while it publishes an event that came from the channel: no bridge sends it
// back (docs/server.md#events-across-servers).
inline bool& publishing_remote() noexcept {
  thread_local bool flag = false;
  return flag;
}

struct remote_scope {
  remote_scope() noexcept { publishing_remote() = true; }
  remote_scope(const remote_scope&) = delete;
  remote_scope& operator=(const remote_scope&) = delete;
  ~remote_scope() { publishing_remote() = false; }
};

inline bool valid_channel(std::string_view c) noexcept {
  if (c.empty() || c.size() > 63 || (c[0] >= '0' && c[0] <= '9')) return false;
  return std::ranges::all_of(c, [](char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_'; });
}

}  // namespace detail::pg_events

namespace detail::pg_events {

// Opens a connection and runs `first` on it (LISTEN, or nothing when empty); the connection, or
// why not (`io_error`). The channel in `first` was checked (a-z, 0-9, _): quoting it is enough.
inline result<PGconn*> connect(const std::string& conninfo, std::chrono::milliseconds connect_timeout,
                               const std::string& app, const std::string& first) {
  const std::string timeout = detail::pg_store::connect_timeout_seconds(connect_timeout);
  const std::array<const char*, 4> keys{"dbname", "connect_timeout", "fallback_application_name", nullptr};
  const std::array<const char*, 4> values{conninfo.c_str(), timeout.c_str(), app.c_str(), nullptr};
  PGconn* c = PQconnectdbParams(keys.data(), values.data(), 1);
  if (c == nullptr) return fail(std::make_error_code(std::errc::not_enough_memory));
  const auto refuse = [&](std::string_view what) {
    std::string why = std::string(what) + detail::pg_store::trimmed(PQerrorMessage(c));
    PQfinish(c);
    return error(make_error_code(approval_store_errc::io_error), std::move(why));
  };
  if (PQstatus(c) != CONNECTION_OK) return fail(refuse("cannot connect to PostgreSQL: "));
  PQsetNoticeProcessor(c, &detail::pg_store::ignore_notice, nullptr);
  if (!first.empty()) {
    const detail::pg_store::pg_result r(PQexec(c, first.c_str()));
    if (!r || PQresultStatus(r.get()) != PGRES_COMMAND_OK) return fail(refuse("cannot LISTEN: "));
  }
  return c;
}

}  // namespace detail::pg_events

struct postgres_event_bridge::impl {
  impl(server& s, std::string ci, postgres_event_bridge_options o) noexcept
      : srv(&s), conninfo(std::move(ci)), options(std::move(o)) {
    options.max_queued = std::max<std::size_t>(1, options.max_queued);
  }
  impl(const impl&) = delete;
  impl& operator=(const impl&) = delete;
  ~impl() {
    if (conn != nullptr) PQfinish(conn);
    for (int fd : wake_fds) {
      if (fd >= 0) ::close(fd);
    }
  }

  server* srv;
  std::string conninfo;
  postgres_event_bridge_options options;
  std::string origin;
  PGconn* conn = nullptr;  // the thread's (open's before the thread starts)
  std::array<int, 2> wake_fds{-1, -1};
  event_subscription subscription;
  std::thread thread;

  std::mutex mutex;  // guards queue, closing
  std::deque<std::string> queue;
  bool closing = false;
  std::atomic<bool> stopping{false};

  std::atomic<std::uint64_t> sent{0}, received{0}, dropped{0}, oversized{0}, rejected{0}, gaps{0};

  void wake() const noexcept {
    const char b = 1;
    // A full pipe already wakes the thread: the result does not matter.
    [[maybe_unused]] const auto n = ::write(wake_fds[1], &b, 1);
  }
  void drain_wake() const noexcept {
    std::array<char, 64> buf{};
    while (::read(wake_fds[0], buf.data(), buf.size()) > 0) {
    }
  }

  // Connects and LISTENs; the connection, or why not.
  result<PGconn*> connect_listen() const {
    return detail::pg_events::connect(conninfo, options.connect_timeout, "mcpcore-events-" + origin,
                                      "LISTEN \"" + options.channel + "\"");
  }

  // The subscriber: on the publishing thread, never blocks on the network.
  void on_event(const server_event& e) {
    if (detail::pg_events::publishing_remote()) return;
    if (!detail::pg_events::kind_name(e.kind)) return;  // task_status is not bridged
    auto payload = detail::pg_events::encode_bridge_event(origin, e);
    if (!payload) {
      ++oversized;
      return;
    }
    {
      const std::lock_guard<std::mutex> lock(mutex);
      if (closing) return;
      if (queue.size() >= options.max_queued) {
        ++dropped;
        return;
      }
      queue.push_back(std::move(*payload));
    }
    wake();
  }

  // One payload from the channel (hostile input: docs/server.md#events-across-servers).
  void on_notify(std::string_view payload) {
    const auto d = detail::pg_events::decode_bridge_event(payload);
    if (!d) {
      ++rejected;
      return;
    }
    if (d->origin == origin) return;  // our own
    ++received;
    const detail::pg_events::remote_scope remote;
    srv->publish(d->event());
  }

  // Sends the queue; false when the connection was lost (the payload stays queued).
  bool send_queued() {
    for (;;) {
      std::string payload;
      {
        const std::lock_guard<std::mutex> lock(mutex);
        if (queue.empty()) return true;
        payload = queue.front();
      }
      const std::array<const char*, 2> params{options.channel.c_str(), payload.c_str()};
      const detail::pg_store::pg_result r(
          PQexecParams(conn, "SELECT pg_notify($1, $2)", 2, nullptr, params.data(), nullptr, nullptr, 0));
      const bool ok = r && PQresultStatus(r.get()) == PGRES_TUPLES_OK;
      if (!ok && PQstatus(conn) != CONNECTION_OK) return false;
      {
        const std::lock_guard<std::mutex> lock(mutex);
        if (!queue.empty()) queue.pop_front();
      }
      ++(ok ? sent : dropped);
    }
  }

  // Reads what arrived; false when the connection was lost.
  bool consume() {
    if (PQconsumeInput(conn) == 0 || PQstatus(conn) != CONNECTION_OK) return false;
    while (PGnotify* n = PQnotifies(conn)) {
      const std::string payload = n->extra != nullptr ? n->extra : "";
      PQfreemem(n);
      on_notify(payload);
    }
    return true;
  }

  // Waits until the socket (if any) is readable, the wake pipe is written, or `timeout` (-1: none).
  void wait(int socket, int timeout_ms) const noexcept {
    std::array<pollfd, 2> fds{};
    fds[0] = {.fd = wake_fds[0], .events = POLLIN, .revents = 0};
    fds[1] = {.fd = socket, .events = POLLIN, .revents = 0};
    const nfds_t n = socket >= 0 ? 2 : 1;
    while (::poll(fds.data(), n, timeout_ms) < 0 && errno == EINTR) {
    }
    drain_wake();
  }

  // After a reconnection: what was notified meanwhile is lost; clients list again.
  void report_gap() {
    ++gaps;
    const detail::pg_events::remote_scope remote;
    for (auto k : {server_event_kind::tools_list_changed, server_event_kind::prompts_list_changed,
                   server_event_kind::resources_list_changed}) {
      if (srv->publishes(k)) srv->publish(server_event{k, {}});
    }
  }

  void drop_connection() noexcept {
    PQfinish(conn);
    conn = nullptr;
  }

  void run() noexcept {
    auto backoff = options.retry_backoff;
    while (!stopping.load()) {
      if (conn == nullptr) {
        wait(-1, static_cast<int>(std::clamp<std::int64_t>(backoff.count(), 1, 3'600'000)));
        if (stopping.load()) break;
        auto c = connect_listen();
        if (!c) {
          backoff = std::min(backoff * 2, std::max(options.max_retry_backoff, options.retry_backoff));
          continue;
        }
        conn = *c;
        backoff = options.retry_backoff;
        report_gap();
      }
      if (!send_queued() || !consume()) {
        drop_connection();
        continue;
      }
      if (stopping.load()) break;
      wait(PQsocket(conn), -1);
    }
  }

  void close() noexcept {
    subscription.cancel();
    {
      const std::lock_guard<std::mutex> lock(mutex);
      closing = true;
    }
    stopping = true;
    if (thread.joinable()) {
      wake();
      thread.join();
    }
  }
};

MCPCORE_DECL result<std::unique_ptr<postgres_event_bridge>> postgres_event_bridge::open(
    server& s, const std::string& conninfo, postgres_event_bridge_options options) {
  if (!detail::pg_events::valid_channel(options.channel)) {
    return fail(error(std::make_error_code(std::errc::invalid_argument),
                      "postgres_event_bridge: the channel must be 1-63 of a-z, 0-9, _ (not starting with a digit)"));
  }
  auto origin = detail::random_hex(8);
  if (!origin) return fail(std::make_error_code(std::errc::resource_unavailable_try_again));
  std::unique_ptr<postgres_event_bridge> bridge(new postgres_event_bridge(new impl(s, conninfo, std::move(options))));
  impl* p = bridge->impl_;
  p->origin = std::move(*origin);
  if (::pipe2(p->wake_fds.data(), O_NONBLOCK | O_CLOEXEC) != 0) {
    return fail(std::error_code(errno, std::generic_category()));
  }
  auto c = p->connect_listen();
  if (!c) return fail(c.error());
  p->conn = *c;
  p->subscription = s.subscribe([p](const server_event& e) { p->on_event(e); });
  p->thread = std::thread([p] { p->run(); });
  return bridge;
}

MCPCORE_DECL result<void> postgres_event_bridge::notify(const std::string& conninfo, const server_event& e,
                                                        const postgres_event_bridge_options& options) {
  if (!detail::pg_events::valid_channel(options.channel)) {
    return fail(error(std::make_error_code(std::errc::invalid_argument),
                      "postgres_event_bridge: the channel must be 1-63 of a-z, 0-9, _ (not starting with a digit)"));
  }
  auto origin = detail::random_hex(8);
  if (!origin) return fail(std::make_error_code(std::errc::resource_unavailable_try_again));
  auto payload = detail::pg_events::encode_bridge_event(*origin, e);
  if (!payload) {
    return fail(error(std::make_error_code(std::errc::message_size),
                      "postgres_event_bridge: the event is not bridged or its payload is too long"));
  }
  auto c = detail::pg_events::connect(conninfo, options.connect_timeout, "mcpcore-notify-" + *origin, {});
  if (!c) return fail(c.error());
  const std::array<const char*, 2> params{options.channel.c_str(), payload->c_str()};
  const detail::pg_store::pg_result r(
      PQexecParams(*c, "SELECT pg_notify($1, $2)", 2, nullptr, params.data(), nullptr, nullptr, 0));
  const bool ok = r && PQresultStatus(r.get()) == PGRES_TUPLES_OK;
  std::string why = ok ? std::string{} : "cannot NOTIFY: " + detail::pg_store::trimmed(PQerrorMessage(*c));
  PQfinish(*c);
  if (!ok) return fail(error(make_error_code(approval_store_errc::io_error), std::move(why)));
  return {};
}

MCPCORE_DECL postgres_event_bridge::~postgres_event_bridge() {
  impl_->close();
  delete impl_;
}

MCPCORE_DECL void postgres_event_bridge::close() noexcept { impl_->close(); }

MCPCORE_DECL const std::string& postgres_event_bridge::origin() const noexcept { return impl_->origin; }
MCPCORE_DECL std::uint64_t postgres_event_bridge::sent() const noexcept { return impl_->sent.load(); }
MCPCORE_DECL std::uint64_t postgres_event_bridge::received() const noexcept { return impl_->received.load(); }
MCPCORE_DECL std::uint64_t postgres_event_bridge::dropped() const noexcept { return impl_->dropped.load(); }
MCPCORE_DECL std::uint64_t postgres_event_bridge::oversized() const noexcept { return impl_->oversized.load(); }
MCPCORE_DECL std::uint64_t postgres_event_bridge::rejected() const noexcept { return impl_->rejected.load(); }
MCPCORE_DECL std::uint64_t postgres_event_bridge::gaps() const noexcept { return impl_->gaps.load(); }

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_POSTGRES_EVENT_BRIDGE_IPP
