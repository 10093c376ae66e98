// SPDX-License-Identifier: Apache-2.0
// Input requests (multi-round tools and prompts) through server::handle, in both eras
// (docs/eras.md#input-requests, #the-handler-contract, #request-state): the input_required result
// and its signed requestState in the per-request era, the retry rounds, every way a state is
// refused (altered, expired, another caller, tool, method or server), the client capabilities an
// input needs (-32021), and the handshake era's requests to the client on the session.
#include <mcpcore/dispatch/server.hpp>

#include <doctest/doctest.h>

#include "support/server_fixture.hpp"

#include <mcpcore/detail/base64.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/wire/era.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/jsonrpc.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

using namespace mcpcore;
using namespace std::chrono_literals;
namespace fx = server_fixture;

namespace input_required_test {

/// A 32-byte request-state key, and another.
constexpr std::string_view key_a = "0123456789abcdef0123456789abcdef";
constexpr std::string_view key_b = "fedcba9876543210fedcba9876543210";

constexpr std::string_view name_form =
    R"({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]})";
constexpr std::string_view color_form =
    R"({"type":"object","properties":{"color":{"type":"string"}},"required":["color"]})";
constexpr std::string_view all_caps = R"({"sampling":{},"elicitation":{},"roots":{}})";

server_options with_key(std::string_view key = key_a) {
  server_options o;
  o.request_state_key = std::string{key};
  return o;
}

/// `with_key()` allowing `rounds` rounds of input.
server_options with_rounds(std::size_t rounds) {
  server_options o = with_key();
  o.max_input_rounds = rounds;
  return o;
}

/// What the handlers saw, round by round.
class observations {
 public:
  /// Records one run: the state and the answer under `key` (its JSON, or "<absent>").
  void record(const call_context& ctx, std::string_view key) {
    const json::value v = ctx.input(key);
    std::lock_guard lock{mu_};
    ++runs_;
    states_.emplace_back(ctx.round_state());
    inputs_.push_back(v.exists() ? fx::to_json(v) : std::string{"<absent>"});
  }
  [[nodiscard]] int runs() const {
    std::lock_guard lock{mu_};
    return runs_;
  }
  [[nodiscard]] std::vector<std::string> states() const {
    std::lock_guard lock{mu_};
    return states_;
  }
  [[nodiscard]] std::vector<std::string> inputs() const {
    std::lock_guard lock{mu_};
    return inputs_;
  }
  [[nodiscard]] std::string last_input() const {
    std::lock_guard lock{mu_};
    return inputs_.empty() ? std::string{"<none>"} : inputs_.back();
  }

 private:
  mutable std::mutex mu_;
  int runs_ = 0;
  std::vector<std::string> states_;
  std::vector<std::string> inputs_;
};

/// The accepted string `field` of the elicitation answered under `key`.
std::optional<std::string> accepted(const call_context& ctx, std::string_view key, std::string_view field) {
  const json::value a = ctx.input(key);
  if (!a["action"].is_string() || a["action"].as_string() != "accept" || !a["content"][field].is_string()) {
    return std::nullopt;
  }
  return std::string{a["content"][field].as_string()};
}

/// The tools and the prompt of the tests, on a manual clock.
struct input_server {
  manual_clock clk;
  observations seen;
  server srv;

  explicit input_server(server_options o = with_key()) : srv(make(std::move(o))) {}

  template <class H>
  static void add_tool(server_builder& b, const std::string& name, H h) {
    b.tool(name)
        .description("Test tool " + name + ".")
        .security("Thing", operation::read)
        .effect(tool_effect::read_only, true)
        .handler(std::move(h));
  }

  server make(server_options o) {
    server_builder b{server_info{.name = "input-test", .version = "0.9.0"}, std::move(o)};
    b.clock(clock_ref<manual_clock>{clk});
    // Asks the user's name (elicitation), then greets; the state says the question was asked.
    const auto greet = [this](call_context& ctx, const arguments&) {
      seen.record(ctx, "name");
      if (const auto name = accepted(ctx, "name", "name")) return tool_result::text("Hello, " + *name);
      return tool_result::need_input(
          input_required{}.ask("name", input_request::elicit("What is your name?", name_form)).state("asked-name"));
    };
    add_tool(b, "greet", greet);
    add_tool(b, "greet2", greet);
    // Two rounds: the name, then the colour; the state carries the name.
    add_tool(b, "multi", [this](call_context& ctx, const arguments&) {
      const std::string_view st = ctx.round_state();
      seen.record(ctx, st.starts_with("name:") ? "step2" : "step1");
      const auto ask_color = [](std::string state) {
        return tool_result::need_input(
            input_required{}.ask("step2", input_request::elicit("Your colour?", color_form)).state(std::move(state)));
      };
      if (st.starts_with("name:")) {
        if (const auto color = accepted(ctx, "step2", "color")) {
          return tool_result::text(std::string{st.substr(5)} + " likes " + *color);
        }
        return ask_color(std::string{st});
      }
      if (st == "step1") {
        if (const auto name = accepted(ctx, "step1", "name")) return ask_color("name:" + *name);
      }
      return tool_result::need_input(
          input_required{}.ask("step1", input_request::elicit("Your name?", name_form)).state("step1"));
    });
    add_tool(b, "sample", [this](call_context& ctx, const arguments&) {
      seen.record(ctx, "model");
      if (const auto t = ctx.input("model")["content"]["text"]; t.is_string()) {
        return tool_result::text("model: " + std::string{t.as_string()});
      }
      return tool_result::need_input(input_required{}.ask(
          "model", input_request::create_message(
                       R"({"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10})")));
    });
    add_tool(b, "sample_tools", [this](call_context& ctx, const arguments&) {
      seen.record(ctx, "model");
      return tool_result::need_input(input_required{}.ask(
          "model", input_request::create_message(
                       R"({"messages":[],"maxTokens":10,"tools":[{"name":"t","inputSchema":{"type":"object"}}]})")));
    });
    add_tool(b, "roots", [this](call_context& ctx, const arguments&) {
      seen.record(ctx, "roots");
      if (const auto r = ctx.input("roots")["roots"]; r.is_array()) {
        return tool_result::text(std::to_string(r.size()) + " root(s)");
      }
      return tool_result::need_input(input_required{}.ask("roots", input_request::list_roots()));
    });
    add_tool(b, "visit", [this](call_context& ctx, const arguments&) {
      seen.record(ctx, "login");
      return tool_result::need_input(
          input_required{}.ask("login", input_request::elicit_url("Please sign in", "https://example.com/login")));
    });
    add_tool(b, "everything", [this](call_context& ctx, const arguments&) {
      seen.record(ctx, "name");
      return tool_result::need_input(input_required{}
                                         .ask("model", input_request::create_message(R"({"messages":[],"maxTokens":1})"))
                                         .ask("name", input_request::elicit("Name?", name_form))
                                         .ask("roots", input_request::list_roots()));
    });
    add_tool(b, "declares", [](call_context& ctx, const arguments&) {
      const auto bit = [&](client_capability c) { return ctx.client_declares(c) ? "1" : "0"; };
      return tool_result::text(std::string{"sampling="} + bit(client_capability::sampling) +
                               " tools=" + bit(client_capability::sampling_tools) +
                               " form=" + bit(client_capability::elicitation_form) +
                               " url=" + bit(client_capability::elicitation_url) +
                               " roots=" + bit(client_capability::roots));
    });
    // Asks again whatever the answer.
    add_tool(b, "always", [this](call_context& ctx, const arguments&) {
      seen.record(ctx, "name");
      return tool_result::need_input(
          input_required{}.ask("name", input_request::elicit("Again?", name_form)).state("round"));
    });
    b.prompt("greet").description("Greets by name.").handler([this](call_context& ctx, const prompt_arguments&) {
      seen.record(ctx, "name");
      if (const auto name = accepted(ctx, "name", "name")) {
        return prompt_result{"A greeting"}.add_user_text("Hello, " + *name);
      }
      return prompt_result::need_input(
          input_required{}.ask("name", input_request::elicit("What is your name?", name_form)).state("prompt-asked"));
    });
    return fx::build(b);
  }
};

// ---- the per-request era -------------------------------------------------------------------------

/// The `_meta` envelope declaring `caps`.
std::string envelope(std::string_view caps = "{}") {
  return std::string{R"({"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"} +
         R"("io.modelcontextprotocol/clientCapabilities":)" + std::string{caps} + "}";
}

/// A per-request `method` request for `name` with `extra` params members (JSON text without
/// braces, e.g. the inputResponses and requestState of a retry).
std::string pr_request(std::string_view id_json, std::string_view method, std::string_view name,
                       std::string_view caps = "{}", std::string_view extra = {}) {
  std::string p = R"({"name":")";
  p += name;
  p += '"';
  if (!extra.empty()) {
    p += ',';
    p += extra;
  }
  p += R"(,"_meta":)";
  p += envelope(caps);
  p += '}';
  return fx::request(id_json, method, p);
}
std::string pr_call(std::string_view id_json, std::string_view tool, std::string_view caps = "{}",
                    std::string_view extra = {}) {
  return pr_request(id_json, "tools/call", tool, caps, extra);
}

/// The params members of a retry: the answers and the state (any JSON).
std::string retry_with(std::string_view responses_json, std::string_view state_json) {
  std::string m;
  if (!responses_json.empty()) {
    m += R"("inputResponses":)";
    m += responses_json;
  }
  if (!state_json.empty()) {
    if (!m.empty()) m += ',';
    m += R"("requestState":)";
    m += state_json;
  }
  return m;
}
/// A JSON string.
std::string quoted(std::string_view s) { return '"' + std::string{s} + '"'; }

constexpr std::string_view ada = R"({"name":{"action":"accept","content":{"name":"Ada"}}})";

/// Sends a per-request message as `who`: its envelope is read from the message itself.
fx::answer send_pr(server& s, std::string_view text, std::string_view who = "alice",
                   dispatch_report* report = nullptr) {
  json::document doc;
  auto msg = parse_message(doc, text);
  REQUIRE_MESSAGE(msg.has_value(), "the test sent an invalid message: " << text);
  auto env = read_envelope(*msg);
  REQUIRE_MESSAGE(env.has_value(), "the test sent a refused envelope: " << text);
  principal p;
  p.id = std::string{who};
  const dispatch_context ctx{p, nullptr, nullptr, {}, nullptr, &*env, report};
  return fx::handle(s, text, ctx);
}

/// The requestState of an input_required answer (checked for its shape).
std::string state_of(const fx::answer& a) {
  CAPTURE(a.text);
  REQUIRE(fx::str(a.result()["resultType"]) == "input_required");
  const std::string st = fx::str(a.result()["requestState"]);
  REQUIRE(st.starts_with("v1."));
  return st;
}

std::string text_of(const fx::answer& a) { return fx::str(fx::at(a.result()["content"], 0)["text"]); }

/// The refusal of a requestState: -32602, its message and reason.
void check_state_refused(const fx::answer& a, std::string_view id_json, const dispatch_report& report) {
  CAPTURE(a.text);
  CHECK(a.returned);
  CHECK(a.code() == -32602);
  CHECK(a.message() == "Invalid or expired requestState");
  CHECK(fx::str(a.data()["reason"]) == "invalid_request_state");
  CHECK(fx::is_correlation_id(a.cid()));
  CHECK(fx::to_json(a.root["id"]) == id_json);
  CHECK_FALSE(a.result().exists());
  CHECK(report.error == std::optional<errc>{errc::invalid_params});
}

/// `s` with its `i`-th character replaced by another of the base64url alphabet.
std::string flip_at(std::string s, std::size_t i) {
  REQUIRE(i < s.size());
  s[i] = s[i] == 'A' ? 'B' : 'A';
  return s;
}

// ---- the handshake era ---------------------------------------------------------------------------

/// Waits (bounded) until the sink holds `n` messages with `method`; the `n`-th.
std::optional<std::string> wait_nth(fx::recording_sink& sink, std::string_view method, std::size_t n) {
  const auto deadline = std::chrono::steady_clock::now() + fx::patience;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto sent = sink.with_method(method);
    if (sent.size() >= n) return sent[n - 1];
    std::this_thread::sleep_for(1ms);
  }
  return std::nullopt;
}

/// Answers the `n`-th `elicitation/create` on `c` with `result_json`; the request's params.
std::string answer_nth(server& s, fx::connection& c, std::size_t n, std::string_view result_json) {
  const auto sent = wait_nth(c.sink, "elicitation/create", n);
  REQUIRE_MESSAGE(sent.has_value(), "the server sent no elicitation/create #" << n);
  const auto req = fx::parse(*sent);
  REQUIRE(req.root["id"].is_integer());
  const std::string params = fx::to_json(req.root["params"]);
  const auto r = c.send(s, fx::client_result(*req.root["id"].to_int64(), result_json));
  CHECK_FALSE(r.returned);
  return params;
}

/// A handshake-era call answered through its rounds of input: its answer, and the params of each
/// `elicitation/create` answered, in order.
struct answered_call {
  fx::answer answer;
  std::vector<std::string> params;
};

/// Sends `request_json` on `c` from a thread of its own, answers the `first`-th, `first + 1`-th, ...
/// `elicitation/create` with `results` in order (`answer_nth`), then waits for the call's answer.
answered_call call_answering(server& s, fx::connection& c, const std::string& request_json,
                             const std::vector<std::string_view>& results, std::size_t first = 1) {
  answered_call out;
  std::thread t{[&] { out.answer = c.send(s, request_json); }};
  for (std::size_t i = 0; i < results.size(); ++i) out.params.push_back(answer_nth(s, c, first + i, results[i]));
  t.join();
  return out;
}

/// Initializes `c` on `s` in the handshake era, declaring every capability.
void initialize_all(server& s, fx::connection& c) { c.send(s, fx::initialize(1, "2025-11-25", all_caps)); }

}  // namespace input_required_test

using namespace input_required_test;

TEST_SUITE("input_required") {

// ---- the per-request era: rounds -----------------------------------------------------------------

TEST_CASE("eras.md/input-requests: the first round answers input_required with inputRequests and a signed requestState") {
  input_server is;
  dispatch_report report;
  const auto a = send_pr(is.srv, pr_call("1", "greet", R"({"elicitation":{}})"), "alice", &report);
  CAPTURE(a.text);
  REQUIRE(a.returned);
  CHECK_FALSE(report.error.has_value());
  const json::value r = a.result();
  CHECK(fx::str(r["resultType"]) == "input_required");
  CHECK(fx::to_json(r["inputRequests"]) ==
        std::string{R"({"name":{"method":"elicitation/create","params":{"mode":"form","message":"What is your name?",)"} +
            R"("requestedSchema":)" + std::string{name_form} + "}}}");
  CHECK_FALSE(r["ttlMs"].exists());
  CHECK_FALSE(r["cacheScope"].exists());
  CHECK(fx::to_json(r["_meta"]) == R"({"io.modelcontextprotocol/serverInfo":{"name":"input-test","version":"0.9.0"}})");
  CHECK(a.text.find("\"resultType\"") == a.text.rfind("\"resultType\""));
  // The handler ran once, with nothing.
  CHECK(is.seen.runs() == 1);
  CHECK(is.seen.states() == std::vector<std::string>{""});
  CHECK(is.seen.inputs() == std::vector<std::string>{"<absent>"});

  // v1.<payload>.<mac>: the payload is {"exp","b","s"}, the MAC 32 bytes.
  const std::string st = state_of(a);
  const std::size_t dot = st.rfind('.');
  REQUIRE(dot > 3);
  const auto payload = detail::base64_decode(std::string_view{st}.substr(3, dot - 3), detail::base64_alphabet::url);
  REQUIRE(payload.has_value());
  const auto p = fx::parse(*payload);
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(is.clk.system_now().time_since_epoch()).count();
  CHECK(p.root["exp"].to_int64() == now + default_request_state_lifetime.count());
  CHECK(p.root["b"].is_string());
  CHECK(fx::str(p.root["s"]) == "asked-name");
  const auto mac = detail::base64_decode(std::string_view{st}.substr(dot + 1), detail::base64_alphabet::url);
  REQUIRE(mac.has_value());
  CHECK(mac->size() == 32);
}

TEST_CASE("eras.md/input-requests: the retry with inputResponses and the requestState completes, the handler sees both") {
  input_server is;
  const std::string caps = R"({"elicitation":{}})";
  const std::string st = state_of(send_pr(is.srv, pr_call("1", "greet", caps)));
  dispatch_report report;
  const auto done = send_pr(is.srv, pr_call("2", "greet", caps, retry_with(ada, quoted(st))), "alice", &report);
  CAPTURE(done.text);
  CHECK_FALSE(report.error.has_value());
  CHECK(fx::to_json(done.root["id"]) == "2");
  CHECK(fx::str(done.result()["resultType"]) == "complete");
  CHECK(text_of(done) == "Hello, Ada");
  CHECK_FALSE(done.result()["requestState"].exists());
  CHECK(is.seen.runs() == 2);
  CHECK(is.seen.states() == std::vector<std::string>{"", "asked-name"});
  CHECK(is.seen.last_input() == R"({"action":"accept","content":{"name":"Ada"}})");
  SUBCASE("a declined answer reads as present, and the handler asks again") {
    const auto again =
        send_pr(is.srv, pr_call("3", "greet", caps, retry_with(R"({"name":{"action":"decline"}})", quoted(st))));
    CHECK(fx::str(again.result()["resultType"]) == "input_required");
    CHECK(is.seen.last_input() == R"({"action":"decline"})");
  }
}

TEST_CASE("eras.md/the-handler-contract: several rounds, each with its own signed state") {
  input_server is;
  const std::string caps = R"({"elicitation":{"form":{}}})";
  const auto r1 = send_pr(is.srv, pr_call("1", "multi", caps));
  const std::string s1 = state_of(r1);
  CHECK(fx::str(r1.result()["inputRequests"]["step1"]["method"]) == "elicitation/create");

  const auto r2 = send_pr(
      is.srv, pr_call("2", "multi", caps, retry_with(R"({"step1":{"action":"accept","content":{"name":"Ada"}}})", quoted(s1))));
  const std::string s2 = state_of(r2);
  CHECK(s2 != s1);
  CHECK(fx::str(r2.result()["inputRequests"]["step2"]["method"]) == "elicitation/create");
  CHECK_FALSE(r2.result()["inputRequests"]["step1"].exists());

  const auto r3 = send_pr(
      is.srv, pr_call("3", "multi", caps, retry_with(R"({"step2":{"action":"accept","content":{"color":"green"}}})", quoted(s2))));
  CAPTURE(r3.text);
  CHECK(fx::str(r3.result()["resultType"]) == "complete");
  CHECK(text_of(r3) == "Ada likes green");
  CHECK(is.seen.states() == std::vector<std::string>{"", "step1", "name:Ada"});
  CHECK(is.seen.inputs() == std::vector<std::string>{"<absent>", R"({"action":"accept","content":{"name":"Ada"}})",
                                                     R"({"action":"accept","content":{"color":"green"}})"});
}

// ---- the per-request era: refused states ------------------------------------------------------------

TEST_CASE("eras.md/request-state: an altered requestState is refused -32602 invalid_request_state and nothing runs") {
  input_server is;
  const std::string caps = R"({"elicitation":{}})";
  const std::string st = state_of(send_pr(is.srv, pr_call("1", "greet", caps)));
  const std::size_t dot = st.rfind('.');
  REQUIRE(st.size() - dot - 1 == 43);  // 32 bytes, unpadded
  // The last character of the MAC carries 2 unused bits: changing only those is still an alteration.
  std::string low_bit = st;
  {
    constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const std::size_t v = alphabet.find(low_bit.back());
    REQUIRE(v != std::string_view::npos);
    low_bit.back() = alphabet[v ^ 1U];
  }
  struct variant {
    const char* what;
    std::string state_json;
  };
  const variant variants[] = {
      {"one character of the payload", quoted(flip_at(st, 3 + 5))},
      {"the first character of the payload", quoted(flip_at(st, 3))},
      {"one character of the MAC", quoted(flip_at(st, dot + 10))},
      {"the unused bits of the MAC's last character", quoted(low_bit)},
      {"junk appended", quoted(st + "x")},
      {"junk appended after a dot", quoted(st + ".x")},
      {"the MAC cut short", quoted(st.substr(0, st.size() - 1))},
      {"the MAC removed", quoted(st.substr(0, dot))},
      {"another version prefix", quoted("v2" + st.substr(2))},
      {"an empty string", quoted("")},
      {"a number", "12345"},
      {"an object", R"({"v":1})"},
      {"null", "null"},
  };
  for (const auto& v : variants) {
    CAPTURE(v.what);
    dispatch_report report;
    const auto a = send_pr(is.srv, pr_call(R"("t-1")", "greet", caps, retry_with(ada, v.state_json)), "alice", &report);
    check_state_refused(a, R"("t-1")", report);
    CHECK(is.seen.runs() == 1);  // the handler did not run
  }
  // The state itself is still good.
  const auto ok = send_pr(is.srv, pr_call("2", "greet", caps, retry_with(ada, quoted(st))));
  CHECK(text_of(ok) == "Hello, Ada");
  CHECK(is.seen.runs() == 2);
}

TEST_CASE("eras.md/request-state: a requestState past request_state_lifetime is refused") {
  server_options o = with_key();
  o.request_state_lifetime = 60s;
  input_server is{o};
  const std::string caps = R"({"elicitation":{}})";
  const std::string st = state_of(send_pr(is.srv, pr_call("1", "greet", caps)));
  is.clk.advance(60s);  // at its expiry second: still valid
  CHECK(text_of(send_pr(is.srv, pr_call("2", "greet", caps, retry_with(ada, quoted(st))))) == "Hello, Ada");
  CHECK(is.seen.runs() == 2);
  is.clk.advance(1s);
  dispatch_report report;
  check_state_refused(send_pr(is.srv, pr_call("3", "greet", caps, retry_with(ada, quoted(st))), "alice", &report), "3",
                      report);
  CHECK(is.seen.runs() == 2);
  SUBCASE("the wall clock stepping past it counts too") {
    const std::string fresh = state_of(send_pr(is.srv, pr_call("4", "greet", caps)));
    is.clk.set_system(is.clk.system_now() + 1h);
    dispatch_report r2;
    check_state_refused(send_pr(is.srv, pr_call("5", "greet", caps, retry_with(ada, quoted(fresh))), "alice", &r2), "5", r2);
  }
}

TEST_CASE("eras.md/request-state: a state replayed by another caller, for another tool or another method is refused") {
  input_server is;
  const std::string caps = R"({"elicitation":{}})";
  const std::string st = state_of(send_pr(is.srv, pr_call("1", "greet", caps)));
  const int runs = is.seen.runs();
  dispatch_report report;
  SUBCASE("another principal") {
    check_state_refused(send_pr(is.srv, pr_call("2", "greet", caps, retry_with(ada, quoted(st))), "bob", &report), "2",
                        report);
  }
  SUBCASE("another tool (the same handler)") {
    check_state_refused(send_pr(is.srv, pr_call("2", "greet2", caps, retry_with(ada, quoted(st))), "alice", &report), "2",
                        report);
  }
  SUBCASE("another method: prompts/get of a prompt with the tool's name") {
    check_state_refused(
        send_pr(is.srv, pr_request("2", "prompts/get", "greet", caps, retry_with(ada, quoted(st))), "alice", &report), "2",
        report);
  }
  CHECK(is.seen.runs() == runs);
  // The owner, for the same tool, still completes.
  CHECK(text_of(send_pr(is.srv, pr_call("3", "greet", caps, retry_with(ada, quoted(st))))) == "Hello, Ada");
}

TEST_CASE("eras.md/request-state: a state signed by another server is refused, one sharing the key accepts it") {
  input_server a{with_key(key_a)};
  input_server b{with_key(key_b)};
  input_server a2{with_key(key_a)};
  const std::string caps = R"({"elicitation":{}})";
  const std::string st = state_of(send_pr(a.srv, pr_call("1", "greet", caps)));
  dispatch_report report;
  check_state_refused(send_pr(b.srv, pr_call("2", "greet", caps, retry_with(ada, quoted(st))), "alice", &report), "2", report);
  CHECK(b.seen.runs() == 0);
  CHECK(text_of(send_pr(a2.srv, pr_call("3", "greet", caps, retry_with(ada, quoted(st))))) == "Hello, Ada");
  SUBCASE("without a key each server signs with its own random one") {
    input_server r1{server_options{}};
    input_server r2{server_options{}};
    const std::string own = state_of(send_pr(r1.srv, pr_call("4", "greet", caps)));
    dispatch_report rr;
    check_state_refused(send_pr(r2.srv, pr_call("5", "greet", caps, retry_with(ada, quoted(own))), "alice", &rr), "5", rr);
    CHECK(text_of(send_pr(r1.srv, pr_call("6", "greet", caps, retry_with(ada, quoted(own))))) == "Hello, Ada");
  }
}

TEST_CASE("eras.md/request-state: a request_state_key shorter than 32 bytes refuses the build") {
  const auto build_with = [](std::string key) {
    server_options o;
    o.request_state_key = std::move(key);
    server_builder b{server_info{.name = "k", .version = "1"}, std::move(o)};
    b.tool("t").description("d").security("Thing", operation::read).effect(tool_effect::read_only, true).handler(
        [](call_context&, const arguments&) { return tool_result::text("t"); });
    return b.build();
  };
  auto short_key = build_with(std::string(31, 'k'));
  REQUIRE_FALSE(short_key.has_value());
  CHECK(short_key.error().message().find("request_state_key is shorter than 32 bytes") != std::string::npos);
  CHECK(build_with(std::string(32, 'k')).has_value());
  CHECK(build_with(std::string(64, 'k')).has_value());
  CHECK(build_with(std::string{}).has_value());  // empty: a random key
}

// ---- the per-request era: answers and capabilities -----------------------------------------------------

TEST_CASE("eras.md/the-handler-contract: inputResponses entries that are not bare results read as absent") {
  input_server is;
  const std::string caps = R"({"elicitation":{}})";
  const char* absent[] = {
      R"({"name":"Ada"})",
      R"({"name":42})",
      R"({"name":null})",
      R"({"name":[{"action":"accept"}]})",
      R"({"name":{"method":"elicitation/create","params":{"message":"x"}}})",
      R"({"name":{"result":{"action":"accept","content":{"name":"Ada"}}}})",
      R"({"name":{"action":"accept","content":{"name":"Ada"},"method":"x"}})",
      R"({"other":{"action":"accept","content":{"name":"Ada"}}})",  // not the key asked for
      R"(["name"])",
      R"("name")",
  };
  for (const char* responses : absent) {
    CAPTURE(responses);
    const int before = is.seen.runs();
    const auto a = send_pr(is.srv, pr_call("1", "greet", caps, retry_with(responses, {})));
    CAPTURE(a.text);
    CHECK(is.seen.runs() == before + 1);  // the handler ran ...
    CHECK(is.seen.last_input() == "<absent>");  // ... without an answer
    CHECK(fx::str(a.result()["resultType"]) == "input_required");
  }
  // A bare result object is an answer, with or without a requestState.
  CHECK(text_of(send_pr(is.srv, pr_call("2", "greet", caps, retry_with(ada, {})))) == "Hello, Ada");
  CHECK(is.seen.last_input() == R"({"action":"accept","content":{"name":"Ada"}})");
}

TEST_CASE("eras.md/input-requests: an input the request's client capabilities do not cover is -32021 with requiredCapabilities") {
  input_server is;
  struct refused_case {
    const char* tool;
    const char* caps;
    const char* required;
  };
  const refused_case refused[] = {
      {"sample", "{}", R"({"sampling":{}})"},
      {"sample", R"({"elicitation":{},"roots":{}})", R"({"sampling":{}})"},
      {"sample_tools", R"({"sampling":{}})", R"({"sampling":{"tools":{}}})"},
      {"greet", "{}", R"({"elicitation":{"form":{}}})"},
      {"greet", R"({"elicitation":{"url":{}}})", R"({"elicitation":{"form":{}}})"},
      {"greet", R"({"elicitation":true})", R"({"elicitation":{"form":{}}})"},
      {"visit", R"({"elicitation":{}})", R"({"elicitation":{"url":{}}})"},
      {"roots", R"({"sampling":{},"elicitation":{}})", R"({"roots":{}})"},
      {"everything", "{}", R"({"sampling":{},"elicitation":{"form":{}},"roots":{}})"},
      {"everything", R"({"elicitation":{}})", R"({"sampling":{},"roots":{}})"},
  };
  for (const auto& c : refused) {
    CAPTURE(c.tool);
    CAPTURE(c.caps);
    dispatch_report report;
    const auto a = send_pr(is.srv, pr_call(R"("c-1")", c.tool, c.caps), "alice", &report);
    CAPTURE(a.text);
    CHECK(a.code() == -32021);
    CHECK(fx::to_json(a.data()["requiredCapabilities"]) == c.required);
    CHECK(fx::to_json(a.root["id"]) == R"("c-1")");
    CHECK(fx::is_correlation_id(a.cid()));
    CHECK(report.error == std::optional<errc>{errc::missing_client_capability});
    CHECK_FALSE(a.result().exists());
  }
  struct accepted_case {
    const char* tool;
    const char* caps;
  };
  const accepted_case ok[] = {
      {"sample", R"({"sampling":{}})"},
      {"sample_tools", R"({"sampling":{"tools":{}}})"},
      {"greet", R"({"elicitation":{}})"},  // elicitation: {} counts as form
      {"greet", R"({"elicitation":{"form":{}}})"},
      {"greet", R"({"elicitation":{"form":{},"url":{}}})"},
      {"visit", R"({"elicitation":{"url":{}}})"},
      {"roots", R"({"roots":{}})"},
      {"everything", all_caps.data()},
  };
  for (const auto& c : ok) {
    CAPTURE(c.tool);
    CAPTURE(c.caps);
    dispatch_report report;
    const auto a = send_pr(is.srv, pr_call("2", c.tool, c.caps), "alice", &report);
    CAPTURE(a.text);
    CHECK(fx::str(a.result()["resultType"]) == "input_required");
    CHECK_FALSE(report.error.has_value());
  }
}

TEST_CASE("eras.md/input-requests: client_declares reflects the request's envelope, and initialize in the handshake era") {
  input_server is;
  struct declared {
    const char* caps;
    const char* expected;
  };
  const declared cases[] = {
      {"{}", "sampling=0 tools=0 form=0 url=0 roots=0"},
      {R"({"elicitation":{}})", "sampling=0 tools=0 form=1 url=0 roots=0"},
      {R"({"elicitation":{"url":{}}})", "sampling=0 tools=0 form=0 url=1 roots=0"},
      {R"({"elicitation":{"form":{},"url":{}}})", "sampling=0 tools=0 form=1 url=1 roots=0"},
      {R"({"sampling":{}})", "sampling=1 tools=0 form=0 url=0 roots=0"},
      {R"({"sampling":{"tools":{}},"roots":{}})", "sampling=1 tools=1 form=0 url=0 roots=1"},
      {R"({"sampling":true,"roots":[]})", "sampling=0 tools=0 form=0 url=0 roots=0"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.caps);
    CHECK(text_of(send_pr(is.srv, pr_call("1", "declares", c.caps))) == c.expected);
  }
  SUBCASE("the handshake era: what initialize declared") {
    fx::connection c;
    c.send(is.srv, fx::initialize(1, "2025-11-25", R"({"elicitation":{},"roots":{}})"));
    CHECK(text_of(c.send(is.srv, fx::call_tool(2, "declares"))) == "sampling=0 tools=0 form=1 url=1 roots=1");
    // Statelessly, nothing is declared.
    fx::connection bare;
    CHECK(text_of(fx::handle(is.srv, fx::call_tool(3, "declares"), dispatch_context{bare.caller})) ==
          "sampling=0 tools=0 form=0 url=0 roots=0");
  }
}

TEST_CASE("eras.md/input-requests: prompts/get asks for input and completes the same way") {
  input_server is;
  const std::string caps = R"({"elicitation":{}})";
  dispatch_report report;
  const auto first = send_pr(is.srv, pr_request("1", "prompts/get", "greet", caps), "alice", &report);
  CAPTURE(first.text);
  CHECK_FALSE(report.error.has_value());
  CHECK(fx::str(first.result()["inputRequests"]["name"]["method"]) == "elicitation/create");
  CHECK_FALSE(first.result()["messages"].exists());
  const std::string st = state_of(first);

  const auto done = send_pr(is.srv, pr_request("2", "prompts/get", "greet", caps, retry_with(ada, quoted(st))));
  CAPTURE(done.text);
  CHECK(fx::str(done.result()["resultType"]) == "complete");
  CHECK(fx::str(done.result()["description"]) == "A greeting");
  CHECK(fx::str(fx::at(done.result()["messages"], 0)["content"]["text"]) == "Hello, Ada");
  CHECK(is.seen.states() == std::vector<std::string>{"", "prompt-asked"});

  SUBCASE("a tampered state is refused and the prompt does not run") {
    dispatch_report r;
    check_state_refused(
        send_pr(is.srv, pr_request("3", "prompts/get", "greet", caps, retry_with(ada, quoted(flip_at(st, 6)))), "alice", &r),
        "3", r);
    CHECK(is.seen.runs() == 2);
  }
  SUBCASE("a state of the tool of the same name is refused") {
    const std::string tool_state = state_of(send_pr(is.srv, pr_call("4", "greet", caps)));
    dispatch_report r;
    check_state_refused(
        send_pr(is.srv, pr_request("5", "prompts/get", "greet", caps, retry_with(ada, quoted(tool_state))), "alice", &r),
        "5", r);
  }
  SUBCASE("without the capability: -32021") {
    dispatch_report r;
    const auto refused = send_pr(is.srv, pr_request("6", "prompts/get", "greet", "{}"), "alice", &r);
    CHECK(refused.code() == -32021);
    CHECK(fx::to_json(refused.data()["requiredCapabilities"]) == R"({"elicitation":{"form":{}}})");
    CHECK(r.error == std::optional<errc>{errc::missing_client_capability});
  }
}

// ---- the handshake era ------------------------------------------------------------------------------------

TEST_CASE("eras.md/input-requests: in the handshake era the server asks the client on the session, then runs the handler again") {
  input_server is;
  fx::connection c;
  initialize_all(is.srv, c);
  const auto greeted =
      call_answering(is.srv, c, fx::call_tool(2, "greet"), {R"({"action":"accept","content":{"name":"Ada"}})"});
  const fx::answer& call = greeted.answer;
  CHECK(greeted.params[0] == std::string{R"({"mode":"form","message":"What is your name?","requestedSchema":)"} +
                                 std::string{name_form} + "}");
  CAPTURE(call.text);
  CHECK(call.returned);
  CHECK(fx::to_json(call.root["id"]) == "2");
  CHECK(text_of(call) == "Hello, Ada");
  CHECK_FALSE(call.result()["isError"].exists());
  // A handshake-era result carries none of the per-request era's fields.
  CHECK_FALSE(call.result()["resultType"].exists());
  CHECK_FALSE(call.result()["_meta"].exists());
  CHECK(is.seen.runs() == 2);
  CHECK(is.seen.states() == std::vector<std::string>{"", "asked-name"});
  CHECK(is.seen.last_input() == R"({"action":"accept","content":{"name":"Ada"}})");
  CHECK(c.sink.with_method("elicitation/create").size() == 1);

  SUBCASE("several rounds, the state carried between them") {
    const auto multi = call_answering(is.srv, c, fx::call_tool(3, "multi"),
                                      {R"({"action":"accept","content":{"name":"Bo"}})",
                                       R"({"action":"accept","content":{"color":"red"}})"},
                                      2);
    CHECK(text_of(multi.answer) == "Bo likes red");
    const auto states = is.seen.states();
    REQUIRE(states.size() == 5);
    CHECK(std::vector<std::string>(states.begin() + 2, states.end()) ==
          std::vector<std::string>{"", "step1", "name:Bo"});
  }
  SUBCASE("a prompt the same way") {
    const auto answered = call_answering(is.srv, c, fx::request(4, "prompts/get", R"({"name":"greet"})"),
                                         {R"({"action":"accept","content":{"name":"Cy"}})"}, 2);
    const fx::answer& prompt = answered.answer;
    CAPTURE(prompt.text);
    CHECK(fx::str(fx::at(prompt.result()["messages"], 0)["content"]["text"]) == "Hello, Cy");
  }
}

TEST_CASE("eras.md/input-requests: a handshake call the client cannot answer is a tool error naming the missing input") {
  input_server is;
  SUBCASE("no session: no peer, no sink") {
    fx::connection bare;
    const auto a = fx::handle(is.srv, fx::call_tool(1, "greet"), dispatch_context{bare.caller});
    CAPTURE(a.text);
    CHECK(a.code() == 0);
    CHECK(a.result()["isError"].is_bool());
    CHECK(a.result()["isError"].as_bool());
    CHECK(text_of(a).find("'name'") != std::string::npos);
    CHECK(is.seen.runs() == 1);
  }
  SUBCASE("a peer without a sink") {
    fx::connection c;
    initialize_all(is.srv, c);
    const auto a = fx::handle(is.srv, fx::call_tool(2, "greet"), dispatch_context{c.caller, &c.client});
    CAPTURE(a.text);
    CHECK(a.result()["isError"].as_bool());
    CHECK(text_of(a).find("'name'") != std::string::npos);
  }
  SUBCASE("the capability was not declared at initialize") {
    fx::connection c;
    c.send(is.srv, fx::initialize(1, "2025-11-25", R"({"sampling":{}})"));
    const auto a = c.send(is.srv, fx::call_tool(2, "roots"));
    CAPTURE(a.text);
    CHECK(a.result()["isError"].as_bool());
    CHECK(text_of(a).find("'roots'") != std::string::npos);
    CHECK(c.sink.with_method("roots/list").empty());
  }
  SUBCASE("a prompt: an error naming the input") {
    fx::connection bare;
    const auto a = fx::handle(is.srv, fx::request(3, "prompts/get", R"({"name":"greet"})"), dispatch_context{bare.caller});
    CAPTURE(a.text);
    CHECK(a.code() != 0);
    CHECK(a.message().find("'name'") != std::string::npos);
  }
}

TEST_CASE("eras.md/the-handler-contract: past max_input_rounds a handshake call is a tool error") {
  SUBCASE("two rounds allowed, the third is refused") {
    input_server is{with_rounds(2)};
    fx::connection c;
    initialize_all(is.srv, c);
    const auto answered = call_answering(is.srv, c, fx::call_tool(2, "always"),
                                         {R"({"action":"accept","content":{"name":"A"}})",
                                          R"({"action":"accept","content":{"name":"B"}})"});
    const fx::answer& call = answered.answer;
    CAPTURE(call.text);
    CHECK(call.result()["isError"].as_bool());
    CHECK(text_of(call).find("too many times") != std::string::npos);
    CHECK(is.seen.runs() == 3);
    CHECK(c.sink.with_method("elicitation/create").size() == 2);
  }
  SUBCASE("none allowed") {
    input_server is{with_rounds(0)};
    fx::connection c;
    initialize_all(is.srv, c);
    const auto a = c.send(is.srv, fx::call_tool(2, "greet"));
    CAPTURE(a.text);
    CHECK(a.result()["isError"].as_bool());
    CHECK(is.seen.runs() == 1);
    CHECK(c.sink.with_method("elicitation/create").empty());
  }
  SUBCASE("the default allows eight") {
    input_server is;
    fx::connection c;
    initialize_all(is.srv, c);
    const std::vector<std::string_view> answers(default_max_input_rounds,
                                                R"({"action":"accept","content":{"name":"A"}})");
    const auto answered = call_answering(is.srv, c, fx::call_tool(2, "always"), answers);
    const fx::answer& call = answered.answer;
    CHECK(call.result()["isError"].as_bool());
    CHECK(is.seen.runs() == static_cast<int>(default_max_input_rounds) + 1);
  }
}

}  // TEST_SUITE
