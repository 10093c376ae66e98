// SPDX-License-Identifier: Apache-2.0
// Fuzzes the HTTP/1.1 request parser seam (src/transport/http_head_parser.cpp over libhttp-parser).
//
// Input: byte 0 picks the limits (bit 0: small caps, so that every cap is reached) and the number
// of slice lengths (bits 1-3); the next bytes are those slice lengths (0 means 1), used in turn to
// cut the rest, the byte stream of a connection, into the pieces handed to feed(). Complete
// requests are taken and the unconsumed bytes fed again, as a transport does with pipelining.
// Bit 4: the sliced run feeds each head with feed_head() first (the transport's head-first order).
//
// Invariants:
//  - feed() consumes at most what it is given, everything in need_more/headers_done unless the
//    state changes, and nothing in complete (until take()) or error (ever again);
//  - every request taken is within the caps: body <= max_body_bytes, fields <= max_header_count,
//    target <= max_target_bytes; names are tokens, values carry no CTL and no surrounding OWS;
//    version 1.0 or 1.1; the body has the declared length when one was declared;
//  - a failure has one of the documented statuses and a reason, and never comes from a
//    disagreement between the seam's own scanners and libhttp-parser;
//  - slicing does not matter: feeding the stream in one piece takes the same requests and ends in
//    the same state (with the same status when both fail).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mcpcore/wire/http.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_check.hpp"
#include "http_head_parser.hpp"

namespace {

using mcpcore::transport::detail::head_limits;
using mcpcore::transport::detail::http_head_parser;
using mcpcore::transport::detail::parse_failure;
using mcpcore::transport::detail::parse_state;
using mcpcore::transport::detail::parsed_request;

bool is_tchar(char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return std::string_view{"!#$%&'*+-.^_`|~"}.find(c) != std::string_view::npos;
}

void check_request(const parsed_request& r, const head_limits& limits) {
  MCPCORE_FUZZ_CHECK(!r.method.empty());
  MCPCORE_FUZZ_CHECK(!r.target.empty());
  MCPCORE_FUZZ_CHECK(r.target.size() <= limits.max_target_bytes);
  MCPCORE_FUZZ_CHECK(r.version_minor == 0 || r.version_minor == 1);
  MCPCORE_FUZZ_CHECK(r.headers.size() <= limits.max_header_count);
  MCPCORE_FUZZ_CHECK(r.body.size() <= limits.max_body_bytes);
  MCPCORE_FUZZ_CHECK(!r.expect_continue || r.version_minor == 1);
  for (const mcpcore::http_header& h : r.headers) {
    MCPCORE_FUZZ_CHECK(!h.name.empty());
    for (const char c : h.name) MCPCORE_FUZZ_CHECK(is_tchar(c));
    for (const char c : h.value) {
      const auto u = static_cast<unsigned char>(c);
      MCPCORE_FUZZ_CHECK(u == '\t' || (u >= 0x20 && u != 0x7f));
    }
    if (!h.value.empty()) {
      MCPCORE_FUZZ_CHECK(h.value.front() != ' ' && h.value.front() != '\t');
      MCPCORE_FUZZ_CHECK(h.value.back() != ' ' && h.value.back() != '\t');
    }
  }
}

bool valid_status(int status) {
  switch (status) {
    case 400:
    case 413:
    case 414:
    case 431:
    case 500:
    case 501:
    case 505:
      return true;
    default:
      return false;
  }
}

struct outcome {
  std::vector<parsed_request> requests;
  parse_state state = parse_state::need_more;
  int status = 0;
  std::size_t consumed = 0;
};

// Feeds `stream` cut by `slices` (cyclically; empty: one piece), checking the invariants.
// With `head_first`, a head is fed with feed_head() (as the transport does, to check it before its
// body), the rest with feed(): the outcome must not change.
outcome drive(std::string_view stream, const std::vector<std::size_t>& slices,
              const head_limits& limits, bool head_first = false) {
  http_head_parser parser{limits};
  outcome out;
  std::string pending;
  std::size_t next = 0;
  std::size_t turn = 0;
  while (true) {
    if (pending.empty()) {
      if (next >= stream.size()) break;
      std::size_t n = stream.size() - next;
      if (!slices.empty()) n = std::min(n, slices[turn++ % slices.size()]);
      pending.assign(stream.substr(next, n));
      next += n;
    }
    const parse_state before = parser.state();
    MCPCORE_FUZZ_CHECK(before == parse_state::need_more || before == parse_state::headers_done);
    std::size_t used = 0;
    if (head_first && before == parse_state::need_more) {
      used = parser.feed_head(pending);
      MCPCORE_FUZZ_CHECK(used <= pending.size());
      MCPCORE_FUZZ_CHECK(parser.state() != parse_state::complete);  // never past the head
      if (parser.state() == parse_state::headers_done) {
        MCPCORE_FUZZ_CHECK(parser.peek().body.empty());
        MCPCORE_FUZZ_CHECK(parser.feed_head(std::string_view{pending}.substr(used)) == 0);
      }
    }
    if (parser.state() == parse_state::need_more || parser.state() == parse_state::headers_done) {
      used += parser.feed(std::string_view{pending}.substr(used));
    }
    MCPCORE_FUZZ_CHECK(used <= pending.size());
    out.consumed += used;
    pending.erase(0, used);
    const parse_state after = parser.state();

    if (after == parse_state::headers_done) {
      const parsed_request& head = parser.peek();
      MCPCORE_FUZZ_CHECK(head.headers.size() <= limits.max_header_count);
      MCPCORE_FUZZ_CHECK(parser.body_declared() <= limits.max_body_bytes);
      MCPCORE_FUZZ_CHECK(head.body.size() <= limits.max_body_bytes);
    }
    if (after == parse_state::need_more || after == parse_state::headers_done) {
      MCPCORE_FUZZ_CHECK(pending.empty());  // nothing is left behind while more is needed
      continue;
    }
    if (after == parse_state::error) {
      const parse_failure f = parser.failure();
      MCPCORE_FUZZ_CHECK(valid_status(f.status));
      MCPCORE_FUZZ_CHECK(!f.reason.empty());
      // The seam's scanners and libhttp-parser always agree on where lines and chunks end.
      MCPCORE_FUZZ_CHECK(f.reason != "request parser inconsistency");
      // No further progress, whatever is fed.
      MCPCORE_FUZZ_CHECK(parser.feed(pending) == 0);
      MCPCORE_FUZZ_CHECK(parser.feed("GET / HTTP/1.1\r\n\r\n") == 0);
      MCPCORE_FUZZ_CHECK(parser.state() == parse_state::error);
      MCPCORE_FUZZ_CHECK(parser.failure().status == f.status);
      out.state = parse_state::error;
      out.status = f.status;
      return out;
    }
    // complete: nothing more is consumed until take().
    MCPCORE_FUZZ_CHECK(parser.feed("GET / HTTP/1.1\r\n\r\n") == 0);
    const std::size_t declared = parser.body_declared();
    parsed_request r = parser.take();
    MCPCORE_FUZZ_CHECK(parser.state() == parse_state::need_more);
    MCPCORE_FUZZ_CHECK(parser.body_declared() == 0);
    check_request(r, limits);
    if (declared != 0) MCPCORE_FUZZ_CHECK(r.body.size() == declared);
    out.requests.push_back(std::move(r));
  }
  out.state = parser.state();
  return out;
}

bool same_request(const parsed_request& a, const parsed_request& b) {
  if (a.method != b.method || a.target != b.target || a.version_minor != b.version_minor ||
      a.body != b.body || a.keep_alive != b.keep_alive || a.expect_continue != b.expect_continue ||
      a.headers.size() != b.headers.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.headers.size(); ++i) {
    if (a.headers[i].name != b.headers[i].name || a.headers[i].value != b.headers[i].value)
      return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t mode = data[0];
  head_limits limits;
  if ((mode & 1U) != 0) {
    limits.max_target_bytes = 24;
    limits.max_header_bytes = 160;
    limits.max_header_count = 4;
    limits.max_body_bytes = 32;
  }
  const std::size_t slice_count = (mode >> 1U) & 7U;
  if (size < 1 + slice_count) return 0;
  std::vector<std::size_t> slices;
  slices.reserve(slice_count);
  for (std::size_t i = 0; i < slice_count; ++i) {
    slices.push_back(data[1 + i] == 0 ? 1 : data[1 + i]);
  }
  // Exact-size heap copy, so that ASan sees any read past the end.
  const std::string stream{reinterpret_cast<const char*>(data) + 1 + slice_count,
                           size - 1 - slice_count};

  const outcome sliced = drive(stream, slices, limits, (mode & 0x10U) != 0);
  const outcome whole = drive(stream, {}, limits);
  MCPCORE_FUZZ_CHECK(sliced.state == whole.state);
  MCPCORE_FUZZ_CHECK(sliced.status == whole.status);
  MCPCORE_FUZZ_CHECK(sliced.requests.size() == whole.requests.size());
  for (std::size_t i = 0; i < whole.requests.size(); ++i) {
    MCPCORE_FUZZ_CHECK(same_request(sliced.requests[i], whole.requests[i]));
  }
  if (whole.state != parse_state::error) MCPCORE_FUZZ_CHECK(sliced.consumed == whole.consumed);
  return 0;
}
