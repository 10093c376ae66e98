// SPDX-License-Identifier: Apache-2.0
// Tests of the metrics_sink concept, the handles and the Prometheus registry
// (docs/metrics.md#names-and-registration, docs/plugins.md).
#include <mcpcore/governance/metrics.hpp>

#include <doctest/doctest.h>

#include "archetypes.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

using mcpcore::counter;
using mcpcore::gauge;
using mcpcore::metric_label;

namespace {

struct no_members {};
struct counter_only {
  counter make_counter(std::string_view, std::string_view, std::span<const metric_label>) { return {}; }
};
struct gauge_returns_counter {
  counter make_counter(std::string_view, std::string_view, std::span<const metric_label>) { return {}; }
  counter make_gauge(std::string_view, std::string_view, std::span<const metric_label>) { return {}; }
};
struct counter_returns_pointer {
  std::atomic<std::uint64_t>* make_counter(std::string_view, std::string_view, std::span<const metric_label>) {
    return nullptr;
  }
  gauge make_gauge(std::string_view, std::string_view, std::span<const metric_label>) { return {}; }
};
struct without_labels {
  counter make_counter(std::string_view, std::string_view) { return {}; }
  gauge make_gauge(std::string_view, std::string_view) { return {}; }
};

static_assert(mcpcore::metrics_sink<archetypes::metrics_sink>);
static_assert(mcpcore::metrics_sink<mcpcore::null_metrics>);
static_assert(mcpcore::metrics_sink<mcpcore::metrics_registry>);
static_assert(!mcpcore::metrics_sink<int>);
static_assert(!mcpcore::metrics_sink<no_members>);
static_assert(!mcpcore::metrics_sink<counter_only>);
static_assert(!mcpcore::metrics_sink<gauge_returns_counter>);    // wrong return type
static_assert(!mcpcore::metrics_sink<counter_returns_pointer>);  // exactly `counter`
static_assert(!mcpcore::metrics_sink<without_labels>);           // the label span is part of it

// Handles are literal types: inert handles can be constants.
constexpr counter inert_counter{};
constexpr gauge inert_gauge{};
static_assert(noexcept(inert_counter.inc()));
static_assert(noexcept(inert_gauge.add(1)));

std::string expose(const mcpcore::metrics_registry& r) {
  std::string out;
  r.write_prometheus(out);
  return out;
}

}  // namespace

TEST_SUITE("metrics") {
  TEST_CASE("inert handles do nothing") {
    CHECK(inert_counter.inert());
    inert_counter.inc(5);
    CHECK(inert_counter.value() == 0);
    CHECK(inert_gauge.inert());
    inert_gauge.set(7);
    inert_gauge.add(-3);
    CHECK(inert_gauge.value() == 0);
    CHECK(counter{nullptr}.inert());
  }

  TEST_CASE("handles on a cell count, copies share the cell") {
    std::atomic<std::uint64_t> c{0};
    const counter a{&c};
    const counter b = a;
    CHECK_FALSE(a.inert());
    a.inc();
    b.inc(41);
    CHECK(a.value() == 42);
    CHECK(c.load() == 42);
    std::atomic<std::int64_t> g{0};
    const gauge h{&g};
    h.set(10);
    h.add(-15);
    CHECK(h.value() == -5);
  }

  TEST_CASE("plugins.md: null_metrics hands out inert handles") {
    mcpcore::null_metrics m;
    const std::array labels{metric_label{"reason", "x"}};
    CHECK(m.make_counter("a_total", "help", labels).inert());
    CHECK(m.make_gauge("b", "help").inert());
  }

  TEST_CASE("metrics.md/names-and-registration: series are pre-seeded at 0 and named <prefix>_<name>") {
    mcpcore::metrics_registry r;
    CHECK(r.prefix() == "mcpcore");
    const counter c = r.make_counter("mcp_sessions_opened_total", "Sessions minted on initialize.");
    const gauge g = r.make_gauge("mcp_sessions_active", "Live sessions.");
    CHECK_FALSE(c.inert());
    CHECK_FALSE(g.inert());
    CHECK(c.value() == 0);
    CHECK(expose(r) ==
          "# HELP mcpcore_mcp_sessions_active Live sessions.\n"
          "# TYPE mcpcore_mcp_sessions_active gauge\n"
          "mcpcore_mcp_sessions_active 0\n"
          "# HELP mcpcore_mcp_sessions_opened_total Sessions minted on initialize.\n"
          "# TYPE mcpcore_mcp_sessions_opened_total counter\n"
          "mcpcore_mcp_sessions_opened_total 0\n");
    c.inc(3);
    g.set(-2);
    CHECK(expose(r).find("mcpcore_mcp_sessions_opened_total 3\n") != std::string::npos);
    CHECK(expose(r).find("mcpcore_mcp_sessions_active -2\n") != std::string::npos);
    CHECK(r.conflicts() == 0);
  }

  TEST_CASE("metrics.md/names-and-registration: prefix \"yuzu\" gives Yuzu's names, an empty prefix adds nothing") {
    mcpcore::metrics_registry yuzu{"yuzu"};
    const std::array tool{metric_label{"tool", "delete_tag"}};
    yuzu.make_counter("mcp_tool_args_invalid_total", "Schema violations on approval-gated tools.", tool).inc();
    CHECK(expose(yuzu) ==
          "# HELP yuzu_mcp_tool_args_invalid_total Schema violations on approval-gated tools.\n"
          "# TYPE yuzu_mcp_tool_args_invalid_total counter\n"
          "yuzu_mcp_tool_args_invalid_total{tool=\"delete_tag\"} 1\n");
    mcpcore::metrics_registry bare{""};
    bare.make_gauge("up", "1 when up.").set(1);
    CHECK(expose(bare) == "# HELP up 1 when up.\n# TYPE up gauge\nup 1\n");
  }

  TEST_CASE("plugins.md requirement 3: the same name and labels, in any order, return the same cell") {
    mcpcore::metrics_registry r;
    const std::array ab{metric_label{"a", "1"}, metric_label{"b", "2"}};
    const std::array ba{metric_label{"b", "2"}, metric_label{"a", "1"}};
    const counter x = r.make_counter("x_total", "X.", ab);
    const counter y = r.make_counter("x_total", "X.", ba);
    x.inc();
    y.inc();
    CHECK(x.value() == 2);
    const std::array other{metric_label{"a", "1"}, metric_label{"b", "3"}};
    const counter z = r.make_counter("x_total", "X.", other);
    CHECK(z.value() == 0);
    CHECK(expose(r) ==
          "# HELP mcpcore_x_total X.\n"
          "# TYPE mcpcore_x_total counter\n"
          "mcpcore_x_total{a=\"1\",b=\"2\"} 2\n"
          "mcpcore_x_total{a=\"1\",b=\"3\"} 0\n");
    CHECK(r.conflicts() == 0);
  }

  TEST_CASE("metrics.md/names-and-registration: exposition sorts families by name and keeps series in registration order") {
    mcpcore::metrics_registry r{"p"};
    for (const std::string_view reason : {"unknown_session", "global_stream_cap", "origin"}) {
      const std::array l{metric_label{"reason", reason}};
      r.make_counter("mcp_stream_rejects_total", "GET denials.", l);
    }
    r.make_gauge("mcp_streams_active", "Held-open GET streams.");
    r.make_counter("a_first_total", "Sorted first.");
    const std::string expected =
        "# HELP p_a_first_total Sorted first.\n"
        "# TYPE p_a_first_total counter\n"
        "p_a_first_total 0\n"
        "# HELP p_mcp_stream_rejects_total GET denials.\n"
        "# TYPE p_mcp_stream_rejects_total counter\n"
        "p_mcp_stream_rejects_total{reason=\"unknown_session\"} 0\n"
        "p_mcp_stream_rejects_total{reason=\"global_stream_cap\"} 0\n"
        "p_mcp_stream_rejects_total{reason=\"origin\"} 0\n"
        "# HELP p_mcp_streams_active Held-open GET streams.\n"
        "# TYPE p_mcp_streams_active gauge\n"
        "p_mcp_streams_active 0\n";
    CHECK(expose(r) == expected);
    CHECK(expose(r) == expected);  // deterministic
    std::string appended = "prefix\n";
    r.write_prometheus(appended);  // appends, keeps what was there
    CHECK(appended == "prefix\n" + expected);
  }

  TEST_CASE("a name registered again with the other type is refused: inert handle, conflict counted") {
    mcpcore::metrics_registry r;
    const counter c = r.make_counter("thing", "A thing.");
    const gauge g = r.make_gauge("thing", "A thing.");
    CHECK_FALSE(c.inert());
    CHECK(g.inert());
    CHECK(r.conflicts() == 1);
    CHECK(r.make_counter("thing", "A thing.").value() == 0);  // the counter is still served
    CHECK(r.conflicts() == 1);
    CHECK(expose(r).find("gauge") == std::string::npos);
  }

  TEST_CASE("the first help text of a family is kept") {
    mcpcore::metrics_registry r;
    const std::array one{metric_label{"k", "1"}};
    r.make_counter("n_total", "First.");
    r.make_counter("n_total", "Second.", one);
    CHECK(r.conflicts() == 0);
    CHECK(expose(r).find("# HELP mcpcore_n_total First.\n") != std::string::npos);
    CHECK(expose(r).find("Second.") == std::string::npos);
  }

  TEST_CASE("invalid metric names are refused") {
    mcpcore::metrics_registry r{""};
    for (const std::string_view bad : {"", "1abc", "a-b", "a b", "a.b", "é", "a\n"}) {
      CAPTURE(bad);
      CHECK(r.make_counter(bad, "h").inert());
    }
    CHECK(r.conflicts() == 7);
    CHECK_FALSE(r.make_counter("_ok:name_9", "h").inert());
    CHECK_FALSE(r.make_counter(":colon_first", "h").inert());
    mcpcore::metrics_registry bad_prefix{"my-app"};
    CHECK(bad_prefix.make_counter("x", "h").inert());
    mcpcore::metrics_registry prefixed;
    CHECK(prefixed.make_counter("", "h").inert());  // "mcpcore_" alone is not a series name
    CHECK_FALSE(prefixed.make_counter("9_total", "h").inert());  // mcpcore_9_total is fine
  }

  TEST_CASE("invalid, reserved or repeated label names and non-UTF-8 text are refused") {
    mcpcore::metrics_registry r;
    const auto refused = [&r](std::span<const metric_label> labels) {
      return r.make_counter("l_total", "h", labels).inert();
    };
    const std::array empty_name{metric_label{"", "v"}};
    const std::array digit_first{metric_label{"1a", "v"}};
    const std::array colon{metric_label{"a:b", "v"}};
    const std::array dash{metric_label{"a-b", "v"}};
    const std::array reserved{metric_label{"__name__", "v"}};
    const std::array repeated{metric_label{"a", "1"}, metric_label{"a", "2"}};
    const std::array bad_utf8{metric_label{"a", "\xff"}};
    CHECK(refused(empty_name));
    CHECK(refused(digit_first));
    CHECK(refused(colon));
    CHECK(refused(dash));
    CHECK(refused(reserved));
    CHECK(refused(repeated));
    CHECK(refused(bad_utf8));
    CHECK(r.make_counter("h_total", "\xC3").inert());  // help must be UTF-8 too
    CHECK(r.conflicts() == 8);
    const std::array fine{metric_label{"_a", ""}, metric_label{"Z9", "é ✓"}};
    CHECK_FALSE(refused(fine));
    CHECK(expose(r).find("{Z9=\"é ✓\",_a=\"\"}") != std::string::npos);  // sorted bytewise
  }

  TEST_CASE("label values escape backslash, quote and newline, help escapes backslash and newline") {
    mcpcore::metrics_registry r;
    const std::array l{metric_label{"path", "C:\\dir \"q\"\nnext"}};
    r.make_counter("e_total", "Line one\nline \"two\" \\ end", l);
    CHECK(expose(r) ==
          "# HELP mcpcore_e_total Line one\\nline \"two\" \\\\ end\n"
          "# TYPE mcpcore_e_total counter\n"
          "mcpcore_e_total{path=\"C:\\\\dir \\\"q\\\"\\nnext\"} 0\n");
  }

  TEST_CASE("counters wrap modulo 2^64 and gauges go negative") {
    mcpcore::metrics_registry r;
    const counter c = r.make_counter("w_total", "h");
    c.inc(UINT64_MAX);
    CHECK(c.value() == UINT64_MAX);
    CHECK(expose(r).find("mcpcore_w_total 18446744073709551615\n") != std::string::npos);
    c.inc(2);
    CHECK(c.value() == 1);
    const gauge g = r.make_gauge("g", "h");
    g.set(INT64_MIN);
    CHECK(expose(r).find("mcpcore_g -9223372036854775808\n") != std::string::npos);
  }

  TEST_CASE("plugins.md requirement 2: handles stay valid while many more series are registered") {
    mcpcore::metrics_registry r;
    const counter first = r.make_counter("first_total", "h");
    for (int i = 0; i < 2000; ++i) {
      const std::string v = std::to_string(i);
      const std::array l{metric_label{"i", v}};
      r.make_counter("many_total", "h", l).inc();
      r.make_gauge("many_g", "h", l).set(i);
    }
    first.inc();
    CHECK(r.make_counter("first_total", "h").value() == 1);
    const std::array l{metric_label{"i", "1999"}};
    CHECK(r.make_gauge("many_g", "h", l).value() == 1999);
    CHECK(r.conflicts() == 0);
  }
}
