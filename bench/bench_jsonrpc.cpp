// SPDX-License-Identifier: Apache-2.0
// Envelope parsing: mcpcore::parse_message against simdjson's DOM parser on the same bytes.
//
// This executable replaces the global operator new/delete with counting versions, so that
// BM_jsonrpc_parse_tools_call can report allocations per message in steady state and fail
// (SkipWithError) when the common message allocates at all.
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <simdjson.h>

#include <benchmark/benchmark.h>

#include "bench_inputs.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

// ---- counting allocator (allocations()) ---------------------------------------------------------
#include "counting_new.hpp"

// ---- benchmarks ----------------------------------------------------------------------------------
namespace {

namespace json = mcpcore::json;

const std::string& input() {
  static const std::string text = mcpcore_bench::tools_call_request();
  return text;
}

void set_rates(benchmark::State& state) {
  const auto n = static_cast<std::int64_t>(state.iterations());
  state.SetItemsProcessed(n);
  state.SetBytesProcessed(n * static_cast<std::int64_t>(input().size()));
  state.counters["msg_bytes"] = static_cast<double>(input().size());
}

// Reads what a dispatcher reads first: kind, method, id and the tool name.
void touch(const mcpcore::message& m) {
  std::string_view method = m.method;
  benchmark::DoNotOptimize(method);
  auto id = m.id;
  benchmark::DoNotOptimize(id);
  std::string_view name = m.params["name"].as_string();
  benchmark::DoNotOptimize(name);
}

constexpr int warmup_messages = 64;
constexpr int counted_messages = 1024;

void BM_jsonrpc_parse_tools_call(benchmark::State& state) {
  const std::string& text = input();
  json::document doc;

  // Cold: the first parse sizes the document's buffers.
  const std::uint64_t before_first = allocations();
  if (!mcpcore::parse_message(doc, text)) {
    state.SkipWithError("the tools/call input does not parse");
    return;
  }
  const std::uint64_t first_parse = allocations() - before_first;

  // Steady state: warm up, then count allocations over a fixed number of messages.
  for (int i = 0; i < warmup_messages; ++i) {
    auto m = mcpcore::parse_message(doc, text);
    benchmark::DoNotOptimize(m);
  }
  const std::uint64_t before = allocations();
  for (int i = 0; i < counted_messages; ++i) {
    auto m = mcpcore::parse_message(doc, text);
    if (!m) {
      state.SkipWithError("the tools/call input does not parse");
      return;
    }
    touch(*m);
  }
  const double per_message = static_cast<double>(allocations() - before) / counted_messages;
  state.counters["allocs_per_msg"] = per_message;
  state.counters["allocs_first_parse"] = static_cast<double>(first_parse);
  if (per_message != 0) {
    state.SkipWithError("parse allocates in steady state");
    return;
  }

  for (auto _ : state) {
    auto m = mcpcore::parse_message(doc, text);
    touch(*m);
  }
  set_rates(state);
}
BENCHMARK(BM_jsonrpc_parse_tools_call);

void BM_simdjson_dom_parse_tools_call(benchmark::State& state) {
  const simdjson::padded_string padded{input()};
  simdjson::dom::parser parser;
  for (auto _ : state) {
    simdjson::dom::element root;
    auto error = parser.parse(padded).get(root);
    benchmark::DoNotOptimize(error);
    benchmark::DoNotOptimize(root);
  }
  set_rates(state);
}
BENCHMARK(BM_simdjson_dom_parse_tools_call);

void BM_simdjson_dom_parse_and_walk(benchmark::State& state) {
  const simdjson::padded_string padded{input()};
  simdjson::dom::parser parser;
  for (auto _ : state) {
    simdjson::dom::element root;
    if (parser.parse(padded).get(root)) {
      state.SkipWithError("simdjson refused the input");
      break;
    }
    std::string_view method;
    std::int64_t id = 0;
    std::string_view name;
    const auto e1 = root["method"].get(method);
    const auto e2 = root["id"].get(id);
    const auto e3 = root["params"]["name"].get(name);
    benchmark::DoNotOptimize(e1);
    benchmark::DoNotOptimize(e2);
    benchmark::DoNotOptimize(e3);
    benchmark::DoNotOptimize(method);
    benchmark::DoNotOptimize(id);
    benchmark::DoNotOptimize(name);
  }
  set_rates(state);
}
BENCHMARK(BM_simdjson_dom_parse_and_walk);

void BM_json_document_parse(benchmark::State& state) {
  const std::string& text = input();
  json::document doc;
  for (auto _ : state) {
    auto root = doc.parse(text);
    benchmark::DoNotOptimize(root);
  }
  set_rates(state);
}
BENCHMARK(BM_json_document_parse);

// document::parse_padded: the same parse without the copy into the document's padded buffer.
void BM_json_document_parse_padded(benchmark::State& state) {
  const simdjson::padded_string padded{input()};
  const std::string_view text{padded.data(), padded.size()};
  json::document doc;
  for (auto _ : state) {
    auto root = doc.parse_padded(text, text.size() + json::padding);
    benchmark::DoNotOptimize(root);
  }
  set_rates(state);
}
BENCHMARK(BM_json_document_parse_padded);

}  // namespace
