// SPDX-License-Identifier: Apache-2.0
// Invariant checks for the fuzzers: print what broke, then trap, so that libFuzzer saves the
// input as a crash whatever the build type (assert() vanishes under NDEBUG).
#ifndef MCPCORE_FUZZ_CHECK_HPP
#define MCPCORE_FUZZ_CHECK_HPP

#include <cstdio>

#define MCPCORE_FUZZ_CHECK(cond)                                                              \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      std::fprintf(stderr, "%s:%d: fuzz invariant violated: %s\n", __FILE__, __LINE__, #cond); \
      __builtin_trap();                                                                       \
    }                                                                                         \
  } while (false)

#endif  // MCPCORE_FUZZ_CHECK_HPP
