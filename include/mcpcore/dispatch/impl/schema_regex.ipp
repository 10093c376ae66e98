// SPDX-License-Identifier: Apache-2.0
// The `pattern` and `patternProperties` engine: RE2, after a translation of the ECMA-262 forms
// RE2 spells differently (docs/schema.md#patterns). Used by the compiler (schema_compile.ipp) and
// the validator (schema_validate.ipp).
#ifndef MCPCORE_IMPL_SCHEMA_REGEX_IPP
#define MCPCORE_IMPL_SCHEMA_REGEX_IPP

#include <mcpcore/dispatch/schema.hpp>

#include <re2/re2.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

MCPCORE_BEGIN_NAMESPACE
namespace schema::detail {

// ECMA-262's WhiteSpace and LineTerminator code points: what its `\s` matches (RE2's `\s` is
// ASCII and lacks \v). Written as the inside of a bracket class.
inline constexpr std::string_view ecma_space_set =
    R"(\t\n\x0B\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF})";

// ECMA-262's `.`: any code point but a line terminator.
inline constexpr std::string_view ecma_dot = R"([^\n\r\x{2028}\x{2029}])";

inline bool is_hex(char c) noexcept {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

inline std::uint32_t hex_number(std::string_view s) noexcept {
  std::uint32_t v = 0;
  for (char c : s) {
    v = v * 16U + static_cast<std::uint32_t>(c <= '9'   ? c - '0'
                                             : c <= 'F' ? c - 'A' + 10
                                                        : c - 'a' + 10);
  }
  return v;
}

inline void append_code_point_escape(std::string& out, std::uint32_t cp) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string hex;
  do {
    hex.insert(hex.begin(), digits[cp & 0xFU]);
    cp >>= 4U;
  } while (cp != 0);
  out += "\\x{";
  out += hex;
  out += '}';
}

// ECMA-262 `\p{...}` names as RE2 spells them: `Script=Greek`, `sc=Greek`, `Script_Extensions=`
// and `scx=` become `Greek` (RE2 has scripts, not their extensions: the nearest reading);
// `General_Category=L` and `gc=L` become `L`; the long category names become the short ones.
inline std::string unicode_property_name(std::string_view name) {
  for (std::string_view prefix : {"Script=", "sc=", "Script_Extensions=", "scx=",
                                  "General_Category=", "gc="}) {
    if (name.starts_with(prefix)) {
      name.remove_prefix(prefix.size());
      break;
    }
  }
  struct alias {
    std::string_view long_name, short_name;
  };
  static constexpr alias aliases[] = {
      {"Letter", "L"},          {"Cased_Letter", "L"},   {"Uppercase_Letter", "Lu"},
      {"Lowercase_Letter", "Ll"}, {"Titlecase_Letter", "Lt"}, {"Modifier_Letter", "Lm"},
      {"Other_Letter", "Lo"},   {"Mark", "M"},           {"Nonspacing_Mark", "Mn"},
      {"Spacing_Mark", "Mc"},   {"Enclosing_Mark", "Me"}, {"Number", "N"},
      {"Decimal_Number", "Nd"}, {"digit", "Nd"},         {"Letter_Number", "Nl"},
      {"Other_Number", "No"},   {"Punctuation", "P"},    {"punct", "P"},
      {"Symbol", "S"},          {"Separator", "Z"},      {"Space_Separator", "Zs"},
      {"Line_Separator", "Zl"}, {"Paragraph_Separator", "Zp"}, {"Other", "C"},
      {"Control", "Cc"},        {"cntrl", "Cc"},         {"Format", "Cf"},
      {"Private_Use", "Co"},    {"Surrogate", "Cs"},
  };
  for (const alias& a : aliases)
    if (a.long_name == name) return std::string{a.short_name};
  return std::string{name};
}

// Translates an ECMA-262 pattern into RE2's syntax (docs/schema.md#patterns): `.` and `\s`/`\S`
// get ECMA-262's meaning, `\uXXXX` (surrogate pairs combined), `\u{...}`, `\cX` and `\0` become
// `\x{...}`, `[\b]` is a backspace, `[]` and `[^]` match nothing and any code point, `(?<name>`
// becomes `(?P<name>`, a `[` inside a class is literal, and `\p{...}` names take RE2's spelling.
// Everything else passes through for RE2 to read or refuse (back-references, lookaround).
inline std::string ecma_to_re2(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 16);
  bool in_class = false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      if (e == 's') {
        out += in_class ? std::string{ecma_space_set} : "[" + std::string{ecma_space_set} + "]";
        ++i;
      } else if (e == 'S' && !in_class) {
        out += "[^" + std::string{ecma_space_set} + "]";
        ++i;
      } else if (e == 'b' && in_class) {
        out += "\\x08";
        ++i;
      } else if (e == 'u' && i + 5 < p.size() && is_hex(p[i + 2]) && is_hex(p[i + 3]) &&
                 is_hex(p[i + 4]) && is_hex(p[i + 5])) {
        std::uint32_t cp = hex_number(p.substr(i + 2, 4));
        i += 5;
        // A surrogate pair written as two escapes is one code point.
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 < p.size() && p[i + 1] == '\\' &&
            p[i + 2] == 'u' && is_hex(p[i + 3]) && is_hex(p[i + 4]) &&
            is_hex(p[i + 5]) && is_hex(p[i + 6])) {
          const std::uint32_t low = hex_number(p.substr(i + 3, 4));
          if (low >= 0xDC00 && low <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10U) + (low - 0xDC00);
            i += 6;
          }
        }
        append_code_point_escape(out, cp);
      } else if (e == 'u' && i + 2 < p.size() && p[i + 2] == '{') {
        const std::size_t close = p.find('}', i + 3);
        std::string_view digits =
            close == std::string_view::npos ? std::string_view{} : p.substr(i + 3, close - i - 3);
        bool ok = !digits.empty() && digits.size() <= 6;
        for (char d : digits) ok = ok && is_hex(d);
        if (ok) {
          append_code_point_escape(out, hex_number(digits));
          i = close;
        } else {
          out += "\\u";  // RE2 refuses it, with its reason
          ++i;
        }
      } else if (e == 'c' && i + 2 < p.size() &&
                 ((p[i + 2] >= 'a' && p[i + 2] <= 'z') || (p[i + 2] >= 'A' && p[i + 2] <= 'Z'))) {
        append_code_point_escape(out, static_cast<std::uint32_t>(p[i + 2]) % 32U);
        i += 2;
      } else if (e == '0' && !(i + 2 < p.size() && p[i + 2] >= '0' && p[i + 2] <= '9')) {
        out += "\\x00";
        ++i;
      } else if ((e == 'p' || e == 'P') && i + 2 < p.size() && p[i + 2] == '{') {
        const std::size_t close = p.find('}', i + 3);
        if (close == std::string_view::npos) {
          out += '\\';
          out += e;
          ++i;
        } else {
          out += '\\';
          out += e;
          out += '{';
          out += unicode_property_name(p.substr(i + 3, close - i - 3));
          out += '}';
          i = close;
        }
      } else {
        out += c;
        out += e;
        ++i;
      }
      continue;
    }
    if (in_class) {
      if (c == ']') {
        in_class = false;
        out += c;
      } else if (c == '[') {
        out += "\\[";
      } else {
        out += c;
      }
      continue;
    }
    if (c == '[') {
      // `[]` matches nothing, `[^]` any code point (ECMA-262); RE2 reads `]` there as a literal.
      if (p.substr(i).starts_with("[]")) {
        out += R"([^\x00-\x{10FFFF}])";
        ++i;
        continue;
      }
      if (p.substr(i).starts_with("[^]")) {
        out += R"([\x00-\x{10FFFF}])";
        i += 2;
        continue;
      }
      in_class = true;
      out += '[';
      if (i + 1 < p.size() && p[i + 1] == '^') {
        out += '^';
        ++i;
      }
      continue;
    }
    if (c == '.') {
      out += ecma_dot;
      continue;
    }
    if (c == '(' && p.substr(i).starts_with("(?<") && i + 3 < p.size() && p[i + 3] != '=' &&
        p[i + 3] != '!') {
      out += "(?P<";
      i += 2;
      continue;
    }
    out += c;
  }
  return out;
}

/// One compiled pattern: RE2 over UTF-8, searched unanchored; the pattern's source is kept as a
/// JSON string for reasons.
struct pattern_matcher {
  std::unique_ptr<re2::RE2> re;
  std::string text;  // the pattern as a JSON string (quoted)

  // An unanchored search, as JSON Schema's `pattern` is: linear in the subject's length.
  [[nodiscard]] bool search(std::string_view subject) const {
    return re2::RE2::PartialMatch(re2::StringPiece{subject.data(), subject.size()}, *re);
  }
};

/// Compiles `source` (ECMA-262 syntax) for RE2 with `max_mem` bytes of budget; on failure,
/// `error` receives RE2's reason and the result is null.
inline std::unique_ptr<re2::RE2> compile_pattern_re2(std::string_view source, std::int64_t max_mem,
                                                     std::string& error) {
  re2::RE2::Options o;
  o.set_encoding(re2::RE2::Options::EncodingUTF8);
  o.set_log_errors(false);
  o.set_never_capture(true);
  o.set_max_mem(max_mem);
  const std::string translated = ecma_to_re2(source);
  auto re = std::make_unique<re2::RE2>(re2::StringPiece{translated.data(), translated.size()}, o);
  if (!re->ok()) {
    error = re->error();
    if (error.empty()) error = "RE2 cannot compile it";
    return nullptr;
  }
  return re;
}

}  // namespace schema::detail
MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_SCHEMA_REGEX_IPP
