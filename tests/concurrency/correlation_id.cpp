// SPDX-License-Identifier: Apache-2.0
// Concurrency tests of the wire layer (run under TSan by the tsan preset).
#include <mcpcore/wire/correlation_id.hpp>

#include <doctest/doctest.h>

#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace mcpcore;

TEST_SUITE("concurrency") {
  TEST_CASE("correlation ids minted on many threads are unique (errors.md/the-errordata-envelope process-wide sequence)") {
    constexpr int threads = 4;
    constexpr int per_thread = 5000;
    std::vector<std::vector<std::string>> minted(threads);
    std::vector<std::jthread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        auto& mine = minted[static_cast<std::size_t>(t)];
        mine.reserve(per_thread);
        for (int i = 0; i < per_thread; ++i) mine.emplace_back(next_correlation_id().view());
      });
    }
    workers.clear();  // join
    std::set<std::string> all;
    for (const auto& v : minted) all.insert(v.begin(), v.end());
    CHECK(all.size() == static_cast<std::size_t>(threads * per_thread));
  }

  TEST_CASE("one parsed document can be read from many threads at once") {
    json::document doc;
    auto msg = parse_message(doc, R"({"jsonrpc":"2.0","id":"r-1","method":"tools/call",)"
                                  R"("params":{"name":"t","arguments":{"a":[1,2,3],"b":{"c":"d"}}}})");
    REQUIRE(msg);
    const message m = *msg;
    std::vector<int> ok(4, 0);
    {
      std::vector<std::jthread> readers;
      for (std::size_t t = 0; t < ok.size(); ++t) {
        readers.emplace_back([&, t] {
          int good = 0;
          for (int i = 0; i < 2000; ++i) {
            const json::value args = m.params["arguments"];
            good += args["a"].size() == 3 && args["b"]["c"].as_string() == "d" && m.id == request_id_view{"r-1"};
          }
          ok[t] = good;
        });
      }
    }
    for (int n : ok) CHECK(n == 2000);
  }

  TEST_CASE("independent documents parse concurrently") {
    std::vector<int> ok(4, 0);
    {
      std::vector<std::jthread> parsers;
      for (std::size_t t = 0; t < ok.size(); ++t) {
        parsers.emplace_back([&, t] {
          json::document doc;
          int good = 0;
          for (int i = 0; i < 500; ++i) {
            const std::string body = R"({"jsonrpc":"2.0","id":)" + std::to_string(i) + R"(,"method":"ping"})";
            auto msg = parse_message(doc, body);
            good += msg && msg->id == request_id_view{std::int64_t{i}};
          }
          ok[t] = good;
        });
      }
    }
    for (int n : ok) CHECK(n == 500);
  }
}
