// SPDX-License-Identifier: Apache-2.0
// Memory of idle MCP sessions and of idle open SSE GET streams on a Streamable HTTP server
// (bench/http/run.sh): opens N sessions (initialize + notifications/initialized), optionally one
// GET stream on each, and reports the server's resident set size before and after.
//
//   mcpcore_bench_http_idle_streams --port P --pid SERVER_PID --count N [--streams]
//                                   [--path /mcp] [--settle-ms 1000] [--hold-ms 0]
//
// Without --streams each session's connection is closed after `notifications/initialized` (the
// session stays alive on the server): the delta is the memory of N idle sessions. With --streams
// each session then opens its GET stream (`Accept: text/event-stream`) on the same keep-alive
// connection; the client reads the response head and never reads again, so every stream stays
// open and idle: the delta is N sessions plus N open streams. The server's RSS is read from
// /proc/<pid>/status (VmRSS) before the first session and --settle-ms after the last one.
//
// Output, one line (run.sh parses it):
//   IDLE mode=<sessions|streams> count=N rss_before_kb=N rss_after_kb=N bytes_each=N seconds=X
// Exit status: 0 when every request was answered as expected, 1 otherwise (the first failure is
// printed), 2 on bad usage. Loopback only: the host is always 127.0.0.1. Each socket read and
// write gives up after 10 s.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

/// Per-call socket timeout (send and receive).
constexpr int io_timeout_seconds = 10;
/// Largest response head or body the client accepts.
constexpr std::size_t max_message_bytes = std::size_t{1} << 20U;

struct options {
  int port = 0;
  long pid = 0;
  std::size_t count = 0;
  bool streams = false;
  std::string path = "/mcp";
  int settle_ms = 1000;
  int hold_ms = 0;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "idle_streams: %s\nusage: idle_streams --port P --pid SERVER_PID --count N [--streams] "
               "[--path /mcp] [--settle-ms 1000] [--hold-ms 0]\n",
               why);
  std::exit(2);
}

options parse_options(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage("an option lacks its value");
      return argv[++i];
    };
    if (a == "--port") {
      o.port = std::atoi(value());
    } else if (a == "--pid") {
      o.pid = std::atol(value());
    } else if (a == "--count") {
      o.count = static_cast<std::size_t>(std::strtoull(value(), nullptr, 10));
    } else if (a == "--streams") {
      o.streams = true;
    } else if (a == "--path") {
      o.path = value();
    } else if (a == "--settle-ms") {
      o.settle_ms = std::atoi(value());
    } else if (a == "--hold-ms") {
      o.hold_ms = std::atoi(value());
    } else {
      usage("unknown option");
    }
  }
  if (o.port <= 0 || o.port > 65535 || o.pid <= 0 || o.count == 0) usage("--port, --pid and --count are required");
  return o;
}

/// VmRSS of `pid` in KiB, or -1.
long rss_kb(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

struct response {
  int status = 0;
  std::string head;  // status line and header fields
  std::string body;  // de-chunked
  [[nodiscard]] std::optional<std::string> header(std::string_view name) const {
    std::size_t pos = head.find("\r\n");
    while (pos != std::string::npos && pos + 2 < head.size()) {
      const std::size_t start = pos + 2;
      const std::size_t end = head.find("\r\n", start);
      const std::string_view line(head.data() + start, (end == std::string::npos ? head.size() : end) - start);
      const std::size_t colon = line.find(':');
      if (colon != std::string_view::npos && iequals(line.substr(0, colon), name)) {
        std::string_view v = line.substr(colon + 1);
        while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
        while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
        return std::string(v);
      }
      pos = end;
    }
    return std::nullopt;
  }
};

/// One blocking client connection with a read buffer.
class connection {
 public:
  explicit connection(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    timeval tv{};
    tv.tv_sec = io_timeout_seconds;
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) close();
  }
  ~connection() { close(); }
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  connection(connection&& o) noexcept : fd_(o.fd_), buffer_(std::move(o.buffer_)) { o.fd_ = -1; }
  connection& operator=(connection&&) = delete;

  [[nodiscard]] bool open() const noexcept { return fd_ >= 0; }
  void close() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  bool send_all(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  /// Reads a response head; with `with_body`, also its body (Content-Length or chunked).
  std::optional<response> read_response(bool with_body) {
    response r;
    std::size_t end = 0;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (buffer_.size() > max_message_bytes || !fill()) return std::nullopt;
    }
    r.head = buffer_.substr(0, end);
    buffer_.erase(0, end + 4);
    if (r.head.rfind("HTTP/1.1 ", 0) != 0 || r.head.size() < 12) return std::nullopt;
    r.status = std::atoi(r.head.c_str() + 9);
    if (!with_body) return r;
    if (auto te = r.header("Transfer-Encoding"); te && iequals(*te, "chunked")) {
      for (;;) {
        std::size_t line_end = 0;
        while ((line_end = buffer_.find("\r\n")) == std::string::npos) {
          if (!fill()) return std::nullopt;
        }
        const std::size_t size = std::strtoull(buffer_.c_str(), nullptr, 16);
        buffer_.erase(0, line_end + 2);
        while (buffer_.size() < size + 2) {
          if (r.body.size() + size > max_message_bytes || !fill()) return std::nullopt;
        }
        r.body.append(buffer_, 0, size);
        buffer_.erase(0, size + 2);
        if (size == 0) return r;
      }
    }
    std::size_t length = 0;
    if (auto cl = r.header("Content-Length")) length = std::strtoull(cl->c_str(), nullptr, 10);
    if (length > max_message_bytes) return std::nullopt;
    while (buffer_.size() < length) {
      if (!fill()) return std::nullopt;
    }
    r.body = buffer_.substr(0, length);
    buffer_.erase(0, length);
    return r;
  }

 private:
  bool fill() {
    char chunk[16384];
    for (;;) {
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      buffer_.append(chunk, static_cast<std::size_t>(n));
      return true;
    }
  }

  int fd_ = -1;
  std::string buffer_;
};

std::string post(const options& o, std::string_view session_id, std::string_view body) {
  std::string req = "POST " + o.path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(o.port) +
                    "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n";
  if (!session_id.empty()) {
    req += "MCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: ";
    req += session_id;
    req += "\r\n";
  }
  req += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  req += body;
  return req;
}

constexpr std::string_view initialize_body =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
    R"("capabilities":{},"clientInfo":{"name":"mcpcore-idle-streams","version":"1"}}})";
constexpr std::string_view initialized_body = R"({"jsonrpc":"2.0","method":"notifications/initialized"})";

/// Opens one session (and its GET stream when asked); returns the connection to keep, or an
/// error message.
std::optional<std::string> open_one(const options& o, std::vector<connection>& keep) {
  connection c(o.port);
  if (!c.open()) return std::string("connect failed: ") + std::strerror(errno);
  if (!c.send_all(post(o, {}, initialize_body))) return std::string("initialize: send failed");
  auto init = c.read_response(true);
  if (!init) return std::string("initialize: no complete response");
  const auto sid = init->header("Mcp-Session-Id");
  if (init->status != 200 || !sid || init->body.find("\"result\"") == std::string::npos) {
    return "initialize: status " + std::to_string(init->status) + ", body " + init->body.substr(0, 300);
  }
  if (!c.send_all(post(o, *sid, initialized_body))) return std::string("initialized: send failed");
  auto ack = c.read_response(true);
  if (!ack || ack->status != 202) {
    return "notifications/initialized: status " + std::to_string(ack ? ack->status : 0) +
           (ack ? ", body " + ack->body.substr(0, 300) : std::string());
  }
  if (!o.streams) return std::nullopt;  // the connection closes; the session stays
  const std::string get = "GET " + o.path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(o.port) +
                          "\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: " +
                          *sid + "\r\n\r\n";
  if (!c.send_all(get)) return std::string("GET: send failed");
  auto head = c.read_response(false);
  if (!head) return std::string("GET: no response head");
  const auto type = head->header("Content-Type");
  if (head->status != 200 || !type || type->rfind("text/event-stream", 0) != 0) {
    return "GET: status " + std::to_string(head->status) + ", head " + head->head.substr(0, 300);
  }
  keep.push_back(std::move(c));
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse_options(argc, argv);
  std::vector<connection> keep;
  keep.reserve(o.streams ? o.count : 0);
  const long before = rss_kb(o.pid);
  if (before < 0) {
    std::fprintf(stderr, "idle_streams: cannot read /proc/%ld/status\n", o.pid);
    return 1;
  }
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < o.count; ++i) {
    if (auto err = open_one(o, keep)) {
      std::fprintf(stderr, "idle_streams: session %zu of %zu: %s\n", i + 1, o.count, err->c_str());
      return 1;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::this_thread::sleep_for(std::chrono::milliseconds(o.settle_ms));
  const long after = rss_kb(o.pid);
  const long long bytes_each =
      (static_cast<long long>(after) - static_cast<long long>(before)) * 1024 / static_cast<long long>(o.count);
  std::printf("IDLE mode=%s count=%zu rss_before_kb=%ld rss_after_kb=%ld bytes_each=%lld seconds=%.2f\n",
              o.streams ? "streams" : "sessions", o.count, before, after, bytes_each, seconds);
  std::fflush(stdout);
  if (o.hold_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.hold_ms));
  return 0;
}
