// SPDX-License-Identifier: Apache-2.0
// Per-principal fairness of the HTTP endpoint's handler queue (docs/sessions.md#fair-dispatch): one
// FIFO queue per principal, the next task from the principal with the fewest running (round-robin
// among equals), and a per-principal cap on dispatches queued or running. Every submission to the executor is the same fungible "run the next task in
// round-robin order", so whatever order the executor runs its closures in, the tasks run fairly.
#ifndef MCPCORE_IMPL_FAIR_DISPATCH_IPP
#define MCPCORE_IMPL_FAIR_DISPATCH_IPP

#include <mcpcore/detail/config.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

/// What `fair_dispatch::submit` did with a task.
enum class fair_submit : std::uint8_t {
  taken,          ///< queued, and a closure to run it is with the executor
  busy,           ///< the executor refused (nothing ran; the task is dropped)
  principal_cap,  ///< the principal has its cap of dispatches queued or running (nothing ran)
};

class fair_dispatch;

/// A running task's place in its principal's count of dispatches queued or running. The task gets
/// it by reference and frees it with `release()` the moment its answer is delivered, so that a
/// client that sends its next request as soon as the answer arrives does not meet its own finished
/// call at the cap; whatever the task did not free is freed when it returns. Used by one thread
/// at a time (the task's); `release()` twice frees once.
class fair_slot {
 public:
  fair_slot() noexcept = default;  ///< counts nothing (a task run inline, without the queues)
  fair_slot(const fair_slot&) = delete;
  fair_slot& operator=(const fair_slot&) = delete;
  ~fair_slot() { release(); }
  inline void release() noexcept;

 private:
  friend class fair_dispatch;
  fair_slot(fair_dispatch* owner, void* entry) noexcept : owner_(owner), entry_(entry) {}
  fair_dispatch* owner_ = nullptr;  // null once released
  void* entry_ = nullptr;           // the principal's map node (stable while its count includes this slot)
};

/// The per-principal queues. Shared (`shared_ptr`) between the endpoint and the closures it gave
/// the executor, so a closure that runs after the endpoint went finds its queue still there.
///
/// @par Thread safety
/// Every member is thread-safe; `mutex` is a leaf (no task runs, no executor is called under it).
class fair_dispatch : public std::enable_shared_from_this<fair_dispatch> {
 public:
  /// `per_principal_cap`: dispatches one principal may have queued or running (0: no cap).
  explicit fair_dispatch(std::size_t per_principal_cap) noexcept : cap_(per_principal_cap) {}

  /// Principals with nothing queued or running whose entries are kept, so that a principal's next
  /// request finds its queue without allocating one; beyond it, an entry goes when it empties.
  static constexpr std::size_t kept_idle_principals = 64;

  /// Queues `task` for `principal` and hands `exec` one "run the next task" closure. `principal_cap`
  /// when the principal is at its cap, `busy` when `exec` refused (or threw): then `task` was
  /// taken back (or, had a closure already started it, runs anyway and `taken` is returned).
  /// `keep` is held until the task has run (or was taken back), so that the task itself can be
  /// small enough for `std::function` to hold without allocating (a raw pointer to `*keep`).
  /// @throws std::bad_alloc before anything changed
  template <class Exec>
  fair_submit submit(std::string_view principal, std::function<void(fair_slot&)> task, Exec&& exec,
                     std::shared_ptr<void> keep = nullptr) {
    std::uint64_t seq = 0;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      auto it = by_principal_.find(principal);
      if (it == by_principal_.end()) it = by_principal_.try_emplace(std::string{principal}).first;
      principal_queue& q = it->second;
      if (cap_ != 0 && q.in_flight() >= cap_) return fair_submit::principal_cap;
      seq = ++next_seq_;
      const bool was_idle = q.tasks.empty();
      q.tasks.push_back(queued{seq, std::move(task), std::move(keep)});
      if (was_idle) {
        try {
          ring_.push_back(&*it);
        } catch (...) {
          q.tasks.pop_back();
          if (q.in_flight() == 0) forget_if_idle(&*it);
          throw;
        }
      }
    }
    bool taken = false;
    try {
      taken = exec([self = shared_from_this()] { self->run_next(); });
    } catch (...) {
      taken = false;
    }
    if (taken) return fair_submit::taken;
    switch (take_back(principal, seq)) {
      case took::back:
        return fair_submit::busy;
      case took::orphan:
        return fair_submit::taken;
      case took::run_here:
        run_next();  // no closure is active to run the task left without one: run it here
        return fair_submit::taken;
    }
    return fair_submit::taken;
  }

  /// Runs the next task (the executor's closure): the oldest queued task of the principal with
  /// the fewest tasks running, ties in ring order (round-robin: a principal that just had its
  /// turn goes to the end of the ring). So a principal with nothing running is served by the very
  /// next free thread, however many tasks another principal has queued. Then, while tasks are
  /// queued that no closure will run (their submissions were refused after another closure had
  /// taken their task's place), runs those too.
  void run_next() noexcept {
    bool first = true;  // `active_` counts this call from its first task to its return
    for (;;) {
      std::function<void(fair_slot&)> task;
      std::shared_ptr<void> keep;
      void* who = nullptr;
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (ring_.empty()) {
          if (!first) --active_;
          return;
        }
        if (first) ++active_;
        first = false;
        auto pick = ring_.begin();
        for (auto r = std::next(ring_.begin()); r != ring_.end(); ++r) {
          if ((*r)->second.running < (*pick)->second.running) pick = r;
        }
        auto* entry = *pick;
        principal_queue& q = entry->second;
        task = std::move(q.tasks.front().task);
        keep = std::move(q.tasks.front().keep);
        q.tasks.pop_front();
        ++q.running;
        // Still has work: to the end of the ring (a rotation, no allocation); else off the ring.
        if (q.tasks.empty()) {
          ring_.erase(pick);
        } else {
          std::rotate(pick, std::next(pick), ring_.end());
        }
        who = entry;
      }
      {
        fair_slot slot{this, who};  // freed by the task when it answers, else here
        try {
          if (task) task(slot);
        } catch (...) {  // NOLINT(bugprone-empty-catch): a task contains its own faults
        }
      }
      task = nullptr;
      keep.reset();
      bool more = false;
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (orphans_ != 0 && !ring_.empty()) {
          --orphans_;
          more = true;
        } else {
          --active_;
        }
      }
      if (!more) return;
    }
  }

  /// Dispatches queued or running for `principal` (tests, diagnostics).
  [[nodiscard]] std::size_t in_flight(std::string_view principal) const {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto it = by_principal_.find(principal);
    return it == by_principal_.end() ? 0 : it->second.in_flight();
  }

 private:
  friend class fair_slot;
  struct queued {
    std::uint64_t seq;
    std::function<void(fair_slot&)> task;
    std::shared_ptr<void> keep;  // alive until the task has run
  };
  struct principal_queue {
    std::deque<queued> tasks;  // FIFO
    std::size_t running = 0;
    [[nodiscard]] std::size_t in_flight() const noexcept { return tasks.size() + running; }
  };
  struct key_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  using map_type = std::unordered_map<std::string, principal_queue, key_hash, std::equal_to<>>;

  enum class took : std::uint8_t { back, orphan, run_here };

  // A running task of the principal at map node `entry` freed its slot.
  void finish(void* entry) noexcept {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto* node = static_cast<map_type::value_type*>(entry);
    principal_queue& q = node->second;
    --q.running;
    if (q.in_flight() == 0) forget_if_idle(node);
  }

  // Under `mutex_`: `node` has nothing queued or running (so it is off the ring). Kept while the
  // map is small, for the principal's next request (no lookup then); else found and erased.
  void forget_if_idle(map_type::value_type* node) noexcept {
    if (by_principal_.size() > kept_idle_principals) {
      const auto it = by_principal_.find(std::string_view{node->first});
      if (it != by_principal_.end()) by_principal_.erase(it);
    }
  }

  // The executor refused the closure of task `seq`: the task is taken back when it is still
  // queued (`back`). Otherwise another closure already started it, and one queued task now has
  // no closure of its own: the next active closure to finish runs it (`orphan`), or, with none
  // active, the caller runs it (`run_here`).
  took take_back(std::string_view principal, std::uint64_t seq) noexcept {
    std::shared_ptr<void> dying;  // a taken-back task's `keep`, released after the unlock
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto it = by_principal_.find(principal);
    if (it != by_principal_.end()) {
      principal_queue& q = it->second;
      for (auto t = q.tasks.begin(); t != q.tasks.end(); ++t) {
        if (t->seq != seq) continue;
        dying = std::move(t->keep);
        q.tasks.erase(t);
        if (q.tasks.empty()) std::erase(ring_, &*it);
        if (q.in_flight() == 0) forget_if_idle(&*it);
        return took::back;
      }
    }
    if (ring_.empty()) return took::orphan;  // nothing left without a closure after all
    if (active_ == 0) return took::run_here;
    ++orphans_;
    return took::orphan;
  }

  const std::size_t cap_;
  mutable std::mutex mutex_;
  // Guarded by `mutex_`. Map nodes are stable: the ring points at them; an entry is erased only
  // when it is off the ring (no queued task) and nothing of it runs.
  map_type by_principal_;
  // Principals with queued tasks, in turn order. A vector: its capacity stays, so turning the ring
  // allocates nothing; it holds at most the principals with queued tasks.
  std::vector<map_type::value_type*> ring_;
  std::uint64_t next_seq_ = 0;
  std::size_t orphans_ = 0;  // queued tasks whose submission the executor refused too late
  std::size_t active_ = 0;   // closures inside run_next
};

inline void fair_slot::release() noexcept {
  if (fair_dispatch* o = std::exchange(owner_, nullptr)) o->finish(entry_);
}

}  // namespace detail

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_FAIR_DISPATCH_IPP
