// SPDX-License-Identifier: Apache-2.0
// Tests of the stdio transport over pipe(2) pairs (docs/design.md#the-stdio-transport; MCP
// 2025-11-25 stdio transport: newline-delimited JSON-RPC, one message per line).
#include <mcpcore/transport/stdio.hpp>

#include <doctest/doctest.h>

#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/operation.hpp>
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tasks.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/task.hpp>
#include <mcpcore/stores/memory_task_store.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

using namespace mcpcore;
using namespace server_fixture;

namespace {

// One pipe; either end may be closed early.
struct pipe_fds {
  int read_end = -1;
  int write_end = -1;
  pipe_fds() {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    read_end = fds[0];
    write_end = fds[1];
  }
  ~pipe_fds() {
    close_read();
    close_write();
  }
  pipe_fds(const pipe_fds&) = delete;
  pipe_fds& operator=(const pipe_fds&) = delete;
  void close_read() {
    if (read_end >= 0) ::close(read_end);
    read_end = -1;
  }
  void close_write() {
    if (write_end >= 0) ::close(write_end);
    write_end = -1;
  }
};

void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const auto n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    REQUIRE(n > 0);
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

// Reads newline-terminated lines from a file descriptor, with a timeout per line.
class line_reader {
 public:
  explicit line_reader(int fd) noexcept : fd_(fd) {}
  /// The next line (without its '\n'); nullopt on timeout or end of stream.
  std::optional<std::string> next(std::chrono::milliseconds timeout = patience) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (const auto nl = buf_.find('\n'); nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      if (eof_) return std::nullopt;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, static_cast<int>(left.count()));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return std::nullopt;
      char chunk[4096];
      const auto n = ::read(fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        eof_ = true;
        continue;
      }
      buf_.append(chunk, static_cast<std::size_t>(n));
    }
  }
 private:
  int fd_;
  std::string buf_;
  bool eof_ = false;
};

// A transport running on its own thread between two pipes.
class harness {
 public:
  /// With `initialized`, the handshake (`initialize`, its answer read, `notifications/initialized`)
  /// is done first: the stdio lifecycle serves only `ping` before it (docs/eras.md#stdio-lifecycle).
  explicit harness(server& s, stdio_options options = {}, bool initialized = false)
      : transport_(s, principal{.id = "local"}, options), out_(out_pipe_.read_end) {
    thread_ = std::thread{[this] { rc_ = transport_.run(in_.read_end, out_pipe_.write_end); }};
    if (initialized) {
      send(initialize(0));
      const auto l = line();
      REQUIRE_MESSAGE((l && l->find(R"("protocolVersion")") != std::string::npos), "no initialize answer");
      send(notification("notifications/initialized"));
    }
  }
  ~harness() {
    if (thread_.joinable()) {
      transport_.stop();
      in_.close_write();
      thread_.join();
    }
  }
  harness(const harness&) = delete;
  harness& operator=(const harness&) = delete;

  void send(std::string_view line) { write_all(in_.write_end, std::string{line} + "\n"); }
  void send_raw(std::string_view bytes) { write_all(in_.write_end, bytes); }
  std::optional<std::string> line(std::chrono::milliseconds timeout = patience) { return out_.next(timeout); }
  /// The next line, parsed; fails the test when none arrives.
  parsed next() {
    auto l = line();
    REQUIRE_MESSAGE(l.has_value(), "no line from the transport");
    return parse(*l);
  }
  void close_input() { in_.close_write(); }
  /// Waits for `run` to return and gives its status.
  int join() {
    thread_.join();
    return rc_;
  }
  /// After `join`: the lines written after those already read.
  std::vector<std::string> remaining_lines() {
    out_pipe_.close_write();
    std::vector<std::string> lines;
    while (auto l = out_.next(patience)) lines.push_back(*l);
    return lines;
  }
  stdio_transport& transport() noexcept { return transport_; }

 private:
  stdio_transport transport_;
  pipe_fds in_;
  pipe_fds out_pipe_;
  line_reader out_;
  std::thread thread_;
  int rc_ = -1;
};

// The tools every transport test uses.
struct stdio_server {
  gate hold;
  std::atomic<int> finished{0};
  manual_clock clk;             // the server's: the deadline of a call waiting for the client
  std::atomic<int> ask_runs{0};  // runs of ask_roots
  server srv;

  stdio_server() : srv(make()) {}
  server make() {
    server_options o;
    o.max_client_request_timeout = std::chrono::seconds{5};
    server_builder b{{.name = "stdio-test", .version = "1"}, o};
    b.clock(clock_ref<manual_clock>{clk});
    b.tool("echo")
        .description("Returns the text.")
        .input_schema(R"({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]})")
        .security("Echo", operation::read)
        .effect(tool_effect::read_only, true)
        .handler([](call_context&, const arguments& args) { return tool_result::text(std::string{args["text"].as_string()}); });
    b.tool("chatty").description("Logs, reports progress, then answers.").security("Echo", operation::read)
        .effect(tool_effect::read_only, true)
        .handler([](call_context& ctx, const arguments&) {
          ctx.log(log_level::warning, "first");
          ctx.progress(1, 2);
          ctx.progress(2, 2);
          ctx.log(log_level::error, "last");
          return tool_result::text("done");
        });
    b.tool("block").description("Blocks until released or cancelled.").security("Echo", operation::read)
        .effect(tool_effect::read_only, true)
        .handler([this](call_context& ctx, const arguments&) {
          hold.arrive();
          const bool released = hold.block(ctx.stop_token());
          ++finished;
          return tool_result::text(released ? "released" : "stopped");
        });
    b.tool("slow").description("Takes 100 ms.").security("Echo", operation::read).effect(tool_effect::read_only, true)
        .handler([this](call_context&, const arguments&) {
          std::this_thread::sleep_for(std::chrono::milliseconds{100});
          ++finished;
          return tool_result::text("slow done");
        });
    b.tool("roots").description("Asks the client for its roots.").security("Echo", operation::read)
        .effect(tool_effect::read_only, true)
        .handler([](call_context& ctx, const arguments&) {
          auto r = ctx.request("roots/list", {});
          if (!r) return tool_result::error(r.error().message());
          return tool_result::text(to_json(r->value()));
        });
    b.tool("ask_roots").description("Asks the client for its roots with need_input.").security("Echo", operation::read)
        .effect(tool_effect::read_only, true)
        .handler([this](call_context& ctx, const arguments&) {
          ++ask_runs;
          const auto roots = ctx.input("roots");
          if (roots.exists()) return tool_result::text(to_json(roots));
          return tool_result::need_input(input_required{}.ask("roots", input_request::list_roots()));
        });
    b.resource("res://a").name("a").handler([](call_context&, std::string_view uri, const uri_variables&) {
      return std::optional{resource_result{}.add_text(std::string{uri}, "text/plain", "a")};
    });
    return build(b);
  }
};

std::string ping(std::int64_t id) { return request(id, "ping"); }

}  // namespace

TEST_SUITE("stdio") {

TEST_CASE("MCP stdio: one request line gets one response line") {
  stdio_server ss;
  harness h{ss.srv, stdio_options{}, true};
  h.send(ping(1));
  CHECK(h.line() == R"({"jsonrpc":"2.0","id":1,"result":{}})");
  h.send(call_tool(2, "echo", R"({"text":"hi there"})"));
  const auto r = h.next();
  CHECK(r.root["id"].to_int64() == 2);
  CHECK(str(at(r.root["result"]["content"], 0)["text"]) == "hi there");
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines().empty());
}

TEST_CASE("MCP stdio: notifications get no line, blank lines are ignored, CRLF is accepted") {
  stdio_server ss;
  harness h{ss.srv};
  h.send(notification("notifications/initialized"));
  h.send_raw("\n   \n\t\r\n\r\n");
  h.send(notification("notifications/no/such/thing", R"({"x":1})"));
  h.send_raw(ping(1) + "\r\n");
  CHECK(h.line() == R"({"jsonrpc":"2.0","id":1,"result":{}})");
  CHECK(h.transport().client().initialized());
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines().empty());
}

TEST_CASE("MCP stdio: a message split across writes, and several messages in one write") {
  stdio_server ss;
  harness h{ss.srv};
  const std::string msg = ping(1);
  h.send_raw(msg.substr(0, 10));
  std::this_thread::sleep_for(std::chrono::milliseconds{20});
  h.send_raw(msg.substr(10) + "\n" + ping(2) + "\n" + ping(3));
  // the workers answer 1 and 2 in either order
  std::vector<std::int64_t> ids;
  ids.push_back(h.next().root["id"].to_int64().value_or(0));
  ids.push_back(h.next().root["id"].to_int64().value_or(0));
  std::sort(ids.begin(), ids.end());
  CHECK(ids == std::vector<std::int64_t>{1, 2});
  // the last line has no '\n': it is served at the end of the input, not before
  CHECK_FALSE(h.line(std::chrono::milliseconds{50}).has_value());
  h.close_input();
  CHECK(h.next().root["id"].to_int64() == 3);
  CHECK(h.join() == 0);
}

TEST_CASE("transport.md, http.md/processing-order-on-the-mcp-path: a line longer than max_message_bytes gets one -32600, the next line still works") {
  stdio_server ss;
  stdio_options o;
  o.max_message_bytes = 256;
  harness h{ss.srv, o};
  // 1000 bytes in three writes, then a normal request
  const std::string big = R"({"jsonrpc":"2.0","id":9,"method":"ping","params":{"pad":")" + std::string(1000, 'x') + R"("}})";
  h.send_raw(big.substr(0, 100));
  std::this_thread::sleep_for(std::chrono::milliseconds{10});
  h.send_raw(big.substr(100, 500));
  std::this_thread::sleep_for(std::chrono::milliseconds{10});
  h.send_raw(big.substr(600) + "\n");
  h.send(ping(1));
  const auto e = h.next();
  CHECK(e.root["error"]["code"].to_int64() == -32600);
  CHECK(e.root["id"].is_null());
  CHECK(is_correlation_id(str(e.root["error"]["data"]["correlation_id"])));
  CHECK(e.root["error"]["data"]["retry_after_ms"].is_null());
  CHECK(h.line() == R"({"jsonrpc":"2.0","id":1,"result":{}})");
  // exactly at the limit is accepted (JSON allows the padding whitespace)
  std::string exact = ping(2);
  exact.insert(exact.size() - 1, 256 - exact.size(), ' ');
  REQUIRE(exact.size() == 256);
  h.send(exact);
  CHECK(h.line() == R"({"jsonrpc":"2.0","id":2,"result":{}})");
  h.send(exact.insert(1, " "));
  CHECK(h.next().root["error"]["code"].to_int64() == -32600);
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines().empty());
}

TEST_CASE("MCP stdio, design.md/json-rpc: malformed JSON is -32700 and an invalid message -32600, both with id null") {
  stdio_server ss;
  harness h{ss.srv};
  h.send(R"({"jsonrpc":"2.0","id":1,"method":"ping")");
  auto e = h.next();
  CHECK(e.root["error"]["code"].to_int64() == -32700);
  CHECK(e.root["id"].is_null());
  h.send(R"([{"jsonrpc":"2.0","id":2,"method":"ping"}])");
  e = h.next();
  CHECK(e.root["error"]["code"].to_int64() == -32600);
  h.send(R"({"jsonrpc":"1.0","id":3,"method":"ping"})");
  e = h.next();
  CHECK(e.root["error"]["code"].to_int64() == -32600);
  CHECK(e.root["id"].to_int64() == 3);
  h.send(ping(4));
  CHECK(h.next().root["id"].to_int64() == 4);
  h.close_input();
  CHECK(h.join() == 0);
}

TEST_CASE("sessions.md, MCP stdio: a call's log and progress messages precede its result") {
  stdio_server ss;
  harness h{ss.srv, stdio_options{}, true};
  h.send(call_tool(1, "chatty", "{}", R"({"progressToken":"p"})"));
  std::vector<std::string> kinds;
  for (;;) {
    const auto m = h.next();
    if (m.root["id"].exists()) {
      CHECK(str(at(m.root["result"]["content"], 0)["text"]) == "done");
      break;
    }
    kinds.push_back(str(m.root["method"]));
  }
  CHECK(kinds == std::vector<std::string>{"notifications/message", "notifications/progress", "notifications/progress",
                                           "notifications/message"});
  h.close_input();
  CHECK(h.join() == 0);
}

TEST_CASE("MCP stdio: a client response is routed to the call waiting for it") {
  stdio_server ss;
  harness h{ss.srv};
  h.send(initialize(1, "2025-11-25", R"({"roots":{"listChanged":true}})"));
  CHECK(str(h.next().root["result"]["protocolVersion"]) == "2025-11-25");
  h.send(notification("notifications/initialized"));
  h.send(call_tool(2, "roots"));
  const auto req = h.next();
  CHECK(str(req.root["method"]) == "roots/list");
  REQUIRE(req.root["id"].is_integer());
  // a ping in between is answered while the call waits
  h.send(ping(3));
  CHECK(h.next().root["id"].to_int64() == 3);
  h.send(client_result(*req.root["id"].to_int64(), R"({"roots":[{"uri":"file:///w","name":"w"}]})"));
  const auto r = h.next();
  CHECK(r.root["id"].to_int64() == 2);
  CHECK(str(at(r.root["result"]["content"], 0)["text"]) == R"({"roots":[{"uri":"file:///w","name":"w"}]})");
  h.close_input();
  CHECK(h.join() == 0);
}

TEST_CASE("MCP cancellation over stdio: a cancelled call writes no result line") {
  stdio_server ss;
  harness h{ss.srv, stdio_options{}, true};
  h.send(call_tool(7, "block"));
  REQUIRE(ss.hold.wait_arrived());
  h.send(cancel("7"));
  h.send(ping(8));
  CHECK(h.line() == R"({"jsonrpc":"2.0","id":8,"result":{}})");
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(ss.finished == 1);
  CHECK(h.remaining_lines().empty());
}

// A cancellation read while the worker has taken its call but the call has not yet reached the
// dispatch core (where the peer registers it) must still stop it. Each call below is followed at
// once, in the same write, by its cancellation, so some land in that window. With one worker the
// ping is answered only once every call before it ended: a call the cancellation missed blocks it.
TEST_CASE("MCP cancellation over stdio: a call cancelled as the worker takes it stops, whatever the moment") {
  stdio_server ss;
  stdio_options o;
  o.workers = 1;
  harness h{ss.srv, o, true};
  constexpr int calls = 300;
  for (int i = 1; i <= calls; ++i) {
    const std::string n = std::to_string(100 + i);
    h.send(call_tool(100 + i, "block") + "\n" + cancel(n));
  }
  h.send(ping(1000));
  CHECK(h.line() == R"({"jsonrpc":"2.0","id":1000,"result":{}})");
  CHECK(ss.finished == ss.hold.arrived());  // every call that started was stopped
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines().empty());  // no cancelled call is answered
}

TEST_CASE("design.md/the-stdio-transport stdio: at the end of input run() lets calls in flight finish, then returns 0") {
  stdio_server ss;
  harness h{ss.srv, stdio_options{}, true};
  h.send(call_tool(1, "slow"));
  h.send(call_tool(2, "echo", R"({"text":"quick"})"));
  h.close_input();
  const int rc = h.join();
  CHECK(rc == 0);
  CHECK(ss.finished == 1);
  const auto lines = h.remaining_lines();
  REQUIRE(lines.size() == 2);
  bool saw_slow = false;
  for (const auto& l : lines) saw_slow = saw_slow || l.find("slow done") != std::string::npos;
  CHECK(saw_slow);
}

/// The client ends its input while call 2 (of `tool`) waits for its roots: the call fails with
/// closed and still answers, a tool error.
void check_end_of_input_answers(server& srv, std::string_view tool) {
  harness h{srv};
  h.send(initialize(1, "2025-11-25", R"({"roots":{}})"));
  (void)h.next();
  h.send(call_tool(2, tool));
  CHECK(str(h.next().root["method"]) == "roots/list");
  h.close_input();
  CHECK(h.join() == 0);
  const auto lines = h.remaining_lines();
  REQUIRE(lines.size() == 1);
  const auto r = parse(lines[0]);
  CHECK(r.root["id"].to_int64() == 2);
  CHECK(r.root["result"]["isError"].is_bool());
}

TEST_CASE("design.md/the-stdio-transport stdio: at the end of input a call waiting for the client fails with closed and still answers") {
  stdio_server ss;
  check_end_of_input_answers(ss.srv, "roots");  // the handler waits in call_context::request
}

TEST_CASE("eras.md/waiting-for-the-client: over stdio a call waiting for the client gives its worker back") {
  stdio_server ss;
  stdio_options o;
  o.workers = 1;  // the only worker: a ping answered meanwhile proves it is free
  harness h{ss.srv, o};
  h.send(initialize(1, "2025-11-25", R"({"roots":{}})"));
  (void)h.next();
  h.send(call_tool(2, "ask_roots"));
  const auto req = h.next();
  CHECK(str(req.root["method"]) == "roots/list");
  REQUIRE(req.root["id"].is_integer());
  h.send(ping(3));
  CHECK(h.next().root["id"].to_int64() == 3);
  CHECK(ss.srv.waiting_calls() == 1);
  h.send(client_result(*req.root["id"].to_int64(), R"({"roots":[{"uri":"file:///w","name":"w"}]})"));
  const auto r = h.next();
  CHECK(r.root["id"].to_int64() == 2);
  CHECK(str(at(r.root["result"]["content"], 0)["text"]) == R"({"roots":[{"uri":"file:///w","name":"w"}]})");
  CHECK(ss.ask_runs.load() == 2);
  CHECK(ss.srv.waiting_calls() == 0);
  h.close_input();
  CHECK(h.join() == 0);
}

TEST_CASE("eras.md/waiting-for-the-client: over stdio an idle worker expires a wait past its deadline") {
  stdio_server ss;
  stdio_options o;
  o.expiry_tick = std::chrono::milliseconds{5};
  harness h{ss.srv, o};
  h.send(initialize(1, "2025-11-25", R"({"roots":{}})"));
  (void)h.next();
  h.send(call_tool(2, "ask_roots"));
  const auto req = h.next();
  REQUIRE(str(req.root["method"]) == "roots/list");
  ss.clk.advance(std::chrono::seconds{6});
  // The client hears that its request was abandoned, then the call's tool error.
  const auto cancelled = h.next();
  CHECK(str(cancelled.root["method"]) == "notifications/cancelled");
  CHECK(cancelled.root["params"]["requestId"].to_int64() == req.root["id"].to_int64());
  const auto r = h.next();
  CHECK(r.root["id"].to_int64() == 2);
  CHECK(r.root["result"]["isError"].is_bool());
  CHECK(ss.ask_runs.load() == 1);
  h.close_input();
  CHECK(h.join() == 0);
}

TEST_CASE("eras.md/waiting-for-the-client: over stdio the end of input ends a waiting call with a tool error") {
  stdio_server ss;
  check_end_of_input_answers(ss.srv, "ask_roots");  // the call waits without a worker
  CHECK(ss.srv.waiting_calls() == 0);
}

TEST_CASE("design.md/the-stdio-transport stdio: calls still running after drain_timeout are cancelled") {
  stdio_server ss;
  stdio_options o;
  o.drain_timeout = std::chrono::milliseconds{50};
  harness h{ss.srv, o, true};
  h.send(call_tool(1, "block"));
  REQUIRE(ss.hold.wait_arrived());
  const auto started = std::chrono::steady_clock::now();
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(std::chrono::steady_clock::now() - started >= std::chrono::milliseconds{50});
  CHECK(ss.finished == 1);
  CHECK(h.remaining_lines().empty());
}

TEST_CASE("design.md/the-stdio-transport stdio: stop() from another thread makes run() return promptly, cancelling a blocked call") {
  stdio_server ss;
  harness h{ss.srv, stdio_options{}, true};
  h.send(call_tool(1, "block"));
  REQUIRE(ss.hold.wait_arrived());
  const auto started = std::chrono::steady_clock::now();
  std::thread stopper{[&] { h.transport().stop(); }};
  const int rc = h.join();
  stopper.join();
  CHECK(rc == 0);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::milliseconds{2000});
  CHECK(ss.finished == 1);
  CHECK(h.remaining_lines().empty());
}

TEST_CASE("design.md/the-stdio-transport stdio: a full queue answers at once -32603 \"Server busy\" with retry_after_ms 1000") {
  stdio_server ss;
  stdio_options o;
  o.workers = 1;
  o.max_queued = 1;
  harness h{ss.srv, o, true};
  h.send(call_tool(1, "block"));
  REQUIRE(ss.hold.wait_arrived());     // the only worker is busy
  h.send(call_tool(2, "echo", R"({"text":"queued"})"));  // waits in the queue
  h.send(call_tool(3, "echo", R"({"text":"refused"})"));  // no room
  const auto busy = h.next();
  CHECK(busy.root["id"].to_int64() == 3);
  CHECK(busy.root["error"]["code"].to_int64() == -32603);
  CHECK(str(busy.root["error"]["message"]) == "Server busy");
  CHECK(busy.root["error"]["data"]["retry_after_ms"].to_int64() == 1000);
  CHECK(is_correlation_id(str(busy.root["error"]["data"]["correlation_id"])));
  // notifications are never refused: they are handled on the reader
  h.send(notification("notifications/initialized"));
  ss.hold.open();
  CHECK(h.next().root["id"].to_int64() == 1);
  const auto queued = h.next();
  CHECK(queued.root["id"].to_int64() == 2);
  CHECK(str(at(queued.root["result"]["content"], 0)["text"]) == "queued");
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.transport().client().initialized());
}

TEST_CASE("MCP cancellation over stdio: a cancelled request still in the queue never runs and is not answered") {
  stdio_server ss;
  stdio_options o;
  o.workers = 1;
  harness h{ss.srv, o, true};
  h.send(call_tool(1, "block"));
  REQUIRE(ss.hold.wait_arrived());                             // the only worker is busy
  h.send(call_tool(2, "echo", R"({"text":"cancelled"})"));     // waits in the queue
  h.send(call_tool("\"2\"", "echo", R"({"text":"string id"})"));  // "2" is not 2
  h.send(cancel("2"));
  // The reader answers a malformed line itself, in order: once that answer is out, the
  // cancellation before it has been handled.
  h.send("{not json");
  CHECK(h.next().root["error"]["code"].to_int64() == -32700);
  h.send(call_tool(3, "echo", R"({"text":"after"})"));
  ss.hold.open();
  CHECK(h.next().root["id"].to_int64() == 1);
  const auto string_id = h.next();
  CHECK(str(string_id.root["id"]) == "2");
  CHECK(h.next().root["id"].to_int64() == 3);
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines().empty());  // nothing for id 2
}

TEST_CASE("MCP stdio: notify_resource_updated reaches a subscribed client") {
  stdio_server ss;
  harness h{ss.srv, stdio_options{}, true};
  CHECK_FALSE(h.transport().notify_resource_updated("res://a"));
  h.send(request(1, "resources/subscribe", R"({"uri":"res://a"})"));
  CHECK(to_json(h.next().root["result"]) == "{}");
  CHECK(h.transport().notify_resource_updated("res://a"));
  CHECK(h.line() == R"({"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"res://a"}})");
  h.close_input();
  CHECK(h.join() == 0);
}

TEST_CASE("eras.md/stdio-lifecycle: before initialize only ping is served, other requests are -32600 Server not initialized") {
  stdio_server ss;
  harness h{ss.srv, stdio_options{}, false};
  h.send(ping(1));
  CHECK(h.line() == R"({"jsonrpc":"2.0","id":1,"result":{}})");
  h.send(request(2, "tools/list"));
  auto e = h.next();
  CHECK(e.root["id"].to_int64() == 2);
  CHECK(e.root["error"]["code"].to_int64() == -32600);
  CHECK(str(e.root["error"]["message"]) == "Server not initialized");
  CHECK(is_correlation_id(str(e.root["error"]["data"]["correlation_id"])));
  CHECK(e.root["error"]["data"]["remediation"].is_string());
  h.send(call_tool(3, "echo", R"({"text":"early"})"));
  e = h.next();
  CHECK(e.root["id"].to_int64() == 3);
  CHECK(e.root["error"]["code"].to_int64() == -32600);
  CHECK(h.transport().client().protocol_version().empty());
  // a failed initialize leaves the connection uninitialized: the client may try again
  h.send(request(4, "initialize", R"({"protocolVersion":5,"capabilities":{}})"));
  CHECK(h.next().root["error"]["code"].to_int64() == -32602);
  h.send(request(5, "tools/list"));
  CHECK(h.next().root["error"]["code"].to_int64() == -32600);
  h.send(initialize(6));
  CHECK(str(h.next().root["result"]["protocolVersion"]) == "2025-11-25");
  h.send(request(7, "tools/list"));
  CHECK(h.next().root["result"]["tools"].is_array());
  h.close_input();
  CHECK(h.join() == 0);
}

TEST_CASE("eras.md/stdio-lifecycle: a second initialize is refused -32600 and the first negotiation is kept") {
  stdio_server ss;
  harness h{ss.srv, stdio_options{}, false};
  h.send(initialize(1, "2025-06-18", R"({"roots":{"listChanged":true}})"));
  CHECK(str(h.next().root["result"]["protocolVersion"]) == "2025-06-18");
  h.send(initialize(2, "2025-11-25", R"({"sampling":{}})"));
  const auto e = h.next();
  CHECK(e.root["id"].to_int64() == 2);
  CHECK(e.root["error"]["code"].to_int64() == -32600);
  CHECK(str(e.root["error"]["message"]) == "Already initialized");
  CHECK(h.transport().client().protocol_version() == "2025-06-18");
  CHECK(h.transport().client().capabilities().roots);
  CHECK_FALSE(h.transport().client().capabilities().sampling);
  h.close_input();
  CHECK(h.join() == 0);
}

TEST_CASE("design.md/the-stdio-transport stdio: the kill switch answers every request -32005 with its id") {
  stdio_server ss;
  harness h{ss.srv};
  ss.srv.switches().set_disabled(true);
  h.send(ping(1));
  const auto e = h.next();
  CHECK(e.root["id"].to_int64() == 1);
  CHECK(e.root["error"]["code"].to_int64() == -32005);
  CHECK_FALSE(e.root["error"]["data"].exists());
  ss.srv.switches().set_disabled(false);
  h.send(ping(2));
  CHECK(h.line() == R"({"jsonrpc":"2.0","id":2,"result":{}})");
  h.close_input();
  CHECK(h.join() == 0);
}

TEST_CASE("design.md/the-stdio-transport stdio: run() returns 1 when reading fails") {
  stdio_server ss;
  const int dir = ::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(dir >= 0);
  pipe_fds out;
  stdio_transport t{ss.srv, principal{.id = "local"}};
  CHECK(t.run(dir, out.write_end) == 1);
  ::close(dir);
}

}  // TEST_SUITE

// ---- detached calls over stdio (docs/transport.md#detached-calls-over-stdio) ----------------------

namespace {

/// The handles the `job` tool's calls detached, in call order (the tests report through them).
struct job_ops {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<operation_handle> ops;
  void put(operation_handle op) {
    {
      const std::lock_guard lock{mu};
      ops.push_back(std::move(op));
    }
    cv.notify_all();
  }
  /// The next handle a call detached (waiting for it).
  operation_handle take() {
    std::unique_lock lock{mu};
    REQUIRE(cv.wait_for(lock, patience, [&] { return !ops.empty(); }));
    operation_handle op = std::move(ops.front());
    ops.erase(ops.begin());
    return op;
  }
};

/// The final of a command that ran: its state in structured content and in text.
tool_result command_final(std::string_view status, int exit_code) {
  tool_result r = tool_result::structured(R"({"status":")" + std::string{status} + R"(","exit_code":)" +
                                          std::to_string(exit_code) + "}");
  r.add_text(std::string{status} + " (exit " + std::to_string(exit_code) + ")");
  r.set_error(status != "succeeded");
  return r;
}

/// A server with the tool `job` (an outputSchema whose status is an enum): it detaches its work as
/// "job-<id>", hands the handle to `ops` (or, with `{"early":true}`, finishes first), and answers
/// `{"status":"running"}`.
struct job_server {
  job_ops ops;
  server srv;
  job_server() : srv(make()) {}
  server make() {
    server_builder b{{.name = "stdio-test", .version = "1"}};
    b.tool("job")
        .description("Starts a job.")
        .input_schema(R"({"type":"object","properties":{"early":{"type":"boolean"}}})")
        .output_schema(R"({"type":"object","properties":{"status":{"type":"string","enum":["running","succeeded",)"
                       R"("failed"]},"exit_code":{"type":"integer"}},"required":["status"]})")
        .security("Job", operation::execute)
        .effect(tool_effect::additive, false)
        .handler([this](call_context& ctx, const arguments& args) {
          const std::string id = ctx.id().is_string() ? std::string{ctx.id().as_string()} : std::to_string(ctx.id().as_integer());
          operation_handle op = detach(ctx, "job-" + id);
          if (args["early"].is_bool()) (void)op.finish(command_final("succeeded", 0));
          ops.put(std::move(op));
          return tool_result::structured(R"({"status":"running"})");
        });
    b.tool("echo")
        .description("Returns the text.")
        .input_schema(R"({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]})")
        .security("Echo", operation::read)
        .effect(tool_effect::read_only, true)
        .handler([](call_context&, const arguments& args) { return tool_result::text(std::string{args["text"].as_string()}); });
    return build(b);
  }
};

std::string progress_meta(std::string_view token_json) { return std::string{R"({"progressToken":)"} + std::string{token_json} + "}"; }

}  // namespace

TEST_SUITE("stdio") {

TEST_CASE("transport.md/detached-calls-over-stdio: a detached call is answered its final, the terminal state in structuredContent and text") {
  job_server js;
  harness h{js.srv, stdio_options{}, true};
  h.send(call_tool(3, "job", "{}", progress_meta(R"("p3")")));
  operation_handle op = js.ops.take();
  CHECK(op.bound());
  CHECK(op.execution_id() == "job-3");
  CHECK(op.progress(1, std::nullopt, "line one"));
  const auto p = h.next();
  CHECK(str(p.root["method"]) == "notifications/progress");
  CHECK(str(p.root["params"]["progressToken"]) == "p3");
  CHECK(str(p.root["params"]["message"]) == "line one");
  CHECK(str(p.root["params"]["_meta"][execution_id_meta_key]) == "job-3");
  CHECK_FALSE(h.line(std::chrono::milliseconds{100}).has_value());  // the provisional answer is held back
  h.send(ping(4));  // the connection is served meanwhile
  CHECK(h.line() == R"({"jsonrpc":"2.0","id":4,"result":{}})");
  CHECK(op.finish(command_final("succeeded", 0)));
  CHECK_FALSE(op.finish(command_final("failed", 1)));  // one terminal
  const auto fin = h.next();
  CHECK(fin.root["id"].to_int64() == 3);
  const auto result = fin.root["result"];
  CHECK(str(result["structuredContent"]["status"]) == "succeeded");
  CHECK(result["structuredContent"]["exit_code"].to_int64() == 0);
  CHECK(str(at(result["content"], 0)["text"]) == "succeeded (exit 0)");
  CHECK(str(result["_meta"][execution_id_meta_key]) == "job-3");
  CHECK_FALSE(result["isError"].exists());
  CHECK_FALSE(op.progress(2));  // nothing after the final
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines().empty());  // one response for the request, no more
}

TEST_CASE("transport.md/detached-calls-over-stdio: a failing detached call's final is isError, also without a progress token") {
  job_server js;
  harness h{js.srv, stdio_options{}, true};
  h.send(call_tool(5, "job"));
  operation_handle op = js.ops.take();
  CHECK(op.bound());
  CHECK_FALSE(op.progress(1));  // no progress token: no notification
  CHECK(op.finish(command_final("failed", 2)));
  const auto fin = h.next();
  CHECK(fin.root["id"].to_int64() == 5);
  CHECK(fin.root["result"]["isError"].as_bool());
  CHECK(str(fin.root["result"]["structuredContent"]["status"]) == "failed");
  CHECK(str(at(fin.root["result"]["content"], 0)["text"]) == "failed (exit 2)");
  h.close_input();
  CHECK(h.join() == 0);
}

TEST_CASE("transport.md/detached-calls-over-stdio: a final reported before the handler returned is the answer") {
  job_server js;
  harness h{js.srv, stdio_options{}, true};
  h.send(call_tool(6, "job", R"({"early":true})"));
  const auto fin = h.next();
  CHECK(fin.root["id"].to_int64() == 6);
  CHECK(str(fin.root["result"]["structuredContent"]["status"]) == "succeeded");
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines().empty());
}

TEST_CASE("transport.md/detached-calls-over-stdio: notifications/cancelled releases a held call: no answer, the work goes on") {
  job_server js;
  harness h{js.srv, stdio_options{}, true};
  h.send(call_tool(7, "job", "{}", progress_meta("7")));
  operation_handle op = js.ops.take();
  h.send(cancel("7"));
  h.send(ping(8));
  CHECK(h.line() == R"({"jsonrpc":"2.0","id":8,"result":{}})");  // the cancel was handled before it
  CHECK_FALSE(op.progress(1));                                  // released: nothing goes out
  CHECK_FALSE(op.finish(command_final("succeeded", 0)));
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines().empty());
}

TEST_CASE("transport.md/detached-calls-over-stdio: past max_detached_calls a detached call is answered its provisional result at once") {
  job_server js;
  stdio_options o;
  o.max_detached_calls = 1;
  harness h{js.srv, o, true};
  h.send(call_tool(1, "job"));
  operation_handle held = js.ops.take();
  CHECK(held.bound());
  h.send(call_tool(2, "job"));
  const auto at_once = h.next();
  CHECK(at_once.root["id"].to_int64() == 2);
  CHECK(str(at_once.root["result"]["structuredContent"]["status"]) == "running");
  operation_handle unbound = js.ops.take();
  CHECK_FALSE(unbound.bound());  // nothing of it is held
  CHECK_FALSE(unbound.finish(command_final("succeeded", 0)));
  CHECK(held.finish(command_final("succeeded", 0)));
  CHECK(h.next().root["id"].to_int64() == 1);
  h.send(call_tool(3, "job"));  // the slot is free again
  CHECK(js.ops.take().bound());
  h.close_input();
  CHECK(h.join() == 0);
}

TEST_CASE("transport.md/detached-calls-over-stdio: the work's handles gone without a terminal: the fallback final, never a hang") {
  job_server js;
  harness h{js.srv, stdio_options{}, true};
  h.send(call_tool(9, "job"));
  js.ops.take();  // the last handle goes without a terminal
  const auto fin = h.next();
  CHECK(fin.root["id"].to_int64() == 9);
  CHECK(fin.root["result"]["isError"].as_bool());
  CHECK(str(fin.root["result"]["_meta"][execution_id_meta_key]) == "job-9");
  CHECK(str(at(fin.root["result"]["content"], 0)["text"]).find("execution id") != std::string::npos);
  CHECK_FALSE(fin.root["result"]["status"].exists());
  h.close_input();
  CHECK(h.join() == 0);
}

TEST_CASE("transport.md/detached-calls-over-stdio: at the end of input a held call gets its final within drain_timeout") {
  job_server js;
  stdio_options o;
  o.drain_timeout = std::chrono::minutes{5};  // never reached: the run ends once both calls are answered
  harness h{js.srv, o, true};
  h.send(call_tool(1, "job"));
  h.send(call_tool(2, "job"));
  operation_handle first = js.ops.take();
  operation_handle second = js.ops.take();
  h.close_input();
  CHECK(first.finish(command_final("succeeded", 0)));
  CHECK(second.finish(command_final("failed", 1)));
  CHECK(h.join() == 0);
  const auto lines = h.remaining_lines();
  REQUIRE(lines.size() == 2);
  for (const auto& line : lines) {
    const auto a = parse(line);
    const auto id = a.root["id"].to_int64();
    REQUIRE(id.has_value());
    CHECK(str(a.root["result"]["_meta"][execution_id_meta_key]) == "job-" + std::to_string(*id));
    CHECK(str(a.root["result"]["structuredContent"]["status"]) ==
          (str(a.root["result"]["_meta"][execution_id_meta_key]) == first.execution_id() ? "succeeded" : "failed"));
  }
}

TEST_CASE("transport.md/detached-calls-over-stdio: a held call without a final by the end of drain_timeout gets the fallback") {
  job_server js;
  stdio_options o;
  o.drain_timeout = std::chrono::milliseconds{50};
  harness h{js.srv, o, true};
  h.send(call_tool(1, "job"));
  operation_handle op = js.ops.take();
  h.close_input();
  CHECK(h.join() == 0);
  CHECK_FALSE(op.finish(command_final("succeeded", 0)));  // after the end: written nowhere
  const auto lines = h.remaining_lines();
  REQUIRE(lines.size() == 1);
  const auto b = parse(lines[0]);
  CHECK(b.root["id"].to_int64() == 1);
  CHECK(b.root["result"]["isError"].as_bool());
  CHECK(str(b.root["result"]["_meta"][execution_id_meta_key]) == "job-1");
}

TEST_CASE("transport.md/detached-calls-over-stdio: stop() answers the held calls the fallback final at once") {
  job_server js;
  stdio_options o;
  o.workers = 1;  // the ping's answer comes once the job's handler returned and its call is held
  harness h{js.srv, o, true};
  h.send(call_tool(1, "job"));
  operation_handle op = js.ops.take();
  h.send(ping(2));
  CHECK(h.line() == R"({"jsonrpc":"2.0","id":2,"result":{}})");
  h.transport().stop();
  CHECK(h.join() == 0);
  CHECK_FALSE(op.finish(command_final("succeeded", 0)));
  const auto lines = h.remaining_lines();
  REQUIRE(lines.size() == 1);
  CHECK(parse(lines[0]).root["result"]["isError"].as_bool());
}

}  // TEST_SUITE

// ---- the per-request era over stdio (docs/eras.md#stdio) -------------------------------------------

namespace {

/// `params._meta` of a per-request request: the envelope (revision `version`, capabilities
/// `caps`), then `extra` members (each with a leading comma).
std::string envelope(std::string_view extra = {}, std::string_view caps = "{}", std::string_view version = "2026-07-28") {
  std::string m = R"({"io.modelcontextprotocol/protocolVersion":")";
  m += version;
  m += R"(","io.modelcontextprotocol/clientCapabilities":)";
  m += caps;
  m += extra;
  m += '}';
  return m;
}

/// A per-request request of `method` whose params are `members` (each with a trailing comma, or
/// none) and `_meta` = `meta`.
std::string pr_request(std::string_view id_json, std::string_view method, std::string_view members = {},
                       const std::string& meta = envelope()) {
  std::string p = "{";
  p += members;
  p += R"("_meta":)";
  p += meta;
  p += '}';
  return request(id_json, method, p);
}

/// A per-request `tools/call`.
std::string pr_call(std::string_view id_json, std::string_view name, std::string_view args_json = "{}",
                    const std::string& meta = envelope()) {
  return call_tool(id_json, name, args_json, meta);
}

void check_complete(const parsed& p) {
  CHECK(str(p.root["result"]["resultType"]) == "complete");
  CHECK(str(p.root["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"]) == "stdio-test");
}

/// The answer is `code` with the id `id_json` (as JSON text).
void check_error(const parsed& p, std::int64_t code, std::string_view id_json) {
  CHECK(p.root["error"]["code"].to_int64() == code);
  CHECK(to_json(p.root["id"]) == id_json);
  CHECK(is_correlation_id(str(p.root["error"]["data"]["correlation_id"])));
}

/// A server with one tool, which asks the client for a name (docs/eras.md#input-requests).
struct asking_server {
  server asking;
  asking_server() : asking(make_asking()) {}
  static server make_asking() {
    server_builder b{{.name = "stdio-test", .version = "1"}};
    b.tool("greet").description("Greets the user by name.").security("Echo", operation::read)
        .effect(tool_effect::read_only, true)
        .handler([](call_context& ctx, const arguments&) {
          const auto answer = ctx.input("name");
          if (!answer["content"]["name"].is_string()) {
            return tool_result::need_input(input_required{}.ask(
                "name", input_request::elicit("What is your name?",
                                              R"({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]})")));
          }
          return tool_result::text("Hello, " + std::string{answer["content"]["name"].as_string()});
        });
    return build(b);
  }
};

}  // namespace

TEST_SUITE("stdio") {

TEST_CASE("transport.md/detached-calls-over-stdio: a per-request call is answered its final, complete in that era") {
  job_server js;
  harness h{js.srv};
  h.send(pr_call("1", "job", "{}", envelope(R"(,"progressToken":"p1")")));
  operation_handle op = js.ops.take();
  CHECK(op.bound());
  CHECK(op.progress(1));
  CHECK(str(h.next().root["params"]["_meta"][execution_id_meta_key]) == "job-1");
  SUBCASE("its final") {
    CHECK(op.finish(command_final("succeeded", 0)));
    const auto fin = h.next();
    CHECK(fin.root["id"].to_int64() == 1);
    check_complete(fin);
    CHECK(str(fin.root["result"]["structuredContent"]["status"]) == "succeeded");
    CHECK(str(fin.root["result"]["_meta"][execution_id_meta_key]) == "job-1");
  }
  SUBCASE("a cancel releases it") {
    h.send(notification("notifications/cancelled", R"({"requestId":1,"_meta":)" + envelope() + "}"));
    h.send(pr_call("2", "echo", R"({"text":"hi"})"));
    CHECK(h.next().root["id"].to_int64() == 2);
    CHECK_FALSE(op.finish(command_final("succeeded", 0)));
  }
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines().empty());
}

TEST_CASE("eras.md/stdio: a per-request first request is answered in that era, no initialize needed") {
  stdio_server ss;
  harness h{ss.srv};
  h.send(pr_request("1", "tools/list"));
  const auto list = h.next();
  CHECK(list.root["id"].to_int64() == 1);
  check_complete(list);
  CHECK(list.root["result"]["tools"].is_array());
  h.send(pr_call("2", "echo", R"({"text":"hi"})"));
  const auto r = h.next();
  CHECK(r.root["id"].to_int64() == 2);
  check_complete(r);
  CHECK(str(at(r.root["result"]["content"], 0)["text"]) == "hi");
  // the era has no ping, and the connection's peer is never used
  h.send(pr_request("3", "ping"));
  check_error(h.next(), -32601, "3");
  CHECK(h.transport().client().protocol_version().empty());
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines().empty());
}

TEST_CASE("eras.md/stdio: a per-request tools/call with a progressToken gets its progress, then its result, and no log without logLevel") {
  stdio_server ss;
  harness h{ss.srv};
  h.send(pr_call("1", "chatty", "{}", envelope(R"(,"progressToken":"p")")));
  std::vector<std::string> kinds;
  for (;;) {
    const auto m = h.next();
    if (m.root["id"].exists()) {
      check_complete(m);
      CHECK(str(at(m.root["result"]["content"], 0)["text"]) == "done");
      break;
    }
    kinds.push_back(str(m.root["method"]));
    CHECK(str(m.root["params"]["progressToken"]) == "p");
  }
  CHECK(kinds == std::vector<std::string>{"notifications/progress", "notifications/progress"});
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines().empty());
}

TEST_CASE("eras.md/logging: over stdio a per-request call gets the log messages at or above its logLevel only") {
  stdio_server ss;
  harness h{ss.srv};
  h.send(pr_call("1", "chatty", "{}", envelope(R"(,"io.modelcontextprotocol/logLevel":"error")")));
  const auto log = h.next();
  CHECK(str(log.root["method"]) == "notifications/message");
  CHECK(str(log.root["params"]["level"]) == "error");
  const auto r = h.next();
  CHECK(r.root["id"].to_int64() == 1);
  check_complete(r);
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines().empty());
}

TEST_CASE("eras.md/stdio: server/discover first does not pin the era, an initialize after it serves the handshake era") {
  stdio_server ss;
  harness h{ss.srv};
  h.send(pr_request("1", "server/discover"));
  const auto d = h.next();
  check_complete(d);
  CHECK(str(at(d.root["result"]["supportedVersions"], 0)) == "2026-07-28");
  h.send(initialize(2));
  CHECK(str(h.next().root["result"]["protocolVersion"]) == "2025-11-25");
  h.send(notification("notifications/initialized"));
  h.send(ping(3));
  CHECK(h.line() == R"({"jsonrpc":"2.0","id":3,"result":{}})");
  CHECK(h.transport().client().initialized());
  // now pinned: a second discover is of the other era
  h.send(pr_request("4", "server/discover"));
  const auto e = h.next();
  check_error(e, -32022, "4");
  CHECK(to_json(e.root["error"]["data"]["supported"]) == R"(["2025-11-25","2025-06-18","2025-03-26"])");
  h.close_input();
  CHECK(h.join() == 0);
}

TEST_CASE("eras.md/stdio: after initialize a per-request claim is -32022 listing the handshake revisions") {
  stdio_server ss;
  harness h{ss.srv};
  h.send(initialize(1));
  CHECK(str(h.next().root["result"]["protocolVersion"]) == "2025-11-25");
  h.send(pr_call("2", "echo", R"({"text":"hi"})"));
  const auto e = h.next();
  check_error(e, -32022, "2");
  CHECK(to_json(e.root["error"]["data"]["supported"]) == R"(["2025-11-25","2025-06-18","2025-03-26"])");
  CHECK(str(e.root["error"]["data"]["requested"]) == "2026-07-28");
  // the handshake era goes on
  h.send(call_tool(3, "echo", R"({"text":"still"})"));
  const auto r = h.next();
  CHECK(str(at(r.root["result"]["content"], 0)["text"]) == "still");
  CHECK_FALSE(r.root["result"]["resultType"].exists());
  h.close_input();
  CHECK(h.join() == 0);
}

TEST_CASE("eras.md/stdio: after a per-request request initialize is -32022 listing 2026-07-28 and a request without envelope -32602") {
  stdio_server ss;
  harness h{ss.srv};
  h.send(pr_call("1", "echo", R"({"text":"hi"})"));
  check_complete(h.next());
  h.send(initialize(2));
  const auto e = h.next();
  check_error(e, -32022, "2");
  CHECK(to_json(e.root["error"]["data"]["supported"]) == R"(["2026-07-28"])");
  CHECK(str(e.root["error"]["data"]["requested"]) == "2025-11-25");
  CHECK(h.transport().client().protocol_version().empty());
  h.send(call_tool(3, "echo", R"({"text":"bare"})"));
  const auto bare = h.next();
  check_error(bare, -32602, "3");
  CHECK(to_json(bare.root["error"]["data"]["envelope"]) ==
        R"({"key":"io.modelcontextprotocol/protocolVersion","problem":"missing"})");
  // notifications of the handshake era change nothing
  h.send(notification("notifications/initialized"));
  CHECK_FALSE(h.transport().client().initialized());
  h.send(pr_call("4", "echo", R"({"text":"again"})"));
  CHECK(str(at(h.next().root["result"]["content"], 0)["text"]) == "again");
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines().empty());
}

TEST_CASE("eras.md/the-envelope: over stdio a refused envelope is -32602 with the id and does not pin the era") {
  stdio_server ss;
  harness h{ss.srv};
  h.send(pr_call(R"("a")", "echo", R"({"text":"hi"})", R"({"io.modelcontextprotocol/protocolVersion":"2026-07-28"})"));
  const auto e = h.next();
  check_error(e, -32602, R"("a")");
  CHECK(to_json(e.root["error"]["data"]["envelope"]) ==
        R"({"key":"io.modelcontextprotocol/clientCapabilities","problem":"missing"})");
  h.send(pr_call("2", "echo", R"({"text":"hi"})", envelope(R"(,"io.modelcontextprotocol/logLevel":"loud")")));
  check_error(h.next(), -32602, "2");
  h.send(initialize(3));
  CHECK(str(h.next().root["result"]["protocolVersion"]) == "2025-11-25");
  h.close_input();
  CHECK(h.join() == 0);
}

TEST_CASE("eras.md/errors: over stdio an unsupported per-request revision is -32022 with supported and requested") {
  stdio_server ss;
  harness h{ss.srv};
  h.send(pr_call("1", "echo", R"({"text":"hi"})", envelope({}, "{}", "2027-01-01")));
  const auto e = h.next();
  check_error(e, -32022, "1");
  CHECK(to_json(e.root["error"]["data"]["supported"]) == R"(["2026-07-28"])");
  CHECK(str(e.root["error"]["data"]["requested"]) == "2027-01-01");
  // not pinned: the client may still choose its era
  h.send(initialize(2));
  CHECK(str(h.next().root["result"]["protocolVersion"]) == "2025-11-25");
  h.close_input();
  CHECK(h.join() == 0);
}

TEST_CASE("eras.md/stdio: notifications/cancelled stops a running per-request call and no answer is written for it") {
  stdio_server ss;
  harness h{ss.srv};
  h.send(pr_call("5", "block"));
  REQUIRE(ss.hold.wait_arrived());
  h.send(cancel(R"("5")"));  // "5" is not 5
  h.send(pr_call("6", "echo", R"({"text":"after"})"));
  CHECK(h.next().root["id"].to_int64() == 6);
  CHECK(ss.finished == 0);
  h.send(cancel("5"));
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (ss.finished == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
  CHECK(ss.finished == 1);  // stopped by the cancellation, not by the end of the input
  h.send(pr_call("7", "echo", R"({"text":"last"})"));
  CHECK(h.next().root["id"].to_int64() == 7);
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines().empty());  // nothing for id 5
}

TEST_CASE("eras.md/stdio: a cancelled per-request request still in the queue never runs") {
  stdio_server ss;
  stdio_options o;
  o.workers = 1;
  harness h{ss.srv, o};
  h.send(pr_call("1", "block"));
  REQUIRE(ss.hold.wait_arrived());
  h.send(pr_call("2", "echo", R"({"text":"cancelled"})"));
  h.send(notification("notifications/cancelled", R"({"requestId":2,"_meta":)" + envelope() + "}"));
  h.send("{not json");  // answered on the reader, after the cancellation
  CHECK(h.next().root["error"]["code"].to_int64() == -32700);
  ss.hold.open();
  CHECK(h.next().root["id"].to_int64() == 1);
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines().empty());
}

TEST_CASE("eras.md/input-requests: over stdio an input_required result is answered and the retry completes") {
  asking_server as;
  harness h{as.asking};
  const std::string meta = envelope({}, R"({"elicitation":{}})");
  h.send(pr_call("1", "greet", "{}", meta));
  const auto asked = h.next();
  CHECK(str(asked.root["result"]["resultType"]) == "input_required");
  CHECK(str(asked.root["result"]["inputRequests"]["name"]["method"]) == "elicitation/create");
  const std::string state = str(asked.root["result"]["requestState"]);
  REQUIRE(state.starts_with("v1."));
  h.send(pr_request("2", "tools/call",
                    R"("name":"greet","arguments":{},"inputResponses":{"name":{"action":"accept","content":{"name":"Ada"}}},"requestState":")" +
                        state + R"(",)",
                    meta));
  const auto done = h.next();
  check_complete(done);
  CHECK(str(at(done.root["result"]["content"], 0)["text"]) == "Hello, Ada");
  h.close_input();
  CHECK(h.join() == 0);
}

TEST_CASE("eras.md/choosing-the-eras: a handshake-only stdio connection refuses a per-request claim with -32022") {
  stdio_server ss;
  stdio_options o;
  o.eras = served_eras::handshake_only;
  harness h{ss.srv, o};
  h.send(pr_request("1", "server/discover"));
  const auto e = h.next();
  check_error(e, -32022, "1");
  CHECK(to_json(e.root["error"]["data"]["supported"]) == R"(["2025-11-25","2025-06-18","2025-03-26"])");
  CHECK(str(e.root["error"]["data"]["requested"]) == "2026-07-28");
  h.send(initialize(2));  // the client falls back
  CHECK(str(h.next().root["result"]["protocolVersion"]) == "2025-11-25");
  h.close_input();
  CHECK(h.join() == 0);
}

TEST_CASE("eras.md/choosing-the-eras: a per-request-only stdio connection refuses initialize with -32022") {
  stdio_server ss;
  stdio_options o;
  o.eras = served_eras::per_request_only;
  harness h{ss.srv, o};
  h.send(initialize(1));
  const auto e = h.next();
  check_error(e, -32022, "1");
  CHECK(to_json(e.root["error"]["data"]["supported"]) == R"(["2026-07-28"])");
  CHECK(str(e.root["error"]["data"]["requested"]) == "2025-11-25");
  h.send(ping(2));
  const auto p = h.next();
  check_error(p, -32022, "2");
  CHECK_FALSE(p.root["error"]["data"]["requested"].exists());
  h.send(pr_call("3", "echo", R"({"text":"hi"})"));
  check_complete(h.next());
  CHECK(h.transport().client().protocol_version().empty());
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines().empty());
}

}  // TEST_SUITE

// ---- subscriptions/listen over stdio (docs/eras.md#stdio, #subscriptions) ----------------------------

namespace {

constexpr std::string_view listen_ack = "notifications/subscriptions/acknowledged";

/// A per-request `subscriptions/listen` with `params.notifications` = `filter_json`.
std::string pr_listen(std::string_view id_json, std::string_view filter_json) {
  return pr_request(id_json, "subscriptions/listen", std::string{R"("notifications":)"} + std::string{filter_json} + ",");
}

/// A stamped notification line of a listen: `method`, then `params` `{[uri,]_meta:{subscriptionId}}`.
std::string listen_line(std::string_view method, std::string_view id_json, std::string_view uri = {}) {
  std::string l = R"({"jsonrpc":"2.0","method":")";
  l += method;
  l += R"(","params":{)";
  if (!uri.empty()) {
    l += R"("uri":")";
    l += uri;
    l += R"(",)";
  }
  l += R"("_meta":{"io.modelcontextprotocol/subscriptionId":)";
  l += id_json;
  l += "}}}";
  return l;
}

/// The acknowledgement of listen `id_json` granting `granted_json`.
std::string ack_line(std::string_view id_json, std::string_view granted_json) {
  return std::string{R"({"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":)"} +
         std::string{granted_json} + R"(,"_meta":{"io.modelcontextprotocol/subscriptionId":)" + std::string{id_json} +
         "}}}";
}

/// The result that ends listen `id_json` (the stdio-test server's info).
std::string listen_result_line(std::string_view id_json) {
  return std::string{R"({"jsonrpc":"2.0","id":)"} + std::string{id_json} +
         R"(,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":)" +
         std::string{id_json} + R"(,"io.modelcontextprotocol/serverInfo":{"name":"stdio-test","version":"1"}}}})";
}

void publish_tools_changed(server& s) { s.publish(server_event{server_event_kind::tools_list_changed, {}}); }

/// The next `n` lines, sorted (for events reaching several listens, written in no fixed order).
std::vector<std::string> sorted_lines(harness& h, std::size_t n) {
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < n; ++i) {
    auto l = h.line();
    REQUIRE_MESSAGE(l.has_value(), "no line from the transport");
    lines.push_back(std::move(*l));
  }
  std::ranges::sort(lines);
  return lines;
}

/// Reads lines until none comes for a while; returns how many came.
std::size_t drain_lines(harness& h) {
  std::size_t n = 0;
  while (h.line(std::chrono::milliseconds{300})) ++n;
  return n;
}

}  // namespace

TEST_SUITE("stdio") {

TEST_CASE("eras.md/subscriptions: stdio listen is acknowledged with what the server can send, then one stamped line per matching event") {
  stdio_server ss;  // tools and a resource, no prompts
  harness h{ss.srv};
  h.send(pr_listen(R"("L1")", R"({"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":false,)"
                              R"("resourceSubscriptions":["res://a","res://nowhere"]})"));
  CHECK(h.line() == ack_line(R"("L1")", R"({"toolsListChanged":true,"resourceSubscriptions":["res://a","res://nowhere"]})"));
  // Hidden: the server publishes the list change.
  CHECK(ss.srv.set_tool_enabled("chatty", false));
  CHECK(h.line() == listen_line("notifications/tools/list_changed", R"("L1")"));
  // Not asked for, or not a subscribed URI: nothing; the next line is the next matching event.
  ss.srv.publish(server_event{server_event_kind::prompts_list_changed, {}});
  ss.srv.publish(server_event{server_event_kind::resources_list_changed, {}});
  ss.srv.publish(server_event{server_event_kind::resource_updated, "res://b"});
  ss.srv.publish(server_event{server_event_kind::resource_updated, "res://"});
  ss.srv.publish(server_event{server_event_kind::resource_updated, "res://a"});
  CHECK(h.line() == listen_line("notifications/resources/updated", R"("L1")", "res://a"));
  // A second listen with an integer id: each event reaches each listen once, with its own id.
  h.send(pr_listen("7", R"({"toolsListChanged":true})"));
  CHECK(h.line() == ack_line("7", R"({"toolsListChanged":true})"));
  CHECK(ss.srv.set_tool_enabled("chatty", true));
  CHECK(sorted_lines(h, 2) == std::vector<std::string>{listen_line("notifications/tools/list_changed", R"("L1")"),
                                                       listen_line("notifications/tools/list_changed", "7")});
  // Calls go on meanwhile.
  h.send(pr_call("8", "echo", R"({"text":"still"})"));
  const auto r = h.next();
  CHECK(r.root["id"].to_int64() == 8);
  CHECK(str(at(r.root["result"]["content"], 0)["text"]) == "still");
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines() == std::vector<std::string>{listen_result_line(R"("L1")"), listen_result_line("7")});
}

TEST_CASE("eras.md/subscriptions: stdio a listen granted nothing is acknowledged and answered at once, holding no slot") {
  stdio_server ss;
  stdio_options o;
  o.max_listens = 1;
  harness h{ss.srv, o};
  for (const std::string_view filter :
       {std::string_view{"{}"}, std::string_view{R"({"toolsListChanged":false,"resourceSubscriptions":[]})"},
        std::string_view{R"({"promptsListChanged":true})"}}) {
    CAPTURE(filter);
    h.send(pr_listen(R"("nothing")", filter));
    CHECK(h.line() == ack_line(R"("nothing")", "{}"));
    CHECK(h.line() == listen_result_line(R"("nothing")"));
  }
  h.send(pr_listen("1", R"({"toolsListChanged":true})"));  // the one slot is still free
  CHECK(h.line() == ack_line("1", R"({"toolsListChanged":true})"));
  publish_tools_changed(ss.srv);
  CHECK(h.line() == listen_line("notifications/tools/list_changed", "1"));
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines() == std::vector<std::string>{listen_result_line("1")});
}

TEST_CASE("eras.md/subscriptions: stdio a missing or malformed filter is -32602 with the id, as on HTTP") {
  stdio_server ss;
  stdio_options o;
  o.max_listen_uris = 2;
  harness h{ss.srv, o};
  CHECK(stdio_options{}.max_listen_uris == 1024);
  h.send(pr_request(R"("none")", "subscriptions/listen"));
  check_error(h.next(), -32602, R"("none")");
  for (const std::string_view filter :
       {"null", "true", R"("toolsListChanged")", "[]", "5", R"({"resourceSubscriptions":"res://a"})",
        R"({"resourceSubscriptions":null})", R"({"resourceSubscriptions":[1]})",
        R"({"toolsListChanged":true,"resourceSubscriptions":["res://a",null]})", R"({"toolsListChanged":"yes"})",
        R"({"promptsListChanged":1})", R"({"resourcesListChanged":null})",
        R"({"resourceSubscriptions":["res://a","res://b","res://c"]})"}) {
    CAPTURE(filter);
    h.send(pr_listen("11", filter));
    const auto e = h.next();
    check_error(e, -32602, "11");
    CHECK(str(e.root["error"]["message"]).starts_with("Invalid params"));
  }
  // Nothing was opened: no event reaches the output, and a good listen still works.
  publish_tools_changed(ss.srv);
  h.send(pr_listen("12", R"({"resourceSubscriptions":["res://a","res://b"]})"));
  CHECK(h.line() == ack_line("12", R"({"resourceSubscriptions":["res://a","res://b"]})"));
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines() == std::vector<std::string>{listen_result_line("12")});
}

TEST_CASE("eras.md/subscriptions: stdio past max_listens a listen is -32012 Subscription limit reached, a cancel frees a slot") {
  CHECK(stdio_options{}.max_listens == 8);
  CHECK(default_stdio_max_listens == 8);
  stdio_server ss;
  stdio_options o;
  o.max_listens = 2;
  harness h{ss.srv, o};
  h.send(pr_listen("1", R"({"toolsListChanged":true})"));
  CHECK(h.line() == ack_line("1", R"({"toolsListChanged":true})"));
  h.send(pr_listen("2", R"({"toolsListChanged":true})"));
  CHECK(h.line() == ack_line("2", R"({"toolsListChanged":true})"));
  h.send(pr_listen(R"("three")", R"({"toolsListChanged":true})"));
  const auto over = h.next();
  check_error(over, -32012, R"("three")");
  CHECK(str(over.root["error"]["message"]) == "Subscription limit reached");
  h.send(cancel("1"));
  h.send(pr_listen(R"("three")", R"({"toolsListChanged":true})"));
  CHECK(h.line() == ack_line(R"("three")", R"({"toolsListChanged":true})"));
  h.send(pr_listen("4", R"({"toolsListChanged":true})"));
  check_error(h.next(), -32012, "4");
  publish_tools_changed(ss.srv);
  CHECK(sorted_lines(h, 2) == std::vector<std::string>{listen_line("notifications/tools/list_changed", R"("three")"),
                                                       listen_line("notifications/tools/list_changed", "2")});
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines() == std::vector<std::string>{listen_result_line("2"), listen_result_line(R"("three")")});
}

TEST_CASE("eras.md/subscriptions: stdio notifications/cancelled naming a listen ends it without an answer") {
  stdio_server ss;
  harness h{ss.srv};
  h.send(pr_listen("5", R"({"toolsListChanged":true})"));
  CHECK(h.line() == ack_line("5", R"({"toolsListChanged":true})"));
  h.send(pr_listen(R"("keep")", R"({"resourceSubscriptions":["res://a"]})"));
  CHECK(h.line() == ack_line(R"("keep")", R"({"resourceSubscriptions":["res://a"]})"));
  h.send(cancel(R"("5")"));  // "5" is not 5
  h.send("{not json");       // answered on the reader, after the cancellation
  CHECK(h.next().root["error"]["code"].to_int64() == -32700);
  publish_tools_changed(ss.srv);
  CHECK(h.line() == listen_line("notifications/tools/list_changed", "5"));
  h.send(notification("notifications/cancelled", R"({"requestId":5,"reason":"done","_meta":)" + envelope() + "}"));
  h.send("{not json");
  CHECK(h.next().root["error"]["code"].to_int64() == -32700);
  publish_tools_changed(ss.srv);  // reaches no listen now
  ss.srv.publish(server_event{server_event_kind::resource_updated, "res://a"});
  CHECK(h.line() == listen_line("notifications/resources/updated", R"("keep")", "res://a"));
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines() == std::vector<std::string>{listen_result_line(R"("keep")")});  // nothing for 5
}

TEST_CASE("eras.md/subscriptions: stdio stop() answers every open listen its result before run() returns") {
  stdio_server ss;
  harness h{ss.srv};
  h.send(pr_listen(R"("a")", R"({"toolsListChanged":true})"));
  CHECK(h.line() == ack_line(R"("a")", R"({"toolsListChanged":true})"));
  h.send(pr_listen("-3", R"({"toolsListChanged":true,"resourceSubscriptions":["res://a"]})"));
  CHECK(h.line() == ack_line("-3", R"({"toolsListChanged":true,"resourceSubscriptions":["res://a"]})"));
  h.transport().stop();
  CHECK(h.join() == 0);
  publish_tools_changed(ss.srv);  // after the end: the subscriptions are gone
  CHECK(h.remaining_lines() == std::vector<std::string>{listen_result_line(R"("a")"), listen_result_line("-3")});
}

TEST_CASE("eras.md/stdio: on the handshake era subscriptions/listen is unknown -32601, its per-request form -32022") {
  stdio_server ss;
  harness h{ss.srv};
  h.send(initialize(1));
  CHECK(str(h.next().root["result"]["protocolVersion"]) == "2025-11-25");
  h.send(request(2, "subscriptions/listen", R"({"notifications":{"toolsListChanged":true}})"));
  const auto unknown = h.next();
  CHECK(unknown.root["id"].to_int64() == 2);
  CHECK(unknown.root["error"]["code"].to_int64() == -32601);
  h.send(pr_listen("3", R"({"toolsListChanged":true})"));
  check_error(h.next(), -32022, "3");
  publish_tools_changed(ss.srv);
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines().empty());
}

TEST_CASE("eras.md/subscriptions: stdio a listen first pins the per-request era, and a listen without envelope after it is -32602") {
  stdio_server ss;
  harness h{ss.srv};
  h.send(pr_listen("1", R"({"toolsListChanged":true})"));
  CHECK(h.line() == ack_line("1", R"({"toolsListChanged":true})"));
  h.send(initialize(2));
  check_error(h.next(), -32022, "2");
  h.send(request(3, "subscriptions/listen", R"({"notifications":{"toolsListChanged":true}})"));
  check_error(h.next(), -32602, "3");
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines() == std::vector<std::string>{listen_result_line("1")});
}

TEST_CASE("eras.md/subscriptions: stdio publish never waits for a client that does not read, past the backlog lines are dropped") {
  stdio_server ss;
  harness h{ss.srv};
  h.send(pr_listen("1", R"({"toolsListChanged":true})"));
  CHECK(h.line() == ack_line("1", R"({"toolsListChanged":true})"));
  // Far more than a pipe holds: the writer blocks on the full pipe, publish goes on.
  constexpr std::size_t published = 4000;
  const auto started = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < published; ++i) publish_tools_changed(ss.srv);
  CHECK(std::chrono::steady_clock::now() - started < patience);
  std::size_t received = 0;
  while (auto l = h.line(std::chrono::milliseconds{500})) {
    REQUIRE(*l == listen_line("notifications/tools/list_changed", "1"));
    ++received;
  }
  CHECK(received >= 1024);  // the backlog, and what the pipe held
  CHECK(received < published);
  publish_tools_changed(ss.srv);  // read again: lines flow
  CHECK(h.line() == listen_line("notifications/tools/list_changed", "1"));
  h.close_input();
  CHECK(h.join() == 0);
  CHECK(h.remaining_lines() == std::vector<std::string>{listen_result_line("1")});
}

TEST_CASE("eras.md/subscriptions: stdio listens opened and cancelled while another thread publishes") {
  stdio_server ss;
  stdio_options o;
  o.max_listens = 3;
  harness h{ss.srv, o};
  std::atomic<bool> stop{false};
  std::thread publisher{[&] {
    bool shown = false;
    while (!stop.load()) {
      (void)ss.srv.set_tool_enabled("slow", shown);
      ss.srv.publish(server_event{server_event_kind::resource_updated, "res://a"});
      shown = !shown;
    }
  }};
  for (int i = 0; i < 30; ++i) {
    h.send(pr_listen(std::to_string(i), R"({"toolsListChanged":true,"resourceSubscriptions":["res://a"]})"));
    if (i >= 2) h.send(cancel(std::to_string(i - 2)));
  }
  h.send("{not json");  // the reader has handled everything before it once its answer is out
  for (;;) {
    const auto l = h.line();
    REQUIRE(l.has_value());
    if (l->find("-32700") != std::string::npos) break;
    const auto p = parse(*l);
    CHECK_FALSE(p.root["error"].exists());  // never over the cap
  }
  stop = true;
  publisher.join();
  (void)drain_lines(h);  // the events still queued: a full pipe would hold the end back
  h.close_input();
  CHECK(h.join() == 0);
  // The two listens still open (28 and 29) get their results.
  CHECK(h.remaining_lines() == std::vector<std::string>{listen_result_line("28"), listen_result_line("29")});
  (void)ss.srv.set_tool_enabled("slow", true);
}

TEST_CASE("tasks.md/notifications: stdio a listen naming a 2026 task gets its status notification") {
  memory_task_store store;
  gate hold;
  server_builder b{{.name = "stdio-test", .version = "1"}};
  b.tasks(store);
  b.tool("work")
      .description("Waits for the gate, then answers.")
      .security("Echo", operation::read)
      .effect(tool_effect::read_only, true)
      .task_support(task_support::optional)
      .handler([&hold](call_context& ctx, const arguments&) {
        hold.arrive();
        if (!hold.block(ctx.stop_token())) return tool_result::text("stopped");
        return tool_result::text("worked");
      });
  server srv = build(b);
  harness h{srv};
  const std::string caps = R"({"extensions":{"io.modelcontextprotocol/tasks":{}}})";
  h.send(pr_call("1", "work", "{}", envelope({}, caps)));
  const auto created = h.next();
  CAPTURE(to_json(created.root));
  const std::string id = str(created.root["result"]["taskId"]);
  REQUIRE(is_task_id(id));
  REQUIRE(hold.wait_arrived());
  h.send(pr_request(R"("T")", "subscriptions/listen", R"("notifications":{"tasksStatus":[")" + id + R"("]},)",
                    envelope({}, caps)));
  CHECK(h.line() == ack_line(R"("T")", R"({"tasksStatus":[")" + id + R"("]})"));
  hold.open();
  const auto status = h.next();
  CAPTURE(to_json(status.root));
  CHECK(str(status.root["method"]) == "notifications/tasks/status");
  CHECK(str(status.root["params"]["taskId"]) == id);
  CHECK(str(status.root["params"]["status"]) == "completed");
  CHECK(str(at(status.root["params"]["result"]["content"], 0)["text"]) == "worked");
  CHECK(status.root["params"]["_meta"].exists());
  if (status.root["params"]["_meta"].exists()) {
    CHECK(to_json(status.root["params"]["_meta"]) == R"({"io.modelcontextprotocol/subscriptionId":"T"})");
  }
  // Without the extension a listen asking for it is -32021.
  h.send(pr_request("2", "subscriptions/listen", R"("notifications":{"tasksStatus":["x"]},)"));
  const auto refused = h.next();
  check_error(refused, -32021, "2");
  const auto required = refused.root["error"]["data"]["requiredCapabilities"];
  REQUIRE(required.exists());
  CHECK(to_json(required) == R"({"extensions":{"io.modelcontextprotocol/tasks":{}}})");
  h.close_input();
  CHECK(h.join() == 0);
}

TEST_CASE("tasks.md/input: stdio a 2025 task's input request arrives on the output and the client's answer resumes it") {
  memory_task_store store;
  server_builder b{{.name = "stdio-test", .version = "1"}};
  b.tasks(store);
  b.tool("ask")
      .description("Asks the client for a name, then greets it.")
      .security("Echo", operation::read)
      .effect(tool_effect::read_only, true)
      .task_support(task_support::optional)
      .handler([](call_context& ctx, const arguments&) { return server_fixture::greet_or_ask(ctx, "who", "Who?"); });
  server srv = build(b);
  harness h{srv};
  h.send(initialize(0, "2025-11-25", R"({"elicitation":{}})"));
  REQUIRE(h.next().root["result"]["protocolVersion"].is_string());
  h.send(notification("notifications/initialized"));
  h.send(request(1, "tools/call", R"({"name":"ask","task":{}})"));
  // The CreateTaskResult and the input request (with the input_required status notification) come
  // on the output, in no fixed order: the task's run may start before the call's answer is written.
  std::string id;
  std::string related;
  std::int64_t rid = 0;
  for (int i = 0; i < 6 && (id.empty() || rid == 0); ++i) {
    const auto m = h.next();
    if (m.root["result"].exists() && m.root["id"].to_int64() == 1) id = str(m.root["result"]["task"]["taskId"]);
    if (str(m.root["method"]) != "elicitation/create") continue;
    related = str(m.root["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"]);
    rid = m.root["id"].to_int64().value_or(0);
  }
  REQUIRE(is_task_id(id));
  CHECK(related == id);
  REQUIRE(rid != 0);
  h.send(request(2, "tasks/result", R"({"taskId":")" + id + R"("})"));
  h.send(client_result(rid, R"({"action":"accept","content":{"name":"Ada"}})"));
  std::string text;
  for (int i = 0; i < 6 && text.empty(); ++i) {
    const auto m = h.next();
    if (m.root["result"].exists() && m.root["id"].to_int64() == 2) text = str(at(m.root["result"]["content"], 0)["text"]);
  }
  CHECK(text == "hello Ada");
  h.close_input();
  CHECK(h.join() == 0);
}

}  // TEST_SUITE
