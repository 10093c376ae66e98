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
#include <type_traits>
#include <utility>

MCPCORE_BEGIN_NAMESPACE

/// Turns a request's credentials into a principal, and re-validates the principal of a
/// long-lived stream (docs/sessions.md#credential-re-validation).
///
/// Semantic requirements:
/// 1. `authenticate(req)` returns the principal the request's credentials establish, or
///    `std::nullopt` when they are missing or invalid (the endpoint answers 401). It reads only
///    the request's headers (`Authorization`, cookies, ...) and never its body.
/// 2. `revalidate(p)` answers for a principal `authenticate` returned earlier, or one the host
///    handed in with its request, `context` included (docs/http.md#handing-in-the-principal):
///    `valid` or `valid_stale` (the credential still stands), `revoked` (it no longer does: the
///    stream closes `credential_revoked` at once) or `indeterminate` (the backend cannot tell:
///    grace applies).
/// 3. Both are thread-safe, never throw (a throw is treated as a failed authentication /
///    `indeterminate`), and compare secrets in constant time.
template <class A>
concept authenticator = requires(const A& a, const http_request_view& req, const principal& p) {
  { a.authenticate(req) } -> std::same_as<std::optional<principal>>;
  { a.revalidate(p) } -> std::same_as<credential_verdict>;
};

/// An authenticator that admits every request as one fixed principal: tests, and single-user
/// tools. A host that authenticates requests itself hands each one's principal in instead
/// (`http_endpoint::handle(req, caller, done)` with an `external_authenticator`,
/// docs/http.md#handing-in-the-principal).
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

/// The default re-validation of `external_authenticator`: every principal stays valid.
struct external_authenticator_always_valid {
  [[nodiscard]] credential_verdict operator()(const principal& /*p*/) const noexcept { return credential_verdict::valid; }
};

/// The authenticator of a host that authenticates every request itself and hands the principal
/// in (`http_endpoint::handle(req, caller, done)`, `check_head(head, &caller)`;
/// docs/http.md#handing-in-the-principal).
///
/// `authenticate` establishes nobody, so a request handed to the endpoint without a principal is
/// 401. `revalidate` asks the host's callable (any `credential_verdict(const principal&)` callable,
/// deduced: `external_authenticator{[](const principal& p) { ... }}`) whether a held-open stream's
/// principal (its `context` included) still stands; without one (`external_authenticator{}`) every
/// principal stays `valid` (streams then close only with their session or on shutdown).
///
/// @par Thread safety
/// The callable is called concurrently from any thread (the streams' ticks), under no mcpcore
/// lock; it must be thread-safe and should be quick. A throw counts as `indeterminate`.
template <class Revalidate = external_authenticator_always_valid>
  requires std::is_invocable_r_v<credential_verdict, const Revalidate&, const principal&>
class external_authenticator {
 public:
  /// Every principal stays valid.
  external_authenticator() = default;
  /// Re-validates through `check`, a callable `credential_verdict(const principal&)`.
  explicit external_authenticator(Revalidate check) : check_(std::move(check)) {}

  /// Always `std::nullopt`: the host hands the principal in.
  [[nodiscard]] std::optional<principal> authenticate(const http_request_view& /*req*/) const noexcept {
    return std::nullopt;
  }
  /// The callable's verdict on `p`.
  [[nodiscard]] credential_verdict revalidate(const principal& p) const { return check_(p); }

 private:
  Revalidate check_{};
};

namespace detail {
// Type erasure of an `authenticator`, used by the HTTP endpoint.
struct MCPCORE_API authenticator_base {
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
