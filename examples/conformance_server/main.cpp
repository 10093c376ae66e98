// SPDX-License-Identifier: Apache-2.0
// The conformance fixture: an MCP server over Streamable HTTP on 127.0.0.1 that exposes exactly
// the tools, resources, prompts and behaviours the server scenarios of
// @modelcontextprotocol/conformance 0.1.16 call (docs/conformance.md), plus one approval-gated
// tool for the SDK client interop test (tests/interop/http_client.mjs) and the task tools of the
// tasks scenarios (task_fixtures.hpp, docs/tasks.md). Built only from the
// public API: server_builder, http_endpoint, approval_endpoint, the Asio server, the
// token authenticator and (with --stdio) stdio_transport.
//
// Usage: mcpcore-conformance-server [--port N] [--port-file PATH] [--token-file PATH]
//        mcpcore-conformance-server --stdio
//
// Requests without an Authorization header are the anonymous conformance principal (the suite
// sends no credentials); a bearer token must be listed in the token file and gives its principal.
// Prints "mcpcore conformance server listening on http://127.0.0.1:<port>/mcp" on stdout once it
// accepts connections; SIGINT or SIGTERM stop it gracefully. Diagnostics go to stderr.
//
// With --stdio it serves one client on stdin/stdout instead (mcpcore::stdio_transport, both eras:
// the first request decides, docs/eras.md#stdio), as the anonymous principal; stdout carries
// nothing but protocol. It exits at the end of its input, or gracefully on SIGINT or SIGTERM.
#include "../common/atomic_file.hpp"
#include "../common/stop_signals.hpp"
#include "per_request_fixtures.hpp"
#include "task_fixtures.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tasks.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/approval_endpoint.hpp>
#include <mcpcore/governance/authenticator.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/stores/memory_approval_store.hpp>
#include <mcpcore/stores/memory_task_store.hpp>
#include <mcpcore/transport/asio_http_server.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/transport/stdio.hpp>
#include <mcpcore/transport/token_authenticator.hpp>
#include <mcpcore/version.hpp>
#include <mcpcore/wire/http.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>
#include <mcpcore/wire/log_level.hpp>

#include <CLI/App.hpp>
#include <CLI/CLI.hpp>  // IWYU pragma: keep (Config.hpp and Formatter.hpp define what App.hpp declares)
#include <CLI/Validators.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX sigset_t, sigwait

namespace {

using mcpcore::call_context;
using mcpcore::content_block;
using mcpcore::tool_result;

// ---- fixed content ---------------------------------------------------------------------------

/// A 1x1 RGB PNG (one blue pixel).
constexpr std::string_view png_base64 =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mOQz38NAAIqAXpGbxguAAAAAElFTkSuQmCC";
/// A WAV file: PCM, 8000 Hz, mono, 16-bit, four samples of silence.
constexpr std::string_view wav_base64 = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQgAAAAAAAAAAAAAAA==";

/// The pause between the messages of the logging and progress tools (the scenarios expect
/// "about 50 ms"; the messages must reach the client before the result, not all at once).
constexpr std::chrono::milliseconds step_pause{50};
/// How long `test_reconnection` works on after it ended its response stream (SEP-1699): the
/// result is produced while the client reconnects, and reaches it on the resumed GET stream.
constexpr std::chrono::milliseconds reconnection_work{100};
/// The `retry:` hint `test_reconnection` gives the client for its reconnection.
constexpr std::chrono::milliseconds reconnection_retry{500};
/// Bound on a request to the client (sampling, elicitation) made by a tool.
constexpr std::chrono::seconds client_request_timeout{30};
/// Sessions one principal may hold. The suite opens a session per scenario as the anonymous
/// principal and never ends one (the SDK client's close() sends no DELETE), so the default cap
/// (`default_max_sessions_per_principal`) would refuse its later scenarios (-32010); idle sessions
/// still expire after the registry's idle TTL.
constexpr std::size_t max_sessions_per_principal = 256;
/// Tasks one principal may hold (`task_options::max_per_principal`): more than a tasks/list page
/// (`server_options::page_size`, 100), so that a client can page through them.
constexpr std::size_t max_tasks_per_principal = 256;
/// Tasks the fixture's store may hold.
constexpr std::size_t max_tasks = 4096;
/// Interval of the endpoint's maintenance tick (idle session collection, the bridge's sweep).
constexpr std::chrono::seconds tick_interval{3};

/// The anonymous principal: what a request without credentials is (the conformance suite sends
/// none). Its id is reserved: a token file must not use it.
constexpr std::string_view anonymous_id = "conformance-anonymous";

// ---- tool helpers ----------------------------------------------------------------------------

/// Asks the user through `elicitation/create` (a form: `message`, `schema_json`) and describes the
/// client's answer as "<prefix>: action=<action>, content=<compact JSON>". The call asks and
/// returns; the server sends the request and runs the handler again with the answer, without
/// holding a thread while the user thinks (docs/eras.md#waiting-for-the-client).
tool_result elicit(call_context& ctx, std::string_view message, std::string_view schema_json, std::string_view prefix) {
  const mcpcore::json::value answer = ctx.input("answer");
  if (!answer.exists()) {
    if (ctx.round_state() == "asked") return tool_result::error("the client refused the elicitation request");
    return tool_result::need_input(
        mcpcore::input_required{}.ask("answer", mcpcore::input_request::elicit(message, schema_json)).state("asked"));
  }
  std::string text{prefix};
  text += ": action=";
  text += answer["action"].is_string() ? answer["action"].as_string() : std::string_view{"(none)"};
  text += ", content=";
  if (answer["content"].exists()) {
    mcpcore::json::writer w{text};
    w.value(answer["content"]);
  } else {
    text += "{}";
  }
  return tool_result::text(std::move(text));
}

// ---- tools -----------------------------------------------------------------------------------

/// The tools of the conformance scenario table (docs/conformance.md), every one read-only on
/// the securable "Fixture".
void declare_conformance_tools(mcpcore::server_builder& b) {
  const auto fixture = [&b](std::string name, std::string description) {
    return conformance::fixture_tool(b, std::move(name), std::move(description));
  };

  // tools-call-simple-text
  fixture("test_simple_text", "Returns one text item.").handler([](call_context&, const mcpcore::arguments&) {
    return tool_result::text("This is a simple text response for testing.");
  });
  // tools-call-image
  fixture("test_image_content", "Returns one image item (a 1x1 PNG).")
      .handler([](call_context&, const mcpcore::arguments&) {
        return tool_result{}.add(content_block::image(std::string{png_base64}, "image/png"));
      });
  // tools-call-audio
  fixture("test_audio_content", "Returns one audio item (a short WAV).")
      .handler([](call_context&, const mcpcore::arguments&) {
        return tool_result{}.add(content_block::audio(std::string{wav_base64}, "audio/wav"));
      });
  // tools-call-embedded-resource
  fixture("test_embedded_resource", "Returns one embedded text resource.")
      .handler([](call_context&, const mcpcore::arguments&) {
        return tool_result{}.add(content_block::embedded_text("test://embedded-resource", "text/plain",
                                                              "This is an embedded resource content."));
      });
  // tools-call-mixed-content
  fixture("test_multiple_content_types", "Returns a text, an image and an embedded resource item.")
      .handler([](call_context&, const mcpcore::arguments&) {
        return tool_result{}
            .add_text("Multiple content types test:")
            .add(content_block::image(std::string{png_base64}, "image/png"))
            .add(content_block::embedded_text("test://mixed-content-resource", "application/json",
                                              R"({"test":"data","value":123})"));
      });
  // tools-call-with-logging: three info messages about 50 ms apart, streamed before the result.
  fixture("test_tool_with_logging", "Sends three log messages (level info) while it runs.")
      .handler([](call_context& ctx, const mcpcore::arguments&) {
        ctx.log(mcpcore::log_level::info, "Tool execution started", "conformance");
        if (!conformance::wait_or_stop(ctx, step_pause)) return tool_result::error("cancelled");
        ctx.log(mcpcore::log_level::info, "Tool processing data", "conformance");
        if (!conformance::wait_or_stop(ctx, step_pause)) return tool_result::error("cancelled");
        ctx.log(mcpcore::log_level::info, "Tool execution completed", "conformance");
        return tool_result::text("Tool with logging executed successfully");
      });
  // tools-call-error: a tool error is a result with isError, not a JSON-RPC error.
  fixture("test_error_handling", "Always fails with a tool error (isError).")
      .handler([](call_context&, const mcpcore::arguments&) {
        return tool_result::error("This tool intentionally returns an error for testing");
      });
  // tools-call-with-progress: 0, 50, 100 of 100, about 50 ms apart, before the result.
  fixture("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100 while it runs.")
      .handler([](call_context& ctx, const mcpcore::arguments&) {
        for (const int step : {0, 50, 100}) {
          if (step != 0 && !conformance::wait_or_stop(ctx, step_pause)) return tool_result::error("cancelled");
          ctx.progress(step, 100.0, "Completed step " + std::to_string(step) + " of 100");
        }
        return tool_result::text("Progress reported: 0, 50, 100 of 100");
      });
  // tools-call-sampling: sampling/createMessage inside the call.
  fixture("test_sampling", "Asks the client's model (sampling/createMessage) and returns its answer.")
      .input_schema(R"({"type":"object","properties":{"prompt":{"type":"string","description":)"
                    R"("The prompt to send to the LLM"}},"required":["prompt"],"additionalProperties":false})")
      .handler([](call_context& ctx, const mcpcore::arguments& args) {
        const mcpcore::json::value reply = ctx.input("reply");
        if (!reply.exists()) {
          if (ctx.round_state() == "asked") return tool_result::error("the client refused the sampling request");
          std::string params;
          mcpcore::json::writer w{params};
          w.begin_object().key("messages").begin_array().begin_object().member("role", "user").key("content")
              .begin_object().member("type", "text").member("text", args["prompt"].as_string()).end_object()
              .end_object().end_array().member("maxTokens", 100).end_object();
          return tool_result::need_input(mcpcore::input_required{}
                                             .ask("reply", mcpcore::input_request::create_message(params))
                                             .state("asked"));
        }
        const auto text = reply["content"]["text"];
        if (!text.is_string()) return tool_result::error("the client's answer has no text content");
        return tool_result::text("LLM response: " + std::string{text.as_string()});
      });
  // tools-call-elicitation: elicitation/create (username, email) inside the call.
  fixture("test_elicitation", "Asks the user for a username and an email address (elicitation/create).")
      .input_schema(R"({"type":"object","properties":{"message":{"type":"string","description":)"
                    R"("The message to show the user"}},"required":["message"],"additionalProperties":false})")
      .handler([](call_context& ctx, const mcpcore::arguments& args) {
        return elicit(
            ctx, args["message"].as_string(),
            R"({"type":"object","properties":{"username":{"type":"string","description":"User's response"},)"
            R"("email":{"type":"string","description":"User's email address"}},"required":["username","email"]})",
            "User response");
      });
  // json-schema-2020-12: the 2020-12 keywords are served verbatim.
  fixture("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features")
      .input_schema(R"({"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",)"
                    R"("$defs":{"address":{"type":"object","properties":{"street":{"type":"string"},)"
                    R"("city":{"type":"string"}}}},"properties":{"name":{"type":"string"},)"
                    R"("address":{"$ref":"#/$defs/address"}},"additionalProperties":false})")
      .handler([](call_context&, const mcpcore::arguments& args) {
        std::string text = "received: ";
        mcpcore::json::writer w{text};
        if (args.exists()) {
          w.value(args);
        } else {
          text += "{}";
        }
        return tool_result::text(std::move(text));
      });
  // elicitation-sep1034-defaults: a default for every primitive type.
  fixture("test_elicitation_sep1034_defaults", "Elicits a form whose fields all have defaults (SEP-1034).")
      .handler([](call_context& ctx, const mcpcore::arguments&) {
        return elicit(ctx, "Please review and update the form fields with defaults",
                      R"({"type":"object","properties":{)"
                      R"("name":{"type":"string","description":"User name","default":"John Doe"},)"
                      R"("age":{"type":"integer","description":"User age","default":30},)"
                      R"("score":{"type":"number","description":"User score","default":95.5},)"
                      R"("status":{"type":"string","description":"User status",)"
                      R"("enum":["active","inactive","pending"],"default":"active"},)"
                      R"("verified":{"type":"boolean","description":"Verification status","default":true}},)"
                      R"("required":[]})",
                      "Elicitation completed");
      });
  // server-sse-polling (SEP-1699): the response stream ends after the priming event; the
  // client reconnects with GET + Last-Event-ID and gets the result there.
  fixture("test_reconnection",
          "Ends its response stream mid-call (SEP-1699); the result arrives after the client reconnects "
          "with GET and Last-Event-ID.")
      .handler([](call_context& ctx, const mcpcore::arguments&) {
        const bool closed = ctx.close_stream(reconnection_retry);
        if (!conformance::wait_or_stop(ctx, reconnection_work)) return tool_result::error("cancelled");
        if (!closed) return tool_result::error("the transport could not end the response stream");
        return tool_result::text(
            "Reconnection test completed successfully. If you received this, the client properly reconnected "
            "after stream closure.");
      });
  // elicitation-sep1330-enums: the five enum shapes.
  fixture("test_elicitation_sep1330_enums", "Elicits a form with every enum shape of SEP-1330.")
      .handler([](call_context& ctx, const mcpcore::arguments&) {
        return elicit(
            ctx, "Please choose from the enum fields",
            R"({"type":"object","properties":{)"
            R"("untitledSingle":{"type":"string","description":"Untitled single-select",)"
            R"("enum":["option1","option2","option3"]},)"
            R"("titledSingle":{"type":"string","description":"Titled single-select","oneOf":[)"
            R"({"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},)"
            R"({"const":"value3","title":"Third Option"}]},)"
            R"("legacyEnum":{"type":"string","description":"Legacy titled enum","enum":["opt1","opt2","opt3"],)"
            R"("enumNames":["Option One","Option Two","Option Three"]},)"
            R"("untitledMulti":{"type":"array","description":"Untitled multi-select",)"
            R"("items":{"type":"string","enum":["option1","option2","option3"]}},)"
            R"("titledMulti":{"type":"array","description":"Titled multi-select","items":{"anyOf":[)"
            R"({"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},)"
            R"({"const":"value3","title":"Third Choice"}]}}},"required":[]})",
            "Elicitation completed");
      });
}

/// The approval-gated tool of the SDK client test: Note:Delete, which `fixture_tier_policy`
/// routes through approval for the supervised tier.
void declare_gated_tool(mcpcore::server_builder& b) {
  b.tool("delete_note")
      .description("Deletes a note (nothing is stored: it only says so). A supervised caller needs an approval "
                   "ticket first: the call answers -32006 with approval_id until an approver approves it.")
      .input_schema(R"({"type":"object","properties":{"name":{"type":"string","minLength":1},)"
                    R"("approval_id":{"type":"string"}},"required":["name"],"additionalProperties":false})")
      .security("Note", mcpcore::operation::delete_)
      .effect(mcpcore::tool_effect::destructive, true)
      .handler([](call_context&, const mcpcore::arguments& args) {
        return tool_result::text("deleted note " + std::string{args["name"].as_string()});
      });
}

// ---- resources and prompts -------------------------------------------------------------------

void declare_resources(mcpcore::server_builder& b) {
  using mcpcore::resource_result;
  using mcpcore::uri_variables;
  // resources-read-text
  b.resource("test://static-text")
      .name("static-text")
      .description("A static text resource.")
      .mime_type("text/plain")
      .handler([](call_context&, std::string_view uri, const uri_variables&) {
        return std::optional{
            resource_result{}.add_text(std::string{uri}, "text/plain", "This is the content of the static text resource.")};
      });
  // resources-read-binary
  b.resource("test://static-binary")
      .name("static-binary")
      .description("A static binary resource (a 1x1 PNG).")
      .mime_type("image/png")
      .handler([](call_context&, std::string_view uri, const uri_variables&) {
        return std::optional{resource_result{}.add_blob(std::string{uri}, "image/png", std::string{png_base64})};
      });
  // resources-subscribe, resources-unsubscribe
  b.resource("test://watched-resource")
      .name("watched-resource")
      .description("A resource to subscribe to.")
      .mime_type("text/plain")
      .handler([](call_context&, std::string_view uri, const uri_variables&) {
        return std::optional{resource_result{}.add_text(std::string{uri}, "text/plain", "Watched resource content.")};
      });
  // resources-templates-read
  b.resource_template("test://template/{id}/data")
      .name("template-data")
      .description("Data for the id of the URI, as JSON.")
      .mime_type("application/json")
      .handler([](call_context&, std::string_view uri, const uri_variables& vars) {
        const auto id = vars.find("id").value_or("");
        std::string text;
        mcpcore::json::writer w{text};
        w.begin_object().member("id", id).member("templateTest", true).member("data", "Data for ID: " + std::string{id})
            .end_object();
        return std::optional{resource_result{}.add_text(std::string{uri}, "application/json", std::move(text))};
      });
}

void declare_prompts(mcpcore::server_builder& b) {
  using mcpcore::prompt_arguments;
  using mcpcore::prompt_result;
  // prompts-get-simple
  b.prompt("test_simple_prompt")
      .description("A prompt without arguments.")
      .handler([](call_context&, const prompt_arguments&) {
        return prompt_result{"A simple prompt"}.add_user_text("This is a simple prompt for testing.");
      });
  // prompts-get-with-args, completion-complete (arg1 completes from a fixed list).
  b.prompt("test_prompt_with_arguments")
      .description("A prompt with two arguments, quoted into its text.")
      .argument("arg1", "First test argument", true,
                [](std::string_view value, const prompt_arguments&) {
                  std::vector<std::string> out;
                  for (const std::string_view v : {"paris", "park", "party"}) {
                    if (v.starts_with(value)) out.emplace_back(v);
                  }
                  return out;
                })
      .argument("arg2", "Second test argument", true)
      .handler([](call_context&, const prompt_arguments& args) {
        std::string text = "Prompt with arguments:\n";
        mcpcore::append_untrusted_argument(text, "arg1", args.find("arg1").value_or(""));
        mcpcore::append_untrusted_argument(text, "arg2", args.find("arg2").value_or(""));
        return prompt_result{"A prompt with arguments"}.add_user_text(std::move(text));
      });
  // prompts-get-embedded-resource
  b.prompt("test_prompt_with_embedded_resource")
      .description("A prompt embedding the resource named by its argument.")
      .argument("resourceUri", "URI of the resource to embed", true)
      .handler([](call_context&, const prompt_arguments& args) {
        return prompt_result{"A prompt with an embedded resource"}
            .add(prompt_result::role::user,
                 content_block::embedded_text(std::string{args.find("resourceUri").value_or("")}, "text/plain",
                                              "Embedded resource content for testing."))
            .add_user_text("Please process the embedded resource above.");
      });
  // prompts-get-with-image
  b.prompt("test_prompt_with_image")
      .description("A prompt with an image.")
      .handler([](call_context&, const prompt_arguments&) {
        return prompt_result{"A prompt with an image"}
            .add(prompt_result::role::user, content_block::image(std::string{png_base64}, "image/png"))
            .add_user_text("Please analyze the image above.");
      });
}

// ---- plug-ins --------------------------------------------------------------------------------

/// The tier gate: no tier (the anonymous principal, people) allows everything; `supervised`
/// allows everything but routes Note:Delete through approval; any other tier is denied.
struct fixture_tier_policy {
  [[nodiscard]] mcpcore::tier_decision decide(std::string_view tier, std::string_view securable,
                                              mcpcore::operation op) const noexcept {
    using mcpcore::tier_decision;
    if (tier.empty()) return tier_decision::allow;
    if (tier == "supervised") {
      return securable == "Note" && op == mcpcore::operation::delete_ ? tier_decision::allow_with_approval
                                                                       : tier_decision::allow;
    }
    return tier_decision::deny;
  }
};

/// No `Authorization` header: the anonymous principal. Otherwise the token file decides (no
/// token file: every credential is refused, 401).
class fixture_authenticator {
 public:
  explicit fixture_authenticator(std::optional<mcpcore::transport::token_authenticator> tokens)
      : tokens_(std::move(tokens)) {}

  [[nodiscard]] std::optional<mcpcore::principal> authenticate(const mcpcore::http_request_view& req) const {
    if (!req.header("Authorization").has_value()) return anonymous();
    if (!tokens_) return std::nullopt;
    return tokens_->authenticate(req);
  }
  [[nodiscard]] mcpcore::credential_verdict revalidate(const mcpcore::principal& p) const {
    if (p.id == anonymous_id) return mcpcore::credential_verdict::valid;
    if (!tokens_) return mcpcore::credential_verdict::revoked;
    return tokens_->revalidate(p);
  }

  [[nodiscard]] static mcpcore::principal anonymous() {
    mcpcore::principal p;
    p.id = std::string{anonymous_id};
    p.kind = mcpcore::principal_kind::service;
    p.display_name = "conformance suite (no credentials)";
    return p;
  }

 private:
  std::optional<mcpcore::transport::token_authenticator> tokens_;
};
static_assert(mcpcore::authenticator<fixture_authenticator>);

/// Serves one client on stdin/stdout until the input ends or SIGINT/SIGTERM arrives.
int serve_stdio(mcpcore::server& srv) {
  // Taken before any thread starts: the signal thread below waits for them, SIGPIPE is ignored.
  const auto stop_signals = mcpcore_examples::block_stop_signals();
  mcpcore::stdio_transport transport{srv, fixture_authenticator::anonymous()};
  std::thread signals{[&stop_signals, &transport] {
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    transport.stop();  // harmless once run() has returned
  }};
  std::fprintf(stderr, "mcpcore-conformance-server: serving MCP on stdin/stdout\n");
  const int rc = transport.run();
  (void)pthread_kill(signals.native_handle(), SIGINT);  // wakes the signal thread if no signal came
  signals.join();
  return rc;
}

int run(int argc, char** argv) {
  CLI::App app{"MCP conformance fixture server (Streamable HTTP on 127.0.0.1, or stdio)", "mcpcore-conformance-server"};
  std::uint16_t port = 0;
  std::string port_file;
  std::string token_file;
  bool stdio = false;
  std::vector<std::string> cors_origins;
  auto* port_opt = app.add_option("--port", port, "TCP port on 127.0.0.1 (0: an ephemeral port)")->capture_default_str();
  auto* port_file_opt = app.add_option("--port-file", port_file, "Write the bound port to this file once listening");
  auto* token_file_opt =
      app.add_option("--token-file", token_file, "Bearer tokens (SHA-256 digests, docs/authentication.md)")
          ->check(CLI::ExistingFile);
  auto* cors_opt = app.add_option("--cors-origin", cors_origins,
                                  "Let pages of this exact origin (e.g. http://127.0.0.1:6274) call /mcp from a browser "
                                  "(CORS, docs/http.md#cors); repeatable");
  app.add_flag("--stdio", stdio, "Serve one client on stdin/stdout (the anonymous principal) instead of HTTP")
      ->excludes(port_opt)
      ->excludes(port_file_opt)
      ->excludes(token_file_opt)
      ->excludes(cors_opt);
  CLI11_PARSE(app, argc, argv);

  std::optional<mcpcore::transport::token_authenticator> tokens;
  if (!token_file.empty()) {
    auto loaded = mcpcore::transport::token_authenticator::load(token_file);
    if (!loaded) {
      std::fprintf(stderr, "mcpcore-conformance-server: %s: %s\n", token_file.c_str(),
                   loaded.error().message().c_str());
      return 1;
    }
    for (const auto& w : loaded->warnings()) {
      std::fprintf(stderr, "mcpcore-conformance-server: %s: warning: %s\n", token_file.c_str(),
                   mcpcore::transport::to_string(w).c_str());
    }
    tokens = std::move(*loaded);
  }

  // Approvals: in memory (tickets end with the process); people holding the role "approver"
  // review through POST /api/v1/approvals/<id>/approve|reject.
  mcpcore::memory_approval_store approval_store;
  mcpcore::approval_service approvals{approval_store};
  mcpcore::role_table_authorizer approvers;
  approvers.grant("approver", "Approval", mcpcore::operation::approve);
  const mcpcore::approval_endpoint approval_routes{approvals, approvers};
  // Tasks (docs/tasks.md): in memory, ending with the process. One principal may hold more tasks
  // than one tasks/list page (the SDK interop test pages through them).
  mcpcore::memory_task_store task_store;
  mcpcore::task_options task_options;
  task_options.max_per_principal = max_tasks_per_principal;
  task_options.max_total = max_tasks;

  mcpcore::server_options server_options;
  server_options.policy_tiers = {"", "supervised"};
  // How long a call waits for the client's answer to its sampling or elicitation request.
  server_options.max_client_request_timeout = client_request_timeout;
  mcpcore::server_builder b{{.name = "mcpcore-conformance-server",
                             .version = MCPCORE_VERSION_STRING,
                             .title = "mcpcore conformance fixture",
                             .instructions = "Fixture for the MCP conformance suite: test_* tools, test:// resources "
                                             "and test_* prompts, delete_note (approval-gated for the "
                                             "supervised tier) and the task tools (slow_compute and others)."},
                            server_options};
  declare_conformance_tools(b);
  declare_gated_tool(b);
  declare_resources(b);
  declare_prompts(b);
  const auto slot = std::make_shared<std::atomic<mcpcore::server*>>(nullptr);
  conformance::declare_per_request_tools(b, slot);
  conformance::declare_per_request_prompts(b);
  conformance::declare_task_tools(b);
  b.policy(fixture_tier_policy{}).approvals(approvals).tasks(task_store, task_options);
  auto server = b.build();
  if (!server) {
    std::fprintf(stderr, "mcpcore-conformance-server: refused to start: %s\n", server.error().message().c_str());
    return 1;
  }
  for (const auto& w : server->warnings()) std::fprintf(stderr, "mcpcore-conformance-server: warning: %s\n", w.c_str());
  slot->store(&*server);
  if (stdio) return serve_stdio(*server);

  // The main thread takes the stop signals with sigwait below.
  const auto stop_signals = mcpcore_examples::block_stop_signals();

  // The endpoint admits its own loopback origin (allow_loopback_same_origin), whatever port the
  // bind picks; the Asio server drives it, ticks it and shuts it down.
  mcpcore::http_endpoint_options endpoint_options;
  endpoint_options.session.max_sessions_per_principal = max_sessions_per_principal;
  endpoint_options.cors.allowed_origins = cors_origins;
  mcpcore::http_endpoint endpoint{*server, fixture_authenticator{std::move(tokens)}, endpoint_options};
  endpoint.set_approvals(approval_routes);
  mcpcore::transport::asio_http_server_options http_options;
  http_options.address = "127.0.0.1";
  http_options.port = port;
  http_options.tick_interval = tick_interval;
  mcpcore::transport::asio_http_server http{endpoint, http_options};
  if (auto started = http.start(); !started) {
    std::fprintf(stderr, "mcpcore-conformance-server: cannot listen on 127.0.0.1:%u: %s\n", unsigned{port},
                 started.error().message().c_str());
    return 1;
  }
  const auto bound = std::to_string(http.port());
  if (!port_file.empty() && !mcpcore_examples::write_file_atomically(port_file, bound + "\n")) {
    std::fprintf(stderr, "mcpcore-conformance-server: cannot write the port file %s\n", port_file.c_str());
    http.stop();
    return 1;
  }
  std::printf("mcpcore conformance server listening on http://127.0.0.1:%s/mcp\n", bound.c_str());
  std::fflush(stdout);

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  std::fprintf(stderr, "mcpcore-conformance-server: signal %d, stopping\n", signal_number);
  http.stop();  // initialize answers 503, streams close session_terminated, responses flush, threads join
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mcpcore-conformance-server: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "mcpcore-conformance-server: unknown exception\n");
  }
  return 1;
}
