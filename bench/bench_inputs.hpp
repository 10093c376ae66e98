// SPDX-License-Identifier: Apache-2.0
// Inputs shared by the benchmarks, generated in-process
// (docs/performance.md#inputs-generated-in-process: no data downloads).
#ifndef MCPCORE_BENCH_INPUTS_HPP
#define MCPCORE_BENCH_INPUTS_HPP

#include <mcpcore/wire/json_writer.hpp>

#include <string>

namespace mcpcore_bench {

/// A typical MCP tools/call request (about 350 bytes): integer id, a tool name, arguments with
/// strings, integers, booleans, a nested object and arrays, and _meta.progressToken.
inline std::string tools_call_request() {
  std::string out;
  mcpcore::json::writer w{out};
  w.begin_object()
      .member("jsonrpc", "2.0")
      .member("id", 42)
      .member("method", "tools/call")
      .key("params")
      .begin_object()
      .member("name", "search_files")
      .key("arguments")
      .begin_object()
      .member("query", "TODO: handle \"quoted\" edge cases")
      .member("path", "/home/user/projects/mcpcore/src")
      .member("max_results", 50)
      .member("case_sensitive", false)
      .member("include_hidden", true)
      .key("filters")
      .begin_object()
      .key("extensions")
      .begin_array()
      .value(".cpp")
      .value(".hpp")
      .value(".ipp")
      .end_array()
      .member("min_size", 128)
      .key("exclude_dirs")
      .begin_array()
      .value("build")
      .value("third_party")
      .end_array()
      .end_object()
      .member("context_lines", 3)
      .end_object()
      .key("_meta")
      .begin_object()
      .member("progressToken", "tok-7f3a9c2e")
      .end_object()
      .end_object()
      .end_object();
  return out;
}

/// A typical tools/call `arguments` object (about 300 bytes): keys out of order at every level,
/// nested objects and arrays, strings, integers, a double, booleans and null.
inline std::string arguments_object() {
  return R"({"query":"SELECT name, size FROM files WHERE size > 1024","limit":100,"dry_run":false,)"
         R"("options":{"timeout_ms":30000,"retries":3,"backoff":1.5,"labels":{"team":"infra",)"
         R"("env":"prod","app":"indexer"}},"columns":["name","size","mtime"],"cursor":null,)"
         R"("author":{"name":"Ana","email":"ana@example.org","id":7},"async":true})";
}

}  // namespace mcpcore_bench

#endif  // MCPCORE_BENCH_INPUTS_HPP
