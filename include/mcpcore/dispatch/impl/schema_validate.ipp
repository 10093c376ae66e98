// SPDX-License-Identifier: Apache-2.0
// The input-schema validator: walks an instance against the tables of schema_tables.ipp in the
// documented order (docs/schema.md#validation-order), collects the annotations `unevaluated*`
// need (docs/schema.md#annotations) and reports the first violation.
#ifndef MCPCORE_IMPL_SCHEMA_VALIDATE_IPP
#define MCPCORE_IMPL_SCHEMA_VALIDATE_IPP

#include <mcpcore/dispatch/schema.hpp>

#include <mcpcore/dispatch/impl/schema_regex.ipp>
#include <mcpcore/dispatch/impl/schema_tables.ipp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE
namespace schema {

namespace detail {

// Unicode code points of valid UTF-8 (the parser validated it): bytes that are not continuation
// bytes.
inline std::size_t code_points(std::string_view s) noexcept {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0U) != 0x80U ? 1 : 0;
  return n;
}

inline std::string_view kind_name(json::kind k) noexcept {
  switch (k) {
    case json::kind::null:
      return "null";
    case json::kind::boolean:
      return "boolean";
    case json::kind::number:
      return "number";
    case json::kind::string:
      return "string";
    case json::kind::array:
      return "array";
    case json::kind::object:
      return "object";
  }
  return "value";
}

// A hash consistent with json_equal: numbers hash by their double value (equal numbers have
// equal doubles), object members in any order.
inline std::uint64_t mix(std::uint64_t h) noexcept {
  h ^= h >> 33U;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33U;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33U;
  return h;
}

inline std::uint64_t hash_text(std::string_view s) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

inline std::uint64_t json_hash(json::value v) noexcept {
  switch (v.kind()) {
    case json::kind::null:
      return 0x1;
    case json::kind::boolean:
      return v.as_bool() ? 0x2 : 0x3;
    case json::kind::number: {
      const double d = v.to_double().value_or(0.0);
      return mix(d == 0.0 ? 0x4 : std::bit_cast<std::uint64_t>(d));
    }
    case json::kind::string:
      return mix(hash_text(v.as_string()) ^ 0x5);
    case json::kind::array: {
      std::uint64_t h = 0x6;
      for (json::value e : v.elements()) h = mix(h * 31U + json_hash(e));
      return h;
    }
    case json::kind::object: {
      std::uint64_t h = 0x7;
      for (json::member m : v.members()) h += mix(hash_text(m.key) * 31U + json_hash(m.value()));
      return mix(h);
    }
  }
  return 0;
}

// multipleOf: integers exactly; otherwise the quotient must be within 1e-9 of an integer
// (docs/schema.md#numbers).
inline bool is_multiple(const number& v, const number& m) noexcept {
  using t = number::type;
  if (v.kind != t::f64 && m.kind != t::f64) {
    const std::uint64_t divisor = m.kind == t::u64 ? m.u : static_cast<std::uint64_t>(m.i);
    const std::uint64_t magnitude =
        v.kind == t::u64 ? v.u
        : v.i < 0        ? static_cast<std::uint64_t>(-(v.i + 1)) + 1U
                         : static_cast<std::uint64_t>(v.i);
    return divisor != 0 && magnitude % divisor == 0;
  }
  const auto as_double = [](const number& n) {
    return n.kind == t::f64   ? n.d
           : n.kind == t::u64 ? static_cast<double>(n.u)
                              : static_cast<double>(n.i);
  };
  const double q = as_double(v) / as_double(m);
  if (!std::isfinite(q)) return false;
  if (std::abs(q) >= 9007199254740992.0) return true;  // every double this large is an integer
  return std::abs(q - std::round(q)) <= 1e-9;
}

// ---- the validator ------------------------------------------------------------------------------

// One step of the instance path, on the validator's stack: a declared name (already escaped),
// "*" for a caller-supplied name, or an array index.
struct path_frame {
  const path_frame* parent = nullptr;
  std::string_view segment;
  std::size_t index = 0;
  bool is_index = false;
};

inline void append_path(std::string& out, const path_frame* f) {
  if (f == nullptr) return;
  append_path(out, f->parent);
  out += '/';
  if (f->is_index) {
    out += std::to_string(f->index);
  } else {
    out += f->segment;
  }
}

// The annotations `unevaluatedProperties` and `unevaluatedItems` read: which members (by
// position in the object) and which items of the value at hand some keyword evaluated.
struct evaluated {
  std::vector<bool> members;
  bool all_members = false;
  std::vector<bool> items;
  std::size_t prefix = 0;  // items [0, prefix) were evaluated
  bool all_items = false;

  void mark_member(std::size_t i, std::size_t count) {
    if (members.size() < count) members.resize(count, false);
    members[i] = true;
  }
  void mark_item(std::size_t i, std::size_t count) {
    if (items.size() < count) items.resize(count, false);
    items[i] = true;
  }
  [[nodiscard]] bool member(std::size_t i) const noexcept {
    return all_members || (i < members.size() && members[i]);
  }
  [[nodiscard]] bool item(std::size_t i) const noexcept {
    return all_items || i < prefix || (i < items.size() && items[i]);
  }
  void merge(const evaluated& o) {
    all_members = all_members || o.all_members;
    if (members.size() < o.members.size()) members.resize(o.members.size(), false);
    for (std::size_t i = 0; i < o.members.size(); ++i)
      if (o.members[i]) members[i] = true;
    all_items = all_items || o.all_items;
    prefix = std::max(prefix, o.prefix);
    if (items.size() < o.items.size()) items.resize(o.items.size(), false);
    for (std::size_t i = 0; i < o.items.size(); ++i)
      if (o.items[i]) items[i] = true;
  }
};

class validator {
 public:
  explicit validator(const tables& t) noexcept : t_(t) {}

  std::optional<violation> run(json::value instance) {
    if (check(t_.root, instance, nullptr, 0, nullptr)) return std::nullopt;
    if (exhausted_)
      return violation{std::string{},
                       "validation work budget exhausted (more than " +
                           std::to_string(t_.options.max_validation_steps) +
                           " schema evaluations for this value)"};
    if (too_deep_)
      return violation{std::string{},
                       "the schema's evaluation nests deeper than " +
                           std::to_string(t_.options.max_evaluation_depth) +
                           " levels for this value"};
    return std::move(found_);
  }

 private:
  // Records the violation at `at` (outside alternatives only) and returns false. The reason is
  // built only when it is recorded, so probing alternatives allocates nothing.
  template <class Reason>
  bool fail(const path_frame* at, Reason&& reason) {
    if (report_ && !found_) {
      violation v;
      append_path(v.path, at);
      v.reason = std::forward<Reason>(reason)();
      found_ = std::move(v);
    }
    return false;
  }

  // The same, one segment below `at` (an escaped name, or "*").
  template <class Reason>
  bool fail_child(const path_frame* at, std::string_view segment, Reason&& reason) {
    const path_frame child{at, segment, 0, false};
    return fail(&child, std::forward<Reason>(reason));
  }

  [[nodiscard]] bool stopped() const noexcept { return exhausted_ || too_deep_; }

  // Keywords run in the documented order (docs/schema.md#validation-order); the first failure is
  // the answer. `depth` counts instance levels below the root; `out`, when set, receives the
  // members and items this schema evaluated (only when it holds).
  bool check(std::uint32_t index, json::value v, const path_frame* at, std::uint32_t depth,
             evaluated* out) {
    if (stopped()) return false;
    if (++steps_ > t_.options.max_validation_steps) {
      exhausted_ = true;
      return false;
    }
    if (nesting_ >= t_.options.max_evaluation_depth) {
      too_deep_ = true;
      return false;
    }
    const node& s = t_.nodes[index];
    if (s.shape == shape::accept_all) return true;
    if (s.shape == shape::reject_all)
      return fail(at, [] { return std::string{"no value is allowed here (the schema is false)"}; });
    // Strict: this cuts recursion through `$ref`; lenient recursion follows the instance.
    if (t_.options.strict && depth > t_.options.max_depth) {
      return fail(at, [this] {
        return "the value nests deeper than the schema's depth cap of " +
               std::to_string(t_.options.max_depth);
      });
    }
    ++nesting_;
    // The dynamic scope: the schema resources entered on the way here, outermost first.
    const bool entered = t_.dynamic && (scope_.empty() || scope_.back() != s.resource);
    if (entered) scope_.push_back(s.resource);
    bool ok = false;
    if (s.collects()) {
      evaluated local;
      ok = check_keywords(s, v, at, depth, &local);
      if (ok && out != nullptr) out->merge(local);
    } else {
      ok = check_keywords(s, v, at, depth, out);
    }
    if (entered) scope_.pop_back();
    --nesting_;
    return ok;
  }

  bool check_keywords(const node& s, json::value v, const path_frame* at, std::uint32_t depth,
                      evaluated* out) {
    if (s.ref != no_node && !check(s.ref, v, at, depth, out)) return false;
    if (s.dynamic_ref != no_node && !check(dynamic_target(s), v, at, depth, out)) return false;
    if (s.types != 0 && !check_type(s, v, at)) return false;
    if (s.const_value.exists() && !json_equal(v, s.const_value)) {
      return fail(at, [&s] {
        return s.const_text.empty() ? std::string{"the value does not equal the schema's const"}
                                    : "the value must equal " + s.const_text;
      });
    }
    if (s.enum_values.exists() && !in_enum(s, v)) {
      return fail(at, [&s] {
        return s.enum_text.empty() ? std::string{"the value is not one of the enum values"}
                                   : "the value is not one of " + s.enum_text;
      });
    }
    switch (v.kind()) {
      case json::kind::string:
        if (!check_string(s, v.as_string(), at)) return false;
        break;
      case json::kind::number:
        if (!check_number(s, v, at)) return false;
        break;
      case json::kind::object:
        if (!check_object(s, v, at, depth, out)) return false;
        break;
      case json::kind::array:
        if (!check_array(s, v, at, depth, out)) return false;
        break;
      default:
        break;
    }
    for (std::uint32_t sub : s.all_of)
      if (!check(sub, v, at, depth, out)) return false;
    if (!s.any_of.empty() && !check_any_of(s, v, at, depth, out)) return false;
    if (!s.one_of.empty() && !check_one_of(s, v, at, depth, out)) return false;
    if (s.not_schema != no_node) {
      const bool held = probe(s.not_schema, v, at, depth, nullptr);
      if (stopped()) return false;
      if (held)
        return fail(at, [] { return std::string{"the value must not match the 'not' schema"}; });
    }
    if (s.if_schema != no_node && !check_if(s, v, at, depth, out)) return false;
    if (v.is_object() && !s.dependent_schemas.empty() &&
        !check_dependent_schemas(s, v, at, depth, out))
      return false;
    if (v.is_object() && s.unevaluated_properties != no_node &&
        !check_unevaluated_properties(s, v, at, depth, out))
      return false;
    if (v.is_array() && s.unevaluated_items != no_node &&
        !check_unevaluated_items(s, v, at, depth, out))
      return false;
    return true;
  }

  // A `$dynamicRef`'s target: the outermost resource of the dynamic scope that declares the
  // `$dynamicAnchor`, else the static target (docs/schema.md#references).
  [[nodiscard]] std::uint32_t dynamic_target(const node& s) const noexcept {
    if (s.dynamic_name.empty()) return s.dynamic_ref;
    for (std::uint32_t resource : scope_) {
      for (const auto& [name, target] : t_.dynamic_anchors[resource])
        if (name == s.dynamic_name) return target;
    }
    return s.dynamic_ref;
  }

  // Evaluates a subschema without recording its violation (only the enclosing keyword
  // reports).
  bool probe(std::uint32_t sub, json::value v, const path_frame* at, std::uint32_t depth,
             evaluated* out) {
    const bool saved = report_;
    report_ = false;
    const bool ok = check(sub, v, at, depth, out);
    report_ = saved;
    return ok;
  }

  bool check_any_of(const node& s, json::value v, const path_frame* at, std::uint32_t depth,
                    evaluated* out) {
    bool any = false;
    for (std::uint32_t alt : s.any_of) {
      if (out == nullptr) {
        if (probe(alt, v, at, depth, nullptr)) {
          any = true;
          break;
        }
      } else {
        // Annotations come from every alternative that holds: none may be skipped.
        evaluated e;
        if (probe(alt, v, at, depth, &e)) {
          any = true;
          out->merge(e);
        }
      }
      if (stopped()) return false;
    }
    if (stopped()) return false;
    if (!any)
      return fail(at,
                  [&s] { return "none of the anyOf alternatives is satisfied" + s.any_of_hint; });
    return true;
  }

  bool check_one_of(const node& s, json::value v, const path_frame* at, std::uint32_t depth,
                    evaluated* out) {
    int matched = 0;
    evaluated kept;
    // A second match already decides: the remaining alternatives are not evaluated.
    for (std::uint32_t alt : s.one_of) {
      evaluated e;
      if (probe(alt, v, at, depth, out != nullptr ? &e : nullptr)) {
        if (++matched > 1) break;
        if (out != nullptr) kept = std::move(e);
      }
      if (stopped()) return false;
    }
    if (stopped()) return false;
    if (matched == 0)
      return fail(at,
                  [&s] { return "none of the oneOf alternatives is satisfied" + s.one_of_hint; });
    if (matched > 1) {
      return fail(at, [&s] {
        return "more than one oneOf alternative is satisfied; exactly one must be" +
               s.one_of_hint;
      });
    }
    if (out != nullptr) out->merge(kept);
    return true;
  }

  bool check_if(const node& s, json::value v, const path_frame* at, std::uint32_t depth,
                evaluated* out) {
    evaluated e;
    const bool held = probe(s.if_schema, v, at, depth, out != nullptr ? &e : nullptr);
    if (stopped()) return false;
    if (held) {
      if (out != nullptr) out->merge(e);
      return s.then_schema == no_node || check(s.then_schema, v, at, depth, out);
    }
    return s.else_schema == no_node || check(s.else_schema, v, at, depth, out);
  }

  bool check_type(const node& s, json::value v, const path_frame* at) {
    std::uint8_t bit = 0;
    switch (v.kind()) {
      case json::kind::null:
        bit = t_null;
        break;
      case json::kind::boolean:
        bit = t_boolean;
        break;
      case json::kind::string:
        bit = t_string;
        break;
      case json::kind::array:
        bit = t_array;
        break;
      case json::kind::object:
        bit = t_object;
        break;
      case json::kind::number:
        if ((s.types & t_number) != 0) return true;
        if ((s.types & t_integer) != 0) {
          // docs/schema.md#numbers: an integer is an integer literal (not 1.0) in signed 64 bits.
          if (!v.is_integer())
            return fail(at, [] {
              return std::string{
                  "expected an integer, got a number with a fraction part or exponent"};
            });
          if (!v.to_int64())
            return fail(at, [] { return std::string{"integer out of range (signed 64-bit)"}; });
          return true;
        }
        bit = t_number;
        break;
    }
    if ((s.types & bit) != 0) return true;
    return fail(at, [&s, v] {
      return "expected " + type_list(s.types) + ", got " + std::string{kind_name(v.kind())};
    });
  }

  static bool in_enum(const node& s, json::value v) noexcept {
    for (json::value e : s.enum_values.elements())
      if (json_equal(v, e)) return true;
    return false;
  }

  bool check_string(const node& s, std::string_view str, const path_frame* at) {
    if (s.min_length || s.max_length) {
      // Lengths count Unicode code points, as JSON Schema does; bytes bound them from above.
      const std::size_t bytes = str.size();
      const bool need_count =
          (s.min_length && bytes >= *s.min_length) || (s.max_length && bytes > *s.max_length);
      const std::size_t points = need_count ? code_points(str) : bytes;
      if (s.min_length && points < *s.min_length) {
        return fail(at, [&s] {
          return "the string is shorter than minLength " + std::to_string(*s.min_length) +
                 " (code points)";
        });
      }
      if (s.max_length && points > *s.max_length) {
        return fail(at, [&s] {
          return "the string is longer than maxLength " + std::to_string(*s.max_length) +
                 " (code points)";
        });
      }
    }
    if (s.pattern && !s.pattern->search(str))
      return fail(at, [&s] { return "the string does not match the pattern " + s.pattern->text; });
    return true;
  }

  bool check_number(const node& s, json::value v, const path_frame* at) {
    if (!s.minimum && !s.exclusive_minimum && !s.maximum && !s.exclusive_maximum &&
        !s.multiple_of)
      return true;
    const number n = read_number(v);
    const auto text = [](const bound& b) { return compact(b.text); };
    if (s.minimum && compare(n, s.minimum->value) < 0)
      return fail(at, [&] { return "the value is less than minimum " + text(*s.minimum); });
    if (s.exclusive_minimum && compare(n, s.exclusive_minimum->value) <= 0)
      return fail(at, [&] {
        return "the value must be greater than exclusiveMinimum " + text(*s.exclusive_minimum);
      });
    if (s.maximum && compare(n, s.maximum->value) > 0)
      return fail(at, [&] { return "the value is greater than maximum " + text(*s.maximum); });
    if (s.exclusive_maximum && compare(n, s.exclusive_maximum->value) >= 0)
      return fail(at, [&] {
        return "the value must be less than exclusiveMaximum " + text(*s.exclusive_maximum);
      });
    if (s.multiple_of && !is_multiple(n, s.multiple_of->value))
      return fail(at, [&] { return "the value is not a multiple of " + text(*s.multiple_of); });
    return true;
  }

  // required and dependentRequired (declared order), the member counts, declared properties
  // (declared order), then every member in document order against patternProperties and
  // additionalProperties, then propertyNames.
  bool check_object(const node& s, json::value v, const path_frame* at, std::uint32_t depth,
                    evaluated* out) {
    for (const std::string& name : s.required) {
      if (!v.find(name).exists()) {
        std::string segment;
        if (report_) append_segment(segment, name);
        return fail_child(at, segment, [] { return std::string{"required property is missing"}; });
      }
    }
    for (const dependent_names& d : s.dependent_required) {
      if (!v.find(d.name).exists()) continue;
      for (const std::string& name : d.needed) {
        if (v.find(name).exists()) continue;
        std::string segment;
        if (report_) append_segment(segment, name);
        return fail_child(at, segment, [&d] {
          return "required property is missing (dependentRequired: " + json_quoted(d.name) +
                 " is present)";
        });
      }
    }
    const std::size_t count = v.size();
    if (s.min_properties && count < *s.min_properties)
      return fail(at, [&s] {
        return "the object has fewer than minProperties " + std::to_string(*s.min_properties) +
               " members";
      });
    if (s.max_properties && count > *s.max_properties)
      return fail(at, [&s] {
        return "the object has more than maxProperties " + std::to_string(*s.max_properties) +
               " members";
      });
    for (const declared_property& p : s.properties) {
      const json::value pv = v.find(p.name);
      if (!pv.exists()) continue;
      const path_frame f{at, p.segment, 0, false};
      if (!check(p.schema, pv, &f, depth + 1, nullptr)) return false;
    }
    const bool members_pass = !s.pattern_properties.empty() ||
                              s.additional != additional::allow || out != nullptr;
    if (members_pass) {
      std::size_t position = 0;
      for (json::member m : v.members()) {
        const std::size_t pos = position++;
        bool matched = s.declares(m.key);
        const path_frame f{at, "*", 0, false};
        for (const pattern_property& p : s.pattern_properties) {
          if (!p.matcher.search(m.key)) continue;
          matched = true;
          if (!check(p.schema, m.value(), &f, depth + 1, nullptr)) return false;
        }
        if (!matched && s.additional == additional::forbid) {
          return fail_child(at, "*", [] {
            return std::string{
                "property is not declared by the schema (additionalProperties is false)"};
          });
        }
        if (!matched && s.additional == additional::schema &&
            !check(s.additional_schema, m.value(), &f, depth + 1, nullptr))
          return false;
        if (out != nullptr && (matched || s.additional != additional::allow))
          out->mark_member(pos, count);
      }
    }
    if (s.property_names != no_node) {
      for (json::member m : v.members()) {
        json::detail::node name_node{};
        name_node.text = m.key.data();
        name_node.size = static_cast<std::uint32_t>(m.key.size());
        name_node.span = 1;
        name_node.kind = json::kind::string;
        const path_frame f{at, "*", 0, false};
        if (!check(s.property_names, json::value{&name_node}, &f, depth + 1, nullptr)) {
          // The name's own violation would describe the caller's string: say what it is.
          if (report_ && found_) found_->reason = "property name: " + found_->reason;
          return false;
        }
      }
    }
    return true;
  }

  bool check_dependent_schemas(const node& s, json::value v, const path_frame* at,
                               std::uint32_t depth, evaluated* out) {
    for (const dependent_schema& d : s.dependent_schemas) {
      if (!v.find(d.name).exists()) continue;
      if (!check(d.schema, v, at, depth, out)) return false;
    }
    return true;
  }

  bool check_unevaluated_properties(const node& s, json::value v, const path_frame* at,
                                    std::uint32_t depth, evaluated* out) {
    const bool closed = t_.nodes[s.unevaluated_properties].shape == shape::reject_all;
    std::size_t pos = 0;
    for (json::member m : v.members()) {
      const std::size_t i = pos++;
      if (out->member(i)) continue;
      if (closed) {
        return fail_child(at, "*", [] {
          return std::string{
              "property is not evaluated by the schema (unevaluatedProperties is false)"};
        });
      }
      const path_frame f{at, "*", 0, false};
      if (!check(s.unevaluated_properties, m.value(), &f, depth + 1, nullptr)) return false;
    }
    out->all_members = true;
    return true;
  }

  bool check_array(const node& s, json::value v, const path_frame* at, std::uint32_t depth,
                   evaluated* out) {
    const std::size_t size = v.size();
    if (s.min_items && size < *s.min_items)
      return fail(at, [&s] {
        return "the array has fewer than minItems " + std::to_string(*s.min_items) + " items";
      });
    if (s.max_items && size > *s.max_items)
      return fail(at, [&s] {
        return "the array has more than maxItems " + std::to_string(*s.max_items) + " items";
      });
    if (s.unique_items && !check_unique(v, at)) return false;
    std::size_t i = 0;
    std::size_t matches = 0;
    const bool items_false = s.items != no_node && !s.prefix_items.empty() &&
                             t_.nodes[s.items].shape == shape::reject_all;
    for (json::value e : v.elements()) {
      const path_frame f{at, {}, i, true};
      if (i < s.prefix_items.size()) {
        if (!check(s.prefix_items[i], e, &f, depth + 1, nullptr)) return false;
      } else if (s.items != no_node) {
        if (items_false) {
          return fail(&f, [&s] {
            return "the array has more than the " + std::to_string(s.prefix_items.size()) +
                   " items prefixItems declares (items is false)";
          });
        }
        if (!check(s.items, e, &f, depth + 1, nullptr)) return false;
      }
      if (s.contains != no_node) {
        const bool held = probe(s.contains, e, &f, depth + 1, nullptr);
        if (stopped()) return false;
        if (held) {
          ++matches;
          if (out != nullptr) out->mark_item(i, size);
        }
      }
      ++i;
    }
    if (out != nullptr) {
      out->prefix = std::max(out->prefix, std::min(size, s.prefix_items.size()));
      if (s.items != no_node) out->all_items = true;
    }
    if (s.contains != no_node) {
      const std::uint64_t least = s.min_contains.value_or(1);
      if (matches < least)
        return fail(at, [&s, least] {
          return s.min_contains ? "fewer than minContains " + std::to_string(least) +
                                      " items match 'contains'"
                                : std::string{"no item matches 'contains'"};
        });
      if (s.max_contains && matches > *s.max_contains)
        return fail(at, [&s] {
          return "more than maxContains " + std::to_string(*s.max_contains) +
                 " items match 'contains'";
        });
    }
    return true;
  }

  // Sorts the items by hash and compares only items of equal hash; each comparison counts
  // against the work budget (docs/schema.md#caps).
  bool check_unique(json::value v, const path_frame* at) {
    const std::size_t size = v.size();
    if (size < 2) return true;
    std::vector<json::value> items;
    items.reserve(size);
    std::vector<std::pair<std::uint64_t, std::size_t>> order;
    order.reserve(size);
    for (json::value e : v.elements()) {
      order.emplace_back(json_hash(e), items.size());
      items.push_back(e);
    }
    std::sort(order.begin(), order.end());
    for (std::size_t a = 0; a < order.size(); ++a) {
      for (std::size_t b = a + 1; b < order.size() && order[b].first == order[a].first; ++b) {
        if (++steps_ > t_.options.max_validation_steps) {
          exhausted_ = true;
          return false;
        }
        if (!json_equal(items[order[a].second], items[order[b].second])) continue;
        const std::size_t x = std::min(order[a].second, order[b].second);
        const std::size_t y = std::max(order[a].second, order[b].second);
        return fail(at, [x, y] {
          return "the array's items are not unique (items " + std::to_string(x) + " and " +
                 std::to_string(y) + " are equal)";
        });
      }
    }
    return true;
  }

  bool check_unevaluated_items(const node& s, json::value v, const path_frame* at,
                               std::uint32_t depth, evaluated* out) {
    const bool closed = t_.nodes[s.unevaluated_items].shape == shape::reject_all;
    std::size_t i = 0;
    for (json::value e : v.elements()) {
      const std::size_t index = i++;
      if (out->item(index)) continue;
      const path_frame f{at, {}, index, true};
      if (closed) {
        return fail(&f, [] {
          return std::string{"item is not evaluated by the schema (unevaluatedItems is false)"};
        });
      }
      if (!check(s.unevaluated_items, e, &f, depth + 1, nullptr)) return false;
    }
    out->all_items = true;
    return true;
  }

  const tables& t_;
  std::optional<violation> found_;
  bool report_ = true;
  bool exhausted_ = false;
  bool too_deep_ = false;
  std::uint64_t steps_ = 0;
  std::uint32_t nesting_ = 0;
  std::vector<std::uint32_t> scope_;
};

}  // namespace detail

MCPCORE_DECL std::optional<violation> compiled_schema::validate(json::value instance) const {
  if (impl_ == nullptr) return std::nullopt;
  if (!instance.exists()) return violation{std::string{}, "no value to validate"};
  return detail::validator{impl_->tables}.run(instance);
}

}  // namespace schema
MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_SCHEMA_VALIDATE_IPP
