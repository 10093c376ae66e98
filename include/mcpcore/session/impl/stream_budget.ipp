// SPDX-License-Identifier: Apache-2.0
// The stream budget: counters under one mutex, per-(surface, principal) entries erased at zero.
#ifndef MCPCORE_IMPL_STREAM_BUDGET_IPP
#define MCPCORE_IMPL_STREAM_BUDGET_IPP

#include <mcpcore/session/stream_budget.hpp>

#include <atomic>
#include <charconv>
#include <mutex>
#include <unordered_map>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

// The map key of (surface, principal): the surface's length in decimal, ':', the surface, then the
// principal. The length prefix makes the split unambiguous whatever bytes either part holds (a plain
// '\0' separator would make ("a", "b\0c") and ("a\0b", "c") the same key).
MCPCORE_INTERNAL std::string stream_budget_key(std::string_view surface, std::string_view principal) {
  char digits[24];
  const auto r = std::to_chars(digits, digits + sizeof digits, surface.size());
  const auto prefix = static_cast<std::size_t>(r.ptr - digits);
  std::string key;
  key.reserve(prefix + 1 + surface.size() + principal.size());
  key.append(digits, prefix);
  key.push_back(':');
  key.append(surface);
  key.append(principal);
  return key;
}

}  // namespace detail

MCPCORE_DECL std::string_view to_string(stream_budget_reject r) noexcept {
  switch (r) {
    case stream_budget_reject::global_stream_cap: return "global_stream_cap";
    case stream_budget_reject::per_principal_stream_cap: return "per_principal_stream_cap";
  }
  return {};
}

// ---- stream_lease ----------------------------------------------------------------------------

MCPCORE_DECL stream_lease::stream_lease(stream_lease&& other) noexcept
    : budget_(std::exchange(other.budget_, nullptr)), key_(std::move(other.key_)) {
  other.key_.clear();
}

MCPCORE_DECL stream_lease& stream_lease::operator=(stream_lease&& other) noexcept {
  if (this != &other) {
    release();  // the slot held before the assignment goes back first
    budget_ = std::exchange(other.budget_, nullptr);
    key_ = std::move(other.key_);
    other.key_.clear();
  }
  return *this;
}

MCPCORE_DECL stream_lease::~stream_lease() { release(); }

MCPCORE_DECL void stream_lease::release() noexcept {
  if (budget_ == nullptr) return;
  // Cleared before the call: a second release (or the destructor after it) is a no-op, so a slot
  // goes back exactly once (docs/sessions.md#exactly-once-rules). The budget outlives its leases.
  stream_budget* const b = std::exchange(budget_, nullptr);
  b->release(key_);
  key_.clear();
}

// ---- stream_budget ---------------------------------------------------------------------------

struct stream_budget::impl {
  explicit impl(stream_budget_options o) : options(o) {}

  const stream_budget_options options;
  // The budget lock, a leaf: nothing else is locked while it is held. attach_and_replay acquires
  // under the stream lock; leases are released after it (docs/sessions.md#the-hierarchy).
  std::mutex mutex;
  // Guarded by `mutex`; an entry exists only while its count is non-zero.
  std::unordered_map<std::string, std::size_t> per_key;
  // Written only under `mutex`; read without it, so every observation is a value the budget held.
  std::atomic<std::size_t> total{0};
  std::atomic<std::size_t> entries{0};
};

MCPCORE_DECL stream_budget::stream_budget(stream_budget_options options) : impl_(new impl(options)) {}

MCPCORE_DECL stream_budget::~stream_budget() { delete impl_; }

MCPCORE_DECL result<stream_lease, stream_budget_reject> stream_budget::try_acquire(
    std::string_view surface, std::string_view principal, std::size_t per_principal_cap,
    stream_budget_mode mode) {
  // Allocation first: the lease's key, outside the lock.
  std::string key = detail::stream_budget_key(surface, principal);
  // A takeover is counted but never refused: the stream it supersedes is still counted until its
  // pump detaches, so the totals may briefly exceed the caps (docs/sessions.md#the-stream-budget).
  const bool enforce = mode == stream_budget_mode::enforce_caps;
  {
    const std::lock_guard<std::mutex> lock(impl_->mutex);
    const std::size_t total = impl_->total.load(std::memory_order_relaxed);
    if (enforce && total >= impl_->options.global_cap) {
      return fail(stream_budget_reject::global_stream_cap);
    }
    auto it = impl_->per_key.find(key);
    if (it != impl_->per_key.end()) {
      if (enforce && per_principal_cap != 0 && it->second >= per_principal_cap) {
        return fail(stream_budget_reject::per_principal_stream_cap);
      }
    } else {
      // A new entry's count is 0, below any non-zero cap: only the node allocation can fail here,
      // and it happens before any counter moves (emplace leaves the map unchanged on a throw).
      it = impl_->per_key.try_emplace(key, std::size_t{0}).first;
      impl_->entries.store(impl_->per_key.size(), std::memory_order_relaxed);
    }
    // No-throw from here.
    ++it->second;
    impl_->total.store(total + 1, std::memory_order_relaxed);
  }
  return stream_lease(this, std::move(key));
}

MCPCORE_DECL void stream_budget::release(const std::string& key) noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mutex);
  const auto it = impl_->per_key.find(key);
  if (it == impl_->per_key.end()) return;  // unreachable: every live lease has its entry
  if (--it->second == 0) {
    impl_->per_key.erase(it);
    impl_->entries.store(impl_->per_key.size(), std::memory_order_relaxed);
  }
  impl_->total.store(impl_->total.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
}

MCPCORE_DECL std::size_t stream_budget::in_use() const noexcept {
  return impl_->total.load(std::memory_order_relaxed);
}

MCPCORE_DECL std::size_t stream_budget::in_use(std::string_view surface, std::string_view principal) const {
  const std::string key = detail::stream_budget_key(surface, principal);
  const std::lock_guard<std::mutex> lock(impl_->mutex);
  const auto it = impl_->per_key.find(key);
  return it == impl_->per_key.end() ? 0 : it->second;
}

MCPCORE_DECL std::size_t stream_budget::entries() const noexcept {
  return impl_->entries.load(std::memory_order_relaxed);
}

MCPCORE_DECL const stream_budget_options& stream_budget::options() const noexcept { return impl_->options; }

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_STREAM_BUDGET_IPP
