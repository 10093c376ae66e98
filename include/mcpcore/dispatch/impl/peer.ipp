// SPDX-License-Identifier: Apache-2.0
// The state one client connection or session keeps between messages (`peer`): negotiated
// revision, capabilities, log level, subscriptions, calls in flight and the server-to-client
// requests awaiting an answer.
#ifndef MCPCORE_IMPL_PEER_IPP
#define MCPCORE_IMPL_PEER_IPP

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/wire/json_writer.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

struct peer::impl {
  struct waiter {
    std::mutex mu;
    std::condition_variable_any cv;
    bool done = false;
    std::error_code ec;
    std::optional<client_reply> reply;
    /// Called once the waiter is done, on the thread that finished it, under no lock of the
    /// peer's (a call waiting without a thread: docs/eras.md#waiting-for-the-client). Set
    /// before the waiter is published, never changed after.
    std::function<void()> on_done;
  };
  /// One server-to-client request a handler waits for (a waiting call's or a task's input round):
  /// the input's key, the request's JSON-RPC id, its waiter.
  struct asked {
    std::string key;
    std::int64_t rid = 0;
    std::shared_ptr<waiter> w;
  };

  // Guards every member but the two atomics, which are read on each request without it.
  mutable std::mutex mu;
  std::string version;
  client_capabilities caps;
  std::atomic<bool> initialized{false};
  std::atomic<int> level{-1};
  std::set<std::string, std::less<>> subscriptions;
  std::unordered_map<request_id, std::stop_source> in_flight;
  std::unordered_map<std::int64_t, std::shared_ptr<waiter>> pending;  // shared: the waiting call may time out first
  std::int64_t next_request_id = 1;
  bool closed = false;        // close(): later calls start cancelled
  bool input_closed = false;  // no answer can arrive any more: client requests fail at once

  // `reply` (null for a failure) is moved from. A pointer rather than an std::optional by value:
  // g++ 12 warns (-Wmaybe-uninitialized, a false positive) when a disengaged optional holding a
  // json::document is moved at -O1 and above, which breaks -Werror builds.
  static void finish(waiter& w, std::error_code ec, client_reply* reply) {
    {
      std::lock_guard lock{w.mu};
      if (w.done) return;
      w.done = true;
      w.ec = ec;
      if (reply != nullptr) w.reply.emplace(std::move(*reply));
    }
    w.cv.notify_all();
    if (w.on_done) w.on_done();
  }

  // Gives each of `batch` a request id and publishes its waiter, all or none (docs/eras.md#waiting-for-the-client): refused `closed` once no answer can
  // arrive, `too_many_pending` past `cap` requests waiting on this peer.
  std::error_code enlist(std::vector<asked>& batch, std::size_t cap) {
    std::lock_guard lock{mu};
    if (input_closed) return make_error_code(client_request_errc::closed);
    if (pending.size() + batch.size() > cap) return make_error_code(client_request_errc::too_many_pending);
    for (auto& a : batch) {
      a.rid = next_request_id++;
      pending.emplace(a.rid, a.w);
    }
    return {};
  }

  // The requests of `batch` still waiting, taken out of
  // the table so that a late answer is dropped (docs/eras.md#waiting-for-the-client): their ids,
  // and whether an answer could still have come (`tell_withdrawn` says so to the client).
  struct withdrawn {
    std::vector<std::int64_t> ids;
    bool input_closed = false;
  };
  withdrawn withdraw(const std::vector<asked>& batch) noexcept {
    withdrawn out;
    try {
      out.ids.reserve(batch.size());
    } catch (...) {  // NOLINT(bugprone-empty-catch): the requests are still withdrawn, untold
    }
    std::lock_guard lock{mu};
    out.input_closed = input_closed;
    for (const auto& a : batch) {
      const auto it = pending.find(a.rid);
      if (it == pending.end() || it->second != a.w) continue;  // answered (or failed) already
      pending.erase(it);
      if (out.ids.size() < out.ids.capacity()) out.ids.push_back(a.rid);
    }
    return out;
  }

  // Closes input (and, with `stop_calls`, the peer) under `mu`, then, after unlocking, stops the
  // calls in flight and fails every outstanding client request: their wake-ups run no callback
  // under `mu` (a resumed call takes it). A call woken here finds `input_closed` already set, so it
  // reports the closed connection, not a cancellation.
  void close_input(bool stop_calls) noexcept {
    std::vector<std::stop_source> stops;
    // Taken whole (a swap allocates nothing), so that the waiters are always finished outside the
    // lock: a waiter's handler may call back into this peer (a task withdrawing its requests).
    decltype(pending) failed;
    {
      std::lock_guard lock{mu};
      input_closed = true;
      if (stop_calls) closed = true;
      try {
        if (stop_calls) {
          stops.reserve(in_flight.size());
          for (auto& [id, src] : in_flight) stops.push_back(src);
        }
      } catch (...) {
        for (auto& [id, src] : in_flight) src.request_stop();
        stops.clear();
      }
      failed.swap(pending);
    }
    for (auto& src : stops) src.request_stop();
    for (auto& [id, w] : failed) finish(*w, client_request_errc::closed, nullptr);
  }
};

namespace detail {

/// Tells the client of each request `w` took back, with `notifications/cancelled` on `sink` (MCP:
/// the sender of an abandoned request says so), unless no answer could have come any more.
inline void tell_withdrawn(const peer::impl::withdrawn& w, std::string_view reason, message_sink* sink) noexcept {
  if (w.input_closed || sink == nullptr) return;
  for (const std::int64_t rid : w.ids) {
    try {
      std::string cancel;
      write_notification(cancel, "notifications/cancelled", [&](json::writer& jw) {
        jw.begin_object().member("requestId", rid).member("reason", reason).end_object();
      });
      (void)sink->send(cancel);
    } catch (...) {  // NOLINT(bugprone-empty-catch): best effort, as for a blocked request
    }
  }
}

}  // namespace detail

MCPCORE_DECL peer::peer() : impl_(new impl) {}
MCPCORE_DECL peer::~peer() {
  close();
  delete impl_;
}

MCPCORE_DECL std::string peer::protocol_version() const {
  std::lock_guard lock{impl_->mu};
  return impl_->version;
}
MCPCORE_DECL bool peer::initialized() const noexcept { return impl_->initialized.load(); }
MCPCORE_DECL client_capabilities peer::capabilities() const noexcept {
  std::lock_guard lock{impl_->mu};
  return impl_->caps;
}
MCPCORE_DECL std::optional<log_level> peer::level() const noexcept {
  const int l = impl_->level.load(std::memory_order_relaxed);
  if (l < 0) return std::nullopt;
  return static_cast<log_level>(l);
}
MCPCORE_DECL bool peer::subscribed(std::string_view uri) const {
  std::lock_guard lock{impl_->mu};
  return impl_->subscriptions.find(uri) != impl_->subscriptions.end();
}
MCPCORE_DECL std::size_t peer::active_calls() const noexcept {
  std::lock_guard lock{impl_->mu};
  return impl_->in_flight.size();
}
MCPCORE_DECL void peer::close() noexcept { impl_->close_input(true); }
MCPCORE_DECL void peer::input_closed() noexcept { impl_->close_input(false); }

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_PEER_IPP
