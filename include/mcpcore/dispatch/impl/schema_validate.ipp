// SPDX-License-Identifier: Apache-2.0
// The input-schema validator: walks an instance against the tables of schema_tables.ipp in the
// documented order (docs/schema.md, "Validation order") and reports the first violation.
#ifndef MCPCORE_IMPL_SCHEMA_VALIDATE_IPP
#define MCPCORE_IMPL_SCHEMA_VALIDATE_IPP

#include <mcpcore/dispatch/schema.hpp>

#include <mcpcore/dispatch/impl/schema_pattern.ipp>
#include <mcpcore/dispatch/impl/schema_tables.ipp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <utility>

MCPCORE_BEGIN_NAMESPACE
namespace schema {

namespace detail {

/// Lenient mode only: how many `anyOf`/`oneOf` alternatives one `validate` call may evaluate.
/// Alternatives that refer to further alternatives can cost exponential time; past the budget
/// the instance is refused with a violation at the root. Strict alternatives are required-only,
/// so strict validation is linear and needs no budget.
inline constexpr std::uint64_t max_alternative_visits = std::uint64_t{1} << 22;

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

class validator {
 public:
  explicit validator(const tables& t) noexcept : t_(t) {}

  std::optional<violation> run(json::value instance) {
    if (check(t_.root, instance, nullptr, 0)) return std::nullopt;
    if (exhausted_)
      return violation{std::string{},
                       "validation work budget exhausted (the schema's alternatives are "
                       "too costly for this value)"};
    return std::move(found_);
  }

 private:
  // Records the violation at `at` (outside alternatives only) and returns false. The reason is
  // built only when it is recorded, so probing alternatives allocates nothing.
  template <class Reason>
  bool fail(const path_frame* at, Reason&& reason) {
    if (report_) {
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

  // Keywords run in the documented order (docs/schema.md, "Validation order"): type, const, enum,
  // the keywords of the value's kind, then anyOf and oneOf; the first failure is the answer.
  // `depth` counts instance levels below the root.
  bool check(std::uint32_t index, json::value v, const path_frame* at, std::uint32_t depth) {
    if (exhausted_) return false;
    const node& s = t_.nodes[index];
    if (s.shape == shape::accept_all) return true;
    if (s.shape == shape::reject_all)
      return fail(at, [] { return std::string{"no value is allowed here (the schema is false)"}; });
    // Strict: this cuts recursion through `$ref`; lenient recursion follows the instance, whose
    // nesting the JSON parser bounds, and alternative cycles were refused at compile time.
    if (t_.options.strict && depth > t_.options.max_depth) {
      return fail(at, [this] {
        return "the value nests deeper than the schema's depth cap of " +
               std::to_string(t_.options.max_depth);
      });
    }
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
        if (!check_object(s, v, at, depth)) return false;
        break;
      case json::kind::array:
        if (!check_array(s, v, at, depth)) return false;
        break;
      default:
        break;
    }
    if (!s.any_of.empty() && !check_any_of(s, v, at, depth)) return false;
    if (!s.one_of.empty() && !check_one_of(s, v, at, depth)) return false;
    return true;
  }

  bool check_any_of(const node& s, json::value v, const path_frame* at, std::uint32_t depth) {
    bool any = false;
    for (std::uint32_t alt : s.any_of) {
      if (probe(alt, v, at, depth)) {
        any = true;
        break;
      }
    }
    if (exhausted_) return false;
    if (!any)
      return fail(at,
                  [&s] { return "none of the anyOf alternatives is satisfied" + s.any_of_hint; });
    return true;
  }

  bool check_one_of(const node& s, json::value v, const path_frame* at, std::uint32_t depth) {
    int matched = 0;
    // A second match already decides: the remaining alternatives are not evaluated.
    for (std::uint32_t alt : s.one_of) {
      if (probe(alt, v, at, depth) && ++matched > 1) break;
    }
    if (exhausted_) return false;
    if (matched == 0)
      return fail(at,
                  [&s] { return "none of the oneOf alternatives is satisfied" + s.one_of_hint; });
    if (matched > 1) {
      return fail(at, [&s] {
        return "more than one oneOf alternative is satisfied; exactly one must be" +
               s.one_of_hint;
      });
    }
    return true;
  }

  // Evaluates an alternative without recording its violation (only the enclosing anyOf/oneOf
  // reports). Lenient alternatives draw on the work budget; strict ones are required-only.
  bool probe(std::uint32_t alt, json::value v, const path_frame* at, std::uint32_t depth) {
    if (!t_.options.strict && ++alternative_visits_ > max_alternative_visits) exhausted_ = true;
    if (exhausted_) return false;
    const bool saved = report_;
    report_ = false;
    const bool ok = check(alt, v, at, depth);
    report_ = saved;
    return ok;
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
    if (s.pattern || s.pattern_regex) {
      // Matching costs the subject's length times the program: the cap bounds one validation.
      if (str.size() > t_.options.max_pattern_subject_bytes) {
        return fail(at, [this] {
          return "string too long to match pattern (more than " +
                 std::to_string(t_.options.max_pattern_subject_bytes) + " bytes)";
        });
      }
      bool matched = false;
      if (s.pattern) {
        matched = s.pattern->search(str);  // allocates nothing
      } else {
        try {
          matched = std::regex_match(str.begin(), str.end(), *s.pattern_regex);
        } catch (const std::regex_error&) {
          return fail(
              at, [] { return std::string{"the pattern could not be evaluated on this string"}; });
        }
      }
      if (!matched)
        return fail(at, [&s] { return "the string does not match the pattern " + s.pattern_text; });
    }
    return true;
  }

  bool check_number(const node& s, json::value v, const path_frame* at) {
    if (!s.minimum && !s.exclusive_minimum && !s.maximum && !s.exclusive_maximum) return true;
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
    return true;
  }

  // required (declared order), declared properties (declared order), then undeclared members
  // (document order) against additionalProperties.
  bool check_object(const node& s, json::value v, const path_frame* at, std::uint32_t depth) {
    for (const std::string& name : s.required) {
      if (!v.find(name).exists()) {
        std::string segment;
        if (report_) append_segment(segment, name);
        return fail_child(at, segment, [] { return std::string{"required property is missing"}; });
      }
    }
    for (const declared_property& p : s.properties) {
      const json::value pv = v.find(p.name);
      if (!pv.exists()) continue;
      const path_frame f{at, p.segment, 0, false};
      if (!check(p.schema, pv, &f, depth + 1)) return false;
    }
    if (s.additional == additional::allow) return true;
    for (json::member m : v.members()) {
      if (s.declares(m.key)) continue;
      if (s.additional == additional::forbid) {
        return fail_child(at, "*", [] {
          return std::string{
              "property is not declared by the schema (additionalProperties is false)"};
        });
      }
      const path_frame f{at, "*", 0, false};
      if (!check(s.additional_schema, m.value(), &f, depth + 1)) return false;
    }
    return true;
  }

  bool check_array(const node& s, json::value v, const path_frame* at, std::uint32_t depth) {
    const std::size_t size = v.size();
    if (s.min_items && size < *s.min_items)
      return fail(at, [&s] {
        return "the array has fewer than minItems " + std::to_string(*s.min_items) + " items";
      });
    if (s.max_items && size > *s.max_items)
      return fail(at, [&s] {
        return "the array has more than maxItems " + std::to_string(*s.max_items) + " items";
      });
    if (s.items == no_node) return true;
    std::size_t i = 0;
    for (json::value e : v.elements()) {
      const path_frame f{at, {}, i++, true};
      if (!check(s.items, e, &f, depth + 1)) return false;
    }
    return true;
  }

  const tables& t_;
  std::optional<violation> found_;
  bool report_ = true;
  bool exhausted_ = false;
  std::uint64_t alternative_visits_ = 0;
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
