// SPDX-License-Identifier: Apache-2.0
// The two eras of MCP one endpoint serves (docs/eras.md): the handshake era (2025-11-25 and
// before: `initialize`, sessions) and the per-request era (2026-07-28: every request carries its
// own `_meta` envelope). How a message is classified, what its envelope says, and the wire text
// of the per-request era's errors.
#ifndef MCPCORE_ERA_HPP
#define MCPCORE_ERA_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/wire/client_capability.hpp>
#include <mcpcore/wire/error.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>
#include <mcpcore/wire/log_level.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE

/// The era a message belongs to (docs/eras.md#classification).
enum class protocol_era : std::uint8_t {
  /// MCP 2025-11-25 and before: `initialize` negotiates a revision; HTTP sessions, the GET
  /// stream and resumable streams.
  handshake,
  /// MCP 2026-07-28: no handshake and no sessions; each request declares its revision and the
  /// client's capabilities in `params._meta`.
  per_request,
};

/// Which eras an endpoint (or a stdio connection) serves (docs/eras.md#choosing-the-eras).
enum class served_eras : std::uint8_t { both, handshake_only, per_request_only };

/// Whether `served` includes `e`.
[[nodiscard]] constexpr bool serves(served_eras served, protocol_era e) noexcept {
  return served == served_eras::both ||
         (e == protocol_era::handshake ? served == served_eras::handshake_only
                                       : served == served_eras::per_request_only);
}

/// The per-request revisions served, newest first.
inline constexpr std::string_view per_request_protocol_versions[] = {"2026-07-28"};

/// Whether `v` is one of `per_request_protocol_versions`.
[[nodiscard]] constexpr bool is_per_request_protocol_version(std::string_view v) noexcept {
  for (const auto s : per_request_protocol_versions) {
    if (s == v) return true;
  }
  return false;
}

/// Whether a `MCP-Protocol-Version` value names a per-request revision, served or not: dated
/// revisions compare as text, and anything that sorts at or after the first per-request
/// revision (including unknown future ones) is per-request (docs/eras.md#classification).
[[nodiscard]] constexpr bool names_per_request_era(std::string_view v) noexcept {
  return v >= per_request_protocol_versions[std::size(per_request_protocol_versions) - 1];
}

/// The `_meta` keys of the per-request era.
namespace meta_key {
inline constexpr std::string_view protocol_version = "io.modelcontextprotocol/protocolVersion";
inline constexpr std::string_view client_capabilities = "io.modelcontextprotocol/clientCapabilities";
inline constexpr std::string_view client_info = "io.modelcontextprotocol/clientInfo";
inline constexpr std::string_view log_level = "io.modelcontextprotocol/logLevel";
inline constexpr std::string_view server_info = "io.modelcontextprotocol/serverInfo";
inline constexpr std::string_view subscription_id = "io.modelcontextprotocol/subscriptionId";
}  // namespace meta_key

/// What a per-request message declares in `params._meta` (views into its document).
struct request_envelope {
  /// The revision the request speaks (a string; not necessarily a served one).
  std::string_view protocol_version;
  /// The client's capabilities for this request (an object).
  json::value client_capabilities;
  /// The client's identity (an object), or absent.
  json::value client_info;
  /// The lowest level of log message the client wants during this request; none: no log
  /// messages at all.
  std::optional<log_level> level;
};

/// The first problem found in an envelope: the `_meta` key and what is wrong with it.
struct envelope_problem {
  std::string_view key;
  /// "missing", "must be a string", "must be an object", "unknown log level".
  std::string_view problem;
};

/// Whether `msg` claims the per-request era: its `params._meta` has a protocolVersion member
/// (of any type; a non-string claim is then refused by `read_envelope`).
[[nodiscard]] MCPCORE_DECL bool claims_per_request_era(const message& msg) noexcept;

/// Reads the envelope of a message that claims the per-request era, or of a request that must
/// carry one (the header named a per-request revision). Required: `protocolVersion` (a string),
/// then `clientCapabilities` (an object); `clientInfo` is optional but must be an object when
/// present; `logLevel` must name a level when present. Unknown `_meta` members are ignored.
[[nodiscard]] MCPCORE_DECL result<request_envelope, envelope_problem> read_envelope(const message& msg) noexcept;

/// Whether the capabilities object `caps` declares `c` (`elicitation: {}` counts as form).
[[nodiscard]] MCPCORE_DECL bool declares(json::value caps, client_capability c) noexcept;

/// Appends the JSON object of the capabilities named in `mask` (a bitwise or of
/// `client_capability`), e.g. `{"sampling":{}}`: the `requiredCapabilities` of -32021.
MCPCORE_DECL void write_client_capabilities(std::string& out, unsigned mask);

// ---- the per-request era's errors ----------------------------------------------------------------

/// Appends the -32602 answer to a message whose envelope is refused
/// (`data.envelope = {key, problem}`).
MCPCORE_DECL void write_envelope_error(std::string& out, const std::optional<request_id_view>& id,
                                       const envelope_problem& p, std::string_view correlation_id);
/// Appends the -32602 answer to a request whose `MCP-Protocol-Version` header names a
/// per-request revision while the body carries no envelope (`data.envelope.missing`).
MCPCORE_DECL void write_missing_envelope(std::string& out, const std::optional<request_id_view>& id,
                                         std::string_view header_version, bool has_meta,
                                         std::string_view correlation_id);
/// Appends the -32020 `HeaderMismatch` answer: `data.mismatch = {header, body}`; `header` is the
/// header's value (or its name, for `Mcp-Param-*`), "(missing)" when absent; `detail` says what
/// disagrees and becomes the end of the message.
MCPCORE_DECL void write_header_mismatch(std::string& out, const std::optional<request_id_view>& id,
                                        std::string_view header, std::string_view detail,
                                        std::string_view correlation_id);
/// Appends the -32022 `UnsupportedProtocolVersion` answer: `data.supported` lists `supported`,
/// `data.requested` echoes `requested` (omitted when empty).
MCPCORE_DECL void write_unsupported_revision(std::string& out, const std::optional<request_id_view>& id,
                                             std::span<const std::string_view> supported,
                                             std::string_view requested, std::string_view correlation_id);

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/wire/impl/era.ipp>
#endif

#endif  // MCPCORE_ERA_HPP
