// SPDX-License-Identifier: Apache-2.0
// The dependency rule between mcpcore's layers, checked: the table of layers is read from
// docs/architecture.md (section "Layers"), every `#include <mcpcore/...>` in include/ and src/ is
// mapped to the layer of the file it names, and an include the table does not allow is reported
// with its line. The same table draws docs/architecture-layers.svg.
#ifndef MCPCORE_TESTS_LAYERS_LAYER_RULES_HPP
#define MCPCORE_TESTS_LAYERS_LAYER_RULES_HPP

#include <cstddef>
#include <filesystem>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace layer_check {

// One row of the table.
struct layer {
  std::string name;
  // Paths relative to the repository root: a folder ends with '/' (everything under it, at any
  // depth, belongs to the layer), anything else names one file.
  std::vector<std::string> paths;
  // The public headers, relative to include/mcpcore/.
  std::vector<std::string> headers;
  std::vector<std::string> may_include;  // as written; "*" stands for every other layer
  std::string purpose;
  std::size_t line = 0;  // of the row, in the document
};

struct layer_table {
  std::vector<layer> layers;               // bottom to top, as in the document
  std::vector<std::vector<bool>> allowed;  // allowed[a][b]: layer a may include layer b (a == b too)

  // The index of a layer by name, or -1.
  [[nodiscard]] int index_of(std::string_view name) const;
  // The layer a repository-relative path belongs to (the longest matching path wins), or -1.
  [[nodiscard]] int layer_of(std::string_view path) const;
};

// The table, or the reasons it cannot be read (then `table.layers` is empty).
struct parsed_table {
  layer_table table;
  std::vector<std::string> errors;
};

// Reads the first table of the "## Layers" section of `markdown` (`doc` names it in messages)
// and checks that it is well formed: the columns layer, folders, headers, may include; known
// layer names; a layer may include only layers in rows before its own (the rows go bottom to
// top) and, with each of them, everything that one may include; no path claimed twice.
[[nodiscard]] parsed_table parse_table(std::string_view markdown, std::string_view doc);

// One `#include <mcpcore/...>` or `#include "..."` directive outside comments and literals.
struct include_directive {
  std::size_t line = 0;   // 1-based
  std::string target;     // "mcpcore/wire/json.hpp", or as quoted: "http_head_parser.hpp"
  std::string text;       // the directive as written, trimmed: "#include <mcpcore/wire/json.hpp>"
  bool relative = false;  // quoted and not "mcpcore/...": resolved from the including file's folder
};
[[nodiscard]] std::vector<include_directive> mcpcore_includes(std::string_view source);

// A file of the tree: its path relative to the root ('/' separators) and its text.
struct source_file {
  std::string path;
  std::string text;
};

// Every regular file under root/include and root/src, sorted by path. C++ files (.hpp, .ipp,
// .cpp, .h, .cc) are read; the others are listed with no text (they must still map to a layer).
[[nodiscard]] std::vector<source_file> read_tree(const std::filesystem::path& root);

// Every breach of the table in `files`, one line each, sorted by file and line:
//   path:line: <layer> includes <layer>: #include <...>
//   path: maps to no layer ...
//   path:line: <layer> includes a file of no layer: #include <...>
// (A quoted include that names no file of the tree from the including file's folder is left to
// the compiler.)
//   docs/architecture.md:line: <layer> lists header <h>, which ...
//   include cycle between layers: a -> b -> a (...)
[[nodiscard]] std::vector<std::string> check(const layer_table& table, const std::vector<source_file>& files,
                                             std::string_view doc);

// The picture: one box per layer, bottom to top (layers of the same height side by side), and an
// arrow for each allowed include that does not follow from the others. Deterministic text.
[[nodiscard]] std::string render_svg(const layer_table& table);

// The program: the arguments after the program name (see layer_check.cpp), the report on `out`,
// usage errors on `err`. Returns the exit status: 0 kept, 1 broken or unreadable, 2 bad usage.
int run(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);

}  // namespace layer_check

#endif  // MCPCORE_TESTS_LAYERS_LAYER_RULES_HPP
