// SPDX-License-Identifier: Apache-2.0
// Fuzzes the input-schema compiler and validator (mcpcore::schema::compiled_schema).
//
// Input: schema text, a 0 byte, instance text. Without a 0 byte the whole input is both.
//
// Invariants:
//  - compile (strict and lenient, from text and from a parsed value) and validate never crash,
//    hang or trip a sanitizer;
//  - compiling the text and compiling its parsed value give the same errors; errors are sorted
//    by path then message, each path is "" or a JSON pointer, each message is non-empty;
//  - a schema strict mode accepts, lenient mode accepts too, and both find the same validity and
//    violation path (strict reasons may say more) except where strict mode's recursion cap, the
//    evaluation depth cap or the work budget decides;
//  - validating twice gives the same answer (determinism);
//  - a violation's path is "" or a JSON pointer whose segments are "*", an array index, or a
//    name the schema itself spells: names the caller chose are never echoed;
//  - bounded: the options below keep every validation within a small work budget and RE2's
//    memory within a small budget per pattern (docs/schema.md#caps); a pattern RE2 refuses is a
//    compile error, never a crash. (Patterns run in RE2; the std::regex differential of the
//    hand-written matcher RE2 replaced is gone with it.)
#include <mcpcore/dispatch/schema.hpp>
#include <mcpcore/wire/json.hpp>

#include "fuzz_check.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace json = mcpcore::json;
namespace schema = mcpcore::schema;

namespace {

using compile_result = mcpcore::result<schema::compiled_schema, std::vector<schema::compile_error>>;

bool is_pointer(std::string_view p) { return p.empty() || p.front() == '/'; }

bool same_errors(const compile_result& a, const compile_result& b) {
  if (a.has_value() != b.has_value()) return false;
  if (a) return true;
  if (a.error().size() != b.error().size()) return false;
  for (std::size_t i = 0; i < a.error().size(); ++i) {
    if (a.error()[i].path != b.error()[i].path || a.error()[i].message != b.error()[i].message)
      return false;
  }
  return true;
}

void check_errors(const compile_result& r) {
  if (r) return;
  MCPCORE_FUZZ_CHECK(!r.error().empty());
  for (std::size_t i = 0; i < r.error().size(); ++i) {
    const auto& e = r.error()[i];
    MCPCORE_FUZZ_CHECK(is_pointer(e.path));
    MCPCORE_FUZZ_CHECK(!e.message.empty());
    if (i > 0) {
      const auto& p = r.error()[i - 1];
      MCPCORE_FUZZ_CHECK(p.path < e.path || (p.path == e.path && p.message <= e.message));
    }
  }
}

// Every string the schema spells (keys and values), as a violation path may quote them.
void collect_strings(json::value v, std::set<std::string, std::less<>>& out) {
  if (v.is_string()) {
    out.emplace(v.as_string());
  } else if (v.is_array()) {
    for (json::value e : v.elements()) collect_strings(e, out);
  } else if (v.is_object()) {
    for (json::member m : v.members()) {
      out.emplace(m.key);
      collect_strings(m.value(), out);
    }
  }
}

std::optional<std::string> unescape_segment(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '~') {
      out += s[i];
      continue;
    }
    if (i + 1 >= s.size() || (s[i + 1] != '0' && s[i + 1] != '1')) return std::nullopt;
    out += s[i + 1] == '0' ? '~' : '/';
    ++i;
  }
  return out;
}

bool is_index(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

void check_violation_path(const std::string& path,
                          const std::set<std::string, std::less<>>& spelled) {
  MCPCORE_FUZZ_CHECK(is_pointer(path));
  if (path.empty()) return;
  std::size_t start = 1;
  while (true) {
    const std::size_t end = path.find('/', start);
    const std::string_view seg = std::string_view{path}.substr(
        start, end == std::string::npos ? std::string::npos : end - start);
    if (seg != "*" && !is_index(seg)) {
      const auto name = unescape_segment(seg);
      MCPCORE_FUZZ_CHECK(name.has_value());
      MCPCORE_FUZZ_CHECK(spelled.contains(*name));
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
}

bool same(const std::optional<schema::violation>& a, const std::optional<schema::violation>& b) {
  return a.has_value() == b.has_value() && (!a || (a->path == b->path && a->reason == b->reason));
}

bool same_outcome(const std::optional<schema::violation>& a,
                  const std::optional<schema::violation>& b) {
  return a.has_value() == b.has_value() && (!a || a->path == b->path);
}

bool decided_by_a_cap(const std::optional<schema::violation>& v) {
  return v && (v->reason.starts_with("the value nests deeper than the schema's depth cap") ||
               v->reason.starts_with("the schema's evaluation nests deeper than") ||
               v->reason.starts_with("validation work budget exhausted"));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static json::document schema_doc;
  static json::document instance_doc;

  const std::string_view input{reinterpret_cast<const char*>(data), size};
  const std::size_t split = input.find('\0');
  const std::string_view schema_text =
      split == std::string_view::npos ? input : input.substr(0, split);
  const std::string_view instance_text =
      split == std::string_view::npos ? input : input.substr(split + 1);

  schema::compile_options strict;
  // Smaller than the defaults, so that one input stays well inside the timeout.
  strict.max_validation_steps = std::uint64_t{1} << 16;
  strict.max_pattern_memory_bytes = std::int64_t{1} << 18;
  strict.max_schema_nodes = 2000;
  schema::compile_options lenient = strict;
  lenient.strict = false;

  const compile_result strict_text = schema::compiled_schema::compile(schema_text, strict);
  const compile_result lenient_text = schema::compiled_schema::compile(schema_text, lenient);
  check_errors(strict_text);
  check_errors(lenient_text);
  MCPCORE_FUZZ_CHECK(!strict_text || lenient_text);  // strict accepts a subset of lenient

  const auto parsed_schema = schema_doc.parse(schema_text);
  std::set<std::string, std::less<>> spelled;
  if (parsed_schema) {
    MCPCORE_FUZZ_CHECK(
        same_errors(strict_text, schema::compiled_schema::compile(*parsed_schema, strict)));
    MCPCORE_FUZZ_CHECK(
        same_errors(lenient_text, schema::compiled_schema::compile(*parsed_schema, lenient)));
    collect_strings(*parsed_schema, spelled);
  } else {
    MCPCORE_FUZZ_CHECK(!strict_text && !lenient_text);
  }

  const auto instance = instance_doc.parse(instance_text);
  if (!instance) return 0;

  std::optional<schema::violation> strict_result, lenient_result;
  if (strict_text) {
    strict_result = strict_text->validate(*instance);
    MCPCORE_FUZZ_CHECK(same(strict_result, strict_text->validate(*instance)));
    if (strict_result) check_violation_path(strict_result->path, spelled);
    MCPCORE_FUZZ_CHECK(strict_text->root_is_closed() == lenient_text->root_is_closed());
  }
  if (lenient_text) {
    lenient_result = lenient_text->validate(*instance);
    MCPCORE_FUZZ_CHECK(same(lenient_result, lenient_text->validate(*instance)));
    if (lenient_result) {
      check_violation_path(lenient_result->path, spelled);
      MCPCORE_FUZZ_CHECK(!lenient_result->reason.empty());
    }
  }
  if (strict_text && !decided_by_a_cap(strict_result) && !decided_by_a_cap(lenient_result))
    MCPCORE_FUZZ_CHECK(same_outcome(strict_result, lenient_result));
  return 0;
}
