// SPDX-License-Identifier: Apache-2.0
// The fixture's tools and prompt for the per-request era's conformance scenarios (MCP 2026-07-28,
// docs/conformance.md): input-required results (every round re-runs the handler with the answers
// so far, docs/eras.md#the-handler-contract), the capability and logging probes.
#ifndef MCPCORE_EXAMPLES_CONFORMANCE_PER_REQUEST_FIXTURES_HPP
#define MCPCORE_EXAMPLES_CONFORMANCE_PER_REQUEST_FIXTURES_HPP

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/wire/era.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>

#include <string>
#include <string_view>

namespace conformance {

using mcpcore::call_context;
using mcpcore::client_capability;
using mcpcore::input_request;
using mcpcore::input_required;
using mcpcore::tool_result;

/// A form with one required string field `field`.
inline std::string one_string_form(std::string_view field) {
  std::string schema;
  mcpcore::json::writer w{schema};
  w.begin_object().member("type", "object").key("properties").begin_object().key(field).begin_object();
  w.member("type", "string").end_object().end_object().key("required").begin_array().value(field).end_array();
  w.end_object();
  return schema;
}

/// `sampling/createMessage` params asking `text` of the client's model.
inline std::string sampling_params(std::string_view text, int max_tokens) {
  std::string params;
  mcpcore::json::writer w{params};
  w.begin_object().key("messages").begin_array().begin_object().member("role", "user").key("content");
  w.begin_object().member("type", "text").member("text", text).end_object().end_object().end_array();
  w.member("maxTokens", max_tokens).end_object();
  return params;
}

/// The accepted content field `field` of the elicitation answered under `key`, if it is a string.
inline std::optional<std::string> accepted_string(const call_context& ctx, std::string_view key, std::string_view field) {
  const auto answer = ctx.input(key);
  if (!answer["action"].is_string() || answer["action"].as_string() != "accept" ||
      !answer["content"][field].is_string()) {
    return std::nullopt;
  }
  return std::string{answer["content"][field].as_string()};
}

/// The built server, for the handlers that change its tables (set once, after the build).
using server_slot = std::shared_ptr<std::atomic<mcpcore::server*>>;

/// Waits up to `d` unless the call is cancelled first; false when it was cancelled.
inline bool wait_or_stop(const call_context& ctx, std::chrono::milliseconds d) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock{m};
  (void)cv.wait_for(lock, ctx.stop_token(), d, [] { return false; });
  return !ctx.stop_requested();
}

/// Declares a fixture tool: read-only, idempotent, on the securable "Fixture" (every tool of the
/// conformance fixture is one).
inline mcpcore::tool_builder fixture_tool(mcpcore::server_builder& b, std::string name, std::string description) {
  auto t = b.tool(std::move(name));
  t.description(std::move(description))
      .security("Fixture", mcpcore::operation::read)
      .effect(mcpcore::tool_effect::read_only, true);
  return t;
}

inline void declare_per_request_tools(mcpcore::server_builder& b, const server_slot& slot) {
  const auto fixture = [&b](std::string name, std::string description) {
    return fixture_tool(b, std::move(name), std::move(description));
  };

  fixture("test_input_required_result_elicitation", "Asks the user's name (elicitation), then greets them.")
      .handler([](call_context& ctx, const mcpcore::arguments&) {
        const auto name = accepted_string(ctx, "user_name", "name");
        if (!name) {
          return tool_result::need_input(input_required{}.ask(
              "user_name", input_request::elicit("What is your name?", one_string_form("name"))));
        }
        return tool_result::text("Hello, " + *name + "!");
      });
  fixture("test_input_required_result_sampling", "Asks the client's model a question (sampling).")
      .handler([](call_context& ctx, const mcpcore::arguments&) {
        const auto answer = ctx.input("sample_request")["content"]["text"];
        if (!answer.is_string()) {
          return tool_result::need_input(input_required{}.ask(
              "sample_request", input_request::create_message(sampling_params("What is the capital of France?", 100))));
        }
        return tool_result::text("The model said: " + std::string{answer.as_string()});
      });
  fixture("test_input_required_result_list_roots", "Asks the client for its roots.")
      .handler([](call_context& ctx, const mcpcore::arguments&) {
        const auto roots = ctx.input("client_roots")["roots"];
        if (!roots.is_array()) {
          return tool_result::need_input(input_required{}.ask("client_roots", input_request::list_roots()));
        }
        return tool_result::text("Found " + std::to_string(roots.size()) + " root(s)");
      });
  // The state names the round, so the handler knows the confirmation belongs to this request.
  const auto confirm = [](std::string_view marker) {
    return [marker](call_context& ctx, const mcpcore::arguments&) {
      if (ctx.round_state() != marker || ctx.input("confirm")["content"]["ok"].is_bool() == false) {
        std::string schema = R"({"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]})";
        return tool_result::need_input(
            input_required{}.ask("confirm", input_request::elicit("Please confirm", schema)).state(std::string{marker}));
      }
      return tool_result::text(ctx.input("confirm")["content"]["ok"].as_bool() ? "state-ok: confirmed"
                                                                                 : "state-ok: not confirmed");
    };
  };
  fixture("test_input_required_result_request_state", "Asks for a confirmation and carries state across rounds.")
      .handler(confirm("awaiting-confirmation"));
  fixture("test_input_required_result_tampered_state", "Like the request-state tool; a tampered state is refused.")
      .handler(confirm("awaiting-confirmation-2"));
  fixture("test_input_required_result_multiple_inputs", "Asks for a name, a greeting and the roots in one round.")
      .handler([](call_context& ctx, const mcpcore::arguments&) {
        const auto name = accepted_string(ctx, "user_name", "name");
        const auto greeting = ctx.input("greeting")["content"]["text"];
        const auto roots = ctx.input("client_roots")["roots"];
        if (!name || !greeting.is_string() || !roots.is_array()) {
          return tool_result::need_input(
              input_required{}
                  .ask("user_name", input_request::elicit("What is your name?", one_string_form("name")))
                  .ask("greeting", input_request::create_message(sampling_params("Generate a greeting", 50)))
                  .ask("client_roots", input_request::list_roots())
                  .state("all-three"));
        }
        return tool_result::text(std::string{greeting.as_string()} + " " + *name + " (" +
                                 std::to_string(roots.size()) + " root(s))");
      });
  // Two rounds: the name, then the colour; the state carries the name between them.
  fixture("test_input_required_result_multi_round", "Asks two questions in two rounds.")
      .handler([](call_context& ctx, const mcpcore::arguments&) {
        const std::string_view state = ctx.round_state();
        if (state.starts_with("name:")) {
          if (const auto color = accepted_string(ctx, "step2", "color")) {
            return tool_result::text(std::string{state.substr(5)} + " likes " + *color);
          }
          return tool_result::need_input(
              input_required{}
                  .ask("step2", input_request::elicit("Step 2: What is your favorite color?", one_string_form("color")))
                  .state(std::string{state}));
        }
        if (const auto name = accepted_string(ctx, "step1", "name")) {
          return tool_result::need_input(
              input_required{}
                  .ask("step2", input_request::elicit("Step 2: What is your favorite color?", one_string_form("color")))
                  .state("name:" + *name));
        }
        return tool_result::need_input(input_required{}.ask(
            "step1", input_request::elicit("Step 1: What is your name?", one_string_form("name"))));
      });
  // Asks only for what the client declared: sampling when it can, else elicitation.
  fixture("test_input_required_result_capabilities", "Asks for input the client declared it can give.")
      .handler([](call_context& ctx, const mcpcore::arguments&) {
        if (ctx.input("sample_input").exists() || ctx.input("user_name").exists()) {
          return tool_result::text("Input received");
        }
        if (ctx.client_declares(client_capability::sampling)) {
          return tool_result::need_input(input_required{}.ask(
              "sample_input", input_request::create_message(sampling_params("Sample request", 50))));
        }
        return tool_result::need_input(input_required{}.ask(
            "user_name", input_request::elicit("What is your name?", one_string_form("name"))));
      });
  // Needs the client's model: refused -32021 when the request did not declare sampling.
  fixture("test_missing_capability", "Asks the client's model; needs the sampling capability.")
      .handler([](call_context& ctx, const mcpcore::arguments&) {
        if (const auto text = ctx.input("model")["content"]["text"]; text.is_string()) {
          return tool_result::text("The model said: " + std::string{text.as_string()});
        }
        return tool_result::need_input(
            input_required{}.ask("model", input_request::create_message(sampling_params("Say hello", 20))));
      });
  // Progress, then an elicitation as an input-required result: never a request on the stream.
  fixture("test_streaming_elicitation", "Reports progress, then asks the user a question.")
      .handler([](call_context& ctx, const mcpcore::arguments&) {
        if (const auto name = accepted_string(ctx, "user_name", "name")) return tool_result::text("Hello, " + *name);
        (void)ctx.progress(1, 2, "asking");
        return tool_result::need_input(input_required{}.ask(
            "user_name", input_request::elicit("What is your name?", one_string_form("name"))));
      });
  // SEP-2243: the region is mirrored in the Mcp-Param-Region header, which must agree with it.
  fixture("test_custom_header_echo", "Echoes its region argument, which the client mirrors in Mcp-Param-Region.")
      .input_schema(R"({"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region",)"
                    R"("description":"Where to run"}},"required":["region"],"additionalProperties":false})")
      .handler([](call_context&, const mcpcore::arguments& args) {
        return tool_result::text(std::string{args["region"].as_string()});
      });
  // Run-time list changes (docs/eras.md#subscriptions): each call hides or shows test_dynamic_tool
  // (or test_dynamic_prompt), which publishes the list change to every listening client.
  fixture("test_dynamic_tool", "Listed or not, as test_trigger_tool_change decides.")
      .handler([](call_context&, const mcpcore::arguments&) { return tool_result::text("dynamic"); });
  const auto toggle = [slot](bool tool) {
    return [slot, tool, shown = std::make_shared<std::atomic<bool>>(true)](call_context&, const mcpcore::arguments&) {
      mcpcore::server* s = slot->load();
      if (s == nullptr) return tool_result::error("the server is not running yet");
      const bool now = !shown->load();
      shown->store(now);
      const bool known = tool ? s->set_tool_enabled("test_dynamic_tool", now)
                              : s->set_prompt_enabled("test_dynamic_prompt", now);
      if (!known) return tool_result::error("nothing to change");
      return tool_result::text(std::string{tool ? "test_dynamic_tool" : "test_dynamic_prompt"} +
                               (now ? " is listed" : " is hidden"));
    };
  };
  fixture("test_trigger_tool_change", "Hides or shows test_dynamic_tool (tools list_changed).").handler(toggle(true));
  fixture("test_trigger_prompt_change", "Hides or shows test_dynamic_prompt (prompts list_changed).")
      .handler(toggle(false));
  // A resource changed: listeners subscribed to test://static-text get notifications/resources/updated.
  fixture("test_trigger_resource_update", "Announces that test://static-text changed (resources/updated).")
      .handler([slot](call_context&, const mcpcore::arguments&) {
        mcpcore::server* s = slot->load();
        if (s == nullptr) return tool_result::error("the server is not running yet");
        s->publish(mcpcore::server_event{mcpcore::server_event_kind::resource_updated, "test://static-text"});
        return tool_result::text("test://static-text updated");
      });
  // Runs until cancelled (10 s at most): closing its response stream cancels it.
  fixture("test_slow_tool", "Waits up to 10 seconds, or until the call is cancelled.")
      .handler([](call_context& ctx, const mcpcore::arguments&) {
        if (!wait_or_stop(ctx, std::chrono::seconds{10})) return tool_result::error("cancelled");
        return tool_result::text("finished");
      });
  // Logs three messages: sent only when the request named a log level.
  fixture("test_logging_tool", "Logs three messages at level info.")
      .handler([](call_context& ctx, const mcpcore::arguments&) {
        for (const std::string_view m : {"first", "second", "third"}) {
          (void)ctx.log(mcpcore::log_level::info, m, "conformance");
        }
        return tool_result::text("Logged three messages");
      });
}

inline void declare_per_request_prompts(mcpcore::server_builder& b) {
  using mcpcore::prompt_arguments;
  using mcpcore::prompt_result;
  b.prompt("test_dynamic_prompt")
      .description("Listed or not, as test_trigger_prompt_change decides.")
      .handler([](call_context&, const prompt_arguments&) { return prompt_result{"dynamic"}.add_user_text("dynamic"); });
  b.prompt("test_input_required_result_prompt")
      .description("Asks the user for context before producing the prompt.")
      .handler([](call_context& ctx, const prompt_arguments&) {
        const auto context = accepted_string(ctx, "user_context", "context");
        if (!context) {
          return prompt_result::need_input(input_required{}.ask(
              "user_context", input_request::elicit("What context should the prompt use?", one_string_form("context"))));
        }
        std::string text = "Prompt with context:\n";
        mcpcore::append_untrusted_argument(text, "context", *context);
        return prompt_result{"A prompt that asked for context"}.add_user_text(std::move(text));
      });
}

}  // namespace conformance

#endif  // MCPCORE_EXAMPLES_CONFORMANCE_PER_REQUEST_FIXTURES_HPP
