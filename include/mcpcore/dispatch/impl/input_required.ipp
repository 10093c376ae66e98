// SPDX-License-Identifier: Apache-2.0
// Input-required results (docs/eras.md#input-requests): the signed request state, the rounds a
// request carries, and what a handler's `need_input` becomes in each era: an `input_required`
// result in the per-request era, server-to-client requests on the session in the handshake era
// (then the handler runs again with the answers).
#ifndef MCPCORE_IMPL_INPUT_REQUIRED_IPP
#define MCPCORE_IMPL_INPUT_REQUIRED_IPP

#include <mcpcore/dispatch/server.hpp>

#include <mcpcore/detail/base64.hpp>
#include <mcpcore/detail/sha256.hpp>
#include <mcpcore/dispatch/impl/call_state.ipp>
#include <mcpcore/dispatch/impl/server_state.ipp>
#include <mcpcore/wire/era.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE
namespace detail {

// ---- the signed request state --------------------------------------------------------------------

/// The prefix of every request state this library signs (its format's version).
inline constexpr std::string_view request_state_prefix = "v1.";

/// The tag binding a state to its caller, method and subject (tool or prompt name, resource URI):
/// a state minted for one is refused by the others.
inline std::string request_state_binding(const server::impl& s, std::string_view principal_id, std::string_view method,
                                         std::string_view subject) {
  std::string m = "mcpcore.requestState.bind";
  for (const std::string_view part : {principal_id, method, subject}) {
    m += '\0';
    m += part;
  }
  const sha256_digest d = hmac_sha256(s.options.request_state_key, m);
  std::string tag;
  base64_encode(tag, std::string_view{reinterpret_cast<const char*>(d.data()), 16}, base64_alphabet::url);  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
  return tag;
}

/// `v1.<base64url payload>.<base64url HMAC-SHA-256 of "v1.<payload>">`; the payload is
/// `{"exp":<unix seconds>,"b":<binding>,"s":<handler state>}` (signed, not encrypted).
inline std::string sign_request_state(const server::impl& s, std::string_view binding, std::string_view state) {
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(s.clock->system_now().time_since_epoch());
  std::string payload;
  json::writer{payload}
      .begin_object()
      .member("exp", (now + s.options.request_state_lifetime).count())
      .member("b", binding)
      .member("s", state)
      .end_object();
  std::string token{request_state_prefix};
  base64_encode(token, payload, base64_alphabet::url);
  const sha256_digest mac = hmac_sha256(s.options.request_state_key, token);
  token += '.';
  base64_encode(token, std::string_view{reinterpret_cast<const char*>(mac.data()), mac.size()}, base64_alphabet::url);  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
  return token;
}

/// The handler state of a valid `token`; nothing when it is malformed, was not signed with this
/// server's key, has expired, or was minted for another caller, method or subject.
inline std::optional<std::string> verify_request_state(const server::impl& s, std::string_view token,
                                                       std::string_view binding) {
  if (!token.starts_with(request_state_prefix)) return std::nullopt;
  const std::size_t dot = token.rfind('.');
  if (dot < request_state_prefix.size()) return std::nullopt;
  const std::string_view signed_part = token.substr(0, dot);
  const auto mac = base64_decode(token.substr(dot + 1), base64_alphabet::url);
  const sha256_digest expected = hmac_sha256(s.options.request_state_key, signed_part);
  if (!mac || !constant_time_equals(*mac, std::string_view{reinterpret_cast<const char*>(expected.data()), expected.size()})) {  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
    return std::nullopt;
  }
  const auto payload = base64_decode(signed_part.substr(request_state_prefix.size()), base64_alphabet::url);
  if (!payload) return std::nullopt;
  json::document doc;
  const auto root = doc.parse(*payload);
  if (!root) return std::nullopt;
  const auto exp = (*root)["exp"].to_int64();
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(s.clock->system_now().time_since_epoch());
  if (!exp || *exp < now.count()) return std::nullopt;
  const json::value b = (*root)["b"];
  if (!b.is_string() || !constant_time_equals(b.as_string(), binding)) return std::nullopt;
  const json::value state = (*root)["s"];
  if (!state.is_string()) return std::nullopt;
  return std::string{state.as_string()};
}

/// The subject a request's state is bound to: the tool or prompt name, the resource URI.
inline std::string_view input_subject(const message& msg) noexcept {
  const json::value v = msg.method == "resources/read" ? msg.params["uri"] : msg.params["name"];
  return v.is_string() ? v.as_string() : std::string_view{};
}

/// Reads the round a per-request-era request carries (`inputResponses`, `requestState`) into
/// `e.round`; false when the state is refused, answered -32602 (nothing runs).
inline bool read_input_round(request_env& e) {
  e.round.responses = e.msg.params["inputResponses"];
  const json::value state = e.msg.params["requestState"];
  if (!state.exists()) return true;
  std::optional<std::string> verified;
  if (state.is_string()) {
    verified = verify_request_state(e.s, state.as_string(),
                                    request_state_binding(e.s, e.ctx.caller.id, e.msg.method, input_subject(e.msg)));
  }
  if (!verified) {
    const auto cid = e.s.mint_cid();
    error_data d;
    d.correlation_id = cid.view();
    d.remediation = "Send the requestState of the server's last input_required result unchanged, within its "
                    "lifetime, as the same caller and for the same request; or start again without one.";
    d.reason = "invalid_request_state";
    write_error_response(e.out, e.id, errc::invalid_params, "Invalid or expired requestState", d);
    e.error = errc::invalid_params;
    return false;
  }
  e.round.state = std::move(*verified);
  return true;
}

// ---- what `need_input` becomes ---------------------------------------------------------------------

/// The per-request era: -32021 when the request's client capabilities lack one the input needs,
/// else the `input_required` result with its signed state. Always answers (true).
inline bool write_input_required(request_env& e, const input_required& ir) {
  MCPCORE_ASSERT(e.ctx.envelope != nullptr);
  const json::value caps = e.ctx.envelope->client_capabilities;
  unsigned missing = 0;
  std::string first;
  for (const auto& [key, r] : ir.requests()) {
    for (unsigned bit = 1; bit != 0 && bit <= r.required_capabilities(); bit <<= 1U) {
      if ((r.required_capabilities() & bit) != 0 && !declares(caps, static_cast<client_capability>(bit))) {
        if (missing == 0) first = "Cannot request input '" + echo_name(key) + "' (" + std::string{r.method()} + ")";
        missing |= bit;
      }
    }
  }
  if (missing != 0) {
    std::string required;
    write_client_capabilities(required, missing);
    const std::array members{error_data_member{"requiredCapabilities", required}};
    const auto cid = e.s.mint_cid();
    error_data d;
    d.correlation_id = cid.view();
    d.remediation = "Declare the capabilities in error.data.requiredCapabilities in "
                    "io.modelcontextprotocol/clientCapabilities, if the client supports them.";
    d.members = members;
    write_error_response(e.out, e.id, errc::missing_client_capability,
                         first + ": the request's client capabilities do not declare the required capability", d);
    e.error = errc::missing_client_capability;
    return true;
  }
  const std::string state = sign_request_state(
      e.s, request_state_binding(e.s, e.ctx.caller.id, e.msg.method, input_subject(e.msg)), ir.round_state());
  write_result_response(e.out, e.id, [&](json::writer& w) {
    w.begin_object().member("resultType", "input_required").key("inputRequests").begin_object();
    for (const auto& [key, r] : ir.requests()) {
      w.key(key).begin_object().member("method", r.method());
      if (!r.params_json().empty()) w.raw_member("params", r.params_json());
      w.end_object();
    }
    w.end_object().member("requestState", state).end_object();
  });
  e.input_required = true;
  return true;
}

/// Why a round of input is refused before anything is sent: too many rounds, or none asked.
inline std::string refuse_input_round(const server::impl& s, const input_required& ir, std::size_t& rounds) {
  if (++rounds > s.options.max_input_rounds) return "the tool asked for input too many times";
  if (ir.requests().empty()) return "the tool asked for input without saying which";
  return {};
}

/// The handshake era without a resumer: sends each request to the client on the session, waits
/// for each answer on this thread, and collects them into `e.round` for the handler's next run.
/// An empty string on success, else why the input could not be had.
inline std::string gather_input(request_env& e, std::stop_token stop, const input_required& ir, std::size_t& rounds) {
  if (std::string why = refuse_input_round(e.s, ir, rounds); !why.empty()) return why;
  call_state_impl state{e.s, e.ctx, e.id, {}, std::move(stop)};
  decltype(e.round.replies) replies;
  for (const auto& [key, r] : ir.requests()) {
    auto reply = state.request(r.method(), r.params_json(), e.s.options.max_client_request_timeout);
    if (!reply) return "the client could not answer '" + echo_name(key) + "': " + reply.error().message();
    replies.emplace_back(key, std::move(*reply));
  }
  e.round.replies = std::move(replies);
  e.round.state = ir.round_state();
  return {};
}

}  // namespace detail
MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_INPUT_REQUIRED_IPP
