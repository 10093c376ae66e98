// SPDX-License-Identifier: Apache-2.0
// Era classification, the per-request envelope, client capabilities and the per-request era's
// error answers (docs/eras.md).
#ifndef MCPCORE_IMPL_ERA_IPP
#define MCPCORE_IMPL_ERA_IPP

#include <mcpcore/wire/era.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <array>
#include <string>

MCPCORE_BEGIN_NAMESPACE

MCPCORE_DECL bool claims_per_request_era(const message& msg) noexcept {
  return msg.params["_meta"][meta_key::protocol_version].exists();
}

MCPCORE_DECL result<request_envelope, envelope_problem> read_envelope(const message& msg) noexcept {
  const json::value meta = msg.params["_meta"];
  request_envelope env;
  // The order of the checks is the order a client fixes them in: the revision first.
  const json::value version = meta[meta_key::protocol_version];
  if (!version.exists()) return fail(envelope_problem{meta_key::protocol_version, "missing"});
  if (!version.is_string()) return fail(envelope_problem{meta_key::protocol_version, "must be a string"});
  env.protocol_version = version.as_string();
  env.client_capabilities = meta[meta_key::client_capabilities];
  if (!env.client_capabilities.exists()) {
    return fail(envelope_problem{meta_key::client_capabilities, "missing"});
  }
  if (!env.client_capabilities.is_object()) {
    return fail(envelope_problem{meta_key::client_capabilities, "must be an object"});
  }
  env.client_info = meta[meta_key::client_info];
  if (env.client_info.exists() && !env.client_info.is_object()) {
    return fail(envelope_problem{meta_key::client_info, "must be an object"});
  }
  if (const json::value level = meta[meta_key::log_level]; level.exists()) {
    if (!level.is_string()) return fail(envelope_problem{meta_key::log_level, "must be a string"});
    env.level = parse_log_level(level.as_string());
    if (!env.level) return fail(envelope_problem{meta_key::log_level, "unknown log level"});
  }
  return env;
}

MCPCORE_DECL bool declares(json::value caps, client_capability c) noexcept {
  if (!caps.is_object()) return false;
  switch (c) {
    case client_capability::sampling: return caps["sampling"].is_object();
    case client_capability::sampling_tools: return caps["sampling"]["tools"].is_object();
    case client_capability::elicitation_form: {
      // `elicitation: {}` (no mode named) is the form mode (MCP 2025-11-25 elicitation).
      const json::value e = caps["elicitation"];
      return e.is_object() && (e["form"].is_object() || (!e["form"].exists() && !e["url"].exists()));
    }
    case client_capability::elicitation_url: return caps["elicitation"]["url"].is_object();
    case client_capability::roots: return caps["roots"].is_object();
  }
  return false;
}

MCPCORE_DECL void write_client_capabilities(std::string& out, unsigned mask) {
  const auto has = [mask](client_capability c) { return (mask & static_cast<unsigned>(c)) != 0U; };
  json::writer w{out};
  w.begin_object();
  if (has(client_capability::sampling) || has(client_capability::sampling_tools)) {
    w.key("sampling").begin_object();
    if (has(client_capability::sampling_tools)) w.key("tools").begin_object().end_object();
    w.end_object();
  }
  if (has(client_capability::elicitation_form) || has(client_capability::elicitation_url)) {
    w.key("elicitation").begin_object();
    if (has(client_capability::elicitation_form)) w.key("form").begin_object().end_object();
    if (has(client_capability::elicitation_url)) w.key("url").begin_object().end_object();
    w.end_object();
  }
  if (has(client_capability::roots)) w.key("roots").begin_object().end_object();
  w.end_object();
}

MCPCORE_DECL void write_envelope_error(std::string& out, const std::optional<request_id_view>& id,
                                       const envelope_problem& p, std::string_view correlation_id) {
  std::string message = "Invalid _meta envelope for the per-request protocol revision: ";
  message += p.key;
  message += ": ";
  message += p.problem;
  std::string envelope;
  json::writer{envelope}.begin_object().member("key", p.key).member("problem", p.problem).end_object();
  const std::array members{error_data_member{"envelope", envelope}};
  error_data d;
  d.correlation_id = correlation_id;
  d.remediation = "Send io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities "
                  "in params._meta of every request (docs/eras.md#the-envelope).";
  d.members = members;
  write_error_response(out, id, errc::invalid_params, message, d);
}

MCPCORE_DECL void write_missing_envelope(std::string& out, const std::optional<request_id_view>& id,
                                         std::string_view header_version, bool has_meta,
                                         std::string_view correlation_id) {
  std::string message = "Invalid params: the MCP-Protocol-Version header names protocol revision ";
  message += header_version;
  message += ", but the request is missing the required per-request envelope";
  std::string envelope;
  {
    json::writer w{envelope};
    w.begin_object().key("missing").begin_array();
    if (has_meta) {
      w.value(meta_key::protocol_version);
    } else {
      w.value("_meta");
    }
    w.end_array().end_object();
  }
  const std::array members{error_data_member{"envelope", envelope}};
  error_data d;
  d.correlation_id = correlation_id;
  d.remediation = "Send the per-request envelope in params._meta, or omit the header to use the handshake era "
                  "(docs/eras.md#the-envelope).";
  d.members = members;
  write_error_response(out, id, errc::invalid_params, message, d);
}

MCPCORE_DECL void write_header_mismatch(std::string& out, const std::optional<request_id_view>& id,
                                        std::string_view header, std::string_view detail,
                                        std::string_view correlation_id) {
  std::string message{default_message(errc::header_mismatch)};
  message += ": ";
  message += detail;
  std::string mismatch;
  json::writer{mismatch}.begin_object().member("header", header).member("body", detail).end_object();
  const std::array members{error_data_member{"mismatch", mismatch}};
  error_data d;
  d.correlation_id = correlation_id;
  d.remediation = "Send MCP-Protocol-Version, Mcp-Method and Mcp-Name (and Mcp-Param-* where a tool declares "
                  "them) with the values the body carries (docs/eras.md#headers).";
  d.members = members;
  write_error_response(out, id, errc::header_mismatch, message, d);
}

MCPCORE_DECL void write_unsupported_revision(std::string& out, const std::optional<request_id_view>& id,
                                             std::span<const std::string_view> supported,
                                             std::string_view requested, std::string_view correlation_id) {
  std::string message = "Unsupported protocol version: ";
  message += requested.empty() ? std::string_view{"the request did not name a protocol version"} : requested;
  std::string list;
  {
    json::writer w{list};
    w.begin_array();
    for (const std::string_view v : supported) w.value(v);
    w.end_array();
  }
  std::string echoed;
  json::writer{echoed}.value(requested);
  std::array members{error_data_member{"supported", list}, error_data_member{"requested", echoed}};
  error_data d;
  d.correlation_id = correlation_id;
  d.remediation = "Retry with one of the revisions in error.data.supported.";
  d.members = std::span<const error_data_member>{members.data(), requested.empty() ? 1U : 2U};
  write_error_response(out, id, errc::unsupported_revision, message, d);
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_ERA_IPP
