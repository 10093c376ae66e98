// SPDX-License-Identifier: Apache-2.0
// The blocking-server adapter: pull loop, bounded executor, tick thread, activity counts.
#ifndef MCPCORE_IMPL_BLOCKING_ADAPTER_IPP
#define MCPCORE_IMPL_BLOCKING_ADAPTER_IPP

#include <mcpcore/governance/policy.hpp>
#include <mcpcore/session/stream_types.hpp>
#include <mcpcore/transport/blocking_adapter.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/wire/http.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

// ---------------------------------------------------------------------------------------------
// The pull loop (docs/http.md#mounting-on-a-blocking-server)

namespace detail {

/// The wait between two pulls: the waker sets `ready` and notifies.
struct blocking_wake {
  std::mutex mu;
  std::condition_variable cv;
  bool ready = false;

  void wake() {
    {
      std::lock_guard lock(mu);
      ready = true;
    }
    cv.notify_one();
  }
};

}  // namespace detail

MCPCORE_DECL bool pump_stream(http_stream& stream, const blocking_write& write, std::chrono::milliseconds min_wait) {
  using steady = std::chrono::steady_clock;
  auto wake = std::make_shared<detail::blocking_wake>();
  // The waker may run on any thread after this function returned: it holds the wait state.
  stream.on_ready([wake] { wake->wake(); });
  for (;;) {
    const auto now = steady::now();
    if (!stream.finished()) {
      std::string bytes;
      stream.pull(now, bytes);
      if (!bytes.empty()) {
        bool ok = false;
        try {
          ok = write(bytes);
        } catch (...) {  // NOLINT(bugprone-empty-catch): a throwing write is a failed write
          ok = false;
        }
        if (!ok) {
          stream.write_failed();
          return false;
        }
        stream.written();
        continue;
      }
    }
    if (stream.finished()) {
      return true;
    }
    const auto wait = std::max(stream.wait_time(now), min_wait);
    std::unique_lock lock(wake->mu);
    wake->cv.wait_for(lock, wait, [&] { return wake->ready; });
    wake->ready = false;  // a wake that came before the wait is kept by the flag, not lost
  }
}

// ---------------------------------------------------------------------------------------------
// The bounded executor

struct blocking_executor::state {
  explicit state(std::size_t cap) : queue_cap(std::max<std::size_t>(cap, 1)) {}

  bool submit(std::function<void()> task) {
    if (!task) {
      return false;
    }
    {
      std::lock_guard lock(mu);
      if (stopping || queue.size() >= queue_cap) {
        return false;
      }
      queue.push_back(std::move(task));
    }
    cv.notify_one();
    return true;
  }

  void run() noexcept {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [this] { return stopping || !queue.empty(); });
        if (queue.empty()) {
          return;
        }
        task = std::move(queue.front());
        queue.pop_front();
        ++busy;
      }
      try {
        task();
      } catch (...) {  // NOLINT(bugprone-empty-catch): a task's exception must not end the thread
      }
      task = nullptr;  // what the task holds is released before it stops counting as running
      std::lock_guard lock(mu);
      --busy;
    }
  }

  void stop() noexcept {
    std::vector<std::thread> joining;
    {
      std::lock_guard lock(mu);
      stopping = true;
      joining.swap(threads);
    }
    cv.notify_all();
    for (auto& t : joining) {
      if (t.get_id() == std::this_thread::get_id()) {
        t.detach();  // stopped from one of its own tasks: this thread ends once the queue is empty
      } else {
        t.join();
      }
    }
  }

  const std::size_t queue_cap;
  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> queue;
  std::vector<std::thread> threads;
  std::size_t busy = 0;
  bool stopping = false;  // submit refuses; each thread ends once the queue is empty
};

MCPCORE_DECL blocking_executor::blocking_executor(blocking_executor_options options)
    : state_(std::make_shared<state>(options.queue_cap)) {
  const auto n = std::max<std::size_t>(options.threads, 1);
  try {
    std::lock_guard lock(state_->mu);
    for (std::size_t i = 0; i < n; ++i) {
      state_->threads.emplace_back([s = state_.get()] { s->run(); });
    }
  } catch (...) {
    state_->stop();
    throw;
  }
}

MCPCORE_DECL blocking_executor::~blocking_executor() { stop(); }

MCPCORE_DECL bool blocking_executor::submit(std::function<void()> task) { return state_->submit(std::move(task)); }

MCPCORE_DECL http_executor blocking_executor::executor() const {
  return [s = state_](std::function<void()> task) { return s->submit(std::move(task)); };
}

MCPCORE_DECL void blocking_executor::stop() noexcept { state_->stop(); }

MCPCORE_DECL std::size_t blocking_executor::queued() const noexcept {
  std::lock_guard lock(state_->mu);
  return state_->queue.size();
}

MCPCORE_DECL std::size_t blocking_executor::running() const noexcept {
  std::lock_guard lock(state_->mu);
  return state_->busy;
}

// ---------------------------------------------------------------------------------------------
// The adapter

namespace detail {

class blocking_counted_stream;

/// What the adapter's streams and requests share with it (they may outlive it).
struct blocking_activity {
  mutable std::mutex mu;
  mutable std::condition_variable cv;  // a request or a stream ended
  std::size_t requests = 0;
  std::size_t tasks = 0;  // dispatch tasks queued or running on the adapter's executor
  // Streams handed out and not yet destroyed (the endpoint's stream inside included).
  std::size_t live_streams = 0;
  // The streams the shutdown closes: a stream leaves the set before its endpoint stream is
  // released, and stops counting in `live_streams` after.
  std::unordered_set<blocking_counted_stream*> streams;
  bool shutting_down = false;

  [[nodiscard]] bool idle() const noexcept { return requests == 0 && tasks == 0 && live_streams == 0; }

  void request_ended() {
    {
      std::lock_guard lock(mu);
      --requests;
    }
    cv.notify_all();
  }

  void task_ended() {
    {
      std::lock_guard lock(mu);
      --tasks;
    }
    cv.notify_all();
  }
};

/// The adapter's executor as the endpoint sees it: `exec`, counting each task it takes as active
/// until the task (and what it holds) is gone.
inline http_executor counting_executor(std::shared_ptr<blocking_activity> activity, http_executor exec) {
  return [activity = std::move(activity), exec = std::move(exec)](std::function<void()> task) {
    {
      std::lock_guard lock(activity->mu);
      ++activity->tasks;
    }
    auto counted = [activity, task = std::move(task)]() mutable {
      struct end {
        blocking_activity& a;
        std::function<void()>& t;
        end(blocking_activity& act, std::function<void()>& tk) noexcept : a(act), t(tk) {}
        end(const end&) = delete;
        end& operator=(const end&) = delete;
        ~end() {
          t = nullptr;  // what the task holds is released before it stops counting
          a.task_ended();
        }
      } guard{*activity, task};
      task();
    };
    bool taken = false;
    try {
      taken = exec(std::move(counted));
    } catch (...) {  // NOLINT(bugprone-empty-catch): a throwing executor took nothing
      taken = false;
    }
    if (!taken) {
      activity->task_ended();
    }
    return taken;
  };
}

/// A stream of the endpoint, counted as active from `handle` until destroyed; the adapter's
/// shutdown closes it and wakes its pull loop.
class blocking_counted_stream final : public http_stream {
 public:
  blocking_counted_stream(std::unique_ptr<http_stream> inner, std::shared_ptr<blocking_activity> activity)
      : inner_(std::move(inner)), activity_(std::move(activity)) {}
  blocking_counted_stream(const blocking_counted_stream&) = delete;
  blocking_counted_stream& operator=(const blocking_counted_stream&) = delete;
  ~blocking_counted_stream() override {
    if (!enrolled_) {
      return;
    }
    // Out of the shutdown's reach first (it closes the streams of the set under the lock), then
    // the endpoint's stream is released, and only then does it stop counting: once the count is
    // zero the endpoint may be destroyed.
    {
      std::lock_guard lock(activity_->mu);
      activity_->streams.erase(this);
    }
    inner_.reset();
    {
      std::lock_guard lock(activity_->mu);
      --activity_->live_streams;
    }
    activity_->cv.notify_all();
  }

  /// Registers with the adapter; closes at once when the shutdown began already.
  void enroll() {
    bool closing = false;
    {
      std::lock_guard lock(activity_->mu);
      activity_->streams.insert(this);
      ++activity_->live_streams;
      enrolled_ = true;
      closing = activity_->shutting_down;
    }
    if (closing) {
      inner_->close(close_reason::session_terminated);
    }
  }

  void on_ready(std::function<void()> waker) override {
    auto shared = std::make_shared<std::function<void()>>(std::move(waker));
    {
      std::lock_guard lock(waker_mu_);
      waker_ = shared;
    }
    inner_->on_ready([shared] { (*shared)(); });
  }
  void pull(std::chrono::steady_clock::time_point now, std::string& out) noexcept override { inner_->pull(now, out); }
  [[nodiscard]] std::chrono::milliseconds wait_time(std::chrono::steady_clock::time_point now) const noexcept override {
    return inner_->wait_time(now);
  }
  void written() noexcept override { inner_->written(); }
  void write_failed() noexcept override { inner_->write_failed(); }
  [[nodiscard]] bool finished() const noexcept override { return inner_->finished(); }
  // Any thread (the shutdown's, under the activity lock): the pull loop is woken so that it
  // writes the close notification now rather than at its next timeout.
  void close(close_reason reason) noexcept override {
    inner_->close(reason);
    std::shared_ptr<std::function<void()>> waker;
    {
      std::lock_guard lock(waker_mu_);
      waker = waker_;
    }
    if (waker && *waker) {
      try {
        (*waker)();
      } catch (...) {  // NOLINT(bugprone-empty-catch): a waker must not throw; nothing to undo
      }
    }
  }

 private:
  std::unique_ptr<http_stream> inner_;
  std::shared_ptr<blocking_activity> activity_;
  bool enrolled_ = false;  // counted (set under the activity's lock, by `enroll`)
  std::mutex waker_mu_;
  std::shared_ptr<std::function<void()>> waker_;
};

}  // namespace detail

struct blocking_adapter::impl {
  impl(http_endpoint& ep, blocking_adapter_options o)
      : endpoint(ep), options(o), activity(std::make_shared<detail::blocking_activity>()), pool(o.executor) {}

  void tick_loop() noexcept {
    std::unique_lock lock(tick_mu);
    for (;;) {
      if (tick_cv.wait_for(lock, options.tick_interval, [this] { return tick_stop; })) {
        return;
      }
      lock.unlock();
      endpoint.tick();
      lock.lock();
    }
  }

  void stop_ticker() noexcept {
    {
      std::lock_guard lock(tick_mu);
      tick_stop = true;
    }
    tick_cv.notify_all();
    if (ticker.joinable()) {
      ticker.join();
    }
  }

  http_endpoint& endpoint;
  const blocking_adapter_options options;
  std::shared_ptr<detail::blocking_activity> activity;
  blocking_executor pool;
  http_executor_binding binding;
  std::mutex tick_mu;
  std::condition_variable tick_cv;
  bool tick_stop = false;
  std::thread ticker;
};

MCPCORE_DECL blocking_adapter::blocking_adapter(http_endpoint& endpoint, blocking_adapter_options options)
    : impl_(new impl(endpoint, options)) {
  try {
    impl_->binding = endpoint.bind_executor(detail::counting_executor(impl_->activity, impl_->pool.executor()));
    if (options.tick_interval.count() > 0) {
      impl_->ticker = std::thread([i = impl_] { i->tick_loop(); });
    }
  } catch (...) {
    impl_->binding.release();
    delete impl_;  // joins the executor's threads
    throw;
  }
}

MCPCORE_DECL blocking_adapter::~blocking_adapter() {
  impl_->stop_ticker();
  impl_->binding.release();  // no new task reaches the pool; the queued ones still run
  impl_->pool.stop();
  delete impl_;
}

MCPCORE_DECL http_reply blocking_adapter::handle_with(const std::function<void(http_completion)>& start) {
  {
    std::lock_guard lock(impl_->activity->mu);
    ++impl_->activity->requests;
  }
  struct ended {
    detail::blocking_activity& a;
    explicit ended(detail::blocking_activity& act) noexcept : a(act) {}
    ended(const ended&) = delete;
    ended& operator=(const ended&) = delete;
    ~ended() { a.request_ended(); }
  } guard{*impl_->activity};
  // cpp-httplib-style handlers answer synchronously: the completion may come from the executor.
  auto promise = std::make_shared<std::promise<http_reply>>();
  auto answer = promise->get_future();
  start([promise](http_reply r) { promise->set_value(std::move(r)); });
  http_reply reply = answer.get();
  if (reply.stream) {
    auto counted = std::make_unique<detail::blocking_counted_stream>(std::move(reply.stream), impl_->activity);
    counted->enroll();
    reply.stream = std::move(counted);
  }
  return reply;
}

MCPCORE_DECL http_reply blocking_adapter::handle(const http_request_view& request) {
  auto& ep = impl_->endpoint;
  return handle_with([&ep, &request](http_completion done) { ep.handle(request, std::move(done)); });
}

MCPCORE_DECL http_reply blocking_adapter::handle(const http_request_view& request, principal caller) {
  auto& ep = impl_->endpoint;
  return handle_with([&ep, &request, &caller](http_completion done) { ep.handle(request, std::move(caller), std::move(done)); });
}

MCPCORE_DECL bool blocking_adapter::serve(std::unique_ptr<http_stream> stream, const blocking_write& write) {
  if (!stream) {
    return true;
  }
  const bool complete = pump_stream(*stream, write, impl_->options.min_stream_wait);
  stream.reset();
  return complete;
}

MCPCORE_DECL std::size_t blocking_adapter::active_requests() const noexcept {
  std::lock_guard lock(impl_->activity->mu);
  return impl_->activity->requests;
}

MCPCORE_DECL std::size_t blocking_adapter::active_streams() const noexcept {
  std::lock_guard lock(impl_->activity->mu);
  return impl_->activity->live_streams;
}

MCPCORE_DECL std::size_t blocking_adapter::active_tasks() const noexcept {
  std::lock_guard lock(impl_->activity->mu);
  return impl_->activity->tasks;
}

MCPCORE_DECL bool blocking_adapter::wait_idle(std::chrono::milliseconds timeout) const {
  const auto& a = *impl_->activity;
  std::unique_lock lock(a.mu);
  return a.cv.wait_for(lock, timeout, [&] { return a.idle(); });
}

MCPCORE_DECL void blocking_adapter::begin_shutdown() noexcept {
  impl_->endpoint.begin_shutdown();
  std::lock_guard lock(impl_->activity->mu);
  impl_->activity->shutting_down = true;
  for (auto* s : impl_->activity->streams) {
    s->close(close_reason::session_terminated);
  }
}

MCPCORE_DECL bool blocking_adapter::shutdown(std::chrono::milliseconds drain) noexcept {
  begin_shutdown();
  if (wait_idle(drain)) {
    return true;
  }
  impl_->endpoint.cancel_in_flight();
  return wait_idle(drain);
}

MCPCORE_DECL http_endpoint& blocking_adapter::endpoint() noexcept { return impl_->endpoint; }

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_BLOCKING_ADAPTER_IPP
