// SPDX-License-Identifier: Apache-2.0
// Tests of json::writer, json::append_escaped (escaping and UTF-8 repair) and json::is_valid_utf8.
#include <mcpcore/wire/json_writer.hpp>

#include <doctest/doctest.h>

#include <mcpcore/wire/json.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>  // doctest prints std::error_code operands
#include <string>
#include <string_view>
#include <vector>

using namespace mcpcore;

namespace {

const std::string fffd = "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER in UTF-8

std::string escaped(std::string_view s) {
  std::string out;
  json::append_escaped(out, s);
  return out;
}

// The string a JSON string literal parses back to, or "<error>".
std::string parse_string(std::string_view literal) {
  json::document doc;
  auto r = doc.parse(literal);
  if (!r || !r->is_string()) return "<error>";
  return std::string{r->as_string()};
}

// Compact serialization of a parsed text through writer::value(json::value).
std::string reserialize(std::string_view text) {
  json::document doc{json::parse_options{.allow_duplicate_keys = true}};
  auto r = doc.parse(text);
  if (!r) return "<error: " + r.error().message() + ">";
  std::string out;
  json::writer w{out};
  w.value(*r);
  return out;
}

std::size_t count_fffd(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t at = s.find(fffd); at != std::string_view::npos; at = s.find(fffd, at + fffd.size())) ++n;
  return n;
}

// Reference well-formedness by arithmetic decoding (independent of the library's table walk):
// decode each sequence by its lead byte's length, then reject overlong forms, surrogates and
// values above U+10FFFF.
bool reference_valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if (b0 < 0x80) {
      len = 1;
      cp = b0;
    } else if ((b0 & 0xE0) == 0xC0) {
      len = 2;
      cp = b0 & 0x1Fu;
    } else if ((b0 & 0xF0) == 0xE0) {
      len = 3;
      cp = b0 & 0x0Fu;
    } else if ((b0 & 0xF8) == 0xF0) {
      len = 4;
      cp = b0 & 0x07u;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (std::size_t k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3Fu);
    }
    const std::uint32_t min_for_len[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_for_len[len]) return false;                 // overlong
    if (cp >= 0xD800 && cp <= 0xDFFF) return false;          // surrogate
    if (cp > 0x10FFFF) return false;                         // out of range
    i += len;
  }
  return true;
}

std::string bytes(std::initializer_list<unsigned char> list) {
  std::string s;
  for (unsigned char c : list) s.push_back(static_cast<char>(c));
  return s;
}

}  // namespace

TEST_SUITE("json_writer") {
  TEST_CASE("commas are placed between members and elements at every depth") {
    std::string out;
    json::writer w{out};

    SUBCASE("nested objects and arrays") {
      w.begin_object()
          .member("a", 1)
          .key("b")
          .begin_array()
          .value(1)
          .begin_object()
          .end_object()
          .begin_array()
          .end_array()
          .value("x")
          .begin_array()
          .value(true)
          .value(false)
          .end_array()
          .end_array()
          .key("c")
          .begin_object()
          .member("d", nullptr)
          .key("e")
          .begin_object()
          .end_object()
          .end_object()
          .member("f", "last")
          .end_object();
      CHECK(out == R"({"a":1,"b":[1,{},[],"x",[true,false]],"c":{"d":null,"e":{}},"f":"last"})");
    }
    SUBCASE("the header's example") {
      w.begin_object().member("name", "ping").member("n", 3).end_object();
      CHECK(out == R"({"name":"ping","n":3})");
    }
    SUBCASE("empty containers") {
      w.begin_array().begin_array().end_array().begin_object().end_object().end_array();
      CHECK(out == "[[],{}]");
    }
    SUBCASE("values in a row at the top level are comma-separated") {
      w.value(1).value("two").null();
      CHECK(out == R"(1,"two",null)");
    }
    SUBCASE("a key whose text ends in ':' or '{' does not confuse the separator") {
      // The separator looks at the last byte, which is always the closing quote of a string.
      w.begin_array().value("{").value("[").value(":").end_array();
      CHECK(out == R"(["{","[",":"])");
      out.clear();
      json::writer w2{out};
      w2.begin_object().member("{", 1).member(":", "[").member("x", 2).end_object();
      CHECK(out == R"({"{":1,":":"[","x":2})");
    }
    SUBCASE("out() is the string being written") {
      CHECK(&w.out() == &out);
      w.value(5);
      CHECK(w.out() == "5");
    }
  }

  TEST_CASE("a writer appends after existing bytes without a leading comma") {
    SUBCASE("after a prefix") {
      std::string out = "data: ";
      json::writer w{out};
      w.begin_object().member("a", 1).end_object();
      CHECK(out == R"(data: {"a":1})");
    }
    SUBCASE("after bytes that end in a value") {
      std::string out = "[1";
      json::writer w{out};
      w.value(2);
      CHECK(out == "[12");  // the writer owns only what it writes
    }
    SUBCASE("after an open object and key written by someone else") {
      std::string out = R"({"result":)";
      json::writer w{out};
      w.begin_array().value(1).value(2).end_array();
      out.push_back('}');
      CHECK(out == R"({"result":[1,2]})");
    }
    SUBCASE("two writers in turn on one string") {
      std::string out = "x";
      {
        json::writer a{out};
        a.begin_array().value(1);
      }
      json::writer b{out};
      b.value(2);  // b starts after "x[1" and writes no separator of its own
      CHECK(out == "x[12");
    }
  }

  TEST_CASE("C0 controls, quote and backslash are escaped (RFC 8259 §7)") {
    SUBCASE("short forms") {
      CHECK(escaped("\b") == R"("\b")");
      CHECK(escaped("\f") == R"("\f")");
      CHECK(escaped("\n") == R"("\n")");
      CHECK(escaped("\r") == R"("\r")");
      CHECK(escaped("\t") == R"("\t")");
      CHECK(escaped("\"") == R"("\"")");
      CHECK(escaped("\\") == R"("\\")");
    }
    SUBCASE("every C0 control 0x00-0x1F") {
      for (unsigned c = 0; c < 0x20; ++c) {
        CAPTURE(c);
        std::string expected;
        switch (c) {
          case 0x08: expected = "\\b"; break;
          case 0x0C: expected = "\\f"; break;
          case 0x0A: expected = "\\n"; break;
          case 0x0D: expected = "\\r"; break;
          case 0x09: expected = "\\t"; break;
          default: {
            static constexpr char hex[] = "0123456789abcdef";  // lowercase hex
            expected = "\\u00";
            expected.push_back(hex[c >> 4]);
            expected.push_back(hex[c & 0xF]);
          }
        }
        const std::string input(1, static_cast<char>(c));
        CHECK(escaped(input) == "\"" + expected + "\"");
        CHECK(parse_string(escaped(input)) == input);
      }
      CHECK(escaped(std::string_view{"\0", 1}) == R"("\u0000")");
      CHECK(escaped("\x1f") == R"("\u001f")");
      CHECK(escaped("\x1b") == R"("\u001b")");
    }
    SUBCASE("printable ASCII other than quote and backslash is copied, '/' and DEL included") {
      for (unsigned c = 0x20; c < 0x80; ++c) {
        if (c == '"' || c == '\\') continue;
        CAPTURE(c);
        const std::string input(1, static_cast<char>(c));
        CHECK(escaped(input) == "\"" + input + "\"");
      }
      CHECK(escaped("/") == "\"/\"");
      CHECK(escaped("\x7f") == "\"\x7f\"");
    }
    SUBCASE("mixed text keeps unescaped runs intact") {
      CHECK(escaped(std::string_view{"a\0b\"c\\d\ne", 9}) == R"("a\u0000b\"c\\d\ne")");
      CHECK(escaped("") == R"("")");
      CHECK(escaped("plain text") == R"("plain text")");
    }
    SUBCASE("append_escaped appends to existing content") {
      std::string out = "key=";
      json::append_escaped(out, "v\n");
      CHECK(out == "key=\"v\\n\"");
    }
  }

  TEST_CASE("a byte needing attention is found at every offset of the 8-byte fast path") {
    // append_escaped skips plain bytes eight at a time; every other byte value, at every position
    // of three words, must still be escaped or replaced exactly as the byte-wise rules say.
    static constexpr char hex[] = "0123456789abcdef";
    for (unsigned b = 0; b < 0x100; ++b) {
      std::string expected_byte;
      if (b == '"' || b == '\\') {
        expected_byte = std::string{"\\"} + static_cast<char>(b);
      } else if (b == '\b') {
        expected_byte = "\\b";
      } else if (b == '\f') {
        expected_byte = "\\f";
      } else if (b == '\n') {
        expected_byte = "\\n";
      } else if (b == '\r') {
        expected_byte = "\\r";
      } else if (b == '\t') {
        expected_byte = "\\t";
      } else if (b < 0x20) {
        expected_byte = std::string{"\\u00"} + hex[b >> 4] + hex[b & 0xF];
      } else if (b >= 0x80) {
        expected_byte = "\xEF\xBF\xBD";  // alone between ASCII bytes, every non-ASCII byte is ill-formed
      } else {
        expected_byte = std::string(1, static_cast<char>(b));
      }
      for (std::size_t at = 0; at < 24; ++at) {
        std::string input(24, 'a');
        input[at] = static_cast<char>(b);
        const std::string expected =
            "\"" + std::string(at, 'a') + expected_byte + std::string(23 - at, 'a') + "\"";
        if (escaped(input) != expected) {
          CAPTURE(b);
          CAPTURE(at);
          CHECK(escaped(input) == expected);
        }
      }
    }
  }

  TEST_CASE("well-formed multi-byte UTF-8 passes through unchanged") {
    const std::string samples[] = {
        "\xC2\x80",              // U+0080, smallest 2-byte
        "\xC3\xA9",              // é
        "\xDF\xBF",              // U+07FF, largest 2-byte
        "\xE0\xA0\x80",          // U+0800, smallest 3-byte
        "\xE2\x82\xAC",          // €
        "\xED\x9F\xBF",          // U+D7FF, just below the surrogates
        "\xEE\x80\x80",          // U+E000, just above the surrogates
        "\xEF\xBF\xBD",          // U+FFFD itself
        "\xEF\xBF\xBF",          // U+FFFF
        "\xE2\x80\xA8",          // U+2028 LINE SEPARATOR (legal unescaped in JSON)
        "\xF0\x90\x80\x80",      // U+10000, smallest 4-byte
        "\xF0\x9F\x98\x80",      // U+1F600
        "\xF4\x8F\xBF\xBF",      // U+10FFFF, the last code point
        "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80!",
    };
    for (const std::string& s : samples) {
      CAPTURE(s);
      CHECK(json::is_valid_utf8(s));
      CHECK(escaped(s) == "\"" + s + "\"");
      CHECK(parse_string(escaped(s)) == s);
    }
  }

  TEST_CASE("ill-formed UTF-8 is replaced by maximal subparts (Unicode §3.9, Table 3-7)") {
    struct repair {
      const char* what;
      std::string in;
      std::string out;
    };
    const std::string F = fffd;
    const repair cases[] = {
        {"lone continuation byte", bytes({0x80}), F},
        {"lone last continuation byte", bytes({0xBF}), F},
        {"C0 AF: overlong lead C0 is never valid, then a stray continuation", bytes({0xC0, 0xAF}), F + F},
        {"C1 BF: overlong lead C1", bytes({0xC1, 0xBF}), F + F},
        {"E0 80: E0 needs A0..BF next", bytes({0xE0, 0x80}), F + F},
        {"E0 9F BF: overlong 3-byte", bytes({0xE0, 0x9F, 0xBF}), F + F + F},
        {"E0 A0 then 'b': a truncated sequence is one subpart", bytes({0xE0, 0xA0, 'b'}), F + "b"},
        {"ED A0 80: UTF-8 encoded surrogate", bytes({0xED, 0xA0, 0x80}), F + F + F},
        {"ED BF BF: UTF-8 encoded low surrogate", bytes({0xED, 0xBF, 0xBF}), F + F + F},
        {"F0 8F BF BF: overlong 4-byte", bytes({0xF0, 0x8F, 0xBF, 0xBF}), F + F + F + F},
        {"F4 90 80 80: above U+10FFFF", bytes({0xF4, 0x90, 0x80, 0x80}), F + F + F + F},
        {"F0 9F 98 at the end: truncated 4-byte", bytes({0xF0, 0x9F, 0x98}), F},
        {"F0 9F 98 then 'x'", bytes({0xF0, 0x9F, 0x98, 'x'}), F + "x"},
        {"C2 at the end", bytes({0xC2}), F},
        {"C2 then 'a'", bytes({0xC2, 'a'}), F + "a"},
        {"E2 82 at the end", bytes({0xE2, 0x82}), F},
        {"two truncated sequences in a row", bytes({0xE2, 0x82, 0xE2, 0x82}), F + F},
        {"valid, invalid, valid", bytes({0xC3, 0xA9, 0xFF, 0xC3, 0xA9}), "\xC3\xA9" + F + "\xC3\xA9"},
        {"F5 80 80 80: F5 can never begin a sequence", bytes({0xF5, 0x80, 0x80, 0x80}), F + F + F + F},
        // Unicode §3.9, Table 3-8: 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64.
        {"Unicode Table 3-8",
         bytes({0x61, 0xF1, 0x80, 0x80, 0xE1, 0x80, 0xC2, 0x62, 0x80, 0x63, 0x80, 0xBF, 0x64}),
         "a" + F + F + F + "b" + F + "c" + F + F + "d"},
        {"escapes around a repair", std::string{"a"} + bytes({0x80}) + "\"b\n", "a" + F + "\\\"b\\n"},
    };
    for (const repair& c : cases) {
      CAPTURE(c.what);
      CHECK_FALSE(json::is_valid_utf8(c.in));
      CHECK(escaped(c.in) == "\"" + c.out + "\"");
    }

    SUBCASE("bytes F5..FF are replaced one for one") {
      for (unsigned b = 0xF5; b <= 0xFF; ++b) {
        CAPTURE(b);
        const std::string one(1, static_cast<char>(b));
        CHECK_FALSE(json::is_valid_utf8(one));
        CHECK(escaped(one) == "\"" + fffd + "\"");
        const std::string three(3, static_cast<char>(b));
        CHECK(count_fffd(escaped(three)) == 3);
      }
    }
    SUBCASE("every lone byte from 0x80 up is one replacement") {
      for (unsigned b = 0x80; b <= 0xFF; ++b) {
        CAPTURE(b);
        const std::string one(1, static_cast<char>(b));
        CHECK(escaped(one) == "\"" + fffd + "\"");
      }
    }
    SUBCASE("the repaired output is valid UTF-8 and parses") {
      for (const repair& c : cases) {
        CAPTURE(c.what);
        const std::string out = escaped(c.in);
        CHECK(json::is_valid_utf8(out));
        CHECK(parse_string(out) == parse_string("\"" + c.out + "\""));
      }
    }
  }

  TEST_CASE("is_valid_utf8 agrees with a reference decoder and with the parser (RFC 8259 §8.1)") {
    CHECK(json::is_valid_utf8(""));
    CHECK(json::is_valid_utf8("ascii only"));
    CHECK(json::is_valid_utf8(std::string_view{"\0", 1}));
    // The reference decoder itself is checked on known cases before it judges the library.
    CHECK(reference_valid_utf8("caf\xC3\xA9 \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF \xED\x9F\xBF"));
    CHECK_FALSE(reference_valid_utf8(bytes({0xC0, 0xAF})));
    CHECK_FALSE(reference_valid_utf8(bytes({0xE0, 0x9F, 0xBF})));
    CHECK_FALSE(reference_valid_utf8(bytes({0xED, 0xA0, 0x80})));
    CHECK_FALSE(reference_valid_utf8(bytes({0xF4, 0x90, 0x80, 0x80})));
    CHECK_FALSE(reference_valid_utf8(bytes({0xF0, 0x9F, 0x98})));
    CHECK_FALSE(reference_valid_utf8(bytes({0xF8, 0x88, 0x80, 0x80, 0x80})));

    // Every string of up to three bytes over bytes at the edges of Table 3-7's ranges.
    const unsigned char edge[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1,
                                  0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3,
                                  0xF4, 0xF5, 0xFF};
    std::vector<std::string> inputs;
    for (unsigned char a : edge) {
      inputs.push_back(bytes({a}));
      for (unsigned char b : edge) {
        inputs.push_back(bytes({a, b}));
        for (unsigned char c : edge) inputs.push_back(bytes({a, b, c}));
      }
    }
    // And some four-byte sequences.
    const unsigned char leads4[] = {0xF0, 0xF1, 0xF4};
    const unsigned char lasts[] = {0x80, 0xBF, 0x41};
    for (unsigned char b : edge)
      for (unsigned char l : leads4)
        for (unsigned char d : lasts) inputs.push_back(bytes({l, b, 0x80, d}));

    std::size_t mismatches = 0;
    std::size_t parser_mismatches = 0;
    std::size_t repair_failures = 0;
    json::document doc;
    for (const std::string& s : inputs) {
      const bool valid = json::is_valid_utf8(s);
      if (valid != reference_valid_utf8(s)) ++mismatches;
      // The parser validates UTF-8 too; inside a string without controls, quotes or
      // backslashes it must agree.
      bool plain = true;
      for (char ch : s) plain = plain && static_cast<unsigned char>(ch) >= 0x20 && ch != '"' && ch != '\\';
      if (plain) {
        auto r = doc.parse("\"" + s + "\"");
        if (r.has_value() != valid) ++parser_mismatches;
        if (!r && r.error() != json::json_errc::invalid_utf8) ++parser_mismatches;
      }
      // Whatever the input, the escaped output is valid JSON holding valid UTF-8, and it equals
      // the input exactly when the input was valid.
      const std::string out = escaped(s);
      auto back = doc.parse(out);
      if (!back || !back->is_string() || !json::is_valid_utf8(back->as_string()) ||
          (back->as_string() == s) != valid)
        ++repair_failures;
    }
    CHECK(inputs.size() > 15000);
    CHECK(mismatches == 0);
    CHECK(parser_mismatches == 0);
    CHECK(repair_failures == 0);
  }

  TEST_CASE("append_escaped round-trips through the parser") {
    const std::string tricky[] = {
        "",
        "plain",
        "quote \" and backslash \\",
        "\\\"",
        "\\u0041 stays literal",
        std::string{"nul \0 inside", 12},
        "\x01\x02\x1f\x7f",
        "tabs\tand\nnewlines\r\n",
        "slash / and </script>",
        "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80",
        "\xE2\x80\xA8\xE2\x80\xA9",
        "\xEF\xBB\xBF leading BOM character",
        "\xF4\x8F\xBF\xBF",
        // Invalid inputs: they must still produce parseable JSON.
        bytes({0x80}),
        bytes({0xC0, 0xAF}),
        bytes({0xED, 0xA0, 0x80}),
        bytes({0xF4, 0x90, 0x80, 0x80}),
        bytes({'a', 0xF0, 0x9F, 0x98}),
        bytes({0xFF, '"', 0xFE, '\\'}),
    };
    json::document doc;
    for (const std::string& s : tricky) {
      CAPTURE(s);
      const std::string out = escaped(s);
      auto r = doc.parse(out);
      REQUIRE(r);
      REQUIRE(r->is_string());
      if (json::is_valid_utf8(s)) {
        CHECK(std::string{r->as_string()} == s);
      } else {
        CHECK(json::is_valid_utf8(r->as_string()));
        CHECK(count_fffd(r->as_string()) > 0);
      }
      // Escaping is a function of the text: the parsed-back string escapes identically.
      CHECK(escaped(r->as_string()) == out);
    }
  }

  TEST_CASE("integers are written exactly") {
    std::string out;
    json::writer w{out};
    SUBCASE("int64 extremes") {
      w.value(std::numeric_limits<std::int64_t>::min());
      CHECK(out == "-9223372036854775808");
      out.clear();
      json::writer w2{out};
      w2.value(std::numeric_limits<std::int64_t>::max());
      CHECK(out == "9223372036854775807");
    }
    SUBCASE("uint64 max") {
      w.value(std::numeric_limits<std::uint64_t>::max());
      CHECK(out == "18446744073709551615");
    }
    SUBCASE("small and mixed integer types") {
      w.begin_array()
          .value(std::uint8_t{255})
          .value(std::int8_t{-128})
          .value(static_cast<unsigned short>(65535))
          .value(static_cast<short>(-32768))
          .value(0)
          .value(-1)
          .value(4294967295u)
          .value(-2147483647L - 1)
          .value(std::size_t{12})
          .end_array();
      CHECK(out == "[255,-128,65535,-32768,0,-1,4294967295,-2147483648,12]");
    }
    SUBCASE("bool is a boolean, not an integer") {
      w.begin_array().value(true).value(false).end_array();
      CHECK(out == "[true,false]");
    }
    SUBCASE("written integers parse back to the same value") {
      w.begin_array()
          .value(std::numeric_limits<std::int64_t>::min())
          .value(std::numeric_limits<std::uint64_t>::max())
          .end_array();
      json::document doc;
      auto r = doc.parse(out);
      REQUIRE(r);
      auto it = r->elements().begin();
      CHECK(*(*it).to_int64() == std::numeric_limits<std::int64_t>::min());
      ++it;
      CHECK(*(*it).to_uint64() == std::numeric_limits<std::uint64_t>::max());
    }
  }

  TEST_CASE("doubles are written in shortest round-trip form, NaN and infinities become null") {
    auto write = [](double d) {
      std::string out;
      json::writer w{out};
      w.value(d);
      return out;
    };
    CHECK(write(0.1) == "0.1");
    CHECK(write(1.5) == "1.5");
    CHECK(write(-2.25) == "-2.25");
    CHECK(write(1e300) == "1e+300");
    CHECK(write(1.0) == "1");
    CHECK(write(-0.0) == "-0");
    CHECK(write(0.0) == "0");
    CHECK(write(5e-324) == "5e-324");
    CHECK(write(std::numeric_limits<double>::quiet_NaN()) == "null");
    CHECK(write(std::numeric_limits<double>::infinity()) == "null");
    CHECK(write(-std::numeric_limits<double>::infinity()) == "null");

    SUBCASE("a float is written as a double") {
      std::string out;
      json::writer w{out};
      w.value(0.5f);
      CHECK(out == "0.5");
    }
    SUBCASE("non-finite values in a container keep the commas right") {
      std::string out;
      json::writer w{out};
      w.begin_array().value(1.5).value(std::nan("")).value(2.5).end_array();
      CHECK(out == "[1.5,null,2.5]");
    }
    SUBCASE("every written double is valid JSON and parses back to itself") {
      const double values[] = {0.1,     1e300,   -1e-300,  5e-324, 1.7976931348623157e308,
                               123.456, 1e21,    1e-7,     -0.0,   0.30000000000000004,
                               2.0 / 3, 9007199254740993.0};
      json::document doc;
      for (double d : values) {
        CAPTURE(d);
        const std::string text = write(d);
        auto r = doc.parse(text);
        REQUIRE(r);
        REQUIRE(r->to_double());
        CHECK(*r->to_double() == d);
        CHECK(std::signbit(*r->to_double()) == std::signbit(d));
      }
    }
  }

  TEST_CASE("null, nullptr, optional and raw values") {
    std::string out;
    json::writer w{out};
    SUBCASE("null() and nullptr") {
      w.begin_array().null().value(nullptr).end_array();
      CHECK(out == "[null,null]");
    }
    SUBCASE("optional members write their value or null") {
      w.begin_object()
          .member("some", std::optional<int>{7})
          .member("none", std::optional<int>{})
          .member("s", std::optional<std::string>{"x"})
          .member("d", std::optional<double>{})
          .member("b", std::optional<bool>{false})
          .end_object();
      CHECK(out == R"({"some":7,"none":null,"s":"x","d":null,"b":false})");
    }
    SUBCASE("string value overloads") {
      const std::string s = "std::string";
      const std::string_view sv = "view";
      const char* cs = "c string";
      w.begin_array().value(s).value(sv).value(cs).value("literal").end_array();
      CHECK(out == R"(["std::string","view","c string","literal"])");
    }
    SUBCASE("raw and raw_member write pre-serialized JSON verbatim") {
      w.begin_object()
          .raw_member("data", R"({"k":[1, 2]})")
          .key("list")
          .begin_array()
          .raw("1.50")
          .raw(R"("s")")
          .end_array()
          .end_object();
      CHECK(out == R"({"data":{"k":[1, 2]},"list":[1.50,"s"]})");
    }
    SUBCASE("keys are escaped like values") {
      w.begin_object().member("a\"b\n", 1).end_object();
      CHECK(out == R"({"a\"b\n":1})");
    }
  }

  TEST_CASE("value(json::value) reproduces compact input byte for byte") {
    const char* corpus[] = {
        "null",
        "true",
        "false",
        "0",
        "-0",
        "1.50",
        "1E5",
        "1e-400",
        "-0.0",
        "0e0",
        "2E+10",
        "18446744073709551615",
        "-9223372036854775808",
        "9223372036854775807",
        R"("")",
        R"("a\"b\\c\nd\u0001")",
        "\"caf\xC3\xA9 \xF0\x9F\x98\x80\"",
        "[]",
        "{}",
        "[[],{},[[]],{\"a\":{}}]",
        R"({"z":1,"a":[1.50,-0,1E5,18446744073709551615],"m":{"x":null,"y":true,"w":false}})",
        R"([0,-0,0.0,-0.0,1,-1,1.0,1e1,1E1,1e+1,1e-1,0.10,100])",
        R"({"id":"1","n":1,"f":1.0})",
        R"({"dup":1,"dup":2})",
    };
    for (const char* text : corpus) {
      CAPTURE(text);
      CHECK(reserialize(text) == text);
    }
  }

  TEST_CASE("value(json::value) compacts whitespace and re-escapes strings minimally") {
    CHECK(reserialize(" { \"a\" : [ 1 , 2.0 ] , \"b\" : { } } ") == R"({"a":[1,2.0],"b":{}})");
    CHECK(reserialize(R"("\u0041\/\u00e9\ud83d\ude00")") == "\"A/\xC3\xA9\xF0\x9F\x98\x80\"");
    CHECK(reserialize(R"("\u001F\u0008")") == R"("\u001f\b")");
    CHECK(reserialize(R"({"\u0061":1})") == R"({"a":1})");

    SUBCASE("a parsed value inside a hand-written envelope") {
      json::document doc;
      auto r = doc.parse(R"({"x": [1, 2.50]})");
      REQUIRE(r);
      std::string out;
      json::writer w{out};
      w.begin_object().member("jsonrpc", "2.0").key("result").value(*r).member("id", 3).end_object();
      CHECK(out == R"({"jsonrpc":"2.0","result":{"x":[1,2.50]},"id":3})");
      out.clear();
      json::writer w2{out};
      w2.begin_array().value(r->find("x")).value(r->find("x")).end_array();
      CHECK(out == "[[1,2.50],[1,2.50]]");
    }
  }
}
