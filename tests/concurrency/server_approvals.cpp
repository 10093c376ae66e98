// SPDX-License-Identifier: Apache-2.0
// Exactly-once redemption through the whole tools/call pipeline (docs/approvals.md#guarantees):
// many threads recall one approved ticket at the same moment and exactly one handler runs, with the
// in-memory store and with the SQLite store (one shared store, and one connection per thread).
#include <mcpcore/dispatch/server.hpp>

#include <doctest/doctest.h>

#include "support/process.hpp"
#include "support/server_fixture.hpp"

#include <mcpcore/governance/approval.hpp>
#include <mcpcore/stores/memory_approval_store.hpp>
#include <mcpcore/stores/sqlite_approval_store.hpp>

#include <atomic>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace mcpcore;
using namespace server_fixture;

namespace {

constexpr int racers = 12;

struct race_result {
  int handler_runs = 0;
  int successes = 0;
  int already_used = 0;
  int other = 0;
};

// Builds a server over `service`, mints a ticket as agent-1, approves it as a human, then lets
// `racers` threads recall it at once through server::handle.
template <class MakeService>
race_result race(MakeService make_service) {
  std::atomic<int> runs{0};
  auto make_server = [&](approval_service& svc) {
    server_builder b{{.name = "race", .version = "1"}};
    b.tool("delete_tag")
        .description("Deletes a tag.")
        .input_schema(R"({"type":"object","properties":{"tag":{"type":"string"},"approval_id":{"type":"string"}},)"
                      R"("required":["tag"],"additionalProperties":false})")
        .security("Tag", operation::delete_)
        .effect(tool_effect::destructive, true)
        .handler([&runs](call_context&, const arguments&) {
          ++runs;
          return tool_result::text("deleted");
        });
    b.approvals(svc);
    return build(b);
  };
  const principal submitter{.id = "agent-1", .tier = "supervised"};
  const principal reviewer{.id = "carol", .kind = principal_kind::human_interactive, .assured = true};

  auto owner = make_service();
  auto srv = make_server(*owner);
  connection c{submitter};
  const auto minted = c.send(srv, call_tool(1, "delete_tag", R"({"tag":"a"})"));
  REQUIRE(minted.code() == -32006);
  const std::string id = str(minted.data()["approval_id"]);
  REQUIRE(owner->approve(id, reviewer).ok());
  const std::string recall = call_tool(2, "delete_tag", R"({"tag":"a","approval_id":")" + id + R"("})");

  // Each racer gets its own service (and, for per-connection stores, its own connection) and
  // its own server, all over the same tickets.
  std::vector<std::unique_ptr<approval_service>> services;
  std::vector<server> servers;
  services.reserve(racers);
  servers.reserve(racers);
  for (int i = 0; i < racers; ++i) {
    services.push_back(make_service());
    servers.push_back(make_server(*services.back()));
  }
  std::vector<answer> answers(racers);
  std::latch start{racers};
  std::vector<std::thread> threads;
  for (int i = 0; i < racers; ++i) {
    threads.emplace_back([&, i] {
      connection me{submitter};
      start.arrive_and_wait();
      answers[static_cast<std::size_t>(i)] = me.send(servers[static_cast<std::size_t>(i)], recall);
    });
  }
  for (auto& t : threads) t.join();
  race_result r;
  r.handler_runs = runs.load();
  for (const auto& a : answers) {
    if (a.result().exists()) {
      ++r.successes;
    } else if (a.code() == -32003 && a.message() == "approval already used (one-time ticket)") {
      ++r.already_used;
    } else {
      ++r.other;
      MESSAGE("unexpected answer: " << a.text);
    }
  }
  return r;
}

void check_exactly_once(const race_result& r) {
  CHECK(r.handler_runs == 1);
  CHECK(r.successes == 1);
  CHECK(r.already_used == racers - 1);
  CHECK(r.other == 0);
}

}  // namespace

TEST_SUITE("concurrency") {

TEST_CASE("approvals.md/guarantees: memory store — racing recalls of one approved ticket run the handler exactly once") {
  memory_approval_store store;
  check_exactly_once(race([&] { return std::make_unique<approval_service>(store); }));
}

TEST_CASE("approvals.md/guarantees: SQLite store shared by all threads — exactly one handler runs") {
  const test_process::temp_dir dir;
  auto store = sqlite_approval_store::open(dir.file());
  REQUIRE(store.has_value());
  check_exactly_once(race([&] { return std::make_unique<approval_service>(*store); }));
}

TEST_CASE("approvals.md/guarantees: SQLite, one connection per thread on one file — exactly one handler runs") {
  const test_process::temp_dir dir;
  const std::string path = dir.file();
  std::vector<std::unique_ptr<sqlite_approval_store>> connections;
  connections.reserve(racers + 1);
  check_exactly_once(race([&] {
    auto s = sqlite_approval_store::open(path);
    REQUIRE(s.has_value());
    connections.push_back(std::make_unique<sqlite_approval_store>(std::move(*s)));
    return std::make_unique<approval_service>(*connections.back());
  }));
}

}  // TEST_SUITE
