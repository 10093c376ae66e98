// SPDX-License-Identifier: Apache-2.0
// Canonical JSON (sorted keys at every depth) of a typical tools/call arguments object.
#include <mcpcore/wire/canonical_json.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <benchmark/benchmark.h>

#include "bench_inputs.hpp"

#include <cstdint>
#include <string>

namespace {

namespace json = mcpcore::json;

const std::string& input() {
  static const std::string text = mcpcore_bench::arguments_object();
  return text;
}

// The whole public call: a fresh document, parse, sorted write into a new string.
void BM_canonical_json(benchmark::State& state) {
  const std::string& text = input();
  for (auto _ : state) {
    auto canonical = mcpcore::canonical_json(text);
    if (!canonical) {
      state.SkipWithError("the arguments object does not parse");
      break;
    }
    benchmark::DoNotOptimize(canonical->data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(text.size()));
  state.counters["in_bytes"] = static_cast<double>(text.size());
}
BENCHMARK(BM_canonical_json);

// Only the sorted write: the document is parsed once, the output string reused.
void BM_write_canonical_from_parsed(benchmark::State& state) {
  const std::string& text = input();
  json::document doc;
  const auto root = doc.parse(text);
  if (!root) {
    state.SkipWithError("the arguments object does not parse");
    return;
  }
  std::string out;
  out.reserve(2 * text.size());
  for (auto _ : state) {
    out.clear();
    json::writer w{out};
    mcpcore::write_canonical(w, *root);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(text.size()));
  state.counters["in_bytes"] = static_cast<double>(text.size());
}
BENCHMARK(BM_write_canonical_from_parsed);

}  // namespace
