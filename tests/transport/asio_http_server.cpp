// SPDX-License-Identifier: Apache-2.0
// Tests of the Asio HTTP/1.1 server over loopback: framing, keep-alive, pipelining order, every
// request limit, slow and hostile clients, SSE streams, graceful stop and TLS.
#include <mcpcore/transport/asio_http_server.hpp>

#include <doctest/doctest.h>

#include "http_test_support.hpp"
#include "support/process.hpp"

#include <mcpcore/session/session_metrics.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using mcpcore::close_reason;
using mcpcore::http_completion;
using mcpcore::http_header;
using mcpcore::http_reply;
using mcpcore::http_request_view;
using mcpcore::http_stream;
using mcpcore::transport::asio_http_server;
using mcpcore::transport::asio_http_server_options;
using mcpcore::transport::default_handler_grace;
using mcpcore::transport::sized_handler_eager_threads;
using mcpcore::transport::sized_handler_threads;
using mcpcore::transport::sized_io_threads;
using test_http::eventually;
using test_http::raw_client;

namespace {

asio_http_server_options test_options() {
  asio_http_server_options o;
  o.port = 0;
  o.io_threads = 2;
  o.handler_threads = 2;
  return o;
}

http_reply text_reply(int status, std::string body) {
  http_reply r;
  r.head.status = status;
  r.head.headers.push_back({"Content-Type", "text/plain"});
  r.head.body = std::move(body);
  return r;
}

// Answers "<method> <target> [<body>]" at once.
void echo_handler(const http_request_view& req, const http_completion& done) {
  std::string s(req.method);
  s += ' ';
  s += req.target;
  if (!req.body.empty()) {
    s += " [";
    s += req.body;
    s += ']';
  }
  done(text_reply(200, std::move(s)));
}

std::string get(std::string_view target, std::string_view extra = {}) {
  std::string s = "GET ";
  s += target;
  s += " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  s += extra;
  s += "\r\n";
  return s;
}

std::string post(std::string_view target, std::string_view body, std::string_view extra = {}) {
  std::string s = "POST ";
  s += target;
  s += " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ";
  s += std::to_string(body.size());
  s += "\r\n";
  s += extra;
  s += "\r\n";
  s += body;
  return s;
}

// Threads a test uses to answer later; joined before the server goes away.
struct later {
  std::mutex mu;
  std::vector<std::jthread> threads;
  void run(std::function<void()> f) {
    std::lock_guard lock(mu);
    threads.emplace_back(std::move(f));
  }
  ~later() {
    std::lock_guard lock(mu);
    threads.clear();
  }
};

// --- a scripted http_stream ---

struct stream_state {
  std::mutex mu;
  std::deque<std::string> pending;
  bool finish_when_empty = false;
  bool finished = false;
  bool endless = false;  // every pull yields endless_bytes
  std::size_t endless_bytes = 65536;
  std::optional<close_reason> closed;
  std::function<void()> waker;
  std::chrono::milliseconds wait{std::chrono::hours{1}};
  std::atomic<int> pulls{0};
  std::atomic<int> written{0};
  std::atomic<int> write_failed{0};
  std::atomic<bool> destroyed{false};

  void wake() {
    std::function<void()> w;
    {
      std::lock_guard lock(mu);
      w = waker;
    }
    if (w) w();
  }
  void push(std::string s) {
    {
      std::lock_guard lock(mu);
      pending.push_back(std::move(s));
    }
    wake();
  }
  void finish() {
    {
      std::lock_guard lock(mu);
      finish_when_empty = true;
    }
    wake();
  }
  std::optional<close_reason> close_seen() {
    std::lock_guard lock(mu);
    return closed;
  }
};

class scripted_stream final : public http_stream {
 public:
  explicit scripted_stream(std::shared_ptr<stream_state> s) : s_(std::move(s)) {}
  ~scripted_stream() override { s_->destroyed = true; }
  scripted_stream(const scripted_stream&) = delete;
  scripted_stream& operator=(const scripted_stream&) = delete;

  void on_ready(std::function<void()> waker) override {
    std::lock_guard lock(s_->mu);
    s_->waker = std::move(waker);
  }
  void pull(std::chrono::steady_clock::time_point, std::string& out) noexcept override {
    std::lock_guard lock(s_->mu);
    ++s_->pulls;
    if (s_->finished) return;
    if (s_->closed) {
      out += "closed:";
      out += mcpcore::to_string(*s_->closed);
      s_->finished = true;
      return;
    }
    if (s_->endless) {
      out.append(s_->endless_bytes, 'x');
      return;
    }
    while (!s_->pending.empty()) {
      out += s_->pending.front();
      s_->pending.pop_front();
    }
    if (s_->finish_when_empty) s_->finished = true;
  }
  std::chrono::milliseconds wait_time(std::chrono::steady_clock::time_point) const noexcept override {
    std::lock_guard lock(s_->mu);
    return s_->wait;
  }
  void written() noexcept override { ++s_->written; }
  void write_failed() noexcept override {
    ++s_->write_failed;
    std::lock_guard lock(s_->mu);
    s_->finished = true;
  }
  bool finished() const noexcept override {
    std::lock_guard lock(s_->mu);
    return s_->finished;
  }
  void close(close_reason reason) noexcept override {
    {
      std::lock_guard lock(s_->mu);
      if (!s_->closed) s_->closed = reason;
    }
    s_->wake();
  }

 private:
  std::shared_ptr<stream_state> s_;
};

// A stream that ignores close and never finishes.
class deaf_stream final : public http_stream {
 public:
  explicit deaf_stream(std::shared_ptr<std::atomic<bool>> failed) : failed_(std::move(failed)) {}
  void on_ready(std::function<void()>) override {}
  void pull(std::chrono::steady_clock::time_point, std::string&) noexcept override {}
  std::chrono::milliseconds wait_time(std::chrono::steady_clock::time_point) const noexcept override {
    return std::chrono::hours{1};
  }
  void written() noexcept override {}
  void write_failed() noexcept override { *failed_ = true; }
  bool finished() const noexcept override { return false; }
  void close(close_reason) noexcept override {}

 private:
  std::shared_ptr<std::atomic<bool>> failed_;
};

http_reply stream_reply(const std::shared_ptr<stream_state>& s) {
  http_reply r;
  r.head.status = 200;
  r.head.headers.push_back({"Content-Type", "text/event-stream"});
  r.stream = std::make_unique<scripted_stream>(s);
  return r;
}

}  // namespace

TEST_CASE("asio server: a complete response carries Content-Length, Date, nosniff and keep-alive") {
  asio_http_server srv(echo_handler, test_options());
  REQUIRE(srv.start());
  REQUIRE(srv.port() != 0);
  CHECK(srv.running());
  raw_client c(srv.port());
  REQUIRE(c.connected());
  REQUIRE(c.send(get("/hello?x=1")));
  auto m = c.read_response();
  REQUIRE(m);
  CHECK(m->status == 200);
  CHECK(m->body == "GET /hello?x=1");
  CHECK(m->header("Content-Length") == "14");
  CHECK(m->header("Date").has_value());
  CHECK(m->header("X-Content-Type-Options") == "nosniff");
  CHECK(m->header("Connection") == "keep-alive");
  CHECK(m->header("Content-Type") == "text/plain");
  CHECK_FALSE(m->header("Transfer-Encoding").has_value());
  CHECK_FALSE(m->header("Cache-Control").has_value());
  srv.stop();
  CHECK_FALSE(srv.running());
  CHECK(srv.connections() == 0);
}

TEST_CASE("asio server: the handler sees method, target, headers, body, remote and local") {
  std::mutex mu;
  std::string seen;
  asio_http_server srv(
      [&](const http_request_view& req, const http_completion& done) {
        {
          std::lock_guard lock(mu);
          seen = std::string(req.method) + "|" + std::string(req.target) + "|" + std::string(req.body) + "|" +
                 std::string(req.header("x-test").value_or("none")) + "|" + std::string(req.local.address) + ":" +
                 std::to_string(req.local.port) + (req.local.loopback ? "|loopback" : "|public");
          CHECK(req.remote.starts_with("127.0.0.1:"));
        }
        done(text_reply(200, "ok"));
      },
      test_options());
  REQUIRE(srv.start());
  raw_client c(srv.port());
  REQUIRE(c.send(post("/p", "abc", "X-Test:  value \r\n")));
  auto m = c.read_response();
  REQUIRE(m);
  CHECK(m->status == 200);
  std::lock_guard lock(mu);
  CHECK(seen == "POST|/p|abc|value|127.0.0.1:" + std::to_string(srv.port()) + "|loopback");
}

TEST_CASE("asio server: keep-alive serves several requests on one connection, Connection: close ends it") {
  asio_http_server srv(echo_handler, test_options());
  REQUIRE(srv.start());
  raw_client c(srv.port());
  for (int i = 0; i < 3; ++i) {
    REQUIRE(c.send(get("/r" + std::to_string(i))));
    auto m = c.read_response();
    REQUIRE(m);
    CHECK(m->body == "GET /r" + std::to_string(i));
  }
  REQUIRE(c.send(get("/last", "Connection: close\r\n")));
  auto m = c.read_response();
  REQUIRE(m);
  CHECK(m->header("Connection") == "close");
  CHECK(c.wait_closed());
  CHECK(eventually([&] { return srv.connections() == 0; }));
}

TEST_CASE("asio server: HTTP/1.0 closes after the response unless keep-alive is asked") {
  asio_http_server srv(echo_handler, test_options());
  REQUIRE(srv.start());
  {
    raw_client c(srv.port());
    REQUIRE(c.send("GET /a HTTP/1.0\r\n\r\n"));
    auto m = c.read_response();
    REQUIRE(m);
    CHECK(m->status == 200);
    CHECK(m->header("Connection") == "close");
    CHECK(c.wait_closed());
  }
  {
    raw_client c(srv.port());
    REQUIRE(c.send("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.0\r\n\r\n"));
    auto m = c.read_response();
    REQUIRE(m);
    CHECK(m->header("Connection") == "keep-alive");
    auto m2 = c.read_response();
    REQUIRE(m2);
    CHECK(m2->body == "GET /b");
    CHECK(c.wait_closed());
  }
}

TEST_CASE("asio server: pipelined requests are answered strictly in order") {
  later defer;
  asio_http_server srv(
      [&](const http_request_view& req, const http_completion& done) {
        std::string t(req.target);
        if (t == "/slow") {  // answered last in time, first on the wire
          defer.run([done, t] {
            std::this_thread::sleep_for(100ms);
            done(text_reply(200, t));
          });
          return;
        }
        done(text_reply(200, t));
      },
      test_options());
  REQUIRE(srv.start());
  raw_client c(srv.port());
  REQUIRE(c.send(get("/slow") + post("/second", "xyz") + get("/third")));
  auto a = c.read_response();
  auto b = c.read_response();
  auto d = c.read_response();
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(d);
  CHECK(a->body == "/slow");
  CHECK(b->body == "/second");
  CHECK(d->body == "/third");
  srv.stop();
}

TEST_CASE("asio server: max_pipelined bounds the queue but every request is still answered") {
  auto o = test_options();
  o.max_pipelined = 1;
  asio_http_server srv(echo_handler, o);
  REQUIRE(srv.start());
  raw_client c(srv.port());
  std::string all;
  for (int i = 0; i < 5; ++i) all += get("/" + std::to_string(i));
  REQUIRE(c.send(all));
  for (int i = 0; i < 5; ++i) {
    auto m = c.read_response();
    REQUIRE(m);
    CHECK(m->body == "GET /" + std::to_string(i));
  }
}

TEST_CASE("asio server: a body longer than declared is the next pipelined request") {
  asio_http_server srv(echo_handler, test_options());
  REQUIRE(srv.start());
  raw_client c(srv.port());
  REQUIRE(c.send("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc" + get("/b")));
  auto m1 = c.read_response();
  auto m2 = c.read_response();
  REQUIRE(m1);
  REQUIRE(m2);
  CHECK(m1->body == "POST /a [abc]");
  CHECK(m2->body == "GET /b");
}

TEST_CASE("asio server: a chunked request body reaches the handler de-chunked") {
  asio_http_server srv(echo_handler, test_options());
  REQUIRE(srv.start());
  raw_client c(srv.port());
  REQUIRE(c.send("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"));
  auto m = c.read_response();
  REQUIRE(m);
  CHECK(m->status == 200);
  CHECK(m->body == "POST /c [abcde]");
}

TEST_CASE("asio server: invalid chunked encoding answers 400 with Connection: close and closes") {
  asio_http_server srv(echo_handler, test_options());
  REQUIRE(srv.start());
  raw_client c(srv.port());
  REQUIRE(c.send("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"));
  auto m = c.read_response();
  REQUIRE(m);
  CHECK(m->status == 400);
  CHECK(m->header("Connection") == "close");
  CHECK(m->header("X-Content-Type-Options") == "nosniff");
  CHECK(c.wait_closed());
  CHECK(eventually([&] { return srv.connections() == 0; }));
}

TEST_CASE("asio server: a parse error is answered after the responses owed before it") {
  asio_http_server srv(echo_handler, test_options());
  REQUIRE(srv.start());
  raw_client c(srv.port());
  REQUIRE(c.send(get("/ok") + "GET / HTTP/2.0\r\n\r\n"));
  auto m1 = c.read_response();
  REQUIRE(m1);
  CHECK(m1->status == 200);
  auto m2 = c.read_response();
  REQUIRE(m2);
  CHECK(m2->status == 505);
  CHECK(c.wait_closed());
}

TEST_CASE("asio server: methods the handler does not serve reach it (it answers 405)") {
  asio_http_server srv(
      [](const http_request_view& req, const http_completion& done) {
        if (req.method == "PROPFIND" || req.method == "PATCH") {
          http_reply r = text_reply(405, "no");
          r.head.headers.push_back({"Allow", "GET, POST, DELETE"});
          done(std::move(r));
          return;
        }
        done(text_reply(200, "ok"));
      },
      test_options());
  REQUIRE(srv.start());
  raw_client c(srv.port());
  REQUIRE(c.send("PROPFIND /pot HTTP/1.1\r\nHost: x\r\n\r\nPATCH /pot HTTP/1.1\r\nHost: x\r\n\r\n"));
  for (int i = 0; i < 2; ++i) {
    auto m = c.read_response();
    REQUIRE(m);
    CHECK(m->status == 405);
    CHECK(m->header("Allow") == "GET, POST, DELETE");
  }
  // A method outside libhttp-parser's table is a parse failure: answered by the parser's status.
  raw_client d(srv.port());
  REQUIRE(d.send("BREW /pot HTTP/1.1\r\nHost: x\r\n\r\n"));
  auto m = d.read_response();
  REQUIRE(m);
  CHECK(m->status == 501);
  CHECK(m->header("Connection") == "close");
  CHECK(d.wait_closed());
}

TEST_CASE("asio server: an unrecognised method answers 501 with Connection: close and closes") {
  std::atomic<int> calls{0};
  asio_http_server srv(
      [&calls](const http_request_view&, const http_completion& done) {
        ++calls;
        done(text_reply(200, "ok"));
      },
      test_options());
  REQUIRE(srv.start());
  raw_client c(srv.port());
  // The method arrives in pieces: the parser waits for the SP that ends it (RFC 9110 §9.1).
  REQUIRE(c.send("FO"));
  std::this_thread::sleep_for(20ms);
  REQUIRE(c.send("O /mcp HTTP/1.1\r\nHost: x\r\n\r\n"));
  auto m = c.read_response();
  REQUIRE(m);
  CHECK(m->status == 501);
  CHECK(m->header("Connection") == "close");
  CHECK(m->header("Content-Type") == "text/plain; charset=utf-8");
  CHECK(m->body == "method not implemented\n");
  CHECK(c.wait_closed());
  CHECK(calls.load() == 0);  // never reaches the handler
  CHECK(eventually([&] { return srv.connections() == 0; }));
}

TEST_CASE("asio server: HEAD gets the head only, 204 carries no Content-Length") {
  asio_http_server srv(
      [](const http_request_view& req, const http_completion& done) {
        done(text_reply(req.target == "/none" ? 204 : 200, req.target == "/none" ? "" : "body!"));
      },
      test_options());
  REQUIRE(srv.start());
  raw_client c(srv.port());
  REQUIRE(c.send("HEAD /x HTTP/1.1\r\nHost: x\r\n\r\n"));
  auto m = c.read_response(test_http::default_wait, true);
  REQUIRE(m);
  CHECK(m->header("Content-Length") == "5");
  REQUIRE(c.send(get("/none")));
  auto n = c.read_response();
  REQUIRE(n);
  CHECK(n->status == 204);
  CHECK_FALSE(n->header("Content-Length").has_value());
  REQUIRE(c.send(get("/y")));  // nothing of the HEAD body was written: the framing still holds
  auto y = c.read_response();
  REQUIRE(y);
  CHECK(y->body == "body!");
}

TEST_CASE("asio server: the handler's framing and Connection headers are replaced, unsafe fields dropped") {
  asio_http_server srv(
      [](const http_request_view&, const http_completion& done) {
        http_reply r = text_reply(200, "abc");
        r.head.headers.push_back({"Content-Length", "999"});
        r.head.headers.push_back({"X-Bad", "a\r\nInjected: yes"});
        r.head.headers.push_back({"X-Content-Type-Options", "nosniff"});
        done(std::move(r));
      },
      test_options());
  REQUIRE(srv.start());
  raw_client c(srv.port());
  REQUIRE(c.send(get("/")));
  auto m = c.read_response();
  REQUIRE(m);
  CHECK(m->header("Content-Length") == "3");
  CHECK(m->count("Content-Length") == 1);
  CHECK(m->count("X-Content-Type-Options") == 1);
  CHECK_FALSE(m->header("Injected").has_value());
  CHECK_FALSE(m->header("X-Bad").has_value());
  CHECK(m->body == "abc");
}

TEST_CASE("asio server: a throwing handler is answered 500, a handler answering twice is answered once") {
  asio_http_server srv(
      [](const http_request_view& req, const http_completion& done) {
        if (req.target == "/throw") throw std::runtime_error("boom");
        done(text_reply(200, "first"));
        done(text_reply(200, "second"));
      },
      test_options());
  REQUIRE(srv.start());
  raw_client c(srv.port());
  REQUIRE(c.send(get("/throw") + get("/twice") + get("/again")));
  auto a = c.read_response();
  REQUIRE(a);
  CHECK(a->status == 500);
  auto b = c.read_response();
  REQUIRE(b);
  CHECK(b->body == "first");
  auto d = c.read_response();
  REQUIRE(d);
  CHECK(d->body == "first");
}

// --- limits (each at the cap, then one over) ---

TEST_CASE("asio server: target length at max_target_bytes passes, one over answers 414") {
  auto o = test_options();
  o.limits.max_target_bytes = 64;
  asio_http_server srv(echo_handler, o);
  REQUIRE(srv.start());
  const std::string at = "/" + std::string(63, 'a');
  const std::string over = "/" + std::string(64, 'a');
  raw_client c(srv.port());
  REQUIRE(c.send(get(at)));
  auto m = c.read_response();
  REQUIRE(m);
  CHECK(m->status == 200);
  REQUIRE(c.send(get(over)));
  auto n = c.read_response();
  REQUIRE(n);
  CHECK(n->status == 414);
  CHECK(n->header("Connection") == "close");
  CHECK(c.wait_closed());
}

TEST_CASE("asio server: header flood answers 431 (count and bytes)") {
  auto o = test_options();
  o.limits.max_header_count = 10;
  o.limits.max_header_bytes = 1024;
  asio_http_server srv(echo_handler, o);
  REQUIRE(srv.start());
  {
    std::string h;
    for (int i = 0; i < 9; ++i) h += "X-H" + std::to_string(i) + ": v\r\n";  // + Host = 10
    raw_client c(srv.port());
    REQUIRE(c.send(get("/", h)));
    auto m = c.read_response();
    REQUIRE(m);
    CHECK(m->status == 200);
    REQUIRE(c.send(get("/", h + "X-Extra: v\r\n")));
    auto n = c.read_response();
    REQUIRE(n);
    CHECK(n->status == 431);
    CHECK(c.wait_closed());
  }
  {
    raw_client c(srv.port());
    REQUIRE(c.send(get("/", "X-Big: " + std::string(2000, 'b') + "\r\n")));
    auto n = c.read_response();
    REQUIRE(n);
    CHECK(n->status == 431);
    CHECK(c.wait_closed());
  }
}

TEST_CASE("asio server: body at max_body_bytes passes, one over answers 413 (declared and chunked)") {
  auto o = test_options();
  o.limits.max_body_bytes = 1000;
  std::atomic<std::size_t> seen{0};
  asio_http_server srv(
      [&](const http_request_view& req, const http_completion& done) {
        seen = req.body.size();
        done(text_reply(200, "ok"));
      },
      o);
  REQUIRE(srv.start());
  {
    raw_client c(srv.port());
    REQUIRE(c.send(post("/", std::string(1000, 'a'))));
    auto m = c.read_response();
    REQUIRE(m);
    CHECK(m->status == 200);
    CHECK(seen == 1000);
    REQUIRE(c.send(post("/", std::string(1001, 'a'))));
    auto n = c.read_response();
    REQUIRE(n);
    CHECK(n->status == 413);
    CHECK(n->header("Connection") == "close");
    CHECK(c.wait_closed());
  }
  {
    raw_client c(srv.port());
    std::string req = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 11; ++i) req += "64\r\n" + std::string(100, 'b') + "\r\n";  // 1100 bytes
    req += "0\r\n\r\n";
    REQUIRE(c.send(req));
    auto n = c.read_response();
    REQUIRE(n);
    CHECK(n->status == 413);
    CHECK(c.wait_closed());
  }
}

TEST_CASE("asio server: Expect: 100-continue gets 100 before the body, or 413 at once when over the cap") {
  auto o = test_options();
  o.limits.max_body_bytes = 100;
  asio_http_server srv(echo_handler, o);
  REQUIRE(srv.start());
  {
    raw_client c(srv.port());
    REQUIRE(c.send("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
    auto interim = c.read_response();
    REQUIRE(interim);
    CHECK(interim->status == 100);
    REQUIRE(c.send("hello"));
    auto m = c.read_response();
    REQUIRE(m);
    CHECK(m->status == 200);
    CHECK(m->body == "POST /e [hello]");
  }
  {
    raw_client c(srv.port());
    REQUIRE(c.send("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\nExpect: 100-continue\r\n\r\n"));
    auto m = c.read_response();
    REQUIRE(m);
    CHECK(m->status == 413);
    CHECK(c.wait_closed());
  }
}

TEST_CASE("http.md/head-checks: a plain handler's head_check refuses on the head, before 100 Continue and the body") {
  auto o = test_options();
  o.close_linger = 200ms;
  std::atomic<int> handled{0};
  std::atomic<int> checked{0};
  o.head_check = [&checked](const http_request_view& head) -> std::optional<mcpcore::http_response> {
    ++checked;
    if (head.header("X-Key") == "ok" && head.declared_length.value_or(0) <= 10) return std::nullopt;
    mcpcore::http_response r;
    r.status = 403;
    r.body = "no\n";
    return r;
  };
  asio_http_server srv(
      [&handled](const http_request_view& req, const http_completion& done) {
        ++handled;
        echo_handler(req, done);
      },
      o);
  REQUIRE(srv.start());
  {
    raw_client c(srv.port());
    REQUIRE(c.send("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
    auto m = c.read_response();
    REQUIRE(m);
    CHECK(m->status == 403);
    CHECK(m->header("Connection") == "close");
    CHECK(c.wait_closed());
  }
  {
    raw_client c(srv.port());  // a pipelined head is checked as it is parsed: nothing after it runs
    REQUIRE(c.send(get("/a", "X-Key: ok\r\n") + "POST /e HTTP/1.1\r\nHost: x\r\nX-Key: ok\r\nContent-Length: 11\r\n\r\n" +
                   get("/never", "X-Key: ok\r\n")));
    auto first = c.read_response();
    REQUIRE(first);
    CHECK(first->status == 200);
    auto second = c.read_response();
    REQUIRE(second);
    CHECK(second->status == 403);
    CHECK(c.wait_closed());
  }
  CHECK(handled == 1);
  CHECK(checked == 3);
}

TEST_CASE("asio server: slowloris (head trickled) is closed at header_read_timeout without an answer") {
  auto o = test_options();
  o.header_read_timeout = 300ms;
  asio_http_server srv(echo_handler, o);
  REQUIRE(srv.start());
  raw_client c(srv.port());
  const std::string head = get("/slow");
  bool closed = false;
  for (std::size_t i = 0; i + 2 < head.size(); ++i) {  // never completes the head
    if (!c.send(head.substr(i, 1))) {
      closed = true;
      break;
    }
    std::this_thread::sleep_for(30ms);
    if (srv.connections() == 0) {
      closed = true;
      break;
    }
  }
  CHECK(closed);
  CHECK(c.wait_closed());
  CHECK(c.buffered().empty());  // no response was written
  CHECK(eventually([&] { return srv.connections() == 0; }));
}

TEST_CASE("asio server: a connection that sends nothing is closed at header_read_timeout") {
  auto o = test_options();
  o.header_read_timeout = 200ms;
  asio_http_server srv(echo_handler, o);
  REQUIRE(srv.start());
  raw_client c(srv.port());
  CHECK(c.wait_closed());
  CHECK(eventually([&] { return srv.connections() == 0; }));
}

TEST_CASE("asio server: a body that stops arriving is closed at body_read_timeout") {
  auto o = test_options();
  o.body_read_timeout = 200ms;
  asio_http_server srv(echo_handler, o);
  REQUIRE(srv.start());
  raw_client c(srv.port());
  REQUIRE(c.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc"));
  CHECK(c.wait_closed());
  CHECK(c.buffered().empty());
}

TEST_CASE("asio server: an idle keep-alive connection is closed at idle_timeout") {
  auto o = test_options();
  o.idle_timeout = 200ms;
  asio_http_server srv(echo_handler, o);
  REQUIRE(srv.start());
  raw_client c(srv.port());
  REQUIRE(c.send(get("/")));
  auto m = c.read_response();
  REQUIRE(m);
  CHECK(c.wait_closed());
  CHECK(eventually([&] { return srv.connections() == 0; }));
}

TEST_CASE("transport.md/timeouts: a keep-alive connection used more often than idle_timeout stays open, then idles out") {
  // The idle deadline moves later with every request; the wait armed for the first one fires
  // before the deadline and sleeps again (the lazy deadline), so the connection survives far
  // longer than idle_timeout while it is used, and still closes once it is not.
  auto o = test_options();
  o.idle_timeout = 600ms;
  asio_http_server srv(echo_handler, o);
  REQUIRE(srv.start());
  raw_client c(srv.port());
  for (int i = 0; i < 15; ++i) {  // 1.5 s of use: two and a half idle_timeouts
    REQUIRE(c.send(get("/again")));
    auto m = c.read_response();
    REQUIRE(m);
    CHECK(m->status == 200);
    std::this_thread::sleep_for(100ms);
  }
  CHECK(c.wait_closed());
  CHECK(eventually([&] { return srv.connections() == 0; }));
}

TEST_CASE("transport.md/timeouts: a head begun on a connection with a long idle deadline still falls at header_read_timeout") {
  // After an answer the pending wait is the idle deadline (a minute); a head that then stalls
  // must re-arm the timer earlier, or the connection would outlive the test's patience.
  auto o = test_options();
  o.idle_timeout = std::chrono::minutes{1};
  o.header_read_timeout = 200ms;
  asio_http_server srv(echo_handler, o);
  REQUIRE(srv.start());
  raw_client c(srv.port());
  REQUIRE(c.send(get("/first")));
  REQUIRE(c.read_response());
  const std::string head = get("/stalled");
  REQUIRE(c.send(head.substr(0, head.size() / 2)));  // never completed
  CHECK(c.wait_closed());
  CHECK(c.buffered().empty());  // closed without an answer
  CHECK(eventually([&] { return srv.connections() == 0; }));
}

TEST_CASE("transport.md/threads: thread counts left at 0 are sized to the machine when the server is made") {
  CHECK(sized_io_threads(0) == 1);
  CHECK(sized_io_threads(1) == 1);
  CHECK(sized_io_threads(2) == 1);
  CHECK(sized_io_threads(8) == 2);
  CHECK(sized_io_threads(64) == 16);
  CHECK(sized_handler_threads(0) == 4);  // min_sized_handler_threads: one waiting call never stalls the rest
  CHECK(sized_handler_threads(1) == 4);
  CHECK(sized_handler_threads(2) == 4);
  CHECK(sized_handler_threads(4) == 4);
  CHECK(sized_handler_threads(8) == 6);
  CHECK(sized_handler_threads(16) == 12);
  CHECK(sized_handler_eager_threads(2, 1) == 1);  // the cores the I/O threads leave
  CHECK(sized_handler_eager_threads(16, 4) == 12);
  CHECK(sized_handler_eager_threads(2, 3) == 1);  // at least one
  CHECK(sized_handler_eager_threads(0, 1) == 1);
  asio_http_server_options o;  // the defaults: 0 and 0
  o.port = 0;
  CHECK(o.io_threads == 0);
  CHECK(o.handler_threads == 0);
  const std::size_t hw = std::max<std::size_t>(std::thread::hardware_concurrency(), 1);
  asio_http_server srv(echo_handler, o);
  CHECK(srv.options().io_threads == sized_io_threads(hw));
  CHECK(srv.options().handler_threads == sized_handler_threads(hw));
  CHECK(srv.options().handler_eager_threads == sized_handler_eager_threads(hw, sized_io_threads(hw)));
  CHECK(srv.options().handler_grace == default_handler_grace);
  REQUIRE(srv.start());
  raw_client c(srv.port());
  REQUIRE(c.send(get("/sized")));
  auto m = c.read_response();
  REQUIRE(m);
  CHECK(m->status == 200);
  // Counts that are set are kept.
  o.io_threads = 3;
  o.handler_threads = 5;
  asio_http_server set(echo_handler, o);
  CHECK(set.options().io_threads == 3);
  CHECK(set.options().handler_threads == 5);
  CHECK(set.options().handler_eager_threads == sized_handler_eager_threads(hw, 3));  // beside the set I/O threads
  o.handler_eager_threads = 2;
  asio_http_server eager(echo_handler, o);
  CHECK(eager.options().handler_eager_threads == 2);
}

TEST_CASE("transport.md/threads: start() refuses a handler grace that is not positive") {
  auto o = test_options();
  o.handler_grace = std::chrono::microseconds{0};
  asio_http_server zero(echo_handler, o);
  auto r = zero.start();
  REQUIRE_FALSE(r);
  CHECK(r.error() == std::errc::invalid_argument);
  o.handler_grace = std::chrono::microseconds{-5};
  asio_http_server negative(echo_handler, o);
  CHECK_FALSE(negative.start());
  o.handler_grace = std::chrono::microseconds{1};
  asio_http_server tiny(echo_handler, o);
  CHECK(tiny.start());  // the smallest positive grace is a grace
}

TEST_CASE("asio server: an answer larger than the socket takes at once is written whole to a slow reader") {
  // The first write goes straight to the socket; what it does not take waits for the socket,
  // under write_timeout, and arrives intact.
  const std::string big(std::size_t{4} << 20U, 'x');
  asio_http_server srv([&](const http_request_view&, const http_completion& done) { done(text_reply(200, big)); },
                       test_options());
  REQUIRE(srv.start());
  raw_client c(srv.port(), 4096);
  REQUIRE(c.send(get("/big")));
  std::this_thread::sleep_for(100ms);  // the socket's buffers fill before anything is read
  auto m = c.read_response(std::chrono::seconds{20});
  REQUIRE(m);
  CHECK(m->status == 200);
  CHECK(m->body.size() == big.size());
  CHECK(m->body == big);
  REQUIRE(c.send(get("/after")));  // the connection goes on
  auto next = c.read_response();
  REQUIRE(next);
  CHECK(next->status == 200);
}

TEST_CASE("asio server: connections beyond max_connections are answered 503 and closed") {
  auto o = test_options();
  o.max_connections = 2;
  asio_http_server srv(echo_handler, o);
  REQUIRE(srv.start());
  raw_client a(srv.port());
  raw_client b(srv.port());
  REQUIRE(a.send(get("/")));
  REQUIRE(b.send(get("/")));
  REQUIRE(a.read_response());
  REQUIRE(b.read_response());
  CHECK(srv.connections() == 2);
  raw_client c(srv.port());
  auto m = c.read_response();
  REQUIRE(m);
  CHECK(m->status == 503);
  CHECK(m->header("Connection") == "close");
  CHECK(m->header("Retry-After") == "1");
  CHECK(c.wait_closed());
  a.close();
  CHECK(eventually([&] { return srv.connections() == 1; }));
  raw_client d(srv.port());  // room again
  REQUIRE(d.send(get("/")));
  auto ok = d.read_response();
  REQUIRE(ok);
  CHECK(ok->status == 200);
}

TEST_CASE("asio server: 100 parallel connections opening and closing leave no connection behind") {
  asio_http_server srv(echo_handler, test_options());
  REQUIRE(srv.start());
  std::atomic<int> ok{0};
  {
    std::vector<std::jthread> clients;
    for (int i = 0; i < 100; ++i) {
      clients.emplace_back([&, i] {
        raw_client c(srv.port());
        if (!c.connected()) return;
        if (i % 3 == 0) {  // some leave abruptly without a request
          c.reset();
          ok.fetch_add(1);
          return;
        }
        if (!c.send(get("/" + std::to_string(i)))) return;
        auto m = c.read_response();
        if (m && m->body == "GET /" + std::to_string(i)) ok.fetch_add(1);
        if (i % 2 == 0) c.reset();
      });
    }
  }
  CHECK(ok == 100);
  CHECK(eventually([&] { return srv.connections() == 0; }));
}

TEST_CASE("asio server: executor() is bounded by handler_queue_cap and refuses after stop") {
  auto o = test_options();
  o.handler_threads = 1;
  o.handler_queue_cap = 2;
  asio_http_server srv(echo_handler, o);
  REQUIRE(srv.start());
  auto exec = srv.executor();
  std::promise<void> release;
  auto released = release.get_future().share();
  std::atomic<int> ran{0};
  std::atomic<bool> started{false};
  REQUIRE(exec([&, released] {
    started = true;
    released.wait();
    ++ran;
  }));
  REQUIRE(eventually([&] { return started.load(); }));
  CHECK(exec([&] { ++ran; }));
  CHECK(exec([&] { ++ran; }));
  CHECK_FALSE(exec([&] { ++ran; }));  // queue full
  release.set_value();
  srv.stop();
  CHECK(ran == 3);  // queued tasks ran before stop returned
  CHECK_FALSE(exec([] {}));
}

// --- streams ---

TEST_CASE("asio server: an SSE stream is chunked and delivers each frame as the stream wakes") {
  auto state = std::make_shared<stream_state>();
  asio_http_server srv(
      [&](const http_request_view& req, const http_completion& done) {
        if (req.target == "/sse") {
          done(stream_reply(state));
          return;
        }
        done(text_reply(200, "after"));
      },
      test_options());
  REQUIRE(srv.start());
  raw_client c(srv.port());
  REQUIRE(c.send(get("/sse", "Accept: text/event-stream\r\n")));
  auto head = c.read_head();
  REQUIRE(head);
  CHECK(head->status == 200);
  CHECK(head->chunked);
  CHECK(head->header("Cache-Control") == "no-cache");
  CHECK(head->header("X-Accel-Buffering") == "no");
  CHECK(head->header("X-Content-Type-Options") == "nosniff");
  CHECK_FALSE(head->header("Content-Length").has_value());
  state->push("data: one\n\n");
  auto c1 = c.read_chunk();
  REQUIRE(c1);
  CHECK(*c1 == "data: one\n\n");
  state->push("data: two\n\n");
  auto c2 = c.read_chunk();
  REQUIRE(c2);
  CHECK(*c2 == "data: two\n\n");
  CHECK(eventually([&] { return state->written.load() == 2; }));
  // A large pull is cut into chunks of at most 8 KiB.
  state->push(std::string(20000, 'z'));
  std::string big;
  while (big.size() < 20000) {
    auto ch = c.read_chunk();
    REQUIRE(ch);
    REQUIRE(!ch->empty());
    CHECK(ch->size() <= mcpcore::transport::max_chunk_bytes);
    big += *ch;
  }
  CHECK(big == std::string(20000, 'z'));
  state->finish();
  auto last = c.read_chunk();
  REQUIRE(last);
  CHECK(last->empty());
  CHECK(eventually([&] { return state->destroyed.load(); }));
  CHECK(state->write_failed == 0);
  // The connection is kept alive after the stream ended.
  REQUIRE(c.send(get("/next")));
  auto m = c.read_response();
  REQUIRE(m);
  CHECK(m->body == "after");
}

TEST_CASE("asio server: a stream is pulled again after wait_time without a wake") {
  auto state = std::make_shared<stream_state>();
  state->wait = 20ms;
  asio_http_server srv([&](const http_request_view&, const http_completion& done) { done(stream_reply(state)); },
                       test_options());
  REQUIRE(srv.start());
  raw_client c(srv.port());
  REQUIRE(c.send(get("/sse")));
  REQUIRE(c.read_head());
  REQUIRE(eventually([&] { return state->pulls.load() >= 1; }));  // the first pull found nothing
  {
    std::lock_guard lock(state->mu);
    state->pending.push_back("tick");  // no wake: only the timer pulls it
  }
  auto ch = c.read_chunk();
  REQUIRE(ch);
  CHECK(*ch == "tick");
  CHECK(state->pulls.load() >= 2);
}

TEST_CASE("asio server: the request behind a stream is answered only after the stream ends") {
  auto state = std::make_shared<stream_state>();
  asio_http_server srv(
      [&](const http_request_view& req, const http_completion& done) {
        if (req.target == "/sse") {
          done(stream_reply(state));
        } else {
          done(text_reply(200, "second"));
        }
      },
      test_options());
  REQUIRE(srv.start());
  raw_client c(srv.port());
  REQUIRE(c.send(get("/sse") + get("/two")));
  REQUIRE(c.read_head());
  state->push("frame");
  auto ch = c.read_chunk();
  REQUIRE(ch);
  CHECK(*ch == "frame");
  state->finish();
  auto end = c.read_chunk();
  REQUIRE(end);
  CHECK(end->empty());
  auto m = c.read_response();
  REQUIRE(m);
  CHECK(m->body == "second");
}

TEST_CASE("asio server: a peer that disconnects ends its stream with write_failed and destroys it") {
  auto state = std::make_shared<stream_state>();
  asio_http_server srv([&](const http_request_view&, const http_completion& done) { done(stream_reply(state)); },
                       test_options());
  REQUIRE(srv.start());
  {
    raw_client c(srv.port());
    REQUIRE(c.send(get("/sse")));
    REQUIRE(c.read_head());
    state->push("x");
    REQUIRE(c.read_chunk());
    c.shutdown_write();  // half-close: the read side of the server sees EOF
    CHECK(c.wait_closed());
  }
  CHECK(eventually([&] { return state->destroyed.load(); }));
  CHECK(state->write_failed >= 1);
  CHECK(eventually([&] { return srv.connections() == 0; }));
}

TEST_CASE("asio server: a client that stops reading a stream is closed by write_timeout with write_failed") {
  auto o = test_options();
  o.write_timeout = 300ms;
  o.stream_queue_bytes = 4096;
  auto state = std::make_shared<stream_state>();
  state->endless = true;
  state->wait = 1ms;
  asio_http_server srv([&](const http_request_view&, const http_completion& done) { done(stream_reply(state)); }, o);
  REQUIRE(srv.start());
  raw_client c(srv.port(), 4096);
  REQUIRE(c.send(get("/sse")));
  // never read: the socket buffers fill, the write makes no progress, the timeout closes it
  CHECK(eventually([&] { return state->destroyed.load(); }, 20s));
  CHECK(state->write_failed >= 1);
  CHECK(eventually([&] { return srv.connections() == 0; }));
  // Pulls stopped while the write was blocked: far fewer than the time would allow at 1 ms.
  const int pulls = state->pulls.load();
  std::this_thread::sleep_for(50ms);
  CHECK(state->pulls.load() == pulls);
}

TEST_CASE("asio server: stop() closes a live stream with session_terminated, lets it finish, then returns") {
  auto state = std::make_shared<stream_state>();
  std::atomic<bool> reached{false};
  asio_http_server srv(
      [&](const http_request_view&, const http_completion& done) {
        reached = true;
        done(stream_reply(state));
      },
      test_options());
  REQUIRE(srv.start());
  raw_client c(srv.port());
  raw_client idle(srv.port());
  REQUIRE(c.send(get("/sse")));
  REQUIRE(c.read_head());
  state->push("hello");
  REQUIRE(c.read_chunk() == std::optional<std::string>("hello"));
  auto stopped = std::async(std::launch::async, [&] { srv.stop(); });
  auto ch = c.read_chunk();
  REQUIRE(ch);
  CHECK(*ch == "closed:session_terminated");
  auto end = c.read_chunk();
  REQUIRE(end);
  CHECK(end->empty());
  CHECK(c.wait_closed());
  CHECK(idle.wait_closed());
  CHECK(stopped.wait_for(10s) == std::future_status::ready);
  CHECK(state->close_seen() == close_reason::session_terminated);
  CHECK(state->destroyed.load());
  CHECK(state->write_failed == 0);
  CHECK(srv.connections() == 0);
  CHECK_FALSE(srv.running());
  CHECK_FALSE(srv.start());  // not restartable
}

TEST_CASE("asio server: stop() bounds a stream that never finishes by shutdown_drain") {
  auto o = test_options();
  o.shutdown_drain = 200ms;
  auto failed = std::make_shared<std::atomic<bool>>(false);
  asio_http_server srv(
      [&](const http_request_view&, const http_completion& done) {
        http_reply r;
        r.head.status = 200;
        r.stream = std::make_unique<deaf_stream>(failed);
        done(std::move(r));
      },
      o);
  REQUIRE(srv.start());
  raw_client c(srv.port());
  REQUIRE(c.send(get("/sse")));
  REQUIRE(c.read_head());
  const auto t0 = std::chrono::steady_clock::now();
  srv.stop();
  CHECK(std::chrono::steady_clock::now() - t0 < 10s);
  CHECK(srv.connections() == 0);
  CHECK(c.wait_closed());
  CHECK(failed->load());  // the socket closed under it: write_failed
}

TEST_CASE("asio server: run() blocks until request_stop() from another thread") {
  asio_http_server srv(echo_handler, test_options());
  std::atomic<bool> returned{false};
  std::thread runner([&] {
    auto r = srv.run();
    CHECK(r.has_value());
    returned = true;
  });
  REQUIRE(eventually([&] { return srv.port() != 0; }));
  raw_client c(srv.port());
  REQUIRE(c.send(get("/")));
  REQUIRE(c.read_response());
  CHECK_FALSE(returned.load());
  srv.request_stop();
  runner.join();
  CHECK(returned.load());
  CHECK(c.wait_closed());
}

TEST_CASE("asio server: a handler may call request_stop(), stop() from a handler thread does not deadlock") {
  asio_http_server* self = nullptr;
  asio_http_server srv(
      [&](const http_request_view&, const http_completion& done) {
        done(text_reply(200, "bye"));
        self->stop();  // on an I/O thread: only requests the stop
      },
      test_options());
  self = &srv;
  std::thread runner([&] { (void)srv.run(); });
  REQUIRE(eventually([&] { return srv.port() != 0; }));
  raw_client c(srv.port());
  REQUIRE(c.send(get("/")));
  auto m = c.read_response();
  runner.join();
  REQUIRE(m);
  CHECK(m->body == "bye");
}

TEST_CASE("asio server: start() reports a bad address and an occupied port") {
  auto o = test_options();
  o.address = "not-an-address";
  asio_http_server bad(echo_handler, o);
  auto r = bad.start();
  REQUIRE_FALSE(r);
  CHECK(r.error() == std::errc::invalid_argument);

  asio_http_server first(echo_handler, test_options());
  REQUIRE(first.start());
  auto o2 = test_options();
  o2.port = first.port();
  asio_http_server second(echo_handler, o2);
  auto r2 = second.start();
  REQUIRE_FALSE(r2);
  CHECK(r2.error() == std::errc::address_in_use);
}

TEST_CASE("asio server: TLS round trip with a generated self-signed certificate (TLS 1.2+)") {
  test_process::temp_dir dir;
  auto cert = test_http::make_self_signed(dir.path());
  REQUIRE(cert);
  auto o = test_options();
  o.tls = mcpcore::transport::tls_options{cert->cert_file, cert->key_file};
  auto state = std::make_shared<stream_state>();
  asio_http_server srv(
      [&](const http_request_view& req, const http_completion& done) {
        if (req.target == "/sse") {
          done(stream_reply(state));
          return;
        }
        echo_handler(req, done);
      },
      o);
  REQUIRE(srv.start());
  test_http::tls_client c(srv.port(), cert->cert_file);
  REQUIRE(c.connected());
  const auto proto = c.protocol();
  CHECK((proto == "TLSv1.2" || proto == "TLSv1.3"));
  REQUIRE(c.send(post("/tls", "secret")));
  auto m = c.read_response();
  REQUIRE(m);
  CHECK(m->status == 200);
  CHECK(m->body == "POST /tls [secret]");
  REQUIRE(c.send(get("/sse")));
  REQUIRE(c.read_head());
  state->push("over tls");
  auto ch = c.read_chunk();
  REQUIRE(ch);
  CHECK(*ch == "over tls");
  state->finish();
  auto end = c.read_chunk();
  REQUIRE(end);
  CHECK(end->empty());

  // A plain-text client is not answered in clear.
  raw_client plain(srv.port());
  REQUIRE(plain.send(get("/")));
  CHECK(plain.wait_closed());
  CHECK(plain.buffered().find("HTTP/1.1 200") == std::string::npos);
}

TEST_CASE("asio server: start() reports unreadable TLS files") {
  auto o = test_options();
  o.tls = mcpcore::transport::tls_options{"/nonexistent/cert.pem", "/nonexistent/key.pem"};
  asio_http_server srv(echo_handler, o);
  CHECK_FALSE(srv.start());
}
