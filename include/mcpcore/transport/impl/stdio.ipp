// SPDX-License-Identifier: Apache-2.0
// The stdio transport: a reader, a pool of call workers, one serialized writer.
#ifndef MCPCORE_IMPL_STDIO_IPP
#define MCPCORE_IMPL_STDIO_IPP

#include <mcpcore/transport/stdio.hpp>
#include <mcpcore/transport/impl/listen_frames.ipp>

#include <mcpcore/dispatch/operation.hpp>
#include <mcpcore/session/progress_bridge.hpp>  // first: in header-only mode it brings its .ipp files in order
#include <mcpcore/session/impl/progress_bridge.ipp>
#include <mcpcore/session/stream_admission.hpp>
#include <mcpcore/wire/correlation_id.hpp>
#include <mcpcore/wire/era.hpp>
#include <mcpcore/wire/error.hpp>
#include <mcpcore/wire/retry.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

// Writes whole lines to a file descriptor, one at a time.
class fd_line_sink final : public message_sink {
 public:
  explicit fd_line_sink(int fd) noexcept : fd_(fd) {}
  bool send(std::string_view message) noexcept override {
    std::lock_guard lock{mu_};
    if (broken_) return false;
    if (!write_all(message) || !write_all("\n")) {
      broken_ = true;
      return false;
    }
    return true;
  }

 private:
  bool write_all(std::string_view data) noexcept {
    while (!data.empty()) {
      const auto n = ::write(fd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  int fd_;
  std::mutex mu_;
  bool broken_ = false;
};

// A per-request call's channel for its in-call messages (progress, log): written to the output
// like every line, and dropped once the call is cancelled (its answer will not be written either).
class stdio_call_sink final : public message_sink {
 public:
  stdio_call_sink(fd_line_sink& out, std::stop_token stop) noexcept : out_(out), stop_(std::move(stop)) {}
  bool send(std::string_view message) noexcept override {
    if (stop_.stop_requested()) return false;
    return out_.send(message);
  }

 private:
  fd_line_sink& out_;
  std::stop_token stop_;
};

// ---- detached calls (docs/transport.md#detached-calls-over-stdio) --------------------------------

struct stdio_detached_call;

// The calls of a connection whose answer waits for the final of their detached work. Shared by the
// transport and every operation of its calls, so that an operation that outlives `run` (or the
// transport) writes nothing: finals and the work's progress are written under `mu`, and `run`
// clears `sink` under it before it returns.
struct stdio_finals {
  std::mutex mu;  // above the sink's own mutex
  std::condition_variable released;  // `calls` became empty
  fd_line_sink* sink = nullptr;      // while `run` serves; null: reports are dropped
  std::size_t cap = 0;               // stdio_options::max_detached_calls
  std::vector<std::shared_ptr<stdio_detached_call>> calls;  // holding a slot

  // Writes one line if the connection is served. Requires `mu`.
  void write_locked(std::string_view line) const noexcept {
    if (sink != nullptr) (void)sink->send(line);
  }
  // Ends the hold of `c`: nothing more is written for it. Requires `mu`.
  void release_locked(stdio_detached_call& c) noexcept;
};

// One held call. Its members other than the constants are guarded by `stdio_finals::mu`.
struct stdio_detached_call {
  stdio_detached_call(request_id i, std::optional<request_id> t, std::string e) noexcept
      : id(std::move(i)), token(std::move(t)), execution_id(std::move(e)) {}
  const request_id id;
  const std::optional<request_id> token;  // the request's progress token: the work's progress goes out
  const std::string execution_id;
  bool returned = false;   // the handler returned; its provisional answer was held back
  bool finished = false;   // a terminal was accepted
  bool released = false;   // its final was written, or it was cancelled: nothing more goes out
  bool abandoned = false;  // every handle went before the handler returned, without a terminal
  std::optional<std::string> early_final;  // a final that came before the handler returned
  std::optional<double> watermark;         // the last progress written
};

inline void stdio_finals::release_locked(stdio_detached_call& c) noexcept {
  if (c.released) return;
  c.released = true;
  std::erase_if(calls, [&c](const std::shared_ptr<stdio_detached_call>& p) { return p.get() == &c; });
  if (calls.empty()) released.notify_all();
}

// The fallback final of a held call (docs/sessions.md#projection-and-finals): a complete error result.
inline std::string stdio_fallback_final(const stdio_detached_call& c) {
  std::string out;
  write_result_response(out, c.id.view(), std::string_view{fallback_final_result(c.execution_id)});
  return out;
}

// The record the handles of one held call share: its progress and its final go to the output.
class stdio_operation final : public operation_link {
 public:
  stdio_operation(std::shared_ptr<stdio_finals> f, std::shared_ptr<stdio_detached_call> c) noexcept
      : f_(std::move(f)), c_(std::move(c)) {}
  stdio_operation(const stdio_operation&) = delete;
  stdio_operation& operator=(const stdio_operation&) = delete;
  stdio_operation(stdio_operation&&) = delete;
  stdio_operation& operator=(stdio_operation&&) = delete;
  // The last handle gone without a terminal: the call is answered the fallback final (now, or
  // when its handler returns), never left waiting.
  ~stdio_operation() {
    const std::lock_guard lock{f_->mu};
    stdio_detached_call& c = *c_;
    if (c.finished || c.released) return;
    c.finished = true;
    if (!c.returned) {
      c.abandoned = true;  // its handler's return answers it
      return;
    }
    try {
      f_->write_locked(stdio_fallback_final(c));
    } catch (...) {  // NOLINT(bugprone-empty-catch): no memory for the fallback: the call ends unanswered
    }
    f_->release_locked(c);
  }

  // The rules of a session's record (docs/concepts/operation_source.md): no meaningful total
  // skips, progress past the total is clamped, only a value above the last one written goes.
  bool progress(double progress, std::optional<double> total, std::string_view message) override {
    const stdio_detached_call& call = *c_;
    if (!call.token) return false;
    if (!std::isfinite(progress) || (total && (!std::isfinite(*total) || *total <= 0))) return false;
    if (total && progress > *total) progress = *total;
    bridge_snapshot snap;
    snap.progress = progress;
    snap.total = total;
    snap.message.assign(message);
    const std::string frame = bridge_progress_frame(*call.token, snap, call.execution_id);
    const std::lock_guard lock{f_->mu};
    stdio_detached_call& c = *c_;
    if (c.finished || c.released || f_->sink == nullptr || (c.watermark && !(progress > *c.watermark))) return false;
    if (!f_->sink->send(frame)) return false;
    c.watermark = progress;
    return true;
  }

  bool finish(operation_final final) override {
    std::string text = bridge_final_response(c_->id, final, c_->execution_id, false);  // before anything changes
    const std::lock_guard lock{f_->mu};
    stdio_detached_call& c = *c_;
    if (c.finished || c.released) return false;
    c.finished = true;
    if (!c.returned) {
      c.early_final = std::move(text);  // written when the handler returns, after its own messages
      return true;
    }
    f_->write_locked(text);
    f_->release_locked(c);
    return true;
  }

 private:
  std::shared_ptr<stdio_finals> f_;
  std::shared_ptr<stdio_detached_call> c_;
};

// A `tools/call`'s record as the dispatch core sees it (`dispatch_context::progress`): `detach`
// holds the call's answer back for the final, within the connection's cap.
class stdio_call_link final : public call_link {
 public:
  stdio_call_link(std::shared_ptr<stdio_finals> f, request_id id, std::optional<request_id> token) noexcept
      : f_(std::move(f)), id_(std::move(id)), token_(std::move(token)) {}
  stdio_call_link(const stdio_call_link&) = delete;
  stdio_call_link& operator=(const stdio_call_link&) = delete;
  stdio_call_link(stdio_call_link&&) = delete;
  stdio_call_link& operator=(stdio_call_link&&) = delete;
  ~stdio_call_link() = default;

  std::shared_ptr<operation_link> detach(std::string execution_id) override {
    const std::lock_guard lock{f_->mu};
    if (auto op = op_.lock()) return op;  // a second detach shares the record
    // Over the cap, a second detach after every handle went, or a connection no longer served:
    // unbound, and the call is answered its provisional result at once.
    if (call_ || f_->sink == nullptr || f_->calls.size() >= f_->cap) return nullptr;
    auto call = std::make_shared<stdio_detached_call>(id_, token_, std::move(execution_id));
    f_->calls.push_back(call);
    std::shared_ptr<stdio_operation> op;
    try {
      op = std::make_shared<stdio_operation>(f_, call);
    } catch (...) {
      f_->calls.pop_back();  // nothing is held
      throw;
    }
    call_ = std::move(call);
    op_ = op;
    return op;
  }

  // After the dispatch: true when the call's own answer is written as usual; false when the call
  // detached: its final is written instead (now, if it came already, or when `finish` comes), or
  // nothing when the call was cancelled (`answered` false, or a cancel released it).
  bool settle(bool answered) noexcept {
    const std::lock_guard lock{f_->mu};
    if (!call_) return true;
    stdio_detached_call& c = *call_;
    c.returned = true;
    if (c.released) return false;
    if (!answered) {
      f_->release_locked(c);
    } else if (c.early_final) {
      f_->write_locked(*c.early_final);
      f_->release_locked(c);
    } else if (c.abandoned) {
      try {
        f_->write_locked(stdio_fallback_final(c));
      } catch (...) {  // NOLINT(bugprone-empty-catch): no memory for the fallback: the call ends unanswered
      }
      f_->release_locked(c);
    }
    return false;
  }

 private:
  std::shared_ptr<stdio_finals> f_;
  request_id id_;
  std::optional<request_id> token_;
  std::shared_ptr<stdio_detached_call> call_;  // set by `detach` within the cap
  std::weak_ptr<stdio_operation> op_;
};

// A handshake connection's channel for what its tasks send after their calls returned (their
// progress and status notifications, docs/tasks.md#notifications): the output while the connection
// lasts, nothing after it.
class stdio_task_channel final : public message_sink {
 public:
  explicit stdio_task_channel(fd_line_sink& out) noexcept : out_(&out) {}
  bool send(std::string_view message) noexcept override {
    std::lock_guard lock{mu_};
    return out_ != nullptr && out_->send(message);
  }
  void close() noexcept {
    std::lock_guard lock{mu_};
    out_ = nullptr;
  }

 private:
  std::mutex mu_;  // a leaf above the output's
  fd_line_sink* out_;
};

// The era a stdio connection is pinned to by its first request (docs/eras.md#stdio).
enum class stdio_pin : std::uint8_t { none, handshake, per_request };

// The id a `notifications/cancelled` names, when it is a valid request id.
inline std::optional<request_id_view> stdio_cancelled_id(json::value rid) noexcept {
  if (rid.is_string()) return request_id_view{rid.as_string()};
  if (auto n = rid.is_integer() ? rid.to_int64() : std::nullopt) return request_id_view{*n};
  return std::nullopt;
}

/// Change notifications of a connection's listens waiting for the output: past this many, a new
/// one is dropped (a client that stops reading must not make the server hold every event).
inline constexpr std::size_t stdio_listen_backlog = 1024;

// The acknowledgements and change notifications of a connection's listens, on their way to the
// output. A subscriber must not block (`server::subscribe`), so it only queues its line here; the
// transport's event writer takes them off and writes them, one line each, through the
// connection's one sink. A listen's lines are taken only once it is open, after its
// acknowledgement: none can reach the client before it.
class stdio_event_queue {
 public:
  /// Opens listen `key`: queues its acknowledgement `ack` (past the backlog too), then its lines.
  void open(std::uint64_t key, std::string ack) {
    {
      std::lock_guard lock{mu_};
      open_.push_back(key);
      lines_.emplace_back(key, std::move(ack));
    }
    cv_.notify_one();
  }
  /// Queues `line` of listen `key`; false when the listen is not open, the queue is closed or
  /// full (the line is dropped).
  bool push(std::uint64_t key, std::string line) {
    {
      std::lock_guard lock{mu_};
      if (closed_ || lines_.size() >= stdio_listen_backlog || std::ranges::find(open_, key) == open_.end()) {
        return false;
      }
      lines_.emplace_back(key, std::move(line));
    }
    cv_.notify_one();
    return true;
  }
  /// Opens `key` without an acknowledgement (the handshake era's notifications).
  void open(std::uint64_t key) {
    std::lock_guard lock{mu_};
    open_.push_back(key);
  }
  /// Ends listen `key` (it was cancelled): its lines not yet taken are dropped, later ones refused.
  void drop(std::uint64_t key) {
    std::lock_guard lock{mu_};
    std::erase(open_, key);
    std::erase_if(lines_, [key](const std::pair<std::uint64_t, std::string>& l) { return l.first == key; });
  }
  /// The next line, waiting for one; nothing once closed and empty.
  std::optional<std::string> pop() {
    std::unique_lock lock{mu_};
    cv_.wait(lock, [this] { return closed_ || !lines_.empty(); });
    if (lines_.empty()) return std::nullopt;
    std::string line = std::move(lines_.front().second);
    lines_.pop_front();
    return line;
  }
  /// No more lines: `pop` hands out what is left (nothing when `discard`), then nothing.
  void close(bool discard) {
    {
      std::lock_guard lock{mu_};
      closed_ = true;
      if (discard) lines_.clear();
    }
    cv_.notify_all();
  }
  /// Empty and open again (a new `run`).
  void reopen() {
    std::lock_guard lock{mu_};
    closed_ = false;
    lines_.clear();
    open_.clear();
  }

 private:
  std::mutex mu_;  // a leaf
  std::condition_variable cv_;
  std::deque<std::pair<std::uint64_t, std::string>> lines_;
  std::vector<std::uint64_t> open_;  // the listens whose lines are queued (at most `max_listens`)
  bool closed_ = false;
};

/// The queue key of the handshake era's notifications (listens count from 1).
inline constexpr std::uint64_t stdio_handshake_key = 0;

/// `error.message` of a handshake-era request other than `ping` before `initialize`
/// (docs/eras.md#stdio-lifecycle); the code is -32600.
inline constexpr std::string_view stdio_not_initialized = "Server not initialized";
/// `error.message` of a second `initialize` on a connection (docs/eras.md#stdio-lifecycle).
inline constexpr std::string_view stdio_already_initialized = "Already initialized";

// One open `subscriptions/listen` of a connection (docs/eras.md#stdio).
struct stdio_listen {
  std::uint64_t key = 0;  // tags its queued lines
  request_id id;          // the listen's id: a cancellation names it
  std::string id_json;    // its subscriptionId, as sent
  event_subscription subscription;
};

}  // namespace detail

struct stdio_transport::impl {
  struct job {
    json::document doc;
    message msg;
    /// Set: the request is served in the per-request era with this envelope (views into `doc`).
    std::optional<request_envelope> envelope;
  };
  /// A call a worker is running, of either era: its id and the source of its stop token. At most
  /// `options.workers` entries: one per running worker. The id is owned: a handshake job moves
  /// into its resumer, which may end before the worker removes the entry.
  struct running_call {
    request_id id;
    std::stop_source stop;
  };
  /// Links the transport's stop to a call's own stop source.
  struct stop_forward {
    std::stop_source to;
    void operator()() noexcept { (void)to.request_stop(); }
  };

  /// A handshake-era call's way to wait for its client without a worker
  /// (docs/eras.md#waiting-for-the-client): it keeps the job alive, its continuations run on the
  /// workers, and its answer is written when it comes.
  struct handshake_resumer final : call_resumer, std::enable_shared_from_this<handshake_resumer> {
    handshake_resumer(impl& t, job j) : transport(t), request(std::move(j)) {}
    std::shared_ptr<void> suspend() noexcept override {
      suspended = true;
      return shared_from_this();
    }
    bool post(std::function<void()> task) noexcept override { return transport.post_task(std::move(task)); }
    void finish(bool answered, std::string out) noexcept override {
      if (link && !link->settle(answered)) return;  // detached: its final answers it
      if (answered) (void)transport.sink->send(out);
    }
    impl& transport;
    job request;
    /// The call's own stop source, stopped by the transport's stop for as long as the call lives.
    std::optional<std::stop_callback<stop_forward>> on_stop;
    /// A `tools/call`'s record (docs/transport.md#detached-calls-over-stdio), alive while the call waits.
    std::optional<detail::stdio_call_link> link;
    bool suspended = false;  // the worker's own: set during its dispatch, read after it
  };

  server& srv;
  principal caller;
  stdio_options options;
  /// The connection's peer, shared so that a 2025-11-25 task waiting for its answers holds it
  /// weakly (`dispatch_context::session_peer`, docs/tasks.md#input).
  std::shared_ptr<peer> shared_client = std::make_shared<peer>();
  peer& client = *shared_client;
  std::unique_ptr<detail::fd_line_sink> sink;
  /// Where a task's work runs (docs/tasks.md#executors): the workers, like a waiting call's
  /// continuations.
  struct task_background final : background_executor {
    explicit task_background(impl& t) noexcept : transport(t) {}
    bool post(std::function<void()> work) noexcept override { return transport.post_task(std::move(work)); }
    impl& transport;
  };
  task_background tasks_background{*this};
  /// The handshake connection's channel for its tasks (set by `run`, closed when it returns).
  std::shared_ptr<detail::stdio_task_channel> task_channel;
  std::mutex mu;
  std::condition_variable work_cv;
  std::condition_variable idle_cv;
  std::deque<job> queue;
  /// Continuations of calls that waited for the client, run before queued requests.
  std::deque<std::function<void()>> tasks;
  std::vector<running_call> running;  // guarded by `mu`
  std::size_t busy = 0;
  bool closing = false;
  std::stop_source stop;
  int wake[2] = {-1, -1};
  detail::stdio_pin pinned = detail::stdio_pin::none;  // the reader's own (`run`'s thread)
  // The handshake-era lifecycle (docs/eras.md#stdio-lifecycle): set by the reader when it admits
  // the connection's `initialize`, cleared by the worker when that initialize failed.
  std::atomic<bool> initialize_admitted{false};
  // Listens: their lines wait in `events` for `event_writer` (started by the first listen). The
  // listens are the reader's own, declared after `events` so that their subscriptions end first.
  detail::stdio_event_queue events;
  std::thread event_writer;                   // `run`'s thread starts and joins it
  std::vector<detail::stdio_listen> listens;  // the reader's own
  std::uint64_t listen_keys = 0;              // the reader's own
  // The calls held for the final of their detached work (docs/transport.md#detached-calls-over-stdio),
  // shared with their operations.
  std::shared_ptr<detail::stdio_finals> finals = std::make_shared<detail::stdio_finals>();

  impl(server& s, principal p, stdio_options o) : srv(s), caller(std::move(p)), options(o) {}

  void worker() {
    for (;;) {
      std::optional<job> j;
      std::function<void()> task;
      std::stop_source call_stop;  // a per-request call's own: cancelled by the client or by `stop`
      {
        std::unique_lock lock{mu};
        // An idle worker also ends the waits for the client past their deadline.
        while (!closing && queue.empty() && tasks.empty()) {
          if (work_cv.wait_for(lock, options.expiry_tick) == std::cv_status::timeout) {
            lock.unlock();
            srv.expire_waiting();
            lock.lock();
          }
        }
        if (!tasks.empty()) {
          task = std::move(tasks.front());
          tasks.pop_front();
        } else if (queue.empty()) {
          return;  // closing, nothing left
        } else {
          j.emplace(std::move(queue.front()));
          queue.pop_front();
          // Registered in the same step as the pop: a cancellation finds the call queued or running,
          // also before a handshake-era call reaches its peer's in-flight table.
          if (j->msg.id) running.push_back({request_id{*j->msg.id}, call_stop});
        }
        ++busy;
      }
      const bool registered = j && j->msg.id.has_value();
      if (task) {
        task();  // a call that waited for the client goes on
      } else if (j && j->envelope) {
        run_per_request(*j, *j->envelope, call_stop);
      } else if (j) {
        run_handshake(std::move(*j), call_stop);
      }
      {
        std::lock_guard lock{mu};
        if (registered) {
          std::erase_if(running, [&](const running_call& r) { return r.stop == call_stop; });
        }
        --busy;
      }
      j.reset();
      task = nullptr;
      idle_cv.notify_all();
    }
  }

  // Dispatches one request; true when `out` holds its answer.
  bool dispatch(const job& j, const dispatch_context& ctx, std::string& out) noexcept {
    try {
      return srv.handle(j.msg, ctx, out);
    } catch (...) {
      // server::handle contains handler faults; this catches allocation failure. Answer it.
      try {
        out.clear();
        const auto cid = next_correlation_id();
        error_data d;
        d.correlation_id = cid.view();
        d.remediation = "The server ran out of resources while handling the request; retry later.";
        write_error_response(out, j.msg.id, errc::internal_error, {}, d);
        return true;
      } catch (...) {
        return false;
      }
    }
  }

  // A handshake-era call; one that waits for its client gives the worker back
  // (docs/eras.md#waiting-for-the-client) and is answered by its resumer.
  // Its stop token is `call_stop`'s, which the transport's stop and a cancellation read before the
  // peer registered the call both reach.
  void run_handshake(job&& j, const std::stop_source& call_stop) {
    std::shared_ptr<handshake_resumer> r;
    try {
      r = std::make_shared<handshake_resumer>(*this, std::move(j));
      r->on_stop.emplace(stop.get_token(), stop_forward{call_stop});
    } catch (...) {  // no memory for the resumer: the call runs without one (a wait holds the worker)
      const std::stop_callback on_stop{stop.get_token(), stop_forward{call_stop}};
      std::string out;
      std::optional<detail::stdio_call_link> link;
      emplace_link(link, j);
      const dispatch_context ctx{caller,  &client, sink.get(), call_stop.get_token(), link ? &*link : nullptr,
                                 nullptr, nullptr, nullptr,    &tasks_background, task_channel, shared_client};
      const bool answered = dispatch(j, ctx, out);
      settle_initialize(j.msg);
      if (link && !link->settle(answered)) return;
      if (answered) (void)sink->send(out);
      return;
    }
    std::optional<detail::stdio_call_link>& held = r->link;
    emplace_link(held, r->request);
    detail::stdio_call_link* const link = held.has_value() ? &*held : nullptr;
    std::string out;
    const dispatch_context ctx{caller,  &client, sink.get(), call_stop.get_token(), link,
                               nullptr, nullptr, r.get(),    &tasks_background, task_channel, shared_client};
    const bool answered = dispatch(r->request, ctx, out);
    settle_initialize(r->request.msg);
    if (r->suspended) return;
    if (link != nullptr && !link->settle(answered)) return;
    if (answered) (void)sink->send(out);
  }

  // The record of a `tools/call` (docs/transport.md#detached-calls-over-stdio); none for another
  // request, or when there is no memory for it (the call then cannot hold its answer).
  void emplace_link(std::optional<detail::stdio_call_link>& link, const job& j) noexcept {
    if (j.msg.method != "tools/call" || !j.msg.id) return;
    try {
      link.emplace(finals, request_id{*j.msg.id}, progress_token_of(j.msg.params["_meta"]["progressToken"]));
    } catch (...) {
      link.reset();
    }
  }

  // After an `initialize` ran: one that negotiated nothing (refused) leaves the connection
  // uninitialized, so the client may send it again (docs/eras.md#stdio-lifecycle).
  void settle_initialize(const message& msg) noexcept {
    if (msg.method != "initialize") return;
    try {
      if (client.protocol_version().empty()) initialize_admitted.store(false);
    } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory reading the version: keep the claim
    }
  }

  // The handshake-era lifecycle (docs/eras.md#stdio-lifecycle), on the reader after the era was
  // admitted: before `initialize` only `ping` is served; a second `initialize` is refused, the
  // first negotiation stays. False when refused: `out` holds the answer. The kill switch answers
  // first (the dispatch core's -32005), as everywhere.
  bool admit_lifecycle(const job& j, std::string& out) {
    if (j.envelope || srv.switches().disabled()) return true;
    const message& msg = j.msg;
    std::string_view message_text;
    std::string_view remediation;
    if (msg.method == "initialize") {
      if (!initialize_admitted.exchange(true)) return true;
      message_text = detail::stdio_already_initialized;
      remediation = "This connection is initialized already; its negotiated version and capabilities stay. "
                    "Start a new connection to negotiate again.";
    } else if (msg.method == "ping" || initialize_admitted.load()) {
      return true;
    } else {
      message_text = detail::stdio_not_initialized;
      remediation = "Send initialize first (only ping is served before it), or claim the per-request era in "
                    "params._meta.";
    }
    const auto cid = next_correlation_id();
    error_data d;
    d.correlation_id = cid.view();
    d.remediation = remediation;
    write_error_response(out, msg.id, errc::invalid_request, message_text, d);
    return false;
  }

  // Queues a continuation for the workers; false once the connection is closing.
  bool post_task(std::function<void()> task) noexcept {
    try {
      std::lock_guard lock{mu};
      if (closing) return false;
      tasks.push_back(std::move(task));
    } catch (...) {
      return false;
    }
    work_cv.notify_one();
    return true;
  }

  // A per-request call: its envelope, no peer, its own stop token (docs/eras.md#stdio). A call
  // cancelled before its answer is written answers nothing (MCP: no response after cancellation).
  void run_per_request(const job& j, const request_envelope& env, std::stop_source& call_stop) {
    const std::stop_callback on_stop{stop.get_token(), [&call_stop] { call_stop.request_stop(); }};
    detail::stdio_call_sink call_sink{*sink, call_stop.get_token()};
    std::optional<detail::stdio_call_link> link;
    emplace_link(link, j);
    const dispatch_context ctx{caller,  nullptr, &call_sink, call_stop.get_token(), link ? &*link : nullptr, &env,
                               nullptr, nullptr, &tasks_background};
    std::string out;
    const bool answered = dispatch(j, ctx, out) && !call_stop.stop_requested();
    if (link && !link->settle(answered)) return;
    if (answered) (void)sink->send(out);
  }

  void answer_now(const std::string& text) { (void)sink->send(text); }

  void dispatch_line(std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) return;  // blank lines are not messages
    json::parse_options po;
    po.max_bytes = options.max_message_bytes;
    po.max_depth = options.max_depth;
    po.retain_bytes = 0;
    job j{json::document{po}, {}, std::nullopt};
    auto parsed = parse_message(j.doc, line);
    std::string out;
    if (!parsed) {
      const auto cid = next_correlation_id();
      write_error_response(out, parsed.error(), cid.view());
      answer_now(out);
      return;
    }
    j.msg = *parsed;
    if (j.msg.kind != message_kind::request) {
      // Responses and notifications (cancellation) are handled at once, never queued behind calls.
      handle_other(j.msg);
      return;
    }
    if (!admit_era(j, out) || !admit_lifecycle(j, out)) {
      answer_now(out);
      return;
    }
    if (j.envelope && j.msg.method == "subscriptions/listen") {
      open_listen(j.msg);  // answered on the reader: it never waits for a worker
      return;
    }
    {
      std::lock_guard lock{mu};
      if (queue.size() < options.max_queued) {
        queue.push_back(std::move(j));
        work_cv.notify_one();
        return;
      }
    }
    const auto cid = next_correlation_id();
    error_data d;
    d.correlation_id = cid.view();
    d.retry_after_ms = retry::dispatch_queue_full;
    d.remediation = "Every worker is busy and the queue is full; wait for answers before sending more requests.";
    write_error_response(out, j.msg.id, errc::internal_error, "Server busy", d);
    answer_now(out);
  }

  // A client response or a notification. Cancellation reaches the queue and the per-request calls
  // whatever the era; the rest goes to the peer unless the connection is per-request (which keeps
  // no peer and sends no requests to the client) or the message claims that era.
  void handle_other(const message& msg) {
    if (msg.kind == message_kind::notification && msg.method == "notifications/cancelled") {
      cancel(msg.params["requestId"]);
    }
    if (pinned == detail::stdio_pin::per_request || claims_per_request_era(msg) ||
        !serves(options.eras, protocol_era::handshake)) {
      return;
    }
    std::string out;
    const dispatch_context ctx{caller, &client, sink.get(), stop.get_token()};
    (void)srv.handle(msg, ctx, out);
  }

  // Decides the era of a request and pins the connection's (docs/eras.md#stdio). False when
  // refused: `out` holds the answer.
  bool admit_era(job& j, std::string& out) {
    const message& msg = j.msg;
    const auto cid = [] { return next_correlation_id(); };  // minted for a refusal only
    if (claims_per_request_era(msg)) {
      auto env = read_envelope(msg);
      if (!env) {
        write_envelope_error(out, msg.id, env.error(), cid().view());
        return false;
      }
      if (pinned == detail::stdio_pin::handshake || !serves(options.eras, protocol_era::per_request)) {
        write_unsupported_revision(out, msg.id, supported_protocol_versions, env->protocol_version, cid().view());
        return false;
      }
      if (!is_per_request_protocol_version(env->protocol_version)) {
        write_unsupported_revision(out, msg.id, per_request_protocol_versions, env->protocol_version, cid().view());
        return false;
      }
      // `server/discover` is how a client probes: it leaves the connection free to `initialize`.
      if (pinned == detail::stdio_pin::none && msg.method != "server/discover") pinned = detail::stdio_pin::per_request;
      j.envelope = *env;
      return true;
    }
    if (pinned == detail::stdio_pin::handshake) return true;
    if (pinned == detail::stdio_pin::per_request && msg.method != "initialize") {
      // Every request of a per-request connection carries its envelope; this one has none.
      write_envelope_error(out, msg.id, read_envelope(msg).error(), cid().view());
      return false;
    }
    if (pinned == detail::stdio_pin::per_request || !serves(options.eras, protocol_era::handshake)) {
      std::string_view requested;
      if (msg.method == "initialize" && msg.params["protocolVersion"].is_string()) {
        requested = msg.params["protocolVersion"].as_string();
      }
      write_unsupported_revision(out, msg.id, per_request_protocol_versions, requested, cid().view());
      return false;
    }
    pinned = detail::stdio_pin::handshake;
    return true;
  }

  // A cancelled request that no worker has started is dropped: it never runs and is never
  // answered (MCP: the receiver of a cancellation sends no response). A call a worker is running
  // with that id is stopped (its answer is not written): a handshake call also through its peer,
  // which this reaches too even before the call registered there.
  void cancel(json::value rid) {
    const std::optional<request_id_view> id = detail::stdio_cancelled_id(rid);
    if (!id) return;
    {
      std::lock_guard lock{mu};
      std::erase_if(queue, [&](const job& q) { return q.msg.id && *q.msg.id == *id; });
      for (running_call& r : running) {
        if (r.id.view() == *id) r.stop.request_stop();
      }
    }
    // A call held for its final is released: its answer is never written, its work goes on
    // (docs/transport.md#detached-calls-over-stdio).
    {
      const std::lock_guard lock{finals->mu};
      for (;;) {
        const auto it = std::ranges::find_if(
            finals->calls, [&](const std::shared_ptr<detail::stdio_detached_call>& c) { return c->id.view() == *id; });
        if (it == finals->calls.end()) break;
        finals->release_locked(**it);
      }
    }
    // A cancelled listen ends without an answer; its lines not yet written are dropped.
    for (auto it = listens.begin(); it != listens.end();) {
      if (it->id.view() != *id) {
        ++it;
        continue;
      }
      it->subscription.cancel();  // once it returns, its callback queues nothing more
      events.drop(it->key);
      it = listens.erase(it);
    }
  }

  // An error answer written at once, with a fresh correlation id.
  void answer_error(const std::optional<request_id_view>& id, errc code, std::string_view text,
                    std::string_view remediation) {
    std::string out;
    const auto cid = next_correlation_id();
    error_data d;
    d.correlation_id = cid.view();
    d.remediation = remediation;
    write_error_response(out, id, code, text, d);
    answer_now(out);
  }

  // `subscriptions/listen` on a per-request connection (docs/eras.md#stdio): the filter checked
  // as on HTTP, the acknowledgement, then the events the filter asks for, each line stamped with
  // the listen's id. A listen granted nothing is answered its result at once.
  void open_listen(const message& msg) noexcept {
    constexpr std::string_view see = "See docs/eras.md#subscriptions for what subscriptions/listen accepts.";
    if (!msg.id) return;  // a request always has one
    try {
      auto filter = detail::read_listen_filter(msg, srv, options.max_listen_uris);
      if (!filter) {
        std::string out;
        const auto cid = next_correlation_id();
        detail::write_listen_refusal(out, msg.id, filter.error(), cid.view(), see);
        return answer_now(out);
      }
      if (options.max_listens != 0 && listens.size() >= options.max_listens) {
        return answer_error(msg.id, errc::stream_cap, "Subscription limit reached",
                            "Cancel a listen (notifications/cancelled naming its id) before opening another.");
      }
      std::string id_json = detail::listen_id_json(msg.id);
      std::string ack = detail::listen_frame("notifications/subscriptions/acknowledged", id_json, &*filter, {});
      if (filter->empty()) {
        answer_now(ack);
        return answer_now(detail::listen_result(msg.id, id_json, srv.info()));
      }
      request_id id{*msg.id};
      listens.reserve(listens.size() + 1);  // no throw once subscribed
      if (!event_writer.joinable()) event_writer = std::thread{[this] { write_events(); }};
      // Subscribed first, then opened with the acknowledgement: an event the client causes once it
      // has read the acknowledgement is never missed, and none is written before it (one published
      // in between is dropped: the client could not have caused it).
      const std::uint64_t key = ++listen_keys;
      auto subscription =
          srv.subscribe([q = &events, f = std::move(*filter), id_json, key, who = caller.id](const server_event& e) {
            if (auto line = detail::listen_event(f, id_json, who, e)) (void)q->push(key, std::move(*line));
          });
      events.open(key, std::move(ack));
      listens.push_back({key, std::move(id), std::move(id_json), std::move(subscription)});
    } catch (...) {
      try {
        answer_error(msg.id, errc::internal_error, {}, "The server ran out of resources; retry later.");
      } catch (...) {  // NOLINT(bugprone-empty-catch): no memory for the answer either
      }
    }
  }

  // A server event for the handshake era's client (docs/eras.md#stdio): `resource_updated` when it
  // subscribed to the URI, a list change once it is initialized and when the server advertises
  // `listChanged`. Queued for the event writer: the publishing thread never waits for the output.
  void handshake_event(const server_event& e) noexcept {
    try {
      if (e.kind == server_event_kind::task_status) return;  // a listen's only (docs/tasks.md#notifications)
      const bool updated = e.kind == server_event_kind::resource_updated;
      if (updated ? !client.subscribed(e.uri) : !(srv.options().list_changed && client.initialized())) return;
      (void)events.push(detail::stdio_handshake_key, event_notification(e));
    } catch (...) {  // NOLINT(bugprone-empty-catch): no memory for this line; the next event tries again
    }
  }

  // The event writer: the listens' lines, in the order they were published.
  void write_events() {
    while (auto line = events.pop()) (void)sink->send(*line);
  }

  // The end of the connection (docs/eras.md#stdio): every open listen is answered its result,
  // after the lines already queued for it (dropped on `stop()`: everything ends at once).
  void close_listens(bool discard) {
    for (detail::stdio_listen& l : listens) l.subscription.cancel();
    events.close(discard);
    if (event_writer.joinable()) event_writer.join();
    for (const detail::stdio_listen& l : listens) {
      try {
        answer_now(detail::listen_result(l.id.view(), l.id_json, srv.info()));
      } catch (...) {  // NOLINT(bugprone-empty-catch): no memory for this result; the others still go
      }
    }
    listens.clear();
  }

  // The end of the connection for the calls held for their finals
  // (docs/transport.md#detached-calls-over-stdio): they get until `until` for their finals, then
  // each one still held is answered the fallback final; later reports write nothing.
  void end_detached(std::chrono::steady_clock::time_point until) noexcept {
    std::unique_lock lock{finals->mu};
    finals->released.wait_until(lock, until, [this] { return finals->calls.empty(); });
    while (!finals->calls.empty()) {
      detail::stdio_detached_call& c = *finals->calls.front();
      c.finished = true;
      try {
        finals->write_locked(detail::stdio_fallback_final(c));
      } catch (...) {  // NOLINT(bugprone-empty-catch): no memory for this fallback; the others still go
      }
      finals->release_locked(c);
    }
    finals->sink = nullptr;
  }

  void too_large() {
    answer_error(std::nullopt, errc::invalid_request, "Message too large",
                 "Send messages no longer than the server's limit (4 MiB by default), one per line.");
  }
};

MCPCORE_DECL stdio_transport::stdio_transport(server& s, principal caller, stdio_options options)
    : impl_(new impl(s, std::move(caller), options)) {
  if (impl_->options.workers == 0) impl_->options.workers = 1;
  if (::pipe(impl_->wake) == 0) {
    (void)::fcntl(impl_->wake[0], F_SETFD, FD_CLOEXEC);
    (void)::fcntl(impl_->wake[1], F_SETFD, FD_CLOEXEC);
  }
}

MCPCORE_DECL stdio_transport::~stdio_transport() {
  for (int fd : impl_->wake) {
    if (fd >= 0) ::close(fd);
  }
  delete impl_;
}

MCPCORE_DECL peer& stdio_transport::client() noexcept { return impl_->client; }

MCPCORE_DECL void stdio_transport::stop() noexcept {
  impl_->stop.request_stop();
  if (impl_->wake[1] >= 0) {
    const char c = 1;
    (void)!::write(impl_->wake[1], &c, 1);
  }
}

MCPCORE_DECL bool stdio_transport::notify_resource_updated(std::string_view uri) {
  detail::fd_line_sink* sink = nullptr;
  {
    // `run` installs the sink on its own thread, possibly while another thread notifies.
    std::lock_guard lock{impl_->mu};
    sink = impl_->sink.get();
  }
  return sink != nullptr && mcpcore::notify_resource_updated(impl_->client, *sink, uri);
}

MCPCORE_DECL int stdio_transport::run(int in_fd, int out_fd) {
  auto& st = *impl_;
  {
    std::lock_guard lock{st.mu};
    st.sink = std::make_unique<detail::fd_line_sink>(out_fd);
    st.task_channel = std::make_shared<detail::stdio_task_channel>(*st.sink);
    st.closing = false;
  }
  {
    const std::lock_guard lock{st.finals->mu};
    st.finals->sink = st.sink.get();
    st.finals->cap = st.options.max_detached_calls;
  }
  st.pinned = detail::stdio_pin::none;  // a new connection: its first request decides
  st.initialize_admitted.store(false);  // and it is not initialized
  st.events.reopen();
  // The handshake era's notifications (docs/eras.md#stdio): queued by the server's events, written
  // by the event writer.
  st.events.open(detail::stdio_handshake_key);
  if (!st.event_writer.joinable()) st.event_writer = std::thread{[&st] { st.write_events(); }};
  event_subscription handshake = st.srv.subscribe([&st](const server_event& e) { st.handshake_event(e); });
  st.running.reserve(st.options.workers);  // registering a running call never allocates
  std::vector<std::thread> workers;
  workers.reserve(st.options.workers);
  for (std::size_t i = 0; i < st.options.workers; ++i) workers.emplace_back([&st] { st.worker(); });

  int status = 0;
  std::string pending;        // the incomplete line so far
  bool discarding = false;    // skipping the rest of an over-long line
  std::vector<char> buf(std::size_t{64} << 10);
  for (;;) {
    if (st.stop.stop_requested()) break;
    pollfd fds[2] = {{in_fd, POLLIN, 0}, {st.wake[0], POLLIN, 0}};
    const int ready = ::poll(fds, st.wake[0] >= 0 ? 2 : 1, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      status = 1;
      break;
    }
    if (fds[1].revents != 0 && st.wake[0] >= 0) break;  // stop()
    if (fds[0].revents == 0) continue;
    const auto n = ::read(in_fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      status = 1;
      break;
    }
    if (n == 0) break;  // end of input
    std::string_view chunk{buf.data(), static_cast<std::size_t>(n)};
    while (!chunk.empty()) {
      const auto nl = chunk.find('\n');
      const auto piece = chunk.substr(0, nl);
      if (!discarding) {
        if (pending.size() + piece.size() > st.options.max_message_bytes) {
          discarding = true;
          pending.clear();
          pending.shrink_to_fit();
          st.too_large();
        } else {
          pending.append(piece);
        }
      }
      if (nl == std::string_view::npos) break;
      if (!discarding) st.dispatch_line(pending);
      discarding = false;
      pending.clear();
      if (pending.capacity() > (std::size_t{1} << 20)) pending.shrink_to_fit();
      chunk.remove_prefix(nl + 1);
    }
  }
  if (!discarding && !pending.empty() && !st.stop.stop_requested()) st.dispatch_line(pending);  // last line without '\n'

  // Shutdown: no answer from the client can arrive any more.
  const bool stopped = st.stop.stop_requested();
  const auto drain_until = std::chrono::steady_clock::now() + st.options.drain_timeout;
  st.client.input_closed();
  // No request can ask for a task's result any more: the tasks stop now rather than after the
  // drain (docs/tasks.md#shutdown); the second call below stops those created during the drain.
  st.srv.cancel_tasks();
  {
    std::unique_lock lock{st.mu};
    if (!stopped) {
      st.idle_cv.wait_until(lock, drain_until,
                            [&] { return st.queue.empty() && st.tasks.empty() && st.busy == 0; });
    }
    st.closing = true;
    st.queue.clear();  // requests never started are dropped with the connection
    // Continuations still queued run (they end their calls); later ones are refused and end
    // their calls where they arise.
  }
  st.stop.request_stop();
  st.srv.cancel_tasks();  // docs/tasks.md#shutdown: the tasks' work stops with the workers
  st.client.close();
  st.work_cv.notify_all();
  for (auto& t : workers) t.join();
  st.task_channel->close();
  st.end_detached(stopped ? std::chrono::steady_clock::now() : drain_until);
  handshake.cancel();
  st.close_listens(stopped);
  return status;
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_STDIO_IPP
