// SPDX-License-Identifier: Apache-2.0
// The tickets of a store model's own tests (tests/unit/sqlite_approval_store.cpp,
// tests/postgres/approval_store.cpp), beside the shared suite: ids by number, the requests of
// alice's `mcp.deploy` ticket that bob reviews at fixed times, a ticket minted and approved, and
// the check that a failed call left an approved ticket as it was.
#ifndef MCPCORE_TESTS_SUPPORT_APPROVAL_TICKETS_HPP
#define MCPCORE_TESTS_SUPPORT_APPROVAL_TICKETS_HPP

#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/policy.hpp>

#include <doctest/doctest.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace approval_tickets {

using mcpcore::approval_time;

/// A principal of the approval tests: its id, kind, assurance and roles.
inline mcpcore::principal make_principal(std::string id, mcpcore::principal_kind kind, bool assured,
                                         std::vector<std::string> roles = {}) {
  mcpcore::principal p;
  p.id = std::move(id);
  p.kind = kind;
  p.assured = assured;
  p.roles = std::move(roles);
  return p;
}

/// Mints a pending ticket `id` for `submitter` directly in `store`, at `service`'s clock and
/// ticket lifetime with the default caps (as the MCP surface would); REQUIREs that it was created.
template <class Store>
void mint_pending(Store& store, const mcpcore::approval_service& service, std::string_view id,
                  std::string_view submitter, std::string_view scope,
                  std::string_view definition_id = "mcp.delete_tag") {
  const auto r = store.mint(mcpcore::approval_mint_request{.id = id,
                                                           .definition_id = definition_id,
                                                           .origin = mcpcore::approval_origin_mcp,
                                                           .submitted_by = submitter,
                                                           .scope = scope,
                                                           .now = service.now(),
                                                           .lifetime = service.options().ticket_lifetime,
                                                           .per_submitter_cap = 25,
                                                           .global_cap = 1000});
  REQUIRE(r.has_value());
  REQUIRE(r->status == mcpcore::approval_mint_status::created);
  REQUIRE(r->id == id);
}

/// The authorizer of the approval surfaces' tests: the role `approver` may `Approve` on `Approval`.
inline mcpcore::role_table_authorizer approvers() {
  mcpcore::role_table_authorizer a;
  a.grant("approver", "Approval", mcpcore::operation::approve);
  return a;
}

/// The tickets' lifetime (docs/approvals.md#lifetime: 7 days).
inline constexpr std::chrono::milliseconds lifetime = std::chrono::days{7};
/// When alice mints; bob reviews a minute later, alice consumes an hour later.
inline constexpr approval_time t0{std::chrono::milliseconds{1'700'000'000'000}};

/// Ticket id number `n`: 32 lowercase hex characters.
inline std::string tid(unsigned n) {
  std::array<char, 40> buf{};
  std::snprintf(buf.data(), buf.size(), "%032x", n);
  return buf.data();
}

inline mcpcore::approval_mint_request mint_req(std::string_view id, std::string_view submitter = "alice",
                                               std::string_view scope = R"({"n":1})", approval_time now = t0) {
  return {id, "mcp.deploy", mcpcore::approval_origin_mcp, submitter, scope, now, lifetime, 25, 1000};
}
inline mcpcore::approval_review_request review_req(std::string_view id, std::string_view reviewer = "bob",
                                                   mcpcore::approval_status decision = mcpcore::approval_status::approved,
                                                   approval_time now = t0 + std::chrono::minutes{1}) {
  return {id, reviewer, decision, "ok", now, lifetime};
}
inline mcpcore::approval_consume_request consume_req(std::string_view id, std::string_view consumer = "alice",
                                                     approval_time now = t0 + std::chrono::hours{1}) {
  return {id, consumer, mcpcore::approval_origin_mcp, now, lifetime};
}

/// Mints ticket `id` for alice in store `s` and has bob approve it.
template <class S>
void mint_approved(S& s, const std::string& id) {
  const auto m = s.mint(mint_req(id));
  REQUIRE(m);
  REQUIRE(m->status == mcpcore::approval_mint_status::created);
  const auto r = s.review(review_req(id));
  REQUIRE(r);
  REQUIRE(*r == mcpcore::approval_review_status::reviewed);
}

/// Ticket `id` is approved and not consumed: a failed call changed nothing.
template <class S>
void check_intact(S& s, const std::string& id) {
  const auto t = s.get(id);
  REQUIRE(t);
  REQUIRE(t->has_value());
  CHECK((*t)->status == mcpcore::approval_status::approved);
  CHECK_FALSE((*t)->consumed_at.has_value());
}

}  // namespace approval_tickets

#endif  // MCPCORE_TESTS_SUPPORT_APPROVAL_TICKETS_HPP
