// SPDX-License-Identifier: Apache-2.0
// The fixture's task tools (docs/tasks.md, docs/conformance.md): what the conformance suite's tasks
// scenarios (the 2026-07-28 tasks extension) and the TypeScript SDK's task API (2025-11-25) call.
#ifndef MCPCORE_EXAMPLES_CONFORMANCE_TASK_FIXTURES_HPP
#define MCPCORE_EXAMPLES_CONFORMANCE_TASK_FIXTURES_HPP

#include "per_request_fixtures.hpp"

#include <mcpcore/dispatch/operation.hpp>
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tasks.hpp>
#include <mcpcore/dispatch/tool.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <string_view>

namespace conformance {

/// The steps of `slow_compute`'s work: a progress notification after each.
constexpr std::chrono::milliseconds compute_step{250};
/// How long `failing_job` works before it fails.
constexpr std::chrono::milliseconds failing_job_work{1000};
/// Longest `slow_compute` (its `seconds` is cut to it).
constexpr double max_compute_seconds = 300;

/// A form with a boolean `confirm` and an optional string `name` (what the suite answers with).
constexpr std::string_view confirm_form =
    R"({"type":"object","properties":{"confirm":{"type":"boolean"},"name":{"type":"string"}},"required":[]})";

/// Whether the elicitation answered under `key` accepted (its content is the client's).
inline bool accepted(const call_context& ctx, std::string_view key) {
  const auto a = ctx.input(key);
  return a["action"].is_string() && a["action"].as_string() == "accept";
}

inline void declare_task_tools(mcpcore::server_builder& b) {
  using mcpcore::task_start;
  using mcpcore::task_support;
  const auto fixture = [&b](std::string name, std::string description) {
    return fixture_tool(b, std::move(name), std::move(description));
  };

  // A plain tool: never a task, with or without the extension.
  fixture("greet", "Greets by name (never a task).")
      .input_schema(R"({"type":"object","properties":{"name":{"type":"string","description":"Who to greet"}},)"
                    R"("required":["name"]})")
      .handler([](call_context&, const mcpcore::arguments& args) {
        return tool_result::text("Hello, " + std::string{args["name"].as_string()} + "!");
      });
  // Works `seconds` seconds (on the stop token: tasks/cancel stops it), reporting progress.
  fixture("slow_compute", "Works for the given number of seconds, reporting progress; runs as a task when asked.")
      .input_schema(R"({"type":"object","properties":{"seconds":{"type":"number","minimum":0,)"
                    R"("description":"How long to work"},"label":{"type":"string","description":"A name for the run"}},)"
                    R"("required":["seconds"]})")
      .task_support(task_support::optional)
      .handler([](call_context& ctx, const mcpcore::arguments& args) {
        const double seconds = std::clamp(args["seconds"].to_double().value_or(0), 0.0, max_compute_seconds);
        const std::string label = args["label"].is_string() ? std::string{args["label"].as_string()} : "compute";
        const auto total = std::chrono::milliseconds{static_cast<long long>(std::llround(seconds * 1000))};
        std::chrono::milliseconds done{0};
        while (done < total) {
          const auto step = std::min(compute_step, total - done);
          if (!wait_or_stop(ctx, step)) return tool_result::error("cancelled");
          done += step;
          (void)ctx.progress(static_cast<double>(done.count()) / 1000.0, seconds, "working on " + label);
        }
        return tool_result::text(label + ": computed for " + std::to_string(done.count()) + " ms");
      });
  // Only as a task; ends with a tool error (isError) after about a second.
  fixture("failing_job", "Runs only as a task and ends with a tool error after about a second.")
      .task_support(task_support::required)
      .handler([](call_context& ctx, const mcpcore::arguments&) {
        if (!wait_or_stop(ctx, failing_job_work)) return tool_result::error("cancelled");
        return tool_result::error("the job failed, as it always does");
      });
  // Fails with a protocol error (its handler throws: -32603).
  fixture("protocol_error_job", "Fails with a protocol error instead of a result (runs as a task when asked).")
      .task_support(task_support::optional)
      .handler([](call_context&, const mcpcore::arguments&) -> tool_result {
        throw std::runtime_error("protocol_error_job always fails");
      });
  // Asks for one confirmation (elicitation) before it "deletes" the file.
  fixture("confirm_delete", "Asks the user to confirm, then pretends to delete the file.")
      .input_schema(R"({"type":"object","properties":{"filename":{"type":"string","description":"The file"}},)"
                    R"("required":["filename"]})")
      .task_support(task_support::optional)
      .handler([](call_context& ctx, const mcpcore::arguments& args) {
        const std::string file{args["filename"].as_string()};
        if (!ctx.input("confirm").exists()) {
          return tool_result::need_input(mcpcore::input_required{}.ask(
              "confirm", mcpcore::input_request::elicit("Delete " + file + "?", confirm_form)));
        }
        const bool yes = accepted(ctx, "confirm") && ctx.input("confirm")["content"]["confirm"].is_bool() &&
                         ctx.input("confirm")["content"]["confirm"].as_bool();
        return tool_result::text(yes ? "deleted " + file : "kept " + file);
      });
  // Asks two questions at once; ends once both are answered.
  fixture("multi_input", "Asks two questions at once and reports both answers.")
      .task_support(task_support::optional)
      .handler([](call_context& ctx, const mcpcore::arguments&) {
        const auto first = ctx.input("first");
        const auto second = ctx.input("second");
        if (!first.exists() || !second.exists()) {
          mcpcore::input_required ir;
          if (!first.exists()) ir.ask("first", mcpcore::input_request::elicit("First question", confirm_form));
          if (!second.exists()) ir.ask("second", mcpcore::input_request::elicit("Second question", confirm_form));
          return tool_result::need_input(std::move(ir));
        }
        const auto name = [](mcpcore::json::value a) {
          return a["content"]["name"].is_string() ? std::string{a["content"]["name"].as_string()} : std::string{"-"};
        };
        return tool_result::text("answers: " + name(first) + ", " + name(second));
      });
  // The input round runs inline (an input_required result, no task); then the call detaches and
  // becomes a task whose result names the user.
  fixture("test_tool_with_task", "Asks the user's name inline, then finishes as a task greeting them.")
      .task_support(task_support::required, task_start::on_detach)
      .handler([](call_context& ctx, const mcpcore::arguments&) {
        const auto name = accepted_string(ctx, "user_name", "name");
        if (!name) {
          return tool_result::need_input(mcpcore::input_required{}.ask(
              "user_name", mcpcore::input_request::elicit("What is your name?", one_string_form("name"))));
        }
        mcpcore::operation_handle op = mcpcore::detach(ctx, "greeting");
        (void)op.finish(tool_result::text("Hello, " + *name + ", from a task!"));
        return tool_result::text("greeting " + *name);  // provisional: the task's result is the final
      });
}

}  // namespace conformance

#endif  // MCPCORE_EXAMPLES_CONFORMANCE_TASK_FIXTURES_HPP
