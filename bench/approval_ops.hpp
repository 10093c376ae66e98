// SPDX-License-Identifier: Apache-2.0
// What the approval-store benchmarks share (bench_approval.cpp, bench_postgres_store.cpp;
// docs/performance.md): the ticket's fixed fields, the store operations with their checks, the
// millisecond clock and a temporary directory.
#ifndef MCPCORE_BENCH_APPROVAL_OPS_HPP
#define MCPCORE_BENCH_APPROVAL_OPS_HPP

#include <mcpcore/governance/approval.hpp>

#include <stdlib.h>  // mkdtemp

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace approval_bench {

using mcpcore::approval_status;
using mcpcore::approval_time;

inline constexpr std::string_view definition_id = "mcp.delete_file";
inline constexpr std::string_view origin = mcpcore::approval_origin_mcp;
inline constexpr std::string_view reviewer_id = "approver-01";
inline constexpr std::chrono::milliseconds lifetime = std::chrono::days{7};
/// The caps every mint is given: raised so that no mint is refused (each benchmark bounds its
/// pending set itself).
inline constexpr std::size_t high_cap = std::size_t{1} << 30;

inline approval_time now_ms() {
  return std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
}

inline mcpcore::approval_mint_request mint_request(std::string_view id, std::string_view scope,
                                                   std::string_view submitter, approval_time now) {
  return {.id = id,
          .definition_id = definition_id,
          .origin = origin,
          .submitted_by = submitter,
          .scope = scope,
          .now = now,
          .lifetime = lifetime,
          .per_submitter_cap = high_cap,
          .global_cap = high_cap};
}

// ---- store operations with their checks (false + `why` when the operation did not do its job) ---

template <class Store>
bool mint_created(Store& s, std::string_view id, std::string_view scope, std::string_view submitter,
                  approval_time now, std::string& why) {
  const auto r = s.mint(mint_request(id, scope, submitter, now));
  if (!r) {
    why = "mint failed: " + r.error().message();
    return false;
  }
  if (r->status != mcpcore::approval_mint_status::created || r->id != id) {
    why = "mint did not create: " + std::string{to_string(r->status)};
    return false;
  }
  return true;
}

template <class Store>
bool reviewed(Store& s, std::string_view id, approval_status decision, approval_time now,
              std::string& why) {
  const auto out = s.review({.id = id,
                             .reviewer = reviewer_id,
                             .decision = decision,
                             .comment = {},
                             .now = now,
                             .lifetime = lifetime});
  if (!out) {
    why = "review failed: " + out.error().message();
    return false;
  }
  if (*out != mcpcore::approval_review_status::reviewed) {
    why = "review did not review: " + std::string{to_string(*out)};
    return false;
  }
  return true;
}

template <class Store>
bool consumed(Store& s, std::string_view id, std::string_view consumer, approval_time now, std::string& why) {
  const auto out =
      s.consume({.id = id, .consumer = consumer, .origin = origin, .now = now, .lifetime = lifetime});
  if (!out) {
    why = "consume failed: " + out.error().message();
    return false;
  }
  if (*out != mcpcore::approval_consume_status::consumed) {
    why = "consume did not win: " + std::string{to_string(*out)};
    return false;
  }
  return true;
}

/// A fresh directory from mkdtemp under `parent`, removed with its content on destruction.
class temp_dir {
 public:
  temp_dir(const char* parent, std::string_view prefix) {
    std::string templ = std::string{parent} + "/" + std::string{prefix} + "-XXXXXX";
    if (::mkdtemp(templ.data()) != nullptr) path_ = std::move(templ);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  [[nodiscard]] bool ok() const noexcept { return !path_.empty(); }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

}  // namespace approval_bench

#endif  // MCPCORE_BENCH_APPROVAL_OPS_HPP
