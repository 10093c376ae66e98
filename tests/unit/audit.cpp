// SPDX-License-Identifier: Apache-2.0
// Tests of the audit_sink concept, the shipped sinks and value sanitising
// (docs/security.md#audit-and-the-one-cid-pattern, docs/plugins.md).
#include <mcpcore/governance/audit.hpp>

#include <doctest/doctest.h>

#include <cstdio>

#include "archetypes.hpp"

#include <mcpcore/wire/json.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <ios>
#include <iterator>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

using mcpcore::audit_record;
using mcpcore::audit_result;
using namespace std::chrono_literals;

namespace {

struct no_record {};
struct record_returns_void {
  void record(const audit_record&) {}
};
struct record_returns_int {
  int record(const audit_record&) { return 1; }
};
struct record_takes_mutable_row {
  bool record(audit_record&) { return true; }
};
struct record_takes_entry {
  bool record(const mcpcore::audit_entry&) { return true; }
};

static_assert(mcpcore::audit_sink<archetypes::audit_sink>);  // non-const, may throw: allowed
static_assert(mcpcore::audit_sink<mcpcore::null_audit_sink>);
static_assert(mcpcore::audit_sink<mcpcore::memory_audit_sink>);
static_assert(mcpcore::audit_sink<mcpcore::jsonl_audit_sink>);
static_assert(!mcpcore::audit_sink<int>);
static_assert(!mcpcore::audit_sink<no_record>);
static_assert(!mcpcore::audit_sink<record_returns_void>);
static_assert(!mcpcore::audit_sink<record_returns_int>);  // exactly bool
static_assert(!mcpcore::audit_sink<record_takes_mutable_row>);
static_assert(!mcpcore::audit_sink<record_takes_entry>);  // no conversion from a record

static_assert(mcpcore::to_string(audit_result::not_found) == "not_found");

// 2026-01-01T00:00:00Z
constexpr std::chrono::system_clock::time_point t2026{std::chrono::sys_days{std::chrono::year{2026} / 1 / 1}};

audit_record sample_row() {
  return audit_record{.action = "mcp.delete_tag",
                      .target_type = "mcp_tool",
                      .target_id = "delete_tag",
                      .principal_id = "alice",
                      .result = audit_result::pending,
                      .detail = "approval_id=0123 (deduped)",
                      .correlation_id = "req-1-2",
                      .time = t2026 + 1234ms};
}

// A unique path in the temporary directory, removed when the guard goes.
struct temp_file {
  std::filesystem::path path;
  temp_file() {
    static std::atomic<int> seq{0};
    path = std::filesystem::temp_directory_path() /
           ("mcpcore-audit-test-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) +
            "-" + std::to_string(seq++) + ".jsonl");
    std::filesystem::remove(path);
  }
  ~temp_file() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  temp_file(const temp_file&) = delete;
  temp_file& operator=(const temp_file&) = delete;
};

std::vector<std::string> read_lines(const std::filesystem::path& p) {
  std::ifstream in{p, std::ios::binary};
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Reads with std::fread: g++ 12 at -O2 reports a false -Wnull-dereference inside
// istreambuf_iterator, which -Werror turns into a build failure.
std::string read_all(const std::filesystem::path& p) {
  std::string text;
  if (std::FILE* f = std::fopen(p.c_str(), "rb")) {
    char buf[4096];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    std::fclose(f);
  }
  return text;
}

}  // namespace

TEST_SUITE("audit") {
  TEST_CASE("security.md/audit-and-the-one-cid-pattern: the result vocabulary") {
    CHECK(mcpcore::to_string(audit_result::success) == "success");
    CHECK(mcpcore::to_string(audit_result::denied) == "denied");
    CHECK(mcpcore::to_string(audit_result::failure) == "failure");
    CHECK(mcpcore::to_string(audit_result::pending) == "pending");
    CHECK(mcpcore::to_string(audit_result::approved) == "approved");
    CHECK(mcpcore::to_string(audit_result::not_found) == "not_found");
  }

  TEST_CASE("plugins.md: null_audit_sink keeps nothing and reports no gap") {
    mcpcore::null_audit_sink s;
    const audit_record row = sample_row();
    CHECK(s.record(row));
    static_assert(noexcept(s.record(row)));
  }

  TEST_CASE("make_audit_entry copies every field") {
    const auto e = mcpcore::make_audit_entry(sample_row());
    CHECK(e.action == "mcp.delete_tag");
    CHECK(e.target_type == "mcp_tool");
    CHECK(e.target_id == "delete_tag");
    CHECK(e.principal_id == "alice");
    CHECK(e.result == audit_result::pending);
    CHECK(e.detail == "approval_id=0123 (deduped)");
    CHECK(e.correlation_id == "req-1-2");
    CHECK(e.time == t2026 + 1234ms);
  }

  TEST_CASE("memory_audit_sink copies rows: the record's views may die after the call") {
    mcpcore::memory_audit_sink s;
    CHECK(s.capacity() == mcpcore::memory_audit_sink::default_capacity);
    {
      std::string action = "mcp.set_tag";
      std::string detail = "tier=operator";
      CHECK(s.record({.action = action, .result = audit_result::success, .detail = detail}));
      action.assign(action.size(), 'X');  // the sink must not be holding views on these
      detail.assign(detail.size(), 'Y');
    }
    const auto rows = s.entries();
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].action == "mcp.set_tag");
    CHECK(rows[0].detail == "tier=operator");
    CHECK(s.dropped() == 0);
  }

  TEST_CASE("memory_audit_sink keeps the last `capacity` rows, oldest first, and counts the dropped") {
    mcpcore::memory_audit_sink s{3};
    for (int i = 0; i < 5; ++i) {
      const std::string id = std::to_string(i);
      CHECK(s.record({.target_id = id}));
    }
    const auto rows = s.entries();
    REQUIRE(rows.size() == 3);
    CHECK(rows[0].target_id == "2");
    CHECK(rows[1].target_id == "3");
    CHECK(rows[2].target_id == "4");
    CHECK(s.dropped() == 2);

    s.clear();
    CHECK(s.entries().empty());
    CHECK(s.dropped() == 0);
    CHECK(s.record({.target_id = "after"}));
    CHECK(s.entries().size() == 1);
  }

  TEST_CASE("memory_audit_sink: capacity 0 is taken as 1") {
    mcpcore::memory_audit_sink s{0};
    CHECK(s.capacity() == 1);
    CHECK(s.record({.target_id = "a"}));
    CHECK(s.record({.target_id = "b"}));
    const auto rows = s.entries();
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].target_id == "b");
    CHECK(s.dropped() == 1);
  }

  TEST_CASE("memory_audit_sink moves, a moved-from sink reports every row as not persisted") {
    mcpcore::memory_audit_sink a{4};
    CHECK(a.record({.target_id = "x"}));
    mcpcore::memory_audit_sink b{std::move(a)};
    CHECK(b.entries().size() == 1);
    CHECK(b.capacity() == 4);
    CHECK_FALSE(a.record({.target_id = "lost"}));  // NOLINT(bugprone-use-after-move): the documented state
    CHECK(a.entries().empty());
    CHECK(a.capacity() == 0);
    CHECK(a.dropped() == 0);
    a.clear();
    mcpcore::memory_audit_sink c;
    c = std::move(b);
    CHECK(c.entries().size() == 1);
  }

  TEST_CASE("plugins.md: memory_audit_sink takes rows from many threads at once") {
    mcpcore::memory_audit_sink s{100};
    constexpr int threads = 4;
    constexpr int per_thread = 500;
    {
      std::vector<std::jthread> writers;
      for (int t = 0; t < threads; ++t) {
        writers.emplace_back([&s, t] {
          for (int i = 0; i < per_thread; ++i) {
            const std::string id = std::to_string(t) + ":" + std::to_string(i);
            s.record({.target_id = id});
          }
        });
      }
      writers.emplace_back([&s] {
        for (int i = 0; i < 50; ++i) (void)s.entries();
      });
    }
    CHECK(s.entries().size() == 100);
    CHECK(s.dropped() == threads * per_thread - 100);
  }

  TEST_CASE("security.md/audit-and-the-one-cid-pattern: the JSON-lines row format") {
    std::string out;
    mcpcore::append_audit_json(out, sample_row());
    CHECK(out == R"x({"time":"2026-01-01T00:00:01.234Z","action":"mcp.delete_tag","target_type":"mcp_tool",)x"
                 R"x("target_id":"delete_tag","principal":"alice","result":"pending",)x"
                 R"x("detail":"approval_id=0123 (deduped)","correlation_id":"req-1-2"})x");
  }

  TEST_CASE("audit times are RFC 3339 UTC with milliseconds, truncated towards the past") {
    const auto time_of = [](std::chrono::system_clock::time_point t) {
      std::string out;
      mcpcore::append_audit_json(out, {.time = t});
      mcpcore::json::document doc;
      auto v = doc.parse(out);
      REQUIRE(v);
      return std::string{(*v)["time"].as_string()};
    };
    CHECK(time_of(std::chrono::system_clock::time_point{}) == "1970-01-01T00:00:00.000Z");
    CHECK(time_of(t2026 + 999999us) == "2026-01-01T00:00:00.999Z");
    CHECK(time_of(t2026 - 1ns) == "2025-12-31T23:59:59.999Z");
    CHECK(time_of(std::chrono::system_clock::time_point{} - 1ms) == "1969-12-31T23:59:59.999Z");
    // 2024-02-29T13:45:07.089Z (a leap day)
    const auto leap = std::chrono::sys_days{std::chrono::year{2024} / 2 / 29} + 13h + 45min + 7s + 89ms;
    CHECK(time_of(leap) == "2024-02-29T13:45:07.089Z");
    // to_rfc3339 is the same writer, for tools that show audit times outside a row.
    CHECK(mcpcore::to_rfc3339(leap) == "2024-02-29T13:45:07.089Z");
    CHECK(mcpcore::to_rfc3339(t2026 - 1ns) == "2025-12-31T23:59:59.999Z");
  }

  TEST_CASE("audit JSON escapes every field and repairs invalid UTF-8 (the line stays one JSON object)") {
    std::string out;
    const std::string_view evil_detail{"a\"b\\c\nd\re\x01" "f\xff", 12};
    mcpcore::append_audit_json(out, {.action = "x\ny", .principal_id = "\"}", .detail = evil_detail});
    CHECK(out.find('\n') == std::string::npos);
    mcpcore::json::document doc;
    auto v = doc.parse(out);
    REQUIRE(v);
    CHECK((*v)["action"].as_string() == "x\ny");
    CHECK((*v)["principal"].as_string() == "\"}");
    CHECK((*v)["detail"].as_string() == "a\"b\\c\nd\re\x01" "f\xEF\xBF\xBD");
    CHECK((*v)["target_type"].as_string().empty());
    CHECK((*v).size() == 8);
  }

  TEST_CASE("jsonl_audit_sink appends one flushed line per row, to a file that may already exist") {
    temp_file tmp;
    {
      std::ofstream pre{tmp.path, std::ios::binary};
      pre << "{\"earlier\":true}\n";
    }
    auto sink = mcpcore::jsonl_audit_sink::open(tmp.path.string());
    REQUIRE(sink);
    CHECK(sink->record(sample_row()));
    // flushed per row: readable before the sink is closed
    auto lines = read_lines(tmp.path);
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == "{\"earlier\":true}");
    std::string expected;
    mcpcore::append_audit_json(expected, sample_row());
    CHECK(lines[1] == expected);
    CHECK(sink->record({.action = "mcp.session.open", .target_type = "McpSession", .result = audit_result::success}));
    lines = read_lines(tmp.path);
    REQUIRE(lines.size() == 3);
    mcpcore::json::document doc;
    auto v = doc.parse(lines[2]);
    REQUIRE(v);
    CHECK((*v)["action"].as_string() == "mcp.session.open");
    CHECK((*v)["result"].as_string() == "success");
    CHECK(read_all(tmp.path).back() == '\n');
  }

  TEST_CASE("jsonl_audit_sink::open reports why the file cannot be opened") {
    const auto missing_dir = std::filesystem::temp_directory_path() / "mcpcore-no-such-dir-4d1c" / "audit.jsonl";
    auto sink = mcpcore::jsonl_audit_sink::open(missing_dir.string());
    REQUIRE_FALSE(sink);
    CHECK(sink.error() == std::errc::no_such_file_or_directory);
    auto dir = mcpcore::jsonl_audit_sink::open(std::filesystem::temp_directory_path().string());
    REQUIRE_FALSE(dir);
    CHECK(dir.error() == std::errc::is_a_directory);
  }

  TEST_CASE("security.md/audit-and-the-one-cid-pattern: a failed write is reported as not persisted (disk full)") {
    if (!std::filesystem::exists("/dev/full")) return;  // Linux: every write fails with ENOSPC
    auto sink = mcpcore::jsonl_audit_sink::open("/dev/full");
    REQUIRE(sink);
    CHECK_FALSE(sink->record(sample_row()));
    CHECK_FALSE(sink->record(sample_row()));  // and keeps reporting it
  }

  TEST_CASE("jsonl_audit_sink moves, a moved-from sink reports every row as not persisted") {
    temp_file tmp;
    auto opened = mcpcore::jsonl_audit_sink::open(tmp.path.string());
    REQUIRE(opened);
    mcpcore::jsonl_audit_sink a = std::move(*opened);
    CHECK_FALSE(opened->record(sample_row()));  // NOLINT(bugprone-use-after-move): the documented state
    CHECK(a.record(sample_row()));
    temp_file tmp2;
    auto other = mcpcore::jsonl_audit_sink::open(tmp2.path.string());
    REQUIRE(other);
    *other = std::move(a);  // closes tmp2's file, takes tmp's
    CHECK(other->record(sample_row()));
    CHECK(read_lines(tmp.path).size() == 2);
    CHECK(read_lines(tmp2.path).empty());
  }

  TEST_CASE("plugins.md: jsonl_audit_sink rows from concurrent writers never interleave") {
    temp_file tmp;
    auto sink = mcpcore::jsonl_audit_sink::open(tmp.path.string());
    REQUIRE(sink);
    constexpr int threads = 4;
    constexpr int per_thread = 200;
    const std::string long_detail(3000, 'd');  // longer than a stdio buffer's typical chunk
    std::atomic<int> persisted{0};
    {
      std::vector<std::jthread> writers;
      for (int t = 0; t < threads; ++t) {
        writers.emplace_back([&, t] {
          for (int i = 0; i < per_thread; ++i) {
            const std::string id = std::to_string(t) + ":" + std::to_string(i);
            persisted += sink->record({.target_id = id, .detail = long_detail}) ? 1 : 0;
          }
        });
      }
    }
    CHECK(persisted == threads * per_thread);
    const auto lines = read_lines(tmp.path);
    REQUIRE(lines.size() == threads * per_thread);
    std::set<std::string> ids;
    mcpcore::json::document doc;
    for (const auto& line : lines) {
      auto v = doc.parse(line);
      REQUIRE(v);
      CHECK((*v)["detail"].as_string() == long_detail);
      ids.emplace((*v)["target_id"].as_string());
    }
    CHECK(ids.size() == threads * per_thread);
  }

  TEST_CASE("security.md/audit-and-the-one-cid-pattern: sanitize_audit_value defuses , = CR LF, C0 controls, DEL and C1 controls") {
    CHECK(mcpcore::sanitize_audit_value("tag-1") == "tag-1");
    CHECK(mcpcore::sanitize_audit_value("a;b=c") == "a_b_c");
    CHECK(mcpcore::sanitize_audit_value("x\r\ntier=supervised") == "x__tier_supervised");
    CHECK(mcpcore::sanitize_audit_value(std::string_view{"\0\t\x1f\x7f", 4}) == "____");
    CHECK(mcpcore::sanitize_audit_value("\xC2\x80\xC2\x9F") == "__");  // U+0080, U+009F
    CHECK(mcpcore::sanitize_audit_value("\xC2\xA0") == "\xC2\xA0");  // U+00A0 is not a control
    CHECK(mcpcore::sanitize_audit_value("spaces stay") == "spaces stay");
    CHECK(mcpcore::sanitize_audit_value("héllo ✓ 𝄞") == "héllo ✓ 𝄞");
    CHECK(mcpcore::sanitize_audit_value("").empty());
  }

  TEST_CASE("security.md/text-shown-to-people: sanitize_audit_value shows bidi, separator and zero-width characters as visible escapes") {
    // U+202E RIGHT-TO-LEFT OVERRIDE would make "txt.exe" read as "exe.txt" in a viewer.
    CHECK(mcpcore::sanitize_audit_value("a\u202E" "exe.txt") == "a\\u202eexe.txt");
    CHECK(mcpcore::sanitize_audit_value("x\u2028y\u2029z") == "x\\u2028y\\u2029z");  // line separators
    CHECK(mcpcore::sanitize_audit_value("\u200B\u200D\uFEFF\u2066") == "\\u200b\\u200d\\ufeff\\u2066");
    CHECK(mcpcore::sanitize_audit_value("\u00AD") == "\\u00ad");                     // soft hyphen
    CHECK(mcpcore::sanitize_audit_value("tag\U000E0041") == "tag\\u0e0041");          // a tag character
    // Visible characters next to the ranges stay as they are.
    CHECK(mcpcore::sanitize_audit_value("\u2027\u2030\u00AC\uFFFC") == "\u2027\u2030\u00AC\uFFFC");
    // An escape is never cut: the value stops before it when it would not fit.
    const std::string filler(mcpcore::max_audit_value_bytes - 3, 'a');
    CHECK(mcpcore::sanitize_audit_value(filler + "\u202E") == filler);
  }

  TEST_CASE("security.md/text-shown-to-people: escape_for_display hides nothing from the person reading") {
    CHECK(mcpcore::escape_for_display("plain text, héllo ✓ 𝄞") == "plain text, héllo ✓ 𝄞");
    // ESC, CR, BEL, NUL: a terminal would act on them.
    CHECK(mcpcore::escape_for_display(std::string_view{"\x1b[2J\r\a\0", 7}) == "\\u001b[2J\\u000d\\u0007\\u0000");
    CHECK(mcpcore::escape_for_display("\x7f") == "\\u007f");                            // DEL
    CHECK(mcpcore::escape_for_display("\u009B" "31m") == "\\u009b31m");                  // C1 CSI
    CHECK(mcpcore::escape_for_display("rm -rf /\u202E#") == "rm -rf /\\u202e#");         // bidi override
    CHECK(mcpcore::escape_for_display("a\u2028b\u200Bc") == "a\\u2028b\\u200bc");
    // A backslash is doubled, so text that spells an escape cannot pass for one.
    CHECK(mcpcore::escape_for_display("\\u202e") == "\\\\u202e");
    // Ill-formed UTF-8 shows its bytes.
    CHECK(mcpcore::escape_for_display("a\xff\xC3") == "a\\xff\\xc3");
    CHECK(mcpcore::escape_for_display("").empty());
  }

  TEST_CASE("security.md/audit-and-the-one-cid-pattern: sanitize_audit_value repairs invalid UTF-8 with U+FFFD per maximal subpart") {
    const std::string r = "\xEF\xBF\xBD";
    CHECK(mcpcore::sanitize_audit_value("a\xff" "b") == "a" + r + "b");
    CHECK(mcpcore::sanitize_audit_value("\xC3") == r);                    // truncated sequence
    CHECK(mcpcore::sanitize_audit_value("\xE2\x9C" "x") == r + "x");     // one subpart, one U+FFFD
    CHECK(mcpcore::sanitize_audit_value("\xC0\xAF") == r + r);            // overlong: two
    CHECK(mcpcore::sanitize_audit_value("\xED\xA0\x80") == r + r + r);    // a surrogate
    CHECK(mcpcore::sanitize_audit_value("\xF4\x90\x80\x80") == r + r + r + r);  // above U+10FFFF
  }

  TEST_CASE("security.md/audit-and-the-one-cid-pattern: sanitize_audit_value cuts at 256 bytes, never inside a UTF-8 sequence") {
    static_assert(mcpcore::max_audit_value_bytes == 256);
    const std::string exact(256, 'a');
    CHECK(mcpcore::sanitize_audit_value(exact) == exact);
    CHECK(mcpcore::sanitize_audit_value(exact + "b") == exact);
    // 255 ASCII bytes then a 2-byte character: it does not fit, so 255 bytes come back
    const std::string a255(255, 'a');
    CHECK(mcpcore::sanitize_audit_value(a255 + "é") == a255);
    // 254 + "é" fits exactly
    const std::string a254(254, 'a');
    CHECK(mcpcore::sanitize_audit_value(a254 + "é" + "zz") == a254 + "é");
    // a replacement character that would cross the limit is left out too
    CHECK(mcpcore::sanitize_audit_value(a254 + "\xff") == a254);
    // long input of 4-byte characters: 64 of them fill 256 bytes
    std::string clefs;
    for (int i = 0; i < 100; ++i) clefs += "𝄞";
    const auto cut = mcpcore::sanitize_audit_value(clefs);
    CHECK(cut.size() == 256);
    CHECK(cut == clefs.substr(0, 256));
    // every cut is valid UTF-8 (a 3-byte character straddling the boundary)
    CHECK(mcpcore::sanitize_audit_value(a254 + "✓") == a254);
    const std::string a253(253, 'a');
    CHECK(mcpcore::sanitize_audit_value(a253 + "✓✓") == a253 + "✓");
  }
}
