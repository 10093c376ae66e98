// SPDX-License-Identifier: Apache-2.0
// A std::deque made on first insertion. libstdc++'s std::deque allocates its map and one block
// (about 576 bytes) as soon as it is constructed; the queues of an idle session or stream never
// hold anything, so they wait for their first element instead (docs/performance.md#idle-memory).
#ifndef MCPCORE_DETAIL_LAZY_DEQUE_HPP
#define MCPCORE_DETAIL_LAZY_DEQUE_HPP

#include <mcpcore/detail/config.hpp>

#include <cstddef>
#include <deque>
#include <optional>
#include <utility>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

/// The subset of `std::deque<T>` that mcpcore's queues use, with no allocation until the first
/// insertion. Iterators are the deque's; an empty queue that never held anything yields
/// value-initialized iterators, equal to each other (an empty range). `front`, `back`,
/// `pop_front` and `erase` need a non-empty queue, as for `std::deque`.
template <class T>
class lazy_deque {
 public:
  using value_type = T;
  using iterator = typename std::deque<T>::iterator;
  using const_iterator = typename std::deque<T>::const_iterator;

  lazy_deque() noexcept = default;

  [[nodiscard]] bool empty() const noexcept { return !d_ || d_->empty(); }
  [[nodiscard]] std::size_t size() const noexcept { return d_ ? d_->size() : 0; }
  /// Whether the deque's memory is allocated (a test and measurement aid).
  [[nodiscard]] bool allocated() const noexcept { return d_.has_value(); }

  [[nodiscard]] iterator begin() noexcept { return d_ ? d_->begin() : iterator{}; }
  [[nodiscard]] iterator end() noexcept { return d_ ? d_->end() : iterator{}; }
  [[nodiscard]] const_iterator begin() const noexcept { return d_ ? d_->cbegin() : const_iterator{}; }
  [[nodiscard]] const_iterator end() const noexcept { return d_ ? d_->cend() : const_iterator{}; }

  [[nodiscard]] T& front() noexcept { return *begin(); }
  [[nodiscard]] const T& front() const noexcept { return *begin(); }
  [[nodiscard]] T& back() noexcept { return *(end() - 1); }
  [[nodiscard]] const T& back() const noexcept { return *(end() - 1); }

  /// Strong guarantee: on a throw (the deque's first allocation included) nothing changed.
  void push_back(const T& v) { made().push_back(v); }
  void push_back(T&& v) { made().push_back(std::move(v)); }
  template <class... A>
  T& emplace_back(A&&... a) {
    return made().emplace_back(std::forward<A>(a)...);
  }
  void pop_front() noexcept {
    if (d_) d_->pop_front();
  }
  iterator erase(const const_iterator& it) { return d_ ? d_->erase(it) : iterator{}; }

  /// Removes every element and keeps the memory for the next ones.
  void clear() noexcept {
    if (d_) d_->clear();
  }
  /// Removes every element and gives the memory back.
  void release() noexcept { d_.reset(); }

 private:
  std::deque<T>& made() {
    if (!d_) d_.emplace();
    return *d_;
  }
  std::optional<std::deque<T>> d_;
};

}  // namespace detail

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_DETAIL_LAZY_DEQUE_HPP
