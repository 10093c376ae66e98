// SPDX-License-Identifier: Apache-2.0
// subscriptions/listen in the per-request era (docs/eras.md#subscriptions), through
// http_endpoint::handle: the acknowledgement and its subscriptionId, the honoured filter, the
// run-time visibility of tools and prompts and the list changes it publishes, resource updates,
// the refusals (params, Accept, the per-principal cap), the end of a listen (the client leaving,
// shutdown, nothing to listen to); and the server's event hub itself (server::subscribe,
// event_subscription, server::publish), alone and from several threads.
#include <mcpcore/transport/http_endpoint.hpp>

#include <doctest/doctest.h>

#include "support/http_endpoint_fixture.hpp"
#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/session/session_registry.hpp>
#include <mcpcore/session/stream_budget.hpp>
#include <mcpcore/wire/json.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

using namespace mcpcore;
using namespace std::chrono_literals;
namespace fx = server_fixture;

namespace subscriptions_test {

using namespace http_endpoint_fixture;

constexpr std::string_view ack_method = "notifications/subscriptions/acknowledged";
constexpr std::string_view subscription_id_key = "io.modelcontextprotocol/subscriptionId";

// ---- requests ----------------------------------------------------------------------------------

/// `subscriptions/listen` with id `id_json` and `params.notifications` = `filter_json` (JSON text;
/// nothing: no such member).
request listen_request(std::string_view id_json, std::optional<std::string_view> filter_json,
                       std::string_view token = "alice-token") {
  std::string members;
  if (filter_json) {
    members = R"("notifications":)";
    members += *filter_json;
  }
  return pr_post(pr_body(id_json, "subscriptions/listen", members), "subscriptions/listen", std::nullopt, token);
}

request tools_list(std::string_view id_json) { return pr_post(pr_body(id_json, "tools/list"), "tools/list"); }
request prompts_list(std::string_view id_json) { return pr_post(pr_body(id_json, "prompts/list"), "prompts/list"); }
request tools_call(std::string_view id_json, std::string_view tool) {
  return pr_post(pr_body(id_json, "tools/call", R"("name":")" + std::string{tool} + '"'), "tools/call", tool);
}
request prompts_get(std::string_view id_json, std::string_view prompt) {
  return pr_post(pr_body(id_json, "prompts/get", R"("name":")" + std::string{prompt} + '"'), "prompts/get", prompt);
}

/// A refusal answered as JSON, not a stream: the checks of `check_refusal`, and no stream.
void check_plain_refusal(const http_reply& r, int status, std::int64_t code, std::string_view id_json) {
  check_refusal(r, status, code, id_json);
  CAPTURE(r.head.body);
  CHECK_FALSE(r.stream);
}

/// The names of the listed `key` items ("tools", "prompts") of a list answer, space-separated.
std::string names_listed(const http_reply& r, std::string_view key) {
  REQUIRE_MESSAGE(r.head.status == 200, r.head.body);
  const auto p = body_of(r);
  const json::value items = p.root["result"][key];
  REQUIRE_MESSAGE(items.is_array(), r.head.body);
  std::string out;
  for (const auto item : items.elements()) {
    if (!out.empty()) out += ' ';
    out += fx::str(item["name"]);
  }
  return out;
}

// ---- SSE ---------------------------------------------------------------------------------------

/// Reads a listen stream as `sse_reader` does, counting its messages and tracing them.
class listen_reader : public sse_reader {
 public:
  using sse_reader::sse_reader;

  /// Pulls until `n` messages arrived (or the stream finished, or patience ran out).
  bool drive_until_messages(std::size_t n, std::chrono::milliseconds timeout = patience) {
    return drive_until([n](const std::vector<sse_event>& events) { return messages_of(events).size() >= n; },
                       timeout);
  }
  /// Collects whatever is queued. Events are queued synchronously by `publish`, so after this
  /// every frame an earlier action caused is in `wire()`.
  void settle() {
    (void)pull();
    (void)pull();
  }
  /// The messages as "method method ... result": a response reads "result" or "error".
  [[nodiscard]] std::string trace() const {
    std::string out;
    for (const auto& e : messages()) {
      if (!out.empty()) out += ' ';
      const auto p = fx::parse(e.data);
      if (p.root["method"].is_string()) {
        out += p.root["method"].as_string();
      } else {
        out += p.root["error"].exists() ? "error" : "result";
      }
    }
    return out;
  }
};

/// The parts of one frame the tests look at.
struct frame {
  std::string method;         ///< "<none>" for a response
  std::string subscription;   ///< params._meta subscriptionId as JSON text, or "<absent>"
  std::string notifications;  ///< params.notifications as JSON text, or "<absent>"
  std::string uri;            ///< params.uri, or "<absent>"
  std::string params_keys;    ///< the members of params, space-separated
  std::string json;           ///< the whole frame
};

frame frame_of(const sse_event& e) {
  const auto p = fx::parse(e.data);
  frame f;
  f.json = fx::to_json(p.root);
  f.method = p.root["method"].is_string() ? std::string{p.root["method"].as_string()} : std::string{"<none>"};
  const json::value params = p.root["params"];
  const json::value sid = params["_meta"][subscription_id_key];
  f.subscription = sid.exists() ? fx::to_json(sid) : std::string{"<absent>"};
  f.notifications = params["notifications"].exists() ? fx::to_json(params["notifications"]) : std::string{"<absent>"};
  f.uri = fx::str(params["uri"]);
  if (params.is_object()) {
    for (const auto m : params.members()) {
      if (!f.params_keys.empty()) f.params_keys += ' ';
      f.params_keys += m.key;
    }
  }
  return f;
}

/// The `i`-th message of `r` (REQUIREs it).
frame message_at(const listen_reader& r, std::size_t i) {
  const auto msgs = r.messages();
  REQUIRE_MESSAGE(i < msgs.size(), "message " << i << " missing; wire: " << r.wire());
  return frame_of(msgs[i]);
}

/// The result a listen ends with: `{"jsonrpc":"2.0","id":<id>,"result":{"resultType":"complete",
/// "_meta":{subscriptionId, serverInfo}}}`.
std::string listen_result(std::string_view id_json) {
  std::string s = R"({"jsonrpc":"2.0","id":)";
  s += id_json;
  s += R"(,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":)";
  s += id_json;
  s += R"(,"io.modelcontextprotocol/serverInfo":{"name":"subscriptions-test","version":"4.5.6"}}}})";
  return s;
}

// ---- the fixture ---------------------------------------------------------------------------------

/// An idempotent read tool `name` answering `text`.
void add_text_tool(server_builder& b, const std::string& name, std::string text) {
  http_endpoint_fixture::add_tool(
      b, name, [text = std::move(text)](call_context&, const arguments&) { return tool_result::text(text); }, true);
}

void add_prompt(server_builder& b, const std::string& name) {
  b.prompt(name).description("Prompt " + name + ".").handler([name](call_context&, const prompt_arguments&) {
    return prompt_result{"Prompt " + name}.add_user_text(name);
  });
}

void add_resource(server_builder& b, const std::string& uri) {
  b.resource(uri).name(uri).mime_type("text/plain").handler(text_resource("text"));
}

server_info test_info() { return {.name = "subscriptions-test", .version = "4.5.6"}; }

struct fixture_config {
  bool tools = true;      // "echo" and "spare"
  bool prompts = true;    // "greeting" and "farewell"
  bool resources = true;  // "test://doc" and "test://other"
  std::function<void(http_endpoint_options&)> endpoint{};
};

/// A server built from the config and an endpoint on a manual clock.
struct fixture : endpoint_harness {
  explicit fixture(const fixture_config& cfg = {}) {
    server_builder b{test_info(), server_options{}};
    if (cfg.tools) {
      add_text_tool(b, "echo", "echoed");
      add_text_tool(b, "spare", "spared");
    }
    if (cfg.prompts) {
      add_prompt(b, "greeting");
      add_prompt(b, "farewell");
    }
    if (cfg.resources) {
      add_resource(b, "test://doc");
      add_resource(b, "test://other");
    }
    serve(b, cfg.endpoint);
  }
  /// Opens a listen and reads its acknowledgement (the first message).
  listen_reader listen(std::string_view id_json, std::string_view filter_json, std::string_view token = "alice-token") {
    http_reply r = send(listen_request(id_json, filter_json, token));
    CAPTURE(r.head.body);
    REQUIRE(r.head.status == 200);
    REQUIRE(header_of(r, "Content-Type") == "text/event-stream");
    REQUIRE(r.stream);
    listen_reader reader{std::move(r.stream), clk};
    REQUIRE_MESSAGE(reader.drive_until_messages(1), "no acknowledgement; wire: " << reader.wire());
    REQUIRE(message_at(reader, 0).method == ack_method);
    return reader;
  }
  [[nodiscard]] std::size_t listens_of(std::string_view who) { return ep->budget().in_use("listen", who); }
};

/// A server with only what `cfg` names, for the hub tests (no endpoint).
server make_server(const fixture_config& cfg = {}) {
  server_builder b{test_info(), server_options{}};
  if (cfg.tools) add_text_tool(b, "echo", "echoed");
  if (cfg.prompts) add_prompt(b, "greeting");
  if (cfg.resources) add_resource(b, "test://doc");
  return fx::build(b);
}

/// Counts the events one subscriber saw, by kind, with the last URI.
struct event_counter {
  std::atomic<int> total{0};
  std::atomic<int> tools{0};
  std::atomic<int> prompts{0};
  std::atomic<int> resources{0};
  std::atomic<int> updated{0};
  std::mutex mu;
  std::string last_uri;

  std::function<void(const server_event&)> callback() {
    return [this](const server_event& e) {
      ++total;
      switch (e.kind) {
        case server_event_kind::tools_list_changed: ++tools; break;
        case server_event_kind::prompts_list_changed: ++prompts; break;
        case server_event_kind::resources_list_changed: ++resources; break;
        case server_event_kind::resource_updated: {
          ++updated;
          std::lock_guard lock{mu};
          last_uri = e.uri;
          break;
        }
        case server_event_kind::task_status: break;
      }
    };
  }
};

}  // namespace subscriptions_test

using namespace subscriptions_test;

TEST_SUITE("subscriptions") {

// ---- the acknowledgement ---------------------------------------------------------------------------

TEST_CASE("eras.md/subscriptions: a listen answers SSE whose first frame acknowledges the filter, subscriptionId = the request id") {
  fixture f;
  for (const std::string_view id : {R"("listen-1")", "7"}) {
    CAPTURE(id);
    http_reply r = f.send(listen_request(id, R"({"toolsListChanged":true})"));
    CAPTURE(r.head.body);
    REQUIRE(r.head.status == 200);
    CHECK(header_of(r, "Content-Type") == "text/event-stream");
    CHECK_FALSE(r.head.header("Mcp-Session-Id").has_value());
    REQUIRE(r.stream);
    listen_reader reader{std::move(r.stream), f.clk};
    REQUIRE(reader.drive_until_messages(1));
    reader.settle();
    const auto msgs = reader.messages();
    REQUIRE(msgs.size() == 1);  // the ack alone: no priming event, no result
    CHECK(msgs[0].type == "message");
    CHECK_FALSE(msgs[0].id.has_value());
    CHECK_FALSE(msgs[0].retry.has_value());
    const frame ack = frame_of(msgs[0]);
    CAPTURE(ack.json);
    CHECK(ack.method == ack_method);
    CHECK(ack.notifications == R"({"toolsListChanged":true})");
    // The id as it was sent: a string stays a string, a number a number.
    CHECK(ack.subscription == id);
    CHECK(ack.params_keys == "notifications _meta");
    CHECK(fx::parse(msgs[0].data).root["jsonrpc"].as_string() == "2.0");
    CHECK_FALSE(fx::parse(msgs[0].data).root["id"].exists());  // a notification
    CHECK_FALSE(reader.finished());
    CHECK(f.listens_of("alice") == 1);
    CHECK(f.ep->budget().in_use("per_request", "alice") == 0);
    reader.destroy();
    CHECK(f.listens_of("alice") == 0);
  }
  CHECK(f.ep->sessions().size() == 0);
}

TEST_CASE("eras.md/subscriptions: the acknowledgement names what was asked with true and the server can send") {
  fixture f;
  SUBCASE("every kind, and the URIs as sent") {
    auto reader = f.listen(R"("all")", R"({"toolsListChanged":true,"promptsListChanged":true,)"
                                       R"("resourcesListChanged":true,"resourceSubscriptions":["test://doc","test://nowhere"]})");
    CHECK(message_at(reader, 0).notifications ==
          R"({"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,)"
          R"("resourceSubscriptions":["test://doc","test://nowhere"]})");
  }
  SUBCASE("false flags are left out") {
    auto reader = f.listen("3", R"({"toolsListChanged":false,"promptsListChanged":true,"resourcesListChanged":false})");
    CHECK(message_at(reader, 0).notifications == R"({"promptsListChanged":true})");
  }
  SUBCASE("an empty URI list is left out") {
    auto reader = f.listen("4", R"({"toolsListChanged":true,"resourceSubscriptions":[]})");
    CHECK(message_at(reader, 0).notifications == R"({"toolsListChanged":true})");
  }
  SUBCASE("kinds the server cannot send are left out") {
    fixture tools_only{fixture_config{.tools = true, .prompts = false, .resources = false}};
    auto reader = tools_only.listen("5", R"({"toolsListChanged":true,"promptsListChanged":true,)"
                                         R"("resourcesListChanged":true,"resourceSubscriptions":["test://doc"]})");
    CHECK(message_at(reader, 0).notifications == R"({"toolsListChanged":true})");
    reader.settle();
    CHECK(reader.trace() == std::string{ack_method});
    CHECK_FALSE(reader.finished());
  }
}

// ---- tools and prompts shown and hidden -------------------------------------------------------------

TEST_CASE("eras.md/subscriptions: set_tool_enabled hides and shows a tool and sends tools/list_changed on a change only") {
  fixture f;
  auto reader = f.listen(R"("tools-listen")", R"({"toolsListChanged":true})");
  CHECK(names_listed(f.send(tools_list("1")), "tools") == "echo spare");

  // Hidden: a frame, not listed, unknown to tools/call.
  CHECK(f.srv->set_tool_enabled("spare", false));
  REQUIRE(reader.drive_until_messages(2));
  const frame changed = message_at(reader, 1);
  CAPTURE(changed.json);
  CHECK(changed.method == "notifications/tools/list_changed");
  CHECK(changed.subscription == R"("tools-listen")");
  CHECK(changed.params_keys == "_meta");
  CHECK(names_listed(f.send(tools_list("2")), "tools") == "echo");
  const http_reply hidden_call = f.send(tools_call("3", "spare"));
  check_plain_refusal(hidden_call, 200, -32602, "3");
  CHECK(fx::str(body_of(hidden_call).root["error"]["message"]).starts_with("Unknown tool"));
  const http_reply other = f.send(tools_call("4", "echo"));
  CHECK(other.head.status == 200);
  CHECK(fx::str(fx::at(body_of(other).root["result"]["content"], 0)["text"]) == "echoed");

  // Hiding it again changes nothing and sends nothing.
  CHECK(f.srv->set_tool_enabled("spare", false));
  reader.settle();
  CHECK(reader.messages().size() == 2);

  // Shown again: another frame, listed and callable.
  CHECK(f.srv->set_tool_enabled("spare", true));
  REQUIRE(reader.drive_until_messages(3));
  CHECK(message_at(reader, 2).method == "notifications/tools/list_changed");
  CHECK(message_at(reader, 2).subscription == R"("tools-listen")");
  CHECK(names_listed(f.send(tools_list("5")), "tools") == "echo spare");
  const http_reply shown_call = f.send(tools_call("6", "spare"));
  CHECK(shown_call.head.status == 200);
  CHECK(fx::str(fx::at(body_of(shown_call).root["result"]["content"], 0)["text"]) == "spared");

  // Showing a shown tool, and an unknown name (false), send nothing.
  CHECK(f.srv->set_tool_enabled("spare", true));
  CHECK(f.srv->set_tool_enabled("echo", true));
  CHECK_FALSE(f.srv->set_tool_enabled("no-such-tool", false));
  CHECK_FALSE(f.srv->set_tool_enabled("no-such-tool", true));
  CHECK_FALSE(f.srv->set_tool_enabled("greeting", false));  // a prompt's name is not a tool's
  reader.settle();
  CHECK(reader.trace() == std::string{ack_method} + " notifications/tools/list_changed notifications/tools/list_changed");
  CHECK_FALSE(reader.finished());
}

TEST_CASE("eras.md/subscriptions: set_prompt_enabled hides and shows a prompt and sends prompts/list_changed on a change only") {
  fixture f;
  auto reader = f.listen("21", R"({"promptsListChanged":true})");
  CHECK(names_listed(f.send(prompts_list("1")), "prompts") == "greeting farewell");

  CHECK(f.srv->set_prompt_enabled("farewell", false));
  REQUIRE(reader.drive_until_messages(2));
  const frame changed = message_at(reader, 1);
  CAPTURE(changed.json);
  CHECK(changed.method == "notifications/prompts/list_changed");
  CHECK(changed.subscription == "21");
  CHECK(changed.params_keys == "_meta");
  CHECK(names_listed(f.send(prompts_list("2")), "prompts") == "greeting");
  const http_reply hidden_get = f.send(prompts_get("3", "farewell"));
  check_plain_refusal(hidden_get, 200, -32602, "3");
  CHECK(fx::str(body_of(hidden_get).root["error"]["message"]).starts_with("Unknown prompt"));
  const http_reply other = f.send(prompts_get("4", "greeting"));
  CHECK(other.head.status == 200);
  CHECK(fx::str(body_of(other).root["result"]["description"]) == "Prompt greeting");

  CHECK(f.srv->set_prompt_enabled("farewell", false));
  reader.settle();
  CHECK(reader.messages().size() == 2);

  CHECK(f.srv->set_prompt_enabled("farewell", true));
  REQUIRE(reader.drive_until_messages(3));
  CHECK(message_at(reader, 2).method == "notifications/prompts/list_changed");
  CHECK(message_at(reader, 2).subscription == "21");
  CHECK(names_listed(f.send(prompts_list("5")), "prompts") == "greeting farewell");
  const http_reply shown_get = f.send(prompts_get("6", "farewell"));
  CHECK(shown_get.head.status == 200);
  CHECK(fx::str(body_of(shown_get).root["result"]["description"]) == "Prompt farewell");

  CHECK(f.srv->set_prompt_enabled("farewell", true));
  CHECK_FALSE(f.srv->set_prompt_enabled("no-such-prompt", false));
  CHECK_FALSE(f.srv->set_prompt_enabled("echo", false));  // a tool's name is not a prompt's
  reader.settle();
  CHECK(reader.trace() ==
        std::string{ack_method} + " notifications/prompts/list_changed notifications/prompts/list_changed");
}

// ---- the filter ----------------------------------------------------------------------------------

TEST_CASE("eras.md/subscriptions: only the kinds asked for are sent, each stream with its own subscriptionId") {
  fixture f;
  auto prompts_only = f.listen(R"("p")", R"({"promptsListChanged":true})");
  auto tools_only = f.listen("2", R"({"toolsListChanged":true})");
  auto both = f.listen(R"("both")", R"({"toolsListChanged":true,"promptsListChanged":true})", "bob-token");

  CHECK(f.srv->set_tool_enabled("spare", false));
  CHECK(f.srv->set_prompt_enabled("greeting", false));
  CHECK(f.srv->set_tool_enabled("spare", true));
  f.srv->publish(server_event{server_event_kind::resources_list_changed, {}});
  f.srv->publish(server_event{server_event_kind::resource_updated, "test://doc"});
  for (auto* r : {&prompts_only, &tools_only, &both}) r->settle();

  CHECK(prompts_only.trace() == std::string{ack_method} + " notifications/prompts/list_changed");
  CHECK(message_at(prompts_only, 1).subscription == R"("p")");
  CHECK(tools_only.trace() ==
        std::string{ack_method} + " notifications/tools/list_changed notifications/tools/list_changed");
  CHECK(message_at(tools_only, 1).subscription == "2");
  CHECK(message_at(tools_only, 2).subscription == "2");
  CHECK(both.trace() == std::string{ack_method} +
                            " notifications/tools/list_changed notifications/prompts/list_changed"
                            " notifications/tools/list_changed");
  for (std::size_t i = 1; i < 4; ++i) CHECK(message_at(both, i).subscription == R"("both")");
}

TEST_CASE("eras.md/subscriptions: resources/updated only for a subscribed URI, resources/list_changed only when asked") {
  fixture f;
  auto by_uri = f.listen(R"("uris")", R"({"resourceSubscriptions":["test://doc","test://items/1"]})");
  auto by_list = f.listen("9", R"({"resourcesListChanged":true})");

  f.srv->publish(server_event{server_event_kind::resource_updated, "test://doc"});
  f.srv->publish(server_event{server_event_kind::resource_updated, "test://other"});  // not subscribed
  f.srv->publish(server_event{server_event_kind::resource_updated, "test://do"});     // a prefix is not the URI
  f.srv->publish(server_event{server_event_kind::resource_updated, "test://items/1"});
  f.srv->publish(server_event{server_event_kind::resources_list_changed, {}});
  CHECK(f.srv->set_tool_enabled("spare", false));  // neither asked for tools
  by_uri.settle();
  by_list.settle();

  CHECK(by_uri.trace() ==
        std::string{ack_method} + " notifications/resources/updated notifications/resources/updated");
  const frame first = message_at(by_uri, 1);
  CAPTURE(first.json);
  CHECK(first.uri == "test://doc");
  CHECK(first.subscription == R"("uris")");
  CHECK(first.params_keys == "uri _meta");
  CHECK(message_at(by_uri, 2).uri == "test://items/1");
  CHECK(message_at(by_uri, 2).subscription == R"("uris")");

  CHECK(by_list.trace() == std::string{ack_method} + " notifications/resources/list_changed");
  CHECK(message_at(by_list, 1).subscription == "9");
  CHECK(message_at(by_list, 1).params_keys == "_meta");
}

TEST_CASE("eras.md/subscriptions: a listen asking nothing the server can send is acknowledged, answered and ends") {
  struct variant {
    const char* what;
    fixture_config cfg;
    const char* filter;
  };
  const variant variants[] = {
      {"an empty filter", fixture_config{}, "{}"},
      {"every flag false", fixture_config{}, R"({"toolsListChanged":false,"promptsListChanged":false})"},
      {"prompts of a server without prompts", fixture_config{.tools = true, .prompts = false, .resources = true},
       R"({"promptsListChanged":true})"},
      {"tools of a server without tools", fixture_config{.tools = false, .prompts = true, .resources = false},
       R"({"toolsListChanged":true})"},
      {"URIs of a server without resources", fixture_config{.tools = true, .prompts = true, .resources = false},
       R"({"resourcesListChanged":true,"resourceSubscriptions":["test://doc"]})"},
  };
  for (const auto& v : variants) {
    for (const std::string_view id : {R"("nothing")", "42"}) {
      CAPTURE(v.what);
      CAPTURE(id);
      fixture f{v.cfg};
      http_reply r = f.send(listen_request(id, v.filter));
      CAPTURE(r.head.body);
      REQUIRE(r.head.status == 200);
      REQUIRE(header_of(r, "Content-Type") == "text/event-stream");
      listen_reader reader{std::move(r.stream), f.clk};
      reader.drive_to_end();
      CAPTURE(reader.wire());
      REQUIRE(reader.messages().size() == 2);
      const frame ack = message_at(reader, 0);
      CHECK(ack.method == ack_method);
      CHECK(ack.notifications == "{}");
      CHECK(ack.subscription == id);
      CHECK(message_at(reader, 1).json == listen_result(id));
      // Nothing is sent after the end, and the slot goes back when the transport lets go.
      f.srv->publish(server_event{server_event_kind::tools_list_changed, {}});
      (void)reader.pull();
      CHECK(reader.messages().size() == 2);
      CHECK(f.listens_of("alice") == 1);
      reader.destroy();
      CHECK(f.listens_of("alice") == 0);
    }
  }
}

// ---- refusals ------------------------------------------------------------------------------------

TEST_CASE("eras.md/subscriptions: a missing or malformed filter is 200 -32602, not a stream") {
  fixture f;
  SUBCASE("notifications") {
    for (const std::optional<std::string_view> filter :
         {std::optional<std::string_view>{}, std::optional<std::string_view>{"null"},
          std::optional<std::string_view>{"true"}, std::optional<std::string_view>{R"("toolsListChanged")"},
          std::optional<std::string_view>{"[]"}, std::optional<std::string_view>{R"([{"toolsListChanged":true}])"},
          std::optional<std::string_view>{"5"}}) {
      CAPTURE(filter.value_or("<no notifications member>"));
      check_plain_refusal(f.send(listen_request(R"("bad")", filter)), 200, -32602, R"("bad")");
    }
  }
  SUBCASE("resourceSubscriptions") {
    for (const std::string_view filter :
         {R"({"resourceSubscriptions":"test://doc"})", R"({"resourceSubscriptions":{"uri":"test://doc"}})",
          R"({"resourceSubscriptions":null})", R"({"resourceSubscriptions":true})",
          R"({"resourceSubscriptions":[1]})", R"({"toolsListChanged":true,"resourceSubscriptions":["test://doc",null]})",
          R"({"resourceSubscriptions":["test://doc",["test://other"]]})"}) {
      CAPTURE(filter);
      check_plain_refusal(f.send(listen_request("11", filter)), 200, -32602, "11");
    }
  }
  SUBCASE("flags that are not booleans") {
    for (const std::string_view filter : {R"({"toolsListChanged":"yes"})", R"({"promptsListChanged":1})",
                                          R"({"resourcesListChanged":null})"}) {
      CAPTURE(filter);
      check_plain_refusal(f.send(listen_request("13", filter)), 200, -32602, "13");
    }
  }
  CHECK(f.listens_of("alice") == 0);
  CHECK(f.ep->budget().in_use() == 0);
  // The endpoint still serves a good one.
  auto reader = f.listen("12", R"({"toolsListChanged":true})");
  CHECK(f.listens_of("alice") == 1);
}

TEST_CASE("eras.md/subscriptions: more than max_listen_uris resource URIs is 200 -32602") {
  fixture f{fixture_config{.endpoint = [](http_endpoint_options& o) { o.per_request.max_listen_uris = 3; }}};
  CHECK(per_request_stream_options{}.max_listen_uris == 1024);
  check_plain_refusal(f.send(listen_request(R"("four")",
                                      R"({"resourceSubscriptions":["test://a","test://b","test://c","test://d"]})")),
                200, -32602, R"("four")");
  CHECK(f.listens_of("alice") == 0);
  auto reader = f.listen(R"("three")", R"({"resourceSubscriptions":["test://a","test://b","test://doc"]})");
  CHECK(message_at(reader, 0).notifications == R"({"resourceSubscriptions":["test://a","test://b","test://doc"]})");
  f.srv->publish(server_event{server_event_kind::resource_updated, "test://doc"});
  REQUIRE(reader.drive_until_messages(2));
  CHECK(message_at(reader, 1).uri == "test://doc");
}

TEST_CASE("eras.md/subscriptions: without text/event-stream in Accept a listen is 406 -32011") {
  fixture f;
  for (const std::optional<std::string_view> accept :
       {std::optional<std::string_view>{"application/json"}, std::optional<std::string_view>{}}) {
    CAPTURE(accept.value_or("<no Accept>"));
    request r = listen_request(R"("no-sse")", R"({"toolsListChanged":true})");
    if (accept) {
      r.set("Accept", std::string{*accept});
    } else {
      r.drop("Accept");
    }
    const http_reply reply = f.send(r);
    CAPTURE(reply.head.body);
    CHECK(reply.head.status == 406);
    CHECK(code_of(reply) == -32011);
    CHECK_FALSE(reply.stream);
  }
  CHECK(f.listens_of("alice") == 0);
}

TEST_CASE("eras.md/subscriptions: past listens_per_principal a listen is 429 -32012, another principal still listens") {
  const std::size_t cap = per_request_stream_options{}.listens_per_principal;
  CHECK(cap == 8);
  fixture f;
  std::vector<listen_reader> open;
  for (std::size_t i = 0; i < cap; ++i) open.push_back(f.listen(std::to_string(i), R"({"toolsListChanged":true})"));
  CHECK(f.listens_of("alice") == cap);

  const http_reply over = f.send(listen_request(R"("one-too-many")", R"({"toolsListChanged":true})"));
  check_plain_refusal(over, 429, -32012, R"("one-too-many")");
  CHECK(f.listens_of("alice") == cap);

  // Another principal has its own cap.
  auto bobs = f.listen(R"("bob-1")", R"({"toolsListChanged":true})", "bob-token");
  CHECK(f.listens_of("bob") == 1);

  // Destroying a stream frees its slot, closing one by a failed write too.
  open.back().destroy();
  CHECK(f.listens_of("alice") == cap - 1);
  open.push_back(f.listen(R"("again")", R"({"toolsListChanged":true})"));
  CHECK(f.listens_of("alice") == cap);
  open.front().drop();
  CHECK(f.listens_of("alice") == cap - 1);

  // The ones still open all get an event; the closed ones are gone.
  CHECK(f.srv->set_tool_enabled("spare", false));
  for (auto& r : open) {
    if (!r.alive()) continue;
    REQUIRE(r.drive_until_messages(2));
    CHECK(message_at(r, 1).method == "notifications/tools/list_changed");
  }
  REQUIRE(bobs.drive_until_messages(2));
  CHECK(message_at(bobs, 1).subscription == R"("bob-1")");
  open.clear();
  bobs.destroy();
  CHECK(f.ep->budget().in_use() == 0);
}

TEST_CASE("eras.md/subscriptions: a smaller listens_per_principal is honoured") {
  fixture f{fixture_config{.endpoint = [](http_endpoint_options& o) { o.per_request.listens_per_principal = 1; }}};
  auto first = f.listen("1", R"({"toolsListChanged":true})");
  check_plain_refusal(f.send(listen_request("2", R"({"toolsListChanged":true})")), 429, -32012, "2");
  // A listen answered at once (nothing to listen to) holds its slot too until it is destroyed.
  first.destroy();
  http_reply r = f.send(listen_request("3", "{}"));
  REQUIRE(r.stream);
  listen_reader nothing{std::move(r.stream), f.clk};
  nothing.drive_to_end();
  check_plain_refusal(f.send(listen_request("4", R"({"toolsListChanged":true})")), 429, -32012, "4");
  nothing.destroy();
  auto again = f.listen("5", R"({"toolsListChanged":true})");
  CHECK(f.listens_of("alice") == 1);
}

// ---- the end of a listen -------------------------------------------------------------------------

TEST_CASE("eras.md/subscriptions: destroying the stream cancels its subscription, a later publish sends nothing") {
  fixture f;
  auto survivor = f.listen(R"("survivor")", R"({"toolsListChanged":true,"resourceSubscriptions":["test://doc"]})");
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    auto gone = f.listen(R"("gone")", R"({"toolsListChanged":true,"resourceSubscriptions":["test://doc"]})");
    CHECK(f.listens_of("alice") == 2);
    if (round == 1) {
      gone.drop();
    } else {
      gone.destroy();
    }
    CHECK(f.listens_of("alice") == 1);
  }
  // Each publish reaches the survivor once: the destroyed streams' callbacks are gone.
  CHECK(f.srv->set_tool_enabled("spare", false));
  f.srv->publish(server_event{server_event_kind::resource_updated, "test://doc"});
  CHECK(f.srv->set_tool_enabled("spare", true));
  survivor.settle();
  CHECK(survivor.trace() == std::string{ack_method} +
                                " notifications/tools/list_changed notifications/resources/updated"
                                " notifications/tools/list_changed");
  // A stream destroyed with frames still queued, then a publish.
  auto unread = f.listen("99", R"({"toolsListChanged":true})");
  CHECK(f.srv->set_tool_enabled("spare", false));
  unread.destroy();
  CHECK(f.srv->set_tool_enabled("spare", true));
  f.ep->begin_shutdown();  // finds no stale stream to close
  survivor.drive_to_end();
  CHECK(message_at(survivor, survivor.messages().size() - 1).json == listen_result(R"("survivor")"));
}

TEST_CASE("eras.md/subscriptions: streams opened and destroyed while another thread publishes") {
  fixture f;
  std::atomic<bool> stop{false};
  std::atomic<int> toggles{0};
  std::thread publisher{[&] {
    bool shown = false;
    while (!stop.load()) {
      (void)f.srv->set_tool_enabled("spare", shown);
      f.srv->publish(server_event{server_event_kind::resource_updated, "test://doc"});
      shown = !shown;
      ++toggles;
    }
  }};
  for (int i = 0; i < 40; ++i) {
    auto r = f.listen(std::to_string(i), R"({"toolsListChanged":true,"resourceSubscriptions":["test://doc"]})");
    (void)r.pull();
    if (i % 2 == 0) {
      r.drop();
    } else {
      r.destroy();
    }
  }
  stop = true;
  publisher.join();
  CHECK(toggles.load() > 0);
  CHECK(f.listens_of("alice") == 0);
  CHECK(f.ep->budget().in_use() == 0);
}

TEST_CASE("eras.md/subscriptions: a listen after begin_shutdown is refused 503 -32015 and holds no slot") {
  fixture f;
  f.ep->begin_shutdown();
  check_plain_refusal(f.send(listen_request(R"("late")", std::optional<std::string_view>{R"({"toolsListChanged":true})"})),
                503, -32015, R"("late")");
  CHECK(f.ep->budget().in_use() == 0);
}

TEST_CASE("eras.md/subscriptions: begin_shutdown answers an open listen with its result and ends the stream") {
  fixture f;
  auto quiet = f.listen(R"("quiet")", R"({"toolsListChanged":true})");
  auto busy = f.listen("17", R"({"promptsListChanged":true,"resourceSubscriptions":["test://doc"]})", "bob-token");
  CHECK(f.srv->set_prompt_enabled("greeting", false));
  REQUIRE(busy.drive_until_messages(2));
  f.ep->begin_shutdown();
  quiet.drive_to_end();
  busy.drive_to_end();
  CHECK(quiet.trace() == std::string{ack_method} + " result");
  CHECK(message_at(quiet, 1).json == listen_result(R"("quiet")"));
  CHECK(busy.trace() == std::string{ack_method} + " notifications/prompts/list_changed result");
  CHECK(message_at(busy, 2).json == listen_result("17"));
  // After its result nothing more is sent.
  CHECK(f.srv->set_prompt_enabled("greeting", true));
  f.srv->publish(server_event{server_event_kind::resource_updated, "test://doc"});
  CHECK(busy.messages().size() == 3);
  quiet.destroy();
  busy.destroy();
  CHECK(f.ep->budget().in_use() == 0);
}

// ---- the hub ------------------------------------------------------------------------------------

TEST_CASE("eras.md/subscriptions: server::publishes names the kinds the server's tables can change") {
  const server all = make_server();
  CHECK(all.publishes(server_event_kind::tools_list_changed));
  CHECK(all.publishes(server_event_kind::prompts_list_changed));
  CHECK(all.publishes(server_event_kind::resources_list_changed));
  CHECK(all.publishes(server_event_kind::resource_updated));
  const server tools = make_server(fixture_config{.tools = true, .prompts = false, .resources = false});
  CHECK(tools.publishes(server_event_kind::tools_list_changed));
  CHECK_FALSE(tools.publishes(server_event_kind::prompts_list_changed));
  CHECK_FALSE(tools.publishes(server_event_kind::resources_list_changed));
  CHECK_FALSE(tools.publishes(server_event_kind::resource_updated));
}

TEST_CASE("eras.md/subscriptions: server::subscribe calls back for each publish until cancel") {
  server s = make_server();
  event_counter a;
  event_counter b;
  event_subscription sa = s.subscribe(a.callback());
  event_subscription sb = s.subscribe(b.callback());

  s.publish(server_event{server_event_kind::tools_list_changed, {}});
  s.publish(server_event{server_event_kind::resource_updated, "test://doc"});
  CHECK(a.total == 2);
  CHECK(a.tools == 1);
  CHECK(a.updated == 1);
  CHECK(a.last_uri == "test://doc");
  CHECK(b.total == 2);

  // set_tool_enabled / set_prompt_enabled publish on a change only.
  CHECK(s.set_tool_enabled("echo", false));
  CHECK(s.set_tool_enabled("echo", false));
  CHECK(s.set_prompt_enabled("greeting", false));
  CHECK(s.set_prompt_enabled("greeting", true));
  CHECK_FALSE(s.set_tool_enabled("nope", false));
  CHECK(a.tools == 2);
  CHECK(a.prompts == 2);

  sa.cancel();
  s.publish(server_event{server_event_kind::resources_list_changed, {}});
  CHECK(a.total == 5);
  CHECK(a.resources == 0);
  CHECK(b.total == 6);
  CHECK(b.resources == 1);
  sa.cancel();  // idempotent
  s.publish(server_event{server_event_kind::resources_list_changed, {}});
  CHECK(a.total == 5);
  CHECK(b.total == 7);

  event_subscription never;  // a default one has nothing to cancel
  never.cancel();
}

TEST_CASE("eras.md/subscriptions: an event_subscription ends when destroyed or replaced, not when moved") {
  server s = make_server();
  event_counter first;
  event_counter second;
  {
    event_subscription scoped = s.subscribe(first.callback());
    s.publish(server_event{server_event_kind::tools_list_changed, {}});
    CHECK(first.total == 1);
  }
  s.publish(server_event{server_event_kind::tools_list_changed, {}});
  CHECK(first.total == 1);

  SUBCASE("move-assign cancels the subscription it replaces") {
    event_subscription sub = s.subscribe(first.callback());
    s.publish(server_event{server_event_kind::tools_list_changed, {}});
    CHECK(first.total == 2);
    sub = s.subscribe(second.callback());
    s.publish(server_event{server_event_kind::tools_list_changed, {}});
    CHECK(first.total == 2);
    CHECK(second.total == 1);
    sub = event_subscription{};
    s.publish(server_event{server_event_kind::tools_list_changed, {}});
    CHECK(second.total == 1);
  }
  SUBCASE("a moved subscription keeps calling back, the moved-from one ends nothing") {
    auto sub = std::make_unique<event_subscription>(s.subscribe(first.callback()));
    event_subscription moved{std::move(*sub)};
    sub.reset();  // the moved-from one is destroyed: the registration lives on
    s.publish(server_event{server_event_kind::tools_list_changed, {}});
    CHECK(first.total == 2);
    event_subscription assigned;
    assigned = std::move(moved);
    moved.cancel();  // NOLINT(bugprone-use-after-move): a moved-from subscription cancels nothing
    s.publish(server_event{server_event_kind::tools_list_changed, {}});
    CHECK(first.total == 3);
    assigned.cancel();
    s.publish(server_event{server_event_kind::tools_list_changed, {}});
    CHECK(first.total == 3);
  }
  SUBCASE("the subscription follows the server when the server is moved") {
    event_subscription sub = s.subscribe(first.callback());
    server moved = std::move(s);
    moved.publish(server_event{server_event_kind::prompts_list_changed, {}});
    CHECK(first.prompts == 1);
    sub.cancel();
    moved.publish(server_event{server_event_kind::prompts_list_changed, {}});
    CHECK(first.prompts == 1);
  }
}

TEST_CASE("eras.md/subscriptions: an event_subscription may outlive its server") {
  event_counter c;
  event_subscription kept;
  event_subscription cancelled_late;
  {
    server s = make_server();
    kept = s.subscribe(c.callback());
    cancelled_late = s.subscribe(c.callback());
    s.publish(server_event{server_event_kind::tools_list_changed, {}});
    CHECK(c.total == 2);
  }
  cancelled_late.cancel();  // the server is gone: nothing to do
  kept = event_subscription{};
  CHECK(c.total == 2);
  // And one destroyed (not cancelled) after the server: its destructor runs at the end of scope.
  auto last = std::make_unique<event_subscription>();
  {
    server s = make_server();
    *last = s.subscribe(c.callback());
  }
  last.reset();
  CHECK(c.total == 2);
}

TEST_CASE("eras.md/subscriptions: a throwing subscriber does not keep the event from the others") {
  server s = make_server();
  event_counter c;
  event_subscription thrower = s.subscribe([](const server_event&) { throw std::runtime_error{"subscriber failed"}; });
  event_subscription counted = s.subscribe(c.callback());
  s.publish(server_event{server_event_kind::tools_list_changed, {}});
  s.publish(server_event{server_event_kind::tools_list_changed, {}});
  CHECK(c.total == 2);
}

TEST_CASE("eras.md/subscriptions: publish from several threads while another subscribes and cancels") {
  server s = make_server();
  constexpr int publishers = 3;
  constexpr int per_publisher = 300;
  constexpr int churns = 300;
  event_counter stable;
  event_subscription stable_sub = s.subscribe(stable.callback());

  std::atomic<int> late_calls{0};  // callbacks seen after their cancel returned
  std::atomic<int> churned_calls{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int p = 0; p < publishers; ++p) {
    threads.emplace_back([&, p] {
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < per_publisher; ++i) {
        if (p == 0 && i % 2 == 0) {
          s.publish(server_event{server_event_kind::resource_updated, "test://doc"});
        } else {
          s.publish(server_event{server_event_kind::tools_list_changed, {}});
        }
      }
    });
  }
  threads.emplace_back([&] {
    while (!go.load()) std::this_thread::yield();
    for (int i = 0; i < churns; ++i) {
      // The callback reads a counter that lives only in this iteration: a call after cancel
      // would read a dead object (ASan) and is counted.
      auto alive = std::make_unique<std::atomic<bool>>(true);
      std::atomic<bool>* flag = alive.get();
      event_subscription sub = s.subscribe([flag, &late_calls, &churned_calls](const server_event&) {
        if (!flag->load()) ++late_calls;
        ++churned_calls;
      });
      if (i % 3 == 0) std::this_thread::yield();
      if (i % 2 == 0) {
        sub.cancel();
      } else {
        sub = event_subscription{};
      }
      alive->store(false);
      s.publish(server_event{server_event_kind::prompts_list_changed, {}});  // this thread publishes too
      alive.reset();
    }
  });
  go = true;
  for (auto& t : threads) t.join();

  CHECK(stable.total == publishers * per_publisher + churns);
  CHECK(stable.updated == per_publisher / 2);
  CHECK(stable.prompts == churns);
  CHECK(stable.tools == publishers * per_publisher - per_publisher / 2);
  CHECK(late_calls == 0);
  CHECK(churned_calls <= publishers * per_publisher + churns);
  stable_sub.cancel();
  s.publish(server_event{server_event_kind::tools_list_changed, {}});
  CHECK(stable.total == publishers * per_publisher + churns);
}

}  // TEST_SUITE
