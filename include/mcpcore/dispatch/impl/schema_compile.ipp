// SPDX-License-Identifier: Apache-2.0
// The input-schema compiler: reads a schema's keywords into the tables of schema_tables.ipp,
// applies the strict-mode lints, resolves `$ref` (JSON pointers, `$anchor`, `$id`-scoped URIs)
// and checks in-place cycles and the depth cap (docs/schema.md).
#ifndef MCPCORE_IMPL_SCHEMA_COMPILE_IPP
#define MCPCORE_IMPL_SCHEMA_COMPILE_IPP

#include <mcpcore/dispatch/schema.hpp>

#include <mcpcore/detail/ascii.hpp>

#include <mcpcore/dispatch/impl/schema_regex.ipp>
#include <mcpcore/dispatch/impl/schema_tables.ipp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE
namespace schema {

namespace detail {

/// Longest `const`/`enum` text (compact JSON) quoted in a violation reason; longer ones are not
/// quoted.
inline constexpr std::size_t max_quoted_constant_bytes = 128;

inline constexpr std::string_view dialect_2020_12 = "https://json-schema.org/draft/2020-12/schema";
inline constexpr std::string_view dialect_draft_07 = "http://json-schema.org/draft-07/schema";

// ---- text helpers -------------------------------------------------------------------------------

inline std::string child_path(const std::string& base, std::string_view name) {
  std::string out = base;
  out += '/';
  append_segment(out, name);
  return out;
}

inline std::string index_path(const std::string& base, std::size_t i) {
  return base + "/" + std::to_string(i);
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

// ---- URI references (RFC 3986 section 5.2), for $id and $ref ------------------------------------

struct uri_parts {
  std::string_view scheme, authority, path, query, fragment;
  bool has_scheme = false, has_authority = false, has_query = false, has_fragment = false;
};

inline uri_parts split_uri(std::string_view u) {
  uri_parts p;
  if (const auto hash = u.find('#'); hash != std::string_view::npos) {
    p.fragment = u.substr(hash + 1);
    p.has_fragment = true;
    u = u.substr(0, hash);
  }
  if (const auto q = u.find('?'); q != std::string_view::npos) {
    p.query = u.substr(q + 1);
    p.has_query = true;
    u = u.substr(0, q);
  }
  const auto colon = u.find(':');
  if (colon != std::string_view::npos && colon > 0 && u.find('/') > colon) {
    p.scheme = u.substr(0, colon);
    p.has_scheme = true;
    u = u.substr(colon + 1);
  }
  if (u.starts_with("//")) {
    u.remove_prefix(2);
    const auto slash = u.find('/');
    p.authority = u.substr(0, slash);
    p.has_authority = true;
    u = slash == std::string_view::npos ? std::string_view{} : u.substr(slash);
  }
  p.path = u;
  return p;
}

inline std::string remove_dot_segments(std::string_view in) {
  std::string out;
  while (!in.empty()) {
    if (in.starts_with("../")) {
      in.remove_prefix(3);
    } else if (in.starts_with("./") || in.starts_with("/./")) {
      in.remove_prefix(2);
    } else if (in == "/.") {
      in = "/";
    } else if (in.starts_with("/../") || in == "/..") {
      in = in.size() == 3 ? std::string_view{"/"} : in.substr(3);
      const auto slash = out.rfind('/');
      out.erase(slash == std::string::npos ? 0 : slash);
      if (in == "/") {
        out += '/';
        in = {};
      }
    } else if (in == "." || in == "..") {
      in = {};
    } else {
      const auto next = in.find('/', 1);
      out += in.substr(0, next);
      in = next == std::string_view::npos ? std::string_view{} : in.substr(next);
    }
  }
  return out;
}

// `ref` resolved against `base` (RFC 3986 section 5.2.2).
inline std::string resolve_uri(std::string_view base, std::string_view ref) {
  const uri_parts r = split_uri(ref);
  const uri_parts b = split_uri(base);
  std::string scheme, authority, path, query;
  bool has_authority = false, has_query = false;
  if (r.has_scheme) {
    scheme = r.scheme;
    has_authority = r.has_authority;
    authority = r.authority;
    path = remove_dot_segments(r.path);
    has_query = r.has_query;
    query = r.query;
  } else {
    scheme = b.scheme;
    if (r.has_authority) {
      has_authority = true;
      authority = r.authority;
      path = remove_dot_segments(r.path);
      has_query = r.has_query;
      query = r.query;
    } else {
      has_authority = b.has_authority;
      authority = b.authority;
      if (r.path.empty()) {
        path = b.path;
        has_query = r.has_query || b.has_query;
        query = r.has_query ? r.query : b.query;
      } else {
        if (r.path.front() == '/') {
          path = remove_dot_segments(r.path);
        } else if (b.has_authority && b.path.empty()) {
          path = remove_dot_segments("/" + std::string{r.path});
        } else {
          const auto slash = b.path.rfind('/');
          std::string merged{slash == std::string_view::npos ? std::string_view{}
                                                             : b.path.substr(0, slash + 1)};
          merged += r.path;
          path = remove_dot_segments(merged);
        }
        has_query = r.has_query;
        query = r.query;
      }
    }
  }
  std::string out;
  if (!scheme.empty()) out += scheme + ":";
  if (has_authority) out += "//" + authority;
  out += path;
  if (has_query) out += "?" + query;
  if (r.has_fragment) out += "#" + std::string{r.fragment};
  return out;
}

inline std::string_view without_fragment(std::string_view u) {
  return u.substr(0, u.find('#'));
}

// ---- the compiler -------------------------------------------------------------------------------

inline bool is_annotation(std::string_view k) noexcept {
  return k == "description" || k == "title" || k == "$comment" || k == "examples" ||
         k == "default" || k == "format" || k == "x-mcp-header" || k == "deprecated" ||
         k == "readOnly" || k == "writeOnly" || k == "contentMediaType" ||
         k == "contentEncoding" || k == "contentSchema";
}

// Keywords mcpcore knows and refuses, with the reason (docs/schema.md#keywords).
inline std::string_view refusal_reason(std::string_view k) noexcept {
  struct entry {
    std::string_view keyword, reason;
  };
  static constexpr entry table[] = {
      {"$recursiveRef", "'$recursiveRef' (draft 2019-09) is not supported (use '$ref')"},
      {"$recursiveAnchor", "'$recursiveAnchor' (draft 2019-09) is not supported"},
      {"$vocabulary", "'$vocabulary' is not supported (meta-schemas are not compiled)"},
      {"definitions", "'definitions' (draft 7) is not supported (2020-12 spells it '$defs')"},
      {"dependencies",
       "'dependencies' (draft 7) is not supported (2020-12 spells it 'dependentRequired' or "
       "'dependentSchemas')"},
      {"additionalItems",
       "'additionalItems' (draft 7) is not supported (2020-12 spells it 'items', after "
       "'prefixItems')"},
  };
  for (const entry& e : table)
    if (e.keyword == k) return e.reason;
  return {};
}

class compiler {
 public:
  compiler(tables& t, std::vector<compile_error>& errors) : t_(t), errors_(errors) {}

  // The passes depend on each other in this order: references resolve once every schema,
  // `$id` and `$anchor` is known; the cycle and depth walks follow the resolved edges.
  void run() {
    const json::value root = t_.source.root();
    if (root.is_object()) {
      const json::value dialect = root.find("$schema");
      draft7_ = dialect.is_string() && without_fragment(dialect.as_string()) == dialect_draft_07;
    }
    context ctx;
    ctx.root = true;
    t_.root = compile_node(root, std::string{}, ctx);
    if (t_.root == no_node) t_.root = 0;
    if (too_many_) return;
    resolve_refs();
    if (too_many_) return;
    check_in_place_cycles();
    if (strict()) {
      check_root();
      check_depth();
    }
  }

 private:
  struct context {
    bool root = false;
    bool alternative = false;  // a strict anyOf/oneOf alternative (required-only)
    bool partial = false;      // strict: an in-place subschema (allOf, not, if, ...): type optional
    bool closing = false;      // strict: `false` allowed (additionalProperties and the like)
    std::uint8_t inherited = 0;  // strict: the enclosing schema's type, for coupling
    json::value declared_by;     // strict: the enclosing schema's `properties`
    std::string base;            // the base URI (the nearest `$id`)
  };

  // The keyword values of one schema object.
  struct keywords {
    json::value type, const_value, enum_values, min_length, max_length, pattern, minimum,
        exclusive_minimum, maximum, exclusive_maximum, multiple_of, properties, required,
        additional, pattern_properties, property_names, min_properties, max_properties,
        dependent_required, dependent_schemas, unevaluated_properties, items, prefix_items,
        contains, min_contains, max_contains, unique_items, unevaluated_items, min_items,
        max_items, all_of, any_of, one_of, not_schema, if_schema, then_schema, else_schema, ref,
        defs, schema_uri, id, anchor, dynamic_ref, dynamic_anchor;
  };

  // What one node's keyword readers share.
  struct frame {
    std::uint32_t index;
    const std::string& path;
    const context& ctx;
    std::uint8_t types;  // the node's own type, else the inherited one (strict coupling)
    const keywords& k;
    std::string base;
  };

  [[nodiscard]] bool strict() const noexcept { return t_.options.strict; }

  void error(std::string path, std::string message) {
    errors_.push_back(compile_error{std::move(path), std::move(message)});
  }

  std::uint32_t add_node(const std::string& path, json::value source) {
    if (t_.nodes.size() >= t_.options.max_schema_nodes) {
      if (!too_many_)
        error(std::string{}, "the schema has more than " +
                                 std::to_string(t_.options.max_schema_nodes) +
                                 " schema nodes (compile_options::max_schema_nodes)");
      too_many_ = true;
      return no_node;
    }
    const auto index = static_cast<std::uint32_t>(t_.nodes.size());
    t_.nodes.emplace_back().path = path;
    locations_.emplace(source.node(), index);
    return index;
  }

  std::uint32_t compile_node(json::value v, const std::string& path, const context& ctx) {
    if (too_many_) return no_node;
    const std::uint32_t index = add_node(path, v);
    if (index == no_node) return no_node;
    t_.nodes[index].draft7 = draft7_;
    if (v.is_bool()) {
      if (strict() && !(ctx.closing && !v.as_bool()))
        error(path, "a schema must be a JSON object (boolean schemas are not supported)");
      t_.nodes[index].shape = v.as_bool() ? shape::accept_all : shape::reject_all;
      return index;
    }
    if (!v.is_object()) {
      error(path, strict() ? "a schema must be a JSON object"
                           : "a schema must be a JSON object or a boolean");
      t_.nodes[index].shape = shape::accept_all;
      return index;
    }
    keywords k;
    std::vector<std::string_view> beside_ref;  // draft 7: content keywords, refused next to $ref
    for (json::member m : v.members()) {
      const std::string_view key = m.key;
      const json::value value = m.value();
      json::value* slot = keyword_slot(k, key);
      if (slot != nullptr) {
        *slot = value;
        if (key != "$ref" && key != "$defs" && key != "$schema" && key != "$id" &&
            key != "$anchor" && key != "$dynamicAnchor")
          beside_ref.push_back(key);
      } else if (is_annotation(key)) {
        check_annotation(key, value, child_path(path, key));
      } else if (const std::string_view why = refusal_reason(key); !why.empty()) {
        error(child_path(path, key), std::string{why});
      } else {
        error(child_path(path, key), "unsupported keyword '" + std::string{key} + "'");
      }
    }
    if (k.schema_uri.exists()) check_schema_uri(k.schema_uri, path, ctx);
    std::string base = ctx.base;
    if (k.id.exists()) compile_id(index, k.id, v, path, base);
    t_.nodes[index].resource = resource_id(base);
    if (k.anchor.exists()) compile_anchor(index, k.anchor, path, base, false);
    if (k.dynamic_anchor.exists()) compile_anchor(index, k.dynamic_anchor, path, base, true);
    if (k.dynamic_ref.exists()) {
      if (!k.dynamic_ref.is_string()) {
        error(child_path(path, "$dynamicRef"), "'$dynamicRef' must be a string");
      } else {
        t_.nodes[index].dynamic_text = std::string{k.dynamic_ref.as_string()};
        t_.nodes[index].dynamic_base = base;
        dynamic_refs_.push_back(index);
      }
    }
    if (k.defs.exists()) compile_defs(k.defs, path, base);
    if (k.ref.exists()) {
      compile_ref(index, k.ref, path, base);
      if (draft7_) {
        for (std::string_view key : beside_ref)
          error(child_path(path, key),
                "'" + std::string{key} +
                    "' beside '$ref' is not supported in a draft-07 schema (draft 7 ignores it, "
                    "2020-12 applies it)");
        return index;
      }
    }
    compile_type(index, k.type, path, ctx, k.ref.exists());
    const std::uint8_t own = t_.nodes[index].types;
    const frame f{index, path, ctx, own != 0 ? own : ctx.inherited, k, base};
    compile_constants(f);
    compile_string_keywords(f);
    compile_number_keywords(f);
    compile_object_keywords(f);
    compile_array_keywords(f);
    compile_alternatives(f);
    compile_in_place(f);
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
        {"multipleOf", &keywords::multiple_of},
        {"properties", &keywords::properties},
        {"required", &keywords::required},
        {"additionalProperties", &keywords::additional},
        {"patternProperties", &keywords::pattern_properties},
        {"propertyNames", &keywords::property_names},
        {"minProperties", &keywords::min_properties},
        {"maxProperties", &keywords::max_properties},
        {"dependentRequired", &keywords::dependent_required},
        {"dependentSchemas", &keywords::dependent_schemas},
        {"unevaluatedProperties", &keywords::unevaluated_properties},
        {"items", &keywords::items},
        {"prefixItems", &keywords::prefix_items},
        {"contains", &keywords::contains},
        {"minContains", &keywords::min_contains},
        {"maxContains", &keywords::max_contains},
        {"uniqueItems", &keywords::unique_items},
        {"unevaluatedItems", &keywords::unevaluated_items},
        {"minItems", &keywords::min_items},
        {"maxItems", &keywords::max_items},
        {"allOf", &keywords::all_of},
        {"anyOf", &keywords::any_of},
        {"oneOf", &keywords::one_of},
        {"not", &keywords::not_schema},
        {"if", &keywords::if_schema},
        {"then", &keywords::then_schema},
        {"else", &keywords::else_schema},
        {"$ref", &keywords::ref},
        {"$defs", &keywords::defs},
        {"$schema", &keywords::schema_uri},
        {"$id", &keywords::id},
        {"$anchor", &keywords::anchor},
        {"$dynamicRef", &keywords::dynamic_ref},
        {"$dynamicAnchor", &keywords::dynamic_anchor},
    };
    for (const entry& e : table)
      if (e.name == key) return &(k.*e.member);
    return nullptr;
  }

  void check_annotation(std::string_view key, json::value v, const std::string& path) {
    if ((key == "description" || key == "title" || key == "$comment" || key == "format" ||
         key == "x-mcp-header" || key == "contentMediaType" || key == "contentEncoding") &&
        !v.is_string()) {
      error(path, "'" + std::string{key} + "' must be a string");
    } else if (key == "examples" && !v.is_array()) {
      error(path, "'examples' must be an array");
    } else if ((key == "deprecated" || key == "readOnly" || key == "writeOnly") && !v.is_bool()) {
      error(path, "'" + std::string{key} + "' must be a boolean");
    } else if (key == "contentSchema" && !v.is_object() && !v.is_bool()) {
      error(path, "'contentSchema' must be a schema");
    }
  }

  void check_schema_uri(json::value v, const std::string& path, const context& ctx) {
    const std::string at = child_path(path, "$schema");
    if (!ctx.root) {
      error(at, "'$schema' is only allowed at the root");
      return;
    }
    if (!v.is_string() || (without_fragment(v.as_string()) != dialect_2020_12 &&
                           without_fragment(v.as_string()) != dialect_draft_07)) {
      error(at,
            "unsupported '$schema' (accepted: https://json-schema.org/draft/2020-12/schema "
            "and http://json-schema.org/draft-07/schema#)");
    }
  }

  // `$id`: a new base URI, and a resource the references can name.
  void compile_id(std::uint32_t index, json::value v, json::value schema, const std::string& path,
                  std::string& base) {
    const std::string at = child_path(path, "$id");
    if (!v.is_string()) {
      error(at, "'$id' must be a string");
      return;
    }
    const std::string_view id = v.as_string();
    if (draft7_ && id.starts_with("#")) {  // draft 7: a plain-name fragment is an anchor
      anchors_.emplace(base + std::string{id}, index);
      return;
    }
    const auto hash = id.find('#');
    if (hash != std::string_view::npos && hash + 1 != id.size()) {
      error(at, "'$id' must not have a fragment (use '$anchor')");
      return;
    }
    base = std::string{without_fragment(resolve_uri(base, id))};
    resources_.emplace(base, resource{schema, path});
  }

  std::uint32_t resource_id(const std::string& base) {
    const auto [it, added] =
        resource_ids_.emplace(base, static_cast<std::uint32_t>(t_.dynamic_anchors.size()));
    if (added) t_.dynamic_anchors.emplace_back();
    return it->second;
  }

  // `$anchor`, or `$dynamicAnchor` (`dynamic`): a plain-name fragment of the resource; a dynamic
  // one is also what `$dynamicRef` looks up in the dynamic scope.
  void compile_anchor(std::uint32_t index, json::value v, const std::string& path,
                      const std::string& base, bool dynamic) {
    const std::string_view key = dynamic ? "$dynamicAnchor" : "$anchor";
    const std::string at = child_path(path, key);
    if (!v.is_string() || v.as_string().empty()) {
      error(at, "'" + std::string{key} + "' must be a non-empty string");
      return;
    }
    const std::string_view a = v.as_string();
    const bool ok = std::all_of(a.begin(), a.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '_' || c == '-' || c == '.';
    }) && !(a.front() >= '0' && a.front() <= '9') && a.front() != '-' && a.front() != '.';
    if (!ok) {
      error(at, "'" + std::string{key} +
                    "' must be a plain name (a letter or '_', then letters, digits, '-', '_' or "
                    "'.')");
      return;
    }
    if (!anchors_.emplace(base + "#" + std::string{a}, index).second &&
        anchors_[base + "#" + std::string{a}] != index)
      error(at, "'" + std::string{key} + "' " + json_quoted(a) +
                    " is declared twice in the same resource");
    if (dynamic) {
      t_.nodes[index].dynamic_anchor = std::string{a};
      t_.dynamic_anchors[t_.nodes[index].resource].emplace_back(std::string{a}, index);
    }
  }

  void compile_defs(json::value v, const std::string& path, const std::string& base) {
    const std::string at = child_path(path, "$defs");
    if (!v.is_object()) {
      error(at, "'$defs' must be an object of schemas");
      return;
    }
    for (json::member m : v.members()) {
      context c;
      c.base = base;
      (void)compile_node(m.value(), child_path(at, m.key), c);
    }
  }

  void compile_ref(std::uint32_t index, json::value v, const std::string& path,
                   const std::string& base) {
    const std::string at = child_path(path, "$ref");
    if (!v.is_string()) {
      error(at, "'$ref' must be a string");
      return;
    }
    node& n = t_.nodes[index];
    n.ref_text = std::string{v.as_string()};
    n.ref_base = base;
    refs_.push_back(index);
  }

  void compile_type(std::uint32_t index, json::value v, const std::string& path,
                    const context& ctx, bool has_ref) {
    node& n = t_.nodes[index];
    const std::string at = child_path(path, "type");
    if (!v.exists()) {
      if (strict() && !ctx.alternative && !ctx.partial && !has_ref)
        error(path, "'type' is required");
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
      const std::string item = index_path(at, i++);
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
  void couple(const frame& f, std::string_view key, json::value v, std::uint8_t allowed,
              std::string_view label) {
    if (!strict() || !v.exists() || f.types == 0 || (f.types & allowed) != 0) return;
    error(child_path(f.path, key), "'" + std::string{key} + "' applies to type " +
                                       std::string{label} + ", not " + type_list(f.types));
  }

  std::optional<std::uint64_t> read_count(json::value v, std::string_view key,
                                          const std::string& path) {
    if (!v.exists()) return std::nullopt;
    if (auto u = v.is_integer() ? v.to_uint64() : std::nullopt) return u;
    // 2020-12 allows a count written with a zero fraction (1.0).
    if (v.is_number()) {
      const double d = v.to_double().value_or(-1.0);
      if (d >= 0 && d < 18446744073709551616.0 && static_cast<double>(static_cast<std::uint64_t>(d)) == d)
        return static_cast<std::uint64_t>(d);
    }
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

  void check_min_max(const frame& f, const std::optional<std::uint64_t>& low,
                     std::string_view low_name, const std::optional<std::uint64_t>& high,
                     std::string_view high_name) {
    if (strict() && low && high && *low > *high)
      error(child_path(f.path, low_name), "'" + std::string{low_name} + "' is greater than '" +
                                              std::string{high_name} + "'");
  }

  void compile_constants(const frame& f) {
    const keywords& k = f.k;
    node& n = t_.nodes[f.index];
    if (k.const_value.exists()) {
      n.const_value = k.const_value;
      std::string text = compact(k.const_value);
      if (text.size() <= max_quoted_constant_bytes) n.const_text = std::move(text);
    }
    if (!k.enum_values.exists()) return;
    const std::string at = child_path(f.path, "enum");
    if (!k.enum_values.is_array()) {
      error(at, "'enum' must be an array");
      return;
    }
    if (strict()) {
      if ((f.types & (t_object | t_array)) != 0)
        error(at, "'enum' is not allowed on type " + type_list(f.types));
      if (k.enum_values.size() == 0) error(at, "'enum' must not be empty");
      std::size_t i = 0;
      for (json::value a : k.enum_values.elements()) {
        std::size_t j = 0;
        for (json::value b : k.enum_values.elements()) {
          if (j >= i) break;
          if (json_equal(a, b)) {
            error(index_path(at, i), "'enum' values must be unique");
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

  std::optional<pattern_matcher> compile_regex(json::value v, std::string_view what,
                                               const std::string& at) {
    if (!v.is_string()) {
      error(at, "'" + std::string{what} + "' must be a string");
      return std::nullopt;
    }
    std::string reason;
    auto re = compile_pattern_re2(v.as_string(), t_.options.max_pattern_memory_bytes, reason);
    if (!re) {
      error(at, "'" + std::string{what} + "' is not a regular expression RE2 accepts (" + reason +
                    ")");
      return std::nullopt;
    }
    return pattern_matcher{std::move(re), json_quoted(v.as_string())};
  }

  void compile_string_keywords(const frame& f) {
    const keywords& k = f.k;
    couple(f, "minLength", k.min_length, t_string, "string");
    couple(f, "maxLength", k.max_length, t_string, "string");
    couple(f, "pattern", k.pattern, t_string, "string");
    node& n = t_.nodes[f.index];
    n.min_length = read_count(k.min_length, "minLength", f.path);
    n.max_length = read_count(k.max_length, "maxLength", f.path);
    check_min_max(f, n.min_length, "minLength", n.max_length, "maxLength");
    if (k.pattern.exists())
      n.pattern = compile_regex(k.pattern, "pattern", child_path(f.path, "pattern"));
  }

  void compile_number_keywords(const frame& f) {
    const keywords& k = f.k;
    constexpr std::uint8_t numeric = t_integer | t_number;
    couple(f, "minimum", k.minimum, numeric, "integer or number");
    couple(f, "exclusiveMinimum", k.exclusive_minimum, numeric, "integer or number");
    couple(f, "maximum", k.maximum, numeric, "integer or number");
    couple(f, "exclusiveMaximum", k.exclusive_maximum, numeric, "integer or number");
    couple(f, "multipleOf", k.multiple_of, numeric, "integer or number");
    node& n = t_.nodes[f.index];
    n.minimum = read_bound(k.minimum, "minimum", f.path);
    n.exclusive_minimum = read_bound(k.exclusive_minimum, "exclusiveMinimum", f.path);
    n.maximum = read_bound(k.maximum, "maximum", f.path);
    n.exclusive_maximum = read_bound(k.exclusive_maximum, "exclusiveMaximum", f.path);
    n.multiple_of = read_bound(k.multiple_of, "multipleOf", f.path);
    if (n.multiple_of && compare(n.multiple_of->value, number{}) <= 0) {
      error(child_path(f.path, "multipleOf"), "'multipleOf' must be greater than 0");
      n.multiple_of.reset();
    }
    if (!strict()) return;
    // min > max: no number can pass.
    const auto empty = [&](const std::optional<bound>& low, std::string_view low_name,
                           const std::optional<bound>& high, std::string_view high_name,
                           bool strict_order) {
      if (!low || !high) return;
      const int c = compare(low->value, high->value);
      if (c > 0 || (strict_order && c == 0))
        error(child_path(f.path, low_name), "'" + std::string{low_name} + "' and '" +
                                                std::string{high_name} + "' admit no value");
    };
    empty(n.minimum, "minimum", n.maximum, "maximum", false);
    empty(n.minimum, "minimum", n.exclusive_maximum, "exclusiveMaximum", true);
    empty(n.exclusive_minimum, "exclusiveMinimum", n.maximum, "maximum", true);
    empty(n.exclusive_minimum, "exclusiveMinimum", n.exclusive_maximum, "exclusiveMaximum", true);
  }

  context child_context(const frame& f) const {
    context c;
    c.base = f.base;
    return c;
  }

  // Strict: an in-place subschema of `f` (allOf, not, if/then/else, dependentSchemas): it
  // constrains the same value, so `type` is optional and coupling uses the enclosing type.
  context partial_context(const frame& f) const {
    context c;
    c.base = f.base;
    c.partial = true;
    c.inherited = f.types;
    c.declared_by = f.k.properties.exists() ? f.k.properties : f.ctx.declared_by;
    return c;
  }

  std::uint32_t compile_schema(json::value v, const std::string& at, const context& c,
                               std::string_view key) {
    if (!v.is_object() && !v.is_bool()) {
      error(at, "'" + std::string{key} + "' must be a schema");
      return no_node;
    }
    return compile_node(v, at, c);
  }

  // Strict: `false` closes (additionalProperties, unevaluatedProperties, unevaluatedItems,
  // items); `true` is refused as a no-op.
  std::uint32_t compile_closing(const frame& f, json::value v, std::string_view key) {
    const std::string at = child_path(f.path, key);
    if (strict() && v.is_bool() && v.as_bool()) {
      error(at, "'" + std::string{key} + ": true' is not allowed (omit it instead)");
      return no_node;
    }
    context c = child_context(f);
    c.closing = true;
    if (!v.is_object() && !v.is_bool()) {
      error(at, strict() ? "'" + std::string{key} + "' must be a schema or false"
                         : "'" + std::string{key} + "' must be a schema");
      return no_node;
    }
    return compile_node(v, at, c);
  }

  void compile_object_keywords(const frame& f) {
    const keywords& k = f.k;
    for (auto [key, value] :
         {std::pair{"properties", k.properties}, {"required", k.required},
          {"additionalProperties", k.additional}, {"patternProperties", k.pattern_properties},
          {"propertyNames", k.property_names}, {"minProperties", k.min_properties},
          {"maxProperties", k.max_properties}, {"dependentRequired", k.dependent_required},
          {"dependentSchemas", k.dependent_schemas},
          {"unevaluatedProperties", k.unevaluated_properties}})
      couple(f, key, value, t_object, "object");
    if (k.properties.exists()) compile_properties(f);
    if (k.required.exists()) compile_required(f);
    if (k.additional.exists()) {
      const std::uint32_t child = compile_closing(f, k.additional, "additionalProperties");
      node& n = t_.nodes[f.index];
      if (child != no_node) {
        n.additional = t_.nodes[child].shape == shape::reject_all && strict()
                           ? additional::forbid
                           : additional::schema;
        n.additional_schema = child;
        if (k.additional.is_bool() && !k.additional.as_bool()) n.additional = additional::forbid;
      }
    }
    if (k.pattern_properties.exists()) compile_pattern_properties(f);
    if (k.property_names.exists()) {
      context c = child_context(f);
      c.partial = true;
      c.inherited = t_string;
      t_.nodes[f.index].property_names =
          compile_schema(k.property_names, child_path(f.path, "propertyNames"), c, "propertyNames");
    }
    node& n = t_.nodes[f.index];
    n.min_properties = read_count(k.min_properties, "minProperties", f.path);
    n.max_properties = read_count(k.max_properties, "maxProperties", f.path);
    check_min_max(f, n.min_properties, "minProperties", n.max_properties, "maxProperties");
    if (k.dependent_required.exists()) compile_dependent_required(f);
    if (k.dependent_schemas.exists()) {
      const std::string at = child_path(f.path, "dependentSchemas");
      if (!k.dependent_schemas.is_object()) {
        error(at, "'dependentSchemas' must be an object of schemas");
      } else {
        for (json::member m : k.dependent_schemas.members()) {
          const std::uint32_t child = compile_schema(m.value(), child_path(at, m.key),
                                                     partial_context(f), "dependentSchemas");
          t_.nodes[f.index].dependent_schemas.push_back({std::string{m.key}, child});
        }
      }
    }
    if (k.unevaluated_properties.exists())
      t_.nodes[f.index].unevaluated_properties =
          compile_closing(f, k.unevaluated_properties, "unevaluatedProperties");
  }

  void compile_properties(const frame& f) {
    const std::string at = child_path(f.path, "properties");
    if (!f.k.properties.is_object()) {
      error(at, "'properties' must be an object of schemas");
      return;
    }
    for (json::member m : f.k.properties.members()) {
      // Strict: inside an in-place subschema, a property the enclosing schema declares keeps
      // its declared type (`if: {properties: {kind: {const: "x"}}}` needs no second `type`).
      context c = child_context(f);
      const json::value outer =
          f.ctx.partial && f.ctx.declared_by.is_object() ? f.ctx.declared_by.find(m.key)
                                                         : json::value{};
      if (outer.is_object() && outer.find("type").is_string()) {
        c.partial = true;
        c.inherited = type_bit(outer.find("type").as_string());
      }
      const std::uint32_t child = compile_schema(m.value(), child_path(at, m.key), c, "properties");
      declared_property p;
      p.name = std::string{m.key};
      append_segment(p.segment, m.key);
      p.schema = child;
      t_.nodes[f.index].properties.push_back(std::move(p));
    }
    // Sorted for node::declares' binary search; ties keep declared order, so twins are adjacent.
    node& n = t_.nodes[f.index];
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

  void compile_pattern_properties(const frame& f) {
    const std::string at = child_path(f.path, "patternProperties");
    if (!f.k.pattern_properties.is_object()) {
      error(at, "'patternProperties' must be an object of schemas");
      return;
    }
    for (json::member m : f.k.pattern_properties.members()) {
      const std::string item = child_path(at, m.key);
      std::string reason;
      auto re = compile_pattern_re2(m.key, t_.options.max_pattern_memory_bytes, reason);
      if (!re) {
        error(item, "the 'patternProperties' name is not a regular expression RE2 accepts (" +
                        reason + ")");
      }
      const std::uint32_t child =
          compile_schema(m.value(), item, child_context(f), "patternProperties");
      if (re) {
        t_.nodes[f.index].pattern_properties.push_back(
            {pattern_matcher{std::move(re), json_quoted(m.key)}, child});
      }
    }
  }

  std::vector<std::string> read_names(json::value v, const std::string& at, std::string_view key) {
    std::vector<std::string> names;
    if (!v.is_array()) {
      error(at, "'" + std::string{key} + "' must be an array of strings");
      return names;
    }
    std::size_t i = 0;
    for (json::value e : v.elements()) {
      const std::string item = index_path(at, i++);
      if (!e.is_string()) {
        error(item, "'" + std::string{key} + "' names must be strings");
        continue;
      }
      const std::string_view name = e.as_string();
      if (std::find(names.begin(), names.end(), name) != names.end()) {
        error(item, std::string{key} + " name " + json_quoted(name) + " is listed twice");
        continue;
      }
      names.emplace_back(name);
    }
    return names;
  }

  [[nodiscard]] bool declared(const frame& f, std::string_view name) const {
    const json::value own = f.k.properties;
    const json::value outer = f.ctx.declared_by;
    return (own.is_object() && own.find(name).exists()) ||
           (outer.is_object() && outer.find(name).exists());
  }

  void compile_required(const frame& f) {
    const std::string at = child_path(f.path, "required");
    if (strict() && f.ctx.alternative && f.k.required.is_array() && f.k.required.size() == 0)
      error(at, "'required' of an alternative must not be empty");
    std::vector<std::string> names = read_names(f.k.required, at, "required");
    if (strict()) {
      std::size_t i = 0;
      for (json::value e : f.k.required.elements()) {
        if (e.is_string() && !declared(f, e.as_string()))
          error(index_path(at, i), "required property " + json_quoted(e.as_string()) +
                                       " is not declared in 'properties'");
        ++i;
      }
    }
    t_.nodes[f.index].required = std::move(names);
  }

  void compile_dependent_required(const frame& f) {
    const std::string at = child_path(f.path, "dependentRequired");
    if (!f.k.dependent_required.is_object()) {
      error(at, "'dependentRequired' must be an object of string arrays");
      return;
    }
    for (json::member m : f.k.dependent_required.members()) {
      dependent_names d;
      d.name = std::string{m.key};
      append_segment(d.segment, m.key);
      d.needed = read_names(m.value(), child_path(at, m.key), "dependentRequired");
      t_.nodes[f.index].dependent_required.push_back(std::move(d));
    }
  }

  void compile_array_keywords(const frame& f) {
    const keywords& k = f.k;
    for (auto [key, value] :
         {std::pair{"items", k.items}, {"prefixItems", k.prefix_items}, {"contains", k.contains},
          {"minContains", k.min_contains}, {"maxContains", k.max_contains},
          {"uniqueItems", k.unique_items}, {"unevaluatedItems", k.unevaluated_items},
          {"minItems", k.min_items}, {"maxItems", k.max_items}})
      couple(f, key, value, t_array, "array");
    node& n = t_.nodes[f.index];
    n.min_items = read_count(k.min_items, "minItems", f.path);
    n.max_items = read_count(k.max_items, "maxItems", f.path);
    check_min_max(f, n.min_items, "minItems", n.max_items, "maxItems");
    n.min_contains = read_count(k.min_contains, "minContains", f.path);
    n.max_contains = read_count(k.max_contains, "maxContains", f.path);
    check_min_max(f, n.min_contains, "minContains", n.max_contains, "maxContains");
    if (k.unique_items.exists()) {
      if (k.unique_items.is_bool()) {
        n.unique_items = k.unique_items.as_bool();
      } else {
        error(child_path(f.path, "uniqueItems"), "'uniqueItems' must be a boolean");
      }
    }
    if (k.prefix_items.exists()) {
      const std::string at = child_path(f.path, "prefixItems");
      if (!k.prefix_items.is_array() || k.prefix_items.size() == 0) {
        error(at, "'prefixItems' must be a non-empty array of schemas");
      } else {
        std::size_t i = 0;
        for (json::value e : k.prefix_items.elements()) {
          const std::uint32_t child =
              compile_schema(e, index_path(at, i++), child_context(f), "prefixItems");
          t_.nodes[f.index].prefix_items.push_back(child);
        }
      }
    }
    if (k.items.exists()) {
      if (k.items.is_array()) {
        error(child_path(f.path, "items"),
              "the array form of 'items' (draft 7) is not supported (2020-12 spells it "
              "'prefixItems')");
      } else {
        t_.nodes[f.index].items = compile_closing(f, k.items, "items");
      }
    }
    if (k.contains.exists())
      t_.nodes[f.index].contains =
          compile_schema(k.contains, child_path(f.path, "contains"), child_context(f), "contains");
    if (k.unevaluated_items.exists())
      t_.nodes[f.index].unevaluated_items =
          compile_closing(f, k.unevaluated_items, "unevaluatedItems");
  }

  void compile_alternatives(const frame& f) {
    couple(f, "anyOf", f.k.any_of, t_object, "object");
    couple(f, "oneOf", f.k.one_of, t_object, "object");
    compile_alternative_list(f, f.k.any_of, "anyOf");
    compile_alternative_list(f, f.k.one_of, "oneOf");
  }

  void compile_alternative_list(const frame& f, json::value v, std::string_view key) {
    if (!v.exists()) return;
    const std::string at = child_path(f.path, key);
    if (!v.is_array() || v.size() == 0) {
      error(at, "'" + std::string{key} + "' must be a non-empty array of schemas");
      return;
    }
    std::vector<std::uint32_t> list;
    std::string hint;
    bool hint_ok = true;
    std::size_t i = 0;
    for (json::value alt : v.elements()) {
      const std::string item = index_path(at, i++);
      if (strict()) {
        if (!alt.is_object() || alt.size() != 1 || !alt.find("required").exists()) {
          error(item, "an '" + std::string{key} +
                          "' alternative must be an object whose only keyword is 'required' "
                          "(required-only alternatives)");
          continue;
        }
        context c = child_context(f);
        c.alternative = true;
        c.declared_by = f.k.properties.exists() ? f.k.properties : f.ctx.declared_by;
        list.push_back(compile_node(alt, item, c));
        const json::value names = alt.find("required");
        if (!hint.empty()) hint += " or ";
        hint += names.is_array() ? compact(names) : std::string{};
        hint_ok = hint_ok && names.is_array();
      } else {
        list.push_back(compile_schema(alt, item, child_context(f), key));
      }
    }
    node& n = t_.nodes[f.index];
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

  // allOf, not, if/then/else: subschemas applied to the same value.
  void compile_in_place(const frame& f) {
    const keywords& k = f.k;
    if (k.all_of.exists()) {
      const std::string at = child_path(f.path, "allOf");
      if (!k.all_of.is_array() || k.all_of.size() == 0) {
        error(at, "'allOf' must be a non-empty array of schemas");
      } else {
        std::size_t i = 0;
        for (json::value e : k.all_of.elements()) {
          const std::uint32_t child =
              compile_schema(e, index_path(at, i++), partial_context(f), "allOf");
          t_.nodes[f.index].all_of.push_back(child);
        }
      }
    }
    const auto one = [&](json::value v, std::string_view key) -> std::uint32_t {
      if (!v.exists()) return no_node;
      return compile_schema(v, child_path(f.path, key), partial_context(f), key);
    };
    const std::uint32_t not_schema = one(k.not_schema, "not");
    const std::uint32_t if_schema = one(k.if_schema, "if");
    const std::uint32_t then_schema = one(k.then_schema, "then");
    const std::uint32_t else_schema = one(k.else_schema, "else");
    node& n = t_.nodes[f.index];
    n.not_schema = not_schema;
    n.if_schema = if_schema;
    n.then_schema = then_schema;
    n.else_schema = else_schema;
    if (strict() && !k.if_schema.exists()) {
      if (k.then_schema.exists())
        error(child_path(f.path, "then"), "'then' without 'if' has no effect");
      if (k.else_schema.exists())
        error(child_path(f.path, "else"), "'else' without 'if' has no effect");
    }
  }

  // ---- references ----

  // The compiled node for the JSON at `target` (compiled now if nothing compiled it yet: a
  // pointer may name any schema-shaped place of the document).
  std::uint32_t node_at(json::value target, const std::string& path, const std::string& base) {
    if (const auto it = locations_.find(target.node()); it != locations_.end()) return it->second;
    if (!target.is_object() && !target.is_bool()) return no_node;
    context c;
    c.base = base;
    return compile_node(target, path, c);
  }

  // The node a reference names, or no_node (reported) when it names none. `fragment` receives
  // the resolved fragment.
  std::uint32_t resolve_target(std::uint32_t index, std::string_view key,
                               const std::string& ref_text, const std::string& ref_base,
                               std::string& fragment_out) {
    const std::string at = child_path(t_.nodes[index].path, key);
    const std::string what = "'" + std::string{key} + "'";
    const std::string target = resolve_uri(ref_base, ref_text);
    const std::string document{without_fragment(target)};
    const auto hash = target.find('#');
    const std::string fragment =
        hash == std::string::npos ? std::string{} : target.substr(hash + 1);
    fragment_out = fragment;
    const auto res = resources_.find(document);
    if (res == resources_.end()) {
      error(at, what + " target " + json_quoted(ref_text) +
                    " is not in this document (remote references are not supported)");
      return no_node;
    }
    if (!fragment.empty() && fragment.front() != '/') {
      const auto a = anchors_.find(document + "#" + fragment);
      if (a == anchors_.end()) {
        error(at, what + " target " + json_quoted(ref_text) + " names no '$anchor'");
        return no_node;
      }
      return a->second;
    }
    const auto decoded = ::mcpcore::detail::percent_decode(fragment);
    if (!decoded) {
      error(at, what + " has an invalid percent-encoding");
      return no_node;
    }
    const auto segments = split_pointer(*decoded);
    if (!segments) {
      error(at, what + " is not a valid JSON pointer fragment");
      return no_node;
    }
    json::value v = res->second.json;
    std::string path = res->second.path;
    for (const std::string& s : *segments) {
      if (v.is_object()) {
        v = v.find(s);
      } else if (v.is_array()) {
        json::value found;
        std::size_t i = 0;
        const bool digits = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
          return c >= '0' && c <= '9';
        }) && (s.size() == 1 || s.front() != '0');
        for (json::value e : v.elements()) {
          if (digits && std::to_string(i) == s) {
            found = e;
            break;
          }
          ++i;
        }
        v = found;
      } else {
        v = json::value{};
      }
      if (!v.exists()) break;
      path = child_path(path, s);
    }
    const std::uint32_t to = v.exists() ? node_at(v, path, document) : no_node;
    if (to == no_node && !too_many_)
      error(at, what + " target " + json_quoted(ref_text) + " does not exist or is not a schema");
    return to;
  }

  void resolve_refs() {
    // The document itself is a resource at the empty base, whatever `$id` its root declares.
    resources_.emplace(std::string{}, resource{t_.source.root(), std::string{}});
    // Resolving can compile pointer targets, which can add references: index loops.
    std::size_t r = 0, d = 0;
    while (!too_many_ && (r < refs_.size() || d < dynamic_refs_.size())) {
      if (r < refs_.size()) {
        node& n = t_.nodes[refs_[r++]];
        std::string fragment;
        const std::uint32_t to =
            resolve_target(refs_[r - 1], "$ref", n.ref_text, n.ref_base, fragment);
        t_.nodes[refs_[r - 1]].ref = to;
        continue;
      }
      const std::uint32_t index = dynamic_refs_[d++];
      std::string fragment;
      const std::uint32_t to = resolve_target(index, "$dynamicRef", t_.nodes[index].dynamic_text,
                                              t_.nodes[index].dynamic_base, fragment);
      node& n = t_.nodes[index];
      n.dynamic_ref = to;
      // Dynamic only when the static target carries the `$dynamicAnchor` the fragment names.
      if (to != no_node && !fragment.empty() && fragment.front() != '/' &&
          t_.nodes[to].dynamic_anchor == fragment) {
        n.dynamic_name = fragment;
        t_.dynamic = true;
      }
    }
  }

  // The edges that apply a subschema to the same value: a cycle of them never ends.
  template <class Visit>
  void in_place_edges(std::uint32_t n, Visit&& visit) const {
    const node& s = t_.nodes[n];
    visit(s.ref, std::string_view{"$ref"});
    visit(s.dynamic_ref, std::string_view{"$dynamicRef"});
    for (std::uint32_t a : s.all_of) visit(a, std::string_view{"allOf"});
    for (std::uint32_t a : s.any_of) visit(a, std::string_view{"anyOf"});
    for (std::uint32_t a : s.one_of) visit(a, std::string_view{"oneOf"});
    visit(s.not_schema, std::string_view{"not"});
    visit(s.if_schema, std::string_view{"if"});
    visit(s.then_schema, std::string_view{"then"});
    visit(s.else_schema, std::string_view{"else"});
    for (const dependent_schema& d : s.dependent_schemas)
      visit(d.schema, std::string_view{"dependentSchemas"});
  }

  void check_in_place_cycles() {
    const std::size_t count = t_.nodes.size();
    std::vector<std::vector<std::pair<std::uint32_t, std::string_view>>> edges(count);
    for (std::uint32_t n = 0; n < count; ++n) {
      in_place_edges(n, [&](std::uint32_t to, std::string_view key) {
        if (to != no_node) edges[n].emplace_back(to, key);
      });
    }
    std::vector<std::uint8_t> state(count, 0);  // 0 new, 1 on the stack, 2 done
    struct entry {
      std::uint32_t n;
      std::size_t next;
    };
    std::vector<entry> stack;
    for (std::uint32_t start = 0; start < count; ++start) {
      if (state[start] != 0) continue;
      state[start] = 1;
      stack.push_back({start, 0});
      while (!stack.empty()) {
        const std::uint32_t n = stack.back().n;
        if (stack.back().next == edges[n].size()) {
          state[n] = 2;
          stack.pop_back();
          continue;
        }
        const auto [to, key] = edges[n][stack.back().next++];
        if (state[to] == 1) {
          error(child_path(t_.nodes[n].path, key),
                "'" + std::string{key} +
                    "' leads back to this schema without descending into the instance (it "
                    "would never end)");
        } else if (state[to] == 0) {
          state[to] = 1;
          stack.push_back({to, 0});
        }
      }
    }
  }

  void check_root() {
    const node& r = t_.through_refs(t_.root);
    if (r.shape == shape::content && r.types != 0 && r.types != t_object)
      error(std::string{}, "the root schema must have type 'object'");
  }

  // Strict depth cap: a subschema more than max_depth descending edges from the root is an
  // error. A path that comes back to a schema already on it is recursion, bounded at
  // validation time instead.
  void check_depth() {
    const std::size_t count = t_.nodes.size();
    const std::uint64_t cap = t_.options.max_depth;
    std::vector<std::vector<std::pair<std::uint32_t, bool>>> edges(count);  // (to, descends)
    for (std::uint32_t n = 0; n < count; ++n) {
      const node& s = t_.nodes[n];
      auto& e = edges[n];
      const auto down = [&e](std::uint32_t to) {
        if (to != no_node) e.emplace_back(to, true);
      };
      for (const declared_property& p : s.properties) down(p.schema);
      for (const pattern_property& p : s.pattern_properties) down(p.schema);
      down(s.additional_schema);
      down(s.property_names);
      down(s.unevaluated_properties);
      for (std::uint32_t p : s.prefix_items) down(p);
      down(s.items);
      down(s.contains);
      down(s.unevaluated_items);
      in_place_edges(n, [&e](std::uint32_t to, std::string_view) {
        if (to != no_node) e.emplace_back(to, false);
      });
    }
    std::vector<std::uint64_t> best(count, 0);
    std::vector<std::uint8_t> seen(count, 0), on_stack(count, 0), reported(count, 0);
    struct entry {
      std::uint32_t n;
      std::uint64_t depth;
      std::size_t next;
    };
    std::vector<entry> stack;
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
    enter(t_.root, 0);
    while (!stack.empty()) {
      const std::uint32_t n = stack.back().n;
      const std::uint64_t depth = stack.back().depth;
      if (stack.back().next == edges[n].size()) {
        on_stack[n] = 0;
        stack.pop_back();
        continue;
      }
      const auto [to, descends] = edges[n][stack.back().next++];
      enter(to, depth + (descends ? 1 : 0));
    }
  }

  struct resource {
    json::value json;
    std::string path;
  };

  tables& t_;
  std::vector<compile_error>& errors_;
  bool draft7_ = false;
  bool too_many_ = false;
  std::vector<std::uint32_t> refs_;          // reference nodes, resolved at the end
  std::vector<std::uint32_t> dynamic_refs_;  // $dynamicRef nodes, likewise
  std::unordered_map<std::string, std::uint32_t> resource_ids_;
  std::unordered_map<std::string, resource> resources_;
  std::unordered_map<std::string, std::uint32_t> anchors_;
  std::unordered_map<const json::detail::node*, std::uint32_t> locations_;
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
