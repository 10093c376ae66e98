// SPDX-License-Identifier: Apache-2.0
// The clock_source plug-in point: steady and wall time, the system clock and a manual clock for tests.
#ifndef MCPCORE_CLOCK_HPP
#define MCPCORE_CLOCK_HPP

#include <mcpcore/detail/config.hpp>

#include <atomic>
#include <chrono>
#include <concepts>
#include <utility>

MCPCORE_BEGIN_NAMESPACE

/// Where mcpcore reads the time (docs/plugins.md `clock`).
///
/// Two clocks, read through a `const` reference:
/// - `steady_now()` measures intervals: deadlines, idle TTLs, stream caps;
/// - `system_now()` stamps things people read (audit rows, correlation ids, RFC 3339 times) and
///   things that must survive a restart (approval tickets and their lifetimes).
///
/// Semantic requirements (not checked by the compiler):
/// 1. `steady_now()` never decreases between two calls made on the same object, from any threads.
/// 2. `system_now()` is the wall-clock time as UTC; it may jump (NTP, an operator, a test).
/// 3. Both are thread-safe: they may be called concurrently with each other and with any
///    mutator the model has (e.g. `manual_clock::advance`).
/// 4. Both are cheap (called on hot paths) and never block.
///
/// The concept does not check requirements 1-4, nor that the two clocks agree on how fast
/// time passes.
///
/// @see system_clock_source, manual_clock, docs/plugins.md
template <class C>
concept clock_source = requires(const C& c) {
  // Monotonic time, for intervals; must not throw.
  { c.steady_now() } noexcept -> std::same_as<std::chrono::steady_clock::time_point>;
  // Wall-clock (UTC) time, for stamps; must not throw.
  { c.system_now() } noexcept -> std::same_as<std::chrono::system_clock::time_point>;
};

/// The process's clocks: `std::chrono::steady_clock` and `std::chrono::system_clock`.
///
/// Stateless; thread-safe.
struct system_clock_source {
  /// `std::chrono::steady_clock::now()`.
  [[nodiscard]] std::chrono::steady_clock::time_point steady_now() const noexcept {
    return std::chrono::steady_clock::now();
  }
  /// `std::chrono::system_clock::now()`.
  [[nodiscard]] std::chrono::system_clock::time_point system_now() const noexcept {
    return std::chrono::system_clock::now();
  }
};

/// A clock that only moves when a test moves it.
///
/// It starts at `initial_steady` (the steady epoch plus one hour, so that "an hour ago" is still a
/// valid steady time point) and `initial_system` (2026-01-01T00:00:00Z). `advance` moves both
/// clocks together, as real time would; `set_system` moves the wall clock alone, as an NTP step
/// or an operator would.
///
/// @par Thread safety
/// Every member may be called concurrently: the two times are independent atomics, so a reader
/// racing with `advance` may see one clock already moved and the other not yet.
class manual_clock {
 public:
  /// The steady time a new clock shows.
  static constexpr std::chrono::steady_clock::time_point initial_steady{std::chrono::hours{1}};
  /// The wall time a new clock shows: 2026-01-01T00:00:00Z.
  static constexpr std::chrono::system_clock::time_point initial_system{
      std::chrono::sys_days{std::chrono::year{2026} / std::chrono::January / 1}};

  manual_clock() noexcept = default;
  manual_clock(const manual_clock&) = delete;
  manual_clock& operator=(const manual_clock&) = delete;

  /// The current steady time.
  [[nodiscard]] std::chrono::steady_clock::time_point steady_now() const noexcept {
    return std::chrono::steady_clock::time_point{
        std::chrono::steady_clock::duration{steady_.load(std::memory_order_acquire)}};
  }
  /// The current wall time.
  [[nodiscard]] std::chrono::system_clock::time_point system_now() const noexcept {
    return std::chrono::system_clock::time_point{
        std::chrono::system_clock::duration{system_.load(std::memory_order_acquire)}};
  }

  /// Moves both clocks forward by `d` (truncated to each clock's tick).
  ///
  /// @pre `d >= 0`: the steady clock never goes back (a negative `d` is ignored when
  /// `MCPCORE_ASSERT` does not stop the program).
  void advance(std::chrono::nanoseconds d) noexcept {
    MCPCORE_ASSERT(d.count() >= 0);
    if (d.count() <= 0) return;
    steady_.fetch_add(std::chrono::duration_cast<std::chrono::steady_clock::duration>(d).count(),
                      std::memory_order_acq_rel);
    system_.fetch_add(std::chrono::duration_cast<std::chrono::system_clock::duration>(d).count(),
                      std::memory_order_acq_rel);
  }

  /// Sets the wall clock to `t` (backwards or forwards); the steady clock does not move.
  void set_system(std::chrono::system_clock::time_point t) noexcept {
    system_.store(t.time_since_epoch().count(), std::memory_order_release);
  }

 private:
  std::atomic<std::chrono::steady_clock::rep> steady_{initial_steady.time_since_epoch().count()};
  std::atomic<std::chrono::system_clock::rep> system_{initial_system.time_since_epoch().count()};
};

/// A copyable `clock_source` that reads another clock by reference.
///
/// For handing a clock that cannot be copied, or that a test keeps moving, to code that takes
/// its clock by value: `builder.clock(mcpcore::clock_ref{test_clock})`. The referenced clock must
/// outlive every copy. Thread-safe as the referenced clock is.
template <clock_source C>
class clock_ref {
 public:
  /// Reads `c`.
  explicit clock_ref(const C& c) noexcept : c_(&c) {}
  /// `c.steady_now()`.
  [[nodiscard]] std::chrono::steady_clock::time_point steady_now() const noexcept { return c_->steady_now(); }
  /// `c.system_now()`.
  [[nodiscard]] std::chrono::system_clock::time_point system_now() const noexcept { return c_->system_now(); }

 private:
  const C* c_;
};

namespace detail {
// Type erasure of a `clock_source`, shared by the server and the approval service.
struct MCPCORE_API clock_base {
  virtual ~clock_base() = default;
  virtual std::chrono::steady_clock::time_point steady_now() const noexcept = 0;
  virtual std::chrono::system_clock::time_point system_now() const noexcept = 0;
};
template <class C>
struct clock_model final : clock_base {
  explicit clock_model(C c) : c_(std::move(c)) {}
  std::chrono::steady_clock::time_point steady_now() const noexcept override { return c_.steady_now(); }
  std::chrono::system_clock::time_point system_now() const noexcept override { return c_.system_now(); }
  C c_;
};
}  // namespace detail

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_CLOCK_HPP
