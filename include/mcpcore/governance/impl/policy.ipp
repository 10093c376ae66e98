// SPDX-License-Identifier: Apache-2.0
// Yuzu's tier table and the role-table authorizer.
#ifndef MCPCORE_IMPL_POLICY_IPP
#define MCPCORE_IMPL_POLICY_IPP

#include <mcpcore/governance/policy.hpp>

#include <utility>

MCPCORE_BEGIN_NAMESPACE

// docs/security.md#principals-and-tiers (tier_allows) then docs/security.md#principals-and-tiers
// (requires_approval, evaluated only when allowed). The table in prose:
// docs/security.md#principals-and-tiers.
MCPCORE_DECL tier_decision yuzu_tier_policy::decide(std::string_view tier, std::string_view securable,
                                                    operation op) const noexcept {
  if (tier.empty()) return tier_decision::allow;  // not an MCP token: RBAC decides, never approval
  if (tier == "readonly") return op == operation::read ? tier_decision::allow : tier_decision::deny;
  if (tier == "operator") {
    if (op == operation::read) return tier_decision::allow;
    if (securable == "Tag" && op == operation::write) return tier_decision::allow;
    if (securable == "Tag" && op == operation::delete_) return tier_decision::allow_with_approval;
    if (securable == "Execution" && op == operation::execute) return tier_decision::allow;  // auto-approved
    if (securable == "ApiToken" && op == operation::rotate) return tier_decision::allow;
    return tier_decision::deny;
  }
  if (tier == "supervised") {
    const bool gated = op == operation::delete_ ||
                       (op == operation::execute && (securable == "Execution" || securable == "Security")) ||
                       (op == operation::write && (securable == "Policy" || securable == "Security" ||
                                                   securable == "UserManagement" ||
                                                   securable == "ManagementGroup"));
    return gated ? tier_decision::allow_with_approval : tier_decision::allow;
  }
  return tier_decision::deny;  // unknown tier: fail closed
}

MCPCORE_DECL bool yuzu_tier_policy::known_tier(std::string_view tier) noexcept {
  return tier.empty() || tier == "readonly" || tier == "operator" || tier == "supervised";
}

MCPCORE_DECL role_table_authorizer& role_table_authorizer::grant(std::string role, std::string securable,
                                                                 operation op) {
  for (const entry& g : grants_) {
    if (g.op == op && g.role == role && g.securable == securable) return *this;
  }
  grants_.push_back({std::move(role), std::move(securable), op});
  return *this;
}

MCPCORE_DECL bool role_table_authorizer::allowed(const principal& who, std::string_view securable,
                                                 operation op) const noexcept {
  for (const entry& g : grants_) {
    if (g.op != op || (g.securable != "*" && g.securable != securable)) continue;
    for (const std::string& role : who.roles) {
      if (role == g.role) return true;
    }
  }
  return false;
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_POLICY_IPP
