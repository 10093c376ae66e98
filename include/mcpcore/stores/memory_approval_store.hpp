// SPDX-License-Identifier: Apache-2.0
// The in-memory approval store: mutex-protected, bounded, for tests and embedded hosts.
#ifndef MCPCORE_MEMORY_APPROVAL_STORE_HPP
#define MCPCORE_MEMORY_APPROVAL_STORE_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/governance/approval.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

/// Bounds of a `memory_approval_store`.
struct memory_approval_store_options {
  /// Finished tickets (consumed, rejected or expired) kept as history; beyond this the oldest
  /// finished ticket is forgotten. Pending tickets are bounded by the mint caps and approved
  /// unconsumed ones by the lifetime, so memory stays bounded.
  ///
  /// "Oldest" is the order in which tickets finished (were consumed, rejected or expired), not
  /// the order of submission. Pending and approved unconsumed tickets are never forgotten. A
  /// forgotten ticket is unknown from then on (`get` gives `std::nullopt`, `consume` and
  /// `review` give `not_found`); with 0, finished tickets are forgotten at once.
  std::size_t max_history = 10000;
};

/// An `approval_store` held in process memory (one mutex; every operation is O(log n) or a
/// scan of the pending set). Nothing survives the process: use `sqlite_approval_store` for
/// tickets that must outlive a restart.
///
/// The members implement the steps, in the order, that `approval_mint_request`,
/// `approval_consume_request` and `approval_review_request` document; `expire` runs the sweep
/// of a mint alone and returns how many tickets it expired; `pending` lists pending tickets
/// oldest first (by `submitted_at`, then by id) and, like `get`, does not sweep;
/// `recently_reviewed` lists reviewed tickets newest review first, from an index kept in review
/// order (O(limit)).
///
/// @par Errors
/// A failed call changes nothing. Out of memory gives `std::errc::not_enough_memory`
/// (transient). `approval_store_errc::internal` (permanent): a mint that would create a ticket
/// whose id is already in use, or a review whose decision is neither `approved` nor `rejected`.
/// Members do not throw.
///
/// Thread-safe. Not copyable or movable.
class memory_approval_store {
 public:
  /// An empty store. @throws std::bad_alloc
  MCPCORE_DECL explicit memory_approval_store(memory_approval_store_options options = {});
  /// Frees every ticket. No member may be running.
  MCPCORE_DECL ~memory_approval_store();
  memory_approval_store(const memory_approval_store&) = delete;
  memory_approval_store& operator=(const memory_approval_store&) = delete;

  /// @see approval_mint_request
  [[nodiscard]] MCPCORE_DECL result<approval_mint_result> mint(const approval_mint_request& m);
  /// Ticket `id` as stored; `std::nullopt` when unknown (or forgotten, see `max_history`).
  [[nodiscard]] MCPCORE_DECL result<std::optional<approval_ticket>> get(std::string_view id);
  /// @see approval_consume_request
  [[nodiscard]] MCPCORE_DECL result<approval_consume_status> consume(const approval_consume_request& c);
  /// @see approval_review_request
  [[nodiscard]] MCPCORE_DECL result<approval_review_status> review(const approval_review_request& r);
  /// The sweep of `approval_mint_request` step 1 alone; returns how many tickets it expired.
  [[nodiscard]] MCPCORE_DECL result<std::size_t> expire(approval_time now, std::chrono::milliseconds lifetime);
  /// Up to `limit` pending tickets, oldest first (by `submitted_at`, then by id).
  [[nodiscard]] MCPCORE_DECL result<std::vector<approval_ticket>> pending(std::size_t limit);
  /// `approval_store_history` (docs/approvals.md#recently-reviewed): up to
  /// `min(limit, max_recently_reviewed)` tickets whose `reviewed_by` is not empty, newest
  /// `reviewed_at` first (ties by id). A ticket forgotten by `max_history` or removed by `prune`
  /// is no longer listed.
  [[nodiscard]] MCPCORE_DECL result<std::vector<approval_ticket>> recently_reviewed(std::size_t limit);
  /// Retention (docs/approvals.md#retention): removes the consumed, rejected and expired tickets
  /// whose last change is before `older_than`, `options.batch` at a time, the lock released
  /// between batches. Returns how many it removed. (`max_history` bounds the history anyway.)
  [[nodiscard]] MCPCORE_DECL result<std::size_t> prune(approval_time older_than, approval_prune_options options = {});
  /// Tickets held (pending, approved and history). Thread-safe, like every member.
  [[nodiscard]] MCPCORE_DECL std::size_t size() const;

 private:
  struct impl;  // the tickets, their indexes and the mutex (impl/memory_approval_store.ipp)
  impl* impl_;
};

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/stores/impl/memory_approval_store.ipp>
#endif

#endif  // MCPCORE_MEMORY_APPROVAL_STORE_HPP
