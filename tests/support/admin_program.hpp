// SPDX-License-Identifier: Apache-2.0
// The real mcpcore-admin program under test (MCPCORE_ADMIN names it), run on a test's approvals
// (docs/host-server.md#mcpcore-admin), and the tickets a test mints for it to show, in any
// approval store.
#ifndef MCPCORE_TESTS_SUPPORT_ADMIN_PROGRAM_HPP
#define MCPCORE_TESTS_SUPPORT_ADMIN_PROGRAM_HPP

#include <mcpcore/governance/approval.hpp>

#include <doctest/doctest.h>

#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

#if !defined(MCPCORE_ADMIN)
#  error "MCPCORE_ADMIN names the mcpcore-admin program under test"
#endif

namespace admin_program {

/// What one run of mcpcore-admin did.
struct ran {
  int status = -1;  ///< the exit status, -1 when it did not exit
  std::string out;  ///< stdout and stderr
};

/// `s` as one single-quoted shell word.
inline std::string shell_quoted(std::string_view s) {
  std::string q = "'";
  for (const char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

/// Runs mcpcore-admin with `args` (shell words, already quoted: the database first, e.g.
/// `--data-dir '/tmp/x' pending`) and returns what it printed.
inline ran run(const std::string& args) {
  const std::string command = shell_quoted(MCPCORE_ADMIN) + " " + args + " 2>&1";
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

/// The system clock's time, in whole milliseconds (the stores' resolution).
inline mcpcore::approval_time now() {
  return std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
}

/// A ticket for mcpcore-admin to show; the defaults: op's `mcp.deploy`, minted now for 365 days,
/// from no named server, left pending.
struct ticket {
  std::string definition_id = "mcp.deploy";
  std::string submitted_by = "op";
  std::string scope{};  ///< its own per ticket: the same scope would dedup
  mcpcore::approval_time at = now();
  std::chrono::milliseconds lifetime = std::chrono::days{365};
  std::string server{};
  bool reject = false;  ///< rejected by alice (comment "no") at `at`, once minted
};

/// Mints `t` in `store` (any approval store) with a fresh id, requiring a new ticket; its id.
template <class Store>
std::string mint(Store& store, const ticket& t) {
  auto fresh = mcpcore::make_approval_id();
  REQUIRE(fresh);
  mcpcore::approval_mint_request m;
  m.id = *fresh;
  m.definition_id = t.definition_id;
  m.origin = "mcp";
  m.submitted_by = t.submitted_by;
  m.scope = t.scope;
  m.now = t.at;
  m.lifetime = t.lifetime;
  m.per_submitter_cap = 10;
  m.global_cap = 10;
  m.server = t.server;
  auto minted = store.mint(m);
  REQUIRE(minted);
  REQUIRE(minted->status == mcpcore::approval_mint_status::created);
  if (t.reject) {
    const mcpcore::approval_review_request r{*fresh, "alice", mcpcore::approval_status::rejected, "no", t.at,
                                             t.lifetime};
    auto reviewed = store.review(r);
    REQUIRE(reviewed);
    REQUIRE(*reviewed == mcpcore::approval_review_status::reviewed);
  }
  return *fresh;
}

}  // namespace admin_program

#endif  // MCPCORE_TESTS_SUPPORT_ADMIN_PROGRAM_HPP
