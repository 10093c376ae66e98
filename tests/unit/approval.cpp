// SPDX-License-Identifier: Apache-2.0
// Tests of the approval machine (docs/approvals.md#the-flow): ticket ids, canonical arguments, the
// store error categories, approver assurance, and approval_service's gate and review paths.
#include <mcpcore/governance/approval.hpp>

#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/stores/memory_approval_store.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <doctest/doctest.h>

#include "archetypes.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>  // doctest prints std::error_code operands
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

using namespace mcpcore;
using std::chrono::milliseconds;

namespace {

// ---- helpers -------------------------------------------------------------------------------------

// The canonical arguments of a JSON text (the text must parse).
std::string canon_args(std::string_view text) {
  json::document d;
  auto v = d.parse(text);
  REQUIRE_MESSAGE(v.has_value(), "test JSON does not parse: " << std::string{text});
  return canonical_arguments(*v);
}

principal make_principal(std::string id, principal_kind kind, bool assured) {
  principal p;
  p.id = std::move(id);
  p.kind = kind;
  p.assured = assured;
  return p;
}
// An MCP-token caller (the usual submitter of gated tool calls).
principal agent(std::string id) { return make_principal(std::move(id), principal_kind::service, false); }
// A person who may approve.
principal approver(std::string id) { return make_principal(std::move(id), principal_kind::human_interactive, true); }

// Milliseconds since the epoch, for printable time comparisons.
std::int64_t ms(approval_time t) { return t.time_since_epoch().count(); }

// `args` (a JSON object text) with a top-level "approval_id" member of raw JSON `id_json`.
std::string with_raw_id(std::string_view args, std::string_view id_json) {
  REQUIRE(!args.empty());
  REQUIRE(args.front() == '{');
  std::string out = "{\"approval_id\":";
  out += id_json;
  const std::string_view rest = args.substr(1);
  if (rest.find_first_not_of(" \t\r\n}") != std::string_view::npos) out += ',';
  out += rest;
  return out;
}
// `args` with `"approval_id":"<id>"`.
std::string with_id(std::string_view args, std::string_view id) {
  return with_raw_id(args, "\"" + std::string{id} + "\"");
}

// An approval_store that delegates to a memory_approval_store, counts every call, and fails
// (with a chosen error code) or throws on the operations a test picks.
struct scripted_store {
  enum class mode { pass, fail, raise };
  struct op {
    mode how = mode::pass;
    std::error_code ec{};
    int calls = 0;
    void fail_with(std::error_code e) {
      how = mode::fail;
      ec = e;
    }
    void raise() { how = mode::raise; }
    void pass() { how = mode::pass; }
  };

  memory_approval_store inner;
  op mint_op, get_op, consume_op, review_op, expire_op, pending_op;

  [[nodiscard]] int total_calls() const {
    return mint_op.calls + get_op.calls + consume_op.calls + review_op.calls + expire_op.calls + pending_op.calls;
  }

  template <class F>
  static auto run(op& o, F f) -> decltype(f()) {
    ++o.calls;
    if (o.how == mode::fail) return fail(o.ec);
    if (o.how == mode::raise) throw std::runtime_error("scripted store failure");
    return f();
  }
  result<approval_mint_result> mint(const approval_mint_request& m) {
    return run(mint_op, [&] { return inner.mint(m); });
  }
  result<std::optional<approval_ticket>> get(std::string_view id) {
    return run(get_op, [&] { return inner.get(id); });
  }
  result<approval_consume_status> consume(const approval_consume_request& c) {
    return run(consume_op, [&] { return inner.consume(c); });
  }
  result<approval_review_status> review(const approval_review_request& r) {
    return run(review_op, [&] { return inner.review(r); });
  }
  result<std::size_t> expire(approval_time now, milliseconds lifetime) {
    return run(expire_op, [&] { return inner.expire(now, lifetime); });
  }
  result<std::vector<approval_ticket>> pending(std::size_t limit) {
    return run(pending_op, [&] { return inner.pending(limit); });
  }
};
// A scripted_store with the history capability; records the limit the service asked for.
struct scripted_history_store : scripted_store {
  op history_op;
  std::size_t last_limit = 0;
  result<std::vector<approval_ticket>> recently_reviewed(std::size_t limit) {
    last_limit = limit;
    return run(history_op, [&] { return inner.recently_reviewed(limit); });
  }
};
static_assert(approval_store<scripted_store>);
static_assert(approval_store<memory_approval_store>);
// The history is optional: the scripted store and the archetype are stores without it.
static_assert(approval_store_history<scripted_history_store>);
static_assert(approval_store_history<memory_approval_store>);
static_assert(!approval_store_history<scripted_store>);
static_assert(!approval_store_history<archetypes::approval_store>);
static_assert(approval_store<archetypes::approval_store>);
static_assert(approval_precondition_callable<archetypes::approval_precondition>);
// What the concept refuses: a const-only store, a wrong result type, a missing member.
struct const_only_store {
  result<approval_mint_result> mint(const approval_mint_request&) const;
};
static_assert(!approval_store<const_only_store>);
static_assert(!approval_precondition_callable<int>);

// The wall time a fresh manual_clock shows, as a ticket time.
const approval_time clock_start = std::chrono::time_point_cast<milliseconds>(manual_clock::initial_system);

constexpr std::string_view tool = "deploy";
constexpr std::string_view args = R"({"n":1,"target":"web"})";

// A service over a scripted store and a manual clock.
template <class Store>
struct basic_fixture {
  manual_clock clock;
  Store store;
  approval_service svc;

  explicit basic_fixture(approval_options options = {})
      : svc{store, clock_ref<manual_clock>{clock}, std::move(options)} {}

  approval_gate_outcome gate(const principal& caller, std::string_view arguments, std::string_view tool_name = tool,
                             approval_precondition_ref precondition = {}) {
    json::document d;
    auto v = d.parse(arguments);
    REQUIRE_MESSAGE(v.has_value(), "test JSON does not parse: " << std::string{arguments});
    return svc.gate(tool_name, caller, *v, precondition);
  }
  // Recall of ticket `id` with `arguments` plus the id.
  approval_gate_outcome recall(const principal& caller, std::string_view id, std::string_view arguments = args,
                               std::string_view tool_name = tool, approval_precondition_ref precondition = {}) {
    return gate(caller, with_id(arguments, id), tool_name, precondition);
  }
  // A new pending ticket.
  std::string mint(const principal& caller, std::string_view arguments = args, std::string_view tool_name = tool) {
    const auto o = gate(caller, arguments, tool_name);
    REQUIRE(to_string(o.verdict) == "minted");
    REQUIRE(is_approval_id(o.approval_id));
    return o.approval_id;
  }
  // A new ticket, approved by "bob".
  std::string armed(const principal& caller, std::string_view arguments = args, std::string_view tool_name = tool) {
    auto id = mint(caller, arguments, tool_name);
    const auto r = svc.approve(id, approver("bob"));
    REQUIRE(r.ok());
    return id;
  }
  // The stored ticket (read straight from the inner store, not counted).
  approval_ticket ticket(std::string_view id) {
    auto r = store.inner.get(id);
    REQUIRE(r.has_value());
    REQUIRE(r->has_value());
    return **r;
  }
  std::size_t size() const { return store.inner.size(); }
};
using fixture = basic_fixture<scripted_store>;
using history_fixture = basic_fixture<scripted_history_store>;

}  // namespace

// ---- ticket ids -----------------------------------------------------------------------------------

TEST_CASE("concepts/approval_store.md/valid-expressions: make_approval_id gives 32 lowercase hex characters") {
  for (int i = 0; i < 50; ++i) {
    auto id = make_approval_id();
    REQUIRE(id.has_value());
    CHECK(id->size() == 32);
    CHECK(approval_id_length == 32);
    CHECK(is_approval_id(*id));
    CHECK(std::all_of(id->begin(), id->end(),
                      [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }));
  }
}

TEST_CASE("concepts/approval_store.md/valid-expressions: 1000 ticket ids are distinct and every position takes every hex digit (128 random bits)") {
  std::set<std::string> ids;
  std::array<std::array<bool, 16>, approval_id_length> seen{};
  for (int i = 0; i < 1000; ++i) {
    auto id = make_approval_id();
    REQUIRE(id.has_value());
    REQUIRE(id->size() == approval_id_length);
    ids.insert(*id);
    for (std::size_t p = 0; p < id->size(); ++p) {
      const char c = (*id)[p];
      const int d = c <= '9' ? c - '0' : c - 'a' + 10;
      REQUIRE(d >= 0);
      REQUIRE(d < 16);
      seen[p][static_cast<std::size_t>(d)] = true;
    }
  }
  CHECK(ids.size() == 1000);
  // With 1000 uniform samples, a digit missing at some position has probability ~1e-25: a
  // constant or low-entropy position shows up here.
  for (std::size_t p = 0; p < approval_id_length; ++p) {
    CAPTURE(p);
    CHECK(std::all_of(seen[p].begin(), seen[p].end(), [](bool b) { return b; }));
  }
}

TEST_CASE("concepts/approval_store.md/valid-expressions: is_approval_id accepts exactly 32 characters of 0-9 a-f") {
  const std::string good = "0123456789abcdef0123456789abcdef";
  static_assert(is_approval_id("0123456789abcdef0123456789abcdef"));
  static_assert(!is_approval_id(""));
  CHECK(is_approval_id(good));
  CHECK_FALSE(is_approval_id(good.substr(0, 31)));  // 31
  CHECK_FALSE(is_approval_id(good + "0"));          // 33
  CHECK_FALSE(is_approval_id(""));
  CHECK_FALSE(is_approval_id("0123456789ABCDEF0123456789ABCDEF"));  // uppercase hex
  CHECK_FALSE(is_approval_id("0123456789abcdef0123456789abcdeF"));  // one uppercase
  CHECK_FALSE(is_approval_id("0123456789abcdef0123456789abcdeg"));  // g is not hex
  CHECK_FALSE(is_approval_id("0123456789abcdef0123456789abcde "));
  CHECK_FALSE(is_approval_id("0123456789abcdef-123456789abcdef"));
  CHECK_FALSE(is_approval_id(std::string_view{"0123456789abcdef0123456789abcde\0", 32}));
  CHECK_FALSE(is_approval_id("0123456789abcdef0123456789abcd\xc3\xa9"));  // 32 bytes, non-ASCII
}

// ---- canonical arguments --------------------------------------------------------------------------

TEST_CASE("approvals.md/the-flow: absent arguments canonicalise as {}") {
  CHECK(canonical_arguments(json::value{}) == "{}");
  CHECK(canon_args("{}") == "{}");
  CHECK(canon_args(" { } ") == "{}");
}

TEST_CASE("approvals.md/the-flow: the top-level approval_id is removed, nested ones are kept") {
  CHECK(canon_args(R"({"approval_id":"0123456789abcdef0123456789abcdef"})") == "{}");
  CHECK(canon_args(R"({"b":{"approval_id":"x"},"approval_id":"abc","a":[{"approval_id":1}]})") ==
        R"({"a":[{"approval_id":1}],"b":{"approval_id":"x"}})");
  // Whatever its type.
  CHECK(canon_args(R"({"approval_id":17,"n":1})") == R"({"n":1})");
  CHECK(canon_args(R"({"n":1,"approval_id":null})") == R"({"n":1})");
  // Keys are compared unescaped.
  CHECK(canon_args(R"({"approval\u005fid":"x","n":1})") == R"({"n":1})");
  // Only that exact key.
  CHECK(canon_args(R"({"approval_ids":1,"Approval_id":2})") == R"({"Approval_id":2,"approval_ids":1})");
}

TEST_CASE("approvals.md/the-flow: keys are sorted at every depth, by UTF-8 bytes") {
  CHECK(canon_args(R"({"z":{"y":1,"x":[{"d":1,"c":2}]},"a":0})") == R"({"a":0,"z":{"x":[{"c":2,"d":1}],"y":1}})");
  CHECK(canon_args(R"({"b":1,"B":2,"é":3,"a":4,"aa":5,"":6})") == R"({"":6,"B":2,"a":4,"aa":5,"b":1,"é":3})");
  CHECK(canon_args(R"({"\u0062":1,"a":2})") == R"({"a":2,"b":1})");
  // Array order is data: it is kept.
  CHECK(canon_args(R"({"a":[3,1,2]})") == R"({"a":[3,1,2]})");
  CHECK(canon_args(R"({"a":[3,1,2]})") != canon_args(R"({"a":[1,2,3]})"));
}

TEST_CASE("approvals.md/the-flow: whitespace and key order in the source do not matter") {
  const std::string expected = R"({"a":[1,2],"b":{},"c":"x y"})";
  CHECK(canon_args(R"({"a":[1,2],"b":{},"c":"x y"})") == expected);
  CHECK(canon_args(" {\n\t\"c\" : \"x y\" ,\r\n \"b\" : { } , \"a\" : [ 1 ,\t2 ] }\n") == expected);
}

TEST_CASE("approvals.md/the-flow: value types and number spellings matter (1, 1.0, \"1\" differ)") {
  const std::array<std::string, 8> variants = {
      canon_args(R"({"n":1})"),   canon_args(R"({"n":1.0})"), canon_args(R"({"n":"1"})"),
      canon_args(R"({"n":1e0})"), canon_args(R"({"n":10e-1})"), canon_args(R"({"n":true})"),
      canon_args(R"({"n":[1]})"), canon_args(R"({"n":{"n":1}})"),
  };
  CHECK(variants[0] == R"({"n":1})");
  CHECK(variants[1] == R"({"n":1.0})");
  CHECK(variants[2] == R"({"n":"1"})");
  CHECK(variants[3] == R"({"n":1e0})");
  for (std::size_t i = 0; i < variants.size(); ++i) {
    for (std::size_t j = i + 1; j < variants.size(); ++j) {
      CAPTURE(variants[i]);
      CAPTURE(variants[j]);
      CHECK(variants[i] != variants[j]);
    }
  }
  CHECK(canon_args(R"({"n":0})") != canon_args(R"({"n":-0})"));
  CHECK(canon_args(R"({"n":null})") == R"({"n":null})");
  CHECK(canon_args(R"({"n":18446744073709551615,"m":-9223372036854775808})") ==
        R"({"m":-9223372036854775808,"n":18446744073709551615})");
}

TEST_CASE("approvals.md/the-flow: strings are compared by content, whatever their escapes") {
  // One string, spelled with and without escapes.
  CHECK(canon_args(R"({"s":"\u00e9\/\u20AC"})") == canon_args(R"({"s":"é/€"})"));
  CHECK(canon_args(R"({"s":"\u00e9\/\u20AC"})") == R"({"s":"é/€"})");
  CHECK(canon_args(R"({"s":"\ud83d\ude00"})") == canon_args(R"({"s":"😀"})"));
  CHECK(canon_args(R"({"s":"\u0041\u0062"})") == R"({"s":"Ab"})");
  // Control characters, quotes and backslashes stay escaped.
  CHECK(canon_args(R"({"s":"a\nb\t\"q\"\\\u0001\u001f"})") == R"({"s":"a\nb\t\"q\"\\\u0001\u001f"})");
  // Other content is another value.
  CHECK(canon_args(R"({"s":"é"})") != canon_args(R"({"s":"e"})"));
  CHECK(canon_args(R"({"s":"a b"})") != canon_args(R"({"s":"ab"})"));
}

TEST_CASE("approvals.md/the-flow: arguments that are not an object are written canonically as they are") {
  CHECK(canon_args(R"([{"b":1,"a":2},{"approval_id":"x"}])") == R"([{"a":2,"b":1},{"approval_id":"x"}])");
  CHECK(canon_args(" 1.0 ") == "1.0");
  CHECK(canon_args("null") == "null");
}

namespace {

// A random JSON value, kept as a model so that it can be written many ways and its canonical
// form computed independently of the library (the oracle).
struct gen_node {
  enum class kind_t { literal, string, object, array };
  kind_t kind = kind_t::literal;
  std::string literal;                // number, true, false or null: exact spelling
  std::u32string text;                // string content (code points)
  std::vector<std::u32string> keys;   // object member keys (unique)
  std::vector<gen_node> children;     // object member values (parallel to keys) or array elements
};

using rng_t = std::mt19937;

std::size_t pick(rng_t& rng, std::size_t n) {  // uniform in [0, n)
  return std::uniform_int_distribution<std::size_t>{0, n - 1}(rng);
}

std::string utf8(const std::u32string& s) {
  std::string out;
  for (const char32_t c : s) {
    const auto u = static_cast<std::uint32_t>(c);
    if (u < 0x80) {
      out += static_cast<char>(u);
    } else if (u < 0x800) {
      out += static_cast<char>(0xC0 | (u >> 6));
      out += static_cast<char>(0x80 | (u & 0x3F));
    } else if (u < 0x10000) {
      out += static_cast<char>(0xE0 | (u >> 12));
      out += static_cast<char>(0x80 | ((u >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (u & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (u >> 18));
      out += static_cast<char>(0x80 | ((u >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((u >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (u & 0x3F));
    }
  }
  return out;
}

// Characters that exercise every escaping rule: plain ASCII, the short escapes, C0 controls
// (NUL included), DEL, two- three- and four-byte UTF-8, a BOM and the last code point.
constexpr std::array<char32_t, 26> string_pool = {
    U'a', U'b', U'z', U'A', U'Z', U'0', U'_', U' ', U'"', U'\\', U'/', U'\n', U'\t', U'\b', U'\f', U'\r',
    U'\0', char32_t{0x01}, char32_t{0x1F}, char32_t{0x7F}, char32_t{0xE9}, char32_t{0x20AC}, char32_t{0xFEFF},
    char32_t{0xE000}, char32_t{0x1F600}, char32_t{0x10FFFF}};

std::u32string gen_text(rng_t& rng, std::size_t max_len) {
  std::u32string s;
  const std::size_t n = pick(rng, max_len + 1);
  for (std::size_t i = 0; i < n; ++i) s += string_pool[pick(rng, string_pool.size())];
  return s;
}

std::string gen_literal(rng_t& rng) {
  static constexpr std::array<std::string_view, 16> fixed = {
      "true", "false", "null", "0", "-0", "0.0", "1.0", "1e0", "1E+2", "2.50", "-0.25", "1e-7",
      "9223372036854775807", "-9223372036854775808", "18446744073709551615", "-1"};
  switch (pick(rng, 3)) {
    case 0: return std::string{fixed[pick(rng, fixed.size())]};
    case 1: return std::to_string(std::uniform_int_distribution<std::int64_t>{-1'000'000'000, 1'000'000'000}(rng));
    default: {
      std::string s = std::to_string(std::uniform_int_distribution<int>{-999, 999}(rng));
      s += '.';
      const std::size_t digits = 1 + pick(rng, 3);
      for (std::size_t i = 0; i < digits; ++i) s += static_cast<char>('0' + pick(rng, 10));
      if (pick(rng, 3) == 0) {
        s += pick(rng, 2) == 0 ? "e" : "E";
        if (pick(rng, 2) == 0) s += pick(rng, 2) == 0 ? "-" : "+";
        s += std::to_string(pick(rng, 30));
      }
      return s;
    }
  }
}

gen_node gen_value(rng_t& rng, int depth);

gen_node gen_object(rng_t& rng, int depth, std::size_t min_members, std::size_t max_members) {
  gen_node n;
  n.kind = gen_node::kind_t::object;
  const std::size_t count = min_members + pick(rng, max_members - min_members + 1);
  while (n.keys.size() < count) {
    std::u32string k = gen_text(rng, 4);
    if (std::find(n.keys.begin(), n.keys.end(), k) != n.keys.end()) continue;
    n.keys.push_back(std::move(k));
    n.children.push_back(gen_value(rng, depth + 1));
  }
  return n;
}

gen_node gen_value(rng_t& rng, int depth) {
  const std::size_t r = pick(rng, depth >= 4 ? 6 : 10);
  if (r < 3) {
    gen_node n;
    n.literal = gen_literal(rng);
    return n;
  }
  if (r < 6) {
    gen_node n;
    n.kind = gen_node::kind_t::string;
    n.text = gen_text(rng, 8);
    return n;
  }
  if (r < 8) return gen_object(rng, depth, 0, 5);
  gen_node n;
  n.kind = gen_node::kind_t::array;
  const std::size_t count = pick(rng, 6);
  for (std::size_t i = 0; i < count; ++i) n.children.push_back(gen_value(rng, depth + 1));
  return n;
}

// The oracle: sorted keys (UTF-8 byte order), no whitespace, numbers as spelled, strings
// escaped as json::append_escaped does.
std::string oracle(const gen_node& n) {
  switch (n.kind) {
    case gen_node::kind_t::literal: return n.literal;
    case gen_node::kind_t::string: {
      std::string out;
      json::append_escaped(out, utf8(n.text));
      return out;
    }
    case gen_node::kind_t::array: {
      std::string out = "[";
      for (std::size_t i = 0; i < n.children.size(); ++i) {
        if (i != 0) out += ',';
        out += oracle(n.children[i]);
      }
      return out + "]";
    }
    case gen_node::kind_t::object: {
      std::vector<std::pair<std::string, std::size_t>> order;
      for (std::size_t i = 0; i < n.keys.size(); ++i) order.emplace_back(utf8(n.keys[i]), i);
      std::sort(order.begin(), order.end());  // std::string compares chars as unsigned: byte order
      std::string out = "{";
      bool first = true;
      for (const auto& [key, i] : order) {
        if (!first) out += ',';
        first = false;
        json::append_escaped(out, key);
        out += ':';
        out += oracle(n.children[i]);
      }
      return out + "}";
    }
  }
  return {};
}

void write_ws(rng_t& rng, std::string& out) {
  static constexpr std::array<std::string_view, 7> ws = {"", "", "", " ", "\n", "\t", " \r\n  "};
  out += ws[pick(rng, ws.size())];
}

void write_hex4(rng_t& rng, std::string& out, std::uint32_t u) {
  const char* const digits = pick(rng, 2) == 0 ? "0123456789abcdef" : "0123456789ABCDEF";
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += digits[(u >> shift) & 0xF];
}

// A string literal with each character randomly raw, short-escaped or \u-escaped.
void write_string(rng_t& rng, std::string& out, const std::u32string& s) {
  out += '"';
  for (const char32_t c : s) {
    const auto u = static_cast<std::uint32_t>(c);
    const char* short_escape = nullptr;
    switch (c) {
      case U'"': short_escape = "\\\""; break;
      case U'\\': short_escape = "\\\\"; break;
      case U'/': short_escape = "\\/"; break;
      case U'\b': short_escape = "\\b"; break;
      case U'\f': short_escape = "\\f"; break;
      case U'\n': short_escape = "\\n"; break;
      case U'\r': short_escape = "\\r"; break;
      case U'\t': short_escape = "\\t"; break;
      default: break;
    }
    const bool raw_allowed = u >= 0x20 && c != U'"' && c != U'\\';
    const std::size_t choice = pick(rng, 3);
    if (choice == 0 && raw_allowed) {
      out += utf8(std::u32string{c});
    } else if (choice == 1 && short_escape != nullptr) {
      out += short_escape;
    } else if (u >= 0x10000) {
      const std::uint32_t v = u - 0x10000;
      write_hex4(rng, out, 0xD800 + (v >> 10));
      write_hex4(rng, out, 0xDC00 + (v & 0x3FF));
    } else if (choice == 2 || !raw_allowed) {
      write_hex4(rng, out, u);
    } else {
      out += utf8(std::u32string{c});
    }
  }
  out += '"';
}

// `n` as JSON text: members in a random order, random whitespace, random string escapes; at
// the top level an `approval_id` member (of a random type) may be slipped in anywhere.
void write_json(rng_t& rng, std::string& out, const gen_node& n, bool top = false) {
  write_ws(rng, out);
  switch (n.kind) {
    case gen_node::kind_t::literal: out += n.literal; break;
    case gen_node::kind_t::string: write_string(rng, out, n.text); break;
    case gen_node::kind_t::array:
      out += '[';
      for (std::size_t i = 0; i < n.children.size(); ++i) {
        if (i != 0) out += ',';
        write_json(rng, out, n.children[i]);
      }
      write_ws(rng, out);
      out += ']';
      break;
    case gen_node::kind_t::object: {
      std::vector<std::size_t> order(n.keys.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng);
      constexpr std::size_t approval_id_slot = static_cast<std::size_t>(-1);
      if (top && pick(rng, 2) == 0) {
        order.insert(order.begin() + static_cast<std::ptrdiff_t>(pick(rng, order.size() + 1)), approval_id_slot);
      }
      out += '{';
      for (std::size_t j = 0; j < order.size(); ++j) {
        if (j != 0) out += ',';
        write_ws(rng, out);
        if (order[j] == approval_id_slot) {
          out += R"("approval_id":)";
          const std::size_t kind = pick(rng, 3);
          if (kind == 0) {
            auto id = make_approval_id();
            REQUIRE(id.has_value());
            out += "\"" + *id + "\"";
          } else if (kind == 1) {
            out += gen_literal(rng);
          } else {
            out += R"({"x":[1,2]})";
          }
          continue;
        }
        write_string(rng, out, n.keys[order[j]]);
        write_ws(rng, out);
        out += ':';
        write_json(rng, out, n.children[order[j]]);
      }
      write_ws(rng, out);
      out += '}';
      break;
    }
  }
  write_ws(rng, out);
}

void collect_leaves(gen_node& n, std::vector<gen_node*>& leaves) {
  if (n.kind == gen_node::kind_t::literal || n.kind == gen_node::kind_t::string) {
    leaves.push_back(&n);
    return;
  }
  for (auto& c : n.children) collect_leaves(c, leaves);
}

// Changes a leaf's spelling or content: 1 → 1.0, 2.5 → 2.50, true → false, null → 0, "s" → "sx".
void mutate(gen_node& leaf) {
  if (leaf.kind == gen_node::kind_t::string) {
    leaf.text += U'x';
    return;
  }
  std::string& t = leaf.literal;
  if (t == "true") {
    t = "false";
  } else if (t == "false") {
    t = "true";
  } else if (t == "null") {
    t = "0";
  } else if (t.find_first_of(".eE") == std::string::npos) {
    t += ".0";  // an integer becomes the same number spelled as a double
  } else {
    t += "0";  // 2.5 → 2.50, 1e5 → 1e50
  }
}

std::string canon_of_text(const std::string& text) {
  json::document d;
  auto v = d.parse(text);
  REQUIRE_MESSAGE(v.has_value(), "generated JSON does not parse: " << text);
  REQUIRE(v->is_object());
  return canonical_arguments(*v);
}

}  // namespace

TEST_CASE("approvals.md/the-flow (property): canonical_arguments ignores key order, whitespace, escapes and the "
          "top-level approval_id, and sees every leaf change") {
  rng_t rng{20260101U};
  int mutations = 0;
  for (int round = 0; round < 300; ++round) {
    CAPTURE(round);
    gen_node model = gen_object(rng, 0, 1, 6);
    std::string first;
    std::string second;
    write_json(rng, first, model, true);
    write_json(rng, second, model, true);
    CAPTURE(first);
    CAPTURE(second);
    const std::string expected = oracle(model);
    const std::string c1 = canon_of_text(first);
    const std::string c2 = canon_of_text(second);
    CHECK(c1 == expected);
    CHECK(c1 == c2);

    std::vector<gen_node*> leaves;
    collect_leaves(model, leaves);
    if (leaves.empty()) continue;
    gen_node* const leaf = leaves[pick(rng, leaves.size())];
    const gen_node before = *leaf;
    mutate(*leaf);
    std::string mutated;
    write_json(rng, mutated, model, true);
    CAPTURE(mutated);
    const std::string c3 = canon_of_text(mutated);
    CHECK(c3 != c1);
    CHECK(c3 == oracle(model));
    *leaf = before;
    ++mutations;
  }
  CHECK(mutations >= 250);  // the generator must produce leaves almost always
}

// ---- error categories -----------------------------------------------------------------------------

TEST_CASE("approvals.md/every-answer-of-the-machine: busy and io_error are transient store faults, the rest permanent") {
  constexpr std::array<approval_store_errc, 2> transient = {approval_store_errc::busy, approval_store_errc::io_error};
  constexpr std::array<approval_store_errc, 6> permanent = {
      approval_store_errc::closed, approval_store_errc::corrupt,        approval_store_errc::read_only,
      approval_store_errc::full,   approval_store_errc::schema_too_new, approval_store_errc::internal};
  std::set<std::string> messages;
  for (const auto e : transient) {
    const std::error_code ec = e;  // is_error_code_enum
    CAPTURE(ec.message());
    CHECK(ec.category() == approval_store_category());
    CHECK(ec == approval_store_fault::transient);
    CHECK(ec != approval_store_fault::permanent);
    CHECK_FALSE(is_permanent_store_error(ec));
    CHECK_FALSE(ec.message().empty());
    messages.insert(ec.message());
  }
  for (const auto e : permanent) {
    const std::error_code ec = make_error_code(e);
    CAPTURE(ec.message());
    CHECK(ec == approval_store_fault::permanent);
    CHECK(ec != approval_store_fault::transient);
    CHECK(is_permanent_store_error(ec));
    CHECK_FALSE(ec.message().empty());
    messages.insert(ec.message());
  }
  CHECK(messages.size() == 8);  // each code says what it is
}

TEST_CASE("approvals.md/every-answer-of-the-machine: codes of other categories, and no error, are not permanent store faults") {
  CHECK_FALSE(is_permanent_store_error(std::make_error_code(std::errc::io_error)));
  CHECK_FALSE(is_permanent_store_error(std::make_error_code(std::errc::not_enough_memory)));
  CHECK_FALSE(is_permanent_store_error(std::make_error_code(std::errc::read_only_file_system)));
  CHECK_FALSE(is_permanent_store_error(std::error_code{}));
  CHECK(std::make_error_code(std::errc::io_error) != approval_store_fault::permanent);
  // A code outside the enumeration is not claimed to be permanent either.
  CHECK_FALSE(is_permanent_store_error(std::error_code{99, approval_store_category()}));
  CHECK_FALSE(std::error_code{99, approval_store_category()}.message().empty());
}

TEST_CASE("approvals.md/every-answer-of-the-machine: the store error categories have stable names and fault messages") {
  CHECK(std::string_view{approval_store_category().name()} == "mcpcore.approval_store");
  CHECK(std::string_view{approval_store_fault_category().name()} == "mcpcore.approval_store_fault");
  CHECK(&approval_store_category() != &approval_store_fault_category());
  const std::error_condition t = approval_store_fault::transient;
  const std::error_condition p = make_error_condition(approval_store_fault::permanent);
  CHECK(t.category() == approval_store_fault_category());
  CHECK(t != p);
  CHECK_FALSE(t.message().empty());
  CHECK_FALSE(p.message().empty());
  CHECK(t.message() != p.message());
}

// ---- enums and approver assurance -----------------------------------------------------------------

TEST_CASE("approvals.md/the-approver-tools: only an assured human-interactive principal may approve") {
  CHECK(to_string(assess_approver(make_principal("h", principal_kind::human_interactive, true))) == "ok");
  CHECK(to_string(assess_approver(make_principal("h", principal_kind::human_interactive, false))) ==
        "non_interactive_session");
  CHECK(to_string(assess_approver(make_principal("e", principal_kind::engine, true))) == "engine_principal");
  CHECK(to_string(assess_approver(make_principal("e", principal_kind::engine, false))) == "engine_principal");
  CHECK(to_string(assess_approver(make_principal("s", principal_kind::service, true))) == "non_human_principal");
  CHECK(to_string(assess_approver(make_principal("s", principal_kind::service, false))) == "non_human_principal");
  CHECK(to_string(assess_approver(principal{})) == "non_human_principal");  // the default kind is service
}

TEST_CASE("approvals.md: every approval enumerator has its documented name") {
  CHECK(to_string(approval_status::pending) == "pending");
  CHECK(to_string(approval_status::approved) == "approved");
  CHECK(to_string(approval_status::rejected) == "rejected");
  CHECK(to_string(approval_status::expired) == "expired");
  CHECK(to_string(static_cast<approval_status>(200)) == "");
  for (const auto s : {approval_status::pending, approval_status::approved, approval_status::rejected,
                       approval_status::expired}) {
    CHECK(parse_approval_status(to_string(s)) == s);
  }
  CHECK_FALSE(parse_approval_status("Pending").has_value());
  CHECK_FALSE(parse_approval_status("").has_value());

  CHECK(to_string(approval_mint_status::created) == "created");
  CHECK(to_string(approval_mint_status::deduped) == "deduped");
  CHECK(to_string(approval_mint_status::submitter_cap) == "submitter_cap");
  CHECK(to_string(approval_mint_status::global_cap) == "global_cap");

  CHECK(to_string(approval_consume_status::consumed) == "consumed");
  CHECK(to_string(approval_consume_status::not_found) == "not_found");
  CHECK(to_string(approval_consume_status::foreign_origin) == "foreign_origin");
  CHECK(to_string(approval_consume_status::foreign_submitter) == "foreign_submitter");
  CHECK(to_string(approval_consume_status::not_consumable) == "not_consumable");
  CHECK(to_string(approval_consume_status::expired) == "expired");

  CHECK(to_string(approval_review_status::reviewed) == "reviewed");
  CHECK(to_string(approval_review_status::not_found) == "not_found");
  CHECK(to_string(approval_review_status::already_reviewed) == "already_reviewed");
  CHECK(to_string(approval_review_status::expired) == "expired");
  CHECK(to_string(approval_review_status::self_review) == "self_review");

  CHECK(to_string(approver_assurance::ok) == "ok");
  CHECK(to_string(approver_assurance::non_interactive_session) == "non_interactive_session");
  CHECK(to_string(approver_assurance::engine_principal) == "engine_principal");
  CHECK(to_string(approver_assurance::non_human_principal) == "non_human_principal");

  CHECK(to_string(approval_verdict::proceed) == "proceed");
  CHECK(to_string(approval_verdict::minted) == "minted");
  CHECK(to_string(approval_verdict::deduped) == "deduped");
  CHECK(to_string(approval_verdict::pending) == "pending");
  CHECK(to_string(approval_verdict::submitter_cap) == "submitter_cap");
  CHECK(to_string(approval_verdict::global_cap) == "global_cap");
  CHECK(to_string(approval_verdict::unidentified) == "unidentified");
  CHECK(to_string(approval_verdict::bad_id) == "bad_id");
  CHECK(to_string(approval_verdict::mismatch) == "mismatch");
  CHECK(to_string(approval_verdict::rejected) == "rejected");
  CHECK(to_string(approval_verdict::expired) == "expired");
  CHECK(to_string(approval_verdict::refused) == "refused");
  CHECK(to_string(approval_verdict::precondition) == "precondition");
  CHECK(to_string(approval_verdict::store_transient) == "store_transient");
  CHECK(to_string(approval_verdict::store_permanent) == "store_permanent");

  CHECK(to_string(approval_refusal::none) == "");
  CHECK(to_string(approval_refusal::not_consumable) == "not_consumable");
  CHECK(to_string(approval_refusal::foreign_origin) == "foreign_origin");
  CHECK(to_string(approval_refusal::foreign_submitter) == "foreign_submitter");
  CHECK(to_string(approval_refusal::precondition) == "precondition");
  CHECK(to_string(approval_refusal::store_error) == "store_error");
}

// ---- the gate: first call (mint) ------------------------------------------------------------------

TEST_CASE("approvals.md/what-the-machine-checks-in-order: a first call mints a pending ticket bound to mcp.<tool>, the caller, the canonical "
          "arguments and origin mcp") {
  fixture f;
  f.clock.advance(std::chrono::microseconds{1500});  // sub-millisecond part is truncated
  const auto o = f.gate(agent("alice"), R"({"target":"web", "n":1})");
  CHECK(to_string(o.verdict) == "minted");
  REQUIRE(is_approval_id(o.approval_id));
  CHECK(to_string(o.refusal) == "");
  CHECK_FALSE(o.binding_unverified);
  CHECK_FALSE(o.during_mint);
  CHECK(f.svc.status_url(o.approval_id) == "/api/v1/approvals/" + o.approval_id);
  CHECK(f.size() == 1);

  const auto t = f.ticket(o.approval_id);
  CHECK(t.id == o.approval_id);
  CHECK(to_string(t.status) == "pending");
  CHECK(t.definition_id == "mcp.deploy");
  CHECK(t.origin == "mcp");
  CHECK(t.submitted_by == "alice");
  CHECK(t.scope == R"({"n":1,"target":"web"})");
  CHECK(ms(t.submitted_at) == ms(clock_start) + 1);
  CHECK(ms(f.svc.now()) == ms(clock_start) + 1);
  CHECK(t.reviewed_by.empty());
  CHECK_FALSE(t.consumed_at.has_value());
  CHECK_FALSE(t.expired_at.has_value());
}

TEST_CASE("approvals.md: the status URL uses the configured prefix") {
  approval_options o;
  o.status_url_prefix = "/admin/v2";
  fixture f{o};
  CHECK(f.svc.options().status_url_prefix == "/admin/v2");
  CHECK(f.svc.status_url("0123456789abcdef0123456789abcdef") == "/admin/v2/approvals/0123456789abcdef0123456789abcdef");
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order: absent arguments mint a ticket for {} that a bare approval_id redeems") {
  fixture f;
  const principal alice = agent("alice");
  const auto o = f.svc.gate(tool, alice, json::value{});
  REQUIRE(to_string(o.verdict) == "minted");
  CHECK(f.ticket(o.approval_id).scope == "{}");
  REQUIRE(f.svc.approve(o.approval_id, approver("bob")).ok());
  CHECK(to_string(f.gate(alice, with_id("{}", o.approval_id)).verdict) == "proceed");
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order: the same call again, in another key order, is deduplicated to the same ticket") {
  fixture f;
  const principal alice = agent("alice");
  const auto id = f.mint(alice);
  f.clock.advance(std::chrono::hours{1});
  const auto again = f.gate(alice, " {\"target\" : \"web\",\n\"n\":1} ");
  CHECK(to_string(again.verdict) == "deduped");
  CHECK(again.approval_id == id);
  CHECK(f.size() == 1);
  CHECK(ms(f.ticket(id).submitted_at) == ms(clock_start));  // the original ticket, untouched
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order: another submitter, another tool or other arguments get their own ticket") {
  fixture f;
  const auto id = f.mint(agent("alice"));
  const auto other_submitter = f.gate(agent("carol"), args);
  CHECK(to_string(other_submitter.verdict) == "minted");
  CHECK(other_submitter.approval_id != id);
  const auto other_tool = f.gate(agent("alice"), args, "restart");
  CHECK(to_string(other_tool.verdict) == "minted");
  CHECK(other_tool.approval_id != id);
  CHECK(f.ticket(other_tool.approval_id).definition_id == "mcp.restart");
  CHECK(f.size() == 3);
}

TEST_CASE("approvals.md/the-flow: {\"n\":1} and {\"n\":1.0} are different tickets and do not redeem each other") {
  fixture f;
  const principal alice = agent("alice");
  const auto one = f.armed(alice, R"({"n":1})");
  const auto one_point_zero = f.gate(alice, R"({"n":1.0})");
  CHECK(to_string(one_point_zero.verdict) == "minted");
  CHECK(one_point_zero.approval_id != one);
  CHECK(to_string(f.recall(alice, one, R"({"n":1.0})").verdict) == "mismatch");
  CHECK(to_string(f.recall(alice, one, R"({"n":"1"})").verdict) == "mismatch");
  CHECK(to_string(f.recall(alice, one, R"({"n":1})").verdict) == "proceed");
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order: the per-submitter cap refuses a new mint and stores nothing") {
  approval_options o;
  o.max_pending_per_submitter = 2;
  fixture f{o};
  const principal alice = agent("alice");
  const auto first = f.mint(alice, R"({"n":1})");
  f.mint(alice, R"({"n":2})");
  const auto capped = f.gate(alice, R"({"n":3})");
  CHECK(to_string(capped.verdict) == "submitter_cap");
  CHECK(capped.approval_id.empty());
  CHECK(f.size() == 2);
  // Dedup comes before the cap: the caller's own pending ticket is still returned.
  const auto dedup = f.gate(alice, R"({"n":1})");
  CHECK(to_string(dedup.verdict) == "deduped");
  CHECK(dedup.approval_id == first);
  // The cap is per submitter.
  CHECK(to_string(f.gate(agent("carol"), R"({"n":3})").verdict) == "minted");
  // A reviewed ticket is no longer pending: room again.
  REQUIRE(f.svc.reject(first, approver("bob")).ok());
  CHECK(to_string(f.gate(alice, R"({"n":3})").verdict) == "minted");
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order, approvals.md/lifetime: the default options are 25 per submitter, 1000 global, 7 days, /api/v1") {
  const approval_options o;
  CHECK(o.max_pending_per_submitter == 25);
  CHECK(o.max_pending_global == 1000);
  CHECK(o.ticket_lifetime == milliseconds{std::chrono::days{7}});
  CHECK(o.status_url_prefix == "/api/v1");
  // The default per-submitter cap, end to end.
  fixture f;
  const principal alice = agent("alice");
  for (int n = 0; n < 25; ++n) f.mint(alice, R"({"n":)" + std::to_string(n) + "}");
  const auto capped = f.gate(alice, R"({"n":25})");
  CHECK(to_string(capped.verdict) == "submitter_cap");
  CHECK(f.size() == 25);
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order: the global cap refuses a new mint and stores nothing") {
  approval_options o;
  o.max_pending_global = 3;
  fixture f{o};
  f.mint(agent("alice"), R"({"n":1})");
  f.mint(agent("alice"), R"({"n":2})");
  f.mint(agent("carol"), R"({"n":1})");
  const auto capped = f.gate(agent("dave"), R"({"n":1})");
  CHECK(to_string(capped.verdict) == "global_cap");
  CHECK(capped.approval_id.empty());
  CHECK(f.size() == 3);
}

TEST_CASE("approvals.md: a caller without a principal id can neither mint nor redeem") {
  fixture f;
  const auto o = f.gate(agent(""), args);
  CHECK(to_string(o.verdict) == "unidentified");
  CHECK(o.approval_id.empty());
  CHECK(f.size() == 0);
  CHECK(f.store.total_calls() == 0);

  const auto id = f.armed(agent("alice"));
  CHECK(to_string(f.recall(agent(""), id).verdict) == "unidentified");
  CHECK_FALSE(f.ticket(id).consumed_at.has_value());
}

// ---- the gate: recall -----------------------------------------------------------------------------

TEST_CASE("approvals.md/what-the-machine-checks-in-order: an approval_id that is not a string of 32 lowercase hex is bad_id, nothing is minted "
          "or consumed") {
  fixture f;
  const principal alice = agent("alice");
  const auto id = f.armed(alice);
  std::string upper = id;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](char c) {
    return c >= 'a' && c <= 'f' ? static_cast<char>(c - 'a' + 'A') : c;
  });
  if (upper == id) upper[0] = 'A';  // all digits: force one uppercase letter
  const std::vector<std::string> bad = {
      "12345",     "null",  "{}", R"({"id":")" + id + "\"}", "[]",       "true",
      "\"\"",      "\"" + upper + "\"", "\"" + id.substr(0, 31) + "\"",  "\"" + id + "0\"",
      "\"" + id.substr(0, 31) + "g\"", "\" " + id.substr(1) + "\"",
  };
  const int calls_before = f.store.total_calls();
  const std::size_t size_before = f.size();
  for (const auto& raw : bad) {
    CAPTURE(raw);
    const auto o = f.gate(alice, with_raw_id(args, raw));
    CHECK(to_string(o.verdict) == "bad_id");
    CHECK(o.approval_id.empty());
  }
  CHECK(f.store.total_calls() == calls_before);  // the store is not even asked
  CHECK(f.size() == size_before);
  CHECK_FALSE(f.ticket(id).consumed_at.has_value());
  CHECK(to_string(f.recall(alice, id).verdict) == "proceed");
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order checks b, c: an unknown id, another tool or other arguments are a mismatch, the ticket "
          "stays redeemable") {
  fixture f;
  const principal alice = agent("alice");
  const auto id = f.armed(alice);
  const auto unknown = f.recall(alice, "0123456789abcdef0123456789abcdef");
  CHECK(to_string(unknown.verdict) == "mismatch");
  CHECK(unknown.approval_id == "0123456789abcdef0123456789abcdef");
  CHECK(to_string(unknown.refusal) == "");

  const auto other_tool = f.recall(alice, id, args, "restart");
  CHECK(to_string(other_tool.verdict) == "mismatch");
  CHECK(other_tool.approval_id == id);
  CHECK(to_string(f.recall(alice, id, R"({"n":2,"target":"web"})").verdict) == "mismatch");
  CHECK(to_string(f.recall(alice, id, R"({"n":1})").verdict) == "mismatch");
  CHECK(to_string(f.recall(alice, id, R"({"n":1,"target":"web","extra":null})").verdict) == "mismatch");
  // A nested approval_id is an argument like any other.
  CHECK(to_string(f.recall(alice, id, R"({"n":1,"target":"web","x":{"approval_id":"a"}})").verdict) == "mismatch");
  CHECK(f.size() == 1);  // a recall never mints
  CHECK_FALSE(f.ticket(id).consumed_at.has_value());
  // Same arguments in another order: the canonical scope matches.
  CHECK(to_string(f.recall(alice, id, R"({ "target" : "web" , "n" : 1 })").verdict) == "proceed");
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order: a pending ticket answers pending with the same id, even to another principal") {
  fixture f;
  const auto id = f.mint(agent("alice"));
  const auto o = f.recall(agent("alice"), id);
  CHECK(to_string(o.verdict) == "pending");
  CHECK(o.approval_id == id);
  const auto other = f.recall(agent("mallory"), id);
  CHECK(to_string(other.verdict) == "pending");
  CHECK(other.approval_id == id);
  CHECK(f.size() == 1);
  CHECK(to_string(f.ticket(id).status) == "pending");
}

TEST_CASE("approvals.md/lifetime: a pending ticket expires exactly one lifetime after submission, expiry is a state change") {
  fixture f;
  const principal alice = agent("alice");
  const auto id = f.mint(alice);
  f.clock.advance(std::chrono::days{7} - milliseconds{1});
  CHECK(to_string(f.recall(alice, id).verdict) == "pending");
  CHECK(to_string(f.ticket(id).status) == "pending");
  f.clock.advance(milliseconds{1});
  const auto o = f.recall(alice, id);
  CHECK(to_string(o.verdict) == "expired");
  CHECK(o.approval_id == id);
  const auto t = f.ticket(id);  // still there
  CHECK(to_string(t.status) == "expired");
  REQUIRE(t.expired_at.has_value());
  CHECK(ms(*t.expired_at) == ms(f.svc.now()));
  CHECK(to_string(f.recall(alice, id).verdict) == "expired");
  // And it can no longer be approved.
  CHECK(to_string(f.svc.approve(id, approver("bob")).status) == "already_reviewed");
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order check a: a rejected ticket answers rejected") {
  fixture f;
  const principal alice = agent("alice");
  const auto id = f.mint(alice);
  REQUIRE(f.svc.reject(id, approver("bob"), "no").ok());
  const auto o = f.recall(alice, id);
  CHECK(to_string(o.verdict) == "rejected");
  CHECK(o.approval_id == id);
  CHECK(to_string(f.ticket(id).status) == "rejected");
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order, approvals.md/guarantees: an approved ticket is consumed once by its submitter, then refused") {
  fixture f;
  const principal alice = agent("alice");
  const auto id = f.armed(alice);
  f.clock.advance(std::chrono::seconds{5});
  const auto o = f.recall(alice, id);
  CHECK(to_string(o.verdict) == "proceed");
  CHECK(o.approval_id == id);
  CHECK(to_string(o.refusal) == "");
  const auto t = f.ticket(id);
  CHECK(to_string(t.status) == "approved");  // consumption is not a status
  REQUIRE(t.consumed_at.has_value());
  CHECK(ms(*t.consumed_at) == ms(clock_start) + 5000);
  CHECK(t.consumed_by == "alice");

  const auto again = f.recall(alice, id);
  CHECK(to_string(again.verdict) == "refused");
  CHECK(to_string(again.refusal) == "not_consumable");
  CHECK(again.approval_id == id);
  CHECK(ms(*f.ticket(id).consumed_at) == ms(clock_start) + 5000);  // first consumption kept
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order check f: another principal's recall is refused (foreign_submitter) and does not consume") {
  fixture f;
  const principal alice = agent("alice");
  const auto id = f.armed(alice);
  const auto o = f.recall(agent("mallory"), id);
  CHECK(to_string(o.verdict) == "refused");
  CHECK(to_string(o.refusal) == "foreign_submitter");
  CHECK_FALSE(o.binding_unverified);
  CHECK_FALSE(f.ticket(id).consumed_at.has_value());
  CHECK(to_string(f.recall(alice, id).verdict) == "proceed");  // the owner still redeems it
}

namespace {
// A ticket minted in the store directly, as another surface would, then approved by "bob".
std::string foreign_origin_ticket(fixture& f, std::string_view origin, std::string_view submitter) {
  auto id = make_approval_id();
  REQUIRE(id.has_value());
  const std::string scope = canon_args(args);
  const approval_mint_request m{.id = *id,
                                .definition_id = "mcp.deploy",
                                .origin = origin,
                                .submitted_by = submitter,
                                .scope = scope,
                                .now = f.svc.now(),
                                .lifetime = std::chrono::days{7},
                                .per_submitter_cap = 25,
                                .global_cap = 1000};
  auto r = f.store.inner.mint(m);
  REQUIRE(r.has_value());
  REQUIRE(to_string(r->status) == "created");
  REQUIRE(f.svc.approve(*id, approver("bob")).ok());
  return *id;
}
}  // namespace

TEST_CASE("approvals.md/what-the-machine-checks-in-order check e: a ticket minted by another surface is refused (foreign_origin) and not consumed") {
  fixture f;
  const principal alice = agent("alice");
  for (const std::string_view origin : {"rest", "", "MCP", "mcp "}) {
    CAPTURE(origin);
    const auto id = foreign_origin_ticket(f, origin, "alice");
    const auto o = f.recall(alice, id);
    CHECK(to_string(o.verdict) == "refused");
    CHECK(to_string(o.refusal) == "foreign_origin");
    const auto t = f.ticket(id);
    CHECK_FALSE(t.consumed_at.has_value());
    CHECK(to_string(t.status) == "approved");
  }
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order: a ticket both foreign-origin and foreign-submitter is reported as foreign_origin") {
  fixture f;
  const auto id = foreign_origin_ticket(f, "rest", "alice");
  const auto o = f.recall(agent("mallory"), id);
  CHECK(to_string(o.verdict) == "refused");
  CHECK(to_string(o.refusal) == "foreign_origin");
  CHECK_FALSE(f.ticket(id).consumed_at.has_value());
}

TEST_CASE("approvals.md/lifetime: an approved ticket expires one lifetime after review, also at consume time") {
  SUBCASE("one millisecond before the end it is still redeemable") {
    fixture f;
    const principal alice = agent("alice");
    const auto id = f.mint(alice);
    f.clock.advance(std::chrono::days{3});  // the approved clock starts at review, not submission
    REQUIRE(f.svc.approve(id, approver("bob")).ok());
    f.clock.advance(std::chrono::days{7} - milliseconds{1});
    CHECK(to_string(f.recall(alice, id).verdict) == "proceed");
  }
  SUBCASE("at the end it expires: a state change, the ticket stays readable") {
    fixture f;
    const principal alice = agent("alice");
    const auto id = f.mint(alice);
    f.clock.advance(std::chrono::days{3});
    REQUIRE(f.svc.approve(id, approver("bob")).ok());
    f.clock.advance(std::chrono::days{7});
    const auto o = f.recall(alice, id);
    CHECK(to_string(o.verdict) == "expired");
    CHECK(o.approval_id == id);
    const auto t = f.ticket(id);
    CHECK(to_string(t.status) == "expired");
    CHECK_FALSE(t.consumed_at.has_value());
    REQUIRE(t.expired_at.has_value());
    CHECK(ms(*t.expired_at) == ms(f.svc.now()));
    auto via_service = f.svc.get(id);
    REQUIRE(via_service.has_value());
    REQUIRE(via_service->has_value());
    CHECK(to_string((*via_service)->status) == "expired");
    CHECK(to_string(f.recall(alice, id).verdict) == "expired");
  }
}

TEST_CASE("approvals.md/lifetime: consumed tickets never expire") {
  fixture f;
  const principal alice = agent("alice");
  const auto id = f.armed(alice);
  REQUIRE(to_string(f.recall(alice, id).verdict) == "proceed");
  f.clock.advance(std::chrono::days{30});
  auto n = f.svc.expire();
  REQUIRE(n.has_value());
  CHECK(*n == 0);
  CHECK(to_string(f.ticket(id).status) == "approved");
  const auto o = f.recall(alice, id);
  CHECK(to_string(o.verdict) == "refused");
  CHECK(to_string(o.refusal) == "not_consumable");
}

TEST_CASE("approvals.md/lifetime: a lifetime at the top of the duration range never expires anything (no overflow)") {
  approval_options o;
  o.ticket_lifetime = milliseconds::max();
  fixture f{o};
  const principal alice = agent("alice");
  const auto id = f.mint(alice);
  f.clock.advance(std::chrono::days{365 * 100});
  CHECK(to_string(f.recall(alice, id).verdict) == "pending");
  REQUIRE(f.svc.approve(id, approver("bob")).ok());
  f.clock.advance(std::chrono::days{365 * 100});
  CHECK(to_string(f.recall(alice, id).verdict) == "proceed");
}

// ---- preconditions --------------------------------------------------------------------------------

TEST_CASE("approvals.md/what-the-machine-checks-in-order: a precondition's refusal leaves the ticket intact and redeemable once it passes") {
  fixture f;
  const principal alice = agent("alice");
  const auto id = f.armed(alice);
  std::optional<std::string> verdict = "credential revoked";
  int calls = 0;
  std::string seen_ticket;
  std::string seen_caller;
  std::string seen_approval_id;
  const auto pre = [&](const approval_ticket& t, const principal& caller, json::value a) -> std::optional<std::string> {
    ++calls;
    seen_ticket = t.id;
    CHECK(to_string(t.status) == "approved");
    CHECK_FALSE(t.consumed_at.has_value());
    seen_caller = caller.id;
    if (a["approval_id"].is_string()) seen_approval_id = std::string{a["approval_id"].as_string()};
    return verdict;
  };
  const auto refused = f.recall(alice, id, args, tool, pre);
  CHECK(to_string(refused.verdict) == "precondition");
  CHECK(to_string(refused.refusal) == "precondition");
  CHECK(refused.detail == "credential revoked");
  CHECK(refused.approval_id == id);
  CHECK(calls == 1);
  CHECK(seen_ticket == id);
  CHECK(seen_caller == "alice");
  CHECK(seen_approval_id == id);
  const auto t = f.ticket(id);
  CHECK(to_string(t.status) == "approved");
  CHECK_FALSE(t.consumed_at.has_value());

  verdict.reset();
  const auto ok = f.recall(alice, id, args, tool, pre);
  CHECK(to_string(ok.verdict) == "proceed");
  CHECK(calls == 2);
  CHECK(f.ticket(id).consumed_at.has_value());
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order: a throwing precondition counts as a refusal and consumes nothing") {
  fixture f;
  const principal alice = agent("alice");
  const auto id = f.armed(alice);
  const auto pre = [](const approval_ticket&, const principal&, json::value) -> std::optional<std::string> {
    throw std::runtime_error("boom");
  };
  const auto o = f.recall(alice, id, args, tool, pre);
  CHECK(to_string(o.verdict) == "precondition");
  CHECK(to_string(o.refusal) == "precondition");
  CHECK_FALSE(o.detail.empty());
  CHECK(f.store.consume_op.calls == 0);
  CHECK_FALSE(f.ticket(id).consumed_at.has_value());
  CHECK(to_string(f.recall(alice, id).verdict) == "proceed");
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order: the precondition runs only after every ticket check has passed") {
  fixture f;
  const principal alice = agent("alice");
  int calls = 0;
  const auto pre = [&](const approval_ticket&, const principal&, json::value) -> std::optional<std::string> {
    ++calls;
    return std::nullopt;
  };
  const auto pending = f.mint(alice, R"({"n":10})");
  CHECK(to_string(f.recall(alice, pending, R"({"n":10})", tool, pre).verdict) == "pending");
  const auto armed = f.armed(alice);
  CHECK(to_string(f.recall(alice, armed, R"({"n":2})", tool, pre).verdict) == "mismatch");
  CHECK(to_string(f.recall(alice, armed, args, "restart", pre).verdict) == "mismatch");
  CHECK(to_string(f.recall(alice, "0123456789abcdef0123456789abcdef", args, tool, pre).verdict) == "mismatch");
  CHECK(to_string(f.gate(alice, with_raw_id(args, "7"), tool, pre).verdict) == "bad_id");
  CHECK(to_string(f.recall(agent("mallory"), armed, args, tool, pre).verdict) == "refused");
  const auto foreign = foreign_origin_ticket(f, "rest", "alice");
  CHECK(to_string(f.recall(alice, foreign, args, tool, pre).verdict) == "refused");
  const auto rejected = f.mint(alice, R"({"n":11})");
  REQUIRE(f.svc.reject(rejected, approver("bob")).ok());
  CHECK(to_string(f.recall(alice, rejected, R"({"n":11})", tool, pre).verdict) == "rejected");
  CHECK(calls == 0);

  CHECK(to_string(f.recall(alice, armed, args, tool, pre).verdict) == "proceed");
  CHECK(calls == 1);
  // Replay: not consumable, refused before the precondition.
  CHECK(to_string(f.recall(alice, armed, args, tool, pre).verdict) == "refused");
  CHECK(calls == 1);
  // Past its lifetime: expired, without asking the precondition.
  const auto late = f.armed(alice, R"({"n":12})");
  f.clock.advance(std::chrono::days{7});
  CHECK(to_string(f.recall(alice, late, R"({"n":12})", tool, pre).verdict) == "expired");
  CHECK(calls == 1);
}

// ---- store failures in the gate -------------------------------------------------------------------

TEST_CASE("approvals.md/what-the-machine-checks-in-order, approvals.md/every-answer-of-the-machine: a failing binding read is a store verdict, binding unverified, ticket "
          "intact") {
  fixture f;
  const principal alice = agent("alice");
  const auto id = f.armed(alice);

  SUBCASE("transient") {
    f.store.get_op.fail_with(approval_store_errc::busy);
    const auto o = f.recall(alice, id);
    CHECK(to_string(o.verdict) == "store_transient");
    CHECK(o.approval_id == id);
    CHECK(to_string(o.refusal) == "store_error");
    CHECK(o.binding_unverified);
    CHECK_FALSE(o.during_mint);
    CHECK(o.detail == make_error_code(approval_store_errc::busy).message());
  }
  SUBCASE("permanent") {
    f.store.get_op.fail_with(approval_store_errc::corrupt);
    const auto o = f.recall(alice, id);
    CHECK(to_string(o.verdict) == "store_permanent");
    CHECK(to_string(o.refusal) == "store_error");
    CHECK(o.binding_unverified);
    CHECK_FALSE(o.during_mint);
  }
  SUBCASE("a foreign error code is transient") {
    f.store.get_op.fail_with(std::make_error_code(std::errc::io_error));
    const auto o = f.recall(alice, id);
    CHECK(to_string(o.verdict) == "store_transient");
    CHECK(o.binding_unverified);
  }
  SUBCASE("a store that throws is transient") {
    f.store.get_op.raise();
    const auto o = f.recall(alice, id);
    CHECK(to_string(o.verdict) == "store_transient");
    CHECK(to_string(o.refusal) == "store_error");
    CHECK(o.binding_unverified);
  }
  CHECK(f.store.consume_op.calls == 0);
  CHECK(f.size() == 1);
  CHECK_FALSE(f.ticket(id).consumed_at.has_value());
  f.store.get_op.pass();
  CHECK(to_string(f.recall(alice, id).verdict) == "proceed");  // the retry redeems it
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order, approvals.md/every-answer-of-the-machine: a failing consume is a store verdict with the binding verified") {
  fixture f;
  const principal alice = agent("alice");
  const auto id = f.armed(alice);

  SUBCASE("transient") {
    f.store.consume_op.fail_with(approval_store_errc::io_error);
    const auto o = f.recall(alice, id);
    CHECK(to_string(o.verdict) == "store_transient");
    CHECK(o.approval_id == id);
    CHECK(to_string(o.refusal) == "store_error");
    CHECK_FALSE(o.binding_unverified);
    CHECK_FALSE(o.during_mint);
    CHECK(o.detail == make_error_code(approval_store_errc::io_error).message());
  }
  SUBCASE("permanent") {
    f.store.consume_op.fail_with(approval_store_errc::read_only);
    const auto o = f.recall(alice, id);
    CHECK(to_string(o.verdict) == "store_permanent");
    CHECK(to_string(o.refusal) == "store_error");
    CHECK_FALSE(o.binding_unverified);
  }
  SUBCASE("a store that throws is transient") {
    f.store.consume_op.raise();
    const auto o = f.recall(alice, id);
    CHECK(to_string(o.verdict) == "store_transient");
    CHECK_FALSE(o.binding_unverified);
  }
  CHECK(f.store.consume_op.calls == 1);
  CHECK_FALSE(f.ticket(id).consumed_at.has_value());
  f.store.consume_op.pass();
  CHECK(to_string(f.recall(alice, id).verdict) == "proceed");
}

TEST_CASE("approvals.md/what-the-machine-checks-in-order, approvals.md/every-answer-of-the-machine: a failing mint is a store verdict during the mint, with no ticket id") {
  fixture f;
  const principal alice = agent("alice");
  SUBCASE("transient") {
    f.store.mint_op.fail_with(approval_store_errc::busy);
    const auto o = f.gate(alice, args);
    CHECK(to_string(o.verdict) == "store_transient");
    CHECK(o.during_mint);
    CHECK_FALSE(o.binding_unverified);
    CHECK(o.approval_id.empty());
    CHECK(o.detail == make_error_code(approval_store_errc::busy).message());
  }
  SUBCASE("permanent") {
    f.store.mint_op.fail_with(approval_store_errc::full);
    const auto o = f.gate(alice, args);
    CHECK(to_string(o.verdict) == "store_permanent");
    CHECK(o.during_mint);
    CHECK(o.approval_id.empty());
  }
  SUBCASE("a store that throws is transient") {
    f.store.mint_op.raise();
    const auto o = f.gate(alice, args);
    CHECK(to_string(o.verdict) == "store_transient");
    CHECK(o.during_mint);
    CHECK(o.approval_id.empty());
  }
  CHECK(f.store.mint_op.calls == 1);
  CHECK(f.size() == 0);
  f.store.mint_op.pass();
  CHECK(to_string(f.gate(alice, args).verdict) == "minted");
}

// ---- approve and reject ---------------------------------------------------------------------------

TEST_CASE("approvals.md/the-approver-tools: a principal that is not an assured human cannot review, the store is not "
          "touched") {
  fixture f;
  const auto id = f.mint(agent("alice"));
  const int calls = f.store.total_calls();
  struct reviewer_case {
    principal who;
    std::string_view expected;
  };
  const std::vector<reviewer_case> cases = {
      {make_principal("svc", principal_kind::service, true), "non_human_principal"},
      {make_principal("svc", principal_kind::service, false), "non_human_principal"},
      {make_principal("eng", principal_kind::engine, true), "engine_principal"},
      {make_principal("h", principal_kind::human_interactive, false), "non_interactive_session"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.expected);
    const auto a = f.svc.approve(id, c.who);
    CHECK(to_string(a.assurance) == c.expected);
    CHECK_FALSE(a.ok());
    const auto r = f.svc.reject(id, c.who, "no");
    CHECK(to_string(r.assurance) == c.expected);
    CHECK_FALSE(r.ok());
  }
  CHECK(f.store.total_calls() == calls);
  CHECK(to_string(f.ticket(id).status) == "pending");
}

TEST_CASE("approvals.md/lifetime: an assured human approves a pending ticket, the submitter then redeems it") {
  fixture f;
  const principal alice = agent("alice");
  const auto id = f.mint(alice);
  f.clock.advance(std::chrono::minutes{2});
  const auto r = f.svc.approve(id, approver("bob"));
  CHECK(r.ok());
  CHECK(to_string(r.status) == "reviewed");
  CHECK(to_string(r.assurance) == "ok");
  CHECK_FALSE(r.error);
  CHECK_FALSE(r.comment_too_long);
  const auto t = f.ticket(id);
  CHECK(to_string(t.status) == "approved");
  CHECK(t.reviewed_by == "bob");
  CHECK(ms(t.reviewed_at) == ms(clock_start) + 120'000);
  CHECK(t.review_comment.empty());
  CHECK(to_string(f.recall(alice, id).verdict) == "proceed");
}

TEST_CASE("approvals.md/lifetime: the submitter cannot review their own ticket (self_review), nor can an empty reviewer id") {
  fixture f;
  const auto id = f.mint(agent("alice"));
  const auto self = f.svc.approve(id, approver("alice"));
  CHECK(to_string(self.status) == "self_review");
  CHECK_FALSE(self.ok());
  CHECK(to_string(f.svc.reject(id, approver("alice")).status) == "self_review");
  const int calls = f.store.total_calls();
  const auto anonymous = f.svc.approve(id, approver(""));
  CHECK(to_string(anonymous.status) == "self_review");
  CHECK_FALSE(anonymous.ok());
  CHECK(f.store.total_calls() == calls);
  CHECK(to_string(f.ticket(id).status) == "pending");
  CHECK(f.svc.approve(id, approver("bob")).ok());
}

TEST_CASE("approvals.md/lifetime: only a pending ticket can be reviewed (already_reviewed)") {
  fixture f;
  const auto id = f.mint(agent("alice"));
  REQUIRE(f.svc.approve(id, approver("bob")).ok());
  const auto second = f.svc.approve(id, approver("carol"));
  CHECK(to_string(second.status) == "already_reviewed");
  CHECK_FALSE(second.ok());
  CHECK(to_string(f.svc.reject(id, approver("carol"), "late").status) == "already_reviewed");
  const auto t = f.ticket(id);
  CHECK(to_string(t.status) == "approved");
  CHECK(t.reviewed_by == "bob");
  CHECK(t.review_comment.empty());
}

TEST_CASE("approvals.md/lifetime: a rejection stores its reviewer and comment") {
  fixture f;
  const auto id = f.mint(agent("alice"));
  const auto r = f.svc.reject(id, approver("bob"), "too risky on a Friday");
  CHECK(r.ok());
  const auto t = f.ticket(id);
  CHECK(to_string(t.status) == "rejected");
  CHECK(t.reviewed_by == "bob");
  CHECK(t.review_comment == "too risky on a Friday");
  CHECK(ms(t.reviewed_at) == ms(clock_start));
}

TEST_CASE("approvals.md: a review comment longer than max_review_comment_bytes is refused before the store") {
  approval_options o;
  o.max_review_comment_bytes = 8;
  fixture f{o};
  const auto id = f.mint(agent("alice"));
  const int calls = f.store.total_calls();
  const auto long_one = f.svc.reject(id, approver("bob"), "123456789");
  CHECK(long_one.comment_too_long);
  CHECK_FALSE(long_one.ok());
  CHECK(f.store.total_calls() == calls);
  CHECK(to_string(f.ticket(id).status) == "pending");
  const auto exact = f.svc.reject(id, approver("bob"), "12345678");  // exactly the cap
  CHECK(exact.ok());
  CHECK_FALSE(exact.comment_too_long);
  CHECK(f.ticket(id).review_comment == "12345678");
}

TEST_CASE("approvals.md/lifetime: reviews of malformed or unknown ids are not_found, a malformed id never reaches the "
          "store") {
  fixture f;
  const auto id = f.mint(agent("alice"));
  const std::string upper = "0123456789ABCDEF0123456789ABCDEF";
  const int calls = f.store.total_calls();
  for (const std::string_view bad : {std::string_view{upper}, std::string_view{id}.substr(0, 31), std::string_view{}}) {
    CAPTURE(bad);
    const auto r = f.svc.approve(bad, approver("bob"));
    CHECK(to_string(r.status) == "not_found");
    CHECK_FALSE(r.ok());
    CHECK(to_string(f.svc.reject(bad, approver("bob")).status) == "not_found");
  }
  CHECK(f.store.total_calls() == calls);
  const auto unknown = f.svc.approve("0123456789abcdef0123456789abcdef", approver("bob"));
  CHECK(to_string(unknown.status) == "not_found");
  CHECK_FALSE(unknown.ok());
  CHECK(f.store.review_op.calls == 1);
}

TEST_CASE("approvals.md/lifetime: a pending ticket past its lifetime cannot be reviewed: it expires") {
  fixture f;
  const auto id = f.mint(agent("alice"));
  f.clock.advance(std::chrono::days{7});
  const auto r = f.svc.approve(id, approver("bob"));
  CHECK(to_string(r.status) == "expired");
  CHECK_FALSE(r.ok());
  const auto t = f.ticket(id);
  CHECK(to_string(t.status) == "expired");
  CHECK(t.reviewed_by.empty());
}

TEST_CASE("approvals.md: a failing store during a review is reported as its error") {
  fixture f;
  const auto id = f.mint(agent("alice"));
  SUBCASE("error code") {
    f.store.review_op.fail_with(approval_store_errc::corrupt);
    const auto r = f.svc.approve(id, approver("bob"));
    CHECK(r.error == make_error_code(approval_store_errc::corrupt));
    CHECK(is_permanent_store_error(r.error));
    CHECK_FALSE(r.ok());
  }
  SUBCASE("a store that throws is a transient error") {
    f.store.review_op.raise();
    const auto r = f.svc.reject(id, approver("bob"), "x");
    CHECK(static_cast<bool>(r.error));
    CHECK_FALSE(is_permanent_store_error(r.error));
    CHECK_FALSE(r.ok());
  }
  CHECK(to_string(f.ticket(id).status) == "pending");
}

// ---- get, pending, expire -------------------------------------------------------------------------

TEST_CASE("approvals.md: get passes through to the store, a malformed id is nullopt without touching it") {
  fixture f;
  const auto id = f.mint(agent("alice"));
  auto got = f.svc.get(id);
  REQUIRE(got.has_value());
  REQUIRE(got->has_value());
  CHECK(**got == f.ticket(id));
  CHECK(f.store.get_op.calls == 1);

  auto unknown = f.svc.get("0123456789abcdef0123456789abcdef");
  REQUIRE(unknown.has_value());
  CHECK_FALSE(unknown->has_value());
  CHECK(f.store.get_op.calls == 2);

  for (const std::string_view bad : {std::string_view{"0123456789ABCDEF0123456789ABCDEF"}, std::string_view{"x"},
                                     std::string_view{}}) {
    auto r = f.svc.get(bad);
    REQUIRE(r.has_value());
    CHECK_FALSE(r->has_value());
  }
  CHECK(f.store.get_op.calls == 2);

  f.store.get_op.fail_with(approval_store_errc::busy);
  auto failed = f.svc.get(id);
  REQUIRE_FALSE(failed.has_value());
  CHECK(failed.error() == make_error_code(approval_store_errc::busy));
  f.store.get_op.raise();
  auto thrown = f.svc.get(id);
  REQUIRE_FALSE(thrown.has_value());
  CHECK_FALSE(is_permanent_store_error(thrown.error()));
}

TEST_CASE("approvals.md: pending lists pending tickets oldest first, up to the limit") {
  fixture f;
  const auto a = f.mint(agent("alice"), R"({"n":1})");
  f.clock.advance(std::chrono::seconds{1});
  const auto b = f.mint(agent("alice"), R"({"n":2})");
  f.clock.advance(std::chrono::seconds{1});
  const auto c = f.mint(agent("carol"), R"({"n":3})");
  REQUIRE(f.svc.approve(b, approver("bob")).ok());
  auto all = f.svc.pending(10);
  REQUIRE(all.has_value());
  REQUIRE(all->size() == 2);
  CHECK((*all)[0].id == a);
  CHECK((*all)[1].id == c);
  auto one = f.svc.pending(1);
  REQUIRE(one.has_value());
  REQUIRE(one->size() == 1);
  CHECK((*one)[0].id == a);
  f.store.pending_op.fail_with(approval_store_errc::closed);
  auto failed = f.svc.pending(10);
  REQUIRE_FALSE(failed.has_value());
  CHECK(is_permanent_store_error(failed.error()));
}

namespace {
// The ids of a list of tickets, in its order.
std::vector<std::string> ids_of(const std::vector<approval_ticket>& list) {
  std::vector<std::string> ids;
  for (const auto& t : list) ids.push_back(t.id);
  return ids;
}
}  // namespace

TEST_CASE("approvals.md/recently-reviewed: the service lists the decisions newest first with who made them, through "
          "a store with the history, up to the limit") {
  history_fixture f;
  CHECK(f.svc.has_history());
  const principal alice = agent("alice");
  const auto approved = f.mint(alice, R"({"n":1})");
  const auto rejected = f.mint(alice, R"({"n":2})");
  const auto waiting = f.mint(agent("carol"), R"({"n":3})");
  REQUIRE(f.svc.approve(approved, approver("bob")).ok());
  f.clock.advance(std::chrono::seconds{1});
  REQUIRE(f.svc.reject(rejected, approver("dave"), "too risky").ok());
  f.clock.advance(std::chrono::seconds{1});
  const auto used = f.armed(alice, R"({"n":4})");  // approved by bob, then redeemed
  REQUIRE(to_string(f.recall(alice, used, R"({"n":4})").verdict) == "proceed");
  // A decision made through another service sharing the store (another process, another server).
  approval_service elsewhere{f.store.inner, clock_ref<manual_clock>{f.clock}};
  f.clock.advance(std::chrono::seconds{1});
  const auto remote = f.mint(alice, R"({"n":5})");
  REQUIRE(elsewhere.approve(remote, approver("erin")).ok());

  const auto all = f.svc.recently_reviewed(10);
  REQUIRE(all.has_value());
  CHECK(ids_of(*all) == std::vector<std::string>{remote, used, rejected, approved});
  CHECK(f.store.last_limit == 10);
  REQUIRE(all->size() == 4);
  CHECK((*all)[0].reviewed_by == "erin");
  CHECK((*all)[1].reviewed_by == "bob");
  CHECK((*all)[1].consumed_at.has_value());
  CHECK((*all)[2].reviewed_by == "dave");
  CHECK(to_string((*all)[2].status) == "rejected");
  CHECK((*all)[2].review_comment == "too risky");
  CHECK(ms((*all)[2].reviewed_at) == ms(clock_start) + 1000);
  CHECK(to_string((*all)[3].status) == "approved");
  for (const auto& t : *all) CHECK(t.id != waiting);

  const auto two = f.svc.recently_reviewed(2);
  REQUIRE(two.has_value());
  CHECK(ids_of(*two) == std::vector<std::string>{remote, used});
  const auto none = f.svc.recently_reviewed(0);
  REQUIRE(none.has_value());
  CHECK(none->empty());
}

TEST_CASE("approvals.md/recently-reviewed: the service asks the store for at most max_recently_reviewed, and passes "
          "its errors on") {
  history_fixture f;
  for (const std::size_t limit : {max_recently_reviewed + 1, max_recently_reviewed * 100, static_cast<std::size_t>(-1)}) {
    CAPTURE(limit);
    REQUIRE(f.svc.recently_reviewed(limit).has_value());
    CHECK(f.store.last_limit == max_recently_reviewed);
  }
  REQUIRE(f.svc.recently_reviewed(max_recently_reviewed).has_value());
  CHECK(f.store.last_limit == max_recently_reviewed);
  REQUIRE(f.svc.recently_reviewed(7).has_value());
  CHECK(f.store.last_limit == 7);
  CHECK(f.store.history_op.calls == 5);

  f.store.history_op.fail_with(approval_store_errc::busy);
  const auto busy = f.svc.recently_reviewed(10);
  REQUIRE_FALSE(busy.has_value());
  CHECK(busy.error() == make_error_code(approval_store_errc::busy));
  f.store.history_op.fail_with(approval_store_errc::corrupt);
  const auto broken = f.svc.recently_reviewed(10);
  REQUIRE_FALSE(broken.has_value());
  CHECK(is_permanent_store_error(broken.error()));
  f.store.history_op.raise();  // a throwing store is a transient fault
  const auto thrown = f.svc.recently_reviewed(10);
  REQUIRE_FALSE(thrown.has_value());
  CHECK_FALSE(is_permanent_store_error(thrown.error()));
}

TEST_CASE("approvals.md/recently-reviewed: over a store without the history the service has_history false and lists "
          "nothing, without calling the store") {
  fixture f;
  CHECK_FALSE(f.svc.has_history());
  const auto id = f.mint(agent("alice"));
  REQUIRE(f.svc.approve(id, approver("bob")).ok());
  const int calls = f.store.total_calls();
  const auto listed = f.svc.recently_reviewed(10);
  REQUIRE(listed.has_value());  // not an error: the capability is absent
  CHECK(listed->empty());
  CHECK(f.store.total_calls() == calls);

  // The archetype fails every call it gets: the service gives it none.
  archetypes::approval_store store;
  approval_service service{store};
  CHECK_FALSE(service.has_history());
  const auto none = service.recently_reviewed(max_recently_reviewed);
  REQUIRE(none.has_value());
  CHECK(none->empty());
}

TEST_CASE("approvals.md/lifetime: expire runs the lifetime sweep at the service's clock") {
  fixture f;
  const principal alice = agent("alice");
  const auto pending = f.mint(alice, R"({"n":1})");
  const auto armed = f.armed(alice, R"({"n":2})");
  f.clock.advance(std::chrono::days{7} - milliseconds{1});
  auto none = f.svc.expire();
  REQUIRE(none.has_value());
  CHECK(*none == 0);
  f.clock.advance(milliseconds{1});
  auto two = f.svc.expire();
  REQUIRE(two.has_value());
  CHECK(*two == 2);
  CHECK(to_string(f.ticket(pending).status) == "expired");
  CHECK(to_string(f.ticket(armed).status) == "expired");
  CHECK(f.size() == 2);  // never a delete
  f.store.expire_op.fail_with(approval_store_errc::busy);
  auto failed = f.svc.expire();
  REQUIRE_FALSE(failed.has_value());
  CHECK(failed.error() == approval_store_fault::transient);
}

TEST_CASE("plugins.md: approval_service needs nothing beyond the concept: over the archetype store every path fails permanently") {
  archetypes::approval_store store;
  approval_service service{store};
  const principal caller{.id = "agent"};
  json::document doc;
  auto args = doc.parse(R"({"tag":"a"})");
  REQUIRE(args.has_value());
  const auto minted = service.gate("t", caller, *args);
  CHECK(minted.verdict == approval_verdict::store_permanent);
  CHECK(minted.during_mint);
  auto recall_args = doc.parse(R"({"tag":"a","approval_id":"0123456789abcdef0123456789abcdef"})");
  REQUIRE(recall_args.has_value());
  const archetypes::approval_precondition pre;
  const auto recalled = service.gate("t", caller, *recall_args, pre);
  CHECK(recalled.verdict == approval_verdict::store_permanent);
  CHECK(recalled.binding_unverified);
  const principal human{.id = "h", .kind = principal_kind::human_interactive, .assured = true};
  CHECK(is_permanent_store_error(service.approve("0123456789abcdef0123456789abcdef", human).error));
}
