// SPDX-License-Identifier: Apache-2.0
// Work that outlives its call: the dispatch layer's interface to a transport's record of one call
// (the session layer's progress bridge implements it), `operation_handle` and `detach`.
#ifndef MCPCORE_OPERATION_HPP
#define MCPCORE_OPERATION_HPP

#include <mcpcore/detail/config.hpp>
#include <mcpcore/dispatch/tool.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

MCPCORE_BEGIN_NAMESPACE

/// The record the reports of detached work go to, shared by every `operation_handle` of one call.
/// Implemented by the layer that delivers them (the session layer's progress bridge).
///
/// Semantic requirements: (1) every member is thread-safe; (2) `progress` and `finish` keep the
/// rules of `operation_handle::progress` and `operation_handle::finish` and never throw for a
/// refused report (they return false).
class MCPCORE_API operation_link {
 public:
  /// A progress snapshot; whether a frame was committed by this call.
  virtual bool progress(double progress, std::optional<double> total, std::string_view message) = 0;
  /// The terminal; true for the one accepted terminal.
  virtual bool finish(std::string_view status, std::string_view extra_members) = 0;

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
/// `detach`. The session layer's progress bridge implements it (one record per call).
///
/// Semantic requirements: (1) `detach` is thread-safe; (2) after it, the transport treats the
/// call's response as the base of a later final (not as the terminal).
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

/// Work a tool continues after its call returns (docs/sessions.md#detached-operations): progress
/// snapshots and exactly one terminal, reported from any thread, addressable by its execution id.
/// Obtained from `detach`. An unbound operation (the call had no record: no session, no progress
/// token, or a transport without a bridge) accepts every report and delivers nothing; the client
/// then polls by execution id, which is why progress is best-effort.
///
/// Destroying the last handle of an operation without a terminal leaves its record to the
/// bridge's sweep, which publishes a -32014 "terminal unavailable" final under pressure.
///
/// @par Thread safety
/// Copies share one record; every member is thread-safe.
class operation_handle {
 public:
  /// An unbound operation.
  operation_handle() = default;
  /// Library use (`detach`).
  operation_handle(std::shared_ptr<operation_link> link, std::string execution_id) noexcept
      : link_(std::move(link)), execution_id_(std::move(execution_id)) {}

  /// Whether reports reach a client stream.
  [[nodiscard]] bool bound() const noexcept { return link_ != nullptr; }
  [[nodiscard]] const std::string& execution_id() const noexcept { return execution_id_; }
  /// A progress snapshot (rules in docs/concepts/operation_source.md); false when nothing was
  /// committed.
  bool progress(double progress, std::optional<double> total = {}, std::string_view message = {}) {
    return link_ && link_->progress(progress, total, message);
  }
  /// The terminal (docs/concepts/operation_source.md): `status` (e.g. "completed", "failed") and
  /// optional extra result members as a JSON object text. True for the one accepted terminal.
  bool finish(std::string_view status, std::string_view extra_members = {}) {
    return link_ && link_->finish(status, extra_members);
  }

 private:
  std::shared_ptr<operation_link> link_;
  std::string execution_id_;
};

/// Detaches the work of the call that `ctx` serves: the handler then returns its result at once
/// (the base of the final, and the plain answer of a GET-only call) and reports progress and the
/// terminal through the returned operation. `execution_id` is the durable handle the client can
/// fetch the result by; it rides in every progress frame's `_meta` and in close frames.
[[nodiscard]] MCPCORE_DECL operation_handle detach(call_context& ctx, std::string execution_id);

MCPCORE_END_NAMESPACE

#if defined(MCPCORE_HEADER_ONLY)
#  include <mcpcore/dispatch/impl/operation.ipp>
#endif

#endif  // MCPCORE_OPERATION_HPP
