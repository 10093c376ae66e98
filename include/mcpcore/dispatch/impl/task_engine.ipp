// SPDX-License-Identifier: Apache-2.0
// The task engine's state (docs/tasks.md): the store, the tasks whose work runs in this process,
// the waits of `tasks/result`, and the steps every task takes: creation, input, the terminal, the
// cancellation, with their audit rows, metrics and status notifications. The tools/call side (what
// runs the handler) is task_run.ipp.
#ifndef MCPCORE_IMPL_TASK_ENGINE_IPP
#define MCPCORE_IMPL_TASK_ENGINE_IPP

#include <mcpcore/dispatch/server.hpp>

#include <mcpcore/detail/random.hpp>
#include <mcpcore/dispatch/impl/call_state.ipp>
#include <mcpcore/dispatch/impl/peer.ipp>
#include <mcpcore/dispatch/impl/events.ipp>
#include <mcpcore/dispatch/impl/server_state.ipp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/task.hpp>
#include <mcpcore/wire/error.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE
namespace detail {

/// The extension key of the 2026-07-28 tasks (a client declares it per request, the server in
/// `server/discover`).
inline constexpr std::string_view tasks_extension = "io.modelcontextprotocol/tasks";
/// The `_meta` key of a `tasks/result` answer naming its task.
inline constexpr std::string_view related_task_meta_key = "io.modelcontextprotocol/related-task";
/// The message of every unknown, expired or foreign task id (docs/tasks.md#visibility).
inline constexpr std::string_view unknown_task_message = "Unknown task";
/// The status message of a task the restart abandoned, and its error.
inline constexpr std::string_view task_restart_message = "the server restarted before the task finished";
/// The status message of a task stopped by `server::cancel_tasks`.
inline constexpr std::string_view task_shutdown_message = "the server stopped before the task finished";

// Why a task was not created (mcp_tasks_refused_total{reason}).
enum class task_refusal : std::uint8_t { owner_cap, global_cap, busy, store, unavailable, count };
inline constexpr std::string_view task_refusal_names[] = {"owner_cap", "global_cap", "busy", "store",
                                                          "unavailable"};

// The terminal statuses, in the order of mcp_tasks_finished_total{status}.
inline constexpr task_status task_terminals[] = {task_status::completed, task_status::failed, task_status::cancelled};

struct task_metrics {
  counter created;
  counter finished[std::size(task_terminals)];
  counter refused[static_cast<std::size_t>(task_refusal::count)];
  gauge running;
};

class task_waiter;

/// A task whose work runs in this process: what the store does not keep (the stop source, the
/// client's channel, the input rounds, the `tasks/result` waits).
struct live_task {
  std::string id;
  principal owner;
  std::string tool;
  bool per_request = false;  // created by a 2026-07-28 request
  task_time created_at{};
  std::chrono::milliseconds ttl{};
  std::chrono::milliseconds poll_interval{};
  std::stop_source stop;  // the work's stop token
  /// 2025-11-25: the creating session's channel and the original progress token.
  std::shared_ptr<message_sink> channel;
  std::optional<request_id> progress_token;
  /// 2026-07-28: the server's event hub, where its status changes go (docs/tasks.md#notifications);
  /// set when it is stored.
  std::shared_ptr<event_hub> events;

  enum class stop_cause : std::uint8_t { none, cancelled, shutdown };

  std::mutex mu;  // guards what follows; held across this task's store transitions
  bool terminal = false;
  stop_cause cause = stop_cause::none;
  bool detached = false;  // an operation's `finish` ends it, not the handler's return
  /// The record its detached work reports to (one per task, shared by every `detach`).
  std::weak_ptr<operation_link> operation;
  /// The execution id of its detached work (the first `detach`'s), carried in its progress `_meta`.
  std::string execution_id;
  bool sent_progress = false;
  double last_progress = 0;
  // 2026-07-28 input (docs/tasks.md#input): the requests still open (key, request object JSON),
  // the answers so far (key, answer JSON), the handler's state and its rounds.
  std::vector<std::pair<std::string, std::string>> pending;
  std::vector<std::pair<std::string, std::string>> answers;
  std::size_t answers_bytes = 0;
  std::string round_state;
  std::size_t rounds = 0;
  /// Runs the handler again once every open request is answered (immediate tools); false when it
  /// could not be posted.
  std::function<bool(background_executor*)> resume;
  std::vector<std::shared_ptr<task_waiter>> waiters;
  // 2025-11-25 input (docs/tasks.md#input): the creating session's peer (weakly: a gone session
  // fails the task), the round's requests out to the client, their deadline and the round's
  // number (a wake-up of an ended round is ignored).
  std::weak_ptr<peer> client;
  std::vector<peer::impl::asked> asked;
  std::chrono::steady_clock::time_point input_deadline{};
  std::uint64_t input_round = 0;
};

/// Withdraws the requests of a 2025-11-25 input round still open (docs/tasks.md#input): they leave
/// the peer's table, so a late answer is dropped, and the client is told with
/// `notifications/cancelled` (MCP: the sender of an abandoned request says so), unless no answer
/// could come any more. Called under no lock.
inline void withdraw_task_input(const live_task& t, const std::vector<peer::impl::asked>& asked,
                                std::string_view reason) noexcept {
  if (asked.empty()) return;
  const std::shared_ptr<peer> p = t.client.lock();
  if (!p) return;
  tell_withdrawn(p->state().withdraw(asked), reason, t.channel.get());
}

/// The engine of one server (`server::impl::tasks`; null when tasks are off).
struct task_engine {
  task_engine(std::unique_ptr<task_store_base> st, task_options o) : store(std::move(st)), options(o) {
    std::random_device rd;
    cursor_salt = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  }
  /// A task waiting for input keeps its `resume`, which holds the task itself (and its tool): a
  /// server destroyed with such tasks drops those, so that they are freed with it.
  ~task_engine() {
    for (const auto& entry : live) {
      std::vector<peer::impl::asked> asked;
      {
        const std::lock_guard<std::mutex> lock(entry.second->mu);
        entry.second->resume = nullptr;
        entry.second->waiters.clear();
        asked.swap(entry.second->asked);
      }
      withdraw_task_input(*entry.second, asked, "the server stopped");
    }
  }
  task_engine(const task_engine&) = delete;
  task_engine& operator=(const task_engine&) = delete;

  std::unique_ptr<task_store_base> store;
  task_options options;
  std::uint64_t cursor_salt = 0;
  task_metrics m;

  std::mutex mu;  // a leaf: guards what follows
  std::map<std::string, std::shared_ptr<live_task>, std::less<>> live;
  std::map<std::string, std::size_t, std::less<>> waits;  // tasks/result waits per principal
  std::chrono::steady_clock::time_point last_sweep{};

  [[nodiscard]] std::shared_ptr<live_task> find_live(std::string_view id) {
    const std::lock_guard lock{mu};
    const auto it = live.find(id);
    return it == live.end() ? nullptr : it->second;
  }
  void forget_live(std::string_view id) noexcept {
    const std::lock_guard lock{mu};
    const auto it = live.find(id);
    if (it == live.end()) return;
    live.erase(it);
    m.running.set(static_cast<std::int64_t>(live.size()));
  }
  bool add_wait(std::string_view who) noexcept {
    const std::lock_guard lock{mu};
    try {
      auto it = waits.find(who);
      if (it == waits.end()) it = waits.emplace(std::string{who}, 0).first;
      if (it->second >= options.max_result_waits_per_principal) return false;
      ++it->second;
      return true;
    } catch (...) {
      return false;
    }
  }
  void remove_wait(std::string_view who) noexcept {
    const std::lock_guard lock{mu};
    const auto it = waits.find(who);
    if (it == waits.end()) return;
    if (--it->second == 0) waits.erase(it);
  }
};

/// The server's clock as a task stamp (UTC, milliseconds).
[[nodiscard]] inline task_time task_now(const server::impl& s) noexcept {
  return std::chrono::floor<std::chrono::milliseconds>(s.clock->system_now());
}

/// A requested lifetime clamped into [min_ttl, max_ttl]; none requested: the default.
[[nodiscard]] inline std::chrono::milliseconds clamp_task_ttl(const task_options& o,
                                                              std::optional<std::int64_t> requested) noexcept {
  const std::chrono::milliseconds want = requested ? std::chrono::milliseconds{*requested} : o.default_ttl;
  return std::clamp(want, std::min(o.min_ttl, o.max_ttl), o.max_ttl);
}

// ---- the wire ---------------------------------------------------------------------------------------

/// The members of a task (MCP `Task`): 2025-11-25 `ttl`/`pollInterval`, 2026-07-28
/// `ttlMs`/`pollIntervalMs` (docs/tasks.md#the-wire).
inline void write_task_members(json::writer& w, const task_record& r, bool per_request) {
  w.member("taskId", r.id).member("status", to_string(r.status));
  if (!r.status_message.empty()) w.member("statusMessage", r.status_message);
  w.member("createdAt", to_rfc3339(r.created_at)).member("lastUpdatedAt", to_rfc3339(r.updated_at));
  w.member(per_request ? "ttlMs" : "ttl", r.ttl.count());
  w.member(per_request ? "pollIntervalMs" : "pollInterval", r.poll_interval.count());
}

/// The record of `t` at `status` now, as a status notification describes it.
[[nodiscard]] inline task_record live_record(const live_task& t, task_status status, std::string_view message,
                                             task_time now) {
  task_record r;
  r.id = t.id;
  r.owner = t.owner.id;
  r.tool = t.tool;
  r.status = status;
  r.status_message = std::string{message};
  r.created_at = t.created_at;
  r.updated_at = now;
  r.ttl = t.ttl;
  r.poll_interval = t.poll_interval;
  return r;
}

/// The members of a 2026-07-28 task as `tasks/get` answers it (MCP `DetailedTask`, without
/// `resultType`): the task and, by status, its `inputRequests`, `result` or `error`
/// (docs/tasks.md#tasksget).
inline void write_detailed_task_members(json::writer& w, const task_record& r) {
  write_task_members(w, r, true);
  if (r.payload.empty()) return;
  switch (r.payload_kind) {
    case task_payload::input_requests:
      if (r.status == task_status::input_required) w.raw_member("inputRequests", r.payload);
      break;
    case task_payload::result: w.raw_member("result", r.payload); break;
    case task_payload::error: w.raw_member("error", r.payload); break;
    case task_payload::none: break;
  }
}

/// A status change of task `t`, now `r` (docs/tasks.md#notifications): a 2025-11-25 task sends
/// `notifications/tasks/status` (a full task) to its creating session; a 2026-07-28 one publishes
/// `server_event_kind::task_status` with the task as `tasks/get` describes it, which the listens of
/// its owner naming it deliver. Called outside the task's lock.
inline void send_task_status(const live_task& t, const task_record& r) noexcept {
  if (t.per_request) {
    if (!t.events || r.id.empty()) return;
    try {
      std::string task;
      json::writer w{task};
      w.begin_object();
      write_detailed_task_members(w, r);
      w.end_object();
      publish_event(*t.events,
                    server_event{.kind = server_event_kind::task_status, .task_id = r.id, .owner = t.owner.id, .task_json = task});
    } catch (...) {  // NOLINT(bugprone-empty-catch): best effort (no memory for the task's text)
    }
    return;
  }
  if (!t.channel) return;
  try {
    std::string out;
    write_notification(out, "notifications/tasks/status", [&](json::writer& w) {
      w.begin_object();
      write_task_members(w, r, false);
      w.end_object();
    });
    (void)t.channel->send(out);
  } catch (...) {  // NOLINT(bugprone-empty-catch): best effort (MCP: a client must not rely on them)
  }
}

/// A JSON-RPC error object as JSON text (a failed task's payload).
[[nodiscard]] inline std::string error_object_json(const error_object& e) {
  std::string out;
  json::writer w{out};
  w.begin_object().member("code", e.code).member("message", e.message);
  if (!e.data_json.empty()) w.raw_member("data", e.data_json);
  w.end_object();
  return out;
}

/// A -32603 error object with a fresh correlation id.
[[nodiscard]] inline std::string internal_error_json(const server::impl& s, std::string_view message,
                                                     std::string_view remediation) {
  const auto cid = s.mint_cid();
  error_data d;
  d.correlation_id = cid.view();
  d.remediation = remediation;
  return error_object_json(make_error(errc::internal_error, message, d));
}

/// `v`'s members (an object; anything else reads as `{}`) with
/// `_meta["io.modelcontextprotocol/related-task"] = {"taskId": <task_id>}` merged into its `_meta`
/// (MCP: a message associated with a task says so; any related-task member of its own is replaced).
inline void write_with_related_task(json::writer& w, json::value v, std::string_view task_id) {
  const auto related = [&] { w.key(related_task_meta_key).begin_object().member("taskId", task_id).end_object(); };
  w.begin_object();
  bool meta = false;
  if (v.is_object()) {
    for (const json::member m : v.members()) {
      if (m.key != "_meta") {
        w.key(m.key).value(m.value());
        continue;
      }
      meta = true;
      w.key("_meta").begin_object();
      if (m.value().is_object()) {
        for (const json::member mm : m.value().members()) {
          if (mm.key != related_task_meta_key) w.key(mm.key).value(mm.value());
        }
      }
      related();
      w.end_object();
    }
  }
  if (!meta) {
    w.key("_meta").begin_object();
    related();
    w.end_object();
  }
  w.end_object();
}

// ---- audit and metrics ----------------------------------------------------------------------------

inline void audit_task(server::impl& s, std::string_view action, const live_task& t, audit_result result,
                       std::string_view detail) noexcept {
  try {
    (void)s.record(action, "mcp_task", t.id, t.owner, result, detail, {});
  } catch (...) {  // NOLINT(bugprone-empty-catch): record contains its own failures; this is the string's
  }
}

inline void count_task_finished(task_engine& g, task_status st) noexcept {
  for (std::size_t i = 0; i < std::size(task_terminals); ++i) {
    if (task_terminals[i] == st) g.m.finished[i].inc();
  }
}

inline void count_task_refused(task_engine& g, task_refusal r) noexcept {
  g.m.refused[static_cast<std::size_t>(r)].inc();
}

// ---- tasks/result waits (2025-11-25) --------------------------------------------------------------

/// A `tasks/result` waiting for its task's terminal (docs/tasks.md#tasksresult): without a thread
/// when the transport gave a `call_resumer`, else on the dispatching thread. It ends once: with the
/// terminal's answer, or without one when the request is cancelled, its stream closes, or the
/// server stops.
class task_waiter final : public std::enable_shared_from_this<task_waiter> {
 public:
  task_waiter(task_engine& g, const dispatch_context& ctx, request_id id)
      : g_(g), ctx_(ctx), id_(std::move(id)), who_(ctx.caller.id), scope_(ctx_, id_.view()) {
    ctx_.report = nullptr;  // the transport's, on the dispatching thread's stack
  }
  task_waiter(const task_waiter&) = delete;
  task_waiter& operator=(const task_waiter&) = delete;
  ~task_waiter() = default;

  /// False when the id is already in flight on the peer.
  [[nodiscard]] bool registered() const noexcept { return scope_.registered(); }
  [[nodiscard]] request_id_view id() const noexcept { return id_.view(); }

  /// Arms the stop (the request's cancellation, the transport's stop token): from now on a stop
  /// ends the wait without an answer. `task` is where the waiter is listed (it unlists itself).
  void arm(const std::shared_ptr<live_task>& task, call_resumer* resumer, std::shared_ptr<void> keep) {
    task_ = task;
    {
      const std::lock_guard lock{mu_};
      resumer_ = resumer;
      keep_ = std::move(keep);
    }
    scope_.link(ctx_.stop);
    std::weak_ptr<task_waiter> weak = weak_from_this();
    on_stop_.emplace(scope_.token(), std::function<void()>{[weak] {
                       if (auto w = weak.lock()) w->stopped();
                     }});
  }

  /// The terminal's answer (`answered`: `out` is a response) or none; the first call wins.
  void complete(bool answered, std::string out) noexcept {
    call_resumer* r = nullptr;
    std::shared_ptr<void> keep;
    std::string text;
    {
      const std::lock_guard lock{mu_};
      if (done_) return;
      done_ = true;
      answered_ = answered && !out.empty();
      r = resumer_;
      keep = std::move(keep_);
      if (r != nullptr) {
        text = std::move(out);
      } else {
        out_ = std::move(out);
      }
    }
    g_.remove_wait(who_);
    scope_.release();
    if (r != nullptr) {
      const bool with_answer = answered && !text.empty();  // before `text` is moved into the call
      r->finish(with_answer, std::move(text));
    } else {
      cv_.notify_all();
    }
  }

  /// Whether the wait has ended.
  [[nodiscard]] bool done() noexcept {
    const std::lock_guard lock{mu_};
    return done_;
  }

  /// The thread's wait (no resumer): until `complete`; what `server::handle` returns.
  bool wait(std::string& out) {
    std::unique_lock lock{mu_};
    cv_.wait(lock, [this] { return done_; });
    if (answered_) out += out_;
    return answered_;
  }

 private:
  void stopped() noexcept {
    if (auto t = task_.lock()) {
      const std::lock_guard lock{t->mu};
      std::erase_if(t->waiters, [this](const std::shared_ptr<task_waiter>& w) { return w.get() == this; });
    }
    complete(false, {});
  }

  task_engine& g_;
  dispatch_context ctx_;  // the transport's, copied; what it refers to lives with `keep_`
  request_id id_;
  std::string who_;
  call_scope scope_;
  std::weak_ptr<live_task> task_;
  call_resumer* resumer_ = nullptr;
  std::shared_ptr<void> keep_;
  std::optional<std::stop_callback<std::function<void()>>> on_stop_;
  std::mutex mu_;  // a leaf
  std::condition_variable cv_;
  bool done_ = false;
  bool answered_ = false;
  std::string out_;
};

/// The answer of `tasks/result` for a terminal task (docs/tasks.md#tasksresult): the stored result
/// with the related-task `_meta`, the stored error, or -32602 for a cancelled task.
inline void write_task_result_answer(const server::impl& s, std::string& out, request_id_view id,
                                     const task_record& r) {
  if (r.status == task_status::cancelled || r.payload_kind == task_payload::none ||
      r.payload_kind == task_payload::input_requests) {
    const auto cid = s.mint_cid();
    error_data d;
    d.correlation_id = cid.view();
    d.remediation = "The task was cancelled: it has no result. Call the tool again for a new one.";
    write_error_response(out, id, errc::invalid_params, "task was cancelled", d);
    return;
  }
  if (r.payload_kind == task_payload::error) {
    json::writer w{out};
    begin_message(w, id).raw_member("error", r.payload).end_object();
    return;
  }
  json::document doc;
  const auto root = doc.parse(r.payload);
  json::writer w{out};
  begin_message(w, id).key("result");
  write_with_related_task(w, root ? *root : json::value{}, r.id);
  w.end_object();
}

// ---- the steps of a task --------------------------------------------------------------------------

/// Stores a new task (docs/tasks.md#when-a-call-becomes-a-task): its id, its record (before the
/// creation's answer is written, so that a `tasks/get` that follows finds it), its entry among the
/// live tasks, the audit row. The caller holds `t->mu`. A refusal names its reason; nothing is kept.
inline std::expected<task_record, task_refusal> store_task(server::impl& s, const std::shared_ptr<live_task>& tp) {
  task_engine& g = *s.tasks;
  live_task& t = *tp;
  task_record r;
  r.owner = t.owner.id;
  r.tool = t.tool;
  r.status = task_status::working;
  r.created_at = r.updated_at = task_now(s);
  r.ttl = t.ttl;
  r.poll_interval = t.poll_interval;
  for (int attempt = 0;; ++attempt) {
    auto id = random_hex(task_id_length / 2);
    if (!id) return std::unexpected(task_refusal::store);
    r.id = std::move(*id);
    const auto made = g.store->create({r, g.options.max_per_principal, g.options.max_total, r.created_at});
    if (!made) return std::unexpected(task_refusal::store);
    if (made->status == task_create_status::created) {
      r.seq = made->seq;
      break;
    }
    if (made->status == task_create_status::owner_cap) return std::unexpected(task_refusal::owner_cap);
    if (made->status == task_create_status::global_cap) return std::unexpected(task_refusal::global_cap);
    if (attempt > 0) return std::unexpected(task_refusal::store);  // two 128-bit collisions: a broken source
  }
  t.id = r.id;
  t.created_at = r.created_at;
  if (t.per_request) t.events = s.events;
  try {
    const std::lock_guard lock{g.mu};
    g.live.emplace(t.id, tp);
    g.m.running.set(static_cast<std::int64_t>(g.live.size()));
  } catch (...) {
    // No memory to list it: the task cannot be cancelled or awaited here, so it ends now.
    [[maybe_unused]] const auto ended = g.store->transition(
        {r.id, task_status::failed, "the server ran out of memory", task_payload::none, {}, r.created_at});
    return std::unexpected(task_refusal::store);
  }
  g.m.created.inc();
  audit_task(s, "mcp.task.created", t, audit_result::success, "tool=" + sanitize_audit_value(t.tool));
  return r;
}

/// Ends a live task with `status` and its payload (docs/tasks.md#outcomes): the store's
/// compare-and-set decides (a task already terminal, a cancelled one, stays as it is), then the
/// waits of `tasks/result` get their answer, the status notification goes, the audit row and the
/// counters are written. Whether this call ended it.
inline bool finish_task(server::impl& s, const std::shared_ptr<live_task>& tp, task_status status, task_payload kind,
                        std::string_view payload, std::string_view message) noexcept {
  task_engine& g = *s.tasks;
  live_task& t = *tp;
  std::vector<std::shared_ptr<task_waiter>> waiters;
  std::vector<peer::impl::asked> asked;
  bool ended = false;
  task_record r;
  try {
    const std::lock_guard lock{t.mu};
    if (t.terminal) return false;
    const task_time now = task_now(s);
    const auto moved = g.store->transition({t.id, status, message, kind, payload, now});
    t.terminal = true;  // whatever the store said, this work is over
    t.pending.clear();
    t.resume = nullptr;
    waiters.swap(t.waiters);
    asked.swap(t.asked);
    ended = moved && *moved == task_transition_status::updated;
    if (ended) {
      r = live_record(t, status, message, now);
      r.payload_kind = kind;
      r.payload = std::string{payload};
    } else {
      // Lost to a cancel (or the task expired): the stored state answers the waits.
      auto stored = g.store->get(t.id, now);
      if (stored) {
        std::optional<task_record>& found = *stored;
        if (found) r = std::move(*found);
      }
    }
  } catch (...) {
    const std::lock_guard lock{t.mu};
    t.terminal = true;
    waiters.swap(t.waiters);
    asked.swap(t.asked);
  }
  withdraw_task_input(t, asked, "the task ended");
  g.forget_live(t.id);
  if (ended) {
    count_task_finished(g, status);
    send_task_status(t, r);
    try {
      audit_task(s, "mcp.task.finished", t,
                 status == task_status::completed ? audit_result::success : audit_result::failure,
                 std::string{"status="} + std::string{to_string(status)});
    } catch (...) {  // NOLINT(bugprone-empty-catch): no memory for the detail; the counters have it
    }
  }
  for (const auto& w : waiters) {
    try {
      std::string out;
      if (!r.id.empty()) {
        write_task_result_answer(s, out, w->id(), r);
      } else {
        const auto cid = s.mint_cid();
        error_data d;
        d.correlation_id = cid.view();
        d.remediation = "The task expired; it has no result any more.";
        write_error_response(out, w->id(), errc::invalid_params, unknown_task_message, d);
      }
      w->complete(true, std::move(out));
    } catch (...) {
      w->complete(false, {});
    }
  }
  return ended;
}

/// Cancels a task (docs/tasks.md#cancellation): `cancelled` in the store, the work stopped, the
/// waits answered -32602. `terminal` when it had ended already (nothing changes), `not_found` when
/// the store has no such task.
inline task_transition_status cancel_task(server::impl& s, std::string_view id, task_record& out) {
  task_engine& g = *s.tasks;
  const std::shared_ptr<live_task> tp = g.find_live(id);
  const task_time now = task_now(s);
  std::vector<std::shared_ptr<task_waiter>> waiters;
  std::vector<peer::impl::asked> asked;
  constexpr std::string_view message = "cancelled by the client";
  task_transition_status moved = task_transition_status::not_found;
  {
    std::unique_lock<std::mutex> lock;
    if (tp) {
      lock = std::unique_lock{tp->mu};
      if (tp->terminal) return task_transition_status::terminal;
    }
    const auto done = g.store->transition({id, task_status::cancelled, message, task_payload::none, {}, now});
    if (!done) return task_transition_status::not_found;
    moved = *done;
    if (tp && moved == task_transition_status::updated) {
      tp->terminal = true;
      tp->cause = live_task::stop_cause::cancelled;
      tp->pending.clear();
      tp->resume = nullptr;
      waiters.swap(tp->waiters);
      asked.swap(tp->asked);
    }
  }
  if (moved != task_transition_status::updated) return moved;
  if (tp) withdraw_task_input(*tp, asked, "the task was cancelled");
  auto stored = g.store->get(id, now);
  if (stored) {
    std::optional<task_record>& found = *stored;
    if (found) out = std::move(*found);
  }
  count_task_finished(g, task_status::cancelled);
  if (tp) {
    tp->stop.request_stop();
    g.forget_live(id);
    send_task_status(*tp, out);
    audit_task(s, "mcp.task.cancelled", *tp, audit_result::success, "status=cancelled");
  }
  for (const auto& w : waiters) {
    try {
      std::string text;
      write_task_result_answer(s, text, w->id(), out);
      w->complete(true, std::move(text));
    } catch (...) {
      w->complete(false, {});
    }
  }
  return moved;
}

/// The server's stop (docs/tasks.md#shutdown): every running task's work is asked to stop (it
/// then fails, unless cancelled), and every wait of `tasks/result` ends without an answer.
inline void stop_all_tasks(task_engine& g) noexcept {
  std::vector<std::shared_ptr<live_task>> now;
  {
    const std::lock_guard lock{g.mu};
    try {
      now.reserve(g.live.size());
      for (const auto& [id, t] : g.live) now.push_back(t);
    } catch (...) {  // NOLINT(bugprone-empty-catch): best effort; what was copied is stopped
    }
  }
  for (const auto& t : now) {
    std::vector<std::shared_ptr<task_waiter>> waiters;
    {
      const std::lock_guard lock{t->mu};
      if (t->cause == live_task::stop_cause::none) t->cause = live_task::stop_cause::shutdown;
      waiters.swap(t->waiters);
    }
    t->stop.request_stop();
    for (const auto& w : waiters) w->complete(false, {});
  }
}

/// The input of a 2025-11-25 task the client could not give: the task fails with -32603 naming
/// the input (docs/tasks.md#input); a task the server stopped fails as stopped.
inline void fail_task_input(server::impl& s, const std::shared_ptr<live_task>& t, std::string_view why) noexcept {
  try {
    bool stopped = false;
    {
      const std::lock_guard lock{t->mu};
      stopped = t->cause == live_task::stop_cause::shutdown;
    }
    if (stopped) {
      (void)finish_task(s, t, task_status::failed, task_payload::error,
                        internal_error_json(s, task_shutdown_message, "Call the tool again."), task_shutdown_message);
      return;
    }
    (void)finish_task(s, t, task_status::failed, task_payload::error,
                      internal_error_json(s, "The tool could not get its input: " + std::string{why},
                                          "Call the tool again, and answer the server's requests while its task runs."),
                      "the tool could not get its input");
  } catch (...) {  // NOLINT(bugprone-empty-catch): no memory for the message; the ttl ends the task
  }
}

/// The maintenance tick's look at the 2025-11-25 input rounds (docs/tasks.md#input): a round whose
/// requests are still open `server_options::max_client_request_timeout` after they went out ends
/// the task (failed, naming the first open input); the open requests are withdrawn.
inline void expire_task_input(server::impl& s) noexcept {
  task_engine& g = *s.tasks;
  std::vector<std::shared_ptr<live_task>> all;
  {
    const std::lock_guard lock{g.mu};
    try {
      all.reserve(g.live.size());
      for (const auto& [id, t] : g.live) all.push_back(t);
    } catch (...) {  // NOLINT(bugprone-empty-catch): the next tick looks again
    }
  }
  const auto now = s.clock->steady_now();
  for (const auto& t : all) {
    try {
      std::string why;
      std::vector<peer::impl::asked> asked;
      {
        const std::lock_guard lock{t->mu};
        if (t->terminal || t->asked.empty() || now < t->input_deadline) continue;
        for (const auto& a : t->asked) {
          const std::lock_guard wlock{a.w->mu};
          if (!a.w->done) {
            why = could_not_answer(a.key, make_error_code(client_request_errc::timed_out));
            break;
          }
        }
        if (why.empty()) continue;  // every answer is in: the answer's own wake-up resumes it
        asked.swap(t->asked);
      }
      withdraw_task_input(*t, asked, "timed out");
      fail_task_input(s, t, why);
    } catch (...) {  // NOLINT(bugprone-empty-catch): no memory; the next tick looks again
    }
  }
}

/// The store's expiry sweep, at most once per `sweep_interval` (the maintenance tick); the
/// deadlines of the 2025-11-25 input rounds on every tick.
inline void sweep_tasks(server::impl& s) noexcept {
  task_engine& g = *s.tasks;
  expire_task_input(s);
  const auto now = s.clock->steady_now();
  {
    const std::lock_guard lock{g.mu};
    if (g.last_sweep != std::chrono::steady_clock::time_point{} && now - g.last_sweep < g.options.sweep_interval) return;
    g.last_sweep = now;
  }
  const task_time stamp = task_now(s);
  [[maybe_unused]] const auto swept = g.store->expire(stamp);
  // A live task waiting for input whose ttl ran out will never be answered: it ends here (the store
  // has forgotten it; its waits learn that it expired).
  std::vector<std::shared_ptr<live_task>> idle;
  {
    const std::lock_guard lock{g.mu};
    try {
      for (const auto& [id, t] : g.live) idle.push_back(t);
    } catch (...) {  // NOLINT(bugprone-empty-catch): the next sweep looks again
    }
  }
  for (const auto& t : idle) {
    bool expired = false;
    {
      const std::lock_guard lock{t->mu};
      expired = !t->terminal && !t->pending.empty() && stamp >= t->created_at + t->ttl;
    }
    if (expired) (void)finish_task(s, t, task_status::failed, task_payload::none, {}, "expired");
  }
}

// ---- visibility ------------------------------------------------------------------------------------

/// Task `id` as its owner sees it (docs/tasks.md#visibility): an id of the wrong shape, an unknown
/// or expired one and another principal's all read as none. A store fault is an error.
inline result<std::optional<task_record>> owned_task(server::impl& s, std::string_view id, const principal& who) {
  if (!is_task_id(id)) return std::optional<task_record>{};
  auto r = s.tasks->store->get(id, task_now(s));
  if (!r) return r;
  const std::optional<task_record>& found = *r;
  if (found && found->owner != who.id) return std::optional<task_record>{};
  return r;
}

}  // namespace detail
MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_TASK_ENGINE_IPP
