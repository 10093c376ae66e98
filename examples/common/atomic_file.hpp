// SPDX-License-Identifier: Apache-2.0
// A helper the example programs share: writing a small file (a port number) atomically.
#ifndef MCPCORE_EXAMPLES_ATOMIC_FILE_HPP
#define MCPCORE_EXAMPLES_ATOMIC_FILE_HPP

#include <filesystem>
#include <fstream>
#include <ios>
#include <string>
#include <system_error>

namespace mcpcore_examples {

/// Writes `text` to `path` through a temporary file and a rename, so that a script polling
/// `path` never reads a partial port number.
inline bool write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out{tmp, std::ios::trunc};
    out << text;
    out.flush();
    if (!out) return false;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  return !ec;
}

}  // namespace mcpcore_examples

#endif  // MCPCORE_EXAMPLES_ATOMIC_FILE_HPP
