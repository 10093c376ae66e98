// SPDX-License-Identifier: Apache-2.0
// Concurrency test of calls that wait for their client without a thread (run under TSan by the
// tsan preset; docs/eras.md#waiting-for-the-client): clients call a tool that asks for input, then
// answer it, cancel it, drop its stream and answer late, leave it to time out, or end their
// session, while the maintenance tick advances the clock and expires rounds. Every call answered
// gets its own answer back, and no waiting call or count is left behind.
#include <mcpcore/transport/http_endpoint.hpp>

#include <doctest/doctest.h>

#include "support/http_endpoint_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/wire/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

using namespace mcpcore;
using namespace std::chrono_literals;

namespace {

constexpr std::chrono::milliseconds patience{10000};

using http_endpoint_fixture::post;
using http_endpoint_fixture::request;

// Sends `r` and waits for its reply (no doctest assertion: this runs on the clients' threads).
std::optional<http_reply> send(http_endpoint& ep, const request& r) {
  auto box = std::make_shared<http_endpoint_fixture::reply_box>();
  ep.handle(r.view(), http_endpoint_fixture::into(box));
  if (!box->wait(patience)) return std::nullopt;
  std::lock_guard lock{box->mu};
  return std::move(*box->reply);
}

/// Reads one stream step by step.
class reader {
 public:
  reader(std::unique_ptr<http_stream> s, const manual_clock& clk) : s_(std::move(s)), clk_(clk) {
    s_->on_ready([w = woken_] { w->store(true); });
  }
  /// Pulls until `wire()` contains `needle` or the stream finished (bounded); whether it does.
  bool until(std::string_view needle) {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (wire_.find(needle) == std::string::npos && !s_->finished() && std::chrono::steady_clock::now() < deadline) {
      pull();
    }
    return wire_.find(needle) != std::string::npos;
  }
  /// Pulls to the end (bounded); whether it ended.
  bool to_end() {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (!s_->finished() && std::chrono::steady_clock::now() < deadline) pull();
    return s_->finished();
  }
  void drop() {
    if (!s_->finished()) s_->write_failed();
  }
  [[nodiscard]] const std::string& wire() const { return wire_; }

 private:
  void pull() {
    if (!woken_->exchange(false)) std::this_thread::sleep_for(1ms);
    std::string out;
    s_->pull(clk_.steady_now(), out);
    if (!out.empty()) s_->written();
    wire_ += out;
  }
  std::unique_ptr<http_stream> s_;
  const manual_clock& clk_;
  std::shared_ptr<std::atomic<bool>> woken_ = std::make_shared<std::atomic<bool>>(false);
  std::string wire_;
};

/// The id of the elicitation request in `wire` (0 when there is none).
std::int64_t elicitation_id(const std::string& wire) {
  const auto at = wire.find(R"("method":"elicitation/create")");
  if (at == std::string::npos) return 0;
  const auto id_at = wire.rfind(R"("id":)", at);
  if (id_at == std::string::npos) return 0;
  return std::strtoll(wire.c_str() + id_at + 5, nullptr, 10);
}

std::string call(std::int64_t id, const std::string& name) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":"ask","arguments":{"expect":")" + name + R"("}}})";
}

std::string answer(std::int64_t rid, const std::string& name) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(rid) + R"(,"result":{"action":"accept","content":{"name":")" +
         name + R"("}}})";
}

}  // namespace

TEST_CASE("eras.md/waiting-for-the-client: answers, cancels, drops, timeouts, session ends and ticks race without harm") {
  manual_clock clk;
  server_options o;
  o.max_client_request_timeout = 5s;
  o.max_waiting_calls_per_principal = 64;
  server_builder b{{.name = "waiting-race", .version = "1"}, o};
  b.clock(clock_ref<manual_clock>{clk});
  b.tool("ask")
      .description("Asks for a name, then greets it.")
      .input_schema(R"({"type":"object","properties":{"expect":{"type":"string"}}})")
      .security("Thing", operation::read)
      .effect(tool_effect::read_only, false)
      .handler([](call_context& ctx, const arguments&) {
        const json::value v = ctx.input("name");
        if (v["content"]["name"].is_string()) {
          return tool_result::text("Hello, " + std::string{v["content"]["name"].as_string()});
        }
        return tool_result::need_input(
            input_required{}.ask("name", input_request::elicit("Name?", R"({"type":"object"})")));
      });
  auto built = b.build();
  REQUIRE(built.has_value());
  server srv = std::move(*built);

  http_endpoint_fixture::thread_executor exec;
  std::atomic<int> failures{0};
  std::atomic<int> greeted{0};
  {
    http_endpoint ep{srv, http_endpoint_fixture::two_principals{}, http_endpoint_fixture::test_options(),
                     clock_ref<manual_clock>{clk}};
    const http_executor_binding binding = ep.bind_executor(exec.get());

    std::atomic<bool> stop{false};
    std::thread ticker([&] {
      while (!stop.load()) {
        clk.advance(100ms);
        ep.tick();
        std::this_thread::sleep_for(1ms);
      }
    });

    constexpr int clients = 4;
    constexpr int rounds = 12;
    std::vector<std::thread> ts;
    for (int c = 0; c < clients; ++c) {
      ts.emplace_back([&, c] {
        const std::string who = c % 2 == 0 ? "alice-token" : "bob-token";
        // A session declaring elicitation; empty when none was opened.
        const auto open = [&] {
          const auto init = send(ep, post(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
                                          R"("capabilities":{"elicitation":{}},"clientInfo":{"name":"c","version":"1"}}})",
                                          {}, who));
          const auto sid_view = init ? init->head.header("Mcp-Session-Id") : std::nullopt;
          return sid_view ? std::string{*sid_view} : std::string{};
        };
        std::string sid = open();
        if (sid.empty()) {
          ++failures;
          return;
        }
        for (int round = 0; round < rounds; ++round) {
          const std::int64_t id = 100 + round;
          const std::string name = "n" + std::to_string(c) + "-" + std::to_string(round);
          auto r = send(ep, post(call(id, name), sid, who));
          if (!r || r->head.status != 200 || !r->stream) {
            ++failures;
            continue;
          }
          reader rd{std::move(r->stream), clk};
          if (!rd.until("elicitation/create")) {
            ++failures;
            continue;
          }
          const std::int64_t rid = elicitation_id(rd.wire());
          const std::string result_of_id = R"("id":)" + std::to_string(id) + R"(,"result")";
          switch ((round + c) % 5) {
            case 0:  // answered: the greeting is this call's own
              (void)send(ep, post(answer(rid, name), sid, who));
              if (!rd.to_end() || rd.wire().find("Hello, " + name) == std::string::npos) {
                ++failures;
              } else {
                ++greeted;
              }
              break;
            case 1:  // cancelled: no result
              (void)send(ep, post(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":)" +
                                      std::to_string(id) + "}}",
                                  sid, who));
              if (!rd.to_end() || rd.wire().find(result_of_id) != std::string::npos) ++failures;
              break;
            case 2:  // the stream dropped, then a late answer
              rd.drop();
              (void)send(ep, post(answer(rid, name), sid, who));
              break;
            case 3:  // left to time out: a tool error
              if (!rd.to_end() || rd.wire().find(R"("isError":true)") == std::string::npos) ++failures;
              break;
            default:  // the session ends under it, and a new one starts
              (void)send(ep, http_endpoint_fixture::del(sid, who));
              (void)rd.to_end();
              sid = open();
              if (sid.empty()) {
                ++failures;
                return;
              }
              break;
          }
        }
      });
    }
    for (auto& t : ts) t.join();
    // Every call ends: answered, cancelled, timed out (the ticker keeps expiring) or ended with
    // its session; dropped streams' calls time out.
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (srv.waiting_calls() != 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
    CHECK(srv.waiting_calls() == 0);
    stop = true;
    ticker.join();
    ep.begin_shutdown();
    exec.join();
  }
  CHECK(failures.load() == 0);
  CHECK(greeted.load() > 0);
}
