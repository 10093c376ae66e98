// SPDX-License-Identifier: Apache-2.0
// How every store of the library runs a call: under its lock, with no exception escaping.
#ifndef MCPCORE_IMPL_STORE_CALL_IPP
#define MCPCORE_IMPL_STORE_CALL_IPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>

#include <mutex>
#include <new>
#include <system_error>
#include <utility>

MCPCORE_BEGIN_NAMESPACE
namespace detail {

// Runs `f()` holding `m`; nothing escapes as an exception: out of memory is the transient
// `std::errc::not_enough_memory` (nothing changed, and a retry may succeed), any other exception
// is what `internal()` makes (the store's own permanent code).
template <class F, class Internal>
auto guarded_store_call(std::mutex& m, F&& f, Internal&& internal) noexcept -> decltype(f()) {
  try {
    const std::lock_guard<std::mutex> lock(m);
    return std::forward<F>(f)();
  } catch (const std::bad_alloc&) {
    return fail(std::make_error_code(std::errc::not_enough_memory));
  } catch (...) {
    return std::forward<Internal>(internal)();
  }
}

}  // namespace detail
MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_STORE_CALL_IPP
