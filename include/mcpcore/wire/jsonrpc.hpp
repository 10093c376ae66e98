// SPDX-License-Identifier: Apache-2.0
// JSON-RPC 2.0 messages as MCP uses them: ids, parsing of one message, response builders.
#ifndef MCPCORE_JSONRPC_HPP
#define MCPCORE_JSONRPC_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/wire/error.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

MCPCORE_BEGIN_NAMESPACE

/// A non-owning JSON-RPC request id: an integer or a string.
///
/// MCP forbids `null` ids and allows strings and integers only. Ids compare as exact JSON
/// values: the integer `1` and the string `"1"` are different requests; strings compare after
/// unescaping (`"\u0041"` equals `"A"`).
class request_id_view {
 public:
  /// An integer id. (A template, so that a literal `0` is an id, not a null `const char*`.)
  /// @pre `n` fits a signed 64-bit integer.
  template <std::integral I>
    requires(!json::detail::is_character_v<I>)
  constexpr request_id_view(I n) noexcept  // NOLINT(google-explicit-constructor)
      : integer_(static_cast<std::int64_t>(n)) {
    MCPCORE_ASSERT(std::in_range<std::int64_t>(n));
  }
  /// A string id (unescaped text).
  constexpr request_id_view(std::string_view s) noexcept  // NOLINT(google-explicit-constructor)
      : string_(s), is_string_(true) {}
  constexpr request_id_view(const char* s) noexcept  // NOLINT(google-explicit-constructor)
      : request_id_view(std::string_view{s}) {}

  [[nodiscard]] constexpr bool is_string() const noexcept { return is_string_; }
  [[nodiscard]] constexpr bool is_integer() const noexcept { return !is_string_; }
  /// The integer. @pre `is_integer()`.
  [[nodiscard]] constexpr std::int64_t as_integer() const noexcept {
    MCPCORE_ASSERT(!is_string_);
    return integer_;
  }
  /// The string. @pre `is_string()`.
  [[nodiscard]] constexpr std::string_view as_string() const noexcept {
    MCPCORE_ASSERT(is_string_);
    return string_;
  }

  friend constexpr bool operator==(request_id_view a, request_id_view b) noexcept {
    if (a.is_string_ != b.is_string_) return false;
    return a.is_string_ ? a.string_ == b.string_ : a.integer_ == b.integer_;
  }

 private:
  std::string_view string_;
  std::int64_t integer_ = 0;
  bool is_string_ = false;
};

/// An owning request id, for keeping ids beyond the life of the parsed message (in-flight
/// tables, session maps). Integer ids and short strings do not allocate.
class request_id {
 public:
  /// An integer id. @pre `n` fits a signed 64-bit integer.
  template <std::integral I>
    requires(!json::detail::is_character_v<I>)
  request_id(I n) noexcept : integer_(static_cast<std::int64_t>(n)) {  // NOLINT(google-explicit-constructor)
    MCPCORE_ASSERT(std::in_range<std::int64_t>(n));
  }
  explicit request_id(std::string s) noexcept : string_(std::move(s)), is_string_(true) {}
  explicit request_id(request_id_view v)
      : string_(v.is_string() ? std::string{v.as_string()} : std::string{}),
        integer_(v.is_string() ? 0 : v.as_integer()),
        is_string_(v.is_string()) {}

  [[nodiscard]] request_id_view view() const noexcept {
    return is_string_ ? request_id_view{std::string_view{string_}} : request_id_view{integer_};
  }
  operator request_id_view() const noexcept { return view(); }  // NOLINT(google-explicit-constructor)

  friend bool operator==(const request_id& a, const request_id& b) noexcept {
    return a.view() == b.view();
  }

 private:
  std::string string_;
  std::int64_t integer_ = 0;
  bool is_string_ = false;
};

/// A hash of an id consistent with `==` (integers and strings hash apart).
[[nodiscard]] inline std::size_t hash_value(request_id_view id) noexcept {
  if (id.is_string()) return std::hash<std::string_view>{}(id.as_string()) ^ 0x9e3779b97f4a7c15ULL;
  // splitmix64's finalizer: integer ids are often small and sequential.
  auto x = static_cast<std::uint64_t>(id.as_integer());
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<std::size_t>(x ^ (x >> 31));
}

/// Writes an id as a JSON value.
inline void write_id(json::writer& w, request_id_view id) {
  if (id.is_string()) {
    w.value(id.as_string());
  } else {
    w.value(id.as_integer());
  }
}

/// Writes an id, or `null` when there is none.
inline void write_id(json::writer& w, const std::optional<request_id_view>& id) {
  if (id) {
    write_id(w, *id);
  } else {
    w.null();
  }
}

/// What a JSON-RPC message is.
enum class message_kind : std::uint8_t {
  request,       ///< `method` and `id`: expects a response
  notification,  ///< `method`, no `id`: never answered
  response,      ///< no `method`; `id` and exactly one of `result` / `error` (a client's answer
                 ///< to a server-initiated request)
};

/// One parsed JSON-RPC 2.0 message; views into the `json::document` it was read from.
struct message {
  message_kind kind = message_kind::request;
  /// The method of a request or notification.
  std::string_view method;
  /// The id of a request or response.
  std::optional<request_id_view> id;
  /// `params` of a request or notification: an object, or absent.
  json::value params;
  /// `result` of a successful response (any JSON value).
  json::value result;
  /// `error` of an error response: an object with an integer `code` and a string `message`.
  json::value error;
  /// The whole message object.
  json::value root;
};

/// Why a body was refused as a JSON-RPC message, with what to answer.
struct message_error {
  /// `parse_error`, `invalid_request` or `invalid_params`.
  errc code = errc::invalid_request;
  /// The `error.message` (a static string).
  std::string_view message;
  /// A server-authored hint for `error.data.remediation` (a static string).
  std::string_view remediation;
  /// The message's id when it could be read and the message is not response-shaped (echoed so
  /// the client can correlate); otherwise the error response carries `id: null`.
  std::optional<request_id_view> id;
};

/// Interprets a parsed JSON value as one JSON-RPC 2.0 message (docs/design.md#json-rpc).
///
/// Rules:
///  - the value must be an object (an array is a batch, which MCP removed in 2025-06-18:
///    one `invalid_request` answers it);
///  - `jsonrpc` must be the string `"2.0"`;
///  - `id`, when present, must be a string or an integer in the signed 64-bit range; `null` is
///    refused (MCP forbids null ids);
///  - a request or notification has a string `method`, no `result` and no `error`, and `params`
///    that is an object or absent (an array of positional params is `invalid_params`, any other
///    type `invalid_request`);
///  - a response has no `method`, an `id`, and exactly one of `result` and `error`; an `error`
///    must be an object with an integer `code` and a string `message`;
///  - other members are ignored.
///
/// @par Errors
/// `invalid_request` or `invalid_params`, with the id echoed when it was valid and the message is
/// not response-shaped: a message carrying `result` or `error` is refused with no id, because its
/// id belongs to the server's own request numbering (docs/errors.md#malformed-responses).
[[nodiscard]] MCPCORE_DECL result<message, message_error> read_message(json::value root) noexcept;

/// Parses `body` into `doc` and interprets it with `read_message`.
///
/// The body is copied once (into the document's padded buffer); field values are views into
/// the document, so the common message allocates nothing once the document has warmed up.
///
/// @par Errors
/// `parse_error` for text that is not JSON (including JSON beyond the document's limits);
/// `invalid_request` for an object repeating a member name, and the errors of `read_message`.
[[nodiscard]] MCPCORE_DECL result<message, message_error> parse_message(json::document& doc,
                                                                        std::string_view body);

namespace detail {
/// Opens a message object with `"jsonrpc":"2.0","id":<id or null>`, the head every response and
/// server-to-client request shares.
inline json::writer& begin_message(json::writer& w, const std::optional<request_id_view>& id) {
  w.begin_object().member("jsonrpc", "2.0").key("id");
  write_id(w, id);
  return w;
}
}  // namespace detail

/// Appends `{"jsonrpc":"2.0","id":<id>,"result":<result_json>}`.
/// @pre `result_json` is one complete JSON value.
MCPCORE_DECL void write_result_response(std::string& out, request_id_view id,
                                        std::string_view result_json);

/// Appends a success response whose result is written by `write_result(json::writer&)`.
template <class WriteResult>
  requires std::invocable<WriteResult&, json::writer&>
void write_result_response(std::string& out, request_id_view id, WriteResult&& write_result) {
  json::writer w{out};
  detail::begin_message(w, id).key("result");
  write_result(w);
  w.end_object();
}

/// Appends `{"jsonrpc":"2.0","id":<id or null>,"error":{"code":..,"message":..,"data":..}}`;
/// `data` is omitted when `e.data_json` is empty.
MCPCORE_DECL void write_error_response(std::string& out, const std::optional<request_id_view>& id,
                                       const error_object& e);

/// Appends an error response for `code`; `message` empty selects `default_message(code)`, and
/// `data` becomes `error.data` unless the code carries none (`carries_error_data`).
MCPCORE_DECL void write_error_response(std::string& out, const std::optional<request_id_view>& id,
                                       errc code, std::string_view message, const error_data& data);

/// Appends the error response for a refused message: its code, message and id, and an
/// `error.data` with `correlation_id`, `retry_after_ms: null` (resending the same bytes cannot
/// succeed) and the remediation.
MCPCORE_DECL void write_error_response(std::string& out, const message_error& e,
                                       std::string_view correlation_id);

/// Appends `{"jsonrpc":"2.0","method":<method>,"params":<params_json>}`; `params` is omitted
/// when `params_json` is empty.
MCPCORE_DECL void write_notification(std::string& out, std::string_view method,
                                     std::string_view params_json = {});

/// Appends a notification whose params are written by `write_params(json::writer&)`, which
/// must write one object.
template <class WriteParams>
  requires std::invocable<WriteParams&, json::writer&>
void write_notification(std::string& out, std::string_view method, WriteParams&& write_params) {
  json::writer w{out};
  w.begin_object().member("jsonrpc", "2.0").member("method", method).key("params");
  write_params(w);
  w.end_object();
}

/// Appends a server-to-client request (`sampling/createMessage`, `elicitation/create`,
/// `roots/list`, `ping`); `params` is omitted when `params_json` is empty.
MCPCORE_DECL void write_request(std::string& out, request_id_view id, std::string_view method,
                                std::string_view params_json = {});

MCPCORE_END_NAMESPACE

template <>
struct std::hash<mcpcore::request_id_view> {
  std::size_t operator()(mcpcore::request_id_view id) const noexcept { return mcpcore::hash_value(id); }
};
template <>
struct std::hash<mcpcore::request_id> {
  std::size_t operator()(const mcpcore::request_id& id) const noexcept {
    return mcpcore::hash_value(id.view());
  }
};

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/wire/impl/jsonrpc.ipp>
#endif

#endif  // MCPCORE_JSONRPC_HPP
