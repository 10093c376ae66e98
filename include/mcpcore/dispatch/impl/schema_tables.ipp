// SPDX-License-Identifier: Apache-2.0
// The compiled form of an input schema, shared by the compiler (schema_compile.ipp), which builds
// it, and the validator (schema_validate.ipp), which reads it: the owned copy of the schema's
// JSON, exact number comparison, JSON equality, the node tables, and the compiled_schema members
// that only hold or inspect them.
#ifndef MCPCORE_IMPL_SCHEMA_TABLES_IPP
#define MCPCORE_IMPL_SCHEMA_TABLES_IPP

#include <mcpcore/dispatch/schema.hpp>

#include <mcpcore/dispatch/impl/schema_regex.ipp>

#include <mcpcore/wire/json_writer.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE
namespace schema {

namespace detail {

// An absent edge: no `items` or `additionalProperties` schema, or a `$ref` that did not resolve.
inline constexpr std::uint32_t no_node = 0xFFFFFFFFU;

// ---- an owned copy of the schema's JSON ---------------------------------------------------------

// The compiled schema keeps `const`, `enum` and numeric bounds as json::value views. They point
// into this copy of the source tape: the nodes (the same layout json::document produces) and the
// bytes of every string and spelled number, so the caller's document may go away.
struct owned_json {
  std::unique_ptr<json::detail::node[]> nodes;
  std::unique_ptr<char[]> text;

  [[nodiscard]] json::value root() const noexcept { return json::value{nodes.get()}; }
};

inline bool has_text(const json::detail::node& n) noexcept {
  return n.kind == json::kind::string ||
         (n.kind == json::kind::number && (n.flags & json::detail::node_text) != 0);
}

inline owned_json copy_json(json::value v) {
  const json::detail::node* src = v.node();
  const std::size_t count = src->span;
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < count; ++i)
    if (has_text(src[i])) bytes += src[i].size;
  owned_json out;
  out.nodes = std::make_unique_for_overwrite<json::detail::node[]>(count);
  out.text = std::make_unique_for_overwrite<char[]>(bytes == 0 ? 1 : bytes);
  char* p = out.text.get();
  for (std::size_t i = 0; i < count; ++i) {
    json::detail::node n = src[i];
    if (has_text(n)) {
      if (n.size != 0) std::memcpy(p, n.text, n.size);
      n.text = p;
      p += n.size;
    }
    out.nodes[i] = n;
  }
  return out;
}

// ---- numbers ------------------------------------------------------------------------------------

// A JSON number as the parser classified it: an integer literal (int64 or above INT64_MAX) or
// anything else, read as the nearest double.
struct number {
  enum class type : std::uint8_t { i64, u64, f64 } kind = type::i64;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double d = 0;
};

inline number read_number(json::value v) noexcept {
  number n;
  if (auto i = v.to_int64()) {
    n.i = *i;
  } else if (auto u = v.to_uint64()) {
    n.kind = number::type::u64;
    n.u = *u;
  } else {
    n.kind = number::type::f64;
    n.d = v.to_double().value_or(0.0);
  }
  return n;
}

template <class T>
constexpr int three_way(T a, T b) noexcept {
  return a < b ? -1 : (b < a ? 1 : 0);
}

// Exact comparison of a double with an integer: no rounding of either side.
inline int compare_double_int(double d, std::int64_t i) noexcept {
  constexpr double two63 = 9223372036854775808.0;
  if (d < -two63) return -1;
  if (d >= two63) return 1;
  const double t = std::trunc(d);
  const auto ti = static_cast<std::int64_t>(t);
  if (ti != i) return three_way(ti, i);
  return three_way(d - t, 0.0);
}

inline int compare_double_uint(double d, std::uint64_t u) noexcept {
  constexpr double two64 = 18446744073709551616.0;
  if (d < 0) return -1;
  if (d >= two64) return 1;
  const double t = std::trunc(d);
  const auto tu = static_cast<std::uint64_t>(t);
  if (tu != u) return three_way(tu, u);
  return three_way(d - t, 0.0);
}

// Compares two numbers by value: integers exactly, doubles as doubles, mixed pairs exactly.
inline int compare(const number& a, const number& b) noexcept {
  using t = number::type;
  switch (a.kind) {
    case t::i64:
      switch (b.kind) {
        case t::i64:
          return three_way(a.i, b.i);
        case t::u64:
          return a.i < 0 ? -1 : three_way(static_cast<std::uint64_t>(a.i), b.u);
        case t::f64:
          return -compare_double_int(b.d, a.i);
      }
      break;
    case t::u64:
      switch (b.kind) {
        case t::i64:
          return b.i < 0 ? 1 : three_way(a.u, static_cast<std::uint64_t>(b.i));
        case t::u64:
          return three_way(a.u, b.u);
        case t::f64:
          return -compare_double_uint(b.d, a.u);
      }
      break;
    case t::f64:
      switch (b.kind) {
        case t::i64:
          return compare_double_int(a.d, b.i);
        case t::u64:
          return compare_double_uint(a.d, b.u);
        case t::f64:
          return three_way(a.d, b.d);
      }
      break;
  }
  return 0;
}

// JSON equality (JSON Schema's): numbers by value (1 == 1.0), strings by code units, arrays in
// order, objects as unordered member sets.
inline bool json_equal(json::value a, json::value b) noexcept {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case json::kind::null:
      return true;
    case json::kind::boolean:
      return a.as_bool() == b.as_bool();
    case json::kind::number:
      return compare(read_number(a), read_number(b)) == 0;
    case json::kind::string:
      return a.as_string() == b.as_string();
    case json::kind::array: {
      if (a.size() != b.size()) return false;
      auto bi = b.elements().begin();
      for (json::value e : a.elements()) {
        if (!json_equal(e, *bi)) return false;
        ++bi;
      }
      return true;
    }
    case json::kind::object: {
      if (a.size() != b.size()) return false;
      for (json::member m : a.members()) {
        const json::value other = b.find(m.key);
        if (!other.exists() || !json_equal(m.value(), other)) return false;
      }
      // Both directions, for documents parsed with duplicate keys allowed.
      for (json::member m : b.members())
        if (!a.find(m.key).exists()) return false;
      return true;
    }
  }
  return false;
}

// ---- text helpers shared by both sides ----------------------------------------------------------

// Appends `name` as one JSON pointer segment (RFC 6901: "~" -> "~0", "/" -> "~1").
inline void append_segment(std::string& out, std::string_view name) {
  for (char c : name) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
}

inline std::string json_quoted(std::string_view s) {
  std::string out;
  json::append_escaped(out, s);
  return out;
}

inline std::string compact(json::value v) {
  std::string out;
  json::writer w{out};
  w.value(v);
  return out;
}

// ---- the compiled form --------------------------------------------------------------------------

inline constexpr std::uint8_t t_null = 1;
inline constexpr std::uint8_t t_boolean = 2;
inline constexpr std::uint8_t t_object = 4;
inline constexpr std::uint8_t t_array = 8;
inline constexpr std::uint8_t t_number = 16;
inline constexpr std::uint8_t t_string = 32;
inline constexpr std::uint8_t t_integer = 64;

struct type_name {
  std::string_view name;
  std::uint8_t bit;
};
// In the order reasons list them.
inline constexpr type_name type_names[] = {
    {"string", t_string}, {"integer", t_integer}, {"number", t_number}, {"boolean", t_boolean},
    {"object", t_object}, {"array", t_array},     {"null", t_null},
};

inline std::string type_list(std::uint8_t types) {
  std::string out;
  int count = 0;
  for (const type_name& t : type_names) {
    if ((types & t.bit) == 0) continue;
    if (count++ > 0) out += ", ";
    out += t.name;
  }
  return count > 1 ? "one of " + out : out;
}

enum class shape : std::uint8_t { content, accept_all, reject_all };
enum class additional : std::uint8_t { allow, forbid, schema };

struct declared_property {
  std::string name;
  std::string segment;  // the name as an escaped JSON pointer segment
  std::uint32_t schema = no_node;
};

struct pattern_property {
  pattern_matcher matcher;
  std::uint32_t schema = no_node;
};

struct dependent_names {
  std::string name;                 // when this member is present...
  std::string segment;              // (escaped, for paths)
  std::vector<std::string> needed;  // ...these must be too
};

struct dependent_schema {
  std::string name;
  std::uint32_t schema = no_node;
};

struct bound {
  json::value text;  // the schema's number, quoted in reasons
  number value;
};

struct node {
  std::string path;  // JSON pointer into the schema
  detail::shape shape = detail::shape::content;
  // $ref: the reference as written (for errors), the base it resolves against, and its target.
  std::string ref_text;
  std::string ref_base;
  std::uint32_t ref = no_node;
  bool draft7 = false;  // the document declared draft-07: nothing may sit beside $ref
  // $dynamicRef (docs/schema.md#references): the schema resource (nearest `$id`) this node is
  // in, its `$dynamicAnchor`, and a `$dynamicRef`'s static target and the anchor name it looks
  // up in the dynamic scope (empty: it behaves as `$ref`).
  std::uint32_t resource = 0;
  std::string dynamic_anchor;
  std::string dynamic_text;
  std::string dynamic_base;
  std::uint32_t dynamic_ref = no_node;
  std::string dynamic_name;

  std::uint8_t types = 0;  // 0: any type
  json::value const_value;
  std::string const_text;  // quoted in reasons when short enough
  json::value enum_values;
  std::string enum_text;
  std::optional<std::uint64_t> min_length, max_length;
  std::optional<pattern_matcher> pattern;
  std::optional<bound> minimum, exclusive_minimum, maximum, exclusive_maximum, multiple_of;
  // objects
  std::vector<std::string> required;
  std::vector<declared_property> properties;  // declared order
  std::vector<std::uint32_t> by_name;         // indices into properties, sorted by name
  std::vector<pattern_property> pattern_properties;
  detail::additional additional = detail::additional::allow;
  std::uint32_t additional_schema = no_node;
  std::uint32_t property_names = no_node;
  std::optional<std::uint64_t> min_properties, max_properties;
  std::vector<dependent_names> dependent_required;
  std::vector<dependent_schema> dependent_schemas;
  std::uint32_t unevaluated_properties = no_node;
  // arrays
  std::optional<std::uint64_t> min_items, max_items;
  bool unique_items = false;
  std::vector<std::uint32_t> prefix_items;
  std::uint32_t items = no_node;
  std::uint32_t contains = no_node;
  std::optional<std::uint64_t> min_contains, max_contains;
  std::uint32_t unevaluated_items = no_node;
  // in-place applicators
  std::vector<std::uint32_t> all_of, any_of, one_of;
  std::string any_of_hint, one_of_hint;  // strict: the required sets, for reasons
  std::uint32_t not_schema = no_node, if_schema = no_node, then_schema = no_node,
                else_schema = no_node;

  [[nodiscard]] bool declares(std::string_view name) const noexcept {
    const auto it = std::lower_bound(by_name.begin(), by_name.end(), name,
                                     [this](std::uint32_t i, std::string_view k) {
                                       return std::string_view{properties[i].name} < k;
                                     });
    return it != by_name.end() && properties[*it].name == name;
  }
  // Whether evaluating this node must collect which members and items it evaluated
  // (docs/schema.md#annotations).
  [[nodiscard]] bool collects() const noexcept {
    return unevaluated_properties != no_node || unevaluated_items != no_node;
  }
};

struct tables {
  owned_json source;
  std::deque<node> nodes;  // a deque: references stay valid while compilation appends
  std::uint32_t root = 0;
  compile_options options;
  // Per schema resource: its `$dynamicAnchor` names and their nodes; `dynamic` when some
  // `$dynamicRef` looks one up (the validator tracks the dynamic scope only then).
  std::vector<std::vector<std::pair<std::string, std::uint32_t>>> dynamic_anchors;
  bool dynamic = false;

  // The schema a node's $ref chain ends at when the node holds nothing but the reference (the
  // root's "after $ref resolution" of root_is_closed and root_declares).
  [[nodiscard]] const node& through_refs(std::uint32_t n) const noexcept {
    for (std::size_t steps = 0; steps < nodes.size(); ++steps) {
      const node& s = nodes[n];
      if (s.ref == no_node || s.shape != shape::content || s.types != 0 ||
          !s.properties.empty() || s.additional != additional::allow)
        return s;
      n = s.ref;
    }
    return nodes[n];
  }
};

}  // namespace detail

// What compiled_schema's pointer owns: the tables stay out of the public header.
struct compiled_schema::impl {
  detail::tables tables;
};

MCPCORE_DECL compiled_schema::compiled_schema(compiled_schema&& other) noexcept
    : impl_(std::exchange(other.impl_, nullptr)) {}

MCPCORE_DECL compiled_schema& compiled_schema::operator=(compiled_schema&& other) noexcept {
  if (this != &other) {
    delete impl_;
    impl_ = std::exchange(other.impl_, nullptr);
  }
  return *this;
}

MCPCORE_DECL compiled_schema::~compiled_schema() { delete impl_; }

MCPCORE_DECL bool compiled_schema::root_is_closed() const noexcept {
  if (impl_ == nullptr) return false;
  const detail::node& r = impl_->tables.through_refs(impl_->tables.root);
  return r.shape == detail::shape::content &&
         (r.additional == detail::additional::forbid ||
          (r.unevaluated_properties != detail::no_node &&
           impl_->tables.nodes[r.unevaluated_properties].shape == detail::shape::reject_all));
}

MCPCORE_DECL bool compiled_schema::root_declares(std::string_view property) const noexcept {
  if (impl_ == nullptr) return false;
  const detail::node& r = impl_->tables.through_refs(impl_->tables.root);
  return r.shape == detail::shape::content && r.declares(property);
}

}  // namespace schema
MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_SCHEMA_TABLES_IPP
