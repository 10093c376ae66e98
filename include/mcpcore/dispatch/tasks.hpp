// SPDX-License-Identifier: Apache-2.0
// Tasks in the dispatch core (docs/tasks.md): whether a tool runs as a task, the engine's limits,
// and the executor a task's work runs on. `server_builder::tasks` turns the engine on.
#ifndef MCPCORE_TASKS_HPP
#define MCPCORE_TASKS_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/task.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

/// Whether a tool may run as a task (docs/tasks.md#task-support): MCP's `execution.taskSupport`.
enum class task_support : std::uint8_t {
  forbidden,  ///< never a task (the default): a 2025-11-25 request asking for one is -32601
  optional,   ///< a task when the client asks (2025-11-25) or declares the extension (2026-07-28)
  required,   ///< only as a task: a request that cannot make one is -32601 (2025) or -32021 (2026)
};

/// When a call that may become a task becomes one (docs/tasks.md#when-a-call-becomes-a-task).
enum class task_start : std::uint8_t {
  /// At once: the record is created, the call answers `CreateTaskResult`, and the handler runs
  /// on the transport's `background_executor`.
  immediate,
  /// When the handler detaches (`mcpcore::detach`): until then it runs inline as a plain call
  /// (an input round, a quick answer); the detached operation's `finish` completes the task.
  on_detach,
};

/// Default cap on the tasks one principal holds in the store (live and finished alike: a finished
/// task is kept until its ttl).
inline constexpr std::size_t default_max_tasks_per_principal = 32;
/// Default cap on the tasks the store holds.
inline constexpr std::size_t default_max_tasks = 1024;
/// Default lifetime of a task, from its creation, when the client asks for none.
inline constexpr std::chrono::milliseconds default_task_ttl{std::chrono::hours{1}};
/// Default longest lifetime a client may ask for (longer requests are cut to it).
inline constexpr std::chrono::milliseconds default_max_task_ttl{std::chrono::hours{24}};
/// Default shortest lifetime (shorter requests are raised to it).
inline constexpr std::chrono::milliseconds default_min_task_ttl{std::chrono::seconds{1}};
/// Default poll interval the server suggests (`pollInterval` / `pollIntervalMs`).
inline constexpr std::chrono::milliseconds default_task_poll_interval{1000};
/// Default cap on a task's kept result (the `CallToolResult` JSON), in bytes; a larger one fails
/// the task with -32603.
inline constexpr std::size_t default_max_task_result_bytes = std::size_t{1} << 20;
/// Default cap on the input responses one task accumulates (`tasks/update`), in bytes.
inline constexpr std::size_t default_max_task_input_responses_bytes = std::size_t{256} << 10;
/// Default cap on one principal's `tasks/result` requests waiting for a task at once.
inline constexpr std::size_t default_max_task_result_waits_per_principal = 16;
/// Default interval of the store's expiry sweep from the maintenance tick (`server::expire_waiting`).
inline constexpr std::chrono::milliseconds default_task_sweep_interval{std::chrono::seconds{60}};

/// The task engine's limits (docs/tasks.md#limits, docs/configuration.md#tasks).
struct task_options {
  /// Tasks one principal may hold in the store; one more is refused (-32603, `retry_after_ms`).
  std::size_t max_per_principal = default_max_tasks_per_principal;
  /// Tasks the store may hold.
  std::size_t max_total = default_max_tasks;
  /// Lifetime of a task whose request names none (a task is always given one: it always expires).
  std::chrono::milliseconds default_ttl = default_task_ttl;
  /// Longest lifetime; a longer request is cut to it.
  std::chrono::milliseconds max_ttl = default_max_task_ttl;
  /// Shortest lifetime; a shorter request is raised to it.
  std::chrono::milliseconds min_ttl = default_min_task_ttl;
  /// The poll interval suggested to clients.
  std::chrono::milliseconds poll_interval = default_task_poll_interval;
  /// Largest result kept for a task, in bytes (the `CallToolResult` JSON).
  std::size_t max_result_bytes = default_max_task_result_bytes;
  /// Largest total of the input responses one task accumulates, in bytes.
  std::size_t max_input_responses_bytes = default_max_task_input_responses_bytes;
  /// `tasks/result` requests of one principal waiting at once; one more is refused (-32603).
  std::size_t max_result_waits_per_principal = default_max_task_result_waits_per_principal;
  /// How often the maintenance tick asks the store to delete expired tasks (creation sweeps too).
  std::chrono::milliseconds sweep_interval = default_task_sweep_interval;
  /// At build, turn every task the store holds as live into `failed` (-32603 "the server
  /// restarted before the task finished"): no work of an earlier process survives it.
  bool abandon_unfinished_at_build = true;
};

/// Where a task's work runs: a transport's pool of handler threads (docs/tasks.md#executors).
/// The transport hands it over in `dispatch_context::background`.
///
/// Semantic requirements: (1) `post` is thread-safe and never throws; (2) it returns false, and
/// runs nothing, when it cannot take the work now (a full queue, a stopping pool); (3) a posted
/// function runs exactly once, on another thread, unless the pool stops first (then the engine
/// never learns of it: a transport stops its pool only after `server::cancel_tasks`).
class MCPCORE_API background_executor {
 public:
  virtual bool post(std::function<void()> work) noexcept = 0;

 protected:
  background_executor() = default;
  background_executor(const background_executor&) = default;
  background_executor(background_executor&&) = default;
  background_executor& operator=(const background_executor&) = default;
  background_executor& operator=(background_executor&&) = default;
  ~background_executor() = default;
};

namespace detail {
/// The type-erased task store of a server (library use).
struct MCPCORE_API task_store_base {
  task_store_base() = default;
  task_store_base(const task_store_base&) = delete;
  task_store_base& operator=(const task_store_base&) = delete;
  virtual ~task_store_base() = default;
  virtual result<task_create_result> create(const task_create_request& c) = 0;
  virtual result<std::optional<task_record>> get(std::string_view id, task_time now) = 0;
  virtual result<task_transition_status> transition(const task_transition& t) = 0;
  virtual result<std::vector<task_record>> list(const task_list_request& l) = 0;
  virtual result<std::size_t> expire(task_time now) = 0;
  virtual result<std::size_t> abandon_unfinished(task_time now, std::string_view status_message,
                                                 task_payload payload_kind, std::string_view payload) = 0;
};
template <class S>
struct task_store_ref final : task_store_base {
  explicit task_store_ref(S& s) noexcept : s_(&s) {}
  result<task_create_result> create(const task_create_request& c) override { return s_->create(c); }
  result<std::optional<task_record>> get(std::string_view id, task_time now) override { return s_->get(id, now); }
  result<task_transition_status> transition(const task_transition& t) override { return s_->transition(t); }
  result<std::vector<task_record>> list(const task_list_request& l) override { return s_->list(l); }
  result<std::size_t> expire(task_time now) override { return s_->expire(now); }
  result<std::size_t> abandon_unfinished(task_time now, std::string_view status_message, task_payload payload_kind,
                                         std::string_view payload) override {
    return s_->abandon_unfinished(now, status_message, payload_kind, payload);
  }

 private:
  S* s_;
};
}  // namespace detail

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_TASKS_HPP
