// SPDX-License-Identifier: Apache-2.0
// mcpcore-admin shows a person untrusted text (a submitter's arguments and name, a reviewer's
// comment, audit rows) with every control and invisible character made visible
// (docs/security.md#text-shown-to-people). The real program runs on a real data directory.
#include <doctest/doctest.h>

#include <mcpcore/governance/approval.hpp>
#include <mcpcore/stores/sqlite_approval_store.hpp>

#include <sys/wait.h>
#include <stdlib.h>  // NOLINT(modernize-deprecated-headers): POSIX mkdtemp

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

#if !defined(MCPCORE_ADMIN)
#  error "MCPCORE_ADMIN names the mcpcore-admin program under test"
#endif

namespace {

struct ran {
  int status = -1;
  std::string out;  // stdout and stderr
};

// Runs mcpcore-admin with `args` (already shell-quoted) and returns what it printed.
ran admin(const std::string& data_dir, const std::string& args) {
  const std::string command = std::string{"'"} + MCPCORE_ADMIN + "' --data-dir '" + data_dir + "' " + args + " 2>&1";
  ran r;
  FILE* pipe = ::popen(command.c_str(), "r");  // NOLINT(cert-env33-c): the test's own program
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
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
  std::string templ = (std::filesystem::temp_directory_path() / "mcpcore-admin-XXXXXX").string();
  REQUIRE(::mkdtemp(templ.data()) != nullptr);
  const std::string dir = templ;

  // A ticket as mcpcore-host would store it for a hostile caller: canonical JSON arguments keep
  // C1 controls, DEL and the invisible characters as they are (JSON escapes only C0).
  const std::string scope = "{\"command\":\"rm -rf /\u202E#\",\"note\":\"\xC2\x9B" "31m\x7F\u2028\u200B\uFEFF\"}";
  std::string id;
  {
    auto store = mcpcore::sqlite_approval_store::open(dir + "/approvals.db");
    REQUIRE(store);
    auto fresh = mcpcore::make_approval_id();
    REQUIRE(fresh);
    mcpcore::approval_mint_request m;
    m.id = *fresh;
    m.definition_id = "mcp.execute_instruction";
    m.origin = "mcp";
    m.submitted_by = "op\u202Eevil";
    m.scope = scope;
    m.now = std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
    m.lifetime = std::chrono::minutes{10};
    m.per_submitter_cap = 10;
    m.global_cap = 10;
    m.server = "s1\u202E\x1b[2J";  // a store written by something other than the library's service
    auto minted = store->mint(m);
    REQUIRE(minted);
    id = minted->id;
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

  std::filesystem::remove_all(dir);
}

TEST_CASE("host-server.md/mcpcore-admin: pending and show name the server a ticket came from, read from the ticket") {
  std::string templ = (std::filesystem::temp_directory_path() / "mcpcore-admin-XXXXXX").string();
  REQUIRE(::mkdtemp(templ.data()) != nullptr);
  const std::string dir = templ;
  std::string named;
  std::string unnamed;
  {
    auto store = mcpcore::sqlite_approval_store::open(dir + "/approvals.db");
    REQUIRE(store);
    auto mint = [&](const char* scope, std::string_view server) {
      auto fresh = mcpcore::make_approval_id();
      REQUIRE(fresh);
      mcpcore::approval_mint_request m;
      m.id = *fresh;
      m.definition_id = "mcp.deploy";
      m.origin = "mcp";
      m.submitted_by = "op";
      m.scope = scope;
      m.now = std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
      m.lifetime = std::chrono::minutes{10};
      m.per_submitter_cap = 10;
      m.global_cap = 10;
      m.server = server;
      auto minted = store->mint(m);
      REQUIRE(minted);
      return minted->id;
    };
    named = mint(R"({"n":1})", "host-a:8765");
    unnamed = mint(R"({"n":2})", "");
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
  std::filesystem::remove_all(dir);
}

TEST_CASE("approvals.md/retention: mcpcore-admin prune --older-than deletes old finished tickets and prints the count") {
  std::string templ = (std::filesystem::temp_directory_path() / "mcpcore-admin-XXXXXX").string();
  REQUIRE(::mkdtemp(templ.data()) != nullptr);
  const std::string dir = templ;
  using std::chrono::days;
  const auto now = std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
  std::string old_rejected;
  std::string young_rejected;
  std::string old_pending;
  {
    auto store = mcpcore::sqlite_approval_store::open(dir + "/approvals.db");
    REQUIRE(store);
    // A ticket of its own scope minted at `at`, rejected at `at` when asked.
    auto ticket = [&](mcpcore::approval_time at, bool reject, const std::string& scope) {
      auto fresh = mcpcore::make_approval_id();
      REQUIRE(fresh);
      mcpcore::approval_mint_request m;
      m.id = *fresh;
      m.definition_id = "mcp.deploy";
      m.origin = "mcp";
      m.submitted_by = "op";
      m.scope = scope;
      m.now = at;
      m.lifetime = days{365};
      m.per_submitter_cap = 10;
      m.global_cap = 10;
      auto minted = store->mint(m);
      REQUIRE(minted);
      if (reject) {
        const mcpcore::approval_review_request r{*fresh, "alice", mcpcore::approval_status::rejected, "no", at,
                                                 days{365}};
        auto reviewed = store->review(r);
        REQUIRE(reviewed);
      }
      return *fresh;
    };
    old_rejected = ticket(now - days{40}, true, R"({"n":1})");
    young_rejected = ticket(now - days{10}, true, R"({"n":2})");
    old_pending = ticket(now - days{40}, false, R"({"n":3})");
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

  std::filesystem::remove_all(dir);
}

}  // namespace
