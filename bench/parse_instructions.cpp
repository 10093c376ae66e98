// SPDX-License-Identifier: Apache-2.0
// Parses the benchmark's tools/call request N times with one of three parsers, for counting
// instructions under `valgrind --tool=callgrind` (deterministic, unlike timings on a shared
// machine; docs/performance.md). Usage: mcpcore_parse_instructions <none|simdjson|document|message> [N]
#include <mcpcore/json.hpp>
#include <mcpcore/jsonrpc.hpp>

#include <simdjson.h>

#include "bench_inputs.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <none|simdjson|document|message> [iterations]\n", argv[0]);
    return 2;
  }
  const std::string_view mode = argv[1];
  const long n = argc > 2 ? std::strtol(argv[2], nullptr, 10) : 20000;
  const std::string text = mcpcore_bench::tools_call_request();
  long checksum = 0;  // printed, so that no parse can be optimized away
  if (mode == "simdjson") {
    simdjson::dom::parser parser;
    const simdjson::padded_string padded{text};
    for (long i = 0; i < n; ++i) {
      simdjson::dom::element root;
      checksum += parser.parse(padded).get(root) == simdjson::SUCCESS;
    }
  } else if (mode == "document") {
    mcpcore::json::document doc;
    for (long i = 0; i < n; ++i) checksum += static_cast<long>(doc.parse(text)->size());
  } else if (mode == "message") {
    mcpcore::json::document doc;
    for (long i = 0; i < n; ++i) checksum += static_cast<long>(mcpcore::parse_message(doc, text)->method.size());
  } else if (mode != "none") {
    std::fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
  }
  std::printf("%ld\n", checksum);
  return 0;
}
