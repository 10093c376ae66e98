// SPDX-License-Identifier: Apache-2.0
// mcpcore-host: an MCP server for the machine it runs on (the project's main job,
// docs/host-server.md).
//
// Streamable HTTP on 127.0.0.1 by default, or stdio (`--stdio`) for desktop clients. Read-only
// tools over the host's real state, tags kept in SQLite, an approval-gated execute_instruction
// over an allow-list (a task when the client asks: MCP tasks, kept in SQLite), resources and
// prompts; tokens and tiers from a token file, or access tokens of an OAuth 2.1 authorization
// server (--oauth-issuer); approvals and audit in SQLite under the data directory.
// `mcpcore-host --help` lists every flag; docs/host-server.md explains them.
#include "../common/atomic_file.hpp"
#include "../common/stop_signals.hpp"
#include "command_runner.hpp"
#include "data_dir.hpp"
#include "db_stores.hpp"
#include "host_tools.hpp"
#include "oauth_setup.hpp"
#include "tag_store.hpp"
#include "token_file.hpp"

#include <mcpcore/dispatch/server.hpp>
#include <mcpcore/dispatch/tasks.hpp>
#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/approval_endpoint.hpp>
#include <mcpcore/governance/approvals_page.hpp>
#include <mcpcore/governance/metrics.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/governance/scopes.hpp>
#include <mcpcore/session/stream_pump.hpp>
#include <mcpcore/stores/memory_task_store.hpp>
#include <mcpcore/stores/sqlite_task_store.hpp>
#include <mcpcore/transport/asio_http_server.hpp>
#include <mcpcore/transport/http_endpoint.hpp>
#include <mcpcore/transport/jwt_authenticator.hpp>
#include <mcpcore/transport/stdio.hpp>
#include <mcpcore/transport/token_authenticator.hpp>
#include <mcpcore/version.hpp>
#include <mcpcore/wire/json_writer.hpp>

#if MCPCORE_HOST_POSTGRES
#  include <mcpcore/session/postgres_event_bridge.hpp>
#endif

#include <CLI/App.hpp>
#include <CLI/CLI.hpp>  // IWYU pragma: keep (Config.hpp and Formatter.hpp define what App.hpp declares)
#include <CLI/Validators.hpp>
#include <fmt/core.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX sigset_t, sigwait
#include <sys/stat.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using mcpcore::transport::token_authenticator;

constexpr std::string_view program = "mcpcore-host";

/// Interval of the maintenance tick: idle sessions, the bridge's sweep, the approval expiry
/// sweep and the token file's change check.
constexpr std::chrono::seconds default_tick_interval{3};
/// Every how many ticks the approval store's expiry sweep runs.
constexpr unsigned approval_expiry_every_ticks = 20;
/// Largest value of --max-tasks and --max-tasks-per-principal (the SQLite store counts its tasks
/// at each creation: keep the total in the thousands).
constexpr std::size_t max_task_cap = 100000;

/// One line on stderr (the host's log), prefixed with the program's name.
template <typename... Args>
void say(fmt::format_string<Args...> format, Args&&... args) {
  fmt::print(stderr, "{}: {}\n", program, fmt::format(format, std::forward<Args>(args)...));
}

/// Everything the command line sets (docs/host-server.md lists each flag).
struct config {
  std::string data_dir;
  std::string token_file;
  std::string allowlist_file;
  bool stdio = false;
  std::string stdio_tier = "operator";
  std::string address{mcpcore::transport::default_listen_address};
  std::uint16_t port = mcpcore::transport::default_listen_port;
  std::string port_file;
  std::string tls_cert;
  std::string tls_key;
  std::vector<std::string> allowed_origins;
  std::vector<std::string> log_files;
  bool journal = true;
  bool read_only = false;
  std::string metrics_prefix = "mcpcore";
  std::chrono::milliseconds tick = default_tick_interval;
  std::chrono::milliseconds heartbeat = mcpcore::default_pump_tick;
  // Both thread counts sized to the machine; at least four handler threads, so that calls of
  // execute_instruction waiting for their commands leave threads for the rest (docs/transport.md#threads).
  mcpcore::transport::asio_http_server_options http;
  mcpcore::http_endpoint_options endpoint;
  mcpcore::approval_options approvals;
  mcpcore::task_options tasks;
  mcpcore_host::runner_options runner;
  mcpcore_host::log_limits log_bounds;
  std::size_t max_tags = mcpcore_host::default_max_tags;
  /// PostgreSQL databases of approvals and audit rows ("": SQLite files in the data directory).
  std::string approvals_db;
  std::string audit_db;
  /// PostgreSQL database whose LISTEN/NOTIFY channel carries list changes and resource updates
  /// between hosts ("": none), and the channel ("": the bridge's default, mcpcore_events).
  std::string events_db;
  std::string events_channel;
  /// This server's name in audit rows ("": `<hostname>:<port>`, or `stdio`).
  std::string server_id;
  /// --oauth-*: access tokens of an authorization server instead of the token file
  /// (docs/host-server.md#with-an-authorization-server).
  mcpcore_host::oauth_settings oauth;
  /// The approvals page (docs/host-server.md#the-approvals-page): on at /approvals unless
  /// --no-approvals-page.
  bool approvals_page = true;
  mcpcore::approvals_page_options page;
};

/// The flags that only mean something with --oauth-issuer.
constexpr std::array<const char*, 6> oauth_dependent_flags = {"--oauth-audience",   "--oauth-scope",
                                                              "--oauth-allow-http", "--oauth-ca-file",
                                                              "--oauth-jwks-min-interval-ms", "--oauth-leeway-s"};

/// What the endpoint needs of an authorization server: the authenticator and the
/// protected-resource metadata (engaged with --oauth-issuer only).
struct oauth_server {
  mcpcore::transport::jwt_authenticator authn;
  mcpcore::protected_resource_options resource;
};

/// Flags for a duration given in milliseconds.
CLI::Option* add_ms(CLI::App& app, const std::string& name, std::chrono::milliseconds& value, const std::string& what) {
  return app
      .add_option_function<std::int64_t>(
          name, [&value](std::int64_t ms) { value = std::chrono::milliseconds{ms}; }, what + " (milliseconds)")
      ->default_str(std::to_string(value.count()))
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{24} * 3600 * 1000));
}

void add_flags(CLI::App& app, config& c) {
  app.add_option("--data-dir", c.data_dir,
                 "Directory of the token file, approvals.db, audit.db, tags.db and tasks.db (created 0700 when "
                 "missing)")
      ->capture_default_str();
  app.add_option("--approvals-db", c.approvals_db,
                 "PostgreSQL database of the approval tickets, shared by several hosts (a libpq connection string "
                 "or postgres:// URI; default: approvals.db in the data directory)");
  app.add_option("--audit-db", c.audit_db,
                 "PostgreSQL database of the audit rows, shared by several hosts (a libpq connection string or "
                 "postgres:// URI; default: audit.db in the data directory)");
  app.add_option("--events-db", c.events_db,
                 "PostgreSQL database whose LISTEN/NOTIFY channel shares list changes and resource updates (tags, "
                 "approval decisions) with the other hosts on it (a libpq connection string or postgres:// URI; "
                 "default: none, events stay on this host)");
  app.add_option("--events-channel", c.events_channel,
                 "The channel of --events-db, the same on every host (1-63 of a-z, 0-9, _; default mcpcore_events)");
  app.add_option("--server-id", c.server_id,
                 "This server's name, stamped on the approval tickets it mints and on every audit row (server=...); "
                 "default <hostname>:<port>, or stdio")
      ->check([](const std::string& v) {
        // At most mcpcore::max_server_id_bytes of printable ASCII (approval_options::server_id), and
        // no blank: the audit row's server=<id> field ends at one.
        return v.empty() || !mcpcore::is_valid_server_id(v) || v.find(' ') != std::string::npos
                   ? fmt::format("1-{} printable ASCII characters, no blanks", mcpcore::max_server_id_bytes)
                   : std::string{};
      });
  app.add_option("--oauth-issuer", c.oauth.issuer,
                 "Accept OAuth 2.1 access tokens (JWTs) of this authorization server instead of the token file: its "
                 "metadata is discovered at start (RFC 8414, then OpenID Connect), its issuer must equal this URL");
  app.add_option("--oauth-audience", c.oauth.audience,
                 "With --oauth-issuer (required): this server's resource identifier, its public MCP URL (e.g. "
                 "https://mcp.example.com/mcp); tokens must carry it in aud");
  app.add_option("--oauth-scope", c.oauth.scopes,
                 "With --oauth-issuer: SCOPE=TIER[:ROLE,...], repeatable, least privilege first (default mcp:read=readonly "
                 "mcp:operate=operator mcp:supervise=supervised); the first is the scope a client asks for first");
  app.add_flag("--oauth-allow-http", c.oauth.allow_http,
               "With --oauth-issuer: reach a loopback authorization server (localhost, 127.0.0.0/8, [::1]) over plain "
               "http:// (tests); refused for any other host");
  app.add_option("--oauth-ca-file", c.oauth.ca_file,
                 "With --oauth-issuer: PEM file of the authorities trusted for the authorization server's certificate "
                 "(default: the system's)")
      ->check(CLI::ExistingFile);
  add_ms(app, "--oauth-jwks-min-interval-ms", c.oauth.jwks_min_interval,
         "With --oauth-issuer: least interval between two key fetches asked for by tokens of an unknown key (rotation)");
  app.add_option_function<std::int64_t>(
         "--oauth-leeway-s", [&c](std::int64_t s) { c.oauth.leeway = std::chrono::seconds{s}; },
         "With --oauth-issuer: clock skew allowed on a token's exp, nbf and iat (seconds)")
      ->default_str(std::to_string(c.oauth.leeway.count()))
      ->check(CLI::Range(std::int64_t{0}, static_cast<std::int64_t>(mcpcore::transport::max_jwt_leeway.count())));
  app.add_option("--token-file", c.token_file,
                 "Bearer tokens and tiers (default <data-dir>/tokens; created on first run with a fresh operator "
                 "token, printed once; must not be readable by group or others)");
  app.add_option("--allowlist", c.allowlist_file,
                 "Commands execute_instruction may run (JSON; default <data-dir>/allowlist.json when present; "
                 "without one the tool is not offered)");
  app.add_flag("--stdio", c.stdio, "Serve MCP on stdin/stdout (desktop clients) instead of HTTP");
  app.add_option("--stdio-tier", c.stdio_tier, "Tier of the local user in --stdio mode")
      ->check(CLI::IsMember({"readonly", "operator", "supervised"}))
      ->capture_default_str();
  app.add_option("--address", c.address, "Address to listen on (loopback by default)")->capture_default_str();
  app.add_option("--port", c.port, "TCP port (0: an ephemeral port)")->capture_default_str();
  app.add_option("--port-file", c.port_file, "Write the bound port to this file once listening");
  app.add_option("--tls-cert", c.tls_cert, "TLS certificate chain (PEM); with --tls-key serves HTTPS")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", c.tls_key, "TLS private key (PEM)")->check(CLI::ExistingFile);
  app.add_option("--allowed-origin", c.allowed_origins,
                 "An Origin allowed besides this server's own loopback origins (repeatable)");
  app.add_option("--cors-origin", c.endpoint.cors.allowed_origins,
                 "Let pages of this exact origin call MCP from a browser (CORS, docs/http.md#cors; repeatable)");
  app.add_option("--log-file", c.log_files,
                 "A log file get_recent_logs may read (repeatable; default: /var/log/syslog and "
                 "/var/log/messages when readable)");
  // Two plain flags, not CLI11's "--journal,!--no-journal": its help prints a negated flag as
  // "--no-journal{false}", which reads as "off by default".
  app.add_flag_callback("--journal", [&c] { c.journal = true; },
                        "Offer the systemd journal when journalctl exists (default: on)");
  app.add_flag_callback("--no-journal", [&c] { c.journal = false; }, "Do not offer the systemd journal");
  app.add_option("--approvals-page", c.page.path,
                 "Path of the approvals page, where approvers sign in and decide in a browser")
      ->capture_default_str();
  app.add_flag_callback("--no-approvals-page", [&c] { c.approvals_page = false; }, "Do not serve the approvals page");
  app.add_option_function<std::int64_t>(
         "--approvals-page-fresh-s", [&c](std::int64_t s) { c.page.fresh_sign_in = std::chrono::seconds{s}; },
         "A decision on the approvals page needs a sign-in younger than this (seconds)")
      ->default_str(std::to_string(c.page.fresh_sign_in.count()))
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{86400}));
  app.add_option_function<std::int64_t>(
         "--approvals-page-idle-s", [&c](std::int64_t s) { c.page.session_idle_timeout = std::chrono::seconds{s}; },
         "An approvals page session unused this long ends (seconds)")
      ->default_str(std::to_string(c.page.session_idle_timeout.count()))
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{86400}));
  app.add_flag("--read-only", c.read_only, "Start in read-only mode: every tool that changes something answers -32004");
  app.add_option("--metrics-prefix", c.metrics_prefix, "Prefix of every metric name")->capture_default_str();
  add_ms(app, "--tick-ms", c.tick, "Maintenance tick: idle sessions, sweeps, token file reload");

  auto& h = c.http;
  app.add_option("--io-threads", h.io_threads, "I/O threads (0: sized to the machine)")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  app.add_option("--handler-threads", h.handler_threads, "Tool handler threads (0: sized to the machine)")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  app.add_option("--handler-queue", h.handler_queue_cap, "Calls waiting for a handler thread before 503")
      ->capture_default_str();
  app.add_option("--max-connections", h.max_connections, "Open connections")->capture_default_str();
  app.add_option("--max-pipelined", h.max_pipelined, "Requests queued per connection")->capture_default_str();
  app.add_option("--max-header-bytes", h.limits.max_header_bytes, "Request head bytes (431 beyond)")
      ->capture_default_str();
  app.add_option("--max-header-count", h.limits.max_header_count, "Header fields (431 beyond)")->capture_default_str();
  app.add_option("--max-target-bytes", h.limits.max_target_bytes, "Request target bytes (414 beyond)")
      ->capture_default_str();
  app.add_option("--max-body-bytes", c.endpoint.max_body_bytes, "Request body bytes (413 beyond)")
      ->capture_default_str();
  add_ms(app, "--header-read-timeout-ms", h.header_read_timeout, "Time to receive a request head");
  add_ms(app, "--body-read-timeout-ms", h.body_read_timeout, "Time to receive a request body");
  add_ms(app, "--idle-timeout-ms", h.idle_timeout, "Keep-alive idle time before the connection closes");
  add_ms(app, "--write-timeout-ms", h.write_timeout, "Time a write may wait for a slow reader");
  add_ms(app, "--shutdown-drain-ms", h.shutdown_drain, "Time live responses get to flush on shutdown");
  add_ms(app, "--close-linger-ms", h.close_linger, "Time a closing connection keeps reading so the client sees its answer");
  app.add_option("--stream-queue-bytes", h.stream_queue_bytes, "Socket send buffer of a streaming connection (0: the system's)")
      ->capture_default_str();

  auto& s = c.endpoint.session;
  app.add_option("--max-sessions", s.max_sessions, "Sessions in total")->capture_default_str();
  app.add_option("--max-sessions-per-principal", s.max_sessions_per_principal, "Sessions per principal")
      ->capture_default_str();
  add_ms(app, "--session-idle-ttl-ms", s.idle_ttl, "Idle time after which a session ends");
  app.add_option("--ring-frames", s.stream.ring_frames, "Replay ring frames per session")->capture_default_str();
  app.add_option("--ring-bytes", s.stream.ring_bytes, "Replay ring bytes per session")->capture_default_str();
  app.add_option("--stream-budget", c.endpoint.budget.global_cap, "Held-open responses in total")
      ->capture_default_str();
  app.add_option("--get-streams-per-principal", s.stream.get_streams_per_principal,
                 "Open GET streams per principal")
      ->capture_default_str();
  app.add_option("--stream-queue-frames", s.stream.sink_queue_frames,
                 "Frames queued for a slow reader before the oldest are dropped")
      ->capture_default_str();
  add_ms(app, "--heartbeat-ms", c.heartbeat, "Stream tick: heartbeats, credential re-checks, response cap");
  add_ms(app, "--sse-retry-ms", c.endpoint.sse_retry, "The retry: field of the priming event (client reconnect delay)");
  add_ms(app, "--revalidation-grace-ms", c.endpoint.get_stream.revalidation.grace,
         "How long a stream stays open while the token file cannot vouch for its principal");
  app.add_flag("--require-session", c.endpoint.require_session,
               "Answer 400 to a POST without Mcp-Session-Id instead of serving it statelessly");
  app.add_flag("!--no-streamed-post", c.endpoint.streamed_post,
               "Never answer a POST with an SSE stream (progress goes to the GET stream)");
  add_ms(app, "--post-response-cap-ms", c.endpoint.post_stream.response_cap, "Longest streamed POST response");
  app.add_option("--bridge-records", c.endpoint.bridge.max_records, "Progress records in total")->capture_default_str();
  app.add_option("--parked-pressure-threshold", c.endpoint.bridge.parked_pressure_threshold,
                 "Parked progress records before the sweep settles the oldest")
      ->capture_default_str();
  app.add_flag("--legacy-final-members", c.endpoint.bridge.legacy_final_members,
               "Also put status, execution_id and the structured members at the top of a detached call's final "
               "(the older shape; HTTP only)");

  auto& a = c.approvals;
  app.add_option("--approvals-per-submitter", a.max_pending_per_submitter, "Pending approval tickets per submitter")
      ->capture_default_str();
  app.add_option("--approvals-global", a.max_pending_global, "Pending approval tickets in total")
      ->capture_default_str();

  auto& r = c.runner;
  app.add_option("--max-running-commands", r.max_concurrent, "Commands running at once")->capture_default_str();
  app.add_option("--max-output-bytes", r.max_output_bytes, "Output kept per execution (beyond: truncated)")
      ->capture_default_str();
  app.add_option("--max-retained-executions", r.max_retained, "Finished executions kept for get_execution_status")
      ->capture_default_str();
  app.add_option("--max-retained-per-principal", r.max_retained_per_principal,
                 "Finished executions kept per principal (one principal's runs never push out another's)")
      ->capture_default_str();
  app.add_option("--max-output-line-bytes", r.max_line_bytes, "Longest output line in a progress notification")
      ->capture_default_str();
  app.add_option("--max-progress-lines", r.max_reported_lines, "Output lines reported as progress per execution")
      ->capture_default_str();
  add_ms(app, "--command-kill-grace-ms", r.kill_grace, "After a command's timeout: SIGTERM, then SIGKILL after this");
  add_ms(app, "--command-shutdown-grace-ms", r.shutdown_grace, "On shutdown: SIGTERM to running commands, then SIGKILL");
  auto& t = c.tasks;
  app.add_option("--max-tasks-per-principal", t.max_per_principal,
                 "MCP tasks one principal may hold, finished ones included until their ttl")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, max_task_cap));
  app.add_option("--max-tasks", t.max_total, "MCP tasks held in all")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, max_task_cap));
  add_ms(app, "--task-ttl-ms", t.default_ttl, "How long a task and its result are kept when the client names no ttl");
  add_ms(app, "--max-task-ttl-ms", t.max_ttl, "Longest task ttl a client may ask for (longer requests are cut)");
  app.add_option("--max-tags", c.max_tags, "Tags this host may carry")->capture_default_str();
  add_ms(app, "--journal-timeout-ms", c.log_bounds.journal_timeout, "Longest journalctl run");
  app.add_option("--log-scan-bytes", c.log_bounds.max_scan_bytes, "Bytes of a log read per call")
      ->capture_default_str();
}

/// Why the task flags cannot work together, or "" (docs/host-server.md#flags): every ttl lies
/// within [the library's shortest ttl, --max-task-ttl-ms].
std::string task_flags_problem(const mcpcore::task_options& t) {
  if (t.max_ttl < t.min_ttl) {
    return fmt::format("--max-task-ttl-ms ({}) must be at least {} (the shortest task ttl)", t.max_ttl.count(),
                       t.min_ttl.count());
  }
  if (t.default_ttl < t.min_ttl || t.default_ttl > t.max_ttl) {
    return fmt::format("--task-ttl-ms ({}) must lie between {} and --max-task-ttl-ms ({})", t.default_ttl.count(),
                       t.min_ttl.count(), t.max_ttl.count());
  }
  return {};
}

/// Creates the data directory (0700) when missing and proves it writable: a directory on a
/// read-only filesystem, or one this user cannot write, refuses the start with the reason.
bool prepare_data_dir(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) {
      say("cannot create the data directory {}: {}", dir, ec.message());
      return false;
    }
    ::chmod(dir.c_str(), S_IRWXU);
  }
  if (!fs::is_directory(dir, ec)) {
    say("the data directory {} is not a directory", dir);
    return false;
  }
  const std::string probe = dir + "/.write-probe";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, S_IRUSR | S_IWUSR);  // NOLINT
  if (fd < 0) {
    const int err = errno;
    say("the data directory {} is not writable{}: {}; pass --data-dir with a writable directory", dir,
        err == EROFS ? " (a read-only filesystem)" : "", std::system_category().message(err));
    return false;
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return true;
}

/// Refuses a token file that group or others may read or write, or that is not a regular file.
bool token_file_permissions_ok(const std::string& path) {
  const auto problem = mcpcore_host::token_file_permission_problem(path);
  if (!problem.empty()) say("{}", problem);
  return problem.empty();
}

std::optional<token_authenticator> load_tokens(const std::string& path) {
  if (!token_file_permissions_ok(path)) return std::nullopt;
  auto loaded = token_authenticator::load(path);
  if (!loaded) {
    say("token file refused: {}", loaded.error().message());  // "<path>:<line>: <reason>"
    return std::nullopt;
  }
  for (const auto& w : loaded->warnings()) say("token file {}: warning: {}", path, mcpcore::transport::to_string(w));
  return std::move(*loaded);
}

/// The token file's modification time, to reload it when it changes.
std::optional<fs::file_time_type> mtime(const std::string& path) {
  std::error_code ec;
  const auto t = fs::last_write_time(path, ec);
  if (ec) return std::nullopt;
  return t;
}

/// The log sources get_recent_logs offers.
std::vector<mcpcore_host::log_source> log_sources(const config& c) {
  std::vector<mcpcore_host::log_source> out;
  std::vector<std::string> files = c.log_files;
  if (files.empty()) {
    for (const char* f : {"/var/log/syslog", "/var/log/messages"}) {
      if (::access(f, R_OK) == 0) files.emplace_back(f);
    }
  }
  out.reserve(files.size() + 1);
  for (const auto& f : files) out.push_back({fs::path{f}.filename().string(), f});
  if (c.journal && (::access("/usr/bin/journalctl", X_OK) == 0 || ::access("/bin/journalctl", X_OK) == 0)) {
    out.push_back({"journal", ""});
  }
  return out;
}

/// How to run mcpcore-admin: the one beside this binary when there is one.
std::string admin_command() {
  std::error_code ec;
  const auto self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto admin = self.parent_path() / "mcpcore-admin";
    if (::access(admin.c_str(), X_OK) == 0) return admin.string();
  }
  return "mcpcore-admin";
}

/// The local user's name, for the stdio principal.
std::string local_user() {
  if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_name != nullptr) return pw->pw_name;
  return std::to_string(::getuid());
}

/// This server's name in audit rows: --server-id, else `<hostname>:<port>` (`stdio` in --stdio mode).
std::string server_id_of(const config& c, std::uint16_t port) {
  if (!c.server_id.empty()) return c.server_id;
  if (c.stdio) return "stdio";
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) name[0] = '\0';
  return fmt::format("{}:{}", name[0] == '\0' ? "localhost" : name.data(), port);
}

/// The bridge of --events-db (docs/host-server.md#several-hosts-on-postgresql): a type that holds
/// nothing in a build without PostgreSQL support.
#if MCPCORE_HOST_POSTGRES
using events_bridge = std::unique_ptr<mcpcore::postgres_event_bridge>;
#else
using events_bridge = std::unique_ptr<int>;
#endif

/// Why --events-db / --events-channel cannot be used, or "" (checked before anything is opened).
std::string events_flags_problem(const config& c) {
  if (c.events_db.empty()) {
    return c.events_channel.empty() ? std::string{} : std::string{"--events-channel needs --events-db"};
  }
  if (!mcpcore_host::postgres_available) return mcpcore_host::postgres_unavailable("--events-db");
  return {};
}

/// Whether this build has mcpcore::oauth (cjose, cpp-httplib): without it --oauth-issuer refuses.
#if MCPCORE_HOST_OAUTH
constexpr bool oauth_available = true;
#else
constexpr bool oauth_available = false;
#endif

/// Why the --oauth-* flags cannot be used as given, or "" (checked before anything is opened).
std::string oauth_flags_problem(const CLI::App& app, const config& c) {
  const bool issuer = !c.oauth.issuer.empty();
  for (const char* flag : oauth_dependent_flags) {
    if (app.count(flag) == 0) continue;
    if (!issuer) return fmt::format("{} needs --oauth-issuer", flag);
  }
  if (!issuer) return {};
  if (c.stdio) {
    return "--oauth-* flags do not apply to --stdio (stdio carries no bearer token: the caller is the "
           "local user)";
  }
  if (!c.token_file.empty()) {
    return "--token-file and --oauth-issuer exclude each other (an authorization server replaces the "
           "token file)";
  }
  if (c.oauth.audience.empty()) {
    return "--oauth-issuer needs --oauth-audience (this server's public MCP URL, the tokens' aud)";
  }
  if (!oauth_available) {
    return "--oauth-issuer: this mcpcore-host was built without OAuth support (mcpcore::oauth needs cjose and "
           "cpp-httplib: Debian libcjose-dev, libcpp-httplib-dev)";
  }
  return {};
}

/// The scope map of the --oauth-scope flags (nullopt without --oauth-issuer); false after saying why.
bool oauth_scope_map([[maybe_unused]] const config& c, [[maybe_unused]] std::optional<mcpcore::scope_map>& out) {
  if (c.oauth.issuer.empty()) return true;
#if MCPCORE_HOST_OAUTH
  auto scopes = mcpcore_host::scope_map_of(c.oauth.scopes);
  if (!scopes) {
    say("{}", scopes.error());
    return false;
  }
  out = std::move(*scopes);
  return true;
#else
  return false;
#endif
}

/// Discovers the authorization server of --oauth-issuer and starts the JWT authenticator (nothing
/// without the flag); false after saying why.
bool start_oauth([[maybe_unused]] const config& c, const std::optional<mcpcore::scope_map>& scopes,
                 [[maybe_unused]] std::optional<oauth_server>& out) {
  if (!scopes) return true;
#if MCPCORE_HOST_OAUTH
  auto authn = mcpcore_host::make_oauth_authenticator(c.oauth, *scopes, mcpcore_host::oauth_fetcher(c.oauth));
  if (!authn) {
    say("{}", authn.error());
    return false;
  }
  if (authn->stats().keys == 0) {
    say("warning: the authorization server's keys could not be loaded yet; every access token is refused until a "
        "refresh succeeds");
  }
  std::string names;
  for (const auto& g : scopes->grants()) names += (names.empty() ? "" : " ") + g.scope;
  say("access tokens of {} for {} (scopes: {})", c.oauth.issuer, c.oauth.audience, names);
  out.emplace(oauth_server{.authn = std::move(*authn),
                           .resource = mcpcore_host::protected_resource_of(c.oauth, *scopes)});
  return true;
#else
  return false;
#endif
}

/// Opens the bridge of --events-db on `srv` (none without the flag); false after saying why.
bool open_events_bridge([[maybe_unused]] const config& c, [[maybe_unused]] mcpcore::server& srv,
                        [[maybe_unused]] events_bridge& out) {
  if (c.events_db.empty()) return true;
#if MCPCORE_HOST_POSTGRES
  mcpcore::postgres_event_bridge_options o;
  if (!c.events_channel.empty()) o.channel = c.events_channel;
  auto bridge = mcpcore::postgres_event_bridge::open(srv, c.events_db, o);
  if (!bridge) {
    // The message never repeats the connection string, which may hold a password.
    say("cannot share events through the PostgreSQL database of --events-db (channel {}): {}", o.channel,
        bridge.error().message());
    return false;
  }
  say("sharing list changes and resource updates on PostgreSQL channel {} (origin {})", o.channel,
      (*bridge)->origin());
  out = std::move(*bridge);
  return true;
#else
  say("{}", mcpcore_host::postgres_unavailable("--events-db"));
  return false;
#endif
}

/// The host's stores and services, opened from the data directory (or PostgreSQL).
struct host_services {
  mcpcore_host::data_paths paths;
  mcpcore_host::approval_db approval_store;
  mcpcore_host::audit_db audit;
  mcpcore_host::tag_store tags;
  std::optional<mcpcore_host::allowlist> commands;
  /// The MCP tasks of the HTTP server (`tasks.db`); none in --stdio mode, whose tasks live in
  /// memory (docs/host-server.md#commands-as-tasks).
  std::optional<mcpcore::sqlite_task_store> tasks;
};

/// Opens the stores under `paths` and loads the allow-list; each failure is said, naming the file.
/// Audit rows the PostgreSQL sink (--audit-db) loses after accepting them count in `metrics`'s
/// mcp_audit_write_failures_total (docs/concepts/audit_sink.md#durability-classes): `metrics` must
/// outlive the services.
std::optional<host_services> open_services(const config& c, const mcpcore_host::data_paths& paths,
                                           mcpcore::metrics_registry& metrics) {
  auto store = mcpcore_host::open_approval_db(c.approvals_db, paths.approvals_db, true);
  if (!store) {
    say("{}", store.error());
    return std::nullopt;
  }
  auto audit = mcpcore_host::open_audit_db(c.audit_db, paths.audit_db, server_id_of(c, c.port),
                                           mcpcore_host::audit_lost_rows(metrics));
  if (!audit) {
    say("{}", audit.error());
    return std::nullopt;
  }
  auto tags = mcpcore_host::tag_store::open(paths.tags_db, c.max_tags);
  if (!tags) {
    say("{}", tags.error());
    return std::nullopt;
  }
  std::optional<mcpcore::sqlite_task_store> tasks;
  if (!c.stdio) {
    auto opened = mcpcore::sqlite_task_store::open(paths.tasks_db);
    if (!opened) {
      say("cannot open the tasks database {}: {}", paths.tasks_db, opened.error().message());
      return std::nullopt;
    }
    tasks.emplace(std::move(*opened));
  }
  std::optional<mcpcore_host::allowlist> commands;
  std::string allow = c.allowlist_file;
  if (allow.empty() && ::access(paths.allowlist.c_str(), F_OK) == 0) allow = paths.allowlist;
  if (!allow.empty()) {
    auto list = mcpcore_host::allowlist::load(allow);
    if (!list) {
      say("allow-list {}: {}", allow, list.error());
      return std::nullopt;
    }
    commands.emplace(std::move(*list));
  }
  return host_services{paths,        std::move(*store),    std::move(*audit),
                       std::move(*tags), std::move(commands), std::move(tasks)};
}

/// The server health document (`host://server/health`).
std::string health_json(const std::chrono::steady_clock::time_point started, const mcpcore_host::command_runner& runner,
                        mcpcore::approval_service& approvals, const bool http) {
  std::string out;
  mcpcore::json::writer w{out};
  const auto up = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started);
  w.begin_object()
      .member("server", program)
      .member("version", MCPCORE_VERSION_STRING)
      .member("transport", http ? "streamable-http" : "stdio")
      .member("uptime_seconds", static_cast<std::int64_t>(up.count()))
      .member("running_commands", static_cast<std::uint64_t>(runner.running_count()));
  if (auto pending = approvals.pending(mcpcore::approval_options{}.max_pending_global)) {
    w.member("pending_approvals", static_cast<std::uint64_t>(pending->size())).member("approval_store", "ok");
  } else {
    w.member("approval_store", "unavailable: " + pending.error().message());
  }
  w.end_object();
  return out;
}

int serve_stdio(const config& c, mcpcore::server& srv) {
  mcpcore::principal caller;
  caller.id = "local:" + local_user();
  caller.tier = c.stdio_tier;
  caller.kind = mcpcore::principal_kind::service;
  caller.display_name = "local user (stdio)";
  say("serving MCP on stdin/stdout as {} (tier {})", caller.id, caller.tier);
  mcpcore::stdio_transport transport{srv, caller};
  return transport.run();
}

int serve_http(const config& c, mcpcore::server& srv, mcpcore::approval_service& approvals, host_services& s,
               mcpcore::metrics_registry& metrics, mcpcore_host::command_runner& runner,
               const std::string& first_token, const std::optional<oauth_server>& oauth) {
  // With an authorization server there is no token file (nor its reload on the tick).
  std::optional<token_authenticator> tokens;
  if (!oauth) {
    tokens = load_tokens(s.paths.token_file);
    if (!tokens) return 1;
  }
  mcpcore::approval_endpoint approval_routes{approvals, mcpcore_host::host_authorizer{}};
  approval_routes.set_audit(s.audit);  // reviews over HTTP are audited like mcpcore-admin's
  const auto stop_signals = mcpcore_examples::block_stop_signals();

  auto http_options = c.http;
  http_options.address = c.address;
  http_options.port = c.port;
  http_options.limits.max_body_bytes = c.endpoint.max_body_bytes;
  http_options.tick_interval = c.tick;  // the Asio server ticks the endpoint (sessions, sweeps)
  if (!c.tls_cert.empty() || !c.tls_key.empty()) {
    if (c.tls_cert.empty() || c.tls_key.empty()) {
      say("--tls-cert and --tls-key go together");
      return 1;
    }
    http_options.tls = mcpcore::transport::tls_options{.cert_chain_file = c.tls_cert, .private_key_file = c.tls_key};
  }
  // This server's own loopback origin passes by default (allow_loopback_same_origin); the flag
  // adds others.
  auto endpoint_options = c.endpoint;
  endpoint_options.allowed_origins = c.allowed_origins;
  std::unique_ptr<mcpcore::http_endpoint> endpoint_holder;
  try {
#if MCPCORE_HOST_OAUTH
    if (oauth) {
      endpoint_options.protected_resource = oauth->resource;
      endpoint_holder = std::make_unique<mcpcore::http_endpoint>(srv, oauth->authn, endpoint_options);
    } else
#endif
    {
      endpoint_holder = std::make_unique<mcpcore::http_endpoint>(srv, *tokens, endpoint_options);
    }
  } catch (const std::invalid_argument& e) {
    say("refused to start: {}", e.what());  // names the option (an --oauth-audience it cannot serve, ...)
    return 1;
  }
  mcpcore::http_endpoint& endpoint = *endpoint_holder;
  // The approvals page signs approvers in with the same credentials as MCP requests.
  std::unique_ptr<mcpcore::approvals_page> page;
  if (c.approvals_page) {
    auto page_options = c.page;
    page_options.secure = http_options.tls.has_value();
    try {
#if MCPCORE_HOST_OAUTH
      if (oauth) {
        page = std::make_unique<mcpcore::approvals_page>(approvals, oauth->authn, mcpcore_host::host_authorizer{},
                                                          page_options);
      } else
#endif
      {
        page = std::make_unique<mcpcore::approvals_page>(approvals, *tokens, mcpcore_host::host_authorizer{},
                                                          page_options);
      }
    } catch (const std::invalid_argument& e) {
      say("refused to start: --approvals-page: {}", e.what());
      return 1;
    }
    page->set_audit(s.audit);  // decisions on the page are audited like the other surfaces', via=web
    endpoint.set_approvals_page(*page);
  }
  mcpcore::transport::asio_http_server http{endpoint, http_options};
  endpoint.set_approvals(approval_routes);
  endpoint.set_metrics(metrics);
  endpoint.set_audit(s.audit);
  std::atomic<bool> ready{true};
  endpoint.set_readiness([&ready] { return ready.load(std::memory_order_relaxed); });
  if (auto started = http.start(); !started) {
    say("cannot listen on {}:{}: {}", c.address, c.port, started.error().message());
    return 1;
  }
  const std::string port = std::to_string(http.port());
  if (c.server_id.empty() && c.port == 0) {
    // Now known: the audit rows and the tickets minted from now on name it (the approval service
    // was made with no server id: see run()).
    const std::string id = server_id_of(c, http.port());
    s.audit.set_server_id(id);
    s.approval_store.set_late_server_id(id);
  }
  const std::string scheme = http_options.tls ? "https" : "http";

  // The host's own tick: approval expiry, token file reload on change (no token file with
  // --oauth-issuer: the JWT authenticator refreshes its keys on its own thread).
  std::jthread ticker{[&approvals, &tokens, &c, path = s.paths.token_file](const std::stop_token& stop) {
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock lock{m};
    auto seen = mtime(path);
    unsigned n = 0;
    while (!cv.wait_for(lock, stop, c.tick, [] { return false; }) && !stop.stop_requested()) {
      if (++n % approval_expiry_every_ticks == 0) {
        if (auto expired = approvals.expire(); !expired) say("approval expiry sweep failed: {}", expired.error().message());
      }
      if (!tokens) continue;
      if (const auto now = mtime(path); now != seen) {
        seen = now;
        if (!token_file_permissions_ok(path)) {
          say("token file changed but refused; the previous tokens stay in force");
        } else if (auto r = tokens->reload(); !r) {
          say("token file reload refused, previous tokens kept: {}", r.error().message());
        } else {
          say("token file reloaded: {} entries", tokens->size());
        }
      }
    }
  }};

  const auto stop_all = [&] {
    ready.store(false);
    ticker.request_stop();
    ticker.join();
    // Running commands end first (their terminals reach the bridge while it still exists),
    // then initialize answers 503 and every stream closes session_terminated.
    runner.shutdown();
    endpoint.begin_shutdown();
    http.stop();  // lets them flush, closes the sockets, joins the threads
  };
  if (!c.port_file.empty() && !mcpcore_examples::write_file_atomically(c.port_file, port + "\n")) {
    say("cannot write the port file {}", c.port_file);
    stop_all();
    return 1;
  }
  // An IPv6 literal goes in brackets in a URL.
  const std::string authority = c.address.find(':') != std::string::npos ? fmt::format("[{}]:{}", c.address, port)
                                                                          : fmt::format("{}:{}", c.address, port);
  const std::string url = fmt::format("{}://{}/mcp", scheme, authority);
  fmt::print("mcpcore-host {} listening on {}\n", MCPCORE_VERSION_STRING, url);
  if (page) fmt::print("Approvers sign in at {}://{}{}\n", scheme, authority, c.page.path);
  if (oauth) {
    fmt::print("Connect an MCP client to {}: it gets its access token from the authorization server {} (resource {}; "
               "metadata at {}://{}/.well-known/oauth-protected-resource).\n",
               url, c.oauth.issuer, c.oauth.audience, scheme, authority);
    if (c.oauth.audience != url) {
      say("note: --oauth-audience {} is not the URL listened on ({}): clients must reach this server at the "
          "audience's URL (a proxy in front)",
          c.oauth.audience, url);
    }
  } else if (!first_token.empty()) {
    fmt::print(
        "\nA token file was created at {0} with one operator token. It is shown only now:\n\n    {1}\n\n"
        "Connect an MCP client to {2} with the header\n    Authorization: Bearer {1}\n"
        "For example: npx @modelcontextprotocol/inspector, transport \"Streamable HTTP\", URL {2},\n"
        "and the header above. Mint more tokens (other tiers, approvers) with `mcpcore-admin token mint`.\n",
        s.paths.token_file, first_token, url);
  } else {
    fmt::print("Connect an MCP client to {} with `Authorization: Bearer <token>` (tokens: {}; mint one with "
               "`mcpcore-admin token mint`).\n",
               url, s.paths.token_file);
  }
  fmt::print("Health: {0}://{1}/healthz  Metrics: {0}://{1}/metrics\n", scheme, authority);
  fmt::print("Approvals, audit and tokens: {} --data-dir {} pending|approve|reject|audit|token\n", admin_command(),
             c.data_dir);
  std::fflush(stdout);

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  say("signal {}, stopping", signal_number);
  stop_all();
  return 0;
}

int run(int argc, char** argv) {
  CLI::App app{"An MCP server for the machine it runs on (Streamable HTTP on 127.0.0.1, or stdio)",
               std::string{program}};
  config c;
  c.data_dir = mcpcore_host::default_data_dir();
  add_flags(app, c);
  CLI11_PARSE(app, argc, argv);
  c.endpoint.get_stream.tick = c.heartbeat;
  c.endpoint.post_stream.tick = c.heartbeat;
  c.endpoint.post_stream.revalidation = c.endpoint.get_stream.revalidation;
  if (const auto problem = task_flags_problem(c.tasks); !problem.empty()) {
    say("{}", problem);
    return 1;
  }
  if (const auto problem = events_flags_problem(c); !problem.empty()) {
    say("{}", problem);
    return 1;
  }
  if (const auto problem = oauth_flags_problem(app, c); !problem.empty()) {
    say("{}", problem);
    return 1;
  }
  std::optional<mcpcore::scope_map> oauth_scopes;
  if (!oauth_scope_map(c, oauth_scopes)) return 1;
  std::optional<oauth_server> oauth;
  if (!start_oauth(c, oauth_scopes, oauth)) return 1;

  ::umask(S_IRWXG | S_IRWXO);  // the databases and the token file are the server user's alone
  if (!prepare_data_dir(c.data_dir)) return 1;
  auto paths = mcpcore_host::data_paths::in(c.data_dir);
  if (!c.token_file.empty()) paths.token_file = c.token_file;
  std::string first_token;
  if (!c.stdio && !oauth && ::access(paths.token_file.c_str(), F_OK) != 0) {
    auto token = mcpcore_host::create_first_run_token_file(paths.token_file);
    if (!token) {
      say("{}", token.error());
      return 1;
    }
    first_token = std::move(*token);
  }
  // Before the services: the PostgreSQL audit sink counts its lost rows in it until it closes.
  mcpcore::metrics_registry metrics{c.metrics_prefix};
  auto services = open_services(c, paths, metrics);
  if (!services) return 1;
  host_services& s = *services;

  // --stdio: tasks in memory. A desktop client starts one --stdio process per conversation on the
  // same data directory, and a durable store shared by them would let each start abandon the
  // others' running tasks; a stdio task's result cannot outlive its one client anyway.
  mcpcore::memory_task_store stdio_tasks;
  // Every ticket this server mints names it (docs/host-server.md#several-hosts-on-postgresql). An
  // ephemeral port (--port 0 without --server-id) is known only once bound: serve_http then has
  // the store stamp the id on the tickets minted from then on.
  mcpcore::approval_options approval_options = c.approvals;
  if (c.stdio || !c.server_id.empty() || c.port != 0) approval_options.server_id = server_id_of(c, c.port);
  mcpcore::approval_service approvals{s.approval_store, approval_options};
  mcpcore_host::command_runner runner{c.runner};
  const auto started = std::chrono::steady_clock::now();

  mcpcore_host::host_context ctx;
  ctx.tags = &s.tags;
  ctx.runner = &runner;
  ctx.commands = s.commands ? &*s.commands : nullptr;
  ctx.logs = log_sources(c);
  ctx.log_bounds = c.log_bounds;
  ctx.health_json = [started, &runner, &approvals, http = !c.stdio] {
    return health_json(started, runner, approvals, http);
  };
  ctx.approvals = &approvals;  // host://approvals/{id}

  mcpcore::server_builder b{{.name = std::string{program},
                             .version = MCPCORE_VERSION_STRING,
                             .title = "mcpcore host server",
                             .instructions = "Tools over this machine's state (system, memory, filesystems, processes, "
                                             "network, listening sockets, logs), its tags, and execute_instruction for "
                                             "allow-listed commands. Read host://operating-model first: it explains "
                                             "tiers, approvals (-32006: ask a human to approve, then call again with "
                                             "approval_id) and how to follow a running command."}};
  mcpcore_host::declare_host_catalogue(b, ctx);
  // MCP tasks (docs/host-server.md#commands-as-tasks). At build the store's tasks that an earlier
  // run left working become failed ("the server restarted before the task finished"); finished
  // results stay readable until their ttl.
  if (s.tasks) {
    b.tasks(*s.tasks, c.tasks);
  } else {
    b.tasks(stdio_tasks, c.tasks);
  }
  b.policy(mcpcore::yuzu_tier_policy{})
      .authorizer(mcpcore_host::host_authorizer{})
      .audit(s.audit)
      .metrics(metrics)
      .approvals(approvals)
      .approval_tools();
  if (oauth_scopes) b.oauth_scopes(*oauth_scopes);  // step-up: a refusal names the scope to ask for
  auto srv = b.build();
  if (!srv) {
    say("refused to start: {}", srv.error().message());
    return 1;
  }
  for (const auto& w : srv->warnings()) say("warning: {}", w);
  srv->switches().set_read_only(c.read_only);
  // set_tag and delete_tag announce host://tags; with --events-db the bridge carries it (and any list
  // change) to the other hosts, and theirs here. Declared after the server: it closes first.
  ctx.resource_updated = [&s = *srv](std::string_view uri) { s.notify_resource_updated(uri); };
  // Every decision taken here (the HTTP approval routes, the approver tools) announces
  // host://approvals/<id>; the bridge carries it too (docs/host-server.md#approval-tickets-as-resources).
  s.approval_store.set_on_reviewed(mcpcore_host::announce_approval_reviews(*srv));
  events_bridge bridge;
  if (!open_events_bridge(c, *srv, bridge)) {
    s.approval_store.set_on_reviewed({});
    return 1;
  }

  const int rc = c.stdio ? serve_stdio(c, *srv) : serve_http(c, *srv, approvals, s, metrics, runner, first_token, oauth);
  runner.shutdown();
  s.approval_store.set_on_reviewed({});  // the server goes first
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    say("fatal: {}", e.what());
  } catch (...) {
    say("fatal: unknown exception");
  }
  return 1;
}
