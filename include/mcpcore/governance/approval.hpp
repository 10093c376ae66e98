// SPDX-License-Identifier: Apache-2.0
// Approvals: tickets, the approval_store plug-in point and the ticket-then-recall machine
// (docs/approvals.md).
#ifndef MCPCORE_APPROVAL_HPP
#define MCPCORE_APPROVAL_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/expected.hpp>
#include <mcpcore/governance/clock.hpp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/wire/json.hpp>

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

MCPCORE_BEGIN_NAMESPACE

/// Ticket timestamps: UTC, millisecond precision (what the stores persist).
using approval_time = std::chrono::sys_time<std::chrono::milliseconds>;

/// Length of a ticket id: 32 lowercase hexadecimal characters (128 bits from the operating
/// system's CSPRNG). An id is a bearer capability, so logs should show only a prefix.
inline constexpr std::size_t approval_id_length = 32;
/// The origin the MCP surface stamps on the tickets it mints; only such tickets are redeemable
/// through `tools/call` (docs/approvals.md#what-the-machine-checks-in-order check e).
inline constexpr std::string_view approval_origin_mcp = "mcp";
/// The reserved definition-id prefix: a tool `t` mints tickets for definition `mcp.t`.
inline constexpr std::string_view approval_definition_prefix = "mcp.";

/// Whether `id` has the shape of a ticket id (exactly 32 characters of 0-9 a-f).
[[nodiscard]] constexpr bool is_approval_id(std::string_view id) noexcept {
  if (id.size() != approval_id_length) return false;
  for (const char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

/// A fresh ticket id: 16 bytes from the operating system's CSPRNG (`getrandom`), as 32
/// lowercase hex characters.
///
/// @par Errors
/// The `errno` of a failing `getrandom` (the machine has no entropy source); never a weak id.
[[nodiscard]] MCPCORE_DECL result<std::string> make_approval_id();

/// The canonical form of tool arguments that a ticket binds (docs/approvals.md#the-flow): members
/// sorted by key at every depth, no whitespace, numbers spelled as written (`1` and `1.0` differ),
/// and the top-level `approval_id` member removed. An absent value canonicalises as `{}`.
[[nodiscard]] MCPCORE_DECL std::string canonical_arguments(json::value args);

/// Where a ticket is in its life (docs/concepts/approval_store.md#valid-expressions). Consumption
/// is not a status: a consumed ticket stays `approved` with `consumed_at` set.
enum class approval_status : std::uint8_t {
  pending,   ///< awaiting a reviewer
  approved,  ///< a reviewer approved it; redeemable once, within the lifetime
  rejected,  ///< a reviewer rejected it
  expired,   ///< its lifetime ran out before it was reviewed or redeemed
};
/// "pending", "approved", "rejected" or "expired"; "" for a value outside the enumeration.
[[nodiscard]] constexpr std::string_view to_string(approval_status s) noexcept {
  switch (s) {
    case approval_status::pending: return "pending";
    case approval_status::approved: return "approved";
    case approval_status::rejected: return "rejected";
    case approval_status::expired: return "expired";
  }
  return {};
}
/// The status named `s` exactly as `to_string` spells it; `std::nullopt` otherwise.
[[nodiscard]] constexpr std::optional<approval_status> parse_approval_status(std::string_view s) noexcept {
  for (const auto v : {approval_status::pending, approval_status::approved, approval_status::rejected,
                       approval_status::expired}) {
    if (to_string(v) == s) return v;
  }
  return std::nullopt;
}

/// One ticket as a store holds it (docs/concepts/approval_store.md#valid-expressions).
struct approval_ticket {
  std::string id;             ///< 32 lowercase hex
  std::string definition_id;  ///< `mcp.<tool>` for MCP mints
  approval_status status = approval_status::pending;
  std::string origin;        ///< the surface that minted it ("mcp"; hosts may use others)
  std::string submitted_by;  ///< principal id of the submitter
  approval_time submitted_at{};
  std::string reviewed_by;   ///< "" until reviewed
  approval_time reviewed_at{};  ///< meaningful only once reviewed
  std::string review_comment;
  std::string scope;  ///< the canonical arguments (`canonical_arguments`)
  std::optional<approval_time> consumed_at;  ///< set once, by the winning `consume`
  std::string consumed_by;
  /// When the lifetime ran out, for `expired` tickets.
  std::optional<approval_time> expired_at;
  /// The id of the server that minted it (`approval_options::server_id`; "" when the host named
  /// none). Stores keep it and never look at it: dedup ignores it
  /// (docs/approvals.md#several-servers).
  std::string server{};

  friend bool operator==(const approval_ticket&, const approval_ticket&) = default;
};

/// What `approval_store::mint` is asked to do, in one atomic step
/// (docs/approvals.md#what-the-machine-checks-in-order):
/// 1. sweep: pending tickets submitted at or before `now - lifetime`, and approved unconsumed
///    tickets reviewed at or before `now - lifetime`, become `expired` (`expired_at = now`);
/// 2. dedup: the newest pending ticket with this (definition_id, submitted_by, scope, origin)
///    is returned as `deduped` (`server` is not part of the key: a retry that a load balancer
///    sends to another server gets the first server's ticket, whose `server` stays unchanged);
/// 3. per-submitter cap: `submitted_by` already has `per_submitter_cap` or more pending
///    tickets → `submitter_cap`;
/// 4. global cap: `global_cap` or more pending tickets in the store → `global_cap`;
/// 5. insert a pending ticket with id `id` and server `server` → `created`.
struct approval_mint_request {
  std::string_view id;  ///< a fresh `make_approval_id()`, used only when a ticket is created
  std::string_view definition_id;
  std::string_view origin;
  std::string_view submitted_by;
  std::string_view scope;
  approval_time now{};
  std::chrono::milliseconds lifetime{};
  std::size_t per_submitter_cap = 0;
  std::size_t global_cap = 0;
  /// The id of the minting server, stored in the created ticket (`approval_ticket::server`).
  std::string_view server{};
};
/// The outcome of a mint.
enum class approval_mint_status : std::uint8_t { created, deduped, submitter_cap, global_cap };
/// "created", "deduped", "submitter_cap" or "global_cap".
[[nodiscard]] MCPCORE_DECL std::string_view to_string(approval_mint_status s) noexcept;
struct approval_mint_result {
  approval_mint_status status = approval_mint_status::created;
  std::string id;  ///< the created or deduplicated ticket; "" for a cap refusal
};

/// What `approval_store::consume` is asked to do: the at-most-once compare-and-set
/// (docs/approvals.md#what-the-machine-checks-in-order). Checked in this order, atomically with the
/// update:
/// 1. no ticket `id` → `not_found`;
/// 2. origin ≠ `origin` → `foreign_origin` (before the submitter,
/// docs/approvals.md#what-the-machine-checks-in-order);
/// 3. submitted_by ≠ `consumer` → `foreign_submitter`;
/// 4. not `approved`, or already consumed → `not_consumable`;
/// 5. reviewed at or before `now - lifetime` → the ticket becomes `expired` → `expired`;
/// 6. otherwise `consumed_at = now`, `consumed_by = consumer` → `consumed`. Exactly one of any
///    number of concurrent consumers (threads or processes) sees `consumed`.
struct approval_consume_request {
  std::string_view id;
  std::string_view consumer;
  std::string_view origin;
  approval_time now{};
  std::chrono::milliseconds lifetime{};
};
/// The outcome of a consume.
enum class approval_consume_status : std::uint8_t {
  consumed,
  not_found,
  foreign_origin,
  foreign_submitter,
  not_consumable,
  expired,
};
/// "consumed", "not_found", "foreign_origin", "foreign_submitter", "not_consumable", "expired".
[[nodiscard]] MCPCORE_DECL std::string_view to_string(approval_consume_status s) noexcept;

/// What `approval_store::review` is asked to do (docs/approvals.md#lifetime). In this order,
/// atomically:
/// 1. no ticket `id` → `not_found`;
/// 2. not `pending` → `already_reviewed` (a lost race, or a ticket reviewed long ago);
/// 3. submitted at or before `now - lifetime` → the ticket becomes `expired` → `expired`;
/// 4. `reviewer` equals submitted_by → `self_review`;
/// 5. status = `decision`, reviewed_by = reviewer, reviewed_at = now, review_comment = comment
///    → `reviewed`.
struct approval_review_request {
  std::string_view id;
  std::string_view reviewer;  ///< never empty (the service refuses an empty reviewer)
  approval_status decision = approval_status::approved;  ///< `approved` or `rejected`
  std::string_view comment;
  approval_time now{};
  std::chrono::milliseconds lifetime{};
};
/// The outcome of a review.
enum class approval_review_status : std::uint8_t { reviewed, not_found, already_reviewed, expired, self_review };
/// "reviewed", "not_found", "already_reviewed", "expired", "self_review".
[[nodiscard]] MCPCORE_DECL std::string_view to_string(approval_review_status s) noexcept;

/// What went wrong inside an approval store. Each code is either transient or permanent
/// (`approval_store_fault`), which decides the client's answer
/// (docs/approvals.md#every-answer-of-the-machine).
enum class approval_store_errc : std::uint8_t {
  busy = 1,         ///< locked or busy past the busy timeout (transient)
  io_error,         ///< an I/O error that may clear (transient)
  closed,           ///< the store is not open (permanent)
  corrupt,          ///< the database is damaged or not a database (permanent)
  read_only,        ///< the database cannot be written (permanent)
  full,             ///< the disk or the database is full (permanent)
  schema_too_new,   ///< written by a newer schema version than this library knows (permanent)
  internal,         ///< any other store failure (permanent)
};
/// The two classes of store error (an `std::error_condition`).
enum class approval_store_fault : std::uint8_t {
  transient = 1,  ///< retry the same call unchanged; the ticket is intact
  permanent,      ///< will not clear on retry; escalate
};
/// Category of `approval_store_errc` ("mcpcore.approval_store").
[[nodiscard]] MCPCORE_DECL const std::error_category& approval_store_category() noexcept;
/// Category of `approval_store_fault` ("mcpcore.approval_store_fault"). An error code of any
/// category that is not equivalent to `approval_store_fault::permanent` is treated as transient.
[[nodiscard]] MCPCORE_DECL const std::error_category& approval_store_fault_category() noexcept;
[[nodiscard]] inline std::error_code make_error_code(approval_store_errc e) noexcept {
  return {static_cast<int>(e), approval_store_category()};
}
[[nodiscard]] inline std::error_condition make_error_condition(approval_store_fault f) noexcept {
  return {static_cast<int>(f), approval_store_fault_category()};
}
/// Whether `e` is a permanent store fault (otherwise it is handled as transient). Takes the
/// `error` of a store call as well as a bare `std::error_code` or error-code enum.
[[nodiscard]] MCPCORE_DECL bool is_permanent_store_error(const error& e) noexcept;

/// The approval store (docs/plugins.md `approval_store`, docs/approvals.md#the-flow): where tickets
/// live.
///
/// Semantic requirements (not checked by the compiler):
/// 1. Atomicity: `mint`, `consume` and `review` each take effect as one indivisible step with
///    the checks their request types document; in particular, of any number of concurrent
///    `consume` calls for one ticket (from any thread or, for shared stores, any process) at
///    most one returns `consumed`, ever.
/// 2. Thread safety: every member may be called concurrently from any thread.
/// 3. Errors: a failure returns an `std::error_code`; codes equivalent to
///    `approval_store_fault::permanent` mean "will not clear on retry", any other code is
///    transient. A failed call changes nothing. Members do not throw (an exception is treated
///    as a transient error).
/// 4. Expiry is a status change, never a delete; consumed tickets never expire.
/// 5. `get` returns `std::nullopt` for an unknown id (not an error).
///
/// @see memory_approval_store, sqlite_approval_store, docs/plugins.md
template <class S>
concept approval_store = requires(S& s, const approval_mint_request& m, std::string_view id,
                                  const approval_consume_request& c, const approval_review_request& r,
                                  approval_time now, std::chrono::milliseconds lifetime, std::size_t limit) {
  // sweep + dedup + caps + insert, atomically
  { s.mint(m) } -> std::same_as<result<approval_mint_result>>;
  // one ticket by id
  { s.get(id) } -> std::same_as<result<std::optional<approval_ticket>>>;
  // the at-most-once compare-and-set
  { s.consume(c) } -> std::same_as<result<approval_consume_status>>;
  // approve or reject a pending ticket
  { s.review(r) } -> std::same_as<result<approval_review_status>>;
  // the lifetime sweep alone (for maintenance ticks); returns how many tickets expired
  { s.expire(now, lifetime) } -> std::same_as<result<std::size_t>>;
  // up to `limit` pending tickets, oldest first (approver queues)
  { s.pending(limit) } -> std::same_as<result<std::vector<approval_ticket>>>;
};

/// Default of `approval_prune_options::batch` (docs/approvals.md#retention).
inline constexpr std::size_t default_approval_prune_batch = 500;

/// How a store's `prune` removes old finished tickets (docs/approvals.md#retention).
struct approval_prune_options {
  /// Rows removed per batch; each batch is its own short transaction (its own lock hold), so a
  /// concurrent consume waits for one batch at most. 0 counts as 1.
  std::size_t batch = default_approval_prune_batch;
};

/// The optional retention capability of an `approval_store` (docs/concepts/approval_store.md):
/// `s.prune(older_than, options)` removes the finished tickets (consumed, rejected, expired)
/// whose last change (`consumed_at`, `reviewed_at`, `expired_at`) is before `older_than`, in
/// batches of `options.batch`, and returns how many it removed. It never removes a pending or an
/// approved unconsumed ticket. Not part of `approval_store`, so hosts' own stores need not have it.
template <class S>
concept approval_store_prunable =
    approval_store<S> && requires(S& s, approval_time older_than, const approval_prune_options& options) {
      { s.prune(older_than, options) } -> std::same_as<result<std::size_t>>;
    };

/// The largest `limit` that `recently_reviewed` honours; larger limits are cut to it
/// (docs/approvals.md#recently-reviewed).
inline constexpr std::size_t max_recently_reviewed = 200;

/// The optional history capability of an `approval_store` (docs/concepts/approval_store.md):
/// `s.recently_reviewed(limit)` returns up to `min(limit, max_recently_reviewed)` tickets that a
/// reviewer decided, whatever became of them since (every ticket whose `reviewed_by` is not
/// empty: approved, rejected, consumed, expired after approval), newest `reviewed_at` first, ties
/// by `id` ascending; none for `limit` 0. Thread-safe and erroring as every other member. Not part
/// of `approval_store`, so hosts' own stores need not have it.
template <class S>
concept approval_store_history = approval_store<S> && requires(S& s, std::size_t limit) {
  // the reviewed tickets, newest review first
  { s.recently_reviewed(limit) } -> std::same_as<result<std::vector<approval_ticket>>>;
};

/// The machine's caps and names (docs/approvals.md#what-the-machine-checks-in-order, #lifetime).
/// How long a recall refused by a tool's precondition is told to wait before it tries again
/// (`retry_after_ms` of that -32003: docs/approvals.md#every-answer-of-the-machine).
inline constexpr std::chrono::milliseconds default_precondition_retry_after{5000};

/// Longest `approval_options::server_id`, in bytes (docs/approvals.md#several-servers).
inline constexpr std::size_t max_server_id_bytes = 128;

/// Whether `id` may be an `approval_options::server_id`: at most `max_server_id_bytes` bytes, each
/// printable ASCII (0x20-0x7E). "" is valid: the host names no server.
[[nodiscard]] constexpr bool is_valid_server_id(std::string_view id) noexcept {
  if (id.size() > max_server_id_bytes) return false;
  for (const char c : id) {
    if (c < 0x20 || c > 0x7E) return false;
  }
  return true;
}

struct approval_options {
  /// Pending tickets one submitter may hold (docs/approvals.md#what-the-machine-checks-in-order:
  /// 25).
  std::size_t max_pending_per_submitter = 25;
  /// Pending tickets in the whole store (docs/approvals.md#what-the-machine-checks-in-order: 1000).
  std::size_t max_pending_global = 1000;
  /// A ticket's lifetime: pending from submission, approved-unconsumed from review
  /// (docs/approvals.md#lifetime: 7 days).
  std::chrono::milliseconds ticket_lifetime = std::chrono::days{7};
  /// The status URL of ticket `id` is `status_url_prefix + "/approvals/" + id` (docs/approvals.md).
  std::string status_url_prefix = "/api/v1";
  /// Longest review comment accepted, in bytes.
  std::size_t max_review_comment_bytes = 1024;
  /// `retry_after_ms` of a recall a precondition refused (the ticket is intact: the same recall
  /// may run once the condition holds, e.g. a free command slot).
  std::chrono::milliseconds precondition_retry_after = default_precondition_retry_after;
  /// This server's id, stamped on every ticket it mints (`approval_ticket::server`) so that
  /// servers sharing one store can tell whose tickets are whose (docs/approvals.md#several-servers).
  /// "" (the default): none. At most `max_server_id_bytes` of printable ASCII
  /// (`is_valid_server_id`); `approval_service` refuses anything else at construction.
  std::string server_id{};
};

/// Why a principal may not act as an approver (docs/approvals.md#the-approver-tools); the wire
/// spelling is `approver_assurance_required:<reason>`.
enum class approver_assurance : std::uint8_t {
  ok,
  non_interactive_session,  ///< a human principal without a fresh, strong authentication
  engine_principal,         ///< an automated engine
  non_human_principal,      ///< a service (token) principal
};
/// "ok", "non_interactive_session", "engine_principal" or "non_human_principal".
[[nodiscard]] MCPCORE_DECL std::string_view to_string(approver_assurance a) noexcept;
/// Approvers are humans (docs/approvals.md): kind `human_interactive` with `assured` set.
[[nodiscard]] MCPCORE_DECL approver_assurance assess_approver(const principal& p) noexcept;

/// What the gate decided for one `tools/call` of an approval-gated tool
/// (docs/approvals.md#what-the-machine-checks-in-order).
enum class approval_verdict : std::uint8_t {
  proceed,           ///< the ticket was consumed by this call: run the handler
  minted,            ///< -32006: a new ticket
  deduped,           ///< -32006: the caller's identical pending ticket
  pending,           ///< -32006: the recalled ticket is still pending (no audit row)
  submitter_cap,     ///< -32004: too many pending tickets for this principal
  global_cap,        ///< -32004: too many pending tickets on the server
  unidentified,      ///< -32003: the caller has no principal id, so no ticket can bind it
  bad_id,            ///< -32602: approval_id is not a string of 32 lowercase hex
  mismatch,          ///< -32003: unknown id, or another tool or other arguments (checks b, c)
  rejected,          ///< -32003: "approval was rejected"
  expired,           ///< -32003: "approval expired (past its 7-day lifetime)"
  refused,           ///< -32003: "approval already used (one-time ticket)" (anti-oracle group)
  precondition,      ///< -32003: generic "cannot be redeemed right now"; ticket intact
  store_transient,   ///< -32603: store temporarily unavailable, retry 5000 ms; ticket intact
  store_permanent,   ///< -32603: store unavailable, no retry; ticket intact
};
/// The enumerator's name ("proceed", "minted", ...).
[[nodiscard]] MCPCORE_DECL std::string_view to_string(approval_verdict v) noexcept;

/// The specific reason behind a refusal, for the audit row only (never for the client).
enum class approval_refusal : std::uint8_t {
  none,
  not_consumable,
  foreign_origin,
  foreign_submitter,
  precondition,
  store_error,
};
/// "", "not_consumable", "foreign_origin", "foreign_submitter", "precondition", "store_error".
[[nodiscard]] MCPCORE_DECL std::string_view to_string(approval_refusal r) noexcept;

/// The gate's full answer.
struct approval_gate_outcome {
  approval_verdict verdict = approval_verdict::store_transient;
  /// The ticket concerned: minted, deduped, pending or recalled ("" for `bad_id` and for mint
  /// failures).
  std::string approval_id;
  /// Audit-only reason of a `refused`, `precondition` or store verdict.
  approval_refusal refusal = approval_refusal::none;
  /// The read that binds origin and submitter failed, so those checks were not evaluated
  /// (audit `(origin/submitter unverified)`, metric masked denials).
  bool binding_unverified = false;
  /// Audit-only free text: a precondition's reason or a store error's message.
  std::string detail;
  /// Whether the failing store operation was the mint (for the -32603 wording).
  bool during_mint = false;
};

/// A callable usable as a pre-consume precondition
/// (docs/approvals.md#what-the-machine-checks-in-order): `p(ticket, caller, arguments)` returns
/// `std::nullopt` to proceed, or the reason the ticket cannot be redeemed now (audit only; the
/// client gets a generic message and the ticket stays unconsumed).
///
/// Semantic requirements: (1) it runs after every ticket check and just before the
/// compare-and-set, outside any store lock, possibly concurrently; (2) it must not consume or
/// change the ticket; (3) an exception it throws counts as a refusal.
template <class F>
concept approval_precondition_callable =
    requires(const F& f, const approval_ticket& t, const principal& caller, json::value args) {
      // nullopt = proceed; a string = the audit-only refusal reason
      { f(t, caller, args) } -> std::convertible_to<std::optional<std::string>>;
    };

/// A non-owning reference to an `approval_precondition_callable` (or to nothing): what
/// `approval_service::gate` takes. The referenced callable must outlive the call.
class approval_precondition_ref {
 public:
  approval_precondition_ref() noexcept = default;
  template <approval_precondition_callable F>
    requires(!std::same_as<std::remove_cvref_t<F>, approval_precondition_ref>)
  approval_precondition_ref(const F& f) noexcept  // NOLINT(google-explicit-constructor): a reference type
      : obj_(&f), call_(&invoke<F>) {}
  /// Whether a callable is referenced.
  explicit operator bool() const noexcept { return call_ != nullptr; }
  /// @pre `*this` references a callable.
  std::optional<std::string> operator()(const approval_ticket& t, const principal& caller, json::value args) const {
    return call_(obj_, t, caller, args);
  }

 private:
  template <class F>
  static std::optional<std::string> invoke(const void* obj, const approval_ticket& t, const principal& caller,
                                           json::value args) {
    return (*static_cast<const F*>(obj))(t, caller, args);
  }
  const void* obj_ = nullptr;
  std::optional<std::string> (*call_)(const void*, const approval_ticket&, const principal&, json::value) = nullptr;
};

/// The outcome of an approve or reject.
struct approval_review_outcome {
  /// `reviewed`, or why not. `self_review` also covers an empty reviewer id.
  approval_review_status status = approval_review_status::not_found;
  /// Not `ok`: the reviewer is not an approver (checked before the store is touched).
  approver_assurance assurance = approver_assurance::ok;
  /// Set when the store failed (then `status` is meaningless).
  std::error_code error{};
  /// The comment is longer than `approval_options::max_review_comment_bytes` (store untouched).
  bool comment_too_long = false;
  /// Reviewed successfully.
  [[nodiscard]] bool ok() const noexcept {
    return !error && assurance == approver_assurance::ok && !comment_too_long &&
           status == approval_review_status::reviewed;
  }
};

namespace detail {
struct MCPCORE_API approval_store_base {
  approval_store_base() = default;
  approval_store_base(const approval_store_base&) = delete;
  approval_store_base& operator=(const approval_store_base&) = delete;
  virtual ~approval_store_base() = default;
  virtual result<approval_mint_result> mint(const approval_mint_request& m) = 0;
  virtual result<std::optional<approval_ticket>> get(std::string_view id) = 0;
  virtual result<approval_consume_status> consume(const approval_consume_request& c) = 0;
  virtual result<approval_review_status> review(const approval_review_request& r) = 0;
  virtual result<std::size_t> expire(approval_time now, std::chrono::milliseconds lifetime) = 0;
  virtual result<std::vector<approval_ticket>> pending(std::size_t limit) = 0;
  // `approval_store_history`: the store's answer, or none when it lacks the capability.
  virtual result<std::vector<approval_ticket>> recently_reviewed(std::size_t limit) = 0;
  virtual bool has_history() const noexcept = 0;
};
template <class S>
struct approval_store_ref final : approval_store_base {
  explicit approval_store_ref(S& s) noexcept : s_(&s) {}
  result<approval_mint_result> mint(const approval_mint_request& m) override { return s_->mint(m); }
  result<std::optional<approval_ticket>> get(std::string_view id) override { return s_->get(id); }
  result<approval_consume_status> consume(const approval_consume_request& c) override { return s_->consume(c); }
  result<approval_review_status> review(const approval_review_request& r) override { return s_->review(r); }
  result<std::size_t> expire(approval_time now, std::chrono::milliseconds lifetime) override {
    return s_->expire(now, lifetime);
  }
  result<std::vector<approval_ticket>> pending(std::size_t limit) override { return s_->pending(limit); }
  result<std::vector<approval_ticket>> recently_reviewed(std::size_t limit) override {
    if constexpr (approval_store_history<S>) {
      return s_->recently_reviewed(limit);
    } else {
      return std::vector<approval_ticket>{};
    }
  }
  bool has_history() const noexcept override { return approval_store_history<S>; }

 private:
  S* s_;
};
}  // namespace detail

/// The ticket-then-recall machine over one store (docs/approvals.md#the-flow): what the server's
/// `tools/call` pipeline runs for approval-gated tools, and the approver side (approve, reject,
/// status) that the MCP approval tools and the HTTP status endpoint share.
///
/// The service holds its store by reference (the store must outlive it) and a copy of its
/// clock. It has no mutable state of its own: all members are thread-safe exactly as far as
/// the store is (the `approval_store` concept requires full thread safety).
class approval_service {
 public:
  /// @pre `store` outlives the service.
  /// @throws std::invalid_argument when `options.server_id` is not `is_valid_server_id`.
  template <approval_store S>
  explicit approval_service(S& store, approval_options options = {})
      : approval_service(store, system_clock_source{}, std::move(options)) {}
  /// With an explicit clock (tests use `clock_ref<manual_clock>`). Throws as the other
  /// constructor.
  template <approval_store S, clock_source C>
  approval_service(S& store, C clock, approval_options options = {}) : approval_service(std::move(options)) {
    // Delegated: the destructor frees whatever was allocated if the second allocation throws.
    store_ = new detail::approval_store_ref<S>(store);
    clock_ = new detail::clock_model<C>(std::move(clock));
  }
  MCPCORE_DECL ~approval_service();
  approval_service(const approval_service&) = delete;
  approval_service& operator=(const approval_service&) = delete;

  [[nodiscard]] MCPCORE_DECL const approval_options& options() const noexcept;
  /// `options().status_url_prefix + "/approvals/" + id`.
  [[nodiscard]] MCPCORE_DECL std::string status_url(std::string_view id) const;
  /// The service's clock, truncated to milliseconds.
  [[nodiscard]] MCPCORE_DECL approval_time now() const noexcept;

  /// The machine for one call of the approval-gated tool `tool` by `caller` with `args`
  /// (already schema-valid): mint when `args` has no `approval_id`, recall otherwise
  /// (docs/approvals.md#what-the-machine-checks-in-order, checks in the documented order).
  /// `precondition` (may be empty) runs just before the compare-and-set. Never throws for store
  /// failures.
  [[nodiscard]] MCPCORE_DECL approval_gate_outcome gate(std::string_view tool, const principal& caller,
                                                        json::value args,
                                                        approval_precondition_ref precondition = {});

  /// Approves ticket `id` as `reviewer` (docs/approvals.md: a human-interactive, assured principal
  /// other than the submitter; only from pending). RBAC is the caller's job.
  [[nodiscard]] MCPCORE_DECL approval_review_outcome approve(std::string_view id, const principal& reviewer);
  /// Rejects ticket `id` as `reviewer`, with an optional comment (same rules as `approve`).
  [[nodiscard]] MCPCORE_DECL approval_review_outcome reject(std::string_view id, const principal& reviewer,
                                                            std::string_view comment = {});
  /// Ticket `id` as stored; `std::nullopt` for an unknown or malformed id.
  [[nodiscard]] MCPCORE_DECL result<std::optional<approval_ticket>> get(std::string_view id);
  /// Up to `limit` pending tickets, oldest first.
  [[nodiscard]] MCPCORE_DECL result<std::vector<approval_ticket>> pending(std::size_t limit);
  /// Up to `min(limit, max_recently_reviewed)` reviewed tickets, newest review first
  /// (`approval_store_history`, docs/approvals.md#recently-reviewed); decisions made through any
  /// service or process sharing the store are included. Empty, without touching the store, when
  /// the store lacks the capability (`has_history()` false).
  [[nodiscard]] MCPCORE_DECL result<std::vector<approval_ticket>> recently_reviewed(std::size_t limit);
  /// Whether the store models `approval_store_history`.
  [[nodiscard]] MCPCORE_DECL bool has_history() const noexcept;
  /// Runs the lifetime sweep now; returns how many tickets expired.
  MCPCORE_DECL result<std::size_t> expire();

 private:
  MCPCORE_DECL explicit approval_service(approval_options options);
  MCPCORE_DECL approval_review_outcome review(std::string_view id, const principal& reviewer,
                                              approval_status decision, std::string_view comment);
  detail::approval_store_base* store_ = nullptr;
  detail::clock_base* clock_ = nullptr;
  approval_options options_;
};

MCPCORE_END_NAMESPACE

template <>
struct std::is_error_code_enum<mcpcore::approval_store_errc> : std::true_type {};
template <>
struct std::is_error_condition_enum<mcpcore::approval_store_fault> : std::true_type {};

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/governance/impl/approval.ipp>
#endif

#endif  // MCPCORE_APPROVAL_HPP
