// SPDX-License-Identifier: Apache-2.0
// Tests of the layer checker itself (tests/layers/layer_check): fixture trees in a temporary
// directory, each with its own small docs/architecture.md.
#include "layer_rules.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <unistd.h>

namespace {

namespace fs = std::filesystem;

// A three-layer table: base < wire < governance, plus an umbrella on top.
constexpr std::string_view good_doc = R"md(# Architecture

## Layers

Some prose, then the table.

| layer | folders | headers | may include | what it is for |
|---|---|---|---|---|
| **base** | `include/mcpcore/fwd.hpp`, `include/mcpcore/detail/` | `fwd.hpp`, `detail/config.hpp` | none | shared |
| **wire** | `include/mcpcore/wire/` | `wire/json.hpp` | `base` | bytes |
| **governance** | `include/mcpcore/governance/`, `src/gov.cpp` | `governance/policy.hpp` | `base`, `wire` | rules |
| **umbrella** | `include/mcpcore/mcpcore.hpp` | `mcpcore.hpp` | `*` (every layer) | one include |

## Next section

| layer | folders | headers | may include |
|---|---|---|---|
| **ignored** | `include/` | | |
)md";

// A fixture tree, removed on destruction.
class fixture {
 public:
  fixture() {
    static std::atomic<int> counter{0};
    root_ = fs::temp_directory_path() /
            ("mcpcore_layer_check_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(root_);
    fs::create_directories(root_);
    write("docs/architecture.md", good_doc);
    write("include/mcpcore/fwd.hpp", "#pragma once\n#include <mcpcore/detail/config.hpp>\n");
    write("include/mcpcore/detail/config.hpp", "#pragma once\n");
    write("include/mcpcore/wire/json.hpp", "#pragma once\n#include <mcpcore/fwd.hpp>\n");
    write("include/mcpcore/wire/impl/json.ipp", "#include <mcpcore/wire/json.hpp>\n");
    write("include/mcpcore/governance/policy.hpp",
          "#pragma once\n#include <mcpcore/wire/json.hpp>\n#include <mcpcore/detail/config.hpp>\n");
    write("src/gov.cpp", "#include \"mcpcore/governance/policy.hpp\"\n");
    write("include/mcpcore/mcpcore.hpp", "#include <mcpcore/governance/policy.hpp>\n#include <mcpcore/wire/json.hpp>\n");
  }
  fixture(const fixture&) = delete;
  fixture& operator=(const fixture&) = delete;
  ~fixture() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  void write(const std::string& path, std::string_view text) const {
    const auto p = root_ / path;
    fs::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary);
    out << text;
  }

  // Runs the program on the tree: {exit status, what it printed}.
  [[nodiscard]] std::pair<int, std::string> run(std::initializer_list<std::string_view> extra = {}) const {
    const std::string root = root_.string();
    std::vector<std::string_view> args{"--root", root};
    args.insert(args.end(), extra.begin(), extra.end());
    std::ostringstream out;
    std::ostringstream err;
    const int status = layer_check::run(args, out, err);
    return {status, out.str() + err.str()};
  }

  [[nodiscard]] const fs::path& root() const { return root_; }

 private:
  fs::path root_;
};

bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string with_row_replaced(std::string_view from, std::string_view to) {
  std::string doc(good_doc);
  const auto at = doc.find(from);
  REQUIRE(at != std::string::npos);
  doc.replace(at, from.size(), to);
  return doc;
}

}  // namespace

TEST_SUITE("layer_check") {
  TEST_CASE("a tree that keeps the rule passes") {
    const fixture f;
    const auto [status, text] = f.run();
    CHECK(status == 0);
    CHECK(contains(text, "7 files, 8 includes, 0 problems"));
  }

  TEST_CASE("an include of a layer above fails with the offending line") {
    const fixture f;
    f.write("include/mcpcore/wire/json.hpp",
            "#pragma once\n#include <mcpcore/fwd.hpp>\n  #  include <mcpcore/governance/policy.hpp>  // no\n");
    const auto [status, text] = f.run();
    CHECK(status == 1);
    CHECK(contains(text, "include/mcpcore/wire/json.hpp:3: wire includes governance: "
                         "#include <mcpcore/governance/policy.hpp>\n"));
    // governance includes wire and wire governance now: that is a cycle, and it is named.
    CHECK(contains(text, "include cycle between layers: wire -> governance -> wire "
                         "(include/mcpcore/wire/json.hpp:3, include/mcpcore/governance/policy.hpp:2)"));
    CHECK(contains(text, "2 problems"));
  }

  TEST_CASE("the quoted form is checked too, and an impl/ folder belongs to its layer") {
    const fixture f;
    f.write("include/mcpcore/wire/impl/json.ipp", "#include \"mcpcore/mcpcore.hpp\"\n");
    const auto [status, text] = f.run();
    CHECK(status == 1);
    CHECK(contains(text, "include/mcpcore/wire/impl/json.ipp:1: wire includes umbrella: #include \"mcpcore/mcpcore.hpp\""));
  }

  TEST_CASE("a quoted include is resolved from the including file's folder") {
    const fixture f;
    f.write("src/gov.cpp", "#include \"sqlite3.h\"\n#include \"../include/mcpcore/governance/policy.hpp\"\n");
    CHECK(f.run().first == 0);  // a file of no tree is the compiler's business
    f.write("include/mcpcore/wire/impl/json.ipp", "#include \"../../governance/policy.hpp\"\n");
    const auto [status, text] = f.run();
    CHECK(status == 1);
    CHECK(contains(text, "include/mcpcore/wire/impl/json.ipp:1: wire includes governance: "
                         "#include \"../../governance/policy.hpp\""));
  }

  TEST_CASE("includes in comments and literals do not count") {
    const fixture f;
    f.write("include/mcpcore/detail/config.hpp",
            "#pragma once\n"
            "// #include <mcpcore/wire/json.hpp>\n"
            "/* a block comment\n"
            "#include <mcpcore/wire/json.hpp>\n"
            "*/\n"
            "inline const char* accept = \"*/*\";  /* \"*/\n"
            "inline const char* raw = R\"x(\n"
            "#include <mcpcore/wire/json.hpp>\n"
            ")x\";\n"
            "inline int n = 1'000;\n"
            "inline char c = '\"';\n"
            "namespace mcpcore { struct policy; }  // a forward declaration is not an include\n");
    const auto [status, text] = f.run();
    CHECK(status == 0);
    CHECK(contains(text, "0 problems"));
    // ... while a real one after all of that does.
    f.write("include/mcpcore/detail/config.hpp",
            "/* x */ #include <mcpcore/wire/json.hpp>\ninline const char* accept = \"/*\";\n"
            "#include <mcpcore/wire/json.hpp>\n");
    const auto [status2, text2] = f.run();
    CHECK(status2 == 1);
    CHECK(contains(text2, "include/mcpcore/detail/config.hpp:1: base includes wire"));
    CHECK(contains(text2, "include/mcpcore/detail/config.hpp:3: base includes wire"));
  }

  TEST_CASE("a file in no layer's folder fails") {
    const fixture f;
    f.write("include/mcpcore/extra/thing.hpp", "#pragma once\n");
    f.write("src/loose.cpp", "int x;\n");
    const auto [status, text] = f.run();
    CHECK(status == 1);
    CHECK(contains(text, "include/mcpcore/extra/thing.hpp: maps to no layer"));
    CHECK(contains(text, "src/loose.cpp: maps to no layer"));
  }

  TEST_CASE("an include of a file in no layer fails") {
    const fixture f;
    f.write("include/mcpcore/wire/json.hpp", "#include <mcpcore/elsewhere/x.hpp>\n");
    const auto [status, text] = f.run();
    CHECK(status == 1);
    CHECK(contains(text, "include/mcpcore/wire/json.hpp:1: wire includes a file of no layer: "
                         "#include <mcpcore/elsewhere/x.hpp>"));
  }

  TEST_CASE("the headers column names exactly the public headers") {
    const fixture f;
    f.write("include/mcpcore/wire/sse.hpp", "#pragma once\n");
    f.write("docs/architecture.md", with_row_replaced("`wire/json.hpp`", "`wire/json.hpp`, `wire/gone.hpp`, `fwd.hpp`"));
    const auto [status, text] = f.run();
    CHECK(status == 1);
    CHECK(contains(text, "include/mcpcore/wire/sse.hpp: a public header the layers table"));
    CHECK(contains(text, "docs/architecture.md:10: layer wire lists header wire/gone.hpp, which does not exist"));
    CHECK(contains(text, "docs/architecture.md:10: layer wire lists header fwd.hpp, which is in base"));
  }

  TEST_CASE("a malformed table fails") {
    const fixture f;
    SUBCASE("no section") {
      f.write("docs/architecture.md", "# Architecture\n\nNo layers here.\n");
      const auto [status, text] = f.run();
      CHECK(status == 1);
      CHECK(contains(text, "no \"## Layers\" section"));
    }
    SUBCASE("no table") {
      f.write("docs/architecture.md", "## Layers\n\n```\n| a | b |\n|---|---|\n| c | d |\n```\n## Next\n");
      const auto [status, text] = f.run();
      CHECK(status == 1);
      CHECK(contains(text, "has no table of layers"));
    }
    SUBCASE("a column missing") {
      f.write("docs/architecture.md", with_row_replaced("| may include |", "| may use |"));
      const auto [status, text] = f.run();
      CHECK(status == 1);
      CHECK(contains(text, "the layers table has no \"may include\" column"));
      CHECK(contains(text, "is malformed"));
    }
    SUBCASE("a row with a cell too few") {
      f.write("docs/architecture.md", with_row_replaced("| `base` | bytes |", "| bytes |"));
      const auto [status, text] = f.run();
      CHECK(status == 1);
      CHECK(contains(text, "docs/architecture.md:10: the row has 4 cells, the header 5"));
    }
    SUBCASE("an unknown layer") {
      f.write("docs/architecture.md", with_row_replaced("| `base` | bytes |", "| `base`, `basement` | bytes |"));
      const auto [status, text] = f.run();
      CHECK(status == 1);
      CHECK(contains(text, "layer wire may include \"basement\", which is not a layer"));
    }
    SUBCASE("a layer that may include one above it") {
      f.write("docs/architecture.md", with_row_replaced("| `base` | bytes |", "| `base`, `governance` | bytes |"));
      const auto [status, text] = f.run();
      CHECK(status == 1);
      CHECK(contains(text, "layer wire may include governance, which comes after it"));
    }
    SUBCASE("a layer that may include another without what that one may include") {
      f.write("docs/architecture.md", with_row_replaced("| `base`, `wire` | rules |", "| `wire` | rules |"));
      const auto [status, text] = f.run();
      CHECK(status == 1);
      CHECK(contains(text, "layer governance may include wire, which may include base: list base for governance too"));
    }
    SUBCASE("a path claimed twice") {
      f.write("docs/architecture.md",
              with_row_replaced("`include/mcpcore/wire/` |", "`include/mcpcore/wire/`, `include/mcpcore/fwd.hpp` |"));
      const auto [status, text] = f.run();
      CHECK(status == 1);
      CHECK(contains(text, "include/mcpcore/fwd.hpp is claimed by base and wire"));
    }
    SUBCASE("a path outside include/ and src/") {
      f.write("docs/architecture.md", with_row_replaced("`include/mcpcore/wire/` |", "`include/mcpcore/wire/`, `docs/` |"));
      const auto [status, text] = f.run();
      CHECK(status == 1);
      CHECK(contains(text, "docs/architecture.md:10: layer wire: \"docs/\" is not a path under include/ or src/"));
    }
    SUBCASE("a layer twice") {
      f.write("docs/architecture.md", with_row_replaced("| **umbrella** |", "| **wire** |"));
      const auto [status, text] = f.run();
      CHECK(status == 1);
      CHECK(contains(text, "layer wire appears twice"));
    }
  }

  TEST_CASE("the longest path wins, and a folder covers every depth") {
    const auto parsed = layer_check::parse_table(good_doc, "doc");
    REQUIRE(parsed.errors.empty());
    const auto& t = parsed.table;
    REQUIRE(t.layers.size() == 4);
    CHECK(t.layer_of("include/mcpcore/wire/impl/deep/x.ipp") == t.index_of("wire"));
    CHECK(t.layer_of("include/mcpcore/fwd.hpp") == t.index_of("base"));
    CHECK(t.layer_of("include/mcpcore/fwd.hpp.bak") == -1);
    CHECK(t.layer_of("include/mcpcore/wirex/a.hpp") == -1);
    CHECK(t.layer_of("src/gov.cpp") == t.index_of("governance"));
    CHECK(t.allowed[3][0]);  // `*`
    CHECK(t.allowed[3][2]);
    CHECK_FALSE(t.allowed[1][2]);
    CHECK(t.layers[0].may_include.empty());  // "none" is prose
    CHECK(t.layers[1].purpose == "bytes");
  }

  TEST_CASE("the picture: one box per layer, the arrows that do not follow from others, written and checked") {
    const fixture f;
    const auto parsed = layer_check::parse_table(good_doc, "doc");
    REQUIRE(parsed.errors.empty());
    const auto svg = layer_check::render_svg(parsed.table);
    CHECK(svg == layer_check::render_svg(parsed.table));
    CHECK(svg.starts_with("<?xml"));
    for (const auto* name : {"base", "wire", "governance", "umbrella"}) {
      CHECK(contains(svg, std::string(">") + name + "</text>"));
    }
    // umbrella -> governance -> wire -> base; umbrella -> wire and the rest follow from those.
    CHECK(std::count(svg.begin(), svg.end(), '\n') > 10);
    CHECK(contains(svg, "<title>umbrella may include governance</title>"));
    CHECK(contains(svg, "<title>governance may include wire</title>"));
    CHECK(contains(svg, "<title>wire may include base</title>"));
    CHECK_FALSE(contains(svg, "<title>umbrella may include wire</title>"));
    CHECK_FALSE(contains(svg, "<title>governance may include base</title>"));

    CHECK(f.run({"--check-svg", "docs/layers.svg"}).first == 1);
    CHECK(f.run({"--write-svg", "docs/layers.svg"}).first == 0);
    const auto [status, text] = f.run({"--check-svg", "docs/layers.svg"});
    CHECK(status == 0);
    f.write("docs/layers.svg", svg + " ");
    const auto [status2, text2] = f.run({"--check-svg", "docs/layers.svg"});
    CHECK(status2 == 1);
    CHECK(contains(text2, "docs/layers.svg is not what the layers table in docs/architecture.md draws"));
  }

  TEST_CASE("bad usage") {
    const fixture f;
    CHECK(f.run({"--bogus"}).first == 2);
    CHECK(f.run({"--doc", "docs/missing.md"}).first == 1);
  }
}
