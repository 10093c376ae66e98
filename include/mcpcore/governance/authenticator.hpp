// SPDX-License-Identifier: Apache-2.0
// Who sent an HTTP request: the authenticator plug-in point (docs/plugins.md) and its type erasure.
#ifndef MCPCORE_AUTHENTICATOR_HPP
#define MCPCORE_AUTHENTICATOR_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/wire/http.hpp>

#include <concepts>
#include <optional>
#include <string_view>
#include <utility>

MCPCORE_BEGIN_NAMESPACE

/// Turns a request's credentials into a principal, and re-validates the principal of a
/// long-lived stream (docs/sessions.md#credential-re-validation).
///
/// Semantic requirements:
/// 1. `authenticate(req)` returns the principal the request's credentials establish, or
///    `std::nullopt` when they are missing or invalid (the endpoint answers 401). It reads only
///    the request's headers (`Authorization`, cookies, ...) and never its body.
/// 2. `revalidate(p)` answers for a principal `authenticate` returned earlier: `valid` or
///    `valid_stale` (the credential still stands), `revoked` (it no longer does: the stream closes
///    `credential_revoked` at once) or `indeterminate` (the backend cannot tell: grace applies).
/// 3. Both are thread-safe, never throw (a throw is treated as a failed authentication /
///    `indeterminate`), and compare secrets in constant time.
template <class A>
concept authenticator = requires(const A& a, const http_request_view& req, const principal& p) {
  { a.authenticate(req) } -> std::same_as<std::optional<principal>>;
  { a.revalidate(p) } -> std::same_as<credential_verdict>;
};

/// An authenticator that admits every request as one fixed principal (tests, and hosts that
/// authenticate before the request reaches mcpcore and pass the principal in themselves).
class fixed_authenticator {
 public:
  explicit fixed_authenticator(principal who) : who_(std::move(who)) {}
  [[nodiscard]] std::optional<principal> authenticate(const http_request_view& /*req*/) const { return who_; }
  [[nodiscard]] credential_verdict revalidate(const principal& /*p*/) const noexcept {
    return credential_verdict::valid;
  }

 private:
  principal who_;
};

namespace detail {
// Type erasure of an `authenticator`, used by the HTTP endpoint.
struct authenticator_base {
  virtual ~authenticator_base() = default;
  virtual std::optional<principal> authenticate(const http_request_view& req) const = 0;
  virtual credential_verdict revalidate(const principal& p) const = 0;
};
template <class A>
struct authenticator_model final : authenticator_base {
  explicit authenticator_model(A a) : a_(std::move(a)) {}
  std::optional<principal> authenticate(const http_request_view& req) const override { return a_.authenticate(req); }
  credential_verdict revalidate(const principal& p) const override { return a_.revalidate(p); }
  A a_;
};
}  // namespace detail

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_AUTHENTICATOR_HPP
