// SPDX-License-Identifier: Apache-2.0
// json::writer: compact JSON output with correct escaping, appended to a std::string.
#ifndef MCPCORE_JSON_WRITER_HPP
#define MCPCORE_JSON_WRITER_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/wire/json.hpp>

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE
namespace json {

/// Appends `s` to `out` as a JSON string literal, quotes included.
///
/// Escaping: `"` and `\` are escaped; the C0 controls U+0000-U+001F are written as `\b`, `\f`,
/// `\n`, `\r`, `\t` or `\u00XX`; everything else is copied as UTF-8 (`/`, DEL and non-ASCII
/// are not escaped).
///
/// Invalid UTF-8: output must be valid JSON text, which is UTF-8 (RFC 8259 §8.1), but the bytes
/// handed in may come from anywhere (a log file, a process's output). Each maximal ill-formed
/// subsequence is replaced by U+FFFD, following the Unicode Standard's "substitution of maximal
/// subparts" (§3.9, the practice of WHATWG's decoder). Overlong forms, surrogates encoded in
/// UTF-8 and code points above U+10FFFF count as ill-formed.
MCPCORE_DECL void append_escaped(std::string& out, std::string_view s);

/// Whether `s` is well-formed UTF-8 (the test `append_escaped` applies).
[[nodiscard]] MCPCORE_DECL bool is_valid_utf8(std::string_view s) noexcept;

namespace detail {
template <class T>
inline constexpr bool is_character_v =
    std::same_as<T, bool> || std::same_as<T, char> || std::same_as<T, wchar_t> ||
    std::same_as<T, char8_t> || std::same_as<T, char16_t> || std::same_as<T, char32_t>;

/// Appends the spelling of a number node: its source text, or its integer value.
MCPCORE_DECL void append_number(std::string& out, const json::detail::node& n);
}  // namespace detail

/// Writes compact JSON into a string, one token at a time.
///
/// Separators are derived from the output itself: before a key or value a comma is written
/// unless the writer is at its start or the previous byte opened a container or ended a key.
/// The writer therefore needs no stack and cannot misplace commas; balancing `begin_*` with
/// `end_*` and pairing keys with values remain the caller's job.
///
/// @code
/// std::string out;
/// json::writer w{out};
/// w.begin_object().member("name", "ping").member("n", 3).end_object();  // {"name":"ping","n":3}
/// @endcode
class writer {
 public:
  /// A writer appending to `out`; bytes already in `out` are left alone.
  explicit writer(std::string& out) noexcept : out_(&out), start_(out.size()) {}

  writer& begin_object() {
    separate();
    out_->push_back('{');
    return *this;
  }
  writer& end_object() {
    out_->push_back('}');
    return *this;
  }
  writer& begin_array() {
    separate();
    out_->push_back('[');
    return *this;
  }
  writer& end_array() {
    out_->push_back(']');
    return *this;
  }
  /// Writes an object key (escaped) and its colon.
  writer& key(std::string_view k) {
    separate();
    append_escaped(*out_, k);
    out_->push_back(':');
    return *this;
  }
  /// Writes a string value (escaped).
  writer& value(std::string_view s) {
    separate();
    append_escaped(*out_, s);
    return *this;
  }
  writer& value(const char* s) { return value(std::string_view{s}); }
  writer& value(const std::string& s) { return value(std::string_view{s}); }
  writer& value(bool b) {
    separate();
    out_->append(b ? "true" : "false");
    return *this;
  }
  writer& value(std::nullptr_t) { return null(); }
  /// Writes an integer exactly. Character types are not integers here: write them as strings.
  template <std::integral I>
    requires(!detail::is_character_v<I>)
  writer& value(I i) {
    if constexpr (std::signed_integral<I>) {
      return integer(static_cast<std::int64_t>(i));
    } else {
      return unsigned_integer(static_cast<std::uint64_t>(i));
    }
  }
  /// Writes a double in its shortest round-trip form; NaN and infinities, which JSON cannot
  /// represent, are written as `null`.
  MCPCORE_DECL writer& value(double d);
  /// Writes a parsed value compactly, members in document order, numbers spelled as written.
  MCPCORE_DECL writer& value(json::value v);
  /// Writes `v` when it holds a value, `null` otherwise.
  template <class T>
  writer& value(const std::optional<T>& v) {
    return v ? value(*v) : null();
  }
  writer& null() {
    separate();
    out_->append("null");
    return *this;
  }
  /// Writes pre-serialized JSON verbatim. @pre `json` is one complete, valid JSON value.
  writer& raw(std::string_view json) {
    MCPCORE_ASSERT(!json.empty());
    separate();
    out_->append(json);
    return *this;
  }
  /// `key(k)` then `value(v)`.
  template <class T>
  writer& member(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }
  /// `key(k)` then `raw(json)`.
  writer& raw_member(std::string_view k, std::string_view json) {
    key(k);
    return raw(json);
  }

  /// The string being written to.
  [[nodiscard]] std::string& out() noexcept { return *out_; }

 private:
  MCPCORE_DECL writer& integer(std::int64_t i);
  MCPCORE_DECL writer& unsigned_integer(std::uint64_t u);
  void separate() {
    if (out_->size() > start_) {
      const char c = out_->back();
      if (c != '{' && c != '[' && c != ':') out_->push_back(',');
    }
  }

  std::string* out_;
  std::size_t start_;
};

}  // namespace json
MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/wire/impl/json_writer.ipp>
#endif

#endif  // MCPCORE_JSON_WRITER_HPP
