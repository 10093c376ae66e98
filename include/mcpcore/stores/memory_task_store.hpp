// SPDX-License-Identifier: Apache-2.0
// The in-memory task store: mutex-protected, bounded by the create caps and by expiry.
#ifndef MCPCORE_MEMORY_TASK_STORE_HPP
#define MCPCORE_MEMORY_TASK_STORE_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/task.hpp>

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

/// A `task_store` held in process memory (docs/concepts/task_store.md#shipped-models).
///
/// One mutex guards the tasks and three indexes: by id, by (owner, seq) for listings and the
/// owner count, and by expiry time (`created_at + ttl`, saturated) for the sweep, so that
/// `get` and `transition` are O(log n), `create` O((1 + expired) log n), `list` O(log n + the
/// page and the expired tasks it skips), `expire` O(expired log n) and `abandon_unfinished` O(n).
/// Memory is bounded by the caps each `task_create_request` carries and by each task's `ttl`:
/// nothing else is kept. Nothing survives the process (`abandon_unfinished` has nothing to do
/// at start): use `sqlite_task_store` for results that must outlive a restart.
///
/// The members implement the steps, in the order, that `task_create_request` and
/// `task_transition` document. Sequence numbers start at 1 and never repeat within one store
/// object.
///
/// @par Errors
/// A failed call changes nothing. Out of memory (copying a record in or out) gives
/// `std::errc::not_enough_memory` (transient); any other exception inside a member gives
/// `approval_store_errc::internal` (permanent). Members do not throw.
///
/// Thread-safe. Not copyable or movable.
class memory_task_store {
 public:
  /// An empty store. @throws std::bad_alloc
  MCPCORE_DECL memory_task_store();
  /// Frees every task. No member may be running.
  MCPCORE_DECL ~memory_task_store();
  memory_task_store(const memory_task_store&) = delete;
  memory_task_store& operator=(const memory_task_store&) = delete;

  /// @see task_create_request. `c.record.seq` is ignored; the result carries the assigned one.
  [[nodiscard]] MCPCORE_DECL result<task_create_result> create(const task_create_request& c);
  /// Task `id` with its payload; `std::nullopt` when unknown or expired at `now`.
  [[nodiscard]] MCPCORE_DECL result<std::optional<task_record>> get(std::string_view id, task_time now);
  /// @see task_transition
  [[nodiscard]] MCPCORE_DECL result<task_transition_status> transition(const task_transition& t);
  /// @see task_list_request (records without their payload).
  [[nodiscard]] MCPCORE_DECL result<std::vector<task_record>> list(const task_list_request& l);
  /// Deletes the tasks expired at `now`; how many.
  [[nodiscard]] MCPCORE_DECL result<std::size_t> expire(task_time now);
  /// Every live task not expired at `now` becomes `failed` with `status_message`, `payload_kind`
  /// and `payload`, `updated_at = now`; how many.
  [[nodiscard]] MCPCORE_DECL result<std::size_t> abandon_unfinished(task_time now, std::string_view status_message,
                                                                   task_payload payload_kind,
                                                                   std::string_view payload);
  /// Tasks held, expired ones that no sweep has deleted yet included. Thread-safe.
  [[nodiscard]] MCPCORE_DECL std::size_t size() const;

 private:
  struct impl;  // the tasks, their indexes and the mutex (impl/memory_task_store.ipp)
  impl* impl_;
};

static_assert(task_store<memory_task_store>);

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/stores/impl/memory_task_store.ipp>
#endif

#endif  // MCPCORE_MEMORY_TASK_STORE_HPP
