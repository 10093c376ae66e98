// SPDX-License-Identifier: Apache-2.0
// Replaces the global operator new/delete of a benchmark executable with versions that count
// allocations, so that benchmarks can report (and enforce) allocations per operation.
//
// Include it from exactly one translation unit per executable (each benchmark is one file).
// The count is kept per thread: threaded runs count each thread's own work, and nothing the
// benchmark library does on its other threads.
#ifndef MCPCORE_BENCH_COUNTING_NEW_HPP
#define MCPCORE_BENCH_COUNTING_NEW_HPP

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace {

// A trivially constructed thread_local needs no allocation of its own.
thread_local std::uint64_t allocation_count = 0;

void* counted_malloc(std::size_t n) noexcept {
  ++allocation_count;
  return std::malloc(n == 0 ? 1 : n);
}

void* counted_aligned(std::size_t n, std::align_val_t al) noexcept {
  ++allocation_count;
  void* p = nullptr;
  const auto alignment = static_cast<std::size_t>(al);
  if (posix_memalign(&p, alignment < sizeof(void*) ? sizeof(void*) : alignment, n == 0 ? 1 : n) != 0)
    return nullptr;
  return p;
}

// Out of line, so that g++'s -Wmismatched-new-delete does not pair this free() with the
// operator new that produced the pointer (a pairing that is correct here: both are ours).
[[gnu::noinline]] void counted_free(void* p) noexcept { std::free(p); }

std::uint64_t allocations() noexcept { return allocation_count; }

}  // namespace

void* operator new(std::size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc{};
}
void* operator new[](std::size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc{};
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void* operator new(std::size_t n, std::align_val_t al) {
  if (void* p = counted_aligned(n, al)) return p;
  throw std::bad_alloc{};
}
void* operator new[](std::size_t n, std::align_val_t al) {
  if (void* p = counted_aligned(n, al)) return p;
  throw std::bad_alloc{};
}
void* operator new(std::size_t n, std::align_val_t al, const std::nothrow_t&) noexcept {
  return counted_aligned(n, al);
}
void* operator new[](std::size_t n, std::align_val_t al, const std::nothrow_t&) noexcept {
  return counted_aligned(n, al);
}
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { counted_free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { counted_free(p); }

#endif  // MCPCORE_BENCH_COUNTING_NEW_HPP
