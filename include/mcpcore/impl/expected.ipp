// SPDX-License-Identifier: Apache-2.0
// mcpcore::error's message and the "mcpcore" error category.
#ifndef MCPCORE_IMPL_EXPECTED_IPP
#define MCPCORE_IMPL_EXPECTED_IPP

#include <mcpcore/expected.hpp>

#include <string>
#include <system_error>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

class library_category_impl final : public std::error_category {
 public:
  [[nodiscard]] const char* name() const noexcept override { return "mcpcore"; }
  [[nodiscard]] std::string message(int ev) const override {
    switch (static_cast<library_errc>(ev)) {
      case library_errc::build_refused: return "the server build was refused";
      case library_errc::token_file_refused: return "the token file was refused";
      case library_errc::moved_from: return "the object was moved from";
    }
    return "unknown mcpcore error";
  }
};

}  // namespace detail

MCPCORE_DECL const std::error_category& library_category() noexcept {
  static const detail::library_category_impl category;
  return category;
}

MCPCORE_DECL std::string error::message() const {
  if (details_.empty()) return code_.message();
  std::string s;
  for (const auto& d : details_) {
    if (!s.empty()) s += "; ";
    s += d;
  }
  return s;
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_EXPECTED_IPP
