// SPDX-License-Identifier: Apache-2.0
// What a handler sees and returns: content blocks, tool/resource/prompt results, and the call
// context (progress, logging, cancellation, requests to the client).
#ifndef MCPCORE_TOOL_HPP
#define MCPCORE_TOOL_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/wire/client_capability.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>
#include <mcpcore/wire/jsonrpc.hpp>
#include <mcpcore/wire/log_level.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

struct principal;
class call_link;
namespace detail {
class final_builder;
}  // namespace detail

/// The arguments of a call: the `params.arguments` object (absent when the client sent none;
/// lookups on an absent value return absent values, so `args["x"]` never needs a check).
using arguments = json::value;

/// One content item (MCP 2025-11-25 `ContentBlock`): text, image, audio, resource link or
/// embedded resource. Build them with the static functions; data of images, audio and blobs is
/// base64 text supplied by the host (mcpcore does not re-encode it).
class content_block {
 public:
  enum class kind : std::uint8_t { text, image, audio, resource_link, resource_text, resource_blob };

  [[nodiscard]] static content_block text(std::string text) {
    return content_block{kind::text, std::move(text), {}, {}, {}};
  }
  [[nodiscard]] static content_block image(std::string base64, std::string mime_type) {
    return content_block{kind::image, std::move(base64), std::move(mime_type), {}, {}};
  }
  [[nodiscard]] static content_block audio(std::string base64, std::string mime_type) {
    return content_block{kind::audio, std::move(base64), std::move(mime_type), {}, {}};
  }
  /// A `resource_link`; `mime_type` and `description` are omitted when empty.
  [[nodiscard]] static content_block resource_link(std::string uri, std::string name,
                                                   std::string mime_type = {},
                                                   std::string description = {}) {
    return content_block{kind::resource_link, std::move(uri), std::move(mime_type), std::move(name),
                         std::move(description)};
  }
  /// An embedded text resource (`{"type":"resource","resource":{uri,mimeType,text}}`).
  [[nodiscard]] static content_block embedded_text(std::string uri, std::string mime_type,
                                                   std::string text) {
    return content_block{kind::resource_text, std::move(uri), std::move(mime_type), std::move(text), {}};
  }
  /// An embedded binary resource (`{"type":"resource","resource":{uri,mimeType,blob}}`).
  [[nodiscard]] static content_block embedded_blob(std::string uri, std::string mime_type,
                                                   std::string base64) {
    return content_block{kind::resource_blob, std::move(uri), std::move(mime_type), std::move(base64), {}};
  }

  [[nodiscard]] kind type() const noexcept { return kind_; }
  /// Text, base64 data, or the URI of resource kinds.
  [[nodiscard]] const std::string& primary() const noexcept { return a_; }
  [[nodiscard]] const std::string& mime_type() const noexcept { return b_; }
  /// The text or base64 blob of an embedded resource; the name of a resource link.
  [[nodiscard]] const std::string& resource_payload() const noexcept { return c_; }

  /// Writes the block as a JSON object.
  MCPCORE_DECL void write(json::writer& w) const;

 private:
  content_block(kind k, std::string a, std::string b, std::string c, std::string d)
      : kind_(k), a_(std::move(a)), b_(std::move(b)), c_(std::move(c)), d_(std::move(d)) {}
  kind kind_;
  std::string a_, b_, c_, d_;
};

/// One request for input from the client (docs/eras.md#input-requests), the same in both eras:
/// an `inputRequests` entry of an `input_required` result in the per-request era, a
/// server-to-client request on the session in the handshake era.
class input_request {
 public:
  /// `elicitation/create` in form mode: a message and the JSON Schema object of the fields.
  [[nodiscard]] MCPCORE_DECL static input_request elicit(std::string_view message, std::string_view requested_schema_json);
  /// `elicitation/create` in URL mode: the user completes it on `url`.
  [[nodiscard]] MCPCORE_DECL static input_request elicit_url(std::string_view message, std::string_view url);
  /// `sampling/createMessage` with its params object (JSON text: messages, maxTokens, ...).
  [[nodiscard]] MCPCORE_DECL static input_request create_message(std::string params_json);
  /// `roots/list`.
  [[nodiscard]] MCPCORE_DECL static input_request list_roots();

  [[nodiscard]] std::string_view method() const noexcept { return method_; }
  /// The params object (JSON text), or empty for none.
  [[nodiscard]] const std::string& params_json() const noexcept { return params_; }
  /// The client capabilities it needs, as a bitwise or of `client_capability`.
  [[nodiscard]] unsigned required_capabilities() const noexcept { return caps_; }

 private:
  input_request(std::string_view method, std::string params, unsigned caps)
      : method_(method), params_(std::move(params)), caps_(caps) {}
  std::string_view method_;  // one of the static method names
  std::string params_;
  unsigned caps_ = 0;
};

/// A handler's answer "the client must answer these first" (docs/eras.md#the-handler-contract):
/// the requests, keyed by names the handler chooses, and the state it wants back in the next
/// round. The handler runs again with the answers (`call_context::input`) and the state
/// (`call_context::round_state`); everything it did before returning this runs again too.
class input_required {
 public:
  /// Asks for `r` under `key` (a later `ask` with the same key replaces it).
  input_required& ask(std::string key, input_request r) {
    for (auto& [k, v] : requests_) {
      if (k == key) {
        v = std::move(r);
        return *this;
      }
    }
    requests_.emplace_back(std::move(key), std::move(r));
    return *this;
  }
  /// State for the next round (signed by the server, readable by the client; keep secrets out).
  input_required& state(std::string s) {
    state_ = std::move(s);
    return *this;
  }
  [[nodiscard]] const std::vector<std::pair<std::string, input_request>>& requests() const noexcept {
    return requests_;
  }
  [[nodiscard]] const std::string& round_state() const noexcept { return state_; }

 private:
  std::vector<std::pair<std::string, input_request>> requests_;
  std::string state_;
};

/// The outcome of a tool handler (MCP `CallToolResult`).
///
/// Execution failures the model should see are results with `is_error()` (MCP recommends this
/// over JSON-RPC errors); governance refusals are produced by the server, not by handlers.
/// Structured results carry `structuredContent` and, when no content was added, a text twin
/// holding the same JSON (docs/design.md#the-toolscall-pipeline).
class tool_result {
 public:
  tool_result() = default;

  /// One text item.
  [[nodiscard]] static tool_result text(std::string text) {
    tool_result r;
    r.content_.push_back(content_block::text(std::move(text)));
    return r;
  }
  /// `isError: true` with one text item saying what went wrong.
  [[nodiscard]] static tool_result error(std::string message) {
    tool_result r = text(std::move(message));
    r.is_error_ = true;
    return r;
  }
  /// A structured result from a JSON object text (checked by the server before it is sent: a
  /// malformed payload becomes -32603, never a malformed response).
  [[nodiscard]] static tool_result structured(std::string json_object) {
    tool_result r;
    r.structured_ = std::move(json_object);
    return r;
  }
  /// A structured result written by `f(json::writer&)`, which must write one object.
  template <class F>
    requires std::is_invocable_v<F&, json::writer&>
  [[nodiscard]] static tool_result structured_with(F&& f) {
    tool_result r;
    json::writer w{r.structured_};
    f(w);
    return r;
  }

  tool_result& add(content_block block) {
    content_.push_back(std::move(block));
    return *this;
  }
  tool_result& add_text(std::string text) { return add(content_block::text(std::move(text))); }
  tool_result& set_error(bool is_error = true) noexcept {
    is_error_ = is_error;
    return *this;
  }
  tool_result& set_structured(std::string json_object) {
    structured_ = std::move(json_object);
    return *this;
  }
  /// No result yet: the client must answer `r` first (docs/eras.md#the-handler-contract).
  [[nodiscard]] static tool_result need_input(input_required r) {
    tool_result t;
    t.input_.emplace(std::move(r));
    return t;
  }
  /// The input this result waits for; null for a result.
  [[nodiscard]] const input_required* input() const noexcept { return input_ ? &*input_ : nullptr; }

  [[nodiscard]] const std::vector<content_block>& content() const noexcept { return content_; }
  /// The structured payload's JSON text; empty when the result has none.
  [[nodiscard]] const std::string& structured_json() const noexcept { return structured_; }
  [[nodiscard]] bool is_error() const noexcept { return is_error_; }

 private:
  std::vector<content_block> content_;
  std::string structured_;
  bool is_error_ = false;
  std::optional<input_required> input_;
};

/// The contents of a `resources/read` (MCP `ReadResourceResult`).
class resource_result {
 public:
  /// Adds `{uri, mimeType, text}`.
  resource_result& add_text(std::string uri, std::string mime_type, std::string text) {
    items_.push_back(content_block::embedded_text(std::move(uri), std::move(mime_type), std::move(text)));
    return *this;
  }
  /// Adds `{uri, mimeType, blob}` (base64).
  resource_result& add_blob(std::string uri, std::string mime_type, std::string base64) {
    items_.push_back(content_block::embedded_blob(std::move(uri), std::move(mime_type), std::move(base64)));
    return *this;
  }
  [[nodiscard]] const std::vector<content_block>& contents() const noexcept { return items_; }

 private:
  std::vector<content_block> items_;
};

/// The answer of `prompts/get` (MCP `GetPromptResult`).
class prompt_result {
 public:
  enum class role : std::uint8_t { user, assistant };
  explicit prompt_result(std::string description = {}) : description_(std::move(description)) {}

  prompt_result& add(role r, content_block content) {
    messages_.emplace_back(r, std::move(content));
    return *this;
  }
  prompt_result& add_user_text(std::string text) { return add(role::user, content_block::text(std::move(text))); }

  [[nodiscard]] const std::string& description() const noexcept { return description_; }
  [[nodiscard]] const std::vector<std::pair<role, content_block>>& messages() const noexcept {
    return messages_;
  }
  /// No prompt yet: the client must answer `r` first (docs/eras.md#the-handler-contract).
  [[nodiscard]] static prompt_result need_input(input_required r) {
    prompt_result p;
    p.input_.emplace(std::move(r));
    return p;
  }
  /// The input this result waits for; null for a prompt.
  [[nodiscard]] const input_required* input() const noexcept { return input_ ? &*input_ : nullptr; }

 private:
  std::string description_;
  std::vector<std::pair<role, content_block>> messages_;
  std::optional<input_required> input_;
};

/// Appends a caller-supplied prompt argument as inert data (docs/design.md#other-methods): a
/// preamble line saying the quoted string is data only, `BEGIN UNTRUSTED ARGUMENT <name>`, the
/// value as one JSON string on one line (so it can contain no line break and cannot forge the end
/// marker), and `END UNTRUSTED ARGUMENT <name>`. `name` is the prompt's own (server-authored) name.
MCPCORE_DECL void append_untrusted_argument(std::string& out, std::string_view name,
                                            std::string_view value);

/// Why a request to the client produced no answer.
enum class client_request_errc : std::uint8_t {
  no_channel = 1,   ///< the transport has no way to reach the client (stateless call)
  not_supported,    ///< the client did not declare the capability the method needs
  timed_out,        ///< no answer within the timeout; the server sent notifications/cancelled
  cancelled,        ///< the call itself was cancelled while waiting
  closed,           ///< the connection closed or the server is shutting down
  too_many_pending, ///< the peer's table of outstanding requests is full
  too_many_waiting, ///< the caller has `max_waiting_calls_per_principal` calls waiting already
};
[[nodiscard]] MCPCORE_DECL const std::error_category& client_request_category() noexcept;
[[nodiscard]] inline std::error_code make_error_code(client_request_errc e) noexcept {
  return {static_cast<int>(e), client_request_category()};
}

/// The client's answer to a server-to-client request: its `result`, or its JSON-RPC `error`.
class client_reply {
 public:
  client_reply() = default;
  /// Takes a parsed response (library use).
  client_reply(json::document doc, bool is_error) noexcept : doc_(std::move(doc)), is_error_(is_error) {}
  /// Whether the client answered with a JSON-RPC error.
  [[nodiscard]] bool is_error() const noexcept { return is_error_; }
  /// The `result` (or `error`) value.
  [[nodiscard]] json::value value() const noexcept {
    return doc_.root()[is_error_ ? "error" : "result"];
  }

 private:
  json::document doc_;
  bool is_error_ = false;
};

/// Default bound on a server-to-client request (a request never waits forever).
inline constexpr std::chrono::milliseconds default_client_request_timeout{60000};

namespace detail {
/// The server's side of one call (library use; implemented by the dispatch core).
class MCPCORE_API call_state {
 public:
  virtual const principal& caller() const noexcept = 0;
  virtual request_id_view id() const noexcept = 0;
  virtual std::stop_token stop_token() const noexcept = 0;
  virtual bool wants_progress() const noexcept = 0;
  virtual bool progress(double progress, std::optional<double> total, std::string_view message) = 0;
  virtual bool log(log_level level, std::string_view data, std::string_view logger) = 0;
  virtual result<client_reply> request(std::string_view method, std::string_view params_json,
                                       std::chrono::milliseconds timeout) = 0;
  /// The transport's record of this call (`dispatch_context::progress`), if any.
  virtual call_link* link() const noexcept { return nullptr; }
  /// How a final of this call's work is checked and written (operation.hpp); null when there is
  /// no tool to check it against.
  virtual std::shared_ptr<const final_builder> finals() const { return nullptr; }
  /// Ends the call's SSE response early (see `call_context::close_stream`); false when the
  /// transport cannot.
  virtual bool close_stream(std::chrono::milliseconds /*retry*/) noexcept { return false; }
  /// The client's answer to the input asked for under `key` in the previous round; absent when
  /// there is none.
  virtual json::value input(std::string_view /*key*/) const noexcept { return {}; }
  /// The state the handler returned with its last `input_required`; empty on the first round.
  virtual std::string_view round_state() const noexcept { return {}; }
  /// Whether the client declared capability `c` (for this request, or at `initialize`).
  virtual bool client_declares(client_capability /*c*/) const noexcept { return false; }

 protected:
  ~call_state() = default;
};
}  // namespace detail

/// What a handler can do during one call. Valid only during the handler's invocation.
///
/// @par Thread safety
/// One call context belongs to one call; the handler may use it from helper threads as long as
/// they finish before the handler returns.
class call_context {
 public:
  /// Library use.
  explicit call_context(detail::call_state& state) noexcept : state_(&state) {}

  /// The authenticated caller.
  [[nodiscard]] const principal& caller() const noexcept { return state_->caller(); }
  /// The id of the request being served.
  [[nodiscard]] request_id_view id() const noexcept { return state_->id(); }
  /// Signalled when the client cancels the request (notifications/cancelled) or the transport
  /// shuts down. A handler that stops early may return anything; no response is sent.
  [[nodiscard]] std::stop_token stop_token() const noexcept { return state_->stop_token(); }
  [[nodiscard]] bool stop_requested() const noexcept { return stop_token().stop_requested(); }

  /// Library use: the transport's record of this call (null when the transport gave none);
  /// `detach` (operation.hpp) uses it.
  [[nodiscard]] call_link* link() const noexcept { return state_->link(); }
  /// Library use: how the final of this call's detached work is checked (`detach` uses it).
  [[nodiscard]] std::shared_ptr<const detail::final_builder> finals() const { return state_->finals(); }
  /// Whether the request carried `_meta.progressToken`.
  [[nodiscard]] bool wants_progress() const noexcept { return state_->wants_progress(); }
  /// Sends `notifications/progress`. Returns false (and sends nothing) when the request had no
  /// progress token, when `progress` does not strictly exceed the last value sent (MCP: progress
  /// increases), or when the transport cannot deliver in-call messages.
  bool progress(double progress, std::optional<double> total = {}, std::string_view message = {}) {
    return state_->progress(progress, total, message);
  }
  /// Sends `notifications/message` with `data` as a JSON string, if `level` is at or above the
  /// level the client set with logging/setLevel (or the server's default). Returns whether it
  /// was sent.
  bool log(log_level level, std::string_view data, std::string_view logger = {}) {
    return state_->log(level, data, logger);
  }
  /// Ends this call's SSE response now, after the priming event (upgrading the response to SSE
  /// if needed), without a result and without a close notification (SEP-1699 polling). The
  /// client reconnects with GET + `Last-Event-ID` after `retry` (the transport's default when 0)
  /// and receives the rest of the call's messages, the result last. The call itself goes on.
  /// Returns false, and changes nothing, when the transport cannot: no session, no SSE accepted,
  /// a stateless transport (stdio), or a streamed response that could not be admitted.
  bool close_stream(std::chrono::milliseconds retry = {}) noexcept { return state_->close_stream(retry); }
  /// Sends a request to the client (`sampling/createMessage`, `elicitation/create`,
  /// `roots/list`, `ping`) and waits for the answer, for at most `timeout` (capped by the
  /// server's option) and never past cancellation of this call.
  /// @param params_json the request's params object, or empty for none.
  /// @par Errors
  /// `client_request_errc`: no channel, capability not declared by the client, timeout,
  /// cancellation, closed connection, too many outstanding requests.
  [[nodiscard]] result<client_reply> request(std::string_view method, std::string_view params_json,
                                             std::chrono::milliseconds timeout = default_client_request_timeout) {
    return state_->request(method, params_json, timeout);
  }
  /// The client's answer to the input this call asked for under `key` in its previous round
  /// (`tool_result::need_input`): the bare result of the request (for an elicitation
  /// `{"action":..,"content":..}`), or an absent value on the first round and for a key the
  /// client did not answer (ask again). Answers the handler did not ask for are ignored; the
  /// content is the client's, unvalidated (docs/eras.md#the-handler-contract).
  [[nodiscard]] json::value input(std::string_view key) const noexcept { return state_->input(key); }
  /// The state the handler returned with its previous `input_required` (verified by the server
  /// as its own, unexpired, for this caller and method); empty on the first round.
  [[nodiscard]] std::string_view round_state() const noexcept { return state_->round_state(); }
  /// Whether the client declared `c`: in the per-request era, in this request's envelope; in the
  /// handshake era, at `initialize`. A handler asks only for input the client can give.
  [[nodiscard]] bool client_declares(client_capability c) const noexcept { return state_->client_declares(c); }

 private:
  detail::call_state* state_;
};

MCPCORE_END_NAMESPACE

template <>
struct std::is_error_code_enum<mcpcore::client_request_errc> : std::true_type {};

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/dispatch/impl/tool.ipp>
#endif

#endif  // MCPCORE_TOOL_HPP
