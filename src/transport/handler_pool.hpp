// SPDX-License-Identifier: Apache-2.0
// The Asio server's bounded handler executor, which wakes as few threads as it can (internal to
// mcpcore::transport; docs/transport.md#threads).
#ifndef MCPCORE_TRANSPORT_HANDLER_POOL_HPP
#define MCPCORE_TRANSPORT_HANDLER_POOL_HPP

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mcpcore/detail/config.hpp>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace transport::detail {

/// A fixed set of threads taking tasks from a bounded FIFO queue. `submit` refuses (returns
/// false) when the queue holds `cap` tasks or after `stop`; `stop` runs every queued task, then
/// joins.
///
/// Waking a thread costs more than a short task, so the pool wakes one only when it must:
/// - A task wakes a sleeping thread only while fewer than `eager` threads are awake and more
///   tasks wait than the awake threads not running one (with none awake, always). A thread that
///   has run its task for longer than `grace` counts as held, not awake: it will not come back for
///   the queue soon. Otherwise it queues, and
///   the awake threads take it as they come back for the queue. So a stream of short calls keeps
///   one warm thread (the one that slept last is woken first) instead of handing each call to
///   another sleeping thread.
/// - While the pool is busy, one sleeping thread (the watcher) waits with a timeout. A task that
///   has waited `grace` without an awake thread coming back for it is taken by the watcher,
///   which then runs tasks like the others, and another sleeping thread becomes the watcher. So a
///   call that waits (a tool on a database, a task's detached work) holds back the calls queued
///   behind it by about `grace` for each thread it holds, never longer. The watcher goes back to
///   an untimed sleep after a whole `grace` with nothing submitted, nothing queued and no thread
///   awake.
class handler_pool {
 public:
  using clock = std::chrono::steady_clock;

  handler_pool(std::size_t cap, clock::duration grace, std::size_t eager)
      : cap_(std::max<std::size_t>(cap, 1)),
        grace_(std::max(grace, clock::duration{1})),
        eager_(std::max<std::size_t>(eager, 1)) {}
  handler_pool(const handler_pool&) = delete;
  handler_pool& operator=(const handler_pool&) = delete;
  handler_pool(handler_pool&&) = delete;
  handler_pool& operator=(handler_pool&&) = delete;
  ~handler_pool() { stop(); }

  void start(std::size_t threads) {
    const std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < threads; ++i) {
      sleepers_.push_back(std::make_unique<sleeper>());
      ++awake_;  // a new thread looks at the queue before it first sleeps
      threads_.emplace_back([this, self = sleepers_.back().get()] { run(*self); });
    }
  }

  bool submit(std::function<void()> task) {
    if (!task) {
      return false;
    }
    sleeper* wake = nullptr;
    sleeper* watch = nullptr;
    {
      const std::lock_guard lock(mu_);
      if (stopping_ || queue_.size() >= cap_) {
        return false;
      }
      const clock::time_point now = clock::now();
      queue_.push_back({std::move(task), now});
      ++submitted_;
      const std::size_t held = running_ == 0 ? 0 : held_at(now);
      const std::size_t awake = awake_ - held;
      if (awake == 0 || (awake < eager_ && queue_.size() > awake - (running_ - held))) {
        wake = take_sleeper();
      }
      if (wake != nullptr) {
        wake->call = role::work;
        ++awake_;
        ++wakes_;
        watch = appoint_watcher();
      }
    }
    // The sleepers live as long as the pool: notifying after the unlock is safe.
    if (wake != nullptr) {
      wake->cv.notify_one();
    }
    if (watch != nullptr) {
      watch->cv.notify_one();
    }
    return true;
  }

  // Refuses new tasks, lets the threads finish every queued one, joins them.
  void stop() noexcept {
    std::vector<std::thread> threads;
    {
      const std::lock_guard lock(mu_);
      stopping_ = true;
      threads.swap(threads_);
      for (const auto& s : sleepers_) {
        s->cv.notify_all();
      }
    }
    for (auto& t : threads) {
      if (t.joinable() && t.get_id() != std::this_thread::get_id()) {
        t.join();
      } else if (t.joinable()) {
        t.detach();
      }
    }
  }

  [[nodiscard]] bool owns_current_thread() const {
    const std::lock_guard lock(mu_);
    return std::any_of(threads_.begin(), threads_.end(),
                       [](const std::thread& t) { return t.get_id() == std::this_thread::get_id(); });
  }

  /// Times a sleeping thread was woken to run tasks: by `submit`, or as the watcher taking a task
  /// that waited `grace` (`overdue_takes`).
  [[nodiscard]] std::uint64_t wakes() const {
    const std::lock_guard lock(mu_);
    return wakes_ + overdue_;
  }
  /// Threads running a task or woken to (0: every thread sleeps).
  [[nodiscard]] std::size_t awake() const {
    const std::lock_guard lock(mu_);
    return awake_;
  }
  /// Times the watcher took a task that had waited `grace` for an awake thread.
  [[nodiscard]] std::uint64_t overdue_takes() const {
    const std::lock_guard lock(mu_);
    return overdue_;
  }

 private:
  enum class role : std::uint8_t { none, work };
  struct sleeper {
    std::condition_variable cv;
    role call = role::none;  // set by the thread that takes this sleeper out of `idle_` to run tasks
    clock::time_point since{};  // when its running task started; the epoch while it runs none
  };

  // Under the lock: the threads running a task that started more than `grace` before `now`.
  [[nodiscard]] std::size_t held_at(clock::time_point now) const {
    std::size_t held = 0;
    for (const auto& s : sleepers_) {
      if (s->since != clock::time_point{} && now - s->since > grace_) {
        ++held;
      }
    }
    return held;
  }
  struct queued {
    std::function<void()> task;
    clock::time_point at;  // when it was submitted
  };

  // Under the lock: the sleeper to wake for work (the one that slept last; the watcher when it is
  // the only one), taken out of its place; nullptr when every thread is awake.
  sleeper* take_sleeper() {
    if (!idle_.empty()) {
      sleeper* s = idle_.back();
      idle_.pop_back();
      return s;
    }
    return std::exchange(watcher_, nullptr);
  }

  // Under the lock, while some thread is awake: makes the longest-sleeping thread the watcher when
  // there is none; returns it (to be notified), else nullptr.
  sleeper* appoint_watcher() {
    if (watcher_ != nullptr || idle_.empty() || stopping_) {
      return nullptr;
    }
    watcher_ = idle_.front();
    idle_.pop_front();
    return watcher_;
  }

  void run(sleeper& self) noexcept {
    std::unique_lock lock(mu_);
    for (;;) {
      if (!queue_.empty()) {
        std::function<void()> task = std::move(queue_.front().task);
        queue_.pop_front();
        ++running_;
        self.since = clock::now();
        lock.unlock();
        try {
          task();
        } catch (...) {  // NOLINT(bugprone-empty-catch): a task's exception must not end the thread
        }
        task = nullptr;  // the task's captures go before the lock is taken again
        lock.lock();
        --running_;
        self.since = clock::time_point{};
        continue;
      }
      --awake_;
      if (stopping_) {
        return;
      }
      sleep(self, lock);
    }
  }

  // Under the lock, with nothing queued and `self` no longer counted awake: sleeps until woken
  // for work, a task overdue (as the watcher) or stop; returns counted awake again.
  void sleep(sleeper& self, std::unique_lock<std::mutex>& lock) {
    if (watcher_ == nullptr) {
      watcher_ = &self;
    } else {
      idle_.push_back(&self);
    }
    for (;;) {
      if (self.call == role::work) {  // taken out of its place and counted awake by the waker
        self.call = role::none;
        return;
      }
      if (stopping_) {
        leave(self);
        ++awake_;
        return;
      }
      if (watcher_ != &self) {
        self.cv.wait(lock);
        continue;
      }
      const std::uint64_t seen = submitted_;
      const clock::time_point due = queue_.empty() ? clock::now() + grace_ : queue_.front().at + grace_;
      if (self.cv.wait_until(lock, due) != std::cv_status::timeout || self.call == role::work || stopping_ ||
          watcher_ != &self) {
        continue;
      }
      if (!queue_.empty() && queue_.front().at + grace_ <= clock::now()) {
        // Every awake thread is held longer than the grace: this one takes the queue on.
        watcher_ = nullptr;
        ++awake_;
        ++overdue_;
        sleeper* next = appoint_watcher();
        if (next != nullptr) {
          next->cv.notify_one();
        }
        return;
      }
      if (queue_.empty() && awake_ == 0 && submitted_ == seen) {
        // A whole grace with nothing to watch: sleep without a timeout, woken last.
        watcher_ = nullptr;
        idle_.push_front(&self);
      }
    }
  }

  // Under the lock: `self` leaves its sleeping place.
  void leave(sleeper& self) {
    if (watcher_ == &self) {
      watcher_ = nullptr;
    }
    std::erase(idle_, &self);
  }

  const std::size_t cap_;
  const clock::duration grace_;
  const std::size_t eager_;
  mutable std::mutex mu_;
  std::deque<queued> queue_;
  std::vector<std::unique_ptr<sleeper>> sleepers_;  // one per thread, alive as long as the pool
  std::deque<sleeper*> idle_;  // sleeping without a timeout; the one that slept last at the back
  sleeper* watcher_ = nullptr;  // sleeping with a timeout while the pool is busy
  std::size_t awake_ = 0;       // threads running tasks, or woken to and not yet asleep again
  std::size_t running_ = 0;     // of them, those inside a task
  std::uint64_t submitted_ = 0;
  std::uint64_t wakes_ = 0;
  std::uint64_t overdue_ = 0;
  std::vector<std::thread> threads_;
  bool stopping_ = false;  // set by stop(): submit refuses, each thread ends once the queue is empty
};

}  // namespace transport::detail

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_TRANSPORT_HANDLER_POOL_HPP
