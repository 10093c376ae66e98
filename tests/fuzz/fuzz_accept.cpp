// SPDX-License-Identifier: Apache-2.0
// Fuzzes the Accept header reader (mcpcore::accept_lists).
//
// Invariants, for each media type MCP asks about:
//  - accept_lists never crashes and reads nothing outside the header;
//  - a listed type appears in the header, ASCII case-insensitively;
//  - without any '"', the answer equals a naive reference (split at ',', cut at ';', trim
//    SP/HTAB, compare case-insensitively), and appending ", <type>" makes it true;
//  - an unterminated quoted string lists nothing, so appending a lone '"' to a header without
//    quotes makes it false.
#include <mcpcore/wire/accept.hpp>

#include "fuzz_check.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + ('a' - 'A')) : c; }

bool contains_icase(std::string_view haystack, std::string_view needle) {
  if (needle.size() > haystack.size()) return false;
  for (std::size_t i = 0; i + needle.size() <= haystack.size(); ++i) {
    std::size_t j = 0;
    while (j < needle.size() && lower(haystack[i + j]) == needle[j]) ++j;
    if (j == needle.size()) return true;
  }
  return false;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The reading of a header without quoted strings, written the obvious way.
bool naive_lists(std::string_view header, std::string_view type) {
  while (true) {
    const std::size_t comma = header.find(',');
    std::string_view element = header.substr(0, comma);
    element = trim(element.substr(0, element.find(';')));
    if (element.size() == type.size() && contains_icase(element, type)) return true;
    if (comma == std::string_view::npos) return false;
    header.remove_prefix(comma + 1);
  }
}

constexpr std::string_view types[] = {"text/event-stream", "application/json", "text/plain", "a/b"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Exact-size heap copy, so that ASan sees any read past the header's end.
  const std::string owned{reinterpret_cast<const char*>(data), size};
  const std::string_view header{owned};
  const bool has_quote = header.find('"') != std::string_view::npos;

  for (const std::string_view type : types) {
    const bool listed = mcpcore::accept_lists(header, type);
    if (listed) MCPCORE_FUZZ_CHECK(contains_icase(header, type));
    if (!has_quote) {
      MCPCORE_FUZZ_CHECK(listed == naive_lists(header, type));
      std::string more{header};
      more += ", ";
      more += type;
      MCPCORE_FUZZ_CHECK(mcpcore::accept_lists(more, type));
      // Upper-casing the type does not change the answer.
      std::string upper{header};
      upper += ",";
      for (const char c : type) upper.push_back(c >= 'a' && c <= 'z' ? static_cast<char>(c - ('a' - 'A')) : c);
      upper += ";q=0.5";
      MCPCORE_FUZZ_CHECK(mcpcore::accept_lists(upper, type));
      // An unterminated quoted string: fail closed.
      MCPCORE_FUZZ_CHECK(!mcpcore::accept_lists(more + ";x=\"", type));
    }
  }
  MCPCORE_FUZZ_CHECK(mcpcore::accept_wants_sse(header) == mcpcore::accept_lists(header, "text/event-stream"));
  MCPCORE_FUZZ_CHECK(mcpcore::accept_wants_json(header) == mcpcore::accept_lists(header, "application/json"));
  return 0;
}
