// SPDX-License-Identifier: Apache-2.0
// A helper the example servers share: taking SIGINT and SIGTERM with sigwait.
#ifndef MCPCORE_EXAMPLES_STOP_SIGNALS_HPP
#define MCPCORE_EXAMPLES_STOP_SIGNALS_HPP

#include <csignal>

#include <pthread.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX sigset_t, sigemptyset, sigaddset

namespace mcpcore_examples {

/// Blocks SIGINT and SIGTERM in the calling thread, so in every thread it starts afterwards (they
/// inherit the mask), and returns that set for the main thread's sigwait. Also ignores SIGPIPE: a
/// peer that closes while the server writes must not kill it. Call it before any thread starts.
// NOLINTNEXTLINE(misc-include-cleaner): <signal.h> declares sigset_t on POSIX
inline sigset_t block_stop_signals() {
  std::signal(SIGPIPE, SIG_IGN);  // NOLINT(misc-include-cleaner): <csignal> declares SIGPIPE on POSIX
  sigset_t stop_signals;          // NOLINT(misc-include-cleaner): <signal.h> declares it on POSIX
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

}  // namespace mcpcore_examples

#endif  // MCPCORE_EXAMPLES_STOP_SIGNALS_HPP
