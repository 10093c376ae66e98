// SPDX-License-Identifier: Apache-2.0
// The in-memory task store: one mutex, a map of tasks and the indexes that keep the documented
// create/transition/list/sweep steps logarithmic (docs/concepts/task_store.md).
#ifndef MCPCORE_IMPL_MEMORY_TASK_STORE_IPP
#define MCPCORE_IMPL_MEMORY_TASK_STORE_IPP

#include <mcpcore/stores/memory_task_store.hpp>

#include <mcpcore/stores/impl/store_call.ipp>

#include <mcpcore/governance/approval.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
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

// The instant a task expires, in ms since the epoch: created_at + ttl, saturated (a ttl too
// large for the clock never expires, a negative one reaching below it expired long ago). A task
// is expired at `now` when now >= this (task.hpp's is_expired, without its overflow).
[[nodiscard]] constexpr std::int64_t memory_task_deadline(task_time created_at,
                                                         std::chrono::milliseconds ttl) noexcept {
  const auto c = static_cast<std::int64_t>(created_at.time_since_epoch().count());
  const auto l = static_cast<std::int64_t>(ttl.count());
  std::int64_t r = 0;
  if (__builtin_add_overflow(c, l, &r)) {
    return l > 0 ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
  }
  return r;
}

[[nodiscard]] constexpr std::int64_t memory_task_ms(task_time t) noexcept {
  return static_cast<std::int64_t>(t.time_since_epoch().count());
}

}  // namespace detail

// Invariants (all guarded by `mutex`):
// - `tasks` owns every task; map nodes never move, so the indexes hold a view of a task's owner
//   and a pointer to its entry, and drop them before the task is erased.
// - `by_owner` holds one key per task, ordered by (owner, seq); `by_deadline` one per task,
//   ordered by (deadline, seq). Seqs are unique, so both are exact.
// - `per_owner` counts every owner's tasks (live, terminal and expired-but-not-swept alike); no
//   entry is zero.
// Every mutation first allocates whatever it needs (strings, spare nodes), then commits with
// operations that cannot throw (node inserts, erases, moves), so a failed call changes nothing.
struct memory_task_store::impl {
  struct entry {
    task_record record;
    std::int64_t deadline = 0;  // detail::memory_task_deadline(created_at, ttl)
  };
  struct owner_key {
    std::string_view owner;  // the entry's record.owner
    std::uint64_t seq;
    entry* task;
  };
  struct owner_less {
    using is_transparent = void;
    using tuple = std::tuple<std::string_view, std::uint64_t>;
    static tuple key(const owner_key& k) noexcept { return {k.owner, k.seq}; }
    static tuple key(const tuple& k) noexcept { return k; }
    template <class A, class B>
    bool operator()(const A& a, const B& b) const noexcept {
      return key(a) < key(b);
    }
  };
  struct deadline_key {
    std::int64_t deadline;
    std::uint64_t seq;
    entry* task;
    friend bool operator<(const deadline_key& a, const deadline_key& b) noexcept {
      return std::tie(a.deadline, a.seq) < std::tie(b.deadline, b.seq);
    }
  };
  using task_map = std::map<std::string, entry, std::less<>>;
  using owner_index = std::set<owner_key, owner_less>;
  using deadline_index = std::set<deadline_key>;
  using count_map = std::map<std::string, std::size_t, std::less<>>;

  mutable std::mutex mutex;
  task_map tasks;
  owner_index by_owner;
  deadline_index by_deadline;
  count_map per_owner;
  std::uint64_t next_seq = 1;

  static bool expired(const entry& e, task_time now) noexcept { return detail::memory_task_ms(now) >= e.deadline; }

  // A record as listings return it: everything but the payload.
  static task_record without_payload(const task_record& r) {
    task_record out;
    out.id = r.id;
    out.owner = r.owner;
    out.tool = r.tool;
    out.status = r.status;
    out.status_message = r.status_message;
    out.created_at = r.created_at;
    out.updated_at = r.updated_at;
    out.ttl = r.ttl;
    out.poll_interval = r.poll_interval;
    out.payload_kind = r.payload_kind;
    out.seq = r.seq;
    return out;
  }

  // ---- commit steps: none of these throws ----

  // Erases the task at `it` and its index keys.
  void erase(task_map::iterator it) noexcept {
    entry& e = it->second;
    by_owner.erase(owner_key{e.record.owner, e.record.seq, &e});
    by_deadline.erase(deadline_key{e.deadline, e.record.seq, &e});
    if (const auto c = per_owner.find(e.record.owner); c != per_owner.end() && --c->second == 0) per_owner.erase(c);
    tasks.erase(it);
  }

  // Deletes every task expired at `now`; how many.
  std::size_t sweep(task_time now) noexcept {
    std::size_t n = 0;
    const std::int64_t at = detail::memory_task_ms(now);
    while (!by_deadline.empty() && by_deadline.begin()->deadline <= at) {
      const entry* e = by_deadline.begin()->task;
      erase(tasks.find(e->record.id));
      ++n;
    }
    return n;
  }

  // The task `id` unless it is unknown or expired at `now`.
  entry* find_live(std::string_view id, task_time now) noexcept {
    const auto it = tasks.find(id);
    if (it == tasks.end() || expired(it->second, now)) return nullptr;
    return &it->second;
  }

  // ---- the operations, called with `mutex` held ----

  result<task_create_result> create(const task_create_request& c) {
    const task_record& r = c.record;
    // Everything the insert needs, allocated before anything changes.
    task_map::node_type task_node;
    {
      task_map tmp;
      entry e{r, detail::memory_task_deadline(r.created_at, r.ttl)};
      tmp.emplace(r.id, std::move(e));
      task_node = tmp.extract(tmp.begin());
    }
    owner_index::node_type owner_node;
    {
      owner_index tmp;
      tmp.insert(owner_key{{}, 0, nullptr});
      owner_node = tmp.extract(tmp.begin());
    }
    deadline_index::node_type deadline_node;
    {
      deadline_index tmp;
      tmp.insert(deadline_key{0, 0, nullptr});
      deadline_node = tmp.extract(tmp.begin());
    }
    count_map::node_type count_node;  // in case the owner has no entry after the sweep
    {
      count_map tmp;
      tmp.emplace(r.owner, 0);
      count_node = tmp.extract(tmp.begin());
    }

    // 1. the sweep, committed with every outcome.
    (void)sweep(c.now);
    // 2.-4. the refusals, counted after the sweep.
    if (tasks.find(r.id) != tasks.end()) return task_create_result{task_create_status::duplicate_id, 0};
    if (tasks.size() >= c.max_total) return task_create_result{task_create_status::global_cap, 0};
    auto count = per_owner.find(r.owner);
    if ((count == per_owner.end() ? 0 : count->second) >= c.max_per_owner) {
      return task_create_result{task_create_status::owner_cap, 0};
    }

    // 5. insert with the next seq.
    const std::uint64_t seq = next_seq++;
    entry& e = tasks.insert(std::move(task_node)).position->second;
    e.record.seq = seq;
    owner_node.value() = owner_key{e.record.owner, seq, &e};
    by_owner.insert(std::move(owner_node));
    deadline_node.value() = deadline_key{e.deadline, seq, &e};
    by_deadline.insert(std::move(deadline_node));
    if (count == per_owner.end()) count = per_owner.insert(std::move(count_node)).position;
    ++count->second;
    return task_create_result{task_create_status::created, seq};
  }

  result<std::optional<task_record>> get(std::string_view id, task_time now) {
    const entry* e = find_live(id, now);
    if (e == nullptr) return std::optional<task_record>{};
    return std::optional<task_record>{e->record};
  }

  result<task_transition_status> transition(const task_transition& t) {
    entry* e = find_live(t.id, t.now);
    if (e == nullptr) return task_transition_status::not_found;
    if (is_terminal(e->record.status)) return task_transition_status::terminal;
    std::string message{t.status_message};
    std::string payload{t.payload};
    // Commit.
    task_record& r = e->record;
    r.status = t.to;
    r.status_message.swap(message);
    r.updated_at = t.now;
    r.payload_kind = t.payload_kind;
    r.payload.swap(payload);
    return task_transition_status::updated;
  }

  result<std::vector<task_record>> list(const task_list_request& l) const {
    std::vector<task_record> out;
    if (l.limit == 0) return out;
    if (const auto c = per_owner.find(l.owner); c != per_owner.end()) out.reserve(std::min(l.limit, c->second));
    for (auto it = by_owner.upper_bound(std::tuple<std::string_view, std::uint64_t>{l.owner, l.after_seq});
         it != by_owner.end() && it->owner == l.owner && out.size() < l.limit; ++it) {
      if (!expired(*it->task, l.now)) out.push_back(without_payload(it->task->record));
    }
    return out;
  }

  result<std::size_t> abandon_unfinished(task_time now, std::string_view message, task_payload kind,
                                         std::string_view payload) {
    struct change {
      entry* task;
      std::string message;
      std::string payload;
    };
    std::vector<change> changes;
    for (auto& [id, e] : tasks) {
      if (!is_terminal(e.record.status) && !expired(e, now)) {
        changes.push_back(change{&e, std::string{message}, std::string{payload}});
      }
    }
    // Commit.
    for (auto& c : changes) {
      task_record& r = c.task->record;
      r.status = task_status::failed;
      r.status_message.swap(c.message);
      r.updated_at = now;
      r.payload_kind = kind;
      r.payload.swap(c.payload);
    }
    return changes.size();
  }
};

namespace detail {

// Runs `f` under the store's lock (detail::guarded_store_call).
template <class Impl, class F>
auto memory_task_store_call(Impl& impl, F&& f) noexcept -> decltype(f()) {
  return guarded_store_call(impl.mutex, std::forward<F>(f),
                            [] { return fail(make_error_code(approval_store_errc::internal)); });
}

}  // namespace detail

MCPCORE_DECL memory_task_store::memory_task_store() : impl_(new impl) {}

MCPCORE_DECL memory_task_store::~memory_task_store() { delete impl_; }

MCPCORE_DECL result<task_create_result> memory_task_store::create(const task_create_request& c) {
  return detail::memory_task_store_call(*impl_, [&] { return impl_->create(c); });
}

MCPCORE_DECL result<std::optional<task_record>> memory_task_store::get(std::string_view id, task_time now) {
  return detail::memory_task_store_call(*impl_, [&] { return impl_->get(id, now); });
}

MCPCORE_DECL result<task_transition_status> memory_task_store::transition(const task_transition& t) {
  return detail::memory_task_store_call(*impl_, [&] { return impl_->transition(t); });
}

MCPCORE_DECL result<std::vector<task_record>> memory_task_store::list(const task_list_request& l) {
  return detail::memory_task_store_call(*impl_, [&] { return impl_->list(l); });
}

MCPCORE_DECL result<std::size_t> memory_task_store::expire(task_time now) {
  return detail::memory_task_store_call(*impl_, [&]() -> result<std::size_t> { return impl_->sweep(now); });
}

MCPCORE_DECL result<std::size_t> memory_task_store::abandon_unfinished(task_time now, std::string_view status_message,
                                                                       task_payload payload_kind,
                                                                       std::string_view payload) {
  return detail::memory_task_store_call(
      *impl_, [&] { return impl_->abandon_unfinished(now, status_message, payload_kind, payload); });
}

MCPCORE_DECL std::size_t memory_task_store::size() const {
  const std::lock_guard lock{impl_->mutex};
  return impl_->tasks.size();
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_MEMORY_TASK_STORE_IPP
