// SPDX-License-Identifier: Apache-2.0
// The host state probes of mcpcore-host, read from /proc, /sys, statvfs, getifaddrs and uname.
#include "host_state.hpp"
#include "unique_fd.hpp"

#include <mcpcore/expected.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>  // NOLINT(misc-include-cleaner): IFF_UP, IFF_LOOPBACK (macros naming enumerators)
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace mcpcore_host {

namespace {

using mcpcore::fail;
using probe_result = mcpcore::result<std::string, std::string>;

// ---- small helpers -----------------------------------------------------------------------------

/// Longest line the streaming reader (/proc/net/*) accepts; longer lines are skipped.
constexpr std::size_t max_stream_line_bytes = 4096;
/// Chunk size of the streaming reader.
constexpr std::size_t stream_chunk_bytes = std::size_t{64} << 10U;
/// Buffer for one /proc/[pid]/stat (52 numeric fields and a 15-byte name fit in far less).
constexpr std::size_t proc_stat_bytes = 4096;
/// Most of /proc/[pid]/status read (about 1.5 KiB in practice; `Uid:` is near the top).
constexpr std::size_t proc_status_bytes = 16384;
/// Most of an os-release file read (a few hundred bytes in practice).
constexpr std::size_t os_release_bytes = std::size_t{64} << 10U;
/// Buffer for one readlink of /proc/[pid]/fd/N ("socket:[inode]" and paths up to PATH_MAX).
constexpr std::size_t fd_link_bytes = 4096;
/// Largest getpwuid_r buffer tried (it doubles from sysconf's suggestion on ERANGE).
constexpr std::size_t max_passwd_buffer_bytes = std::size_t{1} << 20U;

std::string errno_text(int e) { return std::error_code{e, std::generic_category()}.message(); }

std::string cannot_read(std::string_view what, int e) {
  std::string s = "cannot read ";
  s += what;
  s += ": ";
  s += errno_text(e);
  return s;
}

/// A directory stream, closed on scope exit.
class unique_dir {
 public:
  explicit unique_dir(DIR* d) noexcept : d_(d) {}
  ~unique_dir() {
    if (d_ != nullptr) ::closedir(d_);
  }
  unique_dir(const unique_dir&) = delete;
  unique_dir& operator=(const unique_dir&) = delete;
  [[nodiscard]] DIR* get() const noexcept { return d_; }

 private:
  DIR* d_;
};

/// Reads up to `max_bytes` of `path` into `out` (replacing its contents). /proc and /sys files
/// report a size of 0, so this reads until end of file. @returns 0 or the errno.
int read_bounded(const char* path, std::string& out, std::size_t max_bytes) {
  out.clear();
  const unique_fd fd{::open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)};
  if (!fd.valid()) return errno;
  constexpr std::size_t step = 4096;
  while (out.size() < max_bytes) {
    const std::size_t old = out.size();
    const std::size_t want = std::min(step, max_bytes - old);
    out.resize(old + want);
    const ssize_t n = ::read(fd.get(), out.data() + old, want);
    if (n < 0) {
      out.resize(old);
      if (errno == EINTR) continue;
      return errno;
    }
    out.resize(old + static_cast<std::size_t>(n));
    if (n == 0) break;
  }
  return 0;
}

int read_bounded(const std::string& path, std::string& out, std::size_t max_bytes) {
  return read_bounded(path.c_str(), out, max_bytes);
}

/// `s` without leading and trailing ASCII white space.
std::string_view trim(std::string_view s) {
  constexpr std::string_view blanks = " \t\r\n\f\v";
  const auto b = s.find_first_not_of(blanks);
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(blanks);
  return s.substr(b, e - b + 1);
}

/// The first line of a small file, trimmed; empty when it cannot be read.
std::string first_line_of(const std::string& path) {
  std::string text;
  if (read_bounded(path, text, max_stream_line_bytes) != 0) return {};
  const auto nl = text.find('\n');
  return std::string{trim(std::string_view{text}.substr(0, nl))};
}

/// Calls `f(line)` for every line of `text` (without its '\n'); a last line without '\n' counts.
template <class F>
void for_each_line(std::string_view text, F&& f) {
  while (!text.empty()) {
    const auto nl = text.find('\n');
    if (nl == std::string_view::npos) {
      f(text);
      return;
    }
    f(text.substr(0, nl));
    text.remove_prefix(nl + 1);
  }
}

/// The next field of `rest` separated by blanks (space or tab), consumed from `rest`.
std::string_view next_field(std::string_view& rest) {
  const auto b = rest.find_first_not_of(" \t");
  if (b == std::string_view::npos) {
    rest = {};
    return {};
  }
  rest.remove_prefix(b);
  const auto e = rest.find_first_of(" \t");
  const auto field = rest.substr(0, e);
  rest.remove_prefix(e == std::string_view::npos ? rest.size() : e);
  return field;
}

/// Splits `line` into at most `N` blank-separated fields; @returns how many were found.
template <std::size_t N>
std::size_t split_fields(std::string_view line, std::array<std::string_view, N>& fields) {
  std::size_t n = 0;
  while (n < N) {
    const auto f = next_field(line);
    if (f.empty()) break;
    fields[n++] = f;
  }
  return n;
}

template <class T>
bool parse_number(std::string_view s, T& out, int base = 10) {
  if (s.empty()) return false;
  // NOLINTNEXTLINE(bugprone-suspicious-stringview-data-usage): from_chars takes the bounded range
  const char* const first = s.data();
  const char* const end = first + s.size();
  auto [p, ec] = std::from_chars(first, end, out, base);
  return ec == std::errc{} && p == end;
}

bool parse_double(std::string_view s, double& out) {
  if (s.empty()) return false;
  // NOLINTNEXTLINE(bugprone-suspicious-stringview-data-usage): from_chars takes the bounded range
  const char* const first = s.data();
  const char* const end = first + s.size();
  auto [p, ec] = std::from_chars(first, end, out);
  return ec == std::errc{} && p == end && std::isfinite(out);
}

/// `x` rounded to one decimal, never negative or NaN (the schemas forbid both).
double round1(double x) {
  if (!std::isfinite(x) || x <= 0) return 0;
  return std::round(x * 10) / 10;
}

/// `part` in percent of `whole`, rounded to one decimal and clamped to 0..100.
double percent(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0) return 0;
  return std::min(100.0, round1(static_cast<double>(part) * 100.0 / static_cast<double>(whole)));
}

/// `a * b`, saturated at INT64_MAX so that it stays a JSON integer the schemas accept.
std::uint64_t saturating_product(std::uint64_t a, std::uint64_t b) {
  constexpr auto cap = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (a != 0 && b > cap / a) return cap;
  return std::min(a * b, cap);
}

/// How many bytes of `s` to keep so that at most `max` bytes remain and a UTF-8 sequence is not
/// split (the cut backs off over at most three continuation bytes).
std::size_t utf8_cut(std::string_view s, std::size_t max) {
  if (s.size() <= max) return s.size();
  std::size_t cut = max;
  for (int i = 0; i < 3 && cut > 0; ++i) {
    if ((static_cast<unsigned char>(s[cut]) & 0xC0U) != 0x80U) break;
    --cut;
  }
  if ((static_cast<unsigned char>(s[cut]) & 0xC0U) == 0x80U) cut = max;  // not UTF-8 anyway
  return cut;
}

bool is_all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

/// Lists the numeric entries (pids) of /proc, at most `max` of them; `truncated` tells whether
/// more exist.
mcpcore::result<std::vector<int>, std::string> list_pids(std::size_t max, bool& truncated) {
  truncated = false;
  const unique_dir dir{::opendir("/proc")};
  if (dir.get() == nullptr) return fail(cannot_read("/proc", errno));
  std::vector<int> pids;
  while (const dirent* e = ::readdir(dir.get())) {
    const std::string_view name{static_cast<const char*>(e->d_name)};
    int pid = 0;
    if (!is_all_digits(name) || !parse_number(name, pid) || pid <= 0) continue;
    if (pids.size() == max) {
      truncated = true;
      break;
    }
    pids.push_back(pid);
  }
  return pids;
}

/// The user name of `uid`, or its number when it has none; cached in `names` for one call.
const std::string& user_name(uid_t uid, std::unordered_map<uid_t, std::string>& names) {
  if (auto it = names.find(uid); it != names.end()) return it->second;
  std::string name;
  const long suggested = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(suggested > 0 ? static_cast<std::size_t>(suggested) : std::size_t{16384});
  while (true) {
    passwd pw{};
    passwd* found = nullptr;
    const int rc = ::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found);
    if (rc == ERANGE && buf.size() < max_passwd_buffer_bytes) {
      buf.resize(buf.size() * 2);
      continue;
    }
    if (rc == 0 && found != nullptr && pw.pw_name != nullptr) name = pw.pw_name;
    break;
  }
  if (name.empty()) name = std::to_string(uid);
  return names.emplace(uid, std::move(name)).first->second;
}

// ---- system summary ----------------------------------------------------------------------------

/// The value part of an os-release assignment: quotes removed, backslash escapes in double
/// quotes resolved (os-release(5) follows shell quoting).
std::string os_release_unquote(std::string_view v) {
  std::string out;
  if (v.size() >= 2 && v.front() == '\'' && v.back() == '\'') return std::string{v.substr(1, v.size() - 2)};
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') {
    v = v.substr(1, v.size() - 2);
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (v[i] == '\\' && i + 1 < v.size()) ++i;
      out.push_back(v[i]);
    }
    return out;
  }
  return std::string{v};
}

// ---- filesystems -------------------------------------------------------------------------------

constexpr std::array<std::string_view, 22> pseudo_filesystems = {
    "proc",    "sysfs",    "cgroup",    "cgroup2",     "devtmpfs", "devpts",    "mqueue",   "securityfs",
    "debugfs", "tracefs",  "pstore",    "bpf",         "configfs", "fusectl",   "hugetlbfs", "autofs",
    "binfmt_misc", "efivarfs", "selinuxfs", "nsfs", "rpc_pipefs", "ramfs"};

constexpr std::array<std::string_view, 15> network_filesystems = {
    "nfs",    "nfs4", "cifs",   "smb3", "smbfs", "ncpfs", "9p",   "afs",
    "ceph",   "glusterfs", "lustre", "gpfs", "davfs", "sshfs", "coda"};

template <std::size_t N>
bool contains(const std::array<std::string_view, N>& set, std::string_view s) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

/// Whether a comma-separated option list holds `ro`.
bool has_ro_option(std::string_view options) {
  while (!options.empty()) {
    const auto comma = options.find(',');
    if (options.substr(0, comma) == "ro") return true;
    if (comma == std::string_view::npos) break;
    options.remove_prefix(comma + 1);
  }
  return false;
}

struct mount_entry {
  std::string mount_point;
  std::string device;
  std::string type;
  bool read_only = false;
  bool hidden = false;  ///< mounted over by a later entry at the same point
};

/// The mounts of /proc/self/mountinfo (proc(5)): `id parent major:minor root mount_point
/// options [optional fields...] - type source super_options`. `cut`: the file was longer than
/// max_proc_file_bytes, so later mounts are missing.
mcpcore::result<std::vector<mount_entry>, std::string> read_mounts(bool& cut) {
  std::string text;
  if (const int e = read_bounded("/proc/self/mountinfo", text, max_proc_file_bytes); e != 0) {
    return fail(cannot_read("/proc/self/mountinfo", e));
  }
  cut = text.size() == max_proc_file_bytes;
  if (cut) text.erase(text.rfind('\n') + 1);  // whole lines only
  std::vector<mount_entry> mounts;
  std::unordered_map<std::string, std::size_t> by_point;
  for_each_line(text, [&](std::string_view line) {
    std::string_view rest = line;
    std::array<std::string_view, 6> head{};  // id parent major:minor root mount_point options
    for (auto& h : head) h = next_field(rest);
    if (head[5].empty()) return;
    std::string_view f = next_field(rest);
    while (!f.empty() && f != "-") f = next_field(rest);  // optional fields
    if (f != "-") return;
    const auto type = next_field(rest);
    const auto source = next_field(rest);
    const auto super_options = next_field(rest);
    if (type.empty()) return;
    mount_entry m;
    m.mount_point = detail::decode_mount_escapes(head[4]);
    m.device = detail::decode_mount_escapes(source);
    m.type = detail::decode_mount_escapes(type);
    m.read_only = has_ro_option(head[5]) || has_ro_option(super_options);
    if (auto [it, fresh] = by_point.try_emplace(m.mount_point, mounts.size()); !fresh) {
      mounts[it->second].hidden = true;
      it->second = mounts.size();
    }
    mounts.push_back(std::move(m));
  });
  return mounts;
}

void write_filesystem(mcpcore::json::writer& w, const mount_entry& m, std::string_view kind) {
  w.begin_object()
      .member("mount_point", m.mount_point)
      .member("device", m.device)
      .member("type", m.type)
      .member("kind", kind)
      .member("read_only", m.read_only);
  if (kind == "local") {
    struct statvfs s{};
    if (::statvfs(m.mount_point.c_str(), &s) == 0) {
      const std::uint64_t frsize = s.f_frsize != 0 ? s.f_frsize : s.f_bsize;
      const std::uint64_t blocks = s.f_blocks;
      const std::uint64_t free_blocks = std::min<std::uint64_t>(s.f_bfree, blocks);
      const std::uint64_t avail_blocks = std::min<std::uint64_t>(s.f_bavail, free_blocks);
      const std::uint64_t used_blocks = blocks - free_blocks;
      w.member("size_bytes", saturating_product(blocks, frsize))
          .member("used_bytes", saturating_product(used_blocks, frsize))
          .member("available_bytes", saturating_product(avail_blocks, frsize))
          .member("used_percent", percent(used_blocks, used_blocks + avail_blocks))
          .member("inodes_total", saturating_product(s.f_files, 1))
          .member("inodes_free", saturating_product(std::min<std::uint64_t>(s.f_ffree, s.f_files), 1));
    } else {
      w.member("error", "statvfs: " + errno_text(errno));
    }
  }
  w.end_object();
}

// ---- processes ---------------------------------------------------------------------------------

/// What one reading of /proc/[pid]/stat gives (proc(5) fields 2-4, 14, 15, 20, 22, 24).
struct proc_stat {
  int pid = 0;
  int ppid = 0;
  std::string name;
  char state = '?';
  std::uint64_t ticks = 0;  ///< utime + stime, in clock ticks
  std::uint64_t start = 0;  ///< starttime, to tell a reused pid apart
  std::uint64_t threads = 0;
  std::uint64_t rss_pages = 0;
};

/// Reads /proc/[pid]/stat; false when the process is gone or the line is malformed.
bool read_proc_stat(int pid, std::string& buf, proc_stat& out) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  if (read_bounded(path, buf, proc_stat_bytes) != 0) return false;
  const std::string_view line{buf};
  // The name (field 2) is in parentheses and may itself hold spaces and parentheses.
  const auto open = line.find('(');
  const auto close = line.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return false;
  out.pid = pid;
  out.name = std::string{line.substr(open + 1, close - open - 1)};
  std::array<std::string_view, 22> f{};  // fields 3..24
  if (split_fields(line.substr(close + 1), f) != f.size() || f[0].size() != 1) return false;
  out.state = f[0][0];
  std::uint64_t utime = 0;
  std::uint64_t stime = 0;
  std::int64_t rss = 0;
  if (!parse_number(f[1], out.ppid) || !parse_number(f[11], utime) || !parse_number(f[12], stime) ||
      !parse_number(f[17], out.threads) || !parse_number(f[19], out.start) || !parse_number(f[21], rss)) {
    return false;
  }
  out.ticks = utime + stime;
  out.rss_pages = rss > 0 ? static_cast<std::uint64_t>(rss) : 0;
  return true;
}

std::string_view state_name(char s) {
  switch (s) {
    case 'R': return "running";
    case 'S': return "sleeping";
    case 'D': return "disk_sleep";
    case 'Z': return "zombie";
    case 'T': return "stopped";
    case 't': return "tracing_stop";
    case 'X':
    case 'x': return "dead";
    case 'I': return "idle";
    case 'P': return "parked";
    case 'K': return "wakekill";
    case 'W': return "waking";
    default: return "unknown";
  }
}

/// The effective uid in /proc/[pid]/status (`Uid:` real effective saved fs); false when gone.
bool read_effective_uid(int pid, std::string& buf, uid_t& uid) {
  if (read_bounded("/proc/" + std::to_string(pid) + "/status", buf, proc_status_bytes) != 0) return false;
  bool found = false;
  for_each_line(buf, [&](std::string_view line) {
    if (found || !line.starts_with("Uid:")) return;
    line.remove_prefix(4);
    (void)next_field(line);
    found = parse_number(next_field(line), uid);
  });
  return found;
}

/// The command line of `pid`, NULs as spaces, at most max_command_bytes; false when gone.
bool read_command(int pid, const std::string& name, std::string& buf, std::string& command, bool& truncated) {
  if (read_bounded("/proc/" + std::to_string(pid) + "/cmdline", buf, max_command_bytes + 1) != 0) return false;
  while (!buf.empty() && buf.back() == '\0') buf.pop_back();
  truncated = buf.size() > max_command_bytes;
  if (truncated) buf.resize(utf8_cut(buf, max_command_bytes));
  std::replace(buf.begin(), buf.end(), '\0', ' ');
  command = buf.empty() ? "[" + name + "]" : buf;  // kernel threads and zombies have none
  return true;
}

// ---- network -----------------------------------------------------------------------------------

struct interface_address {
  bool ipv6 = false;
  std::string address;
  int prefix = 0;
};

struct interface_entry {
  std::string name;
  unsigned flags = 0;
  std::vector<interface_address> addresses;
  bool addresses_truncated = false;
};

/// Receive and transmit counters of one /proc/net/dev line (proc(5)).
struct interface_counters {
  std::uint64_t rx_bytes = 0, rx_packets = 0, rx_errors = 0;
  std::uint64_t tx_bytes = 0, tx_packets = 0, tx_errors = 0;
};

std::unordered_map<std::string, interface_counters> read_net_dev() {
  std::unordered_map<std::string, interface_counters> out;
  std::string text;
  if (read_bounded("/proc/net/dev", text, max_proc_file_bytes) != 0) return out;
  for_each_line(text, [&](std::string_view line) {
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) return;  // the two header lines
    std::array<std::string_view, 16> f{};
    if (split_fields(line.substr(colon + 1), f) != f.size()) return;
    interface_counters c;
    if (!parse_number(f[0], c.rx_bytes) || !parse_number(f[1], c.rx_packets) || !parse_number(f[2], c.rx_errors) ||
        !parse_number(f[8], c.tx_bytes) || !parse_number(f[9], c.tx_packets) || !parse_number(f[10], c.tx_errors)) {
      return;
    }
    out.emplace(std::string{trim(line.substr(0, colon))}, c);
  });
  return out;
}

int prefix_length(const sockaddr* mask, bool ipv6) {
  if (mask == nullptr) return 0;
  int bits = 0;
  if (ipv6) {
    sockaddr_in6 m{};
    std::memcpy(&m, mask, sizeof m);
    for (const auto byte : m.sin6_addr.s6_addr) bits += std::popcount(static_cast<unsigned>(byte));
  } else {
    sockaddr_in m{};
    std::memcpy(&m, mask, sizeof m);
    bits = std::popcount(static_cast<std::uint32_t>(m.sin_addr.s_addr));
  }
  return bits;
}

std::string address_text(const sockaddr* addr, bool ipv6) {
  std::array<char, INET6_ADDRSTRLEN> buf{};
  if (ipv6) {
    sockaddr_in6 a{};
    std::memcpy(&a, addr, sizeof a);
    if (::inet_ntop(AF_INET6, &a.sin6_addr, buf.data(), buf.size()) == nullptr) return {};
  } else {
    sockaddr_in a{};
    std::memcpy(&a, addr, sizeof a);
    if (::inet_ntop(AF_INET, &a.sin_addr, buf.data(), buf.size()) == nullptr) return {};
  }
  return std::string{buf.data()};
}

/// The owner of getifaddrs' list.
class ifaddrs_list {
 public:
  ifaddrs_list() = default;
  ~ifaddrs_list() {
    if (head_ != nullptr) ::freeifaddrs(head_);
  }
  ifaddrs_list(const ifaddrs_list&) = delete;
  ifaddrs_list& operator=(const ifaddrs_list&) = delete;
  ifaddrs** out() noexcept { return &head_; }
  [[nodiscard]] const ifaddrs* head() const noexcept { return head_; }

 private:
  ifaddrs* head_ = nullptr;
};

// ---- listening sockets -------------------------------------------------------------------------

/// Calls `f(line)` for every line of `path`, read in chunks so that memory stays bounded however
/// large the file (a busy server's /proc/net/tcp). Lines longer than max_stream_line_bytes are
/// skipped. `f` returns false to stop. @returns 0 or the errno of opening or reading.
template <class F>
int stream_lines(const char* path, F&& f) {
  const unique_fd fd{::open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)};
  if (!fd.valid()) return errno;
  std::string buf;
  std::string chunk(stream_chunk_bytes, '\0');
  bool skipping = false;  // inside an over-long line
  while (true) {
    const ssize_t n = ::read(fd.get(), chunk.data(), chunk.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) break;
    std::string_view data{chunk.data(), static_cast<std::size_t>(n)};
    while (!data.empty()) {
      const auto nl = data.find('\n');
      const auto piece = data.substr(0, nl);
      if (!skipping) buf.append(piece);
      if (buf.size() > max_stream_line_bytes) {
        buf.clear();
        skipping = true;
      }
      if (nl == std::string_view::npos) break;
      data.remove_prefix(nl + 1);
      if (!skipping && !f(std::string_view{buf})) return 0;
      buf.clear();
      skipping = false;
    }
  }
  if (!buf.empty() && !skipping) (void)f(std::string_view{buf});
  return 0;
}

struct socket_entry {
  bool udp = false;
  bool ipv6 = false;
  std::string address;
  std::uint32_t port = 0;
  std::uint64_t inode = 0;
  std::uint64_t uid = 0;
  int pid = 0;
  std::string process;
};

/// Finds, by walking /proc/[pid]/fd, a process holding each socket; bounded by `max_fds`.
void find_socket_owners(std::vector<socket_entry>& sockets, std::size_t max_fds) {
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> wanted;
  for (std::size_t i = 0; i < sockets.size(); ++i) {
    if (sockets[i].inode != 0) wanted[sockets[i].inode].push_back(i);
  }
  if (wanted.empty()) return;
  bool truncated = false;
  auto pids = list_pids(max_scanned_processes, truncated);
  if (!pids) return;
  // This process first: its own descriptors are always visible and cheap to read.
  const int self = static_cast<int>(::getpid());
  if (auto it = std::find(pids->begin(), pids->end(), self); it != pids->end()) std::iter_swap(pids->begin(), it);
  std::size_t scanned = 0;
  std::array<char, fd_link_bytes> link{};
  std::string comm;
  for (const int pid : *pids) {
    if (wanted.empty() || scanned >= max_fds) break;
    const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
    const unique_dir dir{::opendir(fd_dir.c_str())};
    if (dir.get() == nullptr) continue;  // gone, or not ours to see
    bool owns = false;
    while (const dirent* e = ::readdir(dir.get())) {
      if (scanned >= max_fds) break;
      if (e->d_name[0] == '.') continue;
      ++scanned;
      const ssize_t n = ::readlinkat(::dirfd(dir.get()), static_cast<const char*>(e->d_name), link.data(), link.size());
      if (n <= 0) continue;
      std::string_view target{link.data(), static_cast<std::size_t>(n)};
      if (!target.starts_with("socket:[") || !target.ends_with("]")) continue;
      target = target.substr(8, target.size() - 9);
      std::uint64_t inode = 0;
      if (!parse_number(target, inode)) continue;
      auto it = wanted.find(inode);
      if (it == wanted.end()) continue;
      if (!owns) {
        comm = first_line_of("/proc/" + std::to_string(pid) + "/comm");
        owns = true;
      }
      for (const auto i : it->second) {
        sockets[i].pid = pid;
        sockets[i].process = comm;
      }
      wanted.erase(it);
    }
  }
}

// ---- logs --------------------------------------------------------------------------------------

char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

/// Whether `line` contains `lowered` (already ASCII-lowercased), ASCII case-insensitively.
bool contains_ci(std::string_view line, std::string_view lowered) {
  if (lowered.empty()) return true;
  if (line.size() < lowered.size()) return false;
  const auto it = std::search(line.begin(), line.end(), lowered.begin(), lowered.end(),
                              [](char a, char b) { return ascii_lower(a) == b; });
  return it != line.end();
}

/// The log result over `window` (the scanned end of the log). `at_line_start`: the window begins
/// at the start of a line (the log's start, or just after a '\n'); otherwise its first, partial
/// line is dropped.
std::string render_log(std::string_view window, bool at_line_start, bool window_truncated, std::string_view source,
                       const log_options& o) {
  const std::size_t limit = std::clamp<std::size_t>(o.limit, 1, max_returned_log_lines);
  const std::size_t max_line = std::max<std::size_t>(o.max_line_bytes, 1);
  std::string pattern = o.pattern;
  std::transform(pattern.begin(), pattern.end(), pattern.begin(), ascii_lower);

  const std::size_t scanned = window.size();
  if (!at_line_start) {
    const auto nl = window.find('\n');
    window.remove_prefix(nl == std::string_view::npos ? window.size() : nl + 1);
  }
  // The last `limit` matches, in a ring.
  std::vector<std::string_view> ring;
  ring.reserve(std::min<std::size_t>(limit, 1024));
  std::size_t matched = 0;
  for_each_line(window, [&](std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!contains_ci(line, pattern)) return;
    if (ring.size() < limit) {
      ring.push_back(line);
    } else {
      ring[matched % limit] = line;
    }
    ++matched;
  });
  const std::size_t first = ring.size() < limit ? 0 : matched % limit;

  std::string out;
  mcpcore::json::writer w{out};
  w.begin_object().member("source", source).key("lines").begin_array();
  for (std::size_t k = 0; k < ring.size(); ++k) {
    const std::string_view line = ring[(first + k) % ring.size()];
    w.begin_object();
    if (line.size() > max_line) {
      w.member("text", line.substr(0, utf8_cut(line, max_line))).member("truncated", true);
    } else {
      w.member("text", line);
    }
    w.end_object();
  }
  w.end_array()
      .member("returned", static_cast<std::uint64_t>(ring.size()))
      .member("matched", static_cast<std::uint64_t>(matched))
      .member("scanned_bytes", static_cast<std::uint64_t>(scanned))
      .member("window_truncated", window_truncated)
      .end_object();
  return out;
}

}  // namespace

// ---- detail ------------------------------------------------------------------------------------

namespace detail {

std::string_view filesystem_kind(std::string_view type) {
  if (contains(pseudo_filesystems, type)) return "pseudo";
  if (contains(network_filesystems, type)) return "network";
  if (type == "fuse" || type.starts_with("fuse.")) {
    // A FUSE daemon can hang statvfs like a server; fuse.sshfs and friends are network ones.
    return contains(network_filesystems, type.substr(std::min(type.size(), std::size_t{5}))) ? "network" : "fuse";
  }
  return "local";  // fuseblk (a FUSE driver over a block device) included
}

std::string decode_mount_escapes(std::string_view field) {
  std::string out;
  out.reserve(field.size());
  const auto is_octal = [](char c) { return c >= '0' && c <= '7'; };
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() && is_octal(field[i + 1]) && is_octal(field[i + 2]) &&
        is_octal(field[i + 3])) {
      const int v = ((field[i + 1] - '0') << 6) | ((field[i + 2] - '0') << 3) | (field[i + 3] - '0');
      if (v <= 0xFF) {
        out.push_back(static_cast<char>(v));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

std::string os_release_value(std::string_view text, std::string_view key) {
  std::string value;
  for_each_line(text, [&](std::string_view line) {
    line = trim(line);
    if (line.empty() || line.front() == '#') return;
    const auto eq = line.find('=');
    if (eq == std::string_view::npos || trim(line.substr(0, eq)) != key) return;
    value = os_release_unquote(trim(line.substr(eq + 1)));  // the last assignment wins
  });
  return value;
}

mcpcore::result<std::string, std::string> decode_proc_net_address(std::string_view hex) {
  if (hex.size() != 8 && hex.size() != 32) return fail(std::string{"the address is neither 8 nor 32 hex digits"});
  // Each 32-bit word is printed (%08X) from the value its four network-order bytes have in host
  // order: parsing the digits and storing the number back in host order restores the bytes.
  std::array<unsigned char, 16> bytes{};
  for (std::size_t word = 0; word < hex.size() / 8; ++word) {
    std::uint32_t v = 0;
    if (!parse_number(hex.substr(word * 8, 8), v, 16)) return fail(std::string{"the address is not hexadecimal"});
    std::memcpy(bytes.data() + word * 4, &v, sizeof v);
  }
  std::array<char, INET6_ADDRSTRLEN> buf{};
  const int family = hex.size() == 8 ? AF_INET : AF_INET6;
  if (::inet_ntop(family, bytes.data(), buf.data(), buf.size()) == nullptr) {
    return fail("inet_ntop: " + errno_text(errno));
  }
  return std::string{buf.data()};
}

}  // namespace detail

// ---- probes ------------------------------------------------------------------------------------

probe_result system_summary() {
  utsname u{};
  if (::uname(&u) != 0) return fail(cannot_read("the system identification (uname)", errno));
  std::string hostname = first_line_of("/proc/sys/kernel/hostname");
  if (hostname.empty()) hostname = static_cast<const char*>(u.nodename);
  std::string kernel = first_line_of("/proc/sys/kernel/osrelease");
  if (kernel.empty()) kernel = static_cast<const char*>(u.release);
  std::string kernel_version = first_line_of("/proc/sys/kernel/version");
  if (kernel_version.empty()) kernel_version = static_cast<const char*>(u.version);

  // os-release(5): /etc/os-release, else /usr/lib/os-release; PRETTY_NAME defaults to "Linux"
  // and ID to "linux".
  std::string os_release;
  if (read_bounded("/etc/os-release", os_release, os_release_bytes) != 0 &&
      read_bounded("/usr/lib/os-release", os_release, os_release_bytes) != 0) {
    os_release.clear();
  }
  std::string os = detail::os_release_value(os_release, "PRETTY_NAME");
  if (os.empty()) os = detail::os_release_value(os_release, "NAME");
  if (os.empty()) os = "Linux";
  std::string os_id = detail::os_release_value(os_release, "ID");
  if (os_id.empty()) os_id = "linux";

  std::string text;
  if (const int e = read_bounded("/proc/uptime", text, max_stream_line_bytes); e != 0) {
    return fail(cannot_read("/proc/uptime", e));
  }
  std::string_view rest = text;
  double uptime = 0;
  if (!parse_double(next_field(rest), uptime) || uptime < 0) {
    return fail(std::string{"cannot read /proc/uptime: unexpected contents"});
  }

  if (const int e = read_bounded("/proc/loadavg", text, max_stream_line_bytes); e != 0) {
    return fail(cannot_read("/proc/loadavg", e));
  }
  // "0.52 0.58 0.59 3/96 7108": three averages, runnable/existing scheduling entities, last pid.
  std::array<std::string_view, 4> f{};
  std::array<double, 3> load{};
  std::uint64_t running = 0;
  std::uint64_t total = 0;
  const auto slash = split_fields(std::string_view{text}, f) == f.size() ? f[3].find('/') : std::string_view::npos;
  if (slash == std::string_view::npos || !parse_double(f[0], load[0]) || !parse_double(f[1], load[1]) ||
      !parse_double(f[2], load[2]) || !parse_number(f[3].substr(0, slash), running) ||
      !parse_number(f[3].substr(slash + 1), total)) {
    return fail(std::string{"cannot read /proc/loadavg: unexpected contents"});
  }
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);

  std::string out;
  mcpcore::json::writer w{out};
  w.begin_object()
      .member("hostname", hostname)
      .member("os", os)
      .member("os_id", os_id)
      .member("kernel", kernel)
      .member("kernel_version", kernel_version)
      .member("architecture", static_cast<const char*>(u.machine))
      .member("uptime_seconds", uptime)
      .key("load_average")
      .begin_object()
      .member("one", std::max(load[0], 0.0))
      .member("five", std::max(load[1], 0.0))
      .member("fifteen", std::max(load[2], 0.0))
      .end_object()
      .member("cpu_count", cpus > 0 ? static_cast<std::int64_t>(cpus) : std::int64_t{1})
      .key("processes")
      .begin_object()
      .member("running", running)
      .member("total", total)
      .end_object()
      .end_object();
  return out;
}

probe_result memory() {
  std::string text;
  if (const int e = read_bounded("/proc/meminfo", text, max_proc_file_bytes); e != 0) {
    return fail(cannot_read("/proc/meminfo", e));
  }
  // "MemTotal:       16318412 kB"
  constexpr std::array<std::string_view, 7> keys = {"MemTotal", "MemFree",   "MemAvailable", "Buffers",
                                                    "Cached",   "SwapTotal", "SwapFree"};
  std::array<std::uint64_t, keys.size()> kib{};
  std::array<bool, keys.size()> seen{};
  for_each_line(text, [&](std::string_view line) {
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) return;
    const auto it = std::find(keys.begin(), keys.end(), line.substr(0, colon));
    if (it == keys.end()) return;
    std::string_view rest = line.substr(colon + 1);
    const auto i = static_cast<std::size_t>(it - keys.begin());
    seen.at(i) = parse_number(next_field(rest), kib.at(i));
  });
  if (!seen[0] || !seen[1]) return fail(std::string{"cannot read /proc/meminfo: no MemTotal or MemFree"});
  const auto bytes = [&](std::size_t i) { return saturating_product(kib.at(i), 1024); };
  const std::uint64_t total = bytes(0);
  const std::uint64_t free = std::min(bytes(1), total);
  // Kernels before 3.14 have no MemAvailable: estimate it as free + buffers + cached.
  const std::uint64_t available = std::min(seen[2] ? bytes(2) : free + bytes(3) + bytes(4), total);
  const std::uint64_t used = total - available;
  const std::uint64_t swap_total = bytes(5);
  const std::uint64_t swap_free = std::min(bytes(6), swap_total);

  std::string out;
  mcpcore::json::writer w{out};
  w.begin_object()
      .member("total_bytes", total)
      .member("available_bytes", available)
      .member("free_bytes", free)
      .member("buffers_bytes", bytes(3))
      .member("cached_bytes", bytes(4))
      .member("used_bytes", used)
      .member("used_percent", percent(used, total))
      .member("swap_total_bytes", swap_total)
      .member("swap_free_bytes", swap_free)
      .member("swap_used_bytes", swap_total - swap_free)
      .end_object();
  return out;
}

probe_result filesystems(const filesystem_options& options) {
  bool truncated = false;
  auto mounts = read_mounts(truncated);
  if (!mounts) return fail(std::move(mounts.error()));
  std::string out;
  mcpcore::json::writer w{out};
  w.begin_object().key("filesystems").begin_array();
  std::size_t count = 0;
  for (const auto& m : *mounts) {
    if (m.hidden) continue;
    const std::string_view kind = detail::filesystem_kind(m.type);
    if (kind == "pseudo" && !options.include_pseudo) continue;
    if (count == options.max_entries) {
      truncated = true;
      break;
    }
    write_filesystem(w, m, kind);
    ++count;
  }
  w.end_array().member("count", static_cast<std::uint64_t>(count)).member("truncated", truncated).end_object();
  return out;
}

probe_result top_processes(const process_options& options) {
  const std::size_t limit = std::clamp<std::size_t>(options.limit, 1, max_top_processes);
  const auto sample = std::clamp(options.sample, std::chrono::milliseconds{0}, max_process_sample);
  const long clock_ticks = ::sysconf(_SC_CLK_TCK);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (clock_ticks <= 0 || page_size <= 0) return fail(std::string{"cannot read the clock tick or page size (sysconf)"});

  std::string buf;
  proc_stat st;
  // First reading: every process's CPU time.
  bool truncated = false;
  const auto t0 = std::chrono::steady_clock::now();
  auto pids = list_pids(max_scanned_processes, truncated);
  if (!pids) return fail(std::move(pids.error()));
  std::unordered_map<int, std::pair<std::uint64_t, std::uint64_t>> before;  // pid -> (ticks, start)
  before.reserve(pids->size());
  for (const int pid : *pids) {
    if (read_proc_stat(pid, buf, st)) before.emplace(pid, std::pair{st.ticks, st.start});
  }
  if (sample.count() > 0) std::this_thread::sleep_for(sample);

  // Second reading.
  const auto t1 = std::chrono::steady_clock::now();
  const bool first_complete = !truncated;
  pids = list_pids(max_scanned_processes, truncated);
  if (!pids) return fail(std::move(pids.error()));
  struct candidate {
    proc_stat stat;
    std::uint64_t delta = 0;
  };
  std::vector<candidate> all;
  all.reserve(pids->size());
  for (const int pid : *pids) {
    if (!read_proc_stat(pid, buf, st)) continue;  // ended meanwhile
    candidate c{st, 0};
    if (auto it = before.find(pid); it != before.end() && it->second.second == st.start) {
      c.delta = st.ticks >= it->second.first ? st.ticks - it->second.first : 0;
    } else if (first_complete) {
      c.delta = st.ticks;  // started during the sample: all its CPU time falls inside it
    }
    all.push_back(std::move(c));
  }
  const auto by_memory = [](const candidate& a, const candidate& b) {
    if (a.stat.rss_pages != b.stat.rss_pages) return a.stat.rss_pages > b.stat.rss_pages;
    return a.stat.pid < b.stat.pid;
  };
  const auto by_cpu = [&](const candidate& a, const candidate& b) {
    if (a.delta != b.delta) return a.delta > b.delta;
    return by_memory(a, b);
  };
  if (options.sort_by == process_sort::cpu) {
    std::sort(all.begin(), all.end(), by_cpu);
  } else {
    std::sort(all.begin(), all.end(), by_memory);
  }
  const double elapsed_s = std::chrono::duration<double>(t1 - t0).count();

  std::string out;
  mcpcore::json::writer w{out};
  w.begin_object()
      .member("sort_by", options.sort_by == process_sort::cpu ? "cpu" : "memory")
      .member("sample_ms", static_cast<std::int64_t>(sample.count()))
      .member("total_processes", static_cast<std::uint64_t>(all.size()))
      .member("truncated", truncated)
      .key("processes")
      .begin_array();
  std::unordered_map<uid_t, std::string> users;
  std::string command;
  std::size_t listed = 0;
  for (const auto& c : all) {
    if (listed == limit) break;
    uid_t uid = 0;
    bool command_truncated = false;
    if (!read_effective_uid(c.stat.pid, buf, uid) ||
        !read_command(c.stat.pid, c.stat.name, buf, command, command_truncated)) {
      continue;  // ended meanwhile
    }
    const double cpu_seconds = static_cast<double>(c.delta) / static_cast<double>(clock_ticks);
    const double cpu = elapsed_s > 0 ? cpu_seconds / elapsed_s * 100 : 0.0;
    w.begin_object()
        .member("pid", c.stat.pid)
        .member("ppid", std::max(c.stat.ppid, 0))
        .member("name", c.stat.name)
        .member("command", command);
    if (command_truncated) w.member("command_truncated", true);
    w.member("user", user_name(uid, users))
        .member("state", state_name(c.stat.state))
        .member("threads", c.stat.threads)
        .member("rss_bytes", saturating_product(c.stat.rss_pages, static_cast<std::uint64_t>(page_size)))
        .member("cpu_percent", round1(cpu))
        .end_object();
    ++listed;
  }
  w.end_array().end_object();
  return out;
}

probe_result network_interfaces() {
  ifaddrs_list list;
  if (::getifaddrs(list.out()) != 0) return fail(cannot_read("the network interfaces (getifaddrs)", errno));
  std::vector<interface_entry> interfaces;
  std::unordered_map<std::string, std::size_t> index;
  bool truncated = false;
  // Alias labels ("eth0:1") name their interface's IPv4 addresses; merge them into it.
  for (const ifaddrs* a = list.head(); a != nullptr; a = a->ifa_next) {
    if (a->ifa_name == nullptr) continue;
    std::string name = a->ifa_name;
    if (const auto colon = name.find(':'); colon != std::string::npos) name.resize(colon);
    auto it = index.find(name);
    if (it == index.end()) {
      if (interfaces.size() == max_network_interfaces) {
        truncated = true;
        continue;
      }
      it = index.emplace(name, interfaces.size()).first;
      interfaces.push_back(interface_entry{name, 0, {}, false});
    }
    auto& entry = interfaces[it->second];
    if (std::string_view{a->ifa_name} == name) entry.flags = a->ifa_flags;
    if (a->ifa_addr == nullptr) continue;
    const auto family = a->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    if (entry.addresses.size() == max_addresses_per_interface) {
      entry.addresses_truncated = true;
      continue;
    }
    const bool ipv6 = family == AF_INET6;
    std::string text = address_text(a->ifa_addr, ipv6);
    if (!text.empty()) entry.addresses.push_back({ipv6, std::move(text), prefix_length(a->ifa_netmask, ipv6)});
  }
  const auto counters = read_net_dev();

  std::string out;
  mcpcore::json::writer w{out};
  w.begin_object().key("interfaces").begin_array();
  for (const auto& i : interfaces) {
    const std::string sys = "/sys/class/net/" + i.name + "/";
    std::string state = first_line_of(sys + "operstate");
    if (state.empty()) state = "unknown";
    w.begin_object().member("name", i.name).member("state", state);
    std::uint64_t mtu = 0;
    if (parse_number(first_line_of(sys + "mtu"), mtu)) w.member("mtu", mtu);
    if (const std::string mac = first_line_of(sys + "address"); !mac.empty()) w.member("mac", mac);
    w.member("up", (i.flags & IFF_UP) != 0).member("loopback", (i.flags & IFF_LOOPBACK) != 0);
    w.key("addresses").begin_array();
    for (const auto& a : i.addresses) {
      w.begin_object()
          .member("family", a.ipv6 ? "ipv6" : "ipv4")
          .member("address", a.address)
          .member("prefix_length", a.prefix)
          .end_object();
    }
    w.end_array();
    if (i.addresses_truncated) w.member("addresses_truncated", true);
    if (auto c = counters.find(i.name); c != counters.end()) {
      w.member("rx_bytes", c->second.rx_bytes)
          .member("tx_bytes", c->second.tx_bytes)
          .member("rx_packets", c->second.rx_packets)
          .member("tx_packets", c->second.tx_packets)
          .member("rx_errors", c->second.rx_errors)
          .member("tx_errors", c->second.tx_errors);
    }
    w.end_object();
  }
  w.end_array().member("truncated", truncated).end_object();
  return out;
}

probe_result listening_sockets(const socket_options& options) {
  struct table {
    const char* path;
    bool udp;
    bool ipv6;
  };
  // TCP_LISTEN is state 0A; an unconnected UDP socket is TCP_CLOSE, 07 (include/net/tcp_states.h).
  constexpr std::array<table, 4> tables = {
      {{"/proc/net/tcp", false, false}, {"/proc/net/tcp6", false, true}, {"/proc/net/udp", true, false},
       {"/proc/net/udp6", true, true}}};
  std::vector<socket_entry> sockets;
  bool truncated = false;
  for (const auto& t : tables) {
    const int e = stream_lines(t.path, [&](std::string_view line) {
      // "sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ..."
      std::array<std::string_view, 10> f{};
      if (split_fields(line, f) != f.size() || f[0] == "sl") return true;
      if (f[3] != (t.udp ? "07" : "0A")) return true;
      const auto colon = f[1].find(':');
      if (colon == std::string_view::npos) return true;
      socket_entry s;
      s.udp = t.udp;
      s.ipv6 = t.ipv6;
      auto address = detail::decode_proc_net_address(f[1].substr(0, colon));
      if (!address || !parse_number(f[1].substr(colon + 1), s.port, 16) || s.port > 0xFFFF ||
          !parse_number(f[7], s.uid) || !parse_number(f[9], s.inode)) {
        return true;
      }
      if (t.udp && s.port == 0) return true;
      s.address = std::move(*address);
      if (sockets.size() == options.max_entries) {
        truncated = true;
        return false;
      }
      sockets.push_back(std::move(s));
      return true;
    });
    // Without IPv6 there is no tcp6 or udp6; without IPv4 tables nothing can be said.
    if (e != 0 && !t.ipv6) return fail(cannot_read(t.path, e));
    if (truncated) break;
  }
  find_socket_owners(sockets, options.max_scanned_fds);

  std::string out;
  mcpcore::json::writer w{out};
  w.begin_object().key("sockets").begin_array();
  for (const auto& s : sockets) {
    w.begin_object()
        .member("protocol", s.udp ? "udp" : "tcp")
        .member("family", s.ipv6 ? "ipv6" : "ipv4")
        .member("local_address", s.address)
        .member("port", s.port)
        .member("inode", saturating_product(s.inode, 1))
        .member("uid", saturating_product(s.uid, 1));
    if (s.pid > 0) w.member("pid", s.pid).member("process", s.process);
    w.end_object();
  }
  w.end_array()
      .member("count", static_cast<std::uint64_t>(sockets.size()))
      .member("truncated", truncated)
      .end_object();
  return out;
}

probe_result tail_log_file(const std::string& path, const log_options& options) {
  // Non-blocking, so that opening a FIFO without a writer returns at once; then only a regular
  // file is read (a device such as /dev/zero never ends).
  const unique_fd fd{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)};
  if (!fd.valid()) return fail("cannot open " + path + ": " + errno_text(errno));
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return fail("cannot read " + path + ": " + errno_text(errno));
  if (!S_ISREG(st.st_mode)) return fail("cannot read " + path + ": not a regular file");
  const std::size_t window = std::min(options.max_scan_bytes, max_log_window_bytes);
  const auto size = static_cast<std::uint64_t>(std::max<off_t>(st.st_size, 0));
  const std::uint64_t start = size > window ? size - window : 0;
  // One byte before the window tells whether it starts at a line start.
  const std::uint64_t from = start > 0 ? start - 1 : 0;
  std::string data(static_cast<std::size_t>(size - from), '\0');
  std::size_t got = 0;
  while (got < data.size()) {
    const ssize_t n = ::pread(fd.get(), data.data() + got, data.size() - got, static_cast<off_t>(from + got));
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("cannot read " + path + ": " + errno_text(errno));
    }
    if (n == 0) break;  // the file shrank meanwhile
    got += static_cast<std::size_t>(n);
  }
  data.resize(got);
  std::string_view view = data;
  bool at_line_start = true;
  if (start > 0 && !view.empty()) {
    at_line_start = view.front() == '\n';
    view.remove_prefix(1);
  }
  return render_log(view, at_line_start, start > 0, path, options);
}

probe_result filter_log_lines(std::string_view text, std::string_view source, const log_options& options) {
  const std::size_t window = std::min(options.max_scan_bytes, max_log_window_bytes);
  const std::size_t start = text.size() > window ? text.size() - window : 0;
  const bool at_line_start = start == 0 || text[start - 1] == '\n';
  return render_log(text.substr(start), at_line_start, start > 0, source, options);
}

}  // namespace mcpcore_host
