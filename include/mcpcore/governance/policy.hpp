// SPDX-License-Identifier: Apache-2.0
// Who is calling and what they may do: operations, principals, the tier_policy and authorizer plug-in points.
#ifndef MCPCORE_POLICY_HPP
#define MCPCORE_POLICY_HPP

#include <mcpcore/detail/config.hpp>

#include <array>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

/// The closed RBAC operation catalogue (docs/design.md#registration-validation).
///
/// Every tool declares one securable (a host-defined resource class such as "Tag") and one of
/// these operations; tier policies and authorizers decide on that pair. The catalogue is closed
/// on purpose: a misspelt operation would make an approval rule silently miss (fail open).
enum class operation : std::uint8_t {
  read,     ///< "Read"
  write,    ///< "Write"
  execute,  ///< "Execute"
  delete_,  ///< "Delete" (trailing underscore: `delete` is a keyword) NOLINT(readability-identifier-naming)
  approve,  ///< "Approve"
  push,     ///< "Push"
  attest,   ///< "Attest"
  rotate,   ///< "Rotate" (distinct from Write so that a tier can rotate a credential without
            ///< being able to write it, docs/security.md#principals-and-tiers)
};

/// Every operation, in declaration order.
inline constexpr std::array<operation, 8> all_operations{
    operation::read, operation::write,   operation::execute, operation::delete_,
    operation::approve, operation::push, operation::attest,  operation::rotate};

/// The catalogue name of `op`: "Read", "Write", "Execute", "Delete", "Approve", "Push", "Attest",
/// "Rotate"; "" for a value outside the enumeration.
[[nodiscard]] constexpr std::string_view to_string(operation op) noexcept {
  switch (op) {
    case operation::read: return "Read";
    case operation::write: return "Write";
    case operation::execute: return "Execute";
    case operation::delete_: return "Delete";
    case operation::approve: return "Approve";
    case operation::push: return "Push";
    case operation::attest: return "Attest";
    case operation::rotate: return "Rotate";
  }
  return {};
}

/// The operation named `s`, exactly as `to_string` spells it (case-sensitive, no surrounding
/// space); `std::nullopt` for anything else.
[[nodiscard]] constexpr std::optional<operation> parse_operation(std::string_view s) noexcept {
  for (const operation op : all_operations) {
    if (to_string(op) == s) return op;
  }
  return std::nullopt;
}

/// What kind of party a principal is (docs/plugins.md `authenticator`).
enum class principal_kind : std::uint8_t {
  human_interactive,  ///< a person at a client (the only kind that may approve, docs/approvals.md)
  service,            ///< a token held by a program (the default)
  engine,             ///< an automated engine principal
};

/// "human_interactive", "service" or "engine"; "" for a value outside the enumeration.
[[nodiscard]] constexpr std::string_view to_string(principal_kind k) noexcept {
  switch (k) {
    case principal_kind::human_interactive: return "human_interactive";
    case principal_kind::service: return "service";
    case principal_kind::engine: return "engine";
  }
  return {};
}

/// What the host knows about a request beyond its principal (its own session, an mTLS
/// identity), handed in with the principal (docs/http.md#handing-in-the-principal). Opaque to
/// mcpcore, which only carries it: the host derives its own type and a tool handler reads it back
/// with `dynamic_cast` (`dynamic_cast<const my_context*>(ctx.caller().context.get())`).
///
/// Immutable once handed in (it is shared as `const` between every copy of the principal, on
/// any thread): a derived type that changes after construction synchronises itself.
struct MCPCORE_API host_context {
  virtual ~host_context() = default;

 protected:
  host_context() = default;
  host_context(const host_context&) = default;
  host_context(host_context&&) = default;
  host_context& operator=(const host_context&) = default;
  host_context& operator=(host_context&&) = default;
};

/// Who is calling, as the authenticator established it or the host handed it in.
///
/// A plain value: copy it freely (a copy shares `context`); it is not synchronised.
struct principal {
  /// Stable identifier (audit rows, approval submitter binding). Never empty for a real caller.
  std::string id{};
  /// The MCP tier of the credential; "" means "not an MCP token" (the tier layer then defers
  /// entirely to RBAC, docs/security.md#principals-and-tiers).
  std::string tier{};
  /// What kind of party this is.
  principal_kind kind = principal_kind::service;
  /// A name for people (approval pages); not used for decisions.
  std::string display_name{};
  /// Role names, matched by `role_table_authorizer`.
  std::vector<std::string> roles{};
  /// The authenticator vouches for a strong, recent authentication (required to approve).
  bool assured = false;
  /// The host's own context of the request (`host_context`); null when there is none. Never
  /// read by mcpcore, never written to audit rows; `authenticator::revalidate` sees it.
  std::shared_ptr<const host_context> context{};
  /// The OAuth scopes the credential grants, as the access token listed them; empty for a
  /// credential that is not an OAuth token. A tools/call the tier gate refuses names the scope
  /// that would allow it (docs/oauth.md#step-up).
  std::vector<std::string> scopes{};
  /// When the credential stops standing (an access token's `exp`); `max()` when it does not
  /// expire. The OAuth authenticators' `revalidate` says `revoked` once it has passed.
  std::chrono::system_clock::time_point expires = std::chrono::system_clock::time_point::max();
};

/// The authenticator's answer when a held-open stream re-checks its principal
/// (docs/sessions.md#credential-re-validation).
enum class credential_verdict : std::uint8_t {
  valid,          ///< authoritative yes
  valid_stale,    ///< yes, from a cache at most `max_staleness` old
  revoked,        ///< authoritative no: close `credential_revoked` now
  indeterminate,  ///< the auth backend cannot answer (not a revocation): grace applies
};

/// The tier layer's verdict (docs/security.md#principals-and-tiers).
enum class tier_decision : std::uint8_t {
  deny,                 ///< refused (-32004)
  allow,                ///< proceeds to RBAC
  allow_with_approval,  ///< proceeds only through the approval ticket machine (docs/approvals.md)
};

/// "deny", "allow" or "allow_with_approval"; "" for a value outside the enumeration.
[[nodiscard]] constexpr std::string_view to_string(tier_decision d) noexcept {
  switch (d) {
    case tier_decision::deny: return "deny";
    case tier_decision::allow: return "allow";
    case tier_decision::allow_with_approval: return "allow_with_approval";
  }
  return {};
}

/// The tier gate (docs/plugins.md `tier_policy`, docs/design.md#the-toolscall-pipeline,
/// docs/security.md#principals-and-tiers).
///
/// `p.decide(tier, securable, op)` says whether a credential of `tier` may perform `op` on
/// `securable` at the tier layer, and whether it must go through approval.
///
/// Semantic requirements (not checked by the compiler):
/// 1. Pure and deterministic: the verdict depends only on the three arguments (and on state fixed
///    before the policy is handed to the server).
/// 2. Thread-safe: called concurrently from any thread through a `const` reference.
/// 3. Fail closed: a tier the policy does not know yields `deny`.
/// 4. Cheap and non-blocking: it runs on every `tools/call`.
///
/// The tier gate runs before RBAC; an `allow` is not a grant, only "not refused here".
///
/// @see yuzu_tier_policy, open_tier_policy, docs/plugins.md
template <class P>
concept tier_policy = requires(const P& p, std::string_view tier, std::string_view securable, operation op) {
  // The verdict for one (tier, securable, operation); must not throw.
  { p.decide(tier, securable, op) } noexcept -> std::same_as<tier_decision>;
};

/// Yuzu's compiled-in tier table (docs/security.md#principals-and-tiers), exactly.
///
/// | tier | allowed | through approval |
/// |---|---|---|
/// | "" (not an MCP token) | everything (RBAC decides) | nothing |
/// | "readonly" | `Read` on any securable | nothing |
/// | "operator" | `Read`; Tag:Write, Tag:Delete, Execution:Execute, ApiToken:Rotate | Tag:Delete |
/// | "supervised" | everything | Execution:Execute, any *:Delete, Policy:Write, Security:Write, Security:Execute, UserManagement:Write, ManagementGroup:Write |
/// | anything else | nothing | - |
///
/// ApiToken:Rotate is never routed through approval (self-service, authority-preserving).
/// Tier names and securables are compared exactly (case-sensitive).
///
/// Stateless; thread-safe.
struct yuzu_tier_policy {
  /// The verdict of the table above.
  [[nodiscard]] MCPCORE_DECL tier_decision decide(std::string_view tier, std::string_view securable,
                                                  operation op) const noexcept;
  /// Whether `tier` is one of "", "readonly", "operator", "supervised".
  [[nodiscard]] MCPCORE_DECL static bool known_tier(std::string_view tier) noexcept;
};

/// Allows everything and never asks for approval: for hosts without tiers, where RBAC alone
/// decides.
///
/// Stateless; thread-safe.
struct open_tier_policy {
  /// Always `tier_decision::allow`.
  [[nodiscard]] tier_decision decide(std::string_view /*tier*/, std::string_view /*securable*/,
                                     operation /*op*/) const noexcept {
    return tier_decision::allow;
  }
};

/// Role-based access control (docs/plugins.md `authorizer`, docs/design.md#the-toolscall-pipeline),
/// consulted after the tier gate.
///
/// `a.allowed(who, securable, op)` says whether `who` may perform `op` on `securable`.
///
/// Semantic requirements (not checked by the compiler):
/// 1. Thread-safe: called concurrently from any thread through a `const` reference.
/// 2. Deterministic for a given principal and authorization state (a model may consult state that
///    changes, such as a role store, as long as each call is safe).
/// 3. Fail closed: an unknown principal, role or securable yields `false`.
/// 4. May throw (the server treats an exception as `false` and records the fault), but should
///    not: a denial is `false`, not an exception.
///
/// @see allow_all_authorizer, role_table_authorizer, docs/plugins.md
template <class A>
concept authorizer = requires(const A& a, const principal& who, std::string_view securable, operation op) {
  // Whether `who` may perform `op` on `securable`.
  { a.allowed(who, securable, op) } -> std::same_as<bool>;
};

/// Grants everything: for hosts where the tier gate (or nothing) is the whole policy.
///
/// Stateless; thread-safe.
struct allow_all_authorizer {
  /// Always `true`.
  [[nodiscard]] bool allowed(const principal& /*who*/, std::string_view /*securable*/,
                             operation /*op*/) const noexcept {
    return true;
  }
};

/// A static role table: `grant(role, securable, op)` entries; `securable` "*" matches any
/// securable.
///
/// `allowed(who, s, op)` is true when any of `who.roles` has a grant for (`s` or "*", `op`).
/// Role names and securables are compared exactly (case-sensitive). A grant never implies
/// another operation (Write does not imply Read).
///
/// @par Thread safety
/// Build the table (`grant`) before handing it to the server; afterwards it is only read, and
/// `allowed` may be called concurrently. `grant` must not race with anything.
///
/// @par Complexity
/// `allowed` is O(roles × grants); tables are expected to be small (tens of grants).
class role_table_authorizer {
 public:
  /// Adds a grant; a grant already present is not added twice. Returns `*this` for chaining.
  MCPCORE_DECL role_table_authorizer& grant(std::string role, std::string securable, operation op);

  /// Whether any role of `who` holds a grant for (`securable` or "*", `op`).
  [[nodiscard]] MCPCORE_DECL bool allowed(const principal& who, std::string_view securable,
                                          operation op) const noexcept;

  /// How many distinct grants the table holds.
  [[nodiscard]] std::size_t size() const noexcept { return grants_.size(); }

 private:
  struct entry {
    std::string role;
    std::string securable;
    operation op;
  };
  std::vector<entry> grants_;
};

namespace detail {
// Type erasure of an `authorizer`, shared by the server and the approval endpoint.
struct MCPCORE_API authorizer_base {
  virtual ~authorizer_base() = default;
  virtual bool allowed(const principal& who, std::string_view securable, operation op) const = 0;
};
template <class A>
struct authorizer_model final : authorizer_base {
  explicit authorizer_model(A a) : a_(std::move(a)) {}
  bool allowed(const principal& w, std::string_view s, operation op) const override { return a_.allowed(w, s, op); }
  A a_;
};
}  // namespace detail

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/governance/impl/policy.ipp>
#endif

#endif  // MCPCORE_POLICY_HPP
