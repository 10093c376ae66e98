// SPDX-License-Identifier: Apache-2.0
// The client capabilities a server request can depend on (sampling, elicitation, roots), one bit
// each: what an input request needs and what a -32021 answer names (docs/eras.md#input-requests).
#ifndef MCPCORE_CLIENT_CAPABILITY_HPP
#define MCPCORE_CLIENT_CAPABILITY_HPP

#include <mcpcore/detail/config.hpp>

#include <cstdint>

MCPCORE_BEGIN_NAMESPACE

/// A client capability, as one bit of a mask.
enum class client_capability : std::uint8_t {
  sampling = 1U << 0U,          ///< `sampling`
  sampling_tools = 1U << 1U,    ///< `sampling.tools`: sampling with tool use
  elicitation_form = 1U << 2U,  ///< `elicitation.form` (a bare `elicitation: {}` counts)
  elicitation_url = 1U << 3U,   ///< `elicitation.url`
  roots = 1U << 4U,             ///< `roots`
};

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_CLIENT_CAPABILITY_HPP
