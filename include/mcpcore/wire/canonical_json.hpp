// SPDX-License-Identifier: Apache-2.0
// Canonical JSON: one spelling per document, for comparing and hashing values.
#ifndef MCPCORE_CANONICAL_JSON_HPP
#define MCPCORE_CANONICAL_JSON_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <string>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE

/// Writes `v` in canonical form: object members sorted by key at every depth, no whitespace,
/// strings re-escaped minimally (`json::append_escaped`), numbers spelled exactly as written in
/// the source.
///
/// Keys compare as unescaped UTF-8 byte strings, which is Unicode code point order (RFC 8785's
/// JCS sorts UTF-16 code units instead; the two differ only for keys mixing characters above
/// U+FFFF with U+E000-U+FFFF, and mcpcore compares its own outputs only). Duplicate keys cannot
/// occur: documents refuse them by default, and with `allow_duplicate_keys` members with equal
/// keys keep their source order.
///
/// Numbers are not normalized: `1`, `1.0` and `1e0` stay distinct, as the approval machine
/// requires (docs/design.md#canonical-json: the arguments the human approved are the arguments that
/// run).
///
/// @par Thread safety
/// Reads `v` only; concurrent calls on one document are safe.
MCPCORE_DECL void write_canonical(json::writer& w, json::value v);

/// Parses `text` and returns its canonical form (see `write_canonical`).
///
/// @par Errors
/// The `json::json_errc` of a text that does not parse under `options`.
[[nodiscard]] MCPCORE_DECL result<std::string> canonical_json(std::string_view text,
                                                              const json::parse_options& options = {});

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/wire/impl/canonical_json.ipp>
#endif

#endif  // MCPCORE_CANONICAL_JSON_HPP
