// SPDX-License-Identifier: Apache-2.0
// The input-schema compiler (keywords, lints, $ref resolution, patterns) and the validator.
#ifndef MCPCORE_IMPL_SCHEMA_IPP
#define MCPCORE_IMPL_SCHEMA_IPP

#include <mcpcore/dispatch/schema.hpp>

#include <mcpcore/detail/ascii.hpp>

#include <mcpcore/wire/json_writer.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <deque>
#include <locale>
#include <memory>
#include <regex>
#include <string>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE
namespace schema {

namespace detail {

/// Largest size a `pattern` may expand to, in atoms after counted repetition (`a{3}` counts 3,
/// `(ab){10}` 20). std::regex and the built-in matcher both build an automaton state or more per
/// atom and match in time proportional to subject length times states, so this bounds both the
/// compiled size and the cost of one match (docs/schema.md, "Caps").
inline constexpr std::uint64_t max_pattern_expansion = 1000;

/// Lenient mode only: how many `anyOf`/`oneOf` alternatives one `validate` call may evaluate.
/// Alternatives that refer to further alternatives can cost exponential time; past the budget
/// the instance is refused with a violation at the root. Strict alternatives are required-only,
/// so strict validation is linear and needs no budget.
inline constexpr std::uint64_t max_alternative_visits = std::uint64_t{1} << 22;

/// Longest `const`/`enum` text (compact JSON) quoted in a violation reason; longer ones are not
/// quoted.
inline constexpr std::size_t max_quoted_constant_bytes = 128;

inline constexpr std::uint32_t no_node = 0xFFFFFFFFU;

// ---- an owned copy of the schema's JSON ---------------------------------------------------------

// The compiled schema keeps `const`, `enum` and numeric bounds as json::value views. They point
// into this copy of the source tape: the nodes (the same layout json::document produces) and the
// bytes of every string and spelled number, so the caller's document may go away.
struct owned_json {
  std::unique_ptr<json::detail::node[]> nodes;
  std::unique_ptr<char[]> text;

  [[nodiscard]] json::value root() const noexcept { return json::value{nodes.get()}; }
};

inline bool has_text(const json::detail::node& n) noexcept {
  return n.kind == json::kind::string ||
         (n.kind == json::kind::number && (n.flags & json::detail::node_text) != 0);
}

inline owned_json copy_json(json::value v) {
  const json::detail::node* src = v.node();
  const std::size_t count = src->span;
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < count; ++i)
    if (has_text(src[i])) bytes += src[i].size;
  owned_json out;
  out.nodes = std::make_unique_for_overwrite<json::detail::node[]>(count);
  out.text = std::make_unique_for_overwrite<char[]>(bytes == 0 ? 1 : bytes);
  char* p = out.text.get();
  for (std::size_t i = 0; i < count; ++i) {
    json::detail::node n = src[i];
    if (has_text(n)) {
      if (n.size != 0) std::memcpy(p, n.text, n.size);
      n.text = p;
      p += n.size;
    }
    out.nodes[i] = n;
  }
  return out;
}

// ---- numbers ------------------------------------------------------------------------------------

// A JSON number as the parser classified it: an integer literal (int64 or above INT64_MAX) or
// anything else, read as the nearest double.
struct number {
  enum class type : std::uint8_t { i64, u64, f64 } kind = type::i64;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double d = 0;
};

inline number read_number(json::value v) noexcept {
  number n;
  if (auto i = v.to_int64()) {
    n.i = *i;
  } else if (auto u = v.to_uint64()) {
    n.kind = number::type::u64;
    n.u = *u;
  } else {
    n.kind = number::type::f64;
    n.d = v.to_double().value_or(0.0);
  }
  return n;
}

template <class T>
constexpr int three_way(T a, T b) noexcept {
  return a < b ? -1 : (b < a ? 1 : 0);
}

// Exact comparison of a double with an integer: no rounding of either side.
inline int compare_double_int(double d, std::int64_t i) noexcept {
  constexpr double two63 = 9223372036854775808.0;
  if (d < -two63) return -1;
  if (d >= two63) return 1;
  const double t = std::trunc(d);
  const auto ti = static_cast<std::int64_t>(t);
  if (ti != i) return three_way(ti, i);
  return three_way(d - t, 0.0);
}

inline int compare_double_uint(double d, std::uint64_t u) noexcept {
  constexpr double two64 = 18446744073709551616.0;
  if (d < 0) return -1;
  if (d >= two64) return 1;
  const double t = std::trunc(d);
  const auto tu = static_cast<std::uint64_t>(t);
  if (tu != u) return three_way(tu, u);
  return three_way(d - t, 0.0);
}

// Compares two numbers by value: integers exactly, doubles as doubles, mixed pairs exactly.
inline int compare(const number& a, const number& b) noexcept {
  using t = number::type;
  switch (a.kind) {
    case t::i64:
      switch (b.kind) {
        case t::i64:
          return three_way(a.i, b.i);
        case t::u64:
          return a.i < 0 ? -1 : three_way(static_cast<std::uint64_t>(a.i), b.u);
        case t::f64:
          return -compare_double_int(b.d, a.i);
      }
      break;
    case t::u64:
      switch (b.kind) {
        case t::i64:
          return b.i < 0 ? 1 : three_way(a.u, static_cast<std::uint64_t>(b.i));
        case t::u64:
          return three_way(a.u, b.u);
        case t::f64:
          return -compare_double_uint(b.d, a.u);
      }
      break;
    case t::f64:
      switch (b.kind) {
        case t::i64:
          return compare_double_int(a.d, b.i);
        case t::u64:
          return compare_double_uint(a.d, b.u);
        case t::f64:
          return three_way(a.d, b.d);
      }
      break;
  }
  return 0;
}

// JSON equality (JSON Schema's): numbers by value (1 == 1.0), strings by code units, arrays in
// order, objects as unordered member sets.
inline bool json_equal(json::value a, json::value b) noexcept {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case json::kind::null:
      return true;
    case json::kind::boolean:
      return a.as_bool() == b.as_bool();
    case json::kind::number:
      return compare(read_number(a), read_number(b)) == 0;
    case json::kind::string:
      return a.as_string() == b.as_string();
    case json::kind::array: {
      if (a.size() != b.size()) return false;
      auto bi = b.elements().begin();
      for (json::value e : a.elements()) {
        if (!json_equal(e, *bi)) return false;
        ++bi;
      }
      return true;
    }
    case json::kind::object: {
      if (a.size() != b.size()) return false;
      for (json::member m : a.members()) {
        const json::value other = b.find(m.key);
        if (!other.exists() || !json_equal(m.value(), other)) return false;
      }
      // Both directions, for documents parsed with duplicate keys allowed.
      for (json::member m : b.members())
        if (!a.find(m.key).exists()) return false;
      return true;
    }
  }
  return false;
}

// ---- text helpers -------------------------------------------------------------------------------

// Appends `name` as one JSON pointer segment (RFC 6901: "~" -> "~0", "/" -> "~1").
inline void append_segment(std::string& out, std::string_view name) {
  for (char c : name) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
}

inline std::string child_path(const std::string& base, std::string_view name) {
  std::string out = base;
  out += '/';
  append_segment(out, name);
  return out;
}

inline std::string json_quoted(std::string_view s) {
  std::string out;
  json::append_escaped(out, s);
  return out;
}

inline std::string compact(json::value v) {
  std::string out;
  json::writer w{out};
  w.value(v);
  return out;
}

// Unicode code points of valid UTF-8 (the parser validated it): bytes that are not continuation
// bytes.
inline std::size_t code_points(std::string_view s) noexcept {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0U) != 0x80U ? 1 : 0;
  return n;
}

// Splits a JSON pointer into unescaped segments; nullopt when it is malformed.
inline std::optional<std::vector<std::string>> split_pointer(std::string_view p) {
  std::vector<std::string> segments;
  if (p.empty()) return segments;
  if (p.front() != '/') return std::nullopt;
  std::size_t i = 1;
  while (true) {
    std::string seg;
    while (i < p.size() && p[i] != '/') {
      if (p[i] == '~') {
        if (i + 1 >= p.size() || (p[i + 1] != '0' && p[i + 1] != '1')) return std::nullopt;
        seg += p[i + 1] == '0' ? '~' : '/';
        i += 2;
      } else {
        seg += p[i++];
      }
    }
    segments.push_back(std::move(seg));
    if (i >= p.size()) break;
    ++i;  // the '/'
  }
  return segments;
}

// Estimates how many atoms `pattern` expands to once counted repetitions are unrolled (the
// measure `max_pattern_expansion` caps), saturating at `cap + 1`. Over-estimates rather than
// under-estimates; std::regex itself judges the syntax afterwards.
inline std::uint64_t pattern_expansion(std::string_view p, std::uint64_t cap) {
  const std::uint64_t limit = cap + 1;
  const auto add = [limit](std::uint64_t a, std::uint64_t b) { return std::min(limit, a + b); };
  const auto mul = [limit](std::uint64_t a, std::uint64_t b) -> std::uint64_t {
    if (a == 0 || b == 0) return 0;
    return a > limit / b ? limit : std::min(limit, a * b);
  };
  struct frame {
    std::uint64_t total = 0;  // atoms of the group so far
    std::uint64_t last = 0;   // atoms of the last atom, the operand of a following quantifier
  };
  std::vector<frame> open;
  frame cur;
  const auto atom = [&](std::uint64_t size) {
    cur.total = add(cur.total, size);
    cur.last = size;
  };
  const std::size_t n = p.size();
  std::size_t i = 0;
  // libstdc++ reads a brace's digits into a `long` without an overflow check (undefined
  // behaviour past 18 digits), even for a brace it then refuses: a run longer than
  // `max_count_digits` makes the whole pattern too complex before std::regex sees it.
  constexpr std::size_t max_count_digits = 9;
  bool overlong = false;
  const auto read_count = [&](std::size_t& j, bool& any) {
    std::uint64_t v = 0;
    const std::size_t first = j;
    while (j < n && p[j] >= '0' && p[j] <= '9') {
      v = std::min(limit, v * 10 + static_cast<std::uint64_t>(p[j] - '0'));
      ++j;
    }
    any = j > first;
    overlong = overlong || j - first > max_count_digits;
    return v;
  };
  while (i < n) {
    const char c = p[i];
    switch (c) {
      case '\\':
        atom(1);
        i += 2;
        break;
      case '[': {
        std::size_t j = i + 1;
        if (j < n && p[j] == '^') ++j;
        while (j < n && p[j] != ']') j += p[j] == '\\' ? std::size_t{2} : std::size_t{1};
        i = j + 1;
        atom(1);
        break;
      }
      case '(':
        open.push_back(cur);
        cur = {};
        ++i;
        if (i < n && p[i] == '?') {
          ++i;
          if (i < n && (p[i] == ':' || p[i] == '=' || p[i] == '!')) ++i;
        }
        break;
      case ')': {
        const std::uint64_t inner = cur.total;
        if (!open.empty()) {
          cur = open.back();
          open.pop_back();
        }
        atom(add(inner, 1));
        ++i;
        break;
      }
      case '*':
      case '?':
      case '+': {
        // The quantified atom stays the operand of anything that follows (libstdc++ accepts
        // stacked quantifiers; the compiler refuses them, the estimate still counts them).
        const std::uint64_t quantified = add(c == '+' ? add(cur.last, cur.last) : cur.last, 2);
        const std::uint64_t without_last = cur.total >= limit ? limit : cur.total - cur.last;
        cur.total = add(without_last, quantified);
        cur.last = quantified;
        ++i;
        if (i < n && p[i] == '?') ++i;  // lazy
        break;
      }
      case '{': {
        std::size_t j = i + 1;
        bool any_low = false;
        const std::uint64_t low = read_count(j, any_low);
        std::uint64_t copies = low;
        bool ok = any_low;
        if (ok && j < n && p[j] == ',') {
          ++j;
          bool any_high = false;
          const std::uint64_t high = read_count(j, any_high);
          copies = any_high ? std::max(low, high) : add(low, 1);
        }
        ok = ok && j < n && p[j] == '}';
        if (!ok) {  // not a quantifier; std::regex decides whether it is valid
          atom(1);
          ++i;
          break;
        }
        const std::uint64_t without_last = cur.total >= limit ? limit : cur.total - cur.last;
        const std::uint64_t quantified = add(mul(cur.last, copies), 2);
        cur.total = add(without_last, quantified);
        cur.last = quantified;
        i = j + 1;
        if (i < n && p[i] == '?') ++i;  // lazy
        break;
      }
      case '|':
        cur.total = add(cur.total, 2);
        cur.last = 0;
        ++i;
        break;
      default:
        atom(1);
        ++i;
        break;
    }
  }
  if (overlong) return limit;
  std::uint64_t total = cur.total;
  for (const frame& f : open) total = add(total, f.total);
  return total;
}

// Whether `p` repeats a quantifier ("a**", "a{2}{3}", "a*?+"): not ECMAScript ("nothing to
// repeat"), though libstdc++ accepts it, and a way to multiply the automaton's size. A '?'
// right after a quantifier makes it lazy and is not a repetition.
inline bool has_stacked_quantifier(std::string_view p) noexcept {
  enum class after : std::uint8_t { other, quantifier, lazy } state = after::other;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '*' || c == '+' || c == '?' || c == '{') {
      if (state == after::quantifier && c == '?') {
        state = after::lazy;
        continue;
      }
      if (state != after::other) return true;
      state = after::quantifier;
      if (c == '{') {
        while (i < p.size() && p[i] != '}') ++i;
      }
      continue;
    }
    state = after::other;
    // Skipped: an escaped character, and the '?' of "(?:", "(?=", "(?!" (not a quantifier).
    const bool skip_next = c == '\\' || (c == '(' && i + 1 < p.size() && p[i + 1] == '?');
    if (skip_next) {
      ++i;
    } else if (c == '[') {
      ++i;
      if (i < p.size() && p[i] == '^') ++i;
      while (i < p.size() && p[i] != ']') i += p[i] == '\\' ? std::size_t{2} : std::size_t{1};
    }
  }
  return false;
}

// Whether `p` has a back-reference (`\1`..`\9`, inside a class or not). Refused before
// std::regex sees the pattern: libstdc++ reads the reference's digits without an overflow check.
inline bool has_back_reference(std::string_view p) noexcept {
  for (std::size_t i = 0; i + 1 < p.size(); ++i) {
    if (p[i] != '\\') continue;
    if (p[i + 1] >= '1' && p[i + 1] <= '9') return true;
    ++i;  // the escaped character
  }
  return false;
}

// Whether `p` has a '|' outside every group (escapes and classes skipped). In ECMAScript a ']'
// right after '[' or '[^' closes the class (`[]` matches nothing, `[^]` any character). A class
// is taken to end at its first unescaped ']', never later than it really does, so a '|' is at
// worst wrongly counted as top-level, which only keeps the search wrapper whole.
inline bool has_top_level_alternation(std::string_view p) noexcept {
  int depth = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\') {
      ++i;
    } else if (c == '[') {
      ++i;
      if (i < p.size() && p[i] == '^') ++i;
      while (i < p.size() && p[i] != ']') i += p[i] == '\\' ? std::size_t{2} : std::size_t{1};
    } else if (c == '(') {
      ++depth;
    } else if (c == ')') {
      --depth;
    } else if (c == '|' && depth == 0) {
      return true;
    }
  }
  return false;
}

// Whether `p` ends with an unescaped '$'.
inline bool ends_with_anchor(std::string_view p) noexcept {
  if (p.empty() || p.back() != '$') return false;
  std::size_t backslashes = 0;
  while (backslashes + 1 < p.size() && p[p.size() - 2 - backslashes] == '\\') ++backslashes;
  return backslashes % 2 == 0;
}

// The full-match form of an unanchored search for `p`: "[\s\S]*(?:p)[\s\S]*", without the
// halves an anchor at that end makes redundant (`^` and `$` only match at the ends of the
// subject: no multiline mode).
inline std::string search_as_match(std::string_view p) {
  const bool alternation = has_top_level_alternation(p);
  const bool start = !alternation && p.starts_with('^');
  const bool end = !alternation && ends_with_anchor(p);
  std::string out = start ? "(?:" : "[\\s\\S]*(?:";
  out.append(p);
  out += end ? ")" : ")[\\s\\S]*";
  return out;
}

inline std::regex::flag_type regex_flags() noexcept {
#if defined(__GLIBCXX__)
  // libstdc++'s polynomial mode: a Thompson-style simulation instead of backtracking, so
  // matching is linear in the subject (times the automaton's size) and never recursive in it.
  // It refuses back-references, which the compile step refuses first anyway.
  return std::regex::ECMAScript | std::regex::nosubs | std::regex_constants::__polynomial;
#else
  return std::regex::ECMAScript | std::regex::nosubs;
#endif
}

// A std::regex of `text` in the classic locale, so that classes and word boundaries do not
// depend on the program's global locale.
inline std::regex make_regex(const std::string& text) {
  std::regex r;
  r.imbue(std::locale::classic());
  r.assign(text, regex_flags());
  return r;
}

// ---- the pattern matcher ------------------------------------------------------------------------

// A compiled `pattern` for the validator: the ECMAScript syntax std::regex accepts, minus a few
// rare forms, matched by simulating the automaton over the string's bytes (Thompson's
// construction, run as a Pike VM without captures). Matching is linear in the string times the
// program, uses fixed buffers on the stack and never allocates, which std::regex cannot promise
// (libstdc++ allocates its matcher state on every call). std::regex stays the judge of syntax:
// a pattern is parsed here only after std::regex accepted it, and patterns outside this subset
// (lookahead, POSIX bracket classes, `\cX`, `\u` above 0xFF, unusual class ranges) are left to
// std::regex. Semantics follow libstdc++'s ECMAScript mode with the classic locale: bytes, not
// code points; `.` is any byte but '\n' and '\r'; `\d`, `\w`, `\s` are ASCII; `^` and `$` match
// at the ends of the string only.
class byte_regex {
 public:
  /// Largest program (instructions) this engine runs; larger patterns use std::regex.
  static constexpr std::size_t max_program = 4096;

  /// The program for `pattern`, or nullopt when the pattern is outside the engine's subset (or
  /// its program too large). @pre std::regex accepted `pattern`.
  static std::optional<byte_regex> compile(std::string_view pattern) {
    parser p{pattern, 0, false, {}};
    auto tree = p.disjunction();
    if (!tree || p.failed || p.i != pattern.size()) return std::nullopt;
    byte_regex out;
    out.sets_ = std::move(p.sets);
    if (!out.emit(*tree)) return std::nullopt;
    out.program_.push_back({op::match, 0, 0});
    if (out.program_.size() > max_program) return std::nullopt;
    out.anchored_ = out.program_.front().code == op::line_begin;
    return out;
  }

  /// Whether some substring of `s` matches (an unanchored search).
  [[nodiscard]] bool search(std::string_view s) const noexcept {
    constexpr std::size_t words_max = max_program / 64;
    std::uint64_t current[words_max];
    std::uint64_t next[words_max];
    std::uint16_t stack[max_program];
    const std::size_t words = (program_.size() + 63) / 64;
    std::fill_n(current, words, std::uint64_t{0});
    if (add(current, stack, 0, s, 0)) return true;
    for (std::size_t pos = 0; pos < s.size(); ++pos) {
      const auto byte = static_cast<unsigned char>(s[pos]);
      std::fill_n(next, words, std::uint64_t{0});
      for (std::size_t w = 0; w < words; ++w) {
        for (std::uint64_t bits = current[w]; bits != 0; bits &= bits - 1) {
          const std::size_t i = w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
          const instruction& in = program_[i];
          if (in.code == op::byte_set && contains(sets_[in.x], byte) &&
              add(next, stack, static_cast<std::uint16_t>(i + 1), s, pos + 1))
            return true;
        }
      }
      if (anchored_) {
        // Every match starts at position 0: stop when no thread is left.
        if (std::all_of(next, next + words, [](std::uint64_t w) { return w == 0; })) return false;
      } else if (add(next, stack, 0, s, pos + 1)) {  // a match may also start here
        return true;
      }
      std::copy_n(next, words, current);
    }
    return false;
  }

 private:
  using byte_set = std::array<std::uint64_t, 4>;
  enum class op : std::uint8_t {
    byte_set,
    split,
    jump,
    line_begin,
    line_end,
    word_boundary,
    not_word_boundary,
    match
  };
  struct instruction {
    op code;
    std::uint16_t x;  // byte_set: the set; split/jump: the target
    std::uint16_t y;  // split: the second target
  };

  static bool contains(const byte_set& set, unsigned char c) noexcept {
    return ((set[c >> 6U] >> (c & 63U)) & 1U) != 0;
  }
  static void insert(byte_set& set, unsigned char c) noexcept {
    set[c >> 6U] |= std::uint64_t{1} << (c & 63U);
  }
  static bool is_word(unsigned char c) noexcept {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
  }

  // Adds the closure of `start` at position `pos` to `list` (a bitset over instructions);
  // true when it reaches the match instruction.
  bool add(std::uint64_t* list, std::uint16_t* stack, std::uint16_t start, std::string_view s,
           std::size_t pos) const noexcept {
    std::size_t top = 0;
    const auto push = [&](std::uint16_t i) {
      std::uint64_t& word = list[i / 64U];
      const std::uint64_t bit = std::uint64_t{1} << (i % 64U);
      if ((word & bit) != 0) return;
      word |= bit;
      stack[top++] = i;
    };
    push(start);
    while (top > 0) {
      const std::uint16_t i = stack[--top];
      const instruction& in = program_[i];
      const auto after = static_cast<std::uint16_t>(i + 1);
      switch (in.code) {
        case op::byte_set:
          break;  // consumes a byte: the step loop advances it
        case op::match:
          return true;
        case op::jump:
          push(in.x);
          break;
        case op::split:
          push(in.x);
          push(in.y);
          break;
        case op::line_begin:
          if (pos == 0) push(after);
          break;
        case op::line_end:
          if (pos == s.size()) push(after);
          break;
        case op::word_boundary:
        case op::not_word_boundary: {
          const bool left = pos > 0 && is_word(static_cast<unsigned char>(s[pos - 1]));
          const bool right = pos < s.size() && is_word(static_cast<unsigned char>(s[pos]));
          if ((left != right) == (in.code == op::word_boundary)) push(after);
          break;
        }
      }
    }
    return false;
  }

  // ---- parsing: pattern -> tree -> program ----

  struct tree {
    enum class type : std::uint8_t {
      empty,
      set,
      concat,
      alternation,
      repeat,
      line_begin,
      line_end,
      word_boundary,
      not_word_boundary
    };
    type kind = type::empty;
    std::uint16_t set = 0;
    std::uint32_t min = 0, max = 0;  // repeat; max == unbounded for no upper bound
    std::vector<tree> children;
  };
  static constexpr std::uint32_t unbounded = 0xFFFFFFFFU;

  struct parser {
    std::string_view p;
    std::size_t i = 0;
    bool failed = false;
    std::vector<byte_set> sets;

    [[nodiscard]] bool at(char c) const noexcept { return i < p.size() && p[i] == c; }
    std::optional<tree> fail() {
      failed = true;
      return std::nullopt;
    }
    std::uint16_t add_set(const byte_set& s) {
      sets.push_back(s);
      return static_cast<std::uint16_t>(sets.size() - 1);
    }
    tree set_node(const byte_set& s) {
      tree t;
      t.kind = tree::type::set;
      t.set = add_set(s);
      return t;
    }
    static byte_set single(unsigned char c) {
      byte_set s{};
      insert(s, c);
      return s;
    }
    static byte_set complement(byte_set s) {
      for (auto& w : s) w = ~w;
      return s;
    }
    static byte_set class_set(char name) {
      byte_set s{};
      const char lower = static_cast<char>(name | 0x20);
      for (unsigned c = 0; c < 256; ++c) {
        const auto b = static_cast<unsigned char>(c);
        const bool in = lower == 'd'   ? (b >= '0' && b <= '9')
                        : lower == 'w' ? is_word(b)
                                       : (b == ' ' || (b >= '\t' && b <= '\r'));
        if (in) insert(s, b);
      }
      return name == lower ? s : complement(s);
    }
    static bool is_class_escape(char c) noexcept {
      return c == 'd' || c == 'D' || c == 'w' || c == 'W' || c == 's' || c == 'S';
    }

    std::optional<tree> disjunction() {
      std::vector<tree> alternatives;
      while (true) {
        auto a = alternative();
        if (!a) return std::nullopt;
        alternatives.push_back(std::move(*a));
        if (!at('|')) break;
        ++i;
      }
      if (alternatives.size() == 1) return std::move(alternatives.front());
      tree t;
      t.kind = tree::type::alternation;
      t.children = std::move(alternatives);
      return t;
    }

    std::optional<tree> alternative() {
      tree t;
      t.kind = tree::type::concat;
      while (i < p.size() && !at('|') && !at(')')) {
        auto term = this->term();
        if (!term) return std::nullopt;
        t.children.push_back(std::move(*term));
      }
      return t;
    }

    std::optional<tree> term() {
      const char c = p[i];
      tree t;
      if (c == '^' || c == '$') {
        ++i;
        t.kind = c == '^' ? tree::type::line_begin : tree::type::line_end;
        return assertion(std::move(t));
      }
      if (c == '\\' && i + 1 < p.size() && (p[i + 1] == 'b' || p[i + 1] == 'B')) {
        t.kind = p[i + 1] == 'b' ? tree::type::word_boundary : tree::type::not_word_boundary;
        i += 2;
        return assertion(std::move(t));
      }
      auto atom = this->atom();
      if (!atom) return std::nullopt;
      return quantified(std::move(*atom));
    }

    // Assertions take no quantifier (std::regex refuses one; anything else is left to it).
    std::optional<tree> assertion(tree t) {
      if (i < p.size() && (p[i] == '*' || p[i] == '+' || p[i] == '?' || p[i] == '{')) return fail();
      return t;
    }

    std::optional<tree> atom() {
      const char c = p[i];
      switch (c) {
        case '(': {
          ++i;
          if (at('?')) {
            if (i + 1 < p.size() && p[i + 1] == ':') {
              i += 2;
            } else {
              return fail();  // lookahead: left to std::regex
            }
          }
          auto inner = disjunction();
          if (!inner || !at(')')) return fail();
          ++i;
          return inner;
        }
        case '[':
          return bracket();
        case '.': {
          ++i;
          byte_set line_ends{};
          insert(line_ends, '\n');
          insert(line_ends, '\r');
          return set_node(complement(line_ends));
        }
        case '\\': {
          ++i;
          byte_set s{};
          if (!escape(s, false)) return fail();
          return set_node(s);
        }
        case '*':
        case '+':
        case '?':
        case '{':
        case ')':
        case '|':
          return fail();  // not an atom (std::regex refused these already)
        default:
          ++i;
          return set_node(single(static_cast<unsigned char>(c)));
      }
    }

    // Reads the escape after a '\' into `out` (one byte, or a class); false when unsupported.
    bool escape(byte_set& out, bool in_bracket) {
      if (i >= p.size()) return false;
      const char c = p[i++];
      if (is_class_escape(c)) {
        const byte_set s = class_set(c);
        for (std::size_t w = 0; w < out.size(); ++w) out[w] |= s[w];
        return true;
      }
      const auto byte = escaped_byte(c, in_bracket);
      if (!byte) return false;
      insert(out, *byte);
      return true;
    }

    // The byte an escape (other than a class) stands for; nullopt when left to std::regex.
    std::optional<unsigned char> escaped_byte(char c, bool in_bracket) {
      switch (c) {
        case '0':
          return '\0';
        case 'f':
          return '\f';
        case 'n':
          return '\n';
        case 'r':
          return '\r';
        case 't':
          return '\t';
        case 'v':
          return '\v';
        case 'b':
          return in_bracket ? std::optional<unsigned char>{'\b'} : std::nullopt;
        case 'B':
        case 'c':  // libstdc++ reads "\cX" as "X", not as a control character
          return std::nullopt;
        case 'x':
        case 'u': {
          const std::size_t digits = c == 'x' ? 2 : 4;
          if (i + digits > p.size()) return std::nullopt;
          unsigned value = 0;
          for (std::size_t k = 0; k < digits; ++k) {
            const int h = ::mcpcore::detail::hex_value(p[i + k]);
            if (h < 0) return std::nullopt;
            value = value * 16 + static_cast<unsigned>(h);
          }
          if (value > 0xFF) return std::nullopt;
          i += digits;
          return static_cast<unsigned char>(value);
        }
        default:
          if (c >= '1' && c <= '9') return std::nullopt;  // back-reference
          return static_cast<unsigned char>(c);           // identity escape
      }
    }

    std::optional<tree> bracket() {
      ++i;  // '['
      const bool negated = at('^');
      if (negated) ++i;
      byte_set s{};
      bool first = true;
      while (true) {
        if (i >= p.size()) return fail();
        if (p[i] == ']') {  // ECMAScript: even first, ']' closes the class
          ++i;
          break;
        }
        if (p[i] == '[' && i + 1 < p.size() &&
            (p[i + 1] == ':' || p[i + 1] == '.' || p[i + 1] == '='))
          return fail();  // POSIX class forms: left to std::regex
        const bool dash = p[i] == '-';
        // One item: a byte (possibly the start of a range) or a class escape.
        std::optional<unsigned char> low;
        if (p[i] == '\\') {
          ++i;
          if (i < p.size() && is_class_escape(p[i])) {
            if (!escape(s, true)) return fail();
            if (at('-') && i + 1 < p.size() && p[i + 1] != ']') return fail();  // "[\d-z]"
            first = false;
            continue;
          }
          if (i >= p.size()) return fail();
          low = escaped_byte(p[i++], true);
          if (!low) return fail();
        } else {
          low = static_cast<unsigned char>(p[i++]);
        }
        // A literal '-' only first or last: elsewhere libstdc++'s reading is left to it.
        if (dash && !first && !at(']')) return fail();
        if (at('-') && i + 1 < p.size() && p[i + 1] != ']') {
          ++i;  // '-'
          std::optional<unsigned char> high;
          if (p[i] == '\\') {
            ++i;
            if (i >= p.size() || is_class_escape(p[i])) return fail();
            high = escaped_byte(p[i++], true);
          } else if (p[i] == '[') {
            return fail();
          } else {
            high = static_cast<unsigned char>(p[i++]);
          }
          if (!high || *high < *low) return fail();
          for (unsigned c = *low; c <= *high; ++c) insert(s, static_cast<unsigned char>(c));
          if (at('-') && i + 1 < p.size() && p[i + 1] != ']') return fail();  // "[a-b-c]"
        } else {
          insert(s, *low);
        }
        first = false;
      }
      return set_node(negated ? complement(s) : s);
    }

    std::optional<tree> quantified(tree atom) {
      if (i >= p.size()) return atom;
      std::uint32_t min = 0, max = 0;
      switch (p[i]) {
        case '*':
          min = 0;
          max = unbounded;
          ++i;
          break;
        case '+':
          min = 1;
          max = unbounded;
          ++i;
          break;
        case '?':
          min = 0;
          max = 1;
          ++i;
          break;
        case '{': {
          ++i;
          const auto low = number();
          if (!low) return fail();
          min = max = *low;
          if (at(',')) {
            ++i;
            if (at('}')) {
              max = unbounded;
            } else {
              const auto high = number();
              if (!high || *high < min) return fail();
              max = *high;
            }
          }
          if (!at('}')) return fail();
          ++i;
          break;
        }
        default:
          return atom;
      }
      if (at('?')) ++i;  // lazy: the same language
      if (i < p.size() && (p[i] == '*' || p[i] == '+' || p[i] == '?' || p[i] == '{')) return fail();
      tree t;
      t.kind = tree::type::repeat;
      t.min = min;
      t.max = max;
      t.children.push_back(std::move(atom));
      return t;
    }

    std::optional<std::uint32_t> number() {
      std::uint32_t v = 0;
      std::size_t digits = 0;
      while (i < p.size() && p[i] >= '0' && p[i] <= '9') {
        if (++digits > 6) return std::nullopt;  // the expansion cap refuses more anyway
        v = v * 10 + static_cast<std::uint32_t>(p[i++] - '0');
      }
      if (digits == 0) return std::nullopt;
      return v;
    }
  };

  std::uint16_t here() const noexcept { return static_cast<std::uint16_t>(program_.size()); }

  // Appends the program of `t`; false when it outgrows max_program.
  bool emit(const tree& t) {
    if (program_.size() > max_program) return false;
    switch (t.kind) {
      case tree::type::empty:
        return true;
      case tree::type::set:
        program_.push_back({op::byte_set, t.set, 0});
        return true;
      case tree::type::line_begin:
        program_.push_back({op::line_begin, 0, 0});
        return true;
      case tree::type::line_end:
        program_.push_back({op::line_end, 0, 0});
        return true;
      case tree::type::word_boundary:
        program_.push_back({op::word_boundary, 0, 0});
        return true;
      case tree::type::not_word_boundary:
        program_.push_back({op::not_word_boundary, 0, 0});
        return true;
      case tree::type::concat:
        for (const tree& c : t.children)
          if (!emit(c)) return false;
        return true;
      case tree::type::alternation: {
        // split L1, next; L1: a; jump end; next: split L2, ...; last alternative; end:
        std::vector<std::size_t> jumps;
        for (std::size_t k = 0; k + 1 < t.children.size(); ++k) {
          const std::size_t split = program_.size();
          program_.push_back({op::split, static_cast<std::uint16_t>(split + 1), 0});
          if (!emit(t.children[k])) return false;
          jumps.push_back(program_.size());
          program_.push_back({op::jump, 0, 0});
          program_[split].y = here();
        }
        if (!emit(t.children.back())) return false;
        for (std::size_t j : jumps) program_[j].x = here();
        return program_.size() <= max_program;
      }
      case tree::type::repeat: {
        const tree& body = t.children.front();
        for (std::uint32_t k = 0; k < t.min; ++k)
          if (!emit(body)) return false;
        if (t.max == unbounded) {
          // loop: split body, out; body; jump loop; out:
          const std::size_t loop = program_.size();
          program_.push_back({op::split, static_cast<std::uint16_t>(loop + 1), 0});
          if (!emit(body)) return false;
          program_.push_back({op::jump, static_cast<std::uint16_t>(loop), 0});
          program_[loop].y = here();
        } else {
          // The optional copies nest, (x(x(x)?)?)?: each split either enters one more copy or
          // leaves for the common end, so a thread's closure stays small whatever the count
          // (copies in sequence, x?x?x?, would put the whole tail in every closure).
          std::vector<std::size_t> splits;
          for (std::uint32_t k = t.min; k < t.max; ++k) {
            splits.push_back(program_.size());
            program_.push_back({op::split, static_cast<std::uint16_t>(program_.size() + 1), 0});
            if (!emit(body)) return false;
          }
          for (std::size_t split : splits) program_[split].y = here();
        }
        return program_.size() <= max_program;
      }
    }
    return false;
  }

  std::vector<instruction> program_;
  std::vector<byte_set> sets_;
  bool anchored_ = false;  // the program starts with '^': matches start at position 0 only
};

// ---- the compiled form --------------------------------------------------------------------------

inline constexpr std::uint8_t t_null = 1;
inline constexpr std::uint8_t t_boolean = 2;
inline constexpr std::uint8_t t_object = 4;
inline constexpr std::uint8_t t_array = 8;
inline constexpr std::uint8_t t_number = 16;
inline constexpr std::uint8_t t_string = 32;
inline constexpr std::uint8_t t_integer = 64;

struct type_name {
  std::string_view name;
  std::uint8_t bit;
};
// In the order reasons list them.
inline constexpr type_name type_names[] = {
    {"string", t_string}, {"integer", t_integer}, {"number", t_number}, {"boolean", t_boolean},
    {"object", t_object}, {"array", t_array},     {"null", t_null},
};

inline std::uint8_t type_bit(std::string_view s) noexcept {
  for (const type_name& t : type_names)
    if (t.name == s) return t.bit;
  return 0;
}

inline std::string type_list(std::uint8_t types) {
  std::string out;
  int count = 0;
  for (const type_name& t : type_names) {
    if ((types & t.bit) == 0) continue;
    if (count++ > 0) out += ", ";
    out += t.name;
  }
  return count > 1 ? "one of " + out : out;
}

inline std::string_view kind_name(json::kind k) noexcept {
  switch (k) {
    case json::kind::null:
      return "null";
    case json::kind::boolean:
      return "boolean";
    case json::kind::number:
      return "number";
    case json::kind::string:
      return "string";
    case json::kind::array:
      return "array";
    case json::kind::object:
      return "object";
  }
  return "value";
}

enum class shape : std::uint8_t { content, accept_all, reject_all, ref };
enum class additional : std::uint8_t { allow, forbid, schema };

struct declared_property {
  std::string name;
  std::string segment;  // the name as an escaped JSON pointer segment
  std::uint32_t schema = no_node;
};

struct bound {
  json::value text;  // the schema's number, quoted in reasons
  number value;
};

struct node {
  std::string path;  // JSON pointer into the schema
  detail::shape shape = detail::shape::content;
  // $ref (shape::ref): the target's $defs name, or `ref_root` for "#".
  std::string ref_name;
  bool ref_root = false;
  std::uint32_t ref = no_node;

  std::uint8_t types = 0;  // 0: any type
  json::value const_value;
  std::string const_text;  // quoted in reasons when short enough
  json::value enum_values;
  std::string enum_text;
  std::optional<std::uint64_t> min_length, max_length;
  std::optional<byte_regex> pattern;        // the matcher, for the patterns it covers
  std::optional<std::regex> pattern_regex;  // otherwise std::regex, as a full match
  std::string pattern_text;                 // the pattern as a JSON string, for reasons
  std::optional<bound> minimum, exclusive_minimum, maximum, exclusive_maximum;
  std::vector<std::string> required;
  std::vector<declared_property> properties;  // declared order
  std::vector<std::uint32_t> by_name;         // indices into properties, sorted by name
  detail::additional additional = detail::additional::allow;
  std::uint32_t additional_schema = no_node;
  std::optional<std::uint64_t> min_items, max_items;
  std::uint32_t items = no_node;
  std::vector<std::uint32_t> any_of, one_of;
  std::string any_of_hint, one_of_hint;  // strict: the required sets, for reasons

  [[nodiscard]] bool declares(std::string_view name) const noexcept {
    const auto it = std::lower_bound(by_name.begin(), by_name.end(), name,
                                     [this](std::uint32_t i, std::string_view k) {
                                       return std::string_view{properties[i].name} < k;
                                     });
    return it != by_name.end() && properties[*it].name == name;
  }
};

struct tables {
  owned_json source;
  std::deque<node> nodes;  // a deque: references stay valid while compilation appends
  std::uint32_t root = 0;
  compile_options options;
};

// ---- the compiler -------------------------------------------------------------------------------

inline bool is_annotation(std::string_view k) noexcept {
  return k == "description" || k == "title" || k == "$comment" || k == "examples" ||
         k == "default" || k == "format";
}

class compiler {
 public:
  compiler(tables& t, std::vector<compile_error>& errors) : t_(t), errors_(errors) {}

  void run() {
    t_.root = compile_node(t_.source.root(), std::string{}, context{true, false, {}});
    resolve_refs();
    check_alternative_cycles();
    if (strict()) {
      check_root();
      check_depth();
    }
  }

 private:
  struct context {
    bool root = false;
    bool alternative = false;  // a strict anyOf/oneOf alternative (required-only)
    json::value declared_by;   // alternatives: the parent's `properties`
  };

  // The keyword values of one schema object.
  struct keywords {
    json::value type, const_value, enum_values, min_length, max_length, pattern, minimum,
        exclusive_minimum, maximum, exclusive_maximum, properties, required, additional, items,
        min_items, max_items, any_of, one_of, ref, defs, schema_uri;
  };

  [[nodiscard]] bool strict() const noexcept { return t_.options.strict; }

  void error(std::string path, std::string message) {
    errors_.push_back(compile_error{std::move(path), std::move(message)});
  }

  std::uint32_t add_node(const std::string& path) {
    const auto index = static_cast<std::uint32_t>(t_.nodes.size());
    t_.nodes.emplace_back().path = path;
    return index;
  }

  std::uint32_t compile_node(json::value v, const std::string& path, const context& ctx) {
    const std::uint32_t index = add_node(path);
    node& n = t_.nodes[index];
    if (v.is_bool()) {
      if (strict())
        error(path, "a schema must be a JSON object (boolean schemas are not supported)");
      n.shape = v.as_bool() ? shape::accept_all : shape::reject_all;
      return index;
    }
    if (!v.is_object()) {
      error(path, strict() ? "a schema must be a JSON object"
                           : "a schema must be a JSON object or a boolean");
      n.shape = shape::accept_all;
      return index;
    }
    keywords k;
    std::vector<std::string_view> beside_ref;  // content keywords, refused next to $ref
    for (json::member m : v.members()) {
      const std::string_view key = m.key;
      const json::value value = m.value();
      json::value* slot = keyword_slot(k, key);
      if (slot != nullptr) {
        *slot = value;
        if (key != "$ref" && key != "$defs" && key != "$schema") beside_ref.push_back(key);
      } else if (is_annotation(key)) {
        check_annotation(key, value, child_path(path, key));
      } else {
        error(child_path(path, key), "unsupported keyword '" + std::string{key} + "'");
      }
    }
    if (k.schema_uri.exists()) check_schema_uri(k.schema_uri, path, ctx);
    if (k.defs.exists()) compile_defs(k.defs, path, ctx);
    if (k.ref.exists()) {
      compile_ref(index, k.ref, path);
      for (std::string_view key : beside_ref)
        error(child_path(path, key),
              "'" + std::string{key} +
                  "' beside '$ref' is not supported (only annotations may accompany a reference)");
      return index;
    }
    compile_type(index, k.type, path, ctx);
    compile_constants(index, k, path);
    compile_string_keywords(index, k, path);
    compile_number_keywords(index, k, path);
    compile_object_keywords(index, k, path, ctx);
    compile_array_keywords(index, k, path);
    compile_alternatives(index, k, path);
    return index;
  }

  static json::value* keyword_slot(keywords& k, std::string_view key) noexcept {
    struct entry {
      std::string_view name;
      json::value keywords::*member;
    };
    static constexpr entry table[] = {
        {"type", &keywords::type},
        {"const", &keywords::const_value},
        {"enum", &keywords::enum_values},
        {"minLength", &keywords::min_length},
        {"maxLength", &keywords::max_length},
        {"pattern", &keywords::pattern},
        {"minimum", &keywords::minimum},
        {"exclusiveMinimum", &keywords::exclusive_minimum},
        {"maximum", &keywords::maximum},
        {"exclusiveMaximum", &keywords::exclusive_maximum},
        {"properties", &keywords::properties},
        {"required", &keywords::required},
        {"additionalProperties", &keywords::additional},
        {"items", &keywords::items},
        {"minItems", &keywords::min_items},
        {"maxItems", &keywords::max_items},
        {"anyOf", &keywords::any_of},
        {"oneOf", &keywords::one_of},
        {"$ref", &keywords::ref},
        {"$defs", &keywords::defs},
        {"$schema", &keywords::schema_uri},
    };
    for (const entry& e : table)
      if (e.name == key) return &(k.*e.member);
    return nullptr;
  }

  void check_annotation(std::string_view key, json::value v, const std::string& path) {
    if ((key == "description" || key == "title" || key == "$comment" || key == "format") &&
        !v.is_string()) {
      error(path, "'" + std::string{key} + "' must be a string");
    } else if (key == "examples" && !v.is_array()) {
      error(path, "'examples' must be an array");
    }
  }

  void check_schema_uri(json::value v, const std::string& path, const context& ctx) {
    const std::string at = child_path(path, "$schema");
    if (!ctx.root) {
      error(at, "'$schema' is only allowed at the root");
      return;
    }
    if (!v.is_string() || (v.as_string() != "https://json-schema.org/draft/2020-12/schema" &&
                           v.as_string() != "http://json-schema.org/draft-07/schema#")) {
      error(at,
            "unsupported '$schema' (accepted: https://json-schema.org/draft/2020-12/schema "
            "and http://json-schema.org/draft-07/schema#)");
    }
  }

  void compile_defs(json::value v, const std::string& path, const context& ctx) {
    const std::string at = child_path(path, "$defs");
    if (!ctx.root) {
      error(at, "'$defs' is only supported at the root");
      return;
    }
    if (!v.is_object()) {
      error(at, "'$defs' must be an object of schemas");
      return;
    }
    for (json::member m : v.members()) {
      const std::uint32_t def = compile_node(m.value(), child_path(at, m.key), context{});
      defs_.emplace_back(std::string{m.key}, def);
    }
  }

  void compile_ref(std::uint32_t index, json::value v, const std::string& path) {
    const std::string at = child_path(path, "$ref");
    node& n = t_.nodes[index];
    n.shape = shape::ref;
    constexpr std::string_view supported =
        R"(only local references are supported: "#" or "#/$defs/<name>")";
    if (!v.is_string()) {
      error(at, "'$ref' must be a string");
      return;
    }
    const std::string_view ref = v.as_string();
    if (ref.empty() || ref.front() != '#') {
      error(at, std::string{supported});
      return;
    }
    const auto decoded = ::mcpcore::detail::percent_decode(ref.substr(1));
    if (!decoded) {
      error(at, "'$ref' has an invalid percent-encoding");
      return;
    }
    const auto segments = split_pointer(*decoded);
    if (!segments) {
      error(at, "'$ref' is not a valid JSON pointer fragment");
      return;
    }
    if (segments->empty()) {
      n.ref_root = true;
    } else if (segments->size() == 2 && (*segments)[0] == "$defs") {
      n.ref_name = (*segments)[1];
    } else {
      error(at, std::string{supported});
      return;
    }
    refs_.push_back(index);
  }

  void compile_type(std::uint32_t index, json::value v, const std::string& path,
                    const context& ctx) {
    node& n = t_.nodes[index];
    const std::string at = child_path(path, "type");
    if (!v.exists()) {
      if (strict() && !ctx.alternative) error(path, "'type' is required");
      return;
    }
    if (v.is_string()) {
      const std::uint8_t bit = type_bit(v.as_string());
      if (bit == 0) {
        error(at, "unknown type " + json_quoted(v.as_string()));
      } else if (strict() && bit == t_null) {
        error(at, "type 'null' is not supported");
      } else {
        n.types = bit;
      }
      return;
    }
    if (v.is_array() && strict()) {
      error(at, "type unions are not supported (give a single type)");
      return;
    }
    if (!v.is_array()) {
      error(at, strict() ? "'type' must be a string"
                         : "'type' must be a string or an array of strings");
      return;
    }
    std::uint8_t types = 0;
    std::size_t i = 0;
    bool any = false;
    for (json::value e : v.elements()) {
      const std::string item = at + "/" + std::to_string(i++);
      const std::uint8_t bit = e.is_string() ? type_bit(e.as_string()) : 0;
      if (bit == 0) {
        error(item, e.is_string() ? "unknown type " + json_quoted(e.as_string())
                                  : "a type must be a string");
      } else if ((types & bit) != 0) {
        error(item, "type listed twice");
      }
      types = static_cast<std::uint8_t>(types | bit);
      any = true;
    }
    // An empty list admits nothing; 0 would mean "any type", so keep an impossible mask.
    n.types = any ? types : 0;
    if (!any) n.shape = shape::reject_all;
  }

  // Strict keyword/type coupling: `key` needs one of `allowed`.
  void couple(std::uint32_t index, std::string_view key, json::value v, std::uint8_t allowed,
              std::string_view label, const std::string& path) {
    const node& n = t_.nodes[index];
    if (!strict() || !v.exists() || n.types == 0 || (n.types & allowed) != 0) return;
    error(child_path(path, key), "'" + std::string{key} + "' applies to type " +
                                     std::string{label} + ", not " + type_list(n.types));
  }

  std::optional<std::uint64_t> read_count(json::value v, std::string_view key,
                                          const std::string& path) {
    if (!v.exists()) return std::nullopt;
    if (auto u = v.is_integer() ? v.to_uint64() : std::nullopt) return u;
    error(child_path(path, key), "'" + std::string{key} + "' must be a non-negative integer");
    return std::nullopt;
  }

  std::optional<bound> read_bound(json::value v, std::string_view key, const std::string& path) {
    if (!v.exists()) return std::nullopt;
    if (!v.is_number()) {
      const bool draft4 = v.is_bool() && key.starts_with("exclusive");
      error(child_path(path, key),
            "'" + std::string{key} + "' must be a number" +
                (draft4 ? " (the boolean form of draft 4 is not supported)" : ""));
      return std::nullopt;
    }
    return bound{v, read_number(v)};
  }

  void compile_constants(std::uint32_t index, const keywords& k, const std::string& path) {
    node& n = t_.nodes[index];
    if (k.const_value.exists()) {
      n.const_value = k.const_value;
      std::string text = compact(k.const_value);
      if (text.size() <= max_quoted_constant_bytes) n.const_text = std::move(text);
    }
    if (!k.enum_values.exists()) return;
    const std::string at = child_path(path, "enum");
    if (!k.enum_values.is_array()) {
      error(at, "'enum' must be an array");
      return;
    }
    if (strict()) {
      if ((n.types & (t_object | t_array)) != 0)
        error(at, "'enum' is not allowed on type " + type_list(n.types));
      if (k.enum_values.size() == 0) error(at, "'enum' must not be empty");
      std::size_t i = 0;
      for (json::value a : k.enum_values.elements()) {
        std::size_t j = 0;
        for (json::value b : k.enum_values.elements()) {
          if (j >= i) break;
          if (json_equal(a, b)) {
            error(at + "/" + std::to_string(i), "'enum' values must be unique");
            break;
          }
          ++j;
        }
        ++i;
      }
    }
    n.enum_values = k.enum_values;
    std::string text = compact(k.enum_values);
    if (text.size() <= max_quoted_constant_bytes) n.enum_text = std::move(text);
  }

  void compile_string_keywords(std::uint32_t index, const keywords& k, const std::string& path) {
    couple(index, "minLength", k.min_length, t_string, "string", path);
    couple(index, "maxLength", k.max_length, t_string, "string", path);
    couple(index, "pattern", k.pattern, t_string, "string", path);
    node& n = t_.nodes[index];
    n.min_length = read_count(k.min_length, "minLength", path);
    n.max_length = read_count(k.max_length, "maxLength", path);
    if (strict() && n.min_length && n.max_length && *n.min_length > *n.max_length)
      error(child_path(path, "minLength"), "'minLength' is greater than 'maxLength'");
    if (!k.pattern.exists()) return;
    const std::string at = child_path(path, "pattern");
    if (!k.pattern.is_string()) {
      error(at, "'pattern' must be a string");
      return;
    }
    const std::string_view source = k.pattern.as_string();
    if (has_back_reference(source)) {
      error(at, "'pattern' uses a back-reference, which is not supported");
      return;
    }
    if (has_stacked_quantifier(source)) {
      error(at,
            "'pattern' is not a valid ECMAScript regular expression (a quantifier follows a "
            "quantifier)");
      return;
    }
    if (pattern_expansion(source, max_pattern_expansion) > max_pattern_expansion) {
      error(at, "'pattern' is too complex (it expands to more than " +
                    std::to_string(max_pattern_expansion) + " atoms)");
      return;
    }
    try {
      // Compiled alone first, so that the wrapper below cannot change how the pattern parses.
      // From a std::string: libstdc++ 12's scanner reads one character past a trailing '('
      // (it tests for "(?" before checking for the end), and a string's terminator makes that
      // read harmless; the schema's own bytes are not terminated.
      const std::string text{source};
      const std::regex alone = make_regex(text);
      (void)alone;
      n.pattern = byte_regex::compile(source);
      if (!n.pattern) n.pattern_regex = make_regex(search_as_match(source));
    } catch (const std::regex_error& e) {
      error(at, "'pattern' is not a valid ECMAScript regular expression (" + std::string{e.what()} +
                    ")");
      return;
    }
    n.pattern_text = json_quoted(source);
  }

  void compile_number_keywords(std::uint32_t index, const keywords& k, const std::string& path) {
    constexpr std::uint8_t numeric = t_integer | t_number;
    couple(index, "minimum", k.minimum, numeric, "integer or number", path);
    couple(index, "exclusiveMinimum", k.exclusive_minimum, numeric, "integer or number", path);
    couple(index, "maximum", k.maximum, numeric, "integer or number", path);
    couple(index, "exclusiveMaximum", k.exclusive_maximum, numeric, "integer or number", path);
    node& n = t_.nodes[index];
    n.minimum = read_bound(k.minimum, "minimum", path);
    n.exclusive_minimum = read_bound(k.exclusive_minimum, "exclusiveMinimum", path);
    n.maximum = read_bound(k.maximum, "maximum", path);
    n.exclusive_maximum = read_bound(k.exclusive_maximum, "exclusiveMaximum", path);
    if (!strict()) return;
    // min > max: no number can pass.
    const auto empty = [&](const std::optional<bound>& low, std::string_view low_name,
                           const std::optional<bound>& high, std::string_view high_name,
                           bool strict_order) {
      if (!low || !high) return;
      const int c = compare(low->value, high->value);
      if (c > 0 || (strict_order && c == 0))
        error(child_path(path, low_name), "'" + std::string{low_name} + "' and '" +
                                              std::string{high_name} + "' admit no value");
    };
    empty(n.minimum, "minimum", n.maximum, "maximum", false);
    empty(n.minimum, "minimum", n.exclusive_maximum, "exclusiveMaximum", true);
    empty(n.exclusive_minimum, "exclusiveMinimum", n.maximum, "maximum", true);
    empty(n.exclusive_minimum, "exclusiveMinimum", n.exclusive_maximum, "exclusiveMaximum", true);
  }

  void compile_object_keywords(std::uint32_t index, const keywords& k, const std::string& path,
                               const context& ctx) {
    couple(index, "properties", k.properties, t_object, "object", path);
    couple(index, "required", k.required, t_object, "object", path);
    couple(index, "additionalProperties", k.additional, t_object, "object", path);
    if (k.properties.exists()) {
      const std::string at = child_path(path, "properties");
      if (!k.properties.is_object()) {
        error(at, "'properties' must be an object of schemas");
      } else {
        for (json::member m : k.properties.members()) {
          const std::uint32_t child = compile_node(m.value(), child_path(at, m.key), context{});
          declared_property p;
          p.name = std::string{m.key};
          append_segment(p.segment, m.key);
          p.schema = child;
          t_.nodes[index].properties.push_back(std::move(p));
        }
        node& n = t_.nodes[index];
        n.by_name.resize(n.properties.size());
        for (std::uint32_t i = 0; i < n.by_name.size(); ++i) n.by_name[i] = i;
        std::sort(n.by_name.begin(), n.by_name.end(), [&n](std::uint32_t a, std::uint32_t b) {
          const std::string& x = n.properties[a].name;
          const std::string& y = n.properties[b].name;
          return x != y ? x < y : a < b;
        });
        // Only a document parsed with duplicate keys allowed can get here with a name twice.
        for (std::size_t i = 1; i < n.by_name.size(); ++i) {
          if (n.properties[n.by_name[i - 1]].name == n.properties[n.by_name[i]].name)
            error(child_path(at, n.properties[n.by_name[i]].name), "property declared twice");
        }
      }
    }
    if (k.required.exists()) compile_required(index, k.required, path, ctx, k.properties);
    if (k.additional.exists()) {
      const std::string at = child_path(path, "additionalProperties");
      if (k.additional.is_bool() && !k.additional.as_bool()) {
        t_.nodes[index].additional = additional::forbid;
      } else if (k.additional.is_bool()) {
        if (strict()) error(at, "'additionalProperties: true' is not allowed (omit it instead)");
      } else if (k.additional.is_object()) {
        const std::uint32_t child = compile_node(k.additional, at, context{});
        t_.nodes[index].additional = additional::schema;
        t_.nodes[index].additional_schema = child;
      } else {
        error(at, strict() ? "'additionalProperties' must be a schema or false"
                           : "'additionalProperties' must be a schema");
      }
    }
  }

  void compile_required(std::uint32_t index, json::value v, const std::string& path,
                        const context& ctx, json::value own_properties) {
    const std::string at = child_path(path, "required");
    if (!v.is_array()) {
      error(at, "'required' must be an array of strings");
      return;
    }
    if (strict() && ctx.alternative && v.size() == 0)
      error(at, "'required' of an alternative must not be empty");
    const json::value declared = ctx.alternative ? ctx.declared_by : own_properties;
    std::vector<std::string> names;
    std::size_t i = 0;
    for (json::value e : v.elements()) {
      const std::string item = at + "/" + std::to_string(i++);
      if (!e.is_string()) {
        error(item, "'required' names must be strings");
        continue;
      }
      const std::string_view name = e.as_string();
      if (std::find(names.begin(), names.end(), name) != names.end()) {
        error(item, "required name " + json_quoted(name) + " is listed twice");
        continue;
      }
      if (strict() && !(declared.is_object() && declared.find(name).exists()))
        error(item, "required property " + json_quoted(name) + " is not declared in 'properties'");
      names.emplace_back(name);
    }
    t_.nodes[index].required = std::move(names);
  }

  void compile_array_keywords(std::uint32_t index, const keywords& k, const std::string& path) {
    couple(index, "items", k.items, t_array, "array", path);
    couple(index, "minItems", k.min_items, t_array, "array", path);
    couple(index, "maxItems", k.max_items, t_array, "array", path);
    {
      node& n = t_.nodes[index];
      n.min_items = read_count(k.min_items, "minItems", path);
      n.max_items = read_count(k.max_items, "maxItems", path);
      if (strict() && n.min_items && n.max_items && *n.min_items > *n.max_items)
        error(child_path(path, "minItems"), "'minItems' is greater than 'maxItems'");
    }
    if (!k.items.exists()) return;
    const std::string at = child_path(path, "items");
    if (k.items.is_array()) {
      error(at, "the array form of 'items' is not supported (give one schema for every item)");
    } else if (k.items.is_object() || k.items.is_bool()) {
      const std::uint32_t child = compile_node(k.items, at, context{});
      t_.nodes[index].items = child;
    } else {
      error(at, "'items' must be a schema");
    }
  }

  void compile_alternatives(std::uint32_t index, const keywords& k, const std::string& path) {
    couple(index, "anyOf", k.any_of, t_object, "object", path);
    couple(index, "oneOf", k.one_of, t_object, "object", path);
    compile_alternative_list(index, k.any_of, "anyOf", path, k.properties);
    compile_alternative_list(index, k.one_of, "oneOf", path, k.properties);
  }

  void compile_alternative_list(std::uint32_t index, json::value v, std::string_view key,
                                const std::string& path, json::value properties) {
    if (!v.exists()) return;
    const std::string at = child_path(path, key);
    if (!v.is_array() || v.size() == 0) {
      error(at, "'" + std::string{key} + "' must be a non-empty array of schemas");
      return;
    }
    std::vector<std::uint32_t> list;
    std::string hint;
    bool hint_ok = true;
    std::size_t i = 0;
    for (json::value alt : v.elements()) {
      const std::string item = at + "/" + std::to_string(i++);
      if (strict()) {
        if (!alt.is_object() || alt.size() != 1 || !alt.find("required").exists()) {
          error(item, "an '" + std::string{key} +
                          "' alternative must be an object whose only keyword is 'required' "
                          "(required-only alternatives)");
          continue;
        }
        list.push_back(compile_node(alt, item, context{false, true, properties}));
        const json::value names = alt.find("required");
        if (!hint.empty()) hint += " or ";
        hint += names.is_array() ? compact(names) : std::string{};
        hint_ok = hint_ok && names.is_array();
      } else {
        list.push_back(compile_node(alt, item, context{}));
      }
    }
    node& n = t_.nodes[index];
    const std::string full = strict() && hint_ok && hint.size() <= 2 * max_quoted_constant_bytes
                                 ? " (required: " + hint + ")"
                                 : std::string{};
    if (key == "anyOf") {
      n.any_of = std::move(list);
      n.any_of_hint = full;
    } else {
      n.one_of = std::move(list);
      n.one_of_hint = full;
    }
  }

  // Resolves every $ref to its target, then points every edge past reference nodes at the
  // schema with content they lead to.
  void resolve_refs() {
    for (std::uint32_t r : refs_) {
      node& n = t_.nodes[r];
      if (n.ref_root) {
        n.ref = 0;
        continue;
      }
      const auto it = std::find_if(defs_.begin(), defs_.end(),
                                   [&](const auto& d) { return d.first == n.ref_name; });
      if (it == defs_.end()) {
        error(child_path(n.path, "$ref"),
              "'$ref' target " + json_quoted("#/$defs/" + n.ref_name) + " does not exist");
      } else {
        n.ref = it->second;
      }
    }
    const auto count = static_cast<std::uint32_t>(t_.nodes.size());
    std::vector<std::uint32_t> final_target;
    final_target.reserve(refs_.size());
    for (std::uint32_t r : refs_) {
      std::uint32_t target = r;
      std::uint32_t steps = 0;
      while (target != no_node && t_.nodes[target].shape == shape::ref && steps <= count) {
        target = t_.nodes[target].ref;
        ++steps;
      }
      if (steps > count) {
        error(child_path(t_.nodes[r].path, "$ref"),
              "circular '$ref': the chain never reaches a schema with content");
        target = no_node;
      }
      final_target.push_back(target);
    }
    for (std::size_t i = 0; i < refs_.size(); ++i) t_.nodes[refs_[i]].ref = final_target[i];
    const auto through = [this](std::uint32_t& edge) {
      if (edge != no_node && t_.nodes[edge].shape == shape::ref) edge = t_.nodes[edge].ref;
    };
    through(t_.root);
    for (node& n : t_.nodes) {
      for (declared_property& p : n.properties) through(p.schema);
      through(n.additional_schema);
      through(n.items);
      for (std::uint32_t& a : n.any_of) through(a);
      for (std::uint32_t& a : n.one_of) through(a);
    }
  }

  // anyOf/oneOf edges do not descend into the instance: a cycle of them would recurse forever.
  void check_alternative_cycles() {
    const std::size_t count = t_.nodes.size();
    std::vector<std::uint8_t> state(count, 0);  // 0 new, 1 on the stack, 2 done
    struct frame {
      std::uint32_t n;
      std::size_t next;
    };
    std::vector<frame> stack;
    const auto edge = [this](std::uint32_t n, std::size_t i) -> std::uint32_t {
      const node& s = t_.nodes[n];
      return i < s.any_of.size() ? s.any_of[i] : s.one_of[i - s.any_of.size()];
    };
    for (std::uint32_t start = 0; start < count; ++start) {
      if (state[start] != 0) continue;
      state[start] = 1;
      stack.push_back({start, 0});
      while (!stack.empty()) {
        const std::uint32_t n = stack.back().n;
        const node& s = t_.nodes[n];
        if (stack.back().next == s.any_of.size() + s.one_of.size()) {
          state[n] = 2;
          stack.pop_back();
          continue;
        }
        const std::size_t i = stack.back().next++;
        const std::uint32_t to = edge(n, i);
        if (to == no_node) continue;
        if (state[to] == 1) {
          error(child_path(s.path, i < s.any_of.size() ? "anyOf" : "oneOf"),
                "the alternatives lead back to this schema without descending into the instance");
        } else if (state[to] == 0) {
          state[to] = 1;
          stack.push_back({to, 0});
        }
      }
    }
  }

  void check_root() {
    if (t_.root == no_node) return;  // an unresolved reference, already reported
    const node& r = t_.nodes[t_.root];
    if (r.shape == shape::content && r.types != 0 && r.types != t_object)
      error(std::string{}, "the root schema must have type 'object'");
  }

  // Strict depth cap: a subschema more than max_depth descending edges from the root is an
  // error. A path that comes back to a schema already on it is recursion, bounded at
  // validation time instead.
  void check_depth() {
    const std::size_t count = t_.nodes.size();
    const std::uint64_t cap = t_.options.max_depth;
    std::vector<std::uint64_t> best(count, 0);
    std::vector<std::uint8_t> seen(count, 0), on_stack(count, 0), reported(count, 0);
    struct frame {
      std::uint32_t n;
      std::uint64_t depth;
      std::size_t next;
    };
    std::vector<frame> stack;
    const auto enter = [&](std::uint32_t n, std::uint64_t depth) {
      if (n == no_node || on_stack[n] != 0 || (seen[n] != 0 && best[n] >= depth)) return;
      seen[n] = 1;
      best[n] = depth;
      if (depth > cap) {
        if (reported[n] == 0)
          error(t_.nodes[n].path, "the schema nests deeper than the depth cap of " +
                                      std::to_string(cap) + " levels below the root");
        reported[n] = 1;
        return;
      }
      on_stack[n] = 1;
      stack.push_back({n, depth, 0});
    };
    // Edges in order: properties, additionalProperties, items (one level down), then the
    // alternatives (same level).
    const auto edge = [this](std::uint32_t n, std::size_t i,
                             bool& down) -> std::optional<std::uint32_t> {
      const node& s = t_.nodes[n];
      down = true;
      if (i < s.properties.size()) return s.properties[i].schema;
      i -= s.properties.size();
      if (i == 0) return s.additional_schema;
      if (i == 1) return s.items;
      i -= 2;
      down = false;
      if (i < s.any_of.size()) return s.any_of[i];
      i -= s.any_of.size();
      if (i < s.one_of.size()) return s.one_of[i];
      return std::nullopt;
    };
    enter(t_.root, 0);
    while (!stack.empty()) {
      const std::uint32_t n = stack.back().n;
      const std::uint64_t depth = stack.back().depth;
      bool down = false;
      const auto to = edge(n, stack.back().next++, down);
      if (!to) {
        on_stack[n] = 0;
        stack.pop_back();
        continue;
      }
      enter(*to, depth + (down ? 1 : 0));
    }
  }

  tables& t_;
  std::vector<compile_error>& errors_;
  std::vector<std::uint32_t> refs_;  // reference nodes, resolved at the end
  std::vector<std::pair<std::string, std::uint32_t>> defs_;
};

// ---- the validator ------------------------------------------------------------------------------

// One step of the instance path, on the validator's stack: a declared name (already escaped),
// "*" for a caller-supplied name, or an array index.
struct path_frame {
  const path_frame* parent = nullptr;
  std::string_view segment;
  std::size_t index = 0;
  bool is_index = false;
};

inline void append_path(std::string& out, const path_frame* f) {
  if (f == nullptr) return;
  append_path(out, f->parent);
  out += '/';
  if (f->is_index) {
    out += std::to_string(f->index);
  } else {
    out += f->segment;
  }
}

class validator {
 public:
  explicit validator(const tables& t) noexcept : t_(t) {}

  std::optional<violation> run(json::value instance) {
    if (check(t_.root, instance, nullptr, 0)) return std::nullopt;
    if (exhausted_)
      return violation{std::string{},
                       "validation work budget exhausted (the schema's alternatives are "
                       "too costly for this value)"};
    return std::move(found_);
  }

 private:
  // Records the violation at `at` (outside alternatives only) and returns false. The reason is
  // built only when it is recorded, so probing alternatives allocates nothing.
  template <class Reason>
  bool fail(const path_frame* at, Reason&& reason) {
    if (report_) {
      violation v;
      append_path(v.path, at);
      v.reason = std::forward<Reason>(reason)();
      found_ = std::move(v);
    }
    return false;
  }

  // The same, one segment below `at` (an escaped name, or "*").
  template <class Reason>
  bool fail_child(const path_frame* at, std::string_view segment, Reason&& reason) {
    const path_frame child{at, segment, 0, false};
    return fail(&child, std::forward<Reason>(reason));
  }

  bool check(std::uint32_t index, json::value v, const path_frame* at, std::uint32_t depth) {
    if (exhausted_) return false;
    const node& s = t_.nodes[index];
    if (s.shape == shape::accept_all) return true;
    if (s.shape == shape::reject_all)
      return fail(at, [] { return std::string{"no value is allowed here (the schema is false)"}; });
    if (t_.options.strict && depth > t_.options.max_depth) {
      return fail(at, [this] {
        return "the value nests deeper than the schema's depth cap of " +
               std::to_string(t_.options.max_depth);
      });
    }
    if (s.types != 0 && !check_type(s, v, at)) return false;
    if (s.const_value.exists() && !json_equal(v, s.const_value)) {
      return fail(at, [&s] {
        return s.const_text.empty() ? std::string{"the value does not equal the schema's const"}
                                    : "the value must equal " + s.const_text;
      });
    }
    if (s.enum_values.exists() && !in_enum(s, v)) {
      return fail(at, [&s] {
        return s.enum_text.empty() ? std::string{"the value is not one of the enum values"}
                                   : "the value is not one of " + s.enum_text;
      });
    }
    switch (v.kind()) {
      case json::kind::string:
        if (!check_string(s, v.as_string(), at)) return false;
        break;
      case json::kind::number:
        if (!check_number(s, v, at)) return false;
        break;
      case json::kind::object:
        if (!check_object(s, v, at, depth)) return false;
        break;
      case json::kind::array:
        if (!check_array(s, v, at, depth)) return false;
        break;
      default:
        break;
    }
    if (!s.any_of.empty()) {
      bool any = false;
      for (std::uint32_t alt : s.any_of) {
        if (probe(alt, v, at, depth)) {
          any = true;
          break;
        }
      }
      if (exhausted_) return false;
      if (!any)
        return fail(at,
                    [&s] { return "none of the anyOf alternatives is satisfied" + s.any_of_hint; });
    }
    if (!s.one_of.empty()) {
      int matched = 0;
      for (std::uint32_t alt : s.one_of) {
        if (probe(alt, v, at, depth) && ++matched > 1) break;
      }
      if (exhausted_) return false;
      if (matched == 0)
        return fail(at,
                    [&s] { return "none of the oneOf alternatives is satisfied" + s.one_of_hint; });
      if (matched > 1) {
        return fail(at, [&s] {
          return "more than one oneOf alternative is satisfied; exactly one must be" +
                 s.one_of_hint;
        });
      }
    }
    return true;
  }

  // Evaluates an alternative without recording its violation.
  bool probe(std::uint32_t alt, json::value v, const path_frame* at, std::uint32_t depth) {
    if (!t_.options.strict && ++alternative_visits_ > max_alternative_visits) exhausted_ = true;
    if (exhausted_) return false;
    const bool saved = report_;
    report_ = false;
    const bool ok = check(alt, v, at, depth);
    report_ = saved;
    return ok;
  }

  bool check_type(const node& s, json::value v, const path_frame* at) {
    std::uint8_t bit = 0;
    switch (v.kind()) {
      case json::kind::null:
        bit = t_null;
        break;
      case json::kind::boolean:
        bit = t_boolean;
        break;
      case json::kind::string:
        bit = t_string;
        break;
      case json::kind::array:
        bit = t_array;
        break;
      case json::kind::object:
        bit = t_object;
        break;
      case json::kind::number:
        if ((s.types & t_number) != 0) return true;
        if ((s.types & t_integer) != 0) {
          // reference §4.3: an integer is an integer literal (1.0 is not) within signed 64 bits.
          if (!v.is_integer())
            return fail(at, [] {
              return std::string{
                  "expected an integer, got a number with a fraction part or exponent"};
            });
          if (!v.to_int64())
            return fail(at, [] { return std::string{"integer out of range (signed 64-bit)"}; });
          return true;
        }
        bit = t_number;
        break;
    }
    if ((s.types & bit) != 0) return true;
    return fail(at, [&s, v] {
      return "expected " + type_list(s.types) + ", got " + std::string{kind_name(v.kind())};
    });
  }

  static bool in_enum(const node& s, json::value v) noexcept {
    for (json::value e : s.enum_values.elements())
      if (json_equal(v, e)) return true;
    return false;
  }

  bool check_string(const node& s, std::string_view str, const path_frame* at) {
    if (s.min_length || s.max_length) {
      // Lengths count Unicode code points, as JSON Schema does; bytes bound them from above.
      const std::size_t bytes = str.size();
      const bool need_count =
          (s.min_length && bytes >= *s.min_length) || (s.max_length && bytes > *s.max_length);
      const std::size_t points = need_count ? code_points(str) : bytes;
      if (s.min_length && points < *s.min_length) {
        return fail(at, [&s] {
          return "the string is shorter than minLength " + std::to_string(*s.min_length) +
                 " (code points)";
        });
      }
      if (s.max_length && points > *s.max_length) {
        return fail(at, [&s] {
          return "the string is longer than maxLength " + std::to_string(*s.max_length) +
                 " (code points)";
        });
      }
    }
    if (s.pattern || s.pattern_regex) {
      if (str.size() > t_.options.max_pattern_subject_bytes) {
        return fail(at, [this] {
          return "string too long to match pattern (more than " +
                 std::to_string(t_.options.max_pattern_subject_bytes) + " bytes)";
        });
      }
      bool matched = false;
      if (s.pattern) {
        matched = s.pattern->search(str);  // allocates nothing
      } else {
        try {
          matched = std::regex_match(str.begin(), str.end(), *s.pattern_regex);
        } catch (const std::regex_error&) {
          return fail(
              at, [] { return std::string{"the pattern could not be evaluated on this string"}; });
        }
      }
      if (!matched)
        return fail(at, [&s] { return "the string does not match the pattern " + s.pattern_text; });
    }
    return true;
  }

  bool check_number(const node& s, json::value v, const path_frame* at) {
    if (!s.minimum && !s.exclusive_minimum && !s.maximum && !s.exclusive_maximum) return true;
    const number n = read_number(v);
    const auto text = [](const bound& b) { return compact(b.text); };
    if (s.minimum && compare(n, s.minimum->value) < 0)
      return fail(at, [&] { return "the value is less than minimum " + text(*s.minimum); });
    if (s.exclusive_minimum && compare(n, s.exclusive_minimum->value) <= 0)
      return fail(at, [&] {
        return "the value must be greater than exclusiveMinimum " + text(*s.exclusive_minimum);
      });
    if (s.maximum && compare(n, s.maximum->value) > 0)
      return fail(at, [&] { return "the value is greater than maximum " + text(*s.maximum); });
    if (s.exclusive_maximum && compare(n, s.exclusive_maximum->value) >= 0)
      return fail(at, [&] {
        return "the value must be less than exclusiveMaximum " + text(*s.exclusive_maximum);
      });
    return true;
  }

  bool check_object(const node& s, json::value v, const path_frame* at, std::uint32_t depth) {
    for (const std::string& name : s.required) {
      if (!v.find(name).exists()) {
        std::string segment;
        if (report_) append_segment(segment, name);
        return fail_child(at, segment, [] { return std::string{"required property is missing"}; });
      }
    }
    for (const declared_property& p : s.properties) {
      const json::value pv = v.find(p.name);
      if (!pv.exists()) continue;
      const path_frame f{at, p.segment, 0, false};
      if (!check(p.schema, pv, &f, depth + 1)) return false;
    }
    if (s.additional == additional::allow) return true;
    for (json::member m : v.members()) {
      if (s.declares(m.key)) continue;
      if (s.additional == additional::forbid) {
        return fail_child(at, "*", [] {
          return std::string{
              "property is not declared by the schema (additionalProperties is false)"};
        });
      }
      const path_frame f{at, "*", 0, false};
      if (!check(s.additional_schema, m.value(), &f, depth + 1)) return false;
    }
    return true;
  }

  bool check_array(const node& s, json::value v, const path_frame* at, std::uint32_t depth) {
    const std::size_t size = v.size();
    if (s.min_items && size < *s.min_items)
      return fail(at, [&s] {
        return "the array has fewer than minItems " + std::to_string(*s.min_items) + " items";
      });
    if (s.max_items && size > *s.max_items)
      return fail(at, [&s] {
        return "the array has more than maxItems " + std::to_string(*s.max_items) + " items";
      });
    if (s.items == no_node) return true;
    std::size_t i = 0;
    for (json::value e : v.elements()) {
      const path_frame f{at, {}, i++, true};
      if (!check(s.items, e, &f, depth + 1)) return false;
    }
    return true;
  }

  const tables& t_;
  std::optional<violation> found_;
  bool report_ = true;
  bool exhausted_ = false;
  std::uint64_t alternative_visits_ = 0;
};

}  // namespace detail

struct compiled_schema::impl {
  detail::tables tables;
};

MCPCORE_DECL compiled_schema::compiled_schema(compiled_schema&& other) noexcept
    : impl_(std::exchange(other.impl_, nullptr)) {}

MCPCORE_DECL compiled_schema& compiled_schema::operator=(compiled_schema&& other) noexcept {
  if (this != &other) {
    delete impl_;
    impl_ = std::exchange(other.impl_, nullptr);
  }
  return *this;
}

MCPCORE_DECL compiled_schema::~compiled_schema() { delete impl_; }

MCPCORE_DECL result<compiled_schema, std::vector<compile_error>> compiled_schema::compile(
    std::string_view schema_json, const compile_options& options) {
  json::document doc;
  auto root = doc.parse(schema_json);
  if (!root) {
    return fail(std::vector<compile_error>{compile_error{
        std::string{}, "the schema is not valid JSON (" + root.error().message() + ")"}});
  }
  return compile(*root, options);
}

MCPCORE_DECL result<compiled_schema, std::vector<compile_error>> compiled_schema::compile(
    json::value schema, const compile_options& options) {
  if (!schema.exists())
    return fail(std::vector<compile_error>{compile_error{std::string{}, "no schema given"}});
  auto owned = std::make_unique<impl>();
  owned->tables.options = options;
  owned->tables.source = detail::copy_json(schema);
  std::vector<compile_error> errors;
  detail::compiler{owned->tables, errors}.run();
  if (!errors.empty()) {
    std::sort(errors.begin(), errors.end(), [](const compile_error& a, const compile_error& b) {
      return a.path != b.path ? a.path < b.path : a.message < b.message;
    });
    errors.erase(std::unique(errors.begin(), errors.end(),
                             [](const compile_error& a, const compile_error& b) {
                               return a.path == b.path && a.message == b.message;
                             }),
                 errors.end());
    return fail(std::move(errors));
  }
  compiled_schema out;
  out.impl_ = owned.release();
  return out;
}

MCPCORE_DECL std::optional<violation> compiled_schema::validate(json::value instance) const {
  if (impl_ == nullptr) return std::nullopt;
  if (!instance.exists()) return violation{std::string{}, "no value to validate"};
  return detail::validator{impl_->tables}.run(instance);
}

MCPCORE_DECL bool compiled_schema::root_is_closed() const noexcept {
  if (impl_ == nullptr) return false;
  const detail::node& r = impl_->tables.nodes[impl_->tables.root];
  return r.shape == detail::shape::content && r.additional == detail::additional::forbid;
}

MCPCORE_DECL bool compiled_schema::root_declares(std::string_view property) const noexcept {
  if (impl_ == nullptr) return false;
  const detail::node& r = impl_->tables.nodes[impl_->tables.root];
  return r.shape == detail::shape::content && r.declares(property);
}

}  // namespace schema
MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_SCHEMA_IPP
