// SPDX-License-Identifier: Apache-2.0
// docs/concepts/operation_source.md's example, compiled and run so that the documentation cannot
// rot.
#include <mcpcore/dispatch/operation.hpp>

#include <doctest/doctest.h>

#include "support/server_fixture.hpp"
#include "support/sse_events.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/wire/http.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace operation_source_doc {

// ---- docs/concepts/operation_source.md snippet (keep identical) ----
// Work that outlives its call. The handler detaches, hands the operation to a thread of its own
// and returns a provisional answer at once; the thread reports progress and exactly one terminal,
// the complete result that replaces that answer. Without a progress record (HTTP without a session
// or without a progressToken) the handle is unbound: every report is accepted and goes nowhere,
// the provisional answer stays, and the client polls by execution id instead.
class reindexer {
 public:
  reindexer() = default;
  reindexer(const reindexer&) = delete;
  reindexer& operator=(const reindexer&) = delete;
  ~reindexer() { join(); }

  void declare(mcpcore::server_builder& b) {
    b.tool("reindex")
        .description("Rebuilds the search index in the background and returns at once.")
        .security("Index", mcpcore::operation::write)
        .effect(mcpcore::tool_effect::additive, /*idempotent=*/true)
        .handler([this](mcpcore::call_context& ctx, const mcpcore::arguments&) {
          const std::string execution_id = "reindex-" + std::to_string(++started_);
          mcpcore::operation_handle op = mcpcore::detach(ctx, execution_id);
          const bool streamed = op.bound();
          run([op]() mutable {
            for (int part = 1; part <= 4; ++part) (void)op.progress(part, 4, "one part indexed");
            (void)op.finish(mcpcore::tool_result::text("reindexed 1200 documents"));  // the final answer
          });
          return mcpcore::tool_result::text(execution_id + (streamed ? " started; progress follows"
                                                                     : " started; poll by execution id"));
        });
  }

  // Before the server and the endpoint go: the workers must be done with their handles.
  void join() {
    std::vector<std::thread> done;
    {
      const std::lock_guard lock{mutex_};
      done.swap(workers_);
    }
    for (auto& t : done) t.join();
  }

 private:
  void run(std::function<void()> work) {
    const std::lock_guard lock{mutex_};
    workers_.emplace_back(std::move(work));
  }
  std::atomic<int> started_{0};
  std::mutex mutex_;
  std::vector<std::thread> workers_;
};
// ---- end of snippet ----

}  // namespace operation_source_doc

namespace {

/// The view of a POST; `fields` holds its header views (into `headers`) and must outlive it.
mcpcore::http_request_view post_view(const std::vector<mcpcore::http_header>& headers, const std::string& body,
                                     std::vector<mcpcore::http_header_view>& fields) {
  for (const auto& h : headers) fields.push_back({h.name, h.value});
  mcpcore::http_request_view v;
  v.method = "POST";
  v.target = "/mcp";
  v.body = body;
  v.headers = fields;
  v.local = mcpcore::parse_local_address("127.0.0.1:8765");
  return v;
}

std::vector<mcpcore::http_header> post_headers(std::string_view session_id) {
  std::vector<mcpcore::http_header> h{{"Host", "localhost:8765"},
                                      {"Content-Type", "application/json"},
                                      {"Accept", "application/json, text/event-stream"}};
  if (!session_id.empty()) h.push_back({"Mcp-Session-Id", std::string{session_id}});
  return h;
}

mcpcore::http_reply send(mcpcore::http_endpoint& ep, const std::vector<mcpcore::http_header>& headers,
                         const std::string& body) {
  std::optional<mcpcore::http_reply> out;
  std::vector<mcpcore::http_header_view> fields;
  ep.handle(post_view(headers, body, fields), [&out](mcpcore::http_reply r) { out = std::move(r); });  // inline
  REQUIRE(out.has_value());
  return std::move(*out);
}

/// Pulls `s` as a transport does until it finishes (bounded); the bytes written.
std::string read_to_end(mcpcore::http_stream& s) {
  s.on_ready([] {});
  std::string wire;
  const auto deadline = std::chrono::steady_clock::now() + server_fixture::patience;
  while (!s.finished() && std::chrono::steady_clock::now() < deadline) {
    std::string out;
    s.pull(std::chrono::steady_clock::now(), out);
    if (out.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds{1});
      continue;
    }
    wire += out;
    s.written();
  }
  REQUIRE_MESSAGE(s.finished(), "the stream did not finish: " << wire);
  return wire;
}

}  // namespace

TEST_CASE("docs/concepts/operation_source.md: without a progress record the operation is unbound") {
  using namespace server_fixture;
  operation_source_doc::reindexer work;
  mcpcore::server_builder b{{.name = "search", .version = "1.0.0"}};
  work.declare(b);
  auto server = build(b);
  connection c;  // a peer, but no progress record
  const auto a = c.send(server, call_tool(1, "reindex", "{}", R"({"progressToken":"t1"})"));
  CHECK(str(at(a.result()["content"], 0)["text"]) == "reindex-1 started; poll by execution id");
  work.join();
}

TEST_CASE("docs/concepts/operation_source.md: over a session the progress and the final follow on the POST stream") {
  using namespace server_fixture;
  operation_source_doc::reindexer work;
  mcpcore::server_builder b{{.name = "search", .version = "1.0.0"}};
  work.declare(b);
  auto server = build(b);
  mcpcore::http_endpoint ep{server, mcpcore::fixed_authenticator{{.id = "alice"}}};

  const auto init = send(ep, post_headers({}), initialize(1));
  REQUIRE(init.head.status == 200);
  const std::string sid{init.head.header("Mcp-Session-Id").value_or("")};
  REQUIRE_FALSE(sid.empty());

  auto reply = send(ep, post_headers(sid), call_tool(2, "reindex", "{}", R"({"progressToken":"t2"})"));
  REQUIRE(reply.head.status == 200);
  REQUIRE(reply.stream);
  const auto events = sse_test::parse_sse(read_to_end(*reply.stream));
  work.join();

  std::vector<parsed> messages;
  for (const auto& e : events) {
    if (!e.data.empty()) messages.push_back(parse(e.data));
  }
  // Progress notifications (a burst may be coalesced: progress is latest-wins), then the final.
  REQUIRE(messages.size() >= 2);
  REQUIRE(messages.size() <= 5);
  double last = 0;
  for (std::size_t i = 0; i + 1 < messages.size(); ++i) {
    CAPTURE(i);
    CHECK(str(messages[i].root["method"]) == "notifications/progress");
    CHECK(str(messages[i].root["params"]["_meta"][mcpcore::execution_id_meta_key]) == "reindex-1");
    const double p = messages[i].root["params"]["progress"].to_double().value_or(0);
    CHECK(p > last);
    last = p;
  }
  // The final is the work's own result, which replaces the provisional answer.
  const auto result = messages.back().root["result"];
  CHECK(str(at(result["content"], 0)["text"]) == "reindexed 1200 documents");
  CHECK(str(result["_meta"][mcpcore::execution_id_meta_key]) == "reindex-1");
  CHECK_FALSE(result["status"].exists());
}
