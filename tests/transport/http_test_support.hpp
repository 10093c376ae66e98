// SPDX-License-Identifier: Apache-2.0
// Test helpers for the HTTP transport: a raw loopback HTTP/1.1 client (plain sockets and TLS over
// asio::ssl), a response reader (Content-Length, chunked, until close), and a self-signed
// certificate generator using OpenSSL's APIs.
#ifndef MCPCORE_TESTS_TRANSPORT_HTTP_TEST_SUPPORT_HPP
#define MCPCORE_TESTS_TRANSPORT_HTTP_TEST_SUPPORT_HPP

#include <asio.hpp>
#include <asio/ssl.hpp>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace test_http {

using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;

/// The default bound of any single client wait in these tests.
inline constexpr ms default_wait{5000};

/// Polls `pred` until it holds or `limit` passes; returns its last value.
template <class Pred>
bool eventually(Pred pred, ms limit = default_wait) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= end) {
      return pred();
    }
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

inline bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x + 32);
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y + 32);
    if (x != y) return false;
  }
  return true;
}

/// One response as the client read it.
struct message {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool chunked = false;

  [[nodiscard]] std::optional<std::string> header(std::string_view name) const {
    for (const auto& [n, v] : headers) {
      if (iequal(n, name)) return v;
    }
    return std::nullopt;
  }
  [[nodiscard]] std::size_t count(std::string_view name) const {
    std::size_t c = 0;
    for (const auto& [n, v] : headers) {
      if (iequal(n, name)) ++c;
    }
    return c;
  }
};

/// Incremental reader of HTTP/1.1 responses over some byte source.
class reader {
 public:
  virtual ~reader() = default;
  reader() = default;
  reader(const reader&) = delete;
  reader& operator=(const reader&) = delete;

  /// Sends all of `data`; false on failure.
  virtual bool send(std::string_view data) = 0;

  /// The status line and headers of the next response (interim 1xx included).
  std::optional<message> read_head(ms limit = default_wait) {
    const auto end = std::chrono::steady_clock::now() + limit;
    std::size_t pos;
    while ((pos = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill(end)) return std::nullopt;
    }
    const std::string head = buf_.substr(0, pos);
    buf_.erase(0, pos + 4);
    message m;
    std::size_t line_end = head.find("\r\n");
    const std::string status_line = head.substr(0, line_end);
    if (status_line.size() < 12 || status_line.rfind("HTTP/1.", 0) != 0) return std::nullopt;
    m.status = std::atoi(status_line.substr(9, 3).c_str());
    while (line_end != std::string::npos) {
      const std::size_t start = line_end + 2;
      line_end = head.find("\r\n", start);
      const std::string line = head.substr(start, line_end == std::string::npos ? std::string::npos : line_end - start);
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      m.headers.emplace_back(line.substr(0, colon), value);
    }
    const auto te = m.header("Transfer-Encoding");
    m.chunked = te && iequal(*te, "chunked");
    return m;
  }

  /// The data of the next chunk of a chunked body; "" for the last chunk (trailers consumed).
  std::optional<std::string> read_chunk(ms limit = default_wait) {
    const auto end = std::chrono::steady_clock::now() + limit;
    std::size_t pos;
    while ((pos = buf_.find("\r\n")) == std::string::npos) {
      if (!fill(end)) return std::nullopt;
    }
    const std::size_t size = std::strtoul(buf_.substr(0, pos).c_str(), nullptr, 16);
    buf_.erase(0, pos + 2);
    if (size == 0) {
      while ((pos = buf_.find("\r\n")) == std::string::npos || pos != 0) {
        if (pos != std::string::npos) {  // a trailer line
          buf_.erase(0, pos + 2);
          continue;
        }
        if (!fill(end)) return std::nullopt;
      }
      buf_.erase(0, 2);
      return std::string{};
    }
    while (buf_.size() < size + 2) {
      if (!fill(end)) return std::nullopt;
    }
    std::string data = buf_.substr(0, size);
    if (buf_.compare(size, 2, "\r\n") != 0) return std::nullopt;
    buf_.erase(0, size + 2);
    return data;
  }

  /// A whole response (an interim 1xx is returned alone).
  std::optional<message> read_response(ms limit = default_wait, bool head_request = false) {
    const auto end = std::chrono::steady_clock::now() + limit;
    auto m = read_head(limit);
    if (!m) return std::nullopt;
    if (m->status < 200 || m->status == 204 || m->status == 304 || head_request) return m;
    if (m->chunked) {
      for (;;) {
        auto c = read_chunk(remaining(end));
        if (!c) return std::nullopt;
        if (c->empty()) break;
        m->body += *c;
      }
      return m;
    }
    if (const auto cl = m->header("Content-Length")) {
      const std::size_t n = std::strtoul(cl->c_str(), nullptr, 10);
      while (buf_.size() < n) {
        if (!fill(end)) return std::nullopt;
      }
      m->body = buf_.substr(0, n);
      buf_.erase(0, n);
      return m;
    }
    while (fill(end)) {
    }
    m->body = std::move(buf_);
    buf_.clear();
    return m;
  }

  /// Reads and discards until the peer closes (true) or `limit` passes (false).
  bool wait_closed(ms limit = default_wait) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!closed_) {
      buf_.clear();
      if (!fill(end) && !closed_) return false;
    }
    return true;
  }

  [[nodiscard]] bool closed() const { return closed_; }
  [[nodiscard]] const std::string& buffered() const { return buf_; }

 protected:
  // Appends at least one byte to buf_; false on EOF / error (closed_ set) or at `end`.
  virtual bool fill(std::chrono::steady_clock::time_point end) = 0;
  static ms remaining(std::chrono::steady_clock::time_point end) {
    const auto left = std::chrono::duration_cast<ms>(end - std::chrono::steady_clock::now());
    return left.count() > 0 ? left : ms{0};
  }
  std::string buf_;
  bool closed_ = false;
};

/// A plain TCP client of 127.0.0.1:port (POSIX sockets, poll-bounded waits).
class raw_client : public reader {
 public:
  /// Connects; `rcvbuf` > 0 sets SO_RCVBUF before connecting (a small window for slow-reader tests).
  explicit raw_client(std::uint16_t port, int rcvbuf = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    if (rcvbuf > 0) {
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    }
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~raw_client() override { close(); }

  [[nodiscard]] bool connected() const { return fd_ >= 0; }

  bool send(std::string_view data) override {
    while (!data.empty()) {
      if (fd_ < 0) return false;
      pollfd p{fd_, POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(default_wait.count())) <= 0) return false;
      const auto n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) {
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        return false;
      }
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  void shutdown_write() {
    if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
  }
  /// Closes with a reset (SO_LINGER 0): the server sees ECONNRESET.
  void reset() {
    if (fd_ < 0) return;
    linger l{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close();
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 protected:
  bool fill(std::chrono::steady_clock::time_point end) override {
    if (fd_ < 0 || closed_) return false;
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, static_cast<int>(remaining(end).count()));
      if (r == 0) return false;
      if (r < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      std::array<char, 16384> tmp{};
      const auto n = ::recv(fd_, tmp.data(), tmp.size(), 0);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        closed_ = true;
        return false;
      }
      buf_.append(tmp.data(), static_cast<std::size_t>(n));
      return true;
    }
  }

 private:
  int fd_ = -1;
};

/// A TLS client (asio::ssl) verifying the server's certificate against `ca_file` and the name
/// `localhost`. Every wait is bounded with io_context::run_for.
class tls_client : public reader {
 public:
  tls_client(std::uint16_t port, const std::string& ca_file)
      : ctx_(asio::ssl::context::tls_client), stream_(io_, ctx_) {
    std::error_code ec;
    ctx_.load_verify_file(ca_file, ec);
    if (ec) return;
    stream_.set_verify_mode(asio::ssl::verify_peer);
    stream_.set_verify_callback(asio::ssl::host_name_verification("localhost"));
    static char host[] = "localhost";  // SNI (SSL_set_tlsext_host_name is a macro with a C cast)
    SSL_ctrl(stream_.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, host);
    bool ok = false;
    stream_.lowest_layer().async_connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port),
                                         [&](const std::error_code& e) { ok = !e; });
    run();
    if (!ok) return;
    ok = false;
    stream_.async_handshake(asio::ssl::stream_base::client, [&](const std::error_code& e) {
      ok = !e;
      handshake_error_ = e;
    });
    run();
    connected_ = ok;
  }

  [[nodiscard]] bool connected() const { return connected_; }
  [[nodiscard]] std::error_code handshake_error() const { return handshake_error_; }
  /// The negotiated protocol ("TLSv1.3", ...).
  [[nodiscard]] std::string protocol() { return SSL_get_version(stream_.native_handle()); }

  bool send(std::string_view data) override {
    bool ok = false;
    asio::async_write(stream_, asio::buffer(data.data(), data.size()),
                      [&](const std::error_code& e, std::size_t) { ok = !e; });
    run();
    return ok;
  }

 protected:
  bool fill(std::chrono::steady_clock::time_point end) override {
    if (closed_) return false;
    std::array<char, 16384> tmp{};
    bool done = false;
    std::size_t got = 0;
    std::error_code err;
    stream_.async_read_some(asio::buffer(tmp), [&](const std::error_code& e, std::size_t n) {
      done = true;
      got = n;
      err = e;
    });
    io_.restart();
    io_.run_for(remaining(end));
    if (!done) {
      stream_.lowest_layer().cancel();
      io_.restart();
      io_.run_for(default_wait);
      return false;
    }
    if (err) {
      closed_ = true;
      return false;
    }
    buf_.append(tmp.data(), got);
    return true;
  }

 private:
  void run() {
    io_.restart();
    io_.run_for(default_wait);
  }
  asio::io_context io_;
  asio::ssl::context ctx_;
  asio::ssl::stream<asio::ip::tcp::socket> stream_;
  bool connected_ = false;
  std::error_code handshake_error_;
};

/// A self-signed certificate for CN=localhost (EC P-256 key, SHA-256, subjectAltName
/// DNS:localhost and IP:127.0.0.1, valid one day), written as PEM into `dir`.
struct self_signed {
  std::string cert_file;
  std::string key_file;
};

inline std::optional<self_signed> make_self_signed(const std::filesystem::path& dir) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  if (key == nullptr) return std::nullopt;
  X509* x = X509_new();
  bool ok = x != nullptr;
  if (ok) {
    ok = X509_set_version(x, 2) == 1 && ASN1_INTEGER_set(X509_get_serialNumber(x), 1) == 1 &&
         X509_gmtime_adj(X509_getm_notBefore(x), -60) != nullptr &&
         X509_gmtime_adj(X509_getm_notAfter(x), 24L * 3600L) != nullptr && X509_set_pubkey(x, key) == 1;
  }
  if (ok) {
    X509_NAME* name = X509_get_subject_name(x);
    ok = X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("localhost"),
                                    -1, -1, 0) == 1 &&
         X509_set_issuer_name(x, name) == 1;
  }
  if (ok) {
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, x, x, nullptr, nullptr, 0);
    X509_EXTENSION* san = X509V3_EXT_conf_nid(nullptr, &v3, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1");
    ok = san != nullptr && X509_add_ext(x, san, -1) == 1;
    X509_EXTENSION_free(san);
  }
  if (ok) {
    ok = X509_sign(x, key, EVP_sha256()) > 0;
  }
  self_signed out{(dir / "cert.pem").string(), (dir / "key.pem").string()};
  if (ok) {
    FILE* f = std::fopen(out.cert_file.c_str(), "w");
    ok = f != nullptr && PEM_write_X509(f, x) == 1;
    if (f != nullptr) std::fclose(f);
  }
  if (ok) {
    FILE* f = std::fopen(out.key_file.c_str(), "w");
    ok = f != nullptr && PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
    if (f != nullptr) std::fclose(f);
  }
  X509_free(x);
  EVP_PKEY_free(key);
  if (!ok) return std::nullopt;
  return out;
}

}  // namespace test_http

#endif  // MCPCORE_TESTS_TRANSPORT_HTTP_TEST_SUPPORT_HPP
