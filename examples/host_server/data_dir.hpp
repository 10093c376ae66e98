// SPDX-License-Identifier: Apache-2.0
// Where mcpcore-host and mcpcore-admin keep their files: one data directory.
#ifndef MCPCORE_HOST_DATA_DIR_HPP
#define MCPCORE_HOST_DATA_DIR_HPP

#include <string>

namespace mcpcore_host {

/// The default data directory: `$MCPCORE_HOST_DATA_DIR` when set; otherwise `/var/lib/mcpcore-host`
/// for root, and `$XDG_DATA_HOME/mcpcore-host` (or `~/.local/share/mcpcore-host`) for anyone else.
[[nodiscard]] std::string default_data_dir();

/// The files under a data directory (docs/host-server.md, "Files").
struct data_paths {
  std::string dir;
  std::string token_file;    ///< `tokens`: bearer-token digests and tiers (mode 0600)
  std::string approvals_db;  ///< `approvals.db`: the approval tickets (mcpcore::sqlite_approval_store)
  std::string audit_db;      ///< `audit.db`: the audit trail (mcpcore::sqlite_audit_sink)
  std::string tags_db;       ///< `tags.db`: this host's tags
  std::string tasks_db;      ///< `tasks.db`: the HTTP server's MCP tasks (mcpcore::sqlite_task_store)
  std::string allowlist;     ///< `allowlist.json`: the commands execute_instruction may run (optional)

  /// The paths under `dir`.
  [[nodiscard]] static data_paths in(const std::string& dir);
};

}  // namespace mcpcore_host

#endif  // MCPCORE_HOST_DATA_DIR_HPP
