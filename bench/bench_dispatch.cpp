// SPDX-License-Identifier: Apache-2.0
// The dispatch core end to end in process (docs/performance.md): a tools/call for a trivial tool
// goes through parse_message, server::handle (kill switches, tier gate, input-schema validation,
// RBAC, the handler, metrics, audit) and the response writer. parse_message alone on the same bytes
// is the reference measured in the same binary.
//
// This executable replaces the global operator new/delete with counting versions, so that each
// benchmark can report its allocations per call in steady state. The counts are reported, not
// enforced: the echo handler returns a tool_result holding a std::string, which allocates.
// Every benchmark checks its response once before timing and fails (SkipWithError) when the
// server does not answer as expected.
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

// ---- counting allocator (allocations()) ---------------------------------------------------------
#include "counting_new.hpp"

// ---- the servers ---------------------------------------------------------------------------------
namespace {

namespace json = mcpcore::json;
using mcpcore::operation;
using mcpcore::tool_effect;
using mcpcore::tool_result;

constexpr std::string_view echo_schema =
    R"({"type":"object","properties":{"text":{"type":"string","maxLength":4096}},)"
    R"("required":["text"],"additionalProperties":false})";

constexpr std::string_view call_request =
    R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}})";
constexpr std::string_view call_response =
    R"({"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello"}]}})";

// The same call with arguments the schema refuses ("text" must be a string).
constexpr std::string_view invalid_call_request =
    R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":42}}})";
// The start of its answer; error.data holds a fresh correlation id on every call.
constexpr std::string_view invalid_response_head =
    R"({"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"Invalid arguments at /text)";

constexpr std::string_view list_request = R"({"jsonrpc":"2.0","id":8,"method":"tools/list"})";
constexpr std::string_view list_response_head = R"({"jsonrpc":"2.0","id":8,"result":{"tools":[)";
constexpr std::size_t listed_tools = 10;

/// The plug-ins of one benchmark server.
enum class gates : std::uint8_t {
  minimal,      ///< open_tier_policy, allow_all_authorizer, null_audit_sink
  all,          ///< yuzu_tier_policy, role_table_authorizer, null_audit_sink
  all_audited,  ///< yuzu_tier_policy, role_table_authorizer, memory_audit_sink
};

void declare_echo(mcpcore::server_builder& b, std::string name) {
  b.tool(std::move(name))
      .description("Returns the given text unchanged.")
      .input_schema(std::string{echo_schema})
      .security("Echo", operation::read)
      .effect(tool_effect::read_only, true)
      .handler([](mcpcore::call_context&, const mcpcore::arguments& args) {
        return tool_result::text(std::string{args["text"].as_string()});
      });
}

/// A server with its sinks (which must outlive it), built once per process and shared by every
/// thread of a benchmark (server::handle is thread-safe).
struct bench_server {
  explicit bench_server(gates g, std::size_t tools = 1) : memory_audit(mcpcore::memory_audit_sink::default_capacity) {
    mcpcore::server_builder b{{.name = "mcpcore-bench", .version = "1"}};
    if (tools == 1) {
      declare_echo(b, "echo");
    } else {
      for (std::size_t i = 0; i < tools; ++i) declare_echo(b, "echo_" + std::to_string(i));
    }
    b.metrics(metrics);
    if (g == gates::minimal) {
      b.policy(mcpcore::open_tier_policy{}).authorizer(mcpcore::allow_all_authorizer{}).audit(null_audit);
    } else {
      mcpcore::role_table_authorizer rbac;
      rbac.grant("echo_user", "Echo", operation::read);
      b.policy(mcpcore::yuzu_tier_policy{}).authorizer(std::move(rbac));
      if (g == gates::all) {
        b.audit(null_audit);
      } else {
        b.audit(memory_audit);
      }
    }
    auto built = b.build();
    if (built) {
      server.emplace(std::move(*built));
    } else {
      error = built.error().message();
    }
  }

  mcpcore::metrics_registry metrics;
  mcpcore::null_audit_sink null_audit;
  mcpcore::memory_audit_sink memory_audit;
  std::optional<mcpcore::server> server;
  std::string error;  // why the build was refused
};

bench_server& minimal_server() {
  static bench_server s{gates::minimal};
  return s;
}
bench_server& gated_server() {
  static bench_server s{gates::all};
  return s;
}
bench_server& audited_server() {
  static bench_server s{gates::all_audited};
  return s;
}
bench_server& list_server() {
  static bench_server s{gates::minimal, listed_tools};
  return s;
}

/// A service token without an MCP tier: the minimal server's caller.
mcpcore::principal plain_caller() {
  mcpcore::principal p;
  p.id = "bench-service";
  return p;
}

/// A "supervised" MCP token holding the role the RBAC table grants Echo:Read to: every gate of
/// the gated servers runs and passes.
mcpcore::principal supervised_caller() {
  mcpcore::principal p;
  p.id = "bench-supervised";
  p.tier = "supervised";
  p.roles = {"echo_user"};
  return p;
}

// ---- the measurement -----------------------------------------------------------------------------

constexpr int warmup_calls = 64;
constexpr int counted_calls = 1024;

/// What one benchmark sends and what its answer must look like.
struct call_case {
  std::string_view request;
  std::string_view expected;  // the whole response, or its start when `prefix_only`
  bool prefix_only = false;
};

/// One client connection: its own document, peer and output buffer.
struct connection {
  json::document doc;
  mcpcore::peer client;
  std::string out;
};

/// Parses `request` into `c.doc` and has the server answer it into `c.out`; false when the
/// request does not parse or no response was written.
bool call(mcpcore::server& server, const mcpcore::dispatch_context& ctx, connection& c, std::string_view request) {
  auto m = mcpcore::parse_message(c.doc, request);
  if (!m) return false;
  c.out.clear();
  return server.handle(*m, ctx, c.out);
}

bool answered_as_expected(const connection& c, const call_case& k) {
  return k.prefix_only ? std::string_view{c.out}.starts_with(k.expected) : c.out == k.expected;
}

/// Checks the answer, counts the steady-state allocations, then times `call` in a loop. Each
/// thread runs this with its own connection; the server is shared.
void run_calls(benchmark::State& state, bench_server& bs, const mcpcore::principal& caller, const call_case& k) {
  if (!bs.server) {
    state.SkipWithError(("the benchmark server was refused: " + bs.error).c_str());
    return;
  }
  auto& server = *bs.server;
  connection c;
  const mcpcore::dispatch_context ctx{.caller = caller, .client = &c.client};

  if (!call(server, ctx, c, k.request) || !answered_as_expected(c, k)) {
    state.SkipWithError(("unexpected response: " + c.out).c_str());
    return;
  }
  for (int i = 0; i < warmup_calls; ++i) (void)call(server, ctx, c, k.request);
  const std::uint64_t before = allocations();
  for (int i = 0; i < counted_calls; ++i) {
    if (!call(server, ctx, c, k.request)) {
      state.SkipWithError("the server stopped answering");
      return;
    }
  }
  // Counters are per thread; kAvgThreads reports their mean instead of their sum.
  state.counters["allocs_per_call"] =
      benchmark::Counter(static_cast<double>(allocations() - before) / counted_calls, benchmark::Counter::kAvgThreads);

  for (auto _ : state) {
    auto m = mcpcore::parse_message(c.doc, k.request);
    c.out.clear();
    const bool answered = server.handle(*m, ctx, c.out);
    benchmark::DoNotOptimize(answered);
    benchmark::DoNotOptimize(c.out.data());
  }
  if (!answered_as_expected(c, k)) {
    state.SkipWithError(("unexpected response after the loop: " + c.out).c_str());
    return;
  }
  const auto n = static_cast<std::int64_t>(state.iterations());
  state.SetItemsProcessed(n);
  state.SetBytesProcessed(n * static_cast<std::int64_t>(k.request.size()));
  state.counters["response_bytes"] =
      benchmark::Counter(static_cast<double>(c.out.size()), benchmark::Counter::kAvgThreads);
}

// A tools/call for echo with the cheapest gates: open tier policy, allow-all RBAC, null audit,
// metrics registry attached. Threads(2) shares the server between two connections.
void BM_dispatch_tools_call(benchmark::State& state) {
  static const mcpcore::principal caller = plain_caller();
  run_calls(state, minimal_server(), caller, {call_request, call_response});
}
BENCHMARK(BM_dispatch_tools_call)->Threads(1)->Threads(2);
// The same, with wall-clock rates: items/s is then the throughput of all threads together.
BENCHMARK(BM_dispatch_tools_call)->Threads(1)->Threads(2)->UseRealTime();

// Every gate active: Yuzu's tier table consulted for a "supervised" token, the RBAC role table
// consulted, null audit.
void BM_dispatch_tools_call_all_gates(benchmark::State& state) {
  static const mcpcore::principal caller = supervised_caller();
  run_calls(state, gated_server(), caller, {call_request, call_response});
}
BENCHMARK(BM_dispatch_tools_call_all_gates);

// Every gate active and each call's audit row copied into a memory_audit_sink (a ring of 1024).
void BM_dispatch_tools_call_all_gates_audited(benchmark::State& state) {
  static const mcpcore::principal caller = supervised_caller();
  run_calls(state, audited_server(), caller, {call_request, call_response});
}
BENCHMARK(BM_dispatch_tools_call_all_gates_audited);

// The schema refuses the arguments: the denial path (correlation id, audit row, an `isError` tool
// result naming the path, docs/errors.md#argument-errors) instead of the handler.
void BM_dispatch_tools_call_invalid_args(benchmark::State& state) {
  static const mcpcore::principal caller = plain_caller();
  run_calls(state, minimal_server(), caller, {invalid_call_request, invalid_response_head, true});
}
BENCHMARK(BM_dispatch_tools_call_invalid_args);

// tools/list of 10 tools: one page, written from the listings rendered at build.
void BM_dispatch_tools_list(benchmark::State& state) {
  static const mcpcore::principal caller = plain_caller();
  auto& bs = list_server();
  if (bs.server) {
    // The answer must list every tool on the one page.
    connection c;
    const mcpcore::dispatch_context ctx{.caller = caller, .client = &c.client};
    if (!call(*bs.server, ctx, c, list_request)) {
      state.SkipWithError("tools/list was not answered");
      return;
    }
    std::size_t names = 0;
    for (auto at = c.out.find(R"("name":"echo_)"); at != std::string::npos; at = c.out.find(R"("name":"echo_)", at + 1))
      ++names;
    if (names != listed_tools || c.out.find("nextCursor") != std::string::npos) {
      state.SkipWithError(("tools/list did not list the 10 tools on one page: " + c.out).c_str());
      return;
    }
  }
  run_calls(state, bs, caller, {list_request, list_response_head, true});
}
BENCHMARK(BM_dispatch_tools_list);

// The reference: parse_message alone on the tools/call request of BM_dispatch_tools_call.
void BM_parse_only_reference(benchmark::State& state) {
  json::document doc;
  if (!mcpcore::parse_message(doc, call_request)) {
    state.SkipWithError("the tools/call request does not parse");
    return;
  }
  for (auto _ : state) {
    auto m = mcpcore::parse_message(doc, call_request);
    benchmark::DoNotOptimize(m);
  }
  const auto n = static_cast<std::int64_t>(state.iterations());
  state.SetItemsProcessed(n);
  state.SetBytesProcessed(n * static_cast<std::int64_t>(call_request.size()));
}
BENCHMARK(BM_parse_only_reference);

}  // namespace
