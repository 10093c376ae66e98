// SPDX-License-Identifier: Apache-2.0
// Tests of the operation catalogue, Yuzu's tier table and the authorizers
// (docs/security.md#principals-and-tiers, docs/design.md#registration-validation,
// docs/concepts/tool_handler.md#the-table).
#include <mcpcore/governance/policy.hpp>

#include <doctest/doctest.h>

#include "archetypes.hpp"

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

using mcpcore::operation;
using mcpcore::tier_decision;

namespace {

// ---- concept conformance ----------------------------------------------------------------------

struct no_decide {};
struct decide_returns_bool {
  bool decide(std::string_view, std::string_view, operation) const noexcept { return false; }
};
struct decide_may_throw {
  tier_decision decide(std::string_view, std::string_view, operation) const { return tier_decision::deny; }
};
struct decide_not_const {
  tier_decision decide(std::string_view, std::string_view, operation) noexcept { return tier_decision::deny; }
};
struct decide_without_operation {
  tier_decision decide(std::string_view, std::string_view) const noexcept { return tier_decision::deny; }
};

static_assert(mcpcore::tier_policy<archetypes::tier_policy>);
static_assert(mcpcore::tier_policy<mcpcore::yuzu_tier_policy>);
static_assert(mcpcore::tier_policy<mcpcore::open_tier_policy>);
static_assert(!mcpcore::tier_policy<int>);
static_assert(!mcpcore::tier_policy<no_decide>);
static_assert(!mcpcore::tier_policy<decide_returns_bool>);  // wrong return type
static_assert(!mcpcore::tier_policy<decide_may_throw>);     // noexcept is required
static_assert(!mcpcore::tier_policy<decide_not_const>);     // called through a const reference
static_assert(!mcpcore::tier_policy<decide_without_operation>);

struct no_allowed {};
struct allowed_returns_int {
  int allowed(const mcpcore::principal&, std::string_view, operation) const { return 1; }
};
struct allowed_not_const {
  bool allowed(const mcpcore::principal&, std::string_view, operation) { return true; }
};
struct allowed_takes_mutable_principal {
  bool allowed(mcpcore::principal&, std::string_view, operation) const { return true; }
};

static_assert(mcpcore::authorizer<archetypes::authorizer>);  // not noexcept: allowed
static_assert(mcpcore::authorizer<mcpcore::allow_all_authorizer>);
static_assert(mcpcore::authorizer<mcpcore::role_table_authorizer>);
static_assert(!mcpcore::authorizer<int>);
static_assert(!mcpcore::authorizer<no_allowed>);
static_assert(!mcpcore::authorizer<allowed_returns_int>);  // exactly bool
static_assert(!mcpcore::authorizer<allowed_not_const>);
static_assert(!mcpcore::authorizer<allowed_takes_mutable_principal>);

// The catalogue is constexpr end to end.
static_assert(mcpcore::to_string(operation::delete_) == "Delete");
static_assert(mcpcore::parse_operation("Rotate") == operation::rotate);
static_assert(!mcpcore::parse_operation("rotate").has_value());

const mcpcore::yuzu_tier_policy yuzu{};

// One row of docs/security.md#principals-and-tiers: a mutating tool, its security row, and its gate
// per tier.
struct gated_row {
  std::string_view tool;
  std::string_view securable;
  operation op;
  tier_decision at_operator;
  tier_decision at_supervised;
};

constexpr auto allow = tier_decision::allow;
constexpr auto approval = tier_decision::allow_with_approval;
constexpr auto deny = tier_decision::deny;

// Every row of docs/security.md#principals-and-tiers's "Gated (operator / supervised)" column: "no"
// is allow, "YES" is allow_with_approval, "tier-denied" is deny.
constexpr std::array<gated_row, 33> mutating_tools{{
    {"set_tag", "Tag", operation::write, allow, allow},
    {"delete_tag", "Tag", operation::delete_, approval, approval},
    {"execute_instruction", "Execution", operation::execute, allow, approval},
    {"execute_bundle", "Execution", operation::execute, allow, approval},
    {"approve_request", "Approval", operation::write, deny, allow},
    {"reject_request", "Approval", operation::write, deny, allow},
    {"quarantine_device", "Security", operation::execute, deny, approval},
    {"revoke_certificate", "Security", operation::delete_, deny, approval},
    {"create_engine_principal", "Security", operation::write, deny, approval},
    {"mint_engine_credential", "Security", operation::write, deny, approval},
    {"revoke_engine_principal", "Security", operation::write, deny, approval},
    {"transfer_engine_principal_owner", "Security", operation::write, deny, approval},
    {"rotate_engine_credential", "Security", operation::write, deny, approval},
    {"confirm_engine_rotation", "Security", operation::write, deny, approval},
    {"assign_engine_role", "Security", operation::write, deny, approval},
    {"unassign_engine_role", "Security", operation::write, deny, approval},
    {"rotate_kek", "Security", operation::write, deny, approval},
    {"rewrap_secrets", "Security", operation::write, deny, approval},
    {"rotate_api_token", "ApiToken", operation::rotate, allow, allow},
    {"confirm_api_token_rotation", "ApiToken", operation::rotate, allow, allow},
    {"open_access_review", "AccessReview", operation::attest, deny, allow},
    {"record_attestation", "AccessReview", operation::attest, deny, allow},
    {"close_access_review", "AccessReview", operation::attest, deny, allow},
    {"set_plugin_config", "PluginConfig", operation::write, deny, allow},
    {"set_plugin_secret", "PluginSecret", operation::write, deny, allow},
    {"set_plugin_kill_switch", "PluginConfig", operation::write, deny, allow},
    {"delete_plugin_config", "PluginConfig", operation::delete_, deny, approval},
    {"delete_plugin_secret", "PluginSecret", operation::delete_, deny, approval},
    {"mint_upload_grant", "UploadGrant", operation::write, deny, allow},
    {"revoke_upload_grant", "UploadGrant", operation::delete_, deny, approval},
    // docs/security.md#principals-and-tiers's remaining supervised-gated writes (no
    // docs/security.md#principals-and-tiers tool carries them)
    {"(Policy:Write)", "Policy", operation::write, deny, approval},
    {"(UserManagement:Write)", "UserManagement", operation::write, deny, approval},
    {"(ManagementGroup:Write)", "ManagementGroup", operation::write, deny, approval},
}};

// Securables seen in docs/concepts/tool_handler.md#the-table, plus ones no rule names.
constexpr std::array<std::string_view, 16> securables{
    "Tag",          "Execution",    "Approval",    "Security",     "ApiToken",      "AccessReview",
    "PluginConfig", "PluginSecret", "UploadGrant", "Policy",       "UserManagement", "ManagementGroup",
    "Agent",        "Inventory",    "",            "tag"};

}  // namespace

TEST_SUITE("policy") {
  TEST_CASE("design.md/registration-validation: the operation catalogue round-trips through its exact names") {
    const std::array<std::string_view, 8> names{"Read", "Write", "Execute", "Delete",
                                                "Approve", "Push", "Attest", "Rotate"};
    REQUIRE(mcpcore::all_operations.size() == names.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
      CAPTURE(names[i]);
      CHECK(mcpcore::to_string(mcpcore::all_operations[i]) == names[i]);
      CHECK(mcpcore::parse_operation(names[i]) == mcpcore::all_operations[i]);
    }
  }

  TEST_CASE("design.md/registration-validation: parse_operation accepts exact names only (a typo must not fail open)") {
    for (const std::string_view s : {"read", "READ", " Read", "Read ", "", "Delete_", "delete", "Rotat",
                                     "Rotatee"}) {
      CAPTURE(s);
      CHECK_FALSE(mcpcore::parse_operation(s).has_value());
    }
    CHECK_FALSE(mcpcore::parse_operation(std::string_view{"Read\0", 5}).has_value());
  }

  TEST_CASE("principal kinds and tier decisions have stable names") {
    CHECK(mcpcore::to_string(mcpcore::principal_kind::human_interactive) == "human_interactive");
    CHECK(mcpcore::to_string(mcpcore::principal_kind::service) == "service");
    CHECK(mcpcore::to_string(mcpcore::principal_kind::engine) == "engine");
    CHECK(mcpcore::to_string(tier_decision::deny) == "deny");
    CHECK(mcpcore::to_string(tier_decision::allow) == "allow");
    CHECK(mcpcore::to_string(tier_decision::allow_with_approval) == "allow_with_approval");
  }

  TEST_CASE("a default principal is an unassured service with no tier and no roles") {
    const mcpcore::principal p{};
    CHECK(p.kind == mcpcore::principal_kind::service);
    CHECK(p.tier.empty());
    CHECK(p.roles.empty());
    CHECK_FALSE(p.assured);
  }

  TEST_CASE("security.md/principals-and-tiers: every mutating tool's gate at the operator and supervised tiers") {
    for (const gated_row& r : mutating_tools) {
      CAPTURE(r.tool);
      CHECK(yuzu.decide("operator", r.securable, r.op) == r.at_operator);
      CHECK(yuzu.decide("supervised", r.securable, r.op) == r.at_supervised);
    }
  }

  TEST_CASE("security.md/principals-and-tiers: readonly allows Read only, so it refuses every mutating tool") {
    for (const gated_row& r : mutating_tools) {
      CAPTURE(r.tool);
      CHECK(yuzu.decide("readonly", r.securable, r.op) == deny);
    }
    for (const std::string_view s : securables) {
      CAPTURE(s);
      for (const operation op : mcpcore::all_operations) {
        CAPTURE(mcpcore::to_string(op));
        CHECK(yuzu.decide("readonly", s, op) == (op == operation::read ? allow : deny));
      }
    }
  }

  TEST_CASE("security.md/principals-and-tiers: the empty tier (not an MCP token) allows everything, never through approval") {
    for (const std::string_view s : securables) {
      for (const operation op : mcpcore::all_operations) {
        CAPTURE(s);
        CAPTURE(mcpcore::to_string(op));
        CHECK(yuzu.decide("", s, op) == allow);
      }
    }
  }

  TEST_CASE("security.md/principals-and-tiers: read-only tools pass every known tier without approval") {
    for (const std::string_view tier : {"", "readonly", "operator", "supervised"}) {
      for (const std::string_view s : securables) {
        CAPTURE(tier);
        CAPTURE(s);
        CHECK(yuzu.decide(tier, s, operation::read) == allow);
      }
    }
  }

  TEST_CASE("security.md/principals-and-tiers: an unknown tier is denied everything (names are case-sensitive and exact)") {
    for (const std::string_view tier : {"admin", "Operator", "SUPERVISED", " readonly", "operator ", "super",
                                        "supervisedx", "read-only"}) {
      for (const std::string_view s : securables) {
        for (const operation op : mcpcore::all_operations) {
          CAPTURE(tier);
          CAPTURE(s);
          CAPTURE(mcpcore::to_string(op));
          CHECK(yuzu.decide(tier, s, op) == deny);
        }
      }
    }
    CHECK(yuzu.decide(std::string_view{"readonly\0", 9}, "Tag", operation::read) == deny);
  }

  TEST_CASE("security.md/principals-and-tiers: operator reaches exactly Read, Tag:Write, Tag:Delete, Execution:Execute, ApiToken:Rotate") {
    for (const std::string_view s : securables) {
      for (const operation op : mcpcore::all_operations) {
        CAPTURE(s);
        CAPTURE(mcpcore::to_string(op));
        const bool reachable = op == operation::read || (s == "Tag" && op == operation::write) ||
                               (s == "Tag" && op == operation::delete_) ||
                               (s == "Execution" && op == operation::execute) ||
                               (s == "ApiToken" && op == operation::rotate);
        const tier_decision d = yuzu.decide("operator", s, op);
        CHECK((d != deny) == reachable);
        // docs/security.md#principals-and-tiers: at operator, only Tag:Delete goes through approval
        CHECK((d == approval) == (s == "Tag" && op == operation::delete_));
      }
    }
    // a distinct Rotate operation: operator can never reach ApiToken:Write
    CHECK(yuzu.decide("operator", "ApiToken", operation::write) == deny);
  }

  TEST_CASE("security.md/principals-and-tiers: supervised never denies, approval exactly for the destructive list") {
    for (const std::string_view s : securables) {
      for (const operation op : mcpcore::all_operations) {
        CAPTURE(s);
        CAPTURE(mcpcore::to_string(op));
        const bool gated = op == operation::delete_ || (s == "Execution" && op == operation::execute) ||
                           (s == "Security" && op == operation::execute) ||
                           (op == operation::write && (s == "Policy" || s == "Security" ||
                                                       s == "UserManagement" || s == "ManagementGroup"));
        CHECK(yuzu.decide("supervised", s, op) == (gated ? approval : allow));
      }
    }
    CHECK(yuzu.decide("supervised", "ApiToken", operation::rotate) == allow);  // never gated
    CHECK(yuzu.decide("supervised", "Anything", operation::delete_) == approval);  // any *:Delete
  }

  TEST_CASE("security.md/principals-and-tiers: known_tier names exactly the four tiers") {
    CHECK(mcpcore::yuzu_tier_policy::known_tier(""));
    CHECK(mcpcore::yuzu_tier_policy::known_tier("readonly"));
    CHECK(mcpcore::yuzu_tier_policy::known_tier("operator"));
    CHECK(mcpcore::yuzu_tier_policy::known_tier("supervised"));
    CHECK_FALSE(mcpcore::yuzu_tier_policy::known_tier("Supervised"));
    CHECK_FALSE(mcpcore::yuzu_tier_policy::known_tier("admin"));
    CHECK_FALSE(mcpcore::yuzu_tier_policy::known_tier(" "));
  }

  TEST_CASE("plugins.md: open_tier_policy allows everything and never asks for approval") {
    const mcpcore::open_tier_policy open{};
    for (const std::string_view tier : {"", "readonly", "whatever"}) {
      for (const operation op : mcpcore::all_operations) {
        CHECK(open.decide(tier, "Security", op) == allow);
      }
    }
  }

  TEST_CASE("plugins.md: allow_all_authorizer grants everything, even to a principal without roles") {
    const mcpcore::allow_all_authorizer a{};
    const mcpcore::principal nobody{};
    for (const operation op : mcpcore::all_operations) CHECK(a.allowed(nobody, "Security", op));
  }

  TEST_CASE("plugins.md: role_table_authorizer grants per role, securable and operation") {
    mcpcore::role_table_authorizer table;
    table.grant("viewer", "*", operation::read)
        .grant("tagger", "Tag", operation::write)
        .grant("tagger", "Tag", operation::delete_)
        .grant("approver", "Approval", operation::approve);
    CHECK(table.size() == 4);

    mcpcore::principal viewer{.id = "u1", .roles = {"viewer"}};
    mcpcore::principal tagger{.id = "u2", .roles = {"tagger"}};
    mcpcore::principal both{.id = "u3", .roles = {"tagger", "viewer"}};
    const mcpcore::principal none{.id = "u4"};

    // "*" matches any securable, for the granted operation only
    CHECK(table.allowed(viewer, "Tag", operation::read));
    CHECK(table.allowed(viewer, "Anything", operation::read));
    CHECK(table.allowed(viewer, "", operation::read));
    CHECK_FALSE(table.allowed(viewer, "Tag", operation::write));
    // a specific securable matches itself only, exactly
    CHECK(table.allowed(tagger, "Tag", operation::write));
    CHECK(table.allowed(tagger, "Tag", operation::delete_));
    CHECK_FALSE(table.allowed(tagger, "tag", operation::write));
    CHECK_FALSE(table.allowed(tagger, "Tags", operation::write));
    CHECK_FALSE(table.allowed(tagger, "Policy", operation::write));
    // Write does not imply Read
    CHECK_FALSE(table.allowed(tagger, "Tag", operation::read));
    // any role of the principal may carry the grant
    CHECK(table.allowed(both, "Tag", operation::read));
    CHECK(table.allowed(both, "Tag", operation::write));
    // no roles, unknown roles, case-different roles: nothing
    CHECK_FALSE(table.allowed(none, "Tag", operation::read));
    mcpcore::principal stranger{.id = "u5", .roles = {"Viewer", "admin"}};
    CHECK_FALSE(table.allowed(stranger, "Tag", operation::read));
    // a role named "*" is a role like any other, not a wildcard
    mcpcore::principal star{.id = "u6", .roles = {"*"}};
    CHECK_FALSE(table.allowed(star, "Tag", operation::read));
  }

  TEST_CASE("role_table_authorizer keeps one copy of a repeated grant, an empty table denies everything") {
    mcpcore::role_table_authorizer table;
    const mcpcore::principal p{.id = "u", .roles = {"r"}};
    for (const operation op : mcpcore::all_operations) CHECK_FALSE(table.allowed(p, "X", op));
    table.grant("r", "X", operation::push).grant("r", "X", operation::push).grant("r", "*", operation::push);
    CHECK(table.size() == 2);
    CHECK(table.allowed(p, "X", operation::push));
    CHECK_FALSE(table.allowed(p, "X", operation::attest));
  }
}
