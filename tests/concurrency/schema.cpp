// SPDX-License-Identifier: Apache-2.0
// Concurrency test of input-schema validation (run under TSan by the tsan preset).
#include <mcpcore/dispatch/schema.hpp>

#include <doctest/doctest.h>

#include <mcpcore/wire/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace mcpcore;

TEST_SUITE("concurrency") {
  TEST_CASE(
      "one compiled schema validates from 4 threads at once with the single-thread results (schema.md)") {
    // Every path of the validator: types, enum, pattern and patternProperties (RE2, whose lazily
    // built DFA cache is shared by the threads), lengths, bounds, required, declared and extra
    // keys, items, uniqueItems, contains, the annotations of unevaluatedProperties, anyOf/oneOf,
    // and a recursive $ref.
    auto compiled = schema::compiled_schema::compile(
        R"({"type":"object","properties":{)"
        R"("name":{"type":"string","minLength":1,"maxLength":16,"pattern":"^[a-z][a-z0-9_]*$"},)"
        R"("mode":{"type":"string","enum":["fast","safe"]},)"
        R"("count":{"type":"integer","minimum":0,"maximum":100},)"
        R"("tags":{"type":"array","maxItems":4,"items":{"type":"string","pattern":"^#"}},)"
        R"("list":{"type":"array","uniqueItems":true,"contains":{"type":"string","pattern":"é$"}},)"
        R"("meta":{"type":"object","allOf":[{"properties":{"k":{"type":"string"}}}],)"
        R"("unevaluatedProperties":false},)"
        R"("child":{"$ref":"#"},"a":{"type":"string"},"b":{"type":"string"}},)"
        R"("patternProperties":{"^x-[a-z]+$":{"type":"integer"}},)"
        R"("required":["name"],"additionalProperties":false,)"
        R"("anyOf":[{"required":["a"]},{"required":["b"]},{"required":["name"]}],)"
        R"("oneOf":[{"required":["name"]}]})");
    REQUIRE(compiled.has_value());
    const schema::compiled_schema& s = *compiled;

    const std::vector<std::string_view> instances = {
        R"({"name":"job_1","mode":"fast","count":3,"tags":["#a","#b"]})",
        R"({"name":"Job","mode":"fast"})",
        R"({"name":"job","mode":"slow"})",
        R"({"name":"job","count":101})",
        R"({"name":"job","count":1.5})",
        R"({"name":"job","tags":["#a","b"]})",
        R"({"name":"job","extra":true})",
        R"({"name":"job","child":{"name":"kid","child":{"name":"x9"}}})",
        R"({"name":"job","child":{"name":"kid","child":{"count":2}}})",
        R"({"mode":"fast"})",
        R"({"name":"job","list":["a","bé"],"meta":{"k":"v"},"x-n":1})",
        R"({"name":"job","list":["a","a"]})",
        R"({"name":"job","list":["a"]})",
        R"({"name":"job","meta":{"k":"v","z":1}})",
        R"({"name":"job","x-n":"one"})",
        R"([])",
    };
    // Single-threaded reference answers.
    std::vector<json::document> docs(instances.size());
    std::vector<json::value> values;
    std::vector<std::optional<schema::violation>> expected;
    for (std::size_t i = 0; i < instances.size(); ++i) {
      auto v = docs[i].parse(instances[i]);
      REQUIRE(v.has_value());
      values.push_back(*v);
      expected.push_back(s.validate(*v));
    }
    CHECK(!expected[0].has_value());
    CHECK(expected[6].has_value());
    CHECK(!expected[10].has_value());
    for (std::size_t i = 11; i < 15; ++i) CHECK(expected[i].has_value());

    constexpr int threads = 4;
    constexpr int rounds = 300;
    std::vector<int> mismatches(threads, 0);
    {
      std::vector<std::jthread> workers;
      for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
          int bad = 0;
          for (int r = 0; r < rounds; ++r) {
            for (std::size_t i = 0; i < values.size(); ++i) {
              const auto got =
                  s.validate(values[(i + static_cast<std::size_t>(t)) % values.size()]);
              const auto& want = expected[(i + static_cast<std::size_t>(t)) % values.size()];
              const bool same = got.has_value() == want.has_value() &&
                                (!got || (got->path == want->path && got->reason == want->reason));
              bad += same ? 0 : 1;
            }
          }
          mismatches[static_cast<std::size_t>(t)] = bad;
        });
      }
    }
    for (int m : mismatches) CHECK(m == 0);
  }
}
