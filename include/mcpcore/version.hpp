// SPDX-License-Identifier: Apache-2.0
// Library version macros.
#ifndef MCPCORE_VERSION_HPP
#define MCPCORE_VERSION_HPP

#define MCPCORE_VERSION_MAJOR 0
#define MCPCORE_VERSION_MINOR 1
#define MCPCORE_VERSION_PATCH 0
/// The version as one integer: major * 10000 + minor * 100 + patch.
#define MCPCORE_VERSION \
  (MCPCORE_VERSION_MAJOR * 10000 + MCPCORE_VERSION_MINOR * 100 + MCPCORE_VERSION_PATCH)
/// The version as a string literal, "major.minor.patch".
#define MCPCORE_VERSION_STRING "0.1.0"

#endif  // MCPCORE_VERSION_HPP
