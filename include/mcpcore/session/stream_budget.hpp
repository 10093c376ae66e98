// SPDX-License-Identifier: Apache-2.0
// The stream budget: one bound on every held-open response, with per-principal caps per surface.
#ifndef MCPCORE_STREAM_BUDGET_HPP
#define MCPCORE_STREAM_BUDGET_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

MCPCORE_BEGIN_NAMESPACE

/// Surface names mcpcore uses; hosts add their own (any non-empty string).
inline constexpr std::string_view stream_surface_get = "mcp_get";
inline constexpr std::string_view stream_surface_post = "mcp_post";

/// Held-open responses across every surface by default (docs/sessions.md#the-stream-budget).
inline constexpr std::size_t default_stream_global_cap = 128;

/// Caps of a `stream_budget` (docs/sessions.md#the-stream-budget).
struct stream_budget_options {
  /// Held-open responses across every surface (`default_stream_global_cap`). Only
  /// `stream_budget_mode::enforce_caps` acquisitions are refused at it; 0 refuses every one of them.
  std::size_t global_cap = default_stream_global_cap;
};

/// Why `stream_budget::try_acquire` refused (the wire `reason` of a 429 `-32012`).
enum class stream_budget_reject : std::uint8_t {
  global_stream_cap = 1,     ///< the global cap is reached
  per_principal_stream_cap,  ///< this principal's cap on this surface is reached
};
/// "global_stream_cap" or "per_principal_stream_cap".
[[nodiscard]] MCPCORE_DECL std::string_view to_string(stream_budget_reject r) noexcept;

/// How a lease is taken.
enum class stream_budget_mode : std::uint8_t {
  enforce_caps,  ///< a first attach: refused over the global or the per-principal cap
  takeover,      ///< a stream replacing a live one on the same session: never refused, still counted
};

class stream_budget;

/// One held-open response's slot. Move-only; the slot returns to the budget exactly once, on
/// `release()` or destruction, whichever comes first. The budget must outlive its leases.
class stream_lease {
 public:
  stream_lease() noexcept = default;
  MCPCORE_DECL stream_lease(stream_lease&& other) noexcept;
  MCPCORE_DECL stream_lease& operator=(stream_lease&& other) noexcept;
  stream_lease(const stream_lease&) = delete;
  stream_lease& operator=(const stream_lease&) = delete;
  MCPCORE_DECL ~stream_lease();

  /// Returns the slot now; later calls (and the destructor) do nothing.
  MCPCORE_DECL void release() noexcept;
  /// Whether the lease still holds a slot.
  explicit operator bool() const noexcept { return budget_ != nullptr; }

 private:
  friend class stream_budget;
  stream_lease(stream_budget* b, std::string key) noexcept : budget_(b), key_(std::move(key)) {}
  stream_budget* budget_ = nullptr;
  // The budget's entry key: decimal length of the surface, ':', the surface, the principal
  // (length-prefixed so that no bytes in either part can make two pairs share an entry).
  std::string key_;
};

/// Counts held-open responses (docs/sessions.md#the-stream-budget): reject, never evict;
/// per-(surface, principal) entries are erased when they reach zero, so memory is bounded by the
/// streams held.
///
/// Thread-safe. Not copyable or movable (leases point at it).
class stream_budget {
 public:
  MCPCORE_DECL explicit stream_budget(stream_budget_options options = {});
  MCPCORE_DECL ~stream_budget();
  stream_budget(const stream_budget&) = delete;
  stream_budget& operator=(const stream_budget&) = delete;

  /// Takes one slot for `principal` on `surface`. `per_principal_cap` 0 means unlimited.
  /// `enforce_caps` checks the global cap, then the per-principal one (so when both are reached the
  /// reason is `global_stream_cap`); `takeover` skips both but is still counted, so the totals may
  /// exceed the caps and later `enforce_caps` calls see them. Surface and principal are arbitrary
  /// bytes (empty and embedded NULs included); distinct pairs never share a count.
  /// Nothing changes on a refusal. @throws std::bad_alloc (before any counter moves)
  [[nodiscard]] MCPCORE_DECL result<stream_lease, stream_budget_reject> try_acquire(
      std::string_view surface, std::string_view principal, std::size_t per_principal_cap,
      stream_budget_mode mode = stream_budget_mode::enforce_caps);

  /// Slots held, in total and by one (surface, principal). The total is read without locking and is
  /// always a value the budget held at some instant; the per-pair count takes the lock.
  [[nodiscard]] MCPCORE_DECL std::size_t in_use() const noexcept;
  [[nodiscard]] MCPCORE_DECL std::size_t in_use(std::string_view surface, std::string_view principal) const;
  /// Distinct (surface, principal) entries held (0 when idle: entries are erased at zero).
  [[nodiscard]] MCPCORE_DECL std::size_t entries() const noexcept;
  [[nodiscard]] MCPCORE_DECL const stream_budget_options& options() const noexcept;

 private:
  friend class stream_lease;
  MCPCORE_DECL void release(const std::string& key) noexcept;
  struct impl;
  impl* impl_;
};

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/session/impl/stream_budget.ipp>
#endif

#endif  // MCPCORE_STREAM_BUDGET_HPP
