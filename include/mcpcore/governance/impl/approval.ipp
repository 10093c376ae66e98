// SPDX-License-Identifier: Apache-2.0
// The ticket-then-recall machine, ticket ids, canonical arguments and the store error categories.
#ifndef MCPCORE_IMPL_APPROVAL_IPP
#define MCPCORE_IMPL_APPROVAL_IPP

#include <mcpcore/detail/random.hpp>
#include <mcpcore/governance/approval.hpp>
#include <mcpcore/wire/canonical_json.hpp>
#include <mcpcore/wire/json_writer.hpp>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

MCPCORE_DECL result<std::string> make_approval_id() {
  // No entropy is an error, never a weaker id (docs/approvals.md#what-the-machine-checks-in-order).
  std::optional<std::string> id = detail::random_hex(approval_id_length / 2);
  if (!id) return fail(std::error_code{errno, std::system_category()});
  return std::move(*id);
}

MCPCORE_DECL std::string canonical_arguments(json::value args) {
  std::string out;
  json::writer w{out};
  if (!args.exists()) {
    w.begin_object().end_object();
    return out;
  }
  if (!args.is_object()) {
    write_canonical(w, args);
    return out;
  }
  std::vector<json::member> members;
  members.reserve(args.size());
  for (const json::member m : args.members()) {
    // Only the top-level approval_id goes: a recall must canonicalise like the first call, while a
    // nested member of that name is part of the arguments.
    if (m.key != "approval_id") members.push_back(m);
  }
  std::sort(members.begin(), members.end(), [](const json::member& a, const json::member& b) {
    // Equal keys (a document that allows duplicates) keep document order: tape addresses grow
    // along the text.
    return a.key < b.key || (a.key == b.key && a.value_node < b.value_node);
  });
  w.begin_object();
  for (const auto& m : members) {
    w.key(m.key);
    write_canonical(w, m.value());
  }
  w.end_object();
  return out;
}

MCPCORE_DECL std::string_view to_string(approval_mint_status s) noexcept {
  switch (s) {
    case approval_mint_status::created: return "created";
    case approval_mint_status::deduped: return "deduped";
    case approval_mint_status::submitter_cap: return "submitter_cap";
    case approval_mint_status::global_cap: return "global_cap";
  }
  return {};
}

MCPCORE_DECL std::string_view to_string(approval_consume_status s) noexcept {
  switch (s) {
    case approval_consume_status::consumed: return "consumed";
    case approval_consume_status::not_found: return "not_found";
    case approval_consume_status::foreign_origin: return "foreign_origin";
    case approval_consume_status::foreign_submitter: return "foreign_submitter";
    case approval_consume_status::not_consumable: return "not_consumable";
    case approval_consume_status::expired: return "expired";
  }
  return {};
}

MCPCORE_DECL std::string_view to_string(approval_review_status s) noexcept {
  switch (s) {
    case approval_review_status::reviewed: return "reviewed";
    case approval_review_status::not_found: return "not_found";
    case approval_review_status::already_reviewed: return "already_reviewed";
    case approval_review_status::expired: return "expired";
    case approval_review_status::self_review: return "self_review";
  }
  return {};
}

MCPCORE_DECL std::string_view to_string(approver_assurance a) noexcept {
  switch (a) {
    case approver_assurance::ok: return "ok";
    case approver_assurance::non_interactive_session: return "non_interactive_session";
    case approver_assurance::engine_principal: return "engine_principal";
    case approver_assurance::non_human_principal: return "non_human_principal";
  }
  return {};
}

MCPCORE_DECL std::string_view to_string(approval_verdict v) noexcept {
  switch (v) {
    case approval_verdict::proceed: return "proceed";
    case approval_verdict::minted: return "minted";
    case approval_verdict::deduped: return "deduped";
    case approval_verdict::pending: return "pending";
    case approval_verdict::submitter_cap: return "submitter_cap";
    case approval_verdict::global_cap: return "global_cap";
    case approval_verdict::unidentified: return "unidentified";
    case approval_verdict::bad_id: return "bad_id";
    case approval_verdict::mismatch: return "mismatch";
    case approval_verdict::rejected: return "rejected";
    case approval_verdict::expired: return "expired";
    case approval_verdict::refused: return "refused";
    case approval_verdict::precondition: return "precondition";
    case approval_verdict::store_transient: return "store_transient";
    case approval_verdict::store_permanent: return "store_permanent";
  }
  return {};
}

MCPCORE_DECL std::string_view to_string(approval_refusal r) noexcept {
  switch (r) {
    case approval_refusal::none: return "";
    case approval_refusal::not_consumable: return "not_consumable";
    case approval_refusal::foreign_origin: return "foreign_origin";
    case approval_refusal::foreign_submitter: return "foreign_submitter";
    case approval_refusal::precondition: return "precondition";
    case approval_refusal::store_error: return "store_error";
  }
  return {};
}

MCPCORE_DECL approver_assurance assess_approver(const principal& p) noexcept {
  switch (p.kind) {
    case principal_kind::human_interactive:
      return p.assured ? approver_assurance::ok : approver_assurance::non_interactive_session;
    case principal_kind::engine: return approver_assurance::engine_principal;
    case principal_kind::service: return approver_assurance::non_human_principal;
  }
  return approver_assurance::non_human_principal;
}

// ---- error categories --------------------------------------------------------------------------

namespace detail {

class approval_store_category_impl final : public std::error_category {
 public:
  [[nodiscard]] const char* name() const noexcept override { return "mcpcore.approval_store"; }
  [[nodiscard]] std::string message(int ev) const override {
    switch (static_cast<approval_store_errc>(ev)) {
      case approval_store_errc::busy: return "approval store busy (locked past the busy timeout)";
      case approval_store_errc::io_error: return "approval store I/O error";
      case approval_store_errc::closed: return "approval store is not open";
      case approval_store_errc::corrupt: return "approval store is corrupt or not a database";
      case approval_store_errc::read_only: return "approval store is read-only";
      case approval_store_errc::full: return "approval store is full";
      case approval_store_errc::schema_too_new: return "approval store schema is newer than this library";
      case approval_store_errc::internal: return "approval store internal error";
    }
    return "unknown approval store error";
  }
  [[nodiscard]] std::error_condition default_error_condition(int ev) const noexcept override {
    switch (static_cast<approval_store_errc>(ev)) {
      case approval_store_errc::busy:
      case approval_store_errc::io_error: return make_error_condition(approval_store_fault::transient);
      case approval_store_errc::closed:
      case approval_store_errc::corrupt:
      case approval_store_errc::read_only:
      case approval_store_errc::full:
      case approval_store_errc::schema_too_new:
      case approval_store_errc::internal: return make_error_condition(approval_store_fault::permanent);
    }
    return {ev, *this};
  }
};

class approval_store_fault_category_impl final : public std::error_category {
 public:
  [[nodiscard]] const char* name() const noexcept override { return "mcpcore.approval_store_fault"; }
  [[nodiscard]] std::string message(int ev) const override {
    switch (static_cast<approval_store_fault>(ev)) {
      case approval_store_fault::transient: return "transient approval store fault";
      case approval_store_fault::permanent: return "permanent approval store fault";
    }
    return "unknown approval store fault";
  }
};

}  // namespace detail

MCPCORE_DECL const std::error_category& approval_store_category() noexcept {
  static const detail::approval_store_category_impl category;
  return category;
}

MCPCORE_DECL const std::error_category& approval_store_fault_category() noexcept {
  static const detail::approval_store_fault_category_impl category;
  return category;
}

MCPCORE_DECL bool is_permanent_store_error(const error& e) noexcept {
  return e.code() && e.code() == approval_store_fault::permanent;
}

// ---- the service ---------------------------------------------------------------------------------

namespace detail {

// Stores promise not to throw; one that does anyway is answered as a transient fault (the
// ticket is intact as far as the machine knows, and retrying is the safe advice).
template <class F>
auto guarded_store_call(F&& f) noexcept -> decltype(f()) {
  try {
    return f();
  } catch (...) {
    return fail(make_error_code(approval_store_errc::io_error));
  }
}

inline approval_gate_outcome store_failure(std::error_code ec, std::string id, bool during_mint,
                                           bool binding_unverified) {
  approval_gate_outcome o;
  o.verdict = is_permanent_store_error(ec) ? approval_verdict::store_permanent : approval_verdict::store_transient;
  o.approval_id = std::move(id);
  // A mint fault has no ticket to refuse. `binding_unverified`: the recall's read failed before
  // origin and submitter were checked (audited so, counted as a masked denial).
  o.refusal = during_mint ? approval_refusal::none : approval_refusal::store_error;
  o.binding_unverified = binding_unverified;
  o.during_mint = during_mint;
  o.detail = ec.message();
  return o;
}

// `now - lifetime`, saturated at the earliest representable time (a huge lifetime never expires
// anything instead of overflowing).
inline approval_time lifetime_cutoff(approval_time now, std::chrono::milliseconds lifetime) noexcept {
  if (lifetime.count() <= 0) return now;
  // min() + lifetime cannot overflow (lifetime is positive); now - lifetime could.
  return now <= approval_time::min() + lifetime ? approval_time::min() : now - lifetime;
}

inline approval_gate_outcome verdict_of(approval_verdict v, std::string id,
                                        approval_refusal r = approval_refusal::none) {
  approval_gate_outcome o;
  o.verdict = v;
  o.approval_id = std::move(id);
  o.refusal = r;
  return o;
}

}  // namespace detail

MCPCORE_DECL approval_service::approval_service(approval_options options) : options_(std::move(options)) {
  // A configuration error, refused before the service exists (docs/approvals.md#several-servers).
  if (!is_valid_server_id(options_.server_id)) {
    throw std::invalid_argument("approval_options::server_id must be at most " + std::to_string(max_server_id_bytes) +
                                " bytes of printable ASCII");
  }
}

MCPCORE_DECL approval_service::~approval_service() {
  // Both are wrappers owned here (the store itself is the caller's).
  delete store_;
  delete clock_;
}

MCPCORE_DECL const approval_options& approval_service::options() const noexcept { return options_; }

MCPCORE_DECL std::string approval_service::status_url(std::string_view id) const {
  std::string url = options_.status_url_prefix;
  url += "/approvals/";
  url += id;
  return url;
}

MCPCORE_DECL approval_time approval_service::now() const noexcept {
  return std::chrono::time_point_cast<std::chrono::milliseconds>(clock_->system_now());
}

MCPCORE_DECL approval_gate_outcome approval_service::gate(std::string_view tool, const principal& caller,
                                                          json::value args,
                                                          approval_precondition_ref precondition) {
  using detail::verdict_of;
  // A ticket binds its submitter; a caller without an identity can neither mint nor redeem.
  if (caller.id.empty()) return verdict_of(approval_verdict::unidentified, {});
  const json::value aid = args.is_object() ? args["approval_id"] : json::value{};
  // A malformed id is refused before any work: nothing is canonicalised, read or minted.
  if (aid.exists() && (!aid.is_string() || !is_approval_id(aid.as_string()))) {
    return verdict_of(approval_verdict::bad_id, {});
  }
  std::string definition{approval_definition_prefix};
  definition += tool;
  const std::string scope = canonical_arguments(args);
  const approval_time now = this->now();
  const auto lifetime = options_.ticket_lifetime;
  const approval_time cutoff = detail::lifetime_cutoff(now, lifetime);

  if (!aid.exists()) {
    // First call: mint, deduplicated (docs/approvals.md#what-the-machine-checks-in-order).
    auto id = make_approval_id();
    if (!id) return detail::store_failure(id.error().code(), {}, true, false);  // no entropy: nothing was stored
    const approval_mint_request m{.id = *id,
                                  .definition_id = definition,
                                  .origin = approval_origin_mcp,
                                  .submitted_by = caller.id,
                                  .scope = scope,
                                  .now = now,
                                  .lifetime = lifetime,
                                  .per_submitter_cap = options_.max_pending_per_submitter,
                                  .global_cap = options_.max_pending_global,
                                  .server = options_.server_id};
    auto r = detail::guarded_store_call([&] { return store_->mint(m); });
    if (!r) return detail::store_failure(r.error().code(), {}, true, false);
    switch (r->status) {
      case approval_mint_status::created: return verdict_of(approval_verdict::minted, std::move(r->id));
      case approval_mint_status::deduped: return verdict_of(approval_verdict::deduped, std::move(r->id));
      case approval_mint_status::submitter_cap: return verdict_of(approval_verdict::submitter_cap, {});
      case approval_mint_status::global_cap: return verdict_of(approval_verdict::global_cap, {});
    }
    return detail::store_failure(make_error_code(approval_store_errc::internal), {}, true, false);
  }

  // Recall (docs/approvals.md#what-the-machine-checks-in-order); the id's shape was checked above.
  std::string id{aid.as_string()};
  // 1. The error-distinguishing read; its failure leaves origin and submitter unverified.
  auto read = detail::guarded_store_call([&] { return store_->get(id); });
  if (!read) return detail::store_failure(read.error().code(), std::move(id), false, true);
  // Steps 2-4 answer before the binding checks, as Yuzu does: anyone holding the id and the
  // arguments learns the state, never the owner (docs/approvals.md#the-anti-oracle-rule).
  // 2. Checks b and c: the ticket exists and is for this tool and these exact arguments.
  const std::optional<approval_ticket> found = std::move(*read);
  if (!found.has_value()) return verdict_of(approval_verdict::mismatch, std::move(id));
  const approval_ticket& t = *found;
  if (t.definition_id != definition || t.scope != scope) return verdict_of(approval_verdict::mismatch, std::move(id));
  // 3. Still pending: keep polling, unless the lifetime already ran out (then the sweep makes
  //    it a state change now, and the caller learns it will never be approved).
  if (t.status == approval_status::pending) {
    if (t.submitted_at <= cutoff) {
      // Best effort: the verdict does not depend on it (review and consume re-check the age).
      const auto swept = detail::guarded_store_call([&] { return store_->expire(now, lifetime); });
      (void)swept;
      return verdict_of(approval_verdict::expired, std::move(id));
    }
    return verdict_of(approval_verdict::pending, std::move(id));
  }
  // 4. Check a: approved.
  if (t.status == approval_status::rejected) return verdict_of(approval_verdict::rejected, std::move(id));
  if (t.status == approval_status::expired) return verdict_of(approval_verdict::expired, std::move(id));
  // 5. The consume step: binding (e, f), replay (d), then the precondition, then the CAS. The
  //    anti-oracle group answers alike; the store repeats every check atomically.
  // Origin before submitter (docs/approvals.md#what-the-machine-checks-in-order).
  if (t.origin != approval_origin_mcp) {
    return verdict_of(approval_verdict::refused, std::move(id), approval_refusal::foreign_origin);
  }
  if (t.submitted_by != caller.id) {
    return verdict_of(approval_verdict::refused, std::move(id), approval_refusal::foreign_submitter);
  }
  if (t.consumed_at) return verdict_of(approval_verdict::refused, std::move(id), approval_refusal::not_consumable);
  // Past its lifetime the consume answers `expired`: the precondition is not run, so its refusal
  // (which invites a retry) cannot hide that the ticket is dead.
  const bool past_lifetime = t.reviewed_at <= cutoff;
  if (precondition && !past_lifetime) {
    std::optional<std::string> reason;
    try {
      reason = precondition(t, caller, args);
    } catch (const std::exception& ex) {
      reason = std::string{"precondition threw: "} + ex.what();
    } catch (...) {
      reason = "precondition threw an exception";
    }
    if (reason) {
      auto o = verdict_of(approval_verdict::precondition, std::move(id), approval_refusal::precondition);
      o.detail = std::move(*reason);
      return o;
    }
  }
  const approval_consume_request c{id, caller.id, approval_origin_mcp, now, lifetime};
  auto consumed = detail::guarded_store_call([&] { return store_->consume(c); });
  if (!consumed) return detail::store_failure(consumed.error().code(), std::move(id), false, false);
  switch (*consumed) {
    case approval_consume_status::consumed: return verdict_of(approval_verdict::proceed, std::move(id));
    case approval_consume_status::expired: return verdict_of(approval_verdict::expired, std::move(id));
    case approval_consume_status::foreign_origin:
      return verdict_of(approval_verdict::refused, std::move(id), approval_refusal::foreign_origin);
    case approval_consume_status::foreign_submitter:
      return verdict_of(approval_verdict::refused, std::move(id), approval_refusal::foreign_submitter);
    // Gone between the read and the consume: answered like a replay.
    case approval_consume_status::not_found:
    case approval_consume_status::not_consumable: break;
  }
  return verdict_of(approval_verdict::refused, std::move(id), approval_refusal::not_consumable);
}

MCPCORE_DECL approval_review_outcome approval_service::review(std::string_view id, const principal& reviewer,
                                                              approval_status decision, std::string_view comment) {
  approval_review_outcome out;
  // Assurance first: a principal that may not approve learns nothing about the ticket.
  out.assurance = assess_approver(reviewer);
  if (out.assurance != approver_assurance::ok) return out;
  if (comment.size() > options_.max_review_comment_bytes) {
    out.comment_too_long = true;
    return out;
  }
  if (!is_approval_id(id)) {
    out.status = approval_review_status::not_found;
    return out;
  }
  if (reviewer.id.empty()) {
    // An anonymous reviewer could equal an anonymous submitter: separation of duties needs names.
    out.status = approval_review_status::self_review;
    return out;
  }
  const approval_review_request r{id, reviewer.id, decision, comment, now(), options_.ticket_lifetime};
  auto res = detail::guarded_store_call([&] { return store_->review(r); });
  if (!res) {
    out.error = res.error().code();
    return out;
  }
  out.status = *res;
  return out;
}

MCPCORE_DECL approval_review_outcome approval_service::approve(std::string_view id, const principal& reviewer) {
  return review(id, reviewer, approval_status::approved, {});
}

MCPCORE_DECL approval_review_outcome approval_service::reject(std::string_view id, const principal& reviewer,
                                                              std::string_view comment) {
  return review(id, reviewer, approval_status::rejected, comment);
}

MCPCORE_DECL result<std::optional<approval_ticket>> approval_service::get(std::string_view id) {
  if (!is_approval_id(id)) return std::optional<approval_ticket>{};
  return detail::guarded_store_call([&] { return store_->get(id); });
}

MCPCORE_DECL result<std::vector<approval_ticket>> approval_service::pending(std::size_t limit) {
  return detail::guarded_store_call([&] { return store_->pending(limit); });
}

MCPCORE_DECL result<std::vector<approval_ticket>> approval_service::recently_reviewed(std::size_t limit) {
  // Cut here too, so a host's store is never asked for more than the documented cap.
  const std::size_t n = limit < max_recently_reviewed ? limit : max_recently_reviewed;
  return detail::guarded_store_call([&] { return store_->recently_reviewed(n); });
}

MCPCORE_DECL bool approval_service::has_history() const noexcept { return store_->has_history(); }

MCPCORE_DECL result<std::size_t> approval_service::expire() {
  return detail::guarded_store_call([&] { return store_->expire(now(), options_.ticket_lifetime); });
}

MCPCORE_END_NAMESPACE

#endif  // MCPCORE_IMPL_APPROVAL_IPP
