// SPDX-License-Identifier: Apache-2.0
// OAuth scopes as mcpcore tiers and roles, and the scope a refused call lacks (docs/oauth.md#scopes,
// docs/oauth.md#step-up).
#ifndef MCPCORE_GOVERNANCE_SCOPES_HPP
#define MCPCORE_GOVERNANCE_SCOPES_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/governance/policy.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

/// Most grants one `scope_map` holds.
inline constexpr std::size_t max_scope_grants = 64;
/// Most scopes one principal keeps from its token; the rest are dropped (they grant nothing a
/// `scope_map` of `max_scope_grants` could name twice over).
inline constexpr std::size_t max_principal_scopes = 128;
/// Longest scope kept, in bytes (RFC 6749 scope-token: visible ASCII but `"` and `\`).
inline constexpr std::size_t max_scope_bytes = 256;
/// The tier of an OAuth principal none of whose scopes names a tier: no shipped tier policy knows
/// it, so every gated operation is refused and the refusal names the scope to ask for.
inline constexpr std::string_view unscoped_tier = "unscoped";

/// What one OAuth scope grants (docs/oauth.md#scopes).
struct scope_grant {
  /// The scope, as the authorization server writes it in tokens (`mcp:read`).
  std::string scope{};
  /// The tier it grants; "" for none (the scope grants roles only).
  std::string tier{};
  /// The roles it grants, for the `authorizer`.
  std::vector<std::string> roles{};
};

/// Whether `s` is an RFC 6749 scope-token of at most `max_scope_bytes` bytes: one or more of
/// %x21 / %x23-5B / %x5D-7E.
[[nodiscard]] constexpr bool is_scope_token(std::string_view s) noexcept {
  if (s.empty() || s.size() > max_scope_bytes) return false;
  for (const char c : s) {
    if (c < 0x21 || c > 0x7e || c == '"' || c == '\\') return false;
  }
  return true;
}

namespace detail {
/// Whether `list` holds `s`: a loop, as `<algorithm>` would add about 8,600 preprocessed lines to
/// every header that includes this one (cmake/mcpcore_header_budget.cmake).
template <class List>
[[nodiscard]] constexpr bool scope_list_has(const List& list, std::string_view s) noexcept {
  for (const auto& e : list) {
    if (std::string_view{e} == s) return true;
  }
  return false;
}
}  // namespace detail

/// OAuth scopes as mcpcore tiers and roles: the grants are listed from the least privilege to the
/// most (docs/oauth.md#scopes).
///
/// - `apply(scopes, p)` gives `p` the token's scopes, the tier of the *last* listed grant the
///   token holds that names a tier (`unscoped_tier` when none does), and the roles of every grant
///   it holds.
/// - `step_up(policy, p, securable, op)` is the scope a refused call lacks: the *first* listed
///   grant `p` does not hold whose tier the policy does not deny for `(securable, op)`.
///
/// A plain value, immutable once made; thread-safe to read.
class scope_map {
 public:
  /// An empty map: every token is `unscoped_tier` and nothing can be stepped up to.
  scope_map() = default;

  /// What is wrong with `grants`, or nullopt when they make a map: a scope that is not a
  /// scope-token, a scope listed twice, more than `max_scope_grants` grants.
  [[nodiscard]] static std::optional<std::string> check(const std::vector<scope_grant>& grants) {
    if (grants.size() > max_scope_grants) {
      return "at most " + std::to_string(max_scope_grants) + " scope grants";
    }
    for (std::size_t i = 0; i < grants.size(); ++i) {
      if (!is_scope_token(grants[i].scope)) return "scope grant " + std::to_string(i + 1) + ": not a scope token";
      for (std::size_t j = 0; j < i; ++j) {
        if (grants[j].scope == grants[i].scope) return "scope " + grants[i].scope + " listed twice";
      }
    }
    return std::nullopt;
  }
  /// @pre `check(grants)` is nullopt.
  explicit scope_map(std::vector<scope_grant> grants) : grants_(std::move(grants)) {}

  [[nodiscard]] const std::vector<scope_grant>& grants() const noexcept { return grants_; }
  [[nodiscard]] bool empty() const noexcept { return grants_.empty(); }

  /// Sets `p.scopes`, `p.tier` and `p.roles` from the token's `scopes` (each a scope-token; others
  /// and those past `max_principal_scopes` are dropped, duplicates kept once).
  void apply(const std::vector<std::string_view>& scopes, principal& p) const {
    p.scopes.clear();
    for (const std::string_view s : scopes) {
      if (p.scopes.size() == max_principal_scopes) break;
      if (!is_scope_token(s) || detail::scope_list_has(p.scopes, s)) continue;
      p.scopes.emplace_back(s);
    }
    p.tier = std::string{unscoped_tier};
    p.roles.clear();
    for (const scope_grant& g : grants_) {
      if (!detail::scope_list_has(p.scopes, g.scope)) continue;
      if (!g.tier.empty()) p.tier = g.tier;
      for (const std::string& r : g.roles) {
        if (!detail::scope_list_has(p.roles, r)) p.roles.push_back(r);
      }
    }
  }

  /// The scope that would let `p` past the tier gate for `(securable, op)`; nullopt when `p` is
  /// not an OAuth principal (no scopes and not `unscoped_tier`) or no grant it lacks would. With
  /// `through_approval` false, a tier the policy sends through approval does not count (the
  /// methods without an approval flow: resources, prompts).
  template <tier_policy P>
  [[nodiscard]] std::optional<std::string_view> step_up(const P& policy, const principal& p,
                                                        std::string_view securable, operation op,
                                                        bool through_approval = true) const noexcept {
    if (p.scopes.empty() && p.tier != unscoped_tier) return std::nullopt;
    for (const scope_grant& g : grants_) {
      if (g.tier.empty() || detail::scope_list_has(p.scopes, g.scope)) continue;
      const tier_decision d = policy.decide(g.tier, securable, op);
      if (d == tier_decision::allow || (through_approval && d == tier_decision::allow_with_approval)) {
        return std::string_view{g.scope};
      }
    }
    return std::nullopt;
  }

 private:
  std::vector<scope_grant> grants_{};
};

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_GOVERNANCE_SCOPES_HPP
