// SPDX-License-Identifier: Apache-2.0
// Tasks on the tools/call side (docs/tasks.md): whether a call becomes a task, the handler's runs
// on the background executor with a call context of its own, detached work that finishes a task,
// the 2026-07-28 input rounds, and the `tasks/*` methods of both eras. Included at the end of
// tools_call.ipp, whose gate pipeline calls `task_negotiation` and `task_start_gate`.
#ifndef MCPCORE_IMPL_TASK_RUN_IPP
#define MCPCORE_IMPL_TASK_RUN_IPP

#include <mcpcore/dispatch/impl/tools_call.ipp>

#include <mcpcore/detail/ascii.hpp>
#include <mcpcore/dispatch/impl/task_engine.ipp>
#include <mcpcore/dispatch/operation.hpp>
#include <mcpcore/wire/era.hpp>
#include <mcpcore/wire/retry.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <expected>
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

/// `error.data.requiredCapabilities` of a 2026-07-28 request that lacks the tasks extension.
inline constexpr std::string_view tasks_required_capabilities =
    R"({"extensions":{"io.modelcontextprotocol/tasks":{}}})";

/// Whether the 2026-07-28 request of `ctx` declares the tasks extension (per request, in its
/// client capabilities).
[[nodiscard]] inline bool declares_tasks_extension(const dispatch_context& ctx) noexcept {
  return ctx.envelope != nullptr && ctx.envelope->client_capabilities["extensions"][tasks_extension].is_object();
}

/// -32021 naming the tasks extension (docs/tasks.md#errors), with the correlation id `cid`.
inline bool write_tasks_capability_error(request_env& e, std::string_view message, const correlation_id& cid) {
  const std::array members{error_data_member{"requiredCapabilities", tasks_required_capabilities}};
  error_data d;
  d.correlation_id = cid.view();
  d.remediation =
      "Declare extensions[\"io.modelcontextprotocol/tasks\"] in io.modelcontextprotocol/clientCapabilities.";
  d.members = members;
  write_error_response(e.out, e.id, errc::missing_client_capability, message, d);
  e.error = errc::missing_client_capability;
  return true;
}

/// -32602 for an unknown, expired or foreign task id: one answer for all three (docs/tasks.md#visibility).
inline bool unknown_task(request_env& e) {
  const auto cid = e.s.mint_cid();
  write_error(e, errc::invalid_params, unknown_task_message, cid.view(),
              "Use a taskId this caller created, within its ttl.");
  return true;
}

/// -32603 for a task store fault.
inline bool task_store_fault(request_env& e, const error& why) {
  const auto cid = e.s.mint_cid();
  const bool permanent = is_permanent_store_error(why);
  write_error(e, errc::internal_error, "task store unavailable", cid.view(),
              permanent ? "Report the correlation_id to the server's operator." : "Retry shortly.",
              permanent ? std::nullopt : std::optional{retry::store_fault});
  return true;
}

/// The owned copy of a JSON value (arguments, client capabilities) a task keeps beyond its request.
struct owned_json {
  json::document doc;
  json::value root;
  void assign(json::value v) {
    if (!v.exists()) return;
    std::string text;
    json::writer{text}.value(v);
    if (auto r = doc.parse(text)) root = *r;
  }
};

/// What runs a task's handler (immediate tools): everything the call had, copied, since the
/// request that created the task is gone when the handler runs (again).
struct task_job {
  task_job(server::impl& srv, std::shared_ptr<const tables> tabs_in, compiled_tool& t) noexcept
      : s(srv), tabs(std::move(tabs_in)), tool(t) {}
  server::impl& s;
  std::shared_ptr<const tables> tabs;  // keeps `tool` alive
  compiled_tool& tool;
  principal caller;
  request_id call_id{std::int64_t{0}};
  owned_json args;
  owned_json caps;                // 2026-07-28: the request's client capabilities
  client_capabilities peer_caps;  // 2025-11-25: what the client declared at initialize
  /// The creating transport's executor (2025-11-25: the handler's next run after the client's
  /// answers, which arrive through that transport while it lives).
  background_executor* exec = nullptr;
  std::shared_ptr<live_task> task;

  /// The tool, shared with the tables that hold it (the final builder keeps it).
  [[nodiscard]] std::shared_ptr<compiled_tool> shared_tool() const {
    for (const auto& candidate : tabs->tools) {
      if (candidate.get() == &tool) return candidate;
    }
    return {std::const_pointer_cast<tables>(tabs), &tool};  // not listed any more: the tables keep it
  }
};

/// The progress of a 2025-11-25 task (docs/tasks.md#notifications): with the original token, on the
/// creating session's channel, increasing, until the task is terminal; once detached work reports
/// it, with its execution id in `_meta` as every detached call's progress.
inline bool task_progress(live_task& t, double p, std::optional<double> total, std::string_view message) {
  if (t.per_request || !t.channel || !t.progress_token || !std::isfinite(p)) return false;
  std::string out;
  const std::lock_guard lock{t.mu};
  if (t.terminal || (t.sent_progress && !(p > t.last_progress))) return false;
  write_notification(out, "notifications/progress", [&](json::writer& w) {
    w.begin_object().key("progressToken");
    write_id(w, t.progress_token->view());
    w.member("progress", p);
    if (total && std::isfinite(*total)) w.member("total", *total);
    if (!message.empty()) w.member("message", message);
    if (!t.execution_id.empty()) {
      w.key("_meta").begin_object().member(execution_id_meta_key, t.execution_id).end_object();
    }
    w.end_object();
  });
  t.sent_progress = true;
  t.last_progress = p;
  return t.channel->send(out);
}

/// Ends task `t` with a final (docs/tasks.md#outcomes): a result is `completed` (`failed` when it is
/// an `isError` result of a 2025-11-25 task), an error `failed`; a result over `max_result_bytes`
/// fails with -32603.
inline bool task_final(server::impl& s, const std::shared_ptr<live_task>& t, const operation_final& f) {
  if (f.error) {
    return finish_task(s, t, task_status::failed, task_payload::error, error_object_json(*f.error), "the tool failed");
  }
  if (f.result_json.size() > s.tasks->options.max_result_bytes) {
    return finish_task(s, t, task_status::failed, task_payload::error,
                       internal_error_json(s, "The tool's result is too large to keep as a task result",
                                           "Report the correlation_id to the server's operator."),
                       "the result is too large");
  }
  bool is_error = false;
  {
    json::document doc;
    if (auto root = doc.parse(f.result_json)) is_error = (*root)["isError"].is_bool() && (*root)["isError"].as_bool();
  }
  const bool failed = is_error && !t->per_request;
  return finish_task(s, t, failed ? task_status::failed : task_status::completed, task_payload::result,
                     f.result_json, is_error ? "the tool reported an error" : "");
}

/// The message of a task whose detached work ended without a terminal.
inline constexpr std::string_view task_abandoned_message = "the detached work ended without a result";

/// The record detached work reports to when it finishes a task (docs/tasks.md#detached-work):
/// progress goes where the task's progress goes, `finish` completes the task, the stop token is the
/// task's (`tasks/cancel` and `server::cancel_tasks` request it). One per task, shared by every
/// `operation_handle` of it; the last one gone without a terminal fails the task.
class task_operation final : public operation_link {
 public:
  task_operation(server::impl& s, std::shared_ptr<live_task> t) noexcept : s_(s), t_(std::move(t)) {}
  ~task_operation() {
    {
      const std::lock_guard lock{t_->mu};
      if (t_->terminal) return;  // the usual end: the server is not touched (it may be gone already)
    }
    try {
      (void)finish_task(s_, t_, task_status::failed, task_payload::error,
                        internal_error_json(s_, task_abandoned_message, "Call the tool again."), task_abandoned_message);
    } catch (...) {  // NOLINT(bugprone-empty-catch): no memory for the error; the ttl ends the task
    }
  }
  task_operation(const task_operation&) = delete;
  task_operation& operator=(const task_operation&) = delete;

  /// The task's record: the one already made, or a new one; the first `execution_id` names the work.
  static std::shared_ptr<operation_link> of(server::impl& s, const std::shared_ptr<live_task>& t,
                                            std::string execution_id) {
    const std::lock_guard lock{t->mu};
    t->detached = true;
    if (t->execution_id.empty()) t->execution_id = std::move(execution_id);
    if (auto op = t->operation.lock()) return op;
    auto op = std::make_shared<task_operation>(s, t);
    t->operation = op;
    return op;
  }
  bool progress(double progress, std::optional<double> total, std::string_view message) override {
    try {
      return task_progress(*t_, progress, total, message);
    } catch (...) {
      return false;
    }
  }
  /// The terminal. After the server stopped the task (`server::cancel_tasks`) whatever the work
  /// reports fails it as stopped, as an `immediate` task's run does (docs/tasks.md#outcomes).
  bool finish(operation_final final) override {
    try {
      bool stopped_by_server = false;
      {
        const std::lock_guard lock{t_->mu};
        stopped_by_server = t_->cause == live_task::stop_cause::shutdown;
      }
      if (stopped_by_server) {
        return finish_task(s_, t_, task_status::failed, task_payload::error,
                           internal_error_json(s_, task_shutdown_message, "Call the tool again."),
                           task_shutdown_message);
      }
      return task_final(s_, t_, final);
    } catch (...) {
      return false;
    }
  }
  std::stop_token stop_token() const noexcept override { return t_->stop.get_token(); }

 private:
  server::impl& s_;
  std::shared_ptr<live_task> t_;
};

/// The record handed to detached work whose task was refused at `detach` (a cap, the store): the
/// call answers the refusal and nobody will read the work's outcome, so its stop token is
/// requested already (the work should not start, or stop at once) and its reports go nowhere.
class refused_task_operation final : public operation_link {
 public:
  refused_task_operation() { stop_.request_stop(); }
  bool progress(double /*progress*/, std::optional<double> /*total*/, std::string_view /*message*/) override {
    return false;
  }
  bool finish(operation_final /*final*/) override { return false; }
  std::stop_token stop_token() const noexcept override { return stop_.get_token(); }

  /// A new one, or null when there is no memory for it (the work then gets an unbound operation).
  static std::shared_ptr<operation_link> make() noexcept {
    try {
      return std::make_shared<refused_task_operation>();
    } catch (...) {
      return nullptr;
    }
  }

 private:
  std::stop_source stop_;
};

/// The `call_link` of a task's own handler run: a `detach` hands the task over to the detached work.
class task_run_link final : public call_link {
 public:
  task_run_link(server::impl& s, std::shared_ptr<live_task> t) noexcept : s_(s), t_(std::move(t)) {}
  std::shared_ptr<operation_link> detach(std::string execution_id) override {
    return task_operation::of(s_, t_, std::move(execution_id));
  }

 private:
  server::impl& s_;
  std::shared_ptr<live_task> t_;
};


/// The call context of a task's handler run (docs/tasks.md#the-handler-in-a-task): its own copy of
/// the caller, the task's stop token, progress to the creating session (2025-11-25), the input
/// answers so far (2026-07-28); log messages and requests to the client have no channel.
class task_call_state final : public call_state {
 public:
  task_call_state(task_job& j, const input_round& round) noexcept : j_(j), round_(round), link_(j.s, j.task) {}

  const principal& caller() const noexcept override { return j_.caller; }
  request_id_view id() const noexcept override { return j_.call_id.view(); }
  std::stop_token stop_token() const noexcept override { return j_.task->stop.get_token(); }
  bool wants_progress() const noexcept override {
    return !j_.task->per_request && j_.task->channel && j_.task->progress_token;
  }
  bool progress(double p, std::optional<double> total, std::string_view message) override {
    return task_progress(*j_.task, p, total, message);
  }
  bool log(log_level /*level*/, std::string_view /*data*/, std::string_view /*logger*/) override { return false; }
  result<client_reply> request(std::string_view /*method*/, std::string_view /*params_json*/,
                               std::chrono::milliseconds /*timeout*/) override {
    return std::unexpected(make_error_code(client_request_errc::no_channel));
  }
  call_link* link() const noexcept override { return &link_; }
  std::shared_ptr<const final_builder> finals() const override {
    return std::make_shared<tool_final_builder>(j_.s, j_.shared_tool(), j_.caller);
  }
  json::value input(std::string_view key) const noexcept override { return round_.find(key); }
  std::string_view round_state() const noexcept override { return round_.state; }
  bool client_declares(client_capability c) const noexcept override {
    if (j_.task->per_request) return declares(j_.caps.root, c);
    return peer_declares(j_.peer_caps, c);
  }

 private:
  task_job& j_;
  const input_round& round_;
  mutable task_run_link link_;
};

/// The JSON object of key/JSON pairs (the `inputRequests` of a task, the answers so far).
[[nodiscard]] inline std::string keyed_json(const std::vector<std::pair<std::string, std::string>>& items) {
  std::string out;
  json::writer w{out};
  w.begin_object();
  for (const auto& [key, value] : items) w.raw_member(key, value);
  w.end_object();
  return out;
}

/// The capabilities `ir` needs that the client did not declare, as a mask: the 2026-07-28
/// request's (`caps`), or what the 2025-11-25 client declared at `initialize` (`peer_caps`).
[[nodiscard]] inline unsigned missing_input_capabilities(const task_job& j, const input_required& ir) noexcept {
  unsigned missing = 0;
  for (const auto& [key, r] : ir.requests()) {
    for (unsigned bit = 1; bit != 0 && bit <= r.required_capabilities(); bit <<= 1U) {
      const auto c = static_cast<client_capability>(bit);
      const bool declared = j.task->per_request ? declares(j.caps.root, c) : peer_declares(j.peer_caps, c);
      if ((r.required_capabilities() & bit) != 0 && !declared) missing |= bit;
    }
  }
  return missing;
}

inline bool post_task_job(const std::shared_ptr<task_job>& job, background_executor* exec);

// ---- 2025-11-25 input: requests to the client on the session (docs/tasks.md#input) -----------------

/// Input request `r` as a task shows it in `inputRequests` (docs/tasks.md#input):
/// `{"method":...,"params":...}`.
[[nodiscard]] inline std::string input_request_json(const input_request& r) {
  std::string out;
  json::writer w{out};
  w.begin_object().member("method", r.method());
  if (!r.params_json().empty()) w.raw_member("params", r.params_json());
  w.end_object();
  return out;
}

/// The JSON-RPC request for input `r` of task `task_id`: its method and params, with
/// `params._meta["io.modelcontextprotocol/related-task"] = {"taskId": <id>}` (MCP: a request
/// associated with a task says so).
[[nodiscard]] inline std::string task_input_request(std::int64_t rid, std::string_view task_id,
                                                    const input_request& r) {
  json::document doc;
  json::value root;
  if (!r.params_json().empty()) {
    if (auto parsed = doc.parse(r.params_json())) root = *parsed;
  }
  std::string params;
  json::writer w{params};
  write_with_related_task(w, root, task_id);
  std::string out;
  write_request(out, request_id_view{rid}, r.method(), params);
  return out;
}

/// Something happened to the 2025-11-25 input round `round` of the job's task (an answer, an
/// error, the channel's end; any thread, under no lock of the peer's): once every request is
/// answered, the answers are kept, the task is `working` again and the handler runs again on the
/// creating transport's executor; an error answer or a failed request fails the task, naming the
/// input, and withdraws the others.
inline void task_input_event(const std::weak_ptr<task_job>& weak, std::uint64_t round) noexcept {
  const std::shared_ptr<task_job> self = weak.lock();
  if (!self) return;  // the task ended (its job is dropped with its `resume`)
  task_job& j = *self;
  server::impl& s = j.s;
  const std::shared_ptr<live_task>& t = j.task;
  try {
    std::string why;
    std::vector<peer::impl::asked> withdrawn;
    std::function<bool(background_executor*)> resume;
    task_record working;
    {
      const std::lock_guard lock{t->mu};
      if (t->terminal || t->input_round != round || t->asked.empty()) return;
      bool open = false;
      for (const auto& a : t->asked) {
        const std::lock_guard wlock{a.w->mu};
        if (!a.w->done) {
          open = true;
        } else if (a.w->ec) {
          why = could_not_answer(a.key, a.w->ec);
        } else {
          const std::optional<client_reply>& reply = a.w->reply;
          if (!reply) {
            why = could_not_answer(a.key, "it sent no answer");
          } else if (reply->is_error()) {
            const json::value m = reply->value()["message"];
            why = could_not_answer(a.key, "it answered with an error" +
                                                (m.is_string() ? ": " + echo_name(m.as_string()) : std::string{}));
          }
        }
        if (!why.empty()) break;
      }
      if (why.empty() && open) return;  // the others are still out
      if (why.empty()) {
        std::vector<std::pair<std::string, std::string>> taken;
        std::size_t bytes = t->answers_bytes;
        for (const auto& a : t->asked) {
          const std::lock_guard wlock{a.w->mu};
          const std::optional<client_reply>& reply = a.w->reply;
          if (!reply) continue;  // not reached: an answer without an error code has its reply
          std::string value;
          json::writer{value}.value(reply->value());
          bytes += a.key.size() + value.size();
          taken.emplace_back(a.key, std::move(value));
        }
        if (bytes > s.tasks->options.max_input_responses_bytes) {
          why = "the client's answers are larger than the server keeps (max_input_responses_bytes)";
        } else {
          const task_time now = task_now(s);
          const auto moved =
              s.tasks->store->transition({t->id, task_status::working, "working", task_payload::none, {}, now});
          if (!moved || *moved != task_transition_status::updated) return;  // cancelled or expired meanwhile
          for (auto& a : taken) t->answers.push_back(std::move(a));
          t->answers_bytes = bytes;
          t->pending.clear();
          t->asked.clear();
          resume = std::move(t->resume);
          t->resume = nullptr;
          working = live_record(*t, task_status::working, "working", now);
        }
      }
      if (!why.empty()) withdrawn.swap(t->asked);
    }
    if (!why.empty()) {
      withdraw_task_input(*t, withdrawn, "the task failed");
      fail_task_input(s, t, why);
      return;
    }
    send_task_status(*t, working);
    if (resume && !resume(j.exec)) {
      (void)finish_task(s, t, task_status::failed, task_payload::error,
                        internal_error_json(s, "The task could not be resumed: no handler thread is free here",
                                            "Call the tool again."),
                        "the task could not be resumed");
    }
  } catch (...) {
    fail_task_input(s, t, "the server failed while the task waited for the client");
  }
}

/// The 2025-11-25 way to ask for input inside a task (docs/tasks.md#input): each request goes to
/// the client as a JSON-RPC request with related-task `_meta` on the creating session's channel,
/// the task is `input_required` meanwhile, and the client's responses (through the session's
/// peer) resume it (`task_input_event`). A gone session, a full peer or a channel that cannot send
/// fails the task at once.
inline void task_ask_client(const std::shared_ptr<task_job>& self, const input_required& ir, std::size_t rounds) {
  task_job& j = *self;
  server::impl& s = j.s;
  const std::shared_ptr<live_task>& t = j.task;
  const std::string& first = ir.requests().front().first;
  const std::shared_ptr<peer> p = t->client.lock();
  if (!p || !t->channel) {
    fail_task_input(s, t, could_not_answer(first, make_error_code(client_request_errc::no_channel)));
    return;
  }
  std::uint64_t round = 0;
  {
    const std::lock_guard lock{t->mu};
    if (t->terminal) return;
    round = ++t->input_round;
  }
  const std::weak_ptr<task_job> weak = self;
  std::vector<peer::impl::asked> batch;
  std::vector<std::pair<std::string, std::string>> pending;
  batch.reserve(ir.requests().size());
  for (const auto& [key, r] : ir.requests()) {
    auto w = std::make_shared<peer::impl::waiter>();
    w->on_done = [weak, round] { task_input_event(weak, round); };
    batch.push_back({key, 0, std::move(w)});
    pending.emplace_back(key, input_request_json(r));
  }
  const std::error_code refused = p->state().enlist(batch, s.options.max_pending_client_requests);
  if (refused) {
    fail_task_input(s, t, could_not_answer(first, refused));
    return;
  }
  std::vector<std::string> requests;
  requests.reserve(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    requests.push_back(task_input_request(batch[i].rid, t->id, ir.requests()[i].second));
  }
  task_record waiting;
  {
    std::unique_lock lock{t->mu};
    const task_time now = task_now(s);
    bool moved = false;
    bool fault = false;
    if (!t->terminal) {
      const auto done = s.tasks->store->transition(
          {t->id, task_status::input_required, "waiting for input", task_payload::input_requests, keyed_json(pending), now});
      moved = done && *done == task_transition_status::updated;
      fault = !done;
    }
    if (!moved) {
      lock.unlock();  // cancelled or expired meanwhile, or the store failed
      withdraw_task_input(*t, batch, "the task ended");
      if (fault) fail_task_input(s, t, "the task store failed while the task asked for input");
      return;
    }
    t->pending = std::move(pending);
    t->round_state = ir.round_state();
    t->rounds = rounds;
    t->asked = std::move(batch);
    t->input_deadline = s.clock->steady_now() + s.options.max_client_request_timeout;
    // The task keeps its job while it waits (the terminal drops it: no cycle outlives the task).
    t->resume = [self](background_executor* exec) { return post_task_job(self, exec); };
    waiting = live_record(*t, task_status::input_required, "waiting for input", now);
  }
  send_task_status(*t, waiting);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (!t->channel->send(requests[i])) {
      std::vector<peer::impl::asked> asked;
      {
        const std::lock_guard lock{t->mu};
        if (t->input_round == round) asked.swap(t->asked);
      }
      withdraw_task_input(*t, asked, "the request could not be sent");
      fail_task_input(s, t,
                      could_not_answer(ir.requests()[i].first, make_error_code(client_request_errc::closed)));
      return;
    }
  }
  task_input_event(weak, round);  // an answer (or the channel's end) may have come before the round was published
}

/// A task's handler asked for input (docs/tasks.md#input): the task becomes `input_required`; in
/// 2026-07-28 with the requests as its `inputRequests`, in 2025-11-25 with the requests sent to
/// the client on the creating session (`task_ask_client`).
inline void task_needs_input(const std::shared_ptr<task_job>& self, const input_required& ir) {
  task_job& j = *self;
  server::impl& s = j.s;
  const std::shared_ptr<live_task>& t = j.task;
  std::size_t rounds = 0;
  {
    const std::lock_guard lock{t->mu};
    rounds = t->rounds;
  }
  if (const std::string why = refuse_input_round(s, ir, rounds); !why.empty()) {
    (void)finish_task(s, t, task_status::failed, task_payload::error,
                      internal_error_json(s, "The tool needs input the client did not give: " + why,
                                          "Report the correlation_id to the server's operator."),
                      "the tool could not get its input");
    return;
  }
  if (const unsigned missing = missing_input_capabilities(j, ir)) {
    std::string required;
    write_client_capabilities(required, missing);
    const std::array members{error_data_member{"requiredCapabilities", required}};
    const auto cid = s.mint_cid();
    error_data d;
    d.correlation_id = cid.view();
    d.remediation = "Declare the capabilities in error.data.requiredCapabilities, if the client supports them.";
    d.members = members;
    (void)finish_task(s, t, task_status::failed, task_payload::error,
                      error_object_json(make_error(errc::missing_client_capability,
                                                   t->per_request ? "The tool asked for input the request's client "
                                                                    "capabilities do not cover"
                                                                  : "The tool asked for input the client's "
                                                                    "capabilities (declared at initialize) do not "
                                                                    "cover",
                                                   d)),
                      "the client cannot give the input");
    return;
  }
  if (!t->per_request) {
    task_ask_client(self, ir, rounds);
    return;
  }
  std::vector<std::pair<std::string, std::string>> pending;
  for (const auto& [key, r] : ir.requests()) pending.emplace_back(key, input_request_json(r));
  const std::string payload = keyed_json(pending);
  task_record waiting;
  {
    const std::lock_guard lock{t->mu};
    if (t->terminal) return;
    const task_time now = task_now(s);
    const auto moved = s.tasks->store->transition(
        {t->id, task_status::input_required, "waiting for input", task_payload::input_requests, payload, now});
    if (!moved || *moved != task_transition_status::updated) return;  // cancelled or expired meanwhile
    t->pending = std::move(pending);
    t->round_state = ir.round_state();
    t->rounds = rounds;
    // The task keeps its job while it waits (the terminal drops it: no cycle outlives the task).
    t->resume = [self](background_executor* exec) { return post_task_job(self, exec); };
    waiting = live_record(*t, task_status::input_required, "waiting for input", now);
    waiting.payload_kind = task_payload::input_requests;
    waiting.payload = payload;
  }
  send_task_status(*t, waiting);  // docs/tasks.md#notifications: the requests ride in it
}

/// One run of a task's handler (docs/tasks.md#the-handler-in-a-task).
inline void run_task_job(const std::shared_ptr<task_job>& self) noexcept {
  task_job& j = *self;
  server::impl& s = j.s;
  const std::shared_ptr<live_task>& t = j.task;
  try {
    std::string answers;
    input_round round;
    {
      const std::lock_guard lock{t->mu};  // also waits for the creation to be decided
      if (t->terminal) return;
      if (!t->answers.empty()) answers = keyed_json(t->answers);
      round.state = t->round_state;
    }
    json::document answers_doc;
    if (!answers.empty()) {
      if (auto r = answers_doc.parse(answers)) round.responses = *r;
    }
    task_call_state state{j, round};
    call_context cc{state};
    std::optional<tool_result> r;
    try {
      r.emplace(j.tool.def.handler(cc, j.args.root.exists() ? j.args.root : s.empty_object.root()));
    } catch (...) {
      r.reset();
    }
    bool detached = false;
    live_task::stop_cause cause = live_task::stop_cause::none;
    {
      const std::lock_guard lock{t->mu};
      detached = t->detached;
      cause = t->cause;
    }
    if (t->stop.stop_requested()) {
      // A cancelled task is terminal already; a task the server stopped fails.
      if (cause != live_task::stop_cause::cancelled) {
        (void)finish_task(s, t, task_status::failed, task_payload::error,
                          internal_error_json(s, task_shutdown_message, "Call the tool again."), task_shutdown_message);
      }
      return;
    }
    if (detached) return;  // the detached work's `finish` ends the task
    if (!r) {
      s.handler_exceptions.inc();
      count_outcome(j.tool, call_outcome::failure);
      (void)s.record(j.tool.action, "mcp_tool", j.tool.def.name, j.caller, audit_result::failure,
                     "handler exception task_id=" + t->id, {});
      (void)finish_task(s, t, task_status::failed, task_payload::error,
                        internal_error_json(s, "The tool failed unexpectedly",
                                            "The server kept running; report the correlation_id to its operator."),
                        "the tool failed");
      return;
    }
    if (const input_required* ir = r->input()) {
      task_needs_input(self, *ir);
      return;
    }
    const operation_final f = tool_final_builder{s, j.shared_tool(), j.caller}.build(*r, {});
    if (!f.error) {
      count_outcome(j.tool, r->is_error() ? call_outcome::error_result : call_outcome::success);
      (void)s.record(j.tool.action, "mcp_tool", j.tool.def.name, j.caller,
                     r->is_error() ? audit_result::failure : audit_result::success,
                     std::string{r->is_error() ? "is_error " : ""} + "task_id=" + t->id, {});
    } else {
      count_outcome(j.tool, call_outcome::failure);
    }
    (void)task_final(s, t, f);
  } catch (...) {
    try {
      (void)finish_task(s, t, task_status::failed, task_payload::error,
                        internal_error_json(s, "The server failed while running the task",
                                            "Report the correlation_id to the server's operator."),
                        "the server failed");
    } catch (...) {  // NOLINT(bugprone-empty-catch): no memory for the error either; the ttl ends the task
    }
  }
}

/// Posts one run of the job's handler on `exec`; false (nothing runs) when there is none or it is full.
inline bool post_task_job(const std::shared_ptr<task_job>& job, background_executor* exec) {
  if (exec == nullptr) return false;
  try {
    return exec->post([job] { run_task_job(job); });
  } catch (...) {
    return false;
  }
}

// ---- tools/call: when a call becomes a task (docs/tasks.md#when-a-call-becomes-a-task) -------------

/// The task a call asked for, for an `on_detach` tool: created when its handler detaches.
struct task_offer {
  task_offer(server::impl& srv, std::string tool_name, principal who, bool era_2026, std::chrono::milliseconds life,
             std::shared_ptr<message_sink> sink, std::optional<request_id> token)
      : s(srv),
        tool(std::move(tool_name)),
        owner(std::move(who)),
        per_request(era_2026),
        ttl(life),
        channel(std::move(sink)),
        progress_token(std::move(token)) {}
  server::impl& s;
  const std::string tool;
  const principal owner;
  const bool per_request;
  const std::chrono::milliseconds ttl;
  const std::shared_ptr<message_sink> channel;
  const std::optional<request_id> progress_token;

  std::mutex mu;  // a leaf above the task's
  std::optional<task_record> created;
  std::shared_ptr<live_task> task;
  std::optional<task_refusal> refused;
};

/// Makes the live task of a new task (not in the store yet).
[[nodiscard]] inline std::shared_ptr<live_task> make_live_task(const task_options& o, std::string_view tool,
                                                              const principal& owner, bool per_request,
                                                              std::chrono::milliseconds ttl,
                                                              std::shared_ptr<message_sink> channel,
                                                              std::optional<request_id> progress_token) {
  auto t = std::make_shared<live_task>();
  t->owner = owner;
  t->tool = std::string{tool};
  t->per_request = per_request;
  t->ttl = ttl;
  t->poll_interval = o.poll_interval;
  t->channel = std::move(channel);
  t->progress_token = std::move(progress_token);
  return t;
}

/// The `call_link` of a call that becomes a task when its handler detaches: the record is created
/// at `detach`, and the detached work's `finish` completes the task.
class task_offer_link final : public call_link {
 public:
  explicit task_offer_link(std::shared_ptr<task_offer> offer) noexcept : o_(std::move(offer)) {}
  std::shared_ptr<operation_link> detach(std::string execution_id) override {
    task_offer& o = *o_;
    std::shared_ptr<live_task> t;
    {
      const std::lock_guard lock{o.mu};
      if (o.refused) return refused_task_operation::make();
      if (!o.task) {
        try {
          t = make_live_task(o.s.tasks->options, o.tool, o.owner, o.per_request, o.ttl, o.channel, o.progress_token);
        } catch (...) {
          o.refused = task_refusal::store;
          return refused_task_operation::make();
        }
        t->detached = true;
        const std::lock_guard tlock{t->mu};
        auto made = store_task(o.s, t);
        if (!made) {
          o.refused = made.error();
          t->terminal = true;
          return refused_task_operation::make();
        }
        o.created = std::move(*made);
        o.task = t;
      }
      t = o.task;
    }
    return task_operation::of(o.s, t, std::move(execution_id));
  }

 private:
  std::shared_ptr<task_offer> o_;
};

inline std::shared_ptr<call_link> make_task_offer_link(const std::shared_ptr<task_offer>& o) {
  return std::make_shared<task_offer_link>(o);
}

/// `CreateTaskResult`: 2025-11-25 `{"task":{...}}`, 2026-07-28 the task's members flat with
/// `resultType: "task"` (docs/tasks.md#the-wire).
inline bool write_create_task_result(request_env& e, const task_record& r) {
  const bool per_request = e.ctx.envelope != nullptr;
  write_result_response(e.out, e.id, [&](json::writer& w) {
    w.begin_object();
    if (per_request) {
      w.member("resultType", "task");
      write_task_members(w, r, true);
    } else {
      w.key("task").begin_object();
      write_task_members(w, r, false);
      w.end_object();
    }
    w.end_object();
  });
  e.result_type_written = per_request;
  return true;
}

#if defined(__GNUC__)
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

/// A task that could not be created: the call's answer (docs/tasks.md#limits).
inline bool task_refused(request_env& e, compiled_tool& t, task_refusal why) {
  count_task_refused(*e.s.tasks, why);
  const std::string detail = std::string{"task refused: "} + std::string{task_refusal_names[static_cast<std::size_t>(why)]};
  switch (why) {
    case task_refusal::owner_cap:
      return answer(e, t, {.code = errc::internal_error,
                           .message = "Too many tasks for this caller",
                           .remediation = "Wait until some of your tasks expire (their ttl), or call the tool without "
                                          "a task.",
                           .detail = detail,
                           .retry_after = retry::task_cap});
    case task_refusal::global_cap:
      return answer(e, t, {.code = errc::internal_error,
                           .message = "Too many tasks on this server",
                           .remediation = "Retry later, or call the tool without a task.",
                           .detail = detail,
                           .retry_after = retry::task_cap});
    case task_refusal::busy:
      return answer(e, t, {.code = errc::internal_error,
                           .message = "Server busy",
                           .remediation = "Every handler thread is busy; retry shortly. No task was created.",
                           .detail = detail,
                           .result = audit_result::failure,
                           .outcome = call_outcome::failure,
                           .retry_after = retry::dispatch_queue_full});
    case task_refusal::unavailable:
      return answer(e, t, {.code = errc::internal_error,
                           .message = "tasks are not available on this transport",
                           .remediation = "Use a transport that runs tasks (HTTP with an executor, stdio).",
                           .detail = detail,
                           .result = audit_result::failure,
                           .outcome = call_outcome::failure});
    case task_refusal::store:
    case task_refusal::count: break;
  }
  return answer(e, t, {.code = errc::internal_error,
                       .message = "task store unavailable",
                       .remediation = "Retry shortly; no task was created.",
                       .detail = detail,
                       .result = audit_result::failure,
                       .outcome = call_outcome::failure,
                       .retry_after = retry::store_fault});
}

/// The task negotiation of tools/call, before RBAC and the approval machine (docs/tasks.md#negotiation):
/// whether the call asks for a task and may have one. Refusals: 2025-11-25 -32601 (a task asked of a
/// `forbidden` tool, none asked of a `required` one), -32602 (a malformed `params.task`); 2026-07-28
/// -32021 (a `required` tool without the extension declared).
inline gate_result task_negotiation(tool_call& c) {
  request_env& e = c.e;
  if (!e.s.tasks) return std::nullopt;  // tasks off: params.task is ignored (MCP: process normally)
  const task_support support = c.t.def.tasks;
  if (e.ctx.envelope != nullptr) {
    if (support == task_support::forbidden) return std::nullopt;  // params.task is not a signal here
    if (!declares_tasks_extension(e.ctx)) {
      if (support == task_support::optional) return std::nullopt;
      count_outcome(c.t, call_outcome::denied);
      const auto cid = e.s.mint_cid();
      (void)audit_refusal(e, c.t, "task extension not declared", audit_result::denied, cid);
      return write_tasks_capability_error(
          e, "Tool " + echo_name(c.t.def.name) + " runs only as a task: declare the tasks extension", cid);
    }
    c.task_wanted = true;
    c.task_ttl = e.s.tasks->options.default_ttl;
    return std::nullopt;
  }
  const json::value task = e.msg.params["task"];
  if (!task.exists()) {
    if (support != task_support::required) return std::nullopt;
    return answer(e, c.t, {.code = errc::method_not_found,
                           .message = "Tool " + echo_name(c.t.def.name) + " requires task augmentation",
                           .remediation = "Call it with params.task (a task-augmented tools/call).",
                           .detail = "task required"});
  }
  if (support == task_support::forbidden) {
    return answer(e, c.t, {.code = errc::method_not_found,
                           .message = "Tool " + echo_name(c.t.def.name) + " does not support task augmentation",
                           .remediation = "Call it without params.task; tools/list shows execution.taskSupport.",
                           .detail = "task forbidden"});
  }
  const json::value ttl = task["ttl"];
  if (!task.is_object() || (ttl.exists() && !ttl.is_null() && !ttl.is_number())) {
    return bad_params(e, "params.task must be an object whose ttl is a number of milliseconds");
  }
  std::optional<std::int64_t> requested;
  if (ttl.is_number()) {
    const auto d = ttl.to_double();
    requested = d && std::isfinite(*d) ? static_cast<std::int64_t>(std::clamp(*d, 0.0, 9.0e15)) : std::int64_t{0};
  }
  c.task_wanted = true;
  c.task_ttl = clamp_task_ttl(e.s.tasks->options, requested);
  return std::nullopt;
}

/// After every gate (docs/tasks.md#when-a-call-becomes-a-task): an `immediate` tool's call becomes a
/// task now (the record, then the run posted, then `CreateTaskResult`); an `on_detach` tool's call
/// runs inline with an offer its `detach` takes up.
inline gate_result task_start_gate(tool_call& c) {
  if (!c.task_wanted) return std::nullopt;
  request_env& e = c.e;
  server::impl& s = e.s;
  std::optional<request_id> token;
  const json::value pt = e.msg.params["_meta"]["progressToken"];
  if (e.ctx.envelope == nullptr && usable_progress_token(pt, s.options.max_progress_token_bytes)) {
    if (pt.is_string()) {
      token.emplace(std::string{pt.as_string()});
    } else if (const auto n = pt.to_int64()) {
      token.emplace(*n);
    }
  }
  std::shared_ptr<message_sink> channel = e.ctx.envelope == nullptr ? e.ctx.session_sink : nullptr;
  if (c.t.def.start == task_start::on_detach) {
    c.offer = std::make_shared<task_offer>(s, c.t.def.name, e.ctx.caller, e.ctx.envelope != nullptr, c.task_ttl,
                                           std::move(channel), std::move(token));
    return std::nullopt;
  }
  if (e.ctx.background == nullptr) {
    if (c.t.def.tasks != task_support::required) return std::nullopt;  // a plain call after all
    return task_refused(e, c.t, task_refusal::unavailable);
  }
  std::shared_ptr<live_task> t;
  std::shared_ptr<task_job> job;
  try {
    t = make_live_task(s.tasks->options, c.t.def.name, e.ctx.caller, e.ctx.envelope != nullptr, c.task_ttl,
                       std::move(channel), std::move(token));
    job = std::make_shared<task_job>(s, e.t, c.t);
    job->caller = e.ctx.caller;
    job->call_id = request_id{e.id};
    job->args.assign(c.args);
    if (e.ctx.envelope != nullptr) {
      job->caps.assign(e.ctx.envelope->client_capabilities);
    } else {
      if (e.ctx.client != nullptr) job->peer_caps = e.ctx.client->capabilities();
      t->client = e.ctx.session_peer;  // docs/tasks.md#input: the session whose answers it may wait for
    }
    job->exec = e.ctx.background;
    job->task = t;
  } catch (...) {
    return task_refused(e, c.t, task_refusal::store);
  }
  // The run is posted before the record exists, and waits on the task's lock until the creation is
  // decided: a full executor refuses the call with nothing stored, and a created task's record
  // exists before its run starts and before the answer is sent.
  std::unique_lock lock{t->mu};
  if (!post_task_job(job, e.ctx.background)) return task_refused(e, c.t, task_refusal::busy);
  auto made = store_task(s, t);
  if (!made) {
    t->terminal = true;  // the posted run finds it over
    lock.unlock();
    return task_refused(e, c.t, made.error());
  }
  lock.unlock();
  return write_create_task_result(e, *made);
}

#if defined(__GNUC__)
#  pragma GCC diagnostic pop
#endif

/// After the handler of an `on_detach` tool returned (docs/tasks.md#when-a-call-becomes-a-task): a
/// task created at `detach` answers `CreateTaskResult`, one refused there answers its refusal; a
/// handler that did not detach answers as a plain call (nothing).
inline std::optional<bool> task_offer_answer(request_env& e, compiled_tool& t, task_offer& o) {
  std::optional<task_record> created;
  std::optional<task_refusal> refused;
  {
    const std::lock_guard lock{o.mu};
    created = o.created;
    refused = o.refused;
  }
  if (created) {
    count_outcome(t, call_outcome::success);
    return write_create_task_result(e, *created);
  }
  if (refused) return task_refused(e, t, *refused);
  return std::nullopt;
}

// ---- the methods (docs/tasks.md#methods) ------------------------------------------------------------

/// `params.taskId`, or nothing (then answered -32602).
[[nodiscard]] inline std::optional<std::string_view> task_id_param(request_env& e) {
  const json::value id = e.msg.params["taskId"];
  if (!id.is_string()) return std::nullopt;
  return id.as_string();
}

/// Every `tasks/*` of the 2026-07-28 revision needs the extension declared, before anything else
/// (docs/tasks.md#errors). False: answered.
inline bool tasks_extension_gate(request_env& e) {
  if (e.ctx.envelope == nullptr || declares_tasks_extension(e.ctx)) return true;
  (void)write_tasks_capability_error(e,
                                     "tasks/* needs the tasks extension declared in the request's client capabilities",
                                     e.s.mint_cid());
  return false;
}

/// `tasks/get` (docs/tasks.md#tasksget): the task as its owner sees it; in 2026-07-28 with its
/// `inputRequests`, `result` or `error` by status.
inline bool handle_tasks_get(request_env& e) {
  if (!tasks_extension_gate(e)) return true;
  const auto id = task_id_param(e);
  if (!id) return bad_params(e, "tasks/get needs params.taskId (a string)");
  auto found = owned_task(e.s, *id, e.ctx.caller);
  if (!found) return task_store_fault(e, found.error());
  const std::optional<task_record>& task = *found;
  if (!task) return unknown_task(e);
  const task_record& r = *task;
  const bool per_request = e.ctx.envelope != nullptr;
  write_result_response(e.out, e.id, [&](json::writer& w) {
    w.begin_object();
    if (per_request) {
      write_detailed_task_members(w, r);
    } else {
      write_task_members(w, r, false);
    }
    w.end_object();
  });
  return true;
}

/// The cursor of a `tasks/list` page: the last sequence number shown and a MAC binding it to the
/// server and the caller.
[[nodiscard]] inline std::uint64_t task_cursor_mac(const task_engine& g, std::uint64_t seq, std::string_view owner) {
  return mix64(g.cursor_salt ^ mix64(seq) ^ mix64(std::hash<std::string_view>{}(owner)));
}
[[nodiscard]] inline std::string make_task_cursor(const task_engine& g, std::uint64_t seq, std::string_view owner) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string c;
  for (int shift = 60; shift >= 0; shift -= 4) {
    const auto d = (seq >> shift) & 0xFU;
    if (d != 0 || !c.empty() || shift == 0) c.push_back(digits[d]);
  }
  c.push_back('-');
  const std::uint64_t mac = task_cursor_mac(g, seq, owner);
  for (int shift = 60; shift >= 0; shift -= 4) c.push_back(digits[(mac >> shift) & 0xFU]);
  return c;
}
[[nodiscard]] inline std::optional<std::uint64_t> parse_task_cursor(const task_engine& g, json::value cursor,
                                                                    std::string_view owner) {
  if (!cursor.is_string()) return std::nullopt;
  const std::string_view text = cursor.as_string();
  const auto dash = text.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash > 16 || text.size() - dash - 1 != 16) return std::nullopt;
  const auto hex = [](std::string_view digits) -> std::optional<std::uint64_t> {
    std::uint64_t v = 0;
    for (const char ch : digits) {
      const int d = hex_value(ch);
      if (d < 0 || (ch >= 'A' && ch <= 'F')) return std::nullopt;
      v = v * 16 + static_cast<std::uint64_t>(d);
    }
    return v;
  };
  const auto seq = hex(text.substr(0, dash));
  const auto mac = hex(text.substr(dash + 1));
  if (!seq || !mac || *mac != task_cursor_mac(g, *seq, owner)) return std::nullopt;
  return seq;
}

/// `tasks/list` (2025-11-25, docs/tasks.md#taskslist): the caller's tasks in creation order, a page
/// at a time.
inline bool handle_tasks_list(request_env& e) {
  task_engine& g = *e.s.tasks;
  std::uint64_t after = 0;
  const json::value cursor = e.msg.params["cursor"];
  if (cursor.exists()) {
    const auto seq = parse_task_cursor(g, cursor, e.ctx.caller.id);
    if (!seq) {
      const auto cid = e.s.mint_cid();
      write_error(e, errc::invalid_params, "Invalid cursor", cid.view(),
                  "Pass a nextCursor value from this server's previous answer unchanged, or omit cursor.");
      return true;
    }
    after = *seq;
  }
  const std::size_t page = e.s.options.page_size;
  auto listed = g.store->list({e.ctx.caller.id, after, page + 1, task_now(e.s)});
  if (!listed) return task_store_fault(e, listed.error());
  const bool more = listed->size() > page;
  if (more) listed->resize(page);
  write_result_response(e.out, e.id, [&](json::writer& w) {
    w.begin_object().key("tasks").begin_array();
    for (const task_record& r : *listed) {
      w.begin_object();
      write_task_members(w, r, false);
      w.end_object();
    }
    w.end_array();
    if (more && !listed->empty()) w.member("nextCursor", make_task_cursor(g, listed->back().seq, e.ctx.caller.id));
    w.end_object();
  });
  return true;
}

/// `tasks/cancel` (docs/tasks.md#cancellation): 2025-11-25 answers the cancelled task (-32602 for a
/// terminal one); 2026-07-28 always answers the empty acknowledgement, known id or not.
inline bool handle_tasks_cancel(request_env& e) {
  if (!tasks_extension_gate(e)) return true;
  const bool per_request = e.ctx.envelope != nullptr;
  const auto id = task_id_param(e);
  if (!id) {
    if (per_request) {
      write_result_response(e.out, e.id, "{}");
      return true;
    }
    return bad_params(e, "tasks/cancel needs params.taskId (a string)");
  }
  auto found = owned_task(e.s, *id, e.ctx.caller);
  if (!found) return task_store_fault(e, found.error());
  const std::optional<task_record>& task = *found;
  task_record cancelled;
  task_transition_status moved = task_transition_status::not_found;
  if (task && !is_terminal(task->status)) moved = cancel_task(e.s, *id, cancelled);
  if (per_request) {
    write_result_response(e.out, e.id, "{}");
    return true;
  }
  if (!task) return unknown_task(e);
  if (moved != task_transition_status::updated) {
    const auto cid = e.s.mint_cid();
    write_error(e, errc::invalid_params, "Cannot cancel a task that has already ended", cid.view(),
                "Nothing to do: read its outcome with tasks/get or tasks/result.");
    return true;
  }
  write_result_response(e.out, e.id, [&](json::writer& w) {
    w.begin_object();
    write_task_members(w, cancelled, false);
    w.end_object();
  });
  return true;
}

/// `tasks/update` (2026-07-28, docs/tasks.md#input): stores the answers to the task's open input
/// requests (unknown keys are ignored), removes the answered ones before it acknowledges, and once
/// none is left runs the handler again.
inline bool handle_tasks_update(request_env& e) {
  if (!tasks_extension_gate(e)) return true;
  const auto id = task_id_param(e);
  const json::value responses = e.msg.params["inputResponses"];
  if (!id) return bad_params(e, "tasks/update needs params.taskId (a string)");
  if (responses.exists() && !responses.is_object()) return bad_params(e, "params.inputResponses must be an object");
  auto found = owned_task(e.s, *id, e.ctx.caller);
  if (!found) return task_store_fault(e, found.error());
  if (!*found) return unknown_task(e);
  task_engine& g = *e.s.tasks;
  const std::shared_ptr<live_task> t = g.find_live(*id);
  std::function<bool(background_executor*)> resume;
  std::optional<task_record> changed;  // the status the answers moved it to, notified outside the lock
  if (t && responses.is_object()) {
    const std::lock_guard lock{t->mu};
    if (!t->terminal && !t->pending.empty()) {
      std::vector<std::pair<std::string, std::string>> taken;
      std::size_t bytes = t->answers_bytes;
      for (const json::member m : responses.members()) {
        const auto open = std::find_if(t->pending.begin(), t->pending.end(),
                                       [&](const std::pair<std::string, std::string>& p) { return p.first == m.key; });
        if (open == t->pending.end()) continue;  // not asked (or answered already): ignored
        std::string value;
        json::writer{value}.value(m.value());
        bytes += m.key.size() + value.size();
        taken.emplace_back(std::string{m.key}, std::move(value));
      }
      if (bytes > g.options.max_input_responses_bytes) {
        const auto cid = e.s.mint_cid();
        write_error(e, errc::invalid_params, "The input responses are too large", cid.view(),
                    "Answer with smaller input responses; nothing was stored.");
        return true;
      }
      if (!taken.empty()) {
        std::vector<std::pair<std::string, std::string>> left;
        for (const auto& p : t->pending) {
          if (std::none_of(taken.begin(), taken.end(), [&](const auto& a) { return a.first == p.first; })) {
            left.push_back(p);
          }
        }
        const bool all = left.empty();
        const std::string payload = all ? std::string{} : keyed_json(left);
        const task_status next = all ? task_status::working : task_status::input_required;
        const std::string_view message = all ? "working" : "waiting for input";
        const task_time now = task_now(e.s);
        const auto moved = g.store->transition(
            {t->id, next, message, all ? task_payload::none : task_payload::input_requests, payload, now});
        if (moved && *moved == task_transition_status::updated) {
          for (auto& a : taken) t->answers.push_back(std::move(a));
          t->answers_bytes = bytes;
          t->pending = std::move(left);
          if (all) {
            resume = std::move(t->resume);
            t->resume = nullptr;
          }
          changed = live_record(*t, next, message, now);
          if (!all) {
            changed->payload_kind = task_payload::input_requests;
            changed->payload = payload;
          }
        }
      }
    }
  }
  if (changed) send_task_status(*t, *changed);  // docs/tasks.md#notifications
  if (resume && !resume(e.ctx.background)) {
    (void)finish_task(e.s, t, task_status::failed, task_payload::error,
                      internal_error_json(e.s, "The task could not be resumed: no handler thread is free here",
                                          "Call the tool again."),
                      "the task could not be resumed");
  }
  write_result_response(e.out, e.id, "{}");
  return true;
}

/// `tasks/result` (2025-11-25, docs/tasks.md#tasksresult): the terminal task's result (or error);
/// a live task's once it is terminal, waiting without a thread when the transport can resume.
inline bool handle_tasks_result(request_env& e) {
  const auto id = task_id_param(e);
  if (!id) return bad_params(e, "tasks/result needs params.taskId (a string)");
  auto found = owned_task(e.s, *id, e.ctx.caller);
  if (!found) return task_store_fault(e, found.error());
  const std::optional<task_record>& task = *found;
  if (!task) return unknown_task(e);
  if (is_terminal(task->status)) {
    write_task_result_answer(e.s, e.out, e.id, *task);
    return true;
  }
  task_engine& g = *e.s.tasks;
  const std::shared_ptr<live_task> t = g.find_live(*id);
  if (!t) {
    // It may have ended between the two reads: its outcome is then in the store.
    auto again = owned_task(e.s, *id, e.ctx.caller);
    if (!again) return task_store_fault(e, again.error());
    const std::optional<task_record>& now = *again;
    if (!now) return unknown_task(e);
    if (is_terminal(now->status)) {
      write_task_result_answer(e.s, e.out, e.id, *now);
      return true;
    }
    const auto cid = e.s.mint_cid();
    write_error(e, errc::internal_error, "The task's result cannot be awaited on this server", cid.view(),
                "Poll tasks/get until the task ends, then call tasks/result.", retry::result_poll);
    return true;
  }
  if (!g.add_wait(e.ctx.caller.id)) {
    const auto cid = e.s.mint_cid();
    write_error(e, errc::internal_error, "Too many tasks/result requests of this caller are waiting", cid.view(),
                "Poll tasks/get until the task ends, then call tasks/result.", retry::result_poll);
    return true;
  }
  std::shared_ptr<task_waiter> w;
  try {
    w = std::make_shared<task_waiter>(g, e.ctx, request_id{e.id});
  } catch (...) {
    g.remove_wait(e.ctx.caller.id);
    return internal_fault(e, "The server has no memory to wait for the task");
  }
  if (!w->registered()) {
    g.remove_wait(e.ctx.caller.id);
    const auto cid = e.s.mint_cid();
    write_error(e, errc::invalid_request, "A request with this id is already in flight", cid.view(),
                "Use a new request id for every request.");
    return true;
  }
  std::shared_ptr<void> keep = e.ctx.resumer != nullptr ? e.ctx.resumer->suspend() : nullptr;
  const bool suspended = keep != nullptr;
  w->arm(t, suspended ? e.ctx.resumer : nullptr, std::move(keep));
  bool ended = false;
  {
    const std::lock_guard lock{t->mu};
    if (t->terminal) {
      ended = true;
    } else if (!w->done()) {
      t->waiters.push_back(w);
    }
  }
  if (ended) {
    // It ended between the read and the registration: answer from the store.
    std::string out;
    auto stored = g.store->get(*id, task_now(e.s));
    const std::optional<task_record>* now = stored ? &*stored : nullptr;
    if (now != nullptr && now->has_value()) {
      write_task_result_answer(e.s, out, w->id(), now->value());
    } else {
      const auto cid = e.s.mint_cid();
      error_data d;
      d.correlation_id = cid.view();
      d.remediation = "Use a taskId this caller created, within its ttl.";
      write_error_response(out, w->id(), errc::invalid_params, unknown_task_message, d);
    }
    w->complete(true, std::move(out));
  }
  if (suspended) return false;  // answered through the resumer
  return w->wait(e.out);
}

}  // namespace detail
MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_TASK_RUN_IPP
