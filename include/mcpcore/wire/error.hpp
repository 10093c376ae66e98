// SPDX-License-Identifier: Apache-2.0
// The JSON-RPC and MCP error codes, their category, and the error.data envelope.
#ifndef MCPCORE_ERROR_HPP
#define MCPCORE_ERROR_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

MCPCORE_BEGIN_NAMESPACE

/// Every error code mcpcore puts on the wire (docs/errors.md#error-codes).
///
/// The enumerator values are the JSON-RPC `error.code` numbers. The HTTP status each travels
/// with is `default_http_status`; the table is mirrored in `docs/errors.md`.
enum class errc : std::int32_t {
  // JSON-RPC 2.0 (§5.1 of the JSON-RPC specification)
  parse_error = -32700,       ///< the body is not JSON
  invalid_request = -32600,   ///< not a single JSON-RPC 2.0 object; missing session header;
                              ///< duplicate in-flight id on a streamed POST
  method_not_found = -32601,  ///< unknown method (or unknown tool, in the Yuzu-compatible mode)
  invalid_params = -32602,    ///< bad arguments, schema violation, unknown tool/prompt, bad cursor
  internal_error = -32603,    ///< store unavailable, handler exception, post-dispatch failure
  // MCP
  resource_not_found = -32002,  ///< `resources/read` of an unknown URI (MCP 2025-11-25)
  // Yuzu's server range (docs/errors.md#error-codes)
  permission_denied = -32003,        ///< RBAC denial; approval ticket refused
  tier_denied = -32004,              ///< tier policy, read-only mode, degraded approval path
  mcp_disabled = -32005,             ///< kill switch; the one error without `error.data`
  approval_required = -32006,        ///< a ticket was minted (or is still pending)
  unknown_session = -32007,          ///< unknown, expired, deleted or foreign session; replay gap
  origin_rejected = -32008,          ///< `Origin` not allowed
  unsupported_protocol_version = -32009,  ///< `MCP-Protocol-Version` present but unsupported
  session_cap = -32010,              ///< `initialize` over the per-principal or global cap
  not_acceptable = -32011,           ///< GET without `Accept: text/event-stream`
  stream_cap = -32012,               ///< stream budget, handover pending, streamed-POST admission
  stream_poisoned = -32013,          ///< the session's terminal delivery failed twice
  terminal_unavailable = -32014,     ///< a parked result expired before a terminal existed
  shutting_down = -32015,            ///< `initialize` while the server drains (docs/errors.md#error-codes)
  // MCP 2026-07-28, the per-request era (docs/eras.md#errors)
  header_mismatch = -32020,            ///< an HTTP header disagrees with the body, or is missing
  missing_client_capability = -32021,  ///< the request needs a capability the client did not declare
  unsupported_revision = -32022,       ///< the per-request revision is not served
};

/// The category of `errc`; its name is "mcpcore.jsonrpc" and `message()` is the default text.
[[nodiscard]] MCPCORE_DECL const std::error_category& jsonrpc_category() noexcept;

/// Makes a `std::error_code` of `jsonrpc_category()`.
[[nodiscard]] inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), jsonrpc_category()};
}

/// The default `error.message` of a code (the category's `message()` without an allocation).
[[nodiscard]] MCPCORE_DECL std::string_view default_message(errc e) noexcept;

/// The HTTP status an error travels with when nothing more specific applies
/// (docs/errors.md#error-codes).
///
/// JSON-RPC-level errors ride on 200. Codes with several statuses return their most common one:
/// `invalid_request` is 200 here, while the transport answers 400 for a missing session header
/// and 409 for a duplicate in-flight id; `internal_error` is 200 here and 500 only after a
/// streamed POST was dispatched (docs/sessions.md#streamed-post-admission); `terminal_unavailable`
/// never has a status of its own (it travels as an SSE frame) and returns 200.
[[nodiscard]] constexpr int default_http_status(errc e) noexcept {
  switch (e) {
    case errc::unknown_session: return 404;
    case errc::origin_rejected: return 403;
    case errc::unsupported_protocol_version:
    case errc::header_mismatch:
    case errc::missing_client_capability:
    case errc::unsupported_revision: return 400;
    case errc::session_cap: return 429;
    case errc::not_acceptable: return 406;
    case errc::stream_cap: return 429;
    case errc::stream_poisoned: return 410;
    case errc::shutting_down: return 503;
    default: return 200;
  }
}

/// Whether errors of this code carry `error.data`: all but `mcp_disabled`
/// (docs/errors.md#the-errordata-envelope, docs/http.md#processing-order-on-the-mcp-path keeps the
/// kill switch's answer deliberately bare).
[[nodiscard]] constexpr bool carries_error_data(errc e) noexcept { return e != errc::mcp_disabled; }

/// One further member of `error.data`: a name and the library's own JSON text for its value.
struct error_data_member {
  std::string_view name;
  std::string_view json;
};

/// The members of the `error.data` envelope (docs/errors.md#the-errordata-envelope).
///
/// `correlation_id`, `retry_after_ms` and `remediation` are always written; an empty optional
/// writes JSON `null` (`retry_after_ms: null` means "do not retry as is", `remediation: null`
/// means "no hint"). The remaining members are written only when set. Strings are escaped by
/// the writer, so caller-derived text cannot break the envelope.
struct error_data {
  /// `req-<hex ms>-<hex seq>` (see `correlation_id.hpp`).
  std::string_view correlation_id{};
  /// An honest retry floor (one of `retry.hpp`'s constants), or null.
  std::optional<std::chrono::milliseconds> retry_after_ms{};
  /// A server-authored, actionable hint, or null.
  std::optional<std::string_view> remediation{};
  /// The minted ticket of an `approval_required` error.
  std::optional<std::string_view> approval_id{};
  /// Where the ticket's status can be polled.
  std::optional<std::string_view> status_url{};
  /// Post-dispatch failures: the execution that may have run. The outer optional says whether
  /// the member is written, the inner one whether it is a string or `null`.
  std::optional<std::optional<std::string_view>> execution_id{};
  /// A closed-set label explaining the refusal.
  std::optional<std::string_view> reason{};
  /// Written as `false` when the refusal's own audit row could not be persisted.
  std::optional<bool> audit_persisted{};
  /// Members a particular error defines (the per-request era's `supported`, `requested`,
  /// `mismatch`, `envelope`, `requiredCapabilities`, `uri`), written last.
  std::span<const error_data_member> members{};
};

/// Writes `d` as a JSON object value.
MCPCORE_DECL void write_error_data(json::writer& w, const error_data& d);

/// A JSON-RPC error object ready for the wire.
struct error_object {
  std::int32_t code = 0;
  std::string message;
  /// The raw JSON of `error.data`; empty when the member is absent.
  std::string data_json;
};

/// Builds an `error_object` for `code` with `message` and the envelope `data`.
///
/// @param message the `error.message`; empty selects `default_message(code)`.
/// `data` is ignored for codes without `error.data` (`carries_error_data`).
[[nodiscard]] MCPCORE_DECL error_object make_error(errc code, std::string_view message,
                                                   const error_data& data);

MCPCORE_END_NAMESPACE

template <>
struct std::is_error_code_enum<mcpcore::errc> : std::true_type {};

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/wire/impl/error.ipp>
#endif

#endif  // MCPCORE_ERROR_HPP
