// SPDX-License-Identifier: Apache-2.0
// The host's token file: creation, permission check, mint, revoke, list.
#include "token_file.hpp"
#include "unique_fd.hpp"

#include <mcpcore/expected.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/transport/token_authenticator.hpp>

#include <fmt/core.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

namespace mcpcore_host {

namespace {

using mcpcore::fail;
using mcpcore::transport::token_authenticator;

constexpr std::string_view file_header =
    "# mcpcore-host tokens: sha256:<digest> <principal id> <tier> <kind> [roles=..] [assured] [name=..]\n"
    "# Only digests are kept. Mint and revoke with `mcpcore-admin token mint|revoke`; see\n"
    "# docs/host-server.md and docs/authentication.md. Must stay readable by its owner only.\n";

std::string os_error(int err) { return std::system_category().message(err); }

/// The whole file, bounded by the authenticator's own cap; a missing file reads as "" with
/// `missing` set.
mcpcore::result<std::string, std::string> read_file(const std::string& path, bool& missing) {
  missing = false;
  const unique_fd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};  // NOLINT(cppcoreguidelines-pro-type-vararg)
  if (fd.get() < 0) {
    if (errno == ENOENT) {
      missing = true;
      return std::string{};
    }
    return fail("cannot read the token file " + path + ": " + os_error(errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return fail("the token file " + path + " is not a regular file");
  }
  std::string text;
  char buf[4096];  // NOLINT(cppcoreguidelines-avoid-c-arrays): a read buffer
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("cannot read the token file " + path + ": " + os_error(errno));
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > mcpcore::transport::max_token_file_bytes) {
      return fail(fmt::format("the token file {} is larger than {} bytes", path,
                              mcpcore::transport::max_token_file_bytes));
    }
  }
  return text;
}

/// Writes `text` beside `path`, flushes it to disk and renames it over `path` (mode 0600), so a
/// reader sees the old file or the new one, never a mixture.
mcpcore::result<void, std::string> replace_file(const std::string& path, std::string_view text) {
  const std::string tmp = path + ".new";
  ::unlink(tmp.c_str());
  unique_fd fd{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, S_IRUSR | S_IWUSR)};  // NOLINT
  if (fd.get() < 0) return fail("cannot write " + tmp + ": " + os_error(errno));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::unlink(tmp.c_str());
      return fail("cannot write " + tmp + ": " + os_error(err));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd.get()) != 0 || ::close(fd.release()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return fail("cannot write " + tmp + ": " + os_error(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return fail("cannot replace the token file " + path + ": " + os_error(err));
  }
  return {};
}

/// An exclusive advisory lock on `<path>.lock`, held for the object's life.
class edit_lock {
 public:
  static mcpcore::result<edit_lock, std::string> take(const std::string& path) {
    const std::string lock_path = path + ".lock";
    unique_fd fd{::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, S_IRUSR | S_IWUSR)};  // NOLINT
    if (fd.get() < 0) return fail("cannot lock " + lock_path + ": " + os_error(errno));
    while (::flock(fd.get(), LOCK_EX) != 0) {
      if (errno != EINTR) return fail("cannot lock " + lock_path + ": " + os_error(errno));
    }
    return edit_lock{fd.release()};
  }
  edit_lock(edit_lock&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  edit_lock& operator=(edit_lock&&) = delete;
  edit_lock(const edit_lock&) = delete;
  edit_lock& operator=(const edit_lock&) = delete;
  ~edit_lock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }

 private:
  explicit edit_lock(int fd) noexcept : fd_(fd) {}
  int fd_;
};

/// The file's text must parse exactly as the server will parse it.
mcpcore::result<void, std::string> check_parses(const std::string& path, std::string_view text) {
  auto parsed = token_authenticator::from_text(text);
  if (!parsed) return fail(fmt::format("token file {}: {}", path, parsed.error().message()));
  return {};
}

/// The blank-separated fields of a line.
std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

/// Calls `f(line_number, line)` for each line of `text` (without its newline).
template <class F>
void for_each_line(std::string_view text, F&& f) {
  std::size_t n = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    f(++n, line);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
  }
}

/// Whether `line` is an entry (neither blank nor a comment).
bool is_entry(std::string_view line) {
  const auto f = fields(line);
  return !f.empty() && f.front().front() != '#';
}

}  // namespace

std::string token_file_permission_problem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return fmt::format("cannot read the token file {}: {}", path, os_error(errno));
  if (!S_ISREG(st.st_mode)) return fmt::format("the token file {} is not a regular file", path);
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    return fmt::format("the token file {0} is accessible by group or others (mode {1:04o}); run: chmod 600 {0}", path,
                       static_cast<unsigned>(st.st_mode & 07777U));
  }
  return {};
}

mcpcore::result<std::string, std::string> create_first_run_token_file(const std::string& path) {
  auto token = token_authenticator::generate_token();
  if (!token) return fail(std::string{"cannot generate a token: the system's random source failed"});
  mcpcore::principal who;
  who.id = first_run_principal_id;
  who.tier = "operator";
  who.kind = mcpcore::principal_kind::service;
  who.display_name = "Local operator (created on first run)";
  const auto line = token_authenticator::token_file_line(*token, who);
  if (!line) return fail(std::string{"cannot form the first token's line"});
  const std::string text = std::string{file_header} + *line + "\n";
  unique_fd fd{::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, S_IRUSR | S_IWUSR)};  // NOLINT
  if (fd.get() < 0) return fail("cannot create the token file " + path + ": " + os_error(errno));
  const bool ok = ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                  ::fsync(fd.get()) == 0 && ::close(fd.release()) == 0;
  if (!ok) {
    const int err = errno;
    ::unlink(path.c_str());
    return fail("cannot write the token file " + path + ": " + os_error(err));
  }
  return std::move(*token);
}

mcpcore::result<std::string, std::string> mint_token(const std::string& path, const mcpcore::principal& who) {
  auto lock = edit_lock::take(path);
  if (!lock) return fail(lock.error());
  bool missing = false;
  auto text = read_file(path, missing);
  if (!text) return fail(text.error());
  if (!missing) {
    if (auto problem = token_file_permission_problem(path); !problem.empty()) return fail(problem);
  }
  auto token = token_authenticator::generate_token();
  if (!token) return fail(std::string{"cannot generate a token: the system's random source failed"});
  const auto line = token_authenticator::token_file_line(*token, who);
  if (!line) {
    return fail(std::string{"cannot write a token for this principal: the id must be visible characters without "
                            "spaces, the tier readonly, operator or supervised, roles distinct names without commas "
                            "or blanks, and the name without control characters or surrounding blanks"});
  }
  std::string next = missing ? std::string{file_header} : std::move(*text);
  if (!next.empty() && next.back() != '\n') next += '\n';
  next += *line;
  next += '\n';
  if (auto ok = check_parses(path, next); !ok) {
    return fail(ok.error() + " (nothing was changed; an id already listed with other attributes must be revoked "
                             "first)");
  }
  if (auto ok = replace_file(path, next); !ok) return fail(ok.error());
  return std::move(*token);
}

mcpcore::result<std::size_t, std::string> revoke_tokens(const std::string& path, const std::string& id) {
  auto lock = edit_lock::take(path);
  if (!lock) return fail(lock.error());
  bool missing = false;
  auto text = read_file(path, missing);
  if (!text) return fail(text.error());
  if (missing) return fail("there is no token file " + path);
  std::string next;
  std::size_t removed = 0;
  for_each_line(*text, [&](std::size_t, std::string_view line) {
    const auto f = fields(line);
    if (is_entry(line) && f.size() >= 2 && f[1] == id) {
      ++removed;
      return;
    }
    next += line;
    next += '\n';
  });
  if (removed == 0) return std::size_t{0};
  if (auto ok = check_parses(path, next); !ok) return fail(ok.error());
  if (auto ok = replace_file(path, next); !ok) return fail(ok.error());
  return removed;
}

mcpcore::result<std::vector<token_entry>, std::string> list_tokens(const std::string& path) {
  bool missing = false;
  auto text = read_file(path, missing);
  if (!text) return fail(text.error());
  if (missing) return fail("there is no token file " + path);
  if (auto ok = check_parses(path, *text); !ok) return fail(ok.error());
  std::vector<token_entry> out;
  for_each_line(*text, [&](std::size_t n, std::string_view line) {
    if (!is_entry(line)) return;
    const auto f = fields(line);
    token_entry e;
    e.line = n;
    constexpr std::size_t digest_shown = 12;
    const std::string_view digest = f[0].substr(f[0].find(':') + 1);
    e.digest_prefix = std::string{digest.substr(0, digest_shown)};
    if (f.size() > 1) e.principal_id = std::string{f[1]};
    if (f.size() > 2) e.tier = std::string{f[2]};
    if (f.size() > 3) e.kind = std::string{f[3]};
    if (f.size() > 4) {
      const auto at = static_cast<std::size_t>(f[4].data() - line.data());
      std::string_view rest = line.substr(at);
      while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\t' || rest.back() == '\r')) rest.remove_suffix(1);
      e.options = std::string{rest};
    }
    out.push_back(std::move(e));
  });
  return out;
}

}  // namespace mcpcore_host
