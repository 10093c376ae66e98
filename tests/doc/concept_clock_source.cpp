// SPDX-License-Identifier: Apache-2.0
// docs/concepts/clock_source.md's example, compiled and run so that the documentation cannot rot.
#include <mcpcore/governance/clock.hpp>

#include <doctest/doctest.h>

#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/policy.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

namespace clock_source_doc {

// ---- docs/concepts/clock_source.md snippet (keep identical) ----
// The process's clocks, with the wall clock corrected by an offset the host learns from a time
// service it trusts more than the machine's clock. Steady time is left alone (requirement 1).
// The offset is an atomic behind a shared_ptr: the server keeps its own copy of the clock, and
// the host may change the offset while server threads read it (requirement 3).
class corrected_clock {
 public:
  void set_offset(std::chrono::milliseconds d) noexcept { offset_ms_->store(d.count(), std::memory_order_relaxed); }

  std::chrono::steady_clock::time_point steady_now() const noexcept { return std::chrono::steady_clock::now(); }
  std::chrono::system_clock::time_point system_now() const noexcept {
    return std::chrono::system_clock::now() + std::chrono::milliseconds{offset_ms_->load(std::memory_order_relaxed)};
  }

 private:
  std::shared_ptr<std::atomic<std::int64_t>> offset_ms_ = std::make_shared<std::atomic<std::int64_t>>(0);
};
static_assert(mcpcore::clock_source<corrected_clock>);
// ---- end of snippet ----

}  // namespace clock_source_doc

TEST_CASE("docs/concepts/clock_source.md: audit rows are stamped by the server's clock") {
  using namespace server_fixture;
  using namespace std::chrono_literals;
  clock_source_doc::corrected_clock clock;
  mcpcore::memory_audit_sink audit;
  mcpcore::server_builder b{{.name = "notes", .version = "1.0.0"}};
  b.tool("write_note")
      .description("Writes a note.")
      .security("Note", mcpcore::operation::write)
      .effect(mcpcore::tool_effect::additive, false)
      .handler([](mcpcore::call_context&, const mcpcore::arguments&) { return mcpcore::tool_result::text("w"); });
  b.audit(audit).clock(clock);
  auto server = build(b);

  clock.set_offset(std::chrono::hours{24});  // after build: the server's copy shares the offset
  connection reader{{.id = "rita", .tier = "readonly"}};
  const auto before = std::chrono::system_clock::now();
  REQUIRE(reader.send(server, call_tool(1, "write_note")).code() == -32004);
  const auto after = std::chrono::system_clock::now();
  const auto rows = audit.entries();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].time >= before + 24h);
  CHECK(rows[0].time <= after + 24h);

  // Tests use the manual clock, handed over by reference.
  mcpcore::manual_clock manual;
  const mcpcore::clock_ref<mcpcore::manual_clock> ref{manual};
  manual.advance(90s);
  CHECK(ref.system_now() == mcpcore::manual_clock::initial_system + 90s);
  CHECK(ref.steady_now() == mcpcore::manual_clock::initial_steady + 90s);
}
