// SPDX-License-Identifier: Apache-2.0
// Progress and cancellation (examples/README.md, step 3; docs/guide.md#progress-and-logging and
// #cancellation): one tool that counts slowly, sending `notifications/progress` at each step when
// the client asked for progress, and stopping at once when the client cancels the call. Served on
// stdin/stdout; examples/progress_cancel/check_progress_cancel.cmake runs a scripted session.
#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/transport/stdio.hpp>
#include <mcpcore/wire/log_level.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace {

/// Waits `d`, or less when the call is cancelled; true when it was.
bool cancelled_during(const mcpcore::call_context& ctx, std::chrono::milliseconds d) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock{m};
  // Wakes at once when the stop token is signalled (notifications/cancelled, shutdown).
  return cv.wait_for(lock, ctx.stop_token(), d, [] { return false; }) || ctx.stop_requested();
}

}  // namespace

int main() {
  mcpcore::server_builder b{{.name = "progress-cancel", .version = "1.0.0"}};
  b.tool("count")
      .description("Counts from 1 to `to`, one step every `interval_ms` milliseconds, with progress.")
      .input_schema(R"({"type":"object","properties":{"to":{"type":"integer","minimum":1,"maximum":1000},)"
                    R"("interval_ms":{"type":"integer","minimum":0,"maximum":10000}},)"
                    R"("required":["to","interval_ms"],"additionalProperties":false})")
      .security("Counter", mcpcore::operation::read)
      .effect(mcpcore::tool_effect::read_only, /*idempotent=*/true)
      .handler([](mcpcore::call_context& ctx, const mcpcore::arguments& args) {
        const std::int64_t to = *args["to"].to_int64();
        const std::chrono::milliseconds interval{*args["interval_ms"].to_int64()};
        for (std::int64_t i = 1; i <= to; ++i) {
          if (cancelled_during(ctx, interval)) {
            // No response is sent for a cancelled call: what is returned here is dropped.
            ctx.log(mcpcore::log_level::info, "cancelled at step " + std::to_string(i), "count");
            return mcpcore::tool_result::error("cancelled");
          }
          // Sent only when the request carried `_meta.progressToken`; false otherwise.
          ctx.progress(static_cast<double>(i), static_cast<double>(to), "step " + std::to_string(i));
        }
        return mcpcore::tool_result::text("counted to " + std::to_string(to));
      });
  auto server = b.build();
  if (!server) {
    std::fprintf(stderr, "progress-cancel: %s\n", server.error().message().c_str());
    return 1;
  }
  mcpcore::stdio_transport transport{*server, {.id = "local-user"}};
  return transport.run();
}
