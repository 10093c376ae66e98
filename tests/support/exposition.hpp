// SPDX-License-Identifier: Apache-2.0
// Reads one series' value out of a Prometheus text exposition (shared by the tests).
#ifndef MCPCORE_TESTS_SUPPORT_EXPOSITION_HPP
#define MCPCORE_TESTS_SUPPORT_EXPOSITION_HPP

#include <cstddef>
#include <string>
#include <string_view>

/// The value of the series line `series` (name plus rendered labels) in `text`, or -1 when absent.
inline long long series_value(const std::string& text, std::string_view series) {
  std::size_t pos = 0;
  while ((pos = text.find(series, pos)) != std::string::npos) {
    const bool line_start = pos == 0 || text[pos - 1] == '\n';
    const std::size_t after = pos + series.size();
    if (line_start && after < text.size() && text[after] == ' ') {
      return std::stoll(text.substr(after + 1, text.find('\n', after) - after - 1));
    }
    pos = after;
  }
  return -1;
}

#endif  // MCPCORE_TESTS_SUPPORT_EXPOSITION_HPP
