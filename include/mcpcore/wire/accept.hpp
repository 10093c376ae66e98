// SPDX-License-Identifier: Apache-2.0
// The HTTP Accept header, read the way MCP's transports need it.
#ifndef MCPCORE_ACCEPT_HPP
#define MCPCORE_ACCEPT_HPP

#include <mcpcore/detail/config.hpp>

#include <string_view>

MCPCORE_BEGIN_NAMESPACE

/// Whether an `Accept` header value explicitly lists `media_type` (docs/http.md#get-sessions-on).
///
/// The value is split at commas outside quoted strings (RFC 9110 §5.6.4, with `\` escapes);
/// each element's parameters after `;` are dropped, q-values included; surrounding whitespace
/// is trimmed; the bare type compares with `media_type` ASCII case-insensitively. Wildcards
/// (`*/*`, `text/*`) do not count: an MCP client must name the types it handles. A value with an
/// unterminated quoted string lists nothing (fail closed).
///
/// @param header the field value; several `Accept` lines are joined with commas first.
/// @param media_type a lowercase `type/subtype`.
[[nodiscard]] MCPCORE_DECL bool accept_lists(std::string_view header, std::string_view media_type) noexcept;

/// Whether the client accepts `text/event-stream` (GET channel, streamed POST responses).
[[nodiscard]] inline bool accept_wants_sse(std::string_view header) noexcept {
  return accept_lists(header, "text/event-stream");
}

/// Whether the client accepts `application/json` (plain POST responses).
[[nodiscard]] inline bool accept_wants_json(std::string_view header) noexcept {
  return accept_lists(header, "application/json");
}

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/wire/impl/accept.ipp>
#endif

#endif  // MCPCORE_ACCEPT_HPP
