// SPDX-License-Identifier: Apache-2.0
// Work that outlives its call: the dispatch layer's interface to a transport's record of one call
// (the session layer's progress bridge and the stdio transport implement it), the final a
// detached call ends with, `operation_handle` and `detach`.
#ifndef MCPCORE_OPERATION_HPP
#define MCPCORE_OPERATION_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/dispatch/tool.hpp>
#include <mcpcore/wire/error.hpp>

#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>

MCPCORE_BEGIN_NAMESPACE

/// The `_meta` key carrying a detached operation's durable execution id: in every progress
/// notification and in the final's result (docs/sessions.md#projection-and-finals).
inline constexpr std::string_view execution_id_meta_key = "mcpcore/executionId";

/// A detached call's terminal as its delivery writes it (docs/sessions.md#projection-and-finals):
/// the final's complete result object, already checked by the rules of a direct result, or the
/// error the call answers instead. `operation_handle::finish` builds it; a transport only wraps it
/// in the JSON-RPC response of the call's id.
struct operation_final {
  /// The `CallToolResult` object as JSON text: `content` (with the text twin of structured
  /// content when the result has no content), `structuredContent`, `isError`, and `_meta`
  /// carrying the execution id. Empty when `error` is set.
  std::string result_json;
  /// Set: the call is answered this JSON-RPC error instead (a final that broke the tool's rules
  /// is -32603, exactly as a direct result would be).
  std::optional<error_object> error;
};

/// The record the reports of detached work go to, shared by every `operation_handle` of one call.
/// Implemented by the layer that delivers them (the session layer's progress bridge, the stdio
/// transport, the per-request era's HTTP stream).
///
/// Semantic requirements: (1) every member is thread-safe; (2) `progress` and `finish` keep the
/// rules of `operation_handle::progress` and `operation_handle::finish` and never throw for a
/// refused report (they return false); (3) `finish` delivers `final` as the call's one response:
/// its result (or error) replaces the result the handler returned; (4) `stop_token` returns the
/// same stop state every time, requested when nobody waits for the work's outcome any more
/// (docs/concepts/operation_source.md#stopping-the-work).
class MCPCORE_API operation_link {
 public:
  /// A progress snapshot; whether a frame was committed by this call.
  virtual bool progress(double progress, std::optional<double> total, std::string_view message) = 0;
  /// The terminal; true for the one accepted terminal.
  virtual bool finish(operation_final final) = 0;
  /// The work's stop token. The default has no stop state (`stop_possible()` is false): a
  /// detached plain call's work is never asked to stop, since its outcome stays fetchable by
  /// execution id. A task's record returns the task's token.
  [[nodiscard]] virtual std::stop_token stop_token() const noexcept { return {}; }

 protected:
  operation_link() = default;
  operation_link(const operation_link&) = default;
  operation_link(operation_link&&) = default;
  operation_link& operator=(const operation_link&) = default;
  operation_link& operator=(operation_link&&) = default;
  ~operation_link() = default;
};

/// A transport's record of one call beyond its plain response, as the dispatch core sees it: the
/// transport hands it over in `dispatch_context::progress`, the call context passes it to
/// `detach`. The session layer's progress bridge implements it (one record per call), and so does
/// the stdio transport (docs/transport.md#detached-calls-over-stdio).
///
/// Semantic requirements: (1) `detach` is thread-safe; (2) after it, the transport treats the
/// call's response as provisional: the final that `finish` delivers replaces it.
class MCPCORE_API call_link {
 public:
  /// Marks the call's work as continuing after the call returns, under the durable handle
  /// `execution_id`, and returns the record its reports go to (null when there is none).
  virtual std::shared_ptr<operation_link> detach(std::string execution_id) = 0;

 protected:
  call_link() = default;
  call_link(const call_link&) = default;
  call_link(call_link&&) = default;
  call_link& operator=(const call_link&) = default;
  call_link& operator=(call_link&&) = default;
  ~call_link() = default;
};

namespace detail {

/// How one call's final is checked and written (library use): the dispatch core builds one for
/// the call's tool (its output schema, its counters, the server's audit), `detach` hands it to
/// the call's handles.
class MCPCORE_API final_builder {
 public:
  /// The final of `r`: its result object, or the -32603 error a direct result that broke the
  /// same rule gets (counted and audited as that one is).
  [[nodiscard]] virtual operation_final build(const tool_result& r, std::string_view execution_id) const = 0;

 protected:
  final_builder() = default;
  final_builder(const final_builder&) = default;
  final_builder(final_builder&&) = default;
  final_builder& operator=(const final_builder&) = default;
  final_builder& operator=(final_builder&&) = default;
  ~final_builder() = default;
};

/// The final of `r` for a call with no tool to check it against (a call context the dispatch core
/// did not make): written by the same rules; structured content that is not a JSON object is
/// -32603.
[[nodiscard]] MCPCORE_DECL operation_final unchecked_final(const tool_result& r, std::string_view execution_id);

/// The result object of the fallback final (docs/sessions.md#projection-and-finals): a complete
/// error result (a text saying the result is not available here, `isError`, the execution id in
/// `_meta`); with `legacy_members`, also the top-level `execution_id`, `status` ("unknown") and
/// `detail`.
[[nodiscard]] MCPCORE_DECL std::string fallback_final_result(std::string_view execution_id, bool legacy_members = false);

}  // namespace detail

/// Work a tool continues after its call returns (docs/sessions.md#detached-operations): progress
/// snapshots and exactly one terminal, reported from any thread, addressable by its execution id.
/// Obtained from `detach`. An unbound operation (the call had no record: no session, no progress
/// token, or a transport without a delivery) accepts every report and delivers nothing; the client
/// then polls by execution id, which is why progress is best-effort.
///
/// Destroying the last handle of an operation without a terminal leaves its record to its
/// delivery: the bridge's sweep publishes a -32014 "terminal unavailable" final under pressure,
/// the stdio transport answers the call the fallback final at once.
///
/// @par Thread safety
/// Copies share one record; every member is thread-safe.
class operation_handle {
 public:
  /// An unbound operation.
  operation_handle() = default;
  /// Library use (`detach`).
  operation_handle(std::shared_ptr<operation_link> link, std::string execution_id,
                   std::shared_ptr<const detail::final_builder> builder = {}) noexcept
      : link_(std::move(link)), execution_id_(std::move(execution_id)), builder_(std::move(builder)) {}

  /// Whether the operation has a record its reports go to (a client stream, or a task; a task
  /// refused at `detach` has one that takes none, its stop token requested).
  [[nodiscard]] bool bound() const noexcept { return link_ != nullptr; }
  [[nodiscard]] const std::string& execution_id() const noexcept { return execution_id_; }
  /// Whether the work should stop (docs/concepts/operation_source.md#stopping-the-work): requested
  /// when the task the operation finishes is cancelled (`tasks/cancel`) or the server stops its
  /// tasks (`server::cancel_tasks`), and already at `detach` when the task could not be created
  /// there (the call answers the refusal). The work stops as soon as it can and still reports its
  /// terminal (a cancelled task drops it, a stopped one fails). A detached plain call's token, and
  /// an unbound operation's, is never requested (`stop_possible()` is false): cancelling the call
  /// detaches the response, not the work. Copies share one stop state; the token stays valid
  /// after the handles are gone.
  [[nodiscard]] std::stop_token stop_token() const noexcept { return link_ ? link_->stop_token() : std::stop_token{}; }
  /// A progress snapshot (rules in docs/concepts/operation_source.md); false when nothing was
  /// committed.
  bool progress(double progress, std::optional<double> total = {}, std::string_view message = {}) {
    return link_ && link_->progress(progress, total, message);
  }
  /// The terminal (docs/concepts/operation_source.md): the complete result of the work, which
  /// replaces the result the handler returned. It is checked like a direct result (structured
  /// content must be a JSON object; unless `is_error()`, a tool with an `outputSchema` must give
  /// structured content that validates); a final that breaks a rule is answered -32603, counted
  /// in `mcp_tool_output_invalid_total` and audited. The execution id rides in the result's
  /// `_meta`. True for the one accepted terminal; false for a later one, and for an unbound
  /// operation (whose final is still checked, and delivered nowhere).
  MCPCORE_DECL bool finish(const tool_result& final);

 private:
  std::shared_ptr<operation_link> link_;
  std::string execution_id_;
  std::shared_ptr<const detail::final_builder> builder_;
};

/// Detaches the work of the call that `ctx` serves: the handler then returns its provisional
/// result at once (the plain answer of a call whose final has nowhere to go, e.g. a GET-only call)
/// and reports progress and the terminal through the returned operation. `execution_id` is the
/// durable handle the client can fetch the result by; it rides in every progress frame's `_meta`,
/// in the final's `_meta` and in close frames. The server must outlive every `finish` of the
/// operation (it checks and audits the final).
[[nodiscard]] MCPCORE_DECL operation_handle detach(call_context& ctx, std::string execution_id);

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/dispatch/impl/operation.ipp>
#endif

#endif  // MCPCORE_OPERATION_HPP
