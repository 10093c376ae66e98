// SPDX-License-Identifier: Apache-2.0
// tools/call: the gate pipeline (docs/design.md#the-toolscall-pipeline), each gate a small function
// run in the documented order by `handle_tools_call`; the approval machine's answers, the
// approver tools, and the handler's result.
#ifndef MCPCORE_IMPL_TOOLS_CALL_IPP
#define MCPCORE_IMPL_TOOLS_CALL_IPP

#include <mcpcore/dispatch/server.hpp>

#include <mcpcore/dispatch/operation.hpp>

#include <mcpcore/dispatch/impl/call_state.ipp>
#include <mcpcore/dispatch/impl/input_required.ipp>
#include <mcpcore/dispatch/impl/server_state.ipp>
#include <mcpcore/dispatch/impl/task_engine.ipp>
#include <mcpcore/dispatch/impl/tool_result_object.ipp>
#include <mcpcore/dispatch/impl/waiting_call.ipp>
#include <mcpcore/governance/policy.hpp>
#include <mcpcore/wire/correlation_id.hpp>
#include <mcpcore/wire/error.hpp>
#include <mcpcore/wire/retry.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

MCPCORE_BEGIN_NAMESPACE

namespace detail {

// ---- answers ---------------------------------------------------------------------------------

// A result the host's handler got wrong (docs/design.md#the-toolscall-pipeline): -32603 with a
// fresh correlation id, counted in mcp_tool_output_invalid_total.
inline void invalid_result(request_env& e, compiled_tool& t, std::string_view message, const correlation_id*& cid_out,
                           correlation_id& cid_storage) {
  t.output_invalid.inc();
  cid_storage = e.s.mint_cid();
  cid_out = &cid_storage;
  write_error(e, errc::internal_error, message, cid_storage.view(), "Report the correlation_id to the server's operator.");
}

// What makes a handler's result unfit to send (docs/design.md#the-toolscall-pipeline): the
// `error.message` of its -32603 and the audit detail (the schema path and reason).
struct result_fault {
  std::string_view message;
  std::string why;
};

// Checks `r` before anything is written: structured content must be a JSON object, and unless the
// result is an error, a tool with an outputSchema must give structured content that validates.
// On success `structured` holds the parsed content (absent when there is none), alive with `doc`.
inline std::optional<result_fault> check_tool_result(const compiled_tool& t, const tool_result& r,
                                                     std::optional<json::document>& doc, json::value& structured) {
  if (!r.structured_json().empty()) {
    auto v = doc.emplace().parse(r.structured_json());  // only structured results pay for a document
    if (!v || !v->is_object()) {
      return result_fault{"The tool returned structured content that is not a JSON object",
                          "structured content is not a JSON object"};
    }
    structured = *v;
    if (t.has_output_schema && !r.is_error()) {
      if (const auto bad = t.output.validate(structured)) {
        const std::string path = bad->path.empty() ? std::string{"/"} : bad->path;
        return result_fault{"The tool returned structured content that does not match its outputSchema",
                            "output schema path=" + sanitize_audit_value(path) + " " + sanitize_audit_value(bad->reason)};
      }
    }
  } else if (t.has_output_schema && !r.is_error()) {
    return result_fault{"The tool declares an outputSchema but returned no structured content",
                        "output schema path=/ no structured content"};
  }
  return std::nullopt;
}

// Writes a handler's result, or -32603 when it is malformed or breaks the outputSchema (then
// false, and `why`, when given, receives the audit detail: the schema path and reason).
inline bool write_tool_result(request_env& e, compiled_tool& t, const tool_result& r, const correlation_id*& cid_out,
                              correlation_id& cid_storage, std::string* why = nullptr) {
  // A malformed payload from the handler, or one that breaks the tool's outputSchema, becomes
  // -32603, never a malformed or non-conforming response.
  std::optional<json::document> doc;
  json::value structured;
  if (auto fault = check_tool_result(t, r, doc, structured)) {
    if (why != nullptr) *why = std::move(fault->why);
    invalid_result(e, t, fault->message, cid_out, cid_storage);
    return false;
  }
  json::writer w{e.out};
  detail::begin_message(w, e.id).key("result");
  write_tool_result_object(w, r, structured, {});
  w.end_object();
  return true;
}

// The final of a detached call's work (docs/sessions.md#projection-and-finals), checked by the
// rules of a direct result: a final that breaks one is the same -32603 (a fresh correlation id,
// counted in mcp_tool_output_invalid_total{tool}, audited as a failure naming the execution id).
// Holds the call's tool (a run-time change of the tables does not take it away) and its caller;
// the server must outlive it (docs/concepts/operation_source.md).
class tool_final_builder final : public final_builder {
 public:
  tool_final_builder(server::impl& s, std::shared_ptr<compiled_tool> t, principal caller, bool per_request = false)
      : s_(s), t_(std::move(t)), caller_(std::move(caller)) {
    if (per_request) {
      // The members of the server's `_meta` (`,"_meta":{<members>}`), which every result of the
      // per-request era carries (docs/eras.md#results).
      std::string_view m = s.server_info_meta;
      m.remove_prefix(std::min(m.size(), m.find('{') + 1));
      if (!m.empty()) m.remove_suffix(1);
      per_request_meta_ = m;
    }
  }

  operation_final build(const tool_result& r, std::string_view execution_id) const override {
    // The first final takes the tool: the builder lets go of it, so that a handle the host keeps
    // in state its own handler reaches (tool -> handler -> state -> handle -> builder -> tool)
    // is no cycle once the work finished. A later final of the same call is refused by its
    // delivery anyway; it is written unchecked.
    std::shared_ptr<compiled_tool> tool;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      tool = std::exchange(t_, nullptr);
    }
    if (!tool) return unchecked_final(r, execution_id);
    operation_final f;
    std::optional<json::document> doc;
    json::value structured;
    std::optional<result_fault> fault;
    if (r.input() != nullptr) {
      fault.emplace(result_fault{final_asks_for_input, "the final asks for input"});
    } else {
      fault = check_tool_result(*tool, r, doc, structured);
    }
    if (!fault) {
      json::writer w{f.result_json};
      write_tool_result_object(w, r, structured, execution_id, per_request_meta_);
      return f;
    }
    tool->output_invalid.inc();
    const correlation_id cid = s_.mint_cid();
    (void)s_.record(tool->action, "mcp_tool", tool->def.name, caller_, audit_result::failure,
                    "invalid final: " + fault->why + " execution_id=" + sanitize_audit_value(execution_id) +
                        " correlation_id=" + std::string{cid.view()},
                    cid.view());
    error_data d;
    d.correlation_id = cid.view();
    d.remediation = "Report the correlation_id to the server's operator.";
    if (!execution_id.empty()) d.execution_id = std::optional{execution_id};
    f.error = make_error(errc::internal_error, fault->message, d);
    return f;
  }

 private:
  server::impl& s_;
  mutable std::mutex mutex_;                  // a leaf; guards t_
  mutable std::shared_ptr<compiled_tool> t_;  // until the first final
  principal caller_;
  std::string per_request_meta_;  // set for a call of the per-request era
};

// The final builder of the tool a call runs, made only when the handler detaches.
class tool_final_source final : public final_source {
 public:
  tool_final_source(request_env& e, compiled_tool& t) noexcept : e_(e), t_(t) {}
  std::shared_ptr<const final_builder> make() const override {
    std::shared_ptr<compiled_tool> tool;
    for (const auto& candidate : e_.t->tools) {
      if (candidate.get() == &t_) tool = candidate;
    }
    if (!tool) tool = std::shared_ptr<compiled_tool>(e_.t, &t_);  // not listed: the tables keep it
    return std::make_shared<tool_final_builder>(e_.s, std::move(tool), e_.ctx.caller, e_.ctx.envelope != nullptr);
  }

 private:
  request_env& e_;
  compiled_tool& t_;
};

// "approval expired (past its 7-day lifetime)", naming the configured lifetime in its largest
// whole unit ("36-hour", "90-minute", "45-second", "1500-millisecond").
inline std::string expired_message(std::chrono::milliseconds lifetime) {
  using namespace std::chrono;
  static constexpr std::pair<milliseconds, std::string_view> units[] = {
      {days{1}, "day"},      {hours{1}, "hour"},           {minutes{1}, "minute"},
      {seconds{1}, "second"}, {milliseconds{1}, "millisecond"}};
  std::string phrase = std::to_string(lifetime.count()) + "-millisecond";
  for (const auto& [unit, name] : units) {
    if (lifetime >= unit && lifetime % unit == milliseconds::zero()) {
      phrase = std::to_string(lifetime / unit) + "-" + std::string{name};
      break;
    }
  }
  return "approval expired (past its " + phrase + " lifetime)";
}

// g++ 12 and clang 19 warn about members left to their default initializers in designated
// initializers, which is exactly how pipeline_answer is meant to be used.
#if defined(__GNUC__)
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

// One answer of the tools/call pipeline before (or instead of) the handler: a JSON-RPC error
// with the A4 envelope and, unless `audit` is false, one audit row carrying the same
// correlation id (the one-cid pattern).
struct pipeline_answer {
  errc code = errc::internal_error;
  std::string_view message;
  std::string_view remediation;
  std::string detail;  // the audit detail head; " correlation_id=<cid>" is appended
  audit_result result = audit_result::denied;
  call_outcome outcome = call_outcome::denied;
  std::optional<std::chrono::milliseconds> retry_after;
  std::string_view approval_id;  // -32006 only, with its status URL
  std::string status_url;
  bool audit = true;
};

// Writes the audit row of one refusal under `cid`, its detail ending `correlation_id=<cid>`
// (docs/security.md#audit-and-the-one-cid-pattern); whether the row was kept.
inline bool audit_refusal(request_env& e, compiled_tool& t, std::string detail, audit_result result,
                          const correlation_id& cid) {
  detail += detail.empty() ? "correlation_id=" : " correlation_id=";
  detail += cid.view();
  return e.s.record(t.action, "mcp_tool", t.def.name, e.ctx.caller, result, detail, cid.view());
}

inline bool answer(request_env& e, compiled_tool& t, const pipeline_answer& a) {
  const auto cid = e.s.mint_cid();
  const bool persisted = !a.audit || audit_refusal(e, t, a.detail, a.result, cid);
  t.outcomes[static_cast<std::size_t>(a.outcome)].inc();
  error_data d;
  d.correlation_id = cid.view();
  d.retry_after_ms = a.retry_after;
  d.remediation = a.remediation;
  if (!a.approval_id.empty()) {
    d.approval_id = a.approval_id;
    d.status_url = a.status_url;
  }
  if (!persisted) d.audit_persisted = false;
  write_error_response(e.out, e.id, a.code, a.message, d);
  e.error = a.code;
  return true;
}

// An argument error of tools/call (docs/errors.md#argument-errors): by default a tool result with
// `isError: true`, the message and what to do in its text and the correlation id in its `_meta`,
// so the model can correct itself; with `argument_error_style::json_rpc_error`, -32602. Audited as
// denied either way; nothing ran.
inline bool argument_error(request_env& e, compiled_tool& t, std::string_view message, std::string_view remediation,
                           std::string detail) {
  t.args_invalid.inc();
  if (e.s.options.argument_errors == argument_error_style::json_rpc_error) {
    return answer(e, t, {.code = errc::invalid_params, .message = message, .remediation = remediation,
                         .detail = std::move(detail)});
  }
  const auto cid = e.s.mint_cid();
  const bool persisted = audit_refusal(e, t, std::move(detail), audit_result::denied, cid);
  t.outcomes[static_cast<std::size_t>(call_outcome::denied)].inc();
  std::string text{message};
  text += '\n';
  text += remediation;
  write_result_response(e.out, e.id, [&](json::writer& w) {
    w.begin_object().key("content").begin_array();
    w.begin_object().member("type", "text").member("text", text).end_object();
    w.end_array().member("isError", true);
    w.key("_meta").begin_object().member(correlation_id_meta_key, cid.view());
    if (!persisted) w.member(audit_persisted_meta_key, false);
    w.end_object().end_object();
  });
  return true;
}

// A store fault during the gate: while minting (nothing was created) or while redeeming (the
// ticket was not consumed); only the transient kind asks for a retry.
inline bool approval_store_answer(request_env& e, compiled_tool& t, const approval_gate_outcome& g,
                                  const std::string& id_head) {
  const bool transient = g.verdict == approval_verdict::store_transient;
  if (g.during_mint) {
    return answer(e, t, {.code = errc::internal_error,
                         .message = "failed to create approval request",
                         .remediation = transient ? "Retry the same call; no approval request was created."
                                                  : "This will not clear on retry; no approval request was "
                                                    "created. Report the correlation_id to the server's operator.",
                         .detail = "approval submit failed: " + sanitize_audit_value(g.detail),
                         .result = audit_result::failure,
                         .outcome = call_outcome::failure,
                         .retry_after = transient ? std::optional{retry::store_fault} : std::nullopt});
  }
  t.approval.refused.inc();
  if (g.binding_unverified) t.approval.masked.inc();
  std::string detail = id_head + " refused: store_error";
  if (g.binding_unverified) detail += " (origin/submitter unverified)";
  detail += " " + sanitize_audit_value(g.detail);
  return answer(
      e, t,
      {.code = errc::internal_error,
       .message = transient ? "approval store temporarily unavailable" : "approval store unavailable",
       .remediation = transient ? "Retry the same call unchanged: the approval was not consumed; do not request "
                                  "a fresh one. The approval's lifetime keeps running."
                                : "This will not clear on retry. The approval was not consumed; report the "
                                  "correlation_id to the server's operator.",
       .detail = std::move(detail),
       .result = audit_result::failure,
       .outcome = call_outcome::failure,
       .retry_after = transient ? std::optional{retry::approval_store_transient} : std::nullopt});
}

// The answer of every gate verdict that stops the call (all but `proceed`): -32006 for a ticket
// to wait on, -32004 for a cap, -32003 for a refused recall, -32602 for a malformed id.
inline bool approval_answer(request_env& e, compiled_tool& t, approval_service& svc, const approval_gate_outcome& g) {
  auto& m = t.approval;
  const std::string id_head = "approval_id=" + g.approval_id;
  auto refused = [&](std::string_view message, std::string_view remediation, std::string detail,
                     audit_result result = audit_result::denied) {
    m.refused.inc();
    return answer(e, t, {.code = errc::permission_denied, .message = message, .remediation = remediation,
                         .detail = std::move(detail), .result = result});
  };
  auto required = [&](bool audit, std::string detail) {
    // The ticket and what to do with it in the message too: many clients show only
    // error.message (docs/approvals.md#the-flow).
    const std::string message = "operation requires approval: ticket " + g.approval_id +
                                ". An approver must approve it; then call this tool again with the same "
                                "arguments plus \"approval_id\":\"" +
                                g.approval_id + "\" to run it once.";
    return answer(e, t, {.code = errc::approval_required,
                         .message = message,
                         .remediation = "An approver must approve this approval_id (see status_url); then call this "
                                        "tool again with the same arguments plus the approval_id argument to run it "
                                        "once.",
                         .detail = std::move(detail),
                         .result = audit_result::pending,
                         .outcome = call_outcome::approval_required,
                         .retry_after = retry::approval_poll,
                         .approval_id = g.approval_id,
                         .status_url = svc.status_url(g.approval_id),
                         .audit = audit});
  };
  switch (g.verdict) {
    case approval_verdict::proceed: break;  // handled by approval_gate
    case approval_verdict::minted: m.minted.inc(); return required(true, id_head);
    case approval_verdict::deduped: m.deduped.inc(); return required(true, id_head + " (deduped)");
    case approval_verdict::pending: return required(false, {});  // a poll writes no audit row
    case approval_verdict::submitter_cap:
      return answer(e, t, {.code = errc::tier_denied,
                           .message = "too many pending approvals for this principal",
                           .remediation = "Wait until an approver reviews your pending requests (or they expire), "
                                          "then call again.",
                           .detail = "approval refused: submitter_cap",
                           .retry_after = retry::approval_poll});
    case approval_verdict::global_cap:
      return answer(e, t, {.code = errc::tier_denied,
                           .message = "too many pending approvals on this server",
                           .remediation = "Wait until approvers work through the pending requests, then call again.",
                           .detail = "approval refused: global_cap",
                           .retry_after = retry::approval_poll});
    case approval_verdict::unidentified:
      return answer(e, t, {.code = errc::permission_denied,
                           .message = "approval requires an identified caller",
                           .remediation = "Authenticate with a credential that names a principal.",
                           .detail = "approval refused: unidentified caller"});
    case approval_verdict::bad_id:
      return argument_error(e, t,
                            "Invalid arguments at /approval_id: must be a 32-character lowercase hexadecimal "
                            "approval id",
                            "Pass the approval_id exactly as the -32006 error returned it, or omit it to request "
                            "approval; nothing was minted or consumed.",
                            "schema path=/approval_id");
    case approval_verdict::mismatch:
      return refused("the approval_id does not match this tool and arguments",
                     "Call again without approval_id to request approval for these arguments; a ticket runs only "
                     "the exact tool and arguments that were approved.",
                     id_head + " refused: mismatch");
    case approval_verdict::rejected:
      return refused("approval was rejected", "Submit a new request (call without approval_id) if it is still needed.",
                     id_head + " refused: rejected");
    case approval_verdict::expired: {
      const std::string message = expired_message(svc.options().ticket_lifetime);
      return refused(message, "Submit a new request (call without approval_id).", id_head + " refused: expired");
    }
    case approval_verdict::refused: {
      // Anti-oracle (docs/approvals.md#what-the-machine-checks-in-order 6): replay, foreign origin
      // and foreign submitter read alike; only the audit row names the reason.
      std::string detail = id_head + " refused: " + std::string{to_string(g.refusal)};
      return refused("approval already used (one-time ticket)",
                     "Submit a new request (call without approval_id); each approval runs the operation at most "
                     "once.",
                     std::move(detail));
    }
    case approval_verdict::precondition:
      m.precondition.inc();
      return answer(e, t, {.code = errc::permission_denied,
                           .message = "approval cannot be redeemed right now: a precondition of this operation was "
                                      "not met",
                           .remediation = "The approval is still valid and was NOT consumed; call again later with "
                                          "the same arguments and approval_id.",
                           .detail = id_head + " refused: precondition: " + sanitize_audit_value(g.detail),
                           .retry_after = svc.options().precondition_retry_after});
    case approval_verdict::store_transient:
    case approval_verdict::store_permanent: return approval_store_answer(e, t, g, id_head);
  }
  return answer(e, t, {.code = errc::internal_error, .message = "approval machine fault",
                       .remediation = "Report the correlation_id to the server's operator.",
                       .detail = "approval verdict out of range", .result = audit_result::failure,
                       .outcome = call_outcome::failure});
}

// The approver tools (docs/approvals.md#the-approver-tools): RBAC already allowed Approve on their
// securable; the service checks assurance, separation of duties and the pending-only rule.
inline bool review_step(request_env& e, compiled_tool& t, json::value args) {
  auto& s = e.s;
  const std::string_view id = args["approval_id"].as_string();  // schema-validated: 32 hex
  const bool approving = t.def.builtin == builtin_tool::approve_request;
  const auto comment = args["comment"];
  const auto out = approving ? s.approvals->approve(id, e.ctx.caller)
                             : s.approvals->reject(id, e.ctx.caller, comment.is_string() ? comment.as_string()
                                                                                          : std::string_view{});
  const std::string id_head = "approval_id=" + std::string{id};
  if (out.assurance != approver_assurance::ok) {
    const std::string message = "approver_assurance_required:" + std::string{to_string(out.assurance)};
    return answer(e, t, {.code = errc::permission_denied,
                         .message = message,
                         .remediation = "Only a person signed in interactively with strong authentication can review "
                                        "approvals; use the host's approval page.",
                         .detail = id_head + " approver_assurance:" + std::string{to_string(out.assurance)}});
  }
  if (out.comment_too_long) {
    const std::string message = "Invalid arguments at /comment: longer than " +
                                std::to_string(s.approvals->options().max_review_comment_bytes) + " bytes";
    return argument_error(e, t, message, "Shorten the comment; nothing was reviewed.", "schema path=/comment");
  }
  if (out.error) {
    const bool permanent = is_permanent_store_error(out.error);
    return answer(e, t, {.code = errc::internal_error,
                         .message = permanent ? "approval store unavailable" : "approval store temporarily unavailable",
                         .remediation = permanent ? "This will not clear on retry; nothing was reviewed. Report the "
                                                    "correlation_id to the server's operator."
                                                  : "Retry the same call; nothing was reviewed.",
                         .detail = id_head + " review failed: " + sanitize_audit_value(out.error.message()),
                         .result = audit_result::failure,
                         .outcome = call_outcome::failure,
                         .retry_after = permanent ? std::nullopt : std::optional{retry::approval_store_transient}});
  }
  switch (out.status) {
    case approval_review_status::reviewed: break;
    case approval_review_status::not_found:
      return answer(e, t, {.code = errc::invalid_params, .message = "no approval request has this approval_id",
                           .remediation = "Check the approval_id against the approval queue.",
                           .detail = id_head + " refused: not_found"});
    case approval_review_status::already_reviewed:
      return answer(e, t, {.code = errc::permission_denied, .message = "already reviewed by another user",
                           .remediation = "Nothing to do: the request is no longer pending.",
                           .detail = id_head + " refused: already_reviewed"});
    case approval_review_status::expired: {
      const std::string message = expired_message(s.approvals->options().ticket_lifetime);
      return answer(e, t, {.code = errc::permission_denied, .message = message,
                           .remediation = "Nothing to do: the submitter must request approval again.",
                           .detail = id_head + " refused: expired"});
    }
    case approval_review_status::self_review:
      return answer(e, t, {.code = errc::permission_denied, .message = "the reviewer must differ from the submitter",
                           .remediation = "Another approver must review this request.",
                           .detail = id_head + " refused: self_review"});
  }
  const std::string_view status = approving ? "approved" : "rejected";
  std::string structured;
  {
    json::writer w{structured};
    w.begin_object().member("approval_id", id).member("status", status).end_object();
  }
  const tool_result r = tool_result::structured(std::move(structured));
  correlation_id cid_storage;
  const correlation_id* cid = nullptr;
  if (!write_tool_result(e, t, r, cid, cid_storage)) return true;
  t.outcomes[static_cast<std::size_t>(call_outcome::success)].inc();
  (void)s.record(t.action, "mcp_tool", t.def.name, e.ctx.caller, audit_result::success,
                 id_head + " " + std::string{status}, {});
  return true;
}

// ---- the gates, in the order of docs/design.md#the-toolscall-pipeline --------------------------

struct task_offer;  // task_run.ipp

// One tools/call on its way through the gates.
struct tool_call {
  request_env& e;
  compiled_tool& t;
  json::value args;  // params.arguments; absent when the client sent none
  tier_decision decision = tier_decision::allow;
  bool consumed = false;  // an approval ticket was consumed: a request that still fails burned it
  bool task_wanted = false;           // the call asks for a task and may have one (docs/tasks.md)
  std::chrono::milliseconds task_ttl{};
  std::shared_ptr<task_offer> offer{};  // an `on_detach` tool's task, made at its `detach`
};

// What a gate returns: empty when the call goes on; otherwise the call ends here and the value is
// what `server::handle` returns (true: a response was written; false: cancelled, none is sent).
using gate_result = std::optional<bool>;

// Tasks (task_run.ipp, included at the end of this file): the negotiation before RBAC, the start
// after every gate, and what an `on_detach` tool's call answers once its handler returned.
inline gate_result task_negotiation(tool_call& c);
inline gate_result task_start_gate(tool_call& c);
class task_offer_link;
inline std::optional<bool> task_offer_answer(request_env& e, compiled_tool& t, task_offer& o);
inline std::shared_ptr<call_link> make_task_offer_link(const std::shared_ptr<task_offer>& o);

inline void count_outcome(compiled_tool& t, call_outcome o) noexcept { t.outcomes[static_cast<std::size_t>(o)].inc(); }

// From step 6 on a consumed ticket is spent: a request that still fails burned it
// (docs/security.md#the-gate-order).
inline void burn_ticket(const tool_call& c, bool cancelled) noexcept {
  if (!c.consumed) return;
  (cancelled ? c.t.approval.burned_cancelled : c.t.approval.burned_rejected).inc();
}

// An unknown tool: -32602 (or -32601, `unknown_tool_is_method_not_found`), audited as
// `mcp.unknown_tool`. Kept out of `name_gate` so that the lookup stays small.
inline bool unknown_tool(request_env& e, std::string_view name) {
  auto& s = e.s;
  s.tool_unknown.inc();
  const auto cid = s.mint_cid();
  const auto target = sanitize_audit_value(name);
  const std::string detail = "unknown tool correlation_id=" + std::string{cid.view()};
  const bool persisted =
      s.record("mcp.unknown_tool", "mcp_tool", target, e.ctx.caller, audit_result::denied, detail, cid.view());
  write_error(e, s.options.unknown_tool_is_method_not_found ? errc::method_not_found : errc::invalid_params,
              "Unknown tool: " + echo_name(name), cid.view(), "Call tools/list for the tools this server offers.",
              std::nullopt, persisted);
  return true;
}

// 1. The name is classified.
inline gate_result name_gate(request_env& e, std::string_view name, compiled_tool*& found) {
  const auto it = e.t->tool_index.find(name);
  if (it == e.t->tool_index.end() || e.t->tools[it->second]->hidden.load()) return unknown_tool(e, name);
  found = e.t->tools[it->second].get();
  return std::nullopt;
}

// 2. Kill switches: read-only mode refuses every tool whose operation is not `read` (`disabled` was
// answered before routing, in server::handle).
inline gate_result kill_switch_gate(tool_call& c) {
  if (c.t.op == operation::read || !c.e.s.switches.read_only()) return std::nullopt;
  return answer(c.e, c.t, {.code = errc::tier_denied,
                           .message = "MCP is in read-only mode",
                           .remediation = "Only read tools are served while the server is in read-only mode; use "
                                          "the host's REST API or dashboard, or ask an operator to lift read-only "
                                          "mode.",
                           .detail = "read-only mode"});
}

// 3. The tier policy; its decision also says whether step 6 runs. An OAuth principal is told the
// scope it lacks (docs/oauth.md#step-up).
inline gate_result tier_gate(tool_call& c) {
  const principal& who = c.e.ctx.caller;
  c.decision = c.e.s.policy->decide(who.tier, c.t.def.securable, c.t.op);
  if (c.decision != tier_decision::deny) return std::nullopt;
  if (const std::string_view scope = step_up_scope(c.e, c.t.def.securable, c.t.op, true); !scope.empty()) {
    const std::string remediation = step_up_remediation(scope);
    return answer(c.e, c.t, {.code = errc::tier_denied,
                             .message = step_up_message,
                             .remediation = remediation,
                             .detail = "tier=" + sanitize_audit_value(who.tier) +
                                       " missing scope=" + sanitize_audit_value(scope)});
  }
  return answer(c.e, c.t, {.code = errc::tier_denied,
                           .message = "MCP tier does not allow this operation",
                           .remediation = "Use a token of a higher tier, or the host's REST API or dashboard.",
                           .detail = "tier=" + sanitize_audit_value(who.tier)});
}

// 4. Input-schema validation, for every tool, before anything else happens.
inline gate_result schema_gate(tool_call& c) {
  const auto v = c.t.input.validate(c.args.exists() ? c.args : c.e.s.empty_object.root());
  if (!v) return std::nullopt;
  const std::string path = v->path.empty() ? std::string{"/"} : v->path;
  const std::string message = "Invalid arguments at " + path + ": " + v->reason;
  return argument_error(c.e, c.t, message,
                        "Fix the arguments to match the tool's inputSchema from tools/list; nothing was executed "
                        "and no approval ticket was created or consumed.",
                        "schema path=" + sanitize_audit_value(path));
}

// The request id is claimed before the approval step: a duplicate in-flight id must be refused
// before it can spend a ticket. From here the transport's stop signal cancels the call.
inline gate_result claim_gate(tool_call& c, call_scope& scope) {
  if (!scope.registered()) {
    const auto cid = c.e.s.mint_cid();
    write_error(c.e, errc::invalid_request, "A request with this id is already in flight", cid.view(),
                "Use a new request id for every request.");
    return true;
  }
  scope.link(c.e.ctx.stop);
  return std::nullopt;
}

// 6. allow_with_approval: the approval machine (docs/approvals.md) mints, polls or redeems a
// ticket; the call goes on only once a ticket was consumed. Without a service: the degraded -32004.
inline gate_result approval_gate(tool_call& c) {
  if (c.decision != tier_decision::allow_with_approval) return std::nullopt;
  auto& s = c.e.s;
  if (s.approvals == nullptr) {
    // Never a -32006 without a pollable ticket.
    return answer(c.e, c.t, {.code = errc::tier_denied,
                             .message = "This operation requires approval, but no approval store is configured",
                             .remediation = "Ask the server's operator to enable approvals, or perform the "
                                            "operation through the host's REST API or dashboard.",
                             .detail = "approval unavailable"});
  }
  auto& svc = *s.approvals;
  const approval_precondition& pre = c.t.def.precondition;
  const auto g = pre ? svc.gate(c.t.def.name, c.e.ctx.caller, c.args, approval_precondition_ref{pre})
                     : svc.gate(c.t.def.name, c.e.ctx.caller, c.args);
  if (g.verdict != approval_verdict::proceed) return approval_answer(c.e, c.t, svc, g);
  c.consumed = true;
  c.t.approval.consumed.inc();
  (void)s.record(c.t.action, "mcp_tool", c.t.def.name, c.e.ctx.caller, audit_result::approved,
                 "consumed approval_id=" + g.approval_id, {});
  return std::nullopt;
}

// 5. RBAC through the authorizer; one that throws denies. It runs before the approval machine,
// so a refusal neither mints nor spends a ticket.
inline gate_result rbac_gate(tool_call& c) {
  bool allowed = false;
  try {
    allowed = c.e.s.authz->allowed(c.e.ctx.caller, c.t.def.securable, c.t.op);
  } catch (...) {
    allowed = false;
  }
  if (allowed) return std::nullopt;
  return answer(c.e, c.t, {.code = errc::permission_denied,
                           .message = "Permission denied",
                           .remediation = "The caller lacks the permission this tool needs; ask an administrator for "
                                          "the role.",
                           .detail = "rbac"});
}

// The handler's result: written (a malformed one becomes -32603), counted and audited.
inline bool write_outcome(tool_call& c, const tool_result& r) {
  auto& s = c.e.s;
  auto& t = c.t;
  correlation_id cid_storage;
  const correlation_id* cid = nullptr;
  std::string why;
  if (!write_tool_result(c.e, t, r, cid, cid_storage, &why)) {
    burn_ticket(c, false);
    count_outcome(t, call_outcome::failure);
    (void)s.record(t.action, "mcp_tool", t.def.name, c.e.ctx.caller, audit_result::failure,
                   "invalid result: " + why + " correlation_id=" + std::string{cid->view()}, cid->view());
    return true;
  }
  // A consumed ticket whose call still failed, as a tool error, is spent without its operation
  // having happened: burned (docs/security.md#the-gate-order).
  if (r.is_error()) burn_ticket(c, false);
  count_outcome(t, r.is_error() ? call_outcome::error_result : call_outcome::success);
  (void)s.record(t.action, "mcp_tool", t.def.name, c.e.ctx.caller,
                 r.is_error() ? audit_result::failure : audit_result::success, r.is_error() ? "is_error" : "", {});
  return true;
}

// A call cancelled before its handler started (nothing ran) or while it ran (audited): MCP sends
// no response.
inline bool cancelled_call(tool_call& c, bool handler_ran) {
  burn_ticket(c, true);
  count_outcome(c.t, call_outcome::cancelled);
  if (handler_ran) {
    (void)c.e.s.record(c.t.action, "mcp_tool", c.t.def.name, c.e.ctx.caller, audit_result::failure, "cancelled",
                       {});
  }
  return false;
}

// A handler that threw: -32603, and the server keeps running.
inline bool handler_threw(tool_call& c) {
  burn_ticket(c, false);
  c.e.s.handler_exceptions.inc();
  return answer(c.e, c.t, {.code = errc::internal_error,
                           .message = "The tool failed unexpectedly",
                           .remediation = "The server kept running; report the correlation_id to its operator. "
                                          "Retrying may repeat side effects of a partial run.",
                           .detail = "handler exception",
                           .result = audit_result::failure,
                           .outcome = call_outcome::failure});
}

// A tool's rounds (docs/eras.md#the-handler-contract), for `drive_input_loop`. Copied onto the
// heap when the call waits for its client without a thread.
class tool_loop final : public input_loop {
 public:
  explicit tool_loop(const tool_call& c) noexcept
      : t_(c.t), args_(c.args), decision_(c.decision), consumed_(c.consumed), offer_(c.offer) {}
  tool_loop(const tool_loop&) = default;
  tool_loop(tool_loop&&) = default;
  tool_loop& operator=(const tool_loop&) = delete;
  tool_loop& operator=(tool_loop&&) = delete;
  ~tool_loop() override = default;

  round_end run(request_env& e, call_scope& scope, std::optional<input_required>& ask) override {
    tool_call c = call(e);
    call_state_impl state{e.s, e.ctx, e.id, e.msg.params["_meta"]["progressToken"], scope.token()};
    state.round = &e.round;
    const tool_final_source finals{e, t_};
    state.finals_from = &finals;
    // A call that may become a task when its handler detaches (docs/tasks.md#when-a-call-becomes-a-task).
    const std::shared_ptr<call_link> offer_link = offer_ ? make_task_offer_link(offer_) : nullptr;
    state.link_override = offer_link.get();
    call_context cc{state};
    std::optional<tool_result> r;
    try {
      r.emplace(t_.def.handler(cc, args_));
    } catch (...) {
      r.reset();
    }
    if (offer_) {
      if (const auto a = task_offer_answer(e, t_, *offer_)) return round_end_of(*a);
    }
    if (scope.cancelled()) return round_end_of(cancelled_call(c, true));
    if (!r) return round_end_of(handler_threw(c));
    const input_required* ir = r->input();
    if (ir == nullptr) return round_end_of(write_outcome(c, *r));
    ask.emplace(*ir);
    return round_end::needs_input;
  }
  bool give_up(request_env& e, std::string_view why) override {
    tool_call c = call(e);
    return write_outcome(c, tool_result::error("The tool needs input the client did not give: " + std::string{why}));
  }
  bool cancelled(request_env& e) override {
    tool_call c = call(e);
    return cancelled_call(c, true);
  }

 private:
  [[nodiscard]] tool_call call(request_env& e) const noexcept { return tool_call{e, t_, args_, decision_, consumed_}; }
  compiled_tool& t_;
  json::value args_;
  tier_decision decision_;
  bool consumed_;
  std::shared_ptr<task_offer> offer_;
};

// 7. The handler (the approver tools' handler is the library's own).
inline bool run_tool(tool_call& c, call_scope& scope) {
  auto& t = c.t;
  if (t.def.builtin != builtin_tool::none) return review_step(c.e, t, c.args);
  // The connection closed (or the transport stopped) before the handler started: nothing runs.
  if (scope.cancelled()) return cancelled_call(c, false);
  tool_loop loop{c};
  return drive_input_loop(c.e, scope, loop);
}

#if defined(__GNUC__)
#  pragma GCC diagnostic pop
#endif

// tools/call: the params' shape, then the gates in their documented order, then the handler.
inline bool handle_tools_call(request_env& e) {
  const auto name = e.msg.params["name"];
  if (!name.is_string()) return bad_params(e, "tools/call needs params.name (a string)");
  const auto args = e.msg.params["arguments"];
  if (args.exists() && !args.is_object()) return bad_params(e, "params.arguments must be an object");
  compiled_tool* t = nullptr;
  if (auto a = name_gate(e, name.as_string(), t)) return *a;
  tool_call c{e, *t, args};
  if (auto a = kill_switch_gate(c)) return *a;
  if (auto a = tier_gate(c)) return *a;
  if (auto a = schema_gate(c)) return *a;
  call_scope scope{e.ctx, e.id};
  if (auto a = claim_gate(c, scope)) return *a;
  // Whether the call asks for a task it may have (docs/tasks.md#negotiation), before anything can
  // mint or spend an approval ticket.
  if (auto a = task_negotiation(c)) return *a;
  // RBAC before the approval machine: every check that can refuse runs before a ticket is minted
  // or consumed (docs/approvals.md#what-the-machine-checks-in-order).
  if (auto a = rbac_gate(c)) return *a;
  if (auto a = approval_gate(c)) return *a;
  // Every gate passed: an `immediate` tool's task starts here (docs/tasks.md#when-a-call-becomes-a-task).
  if (auto a = task_start_gate(c)) return *a;
  return run_tool(c, scope);
}
}  // namespace detail

MCPCORE_END_NAMESPACE

// The task side of tools/call and the tasks/* methods (they use the pipeline above).
#include <mcpcore/dispatch/impl/task_run.ipp>

#endif  // MCPCORE_IMPL_TOOLS_CALL_IPP
