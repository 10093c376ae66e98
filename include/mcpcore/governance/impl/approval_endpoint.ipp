// SPDX-License-Identifier: Apache-2.0
// The approval HTTP endpoint: routing, visibility, review actions and the ticket JSON.
#ifndef MCPCORE_IMPL_APPROVAL_ENDPOINT_IPP
#define MCPCORE_IMPL_APPROVAL_ENDPOINT_IPP

#include <mcpcore/governance/approval_endpoint.hpp>

#include <mcpcore/wire/json.hpp>
#include <mcpcore/wire/json_writer.hpp>
#include <mcpcore/wire/retry.hpp>
// detail::append_rfc3339, the time format of the audit lines. In compiled mode this is the single
// translation unit of src/mcpcore.cpp, which includes it anyway.
#include <mcpcore/governance/impl/audit.ipp>

#include <chrono>
#include <cstdint>
#include <system_error>

MCPCORE_BEGIN_NAMESPACE
namespace detail::approval_http {

inline constexpr std::string_view approvals_segment = "/approvals/";

// What the path names, once the prefix and "/approvals/" are stripped.
enum class route_kind : std::uint8_t { unknown, ticket, approve, reject };
struct route {
  route_kind kind = route_kind::unknown;
  std::string_view id;
};

// The path part of an origin-form target: everything before the first '?'.
[[nodiscard]] constexpr std::string_view path_of(std::string_view target) noexcept {
  const auto q = target.find('?');
  return q == std::string_view::npos ? target : target.substr(0, q);
}

// The rest of `path` after "<prefix>/approvals/", or nullopt when `path` is not under it.
// Byte for byte: no percent-decoding or dot-segment removal, so an encoded id is no id (404)
// (docs/approvals.md#the-status-endpoint).
[[nodiscard]] constexpr std::optional<std::string_view> strip_mount(std::string_view path,
                                                                    std::string_view prefix) noexcept {
  if (!path.starts_with(prefix)) return std::nullopt;
  path.remove_prefix(prefix.size());
  if (!path.starts_with(approvals_segment)) return std::nullopt;
  path.remove_prefix(approvals_segment.size());
  return path;
}

// "<id>" → ticket; "<id>/approve" → approve; "<id>/reject" → reject; anything else (an empty
// id, a trailing slash, more segments) → unknown. The id's shape is checked later, per route.
[[nodiscard]] constexpr route parse_route(std::string_view rest) noexcept {
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos) {
    if (rest.empty()) return {};
    return {route_kind::ticket, rest};
  }
  const std::string_view id = rest.substr(0, slash);
  const std::string_view action = rest.substr(slash + 1);
  if (id.empty()) return {};
  if (action == "approve") return {route_kind::approve, id};
  if (action == "reject") return {route_kind::reject, id};
  return {};
}

// RFC 8259 whitespace: a body of only these counts as no body.
[[nodiscard]] constexpr bool is_blank(std::string_view s) noexcept {
  for (const char c : s) {
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return false;
  }
  return true;
}

// A response with the headers every answer carries.
[[nodiscard]] MCPCORE_INTERNAL http_response make_response(int status) {
  http_response r;
  r.status = status;
  r.headers.reserve(3);
  r.headers.push_back({"Content-Type", "application/json"});
  // On every answer: a ticket id is a bearer capability, so no cache may keep a page naming one.
  r.headers.push_back({"Cache-Control", "no-store"});
  return r;
}

// {"error":token,"message":message}
[[nodiscard]] MCPCORE_INTERNAL http_response error_response(int status, std::string_view token,
                                                        std::string_view message) {
  http_response r = make_response(status);
  json::writer w{r.body};
  w.begin_object().member("error", token).member("message", message).end_object();
  return r;
}

[[nodiscard]] MCPCORE_INTERNAL http_response not_found() {
  // One body for unknown, malformed and invisible tickets alike (no existence oracle).
  return error_response(404, "not_found", "no such approval");
}

[[nodiscard]] MCPCORE_INTERNAL http_response store_error_response(std::error_code ec) {
  if (is_permanent_store_error(ec)) {
    return error_response(500, "store_unavailable",
                          "approval store unavailable; this will not clear on retry, escalate to an operator");
  }
  http_response r = error_response(503, "store_temporarily_unavailable",
                                   "approval store temporarily unavailable; retry the same request unchanged");
  r.headers.push_back({"Retry-After", std::to_string(retry::header_seconds(retry::approval_store_transient))});
  return r;
}

// YYYY-MM-DDTHH:MM:SS.mmmZ (RFC 3339 §5.6, UTC), as the audit lines write it.
[[nodiscard]] inline std::string rfc3339(approval_time t) { return to_rfc3339(t); }

MCPCORE_INTERNAL void write_optional_time(json::writer& w, std::string_view key, const std::optional<approval_time>& t) {
  w.key(key);
  if (t) {
    w.value(rfc3339(*t));
  } else {
    w.null();
  }
}

// The ticket JSON documented on approval_endpoint.
MCPCORE_INTERNAL void write_ticket(std::string& out, const approval_ticket& t, std::string_view status_url) {
  json::writer w{out};
  w.begin_object();
  w.member("approval_id", t.id);
  w.member("status", to_string(t.status));
  std::string_view tool = t.definition_id;
  if (tool.starts_with(approval_definition_prefix)) tool.remove_prefix(approval_definition_prefix.size());
  w.member("tool", tool);
  w.member("definition_id", t.definition_id);
  w.key("arguments");
  {
    // The scope is canonical JSON written by the library; a store might hold anything, so it
    // is parsed (never spliced in raw) and falls back to a string.
    json::document doc;
    const auto parsed = doc.parse(t.scope);
    if (parsed) {
      w.value(*parsed);
    } else {
      w.value(t.scope);
    }
  }
  w.member("submitted_by", t.submitted_by);
  w.member("submitted_at", rfc3339(t.submitted_at));
  const bool reviewed = !t.reviewed_by.empty();
  w.key("reviewed_by");
  if (reviewed) {
    w.value(t.reviewed_by);
  } else {
    w.null();
  }
  write_optional_time(w, "reviewed_at", reviewed ? std::optional<approval_time>{t.reviewed_at} : std::nullopt);
  w.key("review_comment");
  if (t.review_comment.empty()) {
    w.null();
  } else {
    w.value(t.review_comment);
  }
  w.member("consumed", t.consumed_at.has_value());
  write_optional_time(w, "consumed_at", t.consumed_at);
  write_optional_time(w, "expired_at", t.expired_at);
  w.member("status_url", status_url);
  w.end_object();
}

[[nodiscard]] MCPCORE_INTERNAL http_response ticket_response(const approval_service& service, const approval_ticket& t) {
  http_response r = make_response(200);
  write_ticket(r.body, t, service.status_url(t.id));
  return r;
}

// The authorizer's verdict; an exception is a denial (policy.hpp, `authorizer` requirement 4).
[[nodiscard]] MCPCORE_INTERNAL bool is_approver(const authorizer_base& authz, const principal& who,
                                            std::string_view securable) noexcept {
  try {
    return authz.allowed(who, securable, operation::approve);
  } catch (...) {
    return false;
  }
}

[[nodiscard]] MCPCORE_INTERNAL http_response handle_get(approval_service& service, const authorizer_base& authz,
                                                    const approval_endpoint_options& options, std::string_view id,
                                                    const principal& caller) {
  if (!is_approval_id(id)) return not_found();
  auto found = service.get(id);
  if (!found) return store_error_response(found.error().code());
  const std::optional<approval_ticket> ticket = std::move(*found);
  if (!ticket.has_value()) return not_found();
  const approval_ticket& t = *ticket;
  // An empty caller id never counts as the submitter. Anyone else gets the unknown-ticket answer,
  // byte for byte, so ids cannot be probed (docs/approvals.md#the-status-endpoint).
  const bool is_submitter = !caller.id.empty() && caller.id == t.submitted_by;
  if (!is_submitter && !is_approver(authz, caller, options.approver_securable)) return not_found();
  return ticket_response(service, t);
}

// What a review request's audit row says (approval_endpoint::set_audit).
struct review_row {
  audit_result result = audit_result::denied;
  std::string detail;  // without the trailing `via=http`
};

// `result` with the detail "refused: <why>".
inline void refused(review_row& row, std::string_view why, audit_result result = audit_result::denied) {
  row.result = result;
  row.detail = "refused: ";
  row.detail.append(why);
}

// What the service said of one review, as an HTTP status and an error token (docs/approvals.md#the-status-endpoint):
// 200 with an empty token when the ticket was reviewed. Shared by the JSON routes and the approvals page.
struct review_verdict {
  int status = 200;
  std::string token;    // the error token ("" when reviewed)
  std::string message;  // what a person is told
  std::error_code store_error;  // set for 500/503
};

// Approves or rejects ticket `id` as `caller` through the service, and fills the audit `row`.
// The caller has checked the permission and the id's shape.
[[nodiscard]] MCPCORE_INTERNAL review_verdict decide(approval_service& service, bool approve, std::string_view id,
                                                 std::string_view comment, const principal& caller, review_row& row) {
  const approval_status decision = approve ? approval_status::approved : approval_status::rejected;
  // An approval type-checks a comment but never records it (docs/approvals.md#the-status-endpoint).
  const approval_review_outcome o = approve ? service.approve(id, caller) : service.reject(id, caller, comment);
  review_verdict v;
  const auto refuse = [&](int status, std::string token, std::string message) {
    refused(row, token);
    v.status = status;
    v.token = std::move(token);
    v.message = std::move(message);
    return v;
  };
  if (o.assurance != approver_assurance::ok) {
    std::string token{"approver_assurance_required:"};
    token.append(to_string(o.assurance));
    return refuse(403, std::move(token),
                  "approvers must be human-interactive principals with a fresh, strong authentication");
  }
  if (o.comment_too_long) {
    std::string message{"the comment is longer than "};
    message.append(std::to_string(service.options().max_review_comment_bytes)).append(" bytes");
    return refuse(400, "comment_too_long", std::move(message));
  }
  if (o.error) {
    row.result = audit_result::failure;
    row.detail = "review failed: " + sanitize_audit_value(o.error.message());
    v.status = is_permanent_store_error(o.error) ? 500 : 503;
    v.store_error = o.error;
    return v;
  }
  switch (o.status) {
    case approval_review_status::reviewed: break;
    case approval_review_status::not_found:
      refuse(404, "not_found", "no such approval");
      row.result = audit_result::not_found;
      return v;
    case approval_review_status::self_review:
      return refuse(403, "self_review", "the reviewer must differ from the submitter");
    case approval_review_status::already_reviewed:
      return refuse(409, "already_reviewed", "already reviewed by another user");
    case approval_review_status::expired:
      return refuse(409, "expired", "the approval expired before it was reviewed");
    default:
      row.result = audit_result::failure;
      row.detail = "review failed: review status out of range";
      v.status = 500;
      v.store_error = make_error_code(approval_store_errc::internal);
      return v;
  }
  row.result = audit_result::success;
  row.detail = to_string(decision);
  return v;
}

// Writes the one audit row of a review request through `audit` (null: none), its detail ending
// `via=<via>`. A sink that refuses or throws changes no answer
// (docs/security.md#audit-and-the-one-cid-pattern).
MCPCORE_INTERNAL void audit_review(audit_base* audit, const approval_service& service, bool approve,
                                   std::string_view id, const principal& caller, const review_row& row,
                                   std::string_view via) noexcept {
  if (audit == nullptr) return;
  try {
    std::string detail = "approval_id=" + sanitize_audit_value(id);
    detail.append(" ").append(row.detail).append(" via=").append(via);
    audit_record a;
    a.action = approve ? "approval.approve" : "approval.reject";
    a.target_type = "approval";
    a.target_id = is_approval_id(id) ? id : std::string_view{"malformed"};
    a.principal_id = caller.id;
    a.result = row.result;
    a.detail = detail;
    a.time = service.now();
    (void)audit->record(a);
  } catch (...) {  // NOLINT(bugprone-empty-catch): audit never fails the request (docs/security.md#audit-and-the-one-cid-pattern)
  }
}

[[nodiscard]] MCPCORE_INTERNAL http_response handle_review(approval_service& service, const authorizer_base& authz,
                                                       const approval_endpoint_options& options, route r,
                                                       std::string_view body, const principal& caller,
                                                       review_row& row) {
  // The permission first, before the id or the body is looked at: a non-approver learns nothing.
  if (!is_approver(authz, caller, options.approver_securable)) {
    refused(row, "forbidden");
    return error_response(403, "forbidden", "reviewing approvals requires the Approve permission");
  }
  if (!is_approval_id(r.id)) {
    refused(row, "malformed_id", audit_result::not_found);
    return not_found();
  }
  // Bounded before parsing: the body is caller-controlled.
  if (body.size() > options.max_body_bytes) {
    refused(row, "payload_too_large");
    return error_response(413, "payload_too_large", "the request body is too large");
  }
  std::string_view comment;
  json::document doc;  // owns what `comment` views; lives until the service call returns
  if (!is_blank(body)) {
    const auto root = doc.parse(body);
    if (!root || !root->is_object()) {
      refused(row, "bad_request");
      return error_response(400, "bad_request", "the request body must be empty or a JSON object");
    }
    const json::value c = root->find("comment");
    if (c.exists()) {
      if (!c.is_string()) {
        refused(row, "bad_request");
        return error_response(400, "bad_request", "\"comment\" must be a string");
      }
      comment = c.as_string();
    }
  }

  const bool approve = r.kind == route_kind::approve;
  const approval_status decision = approve ? approval_status::approved : approval_status::rejected;
  const review_verdict v = decide(service, approve, r.id, comment, caller, row);
  if (v.store_error) return store_error_response(v.store_error);
  if (v.status != 200) return error_response(v.status, v.token, v.message);

  // Reviewed: answer with the ticket as it now is. The review has happened, so a failed re-read
  // still answers 200, with what is known for certain.
  auto after = service.get(r.id);
  if (after) {
    if (const std::optional<approval_ticket> ticket = std::move(*after); ticket.has_value()) {
      return ticket_response(service, *ticket);
    }
  }
  http_response resp = make_response(200);
  json::writer w{resp.body};
  w.begin_object().member("approval_id", r.id).member("status", to_string(decision)).end_object();
  return resp;
}

}  // namespace detail::approval_http

MCPCORE_DECL approval_endpoint::approval_endpoint(approval_service& service, approval_endpoint_options options)
    : service_(&service), options_(std::move(options)) {}

MCPCORE_DECL approval_endpoint::~approval_endpoint() {
  // Both are wrappers owned here: the authorizer is a copy, the audit sink is the host's (it must
  // outlive the endpoint).
  delete authz_;
  delete audit_;
}

MCPCORE_DECL void approval_endpoint::set_audit(detail::audit_base* audit) noexcept {
  delete audit_;
  audit_ = audit;
}

MCPCORE_DECL bool approval_endpoint::matches(std::string_view target) const noexcept {
  return detail::approval_http::strip_mount(detail::approval_http::path_of(target), options_.prefix).has_value();
}

MCPCORE_DECL std::optional<http_response> approval_endpoint::handle(const http_request_view& req,
                                                                    const principal* caller) const {
  namespace h = detail::approval_http;
  const auto rest = h::strip_mount(h::path_of(req.target), options_.prefix);
  if (!rest) return std::nullopt;
  // Before the route is parsed or the store touched (docs/approvals.md#the-status-endpoint).
  if (caller == nullptr) {
    http_response r = h::error_response(401, "unauthenticated", "authentication required");
    r.headers.push_back({"WWW-Authenticate", "Bearer"});
    return r;
  }
  const h::route r = h::parse_route(*rest);
  if (r.kind == h::route_kind::unknown) return h::not_found();
  const std::string_view allowed_method = r.kind == h::route_kind::ticket ? "GET" : "POST";
  if (req.method != allowed_method) {
    http_response resp = h::error_response(405, "method_not_allowed", "method not allowed on this resource");
    resp.headers.push_back({"Allow", std::string{allowed_method}});
    return resp;
  }
  if (r.kind == h::route_kind::ticket) return h::handle_get(*service_, *authz_, options_, r.id, *caller);
  h::review_row row;
  http_response resp = h::handle_review(*service_, *authz_, options_, r, req.body, *caller, row);
  h::audit_review(audit_, *service_, r.kind == h::route_kind::approve, r.id, *caller, row, "http");
  return resp;
}

MCPCORE_DECL void append_ticket_json(std::string& out, const approval_ticket& t, std::string_view status_url) {
  detail::approval_http::write_ticket(out, t, status_url);
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_APPROVAL_ENDPOINT_IPP
