// SPDX-License-Identifier: Apache-2.0
// The host state probes of mcpcore-host: system, memory, filesystems, processes, network, logs.
#ifndef MCPCORE_HOST_HOST_STATE_HPP
#define MCPCORE_HOST_HOST_STATE_HPP

#include <mcpcore/expected.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

/// The probes read Linux's /proc and /sys, statvfs, getifaddrs and uname; they run no program.
/// Each returns the JSON text of a tool's `structuredContent` (one object, written with
/// mcpcore::json::writer, matching the tool's `*_schema` below exactly: optional members are
/// absent, never null), or an English error naming what could not be read.
///
/// Every probe is bounded (entries, bytes, scanned files) by a named constant or option member
/// below. None keeps state between calls: any number of threads may call them at once.
namespace mcpcore_host {

/// Longest /proc or /sys file a probe reads whole, in bytes (/proc/self/mountinfo is the largest
/// in practice); what lies beyond is ignored, ending at the last complete line.
inline constexpr std::size_t max_proc_file_bytes = std::size_t{4} << 20U;

// ---- system summary and memory -----------------------------------------------------------------

/// Hostname, operating system (os-release), kernel, architecture, uptime, load averages, online
/// CPUs and the kernel's process counts (/proc/loadavg).
[[nodiscard]] mcpcore::result<std::string, std::string> system_summary();

/// Physical memory and swap from /proc/meminfo, in bytes (the kernel's kB times 1024).
/// `used_bytes` is total minus available (MemAvailable; on kernels without it, free + buffers +
/// cached), `used_percent` its share of the total.
[[nodiscard]] mcpcore::result<std::string, std::string> memory();

// ---- filesystems -------------------------------------------------------------------------------

/// Most mounts `filesystems` lists by default.
inline constexpr std::size_t default_max_filesystems = 512;

/// What `filesystems` lists.
struct filesystem_options {
  /// Also list pseudo filesystems (without sizes): proc, sysfs, cgroup, cgroup2, devtmpfs,
  /// devpts, mqueue, securityfs, debugfs, tracefs, pstore, bpf, configfs, fusectl, hugetlbfs,
  /// autofs, binfmt_misc, efivarfs, selinuxfs, nsfs, rpc_pipefs, ramfs. tmpfs and overlay hold
  /// real files (/tmp, /dev/shm, a container's root) and are always listed with their sizes.
  bool include_pseudo = false;
  /// Most mounts listed; beyond it the result says `truncated`.
  std::size_t max_entries = default_max_filesystems;
};

/// Mounted filesystems (/proc/self/mountinfo) with sizes from statvfs.
///
/// A mount point mounted over again is listed once, as the mount on top. Network filesystems
/// (nfs, nfs4, cifs, smb3, smbfs, ncpfs, 9p, afs, ceph, glusterfs, lustre, gpfs, davfs, sshfs,
/// coda) and user-space (FUSE `fuse`, `fuse.*`) ones are listed without sizes: statvfs on them
/// can hang while their server or daemon does not answer.
[[nodiscard]] mcpcore::result<std::string, std::string> filesystems(const filesystem_options& options);

// ---- processes ---------------------------------------------------------------------------------

/// Most processes `top_processes` returns: `process_options::limit` is clamped to 1..this.
inline constexpr std::size_t max_top_processes = 100;
/// Longest `command` (the command line) of a process, in bytes; longer ones are cut (at a UTF-8
/// boundary) and marked `command_truncated`.
inline constexpr std::size_t max_command_bytes = 256;
/// Most /proc/[pid] entries one walk reads; beyond it the result says `truncated`.
inline constexpr std::size_t max_scanned_processes = std::size_t{1} << 17U;
/// Longest CPU sample: `process_options::sample` is clamped to 0..this.
inline constexpr std::chrono::milliseconds max_process_sample{5000};

/// How `top_processes` orders the processes.
enum class process_sort : std::uint8_t {
  cpu,     ///< CPU time used during the sample, most first
  memory,  ///< resident set size, largest first
};

/// What `top_processes` measures and returns.
struct process_options {
  process_sort sort_by = process_sort::cpu;
  /// How many processes to return (clamped to 1..`max_top_processes`).
  std::size_t limit = 10;
  /// How long CPU use is measured over, between two readings of every process's CPU time
  /// (clamped to 0..`max_process_sample`). The call takes at least this long.
  std::chrono::milliseconds sample{250};
};

/// The processes using the most CPU (percent of one CPU over `sample`, so a busy multi-threaded
/// process can exceed 100) or the most resident memory, from /proc/[pid]/{stat,status,cmdline}.
/// Processes that end during the walk are left out; threads count towards their process.
[[nodiscard]] mcpcore::result<std::string, std::string> top_processes(const process_options& options);

// ---- network -----------------------------------------------------------------------------------

/// Most interfaces `network_interfaces` lists; beyond it the result says `truncated`.
inline constexpr std::size_t max_network_interfaces = 1024;
/// Most addresses listed per interface (IPv6 privacy addresses can pile up); the rest are left
/// out and the interface says `addresses_truncated`.
inline constexpr std::size_t max_addresses_per_interface = 64;

/// The network interfaces (getifaddrs) with their state, MTU and MAC address (/sys/class/net),
/// IPv4/IPv6 addresses and counters (/proc/net/dev). Alias labels (`eth0:1`) are merged into
/// their interface.
[[nodiscard]] mcpcore::result<std::string, std::string> network_interfaces();

/// Most sockets `listening_sockets` lists by default.
inline constexpr std::size_t default_max_sockets = 1024;
/// Most /proc/[pid]/fd entries `listening_sockets` reads to find sockets' owners by default.
inline constexpr std::size_t default_max_scanned_fds = std::size_t{1} << 18U;

/// What `listening_sockets` lists.
struct socket_options {
  /// Most sockets listed; beyond it the result says `truncated`.
  std::size_t max_entries = default_max_sockets;
  /// Most file descriptors read (over every /proc/[pid]/fd) while looking for the sockets'
  /// owners; owners not found within it are left out.
  std::size_t max_scanned_fds = default_max_scanned_fds;
};

/// TCP sockets in LISTEN and unconnected UDP sockets bound to a port, from
/// /proc/net/{tcp,tcp6,udp,udp6} (this network namespace), with the owning process (the first
/// found holding it, via /proc/[pid]/fd) when this process may see it.
[[nodiscard]] mcpcore::result<std::string, std::string> listening_sockets(const socket_options& options);

// ---- logs --------------------------------------------------------------------------------------

/// Most lines a log probe returns: `log_options::limit` is clamped to 1..this.
inline constexpr std::size_t max_returned_log_lines = 10000;
/// Largest window a log probe scans: `log_options::max_scan_bytes` is clamped to this.
inline constexpr std::size_t max_log_window_bytes = std::size_t{64} << 20U;

/// Which lines a log probe returns.
struct log_options {
  /// Keep only lines containing this text, ASCII case-insensitively; empty keeps every line.
  std::string pattern;
  /// How many of the last matching lines to return (clamped to 1..`max_returned_log_lines`).
  std::size_t limit = 50;
  /// Bytes scanned from the end of the log (clamped to `max_log_window_bytes`).
  std::size_t max_scan_bytes = std::size_t{1} << 20U;
  /// Longest line returned, in bytes (at least 1); longer lines are cut at a UTF-8 boundary and
  /// marked `truncated`.
  std::size_t max_line_bytes = 2048;
};

/// The last matching lines of the log file at `path`, oldest first.
///
/// Only a regular file is read (opened non-blocking, so a FIFO or a device is refused at once),
/// and only its last `max_scan_bytes`. When that window starts inside a line, the partial line
/// is dropped. A trailing `\r` is removed from each line.
[[nodiscard]] mcpcore::result<std::string, std::string> tail_log_file(const std::string& path,
                                                                      const log_options& options);

/// The same as `tail_log_file` over already captured text (the journal, through journalctl);
/// `source` names it in the result.
[[nodiscard]] mcpcore::result<std::string, std::string> filter_log_lines(std::string_view text,
                                                                         std::string_view source,
                                                                         const log_options& options);

// ---- parsers (exposed for the tests) -----------------------------------------------------------

namespace detail {
/// A /proc/self/mountinfo field with its octal escapes (`\040` space, `\011` tab, `\012`
/// newline, `\134` backslash, any `\ooo`) decoded; a malformed escape is kept as written.
[[nodiscard]] std::string decode_mount_escapes(std::string_view field);

/// How `filesystems` treats a filesystem type: "pseudo" (left out unless include_pseudo), "network"
/// or "fuse" (listed without sizes), or "local" (sizes from statvfs).
[[nodiscard]] std::string_view filesystem_kind(std::string_view type);

/// The value of `key` in os-release text (os-release(5): `KEY=value`, the value optionally in
/// double quotes with `\` escapes or in single quotes), or empty when absent.
[[nodiscard]] std::string os_release_value(std::string_view text, std::string_view key);

/// The address in a /proc/net/{tcp,udp}[6] `local_address` field, without its `:port`: 8 hex
/// digits (IPv4) or 32 (IPv6), each 32-bit word printed as the host-order value of its bytes in
/// network order. @returns dotted IPv4 or RFC 5952 IPv6 text, or why the field is malformed.
[[nodiscard]] mcpcore::result<std::string, std::string> decode_proc_net_address(std::string_view hex);
}  // namespace detail

// ---- output schemas ----------------------------------------------------------------------------

/// outputSchema of `get_system_summary` (`system_summary`).
inline constexpr std::string_view system_summary_schema =
    R"j({"type":"object","description":"Identity and load of this host",)j"
    R"j("properties":{)j"
    R"j("hostname":{"type":"string","description":"Host name (the kernel's, /proc/sys/kernel/hostname)"},)j"
    R"j("os":{"type":"string","description":"Operating system (PRETTY_NAME of os-release)"},)j"
    R"j("os_id":{"type":"string","description":"Operating system identifier (ID of os-release), e.g. debian"},)j"
    R"j("kernel":{"type":"string","description":"Kernel release (/proc/sys/kernel/osrelease)"},)j"
    R"j("kernel_version":{"type":"string","description":"Kernel build version (/proc/sys/kernel/version)"},)j"
    R"j("architecture":{"type":"string","description":"Machine hardware name, e.g. x86_64"},)j"
    R"j("uptime_seconds":{"type":"number","minimum":0,"description":"Seconds since boot (/proc/uptime)"},)j"
    R"j("load_average":{"type":"object","description":"Run-queue load averages (/proc/loadavg)",)j"
    R"j("properties":{"one":{"type":"number","minimum":0,"description":"Over 1 minute"},)j"
    R"j("five":{"type":"number","minimum":0,"description":"Over 5 minutes"},)j"
    R"j("fifteen":{"type":"number","minimum":0,"description":"Over 15 minutes"}},)j"
    R"j("required":["one","five","fifteen"],"additionalProperties":false},)j"
    R"j("cpu_count":{"type":"integer","minimum":1,"description":"Online logical CPUs"},)j"
    R"j("processes":{"type":"object","description":"Kernel scheduling entities (threads included, /proc/loadavg)",)j"
    R"j("properties":{"running":{"type":"integer","minimum":0,"description":"Currently runnable"},)j"
    R"j("total":{"type":"integer","minimum":0,"description":"Existing"}},)j"
    R"j("required":["running","total"],"additionalProperties":false}},)j"
    R"j("required":["hostname","os","os_id","kernel","kernel_version","architecture","uptime_seconds",)j"
    R"j("load_average","cpu_count","processes"],"additionalProperties":false})j";

/// outputSchema of `get_memory` (`memory`).
inline constexpr std::string_view memory_schema =
    R"j({"type":"object","description":"Physical memory and swap of this host, in bytes (/proc/meminfo)",)j"
    R"j("properties":{)j"
    R"j("total_bytes":{"type":"integer","minimum":0,"description":"Usable physical memory (MemTotal)"},)j"
    R"j("available_bytes":{"type":"integer","minimum":0,)j"
    R"j("description":"Memory available for new work without swapping (MemAvailable)"},)j"
    R"j("free_bytes":{"type":"integer","minimum":0,"description":"Unused memory (MemFree)"},)j"
    R"j("buffers_bytes":{"type":"integer","minimum":0,"description":"Block device buffers (Buffers)"},)j"
    R"j("cached_bytes":{"type":"integer","minimum":0,"description":"Page cache (Cached)"},)j"
    R"j("used_bytes":{"type":"integer","minimum":0,"description":"total_bytes minus available_bytes"},)j"
    R"j("used_percent":{"type":"number","minimum":0,"maximum":100,)j"
    R"j("description":"used_bytes in percent of total_bytes"},)j"
    R"j("swap_total_bytes":{"type":"integer","minimum":0,"description":"Swap space (SwapTotal)"},)j"
    R"j("swap_free_bytes":{"type":"integer","minimum":0,"description":"Unused swap (SwapFree)"},)j"
    R"j("swap_used_bytes":{"type":"integer","minimum":0,"description":"swap_total_bytes minus swap_free_bytes"}},)j"
    R"j("required":["total_bytes","available_bytes","free_bytes","buffers_bytes","cached_bytes","used_bytes",)j"
    R"j("used_percent","swap_total_bytes","swap_free_bytes","swap_used_bytes"],"additionalProperties":false})j";

/// outputSchema of `list_filesystems` (`filesystems`).
inline constexpr std::string_view filesystems_schema =
    R"j({"type":"object","description":"Mounted filesystems of this host",)j"
    R"j("properties":{"filesystems":{"type":"array","description":"One entry per mount point, in mount order",)j"
    R"j("items":{"type":"object","description":"A mounted filesystem","properties":{)j"
    R"j("mount_point":{"type":"string","description":"Where it is mounted"},)j"
    R"j("device":{"type":"string","description":"What is mounted (a device, a server share, or a name)"},)j"
    R"j("type":{"type":"string","description":"Filesystem type, e.g. ext4, xfs, tmpfs, nfs4"},)j"
    R"j("kind":{"type":"string","enum":["local","network","fuse","pseudo"],)j"
    R"j("description":"local: sizes measured; network and fuse: sizes not measured (statvfs could hang); )j"
    R"j(pseudo: kernel interface filesystem (listed only with include_pseudo)"},)j"
    R"j("read_only":{"type":"boolean","description":"Mounted read-only"},)j"
    R"j("size_bytes":{"type":"integer","minimum":0,"description":"Total size (local filesystems)"},)j"
    R"j("used_bytes":{"type":"integer","minimum":0,"description":"Space in use"},)j"
    R"j("available_bytes":{"type":"integer","minimum":0,"description":"Space available to unprivileged users"},)j"
    R"j("used_percent":{"type":"number","minimum":0,"maximum":100,)j"
    R"j("description":"used_bytes in percent of used_bytes plus available_bytes (as df computes it)"},)j"
    R"j("inodes_total":{"type":"integer","minimum":0,)j"
    R"j("description":"File nodes (0 when the filesystem has no fixed count)"},)j"
    R"j("inodes_free":{"type":"integer","minimum":0,"description":"Free file nodes"},)j"
    R"j("error":{"type":"string","description":"Why the sizes of a local filesystem could not be read"}},)j"
    R"j("required":["mount_point","device","type","kind","read_only"],"additionalProperties":false}},)j"
    R"j("count":{"type":"integer","minimum":0,"description":"Entries listed"},)j"
    R"j("truncated":{"type":"boolean","description":"More mounts exist than were listed"}},)j"
    R"j("required":["filesystems","count","truncated"],"additionalProperties":false})j";

/// outputSchema of `list_top_processes` (`top_processes`).
inline constexpr std::string_view processes_schema =
    R"j({"type":"object","description":"The processes using the most CPU or memory",)j"
    R"j("properties":{)j"
    R"j("sort_by":{"type":"string","enum":["cpu","memory"],"description":"The order of processes"},)j"
    R"j("sample_ms":{"type":"integer","minimum":0,"description":"How long CPU use was measured over, in ms"},)j"
    R"j("total_processes":{"type":"integer","minimum":0,"description":"Processes seen on this host"},)j"
    R"j("truncated":{"type":"boolean","description":"More processes exist than were examined"},)j"
    R"j("processes":{"type":"array","description":"The top processes, in sort order",)j"
    R"j("items":{"type":"object","description":"A process","properties":{)j"
    R"j("pid":{"type":"integer","minimum":1,"description":"Process id"},)j"
    R"j("ppid":{"type":"integer","minimum":0,"description":"Parent process id"},)j"
    R"j("name":{"type":"string","description":"Executable name (comm, at most 15 bytes)"},)j"
    R"j("command":{"type":"string",)j"
    R"j("description":"Command line, arguments separated by spaces ([name] for kernel threads)"},)j"
    R"j("command_truncated":{"type":"boolean","description":"Present (true) when the command line was cut"},)j"
    R"j("user":{"type":"string","description":"Effective user name, or the numeric uid when it has no name"},)j"
    R"j("state":{"type":"string","description":"Scheduler state: running, sleeping, disk_sleep, zombie, stopped, )j"
    R"j(tracing_stop, dead, idle, parked, ..."},)j"
    R"j("threads":{"type":"integer","minimum":0,"description":"Threads"},)j"
    R"j("rss_bytes":{"type":"integer","minimum":0,"description":"Resident set size"},)j"
    R"j("cpu_percent":{"type":"number","minimum":0,)j"
    R"j("description":"CPU use during the sample, in percent of one CPU (can exceed 100)"}},)j"
    R"j("required":["pid","ppid","name","command","user","state","threads","rss_bytes","cpu_percent"],)j"
    R"j("additionalProperties":false}}},)j"
    R"j("required":["sort_by","sample_ms","total_processes","truncated","processes"],"additionalProperties":false})j";

/// outputSchema of `list_network_interfaces` (`network_interfaces`).
inline constexpr std::string_view network_interfaces_schema =
    R"j({"type":"object","description":"Network interfaces of this host",)j"
    R"j("properties":{"interfaces":{"type":"array","description":"One entry per interface",)j"
    R"j("items":{"type":"object","description":"A network interface","properties":{)j"
    R"j("name":{"type":"string","description":"Interface name, e.g. eth0"},)j"
    R"j("state":{"type":"string","description":"Operational state (operstate): up, down, unknown, dormant, ..."},)j"
    R"j("mtu":{"type":"integer","minimum":0,"description":"Maximum transmission unit, in bytes"},)j"
    R"j("mac":{"type":"string","description":"Link-layer address (absent when the interface has none)"},)j"
    R"j("up":{"type":"boolean","description":"Administratively up (IFF_UP)"},)j"
    R"j("loopback":{"type":"boolean","description":"A loopback interface"},)j"
    R"j("addresses":{"type":"array","description":"Its IP addresses",)j"
    R"j("items":{"type":"object","description":"An IP address","properties":{)j"
    R"j("family":{"type":"string","enum":["ipv4","ipv6"],"description":"Address family"},)j"
    R"j("address":{"type":"string","description":"The address, dotted IPv4 or compressed IPv6"},)j"
    R"j("prefix_length":{"type":"integer","minimum":0,"maximum":128,"description":"Network prefix length"}},)j"
    R"j("required":["family","address","prefix_length"],"additionalProperties":false}},)j"
    R"j("addresses_truncated":{"type":"boolean","description":"Present (true) when addresses were left out"},)j"
    R"j("rx_bytes":{"type":"integer","minimum":0,"description":"Bytes received"},)j"
    R"j("tx_bytes":{"type":"integer","minimum":0,"description":"Bytes sent"},)j"
    R"j("rx_packets":{"type":"integer","minimum":0,"description":"Packets received"},)j"
    R"j("tx_packets":{"type":"integer","minimum":0,"description":"Packets sent"},)j"
    R"j("rx_errors":{"type":"integer","minimum":0,"description":"Receive errors"},)j"
    R"j("tx_errors":{"type":"integer","minimum":0,"description":"Transmit errors"}},)j"
    R"j("required":["name","state","up","loopback","addresses"],"additionalProperties":false}},)j"
    R"j("truncated":{"type":"boolean","description":"More interfaces exist than were listed"}},)j"
    R"j("required":["interfaces","truncated"],"additionalProperties":false})j";

/// outputSchema of `list_listening_sockets` (`listening_sockets`).
inline constexpr std::string_view listening_sockets_schema =
    R"j({"type":"object","description":"TCP sockets listening and UDP sockets bound on this host",)j"
    R"j("properties":{"sockets":{"type":"array","description":"TCP first, then UDP; IPv4 before IPv6",)j"
    R"j("items":{"type":"object","description":"A socket","properties":{)j"
    R"j("protocol":{"type":"string","enum":["tcp","udp"],"description":"Transport protocol"},)j"
    R"j("family":{"type":"string","enum":["ipv4","ipv6"],"description":"Address family"},)j"
    R"j("local_address":{"type":"string","description":"Bound address (0.0.0.0 or :: for every address)"},)j"
    R"j("port":{"type":"integer","minimum":0,"maximum":65535,"description":"Bound port"},)j"
    R"j("inode":{"type":"integer","minimum":0,"description":"Socket inode"},)j"
    R"j("uid":{"type":"integer","minimum":0,"description":"User id that created the socket"},)j"
    R"j("pid":{"type":"integer","minimum":1,"description":"A process holding the socket (when visible)"},)j"
    R"j("process":{"type":"string","description":"That process's name (comm)"}},)j"
    R"j("required":["protocol","family","local_address","port","inode","uid"],"additionalProperties":false}},)j"
    R"j("count":{"type":"integer","minimum":0,"description":"Entries listed"},)j"
    R"j("truncated":{"type":"boolean","description":"More sockets exist than were listed"}},)j"
    R"j("required":["sockets","count","truncated"],"additionalProperties":false})j";

/// outputSchema of `get_recent_logs` (`tail_log_file`, `filter_log_lines`).
inline constexpr std::string_view log_lines_schema =
    R"j({"type":"object","description":"The most recent matching lines of a log",)j"
    R"j("properties":{)j"
    R"j("source":{"type":"string","description":"The log read (a file path or journal)"},)j"
    R"j("lines":{"type":"array","description":"Matching lines, oldest first",)j"
    R"j("items":{"type":"object","description":"A log line","properties":{)j"
    R"j("text":{"type":"string","description":"The line, without its line break"},)j"
    R"j("truncated":{"type":"boolean","description":"Present (true) when the line was cut to the line length cap"}},)j"
    R"j("required":["text"],"additionalProperties":false}},)j"
    R"j("returned":{"type":"integer","minimum":0,"description":"Lines returned"},)j"
    R"j("matched":{"type":"integer","minimum":0,"description":"Lines in the scanned window that matched"},)j"
    R"j("scanned_bytes":{"type":"integer","minimum":0,"description":"Bytes of the log scanned (its end)"},)j"
    R"j("window_truncated":{"type":"boolean","description":"The log is larger than the scanned window"}},)j"
    R"j("required":["source","lines","returned","matched","scanned_bytes","window_truncated"],)j"
    R"j("additionalProperties":false})j";

}  // namespace mcpcore_host

#endif  // MCPCORE_HOST_HOST_STATE_HPP
