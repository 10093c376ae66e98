// SPDX-License-Identifier: Apache-2.0
// Tests of SSE framing and Last-Event-ID parsing (docs/design.md#other-wire-pieces,
// docs/sessions.md#sse-frames; MCP 2025-11-25 transports).
#include <mcpcore/wire/sse.hpp>

#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

using namespace mcpcore;
using std::chrono::milliseconds;

namespace {

// The client side: WHATWG HTML "Interpreting an event stream", enough of it to check that what
// we write is read back as intended (line terminators CRLF/LF/CR, one optional leading space,
// data lines joined with LF, the final LF removed, events dispatched on blank lines).
struct received_event {
  std::string type;
  std::string data;
  std::string last_event_id;
};
struct stream_reader {
  std::vector<received_event> events;
  std::vector<std::string> comments;
  std::optional<long> retry;
  std::string last_event_id;

  void read(std::string_view stream) {
    std::string type, data;
    bool have_data = false;
    std::size_t i = 0;
    while (i < stream.size()) {
      std::size_t end = i;
      while (end < stream.size() && stream[end] != '\n' && stream[end] != '\r') ++end;
      REQUIRE(end < stream.size());  // every line we write is terminated
      const std::string_view line = stream.substr(i, end - i);
      i = end + 1;
      if (stream[end] == '\r' && i < stream.size() && stream[i] == '\n') ++i;
      if (line.empty()) {
        if (have_data) {
          if (!data.empty() && data.back() == '\n') data.pop_back();
          events.push_back({type.empty() ? "message" : type, data, last_event_id});
        }
        type.clear();
        data.clear();
        have_data = false;
        continue;
      }
      if (line.front() == ':') {
        comments.emplace_back(line.substr(1));
        continue;
      }
      const auto colon = line.find(':');
      const std::string_view field = line.substr(0, colon);
      std::string_view value = colon == std::string_view::npos ? std::string_view{} : line.substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      if (field == "event") type = value;
      if (field == "data") {
        data.append(value);
        data.push_back('\n');
        have_data = true;
      }
      if (field == "id") last_event_id = value;
      if (field == "retry") retry = std::stol(std::string{value});
    }
  }
};

}  // namespace

TEST_SUITE("sse") {
  TEST_CASE("an event writes id, event, data and a blank line (sessions.md/sse-frames)") {
    std::string out;
    sse::write_event(out, {.id = 7, .type = "message", .data = R"({"jsonrpc":"2.0"})"});
    CHECK(out == "id: 7\nevent: message\ndata: {\"jsonrpc\":\"2.0\"}\n\n");
  }

  TEST_CASE("id 0 writes no id line, so heartbeats and synthetics never move the cursor (sessions.md/sse-frames)") {
    std::string out;
    sse::write_event(out, {.type = "heartbeat"});
    CHECK(out == "event: heartbeat\ndata: \n\n");
    stream_reader r;
    r.read(out);
    REQUIRE(r.events.size() == 1);
    CHECK(r.events[0].type == "heartbeat");
    CHECK(r.events[0].data.empty());
    CHECK(r.last_event_id.empty());
  }

  TEST_CASE("the priming event has an id, empty data and retry (MCP 2025-11-25, SEP-1699)") {
    std::string out;
    sse::write_event(out, {.id = 1, .data = "", .retry = milliseconds{3000}});
    CHECK(out == "id: 1\nretry: 3000\ndata: \n\n");
    stream_reader r;
    r.read(out);
    REQUIRE(r.events.size() == 1);  // an empty data line still dispatches
    CHECK(r.events[0].type == "message");
    CHECK(r.events[0].last_event_id == "1");
    CHECK(r.retry == 3000);
  }

  TEST_CASE("multi-line data becomes one data line per line and reads back intact") {
    const std::string_view payloads[] = {"a\nb", "a\r\nb\rc", "trailing\n", "\n\n", "no newline", "\r\n"};
    for (std::string_view payload : payloads) {
      CAPTURE(payload);
      std::string out;
      sse::write_event(out, {.id = 2, .data = payload});
      stream_reader r;
      r.read(out);
      REQUIRE(r.events.size() == 1);
      std::string expected;  // the reader normalizes every terminator to LF
      for (std::size_t i = 0; i < payload.size(); ++i) {
        if (payload[i] == '\r') {
          expected.push_back('\n');
          if (i + 1 < payload.size() && payload[i + 1] == '\n') ++i;
        } else {
          expected.push_back(payload[i]);
        }
      }
      CHECK(r.events[0].data == expected);
    }
  }

  TEST_CASE("event types lose CR/LF and are cut at 64 bytes on a UTF-8 boundary (sessions.md/sse-frames)") {
    std::string out;
    sse::write_event(out, {.type = "a\rb\nc", .data = "x"});
    CHECK(out == "event: a_b_c\ndata: x\n\n");

    out.clear();
    sse::write_event(out, {.type = std::string(100, 't'), .data = "x"});
    CHECK(out == "event: " + std::string(sse::max_event_type_bytes, 't') + "\ndata: x\n\n");

    // 63 ASCII bytes then a 2-byte character straddling the 64-byte limit: the character goes.
    out.clear();
    const std::string type = std::string(63, 'u') + "\xC3\xA9" + "tail";
    sse::write_event(out, {.type = type, .data = "x"});
    CHECK(out == "event: " + std::string(63, 'u') + "\ndata: x\n\n");
  }

  TEST_CASE("several events in one buffer stay separate") {
    std::string out;
    sse::write_event(out, {.id = 1, .type = "message", .data = "one"});
    sse::write_comment(out, "keep-alive");
    sse::write_event(out, {.id = 2, .type = "message", .data = "two"});
    stream_reader r;
    r.read(out);
    REQUIRE(r.events.size() == 2);
    CHECK(r.events[0].data == "one");
    CHECK(r.events[1].data == "two");
    CHECK(r.events[1].last_event_id == "2");
    REQUIRE(r.comments.size() == 1);
    CHECK(r.comments[0] == " keep-alive");
  }

  TEST_CASE("comments cannot smuggle fields: every line break starts a new comment line") {
    std::string out;
    sse::write_comment(out, "x\ndata: injected\revent: evil");
    CHECK(out == ": x\n: data: injected\n: event: evil\n\n");
    stream_reader r;
    r.read(out);
    CHECK(r.events.empty());
    CHECK(r.comments.size() == 3);

    out.clear();
    sse::write_comment(out, "");
    CHECK(out == ":\n\n");
  }

  TEST_CASE("Last-Event-ID is a strict unsigned decimal, anything else is 0 (design.md/other-wire-pieces)") {
    CHECK(sse::parse_last_event_id("0") == 0);
    CHECK(sse::parse_last_event_id("1") == 1);
    CHECK(sse::parse_last_event_id("42") == 42);
    CHECK(sse::parse_last_event_id("007") == 7);
    CHECK(sse::parse_last_event_id("18446744073709551615") == 18446744073709551615ULL);
    // empty, signed, overflowing, junk-suffixed, spaced, non-ASCII digits
    for (std::string_view bad : {"", "-1", "+1", "18446744073709551616", "99999999999999999999999", "12a",
                                 "a12", " 12", "12 ", "1.5", "1e3", "0x10", "\xD9\xA1", "12\n"}) {
      CAPTURE(bad);
      CHECK(sse::parse_last_event_id(bad) == 0);
    }
    const char embedded_nul[] = {'1', '\0', '2'};
    CHECK(sse::parse_last_event_id(std::string_view{embedded_nul, 3}) == 0);
  }
}
