// SPDX-License-Identifier: Apache-2.0
// The input-schema compiler: reads a schema's keywords into the tables of schema_tables.ipp,
// applies the strict-mode lints, resolves `$ref` and checks cycles and the depth cap.
#ifndef MCPCORE_IMPL_SCHEMA_COMPILE_IPP
#define MCPCORE_IMPL_SCHEMA_COMPILE_IPP

#include <mcpcore/dispatch/schema.hpp>

#include <mcpcore/detail/ascii.hpp>

#include <mcpcore/dispatch/impl/schema_pattern.ipp>
#include <mcpcore/dispatch/impl/schema_tables.ipp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE
namespace schema {

namespace detail {

/// Longest `const`/`enum` text (compact JSON) quoted in a violation reason; longer ones are not
/// quoted.
inline constexpr std::size_t max_quoted_constant_bytes = 128;

// ---- text helpers -------------------------------------------------------------------------------

inline std::string child_path(const std::string& base, std::string_view name) {
  std::string out = base;
  out += '/';
  append_segment(out, name);
  return out;
}

inline std::string json_quoted(std::string_view s) {
  std::string out;
  json::append_escaped(out, s);
  return out;
}

// Splits a JSON pointer into unescaped segments; nullopt when it is malformed.
inline std::optional<std::vector<std::string>> split_pointer(std::string_view p) {
  std::vector<std::string> segments;
  if (p.empty()) return segments;
  if (p.front() != '/') return std::nullopt;
  std::size_t i = 1;
  while (true) {
    std::string seg;
    while (i < p.size() && p[i] != '/') {
      if (p[i] == '~') {
        if (i + 1 >= p.size() || (p[i + 1] != '0' && p[i + 1] != '1')) return std::nullopt;
        seg += p[i + 1] == '0' ? '~' : '/';
        i += 2;
      } else {
        seg += p[i++];
      }
    }
    segments.push_back(std::move(seg));
    if (i >= p.size()) break;
    ++i;  // the '/'
  }
  return segments;
}

inline std::uint8_t type_bit(std::string_view s) noexcept {
  for (const type_name& t : type_names)
    if (t.name == s) return t.bit;
  return 0;
}

// ---- the compiler -------------------------------------------------------------------------------

inline bool is_annotation(std::string_view k) noexcept {
  return k == "description" || k == "title" || k == "$comment" || k == "examples" ||
         k == "default" || k == "format" || k == "x-mcp-header";
}

class compiler {
 public:
  compiler(tables& t, std::vector<compile_error>& errors) : t_(t), errors_(errors) {}

  // The passes depend on each other in this order: the cycle and depth walks follow edges that
  // resolve_refs has already pointed past reference nodes.
  void run() {
    t_.root = compile_node(t_.source.root(), std::string{}, context{true, false, {}});
    resolve_refs();
    check_alternative_cycles();
    if (strict()) {
      check_root();
      check_depth();
    }
  }

 private:
  struct context {
    bool root = false;
    bool alternative = false;  // a strict anyOf/oneOf alternative (required-only)
    json::value declared_by;   // alternatives: the parent's `properties`
  };

  // The keyword values of one schema object.
  struct keywords {
    json::value type, const_value, enum_values, min_length, max_length, pattern, minimum,
        exclusive_minimum, maximum, exclusive_maximum, properties, required, additional, items,
        min_items, max_items, any_of, one_of, ref, defs, schema_uri;
  };

  [[nodiscard]] bool strict() const noexcept { return t_.options.strict; }

  void error(std::string path, std::string message) {
    errors_.push_back(compile_error{std::move(path), std::move(message)});
  }

  std::uint32_t add_node(const std::string& path) {
    const auto index = static_cast<std::uint32_t>(t_.nodes.size());
    t_.nodes.emplace_back().path = path;
    return index;
  }

  std::uint32_t compile_node(json::value v, const std::string& path, const context& ctx) {
    const std::uint32_t index = add_node(path);
    node& n = t_.nodes[index];
    if (v.is_bool()) {
      if (strict())
        error(path, "a schema must be a JSON object (boolean schemas are not supported)");
      n.shape = v.as_bool() ? shape::accept_all : shape::reject_all;
      return index;
    }
    if (!v.is_object()) {
      error(path, strict() ? "a schema must be a JSON object"
                           : "a schema must be a JSON object or a boolean");
      n.shape = shape::accept_all;
      return index;
    }
    keywords k;
    std::vector<std::string_view> beside_ref;  // content keywords, refused next to $ref
    for (json::member m : v.members()) {
      const std::string_view key = m.key;
      const json::value value = m.value();
      json::value* slot = keyword_slot(k, key);
      if (slot != nullptr) {
        *slot = value;
        if (key != "$ref" && key != "$defs" && key != "$schema") beside_ref.push_back(key);
      } else if (is_annotation(key)) {
        check_annotation(key, value, child_path(path, key));
      } else {
        error(child_path(path, key), "unsupported keyword '" + std::string{key} + "'");
      }
    }
    if (k.schema_uri.exists()) check_schema_uri(k.schema_uri, path, ctx);
    if (k.defs.exists()) compile_defs(k.defs, path, ctx);
    if (k.ref.exists()) {
      compile_ref(index, k.ref, path);
      for (std::string_view key : beside_ref)
        error(child_path(path, key),
              "'" + std::string{key} +
                  "' beside '$ref' is not supported (only annotations may accompany a reference)");
      return index;
    }
    compile_type(index, k.type, path, ctx);
    compile_constants(index, k, path);
    compile_string_keywords(index, k, path);
    compile_number_keywords(index, k, path);
    compile_object_keywords(index, k, path, ctx);
    compile_array_keywords(index, k, path);
    compile_alternatives(index, k, path);
    return index;
  }

  static json::value* keyword_slot(keywords& k, std::string_view key) noexcept {
    struct entry {
      std::string_view name;
      json::value keywords::*member;
    };
    static constexpr entry table[] = {
        {"type", &keywords::type},
        {"const", &keywords::const_value},
        {"enum", &keywords::enum_values},
        {"minLength", &keywords::min_length},
        {"maxLength", &keywords::max_length},
        {"pattern", &keywords::pattern},
        {"minimum", &keywords::minimum},
        {"exclusiveMinimum", &keywords::exclusive_minimum},
        {"maximum", &keywords::maximum},
        {"exclusiveMaximum", &keywords::exclusive_maximum},
        {"properties", &keywords::properties},
        {"required", &keywords::required},
        {"additionalProperties", &keywords::additional},
        {"items", &keywords::items},
        {"minItems", &keywords::min_items},
        {"maxItems", &keywords::max_items},
        {"anyOf", &keywords::any_of},
        {"oneOf", &keywords::one_of},
        {"$ref", &keywords::ref},
        {"$defs", &keywords::defs},
        {"$schema", &keywords::schema_uri},
    };
    for (const entry& e : table)
      if (e.name == key) return &(k.*e.member);
    return nullptr;
  }

  void check_annotation(std::string_view key, json::value v, const std::string& path) {
    if ((key == "description" || key == "title" || key == "$comment" || key == "format" || key == "x-mcp-header") &&
        !v.is_string()) {
      error(path, "'" + std::string{key} + "' must be a string");
    } else if (key == "examples" && !v.is_array()) {
      error(path, "'examples' must be an array");
    }
  }

  void check_schema_uri(json::value v, const std::string& path, const context& ctx) {
    const std::string at = child_path(path, "$schema");
    if (!ctx.root) {
      error(at, "'$schema' is only allowed at the root");
      return;
    }
    if (!v.is_string() || (v.as_string() != "https://json-schema.org/draft/2020-12/schema" &&
                           v.as_string() != "http://json-schema.org/draft-07/schema#")) {
      error(at,
            "unsupported '$schema' (accepted: https://json-schema.org/draft/2020-12/schema "
            "and http://json-schema.org/draft-07/schema#)");
    }
  }

  void compile_defs(json::value v, const std::string& path, const context& ctx) {
    const std::string at = child_path(path, "$defs");
    if (!ctx.root) {
      error(at, "'$defs' is only supported at the root");
      return;
    }
    if (!v.is_object()) {
      error(at, "'$defs' must be an object of schemas");
      return;
    }
    for (json::member m : v.members()) {
      const std::uint32_t def = compile_node(m.value(), child_path(at, m.key), context{});
      defs_.emplace_back(std::string{m.key}, def);
    }
  }

  void compile_ref(std::uint32_t index, json::value v, const std::string& path) {
    const std::string at = child_path(path, "$ref");
    node& n = t_.nodes[index];
    n.shape = shape::ref;
    constexpr std::string_view supported =
        R"(only local references are supported: "#" or "#/$defs/<name>")";
    if (!v.is_string()) {
      error(at, "'$ref' must be a string");
      return;
    }
    const std::string_view ref = v.as_string();
    if (ref.empty() || ref.front() != '#') {
      error(at, std::string{supported});
      return;
    }
    const auto decoded = ::mcpcore::detail::percent_decode(ref.substr(1));
    if (!decoded) {
      error(at, "'$ref' has an invalid percent-encoding");
      return;
    }
    const auto segments = split_pointer(*decoded);
    if (!segments) {
      error(at, "'$ref' is not a valid JSON pointer fragment");
      return;
    }
    if (segments->empty()) {
      n.ref_root = true;
    } else if (segments->size() == 2 && (*segments)[0] == "$defs") {
      n.ref_name = (*segments)[1];
    } else {
      error(at, std::string{supported});
      return;
    }
    refs_.push_back(index);
  }

  void compile_type(std::uint32_t index, json::value v, const std::string& path,
                    const context& ctx) {
    node& n = t_.nodes[index];
    const std::string at = child_path(path, "type");
    if (!v.exists()) {
      if (strict() && !ctx.alternative) error(path, "'type' is required");
      return;
    }
    if (v.is_string()) {
      const std::uint8_t bit = type_bit(v.as_string());
      if (bit == 0) {
        error(at, "unknown type " + json_quoted(v.as_string()));
      } else if (strict() && bit == t_null) {
        error(at, "type 'null' is not supported");
      } else {
        n.types = bit;
      }
      return;
    }
    if (v.is_array() && strict()) {
      error(at, "type unions are not supported (give a single type)");
      return;
    }
    if (!v.is_array()) {
      error(at, strict() ? "'type' must be a string"
                         : "'type' must be a string or an array of strings");
      return;
    }
    std::uint8_t types = 0;
    std::size_t i = 0;
    bool any = false;
    for (json::value e : v.elements()) {
      const std::string item = at + "/" + std::to_string(i++);
      const std::uint8_t bit = e.is_string() ? type_bit(e.as_string()) : 0;
      if (bit == 0) {
        error(item, e.is_string() ? "unknown type " + json_quoted(e.as_string())
                                  : "a type must be a string");
      } else if ((types & bit) != 0) {
        error(item, "type listed twice");
      }
      types = static_cast<std::uint8_t>(types | bit);
      any = true;
    }
    // An empty list admits nothing; 0 would mean "any type", so keep an impossible mask.
    n.types = any ? types : 0;
    if (!any) n.shape = shape::reject_all;
  }

  // Strict keyword/type coupling: `key` needs one of `allowed`.
  void couple(std::uint32_t index, std::string_view key, json::value v, std::uint8_t allowed,
              std::string_view label, const std::string& path) {
    const node& n = t_.nodes[index];
    if (!strict() || !v.exists() || n.types == 0 || (n.types & allowed) != 0) return;
    error(child_path(path, key), "'" + std::string{key} + "' applies to type " +
                                     std::string{label} + ", not " + type_list(n.types));
  }

  std::optional<std::uint64_t> read_count(json::value v, std::string_view key,
                                          const std::string& path) {
    if (!v.exists()) return std::nullopt;
    if (auto u = v.is_integer() ? v.to_uint64() : std::nullopt) return u;
    error(child_path(path, key), "'" + std::string{key} + "' must be a non-negative integer");
    return std::nullopt;
  }

  std::optional<bound> read_bound(json::value v, std::string_view key, const std::string& path) {
    if (!v.exists()) return std::nullopt;
    if (!v.is_number()) {
      const bool draft4 = v.is_bool() && key.starts_with("exclusive");
      error(child_path(path, key),
            "'" + std::string{key} + "' must be a number" +
                (draft4 ? " (the boolean form of draft 4 is not supported)" : ""));
      return std::nullopt;
    }
    return bound{v, read_number(v)};
  }

  void compile_constants(std::uint32_t index, const keywords& k, const std::string& path) {
    node& n = t_.nodes[index];
    if (k.const_value.exists()) {
      n.const_value = k.const_value;
      std::string text = compact(k.const_value);
      if (text.size() <= max_quoted_constant_bytes) n.const_text = std::move(text);
    }
    if (!k.enum_values.exists()) return;
    const std::string at = child_path(path, "enum");
    if (!k.enum_values.is_array()) {
      error(at, "'enum' must be an array");
      return;
    }
    if (strict()) {
      if ((n.types & (t_object | t_array)) != 0)
        error(at, "'enum' is not allowed on type " + type_list(n.types));
      if (k.enum_values.size() == 0) error(at, "'enum' must not be empty");
      std::size_t i = 0;
      for (json::value a : k.enum_values.elements()) {
        std::size_t j = 0;
        for (json::value b : k.enum_values.elements()) {
          if (j >= i) break;
          if (json_equal(a, b)) {
            error(at + "/" + std::to_string(i), "'enum' values must be unique");
            break;
          }
          ++j;
        }
        ++i;
      }
    }
    n.enum_values = k.enum_values;
    std::string text = compact(k.enum_values);
    if (text.size() <= max_quoted_constant_bytes) n.enum_text = std::move(text);
  }

  void compile_string_keywords(std::uint32_t index, const keywords& k, const std::string& path) {
    couple(index, "minLength", k.min_length, t_string, "string", path);
    couple(index, "maxLength", k.max_length, t_string, "string", path);
    couple(index, "pattern", k.pattern, t_string, "string", path);
    node& n = t_.nodes[index];
    n.min_length = read_count(k.min_length, "minLength", path);
    n.max_length = read_count(k.max_length, "maxLength", path);
    if (strict() && n.min_length && n.max_length && *n.min_length > *n.max_length)
      error(child_path(path, "minLength"), "'minLength' is greater than 'maxLength'");
    if (k.pattern.exists()) compile_pattern(index, k.pattern, path);
  }

  // `pattern`: the cheap refusals first (each guards std::regex against a libstdc++ weakness or
  // an oversized automaton), then std::regex judges the syntax, then the matcher is chosen.
  void compile_pattern(std::uint32_t index, json::value v, const std::string& path) {
    const std::string at = child_path(path, "pattern");
    if (!v.is_string()) {
      error(at, "'pattern' must be a string");
      return;
    }
    node& n = t_.nodes[index];
    const std::string_view source = v.as_string();
    if (has_back_reference(source)) {
      error(at, "'pattern' uses a back-reference, which is not supported");
      return;
    }
    if (has_stacked_quantifier(source)) {
      error(at,
            "'pattern' is not a valid ECMAScript regular expression (a quantifier follows a "
            "quantifier)");
      return;
    }
    if (pattern_expansion(source, max_pattern_expansion) > max_pattern_expansion) {
      error(at, "'pattern' is too complex (it expands to more than " +
                    std::to_string(max_pattern_expansion) + " atoms)");
      return;
    }
    try {
      // Compiled alone first, so that the wrapper below cannot change how the pattern parses.
      // From a std::string: libstdc++ 12's scanner reads one character past a trailing '('
      // (it tests for "(?" before checking for the end), and a string's terminator makes that
      // read harmless; the schema's own bytes are not terminated.
      const std::string text{source};
      const std::regex alone = make_regex(text);
      (void)alone;
      n.pattern = byte_regex::compile(source);
      if (!n.pattern) n.pattern_regex = make_regex(search_as_match(source));
    } catch (const std::regex_error& e) {
      error(at, "'pattern' is not a valid ECMAScript regular expression (" + std::string{e.what()} +
                    ")");
      return;
    }
    n.pattern_text = json_quoted(source);
  }

  void compile_number_keywords(std::uint32_t index, const keywords& k, const std::string& path) {
    constexpr std::uint8_t numeric = t_integer | t_number;
    couple(index, "minimum", k.minimum, numeric, "integer or number", path);
    couple(index, "exclusiveMinimum", k.exclusive_minimum, numeric, "integer or number", path);
    couple(index, "maximum", k.maximum, numeric, "integer or number", path);
    couple(index, "exclusiveMaximum", k.exclusive_maximum, numeric, "integer or number", path);
    node& n = t_.nodes[index];
    n.minimum = read_bound(k.minimum, "minimum", path);
    n.exclusive_minimum = read_bound(k.exclusive_minimum, "exclusiveMinimum", path);
    n.maximum = read_bound(k.maximum, "maximum", path);
    n.exclusive_maximum = read_bound(k.exclusive_maximum, "exclusiveMaximum", path);
    if (!strict()) return;
    // min > max: no number can pass.
    const auto empty = [&](const std::optional<bound>& low, std::string_view low_name,
                           const std::optional<bound>& high, std::string_view high_name,
                           bool strict_order) {
      if (!low || !high) return;
      const int c = compare(low->value, high->value);
      if (c > 0 || (strict_order && c == 0))
        error(child_path(path, low_name), "'" + std::string{low_name} + "' and '" +
                                              std::string{high_name} + "' admit no value");
    };
    empty(n.minimum, "minimum", n.maximum, "maximum", false);
    empty(n.minimum, "minimum", n.exclusive_maximum, "exclusiveMaximum", true);
    empty(n.exclusive_minimum, "exclusiveMinimum", n.maximum, "maximum", true);
    empty(n.exclusive_minimum, "exclusiveMinimum", n.exclusive_maximum, "exclusiveMaximum", true);
  }

  void compile_object_keywords(std::uint32_t index, const keywords& k, const std::string& path,
                               const context& ctx) {
    couple(index, "properties", k.properties, t_object, "object", path);
    couple(index, "required", k.required, t_object, "object", path);
    couple(index, "additionalProperties", k.additional, t_object, "object", path);
    if (k.properties.exists()) compile_properties(index, k.properties, path);
    if (k.required.exists()) compile_required(index, k.required, path, ctx, k.properties);
    if (k.additional.exists()) compile_additional(index, k.additional, path);
  }

  void compile_properties(std::uint32_t index, json::value v, const std::string& path) {
    const std::string at = child_path(path, "properties");
    if (!v.is_object()) {
      error(at, "'properties' must be an object of schemas");
      return;
    }
    for (json::member m : v.members()) {
      const std::uint32_t child = compile_node(m.value(), child_path(at, m.key), context{});
      declared_property p;
      p.name = std::string{m.key};
      append_segment(p.segment, m.key);
      p.schema = child;
      t_.nodes[index].properties.push_back(std::move(p));
    }
    // Sorted for node::declares' binary search; ties keep declared order, so twins are adjacent.
    node& n = t_.nodes[index];
    n.by_name.resize(n.properties.size());
    for (std::uint32_t i = 0; i < n.by_name.size(); ++i) n.by_name[i] = i;
    std::sort(n.by_name.begin(), n.by_name.end(), [&n](std::uint32_t a, std::uint32_t b) {
      const std::string& x = n.properties[a].name;
      const std::string& y = n.properties[b].name;
      return x != y ? x < y : a < b;
    });
    // Only a document parsed with duplicate keys allowed can get here with a name twice.
    for (std::size_t i = 1; i < n.by_name.size(); ++i) {
      if (n.properties[n.by_name[i - 1]].name == n.properties[n.by_name[i]].name)
        error(child_path(at, n.properties[n.by_name[i]].name), "property declared twice");
    }
  }

  void compile_additional(std::uint32_t index, json::value v, const std::string& path) {
    const std::string at = child_path(path, "additionalProperties");
    if (v.is_bool() && !v.as_bool()) {
      t_.nodes[index].additional = additional::forbid;
    } else if (v.is_bool()) {
      if (strict()) error(at, "'additionalProperties: true' is not allowed (omit it instead)");
    } else if (v.is_object()) {
      const std::uint32_t child = compile_node(v, at, context{});
      t_.nodes[index].additional = additional::schema;
      t_.nodes[index].additional_schema = child;
    } else {
      error(at, strict() ? "'additionalProperties' must be a schema or false"
                         : "'additionalProperties' must be a schema");
    }
  }

  void compile_required(std::uint32_t index, json::value v, const std::string& path,
                        const context& ctx, json::value own_properties) {
    const std::string at = child_path(path, "required");
    if (!v.is_array()) {
      error(at, "'required' must be an array of strings");
      return;
    }
    if (strict() && ctx.alternative && v.size() == 0)
      error(at, "'required' of an alternative must not be empty");
    const json::value declared = ctx.alternative ? ctx.declared_by : own_properties;
    std::vector<std::string> names;
    std::size_t i = 0;
    for (json::value e : v.elements()) {
      const std::string item = at + "/" + std::to_string(i++);
      if (!e.is_string()) {
        error(item, "'required' names must be strings");
        continue;
      }
      const std::string_view name = e.as_string();
      if (std::find(names.begin(), names.end(), name) != names.end()) {
        error(item, "required name " + json_quoted(name) + " is listed twice");
        continue;
      }
      if (strict() && !(declared.is_object() && declared.find(name).exists()))
        error(item, "required property " + json_quoted(name) + " is not declared in 'properties'");
      names.emplace_back(name);
    }
    t_.nodes[index].required = std::move(names);
  }

  void compile_array_keywords(std::uint32_t index, const keywords& k, const std::string& path) {
    couple(index, "items", k.items, t_array, "array", path);
    couple(index, "minItems", k.min_items, t_array, "array", path);
    couple(index, "maxItems", k.max_items, t_array, "array", path);
    {
      node& n = t_.nodes[index];
      n.min_items = read_count(k.min_items, "minItems", path);
      n.max_items = read_count(k.max_items, "maxItems", path);
      if (strict() && n.min_items && n.max_items && *n.min_items > *n.max_items)
        error(child_path(path, "minItems"), "'minItems' is greater than 'maxItems'");
    }
    if (!k.items.exists()) return;
    const std::string at = child_path(path, "items");
    if (k.items.is_array()) {
      error(at, "the array form of 'items' is not supported (give one schema for every item)");
    } else if (k.items.is_object() || k.items.is_bool()) {
      const std::uint32_t child = compile_node(k.items, at, context{});
      t_.nodes[index].items = child;
    } else {
      error(at, "'items' must be a schema");
    }
  }

  void compile_alternatives(std::uint32_t index, const keywords& k, const std::string& path) {
    couple(index, "anyOf", k.any_of, t_object, "object", path);
    couple(index, "oneOf", k.one_of, t_object, "object", path);
    compile_alternative_list(index, k.any_of, "anyOf", path, k.properties);
    compile_alternative_list(index, k.one_of, "oneOf", path, k.properties);
  }

  void compile_alternative_list(std::uint32_t index, json::value v, std::string_view key,
                                const std::string& path, json::value properties) {
    if (!v.exists()) return;
    const std::string at = child_path(path, key);
    if (!v.is_array() || v.size() == 0) {
      error(at, "'" + std::string{key} + "' must be a non-empty array of schemas");
      return;
    }
    std::vector<std::uint32_t> list;
    std::string hint;
    bool hint_ok = true;
    std::size_t i = 0;
    for (json::value alt : v.elements()) {
      const std::string item = at + "/" + std::to_string(i++);
      if (strict()) {
        if (!alt.is_object() || alt.size() != 1 || !alt.find("required").exists()) {
          error(item, "an '" + std::string{key} +
                          "' alternative must be an object whose only keyword is 'required' "
                          "(required-only alternatives)");
          continue;
        }
        list.push_back(compile_node(alt, item, context{false, true, properties}));
        const json::value names = alt.find("required");
        if (!hint.empty()) hint += " or ";
        hint += names.is_array() ? compact(names) : std::string{};
        hint_ok = hint_ok && names.is_array();
      } else {
        list.push_back(compile_node(alt, item, context{}));
      }
    }
    node& n = t_.nodes[index];
    const std::string full = strict() && hint_ok && hint.size() <= 2 * max_quoted_constant_bytes
                                 ? " (required: " + hint + ")"
                                 : std::string{};
    if (key == "anyOf") {
      n.any_of = std::move(list);
      n.any_of_hint = full;
    } else {
      n.one_of = std::move(list);
      n.one_of_hint = full;
    }
  }

  // Resolves every $ref to its target, then points every edge past reference nodes at the
  // schema with content they lead to.
  void resolve_refs() {
    for (std::uint32_t r : refs_) {
      node& n = t_.nodes[r];
      if (n.ref_root) {
        n.ref = 0;
        continue;
      }
      const auto it = std::find_if(defs_.begin(), defs_.end(),
                                   [&](const auto& d) { return d.first == n.ref_name; });
      if (it == defs_.end()) {
        error(child_path(n.path, "$ref"),
              "'$ref' target " + json_quoted("#/$defs/" + n.ref_name) + " does not exist");
      } else {
        n.ref = it->second;
      }
    }
    const auto count = static_cast<std::uint32_t>(t_.nodes.size());
    std::vector<std::uint32_t> final_target;
    final_target.reserve(refs_.size());
    for (std::uint32_t r : refs_) {
      std::uint32_t target = r;
      std::uint32_t steps = 0;
      // A chain longer than the number of nodes must revisit one: it is a cycle.
      while (target != no_node && t_.nodes[target].shape == shape::ref && steps <= count) {
        target = t_.nodes[target].ref;
        ++steps;
      }
      if (steps > count) {
        error(child_path(t_.nodes[r].path, "$ref"),
              "circular '$ref': the chain never reaches a schema with content");
        target = no_node;
      }
      final_target.push_back(target);
    }
    for (std::size_t i = 0; i < refs_.size(); ++i) t_.nodes[refs_[i]].ref = final_target[i];
    const auto through = [this](std::uint32_t& edge) {
      if (edge != no_node && t_.nodes[edge].shape == shape::ref) edge = t_.nodes[edge].ref;
    };
    through(t_.root);
    for (node& n : t_.nodes) {
      for (declared_property& p : n.properties) through(p.schema);
      through(n.additional_schema);
      through(n.items);
      for (std::uint32_t& a : n.any_of) through(a);
      for (std::uint32_t& a : n.one_of) through(a);
    }
  }

  // anyOf/oneOf edges do not descend into the instance: a cycle of them would recurse forever.
  void check_alternative_cycles() {
    const std::size_t count = t_.nodes.size();
    std::vector<std::uint8_t> state(count, 0);  // 0 new, 1 on the stack, 2 done
    struct frame {
      std::uint32_t n;
      std::size_t next;
    };
    std::vector<frame> stack;
    const auto edge = [this](std::uint32_t n, std::size_t i) -> std::uint32_t {
      const node& s = t_.nodes[n];
      return i < s.any_of.size() ? s.any_of[i] : s.one_of[i - s.any_of.size()];
    };
    for (std::uint32_t start = 0; start < count; ++start) {
      if (state[start] != 0) continue;
      state[start] = 1;
      stack.push_back({start, 0});
      while (!stack.empty()) {
        const std::uint32_t n = stack.back().n;
        const node& s = t_.nodes[n];
        if (stack.back().next == s.any_of.size() + s.one_of.size()) {
          state[n] = 2;
          stack.pop_back();
          continue;
        }
        const std::size_t i = stack.back().next++;
        const std::uint32_t to = edge(n, i);
        if (to == no_node) continue;
        if (state[to] == 1) {
          error(child_path(s.path, i < s.any_of.size() ? "anyOf" : "oneOf"),
                "the alternatives lead back to this schema without descending into the instance");
        } else if (state[to] == 0) {
          state[to] = 1;
          stack.push_back({to, 0});
        }
      }
    }
  }

  void check_root() {
    if (t_.root == no_node) return;  // an unresolved reference, already reported
    const node& r = t_.nodes[t_.root];
    if (r.shape == shape::content && r.types != 0 && r.types != t_object)
      error(std::string{}, "the root schema must have type 'object'");
  }

  // Strict depth cap: a subschema more than max_depth descending edges from the root is an
  // error. A path that comes back to a schema already on it is recursion, bounded at
  // validation time instead.
  void check_depth() {
    const std::size_t count = t_.nodes.size();
    const std::uint64_t cap = t_.options.max_depth;
    std::vector<std::uint64_t> best(count, 0);
    std::vector<std::uint8_t> seen(count, 0), on_stack(count, 0), reported(count, 0);
    struct frame {
      std::uint32_t n;
      std::uint64_t depth;
      std::size_t next;
    };
    std::vector<frame> stack;
    const auto enter = [&](std::uint32_t n, std::uint64_t depth) {
      if (n == no_node || on_stack[n] != 0 || (seen[n] != 0 && best[n] >= depth)) return;
      seen[n] = 1;
      best[n] = depth;
      if (depth > cap) {
        if (reported[n] == 0)
          error(t_.nodes[n].path, "the schema nests deeper than the depth cap of " +
                                      std::to_string(cap) + " levels below the root");
        reported[n] = 1;
        return;
      }
      on_stack[n] = 1;
      stack.push_back({n, depth, 0});
    };
    // Edges in order: properties, additionalProperties, items (one level down), then the
    // alternatives (same level).
    const auto edge = [this](std::uint32_t n, std::size_t i,
                             bool& down) -> std::optional<std::uint32_t> {
      const node& s = t_.nodes[n];
      down = true;
      if (i < s.properties.size()) return s.properties[i].schema;
      i -= s.properties.size();
      if (i == 0) return s.additional_schema;
      if (i == 1) return s.items;
      i -= 2;
      down = false;
      if (i < s.any_of.size()) return s.any_of[i];
      i -= s.any_of.size();
      if (i < s.one_of.size()) return s.one_of[i];
      return std::nullopt;
    };
    enter(t_.root, 0);
    while (!stack.empty()) {
      const std::uint32_t n = stack.back().n;
      const std::uint64_t depth = stack.back().depth;
      bool down = false;
      const auto to = edge(n, stack.back().next++, down);
      if (!to) {
        on_stack[n] = 0;
        stack.pop_back();
        continue;
      }
      enter(*to, depth + (down ? 1 : 0));
    }
  }

  tables& t_;
  std::vector<compile_error>& errors_;
  std::vector<std::uint32_t> refs_;  // reference nodes, resolved at the end
  std::vector<std::pair<std::string, std::uint32_t>> defs_;
};

}  // namespace detail

MCPCORE_DECL result<compiled_schema, std::vector<compile_error>> compiled_schema::compile(
    std::string_view schema_json, const compile_options& options) {
  json::document doc;
  auto root = doc.parse(schema_json);
  if (!root) {
    return fail(std::vector<compile_error>{compile_error{
        std::string{}, "the schema is not valid JSON (" + root.error().message() + ")"}});
  }
  return compile(*root, options);
}

MCPCORE_DECL result<compiled_schema, std::vector<compile_error>> compiled_schema::compile(
    json::value schema, const compile_options& options) {
  if (!schema.exists())
    return fail(std::vector<compile_error>{compile_error{std::string{}, "no schema given"}});
  auto owned = std::make_unique<impl>();
  owned->tables.options = options;
  // Copied first: the compiled nodes keep json::value views (const, enum, bounds) into it.
  owned->tables.source = detail::copy_json(schema);
  std::vector<compile_error> errors;
  detail::compiler{owned->tables, errors}.run();
  if (!errors.empty()) {
    // The order the header promises (path, then message); one offence can be found twice (a
    // name declared three times), so equal entries are merged.
    std::sort(errors.begin(), errors.end(), [](const compile_error& a, const compile_error& b) {
      return a.path != b.path ? a.path < b.path : a.message < b.message;
    });
    errors.erase(std::unique(errors.begin(), errors.end(),
                             [](const compile_error& a, const compile_error& b) {
                               return a.path == b.path && a.message == b.message;
                             }),
                 errors.end());
    return fail(std::move(errors));
  }
  compiled_schema out;
  out.impl_ = owned.release();
  return out;
}

}  // namespace schema
MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_SCHEMA_COMPILE_IPP
