// SPDX-License-Identifier: Apache-2.0
// JSON parsing: simdjson's DOM parser validates, then a walk records mcpcore's own tape.
#ifndef MCPCORE_IMPL_JSON_IPP
#define MCPCORE_IMPL_JSON_IPP

#include <mcpcore/json.hpp>

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE
namespace json {

namespace detail {

class json_category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "mcpcore.json"; }
  std::string message(int ev) const override {
    switch (static_cast<json_errc>(ev)) {
      case json_errc::empty_input: return "no JSON value in the input";
      case json_errc::syntax_error: return "invalid JSON syntax";
      case json_errc::invalid_utf8: return "the JSON text is not valid UTF-8";
      case json_errc::invalid_string: return "invalid JSON string (escape, surrogate or control character)";
      case json_errc::invalid_number: return "invalid or out-of-range JSON number";
      case json_errc::depth_exceeded: return "JSON nesting exceeds the configured depth";
      case json_errc::duplicate_key: return "an object repeats a member name";
        case json_errc::too_large: return "the JSON text exceeds the configured size";
    }
    return "unknown JSON error";
  }
};

// Maps simdjson's error codes onto ours. The DOM parser reports content after the value as a
// structural (tape) error, so it is a syntax_error like any other misplaced token.
MCPCORE_DECL json_errc from_simdjson(simdjson::error_code e) noexcept {
  switch (e) {
    case simdjson::EMPTY: return json_errc::empty_input;
    case simdjson::UTF8_ERROR: return json_errc::invalid_utf8;
    case simdjson::STRING_ERROR:
    case simdjson::UNESCAPED_CHARS:
    case simdjson::UNCLOSED_STRING: return json_errc::invalid_string;
    case simdjson::NUMBER_ERROR:
    case simdjson::NUMBER_OUT_OF_RANGE: return json_errc::invalid_number;
    case simdjson::DEPTH_ERROR: return json_errc::depth_exceeded;
    case simdjson::CAPACITY: return json_errc::too_large;
    default: return json_errc::syntax_error;
  }
}

constexpr bool is_number_char(char c) noexcept {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

// Finds the number tokens of an already validated JSON text, in document order. Validity makes
// this a small scanner: strings are skipped to their closing quote, literals by their length.
template <class F>
void scan_numbers(const char* p, const char* end, F&& on_number) {
  while (p < end) {
    const char c = *p;
    if (c == '"') {
      ++p;
      while (true) {
        const void* q = std::memchr(p, '"', static_cast<std::size_t>(end - p));
        p = static_cast<const char*>(q);
        // A quote preceded by an odd run of backslashes is escaped.
        std::size_t backslashes = 0;
        while (p[-1 - static_cast<std::ptrdiff_t>(backslashes)] == '\\') ++backslashes;
        ++p;
        if (backslashes % 2 == 0) break;
      }
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      const char* start = p;
      while (p < end && is_number_char(*p)) ++p;
      on_number(start, static_cast<std::size_t>(p - start));
    } else if (c == 't' || c == 'n') {
      p += 4;
    } else if (c == 'f') {
      p += 5;
    } else {
      ++p;
    }
  }
}

struct tape_builder {
  std::vector<detail::node>& tape;
  std::vector<std::string_view>& keys;
  std::uint32_t max_depth;
  bool allow_duplicate_keys;
  bool needs_spelling = false;
  std::uint32_t depth = 0;  // containers enclosing the value being walked

  json_errc walk(simdjson::dom::element e) {
    using simdjson::dom::element_type;
    detail::node n{};
    n.span = 1;
    switch (e.type()) {
      case element_type::ARRAY: return walk_array(e.get_array().value_unsafe());
      case element_type::OBJECT: return walk_object(e.get_object().value_unsafe());
      case element_type::STRING: {
        const std::string_view s = e.get_string().value_unsafe();
        n.kind = kind::string;
        n.text = s.data();
        n.size = static_cast<std::uint32_t>(s.size());
        break;
      }
      case element_type::INT64:
        n.kind = kind::number;
        n.i64 = e.get_int64().value_unsafe();
        n.flags = detail::node_int64;
        needs_spelling |= n.i64 == 0;  // "0" or "-0"
        break;
      case element_type::UINT64:
        n.kind = kind::number;
        n.u64 = e.get_uint64().value_unsafe();
        n.flags = detail::node_uint64;
        break;
      case element_type::DOUBLE:
        n.kind = kind::number;
        n.text = nullptr;
        needs_spelling = true;
        break;
      case element_type::BOOL:
        n.kind = kind::boolean;
        n.flags = e.get_bool().value_unsafe() ? detail::node_true : 0;
        break;
      case element_type::NULL_VALUE: n.kind = kind::null; break;
    }
    tape.push_back(n);
    return {};
  }

  json_errc walk_array(simdjson::dom::array a) {
    if (++depth > max_depth) return json_errc::depth_exceeded;
    const std::size_t at = tape.size();
    tape.push_back(detail::node{});
    std::uint32_t count = 0;
    for (simdjson::dom::element child : a) {
      if (auto ec = walk(child); ec != json_errc{}) return ec;
      ++count;
    }
    close(at, kind::array, count);
    --depth;
    return {};
  }

  json_errc walk_object(simdjson::dom::object o) {
    if (++depth > max_depth) return json_errc::depth_exceeded;
    const std::size_t at = tape.size();
    tape.push_back(detail::node{});
    std::uint32_t count = 0;
    for (simdjson::dom::key_value_pair kv : o) {
      detail::node k{};
      k.kind = kind::string;
      k.text = kv.key.data();
      k.size = static_cast<std::uint32_t>(kv.key.size());
      k.span = 1;
      tape.push_back(k);
      if (auto ec = walk(kv.value); ec != json_errc{}) return ec;
      ++count;
    }
    close(at, kind::object, count);
    --depth;
    if (!allow_duplicate_keys && count > 1 && has_duplicate_key(at)) return json_errc::duplicate_key;
    return {};
  }

  void close(std::size_t at, kind k, std::uint32_t count) {
    detail::node& n = tape[at];
    n.kind = k;
    n.size = count;
    n.span = static_cast<std::uint32_t>(tape.size() - at);
  }

  // Small objects compare pairwise; larger ones sort their keys, so hostile inputs with many
  // members cost O(n log n), not O(n^2).
  bool has_duplicate_key(std::size_t at) {
    const value obj{&tape[at]};
    keys.clear();
    for (member m : obj.members()) keys.push_back(m.key);
    if (keys.size() <= 8) {
      for (std::size_t i = 0; i < keys.size(); ++i)
        for (std::size_t j = i + 1; j < keys.size(); ++j)
          if (keys[i] == keys[j]) return true;
      return false;
    }
    std::sort(keys.begin(), keys.end());
    return std::adjacent_find(keys.begin(), keys.end()) != keys.end();
  }
};

}  // namespace detail

MCPCORE_DECL const std::error_category& json_category() noexcept {
  static const detail::json_category_impl category;
  return category;
}

struct document::impl {
  explicit impl(parse_options o) : options(o) {
    options.max_depth = std::clamp<std::uint32_t>(options.max_depth, 1, max_supported_depth);
    options.max_bytes = std::min<std::size_t>(options.max_bytes, std::numeric_limits<std::uint32_t>::max());
  }

  // Drops capacity grown by an earlier, larger text once a text that fits the retention
  // budget arrives.
  void maybe_shrink(std::size_t next_size) {
    if (next_size > options.retain_bytes) return;
    if (buffer.capacity() > options.retain_bytes + padding) {
      std::string{}.swap(buffer);
    }
    if (parser.capacity() > options.retain_bytes) {
      parser = simdjson::dom::parser{};
      std::vector<detail::node>{}.swap(tape);
    }
  }

  result<value> parse(const char* data, std::size_t size) {
    tape.clear();
    root = nullptr;
    if (size > options.max_bytes) return fail(make_error_code(json_errc::too_large));
    // The tape walk enforces the exact limit. simdjson's own count differs by one (it counts
    // the root and skips empty containers), so it gets a margin: it only bounds the walk's
    // recursion, it never decides.
    const std::size_t simdjson_depth = std::size_t{options.max_depth} + 2;
    if (parser.capacity() < size || parser.max_depth() != simdjson_depth) {
      if (parser.allocate(std::max<std::size_t>(size, 64), simdjson_depth) != simdjson::SUCCESS)
        throw std::bad_alloc{};
    }
    simdjson::dom::element root_element;
    if (auto e = parser.parse(reinterpret_cast<const std::uint8_t*>(data), size, false).get(root_element))
      return fail(make_error_code(detail::from_simdjson(e)));
    detail::tape_builder builder{tape, keys, options.max_depth, options.allow_duplicate_keys};
    if (auto ec = builder.walk(root_element); ec != json_errc{}) {
      tape.clear();
      return fail(make_error_code(ec));
    }
    if (builder.needs_spelling) attach_spellings(data, size);
    root = tape.data();
    return value{root};
  }

  // Points every number whose value does not determine its spelling (non-integers, zero) at its
  // source text. The scanner meets the numbers in the order the tape holds them.
  void attach_spellings(const char* data, std::size_t size) {
    detail::node* n = tape.data();
    detail::node* const last = n + tape.size();
    detail::scan_numbers(data, data + size, [&](const char* text, std::size_t len) {
      while (n < last && n->kind != kind::number) ++n;
      MCPCORE_ASSERT(n < last);  // the scanner meets exactly the tape's numbers
      if (n == last) return;
      const bool spelled = (n->flags & (detail::node_int64 | detail::node_uint64)) == 0 ||
                           ((n->flags & detail::node_int64) != 0 && n->i64 == 0);
      if (spelled) {
        n->text = text;
        n->size = static_cast<std::uint32_t>(len);
        n->flags |= detail::node_text;
      }
      ++n;
    });
  }

  parse_options options;
  simdjson::dom::parser parser;
  std::string buffer;  // padded copy of the text for parse()
  std::vector<detail::node> tape;
  std::vector<std::string_view> keys;  // scratch for the duplicate-key check
  const detail::node* root = nullptr;
};

MCPCORE_DECL document::document() : document(parse_options{}) {}
MCPCORE_DECL document::document(parse_options options) : impl_(new impl(options)) {}
MCPCORE_DECL document::document(document&& other) noexcept : impl_(std::exchange(other.impl_, nullptr)) {}
MCPCORE_DECL document& document::operator=(document&& other) noexcept {
  if (this != &other) {
    delete impl_;
    impl_ = std::exchange(other.impl_, nullptr);
  }
  return *this;
}
MCPCORE_DECL document::~document() { delete impl_; }

MCPCORE_DECL result<value> document::parse(std::string_view text) {
  impl_->maybe_shrink(text.size());
  if (text.size() > impl_->options.max_bytes) return fail(make_error_code(json_errc::too_large));
  std::string& buf = impl_->buffer;
  buf.resize_and_overwrite(text.size() + padding, [&](char* p, std::size_t n) {
    std::memcpy(p, text.data(), text.size());
    std::memset(p + text.size(), 0, padding);
    return n;
  });
  return impl_->parse(buf.data(), text.size());
}

MCPCORE_DECL result<value> document::parse_padded(std::string_view text, std::size_t capacity) {
  MCPCORE_ASSERT(capacity >= text.size() + padding);
  (void)capacity;
  impl_->maybe_shrink(text.size());
  return impl_->parse(text.data(), text.size());
}

MCPCORE_DECL value document::root() const noexcept { return value{impl_ ? impl_->root : nullptr}; }

MCPCORE_DECL const parse_options& document::options() const noexcept { return impl_->options; }

MCPCORE_DECL std::optional<std::int64_t> value::to_int64() const noexcept {
  if (!is_number()) return std::nullopt;
  if ((node_->flags & detail::node_int64) != 0) {
    return (node_->flags & detail::node_text) != 0 ? 0 : node_->i64;
  }
  return std::nullopt;
}

MCPCORE_DECL std::optional<std::uint64_t> value::to_uint64() const noexcept {
  if (!is_number()) return std::nullopt;
  if ((node_->flags & detail::node_uint64) != 0) return node_->u64;
  if ((node_->flags & detail::node_int64) != 0) {
    const std::int64_t v = (node_->flags & detail::node_text) != 0 ? 0 : node_->i64;
    if (v >= 0) return static_cast<std::uint64_t>(v);
  }
  return std::nullopt;
}

MCPCORE_DECL std::optional<double> value::to_double() const noexcept {
  if (!is_number()) return std::nullopt;
  if ((node_->flags & detail::node_uint64) != 0) return static_cast<double>(node_->u64);
  if ((node_->flags & detail::node_int64) != 0) {
    if ((node_->flags & detail::node_text) != 0) return node_->text[0] == '-' ? -0.0 : 0.0;
    return static_cast<double>(node_->i64);
  }
  double d = 0;
  const auto r = std::from_chars(node_->text, node_->text + node_->size, d);
  // The parser refused every number that overflows a double, so out of range here means the
  // value underflowed: its nearest double is a signed zero.
  if (r.ec == std::errc::result_out_of_range) return node_->text[0] == '-' ? -0.0 : 0.0;
  if (r.ec != std::errc{}) return std::nullopt;
  return d;
}

MCPCORE_DECL value value::find(std::string_view key) const noexcept {
  for (member m : members())
    if (m.key == key) return m.value();
  return {};
}

}  // namespace json
MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_JSON_IPP
