// SPDX-License-Identifier: Apache-2.0
// The soak test's loopback client: one raw TCP connection per exchange (POSIX sockets, every wait
// bounded by poll), HTTP/1.1 requests written by hand, responses read by hand (Content-Length and
// chunked), and an incremental SSE reader over a chunked body. No doctest assertion runs here:
// the client threads record what they saw and the test thread asserts.
#ifndef MCPCORE_TESTS_SOAK_SOAK_CLIENT_HPP
#define MCPCORE_TESTS_SOAK_SOAK_CLIENT_HPP

#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace soak {

using steady = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;

inline bool iequal(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x + 32);
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y + 32);
    if (x != y) return false;
  }
  return true;
}

inline int remaining_ms(steady::time_point deadline) noexcept {
  const auto left = std::chrono::duration_cast<ms>(deadline - steady::now()).count();
  return left <= 0 ? 0 : static_cast<int>(left);
}

/// One TCP connection to 127.0.0.1:port.
class connection {
 public:
  /// Connects; `rcvbuf` > 0 sets SO_RCVBUF before connecting (a small window: a slow reader).
  explicit connection(std::uint16_t port, int rcvbuf = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    if (rcvbuf > 0) (void)::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    int one = 1;
    (void)::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~connection() { close(); }
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  [[nodiscard]] bool ok() const noexcept { return fd_ >= 0; }
  [[nodiscard]] bool eof() const noexcept { return eof_; }
  std::string& buffer() noexcept { return buf_; }

  bool send(std::string_view data, steady::time_point deadline) {
    while (!data.empty()) {
      if (fd_ < 0) return false;
      pollfd p{fd_, POLLOUT, 0};
      const int r = ::poll(&p, 1, remaining_ms(deadline));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      const auto n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) return false;
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  /// Appends at least one byte to the buffer; false at EOF or on an error (`eof()` then true),
  /// or when `deadline` passed first.
  bool fill(steady::time_point deadline) {
    if (fd_ < 0 || eof_) return false;
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, remaining_ms(deadline));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      std::array<char, 16384> tmp{};
      const auto n = ::recv(fd_, tmp.data(), tmp.size(), 0);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        eof_ = true;
        return false;
      }
      buf_.append(tmp.data(), static_cast<std::size_t>(n));
      return true;
    }
  }

  /// Reads whatever is readable within a short poll (the bytes a stalled reader left unread).
  void drain_available(ms poll_for) {
    const auto until = steady::now() + poll_for;
    while (fill(until)) {
    }
  }

  void close() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  /// Closes with a reset (SO_LINGER 0): the server sees ECONNRESET instead of EOF.
  void reset() noexcept {
    if (fd_ < 0) return;
    linger l{1, 0};
    (void)::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close();
  }

 private:
  int fd_ = -1;
  std::string buf_;
  bool eof_ = false;
};

struct response_head {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  bool chunked = false;

  [[nodiscard]] std::optional<std::string> header(std::string_view name) const {
    for (const auto& [n, v] : headers) {
      if (iequal(n, name)) return v;
    }
    return std::nullopt;
  }
  [[nodiscard]] bool is_sse() const {
    const auto t = header("Content-Type");
    return t && t->starts_with("text/event-stream");
  }
};

/// The status line and header fields of the next response; nullopt on EOF or at the deadline.
inline std::optional<response_head> read_head(connection& c, steady::time_point deadline) {
  std::size_t pos = 0;
  while ((pos = c.buffer().find("\r\n\r\n")) == std::string::npos) {
    if (!c.fill(deadline)) return std::nullopt;
  }
  const std::string head = c.buffer().substr(0, pos);
  c.buffer().erase(0, pos + 4);
  response_head h;
  std::size_t line_end = head.find("\r\n");
  const std::string status_line = head.substr(0, line_end);
  if (status_line.size() < 12 || !status_line.starts_with("HTTP/1.")) return std::nullopt;
  h.status = std::atoi(status_line.substr(9, 3).c_str());
  while (line_end != std::string::npos) {
    const std::size_t start = line_end + 2;
    line_end = head.find("\r\n", start);
    const std::string line = head.substr(start, line_end == std::string::npos ? std::string::npos : line_end - start);
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    h.headers.emplace_back(line.substr(0, colon), std::move(value));
  }
  const auto te = h.header("Transfer-Encoding");
  h.chunked = te && iequal(*te, "chunked");
  return h;
}

/// The data of the next chunk; "" for the last chunk (trailers consumed); nullopt on EOF, at the
/// deadline, or for a malformed chunk.
/// Nothing is consumed until the whole chunk is buffered, so a timed-out read can be retried.
inline std::optional<std::string> read_chunk(connection& c, steady::time_point deadline) {
  std::string& b = c.buffer();
  for (;;) {
    const std::size_t pos = b.find("\r\n");
    if (pos != std::string::npos) {
      std::size_t size = 0;
      const auto r = std::from_chars(b.data(), b.data() + pos, size, 16);
      if (r.ec != std::errc{}) return std::nullopt;
      if (size == 0) {
        // The last chunk: "0\r\n", trailer lines, then an empty line.
        std::size_t at = pos + 2;
        bool complete = false;
        for (;;) {
          const std::size_t nl = b.find("\r\n", at);
          if (nl == std::string::npos) break;
          if (nl == at) {
            complete = true;
            at += 2;
            break;
          }
          at = nl + 2;
        }
        if (complete) {
          b.erase(0, at);
          return std::string{};
        }
      } else if (b.size() >= pos + 2 + size + 2) {
        if (b.compare(pos + 2 + size, 2, "\r\n") != 0) return std::nullopt;
        std::string data = b.substr(pos + 2, size);
        b.erase(0, pos + 2 + size + 2);
        return data;
      }
    }
    if (!c.fill(deadline)) return std::nullopt;
  }
}

/// The whole body of a response whose head was read.
inline std::optional<std::string> read_body(connection& c, const response_head& h, steady::time_point deadline) {
  if (h.status < 200 || h.status == 204 || h.status == 304) return std::string{};
  if (h.chunked) {
    std::string body;
    for (;;) {
      auto chunk = read_chunk(c, deadline);
      if (!chunk) return std::nullopt;
      if (chunk->empty()) return body;
      body += *chunk;
    }
  }
  std::size_t n = 0;
  if (const auto cl = h.header("Content-Length")) {
    n = std::strtoul(cl->c_str(), nullptr, 10);
  }
  while (c.buffer().size() < n) {
    if (!c.fill(deadline)) return std::nullopt;
  }
  std::string body = c.buffer().substr(0, n);
  c.buffer().erase(0, n);
  return body;
}

/// One SSE event as a client dispatches it (the fields mcpcore writes).
struct sse_event {
  std::optional<std::uint64_t> id;
  std::string type;
  std::string data;
  bool has_data = false;
  std::optional<std::uint64_t> retry;
};

/// Reads SSE events out of a chunked body, incrementally.
class sse_reader {
 public:
  explicit sse_reader(connection& c) noexcept : c_(c) {}

  enum class status : std::uint8_t {
    event,      ///< `out` holds the next event
    end,        ///< the body ended (the terminating chunk), every event was returned
    broken,     ///< EOF or reset before the terminating chunk, or a malformed body
    timed_out,  ///< nothing complete before the deadline
    malformed,  ///< an event field that does not parse (recorded by the caller)
  };

  status next(sse_event& out, steady::time_point deadline) {
    for (;;) {
      if (const auto st = take_one(out)) return *st;
      if (body_done_) {
        return text_.find_first_not_of('\n') == std::string::npos ? status::end : status::broken;
      }
      auto chunk = read_chunk(c_, deadline);
      if (!chunk) return c_.eof() ? status::broken : (steady::now() >= deadline ? status::timed_out : status::broken);
      if (chunk->empty()) {
        body_done_ = true;
        continue;
      }
      text_ += *chunk;
    }
  }

 private:
  // Takes the first complete event (terminated by a blank line) out of text_.
  std::optional<status> take_one(sse_event& out) {
    for (;;) {
      const std::size_t end = text_.find("\n\n");
      if (end == std::string::npos) return std::nullopt;
      const std::string block = text_.substr(0, end + 1);
      text_.erase(0, end + 2);
      out = sse_event{};
      bool any = false;
      std::size_t pos = 0;
      while (pos < block.size()) {
        const std::size_t nl = block.find('\n', pos);
        const std::string_view line{block.data() + pos, nl - pos};
        pos = nl + 1;
        if (line.empty() || line.front() == ':') continue;
        any = true;
        const auto colon = line.find(':');
        const std::string_view field = line.substr(0, colon);
        std::string_view value = colon == std::string_view::npos ? std::string_view{} : line.substr(colon + 1);
        if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
        const auto number = [&](std::optional<std::uint64_t>& into) {
          std::uint64_t n = 0;
          const auto r = std::from_chars(value.data(), value.data() + value.size(), n);
          if (r.ec != std::errc{} || r.ptr != value.data() + value.size()) return false;
          into = n;
          return true;
        };
        if (field == "id") {
          if (!number(out.id)) return status::malformed;
        } else if (field == "retry") {
          if (!number(out.retry)) return status::malformed;
        } else if (field == "event") {
          out.type = std::string{value};
        } else if (field == "data") {
          if (out.has_data) out.data.push_back('\n');
          out.data.append(value);
          out.has_data = true;
        }
      }
      if (any) return status::event;
    }
  }

  connection& c_;
  std::string text_;
  bool body_done_ = false;
};

// ---- requests ---------------------------------------------------------------------------------

inline std::string host_line(std::uint16_t port) { return "Host: 127.0.0.1:" + std::to_string(port) + "\r\n"; }

/// A POST of `body` to /mcp as `token` (Bearer), on session `sid` when not empty.
inline std::string post_request(std::uint16_t port, std::string_view token, std::string_view body,
                                std::string_view sid, std::string_view accept) {
  std::string s = "POST /mcp HTTP/1.1\r\n" + host_line(port);
  s += "Authorization: Bearer ";
  s += token;
  s += "\r\nContent-Type: application/json\r\nAccept: ";
  s += accept;
  s += "\r\nMCP-Protocol-Version: 2025-11-25\r\n";
  if (!sid.empty()) {
    s += "Mcp-Session-Id: ";
    s += sid;
    s += "\r\n";
  }
  s += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  s += body;
  return s;
}

/// A GET of /mcp (the session's stream, or the stream `last_event_id` names when non-zero).
inline std::string get_request(std::uint16_t port, std::string_view token, std::string_view sid,
                               std::uint64_t last_event_id) {
  std::string s = "GET /mcp HTTP/1.1\r\n" + host_line(port);
  s += "Authorization: Bearer ";
  s += token;
  s += "\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: ";
  s += sid;
  s += "\r\n";
  if (last_event_id != 0) s += "Last-Event-ID: " + std::to_string(last_event_id) + "\r\n";
  s += "\r\n";
  return s;
}

inline std::string delete_request(std::uint16_t port, std::string_view token, std::string_view sid) {
  std::string s = "DELETE /mcp HTTP/1.1\r\n" + host_line(port);
  s += "Authorization: Bearer ";
  s += token;
  s += "\r\nMCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: ";
  s += sid;
  s += "\r\nContent-Length: 0\r\n\r\n";
  return s;
}

/// A plain GET of an operational route (`/metrics`), closing the connection after the answer.
inline std::string ops_request(std::uint16_t port, std::string_view path) {
  std::string s = "GET ";
  s += path;
  s += " HTTP/1.1\r\n" + host_line(port) + "Connection: close\r\n\r\n";
  return s;
}

/// A POST to the approval endpoint (`/api/v1/approvals/<id>/approve`) as `token`.
inline std::string approve_request(std::uint16_t port, std::string_view token, std::string_view id) {
  std::string s = "POST /api/v1/approvals/";
  s += id;
  s += "/approve HTTP/1.1\r\n" + host_line(port);
  s += "Authorization: Bearer ";
  s += token;
  s += "\r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n";
  return s;
}

}  // namespace soak

#endif  // MCPCORE_TESTS_SOAK_SOAK_CLIENT_HPP
