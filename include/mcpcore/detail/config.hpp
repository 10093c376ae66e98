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

// Symbol visibility (docs/configuration.md#shared-and-static-libraries). The compiled libraries
// are built with hidden visibility (-fvisibility=hidden -fvisibility-inlines-hidden); what a host
// may call carries default visibility, the same when building the library and when using it:
//  - MCPCORE_DECL on each non-inline, non-template function declared in a public header;
//  - MCPCORE_API on each polymorphic class of a public header (its vtable and typeinfo are shared
//    by the library and the host: the type-erasure bases whose models a host instantiates, the
//    sinks and streams the library hands out), and on each function of the compiled-only
//    mcpcore::transport (which has no header-only form, so no MCPCORE_DECL).
// A non-template function defined in an impl/*.ipp and declared in no public header is a helper of
// the library's own: MCPCORE_INTERNAL (hidden however the library is built; the packaging test
// `package.find_package.shared` checks one stays out of libmcpcore.so's dynamic symbols).
// Header-only, MCPCORE_DECL and MCPCORE_INTERNAL are `inline` and MCPCORE_API is empty.
#if defined(MCPCORE_HEADER_ONLY)
#  define MCPCORE_DECL inline
#  define MCPCORE_INTERNAL inline
#  define MCPCORE_API
#  define MCPCORE_ABI_TAG v0_ho
#else
#  if defined(__GNUC__) || defined(__clang__)
#    define MCPCORE_VISIBLE __attribute__((visibility("default")))
#    define MCPCORE_INTERNAL __attribute__((visibility("hidden")))
#  else
#    define MCPCORE_VISIBLE
#    define MCPCORE_INTERNAL
#  endif
#  define MCPCORE_DECL MCPCORE_VISIBLE
#  define MCPCORE_API MCPCORE_VISIBLE
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
