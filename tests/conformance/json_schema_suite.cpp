// SPDX-License-Identifier: Apache-2.0
// The input-schema validator against the official JSON-Schema-Test-Suite, draft 2020-12
// (docs/schema.md#json-schema-test-suite-results).
#include <mcpcore/dispatch/schema.hpp>

#include <doctest/doctest.h>

#include <mcpcore/wire/json.hpp>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

// Every case of the draft 2020-12 files (tests/conformance/data/json-schema-test-suite/, vendored
// with the suite's LICENSE and SOURCE.md) is compiled in lenient mode (compile_options::strict =
// false: plain JSON Schema semantics). A case that compiles must give every test's expected
// validity. What does not hold is listed in `exclusions` below, with the reason; docs/schema.md
// carries the counts. The table is checked both ways: an unlisted failure fails the test, and so
// does an entry that no longer matches a case or test, or that passes now, so the list cannot go
// stale.
//
// The suite's files are read with mcpcore's json::document; its schemas and instances are
// handed to the compiler and the validator as parsed values, so no serializer sits between the
// suite's numbers and the validator (1.0 stays a fraction literal, 3.0 stays 3.0).

namespace {

using namespace mcpcore;

#if defined(MCPCORE_JSON_SCHEMA_SUITE_DIR)
constexpr std::string_view suite_dir = MCPCORE_JSON_SCHEMA_SUITE_DIR;
#elif defined(MCPCORE_TEST_DATA_DIR)
constexpr std::string_view suite_dir = MCPCORE_TEST_DATA_DIR "/json-schema-test-suite";
#else
constexpr std::string_view suite_dir = "tests/conformance/data/json-schema-test-suite";
#endif

// Every `tests/draft2020-12/*.json` file runs (listed from the directory); these optional files
// run too. `optional/format/*.json` is added by listing its directory: `format` is an annotation
// for mcpcore, so only its valid:true tests apply.
constexpr std::string_view optional_files[] = {
    "optional/anchor.json",
    "optional/dynamicRef.json",
    "optional/ecmascript-regex.json",
    "optional/float-overflow.json",
    "optional/id.json",
    "optional/no-schema.json",
    "optional/non-bmp-regex.json",
};

/// A suite case or test mcpcore does not pass, and why. With `test` empty the whole case is
/// excluded: it does not compile, or one of its tests fails. With `test` set the case compiles
/// and that one test fails.
struct exclusion {
  std::string_view file;
  std::string_view case_description;
  std::string_view test;
  std::string_view reason;
};

constexpr std::string_view remote =
    "remote $ref: references outside the schema's own document are refused at compile (no "
    "resolver; the suite's remotes/ are not vendored)";
constexpr std::string_view meta_schema =
    "a custom meta-schema: $schema other than 2020-12 or draft-07 is refused at compile";
constexpr std::string_view meta_schema_ref =
    "$ref to the 2020-12 meta-schema: a remote reference, and meta-schemas are not bundled";
constexpr std::string_view integer_literal =
    "deliberate: docs/schema.md#numbers makes an integer an integer literal within signed 64 "
    "bits, so 1.0 and 1e308 are refused";

// clang-format off
constexpr exclusion exclusions[] = {
    {"defs.json",
     "validate definition against metaschema",
     {},
     meta_schema_ref},
    {"dynamicRef.json",
     "$ref and $dynamicAnchor are independent of order - $defs first",
     {},
     remote},
    {"dynamicRef.json",
     "$ref and $dynamicAnchor are independent of order - $ref first",
     {},
     remote},
    {"dynamicRef.json",
     "$ref to $dynamicRef finds detached $dynamicAnchor",
     {},
     remote},
    {"dynamicRef.json",
     "strict-tree schema, guards against misspelled properties",
     {},
     remote},
    {"dynamicRef.json",
     "tests for implementation dynamic anchor and reference link",
     {},
     remote},
    {"optional/float-overflow.json",
     "all integers are multiples of 0.5, if overflow is handled",
     "valid if optional overflow handling is implemented",
     integer_literal},
    {"ref.json",
     "remote ref, containing refs itself",
     {},
     meta_schema_ref},
    {"refRemote.json",
     "$ref to $ref finds detached $anchor",
     {},
     remote},
    {"refRemote.json",
     "Location-independent identifier in remote ref",
     {},
     remote},
    {"refRemote.json",
     "anchor within remote ref",
     {},
     remote},
    {"refRemote.json",
     "base URI change",
     {},
     remote},
    {"refRemote.json",
     "base URI change - change folder",
     {},
     remote},
    {"refRemote.json",
     "base URI change - change folder in subschema",
     {},
     remote},
    {"refRemote.json",
     "fragment within remote ref",
     {},
     remote},
    {"refRemote.json",
     "ref within remote ref",
     {},
     remote},
    {"refRemote.json",
     "remote HTTP ref with different $id",
     {},
     remote},
    {"refRemote.json",
     "remote HTTP ref with different URN $id",
     {},
     remote},
    {"refRemote.json",
     "remote HTTP ref with nested absolute ref",
     {},
     remote},
    {"refRemote.json",
     "remote ref",
     {},
     remote},
    {"refRemote.json",
     "remote ref with ref to defs",
     {},
     remote},
    {"refRemote.json",
     "retrieved nested refs resolve relative to their URI not $id",
     {},
     remote},
    {"refRemote.json",
     "root ref in remote ref",
     {},
     remote},
    {"type.json",
     "integer type matches integers",
     "a float with zero fractional part is an integer",
     integer_literal},
    {"vocabulary.json",
     "ignore unrecognized optional vocabulary",
     {},
     meta_schema},
    {"vocabulary.json",
     "schema that uses custom metaschema with with no validation vocabulary",
     {},
     meta_schema},
};
// clang-format on

struct suite_test {
  std::string description;
  bool valid = false;
  json::value data;
};

struct suite_case {
  std::string file;
  std::string description;
  json::value schema;
  std::vector<suite_test> tests;
};

struct loaded_file {
  json::document doc;
  std::vector<suite_case> cases;
};

std::optional<std::string> read_file(const std::filesystem::path& p) {
  std::ifstream in{p, std::ios::binary};
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Loads one suite file; appends to `problems` when it cannot be read as the suite's format.
bool load(const std::filesystem::path& dir, const std::string& name, loaded_file& out,
          std::vector<std::string>& problems) {
  const auto text = read_file(dir / name);
  if (!text) {
    problems.push_back("cannot read " + (dir / name).string());
    return false;
  }
  auto root = out.doc.parse(*text);
  if (!root || !root->is_array()) {
    problems.push_back(name + " is not a JSON array of cases");
    return false;
  }
  for (json::value c : root->elements()) {
    suite_case sc;
    sc.file = name;
    if (!c["description"].is_string() || !c["schema"].exists() || !c["tests"].is_array()) {
      problems.push_back(name + ": a case lacks description, schema or tests");
      continue;
    }
    sc.description = std::string{c["description"].as_string()};
    sc.schema = c["schema"];
    for (json::value t : c["tests"].elements()) {
      if (!t["description"].is_string() || !t["valid"].is_bool() || !t["data"].exists()) {
        problems.push_back(name + ": " + sc.description +
                           ": a test lacks description, valid or data");
        continue;
      }
      sc.tests.push_back(
          {std::string{t["description"].as_string()}, t["valid"].as_bool(), t["data"]});
    }
    out.cases.push_back(std::move(sc));
  }
  return true;
}

std::string joined(const std::vector<schema::compile_error>& errors) {
  std::string out;
  for (const auto& e : errors) {
    if (!out.empty()) out += "; ";
    out += (e.path.empty() ? std::string{"(root)"} : e.path) + ": " + e.message;
  }
  return out;
}

}  // namespace

TEST_CASE(
    "JSON-Schema-Test-Suite draft 2020-12: every case passes in lenient mode or is excluded with its reason (schema.md)") {
  const std::filesystem::path root{std::string{suite_dir}};
  const std::filesystem::path dir = root / "tests" / "draft2020-12";
  REQUIRE_MESSAGE(std::filesystem::is_directory(dir),
                  "the JSON-Schema-Test-Suite is not at "
                      << dir.string()
                      << ": define MCPCORE_JSON_SCHEMA_SUITE_DIR to the vendored "
                         "tests/conformance/data/json-schema-test-suite directory");

  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator{dir})
    if (entry.is_regular_file() && entry.path().extension() == ".json")
      files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  files.insert(files.end(), std::begin(optional_files), std::end(optional_files));
  const std::filesystem::path format_dir = dir / "optional" / "format";
  std::vector<std::string> format_files;
  if (std::filesystem::is_directory(format_dir)) {
    for (const auto& entry : std::filesystem::directory_iterator{format_dir})
      if (entry.path().extension() == ".json")
        format_files.push_back("optional/format/" + entry.path().filename().string());
  }
  std::sort(format_files.begin(), format_files.end());
  CHECK_MESSAGE(!format_files.empty(), "no optional/format/*.json files under " << dir.string());
  files.insert(files.end(), format_files.begin(), format_files.end());

  std::vector<std::string> problems;
  std::vector<bool> exclusion_used(std::size(exclusions), false);
  std::size_t total_tests = 0, tests_passed = 0, tests_excluded = 0, format_skipped = 0;
  std::vector<std::string> per_file;

  schema::compile_options lenient;
  lenient.strict = false;

  for (const std::string& name : files) {
    loaded_file file;
    if (!load(dir, name, file, problems)) continue;
    const bool is_format = name.starts_with("optional/format/");
    std::size_t file_total = 0, file_passed = 0, file_excluded = 0;
    for (const suite_case& c : file.cases) {
      const std::string where = name + ": \"" + c.description + "\"";
      auto compiled = schema::compiled_schema::compile(c.schema, lenient);

      // The table's entries for this case.
      std::optional<std::size_t> whole_case;
      std::vector<std::size_t> single;
      for (std::size_t i = 0; i < std::size(exclusions); ++i) {
        if (exclusions[i].file != name || exclusions[i].case_description != c.description) continue;
        if (exclusions[i].test.empty()) {
          whole_case = i;
        } else {
          single.push_back(i);
        }
      }
      std::size_t applicable = 0;
      for (const suite_test& t : c.tests)
        if (!(is_format && !t.valid)) ++applicable;
      format_skipped += c.tests.size() - applicable;
      file_total += applicable;

      if (!compiled) {
        if (whole_case) {
          exclusion_used[*whole_case] = true;
          file_excluded += applicable;
        } else {
          problems.push_back(where + " does not compile and is not in the exclusion table: " +
                             joined(compiled.error()));
        }
        continue;
      }
      bool all_pass = true;
      std::size_t case_passed = 0, case_excluded = 0;
      for (const suite_test& t : c.tests) {
        if (is_format && !t.valid) continue;  // format is an annotation: nothing to refuse
        const auto v = compiled->validate(t.data);
        const bool valid = !v.has_value();
        const bool pass = valid == t.valid;
        const auto listed = std::find_if(single.begin(), single.end(), [&](std::size_t i) {
          return exclusions[i].test == t.description;
        });
        if (listed != single.end()) {
          exclusion_used[*listed] = true;
          ++case_excluded;
          if (pass)
            problems.push_back(where + " / \"" + t.description +
                               "\" is excluded but passes now: remove the entry");
          continue;
        }
        if (pass) {
          ++case_passed;
          continue;
        }
        all_pass = false;
        if (!whole_case) {
          problems.push_back(where + " / \"" + t.description + "\": expected " +
                             (t.valid ? "valid" : "invalid") + ", got " +
                             (valid ? "valid" : "invalid (" + v->path + ": " + v->reason + ")"));
        }
      }
      if (whole_case) {
        exclusion_used[*whole_case] = true;
        if (all_pass)
          problems.push_back(where + " is excluded but compiles and passes now: remove the entry");
        file_excluded += applicable;
      } else {
        file_passed += case_passed;
        file_excluded += case_excluded;
      }
    }
    total_tests += file_total;
    tests_passed += file_passed;
    tests_excluded += file_excluded;
    per_file.push_back(name + " " + std::to_string(file_passed) + "/" +
                       std::to_string(file_excluded) + "/" + std::to_string(file_total));
  }

  for (std::size_t i = 0; i < std::size(exclusions); ++i) {
    if (!exclusion_used[i]) {
      problems.push_back(
          "exclusion entry matches no case or test: " + std::string{exclusions[i].file} + ": \"" +
          std::string{exclusions[i].case_description} + "\"" +
          (exclusions[i].test.empty() ? std::string{}
                                      : " / \"" + std::string{exclusions[i].test} + "\""));
    }
  }

  std::string table;
  for (const std::string& f : per_file) table += "\n  " + f;
  MESSAGE("JSON-Schema-Test-Suite draft 2020-12: "
          << files.size() << " files, " << tests_passed << " tests passed, " << tests_excluded
          << " excluded, " << total_tests << " total (" << format_skipped
          << " format tests with valid:false skipped: format is an annotation); per file "
             "passed/excluded/total:"
          << table);
  for (const std::string& p : problems) FAIL_CHECK(p);
  CHECK(problems.empty());
  CHECK(tests_passed > 0);
  CHECK(tests_passed + tests_excluded == total_tests);
}
