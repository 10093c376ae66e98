// SPDX-License-Identifier: Apache-2.0
// The tags of this host (set_tag, delete_tag, get_tags), kept in an SQLite database.
#ifndef MCPCORE_HOST_TAG_STORE_HPP
#define MCPCORE_HOST_TAG_STORE_HPP

#include <mcpcore/expected.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mcpcore_host {

/// Most tags one host may carry; `set` of a new key beyond it is refused (`cap_reached`).
inline constexpr std::size_t default_max_tags = 1024;
/// Longest tag value, in bytes of UTF-8 (the tool's `maxLength` counts code points, so it alone
/// would let four times as many bytes through); `set` refuses a longer one.
inline constexpr std::size_t max_tag_value_bytes = 256;
/// How long a statement waits for another connection's write lock (the admin command, a second
/// server on the same file) before it fails.
inline constexpr int tag_store_busy_timeout_ms = 5000;

/// One tag: a key, its value, who set it and when (milliseconds since the Unix epoch, UTC).
struct tag {
  std::string key;
  std::string value;
  std::string updated_by;
  std::int64_t updated_at_ms = 0;
};

/// What `tag_store::set` did.
enum class set_outcome : std::uint8_t { created, updated, unchanged, cap_reached };

/// A host's tags in an SQLite file (table `host_tags`, WAL, `synchronous=FULL`).
///
/// Keys and values are validated by the tools' input schemas before they get here; the store
/// enforces the count cap and the value's size in bytes. Errors are English messages naming the database.
///
/// @par Thread safety
/// Every member may be called concurrently (one connection, serialised by a mutex).
class tag_store {
 public:
  /// Opens (creating when missing) the database at `path`.
  [[nodiscard]] static mcpcore::result<tag_store, std::string> open(const std::string& path,
                                                                    std::size_t max_tags = default_max_tags);

  tag_store(tag_store&&) noexcept;
  tag_store& operator=(tag_store&&) noexcept;
  ~tag_store();
  tag_store(const tag_store&) = delete;
  tag_store& operator=(const tag_store&) = delete;

  /// Every tag, by key.
  [[nodiscard]] mcpcore::result<std::vector<tag>, std::string> list() const;
  /// Sets `key` to `value` (one transaction); `unchanged` when it already had that value.
  [[nodiscard]] mcpcore::result<set_outcome, std::string> set(std::string_view key, std::string_view value,
                                                              std::string_view by, std::int64_t now_ms);
  /// Removes `key`: true when it existed.
  [[nodiscard]] mcpcore::result<bool, std::string> remove(std::string_view key);

 private:
  struct impl;
  explicit tag_store(std::unique_ptr<impl> p) noexcept;
  std::unique_ptr<impl> impl_;
};

}  // namespace mcpcore_host

#endif  // MCPCORE_HOST_TAG_STORE_HPP
