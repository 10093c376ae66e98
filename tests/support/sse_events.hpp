// SPDX-License-Identifier: Apache-2.0
// Reads SSE bytes as a client does (WHATWG "event stream interpretation", the fields mcpcore
// writes), and the bounded drive loop of a stream's reader, for the tests of the pumps and the
// HTTP endpoint.
#ifndef MCPCORE_TESTS_SUPPORT_SSE_EVENTS_HPP
#define MCPCORE_TESTS_SUPPORT_SSE_EVENTS_HPP

#include <doctest/doctest.h>

#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace sse_test {

/// One event: its `id:` (absent when the event has none), `event:` type, the `data:` lines joined
/// by LF, and `retry:`.
struct sse_event {
  std::optional<std::uint64_t> id;
  std::string type;
  std::string data;
  std::optional<std::uint64_t> retry;
};

/// Splits `text` into events on blank lines, reading `id:`, `event:`, `data:` and `retry:`.
inline std::vector<sse_event> parse_sse(std::string_view text) {
  std::vector<sse_event> out;
  sse_event cur;
  bool any = false;
  bool has_data = false;
  std::size_t pos = 0;
  const auto value_of = [](std::string_view line, std::string_view field) -> std::optional<std::string_view> {
    if (line.substr(0, field.size()) != field) return std::nullopt;
    line.remove_prefix(field.size());
    if (line.empty()) return line;
    if (line.front() != ':') return std::nullopt;
    line.remove_prefix(1);
    if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    return line;
  };
  const auto number = [](std::string_view v) {
    std::uint64_t n = 0;
    const auto r = std::from_chars(v.data(), v.data() + v.size(), n);
    CHECK_MESSAGE((r.ec == std::errc{} && r.ptr == v.data() + v.size()), "a malformed number: " << v);
    return n;
  };
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    const std::string_view line = nl == std::string_view::npos ? text.substr(pos) : text.substr(pos, nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    if (line.empty()) {
      if (any) out.push_back(std::move(cur));
      cur = sse_event{};
      any = false;
      has_data = false;
      continue;
    }
    if (line.front() == ':') continue;
    any = true;
    if (auto v = value_of(line, "id")) {
      cur.id = number(*v);
    } else if (auto t = value_of(line, "event")) {
      cur.type = std::string{*t};
    } else if (auto r = value_of(line, "retry")) {
      cur.retry = number(*r);
    } else if (auto d = value_of(line, "data")) {
      if (has_data) cur.data.push_back('\n');
      cur.data.append(*d);
      has_data = true;
    }
  }
  CHECK_MESSAGE(!any, "an SSE event without its terminating blank line: " << text);
  return out;
}

/// Calls `step` (one pull or pass of a stream) until `done()` holds or `finished()` (the stream
/// ended), bounded by `timeout` in real time; whether `done()` held.
template <class Done, class Finished, class Step>
bool step_until(const Done& done, const Finished& finished, const Step& step, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    if (finished()) break;
    step();
  }
  return done();
}

}  // namespace sse_test

#endif  // MCPCORE_TESTS_SUPPORT_SSE_EVENTS_HPP
