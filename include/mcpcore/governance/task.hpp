// SPDX-License-Identifier: Apache-2.0
// Tasks as they are kept: the task record, its status machine and the task_store plug-in point
// (docs/tasks.md, docs/concepts/task_store.md).
#ifndef MCPCORE_TASK_HPP
#define MCPCORE_TASK_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

/// Task timestamps: UTC, millisecond precision (what the stores persist).
using task_time = std::chrono::sys_time<std::chrono::milliseconds>;

/// Length of a task id: 32 lowercase hexadecimal characters (128 bits from the operating system's
/// CSPRNG, like an approval id). Ids are unguessable, and a task is visible to its owner only.
inline constexpr std::size_t task_id_length = 32;

/// Whether `id` has the shape of a task id (exactly 32 characters of 0-9 a-f).
[[nodiscard]] constexpr bool is_task_id(std::string_view id) noexcept {
  if (id.size() != task_id_length) return false;
  for (const char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

/// Where a task is in its life (docs/tasks.md#status). `working` and `input_required` are live;
/// the other three are terminal, and a terminal task never changes again.
enum class task_status : std::uint8_t {
  working,         ///< running
  input_required,  ///< waiting for the client to answer input requests
  completed,       ///< finished with a result (which may itself be a tool result with `isError`)
  failed,          ///< finished without a usable result (a protocol error, a lost server)
  cancelled,       ///< cancelled by `tasks/cancel`
};
/// "working", "input_required", "completed", "failed", "cancelled".
[[nodiscard]] MCPCORE_DECL std::string_view to_string(task_status s) noexcept;
/// The status spelled `text`, if it is one.
[[nodiscard]] MCPCORE_DECL std::optional<task_status> parse_task_status(std::string_view text) noexcept;
/// `completed`, `failed` or `cancelled`.
[[nodiscard]] constexpr bool is_terminal(task_status s) noexcept {
  return s == task_status::completed || s == task_status::failed || s == task_status::cancelled;
}

/// What a record's `payload` holds.
enum class task_payload : std::uint8_t {
  none,            ///< nothing (a working task, a cancelled one)
  input_requests,  ///< `input_required`: the JSON object of the pending input requests
  result,          ///< terminal: the JSON-RPC `result` object the request would have answered
  error,           ///< terminal: the JSON-RPC `error` object the request would have answered
};
/// "none", "input_requests", "result", "error".
[[nodiscard]] MCPCORE_DECL std::string_view to_string(task_payload p) noexcept;
/// The payload kind spelled `text`, if it is one.
[[nodiscard]] MCPCORE_DECL std::optional<task_payload> parse_task_payload(std::string_view text) noexcept;

/// One task as a store keeps it (docs/concepts/task_store.md).
struct task_record {
  std::string id;     ///< `task_id_length` hex characters
  std::string owner;  ///< the principal id that created it; nobody else sees it
  std::string tool;   ///< what it runs (the tool's name), for listings and the audit
  task_status status = task_status::working;
  std::string status_message;  ///< may be empty
  task_time created_at{};
  task_time updated_at{};
  /// How long the task is kept, from `created_at`; at `created_at + ttl` it is gone (unknown).
  std::chrono::milliseconds ttl{};
  /// How often the client is asked to poll.
  std::chrono::milliseconds poll_interval{};
  task_payload payload_kind = task_payload::none;
  std::string payload;  ///< JSON text, as `payload_kind` says; empty for `none`
  /// Creation order, assigned by the store at `create` (strictly increasing within one store);
  /// listings are ordered by it and page after it. Ignored in a create request.
  std::uint64_t seq = 0;
};

/// Whether the task is gone at `now` (its `ttl` has elapsed since creation). Written as a
/// difference, so that no ttl can overflow the clock.
[[nodiscard]] constexpr bool is_expired(const task_record& t, task_time now) noexcept {
  return now >= t.created_at && now - t.created_at >= t.ttl;
}

/// What `task_store::create` is asked to do. In this order, atomically:
/// 1. expired tasks are deleted (the sweep of `expire`);
/// 2. a task with `record.id` exists → `duplicate_id`;
/// 3. the store holds `max_total` tasks or more → `global_cap`;
/// 4. `record.owner` holds `max_per_owner` tasks or more (live and terminal alike: a terminal
///    task's result is kept until its ttl) → `owner_cap`;
/// 5. the record is inserted with the next `seq` → `created`.
struct task_create_request {
  const task_record& record;
  std::size_t max_per_owner = 0;
  std::size_t max_total = 0;
  task_time now{};
};
/// The outcome of a create.
enum class task_create_status : std::uint8_t { created, duplicate_id, global_cap, owner_cap };
/// "created", "duplicate_id", "global_cap", "owner_cap".
[[nodiscard]] MCPCORE_DECL std::string_view to_string(task_create_status s) noexcept;
/// What `create` answers: the status, and the stored record's `seq` when created.
struct task_create_result {
  task_create_status status = task_create_status::created;
  std::uint64_t seq = 0;
};

/// What `task_store::transition` is asked to do. In this order, atomically:
/// 1. no task `id`, or one expired at `now` → `not_found`;
/// 2. the task is terminal → `terminal` (nothing changes, ever);
/// 3. status = `to`, status_message = `status_message`, updated_at = `now`, payload_kind and
///    payload as given → `updated`. (Any live status may go to any status, `working` to
///    `working` included: a new status message.)
struct task_transition {
  std::string_view id;
  task_status to = task_status::working;
  std::string_view status_message;
  task_payload payload_kind = task_payload::none;
  std::string_view payload;
  task_time now{};
};
/// The outcome of a transition.
enum class task_transition_status : std::uint8_t { updated, not_found, terminal };
/// "updated", "not_found", "terminal".
[[nodiscard]] MCPCORE_DECL std::string_view to_string(task_transition_status s) noexcept;

/// What `task_store::list` is asked for: `owner`'s tasks not expired at `now`, with `seq` greater
/// than `after_seq`, in `seq` order, at most `limit` of them. Records come without their payload
/// (`payload_kind` says what there is; `payload` is empty).
struct task_list_request {
  std::string_view owner;
  std::uint64_t after_seq = 0;
  std::size_t limit = 0;
  task_time now{};
};

/// The task store (docs/concepts/task_store.md, docs/tasks.md#stores): where tasks and their
/// results live.
///
/// Semantic requirements (not checked by the compiler):
/// 1. Atomicity: `create` and `transition` each take effect as one indivisible step with the
///    checks their request types document; of concurrent transitions of one live task to
///    terminal states exactly one returns `updated`, the others `terminal`.
/// 2. Thread safety: every member may be called concurrently from any thread.
/// 3. Errors: the store error codes of approval stores (`approval_store_errc`, classified by
///    `is_permanent_store_error`). A failed call changes nothing. Members do not throw.
/// 4. Expiry: a task expired at `now` is never returned and never changed, whether or not the
///    sweep has deleted it yet; `expire` deletes them and returns how many.
/// 5. Bounds: the store holds at most `max_total` tasks of the creates that reached it (plus what
///    it already held when the caps were lowered).
/// 6. `abandon_unfinished` turns every live task into `failed` with the given message and
///    payload, and returns how many: what a server does at start with a durable store, since no
///    work of an earlier process survives it.
///
/// @see memory_task_store, sqlite_task_store, docs/plugins.md
template <class S>
concept task_store = requires(S& s, const task_create_request& c, std::string_view id, const task_transition& t,
                              const task_list_request& l, task_time now, std::string_view text, task_payload kind) {
  { s.create(c) } -> std::same_as<result<task_create_result>>;
  { s.get(id, now) } -> std::same_as<result<std::optional<task_record>>>;
  { s.transition(t) } -> std::same_as<result<task_transition_status>>;
  { s.list(l) } -> std::same_as<result<std::vector<task_record>>>;
  { s.expire(now) } -> std::same_as<result<std::size_t>>;
  { s.abandon_unfinished(now, text, kind, text) } -> std::same_as<result<std::size_t>>;
};

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/governance/impl/task.ipp>
#endif

#endif  // MCPCORE_TASK_HPP
