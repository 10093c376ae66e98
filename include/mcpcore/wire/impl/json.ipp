// SPDX-License-Identifier: Apache-2.0
// JSON parsing: simdjson's DOM parser validates, then a walk records mcpcore's own tape.
#ifndef MCPCORE_IMPL_JSON_IPP
#define MCPCORE_IMPL_JSON_IPP

#include <mcpcore/wire/json.hpp>

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>
#include <memory>
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
MCPCORE_INTERNAL json_errc from_simdjson(simdjson::error_code e) noexcept {
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
        // Never null: the text is valid, so every string has its closing quote.
        const void* q = std::memchr(p, '"', static_cast<std::size_t>(end - p));
        p = static_cast<const char*>(q);
        // A quote preceded by an odd run of backslashes is escaped.
        // The run cannot pass the opening quote, so p[-1 - n] stays inside the text.
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

// The tape's storage: grown, never zero-filled (every node is written before it is read).
struct node_buffer {
  std::unique_ptr<node[]> data;
  std::size_t capacity = 0;
  std::size_t size = 0;

  node* prepare(std::size_t n) {
    if (n > capacity) {
      const std::size_t grown = std::max(n, capacity + capacity / 2);
      data = std::make_unique_for_overwrite<node[]>(grown);
      capacity = grown;
    }
    size = 0;
    return data.get();
  }
  void release() noexcept {
    data.reset();
    capacity = 0;
    size = 0;
  }
};

// Converts simdjson's DOM tape into ours in one linear pass, without recursion.
//
// simdjson documents its tape format (doc/tape.md, stable since 0.3): one 64-bit word per value,
// the type character in the top byte; strings point into a buffer of length-prefixed bytes;
// numbers take a second word; containers point past their end. dom::document exposes the tape
// and the string buffer as members. Reading them directly is several times faster than walking
// dom::element (perf: the element walk was most of a typical message's parse); the fuzzers
// check every result against simdjson's own accept/refuse decision.
struct tape_builder {
  struct frame {
    std::size_t at;       // our node of the open container
    std::uint32_t count;  // elements, or members (counted at their keys)
    bool object;
    bool expect_key;
  };

  node_buffer& tape;
  std::vector<frame>& stack;
  std::vector<std::string_view>& keys;
  std::uint32_t max_depth;
  bool allow_duplicate_keys;
  bool needs_spelling = false;
  detail::node* base = nullptr;  // the tape's first node during the build
  detail::node* out = nullptr;   // next node to write
  frame* top = nullptr;          // innermost open container, or null at the root

  static constexpr std::uint64_t payload_mask = 0x00FFFFFFFFFFFFFFULL;

  json_errc build(const simdjson::dom::document& doc) {
    const std::uint64_t* t = doc.tape.get();
    const std::uint8_t* strings = doc.string_buf.get();
    // t[0] is the root word; its payload is one past the closing root word.
    const std::size_t last = static_cast<std::size_t>(t[0] & payload_mask) - 1;
    // At most one node per tape word: size the tape once and write through a pointer. Nodes are
    // written in place; assembling one on the stack and copying it cost a store-forwarding
    // stall per value (perf: most of the build time).
    base = tape.prepare(last);
    out = base;
    stack.clear();
    stack.reserve(max_depth);  // keeps `top` valid across pushes
    top = nullptr;
    for (std::size_t i = 1; i < last;) {
      const std::uint64_t word = t[i];
      const char type = static_cast<char>(word >> 56);
      switch (type) {
        case '{':
        case '[':
          if (stack.size() == max_depth) return json_errc::depth_exceeded;
          begin_value();
          top = &stack.emplace_back(frame{static_cast<std::size_t>(out - base), 0, type == '{', true});
          ++out;  // completed by close()
          ++i;
          continue;
        case '}':
        case ']':
          if (auto ec = close(); ec != json_errc{}) return ec;
          ++i;
          continue;
        case '"': {
          if (top != nullptr && top->expect_key && top->object) {
            ++top->count;  // a key: counts the member
            top->expect_key = false;
          } else {
            begin_value();
          }
          const std::uint8_t* at = strings + (word & payload_mask);
          std::uint32_t len = 0;
          std::memcpy(&len, at, sizeof len);
          detail::node& n = push(kind::string, 0);
          // Points into the parser's string buffer: valid until the next parse, like every view.
          n.text = reinterpret_cast<const char*>(at + sizeof len);
          n.size = len;
          ++i;
          continue;
        }
        case 'l': {
          begin_value();
          const auto v = static_cast<std::int64_t>(t[i + 1]);
          push(kind::number, detail::node_int64).i64 = v;
          needs_spelling |= v == 0;  // "0" or "-0"
          i += 2;
          continue;
        }
        case 'u':
          begin_value();
          push(kind::number, detail::node_uint64).u64 = t[i + 1];
          i += 2;
          continue;
        case 'd':
          begin_value();
          push(kind::number, 0).text = nullptr;  // spelled by attach_spellings
          needs_spelling = true;
          i += 2;
          continue;
        case 't':
        case 'f':
          begin_value();
          push(kind::boolean, type == 't' ? detail::node_true : 0);
          ++i;
          continue;
        case 'n':
          begin_value();
          push(kind::null, 0);
          ++i;
          continue;
        default:
          MCPCORE_ASSERT(false);  // simdjson produced a tape word its format does not define
          return json_errc::syntax_error;
      }
    }
    tape.size = static_cast<std::size_t>(out - base);
    return stack.empty() ? json_errc{} : json_errc::syntax_error;
  }

  detail::node& push(kind k, std::uint8_t flags) {
    detail::node& n = *out++;
    n.span = 1;
    n.kind = k;
    n.flags = flags;
    return n;
  }

  // A value (not a key) starts inside the innermost container.
  void begin_value() {
    if (top == nullptr) return;
    if (top->object) {
      top->expect_key = true;  // after this value, the next string is a key
    } else {
      ++top->count;
    }
  }

  json_errc close() {
    const frame f = *top;
    stack.pop_back();
    top = stack.empty() ? nullptr : &stack.back();
    detail::node& n = base[f.at];
    n.kind = f.object ? kind::object : kind::array;
    n.size = f.count;
    n.span = static_cast<std::uint32_t>((out - base) - static_cast<std::ptrdiff_t>(f.at));
    if (f.object && !allow_duplicate_keys && f.count > 1 && has_duplicate_key(f.at))
      return json_errc::duplicate_key;
    return {};
  }

  // Small objects compare pairwise (length and first byte before the bytes); larger ones sort
  // their keys, so hostile inputs with many members cost O(n log n), not O(n^2).
  bool has_duplicate_key(std::size_t at) {
    const detail::node* obj = base + at;
    const std::uint32_t count = obj->size;
    constexpr std::uint32_t small = 16;
    if (count <= small) {
      const detail::node* key[small];
      const detail::node* k = obj + 1;
      // The next key follows this key node and its value's whole subtree.
      for (std::uint32_t i = 0; i < count; ++i, k += 1 + k[1].span) key[i] = k;
      for (std::uint32_t i = 0; i < count; ++i) {
        for (std::uint32_t j = i + 1; j < count; ++j) {
          const detail::node& a = *key[i];
          const detail::node& b = *key[j];
          if (a.size == b.size &&
              (a.size == 0 || (a.text[0] == b.text[0] && std::memcmp(a.text, b.text, a.size) == 0)))
            return true;
        }
      }
      return false;
    }
    keys.clear();
    for (member m : value{obj}.members()) keys.push_back(m.key);
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
    // Node sizes and spans are 32-bit: no text may be longer than that.
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
      tape.release();
    }
  }

  result<value> parse(const char* data, std::size_t size) {
    // Reset first: the buffers are about to be reused, so after a failure root() is absent, never a
    // dangling previous root.
    tape.size = 0;
    root = nullptr;
    if (size > options.max_bytes) return fail(make_error_code(json_errc::too_large));
    // The tape build enforces the exact limit. simdjson's own count differs by one (it counts
    // the root and skips empty containers), so it gets a margin: it bounds simdjson's work on a
    // hostile text, it never decides.
    const std::size_t simdjson_depth = std::size_t{options.max_depth} + 2;
    if (parser.capacity() < size || parser.max_depth() != simdjson_depth) {
      if (parser.allocate(std::max<std::size_t>(size, 64), simdjson_depth) != simdjson::SUCCESS)
        throw std::bad_alloc{};
    }
    // `false`: no reallocation, the text already carries `padding` bytes after it.
    if (auto e = parser.parse(reinterpret_cast<const std::uint8_t*>(data), size, false).error())
      return fail(make_error_code(detail::from_simdjson(e)));
    detail::tape_builder builder{tape, stack, keys, options.max_depth, options.allow_duplicate_keys};
    if (auto ec = builder.build(parser.doc); ec != json_errc{}) {
      tape.size = 0;
      return fail(make_error_code(ec));
    }
    if (builder.needs_spelling) attach_spellings(data, size);
    root = tape.data.get();
    return value{root};
  }

  // Points every number whose value does not determine its spelling (non-integers, zero) at its
  // source text. The scanner meets the numbers in the order the tape holds them.
  // The spellings point into `data`: `buffer`, or the caller's text for parse_padded, which must
  // then outlive the views.
  void attach_spellings(const char* data, std::size_t size) {
    detail::node* n = tape.data.get();
    detail::node* const last = n + tape.size;
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
  detail::node_buffer tape;
  std::vector<detail::tape_builder::frame> stack;  // open containers during the build
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
    // An empty view may have a null data(), which memcpy must not be given even for 0 bytes.
    if (!text.empty()) std::memcpy(p, text.data(), text.size());
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
    // With node_text the union holds the spelling, not i64; only zeros carry both flags.
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

// The first member of that name (duplicates exist only where a document allows them).
MCPCORE_DECL value value::find(std::string_view key) const noexcept {
  for (member m : members())
    if (m.key == key) return m.value();
  return {};
}

}  // namespace json
MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_JSON_IPP
