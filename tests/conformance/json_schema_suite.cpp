// SPDX-License-Identifier: Apache-2.0
// The input-schema subset against the JSON-Schema-Test-Suite (docs/schema.md; Debian
// json-schema-test-suite).
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

// Every case of the draft-7 files for the keywords mcpcore supports is compiled in lenient mode
// (compile_options::strict = false: plain JSON Schema semantics of the subset's keywords). A
// case that compiles must give every test's expected validity. A case that does not compile
// (it uses a keyword or a form outside the subset) must be listed in `exclusions` below, with
// the reason; docs/schema.md mirrors the table. The table is checked both ways: an unlisted
// failure fails the test, and so does an entry that no longer matches a case or that now
// compiles, so the list cannot go stale.
//
// The suite's files are read with mcpcore's json::document; its schemas and instances are
// handed to the compiler and the validator as parsed values, so no serializer sits between the
// suite's numbers and the validator (1.0 stays a fraction literal, 3.0 stays 3.0).

namespace {

using namespace mcpcore;

#if defined(MCPCORE_JSON_SCHEMA_SUITE_DIR)
constexpr std::string_view suite_dir = MCPCORE_JSON_SCHEMA_SUITE_DIR;
#else
constexpr std::string_view suite_dir = "/usr/share/json-schema-test-suite/tests/draft7";
#endif

// The keyword files run (docs/schema.md's subset). `optional/format/*.json` is added by listing the
// directory: `format` is an annotation for mcpcore, so only its valid:true tests apply.
constexpr std::string_view keyword_files[] = {
    "additionalProperties.json",
    "anyOf.json",
    "boolean_schema.json",
    "const.json",
    "default.json",
    "enum.json",
    "exclusiveMaximum.json",
    "exclusiveMinimum.json",
    "items.json",
    "maxItems.json",
    "maxLength.json",
    "maximum.json",
    "minItems.json",
    "minLength.json",
    "minimum.json",
    "oneOf.json",
    "pattern.json",
    "properties.json",
    "ref.json",
    "required.json",
    "type.json",
    "optional/zeroTerminatedFloats.json",
};

/// A suite case mcpcore does not run, and why. With `test` empty the whole case is outside the
/// subset and must fail to compile; with `test` set the case compiles and that one test is a
/// deliberate deviation: mcpcore must give the opposite of the suite's expectation.
struct exclusion {
  std::string_view file;
  std::string_view case_description;
  std::string_view test;
  std::string_view reason;
};

constexpr std::string_view pattern_properties = "patternProperties is not in the subset";
constexpr std::string_view tuple_items = "the array (tuple) form of items is not in the subset";
constexpr std::string_view definitions = "draft-7 'definitions': the subset names them $defs";

constexpr exclusion exclusions[] = {
    {"additionalProperties.json",
     "additionalProperties being false does not allow other properties",
     {},
     pattern_properties},
    {"additionalProperties.json",
     "non-ASCII pattern with additionalProperties",
     {},
     pattern_properties},
    {"items.json", "an array of schemas for items", {}, tuple_items},
    {"items.json", "items with boolean schemas", {}, tuple_items},
    {"optional/zeroTerminatedFloats.json",
     "some languages do not distinguish between different types of numeric value",
     "a float without fractional part is an integer",
     "deliberate: docs/schema.md#validation-order makes an integer an integer literal, so 1.0 is refused"},
    {"properties.json",
     "properties, patternProperties, additionalProperties interaction",
     {},
     pattern_properties},
    {"ref.json", "$ref to boolean schema false", {}, definitions},
    {"ref.json", "$ref to boolean schema true", {}, definitions},
    {"ref.json", "Recursive references between schemas", {}, "$id and draft-7 'definitions'"},
    {"ref.json",
     "escaped pointer ref",
     {},
     "$ref to a pointer other than \"#\" or \"#/$defs/<name>\" (escaping and percent-decoding of "
     "$defs names are unit-tested)"},
    {"ref.json", "nested refs", {}, definitions},
    {"ref.json",
     "ref overrides any sibling keywords",
     {},
     "draft-7 'definitions', and keywords beside $ref (draft 7 ignores them, 2020-12 applies them; "
     "the subset refuses the ambiguity)"},
    {"ref.json",
     "relative pointer ref to array",
     {},
     "$ref to an arbitrary pointer, and the tuple form of items"},
    {"ref.json",
     "relative pointer ref to object",
     {},
     "$ref to an arbitrary pointer (#/properties/foo)"},
    {"ref.json", "remote ref, containing refs itself", {}, "remote $ref"},
};

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
    "JSON-Schema-Test-Suite draft 7: every supported keyword's cases pass in lenient mode (schema.md)") {
  const std::filesystem::path dir{std::string{suite_dir}};
  REQUIRE_MESSAGE(std::filesystem::is_directory(dir),
                  "the JSON-Schema-Test-Suite is not at "
                      << dir.string()
                      << ": install the Debian package json-schema-test-suite, or define "
                         "MCPCORE_JSON_SCHEMA_SUITE_DIR to its tests/draft7 directory");

  std::vector<std::string> files(std::begin(keyword_files), std::end(keyword_files));
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
  std::size_t cases_run = 0, tests_run = 0, cases_excluded = 0, tests_excluded = 0,
              format_skipped = 0;

  schema::compile_options lenient;
  lenient.strict = false;

  for (const std::string& name : files) {
    loaded_file file;
    if (!load(dir, name, file, problems)) continue;
    const bool is_format = name.starts_with("optional/format/");
    for (const suite_case& c : file.cases) {
      const std::string where = name + ": \"" + c.description + "\"";
      auto compiled = schema::compiled_schema::compile(c.schema, lenient);

      // The table's entries for this case.
      std::optional<std::size_t> whole_case;
      std::vector<std::size_t> deviations;
      for (std::size_t i = 0; i < std::size(exclusions); ++i) {
        if (exclusions[i].file != name || exclusions[i].case_description != c.description) continue;
        if (exclusions[i].test.empty()) {
          whole_case = i;
        } else {
          deviations.push_back(i);
        }
      }

      if (!compiled) {
        if (whole_case) {
          exclusion_used[*whole_case] = true;
          ++cases_excluded;
        } else {
          problems.push_back(where + " does not compile and is not in the exclusion table: " +
                             joined(compiled.error()));
        }
        continue;
      }
      if (whole_case) {
        exclusion_used[*whole_case] = true;
        problems.push_back(where +
                           " is excluded as outside the subset but compiles now: remove the entry");
      }

      ++cases_run;
      for (const suite_test& t : c.tests) {
        const auto v = compiled->validate(t.data);
        const bool valid = !v.has_value();
        const auto deviation =
            std::find_if(deviations.begin(), deviations.end(),
                         [&](std::size_t i) { return exclusions[i].test == t.description; });
        if (deviation != deviations.end()) {
          exclusion_used[*deviation] = true;
          ++tests_excluded;
          if (valid == t.valid)
            problems.push_back(where + " / \"" + t.description +
                               "\" is listed as a deviation but passes now: remove the entry");
          continue;
        }
        if (is_format && !t.valid) {
          ++format_skipped;  // format is an annotation: nothing to refuse
          continue;
        }
        ++tests_run;
        if (valid != t.valid) {
          problems.push_back(where + " / \"" + t.description + "\": expected " +
                             (t.valid ? "valid" : "invalid") + ", got " +
                             (valid ? "valid" : "invalid (" + v->path + ": " + v->reason + ")"));
        }
      }
    }
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

  MESSAGE("JSON-Schema-Test-Suite draft 7: "
          << files.size() << " files, " << cases_run << " cases run, " << tests_run
          << " tests run, " << cases_excluded << " cases excluded (outside the subset), "
          << tests_excluded << " tests excluded (deliberate deviations), " << format_skipped
          << " format tests skipped (format is an annotation)");
  for (const std::string& p : problems) FAIL_CHECK(p);
  CHECK(problems.empty());
  CHECK(cases_run > 0);
}
