// SPDX-License-Identifier: Apache-2.0
// The per-request era on the HTTP endpoint (docs/eras.md): the checks of a POST that claims it
// (envelope, headers, revision), its dispatch without a session, and its answer: JSON, or an SSE
// stream that opens on the call's first in-call message and carries the messages, then the
// result. No priming event, no event ids, no resumption: closing the stream cancels the call.
#ifndef MCPCORE_IMPL_HTTP_PER_REQUEST_IPP
#define MCPCORE_IMPL_HTTP_PER_REQUEST_IPP

#include <mcpcore/transport/impl/http_post_stream.ipp>
#include <mcpcore/transport/impl/listen_frames.ipp>

#include <mcpcore/detail/ascii.hpp>
#include <mcpcore/detail/base64.hpp>
#include <mcpcore/dispatch/operation.hpp>
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/session/impl/progress_bridge.ipp>
#include <mcpcore/session/stream_admission.hpp>
#include <mcpcore/wire/accept.hpp>
#include <mcpcore/wire/era.hpp>
#include <mcpcore/wire/sse.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

/// The budget surface of the per-request era's streams.
inline constexpr std::string_view per_request_surface = "per_request";

/// What one per-request call and its SSE stream share (guarded by `mutex`, a leaf).
struct per_request_channel {
  std::mutex mutex;
  /// Frames not yet pulled by the transport.
  std::string pending;
  /// The final frame (the result or error) is in `pending` or was pulled: the stream ends once it
  /// is written.
  bool final_queued = false;
  /// The stream ended before the final (the client left, shutdown): nothing more is queued.
  bool closed = false;
  /// The transport's waker, once the stream is delivered.
  std::shared_ptr<const std::function<void()>> waker;
  /// Requested when the stream closes before its final: the handler's stop token fires
  /// (docs/eras.md#streams: closing the stream is cancellation).
  std::stop_source stop;
  /// A listen stream's graceful end (its result), sent at shutdown instead of a bare close.
  std::string final_on_shutdown;

  /// Appends one frame; false when the stream is closed. Wakes the transport.
  bool push(std::string_view json, bool final) {
    std::shared_ptr<const std::function<void()>> w;
    {
      const std::lock_guard<std::mutex> lock(mutex);
      if (closed || final_queued) return false;
      sse::write_event(pending, sse::event{0, "message", json, std::nullopt});
      final_queued = final;
      w = waker;
    }
    if (w && *w) (*w)();
    return true;
  }
  /// Ends the stream without its final and cancels the call.
  void close() noexcept {
    std::shared_ptr<const std::function<void()>> w;
    {
      const std::lock_guard<std::mutex> lock(mutex);
      if (closed) return;
      closed = true;
      w = waker;
    }
    stop.request_stop();
    if (w && *w) {
      try {
        (*w)();
      } catch (...) {  // NOLINT(bugprone-empty-catch): the pull bounded by wait_time finds it closed
      }
    }
  }
};

/// The SSE answer of a per-request call.
class http_per_request_stream final : public http_stream {
 public:
  http_per_request_stream(std::shared_ptr<per_request_channel> channel, stream_lease lease,
                          std::chrono::milliseconds keepalive, std::function<void()> on_end)
      : ch_(std::move(channel)), lease_(std::move(lease)), keepalive_(keepalive), on_end_(std::move(on_end)),
        last_(std::chrono::steady_clock::now()) {}
  ~http_per_request_stream() override {
    if (!finished_) ch_->close();  // the client left, or the transport gave up: cancel the call
    if (on_end_) on_end_();
  }
  http_per_request_stream(const http_per_request_stream&) = delete;
  http_per_request_stream& operator=(const http_per_request_stream&) = delete;

  void on_ready(std::function<void()> waker) override {
    auto w = std::make_shared<const std::function<void()>>(std::move(waker));
    const std::lock_guard<std::mutex> lock(ch_->mutex);
    ch_->waker = std::move(w);
  }
  void pull(std::chrono::steady_clock::time_point now, std::string& out) noexcept override {
    if (finished_) return;
    const std::lock_guard<std::mutex> lock(ch_->mutex);
    if (ch_->closed) {
      finished_ = true;
      return;
    }
    if (!ch_->pending.empty()) {
      out += ch_->pending;
      ch_->pending.clear();
      last_ = now;
    } else if (!ch_->final_queued && now - last_ >= keepalive_ && keepalive_.count() > 0) {
      sse::write_comment(out, "keepalive");
      last_ = now;
    }
    final_in_flight_ = ch_->final_queued;
  }
  [[nodiscard]] std::chrono::milliseconds wait_time(std::chrono::steady_clock::time_point now) const noexcept override {
    const std::lock_guard<std::mutex> lock(ch_->mutex);
    if (finished_ || ch_->closed || !ch_->pending.empty() || (ch_->final_queued && !final_in_flight_)) {
      return std::chrono::milliseconds{0};
    }
    if (keepalive_.count() <= 0) return std::chrono::hours{1};
    const auto due = std::chrono::duration_cast<std::chrono::milliseconds>(last_ + keepalive_ - now);
    return due.count() > 0 ? due : std::chrono::milliseconds{0};
  }
  void written() noexcept override {
    if (final_in_flight_) finished_ = true;
  }
  void write_failed() noexcept override {
    ch_->close();
    finished_ = true;
  }
  [[nodiscard]] bool finished() const noexcept override { return finished_; }
  void close(close_reason /*reason*/) noexcept override { ch_->close(); }

 private:
  std::shared_ptr<per_request_channel> ch_;
  stream_lease lease_;
  std::chrono::milliseconds keepalive_;
  std::function<void()> on_end_;
  std::chrono::steady_clock::time_point last_;
  bool final_in_flight_ = false;  // the last pull took the final frame
  bool finished_ = false;         // the transport's thread only
};

/// One POST of the per-request era: the parsed request (kept alive by `base`), its envelope,
/// and its one answer.
struct per_request_call;

/// The call's in-call messages: the first one turns the answer into an SSE stream.
struct per_request_sink final : message_sink {
  explicit per_request_sink(per_request_call& c) noexcept : call(c) {}
  bool send(std::string_view message) noexcept override;
  per_request_call& call;
};

/// Detached work of a per-request call (docs/eras.md#detached-work): its progress frames and its
/// final go onto the call's SSE stream, which stays open after the call returned until the
/// terminal. The final is the JSON-RPC response to the call with the terminal's complete result
/// (as on a session, docs/sessions.md#projection-and-finals). Shared by every `operation_handle`
/// of the call; the last one gone without a terminal ends the stream with a -32014 "terminal
/// unavailable" error, so no client waits for a final that cannot come.
class per_request_operation final : public operation_link {
 public:
  per_request_operation(std::shared_ptr<per_request_channel> channel, request_id id, request_id token,
                        std::string execution_id, bool legacy_members)
      : ch_(std::move(channel)),
        id_(std::move(id)),
        token_(std::move(token)),
        execution_id_(std::move(execution_id)),
        legacy_(legacy_members) {}
  ~per_request_operation() {
    bool unfinished = false;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      unfinished = !finished_ && based_;
    }
    if (!unfinished) return;
    try {
      (void)ch_->push(bridge_unavailable_final(id_, execution_id_, std::chrono::system_clock::now()), true);
    } catch (...) {
      ch_->close();  // no memory for the error: the stream ends without it
    }
  }
  per_request_operation(const per_request_operation&) = delete;
  per_request_operation& operator=(const per_request_operation&) = delete;

  // Same rules as a session's record (docs/concepts/operation_source.md): no meaningful total
  // skips, progress past the total is clamped, and only a value above the last one sent goes.
  bool progress(double progress, std::optional<double> total, std::string_view message) override {
    if (!std::isfinite(progress) || (total && (!std::isfinite(*total) || *total <= 0))) return false;
    if (total && progress > *total) progress = *total;
    bridge_snapshot snap;
    snap.progress = progress;
    snap.total = total;
    snap.message.assign(message);
    const std::lock_guard<std::mutex> lock(mutex_);
    if (finished_ || (watermark_ && !(progress > *watermark_))) return false;
    if (!ch_->push(bridge_progress_frame(token_, snap, execution_id_), false)) return false;
    watermark_ = progress;
    return true;
  }
  bool finish(operation_final final) override {
    std::string text = bridge_final_response(id_, final, execution_id_, legacy_);  // before anything changes
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (finished_) return false;
      finished_ = true;
      if (!based_) {
        early_ = std::move(text);  // published when the call returns, after its own messages
        return true;
      }
    }
    if (!ch_->push(text, true)) ch_->close();
    return true;
  }
  /// The call returned its provisional response (replaced by the final; published now if
  /// `finish` came first).
  void defer() {
    std::optional<std::string> text;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (based_) return;
      based_ = true;
      text = std::move(early_);
      early_.reset();
    }
    if (text && !ch_->push(*text, true)) ch_->close();
  }

 private:
  std::shared_ptr<per_request_channel> ch_;
  const request_id id_;
  const request_id token_;
  const std::string execution_id_;
  const bool legacy_;  // progress_bridge_options::legacy_final_members
  std::mutex mutex_;   // a leaf above the channel's mutex
  std::optional<std::string> early_;  // the final of a terminal that came before the call returned
  std::optional<double> watermark_;
  bool based_ = false;  // the call returned
  bool finished_ = false;
};

struct per_request_call final : call_link {
  per_request_call(http_endpoint::impl& e, std::shared_ptr<http_post_exchange> b, request_envelope env, bool sse)
      : ep(e), base(std::move(b)), envelope(env), accepts_sse(sse), channel(std::make_shared<per_request_channel>()) {}
  per_request_call(const per_request_call&) = delete;
  per_request_call& operator=(const per_request_call&) = delete;
  ~per_request_call() = default;

  http_endpoint::impl& ep;
  std::shared_ptr<http_post_exchange> base;  // the document the message and envelope view
  request_envelope envelope;
  const bool accepts_sse;
  const std::shared_ptr<per_request_channel> channel;
  per_request_sink sink{*this};
  std::mutex mutex;         // a leaf; guards `done`, `streaming` and `operation`
  http_completion done;     // until the answer (JSON or the stream) was delivered
  bool streaming = false;   // the stream was delivered: the final goes onto it
  /// Set by `detach` (docs/eras.md#detached-work): the call's response becomes the base of the
  /// operation's final.
  std::shared_ptr<per_request_operation> operation;
  /// The client leaving (http_request_view::disconnected) cancels the call.
  std::optional<std::stop_callback<std::function<void()>>> on_gone;
  /// The call's entry in the endpoint's table of live per-request calls (shutdown cancels them).
  std::uint64_t key = 0;

  /// Opens the stream (under no lock); the reply to deliver, or nothing when it cannot.
  std::optional<http_reply> open_stream();
  /// The dispatch task, in the dispatch `slot` of the fair queues (freed as the answer goes).
  void run(detail::fair_slot& slot) noexcept;
  /// `call_link`: with a progress token and an SSE answer possible, opens the stream now and
  /// returns the record the work reports to; otherwise null (the call answers at once and the
  /// client polls by execution id).
  std::shared_ptr<operation_link> detach(std::string execution_id) override;
};


// ---- the call --------------------------------------------------------------------------------------

inline std::optional<http_reply> per_request_call::open_stream() {
  const principal& who = base->who;
  auto lease = ep.budget.try_acquire(per_request_surface, who.id, ep.options.per_request.streams_per_principal);
  if (!lease) return std::nullopt;  // over budget: the answer stays JSON, in-call messages are dropped
  std::uint64_t stream_key = 0;
  ep.register_per_request(stream_key, channel);
  http_endpoint::impl* e = &ep;
  http_reply r;
  http_sse_head(r, base->cid.view());
  r.stream = std::make_unique<http_per_request_stream>(channel, std::move(*lease), ep.options.per_request.keepalive,
                                                       [e, stream_key] { e->unregister_per_request(stream_key); });
  return r;
}

inline bool per_request_sink::send(std::string_view message) noexcept {
  per_request_call& c = call;
  try {
    std::optional<http_reply> opened;
    http_completion d;
    {
      const std::lock_guard<std::mutex> lock(c.mutex);
      if (!c.streaming) {
        if (!c.accepts_sse || !c.done) return false;
        opened = c.open_stream();
        if (!opened) return false;
        c.streaming = true;
        d = std::exchange(c.done, nullptr);
      }
    }
    const bool queued = c.channel->push(message, false);
    if (d && opened) http_deliver(d, std::move(*opened));
    return queued;
  } catch (...) {
    return false;  // no memory for the stream or the frame: the message is lost, the call goes on
  }
}

inline std::shared_ptr<operation_link> per_request_call::detach(std::string execution_id) {
  const std::optional<request_id> token = progress_token_of(base->msg.params["_meta"]["progressToken"]);
  const std::optional<request_id_view> call_id = base->msg.id;
  if (!token || !call_id) return nullptr;
  std::optional<http_reply> opened;
  http_completion d;
  std::shared_ptr<per_request_operation> op;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (operation) return operation;  // a second detach shares the record
    if (!streaming) {
      if (!accepts_sse || !done) return nullptr;
      opened = open_stream();
      if (!opened) return nullptr;  // over the stream budget: unbound, the client polls
    }
    op = std::make_shared<per_request_operation>(channel, request_id{*call_id}, *token, std::move(execution_id),
                                                 ep.options.bridge.legacy_final_members);
    operation = op;
    if (opened) {
      streaming = true;
      d = std::exchange(done, nullptr);
    }
  }
  if (d && opened) http_deliver(d, std::move(*opened));
  return op;
}

/// The HTTP status of a per-request answer that is an error (docs/eras.md#errors).
[[nodiscard]] constexpr int per_request_status(std::optional<errc> e) noexcept {
  if (!e) return 200;
  switch (*e) {
    case errc::method_not_found: return 404;
    case errc::missing_client_capability:
    case errc::header_mismatch:
    case errc::unsupported_revision: return 400;
    default: return 200;
  }
}

inline void per_request_call::run(fair_slot& slot) noexcept {
  struct unregister {
    per_request_call& c;
    ~unregister() { c.ep.unregister_per_request(c.key); }
  } const at_end{*this};
  dispatch_report report;
  const dispatch_context ctx{base->who, nullptr,  &sink,   channel->stop.get_token(), this, &envelope, &report,
                             nullptr,   ep.background_for_tasks()};
  std::string out;
  bool answered = false;
  try {
    out.reserve(http_initial_answer_bytes);
    answered = ep.srv.handle(base->msg, ctx, out);
  } catch (...) {
    answered = false;
    out.clear();
  }
  if (!answered && out.empty()) {
    // Cancelled (the stream closed) or the dispatch threw: a stream just ends; a JSON answer says why.
    try {
      write_post_dispatch_failure(out, base->id, post_dispatch_failure::dispatch_threw, base->cid.view(), {});
    } catch (...) {  // NOLINT(bugprone-empty-catch): the bare 500 below
    }
    report.error = errc::internal_error;
  }
  http_completion d;
  std::shared_ptr<per_request_operation> detached;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (!streaming) d = std::exchange(done, nullptr);
    detached = std::move(operation);
  }
  // The call is done: its dispatch slot is free before the client can see the answer and send
  // its next request (docs/sessions.md#fair-dispatch).
  slot.release();
  if (detached) {
    // The work goes on: this response is the base of its final (the stream stays open).
    detached->defer();  // the provisional response is dropped: the final replaces it
    return;
  }
  if (!d) {
    try {
      (void)channel->push(out, true);
    } catch (...) {
      channel->close();  // no memory for the final frame: the stream ends without it
    }
    return;
  }
  const int status = answered ? per_request_status(report.error) : 500;
  if (out.empty()) {
    http_deliver(d, http_empty(500));
    return;
  }
  try {
    if (answered && !report.missing_scope.empty()) {
      http_deliver(d, http_insufficient_scope(std::move(out), base->who, report.missing_scope, ep.resource_doc));
      return;
    }
    http_deliver(d, http_json_body(status, std::move(out)));
  } catch (...) {
    http_deliver(d, http_empty(500));
  }
}

/// Closes every live per-request stream, cancelling its call (shutdown).
inline void close_per_request_streams(http_endpoint::impl& ep) noexcept {
  std::vector<std::shared_ptr<per_request_channel>> live;
  {
    const std::lock_guard<std::mutex> lock(ep.posts_mutex);
    try {
      live.reserve(ep.per_request_streams.size());
      for (const auto& [key, weak] : ep.per_request_streams) {
        if (auto ch = weak.lock()) live.push_back(std::move(ch));
      }
    } catch (...) {  // NOLINT(bugprone-empty-catch): best effort; their calls still end
    }
  }
  for (const auto& ch : live) {
    bool ended = false;
    if (!ch->final_on_shutdown.empty()) {
      try {
        ended = ch->push(ch->final_on_shutdown, true);
      } catch (...) {
        ended = false;
      }
    }
    if (!ended) ch->close();
  }
}

// ---- the checks ------------------------------------------------------------------------------------

/// The body value `Mcp-Name` must carry for `msg` (the tool or prompt name, the resource URI, the task id), if
/// the method has one and the body carries it as a string.
inline std::optional<std::string_view> per_request_name_of(const message& msg) noexcept {
  json::value v;
  if (msg.method == "tools/call" || msg.method == "prompts/get") v = msg.params["name"];
  if (msg.method == "resources/read") v = msg.params["uri"];
  // The tasks extension (docs/tasks.md#headers): the task a request names; tasks/result and
  // tasks/list name none.
  if (msg.method == "tasks/get" || msg.method == "tasks/update" || msg.method == "tasks/cancel") v = msg.params["taskId"];
  if (!v.is_string()) return std::nullopt;
  return v.as_string();
}

/// A header value in the `=?base64?<standard base64>?=` form decoded; any other value as it is.
/// Nothing when the form is present but its base64 or UTF-8 is invalid.
inline std::optional<std::string> per_request_header_value(std::string_view v) {
  constexpr std::string_view open = "=?base64?";
  constexpr std::string_view close = "?=";
  if (v.size() < open.size() + close.size() || !ascii_iequals(v.substr(0, open.size()), open) ||
      v.substr(v.size() - close.size()) != close) {
    return std::string{v};
  }
  auto bytes = base64_decode(v.substr(open.size(), v.size() - open.size() - close.size()), base64_alphabet::standard);
  if (!bytes || !json::is_valid_utf8(*bytes)) return std::nullopt;
  return bytes;
}

/// Whether `text` is a decimal number (`-?digits(.digits)?`), which a header may carry for an
/// integer argument (`42.0` matches a body of `42`).
inline bool per_request_decimal(std::string_view text) noexcept {
  if (text.starts_with('-')) text.remove_prefix(1);
  const std::size_t dot = text.find('.');
  const auto digits = [](std::string_view d) {
    return !d.empty() && d.find_first_not_of("0123456789") == std::string_view::npos;
  };
  return dot == std::string_view::npos ? digits(text) : digits(text.substr(0, dot)) && digits(text.substr(dot + 1));
}

/// Checks one `Mcp-Param-*` header of a `tools/call` against its argument
/// (docs/eras.md#headers); on a disagreement fills `shown` (the header as the error names it) and
/// `detail`, and returns false. An argument that is absent, null, an object or an array is not
/// mirrored: its header, if sent, is ignored.
inline bool per_request_param_ok(const http_request_view& req, const message& msg, const param_header& h,
                                 std::string& shown, std::string& detail) {
  json::value v = msg.params["arguments"];
  for (const std::string& p : h.path) v = v[p];
  if (!v.exists() || v.is_null() || v.is_object() || v.is_array()) return true;
  std::string body;
  if (v.is_string()) {
    body = v.as_string();
  } else {
    json::writer{body}.value(v);
  }
  shown = "Mcp-Param-" + h.name;
  const std::string& property = h.path.back();
  const std::optional<std::string_view> raw = req.header(shown);
  if (!raw) {
    detail = "the body carries " + property + "=" + body + " but the " + shown + " header is absent";
    return false;
  }
  const std::optional<std::string> decoded = per_request_header_value(http_trim(*raw));
  if (!decoded) {
    detail = "the " + shown + " header carries an invalid Base64 sentinel value";
    return false;
  }
  bool same = *decoded == body;
  if (!same && v.is_number() && h.type == param_header::value_type::integer && per_request_decimal(*decoded)) {
    const auto n = v.to_double();
    same = n && std::strtod(decoded->c_str(), nullptr) == *n;
  }
  if (!same) {
    detail = "the " + shown + " header decodes to " + *decoded + " but the body carries " + property + "=" + body;
    return false;
  }
  return true;
}

/// The envelope, the headers and the revision of a per-request POST (docs/eras.md#the-checks);
/// false when answered.
inline bool per_request_checks(http_endpoint::impl& ep, const http_request_view& req, const message& msg,
                               request_envelope& env, const std::optional<request_id_view>& echo,
                               std::string_view cid, http_completion& done) {
  std::string body;
  // Every refusal here is 400 with the body written just before (docs/eras.md#the-checks).
  const auto refuse = [&] {
    http_deliver(done, http_json_body(400, std::move(body)));
    return false;
  };
  const auto mismatch = [&](std::string_view header, const std::string& detail) {
    write_header_mismatch(body, echo, header, detail, cid);
    return refuse();
  };
  auto read = read_envelope(msg);
  if (!read) {
    write_envelope_error(body, echo, read.error(), cid);
    return refuse();
  }
  env = *read;
  const std::optional<std::string_view> version_header = req.header("MCP-Protocol-Version");
  const std::optional<std::string_view> method_header = req.header("Mcp-Method");
  if (version_header && http_trim(*version_header) != env.protocol_version) {
    return mismatch(http_trim(*version_header), "the body envelope names protocol version " +
                                                    std::string{env.protocol_version} +
                                                    " but the MCP-Protocol-Version header names " +
                                                    std::string{http_trim(*version_header)});
  }
  if (method_header && http_trim(*method_header) != msg.method) {
    return mismatch(http_trim(*method_header), "the body names method " + std::string{msg.method} +
                                                   " but the Mcp-Method header names " +
                                                   std::string{http_trim(*method_header)});
  }
  if (!serves(ep.options.eras, protocol_era::per_request)) {
    write_unsupported_revision(body, echo, supported_protocol_versions, env.protocol_version, cid);
    return refuse();
  }
  if (!is_per_request_protocol_version(env.protocol_version)) {
    write_unsupported_revision(body, echo, per_request_protocol_versions, env.protocol_version, cid);
    return refuse();
  }
  if (msg.kind != message_kind::request) return true;  // notifications need no method headers
  if (!version_header) {
    return mismatch("(missing)", "the body envelope names protocol version " + std::string{env.protocol_version} +
                                     " but the required MCP-Protocol-Version header is absent");
  }
  if (!method_header) {
    return mismatch("(missing)", "the body names method " + std::string{msg.method} +
                                     " but the required Mcp-Method header is absent");
  }
  if (const auto name = per_request_name_of(msg)) {
    const std::optional<std::string_view> name_header = req.header("Mcp-Name");
    if (!name_header) {
      return mismatch("(missing)",
                      "the body carries " + std::string{*name} + " but the required Mcp-Name header is absent");
    }
    const std::optional<std::string> decoded = per_request_header_value(http_trim(*name_header));
    if (!decoded) {
      return mismatch(http_trim(*name_header), "the Mcp-Name header carries an invalid Base64 sentinel value");
    }
    if (*decoded != *name) {
      return mismatch(http_trim(*name_header),
                      "the body carries " + std::string{*name} + " but the Mcp-Name header names " + *decoded);
    }
  }
  if (msg.method == "tools/call" && msg.params["name"].is_string()) {
    std::string shown;
    std::string detail;
    for (const param_header& h : ep.srv.param_headers(msg.params["name"].as_string())) {
      if (per_request_param_ok(req, msg, h, shown, detail)) continue;
      return mismatch(shown, detail);
    }
  }
  return true;
}

}  // namespace detail

// ---- the route -------------------------------------------------------------------------------------

inline void http_endpoint::impl::handle_listen(const std::shared_ptr<detail::http_post_exchange>& ex, bool accepts_sse,
                                               http_completion& done) {
  using namespace detail;
  const message& msg = ex->msg;
  const std::optional<request_id_view> echo = msg.id;
  const std::string_view cid = ex->cid.view();
  const auto refuse = [&](int status, errc code, std::string_view message) {
    error_data d;
    d.correlation_id = cid;
    d.remediation = "See docs/eras.md#subscriptions for what subscriptions/listen accepts.";
    std::string body;
    write_error_response(body, echo, code, message, d);
    http_deliver(done, http_json_body(status, std::move(body)));
  };
  // docs/eras.md#subscriptions: the filter, then what this server can honour of it.
  auto granted = read_listen_filter(msg, srv, options.per_request.max_listen_uris);
  if (!granted) {
    std::string body;
    write_listen_refusal(body, echo, granted.error(), cid,
                         "See docs/eras.md#subscriptions for what subscriptions/listen accepts.");
    http_deliver(done, http_json_body(per_request_status(granted.error().code), std::move(body)));
    return;
  }
  const listen_filter& f = *granted;
  if (!accepts_sse) {
    http_deliver(done, http_error(refusal::not_acceptable, echo, cid));
    return;
  }
  if (shut.load()) {
    http_deliver(done, http_error(refusal::shutting_down, echo, cid));
    return;
  }
  auto lease = budget.try_acquire("listen", ex->who.id, options.per_request.listens_per_principal);
  if (!lease) {
    refuse(429, errc::stream_cap, "Subscription limit reached");
    return;
  }
  const std::string id_json = listen_id_json(echo);
  auto channel = std::make_shared<per_request_channel>();
  channel->final_on_shutdown = listen_result(echo, id_json, srv.info());
  (void)channel->push(listen_frame("notifications/subscriptions/acknowledged", id_json, &f, {}), false);
  auto subscription = std::make_shared<event_subscription>();
  if (f.empty()) {
    (void)channel->push(channel->final_on_shutdown, true);  // nothing to listen to: end at once
  } else {
    std::weak_ptr<per_request_channel> weak = channel;
    *subscription = srv.subscribe([weak, f, id_json, who = ex->who.id](const server_event& e) {
      auto ch = weak.lock();
      if (!ch) return;
      if (auto frame = listen_event(f, id_json, who, e)) (void)ch->push(*frame, false);
    });
  }
  std::uint64_t key = 0;
  register_per_request(key, channel);
  if (shut.load()) {
    // The shutdown began after the check above: its sweep may have missed this stream (docs/eras.md#subscriptions).
    (void)channel->push(channel->final_on_shutdown, true);
  }
  http_reply r;
  http_sse_head(r, cid);
  r.stream = std::make_unique<http_per_request_stream>(channel, std::move(*lease), options.per_request.keepalive,
                                                       [this, key, subscription] {
                                                         subscription->cancel();
                                                         unregister_per_request(key);
                                                       });
  http_deliver(done, std::move(r));
}

inline void http_endpoint::impl::handle_post_per_request(const http_request_view& req,
                                                         const std::shared_ptr<detail::http_post_exchange>& ex,
                                                         bool accepts_sse, http_completion& done) {
  const message& msg = ex->msg;
  const std::optional<request_id_view> echo =
      msg.kind == message_kind::request ? msg.id : std::optional<request_id_view>{};
  request_envelope env;
  if (!detail::per_request_checks(*this, req, msg, env, echo, ex->cid.view(), done)) return;
  if (msg.kind != message_kind::request || !msg.id) {
    // Notifications and responses change nothing in the per-request era: closing a response
    // stream is its cancellation, and no request was sent to the client (docs/eras.md#streams).
    detail::http_deliver(done, detail::http_empty(202));
    return;
  }
  ex->id = request_id{*msg.id};
  if (msg.method == "subscriptions/listen") {
    handle_listen(ex, accepts_sse, done);
    return;
  }
  auto call = std::make_shared<detail::per_request_call>(*this, ex, env, accepts_sse);
  {
    const std::lock_guard<std::mutex> lock(call->mutex);
    call->done = std::move(done);
  }
  if (req.disconnected.stop_possible()) {
    call->on_gone.emplace(req.disconnected, std::function<void()>{[ch = call->channel] { ch->stop.request_stop(); }});
  }
  register_per_request(call->key, call->channel);
  // docs/sessions.md#fair-dispatch: round-robin between principals, capped per principal.
  detail::fair_submit submitted = detail::fair_submit::busy;
  try {
    // The closure is one raw pointer (held without allocating); the queue keeps `call` alive.
    submitted = submit_fair(ex->who.id, [raw = call.get()](detail::fair_slot& slot) { raw->run(slot); }, call);
  } catch (...) {
    submitted = detail::fair_submit::busy;
  }
  if (submitted != detail::fair_submit::taken) {
    http_completion d;
    {
      const std::lock_guard<std::mutex> lock(call->mutex);
      d = std::exchange(call->done, nullptr);
    }
    unregister_per_request(call->key);
    const bool capped = submitted == detail::fair_submit::principal_cap;
    if (capped) m.dispatch_principal_cap.inc();
    detail::http_deliver(d, detail::http_error(capped ? detail::refusal::principal_busy : detail::refusal::busy, echo,
                                               ex->cid.view()));
  }
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_HTTP_PER_REQUEST_IPP
