// SPDX-License-Identifier: Apache-2.0
// Test archetypes: one minimal conforming type per plug-in concept (docs/plugins.md).
#ifndef MCPCORE_TESTS_ARCHETYPES_HPP
#define MCPCORE_TESTS_ARCHETYPES_HPP

#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/governance/policy.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

// Each archetype provides exactly what its concept's requires-expression asks for, with the
// exact signatures the named-requirements pages list, and nothing else: no default
// constructor beyond the implicit one, no copy beyond the implicit one, no extra members. A
// generic component that compiles against an archetype relies only on the documented
// requirements.
namespace archetypes {

/// Minimal `mcpcore::tier_policy`: a const, noexcept `decide` returning a `tier_decision`.
struct tier_policy {
  mcpcore::tier_decision decide(std::string_view /*tier*/, std::string_view /*securable*/,
                                mcpcore::operation /*op*/) const noexcept {
    return mcpcore::tier_decision::deny;
  }
};

/// Minimal `mcpcore::authorizer`: a const `allowed` returning `bool` (noexcept not required).
struct authorizer {
  bool allowed(const mcpcore::principal& /*who*/, std::string_view /*securable*/,
               mcpcore::operation /*op*/) const {
    return false;
  }
};

/// Minimal `mcpcore::audit_sink`: a non-const `record` returning `bool` (noexcept not required).
struct audit_sink {
  bool record(const mcpcore::audit_record& /*r*/) { return false; }
};

/// Minimal `mcpcore::metrics_sink`: non-const `make_counter` / `make_gauge` (no default argument).
struct metrics_sink {
  mcpcore::counter make_counter(std::string_view /*name*/, std::string_view /*help*/,
                                std::span<const mcpcore::metric_label> /*labels*/) {
    return {};
  }
  mcpcore::gauge make_gauge(std::string_view /*name*/, std::string_view /*help*/,
                            std::span<const mcpcore::metric_label> /*labels*/) {
    return {};
  }
};

/// Minimal `mcpcore::clock_source`: const, noexcept `steady_now` and `system_now`.
struct clock_source {
  std::chrono::steady_clock::time_point steady_now() const noexcept { return {}; }
  std::chrono::system_clock::time_point system_now() const noexcept { return {}; }
};

/// Minimal `mcpcore::approval_store`: six non-const members with the exact result types; every
/// call fails with a permanent error (a store that is never open).
struct approval_store {
  mcpcore::result<mcpcore::approval_mint_result> mint(const mcpcore::approval_mint_request& /*m*/) {
    return std::unexpected{make_error_code(mcpcore::approval_store_errc::closed)};
  }
  mcpcore::result<std::optional<mcpcore::approval_ticket>> get(std::string_view /*id*/) { return std::unexpected{make_error_code(mcpcore::approval_store_errc::closed)}; }
  mcpcore::result<mcpcore::approval_consume_status> consume(const mcpcore::approval_consume_request& /*c*/) {
    return std::unexpected{make_error_code(mcpcore::approval_store_errc::closed)};
  }
  mcpcore::result<mcpcore::approval_review_status> review(const mcpcore::approval_review_request& /*r*/) {
    return std::unexpected{make_error_code(mcpcore::approval_store_errc::closed)};
  }
  mcpcore::result<std::size_t> expire(mcpcore::approval_time /*now*/, std::chrono::milliseconds /*lifetime*/) {
    return std::unexpected{make_error_code(mcpcore::approval_store_errc::closed)};
  }
  mcpcore::result<std::vector<mcpcore::approval_ticket>> pending(std::size_t /*limit*/) { return std::unexpected{make_error_code(mcpcore::approval_store_errc::closed)}; }
};

/// Minimal `mcpcore::approval_precondition_callable`: a const call returning the refusal reason.
struct approval_precondition {
  std::optional<std::string> operator()(const mcpcore::approval_ticket& /*t*/, const mcpcore::principal& /*caller*/,
                                        mcpcore::json::value /*args*/) const {
    return std::nullopt;
  }
};

}  // namespace archetypes

#endif  // MCPCORE_TESTS_ARCHETYPES_HPP
