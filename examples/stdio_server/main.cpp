// SPDX-License-Identifier: Apache-2.0
// An MCP server on stdin/stdout, for desktop clients (Claude Desktop) and the official SDKs'
// StdioClientTransport. It shows every feature a handler can use: structured results with an
// output schema, progress, logging, cancellation, requests to the client (sampling, roots),
// resources and a resource template, a prompt with untrusted and closed-enum arguments,
// completion, and an approval-gated tool (in-memory tickets; they end with the process).
//
// Usage: mcpcore-stdio-server [--tier <readonly|operator|supervised>] [--read-only]
// Diagnostics go to stderr; stdout carries only protocol.
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/stores/memory_approval_store.hpp>
#include <mcpcore/transport/stdio.hpp>
#include <mcpcore/version.hpp>
#include <mcpcore/wire/json_writer.hpp>
#include <mcpcore/wire/log_level.hpp>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace {

std::string utc_now_iso8601(std::chrono::system_clock::time_point now) {
  const auto t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  const auto n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return std::string{buf, n} + "." + std::to_string(1000 + ms).substr(1) + "Z";
}

void declare_tools(mcpcore::server_builder& b) {
  using mcpcore::operation;
  using mcpcore::tool_effect;
  using mcpcore::tool_result;

  b.tool("get_time")
      .title("Current time")
      .description("The current UTC time of this machine, as ISO-8601 text and Unix milliseconds.")
      .output_schema(R"({"type":"object","properties":{"utc":{"type":"string"},"unix_ms":{"type":"integer"}},)"
                     R"("required":["utc","unix_ms"],"additionalProperties":false})")
      .security("Clock", operation::read)
      .effect(tool_effect::read_only, true)
      .handler([](mcpcore::call_context&, const mcpcore::arguments&) {
        const auto now = std::chrono::system_clock::now();
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
        return tool_result::structured_with([&](mcpcore::json::writer& w) {
          w.begin_object().member("utc", utc_now_iso8601(now)).member("unix_ms", ms).end_object();
        });
      });

  b.tool("echo")
      .description("Returns the given text unchanged.")
      .input_schema(R"({"type":"object","properties":{"text":{"type":"string","maxLength":4096}},)"
                    R"("required":["text"],"additionalProperties":false})")
      .security("Echo", operation::read)
      .effect(tool_effect::read_only, true)
      .handler([](mcpcore::call_context&, const mcpcore::arguments& args) {
        return tool_result::text(std::string{args["text"].as_string()});
      });

  b.tool("count_slowly")
      .description("Counts from 1 to `to`, one step every `interval_ms` milliseconds (default 100), reporting "
                   "progress and logging each step. Cancel it to stop early.")
      .input_schema(R"({"type":"object","properties":{"to":{"type":"integer","minimum":1,"maximum":100},)"
                    R"("interval_ms":{"type":"integer","minimum":0,"maximum":1000}},)"
                    R"("required":["to"],"additionalProperties":false})")
      .security("Counter", operation::read)
      .effect(tool_effect::read_only, true)
      .handler([](mcpcore::call_context& ctx, const mcpcore::arguments& args) {
        const auto to = *args["to"].to_int64();
        const auto interval = std::chrono::milliseconds{args["interval_ms"].to_int64().value_or(100)};
        ctx.log(mcpcore::log_level::info, "counting started", "count_slowly");
        for (std::int64_t i = 1; i <= to; ++i) {
          // Waits on the stop token, so a cancellation ends the wait at once.
          std::mutex m;
          std::condition_variable_any cv;
          std::unique_lock lock{m};
          if (cv.wait_for(lock, ctx.stop_token(), interval, [] { return false; }) || ctx.stop_requested()) {
            return tool_result::error("cancelled");
          }
          ctx.progress(static_cast<double>(i), static_cast<double>(to),
                       "step " + std::to_string(i) + " of " + std::to_string(to));
          ctx.log(mcpcore::log_level::debug, "step " + std::to_string(i), "count_slowly");
        }
        ctx.log(mcpcore::log_level::info, "counting finished", "count_slowly");
        return tool_result::text("counted to " + std::to_string(to));
      });

  b.tool("ask_client_model")
      .description("Asks the client's language model a question (sampling/createMessage) and returns its answer.")
      .input_schema(R"({"type":"object","properties":{"question":{"type":"string","maxLength":4096}},)"
                    R"("required":["question"],"additionalProperties":false})")
      .security("Sampling", operation::read)
      .effect(tool_effect::read_only, false)
      .handler([](mcpcore::call_context& ctx, const mcpcore::arguments& args) {
        std::string params;
        mcpcore::json::writer w{params};
        w.begin_object().key("messages").begin_array().begin_object().member("role", "user").key("content")
            .begin_object().member("type", "text").member("text", args["question"].as_string()).end_object()
            .end_object().end_array().member("maxTokens", 200).end_object();
        auto reply = ctx.request("sampling/createMessage", params, std::chrono::seconds{60});
        if (!reply) return tool_result::error("sampling failed: " + reply.error().message());
        if (reply->is_error()) return tool_result::error("the client refused the sampling request");
        const auto text = reply->value()["content"]["text"];
        if (!text.is_string()) return tool_result::error("the client's answer has no text content");
        return tool_result::text("client model answered: " + std::string{text.as_string()});
      });

  b.tool("divide")
      .description("Divides a by b. Division by zero is reported as a tool error.")
      .input_schema(R"({"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},)"
                    R"("required":["a","b"],"additionalProperties":false})")
      .output_schema(R"({"type":"object","properties":{"quotient":{"type":"number"}},)"
                     R"("required":["quotient"],"additionalProperties":false})")
      .security("Calculator", operation::read)
      .effect(tool_effect::read_only, true)
      .handler([](mcpcore::call_context&, const mcpcore::arguments& args) {
        const double x = *args["a"].to_double();
        const double y = *args["b"].to_double();
        if (y == 0) return tool_result::error("division by zero");
        return tool_result::structured_with(
            [&](mcpcore::json::writer& w) { w.begin_object().member("quotient", x / y).end_object(); });
      });

  // Approval-gated for the supervised tier (Yuzu's table gates every Delete): the first call
  // answers -32006 with a ticket; a reviewer other than the caller approves it out of band (the
  // host's approval page, docs/approvals.md); the call repeated with approval_id then runs once.
  b.tool("delete_note")
      .description("Deletes a note. With a supervised-tier token it needs an approval ticket first.")
      .input_schema(R"({"type":"object","properties":{"name":{"type":"string","minLength":1},)"
                    R"("approval_id":{"type":"string"}},"required":["name"],"additionalProperties":false})")
      .security("Note", operation::delete_)
      .effect(tool_effect::destructive, true)
      .handler([](mcpcore::call_context&, const mcpcore::arguments& args) {
        return tool_result::text("deleted note " + std::string{args["name"].as_string()});
      });

  b.tool("list_client_roots")
      .description("Lists the client's roots (roots/list), one URI per line.")
      .security("Roots", operation::read)
      .effect(tool_effect::read_only, true)
      .handler([](mcpcore::call_context& ctx, const mcpcore::arguments&) {
        auto reply = ctx.request("roots/list", {}, std::chrono::seconds{30});
        if (!reply) return tool_result::error("roots/list failed: " + reply.error().message());
        if (reply->is_error()) return tool_result::error("the client refused roots/list");
        std::string text;
        for (const auto root : reply->value()["roots"].elements()) {
          if (!root["uri"].is_string()) continue;
          text += root["uri"].as_string();
          text += '\n';
        }
        return tool_result::text(text);
      });
}

void declare_resources_and_prompts(mcpcore::server_builder& b) {
  b.resource("stdio-server://about")
      .name("about")
      .description("What this server is.")
      .mime_type("text/markdown")
      .handler([](mcpcore::call_context&, std::string_view uri, const mcpcore::uri_variables&) {
        return std::optional{mcpcore::resource_result{}.add_text(
            std::string{uri}, "text/markdown",
            "# mcpcore-stdio-server\n\nAn example MCP server built with mcpcore " MCPCORE_VERSION_STRING ".\n")};
      });
  b.resource_template("stdio-server://echo/{message}")
      .name("echo")
      .description("Returns the (percent-decoded) message of the URI as text.")
      .mime_type("text/plain")
      .handler([](mcpcore::call_context&, std::string_view uri, const mcpcore::uri_variables& vars) {
        return std::optional{
            mcpcore::resource_result{}.add_text(std::string{uri}, "text/plain", std::string{*vars.find("message")})};
      });
  b.prompt("explain_topic")
      .description("Asks the model to explain a topic for a beginner or an expert audience.")
      .argument("topic", "What to explain", true)
      .enum_argument("audience", "beginner or expert", {"beginner", "expert"})
      .handler([](mcpcore::call_context&, const mcpcore::prompt_arguments& args) {
        std::string text = "Explain the topic given below.\naudience: ";
        text += args.find("audience").value_or("beginner");
        text += '\n';
        mcpcore::append_untrusted_argument(text, "topic", *args.find("topic"));
        return mcpcore::prompt_result{"Explain a topic"}.add_user_text(std::move(text));
      });
}

}  // namespace

int main(int argc, char** argv) {
  mcpcore::principal caller;
  caller.id = "local-user";
  caller.kind = mcpcore::principal_kind::human_interactive;
  bool read_only = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--tier" && i + 1 < argc) {
      caller.tier = argv[++i];
    } else if (a == "--read-only") {
      read_only = true;
    } else {
      std::fprintf(stderr, "usage: %s [--tier <readonly|operator|supervised>] [--read-only]\n", argv[0]);
      return 2;
    }
  }

  mcpcore::server_builder b{{.name = "mcpcore-stdio-server",
                             .version = MCPCORE_VERSION_STRING,
                             .title = "mcpcore stdio example",
                             .instructions = "Example tools: get_time, echo, count_slowly (progress and "
                                             "logging), ask_client_model (sampling), divide, list_client_roots, delete_note "
                                             "(approval-gated for the supervised tier)."}};
  mcpcore::memory_approval_store approvals_store;
  mcpcore::approval_service approvals{approvals_store};
  declare_tools(b);
  declare_resources_and_prompts(b);
  b.approvals(approvals);
  auto server = b.build();
  if (!server) {
    std::fprintf(stderr, "mcpcore-stdio-server: refused to start: %s\n", server.error().message().c_str());
    return 1;
  }
  for (const auto& w : server->warnings()) std::fprintf(stderr, "mcpcore-stdio-server: warning: %s\n", w.c_str());
  server->switches().set_read_only(read_only);
  // A client that closes its end while we write must not kill the process: the write fails instead.
  std::signal(SIGPIPE, SIG_IGN);  // NOLINT(misc-include-cleaner): <csignal> declares SIGPIPE on POSIX
  std::fprintf(stderr, "mcpcore-stdio-server %s: serving MCP on stdin/stdout\n", MCPCORE_VERSION_STRING);
  mcpcore::stdio_transport transport{*server, caller};
  return transport.run();
}
