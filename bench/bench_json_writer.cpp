// SPDX-License-Identifier: Apache-2.0
// Output side of the wire layer: JSON-RPC responses written with json::writer, and string
// escaping on its three typical inputs.
#include <mcpcore/wire/error.hpp>
#include <mcpcore/wire/json_writer.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace {

namespace json = mcpcore::json;

// The text block of a tools/call result: about 200 bytes with quotes and newlines.
constexpr std::string_view result_text =
    "Found 3 matches for \"parser\" in /home/user/projects/mcpcore/src:\n"
    "  json.ipp:112: // the \"tape\" walk\n"
    "  jsonrpc.ipp:48: \"jsonrpc\" must be \"2.0\"\n"
    "  sse.ipp:80: parse_last_event_id\n"
    "Search took 12 ms.";

void write_tools_call_result(json::writer& w) {
  w.begin_object()
      .key("content")
      .begin_array()
      .begin_object()
      .member("type", "text")
      .member("text", result_text)
      .end_object()
      .end_array()
      .key("structuredContent")
      .begin_object()
      .member("matches", 3)
      .member("elapsed_ms", 12.5)
      .member("truncated", false)
      .key("files")
      .begin_array()
      .value("json.ipp")
      .value("jsonrpc.ipp")
      .value("sse.ipp")
      .end_array()
      .end_object()
      .member("isError", false)
      .end_object();
}

// Runs `write(out)` into a reused string, reporting responses and output bytes per second.
template <class Write>
void run_writer(benchmark::State& state, Write write) {
  std::string out;
  out.reserve(1024);
  std::size_t bytes = 0;
  for (auto _ : state) {
    out.clear();
    write(out);
    bytes += out.size();
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  state.counters["out_bytes"] = static_cast<double>(out.size());
}

void BM_jsonrpc_write_result_response(benchmark::State& state) {
  run_writer(state, [](std::string& out) {
    mcpcore::write_result_response(out, mcpcore::request_id_view{42}, write_tools_call_result);
  });
}
BENCHMARK(BM_jsonrpc_write_result_response);

void BM_jsonrpc_write_error_response(benchmark::State& state) {
  using namespace std::chrono_literals;
  mcpcore::error_data data;
  data.correlation_id = "req-18f3c2a1b07-2a";
  data.retry_after_ms = 5000ms;
  data.remediation = "ask a supervisor to approve the ticket, then repeat the call with the same arguments";
  data.approval_id = "apr-01HZX8M3K9Q7";
  data.status_url = "/mcp/approvals/apr-01HZX8M3K9Q7";
  data.execution_id = std::optional<std::string_view>{"exec-9f2c"};
  data.reason = "tier_supervised";
  data.audit_persisted = false;
  const std::optional<mcpcore::request_id_view> id{mcpcore::request_id_view{"call-7"}};
  run_writer(state, [&](std::string& out) {
    mcpcore::write_error_response(out, id, mcpcore::errc::approval_required, {}, data);
  });
}
BENCHMARK(BM_jsonrpc_write_error_response);

// ---- append_escaped on 1 KiB strings ------------------------------------------------------------
constexpr std::size_t escape_input_bytes = 1024;

// Repeats `unit` to exactly escape_input_bytes, cutting only at a unit boundary and padding
// with ASCII, so that the UTF-8 input stays valid.
std::string fill(std::string_view unit) {
  std::string s;
  while (s.size() + unit.size() <= escape_input_bytes) s.append(unit);
  s.append(escape_input_bytes - s.size(), 'x');
  return s;
}

void run_escape(benchmark::State& state, const std::string& input) {
  std::string out;
  out.reserve(2 * escape_input_bytes + 16);
  for (auto _ : state) {
    out.clear();
    json::append_escaped(out, input);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(input.size()));
  state.counters["out_bytes"] = static_cast<double>(out.size());
}

// Plain ASCII prose: nothing to escape.
void BM_json_append_escaped_ascii(benchmark::State& state) {
  static const std::string input = fill("The quick brown fox jumps over the lazy dog; 0123456789. ");
  run_escape(state, input);
}
BENCHMARK(BM_json_append_escaped_ascii);

// Valid UTF-8 mixing 1-, 2-, 3- and 4-byte sequences: validated, copied verbatim.
void BM_json_append_escaped_utf8(benchmark::State& state) {
  static const std::string input = fill("Gr\xC3\xBC\xC3\x9F" "e, \xE4\xB8\x96\xE7\x95\x8C \xE2\x82\xAC 5 \xF0\x9F\x98\x80 ");
  run_escape(state, input);
}
BENCHMARK(BM_json_append_escaped_utf8);

// Log-like text with quotes, backslashes, tabs, newlines and a control byte.
void BM_json_append_escaped_needs_escaping(benchmark::State& state) {
  static const std::string input = fill("path=\"C:\\tmp\\a.txt\"\tstatus=\"ok\"\n\x01line\r\n");
  run_escape(state, input);
}
BENCHMARK(BM_json_append_escaped_needs_escaping);

}  // namespace
