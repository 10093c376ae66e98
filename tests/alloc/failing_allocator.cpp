// SPDX-License-Identifier: Apache-2.0
// The replaced global allocation functions of the allocation-failure test program. Memory comes
// from malloc and goes back to free (so AddressSanitizer's leak checker still sees every block);
// an armed thread's Nth allocation fails: the throwing forms throw std::bad_alloc, the nothrow
// forms return null.
#include "failing_allocator.hpp"

#include <cstddef>
#include <cstdlib>
#include <new>

namespace failing_allocator {
namespace {

struct control {
  bool armed = false;
  bool sticky = false;
  bool fired = false;
  std::uint64_t countdown = 0;  // allocations still allowed before the failing one
  std::uint64_t attempts = 0;   // while armed
  std::uint64_t total = 0;      // since the thread started
};
// Constant-initialised and trivially destructible: touching it never allocates.
constinit thread_local control state{};

// Whether this allocation must fail.
bool should_fail() noexcept {
  control& c = state;
  ++c.total;
  if (!c.armed) return false;
  ++c.attempts;
  if (c.fired) return c.sticky;
  if (c.countdown == 0) {
    c.fired = true;
    return true;
  }
  --c.countdown;
  return false;
}

void* allocate(std::size_t n) noexcept { return std::malloc(n == 0 ? 1 : n); }

void* allocate_aligned(std::size_t n, std::align_val_t al) noexcept {
  const auto a = static_cast<std::size_t>(al);
  const std::size_t size = n == 0 ? a : (n + a - 1) / a * a;  // aligned_alloc wants a multiple
  return std::aligned_alloc(a, size);
}

void* allocate_or_throw(std::size_t n) {
  if (should_fail()) throw std::bad_alloc();
  void* p = allocate(n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void* allocate_aligned_or_throw(std::size_t n, std::align_val_t al) {
  if (should_fail()) throw std::bad_alloc();
  void* p = allocate_aligned(n, al);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

void arm(std::uint64_t n, mode m) noexcept {
  control& c = state;
  c.armed = true;
  c.sticky = m == mode::sticky;
  c.fired = false;
  c.countdown = n;
  c.attempts = 0;
}

outcome disarm() noexcept {
  control& c = state;
  c.armed = false;
  return {c.fired, c.attempts};
}

std::uint64_t count() noexcept { return state.total; }

}  // namespace failing_allocator

// NOLINTBEGIN(misc-new-delete-overloads, cert-dcl54-cpp, hicpp-new-delete-operators)
void* operator new(std::size_t n) { return failing_allocator::allocate_or_throw(n); }
void* operator new[](std::size_t n) { return failing_allocator::allocate_or_throw(n); }
void* operator new(std::size_t n, const std::nothrow_t& /*tag*/) noexcept {
  if (failing_allocator::should_fail()) return nullptr;
  return failing_allocator::allocate(n);
}
void* operator new[](std::size_t n, const std::nothrow_t& /*tag*/) noexcept {
  if (failing_allocator::should_fail()) return nullptr;
  return failing_allocator::allocate(n);
}
void* operator new(std::size_t n, std::align_val_t al) { return failing_allocator::allocate_aligned_or_throw(n, al); }
void* operator new[](std::size_t n, std::align_val_t al) {
  return failing_allocator::allocate_aligned_or_throw(n, al);
}
void* operator new(std::size_t n, std::align_val_t al, const std::nothrow_t& /*tag*/) noexcept {
  if (failing_allocator::should_fail()) return nullptr;
  return failing_allocator::allocate_aligned(n, al);
}
void* operator new[](std::size_t n, std::align_val_t al, const std::nothrow_t& /*tag*/) noexcept {
  if (failing_allocator::should_fail()) return nullptr;
  return failing_allocator::allocate_aligned(n, al);
}

void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t /*n*/) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t /*n*/) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t& /*tag*/) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t& /*tag*/) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t /*al*/) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t /*al*/) noexcept { std::free(p); }
void operator delete(void* p, std::size_t /*n*/, std::align_val_t /*al*/) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t /*n*/, std::align_val_t /*al*/) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t /*al*/, const std::nothrow_t& /*tag*/) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t /*al*/, const std::nothrow_t& /*tag*/) noexcept { std::free(p); }
// NOLINTEND(misc-new-delete-overloads, cert-dcl54-cpp, hicpp-new-delete-operators)
