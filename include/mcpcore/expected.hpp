// SPDX-License-Identifier: Apache-2.0
// mcpcore::result<T>, the return type of every fallible public function.
#ifndef MCPCORE_EXPECTED_HPP
#define MCPCORE_EXPECTED_HPP

#include <mcpcore/detail/config.hpp>

#include <expected>
#include <system_error>
#include <utility>

MCPCORE_BEGIN_NAMESPACE

/// The value of a fallible operation, or why it failed.
///
/// An alias of `std::expected`. Code in and around mcpcore uses only the subset that g++ 12
/// provides (`has_value`, `operator bool`, `*`, `->`, `value`, `error`, `value_or`): the monadic
/// members arrived in later standard libraries.
///
/// @tparam T the value type.
/// @tparam E the error type; `std::error_code` unless the failure needs more than a code.
template <class T, class E = std::error_code>
using result = std::expected<T, E>;

/// Makes the error alternative of a `result`: `return mcpcore::fail(errc::invalid_params);`.
///
/// @param e the error, converted to the `result`'s error type on return.
template <class E>
[[nodiscard]] constexpr std::unexpected<std::decay_t<E>> fail(E&& e) {
  return std::unexpected<std::decay_t<E>>(std::forward<E>(e));
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_EXPECTED_HPP
