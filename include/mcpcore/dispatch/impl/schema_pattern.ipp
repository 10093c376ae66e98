// SPDX-License-Identifier: Apache-2.0
// The `pattern` keyword's engine: the checks a pattern passes before std::regex sees it, the
// std::regex wrapper, and byte_regex, the allocation-free matcher the validator runs. Used by
// schema_compile.ipp (compiling) and schema_validate.ipp (matching). Kept as it was: RE2 is to
// replace it (docs/schema.md, "Patterns" describes the dialect it implements).
#ifndef MCPCORE_IMPL_SCHEMA_PATTERN_IPP
#define MCPCORE_IMPL_SCHEMA_PATTERN_IPP

#include <mcpcore/detail/ascii.hpp>
#include <mcpcore/detail/config.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <locale>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE
namespace schema::detail {

/// Largest size a `pattern` may expand to, in atoms after counted repetition (`a{3}` counts 3,
/// `(ab){10}` 20). std::regex and the built-in matcher both build an automaton state or more per
/// atom and match in time proportional to subject length times states, so this bounds both the
/// compiled size and the cost of one match (docs/schema.md, "Caps").
inline constexpr std::uint64_t max_pattern_expansion = 1000;

// libstdc++ reads a brace's digits into a `long` without an overflow check (undefined
// behaviour past 18 digits), even for a brace it then refuses: a run longer than
// `max_count_digits` makes the whole pattern too complex before std::regex sees it.
inline constexpr std::size_t max_count_digits = 9;

// Reads the repetition count at `p[j]` for pattern_expansion, advancing `j` and saturating at
// `limit`: `any` tells whether a digit was read; `overlong` is set by a run of more than
// `max_count_digits` digits.
inline std::uint64_t read_repeat_count(std::string_view p, std::size_t& j, std::uint64_t limit,
                                       bool& any, bool& overlong) {
  const std::size_t n = p.size();
  std::uint64_t v = 0;
  const std::size_t first = j;
  while (j < n && p[j] >= '0' && p[j] <= '9') {
    v = std::min(limit, v * 10 + static_cast<std::uint64_t>(p[j] - '0'));
    ++j;
  }
  any = j > first;
  overlong = overlong || j - first > max_count_digits;
  return v;
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
  bool overlong = false;
  const auto read_count = [&](std::size_t& j, bool& any) {
    return read_repeat_count(p, j, limit, any, overlong);
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

}  // namespace schema::detail
MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_SCHEMA_PATTERN_IPP
