// SPDX-License-Identifier: Apache-2.0
// Handlers that ask their client for input (docs/eras.md#the-handler-contract): the loop that runs
// a tool's or a prompt's handler round after round, and, in the handshake era with a transport's
// `call_resumer`, the call that waits for its client's answers without a thread
// (docs/eras.md#waiting-for-the-client): it sends the round's requests, gives the thread back, and
// resumes on a handler thread when the answers, a timeout, a cancellation or the connection's
// end arrive.
#ifndef MCPCORE_IMPL_WAITING_CALL_IPP
#define MCPCORE_IMPL_WAITING_CALL_IPP

#include <mcpcore/dispatch/server.hpp>

#include <mcpcore/dispatch/impl/call_state.ipp>
#include <mcpcore/dispatch/impl/input_required.ipp>
#include <mcpcore/dispatch/impl/peer.ipp>
#include <mcpcore/dispatch/impl/server_state.ipp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <chrono>
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

/// How one run of a handler ended.
enum class round_end : std::uint8_t {
  answered,     ///< a response was written (`server::handle` returns true)
  no_answer,    ///< cancelled: MCP sends no response (false)
  needs_input,  ///< the handler asked for input
};

[[nodiscard]] constexpr round_end round_end_of(bool answered) noexcept {
  return answered ? round_end::answered : round_end::no_answer;
}

/// What runs a handler round after round: a tool's (tools_call.ipp) or a prompt's
/// (server_methods.ipp).
class input_loop {
 public:
  input_loop() = default;
  input_loop(const input_loop&) = default;
  input_loop(input_loop&&) = default;
  input_loop& operator=(const input_loop&) = delete;
  input_loop& operator=(input_loop&&) = delete;
  virtual ~input_loop() = default;
  /// Runs the handler once with `e.round`; on `needs_input`, `ask` holds what it asked for.
  virtual round_end run(request_env& e, call_scope& scope, std::optional<input_required>& ask) = 0;
  /// Answers the call whose input could not be had (`why`); whether a response was written.
  virtual bool give_up(request_env& e, std::string_view why) = 0;
  /// The call was cancelled while it waited for its client; whether a response was written.
  virtual bool cancelled(request_env& e) = 0;
};

/// A handshake-era call waiting for its client without a thread. The server's waiting table owns
/// it until it ends; a posted continuation keeps it alive while it runs.
///
/// One thread at a time holds the call's turn (`busy_`): the dispatching thread while it sends the
/// first round, then the continuations the transport runs. Events (an answer, the stop, expiry)
/// only mark the call and post a continuation; one arriving while the turn is held makes the
/// holder look again (`again_`), so none is lost and the handler never runs twice at once.
class waiting_call final : public std::enable_shared_from_this<waiting_call> {
 public:
  waiting_call(request_env& from, call_scope& scope, std::unique_ptr<input_loop> loop, std::size_t rounds)
      : s_(from.s),
        ctx_(from.ctx),
        e_{from.s, ctx_, from.id, from.msg, out_},
        scope_(scope, ctx_),
        loop_(std::move(loop)),
        who_(from.ctx.caller.id),
        rounds_(rounds) {
    ctx_.report = nullptr;  // the transport's, on the dispatching thread's stack
    e_.t = from.t;          // the tables its loop's tool or prompt lives in
  }
  waiting_call(const waiting_call&) = delete;
  waiting_call& operator=(const waiting_call&) = delete;
  ~waiting_call() = default;

  /// Suspends the call of `e` that asked for `ask` (the caller already counted it as waiting and
  /// took `keep` from the resumer): registers it, sends the round's requests and gives the thread
  /// back. Whatever happens, the answer goes to the resumer's `finish`.
  static void start(const std::shared_ptr<waiting_call>& self, const input_required& ask,
                    std::shared_ptr<void> keep) noexcept {
    waiting_call& c = *self;
    c.keep_ = std::move(keep);
    {
      const std::lock_guard lock{c.mu_};
      c.busy_ = true;
    }
    bool registered = false;
    try {
      const std::lock_guard lock{c.s_.waiting.mu};
      c.key_ = ++c.s_.waiting.next_key;
      c.s_.waiting.calls.emplace(c.key_, self);
      registered = true;
    } catch (...) {
      registered = false;
    }
    if (!registered) {
      c.give_up("the server has no memory to wait for the client");
      c.end_turn();
      return;
    }
    try {
      std::weak_ptr<waiting_call> weak = self;
      c.on_stop_.emplace(c.scope_.token(), std::function<void()>{[weak] {
                           if (auto w = weak.lock()) w->schedule();
                         }});
    } catch (...) {
      c.give_up("the server has no memory to wait for the client");
      c.end_turn();
      return;
    }
    // Shutdown cancels the waiting calls it finds; one registered after that looks for itself
    // (the flag is set before the table is read), and so does a call already cancelled.
    if (c.s_.shutting_down.load() || c.scope_.cancelled()) {
      bool answered = false;
      try {
        answered = c.loop_->cancelled(c.e_);
      } catch (...) {
        answered = false;
      }
      c.complete(answered);
      c.end_turn();
      return;
    }
    c.start_round(ask);
    c.end_turn();
  }

  /// The maintenance tick: a round whose deadline passed times out.
  void expire(std::chrono::steady_clock::time_point now) noexcept {
    {
      const std::lock_guard lock{mu_};
      if (done_ || !waiting_ || now < deadline_) return;
      timed_out_ = true;
    }
    schedule();
  }
  /// Shutdown: the call is cancelled.
  void cancel() noexcept { scope_.cancel(); }

 private:
  using asked = peer::impl::asked;
  enum class verdict : std::uint8_t { pending, cancelled, failed, timed_out, answered, stranded };

  // ---- events (any thread) ----

  /// Something happened: run a continuation (or make the turn's holder look again).
  void schedule() noexcept {
    {
      const std::lock_guard lock{mu_};
      if (done_) return;
      if (busy_) {
        again_ = true;
        return;
      }
      if (scheduled_) return;
      scheduled_ = true;
    }
    bool posted = false;
    try {
      std::shared_ptr<waiting_call> self = shared_from_this();
      posted = ctx_.resumer->post([self] { self->resume(); });
    } catch (...) {
      posted = false;
    }
    if (posted) return;
    // The transport cannot run the call any more: it ends here, without running the handler.
    {
      const std::lock_guard lock{mu_};
      scheduled_ = false;
      stranded_ = true;
      if (busy_ || done_) {
        again_ = true;
        return;
      }
      busy_ = true;
      again_ = true;
    }
    end_turn();
  }

  void on_answer(std::uint64_t round) noexcept {
    {
      const std::lock_guard lock{mu_};
      if (round != round_) return;  // a late wake-up of an ended round
    }
    schedule();
  }

  // ---- the turn ----

  /// A posted continuation: takes the turn (or hands the event to its holder).
  void resume() noexcept {
    {
      const std::lock_guard lock{mu_};
      scheduled_ = false;
      if (done_) return;
      if (busy_) {
        again_ = true;
        return;
      }
      busy_ = true;
      again_ = true;
    }
    end_turn();
  }

  /// Gives the turn back, after looking again for every event that arrived while it was held.
  void end_turn() noexcept {
    for (;;) {
      {
        const std::lock_guard lock{mu_};
        if (done_ || !again_) {
          busy_ = false;
          return;
        }
        again_ = false;
      }
      step();
    }
  }

  /// What the round came to (the turn's holder only).
  verdict examine(std::string& why) {
    bool stranded = false;
    bool timed_out = false;
    {
      const std::lock_guard lock{mu_};
      stranded = stranded_;
      timed_out = timed_out_;
    }
    if (scope_.cancelled()) return verdict::cancelled;  // before stranded: shutdown answers nothing
    if (stranded) return verdict::stranded;
    bool pending = false;
    std::string_view first_pending;
    for (const auto& a : asked_) {
      const std::lock_guard lock{a.w->mu};
      if (!a.w->done) {
        if (!pending) first_pending = a.key;
        pending = true;
      } else if (a.w->ec) {
        why = could_not_answer(a.key, a.w->ec);
        return verdict::failed;
      }
    }
    if (!pending) return verdict::answered;
    if (timed_out) {
      why = could_not_answer(first_pending, make_error_code(client_request_errc::timed_out));
      return verdict::timed_out;
    }
    return verdict::pending;
  }

  /// Acts on what the round came to (the turn's holder only).
  void step() noexcept {
    if (asked_.empty()) return;  // no round out (it ended, or never started)
    try {
      std::string why;
      switch (examine(why)) {
        case verdict::pending: return;
        case verdict::stranded:
          forget("the server stopped");
          give_up("the server could not resume the call");
          return;
        case verdict::cancelled:
          forget("the call was cancelled");
          complete(loop_->cancelled(e_));
          return;
        case verdict::failed:
          forget("the call ended");
          give_up(why);
          return;
        case verdict::timed_out:
          forget("timed out");
          give_up(why);
          return;
        case verdict::answered: break;
      }
      // Every answer is in: the handler runs again with them.
      decltype(e_.round.replies) replies;
      replies.reserve(asked_.size());
      for (auto& a : asked_) {
        const std::lock_guard lock{a.w->mu};
        std::optional<client_reply>& reply = a.w->reply;
        if (reply.has_value()) replies.emplace_back(a.key, std::move(*reply));
      }
      asked_.clear();
      {
        const std::lock_guard lock{mu_};
        waiting_ = false;
      }
      e_.round.replies = std::move(replies);
      e_.round.state = std::move(round_state_);
      std::optional<input_required> ask;
      const round_end end = loop_->run(e_, scope_, ask);
      if (end != round_end::needs_input) {
        complete(end == round_end::answered);
        return;
      }
      if (!ask) {
        give_up("the tool asked for input without saying which");
        return;
      }
      start_round(*ask);
    } catch (...) {
      forget("the call failed");
      give_up("the server failed while the call waited for the client");
    }
  }

  /// Sends the round's requests (the turn's holder only); ends the call when it cannot.
  void start_round(const input_required& ask) noexcept {
    try {
      if (std::string why = refuse_input_round(s_, ask, rounds_); !why.empty()) {
        give_up(why);
        return;
      }
      for (const auto& [key, r] : ask.requests()) {
        if (const auto ec = client_cannot_answer(ctx_, r.method())) {
          give_up(could_not_answer(key, ec));
          return;
        }
      }
      std::uint64_t round = 0;
      {
        const std::lock_guard lock{mu_};
        round = ++round_;
      }
      std::weak_ptr<waiting_call> weak = weak_from_this();
      std::vector<asked> batch;
      batch.reserve(ask.requests().size());
      for (const auto& [key, r] : ask.requests()) {
        auto w = std::make_shared<peer::impl::waiter>();
        w->on_done = [weak, round] {
          if (auto c = weak.lock()) c->on_answer(round);
        };
        batch.push_back(asked{key, 0, std::move(w)});
      }
      const std::error_code refused = ctx_.client->state().enlist(batch, s_.options.max_pending_client_requests);
      if (refused) {
        give_up(could_not_answer(batch.front().key, refused));
        return;
      }
      asked_ = std::move(batch);
      round_state_ = ask.round_state();
      {
        const std::lock_guard lock{mu_};
        deadline_ = s_.clock->steady_now() + s_.options.max_client_request_timeout;
        waiting_ = true;
        timed_out_ = false;
      }
      for (std::size_t i = 0; i < asked_.size(); ++i) {
        const auto& r = ask.requests()[i].second;
        std::string out;
        write_request(out, asked_[i].rid, r.method(), r.params_json());
        if (!ctx_.sink->send(out)) {
          forget("the request could not be sent");
          give_up(could_not_answer(ask.requests()[i].first, make_error_code(client_request_errc::closed)));
          return;
        }
      }
    } catch (...) {
      forget("the call failed");
      give_up("the server has no memory to ask the client");
    }
  }

  /// Withdraws the round's requests still unanswered (the turn's holder only); tells the client,
  /// unless no answer could come any more (MCP: the sender of an abandoned request says so).
  void forget(std::string_view reason) noexcept {
    if (asked_.empty() || ctx_.client == nullptr) {
      asked_.clear();
      return;
    }
    const peer::impl::withdrawn taken = ctx_.client->state().withdraw(asked_);
    asked_.clear();
    {
      const std::lock_guard lock{mu_};
      waiting_ = false;
    }
    tell_withdrawn(taken, reason, ctx_.sink);
  }

  /// Answers the call with the loop's give-up answer (the turn's holder only).
  void give_up(std::string_view why) noexcept {
    bool answered = false;
    try {
      answered = loop_->give_up(e_, why);
    } catch (...) {
      answered = false;
      out_.clear();
    }
    complete(answered);
  }

  /// Ends the call: hands its answer to the transport, once (the turn's holder only).
  void complete(bool answered) noexcept {
    {
      const std::lock_guard lock{mu_};
      if (done_) return;
      done_ = true;
      waiting_ = false;
    }
    s_.waiting.remove(who_);
    std::shared_ptr<waiting_call> owned;  // the table's reference, released after the answer
    {
      const std::lock_guard lock{s_.waiting.mu};
      if (const auto it = s_.waiting.calls.find(key_); it != s_.waiting.calls.end()) {
        owned = std::move(it->second);
        s_.waiting.calls.erase(it);
      }
    }
    scope_.release();  // the id may be used again once answered
    std::shared_ptr<void> keep = std::move(keep_);
    if (answered && out_.empty()) answered = false;
    ctx_.resumer->finish(answered, std::move(out_));
  }

  server::impl& s_;
  dispatch_context ctx_;        // the transport's, copied; what it refers to lives with `keep_`
  std::shared_ptr<void> keep_;  // the transport's keep-alive, until the answer is handed over
  std::string out_;
  request_env e_;
  call_scope scope_;
  std::unique_ptr<input_loop> loop_;
  std::string who_;
  std::size_t rounds_;
  std::uint64_t key_ = 0;  // in the server's waiting table
  // The turn's holder's own:
  std::vector<asked> asked_;
  std::string round_state_;
  // Set once by `start`, destroyed with the call:
  std::optional<std::stop_callback<std::function<void()>>> on_stop_;

  std::mutex mu_;  // a leaf; guards what follows
  std::chrono::steady_clock::time_point deadline_{};
  std::uint64_t round_ = 0;
  bool waiting_ = false;    // a round's requests are out
  bool timed_out_ = false;  // the round's deadline passed
  bool stranded_ = false;   // the transport refused a continuation
  bool busy_ = false;       // a thread holds the turn
  bool again_ = false;      // an event arrived while the turn was held
  bool scheduled_ = false;  // a continuation is posted
  bool done_ = false;       // the answer was handed over
};

/// Runs `loop` round after round (docs/eras.md#the-handler-contract) and returns what
/// `server::handle` returns. The per-request era answers `input_required`. The handshake era
/// sends each round's requests to the client on the session: with a resumer, the call then waits
/// without a thread (counted against the caller's cap) and answers through the resumer; without
/// one, it waits here.
template <class Loop>
bool drive_input_loop(request_env& e, call_scope& scope, Loop& loop) {
  for (std::size_t rounds = 0;;) {
    std::optional<input_required> ask;
    const round_end end = loop.run(e, scope, ask);
    if (end != round_end::needs_input) return end == round_end::answered;
    if (!ask) return loop.give_up(e, "the tool asked for input without saying which");
    if (e.ctx.envelope != nullptr) return write_input_required(e, *ask);
    if (e.ctx.resumer != nullptr) {
      if (!e.s.waiting.try_add(e.ctx.caller.id, e.s.options.max_waiting_calls_per_principal)) {
        return loop.give_up(e, make_error_code(client_request_errc::too_many_waiting).message());
      }
      if (std::shared_ptr<void> keep = e.ctx.resumer->suspend()) {
        // From here on the answer goes to the resumer's `finish`, whatever happens.
        std::shared_ptr<waiting_call> call;
        try {
          call = std::make_shared<waiting_call>(e, scope, std::make_unique<Loop>(loop), rounds);
        } catch (...) {
          call.reset();
        }
        if (!call) {
          e.s.waiting.remove(e.ctx.caller.id);
          bool answered = false;
          try {
            answered = loop.give_up(e, "the server has no memory to wait for the client");
          } catch (...) {
            answered = false;
          }
          e.ctx.resumer->finish(answered && !e.out.empty(), std::move(e.out));
          return false;
        }
        waiting_call::start(call, *ask, std::move(keep));
        return false;
      }
      // The transport cannot keep the call: it waits on this thread after all.
      e.s.waiting.remove(e.ctx.caller.id);
    }
    if (const std::string why = gather_input(e, scope.token(), *ask, rounds); !why.empty()) return loop.give_up(e, why);
  }
}

}  // namespace detail
MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_WAITING_CALL_IPP
