// SPDX-License-Identifier: Apache-2.0
// Tool input schemas: JSON Schema 2020-12 validation, compiled once and validated per call
// (docs/schema.md).
#ifndef MCPCORE_SCHEMA_HPP
#define MCPCORE_SCHEMA_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/wire/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

MCPCORE_BEGIN_NAMESPACE
namespace schema {

/// Default depth cap of a strict schema: how many `properties`, `items` and
/// `additionalProperties` steps may separate a subschema from the root (docs/schema.md#keywords). A
/// `$ref` is not a step. A strict schema that recurses through `$ref` is bounded at validation
/// time: a value nested deeper than the cap is a violation.
inline constexpr std::uint32_t default_max_depth = 8;

/// Default cap on the schema nodes one compilation builds (every object or boolean that sits
/// where a schema goes, `$defs` included). A larger schema is a compile error; the cap bounds
/// the compiled tables and the compile-time walks (docs/schema.md#caps).
inline constexpr std::size_t default_max_schema_nodes = 10000;

/// Default memory budget of one compiled `pattern` or `patternProperties` expression, in bytes
/// (RE2's `max_mem`: the compiled program and the lazily built DFA cache). A pattern whose
/// program does not fit is a compile error; a search that fills the cache falls back to RE2's
/// linear NFA (docs/schema.md#patterns).
inline constexpr std::int64_t default_max_pattern_memory_bytes = std::int64_t{1} << 20;

/// Default work budget of one `validate` call: how many schema nodes it may evaluate (each
/// application of a subschema to a value counts one, as does each pairwise comparison
/// `uniqueItems` makes between items of equal hash). Past it the instance is refused with a
/// violation at the root (docs/schema.md#caps).
inline constexpr std::uint64_t default_max_validation_steps = std::uint64_t{1} << 22;

/// Default cap on nested schema evaluations in one `validate` call (the validator's recursion:
/// one level per subschema applied, `$ref` and in-place applicators included). Deeper is a
/// violation; the cap bounds the stack whatever the schema and the instance.
inline constexpr std::uint32_t default_max_evaluation_depth = 512;

/// How `compiled_schema::compile` reads a schema.
struct compile_options {
  /// true: the registration lints of docs/schema.md#two-modes (mandatory single `type`,
  /// keyword/type coupling, required-only `anyOf`/`oneOf`, declared `required` names, no
  /// `additionalProperties: true`, depth cap, min <= max); this is what server registration uses.
  /// false: plain JSON Schema 2020-12 semantics of the supported keywords (optional or array
  /// `type`, keywords apply only to instances of their own type, boolean schemas, any
  /// applicator subschemas); the JSON-Schema-Test-Suite runs in this mode.
  bool strict = true;
  /// Depth cap in strict mode (see `default_max_depth`); ignored when `strict` is false.
  std::uint32_t max_depth = default_max_depth;
  /// Most schema nodes one compilation builds (see `default_max_schema_nodes`).
  std::size_t max_schema_nodes = default_max_schema_nodes;
  /// RE2 memory budget of each compiled pattern (see `default_max_pattern_memory_bytes`).
  std::int64_t max_pattern_memory_bytes = default_max_pattern_memory_bytes;
  /// Work budget of one `validate` call (see `default_max_validation_steps`).
  std::uint64_t max_validation_steps = default_max_validation_steps;
  /// Nesting cap of schema evaluations in one `validate` call (see
  /// `default_max_evaluation_depth`).
  std::uint32_t max_evaluation_depth = default_max_evaluation_depth;
};

/// One reason a schema does not compile.
struct compile_error {
  /// JSON pointer into the schema ("" is the schema's root, "/properties/a~1b/type" a keyword).
  std::string path;
  /// What is wrong, in server-authored words (may quote the schema's own keywords and values).
  std::string message;
};

/// Why an instance does not satisfy a schema.
struct violation {
  /// JSON pointer into the instance ("" is the root, "/a/b/0"). Property names the schema
  /// declares appear escaped (~0, ~1); a name that came from the caller (one matched by
  /// `additionalProperties`, `patternProperties`, `unevaluatedProperties` or `propertyNames`) is
  /// written "*", never echoed.
  std::string path;
  /// What is wrong. Server-authored: it may quote declared property names and schema constants,
  /// never a string or value the caller supplied.
  std::string reason;
};

/// A compiled input schema (see docs/schema.md for the subset, the lints and the order of checks).
///
/// The schema is copied into the compiled form: neither the text nor the document a schema was
/// given as needs to outlive the compilation.
///
/// @par Thread safety
/// A compiled schema is immutable: any number of threads may call `validate` and the other const
/// members concurrently. Moving and assigning need exclusive access.
class compiled_schema {
 public:
  /// An empty schema: it checks nothing (`validate` always returns nullopt) and declares nothing
  /// (`root_is_closed` and `root_declares` are false). A moved-from schema is empty too.
  compiled_schema() noexcept = default;
  MCPCORE_DECL compiled_schema(compiled_schema&& other) noexcept;
  MCPCORE_DECL compiled_schema& operator=(compiled_schema&& other) noexcept;
  MCPCORE_DECL ~compiled_schema();
  compiled_schema(const compiled_schema&) = delete;
  compiled_schema& operator=(const compiled_schema&) = delete;

  /// Compiles a schema given as JSON text (parsed with `json::parse_options{}`'s limits).
  ///
  /// Collects every offence rather than stopping at the first, sorted by path then message, so
  /// that registration can list them all.
  [[nodiscard]] MCPCORE_DECL static result<compiled_schema, std::vector<compile_error>> compile(
      std::string_view schema_json, const compile_options& options = {});

  /// Compiles a schema given as a parsed value (any document; the value is copied).
  [[nodiscard]] MCPCORE_DECL static result<compiled_schema, std::vector<compile_error>> compile(
      json::value schema, const compile_options& options = {});

  /// The first violation of `instance`, in the deterministic order of
  /// docs/schema.md#validation-order, or nullopt when it is valid. An absent instance (`exists()`
  /// false) is a violation at the root.
  ///
  /// Bounded by the options' `max_validation_steps` and `max_evaluation_depth` whatever the
  /// schema and the instance; patterns run in RE2, in time linear in the string's length.
  [[nodiscard]] MCPCORE_DECL std::optional<violation> validate(json::value instance) const;

  /// Whether the root schema (after `$ref` resolution) declares `additionalProperties: false`.
  /// Registration needs it: an approval-gated tool with a closed schema must declare
  /// `approval_id` (docs/design.md#registration-validation).
  [[nodiscard]] MCPCORE_DECL bool root_is_closed() const noexcept;

  /// Whether the root schema (after `$ref` resolution) declares `property` in `properties`.
  [[nodiscard]] MCPCORE_DECL bool root_declares(std::string_view property) const noexcept;

 private:
  struct impl;
  // Owned; a raw pointer keeps <memory>, RE2 and the compiled tables out of the header.
  impl* impl_ = nullptr;
};

}  // namespace schema
MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/dispatch/impl/schema_regex.ipp>
#  include <mcpcore/dispatch/impl/schema_tables.ipp>
#  include <mcpcore/dispatch/impl/schema_compile.ipp>
#  include <mcpcore/dispatch/impl/schema_validate.ipp>
#endif

#endif  // MCPCORE_SCHEMA_HPP
