// SPDX-License-Identifier: Apache-2.0
// The approvals page: a person signs in and approves or rejects tickets in a browser.
#ifndef MCPCORE_APPROVALS_PAGE_HPP
#define MCPCORE_APPROVALS_PAGE_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/authenticator.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/wire/http.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

MCPCORE_BEGIN_NAMESPACE

namespace detail {
struct approvals_page_state;  // the sessions and the sign-in buckets (impl/approvals_page.ipp)
}  // namespace detail

/// Where the page is mounted, who may sign in and for how long, and its caps
/// (docs/approvals-page.md#options).
struct approvals_page_options {
  /// The page's path; it serves this path and everything under `<path>/`. Byte for byte, no
  /// trailing `/`; must start with `/` and not be `/`.
  std::string path = "/approvals";
  /// The securable a principal needs `Approve` on to sign in (as for the approval routes).
  std::string approver_securable = "Approval";
  /// The page is served over TLS: cookies get `Secure`, and a POST's `Origin` must be `https://`.
  bool secure = false;
  /// A session unused this long ends (polls do not count as use).
  std::chrono::seconds session_idle_timeout{std::chrono::minutes{15}};
  /// A session ends this long after its sign-in, used or not.
  std::chrono::seconds session_lifetime{std::chrono::hours{8}};
  /// A decision needs a sign-in younger than this; an older one is sent to sign in again.
  std::chrono::seconds fresh_sign_in{std::chrono::minutes{5}};
  /// Sessions held at once; a sign-in beyond it ends the least recently used one.
  std::size_t max_sessions = 256;
  /// Sign-in attempts one client address may make at once, refilled one per `signin_refill`.
  std::size_t signin_burst = 10;
  /// How long one sign-in attempt takes to come back to a client address.
  std::chrono::milliseconds signin_refill{6000};
  /// Client addresses whose sign-in attempts are counted at once; beyond it the fullest buckets go.
  std::size_t max_signin_clients = 4096;
  /// How often the open page asks for what changed (new tickets, decisions made elsewhere).
  std::chrono::milliseconds poll_interval{2000};
  /// Pending tickets listed (oldest first), at most `max_pending_listed`.
  std::size_t pending_listed = 100;
  /// Recent decisions listed (newest first), at most `max_recently_reviewed`.
  std::size_t recent_listed = 20;
  /// Largest form body (413 beyond; checked from the head when it declares a length).
  std::size_t max_form_bytes = 8192;
};

/// The largest `approvals_page_options::pending_listed` honoured.
inline constexpr std::size_t max_pending_listed = 1000;

/// The approvals page (docs/approvals-page.md): server-rendered HTML and a small script of the
/// project's own, mounted beside the approval JSON routes by `http_endpoint::set_approvals_page`.
///
/// - **Sign-in.** `POST <path>/login` takes the approver's credential (what `authenticate` reads
///   from `Authorization: Bearer <credential>`) and, for a principal the authorizer allows
///   `Approve` on `approver_securable`, sets a session cookie (`HttpOnly`, `SameSite=Strict`,
///   `Path=<path>`, `Secure` when `secure`). Attempts are rate-limited per client address.
/// - **Pages.** The queue (pending tickets and recent decisions, refreshed by a poll), a
///   ticket's page with approve and reject (with a comment). Untrusted text is escaped, and
///   controls, bidirectional and invisible characters are shown as visible escapes.
/// - **Decisions.** Only from a sign-in younger than `fresh_sign_in`; the service applies the same
///   rules as on every surface (assured, human-interactive, not the submitter); each decision
///   writes the approval routes' audit row, with `via=web`.
/// - **Web security.** A CSRF token on every form; a POST from another origin is refused; a strict
///   `Content-Security-Policy` (no inline script, nothing from another origin,
///   `frame-ancestors 'none'`); `Cache-Control: no-store` on every answer.
///
/// @par Thread safety
/// `handle`, `check_head` and `matches` may run concurrently from any threads; the sessions and
/// the sign-in buckets are guarded by one internal mutex, never held while the store, the
/// authenticator or the authorizer is called.
class approvals_page {
 public:
  /// A page deciding through `service`, signing approvers in with `authn` and telling approvers
  /// with `authz` (both kept by value).
  /// @pre `service` outlives the page.
  /// @throws std::invalid_argument for a `path` that is empty, `/`, relative or ends with `/`.
  template <mcpcore::authenticator N, mcpcore::authorizer A>
  approvals_page(approval_service& service, N authn, A authz, approvals_page_options options = {})
      : approvals_page(service, std::move(options)) {
    authn_ = new detail::authenticator_model<N>(std::move(authn));
    authz_ = new detail::authorizer_model<A>(std::move(authz));
  }
  MCPCORE_DECL ~approvals_page();
  approvals_page(const approvals_page&) = delete;
  approvals_page& operator=(const approvals_page&) = delete;

  /// Whether `target`'s path is `path` or under `<path>/`.
  [[nodiscard]] MCPCORE_DECL bool matches(std::string_view target) const noexcept;
  /// What can be answered from the head alone: a form body declared larger than `max_form_bytes`
  /// (413); `std::nullopt` otherwise, and for a target the page does not serve.
  [[nodiscard]] MCPCORE_DECL std::optional<http_response> check_head(const http_request_view& head) const;
  /// Answers `req`; `std::nullopt` when the target is not the page's. Store faults are answers
  /// (503/500), never exceptions; only allocation failure throws.
  [[nodiscard]] MCPCORE_DECL std::optional<http_response> handle(const http_request_view& req) const;

  /// Every decision request writes one row to `sink` (which must outlive the page), as the
  /// approval routes do (`approval_endpoint::set_audit`), its detail ending `via=web`. Call
  /// before serving.
  template <audit_sink S>
  void set_audit(S& sink) {
    set_audit(new detail::audit_model<S>(sink));
  }

 private:
  MCPCORE_DECL approvals_page(approval_service& service, approvals_page_options options);
  MCPCORE_DECL void set_audit(detail::audit_base* audit) noexcept;
  approval_service* service_;
  detail::authenticator_base* authn_ = nullptr;
  detail::authorizer_base* authz_ = nullptr;
  detail::audit_base* audit_ = nullptr;
  detail::approvals_page_state* state_ = nullptr;
  approvals_page_options options_;
};

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/governance/impl/approvals_page.ipp>
#endif

#endif  // MCPCORE_APPROVALS_PAGE_HPP
