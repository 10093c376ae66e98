// SPDX-License-Identifier: Apache-2.0
// The allow-list of execute_instruction and the runner that starts its commands (no shell, bounded).
#ifndef MCPCORE_HOST_COMMAND_RUNNER_HPP
#define MCPCORE_HOST_COMMAND_RUNNER_HPP

#include <mcpcore/dispatch/schema.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/wire/json.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mcpcore_host {

// ---- the allow-list ------------------------------------------------------------------------

/// Largest allow-list file `allowlist::load` reads, in bytes.
inline constexpr std::size_t max_allowlist_bytes = std::size_t{1} << 20U;
/// Most commands one allow-list may declare.
inline constexpr std::size_t max_allowlist_commands = 256;
/// Most `fixed_args` one command may declare.
inline constexpr std::size_t max_fixed_args = 64;
/// Longest `fixed_args` element, and longest `program` path, in bytes.
inline constexpr std::size_t max_arg_bytes = 4096;
/// Longest `description` of a command, in bytes.
inline constexpr std::size_t max_description_bytes = 1024;
/// Shortest and longest `timeout_ms` a command may declare, and the timeout of one that declares none.
inline constexpr std::chrono::milliseconds min_command_timeout{100};
inline constexpr std::chrono::milliseconds max_command_timeout{std::chrono::hours{1}};
inline constexpr std::chrono::milliseconds default_command_timeout{std::chrono::seconds{30}};

/// One command `execute_instruction` may run: `program` with `fixed_args`, then the caller's
/// arguments (each checked by the command's `args` schema), without a shell.
struct command_spec {
  /// What callers name (`command` argument): `^[a-z][a-z0-9_]{0,63}$`, unique in its list.
  std::string name;
  /// What it does, for the tool's description (operator-authored).
  std::string description;
  /// Absolute path of an executable regular file; it is `argv[0]` too.
  std::string program;
  /// Arguments placed before the caller's (for example `-la`, `--`).
  std::vector<std::string> fixed_args;
  /// The command's `args` schema as compact JSON text (`{"type":"array","maxItems":0}` when the
  /// allow-list gives none: the command takes no arguments).
  std::string args_schema;
  /// How long the command may run before its process group is stopped (status `timed_out`).
  std::chrono::milliseconds timeout{default_command_timeout};
};

/// The commands `execute_instruction` may run, read from a JSON file:
///
/// @code{.json}
/// {"commands": [{"name": "list_directory", "description": "Lists a directory (ls -la)",
///                "program": "/bin/ls", "fixed_args": ["-la", "--"],
///                "args": {"type": "array", "items": {"type": "string", "pattern": "^/"},
///                         "minItems": 1, "maxItems": 1},
///                "timeout_ms": 10000}]}
/// @endcode
///
/// Top level: `commands` (required array) and `$comment` (an operator's note, ignored). Each
/// entry: `name`, `description` and `program` (required), `fixed_args`, `args`, `timeout_ms` and
/// `$comment` (optional). `args` is a schema of mcpcore's strict subset (docs/schema.md) whose
/// `type` is `array` with string `items` (or `maxItems` 0); it is compiled as the property `args`
/// of a closed object schema. Any other key, a bad value or a broken cap refuses the whole file.
///
/// @par Thread safety
/// Immutable once loaded: every const member may be called concurrently.
class allowlist {
 public:
  /// Reads and checks the allow-list at `path`.
  ///
  /// @returns the list, or an English message naming what is wrong and where (`commands[2]
  ///   ("disk_usage"): program "/bin/dff" does not exist`): an unreadable, non-regular,
  ///   world-writable or oversized (`max_allowlist_bytes`) file, text that is not JSON, an
  ///   unknown key, a missing, duplicate or ill-formed name, a program that is not an absolute,
  ///   normal path (no `.`, `..` or empty components) to an existing executable regular file
  ///   that only its owner and group may write, an args schema that does not compile, a
  ///   timeout outside [`min_command_timeout`, `max_command_timeout`], or more than
  ///   `max_allowlist_commands` commands.
  [[nodiscard]] static mcpcore::result<allowlist, std::string> load(const std::string& path);

  /// Every command, in file order.
  [[nodiscard]] const std::vector<command_spec>& commands() const noexcept { return commands_; }

  /// The command called `name`, or null.
  [[nodiscard]] const command_spec* find(std::string_view name) const noexcept;

  /// Checks a call's `args` (the tool arguments' `args` member: absent means no arguments,
  /// otherwise an array of strings) against the command's schema.
  ///
  /// @returns nullopt when they are acceptable, else an English reason that names the instance
  ///   path (`/args/0`) and the schema's own words, never the caller's text. An unknown command,
  ///   a non-string element and an element holding a NUL character (which no argv can carry) are
  ///   refused too.
  [[nodiscard]] std::optional<std::string> validate_args(std::string_view name, mcpcore::json::value args) const;

 private:
  allowlist() = default;
  std::vector<command_spec> commands_;
  /// `schemas_[i]` checks `{"args": [...]}` for `commands_[i]`.
  std::vector<mcpcore::schema::compiled_schema> schemas_;
};

// ---- executions ----------------------------------------------------------------------------

/// Which pipe a line came from.
enum class output_stream : std::uint8_t { out, err };

/// The state of one execution, as `command_runner::get` and `run_callbacks::on_done` see it.
struct execution_snapshot {
  /// 32 lowercase hex characters from the kernel's CSPRNG.
  std::string id;
  /// The command's allow-list name.
  std::string command;
  /// Who started it (the caller's principal id, as given to `start`).
  std::string submitted_by;
  /// `running`, then one terminal status: `succeeded` (exit code 0), `failed` (another exit code,
  /// or killed by a signal, including at shutdown), `timed_out` (stopped at its timeout) or
  /// `cancelled` (stopped by `command_runner::cancel`).
  std::string status = "running";
  /// The exit code, once the program exited normally.
  std::optional<int> exit_code;
  /// The signal that ended the program, when one did.
  std::optional<int> signal;
  /// stdout and stderr as they arrived (chunk by chunk, interleaved), at most
  /// `runner_options::max_output_bytes`; once terminal a truncated output ends with a note
  /// saying how much was dropped.
  std::string output;
  /// Whether output was dropped because it passed `max_output_bytes`.
  bool truncated = false;
  /// Every byte the program wrote, kept or not.
  std::uint64_t output_bytes = 0;
  /// When it started and, once terminal, when it ended.
  std::chrono::system_clock::time_point started;
  std::optional<std::chrono::system_clock::time_point> finished;
  /// How long it ran (so far, while it runs), on the steady clock.
  std::chrono::milliseconds duration{0};
};

/// Whether `status` is terminal (`succeeded`, `failed`, `timed_out`, `cancelled`).
[[nodiscard]] bool is_terminal(std::string_view status) noexcept;

/// The snapshot as the JSON object of `get_execution_status`: `execution_id`, `command`,
/// `status`, `exit_code` and `signal` when known, `output`, `truncated`, `output_bytes`,
/// `started_at_ms`, `finished_at_ms` when terminal (milliseconds since the Unix epoch) and
/// `duration_ms`. Absent members are omitted, never null.
[[nodiscard]] std::string snapshot_json(const execution_snapshot& s);

/// The outputSchema of `get_execution_status`: `snapshot_json`'s object plus the optional poll
/// hint `retry_after_ms`. Closed, and inside mcpcore's strict subset (docs/schema.md).
inline constexpr std::string_view execution_status_schema =
    R"({"type":"object","properties":{)"
    R"("execution_id":{"type":"string","pattern":"^[0-9a-f]{32}$","description":"The execution's id"},)"
    R"("command":{"type":"string","description":"The allow-listed command"},)"
    R"("status":{"type":"string","enum":["running","succeeded","failed","timed_out","cancelled"],)"
    R"("description":"running, or the terminal status"},)"
    R"("exit_code":{"type":"integer","description":"The exit code, once the program exited normally"},)"
    R"("signal":{"type":"integer","minimum":1,"description":"The signal that ended the program"},)"
    R"("output":{"type":"string","description":"stdout and stderr as they arrived, bounded by the capture limit"},)"
    R"("truncated":{"type":"boolean","description":"Whether output beyond the capture limit was dropped"},)"
    R"("output_bytes":{"type":"integer","minimum":0,"description":"Bytes the program wrote, kept or not"},)"
    R"("started_at_ms":{"type":"integer","description":"Start, in milliseconds since the Unix epoch"},)"
    R"("finished_at_ms":{"type":"integer","description":"End, in milliseconds since the Unix epoch"},)"
    R"("duration_ms":{"type":"integer","minimum":0,"description":"How long it ran, so far while running"},)"
    R"("retry_after_ms":{"type":"integer","minimum":0,"description":"While running: poll again after this long"}},)"
    R"("required":["execution_id","command","status","output","truncated","output_bytes","started_at_ms",)"
    R"("duration_ms"],"additionalProperties":false})";

/// What an execution reports while it runs. Both are called from the execution's supervisor
/// thread, never under the runner's lock, and must not call `command_runner::shutdown`.
struct run_callbacks {
  /// One output line, without its line break (a line longer than
  /// `runner_options::max_line_bytes` arrives in pieces of that size). At most
  /// `runner_options::max_reported_lines` calls per execution; may be empty.
  std::function<void(output_stream, std::string_view line)> on_line;
  /// The terminal snapshot, exactly once, after `get` returns it terminal and after the last
  /// `on_line`. May be empty.
  std::function<void(const execution_snapshot&)> on_done;
};

/// The runner's caps and timeouts.
struct runner_options {
  /// Executions running at once; a `start` beyond answers `too_many_running`.
  std::size_t max_concurrent = 4;
  /// Output kept per execution (stdout and stderr together); beyond, bytes are dropped and the
  /// snapshot says `truncated`.
  std::size_t max_output_bytes = std::size_t{1} << 20U;
  /// Finished executions kept for `get`, in all (at least 1). Beyond it, the oldest finished
  /// execution of the principal that holds the most is forgotten, so one principal's quick runs
  /// never push out another's results; a running execution is never forgotten.
  std::size_t max_retained = 256;
  /// Finished executions kept per principal (`submitted_by`; at least 1): beyond it that
  /// principal's oldest finished one is forgotten.
  std::size_t max_retained_per_principal = 64;
  /// Longest line handed to `on_line`; a longer line arrives in pieces of this size (at least 1).
  std::size_t max_line_bytes = 4096;
  /// Most `on_line` calls per execution; later lines are still captured, not reported.
  std::size_t max_reported_lines = 10000;
  /// After a timeout's SIGTERM to the process group, how long before SIGKILL.
  std::chrono::milliseconds kill_grace{std::chrono::seconds{2}};
  /// At `shutdown`, how long running commands get between SIGTERM and SIGKILL.
  std::chrono::milliseconds shutdown_grace{std::chrono::seconds{2}};
  /// After the program exited (its group is then killed), how long the supervisor still waits
  /// for the end of its pipes, which a descendant that left the group may hold open.
  std::chrono::milliseconds output_drain{std::chrono::seconds{1}};
};

/// Why `command_runner::start` refused.
enum class start_error : std::uint8_t {
  too_many_running,  ///< `max_concurrent` executions are running
  shutting_down,     ///< `shutdown` was called
  invalid_argument,  ///< an argument holds a NUL character, the program is not an absolute path, or a bad execution id
  spawn_failed,      ///< the CSPRNG, a pipe, the process or its supervisor thread could not be made
};

/// An English sentence for a refusal, fit for a tool error (a `std::string`, so that it goes
/// straight into `tool_result::error`).
[[nodiscard]] std::string to_string(start_error e);

/// Runs allow-listed commands, each supervised by a thread of its own, with bounded output and
/// time, and remembers their snapshots.
///
/// A command is started with `posix_spawn`, never through a shell: `argv` is the program, its
/// fixed arguments and the caller's, passed literally. It runs in a fresh process group, in `/`,
/// with stdin on /dev/null, stdout and stderr on pipes, default signal dispositions, an empty
/// signal mask, no other inherited descriptor, and the environment `PATH=/usr/bin:/bin`,
/// `LANG=C.UTF-8`. At its timeout the group gets SIGTERM, then SIGKILL after `kill_grace`; when
/// the program exits, whatever is left of its group gets SIGKILL. `cancel` stops one execution the
/// same way (it ends `cancelled`): mcpcore-host calls it when the task the command serves is
/// cancelled; a client cancelling a plain request only detaches the response, the command runs on.
///
/// @par Thread safety
/// Every member may be called concurrently, except that `shutdown` (and the destructor) must not
/// be called from a callback.
class command_runner {
 public:
  explicit command_runner(runner_options options = {});
  /// Calls `shutdown`.
  ~command_runner();
  command_runner(const command_runner&) = delete;
  command_runner& operator=(const command_runner&) = delete;
  command_runner(command_runner&&) = delete;
  command_runner& operator=(command_runner&&) = delete;

  /// Starts `spec.program` with `spec.fixed_args` then `args` (already validated by the
  /// allow-list), recorded as started by `submitted_by`.
  ///
  /// @returns the execution id; the execution is `running` and `get` finds it.
  ///
  /// @param reservation the key of a slot `reserve` holds for this start (empty: none): a live
  ///   reservation is spent and admits the start whatever else runs; an unknown or expired key
  ///   starts like no key, if a slot is free.
  /// @param execution_id the id to run under, from `new_execution_id` (empty: a fresh one), for a
  ///   caller that must name the execution before it starts (a task is created first:
  ///   docs/host-server.md#commands-as-tasks). One that is not 32 lowercase hex digits, or that an
  ///   execution already has, is `invalid_argument`.
  [[nodiscard]] mcpcore::result<std::string, start_error> start(const command_spec& spec,
                                                                std::vector<std::string> args,
                                                                std::string submitted_by, run_callbacks callbacks,
                                                                std::string_view reservation = {},
                                                                std::string execution_id = {});

  /// A fresh execution id (32 lowercase hex characters, 128 bits of the kernel's CSPRNG) for
  /// `start`; nullopt when the CSPRNG fails.
  [[nodiscard]] static std::optional<std::string> new_execution_id();

  /// Holds one slot for a start that has yet to be admitted (an approved recall, before its
  /// ticket is consumed: docs/host-server.md#execute_instruction), under `key`, for `hold`: until then, or
  /// until `start` with that key or `release`, other starts see one slot fewer. Reserving a key
  /// that already holds a slot renews it.
  ///
  /// @returns false when every slot is running, starting or reserved, or at shutdown.
  [[nodiscard]] bool reserve(std::string_view key, std::chrono::milliseconds hold);

  /// Gives back the slot `key` holds, if any.
  void release(std::string_view key);

  /// The execution `id`'s snapshot, or nullopt when unknown (never started, or forgotten).
  [[nodiscard]] std::optional<execution_snapshot> get(std::string_view id) const;

  /// Stops the running execution `id` on its client's request (docs/host-server.md#commands-as-tasks):
  /// its process group gets SIGTERM, then SIGKILL after `kill_grace`, as at a timeout, and it ends
  /// `cancelled` (its `on_done` follows, from its supervisor thread). Returns at once.
  ///
  /// @returns true when the stop was requested now (its terminal follows: `cancelled`, unless the
  ///   program exited on its own or reached its timeout first); false for an unknown id, an
  ///   execution already terminal, and one already cancelled.
  bool cancel(std::string_view id);

  /// Runs `argv` (`argv[0]` an absolute path; no shell, same process setup as `start`) and waits
  /// for it, for callers that need the output inline (`journalctl`).
  ///
  /// @param timeout how long it may run; then its group is stopped as at a start's timeout
  ///   (SIGTERM, SIGKILL after `kill_grace`) and the call fails. `shutdown` stops it too.
  /// @param max_bytes stdout kept: beyond it the oldest bytes are dropped (up to a line break
  ///   when there is one), so the result is the most recent output. stderr is not returned.
  /// @returns its stdout, or an English error: not startable, timed out, stopped by shutdown,
  ///   exited non-zero or killed by a signal (the last two quote the first line of its stderr).
  [[nodiscard]] mcpcore::result<std::string, std::string> capture(std::vector<std::string> argv,
                                                                  std::chrono::milliseconds timeout,
                                                                  std::size_t max_bytes);

  /// Executions currently running.
  [[nodiscard]] std::size_t running_count() const;

  /// Stops accepting starts, stops every running command (group SIGTERM, SIGKILL after
  /// `shutdown_grace`), waits until each delivered its terminal (`on_done`) and joins every
  /// thread. Idempotent; snapshots stay readable.
  void shutdown();

 private:
  struct state;
  std::unique_ptr<state> state_;
};

}  // namespace mcpcore_host

#endif  // MCPCORE_HOST_COMMAND_RUNNER_HPP
