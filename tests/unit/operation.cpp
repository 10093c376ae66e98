// SPDX-License-Identifier: Apache-2.0
// Tests of detached operations at the dispatch core (docs/concepts/operation_source.md,
// docs/sessions.md#projection-and-finals): `detach`, and the final `operation_handle::finish`
// builds from a complete `tool_result`, checked by the rules of a direct result before any
// transport sees it.
#include <mcpcore/dispatch/operation.hpp>

#include <doctest/doctest.h>

#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/wire/era.hpp>
#include <mcpcore/wire/json.hpp>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using namespace mcpcore;
using namespace server_fixture;

namespace {

// A transport's record that keeps what the work reports (a stand-in for the progress bridge or
// the stdio transport).
class recording_operation final : public operation_link {
 public:
  bool progress(double /*progress*/, std::optional<double> /*total*/, std::string_view /*message*/) override {
    return true;
  }
  bool finish(operation_final final) override {
    const std::lock_guard lock{mu_};
    if (final_) return false;
    final_ = std::move(final);
    return true;
  }
  [[nodiscard]] std::optional<operation_final> final() const {
    const std::lock_guard lock{mu_};
    return final_;
  }

 private:
  mutable std::mutex mu_;
  std::optional<operation_final> final_;
};

class recording_link final : public call_link {
 public:
  std::shared_ptr<operation_link> detach(std::string execution_id) override {
    id = std::move(execution_id);
    return op;
  }
  std::shared_ptr<recording_operation> op = std::make_shared<recording_operation>();
  std::string id;
};

// The output schema of the `job` tool: its status is an enum.
constexpr std::string_view job_schema =
    R"({"type":"object","properties":{"status":{"type":"string","enum":["running","succeeded","failed"]},)"
    R"("exit_code":{"type":"integer"}},"required":["status"]})";

// A server with the tool `job`, which detaches as "job-1", keeps the handle in `ops` and answers
// `{"status":"running"}`; counted in `metrics`, audited in `audit`.
struct job_server {
  memory_audit_sink audit;
  metrics_registry metrics{"t"};
  std::vector<operation_handle> ops;
  std::optional<server> srv;

  job_server() {
    server_builder b{{.name = "operation-test", .version = "1"}};
    b.tool("job")
        .description("Starts a job.")
        .output_schema(std::string{job_schema})
        .security("Job", operation::execute)
        .effect(tool_effect::additive, false)
        .handler([this](call_context& ctx, const arguments&) {
          ops.push_back(detach(ctx, "job-1"));
          return tool_result::structured(R"({"status":"running"})");
        });
    b.audit(audit).metrics(metrics);
    srv.emplace(build(b));
  }
  // Calls `job` with `link` as the transport's record (none: unbound), under envelope `env`.
  answer call(recording_link* link, const request_envelope* env = nullptr) {
    const principal who{.id = "alice"};
    dispatch_context ctx{who};
    ctx.progress = link;
    ctx.envelope = env;
    std::string text = call_tool(1, "job", "{}");
    return handle(*srv, text, ctx);
  }
  long long invalid() const { return series_value(metrics, R"(t_mcp_tool_output_invalid_total{tool="job"})"); }
};

}  // namespace

TEST_SUITE("operation") {

TEST_CASE("sessions.md/projection-and-finals: a final is the complete result, the execution id in its _meta") {
  job_server js;
  recording_link link;
  const auto provisional = js.call(&link);
  CHECK(str(provisional.result()["structuredContent"]["status"]) == "running");
  REQUIRE(js.ops.size() == 1);
  operation_handle op = js.ops.front();
  CHECK(op.bound());
  CHECK(link.id == "job-1");
  tool_result r = tool_result::structured(R"({"status":"succeeded","exit_code":0})");
  r.add_text("succeeded (exit 0)");
  CHECK(op.finish(r));
  CHECK_FALSE(op.finish(tool_result::error("again")));  // the record keeps one terminal
  const auto f = link.op->final();
  REQUIRE(f.has_value());
  CHECK_FALSE(f->error.has_value());
  CHECK(f->result_json ==
        R"j({"content":[{"type":"text","text":"succeeded (exit 0)"}],"structuredContent":{"status":"succeeded","exit_code":0},)j"
        R"j("_meta":{"mcpcore/executionId":"job-1"}})j");
  CHECK(js.invalid() == 0);
}

TEST_CASE("sessions.md/projection-and-finals: a final with structured content and no content gets its text twin") {
  job_server js;
  recording_link link;
  (void)js.call(&link);
  REQUIRE(js.ops.size() == 1);
  CHECK(js.ops.front().finish(tool_result::structured(R"({"status":"failed"})").set_error()));
  const auto f = link.op->final();
  REQUIRE(f.has_value());
  CHECK(f->result_json ==
        R"({"content":[{"type":"text","text":"{\"status\":\"failed\"}"}],"structuredContent":{"status":"failed"},)"
        R"("isError":true,"_meta":{"mcpcore/executionId":"job-1"}})");
}

TEST_CASE("sessions.md/projection-and-finals: a final that breaks the outputSchema is -32603, counted and audited") {
  job_server js;
  recording_link link;
  (void)js.call(&link);
  REQUIRE(js.ops.size() == 1);
  operation_handle op = js.ops.front();
  SUBCASE("a status outside the enum") { CHECK(op.finish(tool_result::structured(R"({"status":"done"})"))); }
  SUBCASE("no structured content on success") { CHECK(op.finish(tool_result::text("done"))); }
  SUBCASE("structured content that is not an object") { CHECK(op.finish(tool_result::structured("[1]"))); }
  SUBCASE("a final that asks for input") {
    CHECK(op.finish(tool_result::need_input(input_required{}.ask("x", input_request::list_roots()))));
  }
  const auto f = link.op->final();
  REQUIRE(f.has_value());
  REQUIRE(f->error.has_value());
  CHECK(f->error->code == -32603);
  CHECK(f->result_json.empty());
  const auto data = parse(f->error->data_json);
  const std::string cid = str(data.root["correlation_id"]);
  CHECK(is_correlation_id(cid));
  CHECK(str(data.root["execution_id"]) == "job-1");
  CHECK(js.invalid() == 1);
  bool audited = false;
  for (const auto& row : js.audit.entries()) {
    if (row.correlation_id == cid && row.result == audit_result::failure &&
        row.detail.find("invalid final: ") == 0 && row.detail.find("execution_id=job-1") != std::string::npos) {
      audited = true;
    }
  }
  CHECK(audited);
}

TEST_CASE("sessions.md/projection-and-finals: an error final needs no structured content, even with an outputSchema") {
  job_server js;
  recording_link link;
  (void)js.call(&link);
  REQUIRE(js.ops.size() == 1);
  CHECK(js.ops.front().finish(tool_result::error("the command could not be started")));
  const auto f = link.op->final();
  REQUIRE(f.has_value());
  CHECK_FALSE(f->error.has_value());
  CHECK(js.invalid() == 0);
}

TEST_CASE("sessions.md/projection-and-finals: an unbound operation checks its final and delivers it nowhere") {
  job_server js;
  (void)js.call(nullptr);
  REQUIRE(js.ops.size() == 1);
  CHECK_FALSE(js.ops.front().bound());
  CHECK_FALSE(js.ops.front().finish(tool_result::structured(R"({"status":"done"})")));
  CHECK(js.invalid() == 1);
}

TEST_CASE("server.md/tables-that-change: a final is checked against the tool its call ran, even once the tool is gone") {
  job_server js;
  recording_link link;
  (void)js.call(&link);
  REQUIRE(js.ops.size() == 1);
  REQUIRE(js.srv->remove_tool("job"));
  CHECK(js.ops.front().finish(tool_result::structured(R"({"status":"done"})")));
  const auto f = link.op->final();
  REQUIRE(f.has_value());
  CHECK(f->error.has_value());  // the removed tool's outputSchema still applies
  CHECK(js.invalid() == 1);
}

TEST_CASE("eras.md/results: a final of the per-request era carries resultType and the server's _meta") {
  job_server js;
  recording_link link;
  const std::string meta = R"({"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                           R"("io.modelcontextprotocol/clientCapabilities":{}}})";
  json::document d;
  auto params = d.parse(meta);
  REQUIRE(params.has_value());
  message msg;
  msg.params = *params;
  auto env = read_envelope(msg);
  REQUIRE(env.has_value());
  (void)js.call(&link, &*env);
  REQUIRE(js.ops.size() == 1);
  CHECK(js.ops.front().finish(tool_result::structured(R"({"status":"succeeded"})")));
  const auto f = link.op->final();
  REQUIRE(f.has_value());
  const auto p = parse(f->result_json);
  CHECK(str(p.root["resultType"]) == "complete");
  CHECK(str(p.root["_meta"]["mcpcore/executionId"]) == "job-1");
  CHECK(str(p.root["_meta"]["io.modelcontextprotocol/serverInfo"]["name"]) == "operation-test");
}

TEST_CASE("sessions.md/projection-and-finals: the fallback final is a complete error result") {
  const auto plain = parse(detail::fallback_final_result("job-1"));
  CHECK(plain.root["isError"].as_bool());
  CHECK(str(at(plain.root["content"], 0)["text"]).find("fetch it by execution id") != std::string::npos);
  CHECK(str(plain.root["_meta"]["mcpcore/executionId"]) == "job-1");
  CHECK(plain.root.size() == 3);
  const auto legacy = parse(detail::fallback_final_result("job-1", true));
  CHECK(str(legacy.root["status"]) == "unknown");
  CHECK(str(legacy.root["execution_id"]) == "job-1");
  CHECK(legacy.root["detail"].is_string());
}

}  // TEST_SUITE
