// SPDX-License-Identifier: Apache-2.0
// layer_check: the dependency rule between mcpcore's layers, checked (docs/architecture.md#layers).
//
//   layer_check [--root DIR] [--doc FILE]              check every #include <mcpcore/...> in include/ and src/
//   layer_check [--root DIR] --write-svg FILE          draw the table (docs/architecture-layers.svg)
//   layer_check [--root DIR] --check-svg FILE          fail when FILE is not what the table draws
//
// DIR defaults to the current directory, FILE paths are relative to it, --doc defaults to
// docs/architecture.md. Exit status: 0 when the tree keeps the rule, 1 otherwise, 2 on bad usage.
#include "layer_rules.hpp"

#include <iostream>
#include <string_view>
#include <vector>

int main(int argc, char** argv) {
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  return layer_check::run(args, std::cout, std::cerr);
}
