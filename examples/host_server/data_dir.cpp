// SPDX-License-Identifier: Apache-2.0
#include "data_dir.hpp"

#include <cstdlib>
#include <string>

#include <pwd.h>
#include <unistd.h>

namespace mcpcore_host {

namespace {
/// An environment variable, or "" when unset or empty.
std::string env(const char* name) {
  const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read once at start, before threads
  return v == nullptr ? std::string{} : std::string{v};
}
}  // namespace

std::string default_data_dir() {
  if (auto d = env("MCPCORE_HOST_DATA_DIR"); !d.empty()) return d;
  if (::geteuid() == 0) return "/var/lib/mcpcore-host";
  if (auto xdg = env("XDG_DATA_HOME"); !xdg.empty() && xdg.front() == '/') return xdg + "/mcpcore-host";
  std::string home = env("HOME");
  if (home.empty()) {
    if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_dir != nullptr) home = pw->pw_dir;
  }
  if (home.empty()) home = ".";
  return home + "/.local/share/mcpcore-host";
}

data_paths data_paths::in(const std::string& dir) {
  data_paths p;
  p.dir = dir;
  p.token_file = dir + "/tokens";
  p.approvals_db = dir + "/approvals.db";
  p.audit_db = dir + "/audit.db";
  p.tags_db = dir + "/tags.db";
  p.tasks_db = dir + "/tasks.db";
  p.allowlist = dir + "/allowlist.json";
  return p;
}

}  // namespace mcpcore_host
