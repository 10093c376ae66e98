// SPDX-License-Identifier: Apache-2.0
// Compile-mode switches, the ABI-tagged namespace and the assertion hook.
#ifndef MCPCORE_DETAIL_CONFIG_HPP
#define MCPCORE_DETAIL_CONFIG_HPP

// Compile modes (the Asio/Beast scheme):
//  - MCPCORE_SEPARATE_COMPILATION: non-template definitions live in the compiled library
//    (target mcpcore::mcpcore); headers only declare them.
//  - MCPCORE_HEADER_ONLY: every header includes its impl/*.ipp and definitions are inline
//    (target mcpcore::header_only).
// When neither is defined the headers behave as header-only, so that a plain include works.
#if defined(MCPCORE_HEADER_ONLY) && defined(MCPCORE_SEPARATE_COMPILATION)
#  error "define at most one of MCPCORE_HEADER_ONLY and MCPCORE_SEPARATE_COMPILATION"
#endif
#if !defined(MCPCORE_SEPARATE_COMPILATION) && !defined(MCPCORE_HEADER_ONLY)
#  define MCPCORE_HEADER_ONLY 1
#endif

#if __cplusplus <= 202002L && !defined(_MSVC_LANG)
#  error "mcpcore requires C++23 (-std=c++23)"
#endif

#if defined(MCPCORE_HEADER_ONLY)
#  define MCPCORE_DECL inline
#  define MCPCORE_ABI_TAG v0_ho
#else
#  define MCPCORE_DECL
#  define MCPCORE_ABI_TAG v0_sc
#endif

// The inline namespace carries the compile mode, so that a translation unit built header-only
// cannot silently link against objects built for separate compilation (they fail to link instead
// of violating the one-definition rule).
#define MCPCORE_BEGIN_NAMESPACE \
  namespace mcpcore {           \
  inline namespace MCPCORE_ABI_TAG {
#define MCPCORE_END_NAMESPACE \
  }                           \
  }

// Precondition checks. Define MCPCORE_ASSERT before including any mcpcore header to route
// violations elsewhere (a logger, an abort with context); protocol and input errors are never
// reported through it.
#ifndef MCPCORE_ASSERT
#  include <cassert>
#  define MCPCORE_ASSERT(expr) assert(expr)
#endif

#endif  // MCPCORE_DETAIL_CONFIG_HPP
