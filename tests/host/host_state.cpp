// SPDX-License-Identifier: Apache-2.0
// Tests of the host state probes against this machine's real /proc, /sys and sockets (loopback only).
#include "host_state.hpp"

#include <doctest/doctest.h>

#include <mcpcore/dispatch/schema.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/wire/json.hpp>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdlib.h>  // NOLINT(modernize-deprecated-headers): POSIX mkdtemp
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <ios>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

using namespace mcpcore_host;
namespace json = mcpcore::json;

namespace {

using probe_result = mcpcore::result<std::string, std::string>;

/// A probe's output, parsed and validated against its output schema (docs/host-server.md: the
/// official SDK client validates structuredContent against outputSchema, so each output must match
/// exactly).
class checked_output {
 public:
  checked_output(const probe_result& r, std::string_view schema) {
    REQUIRE_MESSAGE(r.has_value(), (r ? std::string{} : r.error()));
    text_ = *r;
    auto root = doc_.parse(text_);
    REQUIRE_MESSAGE(root.has_value(), text_);
    root_ = *root;
    REQUIRE(root_.is_object());
    auto compiled = mcpcore::schema::compiled_schema::compile(schema);
    REQUIRE(compiled.has_value());
    const auto violation = compiled->validate(root_);
    CHECK_MESSAGE(!violation.has_value(),
                  (violation ? violation->path + ": " + violation->reason + " in " + text_ : std::string{}));
  }
  [[nodiscard]] json::value operator[](std::string_view key) const { return root_[key]; }
  [[nodiscard]] const std::string& text() const { return text_; }

 private:
  std::string text_;
  json::document doc_;
  json::value root_;
};

std::string str(json::value v) { return v.is_string() ? std::string{v.as_string()} : std::string{"<not a string>"}; }
std::int64_t integer(json::value v) { return v.to_int64().value_or(-1); }
double number(json::value v) { return v.to_double().value_or(-1); }

std::string read_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

std::string first_line(const std::string& path) {
  std::string s = read_file(path);
  if (const auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  return s;
}

/// A /proc/meminfo value in kB, or -1.
std::int64_t meminfo_kib(std::string_view key) {
  std::istringstream in{read_file("/proc/meminfo")};
  std::string name;
  std::int64_t value = 0;
  std::string unit;
  while (in >> name >> value) {
    if (name.back() == ':') name.pop_back();
    if (name == key) return value;
    std::getline(in, unit);
  }
  return -1;
}

/// The element of `array` whose member `key` equals `wanted`, or an absent value.
json::value find_by(json::value array, std::string_view key, std::string_view wanted) {
  for (const auto e : array.elements()) {
    if (e[key].is_string() && e[key].as_string() == wanted) return e;
  }
  return {};
}

/// A directory under $TMPDIR (or /tmp), removed with its files on scope exit.
class temp_dir {
 public:
  temp_dir() {
    const char* base = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe): read once, no setenv
    std::string pattern = std::string{base != nullptr && *base != '\0' ? base : "/tmp"} + "/mcpcore-host-state-XXXXXX";
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~temp_dir() {
    for (const auto& f : files_) ::unlink(f.c_str());
    ::rmdir(path_.c_str());
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  /// Writes `content` to a file named `name` in the directory; @returns its path.
  std::string write(const std::string& name, std::string_view content) {
    const std::string p = track(name);
    std::ofstream out{p, std::ios::binary | std::ios::trunc};
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    REQUIRE(out.good());
    return p;
  }
  /// The path of `name`, removed with the directory.
  std::string track(const std::string& name) {
    files_.push_back(path_ + "/" + name);
    return files_.back();
  }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

/// A socket, closed on scope exit.
class socket_fd {
 public:
  explicit socket_fd(int fd) : fd_(fd) {}
  ~socket_fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  socket_fd(const socket_fd&) = delete;
  socket_fd& operator=(const socket_fd&) = delete;
  [[nodiscard]] int get() const { return fd_; }

 private:
  int fd_;
};

/// A socket of `type` bound to 127.0.0.1 port 0 (listening when TCP); @returns its port.
std::uint16_t bind_loopback_v4(const socket_fd& s) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = 0;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(s.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0);  // NOLINT: the sockets API
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &len) == 0);  // NOLINT: the sockets API
  return ntohs(a.sin_port);
}

std::uint64_t inode_of(const socket_fd& s) {
  struct stat st{};
  REQUIRE(::fstat(s.get(), &st) == 0);
  return static_cast<std::uint64_t>(st.st_ino);
}

/// The listed socket of `protocol` on `address`:`port`, or an absent value.
json::value find_socket(json::value sockets, std::string_view protocol, std::string_view address, std::uint16_t port) {
  for (const auto s : sockets.elements()) {
    if (str(s["protocol"]) == protocol && str(s["local_address"]) == address && integer(s["port"]) == port) return s;
  }
  return {};
}

/// The hex text /proc/net prints for an address (each 32-bit word as "%08X" of its host-order value).
std::string proc_net_hex(const void* bytes, std::size_t size) {
  std::string out;
  for (std::size_t word = 0; word < size / 4; ++word) {
    std::uint32_t v = 0;
    std::memcpy(&v, static_cast<const unsigned char*>(bytes) + word * 4, sizeof v);
    std::array<char, 9> buf{};
    (void)std::snprintf(buf.data(), buf.size(), "%08X", v);
    out += buf.data();
  }
  return out;
}

/// The texts of a log result's lines.
std::vector<std::string> texts(const checked_output& out) {
  std::vector<std::string> v;
  for (const auto l : out["lines"].elements()) v.push_back(str(l["text"]));
  return v;
}

using lines = std::vector<std::string>;

/// Checks that every member of every object node of a schema is typed and described.
void check_described(json::value node, const std::string& where) {
  INFO(where);
  CHECK(node["type"].is_string());
  CHECK(node["description"].is_string());
  if (str(node["type"]) == "object") {
    CHECK(node["properties"].is_object());
    CHECK(node["additionalProperties"].is_bool());
    for (const auto m : node["properties"].members()) check_described(m.value(), where + "/" + std::string{m.key});
  }
  if (str(node["type"]) == "array") check_described(node["items"], where + "/items");
}

}  // namespace

TEST_SUITE("host_state") {
// ---- schemas ------------------------------------------------------------------------------------

TEST_CASE("host-server.md: every output schema compiles in mcpcore's strict subset, typed and described throughout") {
  const std::array<std::pair<std::string_view, std::string_view>, 7> schemas = {{
      {"system_summary", system_summary_schema},
      {"memory", memory_schema},
      {"filesystems", filesystems_schema},
      {"processes", processes_schema},
      {"network_interfaces", network_interfaces_schema},
      {"listening_sockets", listening_sockets_schema},
      {"log_lines", log_lines_schema},
  }};
  for (const auto& [name, schema] : schemas) {
    INFO(name);
    auto compiled = mcpcore::schema::compiled_schema::compile(schema);
    REQUIRE(compiled.has_value());
    CHECK(compiled->root_is_closed());
    json::document doc;
    auto root = doc.parse(schema);
    REQUIRE(root.has_value());
    check_described(*root, std::string{name});
    // Validation has teeth: an empty object misses the required members.
    json::document empty;
    CHECK(compiled->validate(*empty.parse("{}")).has_value());
  }
}

TEST_CASE("host-server.md: an output with an undeclared or null member does not validate") {
  auto compiled = mcpcore::schema::compiled_schema::compile(memory_schema);
  REQUIRE(compiled.has_value());
  auto out = memory();
  REQUIRE(out.has_value());
  json::document doc;
  std::string extra = *out;
  extra.insert(1, R"("surprise":1,)");
  CHECK(compiled->validate(*doc.parse(extra)).has_value());
  std::string with_null = *out;
  const auto at = with_null.find("\"free_bytes\":") + std::string_view{"\"free_bytes\":"}.size();
  with_null.replace(at, with_null.find(',', at) - at, "null");
  CHECK(compiled->validate(*doc.parse(with_null)).has_value());
}

// ---- system summary -----------------------------------------------------------------------------

TEST_CASE("host-server.md: system_summary agrees with the kernel (hostname, release, uptime, CPUs)") {
  const double uptime_before = std::stod(read_file("/proc/uptime"));
  const auto r = system_summary();
  const double uptime_after = std::stod(read_file("/proc/uptime"));
  const checked_output out{r, system_summary_schema};

  std::array<char, 256> host{};
  REQUIRE(::gethostname(host.data(), host.size() - 1) == 0);
  CHECK(str(out["hostname"]) == std::string{host.data()});
  CHECK(str(out["hostname"]) == first_line("/proc/sys/kernel/hostname"));
  utsname u{};
  REQUIRE(::uname(&u) == 0);
  CHECK(str(out["kernel"]) == first_line("/proc/sys/kernel/osrelease"));
  CHECK(str(out["kernel"]) == std::string{static_cast<const char*>(u.release)});
  CHECK(str(out["kernel_version"]) == std::string{static_cast<const char*>(u.version)});
  CHECK(str(out["architecture"]) == std::string{static_cast<const char*>(u.machine)});
  CHECK(integer(out["cpu_count"]) == ::sysconf(_SC_NPROCESSORS_ONLN));
  // /proc/uptime only grows: the probe's reading lies between the two taken around it.
  CHECK(number(out["uptime_seconds"]) >= uptime_before);
  CHECK(number(out["uptime_seconds"]) <= uptime_after);
  CHECK_FALSE(str(out["os"]).empty());
  CHECK_FALSE(str(out["os_id"]).empty());
  CHECK(number(out["load_average"]["one"]) >= 0);
  // The reading task itself is runnable.
  CHECK(integer(out["processes"]["running"]) >= 1);
  CHECK(integer(out["processes"]["running"]) <= integer(out["processes"]["total"]));
}

TEST_CASE("os-release values: quoting, escapes, comments, the last assignment") {
  constexpr std::string_view text =
      "# a comment\n"
      "NAME=\"Debian GNU/Linux\"\n"
      "PRETTY_NAME=\"Debian \\\"quoted\\\" \\\\ 12\"\n"
      "ID=debian\n"
      "VARIANT='single quoted \\n'\n"
      "ID_LIKE=first\n"
      "ID_LIKE=second\n";
  CHECK(detail::os_release_value(text, "NAME") == "Debian GNU/Linux");
  CHECK(detail::os_release_value(text, "PRETTY_NAME") == "Debian \"quoted\" \\ 12");
  CHECK(detail::os_release_value(text, "ID") == "debian");
  CHECK(detail::os_release_value(text, "VARIANT") == "single quoted \\n");
  CHECK(detail::os_release_value(text, "ID_LIKE") == "second");
  CHECK(detail::os_release_value(text, "VERSION").empty());
  CHECK(detail::os_release_value(text, "a comment").empty());
}

// ---- memory -------------------------------------------------------------------------------------

TEST_CASE("host-server.md: memory reports /proc/meminfo in bytes, used = total - available") {
  const checked_output out{memory(), memory_schema};
  const auto total = integer(out["total_bytes"]);
  CHECK(total == meminfo_kib("MemTotal") * 1024);
  CHECK(total > 0);
  CHECK(integer(out["used_bytes"]) == total - integer(out["available_bytes"]));
  CHECK(integer(out["available_bytes"]) <= total);
  CHECK(integer(out["free_bytes"]) <= total);
  CHECK(integer(out["swap_total_bytes"]) == meminfo_kib("SwapTotal") * 1024);
  CHECK(integer(out["swap_used_bytes"]) == integer(out["swap_total_bytes"]) - integer(out["swap_free_bytes"]));
  const double expected_percent =
      static_cast<double>(integer(out["used_bytes"])) * 100.0 / static_cast<double>(total);
  CHECK(std::fabs(number(out["used_percent"]) - expected_percent) <= 0.05 + 1e-9);  // one decimal
}

// ---- filesystems --------------------------------------------------------------------------------

TEST_CASE("host-server.md: filesystems lists / with its statvfs sizes and leaves pseudo filesystems out") {
  const checked_output out{filesystems({}), filesystems_schema};
  const auto list = out["filesystems"];
  CHECK(integer(out["count"]) == static_cast<std::int64_t>(list.size()));
  CHECK_FALSE(out["truncated"].as_bool());
  const auto root = find_by(list, "mount_point", "/");
  REQUIRE_MESSAGE(root.exists(), out.text());
  CHECK(str(root["kind"]) == "local");
  struct statvfs s{};
  REQUIRE(::statvfs("/", &s) == 0);
  CHECK(integer(root["size_bytes"]) == static_cast<std::int64_t>(s.f_blocks * s.f_frsize));
  CHECK(root["read_only"].as_bool() == ((s.f_flag & ST_RDONLY) != 0));
  CHECK(integer(root["used_bytes"]) <= integer(root["size_bytes"]));
  std::set<std::string> points;
  for (const auto fs : list.elements()) {
    CHECK(str(fs["kind"]) != "pseudo");
    CHECK(points.insert(str(fs["mount_point"])).second);  // each mount point once (the mount on top)
    if (str(fs["kind"]) != "local") CHECK_FALSE(fs["size_bytes"].exists());
  }
  CHECK_FALSE(find_by(list, "mount_point", "/proc").exists());
}

TEST_CASE("host-server.md: include_pseudo lists /proc without sizes, max_entries bounds the list") {
  filesystem_options o;
  o.include_pseudo = true;
  const checked_output all{filesystems(o), filesystems_schema};
  const auto proc = find_by(all["filesystems"], "mount_point", "/proc");
  REQUIRE_MESSAGE(proc.exists(), all.text());
  CHECK(str(proc["type"]) == "proc");
  CHECK(str(proc["kind"]) == "pseudo");
  CHECK_FALSE(proc["size_bytes"].exists());
  REQUIRE(all["filesystems"].size() >= 2);

  o.max_entries = 1;
  const checked_output one{filesystems(o), filesystems_schema};
  CHECK(one["filesystems"].size() == 1);
  CHECK(integer(one["count"]) == 1);
  CHECK(one["truncated"].as_bool());
  o.max_entries = 0;
  const checked_output none{filesystems(o), filesystems_schema};
  CHECK(none["filesystems"].size() == 0);
  CHECK(none["truncated"].as_bool());
}

TEST_CASE("filesystem kinds: pseudo, network and FUSE types") {
  for (const auto* t : {"proc", "sysfs", "cgroup", "cgroup2", "devpts", "mqueue", "autofs", "binfmt_misc", "bpf"}) {
    CHECK(detail::filesystem_kind(t) == "pseudo");
  }
  for (const auto* t : {"nfs", "nfs4", "cifs", "smb3", "9p", "sshfs", "fuse.sshfs", "ceph"}) {
    CHECK(detail::filesystem_kind(t) == "network");
  }
  CHECK(detail::filesystem_kind("fuse") == "fuse");
  CHECK(detail::filesystem_kind("fuse.gvfsd-fuse") == "fuse");
  for (const auto* t : {"ext4", "xfs", "btrfs", "tmpfs", "overlay", "fuseblk", "vfat", "squashfs"}) {
    CHECK(detail::filesystem_kind(t) == "local");
  }
}

TEST_CASE("mountinfo escapes are decoded") {
  CHECK(detail::decode_mount_escapes("/mnt/with\\040space") == "/mnt/with space");
  CHECK(detail::decode_mount_escapes("a\\011b\\012c\\134d") == "a\tb\nc\\d");
  CHECK(detail::decode_mount_escapes("/plain") == "/plain");
  CHECK(detail::decode_mount_escapes("bad\\9xx\\04") == "bad\\9xx\\04");  // malformed: kept
  CHECK(detail::decode_mount_escapes("end\\") == "end\\");
}

// ---- processes ----------------------------------------------------------------------------------

TEST_CASE("host-server.md: top_processes lists this process with its real pid, parent, name and user") {
  process_options o;
  o.sort_by = process_sort::memory;
  o.limit = 1000;  // clamped to max_top_processes
  o.sample = std::chrono::milliseconds{0};
  const checked_output out{top_processes(o), processes_schema};
  const auto list = out["processes"];
  CHECK(list.size() <= max_top_processes);
  CHECK(str(out["sort_by"]) == "memory");
  CHECK(integer(out["sample_ms"]) == 0);
  json::value self;
  for (const auto p : list.elements()) {
    if (integer(p["pid"]) == ::getpid()) self = p;
  }
  const auto total = integer(out["total_processes"]);
  CHECK(total >= 1);
  if (total <= static_cast<std::int64_t>(max_top_processes)) {
    // Every process seen is listed (only ones that ended during the walk are skipped).
    REQUIRE_MESSAGE(self.exists(), out.text());
  } else if (!self.exists()) {
    // More processes than fit: then the list is full of processes at least as large as this one.
    std::istringstream statm{read_file("/proc/self/statm")};
    std::int64_t size_pages = 0;
    std::int64_t rss_pages = 0;
    statm >> size_pages >> rss_pages;
    json::value last;
    for (const auto p : list.elements()) last = p;
    CHECK(list.size() == max_top_processes);
    CHECK(integer(last["rss_bytes"]) + (std::int64_t{16} << 20) >= rss_pages * ::sysconf(_SC_PAGESIZE));
    return;
  }
  CHECK(integer(self["ppid"]) == ::getppid());
  CHECK(str(self["name"]) == first_line("/proc/self/comm"));
  CHECK(str(self["state"]) == "running");  // it was reading /proc itself
  CHECK(integer(self["threads"]) >= 1);
  CHECK(integer(self["rss_bytes"]) > 0);
  const passwd* pw = ::getpwuid(::geteuid());  // NOLINT(concurrency-mt-unsafe): the test is single-threaded
  CHECK(str(self["user"]) == (pw != nullptr ? std::string{pw->pw_name} : std::to_string(::geteuid())));
  std::string cmdline = read_file("/proc/self/cmdline");
  while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
  for (auto& c : cmdline) c = c == '\0' ? ' ' : c;
  const auto command = str(self["command"]);
  CHECK(command.size() <= max_command_bytes);
  CHECK(std::string_view{cmdline}.starts_with(command));
  CHECK(self["command_truncated"].exists() == (cmdline.size() > max_command_bytes));
  if (cmdline.size() <= max_command_bytes) CHECK(command == cmdline);
}

TEST_CASE("host-server.md: top_processes respects the sort order and the limit") {
  SUBCASE("memory: resident size, largest first") {
    process_options o;
    o.sort_by = process_sort::memory;
    o.limit = 5;
    o.sample = std::chrono::milliseconds{0};
    const checked_output out{top_processes(o), processes_schema};
    const auto list = out["processes"];
    CHECK(list.size() <= 5);
    CHECK(list.size() >= 1);
    std::int64_t previous = std::numeric_limits<std::int64_t>::max();
    for (const auto p : list.elements()) {
      CHECK(integer(p["rss_bytes"]) <= previous);
      previous = integer(p["rss_bytes"]);
    }
  }
  SUBCASE("cpu: measured over the sample, most first") {
    process_options o;
    o.limit = 20;
    o.sample = std::chrono::milliseconds{50};
    const checked_output out{top_processes(o), processes_schema};
    CHECK(str(out["sort_by"]) == "cpu");
    CHECK(integer(out["sample_ms"]) == 50);
    const auto list = out["processes"];
    CHECK(list.size() <= 20);
    CHECK(list.size() >= 1);
    double previous = 1e300;
    for (const auto p : list.elements()) {
      CHECK(number(p["cpu_percent"]) <= previous);
      CHECK(number(p["cpu_percent"]) >= 0);
      previous = number(p["cpu_percent"]);
    }
  }
  SUBCASE("limits are clamped to 1..max_top_processes, the sample to 0..max_process_sample") {
    process_options o;
    o.limit = 0;
    o.sample = std::chrono::milliseconds{-5};
    const checked_output out{top_processes(o), processes_schema};
    CHECK(out["processes"].size() == 1);
    CHECK(integer(out["sample_ms"]) == 0);
  }
}

// ---- network ------------------------------------------------------------------------------------

TEST_CASE("host-server.md: network_interfaces lists every interface of /sys/class/net, loopback with 127.0.0.1/8") {
  const auto sys_names = [] {
    std::set<std::string> names;
    DIR* d = ::opendir("/sys/class/net");
    if (d == nullptr) return names;
    while (const dirent* e = ::readdir(d)) {
      const std::string n = static_cast<const char*>(e->d_name);
      if (n != "." && n != "..") names.insert(n);
    }
    ::closedir(d);
    return names;
  };
  const auto before = sys_names();
  const checked_output out{network_interfaces(), network_interfaces_schema};
  const auto after = sys_names();
  const auto list = out["interfaces"];
  CHECK_FALSE(out["truncated"].as_bool());
  for (const auto& n : before) {
    if (after.count(n) == 0) continue;  // removed meanwhile
    INFO(n);
    const auto i = find_by(list, "name", n);
    REQUIRE(i.exists());
    const std::string mac = first_line("/sys/class/net/" + n + "/address");
    if (!mac.empty()) CHECK(str(i["mac"]) == mac);
    const std::string mtu = first_line("/sys/class/net/" + n + "/mtu");
    if (!mtu.empty()) CHECK(integer(i["mtu"]) == std::stoll(mtu));
    CHECK(i["rx_bytes"].exists());
  }
  const auto lo = find_by(list, "name", "lo");
  REQUIRE_MESSAGE(lo.exists(), out.text());
  CHECK(lo["loopback"].as_bool());
  CHECK(lo["up"].as_bool());
  json::value v4;
  for (const auto a : lo["addresses"].elements()) {
    if (str(a["address"]) == "127.0.0.1") v4 = a;
  }
  REQUIRE_MESSAGE(v4.exists(), out.text());
  CHECK(str(v4["family"]) == "ipv4");
  CHECK(integer(v4["prefix_length"]) == 8);
}

// ---- listening sockets --------------------------------------------------------------------------

TEST_CASE("host-server.md: listening_sockets lists a TCP listener and a UDP socket of this process on 127.0.0.1") {
  const socket_fd tcp{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  REQUIRE(tcp.get() >= 0);
  const auto tcp_port = bind_loopback_v4(tcp);
  REQUIRE(::listen(tcp.get(), 4) == 0);
  const socket_fd udp{::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)};
  REQUIRE(udp.get() >= 0);
  const auto udp_port = bind_loopback_v4(udp);
  // A connection to the listener: neither end is a listening socket.
  const socket_fd client{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  REQUIRE(client.get() >= 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(tcp_port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(client.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0);  // NOLINT: sockets API
  sockaddr_in from{};
  socklen_t from_len = sizeof from;
  REQUIRE(::getsockname(client.get(), reinterpret_cast<sockaddr*>(&from), &from_len) == 0);  // NOLINT: sockets API
  const socket_fd accepted{::accept4(tcp.get(), nullptr, nullptr, SOCK_CLOEXEC)};
  REQUIRE(accepted.get() >= 0);

  const checked_output out{listening_sockets({}), listening_sockets_schema};
  const auto sockets = out["sockets"];
  CHECK(integer(out["count"]) == static_cast<std::int64_t>(sockets.size()));
  const auto listener = find_socket(sockets, "tcp", "127.0.0.1", tcp_port);
  REQUIRE_MESSAGE(listener.exists(), out.text());
  CHECK(str(listener["family"]) == "ipv4");
  CHECK(integer(listener["inode"]) == static_cast<std::int64_t>(inode_of(tcp)));
  CHECK(integer(listener["uid"]) == ::geteuid());
  CHECK(integer(listener["pid"]) == ::getpid());
  CHECK(str(listener["process"]) == first_line("/proc/self/comm"));
  const auto bound = find_socket(sockets, "udp", "127.0.0.1", udp_port);
  REQUIRE_MESSAGE(bound.exists(), out.text());
  CHECK(integer(bound["inode"]) == static_cast<std::int64_t>(inode_of(udp)));
  CHECK(integer(bound["pid"]) == ::getpid());
  CHECK_FALSE(find_socket(sockets, "tcp", "127.0.0.1", ntohs(from.sin_port)).exists());
  for (const auto s : sockets.elements()) CHECK(integer(s["inode"]) != static_cast<std::int64_t>(inode_of(accepted)));
}

TEST_CASE("host-server.md: listening_sockets decodes an IPv6 listener on ::1") {
  const socket_fd tcp{::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  if (tcp.get() < 0 || ::bind(tcp.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {  // NOLINT
    MESSAGE("IPv6 loopback unavailable here; skipped");
    return;
  }
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(tcp.get(), reinterpret_cast<sockaddr*>(&a), &len) == 0);  // NOLINT: the sockets API
  REQUIRE(::listen(tcp.get(), 4) == 0);
  const checked_output out{listening_sockets({}), listening_sockets_schema};
  const auto listener = find_socket(out["sockets"], "tcp", "::1", ntohs(a.sin6_port));
  REQUIRE_MESSAGE(listener.exists(), out.text());
  CHECK(str(listener["family"]) == "ipv6");
  CHECK(integer(listener["pid"]) == ::getpid());
}

TEST_CASE("host-server.md: listening_sockets bounds its entries and its descriptor walk") {
  const socket_fd tcp{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  REQUIRE(tcp.get() >= 0);
  const auto port = bind_loopback_v4(tcp);
  REQUIRE(::listen(tcp.get(), 4) == 0);
  socket_options o;
  o.max_entries = 0;
  const checked_output none{listening_sockets(o), listening_sockets_schema};
  CHECK(none["sockets"].size() == 0);
  CHECK(integer(none["count"]) == 0);
  CHECK(none["truncated"].as_bool());
  o = {};
  o.max_scanned_fds = 0;
  const checked_output blind{listening_sockets(o), listening_sockets_schema};
  const auto listener = find_socket(blind["sockets"], "tcp", "127.0.0.1", port);
  REQUIRE(listener.exists());
  for (const auto s : blind["sockets"].elements()) CHECK_FALSE(s["pid"].exists());
}

TEST_CASE("/proc/net addresses: host-order hex words decode to dotted IPv4 and compressed IPv6") {
  for (const auto* text : {"127.0.0.1", "10.1.2.3", "0.0.0.0", "192.168.255.254"}) {
    in_addr a{};
    REQUIRE(::inet_pton(AF_INET, text, &a) == 1);
    const auto decoded = detail::decode_proc_net_address(proc_net_hex(&a, sizeof a));
    REQUIRE(decoded.has_value());
    CHECK(*decoded == text);
  }
  for (const auto* text : {"::1", "::", "fe80::1:2", "2001:db8::ff00:42:8329", "::ffff:10.0.0.1"}) {
    in6_addr a{};
    REQUIRE(::inet_pton(AF_INET6, text, &a) == 1);
    const auto decoded = detail::decode_proc_net_address(proc_net_hex(&a, sizeof a));
    REQUIRE(decoded.has_value());
    CHECK(*decoded == text);
  }
  CHECK_FALSE(detail::decode_proc_net_address("0100007").has_value());
  CHECK_FALSE(detail::decode_proc_net_address("0100007G").has_value());
  CHECK_FALSE(detail::decode_proc_net_address("").has_value());
}

// ---- logs ---------------------------------------------------------------------------------------

TEST_CASE("host-server.md: tail_log_file keeps matching lines, case-insensitively, the last `limit`, oldest first") {
  temp_dir dir;
  const auto path = dir.write("app.log",
                              "alpha ERROR one\nbeta ok\r\ngamma error two\nError three\ndelta\nlast no newline");
  log_options o;
  SUBCASE("every line when the pattern is empty") {
    const checked_output out{tail_log_file(path, o), log_lines_schema};
    CHECK(texts(out) ==
          lines{"alpha ERROR one", "beta ok", "gamma error two", "Error three", "delta", "last no newline"});
    CHECK(str(out["source"]) == path);
    CHECK(integer(out["returned"]) == 6);
    CHECK(integer(out["matched"]) == 6);
    CHECK_FALSE(out["window_truncated"].as_bool());
    CHECK(integer(out["scanned_bytes"]) == static_cast<std::int64_t>(read_file(path).size()));
  }
  SUBCASE("pattern, ASCII case-insensitive") {
    o.pattern = "eRRor";
    const checked_output out{tail_log_file(path, o), log_lines_schema};
    CHECK(texts(out) == lines{"alpha ERROR one", "gamma error two", "Error three"});
    CHECK(integer(out["matched"]) == 3);
  }
  SUBCASE("limit: the most recent matches") {
    o.pattern = "error";
    o.limit = 2;
    const checked_output out{tail_log_file(path, o), log_lines_schema};
    CHECK(texts(out) == lines{"gamma error two", "Error three"});
    CHECK(integer(out["returned"]) == 2);
    CHECK(integer(out["matched"]) == 3);
  }
  SUBCASE("limit 0 is taken as 1") {
    o.limit = 0;
    const checked_output out{tail_log_file(path, o), log_lines_schema};
    CHECK(texts(out) == lines{"last no newline"});
  }
  SUBCASE("no match") {
    o.pattern = "absent";
    const checked_output out{tail_log_file(path, o), log_lines_schema};
    CHECK(out["lines"].size() == 0);
    CHECK(integer(out["returned"]) == 0);
  }
}

TEST_CASE("host-server.md: tail_log_file reads only its window and drops a partial first line") {
  temp_dir dir;
  const auto path = dir.write("w.log", "aaaa\nbbbb\ncccc\n");  // 15 bytes
  log_options o;
  SUBCASE("window inside the first line: that partial line is dropped") {
    o.max_scan_bytes = 12;  // "a\nbbbb\ncccc\n"
    const checked_output out{tail_log_file(path, o), log_lines_schema};
    CHECK(texts(out) == lines{"bbbb", "cccc"});
    CHECK(out["window_truncated"].as_bool());
    CHECK(integer(out["scanned_bytes"]) == 12);
  }
  SUBCASE("window starting exactly at a line start keeps that line") {
    o.max_scan_bytes = 10;  // "bbbb\ncccc\n"
    const checked_output out{tail_log_file(path, o), log_lines_schema};
    CHECK(texts(out) == lines{"bbbb", "cccc"});
    CHECK(out["window_truncated"].as_bool());
  }
  SUBCASE("window of the whole file") {
    o.max_scan_bytes = 15;
    const checked_output out{tail_log_file(path, o), log_lines_schema};
    CHECK(texts(out) == lines{"aaaa", "bbbb", "cccc"});
    CHECK_FALSE(out["window_truncated"].as_bool());
  }
  SUBCASE("a large file: only the end is scanned") {
    std::string big;
    for (int i = 0; i < 20000; ++i) big += "line " + std::to_string(i) + "\n";
    const auto large = dir.write("large.log", big);
    o.max_scan_bytes = 4096;
    o.limit = 3;
    const checked_output out{tail_log_file(large, o), log_lines_schema};
    CHECK(texts(out) == lines{"line 19997", "line 19998", "line 19999"});
    CHECK(integer(out["scanned_bytes"]) == 4096);
    CHECK(integer(out["matched"]) < 4096 / 10);
    CHECK(out["window_truncated"].as_bool());
  }
}

TEST_CASE("host-server.md: tail_log_file bounds each line at a UTF-8 boundary and marks it") {
  temp_dir dir;
  std::string e_acute;
  for (int i = 0; i < 10; ++i) e_acute += "\xC3\xA9";
  const auto path = dir.write("long.log", std::string(5000, 'x') + "\nshort\n" + e_acute + "\n");
  log_options o;
  o.max_line_bytes = 2048;
  const checked_output out{tail_log_file(path, o), log_lines_schema};
  REQUIRE(out["lines"].size() == 3);
  const auto first = *out["lines"].elements().begin();
  CHECK(str(first["text"]) == std::string(2048, 'x'));
  CHECK(first["truncated"].as_bool());
  const auto second = *++out["lines"].elements().begin();
  CHECK(str(second["text"]) == "short");
  CHECK_FALSE(second["truncated"].exists());
  o.max_line_bytes = 5;
  const checked_output cut{tail_log_file(path, o), log_lines_schema};
  CHECK(texts(cut).back() == "\xC3\xA9\xC3\xA9");  // 4 bytes: the fifth would split a character
}

TEST_CASE("host-server.md: tail_log_file passes invalid UTF-8 through repaired") {
  temp_dir dir;
  const auto path = dir.write("bad.log", "ok \xFF\xFE end\n");
  const checked_output out{tail_log_file(path, {}), log_lines_schema};
  CHECK(texts(out) == lines{"ok \xEF\xBF\xBD\xEF\xBF\xBD end"});
}

TEST_CASE("host-server.md: tail_log_file on an empty file, a missing file, a directory") {
  temp_dir dir;
  const checked_output empty{tail_log_file(dir.write("empty.log", ""), {}), log_lines_schema};
  CHECK(empty["lines"].size() == 0);
  CHECK(integer(empty["returned"]) == 0);
  CHECK(integer(empty["scanned_bytes"]) == 0);
  CHECK_FALSE(empty["window_truncated"].as_bool());

  const auto missing = tail_log_file(dir.path() + "/missing.log", {});
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().find(dir.path() + "/missing.log") != std::string::npos);
  CHECK(missing.error().find("No such file") != std::string::npos);

  const auto directory = tail_log_file(dir.path(), {});
  REQUIRE_FALSE(directory.has_value());
  CHECK(directory.error().find("not a regular file") != std::string::npos);
}

TEST_CASE("host-server.md: tail_log_file refuses a FIFO and a character device without blocking") {
  temp_dir dir;
  const auto fifo = dir.track("pipe");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // Run it aside: a blocking open or read would never return, and the test then unblocks it
  // (a writer opening and closing the FIFO) to fail cleanly instead of hanging.
  std::promise<probe_result> done;
  auto result = done.get_future();
  std::thread reader{[&] { done.set_value(tail_log_file(fifo, {})); }};
  if (result.wait_for(std::chrono::seconds{60}) != std::future_status::ready) {
    const int w = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
    if (w >= 0) ::close(w);
    reader.join();
    FAIL("tail_log_file blocked on a FIFO");
  }
  reader.join();
  const auto r = result.get();
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().find("not a regular file") != std::string::npos);

  for (const auto* device : {"/dev/zero", "/dev/null"}) {
    INFO(device);
    struct stat st{};
    if (::stat(device, &st) != 0 || !S_ISCHR(st.st_mode)) continue;
    const auto d = tail_log_file(device, {});
    REQUIRE_FALSE(d.has_value());
    CHECK(d.error().find("not a regular file") != std::string::npos);
  }
}

TEST_CASE("host-server.md: filter_log_lines applies the same rules to captured text") {
  constexpr std::string_view journal =
      "2025-01-01T00:00:00+0000 host sshd[1]: Accepted key\n"
      "2025-01-01T00:00:01+0000 host kernel: EXT4-fs error (device vda)\n"
      "2025-01-01T00:00:02+0000 host cron[2]: job done\n";
  log_options o;
  o.pattern = "ERROR";
  const checked_output out{filter_log_lines(journal, "journal", o), log_lines_schema};
  CHECK(str(out["source"]) == "journal");
  CHECK(texts(out) == lines{"2025-01-01T00:00:01+0000 host kernel: EXT4-fs error (device vda)"});
  CHECK(integer(out["scanned_bytes"]) == static_cast<std::int64_t>(journal.size()));
  CHECK_FALSE(out["window_truncated"].as_bool());

  o.pattern.clear();
  o.max_scan_bytes = 60;  // inside the second line: it is dropped as partial
  const checked_output tail{filter_log_lines(journal, "journal", o), log_lines_schema};
  CHECK(texts(tail) == lines{"2025-01-01T00:00:02+0000 host cron[2]: job done"});
  CHECK(tail["window_truncated"].as_bool());
  CHECK(integer(tail["scanned_bytes"]) == 60);

  const checked_output nothing{filter_log_lines("", "journal", {}), log_lines_schema};
  CHECK(nothing["lines"].size() == 0);
}
}  // TEST_SUITE
