// SPDX-License-Identifier: Apache-2.0
// Shared helpers of the dispatch-core and stdio tests: request builders, a recording message
// sink, a parsed view of the server's answers, a gate for blocking handlers, metric lookups.
#ifndef MCPCORE_TESTS_SUPPORT_SERVER_FIXTURE_HPP
#define MCPCORE_TESTS_SUPPORT_SERVER_FIXTURE_HPP

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <doctest/doctest.h>

#include "support/exposition.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace server_fixture {

using namespace std::chrono_literals;

/// How long a test waits for something that should happen at once; reached only on failure.
inline constexpr std::chrono::milliseconds patience{5000};

// ---- request builders ---------------------------------------------------------------------------

/// Completes a message begun by `head` (which ends with a comma) with its method and params.
inline std::string finish_message(std::string head, std::string_view method, std::string_view params_json) {
  head += R"("method":")";
  head += method;
  head += '"';
  if (!params_json.empty()) {
    head += R"(,"params":)";
    head += params_json;
  }
  head += '}';
  return head;
}

/// `{"jsonrpc":"2.0","id":<id_json>,"method":<method>[,"params":<params_json>]}`.
inline std::string request(std::string_view id_json, std::string_view method, std::string_view params_json = {}) {
  std::string head = R"({"jsonrpc":"2.0","id":)";
  head += id_json;
  head += ',';
  return finish_message(std::move(head), method, params_json);
}
inline std::string request(std::int64_t id, std::string_view method, std::string_view params_json = {}) {
  return request(std::to_string(id), method, params_json);
}

/// A notification (no id).
inline std::string notification(std::string_view method, std::string_view params_json = {}) {
  return finish_message(R"({"jsonrpc":"2.0",)", method, params_json);
}

/// A `tools/call` request; `args_json` and `meta_json` are omitted when empty.
inline std::string call_tool(std::string_view id_json, std::string_view name, std::string_view args_json = {},
                             std::string_view meta_json = {}) {
  std::string p = R"({"name":")";
  p += name;
  p += '"';
  if (!args_json.empty()) {
    p += R"(,"arguments":)";
    p += args_json;
  }
  if (!meta_json.empty()) {
    p += R"(,"_meta":)";
    p += meta_json;
  }
  p += '}';
  return request(id_json, "tools/call", p);
}
inline std::string call_tool(std::int64_t id, std::string_view name, std::string_view args_json = {},
                             std::string_view meta_json = {}) {
  return call_tool(std::to_string(id), name, args_json, meta_json);
}

/// `notifications/cancelled` for `request_id_json` (spelled as JSON: `5` or `"5"`).
inline std::string cancel(std::string_view request_id_json) {
  return notification("notifications/cancelled", std::string{R"({"requestId":)"} + std::string{request_id_json} + "}");
}

/// A client's success response to a server-to-client request.
inline std::string client_result(std::int64_t id, std::string_view result_json) {
  return std::string{R"({"jsonrpc":"2.0","id":)"} + std::to_string(id) + R"(,"result":)" + std::string{result_json} +
         "}";
}

/// An `initialize` request declaring `capabilities_json`.
inline std::string initialize(std::int64_t id, std::string_view version = "2025-11-25",
                              std::string_view capabilities_json = "{}") {
  std::string p = R"({"protocolVersion":")";
  p += version;
  p += R"(","capabilities":)";
  p += capabilities_json;
  p += R"(,"clientInfo":{"name":"test-client","version":"0.1"}})";
  return request(id, "initialize", p);
}

// ---- parsed JSON --------------------------------------------------------------------------------

/// A parsed JSON text that keeps its document alive.
struct parsed {
  mcpcore::json::document doc;
  mcpcore::json::value root;
};

inline parsed parse(std::string_view text) {
  parsed p;
  auto r = p.doc.parse(text);
  REQUIRE_MESSAGE(r.has_value(), "not JSON: " << text);
  p.root = *r;
  return p;
}

/// Compact JSON text of a value (members in document order).
inline std::string to_json(mcpcore::json::value v) {
  std::string s;
  mcpcore::json::writer w{s};
  w.value(v);
  return s;
}

/// The `i`-th element of an array, or an absent value.
inline mcpcore::json::value at(mcpcore::json::value array, std::size_t i) {
  for (const auto e : array.elements()) {
    if (i-- == 0) return e;
  }
  return {};
}

/// The string at `v`, or "<absent>" / "<not a string>" (readable in failure messages).
inline std::string str(mcpcore::json::value v) {
  if (!v.exists()) return "<absent>";
  if (!v.is_string()) return "<not a string>";
  return std::string{v.as_string()};
}

/// One round of the handler most input tests declare (docs/eras.md#the-handler-contract): it greets
/// the name the client gave for `key` (an elicitation answer `{"content":{"name":...}}`), or asks
/// for it with `prompt` and a form of one `name` string.
inline mcpcore::tool_result greet_or_ask(mcpcore::call_context& ctx, std::string_view key, std::string_view prompt) {
  const auto answer = ctx.input(key);
  if (answer.exists()) return mcpcore::tool_result::text("hello " + str(answer["content"]["name"]));
  mcpcore::input_required ir;
  ir.ask(std::string{key},
         mcpcore::input_request::elicit(prompt, R"({"type":"object","properties":{"name":{"type":"string"}}})"));
  return mcpcore::tool_result::need_input(std::move(ir));
}

/// What `server::handle` did with one message.
struct answer {
  /// The value `handle` returned.
  bool returned = false;
  /// The bytes `handle` appended to its output.
  std::string text;
  mcpcore::json::document doc;
  /// The parsed output; absent when nothing was written.
  mcpcore::json::value root;

  [[nodiscard]] mcpcore::json::value result() const { return root["result"]; }
  [[nodiscard]] mcpcore::json::value error() const { return root["error"]; }
  [[nodiscard]] mcpcore::json::value data() const { return error()["data"]; }
  /// `error.code`, or 0 when the answer is not an error.
  [[nodiscard]] std::int64_t code() const { return error()["code"].to_int64().value_or(0); }
  [[nodiscard]] std::string message() const { return str(error()["message"]); }
  [[nodiscard]] std::string cid() const { return str(data()["correlation_id"]); }
};

/// Parses `text` as a client message and hands it to `s.handle`.
inline answer handle(mcpcore::server& s, std::string_view text, const mcpcore::dispatch_context& ctx) {
  mcpcore::json::document in;
  auto msg = mcpcore::parse_message(in, text);
  REQUIRE_MESSAGE(msg.has_value(), "the test sent an invalid message: " << text);
  answer a;
  a.returned = s.handle(*msg, ctx, a.text);
  if (!a.text.empty()) {
    auto r = a.doc.parse(a.text);
    REQUIRE_MESSAGE(r.has_value(), "the server wrote invalid JSON: " << a.text);
    a.root = *r;
  }
  return a;
}

/// Whether `s` has the shape `req-<lowercase hex>-<lowercase hex>`
/// (docs/errors.md#the-errordata-envelope).
inline bool is_correlation_id(std::string_view s) {
  auto hex_run = [&](std::size_t& i) {
    const std::size_t start = i;
    while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) ++i;
    return i > start;
  };
  if (s.substr(0, 4) != "req-") return false;
  std::size_t i = 4;
  if (!hex_run(i) || i >= s.size() || s[i] != '-') return false;
  ++i;
  return hex_run(i) && i == s.size();
}

// ---- in-call messages -------------------------------------------------------------------------

/// A thread-safe `message_sink` that keeps every message; it can be told to refuse delivery.
class recording_sink final : public mcpcore::message_sink {
 public:
  bool send(std::string_view message) noexcept override {
    try {
      {
        std::lock_guard lock{mu_};
        if (refuse_) return false;
        messages_.emplace_back(message);
      }
      cv_.notify_all();
      return true;
    } catch (...) {
      return false;
    }
  }
  /// From now on `send` returns false and keeps nothing.
  void refuse(bool on = true) {
    std::lock_guard lock{mu_};
    refuse_ = on;
  }
  [[nodiscard]] std::vector<std::string> messages() const {
    std::lock_guard lock{mu_};
    return messages_;
  }
  [[nodiscard]] std::size_t size() const {
    std::lock_guard lock{mu_};
    return messages_.size();
  }
  void clear() {
    std::lock_guard lock{mu_};
    messages_.clear();
  }
  /// The first message (oldest first) whose `method` is `method`, waiting up to `timeout`.
  std::optional<std::string> wait_for_method(std::string_view method, std::chrono::milliseconds timeout = patience) {
    std::unique_lock lock{mu_};
    std::optional<std::string> found;
    cv_.wait_for(lock, timeout, [&] {
      for (const auto& m : messages_) {
        mcpcore::json::document d;
        auto r = d.parse(m);
        if (r && (*r)["method"].is_string() && (*r)["method"].as_string() == method) {
          found = m;
          return true;
        }
      }
      return false;
    });
    return found;
  }
  /// The messages whose `method` is `method`, in order.
  [[nodiscard]] std::vector<std::string> with_method(std::string_view method) const {
    std::vector<std::string> out;
    for (const auto& m : messages()) {
      mcpcore::json::document d;
      auto r = d.parse(m);
      if (r && (*r)["method"].is_string() && (*r)["method"].as_string() == method) out.push_back(m);
    }
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> messages_;
  bool refuse_ = false;
};

/// One client connection: the caller, its peer state and its in-call channel.
struct connection {
  mcpcore::principal caller;
  mcpcore::peer client;
  recording_sink sink;

  explicit connection(mcpcore::principal who = {.id = "alice"}) : caller(std::move(who)) {}
  [[nodiscard]] mcpcore::dispatch_context ctx() { return {caller, &client, &sink}; }
  answer send(mcpcore::server& s, std::string_view text) { return handle(s, text, ctx()); }
};

// ---- blocking handlers ------------------------------------------------------------------------

/// Lets a test know a handler started, and holds the handler until it is opened or stopped.
class gate {
 public:
  /// Called by the handler when it starts.
  void arrive() {
    {
      std::lock_guard lock{mu_};
      ++arrived_;
    }
    cv_.notify_all();
  }
  /// Waits until `n` handlers arrived.
  bool wait_arrived(int n = 1, std::chrono::milliseconds timeout = patience) {
    std::unique_lock lock{mu_};
    return cv_.wait_for(lock, timeout, [&] { return arrived_ >= n; });
  }
  /// Blocks until `open()` (true) or a stop request on `st` (false).
  bool block(std::stop_token st) {
    std::unique_lock lock{mu_};
    return cv_.wait(lock, st, [&] { return open_; });
  }
  void open() {
    {
      std::lock_guard lock{mu_};
      open_ = true;
    }
    cv_.notify_all();
  }
  [[nodiscard]] int arrived() const {
    std::lock_guard lock{mu_};
    return arrived_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  int arrived_ = 0;
  bool open_ = false;
};

/// A one-shot event with bounded waits.
class flag {
 public:
  void set() {
    {
      std::lock_guard lock{mu_};
      set_ = true;
    }
    cv_.notify_all();
  }
  /// Whether the flag was set within `timeout`.
  bool wait(std::chrono::milliseconds timeout = patience) {
    std::unique_lock lock{mu_};
    return cv_.wait_for(lock, timeout, [&] { return set_; });
  }
  [[nodiscard]] bool is_set() const {
    std::lock_guard lock{mu_};
    return set_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

// ---- metrics ----------------------------------------------------------------------------------

/// The registry's Prometheus exposition.
inline std::string exposition(const mcpcore::metrics_registry& m) {
  std::string s;
  m.write_prometheus(s);
  return s;
}

using ::series_value;
inline long long series_value(const mcpcore::metrics_registry& m, std::string_view series) {
  return series_value(exposition(m), series);
}

/// Builds `b`, failing the test with every offence when it is refused.
inline mcpcore::server build(mcpcore::server_builder& b) {
  auto r = b.build();
  if (!r.has_value()) {
    const std::string why = r.error().message();
    FAIL("build refused: " << why);
  }
  return std::move(*r);
}

}  // namespace server_fixture

#endif  // MCPCORE_TESTS_SUPPORT_SERVER_FIXTURE_HPP
