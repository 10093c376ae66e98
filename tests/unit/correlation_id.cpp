// SPDX-License-Identifier: Apache-2.0
// Tests of correlation-id formatting and minting (docs/errors.md#the-errordata-envelope).
#include <mcpcore/wire/correlation_id.hpp>

#include <doctest/doctest.h>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

using namespace mcpcore;

namespace {

struct parsed_id {
  std::uint64_t ms = 0;
  std::uint64_t seq = 0;
  bool ok = false;
};

// req-<lowercase hex, no leading zeros>-<lowercase hex, no leading zeros>
parsed_id parse_id(std::string_view s) {
  parsed_id r;
  if (!s.starts_with("req-")) return r;
  s.remove_prefix(4);
  const auto dash = s.find('-');
  if (dash == std::string_view::npos) return r;
  const auto field = [](std::string_view f, std::uint64_t& v) {
    if (f.empty() || (f.size() > 1 && f[0] == '0')) return false;
    for (char c : f)
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return std::from_chars(f.data(), f.data() + f.size(), v, 16).ec == std::errc{};
  };
  r.ok = field(s.substr(0, dash), r.ms) && field(s.substr(dash + 1), r.seq);
  return r;
}

}  // namespace

TEST_SUITE("correlation_id") {
  TEST_CASE("format matches Yuzu's example req-18f3c2a1b07-2a (errors.md/the-errordata-envelope)") {
    CHECK(correlation_id::format(0x18f3c2a1b07, 0x2a).view() == "req-18f3c2a1b07-2a");
    CHECK(correlation_id::format(0, 0).view() == "req-0-0");
  }

  TEST_CASE("the longest id fits inline") {
    constexpr auto max = std::numeric_limits<std::uint64_t>::max();
    const auto id = correlation_id::format(max, max);
    CHECK(id.view() == "req-ffffffffffffffff-ffffffffffffffff");
    CHECK(id.view().size() == correlation_id::max_size);
  }

  TEST_CASE("minted ids carry the wall-clock milliseconds and an increasing sequence") {
    const auto now = std::chrono::system_clock::time_point{std::chrono::milliseconds{1700000000123}};
    const auto a = next_correlation_id(now);
    const auto b = next_correlation_id(now);
    const parsed_id pa = parse_id(a.view());
    const parsed_id pb = parse_id(b.view());
    REQUIRE(pa.ok);
    REQUIRE(pb.ok);
    CHECK(pa.ms == 1700000000123);
    CHECK(pb.ms == 1700000000123);
    CHECK(pb.seq > pa.seq);  // same thread: the relaxed counter still increases
    CHECK(a != b);
  }

  TEST_CASE("the default overload stamps the current time") {
    const auto before = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count();
    const auto id = next_correlation_id();
    const auto after = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch()).count();
    const parsed_id p = parse_id(id.view());
    REQUIRE(p.ok);
    CHECK(p.ms >= static_cast<std::uint64_t>(before));
    CHECK(p.ms <= static_cast<std::uint64_t>(after));
  }

  TEST_CASE("a time before the epoch clamps to zero rather than wrapping") {
    const auto id = next_correlation_id(std::chrono::system_clock::time_point{std::chrono::milliseconds{-5}});
    CHECK(parse_id(id.view()).ms == 0);
  }

  TEST_CASE("the id converts to std::string_view") {
    const auto id = correlation_id::format(1, 2);
    const std::string_view sv = id;
    CHECK(std::string{sv} == "req-1-2");
  }
}
