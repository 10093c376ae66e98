// SPDX-License-Identifier: Apache-2.0
// An owned POSIX file descriptor, for the host server's probes, command runner and token file.
#ifndef MCPCORE_HOST_UNIQUE_FD_HPP
#define MCPCORE_HOST_UNIQUE_FD_HPP

#include <utility>

#include <unistd.h>

namespace mcpcore_host {

/// Owns a file descriptor (or none: -1) and closes it on destruction or `reset`.
class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) noexcept : fd_(fd) {}
  unique_fd(unique_fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  unique_fd& operator=(unique_fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  ~unique_fd() { reset(); }

  [[nodiscard]] int get() const noexcept { return fd_; }
  [[nodiscard]] bool valid() const noexcept { return fd_ >= 0; }
  /// Gives the descriptor up without closing it (to close it yourself and check the result).
  [[nodiscard]] int release() noexcept { return std::exchange(fd_, -1); }
  void reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

}  // namespace mcpcore_host

#endif  // MCPCORE_HOST_UNIQUE_FD_HPP
