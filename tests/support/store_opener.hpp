// SPDX-License-Identifier: Apache-2.0
// How the tests of a store model make its stores for the shared conformance suites and races
// (approval_store_suite.hpp, task_store_suite.hpp), and the value semantics every store and sink
// model has (a move-only handle whose moves cannot fail).
#ifndef MCPCORE_TESTS_SUPPORT_STORE_OPENER_HPP
#define MCPCORE_TESTS_SUPPORT_STORE_OPENER_HPP

#include <doctest/doctest.h>

#include "support/process.hpp"

#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace mcpcore_test {

/// A store or sink model's value semantics: moved without failing, never copied.
template <class T>
concept move_only = std::is_nothrow_move_constructible_v<T> && std::is_nothrow_move_assignable_v<T> &&
                    !std::is_copy_constructible_v<T> && !std::is_copy_assignable_v<T>;

/// `T::open(args...)`'s store or sink; one that does not open fails the test with its error.
template <class T, class... Args>
auto open_or_fail(Args&&... args) {
  auto r = T::open(std::forward<Args>(args)...);
  if (!r) FAIL("open failed: " << r.error().message());
  return std::move(*r);
}

/// A `make()` for the suites: each call opens `Store::open(where())` (a file, a connection
/// string) and returns the store owned; a store that does not open fails the test with its error.
template <class Store, class Where>
auto store_opener(Where where) {
  return [where = std::move(where)]() mutable { return std::make_unique<Store>(open_or_fail<Store>(where())); };
}

/// A `make()` that opens a fresh, empty store per call, each in a file of its own in `dir`:
/// `<prefix>-1.db`, `<prefix>-2.db`, ...
template <class Store>
auto store_files(const test_process::temp_dir& dir, std::string prefix) {
  return store_opener<Store>([&dir, prefix = std::move(prefix), n = 0U]() mutable {
    return dir.file(prefix + "-" + std::to_string(++n) + ".db");
  });
}

}  // namespace mcpcore_test

#endif  // MCPCORE_TESTS_SUPPORT_STORE_OPENER_HPP
