// SPDX-License-Identifier: Apache-2.0
// The RFC 5424 severities MCP's log messages carry, and their wire names.
#ifndef MCPCORE_LOG_LEVEL_HPP
#define MCPCORE_LOG_LEVEL_HPP

#include <mcpcore/detail/config.hpp>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE

/// RFC 5424 severities, as MCP's `logging/setLevel`, `notifications/message` and the per-request
/// `io.modelcontextprotocol/logLevel` name them, least severe first.
enum class log_level : std::uint8_t { debug, info, notice, warning, error, critical, alert, emergency };

namespace detail {
inline constexpr std::string_view log_level_names[] = {"debug", "info",     "notice", "warning",
                                                       "error", "critical", "alert",  "emergency"};
}  // namespace detail

/// The wire name of a level ("debug" ... "emergency").
[[nodiscard]] constexpr std::string_view to_string(log_level level) noexcept {
  const auto i = static_cast<std::size_t>(level);
  return i < std::size(detail::log_level_names) ? detail::log_level_names[i] : std::string_view{"emergency"};
}

/// The level of a wire name; nullopt for anything else (the server answers -32602).
[[nodiscard]] constexpr std::optional<log_level> parse_log_level(std::string_view name) noexcept {
  for (std::size_t i = 0; i < std::size(detail::log_level_names); ++i) {
    if (detail::log_level_names[i] == name) return static_cast<log_level>(i);
  }
  return std::nullopt;
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_LOG_LEVEL_HPP
