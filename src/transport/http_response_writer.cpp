// SPDX-License-Identifier: Apache-2.0
// The HTTP/1.1 response serializer: heads, framing, chunks and the keep-alive decision.
#include "http_response_writer.hpp"

#include "http_head_parser.hpp"

#include <mcpcore/detail/ascii.hpp>
#include <mcpcore/detail/config.hpp>
#include <mcpcore/transport/asio_http_server.hpp>
#include <mcpcore/wire/http.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <ctime>
#include <string>
#include <string_view>
#include <utility>

MCPCORE_BEGIN_NAMESPACE

namespace transport::detail {

namespace {

using mcpcore::detail::ascii_iequals;

void append_number(std::string& out, std::size_t n) {
  std::array<char, 24> buf{};
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), n);
  out.append(buf.data(), r.ptr);
}

void append_hex(std::string& out, std::size_t n) {
  std::array<char, 24> buf{};
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), n, 16);
  out.append(buf.data(), r.ptr);
}

void append_2digits(std::string& out, int v) {
  out.push_back(static_cast<char>('0' + (v / 10)));
  out.push_back(static_cast<char>('0' + (v % 10)));
}

void append_header(std::string& out, std::string_view name, std::string_view value) {
  out += name;
  out += ": ";
  out += value;
  out += "\r\n";
}

// Whether a field may be written at all: a field holding CR, LF or NUL would split the head.
bool safe_field(std::string_view s) noexcept {
  return s.find_first_of(std::string_view{"\r\n\0", 3}) == std::string_view::npos;
}

// The fields the server adds unless the reply has them: which of them it has.
struct own_fields {
  bool date = false;
  bool nosniff = false;
  bool cache = false;
  bool accel = false;
};

// Writes the reply's own fields, minus the unsafe ones and those the server owns (framing and
// Connection), and notes which of the server's defaults they already provide.
own_fields append_reply_fields(std::string& out, const http_response& r) {
  own_fields has;
  for (const auto& h : r.headers) {
    if (h.name.empty() || !safe_field(h.name) || !safe_field(h.value) || h.name.find(':') != std::string::npos) {
      continue;
    }
    if (ascii_iequals(h.name, "Content-Length") || ascii_iequals(h.name, "Transfer-Encoding") ||
        ascii_iequals(h.name, "Connection")) {
      continue;
    }
    has.date = has.date || ascii_iequals(h.name, "Date");
    has.nosniff = has.nosniff || ascii_iequals(h.name, "X-Content-Type-Options");
    has.cache = has.cache || ascii_iequals(h.name, "Cache-Control");
    has.accel = has.accel || ascii_iequals(h.name, "X-Accel-Buffering");
    append_header(out, h.name, h.value);
  }
  return has;
}

http_response plain_text(int status, std::string body) {
  http_response r;
  r.status = status;
  r.headers.push_back({"Content-Type", "text/plain; charset=utf-8"});
  r.body = std::move(body);
  return r;
}

}  // namespace

std::string_view reason_phrase(int status) noexcept {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Status";
  }
}

void append_http_date(std::string& out, std::chrono::system_clock::time_point when) {
  static constexpr std::array<std::string_view, 7> days{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr std::array<std::string_view, 12> months{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const std::time_t t = std::chrono::system_clock::to_time_t(when);
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr) {
    out += "Thu, 01 Jan 1970 00:00:00 GMT";
    return;
  }
  out += days.at(static_cast<std::size_t>(tm.tm_wday % 7));
  out += ", ";
  append_2digits(out, tm.tm_mday);
  out += ' ';
  out += months.at(static_cast<std::size_t>(tm.tm_mon % 12));
  out += ' ';
  const int year = tm.tm_year + 1900;
  append_number(out, static_cast<std::size_t>(year));
  out += ' ';
  append_2digits(out, tm.tm_hour);
  out += ':';
  append_2digits(out, tm.tm_min);
  out += ':';
  append_2digits(out, tm.tm_sec);
  out += " GMT";
}

void append_head(std::string& out, const http_response& r, body_framing framing, std::size_t body_size,
                 bool keep_alive, std::chrono::system_clock::time_point now) {
  const int status = (r.status >= 100 && r.status <= 999) ? r.status : 500;
  out += "HTTP/1.1 ";
  append_number(out, static_cast<std::size_t>(status));
  out += ' ';
  out += reason_phrase(status);
  out += "\r\n";
  const own_fields has = append_reply_fields(out, r);
  if (!has.date) {
    out += "Date: ";
    append_http_date(out, now);
    out += "\r\n";
  }
  if (!has.nosniff) {
    append_header(out, "X-Content-Type-Options", "nosniff");
  }
  switch (framing) {
    case body_framing::content_length:
      if (!body_forbidden(status)) {
        out += "Content-Length: ";
        append_number(out, body_size);
        out += "\r\n";
      }
      break;
    case body_framing::chunked:
    case body_framing::until_close:
      if (!has.cache) {
        append_header(out, "Cache-Control", "no-cache");
      }
      if (!has.accel) {
        append_header(out, "X-Accel-Buffering", "no");
      }
      if (framing == body_framing::chunked) {
        append_header(out, "Transfer-Encoding", "chunked");
      }
      break;
  }
  append_header(out, "Connection", keep_alive ? "keep-alive" : "close");
  out += "\r\n";
}

void append_chunks(std::string& out, std::string_view bytes) {
  while (!bytes.empty()) {
    const auto n = std::min(bytes.size(), max_chunk_bytes);
    append_hex(out, n);
    out += "\r\n";
    out += bytes.substr(0, n);
    out += "\r\n";
    bytes.remove_prefix(n);
  }
}

void http_response_writer::begin(const request_facts& facts) noexcept {
  request_ = facts;
  framing_ = body_framing::content_length;
}

bool http_response_writer::reply(std::string& out, const http_response& r, bool streamed, bool persist,
                                 clock::time_point now) {
  keep_alive_ = request_.keep_alive && persist;
  if (const auto c = r.header("Connection"); c && list_has_token(*c, "close")) {
    keep_alive_ = false;
  }
  if (!streamed || request_.head || body_forbidden(r.status)) {
    framing_ = body_framing::content_length;
    append_head(out, r, framing_, r.body.size(), keep_alive_, now);
    if (!request_.head && !body_forbidden(r.status)) {
      out += r.body;
    }
    return false;
  }
  framing_ = request_.version_minor >= 1 ? body_framing::chunked : body_framing::until_close;
  if (framing_ == body_framing::until_close) {
    keep_alive_ = false;  // HTTP/1.0 has no chunked coding: the body ends with the connection
  }
  append_head(out, r, framing_, 0, keep_alive_, now);
  return true;
}

void http_response_writer::close_with(std::string& out, const http_response& r, clock::time_point now) {
  keep_alive_ = false;
  framing_ = body_framing::content_length;
  append_head(out, r, framing_, r.body.size(), false, now);
  out += r.body;
}

void http_response_writer::append_stream(std::string& out, std::string_view bytes) const {
  if (framing_ == body_framing::chunked) {
    append_chunks(out, bytes);
  } else {
    out += bytes;
  }
}

bool http_response_writer::end_stream(std::string& out) const {
  if (framing_ != body_framing::chunked) {
    return false;
  }
  out += last_chunk;
  return true;
}

http_response parse_error_response(int status, std::string_view reason) {
  std::string body = reason.empty() ? std::string(reason_phrase(status)) : std::string(reason);
  body += '\n';
  return plain_text(status, std::move(body));
}

http_response over_capacity_response() {
  http_response r = plain_text(503, "too many connections\n");
  r.headers.push_back({"Retry-After", "1"});
  return r;
}

http_response body_budget_response() {
  http_response r = plain_text(503, "server busy: too many request bodies in memory\n");
  r.headers.push_back({"Retry-After", "1"});
  return r;
}

http_response internal_error_response() { return plain_text(500, "internal error\n"); }

}  // namespace transport::detail

MCPCORE_END_NAMESPACE
