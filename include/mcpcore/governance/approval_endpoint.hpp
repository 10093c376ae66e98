// SPDX-License-Identifier: Apache-2.0
// The approval status surface as a sans-I/O HTTP endpoint: GET a ticket, POST approve/reject.
#ifndef MCPCORE_APPROVAL_ENDPOINT_HPP
#define MCPCORE_APPROVAL_ENDPOINT_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/governance/approval.hpp>
#include <mcpcore/governance/audit.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/wire/http.hpp>

#include <cstddef>
#include <utility>
#include <optional>
#include <string>
#include <string_view>

MCPCORE_BEGIN_NAMESPACE

/// Where the endpoint is mounted and what it accepts.
struct approval_endpoint_options {
  /// Path prefix (docs/approvals.md: `/api/v1`); the endpoint serves `<prefix>/approvals/<id>` and
  /// `<prefix>/approvals/<id>/approve|reject`. Compared byte for byte (no trailing `/`; `""`
  /// mounts at `/approvals/`). Must equal the service's `status_url_prefix` for the status
  /// URLs it hands out to resolve here.
  std::string prefix = "/api/v1";
  /// The securable approvers need `Approve` on (docs/approvals.md#the-approver-tools:
  /// `Approval:Approve`).
  std::string approver_securable = "Approval";
  /// Largest request body accepted, in bytes (413 beyond; checked before parsing).
  std::size_t max_body_bytes = 8192;
};

/// Serves the approval status URL and the review actions (docs/approvals.md) for a host's HTTP
/// server.
///
/// | request | who | answers |
/// |---|---|---|
/// | `GET <prefix>/approvals/<id>` | the submitter, or an approver | 200 ticket JSON; 401; 404 (unknown, malformed, or not visible to the caller); 405; 500/503 |
/// | `POST <prefix>/approvals/<id>/approve` | approvers | 200 ticket JSON; 401; 403; 404; 405; 409; 400/413 for a bad body; 500/503 |
/// | `POST <prefix>/approvals/<id>/reject` (body `{"comment":"..."}` optional) | approvers | same |
///
/// An approver is a principal the authorizer allows `Approve` on `approver_securable`; to
/// review it must also pass `assess_approver` (human-interactive, assured) and differ from the
/// submitter. Store faults answer 503 with `Retry-After: 5` (transient,
/// `retry::approval_store_transient`) or 500 (permanent, `is_permanent_store_error`).
///
/// @par Order of checks (the first failing one answers)
/// 1. the path is not under `<prefix>/approvals/` → `std::nullopt` (not this endpoint's);
/// 2. no caller → 401 `unauthenticated`, with `WWW-Authenticate: Bearer`;
/// 3. the path is not exactly `<prefix>/approvals/<id>` or `<prefix>/approvals/<id>/approve|reject`
///    (extra or empty segments, a trailing `/`) → 404 `not_found`;
/// 4. the method is not the route's (`GET` for the ticket, `POST` for the actions; methods are
///    case-sensitive, `HEAD` is not served) → 405 `method_not_allowed`, with `Allow`;
/// 5. GET: a malformed id (`is_approval_id`) → 404 without touching the store; a store fault →
///    503/500; an unknown ticket, or one the caller may not see → 404; otherwise 200.
/// 6. POST: not an approver → 403 `forbidden` (before the id is looked at, so a non-approver
///    learns nothing); a malformed id → 404 (store untouched); body larger than
///    `max_body_bytes` → 413 `payload_too_large`; a body that is not empty (or JSON whitespace)
///    and not a JSON object, or whose `comment` is not a string → 400 `bad_request`; then the
///    service decides: assurance → 403 `approver_assurance_required:<reason>`
///    (`to_string(approver_assurance)`); comment too long → 400 `comment_too_long`; store fault
///    → 503/500; unknown ticket → 404; reviewer is the submitter → 403 `self_review`; not
///    pending → 409 `already_reviewed`; past its lifetime → 409 `expired` (the ticket is now
///    expired); reviewed → 200 with the ticket as re-read (if that read fails, 200 with only
///    `{"approval_id","status"}`).
///
/// The query string is ignored. The path is compared byte for byte: no percent-decoding, no
/// dot-segment removal (a percent-encoded id is simply not an id → 404). Members of the POST
/// body other than `comment` are ignored. `approve` accepts and type-checks a `comment` but
/// does not record it (`approval_service::approve` takes none); `reject` records it.
///
/// @par No existence oracle
/// GET answers an invisible ticket exactly as an unknown one (same 404 status, headers and
/// body), so a caller who is neither the submitter nor an approver cannot probe ids.
///
/// @par Response format
/// Every response has `Content-Type: application/json` and `Cache-Control: no-store` (ticket
/// ids are bearer capabilities). Error bodies are `{"error":"<token>","message":"<text>"}`.
/// The ticket JSON is an object with, in this order: `approval_id`, `status`, `tool` (the
/// definition id without the `mcp.` prefix, or the whole definition id when it lacks it),
/// `definition_id`, `arguments` (the ticket's canonical arguments as JSON; a scope that does not
/// parse as JSON is embedded as a string), `submitted_by`, `submitted_at`, `reviewed_by` and
/// `reviewed_at` (null until reviewed), `review_comment` (null when empty), `consumed` (bool),
/// `consumed_at` and `expired_at` (null or a time), `status_url`. Times are RFC 3339 UTC with
/// milliseconds (`2026-01-01T00:00:00.000Z`).
///
/// @par Thread safety
/// `handle` and `matches` are `const` and keep no state between calls: they may run
/// concurrently from any threads, as far as the authorizer (required by the `authorizer`
/// concept) and the service's store (required by `approval_store`) allow. An exception thrown
/// by the authorizer counts as a denial.
class approval_endpoint {
 public:
  /// An endpoint reviewing through `service`, deciding who is an approver with `authz` (kept by
  /// value).
  /// @pre `service` outlives the endpoint.
  template <mcpcore::authorizer A>
  approval_endpoint(approval_service& service, A authz, approval_endpoint_options options = {})
      : approval_endpoint(service, std::move(options)) {
    authz_ = new detail::authorizer_model<A>(std::move(authz));
  }
  MCPCORE_DECL ~approval_endpoint();
  approval_endpoint(const approval_endpoint&) = delete;
  approval_endpoint& operator=(const approval_endpoint&) = delete;

  /// Whether `target`'s path (the part before any `?`) starts with `<prefix>/approvals/`.
  [[nodiscard]] MCPCORE_DECL bool matches(std::string_view target) const noexcept;
  /// Answers `req` for `caller` (null: the request carried no valid credentials → 401);
  /// `std::nullopt` when the target is not under this endpoint (see `matches`). Store failures
  /// are answers (503/500), never exceptions; only allocation failure throws.
  [[nodiscard]] MCPCORE_DECL std::optional<http_response> handle(const http_request_view& req,
                                                                 const principal* caller) const;

  /// Every review request (`POST .../approve|reject` by an authenticated caller) writes one row
  /// to `sink`, which must outlive the endpoint: action `approval.approve` or `approval.reject`,
  /// target `approval` / the id, the caller, and the result: `success` (reviewed), `denied` (not
  /// an approver, a bad body, assurance, self-review, already reviewed, expired), `not_found`
  /// (a malformed or unknown id) or `failure` (a store fault); the detail names the refusal and
  /// ends `via=http`. A sink that returns false or throws changes no answer
  /// (docs/security.md#audit-and-the-one-cid-pattern). Without a sink nothing is written. Call
  /// before serving.
  template <audit_sink S>
  void set_audit(S& sink) {
    set_audit(new detail::audit_model<S>(sink));
  }

 private:
  MCPCORE_DECL approval_endpoint(approval_service& service, approval_endpoint_options options);
  MCPCORE_DECL void set_audit(detail::audit_base* audit) noexcept;
  approval_service* service_;
  detail::authorizer_base* authz_ = nullptr;
  detail::audit_base* audit_ = nullptr;
  approval_endpoint_options options_;
};

/// Appends `t` to `out` as the endpoint's ticket JSON (the object described under "Response
/// format" above), with `status_url` as its `status_url` member: for tools that show tickets
/// outside HTTP (an approver's command line) in the same shape.
MCPCORE_DECL void append_ticket_json(std::string& out, const approval_ticket& t, std::string_view status_url);

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/governance/impl/approval_endpoint.ipp>
#endif

#endif  // MCPCORE_APPROVAL_ENDPOINT_HPP
