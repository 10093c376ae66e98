// SPDX-License-Identifier: Apache-2.0
// Fuzzes json::append_escaped, json::is_valid_utf8 and the writer's scalars.
//
// Invariants:
//  - append_escaped of arbitrary bytes always yields one JSON string literal that
//    json::document parses, whose value is valid UTF-8, and which equals the input exactly
//    when json::is_valid_utf8(input);
//  - json::is_valid_utf8 agrees with simdjson::validate_utf8 (an independent validator);
//  - escaping is a fixed point on its own output: escaping the decoded string again gives the
//    same literal;
//  - the writer's separators: an array of the input twice and an object keyed by it parse back;
//  - numbers: the first bytes read as an int64, a uint64 and a double are written and read
//    back exactly (non-finite doubles as null); integral doubles of magnitude >= 2^63 must come
//    back too, which is why the writer spells them with an exponent.
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <simdjson.h>

#include "fuzz_check.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace json = mcpcore::json;

namespace {

void check_numbers(const std::uint8_t* data, std::size_t size, json::document& doc, std::string& out) {
  if (size < 8) return;
  std::uint64_t bits = 0;
  std::memcpy(&bits, data, sizeof bits);
  std::int64_t i = 0;
  std::memcpy(&i, data, sizeof i);
  double d = 0;
  std::memcpy(&d, data, sizeof d);

  out.clear();
  json::writer w{out};
  w.begin_array().value(i).value(bits).end_array();
  {
    const auto root = doc.parse(out);
    MCPCORE_FUZZ_CHECK(root.has_value());
    MCPCORE_FUZZ_CHECK(root->is_array() && root->size() == 2);
    auto it = root->elements().begin();
    const json::value vi = *it++;
    const json::value vu = *it;
    MCPCORE_FUZZ_CHECK(vi.is_integer() && vi.to_int64() == i);
    MCPCORE_FUZZ_CHECK(vu.is_integer() && vu.to_uint64() == bits);
  }

  out.clear();
  json::writer wd{out};
  wd.value(d);
  const auto root = doc.parse(out);
  MCPCORE_FUZZ_CHECK(root.has_value());
  if (std::isfinite(d)) {
    const auto back = root->to_double();
    MCPCORE_FUZZ_CHECK(back.has_value());
    MCPCORE_FUZZ_CHECK(*back == d);
    MCPCORE_FUZZ_CHECK(std::signbit(*back) == std::signbit(d));
  } else {
    MCPCORE_FUZZ_CHECK(root->is_null());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static json::document doc;
  static std::string out;
  static std::string again;

  const std::string_view input{reinterpret_cast<const char*>(data), size};
  const bool valid = json::is_valid_utf8(input);
  MCPCORE_FUZZ_CHECK(valid == simdjson::validate_utf8(input.data(), input.size()));

  out.clear();
  json::append_escaped(out, input);
  MCPCORE_FUZZ_CHECK(out.size() >= 2 && out.front() == '"' && out.back() == '"');
  MCPCORE_FUZZ_CHECK(json::is_valid_utf8(out));
  {
    const auto root = doc.parse(out);
    MCPCORE_FUZZ_CHECK(root.has_value());
    MCPCORE_FUZZ_CHECK(root->is_string());
    const std::string_view decoded = root->as_string();
    MCPCORE_FUZZ_CHECK(json::is_valid_utf8(decoded));
    MCPCORE_FUZZ_CHECK((decoded == input) == valid);
    again.clear();
    json::append_escaped(again, decoded);
    MCPCORE_FUZZ_CHECK(again == out);
  }

  // Separators: ["s","s"] and {"s":"s"} (the writer derives commas from its own output).
  out.clear();
  json::writer w{out};
  w.begin_array().value(input).value(input).begin_object().member(input, input).end_object().end_array();
  {
    const auto root = doc.parse(out);
    MCPCORE_FUZZ_CHECK(root.has_value());
    MCPCORE_FUZZ_CHECK(root->is_array() && root->size() == 3);
  }

  check_numbers(data, size, doc, out);
  return 0;
}
