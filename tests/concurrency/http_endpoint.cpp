// SPDX-License-Identifier: Apache-2.0
// Concurrency test of the HTTP endpoint (run under TSan by the tsan preset;
// docs/sessions.md#the-session-registry, #get-attach-replay-resume, #pinned-finals, #streamed-post,
// #shutdown, #lock-discipline): clients opening sessions, calling (plain, streamed and upgraded),
// cancelling, dropping streams, attaching GET streams and deleting sessions, while the maintenance
// tick runs.
#include <mcpcore/transport/http_endpoint.hpp>

#include <doctest/doctest.h>

#include "support/header_views.hpp"
#include "support/http_endpoint_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

using namespace mcpcore;
using namespace std::chrono_literals;

namespace {

constexpr std::chrono::milliseconds patience{10000};

/// Every request is "alice" or "bob" by its bearer token.
struct two_principals {
  [[nodiscard]] std::optional<principal> authenticate(const http_request_view& req) const {
    const auto a = req.header("Authorization");
    if (!a) return std::nullopt;
    principal p;
    p.id = *a == "Bearer bob" ? "bob" : "alice";
    return p;
  }
  [[nodiscard]] credential_verdict revalidate(const principal& /*p*/) const noexcept { return credential_verdict::valid; }
};

using http_endpoint_fixture::into;
using http_endpoint_fixture::reply_box;
using http_endpoint_fixture::thread_executor;

struct owned_request {
  std::string method = "POST";
  std::string body;
  std::vector<http_header> headers;
  test_support::header_views fields{};
  [[nodiscard]] http_request_view view() const {
    http_request_view v;
    v.method = method;
    v.target = "/mcp";
    v.body = body;
    v.headers = fields.of(headers);
    v.local = parse_local_address("127.0.0.1:1");
    return v;
  }
};

owned_request make(std::string method, std::string body, const std::string& who, const std::string& sid,
                   bool sse = true) {
  owned_request r;
  r.method = std::move(method);
  r.body = std::move(body);
  r.headers.push_back({"Host", "localhost"});
  r.headers.push_back({"Authorization", "Bearer " + who});
  if (r.method == "POST") r.headers.push_back({"Content-Type", "application/json"});
  r.headers.push_back({"Accept", sse ? "application/json, text/event-stream" : "application/json"});
  if (!sid.empty()) r.headers.push_back({"Mcp-Session-Id", sid});
  return r;
}

http_reply send(http_endpoint& ep, const owned_request& r) {
  auto box = std::make_shared<reply_box>();
  ep.handle(r.view(), into(box));
  REQUIRE(box->wait(patience));
  std::lock_guard lock{box->mu};
  return std::move(*box->reply);
}

/// Pulls a stream until it finishes or `max_pulls` passed; drops it (client gone) otherwise.
/// Returns the bytes read.
std::string read(std::unique_ptr<http_stream> s, int max_pulls, const manual_clock& clk) {
  auto woken = std::make_shared<std::atomic<bool>>(false);
  s->on_ready([woken] { woken->store(true); });
  std::string wire;
  for (int i = 0; i < max_pulls && !s->finished(); ++i) {
    if (!woken->exchange(false)) std::this_thread::sleep_for(1ms);
    std::string out;
    s->pull(clk.steady_now(), out);
    if (!out.empty()) s->written();
    wire += out;
  }
  if (!s->finished()) s->write_failed();
  return wire;
}

std::string call(std::int64_t id, std::string_view tool, bool progress) {
  std::string body = R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"tools/call","params":{"name":")";
  body += tool;
  body += '"';
  if (progress) body += R"(,"_meta":{"progressToken":)" + std::to_string(id) + "}";
  body += "}}";
  return body;
}

}  // namespace

TEST_CASE("sessions.md/lock-discipline: sessions, calls, cancels, GET attaches, deletes and ticks race without harm") {
  server_info info;
  info.name = "http-race";
  info.version = "1.0.0";
  server_builder b{info};
  const auto add = [&](const std::string& name, tool_handler h) {
    b.tool(name)
        .description("Race tool " + name + ".")
        .security("Thing", operation::read)
        .effect(tool_effect::read_only, false)
        .handler(std::move(h));
  };
  add("quick", [](call_context&, const arguments&) { return tool_result::text("quick"); });
  add("steps", [](call_context& ctx, const arguments&) {
    for (int i = 1; i <= 3; ++i) (void)ctx.progress(i, 3);
    return tool_result::text("steps");
  });
  add("chatty", [](call_context& ctx, const arguments&) {
    (void)ctx.log(log_level::info, "a");
    (void)ctx.log(log_level::info, "b");
    return tool_result::text("chatty");
  });
  add("waits", [](call_context& ctx, const arguments&) {
    (void)ctx.log(log_level::info, "waiting");
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock{mu};
    (void)cv.wait_for(lock, ctx.stop_token(), 200ms, [] { return false; });
    return tool_result::text("waited");
  });
  auto built = b.build();
  REQUIRE(built.has_value());
  server srv = std::move(*built);

  manual_clock clk;
  thread_executor exec;
  {
    http_endpoint ep{srv, two_principals{}, http_endpoint_fixture::test_options(), clock_ref<manual_clock>{clk}};
    const http_executor_binding binding = ep.bind_executor(exec.get());

    std::atomic<bool> stop{false};
    std::thread ticker([&] {
      while (!stop.load()) {
        clk.advance(50ms);
        ep.tick();
        std::this_thread::sleep_for(1ms);
      }
    });

    constexpr int clients = 4;
    constexpr int rounds = 6;
    std::atomic<int> failures{0};
    std::vector<std::thread> ts;
    for (int c = 0; c < clients; ++c) {
      ts.emplace_back([&, c] {
        const std::string who = c % 2 == 0 ? "alice" : "bob";
        for (int round = 0; round < rounds; ++round) {
          auto init = send(ep, make("POST",
                                    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}})",
                                    who, {}));
          const auto sid_view = init.head.header("Mcp-Session-Id");
          if (init.head.status != 200 || !sid_view) {
            ++failures;
            continue;
          }
          const std::string sid{*sid_view};
          std::int64_t id = 10;
          // A GET stream, read a little on its own thread, then dropped.
          auto g = send(ep, make("GET", "", who, sid));
          std::thread get_reader;
          if (g.stream) {
            get_reader = std::thread([s = std::move(g.stream), &clk]() mutable { (void)read(std::move(s), 20, clk); });
          }
          // Plain, streamed and upgraded calls, read to the end or dropped half-way.
          for (const auto* tool : {"quick", "steps", "chatty"}) {
            const std::int64_t cid = ++id;
            auto r = send(ep, make("POST", call(cid, tool, std::string_view{tool} == "steps"), who, sid));
            if (r.head.status != 200) ++failures;
            const std::string result = R"("id":)" + std::to_string(cid) + R"(,"result")";
            if (!r.stream) {
              if (r.head.body.find(result) == std::string::npos) ++failures;
              continue;
            }
            if (round % 2 == 0) {
              // Read to the end: the result is the last event.
              const std::string wire = read(std::move(r.stream), 500, clk);
              const auto at = wire.rfind(result);
              if (at == std::string::npos || wire.find("data:", at) != std::string::npos) ++failures;
            } else {
              (void)read(std::move(r.stream), 2, clk);  // dropped half-way: the result parks
            }
          }
          // A call cancelled while it waits, on its stream or as a plain answer.
          {
            const std::int64_t wid = ++id;
            auto req = make("POST", call(wid, "waits", round % 2 == 0), who, sid, round % 3 != 0);
            auto box = std::make_shared<reply_box>();
            ep.handle(req.view(), into(box));
            const std::string cancel =
                R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":)" + std::to_string(wid) + "}}";
            if (send(ep, make("POST", cancel, who, sid)).head.status != 202) ++failures;
            if (!box->wait(patience)) {
              ++failures;
            } else {
              std::unique_ptr<http_stream> s;
              {
                std::lock_guard lock{box->mu};
                s = std::move(box->reply->stream);
              }
              if (s) (void)read(std::move(s), 200, clk);
            }
          }
          if (round % 2 == 1) {
            const auto d = send(ep, make("DELETE", "", who, sid));
            if (d.head.status != 200) ++failures;
          }
          if (get_reader.joinable()) get_reader.join();
        }
      });
    }
    for (auto& t : ts) t.join();
    stop = true;
    ticker.join();
    exec.join();
    CHECK(failures.load() == 0);
    ep.begin_shutdown();
    ep.tick();
    CHECK(ep.budget().in_use() == 0);
  }
}
