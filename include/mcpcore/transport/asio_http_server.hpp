// SPDX-License-Identifier: Apache-2.0
// An HTTP/1.1 server over standalone Asio (optional TLS) that drives an http_endpoint or any handler.
#ifndef MCPCORE_TRANSPORT_ASIO_HTTP_SERVER_HPP
#define MCPCORE_TRANSPORT_ASIO_HTTP_SERVER_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/wire/http.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

MCPCORE_BEGIN_NAMESPACE
namespace transport {

/// Default listen address: loopback only.
inline constexpr std::string_view default_listen_address = "127.0.0.1";
/// Default listen port (0 asks the system for an ephemeral port).
inline constexpr std::uint16_t default_listen_port = 8765;
/// Default number of threads running the network I/O: 0, sized to the machine when the server
/// starts (`sized_io_threads`; docs/transport.md#threads).
inline constexpr std::size_t default_io_threads = 0;
/// Default number of threads running handler (dispatch) work: 0, sized to the machine when the
/// server starts (`sized_handler_threads`).
inline constexpr std::size_t default_handler_threads = 0;

/// The I/O threads of a machine with `hardware` hardware threads: one per four, at least one.
/// More I/O threads than that cost more CPU per request than they add (docs/performance.md).
[[nodiscard]] constexpr std::size_t sized_io_threads(std::size_t hardware) noexcept {
  return hardware / 4 > 0 ? hardware / 4 : 1;
}
/// The handler threads a server with `io_threads` I/O threads on a machine with `hardware`
/// hardware threads wakes at once for a backlog: the hardware threads the I/O threads leave, at
/// least one (docs/transport.md#threads).
[[nodiscard]] constexpr std::size_t sized_handler_eager_threads(std::size_t hardware, std::size_t io_threads) noexcept {
  return hardware > io_threads ? hardware - io_threads : 1;
}
/// Handler threads a server keeps at least, whatever its cores: a call that waits (a tool on a
/// database, a task's detached work until it is cancelled) holds its thread, and with one thread
/// every other request of the server would wait behind it (docs/transport.md#threads).
inline constexpr std::size_t min_sized_handler_threads = 4;
/// The handler threads of a machine with `hardware` hardware threads: the rest of the machine,
/// at least `min_sized_handler_threads`. Tools that wait longer or more often need more: set
/// `handler_threads` to the calls that may wait at once.
[[nodiscard]] constexpr std::size_t sized_handler_threads(std::size_t hardware) noexcept {
  const std::size_t rest = sized_handler_eager_threads(hardware, sized_io_threads(hardware));
  return rest > min_sized_handler_threads ? rest : min_sized_handler_threads;
}
/// Default time a queued handler task waits for a busy handler thread to come back for it before
/// a sleeping thread is woken to take it (docs/transport.md#threads).
inline constexpr std::chrono::microseconds default_handler_grace{1000};
/// Default number of handler threads woken at once for a backlog of tasks: 0, sized to the
/// machine when the server is made (`sized_handler_eager_threads`).
inline constexpr std::size_t default_handler_eager_threads = 0;
/// Default number of handler tasks waiting for a handler thread before the executor refuses more.
inline constexpr std::size_t default_handler_queue_cap = 256;
/// Default number of open connections; further ones are answered 503 and closed.
inline constexpr std::size_t default_max_connections = 1024;
/// Default number of requests parsed and queued on one connection behind the one being answered.
inline constexpr std::size_t default_max_pipelined = 16;
/// Default cap of the bytes of one connection's response waiting for the socket (SSE backpressure).
inline constexpr std::size_t default_stream_queue_bytes = std::size_t{64} * 1024U;
/// Default cap of the request body bytes buffered across the whole server
/// (docs/transport.md#body-buffering): 16 bodies of the largest size at once.
inline constexpr std::size_t default_max_buffered_body_bytes = std::size_t{64} << 20U;
/// Default cap of the request body bytes one connection buffers, pipelined bodies included
/// (docs/transport.md#body-buffering).
inline constexpr std::size_t default_max_connection_buffered_body_bytes = default_max_request_body;
/// Largest chunk of a chunked (streamed) response body.
inline constexpr std::size_t max_chunk_bytes = std::size_t{8} * 1024U;

/// Limits on one request, applied while it is parsed. Each answers a status and closes the
/// connection (`Connection: close`) when exceeded.
struct http_request_limits {
  /// Longest request target, in bytes: 414 beyond.
  std::size_t max_target_bytes = 8192;
  /// Request line plus all header lines, in bytes: 431 beyond.
  std::size_t max_header_bytes = 16384;
  /// Number of header fields: 431 beyond.
  std::size_t max_header_count = 100;
  /// Body bytes (declared `Content-Length`, checked as soon as the head is complete, or the
  /// de-chunked size as it grows): 413 beyond. An `Expect: 100-continue` request declaring more
  /// is answered 413 without reading the body.
  std::size_t max_body_bytes = default_max_request_body;
};

/// TLS settings (TLS 1.2 and later; the files are read once, by `start`).
struct tls_options {
  /// PEM file: the server certificate first, then any intermediates.
  std::string cert_chain_file;
  /// PEM file: the private key of the certificate (unencrypted).
  std::string private_key_file;
};

/// What the server listens on, its threads, limits and timeouts. Every duration must be positive
/// (`shutdown_drain` and `close_linger` may be zero); `start` refuses other values.
struct asio_http_server_options {
  /// Numeric IPv4 or IPv6 address to bind (no name resolution).
  std::string address{default_listen_address};
  /// Port to bind; 0 = ephemeral (read it back with `asio_http_server::port`).
  std::uint16_t port = default_listen_port;
  /// Threads running the network I/O; 0 (the default): `sized_io_threads` of the machine's hardware
  /// threads. No thread is ever held by a connection.
  std::size_t io_threads = default_io_threads;
  /// Threads of the bounded handler executor: the endpoint's dispatch work, and the tasks a custom
  /// handler hands to `asio_http_server::executor`; 0 (the default): `sized_handler_threads` of
  /// the machine's hardware threads.
  std::size_t handler_threads = default_handler_threads;
  /// Handler threads woken at once while tasks queue faster than the awake ones take them; beyond
  /// them, a sleeping thread is woken only for a task that has waited `handler_grace`. Waking a
  /// thread costs more than a short call, so a machine's spare cores are the useful number. 0
  /// (the default): `sized_handler_eager_threads` of the hardware threads and `io_threads`.
  std::size_t handler_eager_threads = default_handler_eager_threads;
  /// How long a queued task waits for a busy handler thread before a sleeping one is woken to take
  /// it: what a call that waits (a tool on a database, a task's detached work) holds back the
  /// calls behind it, for each handler thread it holds. Must be positive.
  std::chrono::microseconds handler_grace = default_handler_grace;
  /// Tasks waiting for a handler thread; when full the executor returns false (the endpoint then
  /// answers -32603 with `retry::dispatch_queue_full`).
  std::size_t handler_queue_cap = default_handler_queue_cap;
  /// Open connections at most; a connection accepted beyond it is answered `503` with
  /// `Connection: close` and `Retry-After: 1`, then closed, without reading its request (over
  /// TLS it is closed at once, without a handshake). Such connections count in `connections()`
  /// until closed.
  std::size_t max_connections = default_max_connections;
  /// Per-request parse limits (414 / 431 / 413).
  http_request_limits limits{};
  /// Request body bytes buffered across the whole server (docs/transport.md#body-buffering): a
  /// body's room is taken when its head has passed the checks, before `100 Continue` and before
  /// any of it is read (its declared `Content-Length`; a chunked body's as it arrives), and given
  /// back when the request is handed to the handler or the connection closes. A body that does not
  /// fit is answered `503` with `Retry-After: 1` and `Connection: close`, without reading it.
  std::size_t max_buffered_body_bytes = default_max_buffered_body_bytes;
  /// Request body bytes one connection buffers, pipelined bodies waiting behind the request being
  /// answered included. A body always fits when the connection buffers no other; beside others
  /// only within this cap (a chunked one only alone): otherwise the connection stops reading until
  /// the requests ahead are handed over (backpressure; never a refusal).
  std::size_t max_connection_buffered_body_bytes = default_max_connection_buffered_body_bytes;
  /// For a server with a plain handler (an endpoint's server runs `http_endpoint::check_head`
  /// first, then this): called with a request's head as soon as it is complete (`body` empty,
  /// `declared_length` and `chunked` set), on an I/O thread (it must not block). An answer is
  /// written in turn with `Connection: close` and the connection closes without reading the body;
  /// `std::nullopt` lets the request go on (docs/http.md#head-checks).
  std::function<std::optional<http_response>(const http_request_view&)> head_check{};
  /// The whole request head must arrive within this time from the first byte of the request (or
  /// from the end of the previous response); otherwise the connection is closed without answer
  /// (slowloris).
  std::chrono::milliseconds header_read_timeout{std::chrono::seconds{10}};
  /// The whole body must arrive within this time from the end of the head; otherwise the
  /// connection is closed without answer.
  std::chrono::milliseconds body_read_timeout{std::chrono::seconds{30}};
  /// A keep-alive connection with no request in progress is closed after this time.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds{60}};
  /// A write that makes no progress for this long closes the connection (a stream then sees
  /// `write_failed`).
  std::chrono::milliseconds write_timeout{std::chrono::seconds{30}};
  /// Requests parsed and queued on one connection behind the one being answered (pipelining);
  /// the connection stops reading while the queue is full (answers are always in order).
  std::size_t max_pipelined = default_max_pipelined;
  /// Outbound bound of a streaming connection: a stream is pulled again only once the bytes of
  /// its previous pull are on the socket, and the socket's send buffer is capped at this many
  /// bytes (`SO_SNDBUF`) when a stream starts, so a slow reader's backlog stays in the session
  /// layer's bounded queue (which drops its oldest frames and reports them). 0: the system's
  /// send buffer is left as is.
  std::size_t stream_queue_bytes = default_stream_queue_bytes;
  /// Interval of `http_endpoint::tick` (endpoint mode only).
  std::chrono::milliseconds tick_interval{std::chrono::seconds{3}};
  /// How long `stop` lets live responses flush after `http_endpoint::begin_shutdown` before it
  /// closes every socket (a write already in progress may add up to `write_timeout`).
  std::chrono::milliseconds shutdown_drain{std::chrono::seconds{3}};
  /// After the last response of a connection that closes (`Connection: close`, a parse error, an
  /// over-limit connection), the server stops sending and discards what the client still sends
  /// for up to this long before closing, so the client reads the response instead of a reset.
  std::chrono::milliseconds close_linger{std::chrono::seconds{2}};
  /// TLS on every connection when set; plain HTTP otherwise.
  std::optional<tls_options> tls{};
};

/// An HTTP/1.1 server (keep-alive, pipelining answered in order, optional TLS) over standalone
/// Asio, driving an `http_endpoint` or a custom handler.
///
/// Complete responses are written with `Content-Length`, streams (`http_reply::stream`) with
/// `Transfer-Encoding: chunked`, each pull's bytes in chunks of at most `max_chunk_bytes`. The
/// server adds `Date`, `Connection`, `X-Content-Type-Options: nosniff`, and on streams
/// `Cache-Control: no-cache` and `X-Accel-Buffering: no`, each unless the reply already has it.
/// A request that fails to parse is answered with the parse status (400, 413, 414, 431, 501,
/// 505) and `Connection: close`, and the connection is closed.
///
/// @par Threading
/// `io_threads` threads run all network I/O; each connection's work is serialised (an Asio
/// strand). The handler (or `http_endpoint::handle`) is called on an I/O thread and must not
/// block: slow work goes to `executor()` (the endpoint does this itself through the executor the
/// server installs). The completion may be called from any thread, exactly once. Streams are
/// pulled on their connection's strand; no thread is held by an idle or slow stream.
///
/// @par Shutdown
/// `stop` stops accepting, calls `http_endpoint::begin_shutdown` (every live stream closes with
/// `session_terminated`; calls parked on a client's answer end at once), lets responses flush for
/// up to `shutdown_drain` (plus `write_timeout` for a write in progress), then calls
/// `http_endpoint::cancel_in_flight` (the stop token of every call still running fires), closes
/// every socket, then runs the handler tasks already queued to
/// completion (they are dispatches already admitted: each completion must still be called) and
/// refuses new ones, and joins every thread. The server cannot be started again.
///
/// @par Thread safety
/// `start`, `run` and `stop` must not be called concurrently with each other, nor from a server
/// thread (use `request_stop` there); `request_stop`, `port`, `connections`, `running` and
/// `executor` may be called from any thread.
class asio_http_server {
 public:
  /// Answers one request by calling the completion exactly once (from any thread). The request
  /// view is valid only during the call.
  using handler = std::function<void(const http_request_view&, http_completion)>;

  /// A server calling `h` for every request.
  MCPCORE_API explicit asio_http_server(handler h, asio_http_server_options options = {});
  /// A server driving `endpoint` (which must outlive the server): binds its bounded handler
  /// executor with `http_endpoint::bind_executor` for its own lifetime (so it must be constructed
  /// before the endpoint handles its first request; a second server on the same endpoint throws
  /// `std::logic_error`), calls `http_endpoint::tick` every `tick_interval` while running, and
  /// `http_endpoint::begin_shutdown` on stop.
  MCPCORE_API explicit asio_http_server(http_endpoint& endpoint, asio_http_server_options options = {});
  /// Stops the server (as `stop`) if it is running.
  MCPCORE_API ~asio_http_server();
  asio_http_server(const asio_http_server&) = delete;
  asio_http_server& operator=(const asio_http_server&) = delete;
  asio_http_server(asio_http_server&&) = delete;
  asio_http_server& operator=(asio_http_server&&) = delete;

  /// Binds, listens (loading the TLS files if configured) and starts the I/O and handler threads;
  /// returns at once. Errors: the bind / listen / TLS error, `std::errc::invalid_argument` for a
  /// bad address or option, `std::errc::operation_not_permitted` when already started or stopped.
  MCPCORE_API result<void> start();
  /// `start`, then blocks until `request_stop` or `stop` is called (from another thread), then
  /// stops gracefully and returns. Signal handling is the application's job (call `request_stop`
  /// from its signal-watching thread).
  MCPCORE_API result<void> run();
  /// Asks a running `run` to stop and return; non-blocking, callable from any thread (also from a
  /// handler). Without `run`, it starts the graceful shutdown; `stop` or the destructor joins.
  MCPCORE_API void request_stop() noexcept;
  /// Stops gracefully (see the class comment) and joins every thread; idempotent.
  MCPCORE_API void stop() noexcept;

  /// The bound port after a successful `start` (the ephemeral one for port 0), else 0.
  [[nodiscard]] MCPCORE_API std::uint16_t port() const noexcept;
  /// Open connections (accepted and not yet fully closed), over-limit ones included.
  [[nodiscard]] MCPCORE_API std::size_t connections() const noexcept;
  /// Request body bytes buffered now, across every connection (a gauge; at most
  /// `max_buffered_body_bytes`; docs/transport.md#body-buffering).
  [[nodiscard]] MCPCORE_API std::size_t buffered_body_bytes() const noexcept;
  /// Request bodies refused `503` because they did not fit in `max_buffered_body_bytes`, since
  /// start (a counter).
  [[nodiscard]] MCPCORE_API std::uint64_t body_refusals() const noexcept;
  /// Whether the server is started and not yet stopping.
  [[nodiscard]] MCPCORE_API bool running() const noexcept;
  /// The bounded handler executor: runs a task on a handler thread, or returns false (running
  /// nothing) when its queue is full or the server is stopped. Valid for the server's lifetime
  /// and beyond (it then returns false).
  [[nodiscard]] MCPCORE_API http_executor executor() const;
  [[nodiscard]] MCPCORE_API const asio_http_server_options& options() const noexcept;

  struct impl;

 private:
  impl* impl_;
};

}  // namespace transport
MCPCORE_END_NAMESPACE

#endif  // MCPCORE_TRANSPORT_ASIO_HTTP_SERVER_HPP
