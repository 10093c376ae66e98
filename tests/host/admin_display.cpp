// SPDX-License-Identifier: Apache-2.0
// mcpcore-admin shows a person untrusted text (a submitter's arguments and name, a reviewer's
// comment, audit rows) with every control and invisible character made visible
// (docs/security.md#text-shown-to-people). The real program runs on a real data directory.
#include <doctest/doctest.h>

#include <mcpcore/stores/sqlite_approval_store.hpp>

#include "support/admin_program.hpp"
#include "support/process.hpp"
#include "support/store_opener.hpp"

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace {

using admin_program::ran;
using test_process::temp_dir;

// Runs mcpcore-admin on the data directory `data_dir` with `args` (already shell-quoted).
ran admin(const std::string& data_dir, const std::string& args) {
  return admin_program::run("--data-dir " + admin_program::shell_quoted(data_dir) + " " + args);
}

// The approval store of the data directory `data_dir`, as mcpcore-host keeps it.
mcpcore::sqlite_approval_store approvals(const std::string& data_dir) {
  return mcpcore_test::open_or_fail<mcpcore::sqlite_approval_store>(data_dir + "/approvals.db");
}

// Whether `out` holds any byte or sequence a terminal would act on or not show.
bool holds_raw_hazard(std::string_view out) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto c = static_cast<unsigned char>(out[i]);
    if ((c < 0x20 && c != '\n') || c == 0x7F) return true;                       // C0 but the line ends, DEL
    if (c == 0xC2 && i + 1 < out.size() && static_cast<unsigned char>(out[i + 1]) < 0xA0) return true;  // C1
  }
  for (std::string_view s : {"\u202E", "\u2028", "\u200B", "\uFEFF"}) {
    if (out.find(s) != std::string_view::npos) return true;
  }
  return false;
}

TEST_CASE("security.md/text-shown-to-people: mcpcore-admin escapes a submitter's arguments and a reviewer's comment") {
  const temp_dir tmp;
  const std::string& dir = tmp.path();

  // A ticket as mcpcore-host would store it for a hostile caller: canonical JSON arguments keep
  // C1 controls, DEL and the invisible characters as they are (JSON escapes only C0).
  const std::string scope = "{\"command\":\"rm -rf /\u202E#\",\"note\":\"\xC2\x9B" "31m\x7F\u2028\u200B\uFEFF\"}";
  std::string id;
  {
    auto store = approvals(dir);
    id = admin_program::mint(store, {.definition_id = "mcp.execute_instruction",
                                     .submitted_by = "op\u202Eevil",
                                     .scope = scope,
                                     .lifetime = std::chrono::minutes{10},
                                     // a store written by something other than the library's service
                                     .server = "s1\u202E\x1b[2J"});
  }

  const auto pending = admin(dir, "pending");
  CHECK(pending.status == 0);
  CHECK_FALSE(holds_raw_hazard(pending.out));
  CHECK(pending.out.find("rm -rf /\\u202e#") != std::string::npos);
  CHECK(pending.out.find("\\u009b31m\\u007f\\u2028\\u200b\\ufeff") != std::string::npos);
  CHECK(pending.out.find("submitted by op\\u202eevil") != std::string::npos);
  CHECK_MESSAGE(pending.out.find("from server s1\\u202e\\u001b[2J") != std::string::npos, pending.out);

  // ESC, CR and BEL in the comment, as an attacker at the reviewer's keyboard might paste them.
  const auto rejected = admin(dir, "reject " + id + " --as alice --yes --comment \"$(printf 'no\\033[2J\\r\\away')\"");
  CHECK(rejected.status == 0);
  CHECK_FALSE(holds_raw_hazard(rejected.out));

  const auto shown = admin(dir, "show " + id);
  CHECK(shown.status == 0);
  CHECK_FALSE(holds_raw_hazard(shown.out));
  CHECK_MESSAGE(shown.out.find("no\\u001b[2J\\u000d\\u0007way") != std::string::npos, shown.out);

  const auto audit = admin(dir, "audit");
  CHECK(audit.status == 0);
  CHECK_FALSE(holds_raw_hazard(audit.out));
  CHECK(audit.out.find("submitted_by=op\\\\u202eevil") != std::string::npos);  // the row's escape, shown
}

TEST_CASE("host-server.md/mcpcore-admin: pending and show name the server a ticket came from, read from the ticket") {
  const temp_dir tmp;
  const std::string& dir = tmp.path();
  std::string named;
  std::string unnamed;
  {
    auto store = approvals(dir);
    using std::chrono::minutes;
    named = admin_program::mint(store, {.scope = R"({"n":1})", .lifetime = minutes{10}, .server = "host-a:8765"});
    unnamed = admin_program::mint(store, {.scope = R"({"n":2})", .lifetime = minutes{10}});
  }
  const auto text = admin(dir, "pending");
  CHECK(text.status == 0);
  CHECK_MESSAGE(text.out.find("from server host-a:8765") != std::string::npos, text.out);
  CHECK_MESSAGE(text.out.find("from server") == text.out.rfind("from server"), text.out);  // the unnamed one: none
  const auto json = admin(dir, "pending --json");
  CHECK(json.status == 0);
  CHECK_MESSAGE(json.out.find(R"("server":"host-a:8765")") != std::string::npos, json.out);
  CHECK_MESSAGE(json.out.find(R"("server":null)") != std::string::npos, json.out);
  const auto shown = admin(dir, "show " + named);
  CHECK(shown.status == 0);
  CHECK_MESSAGE(shown.out.find("from server host-a:8765") != std::string::npos, shown.out);
  const auto shown_json = admin(dir, "show --json " + named);
  CHECK(shown_json.status == 0);
  CHECK_MESSAGE(shown_json.out.find(R"("server":"host-a:8765")") != std::string::npos, shown_json.out);
  CHECK_MESSAGE(shown_json.out.find(R"("approval_id":")" + named + "\"") != std::string::npos, shown_json.out);
  const auto none = admin(dir, "show " + unnamed);
  CHECK(none.status == 0);
  CHECK(none.out.find("from server") == std::string::npos);
}

TEST_CASE("approvals.md/retention: mcpcore-admin prune --older-than deletes old finished tickets and prints the count") {
  const temp_dir tmp;
  const std::string& dir = tmp.path();
  using std::chrono::days;
  const auto now = admin_program::now();
  std::string old_rejected;
  std::string young_rejected;
  std::string old_pending;
  {
    auto store = approvals(dir);
    // Each of its own scope, minted (and rejected when asked) at its time.
    old_rejected = admin_program::mint(store, {.scope = R"({"n":1})", .at = now - days{40}, .reject = true});
    young_rejected = admin_program::mint(store, {.scope = R"({"n":2})", .at = now - days{10}, .reject = true});
    old_pending = admin_program::mint(store, {.scope = R"({"n":3})", .at = now - days{40}});
  }

  const auto bad = admin(dir, "prune --older-than 30x");
  CHECK(bad.status == 2);
  const auto pruned = admin(dir, "prune --older-than 30d");
  CHECK_MESSAGE(pruned.status == 0, pruned.out);
  CHECK_MESSAGE(pruned.out.find("pruned 1 finished approval ticket older than 30d") != std::string::npos, pruned.out);
  CHECK(admin(dir, "show " + old_rejected).status != 0);
  CHECK(admin(dir, "show " + young_rejected).status == 0);
  CHECK(admin(dir, "show " + old_pending).status == 0);
  const auto again = admin(dir, "prune --older-than 5d --batch 1");
  CHECK(again.status == 0);
  CHECK_MESSAGE(again.out.find("pruned 1 finished approval ticket older than 5d") != std::string::npos, again.out);
}

}  // namespace
