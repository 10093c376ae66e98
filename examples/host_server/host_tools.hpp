// SPDX-License-Identifier: Apache-2.0
// The tools, resources and prompts of mcpcore-host, declared on a server_builder.
#ifndef MCPCORE_HOST_HOST_TOOLS_HPP
#define MCPCORE_HOST_HOST_TOOLS_HPP

#include <mcpcore/fwd.hpp>
#include <mcpcore/governance/policy.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>


namespace mcpcore_host {

class allowlist;
class command_runner;
class tag_store;

/// Where `get_recent_logs` may read: a named source, either a file or the systemd journal.
struct log_source {
  std::string name;  ///< what the caller names (`source` argument): "syslog", "journal", ...
  std::string path;  ///< the file; empty for the journal
};

/// Bounds of `get_recent_logs` (each settable by flag).
struct log_limits {
  /// How long reading the journal (`journalctl`) may take before it is stopped.
  std::chrono::milliseconds journal_timeout{std::chrono::seconds{10}};
  /// Bytes read from the end of a log file (or captured from the journal) per call.
  std::size_t max_scan_bytes = std::size_t{1} << 20U;
};

/// The `retry_after_ms` poll hint inside `get_execution_status`'s result while the execution
/// runs (docs/errors.md#retry-floors-retryhpp kMcpResultPollRetryMs); omitted once it is terminal.
inline constexpr std::chrono::milliseconds result_poll_retry{2000};

/// What the host's tools work on. Every pointer must outlive the server built from it.
struct host_context {
  tag_store* tags = nullptr;
  command_runner* runner = nullptr;
  /// The commands `execute_instruction` may run; null or empty: the tool is not declared.
  const allowlist* commands = nullptr;
  std::vector<log_source> logs;
  log_limits log_bounds{};
  /// The server health document (`host://server/health`), rendered on each read.
  std::function<std::string()> health_json;
  /// Called with a resource's URI when a tool changed it (`set_tag`, `delete_tag`: `tags_uri`);
  /// the host sets it to `server::notify_resource_updated` once the server is built. May be empty.
  std::function<void(std::string_view)> resource_updated;
  /// The approval service whose tickets `host://approvals/{id}` serves (`approvals_uri_template`);
  /// null: the template is not declared.
  mcpcore::approval_service* approvals = nullptr;
};

/// The resource of this host's tags (JSON, as `get_tags` answers); updated by `set_tag` and
/// `delete_tag` (docs/host-server.md#what-it-offers).
inline constexpr std::string_view tags_uri = "host://tags";

/// The resource template of one approval ticket (docs/host-server.md#approval-tickets-as-resources):
/// the ticket as JSON, readable by its submitter and by approvers only; updated when the ticket is
/// approved or rejected.
inline constexpr std::string_view approvals_uri_template = "host://approvals/{id}";
/// What `approval_uri` puts before the ticket's id.
inline constexpr std::string_view approvals_uri_prefix = "host://approvals/";

/// The URI of ticket `id` under `approvals_uri_template` (`host://approvals/<id>`).
[[nodiscard]] inline std::string approval_uri(std::string_view id) {
  std::string uri{approvals_uri_prefix};
  uri.append(id);
  return uri;
}

/// What the host hands to `approval_db::set_on_reviewed` once its server `s` is built: announces
/// `approval_uri(id)` with `server::notify_resource_updated` for each ticket a review decided
/// (docs/host-server.md#approval-tickets-as-resources). `s` must outlive the function.
[[nodiscard]] std::function<void(std::string_view)> announce_approval_reviews(mcpcore::server& s);

/// Gives `Approval:Approve` (the approver tools, the approval routes) to principals holding the
/// role `approver_role`; every other decision is the tier policy's (mcpcore's Yuzu table). A
/// principal without an MCP tier (a `-` line in the token file) is refused everything: the tier
/// policy would let it through ungated (docs/security.md#principals-and-tiers: RBAC alone decides
/// for non-MCP credentials), and this host has no RBAC of its own to decide with.
struct host_authorizer {
  static constexpr std::string_view approver_role = "approver";
  [[nodiscard]] bool allowed(const mcpcore::principal& who, std::string_view /*securable*/,
                             mcpcore::operation op) const noexcept {
    if (who.tier.empty()) return false;
    if (op != mcpcore::operation::approve) return true;
    for (const auto& r : who.roles) {
      if (r == approver_role) return true;
    }
    return false;
  }
};

/// Declares every tool (host state, tags, execute_instruction, get_execution_status), the
/// resources (`host://server/health`, `host://operating-model`, `host://tags`, and the template
/// `host://approvals/{id}` when `ctx.approvals` is set) and the prompts (`host_health_briefing`,
/// `investigate_incident`).
void declare_host_catalogue(mcpcore::server_builder& b, host_context& ctx);

/// The operating model served as `host://operating-model` (Markdown).
[[nodiscard]] std::string operating_model_markdown();

}  // namespace mcpcore_host

#endif  // MCPCORE_HOST_HOST_TOOLS_HPP
