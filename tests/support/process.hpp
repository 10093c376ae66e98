// SPDX-License-Identifier: Apache-2.0
// Helpers for tests that need files or processes: a temporary directory, fork-and-exit children,
// and a start line that releases several children at once.
#ifndef MCPCORE_TESTS_SUPPORT_PROCESS_HPP
#define MCPCORE_TESTS_SUPPORT_PROCESS_HPP

#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace test_process {

/// A fresh directory under /tmp, removed with everything in it at the end of the test.
class temp_dir {
 public:
  temp_dir() {
    std::array<char, 32> name{};
    std::snprintf(name.data(), name.size(), "/tmp/mcpcore-test-XXXXXX");
    const char* made = ::mkdtemp(name.data());
    REQUIRE(made != nullptr);
    path_ = made;
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] std::string file(std::string_view name = "approvals.db") const {
    return path_ + "/" + std::string(name);
  }

 private:
  std::string path_;
};

/// Runs `f` in a child process that ends with `_exit(f())`; returns the child's pid. The caller
/// must hold no SQLite connection to a database the child opens (SQLite's POSIX locks are per
/// process), and no other thread should be running.
template <class F>
pid_t spawn(F f) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int code = 120;
    try {
      code = f();
    } catch (...) {
      code = 121;
    }
    ::_exit(code);
  }
  return pid;
}

/// The exit status of child `pid`, or -1 when it did not exit normally.
inline int wait_exit(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// A pipe the children block on until the parent closes its write end: a common start line.
class start_gate {
 public:
  start_gate() { REQUIRE(::pipe(fds_.data()) == 0); }
  start_gate(const start_gate&) = delete;
  start_gate& operator=(const start_gate&) = delete;
  ~start_gate() {
    for (const int fd : fds_) {
      if (fd >= 0) ::close(fd);
    }
  }
  /// In a child: waits for the start.
  void wait() {
    ::close(fds_[1]);
    char c = 0;
    while (::read(fds_[0], &c, 1) > 0) {
    }
  }
  /// In the parent, once every child is forked.
  void open() {
    ::close(fds_[0]);
    ::close(fds_[1]);
    fds_ = {-1, -1};
  }

 private:
  std::array<int, 2> fds_{-1, -1};
};

}  // namespace test_process

#endif  // MCPCORE_TESTS_SUPPORT_PROCESS_HPP
