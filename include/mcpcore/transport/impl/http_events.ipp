// SPDX-License-Identifier: Apache-2.0
// The server's events on the handshake era's sessions (docs/http.md#server-notifications): the
// endpoint subscribes to its server once, and each event becomes one notification on the GET
// stream of the sessions that should get it, through the session's ring so that it is replayable
// like every GET-stream message. The per-request era's `subscriptions/listen` streams subscribe on
// their own (http_per_request.ipp).
#ifndef MCPCORE_IMPL_HTTP_EVENTS_IPP
#define MCPCORE_IMPL_HTTP_EVENTS_IPP

// The endpoint's state (`http_endpoint::impl`, `http_session_state`).
#include <mcpcore/transport/impl/http_endpoint.ipp>

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/session/session_registry.hpp>
#include <mcpcore/session/session_stream.hpp>

#include <memory>
#include <string>

MCPCORE_BEGIN_NAMESPACE
namespace detail {

/// One event, on the publishing thread (it must not block: `server::subscribe`). `resource_updated`
/// goes to the sessions whose peer subscribed to the URI; a list change goes to every initialized
/// session, when the server advertises `listChanged` (`server_options::list_changed`). Each is
/// published on the session's GET channel: live to an attached GET stream, and kept in the ring
/// for a resume (bounded by the ring; a session without a GET stream gets it on a resume only).
inline void http_deliver_event(http_endpoint::impl& ep, const server_event& ev) noexcept {
  try {
    if (ev.kind == server_event_kind::task_status) return;  // a listen's only (docs/tasks.md#notifications)
    const bool updated = ev.kind == server_event_kind::resource_updated;
    if (!updated && !ep.srv.options().list_changed) return;
    const std::string line = event_notification(ev);
    for (const std::shared_ptr<session>& s : ep.registry->live()) {
      const auto* st = static_cast<const http_session_state*>(s->attachment().get());
      if (st == nullptr) continue;
      if (updated ? !st->client.subscribed(ev.uri) : !st->client.initialized()) continue;
      (void)s->stream()->publish(line);  // a failure is counted by the stream
    }
  } catch (...) {  // NOLINT(bugprone-empty-catch): no memory for this event; the next one tries again
  }
}

}  // namespace detail
MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_HTTP_EVENTS_IPP
