// SPDX-License-Identifier: Apache-2.0
// One call as the dispatch core serves it: the state behind `call_context` (progress, log
// messages and requests to the client through the transport's sink), the call's registration
// in its peer (cancellation) and the per-request helpers every method handler shares.
#ifndef MCPCORE_IMPL_CALL_STATE_IPP
#define MCPCORE_IMPL_CALL_STATE_IPP

#include <mcpcore/dispatch/server.hpp>

#include <mcpcore/dispatch/operation.hpp>

#include <mcpcore/dispatch/impl/peer.ipp>
#include <mcpcore/dispatch/impl/server_state.ipp>
#include <mcpcore/wire/error.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

/// Why the client could not answer the input `key` of a handler waiting for it
/// (docs/eras.md#waiting-for-the-client, docs/tasks.md#input).
inline std::string could_not_answer(std::string_view key, std::string_view what) {
  return "the client could not answer '" + echo_name(key) + "': " + std::string{what};
}
inline std::string could_not_answer(std::string_view key, const std::error_code& ec) {
  return could_not_answer(key, ec.message());
}

/// Whether a 2025-11-25 client declared `c` at `initialize` (`caps`, its peer's).
[[nodiscard]] inline bool peer_declares(const client_capabilities& caps, client_capability c) noexcept {
  switch (c) {
    case client_capability::sampling:
    case client_capability::sampling_tools: return caps.sampling;
    case client_capability::elicitation_form:
    case client_capability::elicitation_url: return caps.elicitation;
    case client_capability::roots: return caps.roots;
  }
  return false;
}

/// What a call's round brings from the previous one (docs/eras.md#the-handler-contract): the
/// client's answers and the handler's verified state.
struct input_round {
  /// Per-request era: the request's `params.inputResponses` (an object), or absent.
  json::value responses;
  /// Handshake era: the answers to the server-to-client requests of the previous round.
  std::vector<std::pair<std::string, client_reply>> replies;
  /// The handler's state, verified.
  std::string state;

  /// The answer under `key`: an object that is a bare result (an entry carrying `method` or
  /// `result` is a wrapped request or response, not an answer, and is ignored).
  [[nodiscard]] json::value find(std::string_view key) const noexcept {
    for (const auto& [k, r] : replies) {
      if (k == key) return r.is_error() ? json::value{} : r.value();
    }
    const json::value v = responses[key];
    if (!v.is_object() || v["method"].exists() || v["result"].exists()) return {};
    return v;
  }
};

/// Why the client cannot answer `method` on this connection, or empty.
inline std::error_code client_cannot_answer(const dispatch_context& ctx, std::string_view method) {
  if (ctx.client == nullptr || ctx.sink == nullptr) return make_error_code(client_request_errc::no_channel);
  const auto caps = ctx.client->capabilities();
  if ((method == "sampling/createMessage" && !caps.sampling) || (method == "elicitation/create" && !caps.elicitation) ||
      (method == "roots/list" && !caps.roots)) {
    return make_error_code(client_request_errc::not_supported);
  }
  return {};
}

// Makes the final builder of a call's tool (operation.hpp) when its handler detaches: a call that
// never detaches pays nothing for it.
class final_source {
 public:
  [[nodiscard]] virtual std::shared_ptr<const final_builder> make() const = 0;

 protected:
  final_source() = default;
  final_source(const final_source&) = default;
  final_source(final_source&&) = default;
  final_source& operator=(const final_source&) = default;
  final_source& operator=(final_source&&) = default;
  ~final_source() = default;
};

// The state of one call, behind call_context.
class call_state_impl final : public call_state {
 public:
  call_state_impl(server::impl& s, const dispatch_context& ctx, request_id_view id, json::value progress_token,
                  std::stop_token stop) noexcept
      : s_(s),
        ctx_(ctx),
        id_(id),
        // One rule for every transport (docs/errors.md#progress-tokens): anything but a bounded
        // string or an integer is no token, so it is never echoed.
        token_(usable_progress_token(progress_token, s.options.max_progress_token_bytes) ? progress_token
                                                                                          : json::value{}),
        stop_(std::move(stop)) {}

  const principal& caller() const noexcept override { return ctx_.caller; }
  request_id_view id() const noexcept override { return id_; }
  std::stop_token stop_token() const noexcept override { return stop_; }
  bool wants_progress() const noexcept override { return token_.exists(); }
  call_link* link() const noexcept override { return link_override != nullptr ? link_override : ctx_.progress; }
  bool close_stream(std::chrono::milliseconds retry) noexcept override {
    return ctx_.sink != nullptr && ctx_.sink->close_stream(retry);
  }
  json::value input(std::string_view key) const noexcept override {
    return round != nullptr ? round->find(key) : json::value{};
  }
  std::string_view round_state() const noexcept override {
    return round != nullptr ? std::string_view{round->state} : std::string_view{};
  }
  bool client_declares(client_capability c) const noexcept override {
    if (ctx_.envelope != nullptr) return declares(ctx_.envelope->client_capabilities, c);
    if (ctx_.client == nullptr) return false;
    return peer_declares(ctx_.client->capabilities(), c);
  }
  std::shared_ptr<const final_builder> finals() const override {
    return finals_from != nullptr ? finals_from->make() : nullptr;
  }
  /// The round this call runs in; null on a first round without answers.
  const input_round* round = nullptr;
  /// The tool's final builder, on demand (tools/call only); null: none.
  const final_source* finals_from = nullptr;
  /// Replaces the transport's record for `detach` (a call that becomes a task when it detaches,
  /// docs/tasks.md#when-a-call-becomes-a-task); null: the transport's.
  call_link* link_override = nullptr;

  bool progress(double p, std::optional<double> total, std::string_view message) override {
    if (!token_.exists() || ctx_.sink == nullptr || !std::isfinite(p)) return false;
    std::string out;
    {
      std::lock_guard lock{mu_};
      if (sent_progress_ && !(p > last_progress_)) return false;
      sent_progress_ = true;
      last_progress_ = p;
      write_notification(out, "notifications/progress", [&](json::writer& w) {
        w.begin_object().key("progressToken").value(token_);
        w.member("progress", p);
        if (total && std::isfinite(*total)) w.member("total", *total);
        if (!message.empty()) w.member("message", message);
        w.end_object();
      });
    }
    return ctx_.sink->send(out);
  }

  bool log(log_level level, std::string_view data, std::string_view logger) override {
    if (ctx_.sink == nullptr) return false;
    log_level threshold = s_.options.default_log_level;
    if (ctx_.envelope != nullptr) {
      // The per-request era: only a request that named a level gets log messages
      // (docs/eras.md#logging).
      if (!ctx_.envelope->level) return false;
      threshold = *ctx_.envelope->level;
    } else if (ctx_.client != nullptr) {
      if (auto l = ctx_.client->level()) threshold = *l;
    }
    if (level < threshold) return false;
    std::string out;
    write_notification(out, "notifications/message", [&](json::writer& w) {
      w.begin_object().member("level", to_string(level));
      if (!logger.empty()) w.member("logger", logger);
      w.member("data", data).end_object();
    });
    return ctx_.sink->send(out);
  }

  result<client_reply> request(std::string_view method, std::string_view params_json,
                               std::chrono::milliseconds timeout) override {
    if (const std::error_code ec = client_cannot_answer(ctx_, method)) return std::unexpected(ec);
    auto& p = ctx_.client->state();
    const waiting_slot slot{s_.waiting, ctx_.caller.id, s_.options.max_waiting_calls_per_principal};
    if (!slot) return std::unexpected(make_error_code(client_request_errc::too_many_waiting));
    auto w = std::make_shared<peer::impl::waiter>();
    std::int64_t rid = 0;
    {
      std::lock_guard lock{p.mu};
      if (p.input_closed) return std::unexpected(make_error_code(client_request_errc::closed));
      if (p.pending.size() >= s_.options.max_pending_client_requests) {
        return std::unexpected(make_error_code(client_request_errc::too_many_pending));
      }
      rid = p.next_request_id++;
      p.pending.emplace(rid, w);
    }
    auto forget = [&] {
      std::lock_guard lock{p.mu};
      p.pending.erase(rid);
    };
    std::string out;
    write_request(out, rid, method, params_json);
    if (!ctx_.sink->send(out)) {
      forget();
      return std::unexpected(make_error_code(client_request_errc::closed));
    }
    const auto limit = std::min(timeout, s_.options.max_client_request_timeout);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    std::unique_lock lock{w->mu};
    const bool done = w->cv.wait_until(lock, stop_, deadline, [&] { return w->done; });
    if (!done) {
      lock.unlock();
      bool connection_closed = false;
      {
        std::lock_guard plock{p.mu};
        p.pending.erase(rid);
        connection_closed = p.input_closed;
      }
      // peer::close() sets input_closed before it stops the calls in flight and fails their
      // requests: a call woken by the stop reports the closed connection, not a cancellation, and
      // sends nothing.
      if (connection_closed) return std::unexpected(make_error_code(client_request_errc::closed));
      // MCP: the sender of a request that is abandoned tells the receiver.
      std::string cancel;
      write_notification(cancel, "notifications/cancelled", [&](json::writer& cw) {
        cw.begin_object().member("requestId", rid)
            .member("reason", stop_.stop_requested() ? "the call was cancelled" : "timed out")
            .end_object();
      });
      (void)ctx_.sink->send(cancel);
      return std::unexpected(make_error_code(stop_.stop_requested() ? client_request_errc::cancelled
                                                                    : client_request_errc::timed_out));
    }
    if (w->ec) return std::unexpected(w->ec);
    std::optional<client_reply>& reply = w->reply;
    if (reply.has_value()) return std::move(*reply);
    return std::unexpected(make_error_code(client_request_errc::closed));
  }

 private:
  server::impl& s_;
  const dispatch_context& ctx_;
  request_id_view id_;
  json::value token_;
  std::stop_token stop_;
  std::mutex mu_;
  double last_progress_ = 0;
  bool sent_progress_ = false;
};

// Registers a call in its peer's in-flight table (for notifications/cancelled) and links the
// transport's own stop token.
class call_scope {
 public:
  call_scope(const dispatch_context& ctx, request_id_view id) : ctx_(ctx) {
    if (ctx.client != nullptr) {
      auto& p = ctx.client->state();
      std::lock_guard lock{p.mu};
      if (p.closed) source_.request_stop();
      registered_ = p.in_flight.try_emplace(request_id{id}, source_).second;
      if (registered_) id_.emplace(id);
    } else {
      registered_ = true;
    }
  }
  ~call_scope() { release(); }
  /// Takes over `from`'s registration and stop source (`from` then owns neither), linked to the
  /// stop token of `ctx` (a copy of `from`'s context that outlives it: a call waiting for its
  /// client, docs/eras.md#waiting-for-the-client).
  call_scope(call_scope& from, const dispatch_context& ctx)
      : ctx_(ctx), source_(from.source_), id_(std::move(from.id_)), registered_(from.registered_) {
    from.id_.reset();
    from.link_.reset();
    link(ctx.stop);
  }
  call_scope(const call_scope&) = delete;
  call_scope& operator=(const call_scope&) = delete;
  /// Ends the registration now (the id may be used again); idempotent.
  void release() noexcept {
    if (ctx_.client == nullptr || !id_) return;
    auto& p = ctx_.client->state();
    std::lock_guard lock{p.mu};
    p.in_flight.erase(*id_);
    id_.reset();
  }
  /// Stops the call (shutdown).
  void cancel() noexcept { (void)source_.request_stop(); }

  /// False when the id is already in flight on this peer (MCP: ids are not reused).
  [[nodiscard]] bool registered() const noexcept { return registered_; }
  [[nodiscard]] std::stop_token token() const noexcept { return source_.get_token(); }
  [[nodiscard]] bool cancelled() const noexcept { return source_.stop_requested(); }
  /// Stops the call when `external` (the transport's stop token) is signalled.
  void link(std::stop_token external) {
    if (external.stop_possible()) {
      link_.emplace(std::move(external), std::function<void()>{[this] { source_.request_stop(); }});
    }
  }

 private:
  const dispatch_context& ctx_;
  std::stop_source source_;
  std::optional<std::stop_callback<std::function<void()>>> link_;
  std::optional<request_id> id_;  // set when registered in the peer's table: the destructor erases it
  bool registered_ = false;
};

// Context shared by the method handlers of one request.
struct request_env {
  server::impl& s;
  const dispatch_context& ctx;
  request_id_view id;
  const message& msg;
  std::string& out;
  /// The code of the error response written, if one was (the per-request era's HTTP status).
  std::optional<errc> error{};
  /// The answers and state this request carries (a later round of an input-required call).
  input_round round{};
  /// The result written is `input_required` (the encoder stamps no `complete`).
  bool input_required = false;
  /// The result written carries its own `resultType` (a task's creation: the encoder adds only the
  /// server's `_meta`).
  bool result_type_written = false;
  /// The cache hint of the resource a `resources/read` found (its own, else the server's).
  const cache_hint* read_cache = nullptr;
  /// The tables this request reads, taken once when its dispatch starts: a tool, resource or
  /// prompt it found stays alive until it ends (docs/server.md#tables-that-change).
  std::shared_ptr<const tables> t = s.tables();
};

/// The message of a tier refusal that a scope would lift (docs/oauth.md#step-up).
inline constexpr std::string_view step_up_message = "The access token lacks a scope this operation needs";

/// The scope an OAuth principal refused by the tier gate for `(securable, op)` lacks, noted in the
/// dispatch report for the transport (an HTTP transport answers 403 insufficient_scope); empty
/// when no scope would lift the refusal (docs/oauth.md#step-up).
inline std::string_view step_up_scope(request_env& e, std::string_view securable, operation op,
                                      bool through_approval) {
  const std::optional<std::string_view> scope =
      e.s.scopes.step_up(*e.s.policy, e.ctx.caller, securable, op, through_approval);
  if (!scope) return {};
  if (e.ctx.report != nullptr) e.ctx.report->missing_scope.assign(*scope);
  return *scope;
}

/// What a client refused for lack of `scope` does next.
inline std::string step_up_remediation(std::string_view scope) {
  std::string r = "Ask the authorization server for a token that also has the scope ";
  r += scope;
  r += " (an HTTP answer names it in WWW-Authenticate), then retry.";
  return r;
}

inline void write_error(request_env& e, errc code, std::string_view message, std::string_view cid,
                        std::optional<std::string_view> remediation,
                        std::optional<std::chrono::milliseconds> retry = std::nullopt,
                        bool audit_persisted = true) {
  error_data d;
  d.correlation_id = cid;
  d.retry_after_ms = retry;
  d.remediation = remediation;
  if (!audit_persisted) d.audit_persisted = false;
  write_error_response(e.out, e.id, code, message, d);
  e.error = code;
}

// An invalid-params answer for malformed params (no audit: not a tool decision).
inline bool bad_params(request_env& e, std::string_view message) {
  const auto cid = e.s.mint_cid();
  write_error(e, errc::invalid_params, message, cid.view(),
              "Send params of the shape the MCP specification (2025-11-25) defines for this method.");
  return true;
}

inline bool internal_fault(request_env& e, std::string_view message) {
  e.s.handler_exceptions.inc();
  const auto cid = e.s.mint_cid();
  write_error(e, errc::internal_error, message, cid.view(),
              "The server failed while handling the request; report the correlation_id to its operator.");
  return true;
}

}  // namespace detail

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_CALL_STATE_IPP
