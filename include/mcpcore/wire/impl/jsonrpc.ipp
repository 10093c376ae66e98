// SPDX-License-Identifier: Apache-2.0
// JSON-RPC 2.0 message interpretation and response builders.
#ifndef MCPCORE_IMPL_JSONRPC_IPP
#define MCPCORE_IMPL_JSONRPC_IPP

#include <mcpcore/wire/jsonrpc.hpp>

MCPCORE_BEGIN_NAMESPACE
namespace detail {

inline constexpr std::string_view remediation_single_message =
    R"(send exactly one JSON-RPC 2.0 message per request: a UTF-8 JSON object with "jsonrpc":"2.0")";

// message_error holds views: every text given here is a string literal.
MCPCORE_INTERNAL message_error refuse(errc code, std::string_view text, std::optional<request_id_view> id = {}) noexcept {
  return message_error{code, text, remediation_single_message, id};
}

// Opens an error response up to and including `"message"`; the caller may add `"data"`, then
// closes both objects.
MCPCORE_INTERNAL json::writer begin_error_response(std::string& out, const std::optional<request_id_view>& id,
                                               std::int32_t code, std::string_view message) {
  json::writer w{out};
  begin_message(w, id).key("error").begin_object().member("code", code).member("message", message);
  return w;
}

MCPCORE_INTERNAL message_error refuse_json(std::error_code ec) noexcept {
  using json::json_errc;
  std::string_view text = "Parse error: invalid JSON";
  switch (static_cast<json_errc>(ec.value())) {
    case json_errc::empty_input: text = "Parse error: the body holds no JSON value"; break;
    case json_errc::invalid_utf8: text = "Parse error: the body is not valid UTF-8"; break;
    case json_errc::invalid_string:
      text = "Parse error: invalid string (bad escape, lone surrogate or raw control character)";
      break;
    case json_errc::invalid_number: text = "Parse error: invalid or out-of-range number"; break;
    case json_errc::depth_exceeded: text = "Parse error: JSON nesting exceeds the server's limit"; break;
    case json_errc::too_large: text = "Parse error: the body exceeds the server's JSON size limit"; break;
    case json_errc::duplicate_key:
      // Well-formed JSON, but ambiguous: refused as a request, not as text.
      return refuse(errc::invalid_request, "Invalid Request: an object repeats a member name");
    default: break;
  }
  return refuse(errc::parse_error, text);
}

}  // namespace detail

MCPCORE_DECL result<message, message_error> read_message(json::value root) noexcept {
  if (root.is_array())
    return fail(detail::refuse(errc::invalid_request,
                               "Invalid Request: batches are not supported; send one message per request"));
  if (!root.is_object())
    return fail(detail::refuse(errc::invalid_request, "Invalid Request: the message must be a JSON object"));

  json::value jsonrpc, id, method, params, result_v, error_v;
  // With duplicate keys allowed by the document, the last member of a name wins here.
  for (json::member m : root.members()) {
    const std::string_view k = m.key;
    if (k == "jsonrpc") jsonrpc = m.value();
    else if (k == "id") id = m.value();
    else if (k == "method") method = m.value();
    else if (k == "params") params = m.value();
    else if (k == "result") result_v = m.value();
    else if (k == "error") error_v = m.value();
  }

  // The id first, so that every later refusal can echo it.
  std::optional<request_id_view> rid;
  if (id.exists()) {
    if (id.is_null())
      return fail(detail::refuse(errc::invalid_request, "Invalid Request: id must not be null"));
    if (id.is_string()) {
      rid = request_id_view{id.as_string()};
    } else if (auto n = id.is_integer() ? id.to_int64() : std::nullopt) {
      rid = request_id_view{*n};
    } else {
      return fail(detail::refuse(errc::invalid_request,
                                 "Invalid Request: id must be a string or a signed 64-bit integer"));
    }
  }

  // A message carrying `result` or `error` is response-shaped: its id belongs to the server's own
  // request numbering, so a refusal never echoes it (id null: docs/errors.md#malformed-responses).
  const bool response_shaped = result_v.exists() || error_v.exists();
  const std::optional<request_id_view> echo = response_shaped ? std::nullopt : rid;
  if (!jsonrpc.is_string() || jsonrpc.as_string() != "2.0")
    return fail(detail::refuse(errc::invalid_request, "Invalid Request: jsonrpc must be \"2.0\"", echo));

  message msg;
  msg.root = root;
  msg.id = rid;
  if (method.exists()) {
    if (!method.is_string())
      return fail(detail::refuse(errc::invalid_request, "Invalid Request: method must be a string", echo));
    if (result_v.exists() || error_v.exists())
      return fail(detail::refuse(errc::invalid_request,
                                 "Invalid Request: a message cannot carry both method and result or error", echo));
    if (params.exists() && !params.is_object()) {
      if (params.is_array())
        return fail(message_error{errc::invalid_params, "Invalid params: params must be an object",
                                  "pass named parameters in a JSON object; MCP has no positional params", echo});
      return fail(detail::refuse(errc::invalid_request, "Invalid Request: params must be an object", echo));
    }
    msg.kind = rid ? message_kind::request : message_kind::notification;
    msg.method = method.as_string();
    msg.params = params;
    return msg;
  }

  if (!result_v.exists() && !error_v.exists())
    return fail(detail::refuse(errc::invalid_request, "Invalid Request: method is missing", echo));
  if (!rid) return fail(detail::refuse(errc::invalid_request, "Invalid Request: a response must carry an id"));
  if (result_v.exists() && error_v.exists())
    return fail(detail::refuse(errc::invalid_request,
                               "Invalid Request: a response carries exactly one of result and error", echo));
  if (error_v.exists()) {
    const json::value code = error_v["code"];
    if (!error_v.is_object() || !code.is_integer() || !code.to_int64() || !error_v["message"].is_string())
      return fail(detail::refuse(errc::invalid_request,
                                 "Invalid Request: error must be an object with an integer code and a string message",
                                 echo));
  }
  msg.kind = message_kind::response;
  msg.result = result_v;
  msg.error = error_v;
  return msg;
}

MCPCORE_DECL result<message, message_error> parse_message(json::document& doc, std::string_view body) {
  auto root = doc.parse(body);
  if (!root) return fail(detail::refuse_json(root.error().code()));
  return read_message(*root);
}

MCPCORE_DECL void write_result_response(std::string& out, request_id_view id, std::string_view result_json) {
  write_result_response(out, id, [&](json::writer& w) { w.raw(result_json); });
}

MCPCORE_DECL void write_error_response(std::string& out, const std::optional<request_id_view>& id,
                                       const error_object& e) {
  json::writer w = detail::begin_error_response(out, id, e.code, e.message);
  if (!e.data_json.empty()) w.raw_member("data", e.data_json);
  w.end_object().end_object();
}

MCPCORE_DECL void write_error_response(std::string& out, const std::optional<request_id_view>& id, errc code,
                                       std::string_view message, const error_data& data) {
  json::writer w = detail::begin_error_response(out, id, static_cast<std::int32_t>(code),
                                                 message.empty() ? default_message(code) : message);
  if (carries_error_data(code)) {
    w.key("data");
    write_error_data(w, data);
  }
  w.end_object().end_object();
}

MCPCORE_DECL void write_error_response(std::string& out, const message_error& e, std::string_view correlation_id) {
  error_data data;
  data.correlation_id = correlation_id;
  data.remediation = e.remediation;
  write_error_response(out, e.id, e.code, e.message, data);
}

MCPCORE_DECL void write_notification(std::string& out, std::string_view method, std::string_view params_json) {
  json::writer w{out};
  w.begin_object().member("jsonrpc", "2.0").member("method", method);
  if (!params_json.empty()) w.raw_member("params", params_json);
  w.end_object();
}

MCPCORE_DECL void write_request(std::string& out, request_id_view id, std::string_view method,
                                std::string_view params_json) {
  json::writer w{out};
  detail::begin_message(w, id).member("method", method);
  if (!params_json.empty()) w.raw_member("params", params_json);
  w.end_object();
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_JSONRPC_IPP
