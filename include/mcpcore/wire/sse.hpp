// SPDX-License-Identifier: Apache-2.0
// Server-Sent Events framing, and the Last-Event-ID request header.
#ifndef MCPCORE_SSE_HPP
#define MCPCORE_SSE_HPP

#include <mcpcore/detail/config.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE
namespace sse {

/// Longest `event:` type written; longer types are cut (at a UTF-8 boundary)
/// (docs/sessions.md#sse-frames).
inline constexpr std::size_t max_event_type_bytes = 64;

/// One event of a `text/event-stream` (WHATWG HTML, "Server-sent events").
struct event {
  /// The `id:` field; 0 writes none. Ids are per-session sequence numbers starting at 1, and
  /// heartbeats and synthetic notices carry none, so a resume cursor never skips real frames.
  std::uint64_t id = 0;
  /// The `event:` field; empty writes none (the client then sees type "message"). CR and LF are
  /// replaced by `_` and the type is cut at `max_event_type_bytes`.
  std::string_view type{};
  /// The payload. Each line (split at CRLF, LF or CR, the terminators the SSE parser honours)
  /// becomes its own `data:` line, so the client reassembles it with LF separators; an empty
  /// payload writes one empty `data:` line, which still dispatches the event.
  std::string_view data{};
  /// The `retry:` field (reconnection delay); none when empty.
  std::optional<std::chrono::milliseconds> retry{};
};

/// Appends `e` to `out`, terminated by the blank line that dispatches it.
MCPCORE_DECL void write_event(std::string& out, const event& e);

/// Appends a comment block (`: <text>` lines and a blank line). Clients ignore comments; they
/// keep intermediaries from timing out an idle stream. Line breaks in `text` start new comment
/// lines.
MCPCORE_DECL void write_comment(std::string& out, std::string_view text);

/// Reads a `Last-Event-ID` header value (docs/http.md#get-sessions-on).
///
/// Strict unsigned decimal: one or more ASCII digits and nothing else, within 64 bits. Anything
/// else (empty, signed, spaced, overflowing, junk-suffixed) reads as 0, "no cursor": a typo must
/// never terminate a session. The HTTP layer strips optional whitespace around field values
/// (RFC 9110 §5.5) before this sees them.
[[nodiscard]] MCPCORE_DECL std::uint64_t parse_last_event_id(std::string_view header) noexcept;

}  // namespace sse
MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/wire/impl/sse.ipp>
#endif

#endif  // MCPCORE_SSE_HPP
