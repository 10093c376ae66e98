// SPDX-License-Identifier: Apache-2.0
// JSON string escaping with UTF-8 repair, number formatting, and serialization of parsed values.
#ifndef MCPCORE_IMPL_JSON_WRITER_IPP
#define MCPCORE_IMPL_JSON_WRITER_IPP

#include <mcpcore/wire/json_writer.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

MCPCORE_BEGIN_NAMESPACE
namespace json {
namespace detail {

struct utf8_step {
  std::size_t length;  // bytes of the sequence, or of the maximal ill-formed subpart
  bool valid;
};

// Classifies the sequence starting at a byte >= 0x80 by the well-formed byte ranges of the
// Unicode Standard, Table 3-7. An ill-formed sequence reports its maximal subpart: the longest
// prefix that could still have begun a well-formed sequence (at least one byte).
MCPCORE_INTERNAL utf8_step utf8_sequence(const unsigned char* p, const unsigned char* end) noexcept {
  const unsigned char lead = p[0];
  std::size_t trail = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    trail = 1;
  } else if (lead == 0xE0) {
    trail = 2;
    lo = 0xA0;  // excludes overlong forms
  } else if ((lead >= 0xE1 && lead <= 0xEC) || lead == 0xEE || lead == 0xEF) {
    trail = 2;
  } else if (lead == 0xED) {
    trail = 2;
    hi = 0x9F;  // excludes UTF-16 surrogates
  } else if (lead == 0xF0) {
    trail = 3;
    lo = 0x90;  // excludes overlong forms
  } else if (lead >= 0xF1 && lead <= 0xF3) {
    trail = 3;
  } else if (lead == 0xF4) {
    trail = 3;
    hi = 0x8F;  // excludes code points above U+10FFFF
  } else {
    return {1, false};  // continuation byte, C0, C1 or F5..FF
  }
  for (std::size_t i = 1; i <= trail; ++i) {
    if (p + i >= end || p[i] < lo || p[i] > hi) return {i, false};
    lo = 0x80;
    hi = 0xBF;
  }
  return {trail + 1, true};
}

// Whether none of 8 bytes needs attention (a C0 control, '"', '\\' or a non-ASCII byte), with
// the classic SWAR byte tests: "any byte below n" is (x - n*ones) & ~x & highs for n <= 128, and
// "any byte equal to c" is the zero-byte test on x ^ c*ones.
constexpr bool plain_word(std::uint64_t x) noexcept {
  constexpr std::uint64_t ones = 0x0101010101010101ULL;
  constexpr std::uint64_t highs = 0x8080808080808080ULL;
  const std::uint64_t control = (x - ones * 0x20) & ~x & highs;
  const std::uint64_t q = x ^ (ones * '"');
  const std::uint64_t b = x ^ (ones * '\\');
  const std::uint64_t quote = (q - ones) & ~q & highs;
  const std::uint64_t backslash = (b - ones) & ~b & highs;
  return (control | quote | backslash | (x & highs)) == 0;
}

// Byte classes for the byte-wise path: copied as is, escaped, or the lead of a UTF-8 sequence.
enum class byte_class : unsigned char { plain, escape, multibyte };
inline constexpr auto byte_classes = [] {
  struct table {
    byte_class v[256];
  } t{};
  for (unsigned c = 0; c < 256; ++c)
    t.v[c] = c >= 0x80 ? byte_class::multibyte
             : (c < 0x20 || c == '"' || c == '\\') ? byte_class::escape
                                                    : byte_class::plain;
  return t;
}();

MCPCORE_DECL void append_number(std::string& out, const json::detail::node& n) {
  // Spelled numbers (non-integers and zero) go out exactly as written: a re-serialised document, a
  // canonical one included, keeps "1.0", "1e2" and "-0" as the client sent them.
  if ((n.flags & json::detail::node_text) != 0) {
    out.append(n.text, n.size);
    return;
  }
  char buf[24];
  const auto r = (n.flags & json::detail::node_uint64) != 0
                     ? std::to_chars(buf, buf + sizeof buf, n.u64)
                     : std::to_chars(buf, buf + sizeof buf, n.i64);
  out.append(buf, r.ptr);
}

}  // namespace detail

MCPCORE_DECL void append_escaped(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* const end = p + s.size();
  const auto* run = p;  // start of bytes copied verbatim
  const auto flush = [&] { out.append(reinterpret_cast<const char*>(run), static_cast<std::size_t>(p - run)); };
  out.push_back('"');
  while (p < end) {
    // Plain text goes eight bytes per step; a word holding anything else is walked byte-wise
    // (UTF-8 sequences may carry the walk a few bytes past the word).
    if (end - p >= 8) {
      std::uint64_t word;
      std::memcpy(&word, p, sizeof word);
      if (detail::plain_word(word)) {
        p += 8;
        continue;
      }
    }
    const auto* const stop = end - p >= 8 ? p + 8 : end;
    while (p < stop) {
      const unsigned char c = *p;
      switch (detail::byte_classes.v[c]) {
        case detail::byte_class::plain: ++p; continue;
        case detail::byte_class::multibyte: {
          const auto step = detail::utf8_sequence(p, end);
          if (step.valid) {
            p += step.length;
            continue;
          }
          flush();
          out.append("\xEF\xBF\xBD");  // U+FFFD REPLACEMENT CHARACTER
          p += step.length;
          run = p;
          continue;
        }
        case detail::byte_class::escape: break;
      }
      flush();
      switch (c) {
        case '"': out.append("\\\""); break;
        case '\\': out.append("\\\\"); break;
        case '\b': out.append("\\b"); break;
        case '\f': out.append("\\f"); break;
        case '\n': out.append("\\n"); break;
        case '\r': out.append("\\r"); break;
        case '\t': out.append("\\t"); break;
        default: {
          const char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xF]};
          out.append(esc, sizeof esc);
        }
      }
      ++p;
      run = p;
    }
  }
  flush();
  out.push_back('"');
}

MCPCORE_DECL bool is_valid_utf8(std::string_view s) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* const end = p + s.size();
  while (p < end) {
    if (end - p >= 8) {
      std::uint64_t word;
      std::memcpy(&word, p, sizeof word);
      if ((word & 0x8080808080808080ULL) == 0) {  // eight ASCII bytes
        p += 8;
        continue;
      }
    }
    if (*p < 0x80) {
      ++p;
      continue;
    }
    const auto step = detail::utf8_sequence(p, end);
    if (!step.valid) return false;
    p += step.length;
  }
  return true;
}

MCPCORE_DECL writer& writer::integer(std::int64_t i) {
  separate();
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, i);
  out_->append(buf, r.ptr);
  return *this;
}

MCPCORE_DECL writer& writer::unsigned_integer(std::uint64_t u) {
  separate();
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, u);
  out_->append(buf, r.ptr);
  return *this;
}

MCPCORE_DECL writer& writer::value(double d) {
  // JSON cannot spell NaN or an infinity: null, as JSON.stringify writes them.
  if (!std::isfinite(d)) return null();
  separate();
  char buf[32];
  // The shortest round-trip form may be plain digits ("18446744073709551616" for 2^64). A
  // reader that keeps integer literals exact (ours among them) refuses those beyond 64 bits, so
  // integral doubles of that size are written in exponent form, which every reader takes as a
  // double.
  constexpr double two_pow_63 = 9223372036854775808.0;
  const auto r = std::fabs(d) >= two_pow_63
                     ? std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific)
                     : std::to_chars(buf, buf + sizeof buf, d);
  out_->append(buf, r.ptr);
  return *this;
}

MCPCORE_DECL writer& writer::value(json::value v) {
  // The recursion below is as deep as the document, which parsing bounded (max_supported_depth).
  MCPCORE_ASSERT(v.exists());
  switch (v.kind()) {
    case kind::null: return null();
    case kind::boolean: return value(v.as_bool());
    case kind::string: return value(v.as_string());
    case kind::number:
      separate();
      detail::append_number(*out_, *v.node());
      return *this;
    case kind::array:
      begin_array();
      for (json::value e : v.elements()) value(e);
      return end_array();
    case kind::object:
      begin_object();
      for (json::member m : v.members()) {
        key(m.key);
        value(m.value());
      }
      return end_object();
  }
  return *this;
}

}  // namespace json
MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_JSON_WRITER_IPP
