// SPDX-License-Identifier: Apache-2.0
// A small executor for tests: `n` threads over one FIFO of closures, optionally refusing every
// k-th submission, like a bounded handler pool that is full now and then.
#ifndef MCPCORE_TESTS_SUPPORT_TASK_POOL_HPP
#define MCPCORE_TESTS_SUPPORT_TASK_POOL_HPP

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace test_support {

class task_pool {
 public:
  /// `refuse_every`: refuse every this-many-th submission (0: never).
  explicit task_pool(std::size_t n, std::uint64_t refuse_every = 0) : refuse_every_(refuse_every) {
    for (std::size_t i = 0; i < n; ++i) threads_.emplace_back([this] { work(); });
  }
  ~task_pool() { stop(); }
  task_pool(const task_pool&) = delete;
  task_pool& operator=(const task_pool&) = delete;
  task_pool(task_pool&&) = delete;
  task_pool& operator=(task_pool&&) = delete;

  /// Queues `task`; false (running nothing) after `stop` or when this submission is refused.
  bool submit(std::function<void()> task) {
    {
      const std::lock_guard lock{mu_};
      if (stopping_) return false;
      if (refuse_every_ != 0 && ++submitted_ % refuse_every_ == 0) return false;
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
    return true;
  }
  /// The pool as an `http_executor`-shaped callable.
  std::function<bool(std::function<void()>)> executor() {
    return [this](std::function<void()> task) { return submit(std::move(task)); };
  }
  /// Runs what is queued, then joins the threads. Idempotent.
  void stop() {
    {
      const std::lock_guard lock{mu_};
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock{mu_};
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  const std::uint64_t refuse_every_;
  std::uint64_t submitted_ = 0;  // guarded by mu_
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace test_support

#endif  // MCPCORE_TESTS_SUPPORT_TASK_POOL_HPP
