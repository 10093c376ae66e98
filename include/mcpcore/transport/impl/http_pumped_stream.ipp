// SPDX-License-Identifier: Apache-2.0
// What the GET and the POST streams of the HTTP endpoint share: the transport wakers (one slot
// pool per endpoint) and `http_pumped_stream`, the one `http_stream` over a pump (pull, wake,
// close, heartbeat and re-validation ticks). docs/http.md describes the streams.
#ifndef MCPCORE_IMPL_HTTP_PUMPED_STREAM_IPP
#define MCPCORE_IMPL_HTTP_PUMPED_STREAM_IPP

#include <mcpcore/transport/http_endpoint.hpp>

#include <mcpcore/session/session_stream.hpp>
#include <mcpcore/session/stream_pump.hpp>
#include <mcpcore/session/stream_types.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

// ---- wakers ------------------------------------------------------------------------------------

/// One transport waker, reachable from a `stream_sink` through a stable address. A sink calls its
/// waker after releasing its own lock, so a waker may still be running when the stream that set it
/// goes away: slots are therefore never freed while the endpoint lives, only reused (a late wake of
/// a reused slot is a spurious wake, which every transport tolerates).
struct http_wake_slot {
  std::mutex mutex;  // a leaf
  std::shared_ptr<const std::function<void()>> fn;
};

class http_wake_slots {
 public:
  http_wake_slots() = default;
  http_wake_slots(const http_wake_slots&) = delete;
  http_wake_slots& operator=(const http_wake_slots&) = delete;

  /// A slot calling `fn`. @throws std::bad_alloc (nothing changed)
  http_wake_slot* acquire(std::function<void()> fn) {
    auto shared = std::make_shared<const std::function<void()>>(std::move(fn));
    http_wake_slot* s = nullptr;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (!free_.empty()) {
        s = free_.back();
        free_.pop_back();
      } else {
        slots_.emplace_back();
        try {
          free_.reserve(slots_.size());  // release() never allocates
        } catch (...) {
          slots_.pop_back();
          throw;
        }
        s = &slots_.back();
      }
    }
    const std::lock_guard<std::mutex> lock(s->mutex);
    s->fn = std::move(shared);
    return s;
  }
  /// Clears the slot's waker and makes it reusable.
  void release(http_wake_slot* s) noexcept {
    if (s == nullptr) return;
    std::shared_ptr<const std::function<void()>> old;  // destroyed after unlocking
    {
      const std::lock_guard<std::mutex> lock(s->mutex);
      old = std::move(s->fn);
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(s);  // capacity reserved at acquire
  }

 private:
  std::mutex mutex_;  // a leaf
  std::deque<http_wake_slot> slots_;  // a deque: slot addresses stay stable as it grows
  std::vector<http_wake_slot*> free_;
};

/// The `stream_sink` waker: calls the slot's function, under no mcpcore lock.
inline void http_wake(void* context) noexcept {
  auto* s = static_cast<http_wake_slot*>(context);
  std::shared_ptr<const std::function<void()>> fn;
  {
    const std::lock_guard<std::mutex> lock(s->mutex);
    fn = s->fn;
  }
  if (fn && *fn) {
    try {
      (*fn)();
    } catch (...) {  // NOLINT(bugprone-empty-catch): a throwing waker loses one wake; wait_time bounds it
    }
  }
}

// ---- the pumped stream ---------------------------------------------------------------------------

/// A held-open response over a pump (`get_pump` or `post_pump`). What differs between the GET and
/// the POST stream is in `Source`:
///
///     using pump_type = ...;                                       // get_pump or post_pump
///     credential_verdict revalidate() const noexcept;              // the tick's credential check
///     bool session_alive() const noexcept;                         // the tick's session check
///     bool primed() const noexcept;                                // false: a pull is due at once
///     void prelude(std::string& out) noexcept;                     // bytes before the pump's pass
///     void pass(pump_type&, time_point now, std::string& out) noexcept;
///     void opened(const std::shared_ptr<stream_sink>& wake);       // after construction (may throw)
///     void closing() noexcept;                                     // first thing of the destructor
///
/// The wake sink is the one the pump's frames arrive on (the GET sink, or the call's wake sink;
/// null for a POST whose call has none, then the stream is pulled on `wait_time` alone).
template <class Source>
class http_pumped_stream final : public http_stream {
 public:
  using pump_type = typename Source::pump_type;

  /// The pump is constructed from `pump_args`; `source` is declared before it, so it outlives it.
  template <class... PumpArgs>
  http_pumped_stream(http_wake_slots& slots, Source source, std::shared_ptr<stream_sink> wake,
                     PumpArgs&&... pump_args)
      : slots_(slots), source_(std::move(source)), wake_(std::move(wake)),
        pump_(std::forward<PumpArgs>(pump_args)...) {
    source_.opened(wake_);
  }
  ~http_pumped_stream() override {
    source_.closing();
    if (slot_ != nullptr) {
      wake_->set_waker(nullptr, nullptr);
      slots_.release(slot_);
    }
    pump_.release();  // also run by the pump's destructor; here so that it precedes the source's end
  }
  http_pumped_stream(const http_pumped_stream&) = delete;
  http_pumped_stream& operator=(const http_pumped_stream&) = delete;

  void on_ready(std::function<void()> waker) override {
    if (!wake_) return;
    http_wake_slot* s = slots_.acquire(std::move(waker));
    if (slot_ != nullptr) {
      wake_->set_waker(nullptr, nullptr);
      slots_.release(slot_);
    }
    slot_ = s;
    wake_->set_waker(&http_wake, slot_);
  }

  void pull(std::chrono::steady_clock::time_point now, std::string& out) noexcept override {
    if (pump_.finished()) return;
    source_.prelude(out);
    if (pump_.tick_due(now)) pump_.tick(now, source_.revalidate(), source_.session_alive());
    source_.pass(pump_, now, out);
  }

  [[nodiscard]] std::chrono::milliseconds wait_time(std::chrono::steady_clock::time_point now) const noexcept override {
    if (pump_.finished() || !source_.primed()) return std::chrono::milliseconds{0};
    if (wake_ && wake_->ready()) return std::chrono::milliseconds{0};
    return pump_.wait_time(now);
  }
  void written() noexcept override { pump_.written(); }
  void write_failed() noexcept override { pump_.write_failed(); }
  [[nodiscard]] bool finished() const noexcept override { return pump_.finished(); }
  void close(close_reason reason) noexcept override {
    if (wake_) (void)wake_->close(reason);
  }

 private:
  http_wake_slots& slots_;
  Source source_;
  std::shared_ptr<stream_sink> wake_;
  pump_type pump_;
  http_wake_slot* slot_ = nullptr;  // the transport's waker, installed on `wake_`
};

}  // namespace detail

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_HTTP_PUMPED_STREAM_IPP
