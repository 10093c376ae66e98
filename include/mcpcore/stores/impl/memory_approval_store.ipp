// SPDX-License-Identifier: Apache-2.0
// The in-memory approval store: one mutex, a map of tickets and the indexes that keep the
// documented mint/consume/review/sweep steps O(log n) or O(pending).
#ifndef MCPCORE_IMPL_MEMORY_APPROVAL_STORE_IPP
#define MCPCORE_IMPL_MEMORY_APPROVAL_STORE_IPP

#include <mcpcore/stores/memory_approval_store.hpp>

#include <mcpcore/stores/impl/store_call.ipp>

#include <algorithm>
#include <exception>
#include <functional>
#include <limits>
#include <list>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <system_error>
#include <tuple>
#include <utility>

MCPCORE_BEGIN_NAMESPACE
namespace detail {

// Whether a clock that started at `t` has run for `lifetime` by `now`: t <= now - lifetime,
// computed without overflowing (a cutoff below the representable range expires nothing, one
// above it expires everything).
[[nodiscard]] constexpr bool approval_aged(approval_time t, approval_time now,
                                           std::chrono::milliseconds lifetime) noexcept {
  using rep = std::chrono::milliseconds::rep;
  const rep n = now.time_since_epoch().count();
  const rep l = lifetime.count();
  if (l >= 0 && n < std::numeric_limits<rep>::min() + l) return false;
  if (l < 0 && n > std::numeric_limits<rep>::max() + l) return true;
  return t.time_since_epoch().count() <= n - l;
}

// When a finished ticket last changed: consumed_at, expired_at, or reviewed_at (rejected).
[[nodiscard]] inline approval_time approval_last_change(const approval_ticket& t) noexcept {
  if (t.consumed_at) return *t.consumed_at;
  if (t.expired_at) return *t.expired_at;
  return t.reviewed_at;
}

}  // namespace detail

// Invariants (all guarded by `mutex`):
// - `tickets` owns every ticket; map nodes never move, so the indexes hold views of a ticket's
//   strings and pointers to it, and drop them before the ticket is erased.
// - `pending_by_submission` holds exactly the pending tickets, `armed_by_review` exactly the
//   approved unconsumed ones, `history` exactly the finished ones (consumed, rejected,
//   expired), in the order they finished. Finished is final, so a ticket enters `history` once.
// - `pending_by_key` maps (definition_id, submitted_by, scope, origin) to the pending ticket
//   with that key. Mint deduplicates before it inserts, so there is at most one: that ticket is
//   also "the newest pending ticket with the key".
// - `pending_per_submitter` counts pending tickets per submitter; no entry is zero.
// - `reviewed` holds exactly the tickets whose `reviewed_by` is not empty, newest review first.
//   A ticket enters it at its review and leaves it only when it is erased (evict, prune): expiry
//   and consumption change neither `reviewed_at` nor `reviewed_by`.
// Every mutation first allocates whatever it needs (strings, spare nodes), then commits with
// operations that cannot throw (node splices, erases, moves), so a failed call changes nothing.
struct memory_approval_store::impl {
  struct index_entry {
    approval_time at;
    std::string_view id;  // the ticket's id
    approval_ticket* ticket;
    friend bool operator<(const index_entry& a, const index_entry& b) noexcept {
      return std::tie(a.at, a.id) < std::tie(b.at, b.id);
    }
  };
  using ticket_map = std::map<std::string, approval_ticket, std::less<>>;
  using time_index = std::set<index_entry>;  // ordered by (time, id)
  // (time descending, id ascending): the order of `recently_reviewed`.
  struct newest_first {
    bool operator()(const index_entry& a, const index_entry& b) const noexcept {
      return std::tie(b.at, a.id) < std::tie(a.at, b.id);
    }
  };
  using review_index = std::set<index_entry, newest_first>;
  using dedup_key = std::tuple<std::string_view, std::string_view, std::string_view, std::string_view>;
  using dedup_index = std::map<dedup_key, approval_ticket*>;
  using count_map = std::map<std::string, std::size_t, std::less<>>;
  using history_list = std::list<std::string_view>;

  explicit impl(memory_approval_store_options o) noexcept : options(o) {}

  const memory_approval_store_options options;
  mutable std::mutex mutex;
  ticket_map tickets;
  time_index pending_by_submission;  // key: submitted_at
  time_index armed_by_review;        // key: reviewed_at
  dedup_index pending_by_key;
  count_map pending_per_submitter;
  history_list history;  // oldest finished first
  review_index reviewed;  // key: reviewed_at, newest first

  static dedup_key key_of(const approval_ticket& t) noexcept {
    return {t.definition_id, t.submitted_by, t.scope, t.origin};
  }

  // The end of the prefix of `index` whose clocks ran out, and its length.
  static std::pair<time_index::iterator, std::size_t> aged_prefix(time_index& index, approval_time now,
                                                                 std::chrono::milliseconds lifetime) noexcept {
    std::size_t n = 0;
    auto it = index.begin();
    for (; it != index.end() && detail::approval_aged(it->at, now, lifetime); ++it) ++n;
    return {it, n};
  }

  // ---- commit steps: none of these throws ----

  void leave_pending(approval_ticket& t) noexcept {
    pending_by_submission.erase(index_entry{t.submitted_at, t.id, &t});
    pending_by_key.erase(key_of(t));
    const auto c = pending_per_submitter.find(t.submitted_by);
    if (c != pending_per_submitter.end() && --c->second == 0) pending_per_submitter.erase(c);
  }

  // Appends `t` to the history, using one node of `spare`. @pre `spare` is not empty.
  void finish(approval_ticket& t, history_list& spare) noexcept {
    spare.front() = t.id;
    history.splice(history.end(), spare, spare.begin());
  }

  // Pending or armed `t` becomes expired at `now`. @pre `spare` is not empty.
  void expire_ticket(approval_ticket& t, approval_time now, history_list& spare) noexcept {
    if (t.status == approval_status::pending) {
      leave_pending(t);
    } else {
      armed_by_review.erase(index_entry{t.reviewed_at, t.id, &t});
    }
    t.status = approval_status::expired;
    t.expired_at = now;
    finish(t, spare);
  }

  // Expires the aged prefixes found by `aged_prefix`. @pre `spare` has a node per ticket.
  void sweep(time_index::iterator pending_end, time_index::iterator armed_end, approval_time now,
             history_list& spare) noexcept {
    while (pending_by_submission.begin() != pending_end) {
      expire_ticket(*pending_by_submission.begin()->ticket, now, spare);
    }
    while (armed_by_review.begin() != armed_end) expire_ticket(*armed_by_review.begin()->ticket, now, spare);
  }

  // Erases ticket `it` from `tickets` and from the review index. @pre it is in no other index.
  void forget(ticket_map::iterator it) noexcept {
    const approval_ticket& t = it->second;
    if (!t.reviewed_by.empty()) reviewed.erase(index_entry{t.reviewed_at, t.id, nullptr});
    tickets.erase(it);
  }

  // Forgets the oldest finished tickets beyond `max_history`.
  void evict() noexcept {
    while (history.size() > options.max_history) {
      const auto it = tickets.find(history.front());
      history.pop_front();
      if (it != tickets.end()) forget(it);
    }
  }

  // ---- the operations, called with `mutex` held ----

  result<approval_mint_result> mint(const approval_mint_request& m) {
    // 1. sweep: what it will expire (applied at commit).
    const auto [pending_end, aged_pending] = aged_prefix(pending_by_submission, m.now, m.lifetime);
    const auto [armed_end, aged_armed] = aged_prefix(armed_by_review, m.now, m.lifetime);
    history_list spare(aged_pending + aged_armed);
    approval_mint_result out;
    std::size_t mine = 0;  // the submitter's pending tickets after the sweep
    // 2. dedup, ignoring the ticket the sweep expires.
    const auto dup = pending_by_key.find(dedup_key{m.definition_id, m.submitted_by, m.scope, m.origin});
    if (dup != pending_by_key.end() && !detail::approval_aged(dup->second->submitted_at, m.now, m.lifetime)) {
      out.status = approval_mint_status::deduped;
      out.id = dup->second->id;
    } else {
      // 3. and 4. the caps, counted after the sweep.
      if (const auto c = pending_per_submitter.find(m.submitted_by); c != pending_per_submitter.end()) {
        mine = c->second;
        for (auto it = pending_by_submission.begin(); it != pending_end; ++it) {
          if (it->ticket->submitted_by == m.submitted_by) --mine;
        }
      }
      if (mine >= m.per_submitter_cap) {
        out.status = approval_mint_status::submitter_cap;
      } else if (pending_by_submission.size() - aged_pending >= m.global_cap) {
        out.status = approval_mint_status::global_cap;
      } else {
        out.status = approval_mint_status::created;
      }
    }
    if (out.status != approval_mint_status::created) {
      sweep(pending_end, armed_end, m.now, spare);
      evict();
      return out;
    }

    // 5. insert: an id already in use (a broken id source) fails before anything changes.
    if (tickets.find(m.id) != tickets.end()) return fail(make_error_code(approval_store_errc::internal));
    out.id = std::string{m.id};
    ticket_map::node_type ticket_node;
    {
      ticket_map tmp;
      approval_ticket t;
      t.id = std::string{m.id};
      t.definition_id = std::string{m.definition_id};
      t.status = approval_status::pending;
      t.origin = std::string{m.origin};
      t.submitted_by = std::string{m.submitted_by};
      t.submitted_at = m.now;
      t.scope = std::string{m.scope};
      t.server = std::string{m.server};
      tmp.emplace(std::string{m.id}, std::move(t));
      ticket_node = tmp.extract(tmp.begin());
    }
    time_index::node_type pending_node;
    {
      time_index tmp;
      tmp.insert(index_entry{m.now, {}, nullptr});
      pending_node = tmp.extract(tmp.begin());
    }
    dedup_index::node_type key_node;
    {
      dedup_index tmp;
      tmp.emplace(dedup_key{}, nullptr);
      key_node = tmp.extract(tmp.begin());
    }
    count_map::node_type count_node;
    if (mine == 0) {
      // The submitter has no entry, or the sweep removes it: have one ready.
      count_map tmp;
      tmp.emplace(std::string{m.submitted_by}, 0);
      count_node = tmp.extract(tmp.begin());
    }

    // Commit.
    sweep(pending_end, armed_end, m.now, spare);
    const auto ins = tickets.insert(std::move(ticket_node));
    approval_ticket& t = ins.position->second;
    pending_node.value() = index_entry{t.submitted_at, t.id, &t};
    pending_by_submission.insert(std::move(pending_node));
    key_node.key() = key_of(t);
    key_node.mapped() = &t;
    pending_by_key.insert(std::move(key_node));
    auto c = pending_per_submitter.find(t.submitted_by);
    if (c == pending_per_submitter.end()) c = pending_per_submitter.insert(std::move(count_node)).position;
    ++c->second;
    evict();
    return out;
  }

  result<approval_consume_status> consume(const approval_consume_request& r) {
    const auto it = tickets.find(r.id);
    if (it == tickets.end()) return approval_consume_status::not_found;
    approval_ticket& t = it->second;
    if (t.origin != r.origin) return approval_consume_status::foreign_origin;
    if (t.submitted_by != r.consumer) return approval_consume_status::foreign_submitter;
    if (t.status != approval_status::approved || t.consumed_at) return approval_consume_status::not_consumable;
    history_list spare(1);
    if (detail::approval_aged(t.reviewed_at, r.now, r.lifetime)) {
      expire_ticket(t, r.now, spare);
      evict();
      return approval_consume_status::expired;
    }
    std::string by{r.consumer};
    // Commit: the compare-and-set, under the store's one lock.
    armed_by_review.erase(index_entry{t.reviewed_at, t.id, &t});
    t.consumed_at = r.now;
    t.consumed_by = std::move(by);
    finish(t, spare);
    evict();
    return approval_consume_status::consumed;
  }

  result<approval_review_status> review(const approval_review_request& r) {
    if (r.decision != approval_status::approved && r.decision != approval_status::rejected) {
      return fail(make_error_code(approval_store_errc::internal));
    }
    const auto it = tickets.find(r.id);
    if (it == tickets.end()) return approval_review_status::not_found;
    approval_ticket& t = it->second;
    if (t.status != approval_status::pending) return approval_review_status::already_reviewed;
    history_list spare(1);
    if (detail::approval_aged(t.submitted_at, r.now, r.lifetime)) {
      expire_ticket(t, r.now, spare);
      evict();
      return approval_review_status::expired;
    }
    if (r.reviewer == t.submitted_by) return approval_review_status::self_review;
    std::string reviewer{r.reviewer};
    std::string comment{r.comment};
    time_index::node_type armed_node;
    if (r.decision == approval_status::approved) {
      time_index tmp;
      tmp.insert(index_entry{r.now, {}, nullptr});
      armed_node = tmp.extract(tmp.begin());
    }
    review_index::node_type reviewed_node;
    if (!r.reviewer.empty()) {  // the history lists what a named reviewer decided
      review_index tmp;
      tmp.insert(index_entry{r.now, {}, nullptr});
      reviewed_node = tmp.extract(tmp.begin());
    }
    // Commit.
    leave_pending(t);
    t.status = r.decision;
    t.reviewed_by = std::move(reviewer);
    t.reviewed_at = r.now;
    t.review_comment = std::move(comment);
    if (reviewed_node) {
      reviewed_node.value() = index_entry{t.reviewed_at, t.id, &t};
      reviewed.insert(std::move(reviewed_node));
    }
    if (armed_node) {
      armed_node.value() = index_entry{t.reviewed_at, t.id, &t};
      armed_by_review.insert(std::move(armed_node));
    } else {
      finish(t, spare);
      evict();
    }
    return approval_review_status::reviewed;
  }

  result<std::size_t> expire(approval_time now, std::chrono::milliseconds lifetime) {
    const auto [pending_end, aged_pending] = aged_prefix(pending_by_submission, now, lifetime);
    const auto [armed_end, aged_armed] = aged_prefix(armed_by_review, now, lifetime);
    history_list spare(aged_pending + aged_armed);
    sweep(pending_end, armed_end, now, spare);
    evict();
    return aged_pending + aged_armed;
  }

  // One batch of prune: forgets up to `batch` finished tickets whose last change is before
  // `older_than`; returns how many. Only finished tickets are in `history`.
  std::size_t prune_batch(approval_time older_than, std::size_t batch) noexcept {
    std::size_t removed = 0;
    for (auto h = history.begin(); h != history.end() && removed < batch;) {
      const auto it = tickets.find(*h);
      if (it == tickets.end()) {
        ++h;
        continue;
      }
      if (detail::approval_last_change(it->second) < older_than) {
        h = history.erase(h);
        forget(it);
        ++removed;
      } else {
        ++h;
      }
    }
    return removed;
  }

  result<std::vector<approval_ticket>> pending(std::size_t limit) const {
    std::vector<approval_ticket> out;
    out.reserve(std::min(limit, pending_by_submission.size()));
    for (const index_entry& e : pending_by_submission) {
      if (out.size() == limit) break;
      out.push_back(*e.ticket);
    }
    return out;
  }

  result<std::vector<approval_ticket>> recently_reviewed(std::size_t limit) const {
    const std::size_t n = std::min({limit, max_recently_reviewed, reviewed.size()});
    std::vector<approval_ticket> out;
    out.reserve(n);
    for (auto it = reviewed.begin(); out.size() < n; ++it) out.push_back(*it->ticket);
    return out;
  }

  result<std::optional<approval_ticket>> get(std::string_view id) const {
    const auto it = tickets.find(id);
    if (it == tickets.end()) return std::optional<approval_ticket>{};
    return std::optional<approval_ticket>{it->second};
  }
};

namespace detail {

// Runs `f` under the store's lock (detail::guarded_store_call).
template <class Impl, class F>
auto memory_approval_store_call(Impl& impl, F&& f) noexcept -> decltype(f()) {
  return guarded_store_call(impl.mutex, std::forward<F>(f),
                            [] { return fail(make_error_code(approval_store_errc::internal)); });
}

}  // namespace detail

MCPCORE_DECL memory_approval_store::memory_approval_store(memory_approval_store_options options)
    : impl_(new impl(options)) {}

MCPCORE_DECL memory_approval_store::~memory_approval_store() { delete impl_; }

MCPCORE_DECL result<approval_mint_result> memory_approval_store::mint(const approval_mint_request& m) {
  return detail::memory_approval_store_call(*impl_, [&] { return impl_->mint(m); });
}

MCPCORE_DECL result<std::optional<approval_ticket>> memory_approval_store::get(std::string_view id) {
  return detail::memory_approval_store_call(*impl_, [&] { return impl_->get(id); });
}

MCPCORE_DECL result<approval_consume_status> memory_approval_store::consume(const approval_consume_request& c) {
  return detail::memory_approval_store_call(*impl_, [&] { return impl_->consume(c); });
}

MCPCORE_DECL result<approval_review_status> memory_approval_store::review(const approval_review_request& r) {
  return detail::memory_approval_store_call(*impl_, [&] { return impl_->review(r); });
}

MCPCORE_DECL result<std::size_t> memory_approval_store::expire(approval_time now, std::chrono::milliseconds lifetime) {
  return detail::memory_approval_store_call(*impl_, [&] { return impl_->expire(now, lifetime); });
}

MCPCORE_DECL result<std::vector<approval_ticket>> memory_approval_store::pending(std::size_t limit) {
  return detail::memory_approval_store_call(*impl_, [&] { return impl_->pending(limit); });
}

MCPCORE_DECL result<std::vector<approval_ticket>> memory_approval_store::recently_reviewed(std::size_t limit) {
  return detail::memory_approval_store_call(*impl_, [&] { return impl_->recently_reviewed(limit); });
}

MCPCORE_DECL result<std::size_t> memory_approval_store::prune(approval_time older_than,
                                                              approval_prune_options options) {
  const std::size_t batch = options.batch == 0 ? 1 : options.batch;
  std::size_t total = 0;
  for (;;) {
    // Each batch takes the lock on its own, so a consume waits for one batch at most.
    auto n = detail::memory_approval_store_call(*impl_, [&]() -> result<std::size_t> {
      return impl_->prune_batch(older_than, batch);
    });
    if (!n) return n;
    total += *n;
    if (*n < batch) return total;
  }
}

MCPCORE_DECL std::size_t memory_approval_store::size() const {
  const std::lock_guard lock{impl_->mutex};
  return impl_->tickets.size();
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_MEMORY_APPROVAL_STORE_IPP
