// SPDX-License-Identifier: Apache-2.0
// Tests of the input-schema subset: compile-time lints (docs/schema.md#keywords) and validation
// (docs/schema.md#validation-order).
#include <mcpcore/dispatch/schema.hpp>

#include <doctest/doctest.h>

#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using namespace mcpcore;

namespace {

schema::compile_options lenient() {
  schema::compile_options o;
  o.strict = false;
  return o;
}

// "path: message" for every compile error, or {"compiled"} when the schema compiles.
std::vector<std::string> errors_of(std::string_view text, const schema::compile_options& o = {}) {
  auto c = schema::compiled_schema::compile(text, o);
  if (c) return {"compiled"};
  std::vector<std::string> out;
  for (const auto& e : c.error()) out.push_back(e.path + ": " + e.message);
  return out;
}

bool compiles(std::string_view text, const schema::compile_options& o = {}) {
  return schema::compiled_schema::compile(text, o).has_value();
}

// The first error's "path: message", or "compiled".
std::string first_error(std::string_view text, const schema::compile_options& o = {}) {
  return errors_of(text, o).front();
}

schema::compiled_schema compile_ok(std::string_view text, const schema::compile_options& o = {}) {
  auto c = schema::compiled_schema::compile(text, o);
  if (!c) {
    for (const auto& e : c.error()) MESSAGE("compile error at '" << e.path << "': " << e.message);
  }
  REQUIRE(c.has_value());
  return std::move(*c);
}

// "valid", or "path|reason" of the violation.
std::string check(const schema::compiled_schema& s, std::string_view instance) {
  json::document doc;
  auto v = doc.parse(instance);
  REQUIRE(v.has_value());
  auto r = s.validate(*v);
  return r ? r->path + "|" + r->reason : std::string{"valid"};
}

bool contains(const std::string& s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

constexpr std::string_view closed_ab =
    R"({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},)"
    R"("required":["a"],"additionalProperties":false})";

}  // namespace

// ---- strict-mode lints (docs/schema.md#keywords)
// ------------------------------------------------------------

TEST_CASE("schema.md/keywords: a minimal closed object schema compiles in strict mode") {
  CHECK(compiles(R"({"type":"object","additionalProperties":false})"));
  CHECK(compiles(closed_ab));
}

TEST_CASE("schema.md/keywords: type is mandatory on every node except a $ref-only node") {
  CHECK(first_error(R"({"properties":{}})") == ": 'type' is required");
  CHECK(first_error(R"({"type":"object","properties":{"a":{"description":"no type"}}})") ==
        "/properties/a: 'type' is required");
  CHECK(compiles(R"({"type":"object","properties":{"a":{"$ref":"#/$defs/s","description":"d"}},)"
                 R"("$defs":{"s":{"type":"string"}}})"));
  CHECK(first_error(R"({"type":"object","$defs":{"s":{"minLength":1}}})") ==
        "/$defs/s: 'type' is required");
  // Lenient mode: type is optional.
  CHECK(compiles(R"({"properties":{"a":{}}})", lenient()));
}

TEST_CASE(
    "schema.md/keywords: type is one string of the six, unions and null are refused in strict mode") {
  for (std::string_view t : {"string", "integer", "number", "boolean", "object", "array"}) {
    const std::string s =
        R"({"type":"object","properties":{"a":{"type":")" + std::string{t} + R"("}}})";
    CHECK_MESSAGE(compiles(s), t);
  }
  CHECK(first_error(R"({"type":"object","properties":{"a":{"type":["string","integer"]}}})") ==
        "/properties/a/type: type unions are not supported (give a single type)");
  CHECK(first_error(R"({"type":"object","properties":{"a":{"type":"null"}}})") ==
        "/properties/a/type: type 'null' is not supported");
  CHECK(first_error(R"({"type":"object","properties":{"a":{"type":"str"}}})") ==
        "/properties/a/type: unknown type \"str\"");
  CHECK(first_error(R"({"type":"object","properties":{"a":{"type":3}}})") ==
        "/properties/a/type: 'type' must be a string");
  // Lenient: arrays of unique known names, null included.
  CHECK(compiles(R"({"type":["string","null"]})", lenient()));
  CHECK(first_error(R"({"type":["string","string"]})", lenient()) == "/type/1: type listed twice");
}

TEST_CASE("schema.md/keywords: the root must be an object schema (after $ref resolution)") {
  CHECK(first_error(R"({"type":"string"})") == ": the root schema must have type 'object'");
  CHECK(compiles(R"({"$ref":"#/$defs/args","$defs":{"args":{"type":"object"}}})"));
  CHECK(first_error(R"({"$ref":"#/$defs/args","$defs":{"args":{"type":"array"}}})") ==
        ": the root schema must have type 'object'");
  CHECK(first_error("[]") == ": a schema must be a JSON object");
  CHECK(compiles(R"({"type":"string"})", lenient()));
}

TEST_CASE("schema.md/keywords: keyword/type coupling") {
  CHECK(first_error(R"({"type":"object","properties":{"a":{"type":"string","properties":{}}}})") ==
        "/properties/a/properties: 'properties' applies to type object, not string");
  CHECK(first_error(R"({"type":"object","properties":{"a":{"type":"integer","maxLength":3}}})") ==
        "/properties/a/maxLength: 'maxLength' applies to type string, not integer");
  CHECK(first_error(R"({"type":"object","properties":{"a":{"type":"integer","minLength":3}}})") ==
        "/properties/a/minLength: 'minLength' applies to type string, not integer");
  CHECK(first_error(R"({"type":"object","properties":{"a":{"type":"integer","pattern":"x"}}})") ==
        "/properties/a/pattern: 'pattern' applies to type string, not integer");
  CHECK(first_error(R"({"type":"object","properties":{"a":{"type":"string","minimum":1}}})") ==
        "/properties/a/minimum: 'minimum' applies to type integer or number, not string");
  CHECK(first_error(R"({"type":"object","properties":{"a":{"type":"string","maximum":1}}})") ==
        "/properties/a/maximum: 'maximum' applies to type integer or number, not string");
  CHECK(first_error(R"({"type":"object","items":{"type":"string"}})") ==
        "/items: 'items' applies to type array, not object");
  CHECK(first_error(R"({"type":"object","minItems":1})") ==
        "/minItems: 'minItems' applies to type array, not object");
  CHECK(first_error(R"({"type":"object","maxItems":1})") ==
        "/maxItems: 'maxItems' applies to type array, not object");
  CHECK(first_error(R"({"type":"object","properties":{"a":{"type":"array","required":[]}}})") ==
        "/properties/a/required: 'required' applies to type object, not array");
  CHECK(
      first_error(
          R"({"type":"object","properties":{"a":{"type":"array","additionalProperties":false}}})") ==
      "/properties/a/additionalProperties: 'additionalProperties' applies to type object, not "
      "array");
  CHECK(
      first_error(
          R"({"type":"object","properties":{"a":{"type":"array","anyOf":[{"required":["x"]}]}}})") ==
      "/properties/a/anyOf: 'anyOf' applies to type object, not array");
  CHECK(
      first_error(
          R"({"type":"object","properties":{"a":{"type":"array","oneOf":[{"required":["x"]}]}}})") ==
      "/properties/a/oneOf: 'oneOf' applies to type object, not array");
  // The same keywords on their own types compile.
  CHECK(compiles(
      R"({"type":"object","properties":{"s":{"type":"string","minLength":1,"maxLength":3,"pattern":"^a"},)"
      R"("n":{"type":"number","minimum":0,"maximum":1},"i":{"type":"integer","minimum":0},)"
      R"("l":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":2}}})"));
  // Lenient mode does not couple: each keyword applies to its own type only.
  CHECK(compiles(R"({"type":"integer","maxLength":3})", lenient()));
}

TEST_CASE("schema.md/keywords: enum is a non-empty array of unique values, not on objects or arrays") {
  CHECK(compiles(R"({"type":"object","properties":{"a":{"type":"string","enum":["x","y"]}}})"));
  CHECK(first_error(R"({"type":"object","properties":{"a":{"type":"string","enum":[]}}})") ==
        "/properties/a/enum: 'enum' must not be empty");
  CHECK(first_error(R"({"type":"object","properties":{"a":{"type":"string","enum":"x"}}})") ==
        "/properties/a/enum: 'enum' must be an array");
  CHECK(first_error(R"({"type":"object","properties":{"a":{"type":"number","enum":[1,2,1.0]}}})") ==
        "/properties/a/enum/2: 'enum' values must be unique");
  CHECK(first_error(R"({"type":"object","properties":{"a":{"type":"array","enum":[[1]]}}})") ==
        "/properties/a/enum: 'enum' is not allowed on type array");
  CHECK(first_error(R"({"type":"object","enum":[{}]})") ==
        "/enum: 'enum' is not allowed on type object");
  // Lenient: anything in an array.
  CHECK(compiles(R"({"enum":[]})", lenient()));
  CHECK(compiles(R"({"enum":[1,1,{"a":[]}]})", lenient()));
}

TEST_CASE("schema.md/keywords: required names are strings, unique and declared") {
  CHECK(first_error(
            R"({"type":"object","properties":{"a":{"type":"string"}},"required":["a","a"]})") ==
        "/required/1: required name \"a\" is listed twice");
  CHECK(first_error(R"({"type":"object","properties":{"a":{"type":"string"}},"required":["b"]})") ==
        "/required/0: required property \"b\" is not declared in 'properties'");
  CHECK(first_error(R"({"type":"object","required":[1]})") ==
        "/required/0: 'required' names must be strings");
  CHECK(first_error(R"({"type":"object","required":"a"})") ==
        "/required: 'required' must be an array of strings");
  // Lenient: undeclared names are fine (JSON Schema), duplicates are not.
  CHECK(compiles(R"({"required":["b"]})", lenient()));
  CHECK(first_error(R"({"required":["b","b"]})", lenient()) ==
        "/required/1: required name \"b\" is listed twice");
}

TEST_CASE("schema.md/keywords: additionalProperties is a schema or false, true is refused") {
  CHECK(compiles(R"({"type":"object","additionalProperties":false})"));
  CHECK(compiles(R"({"type":"object","additionalProperties":{"type":"string"}})"));
  CHECK(first_error(R"({"type":"object","additionalProperties":true})") ==
        "/additionalProperties: 'additionalProperties: true' is not allowed (omit it instead)");
  CHECK(first_error(R"({"type":"object","additionalProperties":1})") ==
        "/additionalProperties: 'additionalProperties' must be a schema or false");
  CHECK(compiles(R"({"additionalProperties":true})", lenient()));
}

TEST_CASE(
    "schema.md/keywords: anyOf and oneOf take required-only alternatives in strict mode") {
  const std::string props = R"("properties":{"a":{"type":"string"},"b":{"type":"string"}})";
  for (std::string_view k : {"anyOf", "oneOf"}) {
    const std::string key{k};
    CAPTURE(key);
    CHECK(compiles(R"({"type":"object",)" + props + R"(,")" + key +
                   R"(":[{"required":["a"]},{"required":["b"]}]})"));
    CHECK(
        first_error(R"({"type":"object",)" + props + R"(,")" + key + R"(":[{"type":"object"}]})") ==
        "/" + key + "/0: an '" + key +
            "' alternative must be an object whose only keyword is 'required' (required-only "
            "alternatives)");
    CHECK(first_error(R"({"type":"object",)" + props + R"(,")" + key +
                      R"(":[{"required":["a"],"minProperties":1}]})") ==
          "/" + key + "/0: an '" + key +
              "' alternative must be an object whose only keyword is 'required' (required-only "
              "alternatives)");
    CHECK(first_error(R"({"type":"object",)" + props + R"(,")" + key + R"(":[{"required":[]}]})") ==
          "/" + key + "/0/required: 'required' of an alternative must not be empty");
    CHECK(first_error(R"({"type":"object",)" + props + R"(,")" + key +
                      R"(":[{"required":["c"]}]})") ==
          "/" + key + "/0/required/0: required property \"c\" is not declared in 'properties'");
    CHECK(first_error(R"({"type":"object",")" + key + R"(":[]})") ==
          "/" + key + ": '" + key + "' must be a non-empty array of schemas");
    // Lenient: any subset schema.
    CHECK(compiles(R"({")" + key + R"(":[{"type":"integer"},{"minimum":2}]})", lenient()));
  }
}

TEST_CASE("schema.md/patterns: a pattern RE2 cannot compile is refused at registration with RE2's reason") {
  const auto pattern = [](std::string_view p) {
    std::string text;
    json::writer{text}
        .begin_object()
        .member("type", "object")
        .key("properties")
        .begin_object()
        .key("a")
        .begin_object()
        .member("type", "string")
        .member("pattern", p)
        .end_object()
        .end_object()
        .end_object();
    return text;
  };
  CHECK(compiles(pattern("^[a-z_]{1,64}$")));
  const std::string refused = "/properties/a/pattern: 'pattern' is not a regular expression RE2 accepts (";
  CHECK(first_error(pattern("(ab")) == refused + "missing ): (ab)");
  // Lookaround and back-references: RE2 guarantees linear time by not having them.
  CHECK(first_error(pattern("^(?!tmp)[a-z]+$")) == refused + "invalid perl operator: (?!)");
  CHECK(first_error(pattern("(?<=a)b")) == refused + "invalid perl operator: (?<)");
  CHECK(first_error(pattern(R"((a)\1)")) == refused + R"(invalid escape sequence: \1))");
  CHECK(first_error(pattern("a**")) == refused + "bad repetition operator: **)");
  CHECK(first_error(pattern("a{1001}")) == refused + "invalid repetition size: {1001})");
  CHECK(first_error(R"({"type":"object","properties":{"a":{"type":"string","pattern":7}}})") ==
        "/properties/a/pattern: 'pattern' must be a string");
  // patternProperties names go through the same engine.
  CHECK(first_error(R"j({"type":"object","patternProperties":{"(?=x)":{"type":"string"}}})j") ==
        "/patternProperties/(?=x): the 'patternProperties' name is not a regular expression RE2 "
        "accepts (invalid perl operator: (?=)");
  // RE2's memory budget is an option: a program larger than it does not compile.
  schema::compile_options small;
  small.max_pattern_memory_bytes = 4096;
  CHECK(compiles(pattern("^[a-z]{1,10}$"), small));
  CHECK(first_error(pattern("^[a-z]{1,1000}$"), small) == refused + "pattern too large - compile failed)");
  CHECK(compiles(pattern("^[a-z]{1,1000}$")));
}

TEST_CASE("schema.md/keywords: depth cap of 8 edges from the root") {
  // Nests `levels` objects below the root through `properties/p`.
  const auto nested = [](int levels) {
    std::string s = R"({"type":"object")";
    for (int i = 0; i < levels; ++i) s += R"(,"properties":{"p":{"type":"object")";
    for (int i = 0; i < levels; ++i) s += "}}";
    return s + "}";
  };
  CHECK(compiles(nested(8)));
  const auto errors = errors_of(nested(9));
  REQUIRE(errors.size() == 1);
  CHECK(
      contains(errors[0], "the schema nests deeper than the depth cap of 8 levels below the root"));
  CHECK(contains(errors[0],
                 "/properties/p/properties/p/properties/p/properties/p/properties/p/properties/p/"
                 "properties/p/properties/p/properties/p:"));
  // items and additionalProperties count too; a $ref does not.
  CHECK(compiles(
      R"({"type":"object","additionalProperties":{"type":"array","items":{"$ref":"#/$defs/leaf"}},)"
      R"("$defs":{"leaf":{"type":"string"}}})"));
  schema::compile_options shallow;
  shallow.max_depth = 1;
  CHECK(compiles(R"({"type":"object","additionalProperties":{"type":"array"}})", shallow));
  CHECK(!compiles(
      R"({"type":"object","additionalProperties":{"type":"array","items":{"type":"string"}}})",
      shallow));
  // Depth reached through $defs counts where the definition is used.
  CHECK(!compiles(R"({"type":"object","properties":{"a":{"$ref":"#/$defs/d"}},)"
                  R"("$defs":{"d":{"type":"array","items":{"type":"string"}}}})",
                  shallow));
  // Lenient mode has no depth cap.
  CHECK(compiles(nested(20), lenient()));
}

TEST_CASE("schema.md/keywords: min > max is a compile error (numbers, lengths, items)") {
  CHECK(first_error(
            R"({"type":"object","properties":{"a":{"type":"integer","minimum":5,"maximum":4}}})") ==
        "/properties/a/minimum: 'minimum' and 'maximum' admit no value");
  CHECK(compiles(
      R"({"type":"object","properties":{"a":{"type":"integer","minimum":5,"maximum":5}}})"));
  CHECK(
      first_error(
          R"({"type":"object","properties":{"a":{"type":"number","exclusiveMinimum":5,"maximum":5}}})") ==
      "/properties/a/exclusiveMinimum: 'exclusiveMinimum' and 'maximum' admit no value");
  CHECK(
      first_error(
          R"({"type":"object","properties":{"a":{"type":"number","minimum":1.5,"exclusiveMaximum":1.5}}})") ==
      "/properties/a/minimum: 'minimum' and 'exclusiveMaximum' admit no value");
  CHECK(
      first_error(
          R"({"type":"object","properties":{"a":{"type":"string","minLength":3,"maxLength":2}}})") ==
      "/properties/a/minLength: 'minLength' is greater than 'maxLength'");
  CHECK(first_error(
            R"({"type":"object","properties":{"a":{"type":"array","minItems":3,"maxItems":2}}})") ==
        "/properties/a/minItems: 'minItems' is greater than 'maxItems'");
  CHECK(compiles(R"({"minimum":5,"maximum":4})", lenient()));  // JSON Schema allows an empty range
}

TEST_CASE("schema.md: keyword values must have their JSON Schema types (both modes)") {
  for (const auto& o : {schema::compile_options{}, lenient()}) {
    CAPTURE(o.strict);
    CHECK(contains(
        first_error(R"({"type":"object","properties":{"a":{"type":"string","maxLength":-1}}})", o),
        "/properties/a/maxLength: 'maxLength' must be a non-negative integer"));
    CHECK(contains(
        first_error(R"({"type":"object","properties":{"a":{"type":"string","minLength":1.5}}})", o),
        "/properties/a/minLength: 'minLength' must be a non-negative integer"));
    CHECK(contains(
        first_error(R"({"type":"object","properties":{"a":{"type":"integer","minimum":"1"}}})", o),
        "/properties/a/minimum: 'minimum' must be a number"));
    CHECK(first_error(
              R"({"type":"object","properties":{"a":{"type":"integer","exclusiveMinimum":true}}})",
              o) ==
          "/properties/a/exclusiveMinimum: 'exclusiveMinimum' must be a number (the boolean form "
          "of draft 4 is not "
          "supported)");
    CHECK(
        first_error(
            R"({"type":"object","properties":{"a":{"type":"array","items":[{"type":"string"}]}}})",
            o) ==
        "/properties/a/items: the array form of 'items' (draft 7) is not supported (2020-12 spells "
        "it 'prefixItems')");
    CHECK(first_error(R"({"type":"object","description":1})", o) ==
          "/description: 'description' must be a string");
    CHECK(first_error(R"({"type":"object","examples":{}})", o) ==
          "/examples: 'examples' must be an array");
  }
}

TEST_CASE("schema.md: unsupported keywords are compile errors naming the keyword and its path") {
  // Before 2020-12 support these were all "unsupported keyword"; the ones that remain refused
  // say why.
  CHECK(first_error(R"({"type":"object","properties":{"a":{"$recursiveRef":"#"}}})", lenient()) ==
        "/properties/a/$recursiveRef: '$recursiveRef' (draft 2019-09) is not supported (use "
        "'$ref')");
  CHECK(first_error(R"({"$defs":{"x":{"$vocabulary":{}}}})", lenient()) ==
        "/$defs/x/$vocabulary: '$vocabulary' is not supported (meta-schemas are not compiled)");
  CHECK(first_error(R"({"definitions":{}})", lenient()) ==
        "/definitions: 'definitions' (draft 7) is not supported (2020-12 spells it '$defs')");
  CHECK(contains(first_error(R"({"dependencies":{}})", lenient()),
                 "/dependencies: 'dependencies' (draft 7) is not supported"));
  CHECK(contains(first_error(R"({"items":{},"additionalItems":false})", lenient()),
                 "/additionalItems: 'additionalItems' (draft 7) is not supported"));
  CHECK(first_error(R"({"type":"object","frobnicate":1})") ==
        "/frobnicate: unsupported keyword 'frobnicate'");
  CHECK(first_error(R"({"type":"object","properties":{"a":{"$ref":"other.json"}}})") ==
        "/properties/a/$ref: '$ref' target \"other.json\" is not in this document (remote "
        "references are not supported)");
  CHECK(compiles(
      R"({"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","title":"t",)"
      R"("description":"d","$comment":"c","examples":[{}],"default":{},"deprecated":false,)"
      R"("properties":{"when":{"type":"string","format":"date-time","readOnly":true,)"
      R"("contentMediaType":"text/plain"}}})"));
  CHECK(compiles(R"({"$schema":"http://json-schema.org/draft-07/schema#","type":"object"})"));
  CHECK(contains(
      first_error(R"({"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object"})"),
      "/$schema: unsupported '$schema'"));
  CHECK(
      first_error(
          R"({"type":"object","properties":{"a":{"$schema":"https://json-schema.org/draft/2020-12/schema",)"
          R"("type":"string"}}})") ==
      "/properties/a/$schema: '$schema' is only allowed at the root");
  // 2020-12 allows $defs anywhere.
  CHECK(compiles(R"({"type":"object","properties":{"a":{"$ref":"#/properties/a/$defs/s",)"
                 R"("$defs":{"s":{"type":"string"}}}}})"));
  CHECK(first_error(R"({"type":"object","properties":{"a":true}})") ==
        "/properties/a: a schema must be a JSON object (boolean schemas are not supported)");
  CHECK(compiles(R"({"properties":{"a":true,"b":false}})", lenient()));
}

TEST_CASE("design.md/registration-validation: every offence is collected, sorted by path then message") {
  const auto errors = errors_of(
      R"({"type":"object","properties":{"z":{"type":"string","maxLength":"x"},"a":{"type":"int"}},)"
      R"("required":["q"],"uniqueItems":true})");
  REQUIRE(errors.size() == 4);
  CHECK(errors[0] == "/properties/a/type: unknown type \"int\"");
  CHECK(errors[1] == "/properties/z/maxLength: 'maxLength' must be a non-negative integer");
  CHECK(errors[2] == "/required/0: required property \"q\" is not declared in 'properties'");
  CHECK(errors[3] == "/uniqueItems: 'uniqueItems' applies to type array, not object");
  // Whole-schema checks (root type, depth) are reported beside the others.
  const auto with_root = errors_of(R"({"type":"string","foo":1})");
  REQUIRE(with_root.size() == 2);
  CHECK(with_root[0] == ": the root schema must have type 'object'");
  CHECK(with_root[1] == "/foo: unsupported keyword 'foo'");
  // Two offences at one path are sorted by message.
  const auto same_path =
      errors_of(R"({"type":"object","properties":{"a":{"type":"string","minimum":"x"}}})");
  REQUIRE(same_path.size() == 2);
  CHECK(same_path[0] ==
        "/properties/a/minimum: 'minimum' applies to type integer or number, not string");
  CHECK(same_path[1] == "/properties/a/minimum: 'minimum' must be a number");
}

TEST_CASE("schema.md: a schema that is not JSON is one compile error at the root") {
  const auto errors = errors_of(R"({"type":"object",})");
  REQUIRE(errors.size() == 1);
  CHECK(contains(errors[0], ": the schema is not valid JSON"));
  CHECK(!schema::compiled_schema::compile(json::value{}).has_value());
}

// ---- $ref
// ----------------------------------------------------------------------------------------

TEST_CASE("schema.md: $ref to local $defs, with JSON-pointer escaping and percent-decoding") {
  const auto s = compile_ok(
      R"({"type":"object","properties":{"a":{"$ref":"#/$defs/a~1b"},"b":{"$ref":"#/$defs/t~0n"},)"
      R"("c":{"$ref":"#/$defs/sp%20ace"},"d":{"$ref":"#/%24defs/pct%25"}},)"
      R"("$defs":{"a/b":{"type":"string"},"t~n":{"type":"integer"},"sp ace":{"type":"boolean"},)"
      R"("pct%":{"type":"number"}}})");
  CHECK(check(s, R"({"a":"x","b":1,"c":true,"d":1.5})") == "valid");
  CHECK(check(s, R"({"a":1})") == "/a|expected string, got number");
  CHECK(check(s, R"({"b":"x"})") == "/b|expected integer, got string");
  CHECK(check(s, R"({"c":1})") == "/c|expected boolean, got number");
  CHECK(check(s, R"({"d":"x"})") == "/d|expected number, got string");
}

TEST_CASE("schema.md/references: $ref resolves JSON pointers, anchors and $id-scoped URIs within the document") {
  const std::string head = R"({"type":"object","properties":{"a":{"$ref":)";
  const std::string tail = R"(},"b":{"type":"integer"}},"$defs":{"x":{"type":"string"}}})";
  // Any pointer into the document, not only "#" and "#/$defs/<name>".
  const auto to_property = compile_ok(head + R"("#/properties/b")" + tail);
  CHECK(check(to_property, R"({"a":1})") == "valid");
  CHECK(check(to_property, R"({"a":"x"})") == "/a|expected integer, got string");
  CHECK(first_error(head + R"("#/$defs/x/properties")" + tail) ==
        "/properties/a/$ref: '$ref' target \"#/$defs/x/properties\" does not exist or is not a "
        "schema");
  CHECK(first_error(head + R"("#anchor")" + tail) ==
        "/properties/a/$ref: '$ref' target \"#anchor\" names no '$anchor'");
  CHECK(first_error(head + R"("#/$defs/%zz")" + tail) ==
        "/properties/a/$ref: '$ref' has an invalid percent-encoding");
  CHECK(first_error(head + R"(7)" + tail) == "/properties/a/$ref: '$ref' must be a string");
  // $anchor, and $id-scoped references.
  const auto anchored = compile_ok(
      R"({"type":"object","properties":{"a":{"$ref":"#name"},"b":{"$ref":"urn:x:item#/$defs/n"},)"
      R"("c":{"$ref":"http://example.com/root/item"}},)"
      R"("$id":"http://example.com/root/main",)"
      R"("$defs":{"s":{"$anchor":"name","type":"string"},)"
      R"("item":{"$id":"item","type":"object","required":["k"],"properties":{"k":{"type":"string"}}},)"
      R"("u":{"$id":"urn:x:item","type":"object","$defs":{"n":{"type":"integer"}}}}})");
  CHECK(check(anchored, R"({"a":"x","b":1,"c":{"k":"v"}})") == "valid");
  CHECK(check(anchored, R"({"a":1})") == "/a|expected string, got number");
  CHECK(check(anchored, R"({"b":"1"})") == "/b|expected integer, got string");
  CHECK(check(anchored, R"({"c":{}})") == "/c/k|required property is missing");
  // 2020-12 applies the keywords beside $ref; a draft-07 document refuses them (draft 7 ignores
  // them, so the two readings differ).
  const auto beside = compile_ok(R"({"type":"object","properties":{"a":{"$ref":"#/$defs/x",)"
                                 R"("maxLength":2}},"$defs":{"x":{"type":"string"}}})");
  CHECK(check(beside, R"({"a":"abc"})") ==
        "/a|the string is longer than maxLength 2 (code points)");
  CHECK(first_error(R"({"$schema":"http://json-schema.org/draft-07/schema#","type":"object",)"
                    R"("properties":{"a":{"$ref":"#/$defs/x","maxLength":2}},)"
                    R"("$defs":{"x":{"type":"string"}}})") ==
        "/properties/a/maxLength: 'maxLength' beside '$ref' is not supported in a draft-07 schema "
        "(draft 7 ignores it, 2020-12 applies it)");
}

TEST_CASE("schema.md/references: $dynamicRef resolves in the dynamic scope of the document") {
  // A generic list whose item schema a caller extends: the outermost resource declaring the
  // $dynamicAnchor wins.
  const auto s = compile_ok(
      R"({"$id":"https://example.com/strings","$ref":"list",)"
      R"("$defs":{"item":{"$dynamicAnchor":"item","type":"string"},)"
      R"("list":{"$id":"list","type":"array","items":{"$dynamicRef":"#item"},)"
      R"("$defs":{"any":{"$dynamicAnchor":"item"}}}}})",
      lenient());
  CHECK(check(s, R"(["a","b"])") == "valid");
  CHECK(check(s, R"(["a",1])") == "/1|expected string, got number");
  // Entered on its own, the list uses its own anchor: anything goes.
  const auto own = compile_ok(
      R"({"$id":"https://example.com/list","type":"array","items":{"$dynamicRef":"#item"},)"
      R"("$defs":{"any":{"$dynamicAnchor":"item"}}})",
      lenient());
  CHECK(check(own, R"(["a",1])") == "valid");
  // A loop only the dynamic scope closes (no compile-time walk sees it) stops at the
  // evaluation-depth cap instead of exhausting the stack.
  const auto loop = compile_ok(
      R"({"$id":"https://example.com/a","$dynamicAnchor":"a","allOf":[{"$ref":"b"}],)"
      R"("$defs":{"b":{"$id":"b","$dynamicRef":"#a","$defs":{"own":{"$dynamicAnchor":"a"}}}}})",
      lenient());
  CHECK(check(loop, "1") == "|the schema's evaluation nests deeper than 512 levels for this value");
}

TEST_CASE("schema.md: a $ref cycle that never reaches content is a compile error, not a hang") {
  const std::string loop =
      "'$ref' leads back to this schema without descending into the instance (it would never end)";
  CHECK(first_error(R"({"$ref":"#"})") == "/$ref: " + loop);
  const auto errors = errors_of(
      R"({"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}}})");
  REQUIRE(errors.size() == 1);  // the edge that closes the cycle
  CHECK(errors[0] == "/$defs/b/$ref: " + loop);
  // Every in-place applicator counts: anyOf, allOf, not, if, ...
  CHECK(first_error(R"({"anyOf":[{"$ref":"#"}]})", lenient()) == "/anyOf/0/$ref: " + loop);
  CHECK(first_error(R"({"anyOf":[{"type":"string"},{"anyOf":[{"$ref":"#/anyOf/1"}]}]})",
                    lenient()) == "/anyOf/1/anyOf/0/$ref: " + loop);
  for (std::string_view k : {R"({"allOf":[{"$ref":"#"}]})", R"({"not":{"$ref":"#"}})",
                             R"({"if":{"$ref":"#"}})", R"({"dependentSchemas":{"a":{"$ref":"#"}}})"}) {
    CAPTURE(k);
    CHECK(contains(first_error(k, lenient()), "leads back to this schema"));
  }
  CHECK(
      first_error(
          R"({"$ref":"#/$defs/a","$defs":{"a":{"oneOf":[{"$ref":"#/$defs/b"}]},"b":{"anyOf":[{"$ref":"#"}]}}})",
          lenient())
          .ends_with("leads back to this schema without descending into the instance (it would "
                     "never end)"));
}

TEST_CASE(
    "design.md/the-toolscall-pipeline: recursion through properties is allowed and bounded by the depth cap at validation") {
  const auto s =
      compile_ok(R"({"type":"object","properties":{"name":{"type":"string"},"child":{"$ref":"#"}},)"
                 R"("additionalProperties":false})");
  CHECK(check(s, R"({"name":"a","child":{"name":"b","child":{}}})") == "valid");
  CHECK(check(s, R"({"child":{"child":{"name":1}}})") ==
        "/child/child/name|expected string, got number");
  CHECK(check(s, R"({"child":{"extra":1}})") ==
        "/child/*|property is not declared by the schema (additionalProperties is false)");
  std::string deep, close;
  for (int i = 0; i < 8; ++i) {
    deep += R"({"child":)";
    close += "}";
  }
  CHECK(check(s, deep + "{}" + close) == "valid");  // 8 levels below the root
  CHECK(check(s, deep + R"({"child":{}})" + close) ==
        "/child/child/child/child/child/child/child/child/child|the value nests deeper than the "
        "schema's depth cap of 8");
  // Lenient mode follows the instance, whatever its depth.
  const auto l = compile_ok(R"({"properties":{"child":{"$ref":"#"}}})", lenient());
  std::string very_deep, very_close;
  for (int i = 0; i < 100; ++i) {
    very_deep += R"({"child":)";
    very_close += "}";
  }
  CHECK(check(l, very_deep + "1" + very_close) == "valid");
}

// ---- validation (docs/schema.md#validation-order)
// -------------------------------------------------------------------

TEST_CASE("schema.md/validation-order: type is checked first") {
  const auto s = compile_ok(closed_ab);
  CHECK(check(s, "[]") == "|expected object, got array");
  CHECK(check(s, R"("x")") == "|expected object, got string");
  CHECK(check(s, "null") == "|expected object, got null");
  CHECK(check(s, R"({"a":true})") == "/a|expected string, got boolean");
  // A value both of the wrong type and missing a required property reports the type.
  const auto nested = compile_ok(R"({"type":"object","properties":{"o":{"type":"object",)"
                                 R"("properties":{"x":{"type":"string"}},"required":["x"]}}})");
  CHECK(check(nested, R"({"o":[]})") == "/o|expected object, got array");
  CHECK(check(nested, R"({"o":{}})") == "/o/x|required property is missing");
}

TEST_CASE("schema.md/validation-order: integer is an integer literal within signed 64 bits") {
  const auto s = compile_ok(R"({"type":"object","properties":{"n":{"type":"integer"}}})");
  CHECK(check(s, R"({"n":1})") == "valid");
  CHECK(check(s, R"({"n":-9223372036854775808})") == "valid");
  CHECK(check(s, R"({"n":9223372036854775807})") == "valid");
  CHECK(check(s, R"({"n":1.0})") ==
        "/n|expected an integer, got a number with a fraction part or exponent");
  CHECK(check(s, R"({"n":1e2})") ==
        "/n|expected an integer, got a number with a fraction part or exponent");
  CHECK(check(s, R"({"n":1.5})") ==
        "/n|expected an integer, got a number with a fraction part or exponent");
  CHECK(check(s, R"({"n":9223372036854775808})") == "/n|integer out of range (signed 64-bit)");
  CHECK(check(s, R"({"n":18446744073709551615})") == "/n|integer out of range (signed 64-bit)");
  CHECK(check(s, R"({"n":"1"})") == "/n|expected integer, got string");
  const auto number = compile_ok(R"({"type":"object","properties":{"n":{"type":"number"}}})");
  CHECK(check(number, R"({"n":1.0})") == "valid");
  CHECK(check(number, R"({"n":18446744073709551615})") == "valid");
  CHECK(check(number, R"({"n":-1e300})") == "valid");
}

TEST_CASE(
    "schema.md/validation-order: const and enum use JSON equality (numbers by value, objects unordered)") {
  const auto s = compile_ok(R"({"type":"object","properties":{)"
                            R"("c":{"type":"number","const":1},)"
                            R"("e":{"type":"string","enum":["red","green"]},)"
                            R"("o":{"type":"object","const":{"a":1,"b":[1,2]}},)"
                            R"("l":{"type":"array","const":[1,2]}}})");
  CHECK(check(s, R"({"c":1.0})") == "valid");
  CHECK(check(s, R"({"c":1e0})") == "valid");
  CHECK(check(s, R"({"c":2})") == "/c|the value must equal 1");
  CHECK(check(s, R"({"e":"green"})") == "valid");
  CHECK(check(s, R"({"e":"blue"})") == R"(/e|the value is not one of ["red","green"])");
  CHECK(check(s, R"({"o":{"b":[1,2],"a":1.0}})") == "valid");
  CHECK(check(s, R"({"o":{"b":[2,1],"a":1}})") == R"(/o|the value must equal {"a":1,"b":[1,2]})");
  CHECK(check(s, R"({"o":{"a":1}})") == R"(/o|the value must equal {"a":1,"b":[1,2]})");
  CHECK(check(s, R"({"l":[1,2]})") == "valid");
  CHECK(check(s, R"({"l":[2,1]})") == "/l|the value must equal [1,2]");
  // Long constants are not quoted.
  const std::string big(200, 'x');
  const auto quiet = compile_ok(R"({"type":"object","properties":{"k":{"type":"string","const":")" +
                                big + R"("}}})");
  CHECK(check(quiet, R"({"k":"y"})") == "/k|the value does not equal the schema's const");
  // const comes before enum.
  const auto both = compile_ok(
      R"({"type":"object","properties":{"k":{"type":"string","const":"a","enum":["b"]}}})");
  CHECK(check(both, R"({"k":"c"})") == "/k|the value must equal \"a\"");
}

TEST_CASE("schema.md/validation-order: string lengths count Unicode code points") {
  const auto s = compile_ok(
      R"({"type":"object","properties":{"s":{"type":"string","minLength":2,"maxLength":3}}})");
  CHECK(check(s, R"({"s":"ab"})") == "valid");
  CHECK(check(s, R"({"s":"héé"})") == "valid");                       // 3 code points, 5 bytes
  CHECK(check(s, R"({"s":"\ud83d\udca9\ud83d\udca9"})") == "valid");  // 2 code points, 8 bytes
  CHECK(check(s, R"({"s":"\ud83d\udca9"})") ==
        "/s|the string is shorter than minLength 2 (code points)");
  CHECK(check(s, R"({"s":"a"})") == "/s|the string is shorter than minLength 2 (code points)");
  CHECK(check(s, R"({"s":"abcd"})") == "/s|the string is longer than maxLength 3 (code points)");
  CHECK(check(s, R"({"s":"éééé"})") == "/s|the string is longer than maxLength 3 (code points)");
}

TEST_CASE("schema.md/validation-order: pattern is an unanchored search, after the lengths") {
  const auto s = compile_ok(R"({"type":"object","properties":{)"
                            R"("u":{"type":"string","pattern":"a+"},)"
                            R"("anch":{"type":"string","pattern":"^abc$"},)"
                            R"("alt":{"type":"string","pattern":"^a|b$"},)"
                            R"("len":{"type":"string","minLength":2,"pattern":"^x"},)"
                            R"("esc":{"type":"string","pattern":"a\\$"},)"
                            R"("grp":{"type":"string","pattern":"^(?:x|y)$"},)"
                            R"("tail":{"type":"string","pattern":"b$"}}})");
  CHECK(check(s, R"({"u":"xxaayy"})") == "valid");
  CHECK(check(s, R"({"u":"xyz"})") == "/u|the string does not match the pattern \"a+\"");
  CHECK(check(s, R"({"anch":"abc"})") == "valid");
  CHECK(check(s, R"({"anch":"xabc"})") == "/anch|the string does not match the pattern \"^abc$\"");
  CHECK(check(s, R"({"anch":"abc\nx"})") ==
        "/anch|the string does not match the pattern \"^abc$\"");
  CHECK(check(s, R"({"alt":"ac"})") == "valid");
  CHECK(check(s, R"({"alt":"cb"})") == "valid");
  CHECK(check(s, R"({"alt":"ca"})") == "/alt|the string does not match the pattern \"^a|b$\"");
  CHECK(check(s, R"({"len":"y"})") == "/len|the string is shorter than minLength 2 (code points)");
  CHECK(check(s, R"({"len":"yy"})") == "/len|the string does not match the pattern \"^x\"");
  CHECK(check(s, R"({"esc":"xa$y"})") == "valid");  // an escaped '$' is no anchor
  CHECK(check(s, R"({"esc":"xa"})") == "/esc|the string does not match the pattern \"a\\\\$\"");
  CHECK(check(s, R"({"grp":"y"})") == "valid");
  CHECK(check(s, R"({"grp":"xy"})") == "/grp|the string does not match the pattern \"^(?:x|y)$\"");
  CHECK(check(s, R"({"tail":"aab"})") == "valid");
  CHECK(check(s, R"({"tail":"ba"})") == "/tail|the string does not match the pattern \"b$\"");
}

TEST_CASE("schema.md/patterns: ECMA-262 forms RE2 spells differently are translated") {
  struct row {
    std::string_view pattern, subject;
    bool matches;
  };
  const row rows[] = {
      // ECMA-262's \s is Unicode white space and line terminators; RE2's is ASCII without \v.
      {R"(^\s$)", "\u00a0", true},
      {R"(^\s$)", "\v", true},
      {R"(^\s$)", "\u2028", true},
      {R"(^\s$)", "\ufeff", true},
      {R"(^\S$)", "\u00a0", false},
      {R"(^\S$)", "x", true},
      {R"(^[\s]$)", "\u3000", true},
      // `.` is any code point but a line terminator.
      {"^.$", "\r", false},
      {"^.$", "\n", false},
      {"^.$", "\u2029", false},
      {"^.$", "\u00e9", true},
      // \d and \w are ASCII in both dialects.
      {R"(^\d$)", "\u0663", false},
      {R"(^\w$)", "\u00e9", false},
      {R"(^\w+$)", "a_1", true},
      // \uXXXX, surrogate pairs, \u{...}, \cX, \0, [\b]
      {R"(^\u00e9$)", "\u00e9", true},
      {R"(^\ud83d\udca9$)", "\U0001F4A9", true},
      {R"(^\u{1F4A9}$)", "\U0001F4A9", true},
      {R"(^\cJ$)", "\n", true},
      {R"(^[\b]$)", "\b", true},
      // [] matches nothing, [^] any code point (a newline too).
      {"[]", "a", false},
      {"^[^]$", "\n", true},
      // A literal [ inside a class.
      {"^[[a]+$", "[a[", true},
      // Named groups and Unicode properties in ECMA-262's spelling.
      {R"(^(?<year>\d{4})$)", "2024", true},
      {R"(^\p{Letter}+$)", "h\u00e9\u00e9", true},
      {R"(^\p{L}$)", "1", false},
      {R"(^\p{Script=Greek}$)", "\u03b1", true},
      {R"(^\p{sc=Greek}$)", "a", false},
      {R"(^\p{General_Category=Decimal_Number}$)", "\u0663", true},
      {R"(^\P{Lu}$)", "a", true},
  };
  for (const row& r : rows) {
    CAPTURE(r.pattern);
    CAPTURE(r.subject);
    std::string schema_text;
    json::writer{schema_text}.begin_object().member("pattern", r.pattern).end_object();
    const auto s = compile_ok(schema_text, lenient());
    std::string instance;
    json::append_escaped(instance, r.subject);
    CHECK((check(s, instance) == "valid") == r.matches);
  }
}

TEST_CASE("schema.md/patterns: a pattern matches code points, not bytes") {
  // The byte matcher this replaced saw "héé" as five bytes and refused it.
  const auto s = compile_ok(R"({"type":"object","properties":{)"
                            R"("three":{"type":"string","pattern":"^.{3}$"},)"
                            R"("cls":{"type":"string","pattern":"^[éè]+$"},)"
                            R"("emoji":{"type":"string","pattern":"^.$"}},)"
                            R"("patternProperties":{"^é.$":{"type":"integer"}}})");
  CHECK(check(s, R"({"three":"héé"})") == "valid");
  CHECK(check(s, R"({"three":"hé"})") ==
        "/three|the string does not match the pattern \"^.{3}$\"");
  CHECK(check(s, R"({"cls":"éèé"})") == "valid");
  CHECK(check(s, R"({"cls":"e"})") == "/cls|the string does not match the pattern \"^[éè]+$\"");
  CHECK(check(s, R"({"emoji":"💩"})") == "valid");
  CHECK(check(s, R"({"éa":1,"éé":2})") == "valid");
  CHECK(check(s, R"({"éa":"x"})") == "/*|expected integer, got string");
}

TEST_CASE("schema.md/patterns: a 1 MiB string is matched without a subject cap, in linear time") {
  // The matcher this replaced refused any string above 8 KiB ("string too long to match
  // pattern"); RE2 has no cap and no backtracking: the nested quantifiers below finish at once.
  const auto s = compile_ok(R"({"type":"object","properties":{)"
                            R"("a":{"type":"string","pattern":"^a+$"},)"
                            R"("nested":{"type":"string","pattern":"^(a+)+$"},)"
                            R"("miss":{"type":"string","pattern":"(a|aa)*b"}}})");
  const std::string big(std::size_t{1} << 20, 'a');
  CHECK(check(s, R"({"a":")" + big + R"("})") == "valid");
  CHECK(check(s, R"({"nested":")" + big + R"(!"})") ==
        "/nested|the string does not match the pattern \"^(a+)+$\"");
  CHECK(check(s, R"({"miss":")" + big + R"("})") ==
        "/miss|the string does not match the pattern \"(a|aa)*b\"");
  CHECK(check(s, R"({"miss":")" + big + R"(b"})") == "valid");
}

TEST_CASE("schema.md/validation-order: numeric bounds compare exactly") {
  const auto s = compile_ok(
      R"({"type":"object","properties":{)"
      R"("i":{"type":"integer","minimum":9007199254740993,"maximum":9223372036854775807},)"
      R"("f":{"type":"number","minimum":0.5,"maximum":1e1},)"
      R"("x":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1}}})");
  // 2^53 + 1 is not a double: a double comparison would call 2^53 equal to it.
  CHECK(check(s, R"({"i":9007199254740993})") == "valid");
  CHECK(check(s, R"({"i":9007199254740992})") ==
        "/i|the value is less than minimum 9007199254740993");
  CHECK(check(s, R"({"f":0})") == "/f|the value is less than minimum 0.5");
  CHECK(check(s, R"({"f":0.5})") == "valid");
  CHECK(check(s, R"({"f":10})") == "valid");
  CHECK(check(s, R"({"f":10.000001})") == "/f|the value is greater than maximum 1e1");
  CHECK(check(s, R"({"f":18446744073709551615})") == "/f|the value is greater than maximum 1e1");
  CHECK(check(s, R"({"x":0})") == "/x|the value must be greater than exclusiveMinimum 0");
  CHECK(check(s, R"({"x":-0.0})") == "/x|the value must be greater than exclusiveMinimum 0");
  CHECK(check(s, R"({"x":1e-300})") == "valid");
  CHECK(check(s, R"({"x":1})") == "/x|the value must be less than exclusiveMaximum 1");
  CHECK(check(s, R"({"x":0.9999999})") == "valid");
  const auto mixed = compile_ok(R"({"minimum":-1.5,"maximum":18446744073709551615})", lenient());
  CHECK(check(mixed, "-1") == "valid");
  CHECK(check(mixed, "-2") == "|the value is less than minimum -1.5");
  CHECK(check(mixed, "18446744073709551615") == "valid");
  // The double 2^64 exceeds 2^64 - 1, which a double comparison would round up to 2^64.
  CHECK(check(mixed, "1.8446744073709552e19") ==
        "|the value is greater than maximum 18446744073709551615");
  CHECK(check(mixed, "1.8446744073709550e19") == "valid");  // 2^64 - 2048
}

TEST_CASE(
    "schema.md/validation-order: object checks run required, then declared properties in order, then extra "
    "keys") {
  const auto s =
      compile_ok(R"({"type":"object","properties":{"b":{"type":"string"},"a":{"type":"string"}},)"
                 R"("required":["a","b"],"additionalProperties":false})");
  // required, in declared order
  CHECK(check(s, R"({"x":1})") == "/a|required property is missing");
  CHECK(check(s, R"({"a":"1","x":1})") == "/b|required property is missing");
  // then declared properties in declared order (b before a), before extra keys
  CHECK(check(s, R"({"x":1,"a":1,"b":1})") == "/b|expected string, got number");
  CHECK(check(s, R"({"x":1,"a":1,"b":"1"})") == "/a|expected string, got number");
  CHECK(check(s, R"({"x":1,"a":"1","b":"1"})") ==
        "/*|property is not declared by the schema (additionalProperties is false)");
}

TEST_CASE("schema.md/validation-order: caller-supplied names are reported as * and never echoed") {
  const auto s =
      compile_ok(R"({"type":"object","properties":{"known":{"type":"string"}},)"
                 R"("additionalProperties":{"type":"object","properties":{"v":{"type":"integer"}},)"
                 R"("additionalProperties":false}})");
  CHECK(check(s, R"({"known":"k","secret-name":{"v":1}})") == "valid");
  const std::string r1 = check(s, R"({"secret-name":{"v":"secret-value"}})");
  CHECK(r1 == "/*/v|expected integer, got string");
  const std::string r2 = check(s, R"({"secret-name":{"secret-inner":1}})");
  CHECK(r2 == "/*/*|property is not declared by the schema (additionalProperties is false)");
  const std::string r3 = check(s, R"({"secret-name":"secret-value"})");
  CHECK(r3 == "/*|expected object, got string");
  for (const std::string& r : {r1, r2, r3}) CHECK(!contains(r, "secret"));
  // Values are not echoed either: enum/const/pattern reasons quote the schema, not the instance.
  const auto e = compile_ok(R"({"type":"object","properties":{"k":{"type":"string","enum":["a"]},)"
                            R"("p":{"type":"string","pattern":"^x"}}})");
  CHECK(!contains(check(e, R"({"k":"secret"})"), "secret"));
  CHECK(!contains(check(e, R"({"p":"secret"})"), "secret"));
}

TEST_CASE("schema.md/validation-order: declared names are escaped in violation paths") {
  const auto s = compile_ok(
      R"({"type":"object","properties":{"a/b":{"type":"string"},"t~n":{"type":"string"},)"
      R"("":{"type":"string"}},"required":["x/y"],"additionalProperties":{"type":"string"}})",
      lenient());
  CHECK(check(s, R"({"x/y":"","a/b":1})") == "/a~1b|expected string, got number");
  CHECK(check(s, R"({"x/y":"","t~n":1})") == "/t~0n|expected string, got number");
  CHECK(check(s, R"({"x/y":"","":1})") == "/|expected string, got number");
  CHECK(check(s, R"({})") == "/x~1y|required property is missing");
}

TEST_CASE("schema.md/validation-order: arrays check minItems, maxItems, then items by index") {
  const auto s =
      compile_ok(R"({"type":"object","properties":{"l":{"type":"array","minItems":1,"maxItems":3,)"
                 R"("items":{"type":"object","properties":{"n":{"type":"integer"}}}}}})");
  CHECK(check(s, R"({"l":[{"n":1},{}]})") == "valid");
  CHECK(check(s, R"({"l":[]})") == "/l|the array has fewer than minItems 1 items");
  CHECK(check(s, R"({"l":[1,2,3,4]})") == "/l|the array has more than maxItems 3 items");
  CHECK(check(s, R"({"l":[{"n":1},{"n":1.5}]})") ==
        "/l/1/n|expected an integer, got a number with a fraction part or exponent");
  CHECK(check(s, R"({"l":[{}, 7]})") == "/l/1|expected object, got number");
}

TEST_CASE("schema.md/validation-order: anyOf then oneOf of required-only alternatives") {
  const auto s = compile_ok(
      R"({"type":"object","properties":{"id":{"type":"string"},"name":{"type":"string"},)"
      R"("x":{"type":"string"},"y":{"type":"string"}},)"
      R"("anyOf":[{"required":["id"]},{"required":["name"]}],)"
      R"("oneOf":[{"required":["x"]},{"required":["y"]}]})");
  CHECK(check(s, R"({"id":"1","x":"1"})") == "valid");
  CHECK(check(s, R"({"name":"n","y":"1"})") == "valid");
  CHECK(check(s, R"({"x":"1"})") ==
        R"(|none of the anyOf alternatives is satisfied (required: ["id"] or ["name"]))");
  CHECK(check(s, R"({"id":"1"})") ==
        R"(|none of the oneOf alternatives is satisfied (required: ["x"] or ["y"]))");
  CHECK(
      check(s, R"({"id":"1","x":"1","y":"2"})") ==
      R"(|more than one oneOf alternative is satisfied; exactly one must be (required: ["x"] or ["y"]))");
  // Declared properties are checked before the alternatives.
  CHECK(check(s, R"({"x":1})") == "/x|expected string, got number");
}

TEST_CASE(
    "schema.md: lenient mode applies keywords only to their own types and accepts boolean schemas") {
  const auto s =
      compile_ok(R"({"maxLength":2,"minimum":3,"required":["a"],"items":false})", lenient());
  CHECK(check(s, "100") == "valid");
  CHECK(check(s, R"("ab")") == "valid");
  CHECK(check(s, R"("abc")") == "|the string is longer than maxLength 2 (code points)");
  CHECK(check(s, "2") == "|the value is less than minimum 3");
  CHECK(check(s, "{}") == "/a|required property is missing");
  CHECK(check(s, "[]") == "valid");
  CHECK(check(s, "[1]") == "/0|no value is allowed here (the schema is false)");
  const auto f = compile_ok("false", lenient());
  CHECK(check(f, "null") == "|no value is allowed here (the schema is false)");
  const auto t = compile_ok(R"({"type":["integer","null"]})", lenient());
  CHECK(check(t, "null") == "valid");
  CHECK(check(t, R"("x")") == "|expected one of integer, null, got string");
}

// ---- 2020-12 keyword families (docs/schema.md#keywords); each was "unsupported keyword" before
// ----------------------------------------------------------------------------------------

TEST_CASE("schema.md/keywords: multipleOf divides integers exactly and decimals within 1e-9") {
  const auto s = compile_ok(R"({"type":"object","properties":{"i":{"type":"integer","multipleOf":3},)"
                            R"("d":{"type":"number","multipleOf":0.01},)"
                            R"("b":{"type":"integer","multipleOf":4611686018427387904}}})");
  CHECK(check(s, R"({"i":-9,"d":19.99,"b":-9223372036854775808})") == "valid");
  CHECK(check(s, R"({"i":10})") == "/i|the value is not a multiple of 3");
  CHECK(check(s, R"({"d":0.005})") == "/d|the value is not a multiple of 0.01");
  CHECK(check(s, R"({"b":4611686018427387905})") ==
        "/b|the value is not a multiple of 4611686018427387904");
  CHECK(first_error(R"({"multipleOf":0})", lenient()) ==
        "/multipleOf: 'multipleOf' must be greater than 0");
  CHECK(first_error(R"({"type":"object","properties":{"a":{"type":"string","multipleOf":2}}})") ==
        "/properties/a/multipleOf: 'multipleOf' applies to type integer or number, not string");
}

TEST_CASE("schema.md/keywords: allOf, not and if/then/else apply subschemas to the same value") {
  const auto s = compile_ok(
      R"({"type":"object","properties":{"kind":{"type":"string"},"size":{"type":"integer"},)"
      R"("name":{"type":"string","allOf":[{"minLength":2},{"maxLength":4}],"not":{"const":"root"}}},)"
      R"("if":{"properties":{"kind":{"const":"big"}},"required":["kind"]},)"
      R"("then":{"required":["size"]},"else":{"not":{"required":["size"]}}})");
  CHECK(check(s, R"({"kind":"big","size":3,"name":"abc"})") == "valid");
  CHECK(check(s, R"({"kind":"small"})") == "valid");
  CHECK(check(s, R"({"name":"a"})") == "/name|the string is shorter than minLength 2 (code points)");
  CHECK(check(s, R"({"name":"abcde"})") == "/name|the string is longer than maxLength 4 (code points)");
  CHECK(check(s, R"({"name":"root"})") == "/name|the value must not match the 'not' schema");
  CHECK(check(s, R"({"kind":"big"})") == "/size|required property is missing");
  CHECK(check(s, R"({"kind":"small","size":1})") == "|the value must not match the 'not' schema");
  // Strict mode: the subschemas constrain the enclosing value, so `type` is optional there and
  // keyword/type coupling uses the enclosing type; `then`/`else` need an `if`.
  CHECK(first_error(R"({"type":"object","properties":{"a":{"type":"string","allOf":[{"minimum":1}]}}})") ==
        "/properties/a/allOf/0/minimum: 'minimum' applies to type integer or number, not string");
  CHECK(first_error(R"({"type":"object","then":{"required":[]}})") ==
        "/then: 'then' without 'if' has no effect");
  CHECK(first_error(R"({"type":"object","properties":{"a":{"type":"string"}},"allOf":[{"required":["b"]}]})") ==
        "/allOf/0/required/0: required property \"b\" is not declared in 'properties'");
}

TEST_CASE("schema.md/keywords: patternProperties, propertyNames, min/maxProperties, dependentRequired, dependentSchemas") {
  const auto s = compile_ok(
      R"({"type":"object","properties":{"id":{"type":"string"}},)"
      R"("patternProperties":{"^x-":{"type":"integer"}},"additionalProperties":false,)"
      R"("propertyNames":{"maxLength":8},"minProperties":1,"maxProperties":3,)"
      R"("dependentRequired":{"x-a":["id"]},)"
      R"("dependentSchemas":{"x-b":{"properties":{"id":{"minLength":2}}}}})");
  CHECK(check(s, R"({"id":"a","x-1":1})") == "valid");
  CHECK(check(s, R"({})") == "|the object has fewer than minProperties 1 members");
  CHECK(check(s, R"({"id":"a","x-1":1,"x-2":2,"x-3":3})") ==
        "|the object has more than maxProperties 3 members");
  CHECK(check(s, R"({"x-1":"one"})") == "/*|expected integer, got string");
  CHECK(check(s, R"({"other":1})") ==
        "/*|property is not declared by the schema (additionalProperties is false)");
  CHECK(check(s, R"({"x-longername":1})") ==
        "/*|property name: the string is longer than maxLength 8 (code points)");
  CHECK(check(s, R"({"x-a":1})") ==
        "/id|required property is missing (dependentRequired: \"x-a\" is present)");
  CHECK(check(s, R"({"x-b":1,"id":"a"})") == "/id|the string is shorter than minLength 2 (code points)");
  CHECK(check(s, R"({"x-b":1,"id":"ab"})") == "valid");
  CHECK(first_error(R"({"type":"object","minProperties":3,"maxProperties":2})") ==
        "/minProperties: 'minProperties' is greater than 'maxProperties'");
  CHECK(first_error(R"({"type":"object","properties":{"a":{"type":"array","propertyNames":{}}}})") ==
        "/properties/a/propertyNames: 'propertyNames' applies to type object, not array");
}

TEST_CASE("schema.md/keywords: prefixItems, items, contains with min/maxContains, uniqueItems") {
  const auto s = compile_ok(
      R"({"type":"object","properties":{)"
      R"("t":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false},)"
      R"("c":{"type":"array","items":{"type":"integer"},"contains":{"type":"integer","minimum":10},)"
      R"("minContains":2,"maxContains":3},)"
      R"("u":{"type":"array","uniqueItems":true}}})");
  CHECK(check(s, R"({"t":["a",1],"c":[10,11,1],"u":[1,"1",[1],{"a":1,"b":2}]})") == "valid");
  CHECK(check(s, R"({"t":["a","b"]})") == "/t/1|expected integer, got string");
  CHECK(check(s, R"({"t":["a",1,2]})") ==
        "/t/2|the array has more than the 2 items prefixItems declares (items is false)");
  CHECK(check(s, R"({"c":[10,1]})") == "/c|fewer than minContains 2 items match 'contains'");
  CHECK(check(s, R"({"c":[10,11,12,13]})") == "/c|more than maxContains 3 items match 'contains'");
  // JSON equality: 1 and 1.0 are equal, member order does not matter.
  CHECK(check(s, R"({"u":[1,2,1.0]})") ==
        "/u|the array's items are not unique (items 0 and 2 are equal)");
  CHECK(check(s, R"({"u":[{"a":1,"b":2},{"b":2,"a":1}]})") ==
        "/u|the array's items are not unique (items 0 and 1 are equal)");
  const auto plain = compile_ok(R"({"contains":{"const":1}})", lenient());
  CHECK(check(plain, "[2,3]") == "|no item matches 'contains'");
  CHECK(check(plain, "[2,1]") == "valid");
  CHECK(check(plain, R"("not an array")") == "valid");
  // uniqueItems sorts by hash: 100,000 distinct items are cheap, a late duplicate is found.
  std::string many = "[";
  for (int i = 0; i < 100000; ++i) many += std::to_string(i) + ",";
  const auto u = compile_ok(R"({"uniqueItems":true})", lenient());
  CHECK(check(u, many + "100000]") == "valid");
  CHECK(check(u, many + "77]") ==
        "|the array's items are not unique (items 77 and 100000 are equal)");
}

TEST_CASE("schema.md/annotations: unevaluatedProperties and unevaluatedItems see what subschemas evaluated") {
  const auto s = compile_ok(
      R"({"type":"object","properties":{"kind":{"type":"string"}},)"
      R"("allOf":[{"properties":{"a":{"type":"string"}}}],)"
      R"("anyOf":[{"properties":{"b":{"type":"string"}},"required":["b"]},)"
      R"({"properties":{"c":{"type":"string"}},"required":["c"]}],)"
      R"("if":{"properties":{"kind":{"const":"x"}}},"then":{"properties":{"x":{"type":"integer"}}},)"
      R"("$ref":"#/$defs/r","$defs":{"r":{"patternProperties":{"^r-":{}}}},)"
      R"("unevaluatedProperties":false})",
      lenient());
  CHECK(check(s, R"({"kind":"x","a":"1","b":"1","c":"1","x":1,"r-1":0})") == "valid");
  CHECK(check(s, R"({"b":"1","z":1})") ==
        "/*|property is not evaluated by the schema (unevaluatedProperties is false)");
  // A failed anyOf alternative evaluates nothing: "c" is not evaluated when "c" fails.
  CHECK(check(s, R"({"b":"1","c":2})") ==
        "/*|property is not evaluated by the schema (unevaluatedProperties is false)");
  // `then` evaluates "x" only when `if` holds.
  CHECK(check(s, R"({"kind":"y","b":"1","x":1})") ==
        "/*|property is not evaluated by the schema (unevaluatedProperties is false)");
  const auto items = compile_ok(
      R"({"prefixItems":[{"type":"string"}],"allOf":[{"contains":{"type":"integer"}}],)"
      R"("unevaluatedItems":{"type":"boolean"}})",
      lenient());
  CHECK(check(items, R"(["a",1,true,2])") == "valid");
  CHECK(check(items, R"(["a",1,"b"])") == "/2|expected boolean, got string");
  // Strict: `unevaluatedProperties: false` closes the root like additionalProperties: false.
  const auto closed = compile_ok(
      R"({"type":"object","properties":{"approval_id":{"type":"string"}},"unevaluatedProperties":false})");
  CHECK(closed.root_is_closed());
  CHECK(check(closed, R"({"approval_id":"t","x":1})") ==
        "/*|property is not evaluated by the schema (unevaluatedProperties is false)");
}

TEST_CASE("schema.md/caps: schema nodes and evaluation depth are bounded by options") {
  schema::compile_options few = lenient();
  few.max_schema_nodes = 3;
  CHECK(compiles(R"({"properties":{"a":{},"b":{}}})", few));
  CHECK(first_error(R"({"properties":{"a":{},"b":{},"c":{}}})", few) ==
        ": the schema has more than 3 schema nodes (compile_options::max_schema_nodes)");
  schema::compile_options shallow = lenient();
  shallow.max_evaluation_depth = 50;
  const auto s = compile_ok(R"({"items":{"$ref":"#"}})", shallow);
  std::string deep(20, '['), close(20, ']');  // two evaluations a level: items, then $ref
  CHECK(check(s, deep + close) == "valid");
  deep.assign(60, '[');
  close.assign(60, ']');
  CHECK(check(s, deep + close) == "|the schema's evaluation nests deeper than 50 levels for this value");
}

TEST_CASE("design.md/the-toolscall-pipeline: alternatives that would cost exponential time stop at a work budget") {
  // Each level tries its two alternatives on the same value: 2^30 evaluations without a budget.
  std::string defs;
  constexpr int levels = 30;
  for (int i = 0; i < levels; ++i) {
    if (i > 0) defs += ",";
    const std::string next = i + 1 < levels
                                 ? R"({"$ref":"#/$defs/d)" + std::to_string(i + 1) + R"("})"
                                 : R"({"type":"string"})";
    defs += R"("d)" + std::to_string(i) + R"(":{"anyOf":[)" + next + "," + next + "]}";
  }
  const auto s = compile_ok(R"({"$ref":"#/$defs/d0","$defs":{)" + defs + "}}", lenient());
  CHECK(check(s, R"("ok")") == "valid");  // the first alternative succeeds at every level
  CHECK(check(s, "1") ==
        "|validation work budget exhausted (more than 4194304 schema evaluations for this value)");
  // The budget is an option.
  schema::compile_options small = lenient();
  small.max_validation_steps = 100;
  const auto b = compile_ok(R"({"$ref":"#/$defs/d0","$defs":{)" + defs + "}}", small);
  CHECK(check(b, R"("ok")") == "valid");
  CHECK(check(b, "1") ==
        "|validation work budget exhausted (more than 100 schema evaluations for this value)");
}

TEST_CASE("design.md/registration-validation: root_is_closed and root_declares (after $ref resolution)") {
  const auto closed = compile_ok(
      R"({"type":"object","properties":{"approval_id":{"type":"string"},"x":{"type":"string"}},)"
      R"("additionalProperties":false})");
  CHECK(closed.root_is_closed());
  CHECK(closed.root_declares("approval_id"));
  CHECK(closed.root_declares("x"));
  CHECK(!closed.root_declares("y"));
  CHECK(!closed.root_declares(""));
  const auto open = compile_ok(R"({"type":"object","properties":{"x":{"type":"string"}}})");
  CHECK(!open.root_is_closed());
  const auto schema_extra =
      compile_ok(R"({"type":"object","additionalProperties":{"type":"string"}})");
  CHECK(!schema_extra.root_is_closed());
  const auto via_ref = compile_ok(
      R"({"$ref":"#/$defs/args","$defs":{"args":{"type":"object",)"
      R"("properties":{"approval_id":{"type":"string"}},"additionalProperties":false}}})");
  CHECK(via_ref.root_is_closed());
  CHECK(via_ref.root_declares("approval_id"));
}

TEST_CASE("schema.md: an empty compiled_schema checks nothing, moves transfer the schema") {
  const schema::compiled_schema empty;
  CHECK(check(empty, "[1,2]") == "valid");
  CHECK(!empty.root_is_closed());
  CHECK(!empty.root_declares("x"));
  auto a = compile_ok(closed_ab);
  schema::compiled_schema b{std::move(a)};
  CHECK(check(b, "{}") == "/a|required property is missing");
  CHECK(check(a, "{}") ==
        "valid");  // NOLINT(bugprone-use-after-move): moved-from is empty, by contract
  schema::compiled_schema c;
  c = std::move(b);
  CHECK(c.root_is_closed());
  CHECK(check(c, R"({"a":"x","z":1})") ==
        "/*|property is not declared by the schema (additionalProperties is false)");
}

TEST_CASE("design.md/the-toolscall-pipeline: an absent instance is a violation at the root") {
  const auto s = compile_ok(closed_ab);
  const auto v = s.validate(json::value{});
  REQUIRE(v.has_value());
  CHECK(v->path.empty());
  CHECK(v->reason == "no value to validate");
}

TEST_CASE("schema.md: a schema compiled from a parsed value does not depend on its document") {
  std::optional<schema::compiled_schema> s;
  {
    json::document doc;
    auto root =
        doc.parse(R"({"type":"object","properties":{"k":{"type":"string","enum":["alpha","beta"]},)"
                  R"("n":{"type":"number","minimum":0.25}},"required":["k"]})");
    REQUIRE(root.has_value());
    auto c = schema::compiled_schema::compile(*root);
    REQUIRE(c.has_value());
    s.emplace(std::move(*c));
    // Reuse the document for something else, then destroy it.
    REQUIRE(doc.parse(R"({"type":"string","enum":["overwritten"]})").has_value());
  }
  CHECK(check(*s, R"({"k":"beta","n":0.25})") == "valid");
  CHECK(check(*s, R"({"k":"gamma"})") == R"(/k|the value is not one of ["alpha","beta"])");
  CHECK(check(*s, R"({"k":"alpha","n":0.2})") == "/n|the value is less than minimum 0.25");
}

TEST_CASE("design.md/the-toolscall-pipeline: validation is deterministic") {
  const auto s = compile_ok(closed_ab);
  json::document doc;
  auto v = doc.parse(R"({"z":1,"y":2,"a":3})");
  REQUIRE(v.has_value());
  const auto first = s.validate(*v);
  for (int i = 0; i < 10; ++i) {
    const auto again = s.validate(*v);
    REQUIRE(again.has_value());
    CHECK(again->path == first->path);
    CHECK(again->reason == first->reason);
  }
  CHECK(first->path == "/a");
}
