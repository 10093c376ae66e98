// SPDX-License-Identifier: Apache-2.0
// Parsed documents kept for reuse by the HTTP endpoint (docs/performance.md#reused-documents): a
// request's `json::document` is taken from here and given back when the request ends, so a steady
// stream of ordinary requests parses without allocating (a new document costs about ten
// allocations and 6 KB of heap for its parser, tape and buffers). Bounded: at most `max_idle`
// documents wait here, and a document that parsed a text longer than `max_text_bytes` is
// destroyed instead of kept, so an idle pool holds at most `max_idle` small documents.
#ifndef MCPCORE_IMPL_DOCUMENT_POOL_IPP
#define MCPCORE_IMPL_DOCUMENT_POOL_IPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/wire/json.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

/// The endpoint's idle documents. Shared (`shared_ptr`) with every request that took one, so a
/// request that ends after the endpoint still gives its document back to a live pool.
///
/// @par Thread safety
/// Every member is thread-safe; `mutex_` is a leaf.
class document_pool {
 public:
  /// `max_idle`: documents kept waiting (0: none, every request gets a new one);
  /// `max_text_bytes`: the longest parsed text whose document is kept.
  document_pool(std::size_t max_idle, std::size_t max_text_bytes) : max_idle_(max_idle), max_text_(max_text_bytes) {
    idle_.reserve(max_idle_);  // `give` never allocates
  }

  /// An idle document, or a new one. @throws std::bad_alloc
  [[nodiscard]] json::document take() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (!idle_.empty()) {
        json::document d = std::move(idle_.back());
        idle_.pop_back();
        return d;
      }
    }
    return json::document{};
  }

  /// Takes `d` back after it parsed `parsed_bytes`, unless the pool is full or the text was long
  /// (its buffers are that large): then `d` is left to its owner, who destroys it (outside the lock).
  void give(json::document&& d, std::size_t parsed_bytes) noexcept {
    if (parsed_bytes > max_text_) return;
    const std::lock_guard<std::mutex> lock(mutex_);
    if (idle_.size() < max_idle_) idle_.push_back(std::move(d));  // within the reserved capacity
  }

  /// Documents waiting (tests, diagnostics).
  [[nodiscard]] std::size_t idle() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return idle_.size();
  }

 private:
  const std::size_t max_idle_;
  const std::size_t max_text_;
  mutable std::mutex mutex_;
  std::vector<json::document> idle_;  // guarded by mutex_
};

/// One request's document: taken from `pool` (or new, without one), given back when this ends.
class pooled_document {
 public:
  explicit pooled_document(std::shared_ptr<document_pool> pool)
      : pool_(std::move(pool)), doc_(pool_ ? pool_->take() : json::document{}) {}
  ~pooled_document() {
    if (pool_) pool_->give(std::move(doc_), parsed_);
  }
  pooled_document(const pooled_document&) = delete;
  pooled_document& operator=(const pooled_document&) = delete;

  /// The document, for one parse of a text of `bytes` bytes (recorded: it decides whether the
  /// document is kept).
  json::document& for_text(std::size_t bytes) noexcept {
    parsed_ = bytes > parsed_ ? bytes : parsed_;
    return doc_;
  }

 private:
  std::shared_ptr<document_pool> pool_;
  json::document doc_;
  std::size_t parsed_ = 0;  // the longest text parsed into doc_
};

}  // namespace detail

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_DOCUMENT_POOL_IPP
