// SPDX-License-Identifier: Apache-2.0
// Input-schema validation per tools/call and compilation per registration (docs/performance.md; the
// subset is docs/schema.md#keywords, #validation-order): the echo tool's schema and a larger,
// realistic one.
//
// This executable replaces the global operator new/delete with counting versions. Validating a
// valid instance must not allocate (the schema's contract; `pattern` included, which RE2 matches
// without allocating once its automaton is warm): each validation benchmark counts the
// allocations of a fixed number of validations and fails (SkipWithError) when there are any.
#include <mcpcore/dispatch/schema.hpp>

#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

// ---- counting allocator (allocations()) ---------------------------------------------------------
#include "counting_new.hpp"

// ---- inputs --------------------------------------------------------------------------------------
namespace {

namespace json = mcpcore::json;
namespace schema = mcpcore::schema;

// The echo tool of bench_dispatch.cpp.
constexpr std::string_view echo_schema =
    R"({"type":"object","properties":{"text":{"type":"string","maxLength":4096}},)"
    R"("required":["text"],"additionalProperties":false})";
constexpr std::string_view echo_arguments = R"({"text":"hello"})";
constexpr std::string_view echo_bad_arguments = R"({"text":42})";

// A realistic tool schema (about 1.3 KB): scalars with length, range and enum constraints, a
// pattern, a nested object two levels deep, and an array of objects.
std::string large_schema(bool with_pattern) {
  std::string s =
      R"({"type":"object","description":"Search indexed files and open a ticket with the findings.",)"
      R"("properties":{)"
      R"("query":{"type":"string","minLength":1,"maxLength":256,"description":"What to search for"},)";
  if (with_pattern) {
    s += R"("ticket":{"type":"string","pattern":"^[A-Z][A-Z0-9]{1,9}-[0-9]{1,6}$","description":"Ticket key"},)";
  } else {
    s += R"("ticket":{"type":"string","maxLength":17,"description":"Ticket key"},)";
  }
  s += R"("mode":{"type":"string","enum":["fast","balanced","thorough"]},)"
       R"("limit":{"type":"integer","minimum":1,"maximum":1000,"default":100},)"
       R"("threshold":{"type":"number","minimum":0,"maximum":1},)"
       R"("dry_run":{"type":"boolean"},)"
       R"("options":{"type":"object","properties":{)"
       R"("timeout_ms":{"type":"integer","minimum":0,"maximum":600000},)"
       R"("retries":{"type":"integer","minimum":0,"maximum":10},)"
       R"("labels":{"type":"object","properties":{"team":{"type":"string","maxLength":64},)"
       R"("env":{"type":"string","enum":["dev","staging","prod"]}},)"
       R"("required":["env"],"additionalProperties":false}},)"
       R"("required":["timeout_ms"],"additionalProperties":false},)"
       R"("files":{"type":"array","minItems":1,"maxItems":100,"items":{"type":"object","properties":{)"
       R"("path":{"type":"string","minLength":1,"maxLength":1024},)"
       R"("size":{"type":"integer","minimum":0},)"
       R"("kind":{"type":"string","enum":["file","dir","symlink"]}},)"
       R"("required":["path","kind"],"additionalProperties":false}}},)"
       R"("required":["query","mode","files"],"additionalProperties":false})";
  return s;
}

constexpr std::size_t large_files = 20;

// A valid instance of large_schema (about 1.4 KB, 20 files). `last_kind` replaces the kind of
// the last file, to build an invalid instance.
std::string large_instance(std::string_view last_kind = "file") {
  static constexpr std::string_view kinds[] = {"file", "dir", "symlink"};
  std::string out;
  json::writer w{out};
  w.begin_object()
      .member("query", "TODO: handle \"quoted\" edge cases")
      .member("ticket", "INFRA-4711")
      .member("mode", "thorough")
      .member("limit", 250)
      .member("threshold", 0.75)
      .member("dry_run", false)
      .key("options")
      .begin_object()
      .member("timeout_ms", 30000)
      .member("retries", 3)
      .key("labels")
      .begin_object()
      .member("team", "infra")
      .member("env", "prod")
      .end_object()
      .end_object()
      .key("files")
      .begin_array();
  for (std::size_t i = 0; i < large_files; ++i) {
    const std::string path = "/srv/index/shard-" + std::to_string(i) + "/segment.dat";
    w.begin_object()
        .member("path", path)
        .member("size", static_cast<std::int64_t>(4096 * (i + 1)))
        .member("kind", i + 1 == large_files ? last_kind : kinds[i % 3])
        .end_object();
  }
  w.end_array().end_object();
  return out;
}

// ---- benchmarks ----------------------------------------------------------------------------------

constexpr int warmup_validations = 64;
constexpr int counted_validations = 1024;

/// Compiles `schema_text`, checks that it accepts `valid` and refuses `invalid` (at
/// `invalid_path`), fails if validating `valid` allocates, then times `validate(valid)`.
void run_validation(benchmark::State& state, std::string_view schema_text, std::string_view valid,
                    std::string_view invalid, std::string_view invalid_path) {
  auto compiled = schema::compiled_schema::compile(schema_text);
  if (!compiled) {
    std::string why = "the schema does not compile:";
    for (const auto& e : compiled.error()) why += " " + e.path + ": " + e.message + ";";
    state.SkipWithError(why.c_str());
    return;
  }
  const schema::compiled_schema& s = *compiled;

  // The check must be able to fail: the invalid instance is refused where expected.
  json::document bad_doc;
  const auto bad = bad_doc.parse(invalid);
  if (!bad) {
    state.SkipWithError("the invalid instance does not parse");
    return;
  }
  const auto refusal = s.validate(*bad);
  if (!refusal || refusal->path != invalid_path) {
    state.SkipWithError(("the invalid instance was not refused at " + std::string{invalid_path}).c_str());
    return;
  }

  json::document doc;
  const auto instance = doc.parse(valid);
  if (!instance) {
    state.SkipWithError("the valid instance does not parse");
    return;
  }
  if (const auto v = s.validate(*instance)) {
    state.SkipWithError(("the valid instance was refused at '" + v->path + "': " + v->reason).c_str());
    return;
  }

  // Steady state: warm up, then count allocations over a fixed number of validations.
  for (int i = 0; i < warmup_validations; ++i) {
    auto v = s.validate(*instance);
    benchmark::DoNotOptimize(v);
  }
  const std::uint64_t before = allocations();
  for (int i = 0; i < counted_validations; ++i) {
    auto v = s.validate(*instance);
    benchmark::DoNotOptimize(v);
  }
  const double per_validation = static_cast<double>(allocations() - before) / counted_validations;
  state.counters["allocs_per_validation"] = per_validation;
  if (per_validation != 0) {
    // An errored run prints no counters: the count goes into the message.
    state.SkipWithError(
        ("validating a valid instance allocates (" + std::to_string(per_validation) + " per validation)").c_str());
    return;
  }

  for (auto _ : state) {
    auto v = s.validate(*instance);
    benchmark::DoNotOptimize(v);
  }
  const auto n = static_cast<std::int64_t>(state.iterations());
  state.SetItemsProcessed(n);
  state.SetBytesProcessed(n * static_cast<std::int64_t>(valid.size()));
  state.counters["instance_bytes"] = static_cast<double>(valid.size());
}

// The per-call check of BM_dispatch_tools_call: {"text":"hello"} against the echo schema.
void BM_schema_validate_typical(benchmark::State& state) {
  run_validation(state, echo_schema, echo_arguments, echo_bad_arguments, "/text");
}
BENCHMARK(BM_schema_validate_typical);

// The larger schema and its 20-file instance, with the `pattern` keyword.
void BM_schema_validate_large(benchmark::State& state) {
  static const std::string text = large_schema(true);
  static const std::string valid = large_instance();
  static const std::string invalid = large_instance("pipe");
  run_validation(state, text, valid, invalid, "/files/19/kind");
}
BENCHMARK(BM_schema_validate_large);

// The same without `pattern` ("ticket" has a maxLength instead): separates std::regex's cost.
void BM_schema_validate_large_no_pattern(benchmark::State& state) {
  static const std::string text = large_schema(false);
  static const std::string valid = large_instance();
  static const std::string invalid = large_instance("pipe");
  run_validation(state, text, valid, invalid, "/files/19/kind");
}
BENCHMARK(BM_schema_validate_large_no_pattern);

// Compiling the larger schema from its text: paid once per tool, at registration.
void BM_schema_compile(benchmark::State& state) {
  static const std::string text = large_schema(true);
  if (!schema::compiled_schema::compile(text)) {
    state.SkipWithError("the schema does not compile");
    return;
  }
  const std::uint64_t before = allocations();
  std::int64_t compiles = 0;
  for (auto _ : state) {
    auto compiled = schema::compiled_schema::compile(text);
    benchmark::DoNotOptimize(compiled);
    ++compiles;
  }
  if (compiles > 0) {
    state.counters["allocs_per_compile"] = static_cast<double>(allocations() - before) / static_cast<double>(compiles);
  }
  const auto n = static_cast<std::int64_t>(state.iterations());
  state.SetItemsProcessed(n);
  state.SetBytesProcessed(n * static_cast<std::int64_t>(text.size()));
  state.counters["schema_bytes"] = static_cast<double>(text.size());
}
BENCHMARK(BM_schema_compile);

}  // namespace
