// SPDX-License-Identifier: Apache-2.0
// docs/concepts/metrics_sink.md's example, compiled and run so that the documentation cannot rot.
#include <mcpcore/governance/metrics.hpp>

#include <doctest/doctest.h>

#include "support/server_fixture.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/session/session_metrics.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace metrics_sink_doc {

// ---- docs/concepts/metrics_sink.md snippet (keep identical) ----
// A metrics sink over the host's own cells, for a host that exports metrics in a format of its
// own. Cells live in a deque, so their addresses never change (requirement 2); a series is found
// by its name and its labels sorted by name, so one series in any label order is one cell
// (requirement 3); one mutex serialises registration (requirement 4); a name registered again
// with the other type gets an inert handle, never an exception (requirement 5).
class host_metrics {
 public:
  mcpcore::counter make_counter(std::string_view name, std::string_view /*help*/,
                                std::span<const mcpcore::metric_label> labels) {
    const std::lock_guard lock{mutex_};
    cell* c = find_or_add(name, labels, kind::counter);
    return c != nullptr ? mcpcore::counter{&c->count} : mcpcore::counter{};
  }
  mcpcore::gauge make_gauge(std::string_view name, std::string_view /*help*/,
                            std::span<const mcpcore::metric_label> labels) {
    const std::lock_guard lock{mutex_};
    cell* c = find_or_add(name, labels, kind::gauge);
    return c != nullptr ? mcpcore::gauge{&c->level} : mcpcore::gauge{};
  }
  // The host's export: every series as "<prefix>_<name>{a=x,b=y}" and its value.
  std::vector<std::pair<std::string, std::int64_t>> snapshot() const {
    const std::lock_guard lock{mutex_};
    std::vector<std::pair<std::string, std::int64_t>> out;
    for (const auto& [series, c] : index_) {
      const auto value = c->type == kind::counter ? static_cast<std::int64_t>(c->count.load()) : c->level.load();
      out.emplace_back("notes_" + series, value);  // the sink decides the prefix
    }
    return out;
  }

 private:
  enum class kind { counter, gauge };
  struct cell {
    kind type = kind::counter;
    std::atomic<std::uint64_t> count{0};
    std::atomic<std::int64_t> level{0};
  };
  cell* find_or_add(std::string_view name, std::span<const mcpcore::metric_label> labels, kind type) {
    std::vector<mcpcore::metric_label> sorted(labels.begin(), labels.end());
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    std::string series{name};
    for (std::size_t i = 0; i < sorted.size(); ++i) {
      series += i == 0 ? "{" : ",";
      series.append(sorted[i].name).append("=").append(sorted[i].value);
    }
    if (!sorted.empty()) series += "}";
    const std::string family{name};
    if (const auto t = types_.find(family); t != types_.end() && t->second != type) return nullptr;
    if (const auto it = index_.find(series); it != index_.end()) return it->second;
    cell& c = cells_.emplace_back();
    c.type = type;
    types_.emplace(family, type);
    index_.emplace(std::move(series), &c);
    return &c;
  }

  mutable std::mutex mutex_;
  std::deque<cell> cells_;
  std::map<std::string, cell*> index_;  // series → cell
  std::map<std::string, kind> types_;   // family → type
};
static_assert(mcpcore::metrics_sink<host_metrics>);
// ---- end of snippet ----

std::int64_t value_of(const host_metrics& m, std::string_view series) {
  for (const auto& [name, value] : m.snapshot()) {
    if (name == series) return value;
  }
  return -1;
}

}  // namespace metrics_sink_doc

TEST_CASE("docs/concepts/metrics_sink.md: a host's own sink gets every series pre-seeded at build") {
  using namespace server_fixture;
  using metrics_sink_doc::value_of;
  metrics_sink_doc::host_metrics metrics;

  mcpcore::server_builder b{{.name = "notes", .version = "1.0.0"}};
  b.tool("echo")
      .description("Echoes.")
      .security("Note", mcpcore::operation::read)
      .effect(mcpcore::tool_effect::read_only, true)
      .handler([](mcpcore::call_context&, const mcpcore::arguments&) { return mcpcore::tool_result::text("e"); });
  b.metrics(metrics);
  auto server = build(b);

  // Pre-seeded at 0 before the first event (requirement 1), then counted.
  CHECK(value_of(metrics, "notes_mcp_tool_calls_total{result=success,tool=echo}") == 0);
  CHECK(value_of(metrics, "notes_mcp_requests_total{method=tools/call}") == 0);
  connection c;
  CHECK_FALSE(c.send(server, call_tool(1, "echo")).error().exists());
  CHECK(value_of(metrics, "notes_mcp_tool_calls_total{result=success,tool=echo}") == 1);
  CHECK(value_of(metrics, "notes_mcp_requests_total{method=tools/call}") == 1);

  // Requirement 3: label order does not matter.
  const mcpcore::metric_label ab[] = {{"a", "1"}, {"b", "2"}};
  const mcpcore::metric_label ba[] = {{"b", "2"}, {"a", "1"}};
  const auto x = metrics.make_counter("demo_total", "", ab);
  const auto y = metrics.make_counter("demo_total", "", ba);
  x.inc();
  CHECK(y.value() == 1);
  // Requirement 5: a type clash is an inert handle.
  CHECK(metrics.make_gauge("demo_total", "", {}).inert());

  // The session layer's handles bind to any metrics_sink too.
  const auto session = mcpcore::bind_session_metrics(metrics);
  CHECK_FALSE(session.sessions_active.inert());
  CHECK(value_of(metrics, "notes_mcp_stream_closes_total{reason=cap_expired}") == 0);
}
