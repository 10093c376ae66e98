// SPDX-License-Identifier: Apache-2.0
// Fuzzes the Last-Event-ID reader (mcpcore::sse::parse_last_event_id).
//
// Invariants:
//  - the result is nonzero only if the header is non-empty and every byte is an ASCII digit;
//  - for an all-digit header, the result equals std::from_chars's value when that fits in 64
//    bits, and 0 when it overflows;
//  - anything else reads as 0 ("no cursor").
#include <mcpcore/wire/sse.hpp>

#include "fuzz_check.hpp"

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Exact-size heap copy, so that ASan sees any read past the header's end.
  const std::string owned{reinterpret_cast<const char*>(data), size};
  const std::string_view header{owned};

  const std::uint64_t v = mcpcore::sse::parse_last_event_id(header);

  bool all_digits = !header.empty();
  for (const char c : header) all_digits = all_digits && c >= '0' && c <= '9';

  if (v != 0) MCPCORE_FUZZ_CHECK(all_digits);
  if (!all_digits) {
    MCPCORE_FUZZ_CHECK(v == 0);
    return 0;
  }
  std::uint64_t expected = 0;
  const auto r = std::from_chars(header.data(), header.data() + header.size(), expected);
  if (r.ec == std::errc{}) {
    MCPCORE_FUZZ_CHECK(r.ptr == header.data() + header.size());
    MCPCORE_FUZZ_CHECK(v == expected);
  } else {
    MCPCORE_FUZZ_CHECK(r.ec == std::errc::result_out_of_range);
    MCPCORE_FUZZ_CHECK(v == 0);
  }

  // Leading zeros do not change the value.
  const std::string padded = "000" + owned;
  MCPCORE_FUZZ_CHECK(mcpcore::sse::parse_last_event_id(padded) == v);
  return 0;
}
