// SPDX-License-Identifier: Apache-2.0
// Correlation-id formatting and the process-wide sequence.
#ifndef MCPCORE_IMPL_CORRELATION_ID_IPP
#define MCPCORE_IMPL_CORRELATION_ID_IPP

#include <mcpcore/wire/correlation_id.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE
namespace detail {

// The one piece of process-wide mutable state the wire layer has, required by the id format
// (docs/errors.md#the-errordata-envelope: "a process-global atomic starting at 0"). A
// function-local static is a single object in both compile modes, since an inline function's
// statics are shared by every TU.
MCPCORE_INTERNAL std::atomic<std::uint64_t>& correlation_sequence() noexcept {
  static std::atomic<std::uint64_t> sequence{0};
  return sequence;
}

}  // namespace detail

MCPCORE_DECL correlation_id correlation_id::format(std::uint64_t wall_ms, std::uint64_t sequence) noexcept {
  correlation_id id;
  char* p = id.buf_;
  char* const end = id.buf_ + max_size;
  constexpr std::string_view prefix = "req-";
  p = std::copy(prefix.begin(), prefix.end(), p);
  // Cannot overflow: max_size fits "req-", two 16-digit hex numbers and the dash.
  p = std::to_chars(p, end, wall_ms, 16).ptr;
  *p++ = '-';
  p = std::to_chars(p, end, sequence, 16).ptr;
  id.size_ = static_cast<std::uint8_t>(p - id.buf_);
  return id;
}

MCPCORE_DECL correlation_id next_correlation_id(std::chrono::system_clock::time_point now) noexcept {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  // Relaxed: the sequence only has to be unique, it orders nothing else.
  const std::uint64_t seq = detail::correlation_sequence().fetch_add(1, std::memory_order_relaxed);
  return correlation_id::format(ms < 0 ? 0 : static_cast<std::uint64_t>(ms), seq);
}

MCPCORE_DECL correlation_id next_correlation_id() noexcept {
  return next_correlation_id(std::chrono::system_clock::now());
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_CORRELATION_ID_IPP
