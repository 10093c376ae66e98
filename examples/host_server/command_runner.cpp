// SPDX-License-Identifier: Apache-2.0
// The allow-list of execute_instruction and the command runner (posix_spawn, poll, process groups).
#include "command_runner.hpp"
#include "unique_fd.hpp"

#include <mcpcore/detail/random.hpp>
#include <mcpcore/dispatch/schema.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX kill, sigset_t, siginfo_t
#include <spawn.h>
#include <string.h>  // NOLINT(modernize-deprecated-headers): sigabbrev_np (GNU)
#include <sys/eventfd.h>
#include <sys/poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace mcpcore_host {

namespace {

using mcpcore::fail;
using std::chrono::milliseconds;
using steady = std::chrono::steady_clock;

/// Bytes read from a pipe per poll wake-up.
constexpr std::size_t read_chunk_bytes = std::size_t{64} << 10U;
/// Longest poll wait when the kernel offers no pidfd or the runner no stop event: how late an
/// exit or a shutdown may be noticed then.
constexpr milliseconds fallback_poll{20};
/// Longest poll wait in any case (the loop re-checks its deadlines after it).
constexpr milliseconds max_poll{1000};
/// Bytes of stderr `capture` keeps for its error message.
constexpr std::size_t capture_stderr_bytes = 1024;
/// Longest stderr line quoted in `capture`'s error.
constexpr std::size_t capture_stderr_quote = 200;

std::string errno_text(int e) { return std::error_code{e, std::generic_category()}.message(); }

// ---- descriptors and processes ---------------------------------------------------------------

/// A close-on-exec pipe whose descriptors are all above 2, so that the child's dup2 onto 0-2 can
/// never overwrite one of them (a server started with a standard descriptor closed).
bool make_pipe(unique_fd& read_end, unique_fd& write_end) {
  std::array<int, 2> fds{-1, -1};
  if (::pipe2(fds.data(), O_CLOEXEC) != 0) return false;
  for (auto& fd : fds) {
    if (fd <= STDERR_FILENO) {
      const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
      ::close(fd);
      fd = high;
    }
  }
  read_end = unique_fd{fds[0]};
  write_end = unique_fd{fds[1]};
  if (!read_end.valid() || !write_end.valid()) return false;
  // Only our end is non-blocking: the child writes to a blocking pipe.
  const int flags = ::fcntl(read_end.get(), F_GETFL);
  return flags >= 0 && ::fcntl(read_end.get(), F_SETFL, flags | O_NONBLOCK) == 0;
}

/// A started child: its pid (also its process group id) and our ends of its pipes.
struct child {
  pid_t pid = -1;
  unique_fd out;
  unique_fd err;
  unique_fd pidfd;  ///< readable once it exits; invalid when the kernel offers none
};

/// RAII for the posix_spawn attribute objects.
struct spawn_setup {
  posix_spawn_file_actions_t actions{};
  posix_spawnattr_t attr{};
  bool actions_ok = false;
  bool attr_ok = false;
  spawn_setup() {
    actions_ok = ::posix_spawn_file_actions_init(&actions) == 0;
    attr_ok = ::posix_spawnattr_init(&attr) == 0;
  }
  ~spawn_setup() {
    if (actions_ok) ::posix_spawn_file_actions_destroy(&actions);
    if (attr_ok) ::posix_spawnattr_destroy(&attr);
  }
  spawn_setup(const spawn_setup&) = delete;
  spawn_setup& operator=(const spawn_setup&) = delete;
  spawn_setup(spawn_setup&&) = delete;
  spawn_setup& operator=(spawn_setup&&) = delete;
};

/// The whole environment of a command.
constexpr std::array<std::string_view, 2> command_environment{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"};

/// Starts `argv` (argv[0] an absolute path, run as is: no PATH search, no shell) in a fresh
/// process group with the setup `command_runner` documents. Returns the errno of the failure.
mcpcore::result<child, int> spawn_child(const std::vector<std::string>& argv) {
  child c;
  unique_fd out_w;
  unique_fd err_w;
  if (!make_pipe(c.out, out_w) || !make_pipe(c.err, err_w)) return fail(errno != 0 ? errno : EMFILE);

  spawn_setup s;
  if (!s.actions_ok || !s.attr_ok) return fail(ENOMEM);
  // dup2 first: the pipes sit above 2, so neither dup2 can clobber the other, nor the open of 0.
  int rc = ::posix_spawn_file_actions_adddup2(&s.actions, out_w.get(), STDOUT_FILENO);
  if (rc == 0) rc = ::posix_spawn_file_actions_adddup2(&s.actions, err_w.get(), STDERR_FILENO);
  if (rc == 0) rc = ::posix_spawn_file_actions_addopen(&s.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  // Nothing else crosses the exec, whether or not its owner set close-on-exec (sockets, databases).
  if (rc == 0) rc = ::posix_spawn_file_actions_addclosefrom_np(&s.actions, STDERR_FILENO + 1);
  if (rc == 0) rc = ::posix_spawn_file_actions_addchdir_np(&s.actions, "/");
  if (rc != 0) return fail(rc);

  sigset_t none;  // NOLINT(misc-include-cleaner): <signal.h> declares it (through a glibc bits header)
  sigset_t all;
  ::sigemptyset(&none);
  ::sigfillset(&all);
  rc = ::posix_spawnattr_setflags(&s.attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  if (rc == 0) rc = ::posix_spawnattr_setpgroup(&s.attr, 0);     // a group of its own, id = its pid
  if (rc == 0) rc = ::posix_spawnattr_setsigmask(&s.attr, &none);  // whatever this thread blocks
  if (rc == 0) rc = ::posix_spawnattr_setsigdefault(&s.attr, &all);  // e.g. an ignored SIGPIPE
  if (rc != 0) return fail(rc);

  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));  // NOLINT: posix_spawn's signature
  args.push_back(nullptr);
  // posix_spawn wants non-const pointers: the environment is copied for each start.
  std::array<std::string, command_environment.size()> env_text{};
  std::array<char*, command_environment.size() + 1> env{};
  for (std::size_t i = 0; i < command_environment.size(); ++i) {
    env_text.at(i) = command_environment.at(i);
    env.at(i) = env_text.at(i).data();
  }
  rc = ::posix_spawn(&c.pid, argv.front().c_str(), &s.actions, &s.attr, args.data(), env.data());
  if (rc != 0) return fail(rc);  // glibc reports exec failures here, and reaps that child
  // The child is ours and unreaped, so its pid cannot be reused before the pidfd exists.
  c.pidfd = unique_fd{static_cast<int>(::syscall(SYS_pidfd_open, c.pid, 0))};
  return c;
}

/// Sends `sig` to the child's process group. Safe while the leader is unreaped (a zombie keeps
/// the group id from being reused).
void signal_group(pid_t pgid, int sig) noexcept { (void)::kill(-pgid, sig); }

/// How a supervised child ended.
struct outcome {
  bool timed_out = false;  ///< its deadline passed before it exited
  bool cancelled = false;  ///< `command_runner::cancel` asked for its stop before it exited
  bool stopped = false;    ///< the runner shut down before it exited
  std::optional<int> exit_code;
  std::optional<int> signal;
};

/// The bounds of one supervision.
struct supervision {
  steady::time_point deadline;
  milliseconds kill_grace{0};
  milliseconds stop_grace{0};
  milliseconds drain{0};
  int stop_fd = -1;                             ///< readable once the runner shuts down
  const std::atomic<bool>* stopping = nullptr;  ///< the same, for when there is no descriptor
  int cancel_fd = -1;                             ///< readable once this execution is cancelled
  const std::atomic<bool>* cancelling = nullptr;  ///< the same, for when there is no descriptor
};

int poll_timeout(steady::time_point now, std::optional<steady::time_point> next, bool fallback) {
  milliseconds wait = max_poll;
  if (next) {
    const auto left = std::chrono::duration_cast<milliseconds>(*next - now) + milliseconds{1};  // never early
    wait = std::clamp(left, milliseconds{0}, wait);
  }
  if (fallback) wait = std::min(wait, fallback_poll);
  return static_cast<int>(wait.count());
}

/// Reads the child's pipes until it exited and they ended (or `drain` passed after its exit),
/// enforcing its deadline (SIGTERM to the group, SIGKILL after the grace), its cancellation (the
/// same) and the runner's stop, then reaps it. `on_data` gets every chunk read, in arrival order.
using data_sink = std::function<void(output_stream, std::string_view)>;

outcome supervise(child& c, const supervision& sv, const data_sink& on_data) {
  outcome o;
  std::string buffer(read_chunk_bytes, '\0');
  bool exited = false;
  bool term_sent = false;
  bool stop_seen = false;
  bool cancel_seen = false;
  std::optional<steady::time_point> kill_at;
  std::optional<steady::time_point> drain_until;
  const auto read_one = [&](unique_fd& fd, output_stream which) {
    for (;;) {
      const auto n = ::read(fd.get(), buffer.data(), buffer.size());
      if (n > 0) {
        on_data(which, std::string_view{buffer.data(), static_cast<std::size_t>(n)});
        return;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      fd.reset();  // end of file, or an error that will not go away
      return;
    }
  };
  for (;;) {
    auto now = steady::now();
    if (!exited) {
      if (!stop_seen && sv.stopping != nullptr && sv.stopping->load(std::memory_order_acquire)) stop_seen = true;
      if (!cancel_seen && sv.cancelling != nullptr && sv.cancelling->load(std::memory_order_acquire)) {
        cancel_seen = true;
      }
      if (!term_sent && now >= sv.deadline) {
        o.timed_out = true;
        term_sent = true;
        signal_group(c.pid, SIGTERM);
        kill_at = now + sv.kill_grace;
      } else if (!term_sent && cancel_seen) {
        o.cancelled = true;
        term_sent = true;
        signal_group(c.pid, SIGTERM);
        kill_at = now + sv.kill_grace;
      } else if (!term_sent && stop_seen) {
        o.stopped = true;
        term_sent = true;
        signal_group(c.pid, SIGTERM);
        kill_at = now + sv.stop_grace;
      }
      if (kill_at && now >= *kill_at) {
        signal_group(c.pid, SIGKILL);
        kill_at.reset();
      }
    } else if ((!c.out.valid() && !c.err.valid()) || now >= *drain_until) {
      break;
    }

    std::array<pollfd, 5> fds{};
    std::size_t n = 0;
    std::size_t out_at = fds.size();
    std::size_t err_at = fds.size();
    std::size_t stop_at = fds.size();
    std::size_t cancel_at = fds.size();
    if (c.out.valid()) fds[out_at = n++] = pollfd{c.out.get(), POLLIN, 0};
    if (c.err.valid()) fds[err_at = n++] = pollfd{c.err.get(), POLLIN, 0};
    if (!exited && c.pidfd.valid()) fds[n++] = pollfd{c.pidfd.get(), POLLIN, 0};
    if (!stop_seen && !exited && sv.stop_fd >= 0) fds[stop_at = n++] = pollfd{sv.stop_fd, POLLIN, 0};
    if (!cancel_seen && !exited && sv.cancel_fd >= 0) fds[cancel_at = n++] = pollfd{sv.cancel_fd, POLLIN, 0};
    std::optional<steady::time_point> next;
    if (exited) {
      next = drain_until;
    } else if (kill_at) {
      next = kill_at;
    } else if (!term_sent) {
      next = sv.deadline;
    }
    const bool fallback = !exited && (!c.pidfd.valid() || (sv.stop_fd < 0 && sv.stopping != nullptr) ||
                                      (sv.cancel_fd < 0 && sv.cancelling != nullptr));
    const int ready = ::poll(fds.data(), n, poll_timeout(now, next, fallback));
    if (ready > 0) {
      constexpr short readable = POLLIN | POLLHUP | POLLERR | POLLNVAL;
      if (out_at < n && (fds[out_at].revents & readable) != 0) read_one(c.out, output_stream::out);
      if (err_at < n && (fds[err_at].revents & readable) != 0) read_one(c.err, output_stream::err);
      if (stop_at < n && (fds[stop_at].revents & readable) != 0) stop_seen = true;
      if (cancel_at < n && (fds[cancel_at].revents & readable) != 0) cancel_seen = true;
    }
    if (!exited) {
      siginfo_t info{};  // NOLINT(misc-include-cleaner): <signal.h>, through a glibc bits header
      // WNOWAIT: the leader stays a zombie, so its group id stays reserved for the kill below.
      // NOLINTNEXTLINE(misc-include-cleaner): <sys/wait.h> declares P_PID and the W* flags
      const int waited = ::waitid(P_PID, static_cast<id_t>(c.pid), &info, WEXITED | WNOHANG | WNOWAIT);
      if (waited == 0 && info.si_pid == c.pid) {  // NOLINT(misc-include-cleaner): si_pid is <signal.h>'s
        exited = true;
        signal_group(c.pid, SIGKILL);  // whatever it left in its group does not outlive it
        drain_until = steady::now() + sv.drain;
      }
    }
  }
  int status = 0;
  while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
  }
  // NOLINTBEGIN(misc-include-cleaner): <sys/wait.h> defines these (through a glibc bits header)
  if (WIFEXITED(status)) o.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) o.signal = WTERMSIG(status);
  // NOLINTEND(misc-include-cleaner)
  c.out.reset();
  c.err.reset();
  c.pidfd.reset();
  return o;
}

/// Runs `F` when the scope ends, unless dismissed.
template <class F>
class scope_exit {
 public:
  explicit scope_exit(F f) : f_(std::move(f)) {}
  scope_exit(const scope_exit&) = delete;
  scope_exit& operator=(const scope_exit&) = delete;
  scope_exit(scope_exit&&) = delete;
  scope_exit& operator=(scope_exit&&) = delete;
  ~scope_exit() {
    if (armed_) f_();
  }
  void dismiss() noexcept { armed_ = false; }

 private:
  F f_;
  bool armed_ = true;
};

bool has_nul(std::string_view s) noexcept { return s.find('\0') != std::string_view::npos; }

/// Whether `id` has the shape of an execution id: 32 lowercase hex characters.
bool valid_execution_id(std::string_view id) noexcept {
  return id.size() == 32 && std::all_of(id.begin(), id.end(), [](char ch) {
           return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
         });
}

std::int64_t epoch_ms(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<milliseconds>(t.time_since_epoch()).count();
}

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev != nullptr ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

// ---- allow-list parsing ------------------------------------------------------------------------

bool valid_name(std::string_view n) noexcept {
  if (n.empty() || n.size() > 64 || n[0] < 'a' || n[0] > 'z') return false;
  return std::all_of(n.begin(), n.end(),
                     [](char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_'; });
}

/// A JSON string literal of `s` (for quoting the operator's own values in messages).
std::string json_quoted(std::string_view s) {
  std::string out;
  mcpcore::json::append_escaped(out, s);
  return out;
}

/// Why `p` cannot be a command's program, or nullopt.
std::optional<std::string> check_program(const std::string& p) {
  if (p.empty() || p.front() != '/') return "must be an absolute path";
  if (p.size() > max_arg_bytes) return fmt::format("is longer than {} bytes", max_arg_bytes);
  if (has_nul(p)) return "holds a NUL character";
  if (p.back() == '/' || p.find("//") != std::string::npos || p.find("/./") != std::string::npos ||
      p.find("/../") != std::string::npos || p.ends_with("/.") || p.ends_with("/..")) {
    return "must be a normal path (no empty, . or .. components)";
  }
  struct stat st{};
  if (::stat(p.c_str(), &st) != 0) {
    const int e = errno;
    if (e == ENOENT || e == ENOTDIR) return std::string{"does not exist"};
    return "cannot be examined: " + errno_text(e);
  }
  if (!S_ISREG(st.st_mode)) return "is not a regular file";
  if ((st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)) == 0 || ::access(p.c_str(), X_OK) != 0) {
    return "is not executable";
  }
  if ((st.st_mode & S_IWOTH) != 0) return "is writable by any user";
  return std::nullopt;
}

/// Reads the whole file, bounded by `max_allowlist_bytes`.
mcpcore::result<std::string, std::string> read_bounded(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not hang the start-up (it is refused as non-regular below).
  const unique_fd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)};
  if (!fd.valid()) return fail("cannot open the file: " + errno_text(errno));
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return fail("cannot examine the file: " + errno_text(errno));
  if (!S_ISREG(st.st_mode)) return fail(std::string{"is not a regular file"});
  if ((st.st_mode & S_IWOTH) != 0) {
    return fail(std::string{"is writable by any user (anyone could choose what the server runs); chmod o-w it"});
  }
  const std::string too_big = fmt::format("is larger than {} bytes (max_allowlist_bytes)", max_allowlist_bytes);
  if (static_cast<std::uint64_t>(st.st_size) > max_allowlist_bytes) return fail(too_big);
  std::string text;
  std::array<char, 16384> chunk{};
  for (;;) {
    const auto n = ::read(fd.get(), chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("cannot read the file: " + errno_text(errno));
    if (n == 0) break;
    text.append(chunk.data(), static_cast<std::size_t>(n));
    if (text.size() > max_allowlist_bytes) return fail(too_big);  // it grew while read
  }
  return text;
}

/// The schema that checks `{"args": [...]}`, and the given schema's compact text.
struct compiled_args {
  mcpcore::schema::compiled_schema schema;
  std::string text;
};

mcpcore::result<compiled_args, std::string> compile_args(mcpcore::json::value given) {
  constexpr std::string_view none = R"({"type":"array","maxItems":0})";
  mcpcore::json::document doc;
  if (!given.exists()) {
    auto parsed = doc.parse(none);
    if (!parsed) return fail(std::string{"internal: the default args schema does not parse"});
    given = *parsed;
  }
  if (!given.is_object()) return fail(std::string{"args must be a schema object"});
  compiled_args out;
  mcpcore::json::writer{out.text}.value(given);
  std::string wrapped;
  mcpcore::json::writer w{wrapped};
  w.begin_object()
      .member("type", "object")
      .key("properties")
      .begin_object()
      .key("args")
      .value(given)
      .end_object()
      .key("required")
      .begin_array()
      .value("args")
      .end_array()
      .member("additionalProperties", false)
      .end_object();
  auto compiled = mcpcore::schema::compiled_schema::compile(wrapped);
  if (!compiled) {
    constexpr std::string_view prefix = "/properties/args";
    std::string why = "the args schema does not compile:";
    for (const auto& e : compiled.error()) {
      std::string_view at = e.path;
      if (at.starts_with(prefix)) at.remove_prefix(prefix.size());
      why += std::string{" "} + (at.empty() ? "(root)" : std::string{at}) + ": " + e.message + ";";
    }
    why.pop_back();
    return fail(std::move(why));
  }
  // Beyond what the subset checks: the value becomes the tail of an argv, a list of strings.
  if (!given["type"].is_string() || given["type"].as_string() != "array") {
    return fail(std::string{R"(args must be a schema of "type": "array")"});
  }
  const auto max_items = given["maxItems"].to_int64();
  const auto items = given["items"];
  if (!(max_items && *max_items == 0) &&
      (!items.is_object() || !items["type"].is_string() || items["type"].as_string() != "string")) {
    return fail(std::string{R"(args must declare "items" of "type": "string" (or "maxItems": 0))"});
  }
  out.schema = std::move(*compiled);
  return out;
}

/// Parses one allow-list entry; errors are prefixed by the caller.
mcpcore::result<compiled_args, std::string> parse_entry(mcpcore::json::value e, command_spec& spec) {
  if (!e.is_object()) return fail(std::string{"must be an object"});
  static constexpr std::array<std::string_view, 7> known{"name",    "description", "program", "fixed_args",
                                                         "args",    "timeout_ms",  "$comment"};
  for (const auto m : e.members()) {
    if (std::find(known.begin(), known.end(), m.key) == known.end()) {
      return fail("unknown key " + json_quoted(m.key) +
                  " (known: name, description, program, fixed_args, args, timeout_ms, $comment)");
    }
  }
  if (e["$comment"].exists() && !e["$comment"].is_string()) return fail(std::string{"$comment must be a string"});
  const auto description = e["description"];
  if (!description.is_string() || description.as_string().empty()) {
    return fail(std::string{"description must be a non-empty string (it tells callers what the command does)"});
  }
  if (description.as_string().size() > max_description_bytes) {
    return fail(fmt::format("description is longer than {} bytes", max_description_bytes));
  }
  spec.description = std::string{description.as_string()};
  const auto program = e["program"];
  if (!program.is_string()) return fail(std::string{"program must be a string (an absolute path)"});
  spec.program = std::string{program.as_string()};
  if (auto bad = check_program(spec.program)) return fail("program " + json_quoted(spec.program) + " " + *bad);
  const auto fixed = e["fixed_args"];
  if (fixed.exists()) {
    if (!fixed.is_array()) return fail(std::string{"fixed_args must be an array of strings"});
    if (fixed.size() > max_fixed_args) {
      return fail(fmt::format("fixed_args has more than {} elements", max_fixed_args));
    }
    for (const auto a : fixed.elements()) {
      const auto at = fmt::format("fixed_args[{}]", spec.fixed_args.size());
      if (!a.is_string()) return fail(at + " must be a string");
      if (a.as_string().size() > max_arg_bytes) {
        return fail(fmt::format("{} is longer than {} bytes", at, max_arg_bytes));
      }
      if (has_nul(a.as_string())) return fail(at + " holds a NUL character");
      spec.fixed_args.emplace_back(a.as_string());
    }
  }
  const auto timeout = e["timeout_ms"];
  if (timeout.exists()) {
    const auto ms = timeout.is_integer() ? timeout.to_int64() : std::nullopt;
    if (!ms || *ms < min_command_timeout.count() || *ms > max_command_timeout.count()) {
      return fail(fmt::format("timeout_ms must be an integer from {} to {}", min_command_timeout.count(),
                              max_command_timeout.count()));
    }
    spec.timeout = milliseconds{*ms};
  }
  auto args = compile_args(e["args"]);
  if (!args) return fail(std::move(args.error()));
  spec.args_schema = args->text;
  return std::move(*args);
}

}  // namespace

// ---- allowlist -----------------------------------------------------------------------------------

mcpcore::result<allowlist, std::string> allowlist::load(const std::string& path) {
  auto text = read_bounded(path);
  if (!text) return fail(std::move(text.error()));
  mcpcore::json::document doc;
  auto root = doc.parse(*text);
  if (!root) return fail("is not valid JSON: " + root.error().message());
  if (!root->is_object()) return fail(std::string{R"(must be a JSON object {"commands": [...]})"});
  for (const auto m : root->members()) {
    if (m.key != "commands" && m.key != "$comment") {
      return fail("unknown top-level key " + json_quoted(m.key) + " (known: commands, $comment)");
    }
  }
  if ((*root)["$comment"].exists() && !(*root)["$comment"].is_string()) {
    return fail(std::string{"$comment must be a string"});
  }
  const auto commands = (*root)["commands"];
  if (!commands.is_array()) return fail(std::string{R"(needs "commands": an array of command entries)"});
  if (commands.size() > max_allowlist_commands) {
    return fail(fmt::format("declares {} commands; at most {} are allowed (max_allowlist_commands)", commands.size(),
                            max_allowlist_commands));
  }
  allowlist list;
  std::set<std::string, std::less<>> names;
  for (const auto e : commands.elements()) {
    std::string where = fmt::format("commands[{}]", list.commands_.size());
    command_spec spec;
    const auto name = e["name"];
    if (!name.is_string()) return fail(where + ": needs a \"name\" string");
    if (!valid_name(name.as_string())) {
      return fail(where + ": name must match ^[a-z][a-z0-9_]{0,63}$ (lowercase letters, digits, _)");
    }
    spec.name = std::string{name.as_string()};
    where += " (" + json_quoted(spec.name) + ")";
    if (!names.insert(spec.name).second) return fail(where + ": the name is declared twice");
    auto args = parse_entry(e, spec);
    if (!args) return fail(where + ": " + args.error());
    list.commands_.push_back(std::move(spec));
    list.schemas_.push_back(std::move(args->schema));
  }
  return list;
}

const command_spec* allowlist::find(std::string_view name) const noexcept {
  for (const auto& c : commands_) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::optional<std::string> allowlist::validate_args(std::string_view name, mcpcore::json::value args) const {
  const command_spec* spec = find(name);
  if (spec == nullptr) return std::string{"unknown command (not on this host's allow-list)"};
  const auto& schema = schemas_[static_cast<std::size_t>(spec - commands_.data())];
  std::string instance;
  mcpcore::json::writer w{instance};
  w.begin_object().key("args");
  if (args.exists()) {
    w.value(args);
  } else {
    w.begin_array().end_array();
  }
  w.end_object();
  mcpcore::json::document doc;
  auto root = doc.parse(instance);
  if (!root) return std::string{"invalid arguments for " + spec->name + ": args cannot be read"};
  if (auto v = schema.validate(*root)) {
    return "invalid arguments for " + spec->name + " at " + (v->path.empty() ? std::string{"(root)"} : v->path) +
           ": " + v->reason;
  }
  std::size_t i = 0;
  for (const auto a : (*root)["args"].elements()) {
    const auto at = fmt::format("/args/{}", i++);
    if (!a.is_string()) return "invalid arguments for " + spec->name + " at " + at + ": expected a string";
    if (has_nul(a.as_string())) {
      return "invalid arguments for " + spec->name + " at " + at + ": an argument cannot hold a NUL character";
    }
  }
  return std::nullopt;
}

// ---- snapshots -------------------------------------------------------------------------------

bool is_terminal(std::string_view status) noexcept {
  return status == "succeeded" || status == "failed" || status == "timed_out" || status == "cancelled";
}

std::string snapshot_json(const execution_snapshot& s) {
  std::string out;
  mcpcore::json::writer w{out};
  w.begin_object().member("execution_id", s.id).member("command", s.command).member("status", s.status);
  if (s.exit_code) w.member("exit_code", *s.exit_code);
  if (s.signal) w.member("signal", *s.signal);
  w.member("output", s.output)
      .member("truncated", s.truncated)
      .member("output_bytes", s.output_bytes)
      .member("started_at_ms", epoch_ms(s.started));
  if (s.finished) w.member("finished_at_ms", epoch_ms(*s.finished));
  w.member("duration_ms", static_cast<std::int64_t>(std::max<std::int64_t>(s.duration.count(), 0))).end_object();
  return out;
}

std::string to_string(start_error e) {
  switch (e) {
    case start_error::too_many_running:
      return "too many commands are running on this host at once; try again when one has finished";
    case start_error::shutting_down: return "the server is shutting down and starts no new commands";
    case start_error::invalid_argument: return "the command's arguments cannot be passed to a program";
    case start_error::spawn_failed: return "the command could not be started on this host";
  }
  return "the command could not be started";
}

// ---- command_runner ----------------------------------------------------------------------------

namespace {

/// One execution as the runner keeps it.
struct execution {
  execution_snapshot snap;  ///< guarded by the runner's mutex
  steady::time_point started_steady;
  std::optional<steady::time_point> finished_steady;
  std::thread supervisor;  ///< assigned under the runner's mutex; moved to `done_threads` at the end
  /// Set once by `cancel` (under the runner's mutex); the supervisor reads it.
  std::atomic<bool> cancel_requested{false};
  /// An eventfd written once by `cancel`, never read: wakes the supervisor's poll. Invalid when
  /// none could be made (the supervisor then polls the flag every `fallback_poll`).
  unique_fd cancel_event;
};

/// Splits one stream into lines for `on_line`, bounding each by `max_line_bytes`.
class line_splitter {
 public:
  explicit line_splitter(std::size_t max_line) : max_line_(std::max<std::size_t>(max_line, 1)) {}

  template <class Emit>
  void feed(std::string_view chunk, Emit&& emit) {
    while (!chunk.empty()) {
      const auto nl = chunk.find('\n');
      std::string_view seg = chunk.substr(0, nl);
      while (seg.size() > max_line_ - pending_.size()) {
        const auto take = max_line_ - pending_.size();
        pending_.append(seg.substr(0, take));
        seg.remove_prefix(take);
        if (!emit(std::string_view{pending_})) return;
        pending_.clear();
      }
      pending_.append(seg);
      if (nl == std::string_view::npos) return;
      std::string_view line{pending_};
      if (line.ends_with('\r')) line.remove_suffix(1);
      if (!emit(line)) return;
      pending_.clear();
      chunk.remove_prefix(nl + 1);
    }
  }
  template <class Emit>
  void finish(Emit&& emit) {
    if (!pending_.empty()) (void)emit(std::string_view{pending_});
    pending_.clear();
  }

 private:
  std::size_t max_line_;
  std::string pending_;
};

}  // namespace

struct command_runner::state {
  runner_options options;
  unique_fd stop_event;  ///< an eventfd written once at shutdown, never read: readable for good
  std::atomic<bool> stop_flag{false};

  mutable std::mutex m;
  std::condition_variable idle;  ///< notified when a supervisor, a start or a capture ends
  std::map<std::string, std::shared_ptr<execution>, std::less<>> executions;
  /// Ids of finished executions by principal (`submitted_by`), oldest first.
  std::map<std::string, std::deque<std::string>, std::less<>> finished_by;
  std::size_t finished_count = 0;  ///< the ids in `finished_by`
  std::size_t starting = 0;          ///< starts admitted, not yet running
  /// Slots held by `reserve`, by key, with when each lapses.
  std::map<std::string, steady::time_point, std::less<>> reservations;
  std::size_t running = 0;
  std::size_t supervisors = 0;  ///< supervisor threads not yet done
  std::size_t captures = 0;
  bool stopping = false;
  std::vector<std::thread> done_threads;  ///< finished supervisors, to be joined

  std::mutex shutdown_m;  ///< serialises `shutdown`

  explicit state(runner_options o) : options(o) {
    options.max_retained = std::max<std::size_t>(options.max_retained, 1);
    options.max_retained_per_principal = std::max<std::size_t>(options.max_retained_per_principal, 1);
    options.max_line_bytes = std::max<std::size_t>(options.max_line_bytes, 1);
    stop_event = unique_fd{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
  }

  [[nodiscard]] supervision bounds(steady::time_point deadline, const execution* e = nullptr) const {
    return supervision{.deadline = deadline,
                       .kill_grace = options.kill_grace,
                       .stop_grace = options.shutdown_grace,
                       .drain = options.output_drain,
                       .stop_fd = stop_event.get(),
                       .stopping = &stop_flag,
                       .cancel_fd = e != nullptr ? e->cancel_event.get() : -1,
                       .cancelling = e != nullptr ? &e->cancel_requested : nullptr};
  }

  /// Keeps finished execution `id` of `principal` for `get`, forgetting what the retention caps
  /// say: first `principal`'s own oldest beyond `max_retained_per_principal`, then, while more
  /// than `max_retained` are kept, the oldest of the principal that holds the most (so one
  /// principal's flood of quick runs forgets only its own). Requires `m`.
  void retain_locked(const std::string& principal, const std::string& id) {
    auto& mine = finished_by[principal];
    mine.push_back(id);
    ++finished_count;
    while (mine.size() > options.max_retained_per_principal) {
      executions.erase(mine.front());
      mine.pop_front();
      --finished_count;
    }
    while (finished_count > options.max_retained) {
      auto most = finished_by.begin();
      for (auto it = finished_by.begin(); it != finished_by.end(); ++it) {
        if (it->second.size() > most->second.size()) most = it;
      }
      executions.erase(most->second.front());
      most->second.pop_front();
      --finished_count;
      if (most->second.empty()) finished_by.erase(most);
    }
  }

  /// Drops the reservations whose hold ran out; the live ones. Requires `m`.
  std::size_t live_reservations_locked(steady::time_point now) {
    std::erase_if(reservations, [now](const auto& r) { return r.second <= now; });
    return reservations.size();
  }

  /// Joins the supervisors that ended (called without the lock held).
  void join_done() {
    std::vector<std::thread> done;
    {
      const std::scoped_lock lock{m};
      done.swap(done_threads);
    }
    for (auto& t : done) t.join();
  }

  void run(const std::shared_ptr<execution>& e, child c, run_callbacks cb, steady::time_point deadline);
};

void command_runner::state::run(const std::shared_ptr<execution>& e, child c, run_callbacks cb,
                                steady::time_point deadline) {
  std::size_t reported = 0;
  bool reporting = static_cast<bool>(cb.on_line);
  line_splitter out_lines{options.max_line_bytes};
  line_splitter err_lines{options.max_line_bytes};
  const auto emitter = [&](output_stream which) {
    return [&, which](std::string_view line) {
      if (!reporting || reported >= options.max_reported_lines) {
        reporting = false;
        return false;
      }
      ++reported;
      try {
        cb.on_line(which, line);
      } catch (...) {  // a throwing callback loses its lines, not the execution
        reporting = false;
      }
      return reporting;
    };
  };
  const data_sink on_data = [&](output_stream which, std::string_view chunk) {
    {
      const std::scoped_lock lock{m};
      auto& s = e->snap;
      s.output_bytes += chunk.size();
      const auto room = options.max_output_bytes - std::min(options.max_output_bytes, s.output.size());
      if (chunk.size() > room) s.truncated = true;
      s.output.append(chunk.substr(0, room));
    }
    if (reporting) (which == output_stream::out ? out_lines : err_lines).feed(chunk, emitter(which));
  };
  const outcome o = supervise(c, bounds(deadline, e.get()), on_data);
  if (reporting) out_lines.finish(emitter(output_stream::out));
  if (reporting) err_lines.finish(emitter(output_stream::err));

  execution_snapshot terminal;
  {
    const std::scoped_lock lock{m};
    auto& s = e->snap;
    s.exit_code = o.exit_code;
    s.signal = o.signal;
    if (o.timed_out) {
      s.status = "timed_out";
    } else if (o.cancelled) {
      s.status = "cancelled";
    } else if (o.exit_code && *o.exit_code == 0) {
      s.status = "succeeded";
    } else {
      s.status = "failed";
    }
    if (s.truncated) {
      s.output += fmt::format("\n[output truncated: kept the first {} of {} bytes]\n", s.output.size(), s.output_bytes);
    }
    s.finished = std::chrono::system_clock::now();
    const auto end = steady::now();
    e->finished_steady = end;
    e->cancel_event.reset();  // a finished execution holds no descriptor (`cancel` checks the end first)
    s.duration = std::chrono::duration_cast<milliseconds>(end - e->started_steady);
    --running;
    retain_locked(s.submitted_by, s.id);
    terminal = s;
  }
  if (cb.on_done) {
    try {
      cb.on_done(terminal);
    } catch (...) {  // NOLINT(bugprone-empty-catch): nothing to report it to; the snapshot is terminal
    }
  }
  cb = {};  // the callbacks' captures die here, before the runner learns this thread is done
  const std::scoped_lock lock{m};
  done_threads.push_back(std::move(e->supervisor));
  --supervisors;
  idle.notify_all();
}

command_runner::command_runner(runner_options options) : state_(std::make_unique<state>(options)) {}

command_runner::~command_runner() { shutdown(); }

std::optional<std::string> command_runner::new_execution_id() { return mcpcore::detail::random_hex(16); }

mcpcore::result<std::string, start_error> command_runner::start(const command_spec& spec,
                                                                std::vector<std::string> args,
                                                                std::string submitted_by, run_callbacks callbacks,
                                                                std::string_view reservation, std::string execution_id) {
  auto& st = *state_;
  if (spec.program.empty() || spec.program.front() != '/' || has_nul(spec.program) ||
      std::any_of(spec.fixed_args.begin(), spec.fixed_args.end(), has_nul) ||
      std::any_of(args.begin(), args.end(), has_nul) || (!execution_id.empty() && !valid_execution_id(execution_id))) {
    return fail(start_error::invalid_argument);
  }
  const bool chosen = !execution_id.empty();
  {
    const std::scoped_lock lock{st.m};
    if (st.stopping) return fail(start_error::shutting_down);
    if (chosen && st.executions.contains(execution_id)) return fail(start_error::invalid_argument);
    const auto now = steady::now();
    const std::size_t reserved = st.live_reservations_locked(now);
    const auto held = reservation.empty() ? st.reservations.end() : st.reservations.find(reservation);
    if (held != st.reservations.end()) {
      st.reservations.erase(held);  // the held slot becomes this start's
    } else if (st.running + st.starting + reserved >= st.options.max_concurrent) {
      return fail(start_error::too_many_running);
    }
    ++st.starting;
  }
  st.join_done();
  // Gives the admitted slot back on every early return (allocation failures included).
  scope_exit slot{[&st] {
    const std::scoped_lock lock{st.m};
    --st.starting;
    st.idle.notify_all();
  }};
  std::optional<std::string> id = chosen ? std::optional<std::string>{std::move(execution_id)} : mcpcore::detail::random_hex(16);
  if (!id) return fail(start_error::spawn_failed);
  std::vector<std::string> argv;
  argv.reserve(1 + spec.fixed_args.size() + args.size());
  argv.push_back(spec.program);
  argv.insert(argv.end(), spec.fixed_args.begin(), spec.fixed_args.end());
  std::move(args.begin(), args.end(), std::back_inserter(argv));

  auto e = std::make_shared<execution>();
  e->cancel_event = unique_fd{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
  e->snap.command = spec.name;
  e->snap.submitted_by = std::move(submitted_by);
  e->snap.started = std::chrono::system_clock::now();
  e->started_steady = steady::now();
  auto c = spawn_child(argv);
  if (!c) return fail(start_error::spawn_failed);
  const pid_t pid = c->pid;
  const auto deadline = e->started_steady + spec.timeout;

  const std::scoped_lock lock{st.m};
  if (chosen && st.executions.contains(*id)) {  // a concurrent start took the caller's id meanwhile
    signal_group(pid, SIGKILL);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return fail(start_error::invalid_argument);
  }
  while (st.executions.contains(*id)) {  // 128 random bits: a formality
    auto again = mcpcore::detail::random_hex(16);
    if (again) id = std::move(again);
  }
  e->snap.id = *id;
  st.executions.emplace(*id, e);
  --st.starting;
  slot.dismiss();
  ++st.running;
  ++st.supervisors;
  try {
    // Under the lock: the supervisor cannot reach its end (which moves this handle) before it is set.
    e->supervisor = std::thread{[&st, e, ch = std::move(*c), cb = std::move(callbacks), deadline]() mutable {
      st.run(e, std::move(ch), std::move(cb), deadline);
    }};
  } catch (const std::system_error&) {
    st.executions.erase(*id);
    --st.running;
    --st.supervisors;
    st.idle.notify_all();
    signal_group(pid, SIGKILL);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return fail(start_error::spawn_failed);
  }
  return std::move(*id);
}

std::optional<execution_snapshot> command_runner::get(std::string_view id) const {
  const auto& st = *state_;
  const std::scoped_lock lock{st.m};
  const auto it = st.executions.find(id);
  if (it == st.executions.end()) return std::nullopt;
  execution_snapshot s = it->second->snap;
  if (!it->second->finished_steady) {
    s.duration = std::chrono::duration_cast<milliseconds>(steady::now() - it->second->started_steady);
  }
  return s;
}

bool command_runner::cancel(std::string_view id) {
  auto& st = *state_;
  const std::scoped_lock lock{st.m};
  const auto it = st.executions.find(id);
  if (it == st.executions.end()) return false;
  execution& e = *it->second;
  if (e.finished_steady || is_terminal(e.snap.status) || e.cancel_requested.load(std::memory_order_relaxed)) {
    return false;
  }
  e.cancel_requested.store(true, std::memory_order_release);
  if (e.cancel_event.valid()) {
    const std::uint64_t one = 1;
    while (::write(e.cancel_event.get(), &one, sizeof one) < 0 && errno == EINTR) {
    }
  }
  return true;
}

bool command_runner::reserve(std::string_view key, std::chrono::milliseconds hold) {
  auto& st = *state_;
  const std::scoped_lock lock{st.m};
  if (st.stopping) return false;
  const auto now = steady::now();
  const std::size_t reserved = st.live_reservations_locked(now);
  if (const auto it = st.reservations.find(key); it != st.reservations.end()) {
    it->second = now + hold;
    return true;
  }
  if (st.running + st.starting + reserved >= st.options.max_concurrent) return false;
  st.reservations.emplace(std::string{key}, now + hold);
  return true;
}

void command_runner::release(std::string_view key) {
  auto& st = *state_;
  const std::scoped_lock lock{st.m};
  if (const auto it = st.reservations.find(key); it != st.reservations.end()) st.reservations.erase(it);
}

std::size_t command_runner::running_count() const {
  const std::scoped_lock lock{state_->m};
  return state_->running;
}

mcpcore::result<std::string, std::string> command_runner::capture(std::vector<std::string> argv,
                                                                  std::chrono::milliseconds timeout,
                                                                  std::size_t max_bytes) {
  auto& st = *state_;
  if (argv.empty() || argv.front().empty() || argv.front().front() != '/') {
    return fail(std::string{"the program must be given as an absolute path"});
  }
  if (std::any_of(argv.begin(), argv.end(), has_nul)) return fail(std::string{"an argument holds a NUL character"});
  const auto slash = argv.front().rfind('/');
  const std::string program = argv.front().substr(slash + 1);
  {
    const std::scoped_lock lock{st.m};
    if (st.stopping) return fail(std::string{"the server is shutting down"});
    ++st.captures;
  }
  const scope_exit done{[&st] {
    const std::scoped_lock lock{st.m};
    --st.captures;
    st.idle.notify_all();
  }};

  auto c = spawn_child(argv);
  if (!c) return fail("cannot start " + program + ": " + errno_text(c.error()));
  std::string out;
  std::string err;
  const data_sink on_data = [&](output_stream which, std::string_view chunk) {
    if (which == output_stream::err) {
      err.append(chunk.substr(0, capture_stderr_bytes - std::min(capture_stderr_bytes, err.size())));
      return;
    }
    out.append(chunk);
    // Keep one byte more than asked: it tells whether the kept part starts a line.
    if (out.size() > 2 * max_bytes + 1) out.erase(0, out.size() - (max_bytes + 1));
  };
  const outcome o = supervise(*c, st.bounds(steady::now() + timeout), on_data);
  if (o.timed_out) return fail(fmt::format("{} did not finish within {} ms", program, timeout.count()));
  if (o.stopped) return fail(program + " was stopped: the server is shutting down");
  if (!o.exit_code || *o.exit_code != 0) {
    std::string why = o.exit_code ? fmt::format("{} exited with status {}", program, *o.exit_code)
                                  : fmt::format("{} was killed by {}", program, signal_name(o.signal.value_or(0)));
    std::string_view line{err};
    line = line.substr(0, std::min(line.find('\n'), capture_stderr_quote));
    if (!line.empty()) why += ": " + std::string{line};
    return fail(std::move(why));
  }
  if (out.size() > max_bytes) {
    const auto start = out.size() - max_bytes;
    const auto nl = out.find('\n', start - 1);
    out.erase(0, nl == std::string::npos || nl + 1 >= out.size() ? start : nl + 1);
  }
  return out;
}

void command_runner::shutdown() {
  auto& st = *state_;
  const std::scoped_lock serial{st.shutdown_m};
  {
    const std::scoped_lock lock{st.m};
    st.stopping = true;
  }
  st.stop_flag.store(true, std::memory_order_release);
  if (st.stop_event.valid()) {
    const std::uint64_t one = 1;
    while (::write(st.stop_event.get(), &one, sizeof one) < 0 && errno == EINTR) {
    }
  }
  {
    std::unique_lock lock{st.m};
    st.idle.wait(lock, [&st] { return st.starting == 0 && st.supervisors == 0 && st.captures == 0; });
  }
  st.join_done();
}

}  // namespace mcpcore_host
