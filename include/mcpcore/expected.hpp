// SPDX-License-Identifier: Apache-2.0
// mcpcore::result<T> and mcpcore::error: the one shape of every fallible public call
// (docs/errors.md#one-error-shape).
#ifndef MCPCORE_EXPECTED_HPP
#define MCPCORE_EXPECTED_HPP

#include <mcpcore/detail/config.hpp>

#include <expected>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

/// The library's own failure codes, in `library_category()` (named "mcpcore"): failures that have
/// no operating-system, SQLite or protocol code of their own (docs/errors.md#one-error-shape).
enum class library_errc : int {
  build_refused = 1,       ///< `server_builder::build` found registration offences (`error::details`)
  token_file_refused = 2,  ///< a token file or text was refused (malformed line, unsafe file, too large)
  moved_from = 3,          ///< the object was moved from
};

/// The category of `library_errc`; its `name()` is "mcpcore".
[[nodiscard]] MCPCORE_DECL const std::error_category& library_category() noexcept;

/// Makes an `std::error_code` in `library_category()` (found by argument-dependent lookup).
[[nodiscard]] inline std::error_code make_error_code(library_errc e) noexcept {
  return {static_cast<int>(e), library_category()};
}

/// Why a fallible public call failed: a code to branch on and a message for people
/// (docs/errors.md#one-error-shape).
///
/// - `code()` is an `std::error_code`: an operating-system error, a store's code, a JSON code, a
///   `library_errc`, ... Compare with `==` against an `std::error_code`, an error-code enum or an
///   error condition (`std::errc`, `approval_store_fault`).
/// - `message()` is the specific detail when the failure has one ("tokens:3: unknown tier", the
///   build offences joined by "; "), else `code().message()`.
/// - `details()` lists the individual problems when there are several (each build offence).
///
/// Implicitly constructible from an `std::error_code` and from any error-code enum, so that
/// `return fail(json_errc::...)` and `return fail(ec)` make a `result<T>` directly.
class error {
 public:
  error() noexcept = default;
  error(std::error_code code) noexcept : code_(code) {}  // NOLINT(google-explicit-constructor)
  template <class E>
    requires std::is_error_code_enum_v<E>
  error(E e) noexcept : code_(make_error_code(e)) {}  // NOLINT(google-explicit-constructor)
  /// A code and one detail: `message()` returns `detail` (when it is not empty).
  error(std::error_code code, std::string detail) : code_(code) {
    if (!detail.empty()) details_.push_back(std::move(detail));
  }
  /// A code and several details: `message()` joins them with "; ".
  error(std::error_code code, std::vector<std::string> details) noexcept
      : code_(code), details_(std::move(details)) {}

  /// The code to branch on.
  [[nodiscard]] const std::error_code& code() const noexcept { return code_; }
  /// The specific detail (several joined by "; "), else `code().message()`.
  [[nodiscard]] MCPCORE_DECL std::string message() const;
  /// The individual problems, in order; empty when the code says it all.
  [[nodiscard]] const std::vector<std::string>& details() const noexcept { return details_; }

  /// Compares the codes (the details are not compared).
  friend bool operator==(const error& a, const error& b) noexcept { return a.code_ == b.code_; }
  friend bool operator==(const error& a, const std::error_code& b) noexcept { return a.code_ == b; }
  friend bool operator==(const error& a, const std::error_condition& b) noexcept { return a.code_ == b; }
  template <class E>
    requires std::is_error_code_enum_v<E>
  friend bool operator==(const error& a, E b) noexcept {
    return a.code_ == make_error_code(b);
  }
  template <class E>
    requires(std::is_error_condition_enum_v<E> && !std::is_error_code_enum_v<E>)
  friend bool operator==(const error& a, E b) noexcept {
    return a.code_ == make_error_condition(b);
  }

 private:
  std::error_code code_{};
  std::vector<std::string> details_{};
};

/// The value of a fallible operation, or why it failed.
///
/// An alias of `std::expected`. Code in and around mcpcore uses only the subset that g++ 12
/// provides (`has_value`, `operator bool`, `*`, `->`, `value`, `error`, `value_or`): the monadic
/// members arrived in later standard libraries.
///
/// @tparam T the value type.
/// @tparam E the error type; `mcpcore::error` for every fallible public call. A few internal and
///           protocol-level functions carry a richer structured reason instead.
template <class T, class E = error>
using result = std::expected<T, E>;

/// Makes the error alternative of a `result`: `return mcpcore::fail(errc::invalid_params);`.
///
/// @param e the error, converted to the `result`'s error type on return.
template <class E>
[[nodiscard]] constexpr std::unexpected<std::decay_t<E>> fail(E&& e) {
  return std::unexpected<std::decay_t<E>>(std::forward<E>(e));
}

MCPCORE_END_NAMESPACE

template <>
struct std::is_error_code_enum<mcpcore::library_errc> : std::true_type {};

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/impl/expected.ipp>
#endif

#endif  // MCPCORE_EXPECTED_HPP
