// SPDX-License-Identifier: Apache-2.0
// The stdio transport: a reader, a pool of call workers, one serialized writer.
#ifndef MCPCORE_IMPL_STDIO_IPP
#define MCPCORE_IMPL_STDIO_IPP

#include <mcpcore/transport/stdio.hpp>
#include <mcpcore/wire/correlation_id.hpp>
#include <mcpcore/wire/error.hpp>
#include <mcpcore/wire/retry.hpp>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

// Writes whole lines to a file descriptor, one at a time.
class fd_line_sink final : public message_sink {
 public:
  explicit fd_line_sink(int fd) noexcept : fd_(fd) {}
  bool send(std::string_view message) noexcept override {
    std::lock_guard lock{mu_};
    if (broken_) return false;
    if (!write_all(message) || !write_all("\n")) {
      broken_ = true;
      return false;
    }
    return true;
  }

 private:
  bool write_all(std::string_view data) noexcept {
    while (!data.empty()) {
      const auto n = ::write(fd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  int fd_;
  std::mutex mu_;
  bool broken_ = false;
};

}  // namespace detail

struct stdio_transport::impl {
  struct job {
    json::document doc;
    message msg;
  };

  server& srv;
  principal caller;
  stdio_options options;
  peer client;
  std::unique_ptr<detail::fd_line_sink> sink;
  std::mutex mu;
  std::condition_variable work_cv;
  std::condition_variable idle_cv;
  std::deque<job> queue;
  std::size_t busy = 0;
  bool closing = false;
  std::stop_source stop;
  int wake[2] = {-1, -1};

  impl(server& s, principal p, stdio_options o) : srv(s), caller(std::move(p)), options(o) {}

  void worker() {
    std::string out;
    for (;;) {
      std::optional<job> j;
      {
        std::unique_lock lock{mu};
        work_cv.wait(lock, [&] { return closing || !queue.empty(); });
        if (queue.empty()) return;
        j.emplace(std::move(queue.front()));
        queue.pop_front();
        ++busy;
      }
      out.clear();
      const dispatch_context ctx{caller, &client, sink.get(), stop.get_token()};
      bool reply = false;
      try {
        reply = srv.handle(j->msg, ctx, out);
      } catch (...) {
        // server::handle contains handler faults; this catches allocation failure. Answer it.
        out.clear();
        const auto cid = next_correlation_id();
        error_data d;
        d.correlation_id = cid.view();
        d.remediation = "The server ran out of resources while handling the request; retry later.";
        write_error_response(out, j->msg.id, errc::internal_error, {}, d);
        reply = true;
      }
      if (reply) (void)sink->send(out);
      j.reset();
      {
        std::lock_guard lock{mu};
        --busy;
      }
      idle_cv.notify_all();
    }
  }

  void answer_now(const std::string& text) { (void)sink->send(text); }

  void dispatch_line(std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) return;  // blank lines are not messages
    json::parse_options po;
    po.max_bytes = options.max_message_bytes;
    po.max_depth = options.max_depth;
    po.retain_bytes = 0;
    job j{json::document{po}, {}};
    auto parsed = parse_message(j.doc, line);
    std::string out;
    if (!parsed) {
      const auto cid = next_correlation_id();
      write_error_response(out, parsed.error(), cid.view());
      answer_now(out);
      return;
    }
    j.msg = *parsed;
    if (j.msg.kind != message_kind::request) {
      // Responses and notifications (cancellation) are handled at once, never queued behind calls.
      if (j.msg.kind == message_kind::notification && j.msg.method == "notifications/cancelled") {
        drop_queued(j.msg.params["requestId"]);
      }
      const dispatch_context ctx{caller, &client, sink.get(), stop.get_token()};
      (void)srv.handle(j.msg, ctx, out);
      return;
    }
    {
      std::lock_guard lock{mu};
      if (queue.size() < options.max_queued) {
        queue.push_back(std::move(j));
        work_cv.notify_one();
        return;
      }
    }
    const auto cid = next_correlation_id();
    error_data d;
    d.correlation_id = cid.view();
    d.retry_after_ms = retry::dispatch_queue_full;
    d.remediation = "Every worker is busy and the queue is full; wait for answers before sending more requests.";
    write_error_response(out, j.msg.id, errc::internal_error, "Server busy", d);
    answer_now(out);
  }

  // A cancelled request that no worker has started is dropped: it never runs and is never
  // answered (MCP: the receiver of a cancellation sends no response).
  void drop_queued(json::value rid) {
    std::optional<request_id_view> id;
    if (rid.is_string()) {
      id.emplace(rid.as_string());
    } else if (auto n = rid.is_integer() ? rid.to_int64() : std::nullopt) {
      id.emplace(*n);
    }
    if (!id) return;
    std::lock_guard lock{mu};
    std::erase_if(queue, [&](const job& q) { return q.msg.id && *q.msg.id == *id; });
  }

  void too_large() {
    std::string out;
    const auto cid = next_correlation_id();
    error_data d;
    d.correlation_id = cid.view();
    d.remediation = "Send messages no longer than the server's limit (4 MiB by default), one per line.";
    write_error_response(out, std::nullopt, errc::invalid_request, "Message too large", d);
    answer_now(out);
  }
};

MCPCORE_DECL stdio_transport::stdio_transport(server& s, principal caller, stdio_options options)
    : impl_(new impl(s, std::move(caller), options)) {
  if (impl_->options.workers == 0) impl_->options.workers = 1;
  if (::pipe(impl_->wake) == 0) {
    (void)::fcntl(impl_->wake[0], F_SETFD, FD_CLOEXEC);
    (void)::fcntl(impl_->wake[1], F_SETFD, FD_CLOEXEC);
  }
}

MCPCORE_DECL stdio_transport::~stdio_transport() {
  for (int fd : impl_->wake) {
    if (fd >= 0) ::close(fd);
  }
  delete impl_;
}

MCPCORE_DECL peer& stdio_transport::client() noexcept { return impl_->client; }

MCPCORE_DECL void stdio_transport::stop() noexcept {
  impl_->stop.request_stop();
  if (impl_->wake[1] >= 0) {
    const char c = 1;
    (void)!::write(impl_->wake[1], &c, 1);
  }
}

MCPCORE_DECL bool stdio_transport::notify_resource_updated(std::string_view uri) {
  detail::fd_line_sink* sink = nullptr;
  {
    // `run` installs the sink on its own thread, possibly while another thread notifies.
    std::lock_guard lock{impl_->mu};
    sink = impl_->sink.get();
  }
  return sink != nullptr && mcpcore::notify_resource_updated(impl_->client, *sink, uri);
}

MCPCORE_DECL int stdio_transport::run(int in_fd, int out_fd) {
  auto& st = *impl_;
  {
    std::lock_guard lock{st.mu};
    st.sink = std::make_unique<detail::fd_line_sink>(out_fd);
    st.closing = false;
  }
  std::vector<std::thread> workers;
  workers.reserve(st.options.workers);
  for (std::size_t i = 0; i < st.options.workers; ++i) workers.emplace_back([&st] { st.worker(); });

  int status = 0;
  std::string pending;        // the incomplete line so far
  bool discarding = false;    // skipping the rest of an over-long line
  std::vector<char> buf(std::size_t{64} << 10);
  for (;;) {
    if (st.stop.stop_requested()) break;
    pollfd fds[2] = {{in_fd, POLLIN, 0}, {st.wake[0], POLLIN, 0}};
    const int ready = ::poll(fds, st.wake[0] >= 0 ? 2 : 1, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      status = 1;
      break;
    }
    if (fds[1].revents != 0 && st.wake[0] >= 0) break;  // stop()
    if (fds[0].revents == 0) continue;
    const auto n = ::read(in_fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      status = 1;
      break;
    }
    if (n == 0) break;  // end of input
    std::string_view chunk{buf.data(), static_cast<std::size_t>(n)};
    while (!chunk.empty()) {
      const auto nl = chunk.find('\n');
      const auto piece = chunk.substr(0, nl);
      if (!discarding) {
        if (pending.size() + piece.size() > st.options.max_message_bytes) {
          discarding = true;
          pending.clear();
          pending.shrink_to_fit();
          st.too_large();
        } else {
          pending.append(piece);
        }
      }
      if (nl == std::string_view::npos) break;
      if (!discarding) st.dispatch_line(pending);
      discarding = false;
      pending.clear();
      if (pending.capacity() > (std::size_t{1} << 20)) pending.shrink_to_fit();
      chunk.remove_prefix(nl + 1);
    }
  }
  if (!discarding && !pending.empty() && !st.stop.stop_requested()) st.dispatch_line(pending);  // last line without '\n'

  // Shutdown: no answer from the client can arrive any more.
  st.client.input_closed();
  {
    std::unique_lock lock{st.mu};
    if (!st.stop.stop_requested()) {
      st.idle_cv.wait_for(lock, st.options.drain_timeout, [&] { return st.queue.empty() && st.busy == 0; });
    }
    st.closing = true;
    st.queue.clear();  // requests never started are dropped with the connection
  }
  st.stop.request_stop();
  st.client.close();
  st.work_cv.notify_all();
  for (auto& t : workers) t.join();
  return status;
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_STDIO_IPP
