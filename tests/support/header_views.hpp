// SPDX-License-Identifier: Apache-2.0
// Header views of a test request's owned header fields (`http_request_view::headers`), safe to
// take from several threads at once.
#ifndef MCPCORE_TESTS_SUPPORT_HEADER_VIEWS_HPP
#define MCPCORE_TESTS_SUPPORT_HEADER_VIEWS_HPP

#include <mcpcore/wire/http.hpp>

#include <cstddef>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

namespace test_support {

/// The views of a request's last `of(headers)`, rebuilt (under a lock) only when `headers` no
/// longer matches them (the same strings at the same addresses), so that concurrent views of an
/// unchanged request write nothing, and a view taken once allocates nothing again. Copies keep the
/// views: a request moved with its `headers` vector (whose elements stay where they are) still
/// matches them; a copy does not, and rebuilds.
class header_views {
 public:
  header_views() = default;
  header_views(const header_views& other) : fields_(other.snapshot()) {}
  header_views& operator=(const header_views& other) {
    if (this != &other) {
      auto copy = other.snapshot();
      const std::lock_guard lock{mu_};
      fields_ = std::move(copy);
    }
    return *this;
  }
  header_views(header_views&& other) noexcept {
    const std::lock_guard lock{other.mu_};
    fields_.swap(other.fields_);
  }
  header_views& operator=(header_views&& other) noexcept {
    if (this != &other) {
      const std::scoped_lock lock{mu_, other.mu_};
      fields_.swap(other.fields_);
    }
    return *this;
  }
  ~header_views() = default;

  /// Views of `headers`, valid while `headers` is neither changed nor destroyed.
  std::span<const mcpcore::http_header_view> of(const std::vector<mcpcore::http_header>& headers) const {
    const std::lock_guard lock{mu_};
    if (!matches(headers)) {
      fields_.clear();
      for (const auto& h : headers) fields_.push_back(mcpcore::http_header_view{h.name, h.value});
    }
    return fields_;
  }

 private:
  [[nodiscard]] std::vector<mcpcore::http_header_view> snapshot() const {
    const std::lock_guard lock{mu_};
    return fields_;
  }
  [[nodiscard]] bool matches(const std::vector<mcpcore::http_header>& headers) const {
    if (fields_.size() != headers.size()) return false;
    for (std::size_t i = 0; i < headers.size(); ++i) {
      const auto& v = fields_[i];
      const auto& h = headers[i];
      if (v.name.data() != h.name.data() || v.name.size() != h.name.size() || v.value.data() != h.value.data() ||
          v.value.size() != h.value.size()) {
        return false;
      }
    }
    return true;
  }
  mutable std::mutex mu_;
  mutable std::vector<mcpcore::http_header_view> fields_;
};

}  // namespace test_support

#endif  // MCPCORE_TESTS_SUPPORT_HEADER_VIEWS_HPP
