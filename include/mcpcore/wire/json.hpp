// SPDX-License-Identifier: Apache-2.0
// A parsed JSON document as a flat, read-only tape, and the views that navigate it.
#ifndef MCPCORE_JSON_HPP
#define MCPCORE_JSON_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>
#include <type_traits>

MCPCORE_BEGIN_NAMESPACE
namespace json {

/// Why a JSON text was refused by `document::parse`.
enum class json_errc : int {
  empty_input = 1,   ///< no value at all (empty or only whitespace)
  syntax_error,      ///< not JSON: misplaced, missing or unknown tokens, or content after the
                     ///< value; a leading byte order mark counts too (RFC 8259 §8.1 lets
                     ///< parsers refuse it)
  invalid_utf8,      ///< the text is not valid UTF-8
  invalid_string,    ///< a string holds a bad escape, a lone surrogate or a raw control character
  invalid_number,    ///< a number breaks the JSON grammar, is an integer literal outside the
                     ///< 64-bit range (signed or unsigned), or a fraction/exponent literal
                     ///< whose magnitude overflows a double (RFC 7493 I-JSON's advice)
  depth_exceeded,    ///< arrays and objects nest deeper than `parse_options::max_depth`
  duplicate_key,     ///< an object names the same member twice (after unescaping)
  too_large,         ///< the text is longer than `parse_options::max_bytes`
};

/// The category of `json_errc` values; its name is "mcpcore.json".
[[nodiscard]] MCPCORE_DECL const std::error_category& json_category() noexcept;

/// Makes a `std::error_code` of `json_category()`.
[[nodiscard]] inline std::error_code make_error_code(json_errc e) noexcept {
  return {static_cast<int>(e), json_category()};
}

/// The kinds of JSON value.
enum class kind : std::uint8_t { null, boolean, number, string, array, object };

/// Bytes of slack `document::parse_padded` requires after the text (simdjson's padding).
inline constexpr std::size_t padding = 64;
/// Default nesting limit: how many arrays and objects may enclose one another.
inline constexpr std::uint32_t default_max_depth = 128;
/// The highest nesting limit a document accepts; parsing recurses once per level.
inline constexpr std::uint32_t max_supported_depth = 1024;
/// Default size limit of a JSON text, in bytes.
inline constexpr std::size_t default_max_bytes = std::size_t{64} << 20;

/// Buffer capacity a document keeps between parses, in bytes of text.
inline constexpr std::size_t default_retain_bytes = std::size_t{1} << 20;

/// Limits applied while parsing; every one is a hard refusal, never a truncation.
struct parse_options {
  /// Deepest nesting of arrays and objects accepted (clamped to `max_supported_depth`).
  std::uint32_t max_depth = default_max_depth;
  /// Longest text accepted, in bytes (at most 4 GiB - 1 whatever is asked).
  std::size_t max_bytes = default_max_bytes;
  /// Capacity kept between parses; a document that grew past it shrinks back on the next parse
  /// of a text that fits, so a connection that once received a large body does not hold its
  /// buffers forever.
  std::size_t retain_bytes = default_retain_bytes;
  /// RFC 8259 leaves duplicate member names undefined; mcpcore refuses them by default so that
  /// no two components can read different values out of one message.
  bool allow_duplicate_keys = false;
};

namespace detail {
/// One tape entry. Containers are followed by their children in document order; an object's
/// children alternate key (a string node) and value (a whole subtree).
struct node {
  union {
    const char* text;  ///< string: unescaped UTF-8; number with `node_text`: the spelling
    std::int64_t i64;  ///< number with `node_int64` and without `node_text`
    std::uint64_t u64; ///< number with `node_uint64` and without `node_text`
  };
  std::uint32_t size;  ///< string or number text: byte length; array/object: element/member count
  std::uint32_t span;  ///< number of nodes in this subtree, itself included
  json::kind kind;
  std::uint8_t flags;
};
inline constexpr std::uint8_t node_true = 1;    ///< boolean: true
inline constexpr std::uint8_t node_int64 = 2;   ///< number: an integer literal in int64 range
inline constexpr std::uint8_t node_uint64 = 4;  ///< number: an integer literal above INT64_MAX
inline constexpr std::uint8_t node_text = 8;    ///< number: `text` holds the spelling (doubles
                                                ///< and zero, whose spelling the value does not fix)
}  // namespace detail

class value;

/// One member of an object: its unescaped key and its value.
struct member {
  std::string_view key;
  const detail::node* value_node;
  /// The member's value.
  [[nodiscard]] json::value value() const noexcept;
};

/// A read-only view of one value inside a `document`.
///
/// A default-constructed value is *absent* (`exists()` is false); lookups that find nothing
/// return an absent value, so chains such as `v["params"]["_meta"]["progressToken"]` never
/// need intermediate checks. Views stay valid until their document is parsed again or destroyed.
///
/// @par Thread safety
/// Views are immutable; any number of threads may read one document concurrently.
class value {
 public:
  /// An absent value.
  constexpr value() noexcept = default;
  /// Wraps a tape node (library use).
  explicit constexpr value(const detail::node* n) noexcept : node_(n) {}

  /// Whether this view refers to a value at all.
  [[nodiscard]] constexpr bool exists() const noexcept { return node_ != nullptr; }
  /// The kind of the value. @pre `exists()`.
  [[nodiscard]] json::kind kind() const noexcept {
    MCPCORE_ASSERT(node_);
    return node_->kind;
  }
  [[nodiscard]] bool is_null() const noexcept { return is(json::kind::null); }
  [[nodiscard]] bool is_bool() const noexcept { return is(json::kind::boolean); }
  [[nodiscard]] bool is_number() const noexcept { return is(json::kind::number); }
  [[nodiscard]] bool is_string() const noexcept { return is(json::kind::string); }
  [[nodiscard]] bool is_array() const noexcept { return is(json::kind::array); }
  [[nodiscard]] bool is_object() const noexcept { return is(json::kind::object); }
  /// Whether the value is a number written without fraction or exponent (`-3`, `0`, `12`).
  [[nodiscard]] bool is_integer() const noexcept {
    return is_number() && (node_->flags & (detail::node_int64 | detail::node_uint64)) != 0;
  }

  /// The boolean. @pre `is_bool()`.
  [[nodiscard]] bool as_bool() const noexcept {
    MCPCORE_ASSERT(is_bool());
    return (node_->flags & detail::node_true) != 0;
  }
  /// The string, unescaped, as UTF-8. @pre `is_string()`.
  [[nodiscard]] std::string_view as_string() const noexcept {
    MCPCORE_ASSERT(is_string());
    return {node_->text, node_->size};
  }
  /// The number as a signed 64-bit integer, when it is an integer literal in range.
  [[nodiscard]] MCPCORE_DECL std::optional<std::int64_t> to_int64() const noexcept;
  /// The number as an unsigned 64-bit integer, when it is a non-negative integer literal in range.
  [[nodiscard]] MCPCORE_DECL std::optional<std::uint64_t> to_uint64() const noexcept;
  /// The number as the nearest double, when it is finite in double precision.
  [[nodiscard]] MCPCORE_DECL std::optional<double> to_double() const noexcept;

  /// Element count of an array, member count of an object, 0 for anything else.
  [[nodiscard]] std::size_t size() const noexcept {
    return is_array() || is_object() ? node_->size : 0;
  }
  /// The member named `key`, or an absent value (also when this is not an object).
  /// Linear in the member count.
  [[nodiscard]] MCPCORE_DECL value find(std::string_view key) const noexcept;
  /// Same as `find(key)`.
  [[nodiscard]] value operator[](std::string_view key) const noexcept { return find(key); }

  class element_range;
  class member_range;
  /// The elements of an array (empty for anything else).
  [[nodiscard]] element_range elements() const noexcept;
  /// The members of an object in document order (empty for anything else).
  [[nodiscard]] member_range members() const noexcept;

  /// The tape node (library use).
  [[nodiscard]] constexpr const detail::node* node() const noexcept { return node_; }

 private:
  [[nodiscard]] bool is(json::kind k) const noexcept { return node_ && node_->kind == k; }
  const detail::node* node_ = nullptr;
};

inline value member::value() const noexcept { return json::value{value_node}; }

/// Forward range over the elements of an array.
class value::element_range {
 public:
  class iterator {
   public:
    using value_type = json::value;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    explicit iterator(const detail::node* n) noexcept : n_(n) {}
    json::value operator*() const noexcept { return json::value{n_}; }
    iterator& operator++() noexcept {
      n_ += n_->span;
      return *this;
    }
    iterator operator++(int) noexcept {
      auto old = *this;
      ++*this;
      return old;
    }
    friend bool operator==(iterator, iterator) = default;

   private:
    const detail::node* n_ = nullptr;
  };
  element_range() = default;
  element_range(const detail::node* first, const detail::node* last) noexcept
      : first_(first), last_(last) {}
  [[nodiscard]] iterator begin() const noexcept { return iterator{first_}; }
  [[nodiscard]] iterator end() const noexcept { return iterator{last_}; }

 private:
  const detail::node* first_ = nullptr;
  const detail::node* last_ = nullptr;
};

/// Forward range over the members of an object.
class value::member_range {
 public:
  class iterator {
   public:
    using value_type = member;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    explicit iterator(const detail::node* key) noexcept : k_(key) {}
    member operator*() const noexcept { return member{{k_->text, k_->size}, k_ + 1}; }
    iterator& operator++() noexcept {
      k_ += 1 + k_[1].span;
      return *this;
    }
    iterator operator++(int) noexcept {
      auto old = *this;
      ++*this;
      return old;
    }
    friend bool operator==(iterator, iterator) = default;

   private:
    const detail::node* k_ = nullptr;
  };
  member_range() = default;
  member_range(const detail::node* first, const detail::node* last) noexcept
      : first_(first), last_(last) {}
  [[nodiscard]] iterator begin() const noexcept { return iterator{first_}; }
  [[nodiscard]] iterator end() const noexcept { return iterator{last_}; }

 private:
  const detail::node* first_ = nullptr;
  const detail::node* last_ = nullptr;
};

inline value::element_range value::elements() const noexcept {
  if (!is_array()) return {};
  return {node_ + 1, node_ + node_->span};
}

inline value::member_range value::members() const noexcept {
  if (!is_object()) return {};
  return {node_ + 1, node_ + node_->span};
}

/// A reusable JSON parser and the tape of the last text it parsed.
///
/// Parsing validates the whole text (grammar, UTF-8, string escapes including lone surrogates,
/// raw control characters, number syntax and range, nesting, duplicate keys) with simdjson's DOM
/// parser, then records every value on a flat tape of its own, so navigation costs no further
/// parsing and the public API does not depend on simdjson. Numbers keep their spelling: integers
/// other than zero are spelled by their value; zero and non-integers have their source text
/// recovered. A document reused across messages keeps its buffers, so steady-state parsing does
/// not allocate.
///
/// Memory is proportional to the text parsed: the padded copy, simdjson's index, tape and string
/// buffer, and one 24-byte node per value. Capacity grown by a text longer than
/// `parse_options::retain_bytes` is released by the next parse of a shorter text.
///
/// @par Thread safety
/// Distinct documents may be used concurrently; one document is not safe for concurrent `parse`.
class document {
 public:
  /// A document with the default limits.
  MCPCORE_DECL document();
  /// A document with the given limits.
  MCPCORE_DECL explicit document(parse_options options);
  MCPCORE_DECL document(document&& other) noexcept;
  MCPCORE_DECL document& operator=(document&& other) noexcept;
  MCPCORE_DECL ~document();
  document(const document&) = delete;
  document& operator=(const document&) = delete;

  /// Parses `text`, copying it once into the document's padded buffer.
  ///
  /// @returns the root value, valid until the next parse or the document's destruction.
  /// @par Errors
  /// A `json_errc` (category `json_category()`).
  [[nodiscard]] MCPCORE_DECL result<value> parse(std::string_view text);

  /// Parses `text` in place, without copying it.
  ///
  /// @param text the JSON text; it must stay alive and unchanged while the values are used.
  /// @param capacity bytes readable at `text.data()`; at least `text.size() + json::padding`.
  /// @pre `capacity >= text.size() + padding`.
  [[nodiscard]] MCPCORE_DECL result<value> parse_padded(std::string_view text,
                                                        std::size_t capacity);

  /// The root of the last successful parse, or an absent value.
  [[nodiscard]] MCPCORE_DECL value root() const noexcept;

  /// The limits this document applies.
  [[nodiscard]] MCPCORE_DECL const parse_options& options() const noexcept;

 private:
  struct impl;
  // Owned; a raw pointer rather than std::unique_ptr keeps <memory> (35k preprocessed lines)
  // out of every includer. A moved-from document holds null and may only be destroyed or
  // assigned to.
  impl* impl_ = nullptr;
};

}  // namespace json
MCPCORE_END_NAMESPACE

template <>
struct std::is_error_code_enum<mcpcore::json::json_errc> : std::true_type {};

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/wire/impl/json.ipp>
#endif

#endif  // MCPCORE_JSON_HPP
