// SPDX-License-Identifier: Apache-2.0
// The POST route of the HTTP endpoint: one exchange per JSON-RPC request with its state machine,
// the one admit-and-arm path (before dispatch for a call with a progress token, or on the upgrade
// of its first in-call message), the dispatch task, the SSE stream of a streamed answer (a pumped
// stream over a `post_pump`) and `initialize` (docs/http.md#processing-order-on-the-mcp-path,
// #post, docs/sessions.md#streamed-post). docs/http.md describes the behaviour.
#ifndef MCPCORE_IMPL_HTTP_POST_STREAM_IPP
#define MCPCORE_IMPL_HTTP_POST_STREAM_IPP

// The endpoint's state (`http_endpoint::impl`), its replies and the pumped stream.
#include <mcpcore/transport/impl/http_endpoint.ipp>

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/session/progress_bridge.hpp>
#include <mcpcore/session/session_registry.hpp>
#include <mcpcore/session/session_stream.hpp>
#include <mcpcore/session/stream_admission.hpp>
#include <mcpcore/session/stream_pump.hpp>
#include <mcpcore/session/stream_types.hpp>
#include <mcpcore/wire/accept.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>
#include <mcpcore/wire/sse.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

// ---- the exchange --------------------------------------------------------------------------------

/// Where a POST exchange stands (guarded by its `mutex`). The allowed transitions:
///
///     undecided --admit-and-arm--> streaming | record    before dispatch (a progress token), or the
///                                                        upgrade on the first in-call message
///     undecided --upgrade refused or degraded,
///                 or its stream not installed--> to_get
///     undecided --no upgrade possible (no session, or
///                 no SSE), before dispatch--> unrouted
///     undecided --the dispatch ended, or never ran--> unrouted
///     streaming --close_stream--> quiet
///
/// An admission before dispatch that degrades leaves the exchange `undecided` (the first in-call
/// message tries again). The plain JSON answer is owed by `finish` in every state but `streaming`
/// and `quiet`, whose answer is the SSE stream (delivered by whoever armed it).
enum class post_state : std::uint8_t {
  undecided,  ///< no in-call message yet: the first one admits and arms (the upgrade to SSE)
  unrouted,   ///< in-call messages have no channel (progress and logs dropped, requests fail)
  to_get,     ///< in-call messages go to the session's GET stream; the answer is plain JSON
  record,     ///< in-call messages go to the record (progress on GET); the answer is plain JSON
  streaming,  ///< the answer is the record's SSE stream
  quiet,      ///< streaming, ended early by close_stream; the record goes on, resumable on GET
};

struct http_post_exchange;

/// The exchange's `message_sink`: in-call messages, routed by the exchange's state.
class http_post_sink final : public message_sink {
 public:
  explicit http_post_sink(http_post_exchange& ex) noexcept : ex_(ex) {}
  bool send(std::string_view message) noexcept override;
  bool close_stream(std::chrono::milliseconds retry) noexcept override;

 private:
  http_post_exchange& ex_;
};

/// What `admit_and_arm_locked` leaves to its caller.
struct post_arming {
  /// Refused: nothing is reserved and the state is unchanged (still `undecided`).
  std::optional<stream_refusal> refusal;
  /// State `streaming`: the stream-budget slot of the SSE stream.
  stream_lease lease;
  /// State `streaming`: the POST's own channel in the session's ring and its priming marker.
  opened_channel channel;
};

/// What an upgrade leaves to do after unlocking.
struct post_upgrade {
  std::optional<stream_reject> refused;  ///< audited after unlocking
  std::optional<http_reply> reply;       ///< the SSE answer, delivered to `done` after unlocking
  http_completion done;
};

/// One POST request carrying a JSON-RPC request: its parsed message, its session, its progress
/// record and its one reply. Shared by the request path, the dispatch task and the SSE stream.
struct http_post_exchange;

/// Lets a handshake-era call that waits for its client give its thread back
/// (docs/eras.md#waiting-for-the-client): the exchange stays alive until the answer, which then
/// ends the POST as the dispatch task would have.
struct http_post_resumer final : call_resumer {
  explicit http_post_resumer(http_post_exchange& e) noexcept : ex(e) {}
  std::shared_ptr<void> suspend() noexcept override;
  bool post(std::function<void()> task) noexcept override;
  void finish(bool answered, std::string out) noexcept override;

  http_post_exchange& ex;
  /// Set by `suspend` on the dispatching thread, read by it after `server::handle` returned.
  bool suspended = false;
};

struct http_post_exchange {
  // Not noexcept: the document allocates (a bad_alloc here is handle's "allocation failure
  // before done was called", never std::terminate; docs/sessions.md#exception-boundaries).
  // The document comes from the endpoint's pool (docs/performance.md#reused-documents).
  explicit http_post_exchange(http_endpoint::impl& e);
  // A request path that left by an exception (allocation failure before the dispatch) gives its
  // request id back too; otherwise the session would refuse the id (409) for the rest of its life.
  ~http_post_exchange() { release_id(); }
  http_post_exchange(const http_post_exchange&) = delete;
  http_post_exchange& operator=(const http_post_exchange&) = delete;

  http_endpoint::impl& ep;
  pooled_document doc;  // declared before `msg`, which views it
  message msg;
  principal who;
  correlation_id cid;
  std::shared_ptr<session> sess;            // null: stateless
  // Keeps `sess` busy while the exchange lives (its call in flight, its SSE stream): a mint at the
  // per-principal cap never evicts it (docs/sessions.md#the-session-registry).
  session_hold hold;
  http_session_state* attached = nullptr;   // the session's attachment (alive with `sess`)
  request_id id{0};                         // the request's id (set before any use)
  std::optional<request_id> token;          // a valid `_meta.progressToken`
  // Whether `id` is in `attached->in_flight`: the exchange owns that claim and gives it back once.
  bool in_flight_claimed = false;
  // What the dispatch task hands to the dispatch core: set before the task is submitted (the
  // executor publishes them), never changed after.
  message_sink* dispatch_sink = nullptr;    // null: in-call messages have no channel
  progress_call* dispatch_call = nullptr;   // the record admitted before dispatch, if any (in `call`)
  http_post_sink sink{*this};
  http_post_resumer resumer{*this};
  // What the dispatch core reports of the call (a missing scope: docs/oauth.md#step-up).
  dispatch_report report;
  // Set by the request path before dispatch: the upgrade hands the exchange to its SSE stream.
  std::weak_ptr<http_post_exchange> self_weak;

  std::mutex mutex;  // above the bridge in the lock order; never held across a callback
  // Guarded by `mutex`:
  post_state state = post_state::undecided;
  http_completion done;                      // the one reply, until its owner (see post_state) takes it
  std::optional<progress_call> call;         // set in `record`, `streaming` and `quiet`
  std::chrono::milliseconds quiet_retry{0};  // `quiet`: the reconnection time close_stream asked for

  /// The one admit-and-arm path (docs/sessions.md#streamed-post-admission admission,
  /// docs/sessions.md#streamed-post-admission arm), under `mutex`, `undecided`: reserves the record
  /// (`streamed`: and a stream-budget slot), opens the POST's own channel in the session's ring
  /// (`streamed`: before the arm, so that its priming marker precedes every frame of the call; the
  /// arm ends it again if the record does not stream), arms the record and moves to `streaming`
  /// (the lease comes back for the SSE stream) or `record` (the lease goes back). Refused or
  /// degraded: still `undecided`, and the caller decides.
  post_arming admit_and_arm_locked(post_mode mode, const request_id& key);
  /// Under `mutex`: when `undecided`, the upgrade on an in-call message (admit-and-arm, streamed).
  post_upgrade upgrade_locked();
  /// After unlocking: the audit row of a refused upgrade, then its SSE reply.
  void finish_upgrade(post_upgrade& u);
  /// The end of the dispatch: the dispatch slot freed (`slot`: the task's, null from the resumer),
  /// the record's terminal, then the plain reply if it is still owed.
  void finish(bool returned, bool threw, std::string out, fair_slot* slot = nullptr) noexcept;
  /// The dispatch task, in the dispatch `slot` of the fair queues (the queue keeps the exchange
  /// alive until it returns).
  void run(fair_slot& slot) noexcept;
  /// Gives the request id back to the session (another POST may use it again).
  void release_id() noexcept {
    if (!in_flight_claimed || attached == nullptr) return;
    in_flight_claimed = false;
    const std::lock_guard<std::mutex> lock(attached->mutex);
    attached->in_flight.erase(id);
  }
};

// ---- the SSE stream ----------------------------------------------------------------------------

/// The priming event of a POST SSE stream (MCP 2025-11-25, SEP-1699): `id` (the stream's marker
/// in the session's ring: a resume cursor naming this stream), `retry`, one empty `data` line.
/// Without a marker (memory exhausted) the event has no `id`: the stream is not resumable, and
/// a client never resumes another stream with it.
inline void http_write_priming(std::string& out, std::uint64_t id, std::chrono::milliseconds retry) {
  sse::event e;
  e.id = id;
  e.retry = retry;
  sse::write_event(out, e);
}


/// What a streamed POST adds to the pumped stream: the priming event (and the `retry:` of a
/// close_stream), its registration with the endpoint (shutdown and a resuming GET close it), and
/// the exchange, which it keeps alive.
struct http_post_source {
  using pump_type = post_pump;

  std::shared_ptr<http_post_exchange> ex;
  opened_channel channel;       // the POST's channel in the session's ring, and its priming marker
  std::uint64_t key = 0;        // its entry in the endpoint's `post_sinks` (0: none)
  bool wrote_priming = false;
  bool wrote_quiet_retry = false;  // the `retry:` of close_stream went (once)

  [[nodiscard]] credential_verdict revalidate() const noexcept { return ex->ep.revalidate(ex->who); }
  [[nodiscard]] bool session_alive() const noexcept { return ex->ep.session_alive(*ex->sess); }
  // Until the priming event is written a pull is due at once.
  [[nodiscard]] bool primed() const noexcept { return wrote_priming; }
  void prelude(std::string& out) noexcept;
  static void pass(post_pump& pump, std::chrono::steady_clock::time_point now, std::string& out) noexcept {
    pump.pass(now, out);
  }
  void opened(const std::shared_ptr<stream_sink>& wake) {
    if (wake) ex->ep.register_post(key, wake, ex->sess.get(), channel.channel);
  }
  void closing() noexcept {
    if (key != 0) ex->ep.unregister_post(key);
  }
};

/// A POST answered as SSE: the priming event, then a `post_pump` over the call's record, woken by
/// the call's wake sink. Destroying it releases the pump (without a written final the record parks
/// for a GET resume).
using http_post_stream = http_pumped_stream<http_post_source>;

inline void http_post_source::prelude(std::string& out) noexcept {
  bool quiet = false;
  std::chrono::milliseconds quiet_retry{0};
  {
    const std::lock_guard<std::mutex> lock(ex->mutex);
    quiet = ex->state == post_state::quiet;
    quiet_retry = ex->quiet_retry;
  }
  const std::size_t mark = out.size();
  try {
    if (!wrote_priming) {
      http_write_priming(out, channel.priming_id,
                         quiet && quiet_retry.count() > 0 ? quiet_retry : ex->ep.options.sse_retry);
      wrote_priming = true;
      wrote_quiet_retry = quiet;
    } else if (quiet && !wrote_quiet_retry && quiet_retry.count() > 0) {
      // A block without data dispatches no event; its `retry:` still sets the reconnection time.
      out.append("retry: ").append(std::to_string(quiet_retry.count())).append("\n\n");
      wrote_quiet_retry = true;
    }
  } catch (...) {
    out.resize(mark);  // nothing half-written; the pump's pass still runs
  }
}

inline http_reply http_post_sse_reply(const std::shared_ptr<http_post_exchange>& ex, const progress_call& call,
                                      stream_lease lease, opened_channel channel) {
  http_endpoint::impl& ep = ex->ep;
  http_reply r;
  http_sse_head(r, ex->cid.view());
  r.stream = std::make_unique<http_post_stream>(
      ep.slots, http_post_source{ex, channel}, call.wake_sink(), call, std::move(lease), ep.clock->steady_now(),
      std::string{ex->cid.view()}, ep.options.post_stream,
      revalidation_grace::draw_jitter(ep.options.post_stream.revalidation.jitter_max), ep.m);
  return r;
}

// ---- admit and arm -------------------------------------------------------------------------------

inline post_arming http_post_exchange::admit_and_arm_locked(post_mode mode, const request_id& key) {
  post_arming out;
  post_admission a = admit_post(mode, ep.budget, *ep.bridge, sess, id, key, ep.m);
  if (!a.call) {
    out.refusal = a.refusal;  // refused (counted by admit_post), or degraded: plain
    return out;
  }
  const bool streamed = a.mode == post_mode::streamed;
  if (streamed) out.channel = sess->stream()->open_channel();
  const arm_outcome o =
      a.call->arm(streamed ? bridge_delivery::streamed : bridge_delivery::get_only, out.channel.channel);
  call = std::move(a.call);
  if (o == arm_outcome::streaming) {
    state = post_state::streaming;
    out.lease = std::move(a.lease);
  } else {
    state = post_state::record;  // GET-only: the POST answers plain JSON at the end
    a.lease.release();
  }
  return out;
}

inline post_upgrade http_post_exchange::upgrade_locked() {
  post_upgrade u;
  if (state != post_state::undecided) return u;
  const std::shared_ptr<http_post_exchange> self = self_weak.lock();
  if (!self) return u;
  post_arming armed = admit_and_arm_locked(post_mode::streamed, token.value_or(id));
  if (state == post_state::undecided) {
    // docs/sessions.md#streamed-post-admission refusal (audited after unlocking) or a degrade: the
    // messages go to the GET stream.
    if (armed.refusal) u.refused = armed.refusal->reason;
    state = post_state::to_get;
    return u;
  }
  if (state != post_state::streaming) return u;  // record: GET-only
  try {
    u.reply.emplace(http_post_sse_reply(self, *call, std::move(armed.lease), armed.channel));
  } catch (...) {
    // docs/sessions.md#streamed-post-admission: the stream could not be installed. Nothing was sent
    // yet, so the call is still answered plain; the record ends here (no frame of it was written)
    // and later messages go to the GET stream.
    ep.m.bridge_degrades[static_cast<std::size_t>(bridge_degrade::stream_install_failed)].inc();
    (void)call->complete_without_response();
    call.reset();
    state = post_state::to_get;
    return u;
  }
  u.done = std::exchange(done, nullptr);  // the SSE answer is the reply
  return u;
}

inline http_post_exchange::http_post_exchange(http_endpoint::impl& e) : ep(e), doc(e.documents) {}

inline void http_post_exchange::finish_upgrade(post_upgrade& u) {
  if (u.refused) ep.reject_row(to_string(*u.refused), sess->id(), who.id, cid.view(), true);
  if (u.reply) http_deliver(u.done, std::move(*u.reply));
}

// ---- in-call messages ----------------------------------------------------------------------------

inline bool http_post_sink::send(std::string_view message) noexcept {
  try {
    std::optional<progress_call> target;
    bool to_get = false;
    post_upgrade u;
    {
      const std::lock_guard<std::mutex> lock(ex_.mutex);
      u = ex_.upgrade_locked();
      switch (ex_.state) {
        case post_state::record:
        case post_state::streaming:
        case post_state::quiet: target = ex_.call; break;
        case post_state::to_get: to_get = true; break;
        case post_state::undecided:
        case post_state::unrouted: break;
      }
    }
    ex_.finish_upgrade(u);
    if (target) {
      // `message` returns false also when the frame is only latched (arming, or a projection in
      // flight), which is still a delivery.
      (void)target->message(message);
      return true;
    }
    if (to_get && ex_.sess) return ex_.sess->stream()->publish(message) != 0;
    return false;
  } catch (...) {
    return false;
  }
}

inline bool http_post_sink::close_stream(std::chrono::milliseconds retry) noexcept {
  try {
    std::shared_ptr<stream_sink> wake;
    post_upgrade u;
    {
      const std::lock_guard<std::mutex> lock(ex_.mutex);
      u = ex_.upgrade_locked();
      if (ex_.state == post_state::streaming && ex_.call) {
        ex_.state = post_state::quiet;
        ex_.quiet_retry = retry.count() > 0 ? retry : std::chrono::milliseconds{0};
        wake = ex_.call->wake_sink();
        // The messages still go to the record: once the POST is released the record parks, and its
        // later messages and its result are committed on this POST's channel, replayed to (and
        // live on) a GET resuming with the priming event's id.
      }
    }
    ex_.finish_upgrade(u);
    // `superseded` ends the POST without a close frame (the client resumes on GET); the record
    // parks when the stream is released, and its final goes to the resumed stream.
    return wake && wake->close(close_reason::superseded);
  } catch (...) {
    return false;
  }
}

// ---- the dispatch --------------------------------------------------------------------------------

inline void http_post_exchange::finish(bool returned, bool threw, std::string out, fair_slot* slot) noexcept {
  std::optional<progress_call> c;
  http_completion d;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (state == post_state::undecided) state = post_state::unrouted;  // no upgrade after the dispatch
    c = call;
    if (state != post_state::streaming && state != post_state::quiet) d = std::exchange(done, nullptr);
  }
  // The call is done: its dispatch slot is free before the client can see the answer and send
  // its next request (docs/sessions.md#fair-dispatch).
  if (slot != nullptr) slot->release();
  std::string execution_id;
  try {
    if (c) execution_id = c->execution_id();
  } catch (...) {  // NOLINT(bugprone-empty-catch): the failure reply then says null
  }
  // The record's terminal first: a streamed answer ends with its final
  // (docs/sessions.md#streamed-post).
  if (c) {
    try {
      if (threw) {
        std::string t;
        write_post_dispatch_failure(t, id, post_dispatch_failure::dispatch_threw, cid.view(), execution_id);
        (void)c->complete(std::move(t));
      } else if (!returned) {
        (void)c->complete_without_response();  // cancelled in-call: MCP sends no response
      } else if (c->detached()) {
        c->defer(out);  // the base of the final `finish` publishes
      } else {
        (void)c->complete(out);
      }
    } catch (...) {
      (void)c->complete_without_response();
    }
  }
  release_id();
  if (!d) return;
  http_reply r;
  try {
    if (threw) {
      std::string body;
      write_post_dispatch_failure(body, id, post_dispatch_failure::dispatch_threw, cid.view(), execution_id);
      r = http_json_body(500, std::move(body));
    } else if (!returned) {
      r = http_empty(202);  // cancelled: MCP sends no response, HTTP needs an answer
    } else if (!report.missing_scope.empty()) {
      r = http_insufficient_scope(std::move(out), who, report.missing_scope, ep.resource_doc);
    } else {
      r = http_json_body(200, std::move(out));
    }
  } catch (...) {
    // No memory for the answer: a bare 500 (no header, no body: nothing to allocate), so that the
    // request is still answered exactly once (docs/sessions.md#exception-boundaries).
    r = http_reply{};
    r.head.status = 500;
  }
  try {
    http_deliver(d, std::move(r));
  } catch (...) {  // NOLINT(bugprone-empty-catch): the transport's completion threw; nothing more to do
  }
}

inline void http_post_exchange::run(fair_slot& slot) noexcept {
  std::string out;
  bool returned = false;
  bool threw = false;
  try {
    out.reserve(http_initial_answer_bytes);
    const dispatch_context ctx{who,
                               attached != nullptr ? &attached->client : nullptr,
                               dispatch_sink,
                               {},
                               dispatch_call,
                               nullptr,
                               &report,
                               &resumer,
                               ep.background_for_tasks(),
                               attached != nullptr ? attached->tasks : nullptr,
                               // docs/tasks.md#input: the session's peer, owned with its state
                               attached != nullptr ? std::shared_ptr<peer>(sess->attachment(), &attached->client)
                                                   : nullptr};
    returned = ep.srv.handle(msg, ctx, out);
  } catch (...) {
    threw = true;
  }
  // A suspended call answers through the resumer's `finish` (perhaps already did).
  if (resumer.suspended && !threw) return;
  finish(returned, threw, std::move(out), &slot);
}

inline std::shared_ptr<void> http_post_resumer::suspend() noexcept {
  std::shared_ptr<http_post_exchange> keep = ex.self_weak.lock();
  suspended = keep != nullptr;
  return keep;
}

inline bool http_post_resumer::post(std::function<void()> task) noexcept {
  try {
    return ex.ep.submit(std::move(task));
  } catch (...) {
    return false;
  }
}

inline void http_post_resumer::finish(bool answered, std::string out) noexcept {
  ex.finish(answered, false, std::move(out));
}

// ---- the request path ----------------------------------------------------------------------------

/// Media types, before parsing (handle_mcp has checked the body's size); false when answered.
/// `accept` gets the joined `Accept` fields.
inline bool http_post_preflight(const http_request_view& req, std::string_view cid, http_completion& done,
                                http_field_value& accept) {
  const auto content_type = req.header("Content-Type");
  if (!content_type || !http_content_type_is_json(*content_type)) {
    http_deliver(done, http_error(refusal::content_type, std::nullopt, cid));
    return false;
  }
  accept = http_joined(req, "Accept");
  if (accept && !http_trim(*accept).empty() && !accept_wants_json(*accept) && !accept_wants_sse(*accept) &&
      !accept_lists(*accept, "*/*") && !accept_lists(*accept, "application/*") && !accept_lists(*accept, "text/*")) {
    http_deliver(done, http_error(refusal::accept, std::nullopt, cid));
    return false;
  }
  return true;
}

/// The era of a POST, decided once from its body (docs/eras.md#classification): a message whose
/// `params._meta` claims the per-request era goes to that era's route; a header naming a
/// per-request revision without the claim is refused; an unsupported handshake revision is
/// refused; the handshake era's route goes on (true) unless the endpoint serves only the other.
inline bool http_post_era(http_endpoint::impl& ep, const http_request_view& req,
                          const std::shared_ptr<http_post_exchange>& ex, const http_field_value& accept,
                          const std::optional<request_id_view>& echo, http_completion& done) {
  const message& msg = ex->msg;
  if (claims_per_request_era(msg)) {
    ep.handle_post_per_request(req, ex, accept && accept_wants_sse(*accept), done);
    return false;
  }
  const bool is_request = msg.kind == message_kind::request;
  const std::optional<std::string_view> header = req.header("MCP-Protocol-Version");
  const std::string_view version = header ? http_trim(*header) : std::string_view{};
  if (header && !is_supported_protocol_version(version)) {
    if (names_per_request_era(version)) {
      if (!is_request) {
        http_deliver(done, http_empty(202));  // a per-request notification changes nothing
        return false;
      }
      std::string body;
      write_missing_envelope(body, echo, version, msg.params["_meta"].exists(), ex->cid.view());
      http_deliver(done, http_json_body(400, std::move(body)));
      return false;
    }
    if (ep.options.sessions) {
      ep.reject_row(to_string(stream_reject::protocol_version), {}, ex->who.id, ex->cid.view());
      http_deliver(done, http_error(refusal::protocol_version, echo, ex->cid.view()));
      return false;
    }
  }
  if (serves(ep.options.eras, protocol_era::handshake)) return true;
  if (!is_request) {
    http_deliver(done, http_empty(202));
    return false;
  }
  // docs/eras.md#choosing-the-eras: only the per-request era is served.
  std::string_view requested = version;
  if (msg.method == "initialize" && msg.params["protocolVersion"].is_string()) {
    requested = msg.params["protocolVersion"].as_string();
  }
  std::string body;
  write_unsupported_revision(body, echo, per_request_protocol_versions, requested, ex->cid.view());
  http_deliver(done, http_json_body(400, std::move(body)));
  return false;
}

/// The session (docs/http.md#processing-order-on-the-mcp-path): before the notification branch, so
/// a notification on a dead session is 404, never 202. `initialize` ignores any header (no
/// fixation). False when answered.
inline bool http_post_session(http_endpoint::impl& ep, const http_request_view& req, http_post_exchange& ex,
                              bool is_init, const std::optional<request_id_view>& echo, http_completion& done) {
  if (!ep.options.sessions || is_init) return true;
  const std::string_view cid = ex.cid.view();
  if (const auto sid = req.header(http_session_header)) {
    ex.sess = ep.registry->validate_and_touch(*sid, ex.who.id, ex.hold);
    if (!ex.sess) {
      ep.reject_row(to_string(stream_reject::unknown_session), *sid, ex.who.id, cid);
      http_deliver(done, http_refusal(get_refusal(stream_reject::unknown_session), echo, cid));
      return false;
    }
    ex.attached = static_cast<http_session_state*>(ex.sess->attachment().get());
  } else if (ep.options.require_session) {
    ep.reject_row(to_string(stream_reject::missing_session_header), {}, ex.who.id, cid);
    http_deliver(done, http_refusal(get_refusal(stream_reject::missing_session_header), echo, cid));
    return false;
  }
  return true;
}

/// Notifications and client responses: dispatched, answered 202 with no body
/// (docs/http.md#processing-order-on-the-mcp-path).
inline void http_post_notification(http_endpoint::impl& ep, const http_post_exchange& ex, http_completion& done) {
  const message& msg = ex.msg;
  if (msg.kind == message_kind::notification && msg.method == "notifications/cancelled" && ex.sess) {
    // docs/sessions.md#cancellation: the bridge withdraws the streamed response, the dispatch core
    // stops the handler; both, in this order, whatever either finds.
    if (const auto rid = http_id_of(msg.params["requestId"])) (void)ep.bridge->cancel(ex.sess->id(), *rid);
  }
  const dispatch_context ctx{ex.who, ex.attached != nullptr ? &ex.attached->client : nullptr, nullptr, {}, nullptr};
  std::string ignored;
  try {
    (void)ep.srv.handle(msg, ctx, ignored);
  } catch (...) {  // NOLINT(bugprone-empty-catch): a notification is never answered
  }
  http_deliver(done, http_empty(202));
}

/// A reused in-flight id on the session is refused 409 (docs/sessions.md#streamed-post-admission);
/// false when answered.
inline bool http_claim_request_id(http_endpoint::impl& ep, http_post_exchange& ex,
                                  const std::optional<request_id_view>& echo, http_completion& done) {
  if (ex.attached == nullptr) return true;
  bool claimed = false;
  {
    const std::lock_guard<std::mutex> lock(ex.attached->mutex);
    claimed = ex.attached->in_flight.insert(ex.id).second;
  }
  if (claimed) {
    ex.in_flight_claimed = true;
    return true;
  }
  ep.count_reject(stream_reject::post_duplicate_request_id);
  ep.reject_row(to_string(stream_reject::post_duplicate_request_id), ex.sess->id(), ex.who.id, ex.cid.view(), true);
  http_deliver(done, http_refusal(stream_refusal_for(refusal::in_flight_duplicate,
                                                     stream_reject::post_duplicate_request_id),
                                  echo, ex.cid.view()));
  return false;
}

/// A `tools/call` with a progress token is admitted before dispatch
/// (docs/sessions.md#streamed-post-admission) on the one admit-and-arm path; a refusal is answered
/// here and nothing is dispatched (false).
inline bool http_admit_before_dispatch(http_endpoint::impl& ep, http_post_exchange& ex, json::value token_value,
                                       bool accepts_sse, const std::optional<request_id_view>& echo,
                                       post_arming& armed, http_completion& done) {
  if (!ep.options.sessions || !ex.sess || ex.msg.method != "tools/call" || !ex.token) return true;
  post_mode_inputs in;
  in.bridge_available = true;
  in.has_session = true;
  in.progress_token = token_value;
  in.accepts_sse = accepts_sse;
  in.streamed_post_enabled = ep.options.streamed_post;  // already folded into accepts_sse
  const post_mode mode = choose_post_mode(in);
  if (mode == post_mode::plain) return true;
  {
    const std::lock_guard<std::mutex> lock(ex.mutex);  // uncontended: the exchange is not shared yet
    armed = ex.admit_and_arm_locked(mode, *ex.token);
  }
  if (!armed.refusal) return true;
  ex.release_id();
  ep.reject_row(to_string(armed.refusal->reason), ex.sess->id(), ex.who.id, ex.cid.view(), true);
  http_deliver(done, http_refusal(*armed.refusal, echo, ex.cid.view()));
  return false;
}

/// The SSE answer of a call admitted streaming before dispatch, sent once the task was taken
/// (docs/sessions.md#streamed-post-admission: frames the task produced meanwhile are in the
/// record).
inline void http_reply_streamed(http_endpoint::impl& ep, const std::shared_ptr<http_post_exchange>& ex,
                                progress_call& streamed, post_arming armed) {
  http_completion reply_to;
  {
    const std::lock_guard<std::mutex> lock(ex->mutex);
    reply_to = std::exchange(ex->done, nullptr);
  }
  std::optional<http_reply> sse;
  try {
    sse.emplace(http_post_sse_reply(ex, streamed, std::move(armed.lease), armed.channel));
  } catch (...) {  // NOLINT(bugprone-empty-catch): answered below
  }
  if (sse) {
    http_deliver(reply_to, std::move(*sse));
    return;
  }
  // docs/sessions.md#streamed-post-admission: dispatched, but the stream could not be installed.
  // The record parks (its final stays resumable on GET) and the answer says the work is running.
  ep.m.bridge_degrades[static_cast<std::size_t>(bridge_degrade::stream_install_failed)].inc();
  streamed.on_post_closed();
  http_reply failed = http_empty(500);
  try {
    std::string body;
    write_post_dispatch_failure(body, ex->id, post_dispatch_failure::stream_install_failed, ex->cid.view(),
                                streamed.execution_id());
    failed = http_json_body(500, std::move(body));
  } catch (...) {  // NOLINT(bugprone-empty-catch): the bare 500 still goes
  }
  http_deliver(reply_to, std::move(failed));
}

/// Hands the call to the executor, then answers what the request path owes: 503 when the executor
/// refused the task, the SSE answer of a call admitted streaming before dispatch.
inline void http_dispatch_post(http_endpoint::impl& ep, const std::shared_ptr<http_post_exchange>& ex,
                               bool accepts_sse, post_arming armed, const std::optional<request_id_view>& echo,
                               http_completion& done) {
  std::optional<progress_call> streamed;  // admitted streaming: the SSE answer goes from here
  {
    const std::lock_guard<std::mutex> lock(ex->mutex);
    // Without a session or SSE the answer cannot upgrade: unless a record was admitted, in-call
    // messages have no channel (progress and logs dropped, requests to the client `no_channel`).
    if (ex->state == post_state::undecided && !(ex->sess && accepts_sse)) ex->state = post_state::unrouted;
    ex->dispatch_sink = ex->state != post_state::unrouted ? &ex->sink : nullptr;
    if (std::optional<progress_call>& c = ex->call; c) {
      ex->dispatch_call = &*c;
      if (ex->state == post_state::streaming) streamed = *c;
    }
    // The reply goes to the exchange; while `streaming` the task never takes it, and the SSE
    // answer below takes it back.
    ex->done = std::move(done);
  }
  // docs/sessions.md#fair-dispatch: round-robin between principals, capped per principal.
  fair_submit submitted = fair_submit::busy;
  try {
    // The closure is one raw pointer (held without allocating); the queue keeps `ex` alive.
    submitted = ep.submit_fair(ex->who.id, [raw = ex.get()](fair_slot& slot) { raw->run(slot); }, ex);
  } catch (...) {
    // No memory for the task itself: nothing ran. The admission is undone (the record ends
    // without a response, releasing its charge; the lease and the id go back as this unwinds)
    // and the allocation failure propagates before `done` was called
    // (docs/sessions.md#exception-boundaries).
    if (std::optional<progress_call>& c = ex->call) (void)c->complete_without_response();
    ex->release_id();
    throw;
  }
  if (submitted != fair_submit::taken) {
    // A full executor, or the caller's dispatch cap: nothing ran. The record (if any) ends
    // without a response.
    if (std::optional<progress_call>& c = ex->call) (void)c->complete_without_response();
    armed.lease.release();
    ex->release_id();
    http_completion d;
    {
      const std::lock_guard<std::mutex> lock(ex->mutex);
      if (ex->state == post_state::undecided) ex->state = post_state::unrouted;
      d = std::exchange(ex->done, nullptr);
    }
    if (submitted == fair_submit::principal_cap) ep.m.dispatch_principal_cap.inc();
    http_deliver(d, http_error(submitted == fair_submit::principal_cap ? refusal::principal_busy : refusal::busy, echo,
                               ex->cid.view()));
    return;
  }
  if (streamed) http_reply_streamed(ep, ex, *streamed, std::move(armed));
}

}  // namespace detail

// ---- the POST route ------------------------------------------------------------------------------

inline void http_endpoint::impl::handle_post(const http_request_view& req, const principal& who,
                                             const correlation_id& cid, http_completion& done) {
  detail::http_field_value accept;
  if (!detail::http_post_preflight(req, cid.view(), done, accept)) return;

  auto ex = std::make_shared<detail::http_post_exchange>(*this);
  ex->who = who;
  ex->cid = cid;
  ex->self_weak = ex;
  {
    auto parsed = parse_message(ex->doc.for_text(req.body.size()), req.body);
    if (!parsed) {
      std::string body;
      write_error_response(body, parsed.error(), cid.view());
      detail::http_deliver(done, detail::http_json_body(200, std::move(body)));
      return;
    }
    ex->msg = *parsed;
  }
  const message& msg = ex->msg;
  const bool is_init = msg.kind == message_kind::request && msg.method == "initialize";
  const std::optional<request_id_view> echo =
      msg.kind == message_kind::request ? msg.id : std::optional<request_id_view>{};
  if (!detail::http_post_era(*this, req, ex, accept, echo, done)) return;
  if (!detail::http_post_session(*this, req, *ex, is_init, echo, done)) return;
  if (msg.kind != message_kind::request || !msg.id) {  // (a request always has an id)
    detail::http_post_notification(*this, *ex, done);
    return;
  }
  ex->id = request_id{*msg.id};
  if (is_init && options.sessions) {
    handle_initialize(ex, done);
    return;
  }
  if (!detail::http_claim_request_id(*this, *ex, echo, done)) return;
  // `streamed_post` off: no POST is ever answered as SSE (progress goes GET-only).
  const bool accepts_sse = accept && accept_wants_sse(*accept) && options.streamed_post;
  const json::value token_value = msg.params["_meta"]["progressToken"];
  ex->token = progress_token_of(token_value);
  detail::post_arming armed;
  if (!detail::http_admit_before_dispatch(*this, *ex, token_value, accepts_sse, echo, armed, done)) return;
  detail::http_dispatch_post(*this, ex, accepts_sse, std::move(armed), echo, done);
}

inline void http_endpoint::impl::handle_initialize(const std::shared_ptr<detail::http_post_exchange>& ex,
                                                   http_completion& done) {
  using detail::http_deliver;
  using detail::refusal;
  const std::string_view cid = ex->cid.view();
  const std::optional<request_id_view> echo = ex->msg.id;
  // docs/http.md#post: every initialize mints a fresh session bound to the caller.
  auto state = std::make_shared<detail::http_session_state>();
  auto minted = registry->mint(ex->who.id, cid, state);
  if (!minted) {
    switch (minted.error()) {
      case session_reject::shutdown:
        http_deliver(done, detail::http_error(refusal::shutting_down, echo, cid));
        return;
      case session_reject::global_cap:
      case session_reject::per_principal_cap:
        http_deliver(done, detail::http_error(refusal::session_cap, echo, cid, to_string(minted.error())));
        return;
      case session_reject::id_generation:
        break;
    }
    http_deliver(done, detail::http_error(refusal::mint_failed, echo, cid));
    return;
  }
  const std::shared_ptr<session> s = std::move(*minted);
  state->tasks->bind(s->stream());  // docs/tasks.md#notifications
  std::string out;
  bool answered = false;
  try {
    const dispatch_context ctx{ex->who, &state->client, nullptr, {}, nullptr};
    answered = srv.handle(ex->msg, ctx, out);
  } catch (...) {
    answered = false;
    out.clear();
  }
  if (!answered || state->client.protocol_version().empty()) {
    // The dispatch core refused (bad params, its own shutdown): no session survives it.
    (void)registry->terminate(s->id(), s->principal_id(), detail::http_initialize_failed_reason, cid);
    if (out.empty()) {
      std::string body;
      write_post_dispatch_failure(body, ex->id, post_dispatch_failure::dispatch_threw, cid, {});
      http_deliver(done, detail::http_json_body(500, std::move(body)));
      return;
    }
    int status = 200;
    json::document doc;
    if (auto root = doc.parse(out); root && (*root)["error"]["code"].to_int64() == static_cast<std::int64_t>(errc::shutting_down)) {
      status = 503;
    }
    http_deliver(done, detail::http_json_body(status, std::move(out)));
    return;
  }
  http_reply r;
  try {
    r = detail::http_json_body(200, std::move(out));
    detail::http_add(r, detail::http_session_header, s->id());
  } catch (...) {
    // No memory for the answer: the client would never learn the session's id, so the session
    // does not survive (docs/sessions.md#exception-boundaries); the allocation failure propagates
    // before `done`.
    (void)registry->terminate(s->id(), s->principal_id(), detail::http_initialize_failed_reason, cid);
    throw;
  }
  http_deliver(done, std::move(r));
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_HTTP_POST_STREAM_IPP
