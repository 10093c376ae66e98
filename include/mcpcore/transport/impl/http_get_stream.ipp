// SPDX-License-Identifier: Apache-2.0
// The GET route of the HTTP endpoint: the session's stream, a pumped stream over a `get_pump`
// (docs/http.md#get-sessions-on, docs/sessions.md#sse-frames, #get-attach-replay-resume, #takeover,
// #the-get-pump, #credential-re-validation, #close-reasons). docs/http.md describes the behaviour.
#ifndef MCPCORE_IMPL_HTTP_GET_STREAM_IPP
#define MCPCORE_IMPL_HTTP_GET_STREAM_IPP

// The endpoint's state (`http_endpoint::impl`) and the pumped stream.
#include <mcpcore/transport/impl/http_endpoint.ipp>

#include <mcpcore/session/session_registry.hpp>
#include <mcpcore/session/session_stream.hpp>
#include <mcpcore/session/stream_admission.hpp>
#include <mcpcore/session/stream_pump.hpp>
#include <mcpcore/session/stream_types.hpp>
#include <mcpcore/wire/accept.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

/// What a GET stream adds to the pumped stream: its session and caller, checked once per tick.
struct http_get_source {
  using pump_type = get_pump;

  http_endpoint::impl* ep;
  std::shared_ptr<session> sess;
  principal who;
  // Keeps `sess` busy while the stream is open: a mint at the per-principal cap never evicts it
  // (docs/sessions.md#the-session-registry).
  session_hold hold;

  [[nodiscard]] credential_verdict revalidate() const noexcept { return ep->revalidate(who); }
  [[nodiscard]] bool session_alive() const noexcept { return ep->session_alive(*sess); }
  [[nodiscard]] static bool primed() noexcept { return true; }
  static void prelude(std::string& /*out*/) noexcept {}
  static void pass(get_pump& pump, std::chrono::steady_clock::time_point /*now*/, std::string& out) noexcept {
    pump.pass(out);
  }
  static void opened(const std::shared_ptr<stream_sink>& /*wake*/) noexcept {}
  static void closing() noexcept {}
};

/// A session's GET stream: a `get_pump` over the attached sink, which is also the wake sink.
using http_get_stream = http_pumped_stream<http_get_source>;

}  // namespace detail

inline void http_endpoint::impl::handle_get(const http_request_view& req, const principal& who,
                                            const correlation_id& cid, http_completion& done) {
  using detail::http_deliver;
  // docs/http.md#get-sessions-on.
  const auto refuse = [&](stream_reject reason, std::string_view sid) {
    count_reject(reason);
    reject_row(to_string(reason), sid, who.id, cid.view());
    http_deliver(done, detail::http_refusal(get_refusal(reason), std::nullopt, cid.view()));
  };
  const auto sid = req.header(detail::http_session_header);
  if (!sid) {
    refuse(stream_reject::missing_session_header, {});
    return;
  }
  session_hold hold;
  std::shared_ptr<session> s = registry->validate_and_touch(*sid, who.id, hold);
  if (!s) {
    refuse(stream_reject::unknown_session, *sid);
    return;
  }
  const detail::http_field_value accept = detail::http_joined(req, "Accept");
  if (!accept || !accept_wants_sse(*accept)) {
    refuse(stream_reject::not_acceptable, *sid);
    return;
  }
  // docs/design.md#other-wire-pieces: strict cursor, attach with the gap rule (a gap ends the
  // session).
  const std::string_view last = detail::http_trim(req.header("Last-Event-ID").value_or(std::string_view{}));
  get_attach a = attach_get(*registry, s, last, budget, cid.view(), m);
  if (a.refusal) {
    reject_row(to_string(a.refusal->reason), *sid, who.id, cid.view());
    http_deliver(done, detail::http_refusal(*a.refusal, std::nullopt, cid.view()));
    return;
  }
  http_reply r;
  detail::http_sse_head(r, cid.view());
  r.stream = std::make_unique<detail::http_get_stream>(
      slots, detail::http_get_source{this, s, who, std::move(hold)}, a.attached.sink, s->stream(), a.attached.sink,
      a.attached.generation, clock->steady_now(), std::string{cid.view()}, options.get_stream,
      revalidation_grace::draw_jitter(options.get_stream.revalidation.jitter_max), m);
  // A resumed POST stream whose POST answer is still streaming (the client reconnected before the
  // server saw the old connection go): MCP sends a message on one stream only, so that answer ends
  // now, quietly (`superseded`: no close frame, as after close_stream) and the call's later frames
  // and its result reach this GET alone.
  try {
    for (const auto& wake : posts_on(*s, a.attached.channel)) (void)wake->close(close_reason::superseded);
  } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory; the old answer then ends on its own
  }
  http_deliver(done, std::move(r));
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_HTTP_GET_STREAM_IPP
