// SPDX-License-Identifier: Apache-2.0
// docs/concepts/audit_sink.md's example, compiled and run so that the documentation cannot rot.
#include <mcpcore/governance/audit.hpp>

#include <doctest/doctest.h>

#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/governance/policy.hpp>

#include <cstddef>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace audit_sink_doc {

// ---- docs/concepts/audit_sink.md snippet (keep identical) ----
// A stand-in for the host's log shipper: a bounded, thread-safe queue of lines.
class log_shipper {
 public:
  explicit log_shipper(std::size_t capacity) : capacity_(capacity) {}
  bool offer(std::string line) {
    const std::lock_guard lock{mutex_};
    if (lines_.size() >= capacity_) return false;  // full: the caller learns the row was not kept
    lines_.push_back(std::move(line));
    return true;
  }
  std::vector<std::string> drain() {
    const std::lock_guard lock{mutex_};
    return std::exchange(lines_, {});
  }

 private:
  std::mutex mutex_;
  std::size_t capacity_;
  std::vector<std::string> lines_;
};

// Sends each row, in the line format of jsonl_audit_sink, to the shipper. When the shipper
// refuses, `record` says so (requirement 1) and the server reports `audit_persisted: false`
// to the client instead of failing the request.
class shipper_audit_sink {
 public:
  explicit shipper_audit_sink(log_shipper& shipper) : shipper_(&shipper) {}
  bool record(const mcpcore::audit_record& r) {
    std::string line;
    mcpcore::append_audit_json(line, r);      // a copy: the views die after this call
    return shipper_->offer(std::move(line));  // thread-safe (requirement 2)
  }

 private:
  log_shipper* shipper_;
};
static_assert(mcpcore::audit_sink<shipper_audit_sink>);
// ---- end of snippet ----

}  // namespace audit_sink_doc

TEST_CASE("docs/concepts/audit_sink.md: rows reach the shipper, a refused row is reported, not fatal") {
  using namespace server_fixture;
  audit_sink_doc::log_shipper shipper{1};
  audit_sink_doc::shipper_audit_sink sink{shipper};

  mcpcore::server_builder b{{.name = "notes", .version = "1.0.0"}};
  b.tool("delete_note")
      .description("Deletes a note.")
      .input_schema(R"({"type":"object","properties":{"id":{"type":"string"}},"required":["id"]})")
      .security("Note", mcpcore::operation::write)
      .effect(mcpcore::tool_effect::destructive, true)
      .handler([](mcpcore::call_context&, const mcpcore::arguments&) { return mcpcore::tool_result::text("done"); });
  b.audit(sink);
  auto server = build(b);

  // A readonly-tier caller is refused at the tier gate: one row, with the error's correlation id.
  connection reader{{.id = "rita", .tier = "readonly"}};
  const auto first = reader.send(server, call_tool(1, "delete_note", R"({"id":"n1"})"));
  REQUIRE(first.code() == -32004);
  CHECK_FALSE(first.data()["audit_persisted"].exists());
  const auto lines = shipper.drain();
  REQUIRE(lines.size() == 1);
  const auto row = parse(lines[0]);
  CHECK(str(row.root["action"]) == "mcp.delete_note");
  CHECK(str(row.root["result"]) == "denied");
  CHECK(str(row.root["principal"]) == "rita");
  CHECK(str(row.root["correlation_id"]) == first.cid());  // the one-cid pattern
  CHECK(str(row.root["detail"]).find("tier=readonly") != std::string::npos);

  // The shipper is full: the denial still answers, and says its row was not kept.
  REQUIRE(shipper.offer("filler"));
  const auto second = reader.send(server, call_tool(2, "delete_note", R"({"id":"n1"})"));
  CHECK(second.code() == -32004);
  REQUIRE(second.data()["audit_persisted"].is_bool());
  CHECK_FALSE(second.data()["audit_persisted"].as_bool());
}
