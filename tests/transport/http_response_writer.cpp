// SPDX-License-Identifier: Apache-2.0
// Tests of the sans-I/O HTTP/1.1 response serializer the Asio connection drives: the bytes of
// heads, bodies and chunks, and the keep-alive decision (RFC 9112 §6, §7, §9.3; RFC 9110 §5.6.7,
// §10.1.1), as docs/transport.md#what-it-answers describes them.
#include "http_response_writer.hpp"

#include <doctest/doctest.h>

#include <mcpcore/transport/asio_http_server.hpp>
#include <mcpcore/wire/http.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

using mcpcore::http_response;
using mcpcore::transport::max_chunk_bytes;
using mcpcore::transport::detail::append_chunks;
using mcpcore::transport::detail::append_head;
using mcpcore::transport::detail::append_http_date;
using mcpcore::transport::detail::body_forbidden;
using mcpcore::transport::detail::body_framing;
using mcpcore::transport::detail::continue_response;
using mcpcore::transport::detail::http_response_writer;
using mcpcore::transport::detail::internal_error_response;
using mcpcore::transport::detail::last_chunk;
using mcpcore::transport::detail::over_capacity_response;
using mcpcore::transport::detail::parse_error_response;
using mcpcore::transport::detail::reason_phrase;
using mcpcore::transport::detail::request_facts;

namespace {

using wall = std::chrono::system_clock;

// RFC 9110 §5.6.7's example instant.
const wall::time_point example_time{std::chrono::seconds{784111777}};
constexpr std::string_view example_date = "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n";

http_response text(int status, std::string body) {
  http_response r;
  r.status = status;
  r.headers.push_back({"Content-Type", "text/plain"});
  r.body = std::move(body);
  return r;
}

std::string head_of(const http_response& r, body_framing f, std::size_t body_size, bool keep_alive) {
  std::string out;
  append_head(out, r, f, body_size, keep_alive, example_time);
  return out;
}

// The bytes and decision of one reply through a fresh writer.
struct replied {
  std::string bytes;
  bool streamed = false;
  bool keep_alive = false;
  body_framing framing = body_framing::content_length;
};

replied reply_of(const request_facts& facts, const http_response& r, bool streamed, bool persist = true) {
  http_response_writer w;
  w.begin(facts);
  replied out;
  out.streamed = w.reply(out.bytes, r, streamed, persist, example_time);
  out.keep_alive = w.keep_alive();
  out.framing = w.framing();
  return out;
}

constexpr request_facts http11{1, true, false};
constexpr request_facts http11_close{1, false, false};
constexpr request_facts http10{0, false, false};
constexpr request_facts http10_keep_alive{0, true, false};
constexpr request_facts http11_head{1, true, true};

}  // namespace

TEST_CASE("response writer: reason phrases, and the statuses without content") {
  CHECK(reason_phrase(200) == "OK");
  CHECK(reason_phrase(413) == "Content Too Large");
  CHECK(reason_phrase(431) == "Request Header Fields Too Large");
  CHECK(reason_phrase(505) == "HTTP Version Not Supported");
  CHECK(reason_phrase(299) == "Status");
  for (const int s : {100, 101, 199, 204, 304}) {
    CHECK(body_forbidden(s));
  }
  for (const int s : {99, 200, 203, 205, 303, 305, 500}) {
    CHECK_FALSE(body_forbidden(s));
  }
}

TEST_CASE("response writer: Date is an IMF-fixdate in UTC") {
  std::string out;
  append_http_date(out, example_time);
  CHECK(out == "Sun, 06 Nov 1994 08:49:37 GMT");
  out.clear();
  append_http_date(out, wall::time_point{});
  CHECK(out == "Thu, 01 Jan 1970 00:00:00 GMT");
  out.clear();
  append_http_date(out, wall::time_point{std::chrono::seconds{1709164800}});
  CHECK(out == "Thu, 29 Feb 2024 00:00:00 GMT");
  out.clear();
  append_http_date(out, wall::time_point{std::chrono::seconds{1709164800 - 1}});
  CHECK(out == "Wed, 28 Feb 2024 23:59:59 GMT");
}

TEST_CASE("response writer: a complete head is status line, fields, Date, nosniff, Content-Length, Connection") {
  CHECK(head_of(text(200, "hello"), body_framing::content_length, 5, true) ==
        std::string("HTTP/1.1 200 OK\r\n"
                    "Content-Type: text/plain\r\n") +
            std::string(example_date) +
            "X-Content-Type-Options: nosniff\r\n"
            "Content-Length: 5\r\n"
            "Connection: keep-alive\r\n"
            "\r\n");
  CHECK(head_of(text(404, ""), body_framing::content_length, 0, false) ==
        std::string("HTTP/1.1 404 Not Found\r\n"
                    "Content-Type: text/plain\r\n") +
            std::string(example_date) +
            "X-Content-Type-Options: nosniff\r\n"
            "Content-Length: 0\r\n"
            "Connection: close\r\n"
            "\r\n");
}

TEST_CASE("response writer: a status outside 100-999 is written as 500, an unknown one keeps its code") {
  for (const int s : {0, 99, 1000, -200}) {
    const std::string h = head_of(text(s, ""), body_framing::content_length, 0, true);
    CHECK(h.starts_with("HTTP/1.1 500 Internal Server Error\r\n"));
    CHECK(h.find("Content-Length: 0\r\n") != std::string::npos);
  }
  CHECK(head_of(text(299, ""), body_framing::content_length, 0, true).starts_with("HTTP/1.1 299 Status\r\n"));
}

TEST_CASE("response writer: 1xx, 204 and 304 carry no Content-Length") {
  for (const int s : {101, 204, 304}) {
    http_response r;
    r.status = s;
    const std::string h = head_of(r, body_framing::content_length, 7, true);
    CHECK(h == "HTTP/1.1 " + std::to_string(s) + " " + std::string(reason_phrase(s)) + "\r\n" +
                   std::string(example_date) +
                   "X-Content-Type-Options: nosniff\r\n"
                   "Connection: keep-alive\r\n"
                   "\r\n");
  }
}

TEST_CASE("response writer: the server owns framing and Connection, unsafe fields are dropped") {
  http_response r;
  r.status = 200;
  r.headers = {{"content-length", "999"},   {"Transfer-Encoding", "gzip"},
               {"CONNECTION", "upgrade"},   {"X-Bad", "a\r\nInjected: yes"},
               {"X-Lf", "a\nb"},            {"X-Nul", std::string("a\0b", 3)},
               {"", "empty name"},          {"X:Colon", "v"},
               {"Bad\rName", "v"},          {"X-Kept", "  spaced  "},
               {"X-Kept", "twice"}};
  CHECK(head_of(r, body_framing::content_length, 3, true) == std::string("HTTP/1.1 200 OK\r\n"
                                                                         "X-Kept:   spaced  \r\n"
                                                                         "X-Kept: twice\r\n") +
                                                                 std::string(example_date) +
                                                                 "X-Content-Type-Options: nosniff\r\n"
                                                                 "Content-Length: 3\r\n"
                                                                 "Connection: keep-alive\r\n"
                                                                 "\r\n");
}

TEST_CASE("response writer: the reply's own Date, nosniff, Cache-Control, X-Accel-Buffering are kept, not doubled") {
  http_response r;
  r.status = 200;
  r.headers = {{"date", "Mon, 07 Nov 1994 00:00:00 GMT"},
               {"x-content-type-options", "nosniff"},
               {"cache-control", "no-store"},
               {"x-accel-buffering", "yes"}};
  CHECK(head_of(r, body_framing::chunked, 0, true) == "HTTP/1.1 200 OK\r\n"
                                                      "date: Mon, 07 Nov 1994 00:00:00 GMT\r\n"
                                                      "x-content-type-options: nosniff\r\n"
                                                      "cache-control: no-store\r\n"
                                                      "x-accel-buffering: yes\r\n"
                                                      "Transfer-Encoding: chunked\r\n"
                                                      "Connection: keep-alive\r\n"
                                                      "\r\n");
}

TEST_CASE("response writer: stream heads: chunked and close-delimited") {
  http_response r;
  r.status = 200;
  r.headers.push_back({"Content-Type", "text/event-stream"});
  const std::string common = std::string("HTTP/1.1 200 OK\r\n"
                                         "Content-Type: text/event-stream\r\n") +
                             std::string(example_date) +
                             "X-Content-Type-Options: nosniff\r\n"
                             "Cache-Control: no-cache\r\n"
                             "X-Accel-Buffering: no\r\n";
  CHECK(head_of(r, body_framing::chunked, 0, true) ==
        common + "Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n");
  CHECK(head_of(r, body_framing::until_close, 0, false) == common + "Connection: close\r\n\r\n");
  // A stream head never has Content-Length, whatever the size passed.
  CHECK(head_of(r, body_framing::chunked, 42, true).find("Content-Length") == std::string::npos);
}

TEST_CASE("response writer: chunks are lower-case hex sizes of at most max_chunk_bytes") {
  std::string out;
  append_chunks(out, "");
  CHECK(out.empty());  // an empty chunk would end the body
  append_chunks(out, "abc");
  CHECK(out == "3\r\nabc\r\n");
  out.clear();
  append_chunks(out, std::string(255, 'x'));
  CHECK(out == "ff\r\n" + std::string(255, 'x') + "\r\n");
  out.clear();
  const std::string big(max_chunk_bytes + 10, 'y');
  append_chunks(out, big);
  REQUIRE(max_chunk_bytes == 8192);
  CHECK(out == "2000\r\n" + std::string(max_chunk_bytes, 'y') + "\r\na\r\n" + std::string(10, 'y') + "\r\n");
  CHECK(last_chunk == "0\r\n\r\n");
  CHECK(continue_response == "HTTP/1.1 100 Continue\r\n\r\n");
}

TEST_CASE("response writer: a complete reply: head and body, keep-alive as the request allows") {
  const replied a = reply_of(http11, text(200, "hello"), false);
  CHECK_FALSE(a.streamed);
  CHECK(a.keep_alive);
  CHECK(a.framing == body_framing::content_length);
  CHECK(a.bytes == std::string("HTTP/1.1 200 OK\r\n"
                               "Content-Type: text/plain\r\n") +
                       std::string(example_date) +
                       "X-Content-Type-Options: nosniff\r\n"
                       "Content-Length: 5\r\n"
                       "Connection: keep-alive\r\n"
                       "\r\n"
                       "hello");
  // HTTP/1.1 with `Connection: close`, HTTP/1.0 without keep-alive: close. HTTP/1.0 asking for
  // keep-alive keeps it (the body has a Content-Length).
  CHECK_FALSE(reply_of(http11_close, text(200, "x"), false).keep_alive);
  CHECK_FALSE(reply_of(http10, text(200, "x"), false).keep_alive);
  CHECK(reply_of(http10_keep_alive, text(200, "x"), false).keep_alive);
  const replied b = reply_of(http10, text(200, "x"), false);
  CHECK(b.bytes.starts_with("HTTP/1.1 200 OK\r\n"));  // always HTTP/1.1 (RFC 9110 §2.5)
  CHECK(b.bytes.ends_with("Connection: close\r\n\r\nx"));
}

TEST_CASE("response writer: a stopping server or a peer's EOF closes after the reply") {
  const replied r = reply_of(http11, text(200, "x"), false, false);
  CHECK_FALSE(r.keep_alive);
  CHECK(r.bytes.ends_with("Content-Length: 1\r\nConnection: close\r\n\r\nx"));
}

TEST_CASE("response writer: the reply's Connection listing close closes (and is not written twice)") {
  for (const std::string_view v : {"close", "Close", "keep-alive, CLOSE", " \tclose\t ", "foo,close,bar"}) {
    http_response r = text(200, "x");
    r.headers.push_back({"Connection", std::string(v)});
    const replied out = reply_of(http11, r, false);
    CHECK_FALSE(out.keep_alive);
    const auto at = out.bytes.find("Connection: ");
    REQUIRE(at != std::string::npos);
    CHECK(out.bytes.find("Connection: ", at + 1) == std::string::npos);  // the reply's is dropped
    CHECK(out.bytes.substr(at) == "Connection: close\r\n\r\nx");
  }
  for (const std::string_view v : {"closed", "keep-alive", "clo se", ""}) {
    http_response r = text(200, "x");
    r.headers.push_back({"Connection", std::string(v)});
    CHECK(reply_of(http11, r, false).keep_alive);
  }
}

TEST_CASE("response writer: HEAD gets the head only, with the Content-Length of the body it would have had") {
  const replied a = reply_of(http11_head, text(200, "hello"), false);
  CHECK_FALSE(a.streamed);
  CHECK(a.keep_alive);
  CHECK(a.bytes.ends_with("Content-Length: 5\r\nConnection: keep-alive\r\n\r\n"));
  // A stream answering HEAD is not pulled: a head with Content-Length 0.
  const replied b = reply_of(http11_head, text(200, ""), true);
  CHECK_FALSE(b.streamed);
  CHECK(b.framing == body_framing::content_length);
  CHECK(b.bytes.ends_with("Content-Length: 0\r\nConnection: keep-alive\r\n\r\n"));
}

TEST_CASE("response writer: 204 and 304 are written without content, even given a body or a stream") {
  const replied a = reply_of(http11, text(204, "ignored"), false);
  CHECK_FALSE(a.streamed);
  CHECK(a.bytes == std::string("HTTP/1.1 204 No Content\r\n"
                               "Content-Type: text/plain\r\n") +
                       std::string(example_date) +
                       "X-Content-Type-Options: nosniff\r\n"
                       "Connection: keep-alive\r\n"
                       "\r\n");
  const replied b = reply_of(http11, text(304, ""), true);
  CHECK_FALSE(b.streamed);
  CHECK(b.bytes.ends_with("X-Content-Type-Options: nosniff\r\nConnection: keep-alive\r\n\r\n"));
}

TEST_CASE("response writer: an HTTP/1.1 stream is chunked and ends with the last chunk") {
  http_response_writer w;
  w.begin(http11);
  std::string out;
  REQUIRE(w.reply(out, text(200, "not written"), true, true, example_time));
  CHECK(w.framing() == body_framing::chunked);
  CHECK(w.keep_alive());
  CHECK(out.ends_with("Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"));
  CHECK(out.find("not written") == std::string::npos);
  out.clear();
  w.append_stream(out, "data: 1\n\n");
  w.append_stream(out, "");
  CHECK(out == "9\r\ndata: 1\n\n\r\n");
  out.clear();
  CHECK(w.end_stream(out));
  CHECK(out == "0\r\n\r\n");
}

TEST_CASE("response writer: an HTTP/1.0 stream is close-delimited and closes, even with keep-alive asked") {
  for (const request_facts& facts : {http10, http10_keep_alive}) {
    http_response_writer w;
    w.begin(facts);
    std::string out;
    REQUIRE(w.reply(out, text(200, ""), true, true, example_time));
    CHECK(w.framing() == body_framing::until_close);
    CHECK_FALSE(w.keep_alive());
    CHECK(out.ends_with("Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\nConnection: close\r\n\r\n"));
    CHECK(out.find("Transfer-Encoding") == std::string::npos);
    out.clear();
    w.append_stream(out, "data: 1\n\n");
    CHECK(out == "data: 1\n\n");
    out.clear();
    CHECK_FALSE(w.end_stream(out));  // the close ends the body
    CHECK(out.empty());
  }
}

TEST_CASE("response writer: an HTTP/1.1 stream on a connection that cannot persist is chunked and closes") {
  const replied r = reply_of(http11, text(200, ""), true, false);
  CHECK(r.streamed);
  CHECK(r.framing == body_framing::chunked);
  CHECK_FALSE(r.keep_alive);
  CHECK(r.bytes.ends_with("Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"));
}

TEST_CASE("response writer: answers of its own close the connection") {
  http_response_writer w;
  w.begin(http11);
  std::string out;
  w.reply(out, text(200, "x"), false, true, example_time);
  REQUIRE(w.keep_alive());
  out.clear();
  w.close_with(out, parse_error_response(400, "malformed request"), example_time);
  CHECK_FALSE(w.keep_alive());
  CHECK(w.framing() == body_framing::content_length);
  CHECK(out == std::string("HTTP/1.1 400 Bad Request\r\n"
                           "Content-Type: text/plain; charset=utf-8\r\n") +
                   std::string(example_date) +
                   "X-Content-Type-Options: nosniff\r\n"
                   "Content-Length: 18\r\n"
                   "Connection: close\r\n"
                   "\r\n"
                   "malformed request\n");

  // Without a reason the body is the reason phrase.
  CHECK(parse_error_response(431, "").body == "Request Header Fields Too Large\n");

  out.clear();
  w.close_with(out, over_capacity_response(), example_time);
  CHECK(out == std::string("HTTP/1.1 503 Service Unavailable\r\n"
                           "Content-Type: text/plain; charset=utf-8\r\n"
                           "Retry-After: 1\r\n") +
                   std::string(example_date) +
                   "X-Content-Type-Options: nosniff\r\n"
                   "Content-Length: 21\r\n"
                   "Connection: close\r\n"
                   "\r\n"
                   "too many connections\n");

  const http_response e = internal_error_response();
  CHECK(e.status == 500);
  CHECK(e.header("Content-Type") == "text/plain; charset=utf-8");
  CHECK(e.body == "internal error\n");
}

TEST_CASE("response writer: each response's decision is its own") {
  http_response_writer w;
  std::string out;
  w.begin(http11);
  REQUIRE(w.reply(out, text(200, ""), true, true, example_time));
  CHECK(w.framing() == body_framing::chunked);
  w.begin(http11_close);
  CHECK(w.framing() == body_framing::content_length);
  CHECK_FALSE(w.reply(out, text(200, "x"), false, true, example_time));
  CHECK_FALSE(w.keep_alive());
  w.begin(http11);
  CHECK_FALSE(w.reply(out, text(200, "x"), false, true, example_time));
  CHECK(w.keep_alive());
}
