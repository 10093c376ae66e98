// SPDX-License-Identifier: Apache-2.0
// A failing allocator for the allocation-failure sweeps (docs/sessions.md#exception-boundaries):
// the program's global operator new (replaced in failing_allocator.cpp, so only the program that
// links it has it) throws std::bad_alloc at the Nth allocation after arming, on the arming thread
// only.
#ifndef MCPCORE_TESTS_ALLOC_FAILING_ALLOCATOR_HPP
#define MCPCORE_TESTS_ALLOC_FAILING_ALLOCATOR_HPP

#include <cstdint>

namespace failing_allocator {

/// How an armed allocator fails.
enum class mode : std::uint8_t {
  once,    ///< only the Nth allocation fails (a transient shortage)
  sticky,  ///< the Nth and every later one fail until disarmed (memory stays exhausted)
};

/// From now on, on this thread, allocation number `n` (0 = the next one) fails as `m` says.
void arm(std::uint64_t n, mode m) noexcept;

/// What an armed period saw.
struct outcome {
  bool fired = false;         ///< an allocation was failed
  std::uint64_t attempts = 0;  ///< allocations attempted while armed
};
/// Stops failing on this thread; what happened while armed.
outcome disarm() noexcept;

/// Allocations attempted on this thread since the program started (armed or not).
[[nodiscard]] std::uint64_t count() noexcept;

}  // namespace failing_allocator

#endif  // MCPCORE_TESTS_ALLOC_FAILING_ALLOCATOR_HPP
