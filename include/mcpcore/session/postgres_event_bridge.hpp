// SPDX-License-Identifier: Apache-2.0
// Events across servers: a bridge between one server's events and a PostgreSQL LISTEN/NOTIFY
// channel shared by several servers (docs/server.md#events-across-servers).
//
// Layer: session, not stores. The bridge needs dispatch/server.hpp (server::subscribe, publish) and
// the PostgreSQL connection code of stores; stores and dispatch may not include each other, and
// session is the lowest layer that may include both (docs/architecture.md#layers). Its compiled
// part is src/mcpcore_postgres_events.cpp, linked into mcpcore::postgres.
#ifndef MCPCORE_POSTGRES_EVENT_BRIDGE_HPP
#define MCPCORE_POSTGRES_EVENT_BRIDGE_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/fwd.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/stores/postgres_approval_store.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

MCPCORE_BEGIN_NAMESPACE

/// Default of `postgres_event_bridge_options::channel`.
inline constexpr const char* default_postgres_event_channel = "mcpcore_events";
/// Default of `postgres_event_bridge_options::max_queued`.
inline constexpr std::size_t default_postgres_event_max_queued = 1024;
/// Default of `postgres_event_bridge_options::retry_backoff`.
inline constexpr std::chrono::milliseconds default_postgres_event_retry_backoff{100};
/// Default of `postgres_event_bridge_options::max_retry_backoff`.
inline constexpr std::chrono::milliseconds default_postgres_event_max_retry_backoff{5000};
/// The longest NOTIFY payload the bridge sends, in bytes: PostgreSQL refuses 8000 and more.
inline constexpr std::size_t postgres_event_max_payload = 7999;

/// How a `postgres_event_bridge` connects and queues.
struct postgres_event_bridge_options {
  /// The channel every bridged server uses: 1 to 63 of `a-z`, `0-9` and `_`, not starting with a
  /// digit (anything else is refused by `open` with `std::errc::invalid_argument`).
  std::string channel = default_postgres_event_channel;
  /// How long opening the connection may take (libpq's `connect_timeout`, whole seconds, at least 2).
  std::chrono::milliseconds connect_timeout = default_postgres_connect_timeout;
  /// The most local events waiting to be sent (0 counts as 1); one more is dropped and counted.
  std::size_t max_queued = default_postgres_event_max_queued;
  /// The first wait before re-connecting after the connection was lost; it doubles up to
  /// `max_retry_backoff`.
  std::chrono::milliseconds retry_backoff = default_postgres_event_retry_backoff;
  /// The longest wait between two connection attempts.
  std::chrono::milliseconds max_retry_backoff = default_postgres_event_max_retry_backoff;
};

/// Carries one server's list changes and resource updates to the other servers of a deployment,
/// and theirs to it, through a PostgreSQL `LISTEN`/`NOTIFY` channel
/// (docs/server.md#events-across-servers).
///
/// It subscribes to the server's events. Each local `tools_list_changed`, `prompts_list_changed`,
/// `resources_list_changed` and `resource_updated` is queued (bounded by `max_queued`, drops
/// counted) and sent as `NOTIFY channel` with the payload `{"o":<origin>,"k":<kind>,"u":<uri>}`,
/// `origin` a random id of this bridge; `task_status` is not bridged (a task lives on the server
/// that runs it). A payload longer than `postgres_event_max_payload` (a very long URI) is not sent
/// and counts in `oversized()`.
///
/// One thread with its own connection sends the queue and `LISTEN`s on the channel: it ignores its
/// own origin and hands every other server's event to `server::publish`, so this server's streams
/// and subscriptions deliver it; a payload that is not a well-formed event or is longer than
/// `postgres_event_max_payload` is ignored and counts in `rejected()`. Events it publishes are never sent back to the channel (by any
/// bridge on that thread). A lost connection is re-opened with backoff and `LISTEN`ed again; what
/// was notified meanwhile is lost, so each reconnection counts in `gaps()` and publishes every
/// list-changed kind the server advertises (`server::publishes`), telling clients to list again.
/// Local events queued meanwhile are sent after the reconnection.
///
/// The server must outlive the bridge. Thread safety: the counters may be read from any thread;
/// `close` may be called from any thread but the bridge's own. Not copyable, not movable.
class postgres_event_bridge {
 public:
  /// Connects, `LISTEN`s, subscribes to `s` and starts the thread. Errors: `std::errc::invalid_argument`
  /// (a bad channel name), `approval_store_errc::io_error` (cannot connect or `LISTEN`).
  [[nodiscard]] MCPCORE_DECL static result<std::unique_ptr<postgres_event_bridge>> open(
      server& s, const std::string& conninfo, postgres_event_bridge_options options = {});
  /// Sends one event to the channel from a process that runs no server (a command-line tool that
  /// changed what the servers serve, as `mcpcore-admin` approving a ticket): one connection, one
  /// `NOTIFY`, closed again. The payload carries a fresh origin, so every bridge on the channel
  /// publishes it. Errors: `std::errc::invalid_argument` (a bad channel name),
  /// `std::errc::message_size` (`task_status`, or a payload over `postgres_event_max_payload`),
  /// `approval_store_errc::io_error` (cannot connect or `NOTIFY`). Only `channel` and
  /// `connect_timeout` of `options` are used.
  [[nodiscard]] MCPCORE_DECL static result<void> notify(const std::string& conninfo, const server_event& e,
                                                        const postgres_event_bridge_options& options = {});
  /// `close()`.
  MCPCORE_DECL ~postgres_event_bridge();
  postgres_event_bridge(const postgres_event_bridge&) = delete;
  postgres_event_bridge& operator=(const postgres_event_bridge&) = delete;

  /// Ends the subscription, wakes and joins the thread (events still queued are not sent).
  /// Prompt, except while a connection attempt is under way (at most `connect_timeout`). Idempotent.
  MCPCORE_DECL void close() noexcept;

  /// This bridge's origin id (16 hex digits), also in its connection's `application_name`
  /// (`mcpcore-events-<origin>`, unless the conninfo names one).
  [[nodiscard]] MCPCORE_DECL const std::string& origin() const noexcept;
  /// Local events notified to the channel.
  [[nodiscard]] MCPCORE_DECL std::uint64_t sent() const noexcept;
  /// Remote events published to the server.
  [[nodiscard]] MCPCORE_DECL std::uint64_t received() const noexcept;
  /// Local events dropped: the queue was full, or PostgreSQL refused the `NOTIFY`.
  [[nodiscard]] MCPCORE_DECL std::uint64_t dropped() const noexcept;
  /// Local events not sent because their payload was longer than `postgres_event_max_payload`.
  [[nodiscard]] MCPCORE_DECL std::uint64_t oversized() const noexcept;
  /// Payloads on the channel that were not a well-formed event, or longer than
  /// `postgres_event_max_payload` (ignored).
  [[nodiscard]] MCPCORE_DECL std::uint64_t rejected() const noexcept;
  /// Reconnections after a lost connection (each one a window in which remote events were lost).
  [[nodiscard]] MCPCORE_DECL std::uint64_t gaps() const noexcept;

 private:
  struct impl;
  explicit postgres_event_bridge(impl* p) noexcept : impl_(p) {}
  impl* impl_;
};

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/session/impl/postgres_event_bridge.ipp>
#endif

#endif  // MCPCORE_POSTGRES_EVENT_BRIDGE_HPP
