// SPDX-License-Identifier: Apache-2.0
// Tests of json::document parsing, its limits and errors, and navigation through json::value views.
#include <mcpcore/wire/json.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>  // doctest prints std::error_code operands
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

using namespace mcpcore;

namespace {

// doctest 2.4.9 cannot print std::string_view; comparisons go through std::string.
std::string str(std::string_view s) { return std::string{s}; }

// The name of the json_errc an error code holds, or a description of a foreign code.
std::string errc_name(const std::error_code& ec) {
  if (ec.category() != json::json_category()) return "foreign:" + ec.message();
  switch (static_cast<json::json_errc>(ec.value())) {
    case json::json_errc::empty_input: return "empty_input";
    case json::json_errc::syntax_error: return "syntax_error";
    case json::json_errc::invalid_utf8: return "invalid_utf8";
    case json::json_errc::invalid_string: return "invalid_string";
    case json::json_errc::invalid_number: return "invalid_number";
    case json::json_errc::depth_exceeded: return "depth_exceeded";
    case json::json_errc::duplicate_key: return "duplicate_key";
    case json::json_errc::too_large: return "too_large";
  }
  return "unknown:" + std::to_string(ec.value());
}

// "ok" when `text` parses under `options`, otherwise the name of the json_errc.
std::string outcome(std::string_view text, json::parse_options options = {}) {
  json::document doc{options};
  auto r = doc.parse(text);
  if (r) {
    CHECK(r->exists());
    return "ok";
  }
  CHECK_FALSE(doc.root().exists());
  return errc_name(r.error().code());
}

// `n` nested arrays around the number 1.
std::string nested_arrays(std::size_t n) { return std::string(n, '[') + "1" + std::string(n, ']'); }

// `n` nested objects {"k":...} around the number 1.
std::string nested_objects(std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += "{\"k\":";
  s += "1";
  s += std::string(n, '}');
  return s;
}

// An object with members "k0".."k<n-1>" (values are their index), plus `extra` appended verbatim.
std::string object_with_keys(std::size_t n, std::string_view extra = {}) {
  std::string s = "{";
  for (std::size_t i = 0; i < n; ++i) {
    if (i != 0) s += ',';
    s += "\"k" + std::to_string(i) + "\":" + std::to_string(i);
  }
  s += extra;
  s += '}';
  return s;
}

}  // namespace

TEST_SUITE("json") {
  TEST_CASE("every kind of value parses and reports its kind") {
    json::document doc;

    SUBCASE("null") {
      auto r = doc.parse("null");
      REQUIRE(r);
      CHECK(r->exists());
      CHECK(r->kind() == json::kind::null);
      CHECK(r->is_null());
      CHECK_FALSE(r->is_bool());
      CHECK_FALSE(r->is_number());
      CHECK_FALSE(r->is_string());
      CHECK_FALSE(r->is_array());
      CHECK_FALSE(r->is_object());
      CHECK(r->size() == 0);
    }
    SUBCASE("true and false") {
      auto t = doc.parse("true");
      REQUIRE(t);
      CHECK(t->kind() == json::kind::boolean);
      CHECK(t->is_bool());
      CHECK(t->as_bool());
      auto f = doc.parse("false");
      REQUIRE(f);
      CHECK(f->is_bool());
      CHECK_FALSE(f->as_bool());
      CHECK_FALSE(f->is_null());
    }
    SUBCASE("integer") {
      auto r = doc.parse("42");
      REQUIRE(r);
      CHECK(r->kind() == json::kind::number);
      CHECK(r->is_number());
      CHECK(r->is_integer());
      REQUIRE(r->to_int64());
      CHECK(*r->to_int64() == 42);
      REQUIRE(r->to_uint64());
      CHECK(*r->to_uint64() == 42u);
      REQUIRE(r->to_double());
      CHECK(*r->to_double() == 42.0);
    }
    SUBCASE("negative integer") {
      auto r = doc.parse("-17");
      REQUIRE(r);
      CHECK(r->is_integer());
      REQUIRE(r->to_int64());
      CHECK(*r->to_int64() == -17);
      CHECK_FALSE(r->to_uint64());
      REQUIRE(r->to_double());
      CHECK(*r->to_double() == -17.0);
    }
    SUBCASE("unsigned integer above INT64_MAX") {
      auto r = doc.parse("18446744073709551615");
      REQUIRE(r);
      CHECK(r->is_integer());
      CHECK_FALSE(r->to_int64());
      REQUIRE(r->to_uint64());
      CHECK(*r->to_uint64() == std::numeric_limits<std::uint64_t>::max());
      REQUIRE(r->to_double());
      CHECK(*r->to_double() == 18446744073709551615.0);
    }
    SUBCASE("double") {
      auto r = doc.parse("-2.5e-3");
      REQUIRE(r);
      CHECK(r->is_number());
      CHECK_FALSE(r->is_integer());
      CHECK_FALSE(r->to_int64());
      CHECK_FALSE(r->to_uint64());
      REQUIRE(r->to_double());
      CHECK(*r->to_double() == -2.5e-3);
    }
    SUBCASE("string") {
      auto r = doc.parse("\"hello\"");
      REQUIRE(r);
      CHECK(r->kind() == json::kind::string);
      CHECK(r->is_string());
      CHECK(str(r->as_string()) == "hello");
      CHECK(r->size() == 0);  // size() counts containers only
      CHECK_FALSE(r->to_int64());
      CHECK_FALSE(r->to_double());
    }
    SUBCASE("empty string") {
      auto r = doc.parse("\"\"");
      REQUIRE(r);
      CHECK(r->is_string());
      CHECK(r->as_string().empty());
    }
    SUBCASE("array") {
      auto r = doc.parse("[1,\"two\",null]");
      REQUIRE(r);
      CHECK(r->kind() == json::kind::array);
      CHECK(r->is_array());
      CHECK(r->size() == 3);
    }
    SUBCASE("object") {
      auto r = doc.parse("{\"a\":1,\"b\":[]}");
      REQUIRE(r);
      CHECK(r->kind() == json::kind::object);
      CHECK(r->is_object());
      CHECK(r->size() == 2);
    }
    SUBCASE("empty containers") {
      auto a = doc.parse("[]");
      REQUIRE(a);
      CHECK(a->is_array());
      CHECK(a->size() == 0);
      CHECK(a->elements().begin() == a->elements().end());
      auto o = doc.parse("{}");
      REQUIRE(o);
      CHECK(o->is_object());
      CHECK(o->size() == 0);
      CHECK(o->members().begin() == o->members().end());
    }
    SUBCASE("whitespace around and inside values is insignificant (RFC 8259 §2)") {
      auto r = doc.parse(" \t\r\n{ \"a\" :\n[ 1 ,\t2 ] }\n ");
      REQUIRE(r);
      CHECK(r->is_object());
      CHECK(r->find("a").size() == 2);
    }
  }

  TEST_CASE("string escapes are decoded (RFC 8259 §7)") {
    json::document doc;
    SUBCASE("short escapes") {
      auto r = doc.parse(R"("q\" b\\ s\/ \b\f\n\r\t")");
      REQUIRE(r);
      CHECK(str(r->as_string()) == "q\" b\\ s/ \b\f\n\r\t");
    }
    SUBCASE("\\u0000 is kept as a NUL inside the string") {
      auto r = doc.parse(R"("a\u0000b")");
      REQUIRE(r);
      const std::string_view s = r->as_string();
      REQUIRE(s.size() == 3);
      CHECK(s[0] == 'a');
      CHECK(s[1] == '\0');
      CHECK(s[2] == 'b');
    }
    SUBCASE("BMP escapes become UTF-8") {
      auto r = doc.parse(R"("\u0041\u00e9\u20AC")");
      REQUIRE(r);
      CHECK(str(r->as_string()) == "A\xC3\xA9\xE2\x82\xAC");
    }
    SUBCASE("a surrogate pair becomes one 4-byte UTF-8 sequence") {
      auto r = doc.parse(R"("\ud83d\ude00")");
      REQUIRE(r);
      CHECK(str(r->as_string()) == "\xF0\x9F\x98\x80");  // U+1F600
    }
    SUBCASE("raw UTF-8 passes through") {
      auto r = doc.parse("\"caf\xC3\xA9 \xF0\x9F\x98\x80\"");
      REQUIRE(r);
      CHECK(str(r->as_string()) == "caf\xC3\xA9 \xF0\x9F\x98\x80");
    }
    SUBCASE("escaped keys are unescaped") {
      auto r = doc.parse(R"({"\u0061\n":1})");
      REQUIRE(r);
      CHECK(r->find("a\n").exists());
      CHECK_FALSE(r->find("\\u0061\\n").exists());
    }
  }

  TEST_CASE("find and operator[] navigate objects, missing paths are absent") {
    json::document doc;
    auto r = doc.parse(R"({"params":{"_meta":{"progressToken":"tok"},"n":5},"list":[1,2]})");
    REQUIRE(r);
    const json::value root = *r;

    SUBCASE("present chains") {
      CHECK(str(root["params"]["_meta"]["progressToken"].as_string()) == "tok");
      CHECK(str(root.find("params").find("_meta").find("progressToken").as_string()) == "tok");
      REQUIRE(root["params"]["n"].to_int64());
      CHECK(*root["params"]["n"].to_int64() == 5);
    }
    SUBCASE("absent chains stay absent") {
      CHECK_FALSE(root["nope"].exists());
      CHECK_FALSE(root["nope"]["deeper"]["deepest"].exists());
      CHECK_FALSE(root["params"]["_meta"]["missing"].exists());
      // Looking up a member of a non-object (string, number, array) is absent too.
      CHECK_FALSE(root["params"]["_meta"]["progressToken"]["x"].exists());
      CHECK_FALSE(root["params"]["n"]["x"].exists());
      CHECK_FALSE(root["list"]["0"].exists());
    }
    SUBCASE("keys are compared exactly") {
      CHECK_FALSE(root["Params"].exists());
      CHECK_FALSE(root["param"].exists());
      CHECK_FALSE(root["params "].exists());
    }
    SUBCASE("an absent value answers every query harmlessly") {
      const json::value absent;
      CHECK_FALSE(absent.exists());
      CHECK_FALSE(absent.is_null());
      CHECK_FALSE(absent.is_bool());
      CHECK_FALSE(absent.is_number());
      CHECK_FALSE(absent.is_integer());
      CHECK_FALSE(absent.is_string());
      CHECK_FALSE(absent.is_array());
      CHECK_FALSE(absent.is_object());
      CHECK(absent.size() == 0);
      CHECK_FALSE(absent.to_int64());
      CHECK_FALSE(absent.to_uint64());
      CHECK_FALSE(absent.to_double());
      CHECK_FALSE(absent.find("x").exists());
      CHECK(absent.elements().begin() == absent.elements().end());
      CHECK(absent.members().begin() == absent.members().end());
    }
    SUBCASE("an explicit null is present") {
      auto n = doc.parse(R"({"id":null})");
      REQUIRE(n);
      CHECK(n->find("id").exists());
      CHECK(n->find("id").is_null());
      CHECK_FALSE(n->find("ID").exists());
    }
  }

  TEST_CASE("members() visits members in document order, elements() visits elements") {
    json::document doc;
    SUBCASE("members keep source order, not sorted order") {
      auto r = doc.parse(R"({"zeta":1,"alpha":"x","mid":[true],"beta":{"k":null}})");
      REQUIRE(r);
      std::vector<std::string> keys;
      for (json::member m : r->members()) keys.push_back(str(m.key));
      CHECK(keys == std::vector<std::string>{"zeta", "alpha", "mid", "beta"});
      CHECK(r->size() == 4);

      auto it = r->members().begin();
      CHECK((*it).value().is_number());
      ++it;
      CHECK(str((*it).value().as_string()) == "x");
      it++;
      CHECK((*it).value().is_array());
      CHECK((*it).value().size() == 1);
      ++it;
      CHECK((*it).value()["k"].is_null());
      ++it;
      CHECK(it == r->members().end());
    }
    SUBCASE("iteration skips whole subtrees") {
      auto r = doc.parse(R"([[1,[2,3]],{"a":{"b":[4]}},5,"s",[],{}])");
      REQUIRE(r);
      CHECK(r->size() == 6);
      std::vector<json::kind> kinds;
      for (json::value e : r->elements()) kinds.push_back(e.kind());
      CHECK(kinds == std::vector<json::kind>{json::kind::array, json::kind::object, json::kind::number,
                                             json::kind::string, json::kind::array, json::kind::object});
      std::size_t count = 0;
      for (json::value e : r->elements()) {
        if (count == 2) {
          REQUIRE(e.to_int64());
          CHECK(*e.to_int64() == 5);
        }
        ++count;
      }
      CHECK(count == 6);
    }
    SUBCASE("members of an object with nested values") {
      auto r = doc.parse(R"({"a":{"x":[1,2,{"y":3}]},"b":2,"c":[[[]]],"d":"last"})");
      REQUIRE(r);
      std::vector<std::string> keys;
      for (json::member m : r->members()) keys.push_back(str(m.key));
      CHECK(keys == std::vector<std::string>{"a", "b", "c", "d"});
      CHECK(str(r->find("d").as_string()) == "last");
      std::vector<std::int64_t> ints;
      for (json::value e : r->find("a").find("x").elements())
        if (e.is_integer()) ints.push_back(*e.to_int64());
      CHECK(ints == std::vector<std::int64_t>{1, 2});
    }
    SUBCASE("elements() of a non-array and members() of a non-object are empty") {
      auto r = doc.parse(R"({"o":{"a":1},"a":[1,2]})");
      REQUIRE(r);
      CHECK(r->elements().begin() == r->elements().end());
      CHECK(r->find("a").members().begin() == r->find("a").members().end());
      CHECK(r->find("o").elements().begin() == r->find("o").elements().end());
    }
  }

  TEST_CASE("number conversions at their edges (RFC 8259 §6, RFC 7493 §2.2)") {
    json::document doc;
    SUBCASE("-0 is the integer 0 and its double is negative zero") {
      auto r = doc.parse("-0");
      REQUIRE(r);
      CHECK(r->is_integer());
      REQUIRE(r->to_int64());
      CHECK(*r->to_int64() == 0);
      REQUIRE(r->to_uint64());
      CHECK(*r->to_uint64() == 0u);
      REQUIRE(r->to_double());
      CHECK(*r->to_double() == 0.0);
      CHECK(std::signbit(*r->to_double()));
    }
    SUBCASE("0 is the integer 0 and its double is positive zero") {
      auto r = doc.parse("0");
      REQUIRE(r);
      CHECK(r->is_integer());
      CHECK(*r->to_int64() == 0);
      CHECK(*r->to_uint64() == 0u);
      CHECK_FALSE(std::signbit(*r->to_double()));
    }
    SUBCASE("-0.0 is not an integer but keeps its sign") {
      auto r = doc.parse("-0.0");
      REQUIRE(r);
      CHECK_FALSE(r->is_integer());
      CHECK_FALSE(r->to_int64());
      REQUIRE(r->to_double());
      CHECK(std::signbit(*r->to_double()));
    }
    SUBCASE("1.0 is not an integer literal") {
      auto r = doc.parse("1.0");
      REQUIRE(r);
      CHECK(r->is_number());
      CHECK_FALSE(r->is_integer());
      CHECK_FALSE(r->to_int64());
      CHECK_FALSE(r->to_uint64());
      REQUIRE(r->to_double());
      CHECK(*r->to_double() == 1.0);
    }
    SUBCASE("an exponent makes a non-integer") {
      auto r = doc.parse("1E5");
      REQUIRE(r);
      CHECK_FALSE(r->is_integer());
      CHECK_FALSE(r->to_int64());
      CHECK(*r->to_double() == 100000.0);
    }
    SUBCASE("INT64_MAX and INT64_MIN are signed integers") {
      auto mx = doc.parse("9223372036854775807");
      REQUIRE(mx);
      REQUIRE(mx->to_int64());
      CHECK(*mx->to_int64() == std::numeric_limits<std::int64_t>::max());
      REQUIRE(mx->to_uint64());
      CHECK(*mx->to_uint64() == 9223372036854775807u);
      auto mn = doc.parse("-9223372036854775808");
      REQUIRE(mn);
      CHECK(mn->is_integer());
      REQUIRE(mn->to_int64());
      CHECK(*mn->to_int64() == std::numeric_limits<std::int64_t>::min());
      CHECK_FALSE(mn->to_uint64());
    }
    SUBCASE("9223372036854775808 converts to uint64 only") {
      auto r = doc.parse("9223372036854775808");
      REQUIRE(r);
      CHECK(r->is_integer());
      CHECK_FALSE(r->to_int64());
      REQUIRE(r->to_uint64());
      CHECK(*r->to_uint64() == 9223372036854775808u);
      REQUIRE(r->to_double());
      CHECK(*r->to_double() == 9223372036854775808.0);
    }
    SUBCASE("-1 has no uint64") {
      auto r = doc.parse("-1");
      REQUIRE(r);
      CHECK(*r->to_int64() == -1);
      CHECK_FALSE(r->to_uint64());
    }
    SUBCASE("doubles convert to the nearest double") {
      auto a = doc.parse("0.1");
      REQUIRE(a);
      CHECK(*a->to_double() == 0.1);
      auto b = doc.parse("1.7976931348623157e308");
      REQUIRE(b);
      CHECK(*b->to_double() == std::numeric_limits<double>::max());
      auto c = doc.parse("4.9e-324");
      REQUIRE(c);
      CHECK(*c->to_double() == std::numeric_limits<double>::denorm_min());
      auto d = doc.parse("-0e0");
      REQUIRE(d);
      CHECK_FALSE(d->is_integer());
      REQUIRE(d->to_double());
      CHECK(std::signbit(*d->to_double()));
    }
    SUBCASE("numbers inside containers keep their own values") {
      auto r = doc.parse(R"([0,-0,0.5,-0.0,1,"-0",{"z":0,"n":-0,"d":2.5}])");
      REQUIRE(r);
      std::vector<json::value> e;
      for (json::value v : r->elements()) e.push_back(v);
      REQUIRE(e.size() == 7);
      CHECK_FALSE(std::signbit(*e[0].to_double()));
      CHECK(std::signbit(*e[1].to_double()));
      CHECK(*e[2].to_double() == 0.5);
      CHECK(std::signbit(*e[3].to_double()));
      CHECK(*e[4].to_int64() == 1);
      CHECK(str(e[5].as_string()) == "-0");
      CHECK_FALSE(std::signbit(*e[6]["z"].to_double()));
      CHECK(std::signbit(*e[6]["n"].to_double()));
      CHECK(*e[6]["n"].to_int64() == 0);
      CHECK(*e[6]["d"].to_double() == 2.5);
    }
  }

  TEST_CASE("a number the parser accepts converts to a double (underflow rounds to zero)") {
    // parse_options/json_errc: a number is refused only when it fits neither a 64-bit integer
    // nor a finite double. 1e-400 is accepted, so its nearest double (±0, finite) must be
    // available: to_double() promises "the nearest double, when it is finite".
    json::document doc;
    auto r = doc.parse("1e-400");
    REQUIRE(r);
    REQUIRE(r->to_double());
    CHECK(*r->to_double() == 0.0);
    CHECK_FALSE(std::signbit(*r->to_double()));
    auto n = doc.parse("-1e-400");
    REQUIRE(n);
    REQUIRE(n->to_double());
    CHECK(*n->to_double() == 0.0);
    CHECK(std::signbit(*n->to_double()));
  }

  TEST_CASE("every json_errc comes back with its category") {
    SUBCASE("empty_input: no value at all") {
      CHECK(outcome("") == "empty_input");
      CHECK(outcome("  ") == "empty_input");
      CHECK(outcome(" \t\r\n") == "empty_input");
      // A default-constructed view has a null data(); parsing it must not hand that to memcpy
      // (UBSan in the asan preset catches it).
      json::document d;
      const auto r = d.parse(std::string_view{});
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error() == json::json_errc::empty_input);
    }
    SUBCASE("syntax_error: misplaced, missing or unknown tokens") {
      CHECK(outcome("{") == "syntax_error");
      CHECK(outcome("[1,]") == "syntax_error");
      CHECK(outcome("{\"a\":1,}") == "syntax_error");
      CHECK(outcome("{\"a\" 1}") == "syntax_error");
      CHECK(outcome("[1 2]") == "syntax_error");
      CHECK(outcome("tru") == "syntax_error");
      CHECK(outcome("nul") == "syntax_error");
      CHECK(outcome("+1") == "syntax_error");
      CHECK(outcome(".5") == "syntax_error");
      CHECK(outcome("{a:1}") == "syntax_error");
      CHECK(outcome("'a'") == "syntax_error");
    }
    SUBCASE("content after the value is refused (the DOM parser folds it into syntax_error)") {
      // json.ipp maps simdjson's tape error for trailing content onto syntax_error; what matters
      // is that the text is refused, never truncated to its first value.
      CHECK(outcome("1 2") == "syntax_error");
      CHECK(outcome("{\"a\":1} x") == "syntax_error");
      CHECK(outcome("[]x") == "syntax_error");
      CHECK(outcome("[1]]") == "syntax_error");
      CHECK(outcome("\"a\"\"b\"") == "syntax_error");
      CHECK(outcome("{}{}") == "syntax_error");
    }
    SUBCASE("invalid_utf8 (RFC 8259 §8.1)") {
      CHECK(outcome("\"\xff\"") == "invalid_utf8");
      CHECK(outcome("\"\xC0\xAF\"") == "invalid_utf8");         // overlong '/'
      CHECK(outcome("\"\xED\xA0\x80\"") == "invalid_utf8");     // UTF-8 encoded surrogate
      CHECK(outcome("\"\xF4\x90\x80\x80\"") == "invalid_utf8");  // above U+10FFFF
      CHECK(outcome("\"\xE2\x82\"") == "invalid_utf8");         // truncated sequence
      CHECK(outcome("{\"\x80\":1}") == "invalid_utf8");         // in a key
    }
    SUBCASE("invalid_string: raw control characters, bad escapes, lone surrogates (RFC 8259 §7)") {
      CHECK(outcome("\"\x01\"") == "invalid_string");
      CHECK(outcome("\"a\nb\"") == "invalid_string");
      CHECK(outcome(std::string_view{"\"a\0b\"", 5}) == "invalid_string");
      CHECK(outcome("\"\\x\"") == "invalid_string");
      CHECK(outcome("\"\\u12\"") == "invalid_string");
      CHECK(outcome("\"\\ud800\"") == "invalid_string");
      CHECK(outcome("\"\\udc00\"") == "invalid_string");
      CHECK(outcome("\"\\ud800\\u0041\"") == "invalid_string");
      CHECK(outcome("\"\\ude00\\ud83d\"") == "invalid_string");  // pair in the wrong order
      CHECK(outcome("\"abc") == "invalid_string");
    }
    SUBCASE("invalid_number: grammar and range (RFC 8259 §6, RFC 7493 §2.2)") {
      CHECK(outcome("01") == "invalid_number");
      CHECK(outcome("-01") == "invalid_number");
      CHECK(outcome("00") == "invalid_number");
      CHECK(outcome("-") == "invalid_number");
      CHECK(outcome("1.") == "invalid_number");
      CHECK(outcome("1e") == "invalid_number");
      CHECK(outcome("[1.e5]") == "invalid_number");
      CHECK(outcome("1e400") == "invalid_number");
      CHECK(outcome("-1e400") == "invalid_number");
      CHECK(outcome("1.8e308") == "invalid_number");
      CHECK(outcome("18446744073709551616") == "invalid_number");  // UINT64_MAX + 1
      CHECK(outcome("-9223372036854775809") == "invalid_number");  // INT64_MIN - 1
      CHECK(outcome("123456789012345678901234567890") == "invalid_number");
    }
    SUBCASE("depth_exceeded") {
      CHECK(outcome(nested_arrays(4), {.max_depth = 3}) == "depth_exceeded");
      CHECK(outcome(nested_objects(4), {.max_depth = 3}) == "depth_exceeded");
      CHECK(outcome(nested_arrays(2000)) == "depth_exceeded");
    }
    SUBCASE("duplicate_key (RFC 8259 §4, RFC 7493 §2.3)") {
      CHECK(outcome(R"({"a":1,"a":2})") == "duplicate_key");
      CHECK(outcome(R"({"a":1,"b":2,"a":1})") == "duplicate_key");
      CHECK(outcome(R"({"x":{"a":1,"a":2}})") == "duplicate_key");
      CHECK(outcome(R"([{"ok":1},{"a":[],"a":{}}])") == "duplicate_key");
      // Duplicates are found after unescaping.
      CHECK(outcome(R"({"a":1,"\u0061":2})") == "duplicate_key");
    }
    SUBCASE("too_large") {
      CHECK(outcome("12345678901", {.max_bytes = 10}) == "too_large");
      CHECK(outcome("[1,2,3,4,5]", {.max_bytes = 10}) == "too_large");
    }
  }

  TEST_CASE("the json category is named mcpcore.json and every code has a message") {
    CHECK(std::string{json::json_category().name()} == "mcpcore.json");
    const json::json_errc all[] = {
        json::json_errc::empty_input,    json::json_errc::syntax_error,   json::json_errc::invalid_utf8,
        json::json_errc::invalid_string, json::json_errc::invalid_number, json::json_errc::depth_exceeded,
        json::json_errc::duplicate_key,  json::json_errc::too_large,
    };
    std::vector<std::string> messages;
    for (json::json_errc e : all) {
      const std::error_code ec = json::make_error_code(e);
      CHECK(ec);  // no json_errc is zero
      CHECK(&ec.category() == &json::json_category());
      CHECK(ec.value() == static_cast<int>(e));
      CHECK_FALSE(ec.message().empty());
      messages.push_back(ec.message());
      // is_error_code_enum lets the enum convert implicitly and compare.
      const std::error_code implicit = e;
      CHECK(implicit == ec);
      CHECK(ec == e);
    }
    for (std::size_t i = 0; i < messages.size(); ++i)
      for (std::size_t j = i + 1; j < messages.size(); ++j) CHECK(messages[i] != messages[j]);

    json::document doc;
    auto r = doc.parse("[");
    REQUIRE_FALSE(r);
    CHECK(std::string{r.error().code().category().name()} == "mcpcore.json");
    CHECK(r.error() == json::json_errc::syntax_error);
    CHECK(r.error() != json::json_errc::empty_input);
  }

  TEST_CASE("max_depth counts the arrays and objects that enclose one another") {
    // parse_options::max_depth: "deepest nesting of arrays and objects accepted";
    // default_max_depth: "how many arrays and objects may enclose one another".
    SUBCASE("three levels pass a limit of three, four do not") {
      CHECK(outcome(nested_arrays(3), {.max_depth = 3}) == "ok");
      CHECK(outcome(nested_objects(3), {.max_depth = 3}) == "ok");
      CHECK(outcome(nested_arrays(4), {.max_depth = 3}) == "depth_exceeded");
      CHECK(outcome(nested_objects(4), {.max_depth = 3}) == "depth_exceeded");
    }
    SUBCASE("mixed arrays and objects count alike") {
      CHECK(outcome(R"({"a":[{"b":1}]})", {.max_depth = 3}) == "ok");
      CHECK(outcome(R"({"a":[{"b":[]}]})", {.max_depth = 3}) == "depth_exceeded");
    }
    SUBCASE("a limit of one accepts one container and scalars") {
      CHECK(outcome("1", {.max_depth = 1}) == "ok");
      CHECK(outcome("[1,2]", {.max_depth = 1}) == "ok");
      CHECK(outcome("[[1]]", {.max_depth = 1}) == "depth_exceeded");
    }
    SUBCASE("the default limit is default_max_depth") {
      CHECK(outcome(nested_arrays(json::default_max_depth)) == "ok");
      CHECK(outcome(nested_arrays(json::default_max_depth + 1)) == "depth_exceeded");
    }
    SUBCASE("the highest supported limit is max_supported_depth") {
      const json::parse_options deep{.max_depth = json::max_supported_depth};
      CHECK(outcome(nested_arrays(json::max_supported_depth), deep) == "ok");
      CHECK(outcome(nested_arrays(json::max_supported_depth + 1), deep) == "depth_exceeded");
    }
  }

  TEST_CASE("shallow documents parse well under the depth limit") {
    // Independent of the exact boundary: small nesting passes a limit of three or more.
    CHECK(outcome(nested_arrays(2), {.max_depth = 3}) == "ok");
    CHECK(outcome(nested_objects(2), {.max_depth = 3}) == "ok");
    CHECK(outcome(nested_arrays(100)) == "ok");
    CHECK(outcome("[[],[],{\"a\":[]}]", {.max_depth = 3}) == "ok");
  }

  TEST_CASE("options are clamped and reported by options()") {
    SUBCASE("defaults") {
      json::document doc;
      CHECK(doc.options().max_depth == json::default_max_depth);
      CHECK(doc.options().max_bytes == json::default_max_bytes);
      CHECK(doc.options().retain_bytes == json::default_retain_bytes);
      CHECK_FALSE(doc.options().allow_duplicate_keys);
    }
    SUBCASE("max_depth is clamped to [1, max_supported_depth]") {
      json::document zero{json::parse_options{.max_depth = 0}};
      CHECK(zero.options().max_depth == 1);
      json::document huge{json::parse_options{.max_depth = 100000}};
      CHECK(huge.options().max_depth == json::max_supported_depth);
    }
    SUBCASE("max_bytes is at most 4 GiB - 1") {
      json::document doc{json::parse_options{.max_bytes = std::numeric_limits<std::size_t>::max()}};
      CHECK(doc.options().max_bytes == std::size_t{std::numeric_limits<std::uint32_t>::max()});
    }
    SUBCASE("other fields are kept") {
      json::document doc{json::parse_options{.retain_bytes = 123, .allow_duplicate_keys = true}};
      CHECK(doc.options().retain_bytes == 123);
      CHECK(doc.options().allow_duplicate_keys);
    }
  }

  TEST_CASE("max_bytes is a hard limit on the text length") {
    const json::parse_options ten{.max_bytes = 10};
    CHECK(outcome("1234567890", ten) == "ok");  // exactly the limit
    CHECK(outcome("12345678901", ten) == "too_large");
    CHECK(outcome("[1,2,3,4]", ten) == "ok");
    // Whitespace counts: the limit is on bytes, not on the value.
    CHECK(outcome("         1 ", ten) == "too_large");

    SUBCASE("parse_padded applies it too") {
      json::document doc{ten};
      std::string buf = "12345678901";
      const std::size_t len = buf.size();
      buf.append(json::padding, '\0');
      auto r = doc.parse_padded(std::string_view{buf.data(), len}, buf.size());
      REQUIRE_FALSE(r);
      CHECK(errc_name(r.error().code()) == "too_large");
    }
  }

  TEST_CASE("duplicate keys: refused by default, kept in order when allowed") {
    SUBCASE("allowed with allow_duplicate_keys") {
      json::document doc{json::parse_options{.allow_duplicate_keys = true}};
      auto r = doc.parse(R"({"a":1,"b":2,"a":3,"x":{"k":1,"k":2}})");
      REQUIRE(r);
      CHECK(r->size() == 4);
      std::vector<std::string> keys;
      std::vector<std::int64_t> values;
      for (json::member m : r->members()) {
        keys.push_back(str(m.key));
        if (m.value().is_integer()) values.push_back(*m.value().to_int64());
      }
      CHECK(keys == std::vector<std::string>{"a", "b", "a", "x"});
      CHECK(values == std::vector<std::int64_t>{1, 2, 3});
      // find() is linear and returns the first match.
      CHECK(*r->find("a").to_int64() == 1);
      CHECK(*r->find("x").find("k").to_int64() == 1);
      CHECK(r->find("x").size() == 2);
    }
    SUBCASE("the same key in different objects is not a duplicate") {
      CHECK(outcome(R"({"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]})") == "ok");
    }
    SUBCASE("keys differing only in case or by a prefix are distinct") {
      CHECK(outcome(R"({"a":1,"A":2,"aa":3,"":4,"a ":5})") == "ok");
    }
    SUBCASE("many members: the sorted path (more than 8 members)") {
      CHECK(outcome(object_with_keys(100)) == "ok");
      CHECK(outcome(object_with_keys(100, ",\"k57\":0")) == "duplicate_key");
      CHECK(outcome(object_with_keys(100, ",\"k0\":0")) == "duplicate_key");
      CHECK(outcome(object_with_keys(100, ",\"k99\":0")) == "duplicate_key");
      CHECK(outcome("[" + object_with_keys(100, ",\"k42\":0") + "]") == "duplicate_key");
      CHECK(outcome(object_with_keys(100, ",\"k57\":0"), {.allow_duplicate_keys = true}) == "ok");
    }
    SUBCASE("around the switch from pairwise comparison to sorting") {
      for (std::size_t n = 2; n <= 12; ++n) {
        CAPTURE(n);
        CHECK(outcome(object_with_keys(n)) == "ok");
        CHECK(outcome(object_with_keys(n, ",\"k1\":0")) == "duplicate_key");
        CHECK(outcome(object_with_keys(n, ",\"k" + std::to_string(n - 1) + "\":0")) == "duplicate_key");
      }
    }
  }

  TEST_CASE("a failed parse leaves no root, a later parse succeeds") {
    json::document doc;
    REQUIRE(doc.parse("[1,2]"));
    CHECK(doc.root().exists());
    auto bad = doc.parse("[1,");
    CHECK_FALSE(bad);
    CHECK_FALSE(doc.root().exists());
    auto dup = doc.parse(R"({"a":1,"a":2})");
    CHECK_FALSE(dup);
    CHECK_FALSE(doc.root().exists());
    auto good = doc.parse(R"({"b":true})");
    REQUIRE(good);
    CHECK(doc.root().exists());
    CHECK(doc.root()["b"].as_bool());
  }

  TEST_CASE("root() is absent before any parse and is the parsed root afterwards") {
    json::document doc;
    CHECK_FALSE(doc.root().exists());
    auto r = doc.parse(R"({"a":[1]})");
    REQUIRE(r);
    CHECK(doc.root().node() == r->node());
    CHECK(doc.root()["a"].size() == 1);
  }

  TEST_CASE("a document reused for a second parse reports the second text") {
    json::document doc;
    auto first = doc.parse(R"({"name":"first","n":1,"list":[1,2,3],"d":0.5})");
    REQUIRE(first);
    CHECK(str(first->find("name").as_string()) == "first");

    auto second = doc.parse(R"({"other":"second","d":-0,"n":2.25})");
    REQUIRE(second);
    CHECK_FALSE(second->find("name").exists());
    CHECK_FALSE(second->find("list").exists());
    CHECK(str(second->find("other").as_string()) == "second");
    CHECK(second->size() == 3);
    CHECK(std::signbit(*second->find("d").to_double()));
    CHECK_FALSE(second->find("n").is_integer());
    CHECK(*second->find("n").to_double() == 2.25);

    // A shorter third text over the same buffers.
    auto third = doc.parse("[7]");
    REQUIRE(third);
    CHECK(third->is_array());
    CHECK(*(*third->elements().begin()).to_int64() == 7);
  }

  TEST_CASE("a moved document keeps its tape") {
    json::document a;
    auto r = a.parse(R"({"k":"v","z":0.0})");
    REQUIRE(r);
    json::document b{std::move(a)};
    CHECK(str(b.root()["k"].as_string()) == "v");
    CHECK(str(r->find("k").as_string()) == "v");  // views follow the tape, not the handle
    json::document c;
    c = std::move(b);
    CHECK(str(c.root()["k"].as_string()) == "v");
    auto again = c.parse("[true]");
    REQUIRE(again);
    CHECK((*again->elements().begin()).as_bool());
  }

  TEST_CASE("parse_padded parses in place over a buffer with json::padding bytes of slack") {
    json::document doc;
    const std::string text = R"({"s":"in place","n":[0.50,-0,12]})";
    std::string buf = text;
    buf.append(json::padding, '\0');
    const std::string_view view{buf.data(), text.size()};
    auto r = doc.parse_padded(view, buf.size());
    REQUIRE(r);
    CHECK(str(r->find("s").as_string()) == "in place");
    std::vector<json::value> n;
    for (json::value v : r->find("n").elements()) n.push_back(v);
    REQUIRE(n.size() == 3);
    CHECK(*n[0].to_double() == 0.5);
    CHECK(std::signbit(*n[1].to_double()));
    CHECK(*n[2].to_int64() == 12);

    SUBCASE("errors are reported like parse()") {
      std::string bad = "[1,]";
      const std::size_t len = bad.size();
      bad.append(json::padding, ' ');
      auto e = doc.parse_padded(std::string_view{bad.data(), len}, bad.size());
      REQUIRE_FALSE(e);
      CHECK(errc_name(e.error().code()) == "syntax_error");
    }
    SUBCASE("the bytes after the text are not part of it") {
      std::string tail = "[1]";
      tail.append(json::padding, 'x');
      auto e = doc.parse_padded(std::string_view{tail.data(), 3}, tail.size());
      REQUIRE(e);
      CHECK(e->size() == 1);
    }
    SUBCASE("interleaves with parse()") {
      REQUIRE(doc.parse("{\"x\":1}"));
      auto again = doc.parse_padded(view, buf.size());
      REQUIRE(again);
      CHECK(str(again->find("s").as_string()) == "in place");
    }
  }

  TEST_CASE("retain_bytes: parsing a small text after a large one gives correct results") {
    // Behaviour only: capacity is not observable, correctness across the shrink is.
    const json::parse_options options{.retain_bytes = 64};
    json::document doc{options};

    std::string big = "[";
    for (int i = 0; i < 2000; ++i) {
      if (i != 0) big += ',';
      big += "{\"i\":" + std::to_string(i) + ",\"s\":\"value " + std::to_string(i) + "\",\"d\":0.5}";
    }
    big += "]";
    REQUIRE(big.size() > 64);

    auto check_big = [&](json::value v) {
      REQUIRE(v.is_array());
      CHECK(v.size() == 2000);
      std::int64_t expected = 0;
      bool all_match = true;
      for (json::value e : v.elements()) {
        all_match = all_match && e["i"].to_int64() == std::optional<std::int64_t>{expected} &&
                    e["s"].as_string() == "value " + std::to_string(expected) && e["d"].to_double() == 0.5;
        ++expected;
      }
      CHECK(all_match);
      CHECK(expected == 2000);
    };

    for (int round = 0; round < 3; ++round) {
      CAPTURE(round);
      auto b = doc.parse(big);
      REQUIRE(b);
      check_big(*b);

      auto s = doc.parse(R"({"small":[1,0.25,"x"]})");
      REQUIRE(s);
      CHECK(s->size() == 1);
      CHECK(s->find("small").size() == 3);
      CHECK(*(*s->find("small").elements().begin()).to_int64() == 1);

      std::string padded = R"({"padded":-0})";
      const std::size_t len = padded.size();
      padded.append(json::padding, '\0');
      auto p = doc.parse_padded(std::string_view{padded.data(), len}, padded.size());
      REQUIRE(p);
      CHECK(std::signbit(*p->find("padded").to_double()));

      // An error right after a shrink, then success again.
      CHECK_FALSE(doc.parse("[1,"));
      auto after = doc.parse("\"ok\"");
      REQUIRE(after);
      CHECK(str(after->as_string()) == "ok");
    }
  }

  TEST_CASE("number spellings survive strings that contain quotes, backslashes and digits") {
    // The spelling scanner must skip strings correctly, including escaped quotes.
    json::document doc;
    auto r = doc.parse(R"(["a\"1",0.5,"\\",1.5,{"k\\\"2":-0,"3":[true,0.25,false,-0,null,1e1,7,"x\"9\\",2E-2]}])");
    REQUIRE(r);
    std::vector<json::value> top;
    for (json::value v : r->elements()) top.push_back(v);
    REQUIRE(top.size() == 5);
    CHECK(str(top[0].as_string()) == "a\"1");
    CHECK(*top[1].to_double() == 0.5);
    CHECK(str(top[2].as_string()) == "\\");
    CHECK(*top[3].to_double() == 1.5);
    const json::value obj = top[4];
    REQUIRE(obj.find("k\\\"2").exists());
    CHECK(std::signbit(*obj.find("k\\\"2").to_double()));
    std::vector<json::value> inner;
    for (json::value v : obj.find("3").elements()) inner.push_back(v);
    REQUIRE(inner.size() == 9);
    CHECK(*inner[1].to_double() == 0.25);
    CHECK(std::signbit(*inner[3].to_double()));
    CHECK(inner[4].is_null());
    CHECK(*inner[5].to_double() == 10.0);
    CHECK(*inner[6].to_int64() == 7);
    CHECK(str(inner[7].as_string()) == "x\"9\\");
    CHECK(*inner[8].to_double() == 0.02);
  }
}
