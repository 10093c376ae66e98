// SPDX-License-Identifier: Apache-2.0
// The Asio HTTP/1.1 server: accept loop, connections (parse, dispatch in order, write, stream),
// the bounded handler pool, TLS and the graceful stop.
#include <mcpcore/transport/asio_http_server.hpp>

#include "http_head_parser.hpp"

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/session/session_metrics.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/wire/http.hpp>

#include <asio/any_io_executor.hpp>
#include <asio/buffer.hpp>
#include <asio/error.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/address.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>  // NOLINT(misc-include-cleaner): asio::post, see post_to
#include <asio/socket_base.hpp>
#include <asio/ssl/context.hpp>
#include <asio/ssl/error.hpp>
#include <asio/ssl/stream.hpp>
#include <asio/ssl/stream_base.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <openssl/ssl.h>
#include <openssl/prov_ssl.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <deque>
#include <expected>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE
namespace transport {

namespace {

using tcp = asio::ip::tcp;
using steady = std::chrono::steady_clock;

/// Bytes asked of the socket per read.
constexpr std::size_t read_chunk_bytes = 16384;
/// Delay before accepting again after an accept error (descriptor exhaustion).
constexpr std::chrono::milliseconds accept_retry_delay{50};
/// Shortest wait between two pulls of a stream whose last pull produced nothing (a stream that
/// keeps answering wait_time 0 must not spin a thread).
constexpr std::chrono::milliseconds min_stream_wait{1};
/// Added to the stop bound (drain + write timeout + linger) before every socket is closed hard.
constexpr std::chrono::milliseconds stop_margin{1000};

// asio::post is declared in <asio/post.hpp> and defined in a header it includes.
template <class Executor, class F>
void post_to(const Executor& ex, F&& f) {
  asio::post(ex, std::forward<F>(f));  // NOLINT(misc-include-cleaner)
}

// ---------------------------------------------------------------------------------------------
// Small HTTP helpers

bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto x = static_cast<unsigned char>(a[i]);
    auto y = static_cast<unsigned char>(b[i]);
    if (x >= 'A' && x <= 'Z') {
      x = static_cast<unsigned char>(x + 32U);
    }
    if (y >= 'A' && y <= 'Z') {
      y = static_cast<unsigned char>(y + 32U);
    }
    if (x != y) {
      return false;
    }
  }
  return true;
}

// Whether the comma-separated list `value` contains `token` (ASCII case-insensitive).
bool list_contains(std::string_view value, std::string_view token) noexcept {
  while (!value.empty()) {
    const auto comma = value.find(',');
    auto item = value.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) {
      item.remove_prefix(1);
    }
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) {
      item.remove_suffix(1);
    }
    if (iequals(item, token)) {
      return true;
    }
    if (comma == std::string_view::npos) {
      break;
    }
    value.remove_prefix(comma + 1);
  }
  return false;
}

bool safe_field(std::string_view s) noexcept {
  return s.find_first_of(std::string_view{"\r\n\0", 3}) == std::string_view::npos;
}

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
  out.push_back(static_cast<char>('0' + v / 10));
  out.push_back(static_cast<char>('0' + v % 10));
}

// IMF-fixdate (RFC 9110 §5.6.7), locale-independent.
void append_http_date(std::string& out) {
  static constexpr std::array<std::string_view, 7> days{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr std::array<std::string_view, 12> months{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
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

void append_header(std::string& out, std::string_view name, std::string_view value) {
  out += name;
  out += ": ";
  out += value;
  out += "\r\n";
}

// Appends `bytes` as chunks of at most max_chunk_bytes.
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

enum class framing { content_length, chunked, until_close };

// Writes the status line and headers of `r`. The server owns the framing headers
// (Content-Length, Transfer-Encoding) and Connection; it adds Date, nosniff, and the stream
// headers unless the reply has them. Fields holding CR, LF or NUL are dropped.
void append_head(std::string& out, const http_response& r, framing f, std::size_t body_size, bool keep_alive) {
  const int status = (r.status >= 100 && r.status <= 999) ? r.status : 500;
  out += "HTTP/1.1 ";
  append_number(out, static_cast<std::size_t>(status));
  out += ' ';
  out += reason_phrase(status);
  out += "\r\n";
  bool has_date = false;
  bool has_nosniff = false;
  bool has_cache = false;
  bool has_accel = false;
  for (const auto& h : r.headers) {
    if (h.name.empty() || !safe_field(h.name) || !safe_field(h.value) || h.name.find(':') != std::string::npos) {
      continue;
    }
    if (iequals(h.name, "Content-Length") || iequals(h.name, "Transfer-Encoding") || iequals(h.name, "Connection")) {
      continue;
    }
    has_date = has_date || iequals(h.name, "Date");
    has_nosniff = has_nosniff || iequals(h.name, "X-Content-Type-Options");
    has_cache = has_cache || iequals(h.name, "Cache-Control");
    has_accel = has_accel || iequals(h.name, "X-Accel-Buffering");
    append_header(out, h.name, h.value);
  }
  if (!has_date) {
    out += "Date: ";
    append_http_date(out);
    out += "\r\n";
  }
  if (!has_nosniff) {
    append_header(out, "X-Content-Type-Options", "nosniff");
  }
  const bool no_body = (status >= 100 && status < 200) || status == 204 || status == 304;
  switch (f) {
    case framing::content_length:
      if (!no_body) {
        out += "Content-Length: ";
        append_number(out, body_size);
        out += "\r\n";
      }
      break;
    case framing::chunked:
    case framing::until_close:
      if (!has_cache) {
        append_header(out, "Cache-Control", "no-cache");
      }
      if (!has_accel) {
        append_header(out, "X-Accel-Buffering", "no");
      }
      if (f == framing::chunked) {
        append_header(out, "Transfer-Encoding", "chunked");
      }
      break;
  }
  append_header(out, "Connection", keep_alive ? "keep-alive" : "close");
  out += "\r\n";
}

std::string format_endpoint(const tcp::endpoint& ep) {
  std::string s;
  const auto addr = ep.address();
  if (addr.is_v6()) {
    s += '[';
    s += addr.to_string();
    s += ']';
  } else {
    s += addr.to_string();
  }
  s += ':';
  append_number(s, ep.port());
  return s;
}

// Asio's system category does not map to std::errc; report errno values in std::system_category.
std::error_code normalize(std::error_code ec) noexcept {
  if (ec && ec.category() == asio::error::get_system_category()) {
    return {ec.value(), std::system_category()};
  }
  return ec;
}

// TLS 1.2 and later, the certificate chain and the key (PEM).
std::error_code configure_tls(asio::ssl::context& ctx, const tls_options& tls) {
  std::error_code ec;
  ctx.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                      asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1 |
                      asio::ssl::context::single_dh_use,
                  ec);
  if (!ec && SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION) != 1) {
    ec = std::make_error_code(std::errc::protocol_not_supported);
  }
  if (!ec) {
    ctx.use_certificate_chain_file(tls.cert_chain_file, ec);
  }
  if (!ec) {
    ctx.use_private_key_file(tls.private_key_file, asio::ssl::context::pem, ec);
  }
  return ec;
}

bool body_forbidden(int status) noexcept { return (status >= 100 && status < 200) || status == 204 || status == 304; }

}  // namespace

namespace detail {

// ---------------------------------------------------------------------------------------------
// The bounded handler executor

/// A fixed set of threads taking tasks from a bounded queue. Refuses (returns false) when the
/// queue holds `cap` tasks or after stop. stop() runs every queued task, then joins.
class handler_pool {
 public:
  explicit handler_pool(std::size_t cap) : cap_(std::max<std::size_t>(cap, 1)) {}
  handler_pool(const handler_pool&) = delete;
  handler_pool& operator=(const handler_pool&) = delete;
  ~handler_pool() { stop(); }

  void start(std::size_t threads) {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < threads; ++i) {
      threads_.emplace_back([this] { run(); });
    }
  }

  bool submit(std::function<void()> task) {
    if (!task) {
      return false;
    }
    {
      std::lock_guard lock(mu_);
      if (stopping_ || queue_.size() >= cap_) {
        return false;
      }
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
    return true;
  }

  // Refuses new tasks, lets the threads finish every queued one, joins them.
  void stop() noexcept {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      threads.swap(threads_);
    }
    cv_.notify_all();
    for (auto& t : threads) {
      if (t.joinable() && t.get_id() != std::this_thread::get_id()) {
        t.join();
      } else if (t.joinable()) {
        t.detach();
      }
    }
  }

  bool owns_current_thread() const {
    std::lock_guard lock(mu_);
    return std::any_of(threads_.begin(), threads_.end(),
                       [](const std::thread& t) { return t.get_id() == std::this_thread::get_id(); });
  }

 private:
  void run() noexcept {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) {
          return;
        }
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        task();
      } catch (...) {  // NOLINT(bugprone-empty-catch): a task's exception must not end the thread
      }
    }
  }

  const std::size_t cap_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
};

/// Guards posting into the io_context from foreign threads (completions, wakers): once closed
/// (the I/O threads are joined), nothing is posted any more and no connection is touched.
class post_gate {
 public:
  template <class F>
  void with(F&& f) {
    std::shared_lock lock(mu_);
    if (open_) {
      std::forward<F>(f)();
    }
  }
  void close() noexcept {
    std::unique_lock lock(mu_);
    open_ = false;
  }

 private:
  std::shared_mutex mu_;
  bool open_ = true;
};

class connection;

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// The server state

struct asio_http_server::impl {
  enum class run_state : int { idle, running, stopping, stopped };

  impl(handler h, http_endpoint* ep, asio_http_server_options o)
      : options_(std::move(o)),
        handler_(std::move(h)),
        endpoint_(ep),
        pool_(std::make_shared<detail::handler_pool>(options_.handler_queue_cap)),
        gate_(std::make_shared<detail::post_gate>()),
        io_(std::make_unique<asio::io_context>(static_cast<int>(std::max<std::size_t>(options_.io_threads, 1)))),
        control_(asio::make_strand(*io_)),
        acceptor_(control_),
        tick_timer_(control_),
        drain_timer_(control_),
        retry_timer_(control_) {
    limits_.max_target_bytes = options_.limits.max_target_bytes;
    limits_.max_header_bytes = options_.limits.max_header_bytes;
    limits_.max_header_count = options_.limits.max_header_count;
    limits_.max_body_bytes = options_.limits.max_body_bytes;
  }

  // Members go in reverse order of declaration: the timers, the acceptor and the strand before
  // the io_context (whose destruction destroys the handlers still queued and the connections
  // they hold), the TLS context after it.
  ~impl() {
    gate_->close();
    work_.reset();
    std::lock_guard lock(mu_);
    conns_.clear();
  }
  impl(const impl&) = delete;
  impl& operator=(const impl&) = delete;

  http_executor make_executor() const {
    return [pool = pool_](std::function<void()> task) { return pool->submit(std::move(task)); };
  }

  result<void> start();
  void request_stop() noexcept;
  void stop() noexcept;
  bool on_server_thread() const;

  void do_accept();
  void on_accept(const std::error_code& ec, tcp::socket socket);
  void arm_tick();
  void begin_shutdown_on_io();
  void remove(detail::connection* c) noexcept;
  std::vector<std::shared_ptr<detail::connection>> snapshot();

  asio_http_server_options options_;
  handler handler_;
  http_endpoint* endpoint_;
  detail::head_limits limits_{};
  std::shared_ptr<detail::handler_pool> pool_;
  std::shared_ptr<detail::post_gate> gate_;
  std::optional<asio::ssl::context> ssl_;
  std::unique_ptr<asio::io_context> io_;
  // Serialises the acceptor, the tick and the stop sequence.
  asio::strand<asio::io_context::executor_type> control_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  tcp::acceptor acceptor_;
  asio::steady_timer tick_timer_;
  asio::steady_timer drain_timer_;
  asio::steady_timer retry_timer_;
  std::vector<std::thread> io_threads_;
  std::vector<std::thread::id> io_thread_ids_;  // under mu_

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<detail::connection*, std::shared_ptr<detail::connection>> conns_;  // under mu_
  bool stop_requested_ = false;                                                         // under mu_
  std::atomic<std::size_t> count_{0};
  std::atomic<std::uint16_t> port_{0};
  std::atomic<run_state> state_{run_state::idle};
  std::mutex stop_mu_;  // serialises start and stop
};

namespace detail {

// ---------------------------------------------------------------------------------------------
// One connection. Every member function below except the public entry points runs on the
// connection's strand (its socket's executor).

class connection : public std::enable_shared_from_this<connection> {
 public:
  connection(asio_http_server::impl& srv, tcp::socket socket, bool over_limit)
      : srv_(srv),
        opts_(srv.options_),
        socket_(std::move(socket)),
        ex_(socket_.get_executor()),
        read_timer_(ex_),
        write_timer_(ex_),
        stream_timer_(ex_),
        linger_timer_(ex_),
        parser_(srv.limits_),
        over_limit_(over_limit) {
    std::error_code ec;
    const auto r = socket_.remote_endpoint(ec);
    if (!ec) {
      remote_ = format_endpoint(r);
    }
    const auto l = socket_.local_endpoint(ec);
    if (!ec) {
      local_ = format_endpoint(l);
    }
    if (srv.ssl_) {
      tls_.emplace(socket_, *srv.ssl_);
    }
  }
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  ~connection() = default;

  // --- entry points (any thread) ---

  void start() {
    post_to(ex_, [self = shared_from_this()] { self->on_start(); });
  }
  void server_stopping() {
    post_to(ex_, [self = shared_from_this()] { self->on_server_stopping(); });
  }
  void drain_expired() {
    post_to(ex_, [self = shared_from_this()] { self->on_drain_expired(); });
  }
  void close_async() {
    post_to(ex_, [self = shared_from_this()] { self->close(); });
  }
  // Closes from the thread that joined every I/O thread (nothing else runs).
  void close_direct() noexcept { close_io(); }

  // The stream's waker: one pending pull at most. Called under the gate.
  void wake() {
    if (!wake_posted_.exchange(true)) {
      post_to(ex_, [self = shared_from_this()] {
        self->wake_posted_.store(false);
        self->pump_stream();
      });
    }
  }
  // A reply from the completion. Called under the gate.
  void deliver(http_reply reply, std::uint64_t turn) {
    post_to(ex_, [self = shared_from_this(), reply = std::move(reply), turn]() mutable {
      self->on_reply(std::move(reply), turn);
    });
  }

 private:
  struct queued {
    parsed_request request;
    int error_status = 0;  // non-zero: answer this parse failure and close
    std::string_view error_reason;
  };
  enum class deadline_kind { none, fresh, idle, head, body };

  // --- lifecycle ---

  void on_start() {
    if (closed_) {
      return;
    }
    if (!tls_) {
      std::error_code ec;
      socket_.non_blocking(true, ec);  // reads are synchronous once the socket is readable
    }
    if (over_limit_) {
      if (tls_) {  // no handshake spent on a connection that is refused anyway
        close();
        return;
      }
      handshake_done_ = true;
      busy_ = true;
      close_after_ = true;
      http_response r;
      r.status = 503;
      r.headers.push_back({"Content-Type", "text/plain; charset=utf-8"});
      r.headers.push_back({"Retry-After", "1"});
      r.body = "too many connections\n";
      append_head(out_, r, framing::content_length, r.body.size(), false);
      out_ += r.body;
      response_complete_ = true;
      flush();
      return;
    }
    arm_deadline(deadline_kind::fresh, opts_.header_read_timeout);
    if (tls_) {
      tls_->async_handshake(asio::ssl::stream_base::server, [self = shared_from_this()](const std::error_code& ec) {
        if (self->closed_) {
          return;
        }
        if (ec) {
          self->close();
          return;
        }
        self->handshake_done_ = true;
        self->maybe_read();
      });
      return;
    }
    handshake_done_ = true;
    maybe_read();
  }

  void on_server_stopping() {
    stopping_ = true;
    if (closed_) {
      return;
    }
    if (stream_) {
      stream_->close(close_reason::session_terminated);
      pump_stream();
      return;
    }
    if (!busy_ && queue_.empty() && !lingering_) {
      close();
    }
  }

  void on_drain_expired() {
    if (closed_) {
      return;
    }
    if (writing_) {
      doomed_ = true;  // the write finishes or its write_timeout closes the connection
      return;
    }
    close();
  }

  // Full close: the stream sees write_failed and is destroyed, the socket closes, the server
  // forgets the connection.
  void close() {
    if (closed_) {
      return;
    }
    auto self = shared_from_this();
    close_io();
    srv_.remove(this);
  }

  void close_io() noexcept {
    if (closed_) {
      return;
    }
    closed_ = true;
    if (stream_) {
      stream_->write_failed();
      stream_.reset();
    }
    ++deadline_gen_;
    ++write_gen_;
    ++stream_gen_;
    try {
      read_timer_.cancel();
      write_timer_.cancel();
      stream_timer_.cancel();
      linger_timer_.cancel();
    } catch (...) {  // NOLINT(bugprone-empty-catch): the generations above already void the waits
    }
    std::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
    queue_.clear();
    in_.clear();
  }

  // Stop sending, discard what still arrives for up to close_linger, then close.
  void begin_linger() {
    if (closed_ || lingering_) {
      return;
    }
    lingering_ = true;
    clear_deadline();
    std::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    if (ec || peer_eof_) {
      close();
      return;
    }
    linger_timer_.expires_after(opts_.close_linger);
    linger_timer_.async_wait([self = shared_from_this()](const std::error_code& e) {
      if (!e) {
        self->close();
      }
    });
    read_stopped_ = false;
    in_.clear();
    maybe_read();
  }

  // --- read side ---

  void arm_deadline(deadline_kind kind, std::chrono::milliseconds after) {
    deadline_kind_ = kind;
    const auto gen = ++deadline_gen_;
    read_timer_.expires_after(after);
    read_timer_.async_wait([self = shared_from_this(), gen](const std::error_code& ec) {
      if (ec || gen != self->deadline_gen_ || self->closed_) {
        return;
      }
      self->close();  // slowloris, slow body, idle keep-alive: closed without an answer
    });
  }

  void clear_deadline() {
    if (deadline_kind_ == deadline_kind::none) {
      return;
    }
    deadline_kind_ = deadline_kind::none;
    ++deadline_gen_;
    read_timer_.cancel();
  }

  void maybe_read() {
    if (reading_ || closed_ || !handshake_done_ || read_stopped_ || peer_eof_) {
      return;
    }
    if (!lingering_ && (!in_.empty() || queue_.size() >= opts_.max_pipelined)) {
      return;  // paused: resumes when the queue has room
    }
    reading_ = true;
    if (tls_) {
      if (!tls_buf_) {
        tls_buf_ = std::make_unique<std::array<char, read_chunk_bytes>>();
      }
      tls_->async_read_some(asio::buffer(*tls_buf_),
                            [self = shared_from_this()](const std::error_code& ec, std::size_t n) {
                              self->reading_ = false;
                              if (!self->closed_) {
                                self->on_data(ec, std::string_view(self->tls_buf_->data(), ec ? 0 : n));
                              }
                            });
      return;
    }
    // Plain TCP: wait for readability without a buffer (an idle connection or stream holds no
    // read buffer), then read what is there into the I/O thread's stack.
    socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](const std::error_code& ec) {
      self->reading_ = false;
      if (self->closed_) {
        return;
      }
      if (ec) {
        self->close();
        return;
      }
      std::array<char, read_chunk_bytes> buf;  // NOLINT(cppcoreguidelines-pro-type-member-init): filled by the read
      std::error_code rec;
      const std::size_t n = self->socket_.read_some(asio::buffer(buf), rec);
      if (rec == asio::error::would_block || rec == asio::error::try_again || rec == asio::error::interrupted) {
        self->maybe_read();
        return;
      }
      self->on_data(rec, std::string_view(buf.data(), rec ? 0 : n));
    });
  }

  void on_data(const std::error_code& ec, std::string_view data) {
    if (ec) {
      if (!lingering_ && (ec == asio::error::eof || ec == asio::ssl::error::stream_truncated)) {
        on_peer_eof();
      } else {
        close();  // reset or other failure (or the end of a linger): a stream sees write_failed
      }
      return;
    }
    if (lingering_) {
      maybe_read();
      return;
    }
    in_.append(data);
    process_input();
    maybe_read();
  }

  // The peer closed its sending side: a stream ends as a disconnect; answers still owed are
  // written, then the connection closes.
  void on_peer_eof() {
    peer_eof_ = true;
    if (stream_ || req_started_ || (!busy_ && queue_.empty())) {
      close();
    }
  }

  void process_input() {
    while (!in_.empty() && !parse_failed_ && queue_.size() < opts_.max_pipelined && !closed_) {
      if (!req_started_) {
        req_started_ = true;
        body_phase_ = false;
        if (deadline_kind_ != deadline_kind::fresh) {
          arm_deadline(deadline_kind::head, opts_.header_read_timeout);
        }
      }
      const std::size_t consumed = parser_.feed(in_);
      in_.erase(0, std::min(consumed, in_.size()));
      const auto st = parser_.state();
      if (st == parse_state::complete) {
        queue_.push_back(queued{parser_.take(), 0, {}});
        req_started_ = false;
        body_phase_ = false;
        continue_sent_ = false;
        continue_wanted_ = false;
        clear_deadline();
        continue;
      }
      if (st == parse_state::error) {
        const auto f = parser_.failure();
        queue_.push_back(queued{{}, f.status > 0 ? f.status : 400, f.reason});
        parse_failed_ = true;
        read_stopped_ = true;
        req_started_ = false;
        in_.clear();
        clear_deadline();
        break;
      }
      if (st == parse_state::headers_done) {
        if (!body_phase_) {
          body_phase_ = true;
          arm_deadline(deadline_kind::body, opts_.body_read_timeout);
        }
        maybe_continue();
      }
      if (consumed == 0) {
        break;
      }
    }
    dispatch_next();
  }

  // `Expect: 100-continue`: the interim answer goes out only when nothing else is being
  // answered on this connection (answers stay in order); otherwise when the turn comes.
  void maybe_continue() {
    if (continue_sent_ || parser_.state() != parse_state::headers_done) {
      return;
    }
    const auto& r = parser_.peek();
    if (!r.expect_continue || r.version_minor < 1) {
      return;
    }
    if (busy_ || !queue_.empty() || writing_ || !out_.empty()) {
      continue_wanted_ = true;
      return;
    }
    continue_sent_ = true;
    continue_wanted_ = false;
    out_ += "HTTP/1.1 100 Continue\r\n\r\n";
    flush();
  }

  // --- dispatch ---

  void dispatch_next() {
    if (busy_ || closed_ || lingering_ || queue_.empty()) {
      return;
    }
    queued item = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    replied_ = false;
    ++turn_;
    if (item.error_status != 0) {
      write_error(item.error_status, item.error_reason);
      return;
    }
    const parsed_request& req = item.request;
    keep_alive_ = req.keep_alive;
    head_only_ = req.method == "HEAD";
    version_minor_ = req.version_minor;
    http_request_view view;
    view.method = req.method;
    view.target = req.target;
    view.body = req.body;
    view.headers = req.headers;
    view.remote = remote_;
    view.local = local_;

    auto once = std::make_shared<std::atomic<bool>>(false);
    http_completion done = [gate = srv_.gate_, weak = weak_from_this(), once, turn = turn_](http_reply reply) {
      if (once->exchange(true)) {
        return;
      }
      gate->with([&] {
        if (auto c = weak.lock()) {
          c->deliver(std::move(reply), turn);
        }
      });
    };
    try {
      if (srv_.endpoint_ != nullptr) {
        srv_.endpoint_->handle(view, done);
      } else {
        srv_.handler_(view, done);
      }
    } catch (...) {
      http_reply r;
      r.head.status = 500;
      r.head.headers.push_back({"Content-Type", "text/plain; charset=utf-8"});
      r.head.body = "internal error\n";
      done(std::move(r));  // ignored when the handler already answered
    }
    item = queued{};  // the request is no longer referenced: release its body now
    if (!in_.empty()) {
      process_input();  // a paused pipelined request may now be queued
    }
    maybe_read();
  }

  void write_error(int status, std::string_view reason) {
    close_after_ = true;
    http_response r;
    r.status = status;
    r.headers.push_back({"Content-Type", "text/plain; charset=utf-8"});
    r.body = reason.empty() ? std::string(reason_phrase(status)) : std::string(reason);
    r.body += '\n';
    append_head(out_, r, framing::content_length, r.body.size(), false);
    out_ += r.body;
    response_complete_ = true;
    flush();
  }

  // --- write side ---

  void on_reply(http_reply reply, std::uint64_t turn) {
    if (closed_ || !busy_ || replied_ || turn != turn_) {
      return;  // the stream (if any) is destroyed here: it closes client_disconnect
    }
    replied_ = true;
    bool keep = keep_alive_ && !stopping_ && !peer_eof_;
    if (const auto c = reply.head.header("Connection"); c && list_contains(*c, "close")) {
      keep = false;
    }
    close_after_ = !keep;
    if (!reply.stream || head_only_ || body_forbidden(reply.head.status)) {
      append_head(out_, reply.head, framing::content_length, reply.head.body.size(), keep);
      if (!head_only_ && !body_forbidden(reply.head.status)) {
        out_ += reply.head.body;
      }
      response_complete_ = true;
      flush();
      return;
    }
    chunked_ = version_minor_ >= 1;
    if (!chunked_) {
      close_after_ = true;  // HTTP/1.0: the body ends with the connection
      keep = false;
    }
    append_head(out_, reply.head, chunked_ ? framing::chunked : framing::until_close, 0, keep);
    if (opts_.stream_queue_bytes > 0) {
      std::error_code ec;
      const auto cap = std::min<std::size_t>(opts_.stream_queue_bytes, std::size_t{1} << 30U);
      socket_.set_option(asio::socket_base::send_buffer_size(static_cast<int>(cap)), ec);
    }
    stream_ = std::move(reply.stream);
    if (in_.empty()) {
      std::string().swap(in_);  // a held-open stream keeps no buffers it does not need
    }
    auto gate = srv_.gate_;
    stream_->on_ready([gate, weak = weak_from_this()] {
      gate->with([&] {
        if (auto c = weak.lock()) {
          c->wake();
        }
      });
    });
    if (stopping_) {
      stream_->close(close_reason::session_terminated);
    }
    flush();
  }

  void flush() {
    if (writing_ || closed_ || out_.empty()) {
      return;
    }
    wbuf_.swap(out_);
    out_.clear();
    woff_ = 0;
    writing_ = true;
    write_some();
  }

  void write_some() {
    const auto gen = ++write_gen_;
    write_timer_.expires_after(opts_.write_timeout);
    write_timer_.async_wait([self = shared_from_this(), gen](const std::error_code& ec) {
      if (ec || gen != self->write_gen_ || self->closed_ || !self->writing_) {
        return;
      }
      self->close();  // no progress for write_timeout: the stream sees write_failed
    });
    auto buf = asio::buffer(wbuf_.data() + woff_, wbuf_.size() - woff_);
    auto cb = [self = shared_from_this()](const std::error_code& ec, std::size_t n) { self->on_write(ec, n); };
    if (tls_) {
      tls_->async_write_some(buf, std::move(cb));
    } else {
      socket_.async_write_some(buf, std::move(cb));
    }
  }

  void on_write(const std::error_code& ec, std::size_t n) {
    if (closed_) {
      return;
    }
    if (ec) {
      close();
      return;
    }
    woff_ += n;
    if (woff_ < wbuf_.size()) {
      write_some();
      return;
    }
    writing_ = false;
    ++write_gen_;
    write_timer_.cancel();
    if (wbuf_.capacity() > read_chunk_bytes) {
      std::string().swap(wbuf_);
    } else {
      wbuf_.clear();
    }
    if (doomed_) {
      close();
      return;
    }
    if (!out_.empty()) {
      flush();
      return;
    }
    on_drained();
  }

  void on_drained() {
    if (stream_) {
      if (stream_in_flight_) {
        stream_in_flight_ = false;
        stream_->written();
      }
      pump_stream();
      return;
    }
    if (response_complete_) {
      finish_turn();
    }
  }

  // Pull → write → written(), strictly alternating; between pulls, wait for the waker or
  // wait_time, whichever is first.
  void pump_stream() {
    if (!stream_ || closed_ || writing_ || !out_.empty()) {
      return;
    }
    const auto now = steady::now();
    if (!stream_->finished()) {
      std::string bytes;
      stream_->pull(now, bytes);
      if (!bytes.empty()) {
        if (chunked_) {
          append_chunks(out_, bytes);
        } else {
          out_ += bytes;
        }
        stream_in_flight_ = true;
        ++stream_gen_;
        flush();
        return;
      }
    }
    if (stream_->finished()) {
      stream_.reset();
      ++stream_gen_;
      stream_timer_.cancel();
      response_complete_ = true;
      if (chunked_) {
        out_ += "0\r\n\r\n";
        flush();
      } else {
        finish_turn();
      }
      return;
    }
    auto wait = stream_->wait_time(now);
    wait = std::max(wait, min_stream_wait);
    const auto gen = ++stream_gen_;
    stream_timer_.expires_after(wait);
    stream_timer_.async_wait([self = shared_from_this(), gen](const std::error_code& ec) {
      if (ec || gen != self->stream_gen_) {
        return;
      }
      self->pump_stream();
    });
  }

  void finish_turn() {
    busy_ = false;
    replied_ = false;
    response_complete_ = false;
    if (close_after_ || stopping_) {
      begin_linger();
      return;
    }
    if (peer_eof_ && queue_.empty()) {
      close();
      return;
    }
    if (!queue_.empty()) {
      dispatch_next();
      return;
    }
    if (continue_wanted_) {
      maybe_continue();
    }
    if (!in_.empty()) {
      process_input();
    }
    if (!busy_ && queue_.empty() && !req_started_ && !closed_) {
      arm_deadline(deadline_kind::idle, opts_.idle_timeout);
    }
    maybe_read();
  }

  asio_http_server::impl& srv_;
  const asio_http_server_options& opts_;
  tcp::socket socket_;
  asio::any_io_executor ex_;
  std::optional<asio::ssl::stream<tcp::socket&>> tls_;
  asio::steady_timer read_timer_;
  asio::steady_timer write_timer_;
  asio::steady_timer stream_timer_;
  asio::steady_timer linger_timer_;
  http_head_parser parser_;
  std::string remote_;
  std::string local_;

  std::unique_ptr<std::array<char, read_chunk_bytes>> tls_buf_;  // TLS reads only
  std::string in_;    // received, not yet parsed
  std::string out_;   // to write after the write in progress
  std::string wbuf_;  // the write in progress
  std::size_t woff_ = 0;
  std::deque<queued> queue_;
  int version_minor_ = 1;
  std::unique_ptr<http_stream> stream_;
  std::atomic<bool> wake_posted_{false};

  std::uint64_t deadline_gen_ = 0;
  std::uint64_t write_gen_ = 0;
  std::uint64_t stream_gen_ = 0;
  std::uint64_t turn_ = 0;
  deadline_kind deadline_kind_ = deadline_kind::none;

  bool over_limit_;
  bool handshake_done_ = false;
  bool reading_ = false;
  bool read_stopped_ = false;
  bool peer_eof_ = false;
  bool req_started_ = false;
  bool body_phase_ = false;
  bool parse_failed_ = false;
  bool continue_sent_ = false;
  bool continue_wanted_ = false;
  bool busy_ = false;
  bool replied_ = false;
  bool keep_alive_ = true;
  bool head_only_ = false;
  bool close_after_ = false;
  bool response_complete_ = false;
  bool chunked_ = true;
  bool stream_in_flight_ = false;
  bool writing_ = false;
  bool lingering_ = false;
  bool stopping_ = false;
  bool doomed_ = false;
  bool closed_ = false;
};

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Server implementation

result<void> asio_http_server::impl::start() {
  std::lock_guard stop_lock(stop_mu_);
  if (state_.load() != run_state::idle) {
    return std::unexpected(std::make_error_code(std::errc::operation_not_permitted));
  }
  const auto& o = options_;
  if (o.io_threads == 0 || o.handler_threads == 0 || o.max_pipelined == 0 || o.header_read_timeout.count() <= 0 ||
      o.body_read_timeout.count() <= 0 || o.idle_timeout.count() <= 0 || o.write_timeout.count() <= 0 ||
      o.tick_interval.count() <= 0 || o.shutdown_drain.count() < 0 || o.close_linger.count() < 0 ||
      (endpoint_ == nullptr && !handler_)) {
    return std::unexpected(std::make_error_code(std::errc::invalid_argument));
  }
  std::error_code ec;
  const auto address = asio::ip::make_address(o.address, ec);
  if (ec) {
    return std::unexpected(std::make_error_code(std::errc::invalid_argument));
  }
  if (o.tls) {
    std::error_code tls_ec;
    try {
      tls_ec = configure_tls(ssl_.emplace(asio::ssl::context::tls_server), *o.tls);
    } catch (const std::system_error& e) {
      tls_ec = e.code();
    }
    if (tls_ec) {
      ssl_.reset();
      return std::unexpected(normalize(tls_ec));
    }
  }
  const tcp::endpoint ep(address, o.port);
  acceptor_.open(ep.protocol(), ec);
  if (!ec) {
    acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  }
  if (!ec) {
    acceptor_.bind(ep, ec);
  }
  if (!ec) {
    acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  }
  std::uint16_t bound = 0;
  if (!ec) {
    const auto local = acceptor_.local_endpoint(ec);
    bound = local.port();
  }
  if (ec) {
    std::error_code ignored;
    acceptor_.close(ignored);
    return std::unexpected(normalize(ec));
  }
  port_.store(bound);
  work_.emplace(io_->get_executor());
  state_.store(run_state::running);
  pool_->start(o.handler_threads);
  {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < o.io_threads; ++i) {
      io_threads_.emplace_back([this] {
        for (;;) {
          try {
            io_->run();
            return;
          } catch (...) {  // NOLINT(bugprone-empty-catch): a throwing handler must not end the thread
          }
        }
      });
      io_thread_ids_.push_back(io_threads_.back().get_id());
    }
  }
  post_to(control_, [this] {
    do_accept();
    if (endpoint_ != nullptr) {
      arm_tick();
    }
  });
  return {};
}

void asio_http_server::impl::do_accept() {
  if (state_.load() != run_state::running || !acceptor_.is_open()) {
    return;
  }
  acceptor_.async_accept(asio::make_strand(*io_), [this](const std::error_code& ec, tcp::socket socket) {
    on_accept(ec, std::move(socket));
  });
}

void asio_http_server::impl::on_accept(const std::error_code& ec, tcp::socket socket) {
  if (state_.load() != run_state::running) {
    std::error_code ignored;
    socket.close(ignored);
    return;
  }
  if (ec) {
    if (ec == asio::error::operation_aborted) {
      return;
    }
    retry_timer_.expires_after(accept_retry_delay);
    retry_timer_.async_wait([this](const std::error_code& e) {
      if (!e) {
        do_accept();
      }
    });
    return;
  }
  std::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  const bool over = count_.load() >= options_.max_connections;
  std::shared_ptr<detail::connection> c;
  try {
    c = std::make_shared<detail::connection>(*this, std::move(socket), over);
    std::lock_guard lock(mu_);
    conns_.emplace(c.get(), c);
    count_.fetch_add(1);
  } catch (...) {
    c.reset();
  }
  if (c) {
    c->start();
  }
  do_accept();
}

void asio_http_server::impl::arm_tick() {
  tick_timer_.expires_after(options_.tick_interval);
  tick_timer_.async_wait([this](const std::error_code& ec) {
    if (ec || state_.load() != run_state::running) {
      return;
    }
    endpoint_->tick();
    arm_tick();
  });
}

std::vector<std::shared_ptr<detail::connection>> asio_http_server::impl::snapshot() {
  std::vector<std::shared_ptr<detail::connection>> v;
  std::lock_guard lock(mu_);
  v.reserve(conns_.size());
  for (const auto& [p, c] : conns_) {
    v.push_back(c);
  }
  return v;
}

void asio_http_server::impl::remove(detail::connection* c) noexcept {
  std::shared_ptr<detail::connection> keep;  // released outside the lock
  {
    std::lock_guard lock(mu_);
    const auto it = conns_.find(c);
    if (it == conns_.end()) {
      return;
    }
    keep = std::move(it->second);
    conns_.erase(it);
    count_.fetch_sub(1);
  }
  cv_.notify_all();
}

void asio_http_server::impl::begin_shutdown_on_io() {
  std::error_code ignored;
  acceptor_.close(ignored);
  tick_timer_.cancel();
  retry_timer_.cancel();
  if (endpoint_ != nullptr) {
    endpoint_->begin_shutdown();
  }
  for (const auto& c : snapshot()) {
    c->server_stopping();
  }
  drain_timer_.expires_after(options_.shutdown_drain);
  drain_timer_.async_wait([this](const std::error_code& ec) {
    if (ec) {
      return;
    }
    for (const auto& c : snapshot()) {
      c->drain_expired();
    }
  });
}

void asio_http_server::impl::request_stop() noexcept {
  {
    std::lock_guard lock(mu_);
    stop_requested_ = true;
  }
  cv_.notify_all();
  auto expected = run_state::running;
  if (state_.compare_exchange_strong(expected, run_state::stopping)) {
    try {
      post_to(control_, [this] { begin_shutdown_on_io(); });
    } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory; stop() closes every socket anyway
    }
  }
}

bool asio_http_server::impl::on_server_thread() const {
  {
    std::lock_guard lock(mu_);
    if (std::find(io_thread_ids_.begin(), io_thread_ids_.end(), std::this_thread::get_id()) != io_thread_ids_.end()) {
      return true;
    }
  }
  return pool_->owns_current_thread();
}

void asio_http_server::impl::stop() noexcept {
  if (on_server_thread()) {
    request_stop();  // joining from inside would deadlock; stop()/the destructor finish the job
    return;
  }
  std::lock_guard stop_lock(stop_mu_);
  const auto st = state_.load();
  if (st == run_state::stopped) {
    return;
  }
  if (st == run_state::idle) {
    pool_->stop();
    gate_->close();
    state_.store(run_state::stopped);
    {
      std::lock_guard lock(mu_);
      stop_requested_ = true;
    }
    cv_.notify_all();
    return;
  }
  request_stop();
  {
    const auto bound = options_.shutdown_drain + options_.write_timeout + options_.close_linger + stop_margin;
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, bound, [this] { return conns_.empty(); });
  }
  pool_->stop();  // queued dispatches run; their completions find their connections gone or open
  for (const auto& c : snapshot()) {
    c->close_async();
  }
  {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, stop_margin, [this] { return conns_.empty(); });
  }
  work_.reset();
  io_->stop();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    threads.swap(io_threads_);
  }
  for (auto& t : threads) {
    t.join();
  }
  gate_->close();
  std::unordered_map<detail::connection*, std::shared_ptr<detail::connection>> rest;
  {
    std::lock_guard lock(mu_);
    rest.swap(conns_);
    io_thread_ids_.clear();
  }
  for (const auto& [p, c] : rest) {
    c->close_direct();
  }
  count_.store(0);
  rest.clear();
  state_.store(run_state::stopped);
  cv_.notify_all();
}

// ---------------------------------------------------------------------------------------------
// Public API

asio_http_server::asio_http_server(handler h, asio_http_server_options options)
    : impl_(new impl(std::move(h), nullptr, std::move(options))) {}

asio_http_server::asio_http_server(http_endpoint& endpoint, asio_http_server_options options)
    : impl_(new impl(handler{}, &endpoint, std::move(options))) {
  endpoint.set_executor(impl_->make_executor());
}

asio_http_server::~asio_http_server() {
  impl_->stop();
  delete impl_;
}

result<void> asio_http_server::start() { return impl_->start(); }

result<void> asio_http_server::run() {
  auto r = impl_->start();
  if (!r) {
    return r;
  }
  {
    std::unique_lock lock(impl_->mu_);
    impl_->cv_.wait(lock, [this] { return impl_->stop_requested_; });
  }
  impl_->stop();
  return {};
}

void asio_http_server::request_stop() noexcept { impl_->request_stop(); }

void asio_http_server::stop() noexcept { impl_->stop(); }

std::uint16_t asio_http_server::port() const noexcept { return impl_->port_.load(); }

std::size_t asio_http_server::connections() const noexcept { return impl_->count_.load(); }

bool asio_http_server::running() const noexcept { return impl_->state_.load() == impl::run_state::running; }

http_executor asio_http_server::executor() const { return impl_->make_executor(); }

const asio_http_server_options& asio_http_server::options() const noexcept { return impl_->options_; }

}  // namespace transport
MCPCORE_END_NAMESPACE
