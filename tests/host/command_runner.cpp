// SPDX-License-Identifier: Apache-2.0
// Tests of the allow-list and the command runner, against this machine's real programs (coreutils).
#include "command_runner.hpp"

#include <doctest/doctest.h>

#include <mcpcore/dispatch/schema.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/wire/json.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <ios>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX signal numbers
#include <stdlib.h>  // NOLINT(modernize-deprecated-headers): POSIX mkdtemp
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

using namespace mcpcore_host;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

/// How long a test waits for something that takes milliseconds unloaded (a generous bound, never
/// a measurement).
constexpr auto patience = std::chrono::seconds{60};

/// The allow-list shipped with the example server.
std::string example_allowlist() {
  return (fs::path{__FILE__}.parent_path() / ".." / ".." / "examples" / "host_server" / "allowlist.example.json")
      .lexically_normal()
      .string();
}

/// A fresh directory under the system's temporary directory, removed with everything in it.
struct temp_dir {
  fs::path path;
  temp_dir() {
    std::string templ = (fs::temp_directory_path() / "mcpcore-runner-XXXXXX").string();
    REQUIRE(::mkdtemp(templ.data()) != nullptr);
    path = templ;
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  [[nodiscard]] std::string file(std::string_view name, std::string_view text, ::mode_t mode = 0644) const {
    const auto p = (path / name).string();
    {
      std::ofstream f{p, std::ios::binary | std::ios::trunc};
      f << text;
    }
    REQUIRE(::chmod(p.c_str(), mode) == 0);
    return p;
  }
};

mcpcore::result<allowlist, std::string> load_text(const temp_dir& dir, std::string_view text) {
  return allowlist::load(dir.file("allowlist.json", text));
}

/// A one-command allow-list around `entry` (the members of the entry object, without braces).
std::string one_entry(std::string_view entry) { return std::string{R"({"commands":[{)"} + std::string{entry} + "}]}"; }

command_spec spec(std::string program, std::vector<std::string> fixed = {}, std::chrono::milliseconds timeout = 30s) {
  command_spec s;
  s.name = "test";
  s.description = "a test command";
  s.program = std::move(program);
  s.fixed_args = std::move(fixed);
  s.timeout = timeout;
  return s;
}

/// Records what the callbacks of executions deliver (thread-safe); it must outlive the runner.
struct recorder {
  std::mutex m;
  std::condition_variable cv;
  std::vector<std::pair<output_stream, std::string>> lines;
  std::vector<execution_snapshot> done;
  std::map<std::string, int> done_count;
  /// For each on_done: whether `get` already returned that execution terminal.
  std::vector<bool> terminal_before_done;
  command_runner* runner = nullptr;

  run_callbacks callbacks() {
    run_callbacks cb;
    cb.on_line = [this](output_stream s, std::string_view l) {
      const std::scoped_lock lock{m};
      lines.emplace_back(s, std::string{l});
      cv.notify_all();
    };
    cb.on_done = [this](const execution_snapshot& s) {
      std::optional<execution_snapshot> seen;
      if (runner != nullptr) seen = runner->get(s.id);
      const std::scoped_lock lock{m};
      terminal_before_done.push_back(seen && is_terminal(seen->status) && seen->status == s.status);
      done.push_back(s);
      ++done_count[s.id];
      cv.notify_all();
    };
    return cb;
  }
  /// Waits until `n` executions ended; returns the last one.
  execution_snapshot wait(std::size_t n = 1) {
    std::unique_lock lock{m};
    REQUIRE(cv.wait_for(lock, patience, [&] { return done.size() >= n; }));
    return done.back();
  }
  std::vector<std::string> line_texts() {
    const std::scoped_lock lock{m};
    std::vector<std::string> out;
    out.reserve(lines.size());
    for (const auto& l : lines) out.push_back(l.second);
    return out;
  }
};

/// Starts `s` and waits for its end.
execution_snapshot run(command_runner& r, recorder& rec, const command_spec& s, std::vector<std::string> args = {}) {
  const auto before = [&] {
    const std::scoped_lock lock{rec.m};
    return rec.done.size();
  }();
  auto id = r.start(s, std::move(args), "alice", rec.callbacks());
  REQUIRE(id.has_value());
  auto snap = rec.wait(before + 1);
  CHECK(snap.id == *id);
  return snap;
}

/// Whether `pid` is a live process (a zombie is not: it runs nothing and holds nothing open).
bool alive(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::array<char, 1024> buf{};
  const auto n = ::read(fd, buf.data(), buf.size());
  ::close(fd);
  if (n <= 0) return false;
  const std::string_view text{buf.data(), static_cast<std::size_t>(n)};
  const auto close = text.rfind(')');
  if (close == std::string_view::npos || close + 2 >= text.size()) return false;
  const char state = text[close + 2];
  return state != 'Z' && state != 'X';
}

/// Waits (boundedly) until `pid` is no longer alive.
bool gone(pid_t pid) {
  const auto until = std::chrono::steady_clock::now() + patience;
  while (alive(pid)) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

std::optional<mcpcore::schema::violation> validate_json(const mcpcore::schema::compiled_schema& schema,
                                                        const std::string& json) {
  mcpcore::json::document doc;
  auto v = doc.parse(json);
  REQUIRE(v.has_value());
  return schema.validate(*v);
}

/// `validate_args` of the arguments given as JSON text ("" for an absent `args`).
std::optional<std::string> check_args(const allowlist& list, std::string_view name, std::string_view args_json) {
  if (args_json.empty()) return list.validate_args(name, mcpcore::json::value{});
  mcpcore::json::document doc;
  auto v = doc.parse(args_json);
  REQUIRE(v.has_value());
  return list.validate_args(name, *v);
}

}  // namespace

TEST_SUITE("command_runner") {
  // ---- the allow-list ----------------------------------------------------------------------------

  TEST_CASE("the shipped allow-list loads: list_directory, sleep, disk_usage and kernel_info") {
    auto list = allowlist::load(example_allowlist());
    REQUIRE_MESSAGE(list.has_value(), (list ? std::string{} : list.error()));
    CHECK(list->commands().size() >= 4);
    for (const auto& c : list->commands()) {
      CAPTURE(c.name);
      CHECK(!c.description.empty());
      CHECK(c.program.starts_with("/"));
      CHECK(::access(c.program.c_str(), X_OK) == 0);
    }
    const auto* ls = list->find("list_directory");
    REQUIRE(ls != nullptr);
    CHECK(ls->program == "/bin/ls");
    CHECK(ls->fixed_args == std::vector<std::string>{"-la", "--"});
    CHECK(ls->timeout == 10s);
    REQUIRE(list->find("sleep") != nullptr);
    CHECK(list->find("sleep")->program == "/bin/sleep");
    REQUIRE(list->find("disk_usage") != nullptr);
    CHECK(list->find("disk_usage")->fixed_args == std::vector<std::string>{"-h"});
    REQUIRE(list->find("kernel_info") != nullptr);
    CHECK(list->find("kernel_info")->program == "/bin/uname");
    CHECK(list->find("rm") == nullptr);
    CHECK(list->find("") == nullptr);
    // A command without an args schema takes no arguments.
    CHECK(list->find("disk_usage")->args_schema == R"({"type":"array","maxItems":0})");
  }

  TEST_CASE("defaults of an entry: no fixed arguments, no arguments, the default timeout") {
    const temp_dir dir;
    auto list = load_text(dir, one_entry(R"("name":"true_cmd","description":"exits 0","program":"/bin/true")"));
    REQUIRE_MESSAGE(list.has_value(), (list ? std::string{} : list.error()));
    const auto& c = list->commands().at(0);
    CHECK(c.fixed_args.empty());
    CHECK(c.timeout == default_command_timeout);
    CHECK(!list->validate_args("true_cmd", mcpcore::json::value{}));
    CHECK(check_args(*list, "true_cmd", "[]") == std::nullopt);
    CHECK(check_args(*list, "true_cmd", R"(["x"])").has_value());
    // An empty list is valid (the server then offers no execute_instruction).
    auto empty = load_text(dir, R"({"commands":[],"$comment":"nothing yet"})");
    REQUIRE(empty.has_value());
    CHECK(empty->commands().empty());
  }

  TEST_CASE("allow-list files that are refused, with a message naming the entry") {
    const temp_dir dir;
    const auto not_exec = dir.file("not_exec", "#!/bin/sh\n", 0644);
    const auto world_writable = dir.file("world_writable", "#!/bin/sh\n", 0777);
    struct refusal {
      std::string what;
      std::string text;
      std::vector<std::string> needles;  // each must appear in the message
    };
    const std::string ok_prefix = R"("description":"d","program":"/bin/ls")";
    const std::vector<refusal> cases{
        {"not JSON", R"({"commands":[)", {"not valid JSON"}},
        {"duplicate JSON key", R"({"commands":[],"commands":[]})", {"not valid JSON"}},
        {"root not an object", R"([])", {"JSON object"}},
        {"no commands", R"({})", {"commands"}},
        {"commands not an array", R"({"commands":{}})", {"commands"}},
        {"unknown top-level key", R"({"commands":[],"shell":true})", {"unknown top-level key", "shell"}},
        {"entry not an object", R"({"commands":["ls"]})", {"commands[0]", "name"}},
        {"unknown entry key", one_entry(R"("name":"a",)" + ok_prefix + R"(,"use_shell":true)"),
         {"commands[0]", "\"a\"", "unknown key", "use_shell"}},
        {"missing name", one_entry(ok_prefix), {"commands[0]", "name"}},
        {"name not a string", one_entry(R"("name":7,)" + ok_prefix), {"commands[0]", "name"}},
        {"upper-case name", one_entry(R"("name":"List",)" + ok_prefix), {"commands[0]", "^[a-z][a-z0-9_]{0,63}$"}},
        {"name with a dash", one_entry(R"("name":"a-b",)" + ok_prefix), {"commands[0]", "name must match"}},
        {"name starting with a digit", one_entry(R"("name":"1a",)" + ok_prefix), {"name must match"}},
        {"name too long", one_entry(R"("name":")" + std::string(65, 'a') + R"(",)" + ok_prefix), {"name must match"}},
        {"empty name", one_entry(R"("name":"",)" + ok_prefix), {"name must match"}},
        {"duplicate name",
         R"({"commands":[{"name":"a",)" + ok_prefix + R"(},{"name":"b",)" + ok_prefix + R"(},{"name":"a",)" +
             ok_prefix + "}]}",
         {"commands[2]", "\"a\"", "declared twice"}},
        {"missing description", one_entry(R"("name":"a","program":"/bin/ls")"), {"commands[0]", "description"}},
        {"empty description", one_entry(R"("name":"a","description":"","program":"/bin/ls")"), {"description"}},
        {"missing program", one_entry(R"("name":"a","description":"d")"), {"commands[0]", "\"a\"", "program"}},
        {"relative program", one_entry(R"("name":"a","description":"d","program":"bin/ls")"),
         {"commands[0]", "\"a\"", "absolute path"}},
        {"program that does not exist",
         one_entry(R"("name":"gone","description":"d","program":"/nonexistent/mcpcore-no-such-program")"),
         {"commands[0]", "\"gone\"", "/nonexistent/mcpcore-no-such-program", "does not exist"}},
        {"program that is a directory", one_entry(R"("name":"a","description":"d","program":"/usr")"),
         {"not a regular file"}},
        {"program with .. components", one_entry(R"("name":"a","description":"d","program":"/bin/../bin/ls")"),
         {"normal path"}},
        {"program not executable",
         one_entry(R"("name":"a","description":"d","program":")" + not_exec + R"(")"), {"not executable"}},
        {"program writable by anyone",
         one_entry(R"("name":"a","description":"d","program":")" + world_writable + R"(")"), {"writable by any"}},
        {"program with a NUL", one_entry(R"("name":"a","description":"d","program":"/bin/ls\u0000x")"), {"NUL"}},
        {"fixed_args not an array", one_entry(R"("name":"a",)" + ok_prefix + R"(,"fixed_args":"-la")"),
         {"fixed_args"}},
        {"fixed_args element not a string", one_entry(R"("name":"a",)" + ok_prefix + R"(,"fixed_args":["-l",1])"),
         {"fixed_args[1]"}},
        {"fixed_args element with a NUL",
         one_entry(R"("name":"a",)" + ok_prefix + R"(,"fixed_args":["a\u0000b"])"), {"fixed_args[0]", "NUL"}},
        {"args schema that does not compile",
         one_entry(R"("name":"a",)" + ok_prefix + R"(,"args":{"type":"array","items":{"type":"strin"}})"),
         {"commands[0]", "\"a\"", "args schema", "/items"}},
        {"args schema with an unknown keyword",
         one_entry(R"("name":"a",)" + ok_prefix +
                   R"(,"args":{"type":"array","items":{"type":"string"},"frobnicate":true})"),
         {"args schema"}},
        {"args schema with a bad pattern",
         one_entry(R"("name":"a",)" + ok_prefix +
                   R"(,"args":{"type":"array","items":{"type":"string","pattern":"("}})"),
         {"args schema", "/items/pattern"}},
        {"args schema not of type array", one_entry(R"("name":"a",)" + ok_prefix + R"(,"args":{"type":"string"})"),
         {R"("type": "array")"}},
        {"args schema not an object", one_entry(R"("name":"a",)" + ok_prefix + R"(,"args":[])"), {"schema object"}},
        {"args items not strings",
         one_entry(R"("name":"a",)" + ok_prefix + R"(,"args":{"type":"array","items":{"type":"integer"}})"),
         {"items"}},
        {"timeout zero", one_entry(R"("name":"a",)" + ok_prefix + R"(,"timeout_ms":0)"), {"timeout_ms", "100"}},
        {"timeout below the floor", one_entry(R"("name":"a",)" + ok_prefix + R"(,"timeout_ms":99)"), {"timeout_ms"}},
        {"timeout above the ceiling", one_entry(R"("name":"a",)" + ok_prefix + R"(,"timeout_ms":3600001)"),
         {"timeout_ms", "3600000"}},
        {"timeout negative", one_entry(R"("name":"a",)" + ok_prefix + R"(,"timeout_ms":-5)"), {"timeout_ms"}},
        {"timeout as a string", one_entry(R"("name":"a",)" + ok_prefix + R"(,"timeout_ms":"1000")"), {"timeout_ms"}},
        {"timeout with a fraction", one_entry(R"("name":"a",)" + ok_prefix + R"(,"timeout_ms":1000.5)"),
         {"timeout_ms"}},
        {"$comment not a string", one_entry(R"("name":"a",)" + ok_prefix + R"(,"$comment":1)"), {"$comment"}},
    };
    for (const auto& c : cases) {
      CAPTURE(c.what);
      auto list = load_text(dir, c.text);
      REQUIRE(!list.has_value());
      for (const auto& needle : c.needles) {
        CAPTURE(needle);
        CAPTURE(list.error());
        CHECK(list.error().find(needle) != std::string::npos);
      }
    }

    SUBCASE("more commands than max_allowlist_commands") {
      std::string text = R"({"commands":[)";
      for (std::size_t i = 0; i <= max_allowlist_commands; ++i) {
        text += (i == 0 ? "" : ",") + std::string{R"({"name":"c)"} + std::to_string(i) + R"(",)" + ok_prefix + "}";
      }
      text += "]}";
      auto list = load_text(dir, text);
      REQUIRE(!list.has_value());
      CHECK(list.error().find("max_allowlist_commands") != std::string::npos);
    }
    SUBCASE("a file that does not exist") {
      auto list = allowlist::load((dir.path / "missing.json").string());
      REQUIRE(!list.has_value());
      CHECK(list.error().find("cannot open") != std::string::npos);
    }
    SUBCASE("a directory") {
      auto list = allowlist::load(dir.path.string());
      REQUIRE(!list.has_value());
      CHECK(list.error().find("not a regular file") != std::string::npos);
    }
    SUBCASE("a FIFO is refused without blocking") {
      const auto fifo = (dir.path / "fifo").string();
      REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
      auto list = allowlist::load(fifo);
      REQUIRE(!list.has_value());
      CHECK(list.error().find("not a regular file") != std::string::npos);
    }
    SUBCASE("an oversized file") {
      auto list = allowlist::load(dir.file("big.json", std::string(max_allowlist_bytes + 1, ' ')));
      REQUIRE(!list.has_value());
      CHECK(list.error().find("max_allowlist_bytes") != std::string::npos);
    }
    SUBCASE("a file writable by anyone") {
      auto list = allowlist::load(dir.file("open.json", R"({"commands":[]})", 0666));
      REQUIRE(!list.has_value());
      CHECK(list.error().find("writable by any user") != std::string::npos);
    }
  }

  TEST_CASE("validate_args checks the command's schema, names the instance path and never echoes the caller") {
    auto list = allowlist::load(example_allowlist());
    REQUIRE(list.has_value());
    CHECK(check_args(*list, "list_directory", R"(["/"])") == std::nullopt);
    CHECK(check_args(*list, "list_directory", R"(["/var/log"])") == std::nullopt);
    CHECK(check_args(*list, "sleep", R"(["1"])") == std::nullopt);
    CHECK(check_args(*list, "sleep", R"(["30"])") == std::nullopt);
    CHECK(check_args(*list, "disk_usage", "") == std::nullopt);
    CHECK(check_args(*list, "disk_usage", "[]") == std::nullopt);
    CHECK(check_args(*list, "kernel_info", "") == std::nullopt);

    struct bad {
      std::string command;
      std::string args;
      std::string path;    // the instance path the message must name
      std::string secret;  // caller text it must not echo ("" when none)
    };
    const std::vector<bad> cases{
        {"list_directory", "", "/args", ""},
        {"list_directory", "[]", "/args", ""},
        {"list_directory", R"(["relative/secret-dir"])", "/args/0", "secret-dir"},
        {"list_directory", R"(["-rf-secret"])", "/args/0", "-rf-secret"},
        {"list_directory", R"(["/a","/b"])", "/args", ""},
        {"list_directory", R"([7])", "/args/0", ""},
        {"list_directory", R"("/etc-secret")", "/args", "etc-secret"},
        {"list_directory", R"({"path":"/"})", "/args", ""},
        {"list_directory", R"(["/x\u0000secret"])", "/args/0", "secret"},
        {"sleep", R"(["0"])", "/args/0", ""},
        {"sleep", R"(["31"])", "/args/0", ""},
        {"sleep", R"(["1; rm -rf /tmp/secret"])", "/args/0", "secret"},
        {"sleep", R"(["1","2"])", "/args", ""},
        {"disk_usage", R"(["--secret-flag"])", "/args", "secret-flag"},
        {"kernel_info", R"(["-s"])", "/args", ""},
    };
    for (const auto& c : cases) {
      CAPTURE(c.command);
      CAPTURE(c.args);
      const auto why = check_args(*list, c.command, c.args);
      REQUIRE(why.has_value());
      CAPTURE(*why);
      CHECK(why->find(" at " + c.path + ":") != std::string::npos);
      CHECK(why->find(c.command) != std::string::npos);
      if (!c.secret.empty()) CHECK(why->find(c.secret) == std::string::npos);
    }
    const auto unknown = check_args(*list, "rm-secret", R"(["/"])");
    REQUIRE(unknown.has_value());
    CHECK(unknown->find("unknown command") != std::string::npos);
    CHECK(unknown->find("rm-secret") == std::string::npos);
  }

  // ---- running ---------------------------------------------------------------------------------

  TEST_CASE("a run delivers each output line to on_line, captures the output and succeeds with exit code 0") {
    recorder rec;
    command_runner r;
    rec.runner = &r;
    const auto s = run(r, rec, spec("/usr/bin/printf", {R"(one\ntwo\r\nthree)"}));
    CHECK(s.status == "succeeded");
    CHECK(s.command == "test");
    CHECK(s.submitted_by == "alice");
    CHECK(s.exit_code == 0);
    CHECK(!s.signal);
    CHECK(s.output == "one\ntwo\r\nthree");
    CHECK(s.output_bytes == s.output.size());
    CHECK(!s.truncated);
    REQUIRE(s.finished.has_value());
    CHECK(*s.finished >= s.started);
    CHECK(s.id.size() == 32);
    CHECK(std::all_of(s.id.begin(), s.id.end(),
                      [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }));
    // The last line has no line break: it arrives at the end of the stream.
    CHECK(rec.line_texts() == std::vector<std::string>{"one", "two", "three"});
    for (const auto& l : rec.lines) CHECK(l.first == output_stream::out);
    const auto again = r.get(s.id);
    REQUIRE(again.has_value());
    CHECK(again->status == "succeeded");
    CHECK(again->output == s.output);
    CHECK(r.running_count() == 0);
  }

  TEST_CASE("the shipped list_directory lists / (bin and etc)") {
    auto list = allowlist::load(example_allowlist());
    REQUIRE(list.has_value());
    recorder rec;
    command_runner r;
    const auto s = run(r, rec, *list->find("list_directory"), {"/"});
    CHECK(s.status == "succeeded");
    CHECK(s.output.find(" bin") != std::string::npos);
    CHECK(s.output.find(" etc") != std::string::npos);
  }

  TEST_CASE("stderr is captured and reported as err lines, a non-zero exit is failed") {
    recorder rec;
    command_runner r;
    const auto s = run(r, rec, spec("/bin/sh", {"-c", "echo to-out; echo to-err >&2; exit 3"}));
    CHECK(s.status == "failed");
    CHECK(s.exit_code == 3);
    CHECK(!s.signal);
    CHECK(s.output.find("to-out\n") != std::string::npos);
    CHECK(s.output.find("to-err\n") != std::string::npos);
    {
      const std::scoped_lock lock{rec.m};
      CHECK(std::count(rec.lines.begin(), rec.lines.end(), std::pair{output_stream::out, std::string{"to-out"}}) == 1);
      CHECK(std::count(rec.lines.begin(), rec.lines.end(), std::pair{output_stream::err, std::string{"to-err"}}) == 1);
    }
    const auto ls = run(r, rec, spec("/bin/ls", {"--", "/nonexistent-mcpcore-path"}));
    CHECK(ls.status == "failed");
    CHECK(ls.exit_code == 2);
    CHECK(ls.output.find("No such file") != std::string::npos);
  }

  TEST_CASE("a command past its timeout is timed_out and its whole process group is gone") {
    SUBCASE("SIGTERM is enough") {
      recorder rec;
      command_runner r;
      const auto s = run(r, rec, spec("/bin/sleep", {"30"}, 200ms));
      CHECK(s.status == "timed_out");
      CHECK(is_terminal(s.status));
      CHECK(s.signal == SIGTERM);
      CHECK(!s.exit_code);
    }
    SUBCASE("a group that ignores SIGTERM is killed after kill_grace") {
      recorder rec;
      runner_options o;
      o.kill_grace = 300ms;
      command_runner r{o};
      // The shell and its background child both ignore SIGTERM and print their pids.
      const auto s = run(r, rec,
                         spec("/bin/sh", {"-c", R"(trap '' TERM; /bin/sleep 300 & echo "$!"; echo "$$"; wait)"}, 3s));
      CHECK(s.status == "timed_out");
      CHECK(s.signal == SIGKILL);
      const auto lines = rec.line_texts();
      REQUIRE(lines.size() == 2);
      for (const auto& l : lines) {
        CAPTURE(l);
        const pid_t pid = std::stoi(l);
        REQUIRE(pid > 1);
        CHECK(gone(pid));
      }
      CHECK(r.running_count() == 0);
    }
    SUBCASE("what a finished command leaves in its group is killed") {
      recorder rec;
      command_runner r;
      const auto s = run(r, rec, spec("/bin/sh", {"-c", "/bin/sleep 300 >/dev/null 2>&1 & echo \"$!\""}));
      CHECK(s.status == "succeeded");
      const auto lines = rec.line_texts();
      REQUIRE(lines.size() == 1);
      CHECK(gone(std::stoi(lines.front())));
    }
  }

  TEST_CASE("an output flood is truncated at max_output_bytes with bounded memory, and reported lines are capped") {
    recorder rec;
    runner_options o;
    o.max_output_bytes = std::size_t{64} << 10U;
    o.max_reported_lines = 50;
    command_runner r{o};
    const auto s = run(r, rec, spec("/usr/bin/yes", {}, 1s));
    CHECK(s.status == "timed_out");
    CHECK(s.truncated);
    CHECK(s.output_bytes > o.max_output_bytes);
    // The kept output is the first max_output_bytes, then the note saying so.
    CHECK(s.output.size() <= o.max_output_bytes + 200);
    CHECK(s.output.starts_with("y\ny\ny\n"));
    CHECK(s.output.find("[output truncated: kept the first 65536 of ") != std::string::npos);
    CHECK(rec.line_texts().size() == 50);
    const auto got = r.get(s.id);
    REQUIRE(got.has_value());
    CHECK(got->output.size() == s.output.size());
  }

  TEST_CASE("a line longer than max_line_bytes arrives in pieces, the output keeps it whole") {
    recorder rec;
    runner_options o;
    o.max_line_bytes = 1000;
    command_runner r{o};
    const auto s = run(r, rec, spec("/usr/bin/printf", {"%s\\nend\\n", std::string(2500, 'a')}));
    CHECK(s.status == "succeeded");
    CHECK(s.output == std::string(2500, 'a') + "\nend\n");
    const auto lines = rec.line_texts();
    REQUIRE(lines.size() == 4);
    CHECK(lines[0] == std::string(1000, 'a'));
    CHECK(lines[1] == std::string(1000, 'a'));
    CHECK(lines[2] == std::string(500, 'a'));
    CHECK(lines[3] == "end");
  }

  TEST_CASE("a start beyond max_concurrent answers too_many_running, an ended one frees its slot") {
    recorder rec;
    runner_options o;
    o.max_concurrent = 2;
    command_runner r{o};
    auto a = r.start(spec("/bin/sleep", {"30"}), {}, "alice", rec.callbacks());
    auto b = r.start(spec("/bin/sleep", {"30"}), {}, "alice", rec.callbacks());
    REQUIRE(a.has_value());
    REQUIRE(b.has_value());
    CHECK(*a != *b);
    CHECK(r.running_count() == 2);
    auto c = r.start(spec("/bin/true"), {}, "alice", rec.callbacks());
    REQUIRE(!c.has_value());
    CHECK(c.error() == start_error::too_many_running);
    CHECK(!to_string(c.error()).empty());
    CHECK(r.get(*a)->status == "running");
    r.shutdown();
    CHECK(rec.wait(2).status == "failed");
    CHECK(r.get(*a)->signal == SIGTERM);
    CHECK(r.get(*b)->status == "failed");
    auto late = r.start(spec("/bin/true"), {}, "alice", rec.callbacks());
    REQUIRE(!late.has_value());
    CHECK(late.error() == start_error::shutting_down);

    recorder rec1;
    runner_options one;
    one.max_concurrent = 1;
    command_runner r1{one};
    for (int i = 0; i < 3; ++i) CHECK(run(r1, rec1, spec("/bin/true")).status == "succeeded");
  }

  TEST_CASE("starts that cannot be made: a missing program, a relative one, a NUL in an argument") {
    recorder rec;
    command_runner r;
    auto missing = r.start(spec("/nonexistent/mcpcore-no-such-program"), {}, "alice", rec.callbacks());
    REQUIRE(!missing.has_value());
    CHECK(missing.error() == start_error::spawn_failed);
    auto relative = r.start(spec("bin/ls"), {}, "alice", rec.callbacks());
    REQUIRE(!relative.has_value());
    CHECK(relative.error() == start_error::invalid_argument);
    auto nul = r.start(spec("/bin/echo"), {std::string{"a\0b", 3}}, "alice", rec.callbacks());
    REQUIRE(!nul.has_value());
    CHECK(nul.error() == start_error::invalid_argument);
    CHECK(r.running_count() == 0);
    // The refused starts gave their slots back.
    CHECK(run(r, rec, spec("/bin/true")).status == "succeeded");
    for (auto e : {start_error::too_many_running, start_error::shutting_down, start_error::invalid_argument,
                   start_error::spawn_failed}) {
      CHECK(!to_string(e).empty());
    }
  }

  TEST_CASE("arguments with shell metacharacters reach the program literally") {
    const temp_dir dir;
    const auto marker = (dir.path / "pwned").string();
    const std::vector<std::string> args{"$(touch " + marker + ")", "`touch " + marker + "`", "; touch " + marker,
                                        "| touch " + marker, "&& touch " + marker, "*", "$HOME", "'\"\\", "~",
                                        "a b\tc", "> " + marker};
    recorder rec;
    command_runner r;
    const auto s = run(r, rec, spec("/usr/bin/printf", {"%s\\n"}), args);
    CHECK(s.status == "succeeded");
    CHECK(rec.line_texts() == args);
    CHECK(!fs::exists(marker));
  }

  TEST_CASE("a command's setup: minimal environment, / as working directory, stdin on /dev/null, own group, no "
            "inherited descriptor") {
    recorder rec;
    command_runner r;
    CHECK(run(r, rec, spec("/usr/bin/env")).output == "PATH=/usr/bin:/bin\nLANG=C.UTF-8\n");
    CHECK(run(r, rec, spec("/bin/pwd")).output == "/\n");
    CHECK(run(r, rec, spec("/bin/readlink", {"/proc/self/fd/0"})).output == "/dev/null\n");
    // A descriptor this process leaves inheritable does not reach the command (ls's own is 3).
    const int leaked = ::open("/dev/null", O_RDONLY);  // NOLINT: deliberately without O_CLOEXEC
    REQUIRE(leaked >= 0);
    CHECK(run(r, rec, spec("/bin/ls", {"/proc/self/fd"})).output == "0\n1\n2\n3\n");
    ::close(leaked);
    // /proc/self/stat: "pid (comm) state ppid pgrp ...": the command leads a group of its own.
    const auto stat = run(r, rec, spec("/bin/cat", {"/proc/self/stat"})).output;
    std::istringstream in{stat.substr(stat.rfind(')') + 2)};
    std::string state;
    long ppid = 0;
    long pgrp = 0;
    in >> state >> ppid >> pgrp;
    CHECK(std::stol(stat) == pgrp);
    CHECK(pgrp != ::getpgrp());
  }

  TEST_CASE("get() of an unknown id is nullopt") {
    command_runner r;
    CHECK(!r.get("0123456789abcdef0123456789abcdef"));
    CHECK(!r.get(""));
    CHECK(!r.get("not-an-id"));
  }

  TEST_CASE("finished executions are retained up to max_retained, oldest first, running ones are never evicted") {
    recorder rec;
    runner_options o;
    o.max_retained = 2;
    command_runner r{o};
    auto longer = r.start(spec("/bin/sleep", {"30"}), {}, "alice", rec.callbacks());
    REQUIRE(longer.has_value());
    std::vector<std::string> ids;
    ids.reserve(4);
    for (int i = 0; i < 4; ++i) ids.push_back(run(r, rec, spec("/bin/true")).id);
    CHECK(!r.get(ids[0]));
    CHECK(!r.get(ids[1]));
    CHECK(r.get(ids[2]).has_value());
    CHECK(r.get(ids[3]).has_value());
    REQUIRE(r.get(*longer).has_value());
    CHECK(r.get(*longer)->status == "running");
    CHECK(r.running_count() == 1);
  }

  TEST_CASE("host-server.md#execute_instruction: one principal's quick runs never push out another's finished results") {
    recorder rec;
    runner_options o;
    o.max_retained = 4;
    o.max_retained_per_principal = 3;
    command_runner r{o};
    const auto run_as = [&](const std::string& who) {
      const auto before = [&] {
        const std::scoped_lock lock{rec.m};
        return rec.done.size();
      }();
      auto id = r.start(spec("/bin/true"), {}, who, rec.callbacks());
      REQUIRE(id.has_value());
      return rec.wait(before + 1).id;
    };
    const std::string op_result = run_as("op");
    std::vector<std::string> flood;
    for (int i = 0; i < 10; ++i) flood.push_back(run_as("op2"));
    // op's one result outlives op2's flood: op2 keeps only its own newest three.
    REQUIRE(r.get(op_result).has_value());
    CHECK(r.get(op_result)->submitted_by == "op");
    for (std::size_t i = 0; i < flood.size(); ++i) CHECK(r.get(flood[i]).has_value() == (i >= flood.size() - 3));
    // With the total cap reached, a third principal's run forgets op2's oldest, not op's.
    const std::string third = run_as("op3");
    CHECK(r.get(third).has_value());
    CHECK(r.get(op_result).has_value());
    CHECK_FALSE(r.get(flood[flood.size() - 3]).has_value());
    CHECK(r.get(flood.back()).has_value());
  }

  TEST_CASE("on_done is called exactly once, after get() returns the terminal snapshot") {
    recorder rec;
    command_runner r;
    rec.runner = &r;
    run(r, rec, spec("/bin/true"));
    run(r, rec, spec("/bin/false"));
    run(r, rec, spec("/bin/sleep", {"30"}, 150ms));
    r.shutdown();
    const std::scoped_lock lock{rec.m};
    REQUIRE(rec.done.size() == 3);
    for (const auto& [id, n] : rec.done_count) CHECK(n == 1);
    for (const bool b : rec.terminal_before_done) CHECK(b);
    CHECK(rec.done[0].status == "succeeded");
    CHECK(rec.done[1].status == "failed");
    CHECK(rec.done[1].exit_code == 1);
    CHECK(rec.done[2].status == "timed_out");
  }

  TEST_CASE("shutdown stops running commands, delivers their terminal, joins, later calls are refused") {
    recorder rec;
    runner_options o;
    o.shutdown_grace = 300ms;
    auto r = std::make_unique<command_runner>(o);
    rec.runner = r.get();
    auto plain = r->start(spec("/bin/sleep", {"300"}, 1h), {}, "alice", rec.callbacks());
    auto stubborn = r->start(spec("/bin/sh", {"-c", "trap '' TERM; echo \"$$\"; while :; do /bin/sleep 1; done"}, 1h),
                             {}, "alice", rec.callbacks());
    REQUIRE(plain.has_value());
    REQUIRE(stubborn.has_value());
    {  // wait for the stubborn shell's pid line: its trap is set by then
      std::unique_lock lock{rec.m};
      REQUIRE(rec.cv.wait_for(lock, patience, [&] { return !rec.lines.empty(); }));
    }
    r->shutdown();
    {
      const std::scoped_lock lock{rec.m};
      REQUIRE(rec.done.size() == 2);
      for (const auto& [id, n] : rec.done_count) CHECK(n == 1);
    }
    const auto p = r->get(*plain);
    const auto s = r->get(*stubborn);
    REQUIRE(p.has_value());
    REQUIRE(s.has_value());
    CHECK(p->status == "failed");
    CHECK(p->signal == SIGTERM);
    CHECK(s->status == "failed");
    CHECK(s->signal == SIGKILL);
    CHECK(r->running_count() == 0);
    REQUIRE(!rec.line_texts().empty());
    CHECK(gone(std::stoi(rec.line_texts().front())));
    const auto late = r->start(spec("/bin/true"), {}, "alice", rec.callbacks());
    REQUIRE(!late.has_value());
    CHECK(late.error() == start_error::shutting_down);
    CHECK(!r->capture({"/bin/true"}, 1s, 100).has_value());
    r->shutdown();  // idempotent
    rec.runner = nullptr;

    // The destructor does the same.
    recorder rec2;
    {
      command_runner r2{o};
      REQUIRE(r2.start(spec("/bin/sleep", {"300"}, 1h), {}, "alice", rec2.callbacks()).has_value());
    }
    const std::scoped_lock lock{rec2.m};
    REQUIRE(rec2.done.size() == 1);
    CHECK(rec2.done[0].status == "failed");
  }

  TEST_CASE("host-server.md#execute_instruction: cancel stops a running command's whole group, its status is cancelled") {
    auto schema = mcpcore::schema::compiled_schema::compile(execution_status_schema);
    REQUIRE(schema.has_value());
    SUBCASE("SIGTERM is enough") {
      recorder rec;
      command_runner r;
      rec.runner = &r;
      // The shell and its background child print their pids, then wait (an hour's timeout).
      auto id = r.start(spec("/bin/sh", {"-c", R"(/bin/sleep 300 & echo "$!"; echo "$$"; wait)"}, 1h), {}, "alice",
                        rec.callbacks());
      REQUIRE(id.has_value());
      {
        std::unique_lock lock{rec.m};
        REQUIRE(rec.cv.wait_for(lock, patience, [&] { return rec.lines.size() >= 2; }));
      }
      CHECK(r.cancel(*id));
      const auto s = rec.wait();
      CHECK(s.id == *id);
      CHECK(s.status == "cancelled");
      CHECK(is_terminal(s.status));
      CHECK(s.signal == SIGTERM);
      CHECK(!s.exit_code);
      for (const auto& l : rec.line_texts()) {
        CAPTURE(l);
        CHECK(gone(std::stoi(l)));
      }
      const auto kept = r.get(*id);
      REQUIRE(kept.has_value());
      CHECK(kept->status == "cancelled");
      CHECK(validate_json(*schema, snapshot_json(*kept)) == std::nullopt);
      CHECK_FALSE(r.cancel(*id));  // over already
      CHECK(r.running_count() == 0);
      const std::scoped_lock lock{rec.m};
      CHECK(rec.done_count[*id] == 1);
      CHECK(rec.terminal_before_done.back());
    }
    SUBCASE("a group that ignores SIGTERM is killed after kill_grace") {
      recorder rec;
      runner_options o;
      o.kill_grace = 300ms;
      command_runner r{o};
      auto id = r.start(spec("/bin/sh", {"-c", R"(trap '' TERM; /bin/sleep 300 & echo "$!"; echo "$$"; wait)"}, 1h), {},
                        "alice", rec.callbacks());
      REQUIRE(id.has_value());
      {
        std::unique_lock lock{rec.m};
        REQUIRE(rec.cv.wait_for(lock, patience, [&] { return rec.lines.size() >= 2; }));
      }
      CHECK(r.cancel(*id));
      const auto s = rec.wait();
      CHECK(s.status == "cancelled");
      CHECK(s.signal == SIGKILL);
      for (const auto& l : rec.line_texts()) CHECK(gone(std::stoi(l)));
    }
    SUBCASE("an unknown or finished execution is not cancelled") {
      recorder rec;
      command_runner r;
      CHECK_FALSE(r.cancel("0123456789abcdef0123456789abcdef"));
      const auto s = run(r, rec, spec("/bin/true"));
      CHECK_FALSE(r.cancel(s.id));
      CHECK(r.get(s.id)->status == "succeeded");
    }
  }

  TEST_CASE("host-server.md#commands-as-tasks: a start under an execution id chosen before, a malformed or taken one is refused") {
    recorder rec;
    command_runner r;
    const auto chosen = command_runner::new_execution_id();
    REQUIRE(chosen.has_value());
    CHECK(chosen->size() == 32);
    CHECK(*chosen != command_runner::new_execution_id().value_or(""));
    auto id = r.start(spec("/bin/echo", {"chosen"}), {}, "alice", rec.callbacks(), {}, *chosen);
    REQUIRE(id.has_value());
    CHECK(*id == *chosen);
    CHECK(rec.wait().id == *chosen);
    CHECK(r.get(*chosen)->output == "chosen\n");
    const auto taken = r.start(spec("/bin/true"), {}, "alice", rec.callbacks(), {}, *chosen);
    REQUIRE_FALSE(taken.has_value());
    CHECK(taken.error() == start_error::invalid_argument);
    for (const char* bad : {"0123", "0123456789ABCDEF0123456789ABCDEF", "0123456789abcdef0123456789abcdeg"}) {
      CAPTURE(bad);
      const auto refused = r.start(spec("/bin/true"), {}, "alice", rec.callbacks(), {}, bad);
      REQUIRE_FALSE(refused.has_value());
      CHECK(refused.error() == start_error::invalid_argument);
    }
    CHECK(r.running_count() == 0);
  }

  TEST_CASE("capture returns stdout, keeps the most recent max_bytes, and fails on timeout, exit and bad programs") {
    command_runner r;
    auto hello = r.capture({"/usr/bin/printf", "hello"}, 10s, 100);
    REQUIRE(hello.has_value());
    CHECK(*hello == "hello");

    auto literal = r.capture({"/bin/echo", "$(id)", ";", "|", "`id`"}, 10s, 100);
    REQUIRE(literal.has_value());
    CHECK(*literal == "$(id) ; | `id`\n");

    auto tail = r.capture({"/usr/bin/seq", "1", "100000"}, 30s, 100);
    REQUIRE(tail.has_value());
    CHECK(tail->size() <= 100);
    CHECK(tail->ends_with("\n100000\n"));
    // Whole lines only: consecutive numbers up to 100000.
    std::istringstream lines{*tail};
    std::vector<long> numbers;
    for (std::string l; std::getline(lines, l);) numbers.push_back(std::stol(l));
    REQUIRE(numbers.size() > 2);
    for (std::size_t i = 1; i < numbers.size(); ++i) CHECK(numbers[i] == numbers[i - 1] + 1);

    auto flood = r.capture({"/usr/bin/head", "-c", "20000000", "/dev/zero"}, 60s, 1000);
    REQUIRE(flood.has_value());
    CHECK(flood->size() <= 1000);

    auto slow = r.capture({"/bin/sleep", "30"}, 200ms, 100);
    REQUIRE(!slow.has_value());
    CHECK(slow.error() == "sleep did not finish within 200 ms");

    auto failing = r.capture({"/bin/ls", "/nonexistent-mcpcore-path"}, 10s, 100);
    REQUIRE(!failing.has_value());
    CHECK(failing.error().starts_with("ls exited with status 2: "));
    CHECK(failing.error().find("No such file") != std::string::npos);

    auto killed = r.capture({"/bin/sh", "-c", "kill -KILL $$"}, 10s, 100);
    REQUIRE(!killed.has_value());
    CHECK(killed.error() == "sh was killed by SIGKILL");

    auto relative = r.capture({"ls"}, 10s, 100);
    REQUIRE(!relative.has_value());
    CHECK(relative.error().find("absolute path") != std::string::npos);
    auto none = r.capture({}, 10s, 100);
    CHECK(!none.has_value());
    auto missing = r.capture({"/nonexistent/mcpcore-no-such-program"}, 10s, 100);
    REQUIRE(!missing.has_value());
    CHECK(missing.error().starts_with("cannot start mcpcore-no-such-program: "));
    CHECK(r.running_count() == 0);
  }

  TEST_CASE("snapshots validate against execution_status_schema (strict subset)") {
    auto schema = mcpcore::schema::compiled_schema::compile(execution_status_schema);
    REQUIRE(schema.has_value());
    CHECK(schema->root_is_closed());

    recorder rec;
    runner_options o;
    o.max_output_bytes = 1000;
    command_runner r{o};
    auto running = r.start(spec("/bin/sleep", {"30"}), {}, "alice", rec.callbacks());
    REQUIRE(running.has_value());
    const auto live = r.get(*running);
    REQUIRE(live.has_value());
    std::string json = snapshot_json(*live);
    CHECK(json.find("\"exit_code\"") == std::string::npos);
    CHECK(json.find("\"finished_at_ms\"") == std::string::npos);
    CHECK(json.find("null") == std::string::npos);
    CHECK(validate_json(*schema, json) == std::nullopt);
    json.pop_back();  // as get_execution_status adds its poll hint
    json += R"(,"retry_after_ms":2000})";
    CHECK(validate_json(*schema, json) == std::nullopt);

    std::vector<execution_snapshot> ends{run(r, rec, spec("/bin/echo", {"hi"})), run(r, rec, spec("/bin/false")),
                                         run(r, rec, spec("/bin/sleep", {"30"}, 100ms)),
                                         run(r, rec, spec("/usr/bin/seq", {"1", "10000"}))};
    CHECK(ends[3].truncated);
    for (const auto& s : ends) {
      CAPTURE(s.status);
      const auto text = snapshot_json(s);
      CAPTURE(text.substr(0, 300));
      CHECK(validate_json(*schema, text) == std::nullopt);
      CHECK(text.find("\"finished_at_ms\"") != std::string::npos);
      mcpcore::json::document doc;
      auto v = doc.parse(text);
      REQUIRE(v.has_value());
      CHECK((*v)["execution_id"].as_string() == s.id);
      CHECK((*v)["status"].as_string() == s.status);
      CHECK((*v)["output"].as_string() == s.output);
      CHECK((*v)["truncated"].as_bool() == s.truncated);
    }
    CHECK(snapshot_json(ends[0]).find(R"("exit_code":0)") != std::string::npos);
    CHECK(snapshot_json(ends[2]).find(R"("signal":15)") != std::string::npos);
    // The schema is closed: a member it does not declare is refused.
    CHECK(validate_json(*schema, snapshot_json(ends[0]).insert(1, R"("extra":1,)")).has_value());
    r.shutdown();
  }

  TEST_CASE("concurrent starts from several threads each end exactly once with their own output") {
    recorder rec;
    runner_options o;
    o.max_concurrent = 6;
    o.max_retained = 1000;
    command_runner r{o};
    rec.runner = &r;
    constexpr std::size_t threads = 4;
    constexpr std::size_t per_thread = 6;
    std::mutex ids_m;
    std::map<std::string, std::string> expected;  // id -> output
    std::atomic<int> refused{0};
    std::atomic<bool> polling{true};
    std::thread poller{[&] {
      while (polling.load()) {
        (void)r.running_count();
        std::vector<std::string> known;
        {
          const std::scoped_lock lock{ids_m};
          for (const auto& [id, out] : expected) known.push_back(id);
        }
        for (const auto& id : known) (void)r.get(id);
        std::this_thread::sleep_for(1ms);
      }
    }};
    std::vector<std::thread> starters;
    starters.reserve(threads);
    for (std::size_t t = 0; t < threads; ++t) {
      starters.emplace_back([&, t] {
        for (std::size_t i = 0; i < per_thread; ++i) {
          const std::string word = std::to_string(t) + "-" + std::to_string(i);
          for (int attempt = 0; attempt < 6000; ++attempt) {
            auto id = r.start(spec("/bin/echo", {word}), {}, "t" + std::to_string(t), rec.callbacks());
            if (id) {
              const std::scoped_lock lock{ids_m};
              expected.emplace(*id, word + "\n");
              break;
            }
            if (id.error() != start_error::too_many_running) {
              ++refused;
              break;
            }
            std::this_thread::sleep_for(10ms);
          }
        }
      });
    }
    for (auto& t : starters) t.join();
    CHECK(refused.load() == 0);
    REQUIRE(expected.size() == threads * per_thread);
    rec.wait(expected.size());
    polling.store(false);
    poller.join();
    r.shutdown();
    const std::scoped_lock lock{rec.m};
    CHECK(rec.done.size() == expected.size());
    for (const bool b : rec.terminal_before_done) CHECK(b);
    for (const auto& d : rec.done) {
      CAPTURE(d.id);
      CHECK(rec.done_count[d.id] == 1);
      REQUIRE(expected.contains(d.id));
      CHECK(d.output == expected[d.id]);
      CHECK(d.status == "succeeded");
    }
  }
}
