// SPDX-License-Identifier: Apache-2.0
// The jsonrpc error category and the error.data envelope writer.
#ifndef MCPCORE_IMPL_ERROR_IPP
#define MCPCORE_IMPL_ERROR_IPP

#include <mcpcore/wire/error.hpp>

MCPCORE_BEGIN_NAMESPACE
namespace detail {

class jsonrpc_category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "mcpcore.jsonrpc"; }
  std::string message(int ev) const override { return std::string{default_message(static_cast<errc>(ev))}; }
};

}  // namespace detail

MCPCORE_DECL const std::error_category& jsonrpc_category() noexcept {
  static const detail::jsonrpc_category_impl category;
  return category;
}

MCPCORE_DECL std::string_view default_message(errc e) noexcept {
  switch (e) {
    case errc::parse_error: return "Parse error";
    case errc::invalid_request: return "Invalid Request";
    case errc::method_not_found: return "Method not found";
    case errc::invalid_params: return "Invalid params";
    case errc::internal_error: return "Internal error";
    case errc::resource_not_found: return "Resource not found";
    case errc::permission_denied: return "Permission denied";
    case errc::tier_denied: return "Operation not permitted for this token's tier";
    case errc::mcp_disabled: return "MCP is disabled on this server";
    case errc::approval_required: return "Approval required";
    case errc::unknown_session: return "Unknown or expired session";
    case errc::origin_rejected: return "Origin not allowed";
    case errc::unsupported_protocol_version: return "Unsupported MCP-Protocol-Version";
    case errc::session_cap: return "Session limit reached";
    case errc::not_acceptable: return "Not Acceptable: the client must accept text/event-stream";
    case errc::stream_cap: return "Stream limit reached";
    case errc::stream_poisoned: return "Stream terminated; final response undeliverable";
    case errc::terminal_unavailable: return "Final response unavailable";
    case errc::shutting_down: return "server is shutting down";
    case errc::header_mismatch: return "Bad Request: the request headers and body disagree";
    case errc::missing_client_capability: return "Missing required client capability";
    case errc::unsupported_revision: return "Unsupported protocol version";
  }
  return "Unknown error";
}

MCPCORE_DECL void write_error_data(json::writer& w, const error_data& d) {
  w.begin_object();
  w.member("correlation_id", d.correlation_id);
  w.key("retry_after_ms");
  if (d.retry_after_ms) {
    w.value(d.retry_after_ms->count());
  } else {
    w.null();
  }
  w.member("remediation", d.remediation);
  if (d.approval_id) w.member("approval_id", *d.approval_id);
  if (d.status_url) w.member("status_url", *d.status_url);
  if (d.execution_id) w.member("execution_id", *d.execution_id);
  if (d.reason) w.member("reason", *d.reason);
  if (d.audit_persisted) w.member("audit_persisted", *d.audit_persisted);
  for (const error_data_member& m : d.members) w.raw_member(m.name, m.json);
  w.end_object();
}

MCPCORE_DECL error_object make_error(errc code, std::string_view message, const error_data& data) {
  error_object e;
  e.code = static_cast<std::int32_t>(code);
  e.message = message.empty() ? default_message(code) : message;
  // The kill switch's answer stays bare (docs/security.md#kill-switches-and-read-only-mode).
  if (carries_error_data(code)) {
    json::writer w{e.data_json};
    write_error_data(w, data);
  }
  return e;
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_ERROR_IPP
