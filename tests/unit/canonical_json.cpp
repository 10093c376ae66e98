// SPDX-License-Identifier: Apache-2.0
// Tests of canonical JSON: sorted keys at every depth, compact output, numbers kept as written.
#include <mcpcore/wire/canonical_json.hpp>

#include <doctest/doctest.h>

#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <ostream>  // doctest prints std::error_code operands
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

using namespace mcpcore;

namespace {

// The canonical text, or "<error: name>" for a refused input.
std::string canon(std::string_view text, const json::parse_options& options = {}) {
  auto r = canonical_json(text, options);
  if (r) return *r;
  const std::error_code ec = r.error().code();
  if (ec.category() != json::json_category()) return "<foreign error: " + ec.message() + ">";
  switch (static_cast<json::json_errc>(ec.value())) {
    case json::json_errc::empty_input: return "<error: empty_input>";
    case json::json_errc::syntax_error: return "<error: syntax_error>";
    case json::json_errc::invalid_utf8: return "<error: invalid_utf8>";
    case json::json_errc::invalid_string: return "<error: invalid_string>";
    case json::json_errc::invalid_number: return "<error: invalid_number>";
    case json::json_errc::depth_exceeded: return "<error: depth_exceeded>";
    case json::json_errc::duplicate_key: return "<error: duplicate_key>";
    case json::json_errc::too_large: return "<error: too_large>";
  }
  return "<error: unknown>";
}

// Documents of many shapes, some deliberately unsorted and spaced out.
const char* const corpus[] = {
    "null",
    "true",
    "0",
    "-0",
    "1.0",
    "1e2",
    "\"text\"",
    "[]",
    "{}",
    R"({"b":1,"a":2})",
    R"( { "z" : [ 3 , 2 , 1 ] , "y" : { "d" : 4 , "c" : 3 } } )",
    R"([{"b":1,"a":2},{"d":[{"f":1,"e":2}],"c":3}])",
    R"({"tool":"exec","arguments":{"cmd":"ls","args":["-l","/tmp"],"env":{"PATH":"/bin","HOME":"/root"}}})",
    R"({"\u00e9":1,"e":2,"E":3,"":4,"\ud83d\ude00":5,"\uE000":6})",
    R"({"n":[1,1.0,1e0,1E0,-0,0.10,18446744073709551615,-9223372036854775808]})",
    R"({"s":"line\nbreak\ttab\u0001 \"quoted\" back\\slash \/ \u0041"})",
    R"({"a":{"b":{"c":{"d":{"e":{"f":{"h":1,"g":2}}}}}}})",
    R"([[[{"b":[{"d":1,"c":2}],"a":null}]]])",
};

}  // namespace

TEST_SUITE("canonical_json") {
  TEST_CASE("members are sorted by key at every depth (approvals.md/the-flow)") {
    SUBCASE("top level") {
      CHECK(canon(R"({"b":1,"a":2,"c":3})") == R"({"a":2,"b":1,"c":3})");
    }
    SUBCASE("nested objects") {
      CHECK(canon(R"({"z":{"y":{"b":1,"a":2},"x":0},"m":1})") == R"({"m":1,"z":{"x":0,"y":{"a":2,"b":1}}})");
    }
    SUBCASE("objects inside arrays, and arrays inside those") {
      CHECK(canon(R"([{"b":1,"a":2},{"d":[{"f":1,"e":2}],"c":3}])") ==
            R"([{"a":2,"b":1},{"c":3,"d":[{"e":2,"f":1}]}])");
    }
    SUBCASE("array order is kept: arrays are sequences, not sets") {
      CHECK(canon("[3,1,2]") == "[3,1,2]");
      CHECK(canon(R"([{"b":1},{"a":1}])") == R"([{"b":1},{"a":1}])");
    }
    SUBCASE("prefixes sort first, and the empty key before all") {
      CHECK(canon(R"({"ab":1,"a":2,"":3,"aa":4,"b":5})") == R"({"":3,"a":2,"aa":4,"ab":1,"b":5})");
    }
    SUBCASE("keys sort by their unescaped text") {
      // "\u0062" is "b", so it sorts after "a" and before "c", and is written unescaped.
      CHECK(canon(R"({"c":1,"\u0062":2,"a":3})") == R"({"a":3,"b":2,"c":1})");
    }
    SUBCASE("wide objects whose members are wide objects") {
      // Every level sorts its own segment of a shared scratch stack; nested levels must not
      // disturb the enclosing level's members.
      std::string text = "{";
      std::string expected = "{";
      for (int i = 19; i >= 0; --i) {
        const char outer = static_cast<char>('a' + i);
        text += std::string{"\""} + outer + "\":{";
        for (int j = 19; j >= 0; --j) {
          text += std::string{"\""} + static_cast<char>('a' + j) + "\":" + std::to_string(i * 100 + j);
          if (j != 0) text += ',';
        }
        text += '}';
        if (i != 0) text += ',';
      }
      text += '}';
      for (int i = 0; i < 20; ++i) {
        if (i != 0) expected += ',';
        expected += std::string{"\""} + static_cast<char>('a' + i) + "\":{";
        for (int j = 0; j < 20; ++j) {
          if (j != 0) expected += ',';
          expected += std::string{"\""} + static_cast<char>('a' + j) + "\":" + std::to_string(i * 100 + j);
        }
        expected += '}';
      }
      expected += '}';
      CHECK(canon(text) == expected);
    }
  }

  TEST_CASE("keys compare as UTF-8 bytes, which is code point order") {
    SUBCASE("uppercase, lowercase, then non-ASCII") {
      CHECK(canon("{\"\xC3\xA9\":3,\"a\":2,\"B\":1}") == "{\"B\":1,\"a\":2,\"\xC3\xA9\":3}");
    }
    SUBCASE("bytes above 0x7F compare as unsigned") {
      CHECK(canon("{\"\xC2\x80\":2,\"\x7F\":1}") == "{\"\x7F\":1,\"\xC2\x80\":2}");
    }
    SUBCASE("U+E000 sorts before U+10000 (code points; RFC 8785's UTF-16 order would differ)") {
      CHECK(canon(R"({"\ud800\udc00":2,"\ue000":1})") == "{\"\xEE\x80\x80\":1,\"\xF0\x90\x80\x80\":2}");
    }
  }

  TEST_CASE("output is compact: whitespace between tokens is removed") {
    CHECK(canon(" {\n\t\"a\" : [ 1 , { \"b\" : null } ] ,\r\n \"c\" : \"  spaced  \" } ") ==
          R"({"a":[1,{"b":null}],"c":"  spaced  "})");
    CHECK(canon(" [ ] ") == "[]");
    CHECK(canon(" { } ") == "{}");
    CHECK(canon("\n7\n") == "7");
  }

  TEST_CASE("numbers keep their source spelling (approvals.md/the-flow: 1, 1.0 and \"1\" differ)") {
    CHECK(canon("1.0") == "1.0");
    CHECK(canon("1e2") == "1e2");
    CHECK(canon("1E+2") == "1E+2");
    CHECK(canon("-0") == "-0");
    CHECK(canon("-0.0") == "-0.0");
    CHECK(canon("0.10") == "0.10");
    CHECK(canon("18446744073709551615") == "18446744073709551615");
    CHECK(canon("-9223372036854775808") == "-9223372036854775808");
    CHECK(canon(R"({"b":1.50,"a":-0})") == R"({"a":-0,"b":1.50})");

    CHECK(canon(R"({"x":1})") != canon(R"({"x":1.0})"));
    CHECK(canon(R"({"x":1})") != canon(R"({"x":1e0})"));
    CHECK(canon(R"({"x":1})") != canon(R"({"x":"1"})"));
    CHECK(canon(R"({"x":0})") != canon(R"({"x":-0})"));
  }

  TEST_CASE("strings are re-escaped minimally") {
    CHECK(canon(R"("\u0041")") == R"("A")");
    CHECK(canon(R"("\/")") == R"("/")");
    CHECK(canon(R"("\u00e9")") == "\"\xC3\xA9\"");
    CHECK(canon(R"("\ud83d\ude00")") == "\"\xF0\x9F\x98\x80\"");
    CHECK(canon(R"("\u000A\u0009\u0008\u000C\u000D")") == R"("\n\t\b\f\r")");
    CHECK(canon(R"("\u001F\u0000")") == R"("\u001f\u0000")");
    CHECK(canon(R"("\u0022\u005C")") == R"("\"\\")");
    CHECK(canon(R"("\u007f")") == "\"\x7F\"");
    CHECK(canon(R"({"k\u0041":"v\/"})") == R"({"kA":"v/"})");
    // Two spellings of one string are one canonical text.
    CHECK(canon(R"(["\u0061b\u0063"])") == canon(R"(["abc"])"));
  }

  TEST_CASE("canonical form is idempotent and valid JSON") {
    for (const char* text : corpus) {
      CAPTURE(text);
      const std::string once = canon(text);
      REQUIRE(once.find("<error") == std::string::npos);
      CHECK(canon(once) == once);
      // No whitespace outside strings survives: the only spaces left are inside string values.
      json::document doc;
      auto r = doc.parse(once);
      REQUIRE(r);
      std::string rewritten;
      json::writer w{rewritten};
      w.value(*r);
      CHECK(rewritten == once);  // canonical text is its own compact document-order rendering
    }
  }

  TEST_CASE("key order in the source does not matter") {
    SUBCASE("every permutation of four members gives one text") {
      std::array<std::string, 4> members = {
          R"("alpha":1)",
          R"("beta":[1,{"y":2,"x":1}])",
          R"("gamma":{"q":null,"p":true})",
          R"("delta":"d")",
      };
      std::sort(members.begin(), members.end());
      const std::string expected = R"({"alpha":1,"beta":[1,{"x":1,"y":2}],"delta":"d","gamma":{"p":true,"q":null}})";
      std::size_t permutations = 0;
      do {
        std::string text = "{";
        for (std::size_t i = 0; i < members.size(); ++i) {
          if (i != 0) text += ',';
          text += members[i];
        }
        text += '}';
        CAPTURE(text);
        CHECK(canon(text) == expected);
        ++permutations;
      } while (std::next_permutation(members.begin(), members.end()));
      CHECK(permutations == 24);
    }
    SUBCASE("nested permutations and whitespace") {
      CHECK(canon(R"({"args":{"b":[{"d":1,"c":2}],"a":0},"name":"t"})") ==
            canon(R"( { "name" : "t" , "args" : { "a" : 0 , "b" : [ { "c" : 2 , "d" : 1 } ] } } )"));
    }
  }

  TEST_CASE("invalid JSON returns its json_errc") {
    CHECK(canon("") == "<error: empty_input>");
    CHECK(canon("{") == "<error: syntax_error>");
    CHECK(canon(R"({"a":1,})") == "<error: syntax_error>");
    CHECK(canon("\"\xff\"") == "<error: invalid_utf8>");
    CHECK(canon(R"("\ud800")") == "<error: invalid_string>");
    CHECK(canon("01") == "<error: invalid_number>");
    CHECK(canon("[[[[1]]]]", {.max_depth = 2}) == "<error: depth_exceeded>");
    CHECK(canon("[1,2,3,4,5,6]", {.max_bytes = 5}) == "<error: too_large>");

    auto r = canonical_json("[1,");
    REQUIRE_FALSE(r);
    CHECK(&r.error().code().category() == &json::json_category());
    CHECK(r.error() == json::json_errc::syntax_error);
  }

  TEST_CASE("duplicate keys are refused by default and keep source order when allowed") {
    SUBCASE("refused by default, at any depth") {
      CHECK(canon(R"({"a":1,"a":2})") == "<error: duplicate_key>");
      CHECK(canon(R"({"x":[{"k":1,"k":1}]})") == "<error: duplicate_key>");
      CHECK(canon(R"({"a":1,"\u0061":2})") == "<error: duplicate_key>");
    }
    SUBCASE("allowed: the stable sort keeps duplicates in source order") {
      const json::parse_options allow{.allow_duplicate_keys = true};
      CHECK(canon(R"({"b":1,"a":2,"b":3,"a":0})", allow) == R"({"a":2,"a":0,"b":1,"b":3})");
      CHECK(canon(R"({"a":0,"b":1,"a":2})", allow) == R"({"a":0,"a":2,"b":1})");
      CHECK(canon(R"({"a":2,"b":1,"a":0})", allow) == R"({"a":2,"a":0,"b":1})");
      CHECK(canon(R"({"o":{"k":"first","j":0,"k":"second"},"a":[{"z":1,"z":2}]})", allow) ==
            R"({"a":[{"z":1,"z":2}],"o":{"j":0,"k":"first","k":"second"}})");
    }
    SUBCASE("many duplicates with many distinct keys stay stable") {
      // Enough members that a non-stable sort would be likely to reorder equal keys.
      std::string text = "{";
      for (int i = 0; i < 64; ++i) {
        if (i != 0) text += ',';
        text += "\"k" + std::to_string(i % 4) + "\":" + std::to_string(i);
      }
      text += '}';
      std::string expected = "{";
      bool first = true;
      for (int k = 0; k < 4; ++k)
        for (int i = k; i < 64; i += 4) {
          if (!first) expected += ',';
          first = false;
          expected += "\"k" + std::to_string(k) + "\":" + std::to_string(i);
        }
      expected += '}';
      CHECK(canon(text, {.allow_duplicate_keys = true}) == expected);
    }
  }

  TEST_CASE("write_canonical writes through a caller's writer") {
    json::document doc;
    auto r = doc.parse(R"({"b":{"d":1,"c":2},"a":[{"f":0,"e":1.0}]})");
    REQUIRE(r);
    const std::string expected = R"({"a":[{"e":1.0,"f":0}],"b":{"c":2,"d":1}})";

    SUBCASE("alone") {
      std::string out;
      json::writer w{out};
      write_canonical(w, *r);
      CHECK(out == expected);
    }
    SUBCASE("inside an envelope, with separators placed by the writer") {
      std::string out = "prefix:";
      json::writer w{out};
      w.begin_array().value(1);
      write_canonical(w, *r);
      write_canonical(w, r->find("b"));
      w.key("k");  // not valid JSON here, but shows the writer's state continues correctly
      write_canonical(w, r->find("a"));
      w.end_array();
      CHECK(out == "prefix:[1," + expected + R"(,{"c":2,"d":1},"k":[{"e":1.0,"f":0}]])");
    }
    SUBCASE("scalars are written as themselves") {
      std::string out;
      json::writer w{out};
      w.begin_array();
      for (json::value e : r->find("a").elements())
        for (json::member m : e.members()) write_canonical(w, m.value());
      w.end_array();
      CHECK(out == "[0,1.0]");
    }
    SUBCASE("the document is unchanged: members still iterate in source order") {
      std::string out;
      json::writer w{out};
      write_canonical(w, *r);
      std::vector<std::string> keys;
      for (json::member m : r->members()) keys.emplace_back(m.key);
      CHECK(keys == std::vector<std::string>{"b", "a"});
    }
    SUBCASE("agrees with canonical_json") {
      std::string out;
      json::writer w{out};
      write_canonical(w, *r);
      CHECK(out == canon(R"({"b":{"d":1,"c":2},"a":[{"f":0,"e":1.0}]})"));
    }
  }
}
