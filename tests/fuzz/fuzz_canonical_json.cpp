// SPDX-License-Identifier: Apache-2.0
// Fuzzes json::document and canonical JSON.
//
// Invariants:
//  - differential: json::document accepts a text iff simdjson's DOM parser (with a generous
//    nesting limit) accepts it and its nesting, counted here on simdjson's result, is within
//    ours; the one other extra refusal is json_errc::duplicate_key;
//  - canonical_json is idempotent: canonical(canonical(x)) == canonical(x), and the canonical
//    text parses; canonical form is insensitive to the writer's compaction:
//    canonical(write(parse(x))) == canonical(x);
//  - with allow_duplicate_keys, canonicalization is still idempotent (the sort is stable).
#include <mcpcore/wire/canonical_json.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <simdjson.h>

#include "fuzz_check.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace json = mcpcore::json;

namespace {

// Small enough that libFuzzer reaches it (the default is 128). The reference parser gets far
// more, so that its verdict is about the grammar only; nesting is compared by counting.
constexpr std::uint32_t depth_limit = 32;
constexpr std::size_t reference_depth_limit = 1024;

// Arrays and objects enclosing the deepest value (json.hpp's meaning of max_depth).
std::uint32_t nesting(simdjson::dom::element e) {
  std::uint32_t deepest = 0;
  if (e.is_array()) {
    for (simdjson::dom::element c : e.get_array().value_unsafe()) deepest = std::max(deepest, nesting(c));
    return deepest + 1;
  }
  if (e.is_object()) {
    for (simdjson::dom::key_value_pair kv : e.get_object().value_unsafe()) deepest = std::max(deepest, nesting(kv.value));
    return deepest + 1;
  }
  return 0;
}

json::parse_options options(bool allow_duplicate_keys) {
  json::parse_options o;
  o.max_depth = depth_limit;
  o.allow_duplicate_keys = allow_duplicate_keys;
  return o;
}

void check_canonical(std::string_view text, const json::parse_options& opts) {
  const auto c1 = mcpcore::canonical_json(text, opts);
  if (!c1) return;
  json::document doc{opts};
  MCPCORE_FUZZ_CHECK(doc.parse(*c1).has_value());
  const auto c2 = mcpcore::canonical_json(*c1, opts);
  MCPCORE_FUZZ_CHECK(c2.has_value());
  MCPCORE_FUZZ_CHECK(*c2 == *c1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static json::document doc{options(false)};
  static simdjson::dom::parser reference;
  static std::string compact;

  const std::string_view text{reinterpret_cast<const char*>(data), size};

  // ---- differential against simdjson's DOM parser ------------------------------------------
  const auto ours = doc.parse(text);
  if (reference.capacity() < size || reference.max_depth() != reference_depth_limit) {
    MCPCORE_FUZZ_CHECK(reference.allocate(size < 64 ? 64 : size, reference_depth_limit) == simdjson::SUCCESS);
  }
  const simdjson::padded_string padded{text};
  simdjson::dom::element ref_root;
  const simdjson::error_code ref_error = reference.parse(padded).get(ref_root);
  const bool ref_ok = ref_error == simdjson::SUCCESS;
  const bool too_deep = ref_ok && nesting(ref_root) > depth_limit;
  if (ours) {
    MCPCORE_FUZZ_CHECK(ref_ok && !too_deep);
  } else if (ours.error() == json::json_errc::duplicate_key) {
    MCPCORE_FUZZ_CHECK(ref_ok && !too_deep);
    MCPCORE_FUZZ_CHECK(ref_root.is_object() || ref_root.is_array());
  } else if (ours.error() == json::json_errc::depth_exceeded) {
    // Too deep by our count, or invalid as well (simdjson, given a small margin over our limit,
    // may stop at the depth before it finds the grammar error).
    MCPCORE_FUZZ_CHECK(too_deep || !ref_ok);
  } else {
    MCPCORE_FUZZ_CHECK(!ref_ok);
    MCPCORE_FUZZ_CHECK(ours.error().code().category() == json::json_category());
  }
  MCPCORE_FUZZ_CHECK(!too_deep || (!ours && ours.error() == json::json_errc::depth_exceeded));

  // ---- canonical JSON -------------------------------------------------------------------------
  if (ours) {
    compact.clear();
    json::writer w{compact};
    w.value(*ours);
    const auto from_text = mcpcore::canonical_json(text, options(false));
    const auto from_compact = mcpcore::canonical_json(compact, options(false));
    MCPCORE_FUZZ_CHECK(from_text.has_value() && from_compact.has_value());
    MCPCORE_FUZZ_CHECK(*from_text == *from_compact);
    // Canonical text has the compact form's tokens, reordered: the same length.
    MCPCORE_FUZZ_CHECK(from_text->size() == compact.size());
  }
  check_canonical(text, options(false));
  check_canonical(text, options(true));
  return 0;
}
