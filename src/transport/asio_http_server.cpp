// SPDX-License-Identifier: Apache-2.0
// The Asio HTTP/1.1 server: accept loop, connections (parse, dispatch in order, write, stream),
// the bounded handler pool, TLS and the graceful stop.
#include <mcpcore/transport/asio_http_server.hpp>

#include "handler_pool.hpp"
#include "http_head_parser.hpp"
#include "http_response_writer.hpp"

#include <mcpcore/detail/config.hpp>
#include <mcpcore/detail/lazy_deque.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/session/stream_types.hpp>
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

void append_number(std::string& out, std::size_t n) {
  std::array<char, 24> buf{};
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), n);
  out.append(buf.data(), r.ptr);
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

}  // namespace

namespace detail {

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
  bool open_ = true;  // false once the I/O threads are joined: a late completion posts nothing
};

class connection;

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// The server state

struct asio_http_server::impl {
  enum class run_state : int { idle, running, stopping, stopped };

  impl(handler h, http_endpoint* ep, asio_http_server_options o)
      : options_(sized(std::move(o))),
        handler_(std::move(h)),
        endpoint_(ep),
        pool_(std::make_shared<detail::handler_pool>(options_.handler_queue_cap, options_.handler_grace,
                                                     options_.handler_eager_threads)),
        gate_(std::make_shared<detail::post_gate>()),
        io_(std::make_unique<asio::io_context>(static_cast<int>(options_.io_threads))),
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

  // Takes `n` bytes of the server's body budget; false (nothing taken) when they do not fit.
  bool reserve_body(std::size_t n) noexcept {
    const std::size_t cap = options_.max_buffered_body_bytes;
    std::size_t cur = buffered_.load();
    do {
      if (n > cap || cur > cap - n) {
        return false;
      }
    } while (!buffered_.compare_exchange_weak(cur, cur + n));
    return true;
  }
  void release_body(std::size_t n) noexcept { buffered_.fetch_sub(n); }

  http_executor make_executor() const {
    return [pool = pool_](std::function<void()> task) { return pool->submit(std::move(task)); };
  }

  static asio_http_server_options sized(asio_http_server_options o);
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
  // The body budget (docs/transport.md#body-buffering). Declared before io_: a connection destroyed
  // with the io_context's handlers still gives its bytes back.
  std::atomic<std::size_t> buffered_{0};
  std::atomic<std::uint64_t> body_refusals_{0};
  handler handler_;
  http_endpoint* endpoint_;
  detail::head_limits limits_{};
  std::shared_ptr<detail::handler_pool> pool_;
  http_executor_binding exec_binding_;  // the endpoint dispatches on `pool_` while this server lives
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
  bool stop_requested_ = false;  // request_stop() or stop() was called: run() returns (under mu_)
  std::atomic<std::size_t> count_{0};
  std::atomic<std::uint16_t> port_{0};
  std::atomic<run_state> state_{run_state::idle};
  std::mutex stop_mu_;  // serialises start and stop
};

namespace detail {

// ---------------------------------------------------------------------------------------------
// One connection.
//
// Strand: the acceptor gives every socket its own strand (make_strand in do_accept), which is
// the socket's executor ex_. Every member function below except the entry points runs on that
// strand, so the members need no lock; the entry points only post to it. The one member other
// threads touch is the atomic wake_posted_.
//
// Lifetime: the server's map (conns_) owns the connection until close() removes it, and every
// handler pending on the strand (reads, writes, timers, posted calls) holds a shared_ptr, so the
// object outlives its last handler. Completions and wakers, called from handler threads, hold a
// weak_ptr only and post through the server's post_gate, which closes once the I/O threads are
// joined: after that nothing reaches a connection from outside.
//
// State: three machines rather than one, because they overlap in time. A connection reads and
// queues the next (pipelined) requests while it answers the current one, and it may write
// `100 Continue` for the request being read while another is being answered:
//  - phase_: the connection's lifecycle;
//  - input_: the request being read (with interim_ for its `Expect: 100-continue`);
//  - turn_: the request being answered; requests are answered strictly in the order received.
// The response bytes are made by writer_ (http_response_writer.hpp, sans-I/O); this class only
// moves them to the socket.

// A request body's share of the budgets (docs/transport.md#body-buffering): bytes of the server's
// budget and of its connection's count, given back when the lease shrinks or is destroyed (the
// request handed to the handler, the connection closed). Lives inside its connection (conn_
// points at the connection's count), on its strand.
class body_lease {
 public:
  body_lease() noexcept = default;
  body_lease(asio_http_server::impl* srv, std::size_t* conn) noexcept : srv_(srv), conn_(conn) {}
  body_lease(body_lease&& o) noexcept : srv_(o.srv_), conn_(o.conn_), n_(std::exchange(o.n_, 0)) {}
  body_lease& operator=(body_lease&& o) noexcept {
    if (this != &o) {
      reset();
      srv_ = o.srv_;
      conn_ = o.conn_;
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  body_lease(const body_lease&) = delete;
  body_lease& operator=(const body_lease&) = delete;
  ~body_lease() { reset(); }

  // Takes `extra` more bytes; false (nothing taken) when the server's budget has no room.
  bool grow(std::size_t extra) noexcept {
    if (extra == 0) {
      return true;
    }
    if (srv_ == nullptr || !srv_->reserve_body(extra)) {
      return false;
    }
    n_ += extra;
    *conn_ += extra;
    return true;
  }
  // Gives back what is held beyond `n` bytes.
  void shrink_to(std::size_t n) noexcept {
    if (n >= n_) {
      return;
    }
    srv_->release_body(n_ - n);
    *conn_ -= n_ - n;
    n_ = n;
  }
  void reset() noexcept { shrink_to(0); }
  [[nodiscard]] std::size_t size() const noexcept { return n_; }

 private:
  asio_http_server::impl* srv_ = nullptr;
  std::size_t* conn_ = nullptr;
  std::size_t n_ = 0;
};

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
      // The endpoint still reads the address itself before it skips the Host check
      // (docs/security.md#dns-rebinding-host-and-origin): an IPv4-mapped loopback reads as loopback.
      local_ip_ = l.address().to_string();
      local_port_ = l.port();
      local_loopback_ = l.address().is_loopback();
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
  using wall_clock = std::chrono::system_clock;

  struct queued {
    parsed_request request;
    int error_status = 0;  // non-zero: answer this parse failure and close
    std::string_view error_reason;
    // Set: the answer of a check on the head (or of the body budget): written with
    // `Connection: close`, then the connection closes; the body was never read.
    std::optional<http_response> refusal{};
    body_lease lease{};  // the body's share of the budgets, given back once the request is handed over
    // The principal the endpoint's check_head authenticated, handed to its handle: one
    // authentication per request (std::nullopt on the routes that need none).
    std::optional<principal> caller{};
  };
  // Which deadline read_timer_ runs. `fresh` runs from the start of the connection: the first
  // request's head must arrive within header_read_timeout of it (not of its first byte).
  enum class deadline_kind { none, fresh, idle, head, body };

  // The connection's lifecycle: handshake → open → lingering → closed, or open → closing →
  // closed when the stop's drain ends during a write; any phase may go straight to closed (a
  // reset, a timeout, the end of a stop).
  enum class phase : unsigned char {
    handshake,  // not started, or the TLS handshake is in progress: nothing is read yet
    open,       // reading requests and answering them
    closing,    // the shutdown drain expired during a write: the write's end (or timeout) closes
    lingering,  // the last answer is written and the sending side shut: input is discarded for
                // close_linger, then the socket closes (the client reads the answer, not a reset)
    closed,     // the socket is closed, the stream released: handlers still pending return at once
  };
  // The request being read: its bytes go through parser_; complete ones wait in queue_.
  enum class input : unsigned char {
    idle,    // no request begun (the fresh, idle or no deadline runs)
    head,    // a request began: its head is arriving (header_read_timeout)
    wait,    // its head passed the checks; its body waits for room in this connection's buffer
             // (max_connection_buffered_body_bytes): nothing is read until the queue drains
    body,    // its body has room and is arriving (body_read_timeout)
    failed,  // the input was rejected: nothing more is parsed, nor read until lingering
  };
  // `Expect: 100-continue` of the request being read. The interim answer is written only when
  // nothing else is being answered (answers stay in order); else it waits for the turn to end.
  enum class interim : unsigned char { none, deferred, sent };
  // The request being answered (the front of the queue when it was dispatched).
  enum class turn_state : unsigned char {
    idle,          // nothing is being answered
    dispatched,    // the handler has the request; its reply has not arrived
    responding,    // the whole answer is in out_/wbuf_: the turn ends once it is written
    streaming,     // the body comes from stream_: pulled when the waker or wait_time says so
    stream_write,  // the bytes of a pull are being written: stream_->written() once they drain
  };

  [[nodiscard]] bool is_closed() const noexcept { return phase_ == phase::closed; }
  [[nodiscard]] bool is_lingering() const noexcept { return phase_ == phase::lingering; }
  [[nodiscard]] bool is_streaming() const noexcept {
    return turn_ == turn_state::streaming || turn_ == turn_state::stream_write;
  }
  [[nodiscard]] bool request_in_progress() const noexcept {
    return input_ == input::head || input_ == input::wait || input_ == input::body;
  }

  // --- lifecycle ---

  void on_start() {
    if (is_closed()) {
      return;
    }
    if (!tls_) {
      std::error_code ec;
      socket_.non_blocking(true, ec);  // reads are synchronous once the socket is readable
    }
    if (over_limit_) {
      refuse_over_limit();
      return;
    }
    arm_deadline(deadline_kind::fresh, opts_.header_read_timeout);
    if (tls_) {
      tls_->async_handshake(asio::ssl::stream_base::server, [self = shared_from_this()](const std::error_code& ec) {
        if (self->is_closed()) {
          return;
        }
        if (ec) {
          self->close();
          return;
        }
        self->phase_ = phase::open;
        self->maybe_read();
      });
      return;
    }
    phase_ = phase::open;
    maybe_read();
  }

  // Beyond max_connections: 503 and close, without reading the request.
  void refuse_over_limit() {
    if (tls_) {  // no handshake spent on a connection that is refused anyway
      close();
      return;
    }
    phase_ = phase::open;
    turn_ = turn_state::responding;
    writer_.close_with(out_, over_capacity_response(), wall_clock::now());
    flush();
  }

  void on_server_stopping() {
    stopping_ = true;
    if (is_closed()) {
      return;
    }
    if (is_streaming()) {
      stream_->close(close_reason::session_terminated);
      pump_stream();
      return;
    }
    if (turn_ == turn_state::idle && queue_.empty() && !is_lingering()) {
      close();
    }
  }

  void on_drain_expired() {
    if (is_closed()) {
      return;
    }
    if (writing_) {
      phase_ = phase::closing;  // the write finishes or its write_timeout closes the connection
      return;
    }
    close();
  }

  // Full close: the stream sees write_failed and is destroyed, the socket closes, the server
  // forgets the connection.
  void close() {
    if (is_closed()) {
      return;
    }
    auto self = shared_from_this();  // remove() drops the server's reference: keep this alive
    close_io();
    srv_.remove(this);
  }

  void close_io() noexcept {
    if (is_closed()) {
      return;
    }
    phase_ = phase::closed;
    gone_.request_stop();
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
    current_.reset();
    in_.clear();
  }

  // Stop sending, discard what still arrives for up to close_linger, then close.
  void begin_linger() {
    if (is_closed() || is_lingering()) {
      return;
    }
    phase_ = phase::lingering;
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
    in_.clear();
    current_.reset();
    maybe_read();  // reads again even after a rejected request, to discard
  }

  // --- read side ---

  // The read-side deadline (header, body, idle) is lazy (docs/transport.md#timeouts): arming one
  // sets when it falls, and the timer is re-armed only when no wait is pending or the pending
  // wait would fire after the new deadline. A wait that fires before its deadline (the deadline
  // moved later, or was cleared) sleeps again until it, or ends. So a keep-alive request, whose
  // idle deadline moves later each time, arms no timer (each timer change can cost the system
  // call that reprograms the reactor's timer). Inside process_input the timer is synchronised
  // once at the end: a request that arrives whole in one read arms no head or body deadline.
  void arm_deadline(deadline_kind kind, std::chrono::milliseconds after) {
    deadline_kind_ = kind;
    const auto now = steady::now();
    deadline_at_ = after >= std::chrono::duration_cast<std::chrono::milliseconds>(steady::time_point::max() - now)
                       ? steady::time_point::max()
                       : now + after;
    if (!batching_deadlines_) {
      sync_deadline();
    }
  }

  void clear_deadline() noexcept { deadline_kind_ = deadline_kind::none; }

  // Makes sure a wait fires no later than the deadline (when there is one).
  void sync_deadline() {
    if (deadline_kind_ == deadline_kind::none || is_closed()) {
      return;
    }
    if (deadline_waiting_ && deadline_wait_at_ <= deadline_at_) {
      return;  // the pending wait fires first and sleeps again until the deadline
    }
    deadline_waiting_ = true;
    deadline_wait_at_ = deadline_at_;
    const auto gen = ++deadline_gen_;  // voids the wait this one replaces
    read_timer_.expires_at(deadline_wait_at_);
    read_timer_.async_wait([self = shared_from_this(), gen](const std::error_code& ec) {
      if (gen != self->deadline_gen_) {
        return;  // replaced by an earlier wait, or the connection closed
      }
      self->deadline_waiting_ = false;
      if (ec || self->is_closed() || self->deadline_kind_ == deadline_kind::none) {
        return;
      }
      if (steady::now() < self->deadline_at_) {
        self->sync_deadline();  // the deadline moved later since this wait was armed
        return;
      }
      self->close();  // slowloris, slow body, idle keep-alive: closed without an answer
    });
  }

  // Holds the deadline's timer still while process_input runs; synchronises it once at the end.
  class deadline_batch {
   public:
    explicit deadline_batch(connection& c) noexcept : c_(c), outer_(c.batching_deadlines_) {
      c_.batching_deadlines_ = true;
    }
    ~deadline_batch() {
      c_.batching_deadlines_ = outer_;
      if (!outer_) {
        try {
          c_.sync_deadline();
        } catch (...) {
          // No memory for the wait: a connection that cannot be bounded in time closes. As
          // close(), without its keep-alive: the handler running process_input holds this
          // connection. Both calls are noexcept.
          if (!c_.is_closed()) {
            c_.close_io();
            c_.srv_.remove(&c_);
          }
        }
      }
    }
    deadline_batch(const deadline_batch&) = delete;
    deadline_batch& operator=(const deadline_batch&) = delete;

   private:
    connection& c_;
    bool outer_;
  };

  // Whether to read now. While lingering, always (to discard); otherwise not before the
  // handshake, after a rejected request, or while unparsed bytes wait or the queue is full
  // (reading resumes when the queue has room).
  [[nodiscard]] bool read_wanted() const noexcept {
    if (reading_ || is_closed() || phase_ == phase::handshake || peer_eof_) {
      return false;
    }
    if (is_lingering()) {
      return true;
    }
    return input_ != input::failed && input_ != input::wait && in_.empty() && queue_.size() < opts_.max_pipelined;
  }

  void maybe_read() {
    if (!read_wanted()) {
      return;
    }
    reading_ = true;
    if (tls_) {
      read_tls(*tls_);
      return;
    }
    // Plain TCP: wait for readability without a buffer (an idle connection or stream holds no
    // read buffer), then read what is there into the I/O thread's stack.
    socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](const std::error_code& ec) {
      self->reading_ = false;
      if (self->is_closed()) {
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

  // TLS: the record layer needs a buffer that outlives the read (allocated on first use).
  void read_tls(asio::ssl::stream<tcp::socket&>& tls) {
    if (!tls_buf_) {
      tls_buf_ = std::make_unique<std::array<char, read_chunk_bytes>>();
    }
    auto on_read = [self = shared_from_this()](const std::error_code& ec, std::size_t n) {
      self->reading_ = false;
      if (!self->is_closed()) {
        self->on_data(ec, std::string_view(self->tls_buf_->data(), ec ? 0 : n));
      }
    };
    tls.async_read_some(asio::buffer(*tls_buf_), std::move(on_read));
  }

  void on_data(const std::error_code& ec, std::string_view data) {
    if (ec) {
      if (!is_lingering() && (ec == asio::error::eof || ec == asio::ssl::error::stream_truncated)) {
        on_peer_eof();
      } else {
        close();  // reset or other failure (or the end of a linger): a stream sees write_failed
      }
      return;
    }
    if (is_lingering()) {
      maybe_read();
      return;
    }
    in_.append(data);
    process_input();
    maybe_read();
  }

  // The peer closed its sending side: a stream ends as a disconnect, so does a request cut
  // short; answers still owed are written, then the connection closes.
  void on_peer_eof() {
    peer_eof_ = true;
    gone_.request_stop();  // per-request calls in flight are cancelled (docs/eras.md#streams)
    if (is_streaming() || request_in_progress() || (turn_ == turn_state::idle && queue_.empty())) {
      close();
    }
  }

  // Parses what arrived: a head with feed_head (never a body byte before the head is checked),
  // then, once the head passed check_head and its body has room (admit_body), the body.
  void process_input() {
    const deadline_batch batch{*this};
    while (!is_closed() && input_ != input::failed && queue_.size() < opts_.max_pipelined) {
      if (input_ == input::idle) {
        if (in_.empty()) {
          break;
        }
        input_ = input::head;
        if (deadline_kind_ != deadline_kind::fresh) {
          arm_deadline(deadline_kind::head, opts_.header_read_timeout);
        }
      }
      if (input_ == input::head) {
        if (in_.empty()) {
          break;
        }
        const std::size_t consumed = parser_.feed_head(in_);
        in_.erase(0, std::min(consumed, in_.size()));
        const auto st = parser_.state();
        if (st == parse_state::error) {
          fail_input();
          break;
        }
        if (st == parse_state::need_more) {
          if (consumed == 0) {
            break;
          }
          continue;
        }
        clear_deadline();
        if (!check_head()) {
          break;  // refused: answered in turn, the body is never read
        }
        input_ = input::wait;
      }
      if (input_ == input::wait) {
        if (!admit_body()) {
          break;  // waits for the queue to drain, or refused (the server's budget)
        }
        input_ = input::body;
        arm_deadline(deadline_kind::body, opts_.body_read_timeout);
        maybe_continue();
      }
      if (in_.empty()) {
        break;
      }
      const bool chunked = parser_.body_chunked();
      if (chunked) {
        // A chunked body takes its room as it grows: at most what this feed can add.
        const std::size_t have = parser_.peek().body.size();
        const std::size_t cap = srv_.limits_.max_body_bytes;
        const std::size_t want = have + std::min(in_.size(), cap > have ? cap - have : 0);
        if (want > current_.size() && !current_.grow(want - current_.size())) {
          refuse_body();
          break;
        }
      }
      const std::size_t consumed = parser_.feed(in_);
      in_.erase(0, std::min(consumed, in_.size()));
      const auto st = parser_.state();
      if (chunked && st != parse_state::error) {
        current_.shrink_to(parser_.peek().body.size());
      }
      if (st == parse_state::complete) {
        queue_.push_back(queued{parser_.take(), 0, {}, std::nullopt, std::move(current_), std::move(head_caller_)});
        head_caller_.reset();
        input_ = input::idle;
        interim_ = interim::none;
        clear_deadline();
        continue;
      }
      if (st == parse_state::error) {
        current_.reset();
        fail_input();
        break;
      }
      if (consumed == 0) {
        break;
      }
    }
    dispatch_next();
  }

  // The parser rejected the input: its status is answered in turn, then the connection closes.
  void fail_input() {
    head_caller_.reset();
    const auto f = parser_.failure();
    queue_.push_back(queued{{}, f.status > 0 ? f.status : 400, f.reason});
    input_ = input::failed;
    in_.clear();
    clear_deadline();
  }

  // The view of `r`'s head on this connection (no body); `fields` holds the header views (into
  // `r`) and must outlive the view.
  http_request_view view_of(const parsed_request& r, std::vector<http_header_view>& fields) const {
    fields.clear();
    fields.reserve(r.headers.size());
    for (const mcpcore::http_header& h : r.headers) {
      fields.push_back(http_header_view{h.name, h.value});
    }
    http_request_view view;
    view.method = r.method;
    view.target = r.target;
    view.headers = fields;
    view.remote = remote_;
    view.local = http_local_address{.address = local_ip_, .port = local_port_, .loopback = local_loopback_};
    view.disconnected = gone_.get_token();
    return view;
  }

  // The head is complete: the endpoint's check_head and the head_check option run on it
  // (docs/http.md#head-checks). False when one refused: its answer is queued in turn, the input
  // stops, and the body is never read.
  bool check_head() {
    if (srv_.endpoint_ == nullptr && !opts_.head_check) {
      return true;
    }
    const parsed_request& r = parser_.peek();
    http_request_view view = view_of(r, fields_);
    view.chunked = parser_.body_chunked();
    if (!view.chunked) {
      view.declared_length = parser_.body_declared();
    }
    std::optional<http_response> refusal;
    try {
      if (srv_.endpoint_ != nullptr) {
        refusal = srv_.endpoint_->check_head(view, head_caller_);
      }
      if (!refusal && opts_.head_check) {
        refusal = opts_.head_check(view);
      }
    } catch (...) {
      refusal = internal_error_response();
    }
    if (!refusal) {
      return true;
    }
    head_caller_.reset();
    queued q;
    q.request.method = r.method;  // the answer's framing depends on it (HEAD)
    q.request.version_minor = r.version_minor;
    q.refusal = std::move(refusal);
    queue_.push_back(std::move(q));
    input_ = input::failed;
    in_.clear();
    return false;
  }

  // Room for the body of the head just checked (docs/transport.md#body-buffering). In this
  // connection: a body always fits when no other is buffered here; beside others, only within
  // max_connection_buffered_body_bytes (a chunked one only alone): else wait (input::wait) until
  // the queue drains. In the server: its declared length (a chunked body's bytes as they come)
  // from max_buffered_body_bytes, else 503 and close. False when it waits or was refused.
  bool admit_body() {
    const bool chunked = parser_.body_chunked();
    const std::size_t declared = chunked ? 0 : parser_.body_declared();
    if (!chunked && declared == 0) {
      return true;
    }
    if (conn_body_bytes_ > 0 &&
        (chunked || declared > opts_.max_connection_buffered_body_bytes ||
         conn_body_bytes_ > opts_.max_connection_buffered_body_bytes - declared)) {
      return false;  // dispatch_next resumes once a queued request is handed over
    }
    if (!current_.grow(declared)) {
      refuse_body();
      return false;
    }
    return true;
  }

  // The body does not fit in the server's budget: 503 + Retry-After, in turn, then close.
  void refuse_body() {
    head_caller_.reset();
    srv_.body_refusals_.fetch_add(1);
    current_.reset();
    const parsed_request& r = parser_.peek();
    queued q;
    q.request.method = r.method;
    q.request.version_minor = r.version_minor;
    q.refusal = body_budget_response();
    queue_.push_back(std::move(q));
    input_ = input::failed;
    in_.clear();
    clear_deadline();
  }

  // `Expect: 100-continue`: the interim answer goes out only when nothing else is being
  // answered on this connection (answers stay in order); otherwise when the turn comes.
  void maybe_continue() {
    if (interim_ == interim::sent || input_ != input::body || parser_.state() != parse_state::headers_done) {
      return;
    }
    const auto& r = parser_.peek();
    if (!r.expect_continue || r.version_minor < 1) {
      return;
    }
    if (turn_ != turn_state::idle || !queue_.empty() || writing_ || !out_.empty()) {
      interim_ = interim::deferred;
      return;
    }
    interim_ = interim::sent;
    out_ += continue_response;
    flush();
  }

  // --- dispatch ---

  void dispatch_next() {
    if (turn_ != turn_state::idle || is_closed() || is_lingering() || queue_.empty()) {
      return;
    }
    queued item = std::move(queue_.front());
    queue_.pop_front();
    ++turn_no_;
    if (item.error_status != 0) {
      write_error(item.error_status, item.error_reason);
      return;
    }
    if (item.refusal) {
      // A refused head: answered with `Connection: close`; the connection then lingers and closes.
      turn_ = turn_state::responding;
      writer_.begin(request_facts{item.request.version_minor, false, item.request.method == "HEAD"});
      (void)writer_.reply(out_, *item.refusal, false, false, wall_clock::now());
      flush();
      return;
    }
    turn_ = turn_state::dispatched;
    const parsed_request& req = item.request;
    writer_.begin(request_facts{req.version_minor, req.keep_alive, req.method == "HEAD"});
    call_handler(req, std::move(item.caller));
    item = queued{};  // the request is no longer referenced: release its body (and its budget) now
    if (!in_.empty() || input_ == input::wait) {
      process_input();  // a paused pipelined request may now be queued, a waiting body admitted
    }
    maybe_read();
  }

  // Hands `req` to the endpoint or the handler, on this strand. The completion may run on any
  // thread: it holds only a weak_ptr and posts the reply back to the strand through the gate,
  // tagged with this turn's number. Only the first reply counts: on_reply takes a reply only for
  // the turn being answered and then moves the turn on, so a second call (or one for a turn that
  // has ended) is dropped.
  void call_handler(const parsed_request& req, std::optional<principal> caller) {
    http_request_view view = view_of(req, fields_);
    view.body = req.body;
    const auto completion = [this] {
      return http_completion{[gate = srv_.gate_, weak = weak_from_this(), turn = turn_no_](http_reply reply) {
        gate->with([&] {
          if (auto c = weak.lock()) {
            c->deliver(std::move(reply), turn);
          }
        });
      }};
    };
    try {
      if (srv_.endpoint_ != nullptr && caller) {
        srv_.endpoint_->handle(view, std::move(*caller), completion());  // authenticated by check_head
      } else if (srv_.endpoint_ != nullptr) {
        srv_.endpoint_->handle(view, completion());
      } else {
        srv_.handler_(view, completion());
      }
    } catch (...) {
      http_reply r;
      r.head = internal_error_response();
      completion()(std::move(r));  // dropped when the handler already answered
    }
  }

  // A request the parser rejected: answered with its status, then the connection closes.
  void write_error(int status, std::string_view reason) {
    turn_ = turn_state::responding;
    writer_.close_with(out_, parse_error_response(status, reason), wall_clock::now());
    flush();
  }

  // --- write side ---

  void on_reply(http_reply reply, std::uint64_t turn) {
    if (is_closed() || turn_ != turn_state::dispatched || turn != turn_no_) {
      return;  // the stream (if any) is destroyed here: it closes client_disconnect
    }
    const bool persist = !stopping_ && !peer_eof_;
    const bool streamed = writer_.reply(out_, reply.head, reply.stream != nullptr, persist, wall_clock::now());
    if (!streamed) {
      turn_ = turn_state::responding;  // a stream given for HEAD or a body-less status is dropped here
      flush();
      return;
    }
    start_stream(std::move(reply.stream));
  }

  void start_stream(std::unique_ptr<http_stream> stream) {
    turn_ = turn_state::streaming;
    if (opts_.stream_queue_bytes > 0) {
      std::error_code ec;
      const auto cap = std::min<std::size_t>(opts_.stream_queue_bytes, std::size_t{1} << 30U);
      socket_.set_option(asio::socket_base::send_buffer_size(static_cast<int>(cap)), ec);
    }
    stream_ = std::move(stream);
    if (in_.empty()) {
      std::string().swap(in_);  // a held-open stream keeps no buffers it does not need
    }
    std::vector<http_header_view>().swap(fields_);
    if (queue_.empty()) {
      queue_.release();  // nor its request queue's memory (made again for a request after the stream)
    }
    // No read deadline runs while a stream is open: its pending wait (an operation and a
    // reference to this connection) goes now rather than when it would have fired.
    if (deadline_kind_ == deadline_kind::none && deadline_waiting_) {
      deadline_waiting_ = false;
      ++deadline_gen_;
      read_timer_.cancel();
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
    flush();  // the head; the first pull follows once it is written
  }

  // Starts writing out_ unless a write is in progress (on_write flushes again when it ends).
  void flush() {
    if (writing_ || is_closed() || out_.empty()) {
      return;
    }
    wbuf_.swap(out_);
    out_.clear();
    woff_ = 0;
    writing_ = true;
    write_some();
  }

  void write_some() {
    // A whole answer is first written at once; a stream's pulls always take the asynchronous path,
    // so that a stream with many frames ready never recurses pull → write → pull on this stack.
    if (!tls_ && !is_streaming() && write_now()) {
      return;
    }
    const auto gen = ++write_gen_;
    write_timer_.expires_after(opts_.write_timeout);
    write_timer_.async_wait([self = shared_from_this(), gen](const std::error_code& ec) {
      if (ec || gen != self->write_gen_ || self->is_closed() || !self->writing_) {
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

  // Plain TCP: writes what the (non-blocking) socket takes at once. True when that ended the write
  // (all written, or the connection failed and closed); false when the rest waits for the socket,
  // with a write_timeout. An answer that fits the socket's buffer, the usual case, is written with
  // no timer armed and no completion to wait for.
  bool write_now() {
    std::error_code ec;
    const std::size_t n = socket_.write_some(asio::buffer(wbuf_.data() + woff_, wbuf_.size() - woff_), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again || ec == asio::error::interrupted) {
      return false;
    }
    if (ec) {
      close();
      return true;
    }
    woff_ += n;
    if (woff_ < wbuf_.size()) {
      return false;
    }
    write_done();
    return true;
  }

  void on_write(const std::error_code& ec, std::size_t n) {
    if (is_closed()) {
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
    write_done();
  }

  // The write in progress is on the socket.
  void write_done() {
    writing_ = false;
    ++write_gen_;
    write_timer_.cancel();
    if (wbuf_.capacity() > read_chunk_bytes) {
      std::string().swap(wbuf_);
    } else {
      wbuf_.clear();
    }
    if (phase_ == phase::closing) {
      close();
      return;
    }
    if (!out_.empty()) {
      flush();
      return;
    }
    on_drained();
  }

  // Everything queued is on the socket.
  void on_drained() {
    if (is_streaming()) {
      if (turn_ == turn_state::stream_write) {
        turn_ = turn_state::streaming;
        stream_->written();
      }
      pump_stream();
      return;
    }
    if (turn_ == turn_state::responding) {
      finish_turn();
    }
  }

  // Pull → write → written(), strictly alternating; between pulls, wait for the waker or
  // wait_time, whichever is first.
  void pump_stream() {
    if (!is_streaming() || is_closed() || writing_ || !out_.empty()) {
      return;
    }
    const auto now = steady::now();
    if (!stream_->finished()) {
      std::string bytes;
      stream_->pull(now, bytes);
      if (!bytes.empty()) {
        writer_.append_stream(out_, bytes);
        turn_ = turn_state::stream_write;
        ++stream_gen_;
        flush();
        return;
      }
    }
    if (stream_->finished()) {
      finish_stream();
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

  // The stream finished: release it, then end the body (the last chunk, or the close of an
  // HTTP/1.0 connection).
  void finish_stream() {
    stream_.reset();
    ++stream_gen_;
    stream_timer_.cancel();
    turn_ = turn_state::responding;
    if (writer_.end_stream(out_)) {
      flush();
    } else {
      finish_turn();
    }
  }

  // The answer is written: close, or go on with the next request.
  void finish_turn() {
    turn_ = turn_state::idle;
    if (!writer_.keep_alive() || stopping_) {
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
    if (interim_ == interim::deferred) {
      maybe_continue();
    }
    if (!in_.empty()) {
      process_input();
    }
    if (turn_ == turn_state::idle && queue_.empty() && !request_in_progress() && !is_closed()) {
      arm_deadline(deadline_kind::idle, opts_.idle_timeout);
    }
    maybe_read();
  }

  asio_http_server::impl& srv_;
  const asio_http_server_options& opts_;
  tcp::socket socket_;
  asio::any_io_executor ex_;  // the socket's strand: every handler of this connection runs on it
  std::optional<asio::ssl::stream<tcp::socket&>> tls_;
  asio::steady_timer read_timer_;    // header, body and idle deadlines
  asio::steady_timer write_timer_;   // write_timeout of the write in progress
  asio::steady_timer stream_timer_;  // the next pull of a stream without a wake
  asio::steady_timer linger_timer_;  // close_linger
  http_head_parser parser_;
  // The header views of the request being handed over (its head check, then its handler): views
  // into the request, rebuilt for each; kept so that their room is not allocated per request.
  std::vector<http_header_view> fields_;
  // The principal check_head authenticated for the request being read; moved into its queue entry.
  std::optional<principal> head_caller_;
  http_response_writer writer_;
  std::string remote_;
  std::string local_ip_;        // the local address, without port (empty when unknown)
  std::uint16_t local_port_ = 0;
  bool local_loopback_ = true;  // unknown counts as loopback: the Host is checked

  std::unique_ptr<std::array<char, read_chunk_bytes>> tls_buf_;  // TLS reads only
  std::string in_;    // received, not yet parsed
  std::string out_;   // to write after the write in progress
  std::string wbuf_;  // the write in progress
  std::size_t woff_ = 0;
  std::size_t conn_body_bytes_ = 0;      // body bytes this connection's leases hold (before queue_, current_)
  mcpcore::detail::lazy_deque<queued> queue_;  // parsed, waiting for their turn; made by the first request
  body_lease current_{&srv_, &conn_body_bytes_};  // the body being read
  std::unique_ptr<http_stream> stream_;  // set exactly while is_streaming() (until closed)

  phase phase_ = phase::handshake;
  input input_ = input::idle;
  interim interim_ = interim::none;
  turn_state turn_ = turn_state::idle;
  deadline_kind deadline_kind_ = deadline_kind::none;
  steady::time_point deadline_at_{};       // when the deadline of deadline_kind_ falls
  steady::time_point deadline_wait_at_{};  // when the pending wait of read_timer_ fires
  bool deadline_waiting_ = false;          // read_timer_ has a wait pending for the deadline
  bool batching_deadlines_ = false;        // inside process_input: the timer is synchronised at its end

  // Generations. Cancelling a timer does not recall a completion Asio has already queued with
  // success, so each timer handler carries the generation it was armed in and does nothing once
  // the generation has moved on.
  std::uint64_t deadline_gen_ = 0;  // a deadline cleared or re-armed (or the close) voids the old one
  std::uint64_t write_gen_ = 0;     // a write that progressed or ended (or the close) voids its timeout
  std::uint64_t stream_gen_ = 0;    // a pull or the stream's end voids the wait armed before it
  std::uint64_t turn_no_ = 0;       // numbers the turns: a reply for another turn is dropped

  // Facts independent of the states above (each combines with several of them).
  const bool over_limit_;                 // accepted beyond max_connections: 503 and close, read nothing
  bool reading_ = false;                  // a read (or readiness wait) is pending: one at a time
  bool writing_ = false;                  // a write is pending: one at a time (100 Continue in any turn)
  bool peer_eof_ = false;                 // the peer shut its sending side: answer what is owed, then close
  std::stop_source gone_;                 // signalled when the peer leaves (view.disconnected)
  bool stopping_ = false;                 // the server is stopping: no keep-alive, streams closed
  std::atomic<bool> wake_posted_{false};  // a wake is posted and not run yet: coalesces wakes from any thread
};

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Server implementation

// The thread counts left at 0, from the machine's hardware threads (docs/transport.md#threads); a
// machine that does not say counts as one.
asio_http_server_options asio_http_server::impl::sized(asio_http_server_options o) {
  const std::size_t hardware = std::max<std::size_t>(std::thread::hardware_concurrency(), 1);
  if (o.io_threads == 0) {
    o.io_threads = sized_io_threads(hardware);
  }
  if (o.handler_threads == 0) {
    o.handler_threads = sized_handler_threads(hardware);
  }
  if (o.handler_eager_threads == 0) {
    o.handler_eager_threads = sized_handler_eager_threads(hardware, o.io_threads);
  }
  return o;
}

result<void> asio_http_server::impl::start() {
  std::lock_guard stop_lock(stop_mu_);
  if (state_.load() != run_state::idle) {
    return std::unexpected(std::make_error_code(std::errc::operation_not_permitted));
  }
  const auto& o = options_;
  // The thread counts are never 0 here: sized() resolved them when the server was made.
  if (o.max_pipelined == 0 || o.handler_grace.count() <= 0 || o.header_read_timeout.count() <= 0 ||
      o.body_read_timeout.count() <= 0 || o.idle_timeout.count() <= 0 || o.write_timeout.count() <= 0 ||
      o.tick_interval.count() <= 0 || o.shutdown_drain.count() < 0 || o.close_linger.count() < 0 ||
      (endpoint_ == nullptr && !handler_)) {
    return std::unexpected(std::make_error_code(std::errc::invalid_argument));
  }
  std::error_code ec;
  const auto address = asio::ip::make_address(o.address, ec);
  if (ec) {
    // docs/errors.md#one-error-shape: the message names what is wrong.
    return std::unexpected(error(std::make_error_code(std::errc::invalid_argument),
                                 "the listen address '" + o.address + "' is not an IP address"));
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
    const std::error_code code = normalize(ec);
    return std::unexpected(error(code, "cannot listen on " + o.address + " port " + std::to_string(o.port) + ": " +
                                           code.message()));
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
    // docs/sessions.md#shutdown: the calls still running after the drain are cancelled.
    if (endpoint_ != nullptr) {
      endpoint_->cancel_in_flight();
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
  if (endpoint_ != nullptr) {
    endpoint_->cancel_in_flight();  // the drain is over: no handler keeps the pool from stopping
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
  try {
    impl_->exec_binding_ = endpoint.bind_executor(impl_->make_executor());
  } catch (...) {
    delete impl_;  // e.g. a second server on the endpoint (std::logic_error): nothing of this one survives
    throw;
  }
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

std::size_t asio_http_server::buffered_body_bytes() const noexcept { return impl_->buffered_.load(); }

std::uint64_t asio_http_server::body_refusals() const noexcept { return impl_->body_refusals_.load(); }

bool asio_http_server::running() const noexcept { return impl_->state_.load() == impl::run_state::running; }

http_executor asio_http_server::executor() const { return impl_->make_executor(); }

const asio_http_server_options& asio_http_server::options() const noexcept { return impl_->options_; }

}  // namespace transport
MCPCORE_END_NAMESPACE
